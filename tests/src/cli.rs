//! Running the `toolhost` binary as a user would, for the command-line tests.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::OnceLock;

/// The `toolhost` binary of this build, brought up to date once per process.
///
/// In tests, built as `cargo test --workspace` builds it (`host/cli/tests/binary.rs` makes it
/// part of the test build), not with `cargo build -p toolhost-cli`: that one resolves dependency
/// features for the CLI alone, which differ (tokio, libc, rustls …) and would compile wasmtime a
/// second time. Under `cargo test --workspace` this is a quick no-op. In benchmarks (the release
/// profile), the binary of the README's `cargo build --release`, the one people run.
pub fn binary() -> &'static Path {
    static BIN: OnceLock<PathBuf> = OnceLock::new();
    BIN.get_or_init(|| {
        // A test binary is TARGET/PROFILE/deps/NAME-HASH; the CLI is TARGET/PROFILE/toolhost.
        let exe = std::env::current_exe().expect("current exe");
        let profile_dir = exe.parent().and_then(Path::parent).expect("target profile directory");
        let bin = profile_dir.join(format!("toolhost{}", std::env::consts::EXE_SUFFIX));
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("workspace root");
        let mut build = nested_cargo();
        if profile_dir.file_name().is_some_and(|n| n == "release") {
            build.args(["build", "--release", "--quiet", "-p", "toolhost-cli"]);
        } else {
            build.args(["test", "--workspace", "--no-run", "--quiet"]);
        }
        let status = build.current_dir(root).stdin(Stdio::null()).stdout(Stdio::null()).status();
        match status {
            Ok(s) if s.success() => {}
            other => {
                assert!(bin.is_file(), "cannot build toolhost-cli ({other:?}) and {} does not exist", bin.display())
            }
        }
        assert!(bin.is_file(), "{} does not exist after building toolhost-cli", bin.display());
        bin
    })
}

/// `cargo`, for a build started from inside a test, without the variables cargo set for the test
/// process (`CARGO_MANIFEST_DIR`, `CARGO_PKG_*`, `OUT_DIR` …): build scripts that watch them
/// (ring's does) would otherwise see them change and rebuild their crates, and everything above,
/// at every alternation with a build started from a shell.
pub fn nested_cargo() -> Command {
    let mut cargo = Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()));
    for (key, _) in std::env::vars_os() {
        let key = key.to_string_lossy();
        let set_for_the_test = [
            "CARGO_MANIFEST_",
            "CARGO_PKG_",
            "CARGO_BIN_",
            "CARGO_CRATE_",
            "CARGO_PRIMARY_",
            "CARGO_TARGET_TMPDIR",
            "CARGO_RUSTC_CURRENT_DIR",
        ]
        .iter()
        .any(|p| key.starts_with(p))
            || key == "OUT_DIR";
        if set_for_the_test {
            cargo.env_remove(key.as_ref());
        }
    }
    cargo
}

/// One compile cache for every test in this process: only the first run compiles the tools.
pub fn cache_dir() -> &'static Path {
    static CACHE: OnceLock<tempfile::TempDir> = OnceLock::new();
    CACHE.get_or_init(|| tempfile::tempdir().expect("cache dir")).path()
}

/// One state directory (pins of trusted config and hook files) for every test in this process,
/// so that no test reads or writes the user's own. Pins are kept per workspace, and every test
/// has a workspace of its own.
pub fn state_dir() -> &'static Path {
    static STATE: OnceLock<tempfile::TempDir> = OnceLock::new();
    STATE.get_or_init(|| tempfile::tempdir().expect("state dir")).path()
}

/// A docker config directory with no `config.json`: no registry credentials unless a test
/// gives some (the user's own `~/.docker` never leaks into a test).
pub fn no_docker_config() -> PathBuf {
    cache_dir().join("no-docker-config")
}

/// A Claude Code configuration directory with no `settings.json` (see [`command`]).
pub fn no_claude_config() -> PathBuf {
    cache_dir().join("no-claude-config")
}

