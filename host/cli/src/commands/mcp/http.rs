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
//!
//! A plain `tools/call` (see [`fast`](super::fast)) is answered without rmcp, as one JSON body,
//! under the same rules; everything else goes through rmcp.
//!
//! Before any of this, a connection must fit in the [`bounds`](super::bounds) (at most 1,024
//! open, or half the open-file limit; 128 from one address), else it is closed at once, and
//! must send each request's head in time ([`timeouts`](super::timeouts): 10 s for a head,
//! 120 s between requests, nothing cut while one is in flight). A failed `accept` (out of
//! descriptors) waits before the next, from 10 ms doubling to 1 s.

use super::bounds::{Acceptor, Bounds, Caps, Throttle};
use super::fast::{FastPath, Outcome};
use super::server::{McpServer, Shared};
use super::timeouts::{Clock, Timeouts, Watched};
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
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
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
    /// Serve `/metrics` without the token.
    pub metrics_no_auth: bool,
    /// After SIGTERM, how long to keep serving while `/readyz` says draining.
    pub drain_grace: Duration,
    /// More `Host` values accepted (a load balancer's or a service's name).
    pub allow_hosts: Vec<String>,
    /// Listen on an address beyond loopback (a container, a pod).
    pub allow_remote: bool,
    /// Serve without MCP sessions.
    pub stateless: bool,
}

/// After SIGTERM and the grace period, the longest wait for running calls to end before
/// exiting anyway (each call is bounded by its own timeout; this bounds a client that never
/// reads its answer).
const MAX_DRAIN: Duration = Duration::from_secs(600);

