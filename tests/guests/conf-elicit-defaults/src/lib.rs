//! The MCP conformance suite's `test_elicitation_sep1034_defaults` (scenario
//! elicitation-sep1034-defaults): a form whose every field has a default.

use schemars::JsonSchema;
use serde::Deserialize;
use toolhost_sdk::session::{self, Answer};
use toolhost_sdk::{Output, Tool, ToolError, export_tool, serde_json};

#[derive(Deserialize, JsonSchema)]
struct Input {}

struct Defaults;

impl Tool for Defaults {
    type Input = Input;
    const NAME: &'static str = "test_elicitation_sep1034_defaults";
    const DESCRIPTION: &'static str = "Tests elicitation with a default for every field (SEP-1034).";
    const READ_ONLY: bool = true;

    fn call(_input: Input) -> Result<Output, ToolError> {
        let form = serde_json::json!({
            "type": "object",
            "properties": {
                "name": {"type": "string", "description": "User name", "default": "John Doe"},
                "age": {"type": "integer", "description": "User age", "default": 30},
                "score": {"type": "number", "description": "User score", "default": 95.5},
                "status": {"type": "string", "description": "User status", "enum": ["active", "inactive", "pending"], "default": "active"},
                "verified": {"type": "boolean", "description": "Verification status", "default": true}
            }
        });
        let answer = session::elicit("Please review and update the form fields with defaults", &form)
            .map_err(ToolError::Failed)?;
        Ok(Output::text(match answer {
            Answer::Accept(values) => {
                format!("Elicitation completed: action=accept, content={}", serde_json::Value::Object(values))
            }
            Answer::Decline => "Elicitation completed: action=decline".to_string(),
            Answer::Cancel => "Elicitation completed: action=cancel".to_string(),
        }))
    }
}

export_tool!(Defaults);
