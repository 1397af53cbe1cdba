//! Command hooks as processes: `sh -c COMMAND` in the workspace, in a process group of its
//! own, the event on stdin, output capped, killed with its group at its timeout or when the
//! call is dropped.

use super::protocol::{Output, interpret};
use super::{HookEvent, HookFailure, HookInput, HookResponse};
use crate::abort::AbortOnDrop;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use tokio::task::JoinHandle;
use toolhost_policy::{Decision, HookMatcher, HooksConfig};

/// One configured command hook.
#[derive(Debug, Clone)]
pub(crate) struct CommandHook {
    /// Which tools it runs for.
    pub matcher: HookMatcher,
    /// The shell command.
    pub command: String,
    /// How long it may run before it is killed (and reported).
    pub timeout: Duration,
    /// Variables set for it on top of this process's environment (Claude Code's `env`).
    pub env: Arc<[(String, String)]>,
    /// Claude Code's `if`: it runs only for calls this rule covers.
    pub condition: Option<toolhost_policy::Rule>,
    /// A hook toolhost cannot run: it denies, with this reason, every call it matches.
    pub refuses: Option<String>,
}

/// The command hooks of a config, by event.
#[derive(Debug, Clone, Default)]
pub(crate) struct CommandHooks {
    pub(super) pre_tool_use: Vec<CommandHook>,
    pub(super) post_tool_use: Vec<CommandHook>,
    pub(super) post_tool_use_failure: Vec<CommandHook>,
    pub(super) session_start: Vec<CommandHook>,
    pub(super) user_prompt_submit: Vec<CommandHook>,
    pub(super) stop: Vec<CommandHook>,
    /// Working directory of every hook.
    pub(super) workspace: PathBuf,
}

impl CommandHooks {
    /// The hooks of `config`, run in `workspace`.
    pub fn from_config(config: &HooksConfig, workspace: PathBuf) -> Self {
        let env: Arc<[(String, String)]> = config.env.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
        let convert = |hooks: &[toolhost_policy::HookConfig]| {
            hooks
                .iter()
                .map(|h| CommandHook {
                    matcher: h.matcher(),
                    command: h.command.get_ref().clone(),
                    timeout: Duration::from_millis(h.timeout_ms()),
                    env: env.clone(),
                    condition: h.condition.clone(),
                    refuses: h.refuses.clone(),
                })
                .collect()
        };
        CommandHooks {
            pre_tool_use: convert(&config.pre_tool_use),
            post_tool_use: convert(&config.post_tool_use),
            post_tool_use_failure: convert(&config.post_tool_use_failure),
            session_start: convert(&config.session_start),
            user_prompt_submit: convert(&config.user_prompt_submit),
            stop: convert(&config.stop),
            workspace,
        }
    }

    /// Whether any hook of `event` would run for `tool` (so a caller can skip building the
    /// [`HookInput`]).
    pub fn has(&self, event: HookEvent, tool: &str) -> bool {
        self.hooks_for(event).iter().any(|h| h.matcher.matches(tool))
    }

    /// Run every hook of `input.hook_event_name` whose matcher matches `input.tool_name`, all
    /// at once; answers come back in config order.
    ///
    /// Each hook is `sh -c COMMAND` in the workspace, in a process group of its own, with the
    /// environment of this process plus the config's `env` (from Claude Code's settings), then
    /// `CLAUDE_PROJECT_DIR` and `TOOLHOST_WORKSPACE` (both the
    /// workspace) and `PYTHONDONTWRITEBYTECODE=1` (the hook's directory is pinned whole). Its stdin is `input` as one JSON line; its stdout and stderr are kept up to
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
    #[cfg(test)]
    pub async fn run(&self, input: &HookInput) -> Vec<Result<HookResponse, HookFailure>> {
        self.run_event(input.hook_event_name, Some(&input.tool_name), input, &|_| true).await
    }

    /// [`CommandHooks::run`] for a call whose permission subject is `subject`: a hook with an
    /// `if` runs only when its rule covers the call (`workspace` resolves relative paths).
    pub async fn run_for_call(
        &self,
        input: &HookInput,
        subject: Option<(&str, toolhost_policy::SubjectKind)>,
    ) -> Vec<Result<HookResponse, HookFailure>> {
        let covered = |hook: &CommandHook| {
            hook.condition.as_ref().is_none_or(|rule| rule.matches(&input.tool_name, subject, &self.workspace))
        };
        self.run_event(input.hook_event_name, Some(&input.tool_name), input, &covered).await
    }

