//! # Trust: pinned host-run files
//!
//! The layer between what a workspace's files say and what toolhost runs on the host because of
//! them: the runtime below it runs tools, the command line above it asks the person.
//!
//! What toolhost runs or obeys on the host — the config in use (its hooks, mode, rules, grants
//! and protected patterns) and every file a hook command runs — must not change behind the
//! operator's back, even if a bug in the filesystem guard lets a tool write it. [`Pins`] record,
//! per workspace and config file, the sha256 of the config file and of each hook file, and a
//! normalised [`Summary`] of the security-relevant config. [`changes`] compares recorded pins
//! with the current ones and says which changes widen what happens on the host; the CLI applies
//! a narrowing at once and holds a widening until a person confirms it (`toolhost trust`).
//!
//! Pins live in toolhost's state directory ([`PinStore`]), outside every grant: it is checked
//! like the compile cache (a directory of the effective user that no one else can write), the
//! runtime protects it from every tool (`toolhost::RuntimeBuilder::state_dir`), and a grant that
//! includes it is a load error. Pin files are replaced atomically (a new file, then a rename).
//!
//! ## Example
//!
//! ```
//! use std::path::Path;
//! use toolhost_trust::{changes, Pins};
//! use toolhost_policy::Config;
//!
//! let ws = Path::new("/w");
//! let before = Config::parse("[permissions]\ndeny = [\"Bash\"]\n", Path::new("/w/toolhost.toml")).unwrap();
//! let after = Config::parse("[permissions]\ndeny = [\"Bash\", \"WebFetch\"]\n", Path::new("/w/toolhost.toml")).unwrap();
//! let old = Pins::current(&before, Some(Path::new("/w/toolhost.toml")), ws);
//! let new = Pins::current(&after, Some(Path::new("/w/toolhost.toml")), ws);
//! let found = changes(&old, &new);
//! assert_eq!(found.len(), 1);
//! assert!(!found[0].widens);
//! assert_eq!(found[0].what, "deny rule added: WebFetch");
//! ```

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use toolhost_policy::{Config, Grant, HookConfig, HookMatcher, Mode, NetPattern, resolve};

/// The environment variable naming toolhost's state directory.
pub const STATE_DIR_ENV: &str = "TOOLHOST_STATE_DIR";

/// The version of the pin file format.
const FORMAT: u32 = 1;

mod gate;
#[cfg(test)]
mod props;
mod store;

pub use gate::{Asking, Clearance, Cleared, Confirmation, Gate, GateError};
pub use store::{PinError, PinStore, file_name, state_subdir};

/// What was trusted for one workspace and config file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Pins {
    /// The format version.
    pub format: u32,
    /// The workspace (canonical).
    pub workspace: PathBuf,
    /// The config file (absolute): the one in use, or where toolhost looks for one (so that
    /// deleting the config is a change like any other).
    pub config: Option<PathBuf>,
    /// The sha256 of the config file's text, `None` when there is no config file.
    pub config_sha256: Option<String>,
    /// Every file a hook command runs, with its digest ([`file_digest`]).
    pub files: BTreeMap<PathBuf, String>,
    /// The security-relevant config.
    pub summary: Summary,
    /// Whether a person trusted this workspace (`toolhost trust`, never a first start): only
    /// then do the allow rules of its `.claude/settings.json` apply, as a repository cannot
    /// approve itself (Claude Code's trust dialog).
    #[serde(default)]
    pub workspace_trusted: bool,
}

/// The security-relevant part of a config, normalised (rules, patterns and hooks as written,
/// grants as configured, tools without a grant at the default grant).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Summary {
    /// Every command hook.
    pub hooks: Vec<HookPin>,
    /// The permission mode (`default`, `accept-edits`, `bypass`, `dont-ask`, `plan`).
    pub mode: String,
    /// `[permissions] allow`.
    pub allow: BTreeSet<String>,
    /// `[permissions] ask`.
    pub ask: BTreeSet<String>,
    /// `[permissions] deny`.
    pub deny: BTreeSet<String>,
    /// `[permissions] protected`.
    pub protected: BTreeSet<String>,
    /// The grant of every tool the config gives one.
    pub grants: BTreeMap<String, GrantPin>,
    /// The policy file beside every component the start loads from a file without a
    /// configured grant (`NAME.policy.yaml`, DESIGN §1), by its path, with the grant it gives
    /// (`None`: there is none, or it does not parse, so it grants nothing). It is obeyed on the
    /// host as a grant in the config is: a file that appears or grows there widens. Components
    /// not loaded this time are not judged (another `--tools` directory is not a removal).
    #[serde(default)]
    pub policy_files: BTreeMap<PathBuf, Option<GrantPin>>,
    /// Directories every tool gets as it gets the workspace (Claude Code's
    /// `additionalDirectories`): one added widens.
    #[serde(default)]
    pub additional_directories: BTreeSet<PathBuf>,
    /// The variables every hook gets (Claude Code's `env`), by digest ([`value_digest`]): one
    /// added or changed widens, as it changes what a hook's programs do.
    #[serde(default)]
    pub hook_env: BTreeMap<String, String>,
}

