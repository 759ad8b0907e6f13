//! Linux's `struct tcp_info` (include/uapi/linux/tcp.h), as TCP_INFO and the INET_DIAG_INFO
//! netlink attribute deliver it, and the "what limits this flow" breakdown computed from it.
//!
//! The struct is defined here rather than taken from `libc::tcp_info`: the libc crate only has it
//! for some Linux C libraries and versions, while the kernel's layout is one ABI that only ever
//! grows at the end. An older kernel returns fewer bytes; [`TcpInfo::from_bytes`] zero-fills the
//! rest, so a field the kernel does not have reads as 0. A test checks the offsets against libc's.
//!
//! # The limited-by counters (Linux 4.10+, `tcp_get_info_chrono_stats`)
//! The sender's time with data queued (`tcpi_busy_time`, µs) is split into three chronographs:
//! limited by the peer's receive window (`tcpi_rwnd_limited`), by its own send buffer
//! (`tcpi_sndbuf_limited`), and the rest, where the congestion window — the network — decides.
//! Time with nothing queued is the application's. `ss -i` prints the same numbers.

use serde::Serialize;

/// `struct tcp_info` up to `tcpi_total_rto_time` (Linux 6.7). Times are in µs unless noted.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[allow(clippy::struct_field_names)]
pub struct TcpInfo {
    pub tcpi_state: u8,
    pub tcpi_ca_state: u8,
    pub tcpi_retransmits: u8,
    pub tcpi_probes: u8,
    pub tcpi_backoff: u8,
    pub tcpi_options: u8,
    /// Bit fields: `tcpi_snd_wscale:4, tcpi_rcv_wscale:4`.
    pub tcpi_snd_rcv_wscale: u8,
    /// Bit fields: `tcpi_delivery_rate_app_limited:1, tcpi_fastopen_client_fail:2`.
    pub tcpi_delivery_flags: u8,
    pub tcpi_rto: u32,
    pub tcpi_ato: u32,
    pub tcpi_snd_mss: u32,
    pub tcpi_rcv_mss: u32,
    pub tcpi_unacked: u32,
    pub tcpi_sacked: u32,
    pub tcpi_lost: u32,
    pub tcpi_retrans: u32,
    pub tcpi_fackets: u32,
    /// Times since the last event, in ms.
    pub tcpi_last_data_sent: u32,
    pub tcpi_last_ack_sent: u32,
    pub tcpi_last_data_recv: u32,
    pub tcpi_last_ack_recv: u32,
    pub tcpi_pmtu: u32,
    pub tcpi_rcv_ssthresh: u32,
    /// Smoothed RTT.
    pub tcpi_rtt: u32,
    pub tcpi_rttvar: u32,
    pub tcpi_snd_ssthresh: u32,
    /// Congestion window, in segments.
    pub tcpi_snd_cwnd: u32,
    pub tcpi_advmss: u32,
    pub tcpi_reordering: u32,
    pub tcpi_rcv_rtt: u32,
    pub tcpi_rcv_space: u32,
    pub tcpi_total_retrans: u32,
    /// Bytes per second.
    pub tcpi_pacing_rate: u64,
    pub tcpi_max_pacing_rate: u64,
    pub tcpi_bytes_acked: u64,
    pub tcpi_bytes_received: u64,
    pub tcpi_segs_out: u32,
    pub tcpi_segs_in: u32,
    pub tcpi_notsent_bytes: u32,
    pub tcpi_min_rtt: u32,
    pub tcpi_data_segs_in: u32,
    pub tcpi_data_segs_out: u32,
    /// Bytes per second, the latest delivery-rate sample.
    pub tcpi_delivery_rate: u64,
    pub tcpi_busy_time: u64,
    pub tcpi_rwnd_limited: u64,
    pub tcpi_sndbuf_limited: u64,
    pub tcpi_delivered: u32,
    pub tcpi_delivered_ce: u32,
    pub tcpi_bytes_sent: u64,
    pub tcpi_bytes_retrans: u64,
    pub tcpi_dsack_dups: u32,
    pub tcpi_reord_seen: u32,
    pub tcpi_rcv_ooopack: u32,
    /// The peer's advertised window, scaled, in bytes (Linux 5.4+).
    pub tcpi_snd_wnd: u32,
    /// Our advertised window, scaled, in bytes (Linux 6.2+).
    pub tcpi_rcv_wnd: u32,
    pub tcpi_rehash: u32,
    pub tcpi_total_rto: u16,
    pub tcpi_total_rto_recoveries: u16,
    /// In ms.
    pub tcpi_total_rto_time: u32,
}

