//! # The Anthropic Messages API
//!
//! `POST {base}/v1/messages` with `x-api-key` and `anthropic-version`, `"stream": true`.
//! Prompt caching: a `cache_control` breakpoint on the last tool, the last system block and
//! the last block of the last message, so each turn reads the previous turn's prefix from the
//! cache. The answer is read as the documented event sequence: `message_start`, per block
//! `content_block_start` / `content_block_delta` (`text_delta`, `input_json_delta`, …) /
//! `content_block_stop`, then `message_delta` (stop reason, usage) and `message_stop`; `ping`
//! is ignored and `error` ends the stream. A `tool_use` block goes to the sink at its
//! `content_block_stop`, when its input is complete.

use crate::error::{Error, Result};
use crate::http::Http;
use crate::message::{Block, Message, ModelRequest, ModelResponse, Role, StopReason, Usage};
use crate::provider::{Provider, TurnSink};
use crate::retry::RetryPolicy;
use crate::sse;
use async_trait::async_trait;
use serde_json::{Value, json};
use std::collections::BTreeMap;
use toolhost::ToolUse;

const NAME: &str = "anthropic";

/// The API version header this provider speaks.
pub const API_VERSION: &str = "2023-06-01";

/// The default endpoint.
pub const DEFAULT_BASE_URL: &str = "https://api.anthropic.com";

/// The environment variable the CLI reads the key from.
pub const KEY_ENV: &str = "ANTHROPIC_API_KEY";

/// The Messages API. Build with [`Anthropic::new`].
#[derive(Debug, Clone)]
pub struct Anthropic {
    http: Http,
    api_key: String,
}

impl Anthropic {
    /// A provider for `base_url` (e.g. [`DEFAULT_BASE_URL`]) with this key, the default
    /// [`RetryPolicy`].
    ///
    /// # Errors
    ///
    /// [`Error::Client`] if the HTTP client cannot be built.
    pub fn new(base_url: &str, api_key: impl Into<String>) -> Result<Self> {
        let url = format!("{}/v1/messages", base_url.trim_end_matches('/'));
        Ok(Anthropic { http: Http::new(NAME, KEY_ENV, url)?, api_key: api_key.into() })
    }

    /// Retry with this policy instead.
    pub fn with_retry(mut self, retry: RetryPolicy) -> Self {
        self.http.retry = retry;
        self
    }
}

/// `value` with a cache breakpoint.
fn cached(mut value: Value) -> Value {
    value["cache_control"] = json!({"type": "ephemeral"});
    value
}

/// The request body.
pub(crate) fn request_body(request: &ModelRequest) -> Value {
    let n_tools = request.tools.len();
    let tools: Vec<Value> = request
        .tools
        .iter()
        .enumerate()
        .map(|(i, t)| {
            let v = json!({"name": t.name, "description": t.description, "input_schema": t.input_schema});
            if i + 1 == n_tools { cached(v) } else { v }
        })
        .collect();
    let n_system = request.system.len();
    let system: Vec<Value> = request
        .system
        .iter()
        .enumerate()
        .map(|(i, text)| {
            let v = json!({"type": "text", "text": text});
            if i + 1 == n_system { cached(v) } else { v }
        })
        .collect();
    let n_messages = request.messages.len();
    let messages: Vec<Value> = request
        .messages
        .iter()
        .enumerate()
        .map(|(i, m)| {
            let n_blocks = m.content.len();
            let content: Vec<Value> = m
                .content
                .iter()
                .enumerate()
                .map(|(j, b)| {
                    let v = b.to_json();
                    // Thinking blocks cannot carry a breakpoint; the last message is the user's
                    // in every request but a `pause_turn` continuation.
                    let cacheable = !matches!(b, Block::Other(_));
                    if i + 1 == n_messages && j + 1 == n_blocks && cacheable { cached(v) } else { v }
                })
                .collect();
            json!({"role": m.role, "content": content})
        })
        .collect();
    let mut body = json!({
        "model": request.model,
        "max_tokens": request.max_tokens,
        "stream": true,
        "messages": messages,
    });
    if !system.is_empty() {
        body["system"] = Value::Array(system);
    }
    if !tools.is_empty() {
        body["tools"] = Value::Array(tools);
    }
    body
}

