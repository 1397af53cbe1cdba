//! Shared helpers for toolhost's integration tests and benches: one engine per process, the
//! test guests built by `build.rs`, temporary workspaces, runtimes with chosen tools.

pub mod cli;
pub mod model_server;
pub mod registry;
pub mod server;

use std::path::Path;
use std::sync::OnceLock;

/// A test that cannot run on this machine (a program or a network address it needs is
/// missing) says so and passes; where every test must run it fails instead: with `CI` set, or
/// `TOOLHOST_REQUIRE_ALL_TESTS=1` (which `.ci/run` sets), so a CI machine that lost what a test
/// needs is noticed rather than counted as a pass.
pub fn skip(reason: &str) {
    let required = std::env::var_os("CI").is_some_and(|v| !v.is_empty())
        || std::env::var_os("TOOLHOST_REQUIRE_ALL_TESTS").is_some_and(|v| v == "1");
    assert!(!required, "{reason}; this test must run here (CI or TOOLHOST_REQUIRE_ALL_TESTS=1 is set)");
    eprintln!("SKIPPED: {reason}");
}
use toolhost::policy::Config;
use toolhost::{EngineOptions, Runtime, Session, ToolEngine, ToolResult, ToolSource, ToolUse};

/// Test guests from `tests/guests/`, built for wasm32-wasip2 by `build.rs`:
/// `pub const NAME: &[u8]` per guest crate (crate `spin-forever` → `SPIN_FOREVER`), and
/// `ALL: &[(&str, &[u8])]`.
pub mod guests {
    include!(concat!(env!("OUT_DIR"), "/guests.rs"));
}

/// The process-wide engine (one per process, as in production: every test shares its pool).
pub fn engine() -> ToolEngine {
    static ENGINE: OnceLock<ToolEngine> = OnceLock::new();
    ENGINE.get_or_init(|| ToolEngine::new(&EngineOptions::default().fuel(true)).expect("engine")).clone()
}

/// CPU time of the whole process so far, every thread's, in ns (`CLOCK_PROCESS_CPUTIME_ID`):
/// exact, unlike `/proc/self/task/*/schedstat`, which running threads update only at ticks
/// (4 ms here), too coarse for a block of calls of a few milliseconds.
pub fn process_cpu_ns() -> u64 {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::ProcessCPUTime);
    t.tv_sec as u64 * 1_000_000_000 + t.tv_nsec as u64
}

/// Remove everything inside `dir` (links themselves, never what they lead to), keeping `dir`:
/// a runtime's grant holds a handle to it.
pub fn empty_dir(dir: &Path) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if std::fs::symlink_metadata(&path).unwrap().is_dir() {
            std::fs::remove_dir_all(&path).unwrap();
        } else {
            std::fs::remove_file(&path).unwrap();
        }
    }
}

/// A fresh temporary workspace.
pub fn workspace() -> tempfile::TempDir {
    tempfile::tempdir().expect("temp dir")
}

/// The embedded default tools as sources.
pub fn default_tools() -> Vec<ToolSource> {
    toolhost_default_tools::sources()
}

/// A runtime over `ws` with `config`, loading `sources` (panics if one fails to load).
pub async fn runtime(ws: &Path, config: Config, sources: Vec<ToolSource>) -> Runtime {
    let mut rt = Runtime::builder()
        .permission_mode(toolhost::policy::Mode::Bypass)
        .engine(engine())
        .workspace(ws)
        .config(config)
        .build()
        .expect("runtime");
    for s in sources {
        let origin = s.origin.to_string();
        rt.load(s).await.unwrap_or_else(|e| panic!("loading {origin}: {e}"));
    }
    rt
}

/// A runtime over `ws` with the default tools and no config.
pub async fn default_runtime(ws: &Path) -> Runtime {
    runtime(ws, Config::default(), default_tools()).await
}

/// Parse a config document (panics on error).
pub fn config(toml: &str) -> Config {
    Config::parse(toml, Path::new("test.toml")).expect("config")
}

/// One call with a fresh id.
pub async fn call(rt: &Runtime, session: &Session, tool: &str, input: serde_json::Value) -> ToolResult {
    static N: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let id = format!("toolu_{}", N.fetch_add(1, std::sync::atomic::Ordering::Relaxed));
    let result = rt.call(session, &ToolUse::new(&id, tool, input), toolhost::CallOptions::new()).await;
    assert_eq!(result.tool_use_id, id, "a result always carries its call's id");
    result
}
