//! `Grep`: search file contents with a regular expression, the way ripgrep does: it skips hidden,
//! ignored and binary files, filters by glob or file type, and prints rg-style results.

use std::fs::{self, File, Metadata};
use std::io::{self, Read};
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use ignore::overrides::{Override, OverrideBuilder};
use ignore::types::{Types, TypesBuilder};
use regex::bytes::{Regex, RegexBuilder};
use schemars::JsonSchema;
use serde::Deserialize;
use tool_common::{io_error, mtime, resolve, sort_newest_first, truncate_line, walker, workspace};
use toolhost_sdk::{Capability, Output, Tool, ToolError, export_tool, progress};

/// Files larger than this are skipped: they are read whole, and memory is limited.
const MAX_FILE_BYTES: u64 = 32 * 1024 * 1024;
/// A NUL byte this early in a file marks it as binary, as in ripgrep and git.
const BINARY_SNIFF_BYTES: usize = 8192;

#[derive(Deserialize, JsonSchema, Clone, Copy, PartialEq, Eq, Default, Debug)]
#[serde(rename_all = "snake_case")]
enum OutputMode {
    Content,
    #[default]
    FilesWithMatches,
    Count,
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Input {
    /// The regular expression to search file contents for (Rust regex syntax, as in ripgrep),
    /// e.g. `fn\s+main` or `log.*Error`.
    pattern: String,
    /// The file or directory to search in: absolute, or relative to the workspace. Defaults to
    /// the workspace.
    path: Option<String>,
    /// Only search files matching this glob, e.g. `*.js` or `*.{ts,tsx}` (ripgrep's --glob; a
    /// pattern without `/` matches file names at any depth, `!` excludes). Several globs may
    /// be separated by spaces.
    glob: Option<String>,
    /// Only search files of this type, as ripgrep names them (rg --type), e.g. `js`, `py`,
    /// `rust`, `go`, `java`. More efficient than glob for standard file types.
    #[serde(rename = "type")]
    file_type: Option<String>,
    /// What to show: "content" shows matching lines (honours -A/-B/-C, -n and head_limit),
    /// "files_with_matches" lists the paths of files that match (the default), "count" shows
    /// how many lines match in each file.
    output_mode: Option<OutputMode>,
    /// Search case-insensitively.
    #[serde(rename = "-i")]
    case_insensitive: Option<bool>,
    /// Show line numbers (content mode only; default true).
    #[serde(rename = "-n")]
    line_numbers: Option<bool>,
    /// Number of lines to show after each match (content mode only).
    #[serde(rename = "-A")]
    after: Option<u32>,
    /// Number of lines to show before each match (content mode only).
    #[serde(rename = "-B")]
    before: Option<u32>,
    /// Number of lines to show before and after each match (content mode only); -A and -B
    /// take precedence.
    #[serde(rename = "-C")]
    context: Option<u32>,
    /// Only show the first N lines (content), file paths (files_with_matches) or entries
    /// (count), like piping to `head -N`. By default everything is shown.
    head_limit: Option<u32>,
    /// Let patterns span lines and `.` match line breaks (like `rg -U --multiline-dotall`).
    /// By default a pattern matches within a single line.
    multiline: Option<bool>,
}

struct Grep;

impl Tool for Grep {
    type Input = Input;
    const NAME: &'static str = "Grep";
    const DESCRIPTION: &'static str = "A powerful search tool built on ripgrep's libraries.\n\
\n\
- Searches file contents with regular expressions in Rust/ripgrep syntax (e.g. `log.*Error`, \
`function\\s+\\w+`). Literal braces need escaping: `interface\\{\\}` finds `interface{}`.\n\
- Filter files with glob (e.g. `*.js`, `**/*.tsx`) or type (e.g. `js`, `py`, `rust`).\n\
- output_mode: \"content\" shows matching lines, \"files_with_matches\" (the default) only \
file paths, \"count\" the number of matching lines per file.\n\
- Patterns match within single lines; for patterns that span lines, like \
`struct \\{[\\s\\S]*?field`, set multiline to true.\n\
- Skips hidden files, binary files and whatever .gitignore excludes.\n\
- Use Grep for searching file contents rather than reading files one by one.";
    const PERMISSION_SUBJECT: Option<&'static str> = Some("/path");
    const READ_ONLY: bool = true;

