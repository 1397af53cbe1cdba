//! Where the position-tracking diagnostics of a config live: the document is read with `toml`'s
//! recovering parser, each section deserialized with serde, and a section that fails is tried
//! key by key (and element by element), so every bad key is reported once, at its own line and
//! column, and the rest of the document is still checked.

use super::*;
use toml::de::{DeArray, DeTable, DeValue, ValueDeserializer};

/// Everything [`Config::parse`] and [`Config::check`] do: the config with every bad part left
/// out, and every error sorted by position. `touch_fs` checks that tool paths exist.
pub(super) fn check_document(text: &str, file: &Path, touch_fs: bool) -> (Config, Vec<ConfigError>) {
    let (root, syntax_errors) = DeTable::parse_recoverable(text);
    let root = Spanned::new(root.span(), DeValue::Table(root.into_inner()));
    let mut checker = Checker { text, file, errors: Vec::new() };

    let mut config: Config = checker.typed(&root, "").unwrap_or_default();
    checker.values(&config);

    // Tool paths are relative to the config file's directory.
    let base = file.parent().unwrap_or(Path::new("."));
    for (name, tool) in &mut config.tools {
        let Some(p) = &mut tool.path else { continue };
        if p.get_ref().is_relative() {
            *p = Spanned::new(p.span(), base.join(p.get_ref()));
        }
        if touch_fs && !p.get_ref().is_file() {
            let shown = normalize(&std::path::absolute(p.get_ref()).unwrap_or_else(|_| p.get_ref().clone()));
            let what = if p.get_ref().exists() { "not a file" } else { "no such file" };
            let path = key_path(&key_path("tools", name), "path");
            checker.error(p.span().start, format!("{path}: {what}: {}", shown.display()));
        }
    }
    if let Some(f) = &mut config.audit.file
        && f.get_ref().is_relative()
    {
        *f = Spanned::new(f.span(), base.join(f.get_ref()));
    }
    for (i, f) in config.tls.ca_files.iter_mut().enumerate() {
        if f.get_ref().is_relative() {
            *f = Spanned::new(f.span(), base.join(f.get_ref()));
        }
        if touch_fs {
            let problem = match std::fs::read_to_string(f.get_ref()) {
                Err(e) => Some(e.to_string()),
                Ok(pem) if !pem.contains("-----BEGIN CERTIFICATE-----") => {
                    Some("no PEM certificate (`-----BEGIN CERTIFICATE-----`) in it".to_string())
                }
                Ok(_) => None,
            };
            if let Some(problem) = problem {
                let shown = normalize(&std::path::absolute(f.get_ref()).unwrap_or_else(|_| f.get_ref().clone()));
                checker.error(f.span().start, format!("tls.ca_files[{i}]: {}: {problem}", shown.display()));
            }
        }
    }

    // The parser recovers from a syntax error by guessing; whatever else it finds wrong on the
    // same line is a consequence, not news.
    let mut syntax_lines = BTreeSet::new();
    let mut errors: Vec<ConfigError> = syntax_errors
        .iter()
        .map(|e| {
            let error =
                error_at(text, file, e.span().map_or(0, |s| s.start), format!("syntax: {}", e.message().trim()));
            syntax_lines.insert(error.line);
            error
        })
        .collect();
    errors.extend(checker.errors.into_iter().filter(|e| !syntax_lines.contains(&e.line)));
    errors.sort_by_key(|e| (e.line, e.column));
    errors.dedup();

    let tool_keys = match root.get_ref().get("tools").map(Spanned::get_ref) {
        Some(DeValue::Table(tools)) => tools.iter().map(|(k, _)| (k.get_ref().to_string(), k.span().start)).collect(),
        _ => BTreeMap::new(),
    };
    config.source = Some(Arc::new(Source { file: file.to_path_buf(), text: text.to_string(), tool_keys }));
    (config, errors)
}

/// Collects errors while a document is deserialized and checked.
struct Checker<'a> {
    text: &'a str,
    file: &'a Path,
    errors: Vec<ConfigError>,
}

/// Puts a part of a document back where it came from, as the only entry of every table and
/// array on the way, so that it can be deserialized alone as the whole document's type.
type Wrap<'w, 'i> = &'w dyn Fn(Spanned<DeValue<'i>>) -> Spanned<DeValue<'i>>;

