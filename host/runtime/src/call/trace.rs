//! Where one call's time went, step by step, and what its guest said on stderr: for a tool's
//! author watching a call (`toolhost call -v`, `--trace FILE`), never for the model. Recorded
//! for every call (a few clock reads), handed out with its [`crate::Event::Finish`].

use serde::Serialize;
use std::time::Duration;

/// One step of a call and its time.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Step {
    /// `schema`, `validate`, `hooks_before`, `permission`, `instantiate`, `call`, `hooks_after`.
    pub step: &'static str,
    /// Microseconds it took (summed when it ran more than once, e.g. `validate` again after a
    /// hook rewrote the input).
    pub micros: u64,
}

/// One call's steps, its guest's stderr and, when it trapped, the guest's call stack.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct CallTrace {
    /// The steps in the order they first ran.
    pub steps: Vec<Step>,
    /// What `call` wrote to stderr (capped by `max_stdio_bytes`).
    pub stderr: String,
    /// The guest's frames where it trapped, innermost first (`function (module)`, names from
    /// the component's name section when it has one).
    pub backtrace: Vec<String>,
}

impl CallTrace {
    /// Add `took` to `step`.
    pub(crate) fn add(&mut self, step: &'static str, took: Duration) {
        let micros = u64::try_from(took.as_micros()).unwrap_or(u64::MAX);
        match self.steps.iter_mut().find(|s| s.step == step) {
            Some(s) => s.micros = s.micros.saturating_add(micros),
            None => self.steps.push(Step { step, micros }),
        }
    }

    /// The microseconds of `step`, if it ran.
    pub fn micros(&self, step: &str) -> Option<u64> {
        self.steps.iter().find(|s| s.step == step).map(|s| s.micros)
    }
}

/// Lines kept in a trace's backtrace: where it trapped, not the whole of a deep recursion.
const BACKTRACE_LINES: usize = 32;

/// The guest frames of a trap, innermost first, a run of one function as one line
/// (`f (module) ×300`).
pub(crate) fn backtrace(err: &wasmtime::Error) -> Vec<String> {
    let Some(bt) = err.downcast_ref::<wasmtime::WasmBacktrace>() else { return Vec::new() };
    let mut runs: Vec<(String, usize)> = Vec::new();
    for f in bt.frames() {
        let name = f.func_name().map_or_else(|| format!("function {}", f.func_index()), str::to_string);
        let name = match f.module().name() {
            Some(module) => format!("{name} ({module})"),
            None => name,
        };
        match runs.last_mut() {
            Some((last, n)) if *last == name => *n += 1,
            _ => runs.push((name, 1)),
        }
    }
    let more = runs.len().saturating_sub(BACKTRACE_LINES);
    let mut out: Vec<String> = runs
        .into_iter()
        .take(BACKTRACE_LINES)
        .map(|(name, n)| if n > 1 { format!("{name} ×{n}") } else { name })
        .collect();
    if more > 0 {
        out.push(format!("… {more} more"));
    }
    out
}
