//! Bottleneck capacity by packet dispersion (as in pathrate and CapProbe).
//!
//! A train of back-to-back, MTU-sized ICMP echo requests leaves this host faster than the
//! path's narrowest link can carry it, so the bottleneck spaces the packets by
//! `size × 8 / C`; the echo replies come back at least that far apart. The kernel timestamps
//! each reply as it arrives (`SO_TIMESTAMPNS`; userspace clocks taken after a wake-up see
//! replies in batches and are useless at these spacings). The whole-train formula is
//! `C = (IP bytes of replies 2..n) × 8 / (t_n − t_1)`; each train's rate here is the median of
//! that formula over runs of 8 consecutive gaps ([`dispersion_bps`]), which keeps one late
//! timestamp or one stall from moving the result. On 360 recorded lab trains (TUN delay line
//! at 50 and 500 Mbit/s, RTT 40–600 ms) single trains read −54 % to +36 % off with the
//! whole-train formula (2–3 ms stalls of the line, a late first arrival) and −4 % to +0.2 %
//! with the windowed median.
//!
//! Several trains go out 50 ms apart (more once a first estimate says a train takes longer
//! than that to drain); trains with fewer than half their replies are rejected. The estimate
//! is the centre of the densest cluster — the most trains whose rates lie within 10 % of each
//! other ([`densest`]) — of the *dispersed* trains, and while fewer than three of them or not
//! most of them agree, another round of trains goes out (at most [`MAX_ROUNDS`]; see
//! [`summarize`]). Why not the mean, nor even the plain median: the errors of a train have opposite signs and are not
//! rare on a busy host — cross traffic or a stall stretches a train (too low); a stall *after*
//! the bottleneck releases the queued replies together and compresses the whole train (too
//! high; at 500 Mbit/s a 48-packet train is 1.2 ms long, so one 2 ms hiccup of a virtual
//! machine does it). Spoilt trains scatter, good ones agree: on the lab under 10–20 % CPU
//! steal, three of five trains came back compressed to 0.8–2.6 Gbit/s on a 500 Mbit/s path,
//! and the median of five said 800 Mbit/s.
//!
//! Sockets: as in [`super::icmp`], an unprivileged ping socket (`SOCK_DGRAM`) where
//! `net.ipv4.ping_group_range` allows it, else a raw socket (root / CAP_NET_RAW). With a ping
//! socket the kernel picks the echo identifier and hands us only our replies, matched here by
//! sequence number; with a raw socket we choose the identifier and filter on it (IPv4 raw
//! sockets also deliver the IP header, whose total length is the byte count). IPv4 and IPv6
//! (ICMPv6 echo 128/129) both work.
//!
//! A train can only show a bottleneck slower than the rate at which this host emits it
//! (one `sendmmsg`, a few µs per packet). When the replies come back no more spread out
//! than the requests went out, the estimate is a lower bound: [`CapacityEstimate::sender_limited`].
//!
//! # Platform specific behavior
//! Linux only (`SO_TIMESTAMPNS`, ping sockets, `sendmmsg`). Elsewhere
//! [`estimate_capacity`] returns an error and the caller goes without an estimate.

use std::net::IpAddr;
use std::time::Duration;

use serde::Serialize;

/// Trains per estimate.
pub const DEFAULT_TRAINS: u32 = 5;
/// Echo requests per train.
pub const DEFAULT_PER_TRAIN: u32 = 48;
/// Largest IP packet sent: bigger ones would be fragmented or dropped on most paths.
pub const MAX_PACKET: usize = 1500;
/// Smallest IP packet sent: the dispersion of tiny packets drowns in per-packet overheads.
pub const MIN_PACKET: usize = 576;
/// Gaps per window of [`dispersion_bps`]: a sixth of a default train.
pub const WINDOW_GAPS: usize = 8;
/// Spacing of trains, at least.
pub const TRAIN_GAP: Duration = Duration::from_millis(50);
/// Spacing of trains, at most (bounds the time on slow paths).
pub const MAX_TRAIN_GAP: Duration = Duration::from_millis(250);
/// Rounds of trains at most: a round more goes out while the trains disagree.
pub const MAX_ROUNDS: u32 = 3;
/// Rates within this ratio of each other (the slowest to the fastest) agree.
pub const AGREE_RATIO: f64 = 1.10;
/// A train is sender-limited when its replies are spread out less than this factor times the
/// time it took to send it.
pub const SENDER_LIMIT_RATIO: f64 = 1.25;

/// The result of a packet-train measurement.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CapacityEstimate {
    /// Bottleneck rate, bit/s at the IP level (IP headers included): the median of the
    /// densest cluster ([`densest`]) of the dispersed trains' rates, or of all of
    /// `samples_bps` when fewer than three dispersed trains agree ([`summarize`]).
    pub bps: u64,
    /// Trains sent.
    pub trains: u32,
    /// Trains that gave a sample (at least half their replies, a measurable spread).
    pub used: u32,
    /// Used trains whose replies came back more spread out than the requests left.
    pub dispersed: u32,
    /// Used trains whose rates agree with `bps` (the densest cluster).
    pub agreeing: u32,
    /// Enough trains agree to trust `bps`: three or more dispersed trains in one cluster, and
    /// most of the dispersed ones; or, when none was dispersed, most of all trains.
    pub agreed: bool,
    /// One dispersion rate per used train, in send order.
    pub samples_bps: Vec<u64>,
    /// IP total length of every request (and reply).
    pub packet_bytes: usize,
    /// Echo requests per train.
    pub per_train: u32,
    /// The replies came back (in most used trains) about as fast as the requests left: the
    /// path may be faster than `bps`, which is then a lower bound.
    pub sender_limited: bool,
}

/// One echo reply: its IP total length and the kernel's receive time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Reply {
    pub ip_bytes: usize,
    /// Nanoseconds on any fixed clock (CLOCK_REALTIME from the kernel).
    pub at_ns: i64,
}

/// What one train gave.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TrainOutcome {
    /// The replies, in any order.
    pub replies: Vec<Reply>,
    /// Time from before the first request was handed to the kernel to after the last, ns.
    pub send_span_ns: i64,
}

