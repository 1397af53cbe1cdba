//! What a person sees of the runtime's events on a terminal: decisions, progress, traces, with
//! whatever a tool says made printable first.

use super::files::new_file;
use anyhow::{Context, Result};
use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;
use toolhost::Event;

/// Events on stderr (a live display on a terminal, plain lines otherwise) and, with
/// `--events FILE`, as JSON lines in that file. Never on stdout: that is data.
pub(super) fn event_printer(
    display: Arc<Display>,
    events_file: Option<&Path>,
    trace_file: Option<&Path>,
) -> Result<toolhost::EventSink> {
    let file = match events_file {
        Some(p) => Some(std::sync::Mutex::new(new_file(p).with_context(|| format!("--events {}", p.display()))?)),
        None => None,
    };
    let traces = match trace_file {
        Some(p) => Some(Traces::new(new_file(p).with_context(|| format!("--trace {}", p.display()))?)),
        None => None,
    };
    Ok(Arc::new(move |event| {
        if let Some(traces) = &traces {
            traces.record(&event);
        }
        if let Some(file) = &file
            && let Ok(line) = serde_json::to_string(&event)
        {
            let mut f = file.lock().unwrap_or_else(|e| e.into_inner());
            // Events are for people and tools watching; failing to log one never fails a call.
            let _ = std::io::Write::write_all(&mut *f, format!("{line}\n").as_bytes());
        }
        display.show(event);
    }))
}

/// `--trace FILE`: one JSON line per finished call with its steps' times, the tool's
/// progress messages and stderr, and a trap's guest backtrace (for the tool's author: stderr
/// may hold anything, so it is written only where asked).
pub(super) struct Traces {
    file: std::sync::Mutex<std::fs::File>,
    /// Progress messages of calls still running, by id.
    progress: std::sync::Mutex<HashMap<String, Vec<String>>>,
}

impl Traces {
    fn new(file: std::fs::File) -> Self {
        Traces { file: std::sync::Mutex::new(file), progress: Default::default() }
    }

    fn record(&self, event: &Event) {
        match event {
            Event::Progress { id, message, .. } => self
                .progress
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .entry(id.clone())
                .or_default()
                .push(message.clone()),
            Event::Log { id, level, message, .. } => self
                .progress
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .entry(id.clone())
                .or_default()
                .push(format!("[{}] {message}", level.as_str())),
            Event::Finish { id, tool, outcome, duration_ms, tier, trace, .. } => {
                let progress = self.progress.lock().unwrap_or_else(|e| e.into_inner()).remove(id).unwrap_or_default();
                let line = serde_json::json!({
                    "id": id,
                    "tool": tool,
                    "outcome": outcome,
                    "duration_us": u64::try_from(duration_ms.as_micros()).unwrap_or(u64::MAX),
                    "tier": tier,
                    "steps": trace.steps,
                    "progress": progress,
                    "stderr": trace.stderr,
                    "backtrace": trace.backtrace,
                });
                let mut f = self.file.lock().unwrap_or_else(|e| e.into_inner());
                // Like events, a trace that cannot be written never fails a call.
                let _ = std::io::Write::write_all(&mut *f, format!("{line}\n").as_bytes());
            }
            _ => {}
        }
    }
}

/// Text of several lines (an error that quotes a tool's stderr, say), each line made
/// [`printable`]; the line breaks stay, carriage returns do not.
pub(crate) fn printable_lines(s: &str) -> String {
    s.split('\n').map(printable).collect::<Vec<_>>().join("\n")
}

/// The log's stderr: each event (one write of a formatted line) with every control character
/// but its final newline escaped, and bidirectional overrides too. tracing-subscriber escapes
/// ESC and C1 controls only; a carriage return, a newline or an override in a server's log
/// message or a tool's stderr could still forge or reorder what the operator reads.
pub(super) struct SafeStderr;

impl std::io::Write for SafeStderr {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let text = String::from_utf8_lossy(buf);
        let (body, end) = match text.strip_suffix('\n') {
            Some(body) => (body, "\n"),
            None => (text.as_ref(), ""),
        };
        std::io::stderr().write_all(format!("{}{end}", printable(body)).as_bytes())?;
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        std::io::stderr().flush()
    }
}

pub(crate) use toolhost::printable;

/// The lines `-v` adds after a call's finish line: its steps' times, the tool's stderr, and
/// where it trapped (what the tool said made [`printable`]).
pub(super) fn trace_lines(trace: &toolhost::CallTrace) -> Vec<String> {
    let mut lines = Vec::new();
    if !trace.steps.is_empty() {
        let steps: Vec<String> = trace.steps.iter().map(|s| format!("{} {}", s.step, micros(s.micros))).collect();
        lines.push(format!("  steps: {}", steps.join(", ")));
    }
    let stderr = trace.stderr.trim_end();
    if !stderr.is_empty() {
        lines.push("  stderr:".to_string());
        lines.extend(stderr.lines().map(|l| format!("    | {}", printable(l))));
    }
    if !trace.backtrace.is_empty() {
        lines.push("  guest backtrace (innermost first):".to_string());
        lines.extend(trace.backtrace.iter().map(|f| format!("    {}", printable(f))));
    }
    lines
}

