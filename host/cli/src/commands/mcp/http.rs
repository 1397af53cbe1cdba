//! Streamable HTTP at `http://ADDR/mcp`, loopback only (plain HTTP: a token sent across a
//! network would travel in clear; put a TLS proxy in front to reach it from elsewhere).
//!
//! Before anything reaches rmcp, every request must carry `Authorization: Bearer TOKEN`
//! ([`token`](super::token); `--no-auth` turns this off with a warning): without it the answer
//! is 401 with `WWW-Authenticate: Bearer` and a JSON-RPC error saying where the token is. A
//! request body over [`MAX_BODY_BYTES`] is refused with 413 and a JSON-RPC error, without
//! being read whole.
//!
//! Against DNS rebinding and web pages, rmcp then refuses (403) a request whose `Host` is not
//! the bound address (or `localhost`) with the bound port, and one whose `Origin`, when
//! present, is neither the server's own origin (`http://127.0.0.1:PORT`,
//! `http://localhost:PORT`, `http://[::1]:PORT`) nor one given with `--allow-origin`: a page
//! served by another program on another local port is a stranger too.

use super::server::{McpServer, Shared};
use super::token::Token;
use anyhow::{Context, Result, bail};
use http_body_util::{BodyExt as _, Full, Limited};
use hyper::body::Bytes;
use hyper_util::rt::TokioIo;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use std::convert::Infallible;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::PathBuf;
use std::sync::Arc;
use tower_service::Service as _;

/// The path the endpoint is served at.
const PATH: &str = "/mcp";

/// The largest request body accepted: 4 MiB, far above any real `tools/call` (the runtime's
/// own input limit is lower), small enough that a client cannot make the server buffer much.
pub const MAX_BODY_BYTES: usize = 4 * 1024 * 1024;

/// What `toolhost mcp` was told about HTTP besides the address.
pub struct Options {
    pub token_file: Option<PathBuf>,
    pub allow_origins: Vec<String>,
    pub no_auth: bool,
}

type Response = hyper::Response<http_body_util::combinators::BoxBody<Bytes, Infallible>>;

/// `HOST:PORT`, `[V6]:PORT` or `PORT` (on 127.0.0.1); `localhost` means 127.0.0.1.
fn parse_addr(addr: &str) -> Result<SocketAddr> {
    if let Ok(port) = addr.parse::<u16>() {
        return Ok(SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), port));
    }
    if let Ok(a) = addr.parse::<SocketAddr>() {
        return Ok(a);
    }
    if let Some(port) = addr.strip_prefix("localhost:") {
        let port = port.parse::<u16>().with_context(|| format!("--http {addr}: bad port"))?;
        return Ok(SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), port));
    }
    bail!("--http {addr}: expected HOST:PORT or PORT with a loopback HOST (e.g. 127.0.0.1:8765)")
}

/// An `--allow-origin` value as `scheme://host:port`, the port always explicit (a browser
/// leaves out the scheme's default port; rmcp would read a missing port as "any port").
fn parse_origin(origin: &str) -> Result<String> {
    let bad = || format!("--allow-origin {origin}: expected an origin like http://localhost:3000 (scheme, host, port)");
    let uri: hyper::Uri = origin.trim().parse().with_context(bad)?;
    let scheme = uri.scheme_str().map(str::to_ascii_lowercase).with_context(bad)?;
    let default_port = match scheme.as_str() {
        "http" => 80,
        "https" => 443,
        _ => bail!("--allow-origin {origin}: only http and https origins exist for web pages"),
    };
    let authority = uri.authority().with_context(bad)?;
    if authority.as_str().contains('@') || !matches!(uri.path(), "" | "/") || uri.query().is_some() {
        bail!("{}: an origin has no user, path or query", bad());
    }
    let host = authority.host().to_ascii_lowercase();
    Ok(format!("{scheme}://{host}:{}", authority.port_u16().unwrap_or(default_port)))
}

