//! # Network access, per call
//!
//! A call's effective grant lists `net(…)` host patterns ([`toolhost_policy::NetPattern`]).
//! With none, the WASI context has TCP, UDP and name lookup switched off and every socket
//! address refused: no network at all, not even DNS. With some, TCP and name lookup are on and
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
//!   anything else: the connection is pinned to what the lookup returned. Binding is allowed
//!   only for the wildcard address and port 0 (the implicit bind of a connect); listening,
//!   accepting and UDP stay off.
//!
//! Refusals reach the guest as the WASI socket error `access-denied`, and are remembered (see
//! [`NetAccess::refusals`]) so that a failed call's result can say which host was refused.

use std::collections::{BTreeSet, HashMap};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::{Arc, Mutex};
use toolhost_policy::NetPattern;
use wasmtime::component::{HasData, Linker, Resource};
use wasmtime_wasi::p2::bindings::sockets::ip_name_lookup::{self as lookup, ResolveAddressStream};
use wasmtime_wasi::p2::bindings::sockets::network::{self, ErrorCode, IpAddress, Network};
use wasmtime_wasi::p2::{DynPollable, SocketError};
use wasmtime_wasi::sockets::{SocketAddrUse, WasiSocketsCtxView};

/// Most refusals remembered per call (a guest looping on refused connects cannot grow it).
const MAX_REFUSALS: usize = 16;

/// What one call may reach over the network, and what it learned and was refused.
#[derive(Debug, Default)]
pub(crate) struct NetAccess {
    patterns: Vec<NetPattern>,
    /// Addresses that granted names resolved to in this call, with those names.
    learned: Mutex<HashMap<IpAddr, BTreeSet<String>>>,
    /// What was refused, as `host` or `host:port`, first refusals first.
    refused: Mutex<Vec<String>>,
}

impl NetAccess {
    /// From a grant's patterns. A pattern that does not parse grants nothing (and is logged).
    pub(crate) fn new(grant: &[String]) -> Self {
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
        NetAccess { patterns, ..NetAccess::default() }
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

    /// Whether a TCP connect to `addr` is allowed.
    pub(crate) fn connect_allowed(&self, addr: SocketAddr) -> bool {
        let ip = addr.ip().to_canonical();
        let port = addr.port();
        if self.patterns.iter().any(|p| p.matches(&ip.to_string(), port)) {
            return true;
        }
        let names = self.learned.lock().unwrap_or_else(|e| e.into_inner()).get(&ip).cloned().unwrap_or_default();
        let ok = names.iter().any(|n| self.patterns.iter().any(|p| p.matches(n, port)));
        if !ok {
            let shown = match names.iter().next() {
                Some(name) => format!("{name}:{port} ({addr})"),
                None => addr.to_string(),
            };
            self.refuse(shown);
        }
        ok
    }

    /// The `socket_addr_check` of the call's WASI context.
    pub(crate) fn check(&self, addr: SocketAddr, use_: SocketAddrUse) -> bool {
        match use_ {
            SocketAddrUse::TcpConnect => self.connect_allowed(addr),
            // Connecting binds implicitly to the wildcard address first; that is all the
            // binding a client needs.
            SocketAddrUse::TcpBind => addr.ip().is_unspecified() && addr.port() == 0,
            _ => false,
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
    pub(crate) fn refusal_note(&self, tool: &str) -> Option<String> {
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
        let net = NetAccess::new(&["localhost:8080".into(), "10.0.0.1:22".into(), "bad pattern".into()]);
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
        assert_eq!(
            net.refusals(),
            ["127.0.0.1:8080", "localhost:8081 (127.0.0.1:8081)", "10.0.0.2:22", "example.invalid"]
        );
    }
}
