//! Host routes: the per-destination congestion control (a route's `congctl`, Linux 4.0+) as
//! tcptune writes and reads it. A [`Route`] is one route of the kernel's table with every
//! attribute tcptune copies, as a value a snapshot can hold; [`command`] writes it as the
//! `ip route` line a person would type; [`netlink`] reads and writes the kernel's routes
//! through rtnetlink (RTM_GETROUTE, RTM_NEWROUTE, RTM_DELROUTE).
//!
//! A host route tcptune adds carries the protocol number [`PROTO`] (`proto 116` in `ip route`),
//! so `revert` and `check` know it for tcptune's own.
//!
//! # Platform specific behavior
//! Linux only: elsewhere every kernel call is a usage error ([`unsupported`]).

pub mod netlink;
mod text;

use std::collections::BTreeMap;
use std::net::IpAddr;

use serde::{Deserialize, Serialize};

use crate::error::Error;

pub use text::{
    LINE_MARK, RouteLine, command, delete_words, looks_like_route_line, parse_route_get, parse_route_line, prefix,
    printable, quoted, valid_ifname, words,
};

/// What a machine's routing says of one destination: the kernel's lookup (Err: why there is
/// none) and the host routes to it already there ([`netlink::toward`] reads this machine's).
#[derive(Debug, Clone)]
pub struct RouteFacts {
    pub dest: IpAddr,
    pub lookup: Result<Lookup, String>,
    pub existing: Vec<Route>,
}

/// The protocol number of the host routes tcptune adds (`proto 116`; 116 is ASCII `t`). The
/// kernel leaves numbers past 4 (static) uninterpreted; iproute2's rt_protos names 0-18, 42,
/// 84, 99 and 186-192, and no routing daemon tcptune knows of uses 116.
pub const PROTO: u8 = 116;

/// The main routing table (`ip route` shows it by default).
pub const MAIN_TABLE: u32 = 254;

/// RTN_UNICAST: a route to a host or network (not local, broadcast, blackhole ...).
pub const UNICAST: u8 = 1;

/// The metrics a route may carry (RTAX_*), by iproute2's names; index = RTAX number.
pub const METRICS: [&str; 18] = [
    "",
    "lock",
    "mtu",
    "window",
    "rtt",
    "rttvar",
    "ssthresh",
    "cwnd",
    "advmss",
    "reordering",
    "hoplimit",
    "initcwnd",
    "features",
    "rto_min",
    "initrwnd",
    "quickack",
    "congctl",
    "fastopen_no_cookie",
];

/// The route types (RTN_*) by iproute2's names; index = RTN number.
pub const KINDS: [&str; 11] = [
    "unspec",
    "unicast",
    "local",
    "broadcast",
    "anycast",
    "multicast",
    "blackhole",
    "unreachable",
    "prohibit",
    "throw",
    "nat",
];

/// A route type's name: `blackhole` for 6, `type 42` past iproute2's names.
pub fn kind_name(kind: u8) -> String {
    KINDS
        .get(usize::from(kind))
        .map_or_else(|| format!("type {kind}"), |k| (*k).to_string())
}

/// Why `ip` may not have a host route of tcptune's at all, whatever the routes say: the
/// unspecified address is no host (`::` would add `::/128`), and no connection uses the IPv6
/// route of an IPv4-mapped address (a socket connecting to `::ffff:a.b.c.d` sends IPv4, by the
/// IPv4 route to a.b.c.d).
pub fn dest_refusal(ip: IpAddr) -> Option<String> {
    if ip.is_unspecified() {
        return Some(format!("{ip} is the unspecified address, not a host"));
    }
    if let IpAddr::V6(v6) = ip
        && let Some(v4) = v6.to_ipv4_mapped()
    {
        return Some(format!(
            "{ip} is an IPv4-mapped address: connections to it use the IPv4 route to {v4}; give {v4}"
        ));
    }
    None
}

