//! The embedded default tools (Read, Write, Edit, Glob, Grep, LS) on temporary workspaces:
//! their happy paths and their output formats, Edit's read-before-edit rule driven by the
//! session's context updates, and the workspace boundary.

use serde_json::json;
use std::fs;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};
use toolhost::policy::Config;
use toolhost::{OutcomeKind, Runtime, Session, ToolResult, ToolSource, ToolUse};
use toolhost_tests::{call, default_runtime, runtime, workspace};

/// A runtime over `ws` with only the named default tools (compiling all of them for every test
/// would cost more than the tests themselves).
async fn with_tools(ws: &Path, names: &[&str]) -> Runtime {
    let sources = names
        .iter()
        .map(|n| {
            ToolSource::embedded(n, toolhost_default_tools::get(n).unwrap_or_else(|| panic!("no default tool {n}")))
        })
        .collect();
    runtime(ws, Config::default(), sources).await
}

/// The text of a successful result (panics with the result otherwise).
fn ok(result: &ToolResult) -> String {
    assert!(!result.is_error, "expected success, got {result:?}");
    assert_eq!(result.outcome, OutcomeKind::Success, "{result:?}");
    result.text()
}

/// The text of an error result of the given kind.
fn err(result: &ToolResult, kind: OutcomeKind) -> String {
    assert!(result.is_error, "expected an error, got {result:?}");
    assert_eq!(result.outcome, kind, "{result:?}");
    result.text()
}

fn write(root: &Path, relative: &str, content: &str) -> PathBuf {
    let path = root.join(relative);
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(&path, content).unwrap();
    path
}

/// Give a file a modification time `secs` seconds after an arbitrary fixed point, so that
/// "newest first" orders are deterministic.
fn set_mtime(path: &Path, secs: u64) {
    let time = SystemTime::UNIX_EPOCH + Duration::from_secs(1_600_000_000 + secs);
    fs::File::options().write(true).open(path).unwrap().set_modified(time).unwrap();
}

fn lines(text: &str) -> Vec<&str> {
    text.lines().collect()
}

// ---------------------------------------------------------------------------------------------
// Read

#[tokio::test(flavor = "multi_thread")]
async fn read_numbers_lines_like_cat_n() {
    let ws = workspace();
    write(ws.path(), "a.txt", "alpha\nbeta\n\ngamma\n");
    let rt = with_tools(ws.path(), &["Read"]).await;
    let session = Session::new();

    let r = call(&rt, &session, "Read", json!({"file_path": "a.txt"})).await;
    assert_eq!(ok(&r), "     1\talpha\n     2\tbeta\n     3\t\n     4\tgamma");

    // The same file by its absolute path (canonical, and as given under the temp dir).
    let abs = rt.workspace().join("a.txt");
    let r = call(&rt, &session, "Read", json!({"file_path": abs.to_str().unwrap()})).await;
    assert_eq!(ok(&r), "     1\talpha\n     2\tbeta\n     3\t\n     4\tgamma");
    let r = call(&rt, &session, "Read", json!({"file_path": "./sub/../a.txt"})).await;
    assert_eq!(ok(&r), "     1\talpha\n     2\tbeta\n     3\t\n     4\tgamma");
}

#[tokio::test(flavor = "multi_thread")]
async fn read_offset_and_limit_pick_a_window() {
    let ws = workspace();
    let content: String = (1..=12).map(|i| format!("line {i}\n")).collect();
    write(ws.path(), "long.txt", &content);
    let rt = with_tools(ws.path(), &["Read"]).await;
    let session = Session::new();

    let r = call(&rt, &session, "Read", json!({"file_path": "long.txt", "offset": 3, "limit": 2})).await;
    assert_eq!(ok(&r), "     3\tline 3\n     4\tline 4");

    let r = call(&rt, &session, "Read", json!({"file_path": "long.txt", "offset": 11})).await;
    assert_eq!(ok(&r), "    11\tline 11\n    12\tline 12");

    let r = call(&rt, &session, "Read", json!({"file_path": "long.txt", "limit": 1})).await;
    assert_eq!(ok(&r), "     1\tline 1");

    let r = call(&rt, &session, "Read", json!({"file_path": "long.txt", "offset": 50})).await;
    let text = ok(&r);
    assert!(text.contains("shorter than the provided offset (50)"), "{text}");
    assert!(text.contains("The file has 12 lines."), "{text}");
}

