//! `toolhost run [FILE|-]`: a whole assistant turn. Input: a Messages-API assistant message
//! (`{"role":"assistant","content":[…]}`), a whole response object (`{"type":"message",…}`),
//! one `tool_use` block, or JSONL with one `tool_use` block per line. Output: the user message
//! of `tool_result`s, in tool_use order (`--jsonl`: one result per line).

use crate::output::outln;
use crate::setup::{self, GlobalArgs};
use anyhow::{Context, Result};
use clap::Args;
use serde_json::{Value, json};
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::sync::mpsc;
use toolhost::{CallOptions, Refusal, RefusalKind, Session, Submission, ToolUse};

#[derive(Args, Debug)]
pub struct RunCommand {
    /// The input file, or `-` for stdin (the default).
    input: Option<PathBuf>,
    /// Print one tool_result per line instead of one user message.
    #[arg(long)]
    jsonl: bool,
    /// Write JSONL events to FILE: start, progress, finish (with duration and outcome kind).
    #[arg(long, value_name = "FILE")]
    events: Option<PathBuf>,
}

impl RunCommand {
    pub async fn execute(self, global: &GlobalArgs) -> Result<u8> {
        let input: Box<dyn tokio::io::AsyncRead + Unpin + Send> = match self.input.as_deref() {
            None => Box::new(tokio::io::stdin()),
            Some(p) if p.as_os_str() == "-" => Box::new(tokio::io::stdin()),
            Some(p) => Box::new(tokio::fs::File::open(p).await.with_context(|| format!("reading {}", p.display()))?),
        };
        let mut global = global.clone();
        if let Some(path) = &self.events {
            global.protect.push((path.clone(), "the events file in use".into()));
        }
        let loaded = setup::load_with_events(&global, global.verbose > 0, self.events.as_deref()).await?;
        let runtime = Arc::new(loaded.runtime);
        let session = Session::new();
        let cancel = setup::cancel_on_signal();

        // Blocks are read and submitted as they arrive, so calls start before the input ends.
        let (tx, rx) = mpsc::channel(64);
        let problems = Arc::new(AtomicUsize::new(0));
        let reader = tokio::spawn(feed(input, tx, problems.clone()));
        let mut results = Vec::new();
        let jsonl = self.jsonl;
        runtime
            .run_turn(&session, rx, CallOptions::new().cancel(cancel.clone()), |r| {
                // `continue: false`: the caller's loop should end after this turn.
                if let Some(reason) = &r.stop {
                    let said = format!("a hook stopped the session after this turn ({}): {reason}", r.tool_use_id);
                    eprintln!("toolhost run: {}", setup::printable(&said));
                }
                if jsonl {
                    match serde_json::to_string(&r) {
                        Ok(line) => outln!("{line}"),
                        Err(e) => eprintln!("error: cannot serialise a result: {e}"),
                    }
                } else {
                    results.push(r);
                }
            })
            .await;
        // A failed read still prints every result of the blocks read before it.
        match reader.await {
            Ok(Ok(())) => {}
            Ok(Err(e)) => {
                eprintln!("error: {e:#}");
                problems.fetch_add(1, Ordering::SeqCst);
            }
            Err(e) => {
                eprintln!("error: the input reader failed: {e}");
                problems.fetch_add(1, Ordering::SeqCst);
            }
        }
        if !jsonl {
            outln!("{}", serde_json::to_string(&json!({"role": "user", "content": results}))?);
        }
        setup::hand_off_optimizing(&global, &runtime);
        Ok(if cancel.is_cancelled() {
            crate::output::EXIT_INTERRUPTED
        } else if problems.load(Ordering::SeqCst) == 0 {
            0
        } else {
            crate::output::EXIT_USAGE
        })
    }
}

/// Lines of the input as they arrive, numbered from 1; a line that is not UTF-8 is `None`
/// (reported by its number, it never ends the input).
struct NumberedLines {
    reader: BufReader<Box<dyn tokio::io::AsyncRead + Unpin + Send>>,
    n: usize,
}

impl NumberedLines {
    async fn next(&mut self) -> Result<Option<(usize, Option<String>)>> {
        let mut buf = Vec::new();
        if self.reader.read_until(b'\n', &mut buf).await.context("reading the input")? == 0 {
            return Ok(None);
        }
        self.n += 1;
        let line = buf.strip_suffix(b"\n").unwrap_or(&buf);
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        Ok(Some((self.n, String::from_utf8(line.to_vec()).ok())))
    }
}

