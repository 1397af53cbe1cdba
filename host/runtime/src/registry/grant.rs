//! What a tool gets: the operator's grant (its `[tools.NAME] grant`, or the runtime's default)
//! intersected with the tool's own ceiling, made read-only for a read-only tool, its
//! directories opened and pinned, refused where it would reach toolhost's own files, and the
//! warnings an operator should see (`list`, `list --json`). A function of its inputs: it reads
//! nothing of the runtime, so every rule of it can be read in one place.

use super::GrantFrom;
use crate::error::{GrantError, LoadError};
use crate::loading::cache::{Cache, grant_overlap};
use crate::loading::loader::ToolInfo;
use crate::sandbox::fsguard::Preopen;
use crate::sandbox::pinning::pin_dirs;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use toolhost_policy::{
    Config, DirGrant, EffectiveGrant, Grant, PathPolicy, Rule, SubjectKind, effective_grant, grant_excess,
};

/// Everything a tool's grant depends on.
pub(crate) struct GrantInputs<'a> {
    /// What the tool declared (its ceiling, read-only promise, permission subject).
    pub info: &'a ToolInfo,
    pub config: &'a Config,
    /// The grant of a tool the config does not grant anything.
    pub default_grant: &'a Grant,
    pub workspace: &'a Path,
    /// Directories besides the workspace that count as inside it.
    pub working_dirs: &'a [PathBuf],
    pub cache: Option<&'a Cache>,
    /// toolhost's private state directory (no grant may reach it).
    pub state_dir: Option<&'a Path>,
    /// The runtime's deny rules (those naming this tool become its own file rules).
    pub deny_rules: &'a [Rule],
    /// Whether the runtime's shared file policy refuses some reads.
    pub shared_refuses_reads: bool,
    /// What the config's hooks run (a grant that may write there is warned about).
    pub hook_paths: &'a [PathBuf],
    /// The grant of the policy file beside the component (`NAME.policy.yaml`), if it has one.
    pub policy_file: Option<&'a Grant>,
}

/// A tool's resolved grant.
pub(crate) struct ToolGrant {
    /// The operator's grant, before the ceiling.
    pub grant: Grant,
    pub from: GrantFrom,
    /// Ceiling ∩ grant (read-only for a read-only tool), directories that exist only.
    pub effective: EffectiveGrant,
    /// The effective directories, opened and pinned.
    pub preopens: Vec<Preopen>,
    /// The deny rules naming the tool itself, as file rules (when its subject is a path).
    pub own_policy: Option<Arc<PathPolicy>>,
    /// Whether reads can be refused for this tool.
    pub check_reads: bool,
    /// Whether everything granted lies inside the workspace.
    pub inside_workspace: bool,
    /// What the grant allows that the operator may not have meant, one line each.
    pub warnings: Vec<String>,
}

