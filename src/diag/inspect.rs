//! The established TCP flows of this network namespace as the kernel sees them (INET_DIAG),
//! with what limits each sending flow, for `tcptune inspect`. No printing; the renderer is
//! [`crate::output::inspect`].
//!
//! # Platform specific behavior
//! Linux only (sock_diag netlink); elsewhere [`flows`] is a usage error.

use std::net::{IpAddr, SocketAddr};

use serde::Serialize;

use crate::bdp;
use crate::tcp::tcpinfo::{LimitedBy, TcpInfo};
use crate::text::{self, Foreign};
use crate::units::{Bytes, Span};

/// One flow. The `*_limited_pct` fields are shares of the sender's busy time, as `ss -i` shows
/// them; null for a flow that has sent nothing (it only receives).
#[derive(Debug, Clone, Serialize)]
pub struct Flow {
    pub local: String,
    pub peer: String,
    /// The kernel's name for it (a module may name itself anything): shown escaped.
    pub congestion_control: Option<Foreign>,
    /// The congctl of the route this host uses to the peer (`ip route get PEER`), when it has
    /// one: a host route of `apply --scope path`, say.
    pub route_congestion_control: Option<Foreign>,
    /// Whether that route chose the flow's congestion control (they are the same); false
    /// when no route names one, or a program chose another (TCP_CONGESTION).
    pub cc_from_route: bool,
    /// Smoothed RTT.
    pub rtt_ms: f64,
    pub min_rtt_ms: f64,
    pub rttvar_ms: f64,
    /// Congestion window, segments.
    pub cwnd: u32,
    pub mss: u32,
    pub delivery_rate_bps: f64,
    pub pacing_rate_bps: Option<f64>,
    pub bytes_in_flight: u64,
    pub bytes_acked: u64,
    pub bytes_received: u64,
    pub retransmitted_bytes: u64,
    /// The peer's advertised window (Linux 5.4+), bytes.
    pub peer_window: Option<u64>,
    /// The window this end advertises (Linux 6.2+), bytes.
    pub local_window: Option<u64>,
    pub busy_ms: Option<f64>,
    pub rwnd_limited_pct: Option<f64>,
    pub sndbuf_limited_pct: Option<f64>,
    pub network_limited_pct: Option<f64>,
    pub limited_by: Option<LimitedBy>,
    /// The process that holds the socket (socket inode → /proc/PID/fd); null when no process
    /// this user may look into holds it (run as root to see every owner).
    pub process: Option<Process>,
    /// Advice for this flow, when a buffer or its application limits it.
    pub note: Option<String>,
}

/// A process that owns a flow's socket.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Process {
    pub pid: u32,
    /// /proc/PID/comm: whatever its owner named it (prctl, /proc/self/comm), up to 15
    /// bytes of anything but NUL, so shown escaped; compare with [`Foreign::raw`].
    pub name: Foreign,
}

/// OpenSSH's programs: a flow they own is held to OpenSSH's own window
/// ([`crate::ceilings`]) whatever the kernel's buffers.
const OPENSSH: &[&str] = &["ssh", "sshd", "sshd-session", "scp", "sftp", "sftp-server"];

/// Why an application-limited flow is limited, naming its program when known.
pub(crate) fn application_note(owner: Option<&Process>, min_rtt_ms: f64) -> String {
    let who = owner.map_or_else(
        || "its application (owner not visible to this user: run as root to name it)".to_string(),
        |p| format!("{} (pid {})", p.name, p.pid),
    );
    let mut note = format!(
        "application limited: the congestion window had room and nothing was left unsent, so {who} did not hand data faster"
    );
    if let Some(p) = owner
        && OPENSSH.contains(&p.name.raw())
        && let Some(w) = crate::ceilings::APP_WINDOWS.first()
    {
        let rtt = Span::from_millis_f64(min_rtt_ms.max(0.001));
        note.push_str(&format!(
            ": OpenSSH keeps its own {} window ({}), at most {} at {} ms whatever the kernel allows; use {}",
            Bytes::new(w.window_bytes).iec(),
            w.source,
            text::rate(bdp::max_throughput_bps(Bytes::new(w.window_bytes), rtt)),
            text::ms(min_rtt_ms),
            w.way_out
        ));
    } else {
        note.push_str(" (it reads a disk, waits on a peer, or paces itself): buffers are not the limit");
    }
    note
}

#[derive(Debug, Serialize)]
pub struct Report {
    pub host: Option<String>,
    pub flows: Vec<Flow>,
}

/// A share of the busy time above which a buffer deserves a note.
const NOTE_PCT: f64 = 20.0;

