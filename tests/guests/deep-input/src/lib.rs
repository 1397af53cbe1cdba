//! `DeepInput`: recurses as deep as its input's `depth` says, with no bound, so a large enough
//! depth overflows the stack: the mistake `toolhost test` must find, shrink and reproduce.

use schemars::JsonSchema;
use serde::Deserialize;
use std::hint::black_box;
use toolhost_sdk::{Output, Tool, ToolError, export_tool};

#[derive(Deserialize, JsonSchema)]
struct Input {
    /// How many levels of the tree to sum.
    depth: u64,
}

#[inline(never)]
fn sum(depth: u64, acc: [u64; 4]) -> u64 {
    if depth == 0 {
        return acc[0];
    }
    let next = [acc[1], acc[2], acc[3], depth];
    // Used after the call, so not a tail call.
    let below = black_box(sum(depth - 1, next));
    below.rotate_left(3) ^ acc[(depth % 4) as usize]
}

struct DeepInput;

impl Tool for DeepInput {
    type Input = Input;
    const NAME: &'static str = "DeepInput";
    const DESCRIPTION: &'static str = "Sums a tree `depth` levels deep.";
    const READ_ONLY: bool = true;

    fn call(input: Input) -> Result<Output, ToolError> {
        Ok(Output::text(sum(black_box(input.depth), black_box([1, 2, 3, 4])).to_string()))
    }
}

export_tool!(DeepInput);
