//! The `toolhost.toml` document, parsed strictly: an unknown key or a malformed value is an
//! error naming the file, the line, the column and the key.

use crate::{Grant, HookMatcher, Limits, Mode, Rule, Rules};
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
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
}

/// `[permissions]`: the mode and the allow / ask / deny rules (Claude Code syntax).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PermissionsConfig {
    /// `default`, `accept-edits`, `bypass`, `dont-ask` or `plan`.
    pub mode: Option<Spanned<String>>,
    /// Calls allowed without asking.
    #[serde(default)]
    pub allow: Vec<Spanned<String>>,
    /// Calls that need a person's yes.
    #[serde(default)]
    pub ask: Vec<Spanned<String>>,
    /// Calls refused.
    #[serde(default)]
    pub deny: Vec<Spanned<String>>,
}

impl PermissionsConfig {
    /// The mode (checked at parse time; `default` when absent).
    pub fn mode(&self) -> Mode {
        self.mode.as_ref().and_then(|m| m.get_ref().parse().ok()).unwrap_or_default()
    }

    /// The rules (checked at parse time).
    pub fn rules(&self) -> Rules {
        let parse = |v: &[Spanned<String>]| v.iter().filter_map(|r| r.get_ref().parse::<Rule>().ok()).collect();
        Rules { allow: parse(&self.allow), ask: parse(&self.ask), deny: parse(&self.deny) }
    }
}

/// `[[hooks.pre_tool_use]]`, `[[hooks.post_tool_use]]`, `[[hooks.post_tool_use_failure]]`.
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
}

/// One command hook.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HookConfig {
    /// Which tools it applies to (see [`HookMatcher`]); absent = every tool.
    pub matcher: Option<Spanned<String>>,
    /// A shell command, run by `sh -c` in the workspace.
    pub command: Spanned<String>,
    /// How long it may run (default 60 000).
    pub timeout_ms: Option<Spanned<i64>>,
}

impl HookConfig {
    /// Default hook timeout.
    pub const DEFAULT_TIMEOUT_MS: u64 = 60_000;

    /// The matcher (checked at parse time).
    pub fn matcher(&self) -> HookMatcher {
        self.matcher.as_ref().and_then(|m| m.get_ref().parse().ok()).unwrap_or(HookMatcher::All)
    }

    /// The timeout in milliseconds.
    pub fn timeout_ms(&self) -> u64 {
        self.timeout_ms.as_ref().map_or(Self::DEFAULT_TIMEOUT_MS, |t| (*t.get_ref()).max(1) as u64)
    }
}

/// Limits that can be set in `[limits]` (all tools) or `[tools.NAME]` (one tool).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LimitsConfig {
    /// See [`Limits::max_concurrency`]; only meaningful in `[limits]`.
    pub max_concurrency: Option<Spanned<i64>>,
    /// See [`Limits::timeout_ms`].
    pub timeout_ms: Option<Spanned<i64>>,
    /// See [`Limits::memory_mib`].
    pub memory_mib: Option<Spanned<i64>>,
    /// See [`Limits::fuel`].
    pub fuel: Option<Spanned<i64>>,
    /// See [`Limits::max_result_chars`].
    pub max_result_chars: Option<Spanned<i64>>,
    /// See [`Limits::max_stdio_bytes`].
    pub max_stdio_bytes: Option<Spanned<i64>>,
    /// See [`Limits::max_input_bytes`].
    pub max_input_bytes: Option<Spanned<i64>>,
    /// See [`Limits::max_output_bytes`].
    pub max_output_bytes: Option<Spanned<i64>>,
}