pub(super) fn micros(us: u64) -> String {
    if us >= 10_000 { format!("{:.1} ms", us as f64 / 1000.0) } else { format!("{us} µs") }
}

/// How events are shown on stderr: a live spinner per running call on a terminal, plain lines
/// otherwise (progress always; start and finish, with each call's trace, with `-v`).
pub(super) enum Display {
    Live {
        bars: indicatif::MultiProgress,
        running: std::sync::Mutex<HashMap<String, indicatif::ProgressBar>>,
        verbose: bool,
    },
    Plain {
        verbose: bool,
    },
}

impl Display {
    pub(super) fn live(verbose: bool) -> Self {
        Display::Live { bars: indicatif::MultiProgress::new(), running: std::sync::Mutex::new(HashMap::new()), verbose }
    }

    /// Hide the live display while a question is on the terminal, and bring it back.
    pub(super) fn pause(&self, paused: bool) {
        if let Display::Live { bars, .. } = self {
            bars.set_draw_target(if paused {
                indicatif::ProgressDrawTarget::hidden()
            } else {
                indicatif::ProgressDrawTarget::stderr()
            });
        }
    }

    fn show(&self, event: Event) {
        // Hook failures never block a call, so they must be visible.
        let said = match &event {
            Event::HookFailed { id, tool, hook_event, hook, message } => {
                Some(printable(&format!("warning: {hook_event} hook [{hook}] for {tool} ({id}) failed: {message}")))
            }
            Event::HookMessage { id, tool, hook_event, message } => {
                Some(printable(&format!("{hook_event} hook for {tool} ({id}): {message}")))
            }
            _ => None,
        };
        if let Some(line) = said {
            match self {
                Display::Live { bars, .. } => {
                    let _ = bars.println(line);
                }
                Display::Plain { .. } => eprintln!("{line}"),
            }
            return;
        }
        match self {
            Display::Plain { verbose } => match event {
                Event::PermissionAsked { id, tool, answer, .. } if *verbose => {
                    eprintln!("{}", printable(&format!("permission {tool} ({id}): {answer}")))
                }
                Event::Progress { tool, message, .. } => eprintln!("{}", printable(&format!("{tool}: {message}"))),
                Event::Log { tool, level, message, .. } if *verbose || level >= toolhost::LogLevel::Warning => {
                    eprintln!("{}", printable(&format!("{tool} [{}]: {message}", level.as_str())))
                }
                Event::Start { id, tool } if *verbose => eprintln!("{}", printable(&format!("start {tool} ({id})"))),
                Event::Finish { id, tool, outcome, duration_ms, trace, .. } if *verbose => {
                    let ms = duration_ms.as_secs_f64() * 1000.0;
                    eprintln!("{}", printable(&format!("finish {tool} ({id}): {outcome} in {ms:.1} ms")));
                    for line in trace_lines(&trace) {
                        eprintln!("{line}");
                    }
                }
                _ => {}
            },
            Display::Live { bars, running, verbose } => {
                let mut running = running.lock().unwrap_or_else(|e| e.into_inner());
                match event {
                    Event::Start { id, tool } => {
                        let bar = bars.add(indicatif::ProgressBar::new_spinner());
                        bar.set_prefix(printable(&format!("{tool} ({id})")));
                        bar.set_style(
                            indicatif::ProgressStyle::with_template("{spinner} {prefix} {elapsed} {wide_msg}")
                                .unwrap_or_else(|_| indicatif::ProgressStyle::default_spinner()),
                        );
                        bar.enable_steady_tick(std::time::Duration::from_millis(100));
                        running.insert(id, bar);
                    }
                    Event::Log { tool, level, message, .. } if *verbose || level >= toolhost::LogLevel::Warning => {
                        let _ = bars.println(printable(&format!("{tool} [{}]: {message}", level.as_str())));
                    }
                    Event::Progress { id, tool, message } => match running.get(&id) {
                        Some(bar) => bar.set_message(printable(&message)),
                        None => {
                            let _ = bars.println(printable(&format!("{tool}: {message}")));
                        }
                    },
                    Event::Finish { id, tool, outcome, duration_ms, trace, .. } => {
                        if let Some(bar) = running.remove(&id) {
                            bar.finish_and_clear();
                            bars.remove(&bar);
                        }
                        let mark = if outcome == toolhost::OutcomeKind::Success { "✓" } else { "✗" };
                        let ms = duration_ms.as_secs_f64() * 1000.0;
                        let _ = bars.println(printable(&format!("{mark} {tool} ({id}): {outcome} in {ms:.1} ms")));
                        if *verbose {
                            for line in trace_lines(&trace) {
                                let _ = bars.println(line);
                            }
                        }
                    }
                    _ => {}
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::printable;

    #[test]
    fn what_a_tool_says_cannot_drive_the_terminal() {
        assert_eq!(printable("plain\ttext é"), "plain\ttext é");
        assert_eq!(printable("\u{1b}[2J\u{1b}]0;title\u{7}"), "\\u{1b}[2J\\u{1b}]0;title\\u{7}");
        assert_eq!(printable("a\rb\u{202e}c"), "a\\u{d}b\\u{202e}c");
    }
}
