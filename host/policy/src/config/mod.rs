//! The `toolhost.toml` document, parsed strictly: an unknown key or a malformed value is an
//! error naming the file, the line, the column and the key path.
//!
//! [`Config::check`] reports every error at once, sorted by position; [`Config::parse`] stops at
//! the first. Both read the document with `toml`'s recovering parser, then deserialize it with
//! serde; when a part fails, its keys (and array elements) are tried one by one, so each bad key
//! is reported once, at its own position, and the rest of the document is still checked.
//!
//! ## Example
//!
//! ```
//! use std::path::Path;
//! use toolhost_policy::Config;
//!
//! let text = "[limits]\nmax_concurrency = 0\n\n[tools.Read]\ngrant = { fs_reed = [] }\n";
//! let errors = Config::check(text, Path::new("toolhost.toml")).unwrap_err();
//! let shown: Vec<String> = errors.iter().map(ToString::to_string).collect();
//! assert_eq!(shown.len(), 2);
//! assert!(shown[0].starts_with("toolhost.toml:2:19: limits.max_concurrency: must be at least 1"));
//! assert!(shown[1].starts_with("toolhost.toml:5:11: tools.Read.grant.fs_reed: unknown field"));
//! ```

mod check;
mod limits;

use crate::limits::limits_table;
use crate::{Grant, HookMatcher, Limits, Mode, PathPattern, Rule, Rules, normalize};
pub(crate) use check::line_col;
use check::{check_document, error_at, key_path};
pub use limits::LimitsConfig;
use limits::tool_config;
use serde::Deserialize;
use serde::de::DeserializeOwned;
use std::collections::{BTreeMap, BTreeSet};
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use toml::Spanned;

/// A whole config file.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// Defaults for every tool.
    #[serde(default)]
    pub limits: LimitsConfig,
    /// Permission mode and rules.
    #[serde(default)]
    pub permissions: PermissionsConfig,
    /// Per-tool settings, by tool name.
    #[serde(default)]
    pub tools: BTreeMap<String, ToolConfig>,
    /// Command hooks.
    #[serde(default)]
    pub hooks: HooksConfig,
    /// Which certificate authorities the tools' HTTPS requests trust.
    #[serde(default)]
    pub tls: TlsConfig,
    /// Whose signatures installed tools (`source`) must carry (see [`crate::SignaturesConfig`]).
    #[serde(default, alias = "trust")]
    pub signatures: crate::SignaturesConfig,
    /// Where every permission decision and call is recorded (see [`AuditConfig`]).
    #[serde(default)]
    pub audit: AuditConfig,
    /// MCP servers whose tools join the pool as `mcp__NAME__TOOL` (see [`McpServerConfig`]).
    #[serde(default)]
    pub mcp_servers: BTreeMap<String, McpServerConfig>,
    /// Whether Claude Code's settings files are read too (`.claude/settings.json` and the
    /// others, see [`crate::claude`]); default true.
    pub claude_settings: Option<bool>,
    /// What the Claude Code settings files said, once merged in ([`Config::merge_claude`]):
    /// kept to show where each rule and hook came from.
    #[serde(skip)]
    pub claude: Option<Arc<crate::claude::ClaudeSettings>>,
    /// The text it was read from, so that errors found later (a grant beyond a tool's ceiling, a
    /// section for a tool that is not loaded) can point into it. `None` for a config built in code.
    #[serde(skip)]
    source: Option<Arc<Source>>,
}

/// A config file's text and the positions of its `[tools.NAME]` keys.
struct Source {
    file: PathBuf,
    text: String,
    tool_keys: BTreeMap<String, usize>,
}

impl std::fmt::Debug for Source {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Source").field("file", &self.file).finish_non_exhaustive()
    }
}
/// `[permissions]`: the mode, the allow / ask / deny rules (Claude Code syntax), and the
/// files other programs run that tools may write only with a person's yes.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PermissionsConfig {
    /// `default`, `accept-edits`, `bypass`, `dont-ask` or `plan` (a value that is none of
    /// them is an error at its position, never a default).
    pub mode: Option<Spanned<Mode>>,
    /// Calls allowed without asking (each rule parsed as the file is read).
    #[serde(default)]
    pub allow: Vec<Spanned<Rule>>,
    /// Calls that need a person's yes.
    #[serde(default)]
    pub ask: Vec<Spanned<Rule>>,
    /// Calls refused.
    #[serde(default)]
    pub deny: Vec<Spanned<Rule>>,
    /// Gitignore-style patterns ([`PathPattern`]) of files other programs run, on top of
    /// [`crate::DEFAULT_ASK_BEFORE_WRITING`]: a tool's write to one needs a person's yes for
    /// that very call, in every mode (see [`crate::PathPolicy::ask_before_writing`]).
    #[serde(default)]
    pub protected: Vec<Spanned<String>>,
    /// Directories besides the workspace that tools get as they get the workspace (in the
    /// default grant, within each tool's ceiling) and that count as inside it for the mode's
    /// default: Claude Code's `additionalDirectories`, from its settings files.
    #[serde(skip)]
    pub additional_directories: Vec<PathBuf>,
}

impl PermissionsConfig {
    /// The mode (`default` when absent).
    pub fn mode(&self) -> Mode {
        self.mode.as_ref().map_or(Mode::Default, |m| *m.get_ref())
    }

    /// The extra ask-before-writing patterns as written (checked at parse time), for
    /// [`crate::PathPolicy::ask_before_writing`].
    pub fn protected(&self) -> Vec<&str> {
        self.protected.iter().map(|p| p.get_ref().as_str()).collect()
    }

    /// The rules.
    pub fn rules(&self) -> Rules {
        let all = |v: &[Spanned<Rule>]| v.iter().map(|r| r.get_ref().clone()).collect();
        Rules {
            allow: all(&self.allow),
            ask: all(&self.ask),
            deny: all(&self.deny),
            working_dirs: self.additional_directories.clone(),
        }
    }
}

