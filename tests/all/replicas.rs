//! Three `toolhost mcp --http` replicas behind Debian's HAProxy on loopback, as a team serving
//! many agents would run them: session affinity on `Mcp-Session-Id` (learnt from the answer to
//! `initialize`), health checks on `/readyz` (a slow answer on a busy machine is not a failure:
//! `timeout check 5s`; two failures take a replica out). Many client sessions call a tool concurrently while
//! one replica is killed and then every replica is restarted in turn (SIGTERM drains). What must
//! hold: every call is answered exactly once or fails with an explicit error (never silently);
//! sessions on a surviving replica lose nothing; a session whose replica died gets "session not
//! found" or an HTTP error and succeeds after initialising again; a rolling restart fails no
//! call.

use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use toolhost_tests::cli::{binary, cache_dir, state_dir};
use toolhost_tests::{guests, skip, workspace};

/// Client sessions calling at once.
const SESSIONS: usize = 9;
/// How long each call sleeps in the tool.
const CALL_MS: u64 = 40;

/// A free port on loopback (bound then released).
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// Wait (up to 2 minutes) for `done`, failing with `what`.
fn wait_until(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(120);
    while !done() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

struct Replica {
    child: Child,
    port: u16,
}

impl Replica {
    /// A replica on `port`, sharing the token file, accepting the balancer's `Host`.
    fn start(ws: &Path, tools: &Path, token_file: &Path, port: u16, lb_port: u16) -> Replica {
        let mut child = Command::new(binary())
            .arg("--workspace")
            .arg(ws)
            .arg("--tools")
            .arg(tools)
            .args(["mcp", "--http", &format!("127.0.0.1:{port}"), "--token-file"])
            .arg(token_file)
            .args(["--allow-host", &format!("127.0.0.1:{lb_port}"), "--drain-grace-ms", "1000"])
            .current_dir(ws)
            .env("TOOLHOST_CACHE_DIR", cache_dir())
            .env("TOOLHOST_STATE_DIR", state_dir())
            .env_remove("TOOLHOST_LOG")
            .env_remove("TOOLHOST_MCP_TOKEN")
            .env_remove("TOOLHOST_MAX_CONCURRENCY")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn toolhost mcp --http");
        let mut stderr = BufReader::new(child.stderr.take().unwrap());
        let mut line = String::new();
        let port = loop {
            line.clear();
            assert!(stderr.read_line(&mut line).unwrap() > 0, "a replica exited at start");
            if let Some(url) = line.trim().strip_prefix("toolhost mcp: listening on http://127.0.0.1:") {
                break url.trim_end_matches("/mcp").parse().unwrap();
            }
        };
        // Keep the pipe drained.
        std::thread::spawn(move || for _ in stderr.lines() {});
        Replica { child, port }
    }

    fn ready(&self) -> bool {
        get(self.port, "/readyz").is_some_and(|(status, _, _)| status == 200)
    }
}

impl Drop for Replica {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

struct Balancer {
    child: Child,
}

impl Drop for Balancer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Balancer {
    fn start(dir: &Path, port: u16, replicas: &[u16]) -> Balancer {
        let servers: String = replicas
            .iter()
            .enumerate()
            .map(|(i, p)| format!("    server r{i} 127.0.0.1:{p} check inter 100ms fall 2 rise 2\n"))
            .collect();
        let config = format!(
            "global\n    maxconn 2000\n\
             defaults\n    mode http\n    timeout connect 2s\n    timeout client 60s\n    timeout server 60s\n\
             \n    timeout check 5s\n\
             \n    retries 3\n    option redispatch\n    retry-on conn-failure empty-response\n\
             frontend mcp\n    bind 127.0.0.1:{port}\n    default_backend toolhost\n\
             backend toolhost\n    balance roundrobin\n\
             \n    option httpchk GET /readyz\n    http-check expect status 200\n\
             \n    stick-table type string len 64 size 10k expire 30m\n\
             \n    stick store-response res.hdr(mcp-session-id)\n    stick match req.hdr(mcp-session-id)\n\
             \n    http-response set-header X-Replica %s\n{servers}"
        );
        let file = dir.join("haproxy.cfg");
        std::fs::write(&file, config).unwrap();
        let child = Command::new("haproxy")
            .arg("-db")
            .arg("-f")
            .arg(&file)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("haproxy");
        Balancer { child }
    }
}

/// One HTTP exchange on a fresh connection: status, lower-cased headers, body (chunked
/// decoded). `None` when the connection fails.
fn exchange(port: u16, request: &str) -> Option<(u16, BTreeMap<String, String>, String)> {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).ok()?;
    stream.set_read_timeout(Some(Duration::from_secs(60))).ok()?;
    stream.write_all(request.as_bytes()).ok()?;
    let mut raw = Vec::new();
    stream.read_to_end(&mut raw).ok()?;
    let text = String::from_utf8_lossy(&raw).into_owned();
    let (head, body) = text.split_once("\r\n\r\n")?;
    let mut lines = head.lines();
    let status = lines.next()?.split(' ').nth(1)?.parse().ok()?;
    let headers: BTreeMap<String, String> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_string()))
        .collect();
    let body = if headers.get("transfer-encoding").is_some_and(|v| v.contains("chunked")) {
        let mut out = String::new();
        let mut rest = body;
        while let Some((size, after)) = rest.split_once("\r\n") {
            let Ok(size) = usize::from_str_radix(size.trim(), 16) else { break };
            if size == 0 || after.len() < size {
                break;
            }
            out.push_str(&after[..size]);
            rest = after[size..].strip_prefix("\r\n").unwrap_or(&after[size..]);
        }
        out
    } else {
        body.to_string()
    };
    Some((status, headers, body))
}

