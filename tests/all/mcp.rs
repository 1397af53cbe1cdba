//! `toolhost mcp` end to end: rmcp's client over stdio (a child process), raw JSON-RPC lines
//! for malformed frames, raw HTTP for the DNS-rebinding checks, and the official Python SDK
//! (tests/mcp/test_server.py) over stdio and HTTP when its virtualenv is there.

use rmcp::ServiceExt as _;
use rmcp::model::{
    CallToolRequestParams, ClientCapabilities, ClientConfig, ElicitRequestParams, ElicitResult, ElicitationAction,
    ErrorCode, Implementation, NumberOrString, ProgressNotificationParam, ProgressToken, RequestMetaObject,
    RequestParamsMeta as _,
};
use rmcp::service::{NotificationContext, RequestContext, RoleClient, RunningService, ServiceError};
use rmcp::transport::TokioChildProcess;
use serde_json::{Value, json};
use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use toolhost_tests::cli::{binary, cache_dir};
use toolhost_tests::{guests, workspace};

/// A workspace with `hello.txt`, and a tools directory with the Sleep, Progress and Panic
/// guests.
struct Fixture {
    ws: tempfile::TempDir,
    tools: tempfile::TempDir,
}

impl Fixture {
    fn new() -> Self {
        let ws = workspace();
        std::fs::write(ws.path().join("hello.txt"), "hello from the workspace\n").unwrap();
        let tools = tempfile::tempdir().unwrap();
        for (name, bytes) in [("sleep", guests::SLEEP), ("progress", guests::PROGRESS), ("panic", guests::PANIC)] {
            std::fs::write(tools.path().join(format!("{name}.wasm")), bytes).unwrap();
        }
        Fixture { ws, tools }
    }

    /// `toolhost --workspace WS --tools TOOLS --allow Panic --allow Progress mcp ARGS…`.
    fn command(&self, extra: &[&str]) -> Command {
        let mut c = Command::new(binary());
        c.arg("--workspace")
            .arg(self.ws.path())
            .arg("--tools")
            .arg(self.tools.path())
            .args(["--allow", "Panic", "--allow", "Progress"])
            .arg("mcp")
            .args(extra)
            .current_dir(self.ws.path())
            .env("TOOLHOST_CACHE_DIR", cache_dir())
            .env_remove("TOOLHOST_LOG");
        c
    }

    async fn client<H: rmcp::ClientHandler>(&self, handler: H) -> RunningService<RoleClient, H> {
        let command = tokio::process::Command::from(self.command(&[]));
        let transport = TokioChildProcess::builder(command).stderr(Stdio::null()).spawn().expect("spawn").0;
        handler.serve(transport).await.expect("initialize")
    }
}

/// Run a test's body, failing the test instead of hanging the suite if it has not finished in
/// five minutes (every step here normally takes well under a second).
async fn within<T>(body: impl Future<Output = T>) -> T {
    tokio::time::timeout(Duration::from_secs(300), body).await.expect("the test did not finish within 5 minutes")
}

fn call(name: &str, args: Value) -> CallToolRequestParams {
    let Value::Object(args) = args else { panic!("arguments must be an object") };
    CallToolRequestParams::new(name.to_string()).with_arguments(args)
}

fn text(result: &rmcp::model::CallToolResult) -> String {
    result.content.iter().filter_map(|c| c.as_text().map(|t| t.text.clone())).collect::<Vec<_>>().join("\n")
}

