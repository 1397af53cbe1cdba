//! Property tests of `toolhost run`'s input parsers: any bytes end the read (no panic, no
//! hang), every `tool_use` block with an id gets exactly one submission, in input order, and
//! every malformed entry exactly one problem naming where it is.

use super::*;
use proptest::prelude::*;
use std::time::Duration;

fn config(cases: u32) -> ProptestConfig {
    let cases = std::env::var("PROPTEST_CASES").ok().and_then(|c| c.parse().ok()).unwrap_or(cases);
    ProptestConfig { cases, failure_persistence: None, ..ProptestConfig::default() }
}

/// What one submission is, comparably: `call ID` or `answered ID`.
fn describe(s: &Submission) -> String {
    match s {
        Submission::Call(call) => format!("call {}", call.id),
        Submission::Answered(result) => format!("answered {}", result.tool_use_id),
    }
}

/// `feed` over `bytes`, its submissions drained as they come, within a deadline: its result,
/// what it submitted, and how many problems it reported.
fn feed_bytes(bytes: Vec<u8>) -> (Result<()>, Vec<String>, usize) {
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
    rt.block_on(async {
        let (tx, mut rx) = mpsc::channel(64);
        let problems = Arc::new(AtomicUsize::new(0));
        let input: Box<dyn tokio::io::AsyncRead + Unpin + Send> = Box::new(std::io::Cursor::new(bytes));
        let reader = tokio::spawn(feed(input, tx, problems.clone()));
        let all = async {
            let mut submitted = Vec::new();
            while let Some(s) = rx.recv().await {
                submitted.push(describe(&s));
            }
            (reader.await.expect("the reader task"), submitted)
        };
        let (result, submitted) = tokio::time::timeout(Duration::from_secs(20), all).await.expect("feed hung");
        (result, submitted, problems.load(Ordering::SeqCst))
    })
}

/// `parse_document` over `text`: what it submitted and the problems it reported.
fn parse(text: &str) -> (Vec<String>, Vec<String>) {
    let mut entries = Vec::new();
    let mut problems = Vec::new();
    parse_document(text, &mut entries, &mut |p| problems.push(p));
    (entries.iter().map(describe).collect(), problems)
}

/// One entry of an input: a block in one of its shapes, or something that is no block.
#[derive(Debug, Clone)]
enum Entry {
    /// `{"type":"tool_use","id","name","input"}`.
    Good {
        id: String,
        name: String,
        input: Value,
    },
    /// A tool_use block whose id is missing, empty or not a string.
    NoId(Option<Value>),
    NoName {
        id: String,
    },
    NoInput {
        id: String,
    },
    /// A text block (skipped inside a message's `content`).
    Text(String),
}

/// What an entry must lead to where every entry is a block (JSONL, an array).
#[derive(Debug, PartialEq)]
enum Want {
    Submitted(String),
    Problem,
}

impl Entry {
    fn json(&self) -> Value {
        match self {
            Entry::Good { id, name, input } => json!({"type": "tool_use", "id": id, "name": name, "input": input}),
            Entry::NoId(None) => json!({"type": "tool_use", "name": "Read", "input": {}}),
            Entry::NoId(Some(id)) => json!({"type": "tool_use", "id": id, "name": "Read", "input": {}}),
            Entry::NoName { id } => json!({"type": "tool_use", "id": id, "input": {}}),
            Entry::NoInput { id } => json!({"type": "tool_use", "id": id, "name": "Read"}),
            Entry::Text(t) => json!({"type": "text", "text": t}),
        }
    }

    /// Where it must be answered, when read as a block (a text block has no id to answer).
    fn want(&self) -> Want {
        match self {
            Entry::Good { id, .. } => Want::Submitted(format!("call {id}")),
            Entry::NoName { id } | Entry::NoInput { id } => Want::Submitted(format!("answered {id}")),
            Entry::NoId(_) | Entry::Text(_) => Want::Problem,
        }
    }
}

fn id() -> impl Strategy<Value = String> {
    prop_oneof![3 => "toolu_[A-Za-z0-9]{1,8}", 1 => "\\PC{1,6}"]
}

fn entry() -> impl Strategy<Value = Entry> {
    let input = prop_oneof![
        Just(json!({})),
        Just(json!({"file_path": "a.txt"})),
        Just(json!(null)),
        Just(json!([1, 2])),
        "\\PC{0,8}".prop_map(Value::from),
    ];
    prop_oneof![
        6 => (id(), "[A-Za-z_]{1,8}", input).prop_map(|(id, name, input)| Entry::Good { id, name, input }),
        1 => prop_oneof![Just(None), Just(Some(json!(""))), Just(Some(json!(7))), Just(Some(json!(null)))].prop_map(Entry::NoId),
        1 => id().prop_map(|id| Entry::NoName { id }),
        1 => id().prop_map(|id| Entry::NoInput { id }),
        1 => "\\PC{0,8}".prop_map(Entry::Text),
    ]
}

