//! `Read`: a file's lines in `cat -n` format (or an image), recording the file's state so that a
//! later Edit knows the model has seen it.

use std::fs::{self, File};
use std::io::{self, BufRead, BufReader};
use std::path::Path;

use schemars::JsonSchema;
use serde::Deserialize;
use tool_common::{FileState, io_error, numbered_line, resolve};
use toolhost_sdk::{Capability, Output, Tool, ToolError, export_tool};

/// Lines shown when the model gives no `limit`.
const DEFAULT_LIMIT: u64 = 2000;
/// Largest image returned; bigger ones would not fit a request to the model anyway.
const MAX_IMAGE_BYTES: u64 = 5 * 1024 * 1024;
/// What an empty file reads as, so the model does not mistake it for a failed read.
const EMPTY_FILE: &str = "<system-reminder>Warning: the file exists but the contents are empty.</system-reminder>";

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Input {
    /// The path of the file to read: absolute, or relative to the workspace.
    file_path: String,
    /// The line number to start reading from; 1 is the first line. Only give it when the file
    /// is too long to read at once.
    offset: Option<u64>,
    /// The number of lines to read (default 2000). Only give it when the file is too long to
    /// read at once.
    limit: Option<u64>,
}

struct Read;

impl Tool for Read {
    type Input = Input;
    const NAME: &'static str = "Read";
    const DESCRIPTION: &'static str = "Reads a file from the local filesystem. file_path may be \
absolute or relative to the workspace; reading a file that does not exist returns an error.\n\
\n\
- By default it reads up to 2000 lines from the start of the file. For long files, give offset \
(the 1-based line to start at) and limit (how many lines), or read the whole file.\n\
- Lines longer than 2000 characters are truncated.\n\
- Results are in `cat -n` format: each line is prefixed by its line number and a tab. That \
prefix is not part of the file: never copy it into Edit's old_string or new_string.\n\
- Images (PNG, JPEG, GIF, WebP, up to 5 MiB) are returned as images you can look at.\n\
- It reads files, not directories: use LS to list a directory.\n\
- Edit only changes files that were Read first.";
    const PERMISSION_SUBJECT: Option<&'static str> = Some("/file_path");
    const READ_ONLY: bool = true;

    fn capabilities() -> Vec<Capability> {
        vec![Capability::FsRead("/".into())]
    }

    fn validate(input: &Input) -> Result<(), String> {
        if input.file_path.trim().is_empty() {
            return Err("file_path must not be empty.".into());
        }
        if input.offset == Some(0) {
            return Err("offset is a 1-based line number: use 1 (or leave offset out) to start \
                        at the first line."
                .into());
        }
        if input.limit == Some(0) {
            return Err("limit must be at least 1 (or leave it out to read up to 2000 lines).".into());
        }
        Ok(())
    }

    fn call(input: Input) -> Result<Output, ToolError> {
        let path = resolve(&input.file_path)?;
        let reading = |e| io_error("reading", &path, e);
        let meta = fs::metadata(&path).map_err(reading)?;
        if meta.is_dir() {
            return Err(ToolError::InvalidInput(format!("{} is a directory; use LS to list it.", path.display())));
        }
        // Taken before the contents: if the file changes while being read, Edit sees a
        // different state and asks for a fresh Read, which is the safe way round.
        let state = FileState::of(&meta);
        let output = match image_media_type(&path) {
            Some(media_type) => {
                if meta.len() > MAX_IMAGE_BYTES {
                    return Err(ToolError::InvalidInput(format!(
                        "{} is an image of {} bytes; Read returns images of at most 5 MiB \
                         ({MAX_IMAGE_BYTES} bytes).",
                        path.display(),
                        meta.len()
                    )));
                }
                let bytes = fs::read(&path).map_err(reading)?;
                Output::default().with_image(media_type, bytes)
            }
            None => {
                let file = File::open(&path).map_err(reading)?;
                let offset = input.offset.unwrap_or(1);
                let limit = input.limit.unwrap_or(DEFAULT_LIMIT);
                let text = render(BufReader::new(file), offset, limit).map_err(reading)?;
                Output::text(text)
            }
        };
        Ok(output.with_context(FileState::context_key(&path), &state))
    }
}

