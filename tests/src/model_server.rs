//! A model API on loopback for the agent tests: real HTTP/1.1 (hyper) on 127.0.0.1 speaking
//! the Anthropic Messages API and OpenAI's Chat Completions as documented, streamed as
//! server-sent events (written with `sse-stream`). It replays a script, one reply per request
//! in order, and records every request (method, path, headers, JSON body) for the tests to
//! assert.
//!
//! Messages API streams follow the documented sequence: `message_start`, `ping`, per block
//! `content_block_start` / `content_block_delta` (`text_delta`, `input_json_delta`) /
//! `content_block_stop`, then `message_delta` (stop reason, usage) and `message_stop`. Chat
//! Completions streams are `chat.completion.chunk`s (content deltas, `tool_calls` deltas with
//! an index, id and name first and the arguments in pieces, a `finish_reason`, a usage chunk
//! with empty `choices`) ending in `data: [DONE]`.

use bytes::Bytes;
use http_body_util::BodyExt as _;
use serde_json::{Value, json};
use sse_stream::{Sse, SseBody};
use std::convert::Infallible;
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// One piece of a streamed reply.
#[derive(Debug, Clone)]
pub enum Piece {
    /// A server-sent event (`event:` line when named, one `data:` line).
    Event {
        /// The event's name.
        name: Option<String>,
        /// Its data.
        data: String,
    },
    /// Hold the stream until this file exists (at most 20 s): proves a tool ran while the
    /// model was still answering. Whether it appeared is in [`ModelServer::waits_met`].
    WaitForFile(PathBuf),
}

/// The answer to one request.
#[derive(Debug, Clone)]
pub enum Reply {
    /// 200 with a `text/event-stream` body.
    Stream(Vec<Piece>),
    /// An error status with extra headers and a JSON body.
    Status {
        /// The status.
        status: u16,
        /// Extra headers (e.g. `retry-after`).
        headers: Vec<(String, String)>,
        /// The body.
        body: Value,
    },
}

impl Reply {
    /// An error status with the APIs' error body `{"type":"error","error":{"type","message"}}`.
    pub fn error(status: u16, kind: &str, message: &str, headers: &[(&str, &str)]) -> Reply {
        Reply::Status {
            status,
            headers: headers.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect(),
            body: json!({"type": "error", "error": {"type": kind, "message": message}}),
        }
    }
}

/// A request the server received.
#[derive(Debug, Clone)]
pub struct Recorded {
    /// `POST`, …
    pub method: String,
    /// The path.
    pub path: String,
    /// Headers, names in lower case.
    pub headers: Vec<(String, String)>,
    /// The body as JSON (`null` if it was not JSON).
    pub body: Value,
}

impl Recorded {
    /// A header's value.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str())
    }
}

/// The server; stops when dropped.
pub struct ModelServer {
    /// `http://127.0.0.1:PORT`.
    pub url: String,
    requests: Arc<Mutex<Vec<Recorded>>>,
    waits_met: Arc<AtomicUsize>,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
}

impl ModelServer {
    /// Serve `script`, one reply per request in order; a request past the end gets 500.
    pub fn start(script: Vec<Reply>) -> ModelServer {
        Self::serve(Arc::new(move |n| script.get(n).cloned()))
    }

    /// Answer every request with `reply` (for benchmarks).
    pub fn repeat(reply: Reply) -> ModelServer {
        Self::serve(Arc::new(move |_| Some(reply.clone())))
    }

    fn serve(script: Arc<dyn Fn(usize) -> Option<Reply> + Send + Sync>) -> ModelServer {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        listener.set_nonblocking(true).expect("nonblocking");
        let url = format!("http://{}", listener.local_addr().expect("address"));
        let requests = Arc::new(Mutex::new(Vec::new()));
        let waits_met = Arc::new(AtomicUsize::new(0));
        let (stop, mut stopped) = tokio::sync::oneshot::channel();
        let (reqs, waits) = (requests.clone(), waits_met.clone());
        std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
            rt.block_on(async move {
                let listener = tokio::net::TcpListener::from_std(listener).expect("listener");
                let count = Arc::new(AtomicUsize::new(0));
                loop {
                    let conn = tokio::select! {
                        c = listener.accept() => c,
                        _ = &mut stopped => break,
                    };
                    let Ok((conn, _)) = conn else { continue };
                    let (script, reqs, waits, count) = (script.clone(), reqs.clone(), waits.clone(), count.clone());
                    let service = hyper::service::service_fn(move |req| {
                        let (script, reqs, waits, count) = (script.clone(), reqs.clone(), waits.clone(), count.clone());
                        async move { Ok::<_, Infallible>(answer(req, &*script, &reqs, &waits, &count).await) }
                    });
                    tokio::spawn(async move {
                        let io = hyper_util::rt::TokioIo::new(conn);
                        let _ = hyper::server::conn::http1::Builder::new().serve_connection(io, service).await;
                    });
                }
            });
        });
        ModelServer { url, requests, waits_met, stop: Some(stop) }
    }

    /// Every request so far.
    pub fn requests(&self) -> Vec<Recorded> {
        self.requests.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// The bodies of every request so far.
    pub fn bodies(&self) -> Vec<Value> {
        self.requests().into_iter().map(|r| r.body).collect()
    }

    /// How many [`Piece::WaitForFile`] found their file.
    pub fn waits_met(&self) -> usize {
        self.waits_met.load(Ordering::SeqCst)
    }
}

