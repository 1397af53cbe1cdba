//! Which tools a hook applies to: Claude Code's `matcher` semantics.

use std::str::FromStr;

/// A hook's `matcher`: empty or `*` matches every tool; names made only of `[A-Za-z0-9_|]`
/// are an exact name or a `|`-separated list of exact names; anything else is a regular
/// expression searched in the tool name (unanchored, as in Claude Code).
#[derive(Debug, Clone, serde::Deserialize)]
#[serde(try_from = "String")]
pub enum HookMatcher {
    /// Every tool.
    All,
    /// Exactly these names.
    Names(Vec<String>),
    /// Tool names this regular expression finds a match in.
    Regex(regex::Regex),
}

impl HookMatcher {
    /// Whether a hook with this matcher runs for `tool`.
    pub fn matches(&self, tool: &str) -> bool {
        match self {
            HookMatcher::All => true,
            HookMatcher::Names(names) => names.iter().any(|n| n == tool),
            HookMatcher::Regex(re) => re.is_match(tool),
        }
    }
}

impl TryFrom<String> for HookMatcher {
    type Error = MatcherError;
    fn try_from(s: String) -> Result<Self, Self::Error> {
        s.parse()
    }
}

/// A hook matcher that is neither `*`, nor names joined by `|`, nor a regular expression.
#[derive(Debug, Clone, thiserror::Error)]
#[error("invalid matcher regex {pattern:?}: {source}")]
pub struct MatcherError {
    /// The matcher as written (trimmed).
    pub pattern: String,
    /// Why the regular expression does not compile.
    #[source]
    pub source: regex::Error,
}

impl FromStr for HookMatcher {
    type Err = MatcherError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let s = s.trim();
        if s.is_empty() || s == "*" {
            return Ok(HookMatcher::All);
        }
        if s.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'|') {
            return Ok(HookMatcher::Names(s.split('|').filter(|n| !n.is_empty()).map(str::to_string).collect()));
        }
        regex::Regex::new(s).map(HookMatcher::Regex).map_err(|source| MatcherError { pattern: s.to_string(), source })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matcher_table() {
        let m = |s: &str| s.parse::<HookMatcher>().unwrap();
        assert!(m("").matches("Write"));
        assert!(m("*").matches("Write"));
        assert!(m("Write|Edit").matches("Edit"));
        assert!(!m("Write|Edit").matches("EditX"), "names are exact");
        assert!(!m("Write").matches("WriteFile"));
        assert!(m("Web.*").matches("WebFetch"));
        assert!(m("^(Read|Grep)$").matches("Grep"));
        assert!(!m("^(Read|Grep)$").matches("Greps"));
        assert!(m("mcp__.*").matches("mcp__github__x"));
        assert!("(".parse::<HookMatcher>().is_err());
    }
}
