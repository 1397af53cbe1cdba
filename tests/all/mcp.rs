//! `toolhost mcp` end to end: rmcp's client over stdio (a child process), raw JSON-RPC lines
//! for malformed frames and the per-session queue limit, raw HTTP for the bearer token, the
//! DNS-rebinding and Origin checks, body limits, connection bounds ([`bounds`]) and the global
//! `max_concurrency`, and the official Python SDK (tests/mcp/test_server.py) over stdio and
//! HTTP when its virtualenv is there.

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
use toolhost_tests::cli::{binary, cache_dir, state_dir};
use toolhost_tests::{guests, workspace};

mod bounds;

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
        self.command_allowing(&["Panic", "Progress"], extra)
    }

    /// `toolhost --workspace WS --tools TOOLS --allow TOOL… mcp ARGS…`.
    fn command_allowing(&self, allow: &[&str], extra: &[&str]) -> Command {
        let mut c = Command::new(binary());
        c.arg("--workspace").arg(self.ws.path()).arg("--tools").arg(self.tools.path());
        for tool in allow {
            c.args(["--allow", tool]);
        }
        c.arg("mcp")
            .args(extra)
            .current_dir(self.ws.path())
            .env("TOOLHOST_CACHE_DIR", cache_dir())
            .env("TOOLHOST_STATE_DIR", state_dir())
            .env("CLAUDE_CONFIG_DIR", toolhost_tests::cli::no_claude_config())
            .env_remove("TOOLHOST_LOG")
            .env_remove("TOOLHOST_MAX_CONCURRENCY")
            .env_remove("TOOLHOST_MCP_TOKEN")
            // The generated token file goes to the test's cache directory.
            .env_remove("XDG_RUNTIME_DIR");
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
        // a safe call sent after the unsafe one waits for the unsafe one (arrival order). The
        // three are queued on the connection in this order (no racing tasks), so they arrive so.
        let send = |name: &str, args: Value| {
            let request =
                rmcp::model::ClientRequest::CallToolRequest(rmcp::model::CallToolRequest::new(call(name, args)));
            client.peer().send_request_with_option(request, rmcp::service::PeerRequestOptions::no_options())
        };
        let sent = Instant::now();
        let long = send("Sleep", json!({"ms": 1500})).await.unwrap();
        let unsafe_call = send("Panic", json!({})).await.unwrap();
        let after = send("Sleep", json!({"ms": 300})).await.unwrap();
        let done = |handle: rmcp::service::RequestHandle<RoleClient>| {
            tokio::spawn(async move {
                handle.await_response().await.unwrap();
                Instant::now()
            })
        };
        let (unsafe_call, after) = (done(unsafe_call), done(after));
        done(long).await.unwrap();
        let (unsafe_call, after) = (unsafe_call.await.unwrap(), after.await.unwrap());
        // Panic alone takes milliseconds: it ended after the long call's 1.5 s, so it waited.
        assert!(
            unsafe_call - sent >= Duration::from_millis(1500),
            "the unsafe call did not wait for the running safe call"
        );
        // The later call sleeps 300 ms of its own: had it overtaken Panic, it would end first.
        assert!(unsafe_call <= after, "a later safe call overtook the waiting unsafe call");
    })
    .await;
}

/// A raw `toolhost mcp` on stdio: lines in, lines out.
struct Raw {
    child: std::process::Child,
    /// Its input, until [`Raw::close_input`].
    stdin: Option<std::process::ChildStdin>,
    /// Lines from the server's stdout, read on a thread so that waiting for one can time out.
    lines: std::sync::mpsc::Receiver<String>,
    /// Lines from the server's stderr, when captured.
    log: Option<Log>,
}

/// Every line a server wrote to stderr so far (read on a thread, so the pipe never fills).
#[derive(Clone, Default)]
struct Log(Arc<Mutex<Vec<String>>>);

impl Log {
    /// Keep reading `stderr` into the log on a thread.
    fn follow(&self, stderr: impl std::io::BufRead + Send + 'static) {
        let lines = self.0.clone();
        std::thread::spawn(move || {
            for line in stderr.lines() {
                let Ok(line) = line else { break };
                lines.lock().unwrap().push(line);
            }
        });
    }

    fn lines(&self) -> Vec<String> {
        self.0.lock().unwrap().clone()
    }

    /// Wait (up to 2 minutes) for a line containing `needle`.
    fn wait_for(&self, needle: &str) -> String {
        let deadline = Instant::now() + Duration::from_secs(120);
        loop {
            if let Some(line) = self.lines().into_iter().find(|l| l.contains(needle)) {
                return line;
            }
            assert!(Instant::now() < deadline, "no line with {needle:?} on stderr: {:#?}", self.lines());
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// The runtime's start and finish events (logged at debug level), in order, as
    /// `("start" | "finish", call id)`.
    fn call_events(&self, tool: &str) -> Vec<(String, String)> {
        self.lines()
            .iter()
            .filter_map(|line| serde_json::from_str::<Value>(&line[line.find('{')?..]).ok())
            .filter(|e| e["tool"] == tool && (e["event"] == "start" || e["event"] == "finish"))
            .map(|e| (e["event"].as_str().unwrap().to_string(), e["id"].as_str().unwrap().to_string()))
            .collect()
    }
}

impl Raw {
    fn spawn(fx: &Fixture) -> Self {
        Self::spawn_with(fx.command(&[]), false)
    }

    /// `command` with piped stdio; with `log`, its stderr is kept.
    fn spawn_with(mut command: Command, log: bool) -> Self {
        let mut child = command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(if log { Stdio::piped() } else { Stdio::null() })
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
        let log = child.stderr.take().map(|stderr| {
            let log = Log::default();
            log.follow(BufReader::new(stderr));
            log
        });
        Raw { child, stdin: Some(stdin), lines, log }
    }

    fn send(&mut self, line: &str) {
        let stdin = self.stdin.as_mut().expect("the input is open");
        stdin.write_all(line.as_bytes()).unwrap();
        stdin.write_all(b"\n").unwrap();
        stdin.flush().unwrap();
    }

    /// End the server's input.
    fn close_input(&mut self) {
        self.stdin = None;
    }

    /// Every line the server writes from now until it closes its output (within 2 minutes).
    fn rest(&mut self) -> Vec<Value> {
        let deadline = Instant::now() + Duration::from_secs(120);
        let mut all = Vec::new();
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(line) => {
                    all.push(serde_json::from_str(&line).unwrap_or_else(|e| panic!("not JSON ({e}): {line:?}")))
                }
                Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => return all,
                Err(e) => panic!("the server did not close its output within 2 minutes ({e}); so far: {all:?}"),
            }
        }
    }

