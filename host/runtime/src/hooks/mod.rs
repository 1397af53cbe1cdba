//! PreToolUse / PostToolUse / PostToolUseFailure hooks: Claude Code-compatible command hooks
//! from the config, and a Rust [`Hooks`] trait for programs that embed the runtime.
//!
//! A command hook is run by `sh -c COMMAND` with the workspace as its working directory and
//! the event as one JSON line on stdin (`hook_event_name`, `tool_name`, `tool_input`,
//! `tool_use_id`, `cwd`, …, and `tool_response` after a call). Exit 0 may print JSON with
//! `hookSpecificOutput.{permissionDecision, permissionDecisionReason, updatedInput,
//! additionalContext}`; exit 2 blocks with stderr as the reason; any other exit, a timeout,
//! a crash or invalid JSON is a [`HookFailure`]: reported, never blocking.
//!
//! Split by concern: this module holds the public types; [`runner`] starts and supervises the
//! command hooks; [`protocol`] reads what a hook answered (Claude Code's exit codes and JSON);
//! [`combine`] merges several answers into one decision; [`step`] runs them as a step of a call.

mod combine;
mod protocol;
mod runner;
mod session;
mod step;

pub(crate) use combine::{Combined, combine};
#[cfg(test)]
use runner::CommandHook;
pub(crate) use runner::CommandHooks;
pub use session::{SessionEvent, SessionHooks};
pub(crate) use step::ForCall;

/// A runtime's hooks as one part: its command hooks, the embedder's Rust hooks, and what every
/// hook input says of the runtime (its session id, working directory and permission mode).
/// The call's steps and the session's events run them through it; it needs nothing else of the
/// runtime but where to report a hook that failed.
pub(crate) struct HookSet {
    commands: CommandHooks,
    /// The embedder's hooks ([`crate::RuntimeBuilder::hooks`]).
    embedded: Vec<std::sync::Arc<dyn Hooks>>,
    session_id: String,
    /// `cwd`: the workspace.
    cwd: String,
    /// `permission_mode`, as Claude Code names it.
    mode: &'static str,
    events: Option<crate::EventSink>,
}

impl HookSet {
    pub(crate) fn new(
        commands: CommandHooks,
        embedded: Vec<std::sync::Arc<dyn Hooks>>,
        session_id: String,
        workspace: &std::path::Path,
        mode: &'static str,
        events: Option<crate::EventSink>,
    ) -> HookSet {
        HookSet { commands, embedded, session_id, cwd: workspace.display().to_string(), mode, events }
    }
}

use async_trait::async_trait;
use serde::Serialize;
use serde_json::Value;
use toolhost_policy::Decision;

/// The hook events a tool call goes through.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum HookEvent {
    /// After `validate`, before the permission check: may block, rewrite input, decide.
    PreToolUse,
    /// After a successful call: may add context (or block with feedback for the model).
    PostToolUse,
    /// After a call that failed: may add context.
    PostToolUseFailure,
    /// `toolhost agent`: once, before the first request; may add context.
    SessionStart,
    /// `toolhost agent`: the prompt, before it is sent; may block it or add context.
    UserPromptSubmit,
    /// `toolhost agent`: the model ended its turn; may make it go on.
    Stop,
}

impl std::fmt::Display for HookEvent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            HookEvent::PreToolUse => "PreToolUse",
            HookEvent::PostToolUse => "PostToolUse",
            HookEvent::PostToolUseFailure => "PostToolUseFailure",
            HookEvent::SessionStart => "SessionStart",
            HookEvent::UserPromptSubmit => "UserPromptSubmit",
            HookEvent::Stop => "Stop",
        })
    }
}

/// What a hook is told: Claude Code's hook input, field for field.
#[derive(Debug, Clone, Serialize)]
pub struct HookInput {
    /// One id per runtime (a run, an MCP connection).
    pub session_id: String,
    /// Always empty: toolhost keeps no transcript.
    pub transcript_path: String,
    /// The workspace.
    pub cwd: String,
    /// The permission mode, in Claude Code's spelling (`default`, `acceptEdits`,
    /// `bypassPermissions`, `dontAsk`, `plan`).
    pub permission_mode: String,
    /// Which event this is.
    pub hook_event_name: HookEvent,
    /// The tool.
    pub tool_name: String,
    /// The call's input (already schema-valid).
    pub tool_input: Value,
    /// The call's tool_use id.
    pub tool_use_id: String,
    /// PostToolUse: the tool_result's content (a string when it is one text block).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool_response: Option<Value>,
    /// PostToolUseFailure: the error text.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// PostToolUseFailure: whether the call was interrupted.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub is_interrupt: Option<bool>,
}

/// What one hook answered. Every field is optional; the default says nothing.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct HookResponse {
    /// Who answered (the command, or a name the Rust hook chose), for messages.
    pub source: String,
    /// `permissionDecision` (PreToolUse), or a block: exit 2 / `decision: "block"` is
    /// `Deny` with the reason.
    pub decision: Option<Decision>,
    /// Why (`permissionDecisionReason`, exit-2 stderr, `reason`).
    pub reason: Option<String>,
    /// PreToolUse: replace the input (checked by the schema and `validate` again).
    pub updated_input: Option<Value>,
    /// Text appended to the tool_result for the model.
    pub additional_context: Option<String>,
    /// PostToolUse, for an MCP server's tool only: what the model gets instead of the tool's
    /// output (`hookSpecificOutput.updatedMCPToolOutput`): a string, or MCP content blocks.
    pub updated_output: Option<Value>,
    /// `continue: false`: the session stops after this call's batch (the call itself still
    /// runs unless a hook denies it, as in Claude Code), with `stopReason` or a default.
    pub stop: Option<String>,
    /// `systemMessage`: shown to the person running toolhost (stderr, events), never to the
    /// model.
    pub system_message: Option<String>,
}

/// A hook that could not give an answer: it timed out, crashed, exited with a status other
/// than 0 or 2, or printed invalid JSON. Reported (stderr, events); never blocks the call.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{event} hook [{source_name}] failed: {message}")]
pub struct HookFailure {
    /// The event.
    pub event: HookEvent,
    /// The command (or Rust hook name).
    pub source_name: String,
    /// What went wrong.
    pub message: String,
}

/// Hooks written in Rust, for programs that embed the runtime. Every method has a no-op
/// default; return a [`HookResponse`] to act.
#[async_trait]
pub trait Hooks: Send + Sync {
    /// Before the permission check (the input already passed the schema and `validate`).
    async fn pre_tool_use(&self, input: &HookInput) -> HookResponse {
        let _ = input;
        HookResponse::default()
    }
    /// After a successful call.
    async fn post_tool_use(&self, input: &HookInput) -> HookResponse {
        let _ = input;
        HookResponse::default()
    }
    /// After a failed call.
    async fn post_tool_use_failure(&self, input: &HookInput) -> HookResponse {
        let _ = input;
        HookResponse::default()
    }
}

#[cfg(test)]
mod tests;
