//! What belongs to one call travels with it (`CallOptions`): its progress reaches that call's
//! receiver only, its questions that call's decider; and calls of runtimes that share one
//! `Scheduler` take turns in it, a turn's parallel updates applied before a later call starts.

use serde_json::json;
use std::sync::{Arc, Mutex};
use toolhost::policy::Mode;
use toolhost::{
    AskAnswer, AskRequest, CallOptions, Event, OutcomeKind, PermissionDecider, Runtime, Scheduler, Session, ToolSource,
    ToolUse,
};
use toolhost_tests::{engine, guests, workspace};

/// Progress messages received: (tool_use id, tool, message).
type ProgressLog = Arc<Mutex<Vec<(String, String, String)>>>;

/// Answers every question the same way, and counts them.
struct Fixed(AskAnswer, Mutex<Vec<String>>);

#[async_trait::async_trait]
impl PermissionDecider for Fixed {
    async fn ask(&self, request: &AskRequest) -> AskAnswer {
        self.1.lock().unwrap().push(request.tool_use_id.clone());
        self.0.clone()
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn each_calls_progress_goes_to_its_own_receiver_only() {
    let ws = workspace();
    let mut rt =
        Runtime::builder().permission_mode(Mode::Bypass).engine(engine()).workspace(ws.path()).build().unwrap();
    rt.load(ToolSource::bytes("progress.wasm", guests::PROGRESS)).await.unwrap();
    let session = Session::new();
    let received = |log: &ProgressLog| {
        let log = log.clone();
        move |p: toolhost::Progress<'_>| {
            log.lock().unwrap().push((p.tool_use_id.to_string(), p.tool.to_string(), p.message.to_string()))
        }
    };
    let (a, b): (ProgressLog, ProgressLog) = (Arc::default(), Arc::default());
    let (pa, pb) = (ToolUse::new("pa", "Progress", json!({})), ToolUse::new("pb", "Progress", json!({})));
    let (ra, rb) = tokio::join!(
        rt.call(&session, &pa, CallOptions::new().progress(received(&a))),
        rt.call(&session, &pb, CallOptions::new().progress(received(&b))),
    );
    assert_eq!((ra.text(), rb.text()), ("done".into(), "done".into()), "{ra:?} {rb:?}");
    for (log, id) in [(a, "pa"), (b, "pb")] {
        let log = log.lock().unwrap().clone();
        let expected: Vec<_> =
            ["step 1", "step 2"].iter().map(|m| (id.to_string(), "Progress".to_string(), m.to_string())).collect();
        assert_eq!(log, expected, "the call {id} gets its own progress, and only its own");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn each_call_is_asked_through_its_own_decider() {
    let ws = workspace();
    // No runtime-wide decider: only a call that brings one can be asked.
    let mut rt = Runtime::builder()
        .permission_mode(Mode::Default)
        .ask_rule("Progress".parse().unwrap())
        .engine(engine())
        .workspace(ws.path())
        .build()
        .unwrap();
    rt.load(ToolSource::bytes("progress.wasm", guests::PROGRESS)).await.unwrap();
    let session = Session::new();
    let yes = Arc::new(Fixed(AskAnswer::AllowOnce, Mutex::default()));
    let no = Arc::new(Fixed(AskAnswer::Deny(Some("not in this build".into())), Mutex::default()));
    let progress = |id: &str| ToolUse::new(id, "Progress", json!({}));

    let allowed = rt.call(&session, &progress("y1"), CallOptions::new().decider(yes.clone())).await;
    assert!(!allowed.is_error, "{allowed:?}");
    let denied = rt.call(&session, &progress("n1"), CallOptions::new().decider(no.clone())).await;
    assert_eq!(denied.outcome, OutcomeKind::PermissionDenied, "{denied:?}");
    assert!(denied.text().contains("not in this build"), "{}", denied.text());
    let nobody = rt.call(&session, &progress("x1"), CallOptions::new()).await;
    assert_eq!(nobody.outcome, OutcomeKind::PermissionDenied, "{nobody:?}");
    assert!(nobody.text().contains("no one to ask"), "{}", nobody.text());
    assert_eq!(*yes.1.lock().unwrap(), ["y1"], "each decider hears only its own call");
    assert_eq!(*no.1.lock().unwrap(), ["n1"]);
}

/// Runtime A runs a turn (a safe `Ctx` set, then an unsafe `Ctx` get) while a safe call of
/// runtime B, which shares A's scheduler, is running (its place held here). A's set runs beside
/// it; A's get (unsafe) waits until B's call is over, and then sees the set's update: the turn
/// applied its period's updates before anything else started.
#[tokio::test(flavor = "multi_thread")]
async fn runtimes_sharing_a_scheduler_take_turns_and_a_turn_applies_its_period_first() {
    let ws = workspace();
    let events: Arc<Mutex<Vec<(String, &'static str)>>> = Arc::default();
    let sink: toolhost::EventSink = {
        let events = events.clone();
        Arc::new(move |e| match e {
            Event::Start { id, .. } => events.lock().unwrap().push((id, "start")),
            Event::Finish { id, .. } => events.lock().unwrap().push((id, "finish")),
            _ => {}
        })
    };
    let scheduler = Scheduler::new(10);
    let build = || {
        Runtime::builder()
            .permission_mode(Mode::Bypass)
            .engine(engine())
            .workspace(ws.path())
            .scheduler(scheduler.clone())
            .events(sink.clone())
            .build()
            .unwrap()
    };
    let mut a = build();
    a.load(ToolSource::bytes("ctx.wasm", guests::CTX)).await.unwrap();
    let a = Arc::new(a);
    let b = build();
    assert!(Arc::ptr_eq(a.scheduler(), b.scheduler()));

    // B's safe call is admitted first and runs until `b_running` is dropped.
    let b_running = b.scheduler().ticket().admit(true).await;

    let turn = [
        ToolUse::new("a-set", "Ctx", json!({"set": "k", "value": "v", "safe": true})),
        ToolUse::new("a-get", "Ctx", json!({"get": "k"})),
    ];
    let a_turn = {
        let a = a.clone();
        tokio::spawn(async move { a.run_batch(&Session::new(), &turn, CallOptions::new()).await })
    };
    // The safe set runs beside B's call and finishes …
    let finished = |id: &str| events.lock().unwrap().iter().any(|(i, k)| i == id && *k == "finish");
    tokio::time::timeout(std::time::Duration::from_secs(60), async {
        while !finished("a-set") {
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
    })
    .await
    .expect("A's safe call runs while B's safe call runs");
    // … but the unsafe get does not start while B's call runs.
    tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    assert!(
        !events.lock().unwrap().iter().any(|(i, _)| i == "a-get"),
        "an unsafe call started beside a running safe call: {:?}",
        events.lock().unwrap()
    );
    assert!(!a_turn.is_finished());
    drop(b_running);
    let results =
        tokio::time::timeout(std::time::Duration::from_secs(60), a_turn).await.expect("the turn ends").unwrap();
    assert_eq!(results[0].outcome, OutcomeKind::Success, "{:?}", results[0]);
    assert_eq!(results[1].text(), "\"v\"", "the set's update was applied before the get ran: {:?}", results[1]);
}
