//! Property tests of the stdio line transport: any bytes end in `None` (no panic, no hang),
//! every line that is a message comes out as one, in order, and every line that is not one is
//! answered with exactly one JSON-RPC error of the right code, carrying the request's id when
//! it has one, whatever the sizes the input arrives in.

use super::*;
use proptest::prelude::*;
use serde_json::json;
use std::time::Duration;
use tokio::io::{AsyncReadExt, BufReader};

fn config(cases: u32) -> ProptestConfig {
    let cases = std::env::var("PROPTEST_CASES").ok().and_then(|c| c.parse().ok()).unwrap_or(cases);
    ProptestConfig { cases, failure_persistence: None, ..ProptestConfig::default() }
}

/// The line limit in these tests (production's 16 MiB is not what a property can reach).
const MAX_LINE: usize = 200;

/// What came out of a transport: the messages `receive` returned (as JSON) and the error
/// answers it wrote (as JSON), in order.
struct Out {
    messages: Vec<Value>,
    answers: Vec<Value>,
}

/// Run a transport over `input`, read `chunk` bytes at a time, until `receive` says the input
/// is over, within a deadline.
fn transport(input: Vec<u8>, chunk: usize) -> Out {
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
    rt.block_on(async {
        let read = BufReader::with_capacity(chunk, std::io::Cursor::new(input));
        let (out, mut answers) = tokio::io::duplex(1 << 16);
        let written = tokio::spawn(async move {
            let mut all = Vec::new();
            answers.read_to_end(&mut all).await.map(|_| all)
        });
        let mut t = LineTransport::new(read, out, Scheduler::new(4));
        t.max_line = MAX_LINE;
        let run = async {
            let mut messages = Vec::new();
            while let Some(m) = t.receive().await {
                messages.push(serde_json::to_value(&m).expect("a message serialises"));
            }
            t.close().await.expect("close");
            drop(t);
            (messages, written.await.expect("the reading task").expect("read the answers"))
        };
        let (messages, written) = tokio::time::timeout(Duration::from_secs(20), run).await.expect("the transport hung");
        let text = String::from_utf8(written).expect("answers are UTF-8");
        prop_assert_lines(&text);
        let answers = text.lines().map(|l| serde_json::from_str(l).expect("an answer is JSON")).collect();
        Out { messages, answers }
    })
}

/// Every answer is one line, ending in a newline.
fn prop_assert_lines(text: &str) {
    assert!(text.is_empty() || text.ends_with('\n'), "{text:?}");
}

/// One input line and what must come of it.
#[derive(Debug, Clone)]
enum Line {
    /// A request with this id: returned as a message.
    Request(Value),
    /// A notification: returned as a message.
    Notification,
    /// Not JSON: answered -32700 with id null.
    Garbage(Vec<u8>),
    /// JSON that is no message and has no usable id: answered -32600 with id null.
    NotAMessage(Value),
    /// An object with an id and no method: answered -32600 with that id.
    NoMethod(Value),
    /// A request with a known method and bad params: answered -32602 with its id.
    BadParams(Value),
    /// A notification whose params are bad: never answered.
    BadNotification,
    /// Longer than the limit: answered -32600 with id null.
    TooLong(usize),
    /// Blank: nothing.
    Blank(String),
}

fn request_id() -> impl Strategy<Value = Value> {
    prop_oneof![any::<i64>().prop_map(Value::from), (0i64..10).prop_map(Value::from), "\\PC{0,8}".prop_map(Value::from),]
}

fn line() -> impl Strategy<Value = Line> {
    prop_oneof![
        4 => request_id().prop_map(Line::Request),
        1 => Just(Line::Notification),
        2 => prop_oneof![
            "\\PC{1,40}".prop_map(String::into_bytes),
            prop::collection::vec(any::<u8>(), 1..60),
            request_id().prop_map(|id| format!("{{\"jsonrpc\":\"2.0\",\"id\":{id},\"method\":\"ping\"").into_bytes()),
        ]
        .prop_filter("blank, JSON or a line break", |b| {
            !b.contains(&b'\n')
                && !b.trim_ascii().is_empty()
                && !b.starts_with(b"\xEF\xBB\xBF")
                && serde_json::from_slice::<Value>(b.strip_suffix(b"\r").unwrap_or(b)).is_err()
        })
        .prop_map(Line::Garbage),
        1 => prop_oneof![
            Just(json!(3)),
            Just(json!("ping")),
            Just(json!(null)),
            Just(json!([])),
            Just(json!([{"jsonrpc": "2.0", "id": 1, "method": "ping"}])),
            Just(json!({})),
            Just(json!({"jsonrpc": "2.0", "id": {}, "method": "ping"})),
            Just(json!({"jsonrpc": "2.0", "id": 1.5, "method": "ping"})),
        ]
        .prop_map(Line::NotAMessage),
        1 => request_id().prop_map(Line::NoMethod),
        1 => request_id().prop_map(Line::BadParams),
        1 => Just(Line::BadNotification),
        1 => (MAX_LINE..MAX_LINE * 3).prop_map(Line::TooLong),
        1 => "[ \t\r]{0,3}".prop_map(Line::Blank),
    ]
}

