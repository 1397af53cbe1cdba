//! Property tests through real components and the real command line: a hostile tool given
//! random paths (`..`, `.`, names, links planted inside and outside its grant) never reads,
//! lists, stats or changes anything outside its grant, nor anything a deny or ask rule keeps
//! from it; and `toolhost run` answers every block of a random JSONL stream exactly once and
//! reports every malformed line at its line.
//!
//! Each case is a few wasm calls (or one process), so case counts are small;
//! `PROPTEST_CASES=N` raises them for a longer hunt.

use proptest::prelude::*;
use proptest::test_runner::{Config, TestCaseError, TestRunner};
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::fs;
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};
use toolhost::policy::Mode;
use toolhost::{OutcomeKind, Runtime, Session, ToolSource};
use toolhost_tests::{call, config, engine, guests};

fn cases(default: u32) -> Config {
    let cases = std::env::var("PROPTEST_CASES").ok().and_then(|c| c.parse().ok()).unwrap_or(default);
    Config { cases, failure_persistence: None, ..Config::default() }
}

/// In every file the tool must not read.
const SECRET: &str = "SECRET-4c1f9e";
/// The size of every file the tool must not stat (no file it may reach has it).
const SECRET_SIZE: usize = 4099;
/// Names that exist only outside what the tool may list.
const HIDDEN_NAMES: [&str; 2] = ["outside-only.txt", "ws-only.txt"];

/// A temporary tree: `outside/`, and the workspace `ws/` holding the granted directory `g/`.
/// Inside `g/`, `locked/` is write-denied, `private/` read-denied and `.git/hooks/` asked
/// (a denial here: no one is asked), and links lead inside, outside and nowhere.
struct Tree {
    _dir: tempfile::TempDir,
    root: PathBuf,
    ws: PathBuf,
    grant: PathBuf,
}

/// Links planted in `g/` that lead somewhere that exists.
const LINKS: &[(&str, &str)] = &[
    ("in_link", "a"),
    ("up", ".."),
    ("out_rel", "../../outside"),
    ("to_ws_secret", "../ws-only.txt"),
    ("to_private", "private/pkey"),
    ("to_locked", "locked/keep.txt"),
    ("loop", "loop"),
];

/// Links planted in `g/` that lead to nothing yet: following one to create a file creates it
/// where the link points.
const DANGLING_OUTSIDE: &[(&str, &str)] = &[("dangling_out", "../../outside/new.txt"), ("dangling_up", "../new.txt")];
const DANGLING_REFUSED: &[(&str, &str)] =
    &[("dangling_locked", "locked/new.txt"), ("dangling_hook", ".git/hooks/pre-commit")];

impl Tree {
    fn new() -> Tree {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let ws = root.join("ws");
        let grant = ws.join("g");
        let secret = format!("{SECRET}{}", "x".repeat(SECRET_SIZE - SECRET.len()));
        fs::create_dir_all(root.join("outside/dir")).unwrap();
        fs::write(root.join("outside/outside-only.txt"), &secret).unwrap();
        fs::create_dir_all(&grant).unwrap();
        fs::write(ws.join("ws-only.txt"), &secret).unwrap();
        let tree = Tree { _dir: dir, root, ws, grant };
        tree.reset();
        tree
    }

    /// `g/` as it was at the start (the directory itself stays: the grant holds a handle to it).
    fn reset(&self) {
        toolhost_tests::empty_dir(&self.grant);
        let g = &self.grant;
        let secret = format!("{SECRET}{}", "x".repeat(SECRET_SIZE - SECRET.len()));
        for dir in ["a/b", "locked", "private", ".git/hooks"] {
            fs::create_dir_all(g.join(dir)).unwrap();
        }
        fs::write(g.join("a/file.txt"), "inside").unwrap();
        fs::write(g.join("locked/keep.txt"), "locked").unwrap();
        fs::write(g.join("private/pkey"), &secret).unwrap();
        let abs = self.root.join("outside");
        symlink(&abs, g.join("out_abs")).unwrap();
        for (link, target) in LINKS.iter().chain(DANGLING_OUTSIDE).chain(DANGLING_REFUSED) {
            symlink(target, g.join(link)).unwrap();
        }
    }

