//! # Path policy for the file-system guard
//!
//! A grant opens whole directories to a tool; inside them some paths still need more care. The
//! runtime asks a [`PathPolicy`] about every file operation a sandboxed tool makes (after
//! resolving links), so this is where three kinds of path are kept apart from the rest:
//!
//! - **protected** paths toolhost itself depends on (the config file, hook scripts, tools, the
//!   compile cache, `.toolhost/`): never written, replaced or moved by a tool, and the compile
//!   cache is not even readable;
//! - paths a **deny rule** covers (`Read(secrets/**)`, `Edit(.git/**)`): refused however the
//!   tool got there, not only when the call's subject names them;
//! - files **other programs run** later ([`DEFAULT_ASK_BEFORE_WRITING`] plus
//!   `[permissions] protected`): git hooks, shell start-up files, `.envrc`. Writing one is how
//!   a tool would get code run outside its sandbox, so a write needs a person's yes for that
//!   very call, in every mode.
//!
//! The patterns of each kind are compiled once into one [`GlobSet`], at the policy's first
//! check (not as each list is added: building a set of a hundred case-insensitive globs costs
//! most of a millisecond, and a start used to build it four times), so that
//! [`PathPolicy::check`] costs a few set lookups and allocates nothing unless it refuses.
//!
//! ## Example
//!
//! ```
//! use std::path::{Path, PathBuf};
//! use toolhost_policy::{DEFAULT_ASK_BEFORE_WRITING, FsAccess, FsRefusal, PathPolicy, Rule};
//!
//! let mut policy = PathPolicy::new(Path::new("/w"));
//! policy.protect("/w/toolhost.toml".into(), "the config file", false);
//! policy.ask_before_writing(DEFAULT_ASK_BEFORE_WRITING).unwrap();
//! policy.deny_rules(&["Read(secrets/**)".parse::<Rule>().unwrap()], "Bash", false);
//!
//! let hook = Path::new("/w/.git/hooks/pre-commit");
//! assert!(policy.check(Path::new("/w/src/main.rs"), FsAccess::Write, &[]).is_ok());
//! assert!(matches!(policy.check(hook, FsAccess::Write, &[]), Err(FsRefusal::NeedsAsk { .. })));
//! assert!(policy.check(hook, FsAccess::Write, &[hook.to_path_buf()]).is_ok(), "approved");
//! assert!(matches!(
//!     policy.check(Path::new("/w/secrets/key"), FsAccess::Read, &[]),
//!     Err(FsRefusal::Denied { .. })
//! ));
//! // Renaming `.git` away would move the hooks with it.
//! assert!(policy.check(Path::new("/w/.git"), FsAccess::Replace, &[]).is_err());
//! ```

use crate::path::normalize;
use crate::path_pattern::{PathPattern, PathPatternError};
use crate::permission::{FileFamily, Rule};
use globset::{GlobSet, GlobSetBuilder};
use std::borrow::Cow;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// Files other programs run later (git, the shell, direnv, editors), asked before any write in
/// every mode: writing one is how a sandboxed tool would get code run outside the sandbox.
/// Gitignore-style, at any depth, since nested repositories and their hooks run too.
pub const DEFAULT_ASK_BEFORE_WRITING: &[&str] = &[
    // git runs hooks; its config can name other hooks (core.hooksPath), filters and pagers.
    "**/.git/hooks/",
    "**/.git/config",
    // A submodule's git directory lives under the parent's `.git/modules/`.
    "**/.git/modules/**/hooks/",
    "**/.git/modules/**/config",
    // Submodule URLs and paths, fetched and checked out by `git submodule update`.
    ".gitmodules",
    // direnv runs it on `cd`.
    ".envrc",
    // VS Code can run tasks when a folder opens.
    "**/.vscode/tasks.json",
    // husky's hooks directory (git's core.hooksPath).
    ".husky/",
    // Claude Code's settings (hooks, permission rules), hook scripts and MCP servers, which it
    // runs, and toolhost reads.
    "**/.claude/",
    "**/.mcp.json",
    // Shell start-up files.
    ".bashrc",
    ".bash_profile",
    ".bash_login",
    ".bash_logout",
    ".profile",
    ".zshrc",
    ".zshenv",
    ".zprofile",
    ".zlogin",
];

