//! The connection bounds of `toolhost mcp --http`: a peer over its share of connections is
//! closed at once while others are served, a connection that does not send a request's head in
//! time is closed, so is one idle too long, and nothing in flight is cut. The limits are made
//! small through their environment variables so that each test is cheap; assertions are on
//! what happens (closed or answered), with generous bounds, never on how fast.

use super::{Fixture, Http};
use serde_json::json;
use std::io::{ErrorKind, Read as _, Write as _};
use std::net::TcpStream;
use std::time::{Duration, Instant};

/// A request head without its last empty line: the server waits for the rest.
const HALF_HEAD: &[u8] = b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n";

/// The longest wait for a connection the server should close (far beyond the timeouts used).
const CLOSE_WITHIN: Duration = Duration::from_secs(60);

/// `toolhost mcp --http 127.0.0.1:0` with these connection bounds.
fn serve(fx: &Fixture, env: &[(&str, &str)]) -> Http {
    let mut command = fx.command(&["--http", "127.0.0.1:0"]);
    command.envs(env.iter().copied());
    Http::spawn_with(command)
}

/// A connection to `addr` from the local address `from`: another peer, on loopback (Linux
/// routes all of 127.0.0.0/8 to the loopback interface).
fn connect_from(from: &str, addr: &str) -> TcpStream {
    let rt = tokio::runtime::Builder::new_current_thread().enable_io().build().unwrap();
    let stream = rt.block_on(async {
        let socket = tokio::net::TcpSocket::new_v4().unwrap();
        socket.bind(format!("{from}:0").parse().unwrap()).unwrap();
        socket.connect(addr.parse().unwrap()).await.unwrap().into_std().unwrap()
    });
    stream.set_nonblocking(false).unwrap();
    stream
}

/// Whether the server closes `stream` within `wait` (whatever it sends first, e.g. a 503).
fn closed_within(stream: &mut TcpStream, wait: Duration) -> bool {
    let deadline = Instant::now() + wait;
    let mut buf = [0u8; 1024];
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return false;
        }
        stream.set_read_timeout(Some(left)).unwrap();
        match stream.read(&mut buf) {
            Ok(0) => return true,
            Ok(_) => {}
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => return false,
            Err(_) => return true,
        }
    }
}

/// A response's head (and its body, by `Content-Length`) read from a kept-alive connection.
fn read_response(stream: &mut TcpStream) -> String {
    stream.set_read_timeout(Some(CLOSE_WITHIN)).unwrap();
    let mut got = Vec::new();
    let mut byte = [0u8; 1];
    while !got.ends_with(b"\r\n\r\n") {
        assert_eq!(stream.read(&mut byte).unwrap(), 1, "closed mid-head: {}", String::from_utf8_lossy(&got));
        got.push(byte[0]);
    }
    let head = String::from_utf8_lossy(&got).into_owned();
    let length = head
        .lines()
        .find_map(|l| l.split_once(':').filter(|(k, _)| k.eq_ignore_ascii_case("content-length")))
        .map_or(0, |(_, v)| v.trim().parse::<usize>().unwrap());
    let mut body = vec![0u8; length];
    stream.read_exact(&mut body).unwrap();
    head + &String::from_utf8_lossy(&body)
}

/// The value of the metric line starting with `name ` (labels included), if shown.
fn metric(http: &Http, name: &str) -> Option<u64> {
    let bearer = format!("Bearer {}", http.token.as_deref().unwrap());
    let (status, metrics) = http.get("/metrics", &[("Authorization", &bearer)]);
    assert_eq!(status, 200, "{metrics}");
    metrics.lines().find_map(|l| l.strip_prefix(name)?.strip_prefix(' ')?.parse().ok())
}

