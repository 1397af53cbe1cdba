//! The capabilities a tool can declare in its ceiling.

use serde::{Deserialize, Serialize};

/// One thing a tool may touch outside its own memory (mirrors the WIT `capability` variant).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(tag = "kind", content = "value", rename_all = "kebab-case")]
pub enum Capability {
    /// Read files under a directory (`.` workspace, `/` anywhere, else absolute or relative).
    FsRead(String),
    /// Read and write files under a directory.
    FsWrite(String),
    /// Reach a network host pattern (`host`, `host:port`, `host:*`, `*.example.com`, `*`; see
    /// [`crate::NetPattern`]).
    Net(String),
    /// Read one environment variable (`*` for any).
    Env(String),
}

impl std::fmt::Display for Capability {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Capability::FsRead(p) => write!(f, "fs-read({p})"),
            Capability::FsWrite(p) => write!(f, "fs-write({p})"),
            Capability::Net(h) => write!(f, "net({h})"),
            Capability::Env(n) => write!(f, "env({n})"),
        }
    }
}
