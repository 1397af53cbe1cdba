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
//!   pattern names literally (`127.0.0.1:8080`), that `*` allows, or that a granted name
//!   resolved to in this call, on a port the pattern of that name allows. A lookup cannot be
//!   used to reach anything else: the connection is pinned to what the lookup returned. UDP
//!   follows the same rule: a datagram is sent (or a UDP socket connected) only to such an
//!   address, and a datagram from any other address is dropped before the guest sees it.
//!   Binding is allowed only for the wildcard address and port 0 (the implicit bind of a
//!   connect or first send); listening and accepting stay off: a tool is a client, never a
//!   server.
//! - **Address ranges**: `*` and names never reach loopback, private, link-local, metadata and
//!   other non-public addresses ([`toolhost_policy::IpRange`]), whatever a name resolves to
//!   (DNS rebinding) and whatever address the guest writes under `*`; only a pattern naming
//!   the address literally, `localhost` by name (loopback only), or the tool's
//!   `allow_private_network` opens them ([`toolhost_policy::check_address`]). This is checked
//!   on the address each connection goes to, not at lookup: the lookup shadow returns every
//!   address, so that a guest trying a refused one gets `access-denied` (and the result says
//!   why) rather than a name with no address, and a client that tries each address in turn
//!   goes on to the public ones.
//!
//! - **HTTP** (`wasi:http/outgoing-handler`): the host sends the request itself; see
//!   http.rs, which asks [`NetAccess::http_allowed`] before any lookup or connection.
//!
//! Refusals reach the guest as the WASI socket error `access-denied` (or `HTTP-request-denied`),
//! and are remembered (see [`NetAccess::refusals`]) so that a failed call's result can say which
//! host was refused, by which rule, and how to allow it. The call's network limits ([`NetLimits`]) are counted here too, and each
//! breach is remembered for the result ([`NetAccess::limit_note`]).

use std::collections::{BTreeSet, HashMap, HashSet};
use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use toolhost_policy::{
    AddressRefusal, EffectiveGrant, HostPattern, IpRange, Limits, NetPattern, PortPattern, WEB_PORTS, check_address,
    normalize_host,
};
use wasmtime_wasi::sockets::SocketAddrUse;

mod name_lookup;

pub(crate) use name_lookup::{GuardedLookup, add_to_linker};

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

/// Something the sandbox refused a call.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Refusal {
    /// Nothing in the grant names it: `host`, `host:port`, `name:port (address)` or `address`.
    NotGranted(String),
    /// Only a name or `*` covers `addr`, and it lies in a range those never reach; `name` is
    /// what it was resolved from, if anything.
    Range { addr: SocketAddr, name: Option<String>, range: IpRange },
}

impl Refusal {
    /// For a refusal by [`check_address`] of `addr`, resolved from `name` (if anything).
    fn of(refusal: AddressRefusal, addr: SocketAddr, name: Option<&str>) -> Refusal {
        // `::ffff:127.0.0.1` is 127.0.0.1, and is shown (and suggested as a grant) as such.
        let addr = SocketAddr::new(addr.ip().to_canonical(), addr.port());
        match refusal {
            AddressRefusal::Range(range) => Refusal::Range { addr, name: name.map(str::to_string), range },
            AddressRefusal::NotGranted => Refusal::NotGranted(match name {
                Some(name) => format!("{name}:{} ({addr})", addr.port()),
                None => addr.to_string(),
            }),
        }
    }

    /// `host`, `name:port (address)`, or `name:port (address: loopback)` for a range.
    fn shown(&self) -> String {
        match self {
            Refusal::NotGranted(shown) => shown.clone(),
            Refusal::Range { addr, name: Some(name), range } => {
                format!("{name}:{} ({addr}: {})", addr.port(), range.name())
            }
            Refusal::Range { addr, name: None, range } => format!("{addr} ({})", range.name()),
        }
    }