    fn recv(&mut self) -> Value {
        let line = self.lines.recv_timeout(Duration::from_secs(120)).expect("the server answered within 2 minutes");
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("not JSON ({e}): {line:?}"))
    }

    fn initialize(&mut self) {
        self.send(
            &json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}}})
            .to_string(),
        );
        let init = self.recv();
        assert_eq!(init["id"], 1, "{init}");
        self.send(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
    }
}

impl Drop for Raw {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Initialize, then read `hello.txt` with the embedded `Read` (id 2), as JSON-RPC lines.
fn session_lines() -> String {
    [
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}}}),
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
            "params": {"name": "Read", "arguments": {"file_path": "hello.txt"}}}),
    ]
    .iter()
    .map(|m| format!("{m}\n"))
    .collect()
}

/// The answer to the Read of `session_lines`, among `lines`.
fn read_answer(lines: &[Value]) -> String {
    let answer = lines.iter().find(|l| l["id"] == 2).unwrap_or_else(|| panic!("no answer to the call: {lines:?}"));
    answer["result"]["content"][0]["text"].as_str().unwrap_or_else(|| panic!("{answer}")).to_string()
}

#[test]
fn stdio_on_a_socket_or_on_files_serves_as_on_pipes() {
    let fx = Fixture::new();
    // A socket as stdin and stdout (some clients start servers with socket pairs).
    let (mine, theirs) = std::os::unix::net::UnixStream::pair().unwrap();
    let theirs_out = theirs.try_clone().unwrap();
    let mut child = fx
        .command(&[])
        .stdin(Stdio::from(std::os::fd::OwnedFd::from(theirs)))
        .stdout(Stdio::from(std::os::fd::OwnedFd::from(theirs_out)))
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    mine.set_read_timeout(Some(Duration::from_secs(120))).unwrap();
    (&mine).write_all(session_lines().as_bytes()).unwrap();
    let mut lines = Vec::new();
    for line in BufReader::new(&mine).lines() {
        let line: Value = serde_json::from_str(&line.expect("an answer within 2 minutes")).unwrap();
        let done = line["id"] == 2;
        lines.push(line);
        if done {
            break;
        }
    }
    assert_eq!(read_answer(&lines), "     1\thello from the workspace");
    mine.shutdown(std::net::Shutdown::Both).unwrap();
    assert!(child.wait().unwrap().success());

    // Files: the whole session read from one, the answers written to another, then the end.
    let dir = workspace();
    let (input, output) = (dir.path().join("in.jsonl"), dir.path().join("out.jsonl"));
    std::fs::write(&input, session_lines()).unwrap();
    let status = fx
        .command(&[])
        .stdin(std::fs::File::open(&input).unwrap())
        .stdout(std::fs::File::create(&output).unwrap())
        .stderr(Stdio::null())
        .status()
        .unwrap();
    assert!(status.success());
    let lines: Vec<Value> =
        std::fs::read_to_string(&output).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(read_answer(&lines), "     1\thello from the workspace");
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

/// `toolhost mcp --http 127.0.0.1:0`, the address it printed, the token it uses and its stderr.
struct Http {
    child: std::process::Child,
    addr: String,
    /// The file named on the token line, if any.
    token_file: Option<PathBuf>,
    /// The token read from it (or given), sent by [`Http::post`].
    token: Option<String>,
    log: Log,
}

/// An `initialize` request.
fn init_request() -> String {
    json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}}})
    .to_string()
}

impl Http {
    fn spawn(fx: &Fixture) -> Self {
        Self::spawn_with(fx.command(&["--http", "127.0.0.1:0"]))
    }

    /// Start `command` (a `toolhost … mcp --http ADDR …`) and read its startup lines.
    fn spawn_with(mut command: Command) -> Self {
        let child = command
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn toolhost mcp --http");
        // Owned at once, so the process is killed and waited for on every path.
        let mut http = Http { child, addr: String::new(), token_file: None, token: None, log: Log::default() };
        let mut stderr = BufReader::new(http.child.stderr.take().unwrap());
        let mut line = String::new();
        loop {
            line.clear();
            assert!(stderr.read_line(&mut line).unwrap() > 0, "toolhost mcp --http exited: {:#?}", http.log.lines());
            http.log.0.lock().unwrap().push(line.trim_end().to_string());
            if let Some(file) = line.trim_end().strip_prefix("toolhost mcp: token in ") {
                let file = PathBuf::from(file);
                http.token = Some(std::fs::read_to_string(&file).expect("the token file").trim().to_string());
                http.token_file = Some(file);
            }
            if let Some(url) = line.trim().strip_prefix("toolhost mcp: listening on http://") {
                http.addr = url.strip_suffix("/mcp").expect("served at /mcp").to_string();
                http.log.follow(stderr);
                return http;
            }
        }
    }

    fn port(&self) -> &str {
        self.addr.rsplit(':').next().unwrap()
    }

    /// POST `body` to `path` with exactly these extra headers (and `Host` unless given);
    /// returns the status code and the whole response (head and decoded body).
    fn post_as_is(&self, path: &str, headers: &[(&str, &str)], body: &str) -> (u16, String) {
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
        let mut response = Vec::new();
        stream.read_to_end(&mut response).unwrap();
        parse_response(&response)
    }

    /// [`Http::post_as_is`] with the server's token, unless `headers` has an `Authorization`.
    fn post(&self, path: &str, headers: &[(&str, &str)], body: &str) -> (u16, String) {
        let bearer = self.token.as_ref().map(|t| format!("Bearer {t}"));
        let mut all = headers.to_vec();
        if let Some(bearer) = &bearer
            && !headers.iter().any(|(k, _)| k.eq_ignore_ascii_case("authorization"))
        {
            all.push(("Authorization", bearer));
        }
        self.post_as_is(path, &all, body)
    }

    /// `initialize` and `notifications/initialized`: a new MCP session's id.
    fn open_session(&self) -> String {
        let (status, response) = self.post("/mcp", &[], &init_request());
        assert_eq!(status, 200, "{response}");
        let id = response
            .lines()
            .find_map(|l| l.split_once(':').filter(|(k, _)| k.eq_ignore_ascii_case("mcp-session-id")))
            .map(|(_, v)| v.trim().to_string())
            .unwrap_or_else(|| panic!("no Mcp-Session-Id: {response}"));
        let headers = [("Mcp-Session-Id", id.as_str()), ("MCP-Protocol-Version", "2025-06-18")];
        let (status, response) =
            self.post("/mcp", &headers, r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
        assert_eq!(status, 202, "{response}");
        id
    }

    /// A `tools/call` in `session`: the JSON-RPC response (from the event stream or JSON body).
    fn call(&self, session: &str, id: u64, name: &str, arguments: Value) -> Value {
        let body = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {"name": name, "arguments": arguments}})
        .to_string();
        let headers = [("Mcp-Session-Id", session), ("MCP-Protocol-Version", "2025-06-18")];
        let (status, response) = self.post("/mcp", &headers, &body);
        assert_eq!(status, 200, "{response}");
        let (_, body) = response.split_once("\r\n\r\n").unwrap();
        body.lines()
            .map(|l| l.strip_prefix("data:").unwrap_or(l).trim())
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .find(|m| m["id"] == id)
            .unwrap_or_else(|| panic!("no response to call {id}: {response}"))
    }
}

