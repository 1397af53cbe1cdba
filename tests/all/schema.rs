//! The checks before a tool runs and the mapping after: lookup, JSON Schema validation (every
//! violation, with its JSON path), the tool's own `validate`, and result truncation.

use serde_json::json;
use std::fs;
use std::path::Path;
use toolhost::policy::Config;
use toolhost::{OutcomeKind, Runtime, Session, ToolResult, ToolSource};
use toolhost_tests::{call, config, runtime, workspace};

async fn with_tools(ws: &Path, config: Config, names: &[&str]) -> Runtime {
    let sources = names
        .iter()
        .map(|n| {
            ToolSource::embedded(n, toolhost_default_tools::get(n).unwrap_or_else(|| panic!("no default tool {n}")))
        })
        .collect();
    runtime(ws, config, sources).await
}

fn err(result: &ToolResult, kind: OutcomeKind) -> String {
    assert!(result.is_error, "expected an error, got {result:?}");
    assert_eq!(result.outcome, kind, "{result:?}");
    assert_eq!(result.content.len(), 1, "an error result is one text block: {result:?}");
    result.text()
}

#[tokio::test(flavor = "multi_thread")]
async fn every_schema_violation_is_listed_with_its_path() {
    let ws = workspace();
    let rt = with_tools(ws.path(), Config::default(), &["Edit"]).await;
    // Wrong type (/file_path), a missing required field (new_string), an unknown field (extra),
    // and a wrong type in an optional field (/replace_all), all at once.
    let input = json!({"file_path": 123, "old_string": "a", "extra": true, "replace_all": "yes"});
    let r = call(&rt, &Session::new(), "Edit", input).await;
    let text = err(&r, OutcomeKind::SchemaError);
    assert!(
        text.starts_with("<tool_use_error>InputValidationError: Edit failed due to the following issues:\n"),
        "{text}"
    );
    assert!(text.ends_with("</tool_use_error>"), "{text}");
    let issues: Vec<&str> = text.lines().filter(|l| l.starts_with("- ")).collect();
    assert_eq!(issues.len(), 4, "{text}");
    let issue = |needle: &str| {
        issues.iter().find(|l| l.contains(needle)).unwrap_or_else(|| panic!("no issue about {needle}: {text}"))
    };
    assert!(issue("`/file_path`").contains("123"), "{text}");
    assert!(issue("`/replace_all`").contains("\"yes\""), "{text}");
    assert!(issue("new_string").starts_with("- (root): "), "{text}");
    assert!(issue("extra").starts_with("- (root): "), "{text}");
    // Nothing ran: no file was created by the bad call.
    assert_eq!(fs::read_dir(ws.path()).unwrap().count(), 0);
}

#[tokio::test(flavor = "multi_thread")]
async fn one_violation_is_one_issue() {
    let ws = workspace();
    let rt = with_tools(ws.path(), Config::default(), &["Read"]).await;
    let r = call(&rt, &Session::new(), "Read", json!({"file_path": "a.txt", "limit": "10"})).await;
    let text = err(&r, OutcomeKind::SchemaError);
    assert!(
        text.starts_with("<tool_use_error>InputValidationError: Read failed due to the following issue:\n- `/limit`: "),
        "{text}"
    );
    let r = call(&rt, &Session::new(), "Read", json!({})).await;
    let text = err(&r, OutcomeKind::SchemaError);
    assert!(text.contains("- (root): ") && text.contains("file_path"), "{text}");
}

