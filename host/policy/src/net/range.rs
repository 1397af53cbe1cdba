//! # Address ranges
//!
//! Which addresses are not the public internet, and what they are ([`IpRange::of`]): a name
//! or `*` in a grant never reaches them ([`crate::check_address`]), so that DNS rebinding and
//! requests to a cloud metadata service stay shut for a tool granted the open internet.
//!
//! ## Example
//!
//! ```
//! use toolhost_policy::IpRange;
//!
//! let ip = "::ffff:169.254.169.254".parse().unwrap();
//! assert_eq!(IpRange::of(ip), Some(IpRange::Metadata));
//! assert_eq!(IpRange::Metadata.to_string(), "a cloud metadata address");
//! ```

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// A range of addresses that a name or `*` in a grant never reaches: connecting to one needs a
/// pattern naming the address literally (`127.0.0.1:8080`), `localhost` by name (loopback
/// only), or `[tools.NAME] allow_private_network = true`. Without this, a tool granted `*` or
/// a name whose DNS an attacker controls could reach the host's own services, the local
/// network and the cloud metadata service (DNS rebinding, SSRF).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum IpRange {
    /// 127.0.0.0/8, ::1.
    Loopback,
    /// RFC 1918 (10/8, 172.16/12, 192.168/16), IPv6 unique local (fc00::/7) and the
    /// deprecated site-local fec0::/10.
    Private,
    /// 169.254/16, fe80::/10.
    LinkLocal,
    /// 100.64/10, carrier-grade NAT (RFC 6598): the provider's network, not the internet.
    SharedNat,
    /// 224/4, ff00::/8.
    Multicast,
    /// 0.0.0.0/8 and `::`: connecting to 0.0.0.0 reaches the local host on Linux.
    Unspecified,
    /// 255.255.255.255.
    Broadcast,
    /// A cloud instance metadata or host service ([`METADATA_ADDRESSES`]): credentials live
    /// there.
    Metadata,
    /// Other special-purpose space that is not the public internet: 240/4, 192.0.0/24,
    /// benchmarking 198.18/15, documentation ranges, IPv6 discard 100::/64, the deprecated
    /// IPv4-compatible ::/96.
    Reserved,
}

/// Cloud metadata and host-service addresses, refused as [`IpRange::Metadata`] (most also lie
/// in a link-local, private or shared range; this names them for what they are):
/// 169.254.169.254 (AWS, GCP, Azure, OCI, OpenStack, DigitalOcean), 169.254.170.2 (AWS ECS
/// task credentials), 100.100.100.200 (Alibaba Cloud), 168.63.129.16 (Azure WireServer, a
/// public address that only Azure VMs reach), 192.0.0.192 (Oracle Cloud Classic),
/// fd00:ec2::254 (AWS IPv6).
pub const METADATA_ADDRESSES: [IpAddr; 6] = [
    IpAddr::V4(Ipv4Addr::new(169, 254, 169, 254)),
    IpAddr::V4(Ipv4Addr::new(169, 254, 170, 2)),
    IpAddr::V4(Ipv4Addr::new(100, 100, 100, 200)),
    IpAddr::V4(Ipv4Addr::new(168, 63, 129, 16)),
    IpAddr::V4(Ipv4Addr::new(192, 0, 0, 192)),
    IpAddr::V6(Ipv6Addr::new(0xfd00, 0xec2, 0, 0, 0, 0, 0, 0x254)),
];

