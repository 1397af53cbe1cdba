//! MCP round trips, measured the way a client meets them, over stdio and over streamable HTTP:
//! minimal clients (no SDK) against `toolhost mcp` serving the `Noop` test tool, and, in the
//! same run, against trivial reference servers (this program with `--reference-server` or
//! `--reference-http-server`: they answer each request at once, no tool at all), so every figure
//! stands beside the floor of the client, the transport and the process.
//!
//! ```sh
//! cargo bench -p toolhost-tests --bench mcp            # CALLS=2000 REPEATS=3 by default
//! ```
//!
//! stdio: one JSON-RPC message per line. Sequential: one `tools/call` at a time, the median and
//! 90th percentile of the round trips. Pipelined: `WINDOW` (10) requests in flight, calls per
//! second over all of them.
//!
//! HTTP (`toolhost mcp --http 127.0.0.1:0`, its bearer token, the `Mcp-Session-Id` of its
//! `initialize`): a hand-written HTTP/1.1 client over `TcpStream` POSTs each message to `/mcp`
//! and reads the answer whether it comes as JSON or as a server-sent event stream, with a
//! `Content-Length` or chunked. Sequential over one keep-alive connection; sequential with a new
//! connection per call (`Connection: close`, the connect inside the timing); and `WINDOW`
//! keep-alive connections, each in its own thread doing sequential calls, in calls per second.
//! The HTTP floor is a thread-per-connection HTTP/1.1 server answering each POST at once with a
//! JSON body.
//!
//! The server is the `toolhost` of this build (`cargo build --release`), or the binary named by
//! `TOOLHOST_BIN`. With `TOOLHOST_BIN_A` and `TOOLHOST_BIN_B` set, the bench runs one round of
//! the same-run A/B instead (`tests/benches/ab.py`, which sets them): each figure for both
//! binaries, one after the other in the order of `AB_ORDER` (`AB` or `BA`), printed as one JSON
//! line per figure and side. The client is this program in both, so it is not part of the
//! difference.

use serde_json::{Value, json};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Barrier, mpsc};
use std::time::{Duration, Instant};

const WINDOW: usize = 10;

