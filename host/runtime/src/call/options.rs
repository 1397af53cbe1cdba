//! What belongs to one call and to nobody else: its cancellation, where its progress goes,
//! who answers its permission questions. Passed with the call, so nothing is routed back by
//! `tool_use_id` through runtime-wide sinks (an MCP server answers each request on the
//! connection it came from without a routing table).

use crate::call::permission::PermissionDecider;
use crate::call::question::LogLevel;
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

/// One progress message of a running call (`host.progress`), already bounded in length and
/// number by the runtime.
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub struct Progress<'a> {
    /// The call's tool_use id.
    pub tool_use_id: &'a str,
    /// The tool's name.
    pub tool: &'a str,
    /// What the tool said.
    pub message: &'a str,
}

/// Receives a call's progress messages. Called on the thread running the guest: it must not
/// block (send on a channel, print, count).
pub type ProgressFn = Arc<dyn Fn(Progress<'_>) + Send + Sync>;

/// One log message of a running call (`toolhost:session/session.log`), already bounded in
/// length and number (counted with progress messages) by the runtime.
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub struct LogMessage<'a> {
    /// The call's tool_use id.
    pub tool_use_id: &'a str,
    /// The tool's name.
    pub tool: &'a str,
    /// How severe.
    pub level: LogLevel,
    /// What the tool said.
    pub message: &'a str,
}

/// Receives a call's log messages; the same rules as [`ProgressFn`].
pub type LogFn = Arc<dyn Fn(LogMessage<'_>) + Send + Sync>;

/// Per-call options of [`crate::Runtime::call`], [`crate::Runtime::call_admitted`] and, for every
/// call of a turn, [`crate::Runtime::run_turn`]. The default: never cancelled, progress only to
/// the runtime's event sink, questions to the runtime's decider.
///
/// ```
/// use toolhost::{CallOptions, CancellationToken};
/// let cancel = CancellationToken::new();
/// let options = CallOptions::new()
///     .cancel(cancel.clone())
///     .progress(|p| eprintln!("{} ({}): {}", p.tool, p.tool_use_id, p.message));
/// # let _ = options;
/// ```
#[derive(Clone, Default)]
#[non_exhaustive]
pub struct CallOptions {
    pub(crate) cancel: CancellationToken,
    pub(crate) progress: Option<ProgressFn>,
    pub(crate) log: Option<LogFn>,
    pub(crate) decider: Option<Arc<dyn PermissionDecider>>,
}

impl std::fmt::Debug for CallOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CallOptions")
            .field("cancelled", &self.cancel.is_cancelled())
            .field("progress", &self.progress.is_some())
            .field("log", &self.log.is_some())
            .field("decider", &self.decider.is_some())
            .finish()
    }
}

impl CallOptions {
    /// The defaults.
    pub fn new() -> Self {
        CallOptions::default()
    }

    /// `token` interrupts the call: a running guest stops at the next epoch tick, a queued one
    /// never starts, a question is withdrawn; the result is an error ("Interrupted by user")
    /// carrying the call's id.
    pub fn cancel(mut self, token: CancellationToken) -> Self {
        self.cancel = token;
        self
    }

    /// Where the call's progress messages go, besides the runtime's event sink.
    pub fn progress(mut self, progress: impl Fn(Progress<'_>) + Send + Sync + 'static) -> Self {
        self.progress = Some(Arc::new(progress));
        self
    }

    /// Where the call's log messages go, besides the runtime's event sink.
    pub fn log(mut self, log: impl Fn(LogMessage<'_>) + Send + Sync + 'static) -> Self {
        self.log = Some(Arc::new(log));
        self
    }

    /// Who answers this call's `ask` decisions and its tool's own questions, instead of the runtime's decider (e.g. the MCP
    /// client that made the call).
    pub fn decider(mut self, decider: Arc<dyn PermissionDecider>) -> Self {
        self.decider = Some(decider);
        self
    }

    /// The call's cancellation token.
    pub fn cancellation(&self) -> &CancellationToken {
        &self.cancel
    }
}
