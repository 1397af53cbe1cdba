//! Trust decisions at load time and across the calls of a session: pins are checked on the
//! bytes before anything runs, a configured name belongs to its file, load-time exports run
//! under a deadline whose outcome is remembered, context is private per tool and bounded, and
//! "allow always" stays in the session that said it.

use async_trait::async_trait;
use serde_json::json;
use std::fs;
use std::path::Path;
use std::sync::{Arc, Mutex};
use toolhost::policy::{Config, Mode};
use toolhost::{AskAnswer, AskRequest, Error, OutcomeKind, PermissionDecider, Runtime, Session, ToolSource};
use toolhost_tests::cli::{assert_exit, command, stderr, stdout};
use toolhost_tests::{call, config, default_tools, engine, guests, workspace};

fn runtime_with(ws: &Path, cfg: Config) -> Runtime {
    Runtime::builder().permission_mode(Mode::Bypass).engine(engine()).workspace(ws).config(cfg).build().unwrap()
}

/// A fresh engine (as in a new process: nothing remembered in memory) over a compile cache.
fn fresh_runtime(ws: &Path, cache: &Path, cfg: Config) -> Runtime {
    let engine = toolhost::ToolEngine::new(&toolhost::EngineOptions::default().pooling(false)).unwrap();
    Runtime::builder()
        .permission_mode(Mode::Bypass)
        .engine(engine)
        .workspace(ws)
        .config(cfg)
        .cache_dir(cache)
        .build()
        .unwrap()
}

fn load_message(result: toolhost::Result<String>) -> String {
    match result {
        Ok(name) => panic!("loaded as {name}"),
        Err(Error::Load { cause, .. }) => cause.to_string(),
        Err(other) => panic!("expected a load error, got {other}"),
    }
}

fn entries(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = fs::read_dir(dir)
        .map(|rd| rd.flatten().map(|e| e.file_name().to_string_lossy().into_owned()).collect())
        .unwrap_or_default();
    names.sort();
    names
}

#[test]
fn a_pin_is_checked_before_the_bytes_are_compiled_or_run() {
    let ws = workspace();
    let cache = workspace();
    // The hole: a pinned key pointing at a file whose tool calls itself something else loaded
    // with a warning, after its code had been compiled and run.
    fs::write(ws.path().join("evil.wasm"), guests::LOAD_SPIN).unwrap();
    fs::write(
        ws.path().join("toolhost.toml"),
        format!("[tools.Pinned]\npath = \"evil.wasm\"\nsha256 = \"{}\"\n", "0".repeat(64)),
    )
    .unwrap();
    let o = command(ws.path()).env("TOOLHOST_CACHE_DIR", cache.path()).args(["list", "--json"]).output().unwrap();
    assert_exit(&o, 0);
    let err = stderr(&o);
    assert!(err.contains("sha256 mismatch") && err.contains("evil.wasm"), "{err}");
    assert!(!stdout(&o).contains("LoadSpin") && !stdout(&o).contains("Pinned"), "{}", stdout(&o));
    // Nothing of it was compiled (no cache entry) and its endless `schema` never ran (no record).
    let sha = hex_sha256(guests::LOAD_SPIN);
    assert!(entries(cache.path()).iter().all(|e| !e.starts_with(&sha)), "{:?}", entries(cache.path()));
}

fn hex_sha256(bytes: &[u8]) -> String {
    let dir = workspace();
    let file = dir.path().join("f");
    fs::write(&file, bytes).unwrap();
    let out = std::process::Command::new("sha256sum").arg(&file).output().expect("sha256sum");
    String::from_utf8_lossy(&out.stdout).split_whitespace().next().unwrap().to_string()
}

