//! The hooks that frame an agent's session rather than a call: `SessionStart`,
//! `UserPromptSubmit` and `Stop`, with Claude Code's inputs and answers. Only command hooks
//! run here (the Rust [`super::Hooks`] trait speaks of calls).

use super::{HookEvent, HookSet, combine};
use crate::event::Event;
use serde::Serialize;
use toolhost_policy::Decision;

/// A moment of a session that hooks may see.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum SessionEvent {
    /// The session starts (`source`: `startup`, the matcher's query).
    Start {
        /// Why: `startup` (Claude Code also knows `resume`, `clear`, `compact`).
        source: String,
    },
    /// A prompt is about to be sent.
    Prompt {
        /// The prompt's text.
        prompt: String,
    },
    /// The model ended its turn.
    Stop {
        /// Whether the model is already going on because a Stop hook asked it to (a hook
        /// should then let it stop, or it loops).
        active: bool,
    },
}

impl SessionEvent {
    /// A session that starts now.
    pub fn start() -> Self {
        SessionEvent::Start { source: "startup".to_string() }
    }

    /// A prompt about to be sent.
    pub fn prompt(prompt: impl Into<String>) -> Self {
        SessionEvent::Prompt { prompt: prompt.into() }
    }

    /// The model ended its turn; `active`: it was going on because of a Stop hook.
    pub fn stop(active: bool) -> Self {
        SessionEvent::Stop { active }
    }

    fn hook_event(&self) -> HookEvent {
        match self {
            SessionEvent::Start { .. } => HookEvent::SessionStart,
            SessionEvent::Prompt { .. } => HookEvent::UserPromptSubmit,
            SessionEvent::Stop { .. } => HookEvent::Stop,
        }
    }
}

/// What a session event's hooks said, combined.
#[derive(Debug, Clone, Default, PartialEq)]
#[non_exhaustive]
pub struct SessionHooks {
    /// `UserPromptSubmit`: the prompt is blocked (the reason). `Stop`: the model must go on,
    /// reading this (Claude Code's `decision: "block"` or exit 2, with its reason).
    pub blocked: Option<String>,
    /// Context for the model (`additionalContext`, or what a `SessionStart` /
    /// `UserPromptSubmit` hook printed).
    pub context: Vec<String>,
    /// `continue: false`: the session ends now (the reason).
    pub stop: Option<String>,
}

/// Claude Code's input of a session hook.
#[derive(Serialize)]
struct Input<'a> {
    session_id: &'a str,
    transcript_path: &'a str,
    cwd: String,
    permission_mode: &'static str,
    hook_event_name: HookEvent,
    #[serde(skip_serializing_if = "Option::is_none")]
    source: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    prompt: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    stop_hook_active: Option<bool>,
}

impl HookSet {
    /// Whether any hook is configured for the event of `event`.
    pub(crate) fn has_session(&self, event: &SessionEvent) -> bool {
        self.commands.any(event.hook_event())
    }

    /// Run the command hooks of a session event, all at once, and combine their answers: a
    /// block (exit 2, or `decision: "block"`) with its reason, every context, a stop. A hook
    /// that fails is reported as an event and otherwise ignored.
    pub(crate) async fn for_session(&self, session_id: &str, event: &SessionEvent) -> SessionHooks {
        let hook_event = event.hook_event();
        if !self.commands.any(hook_event) {
            return SessionHooks::default();
        }
        let mut input = Input {
            session_id,
            transcript_path: "",
            cwd: self.cwd.clone(),
            permission_mode: self.mode,
            hook_event_name: hook_event,
            source: None,
            prompt: None,
            stop_hook_active: None,
        };
        let query = match event {
            SessionEvent::Start { source } => {
                input.source = Some(source);
                Some(source.as_str())
            }
            SessionEvent::Prompt { prompt } => {
                input.prompt = Some(prompt);
                None
            }
            SessionEvent::Stop { active } => {
                input.stop_hook_active = Some(*active);
                None
            }
        };
        let answers = self.commands.run_event(hook_event, query, &input, &|_| true).await;
        let responses = self.answered(answers, hook_event, "", "");
        for r in &responses {
            if let Some(message) = &r.system_message {
                crate::event::emit_to(self.events.as_ref(), || Event::HookMessage {
                    id: String::new(),
                    tool: String::new(),
                    hook_event,
                    message: format!("[{}]: {message}", r.source),
                });
            }
        }
        let combined = combine(hook_event, "", &responses);
        // The reason as the hook gave it: the model (Stop) or the person (a blocked prompt)
        // reads it, not a tool's error line.
        let blocked = (combined.decision == Some(Decision::Deny)).then(|| {
            responses
                .iter()
                .find(|r| r.decision == Some(Decision::Deny))
                .and_then(|r| r.reason.clone())
                .unwrap_or_else(|| super::protocol::DEFAULT_BLOCK_REASON.to_string())
        });
        SessionHooks { blocked, context: combined.additional_context, stop: combined.stop }
    }
}