/// Resolve the grant of the tool `info` describes.
///
/// # Errors
///
/// [`LoadError::Config`] for an explicit grant with a bad pattern or beyond the ceiling (a
/// config mistake, not something to trim silently: the operator believes the tool has what
/// it cannot get); [`LoadError::Grant`] for a grant whose directories cannot be pinned or that
/// reaches the compile cache or toolhost's private state.
pub(crate) fn resolve_grant(i: &GrantInputs<'_>) -> Result<ToolGrant, LoadError> {
    let info = i.info;
    let name = info.name.as_str();
    let config_error = |e: toolhost_policy::ConfigError| LoadError::Config(Arc::new(e));
    let grant_error = |cause: GrantError| LoadError::Grant { name: name.to_string(), cause: Box::new(cause) };
    let tool_config = i.config.tools.get(name);
    let explicit = tool_config.and_then(|t| t.grant());
    if let Some(grant) = explicit {
        if let Some(message) = grant.pattern_errors().first() {
            return Err(config_error(i.config.tool_error(name, &format!("grant.{message}"))));
        }
        let excess = grant_excess(&info.capabilities, grant, i.workspace);
        if info.kind.describes_itself() && !excess.is_empty() {
            return Err(config_error(i.config.grant_error(name, &excess)));
        }
    }
    // A toolhost tool declares its ceiling; the other kinds have none, so the grant is all
    // they get, and without one they get nothing (never the default grant, which assumes a
    // ceiling narrows it).
    let has_ceiling = info.kind.describes_itself();
    let (grant, from) = match (explicit, i.policy_file) {
        (Some(grant), _) => (grant.clone(), GrantFrom::Config),
        (None, Some(grant)) => (grant.clone(), GrantFrom::PolicyFile),
        (None, None) if has_ceiling => (i.default_grant.clone(), GrantFrom::Default),
        (None, None) => (Grant::none(), GrantFrom::Nothing),
    };
    if let Some(grant) = i.policy_file.filter(|_| from == GrantFrom::PolicyFile)
        && let Some(message) = grant.pattern_errors().first()
    {
        return Err(config_error(i.config.tool_error(name, &format!("policy file: {message}"))));
    }
    let ceiling = if has_ceiling { info.capabilities.clone() } else { grant.capabilities(i.workspace) };
    let mut effective = effective_grant(&ceiling, &grant, i.workspace);
    effective.allow_private_network = tool_config.is_some_and(|t| t.allow_private_network);
    if info.read_only {
        effective = effective.read_only();
    }
    // A granted directory that does not exist cannot be opened: it is not granted, and the
    // tool's warnings say so (`list`, `list --json`), not only a log line.
    let mut missing = Vec::new();
    effective.dirs.retain(|d| {
        let ok = d.path.is_dir();
        if !ok {
            // A file is not widened to its directory: a grant opens directories only.
            let why = if d.path.exists() { "is not a directory" } else { "does not exist" };
            tracing::warn!("tool {name}: granted directory {} {why}; not granted", d.path.display());
            missing.push(format!("the granted directory {} {why}: not granted", d.path.display()));
        }
        ok
    });
    let preopens = pin_dirs(&effective.dirs, &grant, &ceiling, i.workspace).map_err(grant_error)?;
    let real_dirs: Vec<DirGrant> =
        preopens.iter().map(|p| DirGrant { path: p.host.clone(), writable: p.writable }).collect();
    if let Some(cause) = i.cache.and_then(|c| c.grant_overlap(&effective.dirs).or_else(|| c.grant_overlap(&real_dirs)))
    {
        return Err(grant_error(cause));
    }
    if let Some(cause) = i.state_dir.and_then(|dir| {
        let (what, fix) = (
            "toolhost's private state (the pins that decide which config and hook files run unasked)",
            "set TOOLHOST_STATE_DIR to a directory outside every grant, or narrow the grant",
        );
        grant_overlap(dir, what, fix, &effective.dirs).or_else(|| grant_overlap(dir, what, fix, &real_dirs))
    }) {
        return Err(grant_error(cause));
    }
    let own_policy = own_policy(i);
    // Claude Code's additional directories count as inside, as they do for a path.
    let inside_workspace = effective.net.is_empty()
        && effective
            .dirs
            .iter()
            .all(|d| d.path.starts_with(i.workspace) || i.working_dirs.iter().any(|w| d.path.starts_with(w)));
    let mut warnings = toolhost_policy::grant_warnings(&effective, i.workspace);
    warnings.extend(missing);
    warnings.extend(i.hook_paths.iter().filter_map(|s| toolhost_policy::hook_script_warning(&effective, s)));
    Ok(ToolGrant {
        grant,
        from,
        effective,
        preopens,
        check_reads: own_policy.is_some() || i.shared_refuses_reads,
        own_policy,
        inside_workspace,
        warnings,
    })
}

/// The deny rules that name the tool itself, as file rules, when its permission subject is a
/// path (the file families' rules are in the runtime's shared policy already).
fn own_policy(i: &GrantInputs<'_>) -> Option<Arc<PathPolicy>> {
    let name = i.info.name.as_str();
    let subject_is_path =
        i.info.permission_subject.as_deref().is_some_and(|p| matches!(SubjectKind::infer(p, ""), SubjectKind::Path));
    let own_rules: Vec<Rule> =
        i.deny_rules.iter().filter(|r| r.names(name) && r.pattern.is_some() && r.family().is_none()).cloned().collect();
    (!own_rules.is_empty() && subject_is_path).then(|| {
        let mut p = PathPolicy::new(i.workspace);
        p.deny_rules(&own_rules, name, true);
        Arc::new(p)
    })
}