/// A value the pins record without keeping it: `sha256:HEX` of its text.
pub fn value_digest(value: &str) -> String {
    format!("sha256:{}", hex::encode(Sha256::digest(value.as_bytes())))
}

/// What a server is started with besides its command line, for its pin: a stdio server's
/// `env`, an HTTP server's `headers` (as written, by digest) and its bearer token variable.
fn server_env(server: &toolhost_policy::McpServerConfig) -> BTreeMap<String, String> {
    let mut env: BTreeMap<String, String> = server.env.iter().map(|(k, v)| (k.clone(), value_digest(v))).collect();
    env.extend(server.headers.iter().map(|(k, v)| (format!("header {k}"), value_digest(v))));
    if let Some(var) = &server.bearer_token_env {
        env.insert("bearer_token_env".to_string(), var.clone());
    }
    env
}

/// One command hook.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[non_exhaustive]
pub struct HookPin {
    /// The event's key (`pre_tool_use`, `stop`, …: [`toolhost_policy::HOOK_EVENT_KEYS`]).
    pub event: String,
    /// The matcher (`*` for every tool).
    pub matcher: String,
    /// The shell command.
    pub command: String,
    /// The files it runs ([`hook_files`]).
    pub files: Vec<PathBuf>,
    /// What it is started with besides its command line: a stdio server's `env`, an HTTP
    /// server's `headers` and bearer token variable, each value as written and by its digest
    /// ([`value_digest`]: no secret in a pin file). One added or changed widens.
    #[serde(default)]
    pub env: BTreeMap<String, String>,
}

/// One tool's configured grant.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct GrantPin {
    /// Directories read.
    pub fs_read: Vec<String>,
    /// Directories read and written.
    pub fs_write: Vec<String>,
    /// Host patterns.
    pub net: Vec<String>,
    /// Environment variables.
    pub env: Vec<String>,
    /// `allow_private_network`.
    pub allow_private_network: bool,
}

impl GrantPin {
    /// The grant of a tool the config gives none (the CLI's default grant).
    fn default_grant() -> GrantPin {
        GrantPin::from_grant(&Grant::workspace_read_write(), false)
    }

    /// The grant of a component with no grant at all (a policy file that is not there).
    fn nothing() -> GrantPin {
        GrantPin::from_grant(&Grant::none(), false)
    }

    fn from_grant(g: &Grant, allow_private_network: bool) -> GrantPin {
        GrantPin {
            fs_read: g.fs_read.clone(),
            fs_write: g.fs_write.clone(),
            net: g.net.clone(),
            env: g.env.clone(),
            allow_private_network,
        }
    }
}

/// One difference between recorded pins and the current state.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Change {
    /// Whether it widens what happens on the host (then it waits for a person).
    pub widens: bool,
    /// What changed, in words (`hook added: pre_tool_use [sh hooks/guard.sh]`).
    pub what: String,
}

/// The files a hook runs. The one place pinning asks which files those are.
///
/// The files of its `files` key when it has one, else the files its command runs (as
/// [`toolhost_policy::analyse_hook_command`] reads it); a command that cannot be analysed runs
/// nothing (the runtime refuses to build with it).
pub fn hook_files(hook: &HookConfig, workspace: &Path) -> Vec<PathBuf> {
    if hook.refuses.is_some() {
        return Vec::new();
    }
    if let Some(files) = &hook.files {
        return files.iter().map(|f| toolhost_policy::normalize(&workspace.join(f.get_ref()))).collect();
    }
    let home = std::env::var_os("HOME").map(PathBuf::from);
    toolhost_policy::analyse_hook_command(hook.command.get_ref(), workspace, home.as_deref())
        .map(|runs| runs.files)
        .unwrap_or_default()
}

