//! MCP servers as tool sources: each server of `[mcp_servers]` (or the workspace's trusted
//! `.mcp.json`) is started (stdio) with rmcp's client, its `tools/list` read, and its tools
//! handed to the runtime as `mcp__NAME__TOOL`, where every call goes through the same pipeline
//! as a component's. A server that cannot be started or listed is reported, and the others
//! still load; a server that dies later answers each call with an error result.
//!
//! A `url` server is reached over streamable HTTP (rmcp's reqwest client, TLS by rustls with
//! the ring provider and the system's roots).

use rmcp::ClientHandler;
#[allow(deprecated, reason = "logging leaves MCP after 2025-11-25 (SEP-2577); servers of that version still log")]
use rmcp::model::LoggingMessageNotificationParam;
use rmcp::model::{
    CallToolRequestParams, ClientCapabilities, ClientConfig, ContentBlock, Implementation, ProtocolVersion,
};
use rmcp::model::{CancelledNotificationParam, ClientRequest, NumberOrString, ProgressNotificationParam, ServerResult};
use rmcp::model::{ElicitRequestParams, ElicitResult, ElicitationAction};
use rmcp::service::PeerRequestOptions;
use rmcp::service::{NotificationContext, RequestContext, RoleClient, RunningService, ServiceExt as _};
use rmcp::transport::TokioChildProcess;
use serde_json::Value;
use std::sync::Arc;
use std::time::Duration;
use toolhost::pins::{Clearance, Cleared};
use toolhost::{Answer, Caller, PermissionDecider, RemoteBlock, RemoteOutput, RemoteServer, RemoteTool, Runtime};
use toolhost_policy::launch::{self, HttpSpec, LaunchError, LaunchSpec, ServerLaunch};

/// How long a server may take to start and list its tools.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(30);

/// A connected server.
struct Server {
    name: String,
    service: RunningService<RoleClient, Client>,
    /// A stdio server's last words on stderr.
    stderr: Option<Tail>,
    /// Its calls in flight, for what it sends while they run.
    calls: Arc<std::sync::Mutex<Calls>>,
}

/// A server's calls in flight, each with its [`Caller`] and the progress token sent with it.
/// A progress notification names its call by the token. A question or a log message names no
/// call (MCP ties them to a request only on an HTTP stream, which rmcp's client does not
/// expose): it goes to the callers only when every call in flight has the same asker (one
/// person, or one client of `toolhost mcp`), so no client sees another's, and a question
/// asked while none of the server's tools is being called (at start, between calls) could pose
/// as anything and is not asked at all.
#[derive(Default)]
struct Calls {
    running: Vec<(i64, Arc<Caller>)>,
}

impl Calls {
    /// The caller a question or log message that names no call is for, or why there is none.
    fn only_asker(&self) -> Result<Arc<Caller>, &'static str> {
        let Some((_, first)) = self.running.first() else { return Err("none of its tools is being called") };
        if self.running.iter().all(|(_, c)| c.same_asker(first)) {
            Ok(first.clone())
        } else {
            Err("calls from more than one client are running, and whose it is cannot be told")
        }
    }

    fn by_token(&self, token: i64) -> Option<Arc<Caller>> {
        self.running.iter().find(|(t, _)| *t == token).map(|(_, c)| c.clone())
    }
}

/// One call in flight, in [`Calls`] until it ends (or is dropped at its timeout).
struct InFlight {
    calls: Arc<std::sync::Mutex<Calls>>,
    token: i64,
}

impl InFlight {
    /// The call whose request carries progress token `token`.
    fn start(calls: &Arc<std::sync::Mutex<Calls>>, token: i64, caller: Arc<Caller>) -> InFlight {
        calls.lock().unwrap_or_else(|e| e.into_inner()).running.push((token, caller));
        InFlight { calls: calls.clone(), token }
    }
}

