//! Per-call cost of the kinds of component that are not toolhost tools, through the whole
//! pipeline, beside a toolhost tool doing the same: a function component's `echo` (a string in,
//! a string out) and `greet` (a record with a list of records in: the JSON-to-value
//! conversion), and a command program's `echo` (arguments in, stdout out, on a fresh instance
//! with its own stdin and capture), next to the no-op toolhost tool.
//!
//! `cargo bench -p toolhost-tests --bench kinds`

use criterion::{Criterion, criterion_group, criterion_main};
use serde_json::{Value, json};
use std::time::Duration;
use toolhost::{Runtime, Session, ToolSource, ToolUse};
use toolhost_tests::guests;

fn kinds(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let ws = tempfile::tempdir().unwrap();
    let mut runtime = Runtime::builder()
        .permission_mode(toolhost::policy::Mode::Bypass)
        .engine(toolhost_tests::engine())
        .workspace(ws.path())
        .build()
        .expect("runtime");
    rt.block_on(async {
        runtime.load(ToolSource::bytes("noop.wasm", guests::NOOP)).await.expect("noop");
        for r in runtime.load_tools(ToolSource::bytes("functions.wasm", guests::WIT_FUNCTIONS)).await {
            r.expect("a function");
        }
        runtime.load(ToolSource::bytes("cmd.wasm", guests::WIT_COMMAND)).await.expect("command");
    });
    let session = Session::new();
    let person = json!({
        "name": "Ada", "age": 36, "email": null,
        "address": {"street": "1 Main St", "city": "London"},
        "pets": [{"name": "Tom", "species": "cat"}, {"name": "Rex", "species": "dog"}]
    });
    let cases: [(&str, &str, Value); 4] = [
        ("toolhost_noop", "Noop", json!({})),
        ("function_echo", "echo", json!({"text": "hello"})),
        ("function_greet_record", "greet", json!({"p": person})),
        ("command_echo", "cmd", json!({"args": ["echo", "hello"]})),
    ];
    let mut group = c.benchmark_group("kinds");
    group.measurement_time(Duration::from_secs(4));
    for (label, tool, input) in cases {
        let call = ToolUse::new("toolu_bench", tool, input);
        let first = rt.block_on(runtime.call(&session, &call, toolhost::CallOptions::new()));
        assert!(!first.is_error, "{label}: {}", first.text());
        group.bench_function(label, |b| {
            b.iter(|| rt.block_on(runtime.call(&session, &call, toolhost::CallOptions::new())))
        });
    }
    group.finish();
}

criterion_group!(benches, kinds);
criterion_main!(benches);
