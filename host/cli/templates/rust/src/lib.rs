//! {{name}}: a toolhost tool. It counts the lines and bytes of a file in the workspace; change
//! `Input`, `validate` and `call` to make it yours. Build and test with `./build.sh`, try it
//! with `toolhost --tools dist call {{name}} '{"path":"README.md"}'`.

use schemars::JsonSchema;
use serde::Deserialize;
use toolhost_sdk::{Capability, Output, Tool, ToolError, export_tool};

/// The input. Its JSON Schema is derived from this struct: the doc comments become the
/// descriptions the model reads, and unknown properties are refused.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(example = example())]
struct Input {
    /// A file, relative to the workspace or absolute.
    path: String,
}

/// An input the schema shows the model (and `toolhost test` checks against the schema).
fn example() -> toolhost_sdk::serde_json::Value {
    toolhost_sdk::serde_json::json!({"path": "README.md"})
}

struct ThisTool;

impl Tool for ThisTool {
    type Input = Input;
    const NAME: &'static str = "{{name}}";
    const DESCRIPTION: &'static str = "Counts the lines and bytes of a file in the workspace.";
    /// What permission rules match: `{{name}}(src/**)` allows files under src/.
    const PERMISSION_SUBJECT: Option<&'static str> = Some("/path");
    /// Never writes: runs without asking inside the workspace, and beside other calls.
    const READ_ONLY: bool = true;

    /// The most it may ever be granted.
    fn capabilities() -> Vec<Capability> {
        vec![Capability::FsRead(".".into())]
    }

    /// Runs with no capabilities at all: decide from the input alone.
    fn validate(input: &Input) -> Result<(), String> {
        if input.path.trim().is_empty() {
            return Err("`path` is empty; give a file such as \"README.md\"".into());
        }
        Ok(())
    }

    /// Runs in the workspace (relative paths resolve against it) with the granted files.
    fn call(input: Input) -> Result<Output, ToolError> {
        let bytes = std::fs::read(&input.path).map_err(|e| ToolError::from_io(format!("reading {}", input.path), &e))?;
        let lines = bytes.iter().filter(|&&b| b == b'\n').count();
        Ok(Output::text(format!("{}: {lines} lines, {} bytes", input.path, bytes.len())))
    }
}

export_tool!(ThisTool);
