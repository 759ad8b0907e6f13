//! The two ends of a path test's data flow, below both users: the sender — this host in a
//! forward test (`measure::pathtest`), `tcptune serve` in a reverse one (`diag::serve`) — and
//! the receiver — serve in a forward test, this host in a reverse one. Each end runs the same
//! code whichever program it is in, so the two directions are measured alike.
//!
//! # The sender ([`send`])
//! It runs BBR where the kernel allows it (the caller sets the congestion control): BBR's
//! startup fills the bottleneck queue (so the RTT growth shows its depth) and keeps its rate
//! through random loss (so a 10-s test sends enough segments to see 0.001 % loss); a
//! loss-based test flow would crawl on exactly the paths the test must recognise. Two phases:
//! unpaced until the delivery rate has stopped growing for [`PLATEAU_RTTS`] round trips
//! (startup: the rate and the queue depth), then paced at [`PACED_SHARE`] of that rate
//! (`SO_MAX_PACING_RATE`), so that the flow keeps no queue and any segment it loses is the
//! path's random loss — not BBR overfilling a queue shallower than its 2 × BDP window (BBR v1
//! drops 1–2 % of its segments behind a queue of 0.75 × BDP in tcptune's lab, where the path
//! itself drops nothing). What it read comes out as a [`Reading`]: the delivery rate, the loss
//! after startup, the RTT under load, what limited it.
//!
//! A test that ends still in startup ([`Reading::in_startup`]) confirms the highest delivery
//! rate it saw as a lower bound of the path's, and measures no loss. A sender whose every
//! rate reading was application-limited ([`Reading::app_limited`]: it never had data queued
//! past what the path took) never leaves startup; the highest rate it sent at is the bound.
//!
//! ## Ending on time: the unsent data is bounded
//! The send buffer must hold everything in flight (up to 2 × BDP, more while losses are
//! repaired), so the test forces it large; but a buffer sized for a rate the path does not
//! have also holds a backlog of *unsent* data that drains only at the path's rate: a buffer
//! sized for 1 Gbit/s at 600 ms (187 MB) takes 50 s to drain at 30 Mbit/s, long after the
//! test's time. So the sender bounds its unsent data with `TCP_NOTSENT_LOWAT` to
//! [`UNSENT_TIME`] of the highest delivery rate seen (at least [`UNSENT_FLOOR`]), stops
//! writing at its deadline, and what is left after it is what is in flight plus at most that
//! bound and one write.
//!
//! # The receiver ([`receive`])
//! Counts the payload until the sender's end of data (FIN), or until the cutoff its caller
//! gives (the protocol's, [`super::proto::receive_cutoff`]), and reports what came by then: a
//! sender whose backlog outlasts the test is measured, not waited for. On Linux 6.2+ it
//! samples the window it advertises against its receive buffer (its window share, the
//! kernel's scaling_ratio).
//!
//! # Platform specific behavior
//! Without Linux's TCP_INFO (FreeBSD, macOS) the sender reads nothing of its flow: its
//! [`Reading`] is empty, no pacing phase runs and the unsent data is not bounded beyond the
//! send buffer; the receiver reports no window or share.

use std::net::TcpStream;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use super::sockopt::{self, Buffer};
use super::tcpinfo::{LimitedBy, TcpInfo};

/// Round trips without a 10 % higher delivery rate that end startup (BBR's own rule is 3).
pub const PLATEAU_RTTS: f64 = 4.0;
/// The paced phase runs at this share of the startup's rate: below the bottleneck, so the
/// queue startup left drains (a BDP of it in 5 round trips) and no new one builds.
pub const PACED_SHARE: f64 = 0.8;
/// Round trips after pacing starts that still count as startup: losses of the unpaced phase
/// are detected and repaired a round or two later...
const STEADY_AFTER_RTTS: f64 = 2.0;
/// ... and the queue startup filled must have drained: the smoothed RTT back within this
/// factor of the minimum (until then the repairs of startup's losses go on) — and those
/// repairs must be over (the sender out of loss recovery): startup's overshoot loses thousands
/// of segments behind a queue of a BDP or less, and the last of them are still being resent
/// as the queue empties, within a sample or two of it. A base taken then counts dozens of
/// startup's losses as the path's on a loaded host (55 of 35,571 segments in tcptune's lab, on
/// a path that drops nothing after startup).
const DRAINED_RTT: f64 = 1.2;
/// ... or within this many milliseconds of it, whichever is more: on a LAN the host's own
/// handling of each acknowledgement is most of the RTT, and a path whose floor is 12–28 µs ran
/// its whole paced phase at 0.1–0.2 ms with startup's 9.6 ms queue long gone (two hosts on one
/// 100 Mbit/s switch port of the lab's fleet), so its loss was never counted and its class never
/// read. Under 5 ms only: above, 1.2 × the floor is more.
const DRAINED_SLACK_MS: f64 = 1.0;
/// ... but only for so many round trips after the queue drained: a sender still in recovery
/// then is repairing the path's own loss (at 1 % on a 50 ms / 200 Mbit/s path it loses about
/// 9 segments a round trip and is in recovery nearly always). Waiting on for a moment out of
/// recovery counted the loss over the last 1,256 of a test's 135,000 segments on the lab, and
/// 1 % read anywhere from 0.5 to 1 %.
const RECOVERY_END_RTTS: f64 = 4.0;
/// The test ends once its reading is made ([`reading_made`]), not before this many round trips
/// of the paced phase...
pub const MADE_STEADY_RTTS: f64 = 10.0;
/// ... nor before this much of it: what the shape of the paced phase is read over (its RTT, its
/// rate) wants a few [`GOODPUT_SPAN`]s on a short path.
pub const MADE_STEADY_MIN: Duration = Duration::from_millis(1500);
pub use crate::bdp::ZERO_LOSS_BOUND;
/// Retransmissions that show the loss above a bound: at least this many, and the count less
/// two of its standard deviations still above it.
pub const LOSS_SEEN_MIN: u64 = 10;
/// The BDP the loss is judged against is the best delivery rate's, widened by this either way
/// (the advice sizes from its own reading of the rate, which may differ).
pub const MADE_BDP_MARGIN: f64 = 1.25;
/// The delivery rate has converged when the last two spans of half the shortest steady phase
/// delivered within this share of each other (bytes the receiver acknowledged,
/// `tcpi_delivered`, over time): a flow still finding its rate, a queue still draining or a
/// line that forwards in bursts longer than the span moves more than this.
pub const MADE_RATE_AGREE: f64 = 0.25;

/// Limited by the sender's buffer or the receiver's window for more than this share of the
/// busy time: the test was held by a window, its rate is a lower bound.
pub const WINDOW_LIMITED_PCT: f64 = 20.0;
/// How often the sender reads TCP_INFO.
const SAMPLE_EVERY: Duration = Duration::from_millis(20);
/// How often the caller hears of the bytes moved.
const PROGRESS_EVERY: Duration = Duration::from_millis(250);
/// One write of the send loop, bytes.
const CHUNK: usize = 128 * 1024;

/// The unsent data the sender keeps queued, as time at the highest delivery rate seen. The
/// kernel wakes a writer blocked on TCP_NOTSENT_LOWAT only once the unsent data has fallen
/// below half the bound, so the writer then has 25 ms of the delivery rate to refill before
/// the flow runs dry — 9 ms at BBR startup's pacing gain of 2.89 — where a wake-up takes
/// 1–5 ms even on a loaded 2-core host: the flow never waits for the test program. After the
/// deadline that is also all the backlog left to drain: 50 ms of the flow, not the 50 s a
/// send buffer sized for a faster path holds.
pub const UNSENT_TIME: Duration = Duration::from_millis(50);
/// The bound before the first reading of the rate (and its floor): 128 KiB, nine times the
/// initial window of 10 segments and 35 ms at 30 Mbit/s.
pub const UNSENT_FLOOR: u64 = 128 << 10;

/// What a test's data phase reports as it runs, a few times a second: the bytes moved so far
/// and in how long, and for a sender its smoothed RTT and its retransmissions so far.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Tick {
    pub bytes: u64,
    pub elapsed: Duration,
    pub srtt_ms: Option<f64>,
    pub retrans: Option<u64>,
}

impl Tick {
    /// A receiver's tick: bytes and time only.
    pub fn moved(bytes: u64, elapsed: Duration) -> Self {
        Self {
            bytes,
            elapsed,
            srtt_ms: None,
            retrans: None,
        }
    }
}

/// One TCP_INFO reading during the test.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Sample {
    /// Since the first payload byte was handed to the kernel.
    pub t: Duration,
    /// bit/s; None when the kernel marked it application-limited or gave 0.
    pub delivery_bps: Option<f64>,
    /// bit/s, when the kernel marked it application-limited: the sender had nothing queued
    /// to send, so it is what this host sent at, a lower bound of the path's rate.
    pub app_limited_bps: Option<f64>,
    pub srtt_ms: f64,
    /// Bytes in the network ([`TcpInfo::bytes_in_flight`]): all a queue of this flow can hold.
    pub in_flight_bytes: Option<u64>,
    pub segs_out: u64,
    pub retrans: u64,
    /// The flow's lowest RTT so far, ms.
    pub min_rtt_ms: f64,
    /// The sender was repairing losses ([`TcpInfo::in_loss_recovery`]).
    pub recovering: bool,
    /// Segments the receiver reported received twice (D-SACK): retransmissions that were
    /// spurious, the first copy having arrived late, not lost (`tcpi_dsack_dups`, Linux 5.0+).
    pub dsack_dups: u64,
    /// Times the sender saw reordering (`tcpi_reord_seen`, Linux 5.0+).
    pub reord_seen: u64,
    /// Payload bytes the receiver got so far, acknowledged or selectively acknowledged,
    /// retransmissions included (`tcpi_delivered` × MSS): all the path let through.
    pub delivered_bytes: u64,
    /// The sender's segment size, bytes.
    pub mss: u32,
}

