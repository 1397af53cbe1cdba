//! A tool whose schema names it `bad name!`, which the loader must refuse.

use schemars::JsonSchema;
use serde::Deserialize;
use toolhost_sdk::{Output, Tool, ToolError, export_tool};

#[derive(Deserialize, JsonSchema)]
struct Input {}

struct BadSchema;

impl Tool for BadSchema {
    type Input = Input;
    const NAME: &'static str = "bad name!";
    const DESCRIPTION: &'static str = "Has a name no model could call.";

    fn call(_input: Input) -> Result<Output, ToolError> {
        Ok(Output::text("should never load"))
    }
}

export_tool!(BadSchema);