impl Line {
    fn bytes(&self) -> Vec<u8> {
        match self {
            Line::Request(id) => json!({"jsonrpc": "2.0", "id": id, "method": "ping"}).to_string().into_bytes(),
            Line::Notification => br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#.to_vec(),
            Line::Garbage(b) => b.clone(),
            Line::NotAMessage(v) => v.to_string().into_bytes(),
            Line::NoMethod(id) => json!({"jsonrpc": "2.0", "id": id}).to_string().into_bytes(),
            Line::BadParams(id) => {
                json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": 3}).to_string().into_bytes()
            }
            Line::BadNotification => {
                br#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":"soon"}"#.to_vec()
            }
            // With its newline, one byte or more over the limit.
            Line::TooLong(n) => {
                format!("{{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"{}\"}}", "x".repeat(*n)).into_bytes()
            }
            Line::Blank(b) => b.clone().into_bytes(),
        }
    }

    /// The message it must come out as (its id, or null for a notification).
    fn message(&self) -> Option<Value> {
        match self {
            Line::Request(id) => Some(id.clone()),
            Line::Notification => Some(Value::Null),
            _ => None,
        }
    }

    /// The error it must be answered with: code and id.
    fn answer(&self) -> Option<(i64, Value)> {
        match self {
            Line::Garbage(_) => Some((-32700, Value::Null)),
            Line::NotAMessage(_) | Line::TooLong(_) => Some((-32600, Value::Null)),
            Line::NoMethod(id) => Some((-32600, id.clone())),
            Line::BadParams(id) => Some((-32602, id.clone())),
            _ => None,
        }
    }
}

proptest! {
    #![proptest_config(config(256))]

    /// Any bytes, arriving in any sizes: the input ends in `None`, and everything written is
    /// a JSON-RPC 2.0 error answer.
    #[test]
    fn any_bytes_end_the_input(input in prop::collection::vec(any::<u8>(), 0..1000), chunk in 1usize..64) {
        let out = transport(input, chunk);
        for a in &out.answers {
            prop_assert_eq!(&a["jsonrpc"], "2.0");
            prop_assert!(a["error"]["code"].is_i64() && a["error"]["message"].is_string(), "{}", a);
        }
    }

    /// Lines of every kind: each message comes out once, in order; each line that is no
    /// message gets exactly one answer of its own code and id, in order.
    #[test]
    fn every_line_gets_its_answer(
        lines in prop::collection::vec((line(), prop::sample::select(vec!["\n", "\r\n"]), any::<bool>()), 0..24),
        chunk in prop_oneof![1usize..8, 8usize..300],
    ) {
        let mut input = Vec::new();
        for (line, end, bom) in &lines {
            if *bom && !matches!(line, Line::Blank(_) | Line::TooLong(_)) {
                input.extend_from_slice(b"\xEF\xBB\xBF");
            }
            input.extend_from_slice(&line.bytes());
            input.extend_from_slice(end.as_bytes());
        }
        let out = transport(input, chunk);
        let want_messages: Vec<Value> = lines.iter().filter_map(|(l, ..)| l.message()).collect();
        let got_messages: Vec<Value> = out.messages.iter().map(|m| m.get("id").cloned().unwrap_or(Value::Null)).collect();
        prop_assert_eq!(got_messages, want_messages);
        let want_answers: Vec<(i64, Value)> = lines.iter().filter_map(|(l, ..)| l.answer()).collect();
        let got_answers: Vec<(i64, Value)> =
            out.answers.iter().map(|a| (a["error"]["code"].as_i64().unwrap_or(0), a["id"].clone())).collect();
        prop_assert_eq!(got_answers, want_answers);
    }
}

/// The last line, cut off by the end of the input before its newline, is a message like any
/// other (rmcp's own transport reads it) or at least an answer.
#[test]
fn a_last_line_without_a_newline_is_not_lost() {
    let out = transport(b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}".to_vec(), 64);
    assert_eq!(out.messages.len() + out.answers.len(), 1, "the request got neither a message nor an answer");
    let out = transport(b"not json".to_vec(), 64);
    assert_eq!(out.answers.len(), 1, "garbage at the end got no parse error");
}
