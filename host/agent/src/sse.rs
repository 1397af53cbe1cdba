//! # Server-sent events
//!
//! Both APIs stream their answer as server-sent events. The parsing is `sse-stream`'s (a
//! maintained crate, already used through rmcp); this module turns a reqwest response into a
//! stream of events with our error type, and reads it to the end marker each API has.

use crate::error::{Error, Result};
use futures::{Stream, StreamExt};
use sse_stream::SseStream;

/// One event: its name (`event:` line, if any) and its data.
#[derive(Debug, Clone)]
pub(crate) struct Event {
    pub name: Option<String>,
    pub data: String,
}

/// The events of a streaming response, in order; events without data (comments, keep-alive
/// pings with no data line) are skipped.
pub(crate) fn events(provider: &'static str, response: reqwest::Response) -> impl Stream<Item = Result<Event>> + Send {
    SseStream::from_bytes_stream(response.bytes_stream()).filter_map(move |item| async move {
        match item {
            Ok(sse) => sse.data.map(|data| Ok(Event { name: sse.event, data })),
            Err(e) => Some(Err(Error::Stream { provider, message: e.to_string() })),
        }
    })
}

/// Parse an event's JSON data.
pub(crate) fn json(provider: &'static str, event: &Event) -> Result<serde_json::Value> {
    serde_json::from_str(&event.data).map_err(|e| Error::Protocol {
        provider,
        event: event.name.clone().unwrap_or_else(|| event.data.chars().take(80).collect()),
        message: format!("its data is not JSON: {e}"),
    })
}

/// Hand each event of `response` to `take` until it says the stream is done (`true`). A stream
/// that ends before is an error: the answer was cut off. `end` names the marker awaited, for
/// that error.
pub(crate) async fn read_until(
    provider: &'static str,
    response: reqwest::Response,
    end: &str,
    mut take: impl FnMut(Event) -> Result<bool>,
) -> Result<()> {
    let mut events = std::pin::pin!(events(provider, response));
    while let Some(event) = events.next().await {
        if take(event?)? {
            return Ok(());
        }
    }
    Err(Error::Stream { provider, message: format!("the stream ended before {end}") })
}

/// The error an API put in the stream: `error`'s `type` and `message` (both APIs use these
/// names), with defaults for a server that leaves them out.
pub(crate) fn stream_error(provider: &'static str, error: &serde_json::Value) -> Error {
    let kind = error.get("type").and_then(serde_json::Value::as_str).unwrap_or("error").to_string();
    let message = error.get("message").and_then(serde_json::Value::as_str).unwrap_or_default().to_string();
    Error::StreamError { provider, kind, message }
}