/// The dispersion rate of one train, bit/s: over every run of `window` consecutive gaps
/// (`window + 1` consecutive arrivals), the bytes of the arrivals after the first over the time
/// from the first to the last; the median of those. With `window` ≥ the number of gaps this
/// is the whole-train formula, `(bytes of replies 2..n) × 8 / (t_n − t_1)`. A run with no
/// spread counts as infinitely fast. None with fewer than two replies, or when the median
/// run has no spread.
///
/// Why windows: the whole-train formula rests on two timestamps. A late first arrival (a
/// receiver woken from idle) compresses the train, a stall anywhere (a packet held up after
/// the bottleneck, and everything behind it) stretches it, and either error lands in full on
/// the estimate. A stall or a burst spoils only the windows that contain it, and the median
/// ignores them; windows several gaps long still average over receive-side batching
/// (interrupt coalescing) that would make single gaps meaningless.
pub fn dispersion_bps(replies: &[Reply], window: usize) -> Option<f64> {
    let mut r = replies.to_vec();
    r.sort_by_key(|r| r.at_ns);
    if r.len() < 2 {
        return None;
    }
    let w = window.clamp(1, r.len() - 1);
    let mut rates: Vec<f64> = r
        .windows(w + 1)
        .map(|run| {
            let span_ns = run[w].at_ns - run[0].at_ns;
            let bytes: usize = run[1..].iter().map(|x| x.ip_bytes).sum();
            #[allow(clippy::cast_precision_loss)]
            if span_ns > 0 {
                bytes as f64 * 8.0 * 1e9 / span_ns as f64
            } else {
                f64::INFINITY
            }
        })
        .collect();
    rates.sort_by(f64::total_cmp);
    let n = rates.len();
    let mid = if n % 2 == 1 {
        rates[n / 2]
    } else {
        rates[n / 2 - 1] / 2.0 + rates[n / 2] / 2.0
    };
    mid.is_finite().then_some(mid)
}

/// The median; the mean of the middle two for an even count. None when empty.
pub fn median(values: &[u64]) -> Option<u64> {
    let mut v = values.to_vec();
    v.sort_unstable();
    let n = v.len();
    match n {
        0 => None,
        _ if n % 2 == 1 => Some(v[n / 2]),
        _ => Some(v[n / 2 - 1] / 2 + v[n / 2] / 2 + (v[n / 2 - 1] % 2 + v[n / 2] % 2) / 2),
    }
}

/// Fewest replies a train needs to count: half of it, rounded up.
pub fn min_replies(per_train: u32) -> usize {
    per_train.div_ceil(2) as usize
}

/// The densest cluster of `samples`: the most samples that lie within [`AGREE_RATIO`] of each
/// other (slowest to fastest). Returns its median and size; among clusters of the same size,
/// the one whose median is nearest the median of all samples. None when empty.
pub fn densest(samples: &[u64]) -> Option<(u64, usize)> {
    let mut v = samples.to_vec();
    v.sort_unstable();
    let all = median(&v)?;
    let mut best: Option<(u64, usize)> = None;
    for (i, &lo) in v.iter().enumerate() {
        #[allow(clippy::cast_precision_loss)]
        let n = v[i..]
            .iter()
            .take_while(|&&x| x as f64 <= lo as f64 * AGREE_RATIO)
            .count();
        let m = median(&v[i..i + n])?;
        let better = match best {
            None => true,
            Some((bm, bn)) => n > bn || (n == bn && m.abs_diff(all) < bm.abs_diff(all)),
        };
        if better {
            best = Some((m, n));
        }
    }
    best
}

/// Combine the trains: reject the short ones; the estimate is the centre of the densest
/// cluster ([`densest`]) of the *dispersed* trains — those whose replies came back more spread
/// out than the requests left — when three or more of them agree. Compression after the
/// bottleneck only ever makes a train read faster, up to as fast as it was sent, so a cluster
/// of dispersed trains is the bottleneck and the sender-limited trains beside it are
/// compressed copies. Otherwise the densest cluster of all trains, flagged sender-limited when
/// most trains were.
pub fn summarize(outcomes: &[TrainOutcome], per_train: u32, packet_bytes: usize) -> Result<CapacityEstimate, String> {
    let need = min_replies(per_train);
    let mut samples = Vec::new();
    let mut dispersed = Vec::new();
    let mut short = 0usize;
    for t in outcomes {
        if t.replies.len() < need {
            short += 1;
            continue;
        }
        let Some(bps) = dispersion_bps(&t.replies, WINDOW_GAPS) else {
            continue;
        };
        let first = t.replies.iter().map(|r| r.at_ns).min().unwrap_or(0);
        let last = t.replies.iter().map(|r| r.at_ns).max().unwrap_or(0);
        #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
        let bps = bps.round() as u64;
        #[allow(clippy::cast_precision_loss)]
        if ((last - first) as f64) >= SENDER_LIMIT_RATIO * t.send_span_ns as f64 {
            dispersed.push(bps);
        }
        samples.push(bps);
    }
    let trains = u32::try_from(outcomes.len()).unwrap_or(u32::MAX);
    let count = |n: usize| u32::try_from(n).unwrap_or(u32::MAX);
    // Three or more dispersed trains that agree outvote everything else.
    let cluster = densest(&dispersed)
        .filter(|(_, n)| *n >= 3)
        .map(|(bps, n)| (bps, n, true))
        .or_else(|| densest(&samples).map(|(bps, n)| (bps, n, false)));
    let Some((bps, agreeing, of_dispersed)) = cluster else {
        let got: usize = outcomes.iter().map(|t| t.replies.len()).sum();
        return Err(if got == 0 {
            format!("no echo reply to {trains} trains of {per_train} requests of {packet_bytes} bytes")
        } else if short == outcomes.len() {
            format!(
                "every train lost more than half its replies ({got} of {} came back)",
                outcomes.len() * per_train as usize
            )
        } else {
            "the replies of every train arrived at the same instant: no measurable spread".to_string()
        });
    };
    let (agreed, sender_limited) = if of_dispersed {
        (agreeing * 2 > dispersed.len(), false)
    } else {
        let limited = samples.len() - dispersed.len();
        (
            dispersed.is_empty() && agreeing >= 3 && agreeing * 2 > samples.len(),
            limited * 2 > samples.len(),
        )
    };
    Ok(CapacityEstimate {
        bps,
        trains,
        used: count(samples.len()),
        dispersed: count(dispersed.len()),
        agreeing: count(agreeing),
        agreed,
        sender_limited,
        samples_bps: samples,
        packet_bytes,
        per_train,
    })
}