#[tokio::test]
async fn list_and_call_over_stdio_with_the_rmcp_client() {
    within(async {
        let fx = Fixture::new();
        let client = fx.client(()).await;
        let info = client.peer_info().expect("server info");
        assert_eq!(info.server_info.as_ref().map(|i| i.name.as_str()), Some("toolhost"));
        assert!(info.capabilities.tools.as_ref().and_then(|t| t.list_changed).unwrap_or(false), "{info:?}");

        let tools = client.list_all_tools().await.unwrap();
        let names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
        for name in ["Read", "Write", "Edit", "Glob", "Grep", "LS", "Sleep", "Progress", "Panic"] {
            assert!(names.contains(&name), "{name} missing from {names:?}");
        }
        let read = tools.iter().find(|t| t.name == "Read").unwrap();
        let ann = read.annotations.as_ref().expect("annotations");
        assert_eq!(
            (ann.read_only_hint, ann.destructive_hint, ann.idempotent_hint),
            (Some(true), Some(false), Some(true))
        );
        assert!(read.input_schema.get("properties").and_then(|p| p.get("file_path")).is_some());
        let write = tools.iter().find(|t| t.name == "Write").unwrap();
        let ann = write.annotations.as_ref().expect("annotations");
        assert_eq!((ann.read_only_hint, ann.destructive_hint), (Some(false), Some(true)));

        let ok = client.call_tool(call("Read", json!({"file_path": "hello.txt"}))).await.unwrap();
        assert_eq!(ok.is_error, Some(false));
        assert!(text(&ok).contains("hello from the workspace"), "{ok:?}");

        let bad = client.call_tool(call("Read", json!({"file_path": 3}))).await.unwrap();
        assert_eq!(bad.is_error, Some(true));
        assert!(text(&bad).contains("InputValidationError"), "{bad:?}");

        let trap = client.call_tool(call("Panic", json!({}))).await.unwrap();
        assert_eq!(trap.is_error, Some(true));
        assert!(text(&trap).contains("boom: the tool panicked on purpose"), "{trap:?}");

        // No elicitation capability: an ask is a denial naming the rule to add.
        let denied = client.call_tool(call("Write", json!({"file_path": "x.txt", "content": "no"}))).await.unwrap();
        assert_eq!(denied.is_error, Some(true));
        assert!(text(&denied).contains("add the rule \"Write(x.txt)\""), "{denied:?}");
        assert!(!fx.ws.path().join("x.txt").exists());

        // An unknown tool is a protocol error (the spec's -32602), not a tool result.
        match client.call_tool(call("NoSuchTool", json!({}))).await {
            Err(ServiceError::McpError(e)) => {
                assert_eq!(e.code, ErrorCode::INVALID_PARAMS);
                assert!(e.message.contains("NoSuchTool"), "{e:?}");
            }
            other => panic!("expected a JSON-RPC error, got {other:?}"),
        }
        client.cancel().await.unwrap();
    })
    .await;
}

/// Collects progress notifications; answers elicitations with a fixed decision.
struct TestClient {
    progress: Arc<Mutex<Vec<ProgressNotificationParam>>>,
    decision: Option<&'static str>,
}

impl rmcp::ClientHandler for TestClient {
    fn get_info(&self) -> ClientConfig {
        let capabilities = if self.decision.is_some() {
            serde_json::from_value(json!({"elicitation": {}})).unwrap()
        } else {
            ClientCapabilities::default()
        };
        ClientConfig::new(capabilities, Implementation::new("toolhost-tests", "0"))
    }

    async fn on_progress(&self, params: ProgressNotificationParam, _context: NotificationContext<RoleClient>) {
        self.progress.lock().unwrap().push(params);
    }

    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, rmcp::ErrorData> {
        let ElicitRequestParams::FormElicitationParams { message, .. } = request else {
            return Ok(ElicitResult::new(ElicitationAction::Decline));
        };
        assert!(message.contains("Write"), "{message}");
        Ok(ElicitResult::new(ElicitationAction::Accept).with_content(json!({"decision": self.decision.unwrap()})))
    }
}

#[tokio::test]
async fn progress_becomes_notifications_and_asks_become_elicitations() {
    within(async {
        let fx = Fixture::new();
        let progress = Arc::new(Mutex::new(Vec::new()));
        let client = fx.client(TestClient { progress: progress.clone(), decision: Some("allow once") }).await;

        let mut meta = RequestMetaObject::default();
        meta.set_progress_token(ProgressToken(NumberOrString::Number(42)));
        let mut params = call("Progress", json!({}));
        params.set_meta(meta);
        let done = client.call_tool(params).await.unwrap();
        assert_eq!(text(&done), "done");
        let seen = progress.lock().unwrap().clone();
        let messages: Vec<_> = seen.iter().map(|p| p.message.clone().unwrap_or_default()).collect();
        assert_eq!(messages, ["step 1", "step 2"], "progress arrives before the result, in order");
        // (rmcp's client puts a token of its own in place of ours; the server echoes the one it got.)
        assert_eq!(seen[0].progress_token, seen[1].progress_token, "{seen:?}");
        assert!(seen[0].progress < seen[1].progress);

        let written =
            client.call_tool(call("Write", json!({"file_path": "asked.txt", "content": "yes"}))).await.unwrap();
        assert_eq!(written.is_error, Some(false), "{written:?}");
        assert_eq!(std::fs::read_to_string(fx.ws.path().join("asked.txt")).unwrap(), "yes");
        client.cancel().await.unwrap();
    })
    .await;
}

