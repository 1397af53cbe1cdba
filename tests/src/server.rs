//! Real servers on loopback for the network tests: plain TCP, HTTP and HTTPS (with a CA made
//! for the test run). Each connection is served on its own thread, so a server that holds a
//! connection open does not stop the next one.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream, UdpSocket};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};

/// A loopback server; counts the connections it accepted.
pub struct Server {
    /// Its port on 127.0.0.1.
    pub port: u16,
    hits: Arc<AtomicUsize>,
}

impl Server {
    /// Serve each connection with `handle` on its own thread.
    pub fn serve(handle: impl Fn(TcpStream) + Send + Sync + 'static) -> Server {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let port = listener.local_addr().expect("local address").port();
        let hits = Arc::new(AtomicUsize::new(0));
        let counter = hits.clone();
        let handle = Arc::new(handle);
        std::thread::spawn(move || {
            for conn in listener.incoming() {
                let Ok(conn) = conn else { continue };
                counter.fetch_add(1, Ordering::SeqCst);
                let handle = handle.clone();
                std::thread::spawn(move || handle(conn));
            }
        });
        Server { port, hits }
    }

    /// Answer every connection with `respond(request head)` and close. With `read_request`
    /// false the head is empty and nothing is read first (a greeter).
    pub fn start(read_request: bool, respond: impl Fn(&str) -> String + Send + Sync + 'static) -> Server {
        Server::serve(move |mut conn| {
            let head = if read_request { read_head(&mut conn) } else { String::new() };
            let _ = conn.write_all(respond(&head).as_bytes());
        })
    }

    /// Says `hello from PORT` and closes.
    pub fn greeter() -> Server {
        let slot = Arc::new(OnceLock::new());
        let s = slot.clone();
        let server = Server::start(false, move |_| format!("hello from {}", s.get().unwrap_or(&0)));
        slot.set(server.port).expect("set once");
        server
    }

    /// An HTTP/1.0 server: `/` answers 200 with `body`, anything else 404.
    pub fn http(body: &'static str) -> Server {
        Server::start(true, move |head| {
            if head.starts_with("GET / ") {
                ok_response("text/plain", body)
            } else {
                "HTTP/1.0 404 Not Found\r\nContent-Length: 0\r\n\r\n".into()
            }
        })
    }

    /// Redirects every request to `location`.
    pub fn redirect(location: String) -> Server {
        Server::start(true, move |_| format!("HTTP/1.0 302 Found\r\nLocation: {location}\r\nContent-Length: 0\r\n\r\n"))
    }

    /// Connections accepted so far.
    pub fn hits(&self) -> usize {
        self.hits.load(Ordering::SeqCst)
    }
}

/// A UDP echo server on loopback. To every datagram it first answers from a second socket
/// (another port, so another address: `spoofed from PORT`), then from its own (`echo: …`);
/// a client that must not hear the second socket sees only the echo.
pub struct UdpEcho {
    /// The echo socket's port on 127.0.0.1.
    pub port: u16,
    /// The port the spoofed answers come from.
    pub spoof_port: u16,
    hits: Arc<AtomicUsize>,
}

impl UdpEcho {
    pub fn start() -> UdpEcho {
        let socket = UdpSocket::bind("127.0.0.1:0").expect("bind udp");
        let spoof = UdpSocket::bind("127.0.0.1:0").expect("bind udp");
        let port = socket.local_addr().expect("local address").port();
        let spoof_port = spoof.local_addr().expect("local address").port();
        let hits = Arc::new(AtomicUsize::new(0));
        let counter = hits.clone();
        std::thread::spawn(move || {
            let mut buf = [0u8; 2048];
            while let Ok((n, from)) = socket.recv_from(&mut buf) {
                counter.fetch_add(1, Ordering::SeqCst);
                let _ = spoof.send_to(format!("spoofed from {spoof_port}").as_bytes(), from);
                let mut reply = b"echo: ".to_vec();
                reply.extend_from_slice(&buf[..n]);
                let _ = socket.send_to(&reply, from);
            }
        });
        UdpEcho { port, spoof_port, hits }
    }

    /// Datagrams received so far.
    pub fn hits(&self) -> usize {
        self.hits.load(Ordering::SeqCst)
    }
}