/// `tcpi_options` bits.
pub const TCPI_OPT_TIMESTAMPS: u8 = 1;
pub const TCPI_OPT_SACK: u8 = 2;
pub const TCPI_OPT_WSCALE: u8 = 4;

impl TcpInfo {
    /// The struct from the bytes the kernel returned: a shorter buffer (an older kernel) leaves
    /// the missing fields 0, a longer one (a newer kernel) is cut.
    pub fn from_bytes(bytes: &[u8]) -> Self {
        let mut info = Self::default();
        let n = bytes.len().min(size_of::<Self>());
        // SAFETY: TcpInfo is repr(C) and made only of integers, so every byte pattern is a valid
        // value; `n` is at most its size and at most the source's length, and the regions are
        // distinct (one is a local).
        unsafe {
            std::ptr::copy_nonoverlapping(bytes.as_ptr(), (&raw mut info).cast::<u8>(), n);
        }
        info
    }

    /// Whether the sender is repairing losses (`tcpi_ca_state` TCP_CA_Recovery or TCP_CA_Loss,
    /// 3 or 4): segments it counts as lost may not have been retransmitted yet.
    pub fn in_loss_recovery(&self) -> bool {
        self.tcpi_ca_state >= 3
    }

    pub fn delivery_rate_app_limited(&self) -> bool {
        self.tcpi_delivery_flags & 1 != 0
    }

    /// Whether its application holds the sender back right now: nothing unsent, and either the
    /// last delivery-rate sample was application limited or the congestion window is less than
    /// half full (an interactive session, a throttled copy).
    pub fn application_limited_now(&self) -> bool {
        let cwnd_bytes = u64::from(self.tcpi_snd_cwnd) * u64::from(self.tcpi_snd_mss);
        self.tcpi_notsent_bytes == 0 && (self.delivery_rate_app_limited() || self.bytes_in_flight() * 2 < cwnd_bytes)
    }

    pub fn snd_wscale(&self) -> u8 {
        self.tcpi_snd_rcv_wscale & 0x0f
    }

    pub fn rcv_wscale(&self) -> u8 {
        self.tcpi_snd_rcv_wscale >> 4
    }

    /// Bytes in flight, as the kernel counts packets out: (unacked − sacked − lost + retrans) × MSS.
    pub fn bytes_in_flight(&self) -> u64 {
        let packets = self
            .tcpi_unacked
            .saturating_sub(self.tcpi_sacked)
            .saturating_sub(self.tcpi_lost)
            .saturating_add(self.tcpi_retrans);
        u64::from(packets) * u64::from(self.tcpi_snd_mss)
    }

    /// Smoothed RTT in ms.
    pub fn rtt_ms(&self) -> f64 {
        f64::from(self.tcpi_rtt) / 1000.0
    }

    /// Lowest RTT seen, in ms (0 when the kernel does not report it).
    pub fn min_rtt_ms(&self) -> f64 {
        f64::from(self.tcpi_min_rtt) / 1000.0
    }

    /// The time split, with `elapsed_us` (the flow's lifetime) when known.
    pub fn breakdown(&self, elapsed_us: Option<u64>) -> Option<Breakdown> {
        Breakdown::compute(
            self.tcpi_busy_time,
            self.tcpi_rwnd_limited,
            self.tcpi_sndbuf_limited,
            elapsed_us,
        )
    }
}

