//! Permission rules in Claude Code's syntax and the decision they lead to.
//!
//! A rule is `Tool`, `Tool(*)` or `Tool(pattern)`. The pattern is matched against the value at
//! the tool's `permission-subject` (e.g. `/file_path`):
//! - paths: gitignore-style globs ([`PathPattern`]), relative to the workspace (`src/**`,
//!   `*.env` at any depth), or absolute with a leading `//` (`//etc/**`);
//! - URLs: host patterns (`api.github.com`, `*.github.com`, or Claude Code's `domain:HOST`),
//!   matched against the host the WHATWG parser (the `url` crate, which WebFetch uses) finds,
//!   normalised as the fetch reaches it (case, trailing dot, percent-encoding, IDNA, IPv4
//!   forms), with [`NetPattern::matches_host`], the one host matcher of rules and network
//!   grants. A URL subject that does not parse is refused ([`Rules::decide_with_hook`]);
//! - anything else: the exact value, or a prefix with `prefix:*`.
//!
//! A rule's subject kind is only known when a call arrives, so every pattern but a `domain:` or
//! `prefix:*` one must compile as a path glob when the rule is parsed: a deny rule whose glob
//! does not compile would otherwise match nothing, failing open.
//!
//! Rules combine deny > ask > allow; then the mode decides what no rule covers.
//!

use crate::net::NetPattern;
use crate::path::{normalize, resolve};
use crate::path_pattern::{PathPattern, PathPatternError};
use std::path::Path;
use std::str::FromStr;

mod subject;

pub use subject::{SubjectKind, UrlSubject};

/// One permission rule.
#[derive(Debug, Clone, PartialEq, Eq, serde::Deserialize)]
#[serde(try_from = "String")]
pub struct Rule {
    /// The tool name it applies to.
    pub tool: String,
    /// `None`: the whole tool (`Tool` or `Tool(*)`); otherwise the pattern between parentheses.
    pub pattern: Option<RulePattern>,
}

/// The rule families that speak of files in general, not of one tool: as Claude Code documents,
/// `Read(p)` covers every tool that reads files and `Edit(p)` every tool that edits them; a
/// `Write(p)` deny rule also binds every tool's writes inside the sandbox. Tools are known by
/// these kinds, never by comparing their names elsewhere.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileFamily {
    /// `Read(…)`: reading files.
    Read,
    /// `Edit(…)`: editing files.
    Edit,
    /// `Write(…)`: writing files.
    Write,
}

impl FileFamily {
    /// The family a rule's tool name stands for, if any.
    pub fn of(tool: &str) -> Option<FileFamily> {
        match tool {
            "Read" => Some(FileFamily::Read),
            "Edit" => Some(FileFamily::Edit),
            "Write" => Some(FileFamily::Write),
            _ => None,
        }
    }
}

impl Rule {
    /// The family of files it speaks of, when its tool name is one (see [`FileFamily`]).
    pub fn family(&self) -> Option<FileFamily> {
        FileFamily::of(&self.tool)
    }
}

/// The pattern of a [`Rule`]: its text, and its path glob compiled once, when the rule is
/// parsed. Two patterns are equal when their text is.
#[derive(Debug, Clone)]
pub struct RulePattern {
    text: String,
    /// `None` only for a pattern that is not about paths (`domain:HOST`, `prefix:*`).
    path: Option<PathPattern>,
    /// The pattern as a host pattern, for URL subjects (`None`: it names no host).
    host: Option<NetPattern>,
}

impl RulePattern {
    /// Compile a pattern. A `domain:HOST` or `prefix:*` pattern is not about paths: it never
    /// matches a path subject and needs no glob.
    ///
    /// # Errors
    ///
    /// A `domain:` pattern that names no host; any other pattern that does not compile as a
    /// path glob (see [`PathPattern::new`]).
    pub fn new(text: &str) -> Result<Self, RulePatternError> {
        let path = if text.starts_with("domain:") || text.ends_with(":*") { None } else { Some(text.parse()?) };
        let host = host_pattern(text.strip_prefix("domain:").unwrap_or(text));
        if text.starts_with("domain:") && host.is_none() {
            // A deny rule that could match no host would fail open.
            return Err(RulePatternError::NotAHost(text.to_string()));
        }
        Ok(RulePattern { text: text.to_string(), path, host })
    }

    /// The pattern as written.
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// The pattern as a path glob; `None` for a `domain:` or `prefix:*` pattern.
    pub fn path(&self) -> Option<&PathPattern> {
        self.path.as_ref()
    }

    /// The pattern as a host pattern for URL subjects; `None` when it names no host.
    pub fn host(&self) -> Option<&NetPattern> {
        self.host.as_ref()
    }
}