impl Checker<'_> {
    fn error(&mut self, offset: usize, message: String) {
        self.errors.push(error_at(self.text, self.file, offset, one_line(&message)));
    }

    /// A serde error at `path`, at the error's own position or else at `fallback`.
    fn serde_error(&mut self, path: &str, e: &toml::de::Error, fallback: usize) {
        let offset = e.span().map_or(fallback, |s| s.start);
        let message = e.message().trim();
        self.error(offset, if path.is_empty() { message.to_string() } else { format!("{path}: {message}") });
    }

    /// Deserialize a `T` from `value`. On failure, report each part that fails on its own and
    /// return the `T` made of the rest (if there is one).
    fn typed<'i, T: DeserializeOwned>(&mut self, value: &Spanned<DeValue<'i>>, path: &str) -> Option<T> {
        match de::<T>(value.clone()) {
            Ok(t) => Some(t),
            Err(e) => {
                let kept = self.blame::<T>(&|v| v, value, path, e)?;
                de::<T>(kept).ok()
            }
        }
    }

    /// `wrap(value)` fails to deserialize as a `T` with `error`. Find the smallest parts of
    /// `value` that fail on their own and report each (or `error` at `path` if there are none).
    /// Returns `value` without the failing parts, or `None` if it cannot be kept at all.
    ///
    /// An array with an element that cannot be kept is dropped whole rather than shortened, so
    /// that later checks name the elements of the arrays they see by their index in the file.
    fn blame<'i, T: DeserializeOwned>(
        &mut self,
        wrap: Wrap<'_, 'i>,
        value: &Spanned<DeValue<'i>>,
        path: &str,
        error: toml::de::Error,
    ) -> Option<Spanned<DeValue<'i>>> {
        let span = value.span();
        let kept = match value.get_ref() {
            DeValue::Table(table) => {
                let mut kept = DeTable::new();
                let mut blamed = false;
                for (key, item) in table.iter() {
                    let wrap_key = |v: Spanned<DeValue<'i>>| {
                        let mut one = DeTable::new();
                        one.insert(key.clone(), v);
                        wrap(Spanned::new(span.clone(), DeValue::Table(one)))
                    };
                    let failing = match de::<T>(wrap_key(item.clone())) {
                        // Alone, a key lacks its siblings: a missing field is then reported at
                        // the table (its span), which is not this key's problem.
                        Err(e) if e.span() != Some(span.clone()) && within(&e, &cover(key.span(), extent(item))) => {
                            Some(e)
                        }
                        _ => None,
                    };
                    let item = match failing {
                        None => Some(item.clone()),
                        Some(e) => {
                            blamed = true;
                            self.blame::<T>(&wrap_key, item, &key_path(path, key.get_ref()), e)
                        }
                    };
                    if let Some(item) = item {
                        kept.insert(key.clone(), item);
                    }
                }
                blamed.then(|| Spanned::new(span.clone(), DeValue::Table(kept)))
            }
            DeValue::Array(array) => {
                let mut kept = array.clone();
                let (mut blamed, mut dropped) = (false, false);
                // Whether an array is welcome here at all (empty, it fails at itself if not).
                let empty = wrap(Spanned::new(span.clone(), DeValue::Array(DeArray::new())));
                let array_welcome = de::<T>(empty).err().is_none_or(|e| e.span() != Some(span.clone()));
                for (i, item) in array.iter().enumerate() {
                    let wrap_item = |v: Spanned<DeValue<'i>>| {
                        wrap(Spanned::new(span.clone(), DeValue::Array(DeArray::from_iter([v]))))
                    };
                    let Err(e) = de::<T>(wrap_item(item.clone())) else { continue };
                    if !within(&e, &extent(item)) {
                        // A value made from a string (`try_from`: rules, modes, matchers) fails
                        // at the array it is in, not at itself; alone in it, it is what failed.
                        if array_welcome
                            && e.span() == Some(span.clone())
                            && !matches!(item.get_ref(), DeValue::Table(_) | DeValue::Array(_))
                        {
                            blamed = true;
                            dropped = true;
                            self.error(item.span().start, format!("{path}[{i}]: {}", e.message().trim()));
                        }
                        continue;
                    }
                    blamed = true;
                    match self.blame::<T>(&wrap_item, item, &format!("{path}[{i}]"), e) {
                        Some(v) => kept.as_mut()[i] = v,
                        None => dropped = true,
                    }
                }
                if dropped {
                    return None;
                }
                blamed.then(|| Spanned::new(span.clone(), DeValue::Array(kept)))
            }
            _ => None,
        };
        let Some(kept) = kept else {
            self.serde_error(path, &error, span.start);
            return None;
        };
        match de::<T>(wrap(kept.clone())) {
            Ok(_) => Some(kept),
            Err(e) => {
                // What is left still fails: a required key is missing.
                self.serde_error(path, &e, span.start);
                None
            }
        }
    }

    /// The checks serde cannot do: ranges, formats, rules, matchers.
    fn values(&mut self, config: &Config) {
        self.limits(&config.limits, "limits");
        if let Some(max) = &config.audit.max_bytes
            && *max.get_ref() < 1
        {
            self.error(max.span().start, format!("audit.max_bytes: must be at least 1, got {}", max.get_ref()));
        }
        for (name, tool) in &config.tools {
            let table = key_path("tools", name);
            self.limits(&tool.limits(), &table);
            if let Some(grant) = &tool.grant {
                for message in grant.get_ref().pattern_errors() {
                    self.error(grant.span().start, format!("{table}.grant.{message}"));
                }
            }
            if let Some(sha) = &tool.sha256 {
                let s = sha.get_ref();
                if s.len() != 64 || !s.bytes().all(|b| b.is_ascii_hexdigit()) {
                    self.error(sha.span().start, format!("{table}.sha256: expected 64 hex digits, got {s:?}"));
                }
            }
            if let Some(version) = &tool.version {
                let problem = match tool.source.as_ref().map(|s| s.get_ref()) {
                    None => Some("needs a `source` (oci://REGISTRY/REPOSITORY, no tag)".to_string()),
                    // A source without a tag reads as `:latest`, which the version replaces.
                    Some(crate::ToolRef::Oci(r))
                        if r.tag.as_ref().is_some_and(|t| t != "latest") || r.digest.is_some() =>
                    {
                        Some(format!(
                            "the version chooses the tag: give the source without one (oci://{}/{})",
                            r.registry, r.repository
                        ))
                    }
                    Some(crate::ToolRef::Oci(_)) => None,
                    Some(other) => Some(format!("only an oci:// source has versions to choose from, not {other}")),
                };
                if let Some(problem) = problem {
                    self.error(version.span().start, format!("{table}.version: {problem}"));
                }
            }
            // An installed tool is pinned by the lock file, and its bytes come from there.
            if let Some(source) = &tool.source {
                if let Some(path) = &tool.path {
                    self.error(path.span().start, format!("{table}.path: a tool has a `path` or a `source`, not both"));
                }
                if let Some(sha) = &tool.sha256 {
                    self.error(
                        sha.span().start,
                        format!(
                            "{table}.sha256: a tool with a `source` is pinned by toolhost.lock ({}); remove this key",
                            source.get_ref()
                        ),
                    );
                }
            }
        }
        for (name, signer) in &config.signatures.signers {
            for (i, prefix) in signer.sources.iter().enumerate() {
                if prefix.get_ref().trim().is_empty() {
                    let path = key_path(&key_path("signatures.signers", name), "sources");
                    self.error(prefix.span().start, format!("{path}[{i}]: empty source prefix"));
                }
            }
        }
        let p = &config.permissions;
        for (i, pattern) in p.protected.iter().enumerate() {
            if let Err(e) = PathPattern::new(pattern.get_ref()) {
                self.error(pattern.span().start, format!("permissions.protected[{i}]: {e}"));
            }
        }
        let h = &config.hooks;
        for (key, hooks) in [
            ("pre_tool_use", &h.pre_tool_use),
            ("post_tool_use", &h.post_tool_use),
            ("post_tool_use_failure", &h.post_tool_use_failure),
        ] {
            for (i, hook) in hooks.iter().enumerate() {
                if hook.command.get_ref().trim().is_empty() {
                    self.error(hook.command.span().start, format!("hooks.{key}[{i}].command: empty command"));
                }
                if let Some(t) = &hook.timeout_ms
                    && *t.get_ref() < 1
                {
                    self.error(t.span().start, format!("hooks.{key}[{i}].timeout_ms: must be at least 1"));
                }
                for (j, f) in hook.files.iter().flatten().enumerate() {
                    if f.get_ref().as_os_str().is_empty() {
                        self.error(f.span().start, format!("hooks.{key}[{i}].files[{j}]: empty path"));
                    }
                }
            }
        }
    }

    fn limits(&mut self, limits: &LimitsConfig, table: &str) {
        for (key, value) in limits.positive_fields() {
            if *value.get_ref() < 1 {
                self.error(value.span().start, format!("{table}.{key}: must be at least 1, got {}", value.get_ref()));
            }
        }
    }
}

