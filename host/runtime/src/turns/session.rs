//! The state of one session (one `run` input, one MCP session, one `--session` file): the
//! context map that tools tell later calls through `tool-output.context-updates` (Edit learns
//! from it which files were Read, and when), and the tools a person allowed "always".
//!
//! Context is private per tool: every key is stored under its tool's namespace, a tool reads
//! and writes only its own, and the embedded default tools share one namespace no other tool
//! can reach. So a third-party tool cannot forge `Read`'s record to make `Edit` change a file
//! nobody read, nor read what another tool keeps. The whole map has a size bound.

use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::{Arc, Mutex, RwLock};

/// The key the host always answers with the workspace's absolute path (JSON text), so that a
/// tool can turn relative paths into the absolute ones it reports.
pub const WORKSPACE_KEY: &str = "toolhost.workspace";

/// The namespace of the embedded default tools (and of tools an embedder loads with
/// [`crate::ToolSource::embedded`]).
pub const EMBEDDED_NAMESPACE: &str = "toolhost";

/// The context namespace of a tool loaded from a file or from bytes: its name.
pub fn tool_namespace(tool: &str) -> String {
    format!("tool:{tool}")
}

/// The stored form of `key` in `namespace`. Namespaces never contain `/`.
fn stored_key(namespace: &str, key: &str) -> String {
    format!("{namespace}/{key}")
}

/// A call's context updates would make the session's context larger than its bound.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "the session's context would hold {would} bytes, more than its limit of {limit} (max_context_bytes); \
     this call's context updates were not applied"
)]
pub(crate) struct ContextFull {
    pub would: usize,
    pub limit: usize,
}

/// A session's state. Calls read a snapshot of the context taken when they start; updates are
/// applied by the runtime (at once for a call run alone, after the batch for calls run in
/// parallel).
#[derive(Debug, Default)]
pub struct Session {
    context: Arc<RwLock<Context>>,
    /// Tools a person allowed for the rest of this session ("always"): never shared with
    /// another session, kept across reloads of the tools.
    allowed: Arc<Mutex<BTreeSet<String>>>,
}

#[derive(Debug, Default, Clone)]
struct Context {
    map: Arc<BTreeMap<String, String>>,
    /// Bytes of keys and values in `map`.
    bytes: usize,
}

/// What a session saves between separate `toolhost call`s (`--session FILE`).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SavedSession {
    /// The context map, with namespaced keys (`NAMESPACE/KEY`).
    #[serde(default)]
    pub context: BTreeMap<String, String>,
    /// Tools allowed "always" in this session.
    #[serde(default)]
    pub allowed: BTreeSet<String>,
}

/// What one call sees of its session: the context as it started, and where an "always" goes.
#[derive(Clone, Default)]
pub(crate) struct SessionView {
    pub context: Arc<BTreeMap<String, String>>,
    /// Bytes of `context`.
    pub bytes: usize,
    pub allowed: Arc<Mutex<BTreeSet<String>>>,
}

/// A session as a task that outlives the borrow sees it: only to take a [`SessionView`].
#[derive(Clone)]
pub(crate) struct SessionHandle {
    context: Arc<RwLock<Context>>,
    allowed: Arc<Mutex<BTreeSet<String>>>,
}

impl SessionHandle {
    /// The context as it is now.
    pub(crate) fn view(&self) -> SessionView {
        let context = self.context.read().unwrap_or_else(|e| e.into_inner()).clone();
        SessionView { context: context.map, bytes: context.bytes, allowed: self.allowed.clone() }
    }
}

impl SessionView {
    /// No context and nothing allowed: what a call made outside any session sees
    /// (`is-concurrency-safe` while classifying).
    pub(crate) fn empty() -> SessionView {
        SessionView { context: Arc::default(), bytes: 0, allowed: Arc::default() }
    }

    /// Whether a person allowed `tool` for the rest of the session.
    pub(crate) fn allows(&self, tool: &str) -> bool {
        self.allowed.lock().unwrap_or_else(|e| e.into_inner()).contains(tool)
    }

    pub(crate) fn allow(&self, tool: &str) {
        self.allowed.lock().unwrap_or_else(|e| e.into_inner()).insert(tool.to_string());
    }
}

impl Session {
    /// An empty session.
    pub fn new() -> Self {
        Session::default()
    }

    /// This same session under a second name (its context and allowances shared, not copied):
    /// for a task that drives a turn on the runtime's threads.
    pub(crate) fn shared(&self) -> Session {
        Session { context: self.context.clone(), allowed: self.allowed.clone() }
    }

    /// A session that starts from a saved one (see [`Session::save`]).
    pub fn restore(saved: SavedSession) -> Self {
        let bytes = saved.context.iter().map(|(k, v)| k.len() + v.len()).sum();
        Session {
            context: Arc::new(RwLock::new(Context { map: Arc::new(saved.context), bytes })),
            allowed: Arc::new(Mutex::new(saved.allowed)),
        }
    }

    /// What to save to continue this session later.
    pub fn save(&self) -> SavedSession {
        SavedSession {
            context: (*self.snapshot()).clone(),
            allowed: self.allowed.lock().unwrap_or_else(|e| e.into_inner()).clone(),
        }
    }