/// `[tls]`: root certificates for the tools' HTTPS requests (`wasi:http`).
///
/// The built-in roots are Mozilla's (the `webpki-roots` bundle), the same on every machine
/// whatever the system's store holds. `ca_files` adds roots: an internal CA, or a test CA.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TlsConfig {
    /// PEM files of extra root certificates, relative to the config file.
    #[serde(default)]
    pub ca_files: Vec<Spanned<PathBuf>>,
}

impl TlsConfig {
    /// The extra root files (resolved against the config file's directory at parse time).
    pub fn ca_files(&self) -> Vec<PathBuf> {
        self.ca_files.iter().map(|f| f.get_ref().clone()).collect()
    }
}

/// `[audit]`: the audit log, one JSON line per permission decision and per finished call.
///
/// Inputs are recorded as a sha256 only: they may hold secrets a log must not keep, unless
/// `log_inputs = true` says the operator wants them.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AuditConfig {
    /// The log file, relative to the config file (`--audit FILE` overrides it).
    pub file: Option<Spanned<PathBuf>>,
    /// Also record each call's input itself (default `false`).
    #[serde(default)]
    pub log_inputs: bool,
    /// Rotate when the file would pass this many bytes (default [`Self::DEFAULT_MAX_BYTES`]).
    pub max_bytes: Option<Spanned<i64>>,
}

impl AuditConfig {
    /// 10 MiB.
    pub const DEFAULT_MAX_BYTES: u64 = 10 << 20;

    /// The log file (resolved against the config file's directory at parse time).
    pub fn file(&self) -> Option<PathBuf> {
        self.file.as_ref().map(|f| f.get_ref().clone())
    }

    /// The rotation size (checked positive at parse time).
    pub fn max_bytes(&self) -> u64 {
        self.max_bytes.as_ref().map_or(Self::DEFAULT_MAX_BYTES, |m| (*m.get_ref()).max(1) as u64)
    }
}

/// `[[hooks.pre_tool_use]]`, `[[hooks.post_tool_use]]`, `[[hooks.post_tool_use_failure]]`,
/// and for `toolhost agent` `[[hooks.session_start]]`, `[[hooks.user_prompt_submit]]`,
/// `[[hooks.stop]]`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HooksConfig {
    /// Run after `validate`, before the permission check.
    #[serde(default)]
    pub pre_tool_use: Vec<HookConfig>,
    /// Run after a successful call.
    #[serde(default)]
    pub post_tool_use: Vec<HookConfig>,
    /// Run after a call that failed.
    #[serde(default)]
    pub post_tool_use_failure: Vec<HookConfig>,
    /// `toolhost agent`: run once, before the first request (matcher: `startup`).
    #[serde(default)]
    pub session_start: Vec<HookConfig>,
    /// `toolhost agent`: run on the prompt before it is sent; may block it or add context.
    #[serde(default)]
    pub user_prompt_submit: Vec<HookConfig>,
    /// `toolhost agent`: run when the model ends its turn; may make it go on.
    #[serde(default)]
    pub stop: Vec<HookConfig>,
    /// Variables every hook gets on top of this process's environment (Claude Code's `env`
    /// setting).
    #[serde(skip)]
    pub env: BTreeMap<String, String>,
}

/// The keys of [`HooksConfig`]'s events, in order.
pub const HOOK_EVENT_KEYS: [&str; 6] =
    ["pre_tool_use", "post_tool_use", "post_tool_use_failure", "session_start", "user_prompt_submit", "stop"];

impl HooksConfig {
    /// Every hook of every event.
    pub fn all(&self) -> impl Iterator<Item = &HookConfig> {
        self.indexed().map(|(_, _, h)| h)
    }

    /// The hooks of the event whose key is `key` (one of [`HOOK_EVENT_KEYS`]).
    pub fn of(&self, key: &str) -> &[HookConfig] {
        match key {
            "pre_tool_use" => &self.pre_tool_use,
            "post_tool_use" => &self.post_tool_use,
            "post_tool_use_failure" => &self.post_tool_use_failure,
            "session_start" => &self.session_start,
            "user_prompt_submit" => &self.user_prompt_submit,
            "stop" => &self.stop,
            _ => &[],
        }
    }

    /// [`HooksConfig::of`], to add to; `None` for a key that is none of [`HOOK_EVENT_KEYS`].
    pub fn of_mut(&mut self, key: &str) -> Option<&mut Vec<HookConfig>> {
        Some(match key {
            "pre_tool_use" => &mut self.pre_tool_use,
            "post_tool_use" => &mut self.post_tool_use,
            "post_tool_use_failure" => &mut self.post_tool_use_failure,
            "session_start" => &mut self.session_start,
            "user_prompt_submit" => &mut self.user_prompt_submit,
            "stop" => &mut self.stop,
            _ => return None,
        })
    }

    /// Every hook with its event's key (`pre_tool_use`, …) and its index there.
    pub fn indexed(&self) -> impl Iterator<Item = (&'static str, usize, &HookConfig)> {
        HOOK_EVENT_KEYS.into_iter().flat_map(|key| self.of(key).iter().enumerate().map(move |(i, h)| (key, i, h)))
    }
}

/// `[mcp_servers.NAME]`: an MCP server whose tools join the pool, reached over stdio (a
/// `command` the operator runs on this machine, outside the sandbox, pinned and protected as a
/// hook's is) or streamable HTTP (a `url`). `${VAR}` and `${VAR:-default}` in `command`,
/// `args`, `env`, `url` and `headers` are taken from the environment when the server starts.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct McpServerConfig {
    /// The program of a stdio server.
    pub command: Option<Spanned<String>>,
    /// Its arguments.
    #[serde(default)]
    pub args: Vec<String>,
    /// Variables it gets on top of this process's environment.
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// The files the command runs, when it cannot be analysed (as a hook's `files`).
    pub files: Option<Vec<Spanned<PathBuf>>>,
    /// The endpoint of a streamable HTTP server.
    pub url: Option<Spanned<String>>,
    /// Headers of every request to it.
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    /// A variable holding a bearer token for it (`Authorization: Bearer …`).
    pub bearer_token_env: Option<String>,
    /// Where the server was written when it comes from Claude Code's `.mcp.json`.
    #[serde(skip)]
    pub origin: Option<crate::claude::Origin>,
}

