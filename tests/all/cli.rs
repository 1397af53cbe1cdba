//! The `toolhost` binary, run as a user would: `call`, `list`, `inspect`, sessions across
//! invocations, config errors and tools that fail to load. Exit codes: 0 ok, 1 tool error,
//! 2 usage or host error.

use serde_json::{Value, json};
use std::fs;
use std::process::{Command, Output, Stdio};
use toolhost_tests::cli::{assert_exit, binary, cache_dir, run, run_on_a_terminal, run_with_stdin, stderr, stdout};
use toolhost_tests::workspace;

const DEFAULT_TOOLS: [&str; 7] = ["Edit", "Glob", "Grep", "LS", "Read", "WebFetch", "Write"];

fn json_out(o: &Output) -> Value {
    serde_json::from_str(&stdout(o))
        .unwrap_or_else(|e| panic!("stdout is not JSON ({e}):\n{}\nstderr:\n{}", stdout(o), stderr(o)))
}

/// A workspace with `a.txt` = "hello\nworld\n".
fn hello_workspace() -> tempfile::TempDir {
    let ws = workspace();
    fs::write(ws.path().join("a.txt"), "hello\nworld\n").unwrap();
    ws
}

#[test]
fn call_prints_the_result_text_and_exits_0() {
    let ws = hello_workspace();
    let o = run(ws.path(), &["call", "Read", r#"{"file_path":"a.txt"}"#]);
    assert_exit(&o, 0);
    assert_eq!(stdout(&o), "     1\thello\n     2\tworld\n");
}

#[test]
fn a_first_call_on_an_empty_cache_compiles_nothing() {
    // A fresh CI runner: the default tools' code comes with the binary, so the cache gets the
    // tools' load records and no compiled code.
    let ws = hello_workspace();
    let cache = workspace();
    let cache_dir = cache.path().join("cache");
    for args in [&["call", "Grep", r#"{"pattern":"wor","output_mode":"content"}"#][..], &["list"]] {
        let o =
            toolhost_tests::cli::command(ws.path()).env("TOOLHOST_CACHE_DIR", &cache_dir).args(args).output().unwrap();
        assert_exit(&o, 0);
    }
    let names: Vec<String> =
        fs::read_dir(&cache_dir).unwrap().flatten().map(|e| e.file_name().to_string_lossy().into_owned()).collect();
    assert!(names.iter().any(|n| n.ends_with(".load.json")), "{names:?}");
    assert!(!names.iter().any(|n| n.ends_with(".cwasm")), "compiled at start: {names:?}");
}

#[test]
fn call_json_prints_a_tool_result_block() {
    let ws = hello_workspace();
    let o = run(ws.path(), &["call", "Read", r#"{"file_path":"a.txt"}"#, "--json", "--id", "toolu_abc"]);
    assert_exit(&o, 0);
    let v = json_out(&o);
    assert_eq!(v["type"], "tool_result");
    assert_eq!(v["tool_use_id"], "toolu_abc");
    assert_eq!(v["content"], serde_json::json!([{"type": "text", "text": "     1\thello\n     2\tworld"}]));
    assert!(v.get("is_error").is_none(), "no is_error on success: {v}");

    // Without --id the id is still there.
    let o = run(ws.path(), &["call", "Read", r#"{"file_path":"a.txt"}"#, "--json"]);
    assert_exit(&o, 0);
    assert!(json_out(&o)["tool_use_id"].as_str().is_some_and(|id| !id.is_empty()));
}

#[test]
fn a_tool_error_exits_1() {
    let ws = hello_workspace();
    let o = run(ws.path(), &["call", "Read", r#"{"file_path":"missing.txt"}"#]);
    assert_exit(&o, 1);
    assert!(stdout(&o).contains("missing.txt"), "{}", stdout(&o));

    let o = run(ws.path(), &["call", "Read", r#"{"file_path":"missing.txt"}"#, "--json"]);
    assert_exit(&o, 1);
    let v = json_out(&o);
    assert_eq!(v["type"], "tool_result");
    assert_eq!(v["is_error"], true);

    // A schema error is a tool error too (no input at all means `{}`).
    let o = run(ws.path(), &["call", "Read"]);
    assert_exit(&o, 1);
    assert!(stdout(&o).contains("InputValidationError"), "{}", stdout(&o));
}

#[test]
fn invalid_json_input_exits_2_with_a_message() {
    let ws = hello_workspace();
    let o = run(ws.path(), &["call", "Read", "{not json"]);
    assert_exit(&o, 2);
    assert!(stderr(&o).contains("not valid JSON"), "{}", stderr(&o));
    assert!(stdout(&o).is_empty(), "nothing on stdout: {}", stdout(&o));
}

#[test]
fn unknown_tool_exits_1() {
    let ws = hello_workspace();
    let o = run(ws.path(), &["call", "Nope", "{}"]);
    assert_exit(&o, 1);
    assert!(stdout(&o).contains("No such tool available: Nope"), "{}", stdout(&o));
}

#[test]
fn input_from_stdin() {
    let ws = hello_workspace();
    let o = run_with_stdin(ws.path(), &["call", "Read", "-"], r#"{"file_path": "a.txt", "offset": 2}"#);
    assert_exit(&o, 0);
    assert_eq!(stdout(&o), "     2\tworld\n");
}

#[test]
fn list_shows_the_default_tools() {
    let ws = workspace();
    let o = run(ws.path(), &["list"]);
    assert_exit(&o, 0);
    let text = stdout(&o);
    for name in DEFAULT_TOOLS {
        let kind = if matches!(name, "Write" | "Edit") { "read-write" } else { "read-only" };
        assert!(text.contains(&format!("\n{name} ({kind}, embedded tool {name})\n")), "{name}:\n{text}");
    }

    let o = run(ws.path(), &["list", "--json"]);
    assert_exit(&o, 0);
    let v = json_out(&o);
    let names: Vec<&str> = v["tools"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert_eq!(names, DEFAULT_TOOLS);
    for t in v["tools"].as_array().unwrap() {
        assert_eq!(t["input_schema"]["type"], "object", "{t}");
        assert_eq!(t["sha256"].as_str().unwrap().len(), 64, "{t}");
    }
    assert_eq!(v["load_errors"], serde_json::json!([]));

    let o = run(ws.path(), &["--no-default-tools", "list", "--json"]);
    assert_exit(&o, 0);
    assert_eq!(json_out(&o)["tools"], serde_json::json!([]));
    let o = run(ws.path(), &["--no-default-tools", "list"]);
    assert_exit(&o, 0);
    for name in DEFAULT_TOOLS {
        assert!(!stdout(&o).contains(&format!("\n{name} (")), "{}", stdout(&o));
    }
    // And then no tool can be called.
    let o = run(ws.path(), &["--no-default-tools", "call", "Read", r#"{"file_path":"a.txt"}"#]);
    assert_exit(&o, 1);
    assert!(stdout(&o).contains("No such tool available: Read"), "{}", stdout(&o));
}

#[test]
fn inspect_describes_a_component() {
    let ws = workspace();
    let file = ws.path().join("read.wasm");
    let bytes = toolhost_default_tools::get("Read").expect("the Read tool");
    fs::write(&file, bytes).unwrap();

    // The sha256 `list` reports for the embedded Read (the same bytes).
    let listed = json_out(&run(ws.path(), &["list", "--json"]));
    let sha = listed["tools"].as_array().unwrap().iter().find(|t| t["name"] == "Read").unwrap()["sha256"]
        .as_str()
        .unwrap()
        .to_string();

    let o = run(ws.path(), &["inspect", file.to_str().unwrap()]);
    assert_exit(&o, 0);
    let text = stdout(&o);
    assert!(text.contains("name:        Read\n"), "{text}");
    assert!(text.contains(&format!("sha256:      {sha}\n")), "{text}");
    assert!(text.contains(&format!("size:        {} bytes\n", bytes.len())), "{text}");
    assert!(text.contains("read-only:   true\n"), "{text}");
    assert!(text.contains("subject:     /file_path\n"), "{text}");
    assert!(text.contains("\nimports:\n"), "{text}");
    assert!(text.contains("\n  toolhost:tool/host@0.1.0\n"), "{text}");
    assert!(text.contains("\n  wasi:filesystem/preopens@0.2"), "{text}");
    assert!(text.contains("\nexports:\n  toolhost:tool/tool@0.1.0\n"), "{text}");

    let o = run(ws.path(), &["inspect", file.to_str().unwrap(), "--json"]);
    assert_exit(&o, 0);
    let v = json_out(&o);
    assert_eq!(v["info"]["name"], "Read");
    assert_eq!(v["sha256"], sha.as_str());
    assert_eq!(v["size"], bytes.len());
    assert!(v["imports"].as_array().unwrap().iter().any(|i| i == "toolhost:tool/host@0.1.0"), "{v}");
}

#[test]
fn inspect_shows_what_the_tool_would_be_granted_here() {
    let ws = workspace();
    let file = ws.path().join("webfetch.wasm");
    fs::write(&file, toolhost_default_tools::get("WebFetch").expect("the WebFetch tool")).unwrap();
    let inspect = |args: &[&str]| {
        let mut all = vec!["inspect", file.to_str().unwrap()];
        all.extend_from_slice(args);
        let o = run(ws.path(), &all);
        assert_exit(&o, 0);
        stdout(&o)
    };

    // No config: the default grant (the workspace) meets a ceiling of net(*): nothing.
    let text = inspect(&[]);
    assert!(text.contains("ceiling:     net(*)\n"), "{text}");
    assert!(text.contains("granted:     nothing (default grant)\n"), "{text}");
    assert!(text.contains("network:     none (no name lookups, sockets or HTTP)\n"), "{text}");

    fs::write(
        ws.path().join("toolhost.toml"),
        "[tools.WebFetch]\ngrant = { net = [\"docs.rs\", \"*.python.org:8443\"] }\n",
    )
    .unwrap();
    let text = inspect(&[]);
    assert!(text.contains("granted:     net(docs.rs), net(*.python.org:8443) (config grant)\n"), "{text}");
    assert!(text.contains("network:     docs.rs, *.python.org:8443\n"), "{text}");
    let v: Value = serde_json::from_str(&inspect(&["--json"])).expect("JSON");
    assert_eq!(v["granted"]["net"], serde_json::json!(["docs.rs", "*.python.org:8443"]), "{v}");
    assert_eq!(v["granted"]["grant_from"], "config", "{v}");

    // A grant the loader would refuse: said, and the component is still described.
    fs::write(ws.path().join("toolhost.toml"), "[tools.WebFetch]\ngrant = { net = [\"a b\"] }\n").unwrap();
    let text = inspect(&[]);
    assert!(text.contains("granted:     would not load here: "), "{text}");
    assert!(text.contains("grant.net[0]: invalid network pattern"), "{text}");
    assert!(text.contains("name:        WebFetch\n"), "{text}");
    let v: Value = serde_json::from_str(&inspect(&["--json"])).expect("JSON");
    assert!(v["grant_error"].as_str().unwrap().contains("invalid network pattern"), "{v}");
    assert!(v.get("granted").is_none(), "{v}");
}

#[test]
fn inspect_of_a_corrupt_file_exits_2_naming_it() {
    let ws = workspace();
    let file = ws.path().join("broken.wasm");
    fs::write(&file, b"this is not wasm").unwrap();
    let o = run(ws.path(), &["inspect", file.to_str().unwrap()]);
    assert_exit(&o, 2);
    assert!(stderr(&o).contains(&file.display().to_string()), "{}", stderr(&o));
    assert!(stderr(&o).contains("not a WebAssembly file"), "{}", stderr(&o));

    // A truncated component: the right magic, then garbage.
    let mut bytes = toolhost_default_tools::get("LS").unwrap()[..64].to_vec();
    bytes.extend_from_slice(&[0xff; 16]);
    fs::write(&file, bytes).unwrap();
    let o = run(ws.path(), &["inspect", file.to_str().unwrap()]);
    assert_exit(&o, 2);
    assert!(stderr(&o).contains(&file.display().to_string()), "{}", stderr(&o));

    let missing = ws.path().join("missing.wasm");
    let o = run(ws.path(), &["inspect", missing.to_str().unwrap()]);
    assert_exit(&o, 2);
    assert!(stderr(&o).contains(&missing.display().to_string()), "{}", stderr(&o));
}

#[test]
fn a_session_file_carries_read_state_to_a_later_edit() {
    let ws = hello_workspace();
    let state = workspace();
    let session = state.path().join("session.json");
    let session_arg = session.to_str().unwrap();
    let edit = r#"{"file_path":"a.txt","old_string":"hello","new_string":"bye"}"#;

    // Without a session, each call is fresh: Edit refuses.
    let o = run(ws.path(), &["--permission-mode", "accept-edits", "call", "Edit", edit]);
    assert_exit(&o, 1);
    assert!(stdout(&o).contains("File has not been read yet"), "{}", stdout(&o));

    let o = run(ws.path(), &["call", "Read", r#"{"file_path":"a.txt"}"#, "--session", session_arg]);
    assert_exit(&o, 0);
    let saved: Value = serde_json::from_str(&fs::read_to_string(&session).unwrap()).unwrap();
    let context = saved["context"].as_object().expect("the session file holds the context");
    assert!(context.keys().any(|k| k.starts_with("toolhost/read:") && k.ends_with("a.txt")), "{saved}");

    let o = run(ws.path(), &["--permission-mode", "accept-edits", "call", "Edit", edit, "--session", session_arg]);
    assert_exit(&o, 0);
    assert!(stdout(&o).contains("has been updated successfully"), "{}", stdout(&o));
    assert_eq!(fs::read_to_string(ws.path().join("a.txt")).unwrap(), "bye\nworld\n");

    // The edit's new state was saved too: a second edit works without another Read.
    let o = run(
        ws.path(),
        &[
            "--permission-mode",
            "accept-edits",
            "call",
            "Edit",
            r#"{"file_path":"a.txt","old_string":"world","new_string":"earth"}"#,
            "--session",
            session_arg,
        ],
    );
    assert_exit(&o, 0);
    assert_eq!(fs::read_to_string(ws.path().join("a.txt")).unwrap(), "bye\nearth\n");
}

#[test]
fn a_config_with_an_unknown_key_exits_2_with_its_position() {
    let ws = hello_workspace();
    let cfg = ws.path().join("bad.toml");
    fs::write(&cfg, "[limits]\ntimeout_ms = 5000\nbogus_key = 1\n").unwrap();
    let o = run(ws.path(), &["--config", cfg.to_str().unwrap(), "list"]);
    assert_exit(&o, 2);
    let err = stderr(&o);
    assert!(err.contains(&format!("{}:3:1:", cfg.display())), "{err}");
    assert!(err.contains("bogus_key"), "{err}");

    // The same for `call`, and for ./toolhost.toml found in the current directory.
    fs::write(ws.path().join("toolhost.toml"), "[tools.Read]\ngrant = { fs_reed = [] }\n").unwrap();
    let o = run(ws.path(), &["call", "Read", r#"{"file_path":"a.txt"}"#]);
    assert_exit(&o, 2);
    let err = stderr(&o);
    assert!(err.contains("toolhost.toml:2:"), "{err}");
    assert!(err.contains("fs_reed"), "{err}");
}

#[test]
fn a_corrupt_tool_in_a_tools_dir_does_not_stop_the_others() {
    let ws = hello_workspace();
    let tools = workspace();
    fs::write(tools.path().join("aaa-broken.wasm"), b"\0asm garbage that is no component").unwrap();
    fs::write(tools.path().join("read.wasm"), toolhost_default_tools::get("Read").unwrap()).unwrap();
    fs::write(tools.path().join("notes.txt"), "not a tool, not loaded").unwrap();
    let dir = tools.path().to_str().unwrap();
    let broken = tools.path().join("aaa-broken.wasm").display().to_string();

    let o = run(ws.path(), &["--no-default-tools", "--tools", dir, "list", "--json"]);
    assert_exit(&o, 0);
    let v = json_out(&o);
    let names: Vec<&str> = v["tools"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["Read"]);
    let errors = v["load_errors"].as_array().unwrap();
    assert_eq!(errors.len(), 1, "{v}");
    assert!(errors[0].as_str().unwrap().contains(&broken), "{v}");
    assert!(stderr(&o).contains(&broken), "{}", stderr(&o));

    // The tool that loaded works.
    let o = run(ws.path(), &["--no-default-tools", "--tools", dir, "call", "Read", r#"{"file_path":"a.txt"}"#]);
    assert_exit(&o, 0);
    assert_eq!(stdout(&o), "     1\thello\n     2\tworld\n");
    assert!(stderr(&o).contains(&broken), "{}", stderr(&o));

    // With the default tools too, the file's Read is a duplicate: reported, naming both.
    let o = run(ws.path(), &["--tools", dir, "list", "--json"]);
    assert_exit(&o, 0);
    let v = json_out(&o);
    let names: Vec<&str> = v["tools"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert_eq!(names, DEFAULT_TOOLS);
    let errors: Vec<&str> = v["load_errors"].as_array().unwrap().iter().map(|e| e.as_str().unwrap()).collect();
    assert_eq!(errors.len(), 2, "{v}");
    let dup = errors.iter().find(|e| e.contains("read.wasm")).unwrap_or_else(|| panic!("{v}"));
    assert!(dup.contains("embedded tool Read"), "{dup}");
}

#[test]
fn run_answers_an_assistant_message_with_a_user_message_in_order() {
    let ws = hello_workspace();
    let message = json!({"role": "assistant", "content": [
        {"type": "text", "text": "Let me look."},
        {"type": "tool_use", "id": "t1", "name": "Read", "input": {"file_path": "a.txt"}},
        {"type": "tool_use", "id": "t2", "name": "Nope", "input": {}},
        {"type": "tool_use", "id": "t3", "name": "Glob", "input": {"pattern": "*.txt"}},
    ]});
    let o = run_with_stdin(ws.path(), &["run", "-"], &message.to_string());
    assert_exit(&o, 0);
    let v = json_out(&o);
    assert_eq!(v["role"], "user");
    let content = v["content"].as_array().unwrap();
    let ids: Vec<&str> = content.iter().map(|b| b["tool_use_id"].as_str().unwrap()).collect();
    assert_eq!(ids, ["t1", "t2", "t3"]);
    assert!(content.iter().all(|b| b["type"] == "tool_result"));
    assert_eq!(content[1]["is_error"], true);
    assert!(content[0].get("is_error").is_none());
}

#[test]
fn run_jsonl_answers_every_line_with_an_id_and_reports_the_rest() {
    let ws = hello_workspace();
    let input = concat!(
        r#"{"type":"tool_use","id":"a","name":"Read","input":{"file_path":"a.txt"}}"#,
        "\nnot json at all\n",
        r#"{"type":"tool_use","name":"Read","input":{}}"#,
        "\n",
        r#"{"type":"tool_use","id":"b","input":{}}"#,
        "\n",
    );
    let o = run_with_stdin(ws.path(), &["run", "--jsonl"], input);
    assert_exit(&o, 2);
    let lines: Vec<Value> = stdout(&o).lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(lines.len(), 2, "{}", stdout(&o));
    assert_eq!(lines[0]["tool_use_id"], "a");
    assert_eq!(lines[1]["tool_use_id"], "b");
    assert_eq!(lines[1]["is_error"], true);
    let err = stderr(&o);
    assert!(err.contains("line 2") && err.contains("line 3"), "{err}");
}

#[test]
fn a_max_concurrency_below_one_is_a_usage_error() {
    let ws = hello_workspace();
    let o = Command::new(binary())
        .args(["run", "-"])
        .current_dir(ws.path())
        .env("TOOLHOST_CACHE_DIR", cache_dir())
        .env("TOOLHOST_MAX_CONCURRENCY", "0")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_exit(&o, 2);
    assert!(stderr(&o).contains("TOOLHOST_MAX_CONCURRENCY"), "{}", stderr(&o));
}

#[test]
fn run_events_file_records_start_and_finish_with_outcome() {
    let ws = hello_workspace();
    let events = ws.path().join("events.jsonl");
    let turn = json!({"role": "assistant", "content": [
        {"type": "tool_use", "id": "ok1", "name": "Read", "input": {"file_path": "a.txt"}},
        {"type": "tool_use", "id": "bad1", "name": "Read", "input": {"file_path": 7}},
    ]});
    let o = run_with_stdin(ws.path(), &["run", "--events", events.to_str().unwrap()], &turn.to_string());
    assert_exit(&o, 0);
    let lines: Vec<Value> =
        fs::read_to_string(&events).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let finish = |id: &str| lines.iter().find(|e| e["event"] == "finish" && e["id"] == id).cloned().unwrap();
    assert!(lines.iter().any(|e| e["event"] == "start" && e["id"] == "ok1"));
    assert_eq!(finish("ok1")["outcome"], "success");
    assert!(finish("ok1")["duration_ms"].as_f64().unwrap() >= 0.0);
    assert_eq!(finish("bad1")["outcome"], "schema_error");
    // The input by its digest only, never itself (an events file must not leak it).
    assert_eq!(finish("ok1")["input_sha256"], toolhost::input_sha256(&json!({"file_path": "a.txt"})));
    assert!(finish("ok1").get("input").is_none(), "{}", finish("ok1"));
    // Events never reach the model's results.
    assert!(!stdout(&o).contains("\"event\""));
}

#[test]
fn on_a_terminal_an_ask_is_a_question() {
    let ws = hello_workspace();
    let write = |name: &str| format!(r#"{{"file_path":"{name}","content":"yes\n"}}"#);

    let (code, screen) = run_on_a_terminal(ws.path(), |_| {}, &["call", "Write", &write("once.txt")], "1\n");
    assert_eq!(code, 0, "{screen}");
    assert!(screen.contains("permission needed for Write") && screen.contains("once.txt"), "{screen}");
    assert!(screen.contains("[1] allow once") && screen.contains("[3] deny"), "{screen}");
    assert!(screen.contains("✓ Write (toolu_cli): success"), "the live display resumes after the question: {screen}");
    assert_eq!(fs::read_to_string(ws.path().join("once.txt")).unwrap(), "yes\n");

    let (code, screen) = run_on_a_terminal(ws.path(), |_| {}, &["call", "Write", &write("no.txt")], "3\n");
    assert_eq!(code, 1, "{screen}");
    assert!(screen.contains("denied by the user"), "{screen}");
    assert!(!ws.path().join("no.txt").exists());

    // "Always" covers the rest of the run: two writes, one question.
    let turn = format!(
        "{}\n{}\n",
        json!({"type":"tool_use","id":"toolu_a","name":"Write","input":{"file_path":"a1.txt","content":"a"}}),
        json!({"type":"tool_use","id":"toolu_b","name":"Write","input":{"file_path":"a2.txt","content":"b"}}),
    );
    fs::write(ws.path().join("turn.jsonl"), turn).unwrap();
    let (code, screen) = run_on_a_terminal(ws.path(), |_| {}, &["run", "--jsonl", "turn.jsonl"], "2\n");
    assert_eq!(code, 0, "{screen}");
    assert_eq!(screen.matches("permission needed for Write").count(), 1, "{screen}");
    assert!(ws.path().join("a1.txt").exists() && ws.path().join("a2.txt").exists(), "{screen}");
}

#[test]
fn permission_flags_and_hook_failures_on_stderr() {
    let ws = hello_workspace();
    let write = r#"{"file_path":"new.txt","content":"x"}"#;
    let o = run(ws.path(), &["call", "Write", write]);
    assert_exit(&o, 1);
    assert!(stdout(&o).contains("--allow 'Write(new.txt)'"), "the denial names the flag to pass: {}", stdout(&o));

    let o = run(ws.path(), &["--allow", "Write(new.txt)", "--deny", "Write(*.lock)", "call", "Write", write]);
    assert_exit(&o, 0);
    let o = run(
        ws.path(),
        &["--allow", "Write", "--deny", "Write(*.lock)", "call", "Write", r#"{"file_path":"x.lock","content":"x"}"#],
    );
    assert_exit(&o, 1);
    assert!(stdout(&o).contains("by the rule Write(*.lock)"), "{}", stdout(&o));

    let o = run(ws.path(), &["--permission-mode", "plan", "call", "Write", write]);
    assert_exit(&o, 1);
    assert!(stdout(&o).contains("plan mode"), "{}", stdout(&o));

    let o = run(ws.path(), &["--permission-mode", "yolo", "list"]);
    assert_exit(&o, 2);
    assert!(stderr(&o).contains("unknown permission mode"), "{}", stderr(&o));
    let o = run(ws.path(), &["--allow", "Write(", "list"]);
    assert_exit(&o, 2);
    assert!(stderr(&o).contains("invalid permission rule"), "{}", stderr(&o));

    // A crashing hook is reported on stderr and the call still runs.
    fs::write(ws.path().join("toolhost.toml"), "[[hooks.pre_tool_use]]\ncommand = \"echo broken >&2; exit 3\"\n")
        .unwrap();
    // A hook added since the first start waits for the operator's word (pins).
    assert_exit(&run(ws.path(), &["--config", "toolhost.toml", "trust"]), 0);
    let o = run(ws.path(), &["--config", "toolhost.toml", "call", "Read", r#"{"file_path":"a.txt"}"#]);
    assert_exit(&o, 0);
    assert!(stderr(&o).contains("PreToolUse hook") && stderr(&o).contains("broken"), "{}", stderr(&o));
}

/// No silent fallback on the operator's input: a granted directory that does not exist is a
/// warning `list --json` shows; a `TOOLHOST_LOG` that does not parse is said; `inspect` does
/// not judge a signature under a default `[signatures]` when the config is broken, nor call a
/// signature it cannot read "unsigned".
#[test]
fn what_the_operator_wrote_is_never_replaced_by_a_default_silently() {
    let ws = workspace();
    fs::write(ws.path().join("toolhost.toml"), "[tools.Read]\ngrant = { fs_read = [\"missing\"] }\n").unwrap();
    let o = run(ws.path(), &["list", "--json"]);
    assert_exit(&o, 0);
    let v = json_out(&o);
    let read = v["tools"].as_array().unwrap().iter().find(|t| t["name"] == "Read").unwrap();
    let warnings = read["warnings"].to_string();
    assert!(warnings.contains("missing does not exist: not granted"), "{read}");

    let o = Command::new(binary())
        .args(["list"])
        .current_dir(ws.path())
        .env("TOOLHOST_CACHE_DIR", cache_dir())
        .env("TOOLHOST_LOG", "toolhost=[[[")
        .output()
        .unwrap();
    assert_exit(&o, 0);
    assert!(stderr(&o).contains("TOOLHOST_LOG=\"toolhost=[[[\" is not a log filter"), "{}", stderr(&o));

    let file = ws.path().join("read.wasm");
    fs::write(&file, toolhost_default_tools::get("Read").expect("the Read tool")).unwrap();
    let signer = |ws: &std::path::Path| {
        let o = run(ws, &["inspect", file.to_str().unwrap(), "--json"]);
        assert_exit(&o, 0);
        json_out(&o)["signer"].as_str().unwrap().to_string()
    };
    assert_eq!(signer(ws.path()), "unsigned");
    fs::create_dir(ws.path().join("read.wasm.sig")).unwrap();
    let s = signer(ws.path());
    assert!(s.starts_with("unknown: ") && s.contains("read.wasm.sig cannot be read"), "{s}");
    fs::remove_dir(ws.path().join("read.wasm.sig")).unwrap();
    fs::write(ws.path().join("toolhost.toml"), "[trust\n").unwrap();
    let s = signer(ws.path());
    assert!(s.starts_with("unknown: the config cannot be read"), "{s}");
}
