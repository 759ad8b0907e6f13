//! The decision table: from the TCP evidence about a path (a path test, else what this host's
//! kernel knows) to the class the advice is sized for, the congestion control, the receive
//! window share the receive buffer is sized with, the rate, and `tcp_notsent_lowat` — each
//! with the evidence behind it as typed [`Observation`]s. The words are `words`'s, which
//! imports this module and never the reverse: a renderer chooses its own, and tests assert on
//! types.
//!
//! | evidence | class | congestion control, buffers |
//! |---|---|---|
//! | `--loss-recovery` | lossy (given) | BBR, 5 × BDP |
//! | `--clean-path` | clean (given) | CUBIC, 2 × BDP + headroom |
//! | loss after startup that holds CUBIC below the path's BDP | lossy | BBR, 5 × BDP |
//! | a queue under [`QUEUE_DEEP_BDP`] × BDP filled by the test | shallow | BBR, 5 × BDP |
//! | no loss and a deep queue | clean | CUBIC, 2 × BDP + headroom |
//! | live flows or cached metrics showing loss | lossy | BBR, 5 × BDP |
//! | nothing measured | not measured | [`UNMEASURED_IS_LOSSY`]: BBR, 6 × BDP |
//!
//! Why the unmeasured default is the lossy class: it is the best worst case over the lab's
//! clean, lossy and shallow paths (BENCHMARKS.md): CUBIC sized for a clean path reached 5.8 %
//! at 150 ms with 0.01 % loss and about a third of the link behind a shallow queue, where BBR
//! loses a few points on a clean path (its ProbeRTT) and nothing elsewhere. Its factor is the
//! heavy-loss one ([`bdp::HEAVY_LOSS_FACTOR`]): the loss may be 1 %, where 5 × BDP fell 6 points
//! behind bbr + 64 MiB on the lab and 6 × came within 1.6; on a clean path the larger maxima
//! cost only memory. Its congestion control is advised even where the running buffers already
//! cover the path, unless the BDP is so small that CUBIC holds it through 1 % loss
//! ([`Decision::cubic_at_risk`]): a buffer that suffices says nothing of the loss.
//!
//! The receive buffer: Linux advertises `buffer × scaling_ratio` (payload / truesize of the
//! receiver's skbs) as window since 6.6; the shipped 2 × sizing assumes a ratio of one half.
//! A measured share — the far end's, from its `tcptune serve`, or this host's own, from its
//! live flows — replaces that half: the window wanted divided by the share.

use serde::Serialize;

use super::sharing::{self, Sharing};
use crate::bdp;
use crate::measure::evidence::{Evidence, HeldBy, Passive, Retest, RetestKind, TcpTest};

/// A queue the test filled to at least this share of the BDP is deep: CUBIC's window, capped by
/// the receive buffer at about 1.1–1.25 × BDP, then never overflows it.
pub const QUEUE_DEEP_BDP: f64 = 0.5;
/// The receive-window share assumed when none was measured (the 2 × BDP of the shipped sizing).
pub const ASSUMED_SHARE: f64 = 0.5;
/// Measured shares are used within these bounds. Below: a misreading. Above one half a share
/// would *lower* the receive maximum under the 2 × (clean) and 5 × (lossy) rules the lab
/// measured, and it costs: at 0.1 % loss 3.9 × BDP (5 × at the lab's share of 0.65) got 82 % of
/// the link where 5 × and more got 95 % (BENCHMARKS.md). So a share only ever raises it.
pub const MIN_SHARE: f64 = 0.25;
pub const MAX_SHARE: f64 = 0.5;
/// With no TCP evidence, size for the lossy class (see the module docs).
pub const UNMEASURED_IS_LOSSY: bool = true;
/// With no TCP evidence, the random loss, %, the path is assumed able to have when choosing
/// the congestion control where the buffers need no raise: where it would hold CUBIC below the
/// BDP ([`Decision::cubic_at_risk`]) BBR is advised all the same (the long paths lose
/// 0.001 % to a few %; at 1 % CUBIC holds about 12 segments at any RTT).
pub const UNMEASURED_LOSS_PCT: f64 = 1.0;
/// Live flows must have sent this much before their retransmissions say anything.
pub const PASSIVE_MIN_BYTES: u64 = 10 << 20;
/// tcp_notsent_lowat: this many milliseconds of the path's rate, within the bounds below.
pub const NOTSENT_LOWAT_MS: f64 = 10.0;
pub const NOTSENT_LOWAT_MIN: u64 = 128 << 10;
pub const NOTSENT_LOWAT_MAX: u64 = 4 << 20;
/// The parallel streams' loss after startup counts as the path's only where their windows
/// together were at most this × BDP: what a one-BDP queue holds (on the lab two streams of 1.26
/// × BDP each overflowed one and lost 258 segments on a path without random loss).
pub const PROBE_LOSS_WINDOW_BDP: f64 = 2.0;
/// A TCP test rate is confirmed by trains within this ratio of it.
pub const CONFIRM_RATIO: f64 = 1.25;

/// The user's word on the class, over any evidence.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Override {
    None,
    /// `--loss-recovery`.
    Lossy,
    /// `--clean-path`.
    Clean,
}

impl Override {
    pub fn from_flags(loss_recovery: bool, clean_path: bool) -> Self {
        match (loss_recovery, clean_path) {
            (true, _) => Self::Lossy,
            (false, true) => Self::Clean,
            _ => Self::None,
        }
    }
}

/// What the evidence says about the path.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum PathClass {
    /// No loss after startup and a deep bottleneck queue.
    Clean,
    /// Random loss (measured, or `--loss-recovery`).
    Lossy,
    /// A bottleneck queue shallower than [`QUEUE_DEEP_BDP`] × BDP.
    Shallow,
    /// Neither loss nor queue measured.
    Unmeasured,
    /// Others share the bottleneck ([`super::sharing::Sharing::Competing`]).
    Shared,
    /// A policer holds the path's rate ([`super::sharing::Sharing::Policed`]).
    Policed,
}

/// The path as the advice sees it before the evidence: its rate, RTT and segment size.
#[derive(Debug, Clone, Copy)]
pub struct PathFacts {
    pub rate_bps: f64,
    pub rtt_ms: f64,
    /// Payload bytes per segment (MTU − 52 with timestamps).
    pub mss: u32,
    /// Whether the advice is for Linux (its profile chooses CUBIC or BBR by the class; the BSDs'
    /// profiles choose their algorithm otherwise), for the words of the decision.
    pub linux: bool,
    /// The packet trains' bottleneck rate (IP level, bit/s), when they read one.
    pub capacity_bps: Option<f64>,
    /// The probes' lowest RTT, ms, taken before the test.
    pub probes_min_ms: Option<f64>,
    /// Others' queue the probes saw move, with no test ([`Sharing::Probed`]).
    pub probed: Option<Sharing>,
}

impl PathFacts {
    /// The BDP in bytes.
    fn bdp_bytes(&self) -> f64 {
        self.rate_bps / 8.0 * self.rtt_ms / 1000.0
    }

    /// The BDP in segments.
    fn bdp_segments(&self) -> f64 {
        self.bdp_bytes() / f64::from(self.mss.max(1))
    }
}