#[tokio::test(flavor = "multi_thread")]
async fn read_of_an_empty_file_says_it_is_empty() {
    let ws = workspace();
    write(ws.path(), "empty.txt", "");
    let rt = with_tools(ws.path(), &["Read"]).await;
    let r = call(&rt, &Session::new(), "Read", json!({"file_path": "empty.txt"})).await;
    assert_eq!(ok(&r), "<system-reminder>Warning: the file exists but the contents are empty.</system-reminder>");
}

#[tokio::test(flavor = "multi_thread")]
async fn read_refuses_directories_and_missing_files() {
    let ws = workspace();
    fs::create_dir(ws.path().join("sub")).unwrap();
    let rt = with_tools(ws.path(), &["Read"]).await;
    let session = Session::new();

    let r = call(&rt, &session, "Read", json!({"file_path": "sub"})).await;
    let text = err(&r, OutcomeKind::InvalidInput);
    assert!(text.contains(&format!("{} is a directory; use LS", rt.workspace().join("sub").display())), "{text}");

    let r = call(&rt, &session, "Read", json!({"file_path": "missing.txt"})).await;
    let text = err(&r, OutcomeKind::InvalidInput);
    assert!(text.contains(&rt.workspace().join("missing.txt").display().to_string()), "{text}");
    // Neither failure records anything for Edit.
    assert!(session.snapshot().keys().all(|k| !k.starts_with("toolhost/read:")), "{:?}", session.snapshot());
}

#[tokio::test(flavor = "multi_thread")]
async fn read_cannot_reach_outside_the_workspace() {
    let ws = workspace();
    let outside = workspace();
    let secret = write(outside.path(), "secret.txt", "TOPSECRET-4242\n");
    let rt = default_runtime(ws.path()).await;
    let session = Session::new();

    // By absolute path, by a relative path climbing out, and by a symlink inside the workspace.
    let name = outside.path().file_name().unwrap().to_str().unwrap();
    #[cfg(unix)]
    std::os::unix::fs::symlink(&secret, ws.path().join("link.txt")).unwrap();
    let mut attempts = vec![secret.display().to_string(), format!("../{name}/secret.txt")];
    if cfg!(unix) {
        attempts.push("link.txt".into());
    }
    for path in attempts {
        let r = call(&rt, &session, "Read", json!({"file_path": path})).await;
        assert!(r.is_error, "{path}: {r:?}");
        assert!(!r.text().contains("TOPSECRET"), "{path}: {}", r.text());
    }
    // Grep and Glob cannot see it either.
    let r =
        call(&rt, &session, "Grep", json!({"pattern": "TOPSECRET", "path": outside.path().to_str().unwrap()})).await;
    assert!(r.is_error || !r.text().contains("secret.txt"), "{r:?}");
    assert!(!r.text().contains("TOPSECRET"), "{r:?}");
    let r = call(&rt, &session, "Glob", json!({"pattern": "**/*.txt", "path": outside.path().to_str().unwrap()})).await;
    assert!(r.is_error || !r.text().contains("secret.txt"), "{r:?}");
    assert!(session.snapshot().keys().all(|k| !k.starts_with("toolhost/read:")), "{:?}", session.snapshot());
}

// ---------------------------------------------------------------------------------------------
// Write

#[tokio::test(flavor = "multi_thread")]
async fn write_creates_files_and_parents_then_reports_updates() {
    let ws = workspace();
    let rt = with_tools(ws.path(), &["Write", "Read"]).await;
    let session = Session::new();
    let target = rt.workspace().join("deep/er/new.txt");

    let r = call(&rt, &session, "Write", json!({"file_path": "deep/er/new.txt", "content": "one\ntwo\n"})).await;
    assert_eq!(ok(&r), format!("File created successfully at: {}", target.display()));
    assert_eq!(fs::read_to_string(&target).unwrap(), "one\ntwo\n");

    let r = call(&rt, &session, "Write", json!({"file_path": target.to_str().unwrap(), "content": "three"})).await;
    assert_eq!(ok(&r), format!("The file {} has been updated successfully.", target.display()));
    assert_eq!(fs::read_to_string(&target).unwrap(), "three");

    let r = call(&rt, &session, "Read", json!({"file_path": "deep/er/new.txt"})).await;
    assert_eq!(ok(&r), "     1\tthree");

    // A directory is not overwritten.
    let r = call(&rt, &session, "Write", json!({"file_path": "deep", "content": "x"})).await;
    assert!(err(&r, OutcomeKind::InvalidInput).contains("is a directory"), "{r:?}");
    assert!(rt.workspace().join("deep").is_dir());
}

