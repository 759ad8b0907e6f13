//! Diagnosis: what the kernel knows about TCP flows and the host, read for `check`,
//! `serve`/`verify` and `inspect`.
//!
//! * [`tcpinfo`]: `struct tcp_info` (TCP_INFO, INET_DIAG_INFO) and the limited-by breakdown.
//! * [`proto`]: the wire protocol between `tcptune verify` and `tcptune serve`.
//! * [`hostinfo`]: parsers for /proc/net/snmp, sockstat, routes, sysctl.d files, process names.
//! * [`ethtool`] (Linux): NIC offloads through the SIOCETHTOOL ioctl.
//! * [`sockdiag`] (Linux): live TCP sockets through sock_diag netlink (INET_DIAG).
//!
//! Parsing is pure and tested with fixtures; the I/O sits in small functions beside it.

#[cfg(target_os = "linux")]
pub mod ethtool;
pub mod hostinfo;
pub mod proto;
#[cfg(target_os = "linux")]
pub mod sockdiag;
pub mod tcpinfo;
