//! The iperf3 forward test's second run, against the same server, where the first could not
//! tell what the path's class needs ([`RetestKind`]):
//!
//! - **Held by the far end's window** (a stock server on a path whose BDP outgrows its buffer):
//!   its one flow kept about the BDP in flight and so could not fill the bottleneck queue, and
//!   the class stayed unmeasured (BBR, 6 × BDP) even on a clean, deep path where CUBIC fills the
//!   link. Parallel flows, each held by the same window, can: `iperf3 -P N`, with N × the window
//!   at least [`PROBE_WINDOW_BDP`] × the BDP the packet trains read. A queue at least 0.65 ×
//!   BDP deep then fills by that much (the RTT grows by it); a shallower one overflows (the RTT
//!   grows by its depth only, and segments are lost). Its reports come every [`INTERVAL_MS`],
//!   and the streams' sockets are watched ([`super::watch`]), so the queue's peak is seen.
//! - **Not held, but lost segments after startup behind a queue of at most
//!   [`PACED_BELOW_QUEUE_BDP`] × BDP**: iperf3 cannot pace a flow after its startup as `tcptune
//!   serve`'s sender does, and an unpaced BBR flow keeps up to 2 × BDP in flight, so behind a
//!   queue of about a BDP it overflows it now and then by itself: on the lab's clean 250 ms /
//!   50 Mbit/s path, 0.72 % "after startup" besides 1,154 in bursts. One flow paced at
//!   [`PACED_SHARE`] × the test's rate (`--fq-rate`) builds no queue, and its loss after startup
//!   is the path's.
//!
//! On the lab (150 ms / 500 Mbit/s; a stock iperf3 server whose window held one flow to
//! 3,930,752 bytes; bbr): behind a one-BDP queue 4 streams (1.68 × BDP of window) grew the RTT
//! from 150.1 to 239.4 ms (0.6 × BDP) and reached 482 Mbit/s, the goodput limit, without a
//! retransmission in two runs of 4 and 5 s; 5 streams (2.1 × BDP) overflowed it, in startup and
//! again every second or two after. Behind a 0.1-BDP queue 4 streams grew it to 165.9 ms
//! (0.11 × BDP) with 18,214 retransmissions; behind a one-BDP queue with 0.01 % random loss,
//! to 225.0 ms with 22 (0.014 %).
//!
//! Which of the second run's readings count is the caller's decision ([`crate::advice`]): the
//! streams' loss only where the queue held them.
//!
//! # Trust
//! Its JSON is iperf3's, relaying a server tcptune does not know: the numbers are read as the
//! single test's are and range-checked together ([`crate::tcp::flow::Reading::check`]).

use std::time::Duration;

use serde_json::Value;

use super::evidence::{Direction, HeldBy, Retest, RetestKind, TcpTest, TestPeer};
use super::iperf3::{self, Iperf3Request, f64_of, u64_of};
use super::watch::Seen;
use crate::error::Error;

/// The streams together keep at least this × the BDP in flight (and less than this plus one
/// window): past the shallow/deep line of the class rule (0.5 × BDP of queue) with room to tell
/// it, and for windows under a third of the BDP within the 2 × BDP that a one-BDP queue holds.
pub const PROBE_WINDOW_BDP: f64 = 1.65;
/// At most this many streams: past it the window that held the test is too small a part of the
/// BDP for a probe to fill the queue (iperf3 allows 128; a server may refuse many).
pub const MAX_STREAMS: u32 = 16;
/// A test that lost segments after startup behind a queue of at most this × BDP (its RTT
/// growth) is run again paced: an unpaced BBR flow keeps up to 2 × BDP in flight, so it may
/// have overflowed that queue itself.
pub const PACED_BELOW_QUEUE_BDP: f64 = 1.5;
/// The paced run's rate, × the test's delivery rate: below the path's, so no queue builds (the
/// share `tcptune serve`'s sender paces its steady phase at).
pub const PACED_SHARE: f64 = 0.8;
/// Its time: [`TIME_BASE`] + [`TIME_RTTS`] round trips (the second run's startup, then some 5 s
/// of steady sending, whose loss joins or replaces the test's: at 150 ms / 500 Mbit/s about
/// 200,000 segments), within [`MIN_TIME`]..[`MAX_TIME`], to the nearest whole second.
pub const TIME_BASE: Duration = Duration::from_secs(5);
pub const TIME_RTTS: u32 = 10;
pub const MIN_TIME: Duration = Duration::from_secs(5);
pub const MAX_TIME: Duration = Duration::from_secs(15);
/// The parallel streams report every this many ms, so the queue's peak is seen (iperf3 samples
/// each stream's smoothed RTT once a report).
pub const INTERVAL_MS: u32 = 500;