    /// For a range refusal, the sentence saying which rule refused and how to allow it.
    fn range_sentence(&self, tool: &str) -> Option<String> {
        let Refusal::Range { addr, name, range } = self else { return None };
        let port = if WEB_PORTS.contains(&addr.port()) { PortPattern::Web } else { PortPattern::Exact(addr.port()) };
        let literal = NetPattern { host: HostPattern::Ip(addr.ip()), port };
        let from = name.as_ref().map(|n| format!(" (resolved from {n})")).unwrap_or_default();
        let by_name = match name {
            Some(n) if *range == IpRange::Loopback && normalize_host(n) == "localhost" => {
                let by_name = NetPattern { host: HostPattern::Name("localhost".into()), port };
                format!("grant `localhost` by name (net = [\"{by_name}\"]), ")
            }
            _ => String::new(),
        };
        Some(format!(
            "net: {}{from} is {range}; a grant of \"*\" or of a name never reaches loopback, private, link-local \
             or other non-public addresses: {by_name}grant the address literally (net = [\"{literal}\"]) or set \
             [tools.{tool}] allow_private_network = true.",
            addr.ip()
        ))
    }
}

/// What one call may reach over the network, and what it learned, was refused and ran into.
#[derive(Debug, Default)]
pub(crate) struct NetAccess {
    patterns: Arc<[NetPattern]>,
    /// Whether names and `*` may reach non-public addresses (see [`check_address`]).
    allow_private_network: bool,
    limits: NetLimits,
    /// Addresses that granted names resolved to in this call, with those names.
    learned: Mutex<HashMap<IpAddr, BTreeSet<String>>>,
    /// What was refused, first refusals first.
    refused: Mutex<Vec<Refusal>>,
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
    /// Where the hosts this call was allowed or refused go, for the audit log (see
    /// [`HostLog`]); `None` when nobody listens.
    host_log: Option<HostLog>,
}

/// A grant's network patterns, parsed once when the tool is loaded. A pattern that does not
/// parse grants nothing (and is logged; loading refuses a config that holds one).
pub(crate) fn compile_patterns(grant: &[String]) -> Arc<[NetPattern]> {
    grant
        .iter()
        .filter_map(|p| match p.parse::<NetPattern>() {
            Ok(p) => Some(p),
            Err(e) => {
                tracing::warn!("{e}; it grants nothing");
                None
            }
        })
        .collect()
}

/// The `host:port` (or address) of every HTTP request and connect a call tried, each once,
/// refused ones marked `(refused)`: what the audit log records as hosts contacted.
pub(crate) type HostLog = Arc<Mutex<BTreeSet<String>>>;

/// Distinct hosts logged per call at most; past it, one [`MORE_HOSTS`] entry says so.
const MAX_HOSTS_LOGGED: usize = 256;

/// The entry that stands for hosts past [`MAX_HOSTS_LOGGED`] (sorts after every host name).
const MORE_HOSTS: &str = "~ and more hosts not listed";

/// Holds one of a call's HTTP connection slots; dropping it frees the slot.
pub(crate) struct ConnectionSlot(Arc<NetAccess>);

impl Drop for ConnectionSlot {
    fn drop(&mut self) {
        self.0.open_http.fetch_sub(1, Ordering::AcqRel);
    }
}

impl NetAccess {
    /// From a grant's patterns (compiled at load, [`compile_patterns`]) and the call's limits.
    pub(crate) fn new(patterns: Arc<[NetPattern]>, limits: NetLimits) -> Self {
        NetAccess { patterns, limits, ..NetAccess::default() }
    }

    /// For a call with `grant` and its compiled `patterns` (no grant: no network at all).
    pub(crate) fn for_grant(grant: Option<&EffectiveGrant>, patterns: &Arc<[NetPattern]>, limits: NetLimits) -> Self {
        match grant {
            Some(g) => NetAccess::new(patterns.clone(), limits).allow_private_network(g.allow_private_network),
            None => NetAccess::new(Arc::from([]), limits),
        }
    }

    /// Let names and `*` reach loopback, private and link-local addresses too.
    pub(crate) fn allow_private_network(mut self, allow: bool) -> Self {
        self.allow_private_network = allow;
        self
    }

    /// Record every host this call is allowed or refused into `log`.
    pub(crate) fn log_hosts(mut self, log: Option<HostLog>) -> Self {
        self.host_log = log;
        self
    }

