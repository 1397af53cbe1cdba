//! Several hooks' answers to one event, merged: deny > ask > allow, the last rewrite of the
//! input, every added context.

use super::protocol::DEFAULT_BLOCK_REASON;
use super::{HookEvent, HookResponse};
use serde_json::Value;
use toolhost_policy::Decision;

/// The hooks' answers to one event, combined.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Combined {
    /// deny > ask > allow over every answer that decided.
    pub decision: Option<Decision>,
    /// The reason of the answer that set `decision`, prefixed with its source.
    pub reason: Option<String>,
    /// The last `updated_input` (in config order) of an answer that did not deny.
    pub updated_input: Option<Value>,
    /// Every `additional_context`, in order.
    pub additional_context: Vec<String>,
    /// The last `updated_output` (PostToolUse, MCP tools).
    pub updated_output: Option<Value>,
    /// The first `continue: false` answer's stop reason.
    pub stop: Option<String>,
    /// Every `systemMessage`, prefixed with its source.
    pub system_messages: Vec<String>,
}

/// Combine answers: a deny is sticky (no later allow overrides it), then ask, then allow.
///
/// The reason is that of the first answer with the winning decision: for a deny
/// `"{event}:{tool} hook error: [{source}]: {reason}"` (the reason defaults to `Blocked by
/// hook`), otherwise `"[{source}]: {reason}"`, or `None` when that answer gave no reason.
pub(crate) fn combine(event: HookEvent, tool: &str, responses: &[HookResponse]) -> Combined {
    fn rank(decision: Decision) -> u8 {
        match decision {
            Decision::Allow => 0,
            Decision::Ask => 1,
            Decision::Deny => 2,
        }
    }

    // The first answer with the strongest decision.
    let mut winner: Option<(Decision, &HookResponse)> = None;
    for response in responses {
        if let Some(decision) = response.decision
            && winner.is_none_or(|(best, _)| rank(decision) > rank(best))
        {
            winner = Some((decision, response));
        }
    }
    let (decision, reason) = match winner {
        None => (None, None),
        Some((Decision::Deny, r)) => {
            let reason = r.reason.as_deref().unwrap_or(DEFAULT_BLOCK_REASON);
            (Some(Decision::Deny), Some(format!("{event}:{tool} hook error: [{}]: {reason}", r.source)))
        }
        Some((decision, r)) => (Some(decision), r.reason.as_ref().map(|reason| format!("[{}]: {reason}", r.source))),
    };

    let updated_input = responses
        .iter()
        .filter(|r| r.decision != Some(Decision::Deny))
        .filter_map(|r| r.updated_input.clone())
        .next_back();
    let additional_context = responses
        .iter()
        .filter_map(|r| r.additional_context.as_deref())
        .filter(|c| !c.trim().is_empty())
        .map(str::to_string)
        .collect();

    let updated_output = responses.iter().filter_map(|r| r.updated_output.clone()).next_back();
    let stop = responses.iter().find_map(|r| r.stop.clone());
    let system_messages =
        responses.iter().filter_map(|r| r.system_message.as_ref().map(|m| format!("[{}]: {m}", r.source))).collect();
    Combined { decision, reason, updated_input, additional_context, updated_output, stop, system_messages }
}