impl McpServerConfig {
    /// The command line of a stdio server as it will run, `${VAR}` expanded from this
    /// process's environment, and the variables that list places code is loaded from before
    /// it ([`crate::launch::LaunchSpec::analysed_line`]): what is analysed, protected and
    /// pinned. `None` for an HTTP server, for one that cannot be described (an unset
    /// variable, a variable whose value is code), and for toolhost itself (what `claude mcp add
    /// toolhost …` writes): none of them starts, so nothing of them runs to be pinned.
    pub fn command_line(&self) -> Option<String> {
        match self.launch_with(Path::new("."), &|var| std::env::var(var).ok()).ok()? {
            crate::launch::ServerLaunch::Stdio(spec) => {
                let program = crate::launch::resolve_program(&spec.program, &spec.cwd);
                (!program.is_some_and(|p| crate::launch::is_toolhost(&p))).then(|| spec.analysed_line())
            }
            crate::launch::ServerLaunch::Http(_) => None,
        }
    }

    /// The server as a hook, for the analysis and protection of what it runs (§5).
    pub fn as_hook(&self) -> Option<HookConfig> {
        let line = self.command_line()?;
        let span = self.command.as_ref().map_or(0..0, Spanned::span);
        Some(HookConfig {
            matcher: None,
            command: Spanned::new(span, line),
            files: self.files.clone(),
            timeout_ms: None,
            origin: self.origin.clone(),
            condition: None,
            refuses: None,
        })
    }
}

/// One command hook.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HookConfig {
    /// Which tools it applies to (see [`HookMatcher`]; compiled as the file is read); absent =
    /// every tool.
    pub matcher: Option<Spanned<HookMatcher>>,
    /// A shell command, run by `sh -c` in the workspace.
    pub command: Spanned<String>,
    /// The files the command runs (workspace-relative unless absolute; a directory covers
    /// everything in it). When present, exactly these are protected from tools and the command
    /// need not be analysable; when absent, the command is analysed and the directory of each
    /// file it runs is protected (see [`crate::hook_protected_paths`]).
    pub files: Option<Vec<Spanned<PathBuf>>>,
    /// How long it may run (default 60 000).
    pub timeout_ms: Option<Spanned<i64>>,
    /// Where a hook from a Claude Code settings file was written (`None`: in this config, at
    /// its spans).
    #[serde(skip)]
    pub origin: Option<crate::claude::Origin>,
    /// Claude Code's `if`: the hook runs only for calls this rule covers (its tool, and its
    /// pattern matched against the call's permission subject).
    #[serde(skip)]
    pub condition: Option<crate::Rule>,
    /// A hook toolhost cannot run (a Claude Code `http`, `prompt`, `agent` or `mcp_tool`
    /// PreToolUse hook), and why: it runs nothing and refuses every call it matches (fail
    /// closed: the hook might have denied it). `command` then says what the hook was.
    #[serde(skip)]
    pub refuses: Option<String>,
}

impl HookConfig {
    /// Default hook timeout.
    pub const DEFAULT_TIMEOUT_MS: u64 = 60_000;

    /// The matcher (every tool when absent).
    pub fn matcher(&self) -> HookMatcher {
        self.matcher.as_ref().map_or(HookMatcher::All, |m| m.get_ref().clone())
    }

    /// The timeout in milliseconds.
    pub fn timeout_ms(&self) -> u64 {
        self.timeout_ms.as_ref().map_or(Self::DEFAULT_TIMEOUT_MS, |t| (*t.get_ref()).max(1) as u64)
    }
}

// `[tools.NAME]`'s limit keys follow its own, one per `tool` limit of the table (see
// `limits.rs`).
limits_table!(tool_config {
    /// `[tools.NAME]`: where a tool comes from, what it is granted, and its limits (each
    /// `tool` limit of [`Limits`], overriding `[limits]`).
    #[derive(Debug, Clone, Default, Deserialize)]
    #[serde(deny_unknown_fields)]
    pub struct ToolConfig {
        /// A `.wasm` file (relative to the config file). Omit for embedded and `--tools` tools.
        pub path: Option<Spanned<PathBuf>>,
        /// Expected sha256 of the file (hex); a mismatch refuses to load the tool.
        pub sha256: Option<Spanned<String>>,
        /// Where an installed tool comes from (`toolhost add`): its bytes are the ones
        /// `toolhost.lock` names, from the content-addressed store; never fetched at load.
        pub source: Option<Spanned<crate::ToolRef>>,
        /// With a tagless `oci://` source: install the newest tag that is a semantic version
        /// matching this requirement (`^1.2`, `~1.4`, `>=1, <3`; a leading `v` in tags is allowed);
        /// `toolhost update` moves within it, never past it.
        pub version: Option<Spanned<semver::VersionReq>>,
        /// What the operator grants, with its position; absent means the default grant.
        pub grant: Option<Spanned<Grant>>,
        /// Let a name or `*` in the grant reach loopback, private, link-local and metadata
        /// addresses (see [`crate::check_address`]); default false.
        #[serde(default)]
        pub allow_private_network: bool,
        /// For a function component (a component exporting plain functions): which function
        /// this entry is, as its default tool name (`echo`, `kinds_echo`) or as
        /// `INTERFACE#FUNCTION` (`kinds#echo`, `test:fns/kinds#echo`). The entry's name is then
        /// the tool's name, and the component's other functions are not loaded from `path`.
        pub function: Option<Spanned<String>>,
        /// For a function component or a command program, which cannot say it themselves:
        /// whether calls may run in parallel with other concurrency-safe calls (default false).
        pub concurrency_safe: Option<bool>,
        /// For a function component or a command program: whether it never changes anything
        /// (default false). A read-only tool is granted read-only access, whatever its grant.
        pub read_only: Option<bool>,
        /// For a function component or a command program: the description the model reads,
        /// instead of the one from the component's documentation (or the generic one).
        pub description: Option<String>,
        /// For a command program: JSON Schema merged into its input schema (objects key by
        /// key, the rest replaced), to narrow what a model may pass, e.g.
        /// `{ properties = { args = { items = { enum = ["--check", "src"] } } } }`. It may
        /// only speak of `args` and `stdin`.
        pub input_schema: Option<serde_json::Map<String, serde_json::Value>>,
    }
});

