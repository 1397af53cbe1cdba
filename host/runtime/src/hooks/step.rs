//! Steps 5 and 8 of a call: the PreToolUse, PostToolUse and PostToolUseFailure hooks of the
//! call's event, command hooks and Rust hooks all at once, their answers combined.

use super::{Combined, HookEvent, HookFailure, HookInput, HookResponse, HookSet, combine};
use crate::event::Event;
use serde_json::Value;
use toolhost_policy::SubjectKind;

/// The subject of a call's input its tool's permission rules name (a path, a URL, a command),
/// which a hook's `if` matches: found only when a hook runs.
pub(crate) type Subject<'a> = &'a (dyn Fn() -> Option<(String, SubjectKind)> + Sync);

/// The call a step's hooks run for: its id, its tool, and its subject.
pub(crate) struct ForCall<'a> {
    pub id: &'a str,
    pub tool: &'a str,
    pub subject: Subject<'a>,
}

impl HookSet {
    /// Run the hooks of `event` for this call (command hooks and Rust hooks, all at once) and
    /// combine their answers. Failed hooks are reported and otherwise ignored.
    pub(crate) async fn for_call(
        &self,
        call: &ForCall<'_>,
        event: HookEvent,
        input: &Value,
        response: Option<Value>,
        error: Option<(String, bool)>,
    ) -> Combined {
        let (id, name) = (call.id, call.tool);
        if self.embedded.is_empty() && !self.commands.has(event, name) {
            return Combined::default();
        }
        let hook_input = HookInput {
            session_id: self.session_id.clone(),
            transcript_path: String::new(),
            cwd: self.cwd.clone(),
            permission_mode: self.mode.to_string(),
            hook_event_name: event,
            tool_name: name.to_string(),
            tool_input: input.clone(),
            tool_use_id: id.to_string(),
            tool_response: response,
            is_interrupt: error.as_ref().map(|(_, i)| *i),
            error: error.map(|(e, _)| e),
        };
        let rust = futures::future::join_all(self.embedded.iter().map(|h| {
            let hook_input = &hook_input;
            async move {
                match event {
                    HookEvent::PreToolUse => h.pre_tool_use(hook_input).await,
                    HookEvent::PostToolUse => h.post_tool_use(hook_input).await,
                    HookEvent::PostToolUseFailure => h.post_tool_use_failure(hook_input).await,
                    // Session events are not a call's: the Rust trait has no say in them.
                    _ => HookResponse::default(),
                }
            }
        }));
        let subject = (call.subject)();
        let subject = subject.as_ref().map(|(v, k)| (v.as_str(), *k));
        let (commands, rust) = tokio::join!(self.commands.run_for_call(&hook_input, subject), rust);
        let mut responses = self.answered(commands, event, id, name);
        responses.extend(rust.into_iter().map(|mut r| {
            if r.source.is_empty() {
                r.source = "rust hook".to_string();
            }
            r
        }));
        combine(event, name, &responses)
    }

    /// The answers of the command hooks that ran, each failed one logged and reported as a
    /// [`Event::HookFailed`] (of a call: its id and tool; of the session: empty ones) and
    /// otherwise left out, as Claude Code leaves out a hook that fails.
    pub(crate) fn answered(
        &self,
        answers: Vec<Result<HookResponse, HookFailure>>,
        hook_event: HookEvent,
        id: &str,
        tool: &str,
    ) -> Vec<HookResponse> {
        let mut responses = Vec::with_capacity(answers.len());
        for answer in answers {
            match answer {
                Ok(r) => responses.push(r),
                Err(f) => {
                    tracing::warn!("{f}");
                    crate::event::emit_to(self.events.as_ref(), || Event::HookFailed {
                        id: id.to_string(),
                        tool: tool.to_string(),
                        hook_event,
                        hook: f.source_name.clone(),
                        message: f.message.clone(),
                    });
                }
            }
        }
        responses
    }
}
