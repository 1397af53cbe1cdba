//! `toolhost list`: the loaded tools, their ceilings and what they are granted.

use crate::setup::{self, GlobalArgs};
use anyhow::Result;
use clap::Args;
use serde_json::json;

#[derive(Args, Debug)]
pub struct ListCommand {
    /// Print JSON: every tool with its schema, ceiling, grant and limits.
    #[arg(long)]
    json: bool,
}

fn caps(c: &[toolhost::policy::Capability]) -> String {
    if c.is_empty() { "nothing".into() } else { c.iter().map(ToString::to_string).collect::<Vec<_>>().join(", ") }
}

fn strings(c: &[toolhost::policy::Capability]) -> Vec<String> {
    c.iter().map(ToString::to_string).collect()
}

/// Whether two lists name the same capabilities, in any order.
fn same(a: &[toolhost::policy::Capability], b: &[toolhost::policy::Capability]) -> bool {
    let set = |c| strings(c).into_iter().collect::<std::collections::BTreeSet<_>>();
    set(a) == set(b)
}

impl ListCommand {
    pub async fn execute(self, global: &GlobalArgs) -> Result<u8> {
        let loaded = setup::load(global, false).await?;
        let rt = &loaded.runtime;
        // Already read (and checked) by `setup::load`; here only to tell where a grant comes from.
        let config = setup::load_config(global)?;
        // Installed tools: who signed them, as the lock and [trust] say.
        let lock = crate::install::lock_for(global).map(|(_, l)| l).unwrap_or_default();
        let signer = |tool: &str| crate::install::signer_shown(&config, tool, &lock);
        let grant_from = |tool: &str| {
            if config.tools.get(tool).and_then(|t| t.grant()).is_some() { "config" } else { "default" }
        };
        if self.json {
            let tools: Vec<_> = rt
                .tools()
                .map(|t| {
                    json!({
                        "name": t.info.name,
                        "description": t.info.description,
                        "input_schema": t.info.input_schema,
                        "read_only": t.info.read_only,
                        "permission_subject": t.info.permission_subject,
                        "ceiling": t.info.capabilities.iter().map(ToString::to_string).collect::<Vec<_>>(),
                        "grant": strings(&t.effective.capabilities()),
                        "operator_grant": strings(&t.grant.capabilities(rt.workspace())),
                        "operator_grant_from": grant_from(&t.info.name),
                        "origin": t.origin.to_string(),
                        "signer": signer(&t.info.name),
                        "sha256": t.sha256,
                        "size": t.size,
                        "limits": t.limits,
                        "warnings": t.warnings,
                    })
                })
                .collect();
            let out = json!({ "workspace": rt.workspace(), "tools": tools, "load_errors": loaded.load_errors });
            crate::output::outln!("{}", serde_json::to_string_pretty(&out)?);
        } else {
            crate::output::outln!("workspace: {}", rt.workspace().display());
            for t in rt.tools() {
                let kind = if t.info.read_only { "read-only" } else { "read-write" };
                crate::output::outln!("\n{} ({kind}, {})", t.info.name, t.origin);
                let first = t.info.description.lines().next().unwrap_or("");
                crate::output::outln!("  {first}");
                crate::output::outln!("  ceiling: {}", caps(&t.info.capabilities));
                crate::output::outln!("  granted: {}", caps(&t.effective.capabilities()));
                if let Some(signer) = signer(&t.info.name) {
                    crate::output::outln!("  signer: {signer}");
                }
                // What the operator asked for, when the ceiling (or a missing directory) cut it.
                let asked = t.grant.capabilities(rt.workspace());
                if !same(&asked, &t.effective.capabilities()) {
                    crate::output::outln!("  grant ({}): {}", grant_from(&t.info.name), caps(&asked));
                }
                for warning in &t.warnings {
                    crate::output::outln!("  warning: {warning}");
                }
            }
            if !loaded.load_errors.is_empty() {
                crate::output::outln!("\n{} tool(s) failed to load (see the warnings above)", loaded.load_errors.len());
            }
        }
        Ok(0)
    }
}
