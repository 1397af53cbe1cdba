//! What a hook runs is out of every tool's reach, in every form people write hooks in: the
//! whole directory of each file a hook command runs is protected (interpreters load the files
//! beside a script), a command toolhost cannot analyse is a config error naming the ways out,
//! and a hook's `files` key protects exactly what it lists.

use serde_json::json;
use std::path::Path;
use toolhost::{Error, Runtime, Session, SettingError, ToolResult};
use toolhost_tests::{call, config, default_tools, engine, workspace};

/// Writes anywhere in the workspace are allowed without asking; the hook runs before each
/// `Write` and lets it through.
fn toml(command: &str, extra: &str) -> String {
    format!(
        "[permissions]\nmode = \"accept-edits\"\n\n[[hooks.pre_tool_use]]\nmatcher = \"Write\"\ncommand = {command:?}\n{extra}"
    )
}

async fn runtime(ws: &Path, toml: &str) -> Runtime {
    let mut rt = Runtime::builder().engine(engine()).workspace(ws).config(config(toml)).build().expect("runtime");
    for s in default_tools() {
        rt.load(s).await.expect("load");
    }
    rt
}

fn build_error(ws: &Path, toml: &str) -> String {
    match Runtime::builder().engine(engine()).workspace(ws).config(config(toml)).build() {
        Err(e @ Error::Config(SettingError::Hook(_))) => toolhost::error_text(&e),
        Err(e) => panic!("not a hook error: {e}"),
        Ok(_) => panic!("built: {toml}"),
    }
}

async fn write(rt: &Runtime, path: &str, content: &str) -> ToolResult {
    call(rt, &Session::new(), "Write", json!({"file_path": path, "content": content})).await
}

fn put(ws: &Path, path: &str, body: &str) {
    let path = ws.join(path);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, body).unwrap();
}

/// A hook's line in `ran.log`: what ran.
const MARK: &str = "echo original >> \"$CLAUDE_PROJECT_DIR/ran.log\"\n";

/// A hook to try: the files to set up (path, body), the command, and the files a tool must not
/// rewrite.
type Case<'a> = (Vec<(&'a str, String)>, &'a str, Vec<&'a str>);

