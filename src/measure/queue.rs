//! Whether others keep a queue on the path, from round-trip probes alone (issue 37): after the
//! first probes and the packet trains, with nothing of this host's sending, probes go out every
//! [`INTERVAL`] for [`STEP`], and for another step while the reading is unclear (at most
//! [`MAX_STEPS`]: 4.5 s). A queue that others fill and drain moves the RTT's floor: the lowest
//! RTT of one quarter second differs from another's by far more than the probes scatter within
//! one ([`read`]). Jitter scatters probes within every quarter second as much as between them;
//! random loss, a forwarder that releases packets in batches and reordering move no floor.
//!
//! Recorded on the lab (series of 20-ms probes, quarter-second windows): an idle 150 ms line,
//! swing 0; 1 % loss at 40 ms, 0; jitter of 5 ms and 30 ms at 75 ms, the floor's swing 0.5–1.2 ×
//! the scatter within a window; reordering at 10 ms, 0.4–1.1 ×; one or two CUBIC neighbours at
//! 150 ms / 250 Mbit/s behind a queue of one BDP, 4–58 × (the floor moved 9–30 ms in 1.5 s,
//! rising between losses and falling at each).
//!
//! What it cannot see: a queue that stands still the whole watch (many flows keeping a queue
//! full, or an AQM holding it at its target) looks like a longer path, and the lowest RTT seen
//! is then above the path's own.

use std::net::IpAddr;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::{PingSlot, ProbeOptions, icmp};

/// Spacing of the watch's probes.
pub const INTERVAL: Duration = Duration::from_millis(20);
/// One step of the watch.
pub const STEP: Duration = Duration::from_millis(1500);
/// Steps at most: more only while the reading is unclear.
pub const MAX_STEPS: u32 = 3;
/// The floor is the lowest RTT of each window of this many ms.
pub const WINDOW_MS: f64 = 250.0;
/// The floor moved when it swung by at least this many ms and [`SWING_SHARE`] of the lowest RTT
/// (a 1-ms-per-direction batching forwarder moves a floor by a fraction of a ms)...
pub const SWING_MIN_MS: f64 = 2.0;
pub const SWING_SHARE: f64 = 0.02;
/// ... and by this many times the probes' scatter within a window (the median of each window's
/// median above its lowest): jitter swings the floor about as much as it scatters the probes.
pub const SWING_OVER_SCATTER: f64 = 3.0;

/// What the watch's probes say of a queue others keep.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", tag = "kind")]
pub enum QueueReading {
    /// The floor moved: others fill and drain a queue. `low_ms` is the lowest RTT seen,
    /// `high_ms` the highest of the windows' floors.
    Moved { low_ms: f64, high_ms: f64, scatter_ms: f64 },
    /// It did not, or no more than the probes scatter: nothing tells others are there.
    Still {
        low_ms: f64,
        swing_ms: f64,
        scatter_ms: f64,
    },
    /// Half-way: the floor moved by half the bound, or the scatter is close to the swing.
    Unclear {
        low_ms: f64,
        swing_ms: f64,
        scatter_ms: f64,
    },
}

impl QueueReading {
    /// The lowest RTT the watch saw, ms.
    pub fn low_ms(&self) -> f64 {
        match *self {
            Self::Moved { low_ms, .. } | Self::Still { low_ms, .. } | Self::Unclear { low_ms, .. } => low_ms,
        }
    }
}

/// The watch: its probes' round trips (answered ones, in send order, ms) and what they say.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct QueueWatch {
    pub interval_ms: f64,
    pub seconds: f64,
    pub sent: u32,
    pub samples_ms: Vec<f64>,
    pub reading: QueueReading,
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// What a series of probes `interval_ms` apart says; None with fewer than two windows of five.
pub fn read(samples_ms: &[f64], interval_ms: f64) -> Option<QueueReading> {
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    let w = ((WINDOW_MS / interval_ms.max(0.001)).round() as usize).max(5);
    let windows: Vec<&[f64]> = samples_ms.chunks_exact(w).collect();
    if windows.len() < 2 {
        return None;
    }
    let floors: Vec<f64> = windows
        .iter()
        .map(|s| s.iter().copied().fold(f64::INFINITY, f64::min))
        .collect();
    let mut scatters: Vec<f64> = windows
        .iter()
        .zip(&floors)
        .map(|(s, f)| median(&mut s.to_vec()) - f)
        .collect();
    let scatter_ms = median(&mut scatters);
    let low_ms = samples_ms.iter().copied().fold(f64::INFINITY, f64::min);
    let high_ms = floors.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let swing_ms = high_ms - floors.iter().copied().fold(f64::INFINITY, f64::min);
    let bound = SWING_MIN_MS.max(SWING_SHARE * low_ms);
    let over = swing_ms / scatter_ms.max(0.1);
    Some(if swing_ms >= bound && over >= SWING_OVER_SCATTER {
        QueueReading::Moved {
            low_ms,
            high_ms,
            scatter_ms,
        }
    } else if swing_ms >= bound / 2.0 && over >= SWING_OVER_SCATTER / 2.0 {
        QueueReading::Unclear {
            low_ms,
            swing_ms,
            scatter_ms,
        }
    } else {
        QueueReading::Still {
            low_ms,
            swing_ms,
            scatter_ms,
        }
    })
}

