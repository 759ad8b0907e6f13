//! Watching another program's TCP flows on this host: while the iperf3 client sends, its data
//! sockets' `struct tcp_info` is read through sock_diag ([`crate::tcp::sockdiag`], what `ss -ti`
//! reads) every [`PERIOD`], as `tcptune serve`'s sender samples its own socket. iperf3 reports
//! a stream's smoothed RTT once a report (1 s), which misses the peak of a startup's overshoot
//! into the bottleneck queue: on the lab's 40 ms / 100 Mbit/s path behind a 4-BDP queue the RTT
//! peaked at 123 ms for about 0.3 s in startup, and the 1-s reports read at most 43 ms, a
//! "shallow" queue. The watch sees the peak, as serve's own sampling does. Each read asks the
//! kernel for the sockets to the peer's port only (the dump's socket-id filter), so a host with
//! tens of thousands of sockets costs no more than one with a few.
//!
//! Only this host's sending sockets say something of the path's queue (the smoothed RTT is the
//! sender's), so the watch is for forward tests. Linux only: elsewhere it sees nothing.

use std::net::SocketAddr;
use std::time::Duration;

/// How often the sockets are read.
pub const PERIOD: Duration = Duration::from_millis(10);

/// A socket counts as a data stream when it had at least this share of the bytes of the
/// busiest one (iperf3's control connection moves a few hundred bytes).
#[cfg_attr(not(target_os = "linux"), allow(dead_code))]
const DATA_SHARE: u64 = 10;

/// What the watch saw of the data sockets to the peer.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Seen {
    /// Reads of the socket table that found a data socket.
    pub samples: u32,
    /// The lowest RTT the kernel saw on them (tcpi_min_rtt), ms.
    pub min_rtt_ms: Option<f64>,
    /// The highest smoothed RTT (tcpi_rtt) read, ms.
    pub loaded_rtt_ms: Option<f64>,
    /// The highest rate at which data reached the peer ([`delivered_bytes`], all the sockets
    /// to the peer together) over any [`RATE_WINDOW`], payload bit/s: what was delivered, where
    /// iperf3's intervals count what its sender wrote (in the first second that is the path's
    /// rate plus the send buffer it filled: 64 Mbit/s on the lab's 50 Mbit/s path).
    pub delivered_bps: Option<f64>,
    /// How the busiest socket's RTT, loss and rate behaved, as a path test's sender reads its
    /// own ([`crate::tcp::flow::shape_unpaced`]).
    pub shape: Option<crate::tcp::flow::Shape>,
}

/// The bytes a socket delivered: the segments the peer acknowledged or selectively
/// acknowledged (tcpi_delivered, counted as each arrives, as BBR's delivery rate counts them)
/// × the segment size. Not tcpi_bytes_acked: the cumulative acknowledgement jumps over every
/// segment already SACKed when a hole is repaired, and on the lab's 250 ms / 50 Mbit/s path a
/// second after BBR's startup losses read 60.3 Mbit/s. A kernel without tcpi_delivered (before
/// 4.18) reads 0 there: then bytes_acked.
pub fn delivered_bytes(i: &crate::tcp::tcpinfo::TcpInfo) -> u64 {
    match u64::from(i.tcpi_delivered) * u64::from(i.tcpi_snd_mss) {
        0 => i.tcpi_bytes_acked,
        d => d,
    }
}

/// The span the delivered rate is read over, as iperf3's intervals are.
pub const RATE_WINDOW: Duration = Duration::from_secs(1);

/// The highest rate over any span of at least `window` in `series` (seconds since the start,
/// bytes delivered so far), bit/s; None when the series spans less.
#[cfg_attr(not(target_os = "linux"), allow(dead_code))]
fn best_rate(series: &[(f64, u64)], window: Duration) -> Option<f64> {
    let w = window.as_secs_f64();
    let mut best: Option<f64> = None;
    let mut j = 0;
    for (i, &(t0, b0)) in series.iter().enumerate() {
        j = j.max(i);
        while j < series.len() && series[j].0 - t0 < w {
            j += 1;
        }
        let Some(&(t1, b1)) = series.get(j) else { break };
        #[allow(clippy::cast_precision_loss)]
        let rate = b1.saturating_sub(b0) as f64 * 8.0 / (t1 - t0);
        best = Some(best.map_or(rate, |b| b.max(rate)));
    }
    best
}

/// A watch running in the background until [`Watch::finish`].
pub struct Watch {
    #[cfg(target_os = "linux")]
    inner: Option<linux::Running>,
}

