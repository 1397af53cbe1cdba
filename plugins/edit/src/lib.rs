//! `Edit`: exact string replacement in a file the model has Read, refusing files it never read
//! or that changed since (both known from the `read:PATH` context entries Read and Write leave).

use std::borrow::Cow;
use std::fs;
use std::io::ErrorKind;
use std::path::Path;

use memchr::memmem;
use schemars::JsonSchema;
use serde::Deserialize;
use tool_common::{FileState, cat_n, io_error, resolve};
use toolhost_sdk::{Capability, Output, Tool, ToolError, context_get_as, export_tool};

/// Lines of context shown around the edited region.
const SNIPPET_CONTEXT: usize = 4;
/// Most lines the snippet shows: a huge new_string need not be echoed back in full.
const SNIPPET_MAX_LINES: usize = 40;

const NOT_READ: &str = "File has not been read yet. Read it first before writing to it.";
const MODIFIED: &str = "File has been modified since read, either by the user or by a linter. \
                        Read it again before attempting to write it.";

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Input {
    /// The path of the file to modify: absolute, or relative to the workspace.
    file_path: String,
    /// The exact text to replace, including indentation and line breaks (without Read's
    /// line-number prefixes). Empty to create a file that does not exist yet.
    old_string: String,
    /// The text to replace it with (must differ from old_string).
    new_string: String,
    /// Replace every occurrence of old_string instead of exactly one (default false).
    #[serde(default)]
    replace_all: bool,
}

struct Edit;

impl Tool for Edit {
    type Input = Input;
    const NAME: &'static str = "Edit";
    const DESCRIPTION: &'static str = "Performs exact string replacements in a file.\n\
\n\
- You must Read the file before editing it; the edit is refused if the file changed since \
(Read it again then).\n\
- old_string must match the file exactly, including indentation and whitespace. When copying \
from Read's output, leave out the line-number prefix (spaces, the number, a tab): only what \
follows the tab is the file's content.\n\
- The edit fails if old_string is not found, or is found more than once: give more surrounding \
context to make it unique, or set replace_all to change every occurrence (e.g. to rename a \
variable).\n\
- With an empty old_string and a file that does not exist yet, the file is created with \
new_string as its content.\n\
- Prefer editing existing files to creating new ones.";
    const PERMISSION_SUBJECT: Option<&'static str> = Some("/file_path");
    const READ_ONLY: bool = false;

    fn capabilities() -> Vec<Capability> {
        vec![Capability::FsWrite("/".into())]
    }

    fn validate(input: &Input) -> Result<(), String> {
        if input.file_path.trim().is_empty() {
            return Err("file_path must not be empty.".into());
        }
        if input.old_string == input.new_string {
            return Err("No changes to make: old_string and new_string are exactly the same.".into());
        }
        Ok(())
    }

    fn call(input: Input) -> Result<Output, ToolError> {
        let path = resolve(&input.file_path)?;
        let shown = path.display();
        let meta = match fs::metadata(&path) {
            Ok(meta) => meta,
            Err(e) if e.kind() == ErrorKind::NotFound && input.old_string.is_empty() => {
                return create(&path, &input.new_string);
            }
            Err(e) if e.kind() == ErrorKind::NotFound => {
                return Err(ToolError::InvalidInput(format!(
                    "File does not exist: {shown}. To create it, use Write, or Edit with an \
                     empty old_string."
                )));
            }
            Err(e) => return Err(io_error("reading", &path, e)),
        };
        if meta.is_dir() {
            return Err(ToolError::InvalidInput(format!("{shown} is a directory, not a file.")));
        }
        let key = FileState::context_key(&path);
        match context_get_as::<FileState>(&key) {
            None => return Err(ToolError::InvalidInput(NOT_READ.into())),
            Some(read) if read != FileState::of(&meta) => {
                return Err(ToolError::InvalidInput(MODIFIED.into()));
            }
            Some(_) => {}
        }

        let content = fs::read(&path).map_err(|e| io_error("reading", &path, e))?;
        let edited = apply_edit(&content, &input.old_string, &input.new_string, input.replace_all)
            .map_err(ToolError::InvalidInput)?;
        let writing = |e| io_error("writing", &path, e);
        fs::write(&path, &edited.content).map_err(writing)?;
        let state = FileState::of(&fs::metadata(&path).map_err(writing)?);

        let mut text = format!("The file {shown} has been updated successfully.");
        if edited.replacements > 1 {
            text.push_str(&format!(" All {} occurrences were replaced.", edited.replacements));
        }
        let snippet = snippet(&edited.content, edited.first_start, edited.first_len);
        if !snippet.is_empty() {
            let which = if edited.replacements > 1 { " around the first replacement" } else { "" };
            text.push_str(&format!(
                " Here's the result of running `cat -n` on a snippet of the edited file{which}:\n\
                 {snippet}"
            ));
        }
        Ok(Output::text(text).with_context(key, &state))
    }
}

