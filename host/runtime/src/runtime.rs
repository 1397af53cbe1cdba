//! The runtime: an engine, a workspace, the operator's policy, and the registry of loaded
//! tools (name → compiled `InstancePre`, compiled schema, effective grant, limits).

use crate::cache::Cache;
use crate::engine::{EngineOptions, ToolEngine};
use crate::error::{Error, LoadError, Result, SettingError, WorkspaceError};
use crate::event::EventSink;
use crate::fsguard::Preopen;
use crate::hooks::{CommandHooks, Hooks};
use crate::loader::{self, Origin, ToolInfo, ToolSource};
use crate::permission::{PermissionDecider, Permissions};
use crate::pinning::pin_dirs;
use crate::schedule::Scheduler;
use crate::spill::SpillDir;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use toolhost_policy::{
    Capability, Config, DirGrant, EffectiveGrant, Grant, Limits, Mode, PathPolicy, Rule, Rules, effective_grant,
    grant_excess,
};

/// A tool ready to be called.
#[non_exhaustive]
pub struct LoadedTool {
    /// Its schema.
    pub info: ToolInfo,
    /// Where it came from.
    pub origin: Origin,
    /// Hex sha256 of its bytes.
    pub sha256: String,
    /// Size of its bytes.
    pub size: usize,
    /// The operator's grant for it (before intersection with the ceiling).
    pub grant: Grant,
    /// Where [`grant`](Self::grant) came from.
    pub grant_from: GrantFrom,
    /// What it actually gets: ceiling ∩ grant.
    pub effective: EffectiveGrant,
    /// The same, read-only: what it gets inside a parallel batch.
    pub effective_read_only: EffectiveGrant,
    /// The effective grant's network patterns, parsed once here rather than at every call.
    pub(crate) net_patterns: Arc<[toolhost_policy::NetPattern]>,
    /// Its limits.
    pub limits: Limits,
    /// What its grant allows that the operator may not have meant (`env = ["*"]`, `net =
    /// ["*"]`, writes outside the workspace, a hook script it may write), one line each.
    pub warnings: Vec<String>,
    /// Whether everything it is granted lies inside the workspace (for the permission check of
    /// calls without a path subject).
    pub(crate) grant_inside_workspace: bool,
    pub(crate) validator: jsonschema::Validator,
    /// Its granted directories, opened at load (calls get duplicates of these handles).
    pub(crate) preopens: Arc<[Preopen]>,
    /// The deny rules that name this tool itself, as filesystem rules (the runtime's own
    /// [`PathPolicy`] holds the rest).
    pub(crate) own_policy: Option<Arc<PathPolicy>>,
    /// Whether reads can be refused for this tool (some deny rule concerns reading).
    pub(crate) check_reads: bool,
    /// Where its context keys live: its own namespace, or the embedded tools' shared one.
    pub(crate) context_namespace: Arc<str>,
    pub(crate) code: loader::Code,
    pub(crate) pure_pool: crate::invoke::PurePool,
}

impl LoadedTool {
    /// The context namespace its keys live in (see [`crate::Session::get`]).
    pub fn context_namespace(&self) -> &str {
        &self.context_namespace
    }
}

/// Where a tool's grant came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum GrantFrom {
    /// Its `[tools.NAME] grant` in the config.
    Config,
    /// The runtime's default grant (`RuntimeBuilder::default_grant`; read-write workspace).
    Default,
}

impl std::fmt::Display for GrantFrom {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            GrantFrom::Config => "config",
            GrantFrom::Default => "default",
        })
    }
}

/// A tool compiled and described, not yet registered.
struct Prepared {
    code: loader::Code,
    info: ToolInfo,
    validator: jsonschema::Validator,
}

impl std::fmt::Debug for LoadedTool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LoadedTool").field("name", &self.info.name).field("origin", &self.origin).finish()
    }
}

