//! `Spin`: loops forever in `call` (a timeout / fuel test).

use schemars::JsonSchema;
use serde::Deserialize;
use std::hint::black_box;
use toolhost_sdk::{Output, Tool, ToolError, export_tool};

#[derive(Deserialize, JsonSchema)]
struct Input {}

struct Spin;

impl Tool for Spin {
    type Input = Input;
    const NAME: &'static str = "Spin";
    const DESCRIPTION: &'static str = "Never returns: spins forever.";

    fn call(_input: Input) -> Result<Output, ToolError> {
        let mut n: u64 = 0;
        // black_box makes every iteration observable, so the loop cannot be optimised away.
        loop {
            n = black_box(n.wrapping_add(1));
        }
    }
}

export_tool!(Spin);