impl Sample {
    #[allow(clippy::cast_precision_loss)]
    pub fn of(t: Duration, i: &TcpInfo) -> Self {
        let rate = (i.tcpi_delivery_rate > 0).then_some(i.tcpi_delivery_rate as f64 * 8.0);
        let app_limited = i.delivery_rate_app_limited();
        Self {
            t,
            delivery_bps: rate.filter(|_| !app_limited),
            app_limited_bps: rate.filter(|_| app_limited),
            srtt_ms: i.rtt_ms(),
            in_flight_bytes: Some(i.bytes_in_flight()),
            segs_out: u64::from(i.tcpi_data_segs_out),
            retrans: u64::from(i.tcpi_total_retrans),
            min_rtt_ms: i.min_rtt_ms(),
            recovering: i.in_loss_recovery(),
            dsack_dups: u64::from(i.tcpi_dsack_dups),
            reord_seen: u64::from(i.tcpi_reord_seen),
            delivered_bytes: u64::from(i.tcpi_delivered) * u64::from(i.tcpi_snd_mss),
            mss: i.tcpi_snd_mss,
        }
    }
}

/// Watches the samples for the end of startup: the delivery rate has not grown by 10 % for
/// [`PLATEAU_RTTS`] round trips.
#[derive(Debug, Default)]
struct Plateau {
    best: f64,
    best_at: Duration,
}

impl Plateau {
    /// After `s`: the rate to pace at from now on, bytes per second, once startup is over.
    fn see(&mut self, s: &Sample, history: &[Sample]) -> Option<u64> {
        let r = s.delivery_bps?;
        if r > self.best * 1.1 {
            self.best = r;
            self.best_at = s.t;
            return None;
        }
        let rtt = Duration::from_secs_f64((s.min_rtt_ms / 1000.0).max(0.001));
        if s.t < self.best_at + rtt.mul_f64(PLATEAU_RTTS) {
            return None;
        }
        let mut rates: Vec<f64> = history
            .iter()
            .filter(|h| h.t >= self.best_at)
            .filter_map(|h| h.delivery_bps)
            .collect();
        rates.sort_by(f64::total_cmp);
        let median = rates.get(rates.len() / 2).copied().unwrap_or(r);
        #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
        Some((median / 8.0 * PACED_SHARE) as u64)
    }
}

/// What the sender read of its flow (Linux TCP_INFO): the sender's half of a path test, as
/// the client fills it into its evidence and as serve sends it back from a reverse test
/// ([`super::proto::SenderResult`]). Every reading the OS could not give is None.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Reading {
    /// The TCP delivery rate (bit/s): the median of the startup's readings from the first
    /// within 10 % of its best; while still in startup, the best reading (a lower bound).
    pub delivery_rate_bps: Option<f64>,
    /// The test ended before the rate stopped growing: no loss was measured, and the delivery
    /// rate is the highest it reached, a lower bound of the path's.
    #[serde(default)]
    pub in_startup: bool,
    /// Every rate reading was application-limited: this host's sender never had data queued
    /// past what the path took (a CPU too slow for the path, or a sender starved of it), so
    /// the flow never left startup, and the delivery rate is the highest of those readings,
    /// a lower bound of the path's. Only with `in_startup`.
    #[serde(default)]
    pub app_limited: bool,
    /// The paced phase ran (startup ended and the pacing rate could be set): the loss after
    /// startup is then the path's, when the flow ran long enough to read it.
    #[serde(default)]
    pub paced: bool,
    /// Data segments sent, and of those retransmitted, over the whole test.
    pub segs_out: Option<u64>,
    pub retrans_segs: Option<u64>,
    /// The same in the paced phase, once startup's queue had drained: the path's loss.
    pub steady_segs_out: Option<u64>,
    pub steady_retrans_segs: Option<u64>,
    /// Lowest RTT of the flow, ms.
    pub min_rtt_ms: Option<f64>,
    /// Highest smoothed RTT under load, ms.
    pub loaded_rtt_ms: Option<f64>,
    /// Percent of the busy time limited by the receiver's window, and by the sender's buffer.
    pub rwnd_limited_pct: Option<f64>,
    pub sndbuf_limited_pct: Option<f64>,
    /// What tells the kinds of loss and queue apart ([`Shape`]); absent from older peers.
    #[serde(default)]
    pub shape: Option<Shape>,
    /// The test ended before its time because its reading was made ([`reading_made`]): when,
    /// and what decided it. None: it ran to its time or bytes (or was asked to).
    #[serde(default)]
    pub made: Option<Made>,
}

/// A reading made before the test's time: the loss after startup decides, whatever more of
/// the same path would show, which side of CUBIC's limit it is on.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Made {
    /// When, s into the test.
    pub at_s: f64,
    /// The segments after startup and of those retransmitted.
    pub segments: u64,
    pub retransmitted: u64,
    /// The loss, %, at which CUBIC's window would no longer hold the path (its BDP at the best
    /// delivery rate): below it the path is clean for CUBIC, above it lossy.
    pub limit_pct: f64,
    /// Which side: `true` the loss is surely above the limit; `false` surely below it (none,
    /// or few, in so many segments).
    pub lossy: bool,
}

/// How the flow's RTT, loss and rate behaved: what tells random loss from a queue overflowing,
/// a flow alone from one that shares its bottleneck, a policer from a slow path, and
/// reordering from loss.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Shape {
    /// The median smoothed RTT of the paced phase, ms: a paced flow drains its own queue, so
    /// an RTT that stays above the lowest is a queue someone else keeps standing.
    pub steady_rtt_ms: Option<f64>,
    /// The median queue (smoothed RTT − lowest, ms) at the samples where the retransmissions
    /// rose, startup included: near 0, loss at the base RTT (random, or a policer's); near the
    /// queue's top, loss of a full queue (congestion).
    pub loss_queue_ms: Option<f64>,
    /// The retransmissions of startup (before the paced phase), and the segments sent then.
    pub startup_retrans_segs: Option<u64>,
    pub startup_segs_out: Option<u64>,
    /// Of the retransmissions after startup, those the receiver reported as duplicates
    /// (D-SACK): spurious, reordering rather than loss.
    pub steady_spurious_segs: Option<u64>,
    /// Reordering the sender saw over the whole test (`tcpi_reord_seen`).
    pub reordering: Option<u64>,
    /// The delivery rate's readings in the paced phase: their spread, (p90 − p10) ÷ median.
    pub steady_rate_spread: Option<f64>,
    /// What the path let through in startup once it had dropped a segment, bit/s: the payload
    /// delivered (retransmissions included) from the first reading with a retransmission to the
    /// last within a round trip of the paced phase's start (those acknowledgements are still of
    /// startup's segments), when that spans at least [`STARTUP_SPAN_RTTS`] round trips.
    /// Startup sends at 2.89 × the rate it reads, so a policer's bucket stays empty from its
    /// first drop on and this is the bucket's rate, without the bursts it had saved before —
    /// which the kernel's per-acknowledgement delivery rate catches.
    #[serde(default)]
    pub startup_delivered_bps: Option<f64>,
    /// The same from the first reading with a drop behind it and the queue at
    /// [`FULL_QUEUE_SHARE`] or more of the highest startup built (at least
    /// [`FULL_QUEUE_MIN_MS`]): a bottleneck with a queue sends at its full rate, so a flow alone
    /// gets all of it and one beside others its share. (From the first drop alone, random loss
    /// before the queue filled would count the ramp: 0.63–0.74 of the path at 1–2 % loss.)
    #[serde(default)]
    pub full_queue_delivered_bps: Option<f64>,
    /// The same over the paced phase (at least [`GOODPUT_SPAN`] of it): where that phase still
    /// lost segments, the path let through less than the pace — a policer's rate.
    #[serde(default, alias = "paced_goodput_bps")]
    pub paced_delivered_bps: Option<f64>,
}

/// The shortest paced phase [`Shape::paced_delivered_bps`] is counted over.
pub const GOODPUT_SPAN: Duration = Duration::from_millis(500);
/// The fewest round trips of startup after its first drop that
/// [`Shape::startup_delivered_bps`] is counted over.
pub const STARTUP_SPAN_RTTS: f64 = 2.0;
/// A queue stands full in startup at this share of the highest it reached...
pub const FULL_QUEUE_SHARE: f64 = 0.5;
/// ... of at least this many ms (below it, no queue to speak of: a policer's path).
pub const FULL_QUEUE_MIN_MS: f64 = 2.0;

/// The longest RTT a reading may show, ms: a minute, past any path TCP runs on (a
/// geostationary hop is 0.6 s, a queue of seconds is bufferbloat at its worst).
pub const MAX_RTT_MS: f64 = 60_000.0;

impl Reading {
    /// Whether every number is one a TCP flow can show: rates below
    /// [`super::MAX_RATE_BPS`], RTTs within (0, [`MAX_RTT_MS`]], shares within 0–100 %, no
    /// more segments retransmitted than sent. Err says which is not.
    pub fn check(&self) -> Result<(), String> {
        if self
            .delivery_rate_bps
            .is_some_and(|r| !(0.0..=super::MAX_RATE_BPS).contains(&r))
        {
            return Err(format!(
                "a delivery rate of {:?} bit/s (a TCP flow runs at 0 to {} bit/s)",
                self.delivery_rate_bps,
                super::MAX_RATE_BPS
            ));
        }
        if self.app_limited && !self.in_startup {
            return Err("an application-limited sender that left startup".into());
        }
        let rtt_ok = |r: f64| r.is_finite() && r > 0.0 && r <= MAX_RTT_MS;
        if !self.min_rtt_ms.is_none_or(rtt_ok) || !self.loaded_rtt_ms.is_none_or(rtt_ok) {
            return Err(format!(
                "RTTs of {:?} ms (lowest) and {:?} ms (under load), outside (0, {MAX_RTT_MS}] ms",
                self.min_rtt_ms, self.loaded_rtt_ms
            ));
        }
        let pct_ok = |p: f64| (0.0..=100.0).contains(&p);
        if !self.rwnd_limited_pct.is_none_or(pct_ok) || !self.sndbuf_limited_pct.is_none_or(pct_ok) {
            return Err(format!(
                "limited-by shares of {:?} % and {:?} %, outside 0–100 %",
                self.rwnd_limited_pct, self.sndbuf_limited_pct
            ));
        }
        let within = |part: Option<u64>, whole: Option<u64>| match (part, whole) {
            (Some(p), Some(w)) => p <= w,
            _ => true,
        };
        if !within(self.retrans_segs, self.segs_out)
            || !within(self.steady_retrans_segs, self.steady_segs_out)
            || !within(self.steady_segs_out, self.segs_out)
        {
            return Err(format!(
                "{:?} of {:?} segments retransmitted ({:?} of {:?} after startup)",
                self.retrans_segs, self.segs_out, self.steady_retrans_segs, self.steady_segs_out
            ));
        }
        if let Some(m) = &self.made
            && !(m.at_s.is_finite()
                && (0.0..=3600.0).contains(&m.at_s)
                && m.retransmitted <= m.segments
                && m.limit_pct.is_finite()
                && (0.0..=100.0).contains(&m.limit_pct))
        {
            return Err(format!(
                "a reading made at {} s with {} of {} segments",
                m.at_s, m.retransmitted, m.segments
            ));
        }
        self.shape.as_ref().map_or(Ok(()), |s| s.check(self.segs_out))
    }

