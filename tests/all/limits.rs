//! Misbehaving guests: each one ends in an `is_error` result of the right kind, with a message
//! that says what happened, and leaves the runtime healthy for the next call. Also captured
//! output floods, a guest parked in a host call, and progress events.

use serde_json::json;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use toolhost::{Event, EventSink, OutcomeKind, Runtime, Session, ToolResult, ToolSource};
use toolhost_tests::{call, config, engine, guests, runtime, workspace};

/// A guest as a source labelled like its file.
fn guest(label: &str, bytes: &'static [u8]) -> ToolSource {
    ToolSource::bytes(format!("{label}.wasm"), bytes)
}

/// A runtime with `Noop` and the given guest, under `toml`.
async fn with_guest(ws: &std::path::Path, toml: &str, label: &str, bytes: &'static [u8]) -> Runtime {
    runtime(ws, config(toml), vec![guest("noop", guests::NOOP), guest(label, bytes)]).await
}

/// The failed result of calling `tool` with `{}`, checked for kind; returns its text.
async fn fails_with(rt: &Runtime, session: &Session, tool: &str, kind: OutcomeKind) -> String {
    let result = call(rt, session, tool, json!({})).await;
    assert!(result.is_error, "{tool} should fail, got {result:?}");
    assert_eq!(result.outcome, kind, "{tool}: wrong outcome for {result:?}");
    let text = result.text();
    assert!(!text.trim().is_empty(), "{tool}: an error result needs a message");
    text
}

/// A healthy call in the same runtime still works.
async fn still_healthy(rt: &Runtime, session: &Session) {
    let result: ToolResult = call(rt, session, "Noop", json!({"text": "still alive"})).await;
    assert!(!result.is_error, "Noop after a failure: {result:?}");
    assert_eq!(result.outcome, OutcomeKind::Success);
    assert_eq!(result.text(), "still alive");
}

