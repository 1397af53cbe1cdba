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

impl ListCommand {
    pub async fn execute(self, global: &GlobalArgs) -> Result<u8> {
        let loaded = setup::load(global, false).await?;
        let rt = &loaded.runtime;
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
                        "grant": t.effective.capabilities().iter().map(ToString::to_string).collect::<Vec<_>>(),
                        "origin": t.origin.to_string(),
                        "sha256": t.sha256,
                        "size": t.size,
                        "limits": t.limits,
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
            }
            if !loaded.load_errors.is_empty() {
                crate::output::outln!("\n{} tool(s) failed to load (see the warnings above)", loaded.load_errors.len());
            }
        }
        Ok(0)
    }
}
