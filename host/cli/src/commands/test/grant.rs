//! # What a component under test is granted
//!
//! `toolhost test` runs components nobody has vouched for yet (a download, a stranger's
//! project), so what the component's own files ask for is not what it gets. Its policy file
//! (`NAME.policy.yaml`) and a case's `grant` were written by the component's author; applied
//! as they are, a component could grant itself `~/.ssh` and read it during its own test. Here
//! such a request is split in two:
//!
//! - what stays inside the scratch workspace the test made (relative paths, resolved there;
//!   the variables a case gives values for, which are the author's test data) is applied;
//! - everything else (a directory outside the workspace, by an absolute path, `..` or a link;
//!   a network host; a variable of the host's environment) is not applied but listed, with the
//!   `--grant` flag that would give it on purpose.
//!
//! What the person passes with `--grant` is applied on top, and is the only way a host
//! directory, host or variable reaches the component.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::str::FromStr;
use toolhost_policy::{Capability, Grant, NetPattern, resolve};

/// One `--grant KIND=VALUE` flag: a capability the person gives the component under test on
/// purpose. The kinds are the keys of `[tools.NAME] grant` in `toolhost.toml`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GrantArg {
    /// `fs_read=PATH`: a host directory, read-only (relative to the current directory).
    FsRead(PathBuf),
    /// `fs_write=PATH`: a host directory, read and written.
    FsWrite(PathBuf),
    /// `net=PATTERN`: a network host pattern, as in a grant's `net`.
    Net(String),
    /// `env=NAME`: a variable of the host's environment, passed with its value.
    Env(String),
}

impl FromStr for GrantArg {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        const FORMS: &str = "expected fs_read=PATH, fs_write=PATH, net=HOST or env=NAME";
        let Some((kind, value)) = s.split_once('=') else { return Err(FORMS.into()) };
        if value.is_empty() {
            return Err(format!("{kind}= names nothing ({FORMS})"));
        }
        match kind {
            "fs_read" => Ok(GrantArg::FsRead(value.into())),
            "fs_write" => Ok(GrantArg::FsWrite(value.into())),
            // Parsed here so that a bad pattern is a usage error, never a grant that silently
            // matches nothing.
            "net" => value.parse::<NetPattern>().map(|_| GrantArg::Net(value.into())).map_err(|e| e.to_string()),
            // `*` would hand over the whole host environment: each variable is named.
            "env" if value == "*" || value.contains(char::is_whitespace) => {
                Err(format!("env={value}: name one variable per --grant"))
            }
            "env" => Ok(GrantArg::Env(value.into())),
            _ => Err(format!("unknown kind {kind:?}: {FORMS}")),
        }
    }
}

/// What the person granted with `--grant`, as a grant with absolute, normalised paths.
#[derive(Debug, Clone, Default)]
pub struct Given {
    pub grant: Grant,
}

impl Given {
    /// The flags, relative paths resolved against `cwd` (the person's current directory: the
    /// scratch workspace is the test's own and means nothing to them).
    pub fn new(args: &[GrantArg], cwd: &Path) -> Self {
        let mut grant = Grant::none();
        let dir = |p: &Path| resolve(&p.to_string_lossy(), cwd).display().to_string();
        for arg in args {
            match arg {
                GrantArg::FsRead(p) => grant.fs_read.push(dir(p)),
                GrantArg::FsWrite(p) => grant.fs_write.push(dir(p)),
                GrantArg::Net(n) => grant.net.push(n.clone()),
                GrantArg::Env(n) => grant.env.push(n.clone()),
            }
        }
        Given { grant }
    }

    /// Whether `--grant` already gives the directory `path` (inside a directory it gives,
    /// writable when `write` is asked).
    fn covers_dir(&self, path: &Path, write: bool) -> bool {
        let within = |dirs: &[String]| dirs.iter().any(|d| path.starts_with(d));
        within(&self.grant.fs_write) || (!write && within(&self.grant.fs_read))
    }

    /// Whether `--grant` already gives everything the host pattern `asked` admits.
    fn covers_net(&self, asked: &str) -> bool {
        self.grant.net.iter().any(|g| {
            g == asked
                || matches!((g.parse::<NetPattern>(), asked.parse::<NetPattern>()), (Ok(g), Ok(a)) if g.covers(&a))
        })
    }
}

/// One entry a policy file or case asked for that the test did not apply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NotApplied {
    /// The entry as asked, with why it was not applied: `fs_read "/etc" (outside the scratch
    /// workspace)`.
    pub entry: String,
    /// The flag that grants it on purpose: `--grant fs_read=/etc`.
    pub flag: String,
}

