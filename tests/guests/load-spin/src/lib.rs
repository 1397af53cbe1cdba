//! `LoadSpin`: its `schema` export never returns (the capability list it reports is computed
//! in an endless loop). Loading it must cost every start at most the load deadline, once.

use schemars::JsonSchema;
use serde::Deserialize;
use toolhost_sdk::{Capability, Output, Tool, ToolError, export_tool};

#[derive(Deserialize, JsonSchema)]
struct Input {}

struct LoadSpin;

impl Tool for LoadSpin {
    type Input = Input;
    const NAME: &'static str = "LoadSpin";
    const DESCRIPTION: &'static str = "Never finishes describing itself.";

    fn capabilities() -> Vec<Capability> {
        let mut n: u64 = 0;
        loop {
            n = std::hint::black_box(n.wrapping_add(1));
        }
    }

    fn call(_input: Input) -> Result<Output, ToolError> {
        Ok(Output::text("unreachable: never loads"))
    }
}

export_tool!(LoadSpin);
