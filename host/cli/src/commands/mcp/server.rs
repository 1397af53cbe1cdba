//! The MCP server itself: `tools/list` from the registry, `tools/call` through the whole
//! pipeline, each call's progress and questions sent on the connection it came from (passed
//! with the call in its [`CallOptions`]).
//!
//! One [`McpServer`] per MCP session (the stdio connection, or one HTTP `Mcp-Session-Id`), each
//! with its own [`Session`]: the context map and what its user allowed "for this session". The
//! runtime is shared and replaced on reload; the sessions are not, so an "always" survives a
//! reload and never reaches another session.

use super::metrics::Metrics;
use crate::setup::GlobalArgs;
use prometheus_client::metrics::gauge::Gauge;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, CustomRequest, CustomResult,
    ElicitRequestParams, ElicitationAction, ErrorCode, ErrorData, Implementation, ListToolsResult, NumberOrString,
    PaginatedRequestParams, ProgressNotificationParam, ProgressToken, ProtocolVersion, ServerCapabilities,
    ServerConfig, Tool, ToolAnnotations,
};
use rmcp::service::{ElicitationMode, NotificationContext, Peer, RequestContext, RoleServer};
use rmcp::{ErrorData as McpError, ServerHandler};
use serde_json::{Value, json};
use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock, RwLock, Weak};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;
use toolhost::{
    Answer, AskAnswer, AskRequest, CallOptions, Event, PermissionDecider, Question, Runtime, Scheduler, Session,
    Ticket, ToolResult, ToolUse,
};

/// What every connection shares: the runtime (swapped on reload) and its call queue, which
/// outlives reloads (calls on the old runtime and the new one take turns in it).
pub struct Shared {
    pub args: GlobalArgs,
    runtime: RwLock<Arc<Runtime>>,
    pub scheduler: Arc<Scheduler>,
    /// Connections to tell about a changed tool list.
    peers: Mutex<Vec<Peer<RoleServer>>>,
    next_call: AtomicU64,
    /// What `/metrics` shows.
    pub metrics: Arc<Metrics>,
    /// Why the last reload failed, while it has not been followed by a good one (`/readyz`).
    reload_error: Mutex<Option<String>>,
    /// Shutting down after SIGTERM (`/readyz`).
    draining: std::sync::atomic::AtomicBool,
    /// The HTTP sessions whose `tools/call` requests the fast path may answer (see
    /// `http.rs`), by `Mcp-Session-Id`; an entry goes with its session.
    http_sessions: Mutex<HashMap<String, Weak<SessionCore>>>,
}

impl Shared {
    /// `runtime` queues its calls in its scheduler ([`Runtime::scheduler`]); reloaded
    /// runtimes are built with the same one.
    pub fn new(args: GlobalArgs, runtime: Runtime, metrics: Arc<Metrics>) -> Arc<Self> {
        metrics.loaded(&runtime);
        Arc::new(Shared {
            args,
            scheduler: runtime.scheduler().clone(),
            runtime: RwLock::new(Arc::new(runtime)),
            peers: Mutex::new(Vec::new()),
            next_call: AtomicU64::new(1),
            metrics,
            reload_error: Mutex::new(None),
            draining: std::sync::atomic::AtomicBool::new(false),
            http_sessions: Mutex::default(),
        })
    }

    /// A reload failed (`Some(why)`) or succeeded (`None`).
    pub fn reloaded(&self, error: Option<String>) {
        if error.is_some() {
            self.metrics.reload_failures.inc();
        }
        *self.reload_error.lock().unwrap_or_else(|e| e.into_inner()) = error;
    }

    /// Why this server should not get traffic now, if it should not: it is draining after
    /// SIGTERM. A failed reload does not count: the loaded tools stay in service, and a config
    /// mistake rolled out to every replica must not take them all out of the balancer at once
    /// (it shows in [`Shared::reload_error`] and in the metrics instead).
    pub fn not_ready(&self) -> Option<String> {
        self.draining.load(Ordering::Acquire).then(|| "draining: shutting down after SIGTERM".to_string())
    }

