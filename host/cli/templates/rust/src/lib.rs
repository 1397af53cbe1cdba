//! {{name}}: a toolhost tool. It counts the lines and bytes of a file in the workspace; change
//! `schema`, `validate` and `call` to make it yours. Build with `./build.sh`, try it with
//! `toolhost --tools dist call {{name}} '{"path":"README.md"}'`.
//!
//! (Inside the toolhost repository you may prefer the typed SDK in plugins/sdk, which derives
//! the schema from a struct; this template uses wit-bindgen directly so it builds anywhere.)

wit_bindgen::generate!({ path: "wit/tool@0.1.0", world: "plugin" });

use exports::toolhost::tool::tool::Guest;
use serde_json::Value;
use toolhost::tool::host;
use toolhost::tool::types::{Capability, ContentBlock, ToolError, ToolOutput, ToolSchema};

const NAME: &str = "{{name}}";

const SCHEMA: &str = r#"{
  "$schema": "https://json-schema.org/draft/2020-12/schema",
  "type": "object",
  "properties": {
    "path": { "type": "string", "description": "A file, relative to the workspace or absolute." }
  },
  "required": ["path"],
  "additionalProperties": false
}"#;

struct Tool;

fn path_of(input: &str) -> Result<String, String> {
    let v: Value = serde_json::from_str(input).map_err(|e| format!("input is not JSON: {e}"))?;
    v["path"].as_str().map(str::to_string).ok_or_else(|| "`path` must be a string".to_string())
}

impl Guest for Tool {
    fn schema() -> ToolSchema {
        ToolSchema {
            name: NAME.into(),
            description: "Counts the lines and bytes of a file in the workspace.".into(),
            input_schema: SCHEMA.into(),
            permission_subject: Some("/path".into()), // what permission rules match
            read_only: true,                           // never writes: may run in parallel
            capabilities: vec![Capability::FsRead(".".into())], // the most it may be granted
        }
    }

    fn is_concurrency_safe(_input: String) -> bool {
        true
    }

    // Runs with no capabilities at all: decide from the input alone.
    fn validate(input: String) -> Result<(), String> {
        if path_of(&input)?.trim().is_empty() {
            return Err(format!("{NAME}: `path` is empty; give a file such as \"README.md\""));
        }
        Ok(())
    }

    fn call(input: String) -> Result<ToolOutput, ToolError> {
        let path = path_of(&input).map_err(ToolError::InvalidInput)?;
        // Granted directories are preopened at their absolute paths only: change into the
        // workspace so that relative paths resolve against it.
        if let Some(ws) = host::context_get("toolhost.workspace").and_then(|j| serde_json::from_str::<String>(&j).ok()) {
            let _ = std::env::set_current_dir(ws);
        }
        let bytes = std::fs::read(&path).map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound => ToolError::InvalidInput(format!("{path}: no such file (or outside the grant)")),
            std::io::ErrorKind::PermissionDenied => ToolError::Denied(format!("{path}: {e}")),
            _ => ToolError::Failed(format!("{path}: {e}")),
        })?;
        let lines = bytes.iter().filter(|&&b| b == b'\n').count();
        Ok(ToolOutput {
            content: vec![ContentBlock::Text(format!("{path}: {lines} lines, {} bytes", bytes.len()))],
            context_updates: vec![],
        })
    }
}

export!(Tool);
