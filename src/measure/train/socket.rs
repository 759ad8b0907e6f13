//! Linux: a train sent with one `sendmmsg` on a ping or raw ICMP socket, and its replies
//! timestamped by the kernel (`SO_TIMESTAMPNS`) as they arrive; rounds and gaps between trains.

use std::io;
use std::net::IpAddr;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::time::{Duration, Instant};

use super::packet::{Sent, echo_request, parse_echo_reply};
use super::read::{
    CapacityEstimate, MAX_TRAIN_GAP, Reply, TRAIN_GAP, TrainOutcome, WINDOW_GAPS, another_round, dispersion_bps,
    median, min_replies, summarize, summarize_long,
};
use crate::measure::icmp::{PingAccess, SocketKind};

/// A train with some replies is over when none came for this long (or for its spread so far).
const IDLE_GRACE: Duration = Duration::from_millis(100);
/// Longest poll sleep while waiting for replies.
const POLL_SLICE: Duration = Duration::from_millis(10);
/// Socket buffers for a whole long train: 1024 replies of up to about 4 KiB of kernel memory.
const SOCKET_BUF: libc::c_int = 4 << 20;
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

/// Sends rounds of `trains` trains of `per_train` echo requests to `addr` while `more`
/// (given the trains so far and the request size) asks for another round, at most
/// `max_rounds`, and returns what came back.
pub(super) fn send(
    addr: IpAddr,
    ip_size: usize,
    shape: (u32, u32, u32),
    timeout: Duration,
    more: &dyn Fn(&[TrainOutcome], usize) -> bool,
) -> Result<Sent, String> {
    let (trains, per_train, max_rounds) = shape;
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
            if t.state.len() >= (max_rounds * trains) as usize || !more(&outcomes(&t.state), p.ip_size) {
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
    Ok(Sent {
        outcomes: outcomes(&t.state),
        packet_bytes: p.ip_size,
        error: t.errors.into_iter().next(),
    })
}

/// Rounds of trains of `shape` (trains per round, requests per train, rounds at most; a
/// round more while they disagree), summarized (as `long` trains or not); and the trains
/// themselves.
pub(super) fn measure(
    addr: IpAddr,
    ip_size: usize,
    shape: (u32, u32, u32),
    timeout: Duration,
    long: bool,
) -> Result<(CapacityEstimate, Vec<TrainOutcome>), String> {
    let per_train = shape.1;
    let sent = send(addr, ip_size, shape, timeout, &|o, bytes| {
        another_round(o, per_train, bytes)
    })?;
    let summary = if long { summarize_long } else { summarize };
    match summary(&sent.outcomes, per_train, sent.packet_bytes) {
        Ok(e) => Ok((e, sent.outcomes)),
        Err(e) => Err(match sent.error {
            Some(first) => format!("{e} ({first})"),
            None => e,
        }),
    }
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
    // A whole train should fit in both buffers. The kernel caps these at [rw]mem_max × 2
    // unless this process may exceed them (CAP_NET_ADMIN): replies beyond are lost.
    for (force, plain) in [
        (libc::SO_RCVBUFFORCE, libc::SO_RCVBUF),
        (libc::SO_SNDBUFFORCE, libc::SO_SNDBUF),
    ] {
        if set_int(fd, libc::SOL_SOCKET, force, SOCKET_BUF).is_err() {
            let _ = set_int(fd, libc::SOL_SOCKET, plain, SOCKET_BUF);
        }
    }
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

/// Takes every reply waiting on the socket; kernel timestamps keep the arrival times exact.
fn drain(p: &Probe, t: &mut Trains, buf: &mut [u8]) {
    for _ in 0..4096 {
        match recv_one(p.fd(), buf) {
            Ok(None) => break,
            Ok(Some((len, stamp))) => {
                if let Some((seq, ip_bytes)) = parse_echo_reply(&buf[..len], p.sock.v6, p.raw && !p.sock.v6, p.ident) {
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
    let need = min_replies(per_train);
    let rates: Vec<u64> = state
        .iter()
        .filter(|t| t.count >= need)
        .filter_map(|t| {
            let replies: Vec<Reply> = t.replies.iter().flatten().copied().collect();
            #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
            dispersion_bps(&replies, WINDOW_GAPS, f64::INFINITY).map(|b| b as u64)
        })
        .collect();
    let Some(rate) = median(&rates).filter(|r| *r > 0) else {
        return TRAIN_GAP;
    };
    #[allow(clippy::cast_precision_loss)]
    let drain = (u64::from(per_train) * ip_size as u64 * 8) as f64 / rate as f64;
    Duration::from_secs_f64(2.0 * drain).clamp(TRAIN_GAP, MAX_TRAIN_GAP)
}