/// Send `trains` trains of `per_train` echo requests of `ip_size` bytes (clamped to
/// [`MIN_PACKET`]..=[`MAX_PACKET`] and to the kernel's path MTU) to `addr`, and estimate the
/// bottleneck rate from the spacing of the replies; while the trains disagree
/// ([`CapacityEstimate::agreed`]),
/// up to [`MAX_ROUNDS`] rounds of `trains`. Blocks: from async code run it with
/// `spawn_blocking`. Takes at most about `MAX_ROUNDS × ((trains − 1) × 250 ms + timeout)`;
/// usually `(trains − 1) × 50 ms + RTT + one train's drain time`.
pub fn estimate_capacity(
    addr: IpAddr,
    ip_size: usize,
    trains: u32,
    per_train: u32,
    timeout: Duration,
) -> Result<CapacityEstimate, String> {
    if trains == 0 || per_train < 2 || u64::from(MAX_ROUNDS) * u64::from(trains) * u64::from(per_train) > 1 << 15 {
        return Err(format!(
            "{trains} trains of {per_train}: need at least 1 train of at least 2 packets, {} packets a round at most",
            (1 << 15) / MAX_ROUNDS
        ));
    }
    let ip_size = ip_size.clamp(MIN_PACKET, MAX_PACKET);
    #[cfg(target_os = "linux")]
    {
        linux::run(addr, ip_size, trains, per_train, timeout)
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = (addr, ip_size, timeout);
        Err("packet trains are only implemented on Linux".to_string())
    }
}

/// The ICMP checksum (RFC 1071) of `data`.
pub fn icmp_checksum(data: &[u8]) -> u16 {
    let mut sum: u32 = data
        .chunks(2)
        .map(|c| u32::from(u16::from_be_bytes([c[0], c.get(1).copied().unwrap_or(0)])))
        .sum();
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}

/// An echo request of `icmp_len` bytes (8-byte header and payload), checksummed (a ping socket
/// and an ICMPv6 raw socket recompute it; an IPv4 raw socket sends it as is).
pub fn echo_request(v6: bool, ident: u16, seq: u16, icmp_len: usize) -> Vec<u8> {
    let mut p = vec![0u8; icmp_len.max(8)];
    p[0] = if v6 { 128 } else { 8 };
    p[4..6].copy_from_slice(&ident.to_be_bytes());
    p[6..8].copy_from_slice(&seq.to_be_bytes());
    for (i, b) in p.iter_mut().enumerate().skip(8) {
        *b = (i & 0xff) as u8;
    }
    let c = icmp_checksum(&p);
    p[2..4].copy_from_slice(&c.to_be_bytes());
    p
}

/// An echo reply as a socket delivered it: (sequence, IP total length), or None if `buf` is
/// something else. `raw_v4`: the buffer starts with the IPv4 header. `ident`: the identifier
/// to require (raw sockets see every echo reply; a ping socket only its own).
pub fn parse_echo_reply(buf: &[u8], v6: bool, raw_v4: bool, ident: Option<u16>) -> Option<(u16, usize)> {
    let (icmp, ip_bytes) = if raw_v4 {
        let ihl = usize::from(buf.first()? & 0x0f) * 4;
        if buf.first()? >> 4 != 4 || ihl < 20 {
            return None;
        }
        let total = usize::from(u16::from_be_bytes([*buf.get(2)?, *buf.get(3)?]));
        (buf.get(ihl..)?, if total >= ihl + 8 { total } else { buf.len() })
    } else {
        // No IP header from a ping socket or an IPv6 raw socket: add the fixed header.
        (buf, buf.len() + if v6 { 40 } else { 20 })
    };
    let want = if v6 { 129 } else { 0 };
    if icmp.len() < 8 || icmp[0] != want || icmp[1] != 0 {
        return None;
    }
    if let Some(id) = ident
        && u16::from_be_bytes([icmp[4], icmp[5]]) != id
    {
        return None;
    }
    Some((u16::from_be_bytes([icmp[6], icmp[7]]), ip_bytes))
}

#[cfg(target_os = "linux")]
mod linux {
    use std::io;
    use std::net::IpAddr;
    use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
    use std::time::{Duration, Instant};

    use super::{
        CapacityEstimate, MAX_TRAIN_GAP, Reply, TRAIN_GAP, TrainOutcome, dispersion_bps, echo_request, median,
        parse_echo_reply, summarize,
    };
    use crate::measure::icmp::{PingAccess, SocketKind};

    /// A train with some replies is over when none came for this long (or for its spread so far).
    const IDLE_GRACE: Duration = Duration::from_millis(100);
    /// Longest poll sleep while waiting for replies.
    const POLL_SLICE: Duration = Duration::from_millis(10);
    const SOCKET_BUF: libc::c_int = 1 << 20;
    /// Room for an IPv4 header and the largest echo reply we send, and then some.
    const RECV_BUF: usize = 4096;

    struct Sock {
        fd: OwnedFd,
        kind: SocketKind,
        v6: bool,
    }

    fn last_err() -> io::Error {
        io::Error::last_os_error()
    }

    fn set_int(fd: RawFd, level: libc::c_int, name: libc::c_int, value: libc::c_int) -> io::Result<()> {
        // SAFETY: `value` is a live c_int and the length passed is its size.
        let r = unsafe {
            libc::setsockopt(
                fd,
                level,
                name,
                (&raw const value).cast(),
                std::mem::size_of::<libc::c_int>() as libc::socklen_t,
            )
        };
        if r == 0 { Ok(()) } else { Err(last_err()) }
    }

    fn get_int(fd: RawFd, level: libc::c_int, name: libc::c_int) -> io::Result<libc::c_int> {
        let mut value: libc::c_int = 0;
        let mut len = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
        // SAFETY: `value` and `len` are live and writable; `len` holds the size of `value`.
        let r = unsafe { libc::getsockopt(fd, level, name, (&raw mut value).cast(), &raw mut len) };
        if r == 0 { Ok(value) } else { Err(last_err()) }
    }

