//! An MCP server's tools put in the pool (and replaced whole, each time its list is read):
//! checked, named `mcp__SERVER__TOOL`, their schemas compiled, as [`LoadedTool`]s with no
//! sandbox of their own (their grant is "outside the workspace").

use crate::call::remote::{MAX_MCP_DESCRIPTION_CHARS, MAX_MCP_SCHEMA_BYTES, MAX_MCP_TOOLS_PER_SERVER};
use crate::call::remote::{RemoteServer, RemoteTool, mcp_tool_name};
use crate::loading::loader::{Code, ToolInfo};
use crate::registry::{GrantFrom, LoadedTool, Runtime};
use crate::{Error, LoadError, Origin, ToolKind};
use serde_json::Value;
use std::sync::Arc;
use toolhost_policy::{EffectiveGrant, Grant};

/// What ends a description that was cut.
const TRUNCATED: &str = "… [truncated]";

/// A server's description as the pool keeps it: at most [`MAX_MCP_DESCRIPTION_CHARS`].
fn kept_description(description: &str) -> String {
    match description.char_indices().nth(MAX_MCP_DESCRIPTION_CHARS) {
        None => description.to_string(),
        Some((cut, _)) => format!("{}{TRUNCATED}", &description[..cut]),
    }
}

impl Runtime {
    /// Replace the tools of MCP server `server` with `tools`, called through `backend`. A tool
    /// whose schema does not compile or is over [`MAX_MCP_SCHEMA_BYTES`], whose name is taken (by
    /// a component, another server's tool, or another of this server's tools once names are
    /// cleaned), or beyond the first [`MAX_MCP_TOOLS_PER_SERVER`], is left out and said in the
    /// returned errors; the others are in the pool from the next call on. Descriptions are cut
    /// to [`MAX_MCP_DESCRIPTION_CHARS`].
    pub fn set_remote_tools(&self, server: &str, tools: Vec<RemoteTool>, backend: Arc<dyn RemoteServer>) -> Vec<Error> {
        let mut errors = Vec::new();
        let mut made = Vec::new();
        // Names in the pool already given to this list's tools, with the server's own name.
        let mut seen: std::collections::HashMap<String, String> = std::collections::HashMap::new();
        let listed = tools.len();
        if listed > MAX_MCP_TOOLS_PER_SERVER {
            errors.push(Error::Load {
                origin: format!("MCP server {server}"),
                cause: LoadError::embedder(format!(
                    "it lists more than {MAX_MCP_TOOLS_PER_SERVER} tools ({listed} read); the first \
                     {MAX_MCP_TOOLS_PER_SERVER} are kept and the rest left out"
                )),
            });
        }
        let others: std::collections::HashMap<String, String> = self
            .pool
            .remote_tools()
            .iter()
            .filter_map(|t| match &t.origin {
                Origin::Mcp(s) if s != server => Some((t.info.name.clone(), s.clone())),
                _ => None,
            })
            .collect();
        for tool in tools.into_iter().take(MAX_MCP_TOOLS_PER_SERVER) {
            let name = mcp_tool_name(server, &tool.name);
            let refuse = |why: String| Error::Load {
                origin: format!("MCP server {server}"),
                cause: LoadError::embedder(format!("tool {}: {why}", tool.name)),
            };
            if let Some(other) = others.get(&name) {
                errors.push(refuse(format!("the name {name} is taken by a tool of MCP server {other}")));
                continue;
            }
            if let Some(first) = seen.get(&name) {
                errors.push(refuse(format!("the name {name} is taken by this server's tool {first}")));
                continue;
            }
            // Model APIs take 1-64 characters of `[A-Za-z0-9_-]`: a longer name would make
            // every request offering it fail, so the tool is left out instead.
            if !crate::loading::loader::valid_tool_name(&name) {
                errors.push(refuse(format!("its name in the pool, {name}, is longer than 64 characters")));
                continue;
            }
            if self.pool.component(&name).is_some() {
                errors.push(refuse(format!("the name {name} is taken by a loaded component")));
                continue;
            }
            let schema = match &tool.input_schema {
                Value::Object(_) => tool.input_schema.clone(),
                _ => serde_json::json!({"type": "object"}),
            };
            let size = serde_json::to_vec(&schema).map_or(usize::MAX, |v| v.len());
            if size > MAX_MCP_SCHEMA_BYTES {
                errors
                    .push(refuse(format!("its input schema is {size} bytes, over the {MAX_MCP_SCHEMA_BYTES} allowed")));
                continue;
            }
            let validator = match jsonschema::validator_for(&schema) {
                Ok(v) => v,
                Err(e) => {
                    errors.push(refuse(format!("its input schema does not compile: {e}")));
                    continue;
                }
            };
            let info = ToolInfo {
                name: name.clone(),
                description: kept_description(&tool.description),
                input_schema: schema,
                permission_subject: None,
                read_only: tool.read_only,
                capabilities: Vec::new(),
                kind: ToolKind::Mcp { server: server.to_string(), tool: tool.name.clone() },
            };
            seen.insert(name.clone(), tool.name.clone());
            made.push(Arc::new(LoadedTool {
                limits: self.config.limits_for(&name),
                info,
                origin: Origin::Mcp(server.to_string()),
                sha256: String::new(),
                size: 0,
                grant: Grant::none(),
                grant_from: GrantFrom::Nothing,
                policy_file: None,
                effective: EffectiveGrant::default(),
                effective_read_only: EffectiveGrant::default(),
                net_patterns: Arc::from(Vec::new()),
                warnings: vec![format!("runs in MCP server {server}, outside the sandbox")],
                // What the server does is out of toolhost's sight: never "inside the workspace".
                grant_inside_workspace: false,
                validator,
                preopens: Arc::from(Vec::new()),
                own_policy: None,
                check_reads: false,
                concurrency_safe: tool.read_only,
                context_namespace: Arc::from(crate::turns::session::tool_namespace(&name)),
                code: Arc::new(Code::none("an MCP server's tool")),
                pure_pool: Default::default(),
                remote: Some(backend.clone()),
            }));
        }
        self.pool.replace_server(server, made, backend);
        errors
    }

