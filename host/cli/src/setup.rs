//! Global options and turning them into a loaded runtime: workspace, config, compile cache,
//! embedded default tools, `--tools` directories and tools named in the config.

use anyhow::{Context, Result};
use clap::Args;
use std::collections::HashMap;
use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use toolhost::{Event, Runtime, ToolSource};
use toolhost_policy::Config;
use toolhost_registry::{Lock, Store};

pub use crate::pins::OnWidening;

/// Options every command takes.
#[derive(Args, Debug, Clone)]
pub struct GlobalArgs {
    /// Config file (default: ./toolhost.toml if present).
    #[arg(long, global = true, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// The workspace: the directory tools are granted by default (default: the current directory).
    #[arg(long, global = true, value_name = "DIR")]
    pub workspace: Option<PathBuf>,
    /// Load every *.wasm in DIR as a tool (repeatable).
    #[arg(long = "tools", global = true, value_name = "DIR")]
    pub tools: Vec<PathBuf>,
    /// Do not load the embedded default tools.
    #[arg(long, global = true)]
    pub no_default_tools: bool,
    /// Permission mode: default, accept-edits, bypass, dont-ask or plan (overrides the config).
    #[arg(long, global = true, value_name = "MODE", value_parser = parse_mode)]
    pub permission_mode: Option<toolhost_policy::Mode>,
    /// Allow calls matching RULE, e.g. 'Write(notes/**)' (repeatable; adds to the config).
    #[arg(long, global = true, value_name = "RULE", value_parser = parse_rule)]
    pub allow: Vec<toolhost_policy::Rule>,
    /// Ask before calls matching RULE (repeatable; adds to the config).
    #[arg(long, global = true, value_name = "RULE", value_parser = parse_rule)]
    pub ask: Vec<toolhost_policy::Rule>,
    /// Deny calls matching RULE, e.g. 'Edit(.git/**)' (repeatable; adds to the config).
    #[arg(long, global = true, value_name = "RULE", value_parser = parse_rule)]
    pub deny: Vec<toolhost_policy::Rule>,
    /// Append one JSON line per permission decision and per call to FILE (overrides `[audit]
    /// file`; rotated by size, see `toolhost audit`).
    #[arg(long, global = true, value_name = "FILE")]
    pub audit: Option<PathBuf>,
    /// More logging on stderr (-v, -vv).
    #[arg(short, long, global = true, action = clap::ArgAction::Count)]
    pub verbose: u8,
    /// Refuse any difference between toolhost.toml and toolhost.lock, and never change the lock
    /// (the default when CI=true): see `toolhost update`.
    #[arg(long, global = true)]
    pub locked: bool,
    /// Compile a tool that has no optimised code ready with Cranelift before its first call,
    /// instead of answering at once with baseline (Winch) code while Cranelift compiles in the
    /// background.
    #[arg(long, global = true, env = "TOOLHOST_NO_TIERING", value_parser = clap::builder::BoolishValueParser::new())]
    pub no_tiering: bool,
    /// Also read this Claude Code settings file, above the user, project and local ones
    /// (`.claude/settings.json` and the others; `claude_settings = false` in the config turns
    /// them all off).
    #[arg(long, global = true, value_name = "FILE")]
    pub settings: Option<PathBuf>,
    /// Files of this command the host reads or writes (a session file, an events file): no tool
    /// may write them (see [`toolhost::RuntimeBuilder::protect`]).
    #[arg(skip)]
    pub protect: Vec<(PathBuf, String)>,
}

fn parse_mode(s: &str) -> Result<toolhost_policy::Mode, toolhost_policy::ModeError> {
    s.parse()
}

fn parse_rule(s: &str) -> Result<toolhost_policy::Rule, toolhost_policy::RuleError> {
    s.parse()
}