/// Builds a [`Runtime`]. Defaults: workspace `.`, no config (built-in limits), every tool
/// granted read-write access to the workspace (intersected with its ceiling), no environment
/// variables, no compile cache, results saved under `WORKSPACE/.toolhost/results`.
#[derive(Default)]
pub struct RuntimeBuilder {
    engine: Option<ToolEngine>,
    workspace: Option<PathBuf>,
    config: Config,
    default_grant: Option<Grant>,
    env: BTreeMap<String, String>,
    cache_dir: Option<PathBuf>,
    state_dir: Option<PathBuf>,
    results_dir: Option<PathBuf>,
    events: Option<EventSink>,
    max_concurrency: Option<usize>,
    mode: Option<Mode>,
    extra_rules: toolhost_policy::Rules,
    hooks: Vec<Arc<dyn Hooks>>,
    decider: Option<Arc<dyn PermissionDecider>>,
    protected: Vec<(PathBuf, String)>,
    /// `Some(false)`: the engine `build` makes allocates instances on demand.
    pooling: Option<bool>,
    scheduler: Option<Arc<Scheduler>>,
}

impl RuntimeBuilder {
    /// Protect a file or directory the host depends on (the config file, a tools directory, a
    /// session file …) from every tool: no tool may create, write, rename, delete or link it,
    /// whatever its grant. The runtime protects on its own `.toolhost/` (results), the compile
    /// cache, hook scripts, `[tls] ca_files` and every tool file it loads. `what` says what it
    /// is, for the refusal's message ("the config file in use").
    pub fn protect(mut self, path: impl Into<PathBuf>, what: impl Into<String>) -> Self {
        self.protected.push((path.into(), what.into()));
        self
    }
    /// Calls of a parallel batch that may run at once (default: the config's
    /// `limits.max_concurrency`, else 10). Must be at least 1.
    pub fn max_concurrency(mut self, n: usize) -> Self {
        self.max_concurrency = Some(n);
        self
    }
    /// Queue calls in `scheduler`, shared with other runtimes (an MCP server keeps one across
    /// reloads, so calls on the old runtime and the new one still take turns). Its limit is its
    /// owner's to set ([`Scheduler::set_limit`]), not changed here. Without one, the runtime
    /// has its own, limited to `max_concurrency`.
    pub fn scheduler(mut self, scheduler: Arc<Scheduler>) -> Self {
        self.scheduler = Some(scheduler);
        self
    }
    /// Share an existing engine (one per process is best). Without one, `build` makes one
    /// sized for the config's limits.
    pub fn engine(mut self, engine: ToolEngine) -> Self {
        self.engine = Some(engine);
        self
    }
    /// Whether the engine `build` makes (when none is given) uses the pooling allocator
    /// (default: yes). Reserving the pool costs a few milliseconds at start and saves some at
    /// every call: a process that makes one call or none (`toolhost call`, `list`) is faster
    /// without it.
    pub fn pooling(mut self, pooling: bool) -> Self {
        self.pooling = Some(pooling);
        self
    }
    /// The workspace directory (must exist).
    pub fn workspace(mut self, dir: impl Into<PathBuf>) -> Self {
        self.workspace = Some(dir.into());
        self
    }
    /// The operator's config: limits and per-tool grants.
    pub fn config(mut self, config: Config) -> Self {
        self.config = config;
        self
    }
    /// The grant of tools the config says nothing about.
    pub fn default_grant(mut self, grant: Grant) -> Self {
        self.default_grant = Some(grant);
        self
    }
    /// The environment variables a grant's `env` names are looked up in. The library never
    /// reads the process environment itself.
    pub fn env(mut self, env: impl IntoIterator<Item = (String, String)>) -> Self {
        self.env = env.into_iter().collect();
        self
    }
    /// Cache compiled components (native code) in this directory. `build` creates it with mode
    /// 0700 if missing, and does not use it (one warning, every tool compiled at each start)
    /// when it is not a directory of the effective user that no one else can write, or when its
    /// `key` file (the HMAC key authenticating every entry, made on first use) is not private.
    /// Tools granted this directory, or one containing it, are refused at [`Runtime::load`].
    pub fn cache_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.cache_dir = Some(dir.into());
        self
    }
    /// toolhost's private state directory (where the CLI keeps the pins of trusted config and
    /// hook files, see [`crate::pins`]): protected from every tool, and a tool granted this
    /// directory, or one containing it, is refused at [`Runtime::load`]. Nothing is created or
    /// checked here.
    pub fn state_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.state_dir = Some(dir.into());
        self
    }
    /// Where the full text of cut results is saved.
    pub fn results_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.results_dir = Some(dir.into());
        self
    }
    /// Receive start, progress and finish events.
    pub fn events(mut self, sink: EventSink) -> Self {
        self.events = Some(sink);
        self
    }

    /// The permission mode (default: the config's `[permissions] mode`, else `default`).
    pub fn permission_mode(mut self, mode: Mode) -> Self {
        self.mode = Some(mode);
        self
    }
    /// Allow calls matching `rule`, on top of the config's rules.
    pub fn allow_rule(mut self, rule: Rule) -> Self {
        self.extra_rules.allow.push(rule);
        self
    }
    /// Ask before calls matching `rule`, on top of the config's rules.
    pub fn ask_rule(mut self, rule: Rule) -> Self {
        self.extra_rules.ask.push(rule);
        self
    }
    /// Deny calls matching `rule`, on top of the config's rules.
    pub fn deny_rule(mut self, rule: Rule) -> Self {
        self.extra_rules.deny.push(rule);
        self
    }
    /// Run these Rust hooks beside the config's command hooks (repeatable).
    pub fn hooks(mut self, hooks: Arc<dyn Hooks>) -> Self {
        self.hooks.push(hooks);
        self
    }
    /// Who answers `ask` decisions. Without one, an ask is a denial whose message names the
    /// rule that would allow the call.
    pub fn decider(mut self, decider: Arc<dyn PermissionDecider>) -> Self {
        self.decider = Some(decider);
        self
    }

    /// Build the runtime.
    ///
    /// # Errors
    ///
    /// [`Error::Workspace`] if the workspace does not exist; [`Error::Engine`] if the engine
    /// cannot be built; [`Error::Config`] if a `[tls] ca_files` entry is unreadable or holds
    /// no certificate, or ([`SettingError::Hook`]) if what a hook runs cannot be protected
    /// from tools (its command cannot be analysed, it runs a file at the workspace root).
    pub fn build(self) -> Result<Runtime> {
        let ws = self.workspace.unwrap_or_else(|| PathBuf::from("."));
        let workspace = ws
            .canonicalize()
            .map_err(|e| Error::Workspace { path: ws.clone(), cause: WorkspaceError::Unresolvable(e) })?;
        if !workspace.is_dir() {
            return Err(Error::Workspace { path: ws, cause: WorkspaceError::NotADirectory });
        }
        let engine = match self.engine {
            Some(e) => e,
            None => {
                // Pool slots are sized for the largest wasm32 memory (4 GiB, the default), so any
                // configured memory limit fits; only fuel metering depends on the config.
                let fuel = self.config.global_limits().fuel.is_some()
                    || self.config.tools.keys().any(|t| self.config.limits_for(t).fuel.is_some());
                let pooling = self.pooling.unwrap_or(true);
                ToolEngine::new(&EngineOptions::default().fuel(fuel).pooling(pooling))?
            }
        };
        let workspace_json: Arc<str> =
            Arc::from(serde_json::to_string(&workspace.display().to_string()).unwrap_or_else(|_| "null".into()));
        let results_dir = self.results_dir.unwrap_or_else(|| workspace.join(".toolhost").join("results"));
        let max_concurrency = self.max_concurrency.unwrap_or(self.config.global_limits().max_concurrency);
        if max_concurrency < 1 {
            return Err(Error::Config(SettingError::ZeroConcurrency));
        }
        let mut rules = self.config.permissions.rules();
        rules.allow.extend(self.extra_rules.allow);
        rules.ask.extend(self.extra_rules.ask);
        rules.deny.extend(self.extra_rules.deny);
        let cache = self.cache_dir.as_deref().and_then(Cache::open_or_warn);
        // Real path when it exists, so that grants (compared by real path) meet it.
        let state_dir = self.state_dir.map(|d| real_or_as_is(&d));
        let mut protected = self.protected;
        if let Some(dir) = &state_dir {
            protected.push((dir.clone(), "toolhost's private state (pins of trusted files)".into()));
        }
        let fs_policy = base_policy(&workspace, &results_dir, cache.as_ref(), &self.config, &rules, &protected)?;
        let permissions = Permissions {
            mode: self.mode.unwrap_or_else(|| self.config.permissions.mode()),
            rules,
            ..Permissions::default()
        };
        let max_context_bytes = self.config.global_limits().max_context_bytes;
        let command_hooks = CommandHooks::from_config(&self.config.hooks, workspace.clone());
        let mut extra_roots = Vec::new();
        for file in self.config.tls.ca_files() {
            let pem = std::fs::read(&file)
                .map_err(|error| Error::Config(SettingError::CaFileUnreadable { path: file.clone(), error }))?;
            extra_roots.push((file.display().to_string(), pem));
        }
        let tls = crate::http::tls_config(&extra_roots).map_err(|e| Error::Config(SettingError::CaFileInvalid(e)))?;
        Ok(Runtime {
            tls,
            engine,
            permissions,
            command_hooks,
            hooks: self.hooks,
            decider: self.decider,
            session_id: format!("toolhost-{}-{}", std::process::id(), next_runtime_number()),
            spill: SpillDir::new(&results_dir, &workspace),
            workspace,
            workspace_json,
            config: self.config,
            default_grant: self.default_grant.unwrap_or_else(Grant::workspace_read_write),
            env: self.env,
            cache,
            state_dir,
            fs_policy: Arc::new(fs_policy),
            events: self.events,
            scheduler: self.scheduler.unwrap_or_else(|| Scheduler::new(max_concurrency)),
            max_concurrency,
            max_context_bytes,
            tools: BTreeMap::new(),
        })
    }
}

