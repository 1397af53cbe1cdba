//! Step 6 of the pipeline: the operator's rules and mode decide allow, deny or ask; an ask
//! goes to a [`PermissionDecider`] (a person at a terminal, an MCP client, a program), or is a
//! denial naming the rule to add when there is none.

use crate::call::ctx::CallCtx;
use crate::call::refusal::{Refusal, RefusalKind};
use crate::event::Event;
use crate::registry::Runtime;
use crate::sandbox::fsguard::resolve_at;
use async_trait::async_trait;
use serde_json::Value;
use std::path::PathBuf;
use toolhost_policy::{DecidedBy, Decision, Mode, Request, Rules, SubjectKind};

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

    /// Put a tool's own question (`toolhost:session/session.elicit`, already checked) to the
    /// person. Unlike `ask`, questions of parallel calls may come at once: an implementation
    /// that owns a terminal puts them one at a time itself. Default: nobody can be asked, so
    /// [`Answer::Cancel`](crate::Answer::Cancel).
    async fn elicit(&self, question: &crate::Question) -> crate::Answer {
        let _ = question;
        crate::Answer::Cancel
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

impl Runtime {
    /// Step 6: rules and mode; an ask goes to the decider, one question at a time. On success,
    /// the paths the call may write although other programs run them (a person said yes).
    pub(crate) async fn permit(
        &self,
        cx: &CallCtx<'_>,
        input: &Value,
        (hook, hook_reason): (Option<Decision>, Option<&str>),
    ) -> Result<Vec<PathBuf>, Refusal> {
        let (id, name, tool, view, cancel) = (cx.id(), cx.name(), cx.tool, &cx.view, cx.cancel());
        let pointer = tool.info.permission_subject.as_deref();
        let subject = subject_value(input, pointer);
        let req = Request {
            tool: name,
            subject: subject.as_ref().map(|(v, k)| (v.as_str(), *k)),
            read_only: tool.info.read_only,
            grant_inside_workspace: tool.grant_inside_workspace,
        };
        // A write to a file other programs run (`.git/hooks/…`) is asked in every mode, and the
        // filesystem guard lets only this call, and only that file, through.
        let guarded = match &subject {
            Some((value, SubjectKind::Path)) if !tool.info.read_only => {
                let real = resolve_at(&self.workspace, value, true);
                self.fs_policy.needs_ask(&real).map(|pattern| (real.clone(), pattern.to_string()))
            }
            _ => None,
        };
        let verdict = self.permissions.rules.verdict(self.permissions.mode, &req, &self.workspace, hook);
        // What made the decision, for the audit log: the rule, mode or hook (with its command).
        let by = match (verdict.by, hook_reason) {
            (DecidedBy::Hook, Some(command)) => format!("{}: {command}", verdict.reason),
            _ => verdict.reason.clone(),
        };
        let (decision, reason) = match (verdict.decision, &guarded) {
            (Decision::Allow | Decision::Ask, Some((real, pattern))) => (
                Decision::Ask,
                format!(
                    "{} matches `{pattern}`, a file other programs run: writing it is asked every time, in every mode",
                    real.display()
                ),
            ),
            _ => (verdict.decision, verdict.reason),
        };
        let approved = || guarded.iter().map(|(real, _)| real.clone()).collect::<Vec<_>>();
        let denied = |message: String| Refusal::new(RefusalKind::PermissionDenied, message);
        match decision {
            Decision::Allow => {
                self.decided(id, name, "allow", &by, None);
                return Ok(Vec::new());
            }
            Decision::Deny => {
                self.decided(id, name, "deny", &by, None);
                let said =
                    claude_says(Said::Denied(verdict.by, self.permissions.mode), name, &req, pointer, &self.workspace);
                return Err(denied(format!("{said} {}.", capitalized(&reason))));
            }
            Decision::Ask => {}
        }
        let suggested = req.suggested_rule(&self.workspace);
        let asked = |answer: &str| {
            self.emit(|| Event::PermissionAsked {
                id: id.to_string(),
                tool: name.to_string(),
                reason: reason.clone(),
                answer: answer.to_string(),
            });
            self.decided(id, name, "ask", &by, Some(answer));
        };
        let _one_at_a_time = tokio::select! {
            guard = self.permissions.ask_lock.lock() => guard,
            _ = cancel.cancelled() => return Err(Refusal::interrupted()),
        };
        if guarded.is_none() && view.allows(name) {
            self.decided(id, name, "ask", &by, Some("allowed_earlier"));
            return Ok(Vec::new());
        }
        let request = AskRequest {
            tool_use_id: id.to_string(),
            tool: name.to_string(),
            input: input.clone(),
            subject: subject.as_ref().map(|(v, _)| v.clone()),
            reason: reason.clone(),
            session_rule: name.to_string(),
            suggested_rule: suggested.clone(),
        };
        let decider = cx.options.decider.as_ref().or(self.decider.as_ref());
        let Some(decider) = decider.filter(|d| d.can_ask(&request)) else {
            asked("no_one_to_ask");
            let said = claude_says(Said::Asked, name, &req, pointer, &self.workspace);
            let reason = capitalized(&reason);
            if guarded.is_some() {
                return Err(denied(format!(
                    "{said} {reason}, and there is no one to ask (no terminal). \
                     No rule or mode allows it: run toolhost where a person can answer, or make the change yourself."
                )));
            }
            return Err(denied(format!(
                "{said} {reason}, and there is no one to ask (no terminal). \
                 To allow such calls, add the rule \"{suggested}\" to `allow` in [permissions] of toolhost.toml, \
                 or pass --allow '{suggested}'."
            )));
        };
        let answer = tokio::select! {
            answer = decider.ask(&request) => answer,
            _ = cancel.cancelled() => return Err(Refusal::interrupted()),
        };
        match answer {
            AskAnswer::AllowOnce => {
                asked("allow_once");
                Ok(approved())
            }
            // "Always" never covers files other programs run: the next write is asked again.
            AskAnswer::AllowAlways if guarded.is_some() => {
                asked("allow_once");
                Ok(approved())
            }
            AskAnswer::AllowAlways => {
                asked("allow_always");
                view.allow(name);
                Ok(Vec::new())
            }
            AskAnswer::Deny(why) => {
                asked("deny");
                let why = why.filter(|w| !w.trim().is_empty()).map(|w| format!(": {w}")).unwrap_or_default();
                Err(denied(format!("Permission to use {name} was denied by the user{why}.")))
            }
        }
    }

    /// Report a permission decision: `decision` is `allow`, `deny` or `ask`, `by` the rule,
    /// mode or hook that made it, `answer` what an ask got.
    pub(crate) fn decided(&self, id: &str, tool: &str, decision: &str, by: &str, answer: Option<&str>) {
        self.emit(|| Event::Decided {
            id: id.to_string(),
            tool: tool.to_string(),
            session: self.session_id.clone(),
            decision: decision.to_string(),
            by: by.to_string(),
            answer: answer.map(str::to_string),
        });
    }
}

/// What kind of refusal Claude Code's sentence is for.
#[derive(Clone, Copy)]
enum Said {
    /// A denial, by what, in which mode.
    Denied(DecidedBy, Mode),
    /// An ask no one could answer.
    Asked,
}

/// Claude Code's own sentence for a refusal (its exact words, as Claude Code 2.1 writes them),
/// so that a model, a hook or a script that knows them reads the same here; toolhost's reason
/// follows it. A path is shown as the absolute path it names.
fn claude_says(
    said: Said,
    name: &str,
    req: &Request<'_>,
    pointer: Option<&str>,
    workspace: &std::path::Path,
) -> String {
    let path = match req.subject {
        Some((value, SubjectKind::Path)) => Some(toolhost_policy::resolve(value, workspace)),
        _ => None,
    };
    match (said, path) {
        // Claude Code's file tools (their subject is `file_path`) refuse a denied path before
        // asking anyone; its search tools say which path.
        (Said::Denied(DecidedBy::Rule, _), Some(_)) if pointer == Some("/file_path") => {
            "File is in a directory that is denied by your permission settings.".to_string()
        }
        (Said::Denied(DecidedBy::Rule, _), Some(p)) if req.read_only => {
            format!("Permission to read {} has been denied.", p.display())
        }
        (Said::Denied(DecidedBy::Rule, _), Some(p)) => format!("Permission to edit {} has been denied.", p.display()),
        (Said::Denied(DecidedBy::Mode, Mode::Plan), Some(p)) if !req.read_only => {
            format!("Cannot write to {} while in plan mode.", p.display())
        }
        (Said::Denied(..), _) => format!("Permission to use {name} has been denied."),
        (Said::Asked, Some(p)) if req.read_only => {
            format!("Claude requested permissions to read from {}, but you haven't granted it yet.", p.display())
        }
        (Said::Asked, Some(p)) => {
            format!("Claude requested permissions to write to {}, but you haven't granted it yet.", p.display())
        }
        (Said::Asked, None) => format!("Claude requested permissions to use {name}, but you haven't granted it yet."),
    }
}

/// `reason` with its first letter upper-case, to follow a sentence.
fn capitalized(reason: &str) -> String {
    let mut chars = reason.chars();
    match chars.next() {
        Some(first) => first.to_uppercase().chain(chars).collect(),
        None => String::new(),
    }
}
