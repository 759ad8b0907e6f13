//! Whether a path test ran alone: what its flow's shape ([`crate::tcp::flow::Shape`]) and the
//! packet trains' bottleneck rate say of flows it shared the bottleneck with, of a policer, and
//! of reordering. One place decides it, for the rate ([`super::rate`]) and the class
//! ([`super::decide`]).
//!
//! - **Others share the bottleneck**: the test's flow, paced after startup below what it reached
//!   (so its own queue drains), kept meeting a queue that stood anyway — someone else's — and
//!   either got well below the trains' bottleneck rate, or the probes before it (when nothing of
//!   this host's was sending) met a queue the test later saw drain. What it got is what the
//!   others left, not the path: the path is the trains'.
//!   Or the queue overflowed while the test's flow got well below the trains' rate: a flow
//!   alone overflows a drop-tail queue only when it sends at the bottleneck's rate, so the rest
//!   of what filled it was someone else's, who backed off and left no queue standing.
//! - **A policer**: the rate stopped at a ceiling well below the trains' bottleneck (a token
//!   bucket passes a train's burst at line rate, then drops), losing segments at the base RTT —
//!   no queue grew before the drops, as it would at a congested queue — and no queue stood.
//! - **Reordering**: retransmissions the receiver reported as duplicates (D-SACK) were
//!   spurious: their first copies came late, not lost, and are no loss of the path.

use serde::Serialize;

use crate::measure::evidence::TcpTest;

/// A queue stood while the test sent paced when its median RTT then was at least this many ms
/// and this share of the lowest RTT above the lowest.
pub const STANDING_MIN_MS: f64 = 2.0;
pub const STANDING_SHARE: f64 = 0.1;
/// Without the trains' rate to compare, only a queue of this share of the lowest RTT tells
/// others are there.
pub const STANDING_ALONE_SHARE: f64 = 0.25;
/// The test got less than this share of the trains' bottleneck rate (IP level both).
pub const BELOW_CAPACITY: f64 = 0.8;
/// The probes' lowest RTT, taken before the test, above the test's lowest by more than this
/// share: a queue stood while they ran that the test's flow later saw drain — someone else's,
/// as nothing of this host's was sending then.
pub const PROBES_ABOVE: f64 = 0.05;
/// The queue overflowed (the losses came with the queue at least at this share of the highest
/// it reached) while the test got less than [`OVERFLOW_BELOW`] of the trains' rate as the queue
/// stood full: others filled the rest. 150 ms / 500 Mbit/s behind a queue of 0.25 × BDP: alone,
/// 0.96–1.0 of the trains; beside one CUBIC flow, 0.81–0.86 (the delivery rate's median read
/// 0.88–0.93 there); both losing with the queue full.
pub const OVERFLOW_QUEUE_SHARE: f64 = 0.5;
pub const OVERFLOW_BELOW: f64 = 0.92;
/// A policer's startup loses at least this share of what it sends, %.
pub const POLICED_STARTUP_LOSS_PCT: f64 = 0.5;
/// Loss comes at the base RTT when the queue at the losses is at most this share of the
/// highest queue the flow met, or [`STANDING_MIN_MS`].
pub const LOSS_AT_BASE_SHARE: f64 = 0.2;

/// What the test's shape says of the path's other users.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(rename_all = "kebab-case", tag = "kind")]
pub enum Sharing {
    /// Others share the bottleneck: the test got `rate_bps` of the trains' `capacity_bps`
    /// (None: no trains) with a queue of `standing_ms` standing while it sent paced.
    Competing {
        rate_bps: f64,
        capacity_bps: Option<f64>,
        standing_ms: f64,
    },
    /// No test ran, and probes with nothing of this host's sending saw others' queue move the
    /// RTT's floor between `low_ms` and `high_ms` ([`crate::measure::queue`]); the path's rate
    /// is the trains' `capacity_bps` (None: no trains).
    Probed {
        low_ms: f64,
        high_ms: f64,
        capacity_bps: Option<f64>,
    },
    /// A policer at about `rate_bps`, below the trains' `capacity_bps`: startup lost
    /// `startup_loss_pct` % at the base RTT, and no queue grew.
    Policed {
        rate_bps: f64,
        capacity_bps: f64,
        startup_loss_pct: f64,
    },
}

impl Sharing {
    /// The rate of the path the advice is for: the trains' where others share it (what the test
    /// got is what they left), the policed one behind a policer.
    pub fn path_rate_bps(&self) -> Option<f64> {
        match *self {
            Self::Competing { capacity_bps, .. } | Self::Probed { capacity_bps, .. } => capacity_bps,
            Self::Policed { rate_bps, .. } => Some(rate_bps),
        }
    }
}