/// TCP_INFO of a connected socket.
///
/// # Platform specific behavior
/// Linux only: FreeBSD's and macOS's `struct tcp_info` have no limited-by counters.
#[cfg(target_os = "linux")]
pub fn get(sock: &impl std::os::fd::AsRawFd) -> std::io::Result<TcpInfo> {
    let mut buf = [0u8; size_of::<TcpInfo>()];
    let mut len = libc::socklen_t::try_from(buf.len()).unwrap_or(libc::socklen_t::MAX);
    // SAFETY: `buf` is writable for `len` bytes and `len` points to its size; the kernel writes at
    // most `len` bytes and stores the length it wrote back in `len`.
    let rc = unsafe {
        libc::getsockopt(
            sock.as_raw_fd(),
            libc::IPPROTO_TCP,
            libc::TCP_INFO,
            buf.as_mut_ptr().cast(),
            &raw mut len,
        )
    };
    if rc != 0 {
        return Err(std::io::Error::last_os_error());
    }
    let n = usize::try_from(len).unwrap_or(0).min(buf.len());
    Ok(TcpInfo::from_bytes(&buf[..n]))
}

/// TCP_INFO of a connected socket where the OS has Linux's (with the limited-by counters);
/// None elsewhere or when the kernel refuses.
#[cfg(target_os = "linux")]
pub fn read(sock: &impl std::os::fd::AsRawFd) -> Option<TcpInfo> {
    get(sock).ok()
}

#[cfg(not(target_os = "linux"))]
pub fn read(_sock: &impl std::os::fd::AsRawFd) -> Option<TcpInfo> {
    None
}

/// What a sending flow was limited by most of the time.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum LimitedBy {
    /// The receiver's advertised window (its tcp_rmem maximum, or an application's SO_RCVBUF).
    ReceiveWindow,
    /// The sender's own socket buffer (tcp_wmem maximum, or SO_SNDBUF).
    SendBuffer,
    /// The congestion window: the path's capacity, loss, or the congestion control.
    Network,
    /// Nothing to send: the application did not keep the socket busy.
    Application,
}

impl LimitedBy {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::ReceiveWindow => "receive-window",
            Self::SendBuffer => "send-buffer",
            Self::Network => "network",
            Self::Application => "application",
        }
    }
}

impl std::fmt::Display for LimitedBy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Shares of the sender's busy time (like `ss -i`), and of the whole flow's life when known.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Breakdown {
    pub busy_ms: f64,
    /// Percent of the busy time limited by the receive window.
    pub rwnd_limited_pct: f64,
    /// Percent of the busy time limited by the send buffer.
    pub sndbuf_limited_pct: f64,
    /// Percent of the busy time the congestion window decided.
    pub network_limited_pct: f64,
    /// Percent of the flow's life with nothing to send (None when the life is unknown).
    pub app_limited_pct: Option<f64>,
    pub limited_by: LimitedBy,
}

/// Above this share of idle time the application, not TCP, is what limits the flow.
pub const APP_IDLE_PCT: f64 = 50.0;

/// A buffer that held the sender back for this share of its busy time is *the* limit.
///
/// Not a majority, because the chronographs only tick while the window or buffer is exhausted
/// at the moment the sender looks: a flow whose window caps its rate spends much of its time
/// pacing at that rate with the window not quite closed. Measured over the 50 ms / 100 Mbit/s lab
/// path (Linux 6.18, BBR and CUBIC alike, 3–5 s tests): tcp_rmem max 256 KiB on the receiver gave
/// 31–49 % receive-window-limited at a quarter of the link rate; tcp_wmem max 256 KiB on the
/// sender 30–36 % send-buffer-limited; advised buffers 5–8 % receive-window-limited at 89–92 % of
/// the link.
pub const BUFFER_LIMIT_PCT: f64 = 20.0;

