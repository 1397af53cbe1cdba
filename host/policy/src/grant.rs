//! Operator grants and their intersection with a tool's ceiling.

use crate::{Capability, NetPattern, path::resolve};
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

    /// The default grant with more directories read and written as the workspace is (Claude
    /// Code's `additionalDirectories`).
    pub fn workspace_and(dirs: &[PathBuf]) -> Self {
        let mut grant = Grant::workspace_read_write();
        grant.fs_write.extend(dirs.iter().map(|d| d.display().to_string()));
        grant
    }

    /// What in the grant does not parse, one message per bad entry, each starting with its
    /// key (`net[1]: invalid network pattern "a b": …`). Such an entry grants nothing; a config
    /// holding one does not load.
    pub fn pattern_errors(&self) -> Vec<String> {
        self.net
            .iter()
            .enumerate()
            .filter_map(|(i, p)| p.parse::<NetPattern>().err().map(|e| format!("net[{i}]: {e}")))
            .collect()
    }

    /// A grant of nothing at all.
    pub fn none() -> Self {
        Grant::default()
    }

    /// The grant as capabilities, for display, with relative paths resolved against
    /// `workspace` (so that it compares with [`EffectiveGrant::capabilities`]).
    pub fn capabilities(&self, workspace: &Path) -> Vec<Capability> {
        let dir = |p: &String| resolve(p, workspace).display().to_string();
        let mut caps: Vec<Capability> = self.fs_read.iter().map(|p| Capability::FsRead(dir(p))).collect();
        caps.extend(self.fs_write.iter().map(|p| Capability::FsWrite(dir(p))));
        caps.extend(self.net.iter().cloned().map(Capability::Net));
        caps.extend(self.env.iter().cloned().map(Capability::Env));
        caps
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
    /// Whether a name or `*` in [`net`](Self::net) may reach loopback, private, link-local and
    /// other non-public addresses ([`crate::IpRange`]); without it only a pattern naming such
    /// an address literally, or `localhost` by name, reaches one (see [`crate::check_address`]).
    /// From `[tools.NAME] allow_private_network`, not from the ceiling: a tool cannot ask for
    /// it, only the operator can give it.
    pub allow_private_network: bool,
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

/// The directories of a ceiling, resolved against `workspace`, with whether each is writable.
fn ceiling_dirs(ceiling: &[Capability], workspace: &Path) -> Vec<(PathBuf, bool)> {
    ceiling
        .iter()
        .filter_map(|c| match c {
            Capability::FsRead(p) => Some((resolve(p, workspace), false)),
            Capability::FsWrite(p) => Some((resolve(p, workspace), true)),
            _ => None,
        })
        .collect()
}

/// Intersect a tool's ceiling with the operator's grant. Relative paths on either side are
/// relative to `workspace`.
///
/// Directories intersect as trees: granting `/` to a tool whose ceiling is `.` yields the
/// workspace; granting the workspace to a tool whose ceiling is `/` yields the workspace; two
/// unrelated trees yield nothing. A directory is writable only if both sides allow writes.
/// `allow_private_network` is left off: it is the tool's config key, not part of the grant
/// table, and the caller sets it.
pub fn effective_grant(ceiling: &[Capability], grant: &Grant, workspace: &Path) -> EffectiveGrant {
    let ceiling_dirs = ceiling_dirs(ceiling, workspace);
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

    EffectiveGrant { dirs, env, net, allow_private_network: false }
}

/// The entries of `grant` that `ceiling` does not cover, one message each, in the grant's order
/// (`fs_write "." (/w): the ceiling allows only fs_read of /`). Relative paths on either side
/// are relative to `workspace`.
///
/// Such entries are no error at run time: [`effective_grant`] narrows them to what the ceiling
/// allows, or drops them. But an operator who wrote them expected more than the tool will get.
/// The rules follow [`effective_grant`]:
/// - a directory is covered if it lies inside a ceiling directory, and for `fs_write` only inside
///   one the ceiling may write (granting `/` to a tool whose ceiling is `.` is beyond it, even
///   though the tool gets the workspace);
/// - a host pattern is covered by an equal or wider ceiling pattern (`*`, `*.example.com`);
/// - a variable is covered by the same name or `*` in the ceiling;
/// - a grant of `*` means "whatever the ceiling asks for", so it is beyond the ceiling only if
///   the ceiling asks for nothing of that kind.
///
/// # Examples
///
/// ```
/// use std::path::Path;
/// use toolhost_policy::{grant_excess, Capability, Grant};
///
/// let ceiling = [Capability::FsRead("/".into())];
/// let excess = grant_excess(&ceiling, &Grant::workspace_read_write(), Path::new("/w"));
/// assert_eq!(excess, [r#"fs_write "." (/w): the ceiling allows only fs_read of /"#]);
/// ```
pub fn grant_excess(ceiling: &[Capability], grant: &Grant, workspace: &Path) -> Vec<String> {
    let ceiling_dirs = ceiling_dirs(ceiling, workspace);
    let dirs_allowed = if ceiling_dirs.is_empty() {
        "the ceiling allows no file access".to_string()
    } else {
        let each =
            ceiling_dirs.iter().map(|(p, w)| format!("{} of {}", if *w { "fs_write" } else { "fs_read" }, p.display()));
        format!("the ceiling allows only {}", each.collect::<Vec<_>>().join(", "))
    };
    let mut excess = Vec::new();
    for (kind, paths, write) in [("fs_read", &grant.fs_read, false), ("fs_write", &grant.fs_write, true)] {
        for p in paths {
            let resolved = resolve(p, workspace);
            if !ceiling_dirs.iter().any(|(c, c_write)| resolved.starts_with(c) && (*c_write || !write)) {
                let shown =
                    if Path::new(p) == resolved { format!("{p:?}") } else { format!("{p:?} ({})", resolved.display()) };
                excess.push(format!("{kind} {shown}: {dirs_allowed}"));
            }
        }
    }

    let ceiling_net: Vec<&str> = names(ceiling, |c| match c {
        Capability::Net(n) => Some(n),
        _ => None,
    });
    // A pattern that does not parse is not "beyond the ceiling": [`Grant::pattern_errors`]
    // reports it as malformed.
    let net_ok: Vec<String> = grant.net.iter().filter(|g| g.parse::<NetPattern>().is_ok()).cloned().collect();
    names_excess(&mut excess, "net", &ceiling_net, &net_ok, "no network access", host_pattern_covers);
    let ceiling_env: Vec<&str> = names(ceiling, |c| match c {
        Capability::Env(n) => Some(n),
        _ => None,
    });
    names_excess(&mut excess, "env", &ceiling_env, &grant.env, "no environment variables", |c, g| c == "*" || c == g);
    excess
}

/// [`grant_excess`] for names (hosts, variables).
fn names_excess(
    excess: &mut Vec<String>,
    kind: &str,
    ceiling: &[&str],
    grant: &[String],
    none: &str,
    covers: impl Fn(&str, &str) -> bool,
) {
    for g in grant {
        let covered = if g == "*" { !ceiling.is_empty() } else { ceiling.iter().any(|c| covers(c, g)) };
        if !covered {
            let allowed = if ceiling.is_empty() { none.to_string() } else { format!("only {}", ceiling.join(", ")) };
            excess.push(format!("{kind} {g:?}: the ceiling allows {allowed}"));
        }
    }
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

/// Whether the ceiling host pattern `c` admits everything the grant pattern `g` names (see
/// [`NetPattern::covers`]); a pattern that does not parse covers and is covered by nothing but
/// itself.
fn host_pattern_covers(c: &str, g: &str) -> bool {
    if c == g {
        return true;
    }
    match (c.parse::<NetPattern>(), g.parse::<NetPattern>()) {
        (Ok(c), Ok(g)) => c.covers(&g),
        _ => false,
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
    fn excess_table() {
        let read_all = [Capability::FsRead("/".into())];
        let write_ws = [Capability::FsWrite(".".into())];
        let mixed = [
            Capability::FsRead("/".into()),
            Capability::FsWrite("src".into()),
            Capability::Net("*.github.com".into()),
            Capability::Env("HOME".into()),
        ];
        let star = [Capability::FsWrite("/".into()), Capability::Net("*".into()), Capability::Env("*".into())];
        let g = |fs_read: &[&str], fs_write: &[&str], net: &[&str], env: &[&str]| {
            let v = |s: &[&str]| s.iter().map(ToString::to_string).collect();
            Grant { fs_read: v(fs_read), fs_write: v(fs_write), net: v(net), env: v(env) }
        };
        /// (ceiling, grant, expected excess)
        type Case<'a> = (&'a [Capability], Grant, &'a [&'a str]);
        let cases: &[Case] = &[
            // Covered: inside the ceiling, with the right permission.
            (&read_all, g(&[".", "/etc"], &[], &[], &[]), &[]),
            (&write_ws, g(&["."], &[".", "src/x"], &[], &[]), &[]),
            (&mixed, g(&[], &["src", "src/a/../b"], &["api.github.com", "*.x.github.com"], &["HOME"]), &[]),
            (&star, g(&["/"], &["/etc"], &["evil.com", "*"], &["SECRET", "*"]), &[]),
            (&mixed, g(&[], &[], &["*"], &["*"]), &[]),
            (&read_all, Grant::none(), &[]),
            // Writing where the ceiling only reads.
            (&read_all, g(&[], &["/etc"], &[], &[]), &[r#"fs_write "/etc": the ceiling allows only fs_read of /"#]),
            (&read_all, Grant::workspace_read_write(), &[r#"fs_write "." (/w): the ceiling allows only fs_read of /"#]),
            (
                &mixed,
                g(&[], &["."], &[], &[]),
                &[r#"fs_write "." (/w): the ceiling allows only fs_read of /, fs_write of /w/src"#],
            ),
            // A tree wider than the ceiling's, or outside it.
            (&write_ws, g(&["/"], &[], &[], &[]), &[r#"fs_read "/": the ceiling allows only fs_write of /w"#]),
            (
                &write_ws,
                g(&["../other"], &[], &[], &[]),
                &[r#"fs_read "../other" (/other): the ceiling allows only fs_write of /w"#],
            ),
            (&[], g(&["."], &[], &[], &[]), &[r#"fs_read "." (/w): the ceiling allows no file access"#]),
            // Names the ceiling does not cover; `*` where the ceiling has none of that kind.
            (
                &mixed,
                g(&[], &[], &["github.com", "evil.com"], &["SECRET"]),
                &[
                    r#"net "github.com": the ceiling allows only *.github.com"#,
                    r#"net "evil.com": the ceiling allows only *.github.com"#,
                    r#"env "SECRET": the ceiling allows only HOME"#,
                ],
            ),
            // Ports count; a pattern that does not parse is left to `pattern_errors`.
            (
                &mixed,
                g(&[], &[], &["api.github.com:22", "a b"], &[]),
                &[r#"net "api.github.com:22": the ceiling allows only *.github.com"#],
            ),
            (
                &read_all,
                g(&[], &[], &["*"], &["*"]),
                &[
                    r#"net "*": the ceiling allows no network access"#,
                    r#"env "*": the ceiling allows no environment variables"#,
                ],
            ),
        ];
        for (ceiling, grant, want) in cases {
            assert_eq!(grant_excess(ceiling, grant, ws()), *want, "ceiling {ceiling:?} grant {grant:?}");
        }
        assert_eq!(
            g(&[], &[], &["ok.com", "a b", "x:99999"], &[]).pattern_errors(),
            [
                r#"net[1]: invalid network pattern "a b": not a host name, IP address, `*.domain` or `*`"#,
                r#"net[2]: invalid network pattern "x:99999": the port is not a number from 0 to 65535"#,
            ]
        );
    }

    #[test]
    fn grant_as_capabilities() {
        let grant = Grant { fs_read: vec!["/".into()], net: vec!["*".into()], ..Grant::workspace_read_write() };
        let shown: Vec<String> = grant.capabilities(ws()).iter().map(ToString::to_string).collect();
        assert_eq!(shown, ["fs-read(/)", "fs-write(/w)", "net(*)"]);
        let eff = effective_grant(&[Capability::FsWrite(".".into())], &Grant::workspace_read_write(), ws());
        assert_eq!(Grant::workspace_read_write().capabilities(ws()), eff.capabilities());
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
