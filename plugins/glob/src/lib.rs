//! `Glob`: find files by name pattern, newest first, skipping what ripgrep would skip.

use std::fs;
use std::path::PathBuf;
use std::time::SystemTime;

use globset::{GlobBuilder, GlobMatcher};
use schemars::JsonSchema;
use serde::Deserialize;
use tool_common::{io_error, mtime, resolve, sort_newest_first, walked_file, walker, workspace};
use toolhost_sdk::{Capability, Output, Tool, ToolError, export_tool, progress};

/// Most paths returned; past that the model should narrow the search.
const MAX_RESULTS: usize = 100;
const TRUNCATED: &str = "(Results are truncated. Consider using a more specific path or pattern.)";

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Input {
    /// The glob pattern to match files against, relative to the search directory, e.g.
    /// `**/*.rs` or `src/**/*.ts`. `*` does not cross `/`; `**/` matches any depth.
    pattern: String,
    /// The directory to search in: absolute, or relative to the workspace. Omit it to search
    /// the workspace; do not pass "undefined" or "null".
    path: Option<String>,
}

struct Glob;

impl Tool for Glob {
    type Input = Input;
    const NAME: &'static str = "Glob";
    const DESCRIPTION: &'static str = "Fast file pattern matching that works with any codebase \
size.\n\
\n\
- Supports glob patterns like `**/*.js` or `src/**/*.ts`, matched against paths relative to the \
search directory: `*` does not cross `/`, `**/` matches any number of directories, `{a,b}` \
either.\n\
- Returns matching file paths (absolute), sorted by modification time, newest first; at most \
100.\n\
- Skips hidden files and whatever .gitignore excludes, as ripgrep does.\n\
- Use it to find files by name; to search inside files, use Grep.";
    const PERMISSION_SUBJECT: Option<&'static str> = Some("/path");
    const READ_ONLY: bool = true;

    fn capabilities() -> Vec<Capability> {
        vec![Capability::FsRead("/".into())]
    }

    fn validate(input: &Input) -> Result<(), String> {
        if input.pattern.trim().is_empty() {
            return Err("pattern must not be empty.".into());
        }
        matcher(&input.pattern).map(drop)
    }

    fn call(input: Input) -> Result<Output, ToolError> {
        let dir = match input.path.as_deref().filter(|p| !p.trim().is_empty()) {
            Some(path) => resolve(path)?,
            None => workspace()?,
        };
        let meta = fs::metadata(&dir).map_err(|e| io_error("reading", &dir, e))?;
        if !meta.is_dir() {
            return Err(ToolError::InvalidInput(format!(
                "{} is not a directory; Glob's path is the directory to search in.",
                dir.display()
            )));
        }
        let glob = matcher(&input.pattern).map_err(ToolError::InvalidInput)?;
        // An absolute pattern names absolute paths; any other is relative to the directory.
        let absolute = input.pattern.starts_with('/');

        let mut found: Vec<(PathBuf, SystemTime)> = Vec::new();
        let mut searched = 0usize;
        for entry in walker(&dir).build().flatten() {
            if entry.file_type().is_none_or(|t| t.is_dir()) {
                continue;
            }
            searched += 1;
            let path = entry.path();
            let candidate = if absolute { path } else { path.strip_prefix(&dir).unwrap_or(path) };
            // Only matches are stat'ed: on a big tree, that is most of the cost.
            if glob.is_match(candidate)
                && let Some(meta) = walked_file(&entry)
            {
                found.push((entry.into_path(), mtime(&meta)));
            }
        }
        progress(&format!("{} of {searched} files matched", found.len()));
        Ok(Output::text(format_results(found)))
    }
}

/// The compiled pattern, or the glob error for the model. A leading `./` is dropped: walked
/// paths are relative to the directory without one.
fn matcher(pattern: &str) -> Result<GlobMatcher, String> {
    let pattern = pattern.strip_prefix("./").unwrap_or(pattern);
    GlobBuilder::new(pattern)
        .literal_separator(true)
        .build()
        .map(|glob| glob.compile_matcher())
        .map_err(|e| format!("Invalid glob pattern: {e}"))
}

/// Newest first, at most [`MAX_RESULTS`] paths, one a line; a note when some were left out.
fn format_results(mut found: Vec<(PathBuf, SystemTime)>) -> String {
    if found.is_empty() {
        return "No files found".into();
    }
    sort_newest_first(&mut found);
    let mut lines: Vec<String> = found.iter().take(MAX_RESULTS).map(|(path, _)| path.display().to_string()).collect();
    if found.len() > MAX_RESULTS {
        lines.push(TRUNCATED.into());
    }
    lines.join("\n")
}

export_tool!(Glob);

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;
    use std::time::{Duration, UNIX_EPOCH};

    /// Whether `pattern` matches the relative `path` as Glob would.
    fn matches(pattern: &str, path: &str) -> bool {
        matcher(pattern).unwrap().is_match(Path::new(path))
    }

    #[test]
    fn patterns_follow_glob_semantics() {
        assert!(matches("**/*.rs", "src/main.rs"));
        assert!(matches("**/*.rs", "main.rs"));
        assert!(matches("*.rs", "main.rs"));
        assert!(!matches("*.rs", "src/main.rs"));
        assert!(matches("src/*.toml", "src/a.toml"));
        assert!(!matches("src/*.toml", "src/x/a.toml"));
        assert!(matches("./src/**/*.{ts,tsx}", "src/a/b.tsx"));
    }

    #[test]
    fn invalid_patterns_are_reported() {
        let err = matcher("src/[a").unwrap_err();
        assert!(err.starts_with("Invalid glob pattern: "), "{err}");
        assert!(err.contains("src/[a"), "{err}");
    }

    #[test]
    fn results_are_newest_first_and_capped() {
        assert_eq!(format_results(Vec::new()), "No files found");
        let t = |s| UNIX_EPOCH + Duration::from_secs(s);
        let out = format_results(vec![(PathBuf::from("/old"), t(1)), (PathBuf::from("/new"), t(2))]);
        assert_eq!(out, "/new\n/old");
        let many = (0..150).map(|i| (PathBuf::from(format!("/f{i:03}")), t(i))).collect();
        let out = format_results(many);
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(lines.len(), MAX_RESULTS + 1);
        assert_eq!(lines[0], "/f149");
        assert_eq!(lines[MAX_RESULTS], TRUNCATED);
    }
}