#[async_trait]
impl Provider for Anthropic {
    fn name(&self) -> &'static str {
        NAME
    }

    async fn send(&self, request: &ModelRequest, sink: &mut dyn TurnSink) -> Result<ModelResponse> {
        let headers =
            |b: reqwest::RequestBuilder| b.header("x-api-key", &self.api_key).header("anthropic-version", API_VERSION);
        // Overloaded (or an API error) after the 200, before any call was handed on: nothing
        // ran, so the request is sent again, like an overloaded status.
        let retryable = |e: &Error| matches!(e, Error::StreamError { kind, .. } if matches!(kind.as_str(), "overloaded_error" | "api_error"));
        let (acc, attempts) =
            self.http.stream(&request_body(request), headers, sink, |r, s| Box::pin(read(r, s)), retryable).await?;
        Ok(acc.finish(attempts))
    }
}

/// Read the event stream up to `message_stop`.
async fn read(response: reqwest::Response, sink: &mut dyn TurnSink) -> Result<Accumulator> {
    let mut acc = Accumulator::default();
    sse::read_until(NAME, response, "`message_stop`", |event| acc.event(&event, sink)).await?;
    Ok(acc)
}

/// A block being streamed.
enum Partial {
    Text(String),
    ToolUse { id: String, name: String, json: String },
    Other(Value),
}

/// Builds the response from the events.
///
/// Blocks are kept by index and, for an index the stream uses more than once (which the API
/// never does, but a proxy or a faulty server may), by the order they started in: a second
/// block at a used index is a second block, never one that replaces the first (whose tool call
/// may have run already).
#[derive(Default)]
pub(crate) struct Accumulator {
    /// Open blocks by index, each with its start number.
    blocks: BTreeMap<u64, (u32, Partial)>,
    /// Finished blocks by index and start number.
    done: BTreeMap<(u64, u32), Block>,
    /// Blocks started so far (the start number of the next).
    started: u32,
    usage: Usage,
    stop_reason: Option<StopReason>,
}

fn usage_into(usage: &mut Usage, v: &Value) {
    let get = |k: &str| v.get(k).and_then(Value::as_u64);
    // `message_delta` usage is cumulative: a field present replaces the earlier one.
    if let Some(n) = get("input_tokens") {
        usage.input_tokens = n;
    }
    if let Some(n) = get("output_tokens") {
        usage.output_tokens = n;
    }
    if let Some(n) = get("cache_creation_input_tokens") {
        usage.cache_creation_input_tokens = n;
    }
    if let Some(n) = get("cache_read_input_tokens") {
        usage.cache_read_input_tokens = n;
    }
}

/// A block that never stopped, as far as it came; a tool_use in it never ran and keeps no
/// input.
fn unfinished(partial: Partial) -> Block {
    match partial {
        Partial::Text(t) => Block::Text(t),
        Partial::ToolUse { id, name, .. } => Block::ToolUse(ToolUse::new(id, name, json!({}))),
        Partial::Other(v) => Block::Other(v),
    }
}

