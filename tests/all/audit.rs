//! The audit log (`--audit FILE`, `[audit]`), through the real binary: one line per permission
//! decision and per finished call with the fields an auditor needs, inputs only as a hash
//! unless asked, rotation by size, a log no tool can write, and `toolhost audit` summaries.

use serde_json::{Value, json};
use std::fs;
use std::path::Path;
use toolhost_tests::cli::{assert_exit, run, run_with_stdin, stderr, stdout};
use toolhost_tests::{guests, workspace};

/// Every line of `file`, parsed (a line that is not JSON fails the test).
fn lines(file: &Path) -> Vec<Value> {
    fs::read_to_string(file)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect()
}

fn find<'a>(lines: &'a [Value], kind: &str, id: &str) -> &'a Value {
    lines.iter().find(|l| l["kind"] == kind && l["id"] == id).unwrap_or_else(|| panic!("no {kind} line for {id}"))
}

/// A workspace with `a.txt`, a config denying Write and logging to `audit.jsonl` with `extra`
/// in `[audit]`, after one turn: an allowed Read, a denied Write, a Read that fails.
fn audited_turn(extra: &str) -> (tempfile::TempDir, Vec<Value>) {
    let ws = workspace();
    fs::write(ws.path().join("a.txt"), "hello\nworld\n").unwrap();
    let toml = format!("[permissions]\ndeny = [\"Write\"]\n\n[audit]\nfile = \"audit.jsonl\"\n{extra}");
    fs::write(ws.path().join("toolhost.toml"), toml).unwrap();
    let turn = json!({"role": "assistant", "content": [
        {"type": "tool_use", "id": "ok1", "name": "Read", "input": {"file_path": "a.txt"}},
        {"type": "tool_use", "id": "deny1", "name": "Write", "input": {"file_path": "b.txt", "content": "SECRET-INPUT"}},
        {"type": "tool_use", "id": "err1", "name": "Read", "input": {"file_path": "missing.txt"}},
    ]});
    let o = run_with_stdin(ws.path(), &["run"], &turn.to_string());
    assert_exit(&o, 0);
    let log = lines(&ws.path().join("audit.jsonl"));
    (ws, log)
}

#[test]
fn a_turn_logs_each_decision_and_call_with_hashes_not_inputs() {
    let (ws, log) = audited_turn("");
    let text = fs::read_to_string(ws.path().join("audit.jsonl")).unwrap();
    assert!(!text.contains("SECRET-INPUT"), "no input without log_inputs: {text}");

    let allowed = find(&log, "decision", "ok1");
    assert_eq!((allowed["decision"].as_str(), allowed["tool"].as_str()), (Some("allow"), Some("Read")));
    assert!(allowed["by"].as_str().unwrap().contains("read-only"), "{allowed}");
    let denied = find(&log, "decision", "deny1");
    assert_eq!(denied["decision"], "deny");
    assert!(denied["by"].as_str().unwrap().contains("rule Write"), "names the rule: {denied}");

    let ok = find(&log, "call", "ok1");
    assert_eq!(ok["outcome"], "success");
    assert_eq!(ok["bytes_out"], "     1\thello\n     2\tworld".len());
    assert_eq!(ok["digest"].as_str().unwrap().len(), 64);
    assert_eq!(ok["input_sha256"], toolhost::input_sha256(&json!({"file_path": "a.txt"})));
    assert!(ok["duration_ms"].as_f64().unwrap() >= 0.0);
    assert!(ok["session"].as_str().is_some_and(|s| !s.is_empty()));
    assert!(ok["time"].as_str().unwrap().ends_with('Z'));
    assert_eq!(ok["hosts"], json!([]));
    assert!(ok.get("input").is_none());
    assert_eq!(find(&log, "call", "deny1")["outcome"], "permission_denied");
    let err = find(&log, "call", "err1");
    assert_ne!(err["outcome"], "success");
    // Two decisions (the failing Read was allowed too) plus three calls, nothing else.
    assert_eq!(log.len(), 6, "{log:?}");
}

