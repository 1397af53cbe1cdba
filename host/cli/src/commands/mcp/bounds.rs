//! # What connections may hold of `toolhost mcp --http`
//!
//! Every open connection costs a file descriptor and a task before it has shown a token, so
//! without bounds a client that opens connections and never finishes a request takes the
//! process's descriptors: `accept` then fails, and nothing (`/readyz` included) is answered.
//! This module holds the limits ([`Bounds`]), the count of open connections against them
//! ([`Caps`]), and the accept loop's patience when the kernel has no descriptor to give
//! ([`Acceptor`]). How long an admitted connection may wait is in
//! [`timeouts`](super::timeouts).
//!
//! ## Example
//!
//! ```ignore
//! let bounds = Bounds::from_env()?;
//! let caps = Caps::new(&bounds, gauge);
//! let (stream, peer) = acceptor.accept().await;
//! match caps.admit(peer.ip()) {
//!     Ok(admitted) => { /* serve, holding `admitted` until the connection ends */ }
//!     Err(limit) => { /* close `stream` at once */ }
//! }
//! ```

use super::timeouts::Timeouts;
use anyhow::{Context as _, Result, bail};
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::gauge::Gauge;
use std::collections::HashMap;
use std::net::{IpAddr, Ipv6Addr, SocketAddr};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::net::{TcpListener, TcpStream};

/// The most connections open at once, whatever the descriptor limit: far more than the
/// sessions one server's `max_concurrency` can serve, few enough that their buffers stay small.
pub const MAX_CONNECTIONS: usize = 1024;

/// The most connections open at once from one address (an IPv6 /64). A client needs one for
/// a session's event stream and one per call in flight, so 128 serves dozens of agent sessions
/// from one machine, while a single peer cannot take every slot from the others (a load
/// balancer's health checks come from their own address). On loopback every local program is
/// the same peer.
pub const MAX_PER_PEER: usize = 128;

/// How long a connection may take to send a request's head, from its opening (or from the
/// first byte after a pause): generous for any client that means to send one, short enough
/// that a half-sent head holds its slot only briefly.
pub const HEADER_TIMEOUT: Duration = Duration::from_secs(10);

/// How long a kept-alive connection may wait, with no request in flight, for the next one:
/// longer than HTTP clients keep idle connections themselves (reqwest 90 s), so that the
/// client closes first and never sends a request on a connection the server is closing.
pub const IDLE_TIMEOUT: Duration = Duration::from_secs(120);

/// The share of the open-file limit (`RLIMIT_NOFILE`) left to connections: half, the other
/// half for the runtime's own (components, preopened directories of calls, MCP servers'
/// pipes, logs).
const NOFILE_SHARE_DIVISOR: u64 = 2;

/// The limits of one server. Each can be changed through an environment variable (for tests
/// and unusual deployments; a value that does not parse is an error).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Bounds {
    /// `TOOLHOST_MCP_MAX_CONNECTIONS`; default: half the open-file limit, at most
    /// [`MAX_CONNECTIONS`].
    pub max_connections: usize,
    /// `TOOLHOST_MCP_MAX_CONNECTIONS_PER_PEER`; default [`MAX_PER_PEER`].
    pub max_per_peer: usize,
    /// `TOOLHOST_MCP_HEADER_TIMEOUT_MS` and `TOOLHOST_MCP_IDLE_TIMEOUT_MS`; defaults
    /// [`HEADER_TIMEOUT`] and [`IDLE_TIMEOUT`].
    pub timeouts: Timeouts,
}

impl Bounds {
    /// The defaults, with the environment's overrides.
    ///
    /// # Errors
    ///
    /// A variable that is set but is not an integer of at least 1.
    pub fn from_env() -> Result<Bounds> {
        let nofile = rustix::process::getrlimit(rustix::process::Resource::Nofile).current;
        let max_connections = env_number("TOOLHOST_MCP_MAX_CONNECTIONS")?
            .map_or_else(|| connections_for(nofile), |n| usize::try_from(n).unwrap_or(usize::MAX));
        let max_per_peer = env_number("TOOLHOST_MCP_MAX_CONNECTIONS_PER_PEER")?
            .map_or(MAX_PER_PEER, |n| usize::try_from(n).unwrap_or(usize::MAX));
        let head = env_number("TOOLHOST_MCP_HEADER_TIMEOUT_MS")?.map_or(HEADER_TIMEOUT, Duration::from_millis);
        let idle = env_number("TOOLHOST_MCP_IDLE_TIMEOUT_MS")?.map_or(IDLE_TIMEOUT, Duration::from_millis);
        Ok(Bounds { max_connections, max_per_peer, timeouts: Timeouts { head, idle } })
    }
}