impl Accumulator {
    /// Take one event. Returns `true` at `message_stop`.
    pub(crate) fn event(&mut self, event: &sse::Event, sink: &mut dyn TurnSink) -> Result<bool> {
        let data = sse::json(NAME, event)?;
        let kind = data.get("type").and_then(Value::as_str).or(event.name.as_deref()).unwrap_or_default();
        let protocol =
            |message: &str| Error::Protocol { provider: NAME, event: kind.to_string(), message: message.into() };
        let index = data.get("index").and_then(Value::as_u64);
        match kind {
            "message_start" => {
                if let Some(u) = data.pointer("/message/usage") {
                    usage_into(&mut self.usage, u);
                }
            }
            "content_block_start" => {
                let index = index.ok_or_else(|| protocol("no index"))?;
                let block = data.get("content_block").ok_or_else(|| protocol("no content_block"))?;
                let partial = match block.get("type").and_then(Value::as_str) {
                    Some("text") => {
                        Partial::Text(block.get("text").and_then(Value::as_str).unwrap_or_default().to_string())
                    }
                    Some("tool_use") => Partial::ToolUse {
                        id: block
                            .get("id")
                            .and_then(Value::as_str)
                            .ok_or_else(|| protocol("tool_use without id"))?
                            .into(),
                        name: block
                            .get("name")
                            .and_then(Value::as_str)
                            .ok_or_else(|| protocol("tool_use without name"))?
                            .into(),
                        json: String::new(),
                    },
                    _ => Partial::Other(block.clone()),
                };
                let start = self.started;
                self.started += 1;
                // An index still open is started again: the open block is kept as far as it
                // came (a tool_use in it never ran), and the new one goes after it.
                if let Some((earlier, open)) = self.blocks.insert(index, (start, partial)) {
                    self.done.insert((index, earlier), unfinished(open));
                }
            }
            "content_block_delta" => {
                let index = index.ok_or_else(|| protocol("no index"))?;
                let delta = data.get("delta").ok_or_else(|| protocol("no delta"))?;
                let (_, block) =
                    self.blocks.get_mut(&index).ok_or_else(|| protocol("a delta for a block never started"))?;
                let text = |k: &str| delta.get(k).and_then(Value::as_str).unwrap_or_default();
                match (delta.get("type").and_then(Value::as_str).unwrap_or_default(), block) {
                    ("text_delta", Partial::Text(t)) => t.push_str(text("text")),
                    ("input_json_delta", Partial::ToolUse { json, .. }) => json.push_str(text("partial_json")),
                    // Thinking, signatures, server tools: appended to the field of the same
                    // name, so the block goes back as the model wrote it.
                    (kind, Partial::Other(v)) => {
                        let (field, add) = match kind {
                            "thinking_delta" => ("thinking", text("thinking")),
                            "signature_delta" => ("signature", text("signature")),
                            "text_delta" => ("text", text("text")),
                            "citations_delta" => {
                                if let Some(c) = delta.get("citation") {
                                    match v.get_mut("citations").and_then(Value::as_array_mut) {
                                        Some(list) => list.push(c.clone()),
                                        None => v["citations"] = json!([c]),
                                    }
                                }
                                return Ok(false);
                            }
                            "input_json_delta" => ("__partial_json", text("partial_json")),
                            _ => return Ok(false),
                        };
                        let mut s = v.get(field).and_then(Value::as_str).unwrap_or_default().to_string();
                        s.push_str(add);
                        v[field] = Value::String(s);
                    }
                    _ => {}
                }
            }
            "content_block_stop" => {
                let index = index.ok_or_else(|| protocol("no index"))?;
                let Some((start, partial)) = self.blocks.remove(&index) else {
                    return Err(protocol("a stop for a block never started"));
                };
                let block = match partial {
                    Partial::Text(t) => Block::Text(t),
                    Partial::ToolUse { id, name, json } => {
                        let text = if json.trim().is_empty() { "{}" } else { json.as_str() };
                        match serde_json::from_str::<Value>(text) {
                            Ok(input) => {
                                let call = ToolUse::new(id, name, input);
                                sink.tool_use(call.clone());
                                Block::ToolUse(call)
                            }
                            // Incomplete input (cut at max_tokens): never run; the loop stops
                            // on the stop reason, or answers it as invalid.
                            Err(_) => Block::ToolUse(ToolUse::new(id, name, Value::Object(Default::default()))),
                        }
                    }
                    Partial::Other(mut v) => {
                        if let Some(Value::String(json)) = v.as_object_mut().and_then(|o| o.remove("__partial_json")) {
                            v["input"] = serde_json::from_str(&json).unwrap_or(json!({}));
                        }
                        Block::Other(v)
                    }
                };
                self.done.insert((index, start), block);
            }
            "message_delta" => {
                if let Some(reason) = data.pointer("/delta/stop_reason").and_then(Value::as_str) {
                    self.stop_reason = Some(StopReason::parse(reason));
                }
                if let Some(u) = data.get("usage") {
                    usage_into(&mut self.usage, u);
                }
            }
            "message_stop" => return Ok(true),
            "ping" => {}
            "error" => return Err(sse::stream_error(NAME, data.get("error").unwrap_or(&Value::Null))),
            // New event types are to be ignored, as the API's versioning policy says.
            _ => {}
        }
        Ok(false)
    }

