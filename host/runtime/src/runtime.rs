//! The runtime: an engine, a workspace, the operator's policy, and the registry of loaded
//! tools (name → compiled `InstancePre`, compiled schema, effective grant, limits).

use crate::bindings::PluginPre;
use crate::engine::{EngineOptions, ToolEngine};
use crate::error::{Error, Result};
use crate::event::EventSink;
use crate::hooks::{CommandHooks, Hooks};
use crate::loader::{self, Origin, ToolInfo, ToolSource};
use crate::permission::{PermissionDecider, Permissions};
use crate::state::HostState;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use toolhost_policy::{Config, EffectiveGrant, Grant, Limits, Mode, Rule, effective_grant, grant_excess};

/// A tool ready to be called.
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
    /// What it actually gets: ceiling ∩ grant.
    pub effective: EffectiveGrant,
    /// The same, read-only: what it gets inside a parallel batch.
    pub effective_read_only: EffectiveGrant,
    /// Its limits.
    pub limits: Limits,
    /// Whether everything it is granted lies inside the workspace (for the permission check of
    /// calls without a path subject).
    pub(crate) grant_inside_workspace: bool,
    pub(crate) validator: jsonschema::Validator,
    pub(crate) pre: PluginPre<HostState>,
    pub(crate) pure_pool: crate::invoke::PurePool,
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
    results_dir: Option<PathBuf>,
    events: Option<EventSink>,
    max_concurrency: Option<usize>,
    mode: Option<Mode>,
    extra_rules: toolhost_policy::Rules,
    hooks: Vec<Arc<dyn Hooks>>,
    decider: Option<Arc<dyn PermissionDecider>>,
}