    fn capabilities() -> Vec<Capability> {
        vec![Capability::FsRead("/".into())]
    }

    fn validate(input: &Input) -> Result<(), String> {
        if input.pattern.is_empty() {
            return Err("pattern must not be empty.".into());
        }
        Matcher::new(input)?;
        if let Some(globs) = nonempty(&input.glob) {
            build_overrides(Path::new("/"), globs)?;
        }
        if let Some(name) = nonempty(&input.file_type) {
            build_types(name)?;
        }
        if input.head_limit == Some(0) {
            return Err("head_limit must be at least 1 (leave it out to see everything).".into());
        }
        Ok(())
    }

    fn call(input: Input) -> Result<Output, ToolError> {
        let matcher = Matcher::new(&input).map_err(ToolError::InvalidInput)?;
        let root = match nonempty(&input.path) {
            Some(path) => resolve(path)?,
            None => workspace()?,
        };
        let reading = |e| io_error("reading", &root, e);
        let meta = fs::metadata(&root).map_err(reading)?;
        let context = input.context.unwrap_or(0) as usize;
        let mut results = Results::new(
            input.output_mode.unwrap_or_default(),
            Layout {
                line_numbers: input.line_numbers.unwrap_or(true),
                before: input.before.map_or(context, |n| n as usize),
                after: input.after.map_or(context, |n| n as usize),
            },
            input.head_limit.map(|n| n as usize),
        );

        if !meta.is_dir() {
            // One file named explicitly: searched whatever its name or type.
            let Some((meta, buf)) = read_file(&root).map_err(reading)? else {
                return Err(ToolError::InvalidInput(format!(
                    "{} is larger than 32 MiB; Grep does not search files that large.",
                    root.display()
                )));
            };
            if is_binary(&buf) {
                return Ok(Output::text(format!(
                    "{} is a binary file; Grep does not search binary files.",
                    root.display()
                )));
            }
            results.add(&matcher, &root, mtime(&meta), &buf);
            return Ok(Output::text(results.finish()));
        }

        let mut builder = walker(&root);
        if let Some(globs) = nonempty(&input.glob) {
            builder.overrides(build_overrides(&root, globs).map_err(ToolError::InvalidInput)?);
        }
        if let Some(name) = nonempty(&input.file_type) {
            builder.types(build_types(name).map_err(ToolError::InvalidInput)?);
        }
        let (mut searched, mut too_large) = (0usize, 0usize);
        for entry in builder.build().flatten() {
            if entry.file_type().is_none_or(|t| t.is_dir()) {
                continue;
            }
            // Unreadable files are skipped, as ripgrep does, rather than failing the search.
            let (meta, buf) = match read_file(entry.path()) {
                Ok(Some(read)) => read,
                Ok(None) => {
                    too_large += 1;
                    continue;
                }
                Err(_) => continue,
            };
            searched += 1;
            if !is_binary(&buf) {
                results.add(&matcher, entry.path(), mtime(&meta), &buf);
                if results.is_full() {
                    break;
                }
            }
        }
        progress(&format!("searched {searched} files"));
        let mut text = results.finish();
        if too_large > 0 {
            text.push_str(&format!(
                "\n\n(Skipped {too_large} {} larger than 32 MiB.)",
                plural(too_large, "file", "files")
            ));
        }
        Ok(Output::text(text))
    }
}

/// An optional string input, treating "" as absent (models often send empty strings).
fn nonempty(value: &Option<String>) -> Option<&str> {
    value.as_deref().filter(|v| !v.trim().is_empty())
}

/// The compiled pattern, and how to apply it.
struct Matcher {
    regex: Regex,
    multiline: bool,
    /// Whether a file can be rejected with one search of its whole contents before it is
    /// split into lines: true unless the pattern uses `\A` or `\z`, which match at every line's
    /// start or end when lines are searched one by one, but only at the file's in one search.
    whole_file_prefilter: bool,
}

impl Matcher {
    /// Compile the pattern with the input's flags; the error is the message for the model.
    /// `^` and `$` match at line boundaries (also `\r\n` ones), as in ripgrep.
    fn new(input: &Input) -> Result<Self, String> {
        let case_insensitive = input.case_insensitive.unwrap_or(false);
        let multiline = input.multiline.unwrap_or(false);
        let regex = RegexBuilder::new(&input.pattern)
            .case_insensitive(case_insensitive)
            .multi_line(true)
            .crlf(true)
            .dot_matches_new_line(multiline)
            .build()
            .map_err(|e| format!("Invalid regex pattern: {e}"))?;
        let hir = regex_syntax::ParserBuilder::new()
            .utf8(false)
            .case_insensitive(case_insensitive)
            .multi_line(true)
            .crlf(true)
            .dot_matches_new_line(multiline)
            .build()
            .parse(&input.pattern)
            .map_err(|e| format!("Invalid regex pattern: {e}"))?;
        let whole_file_prefilter = !hir.properties().look_set().contains_anchor_haystack();
        Ok(Matcher { regex, multiline, whole_file_prefilter })
    }