/// The status and the response with a chunked body decoded.
fn parse_response(raw: &[u8]) -> (u16, String) {
    let text = String::from_utf8_lossy(raw);
    let status = text.split(' ').nth(1).and_then(|s| s.parse().ok()).unwrap_or(0);
    let Some((head, body)) = text.split_once("\r\n\r\n") else { return (status, text.into_owned()) };
    if !head.to_ascii_lowercase().contains("transfer-encoding: chunked") {
        return (status, text.into_owned());
    }
    let mut decoded = String::new();
    let mut rest = body;
    while let Some((size, after)) = rest.split_once("\r\n") {
        let Ok(size) = usize::from_str_radix(size.trim(), 16) else { break };
        if size == 0 || after.len() < size {
            break;
        }
        decoded.push_str(&after[..size]);
        rest = after[size..].strip_prefix("\r\n").unwrap_or(&after[size..]);
    }
    (status, format!("{head}\r\n\r\n{decoded}"))
}

impl Drop for Http {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn http_wants_the_bearer_token_from_the_file_it_names() {
    let fx = Fixture::new();
    let http = Http::spawn(&fx);
    let file = http.token_file.clone().expect("the token file is named on stderr");
    let meta = std::fs::symlink_metadata(&file).unwrap();
    assert!(meta.is_file());
    assert_eq!(std::os::unix::fs::PermissionsExt::mode(&meta.permissions()) & 0o777, 0o600);
    let dir = std::fs::metadata(file.parent().unwrap()).unwrap();
    assert_eq!(std::os::unix::fs::PermissionsExt::mode(&dir.permissions()) & 0o777, 0o700);
    let token = http.token.clone().unwrap();
    assert_eq!(token.len(), 64, "32 random bytes, hex: {token}");

    let (status, response) = http.post_as_is("/mcp", &[], &init_request());
    assert_eq!(status, 401, "{response}");
    let lower = response.to_ascii_lowercase();
    assert!(lower.contains("www-authenticate: bearer"), "{response}");
    assert!(response.contains("Authorization: Bearer") && response.contains("token in FILE"), "{response}");
    assert!(response.contains("\"error\""), "a JSON-RPC error: {response}");
    let wrong = format!("Bearer {}", "0".repeat(64));
    let (status, _) = http.post_as_is("/mcp", &[("Authorization", &wrong)], &init_request());
    assert_eq!(status, 401, "a wrong token");
    let (status, _) = http.post_as_is("/mcp", &[("Authorization", &token)], &init_request());
    assert_eq!(status, 401, "no Bearer scheme");
    // Nothing is served without it, not even a 404.
    let (status, _) = http.post_as_is("/elsewhere", &[], &init_request());
    assert_eq!(status, 401);
    let (status, response) = http.post("/mcp", &[], &init_request());
    assert_eq!(status, 200, "{response}");
    assert!(response.contains("\"serverInfo\""), "{response}");
}

#[test]
fn a_token_file_is_made_private_kept_across_restarts_and_refused_when_others_may_read_it() {
    let fx = Fixture::new();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("token");
    let file_arg = file.to_str().unwrap();
    let token = {
        let http = Http::spawn_with(fx.command(&["--http", "127.0.0.1:0", "--token-file", file_arg]));
        assert_eq!(http.token_file.as_deref(), Some(file.as_path()));
        let meta = std::fs::symlink_metadata(&file).unwrap();
        assert_eq!(std::os::unix::fs::PermissionsExt::mode(&meta.permissions()) & 0o777, 0o600);
        assert_eq!(http.post("/mcp", &[], &init_request()).0, 200);
        http.token.clone().unwrap()
    };
    // The same file, the same token.
    let http = Http::spawn_with(fx.command(&["--http", "127.0.0.1:0", "--token-file", file_arg]));
    assert_eq!(http.token.as_deref(), Some(token.as_str()));
    drop(http);

    use std::os::unix::fs::PermissionsExt as _;
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644)).unwrap();
    let out = fx.command(&["--http", "127.0.0.1:0", "--token-file", file_arg]).stdin(Stdio::null()).output().unwrap();
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    assert!(String::from_utf8_lossy(&out.stderr).contains("chmod 600"), "{out:?}");

    let link = dir.path().join("link");
    std::os::unix::fs::symlink(dir.path().join("target"), &link).unwrap();
    let out = fx
        .command(&["--http", "127.0.0.1:0", "--token-file", link.to_str().unwrap()])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    assert!(!dir.path().join("target").exists(), "a token was written through a link");

    // TOOLHOST_MCP_TOKEN gives it directly.
    let given = "a-token-given-in-the-environment-0123456789";
    let mut command = fx.command(&["--http", "127.0.0.1:0"]);
    command.env("TOOLHOST_MCP_TOKEN", given);
    let mut http = Http::spawn_with(command);
    assert!(http.token_file.is_none());
    assert!(http.log.lines().iter().any(|l| l.contains("token from TOOLHOST_MCP_TOKEN")), "{:#?}", http.log.lines());
    assert_eq!(http.post_as_is("/mcp", &[], &init_request()).0, 401);
    http.token = Some(given.to_string());
    assert_eq!(http.post("/mcp", &[], &init_request()).0, 200);
}

#[test]
fn http_refuses_foreign_hosts_and_origins() {
    let fx = Fixture::new();
    let http = Http::spawn(&fx);
    let init = init_request();
    let port = http.port().to_string();

    let (status, body) = http.post("/mcp", &[], &init);
    assert_eq!(status, 200, "{body}");
    assert!(body.contains("\"serverInfo\""), "{body}");
    let (status, _) = http.post("/mcp", &[("Host", &format!("localhost:{port}"))], &init);
    assert_eq!(status, 200, "localhost is the bound loopback name");
    for own in [format!("http://localhost:{port}"), format!("http://127.0.0.1:{port}"), format!("http://[::1]:{port}")]
    {
        let (status, body) = http.post("/mcp", &[("Origin", &own)], &init);
        assert_eq!(status, 200, "the server's own origin {own}: {body}");
    }

    // A page served by another program on another local port is a stranger.
    let (status, body) = http.post("/mcp", &[("Origin", "http://localhost:3000")], &init);
    assert_eq!(status, 403, "{body}");
    let (status, body) = http.post("/mcp", &[("Origin", &format!("https://localhost:{port}"))], &init);
    assert_eq!(status, 403, "{body}");
    // DNS rebinding: evil.example resolving to 127.0.0.1 still sends its own name.
    let (status, body) = http.post("/mcp", &[("Host", &format!("evil.example:{port}"))], &init);
    assert_eq!(status, 403, "{body}");
    let (status, body) = http.post("/mcp", &[("Origin", "http://evil.example")], &init);
    assert_eq!(status, 403, "{body}");
    let (status, _) = http.post("/elsewhere", &[], &init);
    assert_eq!(status, 404);

    // --allow-origin lets one more origin in, and only that one.
    let http = Http::spawn_with(fx.command(&["--http", "127.0.0.1:0", "--allow-origin", "http://localhost:3000"]));
    let (status, body) = http.post("/mcp", &[("Origin", "http://localhost:3000")], &init);
    assert_eq!(status, 200, "{body}");
    let (status, _) = http.post("/mcp", &[("Origin", "http://localhost:3001")], &init);
    assert_eq!(status, 403);
}

