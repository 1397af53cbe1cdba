//! The MCP conformance suite's `test_tool_with_logging` (scenario tools-call-with-logging): three
//! info log messages through `toolhost:session`, then text.

use schemars::JsonSchema;
use serde::Deserialize;
use toolhost_sdk::session::{self, LogLevel};
use toolhost_sdk::{Output, Tool, ToolError, export_tool, serde_json};

#[derive(Deserialize, JsonSchema)]
struct Input {}

struct WithLogging;

impl Tool for WithLogging {
    type Input = Input;
    const NAME: &'static str = "test_tool_with_logging";
    const DESCRIPTION: &'static str = "Tests logging notifications.";
    const READ_ONLY: bool = true;

    fn call(_input: Input) -> Result<Output, ToolError> {
        session::log(LogLevel::Info, "Tool execution started");
        session::log(LogLevel::Info, "Tool processing data");
        session::log(LogLevel::Info, "Tool execution completed");
        Ok(Output::text("Logging test completed."))
    }
}

export_tool!(WithLogging);