    /// Read every server's list again and replace its tools (a tool added, changed or gone is
    /// so from the next call on). A server that does not answer keeps the tools it had (their
    /// calls then say it is gone); its failure is returned. `toolhost agent` does this before
    /// every turn, as Claude Code reads its MCP tools fresh each turn.
    pub async fn refresh_remote_tools(&self) -> Vec<Error> {
        let servers = self.pool.servers();
        // All at once: one slow server costs its own wait, not the sum of everyone's.
        let lists = futures::future::join_all(servers.iter().map(|(_, server)| server.list())).await;
        let mut errors = Vec::new();
        for ((name, server), listed) in servers.into_iter().zip(lists) {
            match listed {
                Ok(tools) => errors.extend(self.set_remote_tools(&name, tools, server)),
                Err(why) => errors.push(Error::Load {
                    origin: format!("MCP server {name}"),
                    cause: LoadError::embedder(format!("cannot read its tools again: {why}")),
                }),
            }
        }
        errors
    }

    /// Forget the tools of `server` (it went away): calls of them are unknown tools.
    pub fn remove_remote_tools(&self, server: &str) {
        self.pool.remove_server(server);
    }

    /// Whether any MCP server's tools are in the pool.
    pub fn has_remote_servers(&self) -> bool {
        self.pool.has_servers()
    }

    /// The MCP servers' tools now in the pool, by name.
    pub fn remote_tools(&self) -> Vec<Arc<LoadedTool>> {
        self.pool.remote_tools()
    }

    /// Whether the pool has a tool of this name (a component's or an MCP server's).
    pub fn has_tool(&self, name: &str) -> bool {
        self.lookup(name).is_some()
    }

    /// A tool of the pool by name: a component's, else an MCP server's.
    pub(crate) fn lookup(&self, name: &str) -> Option<Arc<LoadedTool>> {
        self.pool.lookup(name)
    }
}
