//! Step 6 of the pipeline: the operator's rules and mode decide allow, deny or ask; an ask
//! goes to a [`PermissionDecider`] (a person at a terminal, an MCP client, a program), or is a
//! denial naming the rule to add when there is none.

use async_trait::async_trait;
use serde_json::Value;
use std::path::Path;
use toolhost_policy::{Decision, Mode, Request, Rules, SubjectKind};

/// A question for whoever may allow a call.
#[derive(Debug, Clone)]
#[non_exhaustive]
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
    /// Run this call and every later call of the same tool in this session (deny rules still
    /// apply; files other programs run are asked again).
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

/// The mode and rules in force. What a person allowed "always" lives in the
/// [`crate::Session`], so it never reaches another session.
#[derive(Debug, Default)]
pub(crate) struct Permissions {
    pub(crate) mode: Mode,
    pub(crate) rules: Rules,
    /// Serialises questions, so two parallel calls never prompt at once and the second sees
    /// the first one's "always".
    pub(crate) ask_lock: tokio::sync::Mutex<()>,
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

/// `input` with its URL subject replaced by the URL as the rules judge it (the WHATWG
/// parser's serialisation), when that differs from what the model wrote: the tool then fetches
/// exactly what was judged, whatever its own parser makes of odd spellings. `None`: nothing to
/// replace (no URL subject, one already canonical, or one that does not parse, which the
/// permission step refuses).
pub(crate) fn canonical_url_input(input: &Value, pointer: Option<&str>) -> Option<Value> {
    let pointer = pointer?;
    let Value::String(value) = input.pointer(pointer)? else { return None };
    if SubjectKind::infer(pointer, value) != SubjectKind::Url {
        return None;
    }
    let url = toolhost_policy::UrlSubject::parse(value).ok()?;
    if url.canonical == *value {
        return None;
    }
    let mut out = input.clone();
    *out.pointer_mut(pointer)? = Value::String(url.canonical);
    Some(out)
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
