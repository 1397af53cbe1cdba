//! `toolhost inspect FILE.wasm`: what a component is, and what it would be granted here
//! (under the config and workspace of this command line), without running it.

use crate::setup::{self, GlobalArgs};
use anyhow::Result;
use clap::Args;
use serde::Serialize;
use std::path::PathBuf;
use toolhost::{EngineOptions, Runtime, ToolEngine, ToolSource};

#[derive(Args, Debug)]
pub struct InspectCommand {
    /// The component.
    file: PathBuf,
    /// Print JSON.
    #[arg(long)]
    json: bool,
}

/// What the tool gets when loaded here, as `list` would show it.
#[derive(Serialize)]
struct Granted {
    /// The effective grant (ceiling ∩ the operator's grant).
    grant: Vec<String>,
    /// The network patterns within it (empty: no name lookups, sockets or HTTP at all).
    net: Vec<String>,
    /// `config` if the config has a `grant` for this tool, else `default`.
    grant_from: toolhost::GrantFrom,
}

/// Load the component into a runtime built like every other command's (same config, same
/// workspace, no other tools): the grant comes from the code that decides it for real, and
/// a grant the loader would refuse (beyond the ceiling, a malformed pattern) is reported as
/// the loader words it.
async fn granted_here(global: &GlobalArgs, engine: &ToolEngine, source: ToolSource) -> Result<Granted, String> {
    let config = setup::load_config(global).map_err(|e| format!("{e:#}"))?;
    let workspace = setup::workspace(global).map_err(|e| format!("{e:#}"))?;
    let mut builder = Runtime::builder().engine(engine.clone()).workspace(workspace).config(config);
    if let Some(dir) = setup::cache_dir() {
        builder = builder.cache_dir(dir);
    }
    let mut runtime = builder.build().map_err(|e| format!("{:#}", anyhow::Error::new(e)))?;
    let name = runtime.load(source).await.map_err(|e| format!("{:#}", anyhow::Error::new(e)))?;
    let tool = runtime.tool(&name).ok_or_else(|| format!("{name} did not stay loaded"))?;
    Ok(Granted {
        grant: tool.effective.capabilities().iter().map(ToString::to_string).collect(),
        net: tool.effective.net.clone(),
        grant_from: tool.grant_from,
    })
}

/// Who signed the file (its `FILE.sig`), under this config's `[signatures]`.
fn file_signer(global: &GlobalArgs, file: &std::path::Path, sha256: &str) -> String {
    let sig_file = std::path::PathBuf::from(format!("{}.sig", file.display()));
    let signature = match std::fs::read(&sig_file) {
        Ok(bytes) => match toolhost_registry::sign::Signature::from_json(&bytes) {
            Ok(s) => Some(s),
            Err(e) => return format!("refused: {}: {e}", sig_file.display()),
        },
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        // There is a signature, but it cannot be read: not "unsigned".
        Err(e) => return format!("unknown: {} cannot be read: {e}", sig_file.display()),
    };
    // Judged under the config's [signatures], never under a default one standing in for a config
    // that does not parse.
    let trust = match setup::load_config(global) {
        Ok(config) => config.signatures,
        Err(e) => return format!("unknown: the config cannot be read, so its [signatures] is not known: {e:#}"),
    };
    let source = toolhost_policy::ToolRef::File(file.to_path_buf());
    let verdict = toolhost_registry::sign::judge(signature.as_ref(), &format!("sha256:{sha256}"), &source, &trust);
    match verdict {
        Ok(s) => s.to_string(),
        Err(e) => format!("refused: {e}"),
    }
}

fn list_or(items: &[String], none: &str) -> String {
    if items.is_empty() { none.to_string() } else { items.join(", ") }
}

impl InspectCommand {
    pub async fn execute(self, global: &GlobalArgs) -> Result<u8> {
        let engine = ToolEngine::new(&EngineOptions::default())?;
        let source = ToolSource::file(&self.file)?;
        let cache = setup::cache_dir();
        let i = toolhost::inspect(&engine, &source, cache.as_deref()).await?;
        let here = granted_here(global, &engine, source).await;
        let signer = file_signer(global, &self.file, &i.sha256);
        if self.json {
            let mut v = serde_json::to_value(&i)?;
            match &here {
                Ok(g) => v["granted"] = serde_json::to_value(g)?,
                Err(e) => v["grant_error"] = e.clone().into(),
            }
            v["signer"] = signer.clone().into();
            crate::output::outln!("{}", serde_json::to_string_pretty(&v)?);
            return Ok(0);
        }
        crate::output::outln!("file:        {}", self.file.display());
        crate::output::outln!("size:        {} bytes", i.size);
        crate::output::outln!("sha256:      {}", i.sha256);
        if i.tools.len() > 1 {
            // A component of several functions: one tool each (listed below), and the first
            // is the one the lines about grants describe.
            let names: Vec<&str> = i.tools.iter().map(|t| t.name.as_str()).collect();
            crate::output::outln!("tools:       {} ({})", names.len(), names.join(", "));
            crate::output::outln!("kind:        function (schema from {})", i.info.kind.schema_from());
        } else {
            crate::output::outln!("name:        {}", i.info.name);
            crate::output::outln!("kind:        {} (schema from {})", i.info.kind, i.info.kind.schema_from());
        }
        crate::output::outln!("signer:      {signer}");
        crate::output::outln!("read-only:   {}", i.info.read_only);
        crate::output::outln!(
            "subject:     {}",
            crate::setup::printable(i.info.permission_subject.as_deref().unwrap_or("(none)"))
        );
        let ceiling: Vec<String> = i.info.capabilities.iter().map(ToString::to_string).collect();
        if i.info.kind.describes_itself() {
            crate::output::outln!("ceiling:     {}", crate::setup::printable(&list_or(&ceiling, "nothing")));
        } else {
            crate::output::outln!("ceiling:     none (the grant alone decides)");
        }
        match &here {
            Ok(g) => {
                crate::output::outln!("granted:     {} ({} grant)", list_or(&g.grant, "nothing"), g.grant_from);
                crate::output::outln!("network:     {}", list_or(&g.net, "none (no name lookups, sockets or HTTP)"));
            }
            Err(e) => crate::output::outln!("granted:     would not load here: {e}"),
        }
        crate::output::outln!("imports:");
        for name in &i.imports {
            crate::output::outln!("  {name}");
        }
        crate::output::outln!("exports:");
        for name in &i.exports {
            crate::output::outln!("  {name}");
        }
        for refused in &i.refused {
            crate::output::outln!("refused:     {}", crate::setup::printable(&refused.to_string()));
        }
        for tool in &i.tools {
            if i.tools.len() > 1 {
                crate::output::outln!("\ntool {} ({}):", tool.name, tool.kind);
            }
            crate::output::outln!(
                "description:\n  {}",
                crate::setup::printable_lines(&tool.description).replace('\n', "\n  ")
            );
            crate::output::outln!("input schema:\n{}", serde_json::to_string_pretty(&tool.input_schema)?);
        }
        Ok(0)
    }
}