/// What an operation does to the entry at a path.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FsAccess {
    /// Open for reading, stat, list, read a link.
    Read,
    /// Create, write, truncate, change times, make a directory, a hard link or a symlink at
    /// the path.
    Write,
    /// Remove the entry or rename it (either end). Also refused when the path is an ancestor
    /// of something protected, denied or asked: moving a parent moves what is inside, and
    /// renaming a prepared directory onto it replaces what is inside.
    Replace,
}

/// Why an operation is refused. Its `Display` is one sentence naming the path and why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum FsRefusal {
    /// A path toolhost itself depends on (the config file, a hook script, a tool, the compile
    /// cache, `.toolhost/`), or an ancestor of one for [`FsAccess::Replace`].
    #[error("{} is protected: toolhost depends on {what}", path.display())]
    Protected {
        /// The path of the operation.
        path: PathBuf,
        /// What it is, or what inside it is protected (`the config file /w/toolhost.toml`).
        what: String,
    },
    /// A deny rule covers the path (or, for [`FsAccess::Replace`], something inside it).
    #[error("{} is denied by the rule {rule}", path.display())]
    Denied {
        /// The path of the operation.
        path: PathBuf,
        /// The rule as written, e.g. `Read(secrets/**)`.
        rule: String,
    },
    /// A file other programs run (`.git/hooks/` …): a write needs a person's yes for this very
    /// call.
    #[error(
        "writing {} needs a person's approval for this call: it matches {pattern:?}, a file other programs run",
        path.display()
    )]
    NeedsAsk {
        /// The path of the operation.
        path: PathBuf,
        /// The ask-before-writing pattern it matches, as written.
        pattern: String,
    },
    /// The sandbox cannot tell what the operation would do, so it does not do it (a rename of
    /// a tree too big to check the links it moves).
    #[error("{} is refused: {why}", path.display())]
    Unchecked {
        /// The path of the operation.
        path: PathBuf,
        /// Why it cannot be checked.
        why: String,
    },
}

impl FsRefusal {
    /// The path of the refused operation.
    pub fn path(&self) -> &Path {
        match self {
            FsRefusal::Protected { path, .. }
            | FsRefusal::Denied { path, .. }
            | FsRefusal::NeedsAsk { path, .. }
            | FsRefusal::Unchecked { path, .. } => path,
        }
    }
}

/// A path toolhost depends on.
#[derive(Clone, Debug)]
struct Protected {
    path: PathBuf,
    what: String,
    /// Reads are refused too (the compile cache: what is in it is run by the host).
    hide: bool,
}

/// Patterns of one kind, each with the label a refusal names, matched together.
#[derive(Clone, Debug, Default)]
struct PatternSet {
    entries: Vec<(PathPattern, String)>,
    /// The patterns' globs in two sets, built at the first match rather than at each
    /// [`PatternSet::extend`]: a policy is put together from several lists, and a set of a
    /// hundred case-insensitive globs costs most of a millisecond to build.
    combined: OnceLock<Combined>,
}

/// A [`PatternSet`]'s globs, matched at once.
#[derive(Clone, Debug)]
struct Combined {
    /// The globs of the workspace-relative patterns.
    relative: GlobSet,
    /// The globs of the absolute (`//…`) patterns, relative to `/`.
    absolute: GlobSet,
    /// False when the sets could not be built (globset's size limits): then each pattern is
    /// matched on its own, which is slower but refuses the same paths.
    built: bool,
}

impl PatternSet {
    fn extend(&mut self, patterns: impl IntoIterator<Item = (PathPattern, String)>) {
        let before = self.entries.len();
        self.entries.extend(patterns);
        if self.entries.len() != before {
            self.combined = OnceLock::new();
        }
    }

    fn combined(&self) -> &Combined {
        self.combined.get_or_init(|| {
            let (mut relative, mut absolute) = (GlobSetBuilder::new(), GlobSetBuilder::new());
            for (p, _) in &self.entries {
                let builder = if p.is_absolute() { &mut absolute } else { &mut relative };
                for g in p.globs() {
                    builder.add(g.clone());
                }
            }
            match (relative.build(), absolute.build()) {
                (Ok(relative), Ok(absolute)) => Combined { relative, absolute, built: true },
                _ => Combined { relative: GlobSet::empty(), absolute: GlobSet::empty(), built: false },
            }
        })
    }

    fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The label of the first pattern matching `path`. Allocation-free; a match costs a walk
    /// over the patterns to name it, which only a refusal pays.
    fn find(&self, path: &Path, workspace: &Path) -> Option<&str> {
        if self.entries.is_empty() {
            return None;
        }
        let combined = self.combined();
        if combined.built {
            let inside = |base: &Path| path.strip_prefix(base).ok().filter(|rel| !rel.as_os_str().is_empty());
            let hit = inside(workspace).is_some_and(|rel| combined.relative.is_match(rel))
                || inside(Path::new("/")).is_some_and(|rel| combined.absolute.is_match(rel));
            if !hit {
                return None;
            }
        }
        self.entries.iter().find(|(p, _)| p.matches(path, workspace)).map(|(_, label)| label.as_str())
    }

    /// The label of the first pattern that may match something inside `path` (see
    /// [`PathPattern::may_hold_match`]).
    fn find_inside(&self, path: &Path, workspace: &Path) -> Option<&str> {
        self.entries.iter().find(|(p, _)| p.may_hold_match(path, workspace)).map(|(_, label)| label.as_str())
    }
}

/// Which paths a sandboxed tool may read, write and replace beyond what its grant opens:
/// protected paths, deny rules and ask-before-writing patterns, compiled once per tool.
///
/// Refusals come in that order: [`FsRefusal::Protected`], then [`FsRefusal::Denied`], then
/// [`FsRefusal::NeedsAsk`]; a person's approval passes only the last.
///
/// Relative patterns apply inside the workspace only; outside it, only absolute (`//…`)
/// patterns and protected paths refuse anything.
#[derive(Clone, Debug)]
pub struct PathPolicy {
    workspace: PathBuf,
    protected: Vec<Protected>,
    /// Deny rules refusing every access.
    deny_all: PatternSet,
    /// Deny rules refusing writes and replacements.
    deny_write: PatternSet,
    /// Ask-before-writing patterns.
    ask: PatternSet,
}

impl PathPolicy {
    /// A policy for tools working in `workspace` (canonical, absolute), refusing nothing.
    ///
    /// Nothing is asked by default either: add [`DEFAULT_ASK_BEFORE_WRITING`] (and the
    /// config's `[permissions] protected`) with [`PathPolicy::ask_before_writing`], protected
    /// paths with [`PathPolicy::protect`] and deny rules with [`PathPolicy::deny_rules`].
    pub fn new(workspace: &Path) -> Self {
        PathPolicy {
            workspace: normalize(workspace),
            protected: Vec::new(),
            deny_all: PatternSet::default(),
            deny_write: PatternSet::default(),
            ask: PatternSet::default(),
        }
    }

    /// Protect a path toolhost depends on (`what` names it in refusals, e.g. `the config
    /// file`): a Write or Replace of it or of anything inside it (if it is a directory) is
    /// refused, and so is a Replace of any of its ancestors. With `hide` (the compile cache),
    /// reads of it and inside it are refused too. A relative `path` is relative to the
    /// workspace.
    pub fn protect(&mut self, path: PathBuf, what: impl Into<String>, hide: bool) {
        let path = normalize(&self.workspace.join(path));
        self.protected.push(Protected { path, what: what.into(), hide });
    }

    /// Writes ([`FsAccess::Write`], [`FsAccess::Replace`]) to paths matching these
    /// gitignore-style patterns (see [`PathPattern`]) need a person's approval for the call;
    /// so does a Replace of a directory that may hold such a path.
    ///
    /// # Errors
    ///
    /// The first pattern that does not compile; then none of `patterns` is added.
    pub fn ask_before_writing<S: AsRef<str>>(&mut self, patterns: &[S]) -> Result<(), PathPatternError> {
        let compiled = patterns
            .iter()
            .map(|p| Ok((PathPattern::new(p.as_ref())?, p.as_ref().to_string())))
            .collect::<Result<Vec<_>, PathPatternError>>()?;
        self.ask.extend(compiled);
        Ok(())
    }

    /// [`ask_before_writing`](Self::ask_before_writing) for one pattern, named in refusals by
    /// `label` rather than by its text (`//**/*.py (code server.py loads from beside it …)`).
    ///
    /// # Errors
    ///
    /// The pattern does not compile.
    pub fn ask_before_writing_as(&mut self, pattern: &str, label: impl Into<String>) -> Result<(), PathPatternError> {
        let compiled = PathPattern::new(pattern)?;
        self.ask.extend([(compiled, label.into())]);
        Ok(())
    }