#[test]
fn http_refuses_a_body_over_4_mib_with_a_json_rpc_error() {
    let fx = Fixture::new();
    let http = Http::spawn(&fx);
    let bearer = format!("Bearer {}", http.token.as_ref().unwrap());
    // Refused from its Content-Length, before it is sent.
    let mut stream = std::net::TcpStream::connect(&http.addr).unwrap();
    let head = format!(
        "POST /mcp HTTP/1.1\r\nHost: {}\r\nAuthorization: {bearer}\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        http.addr,
        4 * 1024 * 1024 + 1
    );
    stream.write_all(head.as_bytes()).unwrap();
    let mut response = Vec::new();
    stream.read_to_end(&mut response).unwrap();
    let (status, response) = parse_response(&response);
    assert_eq!(status, 413, "{response}");
    let body: Value = serde_json::from_str(response.split_once("\r\n\r\n").unwrap().1).unwrap();
    assert_eq!(body["error"]["code"], -32600, "{body}");
    assert!(body["error"]["message"].as_str().unwrap().contains("4 MiB"), "{body}");

    // A body that is that large without saying so up front (chunked) is refused too.
    let mut stream = std::net::TcpStream::connect(&http.addr).unwrap();
    let head = format!(
        "POST /mcp HTTP/1.1\r\nHost: {}\r\nAuthorization: {bearer}\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n",
        http.addr
    );
    stream.write_all(head.as_bytes()).unwrap();
    let chunk = vec![b' '; 1024 * 1024];
    for _ in 0..5 {
        // The server may answer and close before taking it all.
        if stream.write_all(format!("{:x}\r\n", chunk.len()).as_bytes()).is_err()
            || stream.write_all(&chunk).is_err()
            || stream.write_all(b"\r\n").is_err()
        {
            break;
        }
    }
    let _ = stream.write_all(b"0\r\n\r\n");
    let mut response = Vec::new();
    let _ = stream.read_to_end(&mut response);
    let (status, response) = parse_response(&response);
    assert_eq!(status, 413, "{response}");

    // Still serving.
    assert_eq!(http.post("/mcp", &[], &init_request()).0, 200);
}

#[test]
fn http_refuses_to_listen_beyond_loopback() {
    let fx = Fixture::new();
    let out = fx.command(&["--http", "0.0.0.0:0"]).stdin(Stdio::null()).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("only loopback"), "{out:?}");
    // Not even without authentication.
    let out = fx.command(&["--http", "0.0.0.0:0", "--no-auth"]).stdin(Stdio::null()).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("only loopback"), "{out:?}");
    // --allow-remote (a container, a pod) still never goes without the token.
    let args = ["--http", "0.0.0.0:0", "--allow-remote", "--no-auth"];
    let out = fx.command(&args).stdin(Stdio::null()).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("must check the bearer token"), "{out:?}");
}

/// With `--allow-remote` the server listens beyond loopback, warns, and still wants the token;
/// `--allow-host` adds a name a load balancer or a service uses, and other names stay refused.
#[test]
fn allow_remote_listens_beyond_loopback_with_the_token_and_allow_host_adds_names() {
    let fx = Fixture::new();
    let http =
        Http::spawn_with(fx.command(&["--http", "0.0.0.0:0", "--allow-remote", "--allow-host", "lb.internal:9000"]));
    assert!(
        http.log.lines().iter().any(|l| l.contains("warning: toolhost mcp --allow-remote")),
        "{:#?}",
        http.log.lines()
    );
    let (status, _) = http.post_as_is("/mcp", &[], &init_request());
    assert_eq!(status, 401);
    let (status, response) = http.post("/mcp", &[("Host", "lb.internal:9000")], &init_request());
    assert_eq!(status, 200, "{response}");
    let (status, _) = http.post("/mcp", &[("Host", "evil.example:9000")], &init_request());
    assert_eq!(status, 403);
    let local = format!("127.0.0.1:{}", http.port());
    let (status, response) = http.post("/mcp", &[("Host", &local)], &init_request());
    assert_eq!(status, 200, "{response}");
}

#[test]
fn no_auth_on_loopback_warns_and_takes_requests_without_a_token() {
    let fx = Fixture::new();
    let http = Http::spawn_with(fx.command(&["--http", "127.0.0.1:0", "--no-auth"]));
    assert!(http.token.is_none(), "no token file with --no-auth");
    assert!(
        http.log.lines().iter().any(|l| l.contains("warning") && l.contains("--no-auth")),
        "{:#?}",
        http.log.lines()
    );
    let (status, body) = http.post_as_is("/mcp", &[], &init_request());
    assert_eq!(status, 200, "{body}");
    // Origins are still checked.
    let (status, _) = http.post_as_is("/mcp", &[("Origin", "http://localhost:3000")], &init_request());
    assert_eq!(status, 403);
}