    /// The current context map with namespaced keys (`NAMESPACE/KEY`), cheaply (copy-on-write).
    pub fn snapshot(&self) -> Arc<BTreeMap<String, String>> {
        self.context.read().unwrap_or_else(|e| e.into_inner()).map.clone()
    }

    /// The bytes of keys and values the context holds.
    pub fn context_bytes(&self) -> usize {
        self.context.read().unwrap_or_else(|e| e.into_inner()).bytes
    }

    /// One value of one namespace (see [`crate::LoadedTool::context_namespace`]).
    pub fn get(&self, namespace: &str, key: &str) -> Option<String> {
        self.snapshot().get(&stored_key(namespace, key)).cloned()
    }

    /// The tools allowed "always" in this session.
    pub fn allowed_tools(&self) -> BTreeSet<String> {
        self.allowed.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    pub(crate) fn view(&self) -> SessionView {
        self.handle().view()
    }

    /// What a call's task keeps to take its view when the scheduler admits it.
    pub(crate) fn handle(&self) -> SessionHandle {
        SessionHandle { context: self.context.clone(), allowed: self.allowed.clone() }
    }

    /// Apply one call's updates, in order, inside `namespace`: `Some(value)` sets, `None`
    /// deletes; [`WORKSPACE_KEY`] is the host's and is skipped. All or nothing: updates that
    /// would grow the context past `limit` bytes are refused whole.
    pub(crate) fn apply(
        &self,
        namespace: &str,
        updates: Vec<(String, Option<String>)>,
        limit: usize,
    ) -> Result<(), ContextFull> {
        let updates: Vec<_> = updates.into_iter().filter(|(key, _)| key != WORKSPACE_KEY).collect();
        if updates.is_empty() {
            return Ok(());
        }
        let mut guard = self.context.write().unwrap_or_else(|e| e.into_inner());
        let change = growth(&guard.map, namespace, &updates);
        let would = guard.bytes.saturating_add_signed(change);
        if change > 0 && would > limit {
            return Err(ContextFull { would, limit });
        }
        // In order: the last update of a key wins.
        let map = Arc::make_mut(&mut guard.map);
        for (key, value) in updates {
            let key = stored_key(namespace, &key);
            match value {
                Some(v) => map.insert(key, v),
                None => map.remove(&key),
            };
        }
        guard.bytes = would;
        Ok(())
    }
}

/// The size `updates` would add to a context holding `context`, inside `namespace` (the
/// pipeline's early check, against the snapshot the call started with).
pub(crate) fn growth(
    context: &BTreeMap<String, String>,
    namespace: &str,
    updates: &[(String, Option<String>)],
) -> isize {
    let mut last: HashMap<String, Option<&String>> = HashMap::new();
    for (key, value) in updates {
        if key != WORKSPACE_KEY {
            last.insert(stored_key(namespace, key), value.as_ref());
        }
    }
    last.iter()
        .map(|(key, value)| {
            let new = value.map_or(0, |v| key.len() + v.len()) as isize;
            let old = context.get(key).map_or(0, |v| key.len() + v.len()) as isize;
            new - old
        })
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(k: &str, v: &str) -> (String, Option<String>) {
        (k.to_string(), Some(v.to_string()))
    }

    #[test]
    fn namespaces_keep_tools_apart() {
        let s = Session::new();
        s.apply("tool:A", vec![set("k", "a")], 1000).unwrap();
        s.apply("tool:B", vec![set("k", "b")], 1000).unwrap();
        assert_eq!(s.get("tool:A", "k").as_deref(), Some("a"));
        assert_eq!(s.get("tool:B", "k").as_deref(), Some("b"));
        assert_eq!(s.get(EMBEDDED_NAMESPACE, "k"), None);
    }

    #[test]
    fn the_bound_refuses_growth_whole_and_allows_shrinking() {
        let s = Session::new();
        s.apply("n", vec![set("a", "12345")], 20).unwrap(); // "n/a" + 5 = 8 bytes
        assert_eq!(s.context_bytes(), 8);
        let err = s.apply("n", vec![set("b", "1"), set("c", "1234567890")], 20).unwrap_err();
        assert_eq!(err.limit, 20);
        assert_eq!(s.get("n", "b"), None, "nothing of a refused call is applied");
        s.apply("n", vec![set("a", "1")], 20).unwrap();
        assert_eq!(s.context_bytes(), 4);
        s.apply("n", vec![("a".to_string(), None)], 20).unwrap();
        assert_eq!(s.context_bytes(), 0);
        assert!(s.snapshot().is_empty());
    }

    #[test]
    fn saved_sessions_round_trip_with_their_allowances() {
        let s = Session::new();
        s.apply("n", vec![set("a", "1")], 100).unwrap();
        s.view().allow("Write");
        let restored = Session::restore(s.save());
        assert_eq!(restored.get("n", "a").as_deref(), Some("1"));
        assert!(restored.allowed_tools().contains("Write"));
        assert_eq!(restored.context_bytes(), s.context_bytes());
    }

    #[test]
    fn growth_matches_what_apply_does() {
        let s = Session::new();
        s.apply("n", vec![set("a", "123")], 100).unwrap();
        let before = s.context_bytes() as isize;
        let updates = vec![set("a", "1"), set("b", "22")];
        let g = growth(&s.snapshot(), "n", &updates);
        s.apply("n", updates, 100).unwrap();
        assert_eq!(before + g, s.context_bytes() as isize);
    }
}
