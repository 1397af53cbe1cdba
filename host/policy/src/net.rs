//! Network host patterns: what `net("…")` in a ceiling or a grant names, and whether a host
//! and port fall inside it.
//!
//! See [`NetPattern`] for the forms and what they match.
//!
//! ## Example
//!
//! ```
//! use toolhost_policy::NetPattern;
//!
//! let p: NetPattern = "*.github.com".parse().unwrap();
//! assert!(p.matches("api.github.com", 443));
//! assert!(!p.matches("api.github.com", 22));
//! assert!(!p.matches("github.com", 443));
//! ```
//!
//! A name or `*` never reaches a loopback, private, link-local or other non-public address
//! ([`IpRange`]), whatever the name resolves to: only a pattern naming the address literally,
//! `localhost` by name (for loopback addresses only), or the tool's `allow_private_network`
//! opens one. [`check_address`] holds that rule for every connection.
//!
//! ```
//! use toolhost_policy::{check_address, AddressRefusal, IpRange, NetPattern};
//!
//! let any: Vec<NetPattern> = vec!["*".parse().unwrap()];
//! let (metadata, public) = ("169.254.169.254".parse().unwrap(), "93.184.215.14".parse().unwrap());
//! let refused = check_address(&any, false, metadata, 80, ["rebound.example"]);
//! assert_eq!(refused, Err(AddressRefusal::Range(IpRange::Metadata)));
//! assert_eq!(check_address(&any, false, public, 80, ["example.com"]), Ok(()));
//! // The same address granted literally.
//! let literal: Vec<NetPattern> = vec!["169.254.169.254:80".parse().unwrap()];
//! assert_eq!(check_address(&literal, false, metadata, 80, []), Ok(()));
//! ```

mod range;

pub use range::{IpRange, METADATA_ADDRESSES};
use std::fmt;
use std::net::IpAddr;
use std::str::FromStr;

/// The ports a portless pattern allows.
pub const WEB_PORTS: [u16; 2] = [80, 443];

/// The host part of a [`NetPattern`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HostPattern {
    /// `*`: any host or address.
    Any,
    /// One name (lowercase, no trailing dot).
    Name(String),
    /// `*.suffix`: any name ending in `.suffix` (lowercase).
    Subdomains(String),
    /// One IP address.
    Ip(IpAddr),
}

/// The port part of a [`NetPattern`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PortPattern {
    /// No port given: [`WEB_PORTS`].
    Web,
    /// `:*`, or the pattern `*`.
    Any,
    /// `:N`.
    Exact(u16),
}

/// A parsed `net(…)` pattern.
///
/// | pattern | hosts | ports |
/// |---|---|---|
/// | `*` | any host or address | any |
/// | `example.com` | exactly `example.com` | 80 and 443 (the web ports) |
/// | `example.com:8080` | exactly `example.com` | 8080 |
/// | `example.com:*` | exactly `example.com` | any |
/// | `*.example.com` | any name under `example.com`, not `example.com` itself | 80 and 443 |
/// | `127.0.0.1:8080`, `[::1]:8080` | that address literally | 8080 |
///
/// A pattern without a port means the web ports on every path (HTTP and raw sockets alike): a
/// tool granted `net("api.github.com")` cannot open `api.github.com:22`. Host names compare
/// case-insensitively, without a trailing dot. An IP address matches only a pattern naming that
/// address (or `*`); a name never matches an address pattern, whatever it resolves to.
///
/// Matching says which hosts a tool may *name*. Which addresses a connection may then go to is
/// [`check_address`]'s rule: through `*` or a name, public addresses only.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NetPattern {
    /// Which hosts.
    pub host: HostPattern,
    /// Which ports.
    pub port: PortPattern,
}

/// A `net(…)` pattern that does not parse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid network pattern {pattern:?}: {reason}")]
pub struct NetPatternError {
    /// The pattern as written.
    pub pattern: String,
    /// What is wrong with it.
    pub reason: &'static str,
}

