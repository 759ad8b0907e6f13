//! ICMP echo timing with surge-ping.
//!
//! Socket choice: on Linux an unprivileged "ping socket" (`SOCK_DGRAM`, `IPPROTO_ICMP`) works
//! when the effective gid or a supplementary gid lies in `net.ipv4.ping_group_range` (which also
//! governs ICMPv6); otherwise a raw socket (`SOCK_RAW`) needs root / CAP_NET_RAW. We ask
//! surge-ping for the type that should work; it falls back to the other one by itself.
//!
//! Timing: surge-ping takes its send timestamp *after* `send_to` (surge-ping #63), so every
//! round trip here is measured from an `Instant` taken just before the ping call.

use std::io;
use std::net::IpAddr;
use std::time::{Duration, Instant};

use futures::future::join_all;
use surge_ping::{Client, Config, ICMP, IcmpPacket, PingIdentifier, PingSequence, SurgeError};

use super::{Method, PingSlot, ProbeOptions, RttStats};

/// The kind of ICMP socket surge-ping ended up with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SocketKind {
    /// Unprivileged ping socket (Linux `ping_group_range`, macOS).
    Dgram,
    /// Raw socket (root / CAP_NET_RAW).
    Raw,
}

/// What the ICMP attempt gave.
#[derive(Debug, Clone)]
pub enum IcmpResult {
    /// Echo requests went out; `stats.received` may be 0.
    Sent {
        stats: RttStats,
        socket: SocketKind,
        /// Distinct errors seen (send errors, ICMP errors such as "destination unreachable").
        errors: Vec<String>,
    },
    /// The kernel refused an ICMP socket (EPERM/EACCES); `reason` is for the note,
    /// e.g. "ping_group_range is 1 0 and not root".
    NotPermitted { reason: String },
    /// No ICMP socket for another reason (e.g. no IPv6 stack).
    Unavailable { reason: String },
}

/// Who we are, as far as ICMP sockets care.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PingAccess {
    /// `net.ipv4.ping_group_range`; None where there is no such sysctl (not Linux) or it is unreadable.
    pub group_range: Option<(u32, u32)>,
    /// Effective uid, if known.
    pub euid: Option<u32>,
    /// Effective gid followed by the supplementary groups.
    pub gids: Vec<u32>,
}

impl PingAccess {
    /// The current process's access.
    pub fn current() -> Self {
        let range = std::fs::read_to_string("/proc/sys/net/ipv4/ping_group_range").ok();
        let status = std::fs::read_to_string("/proc/self/status").ok();
        let mut access = Self::from_texts(range.as_deref(), status.as_deref());
        if access.euid.is_none() {
            // SAFETY: geteuid has no preconditions and cannot fail.
            access.euid = Some(unsafe { libc::geteuid() });
        }
        access
    }

    /// Build from the text of `/proc/sys/net/ipv4/ping_group_range` and `/proc/self/status`.
    pub fn from_texts(range: Option<&str>, status: Option<&str>) -> Self {
        let group_range = range.and_then(parse_ping_group_range);
        let mut euid = None;
        let mut gids = Vec::new();
        let mut groups = Vec::new();
        for line in status.unwrap_or_default().lines() {
            if let Some(rest) = line.strip_prefix("Uid:") {
                euid = rest.split_whitespace().nth(1).and_then(|v| v.parse().ok());
            } else if let Some(rest) = line.strip_prefix("Gid:") {
                gids.extend(rest.split_whitespace().nth(1).and_then(|v| v.parse::<u32>().ok()));
            } else if let Some(rest) = line.strip_prefix("Groups:") {
                groups.extend(rest.split_whitespace().filter_map(|v| v.parse::<u32>().ok()));
            }
        }
        gids.extend(groups);
        Self {
            group_range,
            euid,
            gids,
        }
    }

    /// Whether an unprivileged ping socket should open. Where the sysctl is unknown, try it.
    pub fn dgram_allowed(&self) -> bool {
        match self.group_range {
            Some((lo, hi)) => self.gids.iter().any(|g| (lo..=hi).contains(g)),
            None => true,
        }
    }

    pub fn is_root(&self) -> bool {
        self.euid == Some(0)
    }