/// A rule's pattern as a host pattern: `*`, `*.SUFFIX` or a host, normalised as the WHATWG
/// parser normalises a URL's host (case, trailing dot, percent-encoding, IDNA to punycode,
/// IPv4 written in other forms), so that a rule and a URL compare alike.
fn host_pattern(text: &str) -> Option<NetPattern> {
    let text = text.trim();
    if text == "*" {
        return text.parse().ok();
    }
    let (wild, name) = match text.strip_prefix("*.") {
        Some(suffix) => ("*.", suffix),
        None => ("", text),
    };
    let normal = match name.parse::<std::net::IpAddr>() {
        Ok(ip) => ip.to_string(),
        Err(_) => match url::Host::parse(name).ok()? {
            url::Host::Domain(d) => d,
            url::Host::Ipv4(ip) => ip.to_string(),
            url::Host::Ipv6(ip) => format!("[{ip}]"),
        },
    };
    let normal = normal.strip_suffix('.').unwrap_or(&normal);
    if normal.is_empty() || (!wild.is_empty() && normal.parse::<std::net::IpAddr>().is_ok()) {
        return None;
    }
    format!("{wild}{normal}").parse().ok()
}

/// Why a rule's pattern does not compile.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum RulePatternError {
    /// Not a path glob.
    #[error(transparent)]
    Path(#[from] PathPatternError),
    /// A `domain:` pattern that is not a host, `*.domain` or `*`.
    #[error("{0:?} is not a host pattern: write domain:HOST, domain:*.DOMAIN or domain:*, without a port")]
    NotAHost(String),
}

impl FromStr for RulePattern {
    type Err = RulePatternError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        RulePattern::new(s)
    }
}

impl PartialEq for RulePattern {
    fn eq(&self, other: &Self) -> bool {
        self.text == other.text
    }
}

impl Eq for RulePattern {}

impl std::fmt::Display for RulePattern {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.text)
    }
}

/// Why a rule could not be parsed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid permission rule {rule:?}: {reason}")]
pub struct RuleError {
    /// The rule as written.
    pub rule: String,
    /// What is wrong with it.
    pub reason: String,
}

impl TryFrom<String> for Rule {
    type Error = RuleError;
    fn try_from(s: String) -> Result<Self, Self::Error> {
        s.parse()
    }
}

impl FromStr for Rule {
    type Err = RuleError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Rule::parse_with(s, RulePattern::new)
    }
}

impl Rule {
    /// A rule whose pattern is only ever compared as text (the exact value, or a prefix with
    /// `prefix:*`), never as a path glob or a host: for Claude Code's tools that toolhost does
    /// not have (`Bash(npm run test:*)`), whose patterns are command lines.
    ///
    /// # Errors
    ///
    /// A rule that is not `Tool`, `Tool(*)` or `Tool(pattern)`.
    pub fn text_only(s: &str) -> Result<Rule, RuleError> {
        Rule::parse_with(s, |text| {
            Ok::<_, RulePatternError>(RulePattern { text: text.to_string(), path: None, host: None })
        })
    }

    /// `Tool`, `Tool(*)` or `Tool(pattern)`, the pattern compiled by `compile`. An MCP server's
    /// rule may be written `mcp__SERVER__*` (every tool of the server), as `mcp__SERVER`.
    fn parse_with(
        s: &str,
        compile: impl FnOnce(&str) -> Result<RulePattern, RulePatternError>,
    ) -> Result<Rule, RuleError> {
        let err = |reason: &str| RuleError { rule: s.to_string(), reason: reason.to_string() };
        let s = s.trim();
        let (tool, pattern) = match s.find('(') {
            None => (s, None),
            Some(open) => {
                let Some(inner) = s[open + 1..].strip_suffix(')') else {
                    return Err(err("a rule with `(` must end with `)`"));
                };
                let inner = inner.trim();
                if inner.is_empty() {
                    return Err(err("empty pattern: write `Tool` or `Tool(*)` for the whole tool"));
                }
                (&s[..open], if inner == "*" { None } else { Some(inner) })
            }
        };
        let tool = match tool.strip_suffix("__*") {
            Some(server) if server.starts_with("mcp__") && server.len() > "mcp__".len() => server,
            _ => tool,
        };
        if tool.is_empty() || !tool.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-') {
            return Err(err("the tool name must be 1-64 characters from [A-Za-z0-9_-]"));
        }
        if tool.len() > 64 {
            return Err(err("the tool name is longer than 64 characters"));
        }
        if let Some(p) = pattern
            && p.contains('\n')
        {
            return Err(err("a pattern cannot span lines"));
        }
        let pattern = pattern.map(compile).transpose().map_err(|e| err(&e.to_string()))?;
        Ok(Rule { tool: tool.to_string(), pattern })
    }

    /// Whether the rule names `tool`: by its name, or, for a rule naming an MCP server alone
    /// (`mcp__SERVER`), every tool of that server (`mcp__SERVER__TOOL`), as in Claude Code.
    pub fn names(&self, tool: &str) -> bool {
        if self.tool == tool {
            return true;
        }
        let server_only = self.tool.strip_prefix("mcp__").is_some_and(|rest| !rest.contains("__"));
        server_only
            && tool
                .strip_prefix(self.tool.as_str())
                .and_then(|rest| rest.strip_prefix("__"))
                .is_some_and(|t| !t.is_empty())
    }
}

