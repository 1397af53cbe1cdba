//! `toolhost update [NAME] [--accept-capabilities]`: fetch what each installed tool's source
//! names now (with a `version`, the newest tag it allows) and, when it changed, show the capability diff (ceiling and effective grant, old
//! → new) before changing anything. A widening needs a yes on a terminal, or
//! `--accept-capabilities`; a narrowing applies without asking. A signed tool stays signed: a
//! new version that the locked signer did not sign (unsigned, or signed by another key) needs a
//! yes on a terminal, or `--accept-signer`; the same bytes keep their locked signature.
//!
//! With `--locked` (or `CI=true`) nothing in the lock changes: every tool is fetched exactly
//! as locked (by digest) into the store, so a second machine gets the same bytes, and any drift
//! (a tag that moved, an entry missing or for another source) is reported with the command
//! that fixes it, and fails the command.

use crate::install;
use crate::setup::{self, GlobalArgs};
use anyhow::{Context, Result, bail};
use clap::Args;
use semver::VersionReq;
use toolhost_policy::ToolRef;
use toolhost_registry::CapabilityDiff;

#[derive(Args, Debug)]
pub struct UpdateCommand {
    /// Only this tool (default: every tool with a `source`).
    name: Option<String>,
    /// Accept a new version that may do more than the locked one (needed without a terminal).
    #[arg(long)]
    accept_capabilities: bool,
    /// Accept a new version of a signed tool that its locked signer did not sign (needed
    /// without a terminal).
    #[arg(long)]
    accept_signer: bool,
}