    /// The response, once `message_stop` came. A block still open (never stopped) is kept
    /// as far as it came; a tool_use among them was never run.
    pub(crate) fn finish(mut self, attempts: u32) -> ModelResponse {
        for (index, (start, partial)) in std::mem::take(&mut self.blocks) {
            self.done.insert((index, start), unfinished(partial));
        }
        ModelResponse {
            message: Message { role: Role::Assistant, content: self.done.into_values().collect() },
            stop_reason: self.stop_reason.unwrap_or(StopReason::Other("none".into())),
            usage: self.usage,
            attempts,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::ToolDef;
    use crate::provider::Calls;

    fn ev(name: &str, data: Value) -> sse::Event {
        sse::Event { name: Some(name.into()), data: data.to_string() }
    }

    #[test]
    fn tool_use_is_handed_over_at_its_block_stop() {
        let mut acc = Accumulator::default();
        let mut calls = Calls(Vec::new());
        let events = [
            ev(
                "message_start",
                json!({"type":"message_start","message":{"usage":{"input_tokens":10,"output_tokens":1}}}),
            ),
            ev(
                "content_block_start",
                json!({"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}),
            ),
            ev(
                "content_block_delta",
                json!({"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hi"}}),
            ),
            ev("content_block_stop", json!({"type":"content_block_stop","index":0})),
            ev(
                "content_block_start",
                json!({"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"t1","name":"Read","input":{}}}),
            ),
            ev(
                "content_block_delta",
                json!({"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"file_"}}),
            ),
            ev(
                "content_block_delta",
                json!({"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"path\":\"a\"}"}}),
            ),
        ];
        for e in &events {
            assert!(!acc.event(e, &mut calls).unwrap());
        }
        assert!(calls.0.is_empty(), "not before its block stops");
        acc.event(&ev("content_block_stop", json!({"type":"content_block_stop","index":1})), &mut calls).unwrap();
        assert_eq!(calls.0, vec![ToolUse::new("t1", "Read", json!({"file_path":"a"}))]);
        acc.event(
            &ev(
                "message_delta",
                json!({"type":"message_delta","delta":{"stop_reason":"tool_use"},"usage":{"output_tokens":20}}),
            ),
            &mut calls,
        )
        .unwrap();
        assert!(acc.event(&ev("message_stop", json!({"type":"message_stop"})), &mut calls).unwrap());
        let r = acc.finish(1);
        assert_eq!(r.stop_reason, StopReason::ToolUse);
        assert_eq!(r.usage, Usage { input_tokens: 10, output_tokens: 20, ..Usage::default() });
        assert_eq!(r.message.text(), "Hi");
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig { cases: 500, failure_persistence: None, ..Default::default() })]

        /// Tool_use blocks streamed at reused indexes (a block started again while open, or
        /// after it stopped): every call handed on to run is in the message, with its input,
        /// and no block is lost.
        #[test]
        fn no_streamed_call_is_lost_whatever_the_indexes(
            steps in proptest::collection::vec((0u64..3, proptest::bool::weighted(0.8)), 1..12)
        ) {
            let mut acc = Accumulator::default();
            let mut calls = Calls(Vec::new());
            for (n, (index, stop)) in steps.iter().enumerate() {
                let id = format!("t{n}");
                let start = json!({"type":"content_block_start","index":index,
                    "content_block":{"type":"tool_use","id":id,"name":"Read","input":{}}});
                acc.event(&ev("content_block_start", start), &mut calls).unwrap();
                let delta = json!({"type":"content_block_delta","index":index,
                    "delta":{"type":"input_json_delta","partial_json":format!("{{\"n\":{n}}}")}});
                acc.event(&ev("content_block_delta", delta), &mut calls).unwrap();
                if *stop {
                    acc.event(&ev("content_block_stop", json!({"type":"content_block_stop","index":index})), &mut calls).unwrap();
                }
            }
            let message = acc.finish(1).message;
            let in_message: Vec<&ToolUse> = message.tool_uses().collect();
            proptest::prop_assert_eq!(in_message.len(), steps.len(), "every block is kept: {:?}", in_message);
            for call in &calls.0 {
                proptest::prop_assert!(in_message.contains(&call), "{:?} ran but is not in the message", call);
            }
        }
    }

    #[test]
    fn breakpoints_go_on_the_last_tool_system_block_and_message_block() {
        let def = |n: &str| ToolDef { name: n.into(), description: "d".into(), input_schema: json!({"type":"object"}) };
        let req = ModelRequest {
            model: "m".into(),
            system: vec!["one".into(), "two".into()],
            messages: vec![Message::user_text("hi")],
            tools: vec![def("A"), def("B")],
            max_tokens: 100,
        };
        let body = request_body(&req);
        assert!(body["tools"][0].get("cache_control").is_none());
        assert_eq!(body["tools"][1]["cache_control"], json!({"type":"ephemeral"}));
        assert!(body["system"][0].get("cache_control").is_none());
        assert_eq!(body["system"][1]["cache_control"], json!({"type":"ephemeral"}));
        assert_eq!(body["messages"][0]["content"][0]["cache_control"], json!({"type":"ephemeral"}));
        assert_eq!(body["stream"], json!(true));
    }
}