    fn note_host(&self, host: impl std::fmt::Display, allowed: bool) {
        if let Some(log) = &self.host_log {
            let entry = if allowed { host.to_string() } else { format!("{host} (refused)") };
            let mut log = log.lock().unwrap_or_else(|e| e.into_inner());
            // A tool trying one address after another must not grow the host's memory.
            if log.len() < MAX_HOSTS_LOGGED {
                log.insert(entry);
            } else if !log.contains(&entry) {
                log.insert(MORE_HOSTS.to_string());
            }
        }
    }

    pub(crate) fn limits(&self) -> NetLimits {
        self.limits
    }

    /// Whether an HTTP request to `host:port` may be sent. `host` is the URI's host (a name,
    /// an IPv4 address or a bracketed IPv6 address).
    pub(crate) fn http_allowed(&self, host: &str, port: u16) -> bool {
        let ok = self.patterns.iter().any(|p| p.matches(host, port));
        self.note_host(format_args!("{host}:{port}"), ok);
        if !ok {
            // A web port needs no port in the grant that would allow it.
            let shown = if WEB_PORTS.contains(&port) { host.to_string() } else { format!("{host}:{port}") };
            self.refuse(Refusal::NotGranted(shown));
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
            self.refuse(Refusal::NotGranted(name.to_string()));
        }
        ok
    }

    /// The addresses an HTTP request to `host` (a name or an IP literal, already allowed by
    /// [`http_allowed`](Self::http_allowed)) may connect to, out of those it resolved to:
    /// with `*` or a name, only public ones (see [`check_address`]). When none remain, each
    /// refusal is remembered; when some do, the others are left out silently.
    pub(crate) fn http_addresses(&self, host: &str, addrs: Vec<SocketAddr>) -> Vec<SocketAddr> {
        let host = normalize_host(host);
        let name = host.parse::<IpAddr>().is_err().then_some(host.as_str());
        let (allowed, refused): (Vec<_>, Vec<_>) = addrs
            .into_iter()
            .map(|a| (a, check_address(&self.patterns, self.allow_private_network, a.ip(), a.port(), name)))
            .partition(|(_, r)| r.is_ok());
        if allowed.is_empty() {
            for (addr, r) in refused {
                if let Err(r) = r {
                    tracing::debug!("HTTP request to {host} refused: {addr} is out of reach ({r:?})");
                    self.refuse(Refusal::of(r, addr, name));
                }
            }
        }
        allowed.into_iter().map(|(a, _)| a).collect()
    }

    /// Remember that the granted `name` resolved to `ip`.
    fn learn(&self, name: &str, ip: IpAddr) {
        let mut learned = self.learned.lock().unwrap_or_else(|e| e.into_inner());
        learned.entry(ip.to_canonical()).or_default().insert(name.to_string());
    }

    /// Whether `addr` may be reached: a pattern names it literally, `*` allows its port, or a
    /// granted name this call looked up resolved to it and a pattern of that name allows the
    /// port; through `*` or a name, only if it is public (or the tool may reach private
    /// networks; see [`check_address`]).
    fn reachable(&self, addr: SocketAddr) -> Result<(), Refusal> {
        let (ip, port) = (addr.ip().to_canonical(), addr.port());
        let names = self.learned.lock().unwrap_or_else(|e| e.into_inner()).get(&ip).cloned().unwrap_or_default();
        let names: Vec<&str> = names.iter().map(String::as_str).collect();
        check_address(&self.patterns, self.allow_private_network, ip, port, names.iter().copied()).map_err(|r| {
            // Name the name whose pattern covers the port, if one does.
            let named = names.iter().find(|n| self.patterns.iter().any(|p| p.matches(n, port)));
            Refusal::of(r, addr, named.or(names.first()).copied())
        })
    }