impl Drop for ModelServer {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
}

type Body = http_body_util::combinators::UnsyncBoxBody<Bytes, Infallible>;

async fn answer(
    req: hyper::Request<hyper::body::Incoming>,
    script: &(dyn Fn(usize) -> Option<Reply> + Send + Sync),
    requests: &Mutex<Vec<Recorded>>,
    waits: &Arc<AtomicUsize>,
    count: &AtomicUsize,
) -> hyper::Response<Body> {
    let method = req.method().to_string();
    let path = req.uri().path().to_string();
    let headers = req
        .headers()
        .iter()
        .map(|(k, v)| (k.as_str().to_ascii_lowercase(), v.to_str().unwrap_or_default().to_string()))
        .collect();
    let bytes = req.into_body().collect().await.map(|b| b.to_bytes()).unwrap_or_default();
    let body = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
    requests.lock().unwrap_or_else(|e| e.into_inner()).push(Recorded { method, path, headers, body });
    let n = count.fetch_add(1, Ordering::SeqCst);
    let full = |status: u16, headers: Vec<(String, String)>, body: Value| {
        let mut response = hyper::Response::builder().status(status).header("content-type", "application/json");
        for (k, v) in headers {
            response = response.header(k, v);
        }
        let body = http_body_util::Full::new(Bytes::from(body.to_string())).boxed_unsync();
        response.body(body).expect("response")
    };
    match script(n) {
        None => full(
            500,
            Vec::new(),
            json!({"type":"error","error":{"type":"api_error","message":"the script has no reply for this request"}}),
        ),
        Some(Reply::Status { status, headers, body }) => full(status, headers, body),
        Some(Reply::Stream(pieces)) => {
            let waits = waits.clone();
            let events = futures::stream::unfold(pieces.into_iter(), move |mut pieces| {
                let waits = waits.clone();
                async move {
                    loop {
                        match pieces.next()? {
                            Piece::Event { name, data } => {
                                let mut sse = Sse::default().data(data);
                                if let Some(name) = name {
                                    sse = sse.event(name);
                                }
                                return Some((Ok::<_, Infallible>(sse), pieces));
                            }
                            Piece::WaitForFile(path) => {
                                for _ in 0..2000 {
                                    if path.exists() {
                                        waits.fetch_add(1, Ordering::SeqCst);
                                        break;
                                    }
                                    tokio::time::sleep(Duration::from_millis(10)).await;
                                }
                            }
                        }
                    }
                }
            });
            hyper::Response::builder()
                .status(200)
                .header("content-type", "text/event-stream")
                .header("cache-control", "no-cache")
                .body(SseBody::new(events).boxed_unsync())
                .expect("response")
        }
    }
}

/// A block of a scripted answer.
#[derive(Debug, Clone)]
enum Part {
    Text(String),
    ToolUse { id: String, name: String, input: String },
    Wait(PathBuf),
}

/// A scripted assistant answer, rendered as either API's stream.
#[derive(Debug, Clone)]
pub struct Answer {
    parts: Vec<Part>,
    stop: String,
    input_tokens: u64,
    output_tokens: u64,
}

impl Answer {
    /// An answer stopping with `stop` (`end_turn`, `tool_use`, `max_tokens`, …; for
    /// Chat Completions `stop`, `tool_calls`, `length` are derived), 10 input and 5 output
    /// tokens.
    pub fn new(stop: &str) -> Self {
        Answer { parts: Vec::new(), stop: stop.into(), input_tokens: 10, output_tokens: 5 }
    }

    /// A final text answer.
    pub fn text_only(text: &str) -> Self {
        Answer::new("end_turn").text(text)
    }

    /// Add a text block.
    pub fn text(mut self, text: &str) -> Self {
        self.parts.push(Part::Text(text.into()));
        self
    }

    /// Add a tool call.
    pub fn tool(mut self, id: &str, name: &str, input: Value) -> Self {
        self.parts.push(Part::ToolUse { id: id.into(), name: name.into(), input: input.to_string() });
        self
    }

    /// Add a tool call whose input JSON is given as text (e.g. cut short).
    pub fn tool_raw(mut self, id: &str, name: &str, input_json: &str) -> Self {
        self.parts.push(Part::ToolUse { id: id.into(), name: name.into(), input: input_json.into() });
        self
    }