/// `toolhost --workspace WS`, to run in WS (so no stray `./toolhost.toml` is picked up) with
/// the shared compile cache and none of the environment that changes its behaviour.
pub fn command(ws: &Path) -> Command {
    let mut c = Command::new(binary());
    c.arg("--workspace")
        .arg(ws)
        .current_dir(ws)
        .env("TOOLHOST_CACHE_DIR", cache_dir())
        .env("TOOLHOST_STATE_DIR", state_dir())
        .env("DOCKER_CONFIG", no_docker_config())
        // Claude Code's user settings: none, unless a test writes some (the user's own
        // `~/.claude/settings.json` never reaches a test).
        .env("CLAUDE_CONFIG_DIR", no_claude_config())
        .env_remove("TOOLHOST_LOG")
        .env_remove("TOOLHOST_MAX_CONCURRENCY")
        // CI=true means --locked; a test that wants it says so, whatever runs the tests.
        .env_remove("CI");
    c
}

/// The standard output of a run that must have succeeded (else a failure showing both outputs).
#[track_caller]
pub fn ok(o: &Output) -> String {
    assert!(o.status.success(), "exit {:?}\nstdout:\n{}\nstderr:\n{}", o.status.code(), stdout(o), stderr(o));
    stdout(o)
}

/// Both outputs of a run that must have failed as a command fails (exit 2) saying `needle`.
#[track_caller]
pub fn fails(o: &Output, needle: &str) -> String {
    let all = format!("{}{}", stdout(o), stderr(o));
    assert_eq!(o.status.code(), Some(2), "expected exit 2 with {needle:?}\n{all}");
    assert!(all.contains(needle), "expected {needle:?} in:\n{all}");
    all
}

/// `toolhost --workspace WS ARGS…` with `stdin` as its standard input.
pub fn run_with_stdin(ws: &Path, args: &[&str], stdin: &str) -> Output {
    let mut child = command(ws)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn toolhost");
    child.stdin.take().expect("stdin").write_all(stdin.as_bytes()).expect("write stdin");
    child.wait_with_output().expect("wait for toolhost")
}

/// `toolhost --workspace WS ARGS…` with empty input.
pub fn run(ws: &Path, args: &[&str]) -> Output {
    run_with_stdin(ws, args, "")
}

/// Standard output as text.
pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// Standard error as text.
pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Assert the exit code, showing both streams when it differs.
#[track_caller]
pub fn assert_exit(o: &Output, code: i32) {
    assert_eq!(
        o.status.code(),
        Some(code),
        "exit status {:?}\nstdout:\n{}\nstderr:\n{}",
        o.status,
        stdout(o),
        stderr(o)
    );
}

/// Run `toolhost ARGS…` inside a pseudo-terminal (`script`), typing `answers` at it. Returns
/// the exit status of toolhost and everything the terminal showed. `setup` adjusts the
/// environment (`script` passes it on).
pub fn run_on_a_terminal(ws: &Path, setup: impl FnOnce(&mut Command), args: &[&str], answers: &str) -> (i32, String) {
    let quote = |s: &str| format!("'{}'", s.replace('\'', r"'\''"));
    let mut line = format!("{} --workspace {}", quote(binary().to_str().unwrap()), quote(ws.to_str().unwrap()));
    for a in args {
        line.push(' ');
        line.push_str(&quote(a));
    }
    let mut script = Command::new("script");
    script
        .args(["--quiet", "--return", "--command", &line, "/dev/null"])
        .current_dir(ws)
        .env("TOOLHOST_CACHE_DIR", cache_dir())
        .env("TOOLHOST_STATE_DIR", state_dir())
        .env("DOCKER_CONFIG", no_docker_config())
        // Claude Code's user settings: none, unless a test writes some (the user's own
        // `~/.claude/settings.json` never reaches a test).
        .env("CLAUDE_CONFIG_DIR", no_claude_config())
        .env_remove("CI")
        .env("TERM", "xterm");
    setup(&mut script);
    let mut child = script
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("script (util-linux) runs toolhost on a pseudo-terminal");
    let mut stdin = child.stdin.take().unwrap();
    // Typed ahead, the answers wait in the terminal until the question reads them.
    stdin.write_all(answers.as_bytes()).unwrap();
    let out = std::thread::spawn(move || {
        let o = child.wait_with_output().expect("script");
        (o.status.code().unwrap_or(-1), String::from_utf8_lossy(&o.stdout).into_owned())
    });
    let result = out.join().unwrap();
    drop(stdin);
    result
}