    /// A ping socket where ping_group_range allows it, else a raw one; the other kind if the
    /// first is refused.
    fn open(addr: IpAddr) -> Result<Sock, String> {
        let access = PingAccess::current();
        let v6 = addr.is_ipv6();
        let (domain, proto) = if v6 {
            (libc::AF_INET6, libc::IPPROTO_ICMPV6)
        } else {
            (libc::AF_INET, libc::IPPROTO_ICMP)
        };
        let order = if access.dgram_allowed() {
            [libc::SOCK_DGRAM, libc::SOCK_RAW]
        } else {
            [libc::SOCK_RAW, libc::SOCK_DGRAM]
        };
        let mut refused = None;
        for ty in order {
            // SAFETY: plain socket(2); the result is checked before use.
            let fd = unsafe { libc::socket(domain, ty | libc::SOCK_CLOEXEC, proto) };
            if fd >= 0 {
                // SAFETY: `fd` was just returned by socket(2) and nothing else owns it.
                let fd = unsafe { OwnedFd::from_raw_fd(fd) };
                let kind = if ty == libc::SOCK_RAW {
                    SocketKind::Raw
                } else {
                    SocketKind::Dgram
                };
                return Ok(Sock { fd, kind, v6 });
            }
            let e = last_err();
            match e.raw_os_error() {
                Some(libc::EPERM | libc::EACCES) => refused = Some(e),
                _ => return Err(format!("cannot open an ICMP socket: {e}")),
            }
        }
        let e = refused.unwrap_or_else(|| io::Error::from_raw_os_error(libc::EPERM));
        Err(format!("ICMP not permitted ({})", access.describe_refusal(&e)))
    }

    /// Raw sockets see every ICMP message: let only echo replies through (best effort).
    fn filter_echo_replies(s: &Sock) {
        let fd = s.fd.as_raw_fd();
        if s.v6 {
            // struct icmp6_filter: 256 bits, a set bit blocks that type.
            let mut filter = [u32::MAX; 8];
            filter[129 >> 5] &= !(1 << (129 & 31));
            // SAFETY: `filter` is live and its size is passed; ICMP6_FILTER (1) at level
            // IPPROTO_ICMPV6 takes a struct icmp6_filter.
            unsafe {
                libc::setsockopt(
                    fd,
                    libc::IPPROTO_ICMPV6,
                    1,
                    filter.as_ptr().cast(),
                    std::mem::size_of_val(&filter) as libc::socklen_t,
                )
            };
        } else {
            // ICMP_FILTER (1) at level SOL_RAW (255): a set bit blocks that type; pass type 0.
            let _ = set_int(fd, 255, 1, !1);
        }
    }

    fn connect(s: &Sock, addr: IpAddr) -> io::Result<()> {
        // SAFETY: all-zero is a valid sockaddr_storage.
        let mut ss: libc::sockaddr_storage = unsafe { std::mem::zeroed() };
        let len = match addr {
            IpAddr::V4(a) => {
                let sin = libc::sockaddr_in {
                    sin_family: libc::AF_INET as libc::sa_family_t,
                    sin_port: 0,
                    sin_addr: libc::in_addr {
                        s_addr: u32::from_ne_bytes(a.octets()),
                    },
                    sin_zero: [0; 8],
                };
                // SAFETY: sockaddr_storage is larger than and aligned for sockaddr_in.
                unsafe { std::ptr::write((&raw mut ss).cast::<libc::sockaddr_in>(), sin) };
                std::mem::size_of::<libc::sockaddr_in>()
            }
            IpAddr::V6(a) => {
                let sin6 = libc::sockaddr_in6 {
                    sin6_family: libc::AF_INET6 as libc::sa_family_t,
                    sin6_port: 0,
                    sin6_flowinfo: 0,
                    sin6_addr: libc::in6_addr { s6_addr: a.octets() },
                    sin6_scope_id: 0,
                };
                // SAFETY: sockaddr_storage is larger than and aligned for sockaddr_in6.
                unsafe { std::ptr::write((&raw mut ss).cast::<libc::sockaddr_in6>(), sin6) };
                std::mem::size_of::<libc::sockaddr_in6>()
            }
        };
        // SAFETY: `ss` holds a valid sockaddr of `len` bytes.
        let r = unsafe { libc::connect(s.fd.as_raw_fd(), (&raw const ss).cast(), len as libc::socklen_t) };
        if r == 0 { Ok(()) } else { Err(last_err()) }
    }

    fn realtime_ns() -> i64 {
        let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
        // SAFETY: `ts` is a live, writable timespec.
        unsafe { libc::clock_gettime(libc::CLOCK_REALTIME, &raw mut ts) };
        timespec_ns(&ts)
    }

    /// Nanoseconds of a timespec.
    // time_t and c_long are i32 on some 32-bit targets: the conversions are not useless there.
    #[allow(clippy::useless_conversion)]
    fn timespec_ns(ts: &libc::timespec) -> i64 {
        i64::from(ts.tv_sec) * 1_000_000_000 + i64::from(ts.tv_nsec)
    }

    /// Hand all `packets` to the kernel with as few syscalls as it takes.
    fn send_all(fd: RawFd, packets: &mut [Vec<u8>]) -> io::Result<()> {
        let mut iovs: Vec<libc::iovec> = packets
            .iter_mut()
            .map(|p| libc::iovec {
                iov_base: p.as_mut_ptr().cast(),
                iov_len: p.len(),
            })
            .collect();
        let mut msgs: Vec<libc::mmsghdr> = iovs
            .iter_mut()
            .map(|iov| {
                // SAFETY: all-zero is a valid msghdr (no name, no control).
                let mut hdr: libc::msghdr = unsafe { std::mem::zeroed() };
                hdr.msg_iov = std::ptr::from_mut(iov);
                hdr.msg_iovlen = 1;
                libc::mmsghdr {
                    msg_hdr: hdr,
                    msg_len: 0,
                }
            })
            .collect();
        let mut done = 0;
        while done < msgs.len() {
            let rest = &mut msgs[done..];
            // SAFETY: `rest` is a live array of `rest.len()` mmsghdrs whose iovecs point into
            // `packets`, which outlive the call; the socket is connected, so no names.
            let n = unsafe { libc::sendmmsg(fd, rest.as_mut_ptr(), rest.len() as libc::c_uint, 0) };
            if n < 0 {
                let e = last_err();
                if e.kind() == io::ErrorKind::Interrupted {
                    continue;
                }
                return Err(e);
            }
            done += n as usize;
        }
        Ok(())
    }