    /// Everything the tool must leave alone: the whole tree but `g/`, and inside `g/` the
    /// locked, private and asked directories. Entries with their kind and content.
    fn guarded(&self) -> BTreeMap<PathBuf, String> {
        let mut out = BTreeMap::new();
        self.walk(&self.root, &mut out);
        out
    }

    fn walk(&self, dir: &Path, out: &mut BTreeMap<PathBuf, String>) {
        for entry in fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            // The host's own results directory.
            if path == self.ws.join(".toolhost") {
                continue;
            }
            let free = path.starts_with(&self.grant)
                && !["locked", "private", ".git/hooks"].iter().any(|d| path.starts_with(self.grant.join(d)));
            let meta = fs::symlink_metadata(&path).unwrap();
            let what = if meta.is_symlink() {
                format!("link -> {}", fs::read_link(&path).unwrap().display())
            } else if meta.is_dir() {
                "dir".to_string()
            } else {
                format!("file {:?}", String::from_utf8_lossy(&fs::read(&path).unwrap()))
            };
            if meta.is_dir() {
                self.walk(&path, out);
            }
            if !free {
                out.insert(path, what);
            }
        }
    }

    /// Whether a file named `name` exists anywhere under `g/` (the tool may have made one).
    fn made_inside(&self, name: &str) -> bool {
        fn find(dir: &Path, name: &str) -> bool {
            fs::read_dir(dir)
                .into_iter()
                .flatten()
                .flatten()
                .any(|e| e.file_name() == name || (e.file_type().is_ok_and(|t| t.is_dir()) && find(&e.path(), name)))
        }
        find(&self.grant, name)
    }
}

/// A path as the tool is given it: `g/…` relative to the workspace, or absolute.
fn tool_path(ws: PathBuf) -> impl Strategy<Value = String> {
    let names: Vec<&'static str> = LINKS
        .iter()
        .chain(DANGLING_OUTSIDE)
        .chain(DANGLING_REFUSED)
        .map(|(l, _)| *l)
        .chain([
            "..",
            ".",
            "",
            "a",
            "b",
            "file.txt",
            "locked",
            "keep.txt",
            "private",
            "pkey",
            ".git",
            "hooks",
            "pre-commit",
            "new.txt",
            "out_abs",
            "outside",
            "outside-only.txt",
            "ws-only.txt",
            "dir",
            "g",
            "ws",
        ])
        .collect();
    let links: Vec<&'static str> =
        LINKS.iter().chain(DANGLING_OUTSIDE).chain(DANGLING_REFUSED).map(|(l, _)| *l).chain(["out_abs"]).collect();
    // A link and what follows it, or any names at all.
    let rel = prop_oneof![
        2 => (prop::sample::select(links), prop::collection::vec(prop::sample::select(names.clone()), 0..2))
            .prop_map(|(link, rest)| [vec![link], rest].concat().join("/")),
        3 => prop::collection::vec(prop::sample::select(names), 0..5).prop_map(|parts| parts.join("/")),
    ];
    (rel, any::<bool>()).prop_map(move |(rel, absolute)| {
        let rel = format!("g/{rel}");
        if absolute { format!("{}/{rel}", ws.display()) } else { rel }
    })
}

/// One attack: an input for the Hostile tool.
fn attack(ws: PathBuf) -> impl Strategy<Value = Value> {
    // Writes are where a check before the operation matters most.
    let op = prop::sample::select(vec![
        "read", "stat", "list", "write", "write", "write", "append", "mkdir", "open", "open", "symlink", "hardlink",
        "rename", "remove",
    ]);
    let flags = prop::sample::select(vec!["read", "write", "create,write", "create,exclusive,write", "directory,read"]);
    let outside = ws.parent().unwrap().join("outside/outside-only.txt").display().to_string();
    let target = prop_oneof![
        4 => tool_path(ws.clone()),
        1 => prop::sample::select(vec!["..", "../..", "../../outside", "/etc/passwd", "a", "private/pkey"])
            .prop_map(str::to_string),
        1 => Just(outside),
    ];
    (op, tool_path(ws), target, flags, prop::option::of(any::<bool>())).prop_map(|(op, path, target, flags, follow)| {
        let content = if op == "open" { flags.to_string() } else { "PWNED".to_string() };
        let mut input = json!({"op": op, "path": path, "target": target, "content": content});
        if let Some(f) = follow {
            input["follow"] = json!(f);
        }
        input
    })
}