/// The directories inside the workspace that are protected for a hook because what it runs
/// lives there (interpreters load neighbours: `lib.sh`, an imported module): each is pinned
/// whole ([`pin_dir`]), so that a neighbour changed behind the guard is caught like the script.
/// Outside the workspace only the files themselves are pinned.
fn hook_dirs(hook: &HookConfig, workspace: &Path) -> Vec<PathBuf> {
    let home = std::env::var_os("HOME").map(PathBuf::from);
    let Ok(paths) = toolhost_policy::hook_protected_paths(hook, workspace, home.as_deref()) else { return Vec::new() };
    let mut dirs: Vec<PathBuf> = paths
        .into_iter()
        .filter(|p| p.starts_with(workspace) && p.symlink_metadata().is_ok_and(|m| m.is_dir()))
        .collect();
    dirs.sort();
    // A directory inside another is walked with it.
    dirs.dedup_by(|inner, outer| inner.starts_with(outer));
    dirs
}

/// Entries of one hook directory pinned at most; a bigger one is pinned by its count only.
const MAX_PINNED_ENTRIES: usize = 1000;

/// Pin every entry beneath `dir` (not following links; a link is pinned by its text, a
/// directory walked, anything else by [`file_digest`]). More than [`MAX_PINNED_ENTRIES`]:
/// the directory itself is pinned as "too many entries", and its files are not.
fn pin_dir(dir: &Path, files: &mut BTreeMap<PathBuf, String>) {
    let mut found = Vec::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(d) = pending.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else { continue };
        for entry in entries.flatten() {
            if found.len() >= MAX_PINNED_ENTRIES {
                files.insert(dir.to_path_buf(), format!("more than {MAX_PINNED_ENTRIES} entries, not pinned"));
                return;
            }
            let path = entry.path();
            let digest = match entry.file_type() {
                Ok(t) if t.is_dir() => {
                    pending.push(path);
                    continue;
                }
                Ok(t) if t.is_symlink() => match std::fs::read_link(&path) {
                    Ok(target) => format!("link to {}", target.display()),
                    Err(_) => "unreadable".into(),
                },
                _ => file_digest(&path),
            };
            found.push((path, digest));
        }
    }
    files.extend(found);
}

/// The digest of a hook file as pins record it: `sha256:HEX`, or `missing`, `not a regular
/// file`, `unreadable`. The last component is not followed (hook files are recorded by their
/// real path, so a link there was planted since), and a FIFO never blocks the read.
pub fn file_digest(path: &Path) -> String {
    use rustix::fs::{Mode as FileMode, OFlags};
    let flags = OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC;
    let file = match rustix::fs::open(path, flags, FileMode::empty()) {
        Ok(f) => std::fs::File::from(f),
        Err(rustix::io::Errno::NOENT) => return "missing".into(),
        Err(rustix::io::Errno::LOOP) => return "not a regular file".into(),
        Err(_) => return "unreadable".into(),
    };
    if !file.metadata().is_ok_and(|m| m.is_file()) {
        return "not a regular file".into();
    }
    let mut hasher = Sha256::new();
    match std::io::copy(&mut &file, &mut hasher) {
        Ok(_) => format!("sha256:{}", hex::encode(hasher.finalize())),
        Err(_) => "unreadable".into(),
    }
}

/// A mode's name, as the summary records it.
fn mode_name(mode: Mode) -> &'static str {
    match mode {
        Mode::Default => "default",
        Mode::AcceptEdits => "accept-edits",
        Mode::Bypass => "bypass",
        Mode::DontAsk => "dont-ask",
        Mode::Plan => "plan",
    }
}

/// How much a mode lets run without asking: plan < dont-ask < default < accept-edits < bypass.
/// A name no mode has (a newer format) ranks above all: fail closed.
fn mode_rank(name: &str) -> u8 {
    match name {
        "plan" => 0,
        "dont-ask" => 1,
        "default" => 2,
        "accept-edits" => 3,
        "bypass" => 4,
        _ => u8::MAX,
    }
}

fn matcher_text(m: &HookMatcher) -> String {
    match m {
        HookMatcher::All => "*".into(),
        HookMatcher::Names(names) => names.join("|"),
        HookMatcher::Regex(re) => re.as_str().to_string(),
    }
}