fn get(port: u16, path: &str) -> Option<(u16, BTreeMap<String, String>, String)> {
    exchange(port, &format!("GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n\r\n"))
}

/// A client of the balancer: one MCP session at a time.
struct Client {
    lb: u16,
    token: String,
    session: String,
    replica: String,
    /// How long each call sleeps in the tool.
    ms: u64,
}

/// How one call ended.
enum Answer {
    /// Its result, from this replica.
    Result(Value, String),
    /// 404: the session is unknown where the call landed (its replica is gone).
    SessionGone,
    /// Any other failure, stated: an HTTP error status, or a broken connection.
    Failed(String),
}

impl Client {
    fn post(&self, session: Option<&str>, body: &str) -> Option<(u16, BTreeMap<String, String>, String)> {
        let mut request = format!(
            "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nAuthorization: Bearer {}\r\nContent-Type: application/json\r\n\
             Accept: application/json, text/event-stream\r\nMCP-Protocol-Version: 2025-06-18\r\nContent-Length: {}\r\n\
             Connection: close\r\n",
            self.lb,
            self.token,
            body.len()
        );
        if let Some(session) = session {
            request.push_str(&format!("Mcp-Session-Id: {session}\r\n"));
        }
        request.push_str("\r\n");
        request.push_str(body);
        exchange(self.lb, &request)
    }

    /// `initialize` and `notifications/initialized`: a new session, and where it landed.
    fn initialize(&mut self) -> Result<(), String> {
        let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "lb", "version": "0"}}});
        let (status, headers, body) = self.post(None, &init.to_string()).ok_or("initialize: no connection")?;
        if status != 200 {
            return Err(format!("initialize: {status} {body}"));
        }
        self.session = headers.get("mcp-session-id").cloned().ok_or("initialize: no Mcp-Session-Id")?;
        self.replica = headers.get("x-replica").cloned().unwrap_or_default();
        let note = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;
        match self.post(Some(&self.session), note) {
            Some((202, _, _)) => Ok(()),
            other => Err(format!("initialized: {other:?}")),
        }
    }

    fn call(&self, id: u64) -> Answer {
        let body = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {"name": "Sleep", "arguments": {"ms": self.ms}}});
        let Some((status, headers, text)) = self.post(Some(&self.session), &body.to_string()) else {
            return Answer::Failed("the connection failed".into());
        };
        match status {
            200 => {}
            404 => return Answer::SessionGone,
            other => return Answer::Failed(format!("HTTP {other}: {text}")),
        }
        let messages: Vec<Value> = text
            .lines()
            .map(|l| l.strip_prefix("data:").unwrap_or(l).trim())
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .filter(|m| m["id"] == id)
            .collect();
        match messages.as_slice() {
            [one] => Answer::Result(one.clone(), headers.get("x-replica").cloned().unwrap_or_default()),
            more => Answer::Failed(format!("{} answers to call {id}: {text}", more.len())),
        }
    }
}

/// What one session saw.
#[derive(Default, Debug)]
struct Tally {
    /// Calls answered with their result, by replica.
    answered: BTreeMap<String, u64>,
    /// Explicit failures (each retried after initialising again).
    failed: Vec<String>,
    /// Times the session was found gone and was initialised again.
    reinitialised: u64,
    /// The replicas the session was on, in order.
    replicas: Vec<String>,
}

