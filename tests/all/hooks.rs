//! Hooks through the whole pipeline: real shell scripts as Claude Code runs them (JSON on
//! stdin, exit 2 blocks, JSON decisions on stdout), combined with permission rules, and a
//! Rust `Hooks` implementation.

use async_trait::async_trait;
use serde_json::{Value, json};
use std::path::Path;
use std::sync::{Arc, Mutex};
use toolhost::{Event, HookInput, HookResponse, Hooks, OutcomeKind, Runtime, RuntimeBuilder, Session, ToolResult};
use toolhost_tests::{call, config, default_tools, engine, workspace};

/// Write `script` as `hooks/name` in the workspace (run with `sh`, so no exec bit is needed).
/// Hook scripts live in a directory of their own: toolhost protects the whole directory of what
/// a hook runs, which at the workspace root would be the whole workspace.
fn script(ws: &Path, name: &str, body: &str) -> String {
    std::fs::create_dir_all(ws.join("hooks")).unwrap();
    std::fs::write(ws.join("hooks").join(name), body).unwrap();
    format!("sh hooks/{name}")
}

/// The default tools under `toml`, events recorded.
async fn runtime(ws: &Path, toml: &str, with: impl FnOnce(RuntimeBuilder) -> RuntimeBuilder) -> (Runtime, Events) {
    let events: Events = Arc::default();
    let e = events.clone();
    let b = Runtime::builder()
        .engine(engine())
        .workspace(ws)
        .config(config(toml))
        .events(Arc::new(move |ev| e.lock().unwrap().push(ev)));
    let mut rt = with(b).build().expect("runtime");
    for s in default_tools() {
        rt.load(s).await.expect("load");
    }
    (rt, events)
}

type Events = Arc<Mutex<Vec<Event>>>;

fn hook_failures(events: &Events) -> Vec<String> {
    events
        .lock()
        .unwrap()
        .iter()
        .filter_map(|e| match e {
            Event::HookFailed { hook, message, .. } => Some(format!("{hook}: {message}")),
            _ => None,
        })
        .collect()
}

fn pre(command: &str, extra: &str) -> String {
    format!(
        "[permissions]\nallow = [\"Write\", \"Edit\"]\n{extra}\n[[hooks.pre_tool_use]]\nmatcher = \"Write|Edit\"\ncommand = {command:?}\n"
    )
}

async fn write(rt: &Runtime, path: &str, content: &str) -> ToolResult {
    call(rt, &Session::new(), "Write", json!({"file_path": path, "content": content})).await
}

#[tokio::test]
async fn exit_2_blocks_with_stderr_as_the_reason() {
    let ws = workspace();
    let cmd = script(ws.path(), "guard.sh", "cat > /dev/null\necho 'writes are frozen today' >&2\nexit 2\n");
    let (rt, _) = runtime(ws.path(), &pre(&cmd, ""), |b| b).await;
    let r = write(&rt, "a.txt", "x").await;
    assert_eq!(r.outcome, OutcomeKind::HookBlocked, "{}", r.text());
    assert!(r.text().contains("writes are frozen today") && r.text().contains("PreToolUse:Write"), "{}", r.text());
    assert!(!ws.path().join("a.txt").exists());
    // The matcher keeps it off other tools.
    std::fs::write(ws.path().join("b.txt"), "b").unwrap();
    assert!(!call(&rt, &Session::new(), "Read", json!({"file_path": "b.txt"})).await.is_error);
}

