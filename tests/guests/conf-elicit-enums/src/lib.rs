//! The MCP conformance suite's `test_elicitation_sep1330_enums` (scenario
//! elicitation-sep1330-enums): every enum form of SEP-1330, single and multiple choice, with
//! and without titles, and the legacy `enumNames`.

use schemars::JsonSchema;
use serde::Deserialize;
use toolhost_sdk::session::{self, Answer};
use toolhost_sdk::{Output, Tool, ToolError, export_tool, serde_json};

#[derive(Deserialize, JsonSchema)]
struct Input {}

struct Enums;

impl Tool for Enums {
    type Input = Input;
    const NAME: &'static str = "test_elicitation_sep1330_enums";
    const DESCRIPTION: &'static str = "Tests elicitation with every enum form (SEP-1330).";
    const READ_ONLY: bool = true;

    fn call(_input: Input) -> Result<Output, ToolError> {
        let titled = |prefix: &str, label: &str| {
            (1..=3)
                .map(|i| {
                    let nth = ["First", "Second", "Third"][i - 1];
                    serde_json::json!({"const": format!("{prefix}{i}"), "title": format!("{nth} {label}")})
                })
                .collect::<Vec<_>>()
        };
        let form = serde_json::json!({
            "type": "object",
            "properties": {
                "untitledSingle": {"type": "string", "description": "Choose one", "enum": ["option1", "option2", "option3"]},
                "titledSingle": {"type": "string", "description": "Choose one", "oneOf": titled("value", "Option")},
                "legacyEnum": {
                    "type": "string", "description": "Choose one",
                    "enum": ["opt1", "opt2", "opt3"], "enumNames": ["Option One", "Option Two", "Option Three"]
                },
                "untitledMulti": {
                    "type": "array", "description": "Choose some", "minItems": 1, "maxItems": 3,
                    "items": {"type": "string", "enum": ["option1", "option2", "option3"]}
                },
                "titledMulti": {
                    "type": "array", "description": "Choose some", "minItems": 1, "maxItems": 3,
                    "items": {"anyOf": titled("value", "Choice")}
                }
            }
        });
        let answer = session::elicit("Please select options", &form).map_err(ToolError::Failed)?;
        Ok(Output::text(match answer {
            Answer::Accept(values) => {
                format!("Elicitation completed: action=accept, content={}", serde_json::Value::Object(values))
            }
            Answer::Decline => "Elicitation completed: action=decline".to_string(),
            Answer::Cancel => "Elicitation completed: action=cancel".to_string(),
        }))
    }
}

export_tool!(Enums);
