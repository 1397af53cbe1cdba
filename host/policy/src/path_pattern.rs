//! Gitignore-style path patterns, compiled once.
//!
//! A pattern is parsed when the rule or setting that holds it is read, so that a pattern that
//! does not compile is an error there, at its position, rather than a rule that silently matches
//! nothing (a deny rule that fails open). It is compiled at its first match (a long one at
//! once: see `EAGER_ABOVE`), since compiling is most of a pattern's cost and a start reads many
//! that a short run never matches. Matching is then one [`GlobSet`] lookup on the
//! workspace-relative path: no glob is compiled twice and no ancestors are walked.

use globset::{Glob, GlobBuilder, GlobSet, GlobSetBuilder};
use std::ffi::OsStr;
use std::path::Path;
use std::str::FromStr;
use std::sync::OnceLock;

/// A gitignore-style path pattern.
///
/// - `//abs/**` is absolute (`/abs/**`); anything else is relative to the workspace;
/// - a pattern with no `/` but a trailing one matches a name at any depth (`*.env`, `.git/`);
///   one with a `/` elsewhere is anchored at the workspace (`src/*.rs`, `/build`), unless it
///   starts with `**/`;
/// - `*` and `?` stay within one directory, `**` crosses any number of them;
/// - a directory pattern `src/` covers the directory itself and everything under it;
/// - whatever a pattern matches covers what is inside it, as in `.gitignore`: `.git` covers
///   `.git/config` (and a permission rule's `dir/**` covers `dir` itself, see
///   [`PathPattern::covers`]);
/// - case is ignored, as Claude Code ignores it (`Read(.ENV)` covers `.env`), whatever the file
///   system.
///
/// Two patterns are equal when their text is.
///
/// # Examples
///
/// ```
/// use std::path::Path;
/// use toolhost_policy::PathPattern;
///
/// let ws = Path::new("/w");
/// let p: PathPattern = ".git/".parse().unwrap();
/// assert!(p.matches(Path::new("/w/sub/.git"), ws));
/// assert!(p.matches(Path::new("/w/sub/.git/hooks/pre-commit"), ws));
/// assert!(!p.matches(Path::new("/w/.github"), ws));
/// assert!("src/[".parse::<PathPattern>().is_err());
/// ```
#[derive(Clone, Debug)]
pub struct PathPattern {
    /// As written.
    text: String,
    /// `//…`: relative to `/` rather than the workspace.
    absolute: bool,
    /// False for a pattern that matches at any depth (its glob starts with `**/`).
    anchored: bool,
    /// The glob `G` and, unless it already ends with `/**`, `G/**` (what is inside a match).
    globs: Vec<Glob>,
    /// `globs`, matched together: compiled at the first match (see [`EAGER_ABOVE`]).
    set: OnceLock<GlobSet>,
    /// For `D/**`, `D` itself: what a permission rule covers besides ([`PathPattern::covers`]),
    /// compiled at the first use.
    dir_itself: Option<(Glob, OnceLock<globset::GlobMatcher>)>,
    /// The leading components without a glob character: for an anchored pattern, the directory
    /// every match lies in; for one at any depth, the names every match ends in or lies under.
    literal: Vec<String>,
}

/// Why a path pattern could not be compiled.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum PathPatternError {
    /// The pattern names no path (`""`, `//`).
    #[error("empty path pattern")]
    Empty,
    /// globset rejected the glob.
    #[error("{pattern:?} is not a valid path glob: {}", source.kind())]
    Glob {
        /// The pattern as written.
        pattern: String,
        /// globset's error (about the glob the pattern became, e.g. `**/src/[`).
        #[source]
        source: globset::Error,
    },
}

/// Patterns longer than this are compiled when they are read, so that one too big for
/// globset's size limits is an error there. Shorter ones are only parsed then, and compiled
/// at their first match: compiling is most of the cost of a pattern (tens of microseconds),
/// a start reads a hundred of them, and most are never matched in a short run. A parsed
/// pattern this short always compiles (`tests::short_patterns_always_compile`).
const EAGER_ABOVE: usize = 256;