/// The second run to make.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Plan {
    pub kind: RetestKind,
    pub time: Duration,
}

/// The second run a forward iperf3 test `t` calls for, on a path whose bottleneck rate (bit/s)
/// the trains read as `trains_bps`, within `max_bytes`: None when it calls for none;
/// `Some(Err(why))` when one cannot tell what it would within the bounds.
pub fn plan(t: &TcpTest, trains_bps: Option<u64>, max_bytes: u64) -> Option<Result<Plan, String>> {
    if t.peer != Some(TestPeer::Iperf3) || t.direction != Direction::Forward {
        return None;
    }
    if t.window_limited {
        return (t.held_by == Some(HeldBy::ReceiveWindow)).then(|| streams_plan(t, trains_bps, max_bytes));
    }
    paced_plan(t, max_bytes)
}

/// The parallel streams for a test held by the receiver's window.
fn streams_plan(t: &TcpTest, trains_bps: Option<u64>, max_bytes: u64) -> Result<Plan, String> {
    let (Some(window), Some(min_ms)) = (t.receiver_window.filter(|w| *w > 0), t.min_rtt_ms) else {
        return Err("the held test gave no window or no RTT to size the parallel streams by".to_string());
    };
    let Some(rate) = trains_bps.filter(|r| *r > 0) else {
        return Err("no packet-train reading of the rate to size the parallel streams by".to_string());
    };
    #[allow(clippy::cast_precision_loss)]
    let bdp = rate as f64 / 8.0 * min_ms / 1000.0;
    #[allow(
        clippy::cast_precision_loss,
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss
    )]
    let needed = (PROBE_WINDOW_BDP * bdp / window as f64).ceil().max(2.0) as u64;
    let streams = u32::try_from(needed).unwrap_or(u32::MAX);
    if streams > MAX_STREAMS {
        return Err(format!(
            "the {window}-byte window that held the test is under 1/{MAX_STREAMS} of {PROBE_WINDOW_BDP} × the BDP: more than {MAX_STREAMS} parallel streams"
        ));
    }
    #[allow(clippy::cast_precision_loss)]
    within_bytes(
        Plan {
            kind: RetestKind::Streams { streams, window },
            time: time_for(min_ms),
        },
        1.25 * rate as f64,
        max_bytes,
    )
}

/// The paced run for a test not held that lost segments after startup behind a queue its own
/// flow may have overflowed: None when it did not.
fn paced_plan(t: &TcpTest, max_bytes: u64) -> Option<Result<Plan, String>> {
    let lost = t.path_loss().is_some_and(|(_, r)| r > 0) && !t.in_startup;
    let queue = match (t.min_rtt_ms, t.loaded_rtt_ms) {
        (Some(min), Some(loaded)) if min > 0.0 => (loaded - min) / min,
        _ => return None,
    };
    let rate = t.delivery_rate_bps.filter(|r| *r > 0.0)?;
    if !lost || queue > PACED_BELOW_QUEUE_BDP {
        return None;
    }
    let time = time_for(t.min_rtt_ms.unwrap_or(0.0));
    Some(within_bytes(
        Plan {
            kind: RetestKind::Paced {
                rate_bps: (PACED_SHARE * rate).round(),
            },
            time,
        },
        PACED_SHARE * rate,
        max_bytes,
    ))
}

