//! The stdio transport: one JSON-RPC message per line on stdin and stdout.
//!
//! rmcp's own line transport silently drops lines that are not JSON and lines over its size
//! limit; JSON-RPC 2.0 wants an answer for both, so this one reads lines itself and answers
//! what never reaches the protocol layer: invalid JSON with a parse error (-32700), a line
//! over [`MAX_LINE_BYTES`] or a JSON value that is not a message with an invalid-request error
//! (-32600). Either way the server keeps serving. It also stamps each `tools/call` with its
//! arrival ticket, so calls are scheduled in the order they arrived on the wire.
//!
//! rmcp races `receive` against its other events in a `select!` and drops it when another
//! wins, so `receive` must never await anything that would be lost with it: the error lines it
//! writes are queued without awaiting to one writer task, which writes them in the order they
//! were queued. Answers (rmcp awaits `send` in a task of its own) are written by that task
//! directly, one whole line at a time under the same lock: no hand-off to the writer task and
//! back for each of them.

use rmcp::RoleServer;
use rmcp::model::{ClientRequest, ErrorCode, ErrorData, JsonRpcMessage, RequestId};
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use serde_json::Value;
use std::sync::Arc;
use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncWrite, AsyncWriteExt};
use tokio::sync::{mpsc, oneshot};
use toolhost::Scheduler;

/// The longest line (one message) read from stdin: 16 MiB.
pub const MAX_LINE_BYTES: usize = 16 * 1024 * 1024;

/// A line-delimited JSON-RPC transport over any reader and writer (stdin and stdout in
/// production).
pub struct LineTransport<R> {
    read: R,
    line: Vec<u8>,
    /// Dropping the rest of a line already found too long.
    discarding: bool,
    write: Writer,
    max_line: usize,
    scheduler: Arc<Scheduler>,
    /// The session whose calls this transport answers itself, once it is open.
    direct: Option<direct::Direct>,
    /// When the input ended.
    ended: Option<std::time::Instant>,
}

/// One line for the writer task, and where to report that it was written (or why not).
struct Queued {
    line: Vec<u8>,
    done: Option<oneshot::Sender<std::io::Result<()>>>,
}

/// The output, written one whole line at a time.
type Output = Arc<tokio::sync::Mutex<Box<dyn AsyncWrite + Unpin + Send>>>;

/// The output, and the queue of the task that writes error lines to it in order.
#[derive(Clone)]
struct Writer {
    queue: mpsc::UnboundedSender<Queued>,
    out: Output,
}

/// Write `line` whole to `out`, then flush. Cancel-safe: a write dropped partway (rmcp aborts
/// its send tasks when draining at shutdown times out) is finished by a task of its own that
/// keeps the lock, so the output never holds part of a line followed by another line.
async fn write_line(out: &Output, line: Vec<u8>) -> std::io::Result<()> {
    let guard = out.clone().lock_owned().await;
    LineWrite { out: Some(guard), line, done: 0 }.run().await
}

/// One line being written, and how much of it is out.
struct LineWrite {
    out: Option<tokio::sync::OwnedMutexGuard<Box<dyn AsyncWrite + Unpin + Send>>>,
    line: Vec<u8>,
    done: usize,
}

impl LineWrite {
    async fn run(mut self) -> std::io::Result<()> {
        let Some(out) = self.out.as_mut() else { return Ok(()) };
        while self.done < self.line.len() {
            match out.write(&self.line[self.done..]).await {
                Ok(0) => {
                    self.done = self.line.len(); // nothing more can be written: do not finish it
                    return Err(std::io::ErrorKind::WriteZero.into());
                }
                Ok(n) => self.done += n,
                Err(e) => {
                    self.done = self.line.len();
                    return Err(e);
                }
            }
        }
        out.flush().await
    }
}

impl Drop for LineWrite {
    fn drop(&mut self) {
        if self.done < self.line.len()
            && let Some(mut out) = self.out.take()
            && let Ok(runtime) = tokio::runtime::Handle::try_current()
        {
            let rest = self.line.split_off(self.done);
            runtime.spawn(async move {
                let finished = async {
                    out.write_all(&rest).await?;
                    out.flush().await
                };
                if let Err(e) = finished.await {
                    tracing::warn!("cannot finish writing an answer: {e}");
                }
            });
        }
    }
}

