//! # The transcript
//!
//! `--transcript FILE`: the conversation as JSON lines, written as it happens (a run that dies
//! leaves what it did). One object per line, by `type`:
//!
//! - `start`: provider, model, max turns, the system blocks and the tools' names;
//! - `request`: the turn, the messages added since the previous request (but the model's own,
//!   which are in `response` lines), the tools' names;
//! - `response`: the turn, the assistant message, stop reason, usage, cost, attempts, duration;
//! - `tool_result`: the turn, the call (id, tool, input), the result, its outcome, duration;
//! - `retry`: a failed request about to be retried;
//! - `end`: the summary (see [`crate::Outcome`]).

use crate::error::{Error, Result};
use serde_json::Value;
use std::io::Write;
use std::sync::Mutex;

/// A JSONL writer; each line is flushed at once.
pub struct Transcript {
    out: Mutex<Box<dyn Write + Send>>,
}

impl std::fmt::Debug for Transcript {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Transcript")
    }
}

impl Transcript {
    /// Write to `out` (a file the caller opened).
    pub fn new(out: Box<dyn Write + Send>) -> Self {
        Transcript { out: Mutex::new(out) }
    }

    /// Write one line.
    ///
    /// # Errors
    ///
    /// [`Error::Transcript`] if the line cannot be written.
    pub fn write(&self, line: &Value) -> Result<()> {
        let mut out = self.out.lock().unwrap_or_else(|e| e.into_inner());
        let mut text = line.to_string();
        text.push('\n');
        out.write_all(text.as_bytes()).and_then(|()| out.flush()).map_err(Error::Transcript)
    }
}
