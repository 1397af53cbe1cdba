//! PreToolUse / PostToolUse / PostToolUseFailure hooks: Claude Code-compatible command hooks
//! from the config, and a Rust [`Hooks`] trait for programs that embed the runtime.
//!
//! A command hook is run by `sh -c COMMAND` with the workspace as its working directory and
//! the event as one JSON line on stdin (`hook_event_name`, `tool_name`, `tool_input`,
//! `tool_use_id`, `cwd`, …, and `tool_response` after a call). Exit 0 may print JSON with
//! `hookSpecificOutput.{permissionDecision, permissionDecisionReason, updatedInput,
//! additionalContext}`; exit 2 blocks with stderr as the reason; any other exit, a timeout,
//! a crash or invalid JSON is a [`HookFailure`]: reported, never blocking.

use async_trait::async_trait;
use serde::Serialize;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use tokio::task::{AbortHandle, JoinHandle};
use toolhost_policy::{Decision, HookMatcher, HooksConfig};

/// The hook events a tool call goes through.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum HookEvent {
    /// After `validate`, before the permission check: may block, rewrite input, decide.
    PreToolUse,
    /// After a successful call: may add context (or block with feedback for the model).
    PostToolUse,
    /// After a call that failed: may add context.
    PostToolUseFailure,
}

impl std::fmt::Display for HookEvent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            HookEvent::PreToolUse => "PreToolUse",
            HookEvent::PostToolUse => "PostToolUse",
            HookEvent::PostToolUseFailure => "PostToolUseFailure",
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

/// One configured command hook.
#[derive(Debug, Clone)]
pub struct CommandHook {
    /// Which tools it runs for.
    pub matcher: HookMatcher,
    /// The shell command.
    pub command: String,
    /// How long it may run before it is killed (and reported).
    pub timeout: Duration,
}

/// The command hooks of a config, by event.
#[derive(Debug, Clone, Default)]
pub struct CommandHooks {
    pre_tool_use: Vec<CommandHook>,
    post_tool_use: Vec<CommandHook>,
    post_tool_use_failure: Vec<CommandHook>,
    /// Working directory of every hook.
    workspace: PathBuf,
}

impl CommandHooks {
    /// The hooks of `config`, run in `workspace`.
    pub fn from_config(config: &HooksConfig, workspace: PathBuf) -> Self {
        let convert = |hooks: &[toolhost_policy::HookConfig]| {
            hooks
                .iter()
                .map(|h| CommandHook {
                    matcher: h.matcher(),
                    command: h.command.get_ref().clone(),
                    timeout: Duration::from_millis(h.timeout_ms()),
                })
                .collect()
        };
        CommandHooks {
            pre_tool_use: convert(&config.pre_tool_use),
            post_tool_use: convert(&config.post_tool_use),
            post_tool_use_failure: convert(&config.post_tool_use_failure),
            workspace,
        }
    }

    /// Whether no hook is configured for any event.
    pub fn is_empty(&self) -> bool {
        self.pre_tool_use.is_empty() && self.post_tool_use.is_empty() && self.post_tool_use_failure.is_empty()
    }

    /// Whether any hook would run for `event` on `tool` (so a caller can skip building the
    /// [`HookInput`]).
    pub fn has(&self, event: HookEvent, tool: &str) -> bool {
        self.hooks_for(event).iter().any(|h| h.matcher.matches(tool))
    }

