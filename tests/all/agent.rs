//! `toolhost agent` and its loop (toolhost-agent) against a model API on loopback
//! (`toolhost_tests::model_server`): scripted conversations in both APIs' documented SSE
//! formats, with the real default tools on a temporary workspace. The requests the agent sent
//! are asserted exactly where the format matters: tool_result pairing and order, `is_error`,
//! cache breakpoints, the Chat Completions mapping.

use serde_json::{Value, json};
use std::fs;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use toolhost::policy::Mode;
use toolhost::{Runtime, Session, ToolResult, ToolUse};
use toolhost_agent::{
    Agent, AgentOptions, Anthropic, Error, Observer, OpenAi, Outcome, Provider, RetryNotice, RetryPolicy, Stop,
};
use toolhost_tests::cli::{assert_exit, command, stderr, stdout};
use toolhost_tests::model_server::{Answer, ModelServer, Piece, Reply};
use toolhost_tests::{default_tools, engine, workspace};

/// Retries without real waiting: tests never depend on timing.
fn fast_retry() -> RetryPolicy {
    RetryPolicy { base: Duration::from_millis(1), max_backoff: Duration::from_millis(5), ..RetryPolicy::default() }
}

/// A workspace with `a.txt` and `b.txt`.
fn files() -> tempfile::TempDir {
    let ws = workspace();
    fs::write(ws.path().join("a.txt"), "alpha\n").unwrap();
    fs::write(ws.path().join("b.txt"), "beta\n").unwrap();
    ws
}

async fn runtime_with(ws: &Path, mode: Mode) -> Arc<Runtime> {
    let mut rt = Runtime::builder().permission_mode(mode).engine(engine()).workspace(ws).build().expect("runtime");
    for s in default_tools() {
        rt.load(s).await.expect("load");
    }
    Arc::new(rt)
}

fn anthropic(server: &ModelServer) -> Arc<dyn Provider> {
    Arc::new(Anthropic::new(&server.url, "test-key").unwrap().with_retry(fast_retry()))
}

/// Records what the loop reports.
#[derive(Default)]
struct Seen {
    tools: Mutex<Vec<(String, bool)>>,
    retries: Mutex<Vec<RetryNotice>>,
}

impl Observer for Seen {
    fn tool_finished(&self, call: &ToolUse, result: &ToolResult, _: Duration) {
        self.tools.lock().unwrap().push((call.id.clone(), result.is_error));
    }
    fn retrying(&self, notice: &RetryNotice) {
        self.retries.lock().unwrap().push(notice.clone());
    }
}

async fn run_agent(
    rt: Arc<Runtime>,
    provider: Arc<dyn Provider>,
    options: AgentOptions,
) -> (Result<Outcome, Error>, Arc<Seen>) {
    let seen = Arc::new(Seen::default());
    let agent = Agent::new(rt, provider, options).observer(seen.clone());
    let outcome = agent.run(&Session::new(), "Do the task.", &Default::default()).await;
    (outcome, seen)
}

fn options() -> AgentOptions {
    AgentOptions { system: Some("You are a test.".into()), ..AgentOptions::new("test-model") }
}

/// The last message of a request body.
fn last_message(body: &Value) -> &Value {
    body["messages"].as_array().and_then(|m| m.last()).expect("a message")
}

fn ephemeral() -> Value {
    json!({"type": "ephemeral"})
}