impl std::fmt::Display for Rule {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.pattern {
            None => f.write_str(&self.tool),
            Some(p) => write!(f, "{}({p})", self.tool),
        }
    }
}

impl Rule {
    /// Whether this rule covers a call of `tool` whose subject is `subject`. A rule with a
    /// pattern never matches a call without a subject, and a `domain:` or `prefix:*` pattern
    /// never matches a path.
    pub fn matches(&self, tool: &str, subject: Option<(&str, SubjectKind)>, workspace: &Path) -> bool {
        if !self.names(tool) {
            return false;
        }
        let Some(pattern) = &self.pattern else { return true };
        let Some((value, kind)) = subject else { return false };
        match kind {
            SubjectKind::Path => {
                pattern.path().is_some_and(|p| p.covers(&resolve(value, workspace), &normalize(workspace)))
            }
            SubjectKind::Url => match (UrlSubject::parse(value), pattern.host()) {
                (Ok(url), Some(host)) => host.matches_host(&url.host),
                _ => false,
            },
            SubjectKind::Text => match pattern.as_str().strip_suffix(":*") {
                Some(prefix) => value.starts_with(prefix),
                None => value == pattern.as_str(),
            },
        }
    }
}

/// The outcome of a permission check.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    /// Run the call.
    Allow,
    /// Ask a person (a denial when no one can be asked).
    Ask,
    /// Refuse the call.
    Deny,
}

/// Permission modes (DESIGN §4).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Deserialize)]
#[serde(try_from = "String")]
pub enum Mode {
    /// Read-only tools inside the workspace are allowed; everything else asks.
    #[default]
    Default,
    /// Also allow writes inside the workspace.
    AcceptEdits,
    /// Allow everything no rule denies.
    Bypass,
    /// Like default, but every ask is a denial.
    DontAsk,
    /// Only read-only tools run.
    Plan,
}

impl TryFrom<String> for Mode {
    type Error = ModeError;
    fn try_from(s: String) -> Result<Self, Self::Error> {
        s.parse()
    }
}

/// A permission mode that does not exist.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown permission mode {0:?}: use default, accept-edits, bypass, dont-ask or plan")]
pub struct ModeError(pub String);

impl FromStr for Mode {
    type Err = ModeError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "default" => Ok(Mode::Default),
            "accept-edits" | "acceptEdits" => Ok(Mode::AcceptEdits),
            "bypass" | "bypassPermissions" => Ok(Mode::Bypass),
            "dont-ask" | "dontAsk" => Ok(Mode::DontAsk),
            "plan" => Ok(Mode::Plan),
            other => Err(ModeError(other.to_string())),
        }
    }
}

/// The operator's rules.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Rules {
    /// Calls allowed without asking.
    pub allow: Vec<Rule>,
    /// Calls that need a person's yes.
    pub ask: Vec<Rule>,
    /// Calls refused.
    pub deny: Vec<Rule>,
    /// Directories besides the workspace that count as inside it for the mode's default
    /// (Claude Code's `additionalDirectories`): absolute and normalised.
    pub working_dirs: Vec<std::path::PathBuf>,
}

/// What the permission check knows about a call.
#[derive(Debug, Clone, Copy)]
pub struct Request<'a> {
    /// The tool's name.
    pub tool: &'a str,
    /// The value at the tool's permission subject, with its kind.
    pub subject: Option<(&'a str, SubjectKind)>,
    /// Whether the tool declares itself read-only.
    pub read_only: bool,
    /// Whether everything the tool was granted lies inside the workspace (no directory outside
    /// it, no network). Decides "inside the workspace" for a call without a path subject,
    /// e.g. a search whose optional `path` was left out.
    pub grant_inside_workspace: bool,
}