/// A 200 response with a body and its length.
pub fn ok_response(content_type: &str, body: &str) -> String {
    format!("HTTP/1.0 200 OK\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\n\r\n{body}", body.len())
}

/// Read a request head (up to the blank line, or until the peer stops sending).
pub fn read_head(conn: &mut impl Read) -> String {
    let mut head = Vec::new();
    let mut buf = [0u8; 4096];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") {
        match conn.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => head.extend_from_slice(&buf[..n]),
        }
    }
    String::from_utf8_lossy(&head).into_owned()
}

/// A certificate authority made for this test run, and a server certificate it signed for
/// `localhost` and `127.0.0.1` (and any other names asked for).
pub struct TestCa {
    /// The CA certificate, PEM: what a client must trust.
    pub ca_pem: String,
    /// The server certificate, PEM (for a server run by another program).
    pub cert_pem: String,
    /// Its private key, PEM.
    pub key_pem: String,
    config: Arc<rustls::ServerConfig>,
}

impl TestCa {
    /// Make the CA and a server certificate for `localhost` and `127.0.0.1`.
    pub fn new() -> TestCa {
        TestCa::for_names(&[])
    }

    /// Make the CA and a server certificate for `localhost`, `127.0.0.1` and `names`.
    pub fn for_names(names: &[&str]) -> TestCa {
        use rcgen::{BasicConstraints, CertificateParams, CertifiedIssuer, DnType, IsCa, KeyPair};
        let ca_key = KeyPair::generate().expect("CA key");
        let mut ca_params = CertificateParams::new(Vec::<String>::new()).expect("CA params");
        ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        ca_params.distinguished_name.push(DnType::CommonName, "toolhost test CA");
        let ca = CertifiedIssuer::self_signed(ca_params, ca_key).expect("CA certificate");
        let key = KeyPair::generate().expect("server key");
        let mut all = vec!["localhost".to_string(), "127.0.0.1".to_string()];
        all.extend(names.iter().map(|n| n.to_string()));
        let params = CertificateParams::new(all).expect("params");
        let cert = params.signed_by(&key, &ca).expect("server certificate");
        let (cert_pem, key_pem) = (cert.pem(), key.serialize_pem());
        let chain = vec![cert.der().clone()];
        let key = rustls::pki_types::PrivateKeyDer::try_from(key.serialize_der()).expect("key DER");
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let config = rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .expect("protocol versions")
            .with_no_client_auth()
            .with_single_cert(chain, key)
            .expect("server config");
        TestCa { ca_pem: ca.pem(), cert_pem, key_pem, config: Arc::new(config) }
    }

    /// An HTTPS server answering every request with `response` (a whole HTTP response).
    pub fn https(&self, response: String) -> Server {
        let config = self.config.clone();
        Server::serve(move |tcp| {
            let Ok(conn) = rustls::ServerConnection::new(config.clone()) else { return };
            let mut tls = rustls::StreamOwned::new(conn, tcp);
            // A client that rejects the certificate ends the handshake here.
            read_head(&mut tls);
            let _ = tls.write_all(response.as_bytes());
            tls.conn.send_close_notify();
            let _ = tls.flush();
        })
    }
}

impl TestCa {
    /// An HTTPS server of files: `GET /PATH` answers `files[PATH]`, or 404.
    pub fn https_files(&self, files: std::collections::HashMap<String, Vec<u8>>) -> Server {
        let config = self.config.clone();
        let files = Arc::new(files);
        Server::serve(move |tcp| {
            let Ok(conn) = rustls::ServerConnection::new(config.clone()) else { return };
            let mut tls = rustls::StreamOwned::new(conn, tcp);
            let head = read_head(&mut tls);
            let path = head.strip_prefix("GET /").and_then(|rest| rest.split(' ').next()).unwrap_or("");
            let response = match files.get(path) {
                Some(body) => format!("HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n", body.len())
                    .into_bytes()
                    .into_iter()
                    .chain(body.iter().copied())
                    .collect::<Vec<u8>>(),
                None => b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n".to_vec(),
            };
            let _ = tls.write_all(&response);
            tls.conn.send_close_notify();
            let _ = tls.flush();
        })
    }
}

impl Default for TestCa {
    fn default() -> Self {
        TestCa::new()
    }
}
