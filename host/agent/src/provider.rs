//! # The provider interface
//!
//! One trait between the loop and a model API. A provider turns a [`ModelRequest`] into its
//! wire format, reads the streamed answer, hands each tool call to the [`TurnSink`] as soon as
//! its input is complete (so the tool can start while the model is still writing), and
//! returns the whole assistant message. The runtime and the loop never know which model they
//! serve.

use crate::error::{Result, RetryNotice};
use crate::message::{ModelRequest, ModelResponse};
use async_trait::async_trait;
use toolhost::ToolUse;

/// Receives what a provider learns while a response streams in.
pub trait TurnSink: Send {
    /// A tool call whose input is complete, in model order.
    fn tool_use(&mut self, call: ToolUse);
    /// A request failed and will be retried after `notice.delay`.
    fn retry(&mut self, notice: &RetryNotice) {
        let _ = notice;
    }
}

/// A model API.
#[async_trait]
pub trait Provider: Send + Sync {
    /// A short name for messages and the transcript (`anthropic`, `openai`).
    fn name(&self) -> &'static str;

    /// Send one request and read the streamed response. Retryable failures (429, 5xx,
    /// overloaded) are retried before any event was read; after that a failure is an error.
    ///
    /// # Errors
    ///
    /// [`crate::Error::Auth`] for refused credentials, [`crate::Error::Status`] for another
    /// error status (after the retries), [`crate::Error::Connect`] when the provider cannot be
    /// reached, and the stream errors when the response breaks off or is malformed.
    async fn send(&self, request: &ModelRequest, sink: &mut dyn TurnSink) -> Result<ModelResponse>;
}

/// A sink that keeps the calls handed to it, for the providers' tests.
#[cfg(test)]
pub(crate) struct Calls(pub Vec<ToolUse>);

#[cfg(test)]
impl TurnSink for Calls {
    fn tool_use(&mut self, call: ToolUse) {
        self.0.push(call);
    }
}