/// Call until `stop`, each call to completion: a failure or a gone session re-initialises and
/// the same call is sent again (the tool is idempotent), so every call ends answered once.
fn run_session(mut client: Client, stop: Arc<AtomicBool>, tally: Arc<Mutex<Tally>>, first_id: u64) {
    let mut id = first_id;
    while !stop.load(Ordering::Acquire) {
        id += 1;
        loop {
            match client.call(id) {
                Answer::Result(message, replica) => {
                    assert_eq!(message["result"]["isError"], false, "call {id}: {message}");
                    *tally.lock().unwrap().answered.entry(replica).or_default() += 1;
                    break;
                }
                Answer::SessionGone => tally.lock().unwrap().reinitialised += 1,
                Answer::Failed(why) => tally.lock().unwrap().failed.push(why),
            }
            // A new session (it lands on a live replica), then the same call again.
            let deadline = Instant::now() + Duration::from_secs(60);
            while let Err(why) = client.initialize() {
                assert!(Instant::now() < deadline, "cannot initialise again: {why}");
                std::thread::sleep(Duration::from_millis(50));
            }
            tally.lock().unwrap().replicas.push(client.replica.clone());
        }
    }
}

struct Cluster {
    ws: tempfile::TempDir,
    tools: tempfile::TempDir,
    token_file: PathBuf,
    lb_port: u16,
    replicas: Vec<Replica>,
    _balancer: Balancer,
}

impl Cluster {
    fn start(n: usize) -> Cluster {
        let ws = workspace();
        let tools = tempfile::tempdir().unwrap();
        std::fs::write(tools.path().join("sleep.wasm"), guests::SLEEP).unwrap();
        let token_file = ws.path().join("mcp.token");
        let lb_port = free_port();
        let first = Replica::start(ws.path(), tools.path(), &token_file, 0, lb_port);
        let mut replicas = vec![first];
        for _ in 1..n {
            replicas.push(Replica::start(ws.path(), tools.path(), &token_file, 0, lb_port));
        }
        let ports: Vec<u16> = replicas.iter().map(|r| r.port).collect();
        let balancer = Balancer::start(ws.path(), lb_port, &ports);
        let cluster = Cluster { ws, tools, token_file, lb_port, replicas, _balancer: balancer };
        wait_until("the balancer to list every replica up", || {
            (0..n * 2).all(|_| cluster.client().is_ok_and(|c| !c.replica.is_empty()))
        });
        cluster
    }

    fn client(&self) -> Result<Client, String> {
        let token = std::fs::read_to_string(&self.token_file).map_err(|e| e.to_string())?.trim().to_string();
        let mut client =
            Client { lb: self.lb_port, token, session: String::new(), replica: String::new(), ms: CALL_MS };
        client.initialize()?;
        Ok(client)
    }
}