/// A payload rate at the IP level, as the trains count it: × MTU / MSS, MSS = MTU − 52 (IP,
/// TCP and the timestamp option).
pub(super) fn at_ip(payload_bps: f64, mtu: Option<u32>) -> f64 {
    let mtu = f64::from(mtu.unwrap_or(1500).max(576));
    payload_bps * mtu / (mtu - 52.0)
}

/// The test's delivery rate at the IP level.
fn ip_rate(t: &TcpTest, mtu: Option<u32>) -> Option<f64> {
    t.delivery_rate_bps.filter(|r| *r > 0.0).map(|r| at_ip(r, mtu))
}

/// What the path test can be compared with: the trains' bottleneck rate (IP level, bit/s), the
/// probes' lowest RTT (ms, taken before the test), and the path's MTU.
#[derive(Debug, Clone, Copy, Default)]
pub struct Before {
    pub capacity_bps: Option<f64>,
    pub probes_min_ms: Option<f64>,
    pub mtu: Option<u32>,
}

/// What `t`'s shape says of others on its path, against what was read before it; None when it
/// ran alone as far as it shows (or shows nothing: a test still in startup, a peer that sent no
/// shape). A test its window held still shows others: a flow alone that a window holds below the
/// path's rate builds no queue, so a queue standing or overflowing under it was someone else's
/// (a stock `iperf3 -s` beside a CUBIC flow, 150 ms / 500 Mbit/s behind 0.25 × BDP: 184 of
/// 493 Mbit/s, the losses at the full queue's 38 ms) — but no policer: below the trains with no
/// queue is what the window gives, and its startup loss at the base RTT may be random loss.
pub fn sharing(t: &TcpTest, before: Before) -> Option<Sharing> {
    if t.in_startup {
        return None;
    }
    let (shape, min) = (t.shape?, t.min_rtt_ms.filter(|m| *m > 0.0)?);
    let rate = ip_rate(t, before.mtu)?;
    let capacity_bps = before.capacity_bps;
    // Nothing of this host's sent while the probes ran: a queue they met that the test later
    // saw drain was someone else's, whatever the test got.
    let probes_met_a_queue = before
        .probes_min_ms
        .is_some_and(|p| p > min + STANDING_MIN_MS.max(PROBES_ABOVE * min));
    let standing = shape.steady_rtt_ms.map_or(0.0, |r| (r - min).max(0.0));
    if probes_met_a_queue {
        return Some(Sharing::Competing {
            rate_bps: rate,
            capacity_bps,
            standing_ms: standing.max(before.probes_min_ms.unwrap_or(min) - min),
        });
    }
    let stands = |share: f64| standing >= STANDING_MIN_MS.max(share * min);
    let others = match capacity_bps {
        Some(c) => {
            // While the queue stood full, the bottleneck sent at its rate: what reached the
            // receiver then is this flow's share of it (the delivery rate's median where the
            // flow showed no full queue to count over).
            let full = shape
                .full_queue_delivered_bps
                .filter(|r| *r > 0.0)
                .map_or(rate, |r| at_ip(r, before.mtu));
            (rate < BELOW_CAPACITY * c && stands(STANDING_SHARE)) || (full < OVERFLOW_BELOW * c && overflowed(t))
        }
        None => stands(STANDING_ALONE_SHARE),
    };
    if others {
        return Some(Sharing::Competing {
            rate_bps: rate,
            capacity_bps,
            standing_ms: standing,
        });
    }
    if t.window_limited {
        return None;
    }
    policed(t, rate, capacity_bps?, stands(STANDING_SHARE), before.mtu)
}

/// Whether the test's losses came with the queue full: at [`OVERFLOW_QUEUE_SHARE`] or more of
/// the highest queue it met, and at a queue of [`STANDING_MIN_MS`] or more — below that a loss
/// came at the base RTT as [`policed`] reads it (a busy host's scheduling alone moves the RTT
/// by a millisecond or two: a policed 20 ms path beside another lab's delay line met a 2.03 ms
/// "queue" and lost at 1.2 ms), and the two readings never both hold.
fn overflowed(t: &TcpTest) -> bool {
    let highest = highest_queue(t);
    highest >= STANDING_MIN_MS
        && t.shape
            .and_then(|s| s.loss_queue_ms)
            .is_some_and(|q| q >= STANDING_MIN_MS.max(OVERFLOW_QUEUE_SHARE * highest))
}

