//! A whole turn (`Runtime::run_batch`): results in tool_use order, parallel batches bounded by
//! `max_concurrency`, isolation of a trap, read-only grants inside parallel batches, and the
//! order in which context updates are applied.

use serde_json::json;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use toolhost::policy::Config;
use toolhost::{Event, OutcomeKind, Runtime, Session, ToolSource, ToolUse};
use toolhost_tests::{engine, guests, workspace};

async fn runtime_with(
    ws: &std::path::Path,
    max_concurrency: usize,
    events: Option<toolhost::EventSink>,
) -> Arc<Runtime> {
    let mut b = Runtime::builder()
        .permission_mode(toolhost::policy::Mode::Bypass)
        .engine(engine())
        .workspace(ws)
        .config(Config::default())
        .max_concurrency(max_concurrency);
    if let Some(sink) = events {
        b = b.events(sink);
    }
    let mut rt = b.build().unwrap();
    for (label, bytes) in [("sleep.wasm", guests::SLEEP), ("probe.wasm", guests::PROBE), ("ctx.wasm", guests::CTX)] {
        rt.load(ToolSource::bytes(label, bytes)).await.unwrap();
    }
    for (name, bytes) in toolhost_default_tools::TOOLS {
        rt.load(ToolSource::embedded(name, bytes)).await.unwrap();
    }
    Arc::new(rt)
}

/// An event sink that sends the id of every call that starts.
fn starts() -> (toolhost::EventSink, tokio::sync::mpsc::UnboundedReceiver<String>) {
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    let sink: toolhost::EventSink = Arc::new(move |e| {
        if let Event::Start { id, .. } = e {
            let _ = tx.send(id);
        }
    });
    (sink, rx)
}

fn call(id: &str, tool: &str, input: serde_json::Value) -> ToolUse {
    ToolUse::new(id, tool, input)
}

