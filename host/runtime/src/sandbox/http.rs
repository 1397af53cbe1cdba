//! # `wasi:http` requests, per call
//!
//! wasmtime-wasi-http turns a guest's `outgoing-handler.handle` into an `http::Request` and
//! hands it to [`WasiHttpHooks::send_request`]. Ours ([`HttpHooks`]) sends it itself, so that
//! every step is the call's to decide:
//!
//! 1. The request's host and port are checked against the call's net grant
//!    ([`NetAccess::http_allowed`]) before anything else: a refused request does no name lookup
//!    and opens no connection, and the guest gets `HTTP-request-denied`.
//! 2. A connection slot is taken (at most `max_connections` open per call, else
//!    `connection-limit-reached`).
//! 3. The name is looked up and connected to, then the TLS handshake runs, all within
//!    `connect_timeout_ms` (or the guest's shorter `connect-timeout`). Only the addresses the
//!    grant lets it reach are tried ([`NetAccess::http_addresses`]): through `*` or a name,
//!    public ones only, so a name that resolves to 127.0.0.1 or 169.254.169.254 (DNS
//!    rebinding), or `http://127.0.0.1/` under `*`, gets `HTTP-request-denied`; the address is
//!    connected to as checked, never looked up again.
//! 4. The response must start within `first_byte_timeout_ms`, and each later body chunk too;
//!    body bytes count against the call's `max_response_bytes`
//!    (`HTTP-response-body-size`).
//!
//! Redirects are not followed here: a guest that follows one sends a new request, checked
//! like the first. HTTPS trusts Mozilla's roots (`webpki-roots`, the same on every machine)
//! plus the `[tls] ca_files` of the config ([`tls_config`]).

use crate::sandbox::net::{Breach, ConnectionSlot, NetAccess};
use bytes::Bytes;
use http::uri::Scheme;
use http_body::{Body, Frame};
use http_body_util::BodyExt;
use std::future::Future;
use std::pin::{Pin, pin};
use std::sync::{Arc, OnceLock};
use std::task::{Context, Poll, ready};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpStream;
use wasmtime_wasi_http::io::TokioIo;
use wasmtime_wasi_http::{Error as HttpError, RequestOptions, WasiBody, WasiHttpHooks};

/// The I/O future returned with a response: it drives the connection until it closes.
type ConnectionIo = Box<dyn Future<Output = Result<(), HttpError>> + Send>;

/// The `wasi:http` hooks of one call.
pub(crate) struct HttpHooks {
    pub net: Arc<NetAccess>,
    pub tls: Arc<rustls::ClientConfig>,
}

impl WasiHttpHooks for HttpHooks {
    fn send_request(
        &mut self,
        request: http::Request<WasiBody>,
        options: Option<RequestOptions>,
        _response_error: Box<dyn Future<Output = Result<(), HttpError>> + Send>,
    ) -> Box<dyn Future<Output = Result<(http::Response<WasiBody>, ConnectionIo), HttpError>> + Send> {
        Box::new(send(self.net.clone(), self.tls.clone(), request, options))
    }
}

/// The TLS client settings: Mozilla's roots plus the PEM certificates in `extra_pem`.
///
/// # Errors
///
/// A PEM text that holds no certificate, or a certificate rustls refuses as a root.
pub(crate) fn tls_config(extra_pem: &[(String, Vec<u8>)]) -> Result<Arc<rustls::ClientConfig>, String> {
    use rustls::pki_types::CertificateDer;
    use rustls::pki_types::pem::PemObject;
    static DEFAULT: OnceLock<Arc<rustls::ClientConfig>> = OnceLock::new();
    if extra_pem.is_empty()
        && let Some(config) = DEFAULT.get()
    {
        return Ok(config.clone());
    }
    let mut roots = rustls::RootCertStore { roots: webpki_roots::TLS_SERVER_ROOTS.to_vec() };
    for (origin, pem) in extra_pem {
        let mut added = 0;
        for cert in CertificateDer::pem_slice_iter(pem) {
            let cert = cert.map_err(|e| format!("{origin}: not a PEM certificate: {e}"))?;
            roots.add(cert).map_err(|e| format!("{origin}: not usable as a root certificate: {e}"))?;
            added += 1;
        }
        if added == 0 {
            return Err(format!("{origin}: no PEM certificate (`-----BEGIN CERTIFICATE-----`) in it"));
        }
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("TLS: {e}"))?
        .with_root_certificates(roots)
        .with_no_client_auth();
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    let config = Arc::new(config);
    if extra_pem.is_empty() {
        let _ = DEFAULT.set(config.clone());
    }
    Ok(config)
}