/// Loaded tools plus everything needed to call them. Share it behind an `Arc` to call from
/// many tasks.
pub struct Runtime {
    pub(crate) engine: ToolEngine,
    pub(crate) workspace: PathBuf,
    pub(crate) workspace_json: Arc<str>,
    config: Config,
    default_grant: Grant,
    pub(crate) env: BTreeMap<String, String>,
    /// The compile cache, when one was set and passed its checks.
    cache: Option<Cache>,
    /// toolhost's private state directory, when one was set (no grant may reach it).
    state_dir: Option<PathBuf>,
    /// Protected paths, files asked before writing and path deny rules, enforced inside the
    /// sandbox for every tool (`fsguard/`).
    pub(crate) fs_policy: Arc<PathPolicy>,
    /// Writes saved results there without following planted links.
    pub(crate) spill: SpillDir,
    pub(crate) events: Option<EventSink>,
    pub(crate) max_concurrency: usize,
    /// Where calls take turns (`max_concurrency` safe calls at once, others alone).
    pub(crate) scheduler: Arc<Scheduler>,
    /// The bound of each session's context (`limits.max_context_bytes`).
    pub(crate) max_context_bytes: usize,
    pub(crate) tools: BTreeMap<String, Arc<LoadedTool>>,
    pub(crate) permissions: Permissions,
    pub(crate) command_hooks: CommandHooks,
    pub(crate) hooks: Vec<Arc<dyn Hooks>>,
    pub(crate) decider: Option<Arc<dyn PermissionDecider>>,
    /// Hooks' `session_id`: one per runtime.
    pub(crate) session_id: String,
    /// The TLS settings of the tools' HTTPS requests (roots: Mozilla's and `[tls] ca_files`).
    pub(crate) tls: Arc<rustls::ClientConfig>,
}