impl Writer {
    /// Start the task writing queued lines to `out`. It ends when every sender is gone.
    fn spawn<W: AsyncWrite + Unpin + Send + 'static>(out: W) -> Self {
        let out: Output = Arc::new(tokio::sync::Mutex::new(Box::new(out)));
        let (tx, mut rx) = mpsc::unbounded_channel::<Queued>();
        let task_out = out.clone();
        tokio::spawn(async move {
            while let Some(Queued { line, done }) = rx.recv().await {
                let written = write_line(&task_out, line).await;
                match done {
                    Some(done) => {
                        let _ = done.send(written);
                    }
                    None => {
                        if let Err(e) = written {
                            tracing::warn!("cannot write an error response: {e}");
                        }
                    }
                }
            }
        });
        Writer { queue: tx, out }
    }

    /// Write an encoded line (see [`line()`]) when the returned future is awaited.
    fn write(&self, line: std::io::Result<Vec<u8>>) -> impl Future<Output = std::io::Result<()>> + Send + use<> {
        let out = self.out.clone();
        async move { write_line(&out, line?).await }
    }

    /// Queue an encoded line (see [`line()`]), now; the future says when it was written.
    fn queue(&self, line: std::io::Result<Vec<u8>>) -> impl Future<Output = std::io::Result<()>> + Send + use<> {
        let (done, written) = oneshot::channel();
        let queued = line.and_then(|line| self.queue.send(Queued { line, done: Some(done) }).map_err(|_| closed()));
        async move {
            queued?;
            written.await.unwrap_or_else(|_| Err(closed()))
        }
    }

    /// Queue `message` and forget it (a failed write is logged).
    fn queue_detached(&self, message: &impl serde::Serialize) {
        match line(message) {
            Ok(line) => {
                let _ = self.queue.send(Queued { line, done: None });
            }
            Err(e) => tracing::warn!("cannot encode an error response: {e}"),
        }
    }
}

/// `message` as JSON and a newline.
fn line(message: &impl serde::Serialize) -> std::io::Result<Vec<u8>> {
    let mut line = serde_json::to_vec(message).map_err(std::io::Error::other)?;
    line.push(b'\n');
    Ok(line)
}

fn closed() -> std::io::Error {
    std::io::Error::new(std::io::ErrorKind::BrokenPipe, "the output was closed")
}

