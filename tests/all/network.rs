//! Network as a capability, against real servers on loopback started by each test: a call
//! reaches exactly what its `net` grant names. Other ports, other hosts, IP literals, names
//! that were not granted (refused before any lookup) and redirects to other hosts are refused
//! with the WASI error `access-denied`, and the result names the refused host; without a grant
//! there is no network at all. `*` and names never reach loopback or private addresses (DNS
//! rebinding, metadata services): only a literal grant, `localhost` by name, or
//! `allow_private_network` does.

use serde_json::{Value, json};
use toolhost::{OutcomeKind, Runtime, Session, ToolResult, ToolSource};
use toolhost_tests::server::{Server, UdpEcho};
use toolhost_tests::{call, config, guests, runtime, workspace};

/// A runtime with the Net guest granted `net` (no `[tools.Net]` entry at all for `None`).
async fn net_runtime(ws: &std::path::Path, net: Option<&[String]>) -> Runtime {
    net_runtime_with(ws, net, "").await
}

/// [`net_runtime`] with `extra` lines in `[tools.Net]`.
async fn net_runtime_with(ws: &std::path::Path, net: Option<&[String]>, extra: &str) -> Runtime {
    let toml = match net {
        Some(net) => format!("[tools.Net]\ngrant = {{ net = {} }}\n{extra}\n", serde_json::to_string(net).unwrap()),
        None => String::new(),
    };
    runtime(ws, config(&toml), vec![ToolSource::bytes("net.wasm", guests::NET)]).await
}

async fn net(rt: &Runtime, input: Value) -> ToolResult {
    call(rt, &Session::new(), "Net", input).await
}

/// The text of a successful result.
pub(crate) fn ok(result: &ToolResult) -> String {
    assert!(!result.is_error, "expected success, got {result:?}");
    result.text()
}

/// Refused by the sandbox with `access-denied`, the result naming what was refused.
fn denied(result: &ToolResult, refused: &str) {
    refused_with(result, "access-denied", refused);
}

/// Refused by the sandbox with the WASI error `code` (as the guest spells it), the result
/// naming what was refused.
pub(crate) fn refused_with(result: &ToolResult, code: &str, refused: &str) {
    assert!(result.is_error, "expected a refusal, got {result:?}");
    assert_eq!(result.outcome, OutcomeKind::Denied, "{result:?}");
    let text = result.text();
    assert!(text.contains(code), "not the sandbox's refusal ({code}): {text}");
    assert!(text.contains(&format!("refused network access to {refused}")), "the refused host is not named: {text}");
}

