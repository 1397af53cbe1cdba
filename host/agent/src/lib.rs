//! # toolhost-agent
//!
//! The agent loop behind `toolhost agent`: send the conversation to a model, run every tool
//! call it makes through the toolhost [`Runtime`](toolhost::Runtime) (the sandbox, the
//! permission rules, the hooks), send the results back paired by id in model order, and stop
//! with an answer, or at a limit. Providers sit behind one [`Provider`] trait: the Anthropic
//! Messages API ([`Anthropic`]) and OpenAI-compatible Chat Completions ([`OpenAi`]), both
//! streamed as server-sent events, so each tool call starts as soon as its input is complete
//! (the runtime's streaming turn, [`toolhost::Runtime::run_turn`]).
//!
//! ## Example
//!
//! ```no_run
//! # async fn demo(runtime: toolhost::Runtime) -> Result<(), toolhost_agent::Error> {
//! use std::sync::Arc;
//! use toolhost_agent::{Agent, AgentOptions, Anthropic};
//!
//! let provider = Anthropic::new(toolhost_agent::anthropic::DEFAULT_BASE_URL, "sk-…")?;
//! let agent = Agent::new(Arc::new(runtime), Arc::new(provider), AgentOptions::new("claude-sonnet-4-5"));
//! let outcome = agent.run(&toolhost::Session::new(), "Summarise README.md", &Default::default()).await?;
//! println!("{}", outcome.text);
//! eprintln!("{}", outcome.summary());
//! # Ok(()) }
//! ```
#![deny(missing_docs)]

pub mod anthropic;
mod deferral;
mod error;
mod http;
mod looping;
mod message;
pub mod openai;
mod provider;
mod retry;
mod sse;
mod transcript;

pub use anthropic::Anthropic;
pub use deferral::{Deferral, TOOL_SEARCH, estimate_tokens};
pub use error::{Error, Result, RetryNotice};
pub use looping::{Agent, AgentOptions, Observer, Outcome, Pricing, Stop};
pub use message::{Block, Message, ModelRequest, ModelResponse, Role, StopReason, ToolDef, Usage};
pub use openai::OpenAi;
pub use provider::{Provider, TurnSink};
pub use retry::{RetryPolicy, retryable};
pub use transcript::Transcript;