    /// What held the flow, when its buffers did: the receiver's window or the sender's buffer
    /// held it for more than [`WINDOW_LIMITED_PCT`] of its busy time together; the larger
    /// share names which. Its rate is then a lower bound and its flat RTT no queue reading.
    pub fn held_by(&self) -> Option<LimitedBy> {
        let (r, s) = (self.rwnd_limited_pct?, self.sndbuf_limited_pct?);
        (r + s > WINDOW_LIMITED_PCT).then_some(if r >= s {
            LimitedBy::ReceiveWindow
        } else {
            LimitedBy::SendBuffer
        })
    }
}

/// What the samples say; `left_startup_at`: when the rate stopped growing, if it did;
/// `paced_at`: when the paced phase began, if it did (it may not, where pacing failed).
pub fn read_samples(
    samples: &[Sample],
    min_rtt_ms: f64,
    left_startup_at: Option<Duration>,
    paced_at: Option<Duration>,
) -> Reading {
    let mut t = Reading {
        paced: paced_at.is_some(),
        ..Reading::default()
    };
    let best_of = |all: bool| {
        samples
            .iter()
            .filter(|s| all || paced_at.is_none_or(|p| s.t < p))
            .filter_map(|s| s.delivery_bps)
            .fold(0.0_f64, f64::max)
    };
    // The unpaced readings set the rate; where none came before pacing began (a sampler that
    // got no CPU on a busy host), every reading does.
    let all = best_of(false) <= 0.0;
    let best = best_of(all);
    let unpaced = |s: &&Sample| all || paced_at.is_none_or(|p| s.t < p);
    if left_startup_at.is_none() {
        // Still growing when the test ended: the highest rate it reached is all it confirms;
        // where the sender was application-limited throughout, the highest it sent at.
        t.in_startup = true;
        let sent_at = samples.iter().filter_map(|s| s.app_limited_bps).fold(0.0_f64, f64::max);
        t.app_limited = best <= 0.0 && sent_at > 0.0;
        t.delivery_rate_bps = [best, sent_at].into_iter().find(|&r| r > 0.0);
    } else if best > 0.0 {
        // The rate: the median of the unpaced readings from the first within 10 % of the
        // best on, so one ack burst does not set it.
        let plateau = samples
            .iter()
            .filter(unpaced)
            .find(|s| s.delivery_bps.is_some_and(|r| r >= 0.9 * best))
            .map(|s| s.t);
        if let Some(p) = plateau {
            let mut rates: Vec<f64> = samples
                .iter()
                .filter(unpaced)
                .filter(|s| s.t >= p)
                .filter_map(|s| s.delivery_bps)
                .collect();
            rates.sort_by(f64::total_cmp);
            t.delivery_rate_bps = rates.get(rates.len() / 2).copied();
        }
    }
    (t.steady_segs_out, t.steady_retrans_segs) = steady_loss(samples, min_rtt_ms, paced_at).unzip();
    if let Some(last) = samples.last() {
        t.segs_out = Some(last.segs_out);
        t.retrans_segs = Some(last.retrans);
    }
    t.min_rtt_ms = (min_rtt_ms > 0.0).then(|| round_ms(min_rtt_ms));
    t.loaded_rtt_ms = loaded_rtt_ms(samples, min_rtt_ms, t.delivery_rate_bps);
    t.shape = Some(shape(samples, min_rtt_ms, paced_at));
    t
}

/// Whether the test's reading is made, so it may end before its time (issue 45): the paced
/// phase has run [`MADE_STEADY_RTTS`] round trips and [`MADE_STEADY_MIN`] since its queue
/// drained (and twice as long as the drain took), its delivery rate has converged
/// ([`MADE_RATE_AGREE`]), and the loss after startup is decided either way against CUBIC's limit for the path ([`crate::bdp::cubic_loss_limit`]
/// at the BDP of the best delivery rate `best_bps`): none (or few) in so many segments that even
/// [`ZERO_LOSS_BOUND`] more would stay below the limit at [`MADE_BDP_MARGIN`] × the BDP, or at
/// least [`LOSS_SEEN_MIN`] retransmissions whose count less two standard deviations is above
/// the limit at the BDP ÷ the margin. A test the rest of its time could still turn either way
/// (a clean long fat path, whose limit is a loss far below what a few seconds can show) runs
/// on to its time, as before.
pub fn reading_made(samples: &[Sample], paced_at: Option<Duration>, best_bps: f64) -> Option<Made> {
    let (paced, last) = (paced_at?, samples.last()?);
    let rtt_s = (last.min_rtt_ms / 1000.0).max(0.001);
    // Counted from the queue's drain, and so long that the drain is at most a third of the
    // paced phase: the median RTT of the paced phase (others' standing queue, [`Shape`]) is then
    // the drained flow's, as over a whole test.
    let base = steady_base(samples, last.min_rtt_ms, paced_at)?;
    let steady = last.t.checked_sub(base.t)?;
    let draining = base.t.checked_sub(paced)?;
    if steady.as_secs_f64() < rtt_s * MADE_STEADY_RTTS
        || steady < MADE_STEADY_MIN
        || steady < draining * 2
        || last.mss == 0
        || !rate_converged(samples, rtt_s, last)
    {
        return None;
    }
    let (segments, retransmitted) = loss_since(base, last);
    if segments == 0 {
        return None;
    }
    let bdp_segs = best_bps / 8.0 * rtt_s / f64::from(last.mss);
    #[allow(clippy::cast_precision_loss)]
    let (n, r) = (segments as f64, retransmitted as f64);
    let clean_limit = crate::bdp::cubic_loss_limit(rtt_s, bdp_segs * MADE_BDP_MARGIN);
    let lossy_limit = crate::bdp::cubic_loss_limit(rtt_s, bdp_segs / MADE_BDP_MARGIN);
    let lossy = if (r + ZERO_LOSS_BOUND) / n <= clean_limit {
        false
    } else if retransmitted >= LOSS_SEEN_MIN && (r - 2.0 * r.sqrt()) / n > lossy_limit {
        true
    } else {
        return None;
    };
    Some(Made {
        at_s: round_s(last.t.as_secs_f64()),
        segments,
        retransmitted,
        limit_pct: 100.0 * crate::bdp::cubic_loss_limit(rtt_s, bdp_segs),
        lossy,
    })
}

/// Whether the delivery rate has converged by `last`: over the last two spans of half the
/// shortest steady phase (half of [`MADE_STEADY_RTTS`] round trips or of [`MADE_STEADY_MIN`]),
/// the receiver's acknowledged bytes came at rates within [`MADE_RATE_AGREE`] of each other.
fn rate_converged(samples: &[Sample], rtt_s: f64, last: &Sample) -> bool {
    let span = Duration::from_secs_f64(rtt_s * MADE_STEADY_RTTS / 2.0).max(MADE_STEADY_MIN / 2);
    let at = |back: Duration| {
        let t = last.t.checked_sub(back)?;
        samples.iter().rev().find(|s| s.t <= t)
    };
    #[allow(clippy::cast_precision_loss)]
    let rate = |a: &Sample, b: &Sample| {
        let dt = b.t.saturating_sub(a.t).as_secs_f64();
        (dt > 0.0).then(|| b.delivered_bytes.saturating_sub(a.delivered_bytes) as f64 / dt)
    };
    let (Some(first), Some(mid)) = (at(span * 2), at(span)) else {
        return false;
    };
    match (rate(first, mid), rate(mid, last)) {
        (Some(a), Some(b)) if a > 0.0 && b > 0.0 => (a - b).abs() <= MADE_RATE_AGREE * a.max(b),
        _ => false,
    }
}

/// Seconds to the millisecond.
fn round_s(s: f64) -> f64 {
    (s * 1000.0).round() / 1000.0
}

impl Shape {
    /// Whether every number is one a flow of `segs_out` segments can show.
    fn check(&self, segs_out: Option<u64>) -> Result<(), String> {
        let rtt_ok = |r: f64| r.is_finite() && r > 0.0 && r <= MAX_RTT_MS;
        let queue_ok = |q: f64| q.is_finite() && (0.0..=MAX_RTT_MS).contains(&q);
        if !self.steady_rtt_ms.is_none_or(rtt_ok) || !self.loss_queue_ms.is_none_or(queue_ok) {
            return Err(format!(
                "an RTT after startup of {:?} ms and a queue at loss of {:?} ms",
                self.steady_rtt_ms, self.loss_queue_ms
            ));
        }
        let within = |part: Option<u64>, whole: Option<u64>| part.zip(whole).is_none_or(|(p, w)| p <= w);
        if !within(self.startup_retrans_segs, self.startup_segs_out)
            || !within(self.startup_segs_out, segs_out)
            || !within(self.steady_spurious_segs, segs_out)
        {
            return Err(format!(
                "{:?} of {:?} segments retransmitted in startup, {:?} spurious, of {segs_out:?} sent",
                self.startup_retrans_segs, self.startup_segs_out, self.steady_spurious_segs
            ));
        }
        if !self.steady_rate_spread.is_none_or(|s| s.is_finite() && s >= 0.0) {
            return Err(format!("a rate spread of {:?}", self.steady_rate_spread));
        }
        let rate_ok = |r: Option<f64>| r.is_none_or(|r| (0.0..=super::MAX_RATE_BPS).contains(&r));
        if !rate_ok(self.startup_delivered_bps)
            || !rate_ok(self.full_queue_delivered_bps)
            || !rate_ok(self.paced_delivered_bps)
        {
            return Err(format!(
                "a delivered rate of {:?} / {:?} / {:?} bit/s",
                self.startup_delivered_bps, self.full_queue_delivered_bps, self.paced_delivered_bps
            ));
        }
        Ok(())
    }
}

