//! `StdoutFlood`: writes 10 MiB to stdout and 10 MiB to stderr, then returns "done" (or, with
//! `then_panic`, panics). The host must cap what it keeps, still return the result, and still
//! find a panic message at the end of the flood.

use schemars::JsonSchema;
use serde::Deserialize;
use std::io::Write;
use toolhost_sdk::{Output, Tool, ToolError, export_tool};

#[derive(Deserialize, JsonSchema)]
struct Input {
    /// Panic after the flood instead of returning.
    then_panic: Option<bool>,
}

struct StdoutFlood;

const TOTAL: usize = 10 << 20;

impl Tool for StdoutFlood {
    type Input = Input;
    const NAME: &'static str = "StdoutFlood";
    const DESCRIPTION: &'static str = "Writes 10 MiB to stdout and to stderr, then returns \"done\".";

    fn call(input: Input) -> Result<Output, ToolError> {
        let chunk = vec![b'x'; 64 << 10];
        let mut out = std::io::stdout().lock();
        let mut err = std::io::stderr().lock();
        for _ in 0..TOTAL / chunk.len() {
            out.write_all(&chunk).map_err(|e| ToolError::from_io("writing stdout", &e))?;
            err.write_all(&chunk).map_err(|e| ToolError::from_io("writing stderr", &e))?;
        }
        out.flush().map_err(|e| ToolError::from_io("flushing stdout", &e))?;
        drop((out, err));
        if input.then_panic.unwrap_or(false) {
            panic!("flooded and then panicked");
        }
        Ok(Output::text("done"))
    }
}

export_tool!(StdoutFlood);