    /// Run every hook of `input.hook_event_name` whose matcher matches `input.tool_name`, all
    /// at once; answers come back in config order.
    ///
    /// Each hook is `sh -c COMMAND` in the workspace, in a process group of its own, with the
    /// environment of this process plus `CLAUDE_PROJECT_DIR` and `TOOLHOST_WORKSPACE` (both the
    /// workspace). Its stdin is `input` as one JSON line; its stdout and stderr are kept up to
    /// 1 MiB each. A hook is finished when it has exited and closed both streams; at its
    /// timeout its whole process group is killed.
    ///
    /// Exit 0 with a JSON object on stdout answers with `hookSpecificOutput.{permissionDecision,
    /// permissionDecisionReason, updatedInput, additionalContext}` (only `additionalContext`
    /// after a call), or the older top-level `decision` (`"block"` denies, `"approve"` allows)
    /// and `reason`. Exit 0 with any other stdout says nothing. Exit 2 denies with stderr as
    /// the reason; its stdout is ignored.
    ///
    /// # Errors
    ///
    /// An answer is a [`HookFailure`] when the hook could not be started, exited with a status
    /// other than 0 or 2, was killed by a signal, timed out, or printed JSON that is invalid or
    /// does not fit the protocol.
    ///
    /// Dropping the returned future kills every hook still running.
    pub async fn run(&self, input: &HookInput) -> Vec<Result<HookResponse, HookFailure>> {
        let event = input.hook_event_name;
        let hooks: Vec<CommandHook> =
            self.hooks_for(event).iter().filter(|h| h.matcher.matches(&input.tool_name)).cloned().collect();
        if hooks.is_empty() {
            return Vec::new();
        }
        let payload: Arc<[u8]> = match serde_json::to_string(input) {
            Ok(mut line) => {
                line.push('\n');
                line.into_bytes().into()
            }
            // Unreachable in practice (every key is a string), but not worth a panic.
            Err(e) => {
                return hooks
                    .into_iter()
                    .map(|h| Err(failure(event, &h.command, format!("could not encode the hook input: {e}"))))
                    .collect();
            }
        };

        // One task per hook so they run at once; awaited in config order. The guard aborts the
        // rest if this future is dropped, and an aborted hook kills its process group.
        let workspace: Arc<Path> = self.workspace.as_path().into();
        let handles: Vec<_> = hooks
            .iter()
            .map(|hook| tokio::spawn(run_one(hook.clone(), event, workspace.clone(), payload.clone())))
            .collect();
        let _abort = AbortOnDrop(handles.iter().map(JoinHandle::abort_handle).collect());
        let mut results = Vec::with_capacity(handles.len());
        for (hook, handle) in hooks.iter().zip(handles) {
            results.push(match handle.await {
                Ok(result) => result,
                Err(e) => Err(failure(event, &hook.command, format!("hook task failed: {e}"))),
            });
        }
        results
    }

    fn hooks_for(&self, event: HookEvent) -> &[CommandHook] {
        match event {
            HookEvent::PreToolUse => &self.pre_tool_use,
            HookEvent::PostToolUse => &self.post_tool_use,
            HookEvent::PostToolUseFailure => &self.post_tool_use_failure,
        }
    }
}

/// How much of a hook's stdout, and of its stderr, is kept. A hook answers with a small JSON
/// object or a one-line reason; the cap only stops a runaway hook from filling memory. What
/// comes after it is read and thrown away, so the hook never blocks on a full pipe.
const MAX_HOOK_OUTPUT: usize = 1024 * 1024;

/// How much of stderr a failure message quotes: enough for a traceback's last lines.
const MAX_FAILURE_STDERR_CHARS: usize = 2000;

/// The reason of a deny that did not give one.
const DEFAULT_BLOCK_REASON: &str = "Blocked by hook";

/// Aborts tasks when dropped.
struct AbortOnDrop(Vec<AbortHandle>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        for handle in &self.0 {
            handle.abort();
        }
    }
}

/// Kills a hook's process group when dropped, unless disarmed: on timeout, and when the hook's
/// task is aborted. Killing the group (not just `sh`) also ends what the hook started, such as
/// a `sleep` that would otherwise hold the output pipes open.
struct KillGroup(Option<u32>);

impl KillGroup {
    fn disarm(&mut self) {
        self.0 = None;
    }
}

impl Drop for KillGroup {
    fn drop(&mut self) {
        if let Some(pgid) = self.0.take() {
            // `kill(1)` rather than a signal call: the workspace denies `unsafe_code` and has no
            // libc binding. This blocks for the time it takes to start `kill`, which is fine on a
            // path taken only on timeout or cancellation, and it must be synchronous here in
            // `Drop`. If it fails, `kill_on_drop` still kills `sh` itself.
            let _ = std::process::Command::new("kill")
                .args(["-KILL", "--", &format!("-{pgid}")])
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status();
        }
    }
}

fn failure(event: HookEvent, command: &str, message: String) -> HookFailure {
    HookFailure { event, source_name: command.to_string(), message }
}

async fn run_one(
    hook: CommandHook,
    event: HookEvent,
    workspace: Arc<Path>,
    payload: Arc<[u8]>,
) -> Result<HookResponse, HookFailure> {
    let result = match execute(&hook, &workspace, &payload).await {
        Ok(output) => interpret(event, &output),
        Err(message) => Err(message),
    };
    match result {
        Ok(response) => Ok(HookResponse { source: hook.command, ..response }),
        Err(message) => Err(failure(event, &hook.command, message)),
    }
}

/// What a finished hook left.
struct Output {
    status: std::process::ExitStatus,
    stdout: String,
    stderr: String,
}

