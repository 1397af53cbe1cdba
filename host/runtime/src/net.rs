//! # Network access, per call
//!
//! A call's effective grant lists `net(…)` host patterns ([`toolhost_policy::NetPattern`]).
//! With none, the WASI context has TCP, UDP and name lookup switched off and every socket
//! address refused: no network at all, not even DNS. With some, TCP, UDP and name lookup are on and
//! two checks hold every path shut except the granted ones:
//!
//! - **Name lookup** (`wasi:sockets/ip-name-lookup`): wasmtime-wasi 48 resolves any name once
//!   lookups are allowed and offers no per-name hook, so [`add_to_linker`] shadows its
//!   `resolve-addresses` with one that refuses (`access-denied`) a name no pattern names
//!   *before* any lookup happens, then calls wasmtime-wasi's own resolver. Its
//!   `resolve-next-address` records every address a granted name resolved to.
//! - **Connect** (`socket_addr_check`): a TCP connect is allowed only to an address that a
//!   pattern names literally (`127.0.0.1:8080`, `*`), or that a granted name resolved to in
//!   this call, on a port the pattern of that name allows. A lookup cannot be used to reach
//!   anything else: the connection is pinned to what the lookup returned. UDP follows the
//!   same rule: a datagram is sent (or a UDP socket connected) only to such an address, and a
//!   datagram from any other address is dropped before the guest sees it. Binding is allowed
//!   only for the wildcard address and port 0 (the implicit bind of a connect or first send);
//!   listening and accepting stay off: a tool is a client, never a server.
//!
//! - **HTTP** (`wasi:http/outgoing-handler`): the host sends the request itself; see
//!   http.rs, which asks [`NetAccess::http_allowed`] before any lookup or connection.
//!
//! Refusals reach the guest as the WASI socket error `access-denied` (or `HTTP-request-denied`),
//! and are remembered (see [`NetAccess::refusals`]) so that a failed call's result can say which
//! host was refused. The call's network limits ([`NetLimits`]) are counted here too, and each
//! breach is remembered for the result ([`NetAccess::limit_note`]).

use std::collections::{BTreeSet, HashMap, HashSet};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use toolhost_policy::{Limits, NetPattern, WEB_PORTS};
use wasmtime::component::{HasData, Linker, Resource};
use wasmtime_wasi::p2::bindings::sockets::ip_name_lookup::{self as lookup, ResolveAddressStream};
use wasmtime_wasi::p2::bindings::sockets::network::{self, ErrorCode, IpAddress, Network};
use wasmtime_wasi::p2::{DynPollable, SocketError};
use wasmtime_wasi::sockets::{SocketAddrUse, WasiSocketsCtxView};

/// Most refusals remembered per call (a guest looping on refused connects cannot grow it).
const MAX_REFUSALS: usize = 16;

/// The network limits of one call (see [`Limits`] for what each means).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct NetLimits {
    pub max_response_bytes: u64,
    pub connect_timeout: Duration,
    pub first_byte_timeout: Duration,
    pub max_connections: usize,
}

impl NetLimits {
    pub(crate) fn new(limits: &Limits) -> Self {
        NetLimits {
            max_response_bytes: limits.max_response_bytes,
            connect_timeout: Duration::from_millis(limits.connect_timeout_ms),
            first_byte_timeout: Duration::from_millis(limits.first_byte_timeout_ms),
            max_connections: limits.max_connections,
        }
    }
}

impl Default for NetLimits {
    fn default() -> Self {
        NetLimits::new(&Limits::default())
    }
}

/// A network limit a call ran into.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Breach {
    ResponseBytes(u64),
    ConnectTimeout(Duration),
    FirstByteTimeout(Duration),
    Connections(usize),
    SocketConnects(usize),
    UdpPeers(usize),
}

impl std::fmt::Display for Breach {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Breach::ResponseBytes(n) => write!(f, "its HTTP response bodies passed {n} bytes (max_response_bytes)"),
            Breach::ConnectTimeout(d) => {
                write!(f, "connecting took longer than {} ms (connect_timeout_ms)", d.as_millis())
            }
            Breach::FirstByteTimeout(d) => write!(
                f,
                "the server sent nothing for {} ms while a response was awaited (first_byte_timeout_ms)",
                d.as_millis()
            ),
            Breach::Connections(n) => {
                write!(f, "it tried to have more than {n} HTTP connections open (max_connections)")
            }
            Breach::SocketConnects(n) => write!(f, "it tried to make more than {n} TCP connections (max_connections)"),
            Breach::UdpPeers(n) => {
                write!(f, "it tried to send UDP datagrams to more than {n} addresses (max_connections)")
            }
        }
    }
}