/// Tells the server a call was given up (its time limit, or the caller went away) when the
/// wait for its answer is dropped before the answer came, as rmcp's `call_tool` does.
struct CancelOnDrop {
    peer: rmcp::Peer<RoleClient>,
    id: Option<rmcp::model::RequestId>,
}

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        let (Some(id), Ok(runtime)) = (self.id.take(), tokio::runtime::Handle::try_current()) else { return };
        let peer = self.peer.clone();
        runtime.spawn(async move {
            let reason = "the call was given up (its time limit, or the caller went away)".to_string();
            let _ = peer.notify_cancelled(CancelledNotificationParam::new(Some(id), Some(reason))).await;
        });
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        self.calls.lock().unwrap_or_else(|e| e.into_inner()).running.retain(|(t, _)| *t != self.token);
    }
}

/// The last [`STDERR_TAIL_CHARS`] characters a stdio server wrote on stderr.
type Tail = Arc<std::sync::Mutex<String>>;

impl Server {
    /// Why the connection is gone: it stopped, with what it said last on stderr.
    fn stopped(&self) -> String {
        let said = self.stderr.as_ref().map(|t| t.lock().unwrap_or_else(|e| e.into_inner()).trim().to_string());
        match said {
            Some(said) if !said.is_empty() => format!("MCP server {} stopped; it said on stderr: {said}", self.name),
            _ => format!("MCP server {} stopped", self.name),
        }
    }
}

/// toolhost's side of one connection: who it says it is, where the server's log messages go,
/// and who answers its form questions (`elicitation/create`): the person at the terminal when
/// there is one (then the capability is declared), else nobody and they are declined.
struct Client {
    server: String,
    /// Someone may answer form questions: declared to the server.
    may_ask: bool,
    calls: Arc<std::sync::Mutex<Calls>>,
}