/// `plan`, unless its time at `rate_bps` would pass `max_bytes`.
fn within_bytes(plan: Plan, rate_bps: f64, max_bytes: u64) -> Result<Plan, String> {
    #[allow(clippy::cast_precision_loss)]
    let at_rate = max_bytes as f64 * 8.0 / rate_bps;
    if at_rate < plan.time.as_secs_f64() {
        return Err(format!(
            "its {} s at {} would pass the test's byte bound of {}",
            plan.time.as_secs(),
            crate::text::rate(rate_bps),
            crate::text::bytes(max_bytes)
        ));
    }
    Ok(plan)
}

/// [`TIME_BASE`] + [`TIME_RTTS`] round trips of `rtt_ms`, to the nearest whole second (iperf3's
/// `-t`), within bounds.
fn time_for(rtt_ms: f64) -> Duration {
    let rtts = Duration::try_from_secs_f64(rtt_ms.max(0.0) / 1000.0).unwrap_or(MAX_TIME);
    let t = TIME_BASE.saturating_add(rtts.saturating_mul(TIME_RTTS));
    let whole = Duration::from_secs(t.as_secs() + u64::from(t.subsec_nanos() >= 500_000_000));
    whole.clamp(MIN_TIME, MAX_TIME)
}

/// Runs `plan` against the server `test` ran against, in the same direction, with the same
/// congestion control and byte bound (its rate caps stay above the path's rate: [`plan`]).
pub fn run(test: &Iperf3Request, plan: &Plan) -> Result<Retest, Error> {
    let req = match plan.kind {
        RetestKind::Streams { streams, .. } => Iperf3Request {
            streams,
            interval_ms: INTERVAL_MS,
            ..test.clone()
        },
        #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
        RetestKind::Paced { rate_bps } => Iperf3Request {
            pace_bps: Some(rate_bps as u64),
            ..test.clone()
        },
    };
    let req = Iperf3Request {
        time: plan.time,
        reverse: false,
        ..req
    };
    let (v, seen) = iperf3::run_json(&req, iperf3::GRACE)?;
    read(&v, plan, seen)
}

/// One interval of all the streams together.
struct Sum {
    bytes: u64,
    seconds: f64,
    bps: f64,
    retransmits: u64,
}

/// The second run's readings from its JSON and what watching its sockets saw.
fn read(v: &Value, plan: &Plan, seen: Seen) -> Result<Retest, Error> {
    let no = |why: &str| Error::measurement(format!("the second iperf3 run's result is no measurement: {why}"));
    let kept = |i: &&Value| i.get("sum").and_then(|s| s.get("omitted")).and_then(Value::as_bool) != Some(true);
    let intervals: Vec<&Value> = v
        .get("intervals")
        .and_then(Value::as_array)
        .map(|a| a.iter().filter(kept).collect())
        .unwrap_or_default();
    let sums: Vec<Sum> = intervals.iter().filter_map(|i| i.get("sum")).map(Sum::of).collect();
    let best = sums.iter().map(|s| s.bps).fold(0.0, f64::max);
    if best <= 0.0 {
        return Err(no("the streams moved no data"));
    }
    let Some((min_us, loaded_us)) = rtts(v, &intervals, seen) else {
        return Err(no("the streams reported no RTT"));
    };
    let first = sums
        .iter()
        .position(|s| s.bps >= iperf3::STARTUP_DONE * best)
        .unwrap_or(0);
    let steady = &sums[first + 1..];
    let mss = iperf3::mss_of(&[v]).unwrap_or(u64::MAX);
    let p = Retest {
        kind: plan.kind,
        duration_s: v
            .get("end")
            .and_then(|e| e.get("sum_sent"))
            .and_then(|s| f64_of(s, "seconds"))
            .unwrap_or(0.0),
        rate_bps: seen
            .delivered_bps
            .or_else(|| rate_after_startup(steady))
            .unwrap_or(best),
        min_rtt_ms: min_us / 1000.0,
        loaded_rtt_ms: loaded_us.max(min_us) / 1000.0,
        steady_segs_out: steady.iter().map(|s| s.bytes).sum::<u64>().div_ceil(mss),
        steady_retrans_segs: steady.iter().map(|s| s.retransmits).sum(),
    };
    crate::tcp::flow::Reading {
        delivery_rate_bps: Some(p.rate_bps),
        steady_segs_out: Some(p.steady_segs_out),
        steady_retrans_segs: Some(p.steady_retrans_segs),
        min_rtt_ms: Some(p.min_rtt_ms),
        loaded_rtt_ms: Some(p.loaded_rtt_ms),
        ..Default::default()
    }
    .check()
    .map_err(|why| no(&why))?;
    if !(p.duration_s.is_finite() && p.duration_s >= 0.0) {
        return Err(no(&format!("a run of {} s", p.duration_s)));
    }
    Ok(p)
}

