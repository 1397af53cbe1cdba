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

/// What a tool gets, and why, in one line: the grant it gets, then where that grant came from
/// and what narrowed it (its ceiling, or its being read-only), so that a tool granted less
/// than the operator's grant does not read as a contradiction.
fn gets(tool: &toolhost::LoadedTool, workspace: &std::path::Path) -> String {
    let effective = tool.effective.capabilities();
    let asked = tool.grant.capabilities(workspace);
    let from = match tool.grant_from {
        toolhost::GrantFrom::Config => format!("its [tools.{}] grant", tool.info.name),
        toolhost::GrantFrom::PolicyFile => match &tool.policy_file {
            Some(path) => format!("its policy file {}", path.display()),
            None => "its policy file".to_string(),
        },
        toolhost::GrantFrom::Nothing => {
            return format!(
                "nothing: a {} has no ceiling and gets only what it is granted; grant it in [tools.{}] grant \
                 or a policy file beside it",
                tool.info.kind.as_str(),
                tool.info.name
            );
        }
        _ => "the default grant".to_string(),
    };
    if same(&asked, &effective) {
        return format!("{} ({from})", caps(&effective));
    }
    // What the ceiling (and being read-only) leaves of the grant; granted directories that do
    // not exist are then left out at load too.
    let mut capped = toolhost::policy::effective_grant(&tool.info.capabilities, &tool.grant, workspace);
    if tool.info.read_only {
        capped = capped.read_only();
    }
    let missing: Vec<String> = capped
        .dirs
        .iter()
        .filter(|d| !tool.effective.dirs.iter().any(|e| e.path == d.path))
        .map(|d| d.path.display().to_string())
        .collect();
    let capped = capped.capabilities();
    if capped.is_empty() {
        return format!(
            "nothing: {from}, {}, is outside its ceiling; grant what it needs in [tools.{}] grant",
            caps(&asked),
            tool.info.name
        );
    }
    let mut why = Vec::new();
    if !same(&asked, &capped) {
        why.push(if tool.info.read_only {
            "narrowed to reading (a read-only tool) and to its ceiling".to_string()
        } else {
            "narrowed to its ceiling".to_string()
        });
    }
    if !missing.is_empty() {
        why.push(format!("left out because they do not exist: {}", missing.join(", ")));
    }
    format!("{}: {from}, {}, {}", caps(&effective), caps(&asked), why.join("; "))
}

impl ListCommand {
    pub async fn execute(self, global: &GlobalArgs) -> Result<u8> {
        let loaded = setup::load(global, false).await?;
        let rt = &loaded.runtime;
        // Installed tools: who signed them, as the lock and [signatures] say.
        let config = setup::load_config(global)?;
        let lock = crate::setup::lock_for(global).map(|(_, l)| l).unwrap_or_default();
        let signer = |tool: &str| crate::install::signer_shown(&config, tool, &lock);
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
                        "kind": t.info.kind,
                        "schema_from": t.info.kind.schema_from(),
                        "concurrency_safe": (!t.info.kind.describes_itself()).then_some(t.concurrency_safe()),
                        "ceiling": if t.info.kind.describes_itself() {
                            json!(strings(&t.info.capabilities))
                        } else {
                            json!(null)
                        },
                        "grant": strings(&t.effective.capabilities()),
                        "operator_grant": strings(&t.grant.capabilities(rt.workspace())),
                        "operator_grant_from": t.grant_from,
                        "policy_file": t.policy_file,
                        "origin": t.origin.to_string(),
                        "signer": signer(&t.info.name),
                        "sha256": t.sha256,
                        "size": t.size,
                        "code": rt.code_state(&t.info.name),
                        "limits": t.limits,
                        "warnings": t.warnings,
                    })
                })
                .collect();
            let rules: Vec<_> = config
                .rule_origins()
                .into_iter()
                .map(|(kind, rule, from)| json!({ "kind": kind, "rule": rule, "from": from }))
                .collect();
            let hooks: Vec<_> = config
                .hook_origins()
                .into_iter()
                .map(|(event, h, from)| json!({ "event": event, "command": h.command.get_ref(), "from": from }))
                .collect();
            let out = json!({
                "workspace": rt.workspace(),
                "tools": tools,
                "load_errors": loaded.load_errors,
                "rules": rules,
                "hooks": hooks,
                "mcp_tools": rt.remote_tools().iter().map(|t| json!({
                    "name": t.info.name, "description": t.info.description, "input_schema": t.info.input_schema,
                    "read_only": t.info.read_only, "origin": t.origin.to_string(),
                })).collect::<Vec<_>>(),
                "settings_files": config.claude.as_ref().map(|c| c.files.iter().map(|(_, f)| f.display().to_string()).collect::<Vec<_>>()),
            });
            crate::output::outln!("{}", serde_json::to_string_pretty(&out)?);
        } else {
            crate::output::outln!("workspace: {}", rt.workspace().display());
            for t in rt.tools() {
                let access = if t.info.read_only { "read-only" } else { "read-write" };
                let kind = match &t.info.kind {
                    toolhost::ToolKind::Toolhost => String::new(),
                    other => format!("{other}, "),
                };
                crate::output::outln!("\n{} ({kind}{access}, {})", t.info.name, t.origin);
                let first = t.info.description.lines().next().unwrap_or("");
                crate::output::outln!("  {}", crate::setup::printable(first));
                if t.info.kind.describes_itself() {
                    crate::output::outln!("  ceiling: {}", crate::setup::printable(&caps(&t.info.capabilities)));
                } else {
                    crate::output::outln!("  schema: from {}", t.info.kind.schema_from());
                    crate::output::outln!("  ceiling: none (the grant alone decides)");
                }
                crate::output::outln!("  gets: {}", gets(t, rt.workspace()));
                if let Some(signer) = signer(&t.info.name) {
                    crate::output::outln!("  signer: {signer}");
                }
                for warning in &t.warnings {
                    crate::output::outln!("  warning: {}", crate::setup::printable(&warning.to_string()));
                }
            }
            let names: Vec<&str> = rt.tools().map(|t| t.info.name.as_str()).collect();
            for t in rt.remote_tools() {
                crate::output::outln!(
                    "\n{} (mcp, {}, {})",
                    t.info.name,
                    t.origin,
                    if t.info.read_only { "read-only" } else { "read-write" }
                );
                crate::output::outln!("  {}", crate::setup::printable(t.info.description.lines().next().unwrap_or("")));
                crate::output::outln!("  runs outside the sandbox: the server does what it is able to");
            }
            let mut names = names;
            let remote: Vec<String> = rt.remote_tools().iter().map(|t| t.info.name.clone()).collect();
            names.extend(remote.iter().map(String::as_str));
            let rules = crate::claude::rule_lines(&config, Some(&names));
            if !rules.is_empty() {
                crate::output::outln!("\nrules:");
                for line in rules {
                    crate::output::outln!("  {line}");
                }
            }
            let hooks = crate::claude::hook_lines(&config);
            if !hooks.is_empty() {
                crate::output::outln!("\nhooks:");
                for line in hooks {
                    crate::output::outln!("  {line}");
                }
            }
            if !loaded.load_errors.is_empty() {
                crate::output::outln!("\n{} tool(s) failed to load (see the warnings above)", loaded.load_errors.len());
            }
        }
        Ok(0)
    }
}