impl IpRange {
    /// The range `ip` lies in, or `None` for a public address.
    ///
    /// IPv4 addresses written in IPv6 are classified as the IPv4 address they carry:
    /// IPv4-mapped (`::ffff:127.0.0.1`, which a dual-stack socket sends to 127.0.0.1), the
    /// deprecated IPv4-compatible `::a.b.c.d`, NAT64 (`64:ff9b::/96`, RFC 6052, and the
    /// local-use `64:ff9b:1::/48`, RFC 8215, in its /96 form), whose gateway opens a real IPv4
    /// connection to the embedded address, and 6to4 (`2002::/16`, deprecated). So
    /// `64:ff9b::10.0.0.5` is private while `64:ff9b::93.184.215.14` stays public: on an
    /// IPv6-only network with DNS64 that is how every public IPv4 host is reached. Teredo
    /// (`2001::/32`) is not unpacked: its embedded addresses are obfuscated, and a relay only
    /// sends UDP-encapsulated IPv6 to them, never a plain connection.
    ///
    /// # Examples
    ///
    /// ```
    /// use toolhost_policy::IpRange;
    ///
    /// let range = |s: &str| IpRange::of(s.parse().unwrap());
    /// assert_eq!(range("::ffff:127.0.0.1"), Some(IpRange::Loopback));
    /// assert_eq!(range("64:ff9b::10.0.0.5"), Some(IpRange::Private));
    /// assert_eq!(range("169.254.169.254"), Some(IpRange::Metadata));
    /// assert_eq!(range("1.1.1.1"), None);
    /// ```
    pub fn of(ip: IpAddr) -> Option<IpRange> {
        match ip.to_canonical() {
            IpAddr::V4(v4) => v4_range(v4),
            IpAddr::V6(v6) => v6_range(v6),
        }
    }

    /// The range's short name (`loopback`, `private`, `cloud metadata`, …).
    pub fn name(self) -> &'static str {
        match self {
            IpRange::Loopback => "loopback",
            IpRange::Private => "private",
            IpRange::LinkLocal => "link-local",
            IpRange::SharedNat => "shared (carrier-grade NAT)",
            IpRange::Multicast => "multicast",
            IpRange::Unspecified => "unspecified",
            IpRange::Broadcast => "broadcast",
            IpRange::Metadata => "cloud metadata",
            IpRange::Reserved => "reserved",
        }
    }
}

impl fmt::Display for IpRange {
    /// `a loopback address`, `an unspecified address`, `the broadcast address`, ….
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            IpRange::Broadcast => f.write_str("the broadcast address"),
            IpRange::Unspecified => f.write_str("an unspecified address"),
            r => write!(f, "a {} address", r.name()),
        }
    }
}

fn v4_range(ip: Ipv4Addr) -> Option<IpRange> {
    if METADATA_ADDRESSES.contains(&IpAddr::V4(ip)) {
        return Some(IpRange::Metadata);
    }
    let [a, b, c, _] = ip.octets();
    Some(match (a, b, c) {
        _ if ip.is_broadcast() => IpRange::Broadcast,
        (0, _, _) => IpRange::Unspecified,
        (127, _, _) => IpRange::Loopback,
        (10, _, _) | (172, 16..=31, _) | (192, 168, _) => IpRange::Private,
        (169, 254, _) => IpRange::LinkLocal,
        (100, 64..=127, _) => IpRange::SharedNat,
        (224..=239, _, _) => IpRange::Multicast,
        (240..=255, _, _) | (192, 0, 0 | 2) | (198, 18..=19, _) | (198, 51, 100) | (203, 0, 113) => IpRange::Reserved,
        _ => return None,
    })
}