/// `TOOLHOST_MAX_CONCURRENCY=1`: two safe calls from two HTTP sessions, sent together, run
/// one after the other (the runtime's start and finish events never interleave).
#[test]
fn calls_of_all_sessions_together_run_at_most_max_concurrency_at_once() {
    let fx = Fixture::new();
    let mut command = fx.command(&["--http", "127.0.0.1:0"]);
    command.env("TOOLHOST_MAX_CONCURRENCY", "1").env("TOOLHOST_LOG", "toolhost=debug");
    let http = Arc::new(Http::spawn_with(command));
    let (a, b) = (http.open_session(), http.open_session());
    assert_ne!(a, b);
    let barrier = Arc::new(std::sync::Barrier::new(2));
    let calls: Vec<_> = [a, b]
        .into_iter()
        .enumerate()
        .map(|(i, session)| {
            let (http, barrier) = (http.clone(), barrier.clone());
            std::thread::spawn(move || {
                barrier.wait();
                http.call(&session, 10 + i as u64, "Sleep", json!({"ms": 700}))
            })
        })
        .collect();
    for call in calls {
        let response = call.join().unwrap();
        assert_eq!(response["result"]["isError"], false, "{response}");
    }
    // The log is read from stderr by another thread: the last finish may trail the answer.
    let deadline = Instant::now() + Duration::from_secs(60);
    let events = loop {
        let events = http.log.call_events("Sleep");
        if events.len() >= 4 || Instant::now() > deadline {
            break events;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    assert_eq!(events.len(), 4, "{events:?}");
    assert_eq!((events[0].0.as_str(), events[1].0.as_str()), ("start", "finish"), "the calls overlapped: {events:?}");
    assert_eq!(events[0].1, events[1].1, "{events:?}");
    assert_eq!((events[2].0.as_str(), events[3].0.as_str()), ("start", "finish"), "{events:?}");
}

/// With one call running and `max_concurrency` 1, a session may queue 64 more; the next is a
/// JSON-RPC error naming the limit, and the queued ones all run once the first is cancelled.
#[test]
fn a_session_with_64_calls_queued_gets_an_error_for_the_next() {
    let fx = Fixture::new();
    let mut command = fx.command(&[]);
    command.env("TOOLHOST_MAX_CONCURRENCY", "1").env("TOOLHOST_LOG", "toolhost=debug");
    let mut raw = Raw::spawn_with(command, true);
    raw.initialize();
    let call = |id: u64, ms: u64| {
        json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {"name": "Sleep", "arguments": {"ms": ms}}})
        .to_string()
    };
    raw.send(&call(10, 120_000));
    // It runs: the runtime logged its start.
    raw.log.as_ref().unwrap().wait_for(r#""event":"start""#);
    for id in 100..165 {
        raw.send(&call(id, 1));
    }
    let refused = raw.recv();
    assert_eq!(refused["error"]["code"], -32000, "{refused}");
    let message = refused["error"]["message"].as_str().unwrap();
    assert!(message.contains("64") && message.contains("queued"), "{refused}");
    assert!((100..165).contains(&refused["id"].as_u64().unwrap()), "{refused}");

    raw.send(r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":10}}"#);
    let mut ids = Vec::new();
    for _ in 0..64 {
        let done = raw.recv();
        assert_eq!(done["result"]["isError"], false, "{done}");
        ids.push(done["id"].as_u64().unwrap());
    }
    ids.push(refused["id"].as_u64().unwrap());
    ids.sort();
    assert_eq!(ids, (100..165).collect::<Vec<_>>());
}

/// Once the session is open, the stdio transport answers plain `tools/call` requests itself
/// (without rmcp's service loop). It keeps the protocol's promises: each id answered once, with
/// its own type (`7` and `"7"` are two calls); a cancelled call never answered; a request of a
/// later revision left to rmcp and answered there; and a call still running when the input ends
/// answered before the server exits, successfully.
#[test]
fn calls_the_transport_answers_keep_the_protocols_promises() {
    let fx = Fixture::new();
    let mut command = fx.command(&[]);
    command.env("TOOLHOST_LOG", "toolhost=debug");
    let mut raw = Raw::spawn_with(command, true);
    raw.initialize();
    let call = |id: Value, name: &str, arguments: Value| {
        json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": name, "arguments": arguments}})
            .to_string()
    };
    raw.send(&call(json!("slow"), "Sleep", json!({"ms": 120_000})));
    raw.log.as_ref().unwrap().wait_for(r#""event":"start""#);
    raw.send(r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"slow","reason":"user"}}"#);
    raw.send(&call(json!(7), "Read", json!({"file_path": "hello.txt"})));
    raw.send(&call(json!("7"), "Read", json!({"file_path": "hello.txt"})));
    let newer = json!({"jsonrpc": "2.0", "id": 8, "method": "tools/call", "params": {
        "name": "Read", "arguments": {"file_path": "hello.txt"},
        "_meta": {"io.modelcontextprotocol/example": true}}});
    raw.send(&newer.to_string());
    raw.send(&call(json!(9), "Sleep", json!({"ms": 1500})));
    raw.close_input();
    let answers = raw.rest();
    let status = raw.child.wait().unwrap();
    assert!(status.success(), "{status:?}");

    let of = |id: Value| answers.iter().filter(|a| a["id"] == id).collect::<Vec<_>>();
    assert!(of(json!("slow")).is_empty(), "a cancelled call is not answered: {answers:?}");
    for id in [json!(7), json!("7")] {
        let answer = of(id.clone());
        assert_eq!(answer.len(), 1, "{id} answered once: {answers:?}");
        assert_eq!(answer[0]["result"]["content"][0]["text"], "     1\thello from the workspace", "{answer:?}");
    }
    assert_eq!(of(json!(8)).len(), 1, "{answers:?}");
    let slept = of(json!(9));
    assert_eq!(slept.len(), 1, "the call running at the end of input is answered: {answers:?}");
    assert_eq!(slept[0]["result"]["isError"], false, "{slept:?}");
    assert_eq!(answers.len(), 4, "nothing else: {answers:?}");
    // Which path each took (the transport says it at debug level, in the order it read them:
    // once 9's line is in, 8's would be too).
    let log = raw.log.as_ref().unwrap();
    for key in ["\"slow\"", "7", "\"7\"", "9"] {
        log.wait_for(&format!("tools/call {key} is answered by the stdio transport"));
    }
    let said = log.lines().join("\n");
    assert!(!said.contains("tools/call 8 is answered by the stdio transport"), "a newer revision's call is rmcp's");
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
                toolhost_tests::skip("no Python MCP SDK (run .ci/run, or set TOOLHOST_MCP_PYTHON)");
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

#[test]
fn a_tool_cannot_write_the_token_file() {
    let fx = Fixture::new();
    std::fs::write(fx.tools.path().join("hostile.wasm"), guests::HOSTILE).unwrap();
    let token_file = fx.ws.path().join("mcp.token");
    // (Global options may follow the subcommand.)
    let command = fx.command(&[
        "--http",
        "127.0.0.1:0",
        "--token-file",
        token_file.to_str().unwrap(),
        "--permission-mode",
        "bypass",
    ]);
    let http = Http::spawn_with(command);
    let token = http.token.clone().unwrap();
    let session = http.open_session();
    let response = http.call(&session, 2, "Hostile", json!({"op": "write", "path": "mcp.token", "content": "mine"}));
    assert_eq!(response["result"]["isError"], true, "{response}");
    assert!(response.to_string().contains("The sandbox refused"), "{response}");
    assert_eq!(std::fs::read_to_string(&token_file).unwrap().trim(), token);
}

#[tokio::test]
async fn function_components_and_command_programs_are_offered_beside_the_default_tools() {
    within(async {
        let fx = Fixture::new();
        std::fs::write(fx.tools.path().join("functions.wasm"), guests::WIT_FUNCTIONS).unwrap();
        std::fs::write(fx.tools.path().join("wc.wasm"), guests::WIT_COMMAND).unwrap();
        let command = tokio::process::Command::from(fx.command_allowing(&["other_echo", "wc"], &[]));
        let transport = TokioChildProcess::builder(command).stderr(Stdio::null()).spawn().expect("spawn").0;
        let client = ().serve(transport).await.expect("initialize");
        let tools = client.list_all_tools().await.unwrap();
        let names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
        for name in ["Read", "echo", "other_echo", "greet", "wc"] {
            assert!(names.contains(&name), "{name} missing from {names:?}");
        }
        let greet = tools.iter().find(|t| t.name == "greet").unwrap();
        assert_eq!(greet.input_schema["properties"]["p"]["properties"]["age"]["maximum"], json!(255));
        let ann = greet.annotations.as_ref().expect("annotations");
        assert_eq!(ann.read_only_hint, Some(false), "a function says nothing of itself");

        let echoed = client.call_tool(call("other_echo", json!({"text": "abc"}))).await.unwrap();
        assert_eq!((echoed.is_error, text(&echoed)), (Some(false), "cba".to_string()));
        let ran = client.call_tool(call("wc", json!({"args": ["echo", "over", "mcp"]}))).await.unwrap();
        assert_eq!(ran.is_error, Some(false), "{ran:?}");
        assert_eq!(text(&ran), "exit code: 0\n--- stdout ---\nover mcp\n");
        let failed = client.call_tool(call("wc", json!({"args": ["exit", "4"]}))).await.unwrap();
        assert_eq!(failed.is_error, Some(true));
        assert!(text(&failed).starts_with("exit code: 4"), "{failed:?}");
        client.cancel().await.unwrap();
    })
    .await;
}

impl Http {
    /// GET `path` with exactly these extra headers: the status and the whole response.
    fn get(&self, path: &str, headers: &[(&str, &str)]) -> (u16, String) {
        let mut stream = std::net::TcpStream::connect(&self.addr).unwrap();
        let mut request = format!("GET {path} HTTP/1.1\r\nHost: {}\r\nConnection: close\r\n", self.addr);
        for (k, v) in headers {
            request.push_str(&format!("{k}: {v}\r\n"));
        }
        request.push_str("\r\n");
        stream.write_all(request.as_bytes()).unwrap();
        let mut response = Vec::new();
        stream.read_to_end(&mut response).unwrap();
        parse_response(&response)
    }
}

/// `/healthz` and `/readyz` answer a load balancer without the token; `/metrics` (behind the
/// token) counts calls by tool and outcome, their latency, sessions and loaded tools in
/// Prometheus text format; a reload that fails is reported by `/readyz` (to a request with the
/// token: the error quotes the config) and the metrics, and the server stays ready (its tools
/// still answer).
#[test]
fn health_readiness_and_metrics_for_load_balancers_and_scrapers() {
    let fx = Fixture::new();
    let http = Http::spawn(&fx);
    let (status, response) = http.get("/healthz", &[]);
    assert_eq!(status, 200, "{response}");
    assert!(response.ends_with("\r\n\r\nok\n"), "{response}");
    let (status, response) = http.get("/readyz", &[]);
    assert_eq!(status, 200, "{response}");
    assert!(response.contains("\"ready\":true"), "{response}");

    let (status, _) = http.get("/metrics", &[]);
    assert_eq!(status, 401, "the token guards /metrics");
    let bearer = format!("Bearer {}", http.token.clone().unwrap());
    let session = http.open_session();
    for id in 1..=2 {
        let response = http.call(&session, id, "Sleep", json!({"ms": 1}));
        assert_eq!(response["result"]["isError"], false, "{response}");
    }
    let response = http.call(&session, 3, "Panic", json!({}));
    assert_eq!(response["result"]["isError"], true, "{response}");
    // An unknown tool is a protocol error in MCP, before any call: nothing to count.
    let response = http.call(&session, 4, "NoSuchTool", json!({}));
    assert_eq!(response["error"]["code"], -32602, "{response}");
    let (status, metrics) = http.get("/metrics", &[("Authorization", &bearer)]);
    assert_eq!(status, 200, "{metrics}");
    assert!(metrics.to_ascii_lowercase().contains("content-type: text/plain; version=0.0.4"), "{metrics}");
    for line in [
        "toolhost_calls_total{tool=\"Sleep\",outcome=\"success\"} 2",
        "toolhost_calls_total{tool=\"Panic\",outcome=\"panic\"} 1",
        "toolhost_call_duration_seconds_count{tool=\"Sleep\"} 2",
        "toolhost_sessions 1",
        "toolhost_queued_calls 0",
        "toolhost_reload_failures_total 0",
    ] {
        assert!(metrics.lines().any(|l| l == line), "{line} missing from\n{metrics}");
    }
    assert!(metrics.lines().any(|l| l.starts_with("toolhost_decisions_total{decision=\"allow\"} ")), "{metrics}");
    assert!(!metrics.contains("NoSuchTool"), "{metrics}");
    let tools = metrics.lines().find_map(|l| l.strip_prefix("toolhost_tools_loaded ")).unwrap();
    assert!(tools.parse::<u32>().unwrap() >= 3, "{metrics}");

    // A broken config: still ready (the loaded tools answer; the same mistake rolled out to
    // every replica must not empty the balancer), the failure said; gone once fixed.
    std::fs::write(fx.ws.path().join("toolhost.toml"), "[limits\n").unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    let response = loop {
        let (status, response) = http.get("/readyz", &[("Authorization", &bearer)]);
        assert_eq!(status, 200, "{response}");
        if response.contains("last_reload_error") {
            break response;
        }
        assert!(Instant::now() < deadline, "the failed reload never showed: {response}");
        std::thread::sleep(Duration::from_millis(100));
    };
    assert!(response.contains("\"ready\":true") && response.contains("toolhost.toml"), "{response}");
    // Anyone else learns only that the server is ready.
    let (status, response) = http.get("/readyz", &[]);
    assert_eq!(status, 200, "{response}");
    assert!(response.contains("\"ready\":true"), "{response}");
    assert!(!response.contains("last_reload_error") && !response.contains("toolhost.toml"), "{response}");
    let (_, response) = http.get("/readyz", &[("Authorization", "Bearer not-the-token")]);
    assert!(!response.contains("last_reload_error"), "{response}");
    assert_eq!(http.call(&session, 5, "Sleep", json!({"ms": 1}))["result"]["isError"], false);
    std::fs::remove_file(fx.ws.path().join("toolhost.toml")).unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    while http.get("/readyz", &[("Authorization", &bearer)]).1.contains("last_reload_error") {
        assert!(Instant::now() < deadline, "the good reload never cleared the error");
        std::thread::sleep(Duration::from_millis(100));
    }
    let (_, metrics) = http.get("/metrics", &[("Authorization", &bearer)]);
    assert!(metrics.lines().any(|l| l == "toolhost_reload_failures_total 1"), "{metrics}");
}

/// `--metrics-no-auth` lets a scraper without the token read `/metrics`, and nothing else.
#[test]
fn metrics_no_auth_opens_metrics_only() {
    let fx = Fixture::new();
    let http = Http::spawn_with(fx.command(&["--http", "127.0.0.1:0", "--metrics-no-auth"]));
    let (status, metrics) = http.get("/metrics", &[]);
    assert_eq!(status, 200, "{metrics}");
    assert!(metrics.contains("toolhost_tools_loaded "), "{metrics}");
    let (status, _) = http.post_as_is("/mcp", &[], &init_request());
    assert_eq!(status, 401);
}

/// A rolling restart: SIGTERM makes `/readyz` answer 503 (draining) while the server keeps
/// serving for the grace period; then it stops accepting connections, answers the call still
/// running, and exits 0. No call is lost.
#[test]
fn sigterm_drains_answers_the_running_call_and_exits_cleanly() {
    let fx = Fixture::new();
    // A grace period long enough to ask /readyz in it on a busy machine.
    let mut command = fx.command(&["--http", "127.0.0.1:0", "--drain-grace-ms", "4000"]);
    command.env("TOOLHOST_LOG", "toolhost=debug");
    let mut http = Http::spawn_with(command);
    let session = http.open_session();
    let addr = http.addr.clone();
    let call = {
        let (addr, token, session) = (addr.clone(), http.token.clone(), session.clone());
        std::thread::spawn(move || {
            let http = Http::client_of(addr, token);
            http.call(&session, 7, "Sleep", json!({"ms": 8000}))
        })
    };
    let deadline = Instant::now() + Duration::from_secs(120);
    while !http.log.call_events("Sleep").iter().any(|(e, _)| e == "start") {
        assert!(Instant::now() < deadline, "the call never started: {:#?}", http.log.lines());
        std::thread::sleep(Duration::from_millis(20));
    }
    let pid = http.child.id().to_string();
    assert!(Command::new("kill").args(["-TERM", &pid]).status().unwrap().success());
    http.log.wait_for("toolhost mcp: SIGTERM: draining");
    let (status, response) = http.get("/readyz", &[]);
    assert_eq!(status, 503, "{response}");
    assert!(response.contains("\"ready\":false") && !response.contains("reason"), "{response}");
    let bearer = format!("Bearer {}", http.token.clone().unwrap());
    let (status, response) = http.get("/readyz", &[("Authorization", &bearer)]);
    assert_eq!(status, 503, "{response}");
    assert!(response.contains("draining"), "{response}");
    // After the grace period no new connection is accepted, while the call is still running.
    let deadline = Instant::now() + Duration::from_secs(120);
    while std::net::TcpStream::connect(&addr).is_ok() {
        assert!(Instant::now() < deadline, "still accepting: {:#?}", http.log.lines());
        std::thread::sleep(Duration::from_millis(50));
    }
    let response = call.join().unwrap();
    assert_eq!(response["result"]["isError"], false, "{response}");
    let status = http.child.wait().unwrap();
    assert!(status.success(), "{status:?}: {:#?}", http.log.lines());
    http.log.wait_for("toolhost mcp: drained; exiting");
}

impl Http {
    /// Another handle on a running server (for a thread), which owns no process.
    fn client_of(addr: String, token: Option<String>) -> HttpClient {
        HttpClient(Http {
            child: Command::new("true").spawn().unwrap(),
            addr,
            token_file: None,
            token,
            log: Log::default(),
        })
    }
}

/// An [`Http`] used only to send requests.
struct HttpClient(Http);

impl std::ops::Deref for HttpClient {
    type Target = Http;
    fn deref(&self) -> &Http {
        &self.0
    }
}

/// The bearer token given as `TOOLHOST_MCP_TOKEN` is the server's secret: a tool granted every
/// variable (`env = ["*"]`) still cannot read it (it could call the server's other tools), and
/// sees the other variables.
#[test]
fn a_tool_granted_every_variable_never_sees_the_server_token() {
    let fx = Fixture::new();
    std::fs::write(fx.tools.path().join("functions.wasm"), guests::WIT_FUNCTIONS).unwrap();
    std::fs::write(
        fx.ws.path().join("toolhost.toml"),
        format!(
            "[tools.getenv]\npath = \"{}\"\nfunction = \"get-env\"\ngrant = {{ env = [\"*\"] }}\n",
            fx.tools.path().join("functions.wasm").display()
        ),
    )
    .unwrap();
    let mut command = fx.command_allowing(&["getenv"], &["--http", "127.0.0.1:0"]);
    command.env("TOOLHOST_MCP_TOKEN", "s3cret-token-value-0123456789abcdef").env("TOOLHOST_TEST_VISIBLE", "visible");
    let mut http = Http::spawn_with(command);
    http.token = Some("s3cret-token-value-0123456789abcdef".into());
    let session = http.open_session();
    let seen = http.call(&session, 1, "getenv", json!({"key": "TOOLHOST_TEST_VISIBLE"}));
    assert!(seen.to_string().contains("visible"), "{seen}");
    let token = http.call(&session, 2, "getenv", json!({"key": "TOOLHOST_MCP_TOKEN"}));
    assert_eq!(token["result"]["isError"], false, "{token}");
    assert!(!token.to_string().contains("s3cret"), "{token}");
}

/// `--stateless`: no `Mcp-Session-Id`, each request served on its own, a call answered as one
/// JSON body; nothing carries over between calls (an "allow for this session" cannot exist).
#[test]
fn stateless_http_answers_each_request_on_its_own_as_json() {
    let fx = Fixture::new();
    let http = Http::spawn_with(fx.command(&["--http", "127.0.0.1:0", "--stateless"]));
    let (status, response) = http.post("/mcp", &[], &init_request());
    assert_eq!(status, 200, "{response}");
    assert!(!response.to_ascii_lowercase().contains("mcp-session-id"), "{response}");
    let headers = [("MCP-Protocol-Version", "2025-06-18")];
    let body = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": {"name": "Read", "arguments": {"file_path": "hello.txt"}}})
    .to_string();
    let (status, response) = http.post("/mcp", &headers, &body);
    assert_eq!(status, 200, "{response}");
    assert!(response.to_ascii_lowercase().contains("content-type: application/json"), "{response}");
    let (_, json_body) = response.split_once("\r\n\r\n").unwrap();
    let answer: Value = serde_json::from_str(json_body.trim()).unwrap_or_else(|e| panic!("{e}: {response}"));
    assert_eq!(answer["id"], 2, "{answer}");
    assert!(answer["result"]["content"][0]["text"].as_str().unwrap().contains("hello from the workspace"), "{answer}");
    // Still behind the token.
    let (status, _) = http.post_as_is("/mcp", &headers, &body);
    assert_eq!(status, 401);
}

/// A plain `tools/call` of an HTTP session is answered as one JSON body (without rmcp's event
/// stream), under the same rules as every other request: the Host and Origin checks, an unknown
/// session or tool refused as before, a call with a progress token still answered as an event
/// stream, and a `notifications/cancelled` stops a call answered this way.
#[test]
fn plain_session_calls_are_answered_as_json_under_the_same_rules() {
    let fx = Fixture::new();
    let mut command = fx.command(&["--http", "127.0.0.1:0"]);
    command.env("TOOLHOST_LOG", "toolhost=debug");
    let http = Arc::new(Http::spawn_with(command));
    let session = http.open_session();
    let headers = [("Mcp-Session-Id", session.as_str()), ("MCP-Protocol-Version", "2025-06-18")];
    let call = |id: u64, name: &str, arguments: Value, meta: Option<Value>| {
        let mut params = json!({"name": name, "arguments": arguments});
        if let Some(meta) = meta {
            params["_meta"] = meta;
        }
        json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params}).to_string()
    };
    let json_answer = |response: &str| -> Value {
        assert!(response.to_ascii_lowercase().contains("content-type: application/json"), "{response}");
        let (_, body) = response.split_once("\r\n\r\n").unwrap();
        serde_json::from_str(body.trim()).unwrap_or_else(|e| panic!("{e}: {response}"))
    };

    // The session joins the fast path once rmcp has handled its `notifications/initialized`,
    // on a task of its own: a call that comes first is answered by rmcp (an event stream),
    // as it should be. Wait for the switch, then hold it to every rule.
    let deadline = Instant::now() + Duration::from_secs(20);
    let (status, response) = loop {
        let (status, response) = http.post("/mcp", &headers, &call(2, "Read", json!({"file_path": "hello.txt"}), None));
        let fast = response.to_ascii_lowercase().contains("content-type: application/json");
        if fast || Instant::now() > deadline {
            break (status, response);
        }
        assert!(response.contains("hello from the workspace"), "answered by rmcp meanwhile: {response}");
        std::thread::sleep(Duration::from_millis(20));
    };
    assert_eq!(status, 200, "{response}");
    let answer = json_answer(&response);
    assert_eq!(answer["id"], 2, "{answer}");
    assert_eq!(answer["result"]["isError"], false, "{answer}");
    assert!(answer["result"]["content"][0]["text"].as_str().unwrap().contains("hello from the workspace"), "{answer}");
    // A string id comes back as a string; metadata of this revision changes nothing.
    let body = call(3, "Read", json!({"file_path": "hello.txt"}), Some(json!({"example/trace": "t1"})))
        .replace("\"id\":3", "\"id\":\"three\"");
    let (status, response) = http.post("/mcp", &headers, &body);
    assert_eq!(status, 200, "{response}");
    assert_eq!(json_answer(&response)["id"], "three", "{response}");

    // An unknown tool is the same protocol error as on every other path.
    let (status, response) = http.post("/mcp", &headers, &call(4, "NoSuchTool", json!({}), None));
    assert_eq!(status, 200, "{response}");
    let answer = json_answer(&response);
    assert_eq!(answer["error"]["code"], -32602, "{answer}");
    assert!(answer["error"]["message"].as_str().unwrap().contains("NoSuchTool"), "{answer}");

    // The same rules as for any request: foreign Host and Origin, unknown session, no token.
    let read = call(5, "Read", json!({"file_path": "hello.txt"}), None);
    let port = http.port().to_string();
    let evil_host = format!("evil.example:{port}");
    for extra in [("Host", evil_host.as_str()), ("Origin", "http://evil.example"), ("Origin", "http://localhost:3000")]
    {
        let (status, response) = http.post("/mcp", &[headers[0], headers[1], extra], &read);
        assert_eq!(status, 403, "{extra:?}: {response}");
    }
    let (status, response) = http.post("/mcp", &[("Mcp-Session-Id", "no-such-session"), headers[1]], &read);
    assert_eq!(status, 404, "{response}");
    let (status, _) = http.post_as_is("/mcp", &headers, &read);
    assert_eq!(status, 401);
    let (status, response) = http.post("/mcp", &[headers[0], ("MCP-Protocol-Version", "1999-01-01")], &read);
    assert_eq!(status, 400, "an unknown protocol version is refused as before: {response}");

    // A progress token: the progress needs an event stream, so rmcp's path answers it.
    let body = call(6, "Progress", json!({}), Some(json!({"progressToken": "p6"})));
    let (status, response) = http.post("/mcp", &headers, &body);
    assert_eq!(status, 200, "{response}");
    assert!(response.to_ascii_lowercase().contains("content-type: text/event-stream"), "{response}");
    assert!(response.contains("notifications/progress") && response.contains("\"id\":6"), "{response}");

    // A call answered as JSON stops when the client cancels it.
    let sleeper = {
        let (http, headers) = (http.clone(), headers.map(|(k, v)| (k.to_string(), v.to_string())));
        let body = call(7, "Sleep", json!({"ms": 120_000}), None);
        std::thread::spawn(move || {
            let headers: Vec<(&str, &str)> = headers.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
            http.post("/mcp", &headers, &body)
        })
    };
    let deadline = Instant::now() + Duration::from_secs(120);
    while !http.log.call_events("Sleep").iter().any(|(event, _)| event == "start") {
        assert!(Instant::now() < deadline, "the Sleep call never started: {:#?}", http.log.lines());
        std::thread::sleep(Duration::from_millis(20));
    }
    let cancel = r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":7,"reason":"user"}}"#;
    let (status, response) = http.post("/mcp", &headers, cancel);
    assert_eq!(status, 202, "{response}");
    let (status, response) = sleeper.join().unwrap();
    assert_eq!(status, 200, "{response}");
    let answer = json_answer(&response);
    assert_eq!((answer["id"].clone(), answer["result"]["isError"].clone()), (json!(7), json!(true)), "{answer}");
}

#[test]
fn logging_set_level_and_completion_answer_as_the_protocol_says() {
    let fx = Fixture::new();
    let mut raw = Raw::spawn(&fx);
    raw.initialize();
    raw.send(r#"{"jsonrpc":"2.0","id":2,"method":"logging/setLevel","params":{"level":"info"}}"#);
    let set = raw.recv();
    assert_eq!(set["id"], 2, "{set}");
    assert_eq!(set["result"], json!({}), "{set}");
    raw.send(
        r#"{"jsonrpc":"2.0","id":3,"method":"completion/complete","params":{"ref":{"type":"ref/prompt","name":"p"},"argument":{"name":"a","value":"t"}}}"#,
    );
    let done = raw.recv();
    assert_eq!(done["id"], 3, "{done}");
    assert_eq!(done["result"]["completion"]["values"], json!([]), "toolhost serves no prompts: {done}");
}