/// `name` as an integer of at least 1, if set.
fn env_number(name: &str) -> Result<Option<u64>> {
    let Some(value) = std::env::var_os(name) else { return Ok(None) };
    let text = value.to_str().with_context(|| format!("{name} is not valid UTF-8"))?;
    match text.trim().parse::<u64>() {
        Ok(n) if n >= 1 => Ok(Some(n)),
        _ => bail!("{name} must be an integer of at least 1, got {text:?}"),
    }
}

/// The default connection limit under an open-file limit of `nofile` (`None`: unlimited).
fn connections_for(nofile: Option<u64>) -> usize {
    let share = nofile.map_or(u64::MAX, |n| n / NOFILE_SHARE_DIVISOR);
    usize::try_from(share).unwrap_or(usize::MAX).clamp(1, MAX_CONNECTIONS)
}

/// Which limit refused a connection.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Limit {
    /// [`Bounds::max_connections`].
    Total,
    /// [`Bounds::max_per_peer`].
    Peer,
}

impl Limit {
    /// The metric label.
    pub fn label(self) -> &'static str {
        match self {
            Limit::Total => "total",
            Limit::Peer => "peer",
        }
    }
}

/// The connections open now, by peer, against [`Bounds`].
pub struct Caps {
    max_connections: usize,
    max_per_peer: usize,
    open: Mutex<Open>,
    /// `toolhost_connections`.
    gauge: Gauge,
}

#[derive(Default)]
struct Open {
    total: usize,
    by_peer: HashMap<IpAddr, usize>,
}

impl Caps {
    pub fn new(bounds: &Bounds, gauge: Gauge) -> Arc<Caps> {
        Arc::new(Caps {
            max_connections: bounds.max_connections,
            max_per_peer: bounds.max_per_peer,
            open: Mutex::default(),
            gauge,
        })
    }

    /// Count a new connection from `peer`, or say which limit it would pass. The connection
    /// counts until the returned value is dropped.
    pub fn admit(self: &Arc<Self>, peer: IpAddr) -> Result<Admitted, Limit> {
        let peer = peer_key(peer);
        let mut open = self.open.lock().unwrap_or_else(|e| e.into_inner());
        if open.total >= self.max_connections {
            return Err(Limit::Total);
        }
        let of_peer = open.by_peer.entry(peer).or_default();
        if *of_peer >= self.max_per_peer {
            return Err(Limit::Peer);
        }
        *of_peer += 1;
        open.total += 1;
        self.gauge.inc();
        Ok(Admitted { caps: self.clone(), peer })
    }
}

/// One admitted connection, counted until dropped.
pub struct Admitted {
    caps: Arc<Caps>,
    peer: IpAddr,
}

impl Drop for Admitted {
    fn drop(&mut self) {
        let mut open = self.caps.open.lock().unwrap_or_else(|e| e.into_inner());
        open.total -= 1;
        if let Some(n) = open.by_peer.get_mut(&self.peer) {
            *n -= 1;
            if *n == 0 {
                open.by_peer.remove(&self.peer);
            }
        }
        self.caps.gauge.dec();
    }
}

/// What counts as one peer: an IPv4 address, or an IPv6 /64 (one host's usual share, which
/// would otherwise give it 2^64 peers' worth of connections).
fn peer_key(ip: IpAddr) -> IpAddr {
    match ip.to_canonical() {
        IpAddr::V4(v4) => IpAddr::V4(v4),
        IpAddr::V6(v6) => IpAddr::V6(Ipv6Addr::from(v6.to_bits() & !u128::from(u64::MAX))),
    }
}

/// How long to wait before calling `accept` again after `failures` failures in a row: 10 ms,
/// doubling, at most 1 s. Most failures are the process or the system out of descriptors
/// (`EMFILE`, `ENFILE`), which retrying at once only turns into a busy loop; those that concern
/// one connection (`ECONNABORTED`) lose 10 ms.
pub fn accept_delay(failures: u32) -> Duration {
    const FIRST_MS: u64 = 10;
    const MAX: Duration = Duration::from_secs(1);
    if failures == 0 {
        return Duration::ZERO;
    }
    let doublings = (failures - 1).min(16);
    Duration::from_millis(FIRST_MS << doublings).min(MAX)
}

/// At most one warning a second, saying how many were left out since the last.
#[derive(Default)]
pub struct Throttle {
    last: Option<Instant>,
    suppressed: u64,
}

impl Throttle {
    const EVERY: Duration = Duration::from_secs(1);