/// What one call may reach over the network, and what it learned, was refused and ran into.
#[derive(Debug, Default)]
pub(crate) struct NetAccess {
    patterns: Vec<NetPattern>,
    limits: NetLimits,
    /// Addresses that granted names resolved to in this call, with those names.
    learned: Mutex<HashMap<IpAddr, BTreeSet<String>>>,
    /// What was refused, as `host` or `host:port`, first refusals first.
    refused: Mutex<Vec<String>>,
    /// HTTP connections open now.
    open_http: AtomicUsize,
    /// Raw TCP connects allowed so far.
    socket_connects: AtomicUsize,
    /// The distinct addresses UDP datagrams were sent to.
    udp_peers: Mutex<HashSet<SocketAddr>>,
    /// Response body bytes received so far, over every request.
    body_bytes: AtomicU64,
    /// Limits run into, first first.
    breaches: Mutex<Vec<Breach>>,
    /// Why requests failed on the host's side (a TLS certificate not trusted, a name that did
    /// not resolve): the guest sees only an error code, the model gets these sentences.
    failures: Mutex<Vec<String>>,
}

/// Holds one of a call's HTTP connection slots; dropping it frees the slot.
pub(crate) struct ConnectionSlot(Arc<NetAccess>);

impl Drop for ConnectionSlot {
    fn drop(&mut self) {
        self.0.open_http.fetch_sub(1, Ordering::AcqRel);
    }
}

impl NetAccess {
    /// From a grant's patterns and the call's limits. A pattern that does not parse grants
    /// nothing (and is logged; loading refuses a config that holds one).
    pub(crate) fn new(grant: &[String], limits: NetLimits) -> Self {
        let patterns = grant
            .iter()
            .filter_map(|p| match p.parse::<NetPattern>() {
                Ok(p) => Some(p),
                Err(e) => {
                    tracing::warn!("{e}; it grants nothing");
                    None
                }
            })
            .collect();
        NetAccess { patterns, limits, ..NetAccess::default() }
    }

    pub(crate) fn limits(&self) -> NetLimits {
        self.limits
    }

    /// Whether an HTTP request to `host:port` may be sent. `host` is the URI's host (a name,
    /// an IPv4 address or a bracketed IPv6 address).
    pub(crate) fn http_allowed(&self, host: &str, port: u16) -> bool {
        let ok = self.patterns.iter().any(|p| p.matches(host, port));
        if !ok {
            // A web port needs no port in the grant that would allow it.
            let shown = if WEB_PORTS.contains(&port) { host.to_string() } else { format!("{host}:{port}") };
            self.refuse(shown);
        }
        ok
    }

    /// Take an HTTP connection slot, or record the breach and return `None` when the call
    /// already has `max_connections` open.
    pub(crate) fn open_connection(self: &Arc<Self>) -> Option<ConnectionSlot> {
        let before = self.open_http.fetch_add(1, Ordering::AcqRel);
        if before >= self.limits.max_connections {
            self.open_http.fetch_sub(1, Ordering::AcqRel);
            self.breach(Breach::Connections(self.limits.max_connections));
            return None;
        }
        Some(ConnectionSlot(self.clone()))
    }

    /// Count `n` more response body bytes; `false` (and the breach recorded) once the call's
    /// total passes `max_response_bytes`.
    pub(crate) fn take_body_bytes(&self, n: u64) -> bool {
        let total = self.body_bytes.fetch_add(n, Ordering::AcqRel).saturating_add(n);
        let ok = total <= self.limits.max_response_bytes;
        if !ok {
            self.breach(Breach::ResponseBytes(self.limits.max_response_bytes));
        }
        ok
    }

    /// Remember a limit the call ran into (each kind once).
    pub(crate) fn breach(&self, breach: Breach) {
        let mut breaches = self.breaches.lock().unwrap_or_else(|e| e.into_inner());
        if !breaches.contains(&breach) {
            breaches.push(breach);
        }
    }

    /// Whether the call ran into any network limit.
    pub(crate) fn breached(&self) -> bool {
        !self.breaches.lock().unwrap_or_else(|e| e.into_inner()).is_empty()
    }

    /// Remember why a request failed on the host's side.
    pub(crate) fn fail(&self, why: String) {
        let mut failures = self.failures.lock().unwrap_or_else(|e| e.into_inner());
        if failures.len() < MAX_REFUSALS && !failures.contains(&why) {
            failures.push(why);
        }
    }

