//! Diagnosis: what the kernel knows about TCP flows, read for `serve`/`verify`
//! and `inspect`. Host facts for `check` live in [`crate::host`].
//!
//! * [`tcpinfo`]: `struct tcp_info` (TCP_INFO, INET_DIAG_INFO) and the limited-by breakdown.
//! * [`proto`]: the wire protocol between `tcptune verify` and `tcptune serve`.
//! * [`verify`]: the throughput test, this end sending; [`verdict`]: what limited the flow.
//! * [`serve`]: the receiving end of that test, one test at a time, every wait bounded.
//! * [`sockdiag`] (Linux): live TCP sockets through sock_diag netlink (INET_DIAG);
//!   [`inspect`]: the flows they make, with what limits each.
//!
//! Parsing is pure and tested with fixtures; the I/O sits in small functions beside it.

pub mod inspect;
pub mod proto;
pub mod serve;
#[cfg(target_os = "linux")]
pub mod sockdiag;
pub mod sockopt;
pub mod tcpinfo;
pub mod verdict;
pub mod verify;
