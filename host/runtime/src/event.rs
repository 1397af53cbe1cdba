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
    /// The tool logged a message through `toolhost:session/session.log`.
    Log {
        /// The call's tool_use id.
        id: String,
        /// The tool.
        tool: String,
        /// How severe.
        level: crate::LogLevel,
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
    /// A hook's `systemMessage`: for the person running toolhost, never for the model.
    HookMessage {
        /// The call's tool_use id.
        id: String,
        /// The tool.
        tool: String,
        /// The hook event.
        hook_event: HookEvent,
        /// `[COMMAND]: MESSAGE`.
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
    /// The permission check decided (after any PreToolUse hook block or ask): what the audit
    /// log records per decision.
    Decided {
        /// The call's tool_use id.
        id: String,
        /// The tool.
        tool: String,
        /// The runtime's session id (as hooks get it).
        session: String,
        /// `allow`, `deny` or `ask`.
        decision: String,
        /// What made it: the rule, the mode, the hook (with its command) or the default.
        by: String,
        /// For `ask`: `allow_once`, `allow_always`, `allowed_earlier`, `deny` or `no_one_to_ask`.
        #[serde(skip_serializing_if = "Option::is_none")]
        answer: Option<String>,
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
        /// The runtime's session id (as hooks get it).
        session: String,
        /// Hex sha256 of the tool's component bytes (`None` for an unknown tool).
        digest: Option<String>,
        /// The input. An events file gets only its digest, as `input_sha256` (see
        /// [`input_sha256`]), computed when the event is written rather than for every call a
        /// sink counts; an audit log writes the input itself only when asked to.
        #[serde(rename = "input_sha256", serialize_with = "ser_digest")]
        input: Arc<serde_json::Value>,
        /// Bytes of the result's text blocks.
        bytes_out: usize,
        /// Every `host:port` (or address) the call was allowed to reach or refused (marked
        /// `(refused)`), each once, sorted.
        hosts: Vec<String>,
        /// The tier of the code the tool ran (`baseline` while its optimised code is being
        /// compiled); `None` when no code of it ran.
        tier: Option<crate::Tier>,
        /// Its steps' times, its guest's stderr and a trap's guest backtrace: never serialized
        /// with the event (stderr may hold anything), shown to a person who asks for it.
        #[serde(skip)]
        trace: Arc<crate::CallTrace>,
    },
}

/// An input, serialized as its [`input_sha256`].
fn ser_digest<S: serde::Serializer>(input: &Arc<serde_json::Value>, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&input_sha256(input))
}

/// Hex sha256 of `input` as compact JSON with object keys sorted at every level, so equal
/// inputs hash equally whatever order their keys came in.
pub fn input_sha256(input: &serde_json::Value) -> String {
    use sha2::Digest;
    hex::encode(sha2::Sha256::digest(serde_json::to_vec(&sorted(input)).unwrap_or_default()))
}

fn sorted(value: &serde_json::Value) -> serde_json::Value {
    use serde_json::Value;
    match value {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            Value::Object(keys.into_iter().map(|k| (k.clone(), sorted(&map[k]))).collect())
        }
        Value::Array(items) => Value::Array(items.iter().map(sorted).collect()),
        other => other.clone(),
    }
}

fn ser_ms<S: serde::Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_f64(d.as_secs_f64() * 1000.0)
}

/// Receives events; must be cheap and must not block (it is called from inside calls).
pub type EventSink = Arc<dyn Fn(Event) + Send + Sync>;

/// Tell `sink` of `event`, made only when there is a sink.
pub(crate) fn emit_to(sink: Option<&EventSink>, event: impl FnOnce() -> Event) {
    if let Some(sink) = sink {
        sink(event());
    }
}