    /// Whether a TCP connect (or a UDP send) to `addr` is allowed; a refusal is remembered.
    pub(crate) fn connect_allowed(&self, addr: SocketAddr) -> bool {
        let ok = self.reachable(addr).map_err(|r| self.refuse(r)).is_ok();
        self.note_host(addr, ok);
        ok
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

    fn refuse(&self, what: Refusal) {
        tracing::debug!("network access refused: {}", what.shown());
        let mut refused = self.refused.lock().unwrap_or_else(|e| e.into_inner());
        if refused.len() < MAX_REFUSALS && !refused.contains(&what) {
            refused.push(what);
        }
    }

    /// What this call was refused so far (`host`, `host:port (address)`, `address`, or
    /// `name:port (address: range)` for an address out of reach of names and `*`).
    #[cfg(test)]
    fn refusals(&self) -> Vec<String> {
        self.refused.lock().unwrap_or_else(|e| e.into_inner()).iter().map(Refusal::shown).collect()
    }

    /// Sentences for a failed call's result: one naming the hosts no grant covered and the
    /// grants that would allow them, then one per address refused for its range, saying how to
    /// allow it; `None` if nothing was refused.
    fn refusal_note(&self, tool: &str) -> Option<String> {
        let refused = self.refused.lock().unwrap_or_else(|e| e.into_inner()).clone();
        let not_granted: Vec<&String> = refused
            .iter()
            .filter_map(|r| match r {
                Refusal::NotGranted(shown) => Some(shown),
                Refusal::Range { .. } => None,
            })
            .collect();
        let mut parts = Vec::new();
        if !not_granted.is_empty() {
            let grants: Vec<String> = not_granted
                .iter()
                .map(|r| {
                    // `name:port (addr)` → `name:port`; a bare name → the name (web ports).
                    let grant = r.split(' ').next().unwrap_or(r);
                    format!("{grant:?}")
                })
                .collect();
            let shown: Vec<&str> = not_granted.iter().map(|s| s.as_str()).collect();
            parts.push(format!(
                "The sandbox refused network access to {}; a grant such as `[tools.{tool}] grant = {{ net = [{}] }}` \
                 would allow it.",
                shown.join(", "),
                grants.join(", ")
            ));
        }
        parts.extend(refused.iter().filter_map(|r| r.range_sentence(tool)));
        (!parts.is_empty()).then(|| parts.join("\n"))
    }
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
            compile_patterns(&["localhost:8080".into(), "10.0.0.1:22".into(), "bad pattern".into()]),
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

    fn addr(s: &str) -> SocketAddr {
        s.parse().unwrap()
    }

    #[test]
    fn names_and_star_never_reach_private_addresses() {
        let net = NetAccess::new(compile_patterns(&["*".into()]), NetLimits::default());
        // A public address, literal or resolved: allowed.
        assert!(net.check(addr("93.184.215.14:443"), SocketAddrUse::TcpConnect));
        // `*` does not name 127.0.0.1 literally, nor its IPv4-mapped form.
        assert!(!net.check(addr("127.0.0.1:8080"), SocketAddrUse::TcpConnect));
        assert!(!net.check(addr("[::ffff:127.0.0.1]:8080"), SocketAddrUse::TcpConnect));
        // DNS rebinding: a name `*` covers that resolves to the metadata service.
        net.learn("rebind.example", "169.254.169.254".parse().unwrap());
        assert!(!net.check(addr("169.254.169.254:80"), SocketAddrUse::TcpConnect));
        // UDP alike: nothing sent to a private address, nothing heard from one.
        assert!(!net.check(addr("10.0.0.5:53"), SocketAddrUse::UdpSend));
        assert!(!net.check(addr("10.0.0.5:53"), SocketAddrUse::UdpReceive));
        assert!(net.check(addr("8.8.8.8:53"), SocketAddrUse::UdpSend));
        assert_eq!(
            net.refusals(),
            [
                "127.0.0.1:8080 (loopback)",
                "rebind.example:80 (169.254.169.254:80: cloud metadata)",
                "10.0.0.5:53 (private)"
            ]
        );
        let note = net.failure_note("T").expect("refusals are noted");
        let lines: Vec<&str> = note.lines().collect();
        assert_eq!(
            lines,
            [
                "net: 127.0.0.1 is a loopback address; a grant of \"*\" or of a name never reaches loopback, \
                 private, link-local or other non-public addresses: grant the address literally (net = \
                 [\"127.0.0.1:8080\"]) or set [tools.T] allow_private_network = true.",
                "net: 169.254.169.254 (resolved from rebind.example) is a cloud metadata address; a grant of \"*\" \
                 or of a name never reaches loopback, private, link-local or other non-public addresses: grant the \
                 address literally (net = [\"169.254.169.254\"]) or set [tools.T] allow_private_network = true.",
                "net: 10.0.0.5 is a private address; a grant of \"*\" or of a name never reaches loopback, private, \
                 link-local or other non-public addresses: grant the address literally (net = [\"10.0.0.5:53\"]) or \
                 set [tools.T] allow_private_network = true.",
            ]
        );

        // allow_private_network opens them all.
        let open = NetAccess::new(compile_patterns(&["*".into()]), NetLimits::default()).allow_private_network(true);
        assert!(open.check(addr("127.0.0.1:8080"), SocketAddrUse::TcpConnect));
        assert!(open.check(addr("169.254.169.254:80"), SocketAddrUse::TcpConnect));
        assert!(open.check(addr("10.0.0.5:53"), SocketAddrUse::UdpSend));
        assert!(open.refusals().is_empty());
    }

    #[test]
    fn a_name_keeps_its_public_addresses_only() {
        let net =
            NetAccess::new(compile_patterns(&["example.com".into(), "localhost:8080".into()]), NetLimits::default());
        let (public, private) = (addr("93.184.215.14:443"), addr("10.0.0.5:443"));
        net.learn("example.com", public.ip());
        net.learn("example.com", private.ip());
        assert!(net.connect_allowed(public));
        assert!(!net.connect_allowed(private));
        // HTTP: the private address is left out; with nothing else left, the request is refused.
        assert_eq!(net.http_addresses("example.com", vec![private, public]), [public]);
        assert_eq!(net.http_addresses("EXAMPLE.com.", vec![private]), []);
        // `localhost` by name: loopback only.
        assert_eq!(net.http_addresses("localhost", vec![addr("127.0.0.1:8080")]), [addr("127.0.0.1:8080")]);
        assert_eq!(net.http_addresses("localhost", vec![addr("10.0.0.9:8080")]), []);
        assert_eq!(
            net.refusals(),
            ["example.com:443 (10.0.0.5:443: private)", "localhost:8080 (10.0.0.9:8080: private)"]
        );
        // The remembered refusal suggests the literal address, not a portless name.
        let note = net.failure_note("T").unwrap();
        assert!(note.starts_with("net: 10.0.0.5 (resolved from example.com) is a private address;"), "{note}");
        assert!(note.contains("(net = [\"10.0.0.5\"])"), "{note}");

        // Loopback through `*` from `localhost`: the note offers the name grant too.
        let star = NetAccess::new(compile_patterns(&["*".into()]), NetLimits::default());
        assert_eq!(star.http_addresses("localhost", vec![addr("127.0.0.1:8080"), addr("[::1]:8080")]), []);
        let note = star.failure_note("T").unwrap();
        assert!(
            note.contains(
                "net: 127.0.0.1 (resolved from localhost) is a loopback address; a grant of \"*\" or of a name \
                 never reaches loopback, private, link-local or other non-public addresses: grant `localhost` by \
                 name (net = [\"localhost:8080\"]), grant the address literally (net = [\"127.0.0.1:8080\"]) or \
                 set [tools.T] allow_private_network = true."
            ),
            "{note}"
        );
        assert!(note.contains("net: ::1 (resolved from localhost) is a loopback address;"), "{note}");
        assert!(note.contains("(net = [\"[::1]:8080\"])"), "{note}");
        // An IP literal in the URL under `*` is not named literally either.
        assert_eq!(star.http_addresses("[::1]", vec![addr("[::1]:9")]), []);
        assert_eq!(star.http_addresses("1.1.1.1", vec![addr("1.1.1.1:443")]), [addr("1.1.1.1:443")]);
    }

    #[test]
    fn limits_are_counted_per_call() {
        let limits = NetLimits { max_response_bytes: 10, max_connections: 2, ..NetLimits::default() };
        // Loopback test addresses under `*`: only with allow_private_network.
        let net = Arc::new(NetAccess::new(compile_patterns(&["*".into()]), limits).allow_private_network(true));
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
