//! The audit log (`--audit FILE`, `[audit] file`): one JSON line per permission decision and
//! per finished call, appended, rotated by size. Built from the runtime's events
//! ([`Event::Decided`], [`Event::Finish`]), so it sees exactly what people watching a run see,
//! plus what only an audit needs (digests, input hashes, hosts).
//!
//! The file is the host's, never a tool's: it is opened without following a link at its last
//! component, created 0600, and it and its rotated names are protected from tool writes (see
//! [`paths`]). Behind that guard, in depth:
//! - Lines go through one handle opened at start and kept, and before each line the name is
//!   checked to still be that file. A log renamed away, removed or replaced during the run is
//!   put back whole (the replacement moved aside as `FILE.replaced-…`), a `tamper` line says
//!   what happened, and stderr says it too: no line is lost.
//! - What the log was when this process let go of it (file identity and size) is kept in
//!   toolhost's private state (`STATE_DIR/audit/`); a log replaced or shortened between runs is
//!   reported at the next start, on stderr and as a `tamper` line.
//!
//! Another toolhost writing the same log may rotate it: a file found at one of the rotated
//! names is that, not tampering.

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use std::fs::File;
use std::io::{Seek as _, Write as _};
use std::os::unix::fs::{MetadataExt as _, OpenOptionsExt as _};
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
    suffixed(file, &n.to_string())
}

fn suffixed(file: &Path, suffix: &str) -> PathBuf {
    let mut name = file.as_os_str().to_owned();
    name.push(".");
    name.push(suffix);
    PathBuf::from(name)
}

/// Which file: device and inode.
type Identity = (u64, u64);

fn identity(meta: &std::fs::Metadata) -> Identity {
    (meta.dev(), meta.ino())
}

/// An open audit log.
pub struct AuditLog {
    path: PathBuf,
    log_inputs: bool,
    max_bytes: u64,
    /// Where the log's mark is kept between runs (`None`: no usable state directory).
    mark: Option<PathBuf>,
    state: Mutex<State>,
}

struct State {
    file: File,
    /// The identity of `file`, compared with what the name holds before each line.
    id: Identity,
    size: u64,
    /// Whether a failed write was already reported (once is enough on stderr).
    warned: bool,
}

/// What the log was when a process last let go of it: which file, how long, and digests of its
/// first and last [`SAMPLE`] bytes (a file at a reused inode, or rewritten in place, differs
/// there).
#[derive(Debug, Serialize, Deserialize)]
struct Mark {
    dev: u64,
    ino: u64,
    size: u64,
    head: String,
    tail: String,
}

/// How much of each end of the log a mark samples.
const SAMPLE: u64 = 4096;

impl Mark {
    fn of(file: &File, id: Identity, size: u64) -> std::io::Result<Mark> {
        let (head, tail) = samples(file, size)?;
        Ok(Mark { dev: id.0, ino: id.1, size, head, tail })
    }
}

/// Digests of the first and the last [`SAMPLE`] bytes of the first `size` bytes of `file`.
fn samples(file: &File, size: u64) -> std::io::Result<(String, String)> {
    use sha2::Digest as _;
    use std::os::unix::fs::FileExt as _;
    let digest = |from: u64, to: u64| -> std::io::Result<String> {
        let mut bytes = vec![0; (to - from) as usize];
        file.read_exact_at(&mut bytes, from)?;
        Ok(hex::encode(sha2::Sha256::digest(&bytes)))
    };
    Ok((digest(0, size.min(SAMPLE))?, digest(size.saturating_sub(SAMPLE), size)?))
}