/// One piece of evidence behind the class, as measured: `words` says it.
#[derive(Debug, Clone, PartialEq)]
pub enum Observation {
    /// `--loss-recovery` or `--clean-path`.
    Given(Override),
    /// The test flow was still in startup when the test ended: no loss reading.
    StartupNotLeft { test_s: f64 },
    /// The sender reported no retransmissions per interval (a reverse test against a plain
    /// `iperf3 -s`, whose text gave none): no loss after startup read.
    NoLossCount,
    /// This direction's test read no loss after startup (`loss`) or no queue depth (`queue`):
    /// the other direction's test's reading stands in for it, the path taken as symmetric in
    /// that. The observations that follow it are the other test's.
    OtherDirection { loss: bool, queue: bool },
    /// Loss after startup that holds CUBIC's average window (RFC 9438) below the BDP.
    LossHoldsCubic {
        pct: f64,
        retransmitted: u64,
        segments: u64,
        test_s: f64,
        /// What CUBIC would hold at that loss, bit/s and × BDP.
        cubic_bps: f64,
        cubic_bdps: f64,
    },
    /// Loss after startup too small to hold CUBIC below the BDP.
    LossTooSmall {
        pct: f64,
        retransmitted: u64,
        segments: u64,
    },
    /// Retransmissions after startup that came in bursts (a queue overflowing, not random
    /// loss), left out of the path's loss.
    LossInBursts {
        retransmitted: u64,
        bursts: usize,
        intervals: usize,
    },
    /// No retransmission after startup; `bound_pct`: the loss it rules out at 95 %;
    /// `limit_pct`: the loss at which CUBIC would no longer hold the path. A bound above the
    /// limit could not tell a clean path from one CUBIC fails on: read as no loss, said so.
    NoRetransmission {
        segments: u64,
        test_s: f64,
        bound_pct: f64,
        limit_pct: f64,
    },
    /// The RTT grew under load: a bottleneck queue of `bdps` × BDP.
    Queue { min_ms: f64, loaded_ms: f64, bdps: f64 },
    /// The test was held by a buffer (the receiver's window or the sender's buffer, when the
    /// readings say which), so its flat RTT says nothing of the queue.
    HeldByWindow(Option<HeldBy>),
    /// The test was held by the receiver's `window`; `streams` parallel flows held by it
    /// (iperf3 `-P`, `test_s` seconds) filled the queue instead: the [`Observation::Queue`]
    /// that follows is theirs.
    StreamsFilled { streams: u32, window: u64, test_s: f64 },
    /// The unpaced test's `retransmitted` segments after startup, behind a queue of
    /// `queue_bdps` × BDP that its own flow could overfill, were counted again by a flow paced
    /// at `rate_bps` for `test_s` seconds: the loss observation that follows is that run's.
    PacedAgain {
        retransmitted: u64,
        queue_bdps: f64,
        rate_bps: f64,
        test_s: f64,
    },
    /// The test gave no RTT under load.
    NoLoadedRtt,
    /// This host's live flows to the far end retransmitted `pct` of `sent_bytes`.
    PassiveLoss { pct: f64, sent_bytes: u64 },
    /// The kernel keeps a slow-start threshold below half the BDP for the far end.
    CachedSsthresh { segments: u64, bdps: f64 },
    /// Others share the bottleneck, or a policer holds it ([`Sharing`]).
    Others(Sharing),
    /// `spurious` of the `retransmitted` segments after startup the receiver reported as
    /// duplicates (D-SACK): reordering, left out of the loss.
    Spurious { spurious: u64, retransmitted: u64 },
    /// A test ran, but loss and queue depth were not both measured.
    NotBothMeasured,
    /// No TCP test ran: neither loss nor queue depth was measured.
    NotMeasured,
}

/// The sizing rule the class chose.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rule {
    /// BBR (Linux) and 5 × BDP: for loss, a shallow queue, or `--loss-recovery`.
    LossRecovery,
    /// CUBIC (Linux) and 2 × BDP + headroom: a clean path with a deep queue.
    Clean,
    /// Nothing measured: [`UNMEASURED_IS_LOSSY`]'s rule, the best worst case.
    Unmeasured,
    /// Others share the bottleneck: CUBIC (a fair neighbour to the flows it shares with) and
    /// buffers for the queue they keep standing ([`shared_factor`]).
    Shared,
}

/// Where the receive-window share came from.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum ShareSource {
    /// This host's live flows advertise this share of their receive buffer.
    ThisHost(f64),
    /// The far end's `tcptune serve` read this share in the path test.
    FarEnd(f64),
    /// Not measured: [`ASSUMED_SHARE`].
    Assumed,
}

/// How to measure what was not.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MeasureHint {
    /// A test ran but did not measure both: a longer one (a larger byte cap where the cap cut
    /// it short), with a root `serve` at `on` where the test's buffers held it.
    LongerTest { on: String, cut_by_bytes: bool, held: bool },
    /// No test ran: `tcptune serve` (or iperf3) at `on`.
    RunServe { on: String },
}

/// The decision, and the evidence behind it. Its JSON, with the words, is
/// `words::DecisionJson`'s (the words live apart: deciding imports none of them).
#[derive(Debug, Clone)]
pub struct Decision {
    pub class: PathClass,
    /// The side of the end it sizes.
    pub side: Side,
    /// The direction that side acts on was not tested; the other direction's test decided
    /// (the path taken as symmetric).
    pub borrowed: bool,
    /// Sized and tuned for loss recovery: BBR and [`bdp::loss_factor`] × BDP (else CUBIC and
    /// 2 × BDP).
    pub loss_recovery: bool,
    /// The multiple of the BDP loss recovery sizes for (None when loss-free).
    pub loss_factor: Option<f64>,
    /// Loss after startup, %, and the queue the test filled, × BDP: as measured, if they were.
    pub loss_pct: Option<f64>,
    pub queue_bdp: Option<f64>,
    /// The receive-window share the receive buffer is sized with (the reading, bounded), and
    /// where it came from.
    pub window_share: f64,
    pub share_source: ShareSource,
    /// The rate a TCP test confirmed, bit/s: the sizing uses it instead of the packet trains.
    pub tcp_rate_bps: Option<u64>,
    /// tcp_notsent_lowat for this rate, bytes.
    pub notsent_lowat: u64,
    /// The evidence behind the congestion control and the buffer class, in order.
    pub observations: Vec<Observation>,
    /// The rule the class chose.
    pub rule: Rule,
    /// Whether the advice is for Linux (the rule's words name its algorithms).
    pub linux: bool,
    /// How to measure what was not (None when everything was).
    pub how_to_measure: Option<MeasureHint>,
    /// Nothing measured the loss, and [`UNMEASURED_LOSS_PCT`] of it would hold CUBIC's window
    /// below the BDP: the congestion control is advised even where the buffers suffice (stock
    /// CUBIC kept on a 40 ms / 100 Mbit/s path because its buffers sufficed would reach a few
    /// percent of it at 1 % loss).
    pub cubic_at_risk: bool,
    /// What the test's shape said of others on the path, when it said something.
    pub sharing: Option<Sharing>,
}

pub use crate::bdp::cubic_window_segments;

