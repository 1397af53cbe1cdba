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
            println!("{}", serde_json::to_string_pretty(&i)?);
            return Ok(0);
        }
        println!("file:        {}", self.file.display());
        println!("size:        {} bytes", i.size);
        println!("sha256:      {}", i.sha256);
        println!("name:        {}", i.info.name);
        println!("read-only:   {}", i.info.read_only);
        println!("subject:     {}", i.info.permission_subject.as_deref().unwrap_or("(none)"));
        let ceiling: Vec<String> = i.info.capabilities.iter().map(ToString::to_string).collect();
        println!("ceiling:     {}", if ceiling.is_empty() { "nothing".into() } else { ceiling.join(", ") });
        println!("imports:");
        for name in &i.imports {
            println!("  {name}");
        }
        println!("exports:");
        for name in &i.exports {
            println!("  {name}");
        }
        println!("description:\n  {}", i.info.description.replace('\n', "\n  "));
        println!("input schema:\n{}", serde_json::to_string_pretty(&i.info.input_schema)?);
        Ok(0)
    }
}
