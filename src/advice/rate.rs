//! The rate the advice is sized for, per direction, once the TCP tests have (or have not)
//! confirmed it, and the buffer the path test runs with.
//!
//! The rules, in order (BENCHMARKS.md shows why each is there):
//! - A TCP test's delivery rate after startup is the rate of its direction — at the IP level,
//!   as the trains and the sizing factors count it (a TCP_INFO delivery rate counts payload:
//!   482.6 Mbit/s on a 500 Mbit/s path of 1500-byte packets).
//! - A test held by a buffer, or one that never left startup, shows a lower bound: the larger
//!   of it and the trains' credible reading.
//! - With no TCP test, the trains' reading sizes the buffers (capped by the link speed), unless
//!   they disagree: then their densest cluster, said so. A NIC's speed never sizes them.
//! - With nothing measured (no trains, no test), the rate is assumed and said so first; the
//!   buffers then stay within the host's TCP memory budget ([`budget`]).

use super::sharing::Sharing;
use super::{Path, RateBasis};
use crate::bdp::Source;
use crate::measure::HostMeasurement;
use crate::measure::evidence::{Direction, Evidence, HeldBy, TcpTest, TestPeer};
use crate::text;
use crate::units::{Bitrate, Span};

/// The test's socket buffers, × the BDP at the highest rate in the evidence: BBR's startup
/// keeps up to 2.89 × BDP in flight and a receiver advertises about half its buffer.
pub const TEST_BUFFER_BDPS: f64 = 6.0;
pub const TEST_BUFFER_MIN: u64 = 4 << 20;
/// Half of a `serve`'s default `--max-buffer` (the kernel keeps twice what is asked), so the
/// default serve grants what is asked.
pub const TEST_BUFFER_MAX: u64 = crate::tcp::proto::DEFAULT_MAX_BUFFER / 2;

/// The default test time: [`TEST_TIME_BASE`] + [`TEST_TIME_RTTS`] round trips, at most what a
/// server grants. BBR's startup takes about 6 round trips to fill a long path (its gain of 2.89
/// a round from 10 segments to the BDP's thousands), the test's plateau rule 4 more, and the
/// queue it filled drains in 2 to 5: about 15 round trips before the paced phase counts loss,
/// 2.3 s at 150 ms but 9 s at 600 ms, where the old flat 10 s ended inside startup. The base
/// then counts loss over some 10 s of steady sending: 69,000 segments at 80 Mbit/s, 35 of them
/// lost at 0.05 %.
pub fn auto_test_time(rtt: Span) -> std::time::Duration {
    let t = TEST_TIME_BASE + rtt.as_std().saturating_mul(TEST_TIME_RTTS);
    t.min(std::time::Duration::from_millis(u64::from(
        crate::tcp::proto::MAX_DURATION_MS,
    )))
}
pub const TEST_TIME_BASE: std::time::Duration = std::time::Duration::from_secs(10);
pub const TEST_TIME_RTTS: u32 = 15;

/// About how long one test of a mesh takes (both directions): set-up, the probes, the trains and the
/// queue watch (about 3 s on a LAN or a short WAN path), and two directions that end once their
/// reading is made, or at `--test-time` (a test of 3 s each way took 7-11 s on the lab's fleet:
/// BENCHMARKS.md "A fleet's mesh at scale").
pub fn pair_estimate(test_time: Option<std::time::Duration>) -> std::time::Duration {
    match test_time {
        Some(t) => std::time::Duration::from_secs(3) + t * 2,
        None => std::time::Duration::from_secs(16),
    }
}

/// The longest a test takes when its directions run to their bound (advise's, 10 s + 15 RTT,
/// taken at 11 s; or `--test-time`): twice this, a test end is given up.
pub fn pair_bound(test_time: Option<std::time::Duration>) -> std::time::Duration {
    let each = test_time.unwrap_or(TEST_TIME_BASE + std::time::Duration::from_secs(1));
    std::time::Duration::from_secs(6) + each * 2
}