/// Lowercase, without a trailing dot or IPv6 brackets.
pub fn normalize_host(host: &str) -> String {
    let host = host.strip_prefix('[').and_then(|h| h.strip_suffix(']')).unwrap_or(host);
    host.strip_suffix('.').unwrap_or(host).to_ascii_lowercase()
}

impl FromStr for NetPattern {
    type Err = NetPatternError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let err = |reason| NetPatternError { pattern: s.to_string(), reason };
        let s = s.trim();
        if s == "*" {
            return Ok(NetPattern { host: HostPattern::Any, port: PortPattern::Any });
        }
        if s.contains("://") {
            return Err(err(
                "a URL, not a host pattern: write the host, with `:PORT` if not 80 or 443 (api.example.com)",
            ));
        }
        // `[v6]:port`, `[v6]`, a bare v6 address, or `host[:port]`.
        let (host, port) = if let Some(rest) = s.strip_prefix('[') {
            let (h, after) = rest.split_once(']').ok_or_else(|| err("unclosed `[`"))?;
            // Brackets hold an IPv6 address and nothing else: `[*]` would otherwise be "any
            // host, web ports", which no other spelling (and so not `Display`) can say.
            if h.parse::<std::net::Ipv6Addr>().is_err() {
                return Err(err("only an IPv6 address goes between `[` and `]`"));
            }
            match after {
                "" => (h, None),
                p => (h, Some(p.strip_prefix(':').ok_or_else(|| err("expected `:PORT` after `]`"))?)),
            }
        } else if s.matches(':').count() > 1 {
            (s, None)
        } else {
            match s.split_once(':') {
                Some((h, p)) => (h, Some(p)),
                None => (s, None),
            }
        };
        let port = match port {
            None => PortPattern::Web,
            Some("*") => PortPattern::Any,
            Some(p) => PortPattern::Exact(p.parse().map_err(|_| err("the port is not a number from 0 to 65535"))?),
        };
        let host = if host == "*" {
            HostPattern::Any
        } else if let Some(suffix) = host.strip_prefix("*.") {
            let suffix = normalize_host(suffix);
            if !valid_name(&suffix) {
                return Err(err("not a host name after `*.`"));
            }
            HostPattern::Subdomains(suffix)
        } else if let Ok(ip) = normalize_host(host).parse::<IpAddr>() {
            HostPattern::Ip(ip)
        } else if let host = normalize_host(host)
            && valid_name(&host)
        {
            HostPattern::Name(host)
        } else {
            return Err(err("not a host name, IP address, `*.domain` or `*`"));
        };
        Ok(NetPattern { host, port })
    }
}

fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name.split('.').all(|label| {
            !label.is_empty() && label.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
        })
}

impl NetPattern {
    /// Whether the pattern names `host` at all, whatever the port: a DNS lookup of `host` is
    /// allowed only then. `host` is a name or an IP address literal.
    pub fn matches_host(&self, host: &str) -> bool {
        let host = normalize_host(host);
        match &self.host {
            HostPattern::Any => true,
            HostPattern::Ip(ip) => host.parse::<IpAddr>().is_ok_and(|h| h.to_canonical() == ip.to_canonical()),
            _ if host.parse::<IpAddr>().is_ok() => false,
            HostPattern::Name(name) => *name == host,
            HostPattern::Subdomains(suffix) => {
                host.len() > suffix.len() + 1 && host.ends_with(suffix.as_str()) && {
                    let dot = host.len() - suffix.len() - 1;
                    host.as_bytes()[dot] == b'.'
                }
            }
        }
    }

    /// Whether the port is allowed by the pattern.
    pub fn matches_port(&self, port: u16) -> bool {
        match self.port {
            PortPattern::Any => true,
            PortPattern::Web => WEB_PORTS.contains(&port),
            PortPattern::Exact(p) => p == port,
        }
    }