/// A config error with its position.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}:{line}:{column}: {message}", file.display())]
pub struct ConfigError {
    /// The file (or `<config>` for text without a file).
    pub file: PathBuf,
    /// 1-based line (0 when the error has no position, e.g. an unreadable file).
    pub line: usize,
    /// 1-based column (0 when the error has no position).
    pub column: usize,
    /// What is wrong, starting with the key path (`tools.Read.grant.fs_reed: …`).
    pub message: String,
}

impl Config {
    /// Parse and check a config file's text, stopping at the first error. `file` is used in
    /// error messages and to resolve relative tool paths. This is [`Config::check`] without the
    /// file system: a tool `path` that does not exist is left for loading to report, so that one
    /// missing tool never stops the others.
    ///
    /// # Errors
    ///
    /// The first (by position) syntax error, unknown key or malformed value.
    pub fn parse(text: &str, file: &Path) -> Result<Config, ConfigError> {
        let (config, mut errors) = check_document(text, file, false);
        if errors.is_empty() { Ok(config) } else { Err(errors.swap_remove(0)) }
    }

    /// Parse and check a config file's text, reporting every error at once: syntax errors,
    /// unknown keys, values of the wrong type or out of range, bad permission rules (a path
    /// glob that does not compile among them), `permissions.protected` patterns and hook
    /// matchers, and tool paths that do not exist (relative to `file`'s directory).
    ///
    /// # Errors
    ///
    /// Every error, sorted by position; each message starts with the key path.
    pub fn check(text: &str, file: &Path) -> Result<Config, Vec<ConfigError>> {
        let (config, errors) = check_document(text, file, true);
        if errors.is_empty() { Ok(config) } else { Err(errors) }
    }

    /// [`Config::check`], also returning the config as far as it could be read (every key or
    /// array that failed to deserialize left out; values that only fail the later checks, like a
    /// limit of 0, stay in), so that checks which need the rest of it (a tool's grant against
    /// its ceiling) can still run. Use the config only for such checks when there are errors.
    pub fn check_recoverable(text: &str, file: &Path) -> (Config, Vec<ConfigError>) {
        check_document(text, file, true)
    }

    /// Read and parse a config file.
    ///
    /// # Errors
    ///
    /// An unreadable file, or any error of [`Config::parse`].
    pub fn load(file: &Path) -> Result<Config, ConfigError> {
        Config::parse(&read(file)?, file)
    }

    /// Read and check a config file.
    ///
    /// # Errors
    ///
    /// An unreadable file (the only error then), or every error of [`Config::check`].
    pub fn check_file(file: &Path) -> Result<Config, Vec<ConfigError>> {
        Config::check(&read(file).map_err(|e| vec![e])?, file)
    }

    /// The text this config was parsed from (`None` for a config built in code): what a digest
    /// of the config in use is taken of, so that it describes exactly what was obeyed.
    pub fn text(&self) -> Option<&str> {
        self.source.as_ref().map(|s| s.text.as_str())
    }

    /// The limits of the whole runtime and the defaults of every tool: built-in defaults, then
    /// `[limits]` (`max_concurrency`, `max_context_bytes` and every per-tool default).
    pub fn global_limits(&self) -> Limits {
        let mut limits = Limits::default();
        self.limits.apply(&mut limits);
        limits
    }

    /// The limits for `tool`: built-in defaults, then `[limits]`, then `[tools.NAME]`.
    pub fn limits_for(&self, tool: &str) -> Limits {
        let mut limits = self.global_limits();
        if let Some(t) = self.tools.get(tool) {
            t.limits().apply(&mut limits);
        }
        limits
    }

    /// An error at a byte offset of the text this config was read from (e.g. a [`Spanned`]
    /// value's `span().start`). A config built in code has no text: the error then has no
    /// position and the file `<config>`.
    pub fn error_at(&self, offset: usize, message: impl Into<String>) -> ConfigError {
        match &self.source {
            Some(s) => error_at(&s.text, &s.file, offset, message.into()),
            None => ConfigError { file: PathBuf::from("<config>"), line: 0, column: 0, message: message.into() },
        }
    }

    /// An error about the `[tools.NAME]` section of `tool`, at its key; the message is
    /// prefixed with `tools.NAME: `.
    pub fn tool_error(&self, tool: &str, message: &str) -> ConfigError {
        let offset = self.source.as_ref().and_then(|s| s.tool_keys.get(tool).copied()).unwrap_or(0);
        self.error_at(offset, format!("{}: {message}", key_path("tools", tool)))
    }

    /// An error for a tool's grant that goes beyond its ceiling, at the `grant` value (or the
    /// `[tools.NAME]` key without one), listing `excess` as [`crate::grant_excess`] gives it.
    pub fn grant_error(&self, tool: &str, excess: &[String]) -> ConfigError {
        let path = key_path(&key_path("tools", tool), "grant");
        let message = format!("{path}: beyond the tool's ceiling: {}", excess.join("; "));
        match self.tools.get(tool).and_then(|t| t.grant.as_ref()) {
            Some(grant) => self.error_at(grant.span().start, message),
            None => {
                let offset = self.source.as_ref().and_then(|s| s.tool_keys.get(tool).copied()).unwrap_or(0);
                self.error_at(offset, message)
            }
        }
    }
}

/// A config file's text. Text that is not UTF-8 is an error at its first bad byte (line and
/// column counted in the text before it), so that it can be found in an editor.
fn read(file: &Path) -> Result<String, ConfigError> {
    let bytes = std::fs::read(file).map_err(|e| ConfigError {
        file: file.to_path_buf(),
        line: 0,
        column: 0,
        message: format!("cannot read config: {e}"),
    })?;
    String::from_utf8(bytes).map_err(|e| {
        let valid = e.utf8_error().valid_up_to();
        let before = std::str::from_utf8(&e.as_bytes()[..valid]).unwrap_or_default();
        let byte = e.as_bytes()[valid];
        error_at(before, file, valid, format!("cannot read config: not UTF-8: byte 0x{byte:02x} at offset {valid}"))
    })
}

