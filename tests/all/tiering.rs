//! Tiered compilation: with nothing compiled anywhere, a tool's first call runs the baseline
//! compiler's (Winch) code, Cranelift's replaces it once compiled in the background, and only
//! Cranelift's is cached. Every way a guest can fail ends the same way in both tiers.

use serde_json::json;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use toolhost::{
    CodeState, EngineOptions, Event, EventSink, OutcomeKind, Runtime, Session, Tier, ToolEngine, ToolSource,
};
use toolhost_tests::{call, config, guests, workspace};

/// A runtime over `ws` with a fresh engine (like a fresh process), caching in `cache`, whose
/// Finish events land in the returned list.
fn runtime(ws: &Path, cache: &Path, engine: ToolEngine, toml: &str) -> (Runtime, Arc<Mutex<Vec<Event>>>) {
    let events = Arc::new(Mutex::new(Vec::new()));
    let seen = events.clone();
    let sink: EventSink = Arc::new(move |e| {
        if matches!(e, Event::Finish { .. }) {
            seen.lock().unwrap().push(e);
        }
    });
    let rt = Runtime::builder()
        .permission_mode(toolhost::policy::Mode::Bypass)
        .engine(engine)
        .workspace(ws)
        .cache_dir(cache)
        .config(config(toml))
        .events(sink)
        .build()
        .expect("runtime");
    (rt, events)
}

fn fresh_engine(options: EngineOptions) -> ToolEngine {
    ToolEngine::new(&options.pooling(false)).expect("engine")
}

fn last_tier(events: &Mutex<Vec<Event>>) -> Option<Tier> {
    match events.lock().unwrap().last() {
        Some(Event::Finish { tier, .. }) => *tier,
        other => panic!("no finish event: {other:?}"),
    }
}

fn cwasm_files(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|d| d.flatten().map(|e| e.path()).filter(|p| p.extension().is_some_and(|x| x == "cwasm")).collect())
        .unwrap_or_default();
    files.sort();
    files
}

#[tokio::test(flavor = "multi_thread")]
async fn the_first_call_runs_baseline_code_until_the_optimised_code_replaces_it() {
    let ws = workspace();
    let cache = workspace();
    let engine = fresh_engine(EngineOptions::default());
    assert!(engine.is_tiered(), "tiering is on by default");
    let (mut rt, events) = runtime(ws.path(), cache.path(), engine.clone(), "");
    // Loading runs `schema`, so the code is made ready there already.
    let hold = engine.hold_optimizations();
    rt.load(ToolSource::bytes("noop.wasm", guests::NOOP)).await.expect("load");
    assert_eq!(rt.code_state("Noop"), Some(CodeState::Baseline));
    let session = Session::new();
    for _ in 0..3 {
        let r = call(&rt, &session, "Noop", json!({"text": "a"})).await;
        assert_eq!(r.text(), "a", "{r:?}");
        assert_eq!(last_tier(&events), Some(Tier::Baseline));
    }
    assert_eq!(rt.code_state("Noop"), Some(CodeState::Baseline));
    assert_eq!(engine.optimizing().len(), 1, "its optimised compilation waits in the queue");
    assert!(cwasm_files(cache.path()).is_empty(), "baseline code is never cached");

    drop(hold);
    engine.optimized().await;
    assert!(engine.optimizing().is_empty());
    let r = call(&rt, &session, "Noop", json!({"text": "b"})).await;
    assert_eq!(r.text(), "b", "{r:?}");
    assert_eq!(last_tier(&events), Some(Tier::Optimized));
    assert_eq!(rt.tool("Noop").and_then(|t| t.tier()), Some(Tier::Optimized));
    assert_eq!(cwasm_files(cache.path()).len(), 1, "the optimised code is cached");

    // The next process finds it in the cache: optimised from its first call, nothing queued.
    // (Its load record is cached too, so loading readies no code.)
    let engine = fresh_engine(EngineOptions::default());
    let (mut rt, events) = runtime(ws.path(), cache.path(), engine.clone(), "");
    rt.load(ToolSource::bytes("noop.wasm", guests::NOOP)).await.expect("load");
    assert_eq!(rt.code_state("Noop"), Some(CodeState::Cached));
    let r = call(&rt, &session, "Noop", json!({"text": "c"})).await;
    assert_eq!(r.text(), "c", "{r:?}");
    assert_eq!(last_tier(&events), Some(Tier::Optimized));
    assert!(engine.optimizing().is_empty());
}