/// A number per runtime built in this process, for session ids.
fn next_runtime_number() -> u64 {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
    NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
}

impl std::fmt::Debug for Runtime {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Runtime").field("workspace", &self.workspace).field("tools", &self.tools.keys()).finish()
    }
}

impl Runtime {
    /// Start building a runtime.
    pub fn builder() -> RuntimeBuilder {
        RuntimeBuilder::default()
    }

    /// The canonical workspace path.
    pub fn workspace(&self) -> &Path {
        &self.workspace
    }

    /// The most calls of a parallel batch that run at once (`limits.max_concurrency`, or the
    /// builder's value).
    pub fn max_concurrency(&self) -> usize {
        self.max_concurrency
    }

    /// The queue this runtime's calls take turns in: take a [`crate::Ticket`] when a call
    /// arrives, to run it later with [`Runtime::call_admitted`] in arrival order.
    pub fn scheduler(&self) -> &Arc<Scheduler> {
        &self.scheduler
    }

    /// The permission mode in force.
    pub fn permission_mode(&self) -> Mode {
        self.permissions.mode
    }

    /// The engine (to share with another runtime).
    pub fn engine(&self) -> &ToolEngine {
        &self.engine
    }

    /// Where compiled components are cached (the canonical path), if anywhere: `None` when no
    /// cache directory was set or the one set was refused.
    pub fn cache_dir(&self) -> Option<&Path> {
        self.cache.as_ref().map(Cache::dir)
    }