#[test]
fn replicas_behind_haproxy_survive_a_kill_and_a_rolling_restart() {
    if Command::new("haproxy").arg("-v").output().is_err() {
        return skip("haproxy is not installed (Debian: apt-get install haproxy)");
    }
    let mut cluster = Cluster::start(3);
    let stop = Arc::new(AtomicBool::new(false));
    let mut sessions = Vec::new();
    for i in 0..SESSIONS {
        let client = cluster.client().expect("a session");
        let tally = Arc::new(Mutex::new(Tally { replicas: vec![client.replica.clone()], ..Tally::default() }));
        let (stop, t) = (stop.clone(), tally.clone());
        let thread = std::thread::spawn(move || run_session(client, stop, t, (i as u64) << 32));
        sessions.push((tally, thread));
    }
    let on = |name: &str| sessions.iter().filter(|(t, _)| t.lock().unwrap().replicas[0] == name).count();
    assert!((0..3).all(|i| on(&format!("r{i}")) > 0), "round robin spreads {SESSIONS} sessions over all three");
    let answered = |sessions: &[(Arc<Mutex<Tally>>, _)]| -> u64 {
        sessions.iter().map(|(t, _)| t.lock().unwrap().answered.values().sum::<u64>()).sum()
    };
    wait_until("every session to be answered a few times", || {
        sessions.iter().all(|(t, _)| t.lock().unwrap().answered.values().sum::<u64>() >= 3)
    });

    // Kill r1 outright, mid-run.
    let killed = cluster.replicas[1].child.id().to_string();
    assert!(Command::new("kill").args(["-KILL", &killed]).status().unwrap().success());
    let _ = cluster.replicas[1].child.wait();
    let killed_at = Instant::now();
    let at_kill = answered(&sessions);
    wait_until("every session of the killed replica to be answered elsewhere", || {
        sessions.iter().all(|(t, _)| {
            let t = t.lock().unwrap();
            t.replicas[0] != "r1" || t.replicas.len() >= 2 && t.answered.keys().any(|r| r != "r1")
        })
    });
    eprintln!(
        "failover: every session of the killed replica answered again {} ms after the kill",
        killed_at.elapsed().as_millis()
    );
    wait_until("calls to go on after the kill", || answered(&sessions) >= at_kill + 3 * SESSIONS as u64);
    for (tally, _) in &sessions {
        let t = tally.lock().unwrap();
        if t.replicas[0] != "r1" {
            assert!(
                t.failed.is_empty() && t.reinitialised == 0,
                "a session on a surviving replica lost something: {t:?}"
            );
            assert_eq!(t.replicas.len(), 1, "it stayed on its replica: {t:?}");
        } else {
            assert!(t.replicas.len() >= 2, "a session on the killed replica moved: {t:?}");
            assert!(t.replicas[1..].iter().all(|r| r != "r1"), "{t:?}");
        }
    }

    // Bring r1 back, then restart every replica in turn: SIGTERM drains, a new one takes the port.
    let (ws, tools, token, lb) =
        (cluster.ws.path().to_owned(), cluster.tools.path().to_owned(), cluster.token_file.clone(), cluster.lb_port);
    let port = cluster.replicas[1].port;
    cluster.replicas[1] = Replica::start(&ws, &tools, &token, port, lb);
    wait_until("r1 to be ready again", || cluster.replicas[1].ready());
    let failed_before: usize = sessions.iter().map(|(t, _)| t.lock().unwrap().failed.len()).sum();
    for i in 0..3 {
        let replica = &mut cluster.replicas[i];
        let pid = replica.child.id().to_string();
        assert!(Command::new("kill").args(["-TERM", &pid]).status().unwrap().success());
        let status = replica.child.wait().unwrap();
        assert!(status.success(), "a draining replica exits 0: {status:?}");
        let port = replica.port;
        cluster.replicas[i] = Replica::start(&ws, &tools, &token, port, lb);
        wait_until("the restarted replica to be ready", || cluster.replicas[i].ready());
        let before = answered(&sessions);
        wait_until("calls to go on after a restart", || answered(&sessions) >= before + SESSIONS as u64);
    }
    stop.store(true, Ordering::Release);
    let mut failed_after = 0;
    let mut total = 0;
    for (tally, thread) in sessions {
        thread.join().unwrap();
        let t = tally.lock().unwrap();
        failed_after += t.failed.len();
        eprintln!("session: {t:?}");
        total += t.answered.values().sum::<u64>();
    }
    assert_eq!(failed_after, failed_before, "the rolling restart failed calls");
    eprintln!("{total} calls answered by 3 replicas through a kill and a rolling restart");
}

/// Throughput through the balancer with 1 and with 3 replicas (`SESSIONS` client sessions
/// calling a tool that returns at once, for 5 s each). A measurement, not a test: run it with
/// `cargo test -p toolhost-tests --test all -- --ignored replicas_throughput --nocapture`.
#[test]
#[ignore = "a measurement: run by hand (see BENCHMARKS.md)"]
fn replicas_throughput() {
    for n in [1, 3] {
        let cluster = Cluster::start(n);
        let stop = Arc::new(AtomicBool::new(false));
        let tallies: Vec<_> = (0..SESSIONS)
            .map(|i| {
                let client = Client { ms: 0, ..cluster.client().expect("a session") };
                let tally = Arc::new(Mutex::new(Tally::default()));
                let (stop, t) = (stop.clone(), tally.clone());
                (tally, std::thread::spawn(move || run_session(client, stop, t, (i as u64) << 32)))
            })
            .collect();
        let started = Instant::now();
        std::thread::sleep(Duration::from_secs(5));
        stop.store(true, Ordering::Release);
        let mut calls = 0;
        for (tally, thread) in tallies {
            thread.join().unwrap();
            calls += tally.lock().unwrap().answered.values().sum::<u64>();
        }
        let secs = started.elapsed().as_secs_f64();
        eprintln!(
            "{n} replica(s), {SESSIONS} sessions: {calls} calls in {secs:.1} s = {:.0} calls/s",
            calls as f64 / secs
        );
    }
}
