//! `Net`: reaches for the network through raw `wasi:sockets`, so that the tests see the exact
//! WASI error code the sandbox answers. Its ceiling is `net("*")`: what it can reach is decided
//! by the operator's grant alone.
//!
//! - `resolve`: look `host` up and list the addresses.
//! - `tcp_connect`: connect to `host:port` (an IP literal is used as is, a name is looked up
//!   first), read what the server sends until it closes.
//! - `http_get`: a minimal HTTP/1.0 GET of `url` (`http://host:port/path`) over a socket,
//!   following up to 5 redirects itself: every hop is looked up and connected anew.
//! - `wasi_http`: GET `url` (http or https) through `wasi:http/outgoing-handler`, following up
//!   to 5 redirects (each a new request), with the optional `connect_timeout_ms` and
//!   `first_byte_timeout_ms` request options; `parallel` sends that many requests at once and
//!   waits for all (each response kept open until every one has come).
//! - `udp_echo`: send the datagram `payload` to `host:port` from an unconnected UDP socket and
//!   wait (at most 10 s) for the first datagram back; report where it came from.

use schemars::JsonSchema;
use serde::Deserialize;
use toolhost_sdk::{Capability, Output, Tool, ToolError, export_tool};
use wasip2::clocks::monotonic_clock::subscribe_duration;
use wasip2::io::poll::poll;
use wasip2::io::streams::StreamError;
use wasip2::sockets::instance_network::instance_network;
use wasip2::sockets::ip_name_lookup::resolve_addresses;
use wasip2::sockets::network::{
    ErrorCode, IpAddress, IpAddressFamily, IpSocketAddress, Ipv4SocketAddress, Ipv6SocketAddress, Network,
};
use wasip2::sockets::tcp_create_socket::create_tcp_socket;
use wasip2::sockets::udp::OutgoingDatagram;
use wasip2::sockets::udp_create_socket::create_udp_socket;

#[derive(Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
enum Op {
    Resolve,
    TcpConnect,
    HttpGet,
    WasiHttp,
    UdpEcho,
}

#[derive(Deserialize, JsonSchema)]
struct Input {
    op: Op,
    host: Option<String>,
    port: Option<u16>,
    url: Option<String>,
    connect_timeout_ms: Option<u64>,
    first_byte_timeout_ms: Option<u64>,
    parallel: Option<u32>,
    payload: Option<String>,
}

struct Net;

/// A refusal of the sandbox becomes `denied`, anything else `failed`; the text names the step
/// and the WASI error code.
fn err(what: String, code: ErrorCode) -> ToolError {
    let msg = format!("{what}: {}", code.name());
    if code == ErrorCode::AccessDenied { ToolError::Denied(msg) } else { ToolError::Failed(msg) }
}

fn resolve(network: &Network, host: &str) -> Result<Vec<IpAddress>, ToolError> {
    let stream = resolve_addresses(network, host).map_err(|c| err(format!("resolving {host}"), c))?;
    let mut out = Vec::new();
    loop {
        match stream.resolve_next_address() {
            Ok(Some(a)) => out.push(a),
            Ok(None) => return Ok(out),
            Err(ErrorCode::WouldBlock) => stream.subscribe().block(),
            Err(c) => return Err(err(format!("resolving {host}"), c)),
        }
    }
}

fn show(ip: &IpAddress) -> String {
    match *ip {
        IpAddress::Ipv4((a, b, c, d)) => format!("{a}.{b}.{c}.{d}"),
        IpAddress::Ipv6(s) => std::net::Ipv6Addr::new(s.0, s.1, s.2, s.3, s.4, s.5, s.6, s.7).to_string(),
    }
}

/// The addresses of `host`: an IP literal as is, a name looked up. IPv4 first: the test
/// servers listen on 127.0.0.1 while `localhost` may resolve to ::1 too.
fn address_of(network: &Network, host: &str) -> Result<IpAddress, ToolError> {
    let ips = match host.trim_start_matches('[').trim_end_matches(']').parse::<std::net::IpAddr>() {
        Ok(std::net::IpAddr::V4(v4)) => {
            let [a, b, c, d] = v4.octets();
            vec![IpAddress::Ipv4((a, b, c, d))]
        }
        Ok(std::net::IpAddr::V6(v6)) => {
            let s = v6.segments();
            vec![IpAddress::Ipv6((s[0], s[1], s[2], s[3], s[4], s[5], s[6], s[7]))]
        }
        Err(_) => resolve(network, host)?,
    };
    ips.iter()
        .find(|ip| matches!(ip, IpAddress::Ipv4(_)))
        .or(ips.first())
        .copied()
        .ok_or_else(|| ToolError::Failed(format!("{host} has no address")))
}

