//! The TCP facts that measure and diag share, below both: what the kernel says about a socket
//! and the wire protocol tcptune's two ends speak. Neither `measure` nor `diag` is imported
//! here, and they do not import each other.
//!
//! * [`proto`]: the wire protocol between `tcptune serve` and its clients (`verify`, the path
//!   test of `advise --host`, both directions); its messages carry [`flow`]'s readings.
//! * [`flow`]: the two ends of a path test's data flow — the sampled, paced sender and the
//!   receiver — run by the client or by serve, whichever end sends; below [`proto`] (its
//!   receiver counts until a cutoff the caller gives).
//! * [`tcpinfo`]: `struct tcp_info` (TCP_INFO, INET_DIAG_INFO) and the limited-by breakdown.
//! * [`sockopt`]: socket options (congestion control, forced buffers, pacing).
//! * [`sockdiag`] (Linux): live TCP sockets through sock_diag netlink (INET_DIAG).
//!
//! Parsing is pure and tested with fixtures; the I/O sits in small functions beside it.
//!
//! The bounds below are what any TCP flow can show; a reading from outside (a peer's result,
//! another program's report) beyond them is not evidence, and is refused where it enters.

pub mod flow;
pub mod proto;
#[cfg(target_os = "linux")]
pub mod sockdiag;
pub mod sockopt;
pub mod tcpinfo;

/// The largest receive window TCP can advertise: 65535 shifted by the largest window scale, 14
/// (RFC 7323), bytes.
pub const MAX_WINDOW: u64 = 65_535 << 14;

/// The largest socket buffer a kernel reports (SO_RCVBUF and SO_SNDBUF are C ints), bytes.
pub const MAX_SOCKET_BUFFER: u64 = i32::MAX as u64;

/// A rate no single TCP flow reaches, bit/s: 10 Tbit/s, six times the fastest Ethernet being
/// specified (1.6 Tbit/s) and more than a full [`MAX_WINDOW`] carries at a 1-ms RTT. A
/// reading above it is a broken or lying report, not a fast path.
pub const MAX_RATE_BPS: f64 = 10e12;
