//! The example tools in Python (DataQuery), JavaScript (MarkdownOutline) and C (WordCount),
//! loaded from `target/guests/` through [`ToolSource::file`] and called through the whole
//! pipeline: what they declare, a happy path, a schema failure, a `validate` refusal, a guest
//! error or trap mapped to an error result, and the file grant.
//!
//! The components are built by `examples/guests/build.sh` (run by `.ci/run` and by the README's
//! test command before `cargo test`). When one is missing, these tests fail and say so: they
//! never skip.

use serde_json::{Value, json};
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use toolhost::policy::Capability;
use toolhost::{OutcomeKind, Runtime, Session, ToolResult, ToolSource, ToolUse};
use toolhost_tests::{call, config, engine, workspace};

const SECRET: &str = "TOP-SECRET-5e1d";

/// Where `examples/guests/build.sh` writes the components (`$TOOLHOST_GUESTS_DIR` overrides).
fn guests_dir() -> PathBuf {
    match std::env::var_os("TOOLHOST_GUESTS_DIR") {
        Some(d) => PathBuf::from(d),
        None => Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/guests"),
    }
}

/// The on-disk compile cache of the example components (the interpreters take seconds to
/// compile; later test runs load them in milliseconds).
pub(crate) fn example_cache() -> PathBuf {
    guests_dir().join("cache")
}

/// The built example component `file` (e.g. `dataquery.wasm`), or a failure that says how to
/// build it.
pub(crate) fn example(file: &str) -> ToolSource {
    let path = guests_dir().join(file);
    assert!(
        path.is_file(),
        "{} is missing: build the Python, JavaScript and C example tools first with `examples/guests/build.sh` \
         (it installs their toolchains if needed; .ci/run and the README's test command run it before `cargo test`)",
        path.display()
    );
    ToolSource::file(&path).expect("read the component")
}

/// A workspace with data files for all three tools, and a directory beside it with a secret.
fn fixture() -> (tempfile::TempDir, tempfile::TempDir) {
    let ws = workspace();
    let p = ws.path();
    fs::write(
        p.join("people.json"),
        r#"{"people":[{"name":"ann","age":31,"city":"Oslo"},{"name":"bob","age":25},{"name":"cy","age":40,"city":"Rome"}]}"#,
    )
    .unwrap();
    fs::write(p.join("people.csv"), "name,age\nann,31\nbob,25\ncy,40\n").unwrap();
    fs::write(p.join("broken.json"), "{\"a\": [1,,]}").unwrap();
    fs::write(
        p.join("doc.md"),
        "---\ntitle: x\n---\n# Guide\n\nIntro.\n\n## Install\n\n```sh\n# not a heading\n```\n\nUsage\n-----\n\n### Flags ###\n",
    )
    .unwrap();
    fs::write(p.join("latin1.md"), b"# Caf\xe9\n").unwrap();
    fs::create_dir(p.join("notes")).unwrap();
    fs::write(p.join("notes/a.txt"), "the cat and the dog\n").unwrap();
    fs::write(p.join("notes/b.txt"), "hello world\nthe end\n").unwrap();
    fs::write(p.join("notes/.hidden"), "not counted\n").unwrap();
    let outside = workspace();
    for name in ["secret.json", "secret.md", "secret.txt"] {
        fs::write(outside.path().join(name), format!("[\"{SECRET}\"]")).unwrap();
    }
    (ws, outside)
}

async fn one(file: &str, ws: &Path, toml: &str) -> Runtime {
    warm(file).await;
    runtime_with(ws, toml, &[file]).await
}

/// A runtime (permission mode bypass, as in `toolhost_tests::runtime`) with the examples
/// `files`, compiled through an on-disk cache kept beside them: only the first test run after
/// a rebuild pays for Cranelift (seconds for the interpreters); later runs load in milliseconds.
async fn runtime_with(ws: &Path, toml: &str, files: &[&str]) -> Runtime {
    let builder = Runtime::builder()
        .permission_mode(toolhost::policy::Mode::Bypass)
        .engine(engine())
        .workspace(ws)
        .config(config(toml))
        .cache_dir(example_cache());
    let mut rt = builder.build().expect("runtime");
    for file in files {
        rt.load(example(file)).await.unwrap_or_else(|e| panic!("loading {file}: {e}"));
    }
    rt
}

