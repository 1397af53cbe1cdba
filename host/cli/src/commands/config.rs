//! `toolhost config check [FILE]`: every error in a config file at once, each as
//! `FILE:LINE:COLUMN: message`, including what only the tools can tell: a grant beyond a tool's
//! ceiling, a `[tools.NAME]` section for a tool that is not loaded, a `path` that is no tool.

use crate::setup::{self, GlobalArgs};
use anyhow::{Context, Result};
use clap::{Args, Subcommand};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use toolhost::policy::{
    Capability, Config, ConfigError, Grant, effective_grant, grant_excess, grant_warnings, hook_script_warning,
};
use toolhost::{EngineOptions, ToolEngine, ToolSource};

#[derive(Args, Debug)]
pub struct ConfigCommand {
    #[command(subcommand)]
    command: ConfigSubcommand,
}

#[derive(Subcommand, Debug)]
enum ConfigSubcommand {
    /// Check a config file and the tools it names; exit 2 if anything is wrong.
    Check(CheckCommand),
}

#[derive(Args, Debug)]
struct CheckCommand {
    /// The config file (default: --config, else ./toolhost.toml).
    file: Option<PathBuf>,
}

impl ConfigCommand {
    pub async fn execute(self, global: &GlobalArgs) -> Result<u8> {
        match self.command {
            ConfigSubcommand::Check(c) => c.execute(global).await,
        }
    }
}

/// A tool as `setup::load` would register it: its ceiling, where it came from, its sha256.
struct Found {
    ceiling: Vec<Capability>,
    origin: String,
    sha256: String,
}

impl CheckCommand {
    async fn execute(self, global: &GlobalArgs) -> Result<u8> {
        let self_file_none = self.file.is_none();
        let file = self.file.or_else(|| global.config.clone()).unwrap_or_else(|| PathBuf::from("toolhost.toml"));
        let none_named = self_file_none && global.config.is_none();
        let text = match std::fs::read_to_string(&file) {
            Ok(text) => text,
            // No toolhost.toml: Claude Code's settings files may still say everything.
            Err(e) if none_named && e.kind() == std::io::ErrorKind::NotFound => String::new(),
            Err(e) => {
                eprintln!("{}: cannot read config: {e}", file.display());
                eprintln!("1 error in {}", file.display());
                return Ok(crate::output::EXIT_USAGE);
            }
        };
        let (config, mut errors) = Config::check_recoverable(&text, &file);
        let mut settings_errors = 0;
        let workspace = match &global.workspace {
            Some(w) => w.clone(),
            None => std::env::current_dir().context("cannot read the current directory")?,
        };
        // As the runtime does, so that relative grants resolve to the same directories.
        let workspace = workspace.canonicalize().with_context(|| format!("--workspace {}", workspace.display()))?;

        // Claude Code's settings files, as a start would read them: their errors join the
        // config's, and their rules and hooks are listed with where they were written.
        let mut config = config;
        {
            match setup::claude_settings(global, &config, crate::pins::workspace_trusted(global)) {
                Ok(Some(settings)) => {
                    crate::claude::report_once(&settings);
                    config.merge_claude(settings);
                }
                Ok(None) => {}
                Err(e) => {
                    for line in format!("{e:#}").lines() {
                        eprintln!("{line}");
                    }
                    settings_errors += format!("{e:#}").lines().count();
                }
            }
        }
        let tools = find_tools(global, &config, &mut errors).await?;
        for (name, tool) in &config.tools {
            let Some(found) = tools.get(name) else {
                // A `path` that is no tool named NAME was reported at the path.
                if tool.path.is_none() {
                    let loaded: Vec<&str> = tools.keys().map(String::as_str).collect();
                    let message = format!(
                        "no tool named {name} is loaded; the loaded tools are {} (embedded defaults, --tools \
                         directories and `path` entries)",
                        if loaded.is_empty() { "none".to_string() } else { loaded.join(", ") }
                    );
                    errors.push(config.tool_error(name, &message));
                }
                continue;
            };
            if let Some(grant) = tool.grant() {
                let excess = grant_excess(&found.ceiling, grant, &workspace);
                if !excess.is_empty() {
                    errors.push(config.grant_error(name, &excess));
                }
            }
            // Only a well-formed pin (64 hex digits) is compared; a malformed one is reported already.
            if let Some(pin) = &tool.sha256
                && pin.get_ref().len() == 64
                && pin.get_ref().bytes().all(|b| b.is_ascii_hexdigit())
                && !pin.get_ref().eq_ignore_ascii_case(&found.sha256)
            {
                errors.push(config.error_at(
                    pin.span().start,
                    format!(
                        "tools.{name}.sha256: the config pins {}, but {} has {}; it would not load",
                        pin.get_ref(),
                        found.origin,
                        found.sha256
                    ),
                ));
            }
        }

        // As the runtime does: a hook whose files cannot be protected from tools is an error.
        let home = std::env::var_os("HOME").filter(|h| !h.is_empty()).map(PathBuf::from);
        errors.extend(config.hook_errors(&workspace, home.as_deref()));

        for warning in broad_grants(&config, &tools, &workspace, home.as_deref()) {
            eprintln!("{warning}");
        }

        if errors.is_empty() && settings_errors == 0 {
            for line in crate::claude::rule_lines(&config, Some(&tools.keys().map(String::as_str).collect::<Vec<_>>()))
            {
                crate::output::outln!("{line}");
            }
            for line in crate::claude::hook_lines(&config) {
                crate::output::outln!("{line}");
            }
            let rules = config.permissions.allow.len() + config.permissions.ask.len() + config.permissions.deny.len();
            let h = &config.hooks;
            let hooks = h.all().count();
            crate::output::outln!(
                "{}: ok ({}, {}, {})",
                file.display(),
                count(config.tools.len(), "tool configured", "tools configured"),
                count(rules, "rule", "rules"),
                count(hooks, "hook", "hooks")
            );
            return Ok(0);
        }
        errors.sort_by_key(|e| (e.line, e.column));
        errors.dedup();
        for e in &errors {
            eprintln!("{e}");
        }
        let checked =
            if text.is_empty() && none_named { "the settings".to_string() } else { file.display().to_string() };
        eprintln!("{} in {checked}", count(errors.len() + settings_errors, "error", "errors"));
        Ok(crate::output::EXIT_USAGE)
    }
}

