//! Progress on stderr (indicatif), drawn for the commands: the domain reports what it is doing
//! (a callback for `verify`, [`crate::measure::Progress`] for the probes) and never draws.

use std::net::SocketAddr;
use std::time::Duration;

use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::measure::{HostProgress, Progress, TestProgress};
use crate::tcp::flow::Tick;

/// How often a spinner turns.
const TICK: Duration = Duration::from_millis(120);

/// `verify`'s spinner while it sends to `to` for `granted`.
pub fn sending(to: SocketAddr, granted: Duration) -> ProgressBar {
    let p = ProgressBar::new(granted.as_millis().try_into().unwrap_or(u64::MAX));
    p.set_style(
        ProgressStyle::with_template("{spinner} sending to {msg} {elapsed}")
            .unwrap_or_else(|_| ProgressStyle::default_spinner()),
    );
    p.set_message(to.to_string());
    p.enable_steady_tick(TICK);
    p
}

/// The probes' spinners for `--host`: a line per host with its probe count, and a line while
/// packet trains run; each line is cleared when its part ends.
#[derive(Debug)]
pub struct Probes(MultiProgress);

impl Probes {
    pub fn new() -> Self {
        Self(MultiProgress::with_draw_target(ProgressDrawTarget::stderr()))
    }
}

impl Default for Probes {
    fn default() -> Self {
        Self::new()
    }
}

/// A line that clears itself when dropped, also when its task is cancelled.
struct Line(ProgressBar);

impl Drop for Line {
    fn drop(&mut self) {
        self.0.finish_and_clear();
    }
}

impl HostProgress for Line {
    fn inc(&self) {
        self.0.inc(1);
    }

    fn set(&self, n: u64) {
        if n > self.0.position() {
            self.0.set_position(n);
        }
    }

    fn start_tcp(&self, host: &str) {
        self.0.set_position(0);
        self.0.set_message(format!("probing {host} via TCP…"));
    }
}

impl Progress for Probes {
    fn host(&self, host: &str, probes: u32) -> Box<dyn HostProgress> {
        let style = ProgressStyle::with_template("{spinner} {msg} {pos}/{len}")
            .unwrap_or_else(|_| ProgressStyle::default_spinner());
        let bar = self.0.add(ProgressBar::new(u64::from(probes)).with_style(style));
        bar.set_message(format!("probing {host}…"));
        bar.enable_steady_tick(TICK);
        Box::new(Line(bar))
    }

    fn capacity(&self, host: &str) -> Box<dyn Send> {
        let style =
            ProgressStyle::with_template("{spinner} {msg}").unwrap_or_else(|_| ProgressStyle::default_spinner());
        let bar = self.0.add(ProgressBar::new_spinner().with_style(style));
        bar.set_message(format!("measuring the bottleneck rate to {host}…"));
        bar.enable_steady_tick(TICK);
        Box::new(Line(bar))
    }

    fn watch(&self, host: &str) -> Box<dyn Send> {
        let style = ProgressStyle::with_template("{spinner} {msg} {elapsed}")
            .unwrap_or_else(|_| ProgressStyle::default_spinner());
        let bar = self.0.add(ProgressBar::new_spinner().with_style(style));
        let step = crate::measure::queue::STEP;
        bar.set_message(format!(
            "watching the RTT to {host} for others' queue ({}, up to {})…",
            crate::text::secs(step.as_secs_f64()),
            crate::text::secs((step * crate::measure::queue::MAX_STEPS).as_secs_f64())
        ));
        bar.enable_steady_tick(TICK);
        Box::new(Line(bar))
    }

    fn path_test(&self, host: &str, bound: &str, time: Duration) -> Box<dyn TestProgress> {
        let style = ProgressStyle::with_template("{spinner} {msg} {elapsed}")
            .unwrap_or_else(|_| ProgressStyle::default_spinner());
        let bar = self.0.add(ProgressBar::new_spinner().with_style(style));
        bar.set_message(format!("TCP path test to {host} (at most {bound}; Ctrl-C stops it)…"));
        bar.enable_steady_tick(TICK);
        Box::new(TestLine {
            line: Line(bar),
            host: host.to_string(),
            bound: bound.to_string(),
            time,
            last: std::sync::Mutex::new(Tick::default()),
        })
    }
}

/// The path test's line: time so far of its bound, the rate now (since the last tick), and
/// the sender's RTT where it is this host.
struct TestLine {
    line: Line,
    host: String,
    bound: String,
    /// The bound's time: past it the line says the test is finishing, never "5.4 s of at
    /// most 3 s".
    time: Duration,
    last: std::sync::Mutex<Tick>,
}

impl TestProgress for TestLine {
    fn tick(&self, t: &Tick) {
        let mut last = self.last.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let dt = t.elapsed.saturating_sub(last.elapsed).as_secs_f64();
        #[allow(clippy::cast_precision_loss)]
        let rate = if dt > 0.0 {
            t.bytes.saturating_sub(last.bytes) as f64 * 8.0 / dt
        } else {
            0.0
        };
        *last = *t;
        let rtt = t
            .srtt_ms
            .map_or_else(String::new, |r| format!(", RTT {}", crate::text::millis(r)));
        self.line
            .0
            .set_message(test_line(&self.host, &self.bound, self.time, t.elapsed, rate, &rtt));
    }
}

/// The live line of a path test `elapsed` into its bound (`time` of it): how far it has come,
/// or, past the bound's time (the last data draining, the flow closing), that it is finishing.
fn test_line(host: &str, bound: &str, time: Duration, elapsed: Duration, rate: f64, rtt: &str) -> String {
    let at = if elapsed <= time {
        format!("{} of at most {bound}", crate::text::secs(elapsed.as_secs_f64()))
    } else {
        format!("its {} are up, finishing", crate::text::secs(time.as_secs_f64()))
    };
    format!("TCP path test to {host}: {at}: {}{rtt}…", crate::text::rate(rate))
}

/// The probes' progress on stderr when it is a terminal, else none.
pub fn probes(stderr_tty: bool) -> Option<std::sync::Arc<dyn Progress>> {
    stderr_tty.then(|| std::sync::Arc::new(Probes::new()) as std::sync::Arc<dyn Progress>)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 36, point 7: the live line said "5.4 s of at most 3 s" while the test finished.
    #[test]
    fn the_live_line_never_passes_its_own_bound() {
        let bound = "3 s or 1 GiB";
        let at = |ms| test_line("h", bound, Duration::from_secs(3), Duration::from_millis(ms), 5e8, "");
        assert_eq!(
            at(1500),
            "TCP path test to h: 1.5 s of at most 3 s or 1 GiB: 500 Mbit/s…"
        );
        assert_eq!(at(3000), "TCP path test to h: 3 s of at most 3 s or 1 GiB: 500 Mbit/s…");
        assert_eq!(at(5400), "TCP path test to h: its 3 s are up, finishing: 500 Mbit/s…");
    }
}