/// Compile `file` once per process before the tests that use it run in parallel: the shared
/// engine remembers what it compiled, but concurrent first loads would each compile the 12-18 MB
/// interpreter components with Cranelift, all at once.
async fn warm(file: &str) {
    static WARMED: tokio::sync::Mutex<Vec<String>> = tokio::sync::Mutex::const_new(Vec::new());
    let mut warmed = WARMED.lock().await;
    if !warmed.iter().any(|f| f == file) {
        let ws = workspace();
        runtime_with(ws.path(), "", &[file]).await;
        warmed.push(file.to_string());
    }
}

async fn run(rt: &Runtime, tool: &str, input: Value) -> ToolResult {
    call(rt, &Session::new(), tool, input).await
}

fn ok(result: &ToolResult) -> String {
    assert!(!result.is_error, "expected success, got {result:?}");
    assert_eq!(result.outcome, OutcomeKind::Success);
    result.text()
}

fn failed(result: &ToolResult, kind: OutcomeKind, needle: &str) {
    assert!(result.is_error, "expected an error result, got {result:?}");
    assert_eq!(result.outcome, kind, "{result:?}");
    assert!(result.text().contains(needle), "expected {needle:?} in {:?}", result.text());
    assert!(!result.text().contains(SECRET), "the secret leaked: {result:?}");
}

/// What every example declares: a path subject, read-only, a ceiling of reading the workspace,
/// and concurrency-safe calls.
async fn declares_a_read_only_workspace_tool(file: &str, tool: &str, input: Value) {
    let (ws, _outside) = fixture();
    let rt = one(file, ws.path(), "").await;
    let info = &rt.tool(tool).unwrap_or_else(|| panic!("{file} loads as {tool}")).info;
    assert_eq!(info.permission_subject.as_deref(), Some("/path"));
    assert!(info.read_only);
    assert_eq!(info.capabilities, [Capability::FsRead(".".into())]);
    assert_eq!(info.input_schema["type"], "object");
    assert_eq!(info.input_schema["required"], json!(["path"]));
    assert!(rt.check(ToolUse::new("t", tool, input)).await.is_concurrency_safe(), "{tool} is concurrency-safe");
}

