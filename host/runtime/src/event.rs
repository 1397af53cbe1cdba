//! Events for people watching a run: start, progress and finish of each call. They never
//! reach the model.

use crate::{HookEvent, OutcomeKind};
use serde::Serialize;
use std::sync::Arc;
use std::time::Duration;

/// Something that happened during a call.
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "event", rename_all = "snake_case")]
#[non_exhaustive]
pub enum Event {
    /// A call passed its checks and is about to run.
    Start {
        /// The call's tool_use id.
        id: String,
        /// The tool.
        tool: String,
    },
    /// The tool reported progress through `host.progress`.
    Progress {
        /// The call's tool_use id.
        id: String,
        /// The tool.
        tool: String,
        /// What it said.
        message: String,
    },
    /// A hook timed out, crashed, exited with an unexpected status or printed invalid JSON.
    /// It did not block the call.
    HookFailed {
        /// The call's tool_use id.
        id: String,
        /// The tool.
        tool: String,
        /// The hook event.
        hook_event: HookEvent,
        /// The hook's command.
        hook: String,
        /// What went wrong.
        message: String,
    },
    /// The permission check asked someone and got an answer.
    PermissionAsked {
        /// The call's tool_use id.
        id: String,
        /// The tool.
        tool: String,
        /// Why it asked.
        reason: String,
        /// `allow_once`, `allow_always`, `deny`, or `no_one_to_ask`.
        answer: String,
    },
    /// The call has its result.
    Finish {
        /// The call's tool_use id.
        id: String,
        /// The tool.
        tool: String,
        /// How it ended.
        outcome: OutcomeKind,
        /// How long the whole pipeline took.
        #[serde(serialize_with = "ser_ms")]
        duration_ms: Duration,
    },
}

fn ser_ms<S: serde::Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_f64(d.as_secs_f64() * 1000.0)
}

/// Receives events; must be cheap and must not block (it is called from inside calls).
pub type EventSink = Arc<dyn Fn(Event) + Send + Sync>;