    /// The (0-based, ascending) lines of `lines` that a match touches. Without multiline, each
    /// line is searched on its own, without its line break; with it, the whole file is, and a
    /// match marks every line it spans.
    fn matched_lines(&self, lines: &Lines) -> Vec<usize> {
        if !self.multiline {
            return (0..lines.len()).filter(|&i| self.regex.is_match(lines.get(i))).collect();
        }
        let mut matched: Vec<usize> = Vec::new();
        for m in self.regex.find_iter(lines.buf) {
            let Some(first) = lines.line_of(m.start()) else {
                continue;
            };
            let last = if m.end() > m.start() { lines.line_of(m.end() - 1).unwrap_or(first) } else { first };
            let from = matched.last().map_or(first, |&seen| first.max(seen + 1));
            matched.extend(from..=last);
        }
        matched
    }
}

/// A file's bytes as lines. A line ends at `\n`; the empty piece after a final `\n` is not a
/// line, so "a\nb\n" and "a\nb" both have two.
struct Lines<'a> {
    buf: &'a [u8],
    /// Byte offset where each line starts.
    starts: Vec<usize>,
}

impl<'a> Lines<'a> {
    fn new(buf: &'a [u8]) -> Self {
        let mut starts = Vec::new();
        if !buf.is_empty() {
            starts.push(0);
            starts.extend(memchr::memchr_iter(b'\n', buf).map(|at| at + 1).filter(|&start| start < buf.len()));
        }
        Lines { buf, starts }
    }

    fn len(&self) -> usize {
        self.starts.len()
    }

    /// Line `i`, without its `\n` or `\r\n`.
    fn get(&self, i: usize) -> &'a [u8] {
        let end = self.starts.get(i + 1).copied().unwrap_or(self.buf.len());
        let line = &self.buf[self.starts[i]..end];
        let line = line.strip_suffix(b"\n").unwrap_or(line);
        line.strip_suffix(b"\r").unwrap_or(line)
    }

    /// The line holding byte `at`; the end of a file without a final `\n` belongs to its last
    /// line, the end of one with it to no line.
    fn line_of(&self, at: usize) -> Option<usize> {
        if self.starts.is_empty() || (at >= self.buf.len() && self.buf.ends_with(b"\n")) {
            return None;
        }
        Some(self.starts.partition_point(|&start| start <= at) - 1)
    }
}

