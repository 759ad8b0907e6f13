//! TCP-level evidence about a path: what a TCP test through it showed ([`TcpTest`], from
//! `tcptune serve` or an iperf3 server), or, with no peer to test against, what this host's
//! kernel already knows about it ([`Passive`]: live flows and the per-destination metrics).
//! The advice's decision table reads these; this module only holds them.

use serde::{Deserialize, Serialize};

/// Which far end a [`TcpTest`] ran against.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum TestPeer {
    /// `tcptune serve` (protocol version 2 or 3): the receiver reports its window share; in a
    /// reverse test (protocol 3) serve sends and reports its sender's readings.
    Tcptune,
    /// An iperf3 server, driven by the `iperf3` client with `-J`.
    Iperf3,
}

/// Which way a test's data went.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Direction {
    /// This host sent, the far end received: what an upload meets.
    #[default]
    Forward,
    /// The far end sent, this host received: what a download meets.
    Reverse,
}

/// What held a test's flow below the path's rate, when something did: its rate is then a lower
/// bound, and its flat RTT says nothing about the bottleneck queue.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum HeldBy {
    /// The receiver's advertised window (its receive buffer): the far end's in a forward test,
    /// this host's in a reverse one.
    ReceiveWindow,
    /// The sender's send buffer: this host's in a forward test, the far end's in a reverse one.
    SendBuffer,
}

/// What one bounded TCP transfer between this host and the far end showed, in one direction.
/// Every reading that the peer or this OS could not give is None.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct TcpTest {
    pub peer: Option<TestPeer>,
    /// Which way the data went.
    pub direction: Direction,
    /// The address and port tested.
    pub addr: String,
    /// The congestion control the test flow ran with.
    pub cc: Option<String>,
    /// The bounds it ran under: the time asked for and the byte cap.
    pub limit_s: f64,
    pub limit_bytes: u64,
    /// How long data was sent, s.
    pub duration_s: f64,
    /// Payload bytes the receiver got (tcptune serve: the far end forward, this host reverse)
    /// or the sender sent (iperf3).
    pub bytes: u64,
    /// bytes × 8 / duration.
    pub goodput_bps: f64,
    /// The flow's TCP delivery rate (tcptune: Linux tcpi_delivery_rate sampled by the sender
    /// during its startup, not app-limited, the median from the first reading within 10 % of
    /// the best; while still in startup, the best reading, a lower bound; iperf3: the best 1-s
    /// interval): a TCP-level reading of the bottleneck rate.
    pub delivery_rate_bps: Option<f64>,
    /// Data segments sent, and of those retransmitted, over the whole test.
    pub segs_out: Option<u64>,
    pub retrans_segs: Option<u64>,
    /// The same after the flow's startup (from the first sample at which the delivery rate
    /// had stopped growing): retransmissions there are the path's loss, not the overshoot of
    /// slow start into the queue.
    pub steady_segs_out: Option<u64>,
    pub steady_retrans_segs: Option<u64>,
    /// Retransmissions after startup that came in bursts (iperf3's 1-s intervals), part of the
    /// steady counts above and left out of the path's loss ([`Self::steady_loss_pct`]).
    pub loss_bursts: Option<LossBursts>,
    /// A second run against the same server where this one could not tell what the class
    /// needs ([`Retest`]).
    pub retest: Option<Retest>,
    /// Lowest RTT of the flow, ms.
    pub min_rtt_ms: Option<f64>,
    /// Highest smoothed RTT under load, ms: (loaded − min) × delivery rate ≈ the bottleneck
    /// queue the flow filled.
    pub loaded_rtt_ms: Option<f64>,
    /// The receiver's largest advertised window (Linux 6.2+ receivers), bytes.
    pub receiver_window: Option<u64>,
    /// Its receive buffer at that moment (SO_RCVBUF), bytes.
    pub receiver_buffer: Option<u64>,
    /// receiver_window / receiver_buffer: the share of a receive buffer Linux advertises as
    /// window on that host (its scaling_ratio, payload / truesize of its skbs).
    pub window_share: Option<f64>,
    /// Percent of the busy time the flow was limited by the receiver's window, and by the
    /// sender's send buffer (this host's forward, the far end's reverse; Linux TCP_INFO).
    pub rwnd_limited_pct: Option<f64>,
    pub sndbuf_limited_pct: Option<f64>,
    /// Whether the test's own buffers may have held it below the path's rate (then its rate
    /// is a lower bound).
    pub window_limited: bool,
    /// Which buffer held it, when one did and the readings say which.
    pub held_by: Option<HeldBy>,
    /// The flow was still in startup when the test ended: `delivery_rate_bps` is the highest
    /// rate it reached, a lower bound of the path's, and no loss was measured.
    pub in_startup: bool,
    /// What the test says about itself, e.g. "as a normal user the buffers could not be
    /// forced: limited to net.core.wmem_max = 212992".
    pub notes: Vec<String>,
    /// How its RTT, loss and rate behaved ([`crate::tcp::flow::Shape`]): what tells random
    /// loss from congestion, a shared bottleneck, a policer and reordering apart.
    pub shape: Option<crate::tcp::flow::Shape>,
    /// Its rate over time: a point every quarter second (tcptune serve) or every second
    /// (iperf3's intervals), each with the retransmissions in it where the sender is known.
    pub series: Vec<Point>,
    /// How long the test took in all, s: the connection, the data and the result.
    #[serde(default)]
    pub took_s: Option<f64>,
    /// The sender ended before the test's time: its reading was made
    /// ([`crate::tcp::flow::reading_made`]); None where it ran to its time or bytes.
    #[serde(default)]
    pub made: Option<crate::tcp::flow::Made>,
}