    /// The loaded tools, by name.
    pub fn tools(&self) -> impl Iterator<Item = &LoadedTool> {
        self.tools.values().map(Arc::as_ref)
    }

    /// One loaded tool.
    pub fn tool(&self, name: &str) -> Option<&LoadedTool> {
        self.tools.get(name).map(Arc::as_ref)
    }

    /// Load a tool and register it under the name its schema gives. Its grant is the config's
    /// `[tools.NAME].grant`, or the default grant; its limits come from the config.
    ///
    /// Before anything is done with the bytes, their sha256 is checked against the source's pin
    /// and the config's `[tools.NAME] sha256` when the name is known (an embedded tool, a
    /// source [`with_name`](ToolSource::with_name)); a tool whose name comes only from its own
    /// schema is checked against a pin for that name after `schema` ran (with no capabilities).
    /// `schema` runs under `limits.load_timeout_ms` (default 5 s), once per component digest
    /// and toolhost build: its answer, or its failure, is kept with the compiled code.
    ///
    /// # Errors
    ///
    /// [`Error::Load`] with a message naming the source for bytes that are not a tool of this
    /// world, a failing `schema` export, a bad schema, a sha256 mismatch, a name other than
    /// the one required, or a name the config gives to another file;
    /// [`Error::Duplicate`] if the name is taken (the loaded tool stays).
    pub async fn load(&mut self, source: ToolSource) -> Result<String> {
        let prepared = self.prepare(&source).await?;
        self.register(source, prepared)
    }

    /// Load the tool set of a config in one step, as `toolhost` does: `defaults` (e.g. the
    /// embedded default tools) except those the config replaces (a `[tools.NAME]` with `path`
    /// or `source` owns NAME), then each `[tools.NAME] path` of the config (named by its key and
    /// pinned by its `sha256`, both checked before the bytes run), then `others` (installed
    /// tools, a tools directory's files; an `Err` is reported as it is), all prepared in
    /// parallel ([`Runtime::load_all`]). Returns one error per tool that did not load; the rest
    /// are loaded whatever failed.
    pub async fn load_configured(&mut self, defaults: Vec<ToolSource>, others: Vec<Result<ToolSource>>) -> Vec<Error> {
        let mut errors = Vec::new();
        let replaced = |name: &str| self.config.tools.get(name).is_some_and(|t| t.path.is_some() || t.source.is_some());
        let mut sources: Vec<ToolSource> =
            defaults.into_iter().filter(|s| !s.known_name().is_some_and(replaced)).collect();
        for (name, tool) in &self.config.tools {
            let Some(path) = &tool.path else { continue };
            match ToolSource::file(path.get_ref()) {
                Ok(source) => sources.push(match &tool.sha256 {
                    Some(pin) => source.with_name(name.clone()).with_sha256(pin.get_ref().clone()),
                    None => source.with_name(name.clone()),
                }),
                Err(e) => errors.push(e),
            }
        }
        for other in others {
            match other {
                Ok(source) => sources.push(source),
                Err(e) => errors.push(e),
            }
        }
        errors.extend(self.load_all(sources).await.into_iter().filter_map(Result::err));
        errors
    }

    /// Load many tools at once: compiled and described in parallel (so a tool that hangs at
    /// load delays the others by nothing but its own deadline), then registered in the order
    /// given, as [`Runtime::load`] would one by one. One result per source, in order.
    pub async fn load_all(&mut self, sources: Vec<ToolSource>) -> Vec<Result<String>> {
        let prepared = {
            let this = &*self;
            futures::future::join_all(sources.iter().map(|s| this.prepare(s))).await
        };
        sources
            .into_iter()
            .zip(prepared)
            .map(|(source, prepared)| prepared.and_then(|p| self.register(source, p)))
            .collect()
    }

    /// Check the bytes (and pins) before anything else, compile and describe.
    async fn prepare(&self, source: &ToolSource) -> Result<Prepared> {
        let known = source.known_name();
        let config_pin = known.and_then(|n| self.config.tools.get(n)).and_then(|t| t.sha256.as_ref());
        if let (Some(pin), Some(want)) = (config_pin, &source.expected_sha256)
            && !pin.get_ref().eq_ignore_ascii_case(want)
        {
            return Err(source.err(LoadError::PinsDisagree { config: pin.get_ref().clone(), given: want.clone() }));
        }
        let pin = source.expected_sha256.as_deref().or(config_pin.map(|p| p.get_ref().as_str()));
        let sha256 = loader::check_bytes(source, pin)?;
        let code = loader::Code::new(source, sha256, self.cache.as_ref());
        let limits = match known {
            Some(name) => self.config.limits_for(name),
            None => self.config.global_limits(),
        };
        let (info, validator) = loader::describe(&self.engine, &code, source, &limits, self.cache.as_ref()).await?;
        Ok(Prepared { code, info, validator })
    }