/// The [`Shape`] of an unpaced flow read from outside (another program's socket, watched):
/// its steady phase begins where its delivery rate stopped growing ([`Plateau`]).
pub fn shape_unpaced(samples: &[Sample], min_rtt_ms: f64) -> Shape {
    let mut plateau = Plateau::default();
    let left = samples
        .iter()
        .enumerate()
        .find(|(i, s)| plateau.see(s, &samples[..*i]).is_some())
        .map(|(_, s)| s.t);
    shape(samples, min_rtt_ms, left)
}

/// The median of `v` (None when empty).
fn median(mut v: Vec<f64>) -> Option<f64> {
    v.sort_by(f64::total_cmp);
    v.get(v.len() / 2).copied()
}

/// The [`Shape`] of the samples: the paced phase's RTT and rate spread, the queue at each rise
/// of the retransmissions, startup's loss, and the spurious retransmissions and reordering.
fn shape(samples: &[Sample], min_rtt_ms: f64, paced_at: Option<Duration>) -> Shape {
    let paced: Vec<&Sample> = samples.iter().filter(|s| paced_at.is_some_and(|p| s.t >= p)).collect();
    let steady_rtt_ms = median(paced.iter().map(|s| s.srtt_ms).filter(|r| *r > 0.0).collect()).map(round_ms);
    let loss_queue_ms = median(
        samples
            .windows(2)
            .filter(|w| w[1].retrans > w[0].retrans && w[1].srtt_ms > 0.0)
            .map(|w| (w[1].srtt_ms - min_rtt_ms).max(0.0))
            .collect(),
    )
    .map(round_ms);
    let first_paced = paced.first();
    let rates: Vec<f64> = paced.iter().filter_map(|s| s.delivery_bps).collect();
    let steady_rate_spread = (rates.len() >= 5).then(|| {
        let mut r = rates.clone();
        r.sort_by(f64::total_cmp);
        let at = |q: f64| {
            #[allow(
                clippy::cast_possible_truncation,
                clippy::cast_sign_loss,
                clippy::cast_precision_loss
            )]
            let i = ((r.len() - 1) as f64 * q).round() as usize;
            r[i]
        };
        let mid = at(0.5).max(1.0);
        ((at(0.9) - at(0.1)) / mid * 1000.0).round() / 1000.0
    });
    let (first, last) = (samples.first(), samples.last());
    let paced_delivered_bps = delivered(&paced, GOODPUT_SPAN);
    // Acknowledgements come a round trip after the sending: those up to a round trip into the
    // paced phase are still of segments startup sent.
    let rtt = Duration::from_secs_f64(min_rtt_ms.max(0.0) / 1000.0);
    let dropped: Vec<&Sample> = samples
        .iter()
        .skip_while(|s| s.retrans == 0)
        .take_while(|s| paced_at.is_none_or(|p| s.t <= p + rtt))
        .collect();
    let span = rtt.mul_f64(STARTUP_SPAN_RTTS);
    let startup_delivered_bps = delivered(&dropped, span);
    // The highest queue startup built; from its first drop with the queue at half that or more.
    let queue = |s: &Sample| s.srtt_ms - min_rtt_ms;
    let top = dropped.iter().map(|s| queue(s)).fold(0.0, f64::max);
    let full: Vec<&Sample> = dropped
        .iter()
        .skip_while(|s| queue(s) < FULL_QUEUE_SHARE * top)
        .copied()
        .collect();
    let full_queue_delivered_bps = (top >= FULL_QUEUE_MIN_MS).then(|| delivered(&full, span)).flatten();
    Shape {
        steady_rtt_ms,
        loss_queue_ms,
        startup_retrans_segs: first_paced.map(|p| p.retrans),
        startup_segs_out: first_paced.map(|p| p.segs_out),
        steady_spurious_segs: first_paced
            .zip(last)
            .map(|(p, l)| l.dsack_dups.saturating_sub(p.dsack_dups)),
        reordering: first.zip(last).map(|(f, l)| l.reord_seen.saturating_sub(f.reord_seen)),
        steady_rate_spread,
        startup_delivered_bps,
        full_queue_delivered_bps,
        paced_delivered_bps,
    }
}

/// The payload delivered from the first to the last of `samples` over the time between them,
/// bit/s, when that is at least `span` (and not zero).
fn delivered(samples: &[&Sample], span: Duration) -> Option<f64> {
    let (a, b) = (samples.first()?, samples.last()?);
    let took = b.t.saturating_sub(a.t);
    #[allow(clippy::cast_precision_loss)]
    (took >= span && !took.is_zero())
        .then(|| b.delivered_bytes.saturating_sub(a.delivered_bytes) as f64 * 8.0 / took.as_secs_f64())
}

/// The highest smoothed RTT of the samples whose queue this flow could have filled: at
/// `rate_bps` (bit/s), an RTT `q` ms above `min_rtt_ms` is a queue of `rate × q` bytes, and
/// a flow queues no more than it has in flight (Little's law: in flight = rate × RTT, a BDP
/// more than the queue). A higher RTT is a stall — a forwarder that stopped, a timeout —
/// not a queue: one path test at 50 ms read 1055 ms, a "queue" of 20 × the BDP. Without a
/// rate or an in-flight count, every RTT counts.
fn loaded_rtt_ms(samples: &[Sample], min_rtt_ms: f64, rate_bps: Option<f64>) -> Option<f64> {
    #[allow(clippy::cast_precision_loss)]
    let could_queue = |s: &Sample| match (rate_bps, s.in_flight_bytes) {
        (Some(rate), Some(bytes)) => rate / 8.0 * (s.srtt_ms - min_rtt_ms) / 1000.0 <= bytes as f64,
        _ => true,
    };
    samples
        .iter()
        .filter(|s| s.srtt_ms > 0.0 && could_queue(s))
        .map(|s| s.srtt_ms)
        .reduce(f64::max)
        .map(round_ms)
}

/// The segments sent and retransmitted in the paced phase (`paced_at` on), once the queue
/// startup filled has drained and its losses are repaired. A path that loses so much that the
/// sender does not leave recovery within [`RECOVERY_END_RTTS`] gets the first drained sample:
/// its own loss is far above what startup's tail adds.
fn steady_loss(samples: &[Sample], min_rtt_ms: f64, paced_at: Option<Duration>) -> Option<(u64, u64)> {
    let last = samples.last()?;
    let base = steady_base(samples, min_rtt_ms, paced_at)?;
    (last.t > base.t).then(|| loss_since(base, last))
}

/// The segments sent and retransmitted from `base` to `last`.
fn loss_since(base: &Sample, last: &Sample) -> (u64, u64) {
    (
        last.segs_out.saturating_sub(base.segs_out),
        last.retrans.saturating_sub(base.retrans),
    )
}

/// The sample the path's own loss is counted from ([`steady_loss`]): the first after
/// [`STEADY_AFTER_RTTS`] of pacing with the queue drained, out of recovery where it comes
/// within [`RECOVERY_END_RTTS`].
fn steady_base(samples: &[Sample], min_rtt_ms: f64, paced_at: Option<Duration>) -> Option<&Sample> {
    let p = paced_at?;
    let rtts = |n: f64| Duration::from_secs_f64((min_rtt_ms / 1000.0 * n).max(0.0));
    let after = p + rtts(STEADY_AFTER_RTTS);
    let drained =
        |s: &&Sample| s.t >= after && s.srtt_ms <= (min_rtt_ms * DRAINED_RTT).max(min_rtt_ms + DRAINED_SLACK_MS);
    let first = samples.iter().find(drained)?;
    Some(
        samples
            .iter()
            .filter(drained)
            .take_while(|s| s.t <= first.t + rtts(RECOVERY_END_RTTS))
            .find(|s| !s.recovering)
            .unwrap_or(first),
    )
}

/// Milliseconds to the microsecond, as TCP_INFO gives them.
fn round_ms(ms: f64) -> f64 {
    (ms * 1000.0).round() / 1000.0
}

/// What the sender's data phase gave.
#[derive(Debug, Clone)]
pub struct Sent {
    /// Payload bytes handed to the kernel.
    pub bytes: u64,
    /// The time spent sending.
    pub elapsed: Duration,
    /// What TCP_INFO said of the flow (empty without it).
    pub reading: Reading,
    /// Whether TCP_INFO was read at all (Linux).
    pub tcp_info: bool,
}

/// The send loop's readings as it runs.
#[derive(Default)]
struct Sampler {
    samples: Vec<Sample>,
    plateau: Plateau,
    left_startup_at: Option<Duration>,
    paced_at: Option<Duration>,
    last_sample: Duration,
    last_progress: Duration,
    /// The unsent bound set last, bytes; 0 where it cannot be set.
    unsent: u64,
    /// The highest delivery rate seen, bytes per second.
    best_rate: f64,
    /// Whether to end once the reading is made ([`reading_made`]), and when it was.
    stop_early: bool,
    made: Option<Made>,
}

impl Sampler {
    /// After each write, `sent` bytes in `t`: a TCP_INFO reading every [`SAMPLE_EVERY`], and
    /// progress.
    /// Returns whether to go on: false once the reading is made (where asked to stop then).
    fn tick(&mut self, s: &TcpStream, sent: u64, t: Duration, on_progress: &mut dyn FnMut(Tick)) -> bool {
        if t.saturating_sub(self.last_sample) >= SAMPLE_EVERY {
            self.last_sample = t;
            if let Some(i) = super::tcpinfo::read(s) {
                self.see(s, Sample::of(t, &i));
                if self.stop_early && self.made.is_none() {
                    self.made = reading_made(&self.samples, self.paced_at, self.best_rate * 8.0);
                }
            }
        }
        if t.saturating_sub(self.last_progress) >= PROGRESS_EVERY {
            self.last_progress = t;
            on_progress(self.progress(sent, t));
        }
        self.made.is_none()
    }