/// The shorter of the guest's wish and the limit, and whether the limit is what applies (only
/// then is running out of time a breach of the call's limit rather than the guest's choice).
fn bounded(wish: Option<Duration>, limit: Duration) -> (Duration, bool) {
    match wish {
        Some(w) if w < limit => (w.max(Duration::from_millis(1)), false),
        _ => (limit, true),
    }
}

/// A TCP or TLS stream, boxed so both take one path.
trait Stream: AsyncRead + AsyncWrite + Send + Sync + Unpin + 'static {}
impl<T: AsyncRead + AsyncWrite + Send + Sync + Unpin + 'static> Stream for T {}

async fn send(
    net: Arc<NetAccess>,
    tls: Arc<rustls::ClientConfig>,
    mut request: http::Request<WasiBody>,
    options: Option<RequestOptions>,
) -> Result<(http::Response<WasiBody>, ConnectionIo), HttpError> {
    let uri = request.uri().clone();
    let https = uri.scheme() == Some(&Scheme::HTTPS);
    let authority = uri.authority().ok_or(HttpError::HttpRequestUriInvalid)?;
    let host = authority.host();
    let port = authority.port_u16().unwrap_or(if https { 443 } else { 80 });
    if !net.http_allowed(host, port) {
        tracing::debug!("HTTP request to {host}:{port} refused: no net grant covers it");
        return Err(HttpError::HttpRequestDenied);
    }
    let slot = net.open_connection().ok_or(HttpError::ConnectionLimitReached)?;
    let limits = net.limits();

    let (connect_timeout, connect_is_limit) = bounded(options.and_then(|o| o.connect_timeout), limits.connect_timeout);
    let stream = match tokio::time::timeout(connect_timeout, connect(&net, &tls, host, port, https)).await {
        Ok(stream) => stream?,
        Err(_) => {
            if connect_is_limit {
                net.breach(Breach::ConnectTimeout(connect_timeout));
            }
            return Err(HttpError::ConnectionTimeout);
        }
    };
    let (mut sender, conn) = hyper::client::conn::http1::Builder::new().handshake(TokioIo::new(stream)).await?;

    // The request line carries only the path: scheme and authority are for proxies.
    let path = uri.path_and_query().map_or("/", |p| p.as_str());
    *request.uri_mut() =
        http::Uri::builder().path_and_query(path).build().map_err(|_| HttpError::HttpRequestUriInvalid)?;

    let (first_byte, first_byte_is_limit) =
        bounded(options.and_then(|o| o.first_byte_timeout), limits.first_byte_timeout);
    let (between, between_is_limit) = bounded(options.and_then(|o| o.between_bytes_timeout), limits.first_byte_timeout);

    let response = tokio::time::timeout(first_byte, sender.send_request(request));
    let mut response = pin!(response);
    let mut conn = Some(conn);
    // Wait for the response while driving the connection's I/O.
    let response = std::future::poll_fn(|cx| match response.as_mut().poll(cx) {
        Poll::Ready(r) => Poll::Ready(r),
        Poll::Pending => {
            let Some(c) = conn.as_mut() else { return Poll::Pending };
            let closed = ready!(Pin::new(c).poll(cx));
            conn = None;
            match closed {
                Ok(()) => response.as_mut().poll(cx),
                Err(e) => Poll::Ready(Ok(Err(e))),
            }
        }
    })
    .await;
    let response = match response {
        Ok(r) => r.map_err(HttpError::from)?,
        Err(_) => {
            if first_byte_is_limit {
                net.breach(Breach::FirstByteTimeout(first_byte));
            }
            return Err(HttpError::ConnectionReadTimeout);
        }
    };
    let body_net = net.clone();
    let response = response.map(|incoming| {
        LimitedBody { incoming, net: body_net, between, between_is_limit, timer: Box::pin(tokio::time::sleep(between)) }
            .boxed_unsync()
    });
    let io: ConnectionIo = Box::new(async move {
        // The slot is held until the connection closes (or the guest drops the response).
        let _slot: ConnectionSlot = slot;
        match conn {
            Some(conn) => conn.await.map_err(HttpError::from),
            None => Ok(()),
        }
    });
    Ok((response, io))
}

