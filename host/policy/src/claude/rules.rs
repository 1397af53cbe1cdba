//! Claude Code's permission rules as toolhost's: the path forms of a settings file rooted where
//! Claude Code roots them, and the rules of tools toolhost has no counterpart of kept aside.

use super::SettingsSource;
use crate::permission::{Rule, RuleError};
use std::path::Path;

/// Claude Code's tools that toolhost does not have: rules for them are listed once as ignored,
/// never an error, whatever their pattern (a `Bash(...)` pattern is a command line, not a glob).
/// A loaded tool of the same name is still bound by them: they are kept as text patterns.
pub const CLAUDE_CODE_ONLY_TOOLS: &[&str] = &[
    "Bash",
    "BashOutput",
    "KillShell",
    "KillBash",
    "Task",
    "Agent",
    "TaskOutput",
    "TaskStop",
    "TodoWrite",
    "TodoRead",
    "WebSearch",
    "NotebookEdit",
    "NotebookRead",
    "ExitPlanMode",
    "EnterPlanMode",
    "SlashCommand",
    "Skill",
    "LSP",
    "ListMcpResourcesTool",
    "ReadMcpResourceTool",
    "AskUserQuestion",
];

/// What the rule text names, once the path forms of its source are resolved.
pub(super) struct Translated {
    /// The rule in toolhost's form.
    pub rule: Rule,
    /// The tool is one of [`CLAUDE_CODE_ONLY_TOOLS`].
    pub foreign: bool,
}

/// Read a rule of a settings file of `source`, whose roots are `root` (where `/x` starts) and
/// `home` (where `~/x` starts).
///
/// As Claude Code roots them (`utils/permissions/filesystem.ts`, `patternWithRoot`):
/// - `//x`: the absolute path `/x`;
/// - `~/x`: `x` in the home directory;
/// - `/x`: `x` under the settings root of the file (the project for project and local
///   settings, the directory of a `--settings` file, `~/.claude` for user settings);
/// - `./x` and `x`: relative to the workspace, gitignore-style (`x` at any depth).
///
/// Only patterns of tools that take paths are rooted: `WebFetch(domain:…)`, MCP tools and
/// Claude Code's own tools keep their text.
pub(super) fn translate(
    text: &str,
    source: SettingsSource,
    root: &Path,
    workspace: &Path,
    home: Option<&Path>,
) -> Result<Translated, RuleError> {
    let trimmed = text.trim();
    let tool_name = trimmed.split('(').next().unwrap_or_default().trim();
    let foreign = CLAUDE_CODE_ONLY_TOOLS.contains(&tool_name);
    if foreign {
        return Ok(Translated { rule: Rule::text_only(trimmed)?, foreign });
    }
    let rule: Rule = trimmed.parse()?;
    let Some(pattern) = &rule.pattern else { return Ok(Translated { rule, foreign }) };
    let p = pattern.as_str();
    if pattern.path().is_none() || rule.tool == "WebFetch" || rule.tool.starts_with("mcp__") {
        return Ok(Translated { rule, foreign });
    }
    let rooted = if p.starts_with("//") {
        None
    } else if let Some(rest) = p.strip_prefix("~/").or_else(|| (p == "~").then_some("")) {
        let Some(home) = home else {
            return Err(RuleError {
                rule: text.to_string(),
                reason: "`~/` names the home directory, and HOME is not set".to_string(),
            });
        };
        Some(absolute(home, rest))
    } else if let Some(rest) = p.strip_prefix('/') {
        // Rooted at the workspace already means what toolhost's `/x` means there.
        if root == workspace { None } else { Some(absolute(root, rest)) }
    } else {
        None
    };
    let _ = source;
    match rooted {
        None => Ok(Translated { rule, foreign }),
        Some(pattern) => {
            let rule = format!("{}({pattern})", rule.tool).parse()?;
            Ok(Translated { rule, foreign })
        }
    }
}

/// `//DIR/rest`: the pattern `rest` under the absolute directory `dir`, whose own glob
/// characters are escaped (a home directory is a literal path).
fn absolute(dir: &Path, rest: &str) -> String {
    let mut out = String::from("/");
    for c in dir.display().to_string().chars() {
        if matches!(c, '*' | '?' | '[' | ']' | '{' | '}' | '\\') {
            out.push('\\');
        }
        out.push(c);
    }
    let out = out.trim_end_matches('/').to_string();
    if rest.is_empty() { out } else { format!("{out}/{rest}") }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    fn tr(text: &str, source: SettingsSource, root: &str) -> String {
        let t = translate(text, source, Path::new(root), Path::new("/w"), Some(Path::new("/home/u"))).unwrap();
        t.rule.to_string()
    }

    #[test]
    fn path_forms_are_rooted_as_claude_code_roots_them() {
        let p = SettingsSource::Project;
        assert_eq!(tr("Read(//etc/passwd)", p, "/w"), "Read(//etc/passwd)");
        assert_eq!(tr("Read(~/x.txt)", p, "/w"), "Read(//home/u/x.txt)");
        assert_eq!(tr("Read(~)", p, "/w"), "Read(//home/u)");
        assert_eq!(tr("Read(/src/**)", p, "/w"), "Read(/src/**)");
        assert_eq!(tr("Read(/x.txt)", SettingsSource::User, "/home/u/.claude"), "Read(//home/u/.claude/x.txt)");
        assert_eq!(tr("Edit(./a/b)", p, "/w"), "Edit(./a/b)");
        assert_eq!(tr("Edit(*.env)", p, "/w"), "Edit(*.env)");
        assert_eq!(tr("WebFetch(domain:example.com)", p, "/w"), "WebFetch(domain:example.com)");
        assert_eq!(tr("Read", p, "/w"), "Read");
    }

    #[test]
    fn a_home_with_glob_characters_is_a_literal_path() {
        let t =
            translate("Read(~/x)", SettingsSource::User, Path::new("/r"), Path::new("/w"), Some(Path::new("/h[1]")))
                .unwrap();
        let pattern = t.rule.pattern.unwrap();
        assert!(pattern.path().unwrap().matches(&PathBuf::from("/h[1]/x"), Path::new("/w")));
        assert!(!pattern.path().unwrap().matches(&PathBuf::from("/h1/x"), Path::new("/w")));
    }

    #[test]
    fn claude_code_only_tools_are_kept_as_text_whatever_their_pattern() {
        let t = translate("Bash(echo [)", SettingsSource::Project, Path::new("/w"), Path::new("/w"), None).unwrap();
        assert!(t.foreign);
        assert_eq!(t.rule.to_string(), "Bash(echo [)");
        let t =
            translate("Bash(npm run test:*)", SettingsSource::Project, Path::new("/w"), Path::new("/w"), None).unwrap();
        assert!(t.rule.matches("Bash", Some(("npm run test --watch", crate::SubjectKind::Text)), Path::new("/w")));
        assert!(translate("Bash(unclosed", SettingsSource::Project, Path::new("/w"), Path::new("/w"), None).is_err());
    }
}