/// The tools `setup::load` would load with this config, by name: the embedded defaults (unless
/// `--no-default-tools`, or a `[tools.NAME] path` replaces one), every `*.wasm` in the `--tools`
/// directories, and the config's `path`s. Each is inspected rather than loaded into a runtime,
/// which would need the config to be valid. A `path` that is no tool, or a tool of another
/// name, is a config error at the path; other load failures are warnings, as in `setup::load`.
async fn find_tools(
    global: &GlobalArgs,
    config: &Config,
    errors: &mut Vec<ConfigError>,
) -> Result<BTreeMap<String, Found>> {
    let engine = ToolEngine::new(&EngineOptions::default())?;
    let cache = setup::cache_dir();
    let inspect = async |source: &ToolSource| toolhost::inspect(&engine, source, cache.as_deref()).await;
    let mut tools: BTreeMap<String, Found> = BTreeMap::new();
    let mut add = |name: String, found: Found| match tools.get(&name) {
        Some(existing) => eprintln!(
            "warning: {}: a tool named {name} is already loaded from {}; not loaded",
            found.origin, existing.origin
        ),
        None => {
            tools.insert(name, found);
        }
    };
    let found = |i: toolhost::Inspection, origin: String| {
        (i.info.name, Found { ceiling: i.info.capabilities, origin, sha256: i.sha256 })
    };

    let replaced = |name: &str| config.tools.get(name).is_some_and(|t| t.path.is_some());
    if !global.no_default_tools {
        for source in toolhost_default_tools::sources() {
            if source.known_name().is_some_and(replaced) {
                continue;
            }
            match inspect(&source).await {
                Ok(i) => {
                    let (name, f) = found(i, source.origin.to_string());
                    add(name, f);
                }
                Err(e) => eprintln!("warning: {}", toolhost::error_text(&e)),
            }
        }
    }
    for (name, tool) in &config.tools {
        // A path that is not a file was reported by the config check.
        let Some(path) = tool.path.as_ref().filter(|p| p.get_ref().is_file()) else { continue };
        let at = |message: String| config.error_at(path.span().start, format!("tools.{name}.path: {message}"));
        let source = match ToolSource::file(path.get_ref()) {
            Ok(s) => s,
            Err(e) => {
                errors.push(at(toolhost::error_text(&e)));
                continue;
            }
        };
        // A pinned file that does not match is not compiled, nor its `schema` run.
        let sha256 = hex::encode(<sha2::Sha256 as sha2::Digest>::digest(&source.bytes));
        if let Some(pin) = &tool.sha256
            && !pin.get_ref().eq_ignore_ascii_case(&sha256)
        {
            if pin.get_ref().len() == 64 && pin.get_ref().bytes().all(|b| b.is_ascii_hexdigit()) {
                errors.push(config.error_at(
                    pin.span().start,
                    format!(
                        "tools.{name}.sha256: the config pins {}, but {} has {sha256}; it would not load",
                        pin.get_ref(),
                        path.get_ref().display()
                    ),
                ));
            }
            continue;
        }
        match inspect(&source).await {
            Ok(i) if i.info.name != *name => {
                errors.push(at(format!("{} is a tool named {}, not {name}", path.get_ref().display(), i.info.name)));
            }
            Ok(i) => {
                let (name, f) = found(i, source.origin.to_string());
                add(name, f);
            }
            Err(e) => errors.push(at(format!("not a tool: {}", toolhost::error_text(&e)))),
        }
    }
    for dir in &global.tools {
        for file in crate::setup::wasm_files(dir)? {
            let source = match ToolSource::file(&file) {
                Ok(s) => s,
                Err(e) => {
                    eprintln!("warning: {e}");
                    continue;
                }
            };
            match inspect(&source).await {
                // A `[tools.NAME] path` owns NAME: a tools directory cannot take it over.
                Ok(i) if config.tools.get(&i.info.name).is_some_and(|t| t.path.is_some()) => {
                    let name = &i.info.name;
                    let owner = config.tools[name].path.as_ref().map(|p| p.get_ref().display().to_string());
                    errors.push(config.tool_error(
                        name,
                        &format!(
                            "{} declares the tool name {name:?}, which [tools.{name}] gives to {}; it would not load \
                             (rename one of them)",
                            file.display(),
                            owner.unwrap_or_default()
                        ),
                    ));
                }
                Ok(i) => {
                    let (name, f) = found(i, source.origin.to_string());
                    add(name, f);
                }
                Err(e) => eprintln!("warning: {}", toolhost::error_text(&e)),
            }
        }
    }
    Ok(tools)
}