/// Characters that start something other than a literal in a glob.
const GLOB_META: &[char] = &['*', '?', '[', ']', '{', '}', '\\'];

impl PathPattern {
    /// Compile a pattern.
    ///
    /// # Errors
    ///
    /// [`PathPatternError::Empty`] for a pattern that names no path, and
    /// [`PathPatternError::Glob`] when globset rejects it (an unclosed `[` or `{`, a bad
    /// range, a dangling `\`).
    pub fn new(pattern: &str) -> Result<Self, PathPatternError> {
        let (absolute, glob) = match pattern.strip_prefix("//") {
            Some(abs) => (true, abs.trim_start_matches('/').to_string()),
            None => {
                let rel = pattern.strip_prefix("./").unwrap_or(pattern);
                // As in .gitignore: a `/` other than a trailing one anchors the pattern.
                let glob = if rel.trim_end_matches('/').contains('/') {
                    rel.trim_start_matches('/').to_string()
                } else {
                    format!("**/{rel}")
                };
                (false, glob)
            }
        };
        // A directory pattern `src/` is `src` and `src/**`: it covers the directory itself
        // (renaming a prepared directory onto it writes it) and everything under it.
        let glob = glob.trim_end_matches('/');
        if glob.is_empty() || pattern.trim().is_empty() {
            return Err(PathPatternError::Empty);
        }
        let compile = |g: &str| {
            GlobBuilder::new(g)
                .literal_separator(true)
                // As Claude Code matches (the `ignore` package), whatever the file system.
                .case_insensitive(true)
                .build()
                .map_err(|source| PathPatternError::Glob { pattern: pattern.to_string(), source })
        };
        let mut globs = vec![compile(glob)?];
        if glob != "**" && !glob.ends_with("/**") {
            // Matching a directory covers what is inside it.
            globs.push(compile(&format!("{glob}/**"))?);
        }
        // For a permission rule, `dir/**` names `dir` itself too, as in Claude Code (which
        // strips a trailing `/**` before matching): a search of `secrets` is a search of what
        // `secrets/**` names. Inside the sandbox the directory's own entry stays reachable (its
        // contents are what is denied).
        let dir_itself = match glob.strip_suffix("/**") {
            Some(dir) if !dir.is_empty() && dir != "**" => Some((compile(dir)?, OnceLock::new())),
            _ => None,
        };
        let set = OnceLock::new();
        if pattern.len() > EAGER_ABOVE {
            let built =
                build_set(&globs).map_err(|source| PathPatternError::Glob { pattern: pattern.to_string(), source })?;
            let _ = set.set(built);
            if let Some((glob, matcher)) = &dir_itself {
                let _ = matcher.set(glob.compile_matcher());
            }
        }
        let (anchored, rest) = match glob.strip_prefix("**/") {
            Some(rest) => (false, rest),
            None => (glob != "**", glob),
        };
        let literal =
            rest.split('/').take_while(|c| !c.is_empty() && !c.contains(GLOB_META)).map(String::from).collect();
        Ok(PathPattern { text: pattern.to_string(), absolute, anchored, globs, set, dir_itself, literal })
    }

    /// The pattern as written.
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// Whether the pattern is absolute (`//…`) rather than relative to the workspace.
    pub fn is_absolute(&self) -> bool {
        self.absolute
    }

    /// Whether the pattern matches `path`, an absolute, normalised path (see
    /// [`crate::resolve`]). A relative pattern matches only inside `workspace`; neither kind
    /// matches its base itself (the workspace, or `/`).
    pub fn matches(&self, path: &Path, workspace: &Path) -> bool {
        self.relative(path, workspace).is_some_and(|rel| self.set().is_match(rel))
    }