    /// Whether `host:port` is inside the pattern.
    pub fn matches(&self, host: &str, port: u16) -> bool {
        self.matches_port(port) && self.matches_host(host)
    }

    /// Whether every host and port `other` admits is admitted by `self` (a ceiling covering a
    /// grant).
    pub fn covers(&self, other: &NetPattern) -> bool {
        let hosts = match (&self.host, &other.host) {
            (HostPattern::Any, _) => true,
            (_, HostPattern::Any) => false,
            (HostPattern::Subdomains(c), HostPattern::Subdomains(g)) => g == c || g.ends_with(&format!(".{c}")),
            (HostPattern::Subdomains(_), HostPattern::Name(g)) => self.matches_host(g),
            (HostPattern::Name(c), HostPattern::Name(g)) => c == g,
            (HostPattern::Ip(c), HostPattern::Ip(g)) => c.to_canonical() == g.to_canonical(),
            _ => false,
        };
        let ports = match (self.port, other.port) {
            (PortPattern::Any, _) => true,
            (_, PortPattern::Any) => false,
            (PortPattern::Web, PortPattern::Web) => true,
            (c, PortPattern::Exact(p)) => NetPattern { host: HostPattern::Any, port: c }.matches_port(p),
            (PortPattern::Exact(_), PortPattern::Web) => false,
        };
        hosts && ports
    }
}

impl fmt::Display for NetPattern {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (&self.host, self.port) {
            (HostPattern::Any, PortPattern::Any) => return f.write_str("*"),
            (HostPattern::Any, _) => f.write_str("*")?,
            (HostPattern::Name(n), _) => f.write_str(n)?,
            (HostPattern::Subdomains(s), _) => write!(f, "*.{s}")?,
            (HostPattern::Ip(IpAddr::V6(ip)), _) => write!(f, "[{ip}]")?,
            (HostPattern::Ip(ip), _) => write!(f, "{ip}")?,
        }
        match self.port {
            PortPattern::Web => Ok(()),
            PortPattern::Any => f.write_str(":*"),
            PortPattern::Exact(p) => write!(f, ":{p}"),
        }
    }
}

/// Why [`check_address`] refuses a connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AddressRefusal {
    /// No pattern names the address literally, nor (on this port) a name it was resolved from,
    /// and no `*` pattern allows the port.
    NotGranted,
    /// A name or `*` pattern would allow it, but the address lies in a range those never
    /// reach.
    Range(IpRange),
}