#[test]
fn a_configured_file_must_declare_its_key_and_keeps_its_name_from_tools_dirs() {
    let ws = workspace();
    let tools = workspace();
    fs::write(ws.path().join("noop.wasm"), guests::NOOP).unwrap();
    // Same tool name, another file, in a --tools directory.
    fs::write(tools.path().join("other-noop.wasm"), guests::NOOP).unwrap();
    fs::write(ws.path().join("toolhost.toml"), "[limits]\ntimeout_ms = 5000\n\n[tools.Pinned]\npath = \"noop.wasm\"\n")
        .unwrap();
    let o = command(ws.path()).args(["list", "--json"]).output().unwrap();
    assert_exit(&o, 0);
    let err = stderr(&o);
    assert!(
        err.contains("toolhost.toml:4:") && err.contains("declares a tool named \"Noop\", not \"Pinned\""),
        "{err}"
    );
    assert!(!stdout(&o).contains("\"Noop\""), "a misnamed file gets no name at all: {}", stdout(&o));

    // With the right key, a --tools file declaring the same name is refused, naming both files,
    // and the configured one keeps the name and its grant.
    fs::write(ws.path().join("toolhost.toml"), "[tools.Noop]\npath = \"noop.wasm\"\ngrant = { fs_read = [] }\n")
        .unwrap();
    let o = command(ws.path()).args(["--tools", tools.path().to_str().unwrap(), "list", "--json"]).output().unwrap();
    assert_exit(&o, 0);
    let err = stderr(&o);
    assert!(err.contains("other-noop.wasm") && err.contains("noop.wasm") && err.contains("[tools.Noop]"), "{err}");
    let listed: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    let noop = listed["tools"].as_array().unwrap().iter().find(|t| t["name"] == "Noop").expect("Noop listed");
    let origin = noop["origin"].as_str().unwrap();
    assert!(origin.ends_with("noop.wasm") && !origin.contains("other-noop"), "{noop}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_configured_name_is_not_taken_over_even_when_its_file_fails() {
    let ws = workspace();
    let file = ws.path().join("noop.wasm");
    fs::write(&file, guests::NOOP).unwrap();
    let cfg = Config::parse(
        &format!("[tools.Noop]\npath = {:?}\nsha256 = \"{}\"\n", file.display().to_string(), "0".repeat(64)),
        &ws.path().join("toolhost.toml"),
    )
    .unwrap();
    let mut rt = runtime_with(ws.path(), cfg);
    let results = rt
        .load_all(vec![
            ToolSource::file(&file).unwrap().with_name("Noop").with_sha256("0".repeat(64)),
            ToolSource::bytes("elsewhere/noop.wasm", guests::NOOP),
        ])
        .await;
    let mut results = results.into_iter();
    assert!(load_message(results.next().unwrap()).contains("sha256 mismatch"));
    let m = load_message(results.next().unwrap());
    assert!(m.contains("elsewhere/noop.wasm") && m.contains("[tools.Noop]"), "{m}");
    assert!(rt.tool("Noop").is_none());
}

#[tokio::test(flavor = "multi_thread")]
async fn a_tool_that_hangs_at_load_costs_its_deadline_once() {
    let ws = workspace();
    let cache = workspace();
    let cache_dir = cache.path().join("c");
    let cfg = || config("[limits]\nload_timeout_ms = 300\n");

    // First start: the hanging tool fails by its deadline; the healthy one beside it loads.
    let mut rt = fresh_runtime(ws.path(), &cache_dir, cfg());
    let results = rt
        .load_all(vec![
            ToolSource::bytes("load-spin.wasm", guests::LOAD_SPIN),
            ToolSource::bytes("noop.wasm", guests::NOOP),
        ])
        .await;
    let mut results = results.into_iter();
    let m = load_message(results.next().unwrap());
    assert!(m.contains("`schema` export did not return within 300 ms (limits.load_timeout_ms)"), "{m}");
    assert!(!m.contains("remembered"), "{m}");
    assert_eq!(results.next().unwrap().ok().as_deref(), Some("Noop"));
    assert!(!call(&rt, &Session::new(), "Noop", json!({})).await.is_error);
    assert!(entries(&cache_dir).iter().any(|e| e.ends_with(".load.json")), "{:?}", entries(&cache_dir));

    // Next start (a new engine, as a new process): the failure is remembered, not run again.
    let mut rt = fresh_runtime(ws.path(), &cache_dir, cfg());
    let m = load_message(rt.load(ToolSource::bytes("load-spin.wasm", guests::LOAD_SPIN)).await);
    assert!(m.contains("remembered") && m.contains("load_timeout_ms"), "{m}");
    rt.load(ToolSource::bytes("noop.wasm", guests::NOOP)).await.expect("the healthy tool loads from the cache");

    // A longer deadline tries again (and it still hangs).
    let mut rt = fresh_runtime(ws.path(), &cache_dir, config("[limits]\nload_timeout_ms = 400\n"));
    let m = load_message(rt.load(ToolSource::bytes("load-spin.wasm", guests::LOAD_SPIN)).await);
    assert!(!m.contains("remembered") && m.contains("within 400 ms"), "{m}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_tampered_load_record_is_not_trusted() {
    let ws = workspace();
    let cache = workspace();
    let cache_dir = cache.path().join("c");
    let mut rt = fresh_runtime(ws.path(), &cache_dir, Config::default());
    rt.load(ToolSource::bytes("noop.wasm", guests::NOOP)).await.unwrap();
    let record = entries(&cache_dir).into_iter().find(|e| e.ends_with(".load.json")).expect("a load record");
    // Rewrite the record to claim another name and a write ceiling; without the key its tag
    // cannot be made, so it must be ignored and the schema read again.
    let path = cache_dir.join(&record);
    let text = fs::read(&path).unwrap();
    let forged = String::from_utf8_lossy(&text).replace("\"Noop\"", "\"Evil\"");
    fs::write(&path, forged).unwrap();
    let mut rt = fresh_runtime(ws.path(), &cache_dir, Config::default());
    assert_eq!(rt.load(ToolSource::bytes("noop.wasm", guests::NOOP)).await.unwrap(), "Noop");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_tool_cannot_forge_what_read_recorded_nor_read_other_tools_keys() {
    let ws = workspace();
    fs::write(ws.path().join("a.txt"), "hello\n").unwrap();
    let abs = ws.path().canonicalize().unwrap().join("a.txt");
    let mut sources = default_tools();
    sources.push(ToolSource::bytes("ctx.wasm", guests::CTX));
    let rt = toolhost_tests::runtime(ws.path(), Config::default(), sources).await;

    // Session A: a real Read records the file; Ctx cannot see that record.
    let a = Session::new();
    assert!(!call(&rt, &a, "Read", json!({"file_path": "a.txt"})).await.is_error);
    let key = format!("read:{}", abs.display());
    let recorded = a.get(toolhost::EMBEDDED_NAMESPACE, &key).expect("Read recorded the file");
    let seen = call(&rt, &a, "Ctx", json!({"get": key})).await;
    assert_eq!(seen.text(), "none", "another tool's keys are private");

    // Session B: Ctx writes exactly what Read would have; Edit still refuses an unread file.
    let b = Session::new();
    let value: String = serde_json::from_str::<serde_json::Value>(&recorded).unwrap().to_string();
    let forged = call(&rt, &b, "Ctx", json!({"set": key, "value": value})).await;
    assert!(!forged.is_error, "{forged:?}");
    let edit = json!({"file_path": "a.txt", "old_string": "hello", "new_string": "pwned"});
    let r = call(&rt, &b, "Edit", edit).await;
    assert!(r.is_error && r.text().contains("has not been read yet"), "{r:?}");
    assert_eq!(fs::read_to_string(ws.path().join("a.txt")).unwrap(), "hello\n");
    // What Ctx set lives in its own namespace, where only Ctx reads it.
    assert_eq!(b.get(toolhost::EMBEDDED_NAMESPACE, &key), None);
    assert!(b.get(rt.tool("Ctx").unwrap().context_namespace(), &key).is_some());
}

#[tokio::test(flavor = "multi_thread")]
async fn a_session_context_has_a_bound() {
    let ws = workspace();
    let rt = toolhost_tests::runtime(
        ws.path(),
        config("[limits]\nmax_context_bytes = 200\n"),
        vec![ToolSource::bytes("ctx.wasm", guests::CTX)],
    )
    .await;
    let s = Session::new();
    assert!(!call(&rt, &s, "Ctx", json!({"set": "small", "value": "x".repeat(50)})).await.is_error);
    let before = s.context_bytes();
    let big = call(&rt, &s, "Ctx", json!({"set": "big", "value": "y".repeat(300)})).await;
    assert!(big.is_error, "{big:?}");
    assert_eq!(big.outcome, OutcomeKind::OutputLimit);
    assert!(big.text().contains("max_context_bytes") && big.text().contains("200"), "{}", big.text());
    assert_eq!(s.context_bytes(), before, "nothing of the refused call was applied");
    let ns = rt.tool("Ctx").unwrap().context_namespace().to_string();
    assert_eq!(s.get(&ns, "big"), None);
    // Replacing a value by a smaller one is always possible.
    assert!(!call(&rt, &s, "Ctx", json!({"set": "small", "value": "z"})).await.is_error);
    assert!(s.context_bytes() < before);

    // The same bound holds inside a parallel batch.
    let rt = Arc::new(rt);
    let calls: Vec<_> = (0..4)
        .map(|i| {
            toolhost::ToolUse::new(
                format!("p{i}"),
                "Ctx",
                json!({"set": format!("k{i}"), "value": "v".repeat(60), "safe": true}),
            )
        })
        .collect();
    let results = rt.run_batch(&s, &calls, toolhost::CallOptions::new()).await;
    assert!(s.context_bytes() <= 200, "{}", s.context_bytes());
    let refused = results.iter().filter(|r| r.is_error).count();
    let kept = (0..4).filter(|i| s.get(&ns, &format!("k{i}")).is_some()).count();
    assert!(refused >= 1 && kept >= 1, "{results:?}");
}

/// Answers every question with one answer, counting them.
struct Always {
    asked: Mutex<Vec<String>>,
}

#[async_trait]
impl PermissionDecider for Always {
    async fn ask(&self, request: &AskRequest) -> AskAnswer {
        self.asked.lock().unwrap().push(request.tool_use_id.clone());
        AskAnswer::AllowAlways
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn allow_always_stays_in_its_session() {
    let ws = workspace();
    let d = Arc::new(Always { asked: Mutex::default() });
    let mut rt = Runtime::builder().engine(engine()).workspace(ws.path()).decider(d.clone()).build().expect("runtime");
    for s in default_tools() {
        rt.load(s).await.unwrap();
    }
    let write = |f: &str| json!({"file_path": f, "content": "x"});
    let a = Session::new();
    assert!(!call(&rt, &a, "Write", write("1.txt")).await.is_error);
    assert!(!call(&rt, &a, "Write", write("2.txt")).await.is_error);
    assert_eq!(d.asked.lock().unwrap().len(), 1, "always covers the rest of session A");
    assert!(a.allowed_tools().contains("Write"));

    let b = Session::new();
    assert!(!call(&rt, &b, "Write", write("3.txt")).await.is_error);
    assert_eq!(d.asked.lock().unwrap().len(), 2, "session B is asked again");

    // A saved session keeps its allowance (a `--session` file).
    let restored = Session::restore(a.save());
    assert!(!call(&rt, &restored, "Write", write("4.txt")).await.is_error);
    assert_eq!(d.asked.lock().unwrap().len(), 2);
}

#[test]
fn broad_grants_are_flagged_by_config_check_and_list() {
    let ws = workspace();
    let outside = workspace();
    fs::write(ws.path().join("probe.wasm"), guests::PROBE).unwrap();
    fs::create_dir(ws.path().join("scripts")).unwrap();
    fs::write(ws.path().join("scripts/guard.sh"), "#!/bin/sh\nexit 0\n").unwrap();
    fs::write(
        ws.path().join("toolhost.toml"),
        format!(
            "[tools.Probe]\npath = \"probe.wasm\"\ngrant = {{ env = [\"*\"], fs_write = [\".\", {:?}] }}\n\n\
             [tools.Read]\ngrant = {{ fs_read = [\".\"] }}\n\n\
             [[hooks.pre_tool_use]]\ncommand = \"./scripts/guard.sh\"\n",
            outside.path().display().to_string()
        ),
    )
    .unwrap();
    let o = command(ws.path()).args(["config", "check"]).output().unwrap();
    assert_exit(&o, 0);
    let err = stderr(&o);
    assert!(err.contains("toolhost.toml:3:9: warning: tools.Probe.grant: env = [\"*\"]"), "{err}");
    assert!(err.contains(&format!("fs_write {}", outside.path().canonicalize().unwrap().display())), "{err}");
    assert!(err.contains("toolhost.toml:9:11: warning: hooks:") && err.contains("scripts"), "{err}");
    assert!(!err.contains("tools.Read.grant"), "a narrow grant is not flagged: {err}");

    let o = command(ws.path()).args(["list", "--json"]).output().unwrap();
    assert_exit(&o, 0);
    let listed: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    let tool = |n: &str| listed["tools"].as_array().unwrap().iter().find(|t| t["name"] == n).cloned().unwrap();
    let probe = tool("Probe").to_string();
    assert!(probe.contains("env = [\\\"*\\\"]") && probe.contains("outside the workspace"), "{probe}");
    assert_eq!(tool("Read")["warnings"], json!([]), "read-only Read has nothing broad");
}