    /// Why the last reload failed, while no good one has followed.
    pub fn reload_error(&self) -> Option<String> {
        self.reload_error.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// SIGTERM: from now on `/readyz` says this server is going away.
    pub fn start_draining(&self) {
        self.draining.store(true, Ordering::Release);
    }

    pub fn runtime(&self) -> Arc<Runtime> {
        self.runtime.read().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Put a reloaded runtime in place (running calls finish on the old one); it was built
    /// with [`Shared::scheduler`], whose limit becomes its `max_concurrency`.
    pub fn replace_runtime(&self, runtime: Runtime) {
        self.scheduler.set_limit(runtime.max_concurrency());
        self.metrics.loaded(&runtime);
        *self.runtime.write().unwrap_or_else(|e| e.into_inner()) = Arc::new(runtime);
    }

    /// The state of the open HTTP session `id`, when its calls may take the fast path.
    pub fn http_session(&self, id: &str) -> Option<Arc<SessionCore>> {
        self.http_sessions.lock().unwrap_or_else(|e| e.into_inner()).get(id).and_then(Weak::upgrade)
    }

    /// A `tools/call` of the session `core`, through the whole pipeline, whichever path it
    /// came by: an unknown tool and a full queue are protocol errors (the spec's answer to a
    /// stale tool list; a client's flood), every other failure a result with `isError`.
    /// `ticket` is its place in the call queue when taken on arrival; `options` carry `cancel`.
    pub async fn call_tool(
        &self,
        core: &SessionCore,
        name: String,
        arguments: Option<serde_json::Map<String, Value>>,
        ticket: Option<Ticket>,
        cancel: CancellationToken,
        options: CallOptions,
    ) -> Result<CallToolResult, ErrorData> {
        let runtime = self.runtime();
        // The spec's answer to an unknown tool: a protocol error (clients only call listed
        // tools, so this is a stale list or a client bug, not something a model did).
        if !runtime.has_tool(&name) {
            return Err(ErrorData::invalid_params(format!("Unknown tool: {name}"), None));
        }
        let ticket = ticket.unwrap_or_else(|| self.scheduler.ticket());
        let Some(waiting) = Waiting::enter(&core.waiting, &self.metrics.queued) else {
            // `ticket` is dropped: its place in the queue is given up.
            return Err(ErrorData::new(
                QUEUE_FULL,
                format!(
                    "Too many calls queued: this session already has {MAX_QUEUED_PER_SESSION} tools/call requests \
                     waiting for their turn (the limit per session); wait for some to finish before sending more"
                ),
                None,
            ));
        };
        let id = format!("toolu_mcp_{}", self.next_call.fetch_add(1, Ordering::Relaxed));
        let input = Value::Object(arguments.unwrap_or_default());
        let call = runtime.check(ToolUse::new(&id, &name, input)).await;
        let admitted = tokio::select! {
            admitted = ticket.admit(call.is_concurrency_safe()) => admitted,
            // Its audit line too, though it never ran.
            () = cancel.cancelled() => return Ok(to_mcp(runtime.interrupted(call.tool_use()))),
        };
        drop(waiting);
        Ok(to_mcp(runtime.call_admitted(&core.session, call, admitted, options).await))
    }

    /// A `tools/call` of the session `core` from the client `peer`, which gets the call's
    /// questions (elicitation), its progress (when the request carried `progress`, a token) and
    /// its log messages (after `logging/setLevel`), all sent before the result is returned.
    /// Whichever way the request came: rmcp's service loop or the stdio transport itself.
    pub async fn call_from(
        &self,
        core: &SessionCore,
        peer: &Peer<RoleServer>,
        request: CallToolRequestParams,
        progress: Option<ProgressToken>,
        ticket: Option<Ticket>,
        cancel: CancellationToken,
    ) -> Result<CallToolResult, ErrorData> {
        let mut options = CallOptions::new().cancel(cancel.clone()).decider(core.asker(peer));
        let log_level = *core.log_level.lock().unwrap_or_else(|e| e.into_inner());
        let mut forwarder = None;
        if progress.is_some() || log_level.is_some() {
            let (tx, task) = notice_forwarder(peer.clone(), progress.clone());
            if progress.is_some() {
                let tx = tx.clone();
                options = options.progress(move |p| {
                    let _ = tx.send(Notice::Progress(p.message.to_string()));
                });
            }
            if let Some(least) = log_level {
                options = options.log(move |l| {
                    if l.level >= least {
                        let _ = tx.send(Notice::Log {
                            level: l.level,
                            tool: l.tool.to_string(),
                            message: l.message.to_string(),
                        });
                    }
                });
            }
            forwarder = Some(task);
        }
        let name = request.name.into_owned();
        let result = self.call_tool(core, name, request.arguments, ticket, cancel, options).await;
        // Every progress notification goes out before the result (the options, and with them
        // the sender, are gone: the forwarder ends once it has sent what it holds).
        if let Some(forwarder) = forwarder {
            let _ = forwarder.await;
        }
        result
    }

    /// Send `notifications/tools/list_changed` to every open connection.
    pub fn notify_tools_changed(&self) {
        let mut peers = self.peers.lock().unwrap_or_else(|e| e.into_inner());
        peers.retain(|p| !p.is_transport_closed());
        for peer in peers.iter() {
            let peer = peer.clone();
            tokio::spawn(async move {
                if let Err(e) = peer.notify_tool_list_changed().await {
                    tracing::debug!("cannot send tools/list_changed: {e}");
                }
            });
        }
    }
}

/// The tools of `runtime` as MCP lists them (not those a deny rule names as a whole).
pub fn tool_list(runtime: &Runtime) -> Vec<Tool> {
    runtime
        .offered_tools()
        .iter()
        .map(|tool| {
            let info = &tool.info;
            let schema = match &info.input_schema {
                Value::Object(map) => map.clone(),
                _ => serde_json::Map::new(),
            };
            let mut annotations = ToolAnnotations::with_title(info.name.clone())
                .read_only(info.read_only)
                .destructive(!info.read_only)
                .open_world(!tool.effective.net.is_empty());
            // Reading twice changes nothing; an embedded tool may be known to be idempotent.
            // Whether any other tool is idempotent is not known, so it is not claimed.
            let known = matches!(&tool.origin, toolhost::Origin::Embedded(n) if toolhost_default_tools::idempotent(n));
            if info.read_only || known {
                annotations = annotations.idempotent(true);
            }
            Tool::new(info.name.clone(), info.description.clone(), Arc::new(schema)).annotate(annotations)
        })
        .collect()
}

/// What a running call tells its client besides the result.
enum Notice {
    /// A progress message (the request carried a `progressToken`).
    Progress(String),
    /// A log message at or above the session's `logging/setLevel`.
    Log { level: toolhost::LogLevel, tool: String, message: String },
}

/// Where a call's progress and log messages go: each progress message becomes a
/// `notifications/progress` (progress 1, 2, …) and each log message a `notifications/message`
/// (logger: the tool) on the call's connection, sent in order by the returned task, which ends
/// once every sender is dropped.
fn notice_forwarder(
    peer: Peer<RoleServer>,
    token: Option<ProgressToken>,
) -> (mpsc::UnboundedSender<Notice>, tokio::task::JoinHandle<()>) {
    let (tx, mut rx) = mpsc::unbounded_channel::<Notice>();
    let task = tokio::spawn(async move {
        let mut n = 0.0;
        while let Some(notice) = rx.recv().await {
            let sent = match notice {
                Notice::Progress(message) => {
                    let Some(token) = &token else { continue };
                    n += 1.0;
                    let mut param = ProgressNotificationParam::new(token.clone(), n);
                    param.message = Some(message);
                    peer.notify_progress(param).await
                }
                Notice::Log { level, tool, message } => send_log(&peer, level, tool, message).await,
            };
            if let Err(e) = sent {
                tracing::debug!("cannot send a notification: {e}");
            }
        }
    });
    (tx, task)
}

#[allow(deprecated, reason = "logging is still part of the protocol revisions served here")]
async fn send_log(
    peer: &Peer<RoleServer>,
    level: toolhost::LogLevel,
    tool: String,
    message: String,
) -> Result<(), rmcp::service::ServiceError> {
    use rmcp::model::LoggingMessageNotificationParam;
    let mut param = LoggingMessageNotificationParam::new(toolhost_mcp::level::to_mcp(level), Value::String(message));
    param.logger = Some(tool);
    peer.notify_logging_message(param).await
}

/// The runtime's events, to the log (stderr); progress reaches clients through each call's
/// options.
pub fn event_sink(metrics: Arc<Metrics>) -> toolhost::EventSink {
    Arc::new(move |event| {
        metrics.observe(&event);
        log_event(&event);
    })
}

fn log_event(event: &Event) {
    match event {
        Event::Progress { id, tool, message } => tracing::debug!("{tool} ({id}): {message}"),
        Event::Log { id, tool, level, message } => tracing::debug!("{tool} ({id}) [{}]: {message}", level.as_str()),
        Event::HookFailed { id, tool, hook_event, hook, message } => {
            tracing::warn!("{hook_event} hook [{hook}] for {tool} ({id}) failed: {message}");
        }
        Event::HookMessage { id, tool, hook_event, message } => {
            tracing::info!("{hook_event} hook for {tool} ({id}): {message}");
        }
        other => tracing::debug!("{}", serde_json::to_string(other).unwrap_or_default()),
    }
}

/// Puts a call's `ask` decisions to the user through `elicitation/create` on the connection the
/// call came from, when that client declared the elicitation capability; otherwise nobody can
/// be asked and the runtime denies the call, naming the rule to add.
struct ElicitDecider {
    peer: Peer<RoleServer>,
}

const ALLOW_ONCE: &str = "allow once";
const ALLOW_ALWAYS: &str = "allow for this session";
const DENY: &str = "deny";

#[async_trait::async_trait]
impl PermissionDecider for ElicitDecider {
    fn can_ask(&self, _request: &AskRequest) -> bool {
        self.peer.supported_elicitation_modes().contains(&ElicitationMode::Form)
    }

    async fn ask(&self, request: &AskRequest) -> AskAnswer {
        let peer = &self.peer;
        let what = match &request.subject {
            Some(subject) => format!("{} on {subject}", request.tool),
            None => request.tool.clone(),
        };
        let message = format!(
            "toolhost: allow {what}? ({}). Input: {}",
            request.reason,
            serde_json::to_string(&request.input).unwrap_or_default()
        );
        let params = json!({
            "mode": "form",
            "message": message,
            "requestedSchema": {
                "type": "object",
                "properties": {
                    "decision": {
                        "type": "string",
                        "title": "Decision",
                        "description": format!(
                            "\"{ALLOW_ALWAYS}\" allows every {} call of this MCP session (this connection) until it ends",
                            request.tool
                        ),
                        "enum": [ALLOW_ONCE, ALLOW_ALWAYS, DENY],
                        "default": ALLOW_ONCE,
                    }
                },
                "required": ["decision"],
            }
        });
        let params: ElicitRequestParams = match serde_json::from_value(params) {
            Ok(p) => p,
            Err(e) => return AskAnswer::Deny(Some(format!("toolhost could not build the question: {e}"))),
        };
        match peer.create_elicitation(params).await {
            Ok(answer) => match answer.action {
                ElicitationAction::Accept => {
                    match answer.content.as_ref().and_then(|c| c.get("decision")).and_then(Value::as_str) {
                        Some(ALLOW_ALWAYS) => AskAnswer::AllowAlways,
                        Some(DENY) => AskAnswer::Deny(None),
                        // Accepting the form without changing it keeps the default.
                        _ => AskAnswer::AllowOnce,
                    }
                }
                _ => AskAnswer::Deny(None),
            },
            Err(e) => {
                tracing::warn!("elicitation failed: {e}");
                AskAnswer::Deny(Some(format!("the question could not be put to the user ({e})")))
            }
        }
    }

    /// A tool's own question, as a form elicitation on the call's connection; a client that
    /// cannot be asked, or that fails to answer, cancels it.
    async fn elicit(&self, question: &Question) -> Answer {
        if !self.peer.supported_elicitation_modes().contains(&ElicitationMode::Form) {
            return Answer::Cancel;
        }
        let params = json!({"mode": "form", "message": question.shown(), "requestedSchema": question.form});
        let params: ElicitRequestParams = match serde_json::from_value(params) {
            Ok(p) => p,
            Err(e) => {
                tracing::warn!("{}'s question cannot be sent as an MCP form: {e}", question.tool);
                return Answer::Cancel;
            }
        };
        match self.peer.create_elicitation(params).await {
            Ok(answer) => match (answer.action, answer.content) {
                (ElicitationAction::Accept, Some(Value::Object(content))) => Answer::Accept(content),
                (ElicitationAction::Accept, None) => Answer::Accept(serde_json::Map::new()),
                (ElicitationAction::Decline, _) => Answer::Decline,
                _ => Answer::Cancel,
            },
            Err(e) => {
                tracing::warn!("{}'s question could not be put to the user: {e}", question.tool);
                Answer::Cancel
            }
        }
    }
}

/// The most `tools/call` requests of one MCP session waiting for their turn (being classified
/// or queued behind other calls). One more is refused with [`QUEUE_FULL`]: a client cannot
/// pile up unbounded work, and one that sends too much learns why at once.
pub const MAX_QUEUED_PER_SESSION: usize = 64;

/// The JSON-RPC error code of a call refused because its session has
/// [`MAX_QUEUED_PER_SESSION`] calls waiting (in the range JSON-RPC leaves to servers).
pub const QUEUE_FULL: ErrorCode = ErrorCode(-32000);

/// What one MCP session keeps, whichever path its calls take: its own [`Session`] (kept for as
/// long as the session lasts, whatever the reloads) and its calls waiting for their turn.
#[derive(Default)]
pub struct SessionCore {
    session: Session,
    /// Calls of this session not running yet.
    waiting: Arc<AtomicUsize>,
    /// Its calls answered without rmcp's service loop (the HTTP fast path, the stdio
    /// transport), by JSON-RPC id as JSON text (see [`call_key`]), so that a
    /// `notifications/cancelled` reaches them.
    /// Two calls may carry one id (a client's mistake): each is its own entry, by a serial.
    fast_calls: Mutex<HashMap<String, Vec<(u64, CancellationToken)>>>,
    next_fast_call: AtomicU64,
    /// The least severe tool log message the client wants (`logging/setLevel`); none are sent
    /// before it asks.
    log_level: Mutex<Option<toolhost::LogLevel>>,
    /// Who answers its calls' questions: its client, one decider for all of them, so that an
    /// MCP server toolhost uses can tell two calls of this client from calls of two clients
    /// (`toolhost::Caller::same_asker`), whether rmcp or the stdio transport took the call.
    /// (The HTTP fast path serves only clients that cannot be asked: its calls have nobody.)
    asker: OnceLock<Arc<dyn PermissionDecider>>,
    /// Its client, once the session is open: the stdio transport then answers its calls itself
    /// (see `stdio/direct.rs`).
    peer: OnceLock<Peer<RoleServer>>,
}

impl SessionCore {
    /// The decider of every call of this session (made for the first, from its client).
    fn asker(&self, peer: &Peer<RoleServer>) -> Arc<dyn PermissionDecider> {
        self.asker.get_or_init(|| Arc::new(ElicitDecider { peer: peer.clone() })).clone()
    }

    /// The session is open and `peer` is its client.
    pub fn open(&self, peer: Peer<RoleServer>) {
        let _ = self.peer.set(peer);
    }

    /// Its client, once the session is open.
    pub fn peer(&self) -> Option<&Peer<RoleServer>> {
        self.peer.get()
    }

    /// A call answered without rmcp's service loop starts: its serial and its cancellation,
    /// which [`SessionCore::cancel`] reaches until [`SessionCore::end`].
    pub fn start(&self, key: &str) -> (u64, CancellationToken) {
        let (serial, cancel) = (self.next_fast_call.fetch_add(1, Ordering::Relaxed), CancellationToken::new());
        let mut calls = self.fast_calls.lock().unwrap_or_else(|e| e.into_inner());
        calls.entry(key.to_string()).or_default().push((serial, cancel.clone()));
        (serial, cancel)
    }

    /// The call `key` numbered `serial` has ended (another of the same id may run on).
    pub fn end(&self, key: &str, serial: u64) {
        let mut calls = self.fast_calls.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(running) = calls.get_mut(key) {
            running.retain(|(s, _)| *s != serial);
            if running.is_empty() {
                calls.remove(key);
            }
        }
    }

    /// Cancel the calls `key` if any is one of [`SessionCore::start`]'s: whether one was.
    pub fn cancel(&self, key: &str) -> bool {
        let calls = self.fast_calls.lock().unwrap_or_else(|e| e.into_inner());
        let running = calls.get(key).map(Vec::as_slice).unwrap_or_default();
        running.iter().for_each(|(_, cancel)| cancel.cancel());
        !running.is_empty()
    }

    /// Cancel every call of [`SessionCore::start`]'s still running.
    pub fn cancel_all(&self) {
        for (_, cancel) in self.fast_calls.lock().unwrap_or_else(|e| e.into_inner()).values().flatten() {
            cancel.cancel();
        }
    }
}

/// The key of a call in a session's calls answered without rmcp's service loop: its JSON-RPC id
/// as JSON text (`1` and `"1"` differ).
pub fn call_key(id: &NumberOrString) -> String {
    match id {
        NumberOrString::Number(n) => n.to_string(),
        NumberOrString::String(s) => Value::String(s.to_string()).to_string(),
    }
}

/// One MCP session (the stdio connection, or one HTTP session).
pub struct McpServer {
    shared: Arc<Shared>,
    core: Arc<SessionCore>,
    /// Its `Mcp-Session-Id`, once its calls may take the HTTP fast path.
    http_session: Mutex<Option<String>>,
}

impl McpServer {
    pub fn new(shared: Arc<Shared>) -> Self {
        Self::with_core(shared, Arc::default())
    }

    /// A session whose state `core` is shared with a transport that answers some of its
    /// calls itself (stdio).
    pub fn with_core(shared: Arc<Shared>, core: Arc<SessionCore>) -> Self {
        shared.metrics.sessions.inc();
        McpServer { shared, core, http_session: Mutex::default() }
    }
}

impl Drop for McpServer {
    fn drop(&mut self) {
        self.shared.metrics.sessions.dec();
        if let Some(id) = self.http_session.lock().unwrap_or_else(|e| e.into_inner()).take() {
            self.shared.http_sessions.lock().unwrap_or_else(|e| e.into_inner()).remove(&id);
        }
    }
}

/// A call counted in its session's [`SessionCore::waiting`] (and in the server's queued-calls
/// gauge) until admitted (or dropped).
struct Waiting(Arc<AtomicUsize>, Gauge);

impl Waiting {
    /// Count one more waiting call, unless [`MAX_QUEUED_PER_SESSION`] are waiting already.
    fn enter(count: &Arc<AtomicUsize>, queued: &Gauge) -> Option<Waiting> {
        count
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| (n < MAX_QUEUED_PER_SESSION).then_some(n + 1))
            .ok()
            .map(|_| {
                queued.inc();
                Waiting(count.clone(), queued.clone())
            })
    }
}

impl Drop for Waiting {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
        self.1.dec();
    }
}

