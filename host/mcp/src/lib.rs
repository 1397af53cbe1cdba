//! MCP servers as tool sources: each server of `[mcp_servers]` (or the workspace's trusted
//! `.mcp.json`) is started (stdio) or reached (streamable HTTP, rmcp's reqwest client, TLS by
//! rustls with the ring provider and the system's roots) with rmcp's client, its `tools/list`
//! read, and its tools handed to the runtime as `mcp__NAME__TOOL` behind its
//! [`toolhost::RemoteServer`] seam, where every call goes through the same pipeline as a
//! component's. A server that cannot be started or listed is reported, and the others still
//! load; a server that stops is started again at its next call (a bounded number of times).
//!
//! Nothing here is process-wide: what the embedding program knows (whether each call's own
//! client may answer a server's questions, which variables of its own environment a server
//! must not inherit, whom to tell that a list changed) comes in [`Options`].
//!
//! - `supervise`: every server, started, restarted, and its tools put in the pool;
//! - `connection`: one connection's calls, list reads and answers;
//! - `handler`: toolhost's side of a connection (questions, progress, logs, list changes);
//! - `calls`: a server's calls in flight, to tell whose a notification or question is;
//! - `process`: a stdio server's process and stderr, or an HTTP server's URL;
//! - [`level`]: MCP's log levels and toolhost's (the server side uses them too).

mod calls;
mod connection;
mod handler;
pub mod level;
mod process;
mod supervise;

use std::sync::Arc;
pub use supervise::connect_all;
use toolhost_policy::launch::LaunchError;

/// What the program embedding the client decides for every server it starts.
#[derive(Clone, Default)]
pub struct Options {
    /// Each call's own client may answer a server's questions (`toolhost mcp`): form
    /// elicitation is declared to servers although nobody is at the terminal.
    pub callers_may_answer: bool,
    /// Variables of this process's environment a stdio server does not inherit.
    pub withhold_env: Vec<String>,
    /// Told when a server says its tool list changed (`notifications/tools/list_changed`).
    pub lists_changed: Option<Arc<tokio::sync::Notify>>,
    /// Where what a person should know goes (a server started again after it stopped); the
    /// log at warning level when unset.
    pub say: Option<Say>,
}

/// Shows a message to the person running toolhost.
pub type Say = Arc<dyn Fn(&str) + Send + Sync>;

impl Options {
    fn say(&self, message: &str) {
        match &self.say {
            Some(say) => say(message),
            None => tracing::warn!("{message}"),
        }
    }
}

impl std::fmt::Debug for Options {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Options")
            .field("callers_may_answer", &self.callers_may_answer)
            .field("withhold_env", &self.withhold_env)
            .field("lists_changed", &self.lists_changed.is_some())
            .field("say", &self.say.is_some())
            .finish()
    }
}

/// What [`connect_all`] did not start.
#[derive(Debug, Default)]
pub struct Connected {
    /// Servers that failed: a load error each (their tools are missing).
    pub errors: Vec<ConnectError>,
    /// Servers not started on purpose (toolhost itself, or a stdio server under a nested
    /// toolhost): not errors, but worth saying.
    pub skipped: Vec<(String, LaunchError)>,
}

/// Why a server's tools are not in the pool.
#[derive(Debug, thiserror::Error)]
pub enum ConnectError {
    /// Its config cannot be run as it is (the launch gate's reason).
    #[error("MCP server {server}: {source}")]
    Launch {
        server: String,
        #[source]
        source: LaunchError,
    },
    /// It did not start, answer the handshake, or list its tools (in time).
    #[error("MCP server {server}: {why}")]
    Start { server: String, why: String },
    /// Its tools could not join the pool (a name taken, a schema refused, too many).
    #[error("{}", toolhost::error_text(.0))]
    Pool(toolhost::Error),
}