impl Watch {
    /// Starts watching this host's established TCP sockets to `peer`.
    pub fn start(peer: SocketAddr) -> Self {
        #[cfg(target_os = "linux")]
        {
            Self {
                inner: Some(linux::Running::start(peer)),
            }
        }
        #[cfg(not(target_os = "linux"))]
        {
            let _ = peer;
            Self {}
        }
    }

    /// Stops the watch and says what it saw.
    pub fn finish(self) -> Seen {
        #[cfg(target_os = "linux")]
        {
            self.inner.map(linux::Running::finish).unwrap_or_default()
        }
        #[cfg(not(target_os = "linux"))]
        {
            Seen::default()
        }
    }
}

/// Per socket (by inode): bytes acknowledged, the lowest min RTT, the highest smoothed RTT
/// (µs), how many reads found it, and its readings.
#[cfg_attr(not(target_os = "linux"), allow(dead_code))]
#[derive(Debug, Clone, Default)]
struct Track {
    bytes: u64,
    min_us: u32,
    max_us: u32,
    reads: u32,
    samples: Vec<crate::tcp::flow::Sample>,
}

/// The data sockets' summary: those with at least 1/[`DATA_SHARE`] of the busiest one's bytes;
/// the delivered rate from `series` (all of them together).
#[cfg_attr(not(target_os = "linux"), allow(dead_code))]
fn summarize(tracks: &std::collections::HashMap<u32, Track>, series: &[(f64, u64)]) -> Seen {
    let busiest = tracks.values().map(|t| t.bytes).max().unwrap_or(0);
    let data: Vec<&Track> = tracks
        .values()
        .filter(|t| busiest > 0 && t.bytes >= busiest / DATA_SHARE)
        .collect();
    let ms = |us: u32| f64::from(us) / 1000.0;
    let min_rtt_ms = data.iter().map(|t| t.min_us).filter(|u| *u > 0).min().map(ms);
    let shape = data
        .iter()
        .max_by_key(|t| t.bytes)
        .filter(|t| !t.samples.is_empty())
        .map(|t| crate::tcp::flow::shape_unpaced(&t.samples, min_rtt_ms.unwrap_or(0.0)));
    Seen {
        samples: data.iter().map(|t| t.reads).max().unwrap_or(0),
        min_rtt_ms,
        loaded_rtt_ms: data.iter().map(|t| t.max_us).filter(|u| *u > 0).max().map(ms),
        delivered_bps: best_rate(series, RATE_WINDOW),
        shape,
    }
}

#[cfg(target_os = "linux")]
mod linux {
    use std::collections::HashMap;
    use std::net::SocketAddr;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::thread::JoinHandle;
    use std::time::Instant;

    use super::{PERIOD, Seen, Track, summarize};

    pub struct Running {
        stop: Arc<AtomicBool>,
        thread: JoinHandle<Seen>,
    }

    impl Running {
        pub fn start(peer: SocketAddr) -> Self {
            let stop = Arc::new(AtomicBool::new(false));
            let flag = Arc::clone(&stop);
            let thread = std::thread::spawn(move || {
                let mut tracks: HashMap<u32, Track> = HashMap::new();
                let mut series = Vec::new();
                let start = Instant::now();
                while !flag.load(Ordering::Relaxed) {
                    if let Some(delivered) = read_once(peer, &mut tracks, start.elapsed()) {
                        series.push((start.elapsed().as_secs_f64(), delivered));
                    }
                    std::thread::sleep(PERIOD);
                }
                summarize(&tracks, &series)
            });
            Self { stop, thread }
        }

        pub fn finish(self) -> Seen {
            self.stop.store(true, Ordering::Relaxed);
            self.thread.join().unwrap_or_default()
        }
    }

