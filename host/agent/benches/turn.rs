//! The agent loop's own overhead per turn: everything a turn costs except the model's and the
//! tools' time. A loopback model API (`toolhost_tests::model_server`) answers every request at
//! once with a scripted streamed answer holding one call of the no-op test tool; a run of 10
//! turns is timed, and beside it the same call run through the runtime alone. Loop overhead
//! per turn ≈ `turn` − `tool_alone` (it includes the loopback HTTP request, SSE parsing, the
//! request's JSON, pairing and bookkeeping; the scripted server's own work is in it too, so
//! the figure is an upper bound). `anthropic_turn_in_task` runs the agent as `toolhost agent`
//! does, as a task on the runtime's threads instead of on the thread in `block_on`.
//!
//! `cargo bench -p toolhost-agent --bench turn`

use criterion::{Criterion, criterion_group, criterion_main};
use serde_json::json;
use std::sync::Arc;
use std::time::Duration;
use toolhost::{Runtime, Session, ToolSource, ToolUse};
use toolhost_agent::{Agent, AgentOptions, Anthropic, OpenAi, Stop};
use toolhost_tests::model_server::{Answer, ModelServer};

const TURNS: u32 = 10;

fn turn(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let ws = tempfile::tempdir().unwrap();
    let mut runtime = Runtime::builder()
        .permission_mode(toolhost::policy::Mode::Bypass)
        .engine(toolhost_tests::engine())
        .workspace(ws.path())
        .build()
        .expect("runtime");
    rt.block_on(runtime.load(ToolSource::bytes("noop.wasm", toolhost_tests::guests::NOOP))).expect("load");
    let runtime = Arc::new(runtime);
    let answer = Answer::new("tool_use").text("Calling it.").tool("toolu_bench", "Noop", json!({}));

    let mut group = c.benchmark_group("agent_turn");
    group.measurement_time(Duration::from_secs(8));
    let anthropic_server = ModelServer::repeat(answer.anthropic());
    let openai_server = ModelServer::repeat(answer.openai());
    let providers: [(&str, Arc<dyn toolhost_agent::Provider>); 2] = [
        ("anthropic", Arc::new(Anthropic::new(&anthropic_server.url, "k").unwrap())),
        ("openai", Arc::new(OpenAi::new(&format!("{}/v1", openai_server.url), None).unwrap())),
    ];
    for (name, provider) in providers {
        let options = AgentOptions { max_turns: TURNS, ..AgentOptions::new("bench") };
        let agent = Arc::new(Agent::new(runtime.clone(), provider, options));
        let first = rt.block_on(agent.run(&Session::new(), "go", &Default::default())).expect("run");
        assert_eq!((first.stop, first.tool_calls, first.tool_errors), (Stop::MaxTurns(TURNS), TURNS, 0));
        // One iteration is one turn: a run of TURNS turns counts as TURNS iterations.
        group.bench_function(format!("{name}_turn"), |b| {
            b.iter_custom(|iters| {
                let runs = iters.div_ceil(u64::from(TURNS));
                let start = std::time::Instant::now();
                for _ in 0..runs {
                    rt.block_on(agent.run(&Session::new(), "go", &Default::default())).expect("run");
                }
                start.elapsed().mul_f64(iters as f64 / (runs * u64::from(TURNS)) as f64)
            })
        });
        if name == "anthropic" {
            // As `toolhost agent` runs it: the agent's loop a task on the runtime's threads, so
            // a call's task and the loop share a worker instead of crossing to the waiting thread.
            group.bench_function(format!("{name}_turn_in_task"), |b| {
                b.iter_custom(|iters| {
                    let runs = iters.div_ceil(u64::from(TURNS));
                    let start = std::time::Instant::now();
                    for _ in 0..runs {
                        let agent = agent.clone();
                        let run = rt.spawn(async move { agent.run(&Session::new(), "go", &Default::default()).await });
                        rt.block_on(run).expect("joined").expect("run");
                    }
                    start.elapsed().mul_f64(iters as f64 / (runs * u64::from(TURNS)) as f64)
                })
            });
        }
    }
    let session = Session::new();
    let call = [ToolUse::new("toolu_bench", "Noop", json!({}))];
    group.bench_function("tool_alone", |b| {
        b.iter(|| rt.block_on(runtime.run_batch(&session, &call, toolhost::CallOptions::new())))
    });
    group.finish();
}

criterion_group!(benches, turn);
criterion_main!(benches);
