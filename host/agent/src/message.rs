//! # The conversation, in one provider-neutral shape
//!
//! Messages are kept in the Messages API's shape (text, `tool_use` and `tool_result` blocks),
//! because that is what the runtime speaks; each provider maps them to its own wire format
//! and back. Blocks the loop does not interpret (thinking, server tools) are kept as they came
//! and sent back unchanged, as the Messages API requires after `pause_turn`.

use serde::Serialize;
use serde_json::{Value, json};
use toolhost::{ContentBlock, ToolUse};

/// Who said it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// The user (the prompt, and tool results).
    User,
    /// The model.
    Assistant,
}

/// One content block of a message.
#[derive(Debug, Clone, PartialEq)]
pub enum Block {
    /// Text.
    Text(String),
    /// A tool call. `input` is `{}` when the model's JSON did not parse.
    ToolUse(ToolUse),
    /// The answer to a tool call.
    ToolResult {
        /// The call it answers.
        tool_use_id: String,
        /// What the model reads.
        content: Vec<ContentBlock>,
        /// Whether the call failed (a tool error, a denial, …).
        is_error: bool,
    },
    /// Any other block (thinking, server tool use …), kept verbatim.
    Other(Value),
}

impl Block {
    /// The block in the Messages API's JSON form.
    pub fn to_json(&self) -> Value {
        match self {
            Block::Text(text) => json!({"type": "text", "text": text}),
            Block::ToolUse(call) => json!({"type": "tool_use", "id": call.id, "name": call.name, "input": call.input}),
            Block::ToolResult { tool_use_id, content, is_error } => {
                let mut v = json!({"type": "tool_result", "tool_use_id": tool_use_id, "content": content});
                if *is_error {
                    v["is_error"] = Value::Bool(true);
                }
                v
            }
            Block::Other(v) => v.clone(),
        }
    }
}

impl Serialize for Block {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.to_json().serialize(s)
    }
}

/// A message of the conversation.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Message {
    /// Who said it.
    pub role: Role,
    /// What was said.
    pub content: Vec<Block>,
}

impl Message {
    /// A user message of one text block.
    pub fn user_text(text: impl Into<String>) -> Self {
        Message { role: Role::User, content: vec![Block::Text(text.into())] }
    }

    /// The text blocks joined (what a person reads of an assistant message).
    pub fn text(&self) -> String {
        self.content
            .iter()
            .filter_map(|b| match b {
                Block::Text(t) => Some(t.as_str()),
                _ => None,
            })
            .collect::<Vec<_>>()
            .join("")
    }

    /// The tool calls, in model order.
    pub fn tool_uses(&self) -> impl Iterator<Item = &ToolUse> {
        self.content.iter().filter_map(|b| match b {
            Block::ToolUse(call) => Some(call),
            _ => None,
        })
    }
}

/// A tool the model may call.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ToolDef {
    /// Its name.
    pub name: String,
    /// What it does, for the model.
    pub description: String,
    /// Its input JSON Schema.
    pub input_schema: Value,
}

/// Tokens of one response (or, summed, of a run). Cache fields are zero where a provider has
/// no prompt caching.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Usage {
    /// Input tokens not read from or written to the cache.
    pub input_tokens: u64,
    /// Output tokens.
    pub output_tokens: u64,
    /// Input tokens written to the prompt cache.
    pub cache_creation_input_tokens: u64,
    /// Input tokens read from the prompt cache.
    pub cache_read_input_tokens: u64,
}

impl Usage {
    /// Every token counted, input (cached or not) and output: what a token budget spends.
    pub fn total(&self) -> u64 {
        self.input_tokens + self.output_tokens + self.cache_creation_input_tokens + self.cache_read_input_tokens
    }

    /// Add another response's usage.
    pub fn add(&mut self, other: &Usage) {
        self.input_tokens += other.input_tokens;
        self.output_tokens += other.output_tokens;
        self.cache_creation_input_tokens += other.cache_creation_input_tokens;
        self.cache_read_input_tokens += other.cache_read_input_tokens;
    }
}

/// Why the model stopped (the Messages API's names; other providers' reasons are mapped).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum StopReason {
    /// It finished its answer.
    EndTurn,
    /// It hit the request's `max_tokens`.
    MaxTokens,
    /// It produced one of the stop sequences.
    StopSequence,
    /// It wants tool results.
    ToolUse,
    /// A long server-side turn was paused; send the response back to continue it.
    PauseTurn,
    /// It declined to answer (a safety refusal, or a content filter).
    Refusal,
    /// Anything else the provider said.
    Other(String),
}

impl StopReason {
    /// The Messages API's name of a stop reason.
    pub fn parse(s: &str) -> Self {
        match s {
            "end_turn" => StopReason::EndTurn,
            "max_tokens" => StopReason::MaxTokens,
            "stop_sequence" => StopReason::StopSequence,
            "tool_use" => StopReason::ToolUse,
            "pause_turn" => StopReason::PauseTurn,
            "refusal" => StopReason::Refusal,
            other => StopReason::Other(other.to_string()),
        }
    }
}

/// One request to the model.
#[derive(Debug, Clone)]
pub struct ModelRequest {
    /// The model's name.
    pub model: String,
    /// System prompt blocks (the last one carries the cache breakpoint).
    pub system: Vec<String>,
    /// The conversation so far.
    pub messages: Vec<Message>,
    /// The tools offered.
    pub tools: Vec<ToolDef>,
    /// The most output tokens.
    pub max_tokens: u32,
}

/// The model's answer to one request.
#[derive(Debug, Clone)]
pub struct ModelResponse {
    /// The assistant message.
    pub message: Message,
    /// Why it stopped.
    pub stop_reason: StopReason,
    /// Its tokens.
    pub usage: Usage,
    /// How many requests it took (1 without retries).
    pub attempts: u32,
}
