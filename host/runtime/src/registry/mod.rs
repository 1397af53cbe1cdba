//! The runtime: an engine, a workspace, the operator's policy, and the registry of loaded
//! tools (name → compiled `InstancePre`, compiled schema, effective grant, limits).
//!
//! Split by concern: [`builder`] turns settings into a runtime; [`load`] checks a component
//! against the config and the tools already loaded and registers it; [`grant`] decides what a
//! tool gets (a function of the config, the tool's ceiling and the runtime's paths only).

mod builder;
mod grant;
mod load;
pub(crate) mod pool;
mod remote_tools;

pub use builder::RuntimeBuilder;

use crate::call::permission::{PermissionDecider, Permissions};
use crate::call::spill::SpillDir;
use crate::event::EventSink;
use crate::loading::cache::Cache;
use crate::loading::engine::ToolEngine;
use crate::loading::loader::{self, ToolInfo};
use crate::loading::source::Origin;
use crate::sandbox::fsguard::Preopen;
use crate::turns::schedule::Scheduler;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use toolhost_policy::{Config, EffectiveGrant, Grant, Limits, Mode, PathPolicy};

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
    /// The policy file beside its `.wasm` file, if there is one (its grant is the tool's
    /// unless the config gives one).
    pub policy_file: Option<PathBuf>,
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
    /// For a kind that cannot say (a function, a command program): whether its calls may
    /// overlap (`[tools.NAME] concurrency_safe`, default false).
    pub(crate) concurrency_safe: bool,
    /// Where its context keys live: its own namespace, or the embedded tools' shared one.
    pub(crate) context_namespace: Arc<str>,
    pub(crate) code: Arc<loader::Code>,
    pub(crate) pure_pool: crate::invoke::PurePool,
    /// For an MCP server's tool: the server that makes its calls.
    pub(crate) remote: Option<Arc<dyn crate::call::remote::RemoteServer>>,
}

impl LoadedTool {
    /// For a function component or a command program: whether the config lets its calls
    /// overlap (`[tools.NAME] concurrency_safe`). A toolhost tool answers per call instead.
    pub fn concurrency_safe(&self) -> bool {
        self.concurrency_safe
    }

    /// The context namespace its keys live in (see [`crate::Session::get`]).
    pub fn context_namespace(&self) -> &str {
        &self.context_namespace
    }

    /// The tier of the code its calls run now: `None` until its code is made ready (at its
    /// first call, or by [`Runtime::ready_code`]).
    pub fn tier(&self) -> Option<crate::Tier> {
        self.code.tier()
    }
}

/// Where a tool's grant came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum GrantFrom {
    /// Its `[tools.NAME] grant` in the config.
    Config,
    /// The runtime's default grant (`RuntimeBuilder::default_grant`; read-write workspace).
    Default,
    /// The policy file beside the component (`NAME.policy.yaml`).
    PolicyFile,
    /// Nothing: a function component or command program with no grant and no policy file
    /// (having no ceiling, it never gets the default grant).
    Nothing,
}

impl std::fmt::Display for GrantFrom {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            GrantFrom::Config => "config",
            GrantFrom::Default => "default",
            GrantFrom::PolicyFile => "policy file",
            GrantFrom::Nothing => "none",
        })
    }
}

impl std::fmt::Debug for LoadedTool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LoadedTool").field("name", &self.info.name).field("origin", &self.origin).finish()
    }
}

