//! The audit log (`--audit FILE`, `[audit] file`): one JSON line per permission decision and
//! per finished call, appended, rotated by size. Built from the runtime's events
//! ([`Event::Decided`], [`Event::Finish`]), so it sees exactly what people watching a run see,
//! plus what only an audit needs (digests, input hashes, hosts).
//!
//! The file is the host's, never a tool's: it is opened without following a link at its last
//! component, created 0600, and it and its rotated names are protected from tool writes (see
//! [`paths`]).

use anyhow::{Context, Result};
use serde_json::{Value, json};
use std::fs::File;
use std::io::Write as _;
use std::os::unix::fs::OpenOptionsExt as _;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::SystemTime;
use toolhost::Event;

/// Rotated files kept: `FILE.1` (newest) to `FILE.3`.
pub const KEEP: usize = 3;

/// The log file and its rotated names: every path a tool must not write.
pub fn paths(file: &Path) -> Vec<PathBuf> {
    let mut all = vec![file.to_path_buf()];
    all.extend((1..=KEEP).map(|n| rotated(file, n)));
    all
}

fn rotated(file: &Path, n: usize) -> PathBuf {
    let mut name = file.as_os_str().to_owned();
    name.push(format!(".{n}"));
    PathBuf::from(name)
}

/// An open audit log.
pub struct AuditLog {
    path: PathBuf,
    log_inputs: bool,
    max_bytes: u64,
    state: Mutex<State>,
}

struct State {
    file: File,
    size: u64,
    /// Whether a failed write was already reported (once is enough on stderr).
    warned: bool,
}

impl AuditLog {
    /// Open (or create) `path` for appending.
    pub fn open(path: &Path, log_inputs: bool, max_bytes: u64) -> Result<Self> {
        let file = open_append(path)?;
        let size = file.metadata().map(|m| m.len()).unwrap_or(0);
        Ok(AuditLog {
            path: path.to_path_buf(),
            log_inputs,
            max_bytes,
            state: Mutex::new(State { file, size, warned: false }),
        })
    }

    /// Record `event` if it is one the audit log keeps.
    pub fn record(&self, event: &Event) {
        let Some(line) = self.line(event) else { return };
        let mut line = line.to_string();
        line.push('\n');
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        if let Err(e) = self.append(&mut state, line.as_bytes())
            && !state.warned
        {
            state.warned = true;
            eprintln!("warning: cannot write the audit log {}: {e:#}", self.path.display());
        }
    }

    fn append(&self, state: &mut State, line: &[u8]) -> Result<()> {
        let len = line.len() as u64;
        if state.size > 0 && state.size.saturating_add(len) > self.max_bytes {
            self.rotate()?;
            state.file = open_append(&self.path)?;
            state.size = 0;
        }
        state.file.write_all(line).with_context(|| format!("writing {}", self.path.display()))?;
        state.size += len;
        Ok(())
    }

    /// FILE.2 → FILE.3, FILE.1 → FILE.2, FILE → FILE.1 (renames move links, never follow them).
    fn rotate(&self) -> Result<()> {
        for n in (1..KEEP).rev() {
            let from = rotated(&self.path, n);
            if std::fs::symlink_metadata(&from).is_ok() {
                std::fs::rename(&from, rotated(&self.path, n + 1))
                    .with_context(|| format!("rotating {}", from.display()))?;
            }
        }
        std::fs::rename(&self.path, rotated(&self.path, 1)).with_context(|| format!("rotating {}", self.path.display()))
    }

    /// The JSON line for `event`, or `None` for events an audit does not keep.
    fn line(&self, event: &Event) -> Option<Value> {
        let time = rfc3339(SystemTime::now());
        match event {
            Event::Decided { id, tool, session, decision, by, answer } => {
                let mut line = json!({
                    "time": time, "kind": "decision", "session": session, "id": id, "tool": tool,
                    "decision": decision, "by": by,
                });
                if let Some(answer) = answer {
                    line["answer"] = json!(answer);
                }
                Some(line)
            }
            Event::Finish {
                id,
                tool,
                outcome,
                duration_ms,
                session,
                digest,
                input_sha256,
                input,
                bytes_out,
                hosts,
                ..
            } => {
                let mut line = json!({
                    "time": time, "kind": "call", "session": session, "id": id, "tool": tool,
                    "digest": digest, "input_sha256": input_sha256, "outcome": outcome,
                    "duration_ms": duration_ms.as_secs_f64() * 1000.0, "bytes_out": bytes_out, "hosts": hosts,
                });
                if self.log_inputs {
                    line["input"] = (**input).clone();
                }
                Some(line)
            }
            _ => None,
        }
    }
}

/// Open `path` to append: created 0600 if missing, a link at its last component refused.
fn open_append(path: &Path) -> Result<File> {
    std::fs::OpenOptions::new()
        .append(true)
        .create(true)
        .mode(0o600)
        .custom_flags(rustix::fs::OFlags::NOFOLLOW.bits() as i32)
        .open(path)
        .with_context(|| format!("opening the audit log {} (a link is not followed)", path.display()))
}

/// `2026-12-03T18:29:05.123Z`.
pub fn rfc3339(t: SystemTime) -> String {
    chrono::DateTime::<chrono::Utc>::from(t).to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, UNIX_EPOCH};

    #[test]
    fn rfc3339_dates() {
        for (secs, want) in [
            (0, "1970-01-01T00:00:00.000Z"),
            (951_782_400, "2000-02-29T00:00:00.000Z"),
            (1_796_322_545, "2026-12-03T18:29:05.000Z"),
        ] {
            assert_eq!(rfc3339(UNIX_EPOCH + Duration::from_secs(secs)), want);
        }
    }
}