impl Breakdown {
    /// From the chronographs (µs). None when the flow never had data to send and its life is
    /// unknown (a receiving socket).
    pub fn compute(busy_us: u64, rwnd_us: u64, sndbuf_us: u64, elapsed_us: Option<u64>) -> Option<Self> {
        #[allow(clippy::cast_precision_loss)]
        let f = |x: u64| x as f64;
        let app = elapsed_us
            .filter(|&e| e > 0)
            .map(|e| (100.0 * (1.0 - f(busy_us.min(e)) / f(e))).clamp(0.0, 100.0));
        if busy_us == 0 {
            return app.map(|a| Self {
                busy_ms: 0.0,
                rwnd_limited_pct: 0.0,
                sndbuf_limited_pct: 0.0,
                network_limited_pct: 0.0,
                app_limited_pct: Some(a),
                limited_by: LimitedBy::Application,
            });
        }
        // The chronographs tick in jiffies, so their sum can overshoot the busy time a little.
        let pct = |x: u64| (100.0 * f(x) / f(busy_us)).clamp(0.0, 100.0);
        let rwnd = pct(rwnd_us);
        let sndbuf = pct(sndbuf_us);
        let network = (100.0 - rwnd - sndbuf).max(0.0);
        let limited_by = if app.is_some_and(|a| a > APP_IDLE_PCT) {
            LimitedBy::Application
        } else if rwnd.max(sndbuf) >= BUFFER_LIMIT_PCT {
            if rwnd >= sndbuf {
                LimitedBy::ReceiveWindow
            } else {
                LimitedBy::SendBuffer
            }
        } else {
            LimitedBy::Network
        };
        Some(Self {
            busy_ms: f(busy_us) / 1000.0,
            rwnd_limited_pct: round1(rwnd),
            sndbuf_limited_pct: round1(sndbuf),
            network_limited_pct: round1(network),
            app_limited_pct: app.map(round1),
            limited_by,
        })
    }
}

