//! `Burn`: CPU-bound work for the parallelism benchmark: `rounds` rounds of an integer hash,
//! read-only and concurrency-safe.

use schemars::JsonSchema;
use serde::Deserialize;
use toolhost_sdk::{Output, Tool, ToolError, export_tool};

#[derive(Deserialize, JsonSchema)]
struct Input {
    /// How many rounds to compute.
    rounds: u64,
}

struct Burn;

impl Tool for Burn {
    type Input = Input;
    const NAME: &'static str = "Burn";
    const DESCRIPTION: &'static str = "Burns CPU for a given number of rounds.";
    const READ_ONLY: bool = true;

    fn call(input: Input) -> Result<Output, ToolError> {
        let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
        for i in 0..input.rounds {
            x = std::hint::black_box(x.rotate_left(5) ^ i).wrapping_mul(0x2545_F491_4F6C_DD1D);
        }
        Ok(Output::text(format!("{x:x}")))
    }
}

export_tool!(Burn);
