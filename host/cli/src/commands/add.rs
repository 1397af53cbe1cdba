//! `toolhost add REF [--name N] [--version REQ]`: fetch a tool (OCI registry, https URL or
//! file), verify it, show what it is and what it may touch, keep it in the store, and record it
//! in `toolhost.toml` (an appended `[tools.N] source`, and `version`) and `toolhost.lock`. With
//! `--version`, the newest tag of the repository that is a semantic version matching REQ is
//! installed, and `toolhost update` later moves within REQ.

use crate::install;
use crate::setup::{self, GlobalArgs};
use anyhow::{Context, Result, bail};
use clap::Args;
use std::path::Path;
use toolhost_policy::{Capability, Config, ToolRef};
use toolhost_registry::sign::UncoveredPolicy;

#[derive(Args, Debug)]
pub struct AddCommand {
    /// `oci://REGISTRY/REPOSITORY:TAG`, `…@sha256:…`, `https://…` or a .wasm file.
    reference: String,
    /// The name the tool goes by here (default: the name it declares).
    #[arg(long)]
    name: Option<String>,
    /// Choose the newest tag that is a semantic version matching this requirement (`^1.2`,
    /// `~1.4`, `>=1, <3`); REF then names no tag.
    #[arg(long, value_name = "REQ")]
    version: Option<semver::VersionReq>,
    /// Let the tool take the name of an embedded default tool (`Read`, `Write`, …) and replace
    /// it; the capabilities of both are shown. Without it such a name is refused.
    #[arg(long)]
    replace: bool,
    /// For a function component (one tool per exported function): which function to install,
    /// as its tool name or `INTERFACE#FUNCTION`; written as `[tools.N] function`.
    #[arg(long)]
    function: Option<String>,
    /// Install a signed tool whose policy file its signature does not cover (added, changed
    /// or removed after signing, or beside a first-format signature) as it is published
    /// (needed without a terminal; on one, the grant is shown and asked about).
    #[arg(long)]
    accept_policy: bool,
}

impl AddCommand {
    pub async fn execute(self, global: &GlobalArgs) -> Result<u8> {
        let source: ToolRef = self.reference.parse()?;
        if self.version.is_some() {
            match &source {
                ToolRef::Oci(r) if r.digest.is_none() && r.tag.as_deref().is_none_or(|t| t == "latest") => {}
                ToolRef::Oci(r) => bail!(
                    "--version chooses the tag: give the repository without a tag or digest (oci://{}/{})",
                    r.registry,
                    r.repository
                ),
                other => bail!("--version needs an oci:// repository to choose tags from, not {other}"),
            }
        }
        let config_file = setup::config_file(global);
        if setup::locked(global) {
            bail!(
                "`toolhost add` changes toolhost.toml and toolhost.lock, which --locked (or CI=true) forbids; \
                 run it without --locked and commit both files"
            );
        }
        let text = match std::fs::read_to_string(&config_file) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
            Err(e) => return Err(e).with_context(|| format!("reading {}", config_file.display())),
        };
        let config = Config::parse(&text, &config_file)?;
        let workspace = setup::workspace(global)?;
        let version = self.version.as_ref();
        let function = self.function.as_deref();
        let c = install::candidate(&config, &config_file, self.name.as_deref(), function, &source, version, &workspace)
            .await?;
        let name = self.name.clone().unwrap_or_else(|| c.inspection.info.name.clone());
        // A name an embedded tool has: the new tool would replace it wherever rules, hooks and
        // habits name it (a config that allows `Read` would let a writing `Read` write).
        let replaced = match toolhost_default_tools::get(&name) {
            Some(bytes) if !config.tools.contains_key(&name) => Some(bytes),
            _ => None,
        };
        if let Some(bytes) = replaced {
            let by = if self.name.is_some() { "the name given" } else { "the name it declares" };
            if !self.replace {
                bail!(
                    "{name} ({by}) is an embedded default tool: this tool would replace it, and every rule and \
                     hook that names {name} would then apply to it; give it another name with --name, or pass \
                     --replace to replace {name}"
                );
            }
            let old = install::describe(&name, bytes).await?;
            let caps = |i: &toolhost::Inspection| i.info.capabilities.clone();
            let grant = |i: &toolhost::Inspection| {
                toolhost_registry::installed::capabilities(&toolhost_registry::installed::effective(
                    &config,
                    &name,
                    &caps(i),
                    i.info.read_only,
                    &workspace,
                ))
            };
            let diff = toolhost_registry::CapabilityDiff::new(
                &caps(&old),
                &caps(&c.inspection),
                &grant(&old),
                &grant(&c.inspection),
                &workspace,
            );
            crate::output::outln!("Replacing the embedded tool {name}; its capabilities against this one's:");
            for line in diff.render().lines() {
                crate::output::outln!("{}", crate::setup::printable(line));
            }
            if !c.inspection.info.read_only && old.info.read_only {
                crate::output::outln!("  read-only: yes → no (rules for read-only tools no longer cover it)");
            }
        }
        // A file's policy file (`NAME.policy.yaml` beside it), or the policy layer published with
        // an OCI artifact, is installed as the entry's grant: the store keeps only the
        // component, and a grant in the config is one the operator sees and `update` compares.
        let new_entry = !config.tools.contains_key(&name);
        let policy = match &source {
            _ if !new_entry => None,
            ToolRef::File(_) => c.published_grant()?.map(|g| (format!("Its policy file {}", c.policy_label), g)),
            _ => c.published_grant()?.map(|g| ("The policy file published with it".to_string(), g)),
        };
        // A policy file its signature does not cover is not the signer's word: it is applied
        // (or, removed, its absence accepted) only on a person's yes.
        let uncovered = c.uncovered_policy.clone().filter(|_| new_entry);
        let (lock_path, mut lock) = setup::lock_for(global)?;
        let new_text = match config.tools.get(&name) {
            Some(t)
                if t.source.as_ref().is_some_and(|s| *s.get_ref() == source)
                    && t.version.as_ref().map(|v| v.get_ref()) == version =>
            {
                text.clone()
            }
            Some(_) => bail!(
                "{} already has [tools.{name}]; choose another name with --name, or run `toolhost update {name}`",
                config_file.display()
            ),
            None => install::append_tool(&text, &name, &source, version, function, policy.as_ref().map(|(_, g)| g)),
        };
        let new_config =
            Config::parse(&new_text, &config_file).context("the config would not parse after adding the tool")?;
        let mut c = c;
        if let Some((what, _)) = &policy {
            match &uncovered {
                None => crate::output::outln!("{what} becomes [tools.{name}] grant"),
                Some(_) => crate::output::outln!("{what} would become [tools.{name}] grant"),
            }
            c.entry.grant = install::locked_grant(&new_config, &name, &c.inspection.info, &workspace);
        }

