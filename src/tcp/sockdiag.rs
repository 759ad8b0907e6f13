//! Live TCP sockets of this network namespace through sock_diag netlink (INET_DIAG, what `ss -ti`
//! uses): addresses, congestion control and the `struct tcp_info` of every established socket.
//!
//! Raw netlink over libc, no crate: one dump request per address family
//! (`SOCK_DIAG_BY_FAMILY` with `inet_diag_req_v2`, asking for the INET_DIAG_INFO,
//! INET_DIAG_CONG and INET_DIAG_SKMEMINFO attributes), then the replies until NLMSG_DONE. No privilege is needed for a
//! dump. Linux only.
//!
//! Why not netlink-packet-sock-diag (rust-netlink, beside the rtnetlink the route code uses):
//! 0.5 shares netlink-packet-core 0.9 with rtnetlink, but its `TcpInfo` is parsed only with the
//! `rich_nlas` feature and only from a payload as long as its whole struct (up to `tcpi_snd_wnd`):
//! an older kernel's shorter `tcp_info` would be refused where [`TcpInfo::from_bytes`] zero-fills
//! it, and it stops before `tcpi_rcv_wnd` and the 6.7 fields tcptune reads. tcptune's own
//! `TcpInfo` stays anyway (getsockopt(TCP_INFO) on its test sockets reads the same struct), so the
//! crate would add a second definition of it for ~150 lines of parsing saved here, which the tests
//! below and the loopback test against the kernel cover.

use std::io;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::os::fd::{AsRawFd as _, FromRawFd as _, OwnedFd};

use super::tcpinfo::TcpInfo;

const NETLINK_SOCK_DIAG: libc::c_int = 4;
const SOCK_DIAG_BY_FAMILY: u16 = 20;
const NLMSG_ERROR: u16 = 2;
const NLMSG_DONE: u16 = 3;
const NLM_F_REQUEST: u16 = 1;
const NLM_F_DUMP: u16 = 0x300;
const INET_DIAG_INFO: u16 = 2;
const INET_DIAG_CONG: u16 = 4;
const INET_DIAG_SKMEMINFO: u16 = 7;
const TCP_ESTABLISHED: u8 = 1;
const NLMSG_HDRLEN: usize = 16;
/// inet_diag_msg: family, state, timer, retrans, 48-byte sockid, expires, rqueue, wqueue, uid, inode.
const DIAG_MSG_LEN: usize = 72;
const REQ_LEN: usize = 56;

/// One TCP socket as the kernel reports it.
#[derive(Debug, Clone)]
pub struct Socket {
    pub local: SocketAddr,
    pub peer: SocketAddr,
    pub state: u8,
    pub uid: u32,
    pub inode: u32,
    /// Bytes waiting in the receive queue / not yet acknowledged (established sockets).
    pub rqueue: u32,
    pub wqueue: u32,
    /// The congestion control ("bbr", "cubic").
    pub cong: Option<String>,
    pub info: Option<TcpInfo>,
    /// The socket's memory (`ss -m` skmem), bytes.
    pub skmem: Option<SkMem>,
}

/// Part of the INET_DIAG_SKMEMINFO attribute (`SK_MEMINFO_*` of include/uapi/linux/sock_diag.h):
/// what `ss -tm` prints as `skmem:(r…,rb…,t…,tb…,…,w…)`, in bytes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SkMem {
    /// `r`: memory held by received data (sk_rmem_alloc).
    pub rmem_alloc: u32,
    /// `rb`: the receive buffer (SO_RCVBUF, sk_rcvbuf).
    pub rcvbuf: u32,
    /// `tb`: the send buffer (SO_SNDBUF, sk_sndbuf).
    pub sndbuf: u32,
    /// `w`: memory queued for sending (sk_wmem_queued).
    pub wmem_queued: u32,
}

impl SkMem {
    /// The attribute's array of u32, in SK_MEMINFO order; None when too short for the four.
    fn from_bytes(data: &[u8]) -> Option<Self> {
        (data.len() >= 24).then(|| Self {
            rmem_alloc: u32_at(data, 0),
            rcvbuf: u32_at(data, 4),
            sndbuf: u32_at(data, 12),
            wmem_queued: u32_at(data, 20),
        })
    }
}