#[tokio::test(flavor = "multi_thread")]
async fn input_that_is_not_an_object_is_a_schema_error() {
    let ws = workspace();
    fs::write(ws.path().join("a.txt"), "x\n").unwrap();
    let rt = with_tools(ws.path(), Config::default(), &["Read"]).await;
    let session = Session::new();
    for input in [json!("a.txt"), json!(["a.txt"]), json!(null), json!(7)] {
        let r = call(&rt, &session, "Read", input.clone()).await;
        let text = err(&r, OutcomeKind::SchemaError);
        assert!(text.starts_with("<tool_use_error>InputValidationError"), "{input}: {text}");
        assert!(text.contains("- (root): "), "{input}: {text}");
        assert!(!text.contains("     1\tx"), "{input}: the tool must not have run: {text}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn unknown_tools_are_named() {
    let ws = workspace();
    let rt = with_tools(ws.path(), Config::default(), &["Read"]).await;
    let r = call(&rt, &Session::new(), "NoSuchTool", json!({"file_path": "a.txt"})).await;
    assert_eq!(
        err(&r, OutcomeKind::UnknownTool),
        "<tool_use_error>Error: No such tool available: NoSuchTool</tool_use_error>"
    );
    // Names are case-sensitive.
    let r = call(&rt, &Session::new(), "read", json!({"file_path": "a.txt"})).await;
    assert!(err(&r, OutcomeKind::UnknownTool).contains("No such tool available: read"), "{r:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn validate_failures_carry_the_tools_message() {
    let ws = workspace();
    fs::write(ws.path().join("a.txt"), "same\n").unwrap();
    let rt = with_tools(ws.path(), Config::default(), &["Read", "Edit", "Grep", "Glob"]).await;
    let session = Session::new();

    // Edit validates before it checks that the file was read, and before it touches anything.
    let r = call(&rt, &session, "Edit", json!({"file_path": "new.txt", "old_string": "", "new_string": ""})).await;
    assert_eq!(
        err(&r, OutcomeKind::ValidateError),
        "<tool_use_error>No changes to make: old_string and new_string are exactly the same.</tool_use_error>"
    );
    assert!(!ws.path().join("new.txt").exists());

    let r = call(&rt, &session, "Read", json!({"file_path": "a.txt", "offset": 0})).await;
    let text = err(&r, OutcomeKind::ValidateError);
    assert!(text.starts_with("<tool_use_error>offset is a 1-based line number"), "{text}");
    // A failed validate records nothing in the session.
    assert!(session.snapshot().keys().all(|k| !k.starts_with("toolhost/read:")), "{:?}", session.snapshot());

    let r = call(&rt, &session, "Read", json!({"file_path": "  "})).await;
    assert_eq!(err(&r, OutcomeKind::ValidateError), "<tool_use_error>file_path must not be empty.</tool_use_error>");

    let r = call(&rt, &session, "Grep", json!({"pattern": "a(b"})).await;
    let text = err(&r, OutcomeKind::ValidateError);
    assert!(text.starts_with("<tool_use_error>Invalid regex pattern: "), "{text}");

    let r = call(&rt, &session, "Grep", json!({"pattern": "x", "type": "nosuchtype"})).await;
    assert!(err(&r, OutcomeKind::ValidateError).contains("Unknown file type \"nosuchtype\""), "{r:?}");

    let r = call(&rt, &session, "Glob", json!({"pattern": "src/[a"})).await;
    assert!(err(&r, OutcomeKind::ValidateError).starts_with("<tool_use_error>Invalid glob pattern: "), "{r:?}");
}

// Empty output: no default tool produces an empty result (an empty file reads as a reminder,
// no match as "No files found"/"No matches found", an empty directory as its root line), so
// the "(TOOL completed with no output)" marker is not reachable from them and is not tested here.

#[tokio::test(flavor = "multi_thread")]
async fn large_results_are_cut_to_a_preview_and_saved_whole() {
    let ws = workspace();
    let content: String = (1..=40).map(|i| format!("line number {i:02} of the big file\n")).collect();
    fs::write(ws.path().join("big.txt"), &content).unwrap();
    let rt = with_tools(ws.path(), config("[limits]\nmax_result_chars = 100\n"), &["Read"]).await;
    let full: String =
        (1..=40).map(|i| format!("{i:>6}\tline number {i:02} of the big file")).collect::<Vec<_>>().join("\n");

    let r = call(&rt, &Session::new(), "Read", json!({"file_path": "big.txt"})).await;
    assert!(!r.is_error, "{r:?}");
    assert_eq!(r.outcome, OutcomeKind::Success);
    let text = r.text();
    assert!(text.starts_with("<persisted-output>\n"), "{text}");
    assert!(text.ends_with("</persisted-output>"), "{text}");
    assert!(text.contains(&format!("Output too large ({} characters)", full.chars().count())), "{text}");
    assert!(text.len() < full.len(), "the preview is shorter than the whole: {text}");

    // The note names a file under WORKSPACE/.toolhost/results that holds the whole text.
    let saved = text
        .lines()
        .find_map(|l| l.split_once("Full output saved to: ").map(|(_, p)| p.trim().to_string()))
        .unwrap_or_else(|| panic!("no saved path in {text}"));
    let saved = Path::new(&saved);
    assert!(saved.starts_with(rt.workspace().join(".toolhost").join("results")), "{}", saved.display());
    // Named after the call, with a random part no tool can predict (and plant a link at).
    let name = saved.file_name().unwrap().to_str().unwrap();
    assert!(name.starts_with(&format!("{}-", r.tool_use_id)) && name.ends_with(".txt"), "{name}");
    assert!(name.len() > r.tool_use_id.len() + 12, "{name}");
    assert_eq!(fs::read_to_string(saved).unwrap(), full);

    // The preview is the start of the whole text.
    let preview =
        text.split_once("characters):\n").map(|(_, rest)| rest).unwrap_or_else(|| panic!("no preview in {text}"));
    let preview = preview.strip_suffix("\n...\n</persisted-output>").unwrap_or_else(|| panic!("{text}"));
    assert!(!preview.is_empty());
    assert!(full.starts_with(preview), "{preview:?}");

    // A result under the limit is untouched.
    let r = call(&rt, &Session::new(), "Read", json!({"file_path": "big.txt", "limit": 2})).await;
    assert_eq!(r.text(), "     1\tline number 01 of the big file\n     2\tline number 02 of the big file");
}