pub(super) type Response = hyper::Response<http_body_util::combinators::BoxBody<Bytes, Infallible>>;

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
        if !options.allow_remote {
            bail!(
                "--http {addr}: toolhost mcp serves only loopback addresses (plain HTTP: its token would \
                 cross the network in clear); put a TLS-terminating proxy in front of it to reach it from \
                 elsewhere, or pass --allow-remote where the network is private to it (a container, a pod)"
            );
        }
        if options.no_auth {
            bail!("--http {addr} --allow-remote --no-auth: a server beyond loopback must check the bearer token");
        }
        eprintln!(
            "warning: toolhost mcp --allow-remote: serving plain HTTP on {addr}; the bearer token crosses the \
             network in clear unless a TLS-terminating proxy or a private network carries it"
        );
    }
    let extra_origins = options.allow_origins.iter().map(|o| parse_origin(o)).collect::<Result<Vec<_>>>()?;
    let bounds = Bounds::from_env()?;
    let listener = tokio::net::TcpListener::bind(addr).await.with_context(|| format!("--http {addr}"))?;
    let bound = listener.local_addr()?;
    let mut listener = Acceptor::new(listener, shared.metrics.accept_errors.clone());
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

    let mut allowed_hosts = vec![format!("{host}:{port}"), format!("localhost:{port}"), format!("127.0.0.1:{port}")];
    allowed_hosts.extend(options.allow_hosts.iter().map(|h| h.trim().to_ascii_lowercase()));
    let mut allowed_origins =
        ["127.0.0.1", "localhost", "[::1]"].iter().map(|h| format!("http://{h}:{port}")).collect::<Vec<_>>();
    allowed_origins.extend(extra_origins);
    let fast = Arc::new(FastPath {
        allowed_hosts: allowed_hosts.clone(),
        allowed_origins: allowed_origins.clone(),
        stateless: options.stateless,
    });
    let config = StreamableHttpServerConfig::default()
        .with_allowed_hosts(allowed_hosts)
        .with_allowed_origins(allowed_origins)
        .enforce_origin_validation()
        .with_max_request_body_bytes(MAX_BODY_BYTES)
        // Stateless: no session, each request served on its own (the transport allows it), and
        // a call's result as one JSON body instead of an event stream; a call that sends
        // progress or asks the user first is still answered as a stream, in order.
        .with_legacy_session_mode(!options.stateless)
        .with_json_response(options.stateless);
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

    let connections = Connections {
        service,
        token,
        shared: shared.clone(),
        metrics_no_auth: options.metrics_no_auth,
        in_flight: Arc::default(),
        fast,
        caps: Caps::new(&bounds, shared.metrics.connections.clone()),
        timeouts: bounds.timeouts,
        refusals: Arc::default(),
    };
    let mut terminate = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
        .context("cannot watch for SIGTERM")?;
    let graceful = hyper_util::server::graceful::GracefulShutdown::new();
    loop {
        tokio::select! {
            (stream, peer) = listener.accept() => connections.accept(stream, peer, graceful.watcher()),
            _ = terminate.recv() => break,
        }
    }
    // A rolling restart: stop getting traffic, keep serving what still comes during the grace
    // period (a load balancer needs a health check or two to notice), then stop accepting and
    // exit once every answer being sent has been sent.
    shared.start_draining();
    eprintln!(
        "toolhost mcp: SIGTERM: draining (/readyz answers 503); serving {} ms more, then finishing the calls \
         in flight",
        options.drain_grace.as_millis()
    );
    let grace = tokio::time::sleep(options.drain_grace);
    tokio::pin!(grace);
    loop {
        tokio::select! {
            (stream, peer) = listener.accept() => connections.accept(stream, peer, graceful.watcher()),
            () = &mut grace => break,
        }
    }
    drop(listener);
    // Every connection ends after the answer it is sending (an idle one at once), so that no
    // request is read from a kept-alive connection while the process exits.
    tokio::spawn(graceful.shutdown());
    let deadline = tokio::time::Instant::now() + MAX_DRAIN;
    while connections.in_flight.load(Ordering::Acquire) > 0 {
        if tokio::time::Instant::now() >= deadline {
            eprintln!("toolhost mcp: calls still running after {} s; exiting anyway", MAX_DRAIN.as_secs());
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    eprintln!("toolhost mcp: drained; exiting");
    Ok(())
}

/// What every connection's handler needs.
#[derive(Clone)]
struct Connections {
    service: StreamableHttpService<McpServer, LocalSessionManager>,
    token: Option<Arc<Token>>,
    shared: Arc<Shared>,
    metrics_no_auth: bool,
    /// POST answers not yet sent whole (a `tools/call`'s answer streams until its result).
    in_flight: Arc<AtomicUsize>,
    /// Plain `tools/call` requests, answered without rmcp (see `fast.rs`).
    fast: Arc<FastPath>,
    /// The connections open, against their limits.
    caps: Arc<Caps>,
    /// How long each may wait for a request.
    timeouts: Timeouts,
    /// The warnings about refused connections (at most one a second).
    refusals: Arc<Mutex<Throttle>>,
}

impl Connections {
    /// Serve a new connection on a task of its own, or close it at once if it would pass a
    /// limit of [`Caps`].
    fn accept(&self, stream: tokio::net::TcpStream, peer: SocketAddr, watcher: hyper_util::server::graceful::Watcher) {
        let admitted = match self.caps.admit(peer.ip()) {
            Ok(admitted) => admitted,
            Err(limit) => {
                self.shared.metrics.refused(limit.label());
                let warn = self.refusals.lock().unwrap_or_else(|e| e.into_inner()).allow(std::time::Instant::now());
                if let Some(suppressed) = warn {
                    tracing::warn!(
                        "closing a connection from {peer}: too many open ({} limit; {suppressed} more refused since \
                         the last warning)",
                        limit.label()
                    );
                }
                refuse(&stream);
                return;
            }
        };
        // An answer leaves in two writes (the event stream's first event, then the message):
        // with Nagle's algorithm the second waits for the client's delayed ACK, 40 ms on every
        // call of a kept-alive connection.
        if let Err(e) = stream.set_nodelay(true) {
            tracing::debug!("TCP_NODELAY: {e}");
        }
        let this = self.clone();
        let clock = Clock::new(self.timeouts);
        tokio::spawn(async move {
            let _admitted = admitted;
            let metrics = this.shared.metrics.clone();
            let handler = hyper::service::service_fn({
                let clock = clock.clone();
                move |request| {
                    // In flight, for the clock, until its answer's body has been sent or dropped.
                    let busy = clock.busy();
                    let this = this.clone();
                    async move {
                        Ok::<_, Infallible>(this.handle(request).await.map(|inner| Tracked { inner, _guard: busy }))
                    }
                }
            });
            let io = TokioIo::new(Watched::new(stream, clock.clone()));
            let connection = hyper::server::conn::http1::Builder::new().serve_connection(io, handler);
            tokio::select! {
                served = watcher.watch(connection) => if let Err(e) = served {
                    tracing::debug!("HTTP connection: {e}");
                },
                // Nothing is in flight: dropping the connection loses no request.
                expired = clock.expired() => {
                    metrics.timed_out(expired.label());
                    tracing::debug!("HTTP connection from {peer}: closed, no request for too long ({})", expired.label());
                }
            }
        });
    }

    async fn handle(&self, request: hyper::Request<hyper::body::Incoming>) -> Response {
        // Health for load balancers and orchestrators: no token, nothing secret.
        match request.uri().path() {
            "/healthz" => return text(hyper::StatusCode::OK, "text/plain", "ok\n".into()),
            "/readyz" => {
                let authorization = request.headers().get(hyper::header::AUTHORIZATION);
                let details = self.token.as_ref().is_some_and(|t| t.accepts(authorization.map(|v| v.as_bytes())));
                return readiness(&self.shared, details);
            }
            _ => {}
        }
        let metrics = request.uri().path() == "/metrics";
        if let Some(token) = self.token.as_ref().filter(|_| !(metrics && self.metrics_no_auth)) {
            let authorization = request.headers().get(hyper::header::AUTHORIZATION);
            if !token.accepts(authorization.map(|v| v.as_bytes())) {
                return unauthorized();
            }
        }
        if metrics {
            return text(hyper::StatusCode::OK, super::metrics::CONTENT_TYPE, self.shared.metrics.render());
        }
        if request.uri().path() != PATH {
            let body = Full::new(Bytes::from(format!("Not Found: the MCP endpoint is {PATH}\n"))).boxed();
            let mut response = hyper::Response::new(body);
            *response.status_mut() = hyper::StatusCode::NOT_FOUND;
            return response;
        }
        // A POST's answer counts as in flight until its body has been sent (or dropped); the
        // standalone GET stream of server notifications lasts as long as the session and is
        // not waited for.
        let guard = (request.method() == hyper::Method::POST).then(|| InFlight::enter(&self.in_flight));
        let (parts, body) = match read_body(request).await {
            Ok(r) => r,
            Err(response) => return response,
        };
        let response = match guard {
            Some(_) => match self.fast.serve(&self.shared, &parts, &body).await {
                Outcome::Answered(response) => Some(response),
                Outcome::NotPlain => None,
            },
            None => None,
        };
        let response = match response {
            Some(response) => response,
            None => {
                let mut service = self.service.clone();
                let Ok(response) = service.call(hyper::Request::from_parts(parts, Full::new(body))).await;
                response
            }
        };
        match guard {
            Some(guard) => response.map(|inner| Tracked { inner, _guard: guard }.boxed()),
            None => response,
        }
    }
}

/// One answer in flight, counted until dropped.
struct InFlight(Arc<AtomicUsize>);

impl InFlight {
    fn enter(count: &Arc<AtomicUsize>) -> InFlight {
        count.fetch_add(1, Ordering::AcqRel);
        InFlight(count.clone())
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

/// A response body that holds a guard (an [`InFlight`], a connection's
/// [`Busy`](super::timeouts::Busy)) until it is finished or dropped.
struct Tracked<G> {
    inner: http_body_util::combinators::BoxBody<Bytes, Infallible>,
    _guard: G,
}

impl<G: Unpin> http_body::Body for Tracked<G> {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Result<http_body::Frame<Bytes>, Infallible>>> {
        std::pin::Pin::new(&mut self.inner).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.inner.size_hint()
    }
}

/// The request's head and its body read whole, or the answer to a body over [`MAX_BODY_BYTES`]
/// (refused from its `Content-Length` before reading it, else when the limit is passed).
async fn read_body(
    request: hyper::Request<hyper::body::Incoming>,
) -> Result<(hyper::http::request::Parts, Bytes), Response> {
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
        Ok(collected) => Ok((parts, collected.to_bytes())),
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

/// A plain answer.
pub(super) fn text(status: hyper::StatusCode, content_type: &'static str, body: String) -> Response {
    let mut response = hyper::Response::new(Full::new(Bytes::from(body)).boxed());
    *response.status_mut() = status;
    response.headers_mut().insert(hyper::header::CONTENT_TYPE, hyper::header::HeaderValue::from_static(content_type));
    response
}

/// `/readyz`: 200 with the number of tools offered, or 503 while draining. With `details` (the
/// request carries the bearer token) also why: why the last reload failed, if it did (the
/// loaded tools still answer), and why the server is not ready. Without the token those stay
/// out: `/readyz` answers anyone, with any `Host`, and a reload error quotes the config
/// (paths, hook command lines and their arguments). Under `--no-auth` there is no token and
/// so no details: the reload error is on stderr.
fn readiness(shared: &Shared, details: bool) -> Response {
    let tools = shared.runtime().tools().count();
    let mut body = serde_json::json!({"ready": true, "tools": tools});
    if let Some(why) = shared.reload_error().filter(|_| details) {
        body["last_reload_error"] = why.into();
    }
    let status = match shared.not_ready() {
        None => hyper::StatusCode::OK,
        Some(why) => {
            body["ready"] = false.into();
            if details {
                body["reason"] = why.into();
            }
            hyper::StatusCode::SERVICE_UNAVAILABLE
        }
    };
    text(status, "application/json", format!("{body}\n"))
}

/// Close a connection over a limit: a 503 if the socket takes it at once (a client then knows
/// why), never waiting for it, and the connection dropped.
fn refuse(stream: &tokio::net::TcpStream) {
    const BUSY: &[u8] = b"HTTP/1.1 503 Service Unavailable\r\nContent-Type: text/plain\r\nContent-Length: 21\r\n\
                          Connection: close\r\n\r\ntoo many connections\n";
    let _ = stream.try_write(BUSY);
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