    /// Hold the stream here until `path` exists.
    pub fn wait_for(mut self, path: impl Into<PathBuf>) -> Self {
        self.parts.push(Part::Wait(path.into()));
        self
    }

    /// Its usage.
    pub fn usage(mut self, input: u64, output: u64) -> Self {
        self.input_tokens = input;
        self.output_tokens = output;
        self
    }

    /// The Messages API stream.
    pub fn anthropic(&self) -> Reply {
        let ev = |name: &str, data: Value| Piece::Event { name: Some(name.into()), data: data.to_string() };
        let mut out = vec![
            ev(
                "message_start",
                json!({"type": "message_start", "message": {"id": "msg_test", "type": "message", "role": "assistant",
                    "model": "test-model", "content": [], "stop_reason": null, "stop_sequence": null,
                    "usage": {"input_tokens": self.input_tokens, "output_tokens": 1}}}),
            ),
            ev("ping", json!({"type": "ping"})),
        ];
        let mut index = 0;
        for part in &self.parts {
            match part {
                Part::Wait(path) => out.push(Piece::WaitForFile(path.clone())),
                Part::Text(text) => {
                    out.push(ev("content_block_start", json!({"type": "content_block_start", "index": index, "content_block": {"type": "text", "text": ""}})));
                    for chunk in pieces(text, 8) {
                        out.push(ev("content_block_delta", json!({"type": "content_block_delta", "index": index, "delta": {"type": "text_delta", "text": chunk}})));
                    }
                    out.push(ev("content_block_stop", json!({"type": "content_block_stop", "index": index})));
                    index += 1;
                }
                Part::ToolUse { id, name, input } => {
                    out.push(ev("content_block_start", json!({"type": "content_block_start", "index": index, "content_block": {"type": "tool_use", "id": id, "name": name, "input": {}}})));
                    for chunk in pieces(input, 7) {
                        out.push(ev("content_block_delta", json!({"type": "content_block_delta", "index": index, "delta": {"type": "input_json_delta", "partial_json": chunk}})));
                    }
                    out.push(ev("content_block_stop", json!({"type": "content_block_stop", "index": index})));
                    index += 1;
                }
            }
        }
        out.push(ev(
            "message_delta",
            json!({"type": "message_delta", "delta": {"stop_reason": self.stop, "stop_sequence": null}, "usage": {"output_tokens": self.output_tokens}}),
        ));
        out.push(ev("message_stop", json!({"type": "message_stop"})));
        Reply::Stream(out)
    }

    /// The Chat Completions stream.
    pub fn openai(&self) -> Reply {
        let chunk = |choices: Value| {
            let data = json!({"id": "chatcmpl-test", "object": "chat.completion.chunk", "created": 1, "model": "test-model", "choices": choices});
            Piece::Event { name: None, data: data.to_string() }
        };
        let mut out =
            vec![chunk(json!([{"index": 0, "delta": {"role": "assistant", "content": ""}, "finish_reason": null}]))];
        let mut index = 0;
        for part in &self.parts {
            match part {
                Part::Wait(path) => out.push(Piece::WaitForFile(path.clone())),
                Part::Text(text) => {
                    for c in pieces(text, 8) {
                        out.push(chunk(json!([{"index": 0, "delta": {"content": c}, "finish_reason": null}])));
                    }
                }
                Part::ToolUse { id, name, input } => {
                    out.push(chunk(json!([{"index": 0, "delta": {"tool_calls": [{"index": index, "id": id, "type": "function", "function": {"name": name, "arguments": ""}}]}, "finish_reason": null}])));
                    for c in pieces(input, 7) {
                        out.push(chunk(json!([{"index": 0, "delta": {"tool_calls": [{"index": index, "function": {"arguments": c}}]}, "finish_reason": null}])));
                    }
                    index += 1;
                }
            }
        }
        let finish = match self.stop.as_str() {
            "end_turn" => "stop",
            "tool_use" => "tool_calls",
            "max_tokens" => "length",
            "refusal" => "content_filter",
            other => other,
        };
        out.push(chunk(json!([{"index": 0, "delta": {}, "finish_reason": finish}])));
        let usage = json!({"prompt_tokens": self.input_tokens, "completion_tokens": self.output_tokens, "total_tokens": self.input_tokens + self.output_tokens});
        out.push(Piece::Event {
            name: None,
            data: json!({"id": "chatcmpl-test", "object": "chat.completion.chunk", "created": 1, "model": "test-model", "choices": [], "usage": usage}).to_string(),
        });
        out.push(Piece::Event { name: None, data: "[DONE]".into() });
        Reply::Stream(out)
    }
}

/// `text` in pieces of at most `n` characters (at least one piece).
fn pieces(text: &str, n: usize) -> Vec<String> {
    let chars: Vec<char> = text.chars().collect();
    if chars.is_empty() {
        return vec![String::new()];
    }
    chars.chunks(n).map(|c| c.iter().collect()).collect()
}
