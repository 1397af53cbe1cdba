//! Loading: bytes that are not a tool are refused with a message naming the source and saying
//! what is wrong, without harming the runtime; duplicate names and sha256 pins; the on-disk
//! compile cache.

use serde_json::json;
use std::fs;
use std::path::{Path, PathBuf};
use toolhost::{Error, LoadError, Runtime, SchemaError, Session, ToolSource};
use toolhost_tests::{call, config, engine, guests, workspace};

fn bare_runtime(ws: &Path) -> Runtime {
    Runtime::builder()
        .permission_mode(toolhost::policy::Mode::Bypass)
        .engine(engine())
        .workspace(ws)
        .build()
        .expect("runtime")
}

/// Load `source` expecting a load error; returns its message, checked to name `label`.
async fn load_error(rt: &mut Runtime, source: ToolSource, label: &str) -> String {
    let err = match rt.load(source).await {
        Ok(name) => panic!("{label} loaded as tool {name}"),
        Err(err) => err,
    };
    let shown = toolhost::error_text(&err);
    let Error::Load { origin, cause } = err else { panic!("{label}: expected a load error, got {shown}") };
    let message = toolhost::error_text(&cause);
    assert_eq!(origin, label, "the error names the source: {shown}");
    assert!(shown.contains(label), "the message names the source: {shown}");
    assert!(!message.trim().is_empty(), "{shown}");
    message
}

/// Load `source` expecting a load error; returns its typed cause.
async fn load_cause(rt: &mut Runtime, source: ToolSource) -> LoadError {
    match rt.load(source).await {
        Ok(name) => panic!("loaded as tool {name}"),
        Err(Error::Load { cause, .. }) => cause,
        Err(other) => panic!("expected a load error, got {other}"),
    }
}

/// Noop loads and answers in `rt`.
async fn noop_works(rt: &mut Runtime) {
    let name = rt.load(ToolSource::bytes("noop.wasm", guests::NOOP)).await.expect("load Noop");
    assert_eq!(name, "Noop");
    let result = call(rt, &Session::new(), "Noop", json!({})).await;
    assert!(!result.is_error, "{result:?}");
    assert_eq!(result.text(), "ok");
}

#[tokio::test(flavor = "multi_thread")]
async fn bytes_that_are_not_a_tool_are_refused_clearly() {
    let ws = workspace();
    let mut rt = bare_runtime(ws.path());

    let m = load_error(&mut rt, ToolSource::bytes("corrupt.wasm", &b"garbage"[..]), "corrupt.wasm").await;
    assert!(m.contains("not a WebAssembly file"), "{m}");

    let m = load_error(&mut rt, ToolSource::bytes("empty.wasm", &b""[..]), "empty.wasm").await;
    assert!(m.contains("not a WebAssembly file"), "{m}");

    let m = load_error(&mut rt, ToolSource::bytes("core.wasm", &b"\0asm\x01\0\0\0"[..]), "core.wasm").await;
    assert!(m.contains("core WebAssembly module"), "{m}");
    assert!(m.contains("wasm32-wasip2"), "the message says what to do: {m}");

    // A real component cut in half: the magic is right, the rest is not.
    let half = &guests::NOOP[..guests::NOOP.len() / 2];
    let m = load_error(&mut rt, ToolSource::bytes("truncated.wasm", half), "truncated.wasm").await;
    assert!(m.contains("invalid component"), "{m}");

    let m = load_error(&mut rt, ToolSource::bytes("other-world.wasm", guests::OTHER_WORLD), "other-world.wasm").await;
    assert!(m.contains("not a toolhost tool"), "{m}");
    assert!(m.contains("toolhost:tool/plugin"), "the message names the expected world: {m}");

    let m = load_error(&mut rt, ToolSource::bytes("bad-schema.wasm", guests::BAD_SCHEMA), "bad-schema.wasm").await;
    assert!(m.contains("bad name!"), "the message quotes the name: {m}");
    assert!(m.contains("invalid"), "{m}");

    assert_eq!(rt.tools().count(), 0, "nothing was registered");
    // None of that harmed the runtime.
    noop_works(&mut rt).await;
    assert_eq!(rt.tools().map(|t| t.info.name.clone()).collect::<Vec<_>>(), ["Noop"]);
}

