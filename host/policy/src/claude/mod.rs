//! Claude Code's settings files, read as they are: `~/.claude/settings.json` (user),
//! `.claude/settings.json` (project), `.claude/settings.local.json` (local) and a
//! `--settings FILE`, in that order of precedence, below `toolhost.toml`.
//!
//! What toolhost takes from them: `permissions.allow / ask / deny` (rules unioned across the
//! files, their path forms rooted as Claude Code roots them), `permissions.defaultMode` (the
//! highest file that sets one wins), `permissions.additionalDirectories`, `hooks` (the tool
//! events toolhost runs, `type: "command"`), `disableAllHooks` and `env` (for hooks).
//!
//! As in Claude Code, a project's own settings cannot approve themselves: the **allow** rules and
//! `additionalDirectories` of `.claude/settings.json` and `.claude/settings.local.json` apply
//! only once the workspace is trusted (`toolhost trust`); their deny and ask rules, mode, hooks
//! and `env` apply at once (hooks are pinned as the config's are). User settings and
//! `--settings` apply at once.
//!
//! Rules for Claude Code's tools that toolhost does not have (`Bash(...)`) are listed once as
//! ignored, never an error; a key Claude Code does not know is a warning; a malformed rule, a
//! value of the wrong type or a file that is not JSON is an error at its file, line and column.
//!
//! ## Example
//!
//! ```
//! use std::path::Path;
//! use toolhost_policy::claude::{ClaudeSettings, LoadOptions, SettingsSource};
//!
//! let text = r#"{"permissions": {"deny": ["Read(./.env)", "Bash(curl:*)"], "allow": ["Read(/docs/**)"]}}"#;
//! let opts = LoadOptions { workspace: Path::new("/w"), home: Some(Path::new("/home/u")), trusted: false };
//! let mut settings = ClaudeSettings::default();
//! settings.read(SettingsSource::Project, Path::new("/w/.claude/settings.json"), text, &opts).unwrap();
//! assert_eq!(settings.rules.len(), 2); // the deny rules; Bash's is kept, and listed as ignored
//! assert_eq!(settings.held.len(), 1); // the allow rule waits for `toolhost trust`
//! assert_eq!(settings.ignored.len(), 1);
//! ```

mod json;
mod rules;

use crate::config::ConfigError;
use crate::{HookConfig, HookMatcher, Mode, Rule};
use jsonc_parser::ast::{Object, Value};
pub use rules::CLAUDE_CODE_ONLY_TOOLS;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use toml::Spanned;

/// Which settings file a value came from, lowest precedence first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum SettingsSource {
    /// `~/.claude/settings.json` (or `$CLAUDE_CONFIG_DIR/settings.json`).
    User,
    /// `.claude/settings.json` in the workspace, shared with the repository.
    Project,
    /// `.claude/settings.local.json` in the workspace.
    Local,
    /// A file named by `--settings`.
    Flag,
    /// `.mcp.json` in the workspace: the project's MCP servers.
    McpJson,
    /// `~/.claude.json` (or `$CLAUDE_CONFIG_DIR/.claude.json`), Claude Code's own state: the
    /// user's MCP servers and those of this project added with `claude mcp add` (local scope).
    ClaudeJson,
}

impl SettingsSource {
    /// How Claude Code names it.
    pub fn name(self) -> &'static str {
        match self {
            SettingsSource::User => "user settings",
            SettingsSource::Project => "project settings",
            SettingsSource::Local => "local settings",
            SettingsSource::Flag => "--settings",
            SettingsSource::McpJson => "project MCP servers",
            SettingsSource::ClaudeJson => "user and local MCP servers",
        }
    }
}

/// Where a value was written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Origin {
    /// Which file.
    pub source: SettingsSource,
    /// The file.
    pub file: PathBuf,
    /// 1-based line.
    pub line: usize,
    /// 1-based column.
    pub column: usize,
}

impl std::fmt::Display for Origin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}:{}", self.file.display(), self.line, self.column)
    }
}

impl Origin {
    /// An error (or warning) at this position.
    pub fn error(&self, message: impl Into<String>) -> ConfigError {
        ConfigError { file: self.file.clone(), line: self.line, column: self.column, message: message.into() }
    }
}

/// Allow, ask or deny.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RuleKind {
    /// `permissions.allow`.
    Allow,
    /// `permissions.ask`.
    Ask,
    /// `permissions.deny`.
    Deny,
}

impl RuleKind {
    /// `allow`, `ask` or `deny`.
    pub fn name(self) -> &'static str {
        match self {
            RuleKind::Allow => "allow",
            RuleKind::Ask => "ask",
            RuleKind::Deny => "deny",
        }
    }
}

/// One rule of a settings file.
#[derive(Debug, Clone)]
pub struct SettingsRule {
    /// Which list it is in.
    pub kind: RuleKind,
    /// The rule, its path forms rooted (see `rules.rs`).
    pub rule: Rule,
    /// As written.
    pub written: String,
    /// Where.
    pub origin: Origin,
}

