//! `Noop`: returns its `text`, or "ok". The cheapest possible call (used by benches and as the
//! healthy call after a misbehaving one).

use schemars::JsonSchema;
use serde::Deserialize;
use toolhost_sdk::{Output, Tool, ToolError, export_tool};

#[derive(Deserialize, JsonSchema)]
struct Input {
    /// What to return (default "ok").
    text: Option<String>,
}

struct Noop;

impl Tool for Noop {
    type Input = Input;
    const NAME: &'static str = "Noop";
    const DESCRIPTION: &'static str = "Does nothing; returns `text` or \"ok\".";
    const READ_ONLY: bool = true;

    fn call(input: Input) -> Result<Output, ToolError> {
        Ok(Output::text(input.text.unwrap_or_else(|| "ok".into())))
    }
}

export_tool!(Noop);
