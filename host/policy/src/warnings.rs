//! Grants that are allowed but probably broader than the operator meant: each with a one-line
//! reason, for `toolhost config check` and `toolhost list`. Nothing here refuses anything.

use crate::grant::EffectiveGrant;
use std::path::Path;

/// One line per broad part of `grant` (as a tool gets it, after its ceiling), saying what it
/// lets the tool do and what to grant instead.
pub fn grant_warnings(grant: &EffectiveGrant, workspace: &Path) -> Vec<String> {
    let mut warnings = Vec::new();
    if grant.env.iter().any(|e| e == "*") {
        warnings.push(
            "env = [\"*\"]: it gets every environment variable toolhost was given, tokens and keys included; \
             name the variables it needs"
                .to_string(),
        );
    }
    if grant.net.iter().any(|n| n == "*") {
        warnings.push(
            "net = [\"*\"]: it may connect to any host on the internet and send there whatever it can read; \
             name the hosts it needs"
                .to_string(),
        );
    }
    if grant.allow_private_network && !grant.net.is_empty() {
        warnings.push(
            "allow_private_network = true: its network grant reaches this machine's services, the local \
             network and cloud metadata addresses too"
                .to_string(),
        );
    }
    for dir in grant.dirs.iter().filter(|d| d.writable && !d.path.starts_with(workspace)) {
        warnings.push(format!(
            "fs_write {}: outside the workspace ({}); it may change files no review of the workspace shows",
            dir.path.display(),
            workspace.display()
        ));
    }
    warnings
}

/// A line when `script` (a file a hook runs, unsandboxed, or its directory) lies inside a
/// directory `grant` lets the tool write. The sandbox refuses writes to what hooks run, but a
/// script inside a writable tree is one mistake away from running what a tool wrote.
pub fn hook_script_warning(grant: &EffectiveGrant, script: &Path) -> Option<String> {
    let dir = grant.dirs.iter().find(|d| d.writable && script.starts_with(&d.path))?;
    Some(format!(
        "hook script {} lies inside {}, which it may write: toolhost refuses writes to what hooks run, but keep \
         hook scripts outside writable grants",
        script.display(),
        dir.path.display()
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::grant::DirGrant;
    use std::path::PathBuf;

    fn grant(env: &[&str], net: &[&str], dirs: &[(&str, bool)]) -> EffectiveGrant {
        EffectiveGrant {
            env: env.iter().map(ToString::to_string).collect(),
            net: net.iter().map(ToString::to_string).collect(),
            dirs: dirs.iter().map(|(p, w)| DirGrant { path: PathBuf::from(p), writable: *w }).collect(),
            ..EffectiveGrant::default()
        }
    }

    #[test]
    fn broad_grants_are_named_and_narrow_ones_are_not() {
        let ws = Path::new("/ws");
        assert!(grant_warnings(&grant(&["GITHUB_TOKEN"], &["api.github.com"], &[("/ws", true)]), ws).is_empty());
        let w = grant_warnings(&grant(&["*"], &["*"], &[("/ws", true), ("/etc", true), ("/usr", false)]), ws);
        assert_eq!(w.len(), 3, "{w:?}");
        assert!(w[0].starts_with("env = [\"*\"]") && w[1].starts_with("net = [\"*\"]"), "{w:?}");
        assert!(w[2].contains("/etc") && !w.iter().any(|l| l.contains("/usr")), "{w:?}");
    }

    #[test]
    fn private_network_access_is_named_only_with_a_network_grant() {
        let ws = Path::new("/ws");
        let mut g = grant(&[], &["api.example.com"], &[]);
        g.allow_private_network = true;
        let w = grant_warnings(&g, ws);
        assert!(w.len() == 1 && w[0].starts_with("allow_private_network"), "{w:?}");
        g.net.clear();
        assert!(grant_warnings(&g, ws).is_empty(), "no network, nothing to reach");
    }

    #[test]
    fn a_hook_script_inside_a_writable_grant_is_named() {
        let g = grant(&[], &[], &[("/ws", true), ("/ro", false)]);
        assert!(hook_script_warning(&g, Path::new("/ws/hooks/check.sh")).unwrap().contains("/ws/hooks/check.sh"));
        assert_eq!(hook_script_warning(&g, Path::new("/ro/check.sh")), None);
        assert_eq!(hook_script_warning(&g, Path::new("/elsewhere/check.sh")), None);
    }
}
