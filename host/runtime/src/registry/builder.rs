//! Building a runtime: settings in, a [`Runtime`] with its engine, shared file policy, hooks,
//! TLS settings and scheduler out.

use super::Runtime;
use crate::call::permission::{PermissionDecider, Permissions};
use crate::call::spill::SpillDir;
use crate::error::{Error, Result, SettingError, WorkspaceError};
use crate::event::EventSink;
use crate::hooks::{CommandHooks, HookSet, Hooks};
use crate::loading::cache::Cache;
use crate::loading::engine::{EngineOptions, ToolEngine};
use crate::turns::schedule::Scheduler;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use toolhost_policy::{Config, Grant, HostPaths, Mode, Rule, SharedPolicyError, real_or_as_is};

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
    /// `Some(false)`: the engine `build` makes compiles with Cranelift only.
    tiering: Option<bool>,
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
    /// Whether the engine `build` makes (when none is given) compiles tools tiered (default:
    /// yes; see [`EngineOptions::tiering`]).
    pub fn tiering(mut self, tiering: bool) -> Self {
        self.tiering = Some(tiering);
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
    /// `key` file (the MAC key authenticating every entry, made on first use) is not private.
    /// Tools granted this directory, or one containing it, are refused at [`Runtime::load`].
    pub fn cache_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.cache_dir = Some(dir.into());
        self
    }
    /// toolhost's private state directory (where the CLI keeps the pins of trusted config and
    /// hook files, see the `toolhost-trust` crate): protected from every tool, and a tool granted this
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
                let tiering = self.tiering.unwrap_or(true);
                ToolEngine::new(&EngineOptions::default().fuel(fuel).pooling(pooling).tiering(tiering))?
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
        // `~` and `$HOME` in hook commands are this process's `HOME`: hooks inherit this
        // process's environment, so that is what they stand for when a hook runs.
        let home = std::env::var_os("HOME").filter(|h| !h.is_empty()).map(PathBuf::from);
        let paths = HostPaths {
            workspace: &workspace,
            results_dir: &results_dir,
            cache_dir: cache.as_ref().map(Cache::dir),
            home: home.as_deref(),
            protected: &protected,
        };
        let fs_policy = toolhost_policy::shared_policy(&self.config, &rules, &paths).map_err(|e| match e {
            SharedPolicyError::Pattern { setting, error } => Error::Config(SettingError::Pattern { setting, error }),
            SharedPolicyError::Hook(e) => Error::Config(SettingError::Hook(e)),
        })?;
        let hook_paths = toolhost_policy::hook_paths(&self.config, &workspace, home.as_deref())
            .map_err(|e| Error::Config(SettingError::Hook(e)))?;
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
        let tls = crate::sandbox::http::tls_config(&extra_roots)
            .map_err(|e| Error::Config(SettingError::CaFileInvalid(e)))?;
        let default_grant =
            self.default_grant.unwrap_or_else(|| Grant::workspace_and(&self.config.permissions.additional_directories));
        let session_id = format!("toolhost-{}-{}", std::process::id(), next_runtime_number());
        Ok(Runtime {
            tls,
            engine,
            hooks: HookSet::new(
                command_hooks,
                self.hooks,
                session_id.clone(),
                &workspace,
                crate::call::permission::claude_mode_name(permissions.mode),
                self.events.clone(),
            ),
            permissions,
            decider: self.decider,
            session_id,
            spill: SpillDir::new(&results_dir, &workspace),
            workspace,
            workspace_json,
            config: self.config,
            default_grant,
            env: self.env,
            cache,
            state_dir,
            hook_paths,
            fs_policy: Arc::new(fs_policy),
            events: self.events,
            scheduler: self.scheduler.unwrap_or_else(|| Scheduler::new(max_concurrency)),
            max_concurrency,
            max_context_bytes,
            pool: Default::default(),
        })
    }
}

/// A number per runtime built in this process, for session ids.
fn next_runtime_number() -> u64 {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
    NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
}