impl AuditLog {
    /// Open (or create) `path` for appending; `state_dir` is toolhost's private state, where
    /// the log's mark between runs is kept (`None`: no check between runs).
    pub fn open(path: &Path, log_inputs: bool, max_bytes: u64, state_dir: Option<&Path>) -> Result<Self> {
        let mark = state_dir.and_then(|dir| match toolhost_trust::state_subdir(dir, "audit") {
            Ok(dir) => Some(dir.join(format!("{}.json", mark_name(path)))),
            Err(e) => {
                eprintln!("warning: the audit log is not checked between runs: {}", toolhost::error_text(&e));
                None
            }
        });
        let file = open_append(path)?;
        let meta = file.metadata().with_context(|| format!("reading {}", path.display()))?;
        let log = AuditLog {
            path: path.to_path_buf(),
            log_inputs,
            max_bytes,
            mark,
            state: Mutex::new(State { file, id: identity(&meta), size: meta.len(), warned: false }),
        };
        if let Some(what) = log.changed_since_last_run(&meta) {
            log.tamper(&what);
        }
        log.save_mark();
        Ok(log)
    }

    /// Record `event` if it is one the audit log keeps.
    pub fn record(&self, event: &Event) {
        let Some(line) = self.line(event) else { return };
        self.write_line(&line);
    }