/// For each form: the files to set up, the command, and the files a tool must not rewrite.
#[tokio::test(flavor = "multi_thread")]
async fn a_tool_cannot_rewrite_what_a_hook_runs_in_any_form_it_is_written_in() {
    let sh = format!("cat > /dev/null\n{MARK}");
    let cases: Vec<Case<'_>> = vec![
        // Claude Code's documented form: a quoted variable glued to the rest of the path.
        (vec![(".hooks/guard.sh", format!("#!/bin/sh\n{sh}"))], "\"$CLAUDE_PROJECT_DIR\"/.hooks/guard.sh", vec![
            ".hooks/guard.sh",
            ".hooks/new.sh",
        ]),
        (vec![("hooks/guard.sh", sh.clone())], "sh \"${CLAUDE_PROJECT_DIR}/hooks/guard.sh\"", vec!["hooks/guard.sh"]),
        // A quoted path with a space.
        (vec![("my hooks/guard.sh", sh.clone())], "sh \"my hooks/guard.sh\"", vec!["my hooks/guard.sh"]),
        // A Python script importing a neighbour module.
        (
            vec![
                ("hooks/guard.py", "import sys\nimport helper\nsys.stdin.read()\nhelper.mark()\n".into()),
                (
                    "hooks/helper.py",
                    "import os\ndef mark():\n    with open(os.environ['CLAUDE_PROJECT_DIR'] + '/ran.log', 'a') as f:\n        \
                     f.write('original\\n')\n"
                        .into(),
                ),
            ],
            "python3 hooks/guard.py",
            vec!["hooks/helper.py", "hooks/guard.py", "hooks/sys.py"],
        ),
        // A shell script sourcing a library beside it.
        (
            vec![
                ("hooks/guard.sh", "cat > /dev/null\n. \"$CLAUDE_PROJECT_DIR/hooks/lib.sh\"\nmark\n".into()),
                ("hooks/lib.sh", format!("mark() {{\n{MARK}}}\n")),
            ],
            "sh hooks/guard.sh",
            vec!["hooks/lib.sh", "hooks/guard.sh"],
        ),
        // Node requiring a neighbour.
        (
            vec![
                ("hooks/guard.js", "require('fs').readFileSync(0);\nrequire('./helper').mark();\n".into()),
                (
                    "hooks/helper.js",
                    "exports.mark = () => require('fs').appendFileSync(process.env.CLAUDE_PROJECT_DIR + '/ran.log', \
                     'original\\n');\n"
                        .into(),
                ),
            ],
            "node hooks/guard.js",
            vec!["hooks/helper.js", "node_modules/fs/index.js"],
        ),
        (vec![("hooks/g.sh", sh.clone())], "FOO=1 sh hooks/g.sh", vec!["hooks/g.sh"]),
        (vec![("hooks/g.sh", sh.clone())], "env sh hooks/g.sh 2>&1", vec!["hooks/g.sh"]),
        (vec![("hooks/g.sh", sh.clone())], "true;sh hooks/g.sh||exit 2", vec!["hooks/g.sh"]),
    ];
    for (files, command, targets) in cases {
        let ws = workspace();
        let ws = ws.path();
        for (path, body) in &files {
            put(ws, path, body);
            #[cfg(unix)]
            {
                use std::os::unix::fs::PermissionsExt;
                std::fs::set_permissions(ws.join(path), std::fs::Permissions::from_mode(0o755)).unwrap();
            }
        }
        let rt = runtime(ws, &toml(command, "")).await;
        for target in &targets {
            let before = std::fs::read(ws.join(target)).ok();
            let r = write(&rt, target, "touch pwned\nimport os\nos.system('touch pwned')\n").await;
            assert!(r.is_error, "[{command}] {target} was written: {}", r.text());
            assert!(r.text().contains("protected"), "[{command}] {target}: {}", r.text());
            assert_eq!(std::fs::read(ws.join(target)).ok(), before, "[{command}] {target} changed");
        }
        // The hook still runs what was there.
        std::fs::remove_file(ws.join("ran.log")).ok();
        let r = write(&rt, "ok.txt", "fine").await;
        assert!(!r.is_error, "[{command}] {}", r.text());
        assert_eq!(std::fs::read_to_string(ws.join("ran.log")).unwrap_or_default(), "original\n", "[{command}]");
        assert!(!ws.join("pwned").exists(), "[{command}]");
        // The rest of the workspace stays writable.
        assert_eq!(std::fs::read_to_string(ws.join("ok.txt")).unwrap(), "fine");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_hook_command_that_cannot_be_analysed_is_a_config_error_naming_the_ways_out() {
    let ws = workspace();
    put(ws.path(), "hooks/guard.sh", "exit 0\n");
    put(ws.path(), "guard.sh", "exit 0\n");
    let cases = [
        ("cd hooks && sh guard.sh", "`cd` changes what relative paths name", "files = [\"hooks/guard.sh\"]"),
        ("python3 -m guard", "`python3 -m` runs a module", "files = [\"guard.py\"]"),
        ("sh -c 'sh hooks/guard.sh'", "`sh -c` runs a nested command string", "files = ["),
        ("bash -c \"$CLAUDE_PROJECT_DIR/hooks/guard.sh\"", "`bash -c`", "files = ["),
        ("source hooks/guard.sh", "`source` runs a file", "files = [\"hooks/guard.sh\"]"),
        (". hooks/guard.sh", "`.` runs a file", "files = [\"hooks/guard.sh\"]"),
        ("eval sh hooks/guard.sh", "`eval`", "files = [\"hooks/guard.sh\"]"),
        ("sh $SCRIPT", "`$SCRIPT` is not known until the hook runs", "files = ["),
        ("sh \"$(cat hooks/which)\"", "`$(…)` runs a command", "files = ["),
        ("sh `cat hooks/which`", "`…`", "files = ["),
        ("(sh hooks/guard.sh)", "subshell", "files = ["),
        ("{ sh hooks/guard.sh; }", "groups commands", "files = ["),
        ("if true; then sh hooks/guard.sh; fi", "`if` starts a control structure", "files = ["),
        ("make check", "`make` runs what its working directory", "files = ["),
        ("npm test", "`npm` runs what its working directory", "files = ["),
        ("npx eslint .", "`npx`", "files = ["),
        ("cargo test", "`cargo`", "files = ["),
        ("pytest", "`pytest`", "files = ["),
        ("cat hooks/guard.sh | sh", "`sh` runs no script file", "files = ["),
        // A Node script at the root: what it loads beside it has no pattern, and the
        // directory to protect would be the whole workspace.
        ("node guard.js", "the workspace or a directory above it", "files = [\"guard.js\"]"),
        ("\"$CLAUDE_PROJECT_DIR\"/guard.js", "with no extension", "files = [\"guard.js\"]"),
    ];
    put(ws.path(), "guard.js", "#!/usr/bin/env node\n");
    for (command, reason, fix) in cases {
        let shown = build_error(ws.path(), &toml(command, ""));
        assert!(shown.starts_with(&format!("config: hook [{command}] ")), "{shown}");
        assert!(shown.contains(reason), "[{command}] {shown}");
        assert!(shown.contains(fix), "[{command}] {shown}");
        assert!(shown.contains("absolute path outside the workspace"), "[{command}] {shown}");
    }
    // `files` naming the workspace would protect all of it.
    let shown = build_error(ws.path(), &toml("make check", "files = [\".\"]\n"));
    assert!(shown.contains("files[0] = \".\" is the workspace"), "{shown}");
}

/// A hook script at the workspace root: the script itself is protected (a shell loads nothing
/// beside it on its own); for Python, what it imports beside it waits for a person; the rest
/// of the workspace stays writable.
#[tokio::test(flavor = "multi_thread")]
async fn a_hook_script_at_the_root_is_protected_itself_and_its_imports_wait_for_a_person() {
    let ws = workspace();
    let ws = ws.path();
    put(ws, "guard.sh", &format!("cat > /dev/null\n{MARK}"));
    put(ws, "guard.py", "import sys\nsys.stdin.read()\n");
    for command in ["sh guard.sh", "\"$CLAUDE_PROJECT_DIR\"/guard.sh", "python3 guard.py"] {
        let rt = runtime(ws, &toml(command, "")).await;
        for target in ["guard.sh", "guard.py"].iter().filter(|t| command.contains(**t)) {
            let before = std::fs::read(ws.join(target)).unwrap();
            let r = write(&rt, target, "touch pwned\n").await;
            assert!(r.is_error, "[{command}] {target} was written: {}", r.text());
            assert_eq!(std::fs::read(ws.join(target)).unwrap(), before, "[{command}] {target} changed");
        }
        let r = write(&rt, "notes.txt", "fine").await;
        assert!(!r.is_error, "[{command}] {}", r.text());
        let r = write(&rt, "sys.py", "import os\n").await;
        assert_eq!(r.is_error, command.starts_with("python3"), "[{command}] {}", r.text());
        if r.is_error {
            assert!(r.text().contains("code guard.py loads from beside it"), "{}", r.text());
        }
        std::fs::remove_file(ws.join("sys.py")).ok();
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_hooks_files_are_protected_exactly_and_its_command_need_not_be_analysable() {
    let ws = workspace();
    let ws = ws.path();
    put(ws, "hooks/guard.sh", &format!("cat > /dev/null\n{MARK}"));
    let rt = runtime(ws, &toml("cd hooks && sh guard.sh", "files = [\"hooks/guard.sh\"]\n")).await;
    let r = write(&rt, "hooks/guard.sh", "touch pwned\n").await;
    assert!(r.is_error && r.text().contains("protected"), "{}", r.text());
    assert_eq!(std::fs::read_to_string(ws.join("hooks/guard.sh")).unwrap(), format!("cat > /dev/null\n{MARK}"));
    assert_eq!(std::fs::read_to_string(ws.join("ran.log")).unwrap(), "original\n");
    // Only what is listed: the rest of its directory is the operator's call.
    let r = write(&rt, "hooks/notes.txt", "x").await;
    assert!(!r.is_error, "{}", r.text());

    // A script outside the workspace, by its absolute path: its directory is protected, and
    // harmless to protect.
    let outside = workspace();
    put(outside.path(), "guard.sh", &format!("cat > /dev/null\n{MARK}"));
    let command = format!("sh {}", outside.path().canonicalize().unwrap().join("guard.sh").display());
    let rt = runtime(ws, &toml(&command, "")).await;
    let r = write(&rt, "a.txt", "x").await;
    assert!(!r.is_error, "{}", r.text());
}

#[test]
fn config_check_and_every_command_report_the_hook_at_its_command() {
    use toolhost_tests::cli::{assert_exit, command, stderr};
    let ws = workspace();
    put(ws.path(), "hooks/guard.sh", "exit 0\n");
    std::fs::write(
        ws.path().join("toolhost.toml"),
        "[[hooks.pre_tool_use]]\ncommand = \"cd hooks && sh guard.sh\"\n\n\
         [[hooks.post_tool_use]]\ncommand = \"sh hooks/guard.sh\"\n\n\
         [[hooks.post_tool_use]]\ncommand = \"make\"\nfiles = [\"Makefile\"]\n",
    )
    .unwrap();
    let o = command(ws.path()).args(["config", "check"]).output().unwrap();
    assert_exit(&o, 2);
    let err = stderr(&o);
    assert!(
        err.contains(
            "toolhost.toml:2:11: hooks.pre_tool_use[0].command: hook [cd hooks && sh guard.sh] cannot be analysed: \
             `cd` changes what relative paths name"
        ),
        "{err}"
    );
    assert!(err.contains("files = [\"hooks/guard.sh\"]") && err.contains("1 error in"), "{err}");

    let o = command(ws.path()).args(["list"]).output().unwrap();
    assert_exit(&o, 2);
    assert!(stderr(&o).contains("toolhost.toml:2:11: hooks.pre_tool_use[0].command: hook [cd hooks"), "{}", stderr(&o));
}