    /// Whether to warn at `now`: `Some(n)` with the `n` warnings left out since the last one.
    pub fn allow(&mut self, now: Instant) -> Option<u64> {
        if self.last.is_some_and(|last| now.saturating_duration_since(last) < Self::EVERY) {
            self.suppressed += 1;
            return None;
        }
        self.last = Some(now);
        Some(std::mem::take(&mut self.suppressed))
    }
}

/// The listener, with a pause after each failed `accept` (see [`accept_delay`]).
pub struct Acceptor {
    listener: TcpListener,
    failures: u32,
    warnings: Throttle,
    /// `toolhost_accept_errors_total`.
    errors: Counter,
}

impl Acceptor {
    pub fn new(listener: TcpListener, errors: Counter) -> Acceptor {
        Acceptor { listener, failures: 0, warnings: Throttle::default(), errors }
    }

    /// The next connection. Cancel-safe: dropped during a pause, the next call accepts at once
    /// (the failure count is kept).
    pub async fn accept(&mut self) -> (TcpStream, SocketAddr) {
        loop {
            match self.listener.accept().await {
                Ok(accepted) => {
                    self.failures = 0;
                    return accepted;
                }
                Err(e) => {
                    self.errors.inc();
                    self.failures = self.failures.saturating_add(1);
                    let delay = accept_delay(self.failures);
                    if let Some(suppressed) = self.warnings.allow(Instant::now()) {
                        tracing::warn!(
                            "accept: {e} (retrying in {} ms; {suppressed} more such warnings since the last)",
                            delay.as_millis()
                        );
                    }
                    tokio::time::sleep(delay).await;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accept_waits_longer_after_each_failure_in_a_row_up_to_a_second() {
        let ms = |n| accept_delay(n).as_millis();
        assert_eq!(ms(0), 0);
        assert_eq!([ms(1), ms(2), ms(3), ms(4)], [10, 20, 40, 80]);
        assert_eq!(ms(7), 640);
        assert_eq!(ms(8), 1000);
        assert_eq!(ms(u32::MAX), 1000);
    }

    #[test]
    fn warnings_come_at_most_once_a_second_with_the_count_left_out() {
        let start = Instant::now();
        let mut t = Throttle::default();
        assert_eq!(t.allow(start), Some(0));
        for ms in [1, 500, 999] {
            assert_eq!(t.allow(start + Duration::from_millis(ms)), None);
        }
        assert_eq!(t.allow(start + Duration::from_millis(1000)), Some(3));
        assert_eq!(t.allow(start + Duration::from_millis(1001)), None);
        assert_eq!(t.allow(start + Duration::from_millis(5000)), Some(1));
    }

    #[test]
    fn the_default_connection_limit_leaves_half_the_descriptors_to_the_runtime() {
        assert_eq!(connections_for(Some(512)), 256);
        assert_eq!(connections_for(Some(1024)), 512);
        assert_eq!(connections_for(Some(1 << 20)), MAX_CONNECTIONS);
        assert_eq!(connections_for(None), MAX_CONNECTIONS);
        assert_eq!(connections_for(Some(1)), 1);
    }

    #[test]
    fn caps_count_per_peer_and_in_total_and_free_a_slot_when_a_connection_ends() {
        let bounds = Bounds {
            max_connections: 3,
            max_per_peer: 2,
            timeouts: Timeouts { head: HEADER_TIMEOUT, idle: IDLE_TIMEOUT },
        };
        let caps = Caps::new(&bounds, Gauge::default());
        let a: IpAddr = "192.0.2.1".parse().unwrap();
        let b: IpAddr = "192.0.2.2".parse().unwrap();
        let c: IpAddr = "192.0.2.3".parse().unwrap();
        let a1 = caps.admit(a).unwrap();
        let _a2 = caps.admit(a).unwrap();
        assert_eq!(caps.admit(a).err(), Some(Limit::Peer));
        // The same address written as IPv4-mapped IPv6 is the same peer.
        assert_eq!(caps.admit("::ffff:192.0.2.1".parse().unwrap()).err(), Some(Limit::Peer));
        let _b1 = caps.admit(b).unwrap();
        assert_eq!(caps.admit(c).err(), Some(Limit::Total));
        drop(a1);
        let _c1 = caps.admit(c).unwrap();
        assert_eq!(caps.gauge.get(), 3);
    }

    #[test]
    fn an_ipv6_peer_is_its_slash_64() {
        let one: IpAddr = "2001:db8:1:2::1".parse().unwrap();
        let same: IpAddr = "2001:db8:1:2:ffff::9".parse().unwrap();
        let other: IpAddr = "2001:db8:1:3::1".parse().unwrap();
        assert_eq!(peer_key(one), peer_key(same));
        assert_ne!(peer_key(one), peer_key(other));
    }
}
