//! `toolhost mcp`: every loaded tool as an MCP server, over stdio (default) or streamable HTTP
//! (`--http ADDR`, loopback only, every request authenticated with a bearer token: see
//! [`http`] and [`token`]). Calls go through the whole pipeline (schema, validate, hooks,
//! permissions, sandbox, limits); any failure is a result with `isError`, never a JSON-RPC
//! error. Asks go to the client through elicitation when it supports it, else are denials
//! naming the rule to add; "allow for this session" holds for that MCP session only. Calls of
//! every connection together run at most `max_concurrency` at once, in arrival order (the
//! runtime's [`toolhost::Scheduler`], kept across reloads); a session with [`server::MAX_QUEUED_PER_SESSION`] calls waiting gets a
//! JSON-RPC error for the next. A changed `--tools` directory or config file is reloaded and
//! the clients are sent `notifications/tools/list_changed`; a reload that would widen what
//! runs on the host (a hook added, a hook file changed, a rule removed: see `crate::pins`) is
//! refused with a warning and the loaded tools stay in service. stdout carries only the protocol;
//! logs go to stderr.

mod bounds;
mod fast;
mod http;
mod metrics;
mod pipes;
mod server;
pub mod stdio;
mod timeouts;
mod token;

pub use token::TOKEN_ENV;

use crate::setup::{self, GlobalArgs};
use anyhow::{Context, Result};
use clap::Args;
use server::{McpServer, Shared};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

#[derive(Args, Debug)]
pub struct McpCommand {
    /// Serve streamable HTTP on ADDR (HOST:PORT or PORT; loopback only, e.g. 127.0.0.1:8765)
    /// at the path /mcp, instead of stdio. Every request needs `Authorization: Bearer TOKEN`;
    /// the file holding the token is named on stderr at startup.
    #[arg(long, value_name = "ADDR")]
    http: Option<String>,
    /// With --http: the bearer token is in FILE (mode 0600, this user's), or is generated into
    /// a new FILE if there is none. Default: $TOOLHOST_MCP_TOKEN, else a new token at every
    /// start in $XDG_RUNTIME_DIR/toolhost/ (or the cache directory).
    #[arg(long, value_name = "FILE", requires = "http", conflicts_with = "no_auth")]
    token_file: Option<PathBuf>,
    /// With --http: also accept requests from web pages of ORIGIN (e.g. http://localhost:3000;
    /// repeatable). Pages of the server's own origin, and requests without an Origin, are
    /// always accepted.
    #[arg(long = "allow-origin", value_name = "ORIGIN", requires = "http")]
    allow_origin: Vec<String>,
    /// With --http: accept requests without the bearer token. Any program on this machine can
    /// then call the tools.
    #[arg(long, requires = "http")]
    no_auth: bool,
    /// With --http: serve /metrics without the bearer token (for a scraper that cannot send
    /// one). /healthz and /readyz never need it.
    #[arg(long, requires = "http")]
    metrics_no_auth: bool,
    /// With --http: after SIGTERM, keep serving this long (while /readyz answers 503, so a
    /// load balancer moves traffic away), then stop accepting connections and exit once every
    /// call in flight has been answered.
    #[arg(long, value_name = "MS", default_value_t = 2000, requires = "http")]
    drain_grace_ms: u64,
    /// With --http: also accept requests whose `Host` is HOST (HOST:PORT, or HOST for any
    /// port; repeatable), e.g. a load balancer's or a service's name. The bound address and
    /// localhost are always accepted.
    #[arg(long = "allow-host", value_name = "HOST", requires = "http")]
    allow_host: Vec<String>,
    /// With --http: listen on an address beyond loopback (e.g. 0.0.0.0:8765 in a container or
    /// a pod). The bearer token is then required (no --no-auth) and crosses the network in
    /// clear unless a TLS proxy or a private network carries it.
    #[arg(long, requires = "http")]
    allow_remote: bool,
    /// With --http: serve without MCP sessions (as the specification allows, and as its next
    /// version requires): each request stands alone, answered as one JSON body when it can be.
    /// Nothing is kept between calls: no "allow for this session", no Read before Edit across
    /// calls, no context map. For clients that call tools and need nothing else; any replica
    /// can then answer any request.
    #[arg(long, requires = "http")]
    stateless: bool,
}

/// How often the tools directories and the config file are checked for changes.
const POLL: Duration = Duration::from_secs(1);

impl McpCommand {
    pub async fn execute(self, global: &GlobalArgs) -> Result<u8> {
        let metrics = Arc::new(metrics::Metrics::new());
        let events = server::event_sink(metrics.clone());
        let mut global = global.clone();
        if let Some(path) = &self.token_file {
            // A tool that could write it would choose the next start's token.
            global.protect.push((path.clone(), "the MCP bearer token file".into()));
        }
        // Each call's own client may answer what an MCP server asks during it; a server's
        // changed list is read again and passed on.
        let lists_changed = Arc::new(tokio::sync::Notify::new());
        global.mcp.callers_may_answer = true;
        global.mcp.lists_changed = Some(lists_changed.clone());
        let global = &global;
        let loaded = setup::load_with(global, events.clone(), None, setup::OnWidening::AskOnTerminal).await?;
        let shared = Shared::new(global.clone(), loaded.runtime, metrics);
        let watcher = tokio::spawn(watch(shared.clone(), events));
        let lists = tokio::spawn(follow_server_lists(shared.clone(), lists_changed));
        let served = match &self.http {
            None => serve_stdio(shared).await,
            Some(addr) => {
                let options = http::Options {
                    token_file: self.token_file.clone(),
                    allow_origins: self.allow_origin.clone(),
                    no_auth: self.no_auth,
                    metrics_no_auth: self.metrics_no_auth,
                    drain_grace: Duration::from_millis(self.drain_grace_ms),
                    allow_hosts: self.allow_host.clone(),
                    allow_remote: self.allow_remote,
                    stateless: self.stateless,
                };
                http::serve(shared, addr, options).await
            }
        };
        watcher.abort();
        lists.abort();
        served.map(|()| 0)
    }
}