pub fn init_tracing(verbose: u8) {
    let level = match verbose {
        0 => "warn",
        1 => "info",
        _ => "debug",
    };
    // A TOOLHOST_LOG that does not parse is said, not ignored: the operator asked for logs.
    let (filter, bad) = match std::env::var("TOOLHOST_LOG") {
        Ok(text) if !text.trim().is_empty() => match tracing_subscriber::EnvFilter::try_new(&text) {
            Ok(filter) => (filter, None),
            Err(e) => (level.into(), Some(format!("TOOLHOST_LOG={text:?} is not a log filter ({e}); using {level:?}"))),
        },
        _ => (level.into(), None),
    };
    // No colours: they are escape sequences, and `SafeStderr` lets none through.
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(|| SafeStderr)
        .with_ansi(false)
        .with_target(false)
        .init();
    if let Some(message) = bad {
        eprintln!("warning: {message}");
    }
}

/// The loaded runtime plus what failed to load (each already reported on stderr).
pub struct Loaded {
    pub runtime: Runtime,
    pub load_errors: Vec<String>,
}

/// The config named by `--config`, or `./toolhost.toml` if it exists, or none; with what
/// Claude Code's settings files say merged in below it (their project allow rules only when
/// this workspace is trusted).
pub fn load_config(args: &GlobalArgs) -> Result<Config> {
    let trusted = crate::pins::workspace_trusted(args);
    load_config_as(args, trusted)
}

/// [`load_config`], the workspace trusted or not as `trusted` says (`toolhost trust` reads
/// what it is about to trust).
pub fn load_config_as(args: &GlobalArgs, trusted: bool) -> Result<Config> {
    let mut config = match config_path(args) {
        Some(path) => Config::load(&path)?,
        None => Config::default(),
    };
    if let Some(settings) = claude_settings(args, &config, trusted)? {
        crate::claude::report_once(&settings);
        config.merge_claude(settings);
    }
    // As in Claude Code: a settings file may take bypass mode away from everyone.
    if let Some(at) = config.claude.as_ref().and_then(|c| c.bypass_disabled.as_ref()) {
        let mode = args.permission_mode.unwrap_or_else(|| config.permissions.mode());
        if mode == toolhost_policy::Mode::Bypass {
            anyhow::bail!("bypass mode is disabled by {at} (permissions.disableBypassPermissionsMode)");
        }
    }
    Ok(config)
}

/// Claude Code's settings files for this workspace, read, unless the config says
/// `claude_settings = false` (then `--settings` is an error, not silently dropped).
pub fn claude_settings(
    args: &GlobalArgs,
    config: &Config,
    trusted: bool,
) -> Result<Option<toolhost_policy::claude::ClaudeSettings>> {
    use toolhost_policy::claude::{ClaudeSettings, LoadOptions};
    if !config.reads_claude_settings() {
        if args.settings.is_some() {
            anyhow::bail!("--settings: the config says claude_settings = false");
        }
        return Ok(None);
    }
    let (workspace, home, paths) = settings_paths(args)?;
    let opts = LoadOptions { workspace: &workspace, home: home.as_deref(), trusted };
    ClaudeSettings::load(&paths, &opts).map(Some).map_err(|errors| {
        let shown: Vec<String> = errors.iter().map(ToString::to_string).collect();
        anyhow::anyhow!("{}", shown.join("\n"))
    })
}

/// The Claude Code settings files toolhost would read for this workspace, whether or not they
/// exist: no tool may write them (they could allow themselves anything, or add a hook).
pub fn claude_settings_paths(args: &GlobalArgs, config: &Config) -> Result<Vec<PathBuf>> {
    if !config.reads_claude_settings() {
        return Ok(Vec::new());
    }
    Ok(settings_paths(args)?.2.all().into_iter().map(|(_, p)| p).collect())
}

