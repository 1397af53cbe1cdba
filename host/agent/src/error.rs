//! # Errors
//!
//! What can end a run of the loop before the model does: a provider that cannot be reached or
//! refuses the credentials, a response the loop cannot read, a transcript that cannot be
//! written. Limits (max turns, the token budget, `max_tokens`, a refusal) are not errors: they
//! are a [`crate::Stop`], since the run did what it was told.

use std::time::Duration;

/// Errors of the agent loop and its providers.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The provider refused the credentials (HTTP 401 or 403).
    #[error("authentication failed ({status}): {message}; check {key_env}")]
    Auth {
        /// The HTTP status.
        status: u16,
        /// The provider's own message.
        message: String,
        /// The environment variable the key comes from.
        key_env: &'static str,
    },
    /// The provider answered with an error status that is not worth retrying (a bad request,
    /// an unknown model), or a retryable one after every retry.
    #[error("{provider} answered {status}{}: {message}", retried(*.attempts))]
    Status {
        /// Which provider.
        provider: &'static str,
        /// The HTTP status.
        status: u16,
        /// The provider's own message (or the start of the body).
        message: String,
        /// How many requests were made.
        attempts: u32,
    },
    /// The request did not reach the provider, or its response broke off.
    #[error("{provider}: cannot reach {url}{}", retried(*.attempts))]
    Connect {
        /// Which provider.
        provider: &'static str,
        /// The endpoint.
        url: String,
        /// How many requests were made.
        attempts: u32,
        /// What went wrong.
        #[source]
        source: reqwest::Error,
    },
    /// The event stream could not be read (a broken body or a malformed SSE line).
    #[error("{provider}: the event stream broke off: {message}")]
    Stream {
        /// Which provider.
        provider: &'static str,
        /// What went wrong.
        message: String,
    },
    /// The stream carried an `error` event (e.g. `overloaded_error` after the response began).
    #[error("{provider}: the model's stream reported {kind}: {message}")]
    StreamError {
        /// Which provider.
        provider: &'static str,
        /// The error's type, e.g. `overloaded_error`.
        kind: String,
        /// Its message.
        message: String,
    },
    /// An event that does not follow the documented format.
    #[error("{provider}: unexpected event {event:?}: {message}")]
    Protocol {
        /// Which provider.
        provider: &'static str,
        /// The event's name (or data).
        event: String,
        /// What was wrong with it.
        message: String,
    },
    /// The transcript file could not be written.
    #[error("cannot write the transcript")]
    Transcript(#[source] std::io::Error),
    /// The run was cancelled while the model was answering.
    #[error("interrupted")]
    Interrupted,
    /// The HTTP client could not be built (e.g. no TLS roots).
    #[error("cannot build the HTTP client")]
    Client(#[source] reqwest::Error),
}

/// ` after N attempts` when more than one request was made.
fn retried(attempts: u32) -> String {
    if attempts > 1 { format!(" after {attempts} attempts") } else { String::new() }
}

/// `Result` with this crate's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// One retry about to happen, for progress output and tests.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RetryNotice {
    /// The attempt that failed (1 for the first request).
    pub attempt: u32,
    /// The HTTP status that failed, or `None` for a connection error or an error event in
    /// the stream.
    pub status: Option<u16>,
    /// The server's `retry-after`, when it sent one.
    pub retry_after: Option<Duration>,
    /// How long the loop waits before the next attempt.
    pub delay: Duration,
}