#[tokio::test(flavor = "multi_thread")]
async fn without_tiering_the_first_call_runs_optimised_code() {
    let ws = workspace();
    let cache = workspace();
    let engine = fresh_engine(EngineOptions::default().tiering(false));
    let (mut rt, events) = runtime(ws.path(), cache.path(), engine.clone(), "");
    rt.load(ToolSource::bytes("noop.wasm", guests::NOOP)).await.expect("load");
    let r = call(&rt, &Session::new(), "Noop", json!({"text": "a"})).await;
    assert_eq!(r.text(), "a", "{r:?}");
    assert_eq!(last_tier(&events), Some(Tier::Optimized));
    assert!(engine.optimizing().is_empty());
    assert_eq!(cwasm_files(cache.path()).len(), 1);
}

#[tokio::test(flavor = "multi_thread")]
async fn ready_code_waits_for_the_optimised_code() {
    let ws = workspace();
    let cache = workspace();
    let engine = fresh_engine(EngineOptions::default());
    let (mut rt, _) = runtime(ws.path(), cache.path(), engine, "");
    rt.load(ToolSource::bytes("noop.wasm", guests::NOOP)).await.expect("load");
    let tier = rt.ready_code("Noop").await.expect("a known tool").expect("compiles");
    assert_eq!(tier, Tier::Optimized);
    assert_eq!(cwasm_files(cache.path()).len(), 1);
    assert!(rt.ready_code("Nope").await.is_none());
}

/// Every misbehaving guest fails with the same outcome in the baseline tier as in the optimised
/// one, and leaves the runtime healthy in both.
#[tokio::test(flavor = "multi_thread")]
async fn every_failure_is_the_same_in_both_tiers() {
    let ws = workspace();
    let cache = workspace();
    let engine = fresh_engine(EngineOptions::default());
    let toml = "[tools.Spin]\ntimeout_ms = 300\n[tools.AllocBomb]\nmemory_mib = 32";
    let (mut rt, events) = runtime(ws.path(), cache.path(), engine.clone(), toml);
    let mut hold = Some(engine.hold_optimizations());
    for (label, bytes) in [
        ("noop", guests::NOOP),
        ("spin", guests::SPIN),
        ("alloc-bomb", guests::ALLOC_BOMB),
        ("recurse", guests::RECURSE),
        ("panic", guests::PANIC),
        ("unreachable", guests::UNREACHABLE),
    ] {
        rt.load(ToolSource::bytes(format!("{label}.wasm"), bytes)).await.expect("load");
    }
    let cases = [
        ("Spin", json!({}), OutcomeKind::Timeout),
        ("AllocBomb", json!({}), OutcomeKind::MemoryLimit),
        ("Recurse", json!({}), OutcomeKind::StackOverflow),
        ("Recurse", json!({"shadow": true}), OutcomeKind::StackOverflow),
        ("Panic", json!({}), OutcomeKind::Panic),
        ("Unreachable", json!({}), OutcomeKind::Trap),
    ];
    let session = Session::new();
    let mut texts = Vec::new();
    for tier in [Tier::Baseline, Tier::Optimized] {
        if tier == Tier::Optimized {
            drop(hold.take());
            engine.optimized().await;
        }
        for (tool, input, kind) in &cases {
            let r = call(&rt, &session, tool, input.clone()).await;
            assert!(r.is_error, "{tool} in the {tier} tier: {r:?}");
            assert_eq!(r.outcome, *kind, "{tool} {input} in the {tier} tier: {r:?}");
            assert_eq!(last_tier(&events), Some(tier), "{tool}");
            texts.push((tool, tier, r.text()));
            let ok = call(&rt, &session, "Noop", json!({"text": "alive"})).await;
            assert_eq!(ok.text(), "alive", "after {tool} in the {tier} tier: {ok:?}");
        }
    }
    for (tool, _, text) in &texts {
        if **tool == "Panic" {
            assert!(text.contains("boom: the tool panicked on purpose"), "{text}");
        }
        if **tool == "Unreachable" {
            assert!(text.contains("`unreachable` instruction"), "{text}");
        }
    }
}