/// The workspace (canonical when it resolves), the home directory, and where the settings
/// files are: `$CLAUDE_CONFIG_DIR` or `~/.claude`, the workspace's `.claude/`, `--settings`.
fn settings_paths(args: &GlobalArgs) -> Result<(PathBuf, Option<PathBuf>, toolhost_policy::claude::SettingsPaths)> {
    let workspace = workspace(args)?;
    let workspace = workspace.canonicalize().unwrap_or(workspace);
    let home = std::env::var_os("HOME").filter(|h| !h.is_empty()).map(PathBuf::from);
    let config_dir = std::env::var_os("CLAUDE_CONFIG_DIR").filter(|d| !d.is_empty()).map(PathBuf::from);
    let flag = args.settings.as_deref().map(absolute).transpose()?;
    let paths = toolhost_policy::claude::SettingsPaths::new(
        &workspace,
        home.as_deref(),
        config_dir.as_deref(),
        flag.as_deref(),
    );
    Ok((workspace, home, paths))
}

/// The config file in use: `--config`, or `./toolhost.toml` if it exists.
pub fn config_path(args: &GlobalArgs) -> Option<PathBuf> {
    match &args.config {
        Some(p) => Some(p.clone()),
        None => Some(PathBuf::from("toolhost.toml")).filter(|p| p.is_file()),
    }
}

/// The workspace: `--workspace`, else the current directory.
pub fn workspace(args: &GlobalArgs) -> Result<PathBuf> {
    match &args.workspace {
        Some(w) => Ok(w.clone()),
        None => std::env::current_dir().context("cannot read the current directory"),
    }
}

/// The compile cache: `$TOOLHOST_CACHE_DIR`, else `$XDG_CACHE_HOME/toolhost`, else
/// `~/.cache/toolhost`.
pub fn cache_dir() -> Option<PathBuf> {
    if let Some(d) = std::env::var_os("TOOLHOST_CACHE_DIR") {
        return Some(PathBuf::from(d));
    }
    if let Some(d) = std::env::var_os("XDG_CACHE_HOME") {
        return Some(PathBuf::from(d).join("toolhost"));
    }
    std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache").join("toolhost"))
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
/// [`toolhost::pins::Clearance`]): it compiles, and runs only `schema` (with no capabilities)
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
fn terminal_events_and_asks(
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
async fn build_and_load(
    args: &GlobalArgs,
    mut config: Config,
    cleared: Option<toolhost::pins::Clearance>,
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
        load_errors.extend(crate::mcp_servers::connect_all(&runtime, cleared).await);
    }
    Ok(Loaded { runtime, load_errors })
}

/// Whether `--locked` is in force: the flag, or `CI=true` (as most CI services set it).
pub fn locked(args: &GlobalArgs) -> bool {
    args.locked || std::env::var("CI").is_ok_and(|v| v.eq_ignore_ascii_case("true") || v == "1")
}

/// The config file `add` writes to: `--config`, else `./toolhost.toml` (made if missing).
pub fn config_file(args: &GlobalArgs) -> PathBuf {
    args.config.clone().unwrap_or_else(|| PathBuf::from("toolhost.toml"))
}

/// The lock that goes with the config in use (empty without one).
pub fn lock_for(args: &GlobalArgs) -> Result<(PathBuf, Lock)> {
    let path = Lock::path_for(&config_file(args));
    let lock = Lock::read(&path)?;
    Ok((path, lock))
}

/// The component store inside the compile cache directory.
pub fn store() -> Result<Store> {
    let dir = cache_dir().context("no cache directory: set TOOLHOST_CACHE_DIR or HOME")?;
    Ok(Store::open(&dir)?)
}

/// `path` made absolute against the current directory (not the workspace: command-line paths
/// are the user's).
fn absolute(path: &Path) -> Result<PathBuf> {
    std::path::absolute(path).with_context(|| format!("cannot resolve {}", path.display()))
}

/// Replace the file at `path` with `bytes`: written to a new file beside it, then renamed over
/// it, so a link a tool planted at `path` is replaced, never followed.
pub fn replace_file(path: &Path, bytes: &[u8]) -> Result<()> {
    let mut file = new_file(path)?;
    std::io::Write::write_all(&mut file, bytes).with_context(|| format!("writing {}", path.display()))?;
    Ok(())
}

/// A new, empty file at `path` (whatever was there, a planted link included, is replaced, not
/// followed), open for writing.
pub fn new_file(path: &Path) -> Result<std::fs::File> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let tmp = tempfile::NamedTempFile::new_in(dir).with_context(|| format!("creating a file in {}", dir.display()))?;
    tmp.persist(path).map_err(|e| anyhow::Error::from(e.error)).with_context(|| format!("writing {}", path.display()))
}