    /// Check a prepared tool against the config and the tools already loaded, and register it.
    fn register(&mut self, source: ToolSource, prepared: Prepared) -> Result<String> {
        let Prepared { code, mut info, validator } = prepared;
        if let Some(name) = &source.rename {
            info.name = name.clone();
        }
        let name = info.name.clone();
        let load_error = |cause: LoadError| Error::Load { origin: source.origin.to_string(), cause };
        let config_error = |e: toolhost_policy::ConfigError| load_error(LoadError::Config(Arc::new(e)));
        if let Some(expected) = &source.expected_name
            && *expected != name
        {
            let message = format!("the file declares a tool named {name:?}, not {expected:?}; not loaded");
            return Err(config_error(self.config.tool_error(expected, &message)));
        }
        // A `[tools.NAME]` with a path owns NAME (and its grant): no other file takes it over,
        // whether or not that path loaded.
        if let Some(path) = self.config.tools.get(&name).and_then(|t| t.path.as_ref()) {
            let same =
                |a: &Path, b: &Path| a.canonicalize().ok().is_some_and(|a| b.canonicalize().is_ok_and(|b| a == b));
            let is_that_file = matches!(&source.origin, Origin::File(file) if same(file, path.get_ref()));
            if !is_that_file {
                let message = format!(
                    "{} declares the tool name {name:?}, which [tools.{name}] gives to {}; not loaded (rename one of them)",
                    source.origin,
                    path.get_ref().display()
                );
                return Err(config_error(self.config.tool_error(&name, &message)));
            }
        }
        // Likewise a `[tools.NAME] source` (an installed tool, loaded renamed to NAME): no
        // other component takes NAME and its grant, even when the installed one failed to load.
        if let Some(installed) = self.config.tools.get(&name).and_then(|t| t.source.as_ref())
            && source.rename.as_deref() != Some(name.as_str())
        {
            let message = format!(
                "{} declares the tool name {name:?}, which [tools.{name}] gives to {}; not loaded (rename one of them)",
                source.origin,
                installed.get_ref()
            );
            return Err(config_error(self.config.tool_error(&name, &message)));
        }
        if let Some(existing) = self.tools.get(&name) {
            return Err(Error::Duplicate {
                origin: source.origin.to_string(),
                name,
                existing: existing.origin.to_string(),
            });
        }
        // `read-only` is a promise the host keeps for the tool (MCP's readOnlyHint, plan mode,
        // no asks in default mode): a tool cannot both make it and ask to write.
        if info.read_only
            && let Some(Capability::FsWrite(dir)) =
                info.capabilities.iter().find(|c| matches!(c, Capability::FsWrite(_)))
        {
            return Err(load_error(LoadError::ReadOnlyWrites { name, dir: dir.clone() }));
        }
        if let Some(check) = &source.declaration_check
            && let Err(why) = check.check(&info)
        {
            return Err(load_error(LoadError::Source(why.into())));
        }
        let tool_config = self.config.tools.get(&name);
        if let Some(pin) = tool_config.and_then(|t| t.sha256.as_ref())
            && !pin.get_ref().eq_ignore_ascii_case(code.sha256())
        {
            return Err(load_error(LoadError::Sha256Mismatch {
                tool: Some(name),
                expected: pin.get_ref().clone(),
                actual: code.sha256().to_string(),
            }));
        }
        // An explicit grant beyond the ceiling is a config mistake, not something to trim
        // silently: the operator believes the tool has what it cannot get.
        if let Some(grant) = tool_config.and_then(|t| t.grant()) {
            if let Some(message) = grant.pattern_errors().first() {
                return Err(config_error(self.config.tool_error(&name, &format!("grant.{message}"))));
            }
            let excess = grant_excess(&info.capabilities, grant, &self.workspace);
            if !excess.is_empty() {
                return Err(config_error(self.config.grant_error(&name, &excess)));
            }
        }
        let (grant, grant_from) = match tool_config.and_then(|t| t.grant()) {
            Some(grant) => (grant.clone(), GrantFrom::Config),
            None => (self.default_grant.clone(), GrantFrom::Default),
        };
        let mut effective = effective_grant(&info.capabilities, &grant, &self.workspace);
        effective.allow_private_network = tool_config.is_some_and(|t| t.allow_private_network);
        if info.read_only {
            effective = effective.read_only();
        }
        // A granted directory that does not exist cannot be opened: it is not granted, and the
        // tool's warnings say so (`list`, `list --json`), not only a log line.
        let mut missing = Vec::new();
        effective.dirs.retain(|d| {
            let ok = d.path.is_dir();
            if !ok {
                tracing::warn!("tool {name}: granted directory {} does not exist; not granted", d.path.display());
                missing.push(format!("the granted directory {} does not exist: not granted", d.path.display()));
            }
            ok
        });
        let preopens = pin_dirs(&effective.dirs, &grant, &info.capabilities, &self.workspace)
            .map_err(|m| load_error(LoadError::Grant { name: name.clone(), message: m.into() }))?;
        let real_dirs: Vec<DirGrant> =
            preopens.iter().map(|p| DirGrant { path: p.host.clone(), writable: p.writable }).collect();
        if let Some(message) =
            self.cache.as_ref().and_then(|c| c.grant_overlap(&effective.dirs).or_else(|| c.grant_overlap(&real_dirs)))
        {
            return Err(load_error(LoadError::Grant { name, message: message.into() }));
        }
        if let Some(message) = self.state_dir.as_deref().and_then(|dir| {
            let (what, fix) = (
                "toolhost's private state (the pins that decide which config and hook files run unasked)",
                "set TOOLHOST_STATE_DIR to a directory outside every grant, or narrow the grant",
            );
            crate::cache::grant_overlap(dir, what, fix, &effective.dirs)
                .or_else(|| crate::cache::grant_overlap(dir, what, fix, &real_dirs))
        }) {
            return Err(load_error(LoadError::Grant { name, message: message.into() }));
        }
        let subject_is_path = info
            .permission_subject
            .as_deref()
            .is_some_and(|p| matches!(toolhost_policy::SubjectKind::infer(p, ""), toolhost_policy::SubjectKind::Path));
        let own_rules: Vec<Rule> = self
            .permissions
            .rules
            .deny
            .iter()
            .filter(|r| r.tool == name && r.pattern.is_some() && !FS_RULE_TOOLS.contains(&r.tool.as_str()))
            .cloned()
            .collect();
        let own_policy = (!own_rules.is_empty() && subject_is_path).then(|| {
            let mut p = PathPolicy::new(&self.workspace);
            p.deny_rules(&own_rules, &name, true);
            Arc::new(p)
        });
        let check_reads = own_policy.is_some() || self.fs_policy.refuses_reads();
        if let Origin::File(path) = &source.origin
            && let Ok(real) = path.canonicalize()
        {
            Arc::make_mut(&mut self.fs_policy).protect(real, format!("the file of tool {name}"), false);
        }
        let limits = self.config.limits_for(&name);
        let grant_inside_workspace =
            effective.net.is_empty() && effective.dirs.iter().all(|d| d.path.starts_with(&self.workspace));
        let mut warnings = toolhost_policy::grant_warnings(&effective, &self.workspace);
        warnings.extend(missing);
        warnings.extend(
            self.protected_hook_paths().iter().filter_map(|s| toolhost_policy::hook_script_warning(&effective, s)),
        );
        let context_namespace: Arc<str> =
            Arc::from(source.context_namespace.clone().unwrap_or_else(|| crate::session::tool_namespace(&name)));
        let tool = LoadedTool {
            context_namespace,
            warnings,
            grant_inside_workspace,
            info,
            origin: source.origin.clone(),
            sha256: code.sha256().to_string(),
            size: source.bytes.len(),
            grant,
            grant_from,
            effective_read_only: effective.read_only(),
            net_patterns: crate::net::compile_patterns(&effective.net),
            effective,
            limits,
            validator,
            preopens: preopens.into(),
            own_policy,
            check_reads,
            code,
            pure_pool: Default::default(),
        };
        self.tools.insert(name.clone(), Arc::new(tool));
        Ok(name)
    }
}