/// How content mode prints lines.
#[derive(Clone, Copy)]
struct Layout {
    line_numbers: bool,
    /// Context lines before each match.
    before: usize,
    /// Context lines after each match.
    after: usize,
}

/// What the search has found so far, in the form the output mode needs.
struct Results {
    mode: OutputMode,
    layout: Layout,
    head_limit: Option<usize>,
    /// files_with_matches: the files and their modification times.
    files: Vec<(PathBuf, SystemTime)>,
    /// count: each matching file and its number of matching lines.
    counts: Vec<(String, usize)>,
    /// content: output lines.
    lines: Vec<String>,
}

impl Results {
    fn new(mode: OutputMode, layout: Layout, head_limit: Option<usize>) -> Self {
        Results { mode, layout, head_limit, files: Vec::new(), counts: Vec::new(), lines: Vec::new() }
    }

    /// Search one file's contents and record what matched.
    fn add(&mut self, matcher: &Matcher, path: &Path, modified: SystemTime, buf: &[u8]) {
        if matcher.whole_file_prefilter && !matcher.regex.is_match(buf) {
            return;
        }
        let lines = Lines::new(buf);
        let matched = matcher.matched_lines(&lines);
        if matched.is_empty() {
            return;
        }
        match self.mode {
            OutputMode::FilesWithMatches => self.files.push((path.to_path_buf(), modified)),
            OutputMode::Count => self.counts.push((path.display().to_string(), matched.len())),
            OutputMode::Content => {
                let path = path.display().to_string();
                content_lines(&path, &lines, &matched, self.layout, &mut self.lines);
            }
        }
    }

    /// Whether content output already exceeds head_limit, so searching further is pointless.
    /// (The other modes need every file: to sort by time, or for the totals.)
    fn is_full(&self) -> bool {
        self.mode == OutputMode::Content && self.head_limit.is_some_and(|l| self.lines.len() > l)
    }

    fn finish(self) -> String {
        match self.mode {
            OutputMode::FilesWithMatches => files_output(self.files, self.head_limit),
            OutputMode::Count => count_output(&self.counts, self.head_limit),
            OutputMode::Content => content_output(self.lines, self.head_limit),
        }
    }
}

/// One file's matching lines with their context, as ripgrep prints them: `PATH:LINE:text` for
/// a match and `PATH-LINE-text` for context (`PATH:text` / `PATH-text` without line numbers).
/// When context was asked for, `--` separates groups that are not adjacent, also from the
/// earlier files' lines already in `out`.
fn content_lines(path: &str, lines: &Lines, matched: &[usize], layout: Layout, out: &mut Vec<String>) {
    let (before, after) = (layout.before, layout.after);
    let mut groups: Vec<(usize, usize)> = Vec::new();
    for &m in matched {
        let (from, to) = (m.saturating_sub(before), (m + after).min(lines.len() - 1));
        match groups.last_mut() {
            Some(group) if from <= group.1 + 1 => group.1 = group.1.max(to),
            _ => groups.push((from, to)),
        }
    }
    for (from, to) in groups {
        if (before > 0 || after > 0) && !out.is_empty() {
            out.push("--".into());
        }
        for i in from..=to {
            let sep = if matched.binary_search(&i).is_ok() { ':' } else { '-' };
            let text = String::from_utf8_lossy(lines.get(i));
            let text = truncate_line(&text);
            out.push(if layout.line_numbers {
                format!("{path}{sep}{}{sep}{text}", i + 1)
            } else {
                format!("{path}{sep}{text}")
            });
        }
    }
}

/// files_with_matches: `Found N files` and the paths, newest first.
fn files_output(mut files: Vec<(PathBuf, SystemTime)>, head_limit: Option<usize>) -> String {
    if files.is_empty() {
        return "No files found".into();
    }
    sort_newest_first(&mut files);
    let total = files.len();
    let shown = head_limit.map_or(total, |limit| limit.min(total));
    let mut out = format!("Found {total} {}", plural(total, "file", "files"));
    if shown < total {
        out.push_str(&format!(" (showing the first {shown})"));
    }
    for (path, _) in &files[..shown] {
        out.push('\n');
        out.push_str(&path.display().to_string());
    }
    out
}