/// The request: every established TCP socket of `family` (to remote port `dport` only, when not
/// 0), with tcp_info, congestion control and socket memory.
fn request(family: u8, seq: u32, dport: u16) -> Vec<u8> {
    let len = NLMSG_HDRLEN + REQ_LEN;
    let mut m = Vec::with_capacity(len);
    m.extend_from_slice(&u32::try_from(len).unwrap_or(0).to_ne_bytes());
    m.extend_from_slice(&SOCK_DIAG_BY_FAMILY.to_ne_bytes());
    m.extend_from_slice(&(NLM_F_REQUEST | NLM_F_DUMP).to_ne_bytes());
    m.extend_from_slice(&seq.to_ne_bytes());
    m.extend_from_slice(&0u32.to_ne_bytes());
    // inet_diag_req_v2
    m.push(family);
    m.push(libc::IPPROTO_TCP as u8);
    m.push((1u8 << (INET_DIAG_INFO - 1)) | (1u8 << (INET_DIAG_CONG - 1)) | (1u8 << (INET_DIAG_SKMEMINFO - 1)));
    m.push(0);
    m.extend_from_slice(&(1u32 << TCP_ESTABLISHED).to_ne_bytes());
    // The socket id: wildcards (zero) but for the remote port, network order, which a dump
    // matches in the kernel (tcp_diag's dump skips a socket whose sk_dport differs).
    m.extend_from_slice(&0u16.to_be_bytes());
    m.extend_from_slice(&dport.to_be_bytes());
    m.resize(len, 0);
    m
}

fn u16_at(b: &[u8], at: usize) -> u16 {
    u16::from_ne_bytes([b[at], b[at + 1]])
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_ne_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

/// An address of the socket id: 16 bytes, network order; IPv4 uses the first 4.
fn addr(family: u8, bytes: &[u8], port_be: [u8; 2]) -> SocketAddr {
    let port = u16::from_be_bytes(port_be);
    let ip = if i32::from(family) == libc::AF_INET {
        IpAddr::V4(Ipv4Addr::new(bytes[0], bytes[1], bytes[2], bytes[3]))
    } else {
        let mut a = [0u8; 16];
        a.copy_from_slice(&bytes[..16]);
        let v6 = Ipv6Addr::from(a);
        // Dual-stack sockets show IPv4 peers as ::ffff:a.b.c.d: show them as IPv4.
        v6.to_ipv4_mapped().map_or(IpAddr::V6(v6), IpAddr::V4)
    };
    SocketAddr::new(ip, port)
}

/// One inet_diag_msg payload with its attributes.
fn parse_diag_msg(p: &[u8]) -> Option<Socket> {
    if p.len() < DIAG_MSG_LEN {
        return None;
    }
    let family = p[0];
    // sockid at 4: sport(2) dport(2) src(16) dst(16) if(4) cookie(8)
    let local = addr(family, &p[8..24], [p[4], p[5]]);
    let peer = addr(family, &p[24..40], [p[6], p[7]]);
    let mut s = Socket {
        local,
        peer,
        state: p[1],
        rqueue: u32_at(p, 56),
        wqueue: u32_at(p, 60),
        uid: u32_at(p, 64),
        inode: u32_at(p, 68),
        cong: None,
        info: None,
        skmem: None,
    };
    let mut at = DIAG_MSG_LEN;
    while at + 4 <= p.len() {
        let len = usize::from(u16_at(p, at));
        let kind = u16_at(p, at + 2);
        if len < 4 || at + len > p.len() {
            break;
        }
        let data = &p[at + 4..at + len];
        match kind {
            INET_DIAG_INFO => s.info = Some(TcpInfo::from_bytes(data)),
            INET_DIAG_SKMEMINFO => s.skmem = SkMem::from_bytes(data),
            INET_DIAG_CONG => {
                let end = data.iter().position(|&b| b == 0).unwrap_or(data.len());
                s.cong = Some(String::from_utf8_lossy(&data[..end]).into_owned());
            }
            _ => {}
        }
        at += len.div_ceil(4) * 4;
    }
    Some(s)
}

/// The netlink messages in one datagram. Returns whether NLMSG_DONE was seen.
fn parse_datagram(buf: &[u8], out: &mut Vec<Socket>) -> io::Result<bool> {
    let mut at = 0;
    while at + NLMSG_HDRLEN <= buf.len() {
        let len = u32_at(buf, at) as usize;
        let kind = u16_at(buf, at + 4);
        if len < NLMSG_HDRLEN || at + len > buf.len() {
            return Err(io::Error::new(io::ErrorKind::InvalidData, "truncated netlink message"));
        }
        let payload = &buf[at + NLMSG_HDRLEN..at + len];
        match kind {
            NLMSG_DONE => return Ok(true),
            NLMSG_ERROR => {
                let errno = if payload.len() >= 4 {
                    i32::from_ne_bytes([payload[0], payload[1], payload[2], payload[3]])
                } else {
                    -libc::EIO
                };
                if errno != 0 {
                    return Err(io::Error::from_raw_os_error(-errno));
                }
            }
            SOCK_DIAG_BY_FAMILY => out.extend(parse_diag_msg(payload)),
            _ => {}
        }
        at += len.div_ceil(4) * 4;
    }
    Ok(false)
}

fn dump(fd: &OwnedFd, family: u8, seq: u32, dport: u16, out: &mut Vec<Socket>) -> io::Result<()> {
    let req = request(family, seq, dport);
    // SAFETY: a zeroed sockaddr_nl is valid; we set the family (pid 0 = the kernel).
    let mut kernel: libc::sockaddr_nl = unsafe { std::mem::zeroed() };
    kernel.nl_family = libc::AF_NETLINK as libc::sa_family_t;
    // SAFETY: `req` and `kernel` are valid for the lengths given and outlive the call.
    let sent = unsafe {
        libc::sendto(
            fd.as_raw_fd(),
            req.as_ptr().cast(),
            req.len(),
            0,
            (&raw const kernel).cast(),
            u32::try_from(size_of::<libc::sockaddr_nl>()).unwrap_or(0),
        )
    };
    if sent < 0 {
        return Err(io::Error::last_os_error());
    }
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        // SAFETY: `buf` is writable for its length.
        let n = unsafe { libc::recv(fd.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len(), 0) };
        if n < 0 {
            let e = io::Error::last_os_error();
            if e.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            return Err(e);
        }
        let n = usize::try_from(n).unwrap_or(0);
        if n == 0 || parse_datagram(&buf[..n], out)? {
            return Ok(());
        }
    }
}

