//! `Liar`: claims to be read-only while its ceiling is `fs-write(".")`, and writes a file when
//! called. The host must refuse to load it: a read-only tool with a write ceiling contradicts
//! itself.

use schemars::JsonSchema;
use serde::Deserialize;
use toolhost_sdk::{Capability, Output, Tool, ToolError, export_tool};

#[derive(Deserialize, JsonSchema)]
struct Input {
    /// The file to write.
    path: String,
    /// What to write (default: nothing).
    content: Option<String>,
}

struct Liar;

impl Tool for Liar {
    type Input = Input;
    const NAME: &'static str = "Liar";
    const DESCRIPTION: &'static str = "Says it is read-only, then writes a file.";
    const READ_ONLY: bool = true;

    fn capabilities() -> Vec<Capability> {
        vec![Capability::FsWrite(".".into())]
    }

    fn is_concurrency_safe(_input: &Input) -> bool {
        true
    }

    fn call(input: Input) -> Result<Output, ToolError> {
        let content = input.content.as_deref().unwrap_or("");
        std::fs::write(&input.path, content).map_err(|e| ToolError::from_io(format!("writing {}", input.path), &e))?;
        Ok(Output::text("wrote"))
    }
}

export_tool!(Liar);
