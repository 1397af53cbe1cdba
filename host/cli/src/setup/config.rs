//! Where things are and what the config says: the workspace, the config file and Claude Code's
//! settings merged below it, the lock, the store, the compile cache.

use super::args::GlobalArgs;
use super::files::absolute;
use anyhow::{Context, Result};
use std::path::PathBuf;
use toolhost_policy::Config;
use toolhost_registry::{Lock, Store};

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
pub(super) fn settings_paths(
    args: &GlobalArgs,
) -> Result<(PathBuf, Option<PathBuf>, toolhost_policy::claude::SettingsPaths)> {
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