fn round1(x: f64) -> f64 {
    (x * 10.0).round() / 10.0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn breakdown_picks_the_largest_share() {
        let b = Breakdown::compute(1_000_000, 800_000, 0, Some(1_000_000)).expect("busy");
        assert_eq!(b.limited_by, LimitedBy::ReceiveWindow);
        assert_eq!(b.rwnd_limited_pct, 80.0);
        assert_eq!(b.network_limited_pct, 20.0);
        assert_eq!(b.app_limited_pct, Some(0.0));

        let b = Breakdown::compute(1_000_000, 100_000, 700_000, None).expect("busy");
        assert_eq!(b.limited_by, LimitedBy::SendBuffer);
        assert_eq!(b.app_limited_pct, None);

        let b = Breakdown::compute(1_000_000, 100_000, 100_000, None).expect("busy");
        assert_eq!(b.limited_by, LimitedBy::Network);
        assert_eq!(b.network_limited_pct, 80.0);

        // A fifth of the time held back by a buffer is that buffer's doing (see BUFFER_LIMIT_PCT).
        let b = Breakdown::compute(1_000_000, 350_000, 0, Some(1_000_000)).expect("busy");
        assert_eq!(b.limited_by, LimitedBy::ReceiveWindow);
        let b = Breakdown::compute(1_000_000, 0, 199_000, Some(1_000_000)).expect("busy");
        assert_eq!(b.limited_by, LimitedBy::Network);

        // Busy 30 % of a 1 s life: the application.
        let b = Breakdown::compute(300_000, 300_000, 0, Some(1_000_000)).expect("busy");
        assert_eq!(b.limited_by, LimitedBy::Application);
        assert_eq!(b.app_limited_pct, Some(70.0));

        // Jiffy rounding: the parts may sum past the busy time.
        let b = Breakdown::compute(1_000, 1_004, 0, None).expect("busy");
        assert_eq!(b.rwnd_limited_pct, 100.0);
        assert_eq!(b.network_limited_pct, 0.0);

        // A receiving socket: no verdict.
        assert_eq!(Breakdown::compute(0, 0, 0, None), None);
        let b = Breakdown::compute(0, 0, 0, Some(5)).expect("idle");
        assert_eq!(b.limited_by, LimitedBy::Application);
    }

    #[test]
    fn short_and_long_kernel_buffers() {
        let mut bytes = vec![0u8; 300];
        bytes[0] = 1; // ESTABLISHED
        bytes[5] = TCPI_OPT_SACK | TCPI_OPT_WSCALE;
        bytes[6] = 0x97; // snd_wscale 7, rcv_wscale 9
        bytes[7] = 1;
        // tcpi_rtt at offset 68: 50 ms.
        bytes[68..72].copy_from_slice(&50_000u32.to_ne_bytes());
        let i = TcpInfo::from_bytes(&bytes);
        assert_eq!(i.tcpi_state, 1);
        assert_eq!((i.snd_wscale(), i.rcv_wscale()), (7, 9));
        assert!(i.delivery_rate_app_limited());
        assert_eq!(i.rtt_ms(), 50.0);
        // A kernel from before tcpi_busy_time (104 bytes): the counters read 0.
        let old = TcpInfo::from_bytes(&bytes[..104]);
        assert_eq!(old.tcpi_rtt, 50_000);
        assert_eq!(old.tcpi_busy_time, 0);
        assert_eq!(TcpInfo::from_bytes(&[]), TcpInfo::default());
    }

    #[test]
    fn bytes_in_flight() {
        let i = TcpInfo {
            tcpi_unacked: 100,
            tcpi_sacked: 10,
            tcpi_lost: 5,
            tcpi_retrans: 2,
            tcpi_snd_mss: 1448,
            ..TcpInfo::default()
        };
        assert_eq!(i.bytes_in_flight(), 87 * 1448);
    }

    /// Same layout as the C library's struct where it has one (glibc: every field up to
    /// tcpi_total_rto_time since libc 0.2.160-something).
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    #[test]
    fn layout_matches_libc() {
        use std::mem::offset_of;
        macro_rules! same {
            ($($f:ident),*) => {$(
                assert_eq!(offset_of!(TcpInfo, $f), offset_of!(libc::tcp_info, $f), stringify!($f));
            )*};
        }
        same!(
            tcpi_state,
            tcpi_options,
            tcpi_rto,
            tcpi_snd_mss,
            tcpi_unacked,
            tcpi_pmtu,
            tcpi_rtt,
            tcpi_snd_cwnd,
            tcpi_total_retrans,
            tcpi_pacing_rate,
            tcpi_bytes_acked,
            tcpi_min_rtt,
            tcpi_delivery_rate,
            tcpi_busy_time,
            tcpi_rwnd_limited,
            tcpi_sndbuf_limited,
            tcpi_delivered,
            tcpi_bytes_sent,
            tcpi_bytes_retrans,
            tcpi_snd_wnd,
            tcpi_rcv_wnd,
            tcpi_rehash,
            tcpi_total_rto,
            tcpi_total_rto_time
        );
        assert_eq!(offset_of!(TcpInfo, tcpi_total_rto_time), 244);
        assert_eq!(size_of::<TcpInfo>(), 248);
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn getsockopt_on_loopback() {
        use std::io::{Read as _, Write as _};
        let l = std::net::TcpListener::bind("127.0.0.1:0").expect("listen");
        let mut c = std::net::TcpStream::connect(l.local_addr().expect("addr")).expect("connect");
        let (mut s, _) = l.accept().expect("accept");
        c.write_all(&[7u8; 100_000]).expect("write");
        let mut buf = vec![0u8; 100_000];
        s.read_exact(&mut buf).expect("read");
        let i = get(&c).expect("TCP_INFO");
        assert_eq!(i.tcpi_state, 1, "established");
        assert!(i.tcpi_bytes_acked >= 100_000 || i.tcpi_bytes_sent >= 100_000, "{i:?}");
        assert!(i.tcpi_options & TCPI_OPT_SACK != 0);
        let r = get(&s).expect("TCP_INFO");
        assert!(r.tcpi_bytes_received >= 100_000, "{r:?}");
    }
}
