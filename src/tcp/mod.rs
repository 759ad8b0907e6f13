//! The TCP facts that measure and diag share, below both: what the kernel says about a socket
//! and the wire protocol tcptune's two ends speak. Neither `measure` nor `diag` is imported
//! here, and they do not import each other.
//!
//! * [`proto`]: the wire protocol between `tcptune serve` and its clients (`verify`, the path
//!   test of `advise --host`).
//! * [`tcpinfo`]: `struct tcp_info` (TCP_INFO, INET_DIAG_INFO) and the limited-by breakdown.
//! * [`sockopt`]: socket options (congestion control, forced buffers, pacing).
//! * [`sockdiag`] (Linux): live TCP sockets through sock_diag netlink (INET_DIAG).
//!
//! Parsing is pure and tested with fixtures; the I/O sits in small functions beside it.

pub mod proto;
#[cfg(target_os = "linux")]
pub mod sockdiag;
pub mod sockopt;
pub mod tcpinfo;