/// `[tools.NAME]`: where a tool comes from, what it is granted, and its limits.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolConfig {
    /// A `.wasm` file (relative to the config file). Omit for embedded and `--tools` tools.
    pub path: Option<Spanned<PathBuf>>,
    /// Expected sha256 of the file (hex); a mismatch refuses to load the tool.
    pub sha256: Option<Spanned<String>>,
    /// What the operator grants; absent means the default grant.
    pub grant: Option<Grant>,
    /// Per-tool limits.
    pub timeout_ms: Option<Spanned<i64>>,
    /// Per-tool memory limit.
    pub memory_mib: Option<Spanned<i64>>,
    /// Per-tool fuel.
    pub fuel: Option<Spanned<i64>>,
    /// Per-tool result size before truncation.
    pub max_result_chars: Option<Spanned<i64>>,
    /// Per-tool stdout/stderr cap.
    pub max_stdio_bytes: Option<Spanned<i64>>,
    /// Per-tool input size cap.
    pub max_input_bytes: Option<Spanned<i64>>,
    /// Per-tool output size cap.
    pub max_output_bytes: Option<Spanned<i64>>,
}

/// A config error with its position.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}:{line}:{column}: {message}", file.display())]
pub struct ConfigError {
    /// The file (or `<config>` for text without a file).
    pub file: PathBuf,
    /// 1-based line.
    pub line: usize,
    /// 1-based column.
    pub column: usize,
    /// What is wrong, naming the key.
    pub message: String,
}

impl Config {
    /// Parse and check a config file's text. `file` is used in error messages and to resolve
    /// relative tool paths.
    ///
    /// # Errors
    ///
    /// The first syntax error, unknown key or malformed value, with its position.
    pub fn parse(text: &str, file: &Path) -> Result<Config, ConfigError> {
        let err_at = |offset: usize, message: String| {
            let (line, column) = line_col(text, offset);
            ConfigError { file: file.to_path_buf(), line, column, message }
        };
        let mut config: Config = toml::from_str(text).map_err(|e| {
            let offset = e.span().map(|s| s.start).unwrap_or(0);
            err_at(offset, e.message().trim().to_string())
        })?;

        check_limits(&config.limits.positive_fields(), "limits", &err_at)?;
        for (name, tool) in &config.tools {
            check_limits(&tool.limits().positive_fields(), &format!("tools.{name}"), &err_at)?;
            if let Some(sha) = &tool.sha256 {
                let s = sha.get_ref();
                if s.len() != 64 || !s.bytes().all(|b| b.is_ascii_hexdigit()) {
                    return Err(err_at(
                        sha.span().start,
                        format!("tools.{name}.sha256: expected 64 hex digits, got {s:?}"),
                    ));
                }
            }
        }
        let p = &config.permissions;
        if let Some(mode) = &p.mode {
            mode.get_ref().parse::<Mode>().map_err(|e| err_at(mode.span().start, format!("permissions.mode: {e}")))?;
        }
        for (key, rules) in [("allow", &p.allow), ("ask", &p.ask), ("deny", &p.deny)] {
            for (i, rule) in rules.iter().enumerate() {
                rule.get_ref()
                    .parse::<Rule>()
                    .map_err(|e| err_at(rule.span().start, format!("permissions.{key}[{i}]: {e}")))?;
            }
        }
        let h = &config.hooks;
        for (key, hooks) in [
            ("pre_tool_use", &h.pre_tool_use),
            ("post_tool_use", &h.post_tool_use),
            ("post_tool_use_failure", &h.post_tool_use_failure),
        ] {
            for (i, hook) in hooks.iter().enumerate() {
                if let Some(m) = &hook.matcher {
                    m.get_ref()
                        .parse::<HookMatcher>()
                        .map_err(|e| err_at(m.span().start, format!("hooks.{key}[{i}].matcher: {e}")))?;
                }
                if hook.command.get_ref().trim().is_empty() {
                    return Err(err_at(hook.command.span().start, format!("hooks.{key}[{i}].command: empty command")));
                }
                if let Some(t) = &hook.timeout_ms
                    && *t.get_ref() < 1
                {
                    return Err(err_at(t.span().start, format!("hooks.{key}[{i}].timeout_ms: must be at least 1")));
                }
            }
        }
        // Tool paths are relative to the config file's directory.
        let base = file.parent().unwrap_or(Path::new("."));
        for tool in config.tools.values_mut() {
            if let Some(p) = &mut tool.path
                && p.get_ref().is_relative()
            {
                let span = p.span();
                *p = Spanned::new(span, base.join(p.get_ref()));
            }
        }
        Ok(config)
    }