/// Read the input and submit its blocks. A first line that is a whole `tool_use` block means
/// JSONL: every line is submitted as soon as it is read. Otherwise the input is one JSON
/// document (an assistant message, a response object, a block or an array of blocks).
async fn feed(
    input: Box<dyn tokio::io::AsyncRead + Unpin + Send>,
    tx: mpsc::Sender<Submission>,
    problems: Arc<AtomicUsize>,
) -> Result<()> {
    let mut lines = NumberedLines { reader: BufReader::new(input), n: 0 };
    let mut report = |p: String| {
        eprintln!("error: {p}");
        problems.fetch_add(1, Ordering::SeqCst);
    };
    let not_utf8 = |n: usize| format!("line {n}: not UTF-8 text; it has no id to answer");
    // Leading blank lines are kept (as empty lines) so that every message names the right line.
    let mut text = String::new();
    let first = loop {
        match lines.next().await? {
            None => return Ok(()),
            Some((_, Some(l))) if l.trim().is_empty() => text.push('\n'),
            Some(numbered) => break numbered,
        }
    };
    let is_block = |l: &str| {
        serde_json::from_str::<Value>(l).is_ok_and(|v| v.get("type").and_then(Value::as_str) == Some("tool_use"))
    };
    let mut entries = Vec::new();
    if first.1.as_deref().is_some_and(is_block) {
        let mut line = Some(first);
        while let Some((n, l)) = line {
            match l {
                None => report(not_utf8(n)),
                Some(l) if l.trim().is_empty() => {}
                Some(l) => {
                    let at = format!("line {n}");
                    match serde_json::from_str::<Value>(&l) {
                        Ok(block) => push_block(&block, &at, &mut entries, &mut report),
                        Err(e) => report(format!("{at}: not JSON ({e}); it has no id to answer")),
                    }
                }
            }
            for e in entries.drain(..) {
                if tx.send(e).await.is_err() {
                    return Ok(());
                }
            }
            line = lines.next().await?;
        }
        return Ok(());
    }
    // One document: a line that is not UTF-8 is reported, and the rest is then read line by
    // line (the document as a whole is broken, and guessing around the gap could run blocks
    // it never held).
    let mut broken = false;
    let mut line = Some(first);
    while let Some((n, l)) = line {
        match l {
            Some(l) => text.push_str(&l),
            None => {
                report(not_utf8(n));
                broken = true;
            }
        }
        text.push('\n');
        line = lines.next().await?;
    }
    if broken {
        parse_lines(&text, &mut entries, &mut report);
    } else {
        parse_document(&text, &mut entries, &mut report);
    }
    for e in entries {
        if tx.send(e).await.is_err() {
            break;
        }
    }
    Ok(())
}

/// The blocks of a whole JSON document, or of JSONL that did not start with a block.
fn parse_document(text: &str, entries: &mut Vec<Submission>, report: &mut impl FnMut(String)) {
    match serde_json::from_str::<Value>(text) {
        Ok(Value::Object(obj)) if obj.get("type").and_then(Value::as_str) == Some("tool_use") => {
            push_block(&Value::Object(obj), "the input", entries, report);
        }
        Ok(Value::Object(obj)) => match obj.get("content") {
            Some(Value::Array(blocks)) => {
                for (i, block) in blocks.iter().enumerate() {
                    if block.get("type").and_then(Value::as_str) == Some("tool_use") {
                        push_block(block, &format!("content[{i}]"), entries, report);
                    }
                }
            }
            _ => report("the input is a JSON object without a `content` array of blocks".into()),
        },
        Ok(Value::Array(blocks)) => {
            for (i, block) in blocks.iter().enumerate() {
                push_block(block, &format!("[{i}]"), entries, report);
            }
        }
        _ => parse_lines(text, entries, report),
    }
}

/// Each line of `text` as one block (numbered from 1; blank lines skipped).
fn parse_lines(text: &str, entries: &mut Vec<Submission>, report: &mut impl FnMut(String)) {
    for (n, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let at = format!("line {}", n + 1);
        match serde_json::from_str::<Value>(line) {
            Ok(block) => push_block(&block, &at, entries, report),
            Err(e) => report(format!("{at}: not JSON ({e}); it has no id to answer")),
        }
    }
}

fn push_block(block: &Value, at: &str, entries: &mut Vec<Submission>, report: &mut impl FnMut(String)) {
    let Some(id) = block.get("id").and_then(Value::as_str).filter(|s| !s.is_empty()) else {
        report(format!("{at}: a tool_use block without an `id` cannot be answered"));
        return;
    };
    let bad = |what: &str| {
        Submission::Answered(
            Refusal::new(RefusalKind::MalformedBlock, format!("malformed tool_use block: {what}")).into_result(id),
        )
    };
    let entry = match (block.get("name").and_then(Value::as_str), block.get("input")) {
        (None, _) => bad("no `name`"),
        (Some(_), None) => bad("no `input`"),
        (Some(name), Some(input)) => Submission::Call(ToolUse::new(id, name, input.clone())),
    };
    entries.push(entry);
}

#[cfg(test)]
mod props;