/// The grant a test runs with, the environment its variables are looked up in, and what was
/// asked for but not applied.
#[derive(Debug, Clone, Default)]
pub struct Confined {
    pub grant: Grant,
    /// The case's values, and the host's for the variables given with `--grant env=NAME` (a
    /// case's value wins: it is the data the case's expectation was written for).
    pub env: BTreeMap<String, String>,
    pub not_applied: Vec<NotApplied>,
}

/// `asked` (a policy file's or a case's grant, or the default) confined to `workspace`, plus
/// what the person gave (`given`). `case_env`: the case's variable values; `host_env` looks a
/// variable up in the host's environment, asked only for the names given with `--grant`.
pub fn confine(
    asked: &Grant,
    workspace: &Path,
    given: &Given,
    case_env: &BTreeMap<String, String>,
    host_env: impl Fn(&str) -> Option<String>,
) -> Confined {
    let mut c = Confined { grant: given.grant.clone(), ..Confined::default() };
    let real_workspace = workspace.canonicalize().unwrap_or_else(|_| workspace.to_path_buf());
    for (kind, paths, write) in [("fs_read", &asked.fs_read, false), ("fs_write", &asked.fs_write, true)] {
        for p in paths {
            let path = resolve(p, workspace);
            let list = if write { &mut c.grant.fs_write } else { &mut c.grant.fs_read };
            if inside(&path, workspace, &real_workspace) {
                list.push(path.display().to_string());
            } else if !given.covers_dir(&path, write) {
                c.not_applied.push(NotApplied {
                    entry: format!("{kind} {p:?} (outside the scratch workspace)"),
                    flag: format!("--grant {kind}={}", path.display()),
                });
            }
        }
    }
    for n in &asked.net {
        if !given.covers_net(n) {
            c.not_applied
                .push(NotApplied { entry: format!("net {n:?} (a network host)"), flag: format!("--grant net={n}") });
        }
    }
    for n in &asked.env {
        if n == "*" {
            // Every variable the case sets is its own test data; the host's are not passed.
            c.grant.env.extend(case_env.keys().cloned());
            c.not_applied.push(NotApplied {
                entry: "env \"*\" (the host's environment; only the case's values are set)".into(),
                flag: "--grant env=NAME".into(),
            });
        } else if case_env.contains_key(n) {
            c.grant.env.push(n.clone());
        } else if !given.grant.env.contains(n) {
            c.not_applied.push(NotApplied {
                entry: format!("env {n:?} (a variable of the host's environment)"),
                flag: format!("--grant env={n}"),
            });
        }
    }
    c.grant.env.sort();
    c.grant.env.dedup();
    for n in &given.grant.env {
        if let Some(value) = host_env(n) {
            c.env.insert(n.clone(), value);
        }
    }
    c.env.extend(case_env.iter().map(|(k, v)| (k.clone(), v.clone())));
    c
}

/// Whether `path` (absolute, normalised) lies inside `workspace`, and so does what it really
/// is when it exists (a link inside the workspace may point anywhere). A path that does not
/// exist yet cannot be opened as a directory and is not granted by the runtime either.
fn inside(path: &Path, workspace: &Path, real_workspace: &Path) -> bool {
    if !path.starts_with(workspace) {
        return false;
    }
    match path.canonicalize() {
        Ok(real) => real.starts_with(real_workspace),
        // Not there: whatever part of it exists must not lead out either.
        Err(_) => {
            path.ancestors().skip(1).find_map(|a| a.canonicalize().ok()).is_some_and(|r| r.starts_with(real_workspace))
        }
    }
}

