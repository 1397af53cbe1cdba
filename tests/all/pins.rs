//! Pinned host-run files (DESIGN §5a): the config in use and the files its hooks run are
//! trusted on first use; a change that widens what runs on the host waits for a person (a yes
//! on the terminal, or `toolhost trust`), a narrowing one applies at once. Each test has its own
//! state directory.

use std::fs;
use std::process::{Command, Output, Stdio};
use std::time::Duration;
use toolhost_tests::cli::{self, assert_exit, fails, ok, run_on_a_terminal, stderr};
use toolhost_tests::workspace;

const READ: &str = r#"{"file_path":"a.txt"}"#;

/// A hook for every tool that runs `hooks/guard.sh`.
const HOOK: &str = "[[hooks.pre_tool_use]]\ncommand = \"sh hooks/guard.sh\"\n";

/// A workspace with `a.txt` and `hooks/guard.sh` (which appends a line to `ran.txt`), plus a
/// state directory of its own.
struct Fixture {
    ws: tempfile::TempDir,
    state: tempfile::TempDir,
}

impl Fixture {
    fn new(config: &str) -> Fixture {
        let ws = workspace();
        fs::write(ws.path().join("a.txt"), "hello\n").unwrap();
        fs::create_dir(ws.path().join("hooks")).unwrap();
        fs::write(ws.path().join("hooks/guard.sh"), "cat > /dev/null; echo guard >> ran.txt\n").unwrap();
        fs::write(ws.path().join("toolhost.toml"), config).unwrap();
        Fixture { ws, state: tempfile::tempdir().unwrap() }
    }

    fn path(&self, p: &str) -> std::path::PathBuf {
        self.ws.path().join(p)
    }

    /// `toolhost ARGS…` as on CI (`CI=true`, no terminal).
    fn command(&self, args: &[&str]) -> Command {
        let mut c = cli::command(self.ws.path());
        c.env("TOOLHOST_STATE_DIR", self.state.path()).env("CI", "true").args(args).stdin(Stdio::null());
        c
    }

    fn run(&self, args: &[&str]) -> Output {
        self.command(args).output().expect("run toolhost")
    }

    /// How many times the guard hook ran.
    fn guard_runs(&self) -> usize {
        fs::read_to_string(self.path("ran.txt")).map_or(0, |t| t.lines().count())
    }
}

#[test]
fn the_first_start_records_silently_and_an_unchanged_one_asks_nothing() {
    let fx = Fixture::new(HOOK);
    for runs in 1..=2 {
        let o = fx.run(&["call", "Read", READ]);
        assert_eq!(ok(&o), "     1\thello\n");
        assert_eq!(stderr(&o), "", "no question and no extra output");
        assert_eq!(fx.guard_runs(), runs);
    }
    let pinned: Vec<_> = fs::read_dir(fx.state.path().join("pins")).unwrap().flatten().collect();
    assert_eq!(pinned.len(), 1, "{pinned:?}");
    use std::os::unix::fs::PermissionsExt as _;
    let mode = fs::metadata(fx.state.path().join("pins")).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o700, "made private");
}

#[test]
fn a_changed_hook_script_is_refused_until_trusted() {
    let fx = Fixture::new(HOOK);
    ok(&fx.run(&["call", "Read", READ]));
    fs::write(fx.path("hooks/guard.sh"), "cat > /dev/null; touch changed-ran\n").unwrap();

    let o = fx.run(&["call", "Read", READ]);
    let all = fails(&o, "error: toolhost.toml changed since it was trusted: hooks/guard.sh changed (sha256 ");
    assert!(all.contains("run `toolhost trust` to accept"), "{all}");
    assert!(!fx.path("changed-ran").exists(), "the changed hook ran");
    assert_eq!(o.stdout, b"", "nothing ran");
    // Every command that loads the tools refuses it.
    for args in [&["list"][..], &["run", "--jsonl"]] {
        fails(&fx.run(args), "hooks/guard.sh changed");
    }

    let trusted = fx.run(&["trust"]);
    let out = ok(&trusted);
    assert!(out.contains("accepted: hooks/guard.sh changed"), "{out}");
    assert!(out.contains("trusted toolhost.toml and 1 hook file"), "{out}");
    ok(&fx.run(&["call", "Read", READ]));
    assert!(fx.path("changed-ran").exists(), "the trusted hook runs");
}

