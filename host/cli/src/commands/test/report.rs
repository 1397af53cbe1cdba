//! What `toolhost test` found, and how it reads: one finding per problem, each with what to
//! change, the input that shows it and a command that reproduces it; as text or `--json`.

use serde::Serialize;
use serde_json::Value;
use std::path::Path;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    /// The contract is broken: the run fails.
    Error,
    /// Worth changing; the run still passes.
    Warning,
}

/// One problem.
#[derive(Debug, Clone, Serialize)]
pub struct Finding {
    pub severity: Severity,
    /// Which check found it (`schema`, `examples`, `descriptions`, `validate`,
    /// `is-concurrency-safe`, `call`, `ceiling`, `case`, `load`, `grant`).
    pub check: &'static str,
    pub message: String,
    /// What to change.
    pub fix: String,
    /// The (smallest found) input that shows it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub input: Option<Value>,
    /// A command line that shows it again.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reproduce: Option<String>,
}

impl Finding {
    pub fn error(check: &'static str, message: impl Into<String>, fix: impl Into<String>) -> Self {
        Finding {
            severity: Severity::Error,
            check,
            message: message.into(),
            fix: fix.into(),
            input: None,
            reproduce: None,
        }
    }

    pub fn warning(check: &'static str, message: impl Into<String>, fix: impl Into<String>) -> Self {
        Finding { severity: Severity::Warning, ..Finding::error(check, message, fix) }
    }

    pub fn with_input(mut self, input: Value) -> Self {
        self.input = Some(input);
        self
    }

    pub fn with_reproduce(mut self, command: String) -> Self {
        self.reproduce = Some(command);
        self
    }
}

/// How many calls of each kind a tool got.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Counts {
    /// Generated inputs the schema accepts (typical and edge values), examples included.
    pub generated: usize,
    /// Generated near misses (one change from a valid input).
    pub near_misses: usize,
    /// Of those, the ones the schema refused.
    pub near_misses_refused: usize,
    /// Cases from the cases file.
    pub cases: usize,
    /// Calls made through the whole pipeline.
    pub calls: usize,
    /// Direct calls of `validate` and `is-concurrency-safe`.
    pub probes: usize,
}

/// One tool's report.
#[derive(Debug, Clone, Serialize)]
pub struct ToolReport {
    pub tool: String,
    pub file: String,
    pub sha256: String,
    pub counts: Counts,
    pub millis: u128,
    pub findings: Vec<Finding>,
}

/// The whole run.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    pub seed: u64,
    pub count: usize,
    pub tools: Vec<ToolReport>,
    pub errors: usize,
    pub warnings: usize,
}

impl Report {
    pub fn new(seed: u64, count: usize, tools: Vec<ToolReport>) -> Self {
        let all = || tools.iter().flat_map(|t| &t.findings);
        let errors = all().filter(|f| f.severity == Severity::Error).count();
        let warnings = all().filter(|f| f.severity == Severity::Warning).count();
        Report { seed, count, tools, errors, warnings }
    }

    /// The report for people.
    pub fn text(&self) -> String {
        let mut out = String::new();
        for t in &self.tools {
            let c = &t.counts;
            out.push_str(&format!(
                "{} ({}): {} generated inputs, {} near misses ({} refused by the schema), {} cases; {} calls and {} probes in {} ms\n",
                t.tool, t.file, c.generated, c.near_misses, c.near_misses_refused, c.cases, c.calls, c.probes, t.millis
            ));
            for f in &t.findings {
                let label = match f.severity {
                    Severity::Error => "error",
                    Severity::Warning => "warning",
                };
                out.push_str(&format!("  {label} [{}]: {}\n", f.check, indent(&f.message)));
                if let Some(input) = &f.input {
                    out.push_str(&format!("    input: {}\n", shown(input)));
                }
                if let Some(r) = &f.reproduce {
                    out.push_str(&format!("    reproduce: {r}\n"));
                }
                out.push_str(&format!("    fix: {}\n", indent(&f.fix)));
            }
        }
        out.push_str(&format!(
            "toolhost test: {} tool{}, {} error{}, {} warning{} (seed {}, {} inputs per tool)\n",
            self.tools.len(),
            plural(self.tools.len()),
            self.errors,
            plural(self.errors),
            self.warnings,
            plural(self.warnings),
            self.seed,
            self.count
        ));
        out
    }
}