impl Config {
    /// Every hook whose files cannot be protected in `workspace` (see
    /// [`crate::hook_protected_paths`]; `home` is what `~` and `$HOME` stand for): a command
    /// that cannot be analysed and has no `files`, a file it runs at the workspace root, a
    /// `files` entry that is the workspace or above it. Each error is at the hook's `command`
    /// (or at the `files` entry), and says how to fix it.
    pub fn hook_errors(&self, workspace: &Path, home: Option<&Path>) -> Vec<ConfigError> {
        let mut errors = Vec::new();
        let servers = self.mcp_servers.iter().filter_map(|(name, s)| Some((name, s.as_hook()?)));
        for (name, hook) in servers {
            let Err(e) = crate::hook_protected_paths(&hook, workspace, home) else { continue };
            // Said of a server as a server, with the `files` key in the syntax of the file it
            // was written in (`.mcp.json` is JSON).
            let text = e.to_string();
            let text =
                text.strip_prefix("hook ").map_or_else(|| text.clone(), |rest| format!("MCP server {name} {rest}"));
            let text = match &hook.origin {
                Some(_) => text.replace("files = [", "\"files\": [").replace("as hooks/", "as mcp/"),
                None => text.replace("as hooks/", "as mcp/"),
            };
            let message = format!("mcp_servers.{name}.command: {text}");
            errors.push(match &hook.origin {
                Some(origin) => origin.error(message),
                None => self.error_at(hook.command.span().start, message),
            });
        }
        for (key, i, hook) in self.hooks.indexed() {
            let Err(e) = crate::hook_protected_paths(hook, workspace, home) else { continue };
            // A hook of a Claude Code settings file is reported there.
            if let Some(origin) = &hook.origin {
                errors.push(origin.error(format!("hook {:?}: {e}", hook.command.get_ref())));
                continue;
            }
            let at = match (&e, &hook.files) {
                (crate::HookError::ListedTooWide { index, .. }, Some(files)) => {
                    (files[*index].span().start, format!("hooks.{key}[{i}].files[{index}]"))
                }
                _ => (hook.command.span().start, format!("hooks.{key}[{i}].command")),
            };
            errors.push(self.error_at(at.0, format!("{}: {e}", at.1)));
        }
        errors
    }
}