/// When an MCP server toolhost uses says its tool list changed, read every server's list again
/// and tell this server's clients (`notifications/tools/list_changed`). At most twice a second:
/// what a server says while a refresh runs or during the pause after it is one more refresh, so
/// a server that says it without end costs a bounded rate of list reads, not a loop.
async fn follow_server_lists(shared: Arc<Shared>, changed: Arc<tokio::sync::Notify>) {
    loop {
        changed.notified().await;
        for e in shared.runtime().refresh_remote_tools().await {
            tracing::warn!("{}", toolhost::error_text(&e));
        }
        shared.notify_tools_changed();
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

async fn serve_stdio(shared: Arc<Shared>) -> Result<()> {
    use rmcp::ServiceExt as _;
    let stdin = tokio::io::BufReader::new(pipes::input());
    let core = Arc::new(server::SessionCore::default());
    let transport = stdio::LineTransport::new(stdin, pipes::output(), shared.scheduler.clone())
        .answering(shared.clone(), core.clone());
    let running =
        McpServer::with_core(shared, core.clone()).serve(transport).await.context("MCP session did not start")?;
    // The session is open: from now on the transport answers its calls itself.
    core.open(running.peer().clone());
    let reason = running.waiting().await.context("MCP session failed")?;
    tracing::info!("MCP session ended: {reason:?}");
    Ok(())
}

/// What reloading depends on: the config file, every `*.wasm` in the tools directories and
/// named by the config with the policy file beside it, the files its hooks run and this workspace's pin file, each with its
/// modification time and size (`None`: missing).
type Fingerprint = Vec<(PathBuf, Option<(SystemTime, u64)>)>;

fn fingerprint(args: &GlobalArgs) -> Fingerprint {
    let stamp =
        |p: &PathBuf| std::fs::metadata(p).ok().map(|m| (m.modified().unwrap_or(SystemTime::UNIX_EPOCH), m.len()));
    let config = args.config.clone().unwrap_or_else(|| PathBuf::from("toolhost.toml"));
    let mut files = vec![config];
    for dir in &args.tools {
        let mut wasm: Vec<PathBuf> = std::fs::read_dir(dir)
            .map(|entries| {
                entries
                    .filter_map(|e| e.ok().map(|e| e.path()))
                    .filter(|p| p.extension().is_some_and(|x| x == "wasm"))
                    .collect()
            })
            .unwrap_or_default();
        wasm.sort();
        files.push(dir.clone());
        files.extend(wasm);
    }
    if let Ok(config) = setup::load_config(args) {
        files.extend(config.tools.values().filter_map(|t| t.path.as_ref().map(|p| p.get_ref().clone())));
        // Claude Code's settings files, read with the config.
        files.extend(setup::claude_settings_paths(args, &config).unwrap_or_default());
        // The pins and the hook files: a changed hook file is judged again (and refused), and
        // `toolhost trust` lets a refused change load.
        if let Ok(subject) = crate::pins::Subject::of(args) {
            files.extend(subject.pin_file());
            let summary = toolhost_trust::Summary::of(&config, &subject.workspace);
            files.extend(summary.hooks.into_iter().flat_map(|h| h.files));
        }
    }
    // The policy file beside each component: a grant from one is pinned like the config's.
    let policies: Vec<PathBuf> = files.iter().filter_map(|f| toolhost_policy::policy_file_path(f)).collect();
    files.extend(policies);
    files.into_iter().map(|p| (stamp(&p), p)).map(|(s, p)| (p, s)).collect()
}

/// Poll for changes; once a change has settled (the same for one more poll, so a file being
/// written is not loaded half-way), reload and tell the clients if the tool list changed. A
/// reload that fails (e.g. a config error) keeps the tools in service.
async fn watch(shared: Arc<Shared>, events: toolhost::EventSink) {
    let mut loaded = fingerprint(&shared.args);
    let mut seen = loaded.clone();
    loop {
        tokio::time::sleep(POLL).await;
        let now = fingerprint(&shared.args);
        if now != seen {
            seen = now;
            continue;
        }
        if seen == loaded {
            continue;
        }
        loaded = seen.clone();
        // Nobody to ask in the middle of serving: a widening change is refused (and logged) and
        // the loaded tools stay in service until `toolhost trust` (which the watch sees).
        let reload =
            setup::load_with(&shared.args, events.clone(), Some(shared.scheduler.clone()), setup::OnWidening::Refuse);
        match reload.await {
            Ok(reloaded) => {
                let before = serde_json::to_value(server::tool_list(&shared.runtime())).ok();
                let after = serde_json::to_value(server::tool_list(&reloaded.runtime)).ok();
                shared.replace_runtime(reloaded.runtime);
                shared.reloaded(None);
                tracing::info!("tools reloaded");
                if before != after {
                    shared.notify_tools_changed();
                }
            }
            Err(e) => {
                tracing::warn!("reloading the tools failed, keeping the loaded ones: {e:#}");
                shared.reloaded(Some(format!("{e:#}")));
            }
        }
    }
}