// ---------------------------------------------------------------------------------------------
// Edit

#[tokio::test(flavor = "multi_thread")]
async fn edit_needs_a_read_in_the_same_session() {
    let ws = workspace();
    let file = write(ws.path(), "a.txt", "one two\nthree\n");
    let rt = with_tools(ws.path(), &["Read", "Edit"]).await;
    let abs = rt.workspace().join("a.txt");
    let edit = json!({"file_path": "a.txt", "old_string": "two", "new_string": "2"});

    let session = Session::new();
    let r = call(&rt, &session, "Edit", edit.clone()).await;
    assert!(err(&r, OutcomeKind::InvalidInput).contains("File has not been read yet"), "{r:?}");
    assert_eq!(fs::read_to_string(&file).unwrap(), "one two\nthree\n");

    // Read leaves the file's state in the session's context, under `read:ABSOLUTE_PATH`.
    ok(&call(&rt, &session, "Read", json!({"file_path": "a.txt"})).await);
    let key = format!("read:{}", abs.display());
    let state: serde_json::Value =
        serde_json::from_str(&session.get(toolhost::EMBEDDED_NAMESPACE, &key).expect("Read records the file")).unwrap();
    assert_eq!(state["size"], 14, "{state}");
    assert!(state["mtime_ns"].is_string(), "{state}");

    let r = call(&rt, &session, "Edit", edit.clone()).await;
    let text = ok(&r);
    assert!(text.starts_with(&format!("The file {} has been updated successfully.", abs.display())), "{text}");
    assert!(text.contains("     1\tone 2\n     2\tthree"), "{text}");
    assert_eq!(fs::read_to_string(&file).unwrap(), "one 2\nthree\n");

    // The edit recorded the new state: a second edit needs no new Read.
    let r = call(
        &rt,
        &session,
        "Edit",
        json!({"file_path": abs.to_str().unwrap(), "old_string": "three", "new_string": "3"}),
    )
    .await;
    ok(&r);
    assert_eq!(fs::read_to_string(&file).unwrap(), "one 2\n3\n");

    // Another session never read it.
    let other = Session::new();
    let r = call(&rt, &other, "Edit", json!({"file_path": "a.txt", "old_string": "3", "new_string": "three"})).await;
    assert!(err(&r, OutcomeKind::InvalidInput).contains("File has not been read yet"), "{r:?}");
    assert_eq!(fs::read_to_string(&file).unwrap(), "one 2\n3\n");
}

#[tokio::test(flavor = "multi_thread")]
async fn edit_refuses_a_file_changed_since_it_was_read() {
    let ws = workspace();
    let file = write(ws.path(), "a.txt", "alpha beta\n");
    let rt = with_tools(ws.path(), &["Read", "Edit"]).await;
    let session = Session::new();
    let edit = json!({"file_path": "a.txt", "old_string": "beta", "new_string": "BETA"});

    // Changed size.
    ok(&call(&rt, &session, "Read", json!({"file_path": "a.txt"})).await);
    fs::write(&file, "alpha beta gamma\n").unwrap();
    let r = call(&rt, &session, "Edit", edit.clone()).await;
    assert!(err(&r, OutcomeKind::InvalidInput).contains("File has been modified since read"), "{r:?}");
    assert_eq!(fs::read_to_string(&file).unwrap(), "alpha beta gamma\n");

    // Same size, different modification time.
    ok(&call(&rt, &session, "Read", json!({"file_path": "a.txt"})).await);
    fs::write(&file, "ALPHA beta gamma\n").unwrap();
    set_mtime(&file, 7);
    let r = call(&rt, &session, "Edit", edit.clone()).await;
    assert!(err(&r, OutcomeKind::InvalidInput).contains("File has been modified since read"), "{r:?}");
    assert_eq!(fs::read_to_string(&file).unwrap(), "ALPHA beta gamma\n");

    // A fresh Read makes it editable again.
    ok(&call(&rt, &session, "Read", json!({"file_path": "a.txt"})).await);
    ok(&call(&rt, &session, "Edit", edit).await);
    assert_eq!(fs::read_to_string(&file).unwrap(), "ALPHA BETA gamma\n");
}