/// Look `host` up, connect to the first address that answers, and shake hands over TLS for
/// HTTPS. Failures are recorded on `net` in words; the guest gets an error code.
async fn connect(
    net: &NetAccess,
    tls: &Arc<rustls::ClientConfig>,
    host: &str,
    port: u16,
    https: bool,
) -> Result<Box<dyn Stream>, HttpError> {
    let bare = host.trim_start_matches('[').trim_end_matches(']');
    let resolved: Vec<_> = match tokio::net::lookup_host((bare, port)).await {
        Ok(addrs) => addrs.collect(),
        Err(e) => {
            net.fail(format!("The name {bare} did not resolve: {e}."));
            return Err(HttpError::DnsError { rcode: Some("address not found".into()), info_code: None });
        }
    };
    let addrs = net.http_addresses(host, resolved.clone());
    if addrs.is_empty() && !resolved.is_empty() {
        tracing::debug!("HTTP request to {host}:{port} refused: every address it resolved to is out of reach");
        return Err(HttpError::HttpRequestDenied);
    }
    let mut last = None;
    let mut tcp = None;
    for addr in &addrs {
        match TcpStream::connect(addr).await {
            Ok(s) => {
                tcp = Some(s);
                break;
            }
            Err(e) => last = Some(e),
        }
    }
    let Some(tcp) = tcp else {
        let e = last.unwrap_or_else(|| std::io::Error::other("the name has no address"));
        net.fail(format!("Connecting to {host}:{port} failed: {e}."));
        return Err(match e.kind() {
            std::io::ErrorKind::ConnectionRefused => HttpError::ConnectionRefused,
            _ => HttpError::DestinationUnavailable,
        });
    };
    let _ = tcp.set_nodelay(true);
    if !https {
        return Ok(Box::new(tcp));
    }
    let name =
        rustls::pki_types::ServerName::try_from(bare.to_string()).map_err(|_| HttpError::HttpRequestUriInvalid)?;
    match tokio_rustls::TlsConnector::from(tls.clone()).connect(name, tcp).await {
        Ok(stream) => Ok(Box::new(stream)),
        Err(e) => {
            let rustls_error = e.get_ref().and_then(|inner| inner.downcast_ref::<rustls::Error>());
            net.fail(format!(
                "The TLS handshake with {host}:{port} failed: {e}. HTTPS trusts Mozilla's root certificates and \
                 the `[tls] ca_files` of the config."
            ));
            Err(match rustls_error {
                Some(rustls::Error::InvalidCertificate(_)) => HttpError::TlsCertificateError,
                Some(rustls::Error::AlertReceived(alert)) => HttpError::TlsAlertReceived {
                    alert_id: Some(u8::from(*alert)),
                    alert_message: Some(format!("{alert:?}")),
                },
                _ => HttpError::TlsProtocolError,
            })
        }
    }
}

/// A response body that counts its bytes against the call's limit and times out when the
/// server goes quiet.
struct LimitedBody {
    incoming: hyper::body::Incoming,
    net: Arc<NetAccess>,
    between: Duration,
    between_is_limit: bool,
    timer: Pin<Box<tokio::time::Sleep>>,
}

impl Body for LimitedBody {
    type Data = Bytes;
    type Error = HttpError;

    fn poll_frame(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, HttpError>>> {
        match Pin::new(&mut self.incoming).poll_frame(cx) {
            Poll::Ready(None) => Poll::Ready(None),
            Poll::Ready(Some(Err(e))) => {
                Poll::Ready(Some(Err(if e.is_timeout() { HttpError::HttpResponseTimeout } else { e.into() })))
            }
            Poll::Ready(Some(Ok(frame))) => {
                if let Some(data) = frame.data_ref()
                    && !self.net.take_body_bytes(data.len() as u64)
                {
                    let limit = self.net.limits().max_response_bytes;
                    return Poll::Ready(Some(Err(HttpError::HttpResponseBodySize(Some(limit)))));
                }
                let next = tokio::time::Instant::now() + self.between;
                self.timer.as_mut().reset(next);
                Poll::Ready(Some(Ok(frame)))
            }
            Poll::Pending => {
                ready!(self.timer.as_mut().poll(cx));
                if self.between_is_limit {
                    self.net.breach(Breach::FirstByteTimeout(self.between));
                }
                Poll::Ready(Some(Err(HttpError::ConnectionReadTimeout)))
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        self.incoming.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.incoming.size_hint()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_guest_may_shorten_a_timeout_but_not_lengthen_it() {
        let limit = Duration::from_secs(10);
        assert_eq!(bounded(None, limit), (limit, true));
        assert_eq!(bounded(Some(Duration::from_secs(60)), limit), (limit, true));
        assert_eq!(bounded(Some(Duration::from_secs(2)), limit), (Duration::from_secs(2), false));
        assert_eq!(bounded(Some(Duration::ZERO), limit), (Duration::from_millis(1), false));
    }

    #[test]
    fn extra_roots_must_be_certificates() {
        assert!(tls_config(&[]).is_ok());
        let err = tls_config(&[("ca.pem".into(), b"not a certificate".to_vec())]).unwrap_err();
        assert!(err.starts_with("ca.pem: no PEM certificate"), "{err}");
    }
}