fn socket_address(ip: IpAddress, port: u16) -> (IpAddressFamily, IpSocketAddress) {
    match ip {
        IpAddress::Ipv4(a) => (IpAddressFamily::Ipv4, IpSocketAddress::Ipv4(Ipv4SocketAddress { port, address: a })),
        IpAddress::Ipv6(a) => (
            IpAddressFamily::Ipv6,
            IpSocketAddress::Ipv6(Ipv6SocketAddress { port, address: a, flow_info: 0, scope_id: 0 }),
        ),
    }
}

fn show_socket(addr: &IpSocketAddress) -> String {
    match addr {
        IpSocketAddress::Ipv4(a) => format!("{}:{}", show(&IpAddress::Ipv4(a.address)), a.port),
        IpSocketAddress::Ipv6(a) => format!("[{}]:{}", show(&IpAddress::Ipv6(a.address)), a.port),
    }
}

/// Connect to `host:port`, send `request`, read until the server closes.
fn exchange(host: &str, port: u16, request: &[u8]) -> Result<Vec<u8>, ToolError> {
    let network = instance_network();
    let ip = &address_of(&network, host)?;
    let (family, addr) = socket_address(*ip, port);
    let what = || format!("connecting to {host}:{port} ({})", show(ip));
    let socket = create_tcp_socket(family).map_err(|c| err(what(), c))?;
    socket.start_connect(&network, addr).map_err(|c| err(what(), c))?;
    let (input, output) = loop {
        match socket.finish_connect() {
            Ok(streams) => break streams,
            Err(ErrorCode::WouldBlock) => socket.subscribe().block(),
            Err(c) => return Err(err(what(), c)),
        }
    };
    if !request.is_empty() {
        output.blocking_write_and_flush(request).map_err(|e| ToolError::Failed(format!("sending: {e:?}")))?;
    }
    let mut body = Vec::new();
    loop {
        match input.blocking_read(64 * 1024) {
            Ok(chunk) => body.extend_from_slice(&chunk),
            Err(StreamError::Closed) => break,
            Err(e) => return Err(ToolError::Failed(format!("reading: {e:?}"))),
        }
    }
    drop((input, output));
    Ok(body)
}

/// `http://host[:port]/path` → (host, port, path).
fn parse_url(url: &str) -> Result<(String, u16, String), ToolError> {
    let rest = url.strip_prefix("http://").ok_or_else(|| ToolError::InvalidInput(format!("not an http URL: {url}")))?;
    let (authority, path) = match rest.find('/') {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, "/"),
    };
    let (host, port) = match authority.rsplit_once(':') {
        Some((h, p)) if !h.ends_with(':') => {
            (h, p.parse().map_err(|_| ToolError::InvalidInput(format!("bad port in {url}")))?)
        }
        _ => (authority, 80),
    };
    Ok((host.to_string(), port, path.to_string()))
}

mod web {
    //! The `wasi_http` op.

    use super::ToolError;
    use wasip2::http::outgoing_handler::{self, FutureIncomingResponse};
    use wasip2::http::types::{
        ErrorCode, Fields, IncomingBody, IncomingResponse, Method, OutgoingRequest, RequestOptions, Scheme,
    };
    use wasip2::io::streams::StreamError;

    pub(super) struct Options {
        pub connect_timeout_ms: Option<u64>,
        pub first_byte_timeout_ms: Option<u64>,
    }

    /// An `ErrorCode` as the tests match it: denied → `denied`, anything else → `failed`.
    fn err(what: &str, code: &ErrorCode) -> ToolError {
        let msg = format!("{what}: {code:?}");
        if matches!(code, ErrorCode::HttpRequestDenied) { ToolError::Denied(msg) } else { ToolError::Failed(msg) }
    }

