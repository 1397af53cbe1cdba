//! Per-call store data: the WASI context built from the grant, the memory limiter, captured
//! output, and what `host.progress` / `host.context-get` need.

use crate::PermissionDecider;
use crate::call::question::{Answer, LogLevel, MAX_QUESTIONS, Question};
use crate::call::{LogFn, LogMessage, Progress, ProgressFn};
use crate::event::{Event, EventSink};
use crate::invoke::bindings::{HostImports, SessionImports, TypesHost, WitElicitAction, WitElicitAnswer, WitLogLevel};
use crate::sandbox::capture::CapturePipe;
use crate::sandbox::fsguard::{FsGuard, GuardedFs};
use crate::sandbox::http::HttpHooks;
use crate::sandbox::net::{GuardedLookup, NetAccess};
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use wasmtime::ResourceLimiter;
use wasmtime::component::ResourceTable;
use wasmtime_wasi::{WasiCtx, WasiCtxView, WasiView};
use wasmtime_wasi_http::{WasiHttpCtx, WasiHttpCtxView, WasiHttpView};

/// Longest progress message passed on, and how many one call may send: a tool cannot flood
/// the terminal (or an MCP client) through `host.progress`.
pub(crate) const MAX_PROGRESS_CHARS: usize = 4096;
pub(crate) const MAX_PROGRESS_MESSAGES: u32 = 1000;

/// Why the epoch callback stopped a guest.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Interrupt {
    Timeout,
    Cancelled,
}

/// What the host imports of one call answer from.
#[derive(Clone)]
pub(crate) struct CallEnv {
    /// The session's context map as it was when the call started.
    pub context: Arc<BTreeMap<String, String>>,
    /// The calling tool's context namespace: it reads only keys there.
    pub namespace: Arc<str>,
    /// The workspace path as JSON text, answered for [`crate::WORKSPACE_KEY`].
    pub workspace_json: Arc<str>,
    /// Where progress goes, if anywhere.
    pub progress: Option<ProgressTo>,
    /// Where the hosts the call tries to reach are recorded (for the audit log), if anywhere.
    pub hosts: Option<crate::sandbox::net::HostLog>,
    /// Who answers the tool's own questions: set for `call` only.
    pub asker: Option<Asker>,
}

/// Who answers a call's questions (`session.elicit`). Not under the runtime's lock of permission
/// questions: a tool could hold it for its whole timeout and stall every other session's
/// questions; a decider that owns a terminal puts its questions one at a time itself.
#[derive(Clone)]
pub(crate) struct Asker {
    pub decider: Arc<dyn PermissionDecider>,
    /// The call's tool_use id and tool.
    pub id: Arc<str>,
    pub tool: Arc<str>,
}

/// Where one call's progress messages go: the runtime's event sink and the call's own
/// [`crate::CallOptions::progress`], with the call's id and tool name.
#[derive(Clone)]
pub(crate) struct ProgressTo {
    events: Option<EventSink>,
    callback: Option<ProgressFn>,
    log: Option<LogFn>,
    id: Arc<str>,
    tool: Arc<str>,
}

impl ProgressTo {
    /// `None` when nobody listens.
    pub(crate) fn new(
        events: Option<EventSink>,
        callback: Option<ProgressFn>,
        log: Option<LogFn>,
        id: &str,
        tool: &str,
    ) -> Option<Self> {
        (events.is_some() || callback.is_some() || log.is_some()).then(|| ProgressTo {
            events,
            callback,
            log,
            id: id.into(),
            tool: tool.into(),
        })
    }

    pub(crate) fn send(&self, message: String) {
        if let Some(callback) = &self.callback {
            callback(Progress { tool_use_id: &self.id, tool: &self.tool, message: &message });
        }
        if let Some(sink) = &self.events {
            sink(Event::Progress { id: self.id.to_string(), tool: self.tool.to_string(), message });
        }
    }

    pub(crate) fn log(&self, level: LogLevel, message: String) {
        if let Some(log) = &self.log {
            log(LogMessage { tool_use_id: &self.id, tool: &self.tool, level, message: &message });
        }
        if let Some(sink) = &self.events {
            sink(Event::Log { id: self.id.to_string(), tool: self.tool.to_string(), level, message });
        }
    }
}

