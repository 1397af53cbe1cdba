//! # Refusals: a call answered without its tool running
//!
//! Every step before the call itself may stop a call: the lookup, the pairing of ids, the shape
//! of the block, the input's size, its JSON Schema, the tool's `validate`, PreToolUse hooks,
//! the permission check, a cancellation. Each returns a [`Refusal`], and [`Refusal::into_result`]
//! is the one place a refusal becomes a `tool_result`: the only code that writes Claude Code's
//! `<tool_use_error>` wrapper (around what was wrong with the input: the model is to fix the
//! call and try again), and the one place that chooses the [`OutcomeKind`] the events and the
//! audit log report.

use crate::call::outcome::OutcomeKind;
use crate::call::result::ToolResult;

/// What the model reads for a call cut short or never started because the turn was aborted.
pub(crate) const INTERRUPTED: &str = "Interrupted by user";

/// Why a call was not run (or, for [`RefusalKind::Guest`], why its `validate` failed).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum RefusalKind {
    /// No tool of that name is loaded (or offered to this model).
    UnknownTool,
    /// Another call of the turn has the same id: its result could not be paired.
    DuplicateId,
    /// A `tool_use` block without a `name` or an `input` object.
    MalformedBlock,
    /// The input is not valid JSON (a streamed block cut short).
    InvalidJson,
    /// The input is larger than the tool's `max_input_bytes`.
    InputTooLarge,
    /// The input breaks the tool's JSON Schema.
    Schema,
    /// A deferred tool whose schema the model has not loaded yet.
    NotLoaded,
    /// The tool's `validate` refused the input.
    Validate,
    /// The tool's `validate` trapped, timed out or ran out of memory (the kind says which).
    Guest(OutcomeKind),
    /// A PreToolUse hook blocked the call.
    HookBlocked,
    /// A rule or mode denied the call, or an ask nobody allowed.
    PermissionDenied,
    /// The call was cancelled before it ran.
    Interrupted,
}

impl RefusalKind {
    /// The outcome reported for it.
    pub fn outcome(self) -> OutcomeKind {
        match self {
            RefusalKind::UnknownTool => OutcomeKind::UnknownTool,
            RefusalKind::DuplicateId => OutcomeKind::DuplicateId,
            RefusalKind::MalformedBlock => OutcomeKind::MalformedBlock,
            RefusalKind::InvalidJson => OutcomeKind::InvalidJson,
            RefusalKind::InputTooLarge | RefusalKind::Schema | RefusalKind::NotLoaded => OutcomeKind::SchemaError,
            RefusalKind::Validate => OutcomeKind::ValidateError,
            RefusalKind::Guest(kind) => kind,
            RefusalKind::HookBlocked => OutcomeKind::HookBlocked,
            RefusalKind::PermissionDenied => OutcomeKind::PermissionDenied,
            RefusalKind::Interrupted => OutcomeKind::Interrupted,
        }
    }

    /// What goes before the message inside `<tool_use_error>` (Claude Code's spelling), or
    /// `None` for a refusal that is not about the call's form (a hook, a permission, a trap, a
    /// cancellation: plain text, as Claude Code writes them).
    fn wrapper_prefix(self) -> Option<&'static str> {
        match self {
            RefusalKind::UnknownTool | RefusalKind::DuplicateId => Some("Error: "),
            RefusalKind::MalformedBlock
            | RefusalKind::InvalidJson
            | RefusalKind::InputTooLarge
            | RefusalKind::Schema => Some("InputValidationError: "),
            RefusalKind::NotLoaded | RefusalKind::Validate => Some(""),
            RefusalKind::Guest(_)
            | RefusalKind::HookBlocked
            | RefusalKind::PermissionDenied
            | RefusalKind::Interrupted => None,
        }
    }
}

/// A call stopped before (or instead of) running, and what the model is told.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    /// Why.
    pub kind: RefusalKind,
    /// What the model reads (without the `<tool_use_error>` wrapper, added by
    /// [`Refusal::into_result`] where Claude Code has it).
    pub message: String,
}

impl Refusal {
    /// A refusal of `kind` saying `message`.
    pub fn new(kind: RefusalKind, message: impl Into<String>) -> Refusal {
        Refusal { kind, message: message.into() }
    }

    /// No tool named `name`.
    pub fn unknown_tool(name: &str) -> Refusal {
        Refusal::new(RefusalKind::UnknownTool, format!("No such tool available: {name}"))
    }

    /// A second call with the id `id` in one turn.
    pub fn duplicate_id(id: &str) -> Refusal {
        Refusal::new(RefusalKind::DuplicateId, format!("duplicate tool_use id {id:?}; this call was not run"))
    }

    /// The call was cancelled before it ran.
    pub fn interrupted() -> Refusal {
        Refusal::new(RefusalKind::Interrupted, INTERRUPTED)
    }

    /// The error `tool_result` for the call `tool_use_id`.
    pub fn into_result(self, tool_use_id: &str) -> ToolResult {
        let text = match self.kind.wrapper_prefix() {
            Some(prefix) => format!("<tool_use_error>{prefix}{}</tool_use_error>", self.message),
            None => self.message,
        };
        ToolResult::error(tool_use_id, self.kind.outcome(), text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_refusals_of_the_call_form_are_wrapped() {
        let r = Refusal::unknown_tool("Nope").into_result("t1");
        assert_eq!(
            (r.text().as_str(), r.outcome),
            ("<tool_use_error>Error: No such tool available: Nope</tool_use_error>", OutcomeKind::UnknownTool)
        );
        let r = Refusal::new(RefusalKind::Schema, "x").into_result("t1");
        assert_eq!(r.text(), "<tool_use_error>InputValidationError: x</tool_use_error>");
        let r = Refusal::new(RefusalKind::Validate, "no such file").into_result("t1");
        assert_eq!(
            (r.text().as_str(), r.outcome),
            ("<tool_use_error>no such file</tool_use_error>", OutcomeKind::ValidateError)
        );
        let r = Refusal::interrupted().into_result("t1");
        assert_eq!((r.text().as_str(), r.outcome, r.is_error), (INTERRUPTED, OutcomeKind::Interrupted, true));
        let r = Refusal::new(RefusalKind::Guest(OutcomeKind::Timeout), "slow").into_result("t1");
        assert_eq!((r.text().as_str(), r.outcome), ("slow", OutcomeKind::Timeout));
        assert_eq!(Refusal::duplicate_id("a").into_result("a").outcome, OutcomeKind::DuplicateId);
    }
}
