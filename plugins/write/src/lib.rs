//! `Write`: create or replace a whole file, then record its state so a following Edit works
//! without another Read (the model knows exactly what it just wrote).

use std::fs;
use std::io::ErrorKind;
use std::path::Path;

use schemars::JsonSchema;
use serde::Deserialize;
use tool_common::{FileState, io_error, resolve};
use toolhost_sdk::{Capability, Output, Tool, ToolError, export_tool};

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Input {
    /// The path of the file to write: absolute, or relative to the workspace. Missing parent
    /// directories are created.
    file_path: String,
    /// The complete content to write to the file.
    content: String,
}

struct Write;

impl Tool for Write {
    type Input = Input;
    const NAME: &'static str = "Write";
    const DESCRIPTION: &'static str = "Writes a file to the local filesystem, replacing it if it \
already exists and creating missing parent directories. file_path may be absolute or relative to \
the workspace.\n\
\n\
- Before overwriting an existing file, Read it, so you know what you are replacing.\n\
- Prefer Edit for changing existing files: it only sends the part that changes. Use Write for \
new files, or to replace a file's whole content.\n\
- Do not create files you were not asked for (documentation, READMEs) unless they are needed.";
    const PERMISSION_SUBJECT: Option<&'static str> = Some("/file_path");
    const READ_ONLY: bool = false;

    fn capabilities() -> Vec<Capability> {
        vec![Capability::FsWrite("/".into())]
    }

    fn validate(input: &Input) -> Result<(), String> {
        if input.file_path.trim().is_empty() {
            return Err("file_path must not be empty.".into());
        }
        Ok(())
    }

    fn call(input: Input) -> Result<Output, ToolError> {
        let path = resolve(&input.file_path)?;
        let existed = match fs::metadata(&path) {
            Ok(meta) if meta.is_dir() => {
                return Err(ToolError::InvalidInput(format!("{} is a directory, not a file.", path.display())));
            }
            Ok(_) => true,
            Err(e) if e.kind() == ErrorKind::NotFound => false,
            Err(e) => return Err(io_error("writing", &path, e)),
        };
        let state = write_file(&path, input.content.as_bytes())?;
        let text = if existed {
            format!("The file {} has been updated successfully.", path.display())
        } else {
            format!("File created successfully at: {}", path.display())
        };
        Ok(Output::text(text).with_context(FileState::context_key(&path), &state))
    }
}

/// Write `content` to `path`, creating its parent directories, and return the new state.
fn write_file(path: &Path, content: &[u8]) -> Result<FileState, ToolError> {
    // Only when missing: on a read-only preopen, create_dir_all fails even for a directory
    // that exists, and the write's own error names the file, which is clearer.
    if let Some(parent) = path.parent().filter(|p| !p.is_dir()) {
        fs::create_dir_all(parent).map_err(|e| io_error("creating directory", parent, e))?;
    }
    let writing = |e| io_error("writing", path, e);
    fs::write(path, content).map_err(writing)?;
    let meta = fs::metadata(path).map_err(writing)?;
    Ok(FileState::of(&meta))
}

export_tool!(Write);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_files_and_creates_parents() {
        let dir = std::env::temp_dir().join(format!("tool-write-test-{}", std::process::id()));
        let path = dir.join("a/b/c.txt");
        let state = write_file(&path, b"hello").unwrap();
        assert_eq!(fs::read(&path).unwrap(), b"hello");
        assert_eq!(state.size, 5);
        assert_eq!(state, FileState::of(&fs::metadata(&path).unwrap()));
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn validate_rejects_an_empty_path() {
        let input = Input { file_path: " ".into(), content: String::new() };
        assert!(Write::validate(&input).is_err());
    }
}
