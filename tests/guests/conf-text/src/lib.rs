//! The MCP conformance suite's `test_simple_text` (scenario tools-call-simple-text).

use schemars::JsonSchema;
use serde::Deserialize;
use toolhost_sdk::{Output, Tool, ToolError, export_tool};

#[derive(Deserialize, JsonSchema)]
struct Input {}

struct SimpleText;

impl Tool for SimpleText {
    type Input = Input;
    const NAME: &'static str = "test_simple_text";
    const DESCRIPTION: &'static str = "Tests simple text content response.";
    const READ_ONLY: bool = true;

    fn call(_input: Input) -> Result<Output, ToolError> {
        Ok(Output::text("This is a simple text response for testing."))
    }
}

export_tool!(SimpleText);
