//! `TrapValidate`: its `validate` panics for a `count` above 900 (the schema allows up to
//! 1000), the mistake `toolhost test` must flag and shrink to 901.

use schemars::JsonSchema;
use serde::Deserialize;
use toolhost_sdk::{Output, Tool, ToolError, export_tool};

#[derive(Deserialize, JsonSchema)]
struct Input {
    /// How many rows to make.
    #[schemars(range(max = 1000))]
    count: u32,
    /// A label for them.
    label: Option<String>,
}

struct TrapValidate;

impl Tool for TrapValidate {
    type Input = Input;
    const NAME: &'static str = "TrapValidate";
    const DESCRIPTION: &'static str = "Makes `count` numbered rows.";
    const READ_ONLY: bool = true;

    fn validate(input: &Input) -> Result<(), String> {
        let table = [0u8; 901];
        // Indexes past the table for a count above 900: a panic, not an error.
        let _ = table[input.count as usize];
        Ok(())
    }

    fn call(input: Input) -> Result<Output, ToolError> {
        let label = input.label.unwrap_or_else(|| "row".into());
        Ok(Output::text((1..=input.count).map(|i| format!("{label} {i}")).collect::<Vec<_>>().join("\n")))
    }
}

export_tool!(TrapValidate);
