//! Embedding toolhost: load the default tools and answer one assistant turn against this
//! repository — the calls run in parallel where their tools allow it, the results come back in
//! order, paired by id, ready for the next Messages-API request.
//!
//! Run with `cargo run -p toolhost-examples --example embed`.

use serde_json::json;
use std::sync::Arc;
use toolhost::{CallOptions, Event, Runtime, Session, ToolUse};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let workspace = std::env::current_dir()?;
    let mut runtime = Runtime::builder()
        .workspace(&workspace)
        // Progress and timings are for people: print them on stderr.
        .events(Arc::new(|event| {
            if let Event::Finish { tool, outcome, duration_ms, .. } = event {
                eprintln!("{tool}: {outcome} in {:.1} ms", duration_ms.as_secs_f64() * 1000.0);
            }
        }))
        .build()?;
    for source in toolhost_default_tools::sources() {
        runtime.load(source).await?;
    }
    let runtime = Arc::new(runtime);

    // What a model might send in one turn: two reads that can run side by side, then a
    // malformed call and an unknown tool, which still get their results.
    let turn = [
        ToolUse::new("toolu_1", "Glob", json!({"pattern": "*.md"})),
        ToolUse::new("toolu_2", "Read", json!({"file_path": "README.md", "limit": 3})),
        ToolUse::new("toolu_3", "Read", json!({"file_path": 42})),
        ToolUse::new("toolu_4", "Nope", json!({})),
    ];
    let results = runtime.run_batch(&Session::new(), &turn, CallOptions::new()).await;
    let message = json!({ "role": "user", "content": results });
    println!("{}", serde_json::to_string_pretty(&message)?);
    Ok(())
}