/// Create a file that does not exist yet (empty old_string): no Read is needed for that.
fn create(path: &Path, content: &str) -> Result<Output, ToolError> {
    // Only when missing: on a read-only preopen, create_dir_all fails even for a directory
    // that exists, and the write's own error names the file, which is clearer.
    if let Some(parent) = path.parent().filter(|p| !p.is_dir()) {
        fs::create_dir_all(parent).map_err(|e| io_error("creating directory", parent, e))?;
    }
    let writing = |e| io_error("writing", path, e);
    fs::write(path, content).map_err(writing)?;
    let state = FileState::of(&fs::metadata(path).map_err(writing)?);
    Ok(Output::text(format!("File created successfully at: {}", path.display()))
        .with_context(FileState::context_key(path), &state))
}

/// A file's content after an edit, and where the first replacement landed in it.
#[derive(Debug, PartialEq, Eq)]
struct Edited {
    content: Vec<u8>,
    replacements: usize,
    /// Byte offset of the first replacement in `content`.
    first_start: usize,
    /// Its length in bytes.
    first_len: usize,
}

/// Replace `old` by `new` in `content` (bytes, so a file that is not UTF-8 keeps its other
/// bytes intact). Exactly one occurrence must exist unless `replace_all`. In a file with CRLF
/// line endings, `\n` in both strings stands for `\r\n`, because Read shows lines without
/// their `\r`. An empty `old` fills an empty file. Errors are the messages for the model.
fn apply_edit(content: &[u8], old: &str, new: &str, replace_all: bool) -> Result<Edited, String> {
    if old.is_empty() {
        if !content.is_empty() {
            return Err("Cannot create new file - file already exists.".into());
        }
        return Ok(Edited { content: new.as_bytes().to_vec(), replacements: 1, first_start: 0, first_len: new.len() });
    }
    let (find, replace) = if memmem::find(content, b"\r\n").is_some() {
        let (crlf_old, crlf_new) = (to_crlf(old), to_crlf(new));
        if memmem::find(content, crlf_old.as_bytes()).is_some() {
            (crlf_old, crlf_new)
        } else {
            // A file with mixed line endings: the string as given may still match.
            (Cow::Borrowed(old), Cow::Borrowed(new))
        }
    } else {
        (Cow::Borrowed(old), Cow::Borrowed(new))
    };
    let matches: Vec<usize> = memmem::find_iter(content, find.as_bytes()).collect();
    match matches.len() {
        0 => {
            return Err(format!("String to replace not found in file.\nString: {old}"));
        }
        1 => {}
        n if !replace_all => {
            return Err(format!(
                "Found {n} matches of the string to replace, but replace_all is false. To \
                 replace all occurrences, set replace_all to true. To replace only one \
                 occurrence, please provide more context to uniquely identify the instance.\n\
                 String: {old}"
            ));
        }
        _ => {}
    }
    let mut out = Vec::with_capacity(content.len() + matches.len() * replace.len());
    let mut rest = 0;
    for &at in &matches {
        out.extend_from_slice(&content[rest..at]);
        out.extend_from_slice(replace.as_bytes());
        rest = at + find.len();
    }
    out.extend_from_slice(&content[rest..]);
    Ok(Edited { content: out, replacements: matches.len(), first_start: matches[0], first_len: replace.len() })
}

/// `s` with every line break as `\r\n` (whether it had `\n` or already `\r\n`).
fn to_crlf(s: &str) -> Cow<'_, str> {
    if s.contains('\n') { Cow::Owned(s.replace("\r\n", "\n").replace('\n', "\r\n")) } else { Cow::Borrowed(s) }
}

