//! `Recurse`: unbounded, non-tail recursion (a stack overflow test).
//!
//! The frame keeps its locals in wasm locals (nothing has its address taken), so what runs out
//! is the engine's wasm stack, not the shadow stack Rust keeps in linear memory.

use schemars::JsonSchema;
use serde::Deserialize;
use std::hint::black_box;
use toolhost_sdk::{Output, Tool, ToolError, export_tool};

#[derive(Deserialize, JsonSchema)]
struct Input {}

struct Recurse;

#[inline(never)]
fn recurse(depth: u64, stack: [u64; 4]) -> u64 {
    if depth == u64::MAX {
        return stack[0];
    }
    let next = [stack[1], stack[2], stack[3], depth];
    // The result is used after the call (through black_box), so this is not a tail call and
    // cannot be turned into a loop.
    let below = black_box(recurse(depth + 1, next));
    below.rotate_left(7) ^ stack[(depth % 4) as usize]
}

impl Tool for Recurse {
    type Input = Input;
    const NAME: &'static str = "Recurse";
    const DESCRIPTION: &'static str = "Never returns: recurses until the stack runs out.";

    fn call(_input: Input) -> Result<Output, ToolError> {
        let n = recurse(black_box(0), black_box([1, 2, 3, 4]));
        Ok(Output::text(n.to_string()))
    }
}

export_tool!(Recurse);
