//! # Server-sent events
//!
//! Both APIs stream their answer as server-sent events. The parsing is `sse-stream`'s (a
//! maintained crate, already used through rmcp); this module only turns a reqwest response
//! into a stream of events with our error type.

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