/// What the evidence showed, before the user's word: the observations and the readings.
#[derive(Debug, Default, Clone)]
struct Reading {
    observations: Vec<Observation>,
    loss_pct: Option<f64>,
    queue_bdp: Option<f64>,
    tcp_rate_bps: Option<u64>,
    /// Loss that holds CUBIC below the BDP (test or passive).
    lossy: bool,
    /// A queue under [`QUEUE_DEEP_BDP`] × BDP.
    shallow: bool,
    /// Loss measured after startup and too small to matter (or none).
    clean_loss: bool,
    /// A queue of at least [`QUEUE_DEEP_BDP`] × BDP.
    deep: bool,
}

/// The TCP evidence as one end of the path sees it: the test in which it sent, the test in
/// which it received, and its own live flows (this host's only).
#[derive(Debug, Clone, Copy, Default)]
pub struct View<'a> {
    pub sending: Option<&'a TcpTest>,
    pub receiving: Option<&'a TcpTest>,
    pub passive: Option<&'a Passive>,
}

impl<'a> View<'a> {
    /// This host's view: it sent in the forward test and received in the reverse one.
    pub fn near(ev: Option<&'a Evidence>) -> Self {
        Self {
            sending: ev.and_then(|e| e.test.as_ref()),
            receiving: ev.and_then(|e| e.reverse.as_ref()),
            passive: ev.and_then(|e| e.passive.as_ref()),
        }
    }

    /// The far end's view of the same tests: it sent in the reverse test.
    pub fn far(ev: Option<&'a Evidence>) -> Self {
        Self {
            sending: ev.and_then(|e| e.reverse.as_ref()),
            receiving: ev.and_then(|e| e.test.as_ref()),
            passive: None,
        }
    }
}

/// Which of an end's buffers a decision sizes: the send side (with the congestion control)
/// follows the test in which that end sent, the receive side the test in which it received.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Side {
    Send,
    Receive,
}

/// Decides for `path` from `ev` as this host sees it, for its sending side (the congestion
/// control and the send buffer), unless the user's `word` says otherwise; `host`: the far
/// end, named in how to measure what was not.
pub fn decide(path: &PathFacts, ev: Option<&Evidence>, word: Override, host: Option<&str>) -> Decision {
    decide_side(path, &View::near(ev), Side::Send, word, host)
}

/// Decides one side of one end: the test of the direction that side acts on (the other
/// direction's when that one was not tested: the path is then taken as symmetric, and
/// [`Decision::borrowed`] says so), else the end's live flows. Where that test read no loss
/// after startup or no queue (a reverse test against a plain `iperf3 -s` reads no RTT; a flow
/// through 1 % loss may not settle within the test), the other direction's reading of what it
/// missed stands in ([`Observation::OtherDirection`]): sizing that side as unmeasured (6 × BDP)
/// when the other direction read the path clean cost 6.5 × BDP on the lab's 250 ms / 50 Mbit/s
/// path, and a shallow queue without its loss sizes 5 ×, where 1 % loss needs 6 ×.
pub fn decide_side(path: &PathFacts, view: &View<'_>, side: Side, word: Override, host: Option<&str>) -> Decision {
    let (own, other) = match side {
        Side::Send => (view.sending, view.receiving),
        Side::Receive => (view.receiving, view.sending),
    };
    let test = own.or(other);
    let mut r = Reading::default();
    if let Some(t) = test {
        read_test(t, path, &mut r);
    } else if let Some(p) = view.passive {
        read_passive(p, path.bdp_segments(), &mut r);
    }
    if let (Some(_), Some(o), Override::None) = (own, other, word)
        && !(r.has_loss() && r.has_queue())
    {
        let mut theirs = Reading::default();
        read_test(o, path, &mut theirs);
        if let Some(filled) = r.filled_from(&theirs) {
            r = filled;
        }
    }
    let sharing = test.filter(|_| word == Override::None).and_then(|t| {
        let before = sharing::Before {
            capacity_bps: path.capacity_bps,
            probes_min_ms: path.probes_min_ms,
            mtu: Some(path.mss + 52),
        };
        sharing::sharing(t, before)
    });
    // Without a test, what the probes saw: others moving a queue.
    let sharing = sharing.or(path.probed.filter(|_| test.is_none() && word == Override::None));
    let (class, rule) = match sharing {
        Some(Sharing::Competing { .. } | Sharing::Probed { .. }) => (PathClass::Shared, Rule::Shared),
        Some(Sharing::Policed { .. }) => (PathClass::Policed, Rule::LossRecovery),
        None => classify(&r, word),
    };
    let mut observations = std::mem::take(&mut r.observations);
    match word {
        Override::None => {}
        w => observations.insert(0, Observation::Given(w)),
    }
    observations.extend(sharing.map(Observation::Others));
    let how_to_measure = (class == PathClass::Unmeasured && word == Override::None).then(|| {
        let on = host.map_or_else(|| "the far end".to_string(), str::to_string);
        let (said, hint) = if let Some(t) = test {
            let hint = MeasureHint::LongerTest {
                on,
                // The test ended at its byte cap well before its time.
                cut_by_bytes: t.limit_bytes > 0 && t.bytes >= t.limit_bytes && t.duration_s < 0.9 * t.limit_s,
                held: t.held_by.is_some() || t.window_limited,
            };
            (Observation::NotBothMeasured, hint)
        } else {
            (Observation::NotMeasured, MeasureHint::RunServe { on })
        };
        observations.push(said);
        hint
    });
    let share_source = share_source(view);
    let loss_recovery = match rule {
        Rule::LossRecovery => true,
        Rule::Clean | Rule::Shared => false,
        Rule::Unmeasured => UNMEASURED_IS_LOSSY,
    };
    Decision {
        class,
        side,
        borrowed: own.is_none() && other.is_some(),
        loss_recovery,
        loss_factor: factor(rule, class, loss_recovery, test, &r, sharing.as_ref()),
        loss_pct: r.loss_pct,
        queue_bdp: r.queue_bdp,
        window_share: share_of(share_source).clamp(MIN_SHARE, MAX_SHARE),
        share_source,
        tcp_rate_bps: r.tcp_rate_bps,
        notsent_lowat: notsent_lowat(path.rate_bps),
        observations,
        rule,
        linux: path.linux,
        how_to_measure,
        cubic_at_risk: class == PathClass::Unmeasured
            && cubic_window_segments(path.rtt_ms / 1000.0, UNMEASURED_LOSS_PCT / 100.0) < path.bdp_segments(),
        sharing,
    }
}

/// The multiple of the BDP the buffers are sized to, where it is not the loss-free rule's.
fn factor(
    rule: Rule,
    class: PathClass,
    loss_recovery: bool,
    test: Option<&TcpTest>,
    r: &Reading,
    sharing: Option<&Sharing>,
) -> Option<f64> {
    match rule {
        Rule::Shared => test.map(shared_factor).or_else(|| sharing.and_then(probed_factor)),
        // The loss is not known: size for the heavy loss it may be (see the module docs).
        Rule::Unmeasured if loss_recovery => Some(bdp::HEAVY_LOSS_FACTOR),
        // A policer's loss is its startup's, not the path's: the plain factor.
        _ if class == PathClass::Policed => Some(bdp::LOSS_FACTOR),
        _ if loss_recovery => Some(bdp::loss_factor(r.loss_pct.filter(|_| r.lossy))),
        _ => None,
    }
}