/// The rate the test's buffers are sized for: the highest reading of the trains (one that
/// reads high costs only the test's memory, bounded by its unsent-data limit; one that reads
/// low would hold the test), capped by the link speed; the path's rate when given; with no
/// reading, the link speed or the assumed rate.
fn test_rate(path: &Path, m: &HostMeasurement) -> u64 {
    let link = m.link.speed_bps.filter(|s| *s > 0);
    let trains = m.capacity.as_ref().and_then(|c| c.samples_bps.iter().max().copied());
    let reading = match (trains, link) {
        (Some(t), Some(l)) => t.min(l),
        (Some(t), None) => t,
        (None, Some(l)) => l,
        (None, None) => super::ASSUMED_RATE_BPS,
    };
    reading.max(path.rate.bps())
}

/// The socket buffer the path test asks for on both ends, bytes.
pub fn test_buffer(path: &Path, m: &HostMeasurement) -> u64 {
    #[allow(
        clippy::cast_precision_loss,
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss
    )]
    let b = (test_rate(path, m) as f64 / 8.0 * path.rtt.as_secs_f64() * TEST_BUFFER_BDPS) as u64;
    b.clamp(TEST_BUFFER_MIN, TEST_BUFFER_MAX)
}

/// "497 Mbit/s to 2.6 Gbit/s" of the trains, or their one rate.
fn train_range(m: &HostMeasurement) -> Option<String> {
    let c = m.capacity.as_ref()?;
    text::rate_range(&c.samples_bps).or_else(|| text::rate_range(&[c.bps]))
}

fn show(bps: u64) -> String {
    #[allow(clippy::cast_precision_loss)]
    text::rate(bps as f64)
}

/// A TCP delivery rate (payload, bit/s) at the IP level, for a path of `mtu`-byte packets
/// (`sharing::at_ip`), to the bit.
pub fn ip_rate(payload_bps: f64, mtu: Option<u32>) -> u64 {
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    let r = super::sharing::at_ip(payload_bps, mtu).round() as u64;
    r
}

/// Why a test's rate is only a lower bound of its direction's, when it is: it ended in startup,
/// its sender went unseen, it lost heavily, or a buffer held it.
fn lower_bound(t: &TcpTest) -> Option<String> {
    let heavy_loss = t
        .counted_loss_pct()
        .filter(|p| *p >= crate::bdp::LOSS_SCALE_FROM_PCT)
        .map(|p| {
            format!(
                "a lower bound, as the test lost {} after startup (a flow repairing that much loss runs below the path's rate)",
                text::pct(p)
            )
        });
    // A reverse iperf3 test whose server sent no readings of its own (a plain `iperf3 -s`): no
    // RTT, no window, so nothing shows whether the far end's send buffer held it.
    let unseen_sender = t.peer == Some(TestPeer::Iperf3) && t.direction == Direction::Reverse && t.min_rtt_ms.is_none();
    if t.in_startup {
        Some("the test ended inside startup, so it is the highest rate reached, a lower bound".to_string())
    } else if unseen_sender {
        Some("a lower bound, as the far end's iperf3 server reported no RTT and no window of its sender (start it with -J): its send buffer may have held the test".to_string())
    } else if let Some(why) = heavy_loss {
        Some(why)
    } else if t.window_limited {
        Some(
            match t.held_by {
                Some(HeldBy::ReceiveWindow) => "a lower bound, as the receiver's window held the test",
                Some(HeldBy::SendBuffer) => "a lower bound, as the sender's buffer held the test",
                None => "a lower bound, as the test was held by its window",
            }
            .to_string(),
        )
    } else {
        None
    }
}

