//! `Ctx`: reads the session's context map (`get`) and writes to it (`set` = `value`).

use schemars::JsonSchema;
use serde::Deserialize;
use toolhost_sdk::{Output, Tool, ToolError, context_get, export_tool};

#[derive(Deserialize, JsonSchema)]
struct Input {
    /// A key to read; the result is its raw JSON value, or "none".
    get: Option<String>,
    /// A key to set to `value` (as a JSON string) once the call is done.
    set: Option<String>,
    /// The value for `set`.
    value: Option<String>,
    /// Declare this call concurrency-safe.
    safe: Option<bool>,
}

struct Ctx;

impl Tool for Ctx {
    type Input = Input;
    const NAME: &'static str = "Ctx";
    const DESCRIPTION: &'static str = "Reads and writes the session's context map.";

    fn is_concurrency_safe(input: &Input) -> bool {
        input.safe.unwrap_or(false)
    }

    fn call(input: Input) -> Result<Output, ToolError> {
        let got = input.get.as_deref().and_then(context_get).unwrap_or_else(|| "none".into());
        let mut out = Output::text(got);
        if let Some(key) = input.set {
            out = out.with_context(key, &input.value.unwrap_or_default());
        }
        Ok(out)
    }
}

export_tool!(Ctx);