impl RuntimeBuilder {
    /// Calls of a parallel batch that may run at once (default: the config's
    /// `limits.max_concurrency`, else 10). Must be at least 1.
    pub fn max_concurrency(mut self, n: usize) -> Self {
        self.max_concurrency = Some(n);
        self
    }
    /// Share an existing engine (one per process is best). Without one, `build` makes one
    /// sized for the config's limits.
    pub fn engine(mut self, engine: ToolEngine) -> Self {
        self.engine = Some(engine);
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
    /// Cache compiled components in this directory.
    pub fn cache_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.cache_dir = Some(dir.into());
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
    /// no certificate.
    pub fn build(self) -> Result<Runtime> {
        let ws = self.workspace.unwrap_or_else(|| PathBuf::from("."));
        let workspace = ws.canonicalize().map_err(|e| Error::Workspace { path: ws.clone(), message: e.to_string() })?;
        if !workspace.is_dir() {
            return Err(Error::Workspace { path: ws, message: "not a directory".into() });
        }
        let engine = match self.engine {
            Some(e) => e,
            None => {
                // Pool slots are sized for the largest wasm32 memory (4 GiB, the default), so any
                // configured memory limit fits; only fuel metering depends on the config.
                let fuel = self.config.limits_for("").fuel.is_some()
                    || self.config.tools.keys().any(|t| self.config.limits_for(t).fuel.is_some());
                ToolEngine::new(&EngineOptions { fuel, ..EngineOptions::default() })?
            }
        };
        let workspace_json: Arc<str> =
            Arc::from(serde_json::to_string(&workspace.display().to_string()).unwrap_or_else(|_| "null".into()));
        let results_dir = self.results_dir.unwrap_or_else(|| workspace.join(".toolhost").join("results"));
        let max_concurrency = self.max_concurrency.unwrap_or(self.config.limits_for("").max_concurrency);
        if max_concurrency < 1 {
            return Err(Error::Config("max_concurrency must be at least 1 (0 would run nothing)".into()));
        }
        let mut rules = self.config.permissions.rules();
        rules.allow.extend(self.extra_rules.allow);
        rules.ask.extend(self.extra_rules.ask);
        rules.deny.extend(self.extra_rules.deny);
        let permissions = Permissions {
            mode: self.mode.unwrap_or_else(|| self.config.permissions.mode()),
            rules,
            ..Permissions::default()
        };
        let command_hooks = CommandHooks::from_config(&self.config.hooks, workspace.clone());
        let mut extra_roots = Vec::new();
        for file in self.config.tls.ca_files() {
            let pem = std::fs::read(&file)
                .map_err(|e| Error::Config(format!("tls.ca_files: cannot read {}: {e}", file.display())))?;
            extra_roots.push((file.display().to_string(), pem));
        }
        let tls = crate::http::tls_config(&extra_roots).map_err(|e| Error::Config(format!("tls.ca_files: {e}")))?;
        Ok(Runtime {
            tls,
            engine,
            permissions,
            command_hooks,
            hooks: self.hooks,
            decider: self.decider,
            session_id: format!("toolhost-{}-{}", std::process::id(), next_runtime_number()),
            workspace,
            workspace_json,
            config: self.config,
            default_grant: self.default_grant.unwrap_or_else(Grant::workspace_read_write),
            env: self.env,
            cache_dir: self.cache_dir,
            results_dir,
            events: self.events,
            max_concurrency,
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
    cache_dir: Option<PathBuf>,
    pub(crate) results_dir: PathBuf,
    pub(crate) events: Option<EventSink>,
    pub(crate) max_concurrency: usize,
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

    /// The permission mode in force.
    pub fn permission_mode(&self) -> Mode {
        self.permissions.mode
    }

    /// The engine (to share with another runtime).
    pub fn engine(&self) -> &ToolEngine {
        &self.engine
    }

    /// Where compiled components are cached, if anywhere.
    pub fn cache_dir(&self) -> Option<&Path> {
        self.cache_dir.as_deref()
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
    /// # Errors
    ///
    /// [`Error::Load`] with a message naming the source for bytes that are not a tool of this
    /// world, a failing `schema` export, a bad schema or a sha256 mismatch;
    /// [`Error::Duplicate`] if the name is taken (the loaded tool stays).
    pub async fn load(&mut self, source: ToolSource) -> Result<String> {
        let compiled = loader::compile(&self.engine, &source, self.cache_dir.as_deref()).await?;
        let (info, validator) = loader::read_schema(&self.engine, &compiled, &source, &self.workspace).await?;
        let name = info.name.clone();
        if let Some(existing) = self.tools.get(&name) {
            return Err(Error::Duplicate {
                origin: source.origin.to_string(),
                name,
                existing: existing.origin.to_string(),
            });
        }
        let tool_config = self.config.tools.get(&name);
        if let Some(pin) = tool_config.and_then(|t| t.sha256.as_ref())
            && !pin.get_ref().eq_ignore_ascii_case(&compiled.sha256)
        {
            return Err(Error::Load {
                origin: source.origin.to_string(),
                message: format!(
                    "sha256 mismatch for tool {name}: the config pins {}, the file has {}; refusing to load it",
                    pin.get_ref(),
                    compiled.sha256
                ),
            });
        }
        // An explicit grant beyond the ceiling is a config mistake, not something to trim
        // silently: the operator believes the tool has what it cannot get.
        if let Some(grant) = tool_config.and_then(|t| t.grant()) {
            if let Some(message) = grant.pattern_errors().first() {
                return Err(Error::Load {
                    origin: source.origin.to_string(),
                    message: self.config.tool_error(&name, &format!("grant.{message}")).to_string(),
                });
            }
            let excess = grant_excess(&info.capabilities, grant, &self.workspace);
            if !excess.is_empty() {
                return Err(Error::Load {
                    origin: source.origin.to_string(),
                    message: self.config.grant_error(&name, &excess).to_string(),
                });
            }
        }
        let grant = tool_config.and_then(|t| t.grant().cloned()).unwrap_or_else(|| self.default_grant.clone());
        let mut effective = effective_grant(&info.capabilities, &grant, &self.workspace);
        effective.dirs.retain(|d| {
            let ok = d.path.is_dir();
            if !ok {
                tracing::warn!("tool {name}: granted directory {} does not exist; not granted", d.path.display());
            }
            ok
        });
        let limits = self.config.limits_for(&name);
        let grant_inside_workspace =
            effective.net.is_empty() && effective.dirs.iter().all(|d| d.path.starts_with(&self.workspace));
        let tool = LoadedTool {
            grant_inside_workspace,
            info,
            origin: source.origin.clone(),
            sha256: compiled.sha256,
            size: source.bytes.len(),
            grant,
            effective_read_only: effective.read_only(),
            effective,
            limits,
            validator,
            pre: compiled.pre,
            pure_pool: Default::default(),
        };
        self.tools.insert(name.clone(), Arc::new(tool));
        Ok(name)
    }
}
