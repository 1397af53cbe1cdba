//! Command programs as tools: the input (`args`, `stdin`), and the answer (exit code, stdout,
//! stderr) as the model reads it.

use super::ToolKind;
use crate::loading::loader::{Described, ToolInfo};
use crate::loading::source::{Origin, ToolSource};
use serde_json::{Value, json};

/// The one tool of a command program: named as the source is known, or after its file (the
/// loader renames it to the config's name).
pub(crate) fn described(source: &ToolSource) -> Described {
    let name = source.known_name().map(str::to_string).unwrap_or_else(|| default_name(&source.origin));
    let input_schema = input_schema();
    // The schema is a constant that compiles; `expect` would be as good, but a load error
    // cannot end the host.
    let validator = jsonschema::validator_for(&input_schema).map_err(|e| {
        crate::error::LoadError::Schema(crate::error::SchemaError::NotASchema {
            tool: name.clone(),
            message: e.to_string(),
        })
    })?;
    let info = ToolInfo {
        description: description(&name),
        name,
        input_schema,
        permission_subject: None,
        read_only: false,
        capabilities: Vec::new(),
        kind: ToolKind::Command,
    };
    Ok((info, validator))
}

/// A command program's name from where it came from: the file's stem, with every character
/// a tool name cannot have replaced by `_` (`my.lint.wasm` → `my_lint`).
fn default_name(origin: &Origin) -> String {
    let label = match origin {
        Origin::File(path) => path.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default(),
        Origin::Embedded(name) | Origin::Bytes(name) | Origin::Mcp(name) => {
            name.strip_suffix(".wasm").unwrap_or(name).to_string()
        }
    };
    let name: String = label
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() || c == '-' || c == '_' { c } else { '_' })
        .take(64)
        .collect();
    if name.is_empty() { "command".to_string() } else { name }
}

/// The input schema of every command program.
pub(crate) fn input_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "args": {
                "type": "array",
                "items": {"type": "string"},
                "description": "The program's arguments, after its name (argv[1..])."
            },
            "stdin": {"type": "string", "description": "What the program reads on its standard input (empty if absent)."}
        },
        "additionalProperties": false
    })
}

/// The input schema `base` with the config's `extension` merged in (objects key by key, the
/// rest replaced), and its validator.
///
/// # Errors
///
/// What is wrong when the extension speaks of another input than `args` and `stdin`, lets
/// other keys in, or does not compile.
pub(crate) fn extended(
    base: &Value,
    extension: &serde_json::Map<String, Value>,
) -> Result<(Value, jsonschema::Validator), String> {
    fn merge(into: &mut Value, from: &Value) {
        match (into, from) {
            (Value::Object(into), Value::Object(from)) => {
                for (k, v) in from {
                    match into.get_mut(k) {
                        Some(existing) => merge(existing, v),
                        None => {
                            into.insert(k.clone(), v.clone());
                        }
                    }
                }
            }
            (into, from) => *into = from.clone(),
        }
    }
    let mut schema = base.clone();
    merge(&mut schema, &Value::Object(extension.clone()));
    if let Some(other) = schema["properties"].as_object().and_then(|p| p.keys().find(|k| *k != "args" && *k != "stdin"))
    {
        return Err(format!("input_schema speaks of {other:?}: a command program takes only `args` and `stdin`"));
    }
    if schema["additionalProperties"] != Value::Bool(false) || schema["type"] != "object" {
        return Err("input_schema may not change `type` or `additionalProperties`".to_string());
    }
    let validator =
        jsonschema::validator_for(&schema).map_err(|e| format!("input_schema is not a valid JSON Schema: {e}"))?;
    Ok((schema, validator))
}

/// The description of a command program the config does not describe.
pub(crate) fn description(name: &str) -> String {
    format!(
        "Runs the WASI command program `{name}` with `args` as its arguments and `stdin` as its standard input; \
         answers its exit code, standard output and standard error. A non-zero exit code is an error."
    )
}

/// A call's input, read from the checked JSON.
pub(crate) struct CommandInput {
    /// `argv[0]`: the tool's name.
    pub(crate) program: String,
    pub(crate) args: Vec<String>,
    pub(crate) stdin: bytes::Bytes,
}

impl CommandInput {
    /// The input's `args` and `stdin` (the schema was checked: other shapes are empty).
    pub(crate) fn from_json(program: &str, input: &Value) -> CommandInput {
        let args = input
            .get("args")
            .and_then(Value::as_array)
            .map(|a| a.iter().filter_map(Value::as_str).map(str::to_string).collect())
            .unwrap_or_default();
        let stdin = input.get("stdin").and_then(Value::as_str).unwrap_or_default().as_bytes().to_vec();
        CommandInput { program: program.to_string(), args, stdin: stdin.into() }
    }
}

/// One stream's text and how many of its first bytes were not kept.
pub(crate) struct Captured {
    pub(crate) text: String,
    pub(crate) dropped: u64,
}

/// The answer the model reads: the exit code, then each stream that wrote anything.
pub(crate) fn answer(code: i32, stdout: &Captured, stderr: &Captured) -> String {
    let mut text = format!("exit code: {code}");
    for (name, stream) in [("stdout", stdout), ("stderr", stderr)] {
        if stream.text.is_empty() && stream.dropped == 0 {
            continue;
        }
        text.push_str(&format!("\n--- {name} ---\n"));
        if stream.dropped > 0 {
            text.push_str(&format!("[the first {} bytes were dropped: limits.max_stdio_bytes]\n", stream.dropped));
        }
        text.push_str(&stream.text);
    }
    text
}
