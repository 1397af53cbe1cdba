//! Command hooks run for real (`sh`), the JSON protocol and combining answers.

use super::protocol::parse_json_output;
use super::*;
use serde_json::json;
use std::sync::Arc;
use std::time::Duration;
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
            env: Arc::from(Vec::new()),
            condition: None,
            refuses: None,
        })
        .collect();
    let mut command_hooks = CommandHooks { workspace: dir.path().to_path_buf(), ..Default::default() };
    match event {
        HookEvent::PreToolUse => command_hooks.pre_tool_use = list,
        HookEvent::PostToolUse => command_hooks.post_tool_use = list,
        HookEvent::PostToolUseFailure => command_hooks.post_tool_use_failure = list,
        HookEvent::SessionStart => command_hooks.session_start = list,
        HookEvent::UserPromptSubmit => command_hooks.user_prompt_submit = list,
        HookEvent::Stop => command_hooks.stop = list,
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
    let body = r#"echo '{"hookSpecificOutput":{"hookEventName":"PreToolUse","updatedInput":{"file_path":"b.txt"}}}'"#;
    let response = run_script(HookEvent::PreToolUse, body).await.unwrap();
    assert_eq!(response.updated_input, Some(json!({"file_path": "b.txt"})));
    assert_eq!(response.decision, None);

    let body = r#"echo '{"hookSpecificOutput":{"updatedInput":"b.txt"}}'"#;
    let message = failed(run_script(HookEvent::PreToolUse, body).await);
    assert!(message.contains("updatedInput as a string; it must be an object"), "{message}");
}

#[tokio::test]
async fn json_additional_context() {
    let body = r#"echo '{"hookSpecificOutput":{"hookEventName":"PostToolUse","additionalContext":"run the tests"}}'"#;
    let response = run_script(HookEvent::PostToolUse, body).await.unwrap();
    assert_eq!(response.additional_context.as_deref(), Some("run the tests"));
    assert_eq!(response.decision, None);
}

#[tokio::test]
async fn exit_2_denies_with_stderr() {
    // Stdout JSON is ignored on exit 2.
    let body = r#"echo '{"hookSpecificOutput":{"permissionDecision":"allow"}}'; echo '  not in src/  ' >&2; exit 2"#;
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
    let (dir, mut hooks) =
        setup(&[("hook.sh", "sleep 30 &\necho $! > sleep.pid\nwait")], HookEvent::PreToolUse, &[("", "sh hook.sh")]);
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
    let responses: Vec<_> =
        hooks.run(&input(HookEvent::PreToolUse, "Write", json!({}))).await.into_iter().map(Result::unwrap).collect();
    let combined = combine(HookEvent::PreToolUse, "Write", &responses);
    assert_eq!(combined.decision, Some(Decision::Deny));
    assert_eq!(combined.reason.as_deref(), Some("PreToolUse:Write hook error: [sh deny.sh]: not today"));

    let (_dir, hooks) = setup(&scripts, HookEvent::PreToolUse, &[("", "sh ask.sh"), ("", "sh allow.sh")]);
    let responses: Vec<_> =
        hooks.run(&input(HookEvent::PreToolUse, "Write", json!({}))).await.into_iter().map(Result::unwrap).collect();
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
        (
            PreToolUse,
            r#"{"continue":true,"systemMessage":"hi","suppressOutput":true}"#,
            Ok(HookResponse { system_message: Some("hi".into()), ..Default::default() }),
        ),
        (
            PreToolUse,
            r#"{"continue":false,"stopReason":"enough"}"#,
            Ok(HookResponse { stop: Some("enough".into()), ..Default::default() }),
        ),
        (
            PostToolUse,
            r#"{"continue":false}"#,
            Ok(HookResponse { stop: Some("Execution stopped by PostToolUse hook".into()), ..Default::default() }),
        ),
        (PreToolUse, r#"{"continue":"no"}"#, err("returned continue as a string; it must be a boolean")),
        (Stop, r#"{"decision":"block","reason":"tests fail"}"#, ok(Some(Decision::Deny), Some("tests fail"))),
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