/// Read a file of the host's without following a link at its last component.
pub fn read_own_file(path: &Path) -> Result<String> {
    use std::os::unix::fs::OpenOptionsExt;
    let mut file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(rustix::fs::OFlags::NOFOLLOW.bits() as i32)
        .open(path)
        .with_context(|| format!("reading {} (a link is not followed)", path.display()))?;
    let mut text = String::new();
    std::io::Read::read_to_string(&mut file, &mut text).with_context(|| format!("reading {}", path.display()))?;
    Ok(text)
}

/// `TOOLHOST_MAX_CONCURRENCY`, which overrides the config. Anything but an integer >= 1 is an
/// error (0 would run nothing; a typo must not silently mean the default).
fn max_concurrency_from_env() -> Result<Option<usize>> {
    let Ok(value) = std::env::var("TOOLHOST_MAX_CONCURRENCY") else { return Ok(None) };
    match value.trim().parse::<usize>() {
        Ok(n) if n >= 1 => Ok(Some(n)),
        _ => anyhow::bail!("TOOLHOST_MAX_CONCURRENCY must be an integer of at least 1, got {value:?}"),
    }
}

/// A token cancelled by the first Ctrl-C (SIGINT) or SIGTERM: running calls are interrupted,
/// queued ones never start, and the command still prints every call's result.
pub fn cancel_on_signal() -> tokio_util::sync::CancellationToken {
    let token = tokio_util::sync::CancellationToken::new();
    let t = token.clone();
    tokio::spawn(async move {
        let ctrl_c = tokio::signal::ctrl_c();
        #[cfg(unix)]
        {
            let mut term = match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
                Ok(s) => s,
                Err(_) => {
                    let _ = ctrl_c.await;
                    t.cancel();
                    return;
                }
            };
            tokio::select! {
                _ = ctrl_c => {}
                _ = term.recv() => {}
            }
        }
        #[cfg(not(unix))]
        let _ = ctrl_c.await;
        eprintln!("interrupted: stopping the running calls");
        t.cancel();
    });
    token
}

/// Every `*.wasm` file in `dir`, sorted: the tools of a `--tools DIR`.
pub fn wasm_files(dir: &Path) -> Result<Vec<PathBuf>> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .with_context(|| format!("--tools {}", dir.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "wasm") && p.is_file())
        .collect();
    files.sort();
    Ok(files)
}

/// Events on stderr (a live display on a terminal, plain lines otherwise) and, with
/// `--events FILE`, as JSON lines in that file. Never on stdout: that is data.
fn event_printer(
    display: Arc<Display>,
    events_file: Option<&Path>,
    trace_file: Option<&Path>,
) -> Result<toolhost::EventSink> {
    let file = match events_file {
        Some(p) => Some(std::sync::Mutex::new(new_file(p).with_context(|| format!("--events {}", p.display()))?)),
        None => None,
    };
    let traces = match trace_file {
        Some(p) => Some(Traces::new(new_file(p).with_context(|| format!("--trace {}", p.display()))?)),
        None => None,
    };
    Ok(Arc::new(move |event| {
        if let Some(traces) = &traces {
            traces.record(&event);
        }
        if let Some(file) = &file
            && let Ok(line) = serde_json::to_string(&event)
        {
            let mut f = file.lock().unwrap_or_else(|e| e.into_inner());
            // Events are for people and tools watching; failing to log one never fails a call.
            let _ = std::io::Write::write_all(&mut *f, format!("{line}\n").as_bytes());
        }
        display.show(event);
    }))
}