/// The highest queue the test's flow met, ms: its loaded RTT above its lowest.
fn highest_queue(t: &TcpTest) -> f64 {
    match (t.min_rtt_ms, t.loaded_rtt_ms) {
        (Some(min), Some(loaded)) => (loaded - min).max(0.0),
        _ => 0.0,
    }
}

/// A policer: below the trains, startup's loss at the base RTT, no queue standing.
/// Its rate: what the path let through while the flow sent faster than the bucket refills —
/// the paced phase where it still lost segments (paced above the bucket's rate), else startup
/// after its first drop (at 2.89 × the rate it read) — retransmissions included, as the bucket
/// counts them. Never below what the paced phase got through, nor above the kernel's delivery
/// rate, whose per-acknowledgement readings may catch a burst the bucket had saved (up to
/// 1.4 × the rate on a busy host).
fn policed(t: &TcpTest, rate: f64, capacity: f64, queue_stood: bool, mtu: Option<u32>) -> Option<Sharing> {
    let shape = t.shape?;
    // Below the trains by the delivery rate itself: the paced phase's rate, 0.8 × that where
    // nothing held it, would put a path alone below the line.
    if queue_stood || rate >= BELOW_CAPACITY * capacity {
        return None;
    }
    let paced_lost = t.path_loss().is_some_and(|(_, r)| r > spurious(t));
    let ip = |r: Option<f64>| r.filter(|r| *r > 0.0).map(|r| at_ip(r, mtu));
    let rate = match (ip(shape.paced_delivered_bps), ip(shape.startup_delivered_bps)) {
        (Some(paced), _) if paced_lost => paced,
        (Some(paced), Some(startup)) => startup.max(paced),
        (None, Some(startup)) => startup,
        (Some(paced), None) => f64::midpoint(paced, rate),
        (None, None) => rate,
    }
    .min(rate);
    let (retrans, segs) = (shape.startup_retrans_segs?, shape.startup_segs_out.filter(|s| *s > 0)?);
    #[allow(clippy::cast_precision_loss)]
    let startup_loss_pct = 100.0 * retrans as f64 / segs as f64;
    let highest = highest_queue(t);
    let at_base = shape
        .loss_queue_ms
        .is_some_and(|q| q <= STANDING_MIN_MS.max(LOSS_AT_BASE_SHARE * highest));
    (startup_loss_pct >= POLICED_STARTUP_LOSS_PCT && at_base).then_some(Sharing::Policed {
        rate_bps: rate,
        capacity_bps: capacity,
        startup_loss_pct,
    })
}