    /// The sentences a failed call's result gets about the network: refusals, limits, and
    /// failures on the host's side; `None` when there is nothing to say.
    pub(crate) fn failure_note(&self, tool: &str) -> Option<String> {
        let breaches = self.breaches.lock().unwrap_or_else(|e| e.into_inner()).clone();
        let failures = self.failures.lock().unwrap_or_else(|e| e.into_inner()).clone();
        let mut parts: Vec<String> = self.refusal_note(tool).into_iter().collect();
        if !breaches.is_empty() {
            let each: Vec<String> = breaches.iter().map(ToString::to_string).collect();
            parts.push(format!("The call ran into a network limit: {}.", each.join("; ")));
        }
        parts.extend(failures);
        (!parts.is_empty()).then(|| parts.join("\n"))
    }

    /// Whether any network access is granted.
    pub(crate) fn is_granted(&self) -> bool {
        !self.patterns.is_empty()
    }

    /// Whether `name` may be looked up.
    pub(crate) fn lookup_allowed(&self, name: &str) -> bool {
        let ok = self.patterns.iter().any(|p| p.matches_host(name));
        if !ok {
            self.refuse(name.to_string());
        }
        ok
    }

    /// Remember that the granted `name` resolved to `ip`.
    fn learn(&self, name: &str, ip: IpAddr) {
        let mut learned = self.learned.lock().unwrap_or_else(|e| e.into_inner());
        learned.entry(ip.to_canonical()).or_default().insert(name.to_string());
    }

    /// Whether `addr` may be reached: a pattern names it literally, or a granted name this
    /// call looked up resolved to it and a pattern of that name allows the port. `Err` holds
    /// what to show for a refusal (`name:port (address)` or the address).
    fn reachable(&self, addr: SocketAddr) -> Result<(), String> {
        let ip = addr.ip().to_canonical();
        let port = addr.port();
        if self.patterns.iter().any(|p| p.matches(&ip.to_string(), port)) {
            return Ok(());
        }
        let names = self.learned.lock().unwrap_or_else(|e| e.into_inner()).get(&ip).cloned().unwrap_or_default();
        if names.iter().any(|n| self.patterns.iter().any(|p| p.matches(n, port))) {
            return Ok(());
        }
        Err(match names.iter().next() {
            Some(name) => format!("{name}:{port} ({addr})"),
            None => addr.to_string(),
        })
    }

    /// Whether a TCP connect (or a UDP send) to `addr` is allowed; a refusal is remembered.
    pub(crate) fn connect_allowed(&self, addr: SocketAddr) -> bool {
        self.reachable(addr).map_err(|shown| self.refuse(shown)).is_ok()
    }

    /// Whether a UDP datagram may go to `addr`: the address must be reachable, and a peer
    /// not sent to before must fit under `max_connections`.
    fn udp_send_allowed(&self, addr: SocketAddr) -> bool {
        if !self.connect_allowed(addr) {
            return false;
        }
        let mut peers = self.udp_peers.lock().unwrap_or_else(|e| e.into_inner());
        if peers.contains(&addr) || peers.len() < self.limits.max_connections {
            peers.insert(addr);
            return true;
        }
        drop(peers);
        self.breach(Breach::UdpPeers(self.limits.max_connections));
        false
    }

    /// The `socket_addr_check` of the call's WASI context.
    pub(crate) fn check(&self, addr: SocketAddr, use_: SocketAddrUse) -> bool {
        match use_ {
            SocketAddrUse::TcpConnect => {
                if !self.connect_allowed(addr) {
                    return false;
                }
                let before = self.socket_connects.fetch_add(1, Ordering::AcqRel);
                let ok = before < self.limits.max_connections;
                if !ok {
                    self.breach(Breach::SocketConnects(self.limits.max_connections));
                }
                ok
            }
            // Connecting (or a first send) binds implicitly to the wildcard address first;
            // that is all the binding a client needs.
            SocketAddrUse::TcpBind | SocketAddrUse::UdpBind => addr.ip().is_unspecified() && addr.port() == 0,
            SocketAddrUse::UdpSend => self.udp_send_allowed(addr),
            // A datagram from a host the call may not reach is dropped before the guest sees
            // it; that is not the guest's doing, so it is not remembered as a refusal.
            SocketAddrUse::UdpReceive => self.reachable(addr).is_ok(),
            SocketAddrUse::TcpListen | SocketAddrUse::TcpAccept => false,
        }
    }

    fn refuse(&self, what: String) {
        let mut refused = self.refused.lock().unwrap_or_else(|e| e.into_inner());
        if refused.len() < MAX_REFUSALS && !refused.contains(&what) {
            refused.push(what);
        }
    }