/// One point of a test's rate over time: the rate over the interval that ends `t_s` seconds
/// into the test, and the segments retransmitted in it (None: not known, e.g. this host
/// receiving).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Point {
    pub t_s: f64,
    pub rate_bps: f64,
    pub retrans: Option<u64>,
}

impl TcpTest {
    /// Whether this is evidence: Err says why not. A test that moved nothing measures nothing
    /// (its RTTs are the handshake's, its loss 0 of 0), and a reading out of every range a
    /// TCP flow has is a broken or lying report, not a path. The path test and the iperf3
    /// reader call it last, so the advice's decision never reads such a test.
    pub fn check(&self) -> Result<(), String> {
        if self.bytes == 0 {
            return Err("the test moved no data: it measures nothing".to_string());
        }
        // Rounded to the millisecond: a test of a few fast bytes may show 0.
        if !(self.duration_s.is_finite() && self.duration_s >= 0.0) {
            return Err(format!("a test of {} s is no test", self.duration_s));
        }
        if !(0.0..=crate::tcp::MAX_RATE_BPS).contains(&self.goodput_bps) {
            return Err(format!("a goodput of {} bit/s is past any TCP flow", self.goodput_bps));
        }
        if self.window_share.is_some_and(|s| !(s > 0.0 && s <= 1.0)) {
            return Err(format!(
                "a window share of {:?} is not within (0, 1]",
                self.window_share
            ));
        }
        // The sender's readings: what flow::Reading::check holds any TCP flow to.
        crate::tcp::flow::Reading {
            delivery_rate_bps: self.delivery_rate_bps,
            segs_out: self.segs_out,
            retrans_segs: self.retrans_segs,
            steady_segs_out: self.steady_segs_out,
            steady_retrans_segs: self.steady_retrans_segs,
            min_rtt_ms: self.min_rtt_ms,
            loaded_rtt_ms: self.loaded_rtt_ms,
            rwnd_limited_pct: self.rwnd_limited_pct,
            sndbuf_limited_pct: self.sndbuf_limited_pct,
            ..Default::default()
        }
        .check()?;
        Ok(())
    }

    /// Retransmitted share of the data segments after startup, bursts left out, %: the
    /// path's random loss. None when the test ended before startup did (its retransmissions
    /// then include the flow's own queue overflow, which says nothing about the path's random
    /// loss).
    pub fn steady_loss_pct(&self) -> Option<f64> {
        match self.path_loss() {
            #[allow(clippy::cast_precision_loss)]
            Some((s, r)) if s > 0 => Some(100.0 * r as f64 / s as f64),
            _ => None,
        }
    }