#[tokio::test(flavor = "multi_thread")]
async fn edit_after_write_needs_no_read() {
    let ws = workspace();
    let rt = with_tools(ws.path(), &["Write", "Edit"]).await;
    let session = Session::new();
    ok(&call(&rt, &session, "Write", json!({"file_path": "w.txt", "content": "fn old() {}\n"})).await);
    ok(&call(&rt, &session, "Edit", json!({"file_path": "w.txt", "old_string": "old", "new_string": "new"})).await);
    assert_eq!(fs::read_to_string(ws.path().join("w.txt")).unwrap(), "fn new() {}\n");
}

#[tokio::test(flavor = "multi_thread")]
async fn edit_reports_missing_and_ambiguous_strings_and_replaces_all() {
    let ws = workspace();
    let file = write(ws.path(), "a.txt", "x = 1\nx = 2\nx = 3\n");
    let rt = with_tools(ws.path(), &["Read", "Edit"]).await;
    let session = Session::new();
    ok(&call(&rt, &session, "Read", json!({"file_path": "a.txt"})).await);

    let r =
        call(&rt, &session, "Edit", json!({"file_path": "a.txt", "old_string": "nowhere", "new_string": "y"})).await;
    assert_eq!(err(&r, OutcomeKind::InvalidInput), "String to replace not found in file.\nString: nowhere");

    let r = call(&rt, &session, "Edit", json!({"file_path": "a.txt", "old_string": "x =", "new_string": "y ="})).await;
    let text = err(&r, OutcomeKind::InvalidInput);
    assert!(text.starts_with("Found 3 matches of the string to replace, but replace_all is false."), "{text}");
    assert_eq!(fs::read_to_string(&file).unwrap(), "x = 1\nx = 2\nx = 3\n");

    let r = call(
        &rt,
        &session,
        "Edit",
        json!({"file_path": "a.txt", "old_string": "x =", "new_string": "y =", "replace_all": true}),
    )
    .await;
    let text = ok(&r);
    assert!(text.contains("All 3 occurrences were replaced."), "{text}");
    assert!(text.contains("     1\ty = 1\n     2\ty = 2\n     3\ty = 3"), "{text}");
    assert_eq!(fs::read_to_string(&file).unwrap(), "y = 1\ny = 2\ny = 3\n");

    // A file that does not exist.
    let r = call(&rt, &session, "Edit", json!({"file_path": "nope.txt", "old_string": "a", "new_string": "b"})).await;
    assert!(err(&r, OutcomeKind::InvalidInput).starts_with("File does not exist:"), "{r:?}");
}

// ---------------------------------------------------------------------------------------------
// Glob

#[tokio::test(flavor = "multi_thread")]
async fn glob_matches_newest_first_and_respects_gitignore() {
    let ws = workspace();
    let root = ws.path();
    let a = write(root, "src/a.rs", "");
    let c = write(root, "src/b/c.rs", "");
    write(root, "README.md", "");
    write(root, ".gitignore", "ignored/\n*.tmp.rs\n");
    write(root, "ignored/x.rs", "");
    write(root, "src/skip.tmp.rs", "");
    write(root, ".hidden/h.rs", "");
    set_mtime(&a, 1);
    set_mtime(&c, 2);
    let rt = with_tools(root, &["Glob"]).await;
    let ws_abs = rt.workspace();
    let session = Session::new();

    let r = call(&rt, &session, "Glob", json!({"pattern": "**/*.rs"})).await;
    let text = ok(&r);
    let expected = [ws_abs.join("src/b/c.rs"), ws_abs.join("src/a.rs")];
    let expected: Vec<String> = expected.iter().map(|p| p.display().to_string()).collect();
    assert_eq!(lines(&text), expected, "newest first; ignored and hidden files left out");

    let r = call(&rt, &session, "Glob", json!({"pattern": "*.rs", "path": "src/b"})).await;
    assert_eq!(ok(&r), ws_abs.join("src/b/c.rs").display().to_string());

    let r = call(&rt, &session, "Glob", json!({"pattern": "*.md"})).await;
    assert_eq!(ok(&r), ws_abs.join("README.md").display().to_string());

    let r = call(&rt, &session, "Glob", json!({"pattern": "**/*.zig"})).await;
    assert_eq!(ok(&r), "No files found");
}

