//! The socket options the path test sets and reads: forced buffer sizes (root only), the
//! buffer a socket has, and the congestion control of one socket.
//!
//! # Platform specific behavior
//! `SO_RCVBUFFORCE`/`SO_SNDBUFFORCE` and `TCP_CONGESTION` are Linux's; elsewhere the plain
//! `SO_RCVBUF`/`SO_SNDBUF` are set (capped by `kern.ipc.maxsockbuf`) and the congestion control
//! is left alone.

use std::io;
use std::os::fd::AsRawFd;

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