/// The lines around bytes `start..start + len` of `content`, with a few lines of context, in
/// `cat -n` format; at most [`SNIPPET_MAX_LINES`] lines. Empty for an empty file.
fn snippet(content: &[u8], start: usize, len: usize) -> String {
    let newlines = |bytes: &[u8]| bytes.iter().filter(|&&b| b == b'\n').count();
    let mut lines: Vec<&[u8]> = content.split(|&b| b == b'\n').collect();
    if content.is_empty() || content.ends_with(b"\n") {
        lines.pop(); // The empty piece after the last line break is not a line.
    }
    if lines.is_empty() {
        return String::new();
    }
    let first = newlines(&content[..start]);
    let last = newlines(&content[..(start + len).saturating_sub(1).max(start)]);
    let from = first.saturating_sub(SNIPPET_CONTEXT).min(lines.len() - 1);
    let to = (last + SNIPPET_CONTEXT).min(lines.len() - 1).min(from + SNIPPET_MAX_LINES - 1);
    let texts: Vec<String> = lines[from..=to]
        .iter()
        .map(|line| {
            let line = line.strip_suffix(b"\r").unwrap_or(line);
            String::from_utf8_lossy(line).into_owned()
        })
        .collect();
    cat_n(from as u64 + 1, texts.iter().map(String::as_str))
}

export_tool!(Edit);

#[cfg(test)]
mod tests {
    use super::*;

    fn edit(content: &str, old: &str, new: &str, all: bool) -> Result<String, String> {
        apply_edit(content.as_bytes(), old, new, all).map(|e| String::from_utf8(e.content).unwrap())
    }

    #[test]
    fn replaces_a_unique_string() {
        assert_eq!(edit("a b c", "b", "X", false).unwrap(), "a X c");
        let e = apply_edit(b"a b c", "b", "XY", false).unwrap();
        assert_eq!((e.replacements, e.first_start, e.first_len), (1, 2, 2));
    }

    #[test]
    fn refuses_missing_and_ambiguous_strings() {
        assert_eq!(edit("abc", "x", "y", false).unwrap_err(), "String to replace not found in file.\nString: x");
        let err = edit("a a a", "a", "b", false).unwrap_err();
        assert!(err.starts_with("Found 3 matches of the string to replace, but replace_all is false."));
        assert!(err.ends_with("\nString: a"));
    }

    #[test]
    fn replace_all_replaces_every_occurrence() {
        let e = apply_edit(b"a a a", "a", "bb", true).unwrap();
        assert_eq!(e.content, b"bb bb bb");
        assert_eq!((e.replacements, e.first_start), (3, 0));
        // Non-overlapping, left to right, like str::replace.
        assert_eq!(edit("aaa", "aa", "b", true).unwrap(), "ba");
    }

    #[test]
    fn empty_old_string_fills_only_an_empty_file() {
        assert_eq!(edit("", "", "new", false).unwrap(), "new");
        assert_eq!(edit("x", "", "new", false).unwrap_err(), "Cannot create new file - file already exists.");
    }

    #[test]
    fn crlf_files_match_lf_strings_and_keep_crlf() {
        let text = "one\r\ntwo\r\nthree\r\n";
        assert_eq!(edit(text, "one\ntwo", "1\n2", false).unwrap(), "1\r\n2\r\nthree\r\n");
        assert_eq!(edit(text, "two", "2a\n2b", false).unwrap(), "one\r\n2a\r\n2b\r\nthree\r\n");
        // Mixed endings: the string as given still matches.
        assert_eq!(edit("a\r\nb\nc", "b\nc", "x", false).unwrap(), "a\r\nx");
    }

    #[test]
    fn keeps_bytes_that_are_not_utf8() {
        let e = apply_edit(b"\xff old \xfe", "old", "new", false).unwrap();
        assert_eq!(e.content, b"\xff new \xfe");
    }

    #[test]
    fn snippet_shows_the_edit_with_context() {
        let content: String = (1..=20).map(|i| format!("line {i}\n")).collect();
        let start = content.find("line 10").unwrap();
        let s = snippet(content.as_bytes(), start, "line 10\n".len());
        let numbers: Vec<&str> = s.lines().map(|l| l.split('\t').next().unwrap().trim()).collect();
        assert_eq!(numbers, ["6", "7", "8", "9", "10", "11", "12", "13", "14"]);
        assert!(s.contains("    10\tline 10"));
    }

    #[test]
    fn snippet_handles_the_edges() {
        assert_eq!(snippet(b"", 0, 0), "");
        assert_eq!(snippet(b"a\nb\n", 4, 0), "     1\ta\n     2\tb");
        assert_eq!(snippet(b"x\r\ny", 0, 1), "     1\tx\n     2\ty");
        let long: String = (1..=100).map(|i| format!("{i}\n")).collect();
        assert_eq!(snippet(long.as_bytes(), 0, long.len()).lines().count(), SNIPPET_MAX_LINES);
    }
}