/// Something a settings file says that toolhost does not do, listed once.
#[derive(Debug, Clone)]
pub struct Ignored {
    /// What (`deny rule Bash(curl:*)`, `Stop hook`).
    pub what: String,
    /// Why it does nothing here.
    pub why: String,
    /// Where.
    pub origin: Origin,
}

/// The settings files toolhost looks for, lowest precedence first.
#[derive(Debug, Clone)]
pub struct SettingsPaths {
    /// `$CLAUDE_CONFIG_DIR/settings.json`, else `~/.claude/settings.json`.
    pub user: Option<PathBuf>,
    /// `WORKSPACE/.claude/settings.json`.
    pub project: PathBuf,
    /// `WORKSPACE/.claude/settings.local.json`.
    pub local: PathBuf,
    /// `--settings FILE`.
    pub flag: Option<PathBuf>,
    /// `WORKSPACE/.mcp.json`.
    pub mcp_json: PathBuf,
    /// `$CLAUDE_CONFIG_DIR/.claude.json`, else `~/.claude.json`.
    pub claude_json: Option<PathBuf>,
}

impl SettingsPaths {
    /// Where Claude Code would look, for `workspace`. `config_dir` is `$CLAUDE_CONFIG_DIR`.
    pub fn new(workspace: &Path, home: Option<&Path>, config_dir: Option<&Path>, flag: Option<&Path>) -> Self {
        let user_dir = config_dir.map(Path::to_path_buf).or_else(|| home.map(|h| h.join(".claude")));
        SettingsPaths {
            user: user_dir.map(|d| d.join("settings.json")),
            project: workspace.join(".claude").join("settings.json"),
            local: workspace.join(".claude").join("settings.local.json"),
            flag: flag.map(Path::to_path_buf),
            mcp_json: workspace.join(".mcp.json"),
            claude_json: config_dir.map(|d| d.join(".claude.json")).or_else(|| home.map(|h| h.join(".claude.json"))),
        }
    }

    /// Every file, lowest precedence first, with its source.
    pub fn all(&self) -> Vec<(SettingsSource, PathBuf)> {
        let mut out = Vec::new();
        if let Some(u) = &self.user {
            out.push((SettingsSource::User, u.clone()));
        }
        out.push((SettingsSource::Project, self.project.clone()));
        out.push((SettingsSource::Local, self.local.clone()));
        if let Some(f) = &self.flag {
            out.push((SettingsSource::Flag, f.clone()));
        }
        out.push((SettingsSource::McpJson, self.mcp_json.clone()));
        if let Some(c) = &self.claude_json {
            out.push((SettingsSource::ClaudeJson, c.clone()));
        }
        out
    }
}

/// What the reading of the files depends on.
#[derive(Debug, Clone, Copy)]
pub struct LoadOptions<'a> {
    /// The workspace (canonical): the project's root.
    pub workspace: &'a Path,
    /// The home directory (`~/`).
    pub home: Option<&'a Path>,
    /// Whether the workspace is trusted (`toolhost trust`): only then do the project settings'
    /// allow rules apply.
    pub trusted: bool,
}