impl Summary {
    /// The summary of `config` for `workspace`.
    pub fn of(config: &Config, workspace: &Path) -> Summary {
        let mut pins: Vec<HookPin> = config
            .host_programs()
            .iter()
            .map(|(event, h)| HookPin {
                event: event.clone(),
                matcher: match &h.condition {
                    Some(rule) => format!("{} if {rule}", matcher_text(&h.matcher())),
                    None => matcher_text(&h.matcher()),
                },
                command: h.command.get_ref().clone(),
                files: hook_files(h, workspace),
                env: event
                    .strip_prefix("mcp_server ")
                    .and_then(|name| config.mcp_servers.get(name))
                    .map(server_env)
                    .unwrap_or_default(),
            })
            .collect();
        // An HTTP MCP server runs nothing here, but its tools join the pool: one added (or
        // moved elsewhere) widens what a model can do.
        for (name, server) in &config.mcp_servers {
            if let Some(url) = &server.url {
                pins.push(HookPin {
                    event: format!("mcp_server {name}"),
                    matcher: "*".to_string(),
                    command: url.get_ref().clone(),
                    files: Vec::new(),
                    env: server_env(server),
                });
            }
        }
        pins.sort();
        let perms = &config.permissions;
        let rules = perms.rules();
        let text = |v: &[toolhost_policy::Rule]| v.iter().map(ToString::to_string).collect();
        let mut summary = Summary {
            hooks: pins,
            mode: mode_name(perms.mode()).into(),
            allow: text(&rules.allow),
            ask: text(&rules.ask),
            deny: text(&rules.deny),
            protected: perms.protected().into_iter().map(str::to_string).collect(),
            grants: config
                .tools
                .iter()
                .filter_map(|(name, t)| {
                    let grant = t.grant.as_ref().map(|g| g.get_ref().clone());
                    (grant.is_some() || t.allow_private_network).then(|| {
                        let g = grant.unwrap_or_else(Grant::workspace_read_write);
                        (name.clone(), GrantPin::from_grant(&g, t.allow_private_network))
                    })
                })
                .collect(),
            policy_files: BTreeMap::new(),
            additional_directories: perms.additional_directories.iter().cloned().collect(),
            hook_env: config.hooks.env.iter().map(|(k, v)| (k.clone(), value_digest(v))).collect(),
        };
        summary.pin_policy_files(
            config
                .tools
                .values()
                .filter(|t| t.grant.is_none())
                .filter_map(|t| t.path.as_ref())
                .map(|p| p.get_ref().as_path()),
        );
        summary
    }

    /// Pin the policy file beside each of `components` (`.wasm` files loaded without a
    /// configured grant): its grant, or `None` when there is none that reads (a malformed one
    /// is a load error, so it grants nothing).
    pub fn pin_policy_files<'a>(&mut self, components: impl IntoIterator<Item = &'a Path>) {
        for component in components {
            let Some(path) = toolhost_policy::policy_file_path(component) else { continue };
            let grant = match toolhost_policy::read_policy_file(&path) {
                Ok(Some(grant)) => Some(GrantPin::from_grant(&grant, false)),
                _ => None,
            };
            self.policy_files.insert(std::path::absolute(&path).unwrap_or(path), grant);
        }
    }
}

impl Pins {
    /// The pins of the current state: `config` (read from `config_path`, or the default config
    /// when there is no file there), hook files as they are now. The config's digest is of the
    /// very text it was parsed from.
    pub fn current(config: &Config, config_path: Option<&Path>, workspace: &Path) -> Pins {
        let summary = Summary::of(config, workspace);
        let mut files: BTreeMap<PathBuf, String> =
            summary.hooks.iter().flat_map(|h| &h.files).map(|f| (f.clone(), file_digest(f))).collect();
        for (_, hook) in config.host_programs() {
            for dir in hook_dirs(&hook, workspace) {
                pin_dir(&dir, &mut files);
            }
        }
        Pins {
            format: FORMAT,
            workspace: workspace.to_path_buf(),
            config: config_path.map(Path::to_path_buf),
            config_sha256: config.text().map(|t| hex::encode(Sha256::digest(t))),
            files,
            summary,
            workspace_trusted: false,
        }
    }

    /// Keep what `trusted` records of policy files beside components not loaded now (a start
    /// with another `--tools` directory neither judges nor forgets them, so going back to the
    /// first asks nothing), and whether the workspace is trusted.
    pub fn carry_unloaded(&mut self, trusted: &Pins) {
        self.workspace_trusted = trusted.workspace_trusted;
        for (path, grant) in &trusted.summary.policy_files {
            self.summary.policy_files.entry(path.clone()).or_insert_with(|| grant.clone());
        }
    }

