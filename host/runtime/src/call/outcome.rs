//! Every way a call can end, and the one place where a guest's failure (a `wasmtime::Error`
//! from instantiating or calling it) is classified: timeout, memory limit, fuel, stack
//! overflow, panic (message from stderr), other traps (with their code), host errors; and how
//! a failure or a `tool-error` becomes the call's error result.

use crate::call::refusal::{INTERRUPTED, Refusal, RefusalKind};
use crate::call::result::ToolResult;
use crate::invoke::bindings::WitToolError;
use crate::sandbox::state::{HostState, Interrupt};
use serde::Serialize;
use toolhost_policy::Limits;
use wasmtime::Trap;

/// How a call ended. Serialised in snake_case for events (`"timeout"`, `"panic"`, …).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum OutcomeKind {
    /// The tool returned a result.
    Success,
    /// No tool has that name.
    UnknownTool,
    /// Another call of the turn had the same id; this one was not run.
    DuplicateId,
    /// The `tool_use` block had no `name` or no `input` object; it was not run.
    MalformedBlock,
    /// The input was not valid JSON (a streamed block cut short); it was not run.
    InvalidJson,
    /// The input broke the tool's JSON Schema (or was too large).
    SchemaError,
    /// The tool's `validate` refused the input.
    ValidateError,
    /// The tool returned `tool-error.invalid-input`.
    InvalidInput,
    /// The tool returned `tool-error.denied`, or the sandbox refused it something.
    Denied,
    /// The tool returned `tool-error.failed`.
    Failed,
    /// The call ran past its time limit.
    Timeout,
    /// The call needed more memory than its limit.
    MemoryLimit,
    /// The call used up its fuel.
    OutOfFuel,
    /// The guest overflowed its stack.
    StackOverflow,
    /// The guest panicked (message taken from its stderr).
    Panic,
    /// Any other trap (unreachable, out-of-bounds access, …).
    Trap,
    /// The tool returned more than `max_output_bytes`.
    OutputLimit,
    /// Something failed on the host's side.
    HostError,
    /// The call was cancelled before or while it ran.
    Interrupted,
    /// The permission check refused the call (a deny rule, a mode, or an ask nobody allowed).
    PermissionDenied,
    /// A PreToolUse hook blocked the call.
    HookBlocked,
    /// The tool failed after running into one of its network limits (response bytes, a
    /// connect or first-byte timeout, connections).
    NetworkLimit,
}

impl OutcomeKind {
    /// The snake_case name, as in events.
    pub fn as_str(self) -> &'static str {
        match self {
            OutcomeKind::Success => "success",
            OutcomeKind::UnknownTool => "unknown_tool",
            OutcomeKind::DuplicateId => "duplicate_id",
            OutcomeKind::MalformedBlock => "malformed_block",
            OutcomeKind::InvalidJson => "invalid_json",
            OutcomeKind::SchemaError => "schema_error",
            OutcomeKind::ValidateError => "validate_error",
            OutcomeKind::InvalidInput => "invalid_input",
            OutcomeKind::Denied => "denied",
            OutcomeKind::Failed => "failed",
            OutcomeKind::Timeout => "timeout",
            OutcomeKind::MemoryLimit => "memory_limit",
            OutcomeKind::OutOfFuel => "out_of_fuel",
            OutcomeKind::StackOverflow => "stack_overflow",
            OutcomeKind::Panic => "panic",
            OutcomeKind::Trap => "trap",
            OutcomeKind::OutputLimit => "output_limit",
            OutcomeKind::HostError => "host_error",
            OutcomeKind::Interrupted => "interrupted",
            OutcomeKind::PermissionDenied => "permission_denied",
            OutcomeKind::HookBlocked => "hook_blocked",
            OutcomeKind::NetworkLimit => "network_limit",
        }
    }
}

impl std::fmt::Display for OutcomeKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A classified failure: its kind and the message the model will read.
#[derive(Debug, Clone)]
pub(crate) struct Failure {
    pub kind: OutcomeKind,
    pub message: String,
}

impl Failure {
    pub(crate) fn new(kind: OutcomeKind, message: impl Into<String>) -> Self {
        Failure { kind, message: message.into() }
    }

    /// The call was cancelled (Ctrl-C, an MCP cancellation, a library token).
    pub(crate) fn interrupted() -> Self {
        Failure::new(OutcomeKind::Interrupted, INTERRUPTED)
    }