/// What one test says of its direction's rate: the rate and how it was settled, or None when
/// it gave no delivery rate.
fn test_says(t: &TcpTest, m: &HostMeasurement, mtu: Option<u32>) -> Option<(u64, RateBasis, String)> {
    let payload = t.delivery_rate_bps.filter(|r| *r > 0.0)?;
    let r = ip_rate(payload, mtu);
    let link = m.link.speed_bps.filter(|s| *s > 0);
    let bound = lower_bound(t);
    #[allow(clippy::cast_precision_loss)]
    let before = super::sharing::Before {
        capacity_bps: m.trains_floor().map(|c| c as f64),
        probes_min_ms: (m.rtt.received > 0).then_some(m.rtt.min_ms),
        mtu,
    };
    let others = super::sharing::sharing(t, before);
    let (rate, basis, how) = match (others, bound, m.credible_rate()) {
        // What the test got is what the others left: the path is the trains'.
        (Some(Sharing::Competing { .. }), _, Some(c)) => (
            c,
            RateBasis::TrainsOverTest,
            format!(
                "a lower bound, as others share the path (a queue stood that the test did not fill): sized for the packet trains' {}",
                show(c)
            ),
        ),
        (Some(Sharing::Policed { .. }), _, _) => (
            r,
            RateBasis::TcpTest,
            "the path's rate, as a policer holds it there (loss at the base RTT, no queue): sized for that".to_string(),
        ),
        (_, Some(why), Some(t)) if t > r => (
            t,
            RateBasis::TrainsOverTest,
            format!("{why}: sized for the packet trains' {}", show(t)),
        ),
        (_, Some(why), _) => (r, RateBasis::TcpTest, format!("{why}: sized for {}", show(r))),
        (_, None, _) => match link {
            Some(l) if l < r => (
                l,
                RateBasis::LinkSpeed,
                format!("the link speed, {}, is lower: sized for that", show(l)),
            ),
            _ => (r, RateBasis::TcpTest, "sized for that".to_string()),
        },
    };
    #[allow(clippy::cast_precision_loss)]
    let payload_shown = text::rate(payload);
    let trains = train_range(m)
        .map(|t| format!("; the packet trains read {t}"))
        .unwrap_or_default();
    let direction = match t.direction {
        Direction::Forward => "TCP path test",
        Direction::Reverse => "reverse TCP path test (the far end sending)",
    };
    Some((
        rate,
        basis,
        format!(
            "{}: rate from the {direction}: {payload_shown} delivery rate after startup ({} at the IP level){trains}; {how}",
            m.host,
            show(r)
        ),
    ))
}

/// Settles the rates of `path` (measured to `m`, no `--bandwidth`) from the TCP evidence, one
/// per direction, and says how in the returned notes.
pub fn settle_rate(path: &mut Path, m: &HostMeasurement, ev: Option<&Evidence>) -> Vec<super::Note> {
    let mut notes = Vec::new();
    let forward = ev.and_then(|e| e.test.as_ref()).and_then(|t| test_says(t, m, path.mtu));
    let reverse = ev
        .and_then(|e| e.reverse.as_ref())
        .and_then(|t| test_says(t, m, path.mtu));
    if let Some((rate, basis, note)) = forward {
        path.rate = Bitrate::from_bps(rate);
        path.rate_source = Source::Measured;
        path.rate_basis = basis;
        notes.push(super::Note::detail(note));
    }
    if let Some((rate, basis, note)) = reverse {
        path.receive_rate = Some(Bitrate::from_bps(rate));
        path.receive_basis = Some(basis);
        if path.rate_source == Source::Assumed {
            // Only the far end's direction was tested: this one is taken as alike.
            path.rate = Bitrate::from_bps(rate);
            path.rate_source = Source::Measured;
            path.rate_basis = basis;
        }
        notes.push(super::Note::detail(note));
    }
    notes
}

/// A test's lowest RTT below the probes' by more than this share (and by a queue's worth,
/// [`super::sharing::STANDING_MIN_MS`]) is the path's: the probes met a queue that stood while
/// they ran (others on the path), the test's flow saw it drain.
pub const RTT_BELOW_PROBES: f64 = 0.05;

