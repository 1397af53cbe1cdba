//! `tools/call` requests answered by the stdio transport itself, once the session is open:
//! the call runs on a task of its own and its answer is written straight to stdout, without
//! the trip through rmcp's service loop (its handler task, its channel back, a send task, and
//! the loop woken for each), which cost more per call than the pipeline's own work for a tool
//! that does little.
//!
//! Nothing else changes: the call goes through [`Shared::call_from`], as rmcp's handler does,
//! with the same client for its questions, progress and log messages (those are requests and
//! notifications of rmcp's, and their answers come back through rmcp's loop as before). Left to
//! rmcp: everything before the session is open, every other method, and a call whose request
//! belongs to a later revision of the protocol. A `notifications/cancelled` for a call taken
//! here cancels it, and its answer is never sent (as rmcp drops a cancelled call's). At the end
//! of input, calls still running get the time rmcp gives its own to answer, then are cancelled.

use super::{Writer, line};
use crate::commands::mcp::fast::of_a_newer_revision;
use crate::commands::mcp::server::{SessionCore, Shared, call_key};
use futures::FutureExt as _;
use rmcp::RoleServer;
use rmcp::model::{
    ClientNotification, ClientRequest, ErrorData, GetMeta as _, JsonRpcMessage, ServerJsonRpcMessage, ServerResult,
};
use rmcp::service::RxJsonRpcMessage;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio_util::task::TaskTracker;
use toolhost::Ticket;

/// How long calls still running at the end of input have to answer (rmcp's own drain).
const DRAIN: Duration = Duration::from_secs(5);
/// How long cancelled calls then have to finish (their audit lines).
const AFTER_CANCEL: Duration = Duration::from_secs(2);

/// The session whose calls the transport answers, and those it is running.
pub struct Direct {
    shared: Arc<Shared>,
    core: Arc<SessionCore>,
    running: TaskTracker,
}

impl Direct {
    pub fn new(shared: Arc<Shared>, core: Arc<SessionCore>) -> Self {
        Direct { shared, core, running: TaskTracker::new() }
    }

    /// Take `message` if it is a call to answer here (started, with `ticket()` as its place in
    /// the queue), else give it back for rmcp. A cancellation of one of these calls cancels
    /// it, and goes on to rmcp too (which knows nothing of it, and drops it).
    pub fn take(
        &self,
        message: RxJsonRpcMessage<RoleServer>,
        write: &Writer,
        ticket: impl FnOnce() -> Ticket,
    ) -> Option<RxJsonRpcMessage<RoleServer>> {
        let Some(peer) = self.core.peer() else { return Some(message) };
        match message {
            JsonRpcMessage::Request(request) => {
                let ClientRequest::CallToolRequest(call) = &request.request else {
                    return Some(JsonRpcMessage::Request(request));
                };
                // rmcp's parser keeps `_meta` in the request's extensions.
                let meta = request.request.get_meta();
                let params = &call.params;
                let newer = params.input_responses.is_some()
                    || params.request_state.is_some()
                    || params.meta.is_some()
                    || of_a_newer_revision(meta.0.0.keys().map(String::as_str));
                if newer {
                    return Some(JsonRpcMessage::Request(request));
                }
                let progress = meta.get_progress_token();
                let ClientRequest::CallToolRequest(call) = request.request else { unreachable!("matched above") };
                let (id, params) = (request.id, call.params);
                let key = call_key(&id);
                tracing::debug!("tools/call {key} is answered by the stdio transport");
                let (serial, cancel) = self.core.start(&key);
                let (shared, core, peer, write, ticket) =
                    (self.shared.clone(), self.core.clone(), peer.clone(), write.clone(), ticket());
                self.running.spawn(async move {
                    let call = shared.call_from(&core, &peer, params, progress, Some(ticket), cancel.clone());
                    // A fault in the host's own code still gets an answer (on rmcp's path a
                    // panicking handler's task just ends, and the client waits for ever).
                    let result = std::panic::AssertUnwindSafe(call).catch_unwind().await.unwrap_or_else(|_| {
                        tracing::error!("tools/call {key} panicked");
                        let message = "toolhost failed while running this call (host fault)";
                        Err(ErrorData::internal_error(message, None))
                    });
                    core.end(&key, serial);
                    if cancel.is_cancelled() {
                        return;
                    }
                    let answer = match result {
                        Ok(result) => ServerJsonRpcMessage::response(ServerResult::CallToolResult(result), id),
                        Err(error) => ServerJsonRpcMessage::error(error, Some(id)),
                    };
                    if let Err(e) = write.write(line(&answer)).await {
                        tracing::warn!("cannot write an answer: {e}");
                    }
                });
                None
            }
            JsonRpcMessage::Notification(notification) => {
                if let ClientNotification::CancelledNotification(cancelled) = &notification.notification
                    && let Some(id) = &cancelled.params.request_id
                {
                    self.core.cancel(&call_key(id));
                }
                Some(JsonRpcMessage::Notification(notification))
            }
            other => Some(other),
        }
    }

    /// The input ended at `ended`: let the calls still running answer until [`DRAIN`] after
    /// it, then cancel the rest and give them [`AFTER_CANCEL`] to finish.
    pub async fn finish(&self, ended: Instant) {
        self.running.close();
        let deadline = tokio::time::Instant::from_std(ended + DRAIN);
        if tokio::time::timeout_at(deadline, self.running.wait()).await.is_ok() {
            return;
        }
        tracing::warn!("calls still running {DRAIN:?} after the end of input are cancelled");
        self.core.cancel_all();
        if tokio::time::timeout(AFTER_CANCEL, self.running.wait()).await.is_err() {
            tracing::warn!("cancelled calls did not finish within {AFTER_CANCEL:?}");
        }
    }
}