/// Run one hook to completion or its timeout.
async fn execute(hook: &CommandHook, workspace: &Path, payload: &[u8]) -> Result<Output, String> {
    let mut command = tokio::process::Command::new("sh");
    command
        .arg("-c")
        .arg(&hook.command)
        .current_dir(workspace)
        .env("CLAUDE_PROJECT_DIR", workspace)
        .env("TOOLHOST_WORKSPACE", workspace)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    #[cfg(unix)]
    command.process_group(0);
    let mut child = command.spawn().map_err(|e| format!("failed to start: {e}"))?;
    // With `process_group(0)` the group id is the child's pid.
    let mut group = KillGroup(child.id());

    let stdin = child.stdin.take();
    let stdout = child.stdout.take();
    let stderr = child.stderr.take();
    let finished = async {
        let write = async {
            if let Some(mut stdin) = stdin {
                // A hook need not read its input: a broken pipe is not an error.
                let _ = stdin.write_all(payload).await;
            } // Dropping `stdin` closes it: the hook sees end of input.
        };
        let ((), stdout, stderr, status) = tokio::join!(write, read_capped(stdout), read_capped(stderr), child.wait());
        (stdout, stderr, status)
    };
    let outcome = tokio::time::timeout(hook.timeout, finished).await;
    match outcome {
        Ok((stdout, stderr, status)) => {
            group.disarm();
            let status = status.map_err(|e| format!("could not be waited for: {e}"))?;
            Ok(Output {
                status,
                stdout: String::from_utf8_lossy(&stdout).into_owned(),
                stderr: String::from_utf8_lossy(&stderr).into_owned(),
            })
        }
        Err(_elapsed) => {
            drop(group);
            let _ = child.start_kill();
            let _ = child.wait().await;
            Err(format!("timed out after {} ms", hook.timeout.as_millis()))
        }
    }
}

/// Read `reader` to its end, keeping the first [`MAX_HOOK_OUTPUT`] bytes.
async fn read_capped<R: AsyncRead + Unpin>(reader: Option<R>) -> Vec<u8> {
    let mut kept = Vec::new();
    let Some(mut reader) = reader else {
        return kept;
    };
    let mut buf = vec![0; 64 * 1024];
    loop {
        match reader.read(&mut buf).await {
            Ok(0) | Err(_) => return kept,
            Ok(n) => {
                let room = MAX_HOOK_OUTPUT - kept.len();
                kept.extend_from_slice(&buf[..n.min(room)]);
            }
        }
    }
}

