//! Turning the options into a loaded runtime: the pin check's clearance, the audit log, the
//! runtime builder, the embedded default tools, `--tools` directories and the config's tools.

use super::args::GlobalArgs;
use super::config::{cache_dir, claude_settings_paths, config_path, load_config, lock_for, locked, store, workspace};
use super::display::{Display, event_printer, printable, printable_lines};
use super::files::{absolute, wasm_files};
use crate::pins::OnWidening;
use anyhow::Result;
use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use toolhost::{Event, Runtime, ToolSource};
use toolhost_policy::Config;
use toolhost_registry::Lock;

/// The loaded runtime plus what failed to load (each already reported on stderr).
pub struct Loaded {
    pub runtime: Runtime,
    pub load_errors: Vec<String>,
}

/// Build the runtime and load every tool, for a command that makes one call or none (no pool
/// of instances to reserve). One tool failing to load never stops the others.
pub async fn load(args: &GlobalArgs, verbose_events: bool) -> Result<Loaded> {
    load_traced(args, verbose_events, None).await
}

/// [`load`], also writing each call's trace (its steps' times, the tool's progress messages
/// and stderr, a trap's guest backtrace) as a JSON line to `trace_file`.
pub async fn load_traced(args: &GlobalArgs, verbose_events: bool, trace_file: Option<&Path>) -> Result<Loaded> {
    let config = load_config(args)?;
    let cleared = crate::pins::check(args, &config, OnWidening::AskOnTerminal)?;
    let (events, decider) = terminal_events_and_asks(verbose_events, None, trace_file)?;
    build_and_load(args, config, Some(cleared), events, decider, None, false).await
}

/// [`load`] without the check of pins (`toolhost trust`), for `toolhost compile`, which
/// calls no tool, runs no hook and starts no MCP server (it holds no
/// [`toolhost_trust::Clearance`]): it compiles, and runs only `schema` (with no capabilities)
/// of a tool no earlier load described, as `toolhost inspect` does. A background compile after
/// `add` must not wait for a trust that only the next call needs.
pub async fn load_unpinned(args: &GlobalArgs) -> Result<Loaded> {
    let mut config = load_config(args)?;
    // Nothing is called, so nothing is audited; and a config nobody trusted yet must not name
    // a file for the host to open (it would be created, wherever it points).
    config.audit = Default::default();
    let (events, _) = terminal_events_and_asks(false, None, None)?;
    build_and_load(args, config, None, events, None, None, false).await
}

/// [`load`], also writing every event as a JSON line to `events_file` (start, progress and
/// finish with duration and outcome kind).
pub async fn load_with_events(args: &GlobalArgs, verbose_events: bool, events_file: Option<&Path>) -> Result<Loaded> {
    let config = load_config(args)?;
    let cleared = crate::pins::check(args, &config, OnWidening::AskOnTerminal)?;
    let (events, decider) = terminal_events_and_asks(verbose_events, events_file, None)?;
    build_and_load(args, config, Some(cleared), events, decider, None, true).await
}

/// Events printed on stderr (and written to `events_file`), and asks on the terminal if there
/// is one.
pub(super) fn terminal_events_and_asks(
    verbose_events: bool,
    events_file: Option<&Path>,
    trace_file: Option<&Path>,
) -> Result<(toolhost::EventSink, Option<Arc<dyn toolhost::PermissionDecider>>)> {
    let display = Arc::new(if live_progress() {
        Display::live(verbose_events)
    } else {
        Display::Plain { verbose: verbose_events }
    });
    let events = event_printer(display.clone(), events_file, trace_file)?;
    let pause: crate::ask::Pause = Arc::new(move |paused| display.pause(paused));
    let decider = crate::ask::TtyDecider::if_interactive(Some(pause))
        .map(|d| Arc::new(d) as Arc<dyn toolhost::PermissionDecider>);
    Ok((events, decider))
}

/// Whether progress is drawn live on stderr (indicatif, one line per finished call) rather than
/// printed as plain lines: stderr is a terminal indicatif can draw on (not e.g. TERM=dumb, which
/// gets plain lines, not nothing).
pub fn live_progress() -> bool {
    std::io::stderr().is_terminal() && !indicatif::ProgressDrawTarget::stderr().is_hidden()
}

