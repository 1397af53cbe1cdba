//! `Panic`: panics with a known message (the message must reach the error result).

use schemars::JsonSchema;
use serde::Deserialize;
use toolhost_sdk::{Output, Tool, ToolError, export_tool};

#[derive(Deserialize, JsonSchema)]
struct Input {}

struct Panic;

impl Tool for Panic {
    type Input = Input;
    const NAME: &'static str = "Panic";
    const DESCRIPTION: &'static str = "Always panics.";

    fn call(_input: Input) -> Result<Output, ToolError> {
        panic!("boom: the tool panicked on purpose")
    }
}

export_tool!(Panic);