#[tokio::test]
async fn a_claude_code_edit_hook_script_works_unchanged() {
    // As written for Claude Code: read the event with jq, refuse edits to lock files.
    let ws = workspace();
    std::fs::write(ws.path().join("Cargo.lock"), "lock").unwrap();
    std::fs::write(ws.path().join("main.rs"), "fn main() {}\n").unwrap();
    let body = r#"#!/bin/bash
file_path=$(jq -r '.tool_input.file_path // empty')
if [[ "$file_path" == *.lock ]]; then
  echo "Refusing to edit lock file $file_path" >&2
  exit 2
fi
exit 0
"#;
    std::fs::create_dir(ws.path().join(".claude")).unwrap();
    std::fs::write(ws.path().join(".claude/protect.sh"), body).unwrap();
    let (rt, events) = runtime(ws.path(), &pre("bash \"$CLAUDE_PROJECT_DIR\"/.claude/protect.sh", ""), |b| b).await;
    let s = Session::new();
    for f in ["Cargo.lock", "main.rs"] {
        assert!(!call(&rt, &s, "Read", json!({"file_path": f})).await.is_error);
    }
    let lock = call(&rt, &s, "Edit", json!({"file_path": "Cargo.lock", "old_string": "lock", "new_string": "x"})).await;
    assert_eq!(lock.outcome, OutcomeKind::HookBlocked, "{}", lock.text());
    assert!(lock.text().contains("Refusing to edit lock file Cargo.lock"), "{}", lock.text());
    let ok = call(&rt, &s, "Edit", json!({"file_path": "main.rs", "old_string": "{}", "new_string": "{ }"})).await;
    assert!(!ok.is_error, "{}", ok.text());
    assert_eq!(std::fs::read_to_string(ws.path().join("main.rs")).unwrap(), "fn main() { }\n");
    assert!(hook_failures(&events).is_empty(), "{:?}", hook_failures(&events));
}

#[tokio::test]
async fn a_hook_sees_the_event_and_runs_in_the_workspace() {
    let ws = workspace();
    let cmd = script(ws.path(), "log.sh", "cat > event.json\npwd > cwd.txt\n");
    let (rt, _) = runtime(ws.path(), &pre(&cmd, ""), |b| b).await;
    let r = call(&rt, &Session::new(), "Write", json!({"file_path": "a.txt", "content": "x"})).await;
    assert!(!r.is_error, "{}", r.text());
    let event: Value = serde_json::from_str(&std::fs::read_to_string(ws.path().join("event.json")).unwrap()).unwrap();
    assert_eq!(event["hook_event_name"], "PreToolUse");
    assert_eq!(event["tool_name"], "Write");
    assert_eq!(event["tool_input"]["file_path"], "a.txt");
    assert_eq!(event["tool_use_id"], r.tool_use_id);
    assert_eq!(event["permission_mode"], "default");
    let canonical = ws.path().canonicalize().unwrap();
    assert_eq!(event["cwd"], canonical.to_str().unwrap());
    assert_eq!(std::fs::read_to_string(ws.path().join("cwd.txt")).unwrap().trim(), canonical.to_str().unwrap());
}

#[tokio::test]
async fn rewritten_input_is_checked_again() {
    let ws = workspace();
    let good = script(
        ws.path(),
        "rewrite.sh",
        r#"cat > /dev/null
printf '%s\n' '{"hookSpecificOutput":{"hookEventName":"PreToolUse","updatedInput":{"file_path":"redirected.txt","content":"rewritten\n"}}}'
"#,
    );
    let (rt, events) = runtime(ws.path(), &pre(&good, ""), |b| b).await;
    let r = write(&rt, "a.txt", "original").await;
    assert!(!r.is_error, "{}", r.text());
    assert!(hook_failures(&events).is_empty(), "{:?}", hook_failures(&events));
    assert!(!ws.path().join("a.txt").exists());
    assert_eq!(std::fs::read_to_string(ws.path().join("redirected.txt")).unwrap(), "rewritten\n");

    let bad = script(
        ws.path(),
        "break.sh",
        r#"cat > /dev/null
echo '{"hookSpecificOutput":{"hookEventName":"PreToolUse","updatedInput":{"file_path":5}}}'
"#,
    );
    let (rt, _) = runtime(ws.path(), &pre(&bad, ""), |b| b).await;
    let r = write(&rt, "b.txt", "x").await;
    assert_eq!(r.outcome, OutcomeKind::SchemaError, "{}", r.text());
    assert!(r.text().contains("after a PreToolUse hook rewrote the input"), "{}", r.text());
    assert!(!ws.path().join("b.txt").exists());
}

