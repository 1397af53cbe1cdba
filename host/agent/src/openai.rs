//! # OpenAI-compatible Chat Completions
//!
//! `POST {base}/chat/completions` (the base includes `/v1`, as OpenAI's SDKs expect, so
//! vLLM's and llama.cpp's servers work with `--base-url http://host:port/v1`), streamed, with
//! `stream_options.include_usage`. The mapping both ways:
//!
//! | neutral (Messages API shape) | Chat Completions |
//! |---|---|
//! | system blocks | one `system` message |
//! | tool `{name, description, input_schema}` | `{"type":"function","function":{name, description, parameters}}` |
//! | assistant text + `tool_use` blocks | `assistant` message with `content` and `tool_calls` (arguments as a JSON string) |
//! | `tool_result` blocks | one `tool` message each (`tool_call_id`), in order, before any user text |
//! | stop `stop` / `length` / `tool_calls` / `content_filter` | `end_turn` / `max_tokens` / `tool_use` / `refusal` |
//!
//! Chat Completions has no `is_error`: an error result's text starts with `Error: ` unless it
//! already says so. A tool call is handed to the sink when the next one begins or the choice
//! finishes, i.e. once its arguments are complete. No prompt caching markers (OpenAI caches on
//! its own).

use crate::error::Result;
use crate::http::Http;
use crate::message::{Block, Message, ModelRequest, ModelResponse, Role, StopReason, Usage};
use crate::provider::{Provider, TurnSink};
use crate::retry::RetryPolicy;
use crate::sse;
use async_trait::async_trait;
use serde_json::{Value, json};
use std::collections::BTreeMap;
use toolhost::ToolUse;

const NAME: &str = "openai";

/// The default endpoint.
pub const DEFAULT_BASE_URL: &str = "https://api.openai.com/v1";

/// The environment variable the CLI reads the key from.
pub const KEY_ENV: &str = "OPENAI_API_KEY";

/// An OpenAI-compatible Chat Completions server. Build with [`OpenAi::new`].
#[derive(Debug, Clone)]
pub struct OpenAi {
    http: Http,
    api_key: Option<String>,
}

impl OpenAi {
    /// A provider for `base_url` (e.g. [`DEFAULT_BASE_URL`]); without a key no
    /// `Authorization` header is sent (local servers need none). Default [`RetryPolicy`].
    ///
    /// # Errors
    ///
    /// [`Error::Client`](crate::Error::Client) if the HTTP client cannot be built.
    pub fn new(base_url: &str, api_key: Option<String>) -> Result<Self> {
        let url = format!("{}/chat/completions", base_url.trim_end_matches('/'));
        Ok(OpenAi { http: Http::new(NAME, KEY_ENV, url)?, api_key: api_key.filter(|k| !k.is_empty()) })
    }

    /// Retry with this policy instead.
    pub fn with_retry(mut self, retry: RetryPolicy) -> Self {
        self.http.retry = retry;
        self
    }
}