    /// One datagram from the socket without waiting: Ok(None) when there is none.
    fn recv_one(fd: RawFd, buf: &mut [u8]) -> io::Result<Option<(usize, Option<i64>)>> {
        // u64s keep the control buffer aligned for cmsghdr.
        let mut control = [0u64; 16];
        let mut iov = libc::iovec {
            iov_base: buf.as_mut_ptr().cast(),
            iov_len: buf.len(),
        };
        // SAFETY: all-zero is a valid msghdr.
        let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
        msg.msg_iov = &raw mut iov;
        msg.msg_iovlen = 1;
        msg.msg_control = control.as_mut_ptr().cast();
        msg.msg_controllen = std::mem::size_of_val(&control) as _;
        loop {
            // SAFETY: `msg` points at `iov` (into `buf`) and `control`, all live and writable.
            let n = unsafe { libc::recvmsg(fd, &raw mut msg, libc::MSG_DONTWAIT) };
            if n >= 0 {
                if msg.msg_flags & libc::MSG_TRUNC != 0 {
                    return Ok(Some((0, None)));
                }
                return Ok(Some((n as usize, kernel_timestamp(&msg))));
            }
            let e = last_err();
            match e.kind() {
                io::ErrorKind::Interrupted => {}
                io::ErrorKind::WouldBlock => return Ok(None),
                _ => return Err(e),
            }
        }
    }

    /// The SCM_TIMESTAMPNS control message of `msg`, as ns.
    fn kernel_timestamp(msg: &libc::msghdr) -> Option<i64> {
        // SAFETY: `msg` was filled in by recvmsg; its control pointer and length are consistent.
        let mut cmsg = unsafe { libc::CMSG_FIRSTHDR(msg) };
        while !cmsg.is_null() {
            // SAFETY: CMSG_FIRSTHDR/CMSG_NXTHDR return null or a header inside the control buffer.
            let h = unsafe { &*cmsg };
            if h.cmsg_level == libc::SOL_SOCKET && h.cmsg_type == libc::SCM_TIMESTAMPNS {
                // SAFETY: an SCM_TIMESTAMPNS message carries a struct timespec, possibly unaligned.
                let ts: libc::timespec = unsafe { std::ptr::read_unaligned(libc::CMSG_DATA(cmsg).cast()) };
                return Some(timespec_ns(&ts));
            }
            // SAFETY: as above; `cmsg` is a header of `msg`.
            cmsg = unsafe { libc::CMSG_NXTHDR(msg, cmsg) };
        }
        None
    }

    fn poll_in(fd: RawFd, wait: Duration) {
        let mut p = libc::pollfd {
            fd,
            events: libc::POLLIN,
            revents: 0,
        };
        let ms = wait.as_millis().clamp(0, 1000) as libc::c_int;
        // SAFETY: `p` is one live pollfd.
        unsafe { libc::poll(&raw mut p, 1, ms) };
    }

    #[derive(Default)]
    struct Train {
        sent_at: Option<Instant>,
        send_span_ns: i64,
        replies: Vec<Option<Reply>>,
        count: usize,
        first_ns: i64,
        last_ns: i64,
        last_reply_at: Option<Instant>,
    }

    impl Train {
        fn done(&self, now: Instant, per_train: usize, timeout: Duration) -> bool {
            let Some(sent) = self.sent_at else {
                return false;
            };
            if self.count == per_train || now >= sent + timeout {
                return true;
            }
            let spread = Duration::from_nanos(u64::try_from(self.last_ns - self.first_ns).unwrap_or(0));
            self.last_reply_at.is_some_and(|t| now >= t + IDLE_GRACE.max(spread))
        }
    }

    pub(super) fn run(
        addr: IpAddr,
        ip_size: usize,
        trains: u32,
        per_train: u32,
        timeout: Duration,
    ) -> Result<CapacityEstimate, String> {
        let p = open_probe(addr, ip_size)?;
        let k = per_train as usize;
        let mut t = Trains::new(trains as usize, k);
        let mut buf = vec![0u8; RECV_BUF];
        loop {
            let now = Instant::now();
            if !t.all_sent() && now >= t.next_send {
                send_train(&p, &mut t, now, per_train, addr)?;
            }
            let now = Instant::now();
            if t.all_sent() && t.state.iter().all(|x| x.done(now, k, timeout)) {
                if !another_round(&t.state, trains, per_train, p.ip_size) {
                    break;
                }
                t.add_round(trains as usize);
            }
            let wait = if t.all_sent() {
                POLL_SLICE
            } else {
                t.next_send.saturating_duration_since(now).min(POLL_SLICE)
            };
            poll_in(p.fd(), wait);
            drain(&p, &mut t, &mut buf);
        }
        if t.no_stamp > 0 && t.state.iter().all(|x| x.count == 0) {
            return Err("the kernel attached no receive timestamps to the replies".to_string());
        }
        summarize(&outcomes(&t.state), per_train, p.ip_size).map_err(|e| match t.errors.first() {
            Some(first) => format!("{e} ({first})"),
            None => e,
        })
    }

    /// The connected socket of a measurement, and the shape of its echo requests.
    struct Probe {
        sock: Sock,
        /// A raw socket: the identifier is ours to pick and to filter on.
        raw: bool,
        /// IP bytes of a request, at most the kernel's path MTU.
        ip_size: usize,
        /// The IP header's share of `ip_size`.
        header: usize,
        /// A raw socket's echo identifier; a ping socket's is set by the kernel.
        ident: Option<u16>,
        seq_base: u16,
    }

    impl Probe {
        fn fd(&self) -> RawFd {
            self.sock.fd.as_raw_fd()
        }
    }