    /// Run every hook of `event` whose matcher matches `query` (every hook of the event when
    /// there is no query, as Claude Code runs `UserPromptSubmit` and `Stop` hooks), with
    /// `input` as their stdin; answers in config order. See [`CommandHooks::run`].
    pub async fn run_event(
        &self,
        event: HookEvent,
        query: Option<&str>,
        input: &impl serde::Serialize,
        covered: &(dyn Fn(&CommandHook) -> bool + Sync),
    ) -> Vec<Result<HookResponse, HookFailure>> {
        let hooks: Vec<CommandHook> = self
            .hooks_for(event)
            .iter()
            .filter(|h| query.is_none_or(|q| h.matcher.matches(q)) && covered(h))
            .cloned()
            .collect();
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
            HookEvent::SessionStart => &self.session_start,
            HookEvent::UserPromptSubmit => &self.user_prompt_submit,
            HookEvent::Stop => &self.stop,
        }
    }
}

/// How much of a hook's stdout, and of its stderr, is kept. A hook answers with a small JSON
/// object or a one-line reason; the cap only stops a runaway hook from filling memory. What
/// comes after it is read and thrown away, so the hook never blocks on a full pipe.
const MAX_HOOK_OUTPUT: usize = 1024 * 1024;

/// How much of stderr a failure message quotes: enough for a traceback's last lines.
pub(super) const MAX_FAILURE_STDERR_CHARS: usize = 2000;

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
    if let Some(why) = hook.refuses {
        let reason = format!("Refused: {why}");
        return Ok(HookResponse {
            source: hook.command,
            decision: Some(Decision::Deny),
            reason: Some(reason),
            ..Default::default()
        });
    }
    let result = match execute(&hook, &workspace, &payload).await {
        Ok(output) => interpret(event, &output),
        Err(message) => Err(message),
    };
    match result {
        Ok(response) => Ok(HookResponse { source: hook.command, ..response }),
        Err(message) => Err(failure(event, &hook.command, message)),
    }
}

/// Run one hook to completion or its timeout.
async fn execute(hook: &CommandHook, workspace: &Path, payload: &[u8]) -> Result<Output, String> {
    let mut command = tokio::process::Command::new("sh");
    command
        .arg("-c")
        .arg(&hook.command)
        .current_dir(workspace)
        .envs(hook.env.iter().map(|(k, v)| (k, v)))
        .env("CLAUDE_PROJECT_DIR", workspace)
        .env("TOOLHOST_WORKSPACE", workspace)
        // A hook's directory is pinned whole: Python must not add `__pycache__` files to it
        // (each would read as a new file to confirm at the next start).
        .env("PYTHONDONTWRITEBYTECODE", "1")
        // The MCP server's bearer token is the server's secret, not a hook's.
        .env_remove("TOOLHOST_MCP_TOKEN")
        // A toolhost the hook runs knows it runs under one (a chain of them is cut).
        .env(toolhost_policy::launch::DEPTH_ENV, toolhost_policy::launch::depth().saturating_add(1).to_string())
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

#[cfg(unix)]
pub(super) fn killed_message(status: &std::process::ExitStatus) -> String {
    use std::os::unix::process::ExitStatusExt;
    match status.signal() {
        Some(signal) => format!("was killed by signal {signal}"),
        None => format!("ended with {status}"),
    }
}

#[cfg(not(unix))]
pub(super) fn killed_message(status: &std::process::ExitStatus) -> String {
    format!("ended with {status}")
}

/// At most `max` characters of `s`, with `…` when cut.
pub(super) fn truncate_chars(s: &str, max: usize) -> String {
    match s.char_indices().nth(max) {
        Some((end, _)) => format!("{}…", &s[..end]),
        None => s.to_string(),
    }
}

impl CommandHooks {
    /// Whether `event` has any hook at all.
    pub fn any(&self, event: HookEvent) -> bool {
        !self.hooks_for(event).is_empty()
    }
}