/// Why a route with a lifetime is refused, as a clause after "the route to DEST"; `secs`: how
/// long it has left, when the kernel said.
pub fn expires(secs: Option<u32>) -> String {
    let left = secs.map_or_else(String::new, |s| format!(" in {s} s"));
    format!(
        "expires{left} (a router advertisement's, or added with a lifetime): a host route copied from it \
         would outlive it, and one replaced would lose its lifetime; tcptune refuses it"
    )
}

/// Whether a line of `ip route` says the route has a lifetime (`expires 29sec`).
pub fn says_expires(line: &str) -> bool {
    line.split_whitespace().any(|w| w == "expires")
}

/// RTAX_CC_ALGO: the congestion-control metric.
pub const RTAX_CC_ALGO: u16 = 16;

/// One route as the kernel keeps it, every attribute tcptune copies or restores. Two routes
/// are the same route when these are equal ([`Route::same`]); the device's name is only for
/// people (`dev wan0`), its index decides.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Route {
    pub dst: IpAddr,
    pub dst_len: u8,
    pub table: u32,
    /// RTPROT_*: 2 kernel, 3 boot, 4 static, [`PROTO`] tcptune's.
    pub protocol: u8,
    /// RT_SCOPE_*: 0 global, 253 link, 254 host.
    pub scope: u8,
    /// RTN_*: [`UNICAST`] for the routes tcptune touches.
    pub kind: u8,
    pub tos: u8,
    /// The next hop's flags that a request may set (onlink); state flags (linkdown) left out.
    #[serde(default)]
    pub flags: u32,
    pub gateway: Option<IpAddr>,
    /// The output interface's index, and its name when read.
    pub oif: Option<u32>,
    pub dev: Option<String>,
    pub prefsrc: Option<IpAddr>,
    /// RTA_PRIORITY (`metric N`).
    pub priority: Option<u32>,
    /// IPv6 router preference (RTA_PREF: 0 medium, 1 high, 3 low).
    pub pref: Option<u8>,
    /// The metrics by name (`mtu`, `advmss`, `initcwnd` ...), not `lock` nor `congctl`.
    #[serde(default)]
    pub metrics: BTreeMap<String, u32>,
    /// RTAX_LOCK: bit N locks metric N.
    #[serde(default)]
    pub lock: u32,
    /// RTAX_CC_ALGO: the congestion control of new connections on this route.
    pub congctl: Option<String>,
}

impl Route {
    /// The same route, the device's name aside (an index names it) and the kernel's defaults
    /// filled in: an IPv6 route without a metric is metric 1024 and preference medium, an IPv4
    /// route's metric 0 is no metric. A route written without them reads back with them.
    pub fn same(&self, other: &Self) -> bool {
        self.as_kept() == other.as_kept()
    }

    /// The route as the kernel keeps it (see [`Route::same`]), its device's name left out.
    fn as_kept(&self) -> Self {
        let mut r = Self {
            dev: None,
            ..self.clone()
        };
        if r.dst.is_ipv6() {
            r.priority = Some(r.priority.unwrap_or(1024));
            r.pref = Some(r.pref.unwrap_or(0));
        } else if r.priority == Some(0) {
            r.priority = None;
        }
        r
    }

    /// Whether `other` is the route with this one's key: the kernel's replace and delete
    /// find a route by its table, prefix, tos and metric.
    pub fn same_key(&self, other: &Self) -> bool {
        let (a, b) = (self.as_kept(), other.as_kept());
        (a.table, a.dst, a.dst_len, a.tos, a.priority) == (b.table, b.dst, b.dst_len, b.tos, b.priority)
    }

    /// Whether this route is a host route (/32, /128) to `dest`.
    pub fn is_host_route_to(&self, dest: IpAddr) -> bool {
        self.dst == dest && self.dst_len == full_len(dest)
    }

    /// Whether tcptune added it.
    pub fn is_tcptune(&self) -> bool {
        self.protocol == PROTO
    }

    /// The route with congestion control `cc` (unlocked: a program may still choose its own
    /// with TCP_CONGESTION after connect).
    #[must_use]
    pub fn with_congctl(&self, cc: &str) -> Self {
        let mut r = self.clone();
        r.congctl = Some(cc.to_string());
        r.lock &= !(1 << RTAX_CC_ALGO);
        r
    }
}

