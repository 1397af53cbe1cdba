//! `Progress`: reports two progress messages, then returns "done".

use schemars::JsonSchema;
use serde::Deserialize;
use toolhost_sdk::{Output, Tool, ToolError, export_tool, progress};

#[derive(Deserialize, JsonSchema)]
struct Input {}

struct Progress;

impl Tool for Progress {
    type Input = Input;
    const NAME: &'static str = "Progress";
    const DESCRIPTION: &'static str = "Reports progress twice, then returns \"done\".";

    fn call(_input: Input) -> Result<Output, ToolError> {
        progress("step 1");
        progress("step 2");
        Ok(Output::text("done"))
    }
}

export_tool!(Progress);