/// `--trace FILE`: one JSON line per finished call with its steps' times, the tool's
/// progress messages and stderr, and a trap's guest backtrace (for the tool's author: stderr
/// may hold anything, so it is written only where asked).
struct Traces {
    file: std::sync::Mutex<std::fs::File>,
    /// Progress messages of calls still running, by id.
    progress: std::sync::Mutex<HashMap<String, Vec<String>>>,
}

impl Traces {
    fn new(file: std::fs::File) -> Self {
        Traces { file: std::sync::Mutex::new(file), progress: Default::default() }
    }

    fn record(&self, event: &Event) {
        match event {
            Event::Progress { id, message, .. } => self
                .progress
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .entry(id.clone())
                .or_default()
                .push(message.clone()),
            Event::Log { id, level, message, .. } => self
                .progress
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .entry(id.clone())
                .or_default()
                .push(format!("[{}] {message}", level.as_str())),
            Event::Finish { id, tool, outcome, duration_ms, tier, trace, .. } => {
                let progress = self.progress.lock().unwrap_or_else(|e| e.into_inner()).remove(id).unwrap_or_default();
                let line = serde_json::json!({
                    "id": id,
                    "tool": tool,
                    "outcome": outcome,
                    "duration_us": u64::try_from(duration_ms.as_micros()).unwrap_or(u64::MAX),
                    "tier": tier,
                    "steps": trace.steps,
                    "progress": progress,
                    "stderr": trace.stderr,
                    "backtrace": trace.backtrace,
                });
                let mut f = self.file.lock().unwrap_or_else(|e| e.into_inner());
                // Like events, a trace that cannot be written never fails a call.
                let _ = std::io::Write::write_all(&mut *f, format!("{line}\n").as_bytes());
            }
            _ => {}
        }
    }
}

/// Text of several lines (an error that quotes a tool's stderr, say), each line made
/// [`printable`]; the line breaks stay, carriage returns do not.
pub(crate) fn printable_lines(s: &str) -> String {
    s.split('\n').map(printable).collect::<Vec<_>>().join("\n")
}

/// The log's stderr: each event (one write of a formatted line) with every control character
/// but its final newline escaped, and bidirectional overrides too. tracing-subscriber escapes
/// ESC and C1 controls only; a carriage return, a newline or an override in a server's log
/// message or a tool's stderr could still forge or reorder what the operator reads.
struct SafeStderr;

impl std::io::Write for SafeStderr {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let text = String::from_utf8_lossy(buf);
        let (body, end) = match text.strip_suffix('\n') {
            Some(body) => (body, "\n"),
            None => (text.as_ref(), ""),
        };
        std::io::stderr().write_all(format!("{}{end}", printable(body)).as_bytes())?;
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        std::io::stderr().flush()
    }
}

/// What a tool said, made safe for a terminal: control characters (escape sequences could
/// move the cursor, rewrite earlier lines or fake a prompt) and bidirectional overrides are
/// shown as `\u{…}` escapes; tabs stay.
pub(crate) fn printable(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        if (c.is_control() && c != '\t') || matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}') {
            out.extend(c.escape_unicode());
        } else {
            out.push(c);
        }
    }
    out
}

/// The lines `-v` adds after a call's finish line: its steps' times, the tool's stderr, and
/// where it trapped (what the tool said made [`printable`]).
fn trace_lines(trace: &toolhost::CallTrace) -> Vec<String> {
    let mut lines = Vec::new();
    if !trace.steps.is_empty() {
        let steps: Vec<String> = trace.steps.iter().map(|s| format!("{} {}", s.step, micros(s.micros))).collect();
        lines.push(format!("  steps: {}", steps.join(", ")));
    }
    let stderr = trace.stderr.trim_end();
    if !stderr.is_empty() {
        lines.push("  stderr:".to_string());
        lines.extend(stderr.lines().map(|l| format!("    | {}", printable(l))));
    }
    if !trace.backtrace.is_empty() {
        lines.push("  guest backtrace (innermost first):".to_string());
        lines.extend(trace.backtrace.iter().map(|f| format!("    {}", printable(f))));
    }
    lines
}