    /// The path's random loss after startup as the best reading has it, %: a paced second run's
    /// where one counted it in place of this test's (whose unpaced flow may have overflowed the
    /// queue itself, [`RetestKind::Paced`]), else [`Self::steady_loss_pct`].
    pub fn counted_loss_pct(&self) -> Option<f64> {
        match self.second_runs().1 {
            #[allow(clippy::cast_precision_loss)]
            Some(r) if r.steady_segs_out > 0 => Some(100.0 * r.steady_retrans_segs as f64 / r.steady_segs_out as f64),
            _ => self.steady_loss_pct(),
        }
    }

    /// The second iperf3 run that counts, as (streams, paced): parallel streams where a window
    /// held the test (their queue, and their loss where the queue held them), or one paced flow
    /// (its loss, in place of the test's, which its own flow may have caused).
    pub fn second_runs(&self) -> (Option<Retest>, Option<Retest>) {
        match self.retest {
            Some(r) if self.window_limited && matches!(r.kind, RetestKind::Streams { .. }) => (Some(r), None),
            Some(r) if !self.window_limited && matches!(r.kind, RetestKind::Paced { .. }) => (None, Some(r)),
            _ => (None, None),
        }
    }

    /// The segments sent after startup and of those retransmitted, the bursts'
    /// ([`Self::loss_bursts`]) left out: what the path's random loss is read from.
    pub fn path_loss(&self) -> Option<(u64, u64)> {
        let (s, r) = (self.steady_segs_out?, self.steady_retrans_segs?);
        let b = self.loss_bursts.unwrap_or_default();
        Some((s.saturating_sub(b.segs_out), r.saturating_sub(b.retrans_segs)))
    }
}

/// A second iperf3 run against the same server, where the forward test could not tell what the
/// class needs ([`crate::measure::retest`]), and what it showed.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Retest {
    #[serde(flatten)]
    pub kind: RetestKind,
    /// How long it sent, s.
    pub duration_s: f64,
    /// Its delivery rate (the best second of bytes delivered on its sockets, else its rate
    /// after startup, else its best interval; all its streams together), payload bit/s.
    pub rate_bps: f64,
    /// The lowest and highest smoothed RTT its streams showed, ms.
    pub min_rtt_ms: f64,
    pub loaded_rtt_ms: f64,
    /// Segments (bytes / MSS) and retransmissions of the intervals after its startup.
    pub steady_segs_out: u64,
    pub steady_retrans_segs: u64,
}

/// Which second run, and why.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum RetestKind {
    /// The test was held by the receiver's window, so its one flow kept about the BDP in flight
    /// and could not fill the queue: `streams` flows held by the same `window` bytes, together
    /// at least [`crate::measure::retest::PROBE_WINDOW_BDP`] × the BDP, fill it instead. Their
    /// RTT growth is the queue depth; their loss after startup, where the queue held them, more
    /// of the path's random loss.
    Streams { streams: u32, window: u64 },
    /// The test was not held, and lost segments after startup behind a queue of about a BDP,
    /// which its unpaced BBR flow (up to 2 × BDP in flight) may have overflowed itself: one
    /// flow paced at `rate_bps` (below the path's rate, so no queue builds) counts the path's
    /// loss instead.
    Paced { rate_bps: f64 },
}

/// Retransmissions that came in bursts: steady-state intervals with far more than random loss
/// at the other intervals' rate gives. Random loss spreads over a flow's time evenly (Poisson:
/// an interval that expects λ retransmissions sees more than λ + 3 + 4√(λ + 1) about once in
/// a million); a queue overflowing (a flow probing into a full drop-tail queue, the overshoot
/// of a restart after BBR's ProbeRTT, an RTO resending a window) loses dozens to thousands of
/// segments in one interval and none in the next. On the lab, 250 ms / 50 Mbit/s without
/// random loss, an iperf3 test lost 256, 54 and 141 segments in 3 of 11 intervals after
/// startup and none in the other 8: 1.1 % read as random loss, where the path has none.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct LossBursts {
    /// The intervals after startup, and how many of them were bursts.
    pub intervals: usize,
    pub bursts: usize,
    /// The bursts' segments and retransmissions.
    pub segs_out: u64,
    pub retrans_segs: u64,
}