fn main() {
    if std::env::args().any(|a| a == "--reference-server") {
        reference_server();
        return;
    }
    if std::env::args().any(|a| a == "--reference-http-server") {
        reference_http_server();
        return;
    }
    let calls: usize = std::env::var("CALLS").ok().and_then(|v| v.parse().ok()).unwrap_or(2000);
    if let (Some(a), Some(b)) = (std::env::var_os("TOOLHOST_BIN_A"), std::env::var_os("TOOLHOST_BIN_B")) {
        ab_round(calls, [("A", a.into()), ("B", b.into())]);
        return;
    }
    let repeats: usize = std::env::var("REPEATS").ok().and_then(|v| v.parse().ok()).unwrap_or(3);
    let binary = toolhost_binary();
    let ws = toolhost_tests::workspace();
    let tools = ws.path().join("tools");
    std::fs::create_dir(&tools).unwrap();
    std::fs::write(tools.join("noop.wasm"), toolhost_tests::guests::NOOP).unwrap();
    let cache = toolhost_tests::workspace();

    let reference = || {
        let mut c = Command::new(std::env::current_exe().unwrap());
        c.arg("--reference-server");
        c
    };
    let toolhost = || {
        let mut c = Command::new(&binary);
        c.args(["mcp", "--no-default-tools", "--permission-mode", "bypass", "--tools"])
            .arg(&tools)
            .arg("--workspace")
            .arg(ws.path())
            .env("TOOLHOST_CACHE_DIR", cache.path().join("cache"));
        c
    };
    // An MCP server's tool: `toolhost mcp` whose config names the reference server as
    // `[mcp_servers.inner]` (toolhost never starts itself as a tool source), so each call goes
    // client → toolhost's pipeline (schema, rules, hooks, audit, limits) → rmcp client → stdio
    // → the reference server. What it adds over the reference row is the cost of an MCP tool
    // source.
    let proxy_ws = toolhost_tests::workspace();
    std::fs::write(
        proxy_ws.path().join("toolhost.toml"),
        format!(
            "[mcp_servers.inner]\ncommand = {:?}\nargs = [\"--reference-server\"]\n",
            std::env::current_exe().unwrap().display().to_string(),
        ),
    )
    .unwrap();
    let trusted = Command::new(&binary)
        .arg("trust")
        .current_dir(proxy_ws.path())
        .env("TOOLHOST_CACHE_DIR", cache.path().join("proxy-cache"))
        .output()
        .unwrap();
    assert!(trusted.status.success(), "toolhost trust: {}", String::from_utf8_lossy(&trusted.stderr));
    let proxy = || {
        let mut c = Command::new(&binary);
        c.args(["mcp", "--no-default-tools", "--permission-mode", "bypass"])
            .current_dir(proxy_ws.path())
            .env("TOOLHOST_CACHE_DIR", cache.path().join("proxy-cache"));
        c
    };
    println!("stdio, {calls} calls of Noop, best of {repeats} runs per figure");
    let mut floor = None;
    for (label, command, tool) in [
        ("reference server", &reference as &dyn Fn() -> Command, "Noop"),
        ("toolhost mcp", &toolhost, "Noop"),
        ("… as an MCP tool", &proxy, "mcp__inner__Noop"),
    ] {
        let mut best: Option<(Duration, Duration, f64)> = None;
        for _ in 0..repeats {
            let mut server = Server::start(command(), tool);
            let (median, p90) = server.sequential(calls);
            let rate = server.pipelined(calls);
            server.stop();
            best = Some(match best {
                None => (median, p90, rate),
                Some((m, p, r)) => (m.min(median), p.min(p90), r.max(rate)),
            });
        }
        let (median, p90, rate) = best.unwrap();
        let beyond = floor.map(|f: Duration| format!(" ({:+.1} µs over the floor)", micros(median) - micros(f)));
        println!(
            "{label:<18} sequential: median {:7.1} µs, p90 {:7.1} µs{}   pipelined ({WINDOW} in flight): {rate:8.0} calls/s",
            micros(median),
            micros(p90),
            beyond.unwrap_or_default()
        );
        if let (Some(f), true) = (floor, tool != "Noop") {
            println!(
                "{:<18} an MCP tool source adds {:+.1} µs per sequential call over its server alone",
                "",
                micros(median) - micros(f)
            );
        }
        floor.get_or_insert(median);
    }

    let token_file = ws.path().join("mcp.token");
    let token = write_token(&token_file);
    let toolhost_http = || {
        let mut c = toolhost();
        c.args(["--http", "127.0.0.1:0", "--token-file"]).arg(&token_file);
        c
    };
    let toolhost_stateless = || {
        let mut c = toolhost_http();
        c.arg("--stateless");
        c
    };
    let reference_http = || {
        let mut c = Command::new(std::env::current_exe().unwrap());
        c.arg("--reference-http-server");
        c
    };
    http(
        calls,
        repeats,
        &token,
        [
            ("reference server", &reference_http),
            ("toolhost mcp", &toolhost_http),
            ("toolhost mcp --stateless", &toolhost_stateless),
        ],
    );
}

/// The server under test: `TOOLHOST_BIN`, else the `toolhost` of this build.
fn toolhost_binary() -> PathBuf {
    match std::env::var_os("TOOLHOST_BIN") {
        Some(path) => path.into(),
        None => toolhost_tests::cli::binary().to_path_buf(),
    }
}

