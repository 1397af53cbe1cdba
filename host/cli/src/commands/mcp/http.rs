//! Streamable HTTP at `http://ADDR/mcp`, loopback only. Against DNS rebinding, a request whose
//! `Host` is not the bound address (or `localhost`) with the bound port is refused (403), and
//! so is one whose `Origin`, when present, is not a page on localhost, 127.0.0.1 or [::1].

use super::server::{McpServer, Shared};
use anyhow::{Context, Result, bail};
use http_body_util::{BodyExt as _, Full};
use hyper::body::Bytes;
use hyper_util::rt::TokioIo;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::Arc;
use tower_service::Service as _;

/// The path the endpoint is served at.
const PATH: &str = "/mcp";

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

pub async fn serve(shared: Arc<Shared>, addr: &str) -> Result<()> {
    let addr = parse_addr(addr)?;
    if !addr.ip().is_loopback() {
        bail!(
            "--http {addr}: toolhost mcp serves only loopback addresses (it has no authentication); \
             put an authenticating proxy in front of it to reach it from elsewhere"
        );
    }
    let listener = tokio::net::TcpListener::bind(addr).await.with_context(|| format!("--http {addr}"))?;
    let bound = listener.local_addr()?;
    let port = bound.port();
    let host = match bound.ip() {
        IpAddr::V4(ip) => ip.to_string(),
        IpAddr::V6(ip) => format!("[{ip}]"),
    };
    let allowed_hosts = [format!("{host}:{port}"), format!("localhost:{port}")];
    let allowed_origins = ["localhost", "127.0.0.1", "[::1]"]
        .iter()
        .flat_map(|h| [format!("http://{h}:*"), format!("https://{h}:*")])
        .collect::<Vec<_>>();
    let config = StreamableHttpServerConfig::default()
        .with_allowed_hosts(allowed_hosts)
        .with_allowed_origins(allowed_origins)
        .enforce_origin_validation();
    let factory = {
        let shared = shared.clone();
        move || Ok(McpServer::new(shared.clone()))
    };
    let service = StreamableHttpService::new(factory, Arc::new(LocalSessionManager::default()), config);
    // Tests and scripts read the address from here (port 0 picks a free one).
    eprintln!("toolhost mcp: listening on http://{host}:{port}{PATH}");

    loop {
        let (stream, _) = match listener.accept().await {
            Ok(s) => s,
            Err(e) => {
                tracing::warn!("accept: {e}");
                continue;
            }
        };
        let service = service.clone();
        tokio::spawn(async move {
            let handler = hyper::service::service_fn(move |request: hyper::Request<hyper::body::Incoming>| {
                let mut service = service.clone();
                async move {
                    if request.uri().path() != PATH {
                        let body = Full::new(Bytes::from(format!("Not Found: the MCP endpoint is {PATH}\n")))
                            .map_err(|never| match never {})
                            .boxed();
                        let mut response = hyper::Response::new(body);
                        *response.status_mut() = hyper::StatusCode::NOT_FOUND;
                        return Ok::<_, std::convert::Infallible>(response);
                    }
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