impl UpdateCommand {
    pub async fn execute(self, global: &GlobalArgs) -> Result<u8> {
        let config_file = setup::config_file(global);
        let config = setup::load_config(global)?;
        let workspace = setup::workspace(global)?;
        let (lock_path, mut lock) = setup::lock_for(global)?;
        let store = setup::store()?;
        let locked = setup::locked(global);
        let tools: Vec<(String, ToolRef, Option<VersionReq>)> = config
            .tools
            .iter()
            .filter(|(n, _)| self.name.as_ref().is_none_or(|want| want == *n))
            .filter_map(|(n, t)| {
                Some((n.clone(), t.source.as_ref()?.get_ref().clone(), t.version.as_ref().map(|v| v.get_ref().clone())))
            })
            .collect();
        if tools.is_empty() {
            match &self.name {
                Some(n) => bail!("{} has no [tools.{n}] with a `source`", config_file.display()),
                None => {
                    crate::output::outln!("no installed tools (`[tools.NAME] source`) in {}", config_file.display())
                }
            }
        }
        let mut drift = Vec::new();
        let mut refused = Vec::new();
        let mut updated = false;
        for (name, source, version) in tools {
            let wanted = version.as_ref().map(ToString::to_string);
            let old = lock.tools.get(&name).filter(|e| e.source == source.to_string() && e.version == wanted).cloned();
            if locked {
                let Some(old) = old else {
                    drift.push(format!("{name}: {source} is not in toolhost.lock; run `toolhost update {name}`"));
                    continue;
                };
                // Exactly what the lock names, by digest, so this machine gets the same bytes.
                let exact: ToolRef = match &source {
                    ToolRef::Oci(_) => old.resolved.parse()?,
                    other => other.clone(),
                };
                let c = install::candidate(&config, &config_file, Some(&name), None, &exact, None, &workspace).await?;
                if c.entry.component != old.component {
                    drift.push(format!(
                        "{name}: {source} now has {} (locked: {}); run `toolhost update {name}`",
                        c.entry.component, old.component
                    ));
                    continue;
                }
                store.put(&c.bytes)?;
                if let ToolRef::Oci(r) = &source {
                    let access = install::access(&config)?;
                    let at = install::choose_tag(r, version.as_ref(), &access).await?;
                    if let Ok(now) = toolhost_registry::oci::resolve(&at, &access).await
                        && !old.resolved.ends_with(&now)
                    {
                        drift.push(format!(
                            "{name}: {at} now points to {now} (locked: {}); run `toolhost update {name}` to take it",
                            old.resolved
                        ));
                        continue;
                    }
                }
                crate::output::outln!("{name}: {} (as locked)", old.resolved);
                continue;
            }
            let mut c =
                install::candidate(&config, &config_file, Some(&name), None, &source, version.as_ref(), &workspace)
                    .await
                    .with_context(|| format!("updating {name}"))?;
            // The same bytes fetched without their signature keep the locked one (it signs the
            // digest, which has not changed, and the policy file it signed with it).
            if let Some(old) = &old
                && old.component == c.entry.component
                && old.signer.is_some()
                && c.entry.signer.is_none()
            {
                c.entry.signer.clone_from(&old.signer);
                c.entry.signature.clone_from(&old.signature);
                c.entry.signed_policy.clone_from(&old.signed_policy);
            }
            // A signed tool whose new version its locked signer did not sign.
            let signer_change = old.as_ref().filter(|o| o.signer.is_some() && o.signer != c.entry.signer).map(|o| {
                toolhost_registry::installed::signer(&config, &source, o)
                    .map_or_else(|e| format!("refused: {e}"), |s| s.to_string())
            });
            // A policy file published with the new version never changes the config by itself:
            // the operator's grant stays, and a difference is pointed out.
            let policy_note = match c.published_grant() {
                // It is not applied anyway: a broken one is said, not a reason to refuse.
                Err(e) => Some(format!("  its published policy file is not used: {e:#}")),
                Ok(Some(published)) if config.tools.get(&name).and_then(|t| t.grant()) != Some(&published) => {
                    let asks: Vec<String> =
                        published.capabilities(&workspace).iter().map(ToString::to_string).collect();
                    Some(match &c.uncovered_policy {
                        // Not the signer's word: no advice to follow it.
                        Some(why) => format!(
                            "  its published policy file asks for [{}], but {why}: it is not the signer's; \
                             [tools.{name}] grant stays as written",
                            asks.join(", ")
                        ),
                        None => format!(
                            "  its published policy file asks for [{}]: [tools.{name}] grant stays as written (edit \
                             it to follow)",
                            asks.join(", ")
                        ),
                    })
                }
                _ => None,
            };
            if let Some(old) = &old
                && old.component == c.entry.component
                && old.grant == c.entry.grant
                && signer_change.is_none()
            {
                store.put(&c.bytes)?;
                // The same bytes and grant (re-tagged, or re-signed): nothing to ask.
                if *old != c.entry {
                    lock.tools.insert(name.clone(), c.entry.clone());
                    lock.write(&lock_path)?;
                }
                crate::output::outln!("{name}: up to date ({})", c.entry.resolved);
                if let Some(note) = &policy_note {
                    crate::output::outln!("{note}");
                }
                continue;
            }
            let old_ceiling =
                old.as_ref().map(|o| toolhost_registry::installed::capabilities(&o.ceiling)).unwrap_or_default();
            let old_grant =
                old.as_ref().map(|o| toolhost_registry::installed::capabilities(&o.grant)).unwrap_or_default();
            let diff = CapabilityDiff::new(
                &old_ceiling,
                &toolhost_registry::installed::capabilities(&c.entry.ceiling),
                &old_grant,
                &toolhost_registry::installed::capabilities(&c.entry.grant),
                &workspace,
            );
            let from = old.as_ref().map_or("nothing locked".to_string(), |o| o.resolved.clone());
            crate::output::outln!("{name}: {from} -> {}", c.entry.resolved);
            if let Some(o) = &old
                && o.declared_name != c.entry.declared_name
            {
                crate::output::outln!("  declared name: {} -> {}", o.declared_name, c.entry.declared_name);
            }
            if let Some(o) = &old
                && o.wit != c.entry.wit
            {
                let shown = |w: &Option<String>| w.clone().unwrap_or_else(|| "unknown".to_string());
                crate::output::outln!("  answers through: {} -> {}", shown(&o.wit), shown(&c.entry.wit));
            }
            match &signer_change {
                Some(was) => {
                    crate::output::outln!("  signer: {was} -> {}  (not the locked signer: needs your yes)", c.signer)
                }
                None => crate::output::outln!("  signer: {}", c.signer),
            }
            // The component's own words (its ceiling) are in the diff: escaped, so that they
            // cannot redraw the question below.
            for line in diff.render().lines() {
                crate::output::outln!("{}", crate::setup::printable(line));
            }
            if let Some(note) = &policy_note {
                crate::output::outln!("{note}");
            }
            if signer_change.is_some()
                && !self.accept_signer
                && !tokio::task::block_in_place(|| {
                    install::confirm(&format!("Accept {name} without its locked signer's signature?"))
                })?
            {
                refused.push(format!(
                    "{name}: the new version is not signed by the locked signer (marked above); not updated. Run \
                     `toolhost update {name} --accept-signer` to accept it"
                ));
                continue;
            }
            // A person's answer may take minutes: the worker this command runs on hands its
            // other tasks over while it waits.
            let question = format!("Accept the wider capabilities of {name}?");
            if diff.widens()
                && !self.accept_capabilities
                && !tokio::task::block_in_place(|| install::confirm(&question))?
            {
                refused.push(format!(
                    "{name}: the new version may do more than the locked one (marked above); not updated. Run \
                     `toolhost update {name} --accept-capabilities` to accept it"
                ));
                continue;
            }
            store.put(&c.bytes)?;
            lock.tools.insert(name.clone(), c.entry);
            lock.write(&lock_path)?;
            crate::output::outln!("{name}: updated");
            updated = true;
        }
        if updated {
            // Its optimised code, ready in the cache by the time it is first called, often.
            setup::compile_in_background(global);
        }
        for line in drift.iter().chain(&refused) {
            eprintln!("error: {line}");
        }
        if !drift.is_empty() {
            eprintln!("error: toolhost.lock does not match (refused: --locked, or CI=true)");
        }
        Ok(if drift.is_empty() && refused.is_empty() { 0 } else { crate::output::EXIT_USAGE })
    }
}