/// Everything the settings files say, merged.
#[derive(Debug, Clone, Default)]
pub struct ClaudeSettings {
    /// The files read, lowest precedence first.
    pub files: Vec<(SettingsSource, PathBuf)>,
    /// Every rule that applies, in file order.
    pub rules: Vec<SettingsRule>,
    /// The allow rules of the project and local settings, held until the workspace is trusted.
    pub held: Vec<SettingsRule>,
    /// `defaultMode` of the highest file that sets one.
    pub mode: Option<(Mode, Origin)>,
    /// A `bypassPermissions` default of the project or local settings, held until the
    /// workspace is trusted: a cloned repository may not switch every question off.
    pub held_mode: Option<Origin>,
    /// The hooks, by toolhost's event key (`pre_tool_use`, …), each with its origin.
    pub hooks: Vec<(&'static str, HookConfig)>,
    /// `env`, later files overriding earlier ones: given to every hook.
    pub env: BTreeMap<String, String>,
    /// MCP servers (`.mcp.json`), by name.
    pub mcp_servers: Vec<(String, crate::McpServerConfig)>,
    /// The `.mcp.json` servers held until the workspace is trusted (their names and where).
    pub held_servers: Vec<(String, Origin)>,
    /// `disabledMcpjsonServers`: `.mcp.json` servers never started, and where each was named.
    pub disabled_servers: Vec<(String, Origin)>,
    /// `additionalDirectories`, absolute.
    pub additional_directories: Vec<(PathBuf, Origin)>,
    /// The `additionalDirectories` of the project and local settings, held until the
    /// workspace is trusted.
    pub held_directories: Vec<(PathBuf, Origin)>,
    /// What is listed once as doing nothing here.
    pub ignored: Vec<Ignored>,
    /// Keys Claude Code does not know, and values toolhost reads otherwise.
    pub warnings: Vec<ConfigError>,
    /// `permissions.disableBypassPermissionsMode: "disable"`, where: bypass mode may not be
    /// used, whoever asks for it (a file, the config, `--permission-mode`).
    pub bypass_disabled: Option<Origin>,
}

/// Top-level keys of Claude Code's settings that toolhost has no use for: silently accepted.
const OTHER_KEYS: &[&str] = &[
    "$schema",
    "apiKeyHelper",
    "attribution",
    "alwaysThinkingEnabled",
    "allowManagedHooksOnly",
    "allowManagedPermissionRulesOnly",
    "allowedMcpServers",
    "autoUpdatesChannel",
    "availableModels",
    "awsAuthRefresh",
    "awsCredentialExport",
    "cleanupPeriodDays",
    "companyAnnouncements",
    "deniedMcpServers",
    "enableAllProjectMcpServers",
    "enabledMcpjsonServers",
    "enabledPlugins",
    "extraKnownMarketplaces",
    "feedbackSurveyRate",
    "fileSuggestion",
    "forceLoginMethod",
    "forceLoginOrgUUID",
    "includeCoAuthoredBy",
    "language",
    "mcpServers",
    "model",
    "otelHeadersHelper",
    "outputStyle",
    "plansDirectory",
    "prefersReducedMotion",
    "respectGitignore",
    "sandbox",
    "showTurnDuration",
    "skipWebFetchPreflight",
    "spinnerTipsEnabled",
    "spinnerTipsOverride",
    "spinnerVerbs",
    "statusLine",
    "terminalProgressBarEnabled",
    "theme",
    "verbose",
];

/// Claude Code's hook events toolhost does not run (yet): their hooks are listed as ignored.
const OTHER_EVENTS: &[&str] = &[
    "Notification",
    "SessionEnd",
    "StopFailure",
    "SubagentStart",
    "SubagentStop",
    "PreCompact",
    "PostCompact",
    "PermissionRequest",
    "PermissionDenied",
    "Setup",
    "TeammateIdle",
    "TaskCreated",
    "TaskCompleted",
    "Elicitation",
    "ElicitationResult",
    "ConfigChange",
    "WorktreeCreate",
    "WorktreeRemove",
    "InstructionsLoaded",
    "CwdChanged",
    "FileChanged",
    "PostToolBatch",
    "UserPromptExpansion",
];

/// Whether a variable decides which programs, libraries or start-up files a hook's programs
/// load ([`crate::launch::LOADER_VARIABLES`]: `PATH`, `LD_PRELOAD`, `PYTHONPATH`, `GIT_DIR`,
/// …). A settings file may not set one for hooks: it would make a hook run code from a place
/// nothing pins or protects.
fn changes_what_runs(name: &str) -> bool {
    crate::launch::loader_variable(name).is_some()
}

/// A hook's timeout when its settings give none: Claude Code's, ten minutes.
pub const DEFAULT_HOOK_TIMEOUT_MS: u64 = 600_000;

impl ClaudeSettings {
    /// Read every file of `paths` that exists, lowest precedence first.
    ///
    /// # Errors
    ///
    /// Every error of every file: unreadable, not UTF-8, not JSON, a value of the wrong type, a
    /// malformed rule, matcher or mode.
    pub fn load(paths: &SettingsPaths, opts: &LoadOptions<'_>) -> Result<ClaudeSettings, Vec<ConfigError>> {
        let mut settings = ClaudeSettings::default();
        let mut errors = Vec::new();
        for (source, path) in paths.all() {
            let cap = if source == SettingsSource::ClaudeJson { MAX_CLAUDE_JSON_BYTES } else { MAX_SETTINGS_BYTES };
            let bytes = match read_capped(&path, cap) {
                Ok(bytes) => bytes,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound && source != SettingsSource::Flag => continue,
                Err(e) => {
                    errors.push(ConfigError {
                        file: path.clone(),
                        line: 0,
                        column: 0,
                        message: format!("cannot read {}: {e}", source.name()),
                    });
                    continue;
                }
            };
            let text = match String::from_utf8(bytes) {
                Ok(text) => text,
                Err(e) => {
                    let valid = e.utf8_error().valid_up_to();
                    let before = String::from_utf8_lossy(&e.as_bytes()[..valid]).into_owned();
                    let origin = json::origin(&before, &path, source, valid);
                    errors.push(origin.error(format!("not UTF-8: byte 0x{:02x}", e.as_bytes()[valid])));
                    continue;
                }
            };
            if let Err(mut e) = settings.read(source, &path, &text, opts) {
                errors.append(&mut e);
            }
        }
        if errors.is_empty() { Ok(settings) } else { Err(errors) }
    }