    /// The socket for trains to `addr` of `ip_size`-byte requests: kernel receive timestamps
    /// on, buffers for a whole train, connected, the size capped at the path MTU.
    fn open_probe(addr: IpAddr, ip_size: usize) -> Result<Probe, String> {
        let sock = open(addr)?;
        let fd = sock.fd.as_raw_fd();
        set_int(fd, libc::SOL_SOCKET, libc::SO_TIMESTAMPNS, 1)
            .map_err(|e| format!("no kernel receive timestamps (SO_TIMESTAMPNS): {e}"))?;
        // A whole train must fit in both buffers (the kernel caps these at [rw]mem_max × 2).
        let _ = set_int(fd, libc::SOL_SOCKET, libc::SO_RCVBUF, SOCKET_BUF);
        let _ = set_int(fd, libc::SOL_SOCKET, libc::SO_SNDBUF, SOCKET_BUF);
        let raw = sock.kind == SocketKind::Raw;
        if raw {
            filter_echo_replies(&sock);
        }
        connect(&sock, addr).map_err(|e| format!("cannot connect the ICMP socket to {addr}: {e}"))?;
        let (header, mtu) = if sock.v6 {
            (40, get_int(fd, libc::IPPROTO_IPV6, libc::IPV6_MTU))
        } else {
            (20, get_int(fd, libc::IPPROTO_IP, libc::IP_MTU))
        };
        // The kernel's path MTU for this destination (route MTU or a learned PMTU).
        let ip_size = match mtu {
            Ok(m) if m > 0 => ip_size.min(m as usize),
            _ => ip_size,
        };
        let ident = raw.then(crate::measure::random_u16);
        let seq_base = crate::measure::random_u16();
        Ok(Probe {
            sock,
            raw,
            ip_size,
            header,
            ident,
            seq_base,
        })
    }

    /// The trains of a measurement, sent and answered so far.
    struct Trains {
        state: Vec<Train>,
        /// Echo requests per train.
        k: usize,
        /// Trains sent.
        next: usize,
        next_send: Instant,
        /// Send and ICMP errors, the first few, to explain a failure.
        errors: Vec<String>,
        /// Replies that came without a kernel timestamp.
        no_stamp: usize,
    }

    impl Trains {
        fn new(n: usize, k: usize) -> Self {
            let mut t = Self {
                state: Vec::new(),
                k,
                next: 0,
                next_send: Instant::now(),
                errors: Vec::new(),
                no_stamp: 0,
            };
            t.add_round(n);
            t
        }

        /// `n` more trains to send.
        fn add_round(&mut self, n: usize) {
            let k = self.k;
            self.state.resize_with(self.state.len() + n, || Train {
                replies: vec![None; k],
                ..Train::default()
            });
        }

        fn all_sent(&self) -> bool {
            self.next == self.state.len()
        }

        /// Files the reply numbered `seq` under its train (a reply without a timestamp, to a
        /// train not sent, or a duplicate is not kept).
        fn record(&mut self, seq_base: u16, seq: u16, ip_bytes: usize, stamp: Option<i64>) {
            let idx = usize::from(seq.wrapping_sub(seq_base));
            let (ti, j) = (idx / self.k, idx % self.k);
            let Some(at_ns) = stamp else {
                self.no_stamp += 1;
                return;
            };
            if ti >= self.next || self.state[ti].replies[j].is_some() {
                return;
            }
            let t = &mut self.state[ti];
            t.replies[j] = Some(Reply { ip_bytes, at_ns });
            if t.count == 0 || at_ns < t.first_ns {
                t.first_ns = at_ns;
            }
            t.last_ns = t.last_ns.max(at_ns);
            t.count += 1;
            t.last_reply_at = Some(Instant::now());
        }
    }

    /// Sends the next train at `now` (one sendmmsg) and sets when the one after may go.
    fn send_train(p: &Probe, t: &mut Trains, now: Instant, per_train: u32, addr: IpAddr) -> Result<(), String> {
        let k = t.k;
        let mut packets: Vec<Vec<u8>> = (0..k)
            .map(|j| {
                let seq = p.seq_base.wrapping_add(((t.next * k + j) & 0xffff) as u16);
                echo_request(p.sock.v6, p.ident.unwrap_or(0), seq, p.ip_size - p.header)
            })
            .collect();
        let t0 = realtime_ns();
        let sent = send_all(p.fd(), &mut packets);
        let t1 = realtime_ns();
        let train = &mut t.state[t.next];
        train.sent_at = Some(now);
        train.send_span_ns = t1 - t0;
        if let Err(e) = sent {
            if e.raw_os_error() == Some(libc::EMSGSIZE) {
                return Err(format!(
                    "{}-byte echo requests exceed the path MTU to {addr}",
                    p.ip_size
                ));
            }
            t.errors.push(format!("send: {e}"));
        }
        t.next += 1;
        t.next_send = now + gap(&t.state, per_train, p.ip_size);
        Ok(())
    }

    /// Another round while the trains disagree — unless none was dispersed: then they all
    /// measured how fast this host sends, and so would another round.
    fn another_round(state: &[Train], trains: u32, per_train: u32, ip_size: usize) -> bool {
        state.len() < (super::MAX_ROUNDS * trains) as usize
            && summarize(&outcomes(state), per_train, ip_size).is_ok_and(|e| e.dispersed > 0 && !e.agreed)
    }

    /// Takes every reply waiting on the socket; kernel timestamps keep the arrival times exact.
    fn drain(p: &Probe, t: &mut Trains, buf: &mut [u8]) {
        for _ in 0..4096 {
            match recv_one(p.fd(), buf) {
                Ok(None) => break,
                Ok(Some((len, stamp))) => {
                    if let Some((seq, ip_bytes)) =
                        parse_echo_reply(&buf[..len], p.sock.v6, p.raw && !p.sock.v6, p.ident)
                    {
                        t.record(p.seq_base, seq, ip_bytes, stamp);
                    }
                }
                // ICMP errors reported on the connected socket (unreachable, ...).
                Err(e) => {
                    let e = e.to_string();
                    if !t.errors.contains(&e) && t.errors.len() < 3 {
                        t.errors.push(e);
                    }
                    break;
                }
            }
        }
    }

    fn outcomes(state: &[Train]) -> Vec<TrainOutcome> {
        state
            .iter()
            .map(|t| TrainOutcome {
                replies: t.replies.iter().flatten().copied().collect(),
                send_span_ns: t.send_span_ns,
            })
            .collect()
    }