/// The buffers, × BDP, for a bottleneck others share: a window there must cover the queue they
/// keep standing, so twice the BDP at the RTT the test met while it sent paced (the base RTT
/// plus their queue), within [`SHARED_MIN_FACTOR`] and [`bdp::HEAVY_LOSS_FACTOR`].
fn shared_factor(t: &TcpTest) -> f64 {
    let loaded = match (t.shape.and_then(|s| s.steady_rtt_ms), t.min_rtt_ms) {
        (Some(steady), Some(min)) if min > 0.0 => steady / min,
        _ => 1.0,
    };
    shared_multiple(loaded)
}

/// [`SHARED_RTT_FACTOR`] × `loaded` (the loaded RTT ÷ the base one), within
/// [`SHARED_MIN_FACTOR`] and [`bdp::HEAVY_LOSS_FACTOR`], to a tenth.
fn shared_multiple(loaded: f64) -> f64 {
    let f = (SHARED_RTT_FACTOR * loaded).clamp(SHARED_MIN_FACTOR, bdp::HEAVY_LOSS_FACTOR);
    (f * 10.0).round() / 10.0
}

/// The buffers, × BDP at the lowest RTT the probes saw, where they saw others' queue move and
/// no test ran: twice the BDP at the highest floor they saw, within [`SHARED_MIN_FACTOR`] and
/// [`bdp::HEAVY_LOSS_FACTOR`], as [`shared_factor`].
fn probed_factor(s: &Sharing) -> Option<f64> {
    let Sharing::Probed { low_ms, high_ms, .. } = *s else {
        return None;
    };
    Some(shared_multiple(if low_ms > 0.0 { high_ms / low_ms } else { 1.0 }))
}

/// A shared bottleneck's window covers this many × BDP at the loaded RTT, at least
/// [`SHARED_MIN_FACTOR`] × BDP at the base RTT.
pub const SHARED_RTT_FACTOR: f64 = 2.0;
pub const SHARED_MIN_FACTOR: f64 = 2.5;

impl Reading {
    fn has_loss(&self) -> bool {
        self.lossy || self.clean_loss
    }

    fn has_queue(&self) -> bool {
        self.deep || self.shallow
    }

    /// This reading with what it lacks (loss, queue) taken from `theirs`, the other
    /// direction's, when that tells the class; None when it does not, or `theirs` has none of
    /// what this one lacks.
    fn filled_from(&self, theirs: &Reading) -> Option<Reading> {
        let loss = !self.has_loss() && theirs.has_loss();
        // Behind loss that holds CUBIC the queue decides nothing.
        let queue = !self.has_queue() && !self.lossy && theirs.has_queue();
        let mut r = self.clone();
        if loss {
            (r.loss_pct, r.lossy, r.clean_loss) = (theirs.loss_pct, theirs.lossy, theirs.clean_loss);
        }
        if queue {
            (r.queue_bdp, r.deep, r.shallow) = (theirs.queue_bdp, theirs.deep, theirs.shallow);
        }
        if !(loss || queue) || classify(&r, Override::None).0 == PathClass::Unmeasured {
            return None;
        }
        r.observations.push(Observation::OtherDirection { loss, queue });
        r.observations.extend(
            theirs
                .observations
                .iter()
                .filter(|o| if o.is_of_queue() { queue } else { loss })
                .cloned(),
        );
        Some(r)
    }
}

impl Observation {
    /// Whether it tells of the queue (else of loss).
    fn is_of_queue(&self) -> bool {
        matches!(
            self,
            Self::Queue { .. } | Self::HeldByWindow(_) | Self::StreamsFilled { .. } | Self::NoLoadedRtt
        )
    }
}

/// The class and its rule from what was read and the user's word. A shallow queue before
/// loss: behind one, the test's own flow loses segments too, so its retransmissions are not
/// the path's alone.
fn classify(r: &Reading, word: Override) -> (PathClass, Rule) {
    if word == Override::Clean {
        (PathClass::Clean, Rule::Clean)
    } else if r.lossy || r.shallow || word == Override::Lossy {
        let class = if r.shallow && word != Override::Lossy {
            PathClass::Shallow
        } else {
            PathClass::Lossy
        };
        (class, Rule::LossRecovery)
    } else if r.clean_loss && r.deep {
        (PathClass::Clean, Rule::Clean)
    } else {
        (PathClass::Unmeasured, Rule::Unmeasured)
    }
}

/// What a TCP test shows: loss after startup, the queue its RTT growth filled (or, where a
/// buffer held it, the queue a second run's parallel streams filled), its rate.
fn read_test(t: &TcpTest, path: &PathFacts, r: &mut Reading) {
    if t.steady_segs_out.is_some_and(|s| s > 0) && t.steady_retrans_segs.is_none() && !t.in_startup {
        r.observations.push(Observation::NoLossCount);
    } else if t.steady_loss_pct().is_none() && t.segs_out.is_some() {
        r.observations
            .push(Observation::StartupNotLeft { test_s: t.duration_s });
    }
    if let Some(b) = t.loss_bursts {
        r.observations.push(Observation::LossInBursts {
            retransmitted: b.retrans_segs,
            bursts: b.bursts,
            intervals: b.intervals,
        });
    }
    let (streams, paced) = t.second_runs();
    let queue = test_queue(t, streams);
    let test_loss = match paced {
        Some(p) => {
            if let RetestKind::Paced { rate_bps } = p.kind {
                r.observations.push(Observation::PacedAgain {
                    retransmitted: t.path_loss().map_or(0, |l| l.1),
                    queue_bdps: queue.map_or(0.0, |q| q.2),
                    rate_bps,
                    test_s: p.duration_s,
                });
            }
            Some((p.steady_segs_out, p.steady_retrans_segs, p.duration_s))
        }
        None => t.steady_loss_pct().and(t.path_loss()).map(|(s, retrans)| {
            // What the receiver got twice was reordered, not lost.
            let spurious = sharing::spurious(t);
            if spurious > 0 {
                r.observations.push(Observation::Spurious {
                    spurious,
                    retransmitted: retrans,
                });
            }
            (s, retrans - spurious, t.duration_s)
        }),
    };
    let loss = match (test_loss, streams_loss(streams, queue, path)) {
        (Some(a), Some(b)) => Some((a.0 + b.0, a.1 + b.1, ((a.2 + b.2) * 1000.0).round() / 1000.0)),
        (a, b) => a.or(b),
    };
    if let Some((segments, retransmitted, test_s)) = loss.filter(|l| l.0 > 0) {
        read_loss(segments, retransmitted, test_s, path, r);
    }
    read_queue(t, queue, streams, r);
    if let Some(rate) = t.delivery_rate_bps.filter(|x| *x > 0.0) {
        // A window-limited test shows only a lower bound; the caller takes the larger.
        #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
        let rate = rate.round() as u64;
        r.tcp_rate_bps = Some(rate);
    }
}

/// The queue a test filled as (min RTT, loaded RTT, queue in BDPs): its own flow's RTT growth
/// where no window held it, else its parallel streams'.
fn test_queue(t: &TcpTest, streams: Option<Retest>) -> Option<(f64, f64, f64)> {
    match (t.min_rtt_ms, t.loaded_rtt_ms, streams) {
        (min, _, Some(p)) => Some((min.map_or(p.min_rtt_ms, |m| m.min(p.min_rtt_ms)), p.loaded_rtt_ms)),
        (Some(min), Some(loaded), None) if !t.window_limited => Some((min, loaded)),
        _ => None,
    }
    .filter(|(min, _)| *min > 0.0)
    .map(|(min, loaded)| (min, loaded, ((loaded - min) / min).max(0.0)))
}