/// Interpreters load a script's neighbours, so the whole directory protected for a hook is
/// pinned: a neighbour changed, or a file planted beside the script (behind the guard, which
/// stands for a guard bug here), waits for a person like the script itself. A Python hook writes
/// no `__pycache__` there, so running it changes nothing.
#[test]
fn a_changed_or_planted_neighbour_of_a_hook_script_is_refused_until_trusted() {
    let hook = "[[hooks.pre_tool_use]]\ncommand = \"python3 hooks/guard.py\"\n";
    let fx = Fixture::new(hook);
    fs::write(fx.path("hooks/guard.py"), "import sys, lib\nsys.stdin.read()\nlib.mark()\n").unwrap();
    fs::write(fx.path("hooks/lib.py"), "def mark():\n    open('ran.txt', 'a').write('guard\\n')\n").unwrap();
    for runs in 1..=2 {
        let o = fx.run(&["call", "Read", READ]);
        ok(&o);
        assert_eq!(stderr(&o), "", "no question: {}", stderr(&o));
        assert_eq!(fx.guard_runs(), runs);
    }
    assert!(!fx.path("hooks/__pycache__").exists(), "the hook wrote byte code beside itself");

    fs::write(fx.path("hooks/lib.py"), "def mark():\n    open('changed-ran', 'w')\n").unwrap();
    fails(&fx.run(&["call", "Read", READ]), "hooks/lib.py changed (sha256 ");
    ok(&fx.run(&["trust"]));
    ok(&fx.run(&["call", "Read", READ]));
    assert!(fx.path("changed-ran").exists(), "the trusted neighbour runs");

    fs::create_dir(fx.path("hooks/__pycache__")).unwrap();
    fs::write(fx.path("hooks/__pycache__/lib.cpython-311.pyc"), "planted").unwrap();
    fails(&fx.run(&["call", "Read", READ]), "hooks/__pycache__/lib.cpython-311.pyc is new (sha256 ");
    std::os::unix::fs::symlink("/etc/passwd", fx.path("hooks/other.py")).unwrap();
    let all = fails(&fx.run(&["call", "Read", READ]), "hooks/other.py is new (link to /etc/passwd)");
    assert!(all.contains("lib.cpython-311.pyc is new"), "{all}");
}

#[test]
fn a_config_that_gains_a_hook_is_refused() {
    let fx = Fixture::new("[permissions]\ndeny = [\"WebFetch\"]\n");
    ok(&fx.run(&["call", "Read", READ]));
    fs::write(fx.path("toolhost.toml"), format!("[permissions]\ndeny = [\"WebFetch\"]\n{HOOK}")).unwrap();
    let all = fails(&fx.run(&["call", "Read", READ]), "hook added: pre_tool_use [sh hooks/guard.sh]");
    assert!(all.contains("hooks/guard.sh is new (sha256 "), "{all}");
    assert_eq!(fx.guard_runs(), 0);
}