pub async fn serve(shared: Arc<Shared>, addr: &str, options: Options) -> Result<()> {
    let addr = parse_addr(addr)?;
    if !addr.ip().is_loopback() {
        bail!(
            "--http {addr}: toolhost mcp serves only loopback addresses (plain HTTP: its token would \
             cross the network in clear); put a TLS-terminating proxy in front of it to reach it from elsewhere"
        );
    }
    let extra_origins = options.allow_origins.iter().map(|o| parse_origin(o)).collect::<Result<Vec<_>>>()?;
    let listener = tokio::net::TcpListener::bind(addr).await.with_context(|| format!("--http {addr}"))?;
    let bound = listener.local_addr()?;
    let port = bound.port();
    let host = match bound.ip() {
        IpAddr::V4(ip) => ip.to_string(),
        IpAddr::V6(ip) => format!("[{ip}]"),
    };
    let token = if options.no_auth {
        eprintln!(
            "warning: toolhost mcp --no-auth: requests need no token; every program and user on this machine \
             that can connect to {host}:{port} can call the tools"
        );
        None
    } else {
        Some(Arc::new(Token::resolve(options.token_file.as_deref(), bound)?))
    };

    let allowed_hosts = [format!("{host}:{port}"), format!("localhost:{port}")];
    let mut allowed_origins =
        ["127.0.0.1", "localhost", "[::1]"].iter().map(|h| format!("http://{h}:{port}")).collect::<Vec<_>>();
    allowed_origins.extend(extra_origins);
    let config = StreamableHttpServerConfig::default()
        .with_allowed_hosts(allowed_hosts)
        .with_allowed_origins(allowed_origins)
        .enforce_origin_validation()
        .with_max_request_body_bytes(MAX_BODY_BYTES);
    let factory = {
        let shared = shared.clone();
        move || Ok(McpServer::new(shared.clone()))
    };
    let service = StreamableHttpService::new(factory, Arc::new(LocalSessionManager::default()), config);
    // Tests and scripts read these lines (port 0 picks a free one); "listening" comes last.
    if let Some(token) = &token {
        eprintln!("toolhost mcp: {}", token.source);
    }
    eprintln!("toolhost mcp: listening on http://{host}:{port}{PATH}");

    loop {
        let (stream, _) = match listener.accept().await {
            Ok(s) => s,
            Err(e) => {
                tracing::warn!("accept: {e}");
                continue;
            }
        };
        // An answer leaves in two writes (the event stream's first event, then the message):
        // with Nagle's algorithm the second waits for the client's delayed ACK, 40 ms on every
        // call of a kept-alive connection.
        if let Err(e) = stream.set_nodelay(true) {
            tracing::debug!("TCP_NODELAY: {e}");
        }
        let service = service.clone();
        let token = token.clone();
        tokio::spawn(async move {
            let handler = hyper::service::service_fn(move |request: hyper::Request<hyper::body::Incoming>| {
                let mut service = service.clone();
                let token = token.clone();
                async move {
                    if let Some(token) = &token {
                        let authorization = request.headers().get(hyper::header::AUTHORIZATION);
                        if !token.accepts(authorization.map(|v| v.as_bytes())) {
                            return Ok::<_, Infallible>(unauthorized());
                        }
                    }
                    if request.uri().path() != PATH {
                        let body = Full::new(Bytes::from(format!("Not Found: the MCP endpoint is {PATH}\n"))).boxed();
                        let mut response = hyper::Response::new(body);
                        *response.status_mut() = hyper::StatusCode::NOT_FOUND;
                        return Ok(response);
                    }
                    let request = match read_body(request).await {
                        Ok(r) => r,
                        Err(response) => return Ok(response),
                    };
                    service.call(request).await
                }
            });
            if let Err(e) =
                hyper::server::conn::http1::Builder::new().serve_connection(TokioIo::new(stream), handler).await
            {
                tracing::debug!("HTTP connection: {e}");
            }
        });
    }
}

/// The request with its body read whole, or the answer to a body over [`MAX_BODY_BYTES`]
/// (refused from its `Content-Length` before reading it, else when the limit is passed).
async fn read_body(request: hyper::Request<hyper::body::Incoming>) -> Result<hyper::Request<Full<Bytes>>, Response> {
    let too_large = || {
        json_error(
            hyper::StatusCode::PAYLOAD_TOO_LARGE,
            -32600,
            &format!("Invalid Request: the request body is larger than the limit of {MAX_BODY_BYTES} bytes (4 MiB)"),
        )
    };
    let declared = request
        .headers()
        .get(hyper::header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok());
    if declared.is_some_and(|n| n > MAX_BODY_BYTES as u64) {
        return Err(too_large());
    }
    let (parts, body) = request.into_parts();
    match Limited::new(body, MAX_BODY_BYTES).collect().await {
        Ok(collected) => Ok(hyper::Request::from_parts(parts, Full::new(collected.to_bytes()))),
        Err(e) if e.is::<http_body_util::LengthLimitError>() => Err(too_large()),
        Err(e) => {
            tracing::debug!("reading a request body: {e}");
            Err(json_error(
                hyper::StatusCode::BAD_REQUEST,
                -32600,
                &format!("Invalid Request: cannot read the body: {e}"),
            ))
        }
    }
}

/// 401 for a request without the right token, saying where the token is.
fn unauthorized() -> Response {
    let mut response = json_error(
        hyper::StatusCode::UNAUTHORIZED,
        -32001,
        "Unauthorized: send the header `Authorization: Bearer TOKEN`. TOKEN is in the file toolhost mcp \
         named on its stderr when it started (\"toolhost mcp: token in FILE\", e.g. its --token-file), or is \
         the TOOLHOST_MCP_TOKEN it was started with.",
    );
    response.headers_mut().insert(
        hyper::header::WWW_AUTHENTICATE,
        hyper::header::HeaderValue::from_static("Bearer realm=\"toolhost mcp\""),
    );
    response
}

/// A JSON-RPC error (id null: the request was not read) with an HTTP status; MCP clients show
/// its message.
fn json_error(status: hyper::StatusCode, code: i32, message: &str) -> Response {
    let body = serde_json::json!({"jsonrpc": "2.0", "id": null, "error": {"code": code, "message": message}});
    let mut response = hyper::Response::new(Full::new(Bytes::from(body.to_string())).boxed());
    *response.status_mut() = status;
    response
        .headers_mut()
        .insert(hyper::header::CONTENT_TYPE, hyper::header::HeaderValue::from_static("application/json"));
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn allowed_origins_are_normalised_with_an_explicit_port() {
        assert_eq!(parse_origin("http://localhost:3000").unwrap(), "http://localhost:3000");
        assert_eq!(parse_origin("HTTPS://App.Example/").unwrap(), "https://app.example:443");
        assert_eq!(parse_origin("http://[::1]:8080").unwrap(), "http://[::1]:8080");
        for bad in ["localhost:3000", "ftp://x:1", "http://x:1/path", "http://u@x:1", "null", "http://x:1?q"] {
            assert!(parse_origin(bad).is_err(), "{bad}");
        }
    }
}