    /// Why an ICMP socket was refused, for a note ("ping_group_range is 1 0 and not root").
    pub fn describe_refusal(&self, err: &io::Error) -> String {
        let first_line = err.to_string().lines().next().unwrap_or_default().to_string();
        match (self.group_range, self.dgram_allowed(), self.is_root()) {
            (Some((lo, hi)), false, false) => format!("ping_group_range is {lo} {hi} and not root"),
            (Some((lo, hi)), false, true) => format!(
                "ping_group_range is {lo} {hi} and the raw socket was refused although root, no CAP_NET_RAW?: {first_line}"
            ),
            (None, _, false) => format!("not root: {first_line}"),
            _ => first_line,
        }
    }
}

/// Parse `net.ipv4.ping_group_range` ("1\t0"). A range with lo > hi allows nobody.
pub fn parse_ping_group_range(text: &str) -> Option<(u32, u32)> {
    let mut it = text.split_whitespace().map(str::parse::<u32>);
    match (it.next(), it.next(), it.next()) {
        (Some(Ok(lo)), Some(Ok(hi)), None) => Some((lo, hi)),
        _ => None,
    }
}

/// Payload after the 8-byte ICMP header: 56 bytes, as `ping` sends by default.
const PAYLOAD_LEN: usize = 56;

enum Probe {
    Reply(Duration),
    Timeout,
    Error(String),
}

/// Send `opts.probes` echo requests to `addr`, one every `opts.interval` (without waiting for
/// replies), each waiting at most `opts.timeout`. Takes about `probes × interval + timeout`.
/// `on_probe` is called as each probe finishes.
pub async fn ping(addr: IpAddr, opts: &ProbeOptions, slot: PingSlot, on_probe: impl Fn()) -> IcmpResult {
    let access = PingAccess::current();
    let first_type = if access.dgram_allowed() {
        libc::SOCK_DGRAM
    } else {
        libc::SOCK_RAW
    };
    let config = Config::builder()
        .kind(if addr.is_ipv4() { ICMP::V4 } else { ICMP::V6 })
        .sock_type_hint(first_type.into())
        .build();
    let client = match Client::new(&config) {
        Ok(c) => c,
        // Outside Linux an unprivileged process may get e.g. EPROTONOSUPPORT (no ping sockets
        // on FreeBSD) after the raw socket was refused: that is "not permitted" too.
        Err(e)
            if e.kind() == io::ErrorKind::PermissionDenied || (!access.is_root() && access.group_range.is_none()) =>
        {
            return IcmpResult::NotPermitted {
                reason: access.describe_refusal(&e),
            };
        }
        Err(e) => {
            return IcmpResult::Unavailable {
                reason: e.to_string().lines().next().unwrap_or_default().to_string(),
            };
        }
    };
    let socket = if libc::c_int::from(client.get_socket().get_type()) == libc::SOCK_RAW {
        SocketKind::Raw
    } else {
        SocketKind::Dgram
    };

    let payload: Vec<u8> = (0..PAYLOAD_LEN).map(|i| (i & 0xff) as u8).collect();
    let start = tokio::time::Instant::now();
    let probes = (0..opts.probes).map(|i| {
        let client = &client;
        let payload = &payload;
        let on_probe = &on_probe;
        async move {
            tokio::time::sleep_until(super::connect::send_time(start, opts.interval, i)).await;
            let mut pinger = client.pinger(addr, PingIdentifier(slot.ident)).await;
            pinger.timeout(opts.timeout);
            let seq = PingSequence(slot.seq_base.wrapping_add((i & 0xffff) as u16));
            let t0 = Instant::now();
            let result = pinger.ping(seq, payload).await;
            let rtt = t0.elapsed();
            on_probe();
            classify(result, rtt)
        }
    });
    let outcomes = join_all(probes).await;

    let mut samples = Vec::new();
    let mut errors: Vec<String> = Vec::new();
    for outcome in outcomes {
        match outcome {
            Probe::Reply(rtt) => samples.push(rtt.as_secs_f64() * 1000.0),
            Probe::Timeout => {}
            Probe::Error(e) => {
                if !errors.contains(&e) && errors.len() < 3 {
                    errors.push(e);
                }
            }
        }
    }
    IcmpResult::Sent {
        stats: RttStats::compute(Method::Icmp, opts.probes, samples),
        socket,
        errors,
    }
}