#[tokio::test]
async fn safe_calls_overlap_and_unsafe_calls_wait_their_turn() {
    within(async {
        let fx = Fixture::new();
        let client = Arc::new(fx.client(()).await);
        // Warm up (the first call compiles nothing, but instantiates the pools).
        client.call_tool(call("Sleep", json!({"ms": 1}))).await.unwrap();

        let started = Instant::now();
        let sleeps: Vec<_> = (0..4)
            .map(|_| {
                let client = client.clone();
                tokio::spawn(async move { client.call_tool(call("Sleep", json!({"ms": 1000}))).await.unwrap() })
            })
            .collect();
        for s in sleeps {
            assert_eq!(s.await.unwrap().is_error, Some(false));
        }
        let parallel = started.elapsed();
        eprintln!("4 concurrent 1000 ms sleeps took {parallel:?}");
        assert!(parallel < Duration::from_millis(3000), "safe calls did not overlap: {parallel:?}");

        // An unsafe call (Panic is not read-only) sent while a long safe call runs waits for it;
        // a safe call sent after the unsafe one waits for the unsafe one (arrival order).
        let long = {
            let client = client.clone();
            tokio::spawn(async move {
                client.call_tool(call("Sleep", json!({"ms": 1500}))).await.unwrap();
                Instant::now()
            })
        };
        tokio::time::sleep(Duration::from_millis(300)).await;
        let unsafe_call = {
            let client = client.clone();
            tokio::spawn(async move {
                client.call_tool(call("Panic", json!({}))).await.unwrap();
                Instant::now()
            })
        };
        tokio::time::sleep(Duration::from_millis(100)).await;
        let after = {
            let client = client.clone();
            tokio::spawn(async move {
                client.call_tool(call("Sleep", json!({"ms": 1}))).await.unwrap();
                Instant::now()
            })
        };
        let (long, unsafe_call, after) = (long.await.unwrap(), unsafe_call.await.unwrap(), after.await.unwrap());
        assert!(long <= unsafe_call, "the unsafe call finished before the running safe call");
        assert!(unsafe_call <= after, "a later safe call overtook the waiting unsafe call");
    })
    .await;
}

/// A raw `toolhost mcp` on stdio: lines in, lines out.
struct Raw {
    child: std::process::Child,
    stdin: std::process::ChildStdin,
    /// Lines from the server's stdout, read on a thread so that waiting for one can time out.
    lines: std::sync::mpsc::Receiver<String>,
}

impl Raw {
    fn spawn(fx: &Fixture) -> Self {
        let mut child = fx
            .command(&[])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn toolhost mcp");
        let stdin = child.stdin.take().unwrap();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        let (tx, lines) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in stdout.lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        Raw { child, stdin, lines }
    }

    fn send(&mut self, line: &str) {
        self.stdin.write_all(line.as_bytes()).unwrap();
        self.stdin.write_all(b"\n").unwrap();
        self.stdin.flush().unwrap();
    }

    fn recv(&mut self) -> Value {
        let line = self.lines.recv_timeout(Duration::from_secs(120)).expect("the server answered within 2 minutes");
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("not JSON ({e}): {line:?}"))
    }
}