/// One neutral message as Chat Completions messages.
fn map_message(m: &Message, out: &mut Vec<Value>) {
    match m.role {
        Role::Assistant => {
            let text = m.text();
            let calls: Vec<Value> = m
                .tool_uses()
                .map(|c| {
                    json!({"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.input.to_string()}})
                })
                .collect();
            let mut v = json!({"role": "assistant", "content": if text.is_empty() { Value::Null } else { Value::String(text) }});
            if !calls.is_empty() {
                v["tool_calls"] = Value::Array(calls);
            }
            out.push(v);
        }
        Role::User => {
            let mut text = Vec::new();
            for b in &m.content {
                match b {
                    Block::ToolResult { tool_use_id, content, is_error } => {
                        let mut body = toolhost::content_text(content);
                        if *is_error && !body.to_ascii_lowercase().contains("error") {
                            body = format!("Error: {body}");
                        }
                        out.push(json!({"role": "tool", "tool_call_id": tool_use_id, "content": body}));
                    }
                    Block::Text(t) => text.push(t.as_str()),
                    Block::ToolUse(_) | Block::Other(_) => {}
                }
            }
            if !text.is_empty() {
                out.push(json!({"role": "user", "content": text.join("\n")}));
            }
        }
    }
}

/// The request body.
pub(crate) fn request_body(request: &ModelRequest) -> Value {
    let mut messages = Vec::new();
    if !request.system.is_empty() {
        messages.push(json!({"role": "system", "content": request.system.join("\n\n")}));
    }
    for m in &request.messages {
        map_message(m, &mut messages);
    }
    let mut body = json!({
        "model": request.model,
        "messages": messages,
        "max_tokens": request.max_tokens,
        "stream": true,
        "stream_options": {"include_usage": true},
    });
    if !request.tools.is_empty() {
        body["tools"] = request
            .tools
            .iter()
            .map(|t| json!({"type": "function", "function": {"name": t.name, "description": t.description, "parameters": t.input_schema}}))
            .collect();
    }
    body
}

#[async_trait]
impl Provider for OpenAi {
    fn name(&self) -> &'static str {
        NAME
    }

    async fn send(&self, request: &ModelRequest, sink: &mut dyn TurnSink) -> Result<ModelResponse> {
        let headers = |b: reqwest::RequestBuilder| match &self.api_key {
            Some(key) => b.bearer_auth(key),
            None => b,
        };
        // A Chat Completions stream has no error event that says "send again": a broken stream
        // is final.
        let (acc, attempts) =
            self.http.stream(&request_body(request), headers, sink, |r, s| Box::pin(read(r, s)), |_| false).await?;
        Ok(acc.finish(attempts, sink))
    }
}

/// Read the event stream up to `data: [DONE]`.
async fn read(response: reqwest::Response, sink: &mut dyn TurnSink) -> Result<Accumulator> {
    let mut acc = Accumulator::default();
    sse::read_until(NAME, response, "`data: [DONE]`", |event| {
        if event.data.trim() == "[DONE]" {
            return Ok(true);
        }
        acc.chunk(&sse::json(NAME, &event)?, sink)?;
        Ok(false)
    })
    .await?;
    Ok(acc)
}

/// A tool call being streamed.
#[derive(Default)]
struct PartialCall {
    id: String,
    name: String,
    arguments: String,
}

/// Builds the response from the chunks.
#[derive(Default)]
///
/// Calls are kept by index and, for an index the stream uses for more than one call (a second
/// `id` at an index, or arguments for an index already handed on), by the order they started
/// in: a call that reuses an index is a second call, never one that replaces the first.
pub(crate) struct Accumulator {
    text: String,
    /// Calls being streamed, by index, each with its start number.
    calls: BTreeMap<u64, (u32, PartialCall)>,
    /// Calls already handed to the sink, by index and start number.
    sent: BTreeMap<(u64, u32), ToolUse>,
    /// Calls started so far (the start number of the next).
    started: u32,
    finish: Option<String>,
    refused: bool,
    usage: Usage,
}

impl Accumulator {
    /// Take one chunk.
    pub(crate) fn chunk(&mut self, chunk: &Value, sink: &mut dyn TurnSink) -> Result<()> {
        if let Some(e) = chunk.get("error") {
            return Err(sse::stream_error(NAME, e));
        }
        if let Some(u) = chunk.get("usage").filter(|u| u.is_object()) {
            let get = |p: &str| u.pointer(p).and_then(Value::as_u64).unwrap_or(0);
            let cached = get("/prompt_tokens_details/cached_tokens");
            self.usage = Usage {
                input_tokens: get("/prompt_tokens").saturating_sub(cached),
                output_tokens: get("/completion_tokens"),
                cache_creation_input_tokens: 0,
                cache_read_input_tokens: cached,
            };
        }
        let Some(choice) = chunk.pointer("/choices/0") else { return Ok(()) };
        if let Some(delta) = choice.get("delta") {
            if let Some(t) = delta.get("content").and_then(Value::as_str) {
                self.text.push_str(t);
            }
            if delta.get("refusal").and_then(Value::as_str).is_some_and(|r| !r.is_empty()) {
                self.refused = true;
            }
            for call in delta.get("tool_calls").and_then(Value::as_array).into_iter().flatten() {
                let index = call.get("index").and_then(Value::as_u64).unwrap_or(0);
                // A new index means every earlier call's arguments are complete.
                let earlier: Vec<u64> = self.calls.keys().copied().filter(|i| *i < index).collect();
                for i in earlier {
                    self.send(i, sink);
                }
                let id = call.get("id").and_then(Value::as_str).filter(|id| !id.is_empty());
                // Another id at an index in use starts another call there.
                if let (Some(id), Some((_, open))) = (id, self.calls.get(&index))
                    && !open.id.is_empty()
                    && open.id != id
                {
                    self.send(index, sink);
                    if let Some((start, unsent)) = self.calls.remove(&index) {
                        // Its arguments do not parse: kept as a call that never ran.
                        let id = if unsent.id.is_empty() { format!("call_{index}") } else { unsent.id };
                        self.sent.insert((index, start), ToolUse::new(id, unsent.name, json!({})));
                    }
                }
                let started = &mut self.started;
                let (_, partial) = self.calls.entry(index).or_insert_with(|| {
                    *started += 1;
                    (*started - 1, PartialCall::default())
                });
                if let Some(id) = id
                    && partial.id != id
                {
                    partial.id.push_str(id);
                }
                if let Some(name) = call.pointer("/function/name").and_then(Value::as_str) {
                    partial.name.push_str(name);
                }
                if let Some(args) = call.pointer("/function/arguments").and_then(Value::as_str) {
                    partial.arguments.push_str(args);
                }
            }
        }
        if let Some(reason) = choice.get("finish_reason").and_then(Value::as_str) {
            self.finish = Some(reason.to_string());
            // Cut calls (`length`) are kept unsent, as with the Messages API.
            if reason != "length" {
                let all: Vec<u64> = self.calls.keys().copied().collect();
                for i in all {
                    self.send(i, sink);
                }
            }
        }
        Ok(())
    }

    /// Hand call `index` to the sink if its arguments parse.
    fn send(&mut self, index: u64, sink: &mut dyn TurnSink) {
        let Some((start, p)) = self.calls.remove(&index) else { return };
        let id = if p.id.is_empty() { format!("call_{index}") } else { p.id };
        let text = if p.arguments.trim().is_empty() { "{}" } else { p.arguments.as_str() };
        match serde_json::from_str::<Value>(text) {
            Ok(input) => {
                let call = ToolUse::new(id, p.name, input);
                sink.tool_use(call.clone());
                self.sent.insert((index, start), call);
            }
            Err(_) => {
                self.calls.insert(index, (start, PartialCall { id, name: p.name, arguments: p.arguments }));
            }
        }
    }

    pub(crate) fn finish(mut self, attempts: u32, sink: &mut dyn TurnSink) -> ModelResponse {
        let _ = sink;
        let mut content = Vec::new();
        if !self.text.is_empty() {
            content.push(Block::Text(std::mem::take(&mut self.text)));
        }
        let mut calls: BTreeMap<(u64, u32), ToolUse> = std::mem::take(&mut self.sent);
        for (i, (start, p)) in std::mem::take(&mut self.calls) {
            let id = if p.id.is_empty() { format!("call_{i}") } else { p.id };
            calls.insert((i, start), ToolUse::new(id, p.name, json!({})));
        }
        content.extend(calls.into_values().map(Block::ToolUse));
        let stop_reason = if self.refused {
            StopReason::Refusal
        } else {
            match self.finish.as_deref() {
                Some("stop") => StopReason::EndTurn,
                Some("length") => StopReason::MaxTokens,
                Some("tool_calls") | Some("function_call") => StopReason::ToolUse,
                Some("content_filter") => StopReason::Refusal,
                Some(other) => StopReason::Other(other.to_string()),
                None => StopReason::Other("none".into()),
            }
        };
        ModelResponse { message: Message { role: Role::Assistant, content }, stop_reason, usage: self.usage, attempts }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::ToolDef;
    use crate::provider::Calls;

    #[test]
    fn a_call_is_sent_when_the_next_begins_and_the_rest_at_finish() {
        let mut acc = Accumulator::default();
        let mut sink = Calls(Vec::new());
        let chunk = |v: Value| json!({"choices": [v]});
        acc.chunk(&chunk(json!({"index":0,"delta":{"role":"assistant","tool_calls":[{"index":0,"id":"c1","type":"function","function":{"name":"Read","arguments":""}}]}})), &mut sink).unwrap();
        acc.chunk(&chunk(json!({"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"file_path\":\"a\"}"}}]}})), &mut sink).unwrap();
        assert!(sink.0.is_empty());
        acc.chunk(&chunk(json!({"index":0,"delta":{"tool_calls":[{"index":1,"id":"c2","type":"function","function":{"name":"LS","arguments":"{}"}}]}})), &mut sink).unwrap();
        assert_eq!(sink.0, vec![ToolUse::new("c1", "Read", json!({"file_path":"a"}))]);
        acc.chunk(&chunk(json!({"index":0,"delta":{},"finish_reason":"tool_calls"})), &mut sink).unwrap();
        assert_eq!(sink.0.len(), 2);
        acc.chunk(&json!({"choices":[],"usage":{"prompt_tokens":9,"completion_tokens":4}}), &mut sink).unwrap();
        let r = acc.finish(1, &mut sink);
        assert_eq!(r.stop_reason, StopReason::ToolUse);
        assert_eq!(r.usage.total(), 13);
        assert_eq!(r.message.tool_uses().count(), 2);
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig { cases: 500, failure_persistence: None, ..Default::default() })]

        /// Calls streamed at reused indexes (a second id at an index, arguments for an index
        /// already handed on, the same id repeated in every chunk): every call handed on to run
        /// is in the message, with its input, and every id started is there once.
        #[test]
        fn no_streamed_call_is_lost_whatever_the_indexes(
            calls in proptest::collection::vec((0u64..3, proptest::bool::ANY, 1usize..3), 1..10)
        ) {
            let mut acc = Accumulator::default();
            let mut sink = Calls(Vec::new());
            let chunk = |v: Value| json!({"choices": [{"index": 0, "delta": {"tool_calls": [v]}}]});
            for (n, (index, repeat_id, pieces)) in calls.iter().enumerate() {
                let id = format!("c{n}");
                let args = format!("{{\"n\":{n}}}");
                let cut = args.len() / 2;
                let parts: Vec<&str> = if *pieces == 1 { vec![&args] } else { vec![&args[..cut], &args[cut..]] };
                for (k, part) in parts.iter().enumerate() {
                    let mut c = json!({"index": index, "function": {"arguments": part}});
                    if k == 0 || *repeat_id {
                        c["id"] = json!(id);
                    }
                    if k == 0 {
                        c["function"]["name"] = json!("Read");
                    }
                    acc.chunk(&chunk(c), &mut sink).unwrap();
                }
            }
            acc.chunk(&json!({"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}), &mut sink).unwrap();
            let message = acc.finish(1, &mut sink).message;
            let in_message: Vec<&ToolUse> = message.tool_uses().collect();
            for call in &sink.0 {
                proptest::prop_assert!(in_message.contains(&call), "{:?} ran but is not in the message", call);
            }
            for n in 0..calls.len() {
                let id = format!("c{n}");
                proptest::prop_assert_eq!(in_message.iter().filter(|c| c.id == id).count(), 1, "{} in {:?}", id, in_message);
            }
            proptest::prop_assert_eq!(sink.0.len(), calls.len(), "every complete call is handed on: {:?}", in_message);
        }
    }

    #[test]
    fn messages_map_to_tool_calls_and_tool_messages() {
        let req = ModelRequest {
            model: "m".into(),
            system: vec!["sys".into()],
            messages: vec![
                Message::user_text("hi"),
                Message {
                    role: Role::Assistant,
                    content: vec![Block::Text("ok".into()), Block::ToolUse(ToolUse::new("c1", "Read", json!({"a":1})))],
                },
                Message {
                    role: Role::User,
                    content: vec![Block::ToolResult {
                        tool_use_id: "c1".into(),
                        content: vec![toolhost::ContentBlock::Text { text: "denied".into() }],
                        is_error: true,
                    }],
                },
            ],
            tools: vec![ToolDef {
                name: "Read".into(),
                description: "r".into(),
                input_schema: json!({"type":"object"}),
            }],
            max_tokens: 5,
        };
        let body = request_body(&req);
        assert_eq!(
            body["messages"],
            json!([
                {"role":"system","content":"sys"},
                {"role":"user","content":"hi"},
                {"role":"assistant","content":"ok","tool_calls":[{"id":"c1","type":"function","function":{"name":"Read","arguments":"{\"a\":1}"}}]},
                {"role":"tool","tool_call_id":"c1","content":"Error: denied"}
            ])
        );
        assert_eq!(
            body["tools"][0],
            json!({"type":"function","function":{"name":"Read","description":"r","parameters":{"type":"object"}}})
        );
    }
}