/// The protocol versions served: those with the `initialize` handshake, where the server may
/// ask the client (elicitation) and notify it (tools/list_changed) on its own.
fn versions() -> &'static [ProtocolVersion] {
    ProtocolVersion::known_up_to(&ProtocolVersion::V_2025_11_25)
}

/// Request methods of the MCP specification.
const KNOWN_REQUESTS: &[&str] = &[
    "initialize",
    "ping",
    "tools/list",
    "tools/call",
    "resources/list",
    "resources/read",
    "resources/templates/list",
    "resources/subscribe",
    "resources/unsubscribe",
    "prompts/list",
    "prompts/get",
    "completion/complete",
    "logging/setLevel",
];

impl ServerHandler for McpServer {
    fn get_info(&self) -> ServerConfig {
        // Logging: `logging/setLevel` is accepted (toolhost sends no log messages of its own;
        // a tool's progress goes out as progress notifications). Completions: toolhost serves
        // no prompts or resources, so every completion is empty.
        // (Logging is deprecated by a later revision of the protocol, but clients and the
        // conformance suite of the revisions served here still ask for it.)
        #[allow(deprecated, reason = "logging is still part of the protocol revisions served here")]
        let capabilities = ServerCapabilities::builder()
            .enable_tools()
            .enable_tool_list_changed()
            .enable_logging()
            .enable_completions()
            .build();
        ServerConfig::new(capabilities)
            .with_protocol_version(ProtocolVersion::V_2025_11_25)
            .with_server_info(Implementation::new("toolhost", env!("CARGO_PKG_VERSION")))
            .with_instructions(
                "Tools run as sandboxed WebAssembly components with only what the operator granted. \
                 Errors come back as results with isError set.",
            )
    }