/// ripgrep applies the .gitignore files of the directories above the one it searches. Glob
/// and Grep walk with the `ignore` crate, which finds those parents through
/// `Path::canonicalize`, unsupported on WASI: so with `path` set to a subdirectory, the
/// workspace's root .gitignore is not applied (a bug in the default tools).
#[tokio::test(flavor = "multi_thread")]
async fn a_subdirectory_search_respects_the_workspace_gitignore() {
    let ws = workspace();
    let root = ws.path();
    write(root, ".gitignore", "*.gen.rs\n");
    write(root, "src/a.rs", "needle\n");
    write(root, "src/skip.gen.rs", "needle\n");
    let rt = with_tools(root, &["Glob", "Grep"]).await;
    let a = rt.workspace().join("src/a.rs").display().to_string();
    let session = Session::new();

    // From the workspace, the generated file is ignored...
    let r = call(&rt, &session, "Glob", json!({"pattern": "**/*.rs"})).await;
    assert_eq!(ok(&r), a);
    let r = call(&rt, &session, "Grep", json!({"pattern": "needle"})).await;
    assert_eq!(ok(&r), format!("Found 1 file\n{a}"));

    // ...and from its own directory it must be too.
    let r = call(&rt, &session, "Glob", json!({"pattern": "*.rs", "path": "src"})).await;
    assert_eq!(ok(&r), a, "Glob in src/ ignores the root .gitignore");
    let r = call(&rt, &session, "Grep", json!({"pattern": "needle", "path": "src"})).await;
    assert_eq!(ok(&r), format!("Found 1 file\n{a}"), "Grep in src/ ignores the root .gitignore");
}

// ---------------------------------------------------------------------------------------------
// Grep

/// A small tree for Grep: two Rust files that say "hello", a text file that says "Hello", and
/// an ignored and a hidden file that say "hello" too.
fn grep_tree(root: &Path) {
    let main = write(root, "src/main.rs", "fn main() {\n    println!(\"hello\");\n}\n");
    let lib = write(root, "src/lib.rs", "pub fn helper() {}\n// hello again\n");
    let notes = write(root, "notes.txt", "Hello world\nnothing here\n");
    write(root, ".gitignore", "ignored.rs\n");
    write(root, "ignored.rs", "hello ignored\n");
    write(root, ".hidden/h.rs", "hello hidden\n");
    set_mtime(&lib, 1);
    set_mtime(&main, 2);
    set_mtime(&notes, 3);
}

#[tokio::test(flavor = "multi_thread")]
async fn grep_lists_matching_files_by_default() {
    let ws = workspace();
    grep_tree(ws.path());
    let rt = with_tools(ws.path(), &["Grep"]).await;
    let w = rt.workspace().to_path_buf();
    let p = |rel: &str| w.join(rel).display().to_string();
    let session = Session::new();

    let r = call(&rt, &session, "Grep", json!({"pattern": "hello"})).await;
    assert_eq!(ok(&r), format!("Found 2 files\n{}\n{}", p("src/main.rs"), p("src/lib.rs")));

    let r = call(&rt, &session, "Grep", json!({"pattern": "hello", "-i": true})).await;
    assert_eq!(ok(&r), format!("Found 3 files\n{}\n{}\n{}", p("notes.txt"), p("src/main.rs"), p("src/lib.rs")));

    let r = call(&rt, &session, "Grep", json!({"pattern": "hello", "-i": true, "glob": "*.txt"})).await;
    assert_eq!(ok(&r), format!("Found 1 file\n{}", p("notes.txt")));

    let r = call(&rt, &session, "Grep", json!({"pattern": "hello", "type": "rust", "path": "src"})).await;
    assert_eq!(ok(&r), format!("Found 2 files\n{}\n{}", p("src/main.rs"), p("src/lib.rs")));

    let r = call(&rt, &session, "Grep", json!({"pattern": "zz_no_such_text"})).await;
    assert_eq!(ok(&r), "No files found");
}