/// Fuel is metered by the baseline tier's code too.
#[tokio::test(flavor = "multi_thread")]
async fn fuel_runs_out_in_the_baseline_tier_too() {
    let ws = workspace();
    let cache = workspace();
    let engine = fresh_engine(EngineOptions::default().fuel(true));
    let (mut rt, events) = runtime(ws.path(), cache.path(), engine.clone(), "[tools.Spin]\nfuel = 10000000");
    let _hold = engine.hold_optimizations();
    rt.load(ToolSource::bytes("spin.wasm", guests::SPIN)).await.expect("load");
    let r = call(&rt, &Session::new(), "Spin", json!({})).await;
    assert_eq!(r.outcome, OutcomeKind::OutOfFuel, "{r:?}");
    assert_eq!(last_tier(&events), Some(Tier::Baseline));
}

/// A function component whose core code makes a tail call (`return_call`), which the baseline
/// compiler does not support; `tail` says whether it does (the same component without it is
/// the control).
fn doubling_component(tail: bool) -> Vec<u8> {
    let call = if tail { "return_call $double" } else { "call $double" };
    wat::parse_str(format!(
        r#"(component
             (core module $m
               (func $double (param i32) (result i32) local.get 0 local.get 0 i32.add)
               (func (export "twice") (param i32) (result i32) local.get 0 {call}))
             (core instance $i (instantiate $m))
             (func (export "twice") (param "n" u32) (result u32) (canon lift (core func $i "twice"))))"#
    ))
    .expect("valid component text")
}

#[tokio::test(flavor = "multi_thread")]
async fn a_component_the_baseline_compiler_refuses_runs_on_cranelift_code_from_its_first_call() {
    let ws = workspace();
    let cache = workspace();
    let engine = fresh_engine(EngineOptions::default());
    // Held: code that went through the baseline tier stays there, so the control shows it.
    let hold = engine.hold_optimizations();
    let (mut rt, events) = runtime(ws.path(), cache.path(), engine.clone(), "");
    rt.load(ToolSource::bytes("control.wasm", doubling_component(false))).await.expect("load the control");
    let r = call(&rt, &Session::new(), "twice", json!({"n": 21})).await;
    assert_eq!(r.text(), "42", "{r:?}");
    assert_eq!(last_tier(&events), Some(Tier::Baseline), "the control runs baseline code first");

    let engine = fresh_engine(EngineOptions::default());
    let _hold2 = engine.hold_optimizations();
    let (mut rt, events) = runtime(ws.path(), cache.path(), engine.clone(), "");
    rt.load(ToolSource::bytes("tail.wasm", doubling_component(true))).await.expect("load: Cranelift compiles it");
    let r = call(&rt, &Session::new(), "twice", json!({"n": 21})).await;
    assert_eq!(r.text(), "42", "{r:?}");
    assert_eq!(last_tier(&events), Some(Tier::Optimized), "its first call runs Cranelift's code");
    assert_eq!(rt.code_state("twice"), Some(CodeState::Optimized), "no baseline code exists for it");
    assert!(engine.optimizing().is_empty(), "nothing left to optimise");
    assert_eq!(cwasm_files(cache.path()).len(), 1, "Cranelift's code is cached as usual");
    drop(hold);
}