impl Request<'_> {
    /// Whether the call stays inside the workspace: its path subject does, or, without one,
    /// its grant does.
    pub fn inside_workspace(&self, workspace: &Path) -> bool {
        match self.subject {
            Some((value, SubjectKind::Path)) => resolve(value, workspace).starts_with(workspace),
            _ => self.grant_inside_workspace,
        }
    }

    /// A rule that would allow this call, for messages: the subject's file, host or value.
    /// Paths inside the workspace are given relative to it, others absolute (`//…`); either is
    /// the path the subject names (`..` resolved), with glob characters escaped, so that the rule
    /// allows that path and what is inside it (a single name at any depth, as in `.gitignore`),
    /// and a file named `*` does not become the whole tool. A path no pattern can name (`/`, a
    /// name with a line break) gets the whole-tool rule, the only one that allows it.
    pub fn suggested_rule(&self, workspace: &Path) -> String {
        let narrow = self.narrow_rule(workspace);
        // Whatever the spelling of the subject, the rule offered must allow this very call:
        // one that would not (a host whose dots the pattern reads otherwise, `0..`) gives way
        // to the whole tool.
        match narrow.parse::<Rule>() {
            Ok(rule) if rule.matches(self.tool, self.subject, workspace) => narrow,
            _ => self.tool.to_string(),
        }
    }

    /// The rule naming this call's subject exactly, before it is checked to allow the call.
    fn narrow_rule(&self, workspace: &Path) -> String {
        match self.subject {
            Some((value, SubjectKind::Path)) => {
                let path = resolve(value, workspace);
                let pattern = match path.strip_prefix(workspace) {
                    Ok(rel) if !rel.as_os_str().is_empty() => literal_pattern(&rel.display().to_string()),
                    _ => format!("/{}", literal_pattern(&path.display().to_string())),
                };
                if pattern.trim_start_matches('/').is_empty() || pattern.contains('\n') {
                    self.tool.to_string()
                } else {
                    format!("{}({pattern})", self.tool)
                }
            }
            // The host as the rule will compare it (a URL that does not parse is refused
            // before anyone is asked).
            Some((value, SubjectKind::Url)) => match UrlSubject::parse(value) {
                // A host no pattern can name (`.-`) gets the whole-tool rule.
                Ok(url) if host_pattern(&url.host).is_some() => format!("{}(domain:{})", self.tool, url.host),
                _ => self.tool.to_string(),
            },
            _ => self.tool.to_string(),
        }
    }
}

/// A path pattern naming exactly `path` (and what is inside it): glob characters escaped,
/// whitespace at either end (which a rule's pattern loses) in a class of its own, and a leading
/// `./` where the path would otherwise read as a `domain:` pattern.
fn literal_pattern(path: &str) -> String {
    let last = path.chars().count().saturating_sub(1);
    let mut out = String::with_capacity(path.len() + 2);
    if path.starts_with("domain:") {
        out.push_str("./");
    }
    for (i, c) in path.chars().enumerate() {
        match c {
            '*' | '?' | '[' | ']' | '{' | '}' | '\\' => {
                out.push('\\');
                out.push(c);
            }
            c if c.is_whitespace() && (i == 0 || i == last) => {
                out.push('[');
                out.push(c);
                out.push(']');
            }
            c => out.push(c),
        }
    }
    out
}

/// What made a permission decision (for the audit log and for who may say more about it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum DecidedBy {
    /// A deny, ask or allow rule.
    Rule,
    /// The mode (its default, or plan, bypass or dont-ask overriding a rule).
    Mode,
    /// A PreToolUse hook's answer.
    Hook,
    /// The subject itself: a URL that does not parse is refused whatever the rules say.
    Subject,
}

/// A permission decision, what made it, and why in words.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verdict {
    /// Allow, deny or ask.
    pub decision: Decision,
    /// What decided.
    pub by: DecidedBy,
    /// The rule or mode, in words.
    pub reason: String,
}

impl Rules {
    /// Decide a call: deny rules first, then plan mode, then ask rules, then allow rules, then
    /// the mode's default. Returns the decision and a reason naming the rule or mode.
    pub fn decide(&self, mode: Mode, req: &Request<'_>, workspace: &Path) -> (Decision, String) {
        self.decide_with_hook(mode, req, workspace, None)
    }

    /// [`Rules::decide`] after PreToolUse hooks answered `hook` (`Deny` is handled by the
    /// caller). A hook's `ask` forces a question and its `allow` skips the mode's default, but
    /// neither overrides a deny rule, plan mode or an ask rule, as in Claude Code.
    ///
    /// As in Claude Code, a `Read(pattern)` rule also covers every other read-only tool whose
    /// subject is a path, and an `Edit(pattern)` rule every other tool that writes to one: a
    /// `deny = ["Read(.env)"]` keeps Grep and Glob out of `.env` too.
    pub fn decide_with_hook(
        &self,
        mode: Mode,
        req: &Request<'_>,
        workspace: &Path,
        hook: Option<Decision>,
    ) -> (Decision, String) {
        let verdict = self.verdict(mode, req, workspace, hook);
        (verdict.decision, verdict.reason)
    }

