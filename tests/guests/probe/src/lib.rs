//! `Probe`: pokes at the sandbox with std, using paths exactly as given (no resolution, so
//! relative paths stay relative). Its ceiling is everything (`fs-write("/")`, `env("*")`), so
//! what it can reach is decided by the operator's grant alone.

use schemars::JsonSchema;
use serde::Deserialize;
use toolhost_sdk::{Capability, Output, Tool, ToolError, export_tool};

#[derive(Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
enum Op {
    /// Read the file at `path`.
    Read,
    /// Write `content` to the file at `path`.
    Write,
    /// List the directory at `path`.
    List,
    /// Read the environment variable `name`.
    Env,
    /// Try to read `path` from `validate`, which must have no file access.
    ReadInValidate,
    /// Panic (to show a sibling's trap does not touch the others of a parallel batch).
    Panic,
}

#[derive(Deserialize, JsonSchema)]
struct Input {
    op: Op,
    /// Claim to be concurrency-safe (true or not): how a lying writer is made.
    claim_safe: Option<bool>,
    path: Option<String>,
    content: Option<String>,
    name: Option<String>,
}

struct Probe;

fn need<'a>(value: &'a Option<String>, what: &str) -> Result<&'a str, ToolError> {
    value.as_deref().ok_or_else(|| ToolError::InvalidInput(format!("`{what}` is required")))
}

impl Tool for Probe {
    type Input = Input;
    const NAME: &'static str = "Probe";
    const DESCRIPTION: &'static str =
        "Reads, writes and lists files and reads environment variables, for sandbox tests.";

    fn capabilities() -> Vec<Capability> {
        vec![Capability::FsWrite("/".into()), Capability::Env("*".into())]
    }

    fn is_concurrency_safe(input: &Input) -> bool {
        input.claim_safe.unwrap_or(false)
    }

    fn validate(input: &Input) -> Result<(), String> {
        if let Op::ReadInValidate = input.op {
            let path = input.path.as_deref().unwrap_or("");
            return match std::fs::read_to_string(path) {
                Ok(content) => Err(format!("validate could read the file: {content}")),
                Err(err) => Err(format!("validate was refused: {err}")),
            };
        }
        Ok(())
    }

    fn call(input: Input) -> Result<Output, ToolError> {
        match input.op {
            Op::Read => {
                let path = need(&input.path, "path")?;
                let text =
                    std::fs::read_to_string(path).map_err(|e| ToolError::from_io(format!("reading {path}"), &e))?;
                Ok(Output::text(text))
            }
            Op::Write => {
                let path = need(&input.path, "path")?;
                let content = input.content.as_deref().unwrap_or("");
                std::fs::write(path, content).map_err(|e| ToolError::from_io(format!("writing {path}"), &e))?;
                Ok(Output::text(format!("wrote {} bytes", content.len())))
            }
            Op::List => {
                let path = need(&input.path, "path")?;
                let listing = |e| ToolError::from_io(format!("listing {path}"), &e);
                let mut names = Vec::new();
                for entry in std::fs::read_dir(path).map_err(listing)? {
                    names.push(entry.map_err(listing)?.file_name().to_string_lossy().into_owned());
                }
                names.sort();
                Ok(Output::text(names.join("\n")))
            }
            Op::Env => {
                let name = need(&input.name, "name")?;
                Ok(Output::text(std::env::var(name).unwrap_or_else(|_| "unset".into())))
            }
            Op::ReadInValidate => Ok(Output::text("call ran although validate refuses this op")),
            Op::Panic => panic!("probe panicked on request"),
        }
    }
}

export_tool!(Probe);
