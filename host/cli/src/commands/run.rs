//! `toolhost run [FILE|-]`: a whole assistant turn. Input: a Messages-API assistant message
//! (`{"role":"assistant","content":[…]}`), a whole response object (`{"type":"message",…}`),
//! one `tool_use` block, or JSONL with one `tool_use` block per line. Output: the user message
//! of `tool_result`s, in tool_use order (`--jsonl`: one result per line).

use crate::output::outln;
use crate::setup::{self, GlobalArgs};
use anyhow::{Context, Result, bail};
use clap::Args;
use serde_json::{Value, json};
use std::io::Read;
use std::path::PathBuf;
use std::sync::Arc;
use toolhost::{OutcomeKind, Session, ToolResult, ToolUse};

#[derive(Args, Debug)]
pub struct RunCommand {
    /// The input file, or `-` for stdin (the default).
    input: Option<PathBuf>,
    /// Print one tool_result per line instead of one user message.
    #[arg(long)]
    jsonl: bool,
}

/// One block of the input: a call to run, or a result decided without running anything.
enum Entry {
    Call(ToolUse),
    Done(ToolResult),
}

impl RunCommand {
    pub async fn execute(self, global: &GlobalArgs) -> Result<u8> {
        let text = match self.input.as_deref() {
            None => read_stdin()?,
            Some(p) if p.as_os_str() == "-" => read_stdin()?,
            Some(p) => std::fs::read_to_string(p).with_context(|| format!("reading {}", p.display()))?,
        };
        let (entries, problems) = parse(&text);
        for p in &problems {
            eprintln!("error: {p}");
        }
        if entries.is_empty() && !problems.is_empty() {
            bail!("no tool_use block could be answered");
        }

        let loaded = setup::load(global, global.verbose > 0).await?;
        let runtime = Arc::new(loaded.runtime);
        let session = Session::new();
        let calls: Vec<ToolUse> =
            entries.iter().filter_map(|e| if let Entry::Call(c) = e { Some(c.clone()) } else { None }).collect();
        let cancel = setup::cancel_on_signal();
        let mut ran = runtime.run_batch_cancellable(&session, &calls, &cancel).await.into_iter();
        let results: Vec<ToolResult> = entries
            .into_iter()
            .map(|e| match e {
                Entry::Done(r) => r,
                Entry::Call(_) => ran.next().expect("one result per call"),
            })
            .collect();

        if self.jsonl {
            for r in &results {
                outln!("{}", serde_json::to_string(r)?);
            }
        } else {
            outln!("{}", serde_json::to_string(&json!({"role": "user", "content": results}))?);
        }
        Ok(if cancel.is_cancelled() {
            crate::EXIT_INTERRUPTED
        } else if problems.is_empty() {
            0
        } else {
            crate::EXIT_USAGE
        })
    }
}

fn read_stdin() -> Result<String> {
    let mut s = String::new();
    std::io::stdin().read_to_string(&mut s).context("reading stdin")?;
    Ok(s)
}

/// The blocks of the input, and what could not be answered at all (no id).
fn parse(text: &str) -> (Vec<Entry>, Vec<String>) {
    let mut entries = Vec::new();
    let mut problems = Vec::new();
    match serde_json::from_str::<Value>(text) {
        Ok(Value::Object(obj)) if obj.get("type").and_then(Value::as_str) == Some("tool_use") => {
            push_block(&Value::Object(obj), "the input", &mut entries, &mut problems);
        }
        Ok(Value::Object(obj)) => match obj.get("content") {
            Some(Value::Array(blocks)) => {
                for (i, block) in blocks.iter().enumerate() {
                    if block.get("type").and_then(Value::as_str) == Some("tool_use") {
                        push_block(block, &format!("content[{i}]"), &mut entries, &mut problems);
                    }
                }
            }
            _ => problems.push("the input is a JSON object without a `content` array of blocks".into()),
        },
        Ok(Value::Array(blocks)) => {
            for (i, block) in blocks.iter().enumerate() {
                push_block(block, &format!("[{i}]"), &mut entries, &mut problems);
            }
        }
        // Not one JSON document: JSONL, one tool_use block per line.
        _ => {
            for (n, line) in text.lines().enumerate() {
                if line.trim().is_empty() {
                    continue;
                }
                let at = format!("line {}", n + 1);
                match serde_json::from_str::<Value>(line) {
                    Ok(block) => push_block(&block, &at, &mut entries, &mut problems),
                    Err(e) => problems.push(format!("{at}: not JSON ({e}); it has no id to answer")),
                }
            }
        }
    }
    (entries, problems)
}

fn push_block(block: &Value, at: &str, entries: &mut Vec<Entry>, problems: &mut Vec<String>) {
    let Some(id) = block.get("id").and_then(Value::as_str).filter(|s| !s.is_empty()) else {
        problems.push(format!("{at}: a tool_use block without an `id` cannot be answered"));
        return;
    };
    let bad = |what: &str| {
        Entry::Done(ToolResult::error(
            id,
            OutcomeKind::SchemaError,
            format!("<tool_use_error>InputValidationError: malformed tool_use block: {what}</tool_use_error>"),
        ))
    };
    let entry = match (block.get("name").and_then(Value::as_str), block.get("input")) {
        (None, _) => bad("no `name`"),
        (Some(_), None) => bad("no `input`"),
        (Some(name), Some(input)) => Entry::Call(ToolUse::new(id, name, input.clone())),
    };
    entries.push(entry);
}