    pub(crate) fn timeout(tool: &str, limits: &Limits) -> Self {
        Failure::new(
            OutcomeKind::Timeout,
            format!("Tool {tool} timed out after {} ms (limit timeout_ms = {}).", limits.timeout_ms, limits.timeout_ms),
        )
    }
}

impl Failure {
    /// The failure of a `validate` export, which stops the call before it runs; the message
    /// names the export.
    pub(crate) fn in_validate(self) -> Refusal {
        Refusal::new(RefusalKind::Guest(self.kind), format!("{} (in `validate`)", self.message))
    }

    /// The failure of the call itself, as its error result.
    pub(crate) fn into_result(self, id: &str) -> ToolResult {
        ToolResult::error(id, self.kind, self.message)
    }
}

/// The result of a `call` that returned `tool-error`: its kind from the variant, or
/// `network_limit` when a network limit stopped the call (`limited`).
pub(crate) fn tool_error(id: &str, name: &str, error: WitToolError, limited: bool) -> ToolResult {
    let (kind, message) = match error {
        WitToolError::InvalidInput(m) => (OutcomeKind::InvalidInput, m),
        WitToolError::Denied(m) => (OutcomeKind::Denied, m),
        WitToolError::Failed(m) => (OutcomeKind::Failed, m),
    };
    let kind = if limited { OutcomeKind::NetworkLimit } else { kind };
    let message =
        if message.trim().is_empty() { format!("Tool {name} failed ({kind}) without a message.") } else { message };
    ToolResult::error(id, kind, message)
}

/// Longest stderr tail quoted in an error result.
const STDERR_TAIL_CHARS: usize = 2000;

/// Classify the error a guest export (or its instantiation) ended with.
pub(crate) fn classify(err: &wasmtime::Error, state: &HostState, tool: &str, limits: &Limits) -> Failure {
    let (stderr, _) = state.stderr.contents();
    if let Some(interrupt) = state.interrupt {
        return match interrupt {
            Interrupt::Timeout => Failure::timeout(tool, limits),
            Interrupt::Cancelled => Failure::interrupted(),
        };
    }
    if state.limiter.hit {
        return Failure::new(
            OutcomeKind::MemoryLimit,
            format!(
                "Tool {tool} ran out of memory: it needed more than its limit of {} MiB (memory_mib).",
                limits.memory_mib
            ),
        );
    }
    if let Some(trap) = err.downcast_ref::<Trap>() {
        return match trap {
            Trap::Interrupt => Failure::timeout(tool, limits),
            Trap::OutOfFuel => Failure::new(
                OutcomeKind::OutOfFuel,
                format!("Tool {tool} ran out of fuel (limit fuel = {}).", limits.fuel.unwrap_or(0)),
            ),
            Trap::StackOverflow => Failure::new(
                OutcomeKind::StackOverflow,
                format!("Tool {tool} overflowed its stack (unbounded recursion?).{}", tail_note(&stderr)),
            ),
            // A shadow stack (the part of the stack a compiler keeps in linear memory, below
            // the data) that runs out wraps below address 0: the trap is an out-of-bounds
            // access, and wasmtime does not say where. What gives it away is the call stack.
            Trap::MemoryOutOfBounds if let Some((depth, function)) = deep_recursion(err) => Failure::new(
                OutcomeKind::StackOverflow,
                format!(
                    "Tool {tool} overflowed its stack (unbounded recursion?): at least {depth} nested calls of \
                     {function} ran out the stack it keeps in linear memory.{}",
                    tail_note(&stderr)
                ),
            ),
            other => match panic_message(&stderr) {
                // What the guest printed before the panic (e.g. a Python traceback, where the
                // panic line itself only says that an exception escaped) is kept too.
                Some(msg) => Failure::new(
                    OutcomeKind::Panic,
                    format!("Tool {tool} panicked: {msg}{}", tail_note(before_panic(&stderr))),
                ),
                None => Failure::new(OutcomeKind::Trap, format!("Tool {tool} trapped: {other}.{}", tail_note(&stderr))),
            },
        };
    }
    if let Some(exit) = err.downcast_ref::<wasmtime_wasi::I32Exit>() {
        return Failure::new(
            OutcomeKind::Trap,
            format!("Tool {tool} exited with status {} instead of returning.{}", exit.0, tail_note(&stderr)),
        );
    }
    Failure::new(OutcomeKind::HostError, format!("Tool {tool} failed in the host: {err:#}{}", tail_note(&stderr)))
}

