//! `Net`: reaches for the network through raw `wasi:sockets`, so that the tests see the exact
//! WASI error code the sandbox answers. Its ceiling is `net("*")`: what it can reach is decided
//! by the operator's grant alone.
//!
//! - `resolve`: look `host` up and list the addresses.
//! - `tcp_connect`: connect to `host:port` (an IP literal is used as is, a name is looked up
//!   first), read what the server sends until it closes.
//! - `http_get`: a minimal HTTP/1.0 GET of `url` (`http://host:port/path`) over a socket,
//!   following up to 5 redirects itself: every hop is looked up and connected anew.

use schemars::JsonSchema;
use serde::Deserialize;
use toolhost_sdk::{Capability, Output, Tool, ToolError, export_tool};
use wasip2::io::streams::StreamError;
use wasip2::sockets::instance_network::instance_network;
use wasip2::sockets::ip_name_lookup::resolve_addresses;
use wasip2::sockets::network::{
    ErrorCode, IpAddress, IpAddressFamily, IpSocketAddress, Ipv4SocketAddress, Ipv6SocketAddress, Network,
};
use wasip2::sockets::tcp_create_socket::create_tcp_socket;

#[derive(Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
enum Op {
    Resolve,
    TcpConnect,
    HttpGet,
}

#[derive(Deserialize, JsonSchema)]
struct Input {
    op: Op,
    host: Option<String>,
    port: Option<u16>,
    url: Option<String>,
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

/// Connect to `host:port`, send `request`, read until the server closes.
fn exchange(host: &str, port: u16, request: &[u8]) -> Result<Vec<u8>, ToolError> {
    let network = instance_network();
    let ips = match host.trim_start_matches('[').trim_end_matches(']').parse::<std::net::IpAddr>() {
        Ok(std::net::IpAddr::V4(v4)) => {
            let [a, b, c, d] = v4.octets();
            vec![IpAddress::Ipv4((a, b, c, d))]
        }
        Ok(std::net::IpAddr::V6(v6)) => {
            let s = v6.segments();
            vec![IpAddress::Ipv6((s[0], s[1], s[2], s[3], s[4], s[5], s[6], s[7]))]
        }
        Err(_) => resolve(&network, host)?,
    };
    // IPv4 first: the test servers listen on 127.0.0.1 while `localhost` may resolve to ::1 too.
    let ip = ips
        .iter()
        .find(|ip| matches!(ip, IpAddress::Ipv4(_)))
        .or(ips.first())
        .ok_or_else(|| ToolError::Failed(format!("{host} has no address")))?;
    let (family, addr) = match *ip {
        IpAddress::Ipv4(a) => (IpAddressFamily::Ipv4, IpSocketAddress::Ipv4(Ipv4SocketAddress { port, address: a })),
        IpAddress::Ipv6(a) => (
            IpAddressFamily::Ipv6,
            IpSocketAddress::Ipv6(Ipv6SocketAddress { port, address: a, flow_info: 0, scope_id: 0 }),
        ),
    };
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

fn need<T: Clone>(value: &Option<T>, what: &str) -> Result<T, ToolError> {
    value.clone().ok_or_else(|| ToolError::InvalidInput(format!("`{what}` is required")))
}

impl Tool for Net {
    type Input = Input;
    const NAME: &'static str = "Net";
    const DESCRIPTION: &'static str = "Looks up names, opens TCP connections and GETs URLs, for network sandbox tests.";

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
        }
    }
}

export_tool!(Net);
