//! The context map of one session: what tools told later calls through
//! `tool-output.context-updates` (Edit learns from it which files were Read, and when).

use std::collections::BTreeMap;
use std::sync::{Arc, RwLock};

/// The key the host always answers with the workspace's absolute path (JSON text), so that a
/// tool can turn relative paths into the absolute ones it reports.
pub const WORKSPACE_KEY: &str = "toolhost.workspace";

/// A session's context map. Calls read a snapshot taken when they start; updates are applied
/// by the runtime (at once for a call run alone, after the batch for calls run in parallel).
#[derive(Debug, Default)]
pub struct Session {
    context: RwLock<Arc<BTreeMap<String, String>>>,
}

impl Session {
    /// An empty session.
    pub fn new() -> Self {
        Session::default()
    }

    /// A session that starts from a saved map (see [`Session::to_map`]).
    pub fn from_map(map: BTreeMap<String, String>) -> Self {
        Session { context: RwLock::new(Arc::new(map)) }
    }

    /// The current map, cheaply (copy-on-write).
    pub fn snapshot(&self) -> Arc<BTreeMap<String, String>> {
        self.context.read().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// A copy of the map, e.g. to save it between `toolhost call`s.
    pub fn to_map(&self) -> BTreeMap<String, String> {
        (*self.snapshot()).clone()
    }

    /// One value.
    pub fn get(&self, key: &str) -> Option<String> {
        self.snapshot().get(key).cloned()
    }

    /// Apply updates in order: `Some(value)` sets, `None` deletes. The reserved
    /// [`WORKSPACE_KEY`] cannot be set by a tool.
    pub fn apply(&self, updates: impl IntoIterator<Item = (String, Option<String>)>) {
        let mut guard = self.context.write().unwrap_or_else(|e| e.into_inner());
        let map = Arc::make_mut(&mut guard);
        for (key, value) in updates {
            if key == WORKSPACE_KEY {
                continue;
            }
            match value {
                Some(v) => map.insert(key, v),
                None => map.remove(&key),
            };
        }
    }
}