    /// `sent` bytes in `t`, with the latest reading's RTT and retransmissions.
    fn progress(&self, sent: u64, t: Duration) -> Tick {
        let last = self.samples.last();
        Tick {
            bytes: sent,
            elapsed: t,
            srtt_ms: last.map(|s| s.srtt_ms),
            retrans: last.map(|s| s.retrans),
        }
    }

    /// Keeps `sample`, raises the unsent bound with the rate, and paces the flow once its
    /// startup is over.
    fn see(&mut self, s: &TcpStream, sample: Sample) {
        if let Some(r) = sample.delivery_bps {
            self.best_rate = self.best_rate.max(r / 8.0);
            let want = unsent_bound(self.best_rate);
            // Only upwards, and in steps of a quarter, so the option is not set every 20 ms.
            if self.unsent > 0 && want > self.unsent + self.unsent / 4 && sockopt::set_notsent_lowat(s, want).is_ok() {
                self.unsent = want;
            }
        }
        if self.left_startup_at.is_none()
            && let Some(rate) = self.plateau.see(&sample, &self.samples)
        {
            self.left_startup_at = Some(sample.t);
            // Unpaced to the end where it fails: the loss then includes what the flow's own
            // queue overflow cost (the caller's notes say so).
            if sockopt::set_max_pacing_rate(s, rate).is_ok() {
                self.paced_at = Some(sample.t);
            }
        }
        self.samples.push(sample);
    }
}

/// The unsent bound for a flow delivering `rate` bytes per second: [`UNSENT_TIME`] of it, at
/// least [`UNSENT_FLOOR`].
pub fn unsent_bound(rate: f64) -> u64 {
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    let at_rate = (rate.max(0.0) * UNSENT_TIME.as_secs_f64()).min(f64::from(i32::MAX)) as u64;
    at_rate.max(UNSENT_FLOOR)
}

/// The data phase of a test's sender: writes to `s` until `time` has passed or `max_bytes`
/// went out — or, with `stop_early`, its reading is made ([`reading_made`]) — reading TCP_INFO
/// as it goes (startup, then paced; see the module docs), with the unsent data bounded.
/// `on_progress` gets a [`Tick`] a few times a second. Err: the bytes sent before a write
/// failed, and why.
pub fn send(
    s: &TcpStream,
    time: Duration,
    max_bytes: u64,
    stop_early: bool,
    on_progress: &mut dyn FnMut(Tick),
) -> Result<Sent, (u64, std::io::Error)> {
    // A short write timeout: the loop samples and stops on time while the kernel holds it.
    s.set_write_timeout(Some(SAMPLE_EVERY)).map_err(|e| (0, e))?;
    let mut sampler = Sampler {
        stop_early,
        ..Sampler::default()
    };
    if sockopt::set_notsent_lowat(s, UNSENT_FLOOR).is_ok() {
        sampler.unsent = UNSENT_FLOOR;
    }
    let (bytes, elapsed) = send_data(s, time, max_bytes, &mut |sent, t| sampler.tick(s, sent, t, on_progress))?;
    let end = super::tcpinfo::read(s);
    if let Some(i) = &end {
        sampler.samples.push(Sample::of(elapsed, i));
    }
    on_progress(sampler.progress(bytes, elapsed));
    let reading = end.map_or_else(Reading::default, |i| {
        let mut r = read_samples(
            &sampler.samples,
            i.min_rtt_ms(),
            sampler.left_startup_at,
            sampler.paced_at,
        );
        if let Some(b) = i.breakdown(u64::try_from(elapsed.as_micros()).ok()) {
            r.rwnd_limited_pct = Some(b.rwnd_limited_pct);
            r.sndbuf_limited_pct = Some(b.sndbuf_limited_pct);
        }
        r.made = sampler.made;
        r
    });
    Ok(Sent {
        bytes,
        elapsed,
        reading,
        tcp_info: end.is_some(),
    })
}

/// The plain data phase: writes to `s` until `time` has passed or `max_bytes` went out, or
/// `tick(bytes sent, time sending)`, called after every write, says to stop (false). `s` must
/// have a short write timeout (its length is how late the test may end with the send buffer
/// full). Returns the bytes sent and the time it took; a write error comes with the bytes sent
/// before it.
pub fn send_data(
    s: &TcpStream,
    time: Duration,
    max_bytes: u64,
    tick: &mut dyn FnMut(u64, Duration) -> bool,
) -> Result<(u64, Duration), (u64, std::io::Error)> {
    use std::io::Write as _;
    let chunk = vec![0u8; CHUNK];
    let start = Instant::now();
    let mut sent = 0u64;
    let mut w = s;
    while start.elapsed() < time && sent < max_bytes {
        let n = usize::try_from(max_bytes - sent).unwrap_or(usize::MAX).min(chunk.len());
        match w.write(&chunk[..n]) {
            Ok(n) => sent += n as u64,
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut | std::io::ErrorKind::Interrupted
                ) => {}
            Err(e) => return Err((sent, e)),
        }
        if !tick(sent, start.elapsed()) {
            break;
        }
    }
    Ok((sent, start.elapsed()))
}

/// The sender's congestion control and send buffer for a test, where this end may set them;
/// what could not be done, as notes for the caller to word.
#[derive(Debug, Default)]
pub struct SenderSetup {
    /// The congestion control the flow runs with (Linux).
    pub cc: Option<String>,
    /// Asked for `cc` and could not have it: why.
    pub cc_refused: Option<String>,
    /// The send buffer the kernel reports after forcing, or None when not forced.
    pub sndbuf: Option<u64>,
    /// Asked to force and could not: why (not root, or the kernel refused).
    pub sndbuf_refused: Option<String>,
}

/// Sets the congestion control `cc` (when given) and forces the send buffer to `sndbuf`
/// bytes (when above 0) on a test's sending socket, before any data.
pub fn set_up_sender(s: &TcpStream, cc: Option<&str>, sndbuf: u64) -> SenderSetup {
    let mut out = SenderSetup::default();
    if let Some(cc) = cc
        && let Err(e) = sockopt::set_congestion(s, cc)
    {
        out.cc_refused = Some(e.to_string());
    }
    out.cc = sockopt::congestion(s);
    if sndbuf > 0 {
        match sockopt::force_buffer(s, Buffer::Send, sndbuf) {
            Ok(Some(got)) => out.sndbuf = Some(got),
            Ok(None) => out.sndbuf_refused = Some("not permitted: a normal user cannot force a buffer".into()),
            Err(e) => out.sndbuf_refused = Some(e.to_string()),
        }
    }
    out
}

// ------------------------------------------------------------------------------ receiver

/// What the receive loop counted.
#[derive(Debug, Clone, Default)]
pub struct Received {
    pub bytes: u64,
    /// When the first payload byte came.
    pub first: Option<Instant>,
    /// When counting stopped: the end of the data, or the cutoff.
    pub end: Option<Instant>,
    /// The cutoff came before the end of the data: what came after it was not counted.
    pub cut: bool,
    /// The largest receive window this end advertised (Linux 6.2+), bytes.
    pub rcv_wnd: Option<u64>,
    /// The largest share of its receive buffer it advertised as window, and the buffer
    /// (SO_RCVBUF) at that moment, bytes.
    pub share: Option<(f64, u64)>,
    /// When the window was last sampled.
    sampled: Option<Instant>,
}

impl Received {
    /// From the first payload byte to the end of counting.
    pub fn duration(&self) -> Duration {
        match (self.first, self.end) {
            (Some(f), Some(e)) => e.saturating_duration_since(f),
            _ => Duration::ZERO,
        }
    }

    /// The window share rounded to 1/1000, as the result line carries it.
    pub fn window_share(&self) -> Option<f64> {
        self.share.map(|(s, _)| (s * 1000.0).round() / 1000.0)
    }

    /// Counts `n` bytes just read from `s`, sampling its advertised window now and then
    /// (every 20 ms with `share`, which a path test reads at its peak; else every 100 ms).
    fn add(&mut self, n: usize, s: &TcpStream, share: bool) {
        let now = Instant::now();
        self.first.get_or_insert(now);
        self.bytes += n as u64;
        let every = Duration::from_millis(if share { 20 } else { 100 });
        if self.sampled.is_none_or(|t| now.duration_since(t) >= every) {
            self.sampled = Some(now);
            let w = advertised_window(s);
            self.rcv_wnd = self.rcv_wnd.max(w);
            if share && let (Some(w), Some(b)) = (w, sockopt::buffer(s, Buffer::Receive).ok().filter(|&b| b > 0)) {
                #[allow(clippy::cast_precision_loss)]
                let r = w as f64 / b as f64;
                if self.share.is_none_or(|(best, _)| r > best) {
                    self.share = Some((r, b));
                }
            }
        }
    }
}

/// Why the receive loop ended before the end of the data or its cutoff.
#[derive(Debug)]
pub enum ReceiveError {
    /// Nothing came for the idle time (the wait, s).
    Silent(Duration),
    Io(std::io::Error),
}

/// Reads the data on `s` until the sender's end of it (Ok, not cut) or `cutoff` (Ok, cut:
/// what came by then), with the sender never silent for `idle`; `share`: sample the window
/// share (a path test). `on_progress` gets the bytes received and the time since the first a
/// few times a second. Err: what was counted, and why it stopped.
pub fn receive(
    s: &TcpStream,
    cutoff: Instant,
    idle: Duration,
    share: bool,
    on_progress: &mut dyn FnMut(Tick),
) -> Result<Received, (Received, ReceiveError)> {
    use std::io::Read as _;
    let mut buf = vec![0u8; 256 * 1024];
    let mut got = Received::default();
    let mut timeout = Duration::ZERO;
    let mut r = s;
    let mut progress_at = Instant::now();
    loop {
        if progress_at.elapsed() >= PROGRESS_EVERY {
            progress_at = Instant::now();
            on_progress(Tick::moved(
                got.bytes,
                got.first.map_or(Duration::ZERO, |f| f.elapsed()),
            ));
        }
        let now = Instant::now();
        let left = cutoff.saturating_duration_since(now);
        if left.is_zero() {
            got.end = Some(now);
            got.cut = true;
            return Ok(got);
        }
        let wait = left.min(idle);
        if wait != timeout {
            if let Err(e) = s.set_read_timeout(Some(wait)) {
                return Err((got, ReceiveError::Io(e)));
            }
            timeout = wait;
        }
        match r.read(&mut buf) {
            Ok(0) => {
                got.end = Some(Instant::now());
                return Ok(got);
            }
            Ok(n) => got.add(n, s, share),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            // A wait cut short by the cutoff ends at the top of the loop; a full one is silence.
            Err(e) if matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut) => {
                if wait >= idle {
                    return Err((got, ReceiveError::Silent(idle)));
                }
            }
            Err(e) => return Err((got, ReceiveError::Io(e))),
        }
    }
}

