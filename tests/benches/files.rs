//! What the default file tools cost per call through the whole pipeline, on a small tree
//! (200 files in 20 directories): `Read` of one file, `Grep` and `Glob` over the tree, `LS`,
//! and a `Write`. With a path deny rule too, which makes every open and listing checked, and
//! with the default config again last, as a control for the order of measurement.
//!
//! `cargo bench -p toolhost-tests --bench files`

use criterion::{Criterion, criterion_group, criterion_main};
use serde_json::json;
use std::path::Path;
use std::time::Duration;
use toolhost::{Runtime, Session, ToolUse};
use toolhost_tests::{config, default_tools, engine};

fn tree(ws: &Path) {
    for d in 0..20 {
        let dir = ws.join(format!("dir{d}"));
        std::fs::create_dir_all(&dir).unwrap();
        for f in 0..10 {
            let body: String = (0..50).map(|l| format!("line {l} of file {f} in dir {d}: some text\n")).collect();
            std::fs::write(dir.join(format!("file{f}.txt")), body).unwrap();
        }
    }
}

fn runtime(rt: &tokio::runtime::Runtime, ws: &Path, toml: &str) -> Runtime {
    let mut runtime = Runtime::builder()
        .permission_mode(toolhost::policy::Mode::Bypass)
        .engine(engine())
        .workspace(ws)
        .config(config(toml))
        .build()
        .expect("runtime");
    for s in default_tools() {
        rt.block_on(runtime.load(s)).expect("load");
    }
    runtime
}

fn files(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let ws = tempfile::tempdir().unwrap();
    tree(ws.path());
    let session = Session::new();
    let ws_str = ws.path().canonicalize().unwrap().display().to_string();
    let calls = [
        ("read", ToolUse::new("t", "Read", json!({"file_path": "dir3/file4.txt"}))),
        ("grep", ToolUse::new("t", "Grep", json!({"pattern": "line 7 of file 3", "path": "."}))),
        ("glob", ToolUse::new("t", "Glob", json!({"pattern": "**/*.txt"}))),
        ("ls", ToolUse::new("t", "LS", json!({"path": ws_str}))),
        ("write", ToolUse::new("t", "Write", json!({"file_path": "out.txt", "content": "hello\n"}))),
    ];
    // The default config once more at the end: a control for effects of the order (the same
    // config measured first and last should agree; if not, compare deny_rule to the mean).
    let deny = "[permissions]\ndeny = [\"Read(secrets/**)\"]\n";
    for (label, toml) in [("default", ""), ("deny_rule", deny), ("default_again", "")] {
        let runtime = runtime(&rt, ws.path(), toml);
        let mut group = c.benchmark_group(format!("files_{label}"));
        group.measurement_time(Duration::from_secs(5));
        for (name, call) in &calls {
            let first = rt.block_on(runtime.call(&session, call, toolhost::CallOptions::new()));
            assert!(!first.is_error, "{name}: {}", first.text());
            group.bench_function(*name, |b| {
                b.iter(|| rt.block_on(runtime.call(&session, call, toolhost::CallOptions::new())))
            });
        }
        group.finish();
    }
}

criterion_group!(benches, files);
criterion_main!(benches);