/// Map a finished hook to its answer: exit 0 reads JSON from stdout, exit 2 denies with
/// stderr, anything else is a failure.
fn interpret(event: HookEvent, output: &Output) -> Result<HookResponse, String> {
    match output.status.code() {
        Some(0) => {
            let stdout = output.stdout.trim();
            if stdout.starts_with('{') {
                parse_json_output(event, stdout)
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

#[cfg(unix)]
fn killed_message(status: &std::process::ExitStatus) -> String {
    use std::os::unix::process::ExitStatusExt;
    match status.signal() {
        Some(signal) => format!("was killed by signal {signal}"),
        None => format!("ended with {status}"),
    }
}

#[cfg(not(unix))]
fn killed_message(status: &std::process::ExitStatus) -> String {
    format!("ended with {status}")
}

/// At most `max` characters of `s`, with `…` when cut.
fn truncate_chars(s: &str, max: usize) -> String {
    match s.char_indices().nth(max) {
        Some((end, _)) => format!("{}…", &s[..end]),
        None => s.to_string(),
    }
}

/// Parse the JSON a hook printed on exit 0.
///
/// `hookSpecificOutput` (an object whose `hookEventName`, if present, must name `event`) gives
/// `additionalContext` for every event, and for `PreToolUse` also `permissionDecision`
/// (`allow`, `deny`, `ask`; `defer` leaves the decision to the rest of the flow),
/// `permissionDecisionReason` and `updatedInput`. The older top-level `decision` is honoured
/// when `permissionDecision` is absent: `block` denies (for every event) with the top-level
/// `reason`, `approve` allows (`PreToolUse` only). Other fields (`continue`, `systemMessage`,
/// …) mean nothing for a tool call and are ignored.
fn parse_json_output(event: HookEvent, stdout: &str) -> Result<HookResponse, String> {
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

/// The hooks' answers to one event, combined.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Combined {
    /// deny > ask > allow over every answer that decided.
    pub decision: Option<Decision>,
    /// The reason of the answer that set `decision`, prefixed with its source.
    pub reason: Option<String>,
    /// The last `updated_input` (in config order) of an answer that did not deny.
    pub updated_input: Option<Value>,
    /// Every `additional_context`, in order.
    pub additional_context: Vec<String>,
}

/// Combine answers: a deny is sticky (no later allow overrides it), then ask, then allow.
///
/// The reason is that of the first answer with the winning decision: for a deny
/// `"{event}:{tool} hook error: [{source}]: {reason}"` (the reason defaults to `Blocked by
/// hook`), otherwise `"[{source}]: {reason}"`, or `None` when that answer gave no reason.
///
/// # Examples
///
/// ```
/// use toolhost::policy::Decision;
/// use toolhost::{HookEvent, HookResponse, combine};
///
/// let allow = HookResponse { source: "a.sh".into(), decision: Some(Decision::Allow), ..Default::default() };
/// let deny = HookResponse {
///     source: "b.sh".into(),
///     decision: Some(Decision::Deny),
///     reason: Some("no".into()),
///     ..Default::default()
/// };
/// let combined = combine(HookEvent::PreToolUse, "Write", &[allow, deny]);
/// assert_eq!(combined.decision, Some(Decision::Deny));
/// assert_eq!(combined.reason.as_deref(), Some("PreToolUse:Write hook error: [b.sh]: no"));
/// ```
pub fn combine(event: HookEvent, tool: &str, responses: &[HookResponse]) -> Combined {
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

    Combined { decision, reason, updated_input, additional_context }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::time::Instant;

    const TIMEOUT: Duration = Duration::from_secs(20);

    /// A workspace holding `scripts` (name, body), with hooks for `event`: (matcher, command).
    fn setup(scripts: &[(&str, &str)], event: HookEvent, hooks: &[(&str, &str)]) -> (tempfile::TempDir, CommandHooks) {
        let dir = tempfile::tempdir().unwrap();
        for (name, body) in scripts {
            std::fs::write(dir.path().join(name), format!("#!/bin/sh\n{body}\n")).unwrap();
        }
        let list: Vec<CommandHook> = hooks
            .iter()
            .map(|(matcher, command)| CommandHook {
                matcher: matcher.parse().unwrap(),
                command: command.to_string(),
                timeout: TIMEOUT,
            })
            .collect();
        let mut command_hooks = CommandHooks { workspace: dir.path().to_path_buf(), ..Default::default() };
        match event {
            HookEvent::PreToolUse => command_hooks.pre_tool_use = list,
            HookEvent::PostToolUse => command_hooks.post_tool_use = list,
            HookEvent::PostToolUseFailure => command_hooks.post_tool_use_failure = list,
        }
        (dir, command_hooks)
    }

    fn input(event: HookEvent, tool: &str, tool_input: Value) -> HookInput {
        HookInput {
            session_id: "session-1".into(),
            transcript_path: String::new(),
            cwd: "/workspace".into(),
            permission_mode: "default".into(),
            hook_event_name: event,
            tool_name: tool.into(),
            tool_input,
            tool_use_id: "toolu_1".into(),
            tool_response: (event == HookEvent::PostToolUse).then(|| json!("ok")),
            error: None,
            is_interrupt: None,
        }
    }

    /// Run one hook script (`sh hook.sh`: a script run through `sh` can't hit ETXTBSY the way a
    /// freshly written executable can while other tests fork) for `Write`.
    async fn run_script(event: HookEvent, body: &str) -> Result<HookResponse, HookFailure> {
        let (_dir, hooks) = setup(&[("hook.sh", body)], event, &[("", "sh hook.sh")]);
        let mut results = hooks.run(&input(event, "Write", json!({"file_path": "a.txt"}))).await;
        assert_eq!(results.len(), 1);
        results.remove(0)
    }

    fn said(decision: Option<Decision>, reason: Option<&str>) -> HookResponse {
        HookResponse { source: "sh hook.sh".into(), decision, reason: reason.map(str::to_string), ..Default::default() }
    }

    fn failed(result: Result<HookResponse, HookFailure>) -> String {
        let failure = result.expect_err("the hook should fail");
        assert_eq!(failure.source_name, "sh hook.sh");
        failure.message
    }

    #[tokio::test]
    async fn exit_0_without_output_says_nothing() {
        assert_eq!(run_script(HookEvent::PreToolUse, "exit 0").await, Ok(said(None, None)));
        // Plain text is not an answer.
        assert_eq!(run_script(HookEvent::PreToolUse, "echo checked; echo '{'").await, Ok(said(None, None)));
    }

    #[tokio::test]
    async fn json_allow_with_reason() {
        let body = r#"echo '{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"allow","permissionDecisionReason":"safe path"}}'"#;
        assert_eq!(run_script(HookEvent::PreToolUse, body).await, Ok(said(Some(Decision::Allow), Some("safe path"))));
    }

    #[tokio::test]
    async fn json_deny() {
        let body =
            r#"echo '  {"hookSpecificOutput":{"permissionDecision":"deny","permissionDecisionReason":"no secrets"}}'"#;
        assert_eq!(run_script(HookEvent::PreToolUse, body).await, Ok(said(Some(Decision::Deny), Some("no secrets"))));
    }

    #[tokio::test]
    async fn json_ask() {
        let body = r#"echo '{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"ask"}}'"#;
        assert_eq!(run_script(HookEvent::PreToolUse, body).await, Ok(said(Some(Decision::Ask), None)));
    }

    #[tokio::test]
    async fn json_updated_input() {
        let body =
            r#"echo '{"hookSpecificOutput":{"hookEventName":"PreToolUse","updatedInput":{"file_path":"b.txt"}}}'"#;
        let response = run_script(HookEvent::PreToolUse, body).await.unwrap();
        assert_eq!(response.updated_input, Some(json!({"file_path": "b.txt"})));
        assert_eq!(response.decision, None);

        let body = r#"echo '{"hookSpecificOutput":{"updatedInput":"b.txt"}}'"#;
        let message = failed(run_script(HookEvent::PreToolUse, body).await);
        assert!(message.contains("updatedInput as a string; it must be an object"), "{message}");
    }

    #[tokio::test]
    async fn json_additional_context() {
        let body =
            r#"echo '{"hookSpecificOutput":{"hookEventName":"PostToolUse","additionalContext":"run the tests"}}'"#;
        let response = run_script(HookEvent::PostToolUse, body).await.unwrap();
        assert_eq!(response.additional_context.as_deref(), Some("run the tests"));
        assert_eq!(response.decision, None);
    }

    #[tokio::test]
    async fn exit_2_denies_with_stderr() {
        // Stdout JSON is ignored on exit 2.
        let body =
            r#"echo '{"hookSpecificOutput":{"permissionDecision":"allow"}}'; echo '  not in src/  ' >&2; exit 2"#;
        assert_eq!(run_script(HookEvent::PreToolUse, body).await, Ok(said(Some(Decision::Deny), Some("not in src/"))));
        assert_eq!(
            run_script(HookEvent::PreToolUse, "exit 2").await,
            Ok(said(Some(Decision::Deny), Some("No stderr output")))
        );
    }

    #[tokio::test]
    async fn exit_1_is_a_failure_with_stderr() {
        let body = r#"echo '{"hookSpecificOutput":{"permissionDecision":"deny"}}'; echo 'jq: not found' >&2; exit 1"#;
        assert_eq!(failed(run_script(HookEvent::PreToolUse, body).await), "exited with status 1: jq: not found");
        assert_eq!(failed(run_script(HookEvent::PreToolUse, "exit 3").await), "exited with status 3");

        // A long stderr is cut.
        let body = "head -c 5000 /dev/zero | tr '\\0' x >&2; exit 1";
        let message = failed(run_script(HookEvent::PreToolUse, body).await);
        assert!(message.ends_with('…') && message.chars().count() < 2100, "{message}");
    }

    #[tokio::test]
    async fn killed_by_signal_and_failed_start_are_failures() {
        let (_dir, hooks) = setup(&[], HookEvent::PreToolUse, &[("", "kill -9 $$")]);
        let results = hooks.run(&input(HookEvent::PreToolUse, "Write", json!({}))).await;
        assert_eq!(results[0].as_ref().unwrap_err().message, "was killed by signal 9");

        let (dir, mut hooks) = setup(&[], HookEvent::PreToolUse, &[("", "exit 0")]);
        hooks.workspace = dir.path().join("missing");
        let results = hooks.run(&input(HookEvent::PreToolUse, "Write", json!({}))).await;
        let message = &results[0].as_ref().unwrap_err().message;
        assert!(message.starts_with("failed to start: "), "{message}");
    }

    #[tokio::test]
    async fn invalid_json_is_a_failure() {
        let message = failed(run_script(HookEvent::PreToolUse, r#"echo '{"decision": '"#).await);
        assert!(message.starts_with("printed invalid JSON: "), "{message}");
    }

    #[tokio::test]
    async fn hook_event_name_mismatch_is_a_failure() {
        let body = r#"echo '{"hookSpecificOutput":{"hookEventName":"PostToolUse","permissionDecision":"deny"}}'"#;
        assert_eq!(
            failed(run_script(HookEvent::PreToolUse, body).await),
            "returned hookEventName PostToolUse for a PreToolUse event"
        );
    }

    #[tokio::test]
    async fn legacy_decision_block() {
        let body = r#"echo '{"decision":"block","reason":"tests must pass first"}'"#;
        assert_eq!(
            run_script(HookEvent::PreToolUse, body).await,
            Ok(said(Some(Decision::Deny), Some("tests must pass first")))
        );
        // After a call, a block is feedback for the model.
        assert_eq!(
            run_script(HookEvent::PostToolUse, body).await,
            Ok(said(Some(Decision::Deny), Some("tests must pass first")))
        );
        assert_eq!(
            run_script(HookEvent::PreToolUse, r#"echo '{"decision":"block"}'"#).await,
            Ok(said(Some(Decision::Deny), Some("Blocked by hook")))
        );
        assert_eq!(
            run_script(HookEvent::PreToolUse, r#"echo '{"decision":"approve","reason":"ok"}'"#).await,
            Ok(said(Some(Decision::Allow), Some("ok")))
        );
    }

    #[tokio::test]
    async fn timeout_kills_the_process_group() {
        // `sh` runs the script, which waits for a background `sleep`: the grandchild holds the
        // output pipes open, so only killing the whole group ends the hook.
        let (dir, mut hooks) = setup(
            &[("hook.sh", "sleep 30 &\necho $! > sleep.pid\nwait")],
            HookEvent::PreToolUse,
            &[("", "sh hook.sh")],
        );
        hooks.pre_tool_use[0].timeout = Duration::from_millis(200);
        let started = Instant::now();
        let results = hooks.run(&input(HookEvent::PreToolUse, "Write", json!({}))).await;
        assert!(started.elapsed() < Duration::from_secs(10), "took {:?}", started.elapsed());
        assert_eq!(results[0].as_ref().unwrap_err().message, "timed out after 200 ms");

        let pid = std::fs::read_to_string(dir.path().join("sleep.pid")).unwrap();
        let stat = format!("/proc/{}/stat", pid.trim());
        // Gone, or a zombie waiting for its new parent to reap it.
        let dead = || std::fs::read_to_string(&stat).map_or(true, |s| s.rsplit(") ").next().unwrap().starts_with('Z'));
        let deadline = Instant::now() + Duration::from_secs(5);
        while !dead() && Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        assert!(dead(), "the background sleep (pid {}) is still running", pid.trim());
    }

    #[tokio::test]
    async fn hook_reads_stdin_and_runs_in_the_workspace() {
        let body = r#"
input=$(cat)
if command -v python3 >/dev/null 2>&1; then
    path=$(printf '%s' "$input" | python3 -c 'import json, sys; print(json.load(sys.stdin)["tool_input"]["file_path"])')
elif command -v jq >/dev/null 2>&1; then
    path=$(printf '%s' "$input" | jq -r .tool_input.file_path)
else
    path=$(printf '%s' "$input" | sed -n 's/.*"file_path":"\([^"]*\)".*/\1/p')
fi
printf '{"hookSpecificOutput":{"additionalContext":"%s|%s|%s|%s"}}' "$path" "$(pwd -P)" "$CLAUDE_PROJECT_DIR" "$TOOLHOST_WORKSPACE"
"#;
        let (dir, hooks) = setup(&[("hook.sh", body)], HookEvent::PreToolUse, &[("Write", "sh hook.sh")]);
        let results = hooks.run(&input(HookEvent::PreToolUse, "Write", json!({"file_path": "src/main.rs"}))).await;
        let context = results[0].as_ref().unwrap().additional_context.clone().unwrap();
        let ws = dir.path().display().to_string();
        let real = dir.path().canonicalize().unwrap().display().to_string();
        assert_eq!(context, format!("src/main.rs|{real}|{ws}|{ws}"));
    }

    #[tokio::test]
    async fn stdin_unread_and_output_over_the_cap_do_not_block() {
        // 4 MiB of input the hook never reads, 3 MiB of output: beyond both pipe buffers.
        let big = "x".repeat(4 * 1024 * 1024);
        let (_dir, hooks) = setup(&[], HookEvent::PreToolUse, &[("", "head -c 3000000 /dev/zero; exit 0")]);
        let results = hooks.run(&input(HookEvent::PreToolUse, "Write", json!({"content": big}))).await;
        assert_eq!(
            results,
            vec![Ok(HookResponse { source: "head -c 3000000 /dev/zero; exit 0".into(), ..Default::default() })]
        );
    }

    #[tokio::test]
    async fn matcher_filters_tools() {
        let (dir, hooks) = setup(&[], HookEvent::PreToolUse, &[("Write|Edit", "touch ran")]);
        assert!(!hooks.has(HookEvent::PreToolUse, "Read"));
        assert!(!hooks.has(HookEvent::PostToolUse, "Write"));
        assert!(hooks.has(HookEvent::PreToolUse, "Write"));

        assert!(hooks.run(&input(HookEvent::PreToolUse, "Read", json!({}))).await.is_empty());
        assert!(hooks.run(&input(HookEvent::PostToolUse, "Write", json!({}))).await.is_empty());
        assert!(!dir.path().join("ran").exists());

        assert_eq!(hooks.run(&input(HookEvent::PreToolUse, "Write", json!({}))).await.len(), 1);
        assert!(dir.path().join("ran").exists());
    }

    #[tokio::test]
    async fn disagreeing_hooks_combine() {
        let allow = r#"echo '{"hookSpecificOutput":{"permissionDecision":"allow","permissionDecisionReason":"fine"}}'"#;
        let ask = r#"echo '{"hookSpecificOutput":{"permissionDecision":"ask","permissionDecisionReason":"check"}}'"#;
        let scripts = [("allow.sh", allow), ("ask.sh", ask), ("deny.sh", "echo 'not today' >&2; exit 2")];

        let (_dir, hooks) = setup(&scripts, HookEvent::PreToolUse, &[("", "sh allow.sh"), ("", "sh deny.sh")]);
        let responses: Vec<_> = hooks
            .run(&input(HookEvent::PreToolUse, "Write", json!({})))
            .await
            .into_iter()
            .map(Result::unwrap)
            .collect();
        let combined = combine(HookEvent::PreToolUse, "Write", &responses);
        assert_eq!(combined.decision, Some(Decision::Deny));
        assert_eq!(combined.reason.as_deref(), Some("PreToolUse:Write hook error: [sh deny.sh]: not today"));

        let (_dir, hooks) = setup(&scripts, HookEvent::PreToolUse, &[("", "sh ask.sh"), ("", "sh allow.sh")]);
        let responses: Vec<_> = hooks
            .run(&input(HookEvent::PreToolUse, "Write", json!({})))
            .await
            .into_iter()
            .map(Result::unwrap)
            .collect();
        let combined = combine(HookEvent::PreToolUse, "Write", &responses);
        assert_eq!(combined.decision, Some(Decision::Ask));
        assert_eq!(combined.reason.as_deref(), Some("[sh ask.sh]: check"));
    }

    #[tokio::test]
    async fn hooks_run_concurrently_and_answer_in_config_order() {
        // Each hook marks that it started and waits (bounded) for the other's mark: both
        // succeed only if they run at the same time. The first also finishes last.
        let wait_for = |mine: &str, theirs: &str, extra: &str| {
            format!(
                "touch {mine}\ni=0\nwhile [ ! -e {theirs} ] && [ $i -lt 200 ]; do sleep 0.05; i=$((i+1)); done\n\
                 [ -e {theirs} ] || {{ echo 'ran alone' >&2; exit 1; }}\n{extra}\
                 echo '{{\"hookSpecificOutput\":{{\"additionalContext\":\"{mine}\"}}}}'"
            )
        };
        let a = wait_for("a", "b", "sleep 0.3\n");
        let b = wait_for("b", "a", "");
        let (_dir, hooks) =
            setup(&[("a.sh", &a), ("b.sh", &b)], HookEvent::PreToolUse, &[("", "sh a.sh"), ("", "sh b.sh")]);
        let results = hooks.run(&input(HookEvent::PreToolUse, "Write", json!({}))).await;
        let contexts: Vec<_> = results.into_iter().map(|r| r.unwrap().additional_context.unwrap()).collect();
        assert_eq!(contexts, ["a", "b"]);
    }

    #[test]
    fn parse_json_output_table() {
        use HookEvent::*;
        let ok = |decision: Option<Decision>, reason: Option<&str>| {
            Ok(HookResponse { decision, reason: reason.map(str::to_string), ..Default::default() })
        };
        let err = |message: &str| Err::<HookResponse, String>(message.to_string());
        let cases: &[(HookEvent, &str, Result<HookResponse, String>)] = &[
            (PreToolUse, r#"{}"#, ok(None, None)),
            (PreToolUse, r#"{"continue":true,"systemMessage":"hi"}"#, ok(None, None)),
            (PreToolUse, r#"{"hookSpecificOutput":{"permissionDecision":"defer"}}"#, ok(None, None)),
            (
                PreToolUse,
                r#"{"hookSpecificOutput":{"permissionDecision":"maybe"}}"#,
                err(r#"returned permissionDecision "maybe"; expected "allow", "deny", "ask" or "defer""#),
            ),
            (
                PreToolUse,
                r#"{"hookSpecificOutput":{"permissionDecision":"deny"},"reason":"top"}"#,
                ok(Some(Decision::Deny), Some("top")),
            ),
            (
                PreToolUse,
                r#"{"hookSpecificOutput":{"permissionDecision":"allow","permissionDecisionReason":"mine"},"decision":"block","reason":"top"}"#,
                ok(Some(Decision::Allow), Some("mine")),
            ),
            // After a call, a permission decision means nothing.
            (PostToolUse, r#"{"hookSpecificOutput":{"permissionDecision":"deny"}}"#, ok(None, None)),
            (PostToolUse, r#"{"decision":"approve"}"#, ok(None, None)),
            (PostToolUseFailure, r#"{"decision":"block","reason":"why"}"#, ok(Some(Decision::Deny), Some("why"))),
            (PreToolUse, r#"{"decision":"yes"}"#, err(r#"returned decision "yes"; expected "approve" or "block""#)),
            (
                PreToolUse,
                r#"{"hookSpecificOutput":[]}"#,
                err("returned hookSpecificOutput as an array; it must be an object"),
            ),
            (
                PostToolUse,
                r#"{"hookSpecificOutput":{"additionalContext":3}}"#,
                err("returned hookSpecificOutput.additionalContext as a number; it must be a string"),
            ),
            (PreToolUse, r#"{"reason":false}"#, err("returned reason as a boolean; it must be a string")),
            (
                PostToolUseFailure,
                r#"{"hookSpecificOutput":{"hookEventName":"PostToolUse"}}"#,
                err("returned hookEventName PostToolUse for a PostToolUseFailure event"),
            ),
        ];
        for (event, stdout, expected) in cases {
            assert_eq!(&parse_json_output(*event, stdout), expected, "{event} {stdout}");
        }
    }

    #[test]
    fn combine_table() {
        use Decision::*;
        let r = |source: &str, decision: Option<Decision>, reason: Option<&str>| HookResponse {
            source: source.into(),
            decision,
            reason: reason.map(str::to_string),
            ..Default::default()
        };
        let cases: Vec<(Vec<HookResponse>, Option<Decision>, Option<&str>)> = vec![
            (vec![], None, None),
            (vec![r("a", None, Some("ignored"))], None, None),
            (vec![r("a", Some(Allow), Some("ok"))], Some(Allow), Some("[a]: ok")),
            (vec![r("a", Some(Allow), None)], Some(Allow), None),
            (vec![r("a", Some(Allow), Some("ok")), r("b", Some(Ask), Some("hm"))], Some(Ask), Some("[b]: hm")),
            (vec![r("a", Some(Ask), None), r("b", Some(Allow), Some("ok"))], Some(Ask), None),
            (
                vec![r("a", Some(Allow), Some("ok")), r("b", Some(Deny), Some("no"))],
                Some(Deny),
                Some("PreToolUse:Edit hook error: [b]: no"),
            ),
            // Deny is sticky, and the first deny gives the reason.
            (
                vec![r("a", Some(Deny), None), r("b", Some(Deny), Some("no")), r("c", Some(Allow), None)],
                Some(Deny),
                Some("PreToolUse:Edit hook error: [a]: Blocked by hook"),
            ),
            (vec![r("a", Some(Ask), Some("first")), r("b", Some(Ask), Some("second"))], Some(Ask), Some("[a]: first")),
        ];
        for (responses, decision, reason) in cases {
            let combined = combine(HookEvent::PreToolUse, "Edit", &responses);
            assert_eq!(combined.decision, decision, "{responses:?}");
            assert_eq!(combined.reason.as_deref(), reason, "{responses:?}");
        }
    }

    #[test]
    fn combine_inputs_and_context() {
        let r = |decision: Option<Decision>, input: Option<Value>, context: Option<&str>| HookResponse {
            source: "s".into(),
            decision,
            updated_input: input,
            additional_context: context.map(str::to_string),
            ..Default::default()
        };
        let combined = combine(
            HookEvent::PreToolUse,
            "Write",
            &[
                r(None, Some(json!({"n": 1})), Some("one")),
                r(Some(Decision::Allow), Some(json!({"n": 2})), Some("  ")),
                r(Some(Decision::Deny), Some(json!({"n": 3})), Some("three")),
                r(None, None, None),
            ],
        );
        assert_eq!(combined.updated_input, Some(json!({"n": 2})), "a denying answer's input is not used");
        assert_eq!(combined.additional_context, ["one", "three"]);
        assert_eq!(combine(HookEvent::PostToolUse, "Write", &[]), Combined::default());
    }
}