    /// Whether a permission rule with this pattern covers `path`: what [`PathPattern::matches`]
    /// matches and, for `D/**`, the directory `D` itself (as Claude Code reads a rule).
    pub fn covers(&self, path: &Path, workspace: &Path) -> bool {
        self.matches(path, workspace)
            || self
                .dir_itself
                .as_ref()
                .map(|(glob, matcher)| matcher.get_or_init(|| glob.compile_matcher()))
                .is_some_and(|m| self.relative(path, workspace).is_some_and(|rel| m.is_match(rel)))
    }

    /// The globs matched together, compiled at the first call. A pattern of at most
    /// [`EAGER_ABOVE`] characters always compiles; should one not, it matches nothing rather
    /// than stopping a call.
    fn set(&self) -> &GlobSet {
        self.set.get_or_init(|| build_set(&self.globs).unwrap_or_else(|_| GlobSet::empty()))
    }

    /// The parsed globs, relative to [`PathPattern::base`]: for building one set of many
    /// patterns.
    pub(crate) fn globs(&self) -> &[Glob] {
        &self.globs
    }

    /// What the globs are relative to: `/` or the workspace.
    pub(crate) fn base<'a>(&self, workspace: &'a Path) -> &'a Path {
        if self.absolute { Path::new("/") } else { workspace }
    }

    /// `path` relative to the base, if it lies strictly inside it.
    fn relative<'p>(&self, path: &'p Path, workspace: &Path) -> Option<&'p Path> {
        path.strip_prefix(self.base(workspace)).ok().filter(|rel| !rel.as_os_str().is_empty())
    }

    /// Whether moving `path` (an absolute, normalised path) could move something this pattern
    /// matches, as far as can be told without the file system: `path` is the base or one of
    /// its ancestors, or, for an anchored pattern, an ancestor of (or equal to) the directory
    /// its literal prefix names (`secrets` for `secrets/**`), or, for a pattern at any depth,
    /// a path ending in a leading part of its literal names (`sub/.git` for `**/.git/hooks/`).
    ///
    /// A directory that holds a match deeper down (`sub` holding `sub/.git/hooks`) is not
    /// caught; a pattern at any depth already asks or refuses when that match was written.
    pub(crate) fn may_hold_match(&self, path: &Path, workspace: &Path) -> bool {
        let base = self.base(workspace);
        if base.starts_with(path) {
            return true;
        }
        let Ok(rel) = path.strip_prefix(base) else { return false };
        if self.anchored {
            let mut literal = self.literal.iter();
            rel.components().all(|c| literal.next().is_some_and(|l| same_name(c.as_os_str(), l)))
        } else {
            (1..=self.literal.len()).any(|n| {
                let mut tail = rel.components().rev();
                self.literal[..n].iter().rev().all(|l| tail.next().is_some_and(|c| same_name(c.as_os_str(), l)))
            })
        }
    }
}

impl PathPattern {
    /// Whether the pattern may match some path beneath `dir` (an absolute, normalised path),
    /// at any depth, erring towards yes: `dir` contains the base, or lies in the base where
    /// the pattern's leading literal names allow (a pattern at any depth may match anywhere
    /// beneath its base). A `no` is certain: no path beneath `dir` can match.
    pub(crate) fn may_match_beneath(&self, dir: &Path, workspace: &Path) -> bool {
        let base = self.base(workspace);
        if base.starts_with(dir) {
            return true;
        }
        let Ok(rel) = dir.strip_prefix(base) else { return false };
        !self.anchored || rel.components().zip(&self.literal).all(|(c, l)| same_name(c.as_os_str(), l))
    }
}

fn build_set(globs: &[Glob]) -> Result<GlobSet, globset::Error> {
    let mut set = GlobSetBuilder::new();
    for g in globs {
        set.add(g.clone());
    }
    set.build()
}

/// Whether a path component is a pattern's literal name, ignoring case as the globs do.
fn same_name(component: &OsStr, literal: &str) -> bool {
    component == OsStr::new(literal) || component.to_str().is_some_and(|c| c.to_lowercase() == literal.to_lowercase())
}

impl FromStr for PathPattern {
    type Err = PathPatternError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        PathPattern::new(s)
    }
}