    /// [`ask_before_writing`](Self::ask_before_writing) for `patterns` at any depth anywhere,
    /// inside the workspace and outside it (each reported by its own text): a tool granted
    /// `~` must not write `~/.bashrc` unasked either. For names that mean the same thing in
    /// every directory, like [`DEFAULT_ASK_BEFORE_WRITING`].
    ///
    /// # Errors
    ///
    /// The first pattern that does not compile.
    pub fn ask_before_writing_anywhere<S: AsRef<str>>(&mut self, patterns: &[S]) -> Result<(), PathPatternError> {
        // One absolute pattern each: `//**/p` matches inside the workspace as well.
        let compiled = patterns
            .iter()
            .map(|p| {
                let p = p.as_ref();
                let anywhere = format!("//**/{}", p.trim_start_matches("**/"));
                Ok((PathPattern::new(&anywhere)?, p.to_string()))
            })
            .collect::<Result<Vec<_>, PathPatternError>>()?;
        self.ask.extend(compiled);
        Ok(())
    }

    /// The deny rules that apply inside the sandbox of the tool `tool`, as Claude Code's rule
    /// families do:
    ///
    /// - `Read(p)`: no Read, Write or Replace of matching paths, for every tool (what may not
    ///   be read may not be overwritten or moved either);
    /// - `Edit(p)` and `Write(p)`: no Write or Replace of matching paths, for every tool;
    /// - a rule naming `tool` itself, when `tool_subject_is_path` (its rules are about paths):
    ///   no access at all to matching paths for this tool.
    ///
    /// Rules without a pattern, `domain:` and `prefix:*` patterns, and rules of other tools are
    /// not about this tool's paths and are ignored here.
    pub fn deny_rules(&mut self, rules: &[Rule], tool: &str, tool_subject_is_path: bool) {
        let (mut all, mut write) = (Vec::new(), Vec::new());
        for rule in rules {
            let Some(path) = rule.pattern.as_ref().and_then(|p| p.path()) else { continue };
            let entry = (path.clone(), rule.to_string());
            let own = tool_subject_is_path && rule.names(tool);
            match rule.family() {
                _ if own => all.push(entry),
                Some(FileFamily::Read) => all.push(entry),
                Some(FileFamily::Edit | FileFamily::Write) => write.push(entry),
                None => {}
            }
        }
        if !all.is_empty() {
            self.deny_all.extend(all);
        }
        if !write.is_empty() {
            self.deny_write.extend(write);
        }
    }

    /// `Ok` if a tool may do `access` to `path`, else the first refusal (see [`PathPolicy`]
    /// for the order).
    ///
    /// `path` is absolute and normalised, with links already resolved by the caller (a
    /// relative path is taken relative to the workspace and a path with `..` normalised, at
    /// the cost of an allocation). `approved` holds the paths a person approved for this call:
    /// an exact match passes [`FsRefusal::NeedsAsk`], never a protected path or a deny rule.
    ///
    /// # Errors
    ///
    /// The [`FsRefusal`] that keeps the operation from happening.
    pub fn check(&self, path: &Path, access: FsAccess, approved: &[PathBuf]) -> Result<(), FsRefusal> {
        let path = self.absolute(path);
        let path = path.as_ref();
        let ws = self.workspace.as_path();
        let writes = access != FsAccess::Read;
        for p in &self.protected {
            let inside = path.starts_with(&p.path);
            let what = match access {
                _ if inside && (writes || p.hide) => Cow::Borrowed(p.what.as_str()),
                FsAccess::Replace if p.path.starts_with(path) => {
                    Cow::Owned(format!("{} {}, which is inside it", p.what, p.path.display()))
                }
                _ => continue,
            };
            return Err(FsRefusal::Protected { path: path.to_path_buf(), what: what.into_owned() });
        }
        let denied = |rule: &str| FsRefusal::Denied { path: path.to_path_buf(), rule: rule.to_string() };
        if let Some(rule) = self.deny_all.find(path, ws) {
            return Err(denied(rule));
        }
        if !writes {
            return Ok(());
        }
        if let Some(rule) = self.deny_write.find(path, ws) {
            return Err(denied(rule));
        }
        if access == FsAccess::Replace
            && let Some(rule) = self.deny_all.find_inside(path, ws).or_else(|| self.deny_write.find_inside(path, ws))
        {
            return Err(denied(rule));
        }
        if approved.iter().any(|a| a == path) {
            return Ok(());
        }
        let pattern = match access {
            FsAccess::Replace => self.ask.find(path, ws).or_else(|| self.ask.find_inside(path, ws)),
            _ => self.ask.find(path, ws),
        };
        match pattern {
            Some(pattern) => Err(FsRefusal::NeedsAsk { path: path.to_path_buf(), pattern: pattern.to_string() }),
            None => Ok(()),
        }
    }