/// Fewest intervals after startup that [`LossBursts::find`] reads: with fewer, a burst cannot
/// be told from the rate.
pub const BURST_MIN_INTERVALS: usize = 5;

impl LossBursts {
    /// The bursts among `intervals` (segments sent, retransmitted; after startup): those with
    /// more retransmissions than random loss at the median interval's rate allows (see the
    /// type's docs). None when there are fewer than [`BURST_MIN_INTERVALS`], no burst, or
    /// bursts in half of them or more (then the loss is the path's, not a few events).
    pub fn find(intervals: &[(u64, u64)]) -> Option<Self> {
        if intervals.len() < BURST_MIN_INTERVALS {
            return None;
        }
        #[allow(clippy::cast_precision_loss)]
        let mut rates: Vec<f64> = intervals
            .iter()
            .map(|&(s, r)| if s == 0 { 0.0 } else { r as f64 / s as f64 })
            .collect();
        rates.sort_by(f64::total_cmp);
        let median = rates[rates.len() / 2];
        #[allow(clippy::cast_precision_loss)]
        let burst = |&&(s, r): &&(u64, u64)| {
            let lambda = median * s as f64;
            r as f64 > lambda + 3.0 + 4.0 * (lambda + 1.0).sqrt()
        };
        let found: Vec<&(u64, u64)> = intervals.iter().filter(burst).collect();
        if found.is_empty() || 2 * found.len() >= intervals.len() {
            return None;
        }
        Some(Self {
            intervals: intervals.len(),
            bursts: found.len(),
            segs_out: found.iter().map(|i| i.0).sum(),
            retrans_segs: found.iter().map(|i| i.1).sum(),
        })
    }
}

/// One live TCP flow of this host to the host advised for (INET_DIAG), as `inspect` sees it.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct LiveFlow {
    pub local: String,
    pub peer: String,
    pub cc: Option<String>,
    pub bytes_sent: u64,
    pub bytes_retrans: u64,
    pub bytes_received: u64,
    pub min_rtt_ms: Option<f64>,
    pub rtt_ms: Option<f64>,
    pub delivery_rate_bps: Option<f64>,
    /// This end as receiver: its advertised window and receive buffer (skmem rb), bytes.
    pub rcv_wnd: Option<u64>,
    pub rcv_buf: Option<u64>,
}

/// The kernel's cached metrics for a destination (`ip tcp_metrics show ADDR`).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct DestMetrics {
    pub rtt_ms: Option<f64>,
    pub rttvar_ms: Option<f64>,
    /// Slow-start threshold cached after a loss, in segments.
    pub ssthresh: Option<u64>,
    pub cwnd: Option<u64>,
}

/// What this host knows about the path without a peer to test against.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Passive {
    pub flows: Vec<LiveFlow>,
    pub metrics: Option<DestMetrics>,
    /// Why a source gave nothing (e.g. "`ip` not found: no tcp_metrics").
    pub notes: Vec<String>,
}

impl Passive {
    /// Retransmitted share of the bytes the live flows sent, %, when they sent enough to
    /// tell (at least `min_bytes`).
    pub fn loss_pct(&self, min_bytes: u64) -> Option<f64> {
        let sent: u64 = self.flows.iter().map(|f| f.bytes_sent).sum();
        let retr: u64 = self.flows.iter().map(|f| f.bytes_retrans).sum();
        #[allow(clippy::cast_precision_loss)]
        (sent >= min_bytes && sent > 0).then(|| 100.0 * retr as f64 / sent as f64)
    }

    /// This host's advertised-window share as a receiver, from the live flow that received
    /// the most (rcv_wnd / rcv_buf).
    pub fn window_share(&self) -> Option<f64> {
        #[allow(clippy::cast_precision_loss)]
        self.flows
            .iter()
            .filter(|f| f.bytes_received > 0)
            .max_by_key(|f| f.bytes_received)
            .and_then(|f| match (f.rcv_wnd, f.rcv_buf) {
                (Some(w), Some(b)) if w > 0 && b > 0 => Some(w as f64 / b as f64),
                _ => None,
            })
    }
}