impl Config {
    /// Whether Claude Code's settings files are to be read (`claude_settings`, default true).
    pub fn reads_claude_settings(&self) -> bool {
        self.claude_settings.unwrap_or(true)
    }

    /// Add what Claude Code's settings files say, below this config: their rules join the
    /// config's (rules are unioned, and deny beats ask beats allow whatever file they are in),
    /// their `defaultMode` applies when the config sets no mode, their hooks run after the
    /// config's, and their `env` reaches every hook.
    pub fn merge_claude(&mut self, settings: crate::claude::ClaudeSettings) {
        use crate::claude::RuleKind;
        let none = 0..0;
        for r in &settings.rules {
            let list = match r.kind {
                RuleKind::Allow => &mut self.permissions.allow,
                RuleKind::Ask => &mut self.permissions.ask,
                RuleKind::Deny => &mut self.permissions.deny,
            };
            list.push(Spanned::new(none.clone(), r.rule.clone()));
        }
        if self.permissions.mode.is_none()
            && let Some((mode, _)) = &settings.mode
        {
            self.permissions.mode = Some(Spanned::new(none.clone(), *mode));
        }
        for (key, hook) in &settings.hooks {
            if let Some(list) = self.hooks.of_mut(key) {
                list.push(hook.clone());
            }
        }
        self.hooks.env.extend(settings.env.iter().map(|(k, v)| (k.clone(), v.clone())));
        // toolhost.toml's server of a name wins.
        for (name, server) in &settings.mcp_servers {
            self.mcp_servers.entry(name.clone()).or_insert_with(|| server.clone());
        }
        for (dir, _) in &settings.additional_directories {
            if !self.permissions.additional_directories.contains(dir) {
                self.permissions.additional_directories.push(dir.clone());
            }
        }
        self.claude = Some(Arc::new(settings));
    }

    /// Where each permission rule in force was written, for people: `(kind, rule, where)`,
    /// the config's own first (`toolhost.toml:12:9`), then each settings file's.
    pub fn rule_origins(&self) -> Vec<(&'static str, String, String)> {
        let mut out = Vec::new();
        let perms = &self.permissions;
        for (kind, list) in [("allow", &perms.allow), ("ask", &perms.ask), ("deny", &perms.deny)] {
            for r in list.iter().filter(|r| r.span() != (0..0)) {
                let at = self.error_at(r.span().start, "");
                out.push((kind, r.get_ref().to_string(), format!("{}:{}:{}", at.file.display(), at.line, at.column)));
            }
        }
        if let Some(claude) = &self.claude {
            for r in &claude.rules {
                out.push((r.kind.name(), r.written.clone(), format!("{} ({})", r.origin, r.origin.source.name())));
            }
        }
        out
    }
}

impl Config {
    /// Everything the config has run on this machine, outside the sandbox, as hooks: every
    /// hook (labelled with its event key) and every stdio MCP server (`mcp_server NAME`). What
    /// each runs is protected from tools and pinned alike (§5, §5a).
    pub fn host_programs(&self) -> Vec<(String, HookConfig)> {
        let mut out: Vec<(String, HookConfig)> =
            self.hooks.indexed().map(|(key, _, h)| (key.to_string(), h.clone())).collect();
        for (name, server) in &self.mcp_servers {
            if let Some(hook) = server.as_hook() {
                out.push((format!("mcp_server {name}"), hook));
            }
        }
        out
    }

    /// Every hook in force with where it was written, for people: `(event key, hook, where)`.
    pub fn hook_origins(&self) -> Vec<(&'static str, &HookConfig, String)> {
        self.hooks
            .indexed()
            .map(|(key, _, h)| {
                let at = match &h.origin {
                    Some(o) => format!("{o} ({})", o.source.name()),
                    None => {
                        let e = self.error_at(h.command.span().start, "");
                        format!("{}:{}:{}", e.file.display(), e.line, e.column)
                    }
                };
                (key, h, at)
            })
            .collect()
    }
}

impl ToolConfig {
    /// The operator's grant without its position, if the section has one.
    pub fn grant(&self) -> Option<&Grant> {
        self.grant.as_ref().map(Spanned::get_ref)
    }
}

#[cfg(test)]
mod tests {
    use super::check::line_col;
    use super::*;

    fn parse(text: &str) -> Result<Config, ConfigError> {
        Config::parse(text, Path::new("/etc/toolhost.toml"))
    }

    /// Every error of `text` as `(line, column, message)`.
    fn errors(text: &str) -> Vec<(usize, usize, String)> {
        match Config::check(text, Path::new("/nonexistent/toolhost.toml")) {
            Ok(_) => Vec::new(),
            Err(errors) => errors.into_iter().map(|e| (e.line, e.column, e.message)).collect(),
        }
    }

    /// Asserts that `got` has one error per `(line, column, message prefix)` of `want`, in order.
    #[track_caller]
    fn assert_errors(got: &[(usize, usize, String)], want: &[(usize, usize, &str)]) {
        let shown = || got.iter().map(|(l, c, m)| format!("{l}:{c}: {m}")).collect::<Vec<_>>().join("\n");
        assert_eq!(got.len(), want.len(), "got:\n{}", shown());
        for ((line, column, message), (l, c, prefix)) in got.iter().zip(want) {
            assert!(
                (line, column) == (l, c) && message.starts_with(prefix),
                "want {l}:{c}: {prefix}…\ngot:\n{}",
                shown()
            );
        }
    }

    #[test]
    fn full_document() {
        let c = parse(
            r#"
[limits]
max_concurrency = 4
timeout_ms = 1000

[tools.Read]
grant = { fs_read = ["."] }
memory_mib = 64

[tools.Mine]
path = "tools/mine.wasm"
sha256 = "0000000000000000000000000000000000000000000000000000000000000000"
"#,
        )
        .unwrap();
        let l = c.limits_for("Read");
        assert_eq!((l.max_concurrency, l.timeout_ms, l.memory_mib), (4, 1000, 64));
        assert_eq!(c.limits_for("Other").memory_mib, 256);
        assert_eq!(c.tools["Mine"].path.as_ref().unwrap().get_ref(), &PathBuf::from("/etc/tools/mine.wasm"));
        assert_eq!(c.tools["Read"].grant(), Some(&Grant { fs_read: vec![".".into()], ..Grant::none() }));
        assert_eq!(c.tools["Mine"].grant(), None);
    }