    /// What this call was refused so far (`host`, `host:port (address)` or `address`).
    pub(crate) fn refusals(&self) -> Vec<String> {
        self.refused.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// A sentence for a failed call's result naming the refused hosts and the grants that
    /// would allow them, or `None` if nothing was refused.
    fn refusal_note(&self, tool: &str) -> Option<String> {
        let refused = self.refusals();
        if refused.is_empty() {
            return None;
        }
        let grants: Vec<String> = refused
            .iter()
            .map(|r| {
                // `name:port (addr)` → `name:port`; a bare name → the name (web ports).
                let grant = r.split(' ').next().unwrap_or(r);
                format!("{grant:?}")
            })
            .collect();
        Some(format!(
            "The sandbox refused network access to {}; a grant such as `[tools.{tool}] grant = {{ net = [{}] }}` \
             would allow it.",
            refused.join(", "),
            grants.join(", ")
        ))
    }
}

/// `wasi:sockets/ip-name-lookup` with the per-name check in front of wasmtime-wasi's own.
pub(crate) struct GuardedLookup<'a> {
    pub inner: WasiSocketsCtxView<'a>,
    pub net: &'a NetAccess,
    /// The name each open resolve stream is resolving (by resource rep).
    pub streams: &'a mut HashMap<u32, String>,
}

/// [`HasData`] for [`GuardedLookup`].
pub(crate) struct GuardedLookupData;

impl HasData for GuardedLookupData {
    type Data<'a> = GuardedLookup<'a>;
}

// The conversion of socket errors the lookup functions return.
impl network::Host for GuardedLookup<'_> {
    fn convert_error_code(&mut self, error: SocketError) -> wasmtime::Result<ErrorCode> {
        network::Host::convert_error_code(&mut self.inner, error)
    }

    fn network_error_code(&mut self, err: Resource<wasmtime::Error>) -> wasmtime::Result<Option<ErrorCode>> {
        network::Host::network_error_code(&mut self.inner, err)
    }
}

impl network::HostNetwork for GuardedLookup<'_> {
    fn drop(&mut self, this: Resource<Network>) -> wasmtime::Result<()> {
        network::HostNetwork::drop(&mut self.inner, this)
    }
}

impl lookup::Host for GuardedLookup<'_> {
    fn resolve_addresses(
        &mut self,
        network: Resource<Network>,
        name: String,
    ) -> Result<Resource<ResolveAddressStream>, SocketError> {
        if !self.net.lookup_allowed(&name) {
            tracing::debug!("name lookup of {name:?} refused: no net grant names it");
            return Err(ErrorCode::AccessDenied.into());
        }
        let stream = lookup::Host::resolve_addresses(&mut self.inner, network, name.clone())?;
        self.streams.insert(stream.rep(), name);
        Ok(stream)
    }
}

impl lookup::HostResolveAddressStream for GuardedLookup<'_> {
    fn resolve_next_address(
        &mut self,
        stream: Resource<ResolveAddressStream>,
    ) -> Result<Option<IpAddress>, SocketError> {
        let rep = stream.rep();
        let next = lookup::HostResolveAddressStream::resolve_next_address(&mut self.inner, stream)?;
        if let (Some(addr), Some(name)) = (&next, self.streams.get(&rep)) {
            self.net.learn(name, ip_addr(addr));
        }
        Ok(next)
    }

    fn subscribe(&mut self, stream: Resource<ResolveAddressStream>) -> wasmtime::Result<Resource<DynPollable>> {
        lookup::HostResolveAddressStream::subscribe(&mut self.inner, stream)
    }

    fn drop(&mut self, stream: Resource<ResolveAddressStream>) -> wasmtime::Result<()> {
        self.streams.remove(&stream.rep());
        lookup::HostResolveAddressStream::drop(&mut self.inner, stream)
    }
}

fn ip_addr(addr: &IpAddress) -> IpAddr {
    match *addr {
        IpAddress::Ipv4((a, b, c, d)) => IpAddr::V4(Ipv4Addr::new(a, b, c, d)),
        IpAddress::Ipv6((a, b, c, d, e, f, g, h)) => IpAddr::V6(Ipv6Addr::new(a, b, c, d, e, f, g, h)),
    }
}

/// Replace wasmtime-wasi's `wasi:sockets/ip-name-lookup` in `linker` (which must already hold
/// all of WASI) with the guarded one.
pub(crate) fn add_to_linker<T: Send + 'static>(
    linker: &mut Linker<T>,
    getter: fn(&mut T) -> GuardedLookup<'_>,
) -> wasmtime::Result<()> {
    linker.allow_shadowing(true);
    let result = lookup::add_to_linker::<T, GuardedLookupData>(linker, getter);
    linker.allow_shadowing(false);
    result
}

