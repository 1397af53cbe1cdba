//! `toolhost inspect FILE.wasm`: what a component is, without loading it into a runtime.

use crate::setup::{self, GlobalArgs};
use anyhow::Result;
use clap::Args;
use std::path::PathBuf;
use toolhost::{EngineOptions, ToolEngine, ToolSource};

#[derive(Args, Debug)]
pub struct InspectCommand {
    /// The component.
    file: PathBuf,
    /// Print JSON.
    #[arg(long)]
    json: bool,
}

impl InspectCommand {
    pub async fn execute(self, _global: &GlobalArgs) -> Result<u8> {
        let engine = ToolEngine::new(&EngineOptions::default())?;
        let source = ToolSource::file(&self.file)?;
        let cache = setup::cache_dir();
        let i = toolhost::inspect(&engine, &source, cache.as_deref()).await?;
        if self.json {
            crate::output::outln!("{}", serde_json::to_string_pretty(&i)?);
            return Ok(0);
        }
        crate::output::outln!("file:        {}", self.file.display());
        crate::output::outln!("size:        {} bytes", i.size);
        crate::output::outln!("sha256:      {}", i.sha256);
        crate::output::outln!("name:        {}", i.info.name);
        crate::output::outln!("read-only:   {}", i.info.read_only);
        crate::output::outln!("subject:     {}", i.info.permission_subject.as_deref().unwrap_or("(none)"));
        let ceiling: Vec<String> = i.info.capabilities.iter().map(ToString::to_string).collect();
        crate::output::outln!(
            "ceiling:     {}",
            if ceiling.is_empty() { "nothing".into() } else { ceiling.join(", ") }
        );
        crate::output::outln!("imports:");
        for name in &i.imports {
            crate::output::outln!("  {name}");
        }
        crate::output::outln!("exports:");
        for name in &i.exports {
            crate::output::outln!("  {name}");
        }
        crate::output::outln!("description:\n  {}", i.info.description.replace('\n', "\n  "));
        crate::output::outln!("input schema:\n{}", serde_json::to_string_pretty(&i.info.input_schema)?);
        Ok(0)
    }
}