    fn supported_protocol_versions(&self) -> Cow<'static, [ProtocolVersion]> {
        Cow::Borrowed(versions())
    }

    async fn on_initialized(&self, context: NotificationContext<RoleServer>) {
        // An HTTP session's calls may be answered by the fast path (`http.rs`), unless its client
        // can be asked questions: an elicitation goes out on the call's own event stream, which
        // only rmcp's path has.
        let parts = context.extensions.get::<hyper::http::request::Parts>();
        let id = parts.and_then(|p| p.headers.get("mcp-session-id")).and_then(|v| v.to_str().ok());
        if let Some(id) = id
            && !context.peer.supported_elicitation_modes().contains(&ElicitationMode::Form)
        {
            self.shared
                .http_sessions
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .insert(id.to_string(), Arc::downgrade(&self.core));
            *self.http_session.lock().unwrap_or_else(|e| e.into_inner()) = Some(id.to_string());
        }
        self.shared.peers.lock().unwrap_or_else(|e| e.into_inner()).push(context.peer);
    }

    async fn on_custom_request(
        &self,
        request: CustomRequest,
        _context: RequestContext<RoleServer>,
    ) -> Result<CustomResult, McpError> {
        // A known method whose params do not parse arrives here too.
        let method = request.method.as_str();
        if KNOWN_REQUESTS.contains(&method) {
            return Err(ErrorData::invalid_params(format!("Invalid params for {method}"), None));
        }
        Err(ErrorData::new(ErrorCode::METHOD_NOT_FOUND, format!("Method not found: {method}"), None))
    }

    #[allow(deprecated, reason = "logging is still part of the protocol revisions served here")]
    async fn set_level(
        &self,
        request: rmcp::model::SetLevelRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        tracing::debug!("logging/setLevel {:?}", request.level);
        let level = toolhost_mcp::level::from_mcp(request.level);
        *self.core.log_level.lock().unwrap_or_else(|e| e.into_inner()) = Some(level);
        // Log messages go out on a call's own event stream, which only rmcp's path has: this
        // session's calls leave the HTTP fast path.
        if let Some(id) = self.http_session.lock().unwrap_or_else(|e| e.into_inner()).take() {
            self.shared.http_sessions.lock().unwrap_or_else(|e| e.into_inner()).remove(&id);
        }
        Ok(())
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        Ok(ListToolsResult::with_all_items(tool_list(&self.shared.runtime())))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        mut context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let ticket = context.extensions.remove::<Ticket>();
        let token = context.meta.get_progress_token();
        let result = self.shared.call_from(&self.core, &context.peer, request, token, ticket, context.ct.clone()).await;
        // A cancelled call's result is dropped by the service loop, as the spec requires.
        result.map(CallToolResponse::Complete)
    }
}