#[tokio::test(flavor = "multi_thread")]
async fn parallel_calls_are_answered_paired_by_id_in_model_order() {
    let ws = files();
    let server = ModelServer::start(vec![
        Answer::new("tool_use")
            .text("Reading both.")
            .tool("toolu_b", "Read", json!({"file_path": "b.txt"}))
            .tool("toolu_a", "Read", json!({"file_path": "a.txt"}))
            .tool("toolu_g", "Glob", json!({"pattern": "*.txt"}))
            .anthropic(),
        Answer::text_only("Both files read.").anthropic(),
    ]);
    let rt = runtime_with(ws.path(), Mode::Default).await;
    let (outcome, seen) = run_agent(rt, anthropic(&server), options()).await;
    let outcome = outcome.expect("run");
    assert_eq!(outcome.stop, Stop::EndTurn);
    assert_eq!(outcome.text, "Both files read.");
    assert_eq!((outcome.turns, outcome.tool_calls, outcome.tool_errors), (2, 3, 0));
    assert_eq!(outcome.usage.total(), 30);
    assert_eq!(seen.tools.lock().unwrap().len(), 3, "one progress report per call");

    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    let first = &requests[0];
    assert_eq!((first.method.as_str(), first.path.as_str()), ("POST", "/v1/messages"));
    assert_eq!(first.header("x-api-key"), Some("test-key"));
    assert_eq!(first.header("anthropic-version"), Some("2023-06-01"));
    assert_eq!(first.body["stream"], json!(true));
    assert_eq!(first.body["model"], json!("test-model"));
    assert_eq!(first.body["max_tokens"], json!(8192));
    // Breakpoints: the system block, the last tool, the last block of the last message.
    assert_eq!(
        first.body["system"],
        json!([{"type": "text", "text": "You are a test.", "cache_control": ephemeral()}])
    );
    let tools = first.body["tools"].as_array().unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["Edit", "Glob", "Grep", "LS", "Read", "WebFetch", "Write"]);
    for t in &tools[..tools.len() - 1] {
        assert!(t.get("cache_control").is_none(), "only the last tool: {t}");
        assert!(t["input_schema"].is_object() && t["description"].is_string());
    }
    assert_eq!(tools.last().unwrap()["cache_control"], ephemeral());
    assert_eq!(
        first.body["messages"],
        json!([{"role": "user", "content": [{"type": "text", "text": "Do the task.", "cache_control": ephemeral()}]}])
    );

    let second = &requests[1].body;
    let messages = second["messages"].as_array().unwrap();
    assert_eq!(messages.len(), 3);
    // The first message lost its breakpoint: only the last message carries one.
    assert_eq!(messages[0], json!({"role": "user", "content": [{"type": "text", "text": "Do the task."}]}));
    assert_eq!(
        messages[1],
        json!({"role": "assistant", "content": [
            {"type": "text", "text": "Reading both."},
            {"type": "tool_use", "id": "toolu_b", "name": "Read", "input": {"file_path": "b.txt"}},
            {"type": "tool_use", "id": "toolu_a", "name": "Read", "input": {"file_path": "a.txt"}},
            {"type": "tool_use", "id": "toolu_g", "name": "Glob", "input": {"pattern": "*.txt"}},
        ]})
    );
    let results = messages[2]["content"].as_array().unwrap();
    assert_eq!(messages[2]["role"], "user");
    let ids: Vec<&str> = results.iter().map(|r| r["tool_use_id"].as_str().unwrap()).collect();
    assert_eq!(ids, ["toolu_b", "toolu_a", "toolu_g"], "model order");
    assert_eq!(results[0]["content"], json!([{"type": "text", "text": "     1\tbeta"}]));
    assert_eq!(results[1]["content"], json!([{"type": "text", "text": "     1\talpha"}]));
    assert!(results[2]["content"][0]["text"].as_str().unwrap().contains("a.txt"));
    for r in results {
        assert_eq!(r["type"], "tool_result");
        assert!(r.get("is_error").is_none(), "success has no is_error: {r}");
    }
    assert!(results[0].get("cache_control").is_none() && results[1].get("cache_control").is_none());
    assert_eq!(results[2]["cache_control"], ephemeral());
}

#[tokio::test(flavor = "multi_thread")]
async fn a_tool_error_and_a_denial_reach_the_model_as_is_error() {
    let ws = files();
    let server = ModelServer::start(vec![
        Answer::new("tool_use")
            .tool("t_missing", "Read", json!({"file_path": "missing.txt"}))
            .tool("t_write", "Write", json!({"file_path": "new.txt", "content": "x"}))
            .tool("t_ok", "Read", json!({"file_path": "a.txt"}))
            .anthropic(),
        Answer::text_only("Noted.").anthropic(),
    ]);
    // Default mode, no one to ask: the write is a denial naming the rule to add.
    let rt = runtime_with(ws.path(), Mode::Default).await;
    let (outcome, _) = run_agent(rt, anthropic(&server), options()).await;
    let outcome = outcome.unwrap();
    assert_eq!((outcome.stop, outcome.tool_calls, outcome.tool_errors), (Stop::EndTurn, 3, 2));
    assert!(!ws.path().join("new.txt").exists(), "the denied write did not happen");
    let body = &server.requests()[1].body;
    let results = last_message(body)["content"].as_array().unwrap().clone();
    let ids: Vec<&str> = results.iter().map(|r| r["tool_use_id"].as_str().unwrap()).collect();
    assert_eq!(ids, ["t_missing", "t_write", "t_ok"]);
    assert_eq!(results[0]["is_error"], json!(true));
    assert!(results[0]["content"][0]["text"].as_str().unwrap().contains("missing.txt"), "{}", results[0]);
    assert_eq!(results[1]["is_error"], json!(true));
    let denial = results[1]["content"][0]["text"].as_str().unwrap();
    assert!(denial.starts_with("Claude requested permissions to write to "), "Claude Code's words: {denial}");
    assert!(denial.contains("--allow 'Write("), "names the rule to add: {denial}");
    assert!(results[2].get("is_error").is_none());
}

#[tokio::test(flavor = "multi_thread")]
async fn a_tool_starts_while_the_model_is_still_answering() {
    let ws = files();
    let out = ws.path().join("early.txt");
    // The stream holds before its end until the first call's file exists: only a call that
    // started from the stream can make it appear.
    let server = ModelServer::start(vec![
        Answer::new("tool_use")
            .tool("t1", "Write", json!({"file_path": "early.txt", "content": "x"}))
            .wait_for(&out)
            .text("Wrote it.")
            .anthropic(),
        Answer::text_only("Done.").anthropic(),
    ]);
    let rt = runtime_with(ws.path(), Mode::AcceptEdits).await;
    let (outcome, _) = run_agent(rt, anthropic(&server), options()).await;
    assert_eq!(outcome.unwrap().stop, Stop::EndTurn);
    assert_eq!(server.waits_met(), 1, "the Write ran before the model's answer ended");
}

