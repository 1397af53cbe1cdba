//! `BadExample`: its schema carries an example its own schema refuses (`limit` as a string),
//! the mistake `toolhost test` must flag.

use schemars::JsonSchema;
use serde::Deserialize;
use toolhost_sdk::{Output, Tool, ToolError, export_tool};

#[derive(Deserialize, JsonSchema)]
#[schemars(example = bad_example(), example = good_example())]
struct Input {
    /// What to search for.
    query: String,
    /// At most this many results.
    limit: Option<u32>,
}

fn bad_example() -> toolhost_sdk::serde_json::Value {
    toolhost_sdk::serde_json::json!({"query": "cats", "limit": "ten"})
}

fn good_example() -> toolhost_sdk::serde_json::Value {
    toolhost_sdk::serde_json::json!({"query": "dogs", "limit": 10})
}

struct BadExample;

impl Tool for BadExample {
    type Input = Input;
    const NAME: &'static str = "BadExample";
    const DESCRIPTION: &'static str = "Echoes a query.";
    const READ_ONLY: bool = true;

    fn call(input: Input) -> Result<Output, ToolError> {
        Ok(Output::text(format!("{} (limit {})", input.query, input.limit.unwrap_or(5))))
    }
}

export_tool!(BadExample);
