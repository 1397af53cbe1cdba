//! `AllocBomb`: allocates and touches 1 MiB chunks forever, keeping every one (a memory limit
//! test).

use schemars::JsonSchema;
use serde::Deserialize;
use std::hint::black_box;
use toolhost_sdk::{Output, Tool, ToolError, export_tool};

#[derive(Deserialize, JsonSchema)]
struct Input {}

struct AllocBomb;

impl Tool for AllocBomb {
    type Input = Input;
    const NAME: &'static str = "AllocBomb";
    const DESCRIPTION: &'static str = "Never returns: allocates memory until it is stopped.";

    fn call(_input: Input) -> Result<Output, ToolError> {
        let mut kept: Vec<Vec<u8>> = Vec::new();
        loop {
            let mut chunk = vec![0u8; 1 << 20];
            for i in (0..chunk.len()).step_by(4096) {
                chunk[i] = (i as u8).wrapping_add(1);
            }
            kept.push(black_box(chunk));
            black_box(&kept);
        }
    }
}

export_tool!(AllocBomb);