/// Reads and drops what still comes on `s` until the sender's end of it or `until`: after a
/// cut, so the sender's backlog is taken and the connection ends with a FIN, not a reset
/// (which could cost the peer the result line it has not read yet).
pub fn drain(s: &TcpStream, until: Instant) {
    use std::io::Read as _;
    let mut buf = vec![0u8; 256 * 1024];
    let mut r = s;
    loop {
        let left = until.saturating_duration_since(Instant::now());
        if left.is_zero() || s.set_read_timeout(Some(left)).is_err() {
            return;
        }
        match r.read(&mut buf) {
            Ok(0) => return,
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(_) => return,
        }
    }
}

/// The receive window this end advertises now (Linux 6.2+), bytes.
#[cfg(target_os = "linux")]
fn advertised_window(s: &TcpStream) -> Option<u64> {
    super::tcpinfo::get(s)
        .ok()
        .map(|i| u64::from(i.tcpi_rcv_wnd))
        .filter(|&w| w > 0)
}

#[cfg(not(target_os = "linux"))]
fn advertised_window(_s: &TcpStream) -> Option<u64> {
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(ms: u64, rate_mbit: Option<f64>, srtt: f64, segs: u64, retrans: u64) -> Sample {
        Sample {
            t: Duration::from_millis(ms),
            delivery_bps: rate_mbit.map(|r| r * 1e6),
            app_limited_bps: None,
            srtt_ms: srtt,
            in_flight_bytes: None,
            segs_out: segs,
            retrans,
            min_rtt_ms: 50.0,
            recovering: false,
            dsack_dups: 0,
            reord_seen: 0,
            delivered_bytes: segs * 1448,
            mss: 1448,
        }
    }

    /// A series as the sampler records it every 20 ms: `mbit` delivered through a path of
    /// `rtt_ms`, paced from `paced_ms` on (its queue drained), `lost(t_ms)` the retransmissions
    /// so far at each sample.
    fn series(rtt_ms: f64, mbit: f64, paced_ms: u64, until_ms: u64, lost: &dyn Fn(u64) -> u64) -> Vec<Sample> {
        (1..=until_ms / 20)
            .map(|i| {
                let ms = i * 20;
                #[allow(
                    clippy::cast_possible_truncation,
                    clippy::cast_sign_loss,
                    clippy::cast_precision_loss
                )]
                let segs = (mbit * 1e6 / 8.0 / 1448.0 * ms as f64 / 1000.0) as u64;
                Sample {
                    min_rtt_ms: rtt_ms,
                    ..sample(
                        ms,
                        Some(mbit),
                        if ms < paced_ms { rtt_ms * 1.5 } else { rtt_ms },
                        segs,
                        lost(ms),
                    )
                }
            })
            .collect()
    }

    /// The stop rule on recorded series (issue 45): a reading is made only where the rest of
    /// the test could not turn the class.
    #[test]
    fn a_test_ends_once_its_loss_decides_the_class_and_not_before() {
        let made_at = |v: &[Sample], paced: u64, best: f64| {
            (1..=v.len()).find_map(|n| reading_made(&v[..n], Some(Duration::from_millis(paced)), best * 1e6))
        };
        // 10 ms, 1 Gbit/s, clean: CUBIC holds it up to 0.00114 % loss (0.00073 % at 1.25 × its
        // BDP); no retransmission in the ~410,000 segments of 4.8 s after pacing bounds the loss
        // below that.
        let clean = series(10.0, 1000.0, 300, 10_000, &|_| 0);
        let m = made_at(&clean, 300, 1000.0).expect("made");
        assert!(!m.lossy && m.retransmitted == 0, "{m:?}");
        assert!((4.0..6.0).contains(&m.at_s), "{m:?}");
        assert!((m.limit_pct - 0.00114).abs() < 0.0001, "{m:?}");
        let m_clean_at = m.at_s;
        // 150 ms, 500 Mbit/s, clean: CUBIC's limit is 0.00013 %, which ten seconds cannot bound:
        // the test runs to its time, as before.
        let long = series(150.0, 500.0, 3000, 12_000, &|_| 0);
        assert_eq!(made_at(&long, 3000, 500.0), None);
        // The same path at 0.01 % loss: lossy, surely, once a few dozen are lost.
        let lossy = series(150.0, 500.0, 3000, 12_000, &|ms| ms.saturating_sub(3300) * 43 / 1000);
        let m = made_at(&lossy, 3000, 500.0).expect("made");
        assert!(m.lossy && m.retransmitted >= LOSS_SEEN_MIN, "{m:?}");
        assert!(m.at_s < 6.0, "{m:?}");
        // Still in startup (never paced): no reading is made.
        assert_eq!(
            (1..=clean.len()).find_map(|n| reading_made(&clean[..n], None, 1e9)),
            None
        );
        // Loss near the limit (0.0011 % on the 10 ms path): neither side is sure; runs to its
        // time.
        let near = series(10.0, 1000.0, 300, 10_000, &|ms| ms.saturating_sub(300) * 95 / 100_000);
        assert_eq!(made_at(&near, 300, 1000.0), None);
        // Bursty loss that a shared queue causes reads as loss: a burst of 40 at once on the
        // long path decides it lossy, as the whole test would.
        let burst = series(150.0, 500.0, 3000, 12_000, &|ms| if ms > 5000 { 40 } else { 0 });
        assert!(made_at(&burst, 3000, 500.0).is_some_and(|m| m.lossy));
        // A delivery rate still moving: the clean 10 ms path whose delivery rate doubled each
        // second until it reached the line at 5 s (a flow still finding its rate) is read only
        // once the last two 0.75 s delivered alike, though its loss was decided before.
        let line = 125e6;
        #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
        let settle = |t: f64| {
            let ramp = |t: f64| line / std::f64::consts::LN_2 * ((t - 5.0).exp2() - (-5.0f64).exp2());
            (if t < 5.0 { ramp(t) } else { ramp(5.0) + line * (t - 5.0) }) as u64
        };
        let settling: Vec<Sample> = clean
            .iter()
            .map(|x| Sample {
                delivered_bytes: settle(x.t.as_secs_f64()),
                ..*x
            })
            .collect();
        let s = made_at(&settling, 300, 1000.0).expect("made once it settles");
        assert!(!s.lossy && s.at_s > m_clean_at.max(5.3), "{s:?}");
        // One still rising (its delivery rate doubling each second) is never read: the test runs
        // to its bound.
        let rising: Vec<Sample> = clean
            .iter()
            .map(|x| Sample {
                #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
                delivered_bytes: (1e6 * (x.t.as_secs_f64().exp2() - 1.0)) as u64,
                ..*x
            })
            .collect();
        assert_eq!(made_at(&rising, 300, 1000.0), None);
        // A LAN (recorded on the lab's fleet: a floor of 12 µs, the paced phase at 0.19 ms,
        // 100 Mbit/s): drained once the paced RTT is within a millisecond of the floor, and
        // read clean as the 10 ms path is — where before it was never drained, and ran to its
        // bound unmeasured.
        let lan: Vec<Sample> = series(0.19, 100.0, 60, 10_000, &|_| 0)
            .into_iter()
            .map(|x| Sample { min_rtt_ms: 0.012, ..x })
            .collect();
        let m = made_at(&lan, 60, 100.0).expect("a LAN's reading is made");
        assert!(!m.lossy && m.at_s < 2.0, "{m:?}");
        // Startup's queue not yet drained (the paced phase still 3 ms above the floor): not read.
        let queued: Vec<Sample> = lan.iter().map(|x| Sample { srtt_ms: 3.0, ..*x }).collect();
        assert_eq!(made_at(&queued, 60, 100.0), None);
    }

    #[test]
    fn the_delivered_rates_count_what_the_path_let_through_retransmissions_included() {
        // Every 100 ms at 50 ms: 1.25 MB delivered in each of the first 10 (unpaced; the first
        // retransmission read at 300 ms), 250 kB after.
        let mut delivered = 0;
        let samples: Vec<Sample> = (0..=20)
            .map(|i: u64| {
                delivered += match i {
                    0 => 0,
                    1..=10 => 1_250_000,
                    _ => 250_000,
                };
                Sample {
                    delivered_bytes: delivered,
                    ..sample(i * 100, Some(100.0), 50.0, 10 * i, i.saturating_sub(2))
                }
            })
            .collect();
        let s = shape(&samples, 50.0, Some(Duration::from_millis(1000)));
        let paced = s.paced_delivered_bps.expect("a paced rate");
        assert!((paced - 20e6).abs() < 1.0, "{paced}");
        // Startup from its first retransmission (300 ms) to a round trip into the paced
        // phase: the readings up to 1,000 ms (the next is 100 ms on).
        let startup = s.startup_delivered_bps.expect("a startup rate");
        assert!((startup - 100e6).abs() < 1.0, "{startup}");
        // A paced phase shorter than half a second: none; and with no paced phase, startup
        // runs to the end.
        let s = shape(&samples, 50.0, Some(Duration::from_millis(1700)));
        assert_eq!(s.paced_delivered_bps, None);
        let unpaced = shape(&samples, 50.0, None);
        assert_eq!(unpaced.paced_delivered_bps, None);
        let all = unpaced.startup_delivered_bps.expect("a rate");
        assert!((all - (7.0 * 1.25e6 + 10.0 * 250e3) * 8.0 / 1.7).abs() < 1.0, "{all}");
        // Startup's drops read within two round trips of the paced phase: too short a span.
        let late: Vec<Sample> = samples
            .iter()
            .map(|x| Sample {
                retrans: u64::from(x.t >= Duration::from_millis(1000)),
                ..*x
            })
            .collect();
        assert_eq!(
            shape(&late, 50.0, Some(Duration::from_millis(1000))).startup_delivered_bps,
            None
        );
        // The queue startup built (srtt above the lowest 50 ms): 10 ms until 500 ms, 40 ms
        // after, the highest. Counted from its first drop with the queue at half of that: from
        // 600 ms (500 ms has 10 ms, under half of 40) to 1,000 ms, 1.25 MB each 100 ms.
        let queued: Vec<Sample> = samples
            .iter()
            .map(|x| Sample {
                srtt_ms: if x.t <= Duration::from_millis(500) { 60.0 } else { 90.0 },
                ..*x
            })
            .collect();
        let s = shape(&queued, 50.0, Some(Duration::from_millis(1000)));
        let full = s.full_queue_delivered_bps.expect("a full-queue rate");
        assert!((full - 100e6).abs() < 1.0, "{full}");
        assert_eq!(
            shape(&queued, 50.0, Some(Duration::from_millis(600))).full_queue_delivered_bps,
            None,
            "paced from 600 ms: one reading, no span"
        );
        // No queue of 2 ms or more (a policer's path): none.
        assert_eq!(
            s.startup_delivered_bps,
            shape(&samples, 50.0, Some(Duration::from_millis(1000))).startup_delivered_bps
        );
        let flat: Vec<Sample> = samples.iter().map(|x| Sample { srtt_ms: 51.0, ..*x }).collect();
        assert_eq!(
            shape(&flat, 50.0, Some(Duration::from_millis(1000))).full_queue_delivered_bps,
            None
        );
        // Nothing lost: no drop to count from.
        let clean: Vec<Sample> = samples.iter().map(|x| Sample { retrans: 0, ..*x }).collect();
        assert_eq!(
            shape(&clean, 50.0, Some(Duration::from_millis(1000))).startup_delivered_bps,
            None
        );
    }

    #[test]
    fn the_shape_tells_loss_at_the_base_rtt_from_loss_of_a_full_queue() {
        // Paced from 1 s at 50 ms: a policer's or random loss comes at the base RTT, and the
        // paced flow's RTT stays at it.
        let at_base = [
            sample(0, None, 50.0, 10, 0),
            sample(500, Some(100.0), 51.0, 5_000, 30),
            sample(1000, Some(80.0), 50.0, 10_000, 60),
            sample(1500, Some(80.0), 50.5, 14_000, 61),
            sample(2000, Some(81.0), 50.0, 18_000, 63),
            sample(2500, Some(79.0), 50.2, 22_000, 63),
            sample(3000, Some(80.0), 50.0, 26_000, 64),
            sample(3500, Some(80.0), 50.1, 30_000, 64),
        ];
        let s = shape(&at_base, 50.0, Some(Duration::from_millis(1000)));
        assert!(s.loss_queue_ms.is_some_and(|q| q < 2.0), "{s:?}");
        assert_eq!(s.steady_rtt_ms, Some(50.1));
        assert_eq!((s.startup_retrans_segs, s.startup_segs_out), (Some(60), Some(10_000)));
        assert!(s.steady_rate_spread.is_some_and(|x| x < 0.05), "{s:?}");
        // Someone else's queue: the paced flow's RTT stands 100 ms above the lowest, and it
        // loses when the queue overflows, at its top.
        let shared: Vec<Sample> = at_base
            .iter()
            .enumerate()
            .map(|(i, s)| Sample {
                srtt_ms: if i == 0 {
                    50.0
                } else {
                    150.0 + if s.retrans > 0 { 40.0 } else { 0.0 }
                },
                ..*s
            })
            .collect();
        let s = shape(&shared, 50.0, Some(Duration::from_millis(1000)));
        assert!(s.loss_queue_ms.is_some_and(|q| q >= 130.0), "{s:?}");
        assert!(s.steady_rtt_ms.is_some_and(|r| r >= 150.0), "{s:?}");
        // Reordering: the retransmissions after startup the receiver got twice.
        let mut reordered = at_base;
        reordered[7].dsack_dups = 3;
        reordered[7].reord_seen = 9;
        let s = shape(&reordered, 50.0, Some(Duration::from_millis(1000)));
        assert_eq!((s.steady_spurious_segs, s.reordering), (Some(3), Some(9)));
    }

    fn recovering(s: Sample) -> Sample {
        Sample { recovering: true, ..s }
    }

    #[test]
    fn startup_losses_are_not_the_paths_loss() {
        // 50 ms path: the rate reaches 500 Mbit/s at 1 s; the queue overflows in startup (40
        // retransmissions by 1.2 s); paced from 1.3 s, 2 more after that.
        let samples = [
            sample(0, None, 50.0, 10, 0),
            sample(500, Some(200.0), 60.0, 20_000, 0),
            sample(1000, Some(480.0), 95.0, 60_000, 0),
            sample(1200, Some(500.0), 98.0, 70_000, 40),
            sample(1400, Some(470.0), 60.0, 80_000, 40),
            // Still draining the queue: not yet steady.
            sample(1450, Some(470.0), 61.0, 85_000, 40),
            sample(3000, Some(490.0), 52.0, 150_000, 41),
            sample(5000, Some(495.0), 51.0, 250_000, 42),
        ];
        let paced = Some(Duration::from_millis(1300));
        let t = read_samples(&samples, 50.0, paced, paced);
        assert_eq!((t.segs_out, t.retrans_segs), (Some(250_000), Some(42)));
        // Steady from 1.3 s + 2 × 50 ms = 1.4 s, once the RTT is within 1.2 × 50 ms: the 1.4 s
        // sample on (the one at 1.45 s, 61 ms, would not have been).
        assert_eq!((t.steady_segs_out, t.steady_retrans_segs), (Some(170_000), Some(2)));
        assert_eq!(t.loaded_rtt_ms, Some(98.0));
        assert_eq!(t.min_rtt_ms, Some(50.0));
        // The unpaced readings from 1 s: median of 480, 500.
        assert_eq!(t.delivery_rate_bps, Some(500e6));
        assert!(!t.in_startup);
        assert_eq!(t.check(), Ok(()));
    }

    /// The queue has drained but the sender is still resending startup's last losses: those are
    /// not the path's; the steady state starts once it is out of recovery.
    #[test]
    fn the_repairs_of_startups_losses_are_not_the_paths_loss() {
        let samples = [
            sample(1000, Some(480.0), 95.0, 60_000, 0),
            sample(1200, Some(500.0), 98.0, 70_000, 3_000),
            // Drained, still in recovery: 40 of startup's losses not yet resent.
            recovering(sample(1400, Some(470.0), 58.0, 80_000, 3_260)),
            sample(1420, Some(470.0), 57.0, 81_000, 3_300),
            sample(5000, Some(495.0), 51.0, 250_000, 3_300),
        ];
        let paced = Some(Duration::from_millis(1300));
        let t = read_samples(&samples, 50.0, paced, paced);
        assert_eq!((t.steady_segs_out, t.steady_retrans_segs), (Some(169_000), Some(0)));
        // A path so lossy the sender never leaves recovery: the first drained sample.
        let lossy: Vec<Sample> = samples.iter().map(|s| recovering(*s)).collect();
        let t = read_samples(&lossy, 50.0, paced, paced);
        assert_eq!((t.steady_segs_out, t.steady_retrans_segs), (Some(170_000), Some(40)));
        // Nor one that leaves it for a moment only near the end, more than four round trips
        // after the queue drained: that moment would leave the loss of 1,000 segments.
        let mut late = lossy.clone();
        late.insert(4, recovering(sample(2000, Some(490.0), 51.0, 110_000, 3_300)));
        late.insert(5, sample(4900, Some(490.0), 51.0, 249_000, 3_300));
        let t = read_samples(&late, 50.0, paced, paced);
        assert_eq!((t.steady_segs_out, t.steady_retrans_segs), (Some(170_000), Some(40)));
    }

    #[test]
    fn startup_ends_when_the_rate_stops_growing_for_four_round_trips() {
        let mut p = Plateau::default();
        let mut h = Vec::new();
        let mut paced = None;
        for (ms, rate) in [
            (100, 50.0),
            (200, 200.0),
            (300, 400.0),
            (350, 420.0),
            (400, 430.0),
            (500, 410.0),
            (560, 420.0),
        ] {
            let s = sample(ms, Some(rate), 60.0, 0, 0);
            if paced.is_none() {
                paced = p.see(&s, &h).map(|r| (ms, r));
            }
            h.push(s);
        }
        // 400 Mbit/s at 300 ms is the last 10 % growth; 4 × 50 ms later, at 500 ms: paced at
        // 0.8 × the median of 400, 420, 430, 410 (420 Mbit/s) = 42 MB/s.
        assert_eq!(paced, Some((500, 42_000_000)));
    }

    /// A stall is no queue: an RTT the flow's bytes in flight could not have queued at its
    /// rate is left out of the loaded RTT. 50 ms, 200 Mbit/s (a BDP of 1.25 MB): 2.5 MB in
    /// flight at 98 ms is a queue of 1.2 MB; 1055 ms with 2.5 MB in flight would be 25 MB.
    #[test]
    fn the_loaded_rtt_is_one_the_flow_could_queue() {
        let with = |s: Sample, bytes: u64| Sample {
            in_flight_bytes: Some(bytes),
            ..s
        };
        let samples = [
            with(sample(500, Some(190.0), 60.0, 20_000, 0), 1_500_000),
            with(sample(1000, Some(200.0), 98.0, 60_000, 0), 2_500_000),
            with(sample(1200, Some(200.0), 1055.0, 70_000, 40), 2_500_000),
            with(sample(1400, Some(200.0), 52.0, 80_000, 40), 1_300_000),
        ];
        let left = Some(Duration::from_millis(1000));
        let t = read_samples(&samples, 50.0, left, None);
        assert_eq!(t.delivery_rate_bps, Some(200e6));
        assert_eq!(t.loaded_rtt_ms, Some(98.0));
        // Without in-flight counts (or a rate), every RTT counts.
        let bare: Vec<Sample> = samples
            .iter()
            .map(|s| Sample {
                in_flight_bytes: None,
                ..*s
            })
            .collect();
        assert_eq!(read_samples(&bare, 50.0, left, None).loaded_rtt_ms, Some(1055.0));
        // A queue of exactly what is in flight still counts: 2.5 MB at 200 Mbit/s is 100 ms.
        let full = [with(sample(1000, Some(200.0), 150.0, 60_000, 0), 2_500_000)];
        assert_eq!(read_samples(&full, 50.0, left, None).loaded_rtt_ms, Some(150.0));
    }

    /// A sender that never had data queued past what the path took (on loopback, starved of
    /// CPU beside a lab: 170,000 segments and not one rate reading that was not
    /// application-limited) confirms the highest rate it sent at as a lower bound, and says
    /// so; one reading that was not application-limited sets the rate instead.
    #[test]
    fn a_sender_application_limited_throughout_confirms_what_it_sent_at() {
        let sent_at = |ms, mbit| Sample {
            app_limited_bps: Some(mbit * 1e6),
            ..sample(ms, None, 0.05, ms * 100, 0)
        };
        let samples = [sent_at(10, 9_000.0), sent_at(20, 31_000.0), sent_at(30, 24_000.0)];
        let t = read_samples(&samples, 0.02, None, None);
        assert!(t.in_startup && t.app_limited, "{t:?}");
        assert_eq!(t.delivery_rate_bps, Some(31e9));
        assert_eq!(t.steady_segs_out, None);
        let mut mixed = samples.to_vec();
        mixed.push(sample(40, Some(20_000.0), 0.05, 4_000, 0));
        let t = read_samples(&mixed, 0.02, None, None);
        assert!(t.in_startup && !t.app_limited, "{t:?}");
        assert_eq!(t.delivery_rate_bps, Some(20e9));
    }

    /// A test that ends while the rate still grows (a long path, a short test) confirms the
    /// highest rate it reached as a lower bound, and no loss: the retransmissions of a
    /// startup are its own overshoot.
    #[test]
    fn a_test_still_in_startup_confirms_its_best_rate_as_a_lower_bound() {
        let samples = [
            sample(100, Some(20.0), 50.0, 100, 0),
            sample(200, Some(40.0), 55.0, 300, 0),
            sample(300, Some(80.0), 70.0, 900, 3),
            sample(400, Some(75.0), 90.0, 1500, 9),
        ];
        let t = read_samples(&samples, 50.0, None, None);
        assert!(t.in_startup);
        assert_eq!(t.delivery_rate_bps, Some(80e6));
        assert_eq!(t.steady_segs_out, None);
        // The whole test's counts are kept, but they are no reading of the path's loss.
        assert_eq!((t.segs_out, t.retrans_segs), (Some(1500), Some(9)));
        // No rate reading at all: no rate, still in startup.
        let t = read_samples(&[sample(100, None, 50.0, 10, 0)], 50.0, None, None);
        assert!(t.in_startup && !t.app_limited && t.delivery_rate_bps.is_none());
        // Left startup but could not be paced: the plateau's rate, no loss reading.
        let left = Some(Duration::from_millis(300));
        let t = read_samples(&samples, 50.0, left, None);
        assert!(!t.in_startup);
        assert_eq!(t.delivery_rate_bps, Some(80e6));
        assert_eq!(t.steady_segs_out, None);
        // No reading before pacing began (a sampler starved on a busy host): the paced
        // readings give the rate rather than none.
        let early = Some(Duration::from_millis(50));
        let t = read_samples(&samples, 50.0, early, early);
        assert_eq!(t.delivery_rate_bps, Some(80e6));
    }

    #[test]
    fn a_flow_held_by_a_buffer_says_which() {
        let r = |rwnd, snd| Reading {
            rwnd_limited_pct: Some(rwnd),
            sndbuf_limited_pct: Some(snd),
            ..Reading::default()
        };
        assert_eq!(r(31.0, 2.0).held_by(), Some(LimitedBy::ReceiveWindow));
        assert_eq!(r(5.0, 30.0).held_by(), Some(LimitedBy::SendBuffer));
        // Together past 20 %: the larger names it.
        assert_eq!(r(12.0, 9.0).held_by(), Some(LimitedBy::ReceiveWindow));
        assert_eq!(r(8.0, 7.0).held_by(), None);
        assert_eq!(Reading::default().held_by(), None, "no TCP_INFO, no reading");
    }

    #[test]
    fn a_reading_out_of_range_is_refused() {
        let ok = Reading {
            delivery_rate_bps: Some(1e9),
            segs_out: Some(100),
            retrans_segs: Some(1),
            steady_segs_out: Some(50),
            steady_retrans_segs: Some(0),
            min_rtt_ms: Some(20.0),
            loaded_rtt_ms: Some(30.0),
            rwnd_limited_pct: Some(0.0),
            sndbuf_limited_pct: Some(100.0),
            in_startup: false,
            app_limited: false,
            paced: true,
            made: None,
            shape: Some(Shape {
                steady_rtt_ms: Some(21.0),
                loss_queue_ms: Some(0.5),
                startup_retrans_segs: Some(1),
                startup_segs_out: Some(50),
                steady_spurious_segs: Some(0),
                reordering: Some(0),
                steady_rate_spread: Some(0.1),
                startup_delivered_bps: Some(1.2e6),
                full_queue_delivered_bps: Some(1.1e6),
                paced_delivered_bps: Some(1e6),
            }),
        };
        assert_eq!(ok.check(), Ok(()));
        // A peer's shape is held to what a flow can show too.
        let odd = |s: Shape| {
            Reading {
                shape: Some(s),
                ..ok.clone()
            }
            .check()
        };
        let shape = ok.shape.expect("shape");
        for bad in [
            Shape {
                steady_rtt_ms: Some(-1.0),
                ..shape
            },
            Shape {
                loss_queue_ms: Some(f64::NAN),
                ..shape
            },
            Shape {
                startup_retrans_segs: Some(51),
                ..shape
            },
            Shape {
                steady_spurious_segs: Some(101),
                ..shape
            },
            Shape {
                steady_rate_spread: Some(f64::INFINITY),
                ..shape
            },
            Shape {
                startup_delivered_bps: Some(-1.0),
                ..shape
            },
            Shape {
                full_queue_delivered_bps: Some(2e13),
                ..shape
            },
            Shape {
                paced_delivered_bps: Some(f64::NAN),
                ..shape
            },
        ] {
            assert!(odd(bad).is_err(), "{bad:?}");
        }
        for bad in [
            Reading {
                app_limited: true,
                ..ok.clone()
            },
            Reading {
                delivery_rate_bps: Some(2e13),
                ..ok.clone()
            },
            Reading {
                delivery_rate_bps: Some(-1.0),
                ..ok.clone()
            },
            Reading {
                min_rtt_ms: Some(0.0),
                ..ok.clone()
            },
            Reading {
                loaded_rtt_ms: Some(1e9),
                ..ok.clone()
            },
            Reading {
                rwnd_limited_pct: Some(101.0),
                ..ok.clone()
            },
            Reading {
                retrans_segs: Some(101),
                ..ok.clone()
            },
            Reading {
                steady_segs_out: Some(101),
                steady_retrans_segs: Some(0),
                ..ok.clone()
            },
        ] {
            assert!(bad.check().is_err(), "{bad:?}");
        }
    }

    #[test]
    fn the_unsent_bound_follows_the_rate() {
        // 30 Mbit/s: 50 ms is 187.5 KB.
        assert_eq!(unsent_bound(3_750_000.0), 187_500);
        // Slow or unknown: the floor.
        assert_eq!(unsent_bound(0.0), UNSENT_FLOOR);
        assert_eq!(unsent_bound(1e5), UNSENT_FLOOR);
        // Never past what the option takes.
        assert_eq!(unsent_bound(1e15), i32::MAX as u64);
    }

    /// The receiver stops at its cutoff and reports what came by then, and a sender that
    /// ends its data is counted to the end.
    #[test]
    fn the_receiver_counts_to_the_end_or_its_cutoff() {
        use std::io::Write as _;
        let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        let mut tx = TcpStream::connect(l.local_addr().expect("addr")).expect("connect");
        let (rx, _) = l.accept().expect("accept");
        tx.write_all(&[1u8; 100_000]).expect("data");
        tx.shutdown(std::net::Shutdown::Write).expect("end");
        let got = receive(
            &rx,
            Instant::now() + Duration::from_secs(5),
            Duration::from_secs(5),
            true,
            &mut |_| {},
        )
        .expect("all");
        assert_eq!((got.bytes, got.cut), (100_000, false));

        // A sender that keeps going: cut at the cutoff, with what came by then.
        let mut tx = TcpStream::connect(l.local_addr().expect("addr")).expect("connect");
        let (rx, _) = l.accept().expect("accept");
        let writer = std::thread::spawn(move || {
            let t = Instant::now();
            while t.elapsed() < Duration::from_millis(800) {
                if tx.write_all(&[1u8; 1000]).is_err() {
                    break;
                }
                std::thread::sleep(Duration::from_millis(5));
            }
        });
        let t = Instant::now();
        let got = receive(
            &rx,
            t + Duration::from_millis(300),
            Duration::from_secs(5),
            false,
            &mut |_| {},
        )
        .expect("cut");
        // Cut (the writer goes on to 800 ms), at its cutoff with room for this VM's stalls.
        assert!(got.cut && got.bytes > 0, "{got:?}");
        assert!(t.elapsed() < Duration::from_secs(2), "{:?}", t.elapsed());
        drain(&rx, Instant::now() + Duration::from_secs(5));
        writer.join().expect("writer");

        // A silent sender loses the test at its idle time.
        let _tx = TcpStream::connect(l.local_addr().expect("addr")).expect("connect");
        let (rx, _) = l.accept().expect("accept");
        let e = receive(
            &rx,
            Instant::now() + Duration::from_secs(5),
            Duration::from_millis(200),
            false,
            &mut |_| {},
        );
        assert!(matches!(e, Err((_, ReceiveError::Silent(_)))), "{e:?}");
    }
}