impl Runtime {
    /// The paths protected for the config's hooks (checked when the runtime was built).
    fn protected_hook_paths(&self) -> Vec<PathBuf> {
        hook_paths(&self.config, &self.workspace).unwrap_or_default()
    }
}

/// The paths to protect so that no tool changes what a hook runs: the directories of the files
/// each hook command runs, or the files its `files` key lists (see
/// [`toolhost_policy::hook_protected_paths`]).
///
/// `~` and `$HOME` are this process's `HOME`: hooks inherit this process's environment, so that
/// is what they stand for when a hook runs.
fn hook_paths(config: &Config, workspace: &Path) -> Result<Vec<PathBuf>> {
    let home = std::env::var_os("HOME").filter(|h| !h.is_empty()).map(PathBuf::from);
    let mut paths = Vec::new();
    for hook in config.hooks.all() {
        let protected = toolhost_policy::hook_protected_paths(hook, workspace, home.as_deref())
            .map_err(|e| Error::Config(SettingError::Hook(e)))?;
        paths.extend(protected);
    }
    Ok(paths)
}

/// Tools whose path deny rules apply to every tool inside the sandbox (as in Claude Code,
/// `Read(…)` covers every read and `Edit(…)`/`Write(…)` every write).
const FS_RULE_TOOLS: &[&str] = &["Read", "Edit", "Write"];