/// A tool_result as a `CallToolResult`: the same blocks, `isError` for every failure.
fn to_mcp(result: ToolResult) -> CallToolResult {
    let content: Vec<ContentBlock> = result
        .content
        .into_iter()
        .map(|block| match block {
            toolhost::ContentBlock::Text { text } => ContentBlock::text(text),
            toolhost::ContentBlock::Image { source } => ContentBlock::image(source.data, source.media_type),
        })
        .collect();
    if result.is_error { CallToolResult::error(content) } else { CallToolResult::success(content) }
}

#[cfg(test)]
mod tests {
    use super::SessionCore;

    /// A client may send two calls with one id: each is its own entry, so the first ending
    /// does not make the second uncancellable, and a cancellation of that id reaches both.
    #[test]
    fn calls_of_one_id_are_each_cancellable_until_they_end() {
        let core = SessionCore::default();
        let (first, a) = core.start("1");
        let (second, b) = core.start("1");
        let (_, other) = core.start("\"1\"");
        core.end("1", first);
        assert!(core.cancel("1"), "the second is still running");
        assert!(b.is_cancelled() && !a.is_cancelled() && !other.is_cancelled());
        core.end("1", second);
        assert!(!core.cancel("1"), "none left");
        core.cancel_all();
        assert!(other.is_cancelled());
    }
}