/// One line of JSONL input.
#[derive(Debug, Clone)]
enum Line {
    Block(Entry),
    /// Not JSON at all (and not blank).
    Garbage(String),
    /// JSON, but not an object: no id to answer.
    Scalar(Value),
    Blank(String),
}

fn garbage() -> impl Strategy<Value = String> {
    prop_oneof![
        "\\PC{1,24}",
        entry().prop_map(|e| format!("{} x", e.json())),
        entry().prop_map(|e| e.json().to_string()[1..].to_string()),
    ]
    .prop_filter("blank or JSON", |t| {
        !t.trim().is_empty() && !t.contains(['\n', '\r']) && serde_json::from_str::<Value>(t).is_err()
    })
}

fn line() -> impl Strategy<Value = Line> {
    prop_oneof![
        6 => entry().prop_map(Line::Block),
        2 => garbage().prop_map(Line::Garbage),
        1 => prop_oneof![Just(json!(3)), Just(json!("x")), Just(json!([])), Just(json!(null))].prop_map(Line::Scalar),
        1 => "[ \t]{0,3}".prop_map(Line::Blank),
    ]
}

impl Line {
    fn text(&self) -> String {
        match self {
            Line::Block(e) => e.json().to_string(),
            Line::Garbage(t) | Line::Blank(t) => t.clone(),
            Line::Scalar(v) => v.to_string(),
        }
    }

    fn want(&self) -> Option<Want> {
        match self {
            Line::Block(e) => Some(e.want()),
            Line::Garbage(_) | Line::Scalar(_) => Some(Want::Problem),
            Line::Blank(_) => None,
        }
    }
}

/// JSONL: a good block first (which is what makes it JSONL), then anything.
fn jsonl() -> impl Strategy<Value = (Vec<Line>, bool)> {
    let first = (id(), "[A-Za-z_]{1,8}").prop_map(|(id, name)| Line::Block(Entry::Good { id, name, input: json!({}) }));
    (first, prop::collection::vec(line(), 0..20), any::<bool>()).prop_map(|(first, mut rest, crlf)| {
        rest.insert(0, first);
        (rest, crlf)
    })
}

