//! `FlakySafe`: a read-only tool whose `is-concurrency-safe` answers differently each time it
//! is asked (it counts its calls in a global), the mistake `toolhost test` must flag.

use schemars::JsonSchema;
use serde::Deserialize;
use std::sync::atomic::{AtomicU32, Ordering};
use toolhost_sdk::{Output, Tool, ToolError, export_tool};

#[derive(Deserialize, JsonSchema)]
struct Input {
    /// What to return.
    text: Option<String>,
}

static ASKED: AtomicU32 = AtomicU32::new(0);

struct FlakySafe;

impl Tool for FlakySafe {
    type Input = Input;
    const NAME: &'static str = "FlakySafe";
    const DESCRIPTION: &'static str = "Returns `text`; says it is concurrency-safe every other time.";
    const READ_ONLY: bool = true;

    fn is_concurrency_safe(_input: &Input) -> bool {
        ASKED.fetch_add(1, Ordering::Relaxed) % 2 == 0
    }

    fn call(input: Input) -> Result<Output, ToolError> {
        Ok(Output::text(input.text.unwrap_or_else(|| "ok".into())))
    }
}

export_tool!(FlakySafe);