/// count: `PATH:N` lines, then the totals (over every file, also those past head_limit).
fn count_output(counts: &[(String, usize)], head_limit: Option<usize>) -> String {
    if counts.is_empty() {
        return "No matches found".into();
    }
    let total: usize = counts.iter().map(|(_, n)| n).sum();
    let files = counts.len();
    let shown = head_limit.map_or(files, |limit| limit.min(files));
    let mut lines: Vec<String> = counts[..shown].iter().map(|(path, n)| format!("{path}:{n}")).collect();
    if shown < files {
        lines.push(format!("(showing the first {shown} of {files} files)"));
    }
    format!(
        "{}\n\nFound {total} total {} across {files} {}.",
        lines.join("\n"),
        plural(total, "occurrence", "occurrences"),
        plural(files, "file", "files")
    )
}

/// content: the lines, cut at head_limit with a note saying so.
fn content_output(mut lines: Vec<String>, head_limit: Option<usize>) -> String {
    if lines.is_empty() {
        return "No matches found".into();
    }
    if let Some(limit) = head_limit.filter(|&limit| lines.len() > limit) {
        lines.truncate(limit);
        while lines.last().is_some_and(|l| l == "--") {
            lines.pop();
        }
        lines.push(format!(
            "\n(Showing the first {limit} lines; there are more. Raise head_limit or narrow the \
             search to see them.)"
        ));
    }
    lines.join("\n")
}

fn plural<'a>(n: usize, one: &'a str, many: &'a str) -> &'a str {
    if n == 1 { one } else { many }
}

/// A file's metadata and contents; None if it is larger than [`MAX_FILE_BYTES`], an
/// error if it is not a file (a symlink to a directory, say) or cannot be read. One open and
/// one fstat: no separate stat by path.
fn read_file(path: &Path) -> io::Result<Option<(Metadata, Vec<u8>)>> {
    let mut file = File::open(path)?;
    let meta = file.metadata()?;
    if !meta.is_file() {
        return Err(io::ErrorKind::InvalidInput.into());
    }
    if meta.len() > MAX_FILE_BYTES {
        return Ok(None);
    }
    // Exactly the size just seen: no extra read to find the end of the file.
    let mut buf = vec![0; meta.len() as usize];
    file.read_exact(&mut buf)?;
    Ok(Some((meta, buf)))
}

/// ripgrep's notion of a binary file: a NUL byte near the start.
fn is_binary(buf: &[u8]) -> bool {
    buf[..buf.len().min(BINARY_SNIFF_BYTES)].contains(&0)
}

/// `glob` split into single globs: at spaces, and at commas outside `{...}` (so `*.{ts,tsx}`
/// stays one glob while `*.ts,*.tsx` is two).
fn split_globs(globs: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut current = String::new();
    let mut depth = 0usize;
    for c in globs.chars() {
        match c {
            '{' => depth += 1,
            '}' => depth = depth.saturating_sub(1),
            _ => {}
        }
        if c.is_whitespace() || (c == ',' && depth == 0) {
            if !current.is_empty() {
                out.push(std::mem::take(&mut current));
            }
        } else {
            current.push(c);
        }
    }
    if !current.is_empty() {
        out.push(current);
    }
    out
}

/// The glob filter, with ripgrep's --glob semantics, rooted at the search directory.
fn build_overrides(root: &Path, globs: &str) -> Result<Override, String> {
    let mut builder = OverrideBuilder::new(root);
    for glob in split_globs(globs) {
        builder.add(&glob).map_err(|e| format!("Invalid glob {glob:?}: {e}"))?;
    }
    builder.build().map_err(|e| format!("Invalid glob: {e}"))
}

