//! The MCP conformance suite's `test_error_handling` (scenario tools-call-error).

use schemars::JsonSchema;
use serde::Deserialize;
use toolhost_sdk::{Output, Tool, ToolError, export_tool};

#[derive(Deserialize, JsonSchema)]
struct Input {}

struct ErrorHandling;

impl Tool for ErrorHandling {
    type Input = Input;
    const NAME: &'static str = "test_error_handling";
    const DESCRIPTION: &'static str = "Tests error response handling.";
    const READ_ONLY: bool = true;

    fn call(_input: Input) -> Result<Output, ToolError> {
        Err(ToolError::Failed("This tool intentionally returns an error for testing".to_string()))
    }
}

export_tool!(ErrorHandling);
