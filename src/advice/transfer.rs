//! A transfer of a given size (`advise --size`) timed twice: at the rate the advised buffers
//! carry (the path's) and at what today's running receive max lets one flow reach.

use serde::Serialize;

/// A transfer's times, seconds, at the advised rate and today; `today_*` None where the
/// running receive max is not known (advice for another system's stock values is, though).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Transfer {
    pub bytes: u64,
    /// The path's rate in the receiving direction: what the advised buffers carry.
    pub advised_bps: u64,
    pub advised_s: f64,
    /// min(the path's rate, the running receive max's window ÷ RTT).
    pub today_bps: Option<u64>,
    pub today_s: Option<f64>,
    /// The window the running receive max gives one flow, bytes.
    pub today_window_bytes: Option<u64>,
}

impl Transfer {
    /// `bytes` at `rate_bps`, and at today's ceiling `limit_bps` (the running receive max's
    /// window over `rtt_ms`).
    pub fn new(bytes: u64, rate_bps: u64, limit_bps: Option<u64>, rtt_ms: f64) -> Self {
        #[allow(clippy::cast_precision_loss)]
        let secs = |bps: u64| bytes as f64 * 8.0 / bps.max(1) as f64;
        let today_bps = limit_bps.map(|l| l.min(rate_bps));
        #[allow(
            clippy::cast_precision_loss,
            clippy::cast_possible_truncation,
            clippy::cast_sign_loss
        )]
        let window = limit_bps.map(|l| (l as f64 * rtt_ms / 1000.0 / 8.0).round() as u64);
        Self {
            bytes,
            advised_bps: rate_bps,
            advised_s: secs(rate_bps),
            today_bps,
            today_s: today_bps.map(secs),
            today_window_bytes: window,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn today_is_held_to_the_running_window_and_never_above_the_path() {
        // 2 TB on a 800 Mbit/s, 150 ms path, today's window carrying 99 Mbit/s.
        let t = Transfer::new(2_000_000_000_000, 800_000_000, Some(99_000_000), 150.0);
        assert!((t.advised_s - 20_000.0).abs() < 1e-6, "{t:?}");
        assert!((t.today_s.expect("today") - 2e12 * 8.0 / 99e6).abs() < 1e-3, "{t:?}");
        assert_eq!(t.today_window_bytes, Some(1_856_250));
        // A window that carries more than the path: today is the path's rate.
        let t = Transfer::new(1_000_000, 8_000_000, Some(80_000_000), 10.0);
        assert_eq!(t.today_bps, Some(8_000_000));
        assert!((t.today_s.expect("today") - 1.0).abs() < 1e-9);
        assert_eq!(Transfer::new(1, 8, None, 1.0).today_s, None);
    }
}