/// The file-type filter for one of ripgrep's built-in types; an unknown name lists them all.
fn build_types(name: &str) -> Result<Types, String> {
    let mut builder = TypesBuilder::new();
    builder.add_defaults();
    builder.select(name);
    builder.build().map_err(|_| {
        let known: Vec<String> = builder.definitions().iter().map(|def| def.name().to_string()).collect();
        format!("Unknown file type {name:?}. Known types: {}.", known.join(", "))
    })
}

export_tool!(Grep);

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, UNIX_EPOCH};

    fn input(pattern: &str) -> Input {
        Input {
            pattern: pattern.into(),
            path: None,
            glob: None,
            file_type: None,
            output_mode: None,
            case_insensitive: None,
            line_numbers: None,
            after: None,
            before: None,
            context: None,
            head_limit: None,
            multiline: None,
        }
    }

    fn layout(before: usize, after: usize, line_numbers: bool) -> Layout {
        Layout { line_numbers, before, after }
    }

    fn matched(input: &Input, text: &str) -> Vec<usize> {
        let matcher = Matcher::new(input).unwrap();
        matcher.matched_lines(&Lines::new(text.as_bytes()))
    }

    #[test]
    fn lines_split_like_ripgrep() {
        let lines = Lines::new(b"a\r\nb\n\nc");
        assert_eq!(lines.len(), 4);
        assert_eq!(lines.get(0), b"a");
        assert_eq!(lines.get(2), b"");
        assert_eq!(lines.get(3), b"c");
        assert_eq!(Lines::new(b"a\n").len(), 1);
        assert_eq!(Lines::new(b"").len(), 0);
        assert_eq!(Lines::new(b"a\n").line_of(2), None);
        assert_eq!(Lines::new(b"a\nbc").line_of(4), Some(1));
    }

    #[test]
    fn single_line_matching() {
        let text = "fn main() {\n    println!(\"hi\");\n}\nFN x\n";
        assert_eq!(matched(&input(r"fn\s+\w+"), text), [0]);
        let mut i = input("^fn");
        i.case_insensitive = Some(true);
        assert_eq!(matched(&i, text), [0, 3]);
        assert_eq!(matched(&input(r"\}$"), "a }\r\nb\r\n}\r\n"), [0, 2]);
        // Without multiline a pattern never spans lines.
        assert!(matched(&input(r"\{\s+println"), text).is_empty());
    }

    #[test]
    fn text_anchors_apply_to_each_line() {
        let i = input(r"\Ab");
        assert!(!Matcher::new(&i).unwrap().whole_file_prefilter);
        assert_eq!(matched(&i, "a\nb\n"), [1]);
        assert!(Matcher::new(&input("^b$")).unwrap().whole_file_prefilter);
    }

    #[test]
    fn multiline_matches_mark_every_line_they_span() {
        let mut i = input(r"\{\s+println.*?\}");
        i.multiline = Some(true);
        let text = "fn main() {\n    println!(\"hi\");\n}\nlast\n";
        assert_eq!(matched(&i, text), [0, 1, 2]);
        let mut i = input(r"main.*last");
        i.multiline = Some(true);
        assert_eq!(matched(&i, text), [0, 1, 2, 3]);
    }

    #[test]
    fn invalid_regexes_are_reported() {
        let err = Grep::validate(&input("a(b")).unwrap_err();
        assert!(err.starts_with("Invalid regex pattern: "), "{err}");
        assert!(Grep::validate(&input("")).is_err());
        let mut i = input("x");
        i.head_limit = Some(0);
        assert!(Grep::validate(&i).is_err());
    }

    #[test]
    fn types_and_globs_are_checked() {
        assert!(build_types("rust").is_ok());
        let err = build_types("nosuchtype").unwrap_err();
        assert!(err.starts_with("Unknown file type \"nosuchtype\". Known types: "), "{err}");
        assert!(err.contains("rust"), "{err}");
        assert_eq!(split_globs("*.{ts,tsx}"), ["*.{ts,tsx}"]);
        assert_eq!(split_globs(" *.ts, *.js  !x/** "), ["*.ts", "*.js", "!x/**"]);
        let ov = build_overrides(Path::new("/r"), "*.rs").unwrap();
        assert!(ov.matched("/r/src/a.rs", false).is_whitelist());
        assert!(ov.matched("/r/src/a.js", false).is_ignore());
        assert!(build_overrides(Path::new("/r"), "a[").is_err());
    }

    #[test]
    fn content_output_with_numbers_and_context() {
        let text = "a\nmatch1\nb\nc\nd\ne\nmatch2\nf\n";
        let lines = Lines::new(text.as_bytes());
        let mut out = Vec::new();
        content_lines("/p", &lines, &[1, 6], layout(1, 1, true), &mut out);
        assert_eq!(out, ["/p-1-a", "/p:2:match1", "/p-3-b", "--", "/p-6-e", "/p:7:match2", "/p-8-f"]);
        // A second file continues after a separator.
        content_lines("/q", &Lines::new(b"x\n"), &[0], layout(1, 1, true), &mut out);
        assert_eq!(out[7..], ["--", "/q:1:x"]);
    }

    #[test]
    fn content_output_without_context_has_no_separators() {
        let lines = Lines::new(b"m\nx\nm\n");
        let mut out = Vec::new();
        content_lines("/p", &lines, &[0, 2], layout(0, 0, false), &mut out);
        assert_eq!(out, ["/p:m", "/p:m"]);
        // Adjacent or overlapping context windows merge into one group.
        let mut out = Vec::new();
        content_lines("/p", &lines, &[0, 2], layout(1, 1, true), &mut out);
        assert_eq!(out, ["/p:1:m", "/p-2-x", "/p:3:m"]);
    }

    #[test]
    fn results_collect_per_mode() {
        let matcher = Matcher::new(&input("x")).unwrap();
        let t = UNIX_EPOCH + Duration::from_secs(5);
        let mut r = Results::new(OutputMode::Count, layout(0, 0, true), None);
        r.add(&matcher, Path::new("/a"), t, b"x\nx\ny\n");
        r.add(&matcher, Path::new("/b"), t, b"nothing\n");
        r.add(&matcher, Path::new("/c"), t, b"xx\n");
        assert_eq!(r.finish(), "/a:2\n/c:1\n\nFound 3 total occurrences across 2 files.");
        let mut r = Results::new(OutputMode::Content, layout(0, 0, true), Some(1));
        r.add(&matcher, Path::new("/a"), t, b"x\nx\n");
        assert!(r.is_full());
        assert!(r.finish().starts_with("/a:1:x\n\n(Showing the first 1 lines"));
    }

    #[test]
    fn files_output_sorts_and_limits() {
        let t = |s| UNIX_EPOCH + Duration::from_secs(s);
        assert_eq!(files_output(Vec::new(), None), "No files found");
        let files = vec![(PathBuf::from("/old"), t(1)), (PathBuf::from("/new"), t(2))];
        assert_eq!(files_output(files.clone(), None), "Found 2 files\n/new\n/old");
        assert_eq!(files_output(files, Some(1)), "Found 2 files (showing the first 1)\n/new");
        assert_eq!(files_output(vec![(PathBuf::from("/x"), t(1))], None), "Found 1 file\n/x");
    }

    #[test]
    fn empty_results_say_so() {
        assert_eq!(count_output(&[], None), "No matches found");
        assert_eq!(content_output(Vec::new(), Some(3)), "No matches found");
        assert_eq!(count_output(&[("/a".into(), 1)], None), "/a:1\n\nFound 1 total occurrence across 1 file.");
    }

    #[test]
    fn binary_files_are_recognised_early() {
        assert!(is_binary(b"abc\0def"));
        assert!(!is_binary(b"plain text"));
        let mut late = vec![b'a'; BINARY_SNIFF_BYTES];
        late.push(0);
        assert!(!is_binary(&late));
    }
}
