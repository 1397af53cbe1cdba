//! `Sleep`: sleeps `ms` milliseconds in a WASI clock wait (a guest parked in the host, where
//! no epoch check happens), then returns "slept".

use schemars::JsonSchema;
use serde::Deserialize;
use std::time::Duration;
use toolhost_sdk::{Output, Tool, ToolError, export_tool};

#[derive(Deserialize, JsonSchema)]
struct Input {
    /// How long to sleep, in milliseconds.
    ms: u64,
}

struct Sleep;

impl Tool for Sleep {
    type Input = Input;
    const NAME: &'static str = "Sleep";
    const DESCRIPTION: &'static str = "Sleeps `ms` milliseconds.";
    const READ_ONLY: bool = true;

    fn call(input: Input) -> Result<Output, ToolError> {
        std::thread::sleep(Duration::from_millis(input.ms));
        Ok(Output::text("slept"))
    }
}

export_tool!(Sleep);
