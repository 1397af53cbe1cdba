//! Operator grants and their intersection with a tool's ceiling.

use crate::{Capability, path::resolve};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// What the operator allows one tool (the `grant = {…}` table of `[tools.NAME]`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Grant {
    /// Directories the tool may read (path forms as in [`Capability::FsRead`]).
    pub fs_read: Vec<String>,
    /// Directories the tool may read and write.
    pub fs_write: Vec<String>,
    /// Network host patterns.
    pub net: Vec<String>,
    /// Environment variable names.
    pub env: Vec<String>,
}

impl Grant {
    /// The default grant: read and write the workspace, nothing else.
    pub fn workspace_read_write() -> Self {
        Grant { fs_write: vec![".".into()], ..Grant::default() }
    }

    /// A grant of nothing at all.
    pub fn none() -> Self {
        Grant::default()
    }
}

/// One directory a tool may reach, at its real absolute host path.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DirGrant {
    /// Absolute, normalised host path.
    pub path: PathBuf,
    /// Whether writes are allowed (otherwise read-only).
    pub writable: bool,
}

/// The capabilities one tool actually gets: ceiling ∩ grant.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct EffectiveGrant {
    /// Directories, deduplicated; a path listed twice keeps the stronger permission.
    pub dirs: Vec<DirGrant>,
    /// Environment variable names (`*` = any variable the host was given).
    pub env: Vec<String>,
    /// Network host patterns.
    pub net: Vec<String>,
}

impl EffectiveGrant {
    /// The same grant with every directory read-only.
    pub fn read_only(&self) -> Self {
        let mut g = self.clone();
        for d in &mut g.dirs {
            d.writable = false;
        }
        g
    }

    /// The grant as capabilities, for display.
    pub fn capabilities(&self) -> Vec<Capability> {
        let mut caps: Vec<Capability> = self
            .dirs
            .iter()
            .map(|d| {
                let p = d.path.display().to_string();
                if d.writable { Capability::FsWrite(p) } else { Capability::FsRead(p) }
            })
            .collect();
        caps.extend(self.net.iter().cloned().map(Capability::Net));
        caps.extend(self.env.iter().cloned().map(Capability::Env));
        caps
    }
}

/// Intersect a tool's ceiling with the operator's grant. Relative paths on either side are
/// relative to `workspace`.
///
/// Directories intersect as trees: granting `/` to a tool whose ceiling is `.` yields the
/// workspace; granting the workspace to a tool whose ceiling is `/` yields the workspace; two
/// unrelated trees yield nothing. A directory is writable only if both sides allow writes.
pub fn effective_grant(ceiling: &[Capability], grant: &Grant, workspace: &Path) -> EffectiveGrant {
    let ceiling_dirs: Vec<(PathBuf, bool)> = ceiling
        .iter()
        .filter_map(|c| match c {
            Capability::FsRead(p) => Some((resolve(p, workspace), false)),
            Capability::FsWrite(p) => Some((resolve(p, workspace), true)),
            _ => None,
        })
        .collect();
    let grant_dirs = grant
        .fs_read
        .iter()
        .map(|p| (resolve(p, workspace), false))
        .chain(grant.fs_write.iter().map(|p| (resolve(p, workspace), true)));

    let mut dirs: Vec<DirGrant> = Vec::new();
    for (g, g_write) in grant_dirs {
        for (c, c_write) in &ceiling_dirs {
            let Some(path) = tree_intersection(&g, c) else { continue };
            let writable = g_write && *c_write;
            match dirs.iter_mut().find(|d| d.path == path) {
                Some(d) => d.writable |= writable,
                None => dirs.push(DirGrant { path, writable }),
            }
        }
    }

    let ceiling_env: Vec<&str> = names(ceiling, |c| match c {
        Capability::Env(n) => Some(n),
        _ => None,
    });
    let env = intersect_names(&ceiling_env, &grant.env, |c, g| c == "*" || c == g);

    let ceiling_net: Vec<&str> = names(ceiling, |c| match c {
        Capability::Net(n) => Some(n),
        _ => None,
    });
    let net = intersect_names(&ceiling_net, &grant.net, host_pattern_covers);

    EffectiveGrant { dirs, env, net }
}

