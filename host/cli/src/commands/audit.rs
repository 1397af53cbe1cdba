//! `toolhost audit FILE [--json]`: a summary of an audit log (see `crate::audit`). A line that
//! is not a JSON object of a known kind is counted and named by its line number, never fatal:
//! a log cut short by a crash, or edited, must still be readable.

use anyhow::{Context, Result};
use clap::Args;
use serde::Serialize;
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::PathBuf;

#[derive(Args, Debug)]
pub struct AuditCommand {
    /// The audit log to summarise.
    file: PathBuf,
    /// Print the summary as one JSON object.
    #[arg(long)]
    json: bool,
}

/// What a log holds, counted.
#[derive(Debug, Default, Serialize)]
struct Summary {
    lines: usize,
    calls: usize,
    /// Finished calls per tool.
    calls_per_tool: BTreeMap<String, usize>,
    /// Decisions by kind: `allow`, `deny`, or `ask → ANSWER`.
    decisions: BTreeMap<String, usize>,
    /// Decisions by what made them (rule, mode, hook).
    decisions_by: BTreeMap<String, usize>,
    /// Calls that ended in an error, by outcome kind.
    errors: BTreeMap<String, usize>,
    /// Refusals (a deny, or an ask answered no or with no one to ask): `TOOL: why`.
    denials: BTreeMap<String, usize>,
    /// Hosts calls reached or were refused, with how many calls did.
    hosts: BTreeMap<String, usize>,
    bytes_out: u64,
    first: Option<String>,
    last: Option<String>,
    /// What toolhost found done to the log by someone else (`TIME: what`), from its `tamper`
    /// lines.
    tampering: Vec<String>,
    /// Line numbers (from 1) of lines that are not audit records.
    malformed: Vec<usize>,
}

impl Summary {
    fn add(&mut self, n: usize, line: &str) {
        self.lines += 1;
        let parsed = serde_json::from_str::<Value>(line).ok();
        if !parsed.as_ref().is_some_and(|v| self.record(v)) {
            self.malformed.push(n);
        }
    }

    /// Count one record; `false` if it is not one.
    fn record(&mut self, v: &Value) -> bool {
        let text = |k: &str| v.get(k).and_then(Value::as_str);
        let (Some(kind), Some(time)) = (text("kind"), text("time")) else { return false };
        match (kind, text("tool")) {
            ("tamper", _) => {
                let Some(what) = text("what") else { return false };
                self.tampering.push(format!("{time}: {what}"));
            }
            ("decision", Some(tool)) => {
                let (Some(decision), Some(by)) = (text("decision"), text("by")) else { return false };
                let shown = match text("answer") {
                    Some(answer) => format!("{decision} → {answer}"),
                    None => decision.to_string(),
                };
                let refused = decision == "deny" || matches!(text("answer"), Some("deny" | "no_one_to_ask"));
                *self.decisions.entry(shown).or_default() += 1;
                *self.decisions_by.entry(by.to_string()).or_default() += 1;
                if refused {
                    *self.denials.entry(format!("{tool}: {by}")).or_default() += 1;
                }
            }
            ("call", Some(tool)) => {
                let Some(outcome) = text("outcome") else { return false };
                self.calls += 1;
                *self.calls_per_tool.entry(tool.to_string()).or_default() += 1;
                if outcome != "success" {
                    *self.errors.entry(outcome.to_string()).or_default() += 1;
                }
                self.bytes_out += v.get("bytes_out").and_then(Value::as_u64).unwrap_or(0);
                for host in v.get("hosts").and_then(Value::as_array).into_iter().flatten().filter_map(Value::as_str) {
                    *self.hosts.entry(host.to_string()).or_default() += 1;
                }
            }
            _ => return false,
        }
        // RFC 3339 UTC times of one format sort as text.
        if self.first.as_deref().is_none_or(|f| time < f) {
            self.first = Some(time.to_string());
        }
        if self.last.as_deref().is_none_or(|l| time > l) {
            self.last = Some(time.to_string());
        }
        true
    }

    fn print(&self) {
        use crate::output::outln;
        outln!("{} lines, {} calls, {} bytes out", self.lines, self.calls, self.bytes_out);
        if let (Some(first), Some(last)) = (&self.first, &self.last) {
            outln!("from {first} to {last}");
        }
        for (title, map) in [
            ("calls per tool", &self.calls_per_tool),
            ("decisions", &self.decisions),
            ("decided by", &self.decisions_by),
            ("errors by outcome", &self.errors),
            ("denials", &self.denials),
            ("hosts contacted", &self.hosts),
        ] {
            if map.is_empty() {
                continue;
            }
            outln!("{title}:");
            for (key, n) in map {
                outln!("  {n:>6}  {}", crate::setup::printable(key));
            }
        }
        if !self.tampering.is_empty() {
            outln!("tampering found ({}):", self.tampering.len());
            for what in &self.tampering {
                outln!("  {what}");
            }
        }
        if !self.malformed.is_empty() {
            let lines: Vec<String> = self.malformed.iter().map(ToString::to_string).collect();
            outln!("malformed: {} line(s): {}", self.malformed.len(), lines.join(", "));
        }
    }
}

impl AuditCommand {
    pub async fn execute(self, _global: &crate::setup::GlobalArgs) -> Result<u8> {
        let bytes = std::fs::read(&self.file).with_context(|| format!("reading {}", self.file.display()))?;
        let text = String::from_utf8_lossy(&bytes);
        let mut summary = Summary::default();
        for (i, line) in text.lines().enumerate() {
            if !line.trim().is_empty() {
                summary.add(i + 1, line);
            }
        }
        if self.json {
            crate::output::outln!("{}", serde_json::to_string_pretty(&summary)?);
        } else {
            summary.print();
        }
        if !summary.malformed.is_empty() {
            eprintln!("warning: {} malformed line(s) in {}", summary.malformed.len(), self.file.display());
        }
        Ok(0)
    }
}