    /// What is trusted without pins: no config at all (the default mode, no rules, no hooks,
    /// the default grant). Compared against when the pins cannot be read.
    pub fn baseline(workspace: &Path, config_path: Option<&Path>) -> Pins {
        Pins::current(&Config::default(), config_path, workspace)
    }
}

/// Every difference between `old` (trusted) and `new` (current), widening ones first.
pub fn changes(old: &Pins, new: &Pins) -> Vec<Change> {
    let ws = &new.workspace;
    let mut out = Vec::new();
    let mut push = |widens: bool, what: String| out.push(Change { widens, what });
    let (o, n) = (&old.summary, &new.summary);

    // Hooks: any hook not trusted exactly as it is now (event, matcher, command, files) widens.
    let mut unmatched_old: Vec<&HookPin> = o.hooks.iter().collect();
    let mut added = Vec::new();
    for h in &n.hooks {
        match unmatched_old.iter().position(|x| *x == h) {
            Some(i) => {
                unmatched_old.remove(i);
            }
            None => added.push(h),
        }
    }
    // A server is one entry by its name, whatever changed in it.
    let named = |h: &HookPin, what: &str| match h.event.strip_prefix("mcp_server ") {
        Some(name) => format!("MCP server {name} {what}: [{}]", h.command),
        None => format!("hook {what}: {} [{}]", h.event, h.command),
    };
    for h in added {
        let same = |x: &&HookPin| x.event == h.event && (x.command == h.command || h.event.starts_with("mcp_server "));
        match unmatched_old.iter().position(same) {
            Some(i) => {
                let was = unmatched_old.remove(i);
                let mut how = Vec::new();
                if was.command != h.command {
                    how.push(format!("was [{}]", was.command));
                }
                if was.matcher != h.matcher {
                    how.push(format!("matcher {:?} → {:?}", was.matcher, h.matcher));
                }
                if was.files != h.files {
                    how.push(format!("files [{}] → [{}]", show_files(&was.files, ws), show_files(&h.files, ws)));
                }
                how.extend(env_changes(&was.env, &h.env));
                push(true, format!("{} ({})", named(h, "changed"), how.join(", ")));
            }
            None => push(true, named(h, "added")),
        }
    }
    for h in unmatched_old {
        push(false, named(h, "removed"));
    }

    // Hook files: new content, or a file where there was none, widens; a file gone narrows.
    for (path, digest) in &new.files {
        let shown = show_path(path, ws);
        match old.files.get(path) {
            Some(was) if was == digest => {}
            Some(was) => {
                let widens = digest != "missing";
                push(widens, format!("{shown} changed ({})", digest_change(was, digest)));
            }
            None if digest == "missing" => {}
            None => push(true, format!("{shown} is new ({})", short(digest))),
        }
    }

    for what in env_changes(&o.hook_env, &n.hook_env) {
        let widens = !what.ends_with("removed");
        push(widens, format!("hook environment: {what}"));
    }

    if o.mode != n.mode {
        push(mode_rank(&n.mode) > mode_rank(&o.mode), format!("permission mode {} → {}", o.mode, n.mode));
    }
    for (kind, before, after, adding_widens) in
        [("allow", &o.allow, &n.allow, true), ("ask", &o.ask, &n.ask, false), ("deny", &o.deny, &n.deny, false)]
    {
        for r in after.difference(before) {
            push(adding_widens, format!("{kind} rule added: {r}"));
        }
        for r in before.difference(after) {
            push(!adding_widens, format!("{kind} rule removed: {r}"));
        }
    }
    for d in n.additional_directories.difference(&o.additional_directories) {
        push(true, format!("additional directory added: {}", d.display()));
    }
    for d in o.additional_directories.difference(&n.additional_directories) {
        push(false, format!("additional directory removed: {}", d.display()));
    }
    for p in n.protected.difference(&o.protected) {
        push(false, format!("protected pattern added: {p}"));
    }
    for p in o.protected.difference(&n.protected) {
        push(true, format!("protected pattern removed: {p}"));
    }

    let names: BTreeSet<&String> = o.grants.keys().chain(n.grants.keys()).collect();
    let default = GrantPin::default_grant();
    for name in names {
        let before = o.grants.get(name).unwrap_or(&default);
        let after = n.grants.get(name).unwrap_or(&default);
        if before == after {
            continue;
        }
        let wider = grant_widening(before, after, ws);
        if wider.is_empty() {
            push(false, format!("grant of {name} narrowed"));
        } else {
            push(true, format!("grant of {name} widened: {}", wider.join(", ")));
        }
    }
    // A policy file judged the careful way round, for the components loaded now: one that
    // appears is compared with no grant (a function component without one gets nothing), one
    // that goes with the default grant (a toolhost tool without one gets it).
    for (path, after) in &n.policy_files {
        let shown = show_path(path, ws);
        let before = o.policy_files.get(path).cloned().flatten();
        match (before, after) {
            (Some(before), Some(after)) if before == *after => {}
            (Some(before), Some(after)) => {
                let wider = grant_widening(&before, after, ws);
                match wider.is_empty() {
                    true => push(false, format!("policy file {shown} narrowed")),
                    false => push(true, format!("policy file {shown} widened: {}", wider.join(", "))),
                }
            }
            (None, Some(after)) => {
                let wider = grant_widening(&GrantPin::nothing(), after, ws);
                if !wider.is_empty() {
                    push(true, format!("policy file {shown} is new, granting {}", wider.join(", ")));
                }
            }
            (Some(before), None) => {
                let wider = grant_widening(&before, &GrantPin::default_grant(), ws);
                match wider.is_empty() {
                    true => push(false, format!("policy file {shown} removed")),
                    false => push(
                        true,
                        format!(
                            "policy file {shown} removed: a toolhost tool beside it would get the default grant ({})",
                            wider.join(", ")
                        ),
                    ),
                }
            }
            (None, None) => {}
        }
    }
    out.sort_by_key(|c| !c.widens);
    out
}