/// The prefix length of a host route to `ip`: 32 or 128.
pub fn full_len(ip: IpAddr) -> u8 {
    if ip.is_ipv4() { 32 } else { 128 }
}

/// What the kernel uses for a destination today: the route it matches (`ip route get ADDR
/// fibmatch`) and what the lookup resolved (`ip route get ADDR`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Lookup {
    pub dest: IpAddr,
    /// The table the lookup ended in (254: main).
    pub table: u32,
    /// RTN_* of the answer (1 unicast, 2 local ...).
    pub kind: u8,
    /// The route it matched: its prefix, protocol, metrics. None when the kernel would not
    /// say (a kernel before 4.13 has no fibmatch).
    pub matched: Option<Route>,
    /// Why the matched route cannot be copied, as a clause after "the route to DEST": it is
    /// multipath, has an encapsulation or a nexthop object, or expires.
    pub uncopyable: Option<String>,
    pub gateway: Option<IpAddr>,
    pub oif: Option<u32>,
    pub dev: Option<String>,
    pub prefsrc: Option<IpAddr>,
}

impl Lookup {
    /// The answer for `dest` from `table`, of RTN_* `kind`, before its attributes are read.
    pub fn new(dest: IpAddr, table: u32, kind: u8) -> Self {
        Self {
            dest,
            table,
            kind,
            matched: None,
            uncopyable: None,
            gateway: None,
            oif: None,
            dev: None,
            prefsrc: None,
        }
    }

    /// Why tcptune may not give `dest` a host route of its own here, if it may not: another
    /// table than main (ip rule), not a unicast route, a route it cannot copy whole.
    pub fn refusal(&self) -> Option<String> {
        let d = self.dest;
        if let Some(why) = dest_refusal(d) {
            return Some(why);
        }
        if self.kind != UNICAST {
            return Some(match self.kind {
                0 => format!("no route leads to {d} (the kernel's lookup: network unreachable)"),
                2 => format!("{d} is an address of this host"),
                k => format!(
                    "{d} is reached by a {} route, not a unicast one: there is no path to give a congestion control",
                    kind_name(k)
                ),
            });
        }
        if self.table != MAIN_TABLE {
            return Some(format!(
                "{d} is reached through routing table {} (ip rule), not main: tcptune adds host routes to main only",
                self.table
            ));
        }
        if let Some(why) = &self.uncopyable {
            return Some(format!("the route to {d} {why}"));
        }
        if self.oif.is_none() && self.dev.is_none() {
            return Some(format!("the kernel names no interface for {d}"));
        }
        None
    }

    /// The host route to write for this destination when none exists: what the kernel uses
    /// today (gateway, device, source, and the matched route's metrics, scope and preference),
    /// as a /32 or /128 of tcptune's ([`PROTO`]) with congestion control `cc`.
    pub fn host_route(&self, cc: &str) -> Route {
        let m = self.matched.as_ref();
        Route {
            dst: self.dest,
            dst_len: full_len(self.dest),
            table: MAIN_TABLE,
            protocol: PROTO,
            // A route through a gateway is global; one on the link is link-scoped (IPv6 keeps
            // global whatever).
            scope: if self.gateway.is_none() && self.dest.is_ipv4() {
                253
            } else {
                0
            },
            kind: UNICAST,
            tos: 0,
            flags: m.map_or(0, |r| r.flags),
            gateway: self.gateway,
            oif: self.oif,
            dev: self.dev.clone(),
            prefsrc: self.prefsrc,
            priority: None,
            pref: m.and_then(|r| r.pref),
            metrics: m.map(|r| r.metrics.clone()).unwrap_or_default(),
            lock: m.map_or(0, |r| r.lock),
            congctl: None,
        }
        .with_congctl(cc)
    }
}

/// The error every kernel call gives off Linux.
pub fn unsupported() -> Error {
    Error::usage("per-destination congestion control is a Linux route's congctl: this OS has none")
        .with_hint("--scope host-wide advises the host-wide setting")
}