/// Frames of one function on the call stack from which a trap counts as a stack overflow.
/// Far above what a non-recursive program reaches, and below what a 1 MiB shadow stack holds
/// at 2 KiB a frame (512); below what a trap's backtrace keeps
/// ([`toolhost_engine_config::BACKTRACE_FRAMES`]), so that a recursion that deep can be seen.
const DEEP_RECURSION_FRAMES: usize = 256;

/// The depth and name of the function that recursed when `err`'s call stack holds at least
/// [`DEEP_RECURSION_FRAMES`] frames of one function.
fn deep_recursion(err: &wasmtime::Error) -> Option<(usize, String)> {
    let backtrace = err.downcast_ref::<wasmtime::WasmBacktrace>()?;
    most_repeated(backtrace.frames().iter().map(|f| {
        let name = f.func_name().map_or_else(|| format!("function {}", f.func_index()), str::to_string);
        (f.module().name().map(str::to_string), f.func_index(), name)
    }))
    .filter(|(depth, _)| *depth >= DEEP_RECURSION_FRAMES)
}

/// The function (module, index, display name) found most often among `frames`, and how often.
fn most_repeated(frames: impl Iterator<Item = (Option<String>, u32, String)>) -> Option<(usize, String)> {
    let mut counts: std::collections::HashMap<(Option<String>, u32), (usize, String)> = Default::default();
    for (module, index, name) in frames {
        counts.entry((module, index)).or_insert((0, name)).0 += 1;
    }
    counts.into_values().max_by_key(|(n, _)| *n)
}

/// The message of a Rust panic as printed by std's panic hook:
/// `thread '…' panicked at FILE:LINE:COL:\nMESSAGE\nnote: …`.
pub(crate) fn panic_message(stderr: &str) -> Option<String> {
    let start = stderr.rfind("panicked at ")?;
    let rest = &stderr[start + "panicked at ".len()..];
    let (location, after) = match rest.find(":\n") {
        Some(i) => (&rest[..i], &rest[i + 2..]),
        // Older format: `panicked at 'MESSAGE', FILE:LINE:COL`.
        None => return Some(rest.lines().next().unwrap_or("").trim().to_string()),
    };
    let message: Vec<&str> = after.lines().take_while(|l| !l.starts_with("note: ")).collect();
    let message = message.join("\n").trim().to_string();
    Some(if message.is_empty() { format!("(no message) at {location}") } else { format!("{message} (at {location})") })
}

/// The text a guest wrote to stderr before its last panic line.
fn before_panic(stderr: &str) -> &str {
    let Some(at) = stderr.rfind("panicked at ") else { return "" };
    let line_start = stderr[..at].rfind('\n').map_or(0, |i| i + 1);
    &stderr[..line_start]
}

fn tail_note(stderr: &str) -> String {
    let stderr = stderr.trim();
    if stderr.is_empty() {
        return String::new();
    }
    let chars = stderr.chars().count();
    let tail: String = if chars > STDERR_TAIL_CHARS {
        stderr.chars().skip(chars - STDERR_TAIL_CHARS).collect()
    } else {
        stderr.to_string()
    };
    format!("\nstderr:\n{tail}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn panic_messages() {
        let s =
            "thread '<unnamed>' panicked at src/lib.rs:10:5:\nboom: on purpose\nnote: run with `RUST_BACKTRACE=1`\n";
        assert_eq!(panic_message(s).unwrap(), "boom: on purpose (at src/lib.rs:10:5)");
        let multi = "x\nthread 'main' panicked at a.rs:1:1:\nline one\nline two\n";
        assert_eq!(panic_message(multi).unwrap(), "line one\nline two (at a.rs:1:1)");
        assert!(panic_message("Traceback (most recent call last)").is_none());
        let py = "Traceback (most recent call last):\n  File \"app.py\", line 3\nValueError: bad row\nthread '<unnamed>' panicked at src/lib.rs:1:1:\nPython function threw an unexpected exception\n";
        assert!(before_panic(py).ends_with("ValueError: bad row\n"), "{:?}", before_panic(py));
        assert_eq!(before_panic(s), "");
    }

    #[test]
    fn the_most_repeated_function_is_told_apart_by_module() {
        let frame = |m: &str, i: u32| (Some(m.to_string()), i, format!("{m}#{i}"));
        let frames = vec![frame("a", 1), frame("a", 2), frame("a", 2), frame("b", 2), frame("b", 2), frame("b", 2)];
        assert_eq!(most_repeated(frames.into_iter()), Some((3, "b#2".to_string())));
        assert_eq!(most_repeated(std::iter::empty()), None);
    }
}
