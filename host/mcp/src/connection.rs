//! One connection to a server: its calls (progress tokens named, cancelled when given up), its
//! tool list read in bounded pages, and its answers as the pool takes them.

use crate::calls::{Calls, CancelOnDrop, InFlight};
use crate::handler::Client;
use crate::supervise::MAX_RESTARTS;
use rmcp::model::{CallToolRequestParams, ClientRequest, ContentBlock, NumberOrString, ServerResult};
use rmcp::service::{PeerRequestOptions, RoleClient, RunningService};
use serde_json::Value;
use std::sync::Arc;
use toolhost::{Caller, RemoteBlock, RemoteError, RemoteOutput, RemoteServer, RemoteTool};

/// A connected server.
pub(crate) struct Server {
    pub(crate) name: String,
    pub(crate) service: RunningService<RoleClient, Client>,
    /// A stdio server's last words on stderr.
    pub(crate) stderr: Option<Tail>,
    /// Its calls in flight, for what it sends while they run.
    pub(crate) calls: Arc<std::sync::Mutex<Calls>>,
}

/// The last [`STDERR_TAIL_CHARS`] characters a stdio server wrote on stderr.
pub(crate) type Tail = Arc<std::sync::Mutex<String>>;

impl Server {
    /// Why the connection is gone: it stopped, with what it said last on stderr.
    pub(crate) fn stopped(&self) -> String {
        let said = self.stderr.as_ref().map(|t| t.lock().unwrap_or_else(|e| e.into_inner()).trim().to_string());
        match said {
            Some(said) if !said.is_empty() => format!("MCP server {} stopped; it said on stderr: {said}", self.name),
            _ => format!("MCP server {} stopped", self.name),
        }
    }
}

#[async_trait::async_trait]
impl RemoteServer for Server {
    async fn call(&self, tool: &str, input: Value) -> Result<RemoteOutput, RemoteError> {
        self.make_call(tool, input, None).await
    }

    async fn call_for(&self, tool: &str, input: Value, caller: Arc<Caller>) -> Result<RemoteOutput, RemoteError> {
        self.make_call(tool, input, Some(caller)).await
    }

    async fn list(&self) -> Result<Vec<RemoteTool>, RemoteError> {
        listed(&self.name, &self.service).await.map_err(RemoteError::NoAnswer)
    }
}

impl Server {
    /// A call of `tool`; with a caller, what the server sends meanwhile reaches it ([`Calls`]).
    async fn make_call(
        &self,
        tool: &str,
        input: Value,
        caller: Option<Arc<Caller>>,
    ) -> Result<RemoteOutput, RemoteError> {
        let Value::Object(arguments) = input else { return Err(RemoteError::InputNotAnObject) };
        let params = CallToolRequestParams::new(tool.to_string()).with_arguments(arguments);
        let failed = |e: rmcp::ServiceError| match self.service.is_transport_closed() {
            true => RemoteError::NotConnected(format!(
                "{e}: {} (toolhost starts it again at its next call, at most {MAX_RESTARTS} times)",
                self.stopped()
            )),
            false => RemoteError::NoAnswer(format!("{e} (is MCP server {} still running?)", self.name)),
        };
        // Sent by hand rather than with `call_tool`, for the progress token rmcp puts in the
        // request (its own, whatever the caller set), which names the call in the server's
        // progress notifications. (`call_tool` also drives the input rounds of protocol
        // 2026-07-28, which toolhost does not speak: it offers 2025-11-25.)
        let request = ClientRequest::CallToolRequest(rmcp::model::CallToolRequest::new(params));
        let peer = self.service.peer();
        let handle = peer.send_request_with_option(request, PeerRequestOptions::no_options()).await.map_err(failed)?;
        let _in_flight = match (&handle.progress_token.0, caller) {
            (NumberOrString::Number(token), Some(caller)) => Some(InFlight::start(&self.calls, *token, caller)),
            _ => None,
        };
        let mut abandoned = CancelOnDrop { peer: peer.clone(), id: Some(handle.id.clone()) };
        let answer = handle.await_response().await;
        abandoned.id = None;
        let result = match answer.map_err(failed)? {
            ServerResult::CallToolResult(result) => result,
            // `{}`: a result without `content` (rmcp's `call_tool` takes it as empty too).
            ServerResult::EmptyResult(_) => return Ok(RemoteOutput::new(Vec::new(), false)),
            _ => {
                let what = format!("MCP server {} answered tools/call with something else than a result", self.name);
                return Err(RemoteError::BadAnswer(what));
            }
        };
        let mut content: Vec<RemoteBlock> = result.content.iter().map(block).collect();
        if content.is_empty()
            && let Some(structured) = &result.structured_content
        {
            content.push(RemoteBlock::Text(structured.to_string()));
        }
        Ok(RemoteOutput::new(content, result.is_error == Some(true)))
    }
}

/// How many pages of `tools/list` are read. rmcp's `list_all_tools` follows `nextCursor` for
/// as long as a server sends one; a hostile server could send one for ever (each page up to
/// rmcp's 16 MiB), so the pages are read here, and reading stops at this many, at a cursor seen
/// before, or once more tools came than the pool keeps of one server.
const MAX_LIST_PAGES: usize = 100;

/// The server's tools, as the pool takes them.
pub(crate) async fn listed(
    name: &str,
    service: &RunningService<RoleClient, Client>,
) -> Result<Vec<RemoteTool>, String> {
    let mut listed = Vec::new();
    let mut cursor = None;
    let mut cursors = std::collections::HashSet::new();
    for page in 1.. {
        let params = rmcp::model::PaginatedRequestParams::default().with_cursor(cursor.take());
        let answer = service.list_tools(Some(params)).await.map_err(|e| format!("tools/list failed: {e}"))?;
        listed.extend(answer.tools);
        let Some(next) = answer.next_cursor else { break };
        let stop = if listed.len() > toolhost::MAX_MCP_TOOLS_PER_SERVER {
            "more tools than are kept"
        } else if page == MAX_LIST_PAGES {
            "the most pages read"
        } else if !cursors.insert(next.clone()) {
            "a cursor it sent before"
        } else {
            cursor = Some(next);
            continue;
        };
        tracing::warn!(
            "MCP server {}: tools/list not read to its end ({stop}, after {page} pages and {} tools)",
            toolhost::printable(name),
            listed.len()
        );
        break;
    }
    Ok(listed
        .into_iter()
        .map(|t| {
            let read_only = t.annotations.as_ref().and_then(|a| a.read_only_hint).unwrap_or(false);
            let description = t.description.as_deref().unwrap_or_default().to_string();
            RemoteTool::new(t.name.to_string(), description, Value::Object((*t.input_schema).clone()), read_only)
        })
        .collect())
}

/// One block of a server's answer for the model: text and images as they are, the rest as
/// their JSON (what the model reads of them in Claude Code too).
fn block(b: &ContentBlock) -> RemoteBlock {
    use base64::Engine as _;
    match b {
        ContentBlock::Text(t) => RemoteBlock::Text(t.text.clone()),
        ContentBlock::Image(i) => match base64::engine::general_purpose::STANDARD.decode(&i.data) {
            Ok(data) => RemoteBlock::Image { media_type: i.mime_type.clone(), data },
            Err(e) => RemoteBlock::Text(format!("(an image the server sent is not base64: {e})")),
        },
        other => RemoteBlock::Text(serde_json::to_string(other).unwrap_or_default()),
    }
}