/// Sums linear memory over every memory of the instance and refuses growth past the limit,
/// remembering that it did so: that is how an out-of-memory trap is told apart from others.
#[derive(Debug)]
pub(crate) struct MemoryLimiter {
    pub max_bytes: usize,
    pub used: usize,
    pub hit: bool,
}

impl ResourceLimiter for MemoryLimiter {
    fn memory_growing(&mut self, current: usize, desired: usize, _max: Option<usize>) -> wasmtime::Result<bool> {
        let total = self.used - current.min(self.used) + desired;
        if total > self.max_bytes {
            self.hit = true;
            return Ok(false);
        }
        self.used = total;
        Ok(true)
    }

    fn table_growing(&mut self, _current: usize, desired: usize, _max: Option<usize>) -> wasmtime::Result<bool> {
        // Tables hold references, not data; this bound only stops runaway growth.
        Ok(desired <= 1_000_000)
    }
}

pub(crate) struct HostState {
    wasi: WasiCtx,
    table: ResourceTable,
    pub limiter: MemoryLimiter,
    pub env: CallEnv,
    /// The guest's stdout: the answer of a command program, dropped for other tools.
    pub stdout: CapturePipe,
    pub stderr: CapturePipe,
    pub interrupt: Option<Interrupt>,
    pub progress_sent: u32,
    /// Questions the call asked (`session.elicit`).
    pub questions_asked: u32,
    /// What the call may reach over the network (shared with the socket address check).
    pub net: Arc<NetAccess>,
    /// Open name lookups: resource rep → the name being resolved.
    lookups: HashMap<u32, String>,
    http: WasiHttpCtx,
    /// The call's filesystem guard: preopens, protected paths, deny rules (see `fsguard/`).
    pub fs: FsGuard,
    /// Sends the call's `wasi:http` requests, checked against `net` (see http.rs).
    http_hooks: HttpHooks,
    /// The granted environment variables, as `wasi:config/store` answers them (see
    /// config_store.rs); the same pairs `wasi:cli/environment` shows.
    config: Vec<(String, String)>,
}

impl HostState {
    pub(crate) fn new(
        wasi: WasiCtx,
        net: Arc<NetAccess>,
        tls: Arc<rustls::ClientConfig>,
        env: CallEnv,
        max_memory: usize,
        (stdout, stderr): (CapturePipe, CapturePipe),
        fs: FsGuard,
    ) -> Self {
        HostState {
            wasi,
            table: ResourceTable::new(),
            limiter: MemoryLimiter { max_bytes: max_memory, used: 0, hit: false },
            env,
            stdout,
            stderr,
            interrupt: None,
            progress_sent: 0,
            questions_asked: 0,
            http_hooks: HttpHooks { net: net.clone(), tls },
            net,
            lookups: HashMap::new(),
            http: WasiHttpCtx::new(),
            fs,
            config: Vec::new(),
        }
    }

    /// Answer `wasi:config/store` with these pairs (the call's granted variables).
    pub(crate) fn with_config(mut self, config: Vec<(String, String)>) -> Self {
        self.config = config;
        self
    }

    /// The value `wasi:config/store.get` answers for `key`.
    pub(crate) fn config_value(&self, key: &str) -> Option<String> {
        self.config.iter().find(|(k, _)| k == key).map(|(_, v)| v.clone())
    }

    /// Every pair `wasi:config/store.get-all` answers.
    pub(crate) fn config_values(&self) -> &[(String, String)] {
        &self.config
    }

    /// Make the state ready for one export call: its environment in, and nothing left from an
    /// earlier call of a pooled instance (captured stderr, counters, why it was stopped).
    pub(crate) fn begin(&mut self, env: CallEnv) {
        self.env = env;
        self.stdout.clear();
        self.stderr.clear();
        self.progress_sent = 0;
        self.questions_asked = 0;
        self.interrupt = None;
        self.limiter.hit = false;
    }