    #[test]
    fn session_hooks_are_hooks_like_the_others() {
        let c = parse(
            "[[hooks.session_start]]\ncommand = \"/opt/h/start.sh\"\n[[hooks.user_prompt_submit]]\ncommand = \"/opt/h/p.sh\"\n\
             [[hooks.stop]]\ncommand = \"/opt/h/stop.sh\"\ntimeout_ms = 5\n",
        )
        .unwrap();
        let keys: Vec<&str> = c.hooks.indexed().map(|(k, _, _)| k).collect();
        assert_eq!(keys, ["session_start", "user_prompt_submit", "stop"]);
        assert_eq!(c.hooks.all().count(), 3);
        assert_eq!(c.hooks.of("stop")[0].timeout_ms(), 5);
        assert!(parse("[[hooks.notification]]\ncommand = \"x\"\n").is_err());
    }

    #[test]
    fn audit_table() {
        let c = parse("[audit]\nfile = \"logs/audit.jsonl\"\nlog_inputs = true\nmax_bytes = 4096\n").unwrap();
        assert_eq!(c.audit.file(), Some(PathBuf::from("/etc/logs/audit.jsonl")));
        assert!(c.audit.log_inputs);
        assert_eq!(c.audit.max_bytes(), 4096);
        let d = parse("").unwrap();
        assert_eq!((d.audit.file(), d.audit.log_inputs), (None, false));
        assert_eq!(d.audit.max_bytes(), AuditConfig::DEFAULT_MAX_BYTES);
        assert_errors(
            &errors("[audit]\nmax_bytes = 0\nlog_input = true\nfile = 3\n"),
            &[
                (2, 13, "audit.max_bytes: must be at least 1"),
                (3, 1, "audit.log_input: unknown field"),
                (4, 8, "audit.file: invalid type"),
            ],
        );
    }

    #[test]
    fn errors_have_positions() {
        let e = parse("[limits]\nmax_concurrency = 0\n").unwrap_err();
        assert_eq!((e.line, e.column), (2, 19));
        assert!(e.message.contains("limits.max_concurrency"), "{e}");

        let e = parse("[limits]\ntimeout = 5\n").unwrap_err();
        assert_eq!(e.line, 2);
        assert!(e.message.contains("unknown field `timeout`"), "{e}");

        let e = parse("[tools.X]\ngrant = { fs_reed = [] }\n").unwrap_err();
        assert_eq!(e.line, 2);
        assert!(e.message.contains("fs_reed"), "{e}");

        let e = parse("[tools.X]\nsha256 = \"abc\"\n").unwrap_err();
        assert!(e.message.contains("64 hex digits"), "{e}");
        assert!(e.to_string().starts_with("/etc/toolhost.toml:2:"), "{e}");
    }

    #[test]
    fn every_error_at_once_in_every_section() {
        let text = r#"bogus = true

[limits]
max_concurrency = 0
timeout_ms = "soon"
fuel = 10

[permissions]
mode = "yolo"
allow = ["Read", "Bash(", "Write(src/**)"]

[tools.Mine]
path = "tools/mine.wasm"
sha256 = "xyz"
memory_mib = -1
grant = { fs_read = ["."], fs_reed = ["/"] }

[tools.Read]
grant = { net = "example.com" }

[[hooks.pre_tool_use]]
matcher = "Edit|("
command = "  "
timeout_ms = 0

[[hooks.pre_tool_use]]
command = "ok"
colour = "red"

[[hooks.post_tool_use]]
matcher = "Read"
"#;
        assert_errors(
            &errors(text),
            &[
                (1, 1, "bogus: unknown field `bogus`"),
                (4, 19, "limits.max_concurrency: must be at least 1, got 0"),
                (5, 14, "limits.timeout_ms: invalid type: string \"soon\""),
                (9, 8, "permissions.mode: "),
                (10, 18, "permissions.allow[1]: invalid permission rule \"Bash(\""),
                (13, 8, "tools.Mine.path: no such file: /nonexistent/tools/mine.wasm"),
                (14, 10, "tools.Mine.sha256: expected 64 hex digits, got \"xyz\""),
                (15, 14, "tools.Mine.memory_mib: must be at least 1, got -1"),
                (16, 28, "tools.Mine.grant.fs_reed: unknown field `fs_reed`"),
                (19, 17, "tools.Read.grant.net: invalid type: string \"example.com\", expected a sequence"),
                (
                    22,
                    11,
                    "hooks.pre_tool_use[0].matcher: invalid matcher regex \"Edit|(\": regex parse error: Edit|( error",
                ),
                (23, 11, "hooks.pre_tool_use[0].command: empty command"),
                (24, 14, "hooks.pre_tool_use[0].timeout_ms: must be at least 1"),
                (28, 1, "hooks.pre_tool_use[1].colour: unknown field `colour`"),
                (30, 1, "hooks.post_tool_use[0]: missing field `command`"),
            ],
        );
        // `parse` is the same check without the file system, stopping at the first error.
        let first = parse(text).unwrap_err();
        assert_eq!((first.line, first.column), (1, 1), "{first}");
    }

    #[test]
    fn path_globs_that_do_not_compile_are_errors_at_their_position() {
        // A deny rule whose glob does not compile would match nothing: it must not load.
        let text =
            "[permissions]\ndeny = [\"Read(src/**)\", \"Read(src/[)\"]\nprotected = [\"deploy/*.sh\", \"hooks/{a\"]\n";
        assert_errors(
            &errors(text),
            &[
                (
                    2,
                    25,
                    "permissions.deny[1]: invalid permission rule \"Read(src/[)\": \"src/[\" is not a valid path glob: \
                     unclosed character class; missing ']'",
                ),
                (3, 29, "permissions.protected[1]: \"hooks/{a\" is not a valid path glob: unclosed alternate group"),
            ],
        );
        let e = parse(text).unwrap_err();
        assert_eq!((e.line, e.column), (2, 25), "{e}");

        let c = parse("[permissions]\nprotected = [\"deploy/*.sh\", \".tool-versions\"]\n").unwrap();
        assert_eq!(c.permissions.protected(), ["deploy/*.sh", ".tool-versions"]);
        assert!(parse("").unwrap().permissions.protected().is_empty());
        assert_errors(
            &errors("[permissions]\nprotected = \"x\"\n"),
            &[(2, 13, "permissions.protected: invalid type: string \"x\", expected a sequence")],
        );
    }