/// The media type of an image file Read returns as an image, judged by its extension.
fn image_media_type(path: &Path) -> Option<&'static str> {
    let ext = path.extension()?.to_str()?.to_ascii_lowercase();
    Some(match ext.as_str() {
        "png" => "image/png",
        "jpg" | "jpeg" => "image/jpeg",
        "gif" => "image/gif",
        "webp" => "image/webp",
        _ => return None,
    })
}

/// What Read shows for a text file: `limit` lines from line `offset` (1-based) in `cat -n`
/// format. It streams, so only the shown lines are kept in memory; a line ends at `\n`, a
/// trailing `\r` is dropped, bytes that are not UTF-8 are shown as U+FFFD.
fn render(mut reader: impl BufRead, offset: u64, limit: u64) -> io::Result<String> {
    let mut shown = Vec::new();
    let mut buf = Vec::new();
    let mut lines = 0u64;
    loop {
        buf.clear();
        if reader.read_until(b'\n', &mut buf)? == 0 {
            break;
        }
        lines += 1;
        if lines < offset {
            continue;
        }
        if shown.len() as u64 == limit {
            break;
        }
        let text = String::from_utf8_lossy(&buf);
        let text = text.strip_suffix('\n').unwrap_or(&text);
        let text = text.strip_suffix('\r').unwrap_or(text);
        shown.push(numbered_line(lines, text));
    }
    Ok(if lines == 0 {
        EMPTY_FILE.to_string()
    } else if shown.is_empty() {
        format!(
            "<system-reminder>Warning: the file exists but is shorter than the provided offset \
             ({offset}). The file has {lines} line{}.</system-reminder>",
            if lines == 1 { "" } else { "s" }
        )
    } else {
        shown.join("\n")
    })
}

export_tool!(Read);

#[cfg(test)]
mod tests {
    use super::*;

    fn show(text: &[u8], offset: u64, limit: u64) -> String {
        render(text, offset, limit).unwrap()
    }

    #[test]
    fn numbers_lines_like_cat_n() {
        assert_eq!(show(b"a\nb\n", 1, 2000), "     1\ta\n     2\tb");
        assert_eq!(show(b"a\nb", 1, 2000), "     1\ta\n     2\tb");
        assert_eq!(show(b"\n", 1, 2000), "     1\t");
        assert_eq!(show(b"a\r\nb\r\n", 1, 2000), "     1\ta\n     2\tb");
    }

    #[test]
    fn offset_and_limit_pick_a_window() {
        let text = b"1\n2\n3\n4\n5\n";
        assert_eq!(show(text, 2, 2), "     2\t2\n     3\t3");
        assert_eq!(show(text, 5, 10), "     5\t5");
    }

    #[test]
    fn empty_files_and_offsets_past_the_end_say_so() {
        assert_eq!(show(b"", 1, 2000), EMPTY_FILE);
        assert_eq!(show(b"", 7, 2000), EMPTY_FILE);
        let past = show(b"a\nb\n", 3, 2000);
        assert!(past.contains("shorter than the provided offset (3)"), "{past}");
        assert!(past.contains("The file has 2 lines."), "{past}");
    }

    #[test]
    fn invalid_utf8_is_shown_lossily() {
        assert_eq!(show(b"a\xffb\n", 1, 10), "     1\ta\u{fffd}b");
    }

    #[test]
    fn images_are_recognised_by_extension() {
        assert_eq!(image_media_type(Path::new("/a/b.PNG")), Some("image/png"));
        assert_eq!(image_media_type(Path::new("x.jpeg")), Some("image/jpeg"));
        assert_eq!(image_media_type(Path::new("x.webp")), Some("image/webp"));
        assert_eq!(image_media_type(Path::new("x.svg")), None);
        assert_eq!(image_media_type(Path::new("png")), None);
    }
}