fn names<'a>(caps: &'a [Capability], pick: impl Fn(&'a Capability) -> Option<&'a String>) -> Vec<&'a str> {
    caps.iter().filter_map(pick).map(String::as_str).collect()
}

/// Names both sides agree on. A grant of `*` yields the ceiling's own names.
fn intersect_names(ceiling: &[&str], grant: &[String], covers: impl Fn(&str, &str) -> bool) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut push = |s: &str| {
        if !out.iter().any(|o| o == s) {
            out.push(s.to_string());
        }
    };
    for g in grant {
        if g == "*" {
            ceiling.iter().for_each(|c| push(c));
        } else if ceiling.iter().any(|c| covers(c, g)) {
            push(g);
        }
    }
    out
}

/// Whether the ceiling host pattern `c` admits everything the grant pattern `g` names.
fn host_pattern_covers(c: &str, g: &str) -> bool {
    if c == "*" || c == g {
        return true;
    }
    match c.strip_prefix("*.") {
        Some(suffix) => {
            let g_host = g.strip_prefix("*.").unwrap_or(g);
            g_host.ends_with(&format!(".{suffix}"))
        }
        None => false,
    }
}

/// The deeper of two directory trees if one contains the other.
fn tree_intersection(a: &Path, b: &Path) -> Option<PathBuf> {
    if a.starts_with(b) {
        Some(a.to_path_buf())
    } else if b.starts_with(a) {
        Some(b.to_path_buf())
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ws() -> &'static Path {
        Path::new("/w")
    }

    #[test]
    fn dirs_intersect_as_trees() {
        /// (ceiling, grant, expected directories with their writability)
        type Case<'a> = (&'a [Capability], Grant, &'a [(&'a str, bool)]);
        let cases: &[Case] = &[
            (&[Capability::FsRead("/".into())], Grant::workspace_read_write(), &[("/w", false)]),
            (&[Capability::FsWrite("/".into())], Grant::workspace_read_write(), &[("/w", true)]),
            (
                &[Capability::FsWrite(".".into())],
                Grant { fs_read: vec!["/".into()], ..Grant::none() },
                &[("/w", false)],
            ),
            (&[Capability::FsWrite("src".into())], Grant::workspace_read_write(), &[("/w/src", true)]),
            (&[Capability::FsWrite("/tmp".into())], Grant::workspace_read_write(), &[]),
            (&[], Grant::workspace_read_write(), &[]),
            (&[Capability::FsRead("/".into())], Grant::none(), &[]),
        ];
        for (ceiling, grant, want) in cases {
            let got = effective_grant(ceiling, grant, ws());
            let got: Vec<(String, bool)> =
                got.dirs.iter().map(|d| (d.path.display().to_string(), d.writable)).collect();
            let want: Vec<(String, bool)> = want.iter().map(|(p, w)| (p.to_string(), *w)).collect();
            assert_eq!(got, want, "ceiling {ceiling:?} grant {grant:?}");
        }
    }

    #[test]
    fn env_and_net_need_both_sides() {
        let ceiling = [Capability::Env("HOME".into()), Capability::Net("*.github.com".into())];
        let grant = Grant {
            env: vec!["HOME".into(), "SECRET".into()],
            net: vec!["api.github.com".into(), "evil.com".into()],
            ..Grant::none()
        };
        let eff = effective_grant(&ceiling, &grant, ws());
        assert_eq!(eff.env, vec!["HOME".to_string()]);
        assert_eq!(eff.net, vec!["api.github.com".to_string()]);
        let star = effective_grant(&ceiling, &Grant { env: vec!["*".into()], ..Grant::none() }, ws());
        assert_eq!(star.env, vec!["HOME".to_string()]);
    }

    #[test]
    fn host_patterns() {
        assert!(host_pattern_covers("*", "a.b"));
        assert!(host_pattern_covers("*.b.com", "a.b.com"));
        assert!(host_pattern_covers("*.b.com", "*.x.b.com"));
        assert!(!host_pattern_covers("*.b.com", "b.com"));
        assert!(!host_pattern_covers("*.b.com", "ab.com"));
        assert!(!host_pattern_covers("a.com", "b.com"));
    }
}