/// One round of the same-run A/B (`tests/benches/ab.py`): every figure for the two binaries, one
/// side after the other in the order `AB_ORDER` names (`AB`, the default, or `BA`), each printed
/// as a JSON line `{"figure", "unit", "side", "value"}`, or `"missing"` with the reason when a
/// binary cannot give it. All figures are times (smaller is better): a rate is printed as the
/// time per call. `STARTS` (default 11): starts per side for start → `tools/list` ready.
fn ab_round(calls: usize, sides: [(&str, PathBuf); 2]) {
    let starts: usize = std::env::var("STARTS").ok().and_then(|v| v.parse().ok()).unwrap_or(11);
    let mut sides = sides;
    match std::env::var("AB_ORDER").as_deref() {
        Ok("BA") => sides.reverse(),
        Ok("AB") | Err(_) => {}
        Ok(other) => panic!("AB_ORDER is AB or BA, not {other}"),
    }
    let ws = toolhost_tests::workspace();
    let tools = ws.path().join("tools");
    std::fs::create_dir(&tools).unwrap();
    std::fs::write(tools.join("noop.wasm"), toolhost_tests::guests::NOOP).unwrap();
    let token_file = ws.path().join("mcp.token");
    let token = write_token(&token_file);
    // A compile cache per side: two builds may not read each other's entries alike.
    let cache = toolhost_tests::workspace();
    let toolhost = |side: &str, binary: &Path| {
        let mut c = Command::new(binary);
        c.args(["mcp", "--no-default-tools", "--permission-mode", "bypass", "--tools"])
            .arg(&tools)
            .arg("--workspace")
            .arg(ws.path())
            .env("TOOLHOST_CACHE_DIR", cache.path().join(side));
        c
    };
    let http = |side: &str, binary: &Path, stateless: bool| {
        let mut c = toolhost(side, binary);
        c.args(["--http", "127.0.0.1:0", "--token-file"]).arg(&token_file);
        if stateless {
            c.arg("--stateless");
        }
        c
    };
    let print = |figure: &str, unit: &str, side: &str, value: Result<f64, String>| {
        let line = match value {
            Ok(value) => json!({"figure": figure, "unit": unit, "side": side, "value": value}),
            Err(missing) => json!({"figure": figure, "unit": unit, "side": side, "missing": missing}),
        };
        println!("{line}");
    };

    // The control: the same reference server on both sides, so its ratio shows the noise.
    for (side, _) in &sides {
        let mut reference = Command::new(std::env::current_exe().unwrap());
        reference.arg("--reference-server");
        let mut server = Server::start(reference, "Noop");
        let (median, _) = server.sequential(calls);
        server.stop();
        print("control: reference stdio server, sequential", "µs", side, Ok(micros(median)));
    }
    // Each side's cache gets Cranelift's code for `Noop` before anything is timed: a build with
    // tiered compilation would otherwise run the first server's calls on Winch's code (several
    // times slower) while Cranelift compiles beside them. `TOOLHOST_NO_TIERING` compiles with
    // Cranelift before the first call; a build without tiering ignores it.
    for (side, binary) in &sides {
        let mut warm = toolhost(side, binary);
        warm.env("TOOLHOST_NO_TIERING", "1");
        Server::start(warm, "Noop").stop();
    }
    for (side, binary) in &sides {
        let mut server = Server::start(toolhost(side, binary), "Noop");
        let (median, _) = server.sequential(calls);
        let rate = server.pipelined(calls);
        server.stop();
        print("stdio tools/call, sequential", "µs", side, Ok(micros(median)));
        print(&format!("stdio tools/call, pipelined ({WINDOW} in flight)"), "µs", side, Ok(1e6 / rate));
    }
    for (label, stateless) in [("HTTP session", false), ("HTTP stateless", true)] {
        for (side, binary) in &sides {
            let keep_alive = format!("{label}, keep-alive sequential");
            let in_flight = format!("{label}, {WINDOW} connections");
            match HttpServer::try_start(http(side, binary, stateless), &token) {
                Ok(server) => {
                    let (median, _) = server.sequential(calls, Reuse::KeepAlive);
                    let rate = server.in_flight(calls);
                    server.stop();
                    print(&keep_alive, "µs", side, Ok(micros(median)));
                    print(&in_flight, "µs", side, Ok(1e6 / rate));
                }
                Err(e) => {
                    print(&keep_alive, "µs", side, Err(e.clone()));
                    print(&in_flight, "µs", side, Err(e));
                }
            }
        }
    }
    // Start → `tools/list` answered, warm cache: the sides alternate start by start.
    let mut ready: Vec<Vec<Duration>> = vec![Vec::new(); sides.len()];
    for _ in 0..starts {
        for (times, (side, binary)) in ready.iter_mut().zip(&sides) {
            times.push(start_to_ready(toolhost(side, binary)));
        }
    }
    for (mut times, (side, _)) in ready.into_iter().zip(&sides) {
        times.sort();
        print("start → tools/list ready", "ms", side, Ok(times[times.len() / 2].as_secs_f64() * 1e3));
    }
}