/// [`load`] for a command whose standard streams carry a protocol (`mcp`): events go only to
/// `events`, and asks only to the decider each call brings (never a terminal prompt); calls
/// queue in `scheduler` when one is given (a reload keeps the queue of the runtime it replaces).
/// A widening change of the config or its hook files is refused or asked as `on_widening` says.
pub async fn load_with(
    args: &GlobalArgs,
    events: toolhost::EventSink,
    scheduler: Option<Arc<toolhost::Scheduler>>,
    on_widening: OnWidening,
) -> Result<Loaded> {
    let config = load_config(args)?;
    let cleared = crate::pins::check(args, &config, on_widening)?;
    build_and_load(args, config, Some(cleared), events, None, scheduler, true).await
}

/// Build the runtime and load every tool; run the hooks and start the MCP servers `cleared`
/// holds (none without a pin check).
pub(super) async fn build_and_load(
    args: &GlobalArgs,
    mut config: Config,
    cleared: Option<toolhost_trust::Clearance>,
    events: toolhost::EventSink,
    decider: Option<Arc<dyn toolhost::PermissionDecider>>,
    scheduler: Option<Arc<toolhost::Scheduler>>,
    pooling: bool,
) -> Result<Loaded> {
    // The hooks this runtime runs are the ones the pin check judged; without a check, none.
    config.hooks = cleared.as_ref().map(|c| (**c.hooks()).clone()).unwrap_or_default();
    let workspace = workspace(args)?;
    // A hook whose files cannot be protected from tools stops the start (the runtime would
    // refuse it too); here each is reported at its position in the config file.
    if let Ok(real) = workspace.canonicalize() {
        let home = std::env::var_os("HOME").filter(|h| !h.is_empty()).map(PathBuf::from);
        let errors = config.hook_errors(&real, home.as_deref());
        if !errors.is_empty() {
            let shown: Vec<String> = errors.iter().map(ToString::to_string).collect();
            anyhow::bail!("{}", shown.join("\n"));
        }
    }
    // The audit log sees every event the runtime sends, whoever else watches.
    let audit_file = match &args.audit {
        Some(file) => Some(absolute(file)?),
        None => config.audit.file().map(|f| absolute(&f)).transpose()?,
    };
    let events = match &audit_file {
        Some(file) => {
            let log = crate::audit::AuditLog::open(
                file,
                config.audit.log_inputs,
                config.audit.max_bytes(),
                crate::pins::state_dir().as_deref(),
            )?;
            let inner = events;
            Arc::new(move |event: Event| {
                log.record(&event);
                inner(event);
            }) as toolhost::EventSink
        }
        None => events,
    };
    let mut builder = Runtime::builder()
        .workspace(&workspace)
        .config(config.clone())
        // Every variable a grant may name, except the MCP server's bearer token: a tool granted
        // `env = ["*"]` must not be able to call the server (and its other tools) as a client.
        .env(std::env::vars().filter(|(k, _)| k != crate::commands::mcp::TOKEN_ENV))
        .events(events)
        .pooling(pooling)
        .tiering(!args.no_tiering);
    if let Some(mode) = args.permission_mode {
        builder = builder.permission_mode(mode);
    }
    for rule in &args.allow {
        builder = builder.allow_rule(rule.clone());
    }
    for rule in &args.ask {
        builder = builder.ask_rule(rule.clone());
    }
    for rule in &args.deny {
        builder = builder.deny_rule(rule.clone());
    }
    if let Some(decider) = decider {
        builder = builder.decider(decider);
    }
    if let Some(scheduler) = scheduler {
        builder = builder.scheduler(scheduler);
    }
    // What the host reads later and runs or trusts: no tool may change it (the MCP server
    // reloads exactly these).
    // The config file, or where the next start looks for one: a tool must no more create
    // `./toolhost.toml` (its hooks would run on the host) than change it. Its lock names the
    // installed components that load next time.
    let (config_file, what) = match config_path(args) {
        Some(path) => (absolute(&path)?, "the config file in use"),
        None => (absolute(Path::new("toolhost.toml"))?, "where toolhost looks for its config file"),
    };
    builder = builder.protect(Lock::path_for(&config_file), "the lock file of the config");
    builder = builder.protect(config_file, what);
    for dir in &args.tools {
        builder = builder.protect(absolute(dir)?, "a tools directory");
    }
    for path in claude_settings_paths(args, &config)? {
        builder = builder.protect(path, "a Claude Code settings file");
    }
    for path in audit_file.iter().flat_map(|f| crate::audit::paths(f)) {
        builder = builder.protect(path, "the audit log");
    }
    // Registry logins: a tool that could write them could name a credential helper for the
    // next `toolhost add` to run, or send the next push's credentials elsewhere.
    if let Some(path) = toolhost_registry::access::docker_config_path() {
        builder = builder.protect(absolute(&path)?, "the registry credentials (docker config)");
    }
    for (path, what) in &args.protect {
        builder = builder.protect(absolute(path)?, what.clone());
    }
    if let Some(dir) = cache_dir() {
        builder = builder.cache_dir(dir);
    }
    // The pins of trusted config and hook files: out of every tool's reach.
    if let Some(dir) = crate::pins::state_dir() {
        builder = builder.state_dir(absolute(&dir)?);
    }
    if let Some(n) = max_concurrency_from_env()? {
        builder = builder.max_concurrency(n);
    }
    let mut runtime = builder.build()?;

    // Installed tools (`source`): from the store, as toolhost.lock names them; then the files
    // of every `--tools` directory. The runtime adds the default tools (unless replaced) and
    // the config's `path` tools, and loads them all at once.
    let mut others = Vec::new();
    if config.tools.values().any(|t| t.source.is_some()) {
        let (_, lock) = lock_for(args)?;
        match store() {
            Ok(store) => {
                let installed = toolhost_registry::Installed {
                    config: &config,
                    lock: &lock,
                    store: &store,
                    workspace: &workspace,
                    locked: locked(args),
                };
                let (sources, warnings) = installed.sources();
                for warning in warnings {
                    eprintln!("warning: {warning}");
                }
                others.extend(sources);
            }
            // No store: each installed tool fails to load, and the others still do.
            Err(e) => {
                let why = format!("{e:#}");
                others.extend(config.tools.values().filter_map(|t| t.source.as_ref()).map(|source| {
                    Err(toolhost::Error::Load {
                        origin: source.get_ref().to_string(),
                        cause: toolhost::LoadError::embedder(why.clone()),
                    })
                }));
            }
        }
    }
    for dir in &args.tools {
        others.extend(wasm_files(dir)?.iter().map(ToolSource::file));
    }
    let defaults = if args.no_default_tools { Vec::new() } else { toolhost_default_tools::sources() };
    let mut load_errors: Vec<String> = runtime
        .load_configured(defaults, others)
        .await
        .into_iter()
        .map(|e| {
            let text = toolhost::error_text(&e);
            eprintln!("warning: {}", printable_lines(&text));
            text
        })
        .collect();
    // MCP servers: their tools join the pool beside the components.
    if let Some(cleared) = cleared {
        let connected = toolhost_mcp::connect_all(&runtime, cleared, &args.mcp).await;
        for (name, why) in &connected.skipped {
            eprintln!("toolhost: MCP server {} not started: {why}", printable(name));
        }
        for e in connected.errors {
            let text = e.to_string();
            eprintln!("warning: {}", printable_lines(&text));
            load_errors.push(text);
        }
    }
    Ok(Loaded { runtime, load_errors })
}

/// `TOOLHOST_MAX_CONCURRENCY`, which overrides the config. Anything but an integer >= 1 is an
/// error (0 would run nothing; a typo must not silently mean the default).
pub(super) fn max_concurrency_from_env() -> Result<Option<usize>> {
    let Ok(value) = std::env::var("TOOLHOST_MAX_CONCURRENCY") else { return Ok(None) };
    match value.trim().parse::<usize>() {
        Ok(n) if n >= 1 => Ok(Some(n)),
        _ => anyhow::bail!("TOOLHOST_MAX_CONCURRENCY must be an integer of at least 1, got {value:?}"),
    }
}