/// The `socket_addr_check` closure for a call.
pub(crate) fn addr_check(
    net: Arc<NetAccess>,
) -> impl Fn(SocketAddr, SocketAddrUse) -> std::pin::Pin<Box<dyn Future<Output = bool> + Send + Sync>> + Send + Sync + 'static
{
    move |addr, use_| {
        let ok = net.check(addr, use_);
        Box::pin(async move { ok })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn connects_are_pinned_to_granted_lookups() {
        let net = NetAccess::new(
            &["localhost:8080".into(), "10.0.0.1:22".into(), "bad pattern".into()],
            NetLimits::default(),
        );
        let local = "127.0.0.1:8080".parse().unwrap();
        // Not looked up yet: an address is not a name.
        assert!(!net.connect_allowed(local));
        net.learn("localhost", "127.0.0.1".parse().unwrap());
        assert!(net.connect_allowed(local));
        assert!(!net.connect_allowed("127.0.0.1:8081".parse().unwrap()));
        assert!(net.connect_allowed("10.0.0.1:22".parse().unwrap()));
        assert!(!net.connect_allowed("10.0.0.2:22".parse().unwrap()));
        assert!(net.lookup_allowed("LOCALHOST"));
        assert!(!net.lookup_allowed("example.invalid"));
        assert!(!net.check("0.0.0.0:8080".parse().unwrap(), SocketAddrUse::TcpBind));
        assert!(net.check("0.0.0.0:0".parse().unwrap(), SocketAddrUse::TcpBind));
        assert!(!net.check(local, SocketAddrUse::TcpListen));
        // UDP: the same addresses as TCP; a datagram from elsewhere is dropped, not noted.
        assert!(net.check("0.0.0.0:0".parse().unwrap(), SocketAddrUse::UdpBind));
        assert!(!net.check("0.0.0.0:53".parse().unwrap(), SocketAddrUse::UdpBind));
        assert!(net.check(local, SocketAddrUse::UdpSend));
        assert!(net.check(local, SocketAddrUse::UdpReceive));
        assert!(!net.check("127.0.0.1:9".parse().unwrap(), SocketAddrUse::UdpReceive));
        assert_eq!(
            net.refusals(),
            ["127.0.0.1:8080", "localhost:8081 (127.0.0.1:8081)", "10.0.0.2:22", "example.invalid"]
        );
        assert!(net.http_allowed("localhost", 8080));
        assert!(!net.http_allowed("LOCALHOST", 443));
        assert!(!net.http_allowed("10.0.0.1", 8080));
        assert!(!net.breached());
    }

    #[test]
    fn limits_are_counted_per_call() {
        let limits = NetLimits { max_response_bytes: 10, max_connections: 2, ..NetLimits::default() };
        let net = Arc::new(NetAccess::new(&["*".into()], limits));
        let a = net.open_connection().expect("first slot");
        let b = net.open_connection().expect("second slot");
        assert!(net.open_connection().is_none());
        drop(a);
        let c = net.open_connection().expect("a freed slot is reused");
        drop((b, c));
        assert!(net.take_body_bytes(6));
        assert!(net.take_body_bytes(4));
        assert!(!net.take_body_bytes(1));
        // Raw connects count in all: the sandbox cannot see a socket close.
        let addr = "127.0.0.1:1".parse().unwrap();
        assert!(net.check(addr, SocketAddrUse::TcpConnect));
        assert!(net.check(addr, SocketAddrUse::TcpConnect));
        assert!(!net.check(addr, SocketAddrUse::TcpConnect));
        // UDP counts distinct peers: sending again to one already reached is free.
        let (p1, p2, p3) =
            ("127.0.0.1:2".parse().unwrap(), "127.0.0.1:3".parse().unwrap(), "127.0.0.1:4".parse().unwrap());
        assert!(net.check(p1, SocketAddrUse::UdpSend));
        assert!(net.check(p1, SocketAddrUse::UdpSend));
        assert!(net.check(p2, SocketAddrUse::UdpSend));
        assert!(!net.check(p3, SocketAddrUse::UdpSend));
        assert!(net.check(p1, SocketAddrUse::UdpSend));
        let note = net.failure_note("T").expect("breaches are noted");
        assert_eq!(
            note,
            "The call ran into a network limit: it tried to have more than 2 HTTP connections open \
             (max_connections); its HTTP response bodies passed 10 bytes (max_response_bytes); it tried to \
             make more than 2 TCP connections (max_connections); it tried to send UDP datagrams to more than 2 \
             addresses (max_connections)."
        );
    }
}
