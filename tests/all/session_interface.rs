//! `toolhost:session`: a tool's log messages reach the people watching (the call's receiver
//! and the events) and never the model; its questions reach the call's decider as checked
//! forms, and only answers that fit the form reach the tool. With nobody to ask, a question is
//! cancelled, and the call still ends with one result.

use serde_json::{Value, json};
use std::sync::{Arc, Mutex};
use toolhost::policy::Mode;
use toolhost::{
    Answer, AskAnswer, AskRequest, CallOptions, Event, LogLevel, PermissionDecider, Question, Runtime, Session,
    ToolSource, ToolUse,
};
use toolhost_tests::{engine, guests, workspace};

/// Answers every question the same way and keeps what was asked.
struct Person(Answer, Mutex<Vec<Question>>);

#[async_trait::async_trait]
impl PermissionDecider for Person {
    async fn ask(&self, _request: &AskRequest) -> AskAnswer {
        AskAnswer::Deny(None)
    }

    async fn elicit(&self, question: &Question) -> Answer {
        self.1.lock().unwrap().push(question.clone());
        self.0.clone()
    }
}

fn answering(answer: Answer) -> Arc<Person> {
    Arc::new(Person(answer, Mutex::default()))
}

fn values(v: Value) -> serde_json::Map<String, Value> {
    v.as_object().unwrap().clone()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_tool_asks_the_person_and_gets_only_answers_that_fit_its_form() {
    let ws = workspace();
    let mut rt =
        Runtime::builder().permission_mode(Mode::Bypass).engine(engine()).workspace(ws.path()).build().unwrap();
    rt.load(ToolSource::bytes("conf-elicit.wasm", guests::CONF_ELICIT)).await.unwrap();
    let session = Session::new();
    let ask = |id: &str| ToolUse::new(id, "test_elicitation", json!({"message": "Who are you?"}));

    let person = answering(Answer::Accept(values(json!({"username": "ada", "email": "ada@example.com"}))));
    let r = rt.call(&session, &ask("t1"), CallOptions::new().decider(person.clone())).await;
    assert!(!r.is_error, "{r:?}");
    assert!(
        r.text().contains(r#"action=accept, content={"email":"ada@example.com","username":"ada"}"#),
        "{}",
        r.text()
    );
    let asked = person.1.lock().unwrap().clone();
    assert_eq!(asked.len(), 1);
    assert_eq!(asked[0].tool_use_id, "t1");
    assert_eq!(asked[0].shown(), "Tool test_elicitation asks: Who are you?", "the person sees which tool asks");
    assert_eq!(asked[0].form["required"], json!(["username", "email"]));

    // An answer that does not fit the form never reaches the tool: the tool is told why.
    let wrong = answering(Answer::Accept(values(json!({"username": 7}))));
    let r = rt.call(&session, &ask("t2"), CallOptions::new().decider(wrong)).await;
    assert!(r.is_error && r.text().contains("does not fit the form"), "{r:?}");

    let declined = rt.call(&session, &ask("t3"), CallOptions::new().decider(answering(Answer::Decline))).await;
    assert_eq!(declined.text(), "User response: action=decline");
    // Nobody to ask (no decider at all): cancelled, and the call completes.
    let nobody = rt.call(&session, &ask("t4"), CallOptions::new()).await;
    assert_eq!(nobody.text(), "User response: action=cancel");
}

#[tokio::test(flavor = "multi_thread")]
async fn log_messages_reach_the_calls_receiver_and_the_events_not_the_model() {
    let ws = workspace();
    let events: Arc<Mutex<Vec<Event>>> = Arc::default();
    let sink = events.clone();
    let mut rt = Runtime::builder()
        .permission_mode(Mode::Bypass)
        .engine(engine())
        .workspace(ws.path())
        .events(Arc::new(move |e| sink.lock().unwrap().push(e)))
        .build()
        .unwrap();
    rt.load(ToolSource::bytes("conf-logging.wasm", guests::CONF_LOGGING)).await.unwrap();
    let received: Arc<Mutex<Vec<(String, LogLevel, String)>>> = Arc::default();
    let log = received.clone();
    let options = CallOptions::new()
        .log(move |l| log.lock().unwrap().push((l.tool_use_id.to_string(), l.level, l.message.to_string())));
    let r = rt.call(&Session::new(), &ToolUse::new("l1", "test_tool_with_logging", json!({})), options).await;
    assert_eq!(r.text(), "Logging test completed.", "the log is not in the result");
    let expected: Vec<_> = ["Tool execution started", "Tool processing data", "Tool execution completed"]
        .iter()
        .map(|m| ("l1".to_string(), LogLevel::Info, m.to_string()))
        .collect();
    assert_eq!(*received.lock().unwrap(), expected);
    let logged: Vec<String> = events
        .lock()
        .unwrap()
        .iter()
        .filter_map(|e| match e {
            Event::Log { id, level: LogLevel::Info, message, .. } if id == "l1" => Some(message.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(logged.len(), 3, "{logged:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_tool_cannot_ask_from_validate_flood_the_person_or_send_what_is_not_a_form() {
    let ws = workspace();
    let mut rt =
        Runtime::builder().permission_mode(Mode::Bypass).engine(engine()).workspace(ws.path()).build().unwrap();
    rt.load(ToolSource::bytes("ask-flood.wasm", guests::ASK_FLOOD)).await.unwrap();
    let session = Session::new();
    let person = answering(Answer::Accept(values(json!({"name": "ada"}))));
    let call = |id: &str, input: Value| ToolUse::new(id, "AskFlood", input);

    // From `validate` (no capabilities, nobody behind it): refused, and nobody was asked.
    let r =
        rt.call(&session, &call("v", json!({"in_validate": true})), CallOptions::new().decider(person.clone())).await;
    assert!(
        r.is_error
            && r.text().contains(
                "asked from validate: refused: a tool may ask the person questions only while it runs `call`"
            ),
        "{r:?}"
    );
    assert!(person.1.lock().unwrap().is_empty());

    // Twenty questions in one call: eight reach the person, the rest are refused.
    let r = rt.call(&session, &call("f", json!({"times": 20})), CallOptions::new().decider(person.clone())).await;
    let text = r.text();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.iter().filter(|l| **l == "accept").count(), 8, "{text}");
    assert_eq!(lines.iter().filter(|l| l.contains("at most 8 questions")).count(), 12, "{text}");
    assert_eq!(person.1.lock().unwrap().len(), 8);

    // What is not a form, or a message too long, never reaches the person.
    let nested = json!({"type": "object", "properties": {"a": {"type": "object", "properties": {}}}});
    let r = rt
        .call(&session, &call("n", json!({"times": 1, "form": nested})), CallOptions::new().decider(person.clone()))
        .await;
    assert!(r.text().starts_with("refused: field `a`"), "{}", r.text());
    let long = "x".repeat(5000);
    let r = rt
        .call(&session, &call("l", json!({"times": 1, "message": long})), CallOptions::new().decider(person.clone()))
        .await;
    assert!(r.text().contains("longer than 4096 characters"), "{}", r.text());
    assert_eq!(person.1.lock().unwrap().len(), 8, "neither reached the person");
}