        crate::output::outln!("Fetched {}", c.entry.resolved);
        install::show(&c.inspection, &c.entry.grant, &c.signer);
        if let Some(why) = &uncovered {
            let asks = policy.as_ref().map(|(_, g)| g.capabilities(&workspace));
            self.accept_uncovered_policy(&name, why, asks.as_deref(), &config_file)?;
        }
        setup::store()?.put(&c.bytes)?;
        if new_text != text {
            setup::replace_file(&config_file, new_text.as_bytes())?;
        }
        lock.tools.insert(name.clone(), c.entry);
        lock.write(&lock_path)?;
        crate::output::outln!("Added [tools.{name}] to {} and {}", config_file.display(), lock_path.display());
        // Its optimised code, ready in the cache by the time it is first called, often.
        setup::compile_in_background(global);
        Ok(0)
    }

    /// A signed tool whose policy file its signature does not cover: said, and then accepted
    /// with `--accept-policy` or a yes on the terminal; otherwise refused with nothing written
    /// (installing it without that grant would give it the default grant instead, which may
    /// be wider than the one its signer signed).
    fn accept_uncovered_policy(
        &self,
        name: &str,
        why: &UncoveredPolicy,
        asks: Option<&[Capability]>,
        config_file: &Path,
    ) -> Result<()> {
        let effect = match asks {
            None => "without it, it gets the grant shown above".to_string(),
            Some(caps) => {
                let caps: Vec<String> = caps.iter().map(ToString::to_string).collect();
                format!("it asks for [{}]", crate::setup::printable(&caps.join(", ")))
            }
        };
        crate::output::outln!("  policy:      not covered by the signature: {why}; {effect}  (needs your yes)");
        let question = match why {
            UncoveredPolicy::Removed { .. } => format!("Install {name} without the policy file its signer signed?"),
            _ => format!("Write the grant of a policy file its signer did not sign into [tools.{name}]?"),
        };
        if self.accept_policy || tokio::task::block_in_place(|| install::confirm(&question))? {
            return Ok(());
        }
        bail!(
            "{}: {why}; not installed, nothing written. Run `toolhost add {} --accept-policy` to install it as \
             published, or give it a grant of your own: add [tools.{name}] with `source` and `grant` to {} and run \
             `toolhost update {name}`",
            self.reference,
            self.reference,
            config_file.display()
        )
    }
}