    /// [`Rules::decide_with_hook`], saying also what decided ([`DecidedBy`]).
    pub fn verdict(&self, mode: Mode, req: &Request<'_>, workspace: &Path, hook: Option<Decision>) -> Verdict {
        let v = |decision, by, reason: String| Verdict { decision, by, reason };
        let covers = |r: &Rule| {
            r.matches(req.tool, req.subject, workspace)
                || matches!(req.subject, Some((_, SubjectKind::Path)))
                    && r.pattern.is_some()
                    && match r.family() {
                        Some(FileFamily::Read) => req.read_only,
                        Some(FileFamily::Edit) => !req.read_only,
                        Some(FileFamily::Write) | None => false,
                    }
                    && r.matches(&r.tool, req.subject, workspace)
        };
        let find = |rules: &[Rule]| rules.iter().find(|r| covers(r)).cloned();
        if let Some((value, SubjectKind::Url)) = req.subject
            && let Err(why) = UrlSubject::parse(value)
        {
            return v(
                Decision::Deny,
                DecidedBy::Subject,
                format!("the URL {value:?} does not parse ({why}), so no rule can judge where it leads"),
            );
        }
        if let Some(rule) = find(&self.deny) {
            return v(Decision::Deny, DecidedBy::Rule, format!("denied by the rule {rule}"));
        }
        if mode == Mode::Plan && !req.read_only {
            return v(
                Decision::Deny,
                DecidedBy::Mode,
                format!("plan mode runs only read-only tools; {} is not read-only", req.tool),
            );
        }
        if let Some(rule) = find(&self.ask) {
            return match mode {
                Mode::Bypass => v(Decision::Allow, DecidedBy::Mode, format!("bypass mode (the rule {rule} would ask)")),
                Mode::DontAsk => v(
                    Decision::Deny,
                    DecidedBy::Mode,
                    format!("the rule {rule} asks, and dont-ask mode denies every ask"),
                ),
                _ => v(Decision::Ask, DecidedBy::Rule, format!("the rule {rule} asks")),
            };
        }
        match hook {
            Some(Decision::Ask) if mode == Mode::DontAsk => {
                return v(
                    Decision::Deny,
                    DecidedBy::Hook,
                    "a PreToolUse hook asks, and dont-ask mode denies every ask".to_string(),
                );
            }
            Some(Decision::Ask) => return v(Decision::Ask, DecidedBy::Hook, "a PreToolUse hook asks".to_string()),
            Some(Decision::Allow) => {
                return v(Decision::Allow, DecidedBy::Hook, "allowed by a PreToolUse hook".to_string());
            }
            _ => {}
        }
        if let Some(rule) = find(&self.allow) {
            return v(Decision::Allow, DecidedBy::Rule, format!("allowed by the rule {rule}"));
        }
        let inside = req.inside_workspace(workspace)
            || match req.subject {
                Some((value, SubjectKind::Path)) => {
                    let path = resolve(value, workspace);
                    self.working_dirs.iter().any(|d| path.starts_with(d))
                }
                _ => false,
            };
        let (decision, why) = match mode {
            Mode::Bypass => (Decision::Allow, "bypass mode".to_string()),
            _ if req.read_only && inside => (Decision::Allow, "a read-only tool inside the workspace".to_string()),
            Mode::AcceptEdits if inside => (Decision::Allow, "accept-edits mode, inside the workspace".to_string()),
            _ if !inside && matches!(req.subject, Some((_, SubjectKind::Path))) => {
                (Decision::Ask, format!("no rule allows {} outside the workspace", req.tool))
            }
            _ if !inside => (Decision::Ask, format!("no rule allows {}, which reaches beyond the workspace", req.tool)),
            _ => (Decision::Ask, format!("no rule allows {} to run without asking", req.tool)),
        };
        match (decision, mode) {
            (Decision::Ask, Mode::DontAsk) => {
                v(Decision::Deny, DecidedBy::Mode, format!("{why} (dont-ask mode denies every ask)"))
            }
            _ => v(decision, DecidedBy::Mode, why),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rule(s: &str) -> Rule {
        s.parse().unwrap()
    }

    #[test]
    fn parse_table() {
        let pattern = |r: &Rule| r.pattern.as_ref().map(RulePattern::as_str).map(str::to_string);
        for (text, tool, want) in [
            ("Read", "Read", None),
            ("Read(*)", "Read", None),
            ("Read(src/**)", "Read", Some("src/**")),
            (" Bash(npm run:*) ", "Bash", Some("npm run:*")),
            ("WebFetch(domain:example.com)", "WebFetch", Some("domain:example.com")),
            // Not path globs, so they need not compile as one.
            ("Bash(echo [:*)", "Bash", Some("echo [:*")),
            ("WebFetch(domain:*.Example.COM)", "WebFetch", Some("domain:*.Example.COM")),
        ] {
            let r = rule(text);
            assert_eq!((r.tool.as_str(), pattern(&r).as_deref()), (tool, want), "{text:?}");
        }
        assert_eq!(rule(" Bash(npm run:*) ").to_string(), "Bash(npm run:*)");
        assert_eq!(rule("Read(src/**)"), rule("Read( src/** )"), "equal when the text is");
        assert_ne!(rule("Read(src/**)"), rule("Read(./src/**)"));
    }

    #[test]
    fn parse_errors_table() {
        for (bad, reason) in [
            ("", "the tool name must be"),
            ("Read(", "a rule with `(` must end with `)`"),
            ("Read()", "empty pattern"),
            ("Re ad", "the tool name must be"),
            ("Read(x", "a rule with `(` must end with `)`"),
            ("(x)", "the tool name must be"),
            // A path glob that does not compile would match nothing: a deny rule failing open.
            ("Read(src/[)", "\"src/[\" is not a valid path glob: unclosed character class; missing ']'"),
            ("Edit({a,b)", "\"{a,b\" is not a valid path glob: unclosed alternate group"),
            ("Write(a})", "\"a}\" is not a valid path glob: unopened alternate group"),
            ("Read([z-a])", "\"[z-a]\" is not a valid path glob: invalid range; 'z' > 'a'"),
            ("Read(//)", "empty path pattern"),
            ("Bash(ls [)", "\"ls [\" is not a valid path glob"),
            // A domain pattern that names no host would match nothing: a deny rule failing open.
            ("WebFetch(domain:[x)", "\"domain:[x\" is not a host pattern"),
            ("WebFetch(domain:h.com:8080)", "\"domain:h.com:8080\" is not a host pattern"),
            ("WebFetch(domain:a b)", "\"domain:a b\" is not a host pattern"),
            ("WebFetch(domain:*.1.2.3.4)", "\"domain:*.1.2.3.4\" is not a host pattern"),
        ] {
            let e = bad.parse::<Rule>().expect_err(bad);
            assert_eq!(e.rule, bad, "the rule as written");
            assert!(e.reason.starts_with(reason), "{bad:?}: {e}");
        }
    }

    #[test]
    fn path_patterns() {
        let ws = Path::new("/w");
        let cases = [
            ("src/**", "src/a/b.rs", true),
            ("src/**", "/w/src/x", true),
            ("src/**", "lib/x", false),
            ("src/*.rs", "src/a.rs", true),
            ("src/*.rs", "src/a/b.rs", false),
            // As in .gitignore, `*` may match nothing and a leading dot is not special.
            ("*.env", "deep/dir/.env", true),
            ("*.env", "deep/dir/prod.env", true),
            (".git/**", ".git/config", true),
            (".git/", ".git/hooks/pre-commit", true),
            // A directory pattern covers the directory itself (a search of `secrets` reads it).
            ("secrets/", "secrets", true),
            ("secrets/", "/w/secrets/", true),
            ("//etc/**", "/etc/passwd", true),
            ("//etc/**", "etc/passwd", false),
            ("src/**", "../w/src/x", true),
            ("src/**", "src/../../etc/passwd", false),
            // Not path patterns: they never match a path.
            ("domain:src", "src", false),
            ("src:*", "src", false),
        ];
        for (pattern, subject, want) in cases {
            let r = rule(&format!("Read({pattern})"));
            assert_eq!(r.matches("Read", Some((subject, SubjectKind::Path)), ws), want, "{pattern} vs {subject}");
        }
    }

    #[test]
    fn url_and_text_patterns() {
        let ws = Path::new("/w");
        let url =
            |p: &str, u: &str| rule(&format!("WebFetch({p})")).matches("WebFetch", Some((u, SubjectKind::Url)), ws);
        assert!(url("api.github.com", "https://api.github.com/repos"));
        assert!(url("domain:api.github.com", "https://user@API.github.com:443/x"));
        assert!(url("*.github.com", "https://api.github.com/"));
        assert!(!url("*.github.com", "https://github.com/"));
        assert!(!url("github.com", "https://github.com.evil.net/"));
        // The host the fetch reaches, whatever the spelling (issue 30: each of these was judged
        // as another host, or as text, before).
        for (pattern, subject) in [
            ("domain:h.test", "http://h.test:8080\\@example.com/"),
            ("domain:h.test", " http://h.test/"),
            ("domain:h.test", "\thttp://h.test/"),
            ("domain:h.test", "ht\ttp://h.test/"),
            ("domain:h.test", "HTTP://H.TEST./x"),
            ("domain:h.test", "http://%68.test/"),
            ("domain:h.test", "http:h.test/"),
            ("domain:h.test", "http:\\\\h.test\\x"),
            ("domain:H.Test.", "https://h.test/"),
            ("domain:bücher.example", "https://xn--bcher-kva.example/"),
            ("domain:xn--bcher-kva.example", "https://BÜCHER.example/"),
            ("domain:127.0.0.1", "http://0x7f.1/"),
            ("domain:127.0.0.1", "http://2130706433/"),
            ("domain:[::1]", "http://[0:0::1]/"),
            ("domain:::1", "http://[::1]:80/"),
            ("*.h.test", "http://a.H.test./"),
        ] {
            assert!(url(pattern, subject), "{pattern} should cover {subject:?}");
        }
        assert!(!url("domain:example.com", "http://h.test:8080\\@example.com/"));
        let text = |p: &str, v: &str| rule(&format!("Bash({p})")).matches("Bash", Some((v, SubjectKind::Text)), ws);
        assert!(text("npm run:*", "npm run test"));
        assert!(!text("npm run:*", "npx run"));
        assert!(text("ls", "ls"));
        assert!(!text("ls", "ls -la"));
        assert!(!rule("Bash(ls)").matches("Bash", None, ws), "a pattern needs a subject");
        assert!(!rule("Read").matches("Write", None, ws));
    }

    #[test]
    fn a_url_subject_that_does_not_parse_is_refused_and_spelled_urls_are_urls() {
        let ws = Path::new("/w");
        for value in ["http://[bad/", "http://", "https://exa mple.com/", "http://a:99999/"] {
            let req = Request {
                tool: "WebFetch",
                subject: Some((value, SubjectKind::Url)),
                read_only: true,
                grant_inside_workspace: false,
            };
            let (d, why) = Rules::default().decide_with_hook(Mode::Bypass, &req, ws, None);
            assert_eq!(d, Decision::Deny, "{value:?}");
            assert!(why.contains("does not parse"), "{why}");
        }
        for (pointer, value) in [
            ("/url", "h.test"),
            ("/prompt", " http://h.test/"),
            ("/x", "HtTpS:h.test"),
            ("/x", "h\tttp://h.test"),
            ("/base_url", "x"),
            ("/baseUrl", "x"),
        ] {
            assert_eq!(SubjectKind::infer(pointer, value), SubjectKind::Url, "{pointer} {value:?}");
        }
        for (pointer, value) in [("/curl", "x"), ("/x", "httpx://h"), ("/file_path", "a/http://b")] {
            assert_ne!(SubjectKind::infer(pointer, value), SubjectKind::Url, "{pointer} {value:?}");
        }
    }

    #[test]
    fn decisions() {
        let ws = Path::new("/w");
        let rules = Rules {
            allow: vec![rule("Write(notes/**)"), rule("Edit")],
            ask: vec![rule("Read(secrets/**)")],
            deny: vec![rule("Write(.git/**)"), rule("Edit(.git/**)")],
            ..Rules::default()
        };
        let req = |tool, path, read_only| Request {
            tool,
            subject: Some((path, SubjectKind::Path)),
            read_only,
            grant_inside_workspace: true,
        };
        let d = |mode, r: Request<'_>| rules.decide(mode, &r, ws).0;
        use Decision::*;
        // Defaults: read-only inside the workspace allowed, outside asks, writes ask.
        assert_eq!(d(Mode::Default, req("Read", "src/a", true)), Allow);
        assert_eq!(d(Mode::Default, req("Read", "/etc/passwd", true)), Ask);
        assert_eq!(d(Mode::Default, req("Write", "src/a", false)), Ask);
        // Rules, deny > ask > allow.
        assert_eq!(d(Mode::Default, req("Write", "notes/x", false)), Allow);
        assert_eq!(d(Mode::Default, req("Edit", ".git/config", false)), Deny);
        assert_eq!(d(Mode::Bypass, req("Edit", ".git/config", false)), Deny, "bypass never overrides a deny");
        assert_eq!(d(Mode::Default, req("Read", "secrets/k", true)), Ask);
        assert_eq!(d(Mode::Bypass, req("Read", "secrets/k", true)), Allow);
        assert_eq!(d(Mode::DontAsk, req("Read", "secrets/k", true)), Deny);
        // Modes.
        assert_eq!(d(Mode::AcceptEdits, req("Write", "src/a", false)), Allow);
        assert_eq!(d(Mode::AcceptEdits, req("Write", "/tmp/a", false)), Ask);
        assert_eq!(d(Mode::DontAsk, req("Write", "src/a", false)), Deny);
        assert_eq!(d(Mode::Plan, req("Write", "notes/x", false)), Deny);
        assert_eq!(d(Mode::Plan, req("Read", "src/a", true)), Allow);
        assert_eq!(d(Mode::Bypass, req("Write", "/tmp/a", false)), Allow);
        // The message of an ask names a rule that would allow the call.
        let (_, why) = rules.decide(Mode::Default, &req("Write", "/tmp/a", false), ws);
        assert!(why.contains("outside the workspace"), "{why}");
        assert_eq!(req("Write", "/tmp/a", false).suggested_rule(ws), "Write(//tmp/a)");
        assert_eq!(req("Write", "/w/src/a", false).suggested_rule(ws), "Write(src/a)");
        // URLs: the host, unless no pattern names it so that it allows the call (found by
        // the property `a_suggested_rule_allows_the_call` on fresh clones).
        let url = |value| Request {
            tool: "WebFetch",
            subject: Some((value, SubjectKind::Url)),
            read_only: true,
            grant_inside_workspace: false,
        };
        assert_eq!(url("https://Example.COM./x").suggested_rule(ws), "WebFetch(domain:example.com)");
        for odd in ["http://0..?", "http://.-/", "http://a../"] {
            let suggested = url(odd).suggested_rule(ws);
            let allowed = Rules { allow: vec![rule(&suggested)], ..Rules::default() };
            assert_eq!(allowed.decide(Mode::Default, &url(odd), ws).0, Allow, "{odd}: {suggested}");
        }
    }

    #[test]
    fn read_and_edit_rules_cover_their_families() {
        let ws = Path::new("/w");
        let rules = Rules { deny: vec![rule("Read(.env)"), rule("Edit(.git/**)")], ..Rules::default() };
        let req = |tool, path, read_only| Request {
            tool,
            subject: Some((path, SubjectKind::Path)),
            read_only,
            grant_inside_workspace: true,
        };
        let d = |r: Request<'_>| rules.decide(Mode::Bypass, &r, ws).0;
        assert_eq!(d(req("Grep", "sub/.env", true)), Decision::Deny, "Read(..) covers every reader");
        assert_eq!(d(req("Write", ".git/config", false)), Decision::Deny, "Edit(..) covers every writer");
        assert_eq!(d(req("Write", ".env", false)), Decision::Allow, "Read(..) says nothing of writers");
        assert_eq!(d(req("Grep", ".git/config", true)), Decision::Allow, "Edit(..) says nothing of readers");
        let whole = Rules { deny: vec![rule("Read")], ..Rules::default() };
        assert_eq!(
            whole.decide(Mode::Bypass, &req("Grep", "x", true), ws).0,
            Decision::Allow,
            "whole-tool rules name one tool"
        );
    }

    #[test]
    fn calls_without_a_subject_and_hook_answers() {
        let ws = Path::new("/w");
        let none =
            |grant_inside_workspace| Request { tool: "Grep", subject: None, read_only: true, grant_inside_workspace };
        let rules = Rules::default();
        assert_eq!(rules.decide(Mode::Default, &none(true), ws).0, Decision::Allow);
        assert_eq!(rules.decide(Mode::Default, &none(false), ws).0, Decision::Ask, "a grant reaching outside asks");

        let write = Request {
            tool: "Write",
            subject: Some(("a", SubjectKind::Path)),
            read_only: false,
            grant_inside_workspace: true,
        };
        let with = |rules: &Rules, mode, hook| rules.decide_with_hook(mode, &write, ws, hook).0;
        use Decision::*;
        assert_eq!(with(&rules, Mode::Default, Some(Allow)), Allow, "a hook's allow skips the question");
        assert_eq!(with(&rules, Mode::Bypass, Some(Ask)), Ask, "a hook's ask forces the question");
        assert_eq!(with(&rules, Mode::DontAsk, Some(Ask)), Deny);
        let deny = Rules { deny: vec![rule("Write")], ..Rules::default() };
        assert_eq!(with(&deny, Mode::Default, Some(Allow)), Deny, "a hook's allow never beats a deny rule");
        let ask = Rules { ask: vec![rule("Write(a)")], ..Rules::default() };
        assert_eq!(with(&ask, Mode::Default, Some(Allow)), Ask, "nor an ask rule");
        assert_eq!(with(&rules, Mode::Plan, Some(Allow)), Deny, "nor plan mode");
    }

    #[test]
    fn modes_parse() {
        assert_eq!("accept-edits".parse::<Mode>(), Ok(Mode::AcceptEdits));
        assert_eq!("bypassPermissions".parse::<Mode>(), Ok(Mode::Bypass));
        assert!("yolo".parse::<Mode>().is_err());
    }
}