/// A flow from its addresses, congestion control and TCP_INFO.
pub fn flow(local: SocketAddr, peer: SocketAddr, cc: Option<Foreign>, i: &TcpInfo, process: Option<Process>) -> Flow {
    let b = i.breakdown(None);
    // A sender with nothing unsent and its congestion window far from full is held back by
    // its application, not the network.
    let app = i.application_limited_now();
    let limited_by = b.map(|b| {
        if app && b.limited_by == LimitedBy::Network {
            LimitedBy::Application
        } else {
            b.limited_by
        }
    });
    let rtt = Span::from_millis_f64(f64::from(i.tcpi_rtt.max(1)) / 1000.0);
    let peer_window = Some(u64::from(i.tcpi_snd_wnd)).filter(|&w| w > 0);
    let note = b.and_then(|b| {
        if b.rwnd_limited_pct >= NOTE_PCT {
            let w = peer_window.map(|w| {
                format!(
                    ": the peer advertises {}, {} at {} ms",
                    text::bytes(w),
                    text::rate(bdp::max_throughput_bps(Bytes::new(w), rtt)),
                    text::ms(i.rtt_ms())
                )
            });
            Some(format!(
                "receive window limited {} of the time{}: raise the receive buffer maximum on the peer (tcp_rmem[2]; see tcptune advise)",
                text::pct(b.rwnd_limited_pct),
                w.unwrap_or_default()
            ))
        } else if b.sndbuf_limited_pct >= NOTE_PCT {
            Some(format!(
                "send buffer limited {} of the time: raise tcp_wmem[2] here (see tcptune advise), or the program's SO_SNDBUF",
                text::pct(b.sndbuf_limited_pct)
            ))
        } else if limited_by == Some(LimitedBy::Application) {
            Some(application_note(process.as_ref(), i.min_rtt_ms()))
        } else {
            None
        }
    });
    #[allow(clippy::cast_precision_loss)]
    Flow {
        local: local.to_string(),
        peer: peer.to_string(),
        congestion_control: cc,
        route_congestion_control: None,
        cc_from_route: false,
        rtt_ms: text::ms(i.rtt_ms()),
        min_rtt_ms: text::ms(i.min_rtt_ms()),
        rttvar_ms: text::ms(f64::from(i.tcpi_rttvar) / 1000.0),
        cwnd: i.tcpi_snd_cwnd,
        mss: i.tcpi_snd_mss,
        delivery_rate_bps: i.tcpi_delivery_rate as f64 * 8.0,
        pacing_rate_bps: (i.tcpi_pacing_rate > 0 && i.tcpi_pacing_rate != u64::MAX)
            .then_some(i.tcpi_pacing_rate as f64 * 8.0),
        bytes_in_flight: i.bytes_in_flight(),
        bytes_acked: i.tcpi_bytes_acked,
        bytes_received: i.tcpi_bytes_received,
        retransmitted_bytes: i.tcpi_bytes_retrans,
        peer_window,
        local_window: Some(u64::from(i.tcpi_rcv_wnd)).filter(|&w| w > 0),
        busy_ms: b.map(|b| b.busy_ms),
        rwnd_limited_pct: b.map(|b| b.rwnd_limited_pct),
        sndbuf_limited_pct: b.map(|b| b.sndbuf_limited_pct),
        network_limited_pct: b.map(|b| b.network_limited_pct),
        limited_by,
        process,
        note,
    }
}

/// Whether this OS can list its flows: Linux can (sock_diag netlink); elsewhere the usage
/// error says what to use instead. Callers ask before resolving a peer for [`flows`].
pub fn supported() -> anyhow::Result<()> {
    if cfg!(target_os = "linux") {
        return Ok(());
    }
    Err(
        crate::error::Error::usage("inspect reads the kernel's socket table through INET_DIAG, which only Linux has")
            .with_hint(
                "on FreeBSD, `sockstat -4 -c` and `tcpdrop`-style tools list flows; `tcptune verify` works everywhere",
            )
            .into(),
    )
}

/// One established socket as the kernel dumped it: what [`flows`] reads once and `watch`
/// reads every interval.
#[derive(Debug, Clone)]
pub struct Reading {
    pub local: SocketAddr,
    pub peer: SocketAddr,
    pub cc: Option<Foreign>,
    pub info: TcpInfo,
    pub process: Option<Process>,
}

/// The owners of sockets already looked up, by inode (None: no process this user may look
/// into holds it): `watch` keeps one across intervals, so /proc is walked only when new
/// sockets appear.
pub type Owners = std::collections::BTreeMap<u32, Option<Process>>;

