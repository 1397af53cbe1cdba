//! The tool pool: what a name calls. A runtime's components (set while it loads) and its MCP
//! servers' tools (replaced server by server as their lists change), with the servers
//! themselves. A component's name is never given to a server's tool.

use super::LoadedTool;
use crate::call::remote::RemoteServer;
use crate::loading::source::Origin;
use std::collections::BTreeMap;
use std::sync::{Arc, RwLock};

/// Every tool a runtime can call, by name.
#[derive(Default)]
pub(crate) struct Pool {
    components: BTreeMap<String, Arc<LoadedTool>>,
    /// MCP servers' tools, by their name in the pool (`mcp__SERVER__TOOL`).
    remote: RwLock<BTreeMap<String, Arc<LoadedTool>>>,
    /// The MCP servers whose tools are in `remote`, by name.
    servers: RwLock<BTreeMap<String, Arc<dyn RemoteServer>>>,
}

impl Pool {
    /// A tool by name: a component's, else an MCP server's.
    pub(crate) fn lookup(&self, name: &str) -> Option<Arc<LoadedTool>> {
        self.components.get(name).cloned().or_else(|| read(&self.remote).get(name).cloned())
    }

    /// A loaded component by name.
    pub(crate) fn component(&self, name: &str) -> Option<&Arc<LoadedTool>> {
        self.components.get(name)
    }

    /// The loaded components, by name.
    pub(crate) fn components(&self) -> impl Iterator<Item = &Arc<LoadedTool>> {
        self.components.values()
    }

    /// The names of the loaded components.
    pub(crate) fn component_names(&self) -> impl Iterator<Item = &String> {
        self.components.keys()
    }

    /// Add (or replace) a loaded component.
    pub(crate) fn insert_component(&mut self, name: String, tool: Arc<LoadedTool>) {
        self.components.insert(name, tool);
    }

    /// The MCP servers' tools, by name.
    pub(crate) fn remote_tools(&self) -> Vec<Arc<LoadedTool>> {
        read(&self.remote).values().cloned().collect()
    }

    /// The MCP servers, by name.
    pub(crate) fn servers(&self) -> Vec<(String, Arc<dyn RemoteServer>)> {
        read(&self.servers).iter().map(|(name, server)| (name.clone(), server.clone())).collect()
    }

    /// Whether any MCP server is in the pool.
    pub(crate) fn has_servers(&self) -> bool {
        !read(&self.servers).is_empty()
    }

    /// `server`'s tools are now `tools` (its earlier ones gone), answered by `backend`.
    pub(crate) fn replace_server(&self, server: &str, tools: Vec<Arc<LoadedTool>>, backend: Arc<dyn RemoteServer>) {
        let mut remote = write(&self.remote);
        remote.retain(|_, t| !of_server(t, server));
        for tool in tools {
            remote.insert(tool.info.name.clone(), tool);
        }
        write(&self.servers).insert(server.to_string(), backend);
    }

    /// `server` and its tools are gone.
    pub(crate) fn remove_server(&self, server: &str) {
        write(&self.servers).remove(server);
        write(&self.remote).retain(|_, t| !of_server(t, server));
    }
}

fn of_server(tool: &LoadedTool, server: &str) -> bool {
    matches!(&tool.origin, Origin::Mcp(s) if s == server)
}

/// A lock's value, whatever a panic elsewhere left: every write here is one whole step.
fn read<T>(lock: &RwLock<T>) -> std::sync::RwLockReadGuard<'_, T> {
    lock.read().unwrap_or_else(|e| e.into_inner())
}

fn write<T>(lock: &RwLock<T>) -> std::sync::RwLockWriteGuard<'_, T> {
    lock.write().unwrap_or_else(|e| e.into_inner())
}