/// How two recorded environments differ, by name (values are digests: never shown).
fn env_changes(was: &BTreeMap<String, String>, now: &BTreeMap<String, String>) -> Vec<String> {
    let mut out = Vec::new();
    for (k, v) in now {
        match was.get(k) {
            None => out.push(format!("{k} added")),
            Some(w) if w != v => out.push(format!("{k} changed")),
            Some(_) => {}
        }
    }
    out.extend(was.keys().filter(|k| !now.contains_key(*k)).map(|k| format!("{k} removed")));
    out
}

/// What `after` grants that `before` does not cover: a directory outside every old one (or
/// writable where the old one was not), a host pattern no old one covers, a new variable,
/// `allow_private_network` turned on.
fn grant_widening(before: &GrantPin, after: &GrantPin, ws: &Path) -> Vec<String> {
    let old_dirs: Vec<(PathBuf, bool)> = before
        .fs_read
        .iter()
        .map(|p| (resolve(p, ws), false))
        .chain(before.fs_write.iter().map(|p| (resolve(p, ws), true)))
        .collect();
    let mut wider = Vec::new();
    for (kind, paths, write) in [("fs_read", &after.fs_read, false), ("fs_write", &after.fs_write, true)] {
        for p in paths {
            let r = resolve(p, ws);
            if !old_dirs.iter().any(|(d, w)| r.starts_with(d) && (*w || !write)) {
                wider.push(format!("{kind} {p:?}"));
            }
        }
    }
    let covers = |c: &str, g: &str| {
        c == g
            || match (c.parse::<NetPattern>(), g.parse::<NetPattern>()) {
                (Ok(c), Ok(g)) => c.covers(&g),
                _ => false,
            }
    };
    for g in &after.net {
        if !before.net.iter().any(|c| covers(c, g)) {
            wider.push(format!("net {g:?}"));
        }
    }
    for g in &after.env {
        if !before.env.iter().any(|c| c == "*" || c == g) {
            wider.push(format!("env {g:?}"));
        }
    }
    if after.allow_private_network && !before.allow_private_network {
        wider.push("allow_private_network".into());
    }
    wider
}

/// A path relative to the workspace when inside it.
pub fn show_path(path: &Path, workspace: &Path) -> String {
    path.strip_prefix(workspace).unwrap_or(path).display().to_string()
}

fn show_files(files: &[PathBuf], ws: &Path) -> String {
    files.iter().map(|f| show_path(f, ws)).collect::<Vec<_>>().join(", ")
}

/// Two digests shortened for people: `sha256 ab12cd34ef56… → 0987fedcba65…`.
fn digest_change(was: &str, now: &str) -> String {
    match (was.strip_prefix("sha256:"), now.strip_prefix("sha256:")) {
        (Some(a), Some(b)) => format!("sha256 {}… → {}…", a.get(..12).unwrap_or(a), b.get(..12).unwrap_or(b)),
        _ => format!("{} → {}", short(was), short(now)),
    }
}