/// The established TCP sockets of this network namespace with their TCP_INFO, to one of
/// `peers` (the addresses of the host asked about, resolved by the caller) and with `port` at
/// either end when given, in the kernel's order; their owners from `owners`, looked up for the
/// sockets it does not hold yet (and those gone dropped from it).
#[cfg(target_os = "linux")]
pub fn readings(peers: Option<&[IpAddr]>, port: Option<u16>, owners: &mut Owners) -> anyhow::Result<Vec<Reading>> {
    use anyhow::Context as _;
    let sockets: Vec<_> = crate::tcp::sockdiag::tcp_sockets()
        .context("reading the TCP sockets (sock_diag netlink)")?
        .into_iter()
        .filter(|s| s.info.is_some())
        .filter(|s| peers.is_none_or(|p| p.contains(&s.peer.ip())))
        .filter(|s| port.is_none_or(|p| s.local.port() == p || s.peer.port() == p))
        .collect();
    let live: std::collections::HashSet<u32> = sockets.iter().map(|s| s.inode).collect();
    owners.retain(|inode, _| live.contains(inode));
    let new: std::collections::HashSet<u32> = live.iter().copied().filter(|i| !owners.contains_key(i)).collect();
    if !new.is_empty() {
        let found = crate::host::linux::socket_owners(std::path::Path::new(crate::host::linux::PROC), &new);
        for inode in new {
            // Another user's process and the kernel's names: text from outside, escaped
            // when shown.
            let p = found.get(&inode).map(|(pid, name)| Process {
                pid: *pid,
                name: Foreign::new(name.as_str()),
            });
            owners.insert(inode, p);
        }
    }
    Ok(sockets
        .into_iter()
        .filter_map(|s| {
            Some(Reading {
                local: s.local,
                peer: s.peer,
                cc: s.cong.map(Foreign::new),
                info: s.info?,
                process: owners.get(&s.inode).cloned().flatten(),
            })
        })
        .collect())
}

#[cfg(not(target_os = "linux"))]
pub fn readings(_peers: Option<&[IpAddr]>, _port: Option<u16>, _owners: &mut Owners) -> anyhow::Result<Vec<Reading>> {
    supported().map(|()| Vec::new())
}

/// The established TCP flows of this network namespace, to one of `peers` and with `port` at
/// either end when given ([`readings`]), the busiest first.
#[cfg(target_os = "linux")]
pub fn flows(peers: Option<&[IpAddr]>, port: Option<u16>) -> anyhow::Result<Vec<Flow>> {
    let mut flows: Vec<(u64, Flow)> = readings(peers, port, &mut Owners::new())?
        .into_iter()
        .map(|r| {
            (
                r.info.tcpi_bytes_acked + r.info.tcpi_bytes_received,
                flow(r.local, r.peer, r.cc, &r.info, r.process),
            )
        })
        .collect();
    // The busiest flows first.
    flows.sort_by_key(|x| std::cmp::Reverse(x.0));
    let mut flows: Vec<Flow> = flows.into_iter().map(|(_, f)| f).collect();
    route_choices(&mut flows);
    Ok(flows)
}

/// The most peers whose routes are looked up (one netlink query each).
#[cfg(target_os = "linux")]
const ROUTE_LOOKUPS: usize = 64;

/// Each flow's route congestion control: the congctl of the route to its peer, and whether
/// it is the flow's own (the route chose it). Best effort: a peer whose route cannot be read
/// has none.
#[cfg(target_os = "linux")]
fn route_choices(flows: &mut [Flow]) {
    let mut seen: std::collections::BTreeMap<IpAddr, Option<String>> = std::collections::BTreeMap::new();
    for f in flows.iter_mut() {
        let Ok(peer) = f.peer.parse::<SocketAddr>() else {
            continue;
        };
        if !seen.contains_key(&peer.ip()) && seen.len() >= ROUTE_LOOKUPS {
            continue;
        }
        let cc = seen
            .entry(peer.ip())
            .or_insert_with(|| {
                crate::route::netlink::lookup(peer.ip())
                    .ok()
                    .and_then(|l| l.matched)
                    .and_then(|r| r.congctl)
            })
            .clone();
        f.cc_from_route = cc.is_some() && f.congestion_control.as_ref().map(Foreign::raw) == cc.as_deref();
        f.route_congestion_control = cc.map(Foreign::new);
    }
}

