//! `Recurse`: unbounded, non-tail recursion (a stack overflow test), in two flavours.
//!
//! By default the frames keep their locals in wasm locals (nothing has its address taken), so
//! what runs out is the engine's wasm stack. With `shadow: true` every frame holds a 2 KiB
//! array whose address escapes, which lives on the shadow stack Rust keeps in linear memory
//! (1 MiB, below the data): that one runs out first.

use schemars::JsonSchema;
use serde::Deserialize;
use std::hint::black_box;
use toolhost_sdk::{Output, Tool, ToolError, export_tool};

#[derive(Deserialize, JsonSchema)]
struct Input {
    /// Overflow the shadow stack in linear memory rather than the wasm stack.
    shadow: Option<bool>,
}

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

#[inline(never)]
fn recurse_shadow(depth: u64) -> u64 {
    let mut frame = [0u8; 2048];
    frame[(depth % 2048) as usize] = depth as u8;
    // The array's address escapes, so it must live in memory: on the shadow stack.
    black_box(&mut frame);
    if depth == u64::MAX {
        return 0;
    }
    let below = black_box(recurse_shadow(depth + 1));
    below.rotate_left(7) ^ u64::from(frame[(depth % 7) as usize])
}

impl Tool for Recurse {
    type Input = Input;
    const NAME: &'static str = "Recurse";
    const DESCRIPTION: &'static str = "Never returns: recurses until the stack runs out.";

    fn call(input: Input) -> Result<Output, ToolError> {
        let n = if input.shadow.unwrap_or(false) {
            recurse_shadow(black_box(0))
        } else {
            recurse(black_box(0), black_box([1, 2, 3, 4]))
        };
        Ok(Output::text(n.to_string()))
    }
}

export_tool!(Recurse);
