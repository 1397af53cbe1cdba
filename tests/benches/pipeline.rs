//! Per-call cost of a no-op tool through the whole pipeline (JSON Schema, `validate` on its own
//! instance, `call` on a fresh Store, result mapping), with the pooling and the on-demand
//! allocator, next to spawning `/bin/true` as the reference for "a process per call".
//!
//! `cargo bench -p toolhost-tests --bench pipeline`

use criterion::{Criterion, criterion_group, criterion_main};
use serde_json::json;
use std::time::Duration;
use toolhost::policy::Config;
use toolhost::{EngineOptions, Runtime, Session, ToolEngine, ToolSource, ToolUse};

fn runtime(rt: &tokio::runtime::Runtime, pooling: bool, ws: &std::path::Path) -> Runtime {
    let engine = ToolEngine::new(&EngineOptions::default().pooling(pooling)).expect("engine");
    assert_eq!(engine.is_pooled(), pooling, "the pooling allocator is available here");
    let mut runtime = Runtime::builder()
        .permission_mode(toolhost::policy::Mode::Bypass)
        .engine(engine)
        .workspace(ws)
        .config(Config::default())
        .build()
        .expect("runtime");
    rt.block_on(runtime.load(ToolSource::bytes("noop.wasm", toolhost_tests::guests::NOOP))).expect("load");
    runtime
}

fn pipeline(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let ws = tempfile::tempdir().unwrap();
    let session = Session::new();
    let call = ToolUse::new("toolu_bench", "Noop", json!({}));
    let mut group = c.benchmark_group("noop_call");
    group.measurement_time(Duration::from_secs(5));
    for (label, pooling) in [("pooling", true), ("on_demand", false)] {
        let runtime = runtime(&rt, pooling, ws.path());
        let first = rt.block_on(runtime.call(&session, &call, toolhost::CallOptions::new()));
        assert!(!first.is_error, "{}", first.text());
        group.bench_function(label, |b| {
            b.iter(|| rt.block_on(runtime.call(&session, &call, toolhost::CallOptions::new())))
        });
    }
    group.bench_function("spawn_bin_true", |b| {
        b.iter(|| std::process::Command::new("/bin/true").status().expect("spawn /bin/true"))
    });
    group.finish();
}

criterion_group!(benches, pipeline);
criterion_main!(benches);