impl Sum {
    /// One interval's `sum` object.
    fn of(s: &Value) -> Sum {
        Sum {
            bytes: u64_of(s, "bytes").unwrap_or(0),
            seconds: f64_of(s, "seconds")
                .filter(|x| x.is_finite() && *x > 0.0)
                .unwrap_or(0.0),
            bps: f64_of(s, "bits_per_second").unwrap_or(0.0),
            retransmits: u64_of(s, "retransmits").unwrap_or(0),
        }
    }
}

/// The streams' lowest and highest RTT in µs: from the senders' summaries and interval
/// reports, and from watching their sockets.
fn rtts(v: &Value, intervals: &[&Value], seen: Seen) -> Option<(f64, f64)> {
    let senders: Vec<&Value> = v
        .get("end")
        .and_then(|e| e.get("streams"))
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(|s| s.get("sender")).collect())
        .unwrap_or_default();
    let lowest = |vals: &mut dyn Iterator<Item = f64>| vals.filter(|r| *r > 0.0).reduce(f64::min);
    let highest = |vals: &mut dyn Iterator<Item = f64>| vals.filter(|r| *r > 0.0).reduce(f64::max);
    let min_us = lowest(&mut senders.iter().filter_map(|s| f64_of(s, "min_rtt")));
    let interval_rtts = intervals
        .iter()
        .filter_map(|i| i.get("streams").and_then(Value::as_array))
        .flatten()
        .filter_map(|s| f64_of(s, "rtt"));
    let loaded_us = highest(&mut interval_rtts.chain(senders.iter().filter_map(|s| f64_of(s, "max_rtt"))));
    let us = |ms: Option<f64>| ms.map(|m| m * 1000.0);
    Some((
        iperf3::lower(min_us, us(seen.min_rtt_ms))?,
        iperf3::higher(loaded_us, us(seen.loaded_rtt_ms))?,
    ))
}