    #[test]
    fn the_rest_of_a_section_is_checked_past_a_bad_key() {
        assert_errors(
            &errors("[limits]\nbogus = 1\nfuel = 0\n"),
            &[(2, 1, "limits.bogus: unknown field"), (3, 8, "limits.fuel: must be at least 1")],
        );
        // Each bad array element is reported at its index (the array is then left out whole,
        // so indices stay those of the file).
        assert_errors(
            &errors("[permissions]\ndeny = [\"Read\", 3, \"Bash(\"]\nask = [\"(\"]\n"),
            &[
                (2, 17, "permissions.deny[1]: invalid type: integer `3`, expected a string"),
                (2, 20, "permissions.deny[2]: invalid permission rule \"Bash(\""),
                (3, 8, "permissions.ask[0]: invalid permission rule"),
            ],
        );
        // A value of the wrong kind is reported once, at the value, not at its elements.
        assert_errors(
            &errors("[permissions]\nmode = [\"plan\"]\n"),
            &[(2, 8, "permissions.mode: invalid type: sequence, expected a string")],
        );
        assert_errors(&errors("tools = 3\n"), &[(1, 9, "tools: invalid type: integer `3`, expected a map")]);
        assert_errors(
            &errors("[tools.\"my tool\"]\nfuel = 0\n"),
            &[(2, 8, "tools.\"my tool\".fuel: must be at least 1")],
        );
    }

    #[test]
    fn syntax_errors_have_positions_and_do_not_hide_the_others() {
        let text = "[limits]\ntimeout_ms = \nfuel = 0\n\n[tools.X]\npath = \"unterminated\nbogus = 1\n";
        assert_errors(
            &errors(text),
            &[
                (2, 14, "syntax: "),
                (3, 8, "limits.fuel: must be at least 1"),
                (6, 21, "syntax: "),
                (7, 1, "tools.X.bogus: unknown field"),
            ],
        );
        assert_errors(&errors("[limits]\nfuel = 1\nfuel = 2\n"), &[(3, 1, "syntax: duplicate key")]);
        let e = parse("[limits]\nfuel = [1,\n").unwrap_err();
        assert!(e.message.starts_with("syntax: unclosed array"), "{e}");
        assert_eq!((e.line, e.column), (2, 11), "{e}");
    }