fn plural(n: usize) -> &'static str {
    if n == 1 { "" } else { "s" }
}

fn indent(s: &str) -> String {
    s.replace('\n', "\n      ")
}

/// An input as one line, cut when long (the reproducing command has it whole).
fn shown(v: &Value) -> String {
    let s = v.to_string();
    if s.chars().count() <= 300 {
        return s;
    }
    let head: String = s.chars().take(300).collect();
    format!("{head}… ({} bytes)", s.len())
}

/// Longest input written into the command line itself; longer ones go to a file beside it.
const INLINE_INPUT: usize = 2000;

/// Where long reproducing inputs are written: a directory of this run's own, made (0700, a
/// fresh name) when first needed. Never a fixed name in the shared temp directory, where
/// anyone, a tool granted it included, could have planted a link for the host to write through.
#[derive(Default)]
pub struct InputFiles {
    dir: std::sync::OnceLock<Option<std::path::PathBuf>>,
    written: std::sync::atomic::AtomicUsize,
}

impl InputFiles {
    /// `text` in a new file of the directory, or `None` when it cannot be written.
    fn write(&self, text: &str) -> Option<std::path::PathBuf> {
        let dir = self
            .dir
            .get_or_init(|| {
                use std::os::unix::fs::PermissionsExt;
                let private = std::fs::Permissions::from_mode(0o700);
                tempfile::Builder::new().prefix("toolhost-test-").permissions(private).tempdir().ok().map(|d| d.keep())
            })
            .as_ref()?;
        let n = self.written.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let path = dir.join(format!("input-{n}.json"));
        let mut file = std::fs::OpenOptions::new().write(true).create_new(true).open(&path).ok()?;
        std::io::Write::write_all(&mut file, text.as_bytes()).ok()?;
        Some(path)
    }
}

/// A `toolhost call` line that runs `input` as `tool` from `file`, as the test ran it (no other
/// tools, every call allowed, the current directory as workspace). A long input is written to
/// a file of `files` and read from stdin.
pub fn call_command(file: &Path, tool: &str, input: &Value, files: &InputFiles) -> String {
    let tools = file.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let head = format!(
        "toolhost --tools {} --no-default-tools --permission-mode bypass call {}",
        shell_quote(&tools.display().to_string()),
        shell_quote(tool)
    );
    let text = input.to_string();
    if text.len() <= INLINE_INPUT {
        return format!("{head} {}", shell_quote(&text));
    }
    match files.write(&text) {
        Some(path) => format!("{head} - < {}", shell_quote(&path.display().to_string())),
        None => format!("{head} {}", shell_quote(&text)),
    }
}

/// `s` as one POSIX shell word.
pub fn shell_quote(s: &str) -> String {
    if !s.is_empty() && s.bytes().all(|b| b.is_ascii_alphanumeric() || b"-_./=:@,+".contains(&b)) {
        return s.to_string();
    }
    format!("'{}'", s.replace('\'', r"'\''"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_inputs_go_to_new_files_of_a_private_directory() {
        let files = InputFiles::default();
        let long = serde_json::json!({"path": "x".repeat(3000)});
        let a = call_command(Path::new("dist/T.wasm"), "T", &long, &files);
        let b = call_command(Path::new("dist/T.wasm"), "T", &long, &files);
        let path = |line: &str| std::path::PathBuf::from(line.rsplit(" - < ").next().unwrap().trim_matches('\''));
        let (pa, pb) = (path(&a), path(&b));
        assert_ne!(pa, pb);
        assert_eq!(std::fs::read_to_string(&pa).unwrap(), long.to_string());
        let dir = pa.parent().unwrap();
        assert_eq!(dir, pb.parent().unwrap());
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(std::fs::symlink_metadata(dir).unwrap().permissions().mode() & 0o777, 0o700);
        std::fs::remove_dir_all(dir).unwrap();
        let short = call_command(Path::new("dist/T.wasm"), "T", &serde_json::json!({"a": 1}), &files);
        assert!(short.ends_with(r#"'{"a":1}'"#), "{short}");
    }

    #[test]
    fn quoting_keeps_a_word_whole() {
        assert_eq!(shell_quote("dist"), "dist");
        assert_eq!(shell_quote(r#"{"a":"it's"}"#), r#"'{"a":"it'\''s"}'"#);
        assert_eq!(shell_quote(""), "''");
    }
}