/// The rate over the intervals after startup (half-second reports of bursty streams read well
/// above the path's rate one by one), None without them.
fn rate_after_startup(steady: &[Sum]) -> Option<f64> {
    let seconds: f64 = steady.iter().map(|s| s.seconds).sum();
    #[allow(clippy::cast_precision_loss)]
    let bits = steady.iter().map(|s| s.bytes).sum::<u64>() as f64 * 8.0;
    (seconds > 0.0).then(|| bits / seconds)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A forward iperf3 test held by a 3,930,752-byte window at 150 ms.
    fn held() -> TcpTest {
        TcpTest {
            peer: Some(TestPeer::Iperf3),
            direction: Direction::Forward,
            window_limited: true,
            held_by: Some(HeldBy::ReceiveWindow),
            receiver_window: Some(3_930_752),
            min_rtt_ms: Some(150.074),
            ..TcpTest::default()
        }
    }

    fn streams(p: &Plan) -> (u32, u64) {
        match p.kind {
            RetestKind::Streams { streams, window } => (streams, window),
            RetestKind::Paced { .. } => panic!("{p:?}"),
        }
    }

    #[test]
    fn the_streams_together_keep_the_probe_window_in_flight() {
        // 500 Mbit/s × 150.074 ms = 9,379,625 bytes; 1.65 × that / 3,930,752 = 3.94 → 4.
        let p = plan(&held(), Some(500_000_000), 2 << 30)
            .expect("held")
            .expect("a plan");
        assert_eq!(streams(&p), (4, 3_930_752));
        // 5 s + 10 × 150 ms = 6.5 s → 7 s.
        assert_eq!(p.time, Duration::from_secs(7));
        // At least two streams; 5 s at the shortest, 15 s at the longest.
        let fast = TcpTest {
            receiver_window: Some(100 << 20),
            min_rtt_ms: Some(1.0),
            ..held()
        };
        let p = plan(&fast, Some(1_000_000_000), 2 << 30)
            .expect("held")
            .expect("a plan");
        assert_eq!((streams(&p).0, p.time), (2, MIN_TIME));
        let far = TcpTest {
            min_rtt_ms: Some(2_000.0),
            receiver_window: Some(60 << 20),
            ..held()
        };
        assert_eq!(
            plan(&far, Some(100_000_000), 2 << 30)
                .expect("held")
                .expect("a plan")
                .time,
            MAX_TIME
        );
    }

    #[test]
    fn no_streams_unless_a_forward_iperf3_test_was_held_by_the_window_and_they_can_tell() {
        for t in [
            TcpTest {
                held_by: Some(HeldBy::SendBuffer),
                ..held()
            },
            TcpTest {
                direction: Direction::Reverse,
                ..held()
            },
            TcpTest {
                peer: Some(TestPeer::Tcptune),
                ..held()
            },
        ] {
            assert_eq!(plan(&t, Some(500_000_000), 2 << 30), None, "{t:?}");
        }
        let why = plan(&held(), None, 2 << 30).expect("held").expect_err("no rate");
        assert!(why.contains("no packet-train reading"), "{why}");
        // A 256 KiB window on 150 ms / 500 Mbit/s: 60 streams.
        let small = TcpTest {
            receiver_window: Some(262_144),
            ..held()
        };
        let why = plan(&small, Some(500_000_000), 2 << 30)
            .expect("held")
            .expect_err("too many");
        assert!(why.contains("more than 16 parallel streams"), "{why}");
        // 7 s at 1.25 × 500 Mbit/s is 547 MB: past a 500 MB bound.
        let why = plan(&held(), Some(500_000_000), 500_000_000)
            .expect("held")
            .expect_err("bytes");
        assert!(why.contains("byte bound of 500000000 bytes"), "{why}");
    }

    /// An unheld test at 250 ms that lost segments after startup behind a one-BDP queue.
    fn overfilled() -> TcpTest {
        TcpTest {
            peer: Some(TestPeer::Iperf3),
            direction: Direction::Forward,
            delivery_rate_bps: Some(48_000_000.0),
            steady_segs_out: Some(19_009),
            steady_retrans_segs: Some(137),
            min_rtt_ms: Some(250.0),
            loaded_rtt_ms: Some(500.2),
            ..TcpTest::default()
        }
    }

    #[test]
    fn an_unheld_test_that_lost_behind_a_queue_its_flow_could_fill_is_run_again_paced() {
        let p = plan(&overfilled(), Some(50_000_000), 2 << 30)
            .expect("lost")
            .expect("a plan");
        assert_eq!(p.kind, RetestKind::Paced { rate_bps: 38_400_000.0 });
        // 5 s + 10 × 250 ms = 7.5 s → 8 s.
        assert_eq!(p.time, Duration::from_secs(8));
        // No loss after startup, a queue deeper than the flow's 2 × BDP could fill, or a test
        // that never left startup: nothing to run again.
        for t in [
            TcpTest {
                steady_retrans_segs: Some(0),
                ..overfilled()
            },
            TcpTest {
                loaded_rtt_ms: Some(650.0),
                ..overfilled()
            },
            TcpTest {
                in_startup: true,
                ..overfilled()
            },
        ] {
            assert_eq!(plan(&t, Some(50_000_000), 2 << 30), None, "{t:?}");
        }
        // 8 s at 38.4 Mbit/s is 38.4 MB: past a 10 MB bound.
        assert!(plan(&overfilled(), None, 10_000_000).expect("lost").is_err());
    }

    #[test]
    fn the_paced_run_caps_its_rate_below_the_byte_bounds() {
        let test = Iperf3Request::new(
            "198.18.0.2".parse().expect("ip"),
            5201,
            Duration::from_secs(14),
            2 << 30,
        );
        let paced = Iperf3Request {
            pace_bps: Some(38_400_000),
            time: Duration::from_secs(8),
            ..test
        };
        let args = paced.args().join(" ");
        let option = if cfg!(target_os = "linux") { "--fq-rate" } else { "-b" };
        assert!(args.contains(&format!("{option} 38400000")), "{args}");
    }

    /// `iperf3 -J -P 4 -t 5 -C bbr` on the lab, 150 ms / 500 Mbit/s behind a 0.1-BDP queue
    /// (two of the streams shown in each interval; the sums and totals as iperf3 3.12 reported).
    const SHALLOW: &str = r#"{
        "start": {"tcp_mss_default": 1448},
        "intervals": [
            {"streams": [{"rtt": 150100}, {"rtt": 150100}], "sum": {"bytes": 13000000, "bits_per_second": 104000000, "retransmits": 0, "omitted": false}},
            {"streams": [{"rtt": 164800}, {"rtt": 158600}], "sum": {"bytes": 37625000, "bits_per_second": 301000000, "retransmits": 4934, "omitted": false}},
            {"streams": [{"rtt": 165300}, {"rtt": 165900}], "sum": {"bytes": 42000000, "bits_per_second": 336000000, "retransmits": 6561, "omitted": false}},
            {"streams": [{"rtt": 151000}, {"rtt": 150200}], "sum": {"bytes": 47125000, "bits_per_second": 377000000, "retransmits": 3369, "omitted": false}},
            {"streams": [{"rtt": 155500}, {"rtt": 150300}], "sum": {"bytes": 47125000, "seconds": 1.0, "bits_per_second": 377000000, "retransmits": 3350, "omitted": false}}
        ],
        "end": {
            "streams": [
                {"sender": {"min_rtt": 150067, "max_rtt": 165277}},
                {"sender": {"min_rtt": 150090, "max_rtt": 165916}}
            ],
            "sum_sent": {"seconds": 5.0, "retransmits": 18214}
        }
    }"#;

    #[test]
    fn the_second_run_reads_the_queue_it_filled_and_its_loss_after_startup() {
        let plan = Plan {
            kind: RetestKind::Streams {
                streams: 4,
                window: 3_932_160,
            },
            time: Duration::from_secs(5),
        };
        let json = |text: &str| serde_json::from_str::<Value>(text).expect("json");
        let p = read(&json(SHALLOW), &plan, Seen::default()).expect("read");
        assert_eq!(p.min_rtt_ms, 150.067);
        assert_eq!(p.loaded_rtt_ms, 165.916);
        // 47,125,000 bytes in the 1 s after startup.
        assert_eq!(p.rate_bps, 377_000_000.0);
        // After the first interval within 10 % of the best (the 4th): the 5th alone.
        assert_eq!((p.steady_segs_out, p.steady_retrans_segs), (32_545, 3_350));
        assert_eq!((p.kind, p.duration_s), (plan.kind, 5.0));
        // What watching the sockets saw joins: a lower minimum, a higher peak.
        let seen = Seen {
            samples: 500,
            min_rtt_ms: Some(150.01),
            loaded_rtt_ms: Some(167.5),
            delivered_bps: Some(380e6),
            shape: None,
        };
        let p = read(&json(SHALLOW), &plan, seen).expect("read");
        assert_eq!((p.min_rtt_ms, p.loaded_rtt_ms, p.rate_bps), (150.01, 167.5, 380e6));
        // A stream's RTT out of any range is no measurement; no data is none either.
        let bad = SHALLOW.replace("\"rtt\": 165900", "\"rtt\": 1e12");
        let e = read(&json(&bad), &plan, Seen::default()).expect_err("refused");
        assert!(
            e.message().contains("second iperf3 run's result is no measurement"),
            "{e}"
        );
        let none = r#"{"intervals": [{"streams": [], "sum": {"bytes": 0, "bits_per_second": 0}}]}"#;
        assert!(read(&json(none), &plan, Seen::default()).is_err());
    }
}
