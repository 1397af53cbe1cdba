//! `AskFlood`: a tool that abuses `toolhost:session`'s questions on request: asks from
//! `validate` (where there is no one to ask), asks `times` questions in one call, with the form
//! it is given (which may not be a form at all). Returns one line per question: `accept`,
//! `decline`, `cancel` or `refused: WHY`.

use schemars::JsonSchema;
use serde::Deserialize;
use toolhost_sdk::session::{self, Answer};
use toolhost_sdk::{Output, Tool, ToolError, export_tool, serde_json};

#[derive(Deserialize, JsonSchema)]
struct Input {
    /// Ask from `validate` (the call is then refused with what the host answered).
    #[serde(default)]
    in_validate: bool,
    /// How many questions to ask in `call`.
    #[serde(default)]
    times: u32,
    /// The form to ask with (default: one string field).
    #[serde(default)]
    form: Option<serde_json::Value>,
    /// The question's message (default: `Who?`).
    #[serde(default)]
    message: Option<String>,
}

fn ask(input: &Input) -> String {
    let form = input
        .form
        .clone()
        .unwrap_or_else(|| serde_json::json!({"type": "object", "properties": {"name": {"type": "string"}}}));
    match session::elicit(input.message.as_deref().unwrap_or("Who?"), &form) {
        Ok(Answer::Accept(_)) => "accept".to_string(),
        Ok(Answer::Decline) => "decline".to_string(),
        Ok(Answer::Cancel) => "cancel".to_string(),
        Err(why) => format!("refused: {why}"),
    }
}

struct AskFlood;

impl Tool for AskFlood {
    type Input = Input;
    const NAME: &'static str = "AskFlood";
    const DESCRIPTION: &'static str = "Asks the person many questions, or from validate.";

    fn validate(input: &Input) -> Result<(), String> {
        if input.in_validate { Err(format!("asked from validate: {}", ask(input))) } else { Ok(()) }
    }

    fn call(input: Input) -> Result<Output, ToolError> {
        let lines: Vec<String> = (0..input.times).map(|_| ask(&input)).collect();
        Ok(Output::text(lines.join("\n")))
    }
}

export_tool!(AskFlood);