/// Every established TCP socket (IPv4 and IPv6) of this network namespace.
pub fn tcp_sockets() -> io::Result<Vec<Socket>> {
    sockets(0)
}

/// The established TCP sockets of this network namespace to remote port `dport`: the kernel
/// leaves the others out of the dump, so a host with tens of thousands of sockets answers with
/// a few, as `ss -ti dport = :PORT` does.
pub fn tcp_sockets_to_port(dport: u16) -> io::Result<Vec<Socket>> {
    sockets(dport)
}

fn sockets(dport: u16) -> io::Result<Vec<Socket>> {
    // SAFETY: socket(2) takes no pointers; the result is checked.
    let fd = unsafe {
        libc::socket(
            libc::AF_NETLINK,
            libc::SOCK_DGRAM | libc::SOCK_CLOEXEC,
            NETLINK_SOCK_DIAG,
        )
    };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `fd` is a fresh descriptor nobody else owns.
    let fd = unsafe { OwnedFd::from_raw_fd(fd) };
    // A dump that stalls must not hang the command.
    let tv = libc::timeval { tv_sec: 5, tv_usec: 0 };
    // SAFETY: `tv` is a valid timeval for the length given.
    unsafe {
        libc::setsockopt(
            fd.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_RCVTIMEO,
            (&raw const tv).cast(),
            u32::try_from(size_of::<libc::timeval>()).unwrap_or(0),
        );
    }
    let mut out = Vec::new();
    dump(&fd, libc::AF_INET as u8, 1, dport, &mut out)?;
    // A kernel without IPv6 answers the second dump with an error: IPv4 alone is still an answer.
    let _ = dump(&fd, libc::AF_INET6 as u8, 2, dport, &mut out);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read as _, Write as _};

    #[test]
    fn request_layout() {
        let r = request(libc::AF_INET as u8, 7, 5201);
        assert_eq!(r.len(), 72);
        // The socket id: any local port, remote port 5201 in network order, the rest wildcards.
        assert_eq!(&r[24..28], &[0, 0, 0x14, 0x51]);
        assert!(r[28..].iter().all(|b| *b == 0));
        assert_eq!(u32_at(&r, 0), 72);
        assert_eq!(u16_at(&r, 4), SOCK_DIAG_BY_FAMILY);
        assert_eq!(u32_at(&r, 8), 7);
        assert_eq!(r[16], 2);
        assert_eq!(r[17], 6);
        assert_eq!(r[18], 0b100_1010);
        assert_eq!(u32_at(&r, 20), 2);
    }

    #[test]
    fn parses_a_message_with_attributes_and_done() {
        let mut p = vec![0u8; DIAG_MSG_LEN];
        p[0] = libc::AF_INET as u8;
        p[1] = TCP_ESTABLISHED;
        p[4..6].copy_from_slice(&5301u16.to_be_bytes());
        p[6..8].copy_from_slice(&40000u16.to_be_bytes());
        p[8..12].copy_from_slice(&[198, 18, 0, 2]);
        p[24..28].copy_from_slice(&[198, 18, 0, 1]);
        p[64..68].copy_from_slice(&1000u32.to_ne_bytes());
        // INET_DIAG_CONG "bbr\0" (8 bytes), then a short INET_DIAG_INFO of 72 bytes.
        p.extend_from_slice(&8u16.to_ne_bytes());
        p.extend_from_slice(&INET_DIAG_CONG.to_ne_bytes());
        p.extend_from_slice(b"bbr\0");
        let mut info = vec![0u8; 72];
        info[68..72].copy_from_slice(&50_000u32.to_ne_bytes());
        p.extend_from_slice(&76u16.to_ne_bytes());
        p.extend_from_slice(&INET_DIAG_INFO.to_ne_bytes());
        p.extend_from_slice(&info);
        // INET_DIAG_SKMEMINFO: nine u32 (r, rb, t, tb, f, w, o, bl, d).
        p.extend_from_slice(&40u16.to_ne_bytes());
        p.extend_from_slice(&INET_DIAG_SKMEMINFO.to_ne_bytes());
        for v in [10u32, 131_072, 0, 16_384, 0, 4_096, 0, 0, 0] {
            p.extend_from_slice(&v.to_ne_bytes());
        }

        let mut dgram = Vec::new();
        dgram.extend_from_slice(&u32::try_from(NLMSG_HDRLEN + p.len()).expect("len").to_ne_bytes());
        dgram.extend_from_slice(&SOCK_DIAG_BY_FAMILY.to_ne_bytes());
        dgram.extend_from_slice(&[0u8; 10]);
        dgram.extend_from_slice(&p);
        dgram.extend_from_slice(&16u32.to_ne_bytes());
        dgram.extend_from_slice(&NLMSG_DONE.to_ne_bytes());
        dgram.extend_from_slice(&[0u8; 10]);

        let mut out = Vec::new();
        assert!(parse_datagram(&dgram, &mut out).expect("parse"));
        assert_eq!(out.len(), 1);
        let s = &out[0];
        assert_eq!(s.local, "198.18.0.2:5301".parse().expect("addr"));
        assert_eq!(s.peer, "198.18.0.1:40000".parse().expect("addr"));
        assert_eq!(s.uid, 1000);
        assert_eq!(s.cong.as_deref(), Some("bbr"));
        assert_eq!(s.info.expect("info").tcpi_rtt, 50_000);
        let m = s.skmem.expect("skmem");
        assert_eq!(
            (m.rmem_alloc, m.rcvbuf, m.sndbuf, m.wmem_queued),
            (10, 131_072, 16_384, 4_096)
        );

        // An error message is an error; a truncated one too.
        let mut err = Vec::new();
        err.extend_from_slice(&20u32.to_ne_bytes());
        err.extend_from_slice(&NLMSG_ERROR.to_ne_bytes());
        err.extend_from_slice(&[0u8; 10]);
        err.extend_from_slice(&(-libc::EPERM).to_ne_bytes());
        assert!(parse_datagram(&err, &mut out).is_err());
        assert!(parse_datagram(&err[..18], &mut out).is_err());
    }

    fn so_rcvbuf(s: &std::net::TcpStream) -> libc::c_int {
        let mut v: libc::c_int = 0;
        let mut len = libc::socklen_t::try_from(size_of::<libc::c_int>()).expect("len");
        // SAFETY: `v` and `len` are valid for writes of the sizes given.
        let r = unsafe {
            libc::getsockopt(
                s.as_raw_fd(),
                libc::SOL_SOCKET,
                libc::SO_RCVBUF,
                (&raw mut v).cast(),
                &raw mut len,
            )
        };
        assert_eq!(r, 0, "getsockopt SO_RCVBUF");
        v
    }

    #[test]
    fn finds_a_loopback_connection() {
        let l = std::net::TcpListener::bind("127.0.0.1:0").expect("listen");
        let mut c = std::net::TcpStream::connect(l.local_addr().expect("addr")).expect("connect");
        let (mut s, _) = l.accept().expect("accept");
        c.write_all(&[1u8; 50_000]).expect("write");
        let mut buf = vec![0u8; 50_000];
        s.read_exact(&mut buf).expect("read");
        let local = c.local_addr().expect("addr");
        let all = tcp_sockets().expect("sock_diag");
        let mine = all.iter().find(|x| x.local == local).expect("our socket");
        assert_eq!(mine.peer, l.local_addr().expect("addr"));
        let info = mine.info.expect("tcp_info");
        assert!(info.tcpi_bytes_acked >= 50_000, "{info:?}");
        assert!(mine.cong.is_some());
        // The receive buffer the kernel reports is the one SO_RCVBUF reads (both are sk_rcvbuf).
        let peer = all.iter().find(|x| x.peer == local).expect("the accepted socket");
        let rb = peer.skmem.expect("skmem").rcvbuf;
        assert_eq!(i64::from(rb), i64::from(so_rcvbuf(&s)), "{peer:?}");
        // To the listener's port only: the client's socket, not the accepted one (whose remote
        // port is the client's).
        let port = l.local_addr().expect("addr").port();
        let to_port = tcp_sockets_to_port(port).expect("sock_diag");
        assert!(to_port.iter().any(|x| x.local == local), "{to_port:?}");
        assert!(to_port.iter().all(|x| x.peer.port() == port), "{to_port:?}");
    }
}