/// From spawning `command` to the answer of its `tools/list` (after `initialize` and
/// `notifications/initialized`), which must list `Noop`.
fn start_to_ready(mut command: Command) -> Duration {
    let start = Instant::now();
    let mut child = command.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::null()).spawn().unwrap();
    let input = child.stdin.take().unwrap();
    let output = BufReader::new(child.stdout.take().unwrap());
    let mut server = Server { child, input, output, next_id: 0, tool: "Noop".into() };
    let init = server.request(
        "initialize",
        json!({"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "bench", "version": "0"}}),
    );
    assert!(init.get("result").is_some(), "initialize failed: {init}");
    server.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    let list = server.request("tools/list", json!({}));
    let elapsed = start.elapsed();
    assert!(list["result"]["tools"].as_array().is_some_and(|t| t.iter().any(|t| t["name"] == "Noop")), "{list}");
    server.stop();
    elapsed
}

fn micros(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}

/// A server on the other end of two pipes, initialised.
struct Server {
    child: Child,
    input: ChildStdin,
    output: BufReader<ChildStdout>,
    next_id: u64,
    /// The tool every call names: `Noop`, or `mcp__inner__Noop` through a proxy.
    tool: String,
}

impl Server {
    fn start(mut command: Command, tool: &str) -> Server {
        let mut child = command.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::null()).spawn().unwrap();
        let input = child.stdin.take().unwrap();
        let output = BufReader::new(child.stdout.take().unwrap());
        let mut server = Server { child, input, output, next_id: 0, tool: tool.to_string() };
        let init = server.request(
            "initialize",
            json!({"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "bench", "version": "0"}}),
        );
        assert!(init.get("result").is_some(), "initialize failed: {init}");
        server.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        // One call first: the tool's code is made ready at its first call.
        let first = server.request("tools/call", json!({"name": tool, "arguments": {}}));
        assert_eq!(first["result"]["content"][0]["text"], "ok", "{first}");
        server
    }

    fn send(&mut self, message: &Value) {
        let mut line = serde_json::to_vec(message).unwrap();
        line.push(b'\n');
        self.input.write_all(&line).unwrap();
        self.input.flush().unwrap();
    }

    fn receive(&mut self) -> Value {
        let mut line = String::new();
        assert!(self.output.read_line(&mut line).unwrap() > 0, "the server closed its output");
        serde_json::from_str(&line).unwrap()
    }

    fn request(&mut self, method: &str, params: Value) -> Value {
        self.next_id += 1;
        let id = self.next_id;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        loop {
            let answer = self.receive();
            if answer.get("id") == Some(&json!(id)) {
                return answer;
            }
        }
    }

    /// Median and 90th percentile of `n` round trips, one at a time.
    fn sequential(&mut self, n: usize) -> (Duration, Duration) {
        let mut times = Vec::with_capacity(n);
        for _ in 0..n {
            let start = Instant::now();
            let answer = self.request("tools/call", json!({"name": self.tool, "arguments": {}}));
            times.push(start.elapsed());
            assert_eq!(answer["result"]["content"][0]["text"], "ok", "{answer}");
        }
        times.sort();
        (times[n / 2], times[n * 9 / 10])
    }

    /// Calls per second with `WINDOW` requests in flight.
    fn pipelined(&mut self, n: usize) -> f64 {
        let (done_tx, done_rx) = mpsc::channel::<()>();
        let tool = self.tool.clone();
        let start = Instant::now();
        std::thread::scope(|scope| {
            let output = &mut self.output;
            scope.spawn(move || {
                let mut line = String::new();
                for _ in 0..n {
                    line.clear();
                    assert!(output.read_line(&mut line).unwrap() > 0, "the server closed its output");
                    assert!(line.contains("\"ok\""), "{line}");
                    done_tx.send(()).unwrap();
                }
            });
            for i in 0..n {
                if i >= WINDOW {
                    done_rx.recv().unwrap();
                }
                let id = 1_000_000 + i;
                let line = format!(
                    "{{\"jsonrpc\":\"2.0\",\"id\":{id},\"method\":\"tools/call\",\"params\":{{\"name\":\"{tool}\",\"arguments\":{{}}}}}}\n"
                );
                self.input.write_all(line.as_bytes()).unwrap();
                self.input.flush().unwrap();
            }
        });
        n as f64 / start.elapsed().as_secs_f64()
    }

    fn stop(mut self) {
        drop(self.input);
        let _ = self.child.wait();
    }
}

/// The floor: a stdio JSON-RPC server that answers every request at once, with no tool behind
/// it (what any server must at least do: read a line, parse it, write a line).
fn reference_server() {
    let stdin = std::io::stdin();
    let mut out = std::io::stdout().lock();
    for line in stdin.lock().lines() {
        let Ok(line) = line else { break };
        let Ok(request) = serde_json::from_str::<Value>(&line) else { continue };
        let Some(id) = request.get("id") else { continue };
        let result = reference_result(request["method"].as_str());
        let mut answer = serde_json::to_vec(&json!({"jsonrpc": "2.0", "id": id, "result": result})).unwrap();
        answer.push(b'\n');
        if out.write_all(&answer).and_then(|()| out.flush()).is_err() {
            break;
        }
    }
}

/// The reference servers' fixed result for a request's method.
fn reference_result(method: Option<&str>) -> Value {
    match method {
        Some("initialize") => json!({
            "protocolVersion": "2025-06-18",
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "reference", "version": "0"}
        }),
        Some("tools/list") => json!({"tools": [{"name": "Noop", "inputSchema": {"type": "object"}}]}),
        _ => json!({"content": [{"type": "text", "text": "ok"}], "isError": false}),
    }
}

// ---- HTTP ----

/// The protocol version the clients ask for, and send with every request after `initialize`.
const PROTOCOL_VERSION: &str = "2025-06-18";

/// JSON-RPC ids, unique over every connection of a run: requests in flight on one session must
/// not share an id (the server matches answers to requests by it).
static NEXT_ID: AtomicU64 = AtomicU64::new(1);

/// A new token in a new file of this user's with mode 0600, as `--token-file` requires.
fn write_token(path: &Path) -> String {
    let mut random = [0u8; 32];
    std::fs::File::open("/dev/urandom").and_then(|mut f| f.read_exact(&mut random)).unwrap();
    let token = hex::encode(random);
    let mut file = std::fs::OpenOptions::new().write(true).create_new(true).mode(0o600).open(path).unwrap();
    writeln!(file, "{token}").unwrap();
    token
}

/// The three HTTP figures of each server, best of `repeats` runs, each beside the first
/// server's (the floor) with the difference.
fn http<const N: usize>(calls: usize, repeats: usize, token: &str, servers: [(&str, &dyn Fn() -> Command); N]) {
    let mut figures = Vec::new();
    for (label, command) in servers {
        let mut best: Option<HttpFigures> = None;
        for _ in 0..repeats {
            let server = HttpServer::start(command(), token);
            let (keep_alive, keep_alive_p90) = server.sequential(calls, Reuse::KeepAlive);
            let (per_call, per_call_p90) = server.sequential(calls, Reuse::NewConnection);
            let rate = server.in_flight(calls);
            server.stop();
            best = Some(match best {
                None => HttpFigures { keep_alive, keep_alive_p90, per_call, per_call_p90, rate },
                Some(b) => HttpFigures {
                    keep_alive: b.keep_alive.min(keep_alive),
                    keep_alive_p90: b.keep_alive_p90.min(keep_alive_p90),
                    per_call: b.per_call.min(per_call),
                    per_call_p90: b.per_call_p90.min(per_call_p90),
                    rate: b.rate.max(rate),
                },
            });
        }
        figures.push((label, best.unwrap()));
    }
    println!();
    println!("HTTP, {calls} calls of Noop, best of {repeats} runs per figure (the first column is the floor)");
    print!("{:<40}", "");
    for (label, _) in &figures {
        print!(" {label:>26}");
    }
    println!();
    type Row = (&'static str, fn(&HttpFigures) -> Duration);
    let rows: [Row; 4] = [
        ("keep-alive, sequential: median", |f| f.keep_alive),
        ("keep-alive, sequential: p90", |f| f.keep_alive_p90),
        ("new connection per call: median", |f| f.per_call),
        ("new connection per call: p90", |f| f.per_call_p90),
    ];
    for (row, get) in rows {
        print!("{row:<40}");
        for (_, f) in &figures {
            print!(" {:>23.1} µs", micros(get(f)));
        }
        println!();
    }
    print!("{:<40}", format!("{WINDOW} connections in flight"));
    for (_, f) in &figures {
        print!(" {:>17.0} calls/s", f.rate);
    }
    println!();
}

#[derive(Clone, Copy)]
struct HttpFigures {
    keep_alive: Duration,
    keep_alive_p90: Duration,
    per_call: Duration,
    per_call_p90: Duration,
    rate: f64,
}

#[derive(Clone, Copy)]
enum Reuse {
    /// One connection for every call.
    KeepAlive,
    /// A new connection for each call, closed after its answer.
    NewConnection,
}

/// An MCP server over HTTP, initialised: its process, and what every request must carry.
struct HttpServer {
    child: Child,
    endpoint: Endpoint,
}

impl HttpServer {
    /// Start `command` (which prints `… listening on http://HOST:PORT/mcp` on stderr), then
    /// `initialize`, `notifications/initialized` and one first call.
    fn start(command: Command, token: &str) -> HttpServer {
        HttpServer::try_start(command, token).unwrap_or_else(|e| panic!("{e}"))
    }

    /// As [`HttpServer::start`]; a server that exits before listening (an older build without
    /// one of the options, say) is an error with what it wrote on stderr.
    fn try_start(mut command: Command, token: &str) -> Result<HttpServer, String> {
        let mut child = command.stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::piped()).spawn().unwrap();
        let mut stderr = BufReader::new(child.stderr.take().unwrap());
        let mut line = String::new();
        let mut before = String::new();
        let addr = loop {
            line.clear();
            if stderr.read_line(&mut line).unwrap() == 0 {
                let _ = child.wait();
                return Err(format!("the server exited before listening: {}", before.trim()));
            }
            if let Some(rest) = line.trim().split("listening on http://").nth(1) {
                let authority = rest.strip_suffix("/mcp").unwrap_or(rest);
                break authority.parse::<SocketAddr>().unwrap();
            }
            before.push_str(&line);
        };
        // Whatever else it writes must not fill the pipe and stop it.
        std::thread::spawn(move || std::io::copy(&mut stderr, &mut std::io::sink()));
        let mut endpoint = Endpoint { addr, token: token.to_string(), session: None };
        let mut connection = Connection::open(&endpoint);
        let init = connection.request(
            &endpoint,
            "initialize",
            json!({"protocolVersion": PROTOCOL_VERSION, "capabilities": {}, "clientInfo": {"name": "bench", "version": "0"}}),
        );
        assert!(init.message.get("result").is_some(), "initialize failed: {}", init.message);
        endpoint.session = init.session;
        let body = serde_json::to_vec(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"})).unwrap();
        let answer = connection.post(&endpoint, &body, None);
        assert!(answer.status == 202 || answer.status == 200, "notifications/initialized: status {}", answer.status);
        // One call first: the tool's code is made ready at its first call.
        let first = connection.call_noop(&endpoint);
        assert_eq!(first["result"]["content"][0]["text"], "ok", "{first}");
        Ok(HttpServer { child, endpoint })
    }

    /// Median and 90th percentile of `n` round trips, one at a time.
    fn sequential(&self, n: usize, reuse: Reuse) -> (Duration, Duration) {
        let mut kept = Connection::open(&self.endpoint);
        let mut times = Vec::with_capacity(n);
        for _ in 0..n {
            let start = Instant::now();
            let answer = match reuse {
                Reuse::KeepAlive => kept.call_noop(&self.endpoint),
                Reuse::NewConnection => {
                    let mut fresh = Connection::open(&self.endpoint);
                    fresh.close = true;
                    fresh.call_noop(&self.endpoint)
                }
            };
            times.push(start.elapsed());
            assert_eq!(answer["result"]["content"][0]["text"], "ok", "{answer}");
        }
        times.sort();
        (times[n / 2], times[n * 9 / 10])
    }

    /// Calls per second with `WINDOW` keep-alive connections, each doing sequential calls in its
    /// own thread (connected before the clock starts).
    fn in_flight(&self, n: usize) -> f64 {
        let per_connection = n.div_ceil(WINDOW);
        let mut connections: Vec<_> = (0..WINDOW).map(|_| Connection::open(&self.endpoint)).collect();
        let ready = Barrier::new(WINDOW + 1);
        let endpoint = &self.endpoint;
        let mut start = Instant::now();
        std::thread::scope(|scope| {
            for connection in &mut connections {
                let ready = &ready;
                scope.spawn(move || {
                    ready.wait();
                    for _ in 0..per_connection {
                        let answer = connection.call_noop(endpoint);
                        assert_eq!(answer["result"]["content"][0]["text"], "ok", "{answer}");
                    }
                });
            }
            ready.wait();
            start = Instant::now();
        });
        (per_connection * WINDOW) as f64 / start.elapsed().as_secs_f64()
    }

    fn stop(mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// What every request to one server carries.
struct Endpoint {
    addr: SocketAddr,
    token: String,
    /// The `Mcp-Session-Id` its `initialize` answered with, if any.
    session: Option<String>,
}

/// One HTTP/1.1 connection: requests written whole in one write, answers read through a buffer.
struct Connection {
    stream: BufReader<TcpStream>,
    /// Ask the server to close the connection after its answer (`Connection: close`).
    close: bool,
}

/// An answer: its status, the session it names and the JSON-RPC message it carries.
struct Answer {
    status: u16,
    session: Option<String>,
    message: Value,
}

impl Connection {
    fn open(endpoint: &Endpoint) -> Connection {
        let stream = TcpStream::connect(endpoint.addr).unwrap();
        stream.set_nodelay(true).unwrap();
        Connection { stream: BufReader::new(stream), close: false }
    }

    fn call_noop(&mut self, endpoint: &Endpoint) -> Value {
        self.request(endpoint, "tools/call", json!({"name": "Noop", "arguments": {}})).message
    }

    /// POST a request and return the answer to it (skipping anything else in an event stream).
    fn request(&mut self, endpoint: &Endpoint, method: &str, params: Value) -> Answer {
        let id = NEXT_ID.fetch_add(1, Ordering::Relaxed);
        let body =
            serde_json::to_vec(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})).unwrap();
        let answer = self.post(endpoint, &body, Some(id));
        assert_eq!(answer.status, 200, "{method}: {}", answer.message);
        answer
    }

    /// POST `body` (a request with `id`, or a notification) to `/mcp`: the JSON-RPC message of
    /// the answer (in an event stream, the one with `id`), `Null` if the body is empty.
    fn post(&mut self, endpoint: &Endpoint, body: &[u8], id: Option<u64>) -> Answer {
        let mut request = format!(
            "POST /mcp HTTP/1.1\r\nHost: {}\r\nAuthorization: Bearer {}\r\nContent-Type: application/json\r\n\
             Accept: application/json, text/event-stream\r\nContent-Length: {}\r\n",
            endpoint.addr,
            endpoint.token,
            body.len()
        );
        if let Some(session) = &endpoint.session {
            request.push_str(&format!("Mcp-Session-Id: {session}\r\nMCP-Protocol-Version: {PROTOCOL_VERSION}\r\n"));
        }
        if self.close {
            request.push_str("Connection: close\r\n");
        }
        request.push_str("\r\n");
        let mut bytes = request.into_bytes();
        bytes.extend_from_slice(body);
        self.stream.get_mut().write_all(&bytes).unwrap();

        let head = read_head(&mut self.stream);
        let content = read_body(&mut self.stream, &head);
        let message = if content.is_empty() {
            Value::Null
        } else if head.event_stream {
            event_stream_message(&content, id)
        } else {
            serde_json::from_slice(&content).unwrap_or_else(|e| {
                panic!("status {}: not JSON ({e}): {}", head.status, String::from_utf8_lossy(&content))
            })
        };
        Answer { status: head.status, session: head.session, message }
    }
}

/// What the client needs of an HTTP message's head.
#[derive(Default)]
struct Head {
    status: u16,
    content_length: Option<usize>,
    chunked: bool,
    event_stream: bool,
    session: Option<String>,
    /// `Connection: close` (the reference server reads it from requests).
    close: bool,
}

/// The start line and headers of a message (a response's status; a request's start line is
/// only checked to be there). Panics at EOF.
fn read_head(stream: &mut impl BufRead) -> Head {
    try_read_head(stream).expect("the connection closed before an answer")
}

/// As [`read_head`], `None` at EOF before the start line.
fn try_read_head(stream: &mut impl BufRead) -> Option<Head> {
    let mut line = String::new();
    if stream.read_line(&mut line).ok()? == 0 {
        return None;
    }
    let mut head = Head::default();
    if line.starts_with("HTTP/") {
        head.status = line.split(' ').nth(1).and_then(|s| s.parse().ok()).expect("an HTTP status line");
    }
    loop {
        line.clear();
        assert!(stream.read_line(&mut line).ok()? > 0, "the connection closed inside a head");
        let line = line.trim_end();
        if line.is_empty() {
            return Some(head);
        }
        let Some((name, value)) = line.split_once(':') else { continue };
        let value = value.trim();
        match name.to_ascii_lowercase().as_str() {
            "content-length" => head.content_length = value.parse().ok(),
            "transfer-encoding" => head.chunked = value.to_ascii_lowercase().contains("chunked"),
            "content-type" => head.event_stream = value.starts_with("text/event-stream"),
            "mcp-session-id" => head.session = Some(value.to_string()),
            "connection" => head.close = value.eq_ignore_ascii_case("close"),
            _ => {}
        }
    }
}

/// A message's body: chunked, of `Content-Length`, or (neither) up to the end of the stream.
fn read_body(stream: &mut impl BufRead, head: &Head) -> Vec<u8> {
    let mut body = Vec::new();
    if head.chunked {
        let mut line = String::new();
        loop {
            line.clear();
            assert!(stream.read_line(&mut line).unwrap() > 0, "the connection closed inside a chunked body");
            let size = line.trim().split(';').next().unwrap();
            let size = usize::from_str_radix(size, 16).unwrap_or_else(|_| panic!("a chunk size: {line:?}"));
            if size == 0 {
                // Trailers, up to the empty line.
                loop {
                    line.clear();
                    if stream.read_line(&mut line).unwrap() == 0 || line.trim_end().is_empty() {
                        return body;
                    }
                }
            }
            let start = body.len();
            body.resize(start + size + 2, 0);
            stream.read_exact(&mut body[start..]).unwrap();
            assert_eq!(&body[start + size..], b"\r\n", "a chunk's end");
            body.truncate(start + size);
        }
    } else if let Some(length) = head.content_length {
        body.resize(length, 0);
        stream.read_exact(&mut body).unwrap();
    } else if head.status != 0 {
        stream.read_to_end(&mut body).unwrap();
    }
    body
}

/// The JSON-RPC message with `id` (or, without one, the first message) among the `data:` of
/// the events of a server-sent event stream; priming events with empty data are skipped.
fn event_stream_message(stream: &[u8], id: Option<u64>) -> Value {
    let text = std::str::from_utf8(stream).unwrap();
    let mut data = String::new();
    // A final empty line dispatches the last event even if the stream ended without one.
    for line in text.lines().chain([""]) {
        if let Some(value) = line.strip_prefix("data:") {
            if !data.is_empty() {
                data.push('\n');
            }
            data.push_str(value.strip_prefix(' ').unwrap_or(value));
        } else if line.is_empty() && !data.is_empty() {
            let message: Value = serde_json::from_str(&data).unwrap();
            if id.is_none_or(|id| message["id"].as_u64() == Some(id)) {
                return message;
            }
            data.clear();
        }
    }
    panic!("no answer with id {id:?} in the event stream: {text}")
}

/// The HTTP floor: an HTTP/1.1 server on 127.0.0.1 (a thread per connection, keep-alive) that
/// answers every POST at once with a JSON body, with no tool behind it and no token checked
/// (what any server must at least do: read a request, parse its JSON, write an answer).
fn reference_http_server() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    eprintln!("reference server: listening on http://{}/mcp", listener.local_addr().unwrap());
    for stream in listener.incoming() {
        let Ok(stream) = stream else { continue };
        std::thread::spawn(move || serve_reference_connection(stream));
    }
}

fn serve_reference_connection(stream: TcpStream) -> std::io::Result<()> {
    stream.set_nodelay(true)?;
    let mut stream = BufReader::new(stream);
    while let Some(mut head) = try_read_head(&mut stream) {
        // A request without a length has no body (it does not run to the end of the stream).
        head.content_length.get_or_insert(0);
        let body = read_body(&mut stream, &head);
        let close = if head.close { "Connection: close\r\n" } else { "" };
        let request: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
        let answer = match request.get("id") {
            Some(id) => {
                let result = reference_result(request["method"].as_str());
                let body = serde_json::to_vec(&json!({"jsonrpc": "2.0", "id": id, "result": result})).unwrap();
                let session = match request["method"].as_str() {
                    Some("initialize") => "Mcp-Session-Id: reference\r\n",
                    _ => "",
                };
                let mut answer = format!(
                    "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n{session}{close}Content-Length: {}\r\n\r\n",
                    body.len()
                )
                .into_bytes();
                answer.extend_from_slice(&body);
                answer
            }
            None => format!("HTTP/1.1 202 Accepted\r\n{close}Content-Length: 0\r\n\r\n").into_bytes(),
        };
        stream.get_mut().write_all(&answer)?;
        if head.close {
            break;
        }
    }
    Ok(())
}