/// Hostile over the tree's workspace, granted `g/` only, with a deny rule for each kind.
async fn hostile_runtime(ws: &Path) -> Runtime {
    let toml = r#"[permissions]
deny = ["Edit(g/locked/**)", "Read(g/private/**)"]

[tools.Hostile]
grant = { fs_write = ["g"] }
"#;
    let mut rt = Runtime::builder()
        .permission_mode(Mode::Bypass)
        .engine(engine())
        .workspace(ws)
        .config(config(toml))
        .build()
        .expect("runtime");
    rt.load(ToolSource::bytes("hostile.wasm", guests::HOSTILE)).await.expect("load Hostile");
    rt
}

/// Run `attacks` (each a case's sequence of calls) against a fresh tree, asserting after each
/// call that nothing secret came back and after each case that nothing guarded changed.
fn assert_attacks_stay_inside(runner_config: Config, plant_refused_dangling: bool) {
    let tree = Tree::new();
    if !plant_refused_dangling {
        for (link, _) in DANGLING_REFUSED {
            fs::remove_file(tree.grant.join(link)).unwrap();
        }
    }
    let before = tree.guarded();
    let tokio = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let rt = tokio.block_on(hostile_runtime(&tree.ws));
    let session = Session::new();
    let attacks = prop::collection::vec(attack(tree.ws.clone()), 1..6);
    let mut runner = TestRunner::new(runner_config);
    // Calls that did what they asked: without some, the property would hold of a sandbox that
    // refuses everything.
    let done = std::cell::Cell::new(0usize);
    let outcome = runner.run(&attacks, |attacks| {
        tree.reset();
        if !plant_refused_dangling {
            for (link, _) in DANGLING_REFUSED {
                fs::remove_file(tree.grant.join(link)).unwrap();
            }
        }
        for input in &attacks {
            let result = tokio.block_on(call(&rt, &session, "Hostile", input.clone()));
            let text = result.text();
            done.set(done.get() + usize::from(!result.is_error));
            prop_assert!(!text.contains(SECRET), "{input} read a secret: {text}");
            if !result.is_error && input["op"] == "stat" {
                prop_assert!(!text.contains(&format!("size: {SECRET_SIZE}\n")), "{input} stat a secret: {text}");
            }
            if !result.is_error && input["op"] == "list" {
                for name in HIDDEN_NAMES {
                    prop_assert!(!text.contains(name) || tree.made_inside(name), "{input} listed {name}: {text}");
                }
            }
            // A refusal is a refusal, not a crash of the host or the guest.
            prop_assert!(
                !matches!(result.outcome, OutcomeKind::Trap | OutcomeKind::HostError | OutcomeKind::Panic),
                "{input}: {:?} {text}",
                result.outcome
            );
        }
        let after = tree.guarded();
        if after != before {
            let changed: Vec<String> = after
                .iter()
                .filter(|(p, w)| before.get(*p) != Some(*w))
                .map(|(p, w)| format!("{}: {w}", p.display()))
                .chain(before.keys().filter(|p| !after.contains_key(*p)).map(|p| format!("{}: gone", p.display())))
                .collect();
            return Err(TestCaseError::fail(format!("{attacks:#?} changed {changed:#?}")));
        }
        Ok(())
    });
    if let Err(e) = outcome {
        panic!("{e}");
    }
    assert!(done.get() > 0, "no call succeeded: the attacks test nothing");
}

/// The property of issue 13's boundary: whatever path the tool is given and whatever links it
/// finds, nothing outside its grant is read, stat'ed, listed, created, changed or removed, and
/// neither is anything inside it that a deny rule or an ask keeps from it.
#[test]
fn no_generated_path_leaves_its_grant() {
    assert_attacks_stay_inside(cases(48), false);
}

/// The same with links that lead nowhere yet, into a write-denied directory and to a git hook:
/// a create through a dangling link lands at the link's target, so the guard must judge the
/// target (not the link) before the open, or an empty file would stay where no write may go.
#[test]
fn dangling_links_create_nothing_refused() {
    assert_attacks_stay_inside(cases(256), true);
}

