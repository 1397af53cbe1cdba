//! The stdio transport: one JSON-RPC message per line on stdin and stdout.
//!
//! rmcp's own line transport silently drops lines that are not JSON and lines over its size
//! limit; JSON-RPC 2.0 wants an answer for both, so this one reads lines itself and answers
//! what never reaches the protocol layer: invalid JSON with a parse error (-32700), a line
//! over [`MAX_LINE_BYTES`] or a JSON value that is not a message with an invalid-request error
//! (-32600). Either way the server keeps serving. It also stamps each `tools/call` with its
//! arrival ticket, so calls are scheduled in the order they arrived on the wire.

use super::schedule::Scheduler;
use rmcp::RoleServer;
use rmcp::model::{ClientRequest, ErrorCode, ErrorData, JsonRpcMessage, RequestId};
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use serde_json::Value;
use std::sync::Arc;
use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncWrite, AsyncWriteExt};
use tokio::sync::Mutex;

/// The longest line (one message) read from stdin: 16 MiB.
pub const MAX_LINE_BYTES: usize = 16 * 1024 * 1024;

/// A line-delimited JSON-RPC transport over any reader and writer (stdin and stdout in
/// production).
pub struct LineTransport<R, W> {
    read: R,
    line: Vec<u8>,
    /// Dropping the rest of a line already found too long.
    discarding: bool,
    write: Arc<Mutex<W>>,
    max_line: usize,
    scheduler: Arc<Scheduler>,
}

impl<R, W> LineTransport<R, W>
where
    R: AsyncBufRead + Unpin + Send,
    W: AsyncWrite + Unpin + Send + 'static,
{
    pub fn new(read: R, write: W, scheduler: Arc<Scheduler>) -> Self {
        LineTransport {
            read,
            line: Vec::new(),
            discarding: false,
            write: Arc::new(Mutex::new(write)),
            max_line: MAX_LINE_BYTES,
            scheduler,
        }
    }

    /// Read up to the next newline into `self.line`, never holding more than `max_line`
    /// bytes. `Ok(true)`: a whole line; `Ok(false)`: a line over the limit (dropped);
    /// `Err`: end of input or a read error. Cancel-safe: a partial line stays in `self.line`.
    async fn read_line(&mut self) -> std::io::Result<bool> {
        loop {
            let available = self.read.fill_buf().await?;
            if available.is_empty() {
                return Err(std::io::ErrorKind::UnexpectedEof.into());
            }
            let newline = available.iter().position(|b| *b == b'\n');
            let take = newline.map_or(available.len(), |i| i + 1);
            let mut outcome = None;
            if self.discarding {
                if newline.is_some() {
                    self.discarding = false;
                }
            } else if self.line.len() + take > self.max_line {
                self.line.clear();
                self.discarding = newline.is_none();
                outcome = Some(false);
            } else {
                self.line.extend_from_slice(&available[..take]);
                if newline.is_some() {
                    outcome = Some(true);
                }
            }
            self.read.consume(take);
            if let Some(whole) = outcome {
                return Ok(whole);
            }
        }
    }

    /// Answer a message that never reaches the protocol layer.
    fn write_error(&self, id: Option<RequestId>, error: ErrorData) -> impl Future<Output = ()> + Send + 'static {
        let write = self.write.clone();
        async move {
            // Built by hand: JSON-RPC wants `"id": null` when the id is unknown, which rmcp's
            // message type leaves out.
            let message = serde_json::json!({"jsonrpc": "2.0", "id": id, "error": error});
            if let Err(e) = write_message(&write, &message).await {
                tracing::warn!("cannot write an error response: {e}");
            }
        }
    }
}

async fn write_message<W: AsyncWrite + Unpin>(
    write: &Mutex<W>,
    message: &impl serde::Serialize,
) -> std::io::Result<()> {
    let mut line = serde_json::to_vec(message).map_err(std::io::Error::other)?;
    line.push(b'\n');
    let mut w = write.lock().await;
    w.write_all(&line).await?;
    w.flush().await
}

impl<R, W> Transport<RoleServer> for LineTransport<R, W>
where
    R: AsyncBufRead + Unpin + Send,
    W: AsyncWrite + Unpin + Send + 'static,
{
    type Error = std::io::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleServer>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        let write = self.write.clone();
        async move { write_message(&write, &item).await }
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleServer>> {
        loop {
            match self.read_line().await {
                Ok(true) => {}
                Ok(false) => {
                    tracing::warn!("a message longer than {} bytes was dropped", self.max_line);
                    let message = format!(
                        "Invalid Request: the message is longer than the limit of {} bytes (16 MiB); it was dropped",
                        self.max_line
                    );
                    self.write_error(None, ErrorData::new(ErrorCode::INVALID_REQUEST, message, None)).await;
                    continue;
                }
                Err(e) => {
                    if e.kind() != std::io::ErrorKind::UnexpectedEof {
                        tracing::error!("reading stdin: {e}");
                    }
                    return None;
                }
            }
            let line = std::mem::take(&mut self.line);
            let text = line.strip_suffix(b"\n").unwrap_or(&line);
            let text = text.strip_suffix(b"\r").unwrap_or(text);
            let text = text.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(text);
            if text.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            let value: Value = match serde_json::from_slice(text) {
                Ok(v) => v,
                Err(e) => {
                    tracing::debug!("unparsable message: {e}");
                    self.write_error(None, ErrorData::new(ErrorCode::PARSE_ERROR, format!("Parse error: {e}"), None))
                        .await;
                    continue;
                }
            };
            // A notification (a method and no id) is never answered, even when malformed.
            let has_method = value.get("method").is_some_and(Value::is_string);
            let is_notification = has_method && value.get("id").is_none();
            let id: Option<RequestId> = value.get("id").and_then(|id| serde_json::from_value(id.clone()).ok());
            match serde_json::from_value::<RxJsonRpcMessage<RoleServer>>(value) {
                Ok(mut message) => {
                    if let JsonRpcMessage::Request(request) = &mut message
                        && let ClientRequest::CallToolRequest(call) = &mut request.request
                    {
                        call.extensions.insert(self.scheduler.ticket());
                    }
                    return Some(message);
                }
                Err(e) if is_notification => tracing::debug!("ignoring a malformed notification: {e}"),
                Err(e) => {
                    tracing::debug!("invalid message: {e}");
                    // Any method parses (unknown ones are answered "method not found" later),
                    // so a request with a method and an id that does not parse has bad params.
                    let error = if has_method && id.is_some() {
                        ErrorData::new(ErrorCode::INVALID_PARAMS, format!("Invalid params: {e}"), None)
                    } else {
                        ErrorData::new(ErrorCode::INVALID_REQUEST, format!("Invalid Request: {e}"), None)
                    };
                    self.write_error(id, error).await;
                }
            }
        }
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        self.write.lock().await.flush().await
    }
}