impl Drop for Raw {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn malformed_frames_and_unknown_methods_get_errors_and_the_server_keeps_serving() {
    let fx = Fixture::new();
    let mut raw = Raw::spawn(&fx);
    raw.send(
        &json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}}})
        .to_string(),
    );
    let init = raw.recv();
    assert_eq!(init["id"], 1);
    assert_eq!(init["result"]["serverInfo"]["name"], "toolhost", "{init}");
    raw.send(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);

    raw.send("this is not json");
    let e = raw.recv();
    assert_eq!((e["id"].clone(), e["error"]["code"].clone()), (Value::Null, json!(-32700)), "{e}");

    raw.send(r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":5}}"#);
    let e = raw.recv();
    assert_eq!((e["id"].clone(), e["error"]["code"].clone()), (json!(2), json!(-32602)), "{e}");

    raw.send(r#"{"hello":"world"}"#);
    let e = raw.recv();
    assert_eq!(e["error"]["code"], -32600, "{e}");

    raw.send(r#"{"jsonrpc":"2.0","id":3,"method":"no/such/method","params":{}}"#);
    let e = raw.recv();
    assert_eq!((e["id"].clone(), e["error"]["code"].clone()), (json!(3), json!(-32601)), "{e}");

    // One byte over 16 MiB, as one JSON string: refused without being buffered whole.
    let long = format!(
        r#"{{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{{"name":"Read","arguments":{{"file_path":"{}"}}}}}}"#,
        "a".repeat(16 * 1024 * 1024)
    );
    raw.send(&long);
    let e = raw.recv();
    assert_eq!(e["error"]["code"], -32600, "{e}");
    assert!(e["error"]["message"].as_str().unwrap().contains("longer than the limit"), "{e}");

    // Still serving.
    raw.send(r#"{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"Read","arguments":{"file_path":"hello.txt"}}}"#);
    let ok = raw.recv();
    assert_eq!(ok["id"], 5, "{ok}");
    assert_eq!(ok["result"]["isError"], false, "{ok}");
    assert!(ok["result"]["content"][0]["text"].as_str().unwrap().contains("hello from the workspace"));
}

/// `toolhost mcp --http 127.0.0.1:0`, and the URL it printed.
struct Http {
    child: std::process::Child,
    addr: String,
}

impl Http {
    fn spawn(fx: &Fixture) -> Self {
        let child = fx
            .command(&["--http", "127.0.0.1:0"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn toolhost mcp --http");
        // Owned at once, so the process is killed and waited for on every path.
        let mut http = Http { child, addr: String::new() };
        let mut stderr = BufReader::new(http.child.stderr.take().unwrap());
        let mut line = String::new();
        loop {
            line.clear();
            assert!(stderr.read_line(&mut line).unwrap() > 0, "toolhost mcp --http exited");
            if let Some(url) = line.trim().strip_prefix("toolhost mcp: listening on http://") {
                http.addr = url.strip_suffix("/mcp").expect("served at /mcp").to_string();
                std::thread::spawn(move || std::io::copy(&mut stderr, &mut std::io::sink()));
                return http;
            }
        }
    }

    /// POST `body` to `path` with these extra headers; returns the status code and body.
    fn post(&self, path: &str, headers: &[(&str, &str)], body: &str) -> (u16, String) {
        let mut stream = std::net::TcpStream::connect(&self.addr).unwrap();
        let mut request = format!(
            "POST {path} HTTP/1.1\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: {}\r\nConnection: close\r\n",
            body.len()
        );
        if !headers.iter().any(|(k, _)| k.eq_ignore_ascii_case("host")) {
            request.push_str(&format!("Host: {}\r\n", self.addr));
        }
        for (k, v) in headers {
            request.push_str(&format!("{k}: {v}\r\n"));
        }
        request.push_str("\r\n");
        request.push_str(body);
        stream.write_all(request.as_bytes()).unwrap();
        let mut response = String::new();
        stream.read_to_string(&mut response).unwrap();
        let status = response.split(' ').nth(1).and_then(|s| s.parse().ok()).unwrap_or(0);
        (status, response)
    }
}

impl Drop for Http {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn http_refuses_foreign_hosts_and_origins() {
    let fx = Fixture::new();
    let http = Http::spawn(&fx);
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}}})
    .to_string();
    let port = http.addr.rsplit(':').next().unwrap().to_string();

    let (status, body) = http.post("/mcp", &[], &init);
    assert_eq!(status, 200, "{body}");
    assert!(body.contains("\"serverInfo\""), "{body}");
    let (status, _) = http.post("/mcp", &[("Host", &format!("localhost:{port}"))], &init);
    assert_eq!(status, 200, "localhost is the bound loopback name");
    let (status, _) = http.post("/mcp", &[("Origin", "http://localhost:3000")], &init);
    assert_eq!(status, 200, "a local page may call it");

    // DNS rebinding: evil.example resolving to 127.0.0.1 still sends its own name.
    let (status, body) = http.post("/mcp", &[("Host", &format!("evil.example:{port}"))], &init);
    assert_eq!(status, 403, "{body}");
    let (status, body) = http.post("/mcp", &[("Origin", "http://evil.example")], &init);
    assert_eq!(status, 403, "{body}");
    let (status, _) = http.post("/elsewhere", &[], &init);
    assert_eq!(status, 404);
}

#[test]
fn http_refuses_to_listen_beyond_loopback() {
    let fx = Fixture::new();
    let out = fx.command(&["--http", "0.0.0.0:0"]).stdin(Stdio::null()).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("only loopback"), "{out:?}");
}

/// The official Python SDK against the server, over stdio and HTTP (tests/mcp/test_server.py).
/// Runs when `TOOLHOST_MCP_PYTHON` names an interpreter with the `mcp` package (`.ci/run` sets
/// it, and then a missing interpreter is a failure), or when `target/mcp-venv` exists.
#[test]
fn python_sdk_end_to_end() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    let python = match std::env::var_os("TOOLHOST_MCP_PYTHON") {
        Some(p) => PathBuf::from(p),
        None => {
            let venv = root.join("target/mcp-venv/bin/python");
            if !venv.is_file() {
                eprintln!("skipped: no Python MCP SDK (run .ci/run, or set TOOLHOST_MCP_PYTHON)");
                return;
            }
            venv
        }
    };
    let dir = tempfile::tempdir().unwrap();
    let tools = dir.path().join("tools");
    let extra = dir.path().join("extra");
    std::fs::create_dir_all(&tools).unwrap();
    std::fs::create_dir_all(&extra).unwrap();
    for (name, bytes) in [("sleep", guests::SLEEP), ("progress", guests::PROGRESS), ("panic", guests::PANIC)] {
        std::fs::write(tools.join(format!("{name}.wasm")), bytes).unwrap();
    }
    std::fs::write(extra.join("spin.wasm"), guests::SPIN).unwrap();
    let out = Command::new(&python)
        .arg(root.join("tests/mcp/test_server.py"))
        .arg(binary())
        .arg(&tools)
        .env("TOOLHOST_CACHE_DIR", cache_dir())
        .stdin(Stdio::null())
        .output()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", python.display()));
    let stdout = String::from_utf8_lossy(&out.stdout);
    eprintln!("{stdout}");
    assert!(
        out.status.success(),
        "the Python MCP SDK suite failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[tokio::test]
async fn a_tool_cannot_make_the_server_reload_what_it_wrote() {
    within(async {
        // The config and the tools directory inside the workspace, writable by the default grant.
        let ws = workspace();
        let ws_path = ws.path().canonicalize().unwrap();
        let cfg_text = "[limits]\ntimeout_ms = 30000\n";
        std::fs::write(ws_path.join("toolhost.toml"), cfg_text).unwrap();
        std::fs::create_dir(ws_path.join("tools")).unwrap();
        std::fs::write(ws_path.join("tools/hostile.wasm"), guests::HOSTILE).unwrap();
        let mut command = Command::new(binary());
        command
            .args(["--workspace", ".", "--tools", "tools", "--permission-mode", "bypass", "mcp"])
            .current_dir(&ws_path)
            .env("TOOLHOST_CACHE_DIR", cache_dir())
            .env_remove("TOOLHOST_LOG");
        let transport = TokioChildProcess::builder(tokio::process::Command::from(command))
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn")
            .0;
        let client = ().serve(transport).await.expect("initialize");
        let before = client.list_all_tools().await.unwrap().len();

        let hook = "\n[[hooks.pre_tool_use]]\ncommand = \"touch pwned\"\n";
        for args in [
            json!({"op": "append", "path": "toolhost.toml", "content": hook}),
            json!({"op": "write", "path": "tools/evil.wasm", "content": "x"}),
            json!({"op": "rename", "path": "tools", "target": "tools.old"}),
        ] {
            let r = client.call_tool(call("Hostile", args.clone())).await.unwrap();
            assert_eq!(r.is_error, Some(true), "{args}: {r:?}");
            assert!(text(&r).contains("The sandbox refused"), "{args}: {}", text(&r));
        }
        // Past the watcher's interval: nothing changed, so nothing was reloaded and no hook runs.
        tokio::time::sleep(Duration::from_millis(2500)).await;
        let after = client.call_tool(call("Read", json!({"file_path": "toolhost.toml"}))).await.unwrap();
        assert_eq!(after.is_error, Some(false), "{after:?}");
        assert!(!ws_path.join("pwned").exists(), "a planted hook ran");
        assert_eq!(std::fs::read_to_string(ws_path.join("toolhost.toml")).unwrap(), cfg_text);
        assert_eq!(client.list_all_tools().await.unwrap().len(), before);
        client.cancel().await.unwrap();
    })
    .await;
}