fn decide(decision: &str, reason: &str) -> String {
    format!(
        "cat > /dev/null\necho '{{\"hookSpecificOutput\":{{\"hookEventName\":\"PreToolUse\",\"permissionDecision\":\"{decision}\",\"permissionDecisionReason\":\"{reason}\"}}}}'\n"
    )
}

#[tokio::test]
async fn a_hook_allow_runs_without_a_rule_but_never_beats_a_deny_rule() {
    let ws = workspace();
    let cmd = script(ws.path(), "allow.sh", &decide("allow", "looks fine"));
    let toml = format!("[permissions]\ndeny = [\"Write(locked/**)\"]\n[[hooks.pre_tool_use]]\ncommand = {cmd:?}\n");
    let (rt, _) = runtime(ws.path(), &toml, |b| b).await;
    // No allow rule and no one to ask: only the hook's allow lets this write run.
    let r = write(&rt, "free.txt", "x").await;
    assert!(!r.is_error, "{}", r.text());
    assert_eq!(std::fs::read_to_string(ws.path().join("free.txt")).unwrap(), "x", "the allowed write did not happen");
    let r = write(&rt, "locked/x.txt", "x").await;
    assert_eq!(r.outcome, OutcomeKind::PermissionDenied, "{}", r.text());
    assert!(r.text().contains("Write(locked/**)"), "{}", r.text());
    assert!(!ws.path().join("locked/x.txt").exists(), "the denied write happened");
}

#[tokio::test]
async fn a_hook_ask_with_no_one_to_ask_is_a_denial() {
    let ws = workspace();
    let cmd = script(ws.path(), "ask.sh", &decide("ask", "a person should look"));
    let (rt, _) = runtime(ws.path(), &pre(&cmd, ""), |b| b).await;
    let r = write(&rt, "a.txt", "x").await;
    assert_eq!(r.outcome, OutcomeKind::PermissionDenied, "an allow rule does not beat a hook's ask: {}", r.text());
    assert!(r.text().contains("hook asks"), "{}", r.text());
}

#[tokio::test]
async fn two_hooks_disagreeing_deny_wins() {
    let ws = workspace();
    let allow = script(ws.path(), "allow.sh", &decide("allow", "fine by me"));
    let deny = script(ws.path(), "deny.sh", &decide("deny", "not by me"));
    let toml = format!(
        "[[hooks.pre_tool_use]]\ncommand = {allow:?}\n[[hooks.pre_tool_use]]\ncommand = {deny:?}\n[[hooks.pre_tool_use]]\nmatcher = \"Write\"\ncommand = {allow:?}\n"
    );
    let (rt, _) = runtime(ws.path(), &toml, |b| b).await;
    let r = write(&rt, "a.txt", "x").await;
    assert_eq!(r.outcome, OutcomeKind::HookBlocked, "{}", r.text());
    assert!(r.text().contains("not by me"), "{}", r.text());
    assert!(!ws.path().join("a.txt").exists(), "the blocked write happened");
}

#[tokio::test]
async fn additional_context_from_pre_and_post_hooks_is_appended() {
    let ws = workspace();
    let pre_cmd = script(
        ws.path(),
        "pre.sh",
        "cat > /dev/null\necho '{\"hookSpecificOutput\":{\"hookEventName\":\"PreToolUse\",\"additionalContext\":\"remember the style guide\"}}'\n",
    );
    let post_cmd = script(
        ws.path(),
        "post.sh",
        r#"resp=$(python3 -c 'import json,sys; print(json.load(sys.stdin)["tool_response"][:4])')
printf '{"hookSpecificOutput":{"hookEventName":"PostToolUse","additionalContext":"saw %s"}}\n' "$resp"
"#,
    );
    let fail_cmd = script(
        ws.path(),
        "fail.sh",
        r#"err=$(python3 -c 'import json,sys; print(json.load(sys.stdin)["error"][:20])')
printf '{"hookSpecificOutput":{"hookEventName":"PostToolUseFailure","additionalContext":"failure seen: %s"}}\n' "$err"
"#,
    );
    let toml = format!(
        "[permissions]\nallow = [\"Write\"]\n[[hooks.pre_tool_use]]\ncommand = {pre_cmd:?}\n[[hooks.post_tool_use]]\ncommand = {post_cmd:?}\n[[hooks.post_tool_use_failure]]\ncommand = {fail_cmd:?}\n"
    );
    let (rt, events) = runtime(ws.path(), &toml, |b| b).await;
    let r = write(&rt, "a.txt", "x").await;
    assert!(!r.is_error, "{}", r.text());
    let text = r.text();
    assert!(text.contains("File created successfully"), "{text}");
    assert!(text.contains("PreToolUse:Write hook additional context: remember the style guide"), "{text}");
    assert!(text.contains("PostToolUse:Write hook additional context: saw File"), "{text}");

    let r = call(&rt, &Session::new(), "Read", json!({"file_path": "missing.txt"})).await;
    assert!(r.is_error);
    assert!(r.text().contains("PostToolUseFailure:Read hook additional context: failure seen:"), "{}", r.text());
    assert!(hook_failures(&events).is_empty(), "{:?}", hook_failures(&events));
}