    /// The ask-before-writing pattern a write to `path` (absolute, normalised) would need, if
    /// any: the pipeline asks before a call that names such a path runs, so that the write
    /// itself can pass with `approved`.
    pub fn needs_ask(&self, path: &Path) -> Option<&str> {
        self.ask.find(&self.absolute(path), &self.workspace)
    }

    /// Whether a read of some path beneath `dir` (at any depth, `dir` absolute) could be
    /// refused. When not, the entries of a listing of `dir` need no check of their own (links
    /// among them still do: they may lead elsewhere).
    pub fn may_refuse_reads_beneath(&self, dir: &Path) -> bool {
        let dir = self.absolute(dir);
        let dir = dir.as_ref();
        let ws = self.workspace.as_path();
        self.protected.iter().any(|p| p.hide && (dir.starts_with(&p.path) || p.path.starts_with(dir)))
            || self.deny_all.entries.iter().any(|(p, _)| p.may_match_beneath(dir, ws))
    }

    /// Whether nothing at all could be refused: then the caller may skip every check.
    pub fn is_empty(&self) -> bool {
        self.protected.is_empty() && self.deny_all.is_empty() && self.deny_write.is_empty() && self.ask.is_empty()
    }

    /// Whether any rule could refuse a [`FsAccess::Read`] (a hidden protected path, a `Read(…)`
    /// deny rule or a tool's own): without one, the caller may leave reads and listings
    /// unchecked.
    pub fn refuses_reads(&self) -> bool {
        self.protected.iter().any(|p| p.hide) || !self.deny_all.is_empty()
    }

    /// The workspace the policy was built for.
    pub fn workspace(&self) -> &Path {
        &self.workspace
    }

    /// `path` absolute and normalised; borrowed when it already is (the common case).
    fn absolute<'a>(&self, path: &'a Path) -> Cow<'a, Path> {
        if path.is_absolute() && is_normal(path) {
            Cow::Borrowed(path)
        } else {
            Cow::Owned(normalize(&self.workspace.join(path)))
        }
    }
}

/// Whether an absolute path has no `..`, `.` or empty component. `components()` skips `.` and
/// empty ones, but the globs match the path's text, where `/w/.git/./hooks` is not
/// `/w/.git/hooks`: such a path must be rebuilt before it is matched.
fn is_normal(path: &Path) -> bool {
    let text = path.as_os_str().as_encoded_bytes();
    let mut parts = text.split(|b| *b == b'/').skip(1);
    parts.all(|c| !c.is_empty() && c != b"." && c != b"..") || text == b"/"
}

#[cfg(test)]
mod tests {
    use super::*;
    use FsAccess::{Read, Replace, Write};

