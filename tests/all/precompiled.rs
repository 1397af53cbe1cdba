//! The default tools carry native code compiled at build time: a fresh machine (an empty
//! compile cache) runs them without compiling. Code made ahead of time is used only for the
//! bytes it was made from and by an engine configured like the one that made it; otherwise the
//! tool is compiled as usual.

use serde_json::json;
use std::fs;
use std::path::{Path, PathBuf};
use toolhost::{EngineOptions, Runtime, Session, ToolEngine, ToolSource};
use toolhost_tests::{call, guests, workspace};

fn runtime(ws: &Path, cache_dir: &Path, options: EngineOptions) -> Runtime {
    Runtime::builder()
        .permission_mode(toolhost::policy::Mode::Bypass)
        .engine(ToolEngine::new(&options).expect("engine"))
        .workspace(ws)
        .cache_dir(cache_dir)
        .build()
        .expect("runtime")
}

/// The files of `dir` whose name ends with `suffix`.
fn files_ending(dir: &Path, suffix: &str) -> Vec<PathBuf> {
    fs::read_dir(dir)
        .map(|entries| entries.flatten().map(|e| e.path()).filter(|p| p.to_string_lossy().ends_with(suffix)).collect())
        .unwrap_or_default()
}

fn cwasm_files(dir: &Path) -> Vec<PathBuf> {
    files_ending(dir, ".cwasm")
}

async fn read_and_grep_work(rt: &mut Runtime, ws: &Path) {
    fs::write(ws.join("notes.txt"), "alpha\nbeta\n").unwrap();
    for source in toolhost_default_tools::sources() {
        rt.load(source).await.expect("load a default tool");
    }
    let session = Session::new();
    let read = call(rt, &session, "Read", json!({"file_path": "notes.txt"})).await;
    assert!(!read.is_error, "{read:?}");
    assert!(read.text().contains("beta"), "{}", read.text());
    let grep = call(rt, &session, "Grep", json!({"pattern": "alph", "output_mode": "content"})).await;
    assert!(!grep.is_error, "{grep:?}");
    assert!(grep.text().contains("alpha"), "{}", grep.text());
}

#[tokio::test(flavor = "multi_thread")]
async fn every_default_tool_is_built_with_native_code() {
    // CI builds natively (never with TOOLHOST_PRECOMPILE=0): all seven must carry code.
    assert_eq!(toolhost_default_tools::precompiled_count(), toolhost_default_tools::TOOLS.len());
}

#[tokio::test(flavor = "multi_thread")]
async fn the_default_tools_run_on_an_empty_cache_without_compiling() {
    let (ws, cache) = (workspace(), workspace());
    let cache_dir = cache.path().join("cache");
    for pooling in [false, true] {
        let mut rt = runtime(ws.path(), &cache_dir, EngineOptions::default().pooling(pooling));
        read_and_grep_work(&mut rt, ws.path()).await;
        // Nothing was compiled, so no code was written: the cache holds what loading learned
        // (one schema record per tool, which shows the cache was in use), not code.
        let records = files_ending(&cache_dir, ".load.json");
        assert_eq!(records.len(), toolhost_default_tools::TOOLS.len(), "pooling {pooling}: {records:?}");
        assert_eq!(cwasm_files(&cache_dir), Vec::<PathBuf>::new(), "pooling {pooling}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn an_engine_configured_otherwise_compiles_the_default_tools() {
    // Fuel metering changes the code: what the build made cannot run here, and is not tried.
    let (ws, cache) = (workspace(), workspace());
    let cache_dir = cache.path().join("cache");
    let mut rt = runtime(ws.path(), &cache_dir, EngineOptions::default().pooling(false).fuel(true));
    read_and_grep_work(&mut rt, ws.path()).await;
    // Baseline code first (tiering), Cranelift's in the background: that is what is cached.
    rt.engine().optimized().await;
    assert_eq!(cwasm_files(&cache_dir).len(), toolhost_default_tools::TOOLS.len());
}

#[tokio::test(flavor = "multi_thread")]
#[allow(unsafe_code, reason = "the code handed over is never run: the test shows it is refused")]
async fn code_made_for_other_bytes_or_unusable_is_not_run() {
    let (ws, cache) = (workspace(), workspace());
    let cache_dir = cache.path().join("cache");
    let noop_sha = leak(sha256(guests::NOOP));
    let (read_sha, read_code) = toolhost_default_tools::precompiled("Read").expect("Read's code");
    let cases: [(&str, ToolSource); 2] = [
        // Garbage for the right digest: wasmtime refuses it, and the tool is compiled.
        ("garbage", unsafe {
            ToolSource::bytes("noop.wasm", guests::NOOP).with_precompiled(noop_sha, b"not code at all")
        }),
        // Valid code made from other bytes (Read's): were it run, this tool would be Read.
        ("other bytes", unsafe { ToolSource::bytes("noop.wasm", guests::NOOP).with_precompiled(read_sha, read_code) }),
    ];
    for (case, source) in cases {
        let mut rt = runtime(ws.path(), &cache_dir, EngineOptions::default().pooling(false));
        let name = rt.load(source).await.unwrap_or_else(|e| panic!("{case}: {e}"));
        assert_eq!(name, "Noop", "{case}");
        let result = call(&rt, &Session::new(), &name, json!({})).await;
        assert_eq!(result.text(), "ok", "{case}: {result:?}");
        rt.engine().optimized().await;
    }
    assert_eq!(cwasm_files(&cache_dir).len(), 1, "Noop was compiled (once, then taken from the cache)");
}

fn sha256(bytes: &[u8]) -> String {
    use sha2::Digest;
    hex::encode(sha2::Sha256::digest(bytes))
}

fn leak(s: String) -> &'static str {
    Box::leak(s.into_boxed_str())
}

/// An embedded tool's digest comes from its build (its bytes are not hashed again at each
/// start) and is the true sha256 of those bytes; an embedded source whose bytes were replaced
/// is hashed as usual, so the replacement is known by its own digest and never runs the
/// embedded tool's native code.
#[tokio::test(flavor = "multi_thread")]
async fn an_embedded_digest_is_trusted_only_for_the_embedded_bytes() {
    use sha2::Digest;
    let ws = workspace();
    let cache = tempfile::tempdir().unwrap();
    let mut rt = runtime(ws.path(), cache.path(), EngineOptions::default().pooling(false));
    let read = toolhost_default_tools::source("Read").unwrap();
    let name = rt.load(read).await.expect("Read loads");
    let bytes = toolhost_default_tools::get("Read").unwrap();
    assert_eq!(rt.tool(&name).unwrap().sha256, hex::encode(sha2::Sha256::digest(bytes)));

    let mut swapped = toolhost_default_tools::source("Glob").unwrap();
    swapped.bytes = guests::NOOP.into();
    let name = rt.load(swapped).await.expect("the replacement loads as what it is");
    assert_eq!(name, "Noop", "its own schema ran: not the embedded Glob's code");
    assert_eq!(rt.tool(&name).unwrap().sha256, hex::encode(sha2::Sha256::digest(guests::NOOP)));
}