/// The shortest case of the above, for a regression test once fixed.
#[test]
fn a_write_through_a_dangling_link_into_a_denied_directory_creates_nothing() {
    let tree = Tree::new();
    let tokio = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let rt = tokio.block_on(hostile_runtime(&tree.ws));
    for (link, target) in DANGLING_REFUSED {
        let r = tokio.block_on(call(
            &rt,
            &Session::new(),
            "Hostile",
            json!({"op": "write", "path": format!("g/{link}"), "content": "PWNED"}),
        ));
        assert!(r.is_error, "{link}: {r:?}");
        assert!(!tree.grant.join(target).exists(), "writing g/{link} created g/{target}: {}", r.text());
    }
}

/// Grants are resolved once, at load (`pinning.rs`): a granted directory named inside the
/// workspace loads only if its real path is inside it too, and then the tool reads nothing
/// outside it, whatever links the name goes through.
#[test]
fn a_grant_named_inside_the_workspace_stays_inside_it() {
    let tree = Tree::new();
    let tokio = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let component = prop::sample::select(vec![
        "in_link",
        "up",
        "out_rel",
        "out_abs",
        "to_ws_secret",
        "dangling_out",
        "loop",
        "a",
        "b",
        "..",
        ".",
    ]);
    let grant = (prop::collection::vec(component, 0..4), any::<bool>())
        .prop_map(|(parts, write)| (format!("g/{}", parts.join("/")).trim_end_matches('/').to_string(), write));
    let mut runner = TestRunner::new(cases(24));
    let loaded = std::cell::Cell::new(0usize);
    let outcome = runner.run(&grant, |(grant, write)| {
        let key = if write { "fs_write" } else { "fs_read" };
        let toml = format!("[tools.Hostile]\ngrant = {{ {key} = [{grant:?}] }}\n");
        let mut rt = Runtime::builder()
            .permission_mode(Mode::Bypass)
            .engine(engine())
            .workspace(&tree.ws)
            .config(config(&toml))
            .build()
            .expect("runtime");
        let named = toolhost::policy::resolve(&grant, &tree.ws);
        if tokio.block_on(rt.load(ToolSource::bytes("hostile.wasm", guests::HOSTILE))).is_err() {
            return Ok(());
        }
        loaded.set(loaded.get() + 1);
        // (A granted directory that does not exist is left out, with a warning.)
        if named.starts_with(&tree.ws)
            && let Ok(real) = named.canonicalize()
        {
            prop_assert!(real.starts_with(&tree.ws), "{grant} loaded as {}", real.display());
        }
        for rel in ["outside-only.txt", "dir", "../outside/outside-only.txt", "private/pkey"] {
            let path = format!("{}/{rel}", named.display());
            let r = tokio.block_on(call(&rt, &Session::new(), "Hostile", json!({"op": "read", "path": path})));
            let inside = named.join(rel).canonicalize().is_ok_and(|p| p.starts_with(&tree.ws));
            prop_assert!(inside || !r.text().contains(SECRET), "granted {grant}, read {path}: {}", r.text());
        }
        Ok(())
    });
    if let Err(e) = outcome {
        panic!("{e}");
    }
    assert!(loaded.get() > 0, "no grant loaded: the property tests nothing");
}

// ---------------------------------------------------------------------------------------------
// `toolhost run` end to end.

/// One JSONL line and whether it is a block (with its id) or something to report.
#[derive(Debug, Clone)]
enum RunLine {
    Block(String),
    Garbage(String),
    Blank,
}

fn run_lines() -> impl Strategy<Value = Vec<RunLine>> {
    let line = prop_oneof![
        3 => "toolu_[a-z0-9]{1,6}".prop_map(RunLine::Block),
        1 => "[a-z {}:\"]{1,12}"
            .prop_filter("JSON or blank", |t| !t.trim().is_empty() && serde_json::from_str::<Value>(t).is_err())
            .prop_map(RunLine::Garbage),
        1 => Just(RunLine::Blank),
    ];
    ("toolu_first", prop::collection::vec(line, 0..8)).prop_map(|(first, mut rest)| {
        rest.insert(0, RunLine::Block(first.to_string()));
        // Ids answer one block each.
        let mut seen = std::collections::HashSet::new();
        rest.retain(|l| !matches!(l, RunLine::Block(id) if !seen.insert(id.clone())));
        rest
    })
}