fn v6_range(ip: Ipv6Addr) -> Option<IpRange> {
    if METADATA_ADDRESSES.contains(&IpAddr::V6(ip)) {
        return Some(IpRange::Metadata);
    }
    let s = ip.segments();
    let v4 = |hi: u16, lo: u16| {
        let [a, b] = hi.to_be_bytes();
        let [c, d] = lo.to_be_bytes();
        Ipv4Addr::new(a, b, c, d)
    };
    Some(match s {
        _ if ip.is_unspecified() => IpRange::Unspecified,
        _ if ip.is_loopback() => IpRange::Loopback,
        [s0, ..] if s0 & 0xff00 == 0xff00 => IpRange::Multicast,
        [s0, ..] if s0 & 0xfe00 == 0xfc00 => IpRange::Private,
        [s0, ..] if s0 & 0xffc0 == 0xfe80 => IpRange::LinkLocal,
        [s0, ..] if s0 & 0xffc0 == 0xfec0 => IpRange::Private,
        // IPv4-compatible (deprecated): nothing legitimate uses it; name the range it carries.
        [0, 0, 0, 0, 0, 0, hi, lo] => v4_range(v4(hi, lo)).unwrap_or(IpRange::Reserved),
        // NAT64 and 6to4: only the IPv4 address they lead to counts.
        [0x64, 0xff9b, 0, 0, 0, 0, hi, lo] | [0x64, 0xff9b, 1, _, _, _, hi, lo] => return v4_range(v4(hi, lo)),
        [0x2002, hi, lo, ..] => return v4_range(v4(hi, lo)),
        [0x100, 0, 0, 0, ..] | [0x2001, 0xdb8, ..] => IpRange::Reserved,
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_table() {
        use IpRange::*;
        // (address, range; None = public)
        let cases: &[(&str, Option<IpRange>)] = &[
            ("127.0.0.1", Some(Loopback)),
            ("127.255.0.9", Some(Loopback)),
            ("::1", Some(Loopback)),
            ("10.0.0.5", Some(Private)),
            ("172.16.0.1", Some(Private)),
            ("172.31.255.255", Some(Private)),
            ("172.32.0.1", None),
            ("192.168.1.1", Some(Private)),
            ("fc00::1", Some(Private)),
            ("fd12:3456::1", Some(Private)),
            ("fec0::1", Some(Private)),
            ("169.254.1.1", Some(LinkLocal)),
            ("fe80::1", Some(LinkLocal)),
            ("febf::1", Some(LinkLocal)),
            ("100.64.0.1", Some(SharedNat)),
            ("100.127.255.255", Some(SharedNat)),
            ("100.128.0.1", None),
            ("224.0.0.1", Some(Multicast)),
            ("239.255.255.250", Some(Multicast)),
            ("ff02::1", Some(Multicast)),
            ("0.0.0.0", Some(Unspecified)),
            ("0.1.2.3", Some(Unspecified)),
            ("::", Some(Unspecified)),
            ("255.255.255.255", Some(Broadcast)),
            ("169.254.169.254", Some(Metadata)),
            ("169.254.170.2", Some(Metadata)),
            ("100.100.100.200", Some(Metadata)),
            ("168.63.129.16", Some(Metadata)),
            ("192.0.0.192", Some(Metadata)),
            ("fd00:ec2::254", Some(Metadata)),
            ("240.0.0.1", Some(Reserved)),
            ("192.0.2.1", Some(Reserved)),
            ("198.18.0.1", Some(Reserved)),
            ("2001:db8::1", Some(Reserved)),
            ("100::1", Some(Reserved)),
            // IPv4 inside IPv6: mapped, compatible, NAT64, 6to4.
            ("::ffff:127.0.0.1", Some(Loopback)),
            ("::ffff:169.254.169.254", Some(Metadata)),
            ("::ffff:10.1.2.3", Some(Private)),
            ("::ffff:8.8.8.8", None),
            ("::127.0.0.1", Some(Loopback)),
            ("::8.8.8.8", Some(Reserved)),
            ("64:ff9b::10.0.0.5", Some(Private)),
            ("64:ff9b::169.254.169.254", Some(Metadata)),
            ("64:ff9b::7f00:1", Some(Loopback)),
            ("64:ff9b::8.8.8.8", None),
            ("64:ff9b:1::192.168.0.1", Some(Private)),
            ("2002:7f00:1::1", Some(Loopback)),
            ("2002:a9fe:a9fe::", Some(Metadata)),
            ("2002:808:808::1", None),
            // Public.
            ("1.1.1.1", None),
            ("93.184.215.14", None),
            ("2606:4700::1111", None),
            ("2001:4860:4860::8888", None),
        ];
        for (ip, want) in cases {
            assert_eq!(IpRange::of(ip.parse().unwrap()), *want, "{ip}");
        }
    }

    #[test]
    fn range_descriptions() {
        assert_eq!(IpRange::Loopback.to_string(), "a loopback address");
        assert_eq!(IpRange::Metadata.to_string(), "a cloud metadata address");
        assert_eq!(IpRange::Unspecified.to_string(), "an unspecified address");
        assert_eq!(IpRange::Broadcast.to_string(), "the broadcast address");
    }
}
