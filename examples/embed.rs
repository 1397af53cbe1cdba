//! Embedding toolhost: load the default tools, run a few calls against this repository, print
//! the tool_results as the Messages API wants them.
//!
//! Run with `cargo run -p toolhost-examples --example embed`.

use serde_json::json;
use toolhost::{Runtime, Session, ToolSource, ToolUse};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let workspace = std::env::current_dir()?;
    let mut runtime = Runtime::builder().workspace(&workspace).build()?;
    for (name, bytes) in toolhost_default_tools::TOOLS {
        runtime.load(ToolSource::embedded(name, bytes)).await?;
    }
    let session = Session::new();
    let calls = [
        ToolUse::new("toolu_1", "Glob", json!({"pattern": "*.md"})),
        ToolUse::new("toolu_2", "Read", json!({"file_path": "README.md", "limit": 3})),
        ToolUse::new("toolu_3", "Read", json!({"file_path": 42})),
        ToolUse::new("toolu_4", "Nope", json!({})),
    ];
    for call in &calls {
        let result = runtime.call(&session, call).await;
        println!("{}", serde_json::to_string_pretty(&result)?);
    }
    Ok(())
}
