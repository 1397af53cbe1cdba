//! What a finished hook answered, read as Claude Code reads it: exit 0 with JSON
//! (`hookSpecificOutput` or the older top-level `decision`), exit 2 to deny with stderr,
//! anything else a failure.

use super::HookEvent;
use super::HookResponse;
use super::runner::{MAX_FAILURE_STDERR_CHARS, killed_message, truncate_chars};
use serde_json::Value;
use toolhost_policy::Decision;

/// The reason of a deny that did not give one.
pub(super) const DEFAULT_BLOCK_REASON: &str = "Blocked by hook";

/// What a finished hook left.
pub(super) struct Output {
    pub status: std::process::ExitStatus,
    pub stdout: String,
    pub stderr: String,
}

/// Map a finished hook to its answer: exit 0 reads JSON from stdout, exit 2 denies with
/// stderr, anything else is a failure.
pub(super) fn interpret(event: HookEvent, output: &Output) -> Result<HookResponse, String> {
    match output.status.code() {
        Some(0) => {
            let stdout = output.stdout.trim();
            if stdout.starts_with('{') {
                parse_json_output(event, stdout)
            } else if matches!(event, HookEvent::SessionStart | HookEvent::UserPromptSubmit) && !stdout.is_empty() {
                // As in Claude Code, what these hooks print is context for the model.
                Ok(HookResponse { additional_context: Some(stdout.to_string()), ..Default::default() })
            } else {
                // Plain stdout is for the transcript in Claude Code; tool events ignore it.
                Ok(HookResponse::default())
            }
        }
        Some(2) => {
            let stderr = output.stderr.trim();
            let reason = if stderr.is_empty() { "No stderr output" } else { stderr };
            Ok(HookResponse { decision: Some(Decision::Deny), reason: Some(reason.to_string()), ..Default::default() })
        }
        Some(code) => {
            let stderr = output.stderr.trim();
            if stderr.is_empty() {
                Err(format!("exited with status {code}"))
            } else {
                Err(format!("exited with status {code}: {}", truncate_chars(stderr, MAX_FAILURE_STDERR_CHARS)))
            }
        }
        None => Err(killed_message(&output.status)),
    }
}

/// Parse the JSON a hook printed on exit 0.
///
/// `hookSpecificOutput` (an object whose `hookEventName`, if present, must name `event`) gives
/// `additionalContext` for every event, and for `PreToolUse` also `permissionDecision`
/// (`allow`, `deny`, `ask`; `defer` leaves the decision to the rest of the flow),
/// `permissionDecisionReason` and `updatedInput`, and for `PostToolUse`
/// `updatedMCPToolOutput` (applied to MCP servers' tools only). The older top-level `decision` is honoured
/// when `permissionDecision` is absent: `block` denies (for every event) with the top-level
/// `reason`, `approve` allows (`PreToolUse` only). `continue: false` (with `stopReason`)
/// stops the session after the call's batch, `systemMessage` is for the person, and
/// `suppressOutput` changes nothing here (toolhost never shows a hook's stdout).
pub(super) fn parse_json_output(event: HookEvent, stdout: &str) -> Result<HookResponse, String> {
    let value: Value = serde_json::from_str(stdout).map_err(|e| format!("printed invalid JSON: {e}"))?;
    let Value::Object(top) = value else {
        return Err(format!("printed JSON {} instead of an object", json_kind(&value)));
    };
    let mut response = HookResponse::default();
    let mut reason = None;

    match top.get("hookSpecificOutput") {
        None | Some(Value::Null) => {}
        Some(Value::Object(specific)) => {
            if let Some(name) = string_field(specific, "hookEventName", "hookSpecificOutput")?
                && name != event.to_string()
            {
                return Err(format!("returned hookEventName {name} for a {event} event"));
            }
            response.additional_context = string_field(specific, "additionalContext", "hookSpecificOutput")?;
            if event == HookEvent::PostToolUse {
                response.updated_output = specific.get("updatedMCPToolOutput").filter(|v| !v.is_null()).cloned();
            }
            if event == HookEvent::PreToolUse {
                response.decision = match string_field(specific, "permissionDecision", "hookSpecificOutput")?.as_deref()
                {
                    None | Some("defer") => None,
                    Some("allow") => Some(Decision::Allow),
                    Some("deny") => Some(Decision::Deny),
                    Some("ask") => Some(Decision::Ask),
                    Some(other) => {
                        return Err(format!(
                            "returned permissionDecision {other:?}; expected \"allow\", \"deny\", \"ask\" or \"defer\""
                        ));
                    }
                };
                reason = string_field(specific, "permissionDecisionReason", "hookSpecificOutput")?;
                response.updated_input = match specific.get("updatedInput") {
                    None | Some(Value::Null) => None,
                    Some(input @ Value::Object(_)) => Some(input.clone()),
                    Some(other) => {
                        return Err(format!(
                            "returned hookSpecificOutput.updatedInput as {}; it must be an object",
                            json_kind(other)
                        ));
                    }
                };
            }
        }
        Some(other) => {
            return Err(format!("returned hookSpecificOutput as {}; it must be an object", json_kind(other)));
        }
    }

    let top_reason = string_field(&top, "reason", "the output")?;
    let legacy = match string_field(&top, "decision", "the output")?.as_deref() {
        None => None,
        Some("block") => Some(Decision::Deny),
        Some("approve") => (event == HookEvent::PreToolUse).then_some(Decision::Allow),
        Some(other) => return Err(format!("returned decision {other:?}; expected \"approve\" or \"block\"")),
    };
    if response.decision.is_none()
        && let Some(legacy) = legacy
    {
        response.decision = Some(legacy);
        if legacy == Decision::Deny {
            reason = reason.or_else(|| top_reason.clone()).or_else(|| Some(DEFAULT_BLOCK_REASON.to_string()));
        }
    }
    response.reason = reason.or(top_reason);
    let stop_reason = string_field(&top, "stopReason", "the output")?;
    match top.get("continue") {
        None | Some(Value::Null) | Some(Value::Bool(true)) => {}
        Some(Value::Bool(false)) => {
            response.stop = Some(stop_reason.unwrap_or_else(|| format!("Execution stopped by {event} hook")));
        }
        Some(other) => return Err(format!("returned continue as {}; it must be a boolean", json_kind(other))),
    }
    response.system_message = string_field(&top, "systemMessage", "the output")?;
    match top.get("suppressOutput") {
        None | Some(Value::Null) | Some(Value::Bool(_)) => {}
        Some(other) => return Err(format!("returned suppressOutput as {}; it must be a boolean", json_kind(other))),
    }
    Ok(response)
}

/// `object[key]` when it is a string; absent or `null` is `None`, anything else an error.
fn string_field(object: &serde_json::Map<String, Value>, key: &str, within: &str) -> Result<Option<String>, String> {
    match object.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(other) => {
            let path = if within == "the output" { key.to_string() } else { format!("{within}.{key}") };
            Err(format!("returned {path} as {}; it must be a string", json_kind(other)))
        }
    }
}

fn json_kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}
