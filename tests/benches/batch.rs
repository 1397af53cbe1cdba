//! Whole-turn figures (issue 3), printed as medians over repeats, all measured in one run so
//! the ratios are comparable on a noisy machine:
//! - 10 concurrency-safe calls that each wait 100 ms on a WASI clock: wall time vs one call;
//! - 10 CPU-bound safe calls: parallel batch vs the same calls one after another;
//! - 1,000 calls of a no-op tool through `run_batch`: calls per second, and peak RSS.
//!
//! `cargo bench -p toolhost-tests --bench batch [-- sleep|burn|noop]` (a name runs that part only)

use serde_json::json;
use std::sync::Arc;
use std::time::{Duration, Instant};
use toolhost::{Runtime, Session, ToolSource, ToolUse};
use toolhost_tests::process_cpu_ns;

const REPEATS: usize = 5;

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn calls(n: usize, tool: &str, input: serde_json::Value) -> Vec<ToolUse> {
    (0..n).map(|i| ToolUse::new(format!("toolu_{i}"), tool, input.clone())).collect()
}

fn peak_rss_kib() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// Wall and CPU time of one batch.
async fn time_batch(rt: &Arc<Runtime>, batch: &[ToolUse]) -> (Duration, Duration) {
    let session = Session::new();
    let (start, cpu) = (Instant::now(), process_cpu_ns());
    let results = rt.run_batch(&session, batch, toolhost::CallOptions::new()).await;
    let (elapsed, cpu) = (start.elapsed(), Duration::from_nanos(process_cpu_ns() - cpu));
    assert!(results.iter().all(|r| !r.is_error), "{:?}", results.iter().find(|r| r.is_error));
    (elapsed, cpu)
}

async fn time_serial(rt: &Arc<Runtime>, batch: &[ToolUse]) -> Duration {
    let session = Session::new();
    let start = Instant::now();
    for call in batch {
        assert!(!rt.call(&session, call, toolhost::CallOptions::new()).await.is_error);
    }
    start.elapsed()
}

fn main() {
    // `cargo bench` passes `--bench`; any other argument picks the parts to run.
    let only: Vec<String> = std::env::args().skip(1).filter(|a| !a.starts_with("--")).collect();
    let run = |part: &str| only.is_empty() || only.iter().any(|o| part.contains(o.as_str()));
    let tokio = tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap();
    tokio.block_on(async {
        let ws = tempfile::tempdir().unwrap();
        let mut rt =
            Runtime::builder().permission_mode(toolhost::policy::Mode::Bypass).workspace(ws.path()).build().unwrap();
        for (label, bytes) in [
            ("sleep.wasm", toolhost_tests::guests::SLEEP),
            ("burn.wasm", toolhost_tests::guests::BURN),
            ("noop.wasm", toolhost_tests::guests::NOOP),
        ] {
            rt.load(ToolSource::bytes(label, bytes)).await.unwrap();
        }
        let rt = Arc::new(rt);

        // Sleep: one call vs ten in one safe batch.
        if run("sleep") {
            let one = calls(1, "Sleep", json!({"ms": 100}));
            let ten = calls(10, "Sleep", json!({"ms": 100}));
            let (mut a, mut b) = (Vec::new(), Vec::new());
            for _ in 0..REPEATS {
                a.push(time_batch(&rt, &one).await.0);
                b.push(time_batch(&rt, &ten).await.0);
            }
            let (a, b) = (median(a), median(b));
            println!(
                "sleep 100 ms: one call {:.1} ms, ten in a batch {:.1} ms: {:.2}x one call (serial would be 10x)",
                a.as_secs_f64() * 1e3,
                b.as_secs_f64() * 1e3,
                b.as_secs_f64() / a.as_secs_f64()
            );
        }

        // CPU-bound: parallel batch vs serial.
        if run("burn") {
            let burn = calls(10, "Burn", json!({"rounds": 20_000_000u64}));
            let (mut par, mut ser) = (Vec::new(), Vec::new());
            for _ in 0..REPEATS {
                par.push(time_batch(&rt, &burn).await.0);
                ser.push(time_serial(&rt, &burn).await);
            }
            let (par, ser) = (median(par), median(ser));
            println!(
                "10 CPU-bound calls on {} cores: serial {:.0} ms, parallel {:.0} ms: {:.2}x faster",
                std::thread::available_parallelism().map_or(0, |n| n.get()),
                ser.as_secs_f64() * 1e3,
                par.as_secs_f64() * 1e3,
                ser.as_secs_f64() / par.as_secs_f64()
            );
        }

        // Throughput: 1,000 no-op calls through run_batch (more repeats: each is short).
        if run("noop") {
            let noop = calls(1000, "Noop", json!({}));
            let (mut runs, mut cpus) = (Vec::new(), Vec::new());
            for _ in 0..3 * REPEATS {
                let (wall, cpu) = time_batch(&rt, &noop).await;
                runs.push(wall);
                cpus.push(cpu);
            }
            let (t, cpu) = (median(runs), median(cpus));
            println!(
                "1000 no-op calls through run_batch: {:.1} ms, {:.0} calls/s, {:.1} ms of CPU; peak RSS {} MiB",
                t.as_secs_f64() * 1e3,
                1000.0 / t.as_secs_f64(),
                cpu.as_secs_f64() * 1e3,
                peak_rss_kib().map_or("?".to_string(), |k| (k / 1024).to_string())
            );
        }
    });
}