    /// Start a GET of `url`; the response is awaited by [`finish`].
    fn start(url: &str, options: &Options) -> Result<FutureIncomingResponse, ToolError> {
        let (scheme, rest) = if let Some(r) = url.strip_prefix("http://") {
            (Scheme::Http, r)
        } else if let Some(r) = url.strip_prefix("https://") {
            (Scheme::Https, r)
        } else {
            return Err(ToolError::InvalidInput(format!("not an http(s) URL: {url}")));
        };
        let (authority, path) = match rest.find('/') {
            Some(i) => (&rest[..i], &rest[i..]),
            None => (rest, "/"),
        };
        let request = OutgoingRequest::new(Fields::new());
        let bad = |_| ToolError::InvalidInput(format!("bad URL {url}"));
        request.set_method(&Method::Get).map_err(bad)?;
        request.set_scheme(Some(&scheme)).map_err(bad)?;
        request.set_authority(Some(authority)).map_err(bad)?;
        request.set_path_with_query(Some(path)).map_err(bad)?;
        let opts = RequestOptions::new();
        let ns = |ms: u64| ms.saturating_mul(1_000_000);
        if let Some(ms) = options.connect_timeout_ms {
            opts.set_connect_timeout(Some(ns(ms))).map_err(|_| ToolError::Failed("connect-timeout".into()))?;
        }
        if let Some(ms) = options.first_byte_timeout_ms {
            opts.set_first_byte_timeout(Some(ns(ms))).map_err(|_| ToolError::Failed("first-byte-timeout".into()))?;
        }
        outgoing_handler::handle(request, Some(opts)).map_err(|c| err(&format!("requesting {url}"), &c))
    }

    fn finish(url: &str, future: FutureIncomingResponse) -> Result<IncomingResponse, ToolError> {
        loop {
            match future.get() {
                Some(Ok(Ok(response))) => return Ok(response),
                Some(Ok(Err(code))) => return Err(err(&format!("requesting {url}"), &code)),
                Some(Err(())) => return Err(ToolError::Failed("response taken twice".into())),
                None => future.subscribe().block(),
            }
        }
    }

    fn location(response: &IncomingResponse) -> Option<String> {
        let values = response.headers().get("location");
        values.first().map(|v| String::from_utf8_lossy(v).into_owned())
    }

    /// Read the whole body; a stream error names the HTTP error code behind it.
    fn body(url: &str, response: IncomingResponse) -> Result<Vec<u8>, ToolError> {
        let incoming = response.consume().map_err(|()| ToolError::Failed("body taken twice".into()))?;
        let stream = incoming.stream().map_err(|()| ToolError::Failed("stream taken twice".into()))?;
        let mut out = Vec::new();
        loop {
            match stream.blocking_read(64 * 1024) {
                Ok(chunk) => out.extend_from_slice(&chunk),
                Err(StreamError::Closed) => break,
                Err(StreamError::LastOperationFailed(e)) => {
                    let code = wasip2::http::types::http_error_code(&e);
                    return Err(match code {
                        Some(c) => err(&format!("reading {url} after {} bytes", out.len()), &c),
                        None => ToolError::Failed(format!("reading {url}: {}", e.to_debug_string())),
                    });
                }
            }
        }
        drop(stream);
        IncomingBody::finish(incoming);
        Ok(out)
    }

    /// GET `url`, following redirects; the hops and the final body.
    pub(super) fn get(url: &str, options: &Options) -> Result<String, ToolError> {
        let mut url = url.to_string();
        let mut hops = Vec::new();
        for _ in 0..=5 {
            let response = finish(&url, start(&url, options)?)?;
            let status = response.status();
            hops.push(format!("{url} -> {status}"));
            match location(&response) {
                Some(next) if (300..400).contains(&status) => url = next,
                _ => {
                    let body = body(&url, response)?;
                    return Ok(format!("{}\n\n{}", hops.join("\n"), String::from_utf8_lossy(&body)));
                }
            }
        }
        Err(ToolError::Failed(format!("too many redirects: {}", hops.join(", "))))
    }

    /// Send `n` GETs at once and wait for every response before reading any body.
    pub(super) fn parallel(url: &str, n: u32, options: &Options) -> Result<String, ToolError> {
        let futures = (0..n).map(|_| start(url, options)).collect::<Result<Vec<_>, _>>()?;
        let mut responses = Vec::new();
        for f in futures {
            responses.push(finish(url, f)?);
        }
        let mut statuses = Vec::new();
        for r in responses {
            statuses.push(r.status().to_string());
            body(url, r)?;
        }
        Ok(format!("{n} responses: {}", statuses.join(" ")))
    }
}