#[tokio::test]
async fn hooks_that_time_out_crash_or_print_garbage_are_reported_and_do_not_block() {
    let ws = workspace();
    let slow = script(ws.path(), "slow.sh", "sleep 30\n");
    let crash = script(ws.path(), "crash.sh", "echo 'boom' >&2\nexit 1\n");
    let garbage = script(ws.path(), "garbage.sh", "cat > /dev/null\necho '{not json'\n");
    let toml = format!(
        "[permissions]\nallow = [\"Write\"]\n[[hooks.pre_tool_use]]\ncommand = {slow:?}\ntimeout_ms = 300\n\
         [[hooks.pre_tool_use]]\ncommand = {crash:?}\n[[hooks.pre_tool_use]]\ncommand = {garbage:?}\n"
    );
    let (rt, events) = runtime(ws.path(), &toml, |b| b).await;
    let started = std::time::Instant::now();
    let r = write(&rt, "a.txt", "x").await;
    assert!(!r.is_error, "{}", r.text());
    assert!(started.elapsed() < std::time::Duration::from_secs(20), "the slow hook was cut at its timeout");
    let failures = hook_failures(&events);
    assert_eq!(failures.len(), 3, "{failures:?}");
    assert!(failures.iter().any(|f| f.contains("slow.sh") && f.contains("timed out")), "{failures:?}");
    assert!(failures.iter().any(|f| f.contains("crash.sh") && f.contains("boom")), "{failures:?}");
    assert!(failures.iter().any(|f| f.contains("garbage.sh") && f.contains("invalid JSON")), "{failures:?}");
}

/// A Rust hook: blocks writes to `*.env`, adds context to every successful call.
struct Guard;

#[async_trait]
impl Hooks for Guard {
    async fn pre_tool_use(&self, input: &HookInput) -> HookResponse {
        let path = input.tool_input["file_path"].as_str().unwrap_or("");
        if input.tool_name == "Write" && path.ends_with(".env") {
            return HookResponse {
                source: "guard".into(),
                decision: Some(toolhost::policy::Decision::Deny),
                reason: Some("secrets stay put".into()),
                ..HookResponse::default()
            };
        }
        HookResponse::default()
    }

    async fn post_tool_use(&self, input: &HookInput) -> HookResponse {
        HookResponse { additional_context: Some(format!("checked {}", input.tool_name)), ..HookResponse::default() }
    }
}

#[tokio::test]
async fn rust_hooks() {
    let ws = workspace();
    let (rt, _) = runtime(ws.path(), "[permissions]\nallow = [\"Write\"]\n", |b| b.hooks(Arc::new(Guard))).await;
    let r = write(&rt, ".env", "KEY=1").await;
    assert_eq!(r.outcome, OutcomeKind::HookBlocked);
    assert!(r.text().contains("secrets stay put"), "{}", r.text());
    let r = write(&rt, "a.txt", "x").await;
    assert!(r.text().contains("checked Write"), "{}", r.text());
}
