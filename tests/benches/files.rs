//! What the default file tools cost per call through the whole pipeline, on a small tree
//! (200 files in 20 directories): `Read` of one file, `Grep` and `Glob` over the tree, `LS`,
//! and a `Write`. With a path deny rule too, which makes every open and listing checked, and
//! with the default config again last, as a control for the order of measurement.
//!
//! `cargo bench -p toolhost-tests --bench files`
//!
//! `cargo bench -p toolhost-tests --bench files -- --paired [ROUNDS]` instead measures what
//! the deny rule costs against the default config with the two interleaved: each round times
//! a block of calls under one config, then the same block under the other (in alternating
//! order), so drift of the machine falls on both alike; it prints the median of the per-round
//! ratios, in wall and in CPU time, per tool. With `PAIRED_CONTROL=1` in the environment both
//! sides run the default config: the control, whose ratios should be within a percent or two
//! of zero.

use criterion::{Criterion, criterion_group};
use serde_json::json;
use std::path::Path;
use std::time::{Duration, Instant};
use toolhost::{EngineOptions, Runtime, Session, ToolEngine, ToolUse};
use toolhost_tests::{config, default_tools, engine, process_cpu_ns};

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
    runtime_on(rt, ws, toml, engine())
}

fn runtime_on(rt: &tokio::runtime::Runtime, ws: &Path, toml: &str, engine: ToolEngine) -> Runtime {
    let mut runtime = Runtime::builder()
        .permission_mode(toolhost::policy::Mode::Bypass)
        .engine(engine)
        .workspace(ws)
        .config(config(toml))
        .build()
        .expect("runtime");
    for s in default_tools() {
        rt.block_on(runtime.load(s)).expect("load");
    }
    runtime
}

/// The rule that makes every open, stat and listing checked.
const DENY: &str = "[permissions]\ndeny = [\"Read(secrets/**)\"]\n";

/// The measured calls, by name.
fn calls(ws: &Path) -> [(&'static str, ToolUse); 5] {
    let ws_str = ws.canonicalize().unwrap().display().to_string();
    [
        ("read", ToolUse::new("t", "Read", json!({"file_path": "dir3/file4.txt"}))),
        ("grep", ToolUse::new("t", "Grep", json!({"pattern": "line 7 of file 3", "path": "."}))),
        ("glob", ToolUse::new("t", "Glob", json!({"pattern": "**/*.txt"}))),
        ("ls", ToolUse::new("t", "LS", json!({"path": ws_str}))),
        ("write", ToolUse::new("t", "Write", json!({"file_path": "out.txt", "content": "hello\n"}))),
    ]
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// The deny rule against the default config, interleaved (see the module's doc).
fn paired(rounds: usize) {
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let ws = tempfile::tempdir().unwrap();
    tree(ws.path());
    let session = Session::new();
    // One engine each, so that neither runtime's calls reuse the other's pool slots.
    let second = if std::env::var_os("PAIRED_CONTROL").is_some() { "" } else { DENY };
    let own_engine = || ToolEngine::new(&EngineOptions::default().fuel(true)).expect("engine");
    let configs = [runtime_on(&rt, ws.path(), "", own_engine()), runtime_on(&rt, ws.path(), second, own_engine())];
    println!("deny rule against the default config, {rounds} rounds of ≥ 20 ms each (medians)");
    println!(
        "{:<6} {:>12} {:>12} {:>12} {:>12} {:>10} {:>10}",
        "tool", "default", "deny rule", "CPU default", "CPU deny", "wall", "CPU"
    );
    for (name, call) in calls(ws.path()) {
        let block = |runtime: &Runtime, n: usize| {
            let (start, cpu) = (Instant::now(), process_cpu_ns());
            for _ in 0..n {
                let result = rt.block_on(runtime.call(&session, &call, toolhost::CallOptions::new()));
                assert!(!result.is_error, "{name}: {}", result.text());
            }
            (start.elapsed().as_secs_f64() / n as f64, (process_cpu_ns() - cpu) as f64 / n as f64)
        };
        // Blocks long enough (≥ 20 ms) for the kernel's CPU accounting to be exact.
        let per_call = configs.iter().map(|r| block(r, 5).0).fold(0.0, f64::max);
        let n = ((0.02 / per_call).ceil() as usize).clamp(5, 5000);
        let block = |runtime: &Runtime| block(runtime, n);
        let (mut walls, mut cpus, mut plain, mut denied) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
        let (mut plain_cpu, mut denied_cpu) = (Vec::new(), Vec::new());
        for round in 0..rounds {
            let (d, n) = if round % 2 == 0 {
                let d = block(&configs[0]);
                (d, block(&configs[1]))
            } else {
                let n = block(&configs[1]);
                (block(&configs[0]), n)
            };
            walls.push(n.0 / d.0);
            cpus.push(n.1 / d.1);
            plain.push(d.0);
            denied.push(n.0);
            plain_cpu.push(d.1);
            denied_cpu.push(n.1);
        }
        println!(
            "{name:<6} {:>9.1} µs {:>9.1} µs {:>9.1} µs {:>9.1} µs {:>+9.1}% {:>+9.1}%",
            median(plain) * 1e6,
            median(denied) * 1e6,
            median(plain_cpu) / 1e3,
            median(denied_cpu) / 1e3,
            (median(walls) - 1.0) * 100.0,
            (median(cpus) - 1.0) * 100.0
        );
    }
}

fn files(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let ws = tempfile::tempdir().unwrap();
    tree(ws.path());
    let session = Session::new();
    let calls = calls(ws.path());
    // The default config once more at the end: a control for effects of the order (the same
    // config measured first and last should agree; if not, compare deny_rule to the mean).
    for (label, toml) in [("default", ""), ("deny_rule", DENY), ("default_again", "")] {
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

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if let Some(at) = args.iter().position(|a| a == "--paired") {
        let rounds = args.get(at + 1).and_then(|r| r.parse().ok()).unwrap_or(40);
        paired(rounds);
        return;
    }
    benches();
    Criterion::default().configure_from_args().final_summary();
}