#[test]
fn log_inputs_records_the_input_itself() {
    let (_ws, log) = audited_turn("log_inputs = true\n");
    assert_eq!(find(&log, "call", "deny1")["input"]["content"], "SECRET-INPUT");
}

#[test]
fn the_flag_wins_over_the_config_and_the_log_rotates_by_size() {
    let ws = workspace();
    fs::write(ws.path().join("a.txt"), "hello\n").unwrap();
    fs::write(ws.path().join("toolhost.toml"), "[audit]\nfile = \"unused.jsonl\"\nmax_bytes = 700\n").unwrap();
    fs::create_dir(ws.path().join("log")).unwrap();
    for _ in 0..7 {
        let o = run(ws.path(), &["--audit", "log/audit.jsonl", "call", "Read", r#"{"file_path":"a.txt"}"#]);
        assert_exit(&o, 0);
        assert!(!stderr(&o).contains("audit log"), "a rotation is not tampering: {}", stderr(&o));
    }
    assert!(!ws.path().join("unused.jsonl").exists());
    let base = ws.path().join("log/audit.jsonl");
    let mut total = 0;
    for name in ["audit.jsonl", "audit.jsonl.1", "audit.jsonl.2", "audit.jsonl.3"] {
        let file = ws.path().join("log").join(name);
        assert!(file.exists(), "{name} after rotations");
        assert!(fs::metadata(&file).unwrap().len() <= 700, "{name} is within max_bytes");
        let lines = lines(&file);
        assert!(lines.iter().all(|l| l["kind"] != "tamper"), "{lines:?}");
        total += lines.len();
    }
    assert!(!ws.path().join("log/audit.jsonl.4").exists(), "three rotated files are kept");
    assert!(total < 7 * 2, "the oldest lines were dropped: {total}");
    use std::os::unix::fs::PermissionsExt as _;
    assert_eq!(fs::metadata(&base).unwrap().permissions().mode() & 0o777, 0o600);
}

#[test]
fn a_tool_cannot_write_replace_or_plant_the_audit_log() {
    let ws = workspace();
    let ws_path = ws.path().canonicalize().unwrap();
    fs::create_dir(ws_path.join("tools")).unwrap();
    fs::write(ws_path.join("tools/hostile.wasm"), guests::HOSTILE).unwrap();
    fs::write(ws_path.join("decoy"), "{\"kind\":\"forged\"}\n").unwrap();
    let attacks = [
        json!({"op": "append", "path": "audit.jsonl", "content": "{\"kind\":\"forged\"}\n"}),
        json!({"op": "write", "path": "audit.jsonl", "content": ""}),
        json!({"op": "rename", "path": "decoy", "target": "audit.jsonl"}),
        json!({"op": "symlink", "path": "audit.jsonl.1", "target": "decoy"}),
        json!({"op": "remove", "path": "audit.jsonl"}),
    ];
    for attack in attacks {
        let input = attack.to_string();
        let args =
            ["--audit", "audit.jsonl", "--tools", "tools", "--permission-mode", "bypass", "call", "Hostile", &input];
        let out = run(&ws_path, &args);
        assert_exit(&out, 1);
        assert!(stdout(&out).contains("The sandbox refused"), "{input}: {}", stdout(&out));
    }
    let log = lines(&ws_path.join("audit.jsonl"));
    assert_eq!(log.iter().filter(|l| l["kind"] == "call").count(), 5, "every attack is logged: {log:?}");
    assert!(log.iter().all(|l| l["kind"] != "forged"));
    assert!(fs::symlink_metadata(ws_path.join("audit.jsonl.1")).is_err());
}

#[test]
fn a_link_at_the_log_is_not_followed() {
    let ws = workspace();
    fs::write(ws.path().join("target.txt"), "keep\n").unwrap();
    std::os::unix::fs::symlink("target.txt", ws.path().join("audit.jsonl")).unwrap();
    let o = run(ws.path(), &["--audit", "audit.jsonl", "list"]);
    assert_exit(&o, 2);
    assert!(stderr(&o).contains("a link is not followed"), "{}", stderr(&o));
    assert_eq!(fs::read_to_string(ws.path().join("target.txt")).unwrap(), "keep\n");
}

#[test]
fn audit_summarises_a_log_and_counts_broken_lines() {
    let (ws, _log) = audited_turn("");
    let file = ws.path().join("audit.jsonl");
    let o = run(ws.path(), &["audit", "audit.jsonl"]);
    assert_exit(&o, 0);
    let text = stdout(&o);
    assert!(text.contains("6 lines, 3 calls"), "{text}");
    assert!(text.contains("calls per tool:") && text.contains("2  Read") && text.contains("1  Write"), "{text}");
    assert!(text.contains("denials:") && text.contains("Write: denied by the rule Write"), "{text}");
    assert!(!text.contains("malformed"), "{text}");

    let mut broken = fs::read_to_string(&file).unwrap();
    broken.insert_str(0, "not json\n");
    broken.push_str(
        "{\"kind\":\"call\"}\n{\"time\":\"2026-01-01T00:00:00.000Z\",\"kind\":\"call\",\"tool\":\"X\",\"outc",
    );
    fs::write(&file, broken).unwrap();
    let o = run(ws.path(), &["audit", "audit.jsonl", "--json"]);
    assert_exit(&o, 0);
    let summary: Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(summary["malformed"], json!([1, 8, 9]));
    assert_eq!(summary["calls"], 3);
    assert_eq!(summary["calls_per_tool"], json!({"Read": 2, "Write": 1}));
    assert_eq!(summary["decisions"], json!({"allow": 2, "deny": 1}));
    assert_eq!(summary["errors"]["permission_denied"], 1);
    assert!(summary["bytes_out"].as_u64().unwrap() > "     1\thello\n     2\tworld".len() as u64, "{summary}");
    assert!(summary["first"].as_str().unwrap() <= summary["last"].as_str().unwrap());
    assert!(stderr(&o).contains("3 malformed line(s)"), "{}", stderr(&o));
}

#[test]
fn calls_record_the_hosts_they_reached_and_were_refused() {
    use toolhost_tests::server::Server;
    let ws = workspace();
    let server = Server::greeter();
    let other = Server::greeter();
    fs::create_dir(ws.path().join("tools")).unwrap();
    fs::write(ws.path().join("tools/net.wasm"), guests::NET).unwrap();
    let toml = format!("[tools.Net]\ngrant = {{ net = [\"127.0.0.1:{}\"] }}\n", server.port);
    fs::write(ws.path().join("toolhost.toml"), toml).unwrap();
    let base = ["--audit", "audit.jsonl", "--tools", "tools", "--permission-mode", "bypass", "call", "Net"];
    for port in [server.port, other.port] {
        let input = json!({"op": "tcp_connect", "host": "127.0.0.1", "port": port}).to_string();
        let mut args = base.to_vec();
        args.push(&input);
        run(ws.path(), &args);
    }
    let calls: Vec<Value> = lines(&ws.path().join("audit.jsonl")).into_iter().filter(|l| l["kind"] == "call").collect();
    assert_eq!(calls[0]["hosts"], json!([format!("127.0.0.1:{}", server.port)]), "{calls:?}");
    assert_eq!(calls[1]["hosts"], json!([format!("127.0.0.1:{} (refused)", other.port)]), "{calls:?}");
    let o = run(ws.path(), &["audit", "audit.jsonl", "--json"]);
    let summary: Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(summary["hosts"].as_object().unwrap().len(), 2, "{summary}");
}

#[test]
fn a_hook_block_and_an_unanswered_ask_are_logged_with_what_decided() {
    let ws = workspace();
    fs::write(ws.path().join("a.txt"), "hello\n").unwrap();
    let hook = "[[hooks.pre_tool_use]]\nmatcher = \"Write\"\ncommand = \"cat > /dev/null; echo frozen >&2; exit 2\"\n";
    fs::write(ws.path().join("toolhost.toml"), format!("[audit]\nfile = \"audit.jsonl\"\n\n{hook}")).unwrap();
    let turn = json!({"role": "assistant", "content": [
        {"type": "tool_use", "id": "hook1", "name": "Write", "input": {"file_path": "b.txt", "content": "x"}},
        {"type": "tool_use", "id": "ask1", "name": "Edit",
         "input": {"file_path": "a.txt", "old_string": "hello", "new_string": "bye"}},
    ]});
    // No terminal: the ask is a denial with no one to ask.
    let o = run_with_stdin(ws.path(), &["run"], &turn.to_string());
    assert_exit(&o, 0);
    let log = lines(&ws.path().join("audit.jsonl"));
    let hook = find(&log, "decision", "hook1");
    assert_eq!(hook["decision"], "deny");
    assert!(hook["by"].as_str().unwrap().contains("frozen"), "{hook}");
    assert_eq!(find(&log, "call", "hook1")["outcome"], "hook_blocked");
    let ask = find(&log, "decision", "ask1");
    assert_eq!((ask["decision"].as_str(), ask["answer"].as_str()), (Some("ask"), Some("no_one_to_ask")));
    assert!(ask["by"].as_str().unwrap().contains("no rule allows Edit"), "{ask}");
    assert_eq!(find(&log, "call", "ask1")["outcome"], "permission_denied");
    assert_eq!(fs::read_to_string(ws.path().join("a.txt")).unwrap(), "hello\n");
}

#[test]
fn a_trap_and_an_ask_answered_on_a_terminal_are_logged() {
    let ws = workspace();
    fs::write(ws.path().join("a.txt"), "hello\n").unwrap();
    fs::create_dir(ws.path().join("tools")).unwrap();
    fs::write(ws.path().join("tools/panic.wasm"), guests::PANIC).unwrap();
    fs::write(ws.path().join("toolhost.toml"), "[audit]\nfile = \"audit.jsonl\"\n").unwrap();

    // A tool that panics (a trap of the guest): its call line says how it ended.
    let o = toolhost_tests::cli::run(
        ws.path(),
        &["--tools", "tools", "--permission-mode", "bypass", "call", "Panic", "{}"],
    );
    assert_exit(&o, 1);
    let log = lines(&ws.path().join("audit.jsonl"));
    let call = log.iter().find(|l| l["kind"] == "call" && l["tool"] == "Panic").unwrap_or_else(|| panic!("{log:?}"));
    assert_eq!(call["outcome"], "panic", "{call}");
    assert!(call["digest"].as_str().is_some_and(|d| d.len() == 64), "{call}");

    // An ask answered "allow once" by a person at a terminal.
    let write = r#"{"file_path":"new.txt","content":"yes\n"}"#;
    let (code, screen) = toolhost_tests::cli::run_on_a_terminal(ws.path(), |_| {}, &["call", "Write", write], "1\n");
    assert_eq!(code, 0, "{screen}");
    assert_eq!(fs::read_to_string(ws.path().join("new.txt")).unwrap(), "yes\n");
    let log = lines(&ws.path().join("audit.jsonl"));
    let ask = log.iter().find(|l| l["kind"] == "decision" && l["tool"] == "Write").unwrap_or_else(|| panic!("{log:?}"));
    assert_eq!((ask["decision"].as_str(), ask["answer"].as_str()), (Some("ask"), Some("allow_once")), "{ask}");
    let call = log.iter().find(|l| l["kind"] == "call" && l["tool"] == "Write").unwrap();
    assert_eq!(call["outcome"], "success", "{call}");
}

/// Behind the guard, in depth: a log moved away, removed or replaced during a run (here by a
/// hook, which the guard does not stop: it stands for a guard bug) is put back whole, the
/// replacement is kept aside, and both stderr and the log say so. No line is lost.
#[test]
fn a_log_replaced_or_removed_during_a_run_is_restored_whole() {
    for (name, tamper, said) in [
        ("replaced", "mv audit.jsonl moved.jsonl\nprintf '{\"kind\":\"forged\"}\\n' > audit.jsonl\n", "was replaced"),
        ("removed", "rm audit.jsonl\n", "was removed"),
    ] {
        let ws = workspace();
        let ws_path = ws.path().canonicalize().unwrap();
        fs::write(ws_path.join("a.txt"), "hello\n").unwrap();
        fs::create_dir(ws_path.join("hooks")).unwrap();
        fs::write(ws_path.join("hooks/tamper.sh"), format!("cd \"$CLAUDE_PROJECT_DIR\"\n{tamper}")).unwrap();
        let toml = "[permissions]\nallow = [\"Write\"]\n\n[[hooks.pre_tool_use]]\nmatcher = \"Write\"\n\
                    command = \"sh hooks/tamper.sh\"\n";
        fs::write(ws_path.join("toolhost.toml"), toml).unwrap();
        let turn = json!({"role": "assistant", "content": [
            {"type": "tool_use", "id": "r1", "name": "Read", "input": {"file_path": "a.txt"}},
            {"type": "tool_use", "id": "w1", "name": "Write", "input": {"file_path": "b.txt", "content": "x"}},
        ]});
        let o = run_with_stdin(&ws_path, &["--audit", "audit.jsonl", "run"], &turn.to_string());
        assert_exit(&o, 0);
        assert!(stderr(&o).contains(said), "{name}: {}", stderr(&o));
        let log = lines(&ws_path.join("audit.jsonl"));
        for (kind, id) in [("decision", "r1"), ("call", "r1"), ("decision", "w1"), ("call", "w1")] {
            find(&log, kind, id);
        }
        let tamper: Vec<_> = log.iter().filter(|l| l["kind"] == "tamper").collect();
        assert_eq!(tamper.len(), 1, "{name}: {log:?}");
        assert!(tamper[0]["what"].as_str().unwrap().contains(said), "{name}: {tamper:?}");
        assert!(log.iter().all(|l| l["kind"] != "forged"), "{name}: {log:?}");
        let summary = run(&ws_path, &["audit", "audit.jsonl", "--json"]);
        let summary: Value = serde_json::from_str(&stdout(&summary)).unwrap();
        assert_eq!(summary["calls"], 2);
        assert_eq!(summary["malformed"], json!([]));
        assert!(summary["tampering"][0].as_str().unwrap().contains(said), "{summary}");
        let aside: Vec<_> = fs::read_dir(&ws_path)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .filter(|n| n.starts_with("audit.jsonl.replaced-"))
            .collect();
        match name {
            "replaced" => {
                assert_eq!(aside.len(), 1, "{aside:?}");
                assert!(fs::read_to_string(ws_path.join(&aside[0])).unwrap().contains("forged"));
            }
            _ => assert!(aside.is_empty(), "{aside:?}"),
        }
    }
}

/// A log replaced or cut short between two runs is reported by the next start (on stderr and
/// as the log's first new line); an untouched log, or one rotated by toolhost, is not.
#[test]
fn a_log_replaced_or_shortened_between_runs_is_reported_at_the_next_start() {
    let ws = workspace();
    fs::write(ws.path().join("a.txt"), "hello\n").unwrap();
    let log = ws.path().join("audit.jsonl");
    let call = |ws: &Path| run(ws, &["--audit", "audit.jsonl", "call", "Read", r#"{"file_path":"a.txt"}"#]);
    let first = call(ws.path());
    assert_exit(&first, 0);
    let again = call(ws.path());
    assert_exit(&again, 0);
    assert!(!stderr(&again).contains("audit log"), "an untouched log: {}", stderr(&again));

    // Replaced: a new file at the name, as long as the old one (the file system may give it the
    // old inode: the content tells).
    let len = fs::metadata(&log).unwrap().len() as usize;
    fs::remove_file(&log).unwrap();
    fs::write(&log, format!("{}\n", " ".repeat(len - 1))).unwrap();
    let o = call(ws.path());
    assert_exit(&o, 0);
    assert!(stderr(&o).contains("since the last run"), "{}", stderr(&o));
    fs::write(&log, fs::read_to_string(&log).unwrap().trim_start()).unwrap();
    assert_eq!(lines(&log)[0]["kind"], "tamper");

    // Shortened: the same file, truncated.
    fs::write(&log, "").unwrap();
    let o = call(ws.path());
    assert_exit(&o, 0);
    assert!(stderr(&o).contains("was shortened since the last run"), "{}", stderr(&o));
    assert!(lines(&log)[0]["what"].as_str().unwrap().contains("shortened"));

    let o = call(ws.path());
    assert!(!stderr(&o).contains("audit log"), "reported once: {}", stderr(&o));
}
