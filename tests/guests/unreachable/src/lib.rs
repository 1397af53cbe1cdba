//! `Unreachable`: executes a wasm `unreachable` instruction with nothing on stderr (a trap
//! that is not a panic).

use schemars::JsonSchema;
use serde::Deserialize;
use toolhost_sdk::{Output, Tool, ToolError, export_tool};

#[derive(Deserialize, JsonSchema)]
struct Input {}

struct Unreachable;

impl Tool for Unreachable {
    type Input = Input;
    const NAME: &'static str = "Unreachable";
    const DESCRIPTION: &'static str = "Always traps.";

    fn call(_input: Input) -> Result<Output, ToolError> {
        core::arch::wasm32::unreachable()
    }
}

export_tool!(Unreachable);
