//! The socket options the path test sets and reads: forced buffer sizes (root only), the
//! buffer a socket has, the congestion control of one socket, the bound on its unsent data
//! (`TCP_NOTSENT_LOWAT`), and a connection whose receive buffer is set before its SYN.
//!
//! # Platform specific behavior
//! `SO_RCVBUFFORCE`/`SO_SNDBUFFORCE`, `TCP_CONGESTION` and `TCP_NOTSENT_LOWAT` are used on
//! Linux only; elsewhere no buffer is forced (a normal user's buffers stay with autotuning), the
//! congestion control is left alone and the unsent data is bounded by the send buffer alone.

use std::io;
use std::net::{SocketAddr, TcpStream};
use std::os::fd::AsRawFd;
use std::time::Duration;

/// Which buffer of a socket.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Buffer {
    Receive,
    Send,
}

#[cfg(target_os = "linux")]
fn setsockopt_int(fd: &impl AsRawFd, level: libc::c_int, name: libc::c_int, value: libc::c_int) -> io::Result<()> {
    // SAFETY: `value` lives across the call and the length passed is its size.
    let rc = unsafe {
        libc::setsockopt(
            fd.as_raw_fd(),
            level,
            name,
            (&raw const value).cast(),
            libc::socklen_t::try_from(size_of::<libc::c_int>()).unwrap_or(4),
        )
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

fn getsockopt_int(fd: &impl AsRawFd, level: libc::c_int, name: libc::c_int) -> io::Result<libc::c_int> {
    let mut value: libc::c_int = 0;
    let mut len = libc::socklen_t::try_from(size_of::<libc::c_int>()).unwrap_or(4);
    // SAFETY: `value` is writable for `len` bytes and `len` points to its size.
    let rc = unsafe { libc::getsockopt(fd.as_raw_fd(), level, name, (&raw mut value).cast(), &raw mut len) };
    if rc == 0 {
        Ok(value)
    } else {
        Err(io::Error::last_os_error())
    }
}

/// The size the kernel gives the buffer now (Linux: twice what was asked, the bookkeeping
/// overhead included; it grows with autotuning unless a size was set), bytes.
pub fn buffer(fd: &impl AsRawFd, which: Buffer) -> io::Result<u64> {
    let name = match which {
        Buffer::Receive => libc::SO_RCVBUF,
        Buffer::Send => libc::SO_SNDBUF,
    };
    getsockopt_int(fd, libc::SOL_SOCKET, name).map(|v| u64::try_from(v).unwrap_or(0))
}

/// Forces the buffer to `bytes` (clamped to what the option takes) past the sysctl maxima
/// (`SO_*BUFFORCE`, root or CAP_NET_ADMIN). Returns the size the kernel then reports, or None
/// when this process may not force it: the socket is then left as it was, because a plain
/// `SO_*BUF` is capped by net.core.*mem_max (212992 by default), far below what autotuning
/// reaches. Setting a size turns that buffer's autotuning off for the socket.
#[cfg(target_os = "linux")]
pub fn force_buffer(fd: &impl AsRawFd, which: Buffer, bytes: u64) -> io::Result<Option<u64>> {
    // The kernel doubles the value and keeps it below INT_MAX.
    let v = libc::c_int::try_from(bytes.min(i32::MAX as u64 / 2)).unwrap_or(i32::MAX / 2);
    let force = match which {
        Buffer::Receive => libc::SO_RCVBUFFORCE,
        Buffer::Send => libc::SO_SNDBUFFORCE,
    };
    match setsockopt_int(fd, libc::SOL_SOCKET, force, v) {
        Ok(()) => Ok(Some(buffer(fd, which)?)),
        Err(e) if e.raw_os_error() == Some(libc::EPERM) => Ok(None),
        Err(e) => Err(e),
    }
}

#[cfg(not(target_os = "linux"))]
pub fn force_buffer(_fd: &impl AsRawFd, _which: Buffer, _bytes: u64) -> io::Result<Option<u64>> {
    Ok(None)
}

/// `SO_MAX_PACING_RATE` (asm-generic/socket.h, the value on x86-64, arm64 and the other
/// generic-ABI architectures); libc does not export it for every target.
#[cfg(target_os = "linux")]
const SO_MAX_PACING_RATE: libc::c_int = 47;

/// Caps the rate the kernel paces this socket at (Linux `SO_MAX_PACING_RATE`; BBR and fq
/// honour it), bytes per second.
#[cfg(target_os = "linux")]
pub fn set_max_pacing_rate(fd: &impl AsRawFd, bytes_per_s: u64) -> io::Result<()> {
    let v = libc::c_uint::try_from(bytes_per_s).unwrap_or(libc::c_uint::MAX - 1);
    // SAFETY: `v` lives across the call and the length passed is its size.
    let rc = unsafe {
        libc::setsockopt(
            fd.as_raw_fd(),
            libc::SOL_SOCKET,
            SO_MAX_PACING_RATE,
            (&raw const v).cast(),
            libc::socklen_t::try_from(size_of::<libc::c_uint>()).unwrap_or(4),
        )
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

#[cfg(not(target_os = "linux"))]
pub fn set_max_pacing_rate(_fd: &impl AsRawFd, _bytes_per_s: u64) -> io::Result<()> {
    Err(io::Error::new(
        io::ErrorKind::Unsupported,
        "SO_MAX_PACING_RATE is Linux's",
    ))
}

/// Sets the socket's congestion control (Linux `TCP_CONGESTION`). A normal user may choose
/// only the algorithms in `net.ipv4.tcp_allowed_congestion_control`.
#[cfg(target_os = "linux")]
pub fn set_congestion(fd: &impl AsRawFd, name: &str) -> io::Result<()> {
    // SAFETY: the pointer and length describe `name`'s bytes, which live across the call.
    let rc = unsafe {
        libc::setsockopt(
            fd.as_raw_fd(),
            libc::IPPROTO_TCP,
            libc::TCP_CONGESTION,
            name.as_ptr().cast(),
            libc::socklen_t::try_from(name.len()).unwrap_or(0),
        )
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

#[cfg(not(target_os = "linux"))]
pub fn set_congestion(_fd: &impl AsRawFd, _name: &str) -> io::Result<()> {
    Err(io::Error::new(io::ErrorKind::Unsupported, "TCP_CONGESTION is Linux's"))
}

/// Bounds the data queued in the socket but not yet sent (Linux `TCP_NOTSENT_LOWAT`), bytes: a
/// write blocks while more than this is unsent, however large the send buffer is. The send
/// buffer still holds everything in flight; only the backlog behind it is bounded, so a test
/// that stops writing at its deadline ends within a few milliseconds of its rate.
#[cfg(target_os = "linux")]
pub fn set_notsent_lowat(fd: &impl AsRawFd, bytes: u64) -> io::Result<()> {
    let v = libc::c_int::try_from(bytes).unwrap_or(libc::c_int::MAX);
    setsockopt_int(fd, libc::IPPROTO_TCP, libc::TCP_NOTSENT_LOWAT, v)
}

#[cfg(not(target_os = "linux"))]
pub fn set_notsent_lowat(_fd: &impl AsRawFd, _bytes: u64) -> io::Result<()> {
    Err(io::Error::new(
        io::ErrorKind::Unsupported,
        "TCP_NOTSENT_LOWAT is used on Linux only",
    ))
}

/// A connection to `addr` whose receive buffer is forced to `bytes` (0: left to autotuning)
/// *before* its SYN: the window scale is chosen at the handshake, so a buffer forced after
/// the connect could not be advertised in full. Returns the stream and the buffer the kernel
/// reports, or None when it was not forced (0 asked, or this process may not: see
/// [`force_buffer`]). The connect waits at most `timeout`.
#[cfg(target_os = "linux")]
pub fn connect_with_receive_buffer(
    addr: SocketAddr,
    bytes: u64,
    timeout: Duration,
) -> io::Result<(TcpStream, Option<u64>)> {
    use std::os::fd::{FromRawFd as _, OwnedFd};
    let domain = if addr.is_ipv4() { libc::AF_INET } else { libc::AF_INET6 };
    // SAFETY: plain socket(2); the descriptor is checked before use.
    let fd = unsafe { libc::socket(domain, libc::SOCK_STREAM | libc::SOCK_CLOEXEC | libc::SOCK_NONBLOCK, 0) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `fd` is a socket just created and owned by nothing else.
    let sock = unsafe { OwnedFd::from_raw_fd(fd) };
    let forced = if bytes > 0 {
        force_buffer(&sock, Buffer::Receive, bytes)?
    } else {
        None
    };
    let (storage, len) = sockaddr(addr);
    // SAFETY: `storage` holds a sockaddr of `len` bytes for the socket's family.
    let rc = unsafe { libc::connect(fd, (&raw const storage).cast(), len) };
    if rc != 0 {
        let e = io::Error::last_os_error();
        if e.raw_os_error() != Some(libc::EINPROGRESS) {
            return Err(e);
        }
        wait_connected(&sock, timeout)?;
    }
    let s = TcpStream::from(sock);
    s.set_nonblocking(false)?;
    Ok((s, forced))
}

#[cfg(not(target_os = "linux"))]
pub fn connect_with_receive_buffer(
    addr: SocketAddr,
    _bytes: u64,
    timeout: Duration,
) -> io::Result<(TcpStream, Option<u64>)> {
    TcpStream::connect_timeout(&addr, timeout).map(|s| (s, None))
}

/// `addr` as the C sockaddr of its family, and its length.
#[cfg(target_os = "linux")]
fn sockaddr(addr: SocketAddr) -> (libc::sockaddr_storage, libc::socklen_t) {
    // SAFETY: sockaddr_storage is plain old data; all zeroes is a valid value.
    let mut storage: libc::sockaddr_storage = unsafe { std::mem::zeroed() };
    let len = match addr {
        SocketAddr::V4(a) => {
            // SAFETY: sockaddr_storage is large and aligned enough for any sockaddr.
            let sin = unsafe { &mut *(&raw mut storage).cast::<libc::sockaddr_in>() };
            sin.sin_family = libc::sa_family_t::try_from(libc::AF_INET).unwrap_or(2);
            sin.sin_port = a.port().to_be();
            sin.sin_addr = libc::in_addr {
                s_addr: u32::from_ne_bytes(a.ip().octets()),
            };
            size_of::<libc::sockaddr_in>()
        }
        SocketAddr::V6(a) => {
            // SAFETY: as above.
            let sin6 = unsafe { &mut *(&raw mut storage).cast::<libc::sockaddr_in6>() };
            sin6.sin6_family = libc::sa_family_t::try_from(libc::AF_INET6).unwrap_or(10);
            sin6.sin6_port = a.port().to_be();
            sin6.sin6_flowinfo = a.flowinfo();
            sin6.sin6_addr = libc::in6_addr {
                s6_addr: a.ip().octets(),
            };
            sin6.sin6_scope_id = a.scope_id();
            size_of::<libc::sockaddr_in6>()
        }
    };
    (storage, libc::socklen_t::try_from(len).unwrap_or(0))
}

/// Waits up to `timeout` for a non-blocking connect to finish; its error, if it failed.
#[cfg(target_os = "linux")]
fn wait_connected(sock: &impl AsRawFd, timeout: Duration) -> io::Result<()> {
    let deadline = std::time::Instant::now() + timeout;
    loop {
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        if left.is_zero() {
            return Err(io::Error::new(io::ErrorKind::TimedOut, "connection timed out"));
        }
        let mut p = libc::pollfd {
            fd: sock.as_raw_fd(),
            events: libc::POLLOUT,
            revents: 0,
        };
        // Whole milliseconds, at least 1, so a sub-millisecond remainder still waits.
        let ms = libc::c_int::try_from(left.as_millis().max(1)).unwrap_or(libc::c_int::MAX);
        // SAFETY: one valid pollfd, and its count.
        let rc = unsafe { libc::poll(&raw mut p, 1, ms) };
        if rc < 0 {
            let e = io::Error::last_os_error();
            if e.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            return Err(e);
        }
        if rc > 0 {
            return match getsockopt_int(sock, libc::SOL_SOCKET, libc::SO_ERROR)? {
                0 => Ok(()),
                e => Err(io::Error::from_raw_os_error(e)),
            };
        }
    }
}

/// The socket's congestion control (Linux), e.g. "bbr".
#[cfg(target_os = "linux")]
pub fn congestion(fd: &impl AsRawFd) -> Option<String> {
    let mut buf = [0u8; 16];
    let mut len = libc::socklen_t::try_from(buf.len()).unwrap_or(16);
    // SAFETY: `buf` is writable for `len` bytes and `len` points to its size.
    let rc = unsafe {
        libc::getsockopt(
            fd.as_raw_fd(),
            libc::IPPROTO_TCP,
            libc::TCP_CONGESTION,
            buf.as_mut_ptr().cast(),
            &raw mut len,
        )
    };
    if rc != 0 {
        return None;
    }
    let n = usize::try_from(len).unwrap_or(0).min(buf.len());
    let name = &buf[..n];
    let end = name.iter().position(|&b| b == 0).unwrap_or(n);
    std::str::from_utf8(&name[..end]).ok().map(str::to_string)
}

#[cfg(not(target_os = "linux"))]
pub fn congestion(_fd: &impl AsRawFd) -> Option<String> {
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buffers_set_and_read_back() {
        let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        let before = buffer(&l, Buffer::Receive).expect("read");
        assert!(before > 0);
        match force_buffer(&l, Buffer::Receive, 4 << 20).expect("set") {
            // Root forces 4 MiB, reported doubled.
            Some(got) => assert_eq!(got, 8 << 20),
            // A normal user may not, and the socket keeps what it had.
            None => assert_eq!(buffer(&l, Buffer::Receive).expect("read"), before),
        }
    }

    /// The buffer is on the socket before its SYN: as root, forced (reported doubled) and kept
    /// through the connect; the connection works either way, and a dead port says so.
    #[test]
    fn a_connection_with_its_receive_buffer_set_first() {
        let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        let addr = l.local_addr().expect("addr");
        let (s, forced) = connect_with_receive_buffer(addr, 4 << 20, Duration::from_secs(2)).expect("connect");
        let (mut far, _) = l.accept().expect("accept");
        if let Some(got) = forced {
            assert_eq!(got, 8 << 20);
            assert_eq!(buffer(&s, Buffer::Receive).expect("read"), 8 << 20);
        }
        std::io::Write::write_all(&mut far, b"x").expect("write");
        let mut b = [0u8; 1];
        std::io::Read::read_exact(&mut &s, &mut b).expect("blocking read");
        assert_eq!(&b, b"x");
        drop(l);
        let e = connect_with_receive_buffer(addr, 0, Duration::from_secs(2)).expect_err("nobody listens");
        assert_eq!(e.kind(), io::ErrorKind::ConnectionRefused);
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn the_unsent_bound_is_set() {
        let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        let s = TcpStream::connect(l.local_addr().expect("addr")).expect("connect");
        set_notsent_lowat(&s, 256 << 10).expect("set");
        let v = getsockopt_int(&s, libc::IPPROTO_TCP, libc::TCP_NOTSENT_LOWAT).expect("get");
        assert_eq!(v, 256 << 10);
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn congestion_of_a_socket() {
        let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        let cc = congestion(&l).expect("a congestion control");
        assert!(!cc.is_empty());
        // Choosing the one it has always works; a name the kernel lacks never does.
        set_congestion(&l, &cc).expect("same cc");
        assert!(set_congestion(&l, "no-such-cc").is_err());
        assert_eq!(congestion(&l).as_deref(), Some(cc.as_str()));
    }
}