impl<R> LineTransport<R>
where
    R: AsyncBufRead + Unpin + Send,
{
    /// Must be called within a tokio runtime: it starts the writer task.
    pub fn new<W: AsyncWrite + Unpin + Send + 'static>(read: R, write: W, scheduler: Arc<Scheduler>) -> Self {
        LineTransport {
            read,
            line: Vec::new(),
            discarding: false,
            write: Writer::spawn(write),
            max_line: MAX_LINE_BYTES,
            scheduler,
            direct: None,
            ended: None,
        }
    }

    /// Answer the `tools/call` requests of this session itself once it is open (see
    /// [`direct`]).
    pub fn answering(mut self, shared: Arc<super::server::Shared>, core: Arc<super::server::SessionCore>) -> Self {
        self.direct = Some(direct::Direct::new(shared, core));
        self
    }

    /// Read up to the next newline into `self.line`, never holding more than `max_line`
    /// bytes. `Ok(true)`: a whole line (or the rest of the input before its end); `Ok(false)`:
    /// a line over the limit (dropped); `Err`: end of input or a read error. Cancel-safe: a partial line stays in `self.line`.
    async fn read_line(&mut self) -> std::io::Result<bool> {
        loop {
            let available = self.read.fill_buf().await?;
            if available.is_empty() {
                // A last line cut off by the end of input is a line like any other.
                if !self.line.is_empty() && !self.discarding {
                    return Ok(true);
                }
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

    /// `message` for rmcp, unless this transport answers it itself.
    fn route(&self, message: RxJsonRpcMessage<RoleServer>) -> Option<RxJsonRpcMessage<RoleServer>> {
        let message = match &self.direct {
            Some(direct) => direct.take(message, &self.write, || self.scheduler.ticket())?,
            None => message,
        };
        Some(self.stamped(message))
    }

    /// `message` with its arrival ticket when it is a `tools/call`.
    fn stamped(&self, mut message: RxJsonRpcMessage<RoleServer>) -> RxJsonRpcMessage<RoleServer> {
        if let JsonRpcMessage::Request(request) = &mut message
            && let ClientRequest::CallToolRequest(call) = &mut request.request
        {
            call.extensions.insert(self.scheduler.ticket());
        }
        message
    }

    /// Answer a message that never reaches the protocol layer. Queued, not awaited: see the
    /// module's doc.
    fn write_error(&self, id: Option<RequestId>, error: ErrorData) {
        // Built by hand: JSON-RPC wants `"id": null` when the id is unknown, which rmcp's
        // message type leaves out.
        self.write.queue_detached(&serde_json::json!({"jsonrpc": "2.0", "id": id, "error": error}));
    }
}

impl<R> Transport<RoleServer> for LineTransport<R>
where
    R: AsyncBufRead + Unpin + Send,
{
    type Error = std::io::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleServer>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        self.write.write(line(&item))
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
                    self.write_error(None, ErrorData::new(ErrorCode::INVALID_REQUEST, message, None));
                    continue;
                }
                Err(e) => {
                    if e.kind() != std::io::ErrorKind::UnexpectedEof {
                        tracing::error!("reading stdin: {e}");
                    }
                    self.ended.get_or_insert_with(std::time::Instant::now);
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
            // A well-formed message is parsed once, straight into rmcp's types; anything else
            // goes through a `Value` to say precisely what is wrong with it.
            if let Ok(message) = serde_json::from_slice::<RxJsonRpcMessage<RoleServer>>(text) {
                match self.route(message) {
                    Some(message) => return Some(message),
                    None => continue,
                }
            }
            let value: Value = match serde_json::from_slice(text) {
                Ok(v) => v,
                Err(e) => {
                    tracing::debug!("unparsable message: {e}");
                    self.write_error(None, ErrorData::new(ErrorCode::PARSE_ERROR, format!("Parse error: {e}"), None));
                    continue;
                }
            };
            // A notification (a method and no id) is never answered, even when malformed.
            let has_method = value.get("method").is_some_and(Value::is_string);
            let is_notification = has_method && value.get("id").is_none();
            let id: Option<RequestId> = value.get("id").and_then(|id| serde_json::from_value(id.clone()).ok());
            match serde_json::from_value::<RxJsonRpcMessage<RoleServer>>(value) {
                Ok(message) => match self.route(message) {
                    Some(message) => return Some(message),
                    None => continue,
                },
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
                    self.write_error(id, error);
                }
            }
        }
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        if let Some(direct) = &self.direct {
            direct.finish(self.ended.unwrap_or_else(std::time::Instant::now)).await;
        }
        // Everything queued before is written once this is: the queue is in order.
        self.write.queue(Ok(Vec::new())).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;
    use tokio::io::BufReader;

    /// rmcp drops `receive` when another event wins its `select!`. An error answer queued by
    /// a dropped `receive` must still be written, whole, even if the output was not ready.
    #[tokio::test]
    async fn an_error_answer_outlives_the_receive_that_queued_it() {
        let input: &[u8] = b"{\"hello\":\"world\"}\nnot json\n";
        // A pipe that holds 8 bytes: the answer cannot be written in one go.
        let (out, answers) = tokio::io::duplex(8);
        let mut transport = LineTransport::new(input, out, Scheduler::new(10));
        // Polled once, then dropped (the timeout polls the future before its deadline).
        let _ = tokio::time::timeout(Duration::ZERO, transport.receive()).await;

        let mut answers = BufReader::new(answers).lines();
        let mut next = async || {
            let line = tokio::time::timeout(Duration::from_secs(60), answers.next_line()).await;
            let line = line.expect("an answer came").expect("readable").expect("a line");
            serde_json::from_str::<Value>(&line).expect("JSON")
        };
        let first = next().await;
        assert_eq!(first["error"]["code"], -32600, "{first}");
        assert_eq!(first["id"], Value::Null, "{first}");
        // And a later `receive` goes on from where the dropped one stopped.
        assert!(transport.receive().await.is_none(), "the input is used up");
        let second = next().await;
        assert_eq!(second["error"]["code"], -32700, "{second}");
    }
}

#[cfg(test)]
mod cancelled_writes {
    use super::*;
    use std::time::Duration;
    use tokio::io::{AsyncBufReadExt, BufReader};

    /// rmcp may drop a send partway (draining at shutdown timed out). The line it was writing
    /// must still come out whole, before the next line.
    #[tokio::test]
    async fn an_answer_dropped_partway_is_finished_before_the_next_line() {
        // A pipe that holds 8 bytes: the first answer cannot be written in one go.
        let (out, answers) = tokio::io::duplex(8);
        let writer = Writer::spawn(out);
        let first = line(&serde_json::json!({"jsonrpc": "2.0", "id": 1, "result": {"text": "first answer"}}));
        // Polled once (it writes 8 bytes), then dropped.
        let _ = tokio::time::timeout(Duration::ZERO, writer.write(first)).await;
        let second = line(&serde_json::json!({"jsonrpc": "2.0", "id": 2, "result": {}}));
        let second = tokio::spawn(writer.write(second));

        let mut answers = BufReader::new(answers).lines();
        for id in [1, 2] {
            let line = tokio::time::timeout(Duration::from_secs(60), answers.next_line()).await;
            let line = line.expect("an answer came").expect("readable").expect("a line");
            let answer: Value = serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}: {line:?}"));
            assert_eq!(answer["id"], id, "{answer}");
        }
        second.await.expect("joined").expect("written");
    }
}

mod direct;

#[cfg(test)]
mod props;