fn micros(us: u64) -> String {
    if us >= 10_000 { format!("{:.1} ms", us as f64 / 1000.0) } else { format!("{us} µs") }
}

/// How events are shown on stderr: a live spinner per running call on a terminal, plain lines
/// otherwise (progress always; start and finish, with each call's trace, with `-v`).
enum Display {
    Live {
        bars: indicatif::MultiProgress,
        running: std::sync::Mutex<HashMap<String, indicatif::ProgressBar>>,
        verbose: bool,
    },
    Plain {
        verbose: bool,
    },
}

impl Display {
    fn live(verbose: bool) -> Self {
        Display::Live { bars: indicatif::MultiProgress::new(), running: std::sync::Mutex::new(HashMap::new()), verbose }
    }

    /// Hide the live display while a question is on the terminal, and bring it back.
    fn pause(&self, paused: bool) {
        if let Display::Live { bars, .. } = self {
            bars.set_draw_target(if paused {
                indicatif::ProgressDrawTarget::hidden()
            } else {
                indicatif::ProgressDrawTarget::stderr()
            });
        }
    }

    fn show(&self, event: Event) {
        // Hook failures never block a call, so they must be visible.
        let said = match &event {
            Event::HookFailed { id, tool, hook_event, hook, message } => {
                Some(printable(&format!("warning: {hook_event} hook [{hook}] for {tool} ({id}) failed: {message}")))
            }
            Event::HookMessage { id, tool, hook_event, message } => {
                Some(printable(&format!("{hook_event} hook for {tool} ({id}): {message}")))
            }
            _ => None,
        };
        if let Some(line) = said {
            match self {
                Display::Live { bars, .. } => {
                    let _ = bars.println(line);
                }
                Display::Plain { .. } => eprintln!("{line}"),
            }
            return;
        }
        match self {
            Display::Plain { verbose } => match event {
                Event::PermissionAsked { id, tool, answer, .. } if *verbose => {
                    eprintln!("{}", printable(&format!("permission {tool} ({id}): {answer}")))
                }
                Event::Progress { tool, message, .. } => eprintln!("{}", printable(&format!("{tool}: {message}"))),
                Event::Log { tool, level, message, .. } if *verbose || level >= toolhost::LogLevel::Warning => {
                    eprintln!("{}", printable(&format!("{tool} [{}]: {message}", level.as_str())))
                }
                Event::Start { id, tool } if *verbose => eprintln!("{}", printable(&format!("start {tool} ({id})"))),
                Event::Finish { id, tool, outcome, duration_ms, trace, .. } if *verbose => {
                    let ms = duration_ms.as_secs_f64() * 1000.0;
                    eprintln!("{}", printable(&format!("finish {tool} ({id}): {outcome} in {ms:.1} ms")));
                    for line in trace_lines(&trace) {
                        eprintln!("{line}");
                    }
                }
                _ => {}
            },
            Display::Live { bars, running, verbose } => {
                let mut running = running.lock().unwrap_or_else(|e| e.into_inner());
                match event {
                    Event::Start { id, tool } => {
                        let bar = bars.add(indicatif::ProgressBar::new_spinner());
                        bar.set_prefix(printable(&format!("{tool} ({id})")));
                        bar.set_style(
                            indicatif::ProgressStyle::with_template("{spinner} {prefix} {elapsed} {wide_msg}")
                                .unwrap_or_else(|_| indicatif::ProgressStyle::default_spinner()),
                        );
                        bar.enable_steady_tick(std::time::Duration::from_millis(100));
                        running.insert(id, bar);
                    }
                    Event::Log { tool, level, message, .. } if *verbose || level >= toolhost::LogLevel::Warning => {
                        let _ = bars.println(printable(&format!("{tool} [{}]: {message}", level.as_str())));
                    }
                    Event::Progress { id, tool, message } => match running.get(&id) {
                        Some(bar) => bar.set_message(printable(&message)),
                        None => {
                            let _ = bars.println(printable(&format!("{tool}: {message}")));
                        }
                    },
                    Event::Finish { id, tool, outcome, duration_ms, trace, .. } => {
                        if let Some(bar) = running.remove(&id) {
                            bar.finish_and_clear();
                            bars.remove(&bar);
                        }
                        let mark = if outcome == toolhost::OutcomeKind::Success { "✓" } else { "✗" };
                        let ms = duration_ms.as_secs_f64() * 1000.0;
                        let _ = bars.println(printable(&format!("{mark} {tool} ({id}): {outcome} in {ms:.1} ms")));
                        if *verbose {
                            for line in trace_lines(&trace) {
                                let _ = bars.println(line);
                            }
                        }
                    }
                    _ => {}
                }
            }
        }
    }
}