impl PartialEq for PathPattern {
    fn eq(&self, other: &Self) -> bool {
        self.text == other.text
    }
}

impl Eq for PathPattern {}

impl std::fmt::Display for PathPattern {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig { cases: 300, ..Default::default() })]

        /// What lets a short pattern be compiled at its first match: any pattern of at most
        /// `EAGER_ABOVE` characters that parses also compiles (the worst cases are long runs
        /// of classes, alternations and `**`).
        #[test]
        fn short_patterns_always_compile(
            pattern in proptest::string::string_regex("(\\*\\*/|\\*|\\?|\\[!a-z\\]|\\{a,bc,\\*\\}|[a-z.]|/){1,120}").unwrap()
        ) {
            let pattern: String = pattern.chars().take(EAGER_ABOVE).collect();
            if let Ok(p) = PathPattern::new(&pattern) {
                proptest::prop_assert!(build_set(&p.globs).is_ok(), "{pattern}");
                if let Some((glob, _)) = &p.dir_itself {
                    let _ = glob.compile_matcher();
                }
            }
        }
    }

    #[test]
    fn a_pattern_matches_the_same_compiled_early_or_late() {
        let long = format!("{}/**", "a".repeat(EAGER_ABOVE));
        for text in ["src/**", "*.env", ".git/", long.as_str()] {
            let p = PathPattern::new(text).unwrap();
            assert_eq!(p.set.get().is_some(), text.len() > EAGER_ABOVE, "{text}");
            let inside = Path::new("/w").join(text.trim_end_matches("/**").trim_end_matches('/').replace('*', "x"));
            assert!(p.matches(&inside.join("f"), Path::new("/w")), "{text}");
            assert!(p.set.get().is_some());
        }
    }

    #[test]
    fn a_rule_covers_the_directory_of_its_double_star_and_case_is_ignored() {
        let ws = Path::new("/w");
        let p: PathPattern = "secrets/**".parse().unwrap();
        assert!(!p.matches(Path::new("/w/secrets"), ws), "the sandbox keeps the entry itself reachable");
        assert!(p.covers(Path::new("/w/secrets"), ws));
        assert!(p.covers(Path::new("/w/SECRETS/key"), ws));
        assert!(!p.covers(Path::new("/w/secretsx"), ws));
        let abs: PathPattern = "//etc/ssh/**".parse().unwrap();
        assert!(abs.covers(Path::new("/etc/ssh"), ws) && !abs.covers(Path::new("/etc"), ws));
        let any: PathPattern = "**".parse().unwrap();
        assert!(!any.covers(Path::new("/w"), ws));
        let env: PathPattern = ".ENV".parse().unwrap();
        assert!(env.matches(Path::new("/w/sub/.env"), ws));
        assert!(env.may_hold_match(Path::new("/w/sub/.Env"), ws));
    }

    #[test]
    fn matches_table() {
        let ws = Path::new("/w");
        let cases = [
            // Anchored at the workspace.
            ("src/**", "/w/src/a/b.rs", true),
            ("src/**", "/w/src", false),
            ("src/**", "/w/lib/x", false),
            ("src/*.rs", "/w/src/a.rs", true),
            ("src/*.rs", "/w/src/a/b.rs", false),
            ("/build", "/w/build/out", true),
            ("/build", "/w/sub/build", false),
            ("./src", "/w/a/src", true),
            // At any depth; `*` may match nothing and a leading dot is not special.
            ("*.env", "/w/deep/dir/.env", true),
            ("*.env", "/w/prod.env", true),
            ("**/.git/hooks/", "/w/a/b/.git/hooks/pre-commit", true),
            // A directory pattern covers the directory itself and what is inside.
            (".git/", "/w/.git", true),
            (".git/", "/w/.git/hooks/pre-commit", true),
            (".git/hooks/", "/w/.git/hooks", true),
            (".git/hooks/", "/w/.git/hooksx", false),
            // Matching a directory covers what is inside it.
            ("secrets", "/w/a/secrets/k", true),
            ("src/a.rs", "/w/src/a.rs/x", true),
            // Absolute.
            ("//etc/**", "/etc/passwd", true),
            ("//etc/**", "/w/etc/passwd", false),
            ("//etc", "/etc", true),
            // Neither kind matches its base.
            ("**", "/w", false),
            ("**", "/w/x", true),
            ("src/**", "/elsewhere/src/x", false),
        ];
        for (pattern, path, want) in cases {
            let p = PathPattern::new(pattern).unwrap();
            assert_eq!(p.matches(Path::new(path), ws), want, "{pattern} vs {path}");
        }
    }

    #[test]
    fn errors_table() {
        for (pattern, want) in [
            ("src/[", "\"src/[\" is not a valid path glob: unclosed character class; missing ']'"),
            ("{a,b", "\"{a,b\" is not a valid path glob: unclosed alternate group"),
            ("a}", "\"a}\" is not a valid path glob: unopened alternate group"),
            ("[z-a]", "\"[z-a]\" is not a valid path glob: invalid range; 'z' > 'a'"),
            ("x\\", "\"x\\\\\" is not a valid path glob: dangling '\\'"),
            ("", "empty path pattern"),
            ("//", "empty path pattern"),
        ] {
            let e = PathPattern::new(pattern).unwrap_err().to_string();
            assert!(e.starts_with(want), "{pattern:?}: {e}");
        }
    }

    #[test]
    fn may_match_beneath_table() {
        let ws = Path::new("/w");
        for (pattern, dir, want) in [
            ("secrets/**", "/w", true),
            ("secrets/**", "/", true),
            ("secrets/**", "/w/secrets", true),
            ("secrets/**", "/w/secrets/deep", true),
            ("secrets/**", "/w/src", false),
            ("secrets/**", "/w/secretsx", false),
            ("secrets/**", "/elsewhere", false),
            ("secrets/a.txt", "/w/secrets/a.txt/x", true),
            ("a/*/c", "/w/a/b", true),
            ("a/*/c", "/w/z", false),
            ("*.key", "/w/src/deep", true),
            ("*.key", "/elsewhere", false),
            ("{a,b}/x", "/w/c", true),
            ("//etc/**", "/etc/ssl", true),
            ("//etc/**", "/usr", false),
            ("//etc/**", "/w", false),
        ] {
            let p = PathPattern::new(pattern).unwrap();
            assert_eq!(p.may_match_beneath(Path::new(dir), ws), want, "{pattern} beneath {dir}");
        }
    }

    #[test]
    fn may_hold_match_table() {
        let ws = Path::new("/w");
        let cases = [
            ("secrets/**", "/w/secrets", true),
            ("secrets/**", "/w", true),
            ("secrets/**", "/", true),
            ("secrets/**", "/w/secretsx", false),
            ("secrets/**", "/w/other", false),
            ("a/b/*.pem", "/w/a", true),
            ("a/b/*.pem", "/w/a/b", true),
            ("a/b/*.pem", "/w/a/c", false),
            ("**/.git/hooks/", "/w/.git", true),
            ("**/.git/hooks/", "/w/sub/.git", true),
            ("**/.git/hooks/", "/w/sub", false),
            ("**/.git/hooks/", "/w/sub/hooks", false),
            (".git/", "/w/x/.git", true),
            ("*.env", "/w/x", false),
            ("//etc/ssh/**", "/etc", true),
            ("//etc/ssh/**", "/etc/ssl", false),
            ("//etc/ssh/**", "/w", false),
            ("src/*", "/other", false),
        ];
        for (pattern, path, want) in cases {
            let p = PathPattern::new(pattern).unwrap();
            assert_eq!(p.may_hold_match(Path::new(path), ws), want, "{pattern} holding {path}");
        }
    }

    #[test]
    fn equal_by_text() {
        assert_eq!(PathPattern::new("a/**").unwrap(), PathPattern::new("a/**").unwrap());
        assert_ne!(PathPattern::new("a/**").unwrap(), PathPattern::new("./a/**").unwrap());
    }
}