/// The parallel streams' loss after startup (segments, retransmitted, seconds), which is the
/// path's where the queue held them: a deep one, and windows that together stay within what a
/// one-BDP queue holds (BBR's own 2 × BDP); past that, or behind a shallower queue, they
/// overflowed it themselves.
fn streams_loss(streams: Option<Retest>, queue: Option<(f64, f64, f64)>, path: &PathFacts) -> Option<(u64, u64, f64)> {
    #[allow(clippy::cast_precision_loss)]
    streams
        .filter(|r| match r.kind {
            RetestKind::Streams { streams, window } => {
                f64::from(streams) * window as f64 <= PROBE_LOSS_WINDOW_BDP * path.bdp_bytes()
            }
            RetestKind::Paced { .. } => false,
        })
        .filter(|_| queue.is_some_and(|(_, _, q)| q >= QUEUE_DEEP_BDP))
        .map(|r| (r.steady_segs_out, r.steady_retrans_segs, r.duration_s))
}

/// The queue a test read, shallow or deep, with the streams that filled it; or why none was read.
fn read_queue(t: &TcpTest, queue: Option<(f64, f64, f64)>, streams: Option<Retest>, r: &mut Reading) {
    let Some((min, loaded, q)) = queue else {
        r.observations.push(if t.window_limited {
            Observation::HeldByWindow(t.held_by)
        } else {
            Observation::NoLoadedRtt
        });
        return;
    };
    r.queue_bdp = Some((q * 100.0).round() / 100.0);
    if q < QUEUE_DEEP_BDP {
        r.shallow = true;
    } else {
        r.deep = true;
    }
    if let Some(Retest {
        kind: RetestKind::Streams { streams, window },
        duration_s,
        ..
    }) = streams
    {
        r.observations.push(Observation::StreamsFilled {
            streams,
            window,
            test_s: duration_s,
        });
    }
    r.observations.push(Observation::Queue {
        min_ms: min,
        loaded_ms: loaded,
        bdps: q,
    });
}

/// The loss after startup, `retransmitted` of `segments` over `test_s` seconds, against what
/// would hold CUBIC below the BDP.
fn read_loss(segments: u64, retransmitted: u64, test_s: f64, path: &PathFacts, r: &mut Reading) {
    #[allow(clippy::cast_precision_loss)]
    let p = 100.0 * retransmitted as f64 / segments as f64;
    r.loss_pct = Some(p);
    let bdp_segs = path.bdp_segments();
    let w = cubic_window_segments(path.rtt_ms / 1000.0, p / 100.0);
    r.observations.push(if retransmitted > 0 && w < bdp_segs {
        r.lossy = true;
        Observation::LossHoldsCubic {
            pct: p,
            retransmitted,
            segments,
            test_s,
            cubic_bps: w * f64::from(path.mss) * 8.0 / (path.rtt_ms / 1000.0),
            cubic_bdps: w / bdp_segs,
        }
    } else if retransmitted > 0 {
        r.clean_loss = true;
        Observation::LossTooSmall {
            pct: p,
            retransmitted,
            segments,
        }
    } else {
        r.clean_loss = true;
        let bound_pct = crate::bdp::zero_loss_bound_pct(segments);
        Observation::NoRetransmission {
            segments,
            test_s,
            bound_pct,
            limit_pct: 100.0 * crate::bdp::cubic_loss_limit(path.rtt_ms / 1000.0, bdp_segs),
        }
    });
}

/// What the passive evidence says about loss (it cannot show the queue).
fn read_passive(p: &Passive, bdp_segs: f64, r: &mut Reading) {
    if let Some(l) = p.loss_pct(PASSIVE_MIN_BYTES).filter(|l| *l > 0.0) {
        r.lossy = true;
        r.loss_pct = Some(l);
        r.observations.push(Observation::PassiveLoss {
            pct: l,
            sent_bytes: p.flows.iter().map(|f| f.bytes_sent).sum(),
        });
    }
    #[allow(clippy::cast_precision_loss)]
    if let Some(ss) = p.metrics.as_ref().and_then(|m| m.ssthresh)
        && (ss as f64) < bdp_segs / 2.0
    {
        r.lossy = true;
        r.observations.push(Observation::CachedSsthresh {
            segments: ss,
            bdps: ss as f64 / bdp_segs,
        });
    }
}

/// The receive-window share this end's receive buffer is sized with: its own as a receiver
/// (the test in which it received, else its live flows) first, else the other end's (the test
/// in which it sent), taken as alike.
fn share_source(view: &View<'_>) -> ShareSource {
    let own = view
        .receiving
        .and_then(|t| t.window_share)
        .or_else(|| view.passive.and_then(Passive::window_share));
    match (own, view.sending.and_then(|t| t.window_share)) {
        (Some(s), _) => ShareSource::ThisHost(s),
        (None, Some(s)) => ShareSource::FarEnd(s),
        (None, None) => ShareSource::Assumed,
    }
}

/// The share as read (before the bounds).
pub fn share_of(s: ShareSource) -> f64 {
    match s {
        ShareSource::ThisHost(x) | ShareSource::FarEnd(x) => x,
        ShareSource::Assumed => ASSUMED_SHARE,
    }
}