/// Start `toolhost compile` for the same config, workspace and tool directories, detached (its
/// own process group, no terminal, lower priority), and return at once: the optimised code of
/// tools that answered with baseline code (or were just installed) then lands in the compile
/// cache for the next process, after this one has exited. Best effort: a failure is logged.
pub fn compile_in_background(args: &GlobalArgs) {
    use std::os::unix::process::CommandExt;
    let exe = match std::env::current_exe() {
        Ok(exe) => exe,
        Err(e) => {
            tracing::debug!("cannot compile in the background: {e}");
            return;
        }
    };
    let mut command = std::process::Command::new(exe);
    command.args(["compile", "--low-priority"]);
    if let Some(config) = &args.config {
        command.arg("--config").arg(absolute(config).unwrap_or_else(|_| config.clone()));
    }
    if let Ok(workspace) = workspace(args) {
        command.arg("--workspace").arg(workspace);
    }
    for dir in &args.tools {
        command.arg("--tools").arg(absolute(dir).unwrap_or_else(|_| dir.clone()));
    }
    if args.no_default_tools {
        command.arg("--no-default-tools");
    }
    command
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .process_group(0);
    match command.spawn() {
        Ok(child) => tracing::debug!("compiling optimised code in the background (process {})", child.id()),
        Err(e) => tracing::debug!("cannot compile in the background: {e}"),
    }
}

/// Lower the scheduling priority of this whole process (every thread of its process group,
/// which `compile_in_background` makes its own), so a background compile yields the CPU.
pub fn lower_priority() {
    let now = rustix::process::getpriority_pgrp(None).unwrap_or(0);
    if let Err(e) = rustix::process::setpriority_pgrp(None, (now + 10).min(19)) {
        tracing::debug!("cannot lower this process's priority: {e}");
    }
}

/// After a command that made calls: when some tool ran baseline code and its optimised code is
/// still being compiled (which this process's exit would stop), hand the work to a background
/// `toolhost compile`.
pub fn hand_off_optimizing(args: &GlobalArgs, runtime: &Runtime) {
    if !runtime.engine().optimizing().is_empty() {
        compile_in_background(args);
    }
}

#[cfg(test)]
mod tests {
    use super::printable;

    #[test]
    fn what_a_tool_says_cannot_drive_the_terminal() {
        assert_eq!(printable("plain\ttext é"), "plain\ttext é");
        assert_eq!(printable("\u{1b}[2J\u{1b}]0;title\u{7}"), "\\u{1b}[2J\\u{1b}]0;title\\u{7}");
        assert_eq!(printable("a\rb\u{202e}c"), "a\\u{d}b\\u{202e}c");
    }
}