    /// Read and parse a config file.
    ///
    /// # Errors
    ///
    /// An unreadable file, or any error of [`Config::parse`].
    pub fn load(file: &Path) -> Result<Config, ConfigError> {
        let text = std::fs::read_to_string(file).map_err(|e| ConfigError {
            file: file.to_path_buf(),
            line: 0,
            column: 0,
            message: format!("cannot read config: {e}"),
        })?;
        Config::parse(&text, file)
    }

    /// The limits for `tool`: built-in defaults, then `[limits]`, then `[tools.NAME]`.
    pub fn limits_for(&self, tool: &str) -> Limits {
        let mut limits = Limits::default();
        self.limits.apply(&mut limits);
        if let Some(t) = self.tools.get(tool) {
            t.limits().apply(&mut limits);
        }
        limits
    }
}

impl LimitsConfig {
    fn positive_fields(&self) -> Vec<(&'static str, &Spanned<i64>)> {
        [
            ("max_concurrency", &self.max_concurrency),
            ("timeout_ms", &self.timeout_ms),
            ("memory_mib", &self.memory_mib),
            ("fuel", &self.fuel),
            ("max_result_chars", &self.max_result_chars),
            ("max_stdio_bytes", &self.max_stdio_bytes),
            ("max_input_bytes", &self.max_input_bytes),
            ("max_output_bytes", &self.max_output_bytes),
        ]
        .into_iter()
        .filter_map(|(k, v)| v.as_ref().map(|v| (k, v)))
        .collect()
    }

    /// Overwrite `limits` with every value set here (values were checked positive at parse).
    pub fn apply(&self, limits: &mut Limits) {
        let get = |v: &Option<Spanned<i64>>| v.as_ref().map(|s| *s.get_ref() as u64);
        if let Some(v) = get(&self.max_concurrency) {
            limits.max_concurrency = v as usize;
        }
        if let Some(v) = get(&self.timeout_ms) {
            limits.timeout_ms = v;
        }
        if let Some(v) = get(&self.memory_mib) {
            limits.memory_mib = v;
        }
        if let Some(v) = get(&self.fuel) {
            limits.fuel = Some(v);
        }
        if let Some(v) = get(&self.max_result_chars) {
            limits.max_result_chars = v as usize;
        }
        if let Some(v) = get(&self.max_stdio_bytes) {
            limits.max_stdio_bytes = v as usize;
        }
        if let Some(v) = get(&self.max_input_bytes) {
            limits.max_input_bytes = v as usize;
        }
        if let Some(v) = get(&self.max_output_bytes) {
            limits.max_output_bytes = v as usize;
        }
    }
}

impl ToolConfig {
    /// This tool's limit overrides.
    pub fn limits(&self) -> LimitsConfig {
        LimitsConfig {
            max_concurrency: None,
            timeout_ms: self.timeout_ms.clone(),
            memory_mib: self.memory_mib.clone(),
            fuel: self.fuel.clone(),
            max_result_chars: self.max_result_chars.clone(),
            max_stdio_bytes: self.max_stdio_bytes.clone(),
            max_input_bytes: self.max_input_bytes.clone(),
            max_output_bytes: self.max_output_bytes.clone(),
        }
    }
}

fn check_limits(
    fields: &[(&'static str, &Spanned<i64>)],
    table: &str,
    err_at: &impl Fn(usize, String) -> ConfigError,
) -> Result<(), ConfigError> {
    for (key, value) in fields {
        if *value.get_ref() < 1 {
            return Err(err_at(
                value.span().start,
                format!("{table}.{key}: must be at least 1, got {}", value.get_ref()),
            ));
        }
    }
    Ok(())
}

/// 1-based line and column of a byte offset.
fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let before = &text[..offset.min(text.len())];
    let line = before.matches('\n').count() + 1;
    let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    (line, column)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<Config, ConfigError> {
        Config::parse(text, Path::new("/etc/toolhost.toml"))
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
}