/// Watch the path to `addr` with probes every [`INTERVAL`], a [`STEP`] at a time while the
/// reading is unclear; None when too few probes came back to read.
pub async fn watch(addr: IpAddr, opts: &ProbeOptions, slot: PingSlot) -> Option<QueueWatch> {
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    let per_step = (STEP.as_secs_f64() / INTERVAL.as_secs_f64()).round() as u32;
    let step_opts = ProbeOptions {
        probes: per_step,
        interval: INTERVAL,
        timeout: opts.timeout,
        progress: None,
        capacity: false,
        ..opts.clone()
    };
    let interval_ms = INTERVAL.as_secs_f64() * 1000.0;
    let mut samples = Vec::new();
    let mut sent = 0;
    let mut reading = None;
    for step in 0..MAX_STEPS {
        let slot = PingSlot {
            ident: slot.ident,
            seq_base: slot.seq_base.wrapping_add(((step * per_step) & 0xffff) as u16),
        };
        let icmp::IcmpResult::Sent { stats, .. } = icmp::ping(addr, &step_opts, slot, || {}).await else {
            break;
        };
        sent += stats.sent;
        samples.extend(stats.samples_ms);
        reading = read(&samples, interval_ms);
        if !matches!(reading, Some(QueueReading::Unclear { .. })) {
            break;
        }
    }
    Some(QueueWatch {
        interval_ms,
        seconds: f64::from(sent) * INTERVAL.as_secs_f64(),
        sent,
        samples_ms: samples,
        reading: reading?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn series(n: usize, f: impl Fn(usize) -> f64) -> Vec<f64> {
        (0..n).map(f).collect()
    }

    /// A pseudo-random number in [0, 1) from an index (no rand dependency).
    fn noise(i: usize) -> f64 {
        let x = (i as u64)
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        ((x >> 33) % 10_000) as f64 / 10_000.0
    }

    #[test]
    fn a_floor_that_others_move_reads_moved_and_the_lowest_rtt_is_kept() {
        // 150 ms path, a queue rising 20 ms a second from 110 ms, probes scattered by 1 ms.
        let s = series(75, |i| 150.0 + 110.0 + 20.0 * i as f64 * 0.02 + noise(i));
        let r = read(&s, 20.0).expect("read");
        assert!(matches!(r, QueueReading::Moved { .. }), "{r:?}");
        assert!((r.low_ms() - 260.0).abs() < 1.0, "{r:?}");
        // A loss drains it half-way through.
        let s = series(75, |i| if i < 40 { 280.0 } else { 200.0 } + noise(i));
        assert!(matches!(read(&s, 20.0), Some(QueueReading::Moved { .. })));
    }

    #[test]
    fn jitter_loss_and_a_batching_forwarder_read_still() {
        // Jitter up to 30 ms on 75 ms: the floor swings, but no more than the probes scatter.
        let s = series(75, |i| 75.0 + 30.0 * noise(i));
        let r = read(&s, 20.0).expect("read");
        assert!(!matches!(r, QueueReading::Moved { .. }), "{r:?}");
        // A forwarder releasing once a millisecond each way.
        let s = series(75, |i| 75.0 + (2.0 * noise(i)).ceil());
        assert!(
            matches!(read(&s, 20.0), Some(QueueReading::Still { .. })),
            "{:?}",
            read(&s, 20.0)
        );
        // A clean line: flat.
        let s = series(75, |_| 40.1);
        assert!(matches!(read(&s, 20.0), Some(QueueReading::Still { swing_ms, .. }) if swing_ms == 0.0));
        // Too short to read.
        assert_eq!(read(&series(9, |_| 40.0), 20.0), None);
    }

    #[test]
    fn half_the_swing_is_unclear() {
        // 100 ms path, floor moving by 1.5 ms (bound 2 ms) with little scatter.
        let s = series(75, |i| 100.0 + if i < 36 { 0.0 } else { 1.5 } + 0.1 * noise(i));
        assert!(
            matches!(read(&s, 20.0), Some(QueueReading::Unclear { .. })),
            "{:?}",
            read(&s, 20.0)
        );
    }
}