#[tokio::test(flavor = "multi_thread")]
async fn grep_content_and_count_modes() {
    let ws = workspace();
    grep_tree(ws.path());
    let rt = with_tools(ws.path(), &["Grep"]).await;
    let w = rt.workspace().to_path_buf();
    let p = |rel: &str| w.join(rel).display().to_string();
    let session = Session::new();

    let r = call(&rt, &session, "Grep", json!({"pattern": "hello", "output_mode": "content", "-n": true})).await;
    assert_eq!(
        ok(&r),
        format!("{}:2:// hello again\n{}:2:    println!(\"hello\");", p("src/lib.rs"), p("src/main.rs"))
    );

    let r = call(
        &rt,
        &session,
        "Grep",
        json!({"pattern": "hello", "output_mode": "content", "-n": false, "glob": "lib.rs"}),
    )
    .await;
    assert_eq!(ok(&r), format!("{}:// hello again", p("src/lib.rs")));

    let r = call(
        &rt,
        &session,
        "Grep",
        json!({"pattern": "println", "output_mode": "content", "-C": 1, "path": "src/main.rs"}),
    )
    .await;
    let main = p("src/main.rs");
    assert_eq!(ok(&r), format!("{main}-1-fn main() {{\n{main}:2:    println!(\"hello\");\n{main}-3-}}"));

    let r = call(&rt, &session, "Grep", json!({"pattern": "HELLO", "-i": true, "output_mode": "count"})).await;
    assert_eq!(
        ok(&r),
        format!(
            "{}:1\n{}:1\n{}:1\n\nFound 3 total occurrences across 3 files.",
            p("notes.txt"),
            p("src/lib.rs"),
            p("src/main.rs")
        )
    );

    let r = call(&rt, &session, "Grep", json!({"pattern": "zz_no_such_text", "output_mode": "content"})).await;
    assert_eq!(ok(&r), "No matches found");
    let r = call(&rt, &session, "Grep", json!({"pattern": "zz_no_such_text", "output_mode": "count"})).await;
    assert_eq!(ok(&r), "No matches found");
}

// ---------------------------------------------------------------------------------------------
// LS

#[tokio::test(flavor = "multi_thread")]
async fn ls_prints_a_tree_without_hidden_entries() {
    let ws = workspace();
    let root = ws.path();
    for f in ["b.txt", "a/z.rs", "a/c/d.rs", ".hidden/x", ".env", "a/.git/config", "skip.log"] {
        write(root, f, "x");
    }
    fs::create_dir(root.join("empty")).unwrap();
    let rt = with_tools(root, &["LS"]).await;
    let w = rt.workspace().display().to_string();
    let session = Session::new();

    let r = call(&rt, &session, "LS", json!({"path": "."})).await;
    assert_eq!(
        ok(&r),
        format!("- {w}/\n  - a/\n    - c/\n      - d.rs\n    - z.rs\n  - b.txt\n  - empty/\n  - skip.log")
    );

    let r = call(&rt, &session, "LS", json!({"path": w, "ignore": ["*.log", "c"]})).await;
    assert_eq!(ok(&r), format!("- {w}/\n  - a/\n    - z.rs\n  - b.txt\n  - empty/"));

    let r = call(&rt, &session, "LS", json!({"path": "a/c"})).await;
    assert_eq!(ok(&r), format!("- {w}/a/c/\n  - d.rs"));

    let r = call(&rt, &session, "LS", json!({"path": "b.txt"})).await;
    assert!(err(&r, OutcomeKind::InvalidInput).contains("is not a directory"), "{r:?}");
}

// ---------------------------------------------------------------------------------------------
// Every default tool, through the whole runtime.

#[tokio::test(flavor = "multi_thread")]
async fn default_runtime_has_the_default_tools_and_answers_with_the_call_id() {
    let ws = workspace();
    write(ws.path(), "a.txt", "hi\n");
    let rt = default_runtime(ws.path()).await;
    let names: Vec<&str> = rt.tools().map(|t| t.info.name.as_str()).collect();
    assert_eq!(names, ["Edit", "Glob", "Grep", "LS", "Read", "WebFetch", "Write"]);
    for t in rt.tools() {
        let read_only = matches!(t.info.name.as_str(), "Read" | "Glob" | "Grep" | "LS" | "WebFetch");
        assert_eq!(t.info.read_only, read_only, "{}", t.info.name);
    }

    // Any id, also one with characters that are not safe in a file name, comes back as given.
    let session = Session::new();
    for (id, name, input) in [
        ("toolu_01 weird/id", "Read", json!({"file_path": "a.txt"})),
        ("x", "LS", json!({"path": "."})),
        ("", "Glob", json!({"pattern": "*.txt"})),
    ] {
        let r = rt.call(&session, &ToolUse::new(id, name, input), toolhost::CallOptions::new()).await;
        assert_eq!(r.tool_use_id, id);
        ok(&r);
    }
}