    /// The export call is over and the instance goes back to its pool: drop what belongs to
    /// the call (its context snapshot, where its progress went), so nothing of it outlives it.
    pub(crate) fn end(&mut self) {
        self.env = CallEnv {
            context: Arc::default(),
            namespace: self.env.namespace.clone(),
            workspace_json: self.env.workspace_json.clone(),
            progress: None,
            hosts: None,
            asker: None,
        };
    }

    /// The guarded `wasi:filesystem` view (see `fsguard/`).
    pub(crate) fn guarded_fs(&mut self) -> GuardedFs<'_> {
        GuardedFs {
            inner: wasmtime_wasi::filesystem::WasiFilesystemCtxView {
                ctx: self.wasi.filesystem(),
                table: &mut self.table,
            },
            guard: &mut self.fs,
        }
    }

    /// The guarded `wasi:sockets/ip-name-lookup` view (see net.rs).
    pub(crate) fn lookup(&mut self) -> GuardedLookup<'_> {
        GuardedLookup {
            inner: wasmtime_wasi::sockets::WasiSocketsCtxView { ctx: self.wasi.sockets(), table: &mut self.table },
            net: &self.net,
            streams: &mut self.lookups,
        }
    }
}

impl WasiView for HostState {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView { ctx: &mut self.wasi, table: &mut self.table }
    }
}

impl WasiHttpView for HostState {
    fn http(&mut self) -> WasiHttpCtxView<'_> {
        WasiHttpCtxView { ctx: &mut self.http, table: &mut self.table, hooks: &mut self.http_hooks }
    }
}

impl TypesHost for HostState {}

impl HostImports for HostState {
    fn progress(&mut self, message: String) {
        if self.progress_sent >= MAX_PROGRESS_MESSAGES {
            return;
        }
        self.progress_sent += 1;
        if let Some(progress) = &self.env.progress {
            progress.send(message.chars().take(MAX_PROGRESS_CHARS).collect());
        }
    }

    fn context_get(&mut self, key: String) -> Option<String> {
        if key == crate::turns::session::WORKSPACE_KEY {
            return Some(self.env.workspace_json.to_string());
        }
        self.env.context.get(&format!("{}/{key}", self.env.namespace)).cloned()
    }
}

impl SessionImports for HostState {
    fn log(&mut self, level: WitLogLevel, message: String) {
        // Log messages share progress's budget: together they cannot flood anyone.
        if self.progress_sent >= MAX_PROGRESS_MESSAGES {
            return;
        }
        self.progress_sent += 1;
        let level = match level {
            WitLogLevel::Debug => LogLevel::Debug,
            WitLogLevel::Info => LogLevel::Info,
            WitLogLevel::Notice => LogLevel::Notice,
            WitLogLevel::Warning => LogLevel::Warning,
            WitLogLevel::Error => LogLevel::Error,
            WitLogLevel::Critical => LogLevel::Critical,
            WitLogLevel::Alert => LogLevel::Alert,
            WitLogLevel::Emergency => LogLevel::Emergency,
        };
        if let Some(progress) = &self.env.progress {
            progress.log(level, message.chars().take(MAX_PROGRESS_CHARS).collect());
        }
    }

    async fn elicit(&mut self, message: String, requested_schema: String) -> Result<WitElicitAnswer, String> {
        let Some(asker) = self.env.asker.clone() else {
            return Err("a tool may ask the person questions only while it runs `call`".to_string());
        };
        if self.questions_asked >= MAX_QUESTIONS {
            return Err(crate::QuestionError::TooMany.to_string());
        }
        self.questions_asked += 1;
        let question = Question::new(&asker.id, &asker.tool, message, &requested_schema).map_err(|e| e.to_string())?;
        let answer = asker.decider.elicit(&question).await;
        Ok(match answer {
            Answer::Accept(content) => {
                let content = serde_json::Value::Object(content);
                question.check_answer(&content).map_err(|e| e.to_string())?;
                WitElicitAnswer { action: WitElicitAction::Accept, content: Some(content.to_string()) }
            }
            Answer::Decline => WitElicitAnswer { action: WitElicitAction::Decline, content: None },
            Answer::Cancel => WitElicitAnswer { action: WitElicitAction::Cancel, content: None },
        })
    }
}