/// Send `payload` to `host:port` from an unconnected socket (so that any sender could answer
/// and the sandbox's receive check is what filters) and wait for the first datagram back.
fn udp_echo(host: &str, port: u16, payload: &str) -> Result<String, ToolError> {
    let network = instance_network();
    let ip = address_of(&network, host)?;
    let (family, remote) = socket_address(ip, port);
    let what = |step: &str| format!("udp {step} {host}:{port}");
    let socket = create_udp_socket(family).map_err(|c| err(what("socket for"), c))?;
    let (_, local) = socket_address(
        match family {
            IpAddressFamily::Ipv4 => IpAddress::Ipv4((0, 0, 0, 0)),
            IpAddressFamily::Ipv6 => IpAddress::Ipv6((0, 0, 0, 0, 0, 0, 0, 0)),
        },
        0,
    );
    socket.start_bind(&network, local).map_err(|c| err(what("bind for"), c))?;
    loop {
        match socket.finish_bind() {
            Ok(()) => break,
            Err(ErrorCode::WouldBlock) => socket.subscribe().block(),
            Err(c) => return Err(err(what("bind for"), c)),
        }
    }
    let (incoming, outgoing) = socket.stream(None).map_err(|c| err(what("stream to"), c))?;
    let datagram = OutgoingDatagram { data: payload.as_bytes().to_vec(), remote_address: Some(remote) };
    loop {
        match outgoing.check_send() {
            Ok(0) => outgoing.subscribe().block(),
            Ok(_) => break,
            Err(c) => return Err(err(what("send to"), c)),
        }
    }
    let sent = outgoing.send(std::slice::from_ref(&datagram)).map_err(|c| err(what("send to"), c))?;
    if sent != 1 {
        return Err(ToolError::Failed(format!("{}: nothing sent", what("send to"))));
    }
    let deadline = subscribe_duration(10_000_000_000);
    loop {
        let got = incoming.receive(1).map_err(|c| err(what("receive from"), c))?;
        if let Some(d) = got.first() {
            return Ok(format!("reply from {}: {}", show_socket(&d.remote_address), String::from_utf8_lossy(&d.data)));
        }
        let ready = incoming.subscribe();
        if poll(&[&ready, &deadline]).contains(&1) {
            return Err(ToolError::Failed(format!("{}: no reply within 10 s", what("receive from"))));
        }
    }
}

fn need<T: Clone>(value: &Option<T>, what: &str) -> Result<T, ToolError> {
    value.clone().ok_or_else(|| ToolError::InvalidInput(format!("`{what}` is required")))
}

impl Tool for Net {
    type Input = Input;
    const NAME: &'static str = "Net";
    const DESCRIPTION: &'static str =
        "Looks up names, opens TCP connections, sends UDP datagrams and GETs URLs, for network sandbox tests.";

    fn capabilities() -> Vec<Capability> {
        vec![Capability::Net("*".into())]
    }

    fn call(input: Input) -> Result<Output, ToolError> {
        match input.op {
            Op::Resolve => {
                let host = need(&input.host, "host")?;
                let ips = resolve(&instance_network(), &host)?;
                Ok(Output::text(ips.iter().map(show).collect::<Vec<_>>().join("\n")))
            }
            Op::TcpConnect => {
                let host = need(&input.host, "host")?;
                let port = need(&input.port, "port")?;
                let got = exchange(&host, port, b"")?;
                Ok(Output::text(format!("connected; read: {}", String::from_utf8_lossy(&got))))
            }
            Op::HttpGet => {
                let mut url = need(&input.url, "url")?;
                let mut hops = Vec::new();
                for _ in 0..=5 {
                    let (host, port, path) = parse_url(&url)?;
                    let request = format!("GET {path} HTTP/1.0\r\nHost: {host}:{port}\r\n\r\n");
                    let response = exchange(&host, port, request.as_bytes())?;
                    let text = String::from_utf8_lossy(&response).into_owned();
                    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
                    let status = head.lines().next().unwrap_or("").to_string();
                    hops.push(format!("{url} -> {status}"));
                    let location = head.lines().find_map(|l| {
                        let (k, v) = l.split_once(':')?;
                        k.eq_ignore_ascii_case("location").then(|| v.trim().to_string())
                    });
                    match location {
                        Some(next) if status.contains(" 30") => url = next,
                        _ => return Ok(Output::text(format!("{}\n\n{body}", hops.join("\n")))),
                    }
                }
                Err(ToolError::Failed(format!("too many redirects: {}", hops.join(", "))))
            }
            Op::UdpEcho => {
                let host = need(&input.host, "host")?;
                let port = need(&input.port, "port")?;
                let payload = input.payload.unwrap_or_else(|| "ping".into());
                Ok(Output::text(udp_echo(&host, port, &payload)?))
            }
            Op::WasiHttp => {
                let url = need(&input.url, "url")?;
                let options = web::Options {
                    connect_timeout_ms: input.connect_timeout_ms,
                    first_byte_timeout_ms: input.first_byte_timeout_ms,
                };
                let text = match input.parallel {
                    Some(n) if n > 1 => web::parallel(&url, n, &options)?,
                    _ => web::get(&url, &options)?,
                };
                Ok(Output::text(text))
            }
        }
    }
}

export_tool!(Net);
