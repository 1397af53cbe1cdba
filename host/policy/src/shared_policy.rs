//! The file-system rules every tool of a runtime shares, built from the config and the paths
//! the host itself depends on. Plain data, like the rest of this crate: the runtime gives the
//! paths, this module decides what each of them means.

use crate::config::Config;
use crate::fs::{DEFAULT_ASK_BEFORE_WRITING, PathPolicy};
use crate::hook_command::{HookError, HookProtection, hook_protected_paths, hook_protection};
use crate::path_pattern::PathPatternError;
use crate::permission::Rules;
use std::path::{Path, PathBuf};

/// The paths of one runtime that no tool may change.
#[derive(Debug, Clone, Copy)]
pub struct HostPaths<'a> {
    /// The workspace (canonical).
    pub workspace: &'a Path,
    /// Where results too large for the model are saved: its `.toolhost` parent, when it has
    /// one, is protected whole.
    pub results_dir: &'a Path,
    /// The compile cache, when there is one.
    pub cache_dir: Option<&'a Path>,
    /// What `~` and `$HOME` mean in hook commands (this process's `HOME`: hooks inherit it).
    pub home: Option<&'a Path>,
    /// More paths to protect, each with what it is (workspace-relative unless absolute).
    pub protected: &'a [(PathBuf, String)],
}

/// Why the shared rules cannot be built.
#[derive(Debug, thiserror::Error)]
pub enum SharedPolicyError {
    /// What a hook runs cannot be protected from tools (see [`hook_protected_paths`]).
    #[error(transparent)]
    Hook(#[from] HookError),
    /// A pattern of files other programs run does not compile.
    #[error("{setting}: the pattern does not compile")]
    Pattern {
        /// Which setting (`permissions.protected`, or the built-in list).
        setting: &'static str,
        /// The pattern's error.
        #[source]
        error: PathPatternError,
    },
}

/// The paths to protect so that no tool changes what a hook (or a stdio MCP server) runs: the
/// directories of the files each command runs, or the files its `files` key lists (see
/// [`hook_protected_paths`]).
pub fn hook_paths(config: &Config, workspace: &Path, home: Option<&Path>) -> Result<Vec<PathBuf>, HookError> {
    let mut paths = Vec::new();
    for (_, hook) in config.host_programs() {
        paths.extend(hook_protected_paths(&hook, workspace, home)?);
    }
    Ok(paths)
}

/// The rules every tool of a runtime shares: what the host itself depends on (`.toolhost/` or
/// the results directory, the compile cache, hook scripts, `[tls] ca_files`, what the embedder
/// protects), the files other programs run (asked before writing, in every mode), and the path
/// deny rules of the file families (`Read`, `Edit`, `Write`: see [`crate::FileFamily`]).
pub fn shared_policy(config: &Config, rules: &Rules, paths: &HostPaths<'_>) -> Result<PathPolicy, SharedPolicyError> {
    let workspace = paths.workspace;
    let mut policy = PathPolicy::new(workspace);
    let state_dir = match paths.results_dir.parent() {
        Some(parent) if parent.file_name().is_some_and(|n| n == ".toolhost") => parent.to_path_buf(),
        _ => paths.results_dir.to_path_buf(),
    };
    policy.protect(state_dir, "toolhost's own state (saved results)", false);
    if let Some(cache) = paths.cache_dir {
        // Not hidden from reads: no grant may reach it at all (refused at load), and hiding
        // would make every read of every call pay for a check.
        policy.protect(cache.to_path_buf(), "toolhost's compile cache", false);
    }
    for (_, hook) in config.host_programs() {
        let HookProtection { paths, ask } = hook_protection(&hook, workspace, paths.home)?;
        for path in paths {
            policy.protect(path, "code a hook or an MCP server runs or loads (they run unsandboxed)", false);
        }
        for a in ask {
            policy
                .ask_before_writing_as(&a.pattern, format!("{} ({})", a.pattern, a.why))
                .map_err(|error| SharedPolicyError::Pattern { setting: "what a hook or an MCP server loads", error })?;
        }
    }
    for file in config.tls.ca_files() {
        policy.protect(real_or_as_is(&file), "a certificate authority the tools' HTTPS trusts", false);
    }
    for (path, what) in paths.protected {
        let path = if path.is_absolute() { path.clone() } else { workspace.join(path) };
        policy.protect(real_or_as_is(&path), what.clone(), false);
    }
    // The defaults mean the same file in every directory (a grant of `~` reaches
    // `~/.bashrc`); the operator's own patterns are workspace-relative unless absolute.
    policy
        .ask_before_writing_anywhere(DEFAULT_ASK_BEFORE_WRITING)
        .map_err(|error| SharedPolicyError::Pattern { setting: "the default ask-before-writing patterns", error })?;
    policy
        .ask_before_writing(&config.permissions.protected())
        .map_err(|error| SharedPolicyError::Pattern { setting: "permissions.protected", error })?;
    let file_rules: Vec<_> =
        rules.deny.iter().filter(|r| r.family().is_some() && r.pattern.is_some()).cloned().collect();
    policy.deny_rules(&file_rules, "", false);
    Ok(policy)
}

/// A path's real path when it exists (links resolved), else the path itself.
pub fn real_or_as_is(path: &Path) -> PathBuf {
    path.canonicalize().unwrap_or_else(|_| path.to_path_buf())
}