#[tokio::test(flavor = "multi_thread")]
async fn an_endless_loop_times_out() {
    let ws = workspace();
    let rt = with_guest(ws.path(), "[tools.Spin]\ntimeout_ms = 300", "spin", guests::SPIN).await;
    let session = Session::new();
    let text = fails_with(&rt, &session, "Spin", OutcomeKind::Timeout).await;
    assert!(text.contains("timed out"), "{text}");
    assert!(text.contains("300"), "the message names the limit: {text}");
    assert!(text.contains("timeout_ms"), "the message names the setting: {text}");
    still_healthy(&rt, &session).await;
    // Twice: the first timeout left nothing behind that would change the second.
    let again = fails_with(&rt, &session, "Spin", OutcomeKind::Timeout).await;
    assert_eq!(again, text);
    still_healthy(&rt, &session).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn an_endless_loop_runs_out_of_fuel() {
    let ws = workspace();
    // A long timeout so that only fuel can stop it.
    let toml = "[tools.Spin]\nfuel = 20000000\ntimeout_ms = 600000";
    let rt = with_guest(ws.path(), toml, "spin", guests::SPIN).await;
    let session = Session::new();
    let text = fails_with(&rt, &session, "Spin", OutcomeKind::OutOfFuel).await;
    assert!(text.contains("fuel"), "{text}");
    assert!(text.contains("20000000"), "the message names the limit: {text}");
    still_healthy(&rt, &session).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn an_allocation_bomb_hits_the_memory_limit() {
    let ws = workspace();
    let rt = with_guest(ws.path(), "[tools.AllocBomb]\nmemory_mib = 32", "alloc-bomb", guests::ALLOC_BOMB).await;
    let session = Session::new();
    let text = fails_with(&rt, &session, "AllocBomb", OutcomeKind::MemoryLimit).await;
    assert!(text.contains("memory"), "{text}");
    assert!(text.contains("32 MiB"), "the message names the limit: {text}");
    still_healthy(&rt, &session).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn the_memory_limit_applies_from_the_global_limits_too() {
    let ws = workspace();
    let rt = with_guest(ws.path(), "[limits]\nmemory_mib = 48", "alloc-bomb", guests::ALLOC_BOMB).await;
    let session = Session::new();
    let text = fails_with(&rt, &session, "AllocBomb", OutcomeKind::MemoryLimit).await;
    assert!(text.contains("48 MiB"), "{text}");
    // Noop runs under the same 48 MiB limit, which is plenty for it.
    still_healthy(&rt, &session).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn unbounded_recursion_overflows_the_stack() {
    let ws = workspace();
    let rt = with_guest(ws.path(), "", "recurse", guests::RECURSE).await;
    let session = Session::new();
    let text = fails_with(&rt, &session, "Recurse", OutcomeKind::StackOverflow).await;
    assert!(text.contains("stack"), "{text}");
    still_healthy(&rt, &session).await;
}

/// Rust keeps address-taken locals on a shadow stack in linear memory; unbounded recursion
/// with such frames runs that out before the wasm stack. It is still a stack overflow, and
/// must say so rather than look like an arbitrary out-of-bounds access (which is all wasmtime
/// reports: the host tells them apart by the call stack).
#[tokio::test(flavor = "multi_thread")]
async fn unbounded_recursion_on_the_shadow_stack_is_a_stack_overflow() {
    let ws = workspace();
    let rt = with_guest(ws.path(), "", "recurse", guests::RECURSE).await;
    let session = Session::new();
    let result = call(&rt, &session, "Recurse", json!({"shadow": true})).await;
    assert!(result.is_error, "{result:?}");
    assert_eq!(result.outcome, OutcomeKind::StackOverflow, "{result:?}");
    assert!(result.text().contains("nested calls of"), "{}", result.text());
    still_healthy(&rt, &session).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_panic_reports_its_message() {
    let ws = workspace();
    let rt = with_guest(ws.path(), "", "panic", guests::PANIC).await;
    let session = Session::new();
    let text = fails_with(&rt, &session, "Panic", OutcomeKind::Panic).await;
    assert!(text.contains("boom: the tool panicked on purpose"), "{text}");
    assert!(text.contains("panicked"), "{text}");
    still_healthy(&rt, &session).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_trap_names_its_code() {
    let ws = workspace();
    let rt = with_guest(ws.path(), "", "unreachable", guests::UNREACHABLE).await;
    let session = Session::new();
    let text = fails_with(&rt, &session, "Unreachable", OutcomeKind::Trap).await;
    // The tool's own name contains the word too: look for the trap code itself.
    assert!(text.contains("`unreachable` instruction"), "{text}");
    assert!(!text.contains("panicked"), "not a panic: {text}");
    still_healthy(&rt, &session).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn every_failure_in_one_runtime_leaves_it_healthy() {
    let ws = workspace();
    let toml = "[tools.Spin]\ntimeout_ms = 300\n[tools.AllocBomb]\nmemory_mib = 32";
    let sources = vec![
        guest("noop", guests::NOOP),
        guest("spin", guests::SPIN),
        guest("alloc-bomb", guests::ALLOC_BOMB),
        guest("recurse", guests::RECURSE),
        guest("panic", guests::PANIC),
        guest("unreachable", guests::UNREACHABLE),
    ];
    let rt = runtime(ws.path(), config(toml), sources).await;
    let session = Session::new();
    for (tool, kind) in [
        ("Spin", OutcomeKind::Timeout),
        ("AllocBomb", OutcomeKind::MemoryLimit),
        ("Recurse", OutcomeKind::StackOverflow),
        ("Panic", OutcomeKind::Panic),
        ("Unreachable", OutcomeKind::Trap),
    ] {
        fails_with(&rt, &session, tool, kind).await;
        still_healthy(&rt, &session).await;
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_failure_does_not_disturb_concurrent_calls() {
    // Two runtimes on one engine (the engine and its instance pool are what a trap could
    // disturb), each with its own scheduler, so that their calls run at the same moment: a
    // `Sleep` in one, panics and no-ops in the other while it sleeps. (In one runtime the
    // scheduler runs `Panic`, which is not concurrency-safe, alone.)
    let ws = workspace();
    let failing = Arc::new(with_guest(ws.path(), "", "panic", guests::PANIC).await);
    let (started_tx, mut started) = tokio::sync::mpsc::unbounded_channel();
    let finished = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let sink: EventSink = {
        let finished = finished.clone();
        Arc::new(move |e| match e {
            Event::Start { .. } => {
                let _ = started_tx.send(());
            }
            Event::Finish { .. } => finished.store(true, std::sync::atomic::Ordering::SeqCst),
            _ => {}
        })
    };
    let mut sleeper = Runtime::builder()
        .permission_mode(toolhost::policy::Mode::Bypass)
        .engine(engine())
        .workspace(ws.path())
        .events(sink)
        .build()
        .unwrap();
    sleeper.load(guest("sleep", guests::SLEEP)).await.unwrap();
    let sleeper = Arc::new(sleeper);
    let sleeping = {
        let sleeper = sleeper.clone();
        tokio::spawn(async move { call(&sleeper, &Session::new(), "Sleep", json!({"ms": 4000})).await })
    };
    started.recv().await.expect("the sleep starts");

    let session = Arc::new(Session::new());
    let mut tasks = Vec::new();
    for i in 0..8 {
        let (rt, session) = (failing.clone(), session.clone());
        tasks.push(tokio::spawn(async move {
            if i % 2 == 0 {
                let r = call(&rt, &session, "Panic", json!({})).await;
                assert_eq!(r.outcome, OutcomeKind::Panic, "{r:?}");
            } else {
                let r = call(&rt, &session, "Noop", json!({"text": format!("call {i}")})).await;
                assert!(!r.is_error, "{r:?}");
                assert_eq!(r.text(), format!("call {i}"));
            }
        }));
    }
    for t in tasks {
        t.await.expect("task");
    }
    // The calls above ran while the sleep was on its store: they overlapped it.
    assert!(!finished.load(std::sync::atomic::Ordering::SeqCst), "the sleep ended before the panics did");
    let slept = sleeping.await.expect("task");
    assert_eq!(slept.outcome, OutcomeKind::Success, "{slept:?}");
    still_healthy(&failing, &session).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn flooding_stdout_and_stderr_is_capped_and_the_call_succeeds() {
    let ws = workspace();
    let rt = with_guest(ws.path(), "", "stdout-flood", guests::STDOUT_FLOOD).await;
    let session = Session::new();
    let result = call(&rt, &session, "StdoutFlood", json!({})).await;
    assert!(!result.is_error, "{result:?}");
    assert_eq!(result.outcome, OutcomeKind::Success);
    // Only the tool's return value reaches the model, never its stdout.
    assert_eq!(result.text(), "done");
    still_healthy(&rt, &session).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_panic_after_a_flood_is_still_found() {
    let ws = workspace();
    let rt = with_guest(ws.path(), "", "stdout-flood", guests::STDOUT_FLOOD).await;
    let session = Session::new();
    let result = call(&rt, &session, "StdoutFlood", json!({"then_panic": true})).await;
    assert!(result.is_error, "{result:?}");
    assert_eq!(result.outcome, OutcomeKind::Panic, "{result:?}");
    let text = result.text();
    // The capture keeps the end of stderr, where the panic message is...
    assert!(text.contains("flooded and then panicked"), "{text}");
    // ...and the 10 MiB before it never reach the model.
    assert!(text.len() < 10_000, "{} bytes of error text", text.len());
    still_healthy(&rt, &session).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_guest_asleep_in_the_host_still_times_out() {
    let ws = workspace();
    let rt = with_guest(ws.path(), "[tools.Sleep]\ntimeout_ms = 300", "sleep", guests::SLEEP).await;
    let session = Session::new();
    // A short sleep is fine...
    let short = call(&rt, &session, "Sleep", json!({"ms": 1})).await;
    assert!(!short.is_error, "{short:?}");
    assert_eq!(short.text(), "slept");
    // ...an hour-long one is stopped by the host's wall clock: no epoch check happens while the
    // guest waits in a WASI clock subscription. The outer guard only turns a hang into a failure.
    let long = tokio::time::timeout(Duration::from_secs(120), call(&rt, &session, "Sleep", json!({"ms": 3_600_000})))
        .await
        .expect("the timeout must stop a guest sleeping in the host");
    assert!(long.is_error, "{long:?}");
    assert_eq!(long.outcome, OutcomeKind::Timeout, "{long:?}");
    assert!(long.text().contains("300"), "{}", long.text());
    still_healthy(&rt, &session).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn progress_goes_to_events_and_never_to_the_result() {
    let ws = workspace();
    let events: Arc<Mutex<Vec<Event>>> = Arc::default();
    let sink: EventSink = {
        let events = events.clone();
        Arc::new(move |e| events.lock().unwrap().push(e))
    };
    let mut rt = Runtime::builder()
        .permission_mode(toolhost::policy::Mode::Bypass)
        .engine(engine())
        .workspace(ws.path())
        .events(sink)
        .build()
        .expect("runtime");
    rt.load(guest("progress", guests::PROGRESS)).await.expect("load Progress");
    let session = Session::new();
    let result = call(&rt, &session, "Progress", json!({})).await;
    assert!(!result.is_error, "{result:?}");
    assert_eq!(result.text(), "done");
    assert!(!result.text().contains("step"), "progress must not reach the model");

    let events = events.lock().unwrap().clone();
    let id = result.tool_use_id.clone();
    let progress: Vec<String> = events
        .iter()
        .filter_map(|e| match e {
            Event::Progress { id: pid, tool, message } => {
                assert_eq!(pid, &id, "progress carries the call's id");
                assert_eq!(tool, "Progress");
                Some(message.clone())
            }
            _ => None,
        })
        .collect();
    assert_eq!(progress, ["step 1", "step 2"], "events: {events:?}");
    // In order: the permission decision, start, the progress messages, finish.
    let kinds: Vec<&str> = events
        .iter()
        .map(|e| match e {
            Event::Decided { .. } => "decided",
            Event::Start { .. } => "start",
            Event::Progress { .. } => "progress",
            Event::Finish { .. } => "finish",
            _ => "other",
        })
        .collect();
    assert_eq!(kinds, ["decided", "start", "progress", "progress", "finish"], "events: {events:?}");
    match events.last() {
        Some(Event::Finish { id: fid, tool, outcome, .. }) => {
            assert_eq!(fid, &id);
            assert_eq!(tool, "Progress");
            assert_eq!(*outcome, OutcomeKind::Success);
        }
        other => panic!("expected a finish event last, got {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_failure_is_reported_in_the_finish_event() {
    let ws = workspace();
    let events: Arc<Mutex<Vec<Event>>> = Arc::default();
    let sink: EventSink = {
        let events = events.clone();
        Arc::new(move |e| events.lock().unwrap().push(e))
    };
    let mut rt = Runtime::builder()
        .permission_mode(toolhost::policy::Mode::Bypass)
        .engine(engine())
        .workspace(ws.path())
        .events(sink)
        .build()
        .expect("runtime");
    rt.load(guest("panic", guests::PANIC)).await.expect("load Panic");
    let result = call(&rt, &Session::new(), "Panic", json!({})).await;
    assert_eq!(result.outcome, OutcomeKind::Panic);
    let events = events.lock().unwrap().clone();
    let finish: Vec<OutcomeKind> = events
        .iter()
        .filter_map(|e| match e {
            Event::Finish { id, outcome, .. } if *id == result.tool_use_id => Some(*outcome),
            _ => None,
        })
        .collect();
    assert_eq!(finish, [OutcomeKind::Panic], "events: {events:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn context_updates_reach_later_calls() {
    let ws = workspace();
    let rt = with_guest(ws.path(), "", "ctx", guests::CTX).await;
    let session = Session::new();
    let first = call(&rt, &session, "Ctx", json!({"get": "greeting", "set": "greeting", "value": "hello"})).await;
    assert!(!first.is_error, "{first:?}");
    assert_eq!(first.text(), "none", "a call reads the map as it was when it started");
    assert_eq!(session.get(&toolhost::tool_namespace("Ctx"), "greeting").as_deref(), Some("\"hello\""));
    let second = call(&rt, &session, "Ctx", json!({"get": "greeting"})).await;
    assert_eq!(second.text(), "\"hello\"");
    // The host answers the reserved workspace key, and a tool cannot overwrite it.
    let ws_json = serde_json::to_string(&rt.workspace().display().to_string()).unwrap();
    let reserved = call(
        &rt,
        &session,
        "Ctx",
        json!({"get": toolhost::WORKSPACE_KEY, "set": toolhost::WORKSPACE_KEY, "value": "/elsewhere"}),
    )
    .await;
    assert_eq!(reserved.text(), ws_json);
    let again = call(&rt, &session, "Ctx", json!({"get": toolhost::WORKSPACE_KEY})).await;
    assert_eq!(again.text(), ws_json);
}