/// All the TCP evidence gathered for one host.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Evidence {
    /// This host sending to the far end.
    pub test: Option<TcpTest>,
    /// The far end sending to this host, where the peer can (tcptune serve, protocol 3;
    /// `iperf3 -R`).
    pub reverse: Option<TcpTest>,
    pub passive: Option<Passive>,
    /// Why there is no test (no peer answered, `--no-path-test`, iperf3 missing, ...).
    pub test_skipped: Option<String>,
    /// Why there is no reverse test when there is a forward one (an older peer, ...).
    pub reverse_skipped: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loss_is_read_only_after_startup() {
        let mut t = TcpTest {
            segs_out: Some(100_000),
            retrans_segs: Some(300),
            ..TcpTest::default()
        };
        assert_eq!(
            t.steady_loss_pct(),
            None,
            "the whole test is no reading of the path's loss"
        );
        t.steady_segs_out = Some(80_000);
        t.steady_retrans_segs = Some(8);
        assert_eq!(t.steady_loss_pct(), Some(0.01));
        t.steady_segs_out = Some(0);
        assert_eq!(t.steady_loss_pct(), None, "no steady segments");
        assert_eq!(TcpTest::default().steady_loss_pct(), None);
    }

    /// The lab's 250 ms / 50 Mbit/s path: the unpaced test lost 10.5 % after startup, its
    /// own overflow of a one-BDP queue; the paced second run lost nothing, and that counts.
    #[test]
    fn a_paced_second_run_counts_the_loss_in_place_of_the_test() {
        let mut t = TcpTest {
            steady_segs_out: Some(20_819),
            steady_retrans_segs: Some(2_191),
            ..TcpTest::default()
        };
        let first = t.counted_loss_pct().expect("a reading");
        assert!((first - 10.52).abs() < 0.01, "{first}");
        let paced = Retest {
            kind: RetestKind::Paced { rate_bps: 48.21e6 },
            duration_s: 8.0,
            rate_bps: 48.27e6,
            min_rtt_ms: 250.1,
            loaded_rtt_ms: 252.2,
            steady_segs_out: 20_820,
            steady_retrans_segs: 0,
        };
        t.retest = Some(paced);
        assert_eq!(t.counted_loss_pct(), Some(0.0));
        // Parallel streams of a held test are no reading of the one flow's loss; nor is a paced
        // run that sent nothing after its startup.
        t.retest = Some(Retest {
            kind: RetestKind::Streams {
                streams: 3,
                window: 1 << 20,
            },
            ..paced
        });
        assert_eq!(t.counted_loss_pct(), Some(first));
        t.retest = Some(Retest {
            steady_segs_out: 0,
            ..paced
        });
        assert_eq!(t.counted_loss_pct(), Some(first));
    }

    /// The lab's intervals after startup (segments, retransmissions; iperf3 over the delay
    /// line): bursts are found where a queue overflowed, never in random loss alone.
    #[test]
    fn bursts_are_told_from_random_loss() {
        let seg = |r: &[u64], n: u64| r.iter().map(|&r| (n, r)).collect::<Vec<_>>();
        // 250 ms / 50 Mbit/s, no random loss: BBR's probing overflowed the queue after ProbeRTT.
        let b = LossBursts::find(&seg(&[0, 0, 0, 0, 0, 0, 0, 0, 256, 54, 141], 4_160)).expect("bursts");
        assert_eq!(
            (b.intervals, b.bursts, b.segs_out, b.retrans_segs),
            (11, 3, 12_480, 451)
        );
        // 600 ms / 100 Mbit/s, 0.05 % random loss, startup's overshoot counted after it.
        let mut i = seg(
            &[1, 4, 1_105, 2_269, 1_680, 1, 5, 2, 2, 1, 0, 4, 3, 3, 2, 2, 2, 5],
            8_333,
        );
        let b = LossBursts::find(&i).expect("bursts");
        assert_eq!((b.bursts, b.retrans_segs), (3, 5_054));
        let t = TcpTest {
            steady_segs_out: Some(18 * 8_333),
            steady_retrans_segs: Some(i.iter().map(|x| x.1).sum()),
            loss_bursts: Some(b),
            ..TcpTest::default()
        };
        // 37 of 15 × 8,333 segments: 0.0296 % (the path's 0.05 % at a lower rate than counted).
        assert_eq!(t.path_loss(), Some((124_995, 37)));
        // Random loss alone, at 150 ms / 500 Mbit/s (0.05 %) and at a fraction of a loss per
        // interval: no bursts.
        let random = [25, 26, 20, 19, 26, 24, 14, 25, 17, 23, 28, 24, 19, 23, 15, 14, 20, 20];
        assert_eq!(LossBursts::find(&seg(&random, 43_000)), None);
        assert_eq!(LossBursts::find(&seg(&[0, 1, 0, 0, 2, 0, 1, 0, 0, 3], 80_000)), None);
        // Loss in half the intervals is the path's; too few intervals tell nothing.
        assert_eq!(LossBursts::find(&seg(&[0, 0, 90, 80, 0, 70], 4_000)), None);
        assert_eq!(LossBursts::find(&seg(&[0, 0, 0, 300], 4_000)), None);
        i.truncate(0);
        assert_eq!(LossBursts::find(&i), None);
    }

    /// A test as a path test gives it: 12.5 MB in 1 s, all readings in range.
    fn sane() -> TcpTest {
        TcpTest {
            bytes: 12_500_000,
            duration_s: 1.0,
            goodput_bps: 100e6,
            delivery_rate_bps: Some(105e6),
            segs_out: Some(9_000),
            retrans_segs: Some(3),
            steady_segs_out: Some(6_000),
            steady_retrans_segs: Some(1),
            min_rtt_ms: Some(20.0),
            loaded_rtt_ms: Some(31.0),
            window_share: Some(0.5),
            rwnd_limited_pct: Some(0.0),
            sndbuf_limited_pct: Some(12.5),
            ..TcpTest::default()
        }
    }

    #[test]
    fn only_a_test_in_range_is_evidence() {
        assert_eq!(sane().check(), Ok(()));
        let refused = |t: TcpTest| t.check().expect_err("no evidence");
        // A test that moved nothing: its RTTs are the handshake's, its loss 0 of 0.
        assert_eq!(
            refused(TcpTest { bytes: 0, ..sane() }),
            "the test moved no data: it measures nothing"
        );
        assert!(
            refused(TcpTest {
                duration_s: -1.0,
                ..sane()
            })
            .contains("a test of -1 s")
        );
        for bps in [f64::INFINITY, -1.0, 2e13] {
            assert!(
                refused(TcpTest {
                    goodput_bps: bps,
                    ..sane()
                })
                .contains("past any TCP flow")
            );
        }
        assert!(
            refused(TcpTest {
                delivery_rate_bps: Some(f64::NAN),
                ..sane()
            })
            .contains("a delivery rate of Some(NaN) bit/s (a TCP flow runs at 0 to")
        );
        for share in [100.0, -5.0, 0.0] {
            assert!(
                refused(TcpTest {
                    window_share: Some(share),
                    ..sane()
                })
                .contains("window share")
            );
        }
        assert!(
            refused(TcpTest {
                min_rtt_ms: Some(0.0),
                ..sane()
            })
            .contains("RTTs")
        );
        assert!(
            refused(TcpTest {
                sndbuf_limited_pct: Some(250.0),
                ..sane()
            })
            .contains("limited-by")
        );
        assert!(
            refused(TcpTest {
                steady_retrans_segs: Some(7_000),
                ..sane()
            })
            .contains("segments retransmitted")
        );
    }

    #[test]
    fn passive_loss_and_share() {
        let p = Passive {
            flows: vec![
                LiveFlow {
                    bytes_sent: 1_000_000,
                    bytes_retrans: 1_000,
                    bytes_received: 10,
                    rcv_wnd: Some(100),
                    rcv_buf: Some(1000),
                    ..LiveFlow::default()
                },
                LiveFlow {
                    bytes_sent: 1_000_000,
                    bytes_received: 5_000_000,
                    rcv_wnd: Some(560),
                    rcv_buf: Some(1000),
                    ..LiveFlow::default()
                },
            ],
            ..Passive::default()
        };
        assert_eq!(p.loss_pct(1_000_000), Some(0.05));
        assert_eq!(p.loss_pct(10_000_000), None, "too little sent to tell");
        assert_eq!(p.window_share(), Some(0.56));
    }
}
