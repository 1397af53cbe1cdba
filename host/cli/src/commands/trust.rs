//! `toolhost trust [--show]`: record the config in use and the files its hooks run as trusted
//! for this workspace (as direnv's `allow` and mise's `trust` do), or show what is pinned and
//! how the current state differs from it.

use crate::output::outln;
use crate::pins::{self, Subject};
use crate::setup::{self, GlobalArgs, printable};
use anyhow::Result;
use clap::Args;
use toolhost_policy::Config;
use toolhost_policy::launch::ServerLaunch;
use toolhost_trust::Pins;

#[derive(Args, Debug)]
pub struct TrustCommand {
    /// Print what is pinned and what differs from it now, without trusting anything.
    #[arg(long)]
    show: bool,
}

impl TrustCommand {
    pub async fn execute(self, global: &GlobalArgs) -> Result<u8> {
        // What is trusted includes the project's own allow rules (`.claude/settings.json`),
        // which apply only in a trusted workspace; `--show` shows the state as it is.
        let trusted_now = pins::workspace_trusted(global);
        let config = setup::load_config_as(global, !self.show || trusted_now)?;
        // Everything that would run once trusted, servers a cloned workspace brings included.
        let whole = if self.show && !trusted_now { setup::load_config_as(global, true)? } else { config.clone() };
        let subject = Subject::of(global)?;
        let mut current = subject.current(&config);
        let store = pins::store()?;
        let trusted = store.read(&subject.workspace, Some(&subject.config));
        if let Ok(Some(p)) = &trusted {
            current.carry_unloaded(p);
        }
        if self.show {
            let path = store.path_for(&subject.workspace, Some(&subject.config));
            match &trusted {
                Ok(Some(p)) => {
                    outln!("pinned in {}:", path.display());
                    show(p, &subject);
                    let changes = toolhost_trust::changes(p, &current);
                    if changes.is_empty() && *p == current {
                        outln!("no changes since then");
                    } else if changes.is_empty() {
                        outln!("changed since then, nothing that matters to pinning (it applies as it is)");
                    } else {
                        outln!("changed since then:");
                        for c in &changes {
                            outln!("  {} {}", if c.widens { "widens: " } else { "narrows:" }, printable(&c.what));
                        }
                    }
                }
                Ok(None) => {
                    outln!(
                        "nothing pinned yet for {} in {} (the next start records it)",
                        subject.shown,
                        path.display()
                    );
                    show(&current, &subject);
                }
                Err(e) => outln!("cannot read the pins: {}", toolhost::error_text(e)),
            }
            show_programs(&whole, &config, &subject);
            return Ok(0);
        }
        show_programs(&config, &config, &subject);
        // What is accepted, so that the person sees it once more.
        if let Ok(Some(p)) = &trusted {
            for c in toolhost_trust::changes(p, &current) {
                outln!("accepted: {}", printable(&c.what));
            }
        }
        current.workspace_trusted = true;
        store.write(&current)?;
        let files = current.files.len();
        outln!(
            "trusted {} and {files} hook file{} for {}",
            subject.shown,
            if files == 1 { "" } else { "s" },
            subject.workspace.display()
        );
        Ok(0)
    }
}

/// What pins hold, for people.
fn show(p: &Pins, subject: &Subject) {
    let s = &p.summary;
    outln!(
        "  config:     {} ({})",
        subject.shown,
        p.config_sha256.as_deref().map_or("none".into(), |d| format!("sha256 {d}"))
    );
    outln!("  workspace:  {}", p.workspace.display());
    outln!("  mode:       {}", s.mode);
    for (kind, rules) in [("allow", &s.allow), ("ask", &s.ask), ("deny", &s.deny), ("protected", &s.protected)] {
        if !rules.is_empty() {
            outln!("  {kind:<10}  {}", printable(&rules.iter().cloned().collect::<Vec<_>>().join(", ")));
        }
    }
    for h in &s.hooks {
        outln!("  hook:       {} matcher {:?} [{}]", h.event, h.matcher, printable(&h.command));
    }
    for (file, digest) in &p.files {
        outln!("  file:       {} {digest}", printable(&pins::shown(file, subject)));
    }
    for (tool, g) in &s.grants {
        outln!(
            "  grant:      {tool}: fs_read {:?}, fs_write {:?}, net {:?}, env {:?}{}",
            g.fs_read,
            g.fs_write,
            g.net,
            g.env,
            if g.allow_private_network { ", allow_private_network" } else { "" }
        );
    }
}

/// Every MCP server `whole` would start or reach, as it would run: the command line after
/// `${VAR}` expansion, its `env` or `headers` as written (secret-looking values masked), and
/// whether it is held until the workspace is trusted (in `whole`, not in `now`).
fn show_programs(whole: &Config, now: &Config, subject: &Subject) {
    for (name, server) in &whole.mcp_servers {
        let held =
            if now.mcp_servers.contains_key(name) { "" } else { " (held: starts once the workspace is trusted)" };
        let name = printable(name);
        match server.launch(&subject.workspace) {
            Ok(ServerLaunch::Stdio(spec)) => {
                outln!("  server:     {name} [{}]{held}", printable(&spec.shown()));
                for (k, v) in &spec.env_written {
                    outln!("    env       {}={}", printable(k), printable(&masked(k, v)));
                }
                show_protection(server, subject);
            }
            Ok(ServerLaunch::Http(spec)) => {
                outln!("  server:     {name} {}{held}", printable(&spec.url));
                for (k, v) in &spec.headers_written {
                    outln!("    header    {}: {}", printable(k), printable(&masked(k, v)));
                }
                if let Some(var) = &spec.bearer_token_env {
                    outln!("    header    Authorization: Bearer ${{{}}}", printable(var));
                }
            }
            Err(e) => outln!("  server:     {name} not started: {}{held}", printable(&e.to_string())),
        }
    }
}

/// What is kept from tools for a stdio server: the paths no tool writes, and the patterns
/// whose writes wait for a person in every mode (what its interpreter loads from the
/// workspace, or from beside a script at the root).
fn show_protection(server: &toolhost::policy::McpServerConfig, subject: &Subject) {
    let Some(hook) = server.as_hook() else { return };
    let home = std::env::var_os("HOME").map(std::path::PathBuf::from);
    let Ok(p) = toolhost::policy::hook_protection(&hook, &subject.workspace, home.as_deref()) else { return };
    for path in &p.paths {
        outln!("    protects  {}", printable(&pins::shown(path, subject)));
    }
    for a in &p.ask {
        outln!("    asks      {} ({})", printable(&a.pattern), printable(&a.why));
    }
}

/// A value as written, or masked when it may be a secret: one that names no variable under a
/// name that sounds like a credential (`TOKEN`, `KEY`, `SECRET`, `PASSWORD`, `AUTH`, …).
fn masked(name: &str, value: &str) -> String {
    let upper = name.to_ascii_uppercase();
    let secret =
        ["TOKEN", "KEY", "SECRET", "PASS", "AUTH", "CRED", "COOKIE", "SESSION"].iter().any(|w| upper.contains(w));
    let only_variables = value.starts_with("${") && value.ends_with('}') && !value[2..].contains("${");
    if secret && !only_variables {
        format!("••• ({} characters, masked)", value.chars().count())
    } else {
        value.to_string()
    }
}
