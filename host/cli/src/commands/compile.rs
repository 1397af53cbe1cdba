//! `toolhost compile`: make the optimised (Cranelift) code of every configured tool now, into
//! the compile cache, instead of at the tools' first calls: a CI step after restoring the cache,
//! a container image's build, or in the background after `add`, `update`, or a call that ran
//! baseline code (see `setup::compile_in_background`).

use crate::output::outln;
use crate::setup::{self, GlobalArgs};
use anyhow::Result;
use clap::Args;
use std::time::Instant;

#[derive(Args, Debug)]
pub struct CompileCommand {
    /// Return at once and compile in a detached process of lower priority.
    #[arg(long)]
    background: bool,
    /// Print one JSON object per tool instead of a line.
    #[arg(long)]
    json: bool,
    /// Run at a lower scheduling priority (what `--background` starts).
    #[arg(long, hide = true)]
    low_priority: bool,
}

impl CompileCommand {
    pub async fn execute(self, global: &GlobalArgs) -> Result<u8> {
        if self.background {
            setup::compile_in_background(global);
            return Ok(0);
        }
        if self.low_priority {
            setup::lower_priority();
        }
        // Cranelift directly: waiting for the baseline tier first would only add its compile.
        let mut global = global.clone();
        global.no_tiering = true;
        let loaded = setup::load_unpinned(&global).await?;
        for e in &loaded.load_errors {
            eprintln!("warning: {e}");
        }
        let mut failed = false;
        let names: Vec<String> = loaded.runtime.tools().map(|t| t.info.name.clone()).collect();
        for name in names {
            let started = Instant::now();
            let Some(made) = loaded.runtime.ready_code(&name).await else { continue };
            let ms = started.elapsed().as_secs_f64() * 1000.0;
            failed |= made.is_err();
            match (self.json, made) {
                (true, made) => outln!(
                    "{}",
                    serde_json::json!({
                        "tool": name,
                        "tier": made.as_ref().ok(),
                        "error": made.as_ref().err().map(|e| toolhost::error_text(e)),
                        "ms": (ms * 10.0).round() / 10.0,
                    })
                ),
                (false, Ok(tier)) => outln!("{name}: {tier} code ready ({ms:.0} ms)"),
                (false, Err(e)) => outln!("{name}: cannot be compiled: {}", toolhost::error_text(&e)),
            }
        }
        Ok(if failed || !loaded.load_errors.is_empty() { crate::output::EXIT_TOOL_ERROR } else { 0 })
    }
}