fn render(lines: &[RunLine]) -> String {
    lines
        .iter()
        .map(|l| match l {
            RunLine::Block(id) => {
                json!({"type": "tool_use", "id": id, "name": "Read", "input": {"file_path": "a.txt"}}).to_string()
            }
            RunLine::Garbage(t) => t.clone(),
            RunLine::Blank => String::new(),
        })
        .map(|l| l + "\n")
        .collect()
}

/// `toolhost run --jsonl` on `input` (bytes) in a workspace holding `a.txt`.
fn toolhost_run(input: &[u8], leading_blank_lines: usize) -> std::process::Output {
    use std::io::Write as _;
    let ws = toolhost_tests::workspace();
    fs::write(ws.path().join("a.txt"), "hello\n").unwrap();
    let mut child = toolhost_tests::cli::command(ws.path())
        .args(["run", "--jsonl"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("spawn toolhost");
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(&b"\n".repeat(leading_blank_lines)).unwrap();
    stdin.write_all(input).unwrap();
    drop(stdin);
    child.wait_with_output().unwrap()
}

/// Every block answered exactly once, in order, on stdout; every malformed line reported once,
/// naming its line; exit 2 when anything was reported.
fn assert_run_answers(lines: &[RunLine], leading_blank_lines: usize) -> Result<(), TestCaseError> {
    let out = toolhost_run(render(lines).as_bytes(), leading_blank_lines);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let answered: Vec<String> = stdout
        .lines()
        .map(|l| {
            serde_json::from_str::<Value>(l).expect("a result line is JSON")["tool_use_id"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .collect();
    let ids: Vec<String> =
        lines.iter().filter_map(|l| if let RunLine::Block(id) = l { Some(id.clone()) } else { None }).collect();
    prop_assert_eq!(&answered, &ids, "stderr: {}", stderr);
    let reported: Vec<&str> = stderr.lines().filter(|l| l.starts_with("error: line ")).collect();
    let bad: Vec<usize> = lines
        .iter()
        .enumerate()
        .filter(|(_, l)| matches!(l, RunLine::Garbage(_)))
        .map(|(i, _)| i + 1 + leading_blank_lines)
        .collect();
    prop_assert_eq!(reported.len(), bad.len(), "stderr: {}", stderr);
    for (r, n) in reported.iter().zip(&bad) {
        prop_assert!(r.starts_with(&format!("error: line {n}: ")), "{} is not about line {}", r, n);
    }
    prop_assert_eq!(out.status.code(), Some(if bad.is_empty() { 0 } else { 2 }), "stderr: {}", stderr);
    Ok(())
}

/// Random JSONL through the real command line.
#[test]
fn run_answers_every_block_and_reports_every_bad_line() {
    let mut runner = TestRunner::new(cases(12));
    if let Err(e) = runner.run(&run_lines(), |lines| assert_run_answers(&lines, 0)) {
        panic!("{e}");
    }
}

/// Blank lines before the first block count as lines too.
#[test]
fn run_counts_leading_blank_lines() {
    let lines = [RunLine::Block("toolu_1".into()), RunLine::Garbage("not json".into())];
    assert_run_answers(&lines, 2).unwrap();
}

/// A line that is not UTF-8 after a block that ran: the block's result is still printed (one
/// tool_use, one tool_result), and the error names the line.
#[test]
fn run_answers_the_blocks_before_a_line_that_is_not_utf8() {
    let mut input = render(&[RunLine::Block("toolu_1".into())]).into_bytes();
    input.extend_from_slice(b"\xff\xfe\n");
    let ws = toolhost_tests::workspace();
    fs::write(ws.path().join("a.txt"), "hello\n").unwrap();
    let out = {
        use std::io::Write as _;
        let mut child = toolhost_tests::cli::command(ws.path())
            .arg("run")
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        child.stdin.take().unwrap().write_all(&input).unwrap();
        child.wait_with_output().unwrap()
    };
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stdout.contains("\"tool_use_id\":\"toolu_1\""), "toolu_1 ran but has no result; stderr: {stderr}");
    assert!(stderr.contains("line 2"), "the error names no line: {stderr}");
}