/// `grant` narrowed to `ceiling` (`None`: the tool declares none, and the grant is all it
/// gets). The runtime refuses a `[tools.NAME] grant` beyond a tool's ceiling as an operator's
/// mistake; here the test chose the grant, so it is narrowed as a default grant would be.
pub fn within_ceiling(grant: &Grant, ceiling: Option<&[Capability]>, workspace: &Path) -> Grant {
    let Some(ceiling) = ceiling else { return grant.clone() };
    let effective = toolhost_policy::effective_grant(ceiling, grant, workspace);
    let mut out = Grant { net: effective.net, env: effective.env, ..Grant::none() };
    for d in effective.dirs {
        let list = if d.writable { &mut out.fs_write } else { &mut out.fs_read };
        list.push(d.path.display().to_string());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn flags_parse_into_kinds_and_bad_ones_are_refused() {
        assert_eq!("fs_read=/data".parse(), Ok(GrantArg::FsRead("/data".into())));
        assert_eq!("fs_write=out".parse(), Ok(GrantArg::FsWrite("out".into())));
        assert_eq!("net=api.example.com".parse(), Ok(GrantArg::Net("api.example.com".into())));
        assert_eq!("env=API_KEY".parse(), Ok(GrantArg::Env("API_KEY".into())));
        for bad in ["fs_read", "fs_read=", "disk=/", "env=*", "net=a b"] {
            assert!(bad.parse::<GrantArg>().is_err(), "{bad}");
        }
    }

    #[test]
    fn only_what_stays_inside_the_workspace_is_applied() {
        let dir = tempfile::tempdir().unwrap();
        let ws = dir.path().join("ws");
        std::fs::create_dir_all(ws.join("data")).unwrap();
        std::fs::create_dir_all(dir.path().join("secret")).unwrap();
        std::os::unix::fs::symlink(dir.path().join("secret"), ws.join("link")).unwrap();
        let asked = Grant {
            fs_read: strings(&["data", "/etc", "../secret", "link", "link/deeper", "data/../../secret"]),
            fs_write: strings(&["."]),
            net: strings(&["api.example.com"]),
            env: strings(&["HOME", "API_KEY"]),
        };
        let case_env = BTreeMap::from([("API_KEY".to_string(), "test".to_string())]);
        let c = confine(&asked, &ws, &Given::default(), &case_env, |_| Some("from the host".into()));
        assert_eq!(c.grant.fs_read, [ws.join("data").display().to_string()]);
        assert_eq!(c.grant.fs_write, [ws.display().to_string()]);
        assert!(c.grant.net.is_empty());
        assert_eq!(c.grant.env, ["API_KEY"], "a case's own value is test data");
        assert_eq!(c.env, case_env, "no host value without --grant");
        let flags: Vec<&str> = c.not_applied.iter().map(|n| n.flag.as_str()).collect();
        let secret = dir.path().join("secret").display().to_string();
        let link = ws.join("link").display().to_string();
        assert_eq!(
            flags,
            [
                "--grant fs_read=/etc".to_string(),
                format!("--grant fs_read={secret}"),
                format!("--grant fs_read={link}"),
                format!("--grant fs_read={link}/deeper"),
                format!("--grant fs_read={secret}"),
                "--grant net=api.example.com".into(),
                "--grant env=HOME".into(),
            ]
        );
    }

    #[test]
    fn what_the_person_grants_is_applied_and_covers_what_it_contains() {
        let dir = tempfile::tempdir().unwrap();
        let cwd = dir.path();
        let args: Vec<GrantArg> =
            ["fs_read=secret", "net=*.example.com", "env=TOKEN"].iter().map(|s| s.parse().unwrap()).collect();
        let given = Given::new(&args, cwd);
        let secret = cwd.join("secret");
        let asked = Grant {
            fs_read: vec![secret.join("key").display().to_string()],
            fs_write: vec![secret.display().to_string()],
            net: strings(&["api.example.com", "other.org"]),
            env: strings(&["TOKEN"]),
        };
        let ws = cwd.join("ws");
        std::fs::create_dir(&ws).unwrap();
        let c = confine(&asked, &ws, &given, &BTreeMap::new(), |n| (n == "TOKEN").then(|| "t".to_string()));
        assert_eq!(c.grant.fs_read, [secret.display().to_string()]);
        assert_eq!(c.grant.net, ["*.example.com"]);
        assert_eq!(c.grant.env, ["TOKEN"]);
        assert_eq!(c.env, BTreeMap::from([("TOKEN".to_string(), "t".to_string())]));
        let flags: Vec<&str> = c.not_applied.iter().map(|n| n.flag.as_str()).collect();
        assert_eq!(flags, [format!("--grant fs_write={}", secret.display()), "--grant net=other.org".into()]);
    }

    #[test]
    fn a_grant_is_narrowed_to_the_ceiling() {
        let ws = Path::new("/w");
        let grant = Grant { fs_write: strings(&["."]), env: strings(&["A", "B"]), ..Grant::none() };
        let ceiling = [Capability::FsRead("/".into()), Capability::Env("A".into())];
        let narrowed = within_ceiling(&grant, Some(&ceiling), ws);
        assert_eq!(narrowed, Grant { fs_read: strings(&["/w"]), env: strings(&["A"]), ..Grant::none() });
        assert!(toolhost_policy::grant_excess(&ceiling, &narrowed, ws).is_empty());
        assert_eq!(within_ceiling(&grant, None, ws), grant);
    }
}