    /// Time to the next train: 50 ms, or twice what one train takes to drain at the rate seen
    /// so far (at most 250 ms), so trains do not queue behind each other at a slow bottleneck.
    fn gap(state: &[Train], per_train: u32, ip_size: usize) -> Duration {
        let need = super::min_replies(per_train);
        let rates: Vec<u64> = state
            .iter()
            .filter(|t| t.count >= need)
            .filter_map(|t| {
                let replies: Vec<Reply> = t.replies.iter().flatten().copied().collect();
                #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
                dispersion_bps(&replies, super::WINDOW_GAPS).map(|b| b as u64)
            })
            .collect();
        let Some(rate) = median(&rates).filter(|r| *r > 0) else {
            return TRAIN_GAP;
        };
        #[allow(clippy::cast_precision_loss)]
        let drain = (u64::from(per_train) * ip_size as u64 * 8) as f64 / rate as f64;
        Duration::from_secs_f64(2.0 * drain).clamp(TRAIN_GAP, MAX_TRAIN_GAP)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn train(spacing_ns: i64, n: usize, bytes: usize) -> Vec<Reply> {
        (0..n)
            .map(|i| Reply {
                ip_bytes: bytes,
                at_ns: 1_000_000_000 + i as i64 * spacing_ns,
            })
            .collect()
    }

    #[test]
    fn dispersion_of_evenly_spaced_replies() {
        // 1500 B every 240 µs = 50 Mbit/s; 24 µs = 500 Mbit/s.
        for window in [1, WINDOW_GAPS, usize::MAX] {
            let bps = dispersion_bps(&train(240_000, 48, 1500), window).expect("rate");
            assert!((bps - 50e6).abs() < 1.0, "{bps}");
            let bps = dispersion_bps(&train(24_000, 48, 1500), window).expect("rate");
            assert!((bps - 500e6).abs() < 1.0, "{bps}");
        }
        // The whole-train formula: order does not matter, the first arrival's bytes do not count.
        let mut r = train(240_000, 3, 1000);
        r.swap(0, 2);
        r[1].ip_bytes = 500;
        assert_eq!(dispersion_bps(&r, usize::MAX), Some((500.0 + 1000.0) * 8.0 / 480e-6));
    }

    #[test]
    fn dispersion_needs_two_replies_and_a_spread() {
        assert_eq!(dispersion_bps(&[], WINDOW_GAPS), None);
        assert_eq!(dispersion_bps(&train(1000, 1, 1500), WINDOW_GAPS), None);
        assert_eq!(dispersion_bps(&train(0, 10, 1500), WINDOW_GAPS), None);
        // Fewer gaps than a window: one window, the whole train.
        assert_eq!(dispersion_bps(&train(1000, 3, 1500), WINDOW_GAPS), Some(12e9));
    }

    #[test]
    fn a_stall_moves_the_whole_train_formula_not_the_windows() {
        // 50 Mbit/s; a 2 ms stall after reply 17 delays everything behind it (as the lab's
        // delay line did), and the first reply arrives 60 µs late.
        let mut r = train(240_000, 48, 1500);
        for x in &mut r[17..] {
            x.at_ns += 2_000_000;
        }
        r[0].at_ns += 60_000;
        let whole = dispersion_bps(&r, usize::MAX).expect("rate");
        assert!(whole < 0.86 * 50e6, "{whole}");
        let windowed = dispersion_bps(&r, WINDOW_GAPS).expect("rate");
        assert!((windowed - 50e6).abs() < 0.001 * 50e6, "{windowed}");
    }

    #[test]
    fn batched_arrivals_still_average_out() {
        // Interrupt coalescing at 1 Gbit/s: replies handed up four at a time, 1 µs apart, every
        // 48 µs. Single gaps say 12 Gbit/s or 250 Mbit/s; windows of 8 gaps say 1 Gbit/s.
        let r: Vec<Reply> = (0..48)
            .map(|i| Reply {
                ip_bytes: 1500,
                at_ns: (i / 4) * 48_000 + (i % 4) * 1_000,
            })
            .collect();
        let bps = dispersion_bps(&r, WINDOW_GAPS).expect("rate");
        assert!((bps - 1e9).abs() < 0.05 * 1e9, "{bps}");
        assert!(dispersion_bps(&r, 1).expect("rate") > 5e9);
    }

    #[test]
    fn medians() {
        assert_eq!(median(&[]), None);
        assert_eq!(median(&[7]), Some(7));
        assert_eq!(median(&[9, 1, 5]), Some(5));
        assert_eq!(median(&[4, 1, 3, 2]), Some(2));
        assert_eq!(median(&[3, 4]), Some(3));
        assert_eq!(median(&[u64::MAX, u64::MAX]), Some(u64::MAX));
        assert_eq!(median(&[1, 2]), Some(1));
        assert_eq!(median(&[3, 5]), Some(4));
    }

    fn outcome(spacing_ns: i64, n: usize) -> TrainOutcome {
        TrainOutcome {
            replies: train(spacing_ns, n, 1500),
            send_span_ns: 100_000,
        }
    }

    #[test]
    fn summary_rejects_short_trains_and_takes_the_median() {
        let trains = vec![
            outcome(240_000, 48),
            outcome(24_000, 23), // fewer than 48 / 2: rejected although fastest
            outcome(250_000, 24),
            outcome(120_000, 48), // compressed: an outlier the median ignores
            outcome(240_000, 40),
        ];
        let e = summarize(&trains, 48, 1500).expect("estimate");
        assert_eq!((e.trains, e.used, e.per_train, e.packet_bytes), (5, 4, 48, 1500));
        assert_eq!(e.samples_bps, vec![50_000_000, 48_000_000, 100_000_000, 50_000_000]);
        assert_eq!(e.bps, 50_000_000);
        assert!(!e.sender_limited);
        assert_eq!(min_replies(48), 24);
        assert_eq!(min_replies(5), 3);
    }

    #[test]
    fn the_densest_cluster_wins_over_the_median() {
        // 500 Mbit/s; three of five trains compressed by a stall after the bottleneck (the lab
        // under CPU steal): the median says 800 Mbit/s, the two good trains agree.
        let v = [500_000_000, 2_600_000_000, 800_000_000, 497_000_000, 1_700_000_000];
        assert_eq!(median(&v), Some(800_000_000));
        assert_eq!(densest(&v), Some((498_500_000, 2)));
        // Within 10 % of each other, slowest to fastest: 100..=110 is one cluster, 111 is not.
        assert_eq!(densest(&[100, 105, 110, 111]), Some((105, 3)));
        assert_eq!(densest(&[100, 111]), Some((100, 1)), "a tie: the one nearer the median");
        assert_eq!(densest(&[7]), Some((7, 1)));
        assert_eq!(densest(&[]), None);
    }

    #[test]
    fn disagreeing_trains_ask_for_another_round() {
        let fast = |ns| outcome(ns, 48);
        // Two good trains of five: not agreed.
        let five = [fast(24_000), fast(4_615), fast(15_000), fast(24_100), fast(7_058)];
        let e = summarize(&five, 48, 1500).expect("estimate");
        assert_eq!((e.used, e.agreeing), (5, 2));
        assert!(!e.agreed, "{e:?}");
        // A second round of good trains: seven of ten agree on 500 Mbit/s.
        let mut ten = five.to_vec();
        ten.extend([fast(24_000), fast(23_900), fast(24_050), fast(24_000), fast(9_000)]);
        let e = summarize(&ten, 48, 1500).expect("estimate");
        assert_eq!((e.used, e.agreeing), (10, 6));
        assert!(e.agreed, "{e:?}");
        assert!(e.bps.abs_diff(500_000_000) < 2_500_000, "{e:?}");
        // Three trains that agree are enough; two are not.
        assert!(
            summarize(&[fast(24_000), fast(24_000), fast(24_000)], 48, 1500)
                .expect("e")
                .agreed
        );
        assert!(!summarize(&[fast(24_000), fast(24_000)], 48, 1500).expect("e").agreed);
    }

    #[test]
    fn compressed_trains_do_not_outvote_dispersed_ones() {
        // The lab under heavy CPU steal: four trains released in a burst after the 500 Mbit/s
        // bottleneck (2.5 Gbit/s, their replies as tight as the requests left), three intact.
        let compressed = |ns| TrainOutcome {
            replies: train(ns, 48, 1500),
            send_span_ns: 400_000,
        };
        let mut v = vec![
            compressed(4_800),
            compressed(4_700),
            outcome(24_000, 48),
            compressed(4_750),
        ];
        v.extend([outcome(24_050, 48), compressed(4_790), outcome(23_980, 48)]);
        let e = summarize(&v, 48, 1500).expect("estimate");
        assert_eq!((e.used, e.dispersed, e.agreeing), (7, 3, 3));
        assert!(e.bps.abs_diff(500_000_000) < 1_000_000 && !e.sender_limited, "{e:?}");
        assert!(e.agreed);
        // Two intact trains are not enough to overrule: the densest of all, flagged, and
        // another round is due (some trains were dispersed).
        v.pop();
        let e = summarize(&v, 48, 1500).expect("estimate");
        assert_eq!((e.dispersed, e.agreeing), (2, 4));
        assert!(e.sender_limited && e.bps > 2_000_000_000 && !e.agreed, "{e:?}");
    }

    #[test]
    fn summary_flags_sender_limited_trains() {
        // Replies 10 µs apart, 47 × 10 µs = 470 µs, sent in 400 µs: no more spread than sent.
        let mut t = outcome(10_000, 48);
        t.send_span_ns = 400_000;
        let e = summarize(&[t.clone(), t.clone(), outcome(10_000, 48)], 48, 1500).expect("estimate");
        assert!(e.sender_limited, "{e:?}");
        assert_eq!(e.bps, 1_200_000_000);
    }

    #[test]
    fn summary_errors_say_why() {
        let none = summarize(&vec![TrainOutcome::default(); 3], 48, 1500).expect_err("no replies");
        assert_eq!(none, "no echo reply to 3 trains of 48 requests of 1500 bytes");
        let short = summarize(&[outcome(1000, 10), outcome(1000, 5)], 48, 1500).expect_err("short");
        assert_eq!(
            short,
            "every train lost more than half its replies (15 of 96 came back)"
        );
        let flat = summarize(&[outcome(0, 48)], 48, 1500).expect_err("flat");
        assert!(flat.contains("same instant"), "{flat}");
    }

    #[test]
    fn echo_requests_and_replies() {
        let p = echo_request(false, 0x1234, 7, 1472);
        assert_eq!(p.len(), 1472);
        assert_eq!((p[0], p[1]), (8, 0));
        assert_eq!(icmp_checksum(&p), 0, "a checksummed packet sums to zero");

        // The reply a ping socket hands over: ICMP only, 20 header bytes added.
        let mut reply = p.clone();
        reply[0] = 0;
        assert_eq!(parse_echo_reply(&reply, false, false, None), Some((7, 1492)));
        assert_eq!(parse_echo_reply(&p, false, false, None), None, "a request is no reply");
        // The raw socket's: IP header first; the total length is taken from it; ident filtered.
        let mut ip = vec![0x45, 0, 0x05, 0xdc];
        ip.resize(20, 0);
        ip.extend_from_slice(&reply);
        assert_eq!(parse_echo_reply(&ip, false, true, Some(0x1234)), Some((7, 1500)));
        assert_eq!(parse_echo_reply(&ip, false, true, Some(0x4321)), None);
        assert_eq!(parse_echo_reply(&ip[..10], false, true, None), None);

        let mut v6 = echo_request(true, 1, 65535, 1460);
        assert_eq!(v6[0], 128);
        v6[0] = 129;
        assert_eq!(parse_echo_reply(&v6, true, false, Some(1)), Some((65535, 1500)));
    }

    #[test]
    fn bad_train_shapes_are_refused() {
        let lo = IpAddr::from([127, 0, 0, 1]);
        assert!(estimate_capacity(lo, 1500, 0, 48, Duration::from_secs(1)).is_err());
        assert!(estimate_capacity(lo, 1500, 5, 1, Duration::from_secs(1)).is_err());
        assert!(estimate_capacity(lo, 1500, 1000, 1000, Duration::from_secs(1)).is_err());
    }

    #[cfg(target_os = "linux")]
    #[test]
    #[cfg_attr(not(feature = "privileged-tests"), ignore = "privileged: needs root")]
    fn trains_to_loopback() {
        let _serial = crate::measure::tests::icmp_test_lock();
        let access = crate::measure::icmp::PingAccess::current();
        assert!(
            access.is_root() || access.dgram_allowed(),
            "needs root or ping_group_range (a privileged test: never skipped)"
        );
        let started = std::time::Instant::now();
        let e = estimate_capacity(IpAddr::from([127, 0, 0, 1]), 1500, 3, 16, Duration::from_millis(500))
            .expect("loopback answers");
        assert!(started.elapsed() < Duration::from_secs(2));
        assert_eq!((e.per_train, e.packet_bytes), (16, 1500));
        assert!(
            e.trains.is_multiple_of(3) && e.trains <= 3 * MAX_ROUNDS,
            "whole rounds of 3: {e:?}"
        );
        assert!(e.used >= 1 && e.bps > 0, "{e:?}");
    }
}
