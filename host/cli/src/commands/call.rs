//! `toolhost call TOOL [JSON|-]`: one call through the whole pipeline.

use crate::setup::{self, GlobalArgs};
use anyhow::{Context, Result};
use clap::Args;
use std::io::Read;
use std::path::PathBuf;
use toolhost::{CallOptions, ContentBlock, Session, ToolUse};

#[derive(Args, Debug)]
pub struct CallCommand {
    /// The tool's name.
    tool: String,
    /// The input object as JSON, or `-` to read it from stdin (default: `{}`).
    input: Option<String>,
    /// Print the Messages-API tool_result block as JSON.
    #[arg(long)]
    json: bool,
    /// The tool_use id to answer.
    #[arg(long, default_value = "toolu_cli")]
    id: String,
    /// Keep the session's context map in FILE between calls (so Edit works after Read).
    #[arg(long, value_name = "FILE")]
    session: Option<PathBuf>,
    /// Write the call's trace to FILE as a JSON line: each step's time (schema, validate,
    /// hooks, permission, instantiate, call), the tool's progress messages and stderr, and a
    /// trap's guest backtrace. `-v` prints the same on stderr.
    #[arg(long, value_name = "FILE")]
    trace: Option<PathBuf>,
}

impl CallCommand {
    pub async fn execute(self, global: &GlobalArgs) -> Result<u8> {
        let text = match self.input.as_deref() {
            None => "{}".to_string(),
            Some("-") => {
                let mut s = String::new();
                std::io::stdin().read_to_string(&mut s).context("reading the input from stdin")?;
                s
            }
            Some(s) => s.to_string(),
        };
        let input: serde_json::Value =
            serde_json::from_str(&text).with_context(|| format!("the input is not valid JSON: {text:?}"))?;
        let mut global = global.clone();
        if let Some(path) = &self.session {
            global.protect.push((path.clone(), "the session file in use".into()));
        }
        if let Some(path) = &self.trace {
            global.protect.push((path.clone(), "the trace file in use".into()));
        }
        let loaded = setup::load_traced(&global, global.verbose > 0, self.trace.as_deref()).await?;
        let session = match &self.session {
            Some(path) if path.symlink_metadata().is_ok() => {
                let text = setup::read_own_file(path).with_context(|| format!("reading session {}", path.display()))?;
                let saved: toolhost::SavedSession = serde_json::from_str(&text).with_context(|| {
                    format!(
                        "session file {} is not a toolhost session (an object with `context` and `allowed`)",
                        path.display()
                    )
                })?;
                Session::restore(saved)
            }
            _ => Session::new(),
        };
        let cancel = setup::cancel_on_signal();
        let call = ToolUse::new(self.id, self.tool, input);
        let result = loaded.runtime.call(&session, &call, CallOptions::new().cancel(cancel)).await;
        if let Some(path) = &self.session {
            let text = serde_json::to_string_pretty(&session.save())?;
            setup::replace_file(path, text.as_bytes())
                .with_context(|| format!("writing session {}", path.display()))?;
        }
        if self.json {
            crate::output::outln!("{}", serde_json::to_string(&result)?);
        } else {
            // The tool's words as they are for a pipe; at a terminal, no escape sequences.
            let terminal = std::io::IsTerminal::is_terminal(&std::io::stdout());
            for block in &result.content {
                match block {
                    ContentBlock::Text { text } if terminal => {
                        crate::output::outln!("{}", setup::printable_lines(text))
                    }
                    ContentBlock::Text { text } => crate::output::outln!("{text}"),
                    ContentBlock::Image { source } => {
                        crate::output::outln!("[image {} ({} base64 characters)]", source.media_type, source.data.len())
                    }
                }
            }
        }
        setup::hand_off_optimizing(&global, &loaded.runtime);
        Ok(if result.is_error { crate::output::EXIT_TOOL_ERROR } else { 0 })
    }
}