    /// What a check should come to: allowed, or refused as which kind, naming what.
    #[derive(Debug, PartialEq)]
    enum Want {
        Ok,
        Protected,
        Denied(&'static str),
        Ask(&'static str),
    }

    fn outcome(r: Result<(), FsRefusal>) -> String {
        match r {
            Ok(()) => "Ok".into(),
            Err(FsRefusal::Protected { what, .. }) => format!("Protected({what})"),
            Err(FsRefusal::Denied { rule, .. }) => format!("Denied({rule})"),
            Err(FsRefusal::NeedsAsk { pattern, .. }) => format!("Ask({pattern})"),
            Err(FsRefusal::Unchecked { why, .. }) => format!("Unchecked({why})"),
        }
    }

    fn policy() -> PathPolicy {
        let mut p = PathPolicy::new(Path::new("/w"));
        p.protect("/w/toolhost.toml".into(), "the config file", false);
        p.protect(".toolhost".into(), "its state directory", false);
        p.protect("/var/cache/toolhost".into(), "the compile cache", true);
        p.ask_before_writing(DEFAULT_ASK_BEFORE_WRITING).unwrap();
        p.ask_before_writing(&["deploy/*.sh".to_string()]).unwrap();
        let rules: Vec<Rule> =
            ["Read(secrets/**)", "Edit(.ssh/)", "Write(//etc/**)", "Bash(rm:*)", "Grep(logs/)", "Glob"]
                .iter()
                .map(|r| r.parse().unwrap())
                .collect();
        p.deny_rules(&rules, "Grep", true);
        p
    }

    #[test]
    fn check_table() {
        use Want::*;
        let p = policy();
        let cases: &[(&str, FsAccess, &[&str], Want)] = &[
            // Ordinary paths.
            ("/w/src/main.rs", Read, &[], Ok),
            ("/w/src/main.rs", Write, &[], Ok),
            ("/w/src/main.rs", Replace, &[], Ok),
            ("/w/src", Replace, &[], Ok),
            // Protected: writes and replacements refused, reads allowed unless hidden.
            ("/w/toolhost.toml", Read, &[], Ok),
            ("/w/toolhost.toml", Write, &[], Protected),
            ("/w/toolhost.toml", Replace, &["/w/toolhost.toml"], Protected),
            ("/w/.toolhost/state.json", Write, &[], Protected),
            ("/w/.toolhost", Write, &[], Protected),
            ("/w/.toolhostx", Write, &[], Ok),
            // An ancestor of a protected path cannot be moved; it can be written (a new file).
            ("/w", Replace, &[], Protected),
            ("/w", Write, &[], Ok),
            ("/var/cache", Replace, &[], Protected),
            ("/var/cache", Read, &[], Ok),
            // The compile cache is hidden, even outside the workspace.
            ("/var/cache/toolhost/abc.cwasm", Read, &[], Protected),
            ("/var/cache/toolhost", Read, &[], Protected),
            ("/var/cache/toolhost/abc.cwasm", Write, &[], Protected),
            // Read(…) denies every access, for every tool.
            ("/w/secrets/key", Read, &[], Denied("Read(secrets/**)")),
            ("/w/secrets/key", Write, &["/w/secrets/key"], Denied("Read(secrets/**)")),
            ("/w/secrets/key", Replace, &[], Denied("Read(secrets/**)")),
            ("/w/secrets", Read, &[], Ok),
            // Moving the directory a deny pattern lies in moves what it denies.
            ("/w/secrets", Replace, &[], Denied("Read(secrets/**)")),
            ("/w/secrets", Write, &[], Ok),
            // Edit(…) and Write(…) deny writes, not reads; a directory pattern covers itself.
            ("/w/.ssh/id_rsa", Read, &[], Ok),
            ("/w/sub/.ssh/id_rsa", Write, &[], Denied("Edit(.ssh/)")),
            ("/w/.ssh", Write, &[], Denied("Edit(.ssh/)")),
            ("/w/.ssh", Replace, &[], Denied("Edit(.ssh/)")),
            // Absolute patterns reach outside the workspace.
            ("/etc/passwd", Read, &[], Ok),
            ("/etc/passwd", Write, &[], Denied("Write(//etc/**)")),
            ("/etc", Replace, &[], Denied("Write(//etc/**)")),
            ("/w/etc/passwd", Write, &[], Ok),
            // The tool's own rule (Grep, whose subject is a path) denies it everything.
            ("/w/logs/app.log", Read, &[], Denied("Grep(logs/)")),
            ("/w/logs", Read, &[], Denied("Grep(logs/)")),
            // Ask before writing: the write needs a yes; reads never do.
            ("/w/.git/hooks/pre-commit", Read, &[], Ok),
            ("/w/.git/hooks/pre-commit", Write, &[], Ask("**/.git/hooks/")),
            ("/w/.git/hooks/pre-commit", Write, &["/w/.git/hooks/pre-commit"], Ok),
            ("/w/.git/hooks/pre-commit", Write, &["/w/.git/hooks"], Ask("**/.git/hooks/")),
            ("/w/.git/hooks/pre-commit", Replace, &[], Ask("**/.git/hooks/")),
            // The directory itself: renaming a prepared directory onto it.
            ("/w/.git/hooks", Write, &[], Ask("**/.git/hooks/")),
            ("/w/.git/hooks", Replace, &[], Ask("**/.git/hooks/")),
            // Nested repositories and submodules.
            ("/w/vendor/lib/.git/hooks/post-checkout", Write, &[], Ask("**/.git/hooks/")),
            ("/w/vendor/lib/.git/config", Write, &[], Ask("**/.git/config")),
            ("/w/.git/modules/lib/hooks/pre-commit", Write, &[], Ask("**/.git/modules/**/hooks/")),
            ("/w/.git/objects/ab/cdef", Write, &[], Ok),
            // Moving `.git` (any repository's) moves its hooks.
            ("/w/.git", Replace, &[], Ask("**/.git/hooks/")),
            ("/w/vendor/lib/.git", Replace, &[], Ask("**/.git/hooks/")),
            ("/w/.git", Replace, &["/w/.git"], Ok),
            ("/w/vendor", Replace, &[], Ok),
            ("/w/.git", Write, &[], Ok),
            // Files at any depth; a name that only looks alike is fine.
            ("/w/.bashrc", Write, &[], Ask(".bashrc")),
            ("/w/home/.zshenv", Write, &[], Ask(".zshenv")),
            ("/w/.bashrc.bak", Write, &[], Ok),
            ("/w/.envrc", Replace, &[], Ask(".envrc")),
            ("/w/a/.vscode/tasks.json", Write, &[], Ask("**/.vscode/tasks.json")),
            ("/w/.vscode/settings.json", Write, &[], Ok),
            ("/w/.husky", Write, &[], Ask(".husky/")),
            ("/w/.husky/pre-push", Write, &[], Ask(".husky/")),
            ("/w/.gitmodules", Write, &[], Ask(".gitmodules")),
            // Patterns added on top (`[permissions] protected`).
            ("/w/deploy/run.sh", Write, &[], Ask("deploy/*.sh")),
            ("/w/deploy", Replace, &[], Ask("deploy/*.sh")),
            ("/w/sub/deploy/run.sh", Write, &[], Ok),
            // Relative patterns say nothing outside the workspace.
            ("/home/u/.bashrc", Write, &[], Ok),
            ("/tmp/secrets/key", Read, &[], Ok),
            // Not normalised or not absolute: taken as the path it names.
            ("/w/src/../secrets/key", Read, &[], Denied("Read(secrets/**)")),
            ("secrets/key", Read, &[], Denied("Read(secrets/**)")),
        ];
        for (path, access, approved, want) in cases {
            let approved: Vec<PathBuf> = approved.iter().map(PathBuf::from).collect();
            let got = outcome(p.check(Path::new(path), *access, &approved));
            let ok = match want {
                Want::Protected => got.starts_with("Protected("),
                other => got == format!("{other:?}").replace('"', ""),
            };
            assert!(ok, "{path} {access:?} {approved:?}: want {want:?}, got {got}");
        }
    }

    #[test]
    fn ignored_rules_and_other_tools() {
        let rules: Vec<Rule> = ["Read", "Edit(*)", "Bash(cat:*)", "WebFetch(domain:x.com)", "Grep(logs/)"]
            .iter()
            .map(|r| r.parse().unwrap())
            .collect();
        // For a tool other than Grep, or one whose subject is not a path, `Grep(logs/)` says
        // nothing; the rest are not about paths.
        for (tool, subject_is_path) in [("Glob", true), ("Grep", false)] {
            let mut p = PathPolicy::new(Path::new("/w"));
            p.deny_rules(&rules, tool, subject_is_path);
            assert!(p.is_empty(), "{tool} {subject_is_path}");
            assert_eq!(p.check(Path::new("/w/logs/a"), Read, &[]), Result::Ok(()));
        }
        let mut p = PathPolicy::new(Path::new("/w"));
        p.deny_rules(&rules, "Grep", true);
        assert!(!p.is_empty());
    }

    #[test]
    fn protected_messages_name_the_path_and_why() {
        let p = policy();
        let shown = |path: &str, access| p.check(Path::new(path), access, &[]).unwrap_err().to_string();
        assert_eq!(
            shown("/w/toolhost.toml", Write),
            "/w/toolhost.toml is protected: toolhost depends on the config file"
        );
        assert_eq!(
            shown("/w", Replace),
            "/w is protected: toolhost depends on the config file /w/toolhost.toml, which is inside it"
        );
        assert_eq!(shown("/w/secrets/a", Read), "/w/secrets/a is denied by the rule Read(secrets/**)");
        assert_eq!(
            shown("/w/.envrc", Write),
            "writing /w/.envrc needs a person's approval for this call: it matches \".envrc\", a file other programs \
             run"
        );
        assert_eq!(p.check(Path::new("/w/.envrc"), Write, &[]).unwrap_err().path(), Path::new("/w/.envrc"));
    }

    #[test]
    fn default_asks_hold_outside_the_workspace_too() {
        let mut p = PathPolicy::new(Path::new("/w"));
        p.ask_before_writing_anywhere(DEFAULT_ASK_BEFORE_WRITING).unwrap();
        assert_eq!(p.needs_ask(Path::new("/home/u/.bashrc")), Some(".bashrc"));
        assert_eq!(p.needs_ask(Path::new("/home/u/repo/.git/hooks/pre-push")), Some("**/.git/hooks/"));
        assert_eq!(p.needs_ask(Path::new("/home/u/repo/.git/config")), Some("**/.git/config"));
        assert_eq!(p.needs_ask(Path::new("/w/.envrc")), Some(".envrc"));
        assert_eq!(p.needs_ask(Path::new("/home/u/notes.txt")), None);
        assert_eq!(p.needs_ask(Path::new("/home/u/.bashrc.bak")), None);
        assert!(matches!(p.check(Path::new("/home/u/.zshrc"), FsAccess::Write, &[]), Err(FsRefusal::NeedsAsk { .. })));
    }

    #[test]
    fn reads_beneath_a_directory_no_rule_reaches_cannot_be_refused() {
        let mut p = PathPolicy::new(Path::new("/w"));
        p.deny_rules(&["Read(secrets/**)".parse().unwrap(), "Read(*.key)".parse().unwrap()], "", false);
        p.protect("/cache".into(), "the compile cache", true);
        // `*.key` may match at any depth: every directory may hold one.
        assert!(p.may_refuse_reads_beneath(Path::new("/w/src")));
        let mut q = PathPolicy::new(Path::new("/w"));
        q.deny_rules(&["Read(secrets/**)".parse().unwrap()], "", false);
        q.protect("/cache".into(), "the compile cache", true);
        assert!(!q.may_refuse_reads_beneath(Path::new("/w/src")));
        assert!(q.may_refuse_reads_beneath(Path::new("/w")), "the workspace holds secrets/");
        assert!(q.may_refuse_reads_beneath(Path::new("/w/secrets")));
        assert!(q.may_refuse_reads_beneath(Path::new("/w/secrets/deep")));
        assert!(q.may_refuse_reads_beneath(Path::new("/")), "the root holds the cache");
        assert!(q.may_refuse_reads_beneath(Path::new("/cache/x")));
        assert!(!q.may_refuse_reads_beneath(Path::new("/elsewhere")));
    }

    #[test]
    fn needs_ask_and_empty() {
        let p = policy();
        assert_eq!(p.needs_ask(Path::new("/w/x/.git/hooks/pre-commit")), Some("**/.git/hooks/"));
        assert_eq!(p.needs_ask(Path::new("/w/.zprofile")), Some(".zprofile"));
        assert_eq!(p.needs_ask(Path::new("/w/src/a.rs")), None);
        assert_eq!(p.needs_ask(Path::new("/w/secrets/a")), None, "a deny rule is no question");

        assert!(p.refuses_reads());
        let mut asks = PathPolicy::new(Path::new("/w"));
        asks.ask_before_writing(DEFAULT_ASK_BEFORE_WRITING).unwrap();
        asks.protect("toolhost.toml".into(), "the config file", false);
        asks.deny_rules(&["Edit(src/**)".parse().unwrap()], "Write", false);
        assert!(!asks.is_empty() && !asks.refuses_reads(), "only writes can be refused");
        asks.protect("/cache".into(), "the compile cache", true);
        assert!(asks.refuses_reads());

        let mut empty = PathPolicy::new(Path::new("/w"));
        assert!(empty.is_empty() && !empty.refuses_reads());
        assert_eq!(empty.check(Path::new("/w/.git/hooks/x"), Replace, &[]), Result::Ok(()));
        let bad = empty.ask_before_writing(&["ok/**", "bad/["]).unwrap_err();
        assert!(bad.to_string().contains("\"bad/[\" is not a valid path glob"), "{bad}");
        assert!(empty.is_empty(), "a failed call adds nothing");
        empty.ask_before_writing::<&str>(&[]).unwrap();
        assert!(empty.is_empty());
    }

    #[test]
    fn defaults_compile() {
        // Over an empty list the loop would check nothing.
        assert!(!DEFAULT_ASK_BEFORE_WRITING.is_empty());
        for p in DEFAULT_ASK_BEFORE_WRITING {
            PathPattern::new(p).unwrap();
        }
    }
}