/// Whether a connection to `ip:port` is allowed by `patterns`, `names` being the names `ip`
/// was resolved from (none for an address the tool gave as such).
///
/// - A pattern naming the address literally (`127.0.0.1:8080`, `[::1]:*`) allows it, whatever
///   its range.
/// - A `*` pattern, or a pattern matching one of `names`, allows it if the address is public
///   ([`IpRange::of`] is `None`), or if `allow_private_network` is set. The one exception is
///   a pattern naming `localhost` itself (`localhost:8080`), which reaches the addresses it
///   resolves to when they are loopback addresses: `localhost` cannot be rebound.
///
/// # Errors
///
/// [`AddressRefusal::Range`] when only the range stood in the way (the refusal should say how
/// to allow it), [`AddressRefusal::NotGranted`] otherwise.
pub fn check_address<'a>(
    patterns: &[NetPattern],
    allow_private_network: bool,
    ip: IpAddr,
    port: u16,
    names: impl IntoIterator<Item = &'a str>,
) -> Result<(), AddressRefusal> {
    let ip = ip.to_canonical();
    let literal = ip.to_string();
    if patterns.iter().any(|p| matches!(p.host, HostPattern::Ip(_)) && p.matches(&literal, port)) {
        return Ok(());
    }
    let range = IpRange::of(ip);
    let reaches = |p: &NetPattern| match range {
        _ if allow_private_network => true,
        Some(IpRange::Loopback) => matches!(&p.host, HostPattern::Name(n) if n == "localhost"),
        _ => false,
    };
    let names: Vec<&str> = names.into_iter().collect();
    let covering = patterns.iter().filter(|p| match p.host {
        HostPattern::Any => p.matches_port(port),
        HostPattern::Ip(_) => false,
        _ => names.iter().any(|n| p.matches(n, port)),
    });
    let mut refusal = AddressRefusal::NotGranted;
    for p in covering {
        match range {
            Some(range) if !reaches(p) => refusal = AddressRefusal::Range(range),
            _ => return Ok(()),
        }
    }
    Err(refusal)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(s: &str) -> NetPattern {
        s.parse().unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn matching_table() {
        // (pattern, host, port, allowed)
        let cases: &[(&str, &str, u16, bool)] = &[
            ("*", "anything.example", 22, true),
            ("*", "10.0.0.1", 9, true),
            ("example.com", "example.com", 443, true),
            ("example.com", "EXAMPLE.com.", 80, true),
            ("example.com", "example.com", 8080, false),
            ("example.com", "www.example.com", 443, false),
            ("example.com:8080", "example.com", 8080, true),
            ("example.com:8080", "example.com", 443, false),
            ("example.com:*", "example.com", 22, true),
            ("*.example.com", "api.example.com", 443, true),
            ("*.example.com", "a.b.example.com", 80, true),
            ("*.example.com", "example.com", 443, false),
            ("*.example.com", "badexample.com", 443, false),
            ("*.example.com", "api.example.com", 8443, false),
            ("127.0.0.1:8080", "127.0.0.1", 8080, true),
            ("127.0.0.1:8080", "127.0.0.2", 8080, false),
            ("127.0.0.1:8080", "localhost", 8080, false),
            ("localhost:8080", "127.0.0.1", 8080, false),
            ("[::1]:8080", "::1", 8080, true),
            ("[::1]:8080", "[::1]", 8080, true),
            ("::1", "::1", 443, true),
            ("*:443", "example.org", 443, true),
            ("*:443", "example.org", 80, false),
        ];
        for (pattern, host, port, want) in cases {
            assert_eq!(p(pattern).matches(host, *port), *want, "{pattern} vs {host}:{port}");
        }
    }

    #[test]
    fn bad_patterns() {
        for bad in ["", "a..b", "host:99999", "host:x", "[::1", "[::1]8080", "*.", "a b", "http://x"] {
            assert!(bad.parse::<NetPattern>().is_err(), "{bad:?} parsed");
        }
    }

    #[test]
    fn covering_table() {
        let cases: &[(&str, &str, bool)] = &[
            ("*", "x.com:22", true),
            ("*", "*", true),
            ("x.com", "*", false),
            ("*.b.com", "a.b.com", true),
            ("*.b.com", "*.x.b.com", true),
            ("*.b.com", "b.com", false),
            ("*.b.com", "a.b.com:8080", false),
            ("*.b.com:*", "a.b.com:8080", true),
            ("a.com", "a.com:443", true),
            ("a.com:443", "a.com", false),
            ("a.com", "b.com", false),
            ("127.0.0.1:*", "127.0.0.1:9", true),
        ];
        for (c, g, want) in cases {
            assert_eq!(p(c).covers(&p(g)), *want, "{c} covers {g}");
        }
    }

    #[test]
    fn addresses_table() {
        use AddressRefusal::*;
        let range = |r| Err(Range(r));
        // (patterns, allow_private_network, address, port, resolved from, expected)
        type Case<'a> = (&'a [&'a str], bool, &'a str, u16, &'a [&'a str], Result<(), AddressRefusal>);
        let cases: &[Case] = &[
            // `*`: public addresses, literal or resolved; nothing private either way.
            (&["*"], false, "93.184.215.14", 443, &[], Ok(())),
            (&["*"], false, "93.184.215.14", 22, &["example.com"], Ok(())),
            (&["*"], false, "127.0.0.1", 8080, &[], range(IpRange::Loopback)),
            (&["*"], false, "127.0.0.1", 8080, &["localhost"], range(IpRange::Loopback)),
            (&["*"], false, "::ffff:127.0.0.1", 8080, &[], range(IpRange::Loopback)),
            (&["*"], false, "169.254.169.254", 80, &["rebind.example"], range(IpRange::Metadata)),
            (&["*"], false, "10.0.0.5", 80, &[], range(IpRange::Private)),
            (&["*"], false, "64:ff9b::a00:5", 80, &[], range(IpRange::Private)),
            (&["*:443"], false, "10.0.0.5", 80, &[], Err(NotGranted)),
            // A name: its public addresses only.
            (&["example.com"], false, "93.184.215.14", 443, &["example.com"], Ok(())),
            (&["example.com"], false, "10.0.0.5", 443, &["example.com"], range(IpRange::Private)),
            (&["example.com"], false, "10.0.0.5", 443, &["other.com"], Err(NotGranted)),
            (&["example.com"], false, "10.0.0.5", 8080, &["example.com"], Err(NotGranted)),
            (&["*.example.com"], false, "fe80::1", 443, &["a.example.com"], range(IpRange::LinkLocal)),
            (&["*.localhost:*"], false, "127.0.0.1", 80, &["a.localhost"], range(IpRange::Loopback)),
            // `localhost` by name reaches loopback, and only loopback.
            (&["localhost:8080"], false, "127.0.0.1", 8080, &["localhost"], Ok(())),
            (&["localhost:8080"], false, "::1", 8080, &["localhost"], Ok(())),
            (&["localhost:8080"], false, "10.0.0.5", 8080, &["localhost"], range(IpRange::Private)),
            (&["localhost:8080"], false, "127.0.0.1", 8080, &[], Err(NotGranted)),
            (&["localhost:8080"], false, "127.0.0.1", 9, &["localhost"], Err(NotGranted)),
            // Literal addresses reach any range, on their port.
            (&["127.0.0.1:8080"], false, "127.0.0.1", 8080, &[], Ok(())),
            (&["127.0.0.1:8080"], false, "::ffff:127.0.0.1", 8080, &["whatever"], Ok(())),
            (&["127.0.0.1:8080"], false, "127.0.0.1", 8081, &[], Err(NotGranted)),
            (&["[::1]:*"], false, "::1", 1, &[], Ok(())),
            (&["10.0.0.5"], false, "10.0.0.5", 443, &[], Ok(())),
            (&["169.254.169.254:80"], false, "169.254.169.254", 80, &[], Ok(())),
            (&["*", "10.0.0.5:80"], false, "10.0.0.5", 80, &["rebind.example"], Ok(())),
            // allow_private_network: names and `*` reach every range.
            (&["*"], true, "127.0.0.1", 8080, &[], Ok(())),
            (&["*"], true, "169.254.169.254", 80, &["rebind.example"], Ok(())),
            (&["example.com"], true, "10.0.0.5", 443, &["example.com"], Ok(())),
            (&["example.com"], true, "10.0.0.5", 443, &[], Err(NotGranted)),
        ];
        for (patterns, allow, ip, port, names, want) in cases {
            let patterns: Vec<NetPattern> = patterns.iter().map(|s| p(s)).collect();
            let got = check_address(&patterns, *allow, ip.parse().unwrap(), *port, names.iter().copied());
            assert_eq!(got, *want, "{patterns:?} allow_private={allow} {ip} port {port} from {names:?}");
        }
    }

    #[test]
    fn display_round_trips() {
        for s in ["*", "a.com", "a.com:8080", "a.com:*", "*.a.com", "*:443", "127.0.0.1:80", "[::1]:80"] {
            assert_eq!(p(s).to_string(), s);
        }
    }
}