fn classify(result: Result<(IcmpPacket, Duration), SurgeError>, rtt: Duration) -> Probe {
    match result {
        Ok((IcmpPacket::V4(p), _)) => {
            let (kind, code) = (p.get_icmp_type().0, p.get_icmp_code().0);
            if kind == 0 {
                Probe::Reply(rtt)
            } else {
                Probe::Error(format!("{} answered {}", p.get_source(), icmpv4_name(kind, code)))
            }
        }
        Ok((IcmpPacket::V6(p), _)) => {
            let (kind, code) = (p.get_icmpv6_type().0, p.get_icmpv6_code().0);
            if kind == 129 {
                Probe::Reply(rtt)
            } else {
                Probe::Error(format!("{} answered {}", p.get_source(), icmpv6_name(kind, code)))
            }
        }
        Err(SurgeError::Timeout { .. }) => Probe::Timeout,
        Err(e) => Probe::Error(e.to_string()),
    }
}

fn icmpv4_name(kind: u8, code: u8) -> String {
    match kind {
        3 => format!("destination unreachable (code {code})"),
        11 => "time exceeded".to_string(),
        5 => "redirect".to_string(),
        12 => "parameter problem".to_string(),
        _ => format!("ICMP type {kind} code {code}"),
    }
}

fn icmpv6_name(kind: u8, code: u8) -> String {
    match kind {
        1 => format!("destination unreachable (code {code})"),
        2 => "packet too big".to_string(),
        3 => "time exceeded".to_string(),
        4 => "parameter problem".to_string(),
        _ => format!("ICMPv6 type {kind} code {code}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ping_group_range_parses() {
        assert_eq!(parse_ping_group_range("1\t0\n"), Some((1, 0)));
        assert_eq!(parse_ping_group_range("0 2147483647"), Some((0, 2_147_483_647)));
        assert_eq!(parse_ping_group_range(""), None);
        assert_eq!(parse_ping_group_range("1 x"), None);
        assert_eq!(parse_ping_group_range("1 2 3"), None);
    }

    const STATUS: &str = "Name:\tcat\nUid:\t1000\t1000\t1000\t1000\nGid:\t1000\t100\t1000\t1000\nGroups:\t4 27 1000 \n";

    #[test]
    fn access_from_proc() {
        let a = PingAccess::from_texts(Some("1\t0"), Some(STATUS));
        assert_eq!(a.group_range, Some((1, 0)));
        assert_eq!(a.euid, Some(1000));
        assert_eq!(a.gids, vec![100, 4, 27, 1000]);
        assert!(!a.dgram_allowed(), "1 0 allows nobody");
        assert!(!a.is_root());
        let refused = io::Error::from_raw_os_error(libc::EPERM);
        assert_eq!(a.describe_refusal(&refused), "ping_group_range is 1 0 and not root");

        // The effective gid (second Gid column) counts, as do supplementary groups.
        assert!(PingAccess::from_texts(Some("100 100"), Some(STATUS)).dgram_allowed());
        assert!(PingAccess::from_texts(Some("27 27"), Some(STATUS)).dgram_allowed());
        assert!(!PingAccess::from_texts(Some("1000 999"), Some(STATUS)).dgram_allowed());
        assert!(PingAccess::from_texts(Some("0 2147483647"), Some(STATUS)).dgram_allowed());
        // Unknown sysctl (not Linux): try the ping socket.
        assert!(PingAccess::from_texts(None, None).dgram_allowed());
    }

    #[test]
    fn root_refusal_mentions_cap_net_raw() {
        let status = "Uid:\t0\t0\t0\t0\nGid:\t0\t0\t0\t0\nGroups:\n";
        let a = PingAccess::from_texts(Some("1 0"), Some(status));
        assert!(a.is_root());
        let msg = a.describe_refusal(&io::Error::from_raw_os_error(libc::EPERM));
        assert!(msg.contains("CAP_NET_RAW"), "{msg}");
    }

    #[test]
    fn icmp_error_names() {
        assert_eq!(icmpv4_name(3, 1), "destination unreachable (code 1)");
        assert_eq!(icmpv6_name(3, 0), "time exceeded");
    }
}