/// Wait (up to a minute) for the metric `name` to read `value`.
fn wait_for_metric(http: &Http, name: &str, value: u64) {
    let deadline = Instant::now() + CLOSE_WITHIN;
    while metric(http, name) != Some(value) {
        assert!(Instant::now() < deadline, "{name} never reached {value}: {:?}", metric(http, name));
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Half-sent heads from one address fill that peer's share; the next ones from it are closed at
/// once (and counted), while another address still gets `/readyz` and `/metrics` answered.
#[test]
fn a_peer_over_its_connection_limit_is_closed_at_once_and_other_peers_are_served() {
    let fx = Fixture::new();
    let http =
        serve(&fx, &[("TOOLHOST_MCP_MAX_CONNECTIONS_PER_PEER", "4"), ("TOOLHOST_MCP_HEADER_TIMEOUT_MS", "600000")]);
    let mut held: Vec<TcpStream> = (0..12)
        .map(|_| {
            let mut stream = connect_from("127.0.0.2", &http.addr);
            stream.write_all(HALF_HEAD).unwrap();
            stream
        })
        .collect();
    wait_for_metric(&http, "toolhost_connections_refused_total{limit=\"peer\"}", 8);
    let (status, response) = http.get("/readyz", &[]);
    assert_eq!(status, 200, "{response}");
    assert!(response.contains("\"ready\":true"), "{response}");
    // The eight over the limit are closed; the four let in still wait for their heads.
    let closed = std::thread::scope(|s| {
        let waits: Vec<_> =
            held.iter_mut().map(|c| s.spawn(move || closed_within(c, Duration::from_secs(5)))).collect();
        waits.into_iter().map(|w| w.join().unwrap()).filter(|&closed| closed).count()
    });
    assert_eq!(closed, 8);
}

/// A connection that sends nothing, one that sends half a head, and a kept-alive one that
/// starts a second request's head after its first answer and stops: each is closed after the
/// header timeout, though the idle timeout is ten minutes. A call longer than the header
/// timeout is answered.
#[test]
fn a_connection_that_does_not_send_a_whole_request_head_in_time_is_closed() {
    let fx = Fixture::new();
    let http = serve(&fx, &[("TOOLHOST_MCP_HEADER_TIMEOUT_MS", "2000"), ("TOOLHOST_MCP_IDLE_TIMEOUT_MS", "600000")]);
    let mut silent = TcpStream::connect(&http.addr).unwrap();
    let mut half = TcpStream::connect(&http.addr).unwrap();
    half.write_all(HALF_HEAD).unwrap();
    let mut kept = TcpStream::connect(&http.addr).unwrap();
    kept.write_all(format!("GET /healthz HTTP/1.1\r\nHost: {}\r\n\r\n", http.addr).as_bytes()).unwrap();
    let response = read_response(&mut kept);
    assert!(response.starts_with("HTTP/1.1 200") && response.ends_with("\r\n\r\nok\n"), "{response}");
    kept.write_all(HALF_HEAD).unwrap();
    for (name, stream) in [("silent", &mut silent), ("half", &mut half), ("kept", &mut kept)] {
        assert!(closed_within(stream, CLOSE_WITHIN), "the {name} connection is still open");
    }
    wait_for_metric(&http, "toolhost_connections_timed_out_total{wait=\"head\"}", 3);

    let session = http.open_session();
    let response = http.call(&session, 2, "Sleep", json!({"ms": 3000}));
    assert_eq!(response["result"]["isError"], false, "{response}");
}

/// A kept-alive connection with nothing in flight is closed after the idle timeout; a call
/// and a session's standalone `GET` event stream that last longer are not cut.
#[test]
fn an_idle_connection_is_closed_but_a_request_in_flight_is_not() {
    let fx = Fixture::new();
    let http = serve(&fx, &[("TOOLHOST_MCP_HEADER_TIMEOUT_MS", "2000"), ("TOOLHOST_MCP_IDLE_TIMEOUT_MS", "2000")]);
    let mut idle = TcpStream::connect(&http.addr).unwrap();
    idle.write_all(format!("GET /healthz HTTP/1.1\r\nHost: {}\r\n\r\n", http.addr).as_bytes()).unwrap();
    read_response(&mut idle);
    assert!(closed_within(&mut idle, CLOSE_WITHIN), "the idle connection is still open");
    wait_for_metric(&http, "toolhost_connections_timed_out_total{wait=\"idle\"}", 1);

    let session = http.open_session();
    let mut events = TcpStream::connect(&http.addr).unwrap();
    let token = http.token.as_deref().unwrap();
    let request = format!(
        "GET /mcp HTTP/1.1\r\nHost: {}\r\nAuthorization: Bearer {token}\r\nAccept: text/event-stream\r\n\
         Mcp-Session-Id: {session}\r\nMCP-Protocol-Version: 2025-06-18\r\n\r\n",
        http.addr
    );
    events.write_all(request.as_bytes()).unwrap();
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    events.set_read_timeout(Some(CLOSE_WITHIN)).unwrap();
    while !head.ends_with(b"\r\n\r\n") {
        assert_eq!(events.read(&mut byte).unwrap(), 1, "{}", String::from_utf8_lossy(&head));
        head.push(byte[0]);
    }
    assert!(head.starts_with(b"HTTP/1.1 200"), "{}", String::from_utf8_lossy(&head));

    // Both outlast the idle timeout.
    let response = http.call(&session, 2, "Sleep", json!({"ms": 4000}));
    assert_eq!(response["result"]["isError"], false, "{response}");
    assert!(!closed_within(&mut events, Duration::from_secs(1)), "the event stream was cut");
}