proptest! {
    #![proptest_config(config(256))]

    /// Any bytes: the read ends, without a panic or an error (text that is not UTF-8 is a
    /// problem naming its line, and reading goes on), and every submission answers a
    /// non-empty id.
    #[test]
    fn any_bytes_end_the_read(bytes in prop_oneof![
        prop::collection::vec(any::<u8>(), 0..400),
        jsonl().prop_map(|(lines, _)| lines.iter().map(Line::text).collect::<Vec<_>>().join("\n").into_bytes()),
    ]) {
        let utf8 = std::str::from_utf8(&bytes).is_ok();
        let (result, submitted, problems) = feed_bytes(bytes);
        prop_assert!(result.is_ok(), "{:?}", result);
        prop_assert!(utf8 || problems > 0, "text that is not UTF-8 went unreported");
        for s in &submitted {
            prop_assert!(s.split_once(' ').is_some_and(|(_, id)| !id.is_empty()), "{}", s);
        }
    }

    /// JSONL: each block with an id is submitted once, in order; every other non-blank line is
    /// one problem.
    #[test]
    fn jsonl_answers_every_block_once((lines, crlf) in jsonl()) {
        let text = lines.iter().map(Line::text).collect::<Vec<_>>().join(if crlf { "\r\n" } else { "\n" });
        let (result, submitted, problems) = feed_bytes(text.clone().into_bytes());
        prop_assert!(result.is_ok(), "{:?}", result);
        let want: Vec<Want> = lines.iter().filter_map(Line::want).collect();
        let want_submitted: Vec<String> =
            want.iter().filter_map(|w| match w { Want::Submitted(s) => Some(s.clone()), Want::Problem => None }).collect();
        prop_assert_eq!(&submitted, &want_submitted, "in:\n{}", text);
        prop_assert_eq!(problems, want.iter().filter(|w| **w == Want::Problem).count(), "in:\n{}", text);
    }

    /// The same lines as a document that is not JSON (its first line no block): each problem
    /// names its line, counted from the first.
    #[test]
    fn lines_that_are_no_document_are_read_one_by_one(first in garbage(), lines in prop::collection::vec(line(), 0..12)) {
        let mut all = vec![Line::Garbage(first)];
        all.extend(lines);
        let text = all.iter().map(Line::text).collect::<Vec<_>>().join("\n");
        // (Lines that happen to add up to one JSON document are a document.)
        prop_assume!(serde_json::from_str::<Value>(&text).is_err());
        let (submitted, problems) = parse(&text);
        let mut want_problems = Vec::new();
        let mut want_submitted = Vec::new();
        for (n, l) in all.iter().enumerate() {
            match l.want() {
                Some(Want::Problem) => want_problems.push(format!("line {}: ", n + 1)),
                Some(Want::Submitted(s)) => want_submitted.push(s),
                None => {}
            }
        }
        prop_assert_eq!(&submitted, &want_submitted);
        prop_assert_eq!(problems.len(), want_problems.len(), "{:?}", problems);
        for (p, w) in problems.iter().zip(&want_problems) {
            prop_assert!(p.starts_with(w.as_str()), "{} does not start with {}", p, w);
        }
    }

    /// An assistant message or a response object: its tool_use blocks are submitted in order,
    /// text blocks and non-objects are skipped, and a block without an id is one problem naming
    /// its index in `content`.
    #[test]
    fn a_message_answers_its_blocks(
        entries in prop::collection::vec(prop_oneof![8 => entry().prop_map(Some), 1 => Just(None)], 0..10),
        response in any::<bool>(),
        pretty in any::<bool>(),
    ) {
        let content: Vec<Value> = entries.iter().map(|e| e.as_ref().map_or(json!(42), Entry::json)).collect();
        let doc = if response {
            json!({"type": "message", "role": "assistant", "content": content, "stop_reason": "tool_use"})
        } else {
            json!({"role": "assistant", "content": content})
        };
        let text = if pretty { serde_json::to_string_pretty(&doc).unwrap() } else { doc.to_string() };
        let (result, fed, problem_count) = feed_bytes(text.clone().into_bytes());
        prop_assert!(result.is_ok());
        let (submitted, problems) = parse(&text);
        prop_assert_eq!(&fed, &submitted);
        prop_assert_eq!(problem_count, problems.len());
        let mut want_problems = Vec::new();
        let mut want_submitted = Vec::new();
        for (i, e) in entries.iter().enumerate() {
            match e.as_ref().map(|e| (e, e.want())) {
                None | Some((Entry::Text(_), _)) => {}
                Some((_, Want::Problem)) => want_problems.push(format!("content[{i}]: ")),
                Some((_, Want::Submitted(s))) => want_submitted.push(s),
            }
        }
        prop_assert_eq!(&submitted, &want_submitted);
        prop_assert_eq!(problems.len(), want_problems.len(), "{:?}", problems);
        for (p, w) in problems.iter().zip(&want_problems) {
            prop_assert!(p.starts_with(w.as_str()), "{} does not start with {}", p, w);
        }
    }

    /// An array of blocks, or one block alone: the same, each problem naming `[i]` or `the
    /// input`.
    #[test]
    fn an_array_or_a_block_answers_its_blocks(entries in prop::collection::vec(entry(), 0..10), one in entry()) {
        let text = serde_json::to_string_pretty(&Value::Array(entries.iter().map(Entry::json).collect())).unwrap();
        let (submitted, problems) = parse(&text);
        let mut want_submitted = Vec::new();
        let mut want_problems = Vec::new();
        for (i, e) in entries.iter().enumerate() {
            match e.want() {
                Want::Submitted(s) => want_submitted.push(s),
                Want::Problem => want_problems.push(format!("[{i}]: ")),
            }
        }
        prop_assert_eq!(&submitted, &want_submitted);
        prop_assert_eq!(problems.len(), want_problems.len(), "{:?}", problems);
        for (p, w) in problems.iter().zip(&want_problems) {
            prop_assert!(p.starts_with(w.as_str()), "{} does not start with {}", p, w);
        }

        if matches!(one, Entry::Text(_)) {
            return Ok(());
        }
        let (submitted, problems) = parse(&serde_json::to_string_pretty(&one.json()).unwrap());
        match one.want() {
            Want::Submitted(s) => prop_assert_eq!((submitted, problems.len()), (vec![s], 0)),
            Want::Problem => {
                prop_assert!(submitted.is_empty());
                prop_assert_eq!(problems.len(), 1);
                prop_assert!(problems[0].starts_with("the input: "), "{}", problems[0]);
            }
        }
    }

    /// Any text at all given as a document: no panic, and every problem says where it is.
    #[test]
    fn any_document_is_parsed_or_reported(text in prop_oneof!["\\PC{0,200}", any::<String>()]) {
        let (_, problems) = parse(&text);
        for p in &problems {
            let located = p.starts_with("line ") || p.starts_with("content[") || p.starts_with('[')
                || p.starts_with("the input");
            prop_assert!(located, "{}", p);
        }
    }
}
