//! `toolhost test`: each broken part of the contract is found in a component broken that way
//! (and only there), the failing input is shrunk to the least one, and the printed command
//! reproduces it; sound tools (the default tools, `Noop`) pass with no error; cases check
//! outputs and `--update` records them.

use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use toolhost_tests::cli::{assert_exit, command, run, stdout};
use toolhost_tests::guests;

/// `bytes` written as DIR/NAME.wasm in a directory of its own.
fn component(dir: &Path, name: &str, bytes: &[u8]) -> PathBuf {
    let sub = dir.join(name);
    std::fs::create_dir_all(&sub).expect("dir");
    let file = sub.join(format!("{name}.wasm"));
    std::fs::write(&file, bytes).expect("write component");
    file
}

/// `toolhost test ARGS --json`: its exit code and report.
fn test_json(ws: &Path, args: &[&str]) -> (i32, Value) {
    let mut all = vec!["test", "--json"];
    all.extend_from_slice(args);
    let o = run(ws, &all);
    let report: Value = serde_json::from_str(&stdout(&o))
        .unwrap_or_else(|e| panic!("not a JSON report ({e}):\n{}\n{}", stdout(&o), String::from_utf8_lossy(&o.stderr)));
    (o.status.code().unwrap_or(-1), report)
}

fn findings(report: &Value) -> Vec<Value> {
    report["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|t| t["findings"].as_array().cloned().unwrap_or_default())
        .collect()
}

fn errors(report: &Value) -> Vec<Value> {
    findings(report).into_iter().filter(|f| f["severity"] == "error").collect()
}

/// Run a printed `reproduce:` command line with this build's binary, in `ws`.
fn reproduce(ws: &Path, line: &str) -> std::process::Output {
    let rest = line.strip_prefix("toolhost ").expect("a toolhost command line");
    let rest = rest.split(" (is-concurrency-safe").next().unwrap_or(rest);
    std::process::Command::new("sh")
        .arg("-c")
        .arg(format!("\"$TOOLHOST\" --workspace . {rest}"))
        .current_dir(ws)
        .env("TOOLHOST", toolhost_tests::cli::binary())
        .env("TOOLHOST_CACHE_DIR", toolhost_tests::cli::cache_dir())
        .output()
        .expect("run the reproducing command")
}

#[test]
fn each_broken_contract_is_found_shrunk_and_reproduced() {
    let ws = tempfile::tempdir().expect("tempdir");
    let ws = ws.path();

    // is-concurrency-safe that answers differently each time.
    let file = component(ws, "flaky", guests::FLAKY_SAFE);
    let (code, report) = test_json(ws, &[file.to_str().unwrap(), "--count", "20"]);
    assert_eq!(code, 1, "{report:#}");
    let errs = errors(&report);
    assert_eq!(errs.len(), 1, "one error only: {errs:#?}");
    assert_eq!(errs[0]["check"], "determinism");
    assert!(errs[0]["message"].as_str().unwrap().contains("`is-concurrency-safe` answered"), "{errs:#?}");

    // validate that panics for count > 900: shrunk to exactly 901, and reproduced.
    let file = component(ws, "trapv", guests::TRAP_VALIDATE);
    let (code, report) = test_json(ws, &[file.to_str().unwrap(), "--count", "60"]);
    assert_eq!(code, 1, "{report:#}");
    let errs = errors(&report);
    assert_eq!(errs.len(), 1, "{errs:#?}");
    assert_eq!(errs[0]["check"], "validate");
    assert!(errs[0]["message"].as_str().unwrap().starts_with("panicked"), "{errs:#?}");
    assert_eq!(errs[0]["input"], json!({"count": 901}), "the least failing input");
    let o = reproduce(ws, errs[0]["reproduce"].as_str().unwrap());
    assert_exit(&o, 1);
    assert!(stdout(&o).contains("in `validate`"), "{}", stdout(&o));

    // An example the schema refuses: found with no call needed, the good example is not.
    let file = component(ws, "example", guests::BAD_EXAMPLE);
    let (code, report) = test_json(ws, &[file.to_str().unwrap(), "--count", "10"]);
    assert_eq!(code, 1, "{report:#}");
    let errs = errors(&report);
    assert_eq!(errs.len(), 1, "{errs:#?}");
    assert_eq!(errs[0]["check"], "examples");
    assert_eq!(errs[0]["input"], json!({"query": "cats", "limit": "ten"}));

    // Recursion as deep as the input: a stack overflow, shrunk to the least depth that
    // overflows (one less does not), and reproduced.
    let file = component(ws, "deep", guests::DEEP_INPUT);
    let (code, report) = test_json(ws, &[file.to_str().unwrap(), "--count", "30"]);
    assert_eq!(code, 1, "{report:#}");
    let errs = errors(&report);
    assert_eq!(errs.len(), 1, "{errs:#?}");
    assert_eq!(errs[0]["check"], "call");
    assert!(errs[0]["message"].as_str().unwrap().starts_with("overflowed its stack"), "{errs:#?}");
    let depth = errs[0]["input"]["depth"].as_u64().expect("a depth");
    assert!(depth > 100, "a real threshold, not a guess: {depth}");
    let o = reproduce(ws, errs[0]["reproduce"].as_str().unwrap());
    assert_exit(&o, 1);
    let call = |d: u64| {
        let dir = file.parent().unwrap().to_str().unwrap().to_string();
        run(
            ws,
            &["--tools", &dir, "--no-default-tools", "call", "DeepInput", &json!({"depth": d}).to_string(), "--json"],
        )
    };
    let at: Value = serde_json::from_str(&stdout(&call(depth))).expect("json");
    assert_eq!(at["is_error"], true);
    // Near the threshold: 1% less does not overflow (not one less: where the stack ends varies
    // by a frame or so between processes).
    let less = depth - depth / 100;
    let below: Value = serde_json::from_str(&stdout(&call(less))).expect("json");
    assert_ne!(below["is_error"], true, "depth {less} should not overflow: {below}");
}

#[test]
fn sound_tools_pass_with_no_error() {
    let ws = tempfile::tempdir().expect("tempdir");
    let ws = ws.path();
    let mut files = vec![component(ws, "noop", guests::NOOP)];
    for name in ["Read", "Write", "Edit", "Glob", "Grep", "LS", "WebFetch"] {
        files.push(component(ws, name, toolhost_default_tools::get(name).expect("default tool")));
    }
    for file in files {
        let (code, report) = test_json(ws, &[file.to_str().unwrap(), "--count", "40", "--seed", "7"]);
        assert_eq!(errors(&report), Vec::<Value>::new(), "{}: {report:#}", file.display());
        assert_eq!(code, 0);
        // Every generated input reached the tool: `validate` twice each (calls follow only
        // what `validate` accepts), and the schema refused near misses.
        let counts = &report["tools"][0]["counts"];
        let generated = counts["generated"].as_u64().unwrap();
        assert!(generated >= 20, "{}: {counts}", file.display());
        assert!(counts["probes"].as_u64().unwrap() >= 2 * generated, "{}: {counts}", file.display());
        assert!(counts["calls"].as_u64().unwrap() > 0, "{}: {counts}", file.display());
        assert!(counts["near_misses_refused"].as_u64().unwrap() > 0, "{}: {counts}", file.display());
    }
}

#[test]
fn cases_check_outputs_and_update_records_them() {
    let ws = tempfile::tempdir().expect("tempdir");
    let project = ws.path().join("project");
    std::fs::create_dir_all(project.join("dist")).expect("dist");
    std::fs::write(project.join("dist/Read.wasm"), toolhost_default_tools::get("Read").unwrap()).expect("write");
    let cases = r#"# Cases for Read.

[[case]]
name = "reads a laid-out file"
input = { file_path = "notes/a.txt" }
files = { "notes/a.txt" = "alpha\nbeta\n" }
[case.expect]
contains = ["alpha", "beta"]
is_error = false

[[case]]
name = "expects the wrong text"
input = { file_path = "b.txt" }
files = { "b.txt" = "gamma\n" }
[case.expect]
contains = "delta"

[[case]]
name = "an input the schema refuses"
input = { file_path = 5 }

[[case]]
name = "a misspelt tool"
tool = "Reed"
input = { file_path = "b.txt" }
"#;
    std::fs::write(project.join("toolhost-test.toml"), cases).expect("write cases");
    let (code, report) = test_json(ws.path(), &[project.to_str().unwrap(), "--count", "5"]);
    assert_eq!(code, 1, "{report:#}");
    let errs = errors(&report);
    let messages: Vec<&str> = errs.iter().map(|f| f["message"].as_str().unwrap()).collect();
    assert_eq!(errs.len(), 3, "{messages:#?}");
    assert!(
        messages[0].contains("expects the wrong text") && messages[0].contains("does not contain \"delta\""),
        "{messages:#?}"
    );
    assert!(messages[1].contains("an input the schema refuses") && messages[1].contains("schema"), "{messages:#?}");
    assert!(messages[2].contains("names tool \"Reed\", which no tested component has"), "{messages:#?}");
    assert_eq!(errs[2]["fix"], "name one of: Read");
    assert_eq!(report["tools"][0]["counts"]["cases"], 3);

    // --update records what each case returned, the comment staying; what else a case asserts
    // is still checked (a wrong `contains` and the refused input still fail the run).
    let o =
        command(ws.path()).args(["test", project.to_str().unwrap(), "--count", "5", "--update"]).output().expect("run");
    assert_exit(&o, 1);
    assert!(stdout(&o).contains("does not contain \"delta\""), "{}", stdout(&o));
    let updated = std::fs::read_to_string(project.join("toolhost-test.toml")).expect("read");
    assert!(updated.starts_with("# Cases for Read."), "{updated}");
    assert!(updated.contains("gamma"), "{updated}");
    // The refused input now expects its outcome; the misspelt tool is corrected.
    assert_eq!(updated.matches("is_error = true").count(), 1, "{updated}");
    let fixed = updated
        .replace("contains = \"delta\"\n", "")
        .replace("is_error = true", "is_error = true\noutcome = \"schema_error\"")
        .replace("tool = \"Reed\"", "tool = \"Read\"");
    std::fs::write(project.join("toolhost-test.toml"), fixed).expect("write");
    let (code, report) = test_json(ws.path(), &[project.to_str().unwrap(), "--count", "5"]);
    assert_eq!(code, 0, "{report:#}");
}

/// A project for the default `Read` tool whose policy file and cases ask for `secret/` beside
/// it (outside any scratch workspace), which holds a secret: the workspace and the secret's
/// path.
fn project_asking_for_a_secret() -> (tempfile::TempDir, PathBuf, PathBuf) {
    let ws = tempfile::tempdir().expect("tempdir");
    let secret = ws.path().join("secret");
    std::fs::create_dir_all(&secret).expect("secret dir");
    let key = secret.join("key.txt");
    std::fs::write(&key, "TOP SECRET: hunter2\n").expect("write the secret");
    let project = ws.path().join("project");
    std::fs::create_dir_all(project.join("dist")).expect("dist");
    std::fs::write(project.join("dist/Read.wasm"), toolhost_default_tools::get("Read").unwrap()).expect("write");
    let policy = format!(
        "version: \"1.0\"\npermissions:\n  storage:\n    allow:\n      - uri: \"fs://{}\"\n        access: [read]\n  environment:\n    allow:\n      - key: \"HOME\"\n",
        secret.display()
    );
    std::fs::write(project.join("dist/Read.policy.yaml"), policy).expect("write the policy file");
    let cases = format!(
        r#"[[case]]
name = "reads the secret"
input = {{ file_path = "{key}" }}
[case.expect]
contains = "hunter2"

[[case]]
name = "grants itself the secret"
input = {{ file_path = "{key}" }}
grant = {{ fs_read = ["{secret}", "."] }}
[case.expect]
contains = "hunter2"
"#,
        key = key.display(),
        secret = secret.display()
    );
    std::fs::write(project.join("toolhost-test.toml"), cases).expect("write cases");
    (ws, project, secret)
}

#[test]
fn what_a_component_asks_for_beyond_the_scratch_workspace_is_reported_not_applied() {
    let (ws, project, secret) = project_asking_for_a_secret();
    let o = run(ws.path(), &["test", "--json", project.to_str().unwrap(), "--count", "5"]);
    assert!(!stdout(&o).contains("TOP SECRET"), "the secret was read: {}", stdout(&o));
    let report: Value = serde_json::from_str(&stdout(&o)).expect("a JSON report");
    assert_eq!(o.status.code(), Some(1), "{report:#}");
    let errs = errors(&report);
    let messages: Vec<&str> = errs.iter().map(|f| f["message"].as_str().unwrap()).collect();
    assert_eq!(errs.len(), 2, "{messages:#?}");
    assert!(messages.iter().all(|m| m.contains("does not contain \"hunter2\"")), "{messages:#?}");

    let grants: Vec<Value> = findings(&report).into_iter().filter(|f| f["check"] == "grant").collect();
    assert_eq!(grants.len(), 2, "{grants:#?}");
    let flag = format!("--grant fs_read={}", secret.display());
    let from_policy = grants.iter().find(|f| f["message"].as_str().unwrap().contains("Read.policy.yaml"));
    let from_policy = from_policy.unwrap_or_else(|| panic!("{grants:#?}"));
    assert_eq!(from_policy["severity"], "warning");
    let message = from_policy["message"].as_str().unwrap();
    assert!(message.contains("not applied") && message.contains(&secret.display().to_string()), "{message}");
    let fix = from_policy["fix"].as_str().unwrap();
    assert!(fix.contains(&flag) && fix.contains("--grant env=HOME"), "{fix}");
    let from_case = grants.iter().find(|f| f["message"].as_str().unwrap().contains("grants itself the secret"));
    let from_case = from_case.unwrap_or_else(|| panic!("{grants:#?}"));
    assert!(from_case["fix"].as_str().unwrap().contains(&flag), "{from_case:#}");
    // The workspace the case asked for (".") was applied: only the secret is listed.
    assert!(!from_case["message"].as_str().unwrap().contains("\".\""), "{from_case:#}");
}

#[test]
fn what_the_person_grants_on_purpose_is_applied() {
    let (ws, project, _secret) = project_asking_for_a_secret();
    // Relative to the current directory (the test runs in `ws`).
    let (code, report) =
        test_json(ws.path(), &[project.to_str().unwrap(), "--count", "5", "--grant", "fs_read=secret"]);
    assert_eq!(errors(&report), Vec::<Value>::new(), "both cases read the secret: {report:#}");
    assert_eq!(code, 0);
    // What `--grant` gave is not reported; the host variable the policy file asks for still is.
    let grants: Vec<Value> = findings(&report).into_iter().filter(|f| f["check"] == "grant").collect();
    assert_eq!(grants.len(), 1, "{grants:#?}");
    assert_eq!(grants[0]["fix"].as_str().unwrap().matches("--grant").count(), 1, "{grants:#?}");
    assert!(grants[0]["fix"].as_str().unwrap().contains("--grant env=HOME"), "{grants:#?}");

    let o = run(ws.path(), &["test", "--grant", "disk=/"]);
    toolhost_tests::cli::fails(&o, "fs_read=PATH");
}

#[test]
fn nothing_to_test_is_a_usage_error() {
    let ws = tempfile::tempdir().expect("tempdir");
    let o = run(ws.path(), &["test"]);
    toolhost_tests::cli::fails(&o, "no component");
    std::fs::write(ws.path().join("toolhost-test.toml"), "[[case]]\nname = 1\n").expect("write");
    std::fs::create_dir(ws.path().join("dist")).expect("dist");
    std::fs::write(ws.path().join("dist/noop.wasm"), guests::NOOP).expect("write");
    let o = run(ws.path(), &["test", "--count", "1"]);
    toolhost_tests::cli::fails(&o, "toolhost-test.toml");
}

/// A function component whose `explode` traps two calls deep, in functions that have names
/// (its name section), so a backtrace can say where.
fn named_trap_component() -> Vec<u8> {
    wat::parse_str(
        r#"(component
             (core module $m
               (func $inner (param i32) (result i32) unreachable)
               (func $outer (param i32) (result i32) local.get 0 call $inner i32.const 1 i32.add)
               (func (export "explode") (param i32) (result i32) local.get 0 call $outer))
             (core instance $i (instantiate $m))
             (func (export "explode") (param "n" u32) (result u32) (canon lift (core func $i "explode"))))"#,
    )
    .expect("valid component text")
}