/// Refused by the sandbox with the WASI error `code` because `address` lies in `range` and
/// only `*` or a name covered it; the result says so and how to allow it (`literal`, or
/// `allow_private_network`).
pub(crate) fn out_of_range(result: &ToolResult, code: &str, address: &str, range: &str, literal: &str) {
    assert!(result.is_error, "expected a refusal, got {result:?}");
    assert_eq!(result.outcome, OutcomeKind::Denied, "{result:?}");
    let text = result.text();
    assert!(text.contains(code), "not the sandbox's refusal ({code}): {text}");
    for want in [
        format!("net: {address} is {range};"),
        "a grant of \"*\" or of a name never reaches loopback, private, link-local or other non-public addresses"
            .to_string(),
        format!("grant the address literally (net = [\"{literal}\"])"),
        "set [tools.Net] allow_private_network = true".to_string(),
    ] {
        assert!(text.contains(&want), "{want:?} missing from: {text}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn star_never_reaches_loopback_by_address_or_by_name() {
    let ws = workspace();
    let server = Server::greeter();
    let rt = net_runtime(ws.path(), Some(&["*".into()])).await;
    let literal = format!("127.0.0.1:{}", server.port);
    // `*` does not name 127.0.0.1 literally.
    let r = net(&rt, json!({"op": "tcp_connect", "host": "127.0.0.1", "port": server.port})).await;
    out_of_range(&r, "access-denied", "127.0.0.1", "a loopback address", &literal);
    // Nor does it reach loopback through a name that resolves there (DNS rebinding): the
    // lookup is allowed, the connection is not.
    let r = net(&rt, json!({"op": "tcp_connect", "host": "localhost", "port": server.port})).await;
    out_of_range(&r, "access-denied", "127.0.0.1 (resolved from localhost)", "a loopback address", &literal);
    assert!(r.text().contains(&format!("grant `localhost` by name (net = [\"localhost:{}\"])", server.port)));
    // The raw-socket HTTP client alike.
    let url = format!("http://localhost:{}/", server.port);
    let r = net(&rt, json!({"op": "http_get", "url": url})).await;
    out_of_range(&r, "access-denied", "127.0.0.1 (resolved from localhost)", "a loopback address", &literal);
    assert_eq!(server.hits(), 0, "a refused connection reached the server");
}

#[tokio::test(flavor = "multi_thread")]
async fn star_never_sends_udp_to_loopback() {
    let ws = workspace();
    let echo = UdpEcho::start();
    let rt = net_runtime(ws.path(), Some(&["*".into()])).await;
    let literal = format!("127.0.0.1:{}", echo.port);
    let r = net(&rt, json!({"op": "udp_echo", "host": "127.0.0.1", "port": echo.port})).await;
    out_of_range(&r, "access-denied", "127.0.0.1", "a loopback address", &literal);
    assert!(r.text().contains("udp send to"), "{}", r.text());
    let r = net(&rt, json!({"op": "udp_echo", "host": "localhost", "port": echo.port})).await;
    out_of_range(&r, "access-denied", "127.0.0.1 (resolved from localhost)", "a loopback address", &literal);
    assert_eq!(echo.hits(), 0, "a refused datagram was sent");
}

#[tokio::test(flavor = "multi_thread")]
async fn allow_private_network_lets_star_reach_loopback() {
    let ws = workspace();
    let (server, echo) = (Server::greeter(), UdpEcho::start());
    let rt = net_runtime_with(ws.path(), Some(&["*".into()]), "allow_private_network = true").await;
    for host in ["127.0.0.1", "localhost"] {
        let r = net(&rt, json!({"op": "tcp_connect", "host": host, "port": server.port})).await;
        assert_eq!(ok(&r), format!("connected; read: hello from {}", server.port));
        // `*` covers every port, so the server's first answer, from its second port, is heard.
        let r = net(&rt, json!({"op": "udp_echo", "host": host, "port": echo.port})).await;
        assert_eq!(ok(&r), format!("reply from 127.0.0.1:{0}: spoofed from {0}", echo.spoof_port));
    }
    assert_eq!((server.hits(), echo.hits()), (2, 2));
}

/// This machine's host name, if it resolves only to addresses that are not public (as a
/// machine's own name does, through /etc/hosts: 127.0.1.1, 127.0.0.1 or a private address).
fn local_host_name() -> Option<String> {
    use std::net::ToSocketAddrs;
    let name = std::fs::read_to_string("/proc/sys/kernel/hostname").ok()?.trim().to_ascii_lowercase();
    let addrs: Vec<_> = (name.as_str(), 0).to_socket_addrs().ok()?.collect();
    let local = !addrs.is_empty() && addrs.iter().all(|a| toolhost::policy::IpRange::of(a.ip()).is_some());
    (local && name != "localhost" && !name.is_empty()).then_some(name)
}

#[tokio::test(flavor = "multi_thread")]
async fn a_granted_name_that_resolves_to_a_local_address_is_refused() {
    let Some(name) = local_host_name() else {
        toolhost_tests::skip("this machine's host name does not resolve to a local address");
        return;
    };
    let ws = workspace();
    let server = Server::greeter();
    let grant = [format!("{name}:{}", server.port)];
    let rt = net_runtime(ws.path(), Some(&grant)).await;
    let r = net(&rt, json!({"op": "tcp_connect", "host": name, "port": server.port})).await;
    assert_eq!(r.outcome, OutcomeKind::Denied, "{r:?}");
    let text = r.text();
    assert!(text.contains(&format!(" (resolved from {name}) is a ")), "{text}");
    assert!(text.contains("a grant of \"*\" or of a name never reaches"), "{text}");
    assert!(text.contains("set [tools.Net] allow_private_network = true"), "{text}");
    assert_eq!(server.hits(), 0);
}

#[tokio::test(flavor = "multi_thread")]
async fn granted_address_and_port_connect() {
    let ws = workspace();
    let server = Server::greeter();
    let rt = net_runtime(ws.path(), Some(&[format!("127.0.0.1:{}", server.port)])).await;
    let r = net(&rt, json!({"op": "tcp_connect", "host": "127.0.0.1", "port": server.port})).await;
    assert_eq!(ok(&r), format!("connected; read: hello from {}", server.port));
}

#[tokio::test(flavor = "multi_thread")]
async fn other_port_is_refused() {
    let ws = workspace();
    let (granted, other) = (Server::greeter(), Server::greeter());
    let rt = net_runtime(ws.path(), Some(&[format!("127.0.0.1:{}", granted.port)])).await;
    let r = net(&rt, json!({"op": "tcp_connect", "host": "127.0.0.1", "port": other.port})).await;
    denied(&r, &format!("127.0.0.1:{}", other.port));
    assert!(r.text().contains(&format!("net = [\"127.0.0.1:{}\"]", other.port)), "no grant suggested: {}", r.text());
    assert_eq!(other.hits(), 0, "the refused server was reached");
}

#[tokio::test(flavor = "multi_thread")]
async fn other_address_is_refused() {
    let ws = workspace();
    let server = Server::greeter();
    let rt = net_runtime(ws.path(), Some(&[format!("127.0.0.2:{}", server.port)])).await;
    let r = net(&rt, json!({"op": "tcp_connect", "host": "127.0.0.1", "port": server.port})).await;
    denied(&r, &format!("127.0.0.1:{}", server.port));
    assert_eq!(server.hits(), 0);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_granted_name_does_not_grant_its_address_literally() {
    let ws = workspace();
    let server = Server::greeter();
    let rt = net_runtime(ws.path(), Some(&[format!("localhost:{}", server.port)])).await;
    // The IP literal was never looked up through a granted name: refused.
    let r = net(&rt, json!({"op": "tcp_connect", "host": "127.0.0.1", "port": server.port})).await;
    denied(&r, &format!("127.0.0.1:{}", server.port));
    assert_eq!(server.hits(), 0);
    // Through the granted name, the same address is reachable (the lookup pins it).
    let r = net(&rt, json!({"op": "tcp_connect", "host": "localhost", "port": server.port})).await;
    assert_eq!(ok(&r), format!("connected; read: hello from {}", server.port));
    // And the lookup does not open the address's other ports.
    let other = Server::greeter();
    let r = net(&rt, json!({"op": "tcp_connect", "host": "localhost", "port": other.port})).await;
    denied(&r, &format!("localhost:{} (127.0.0.1:{})", other.port, other.port));
    assert_eq!(other.hits(), 0);
}

#[tokio::test(flavor = "multi_thread")]
async fn lookup_of_a_name_not_granted_is_refused_before_resolving() {
    let ws = workspace();
    let rt = net_runtime(ws.path(), Some(&["localhost:8080".into()])).await;
    let r = net(&rt, json!({"op": "resolve", "host": "localhost"})).await;
    assert!(ok(&r).lines().any(|a| a == "127.0.0.1"), "{r:?}");
    // `.invalid` never resolves: a resolver error (NameUnresolvable) would mean it was tried.
    let r = net(&rt, json!({"op": "resolve", "host": "example.invalid"})).await;
    denied(&r, "example.invalid");
    assert!(r.text().contains("resolving example.invalid: access-denied"), "{}", r.text());
}

#[tokio::test(flavor = "multi_thread")]
async fn no_grant_means_no_network_not_even_dns() {
    let ws = workspace();
    let server = Server::greeter();
    let rt = net_runtime(ws.path(), None).await;
    let r = net(&rt, json!({"op": "tcp_connect", "host": "127.0.0.1", "port": server.port})).await;
    assert_eq!(r.outcome, OutcomeKind::Denied, "{r:?}");
    assert!(r.text().contains("access-denied"), "{}", r.text());
    let r = net(&rt, json!({"op": "resolve", "host": "localhost"})).await;
    denied(&r, "localhost");
    assert_eq!(server.hits(), 0);
}

#[tokio::test(flavor = "multi_thread")]
async fn http_get_of_a_granted_host_succeeds() {
    let ws = workspace();
    let server = Server::http("<p>hello over http</p>");
    let rt = net_runtime(ws.path(), Some(&[format!("localhost:{}", server.port)])).await;
    let url = format!("http://localhost:{}/", server.port);
    let text = ok(&net(&rt, json!({"op": "http_get", "url": url})).await);
    assert!(text.contains("200 OK") && text.ends_with("<p>hello over http</p>"), "{text}");
}

#[tokio::test(flavor = "multi_thread")]
async fn each_redirect_hop_is_checked() {
    let ws = workspace();
    let target = Server::http("landed");
    let hop = Server::redirect(format!("http://127.0.0.1:{}/", target.port));
    let url = format!("http://127.0.0.1:{}/start", hop.port);

    // Only the first hop granted: the redirect to another port is refused.
    let rt = net_runtime(ws.path(), Some(&[format!("127.0.0.1:{}", hop.port)])).await;
    let r = net(&rt, json!({"op": "http_get", "url": url})).await;
    denied(&r, &format!("127.0.0.1:{}", target.port));
    assert_eq!((hop.hits(), target.hits()), (1, 0));

    // Both granted: the guest follows it.
    let grants = [format!("127.0.0.1:{}", hop.port), format!("127.0.0.1:{}", target.port)];
    let rt = net_runtime(ws.path(), Some(&grants)).await;
    let text = ok(&net(&rt, json!({"op": "http_get", "url": url})).await);
    assert!(text.contains("302 Found") && text.ends_with("landed"), "{text}");
    assert_eq!(target.hits(), 1);
}

#[tokio::test(flavor = "multi_thread")]
async fn udp_reaches_only_granted_addresses_and_hears_only_them() {
    let ws = workspace();
    let echo = UdpEcho::start();
    let rt = net_runtime(ws.path(), Some(&[format!("127.0.0.1:{}", echo.port)])).await;
    // The server answers from a second, not granted, port first: that datagram is dropped
    // before the guest sees it, and the echo from the granted address gets through.
    let r = net(&rt, json!({"op": "udp_echo", "host": "127.0.0.1", "port": echo.port, "payload": "ping"})).await;
    assert_eq!(ok(&r), format!("reply from 127.0.0.1:{}: echo: ping", echo.port));
    assert_eq!(echo.hits(), 1);

    // Sending to the other port is refused before anything leaves.
    let r = net(&rt, json!({"op": "udp_echo", "host": "127.0.0.1", "port": echo.spoof_port})).await;
    denied(&r, &format!("127.0.0.1:{}", echo.spoof_port));
    assert!(r.text().contains("udp send to"), "{}", r.text());
}

#[tokio::test(flavor = "multi_thread")]
async fn udp_through_a_granted_name_is_pinned_to_its_lookup() {
    let ws = workspace();
    let echo = UdpEcho::start();
    let rt = net_runtime(ws.path(), Some(&[format!("localhost:{}", echo.port)])).await;
    let r = net(&rt, json!({"op": "udp_echo", "host": "localhost", "port": echo.port})).await;
    assert_eq!(ok(&r), format!("reply from 127.0.0.1:{}: echo: ping", echo.port));
    // The address literally, never looked up through the granted name (in this call): refused.
    let r = net(&rt, json!({"op": "udp_echo", "host": "127.0.0.1", "port": echo.port})).await;
    denied(&r, &format!("127.0.0.1:{}", echo.port));
    assert_eq!(echo.hits(), 1);
}

#[tokio::test(flavor = "multi_thread")]
async fn no_grant_means_no_udp() {
    let ws = workspace();
    let echo = UdpEcho::start();
    let rt = net_runtime(ws.path(), None).await;
    let r = net(&rt, json!({"op": "udp_echo", "host": "127.0.0.1", "port": echo.port})).await;
    assert_eq!(r.outcome, OutcomeKind::Denied, "{r:?}");
    assert!(r.text().contains("access-denied"), "{}", r.text());
    assert_eq!(echo.hits(), 0);
}
