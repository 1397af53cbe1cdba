//! What others wrote never reaches the operator's terminal as escape sequences: a stdio MCP
//! server's stderr, a hook's stderr, keys of a cloned repository's Claude Code settings, and
//! a model's tool_use id all come out with their control characters and bidirectional
//! overrides escaped (`\u{1b}`), on stderr, through warnings, the event display and the log.

use serde_json::json;
use std::fs;
use toolhost_tests::cli::{self, assert_exit, run_with_stdin, stderr};

/// Characters that could move the cursor, erase, or reorder what the operator reads.
fn assert_inert(said: &str) {
    for c in said.chars() {
        let bad = (c.is_control() && c != '\n' && c != '\t')
            || matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}');
        assert!(!bad, "{c:?} reached the terminal in: {said:?}");
    }
}

/// The hostile text each source writes: erase the screen, return to the line's start, then
/// a right-to-left override.
const HOSTILE: &str = "\x1b[2Jerased\roverwritten\u{202e}reversed";

#[test]
fn an_mcp_servers_stderr_is_escaped_in_the_warning_that_quotes_it() {
    let ws = toolhost_tests::workspace();
    // Outside the workspace: a host-run file inside it is refused before it runs.
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("server.sh");
    fs::write(&script, "printf '\\033[2Jerased\\roverwritten\\342\\200\\256reversed\\n' >&2; exit 3\n").unwrap();
    let toml = format!("[mcp_servers.bad]\ncommand = \"sh\"\nargs = [{:?}]\n", script.display().to_string());
    fs::write(ws.path().join("toolhost.toml"), toml).unwrap();
    let o = cli::run(ws.path(), &["-v", "list"]);
    let said = stderr(&o);
    assert!(said.contains("MCP server bad"), "{said}");
    assert!(said.contains("\\u{1b}[2Jerased\\u{d}overwritten\\u{202e}reversed"), "{said}");
    assert_inert(&said);
}

#[test]
fn a_hooks_stderr_and_a_models_call_id_are_escaped_in_the_event_display() {
    let ws = toolhost_tests::workspace();
    let hook = "[[hooks.pre_tool_use]]\nmatcher = \"Read\"\ncommand = \"cat > /dev/null; printf '\\\\033[2Jerased\\\\roverwritten' >&2; exit 1\"\n";
    fs::write(ws.path().join("toolhost.toml"), hook).unwrap();
    fs::write(ws.path().join("a.txt"), "hello\n").unwrap();
    let turn = json!({"role": "assistant", "content": [
        {"type": "tool_use", "id": format!("id{HOSTILE}"), "name": "Read", "input": {"file_path": "a.txt"}},
    ]});
    let o = run_with_stdin(ws.path(), &["-v", "run"], &turn.to_string());
    assert_exit(&o, 0);
    let said = stderr(&o);
    assert!(said.contains("hook"), "{said}");
    assert!(said.contains("\\u{1b}[2Jerased"), "{said}");
    assert_inert(&said);
}

#[test]
fn a_cloned_repositorys_settings_cannot_write_escape_sequences_in_their_warnings() {
    let ws = toolhost_tests::workspace();
    fs::create_dir_all(ws.path().join(".claude")).unwrap();
    let settings = json!({"permissions": {"allow": ["Read"], HOSTILE: true}, HOSTILE: 1});
    fs::write(ws.path().join(".claude/settings.json"), settings.to_string()).unwrap();
    let o = cli::run(ws.path(), &["list"]);
    let said = stderr(&o);
    assert!(said.contains("\\u{1b}[2Jerased"), "the unknown keys are named: {said}");
    assert_inert(&said);
}