#[test]
fn verbose_calls_and_traces_show_steps_stderr_progress_and_the_guest_backtrace() {
    let ws = tempfile::tempdir().expect("tempdir");
    let tools = ws.path().join("tools");
    std::fs::create_dir(&tools).expect("dir");
    std::fs::write(tools.join("panic.wasm"), guests::PANIC).expect("write");
    std::fs::write(tools.join("progress.wasm"), guests::PROGRESS).expect("write");
    std::fs::write(tools.join("explode.wasm"), named_trap_component()).expect("write");
    let trace = ws.path().join("trace.jsonl");
    let call = |tool: &str, input: &str| {
        let trace = trace.to_str().unwrap();
        let args = [
            "-v",
            "--tools",
            "tools",
            "--no-default-tools",
            "--permission-mode",
            "bypass",
            "call",
            tool,
            input,
            "--trace",
            trace,
        ];
        let o = run(ws.path(), &args);
        let line: Value =
            serde_json::from_str(std::fs::read_to_string(trace).expect("trace written").trim()).expect("one JSON line");
        (String::from_utf8_lossy(&o.stderr).into_owned(), line)
    };

    let (stderr, line) = call("Panic", "{}");
    assert_eq!(line["outcome"], "panic");
    let steps: Vec<&str> = line["steps"].as_array().unwrap().iter().map(|s| s["step"].as_str().unwrap()).collect();
    assert_eq!(steps, ["schema", "validate", "hooks_before", "permission", "instantiate", "call", "hooks_after"]);
    assert!(line["stderr"].as_str().unwrap().contains("boom: the tool panicked on purpose"), "{line}");
    assert!(stderr.contains("steps: schema") && stderr.contains("| ") && stderr.contains("boom"), "{stderr}");

    let (_, line) = call("Progress", "{}");
    assert_eq!(line["outcome"], "success");
    assert_eq!(line["progress"], json!(["step 1", "step 2"]));

    let (stderr, line) = call("explode", r#"{"n":1}"#);
    assert_eq!(line["outcome"], "trap");
    let frames: Vec<&str> = line["backtrace"].as_array().unwrap().iter().map(|f| f.as_str().unwrap()).collect();
    assert!(frames[0].starts_with("inner") && frames[1].starts_with("outer"), "innermost first, by name: {frames:?}");
    assert!(stderr.contains("guest backtrace") && stderr.contains("inner"), "{stderr}");
}
