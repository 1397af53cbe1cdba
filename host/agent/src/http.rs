//! # The HTTP side both providers share
//!
//! Both model APIs take one JSON `POST` and answer with server-sent events, so everything but
//! the wire format is the same: the client, the request (apart from how the key travels), the
//! retries, and the loop that reads events up to the stream's end. That part lives here, once;
//! each provider keeps its own body, its own events and its own key header in its own file.

use crate::error::{Error, Result};
use crate::provider::TurnSink;
use crate::retry::{self, Endpoint, RetryPolicy};
use std::time::Duration;

/// How long connecting may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(30);

/// The longest wait between two chunks of an answer: long enough for a model that thinks
/// before its first token.
const READ_TIMEOUT: Duration = Duration::from_secs(600);

/// A model API's endpoint: where it is, how to name its failures, and how to retry.
#[derive(Debug, Clone)]
pub(crate) struct Http {
    client: reqwest::Client,
    provider: &'static str,
    key_env: &'static str,
    url: String,
    pub(crate) retry: RetryPolicy,
}

impl Http {
    /// `url` for `provider` (whose key the CLI reads from `key_env`, named when it is refused),
    /// with a new client (rustls with compiled-in roots, [`CONNECT_TIMEOUT`], [`READ_TIMEOUT`])
    /// and the default [`RetryPolicy`].
    ///
    /// # Errors
    ///
    /// [`Error::Client`] if the HTTP client cannot be built.
    pub(crate) fn new(provider: &'static str, key_env: &'static str, url: String) -> Result<Self> {
        let client = reqwest::Client::builder()
            .connect_timeout(CONNECT_TIMEOUT)
            .read_timeout(READ_TIMEOUT)
            .user_agent(concat!("toolhost-agent/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(Error::Client)?;
        Ok(Http { client, provider, key_env, url, retry: RetryPolicy::default() })
    }

    /// `POST` `body` as JSON asking for an event stream, with the provider's own headers added
    /// by `headers` (its key, its API version), and read the answer with `read`; retried as
    /// [`retry::request`] says (`stream_retryable`: which errors read from a stream that began
    /// are worth sending again). Returns what `read` made and the number of attempts.
    pub(crate) async fn stream<T>(
        &self,
        body: &serde_json::Value,
        headers: impl Fn(reqwest::RequestBuilder) -> reqwest::RequestBuilder,
        sink: &mut dyn TurnSink,
        read: impl for<'s> Fn(reqwest::Response, &'s mut dyn TurnSink) -> futures::future::BoxFuture<'s, Result<T>>,
        stream_retryable: impl Fn(&Error) -> bool,
    ) -> Result<(T, u32)> {
        let endpoint = Endpoint { provider: self.provider, url: &self.url, key_env: self.key_env };
        let build = || headers(self.client.post(&self.url)).header("accept", "text/event-stream").json(body);
        retry::request(&self.retry, &endpoint, sink, build, read, stream_retryable).await
    }
}