    /// One read of the sockets to the peer's port: those to `peer` folded into `tracks`, and the bytes
    /// delivered on them all (None when there were none). A failed read (no netlink in a
    /// sandbox) leaves them as they are.
    fn read_once(peer: SocketAddr, tracks: &mut HashMap<u32, Track>, at: std::time::Duration) -> Option<u64> {
        let sockets = crate::tcp::sockdiag::tcp_sockets_to_port(peer.port()).ok()?;
        let mut delivered = None;
        for s in sockets.iter().filter(|s| s.peer == peer) {
            let Some(i) = &s.info else { continue };
            delivered = Some(delivered.unwrap_or(0) + super::delivered_bytes(i));
            let t = tracks.entry(s.inode).or_default();
            t.bytes = t.bytes.max(i.tcpi_bytes_acked);
            t.reads += 1;
            if i.tcpi_min_rtt > 0 && (t.min_us == 0 || i.tcpi_min_rtt < t.min_us) {
                t.min_us = i.tcpi_min_rtt;
            }
            // Before the first data is acknowledged the RTT is the handshake's.
            if i.tcpi_bytes_acked > 0 {
                t.max_us = t.max_us.max(i.tcpi_rtt);
                t.samples.push(crate::tcp::flow::Sample::of(at, i));
            }
        }
        delivered
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::*;

    #[test]
    fn the_data_sockets_are_summarized_the_control_one_left_out() {
        let mut tracks = HashMap::new();
        // iperf3's control connection: a few hundred bytes, an RTT of its own.
        tracks.insert(
            1,
            Track {
                bytes: 300,
                min_us: 100,
                max_us: 900_000,
                reads: 40,
                samples: Vec::new(),
            },
        );
        tracks.insert(
            2,
            Track {
                bytes: 900_000_000,
                min_us: 40_100,
                max_us: 123_000,
                reads: 38,
                samples: Vec::new(),
            },
        );
        tracks.insert(
            3,
            Track {
                bytes: 100_000_000,
                min_us: 40_050,
                max_us: 90_000,
                reads: 37,
                samples: Vec::new(),
            },
        );
        let seen = summarize(&tracks, &[]);
        assert_eq!(seen.samples, 38);
        assert_eq!(seen.min_rtt_ms, Some(40.05));
        assert_eq!(seen.loaded_rtt_ms, Some(123.0));
        assert_eq!(seen.delivered_bps, None);
        assert_eq!(summarize(&HashMap::new(), &[]), Seen::default());
    }

    #[test]
    fn the_delivered_rate_is_the_best_second_of_acknowledged_bytes() {
        // 1 MB/s for 2 s, then 2 MB/s for 1.5 s, read every 0.25 s.
        let series: Vec<(f64, u64)> = (0..=14)
            .map(|i| {
                let t = f64::from(i) * 0.25;
                #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
                let b = if t <= 2.0 { t * 1e6 } else { 2e6 + (t - 2.0) * 2e6 } as u64;
                (t, b)
            })
            .collect();
        assert_eq!(best_rate(&series, RATE_WINDOW), Some(16e6));
        // Less than the window: no reading. A socket gone (fewer bytes): never negative.
        assert_eq!(best_rate(&series[..4], RATE_WINDOW), None);
        assert_eq!(best_rate(&[(0.0, 5), (1.0, 2)], RATE_WINDOW), Some(0.0));
    }

    #[test]
    fn delivered_bytes_count_segments_as_they_arrive() {
        use crate::tcp::tcpinfo::TcpInfo;
        // After a repair the cumulative acknowledgement lags what arrived (SACKed).
        let i = TcpInfo {
            tcpi_delivered: 10_000,
            tcpi_snd_mss: 1_448,
            tcpi_bytes_acked: 9_000_000,
            ..TcpInfo::default()
        };
        assert_eq!(delivered_bytes(&i), 14_480_000);
        // A kernel without tcpi_delivered: the acknowledged bytes.
        let old = TcpInfo { tcpi_delivered: 0, ..i };
        assert_eq!(delivered_bytes(&old), 9_000_000);
    }

    /// A real flow on loopback: the watch finds it and reads its RTTs.
    #[cfg(target_os = "linux")]
    #[test]
    fn a_real_flow_is_seen() {
        use std::io::{Read as _, Write as _};
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        let addr = listener.local_addr().expect("addr");
        let reader = std::thread::spawn(move || {
            let (mut s, _) = listener.accept().expect("accept");
            let mut buf = vec![0u8; 1 << 16];
            while s.read(&mut buf).is_ok_and(|n| n > 0) {}
        });
        let watch = Watch::start(addr);
        let mut c = std::net::TcpStream::connect(addr).expect("connect");
        let block = vec![7u8; 1 << 16];
        let until = std::time::Instant::now() + Duration::from_millis(300);
        while std::time::Instant::now() < until {
            c.write_all(&block).expect("write");
        }
        let seen = watch.finish();
        drop(c);
        reader.join().expect("reader");
        assert!(seen.samples >= 5, "{seen:?}");
        assert!(seen.min_rtt_ms.is_some_and(|m| m > 0.0), "{seen:?}");
        assert!(
            seen.loaded_rtt_ms
                .is_some_and(|l| l >= seen.min_rtt_ms.unwrap_or(f64::MAX)),
            "{seen:?}"
        );
    }
}
