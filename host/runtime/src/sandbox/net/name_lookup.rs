//! Name lookup with the per-name check in front: wasmtime-wasi resolves any name once lookups
//! are allowed, so its `resolve-addresses` is shadowed by one that refuses a name no pattern
//! names before any lookup happens, and `resolve-next-address` records what a granted name
//! resolved to (the addresses connections are then pinned to).

use super::NetAccess;
use std::collections::HashMap;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use wasmtime::component::{HasData, Linker, Resource};
use wasmtime_wasi::p2::bindings::sockets::ip_name_lookup::{self as lookup, ResolveAddressStream};
use wasmtime_wasi::p2::bindings::sockets::network::{self, ErrorCode, IpAddress, Network};
use wasmtime_wasi::p2::{DynPollable, SocketError};
use wasmtime_wasi::sockets::WasiSocketsCtxView;

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