/// Settles the RTT of `path` (measured, no `--rtt`) from the TCP tests: their lowest RTT where
/// it is well below the probes' (who met a standing queue), and says so in the returned note.
pub fn settle_rtt(path: &mut Path, ev: Option<&Evidence>) -> Option<super::Note> {
    let ev = ev?;
    let lowest = [ev.test.as_ref(), ev.reverse.as_ref()]
        .into_iter()
        .flatten()
        .filter_map(|t| t.min_rtt_ms)
        .filter(|m| *m > 0.0)
        .reduce(f64::min)?;
    let probes = path.rtt.as_millis_f64();
    // A queue others keep is milliseconds, as sharing counts it: on a sub-millisecond path the
    // test's kernel-timed RTT (9 µs on a veth) beats the probes' user-space one (60 µs) by
    // what no queue explains, and the probes' is the path's.
    let queue = probes - lowest;
    (queue > (probes * RTT_BELOW_PROBES).max(super::sharing::STANDING_MIN_MS)).then(|| {
        path.rtt = Span::from_millis_f64(text::ms(lowest));
        super::Note::with_short(
            format!(
                "the probes' lowest RTT was {}, the TCP test's flow saw {}: the probes met a queue that stood while they ran (others on the path), so the path's RTT is the test's",
                text::millis(probes),
                text::millis(lowest)
            ),
            format!(
                "RTT {} (the TCP test's), not the probes' {}: they met a standing queue",
                text::millis(lowest),
                text::millis(probes)
            ),
        )
    })
}

/// The most either buffer may be raised to when nothing measured the rate: a quarter of
/// what the kernel lets TCP use in all (tcp_mem[2], in pages) per expected flow — sizing for a
/// NIC's speed instead would raise a 10 Gbit/s server's buffers 100-fold past a 100 Mbit/s
/// path. None when tcp_mem is not known (another OS, another system).
pub fn budget(host: &crate::host::Facts, flows: u32) -> Option<u64> {
    let pages: u64 = host
        .value(crate::host::facts::TCP_MEM)?
        .split_whitespace()
        .nth(2)?
        .parse()
        .ok()?;
    Some(pages.saturating_mul(host.page_size) / 4 / u64::from(flows.max(1)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn path(rtt_ms: f64) -> Path {
        Path {
            rtt: Span::from_millis_f64(rtt_ms),
            rtt_source: Source::Measured,
            mdev: None,
            rate: Bitrate::from_bps(1_000_000_000),
            rate_source: Source::Measured,
            rate_basis: RateBasis::TcpTest,
            receive_rate: None,
            receive_basis: None,
            capacity: None,
            probes_min_ms: Some(rtt_ms),
            probed: None,
            mtu: None,
            host: None,
        }
    }

    fn tested(min_rtt_ms: f64) -> Evidence {
        Evidence {
            test: Some(TcpTest {
                min_rtt_ms: Some(min_rtt_ms),
                ..TcpTest::default()
            }),
            ..Evidence::default()
        }
    }

    /// Issue 36, point 4: on a veth LAN the test's 9 µs RTT replaced the probes' 62 µs, said as
    /// "they met a standing queue" where no other traffic was. A queue is milliseconds.
    #[test]
    fn a_sub_millisecond_path_never_reads_as_a_standing_queue() {
        let mut lan = path(0.062);
        assert!(settle_rtt(&mut lan, Some(&tested(0.009))).is_none());
        assert!((lan.rtt.as_millis_f64() - 0.062).abs() < 1e-9);
        // 287 ms probes over a 150 ms path: others' queue, the test's RTT is the path's.
        let mut shared = path(287.0);
        let note = settle_rtt(&mut shared, Some(&tested(150.0))).expect("a queue");
        assert!((shared.rtt.as_millis_f64() - 150.0).abs() < 1e-9);
        assert!(note.text.contains("met a queue"), "{}", note.text);
    }
}
