//! The rate the advice is sized for, once a TCP test has (or has not) confirmed it, and the
//! buffer the path test runs with.
//!
//! Rate robustness: packet trains mis-read bursty paths both ways (a forwarder releasing
//! packets in bursts made them read 0.6× and, with another burst size, 7× a 1 Gbit/s link in
//! tcptune's lab). So a train rate sizes the buffers only when a TCP test confirms it; a TCP
//! test's delivery rate after startup is the rate the advice uses (a lower bound when the
//! test was held by its window); with no TCP test the buffers are sized for the link speed,
//! else the assumed rate — never shrunk nor inflated by an unconfirmed train reading.

use super::Path;
use crate::bdp::Source;
use crate::measure::HostMeasurement;
use crate::measure::evidence::Evidence;
use crate::text;
use crate::units::{Bitrate, Span};

/// The test's socket buffers, × the BDP at the highest rate in the evidence: BBR's startup
/// keeps up to 2.89 × BDP in flight and a receiver advertises about half its buffer.
pub const TEST_BUFFER_BDPS: f64 = 6.0;
pub const TEST_BUFFER_MIN: u64 = 4 << 20;
pub const TEST_BUFFER_MAX: u64 = 1 << 30;

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

/// The highest rate the evidence allows for `m`: the trains' highest reading, the link speed,
/// the path's rate, and never less than the assumed rate.
fn highest_rate(path: &Path, m: &HostMeasurement) -> u64 {
    let trains = m
        .capacity
        .as_ref()
        .and_then(|c| c.samples_bps.iter().max().copied())
        .unwrap_or(0);
    [
        path.rate.bps(),
        m.link.speed_bps.unwrap_or(0),
        trains,
        super::ASSUMED_RATE_BPS,
    ]
    .into_iter()
    .max()
    .unwrap_or(super::ASSUMED_RATE_BPS)
}

/// The socket buffer the path test asks for on both ends, bytes.
pub fn test_buffer(path: &Path, m: &HostMeasurement) -> u64 {
    #[allow(
        clippy::cast_precision_loss,
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss
    )]
    let b = (highest_rate(path, m) as f64 / 8.0 * path.rtt.as_secs_f64() * TEST_BUFFER_BDPS) as u64;
    b.clamp(TEST_BUFFER_MIN, TEST_BUFFER_MAX)
}

/// "497 Mbit/s to 2.6 Gbit/s" of the trains, or their one rate.
fn train_range(m: &HostMeasurement) -> Option<String> {
    let c = m.capacity.as_ref()?;
    let lo = c.samples_bps.iter().min().copied().unwrap_or(c.bps);
    let hi = c.samples_bps.iter().max().copied().unwrap_or(c.bps);
    #[allow(clippy::cast_precision_loss)]
    Some(if lo == hi {
        text::rate(lo as f64)
    } else {
        format!("{} to {}", text::rate(lo as f64), text::rate(hi as f64))
    })
}

/// Settles the rate of `path` (measured to `m`, no `--bandwidth`) from the TCP evidence and
/// says how in the returned notes.
pub fn settle_rate(path: &mut Path, m: &HostMeasurement, ev: Option<&Evidence>) -> Vec<String> {
    let host = &m.host;
    let link = m.link.speed_bps.filter(|s| *s > 0);
    let ifname = m.link.interface.as_deref().unwrap_or("the egress interface");
    let show = |bps: u64| {
        #[allow(clippy::cast_precision_loss)]
        text::rate(bps as f64)
    };
    let test = ev.and_then(|e| e.test.as_ref());
    if let Some((t, r)) = test.and_then(|t| t.delivery_rate_bps.filter(|r| *r > 0.0).map(|r| (t, r))) {
        #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
        let r = r.round() as u64;
        let trains = train_range(m)
            .map(|t| format!("; the packet trains read {t}"))
            .unwrap_or_default();
        let (rate, how) = if t.window_limited {
            let rate = r.max(path.rate.bps());
            (
                rate,
                format!(
                    "a lower bound, as the test was held by its window: sized for {}",
                    show(rate)
                ),
            )
        } else {
            match link {
                Some(l) if l < r => (
                    l,
                    format!("the link speed of {ifname}, {}, is lower: sized for that", show(l)),
                ),
                _ => (r, "sized for that".to_string()),
            }
        };
        path.rate = Bitrate::from_bps(rate);
        path.rate_source = Source::Measured;
        return vec![format!(
            "{host}: rate from the TCP path test: {} delivery rate after startup{trains}; {how}",
            show(r)
        )];
    }
    let Some(c) = m.capacity.as_ref() else {
        return Vec::new();
    };
    let (fallback, source, what) = match link {
        Some(l) => (l, Source::Measured, format!("the link speed of {ifname}, {}", show(l))),
        None => (
            super::ASSUMED_RATE_BPS,
            Source::Assumed,
            format!("the ASSUMED {}", show(super::ASSUMED_RATE_BPS)),
        ),
    };
    if path.rate.bps() == fallback {
        return Vec::new();
    }
    path.rate = Bitrate::from_bps(fallback);
    path.rate_source = source;
    vec![format!(
        "{host}: no TCP test confirmed the packet trains' {} (they read {}): bursty forwarding makes trains read low or high, so the buffers are sized for {what} — give --bandwidth, or run `tcptune serve` there for a TCP test",
        show(c.bps),
        train_range(m).unwrap_or_default()
    )]
}
