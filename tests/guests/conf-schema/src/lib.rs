//! The MCP conformance suite's `json_schema_2020_12_tool` (scenario json-schema-2020-12): a
//! JSON Schema 2020-12 input schema with `$defs`, a `$ref` and no additional properties.

use schemars::JsonSchema;
use serde::Deserialize;
use toolhost_sdk::{Output, Tool, ToolError, export_tool};

/// An address.
#[derive(Deserialize, JsonSchema)]
#[schemars(rename = "address")]
#[allow(dead_code)]
struct Address {
    street: Option<String>,
    city: Option<String>,
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
struct Input {
    name: Option<String>,
    address: Option<Address>,
}

struct Schema2020;

impl Tool for Schema2020 {
    type Input = Input;
    const NAME: &'static str = "json_schema_2020_12_tool";
    const DESCRIPTION: &'static str = "Tool with JSON Schema 2020-12 features";
    const READ_ONLY: bool = true;

    fn call(input: Input) -> Result<Output, ToolError> {
        Ok(Output::text(format!("JSON Schema 2020-12 tool called with name {:?}", input.name)))
    }
}

export_tool!(Schema2020);