/// Whether a kernel of release `release` ("6.1.0-13-amd64") takes a route's congctl: 4.0 and
/// later. None when the release does not parse.
pub fn kernel_has_congctl(release: &str) -> Option<bool> {
    let mut parts = release.split(|c: char| !c.is_ascii_digit());
    let major: u32 = parts.next()?.parse().ok()?;
    Some(major >= 4)
}

/// Whether this process may change routes: CAP_NET_ADMIN in its effective set
/// (/proc/self/status `CapEff`). None when that cannot be read.
pub fn has_net_admin() -> Option<bool> {
    const CAP_NET_ADMIN: u32 = 12;
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let hex = status.lines().find_map(|l| l.strip_prefix("CapEff:"))?.trim();
    let caps = u64::from_str_radix(hex, 16).ok()?;
    Some(caps & (1 << CAP_NET_ADMIN) != 0)
}

/// The refusal for a process without CAP_NET_ADMIN.
pub fn needs_net_admin() -> Error {
    Error::not_permitted("changing routes needs CAP_NET_ADMIN: run tcptune apply with sudo; nothing was written")
        .with_hint("--dry-run shows the changes without root")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lookup(kind: u8, table: u32) -> Lookup {
        Lookup {
            dest: "198.18.0.2".parse().expect("ip"),
            table,
            kind,
            matched: None,
            uncopyable: None,
            gateway: Some("198.18.0.254".parse().expect("ip")),
            oif: Some(3),
            dev: Some("eth0".into()),
            prefsrc: Some("198.18.0.1".parse().expect("ip")),
        }
    }

    #[test]
    fn what_may_get_a_host_route() {
        assert_eq!(lookup(UNICAST, MAIN_TABLE).refusal(), None);
        let other = lookup(UNICAST, 100).refusal().expect("table 100");
        assert!(other.contains("routing table 100 (ip rule), not main"), "{other}");
        assert!(
            lookup(2, 255)
                .refusal()
                .expect("local")
                .contains("an address of this host")
        );
        let multi = Lookup {
            uncopyable: Some("is multipath (2 next hops)".into()),
            ..lookup(UNICAST, MAIN_TABLE)
        };
        assert!(multi.refusal().expect("multipath").contains("multipath"));
    }

    #[test]
    fn a_new_host_route_copies_the_lookup_and_the_matched_metrics() {
        let mut l = lookup(UNICAST, MAIN_TABLE);
        let mut matched = l.host_route("x");
        matched.metrics.insert("mtu".into(), 1400);
        matched.lock = 1 << 2;
        l.matched = Some(matched);
        let r = l.host_route("bbr");
        assert_eq!((r.dst_len, r.protocol, r.scope, r.table), (32, PROTO, 0, MAIN_TABLE));
        assert_eq!(r.metrics.get("mtu"), Some(&1400));
        assert_eq!(r.lock, 1 << 2);
        assert_eq!(r.congctl.as_deref(), Some("bbr"));
        assert!(r.is_host_route_to(l.dest) && r.is_tcptune());
        // On the link (no gateway): scope link.
        let on_link = Lookup { gateway: None, ..l };
        assert_eq!(on_link.host_route("bbr").scope, 253);
    }

    #[test]
    fn kernels_from_4_0_take_congctl() {
        assert_eq!(kernel_has_congctl("6.18.44-fc-v669"), Some(true));
        assert_eq!(kernel_has_congctl("4.0.0"), Some(true));
        assert_eq!(kernel_has_congctl("3.10.0-1160.el7.x86_64"), Some(false));
        assert_eq!(kernel_has_congctl("x"), None);
    }

    #[test]
    fn the_same_route_whatever_its_device_name() {
        let a = lookup(UNICAST, MAIN_TABLE).host_route("bbr");
        let b = Route { dev: None, ..a.clone() };
        assert!(a.same(&b));
        assert!(!a.same(&a.with_congctl("cubic")));
    }
}
