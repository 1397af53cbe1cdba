//! Step 6 of the pipeline: the operator's rules and mode decide allow, deny or ask; an ask
//! goes to a [`PermissionDecider`] (a person at a terminal, an MCP client, a program), or is a
//! denial naming the rule to add when there is none.

use async_trait::async_trait;
use serde_json::Value;
use std::path::Path;
use toolhost_policy::{Decision, Mode, Request, Rule, Rules, SubjectKind};

/// A question for whoever may allow a call.
#[derive(Debug, Clone)]
pub struct AskRequest {
    /// The call's tool_use id.
    pub tool_use_id: String,
    /// The tool.
    pub tool: String,
    /// The input the tool would run with (after any hook rewrite).
    pub input: Value,
    /// The value at the tool's permission subject (a path, URL or text), if any.
    pub subject: Option<String>,
    /// Why the call needs a yes: the rule, mode or hook that asked.
    pub reason: String,
    /// The rule "allow for the rest of this run" adds: the whole tool.
    pub session_rule: String,
    /// A rule that would allow exactly this call, for messages and configs.
    pub suggested_rule: String,
}

/// What the person (or program) answered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AskAnswer {
    /// Run this call.
    AllowOnce,
    /// Run this call and every later call of the same tool in this runtime (deny rules still
    /// apply).
    AllowAlways,
    /// Refuse it, optionally saying why (the model reads it).
    Deny(Option<String>),
}

/// Answers `ask` decisions. Asks are put one at a time: the runtime never calls `ask` again
/// before the previous answer, so an implementation may own a terminal.
#[async_trait]
pub trait PermissionDecider: Send + Sync {
    /// Ask about one call.
    async fn ask(&self, request: &AskRequest) -> AskAnswer;

    /// Whether anyone can be asked about this call (e.g. an MCP client that declared the
    /// elicitation capability). When `false`, the ask is a denial whose message names the rule
    /// to add, exactly as with no decider at all. Default: `true`.
    fn can_ask(&self, request: &AskRequest) -> bool {
        let _ = request;
        true
    }
}

/// The mode and rules in force, plus what was allowed for the rest of the run.
#[derive(Debug, Default)]
pub(crate) struct Permissions {
    pub(crate) mode: Mode,
    pub(crate) rules: Rules,
    /// Tools a person allowed "for the rest of this run".
    pub(crate) session_allowed: std::sync::Mutex<Vec<Rule>>,
    /// Serialises questions, so two parallel calls never prompt at once and the second sees
    /// the first one's "always".
    pub(crate) ask_lock: tokio::sync::Mutex<()>,
}

impl Permissions {
    pub(crate) fn session_allows(&self, tool: &str, workspace: &Path) -> bool {
        let allowed = self.session_allowed.lock().unwrap_or_else(|e| e.into_inner());
        allowed.iter().any(|r| r.matches(tool, None, workspace))
    }

    pub(crate) fn allow_for_session(&self, tool: &str) {
        let mut allowed = self.session_allowed.lock().unwrap_or_else(|e| e.into_inner());
        if !allowed.iter().any(|r| r.tool == tool) {
            allowed.push(Rule { tool: tool.to_string(), pattern: None });
        }
    }
}

/// The value at `pointer` in `input`, when it is a string (or a number or bool, as text).
pub(crate) fn subject_value(input: &Value, pointer: Option<&str>) -> Option<(String, SubjectKind)> {
    let pointer = pointer?;
    let text = match input.pointer(pointer)? {
        Value::String(s) => s.clone(),
        v @ (Value::Number(_) | Value::Bool(_)) => v.to_string(),
        _ => return None,
    };
    let kind = SubjectKind::infer(pointer, &text);
    Some((text, kind))
}

/// The mode's name in Claude Code's spelling, as hooks expect in `permission_mode`.
pub(crate) fn claude_mode_name(mode: Mode) -> &'static str {
    match mode {
        Mode::Default => "default",
        Mode::AcceptEdits => "acceptEdits",
        Mode::Bypass => "bypassPermissions",
        Mode::DontAsk => "dontAsk",
        Mode::Plan => "plan",
    }
}

/// Decide with the rules; `hook` is the PreToolUse hooks' combined answer (not `Deny`).
pub(crate) fn decide(
    permissions: &Permissions,
    req: &Request<'_>,
    workspace: &Path,
    hook: Option<Decision>,
) -> (Decision, String) {
    permissions.rules.decide_with_hook(permissions.mode, req, workspace, hook)
}