/// A warning line (`FILE:LINE:COLUMN: warning: tools.NAME.grant: …`) for every configured
/// grant broader than an operator usually means, as the tool would get it, and for hook
/// scripts inside a directory some tool may write (the default grant included).
fn broad_grants(
    config: &Config,
    tools: &BTreeMap<String, Found>,
    workspace: &Path,
    home: Option<&Path>,
) -> Vec<String> {
    let warn = |e: ConfigError| format!("{}:{}:{}: warning: {}", e.file.display(), e.line, e.column, e.message);
    let mut lines = Vec::new();
    // Each script with the position of the command that runs it.
    let scripts: Vec<(PathBuf, usize)> = config
        .hooks
        .all()
        .flat_map(|hook| {
            let at = hook.command.span().start;
            // A hook whose paths cannot be protected is an error already.
            toolhost::policy::hook_protected_paths(hook, workspace, home)
                .unwrap_or_default()
                .into_iter()
                .map(move |s| (s, at))
        })
        .collect();
    let mut warned_scripts = std::collections::BTreeSet::new();
    for (name, found) in tools {
        let tool = config.tools.get(name);
        let grant = tool.and_then(|t| t.grant()).cloned().unwrap_or_else(Grant::workspace_read_write);
        let mut effective = effective_grant(&found.ceiling, &grant, workspace);
        effective.allow_private_network = tool.is_some_and(|t| t.allow_private_network);
        let at = |message: String| match tool.and_then(|t| t.grant.as_ref()) {
            Some(g) => config.error_at(g.span().start, format!("tools.{name}.grant: {message}")),
            None => config.tool_error(name, &message),
        };
        if tool.is_some() {
            lines.extend(grant_warnings(&effective, workspace).into_iter().map(|w| warn(at(w))));
        }
        for (script, at) in &scripts {
            if let Some(w) = hook_script_warning(&effective, script)
                && warned_scripts.insert(script.clone())
            {
                lines.push(warn(config.error_at(*at, format!("hooks: tool {name} (and maybe others): {w}"))));
            }
        }
    }
    lines
}

/// `1 error`, `3 errors`.
fn count(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}