    /// Read one file's `text` into these settings (above what is there already).
    ///
    /// # Errors
    ///
    /// Every error of the file.
    pub fn read(
        &mut self,
        source: SettingsSource,
        file: &Path,
        text: &str,
        opts: &LoadOptions<'_>,
    ) -> Result<(), Vec<ConfigError>> {
        let mut reader = Reader { settings: self, source, file, text, opts, errors: Vec::new() };
        reader.document();
        let mut errors = reader.errors;
        errors.sort_by_key(|e| (e.line, e.column));
        self.files.push((source, file.to_path_buf()));
        if errors.is_empty() { Ok(()) } else { Err(errors) }
    }
}

/// A settings file is a few kilobytes; one larger than this is refused rather than read.
pub const MAX_SETTINGS_BYTES: u64 = 4 << 20;

/// `~/.claude.json` keeps Claude Code's state of every project (histories included), so it
/// may be far larger than a settings file.
pub const MAX_CLAUDE_JSON_BYTES: u64 = 64 << 20;

/// The bytes of a settings file, at most `cap`.
fn read_capped(path: &Path, cap: u64) -> std::io::Result<Vec<u8>> {
    use std::io::Read as _;
    // Only a regular file: a FIFO or a device (behind a link a repository may bring) would
    // block the start or never end.
    if !std::fs::metadata(path)?.is_file() {
        return Err(std::io::Error::other("not a regular file"));
    }
    let mut bytes = Vec::new();
    std::fs::File::open(path)?.take(cap + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > cap {
        return Err(std::io::Error::other(format!("larger than {cap} bytes")));
    }
    Ok(bytes)
}

/// Reads one file.
struct Reader<'s, 't> {
    settings: &'s mut ClaudeSettings,
    source: SettingsSource,
    file: &'t Path,
    text: &'t str,
    opts: &'t LoadOptions<'t>,
    errors: Vec<ConfigError>,
}

impl Reader<'_, '_> {
    fn at(&self, offset: usize) -> Origin {
        json::origin(self.text, self.file, self.source, offset)
    }

    fn error(&mut self, offset: usize, message: String) {
        let e = self.at(offset).error(message);
        self.errors.push(e);
    }

    fn warn(&mut self, offset: usize, message: String) {
        let e = self.at(offset).error(message);
        self.settings.warnings.push(e);
    }

    fn ignore(&mut self, offset: usize, what: String, why: &str) {
        let origin = self.at(offset);
        self.settings.ignored.push(Ignored { what, why: why.to_string(), origin });
    }

    /// Whether what widens (allow rules, additional directories) waits for the workspace's
    /// trust: in the files inside the workspace, which a cloned repository brings, as in
    /// Claude Code (project and local settings alike).
    fn gated(&self) -> bool {
        matches!(self.source, SettingsSource::Project | SettingsSource::Local | SettingsSource::McpJson)
            && !self.opts.trusted
    }

    /// Where `/x` starts for this file (see [`rules`]).
    fn root(&self) -> PathBuf {
        match self.source {
            SettingsSource::Project | SettingsSource::Local | SettingsSource::McpJson => {
                self.opts.workspace.to_path_buf()
            }
            SettingsSource::User | SettingsSource::Flag | SettingsSource::ClaudeJson => {
                self.file.parent().map_or_else(|| self.opts.workspace.to_path_buf(), Path::to_path_buf)
            }
        }
    }

    fn document(&mut self) {
        let text = self.text;
        let value = match json::parse(text) {
            Ok(Some(value)) => value,
            // An empty file says nothing.
            Ok(None) => return,
            Err((offset, why)) => return self.error(offset, format!("not JSON: {why}")),
        };
        let Value::Object(root) = &value else {
            return self
                .error(json::start(&value), format!("settings must be a JSON object, not {}", json::kind(&value)));
        };
        if self.source == SettingsSource::McpJson {
            return self.mcp_json(root);
        }
        if self.source == SettingsSource::ClaudeJson {
            return self.claude_json(root);
        }
        let mut disable_hooks = false;
        if let Some(p) = root.properties.iter().find(|p| json::name(&p.name) == "disableAllHooks") {
            match &p.value {
                Value::BooleanLit(b) => disable_hooks = b.value,
                v => self.error(json::start(v), format!("disableAllHooks: must be a boolean, not {}", json::kind(v))),
            }
        }
        for prop in &root.properties {
            let key = json::name(&prop.name);
            match key {
                "permissions" => self.permissions(&prop.value),
                "hooks" if disable_hooks => {
                    let at = json::start(&prop.value);
                    self.ignore(at, "hooks".to_string(), "disableAllHooks is true in this file");
                }
                "hooks" => self.hooks(&prop.value),
                "env" => self.env(&prop.value),
                "disableAllHooks" => {}
                "disabledMcpjsonServers" => {
                    for (name, at) in self.strings(&prop.value, "disabledMcpjsonServers") {
                        let origin = self.at(at);
                        self.settings.disabled_servers.push((name, origin));
                    }
                }
                k if OTHER_KEYS.contains(&k) => {}
                k => self.warn(prop.range.start, format!("unknown key {k:?}: Claude Code has no such setting")),
            }
        }
    }

    /// `.mcp.json`: `{"mcpServers": {NAME: {"command", "args", "env"} | {"type": "http",
    /// "url", "headers"}}}`. A project's servers run (or are reached) only once the workspace
    /// is trusted, as Claude Code asks before it starts them.
    fn mcp_json(&mut self, root: &Object<'_>) {
        for prop in &root.properties {
            if json::name(&prop.name) != "mcpServers" {
                self.warn(prop.range.start, format!("unknown key {:?} in .mcp.json", json::name(&prop.name)));
                continue;
            }
            for (name, config, at) in self.servers(&prop.value, "mcpServers") {
                let disabled = self.settings.disabled_servers.iter().find(|(n, _)| *n == name).map(|(_, o)| o.clone());
                if let Some(where_) = disabled {
                    self.ignore(
                        at,
                        format!("mcpServers.{name}"),
                        &format!("disabledMcpjsonServers lists it ({where_})"),
                    );
                } else if self.gated() {
                    let origin = self.at(at);
                    self.settings.held_servers.push((name, origin));
                } else {
                    self.settings.mcp_servers.push((name, config));
                }
            }
        }
    }

    /// The servers of an `mcpServers` object: name, config (with its origin) and offset.
    fn servers(&mut self, value: &Value<'_>, path: &str) -> Vec<(String, crate::McpServerConfig, usize)> {
        let Some(servers) = self.object(value, path) else { return Vec::new() };
        let mut out = Vec::new();
        for server in &servers.properties {
            let name = json::name(&server.name).to_string();
            let path = format!("{path}.{name}");
            let Some(fields) = self.object(&server.value, &path) else { continue };
            if let Some(config) = self.mcp_server(&path, fields) {
                let origin = self.at(server.range.start);
                out.push((name, crate::McpServerConfig { origin: Some(origin), ..config }, server.range.start));
            }
        }
        out
    }

    /// `~/.claude.json`, Claude Code's own state file: only its MCP servers are read, the
    /// user's (`mcpServers`) and this workspace's (`projects[WORKSPACE].mcpServers`, what
    /// `claude mcp add` writes by default); everything else in it passes unread. The person
    /// wrote both (it is not in the workspace), so they need no trust, but they are pinned
    /// like every server. As in Claude Code, a local server wins over the project's
    /// `.mcp.json` one of the same name, which wins over a user one.
    fn claude_json(&mut self, root: &Object<'_>) {
        let mut local = Vec::new();
        let mut user = Vec::new();
        for prop in &root.properties {
            match json::name(&prop.name) {
                "mcpServers" => user = self.servers(&prop.value, "mcpServers"),
                "projects" => {
                    let Value::Object(projects) = &prop.value else { continue };
                    let workspace = self.opts.workspace;
                    for project in projects.properties.iter().filter(|p| Path::new(json::name(&p.name)) == workspace) {
                        let Value::Object(fields) = &project.value else { continue };
                        for field in fields.properties.iter().filter(|f| json::name(&f.name) == "mcpServers") {
                            let path = format!("projects[{:?}].mcpServers", json::name(&project.name));
                            local = self.servers(&field.value, &path);
                        }
                    }
                }
                _ => {}
            }
        }
        // The first of a name wins where the config takes them.
        let project = std::mem::take(&mut self.settings.mcp_servers);
        self.settings.mcp_servers = local
            .into_iter()
            .map(|(n, c, _)| (n, c))
            .chain(project)
            .chain(user.into_iter().map(|(n, c, _)| (n, c)))
            .collect();
    }

    fn mcp_server(&mut self, path: &str, fields: &Object<'_>) -> Option<crate::McpServerConfig> {
        let mut config = crate::McpServerConfig::default();
        let mut kind = None;
        for prop in &fields.properties {
            let key = json::name(&prop.name);
            match (key, &prop.value) {
                ("type", Value::StringLit(s)) => kind = Some((s.value.to_string(), s.range.start)),
                ("command", Value::StringLit(s)) => {
                    config.command = Some(Spanned::new(s.range.start..s.range.end, s.value.to_string()));
                }
                ("url", Value::StringLit(s)) => {
                    config.url = Some(Spanned::new(s.range.start..s.range.end, s.value.to_string()));
                }
                ("args", v) => {
                    config.args = self.strings(v, &format!("{path}.args")).into_iter().map(|(a, _)| a).collect();
                }
                ("env" | "headers", Value::Object(o)) => {
                    let mut map = std::collections::BTreeMap::new();
                    for p in &o.properties {
                        match &p.value {
                            Value::StringLit(v) => {
                                map.insert(json::name(&p.name).to_string(), v.value.to_string());
                            }
                            v => self.error(
                                json::start(v),
                                format!("{path}.{key}.{}: must be a string", json::name(&p.name)),
                            ),
                        }
                    }
                    if key == "env" {
                        config.env = map;
                    } else {
                        config.headers = map;
                    }
                }
                ("files", v) => {
                    config.files = Some(
                        self.strings(v, &format!("{path}.files"))
                            .into_iter()
                            .map(|(f, at)| Spanned::new(at..at, PathBuf::from(f)))
                            .collect(),
                    );
                }
                ("type" | "command" | "url" | "env" | "headers", v) => {
                    let want = if matches!(key, "env" | "headers") { "an object" } else { "a string" };
                    self.error(json::start(v), format!("{path}.{key}: must be {want}, not {}", json::kind(v)));
                    return None;
                }
                ("oauth" | "timeout" | "alwaysLoad", _) => {}
                (k, _) => self.warn(prop.range.start, format!("{path}: unknown key {k:?}")),
            }
        }
        match (kind.as_ref().map(|(k, at)| (k.as_str(), *at)), &config.command, &config.url) {
            (None | Some(("stdio", _)), Some(_), None) | (None | Some(("http", _)), None, Some(_)) => Some(config),
            (Some(("sse", at)), _, _) => {
                let why = "toolhost speaks streamable HTTP and stdio, not the older SSE transport";
                self.ignore(at, format!("{path} (type sse)"), why);
                None
            }
            _ => {
                let why = "a server has either \"command\" (stdio) or \"url\" (\"type\": \"http\")";
                self.error(fields.range.start, format!("{path}: {why}"));
                None
            }
        }
    }

    fn object<'v, 'a>(&mut self, value: &'v Value<'a>, path: &str) -> Option<&'v Object<'a>> {
        match value {
            Value::Object(o) => Some(o),
            v => {
                self.error(json::start(v), format!("{path}: must be an object, not {}", json::kind(v)));
                None
            }
        }
    }

    /// The strings of an array, with their offsets; a non-string element is an error.
    fn strings(&mut self, value: &Value<'_>, path: &str) -> Vec<(String, usize)> {
        let Value::Array(a) = value else {
            self.error(json::start(value), format!("{path}: must be an array of strings, not {}", json::kind(value)));
            return Vec::new();
        };
        let mut out = Vec::new();
        for (i, v) in a.elements.iter().enumerate() {
            match v {
                Value::StringLit(s) => out.push((s.value.to_string(), s.range.start)),
                v => self.error(json::start(v), format!("{path}[{i}]: must be a string, not {}", json::kind(v))),
            }
        }
        out
    }

    fn permissions(&mut self, value: &Value<'_>) {
        let Some(perms) = self.object(value, "permissions") else { return };
        for prop in &perms.properties {
            let key = json::name(&prop.name);
            match key {
                "allow" => self.rules(RuleKind::Allow, &prop.value),
                "ask" => self.rules(RuleKind::Ask, &prop.value),
                "deny" => self.rules(RuleKind::Deny, &prop.value),
                "defaultMode" => self.mode(&prop.value),
                "additionalDirectories" => {
                    for (dir, at) in self.strings(&prop.value, "permissions.additionalDirectories") {
                        self.directory(&dir, at);
                    }
                }
                "disableBypassPermissionsMode" => match &prop.value {
                    Value::StringLit(v) if v.value == "disable" => {
                        self.settings.bypass_disabled = Some(self.at(v.range.start));
                    }
                    v => self.error(
                        json::start(v),
                        "permissions.disableBypassPermissionsMode: the only value is \"disable\"".to_string(),
                    ),
                },
                "disableAutoMode" => {}
                k => self.warn(
                    prop.range.start,
                    format!("unknown key \"permissions.{k}\": Claude Code has no such setting"),
                ),
            }
        }
    }

    fn rules(&mut self, kind: RuleKind, value: &Value<'_>) {
        let path = format!("permissions.{}", kind.name());
        let root = self.root();
        for (text, at) in self.strings(value, &path) {
            match rules::translate(&text, self.source, &root, self.opts.workspace, self.opts.home) {
                Err(e) => self.error(at, format!("{path}: {e}")),
                Ok(t) => {
                    if t.foreign {
                        self.ignore(
                            at,
                            format!("{} rule {text}", kind.name()),
                            "toolhost has no such tool; kept, should one of that name be loaded",
                        );
                    }
                    // Claude Code ignores a `Write(path)` rule: path rules for writing are
                    // `Edit(...)`. An allow rule is dropped as it does; a deny or ask rule is
                    // kept (stricter than Claude Code, never wider), with a note.
                    if t.rule.tool == "Write" && t.rule.pattern.is_some() {
                        let why = if kind == RuleKind::Allow {
                            "Claude Code ignores Write(path) rules; write Edit(path) to allow writes there"
                        } else {
                            "Claude Code ignores Write(path) rules (write Edit(path)); toolhost keeps this one"
                        };
                        self.ignore(at, format!("{} rule {text}", kind.name()), why);
                        if kind == RuleKind::Allow {
                            continue;
                        }
                    }
                    let rule = SettingsRule { kind, rule: t.rule, written: text, origin: self.at(at) };
                    if kind == RuleKind::Allow && self.gated() {
                        self.settings.held.push(rule);
                    } else {
                        self.settings.rules.push(rule);
                    }
                }
            }
        }
    }

    fn mode(&mut self, value: &Value<'_>) {
        let Value::StringLit(s) = value else {
            return self.error(
                json::start(value),
                format!("permissions.defaultMode: must be a string, not {}", json::kind(value)),
            );
        };
        let at = s.range.start;
        let mode = match s.value.as_ref() {
            // `manual` is Claude Code's later name of the default mode.
            "manual" => Ok(Mode::Default),
            "auto" => {
                self.warn(
                    at,
                    "permissions.defaultMode: \"auto\" needs Claude Code's classifier; toolhost uses \"default\""
                        .to_string(),
                );
                Ok(Mode::Default)
            }
            other => other.parse::<Mode>(),
        };
        match mode {
            Ok(Mode::Bypass) if self.gated() => self.settings.held_mode = Some(self.at(at)),
            Ok(mode) => self.settings.mode = Some((mode, self.at(at))),
            Err(e) => self.error(at, format!("permissions.defaultMode: {e}")),
        }
    }

    fn directory(&mut self, dir: &str, at: usize) {
        let path = if let Some(rest) = dir.strip_prefix("~/").or_else(|| (dir == "~").then_some("")) {
            match self.opts.home {
                Some(home) => home.join(rest),
                None => return self.error(at, format!("permissions.additionalDirectories: {dir:?}: HOME is not set")),
            }
        } else {
            self.opts.workspace.join(dir)
        };
        let origin = self.at(at);
        let entry = (crate::normalize(&path), origin);
        // Like an allow rule, the workspace's own directories wait for its trust.
        if self.gated() {
            self.settings.held_directories.push(entry);
        } else {
            self.settings.additional_directories.push(entry);
        }
    }

    fn env(&mut self, value: &Value<'_>) {
        let Some(env) = self.object(value, "env") else { return };
        for prop in &env.properties {
            let key = json::name(&prop.name).to_string();
            if changes_what_runs(&key) {
                self.ignore(
                    prop.range.start,
                    format!("env {key}"),
                    "it would change which programs and libraries a hook runs, outside what is pinned",
                );
                continue;
            }
            match &prop.value {
                Value::StringLit(s) => {
                    self.settings.env.insert(key, s.value.to_string());
                }
                // Claude Code passes numbers and booleans on as their text.
                Value::NumberLit(n) => {
                    self.settings.env.insert(key, n.value.to_string());
                }
                Value::BooleanLit(b) => {
                    self.settings.env.insert(key, b.value.to_string());
                }
                v => self.error(json::start(v), format!("env.{key}: must be a string, not {}", json::kind(v))),
            }
        }
    }

    fn hooks(&mut self, value: &Value<'_>) {
        let Some(events) = self.object(value, "hooks") else { return };
        for prop in &events.properties {
            let event = json::name(&prop.name);
            let key = match event {
                "PreToolUse" => "pre_tool_use",
                "PostToolUse" => "post_tool_use",
                "PostToolUseFailure" => "post_tool_use_failure",
                "SessionStart" => "session_start",
                "UserPromptSubmit" => "user_prompt_submit",
                "Stop" => "stop",
                e if OTHER_EVENTS.contains(&e) => {
                    self.ignore(prop.range.start, format!("{e} hooks"), "toolhost does not run this event");
                    continue;
                }
                e => {
                    self.warn(prop.range.start, format!("hooks: unknown event {e:?}: Claude Code has no such event"));
                    continue;
                }
            };
            let path = format!("hooks.{event}");
            let Value::Array(groups) = &prop.value else {
                self.error(
                    json::start(&prop.value),
                    format!("{path}: must be an array, not {}", json::kind(&prop.value)),
                );
                continue;
            };
            for (g, group) in groups.elements.iter().enumerate() {
                let path = format!("{path}[{g}]");
                let Some(group) = self.object(group, &path) else { continue };
                self.hook_group(key, &path, group);
            }
        }
    }

    /// `{"matcher": "...", "hooks": [{"type": "command", "command": "...", "timeout": 30}]}`.
    fn hook_group(&mut self, key: &'static str, path: &str, group: &Object<'_>) {
        let mut matcher: Option<Spanned<HookMatcher>> = None;
        let mut hooks = None;
        for prop in &group.properties {
            match (json::name(&prop.name), &prop.value) {
                ("matcher", Value::StringLit(s)) => match s.value.parse::<HookMatcher>() {
                    Ok(m) => matcher = Some(Spanned::new(s.range.start..s.range.end, m)),
                    Err(e) => self.error(s.range.start, format!("{path}.matcher: {e}")),
                },
                ("matcher", v) => {
                    self.error(json::start(v), format!("{path}.matcher: must be a string, not {}", json::kind(v)))
                }
                ("hooks", Value::Array(a)) => hooks = Some(a),
                ("hooks", v) => {
                    self.error(json::start(v), format!("{path}.hooks: must be an array, not {}", json::kind(v)))
                }
                (k, _) => self.warn(prop.range.start, format!("{path}: unknown key {k:?}")),
            }
        }
        let Some(hooks) = hooks else {
            return self.error(group.range.start, format!("{path}: no \"hooks\" array"));
        };
        for (i, hook) in hooks.elements.iter().enumerate() {
            let path = format!("{path}.hooks[{i}]");
            let Some(hook) = self.object(hook, &path) else { continue };
            if let Some(config) = self.hook(key, &path, hook, matcher.clone()) {
                self.settings.hooks.push((key, config));
            }
        }
    }

    fn hook(
        &mut self,
        key: &'static str,
        path: &str,
        hook: &Object<'_>,
        matcher: Option<Spanned<HookMatcher>>,
    ) -> Option<HookConfig> {
        let mut kind = None;
        let mut what = None;
        let mut command = None;
        let mut timeout_ms = None;
        let mut files = None;
        let mut condition = None;
        let mut ok = true;
        for prop in &hook.properties {
            let key = json::name(&prop.name);
            match (key, &prop.value) {
                ("type", Value::StringLit(s)) => kind = Some((s.value.to_string(), s.range.start)),
                ("command", Value::StringLit(s)) => {
                    command = Some(Spanned::new(s.range.start..s.range.end, s.value.to_string()))
                }
                ("timeout", Value::NumberLit(n)) => match n.value.parse::<f64>() {
                    Ok(secs) if secs > 0.0 && secs.is_finite() => {
                        let ms = (secs * 1000.0).ceil().min(i64::MAX as f64) as i64;
                        timeout_ms = Some(Spanned::new(n.range.start..n.range.end, ms));
                    }
                    _ => {
                        ok = false;
                        self.error(n.range.start, format!("{path}.timeout: must be a positive number of seconds"));
                    }
                },
                // toolhost's own key: the files the command runs, when it cannot be analysed.
                ("files", v) => {
                    files = Some(
                        self.strings(v, &format!("{path}.files"))
                            .into_iter()
                            .map(|(f, at)| Spanned::new(at..at, PathBuf::from(f)))
                            .collect(),
                    );
                }
                // Claude Code's per-hook condition, in permission-rule syntax: the hook runs only
                // for calls the rule covers.
                ("if", Value::StringLit(s)) => {
                    let root = self.root();
                    match rules::translate(&s.value, self.source, &root, self.opts.workspace, self.opts.home) {
                        Ok(t) => condition = Some(t.rule),
                        Err(e) => {
                            ok = false;
                            self.error(s.range.start, format!("{path}.if: {e}"));
                        }
                    }
                }
                ("async", Value::BooleanLit(b)) if b.value => {
                    self.warn(b.range.start, format!("{path}.async: toolhost waits for the hook, as for any other"));
                }
                ("url" | "prompt" | "tool" | "server", Value::StringLit(s)) if what.is_none() => {
                    what = Some(s.value.chars().take(200).collect::<String>());
                }
                (
                    "shell" | "statusMessage" | "once" | "async" | "asyncRewake" | "prompt" | "model" | "url"
                    | "headers" | "allowedEnvVars" | "args" | "tool" | "server" | "input",
                    _,
                ) => {}
                ("type" | "command" | "timeout" | "if", v) => {
                    ok = false;
                    self.error(
                        json::start(v),
                        format!(
                            "{path}.{key}: must be {}, not {}",
                            if key == "timeout" { "a number" } else { "a string" },
                            json::kind(v)
                        ),
                    );
                }
                (k, _) => self.warn(prop.range.start, format!("{path}: unknown key {k:?}")),
            }
        }
        match kind {
            Some((k, _)) if k == "command" => {}
            // A PreToolUse hook may deny: one toolhost cannot run refuses what it matches.
            Some((k, at)) if key == "pre_tool_use" => {
                self.warn(
                    at,
                    format!(
                        "{path}: a {k:?} PreToolUse hook, which toolhost does not run yet: every call it matches is \
                         refused"
                    ),
                );
                let origin = self.at(at);
                let about = what.map_or_else(String::new, |w| format!(" {w}"));
                return Some(HookConfig {
                    matcher,
                    command: Spanned::new(at..at, format!("{k} hook{about}")),
                    files: None,
                    timeout_ms: None,
                    origin: Some(origin.clone()),
                    condition,
                    refuses: Some(format!(
                        "the {k:?} PreToolUse hook at {origin} cannot run here (toolhost does not run {k:?} hooks \
                         yet), and it might have denied this call"
                    )),
                });
            }
            Some((k, at)) => {
                self.ignore(at, format!("a {k:?} hook"), "toolhost runs command hooks only");
                return None;
            }
            None => {
                self.error(hook.range.start, format!("{path}: no \"type\" (\"command\")"));
                return None;
            }
        }
        let Some(command) = command else {
            self.error(hook.range.start, format!("{path}: a command hook needs \"command\""));
            return None;
        };
        if !ok {
            return None;
        }
        let origin = self.at(command.span().start);
        let timeout_ms = timeout_ms.or(Some(Spanned::new(0..0, DEFAULT_HOOK_TIMEOUT_MS as i64)));
        Some(HookConfig { matcher, command, files, timeout_ms, origin: Some(origin), condition, refuses: None })
    }
}

#[cfg(test)]
mod tests;