/// The retransmissions after startup the receiver reported as duplicates: spurious (D-SACK),
/// no loss of the path. At most the retransmissions counted.
pub fn spurious(t: &TcpTest) -> u64 {
    let counted = t.path_loss().map_or(0, |(_, r)| r);
    t.shape.and_then(|s| s.steady_spurious_segs).unwrap_or(0).min(counted)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tcp::flow::Shape;

    /// A 50 ms test that got `mbit` (payload) with the paced phase's median RTT `steady` ms and
    /// startup's `lost` of 100,000 segments at a queue of `at` ms.
    fn test(mbit: f64, steady: f64, lost: u64, at: f64) -> TcpTest {
        TcpTest {
            delivery_rate_bps: Some(mbit * 1e6),
            min_rtt_ms: Some(50.0),
            loaded_rtt_ms: Some(100.0),
            steady_segs_out: Some(500_000),
            steady_retrans_segs: Some(10),
            shape: Some(Shape {
                steady_rtt_ms: Some(steady),
                loss_queue_ms: Some(at),
                startup_retrans_segs: Some(lost),
                startup_segs_out: Some(100_000),
                steady_spurious_segs: Some(4),
                reordering: Some(9),
                steady_rate_spread: Some(0.05),
                startup_delivered_bps: None,
                full_queue_delivered_bps: None,
                paced_delivered_bps: None,
            }),
            ..TcpTest::default()
        }
    }

    #[test]
    fn a_queue_standing_under_a_paced_flow_below_the_trains_is_others() {
        // 34 Mbit/s of a 300 Mbit/s bottleneck, a 100 ms queue standing: a neighbour's.
        let at = |c: f64| Before {
            capacity_bps: Some(c),
            ..Before::default()
        };
        let s = sharing(&test(33.6, 150.0, 100, 45.0), at(292.6e6));
        assert!(
            matches!(s, Some(Sharing::Competing { standing_ms, .. }) if (standing_ms - 100.0).abs() < 1e-9),
            "{s:?}"
        );
        assert_eq!(
            s.and_then(|s| s.path_rate_bps()),
            Some(292.6e6),
            "sized for the path, not the residual"
        );
        // Alone: the paced flow drained its queue, and it got the trains' rate.
        assert_eq!(sharing(&test(290.0, 51.0, 100, 45.0), at(292.6e6)), None);
        // A queue standing, but the test got the path's rate: a jittery line, not a neighbour.
        assert_eq!(sharing(&test(290.0, 56.0, 100, 45.0), at(292.6e6)), None);
        // No trains: only a large standing queue says so.
        assert!(sharing(&test(33.6, 56.0, 100, 45.0), Before::default()).is_none());
        assert!(sharing(&test(33.6, 70.0, 100, 45.0), Before::default()).is_some());
        // Near the trains' rate (bbr beside CUBIC flows behind a shallow queue), but the probes
        // met a queue the test saw drain: others.
        let probed = Before {
            probes_min_ms: Some(60.0),
            ..at(200e6)
        };
        assert!(sharing(&test(170.0, 52.0, 100, 12.0), probed).is_some());
        assert!(sharing(&test(170.0, 52.0, 100, 12.0), at(200e6)).is_none());
        // Probes a hair above the test's lowest RTT (jitter's least): no queue.
        let jitter = Before {
            probes_min_ms: Some(50.5),
            ..at(200e6)
        };
        assert!(sharing(&test(195.0, 52.0, 100, 12.0), jitter).is_none());
    }

    #[test]
    fn a_queue_that_overflowed_below_the_trains_rate_was_filled_by_others() {
        // 150 ms / 500 Mbit/s, a queue of 0.25 × BDP: alone the test got the trains' rate and
        // lost with the queue full; beside a CUBIC flow it got 0.876 of it, losing the same way,
        // and no queue stood under its paced flow.
        let at = Before {
            capacity_bps: Some(489.7e6),
            ..Before::default()
        };
        let shallow = |mbit: f64, at_loss: f64| TcpTest {
            min_rtt_ms: Some(150.0),
            loaded_rtt_ms: Some(188.15),
            ..test(mbit, 150.95, 20_328, at_loss)
        };
        let s = sharing(&shallow(414.0, 37.67), at);
        assert!(matches!(s, Some(Sharing::Competing { .. })), "{s:?}");
        assert_eq!(s.and_then(|s| s.path_rate_bps()), Some(489.7e6));
        // Alone: at the trains' rate.
        assert_eq!(sharing(&shallow(472.0, 37.67), at), None);
        // Below the trains, the losses at the base RTT: no queue overflowed (a policer's, or
        // random loss).
        assert!(!matches!(
            sharing(&shallow(414.0, 1.0), at),
            Some(Sharing::Competing { .. })
        ));
        // Without trains nothing says the rate was low.
        assert_eq!(sharing(&shallow(414.0, 37.67), Before::default()), None);
        // The delivery rate's median near the trains' (0.93–0.96 of them beside a CUBIC flow),
        // but while the queue stood full the flow got 0.86 of the bottleneck: others had the rest.
        let full = |mbit: f64, full_mbit: f64| {
            let mut t = shallow(mbit, 37.67);
            t.shape = t.shape.map(|s| Shape {
                full_queue_delivered_bps: Some(full_mbit * 1e6),
                ..s
            });
            sharing(&t, at)
        };
        assert!(matches!(full(440.0, 406.0), Some(Sharing::Competing { .. })));
        // Alone, the flow had all of it.
        assert_eq!(full(440.0, 472.0), None);
    }

    #[test]
    fn a_ceiling_with_loss_at_the_base_rtt_and_no_queue_is_a_policer() {
        // 96 Mbit/s of a 400 Mbit/s link, 2 % lost in startup at a 1 ms queue, none standing.
        let at = |c: f64| Before {
            capacity_bps: Some(c),
            ..Before::default()
        };
        let s = sharing(&test(96.0, 50.5, 2_000, 1.0), at(400e6));
        assert!(
            matches!(s, Some(Sharing::Policed { startup_loss_pct, .. }) if (startup_loss_pct - 2.0).abs() < 1e-9),
            "{s:?}"
        );
        let rate = s.and_then(|s| s.path_rate_bps()).expect("a rate");
        assert!((rate - 96e6 * 1500.0 / 1448.0).abs() < 1.0, "{rate}");
        // The delivery rate's readings caught the bucket's saved bursts (130 Mbit/s): paced at
        // 104, the flow still lost segments, and 96 went through.
        let bursty = |startup: Option<f64>, paced: f64, lost: u64| {
            let mut t = test(130.0, 50.5, 2_000, 1.0);
            t.steady_retrans_segs = Some(lost);
            t.shape = t.shape.map(|s| Shape {
                startup_delivered_bps: startup,
                paced_delivered_bps: Some(paced),
                steady_spurious_segs: Some(0),
                ..s
            });
            sharing(&t, at(400e6)).and_then(|s| s.path_rate_bps()).expect("a rate")
        };
        let ip = |mbit: f64| mbit * 1e6 * 1500.0 / 1448.0;
        assert!((bursty(Some(99e6), 96e6, 10) - ip(96.0)).abs() < 1.0);
        // Nothing lost when paced at 104: the bucket's rate is what startup got through after
        // its first drop...
        assert!((bursty(Some(110e6), 104e6, 0) - ip(110.0)).abs() < 1.0);
        // ... never below what the paced phase got through ...
        assert!((bursty(Some(90e6), 104e6, 0) - ip(104.0)).abs() < 1.0);
        // ... and without a startup span to count, between the two readings.
        assert!((bursty(None, 104e6, 0) - ip(117.0)).abs() < 1.0);
        // Never above the delivery rate.
        assert!((bursty(Some(150e6), 150e6, 10) - ip(130.0)).abs() < 1.0);
        // At the trains' rate, paced at 0.8 × it with random loss: the paced phase's goodput
        // is the pace, and no policer.
        let mut alone = test(386.0, 50.5, 2_000, 1.0);
        alone.shape = alone.shape.map(|s| Shape {
            paced_delivered_bps: Some(300e6),
            ..s
        });
        assert_eq!(sharing(&alone, at(400e6)), None);
        // Loss at a full queue is congestion, not a policer: at a quarter of the trains' rate,
        // others filled the queue.
        let full = sharing(&test(96.0, 50.5, 2_000, 45.0), at(400e6));
        assert!(matches!(full, Some(Sharing::Competing { .. })), "{full:?}");
        // Little startup loss: a slow path the trains over-read, not a policer.
        assert_eq!(sharing(&test(96.0, 50.5, 100, 1.0), at(400e6)), None);
        // A held test shows no policer: below the trains with no queue is what its window
        // gives, and the startup loss at the base RTT may be the path's random loss.
        let held = |t: TcpTest| TcpTest {
            window_limited: true,
            ..t
        };
        assert_eq!(sharing(&held(test(96.0, 50.5, 2_000, 1.0)), at(400e6)), None);
        // But others, where a queue it could not have built overflowed under it.
        let full = sharing(&held(test(96.0, 50.5, 2_000, 45.0)), at(400e6));
        assert!(matches!(full, Some(Sharing::Competing { .. })), "{full:?}");
        // Still in startup: its rate is a lower bound, and nothing is said.
        let early = TcpTest {
            in_startup: true,
            ..test(96.0, 50.5, 2_000, 45.0)
        };
        assert_eq!(sharing(&early, at(400e6)), None);
    }

    #[test]
    fn a_loss_near_the_base_rtt_is_a_policers_even_where_the_rtt_jittered() {
        // Recorded: 20 ms, 100 Mbit/s policed at 20 Mbit/s, the host busy with another lab's
        // delay line: the loaded RTT 22.03 ms (a 2.03 ms "queue"), startup lost 161 of 494 at
        // 1.195 ms, the paced phase 19.2 Mbit/s with 28 lost, the trains 96 Mbit/s.
        let mut t = test(19.08, 20.59, 161, 1.195);
        t.min_rtt_ms = Some(20.0);
        t.loaded_rtt_ms = Some(22.03);
        t.steady_retrans_segs = Some(28);
        t.steady_segs_out = Some(2_646);
        t.shape = t.shape.map(|s| Shape {
            startup_segs_out: Some(494),
            steady_spurious_segs: Some(0),
            paced_delivered_bps: Some(19.2e6),
            full_queue_delivered_bps: Some(19.18e6),
            ..s
        });
        let at = Before {
            capacity_bps: Some(96e6),
            ..Before::default()
        };
        let s = sharing(&t, at);
        assert!(matches!(s, Some(Sharing::Policed { .. })), "{s:?}");
        // The same losses at a full queue of 20 ms: others filled it.
        t.loaded_rtt_ms = Some(40.0);
        t.shape = t.shape.map(|s| Shape {
            loss_queue_ms: Some(19.0),
            ..s
        });
        assert!(matches!(sharing(&t, at), Some(Sharing::Competing { .. })));
    }

    #[test]
    fn duplicates_the_receiver_reported_are_no_loss() {
        assert_eq!(spurious(&test(96.0, 50.5, 2_000, 1.0)), 4);
        let t = TcpTest {
            steady_retrans_segs: Some(2),
            ..test(96.0, 50.5, 2_000, 1.0)
        };
        assert_eq!(spurious(&t), 2, "never more than were retransmitted");
    }
}