/// A digest shortened for people: `sha256 ab12cd34…`.
fn short(digest: &str) -> String {
    match digest.strip_prefix("sha256:") {
        Some(hex) => format!("sha256 {}…", &hex[..hex.len().min(12)]),
        None => digest.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt as _;

    fn pins(text: &str, ws: &Path) -> Pins {
        let file = ws.join("toolhost.toml");
        let config = Config::parse(text, &file).unwrap();
        Pins::current(&config, Some(&file), ws)
    }

    fn widening(old: &str, new: &str, ws: &Path) -> Vec<String> {
        changes(&pins(old, ws), &pins(new, ws)).into_iter().filter(|c| c.widens).map(|c| c.what).collect()
    }

    #[test]
    fn what_widens_and_what_narrows() {
        let ws = tempfile::tempdir().unwrap();
        let ws = ws.path().canonicalize().unwrap();
        let hook = "[[hooks.pre_tool_use]]\ncommand = \"sh hooks/guard.sh\"\n";
        // (old, new, widens?)
        let table: &[(&str, &str, bool)] = &[
            ("", hook, true),
            (hook, "", false),
            // Session hooks run on the host like any other.
            ("", "[[hooks.stop]]\ncommand = \"sh hooks/guard.sh\"\n", true),
            ("", "[[hooks.session_start]]\ncommand = \"sh hooks/guard.sh\"\n", true),
            ("", "[[hooks.user_prompt_submit]]\ncommand = \"sh hooks/guard.sh\"\n", true),
            ("", "[permissions]\nmode = \"bypass\"\n", true),
            ("", "[permissions]\nmode = \"acceptEdits\"\n", true),
            ("", "[permissions]\nmode = \"dontAsk\"\n", false),
            ("", "[permissions]\nmode = \"plan\"\n", false),
            ("[permissions]\nmode = \"plan\"\n", "[permissions]\nmode = \"dontAsk\"\n", true),
            ("", "[permissions]\nallow = [\"Write\"]\n", true),
            ("[permissions]\nallow = [\"Write\"]\n", "", false),
            ("", "[permissions]\ndeny = [\"Write\"]\n", false),
            ("[permissions]\ndeny = [\"Write\"]\n", "", true),
            ("[permissions]\nask = [\"Write\"]\n", "", true),
            ("", "[permissions]\nprotected = [\"a.sh\"]\n", false),
            ("[permissions]\nprotected = [\"a.sh\"]\n", "", true),
            ("", "[tools.Read]\ngrant = { fs_read = [\".\"] }\n", false),
            ("[tools.Read]\ngrant = { fs_read = [\".\"] }\n", "", true),
            ("", "[tools.Read]\ngrant = { net = [\"example.com\"] }\n", true),
            ("", "[tools.Read]\nallow_private_network = true\n", true),
            ("[tools.Read]\ngrant = { net = [\"*\"] }\n", "[tools.Read]\ngrant = { net = [\"a.com\"] }\n", false),
            ("[tools.Read]\ngrant = { env = [\"A\"] }\n", "[tools.Read]\ngrant = { env = [\"A\", \"B\"] }\n", true),
            ("[limits]\ntimeout_ms = 10\n", "[limits]\ntimeout_ms = 20\n", false),
        ];
        for (old, new, widens) in table {
            let found = changes(&pins(old, &ws), &pins(new, &ws));
            assert!(!found.is_empty() || old.contains("limits"), "{old:?} → {new:?}: no change found");
            assert_eq!(found.iter().any(|c| c.widens), *widens, "{old:?} → {new:?}: {found:?}");
        }
    }

    #[test]
    fn a_changed_hook_file_widens_and_names_both_digests() {
        let ws = tempfile::tempdir().unwrap();
        let ws = ws.path().canonicalize().unwrap();
        std::fs::create_dir(ws.join("hooks")).unwrap();
        std::fs::write(ws.join("hooks/guard.sh"), "exit 0\n").unwrap();
        let text = "[[hooks.pre_tool_use]]\nmatcher = \"Write\"\ncommand = \"sh hooks/guard.sh\"\n";
        let old = pins(text, &ws);
        assert_eq!(changes(&old, &pins(text, &ws)), []);
        std::fs::write(ws.join("hooks/guard.sh"), "touch pwned\n").unwrap();
        let wider = widening(text, text, &ws);
        assert!(wider.is_empty(), "both read now: {wider:?}");
        let found = changes(&old, &pins(text, &ws));
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(found[0].widens);
        let what = &found[0].what;
        assert!(what.starts_with("hooks/guard.sh changed (sha256 ") && what.contains("… → "), "{what}");
        // A matcher change is a changed hook.
        let other = "[[hooks.pre_tool_use]]\nmatcher = \"*\"\ncommand = \"sh hooks/guard.sh\"\n";
        assert_eq!(
            widening(text, other, &ws),
            ["hook changed: pre_tool_use [sh hooks/guard.sh] (matcher \"Write\" → \"*\")"]
        );
    }

    #[test]
    fn a_policy_file_beside_a_component_is_pinned_as_a_grant() {
        let ws = tempfile::tempdir().unwrap();
        let ws = ws.path().canonicalize().unwrap();
        std::fs::create_dir(ws.join("tools")).unwrap();
        std::fs::create_dir(ws.join("data")).unwrap();
        let policy = ws.join("tools/fetch.policy.yaml");
        let storage = |uri: &str, access: &str| {
            format!(
                "version: \"1.0\"\npermissions:\n  storage:\n    allow:\n      - uri: \"fs://{uri}\"\n        access: [{access}]\n"
            )
        };
        let text = "[tools.fetch]\npath = \"tools/fetch.wasm\"\n";
        let data = ws.join("data").display().to_string();
        let none = pins(text, &ws);
        assert_eq!(none.summary.policy_files.values().flatten().count(), 0);

        std::fs::write(&policy, storage(&data, "read")).unwrap();
        let read = pins(text, &ws);
        let found = changes(&none, &read);
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(
            found[0].widens
                && found[0].what.starts_with("policy file tools/fetch.policy.yaml is new, granting fs_read")
        );

        std::fs::write(&policy, storage(&data, "read, write")).unwrap();
        let write = pins(text, &ws);
        let found = changes(&read, &write);
        assert!(found.len() == 1 && found[0].widens, "{found:?}");
        assert!(found[0].what.contains("widened: fs_write"), "{found:?}");
        let found = changes(&write, &read);
        assert!(found.len() == 1 && !found[0].widens, "write → read narrows: {found:?}");

        // Gone: a toolhost tool beside it would get the default grant, the whole workspace.
        std::fs::remove_file(&policy).unwrap();
        let found = changes(&read, &pins(text, &ws));
        assert!(found.len() == 1 && found[0].widens && found[0].what.contains("removed"), "{found:?}");

        // A configured grant takes the policy file's place: the file is not obeyed, not pinned.
        std::fs::write(&policy, storage("/", "read, write")).unwrap();
        let granted = "[tools.fetch]\npath = \"tools/fetch.wasm\"\ngrant = { fs_read = [\"data\"] }\n";
        assert!(pins(granted, &ws).summary.policy_files.is_empty());
        // A component not loaded any more is not judged: its policy file is not "removed".
        std::fs::write(&policy, storage(&data, "read")).unwrap();
        assert_eq!(changes(&read, &pins("", &ws)).iter().filter(|c| c.what.contains("policy")).count(), 0);
        // A malformed one grants nothing (the tool fails to load).
        std::fs::write(&policy, "permissions: {storage: {allow: [{uri: 1}]}}\nextra: 1\n").unwrap();
        assert_eq!(changes(&none, &pins(text, &ws)), []);
    }

    #[test]
    fn pins_round_trip_through_a_private_store() {
        let state = tempfile::tempdir().unwrap();
        let ws = tempfile::tempdir().unwrap();
        let ws = ws.path().canonicalize().unwrap();
        let store = PinStore::open(&state.path().join("toolhost")).unwrap();
        let mode = std::fs::metadata(state.path().join("toolhost")).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o700);
        let p = pins("[permissions]\ndeny = [\"Bash\"]\n", &ws);
        assert_eq!(store.read(&ws, p.config.as_deref()).unwrap(), None);
        store.write(&p).unwrap();
        assert_eq!(store.read(&ws, p.config.as_deref()).unwrap(), Some(p.clone()));
        let file = store.path_for(&ws, p.config.as_deref());
        assert_eq!(std::fs::metadata(&file).unwrap().permissions().mode() & 0o777, 0o600);
    }

    #[test]
    fn a_state_dir_others_can_write_is_refused() {
        let state = tempfile::tempdir().unwrap();
        std::fs::set_permissions(state.path(), std::fs::Permissions::from_mode(0o777)).unwrap();
        let err = PinStore::open(state.path()).unwrap_err().to_string();
        assert!(err.contains("writable by its group or by everyone"), "{err}");
        assert!(err.contains("TOOLHOST_STATE_DIR"), "{err}");
    }
}