#[test]
fn narrowing_applies_silently_and_widening_back_is_refused() {
    let fx = Fixture::new("");
    ok(&fx.run(&["call", "Read", READ]));
    // A deny rule added: applies at once, no question.
    fs::write(fx.path("toolhost.toml"), "[permissions]\ndeny = [\"Read\"]\n").unwrap();
    let o = fx.run(&["call", "Read", READ]);
    assert_exit(&o, 1);
    assert!(cli::stdout(&o).contains("denied"), "{}", cli::stdout(&o));
    assert!(!stderr(&o).contains("trust"), "{}", stderr(&o));
    // The pins followed it: taking the rule away again widens.
    fs::write(fx.path("toolhost.toml"), "").unwrap();
    fails(&fx.run(&["call", "Read", READ]), "deny rule removed: Read");
    // So does deleting the config (toolhost then runs without any rule).
    fs::write(fx.path("toolhost.toml"), "[permissions]\ndeny = [\"Read\"]\n").unwrap();
    ok(&fx.run(&["trust"]));
    fs::remove_file(fx.path("toolhost.toml")).unwrap();
    fails(&fx.run(&["call", "Read", READ]), "deny rule removed: Read");
}

#[test]
fn a_widening_is_asked_on_a_terminal() {
    let fx = Fixture::new("");
    ok(&fx.run(&["call", "Read", READ]));
    fs::write(fx.path("toolhost.toml"), format!("[permissions]\nmode = \"bypass\"\n{HOOK}")).unwrap();
    let on_terminal = |c: &mut Command| {
        c.env("TOOLHOST_STATE_DIR", fx.state.path()).env_remove("CI");
    };

    let (code, screen) = run_on_a_terminal(fx.ws.path(), on_terminal, &["call", "Read", READ], "n\n");
    assert_eq!(code, 2, "{screen}");
    assert!(screen.contains("toolhost.toml changed since it was trusted"), "{screen}");
    assert!(screen.contains("hook added: pre_tool_use [sh hooks/guard.sh]"), "{screen}");
    assert!(screen.contains("permission mode default → bypass"), "{screen}");
    assert!(screen.contains("Trust these changes and start? [y/N]"), "{screen}");
    assert_eq!(fx.guard_runs(), 0);

    let (code, screen) = run_on_a_terminal(fx.ws.path(), on_terminal, &["call", "Read", READ], "y\n");
    assert_eq!(code, 0, "{screen}");
    assert_eq!(fx.guard_runs(), 1);
    // The yes was recorded: CI starts now too.
    ok(&fx.run(&["call", "Read", READ]));
    assert_eq!(fx.guard_runs(), 2);
}

#[test]
fn trust_show_prints_the_pins_and_what_differs() {
    let fx = Fixture::new(HOOK);
    let out = ok(&fx.run(&["trust", "--show"]));
    assert!(out.contains("nothing pinned yet"), "{out}");
    ok(&fx.run(&["trust"]));
    fs::write(fx.path("toolhost.toml"), format!("[permissions]\nallow = [\"Write\"]\n{HOOK}")).unwrap();
    let out = ok(&fx.run(&["trust", "--show"]));
    assert!(out.contains("hook:       pre_tool_use matcher \"*\" [sh hooks/guard.sh]"), "{out}");
    assert!(out.contains("file:       hooks/guard.sh sha256:"), "{out}");
    assert!(out.contains("widens:  allow rule added: Write"), "{out}");
    // --show trusts nothing.
    fails(&fx.run(&["call", "Read", READ]), "allow rule added: Write");
}

#[test]
fn an_unusable_state_dir_holds_every_widening() {
    use std::os::unix::fs::PermissionsExt as _;
    let fx = Fixture::new(HOOK);
    fs::set_permissions(fx.state.path(), fs::Permissions::from_mode(0o777)).unwrap();
    let all = fails(&fx.run(&["call", "Read", READ]), "cannot confirm toolhost.toml");
    assert!(all.contains("writable by its group or by everyone"), "{all}");
    assert!(all.contains("hook added: pre_tool_use [sh hooks/guard.sh]"), "{all}");
    assert_eq!(fx.guard_runs(), 0);
    // A config that widens nothing beyond having none still runs (with the warning).
    fs::write(fx.path("toolhost.toml"), "[permissions]\ndeny = [\"Write\"]\n").unwrap();
    let o = fx.run(&["call", "Read", READ]);
    ok(&o);
    assert!(stderr(&o).contains("state directory cannot be used"), "{}", stderr(&o));
}