fn de<T: DeserializeOwned>(value: Spanned<DeValue<'_>>) -> Result<T, toml::de::Error> {
    T::deserialize(ValueDeserializer::from(value))
}

/// Whether `e` lies inside `range` (an error without a position lies nowhere).
fn within(e: &toml::de::Error, range: &Range<usize>) -> bool {
    e.span().is_some_and(|s| range.start <= s.start && s.end <= range.end)
}

fn cover(a: Range<usize>, b: Range<usize>) -> Range<usize> {
    a.start.min(b.start)..a.end.max(b.end)
}

/// The text a value and everything in it spans. A table opened by a `[header]` spans only the
/// header; its keys follow.
fn extent(value: &Spanned<DeValue<'_>>) -> Range<usize> {
    match value.get_ref() {
        DeValue::Table(t) => t.iter().fold(value.span(), |r, (k, v)| cover(cover(r, k.span()), extent(v))),
        DeValue::Array(a) => a.iter().fold(value.span(), |r, v| cover(r, extent(v))),
        _ => value.span(),
    }
}

/// `parent.key`, with the key quoted unless it is bare (`tools."my tool"`).
pub(super) fn key_path(parent: &str, key: &str) -> String {
    let bare = !key.is_empty() && key.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
    let key = if bare { key.to_string() } else { format!("{key:?}") };
    if parent.is_empty() { key } else { format!("{parent}.{key}") }
}

/// A message on one line, so that a list of errors has one per line. Some sources (the regex
/// crate) draw a caret under the bad part on lines of their own: those lines go.
fn one_line(message: &str) -> String {
    let lines = message.lines().map(str::trim).filter(|l| !l.is_empty() && !l.chars().all(|c| c == '^' || c == '~'));
    lines.collect::<Vec<_>>().join(" ")
}

pub(super) fn error_at(text: &str, file: &Path, offset: usize, message: String) -> ConfigError {
    let (line, column) = line_col(text, offset);
    ConfigError { file: file.to_path_buf(), line, column, message }
}

/// 1-based line and column of a byte offset.
pub(crate) fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let mut offset = offset.min(text.len());
    while !text.is_char_boundary(offset) {
        offset -= 1;
    }
    let before = &text[..offset];
    let line = before.matches('\n').count() + 1;
    let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    (line, column)
}