#[tokio::test(flavor = "multi_thread")]
async fn rate_limits_and_overload_are_retried_honouring_retry_after() {
    let ws = files();
    let server = ModelServer::start(vec![
        Reply::error(429, "rate_limit_error", "slow down", &[("retry-after", "0")]),
        Reply::error(529, "overloaded_error", "Overloaded", &[("retry-after", "0")]),
        Reply::error(503, "api_error", "unavailable", &[]),
        Answer::text_only("Finally.").anthropic(),
    ]);
    let rt = runtime_with(ws.path(), Mode::Default).await;
    let (outcome, seen) = run_agent(rt, anthropic(&server), options()).await;
    let outcome = outcome.unwrap();
    assert_eq!((outcome.stop, outcome.text.as_str()), (Stop::EndTurn, "Finally."));
    let retries = seen.retries.lock().unwrap().clone();
    let statuses: Vec<Option<u16>> = retries.iter().map(|r| r.status).collect();
    assert_eq!(statuses, [Some(429), Some(529), Some(503)]);
    assert_eq!(retries[0].retry_after, Some(Duration::ZERO));
    assert_eq!(retries[0].delay, Duration::ZERO, "retry-after wins over the backoff");
    assert_eq!(retries[1].retry_after, Some(Duration::ZERO));
    assert_eq!(retries[2].retry_after, None);
    assert!(retries[2].delay <= Duration::from_millis(4), "backoff within its ceiling: {:?}", retries[2].delay);
    // Each retry sent the same request again.
    let bodies = server.bodies();
    assert_eq!(bodies.len(), 4);
    assert!(bodies.iter().all(|b| *b == bodies[0]));
}

#[tokio::test(flavor = "multi_thread")]
async fn retries_end_and_a_bad_request_is_not_retried() {
    let ws = files();
    let overloaded = || Reply::error(529, "overloaded_error", "Overloaded", &[("retry-after", "0")]);
    let server = ModelServer::start(vec![overloaded(), overloaded(), overloaded()]);
    let provider =
        Arc::new(Anthropic::new(&server.url, "k").unwrap().with_retry(RetryPolicy { max_retries: 2, ..fast_retry() }));
    let rt = runtime_with(ws.path(), Mode::Default).await;
    let (outcome, _) = run_agent(rt.clone(), provider, options()).await;
    match outcome {
        Err(Error::Status { status: 529, attempts: 3, message, .. }) => assert_eq!(message, "Overloaded"),
        other => panic!("expected 529 after 3 attempts, got {other:?}"),
    }
    let server = ModelServer::start(vec![Reply::error(400, "invalid_request_error", "bad tools", &[])]);
    let (outcome, seen) = run_agent(rt, anthropic(&server), options()).await;
    assert!(matches!(outcome, Err(Error::Status { status: 400, attempts: 1, .. })), "{outcome:?}");
    assert!(seen.retries.lock().unwrap().is_empty());
}