#[test]
fn no_grant_may_include_the_state_dir() {
    let fx = Fixture::new("");
    let inside = fx.path(".state");
    let o = cli::command(fx.ws.path())
        .env("TOOLHOST_STATE_DIR", &inside)
        .args(["call", "Read", READ])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let all = format!("{}{}", cli::stdout(&o), stderr(&o));
    assert_ne!(o.status.code(), Some(0), "{all}");
    assert!(all.contains("toolhost's private state"), "{all}");
    assert!(all.contains("TOOLHOST_STATE_DIR"), "{all}");
}

/// The MCP server keeps serving the tools it loaded when a reload would widen what runs on the
/// host, logs why, and loads the change once it is trusted.
#[tokio::test(flavor = "multi_thread")]
async fn an_mcp_reload_that_widens_is_refused_until_trusted() {
    use rmcp::ServiceExt as _;
    use rmcp::transport::TokioChildProcess;
    let fx = Fixture::new("");
    let log = fx.ws.path().join("server.log");
    let mut command = cli::command(fx.ws.path());
    command.env("TOOLHOST_STATE_DIR", fx.state.path()).env("CI", "true").arg("mcp");
    let transport = TokioChildProcess::builder(tokio::process::Command::from(command))
        .stderr(Stdio::from(fs::File::create(&log).unwrap()))
        .spawn()
        .expect("spawn")
        .0;
    let client = ().serve(transport).await.expect("initialize");
    let read = || {
        let args = serde_json::json!({"file_path": "a.txt"});
        let serde_json::Value::Object(args) = args else { unreachable!() };
        client.call_tool(rmcp::model::CallToolRequestParams::new("Read").with_arguments(args))
    };
    assert_eq!(read().await.unwrap().is_error, Some(false));

    fs::write(fx.path("toolhost.toml"), HOOK).unwrap();
    let refused = wait_for(|| fs::read_to_string(&log).unwrap_or_default().contains("hook added")).await;
    let text = fs::read_to_string(&log).unwrap();
    assert!(refused, "no refusal logged:\n{text}");
    assert!(text.contains("keeping the loaded ones"), "{text}");
    assert_eq!(read().await.unwrap().is_error, Some(false), "the old tools still serve");
    assert_eq!(fx.guard_runs(), 0, "the refused hook ran");

    // Trusting it is a change the server sees: it reloads, and the hook runs from then on.
    ok(&fx.run(&["trust"]));
    let mut reloaded = false;
    for _ in 0..50 {
        assert_eq!(read().await.unwrap().is_error, Some(false));
        if fx.guard_runs() > 0 {
            reloaded = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert!(reloaded, "not reloaded after `toolhost trust`:\n{}", fs::read_to_string(&log).unwrap());
    client.cancel().await.unwrap();
}

/// Poll `done` for up to 10 seconds (the server polls its files every second).
async fn wait_for(mut done: impl FnMut() -> bool) -> bool {
    for _ in 0..50 {
        if done() {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    false
}

/// A policy file beside a function component is a grant the host obeys: one planted (or
/// widened) between two starts waits for `toolhost trust` like a grant added to the config.
#[test]
fn a_planted_policy_file_is_refused_until_trusted() {
    let fx = Fixture::new("[tools.reader]\npath = \"tools/functions.wasm\"\nfunction = \"read-file\"\n");
    fs::create_dir(fx.path("tools")).unwrap();
    fs::write(fx.path("tools/functions.wasm"), toolhost_tests::guests::WIT_FUNCTIONS).unwrap();
    let read = format!(r#"{{"path":"{}"}}"#, fx.path("a.txt").display());
    let call = ["--allow", "reader", "call", "reader", read.as_str()];
    let o = fx.run(&call);
    assert_exit(&o, 1);
    assert!(!cli::stdout(&o).contains("hello"), "no grant, no file: {}", cli::stdout(&o));

    let policy = format!(
        "version: \"1.0\"\npermissions:\n  storage:\n    allow:\n      - uri: \"fs://{}\"\n        access: [read]\n",
        fx.ws.path().display()
    );
    fs::write(fx.path("tools/functions.policy.yaml"), policy).unwrap();
    let all = fails(
        &fx.run(&call),
        "changed since it was trusted: policy file tools/functions.policy.yaml is new, granting fs_read",
    );
    assert!(all.contains("toolhost trust"), "{all}");

    ok(&fx.run(&["trust"]));
    assert!(ok(&fx.run(&call)).contains("hello"), "trusted, the policy file's grant applies");
    // Removing it is judged against the default grant, which a toolhost tool falls back to
    // (the pins know files, not what kind of component sits beside them).
    fs::remove_file(fx.path("tools/functions.policy.yaml")).unwrap();
    fails(
        &fx.run(&call),
        "policy file tools/functions.policy.yaml removed: a toolhost tool beside it would get the default grant",
    );
    ok(&fx.run(&["trust"]));
    let o = fx.run(&call);
    assert_exit(&o, 1);
    assert!(!cli::stdout(&o).contains("hello"), "a function component without one gets nothing: {}", cli::stdout(&o));
}

/// Policy files are judged for the components a start loads: another `--tools` directory is
/// not the removal of the first one's policy files, and going back to the first asks nothing.
#[test]
fn another_tools_directory_is_not_a_removed_policy_file() {
    let fx = Fixture::new("");
    for dir in ["a", "b"] {
        fs::create_dir(fx.path(dir)).unwrap();
        fs::write(fx.path(&format!("{dir}/functions.wasm")), toolhost_tests::guests::WIT_FUNCTIONS).unwrap();
    }
    let policy = format!(
        "version: \"1.0\"\npermissions:\n  storage:\n    allow:\n      - uri: \"fs://{}\"\n        access: [read]\n",
        fx.ws.path().display()
    );
    fs::write(fx.path("a/functions.policy.yaml"), policy).unwrap();
    let a = fx.path("a").display().to_string();
    let b = fx.path("b").display().to_string();
    for tools in [&a, &b, &a, &b] {
        let o = fx.run(&["--tools", tools, "list"]);
        assert_exit(&o, 0);
        assert!(!stderr(&o).contains("trust"), "--tools {tools}: {}", stderr(&o));
    }
}

/// A config reached through a link swapped on every update (how Kubernetes mounts a
/// ConfigMap: `toolhost.toml` → `..data/toolhost.toml`, `..data` → `..VERSION`) keeps its pins:
/// a widening update is judged, not trusted anew as a first start.
#[test]
fn a_config_behind_a_swapped_link_keeps_its_pins() {
    let fx = Fixture::new("");
    let conf = fx.path("conf");
    fs::create_dir_all(conf.join("..v1")).unwrap();
    fs::write(conf.join("..v1/toolhost.toml"), "[permissions]\ndeny = [\"Write\"]\n").unwrap();
    std::os::unix::fs::symlink("..v1", conf.join("..data")).unwrap();
    std::os::unix::fs::symlink("..data/toolhost.toml", conf.join("toolhost.toml")).unwrap();
    let config = conf.join("toolhost.toml").display().to_string();
    ok(&fx.run(&["--config", &config, "call", "Read", READ]));

    fs::create_dir_all(conf.join("..v2")).unwrap();
    fs::write(conf.join("..v2/toolhost.toml"), "[permissions]\nallow = [\"Write\"]\n").unwrap();
    std::os::unix::fs::symlink("..v2", conf.join("..data.new")).unwrap();
    fs::rename(conf.join("..data.new"), conf.join("..data")).unwrap();
    fs::remove_dir_all(conf.join("..v1")).unwrap();
    let all = fails(&fx.run(&["--config", &config, "call", "Read", READ]), "changed since it was trusted");
    assert!(all.contains("allow rule added: Write") && all.contains("deny rule removed: Write"), "{all}");
}