    #[test]
    fn a_tool_path_must_exist() {
        let dir = std::env::temp_dir().join(format!("toolhost-config-test-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("tools")).unwrap();
        std::fs::write(dir.join("tools/there.wasm"), b"").unwrap();
        let file = dir.join("toolhost.toml");
        let text = "[tools.A]\npath = \"tools/there.wasm\"\n[tools.B]\npath = \"tools/../tools/gone.wasm\"\n[tools.C]\npath = \"tools\"\n";
        let errors = Config::check(text, &file).unwrap_err();
        let got: Vec<String> = errors.iter().map(ToString::to_string).collect();
        let gone = dir.join("tools/gone.wasm");
        assert_eq!(
            got,
            [
                format!("{}:4:8: tools.B.path: no such file: {}", file.display(), gone.display()),
                format!("{}:6:8: tools.C.path: not a file: {}", file.display(), dir.join("tools").display()),
            ]
        );
        // `parse` leaves missing files to loading.
        assert!(Config::parse(text, &file).is_ok());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn later_errors_point_into_the_file() {
        let text = "[tools.Read]\nfuel = 5\ngrant = { fs_write = [\".\"] }\n\n[tools.Gone]\n";
        let c = parse(text).unwrap();
        let e = c.grant_error("Read", &["fs_write \".\": the ceiling allows only fs_read of /".into()]);
        assert_eq!((e.line, e.column), (3, 9), "{e}");
        assert!(e.message.starts_with("tools.Read.grant: beyond the tool's ceiling: fs_write \".\""), "{e}");
        let e = c.tool_error("Gone", "no tool named Gone is loaded");
        assert_eq!((e.line, e.column, e.message.as_str()), (5, 8, "tools.Gone: no tool named Gone is loaded"));
        let e = c.grant_error("Gone", &["x".into()]);
        assert_eq!((e.line, e.column), (5, 8), "without a grant, at the section: {e}");
        let e = Config::default().tool_error("X", "m");
        assert_eq!((e.file.as_path(), e.line, e.column), (Path::new("<config>"), 0, 0));
    }

    #[test]
    fn line_col_counts_characters() {
        assert_eq!(line_col("a\né = x", 5), (2, 3));
        assert_eq!(line_col("é", 1), (1, 1), "inside a character: its start");
        assert_eq!(line_col("ab", 99), (1, 3));
    }

    /// `[signatures]` was first named `[trust]` (with `require_signatures`): a config of then
    /// means the same now; both names at once are one table written twice, an error.
    #[test]
    fn signatures_are_read_under_their_first_name_too() {
        let key = "ed25519:11qYAYKxCrfVS/7TyWQHOg7hcvPapiMlrwIaaPcHURo=";
        let old =
            parse(&format!("[trust]\nrequire_signatures = true\n[trust.signers.acme]\nkey = \"{key}\"\n")).unwrap();
        assert!(old.signatures.require);
        assert_eq!(old.signatures.signers["acme"].key.get_ref().to_string(), key);
        let both = format!("[trust]\nrequire_signatures = true\n\n[signatures.signers.acme]\nkey = \"{key}\"\n");
        let errors = errors(&both);
        assert_eq!(errors.len(), 1, "{errors:?}");
        assert!(errors[0].2.contains("duplicate") && errors[0].2.contains("signatures"), "{errors:?}");
        let twice = parse("[signatures]\nrequire = true\nrequire_signatures = false\n");
        assert!(twice.is_err(), "one setting under two names is refused, not read as either");
    }

    #[test]
    fn installed_tools_and_signatures_are_typed_with_positions() {
        let key = "ed25519:11qYAYKxCrfVS/7TyWQHOg7hcvPapiMlrwIaaPcHURo=";
        let text = format!(
            "[tools.Echo]\nsource = \"oci://r.io/acme/echo:1\"\n\n[signatures]\nrequire = true\n\
             [signatures.signers.acme]\nkey = \"{key}\"\nsources = [\"oci://r.io/acme/\"]\n"
        );
        let c = parse(&text).unwrap();
        assert_eq!(c.tools["Echo"].source.as_ref().unwrap().get_ref().to_string(), "oci://r.io/acme/echo:1");
        assert!(c.signatures.require);
        assert_eq!(c.signatures.signers["acme"].key.get_ref().to_string(), key);
        assert!(!parse("").unwrap().signatures.require, "off by default");

        let bad = "[tools.A]\nsource = \"http://x/a.wasm\"\n\n[tools.B]\nsource = \"oci://r.io/b:1\"\n\
                   sha256 = \"0000000000000000000000000000000000000000000000000000000000000000\"\n\n\
                   [tools.C]\nsource = \"c.wasm\"\npath = \"c.wasm\"\n\n[signatures.signers.x]\nkey = \"ed25519:abc\"\n\
                   [signatures.signers.y]\nkey = \"ed25519:11qYAYKxCrfVS/7TyWQHOg7hcvPapiMlrwIaaPcHURo=\"\nsources = [\"\"]\n";
        assert_errors(
            &errors(bad),
            &[
                (2, 10, "tools.A.source: invalid tool source \"http://x/a.wasm\": unsupported scheme"),
                (6, 10, "tools.B.sha256: a tool with a `source` is pinned by toolhost.lock"),
                (10, 8, "tools.C.path: a tool has a `path` or a `source`, not both"),
                (10, 8, "tools.C.path: no such file"),
                // A bad key is left out, so the signer then lacks one: reported at the table too.
                (12, 1, "signatures.signers.x: missing field `key`"),
                (13, 7, "signatures.signers.x.key: invalid public key \"ed25519:abc\": expected `ed25519:`"),
                (16, 12, "signatures.signers.y.sources[0]: empty source prefix"),
            ],
        );
    }

    #[test]
    fn a_version_requirement_goes_with_a_tagless_oci_source() {
        let c = parse("[tools.A]\nsource = \"oci://r.io/acme/a\"\nversion = \"^1.2\"\n").unwrap();
        assert_eq!(c.tools["A"].version.as_ref().unwrap().get_ref().to_string(), "^1.2");
        assert!(parse("[tools.A]\nsource = \"oci://r.io/acme/a:1\"\n").unwrap().tools["A"].version.is_none());
        let bad = "[tools.A]\nsource = \"oci://r.io/a:1\"\nversion = \"^1\"\n\n[tools.B]\nversion = \"1\"\n\n\
                   [tools.C]\nsource = \"https://x.io/c.wasm\"\nversion = \"1\"\n\n\
                   [tools.D]\nsource = \"oci://r.io/d\"\nversion = \"one\"\n";
        let found = errors(bad);
        assert_errors(
            &found,
            &[
                (3, 11, "tools.A.version: the version chooses the tag: give the source without one (oci://r.io/a)"),
                (6, 11, "tools.B.version: needs a `source`"),
                (10, 11, "tools.C.version: only an oci:// source has versions to choose from"),
                (14, 11, "tools.D.version: "),
            ],
        );
    }

    #[test]
    fn allow_private_network_is_a_tool_bool_off_by_default() {
        let c = parse("[tools.A]\nallow_private_network = true\n\n[tools.B]\ngrant = { net = [\"*\"] }\n").unwrap();
        assert!(c.tools["A"].allow_private_network);
        assert!(!c.tools["B"].allow_private_network);
        assert_errors(
            &errors("[tools.A]\nallow_private_network = \"yes\"\n\n[limits]\nallow_private_network = true\n"),
            &[(2, 25, "tools.A.allow_private_network: invalid type"), (5, 1, "limits.allow_private_network: unknown")],
        );
    }

    #[test]
    fn hooks_whose_files_cannot_be_protected_are_errors_at_their_command() {
        let ws = tempfile::tempdir().unwrap();
        let ws = ws.path().canonicalize().unwrap();
        std::fs::write(ws.join("guard.sh"), "").unwrap();
        let text = r#"[[hooks.pre_tool_use]]
command = "cd hooks && sh guard.sh"

[[hooks.pre_tool_use]]
command = "node guard.js"

[[hooks.post_tool_use]]
command = "make check"
files = ["Makefile", "."]

[[hooks.post_tool_use]]
command = "cd hooks && sh guard.sh"
files = ["hooks/guard.sh"]

[[hooks.post_tool_use_failure]]
command = "sh hooks/guard.sh"
files = [""]
"#;
        let config = parse(text).unwrap_err();
        assert_eq!((config.line, config.column), (17, 10), "{config}");
        assert!(config.message.starts_with("hooks.post_tool_use_failure[0].files[0]: empty path"), "{config}");
        let config = Config::parse(&text.replace("files = [\"\"]", ""), Path::new("toolhost.toml")).unwrap();
        let got: Vec<(usize, usize, String)> =
            config.hook_errors(&ws, None).into_iter().map(|e| (e.line, e.column, e.message)).collect();
        assert_eq!(got.len(), 3, "{got:?}");
        assert_eq!((got[0].0, got[0].1), (2, 11));
        assert!(
            got[0].2.starts_with("hooks.pre_tool_use[0].command: hook [cd hooks && sh guard.sh] cannot be analysed"),
            "{got:?}"
        );
        assert_eq!((got[1].0, got[1].1), (5, 11));
        assert!(got[1].2.contains("hooks.pre_tool_use[1].command: hook [node guard.js] runs "), "{got:?}");
        assert_eq!((got[2].0, got[2].1, got[2].2.contains("files[1] = \".\"")), (9, 22, true), "{got:?}");
    }
}