fn notsent_lowat(rate_bps: f64) -> u64 {
    let b = rate_bps / 8.0 * NOTSENT_LOWAT_MS / 1000.0;
    // Ten milliseconds is a rule of thumb, not a measure: three significant figures of it, so
    // a measured 500.003337 Mbit/s gives 625000 as the given 500 Mbit/s does, not 625004.
    let step = 10f64.powf((b.max(1.0).log10().floor() - 2.0).max(0.0));
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    let b = ((b / step).round() * step) as u64;
    b.clamp(NOTSENT_LOWAT_MIN, NOTSENT_LOWAT_MAX)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::advice::words::{how_to_measure, share_source, why_class, why_share};
    use crate::measure::evidence::{DestMetrics, LiveFlow};

    /// 150 ms / 500 Mbit/s, MSS 1448.
    fn long_path() -> PathFacts {
        PathFacts {
            rate_bps: 500e6,
            rtt_ms: 150.0,
            mss: 1448,
            linux: true,
            capacity_bps: None,
            probes_min_ms: None,
            probed: None,
        }
    }

    /// A 10-s test: `steady` segments after startup with `retr` retransmitted, RTT 150 ms
    /// growing by `queue` × itself under load.
    fn test(steady: u64, retr: u64, queue: f64) -> Evidence {
        Evidence {
            test: Some(TcpTest {
                duration_s: 9.8,
                segs_out: Some(steady + 20_000),
                retrans_segs: Some(retr + 100),
                steady_segs_out: Some(steady),
                steady_retrans_segs: Some(retr),
                min_rtt_ms: Some(150.0),
                loaded_rtt_ms: Some(150.0 * (1.0 + queue)),
                delivery_rate_bps: Some(480e6),
                ..TcpTest::default()
            }),
            ..Evidence::default()
        }
    }

    #[test]
    fn random_loss_chooses_bbr_and_names_the_evidence() {
        // 0.011 % after startup: CUBIC's window at 150 ms is far below the 6474-segment BDP.
        let d = decide(&long_path(), Some(&test(400_000, 44, 1.0)), Override::None, Some("h"));
        assert_eq!(d.class, PathClass::Lossy);
        assert!(d.loss_recovery);
        assert_eq!(d.rule, Rule::LossRecovery);
        assert!(
            matches!(
                d.observations[0],
                Observation::LossHoldsCubic {
                    retransmitted: 44,
                    segments: 400_000,
                    cubic_bdps,
                    ..
                } if cubic_bdps < 1.0
            ),
            "{:?}",
            d.observations
        );
        assert!(
            why_class(&d).starts_with("0.011 % retransmitted after startup (44 of 400,000 segments) over 9.8 s"),
            "{}",
            why_class(&d)
        );
        assert!(why_class(&d).ends_with("→ bbr and 5 × BDP"), "{}", why_class(&d));
        assert_eq!(d.tcp_rate_bps, Some(480_000_000));
        assert_eq!(how_to_measure(&d), None);
    }

    #[test]
    fn a_clean_deep_path_chooses_cubic() {
        let d = decide(&long_path(), Some(&test(400_000, 0, 0.95)), Override::None, Some("h"));
        assert_eq!(d.class, PathClass::Clean);
        assert!(!d.loss_recovery);
        assert!(
            why_class(&d).contains("no retransmission after startup in 400,000 segments")
                && why_class(&d).contains("a bottleneck queue of about 0.95 × BDP")
                && why_class(&d).ends_with("→ cubic and 2 × BDP + headroom"),
            "{}",
            why_class(&d)
        );
    }

    /// Retransmissions that came in bursts are a queue overflowing, not the path's random
    /// loss: a deep queue with none left is clean; the loss between the bursts still counts.
    #[test]
    fn loss_in_bursts_is_left_out_of_the_paths_loss() {
        let mut ev = test(400_000, 4_400, 0.95);
        let t = ev.test.as_mut().expect("a test");
        t.loss_bursts = Some(crate::measure::evidence::LossBursts {
            intervals: 10,
            bursts: 2,
            segs_out: 80_000,
            retrans_segs: 4_400,
        });
        let d = decide(&long_path(), Some(&ev), Override::None, Some("h"));
        assert_eq!(d.class, PathClass::Clean, "{}", why_class(&d));
        assert!(
            why_class(&d).starts_with("4,400 retransmissions after startup came in bursts, in 2 of 10 1-s intervals")
                && why_class(&d).contains("no retransmission after startup in 320,000 segments"),
            "{}",
            why_class(&d)
        );
        // 44 more between the bursts: 0.014 %, random loss that holds CUBIC at 150 ms.
        let t = ev.test.as_mut().expect("a test");
        t.steady_retrans_segs = Some(4_444);
        let d = decide(&long_path(), Some(&ev), Override::None, Some("h"));
        assert_eq!(d.class, PathClass::Lossy, "{}", why_class(&d));
        assert!(why_class(&d).contains("(44 of 320,000 segments)"), "{}", why_class(&d));
    }

    /// A test held by a 3,932,160-byte window (its flat RTT no queue reading) and the parallel
    /// streams run after it: their queue decides, and their loss counts only where the queue
    /// held them.
    #[test]
    fn a_held_tests_parallel_streams_read_the_queue() {
        use crate::measure::evidence::{Retest, RetestKind};
        let held = |retest: Option<Retest>| {
            let mut ev = test(126_456, 0, 0.005);
            let t = ev.test.as_mut().expect("a test");
            t.window_limited = true;
            t.held_by = Some(HeldBy::ReceiveWindow);
            t.retest = retest;
            ev
        };
        let streams = |streams: u32, loaded: f64, retr: u64| Retest {
            kind: RetestKind::Streams {
                streams,
                window: 3_932_160,
            },
            duration_s: 7.0,
            rate_bps: 480e6,
            min_rtt_ms: 150.0,
            loaded_rtt_ms: loaded,
            steady_segs_out: 208_000,
            steady_retrans_segs: retr,
        };
        let with = |r: Option<Retest>| decide(&long_path(), Some(&held(r)), Override::None, Some("h"));
        // Held, nothing more: the queue is not measured.
        let d = with(None);
        assert_eq!(d.class, PathClass::Unmeasured, "{}", why_class(&d));
        // Four streams filled 0.6 × BDP without a loss: clean and deep, from 334,456 segments.
        let d = with(Some(streams(4, 240.0, 0)));
        assert_eq!(d.class, PathClass::Clean, "{}", why_class(&d));
        assert_eq!(d.queue_bdp, Some(0.6));
        assert!(
            d.observations.contains(&Observation::StreamsFilled {
                streams: 4,
                window: 3_932_160,
                test_s: 7.0
            }),
            "{:?}",
            d.observations
        );
        assert!(
            why_class(&d).contains("no retransmission after startup in 334,456 segments over 16.8 s"),
            "{}",
            why_class(&d)
        );
        // Their loss where the queue held them is the path's: 20 of 334,456 holds CUBIC.
        let d = with(Some(streams(4, 240.0, 20)));
        assert_eq!(d.class, PathClass::Lossy, "{}", why_class(&d));
        // Behind a 0.1-BDP queue they overflowed it: shallow, and their loss is not the path's.
        let d = with(Some(streams(4, 165.0, 15_000)));
        assert_eq!(d.class, PathClass::Shallow, "{}", why_class(&d));
        assert_eq!(d.loss_pct, Some(0.0));
        // Six streams of that window (2.5 × BDP) overflow even a one-BDP queue: their loss does
        // not count.
        let d = with(Some(streams(6, 300.0, 50)));
        assert_eq!(d.class, PathClass::Clean, "{}", why_class(&d));
    }

    /// An unpaced test that lost segments behind a one-BDP queue, and the paced run after it:
    /// its loss replaces the test's.
    #[test]
    fn a_paced_run_counts_the_loss_an_unpaced_flow_may_have_caused() {
        use crate::measure::evidence::{Retest, RetestKind};
        let mut ev = test(400_000, 2_800, 1.0);
        let paced = |retr: u64| Retest {
            kind: RetestKind::Paced { rate_bps: 384e6 },
            duration_s: 7.0,
            rate_bps: 384e6,
            min_rtt_ms: 150.0,
            loaded_rtt_ms: 151.0,
            steady_segs_out: 160_000,
            steady_retrans_segs: retr,
        };
        ev.test.as_mut().expect("a test").retest = Some(paced(0));
        let d = decide(&long_path(), Some(&ev), Override::None, Some("h"));
        assert_eq!(d.class, PathClass::Clean, "{}", why_class(&d));
        assert!(
            why_class(&d).starts_with("the test's 2,800 retransmissions after startup may be its own")
                && why_class(&d).contains("no retransmission after startup in 160,000 segments over 7 s"),
            "{}",
            why_class(&d)
        );
        // The paced run lost 16 of 160,000: the path's random loss.
        ev.test.as_mut().expect("a test").retest = Some(paced(16));
        let d = decide(&long_path(), Some(&ev), Override::None, Some("h"));
        assert_eq!(d.class, PathClass::Lossy, "{}", why_class(&d));
        assert_eq!(d.loss_pct, Some(0.01));
    }

    #[test]
    fn a_shallow_queue_chooses_bbr_even_without_loss() {
        let d = decide(&long_path(), Some(&test(400_000, 0, 0.1)), Override::None, None);
        assert_eq!(d.class, PathClass::Shallow);
        assert!(d.loss_recovery);
        assert_eq!(d.queue_bdp, Some(0.1));
    }

    /// A forward test through 1 % loss that read a shallow queue but no loss after startup
    /// (its flow never settled): the reverse test's loss stands in, and sizes for it (6 ×, not
    /// the shallow queue's 5 ×: 90.4 % against 95.7 % on the lab's 50 ms / 200 Mbit/s path).
    #[test]
    fn a_shallow_queue_without_its_loss_takes_the_other_directions_loss() {
        let path = long_path();
        let mut ev = test(400_000, 0, 0.1);
        if let Some(t) = ev.test.as_mut() {
            (t.steady_segs_out, t.steady_retrans_segs) = (None, None);
        }
        let alone = decide(&path, Some(&ev), Override::None, None);
        assert_eq!(
            (alone.class, alone.loss_factor),
            (PathClass::Shallow, Some(bdp::LOSS_FACTOR))
        );
        ev.reverse = test(400_000, 4_000, 0.1).test;
        let d = decide(&path, Some(&ev), Override::None, None);
        // The class still names the queue (a shallow one comes before loss), the factor is the loss's.
        assert_eq!(d.class, PathClass::Shallow, "{}", why_class(&d));
        assert_eq!((d.loss_pct, d.loss_factor), (Some(1.0), Some(bdp::HEAVY_LOSS_FACTOR)));
        let why = why_class(&d);
        assert!(
            why.contains("stands in for the loss after startup") && why.contains("4,000 of 400,000 segments"),
            "{why}"
        );
        // The queue is its own: the reverse one's is not taken.
        assert_eq!(d.queue_bdp, Some(0.1));
    }

    #[test]
    fn loss_too_small_to_matter_keeps_cubic() {
        // One retransmission in 10 million segments on a 25 ms / 100 Mbit/s path: CUBIC's
        // window at that loss is far above the 216-segment BDP.
        let path = PathFacts {
            rate_bps: 100e6,
            rtt_ms: 25.0,
            mss: 1448,
            linux: true,
            capacity_bps: None,
            probes_min_ms: None,
            probed: None,
        };
        let mut ev = test(10_000_000, 1, 1.0);
        if let Some(t) = ev.test.as_mut() {
            t.min_rtt_ms = Some(25.0);
            t.loaded_rtt_ms = Some(50.0);
        }
        let d = decide(&path, Some(&ev), Override::None, None);
        assert_eq!(d.class, PathClass::Clean, "{}", why_class(&d));
        assert!(
            why_class(&d).contains("too little to hold CUBIC below the BDP"),
            "{}",
            why_class(&d)
        );
    }

    #[test]
    fn a_test_that_never_left_startup_does_not_measure_loss() {
        // 600 ms: 10 s of test end inside startup; its 8.9 % retransmitted is its own overshoot.
        let mut ev = test(0, 0, 1.0);
        if let Some(t) = ev.test.as_mut() {
            t.steady_segs_out = None;
            t.steady_retrans_segs = None;
            t.segs_out = Some(196_612);
            t.retrans_segs = Some(17_522);
            t.duration_s = 10.016;
        }
        let d = decide(&long_path(), Some(&ev), Override::None, Some("h"));
        assert_eq!(d.class, PathClass::Unmeasured, "{}", why_class(&d));
        assert_eq!(d.loss_pct, None);
        assert_eq!(d.queue_bdp, Some(1.0));
        assert!(
            why_class(&d).starts_with("loss not measured: the test flow did not leave startup within 10 s"),
            "{}",
            why_class(&d)
        );
    }

    #[test]
    fn a_window_limited_test_does_not_measure_the_queue() {
        let mut ev = test(400_000, 0, 0.0);
        if let Some(t) = ev.test.as_mut() {
            t.window_limited = true;
        }
        let d = decide(&long_path(), Some(&ev), Override::None, Some("h"));
        assert_eq!(d.class, PathClass::Unmeasured);
        assert_eq!(d.loss_recovery, UNMEASURED_IS_LOSSY);
        assert_eq!(d.queue_bdp, None);
        assert!(why_class(&d).contains("held by its window"), "{}", why_class(&d));
        assert!(how_to_measure(&d).is_some());
    }

    /// The lab's 250 ms / 50 Mbit/s path against a plain `iperf3 -s`: the forward test read it
    /// clean (no loss in a paced run, a one-BDP queue); the reverse one (the far end sending)
    /// read no RTT and no retransmissions per interval. The receive side takes the forward
    /// test's readings for what its own missed, and says so.
    #[test]
    fn a_reverse_test_that_read_nothing_of_the_class_takes_the_other_directions() {
        let path = long_path();
        let mut ev = test(400_000, 0, 1.0);
        ev.reverse = Some(TcpTest {
            duration_s: 14.25,
            segs_out: Some(47_342),
            retrans_segs: Some(6_573),
            steady_segs_out: Some(36_536),
            delivery_rate_bps: Some(49.2e6),
            ..TcpTest::default()
        });
        let receive = decide_side(&path, &View::near(Some(&ev)), Side::Receive, Override::None, Some("h"));
        assert_eq!(receive.class, PathClass::Clean);
        assert!(!receive.loss_recovery && !receive.borrowed);
        assert_eq!((receive.loss_pct, receive.queue_bdp), (Some(0.0), Some(1.0)));
        // Its own rate stays its own.
        assert_eq!(receive.tcp_rate_bps, Some(49_200_000));
        let why = why_class(&receive);
        assert!(
            why.starts_with("the sender reported no retransmissions per interval")
                && why.contains("the other direction's test stands in for the loss and queue depth")
                && why.contains("no retransmission after startup in 400,000 segments")
                && why.contains("a bottleneck queue of about 1 × BDP"),
            "{why}"
        );
        assert_eq!(how_to_measure(&receive), None);

        // Its own reading counts where it has one: loss that holds CUBIC is the far end's
        // direction's, whatever this one read.
        if let Some(r) = ev.reverse.as_mut() {
            r.steady_retrans_segs = Some(365);
        }
        let receive = decide_side(&path, &View::near(Some(&ev)), Side::Receive, Override::None, Some("h"));
        assert_eq!(receive.class, PathClass::Lossy);
        assert!(!why_class(&receive).contains("stands in"), "{}", why_class(&receive));
        // Clean loss of its own and the other's queue: clean, only the queue borrowed.
        if let Some(r) = ev.reverse.as_mut() {
            r.steady_retrans_segs = Some(0);
        }
        let receive = decide_side(&path, &View::near(Some(&ev)), Side::Receive, Override::None, Some("h"));
        assert_eq!(receive.class, PathClass::Clean);
        let why = why_class(&receive);
        assert!(
            why.contains("stands in for the queue depth") && !why.contains("400000 segments"),
            "{why}"
        );
        // The other direction unmeasured too: nothing stands in.
        if let Some(t) = ev.test.as_mut() {
            t.loaded_rtt_ms = None;
        }
        let receive = decide_side(&path, &View::near(Some(&ev)), Side::Receive, Override::None, Some("h"));
        assert_eq!(receive.class, PathClass::Unmeasured);
        assert!(!why_class(&receive).contains("stands in"), "{}", why_class(&receive));
        // The user's word is above both.
        let receive = decide_side(&path, &View::near(Some(&ev)), Side::Receive, Override::Lossy, Some("h"));
        assert_eq!(receive.class, PathClass::Lossy);
    }

    #[test]
    fn the_words_follow_the_os() {
        let bsd = PathFacts {
            linux: false,
            ..long_path()
        };
        let d = decide(&bsd, Some(&test(400_000, 44, 1.0)), Override::None, None);
        assert!(
            why_class(&d).ends_with("→ 5 × BDP (loss recovery)"),
            "{}",
            why_class(&d)
        );
        assert!(!why_class(&d).contains("bbr"), "{}", why_class(&d));
    }

    #[test]
    fn no_evidence_is_the_unmeasured_default_and_says_how_to_measure() {
        let d = decide(&long_path(), None, Override::None, Some("198.18.0.2"));
        assert_eq!(d.class, PathClass::Unmeasured);
        assert_eq!(d.loss_recovery, UNMEASURED_IS_LOSSY);
        assert!(
            why_class(&d).contains("not measured (no TCP test)"),
            "{}",
            why_class(&d)
        );
        assert!(
            how_to_measure(&d)
                .as_deref()
                .is_some_and(|h| h.contains("tcptune serve` on 198.18.0.2") && h.contains("--iperf3")),
            "{:?}",
            how_to_measure(&d)
        );
        assert_eq!((d.window_share, share_source(d.share_source)), (0.5, "assumed"));
        assert_eq!(d.observations.last(), Some(&Observation::NotMeasured));
        assert_eq!(
            d.how_to_measure,
            Some(MeasureHint::RunServe {
                on: "198.18.0.2".into()
            })
        );
    }

    #[test]
    fn loss_recovery_overrides_a_clean_reading() {
        let d = decide(&long_path(), Some(&test(400_000, 0, 1.0)), Override::Lossy, None);
        assert_eq!(d.class, PathClass::Lossy);
        assert!(d.loss_recovery);
        assert!(
            why_class(&d).starts_with("--loss-recovery given; "),
            "{}",
            why_class(&d)
        );
        // And --clean-path overrides a lossy one.
        let d = decide(&long_path(), Some(&test(400_000, 44, 1.0)), Override::Clean, None);
        assert_eq!(d.class, PathClass::Clean);
        assert!(!d.loss_recovery);
        assert!(why_class(&d).starts_with("--clean-path given; "), "{}", why_class(&d));
        assert_eq!(d.observations[0], Observation::Given(Override::Clean));
        let d = decide(&long_path(), None, Override::Clean, None);
        assert_eq!((d.class, how_to_measure(&d)), (PathClass::Clean, None));
        assert_eq!((d.rule, d.observations.len()), (Rule::Clean, 1));
    }

    #[test]
    fn passive_loss_and_cached_ssthresh_are_evidence() {
        let flows = vec![LiveFlow {
            bytes_sent: 100 << 20,
            bytes_retrans: 10 << 10,
            ..LiveFlow::default()
        }];
        let ev = Evidence {
            passive: Some(Passive {
                flows,
                ..Passive::default()
            }),
            ..Evidence::default()
        };
        let d = decide(&long_path(), Some(&ev), Override::None, None);
        assert_eq!(d.class, PathClass::Lossy);
        assert!(
            why_class(&d).contains("live flows to it retransmitted 0.0098 %"),
            "{}",
            why_class(&d)
        );

        let ev = Evidence {
            passive: Some(Passive {
                metrics: Some(DestMetrics {
                    ssthresh: Some(640),
                    ..DestMetrics::default()
                }),
                ..Passive::default()
            }),
            ..Evidence::default()
        };
        let d = decide(&long_path(), Some(&ev), Override::None, None);
        assert_eq!(d.class, PathClass::Lossy);
        assert!(
            why_class(&d).contains("slow-start threshold of 640 segments (0.0989 × BDP)"),
            "{}",
            why_class(&d)
        );
        // A threshold above half the BDP is not evidence of loss on this path.
        let ev = Evidence {
            passive: Some(Passive {
                metrics: Some(DestMetrics {
                    ssthresh: Some(6000),
                    ..DestMetrics::default()
                }),
                ..Passive::default()
            }),
            ..Evidence::default()
        };
        assert_eq!(
            decide(&long_path(), Some(&ev), Override::None, None).class,
            PathClass::Unmeasured
        );
    }

    #[test]
    fn the_window_share_prefers_this_hosts_own_reading() {
        let mut ev = test(400_000, 0, 1.0);
        if let Some(t) = ev.test.as_mut() {
            t.window_share = Some(0.35);
        }
        let d = decide(&long_path(), Some(&ev), Override::None, None);
        assert_eq!(
            (d.window_share, share_source(d.share_source)),
            (0.35, "the far end (path test)")
        );
        ev.passive = Some(Passive {
            flows: vec![LiveFlow {
                bytes_received: 1 << 20,
                rcv_wnd: Some(560),
                rcv_buf: Some(1000),
                ..LiveFlow::default()
            }],
            ..Passive::default()
        });
        let d = decide(&long_path(), Some(&ev), Override::None, None);
        // 0.56 would lower the maximum under the measured rules: a share only raises it.
        assert_eq!(
            (d.window_share, share_source(d.share_source)),
            (0.5, "this host's live flows")
        );
        assert!(why_share(&d).ends_with("used as 50 %"), "{}", why_share(&d));
        // Misreadings are kept within bounds.
        if let Some(t) = ev.test.as_mut() {
            t.window_share = Some(0.05);
        }
        ev.passive = None;
        let d = decide(&long_path(), Some(&ev), Override::None, None);
        assert_eq!(d.window_share, MIN_SHARE);
        assert!(why_share(&d).ends_with("used as 25 %"), "{}", why_share(&d));
    }

    #[test]
    fn cubic_response_function() {
        // RFC 9438: at 150 ms and 0.001 % loss CUBIC averages about 1430 segments (110 Mbit/s
        // of 1448-byte segments), at 0.0001 % about 8000.
        let w = cubic_window_segments(0.15, 1e-5);
        assert!((w - 1427.0).abs() < 5.0, "{w}");
        assert!(cubic_window_segments(0.15, 1e-6) > 8000.0);
        // At short RTTs the Reno-friendly region dominates: 1.0 % loss at 1 ms.
        let w = cubic_window_segments(0.001, 0.01);
        assert!((w - (3.0_f64 * 1.7 / (2.0 * 0.3 * 0.01)).sqrt()).abs() < 1e-9, "{w}");
        assert!(cubic_window_segments(0.15, 0.0).is_infinite());
    }

    #[test]
    fn notsent_lowat_is_ten_ms_of_the_rate_within_bounds() {
        assert_eq!(notsent_lowat(500e6), 625_000);
        // A measured rate gives a value rounded to three figures, not its noise.
        assert_eq!(notsent_lowat(500_003_337.0), 625_000);
        assert_eq!(notsent_lowat(482_700_000.0), 603_000);
        assert_eq!(notsent_lowat(10e6), NOTSENT_LOWAT_MIN);
        assert_eq!(notsent_lowat(100e9), NOTSENT_LOWAT_MAX);
    }
}