/// The filesystem rules every tool of a runtime shares: what the host itself depends on
/// (`.toolhost/` or the results directory, the compile cache, hook scripts, `[tls] ca_files`,
/// what the embedder protects), the files other programs run (asked before writing, in every
/// mode), and the path deny rules of `Read`, `Edit` and `Write`.
fn base_policy(
    workspace: &Path,
    results_dir: &Path,
    cache: Option<&Cache>,
    config: &Config,
    rules: &Rules,
    protected: &[(PathBuf, String)],
) -> Result<PathPolicy> {
    let mut policy = PathPolicy::new(workspace);
    let state_dir = match results_dir.parent() {
        Some(parent) if parent.file_name().is_some_and(|n| n == ".toolhost") => parent.to_path_buf(),
        _ => results_dir.to_path_buf(),
    };
    policy.protect(state_dir, "toolhost's own state (saved results)", false);
    if let Some(cache) = cache {
        // Not hidden from reads: no grant may reach it at all (refused at load), and hiding
        // would make every read of every call pay for a check.
        policy.protect(cache.dir().to_path_buf(), "toolhost's compile cache", false);
    }
    for path in hook_paths(config, workspace)? {
        policy.protect(path, "a hook script or its directory (hooks run unsandboxed)", false);
    }
    for file in config.tls.ca_files() {
        policy.protect(real_or_as_is(&file), "a certificate authority the tools' HTTPS trusts", false);
    }
    for (path, what) in protected {
        policy.protect(real_or_as_is(&resolve_in(path, workspace)), what.clone(), false);
    }
    // The defaults mean the same file in every directory (a grant of `~` reaches
    // `~/.bashrc`); the operator's own patterns are workspace-relative unless absolute.
    policy.ask_before_writing_anywhere(toolhost_policy::DEFAULT_ASK_BEFORE_WRITING).map_err(|error| {
        Error::Config(SettingError::Pattern { setting: "the default ask-before-writing patterns", error })
    })?;
    let asked: Vec<&str> = config.permissions.protected();
    policy
        .ask_before_writing(&asked)
        .map_err(|error| Error::Config(SettingError::Pattern { setting: "permissions.protected", error }))?;
    let fs_rules: Vec<Rule> = rules
        .deny
        .iter()
        .filter(|r| FS_RULE_TOOLS.contains(&r.tool.as_str()) && r.pattern.is_some())
        .cloned()
        .collect();
    policy.deny_rules(&fs_rules, "", false);
    Ok(policy)
}

/// A path's real path when it exists (links resolved), else the path itself.
fn real_or_as_is(path: &Path) -> PathBuf {
    path.canonicalize().unwrap_or_else(|_| path.to_path_buf())
}

/// `path`, relative to `workspace` unless absolute.
fn resolve_in(path: &Path, workspace: &Path) -> PathBuf {
    if path.is_absolute() { path.to_path_buf() } else { workspace.join(path) }
}