#[tokio::test(flavor = "multi_thread")]
async fn results_come_back_in_tool_use_order_and_context_flows_between_batches() {
    let ws = workspace();
    std::fs::write(ws.path().join("a.txt"), "hello\nworld\n").unwrap();
    let rt = runtime_with(ws.path(), 10, None).await;
    let calls = [
        call("r1", "Read", json!({"file_path": "a.txt"})),
        call("g1", "Glob", json!({"pattern": "*.txt"})),
        call("e1", "Edit", json!({"file_path": "a.txt", "old_string": "world", "new_string": "there"})),
        call("r2", "Read", json!({"file_path": "a.txt"})),
        call("x1", "Nope", json!({})),
    ];
    let results = rt.run_batch(&Session::new(), &calls, toolhost::CallOptions::new()).await;
    let ids: Vec<&str> = results.iter().map(|r| r.tool_use_id.as_str()).collect();
    assert_eq!(ids, ["r1", "g1", "e1", "r2", "x1"]);
    // The parallel Read's context update was applied after its batch, before the Edit.
    assert_eq!(results[2].outcome, OutcomeKind::Success, "{}", results[2].text());
    assert!(results[3].text().contains("there"), "{}", results[3].text());
    assert_eq!(results[4].outcome, OutcomeKind::UnknownTool);
    assert_eq!(std::fs::read_to_string(ws.path().join("a.txt")).unwrap(), "hello\nthere\n");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_parallel_batch_never_runs_more_than_max_concurrency_calls_at_once() {
    let ws = workspace();
    let running = Arc::new(AtomicUsize::new(0));
    let peak = Arc::new(AtomicUsize::new(0));
    let (r, p) = (running.clone(), peak.clone());
    let sink: toolhost::EventSink = Arc::new(move |e| match e {
        Event::Start { .. } => {
            let now = r.fetch_add(1, Ordering::SeqCst) + 1;
            p.fetch_max(now, Ordering::SeqCst);
        }
        Event::Finish { outcome: OutcomeKind::Success, .. } => {
            r.fetch_sub(1, Ordering::SeqCst);
        }
        _ => {}
    });
    let rt = runtime_with(ws.path(), 2, Some(sink)).await;
    let calls: Vec<ToolUse> = (0..6).map(|i| call(&format!("s{i}"), "Sleep", json!({"ms": 50}))).collect();
    let results = rt.run_batch(&Session::new(), &calls, toolhost::CallOptions::new()).await;
    assert!(results.iter().all(|r| r.outcome == OutcomeKind::Success), "{results:?}");
    assert_eq!(results.iter().map(|r| r.tool_use_id.clone()).collect::<Vec<_>>(), ["s0", "s1", "s2", "s3", "s4", "s5"]);
    let peak = peak.load(Ordering::SeqCst);
    // Two at once, never more (six calls of 50 ms each: the second of a pair starts while the
    // first sleeps).
    assert_eq!(peak, 2, "at most 2 calls ran at once, and 2 did");
    assert_eq!(running.load(Ordering::SeqCst), 0);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_trap_in_one_parallel_call_leaves_its_siblings_intact() {
    let ws = workspace();
    std::fs::write(ws.path().join("f.txt"), "sibling data").unwrap();
    let rt = runtime_with(ws.path(), 10, None).await;
    let read = |id: &str| call(id, "Probe", json!({"op": "read", "path": "f.txt", "claim_safe": true}));
    let calls = [read("a"), call("b", "Probe", json!({"op": "panic", "claim_safe": true})), read("c")];
    let results = rt.run_batch(&Session::new(), &calls, toolhost::CallOptions::new()).await;
    assert_eq!(results[1].outcome, OutcomeKind::Panic, "{}", results[1].text());
    assert!(results[1].text().contains("probe panicked on request"));
    for r in [&results[0], &results[2]] {
        assert_eq!(r.outcome, OutcomeKind::Success, "{}", r.text());
        assert_eq!(r.text(), "sibling data");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_tool_that_lies_about_being_concurrency_safe_cannot_write() {
    let ws = workspace();
    let rt = runtime_with(ws.path(), 10, None).await;
    let write = |id: &str, file: &str, claim_safe: bool| {
        call(id, "Probe", json!({"op": "write", "path": file, "content": "x", "claim_safe": claim_safe}))
    };
    // Two claimed-safe writers form a parallel batch: their grants are read-only.
    let results = rt
        .run_batch(
            &Session::new(),
            &[write("w1", "one.txt", true), write("w2", "two.txt", true)],
            toolhost::CallOptions::new(),
        )
        .await;
    for r in &results {
        assert_eq!(r.outcome, OutcomeKind::Denied, "{}", r.text());
        assert!(r.is_error);
    }
    assert!(!ws.path().join("one.txt").exists() && !ws.path().join("two.txt").exists());
    // The same write, honestly unsafe, runs alone with its full grant.
    let results = rt.run_batch(&Session::new(), &[write("w3", "three.txt", false)], toolhost::CallOptions::new()).await;
    assert_eq!(results[0].outcome, OutcomeKind::Success, "{}", results[0].text());
    assert_eq!(std::fs::read_to_string(ws.path().join("three.txt")).unwrap(), "x");
}

#[tokio::test(flavor = "multi_thread")]
async fn context_updates_of_a_parallel_batch_apply_after_it_in_model_order() {
    let ws = workspace();
    let rt = runtime_with(ws.path(), 10, None).await;
    let session = Session::new();
    let set = |id: &str, value: &str| call(id, "Ctx", json!({"set": "k", "value": value, "get": "k", "safe": true}));
    // Whichever call finishes first, the updates apply in model order: the last one wins.
    let results = rt
        .run_batch(
            &session,
            &[set("c1", "first"), set("c2", "second"), set("c3", "third")],
            toolhost::CallOptions::new(),
        )
        .await;
    // Inside the batch every call saw the context as it was before the batch.
    for r in &results {
        assert_eq!(r.text(), "none", "{r:?}");
    }
    assert_eq!(session.get(&toolhost::tool_namespace("Ctx"), "k").as_deref(), Some("\"third\""));
    // A serial call's update is visible to the next call at once.
    let results = rt
        .run_batch(
            &session,
            &[call("c4", "Ctx", json!({"set": "k", "value": "fourth"})), call("c5", "Ctx", json!({"get": "k"}))],
            toolhost::CallOptions::new(),
        )
        .await;
    assert_eq!(results[1].text(), "\"fourth\"");
}

#[tokio::test(flavor = "multi_thread")]
async fn duplicate_ids_are_refused_and_every_call_still_gets_a_result() {
    let ws = workspace();
    let rt = runtime_with(ws.path(), 10, None).await;
    let calls = [
        call("same", "Sleep", json!({"ms": 1})),
        call("same", "Sleep", json!({"ms": 1})),
        call("bad", "Sleep", json!({"ms": "x"})),
    ];
    let results = rt.run_batch(&Session::new(), &calls, toolhost::CallOptions::new()).await;
    assert_eq!(results.len(), 3);
    assert_eq!(results[0].outcome, OutcomeKind::Success);
    assert!(results[1].is_error && results[1].text().contains("duplicate tool_use id"), "{}", results[1].text());
    assert_eq!(results[2].outcome, OutcomeKind::SchemaError);
}

#[tokio::test(flavor = "multi_thread")]
async fn max_concurrency_below_one_is_an_error_not_a_hang() {
    let ws = workspace();
    let err = Runtime::builder()
        .permission_mode(toolhost::policy::Mode::Bypass)
        .engine(engine())
        .workspace(ws.path())
        .max_concurrency(0)
        .build()
        .unwrap_err();
    assert!(toolhost::error_text(&err).contains("max_concurrency"), "{err}");
    assert!(matches!(err, toolhost::Error::Config(toolhost::SettingError::ZeroConcurrency)), "{err:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn abort_mid_batch_interrupts_running_calls_and_answers_every_call() {
    let ws = workspace();
    std::fs::write(ws.path().join("a.txt"), "x").unwrap();
    let cancel = toolhost::CancellationToken::new();
    let started = Arc::new(AtomicUsize::new(0));
    let (c, s) = (cancel.clone(), started.clone());
    // Abort as soon as the second sleeper has started: both are then running, nothing else is.
    let sink: toolhost::EventSink = Arc::new(move |e| {
        if let Event::Start { .. } = e
            && s.fetch_add(1, Ordering::SeqCst) + 1 == 2
        {
            c.cancel();
        }
    });
    let rt = runtime_with(ws.path(), 10, Some(sink)).await;
    let calls = [
        call("s1", "Sleep", json!({"ms": 600_000})),
        call("s2", "Sleep", json!({"ms": 600_000})),
        call("w1", "Probe", json!({"op": "write", "path": "b.txt", "content": "never"})),
        call("r1", "Read", json!({"file_path": "a.txt"})),
    ];
    let results = rt.run_batch(&Session::new(), &calls, toolhost::CallOptions::new().cancel(cancel.clone())).await;
    assert_eq!(results.iter().map(|r| r.tool_use_id.as_str()).collect::<Vec<_>>(), ["s1", "s2", "w1", "r1"]);
    for r in &results {
        assert_eq!(r.outcome, OutcomeKind::Interrupted, "{r:?}");
        assert!(r.is_error);
        assert_eq!(r.text(), "Interrupted by user");
    }
    assert_eq!(started.load(Ordering::SeqCst), 2, "queued calls never started");
    assert!(!ws.path().join("b.txt").exists());
}

/// A caller that stops waiting for a turn (drops `run_batch`'s future) stops the turn: its
/// running call is interrupted and its queued calls never run, so the next turn is not held up
/// behind them.
#[tokio::test(flavor = "multi_thread")]
async fn dropping_a_turn_stops_its_calls() {
    let ws = workspace();
    let (sink, mut started_rx) = starts();
    let rt = runtime_with(ws.path(), 10, Some(sink)).await;
    let session = Session::new();
    let calls = [
        call("long", "Sleep", json!({"ms": 600_000})),
        call("queued", "Probe", json!({"op": "write", "path": "b.txt", "content": "never"})),
    ];
    tokio::select! {
        _ = rt.run_batch(&session, &calls, toolhost::CallOptions::new()) => panic!("the sleeper finished"),
        started = started_rx.recv() => assert_eq!(started.as_deref(), Some("long")),
    }
    // The turn's future is dropped: an unsafe call of a new turn runs now, not in ten minutes.
    let next = [call("next", "Probe", json!({"op": "write", "path": "c.txt", "content": "ok"}))];
    let results = tokio::time::timeout(
        std::time::Duration::from_secs(60),
        rt.run_batch(&session, &next, toolhost::CallOptions::new()),
    )
    .await
    .expect("the dropped turn still holds the queue");
    assert!(!results[0].is_error, "{:?}", results[0]);
    assert!(ws.path().join("c.txt").exists());
    assert!(!ws.path().join("b.txt").exists(), "a call of the dropped turn ran");
}

#[tokio::test(flavor = "multi_thread")]
async fn streamed_calls_start_before_the_turn_is_complete() {
    let ws = workspace();
    let (sink, mut started_rx) = starts();
    let rt = runtime_with(ws.path(), 10, Some(sink)).await;
    let (tx, rx) = tokio::sync::mpsc::channel(4);
    let session = Session::new();
    let cancel = toolhost::CancellationToken::new();
    let mut emitted = Vec::new();
    let driver = rt.run_turn(&session, rx, toolhost::CallOptions::new().cancel(cancel.clone()), |r| emitted.push(r));
    let feeder = async {
        tx.send(toolhost::Submission::Call(call("first", "Sleep", json!({"ms": 1})))).await.unwrap();
        // The first call starts while the turn is still open: the feeder waits for it.
        assert_eq!(started_rx.recv().await.as_deref(), Some("first"));
        tx.send(toolhost::Submission::Call(call("second", "Sleep", json!({"ms": 1})))).await.unwrap();
        drop(tx);
    };
    let guard = tokio::time::timeout(std::time::Duration::from_secs(120), async { tokio::join!(driver, feeder) });
    guard.await.expect("a streamed call must start before the input ends");
    assert_eq!(emitted.iter().map(|r| r.tool_use_id.as_str()).collect::<Vec<_>>(), ["first", "second"]);
    assert!(emitted.iter().all(|r| r.outcome == OutcomeKind::Success));
}

#[tokio::test(flavor = "multi_thread")]
async fn an_unsafe_call_runs_alone_between_the_safe_groups_around_it() {
    let ws = workspace();
    let log = Arc::new(std::sync::Mutex::new(Vec::<String>::new()));
    let l = log.clone();
    let sink: toolhost::EventSink = Arc::new(move |e| match e {
        Event::Start { id, .. } => l.lock().unwrap().push(format!("start {id}")),
        Event::Finish { id, .. } => l.lock().unwrap().push(format!("finish {id}")),
        _ => {}
    });
    let rt = runtime_with(ws.path(), 10, Some(sink)).await;
    let sleep = |id: &str| call(id, "Sleep", json!({"ms": 20}));
    let calls = [
        sleep("a1"),
        sleep("a2"),
        call("w", "Probe", json!({"op": "write", "path": "w.txt", "content": "x"})),
        sleep("b1"),
        sleep("b2"),
    ];
    let results = rt.run_batch(&Session::new(), &calls, toolhost::CallOptions::new()).await;
    assert!(results.iter().all(|r| r.outcome == OutcomeKind::Success), "{results:?}");
    let log = log.lock().unwrap().clone();
    let at = |entry: &str| log.iter().position(|e| e == entry).unwrap_or_else(|| panic!("{entry} missing: {log:?}"));
    // The writer starts only after both earlier calls finished, and finishes before any
    // later call starts.
    assert!(at("start w") > at("finish a1") && at("start w") > at("finish a2"), "{log:?}");
    assert!(at("finish w") < at("start b1") && at("finish w") < at("start b2"), "{log:?}");
    // It ran with its full grant: alone, not read-only.
    assert_eq!(std::fs::read_to_string(ws.path().join("w.txt")).unwrap(), "x");
}

/// A batch of one call runs on the caller's task (no hand-off to a task and back), by the rules
/// of any call of a turn: a claimed-safe call has read-only grants, its context update applies
/// once it is over, a cancelled call is interrupted, an unknown tool is an error result.
#[tokio::test(flavor = "multi_thread")]
async fn a_lone_call_is_run_by_the_rules_of_a_turn() {
    let ws = workspace();
    let rt = runtime_with(ws.path(), 10, None).await;
    let session = Session::new();
    let lone = |c: ToolUse, options: toolhost::CallOptions| {
        let (rt, session) = (rt.clone(), &session);
        async move { rt.run_batch(session, &[c], options).await.remove(0) }
    };
    let write = |file: &str, claim_safe: bool| {
        call("w", "Probe", json!({"op": "write", "path": file, "content": "x", "claim_safe": claim_safe}))
    };
    let r = lone(write("one.txt", true), toolhost::CallOptions::new()).await;
    assert_eq!((r.outcome, r.tool_use_id.as_str()), (OutcomeKind::Denied, "w"), "{}", r.text());
    assert!(!ws.path().join("one.txt").exists());

    let set = call("c", "Ctx", json!({"set": "k", "value": "v", "get": "k", "safe": true}));
    let r = lone(set, toolhost::CallOptions::new()).await;
    assert_eq!(r.text(), "none", "{r:?}");
    assert_eq!(session.get(&toolhost::tool_namespace("Ctx"), "k").as_deref(), Some("\"v\""));

    let r = lone(call("u", "Nope", json!({})), toolhost::CallOptions::new()).await;
    assert_eq!(r.outcome, OutcomeKind::UnknownTool, "{}", r.text());

    let cancel = toolhost::CancellationToken::new();
    cancel.cancel();
    let r = lone(write("never.txt", false), toolhost::CallOptions::new().cancel(cancel)).await;
    assert_eq!(r.outcome, OutcomeKind::Interrupted, "{}", r.text());
    assert!(!ws.path().join("never.txt").exists());

    let r = lone(write("two.txt", false), toolhost::CallOptions::new()).await;
    assert_eq!(r.outcome, OutcomeKind::Success, "{}", r.text());
    assert_eq!(std::fs::read_to_string(ws.path().join("two.txt")).unwrap(), "x");
}

/// A lone call takes its turn in the runtime's scheduler like any other call: an unsafe one
/// waits for another turn's running call, and a lone call whose future is dropped stops and
/// gives its place up.
#[tokio::test(flavor = "multi_thread")]
async fn a_lone_call_waits_its_turn_and_gives_its_place_up_when_dropped() {
    let ws = workspace();
    let seen = Arc::new(std::sync::Mutex::new(Vec::<String>::new()));
    let (started_tx, mut started) = tokio::sync::mpsc::unbounded_channel();
    let log = seen.clone();
    let sink: toolhost::EventSink = Arc::new(move |e| match e {
        Event::Start { id, .. } => {
            log.lock().unwrap().push(format!("start {id}"));
            let _ = started_tx.send(id);
        }
        Event::Finish { id, .. } => log.lock().unwrap().push(format!("finish {id}")),
        _ => {}
    });
    let rt = runtime_with(ws.path(), 10, Some(sink)).await;
    let cancel = toolhost::CancellationToken::new();
    let sleeper = {
        let (rt, options) = (rt.clone(), toolhost::CallOptions::new().cancel(cancel.clone()));
        tokio::spawn(async move {
            rt.run_batch(&Session::new(), &[call("sleep", "Sleep", json!({"ms": 600_000}))], options).await
        })
    };
    while started.recv().await.as_deref() != Some("sleep") {}
    let writer = {
        let rt = rt.clone();
        let write = call("b", "Probe", json!({"op": "write", "path": "b.txt", "content": "x"}));
        tokio::spawn(async move { rt.run_batch(&Session::new(), &[write], toolhost::CallOptions::new()).await })
    };
    // The writer is queued behind the sleeper (a safe call): it may not start beside it.
    let queued = async {
        while !format!("{:?}", rt.scheduler()).contains("queued: 1") {
            tokio::time::sleep(std::time::Duration::from_millis(5)).await;
        }
    };
    tokio::time::timeout(std::time::Duration::from_secs(60), queued).await.expect("the writer is queued");
    cancel.cancel();
    let slept = sleeper.await.unwrap();
    assert_eq!(slept[0].outcome, OutcomeKind::Interrupted, "{:?}", slept[0]);
    let wrote = writer.await.unwrap();
    assert_eq!(wrote[0].outcome, OutcomeKind::Success, "{:?}", wrote[0]);
    let seen = seen.lock().unwrap().clone();
    let at = |what: &str| seen.iter().position(|s| s == what).unwrap_or_else(|| panic!("{what}: {seen:?}"));
    assert!(at("finish sleep") < at("start b"), "{seen:?}");

    // Dropped while it runs: the next unsafe call runs now, not in ten minutes.
    let (session, long) = (Session::new(), [call("long", "Sleep", json!({"ms": 600_000}))]);
    tokio::select! {
        _ = rt.run_batch(&session, &long, toolhost::CallOptions::new()) => panic!("the sleeper finished"),
        () = async { while started.recv().await.as_deref() != Some("long") {} } => {}
    }
    let next = [call("next", "Probe", json!({"op": "write", "path": "c.txt", "content": "ok"}))];
    let results = tokio::time::timeout(
        std::time::Duration::from_secs(60),
        rt.run_batch(&Session::new(), &next, toolhost::CallOptions::new()),
    )
    .await
    .expect("the dropped call still holds the queue");
    assert_eq!(results[0].outcome, OutcomeKind::Success, "{:?}", results[0]);
}

/// The library's plain `Runtime::call` takes its turn in the scheduler like every call of a
/// turn (issue 30): calls made at once from several tasks respect `max_concurrency`, a call of
/// a tool that is not concurrency-safe waits for the calls running before it (and so never
/// writes beside them), and a call cancelled while it waits has its `Finish` event (the audit
/// log's line).
#[tokio::test(flavor = "multi_thread")]
async fn plain_calls_from_many_tasks_go_through_the_scheduler() {
    let ws = workspace();
    let events: Arc<std::sync::Mutex<Vec<(String, String)>>> = Arc::default();
    let (running, peak) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let (e, r, p) = (events.clone(), running.clone(), peak.clone());
    let sink: toolhost::EventSink = Arc::new(move |ev| match ev {
        Event::Start { id, .. } => {
            let now = r.fetch_add(1, Ordering::SeqCst) + 1;
            p.fetch_max(now, Ordering::SeqCst);
            e.lock().unwrap().push(("start".into(), id));
        }
        Event::Finish { id, outcome, .. } => {
            if outcome == OutcomeKind::Success {
                r.fetch_sub(1, Ordering::SeqCst);
            }
            e.lock().unwrap().push((format!("finish {outcome:?}"), id));
        }
        _ => {}
    });
    let rt = runtime_with(ws.path(), 2, Some(sink)).await;
    let session = Arc::new(Session::new());

    // Six safe calls at once, with max_concurrency 2.
    let tasks: Vec<_> = (0..6)
        .map(|i| {
            let (rt, session) = (rt.clone(), session.clone());
            tokio::spawn(async move {
                rt.call(&session, &call(&format!("s{i}"), "Sleep", json!({"ms": 60})), toolhost::CallOptions::new())
                    .await
            })
        })
        .collect();
    for t in tasks {
        assert_eq!(t.await.unwrap().outcome, OutcomeKind::Success);
    }
    let seen = peak.load(Ordering::SeqCst);
    assert_eq!(seen, 2, "at most 2 calls ran at once, and 2 did");

    // An unsafe write made while a call runs waits for it.
    let (rt2, s2) = (rt.clone(), session.clone());
    let long = tokio::spawn(async move {
        rt2.call(&s2, &call("long", "Sleep", json!({"ms": 400})), toolhost::CallOptions::new()).await
    });
    while !events.lock().unwrap().iter().any(|(k, id)| k == "start" && id == "long") {
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    }
    let write = call("w", "Probe", json!({"op": "write", "path": "w.txt", "content": "x"}));
    let written = rt.call(&session, &write, toolhost::CallOptions::new()).await;
    assert_eq!(written.outcome, OutcomeKind::Success, "{}", written.text());
    assert_eq!(long.await.unwrap().outcome, OutcomeKind::Success);
    let order: Vec<(String, String)> =
        events.lock().unwrap().iter().filter(|(_, id)| id == "long" || id == "w").cloned().collect();
    let pos = |k: &str, id: &str| order.iter().position(|(a, b)| a.starts_with(k) && b == id).unwrap();
    assert!(pos("finish", "long") < pos("start", "w"), "the write ran beside another call: {order:?}");

    // Cancelled while it waits: interrupted, with its Finish event.
    let (rt3, s3) = (rt.clone(), session.clone());
    let long = tokio::spawn(async move {
        rt3.call(&s3, &call("long2", "Sleep", json!({"ms": 400})), toolhost::CallOptions::new()).await
    });
    while !events.lock().unwrap().iter().any(|(k, id)| k == "start" && id == "long2") {
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    }
    let cancel = toolhost::CancellationToken::new();
    let c = cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        c.cancel();
    });
    let queued = call("q", "Probe", json!({"op": "write", "path": "q.txt", "content": "x"}));
    let result = rt.call(&session, &queued, toolhost::CallOptions::new().cancel(cancel)).await;
    assert_eq!(result.outcome, OutcomeKind::Interrupted, "{}", result.text());
    assert!(!ws.path().join("q.txt").exists());
    assert!(
        events.lock().unwrap().iter().any(|(k, id)| k == "finish Interrupted" && id == "q"),
        "no Finish event for the cancelled call: {:?}",
        events.lock().unwrap()
    );
    long.await.unwrap();
}