    fn write_line(&self, line: &Value) {
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

    /// Report a change to the log no toolhost made: on stderr and as a line of the log.
    fn tamper(&self, what: &str) {
        eprintln!("warning: the audit log {} {what}", self.path.display());
        self.write_line(&json!({"time": rfc3339(SystemTime::now()), "kind": "tamper", "what": what}));
    }

    fn append(&self, state: &mut State, line: &[u8]) -> Result<()> {
        if let Some(what) = self.keep_in_place(state)? {
            eprintln!("warning: the audit log {} {what}", self.path.display());
            let note = json!({"time": rfc3339(SystemTime::now()), "kind": "tamper", "what": what});
            self.append_checked(state, format!("{note}\n").as_bytes())?;
        }
        self.append_checked(state, line)
    }

    fn append_checked(&self, state: &mut State, line: &[u8]) -> Result<()> {
        let len = line.len() as u64;
        if state.size > 0 && state.size.saturating_add(len) > self.max_bytes {
            self.rotate()?;
            self.reopen(state)?;
            self.save_mark_of(state);
        }
        state.file.write_all(line).with_context(|| format!("writing {}", self.path.display()))?;
        state.size += len;
        Ok(())
    }

    /// Make sure the log's name still holds the file this process writes. Another toolhost's
    /// rotation (our file now at a rotated name) is followed; anything else is undone: what the
    /// name holds now is moved aside and our file's whole content is put back at the name.
    /// Returns what was undone, for the `tamper` line.
    fn keep_in_place(&self, state: &mut State) -> Result<Option<String>> {
        let now = std::fs::symlink_metadata(&self.path);
        if let Ok(meta) = &now
            && meta.is_file()
            && identity(meta) == state.id
        {
            return Ok(None);
        }
        if self.rotated_by_another_process(state.id) {
            self.reopen(state)?;
            return Ok(None);
        }
        let what = match now {
            Ok(_) => {
                let aside = suffixed(&self.path, &format!("replaced-{}-{}", unix_secs(), std::process::id()));
                std::fs::rename(&self.path, &aside)
                    .with_context(|| format!("moving aside what replaced {}", self.path.display()))?;
                format!("was replaced during the run: the replacement is kept as {}, the log restored", aside.display())
            }
            Err(_) => "was removed or moved during the run: the log is restored".to_string(),
        };
        let mut restored = std::fs::OpenOptions::new()
            .read(true)
            .append(true)
            .create_new(true)
            .mode(0o600)
            .custom_flags(rustix::fs::OFlags::NOFOLLOW.bits() as i32)
            .open(&self.path)
            .with_context(|| format!("restoring the audit log {}", self.path.display()))?;
        state.file.rewind()?;
        std::io::copy(&mut state.file, &mut restored).with_context(|| format!("restoring {}", self.path.display()))?;
        let meta = restored.metadata()?;
        *state = State { file: restored, id: identity(&meta), size: meta.len(), warned: state.warned };
        self.save_mark_of(state);
        Ok(Some(what))
    }

    /// Whether the file with `id` is now at one of the rotated names (another toolhost rotated
    /// the log).
    fn rotated_by_another_process(&self, id: Identity) -> bool {
        (1..=KEEP).any(|n| std::fs::symlink_metadata(rotated(&self.path, n)).is_ok_and(|m| identity(&m) == id))
    }

    fn reopen(&self, state: &mut State) -> Result<()> {
        let file = open_append(&self.path)?;
        let meta = file.metadata()?;
        *state = State { file, id: identity(&meta), size: meta.len(), warned: state.warned };
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

    /// What happened to the log since a process last let go of it, if it was not toolhost:
    /// another file at its name (and ours at none of the rotated names), the same file shorter
    /// than it was, or its first or last bytes as toolhost left them changed.
    fn changed_since_last_run(&self, now: &std::fs::Metadata) -> Option<String> {
        let mark: Mark = serde_json::from_slice(&std::fs::read(self.mark.as_ref()?).ok()?).ok()?;
        let was = (mark.dev, mark.ino);
        if identity(now) != was {
            if self.rotated_by_another_process(was) {
                return None;
            }
            return Some(format!(
                "was replaced since the last run: it is not the file toolhost wrote last (that file was {} bytes)",
                mark.size
            ));
        }
        if now.len() < mark.size {
            return Some(format!(
                "was shortened since the last run: {} bytes, toolhost left {} bytes",
                now.len(),
                mark.size
            ));
        }
        let state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let same = samples(&state.file, mark.size).is_ok_and(|(head, tail)| head == mark.head && tail == mark.tail);
        (!same)
            .then(|| "was rewritten since the last run: the lines toolhost left are not as it wrote them".to_string())
    }

    fn save_mark(&self) {
        let state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        self.save_mark_of(&state);
    }

    /// Keep the log's identity and size in the state directory (best effort: a failure only
    /// means the next start cannot tell).
    fn save_mark_of(&self, state: &State) {
        let Some(path) = &self.mark else { return };
        let write = || -> std::io::Result<()> {
            let mark = Mark::of(&state.file, state.id, state.size)?;
            let dir = path.parent().unwrap_or(Path::new("."));
            let mut tmp = tempfile::Builder::new().prefix(".mark-").tempfile_in(dir)?;
            tmp.write_all(&serde_json::to_vec(&mark)?)?;
            tmp.persist(path).map_err(|e| e.error)?;
            Ok(())
        };
        if let Err(e) = write() {
            eprintln!("warning: cannot keep the audit log's mark in {}: {e}", path.display());
        }
    }
}

/// The size a process leaves is kept too, so the next start can tell a log cut short. (A
/// process that exits without dropping the log leaves the mark of its last rotation or of its
/// start: the check is then against that size, which the log only grew from.)
impl Drop for AuditLog {
    fn drop(&mut self) {
        self.save_mark();
    }
}

impl AuditLog {
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
            Event::Finish { id, tool, outcome, duration_ms, session, digest, input, bytes_out, hosts, .. } => {
                let mut line = json!({
                    "time": time, "kind": "call", "session": session, "id": id, "tool": tool,
                    "digest": digest, "input_sha256": toolhost::input_sha256(input), "outcome": outcome,
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

/// Open `path` to append (and to read back, to restore it): created 0600 if missing, a link at
/// its last component refused.
fn open_append(path: &Path) -> Result<File> {
    std::fs::OpenOptions::new()
        .read(true)
        .append(true)
        .create(true)
        .mode(0o600)
        .custom_flags(rustix::fs::OFlags::NOFOLLOW.bits() as i32)
        .open(path)
        .with_context(|| format!("opening the audit log {} (a link is not followed)", path.display()))
}

/// The mark file's name for the log at `path`: a digest of the path.
fn mark_name(path: &Path) -> String {
    use sha2::Digest as _;
    hex::encode(sha2::Sha256::digest(path.as_os_str().as_encoded_bytes()))
}

fn unix_secs() -> u64 {
    SystemTime::now().duration_since(SystemTime::UNIX_EPOCH).map_or(0, |d| d.as_secs())
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