/// Set by `toolhost mcp` before the servers start: each call's own client may answer a
/// server's questions, so form elicitation is declared although nobody is at the terminal.
pub static CALLERS_MAY_ANSWER: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Set when a server says its tool list changed (`notifications/tools/list_changed`): `toolhost
/// mcp` then reads the lists again and tells its own clients (`toolhost agent` reads them
/// before every turn anyway).
pub static LISTS_CHANGED: tokio::sync::Notify = tokio::sync::Notify::const_new();

/// The longest log message of a server that is shown (the rest is cut).
const MAX_LOG_CHARS: usize = 2000;

impl ClientHandler for Client {
    fn get_info(&self) -> ClientConfig {
        // Form elicitation only when someone can answer.
        let capabilities = match self.may_ask {
            true => serde_json::from_value(serde_json::json!({"elicitation": {"form": {}}})).unwrap_or_default(),
            false => ClientCapabilities::default(),
        };
        // The newest version that still has the `initialize` handshake rmcp's client performs.
        ClientConfig::new(
            capabilities,
            Implementation::new("toolhost", env!("CARGO_PKG_VERSION")).with_title("toolhost"),
        )
        .with_protocol_version(ProtocolVersion::LATEST_WITH_INITIALIZE)
    }

    /// A form question of the server, put to whoever answers the call it belongs to
    /// ([`Calls::only_asker`]: the person at the terminal, or the client of `toolhost mcp`
    /// whose call it is) as that tool's question (`Tool mcp__SERVER__TOOL asks: …`), checked
    /// and counted like a component's (`toolhost::Caller::elicit`). A URL question, a form
    /// toolhost refuses, or nobody to ask: declined.
    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, rmcp::ErrorData> {
        let decline = Ok(ElicitResult::new(ElicitationAction::Decline));
        // Asked although the capability was not declared: nobody to ask.
        let (true, ElicitRequestParams::FormElicitationParams { message, requested_schema, .. }) =
            (self.may_ask, request)
        else {
            return decline;
        };
        let caller = self.calls.lock().unwrap_or_else(|e| e.into_inner()).only_asker();
        let caller = match caller {
            Ok(caller) => caller,
            Err(why) => {
                tracing::warn!("MCP server {}: its question is not asked: {why}", self.server);
                return decline;
            }
        };
        let form = serde_json::to_string(&requested_schema).unwrap_or_default();
        Ok(match caller.elicit(message, &form).await {
            Ok(Answer::Accept(values)) => {
                ElicitResult::new(ElicitationAction::Accept).with_content(Value::Object(values))
            }
            Ok(Answer::Decline) => ElicitResult::new(ElicitationAction::Decline),
            Ok(Answer::Cancel) => ElicitResult::new(ElicitationAction::Cancel),
            Err(why) => {
                tracing::warn!("MCP server {}: its question is not asked: {why}", self.server);
                return decline;
            }
        })
    }

    /// A progress notification: to the call whose token it names (`Caller::progress`: the
    /// events, `-v`, and under `toolhost mcp` the call's own client), bounded like a tool's.
    async fn on_progress(&self, params: ProgressNotificationParam, _: NotificationContext<RoleClient>) {
        let caller = {
            let calls = self.calls.lock().unwrap_or_else(|e| e.into_inner());
            match params.progress_token.0 {
                NumberOrString::Number(token) => calls.by_token(token),
                NumberOrString::String(_) => None,
            }
        };
        let Some(caller) = caller else { return };
        let text = match (params.message, params.total) {
            (Some(message), _) => message,
            (None, Some(total)) => format!("{} of {total}", params.progress),
            (None, None) => params.progress.to_string(),
        };
        caller.progress(&text);
    }

    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        tracing::debug!(target: "toolhost::mcp_server", "MCP server {}: its tool list changed", self.server);
        LISTS_CHANGED.notify_one();
    }

    #[allow(deprecated, reason = "logging leaves MCP after 2025-11-25 (SEP-2577); servers of that version still log")]
    async fn on_logging_message(&self, params: LoggingMessageNotificationParam, _: NotificationContext<RoleClient>) {
        let text = match &params.data {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        let text: String = text.chars().take(MAX_LOG_CHARS).collect();
        let logger = params.logger.as_deref().unwrap_or("-");
        tracing::info!(target: "toolhost::mcp_server", "MCP server {} [{:?} {logger}]: {text}", self.server, params.level);
        // To the running call too, when it cannot be another client's.
        if let Ok(caller) = self.calls.lock().unwrap_or_else(|e| e.into_inner()).only_asker() {
            caller.log(crate::commands::mcp::level::from_mcp(params.level), &text);
        }
    }
}

#[async_trait::async_trait]
impl RemoteServer for Server {
    async fn call(&self, tool: &str, input: Value) -> Result<RemoteOutput, String> {
        self.make_call(tool, input, None).await
    }

    async fn call_for(&self, tool: &str, input: Value, caller: Arc<Caller>) -> Result<RemoteOutput, String> {
        self.make_call(tool, input, Some(caller)).await
    }

    async fn list(&self) -> Result<Vec<RemoteTool>, String> {
        listed(&self.name, &self.service).await
    }
}

impl Server {
    /// A call of `tool`; with a caller, what the server sends meanwhile reaches it ([`Calls`]).
    async fn make_call(&self, tool: &str, input: Value, caller: Option<Arc<Caller>>) -> Result<RemoteOutput, String> {
        let Value::Object(arguments) = input else { return Err("the input is not an object".to_string()) };
        let params = CallToolRequestParams::new(tool.to_string()).with_arguments(arguments);
        let failed = |e: rmcp::ServiceError| match self.service.is_transport_closed() {
            true => format!(
                "{e}: {} (toolhost starts it again at its next call, at most {MAX_RESTARTS} times)",
                self.stopped()
            ),
            false => format!("{e} (is MCP server {} still running?)", self.name),
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
            _ => return Err(format!("MCP server {} answered tools/call with something else than a result", self.name)),
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
async fn listed(name: &str, service: &RunningService<RoleClient, Client>) -> Result<Vec<RemoteTool>, String> {
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
            crate::setup::printable(name),
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

/// Start every server of the config and put its tools in the pool. Returns what failed, each
/// already said on stderr. Every server is [`Supervised`]: one that failed to start is
/// registered with no tools and tried again at every refresh of the lists (before each agent
/// turn), and one that stops is started again at its next call or refresh.
///
/// Only servers the pin check cleared start ([`Clearance`]). One that is toolhost itself, or
/// any stdio server when this toolhost runs under another, is not started and says why on
/// stderr (not a load error: its tools are this process's own).
pub async fn connect_all(runtime: &Runtime, cleared: Clearance) -> Vec<String> {
    let mut errors = Vec::new();
    let person = runtime.decider();
    for (name, launch) in cleared.servers() {
        let launch = match launch {
            Ok(launch) => launch.clone(),
            Err(e @ (LaunchError::Toolhost(_) | LaunchError::Nested(_))) => {
                eprintln!("toolhost: MCP server {} not started: {e}", crate::setup::printable(name));
                continue;
            }
            Err(e) => {
                errors.push(format!("MCP server {name}: {e}"));
                continue;
            }
        };
        let name = name.to_string();
        let supervised = Supervised {
            name: name.clone(),
            launch,
            person: person.clone(),
            state: tokio::sync::Mutex::new(State { server: None, why: String::new(), stops: 0 }),
        };
        let tools = match supervised.running(CONNECT_TIMEOUT).await {
            Ok((_, fresh)) => fresh.unwrap_or_default(),
            Err(why) => {
                errors.push(format!("MCP server {name}: {why}"));
                Vec::new()
            }
        };
        for e in runtime.set_remote_tools(&name, tools, Arc::new(supervised)) {
            errors.push(toolhost::error_text(&e));
        }
    }
    for e in &errors {
        eprintln!("warning: {}", crate::setup::printable_lines(e));
    }
    errors
}

/// How long a server that failed to start, or stopped, gets at each later try.
const RETRY_TIMEOUT: Duration = Duration::from_secs(10);

/// How many times a server that stopped is started again; then it stays stopped (a server
/// that crashes at every call would otherwise be restarted for ever).
const MAX_RESTARTS: u32 = 5;

/// One configured server and its connection, started when needed: at first, again at each
/// refresh while it fails to start, and again after it stops (at most [`MAX_RESTARTS`] times).
/// A call that was running when it stopped gets an error result and is not repeated: it may
/// have had effects.
struct Supervised {
    name: String,
    /// The server as the pin check cleared it: every start runs exactly this.
    launch: Cleared<ServerLaunch>,
    person: Option<Arc<dyn PermissionDecider>>,
    state: tokio::sync::Mutex<State>,
}

struct State {
    /// The connection, while there is one.
    server: Option<Arc<Server>>,
    /// Why there is none: the last start's failure, or how the server stopped.
    why: String,
    /// How many times it stopped after it had started.
    stops: u32,
}

impl Supervised {
    /// The running connection, for a call.
    async fn connected(&self) -> Result<Arc<Server>, String> {
        let (server, _) = self
            .running(RETRY_TIMEOUT)
            .await
            .map_err(|why| format!("MCP server {} is not connected: {why}", self.name))?;
        Ok(server)
    }

    /// The running connection, and the tools it listed if it was started by this call. Started
    /// (again) if there is none or the server stopped, within `timeout`.
    async fn running(&self, timeout: Duration) -> Result<(Arc<Server>, Option<Vec<RemoteTool>>), String> {
        let mut state = self.state.lock().await;
        if let Some(server) = &state.server {
            if !server.service.is_transport_closed() {
                return Ok((server.clone(), None));
            }
            state.why = server.stopped();
            state.server = None;
            state.stops += 1;
            tracing::warn!("{}", state.why);
        }
        if state.stops > MAX_RESTARTS {
            return Err(format!("{}; it stopped {} times and is not started again", state.why, state.stops));
        }
        let tried = tokio::time::timeout(timeout, connect(&self.name, &self.launch, self.person.clone())).await;
        let why = match tried {
            Ok(Ok((tools, server))) => {
                if state.stops > 0 {
                    eprintln!("toolhost: MCP server {} started again ({} of {MAX_RESTARTS})", self.name, state.stops);
                }
                state.server = Some(server.clone());
                return Ok((server, Some(tools)));
            }
            Ok(Err(why)) => why,
            Err(_) => format!("did not start and list its tools within {timeout:?}"),
        };
        state.why = why.clone();
        Err(why)
    }
}

#[async_trait::async_trait]
impl RemoteServer for Supervised {
    async fn call(&self, tool: &str, input: Value) -> Result<RemoteOutput, String> {
        self.connected().await?.call(tool, input).await
    }

    async fn call_for(&self, tool: &str, input: Value, caller: Arc<Caller>) -> Result<RemoteOutput, String> {
        self.connected().await?.call_for(tool, input, caller).await
    }

    async fn list(&self) -> Result<Vec<RemoteTool>, String> {
        let (server, fresh) = self.running(RETRY_TIMEOUT).await.map_err(|why| format!("not connected: {why}"))?;
        match fresh {
            Some(tools) => Ok(tools),
            // Bounded: the lists are read again before every agent turn, and a server that
            // stops answering must not stall the run.
            None => tokio::time::timeout(RETRY_TIMEOUT, server.list())
                .await
                .unwrap_or_else(|_| Err(format!("tools/list got no answer within {RETRY_TIMEOUT:?}"))),
        }
    }
}

async fn connect(
    name: &str,
    launch: &Cleared<ServerLaunch>,
    person: Option<Arc<dyn PermissionDecider>>,
) -> Result<(Vec<RemoteTool>, Arc<Server>), String> {
    let calls = Arc::new(std::sync::Mutex::new(Calls::default()));
    let may_ask = person.is_some() || CALLERS_MAY_ANSWER.load(std::sync::atomic::Ordering::Relaxed);
    let client = Client { server: name.to_string(), may_ask, calls: calls.clone() };
    let (service, stderr) = match &**launch {
        ServerLaunch::Stdio(spec) => {
            let (service, tail) = start(client, spec).await?;
            (service, Some(tail))
        }
        ServerLaunch::Http(spec) => (reach(client, spec).await?, None),
    };
    let tools = listed(name, &service).await?;
    Ok((tools, Arc::new(Server { name: name.to_string(), service, stderr, calls })))
}

/// A stdio server: its process, in the workspace, as Claude Code starts it, from the
/// description the pin check cleared (argv and environment already expanded).
async fn start(client: Client, spec: &LaunchSpec) -> Result<(RunningService<RoleClient, Client>, Tail), String> {
    let mut cmd = tokio::process::Command::new(&spec.program);
    cmd.args(&spec.args)
        // Its directories are pinned whole: no `__pycache__` files in them (each would be a new
        // file to confirm), unless its own env says otherwise.
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .envs(&spec.env)
        .current_dir(&spec.cwd)
        // The MCP server's own bearer token is not another server's business.
        .env_remove(crate::commands::mcp::TOKEN_ENV)
        // A toolhost it starts, however it is named, knows it runs under one.
        .env(launch::DEPTH_ENV, launch::depth().saturating_add(1).to_string());
    let (transport, stderr) = TokioChildProcess::builder(cmd)
        .stderr(std::process::Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot start {}: {e}", spec.shown()))?;
    let tail = Arc::new(std::sync::Mutex::new(String::new()));
    let reader = stderr.map(|stderr| tokio::spawn(read_stderr(client.server.clone(), stderr, tail.clone())));
    match client.serve(transport).await {
        Ok(service) => Ok((service, tail)),
        Err(e) => {
            // What the program said before it failed usually says why: wait a moment for it.
            if let Some(reader) = reader {
                let _ = tokio::time::timeout(Duration::from_millis(500), reader).await;
            }
            let said = tail.lock().unwrap_or_else(|e| e.into_inner()).trim().to_string();
            let said = if said.is_empty() { String::new() } else { format!("; it said on stderr: {said}") };
            Err(format!("the MCP handshake failed: {e}{said}"))
        }
    }
}

/// The most of a stdio server's stderr kept to explain a failed start.
const STDERR_TAIL_CHARS: usize = 2000;

/// A stdio server's stderr, line by line, to the log (`TOOLHOST_LOG=toolhost::mcp_server=debug`),
/// its last [`STDERR_TAIL_CHARS`] characters kept in `tail`; until the program closes it. A
/// line is kept to its first [`STDERR_TAIL_CHARS`] characters as it is read: a server that
/// writes without newlines costs no more memory than that.
async fn read_stderr(server: String, stderr: tokio::process::ChildStderr, tail: Tail) {
    use tokio::io::AsyncBufReadExt as _;
    let mut reader = tokio::io::BufReader::new(stderr);
    let mut line: Vec<u8> = Vec::new();
    let keep = |line: &[u8]| {
        // Made printable as it is kept: the tail reaches the terminal in warnings and errors.
        let line: String = String::from_utf8_lossy(line).chars().take(STDERR_TAIL_CHARS).collect();
        let line = crate::setup::printable(&line);
        tracing::debug!(target: "toolhost::mcp_server", "MCP server {server} (stderr): {line}");
        let mut tail = tail.lock().unwrap_or_else(|e| e.into_inner());
        tail.push_str(&line);
        tail.push('\n');
        let excess = tail.chars().count().saturating_sub(STDERR_TAIL_CHARS);
        if excess > 0 {
            let cut = tail.char_indices().nth(excess).map_or(tail.len(), |(i, _)| i);
            tail.drain(..cut);
        }
    };
    loop {
        let buf = match reader.fill_buf().await {
            Ok(buf) if !buf.is_empty() => buf,
            _ => break,
        };
        let end = buf.iter().position(|&b| b == b'\n');
        let chunk = &buf[..end.unwrap_or(buf.len())];
        // Four bytes per character at most: enough bytes for the characters kept.
        let room = (STDERR_TAIL_CHARS * 4).saturating_sub(line.len());
        line.extend_from_slice(&chunk[..chunk.len().min(room)]);
        let used = end.map_or(buf.len(), |i| i + 1);
        reader.consume(used);
        if end.is_some() {
            keep(&line);
            line.clear();
        }
    }
    if !line.is_empty() {
        keep(&line);
    }
}

/// A streamable HTTP server: `headers` (expanded) on every request, and `Authorization:
/// Bearer …` from `bearer_token_env`.
async fn reach(client: Client, spec: &HttpSpec) -> Result<RunningService<RoleClient, Client>, String> {
    use rmcp::transport::StreamableHttpClientTransport;
    use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
    let url = &spec.url;
    let mut headers = std::collections::HashMap::new();
    for (key, value) in &spec.headers {
        let name = http::HeaderName::from_bytes(key.as_bytes()).map_err(|e| format!("header {key:?}: {e}"))?;
        let value = http::HeaderValue::from_str(value).map_err(|e| format!("header {key}: {e}"))?;
        headers.insert(name, value);
    }
    let mut config = StreamableHttpClientTransportConfig::with_uri(url.as_str()).custom_headers(headers);
    if let Some(var) = &spec.bearer_token_env {
        let token = std::env::var(var).map_err(|_| format!("bearer_token_env names {var}, which is not set"))?;
        config = config.auth_header(token);
    }
    let transport = StreamableHttpClientTransport::from_config(config);
    client.serve(transport).await.map_err(|e| format!("the MCP handshake with {url} failed: {e}"))
}

#[cfg(test)]
mod tests {
    use super::{Calls, InFlight, STDERR_TAIL_CHARS, read_stderr};
    use std::sync::Arc;
    use toolhost::Caller;

    /// A decider that answers every question with an empty form, counting them.
    #[derive(Default)]
    struct Counting(std::sync::atomic::AtomicU32);

    #[async_trait::async_trait]
    impl toolhost::PermissionDecider for Counting {
        async fn ask(&self, _request: &toolhost::AskRequest) -> toolhost::AskAnswer {
            toolhost::AskAnswer::Deny(None)
        }
        async fn elicit(&self, _question: &toolhost::Question) -> toolhost::Answer {
            self.0.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            toolhost::Answer::Accept(serde_json::Map::new())
        }
    }

    #[tokio::test]
    async fn a_servers_question_goes_to_the_one_asker_of_its_calls_and_no_further() {
        let calls = Arc::new(std::sync::Mutex::new(Calls::default()));
        let only = || calls.lock().unwrap().only_asker();
        let (person, client) = (Arc::new(Counting::default()), Arc::new(Counting::default()));
        let caller = |id: &str, decider: &Arc<Counting>| Arc::new(Caller::new(id, "mcp__s__t", decider.clone()));
        assert_eq!(only().unwrap_err(), "none of its tools is being called", "at start");
        let first = InFlight::start(&calls, 1, caller("a", &person));
        let second = InFlight::start(&calls, 2, caller("b", &person));
        let asked = only().unwrap();
        assert_eq!(asked.tool_use_id(), "a", "one asker: the oldest call's");
        for _ in 0..toolhost::MAX_QUESTIONS {
            assert!(asked.elicit("Who?".into(), "{\"type\":\"object\",\"properties\":{}}").await.is_ok());
        }
        let over = asked.elicit("Who?".into(), "{\"type\":\"object\",\"properties\":{}}").await;
        assert!(over.unwrap_err().contains("at most 8 questions"));
        assert_eq!(person.0.load(std::sync::atomic::Ordering::Relaxed), toolhost::MAX_QUESTIONS);
        assert_eq!(calls.lock().unwrap().by_token(2).unwrap().tool_use_id(), "b", "progress names its call");
        // A call of another client: nobody can tell whose a question is.
        let other = InFlight::start(&calls, 3, caller("c", &client));
        assert!(only().unwrap_err().contains("more than one client"));
        drop((first, second));
        assert_eq!(only().unwrap().tool_use_id(), "c");
        drop(other);
        assert_eq!(only().unwrap_err(), "none of its tools is being called", "between calls");
        assert!(calls.lock().unwrap().by_token(3).is_none());
        assert_eq!(client.0.load(std::sync::atomic::Ordering::Relaxed), 0);
    }

    /// A server that writes 64 MiB to stderr without a newline, then a last line: the tail that
    /// explains a failed start is bounded, and holds the last line.
    #[tokio::test]
    async fn a_servers_stderr_is_kept_bounded() {
        let mut child = tokio::process::Command::new("sh")
            .args(["-c", "head -c 67108864 /dev/zero | tr '\\0' x >&2; echo >&2; echo 'last words' >&2"])
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let stderr = child.stderr.take().unwrap();
        let tail = Arc::new(std::sync::Mutex::new(String::new()));
        read_stderr("s".into(), stderr, tail.clone()).await;
        child.wait().await.unwrap();
        let tail = tail.lock().unwrap().clone();
        assert!(tail.chars().count() <= STDERR_TAIL_CHARS, "{} characters", tail.chars().count());
        assert!(tail.ends_with("last words\n"), "{:?}", &tail[tail.len().saturating_sub(40)..]);
        assert!(tail.starts_with('x'), "the long line's start is kept, cut");
    }
}
