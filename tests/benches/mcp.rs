//! MCP round trips over stdio, measured the way a client meets them: a minimal JSON-RPC client
//! (no SDK, one line per message) against `toolhost mcp` serving the `Noop` test tool, and, in
//! the same run, against a trivial reference server (this program with `--reference-server`: it
//! answers each line at once, no tool at all), so every figure stands beside the floor of the
//! client, the pipes and the process.
//!
//! ```sh
//! cargo bench -p toolhost-tests --bench mcp            # CALLS=2000 REPEATS=3 by default
//! ```
//!
//! Sequential: one `tools/call` at a time, the median and 90th percentile of the round trips.
//! Pipelined: `WINDOW` (10) requests in flight, calls per second over all of them.

use serde_json::{Value, json};
use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

const WINDOW: usize = 10;

fn main() {
    if std::env::args().any(|a| a == "--reference-server") {
        reference_server();
        return;
    }
    let calls: usize = std::env::var("CALLS").ok().and_then(|v| v.parse().ok()).unwrap_or(2000);
    let repeats: usize = std::env::var("REPEATS").ok().and_then(|v| v.parse().ok()).unwrap_or(3);
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
        let mut c = Command::new(toolhost_tests::cli::binary());
        c.args(["mcp", "--no-default-tools", "--permission-mode", "bypass", "--tools"])
            .arg(&tools)
            .arg("--workspace")
            .arg(ws.path())
            .env("TOOLHOST_CACHE_DIR", cache.path().join("cache"));
        c
    };
    println!("stdio, {calls} calls of Noop, best of {repeats} runs per figure");
    let mut floor = None;
    for (label, command) in [("reference server", &reference as &dyn Fn() -> Command), ("toolhost mcp", &toolhost)] {
        let mut best: Option<(Duration, Duration, f64)> = None;
        for _ in 0..repeats {
            let mut server = Server::start(command());
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
        floor.get_or_insert(median);
    }
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
}

impl Server {
    fn start(mut command: Command) -> Server {
        let mut child = command.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::null()).spawn().unwrap();
        let input = child.stdin.take().unwrap();
        let output = BufReader::new(child.stdout.take().unwrap());
        let mut server = Server { child, input, output, next_id: 0 };
        let init = server.request(
            "initialize",
            json!({"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "bench", "version": "0"}}),
        );
        assert!(init.get("result").is_some(), "initialize failed: {init}");
        server.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        // One call first: the tool's code is made ready at its first call.
        let first = server.request("tools/call", json!({"name": "Noop", "arguments": {}}));
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
            let answer = self.request("tools/call", json!({"name": "Noop", "arguments": {}}));
            times.push(start.elapsed());
            assert_eq!(answer["result"]["content"][0]["text"], "ok", "{answer}");
        }
        times.sort();
        (times[n / 2], times[n * 9 / 10])
    }

    /// Calls per second with `WINDOW` requests in flight.
    fn pipelined(&mut self, n: usize) -> f64 {
        let (done_tx, done_rx) = mpsc::channel::<()>();
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
                    "{{\"jsonrpc\":\"2.0\",\"id\":{id},\"method\":\"tools/call\",\"params\":{{\"name\":\"Noop\",\"arguments\":{{}}}}}}\n"
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
        let result = match request["method"].as_str() {
            Some("initialize") => json!({
                "protocolVersion": "2025-06-18",
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "reference", "version": "0"}
            }),
            Some("tools/list") => json!({"tools": [{"name": "Noop", "inputSchema": {"type": "object"}}]}),
            _ => json!({"content": [{"type": "text", "text": "ok"}], "isError": false}),
        };
        let mut answer = serde_json::to_vec(&json!({"jsonrpc": "2.0", "id": id, "result": result})).unwrap();
        answer.push(b'\n');
        if out.write_all(&answer).and_then(|()| out.flush()).is_err() {
            break;
        }
    }
}