/// An embedder tells what went wrong from the error's type, not its text.
#[tokio::test(flavor = "multi_thread")]
async fn load_errors_say_their_kind_in_their_type() {
    let ws = workspace();
    let mut rt = bare_runtime(ws.path());
    let cause = load_cause(&mut rt, ToolSource::bytes("corrupt.wasm", &b"garbage"[..])).await;
    assert!(matches!(cause, LoadError::NotAComponent(_)), "{cause:?}");
    let cause = load_cause(&mut rt, ToolSource::bytes("core.wasm", &b"\0asm\x01\0\0\0"[..])).await;
    assert!(matches!(cause, LoadError::NotAComponent(_)), "{cause:?}");
    let half = &guests::NOOP[..guests::NOOP.len() / 2];
    let cause = load_cause(&mut rt, ToolSource::bytes("truncated.wasm", half)).await;
    assert!(matches!(cause, LoadError::Compile(_)), "{cause:?}");
    let cause = load_cause(&mut rt, ToolSource::bytes("other-world.wasm", guests::OTHER_WORLD)).await;
    assert!(matches!(cause, LoadError::NotATool { .. }), "{cause:?}");
    let cause = load_cause(&mut rt, ToolSource::bytes("bad-schema.wasm", guests::BAD_SCHEMA)).await;
    // The first load in this process (the engine is shared) checks the name; later ones find
    // the failure remembered with the bytes' digest.
    match &cause {
        LoadError::Schema(SchemaError::InvalidName { name }) => assert_eq!(name, "bad name!"),
        LoadError::Schema(SchemaError::Remembered { message, sha256, timed_out: false }) => {
            assert!(message.starts_with(r#"tool name "bad name!" is invalid"#), "{message}");
            assert_eq!(sha256.len(), 64);
        }
        other => panic!("{other:?}"),
    }

    let wrong = "0".repeat(64);
    let cause = load_cause(&mut rt, ToolSource::bytes("noop.wasm", guests::NOOP).with_sha256(&wrong)).await;
    let LoadError::Sha256Mismatch { tool, expected, actual } = &cause else { panic!("{cause:?}") };
    assert_eq!((tool, expected), (&None, &wrong));
    assert_eq!(actual.len(), 64, "{cause}");
    assert_ne!(actual, &wrong);

    let missing = ws.path().join("nope.wasm");
    let Err(Error::Load { cause: LoadError::Read(io), .. }) = ToolSource::file(&missing) else {
        panic!("a missing file is a read error")
    };
    assert_eq!(io.kind(), std::io::ErrorKind::NotFound);
    assert_eq!(rt.tools().count(), 0, "nothing was registered");
}

/// Each error's parts in order: its `Display`, then each `source()`.
fn chain(error: &(dyn std::error::Error + 'static)) -> Vec<String> {
    std::iter::successors(Some(error), |e| e.source()).map(ToString::to_string).collect()
}

/// An embedder walks the chain of a load error: each link says its own part, what it wraps is
/// its source (wasmtime's own chain included), and `error_text` prints every part once.
#[tokio::test(flavor = "multi_thread")]
async fn a_load_error_keeps_its_causes_as_sources_and_prints_each_once() {
    let ws = workspace();
    let missing = ws.path().join("nope.wasm");
    let err = ToolSource::file(&missing).expect_err("no such file");
    let parts = chain(&err);
    assert_eq!(parts[..2], [missing.display().to_string(), "cannot read".to_string()], "{parts:?}");
    let io = std::iter::successors(Some(&err as &(dyn std::error::Error + 'static)), |e| e.source())
        .find_map(|e| e.downcast_ref::<std::sync::Arc<std::io::Error>>())
        .expect("the io::Error is in the chain");
    assert_eq!(io.kind(), std::io::ErrorKind::NotFound);
    assert_eq!(toolhost::error_text(&err), parts.join(": "));

    let mut rt = bare_runtime(ws.path());
    let half = &guests::NOOP[..guests::NOOP.len() / 2];
    let err = rt.load(ToolSource::bytes("truncated.wasm", half)).await.expect_err("half a component");
    let parts = chain(&err);
    assert_eq!(parts[..2], ["truncated.wasm", "invalid component"], "{parts:?}");
    assert!(parts.len() >= 3, "wasmtime's account is a source: {parts:?}");
    let text = toolhost::error_text(&err);
    assert!(text.starts_with("truncated.wasm: invalid component: "), "{text}");
    for part in &parts {
        assert_eq!(text.matches(part.as_str()).count(), 1, "{part:?} is printed once: {text}");
    }

    let err = rt.load(ToolSource::bytes("other-world.wasm", guests::OTHER_WORLD)).await.expect_err("another world");
    let parts = chain(&err);
    assert!(parts[1].starts_with("not a toolhost tool"), "{parts:?}");
    assert!(parts.len() >= 3, "wasmtime's account of the mismatch is a source: {parts:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_missing_file_is_a_load_error_naming_it() {
    let ws = workspace();
    let path = ws.path().join("nope.wasm");
    let err = ToolSource::file(&path).expect_err("no such file");
    assert!(matches!(err, Error::Load { .. }), "{err:?}");
    assert!(err.to_string().contains(&path.display().to_string()), "{err}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_tool_loads_from_a_file() {
    let ws = workspace();
    let path = ws.path().join("noop.wasm");
    fs::write(&path, guests::NOOP).unwrap();
    let mut rt = bare_runtime(ws.path());
    let name = rt.load(ToolSource::file(&path).expect("read")).await.expect("load");
    assert_eq!(name, "Noop");
    let tool = rt.tool("Noop").expect("registered");
    assert_eq!(tool.size, guests::NOOP.len());
    assert_eq!(tool.sha256.len(), 64);
    assert!(tool.info.read_only);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_duplicate_name_is_refused_naming_both() {
    let ws = workspace();
    let mut rt = bare_runtime(ws.path());
    rt.load(ToolSource::bytes("first.wasm", guests::NOOP)).await.expect("first load");
    let err = rt.load(ToolSource::bytes("second.wasm", guests::NOOP)).await.expect_err("duplicate");
    match &err {
        Error::Duplicate { origin, name, existing } => {
            assert_eq!(origin, "second.wasm");
            assert_eq!(name, "Noop");
            assert_eq!(existing, "first.wasm");
        }
        other => panic!("expected Error::Duplicate, got {other:?}"),
    }
    let shown = err.to_string();
    assert!(shown.contains("first.wasm") && shown.contains("second.wasm") && shown.contains("Noop"), "{shown}");
    // The first one stays, and still works.
    assert_eq!(rt.tool("Noop").expect("still loaded").origin.to_string(), "first.wasm");
    let result = call(&rt, &Session::new(), "Noop", json!({"text": "first"})).await;
    assert_eq!(result.text(), "first");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_sha256_pin_must_match() {
    let ws = workspace();
    // Learn the real digest from a plain load.
    let mut rt = bare_runtime(ws.path());
    rt.load(ToolSource::bytes("noop.wasm", guests::NOOP)).await.expect("load");
    let sha = rt.tool("Noop").unwrap().sha256.clone();
    let wrong = "0".repeat(64);

    // Pinned by the embedding program.
    let mut rt = bare_runtime(ws.path());
    let m = load_error(&mut rt, ToolSource::bytes("noop.wasm", guests::NOOP).with_sha256(&wrong), "noop.wasm").await;
    assert!(m.contains("sha256 mismatch"), "{m}");
    assert!(m.contains(&wrong) && m.contains(&sha), "both digests are shown: {m}");
    assert!(rt.tool("Noop").is_none());
    // Any case of the right digest is accepted.
    rt.load(ToolSource::bytes("noop.wasm", guests::NOOP).with_sha256(sha.to_uppercase())).await.expect("pinned load");

    // Pinned by the config.
    let cfg = config(&format!("[tools.Noop]\nsha256 = \"{wrong}\""));
    let mut rt = Runtime::builder()
        .permission_mode(toolhost::policy::Mode::Bypass)
        .engine(engine())
        .workspace(ws.path())
        .config(cfg)
        .build()
        .unwrap();
    let m = load_error(&mut rt, ToolSource::bytes("noop.wasm", guests::NOOP), "noop.wasm").await;
    assert!(m.contains("sha256 mismatch") && m.contains("Noop"), "{m}");
    assert!(rt.tool("Noop").is_none());
    let cfg = config(&format!("[tools.Noop]\nsha256 = \"{sha}\""));
    let mut rt = Runtime::builder()
        .permission_mode(toolhost::policy::Mode::Bypass)
        .engine(engine())
        .workspace(ws.path())
        .config(cfg)
        .build()
        .unwrap();
    noop_works(&mut rt).await;
}

fn cwasm_files(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = fs::read_dir(dir)
        .map(|rd| rd.flatten().map(|e| e.path()).filter(|p| p.extension().is_some_and(|x| x == "cwasm")).collect())
        .unwrap_or_default();
    files.sort();
    files
}

#[tokio::test(flavor = "multi_thread")]
async fn compiled_components_are_cached_on_disk() {
    let ws = workspace();
    let cache = workspace();
    let cache_dir = cache.path().join("cache");
    // A fresh engine per runtime, like a fresh process: an engine also remembers what it
    // compiled in memory, which would hide the disk cache.
    let with_cache = || {
        let engine =
            toolhost::ToolEngine::new(&toolhost::EngineOptions::default().pooling(false).tiering(false)).unwrap();
        Runtime::builder()
            .permission_mode(toolhost::policy::Mode::Bypass)
            .engine(engine)
            .workspace(ws.path())
            .cache_dir(&cache_dir)
            .build()
            .unwrap()
    };

    let mut first = with_cache();
    assert_eq!(first.cache_dir(), Some(cache_dir.as_path()));
    noop_works(&mut first).await;
    let entries = cwasm_files(&cache_dir);
    assert_eq!(entries.len(), 1, "one .cwasm for one component: {entries:?}");
    let entry = entries[0].clone();
    let sha = first.tool("Noop").unwrap().sha256.clone();
    assert!(entry.file_name().unwrap().to_string_lossy().starts_with(&sha), "keyed by the sha256: {}", entry.display());
    let before = fs::metadata(&entry).unwrap();

    // A second runtime loads from the entry rather than writing a new one.
    let mut second = with_cache();
    noop_works(&mut second).await;
    assert_eq!(cwasm_files(&cache_dir), entries);
    let after = fs::metadata(&entry).unwrap();
    assert_eq!(after.len(), before.len());
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        // Entries are written to a temporary file and renamed: a rewrite would be a new inode.
        assert_eq!(after.ino(), before.ino(), "the cache entry was rewritten instead of used");
    }

    // A corrupt entry is not fatal: the component is compiled again and the entry replaced.
    // (Replaced by a rename, as a writer must: the loaded runtimes above map the entry, and
    // truncating a mapped file in place would crash this process with SIGBUS.)
    let corrupt = cache_dir.join("corrupt.tmp");
    fs::write(&corrupt, b"not a compiled component").unwrap();
    fs::rename(&corrupt, &entry).unwrap();
    let mut third = with_cache();
    noop_works(&mut third).await;
    assert_eq!(cwasm_files(&cache_dir), entries);
    assert_eq!(fs::metadata(&entry).unwrap().len(), before.len(), "the corrupt entry was replaced");
}

#[tokio::test(flavor = "multi_thread")]
async fn an_unwritable_cache_dir_is_not_fatal() {
    let ws = workspace();
    // A file where the cache directory should be: nothing can be written there.
    let blocker = ws.path().join("not-a-dir");
    fs::write(&blocker, "x").unwrap();
    let mut rt = Runtime::builder()
        .permission_mode(toolhost::policy::Mode::Bypass)
        .engine(engine())
        .workspace(ws.path())
        .cache_dir(blocker.join("cache"))
        .build()
        .unwrap();
    noop_works(&mut rt).await;
}

#[tokio::test]
async fn a_grant_beyond_the_ceiling_refuses_to_load_with_its_position() {
    let ws = workspace();
    let cfg = config("[limits]\ntimeout_ms = 1000\n\n[tools.Read]\ngrant = { fs_write = [\".\"], env = [\"HOME\"] }\n");
    let mut rt = Runtime::builder().engine(engine()).workspace(ws.path()).config(cfg).build().unwrap();
    let read = toolhost_default_tools::get("Read").unwrap();
    let m = load_error(&mut rt, ToolSource::embedded("Read", read), "embedded tool Read").await;
    assert!(m.contains("test.toml:5:") && m.contains("tools.Read.grant"), "{m}");
    assert!(m.contains("fs_write") && m.contains("HOME"), "every excess entry is named: {m}");
    assert!(rt.tool("Read").is_none());
}

/// `Runtime::load_configured`: a `[tools.NAME] path` replaces the default tool of that name
/// (and must declare it), a missing file and a failing extra source are each one error, and
/// everything else still loads.
#[tokio::test(flavor = "multi_thread")]
async fn a_configured_tool_set_loads_with_one_error_per_tool_that_did_not() {
    let ws = workspace();
    fs::write(ws.path().join("noop.wasm"), guests::NOOP).unwrap();
    fs::write(ws.path().join("sleep.wasm"), guests::SLEEP).unwrap();
    let text = "[tools.Read]\npath = \"noop.wasm\"\n\n[tools.Noop]\npath = \"noop.wasm\"\n\n[tools.Ghost]\npath = \"ghost.wasm\"\n";
    let config = toolhost::policy::Config::parse(text, &ws.path().join("toolhost.toml")).unwrap();
    let mut rt = Runtime::builder()
        .permission_mode(toolhost::policy::Mode::Bypass)
        .engine(engine())
        .workspace(ws.path())
        .config(config)
        .build()
        .unwrap();
    let refused = Error::Load { origin: "an installed tool".into(), cause: LoadError::embedder("not in the lock") };
    let others = vec![ToolSource::file(ws.path().join("sleep.wasm")), Err(refused)];
    let errors = rt.load_configured(toolhost_default_tools::sources(), others).await;
    let shown: Vec<String> = errors.iter().map(|e| toolhost::error_text(e)).collect();
    assert_eq!(errors.len(), 3, "{shown:#?}");
    assert!(shown.iter().any(|e| e.contains("ghost.wasm")), "the missing file: {shown:#?}");
    assert!(shown.iter().any(|e| e.contains("an installed tool: not in the lock")), "{shown:#?}");
    assert!(
        shown.iter().any(|e| e.contains("declares a tool named \"Noop\", not \"Read\"")),
        "the file that replaces Read must declare Read: {shown:#?}"
    );
    let names: Vec<&str> = rt.tools().map(|t| t.info.name.as_str()).collect();
    assert!(!names.contains(&"Read"), "the configured Read replaced the embedded one and failed: {names:?}");
    for name in ["Glob", "Grep", "Write", "Noop", "Sleep"] {
        assert!(names.contains(&name), "{name} loaded: {names:?}");
    }
    assert_eq!(rt.tool("Noop").unwrap().grant_from, toolhost::GrantFrom::Default);
}