/// Loaded tools plus everything needed to call them. Share it behind an `Arc` to call from
/// many tasks.
pub struct Runtime {
    pub(crate) engine: ToolEngine,
    pub(crate) workspace: PathBuf,
    pub(crate) workspace_json: Arc<str>,
    pub(crate) config: Config,
    default_grant: Grant,
    pub(crate) env: BTreeMap<String, String>,
    /// The compile cache, when one was set and passed its checks.
    cache: Option<Cache>,
    /// toolhost's private state directory, when one was set (no grant may reach it).
    state_dir: Option<PathBuf>,
    /// What the config's hooks run, protected from every tool (computed once, at build).
    hook_paths: Vec<PathBuf>,
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
    /// What a name calls: components and MCP servers' tools ([`Runtime::set_remote_tools`]).
    pub(crate) pool: pool::Pool,
    pub(crate) permissions: Permissions,
    /// Command hooks and the embedder's, with what their input says of this runtime.
    pub(crate) hooks: crate::hooks::HookSet,
    pub(crate) decider: Option<Arc<dyn PermissionDecider>>,
    /// Hooks' `session_id`: one per runtime.
    pub(crate) session_id: String,
    /// The TLS settings of the tools' HTTPS requests (roots: Mozilla's and `[tls] ca_files`).
    pub(crate) tls: Arc<rustls::ClientConfig>,
}

impl std::fmt::Debug for Runtime {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Runtime")
            .field("workspace", &self.workspace)
            .field("tools", &self.pool.component_names().collect::<Vec<_>>())
            .finish()
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

    /// Who answers questions when a call brings no decider of its own (the builder's), if
    /// anyone: e.g. the person at the terminal, whom an MCP server's own questions may reach too.
    pub fn decider(&self) -> Option<Arc<dyn PermissionDecider>> {
        self.decider.clone()
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

    /// Whether any hook is configured for the event of `event`.
    pub fn has_session_hooks(&self, event: &crate::SessionEvent) -> bool {
        self.hooks.has_session(event)
    }

    /// Run the command hooks of a session event, all at once, and combine their answers: a
    /// block (exit 2, or `decision: "block"`) with its reason, every context, a stop. A hook
    /// that fails is reported as an event and otherwise ignored.
    pub async fn session_hooks(&self, session_id: &str, event: &crate::SessionEvent) -> crate::SessionHooks {
        self.hooks.for_session(session_id, event).await
    }

    /// The `session_id` hooks are given: one per runtime.
    pub fn session_id(&self) -> &str {
        &self.session_id
    }

    /// The loaded tools, by name.
    pub fn tools(&self) -> impl Iterator<Item = &LoadedTool> {
        self.pool.components().map(Arc::as_ref)
    }

    /// The loaded tools a model may be offered: all but those a deny rule names as a whole
    /// (`deny = ["Write"]`), which, as in Claude Code, are not offered at all.
    /// MCP servers' tools are in it too ([`Runtime::set_remote_tools`]).
    pub fn offered_tools(&self) -> Vec<Arc<LoadedTool>> {
        let mut all: Vec<Arc<LoadedTool>> = self.pool.components().cloned().collect();
        all.extend(self.remote_tools());
        all.retain(|t| !self.denied_as_a_whole(&t.info.name));
        all
    }

    /// Whether a deny rule without a pattern names `tool` (its name, or its MCP server's).
    pub fn denied_as_a_whole(&self, tool: &str) -> bool {
        self.permissions.rules.deny.iter().any(|r| r.pattern.is_none() && r.names(tool))
    }

    /// One loaded tool.
    pub fn tool(&self, name: &str) -> Option<&LoadedTool> {
        self.pool.component(name).map(Arc::as_ref)
    }

    /// Where the named tool's code stands, without making it ready. `None` for an unknown tool.
    pub fn code_state(&self, name: &str) -> Option<crate::CodeState> {
        Some(self.pool.component(name)?.code.state(&self.engine, self.cache.as_ref()))
    }

    /// Make the named tool's code ready now instead of at its first call, and, with tiering,
    /// wait for its optimised code (what `toolhost compile` does, so that the compile cache
    /// holds it). `None` for an unknown tool.
    pub async fn ready_code(&self, name: &str) -> Option<std::result::Result<crate::Tier, crate::LoadError>> {
        let tool = self.pool.component(name)?;
        Some(match tool.code.get(&self.engine).await {
            Ok(code) if code.tier == crate::Tier::Baseline => {
                self.engine.optimized().await;
                tool.code.get(&self.engine).await.map(|c| c.tier)
            }
            Ok(code) => Ok(code.tier),
            Err(e) => Err(e),
        })
    }
}
