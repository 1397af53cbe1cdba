//! The MCP conformance suite's `test_elicitation` (scenario tools-call-elicitation): asks the
//! person for a username and an email, and says what they answered.

use schemars::JsonSchema;
use serde::Deserialize;
use toolhost_sdk::session::{self, Answer};
use toolhost_sdk::{Output, Tool, ToolError, export_tool, serde_json};

#[derive(Deserialize, JsonSchema)]
struct Input {
    /// The question to put to the person.
    message: String,
}

struct Elicitation;

impl Tool for Elicitation {
    type Input = Input;
    const NAME: &'static str = "test_elicitation";
    const DESCRIPTION: &'static str = "Tests elicitation: asks the user for a username and an email.";
    const READ_ONLY: bool = true;

    fn call(input: Input) -> Result<Output, ToolError> {
        let form = serde_json::json!({
            "type": "object",
            "properties": {
                "username": {"type": "string", "description": "User's response"},
                "email": {"type": "string", "description": "User's email address"}
            },
            "required": ["username", "email"]
        });
        let answer = session::elicit(&input.message, &form).map_err(ToolError::Failed)?;
        Ok(Output::text(match answer {
            Answer::Accept(values) => {
                format!("User response: action=accept, content={}", serde_json::Value::Object(values))
            }
            Answer::Decline => "User response: action=decline".to_string(),
            Answer::Cancel => "User response: action=cancel".to_string(),
        }))
    }
}

export_tool!(Elicitation);
