//! The MCP conformance suite's `test_tool_with_progress` (scenario tools-call-with-progress):
//! three progress reports, then text.

use schemars::JsonSchema;
use serde::Deserialize;
use toolhost_sdk::{Output, Tool, ToolError, export_tool, progress};

#[derive(Deserialize, JsonSchema)]
struct Input {}

struct WithProgress;

impl Tool for WithProgress {
    type Input = Input;
    const NAME: &'static str = "test_tool_with_progress";
    const DESCRIPTION: &'static str = "Tests progress notifications.";
    const READ_ONLY: bool = true;

    fn call(_input: Input) -> Result<Output, ToolError> {
        progress("0 of 100");
        progress("50 of 100");
        progress("100 of 100");
        Ok(Output::text("Progress test completed."))
    }
}

export_tool!(WithProgress);