#[tokio::test(flavor = "multi_thread")]
async fn an_auth_failure_is_an_error_naming_the_key() {
    let ws = files();
    let server = ModelServer::start(vec![Reply::error(401, "authentication_error", "invalid x-api-key", &[])]);
    let rt = runtime_with(ws.path(), Mode::Default).await;
    let (outcome, seen) = run_agent(rt, anthropic(&server), options()).await;
    let err = outcome.unwrap_err();
    assert!(matches!(err, Error::Auth { status: 401, .. }), "{err:?}");
    assert_eq!(err.to_string(), "authentication failed (401): invalid x-api-key; check ANTHROPIC_API_KEY");
    assert!(seen.retries.lock().unwrap().is_empty(), "never retried");
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test(flavor = "multi_thread")]
async fn max_tokens_in_the_middle_of_a_tool_use_stops_without_running_it() {
    let ws = files();
    let server = ModelServer::start(vec![
        Answer::new("max_tokens")
            .text("Writing the file.")
            .tool_raw("t1", "Write", r#"{"file_path": "cut.txt", "content": "never fin"#)
            .anthropic(),
    ]);
    let rt = runtime_with(ws.path(), Mode::Bypass).await;
    let (outcome, seen) = run_agent(rt, anthropic(&server), options()).await;
    let outcome = outcome.unwrap();
    assert_eq!(outcome.stop, Stop::MaxTokens);
    assert_eq!(outcome.stop.exit_code(), 1);
    assert_eq!(outcome.text, "Writing the file.");
    assert_eq!(outcome.tool_calls, 0);
    assert!(seen.tools.lock().unwrap().is_empty());
    assert!(!ws.path().join("cut.txt").exists(), "a cut tool call never runs");
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test(flavor = "multi_thread")]
async fn refusal_and_pause_turn() {
    let ws = files();
    let server = ModelServer::start(vec![
        Answer::new("pause_turn").text("Still searching").anthropic(),
        Answer::new("refusal").text("I can't help with that.").anthropic(),
    ]);
    let rt = runtime_with(ws.path(), Mode::Default).await;
    let (outcome, _) = run_agent(rt, anthropic(&server), options()).await;
    let outcome = outcome.unwrap();
    assert_eq!((outcome.stop.clone(), outcome.turns), (Stop::Refusal, 2));
    assert_eq!(outcome.stop.exit_code(), 1);
    // pause_turn: the paused answer goes back as it is, with no user message after it.
    let second = &server.requests()[1].body;
    assert_eq!(second["messages"].as_array().unwrap().len(), 2);
    assert_eq!(
        last_message(second),
        &json!({"role": "assistant", "content": [{"type": "text", "text": "Still searching", "cache_control": ephemeral()}]})
    );
}

/// Each turn gets a fresh id (the runtime refuses repeated ids in one turn only, but the
/// model would never repeat them).
fn read_turn(n: usize) -> Reply {
    Answer::new("tool_use").tool(&format!("t{n}"), "Read", json!({"file_path": "a.txt"})).anthropic()
}

#[tokio::test(flavor = "multi_thread")]
async fn the_token_budget_and_max_turns_stop_the_run() {
    let ws = files();
    // 15 tokens per response: a budget of 20 is spent after the second.
    let server = ModelServer::start((0..5).map(read_turn).collect());
    let rt = runtime_with(ws.path(), Mode::Default).await;
    let (outcome, _) =
        run_agent(rt.clone(), anthropic(&server), AgentOptions { token_budget: Some(20), ..options() }).await;
    let outcome = outcome.unwrap();
    assert_eq!(outcome.stop, Stop::TokenBudget { used: 30, budget: 20 });
    assert_eq!((outcome.turns, outcome.tool_calls, outcome.stop.exit_code()), (2, 2, 1));
    assert_eq!(server.requests().len(), 2);

    let server = ModelServer::start((0..5).map(read_turn).collect());
    let (outcome, _) = run_agent(rt, anthropic(&server), AgentOptions { max_turns: 3, ..options() }).await;
    let outcome = outcome.unwrap();
    assert_eq!(outcome.stop, Stop::MaxTurns(3));
    assert_eq!((outcome.turns, outcome.stop.exit_code()), (3, 1));
    assert_eq!(server.requests().len(), 3);
}

#[tokio::test(flavor = "multi_thread")]
async fn deferred_tools_are_found_through_tool_search() {
    let ws = files();
    let server = ModelServer::start(vec![
        Answer::new("tool_use")
            .tool("t_early", "Read", json!({"file_path": "a.txt"}))
            .tool("t_search", "ToolSearch", json!({"query": "select:Read"}))
            .anthropic(),
        Answer::new("tool_use").tool("t_read", "Read", json!({"file_path": "a.txt"})).anthropic(),
        Answer::text_only("alpha it is").anthropic(),
    ]);
    let rt = runtime_with(ws.path(), Mode::Default).await;
    let (outcome, _) =
        run_agent(rt, anthropic(&server), AgentOptions { defer_threshold_tokens: 10, ..options() }).await;
    let outcome = outcome.unwrap();
    assert_eq!((outcome.stop, outcome.tool_calls, outcome.tool_errors), (Stop::EndTurn, 3, 1));
    let bodies = server.bodies();
    let names = |b: &Value| {
        b["tools"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap().to_string()).collect::<Vec<_>>()
    };
    assert_eq!(names(&bodies[0]), ["ToolSearch"]);
    let system = bodies[0]["system"].as_array().unwrap();
    assert_eq!(system.len(), 2);
    let listing = system[1]["text"].as_str().unwrap();
    for tool in ["Edit", "Glob", "Grep", "LS", "Read", "WebFetch", "Write"] {
        assert!(listing.lines().any(|l| l == tool), "{tool} listed: {listing}");
    }
    assert_eq!(system[1]["cache_control"], ephemeral());
    let results = last_message(&bodies[1])["content"].as_array().unwrap().clone();
    assert_eq!(results[0]["tool_use_id"], "t_early");
    assert_eq!(results[0]["is_error"], json!(true));
    assert!(
        results[0]["content"][0]["text"].as_str().unwrap().contains("schema has not been loaded"),
        "{}",
        results[0]
    );
    assert_eq!(results[1]["tool_use_id"], "t_search");
    assert!(results[1].get("is_error").is_none());
    // Found: its schema is sent from then on (with the tools' breakpoint, as the last tool).
    assert_eq!(names(&bodies[1]), ["ToolSearch", "Read"]);
    assert_eq!(bodies[1]["tools"][1]["cache_control"], ephemeral());
    assert!(bodies[1]["tools"][1]["input_schema"]["properties"]["file_path"].is_object());
    let read = &last_message(&bodies[2])["content"][0];
    assert_eq!((read["tool_use_id"].as_str(), read.get("is_error")), (Some("t_read"), None));
}

#[tokio::test(flavor = "multi_thread")]
async fn the_openai_mapping_both_ways() {
    let ws = files();
    let server = ModelServer::start(vec![
        Answer::new("tool_use")
            .text("Looking.")
            .tool("call_1", "Read", json!({"file_path": "a.txt"}))
            .tool("call_2", "Read", json!({"file_path": "nope.txt"}))
            .openai(),
        Answer::text_only("It says alpha.").openai(),
    ]);
    let provider =
        Arc::new(OpenAi::new(&format!("{}/v1", server.url), Some("sk-test".into())).unwrap().with_retry(fast_retry()));
    let rt = runtime_with(ws.path(), Mode::Default).await;
    let (outcome, _) =
        run_agent(rt, provider, AgentOptions { only_tools: Some(vec!["Read".into()]), ..options() }).await;
    let outcome = outcome.unwrap();
    assert_eq!((outcome.stop, outcome.text.as_str()), (Stop::EndTurn, "It says alpha."));
    assert_eq!((outcome.tool_calls, outcome.tool_errors, outcome.usage.total()), (2, 1, 30));
    let requests = server.requests();
    assert_eq!(requests[0].path, "/v1/chat/completions");
    assert_eq!(requests[0].header("authorization"), Some("Bearer sk-test"));
    let first = &requests[0].body;
    assert_eq!(first["stream"], json!(true));
    assert_eq!(first["stream_options"], json!({"include_usage": true}));
    assert_eq!(first["tools"].as_array().unwrap().len(), 1);
    assert_eq!(first["tools"][0]["type"], "function");
    assert_eq!(first["tools"][0]["function"]["name"], "Read");
    assert!(first["tools"][0]["function"]["parameters"]["properties"]["file_path"].is_object());
    let second = &requests[1].body;
    let messages = second["messages"].as_array().unwrap();
    assert_eq!(messages[0], json!({"role": "system", "content": "You are a test."}));
    assert_eq!(messages[1], json!({"role": "user", "content": "Do the task."}));
    assert_eq!(
        messages[2],
        json!({"role": "assistant", "content": "Looking.", "tool_calls": [
            {"id": "call_1", "type": "function", "function": {"name": "Read", "arguments": "{\"file_path\":\"a.txt\"}"}},
            {"id": "call_2", "type": "function", "function": {"name": "Read", "arguments": "{\"file_path\":\"nope.txt\"}"}},
        ]})
    );
    assert_eq!(messages[3], json!({"role": "tool", "tool_call_id": "call_1", "content": "     1\talpha"}));
    assert_eq!(messages[4]["role"], "tool");
    assert_eq!(messages[4]["tool_call_id"], "call_2");
    assert!(messages[4]["content"].as_str().unwrap().contains("nope.txt"));
    assert_eq!(messages.len(), 5);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_tool_not_offered_is_refused_without_running() {
    let ws = files();
    let server = ModelServer::start(vec![
        Answer::new("tool_use").tool("t_w", "Write", json!({"file_path": "w.txt", "content": "x"})).anthropic(),
        Answer::text_only("ok").anthropic(),
    ]);
    let rt = runtime_with(ws.path(), Mode::Bypass).await;
    let only = Some(vec!["Read".into(), "Glob".into()]);
    let (outcome, _) = run_agent(rt, anthropic(&server), AgentOptions { only_tools: only, ..options() }).await;
    assert_eq!(outcome.unwrap().tool_errors, 1);
    assert!(!ws.path().join("w.txt").exists());
    let bodies = server.bodies();
    let names: Vec<&str> = bodies[0]["tools"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["Glob", "Read"]);
    let result = &last_message(&bodies[1])["content"][0];
    assert_eq!(result["is_error"], json!(true));
    assert_eq!(result["content"][0]["text"], "<tool_use_error>Error: No such tool available: Write</tool_use_error>");
}

// The command line, as the example workflow (examples/ci/) runs it.

/// `toolhost agent` in `ws` against `server`, with a key and no inherited provider settings.
fn agent_command(ws: &Path, server: &ModelServer) -> std::process::Command {
    let mut c = command(ws);
    c.env("ANTHROPIC_API_KEY", "test-key")
        .env_remove("ANTHROPIC_BASE_URL")
        .env_remove("OPENAI_API_KEY")
        .env_remove("OPENAI_BASE_URL")
        .env_remove("TOOLHOST_AGENT_MODEL")
        .args(["agent", "--base-url", &server.url, "--retry-base-ms", "1"]);
    c
}

#[test]
fn the_example_workflow_command_reviews_and_prints_the_review() {
    let ws = files();
    let server = ModelServer::start(vec![
        Answer::new("tool_use")
            .tool("t1", "Glob", json!({"pattern": "*.txt"}))
            .tool("t2", "Read", json!({"file_path": "a.txt"}))
            .anthropic(),
        Answer::new("tool_use").tool("t3", "Grep", json!({"pattern": "beta"})).anthropic(),
        Answer::text_only("## Review\n\nLooks good.").anthropic(),
    ]);
    let transcript = ws.path().join("review-transcript.jsonl");
    // The options and files of examples/ci/review-pr.yml.
    let example = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/ci");
    let o = agent_command(ws.path(), &server)
        .args(["--permission-mode", "plan", "--deny", "Read(.git/**)", "--only-tools", "Read,Glob,Grep,LS"])
        .args(["--max-turns", "25", "--max-total-tokens", "400000", "--system-file"])
        .arg(example.join("reviewer-system.md"))
        .arg("--prompt-file")
        .arg(example.join("review-prompt.md"))
        .arg("--transcript")
        .arg(&transcript)
        .output()
        .unwrap();
    assert_exit(&o, 0);
    assert_eq!(stdout(&o), "## Review\n\nLooks good.\n");
    let err = stderr(&o);
    // One line per tool call and the summary (the tools' own progress messages may come
    // between them).
    let lines: Vec<&str> =
        err.lines().filter(|l| l.starts_with('✓') || l.starts_with('✗') || l.starts_with("toolhost agent:")).collect();
    assert_eq!(lines.len(), 4, "{err}");
    assert!(err.ends_with(&format!("{}\n", lines[3])), "the summary is the last line: {err}");
    assert!(lines[0].starts_with("✓ Glob (t1) {\"pattern\":\"*.txt\"}: success in "), "{err}");
    assert!(lines[1].starts_with("✓ Read (t2) "), "{err}");
    assert!(lines[2].starts_with("✓ Grep (t3) "), "{err}");
    assert!(
        lines[3].starts_with("toolhost agent: end_turn; 3 turns, 3 tool calls (0 errors), 45 tokens (in 30, out 15,"),
        "{err}"
    );
    let bodies = server.bodies();
    let prompt = fs::read_to_string(example.join("review-prompt.md")).unwrap();
    assert_eq!(bodies[0]["messages"][0]["content"][0]["text"], prompt.as_str());
    let system = fs::read_to_string(example.join("reviewer-system.md")).unwrap();
    assert_eq!(bodies[0]["system"][0]["text"], system.as_str());
    let names: Vec<&str> = bodies[0]["tools"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["Glob", "Grep", "LS", "Read"]);
    assert_eq!(bodies[0]["model"], "claude-sonnet-4-5");

    let lines: Vec<Value> =
        fs::read_to_string(&transcript).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let types: Vec<&str> = lines.iter().map(|l| l["type"].as_str().unwrap()).collect();
    assert_eq!(
        types,
        [
            "start",
            "request",
            "response",
            "tool_result",
            "tool_result",
            "request",
            "response",
            "tool_result",
            "request",
            "response",
            "end"
        ]
    );
    assert_eq!(lines[2]["usage"]["input_tokens"], 10);
    assert_eq!(lines[2]["stop_reason"], "tool_use");
    assert_eq!(lines[3]["tool_use_id"], "t1");
    assert!(lines[3]["duration_ms"].is_number());
    // Each request line carries only what is new since the previous one and not already in a
    // response line: here the user message of results.
    let new = lines[5]["messages"].as_array().unwrap();
    assert_eq!(new.len(), 1);
    assert_eq!(new[0]["role"], "user");
    assert_eq!(new[0]["content"][0]["tool_use_id"], "t1");
    assert_eq!(lines[10]["exit_code"], 0);
    assert_eq!(lines[10]["tool_calls"], 3);
}

#[test]
fn cli_exit_codes_for_auth_failure_missing_key_and_limits() {
    let ws = files();
    let server = ModelServer::start(vec![Reply::error(401, "authentication_error", "invalid x-api-key", &[])]);
    let o = agent_command(ws.path(), &server).arg("hello").output().unwrap();
    assert_exit(&o, 2);
    assert!(
        stderr(&o).contains("error: authentication failed (401): invalid x-api-key; check ANTHROPIC_API_KEY"),
        "{}",
        stderr(&o)
    );
    assert_eq!(stdout(&o), "");

    let o = agent_command(ws.path(), &server).env_remove("ANTHROPIC_API_KEY").arg("hello").output().unwrap();
    assert_exit(&o, 2);
    assert!(stderr(&o).contains("ANTHROPIC_API_KEY is not set"), "{}", stderr(&o));

    let server = ModelServer::start(vec![read_turn(1), read_turn(2)]);
    let o = agent_command(ws.path(), &server).args(["--max-turns", "2", "hello"]).output().unwrap();
    assert_exit(&o, 1);
    assert!(stderr(&o).contains("max turns: 2 turns used"), "{}", stderr(&o));

    // A write asked for with no terminal is a denial the model reads, naming the rule.
    let server = ModelServer::start(vec![
        Answer::new("tool_use").tool("t1", "Write", json!({"file_path": "x.txt", "content": "x"})).anthropic(),
        Answer::text_only("I could not write.").anthropic(),
    ]);
    let o = agent_command(ws.path(), &server).arg("write x.txt").output().unwrap();
    assert_exit(&o, 0);
    assert!(stderr(&o).contains("✗ Write (t1)"), "{}", stderr(&o));
    let bodies = server.bodies();
    let result = &last_message(&bodies[1])["content"][0];
    assert_eq!(result["is_error"], json!(true));
    assert!(result["content"][0]["text"].as_str().unwrap().contains("--allow 'Write("), "{result}");
    assert!(!ws.path().join("x.txt").exists());
}

#[test]
fn cli_openai_provider_against_a_local_server() {
    let ws = files();
    let server = ModelServer::start(vec![
        Answer::new("tool_use").tool("call_1", "LS", json!({"path": "."})).openai(),
        Answer::text_only("Two files.").openai(),
    ]);
    let base = format!("{}/v1", server.url);
    let o = command(ws.path())
        .env_remove("OPENAI_API_KEY")
        .env_remove("TOOLHOST_AGENT_MODEL")
        .args(["agent", "--provider", "openai", "--model", "local-model", "--base-url", &base, "list the files"])
        .output()
        .unwrap();
    assert_exit(&o, 0);
    assert_eq!(stdout(&o), "Two files.\n");
    let requests = server.requests();
    assert_eq!(requests[0].header("authorization"), None, "no key, no header");
    assert_eq!(requests[0].body["model"], "local-model");
    let tool = &requests[1].body["messages"].as_array().unwrap().last().unwrap().clone();
    assert_eq!(tool["role"], "tool");
    assert!(tool["content"].as_str().unwrap().contains("a.txt"), "{tool}");
}

#[tokio::test(flavor = "multi_thread")]
async fn the_cost_budget_stops_the_run() {
    let ws = files();
    let server = ModelServer::start((0..5).map(read_turn).collect());
    let rt = runtime_with(ws.path(), Mode::Default).await;
    // 10 input and 5 output tokens per response at $1,000 / $10,000 per million tokens: $0.06
    // per turn, so a budget of $0.10 is spent after the second.
    let options = AgentOptions {
        pricing: Some(toolhost_agent::Pricing::new(1000.0, 10000.0)),
        cost_budget: Some(0.10),
        ..options()
    };
    let (outcome, _) = run_agent(rt, anthropic(&server), options).await;
    let outcome = outcome.unwrap();
    assert!(
        matches!(outcome.stop, Stop::CostBudget { spent, budget } if (spent - 0.12).abs() < 1e-9 && budget == 0.10),
        "{:?}",
        outcome.stop
    );
    assert_eq!((outcome.turns, outcome.stop.exit_code()), (2, 1));
    assert!(outcome.summary().contains("$0.1200"), "{}", outcome.summary());
}

#[tokio::test(flavor = "multi_thread")]
async fn an_error_event_in_the_stream_is_retried_only_before_any_call() {
    let ws = files();
    let Reply::Stream(mut pieces) = Answer::text_only("partial").anthropic() else { unreachable!() };
    // Cut after the text block and report overload, as the API does mid-stream.
    pieces.truncate(5);
    pieces.push(Piece::Event {
        name: Some("error".into()),
        data: json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}).to_string(),
    });
    // Before any call was handed on: retried like an overloaded status.
    let server = ModelServer::start(vec![Reply::Stream(pieces.clone()), Answer::text_only("whole").anthropic()]);
    let rt = runtime_with(ws.path(), Mode::Default).await;
    let (outcome, seen) = run_agent(rt.clone(), anthropic(&server), options()).await;
    assert_eq!(outcome.unwrap().text, "whole");
    let retries = seen.retries.lock().unwrap().clone();
    assert_eq!((retries.len(), retries[0].status), (1, None));
    assert_eq!(server.requests().len(), 2);

    // After a call was handed on (it may have run): never sent again, a host error.
    let Reply::Stream(mut with_call) =
        Answer::new("tool_use").tool("t1", "Read", json!({"file_path": "a.txt"})).anthropic()
    else {
        unreachable!()
    };
    let stop = with_call
        .iter()
        .position(|p| matches!(p, Piece::Event { name: Some(n), .. } if n == "content_block_stop"))
        .unwrap();
    with_call.truncate(stop + 1);
    with_call.push(pieces.last().unwrap().clone());
    let server = ModelServer::start(vec![Reply::Stream(with_call), Answer::text_only("never").anthropic()]);
    let (outcome, _) = run_agent(rt, anthropic(&server), options()).await;
    match outcome {
        Err(Error::StreamError { kind, message, .. }) => {
            assert_eq!((kind.as_str(), message.as_str()), ("overloaded_error", "Overloaded"))
        }
        other => panic!("expected a stream error, got {other:?}"),
    }
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test(flavor = "multi_thread")]
async fn openai_length_in_the_middle_of_a_tool_call_stops_without_running_it() {
    let ws = files();
    let server = ModelServer::start(vec![
        Answer::new("max_tokens")
            .tool("call_1", "Read", json!({"file_path": "a.txt"}))
            .tool_raw("call_2", "Write", r#"{"file_path": "cut.txt", "cont"#)
            .openai(),
    ]);
    let provider = Arc::new(OpenAi::new(&format!("{}/v1", server.url), None).unwrap().with_retry(fast_retry()));
    let rt = runtime_with(ws.path(), Mode::Bypass).await;
    let (outcome, seen) = run_agent(rt, provider, options()).await;
    let outcome = outcome.unwrap();
    assert_eq!(outcome.stop, Stop::MaxTokens);
    // The complete call ran as soon as the next began; the cut one never did.
    assert_eq!(seen.tools.lock().unwrap().clone(), [("call_1".to_string(), false)]);
    assert!(!ws.path().join("cut.txt").exists());
}

/// One request has one budget of retries, whether statuses or broken streams spend it (a
/// stream retried after an overload no longer starts a fresh count); a `retry-after` of `1e30`
/// is waited as the policy's ceiling, never a panic.
#[tokio::test(flavor = "multi_thread")]
async fn a_request_has_one_budget_of_retries_and_a_huge_retry_after_is_clamped() {
    let ws = files();
    let Reply::Stream(mut broken) = Answer::text_only("partial").anthropic() else { unreachable!() };
    broken.truncate(5);
    broken.push(Piece::Event {
        name: Some("error".into()),
        data: json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}).to_string(),
    });
    let huge = || Reply::error(529, "overloaded_error", "Overloaded", &[("retry-after", "1e30")]);
    // Enough failures for two budgets: stream, status, stream, status, stream, status, ….
    let mut script = Vec::new();
    for _ in 0..6 {
        script.push(Reply::Stream(broken.clone()));
        script.push(huge());
    }
    script.push(Answer::text_only("never").anthropic());
    let server = ModelServer::start(script);
    let policy = RetryPolicy { max_retries: 4, max_retry_after: Duration::from_millis(1), ..fast_retry() };
    let provider = Arc::new(Anthropic::new(&server.url, "k").unwrap().with_retry(policy));
    let rt = runtime_with(ws.path(), Mode::Default).await;
    let (outcome, seen) = run_agent(rt, provider, options()).await;
    assert!(outcome.is_err(), "{outcome:?}");
    assert_eq!(server.requests().len(), 5, "one first attempt and four retries in all");
    let retries = seen.retries.lock().unwrap().clone();
    assert_eq!(retries.len(), 4, "{retries:?}");
    let overloaded: Vec<_> = retries.iter().filter(|r| r.status == Some(529)).collect();
    assert!(!overloaded.is_empty(), "the 529 answers with a huge retry-after were retried: {retries:?}");
    for r in overloaded {
        assert_eq!(r.delay, Duration::from_millis(1), "cut to max_retry_after: {r:?}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_function_component_and_a_command_program_answer_the_model() {
    let ws = files();
    let server = ModelServer::start(vec![
        Answer::new("tool_use")
            .tool("toolu_f", "other_echo", json!({"text": "abc"}))
            .tool("toolu_c", "cmd", json!({"args": ["echo", "hi"]}))
            .tool("toolu_r", "Read", json!({"file_path": "a.txt"}))
            .anthropic(),
        Answer::text_only("Done.").anthropic(),
    ]);
    let mut rt =
        Runtime::builder().permission_mode(Mode::Bypass).engine(engine()).workspace(ws.path()).build().unwrap();
    for s in default_tools() {
        rt.load(s).await.expect("load");
    }
    for r in rt.load_tools(toolhost::ToolSource::bytes("functions.wasm", toolhost_tests::guests::WIT_FUNCTIONS)).await {
        r.expect("a function");
    }
    rt.load(toolhost::ToolSource::bytes("cmd.wasm", toolhost_tests::guests::WIT_COMMAND)).await.expect("the command");
    let (outcome, _) = run_agent(Arc::new(rt), anthropic(&server), options()).await;
    assert_eq!(outcome.expect("run").tool_errors, 0);
    let requests = server.requests();
    let names: Vec<&str> =
        requests[0].body["tools"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap()).collect();
    for name in ["Read", "cmd", "echo", "other_echo", "roundtrip-record"] {
        assert!(names.contains(&name), "{name} missing from {names:?}");
    }
    let results = last_message(&requests[1].body)["content"].as_array().unwrap().clone();
    assert_eq!(results[0]["content"], json!([{"type": "text", "text": "cba"}]));
    assert_eq!(results[1]["content"], json!([{"type": "text", "text": "exit code: 0\n--- stdout ---\nhi\n"}]));
    assert!(results[2]["content"][0]["text"].as_str().unwrap().contains("alpha"));
}