// --- Python: DataQuery -----------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread")]
async fn python_dataquery_declares_itself() {
    declares_a_read_only_workspace_tool("dataquery.wasm", "DataQuery", json!({"path": "people.csv"})).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn python_dataquery_filters_projects_and_sorts() {
    let (ws, _outside) = fixture();
    let rt = one("dataquery.wasm", ws.path(), "").await;
    let out = ok(&run(
        &rt,
        "DataQuery",
        json!({"path": "people.json", "select": "/people", "where": [{"field": "age", "op": ">", "value": 26}],
               "fields": ["name"], "sort_by": "age", "descending": true}),
    )
    .await);
    assert!(out.starts_with("2 of 3 records matched\n"), "{out}");
    let rows: Value = serde_json::from_str(out.split_once('\n').unwrap().1).unwrap();
    assert_eq!(rows, json!([{"name": "cy"}, {"name": "ann"}]));

    // CSV fields compare as numbers when they look like numbers; an absolute path works too.
    let abs = rt.workspace().join("people.csv").display().to_string();
    let out =
        ok(&run(&rt, "DataQuery", json!({"path": abs, "where": [{"field": "age", "op": "<", "value": 30}]})).await);
    assert!(out.contains("\"name\": \"bob\"") && !out.contains("ann"), "{out}");
}

#[tokio::test(flavor = "multi_thread")]
async fn python_dataquery_schema_and_validate_failures() {
    let (ws, _outside) = fixture();
    let rt = one("dataquery.wasm", ws.path(), "").await;
    let r = run(&rt, "DataQuery", json!({"path": "people.csv", "limit": 0})).await;
    failed(&r, OutcomeKind::SchemaError, "/limit");
    let r =
        run(&rt, "DataQuery", json!({"path": "people.csv", "where": [{"field": "age", "op": "~", "value": 1}]})).await;
    failed(&r, OutcomeKind::SchemaError, "/where/0/op");

    let r = run(&rt, "DataQuery", json!({"path": "people.txt"})).await;
    failed(&r, OutcomeKind::ValidateError, "cannot tell the format of 'people.txt'");
    let r = run(&rt, "DataQuery", json!({"path": "people.csv", "select": "/people"})).await;
    failed(&r, OutcomeKind::ValidateError, "\"select\" only applies to JSON documents");
    let r = run(
        &rt,
        "DataQuery",
        json!({"path": "people.json", "where": [{"field": "name", "op": "contains", "value": 3}]}),
    )
    .await;
    failed(&r, OutcomeKind::ValidateError, "\"contains\" needs a string value");
}

#[tokio::test(flavor = "multi_thread")]
async fn python_dataquery_errors_and_traps_become_error_results() {
    let (ws, _outside) = fixture();
    // Nesting deep enough to overflow the interpreter's wasm stack inside json.loads.
    fs::write(ws.path().join("deep.json"), format!("{}{}", "[".repeat(50_000), "]".repeat(50_000))).unwrap();
    let rt = one("dataquery.wasm", ws.path(), "").await;
    // `raise Err(ToolError_InvalidInput(...))` in Python: the message, as written.
    let r = run(&rt, "DataQuery", json!({"path": "broken.json"})).await;
    failed(&r, OutcomeKind::InvalidInput, "broken.json: not valid JSON: Expecting value: line 1 column 10");
    let r = run(&rt, "DataQuery", json!({"path": "people.json", "select": "/nobody"})).await;
    failed(&r, OutcomeKind::InvalidInput, "no 'nobody' here");
    // A trap inside the interpreter is classified, and the next call is unaffected.
    let r = run(&rt, "DataQuery", json!({"path": "deep.json"})).await;
    failed(&r, OutcomeKind::StackOverflow, "overflowed its stack");
    ok(&run(&rt, "DataQuery", json!({"path": "people.csv"})).await);
}

#[tokio::test(flavor = "multi_thread")]
async fn python_dataquery_reads_only_inside_its_grant() {
    let (ws, outside) = fixture();
    let secret = outside.path().canonicalize().unwrap().join("secret.json").display().to_string();
    let rt = one("dataquery.wasm", ws.path(), "").await;
    failed(&run(&rt, "DataQuery", json!({"path": secret})).await, OutcomeKind::Denied, "outside the workspace");
    let name = outside.path().file_name().unwrap().to_str().unwrap();
    let r = run(&rt, "DataQuery", json!({"path": format!("../{name}/secret.json")})).await;
    assert!(r.is_error && !r.text().contains(SECRET), "{r:?}");
    ok(&run(&rt, "DataQuery", json!({"path": "people.csv"})).await);
}

// --- JavaScript: MarkdownOutline ---------------------------------------------------------------

#[tokio::test(flavor = "multi_thread")]
async fn js_outline_declares_itself() {
    declares_a_read_only_workspace_tool("outline.wasm", "MarkdownOutline", json!({"path": "doc.md"})).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn js_outline_lists_headings() {
    let (ws, _outside) = fixture();
    let rt = one("outline.wasm", ws.path(), "").await;
    let out = ok(&run(&rt, "MarkdownOutline", json!({"path": "doc.md"})).await);
    assert_eq!(
        out,
        "doc.md: 4 headings\n- Guide (line 4, #guide)\n  - Install (line 8, #install)\n  - Usage (line 14, #usage)\n    - Flags (line 17, #flags)"
    );
    let abs = rt.workspace().join("doc.md").display().to_string();
    let out = ok(&run(&rt, "MarkdownOutline", json!({"path": abs, "max_depth": 1, "format": "json"})).await);
    assert_eq!(
        serde_json::from_str::<Value>(&out).unwrap(),
        json!([{"level": 1, "title": "Guide", "line": 4, "anchor": "guide"}])
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn js_outline_schema_and_validate_failures() {
    let (ws, _outside) = fixture();
    let rt = one("outline.wasm", ws.path(), "").await;
    failed(
        &run(&rt, "MarkdownOutline", json!({"path": "doc.md", "max_depth": 7})).await,
        OutcomeKind::SchemaError,
        "/max_depth",
    );
    failed(&run(&rt, "MarkdownOutline", json!({"file": "doc.md"})).await, OutcomeKind::SchemaError, "path");
    failed(
        &run(&rt, "MarkdownOutline", json!({"path": "notes/a.txt"})).await,
        OutcomeKind::ValidateError,
        "\"notes/a.txt\" is not a Markdown file: the path must end in .md",
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn js_outline_exceptions_become_error_results() {
    let (ws, _outside) = fixture();
    let rt = one("outline.wasm", ws.path(), "").await;
    // A JS exception (TextDecoder's, caught and re-thrown as a tool-error): its message.
    failed(
        &run(&rt, "MarkdownOutline", json!({"path": "latin1.md"})).await,
        OutcomeKind::InvalidInput,
        "latin1.md is not UTF-8 text",
    );
    failed(
        &run(&rt, "MarkdownOutline", json!({"path": "missing.md"})).await,
        OutcomeKind::InvalidInput,
        "missing.md: no such file",
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn js_outline_reads_only_inside_its_grant() {
    let (ws, outside) = fixture();
    let rt = one("outline.wasm", ws.path(), "").await;
    let secret = outside.path().canonicalize().unwrap().join("secret.md").display().to_string();
    failed(
        &run(&rt, "MarkdownOutline", json!({"path": secret})).await,
        OutcomeKind::Denied,
        "outside every directory this tool was granted",
    );
    let name = outside.path().file_name().unwrap().to_str().unwrap();
    let r = run(&rt, "MarkdownOutline", json!({"path": format!("../{name}/secret.md")})).await;
    failed(&r, OutcomeKind::Denied, "outside every directory");
    ok(&run(&rt, "MarkdownOutline", json!({"path": "doc.md"})).await);

    // With no file grant at all, even the workspace is out of reach.
    let rt = one("outline.wasm", ws.path(), "[tools.MarkdownOutline]\ngrant = {}").await;
    failed(
        &run(&rt, "MarkdownOutline", json!({"path": "doc.md"})).await,
        OutcomeKind::Denied,
        "outside every directory",
    );
}

// --- C: WordCount ------------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread")]
async fn c_wordcount_declares_itself() {
    declares_a_read_only_workspace_tool("wordcount.wasm", "WordCount", json!({"path": "notes"})).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn c_wordcount_counts_files_and_directories() {
    let (ws, _outside) = fixture();
    let rt = one("wordcount.wasm", ws.path(), "").await;
    let out = ok(&run(&rt, "WordCount", json!({"path": "notes/a.txt"})).await);
    assert_eq!(
        out,
        "    lines     words     chars     bytes  path\n        1         5        20        20  notes/a.txt\n"
    );
    let out = ok(&run(&rt, "WordCount", json!({"path": "notes", "top_words": 2})).await);
    assert!(out.contains("        2         4        20        20  notes/b.txt\n"), "{out}");
    assert!(out.contains("        3         9        40        40  total (2 files)\n"), "{out}");
    assert!(!out.contains(".hidden"), "hidden files are skipped: {out}");
    assert!(out.ends_with("most frequent words:\n        3  the\n        1  and\n"), "{out}");
}

#[tokio::test(flavor = "multi_thread")]
async fn c_wordcount_schema_and_validate_failures() {
    let (ws, _outside) = fixture();
    let rt = one("wordcount.wasm", ws.path(), "").await;
    failed(
        &run(&rt, "WordCount", json!({"path": "notes", "top_words": 101})).await,
        OutcomeKind::SchemaError,
        "/top_words",
    );
    failed(&run(&rt, "WordCount", json!({"path": ""})).await, OutcomeKind::SchemaError, "/path");
    failed(
        &run(&rt, "WordCount", json!({"path": "notes/*.txt"})).await,
        OutcomeKind::ValidateError,
        "not a glob pattern",
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn c_wordcount_errors_and_aborts_become_error_results() {
    let (ws, _outside) = fixture();
    // 200,000 distinct words: their frequency table needs more than a 1 MiB memory limit, so
    // malloc fails and the tool aborts (a trap), which the host reports as memory_limit.
    let words: String = (0..200_000).map(|i| format!("w{i} ")).collect();
    fs::write(ws.path().join("many.txt"), words).unwrap();
    let rt = one("wordcount.wasm", ws.path(), "[tools.WordCount]\nmemory_mib = 1").await;
    failed(
        &run(&rt, "WordCount", json!({"path": "missing.txt"})).await,
        OutcomeKind::InvalidInput,
        "missing.txt: No such file",
    );
    let r = run(&rt, "WordCount", json!({"path": "many.txt", "top_words": 3})).await;
    failed(&r, OutcomeKind::MemoryLimit, "memory_mib");
    // Counting alone streams the file in constant memory.
    ok(&run(&rt, "WordCount", json!({"path": "many.txt"})).await);
}

#[tokio::test(flavor = "multi_thread")]
async fn c_wordcount_reads_only_inside_its_grant() {
    let (ws, outside) = fixture();
    let rt = one("wordcount.wasm", ws.path(), "").await;
    let dir = outside.path().canonicalize().unwrap();
    let secret = dir.join("secret.txt").display().to_string();
    failed(&run(&rt, "WordCount", json!({"path": secret})).await, OutcomeKind::Denied, "outside the workspace");
    failed(
        &run(&rt, "WordCount", json!({"path": dir.display().to_string()})).await,
        OutcomeKind::Denied,
        "outside the workspace",
    );
    let r = run(&rt, "WordCount", json!({"path": ".."})).await;
    assert!(r.is_error && !r.text().contains(SECRET), "{r:?}");
    ok(&run(&rt, "WordCount", json!({"path": "."})).await);
}

// --- all three in one parallel batch -----------------------------------------------------------

#[tokio::test(flavor = "multi_thread")]
async fn the_three_languages_run_side_by_side_in_one_batch() {
    let (ws, _outside) = fixture();
    for file in ["dataquery.wasm", "outline.wasm", "wordcount.wasm"] {
        warm(file).await;
    }
    let files = ["dataquery.wasm", "outline.wasm", "wordcount.wasm"];
    let rt = std::sync::Arc::new(runtime_with(ws.path(), "", &files).await);
    let calls = [
        ToolUse::new("a", "DataQuery", json!({"path": "people.csv"})),
        ToolUse::new("b", "MarkdownOutline", json!({"path": "doc.md"})),
        ToolUse::new("c", "WordCount", json!({"path": "notes"})),
    ];
    // Side by side, without reading clocks: each language's `is-concurrency-safe` says yes,
    // and the scheduler admits all three at once (each is admitted while the others still
    // hold their places; run one by one, the second would wait for the first to finish, and
    // the timeout below, which a passing run never reaches, would fail the test).
    let session = Session::new();
    let checked = futures::future::join_all(calls.iter().map(|c| rt.check(c.clone()))).await;
    let scheduler = rt.scheduler().clone();
    let tickets: Vec<_> = checked.iter().map(|_| scheduler.ticket()).collect();
    let mut running = Vec::new();
    for (ticket, call) in tickets.into_iter().zip(&checked) {
        assert!(call.is_concurrency_safe(), "{} is not concurrency-safe", call.tool_use().name);
        let admitted = tokio::time::timeout(std::time::Duration::from_secs(120), ticket.admit(true)).await;
        running.push(admitted.expect("a safe call waits while the other safe calls hold their places"));
    }
    let results = futures::future::join_all(
        checked
            .into_iter()
            .zip(running)
            .map(|(call, admitted)| rt.call_admitted(&session, call, admitted, toolhost::CallOptions::new())),
    )
    .await;
    let ids: Vec<_> = results.iter().map(|r| r.tool_use_id.as_str()).collect();
    assert_eq!(ids, ["a", "b", "c"]);
    for r in &results {
        ok(r);
    }
    // And through the batch API, in model order.
    let results = rt.run_batch(&session, &calls, toolhost::CallOptions::new()).await;
    let ids: Vec<_> = results.iter().map(|r| r.tool_use_id.as_str()).collect();
    assert_eq!(ids, ["a", "b", "c"]);
    for r in &results {
        ok(r);
    }
}

// --- `toolhost new`: every template builds, passes `toolhost test`, answers `toolhost call`,
// and a bug planted in it is found, shrunk and reproduced ---------------------------------------

/// A bug to plant in a template: in `file`, after the line `after`, the line `bug`, which
/// traps for a `path` longer than 100 bytes.
struct Bug {
    file: &'static str,
    after: &'static str,
    bug: &'static str,
}

/// `toolhost new --lang LANG NAME`, then the project's `./build.sh` (with `env`; it runs
/// `toolhost test`, which must pass), then a call of the built tool on a file of a fresh
/// workspace; then `bug` planted, rebuilt, and found by `toolhost test`.
fn scaffold_build_and_call(lang: &str, name: &str, env: &[(&str, PathBuf)], bug: Bug) {
    let bin = toolhost_tests::cli::binary().to_path_buf();
    let dir = workspace();
    let project = dir.path().join(name);
    let out = Command::new(&bin).args(["new", "--lang", lang, name]).current_dir(dir.path()).output().unwrap();
    assert!(out.status.success(), "toolhost new: {}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stdout).contains(&format!("{name}/build.sh")));

    let cache = guests_dir().join("cache");
    let build = || {
        let mut build = Command::new(project.join("build.sh"));
        // The outer cargo's variables are meant for this test binary, not for a nested build.
        for (key, _) in std::env::vars_os() {
            let key = key.to_string_lossy().into_owned();
            if key.starts_with("CARGO_") && key != "CARGO_HOME" || key == "RUSTFLAGS" {
                build.env_remove(key);
            }
        }
        build
            .envs(env.iter().map(|(k, v)| (*k, v.as_os_str())))
            .env("TOOLHOST", &bin)
            .env("TOOLHOST_CACHE_DIR", &cache)
            .stdin(Stdio::null());
        build.output().expect("run build.sh")
    };
    let built = build();
    let shown = format!("{}\n{}", String::from_utf8_lossy(&built.stdout), String::from_utf8_lossy(&built.stderr));
    assert!(
        built.status.success(),
        "{lang} template: build.sh failed (toolchains come from examples/guests/install.sh):\n{shown}"
    );
    assert!(project.join(format!("dist/{name}.wasm")).is_file());
    assert!(
        shown.contains("toolhost test: 1 tool, 0 errors"),
        "{lang}: build.sh runs `toolhost test`, which passes:\n{shown}"
    );
    assert!(shown.contains("3 cases"), "{lang}: with the template's cases:\n{shown}");

    let ws = workspace();
    fs::write(ws.path().join("hello.txt"), "one\ntwo\nthree\n").unwrap();
    let call = |input: &str| {
        Command::new(&bin)
            .arg("--workspace")
            .arg(ws.path())
            .arg("--tools")
            .arg(project.join("dist"))
            .args(["--no-default-tools", "--permission-mode", "bypass", "call", name, input])
            .current_dir(ws.path())
            .env("TOOLHOST_CACHE_DIR", &cache)
            .output()
            .unwrap()
    };
    let ok = call(r#"{"path":"hello.txt"}"#);
    assert_eq!(
        String::from_utf8_lossy(&ok.stdout).trim(),
        "hello.txt: 3 lines, 14 bytes",
        "{lang}: {}",
        String::from_utf8_lossy(&ok.stderr)
    );
    assert_eq!(ok.status.code(), Some(0));
    let refused = call(r#"{"path":""}"#);
    assert_eq!(refused.status.code(), Some(1), "validate refuses an empty path");
    assert!(String::from_utf8_lossy(&refused.stdout).contains("`path` is empty"));

    // The bug: the build's `toolhost test` fails, naming the least input and a command that
    // shows the trap again.
    let source = project.join(bug.file);
    let text = fs::read_to_string(&source).unwrap();
    assert!(text.contains(bug.after), "{lang}: {} has {:?}", bug.file, bug.after);
    fs::write(&source, text.replacen(bug.after, &format!("{}\n{}", bug.after, bug.bug), 1)).unwrap();
    let built = build();
    let shown = format!("{}\n{}", String::from_utf8_lossy(&built.stdout), String::from_utf8_lossy(&built.stderr));
    assert!(!built.status.success(), "{lang}: the planted bug fails the build's test:\n{shown}");
    let tested = Command::new(&bin)
        .args(["test", "--json", "."])
        .current_dir(&project)
        .env("TOOLHOST_CACHE_DIR", &cache)
        .output()
        .unwrap();
    assert_eq!(tested.status.code(), Some(1), "{lang}: {}", String::from_utf8_lossy(&tested.stderr));
    let report: Value = serde_json::from_slice(&tested.stdout).expect("a JSON report");
    let errors: Vec<&Value> =
        report["tools"][0]["findings"].as_array().unwrap().iter().filter(|f| f["severity"] == "error").collect();
    assert_eq!(errors.len(), 1, "{lang}: {errors:#?}");
    assert_eq!(errors[0]["check"], "call", "{lang}: {errors:#?}");
    let least = errors[0]["input"]["path"].as_str().expect("a path");
    assert_eq!(least.len(), 101, "{lang}: shrunk to the shortest path that traps: {least:?}");
    let line = errors[0]["reproduce"].as_str().unwrap();
    let again = Command::new("sh")
        .arg("-c")
        .arg(format!("\"$TOOLHOST\" {}", line.strip_prefix("toolhost ").unwrap()))
        // Where `toolhost test` ran: the command's paths are relative to it.
        .current_dir(&project)
        .env("TOOLHOST", &bin)
        .env("TOOLHOST_CACHE_DIR", &cache)
        .output()
        .unwrap();
    assert_eq!(again.status.code(), Some(1), "{lang}: {line}\n{}", String::from_utf8_lossy(&again.stdout));
}

fn guest_tool(relative: &str) -> PathBuf {
    let path = guests_dir().join(relative);
    assert!(path.exists(), "{} is missing: run `examples/guests/build.sh` first", path.display());
    path
}

#[test]
fn new_rust_project_builds_and_runs() {
    // One target directory for every run, so the template's dependencies build once.
    let target = Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/scaffold");
    let bug = Bug {
        file: "src/lib.rs",
        after: "    fn call(input: Input) -> Result<Output, ToolError> {",
        bug: "        if input.path.len() > 100 { panic!(\"a planted bug\") }",
    };
    scaffold_build_and_call("rust", "RustLines", &[("CARGO_TARGET_DIR", target)], bug);
}

#[test]
fn new_python_project_builds_and_runs() {
    let bug = Bug {
        file: "app.py",
        after: "        path = json.loads(input)[\"path\"]",
        bug: "        if len(path.encode()) > 100: raise RuntimeError(\"a planted bug\")",
    };
    scaffold_build_and_call("python", "PyLines", &[("COMPONENTIZE_PY", guest_tool("venv/bin/componentize-py"))], bug);
}

#[test]
fn new_js_project_builds_and_runs() {
    // The build dependencies installed by examples/guests/install.sh, instead of `npm ci`.
    let bug = Bug {
        file: "tool.js",
        after: "    const { path } = JSON.parse(input);",
        bug: "    if (path.length > 100) null.bug();",
    };
    scaffold_build_and_call("js", "JsLines", &[("TOOLHOST_NODE_MODULES", guest_tool("node/node_modules"))], bug);
}

#[test]
fn new_c_project_builds_and_runs() {
    // Built with clang, wasi-libc and `toolhost guest` alone.
    let bug = Bug {
        file: "tool.c",
        after: "    // Granted directories are preopened at their absolute paths only: change into the\n    // workspace so that relative paths resolve against it.",
        bug: "    if (path && strlen(path) > 100) __builtin_trap();",
    };
    scaffold_build_and_call("c", "CLines", &[], bug);
}
