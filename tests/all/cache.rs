//! The compile cache cannot be poisoned: an entry a tool overwrote is detected, compiled again
//! and rewritten instead of run, and a tool whose grant includes the cache is not loaded.

use serde_json::json;
use std::fs;
use std::io::{Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use toolhost::{EngineOptions, Error, GrantError, LoadError, Runtime, Session, ToolEngine, ToolSource};
use toolhost_tests::{call, guests, workspace};

/// A runtime over `ws` caching in `cache_dir`, with a fresh engine, like a fresh process: an
/// engine also remembers what it compiled in memory, which would hide the disk cache.
fn runtime(ws: &Path, cache_dir: &Path) -> Runtime {
    // Cranelift at once: these tests look at the cache right after a call (tiering.rs covers
    // what is cached when).
    let engine = ToolEngine::new(&EngineOptions::default().pooling(false).tiering(false)).expect("engine");
    Runtime::builder()
        .permission_mode(toolhost::policy::Mode::Bypass)
        .engine(engine)
        .workspace(ws)
        .cache_dir(cache_dir)
        .build()
        .expect("runtime")
}

async fn noop_works(rt: &mut Runtime) {
    let name = rt.load(ToolSource::bytes("noop.wasm", guests::NOOP)).await.expect("load Noop");
    let result = call(rt, &Session::new(), &name, json!({})).await;
    assert!(!result.is_error, "{result:?}");
    assert_eq!(result.text(), "ok");
}

fn cwasm_files(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = fs::read_dir(dir)
        .expect("cache dir")
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "cwasm"))
        .collect();
    files.sort();
    files
}

#[tokio::test(flavor = "multi_thread")]
async fn an_overwritten_entry_is_compiled_again_not_run() {
    let ws = workspace();
    let cache = workspace();
    let cache_dir = cache.path().join("cache");

    let mut first = runtime(ws.path(), &cache_dir);
    noop_works(&mut first).await;
    let entries = cwasm_files(&cache_dir);
    assert_eq!(entries.len(), 1, "one entry for one component: {entries:?}");
    let entry = &entries[0];

    // What a tool granted the cache could do: overwrite a stretch of native code in place.
    let len = fs::metadata(entry).unwrap().len();
    let mut file = fs::OpenOptions::new().write(true).open(entry).unwrap();
    file.seek(SeekFrom::Start(len / 2)).unwrap();
    file.write_all(&[0xcc; 64]).unwrap(); // int3, on x86
    drop(file);
    let tampered = fs::read(entry).unwrap();

    let mut second = runtime(ws.path(), &cache_dir);
    noop_works(&mut second).await;
    let rewritten = fs::read(entry).unwrap();
    assert_ne!(rewritten, tampered, "the tampered entry was rewritten");
    assert_eq!(rewritten.len(), tampered.len());
    assert_eq!(cwasm_files(&cache_dir), entries);

    // The rewritten entry is authentic again: a third start uses it rather than rewriting it.
    #[cfg(unix)]
    let inode = {
        use std::os::unix::fs::MetadataExt;
        fs::metadata(entry).unwrap().ino()
    };
    let mut third = runtime(ws.path(), &cache_dir);
    noop_works(&mut third).await;
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        assert_eq!(fs::metadata(entry).unwrap().ino(), inode, "the rewritten entry was used");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_grant_including_the_cache_is_refused() {
    let ws = workspace();
    // `Probe` may write anywhere; the default grant gives it the workspace read-write.
    let probe = || ToolSource::bytes("probe.wasm", guests::PROBE);

    let mut inside = runtime(ws.path(), &ws.path().join(".cache").join("toolhost"));
    let err = inside.load(probe()).await.expect_err("a tool granted the cache loaded");
    let shown = toolhost::error_text(&err);
    let Error::Load { origin, cause } = err else { panic!("expected a load error, got {shown}") };
    let LoadError::Grant { name, cause: grant } = &cause else { panic!("{cause:?}") };
    assert!(matches!(**grant, GrantError::ReachesPrivate { inside: false, .. }), "{grant:?}");
    assert_eq!(name, "Probe");
    let message = toolhost::error_text(&cause);
    assert_eq!(origin, "probe.wasm");
    let cache_dir = inside.cache_dir().expect("the cache is in use").display().to_string();
    assert!(message.contains(&cache_dir), "the message names the cache: {message}");
    assert!(message.contains("TOOLHOST_CACHE_DIR"), "the message says how to fix it: {message}");
    assert!(inside.tool("Probe").is_none());

    // The same tool loads beside a cache outside its grant.
    let cache = workspace();
    let mut outside = runtime(ws.path(), &cache.path().join("cache"));
    assert_eq!(outside.load(probe()).await.expect("load Probe"), "Probe");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_tool_known_from_its_record_is_compiled_at_its_first_call_not_at_load() {
    let ws = workspace();
    let cache = workspace();
    let cache_dir = cache.path().join("cache");
    noop_works(&mut runtime(ws.path(), &cache_dir)).await;
    for entry in cwasm_files(&cache_dir) {
        fs::remove_file(entry).unwrap();
    }

    // A fresh process: the load record describes Noop, so loading it compiles nothing...
    let mut second = runtime(ws.path(), &cache_dir);
    let name = second.load(ToolSource::bytes("noop.wasm", guests::NOOP)).await.expect("load Noop");
    assert_eq!(cwasm_files(&cache_dir), Vec::<PathBuf>::new(), "loading compiled the tool");
    // ...and its first calls (several at once, sharing one compilation) do.
    let session = Session::new();
    let calls = (0..4).map(|_| call(&second, &session, &name, json!({})));
    for result in futures::future::join_all(calls).await {
        assert_eq!(result.text(), "ok", "{result:?}");
    }
    assert_eq!(cwasm_files(&cache_dir).len(), 1);
}