#[cfg(not(target_os = "linux"))]
pub fn flows(_peers: Option<&[IpAddr]>, _port: Option<u16>) -> anyhow::Result<Vec<Flow>> {
    supported().map(|()| Vec::new())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_window_limited_sender_gets_a_note() {
        let i = TcpInfo {
            tcpi_rtt: 50_000,
            tcpi_min_rtt: 49_900,
            tcpi_snd_cwnd: 300,
            tcpi_snd_mss: 1448,
            tcpi_delivery_rate: 5_000_000,
            tcpi_busy_time: 2_000_000,
            tcpi_rwnd_limited: 1_800_000,
            tcpi_snd_wnd: 262_144,
            tcpi_bytes_acked: 10_000_000,
            ..TcpInfo::default()
        };
        let f = flow(
            "198.18.0.1:40000".parse().expect("addr"),
            "198.18.0.2:5301".parse().expect("addr"),
            Some(Foreign::new("bbr")),
            &i,
            None,
        );
        assert_eq!(f.rtt_ms, 50.0);
        assert_eq!(f.delivery_rate_bps, 40e6);
        assert_eq!(f.limited_by, Some(LimitedBy::ReceiveWindow));
        assert_eq!(f.rwnd_limited_pct, Some(90.0));
        let note = f.note.expect("note");
        assert!(note.contains("262144 bytes") && note.contains("41.94 Mbit/s"), "{note}");
        let v = serde_json::to_value(flow(
            "127.0.0.1:1".parse().expect("addr"),
            "127.0.0.1:2".parse().expect("addr"),
            None,
            &TcpInfo::default(),
            None,
        ))
        .expect("json");
        for k in [
            "local",
            "peer",
            "rtt_ms",
            "cwnd",
            "delivery_rate_bps",
            "rwnd_limited_pct",
            "sndbuf_limited_pct",
        ] {
            assert!(v.get(k).is_some(), "{k} in {v}");
        }
        assert!(v["rwnd_limited_pct"].is_null(), "a receiving flow: {v}");
    }

    #[test]
    fn an_application_limited_flow_names_its_program() {
        // Busy 2 s, no buffer limited, nothing unsent and the window half empty: the application.
        let i = TcpInfo {
            tcpi_rtt: 150_000,
            tcpi_min_rtt: 150_000,
            tcpi_snd_cwnd: 1000,
            tcpi_snd_mss: 1448,
            tcpi_busy_time: 2_000_000,
            tcpi_bytes_acked: 10_000_000,
            ..TcpInfo::default()
        };
        let addr = |s: &str| s.parse().expect("addr");
        let ssh = Process {
            pid: 812,
            name: Foreign::new("ssh"),
        };
        let f = flow(
            addr("198.18.0.1:40000"),
            addr("198.18.0.2:22"),
            None,
            &i,
            Some(ssh.clone()),
        );
        assert_eq!(f.limited_by, Some(LimitedBy::Application));
        assert_eq!(f.process, Some(ssh));
        let note = f.note.expect("note");
        assert!(note.contains("so ssh (pid 812) did not hand data faster"), "{note}");
        assert!(
            note.contains("OpenSSH keeps its own 2 MiB window") && note.contains("111.8 Mbit/s at 150 ms"),
            "{note}"
        );
        let other = flow(
            addr("198.18.0.1:40001"),
            addr("198.18.0.2:80"),
            None,
            &i,
            Some(Process {
                pid: 9,
                name: Foreign::new("curl"),
            }),
        );
        let note = other.note.expect("note");
        assert!(
            note.contains("curl (pid 9)") && note.contains("buffers are not the limit") && !note.contains("OpenSSH"),
            "{note}"
        );
        let unknown = flow(addr("198.18.0.1:40002"), addr("198.18.0.2:80"), None, &i, None);
        assert!(unknown.note.expect("note").contains("run as root to name it"));
    }

    #[test]
    fn another_users_process_name_is_shown_escaped() {
        let i = TcpInfo {
            tcpi_rtt: 150_000,
            tcpi_min_rtt: 150_000,
            tcpi_snd_cwnd: 1000,
            tcpi_snd_mss: 1448,
            tcpi_busy_time: 2_000_000,
            tcpi_bytes_acked: 10_000_000,
            ..TcpInfo::default()
        };
        let forged = Process {
            pid: 4242,
            name: Foreign::new("\u{1b}[31m\nkernel.x="),
        };
        let f = flow(
            "198.18.0.1:40000".parse().expect("addr"),
            "198.18.0.2:22".parse().expect("addr"),
            Some(Foreign::new("bbr\u{1b}[2J")),
            &i,
            Some(forged),
        );
        let note = f.note.clone().expect("an application-limited note names it");
        assert!(!note.chars().any(char::is_control), "{note:?}");
        assert!(note.contains("so \\u{1b}[31m\\u{a}kernel.x= (pid 4242) did"), "{note}");
        let v = serde_json::to_value(&f).expect("json");
        assert_eq!(v["process"]["name"], "\\u{1b}[31m\\u{a}kernel.x=");
        assert_eq!(v["congestion_control"], "bbr\\u{1b}[2J");
        assert_eq!(
            f.process.expect("owner").name.raw(),
            "\u{1b}[31m\nkernel.x=",
            "kept as read"
        );
    }
}
