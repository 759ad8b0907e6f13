//! A train's replies read as a rate: the windows of gaps between bursts, the densest cluster of
//! trains, the signature of a forwarder that releases in batches, and when that reading asks
//! for another round or for long trains. Pure: arrival times in, a [`CapacityEstimate`] out.
//! The batching model stays here beside the dispersion it corrects: both read the same gaps,
//! and each needs the other's result (the bursts' windows make the rate; the rate sizes the
//! long trains the bursts ask for).

use std::time::Duration;

use serde::{Deserialize, Serialize};

/// Trains per estimate.
pub const DEFAULT_TRAINS: u32 = 5;
/// Echo requests per train.
pub const DEFAULT_PER_TRAIN: u32 = 48;
/// Largest IP packet sent: bigger ones would be fragmented or dropped on most paths.
pub const MAX_PACKET: usize = 1500;
/// Smallest IP packet sent: the dispersion of tiny packets drowns in per-packet overheads.
pub const MIN_PACKET: usize = 576;
/// Gaps per window of [`dispersion_bps`]: a sixth of a default train.
pub const WINDOW_GAPS: usize = 8;
/// Spacing of trains, at least.
pub const TRAIN_GAP: Duration = Duration::from_millis(50);
/// Spacing of trains, at most (bounds the time on slow paths).
pub const MAX_TRAIN_GAP: Duration = Duration::from_millis(250);
/// Rounds of trains at most: a round more goes out while the trains disagree.
pub const MAX_ROUNDS: u32 = 3;
/// Rates within this ratio of each other (the slowest to the fastest) agree.
pub const AGREE_RATIO: f64 = 1.10;
/// A train is sender-limited when its replies are spread out less than this factor times the
/// time it took to send it.
pub const SENDER_LIMIT_RATIO: f64 = 1.25;
/// A reply that arrives less than this fraction of its train's typical spacing after the one
/// before joins that one's burst ([`bursts`]): two replies closer together than half the
/// spacing the bottleneck gave the train were held up after it and released together (a clean
/// line's jitter moves a reply by a tenth or two of the spacing).
pub const BURST_GAP: f64 = 0.5;
/// Replies in a burst of a first train came at most this many times as far apart as this host
/// sends packets: a forwarder writes a batch at about a host's speed (the lab's delay line 1–4
/// µs a 1500-byte packet; this host sends a train of 48 at 1–4 µs a packet), while a
/// bottleneck of 1 Gbit/s or less spaces them 12 µs or more. Long trains have no such bound
/// ([`summarize_long`]).
pub const BURST_SEND: f64 = 3.0;
/// The replies came back in bursts when at least this share of them (percent) arrived in
/// bursts of two or more ([`Burst`]). Recorded on the lab: trains through a clean line, at most
/// 11 %; a busy host's stalls, each followed by the replies it held in one burst, 25–33 %; a
/// line that forwards in batches, 50–85 %.
pub const BURSTY_PCT: u32 = 40;
/// A silence ends one of a batching forwarder's cycles ([`Burst::period_us`]) when the
/// bottleneck delivered at least this share of a typical burst in it, and at least
/// [`STALL_MIN`] replies. A stall holds back what a burst releases, so a cycle's silence is
/// about a burst long at the bottleneck's rate; a burst written slowly falls apart at gaps of
/// a few replies, and a forwarder that batches its own writes by the clock (2 ms cycles,
/// each batch written at a third of the bottleneck's spacing) leaves silences of 0.65 of a
/// burst at the shortest. Counting from every burst of half the typical size instead read a
/// delay line stopped for 300 µs of every 600 µs, on a busy host whose bursts fell apart, at
/// 386 µs; the recorded trains with their bursts split so read 132 µs by bursts, 615 µs by
/// silences.
pub const STALL_SHARE: f64 = 0.25;
/// A silence shorter than this many replies at the bottleneck's spacing ends no cycle
/// ([`STALL_SHARE`]), however small the bursts: the gaps a slow write leaves in a burst.
pub const STALL_MIN: f64 = 4.0;
/// Bursts a train must span for its windows of [`WINDOW_GAPS`] bursts to average them out:
/// with larger bursts than that allows, long trains go out ([`long_train_plan`]). A train of
/// [`DEFAULT_PER_TRAIN`] spans 16 bursts of 3.
pub const MIN_BURSTS: u32 = 2 * WINDOW_GAPS as u32;
/// Long trains sent, when they go out.
pub const LONG_TRAINS: u32 = 3;
/// Echo requests per long train, at most: 1.5 MB of 1500-byte packets.
pub const MAX_LONG_TRAIN: u32 = 1024;
/// A long train takes at most about this long to drain at the first trains' reading.
pub const LONG_TRAIN_SPAN: Duration = Duration::from_millis(50);
/// The first trains came back nearly as fast as they left when the replies of most of them
/// were spread out less than this factor times the time it took to send them.
pub const NEAR_SEND_RATIO: f64 = 2.0;

/// The result of a packet-train measurement.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CapacityEstimate {
    /// Bottleneck rate, bit/s at the IP level (IP headers included): the median of the
    /// densest cluster ([`densest`]) of the dispersed trains' rates, or of all of
    /// `samples_bps` when fewer than three dispersed trains agree ([`summarize`]).
    pub bps: u64,
    /// Trains sent.
    pub trains: u32,
    /// Trains that gave a sample (at least half their replies, a measurable spread).
    pub used: u32,
    /// Used trains whose replies came back more spread out than the requests left.
    pub dispersed: u32,
    /// Used trains whose rates agree with `bps` (the densest cluster).
    pub agreeing: u32,
    /// Enough trains agree to trust `bps`: three or more dispersed trains in one cluster, and
    /// most of the dispersed ones; or, when none was dispersed, most of all trains.
    pub agreed: bool,
    /// One dispersion rate per used train, in send order.
    pub samples_bps: Vec<u64>,
    /// IP total length of every request (and reply).
    pub packet_bytes: usize,
    /// Echo requests per train.
    pub per_train: u32,
    /// The replies came back (in most used trains) about as fast as the requests left: the
    /// path may be faster than `bps`, which is then a lower bound.
    pub sender_limited: bool,
    /// Which trains `bps`, `agreed` and `sender_limited` come from; the other fields above
    /// always describe the first trains (`trains` of `per_train`).
    pub reading: Reading,
    /// The gaps between the replies showed bursts: something on the path (a forwarder, or
    /// this host's own receive path) releases packets in batches. None: no burst signature.
    pub bursty: Option<Burst>,
    /// The long trains, when they went out ([`long_train_plan`]).
    pub long: Option<LongTrains>,
}

impl CapacityEstimate {
    /// What the trains showed beyond a rate, in a sentence for people: the burst signature and
    /// how the estimate was read despite it, or why long trains went out. None when the first
    /// trains came back without bursts and sufficed.
    pub fn describe(&self) -> Option<String> {
        let range = crate::text::rate_range(&self.samples_bps).unwrap_or_else(|| crate::text::rate(0.0));
        let first = format!("the {}-packet trains read {range}", self.per_train);
        let seen = self.bursty.map(|b| {
            format!(
                "replies came back in bursts of ~{} every ~{}: a forwarder releases packets in batches",
                b.packets,
                duration_us(b.period_us)
            )
        });
        let each = self.bursty.map_or(0, |b| b.bursts_per_train);
        Some(match (seen, &self.long) {
            (Some(seen), Some(l)) => match l.bps {
                Some(bps) => format!(
                    "{seen}; read over trains of {} packets, {}, where {first}",
                    l.per_train,
                    crate::text::rate(bps as f64)
                ),
                None => format!(
                    "{seen}; trains of {} packets gave no reading ({}), so this is {first}, over ~{each} bursts each",
                    l.per_train,
                    l.error.as_deref().unwrap_or("no replies")
                ),
            },
            (Some(seen), None) => format!(
                "{seen}; read from burst to burst over trains of {} packets, ~{each} bursts each",
                self.per_train
            ),
            (None, Some(l)) => {
                let near = format!(
                    "the {}-packet trains came back nearly as fast as this host sent them, as a batch released at once would",
                    self.per_train
                );
                match l.bps {
                    Some(bps) => format!(
                        "{near}; trains of {} packets showed no bursts and read {}",
                        l.per_train,
                        crate::text::rate(bps as f64)
                    ),
                    None => format!(
                        "{near}; trains of {} packets to check gave no reading ({}), so {first}",
                        l.per_train,
                        l.error.as_deref().unwrap_or("no replies")
                    ),
                }
            }
            (None, None) => return None,
        })
    }
}

/// "36 µs", "1.5 ms", "20 ms".
pub(super) fn duration_us(us: u64) -> String {
    match us {
        0..1000 => format!("{us} µs"),
        1000..10_000 => format!("{:.1} ms", us as f64 / 1000.0),
        _ => format!("{} ms", (us + 500) / 1000),
    }
}

/// Which trains an estimate comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Reading {
    /// The first trains, `per_train` requests each.
    Trains,
    /// The long trains ([`LongTrains`]): long enough to span many bursts, which their windows
    /// then average out.
    LongTrains,
}

/// A burst signature: replies that came back in batches, closer together than the bottleneck
/// spaced them, with long gaps between the batches.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Burst {
    /// Replies per burst: the size of the burst that the median reply of those in bursts came in.
    pub packets: u32,
    /// From the end of one of the forwarder's stalls to the end of the next in the same train,
    /// µs (the median); when no train had two, the time `packets` replies take at the
    /// estimate. A stall is a silence in which the bottleneck delivered at least
    /// [`STALL_SHARE`] of a burst of `packets`, and [`STALL_MIN`] replies.
    pub period_us: u64,
    /// Bursts per train, a lone reply counting as one (the median over the trains read).
    pub bursts_per_train: u32,
    /// Percent of the replies that came in bursts of two or more.
    pub share_pct: u32,
}

/// Trains long enough to span many bursts, sent after the first ones when those could not be
/// trusted ([`long_train_plan`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LongTrains {
    /// Why they went out.
    pub why: LongWhy,
    /// Trains sent.
    pub trains: u32,
    /// Echo requests per train.
    pub per_train: u32,
    /// Trains that gave a sample.
    pub used: u32,
    /// Used trains whose rates agree with `bps`.
    pub agreeing: u32,
    /// One rate per used train, in send order.
    pub samples_bps: Vec<u64>,
    /// Their estimate; None when they gave none (`error` says why), and the first trains'
    /// reading stands.
    pub bps: Option<u64>,
    /// Why they gave no estimate.
    pub error: Option<String>,
}

/// Why long trains went out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LongWhy {
    /// The first trains' replies came in bursts, too few per train to average out.
    Bursts,
    /// The first trains' replies came back nearly as fast as the requests left
    /// ([`NEAR_SEND_RATIO`]): so does a whole train that a forwarder held and released at once,
    /// as well as a path faster than this host sends.
    NearSendRate,
}

/// One echo reply: its IP total length and the kernel's receive time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Reply {
    pub ip_bytes: usize,
    /// Nanoseconds on any fixed clock (CLOCK_REALTIME from the kernel).
    pub at_ns: i64,
}

/// What one train gave.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TrainOutcome {
    /// The replies, in any order.
    pub replies: Vec<Reply>,
    /// Time from before the first request was handed to the kernel to after the last, ns.
    pub send_span_ns: i64,
}

/// Replies that came back together: a burst, or one reply alone.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Run {
    /// Arrival of its first reply, ns.
    pub start_ns: i64,
    /// From the reply before it to its first, ns (0 for a train's first run).
    pub silence_ns: i64,
    pub replies: usize,
    /// IP bytes of its replies.
    pub bytes: usize,
}

/// The replies of a train (in any order) in order of arrival, grouped into bursts: a reply
/// joins the burst of the one before when it arrived less than [`BURST_GAP`] × the train's
/// typical spacing after it (the mean gap without the longest one, which may be a stall),
/// and less than [`BURST_SEND`] × `host_gap_ns` (how fast this host emits a packet; infinite
/// for no such bound). A forwarder releases a batch about as fast as a host sends; replies
/// spaced evenly but slower than that are the bottleneck's, and in a short train a second
/// stall can inflate the mean until they look short. Evenly spaced replies are each a run of
/// one.
pub fn bursts(replies: &[Reply], host_gap_ns: f64) -> Vec<Run> {
    let mut r = replies.to_vec();
    r.sort_by_key(|r| r.at_ns);
    let gaps: Vec<i64> = r.windows(2).map(|w| w[1].at_ns - w[0].at_ns).collect();
    let short = if in_few_batches(&gaps, host_gap_ns) {
        BURST_SEND * host_gap_ns
    } else {
        (BURST_GAP * typical_gap(&gaps)).min(BURST_SEND * host_gap_ns)
    };
    let mut runs: Vec<Run> = Vec::new();
    for (i, x) in r.iter().enumerate() {
        #[allow(clippy::cast_precision_loss)]
        let joins = i > 0 && (gaps[i - 1] as f64) < short;
        match runs.last_mut() {
            Some(run) if joins => {
                run.replies += 1;
                run.bytes += x.ip_bytes;
            }
            _ => runs.push(Run {
                start_ns: x.at_ns,
                silence_ns: if i > 0 { gaps[i - 1] } else { 0 },
                replies: 1,
                bytes: x.ip_bytes,
            }),
        }
    }
    runs
}

/// Whether a train came back in a few batches: its median gap as short as this host sends
/// (within [`BATCH_SEND`] × `host_gap_ns`; long trains have no such bound, and need none: their
/// many batches make the mean gap the bottleneck's) and its longest [`BATCH_GAP_RATIO`] × that or more.
/// A forwarder that releases packets once a millisecond hands on a 48-packet train at 1 Gbit/s
/// (576 µs) in one or two batches: the mean gap without the longest is then its own writing
/// speed, no reply would join another, and windows inside a batch read the forwarder's speed
/// (75 ms / 1 Gbit/s through such a line: trains of 0.13–8 Gbit/s, 4.9 Gbit/s taken).
fn in_few_batches(gaps: &[i64], host_gap_ns: f64) -> bool {
    let mut sorted = gaps.to_vec();
    sorted.sort_unstable();
    let (Some(&median), Some(&longest)) = (sorted.get(sorted.len() / 2), sorted.last()) else {
        return false;
    };
    #[allow(clippy::cast_precision_loss)]
    let (median, longest) = (median as f64, longest as f64);
    host_gap_ns.is_finite() && median < BATCH_SEND * host_gap_ns && longest >= BATCH_GAP_RATIO * median.max(1.0)
}

/// The longest gap of a train released in a few batches is at least this many times its median
/// ([`in_few_batches`]): a bottleneck's spacing varies by a fraction, a stall is one long gap
/// among evenly spaced replies at the bottleneck's spacing, above this host's speed.
pub const BATCH_GAP_RATIO: f64 = 20.0;
/// A train's median gap within this many times this host's send spacing is a forwarder's
/// writing speed ([`in_few_batches`]); tighter than [`BURST_SEND`], so that a train spaced by a
/// bottleneck near this host's speed with one stall in it is not taken for batches. Recorded:
/// a delay line stopped 300 µs of every 600 µs wrote its batches at 0.4–1.5 × the host's
/// spacing; a clean 1 Gbit/s line spaced replies 12 µs, 3–8 × a host's 1.4–4 µs.
pub const BATCH_SEND: f64 = 2.0;

/// The mean of `gaps` without the longest (when two or more): 0 for none.
#[allow(clippy::cast_precision_loss)]
fn typical_gap(gaps: &[i64]) -> f64 {
    match gaps {
        [] => 0.0,
        [one] => *one as f64,
        _ => {
            let longest = gaps.iter().copied().max().unwrap_or(0);
            (gaps.iter().sum::<i64>() - longest) as f64 / (gaps.len() - 1) as f64
        }
    }
}

/// How fast this host emitted the requests of `outcomes`' trains of `per_train`, ns per packet:
/// the quickest train (a send the scheduler interrupted took longer, not the packets);
/// infinite when unknown.
pub(super) fn host_gap_ns(outcomes: &[TrainOutcome], per_train: u32) -> f64 {
    let fastest = outcomes.iter().map(|t| t.send_span_ns).filter(|&n| n > 0).min();
    #[allow(clippy::cast_precision_loss)]
    fastest.map_or(f64::INFINITY, |n| n as f64 / f64::from(per_train.max(2) - 1))
}

/// The dispersion rate of one train, bit/s: its replies grouped into bursts ([`bursts`]),
/// over every run of `window` consecutive gaps between bursts (`window + 1` consecutive
/// bursts), the bytes of the bursts after the first over the time from the start of the
/// first to the start of the last; the median of those. When the replies came back evenly
/// every burst is one reply, and with `window` ≥ the number of gaps this is the whole-train
/// formula, `(bytes of replies 2..n) × 8 / (t_n − t_1)`. A run with no spread counts as
/// infinitely fast. None with fewer than two bursts, or when the median run has no spread.
/// `host_gap_ns`: how fast this host sent the requests, ns per packet ([`bursts`]).
///
/// Why windows: the whole-train formula rests on two timestamps. A late first arrival (a
/// receiver woken from idle) compresses the train, a stall anywhere (a packet held up after
/// the bottleneck, and everything behind it) stretches it, and either error lands in full on
/// the estimate. A stall or a burst spoils only the windows that contain it, and the median
/// ignores them.
///
/// Why bursts: a forwarder that releases packets in batches releases at each wake-up what
/// fell due since the last one, so a burst holds the bytes the bottleneck delivered between
/// the starts of the burst before it and its own: from burst start to burst start the rate
/// is exact, however large the bursts, where windows of single gaps read a window with one
/// long gap too slow and a window inside a burst too fast. A last burst of two or more is
/// left out: the train may have ended before its forwarder's batch did.
pub fn dispersion_bps(replies: &[Reply], window: usize, host_gap_ns: f64) -> Option<f64> {
    runs_bps(&bursts(replies, host_gap_ns), window)
}

/// [`dispersion_bps`] of a train already grouped into bursts.
fn runs_bps(runs: &[Run], window: usize) -> Option<f64> {
    let runs = match runs.split_last() {
        Some((last, rest)) if last.replies > 1 => rest,
        _ => runs,
    };
    if runs.len() < 2 {
        return None;
    }
    let w = window.clamp(1, runs.len() - 1);
    let mut rates: Vec<f64> = runs
        .windows(w + 1)
        .map(|run| {
            let span_ns = run[w].start_ns - run[0].start_ns;
            let bytes: usize = run[1..].iter().map(|x| x.bytes).sum();
            #[allow(clippy::cast_precision_loss)]
            if span_ns > 0 {
                bytes as f64 * 8.0 * 1e9 / span_ns as f64
            } else {
                f64::INFINITY
            }
        })
        .collect();
    rates.sort_by(f64::total_cmp);
    let n = rates.len();
    let mid = if n % 2 == 1 {
        rates[n / 2]
    } else {
        rates[n / 2 - 1] / 2.0 + rates[n / 2] / 2.0
    };
    mid.is_finite().then_some(mid)
}

/// The median; the mean of the middle two for an even count. None when empty.
pub fn median(values: &[u64]) -> Option<u64> {
    let mut v = values.to_vec();
    v.sort_unstable();
    let n = v.len();
    match n {
        0 => None,
        _ if n % 2 == 1 => Some(v[n / 2]),
        _ => Some(v[n / 2 - 1] / 2 + v[n / 2] / 2 + (v[n / 2 - 1] % 2 + v[n / 2] % 2) / 2),
    }
}

/// Fewest replies a train needs to count: half of it, rounded up.
pub fn min_replies(per_train: u32) -> usize {
    per_train.div_ceil(2) as usize
}

/// The densest cluster of `samples`: the most samples that lie within [`AGREE_RATIO`] of each
/// other (slowest to fastest). Returns its median and size; among clusters of the same size,
/// the one whose median is nearest the median of all samples. None when empty.
pub fn densest(samples: &[u64]) -> Option<(u64, usize)> {
    let mut v = samples.to_vec();
    v.sort_unstable();
    let all = median(&v)?;
    let mut best: Option<(u64, usize)> = None;
    for (i, &lo) in v.iter().enumerate() {
        #[allow(clippy::cast_precision_loss)]
        let n = v[i..]
            .iter()
            .take_while(|&&x| x as f64 <= lo as f64 * AGREE_RATIO)
            .count();
        let m = median(&v[i..i + n])?;
        let better = match best {
            None => true,
            Some((bm, bn)) => n > bn || (n == bn && m.abs_diff(all) < bm.abs_diff(all)),
        };
        if better {
            best = Some((m, n));
        }
    }
    best
}

/// What the trains that count gave, in send order.
#[derive(Default)]
struct Reads {
    /// One rate per used train.
    samples: Vec<u64>,
    /// The rates of the dispersed ones.
    dispersed: Vec<u64>,
    /// The bursts of every used train.
    runs: Vec<Vec<Run>>,
    /// Trains with fewer than `need` replies.
    short: usize,
}

fn read_trains(outcomes: &[TrainOutcome], per_train: u32, host_gap: f64) -> Reads {
    let need = min_replies(per_train);
    let mut r = Reads::default();
    for t in outcomes {
        if t.replies.len() < need {
            r.short += 1;
            continue;
        }
        let runs = bursts(&t.replies, host_gap);
        let read = runs_bps(&runs, WINDOW_GAPS);
        // A train whose bursts were too few to read still shows them ([`signature`]).
        r.runs.push(runs);
        let Some(bps) = read else {
            continue;
        };
        #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
        let bps = bps.round() as u64;
        #[allow(clippy::cast_precision_loss)]
        if spread_ns(t) as f64 >= SENDER_LIMIT_RATIO * t.send_span_ns as f64 {
            r.dispersed.push(bps);
        }
        r.samples.push(bps);
    }
    r
}

/// From the first reply of a train to the last, ns.
fn spread_ns(t: &TrainOutcome) -> i64 {
    let first = t.replies.iter().map(|r| r.at_ns).min().unwrap_or(0);
    let last = t.replies.iter().map(|r| r.at_ns).max().unwrap_or(0);
    last - first
}

/// Combine the trains: reject the short ones; the estimate is the centre of the densest
/// cluster ([`densest`]) of the *dispersed* trains — those whose replies came back more spread
/// out than the requests left — when three or more of them agree. Compression after the
/// bottleneck only ever makes a train read faster, up to as fast as it was sent, so a cluster
/// of dispersed trains is the bottleneck and the sender-limited trains beside it are
/// compressed copies. Otherwise the densest cluster of all trains, flagged sender-limited when
/// most trains were. The used trains' bursts give the burst signature ([`signature`]).
pub fn summarize(outcomes: &[TrainOutcome], per_train: u32, packet_bytes: usize) -> Result<CapacityEstimate, String> {
    summarize_at(outcomes, (per_train, host_gap_ns(outcomes, per_train)), packet_bytes)
}

/// [`summarize`] for long trains ([`long_train_plan`]): a reply joins a burst by the train's
/// spacing alone ([`bursts`] with no bound from this host's send time). Over a long train a
/// stall or two is a small part of the time, so the mean spacing is the bottleneck's, while
/// the batches of a slow forwarder may come further apart than this host sends.
pub fn summarize_long(
    outcomes: &[TrainOutcome],
    per_train: u32,
    packet_bytes: usize,
) -> Result<CapacityEstimate, String> {
    summarize_at(outcomes, (per_train, f64::INFINITY), packet_bytes)
}

fn summarize_at(
    outcomes: &[TrainOutcome],
    (per_train, host_gap): (u32, f64),
    packet_bytes: usize,
) -> Result<CapacityEstimate, String> {
    let Reads {
        samples,
        dispersed,
        runs,
        short,
    } = read_trains(outcomes, per_train, host_gap);
    let trains = u32::try_from(outcomes.len()).unwrap_or(u32::MAX);
    let count = |n: usize| u32::try_from(n).unwrap_or(u32::MAX);
    // Three or more dispersed trains that agree outvote everything else.
    let cluster = densest(&dispersed)
        .filter(|(_, n)| *n >= 3)
        .map(|(bps, n)| (bps, n, true))
        .or_else(|| densest(&samples).map(|(bps, n)| (bps, n, false)));
    let Some((bps, agreeing, of_dispersed)) = cluster else {
        let got: usize = outcomes.iter().map(|t| t.replies.len()).sum();
        return Err(if got == 0 {
            format!("no echo reply to {trains} trains of {per_train} requests of {packet_bytes} bytes")
        } else if short == outcomes.len() {
            format!(
                "every train lost more than half its replies ({got} of {} came back)",
                outcomes.len() * per_train as usize
            )
        } else {
            "the replies of every train arrived at the same instant: no measurable spread".to_string()
        });
    };
    let (agreed, sender_limited) = if of_dispersed {
        (agreeing * 2 > dispersed.len(), false)
    } else {
        let limited = samples.len() - dispersed.len();
        (
            dispersed.is_empty() && agreeing >= 3 && agreeing * 2 > samples.len(),
            limited * 2 > samples.len(),
        )
    };
    Ok(CapacityEstimate {
        bps,
        trains,
        used: count(samples.len()),
        dispersed: count(dispersed.len()),
        agreeing: count(agreeing),
        agreed,
        sender_limited,
        samples_bps: samples,
        packet_bytes,
        per_train,
        reading: Reading::Trains,
        bursty: signature(&runs, bps, packet_bytes),
        long: None,
    })
}

/// The burst signature of the used trains' bursts (`runs`, one list per train): at least
/// [`BURSTY_PCT`] percent of their replies came in bursts of two or more; the period is
/// measured between the forwarder's stalls ([`STALL_SHARE`]). On a clean path
/// nearly every reply comes alone; a stall followed by the replies it held back puts a third
/// of a train in one burst at most, in one train of several.
fn signature(runs: &[Vec<Run>], bps: u64, packet_bytes: usize) -> Option<Burst> {
    let replies: usize = runs.iter().flatten().map(|r| r.replies).sum();
    let mut sizes: Vec<usize> = runs.iter().flatten().map(|r| r.replies).filter(|&n| n > 1).collect();
    let in_bursts: usize = sizes.iter().sum();
    if replies == 0 || in_bursts * 100 < replies * BURSTY_PCT as usize {
        return None;
    }
    // The burst the median reply (of those in bursts) came in.
    sizes.sort_unstable();
    let mut seen = 0;
    let packets = sizes
        .iter()
        .find(|&&n| {
            seen += n;
            seen * 2 >= in_bursts
        })
        .copied()
        .unwrap_or(1);
    // From the end of one stall to the end of the next in one train.
    #[allow(clippy::cast_precision_loss)]
    let spacing_ns = packet_bytes as f64 * 8e9 / bps.max(1) as f64;
    #[allow(clippy::cast_precision_loss)]
    let stall_ns = (STALL_SHARE * packets as f64).max(STALL_MIN) * spacing_ns;
    let periods: Vec<u64> = runs
        .iter()
        .flat_map(|t| {
            #[allow(clippy::cast_precision_loss)]
            let starts: Vec<i64> = t
                .iter()
                .filter(|r| r.silence_ns as f64 >= stall_ns)
                .map(|r| r.start_ns)
                .collect();
            starts
                .windows(2)
                .map(|w| u64::try_from(w[1] - w[0]).unwrap_or(0))
                .collect::<Vec<_>>()
        })
        .collect();
    #[allow(
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss,
        clippy::cast_precision_loss
    )]
    let period_ns = median(&periods).unwrap_or_else(|| (packets * packet_bytes) as u64 * 8_000_000_000 / bps.max(1));
    let per_train: Vec<u64> = runs.iter().map(|t| t.len() as u64).collect();
    let count = |n: u64| u32::try_from(n).unwrap_or(u32::MAX);
    Some(Burst {
        packets: count(packets as u64),
        period_us: period_ns / 1000,
        bursts_per_train: count(median(&per_train).unwrap_or(0)),
        share_pct: count((in_bursts * 100 / replies) as u64),
    })
}

/// Whether long trains should follow the first ones, and of how many requests. They go out
/// when the first trains' replies came in bursts ([`Burst`]) too large for a train to span
/// [`MIN_BURSTS`] of them, or came back nearly as fast as the requests left
/// ([`NEAR_SEND_RATIO`]: so does a whole train released at once by a forwarder that batches
/// more than a train). A long train has [`MAX_LONG_TRAIN`] requests, or as many as drain in
/// [`LONG_TRAIN_SPAN`] at the first reading when fewer; None when that is not twice the first
/// trains, which then already spanned as long as a long train would. When the first trains did
/// not agree, the rate that sizes them is the larger of the reading and the trains' median: a
/// few trains stretched alike by a busy host's stalls can outvote the rest (CI, 2026-11-29: on a
/// 1 Gbit/s line batched once a millisecond, three of fifteen trains read 37.5 Mbit/s, the
/// median 437 Mbit/s; long trains sized at the three were 156 requests, 1.9 ms: two batches,
/// which read 1.0–2.4 Gbit/s).
pub fn long_train_plan(first: &CapacityEstimate, outcomes: &[TrainOutcome]) -> Option<(u32, LongWhy)> {
    let why = match first.bursty {
        Some(b) if b.packets.saturating_mul(MIN_BURSTS) > first.per_train => LongWhy::Bursts,
        Some(_) => return None,
        None if near_send_rate(outcomes, first.per_train) => LongWhy::NearSendRate,
        None => return None,
    };
    #[allow(
        clippy::cast_precision_loss,
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss
    )]
    let rate = if first.agreed {
        first.bps
    } else {
        first.bps.max(median(&first.samples_bps).unwrap_or(0))
    };
    let drains = (LONG_TRAIN_SPAN.as_secs_f64() * rate as f64 / (first.packet_bytes as f64 * 8.0)) as u32;
    let m = MAX_LONG_TRAIN.min(drains);
    (m >= 2 * first.per_train).then_some((m, why))
}

/// Most trains with enough replies came back spread out less than [`NEAR_SEND_RATIO`] × the
/// time it took to send them.
fn near_send_rate(outcomes: &[TrainOutcome], per_train: u32) -> bool {
    let need = min_replies(per_train);
    let used: Vec<&TrainOutcome> = outcomes.iter().filter(|t| t.replies.len() >= need).collect();
    #[allow(clippy::cast_precision_loss)]
    let near = used
        .iter()
        .filter(|t| (spread_ns(t) as f64) < NEAR_SEND_RATIO * t.send_span_ns as f64)
        .count();
    near * 2 > used.len()
}

/// The first trains' estimate with the long trains' (`long`, of `sent` trains of `per_train`)
/// beside it: their reading becomes the estimate when they gave one (agreed when most of them,
/// two at least, agree), as do their bursts when they showed some.
pub fn with_long_trains(
    mut first: CapacityEstimate,
    why: LongWhy,
    (sent, per_train): (u32, u32),
    long: Result<CapacityEstimate, String>,
) -> CapacityEstimate {
    let record = LongTrains {
        why,
        trains: sent,
        per_train,
        used: long.as_ref().map_or(0, |l| l.used),
        agreeing: long.as_ref().map_or(0, |l| l.agreeing),
        samples_bps: long.as_ref().map_or_else(|_| Vec::new(), |l| l.samples_bps.clone()),
        bps: long.as_ref().ok().map(|l| l.bps),
        error: long.as_ref().err().cloned(),
    };
    if let Ok(l) = long {
        first.bps = l.bps;
        // Each long train averages many bursts: two of three that agree are enough.
        first.agreed = l.agreeing >= 2 && l.agreeing * 2 > l.used;
        first.sender_limited = l.sender_limited;
        first.reading = Reading::LongTrains;
        first.bursty = l.bursty.or(first.bursty);
    }
    first.long = Some(record);
    first
}

/// Another round while the trains disagree — unless none was dispersed: then they all
/// measured how fast this host sends, and so would another round.
#[cfg(target_os = "linux")]
pub(super) fn another_round(outcomes: &[TrainOutcome], per_train: u32, packet_bytes: usize) -> bool {
    summarize(outcomes, per_train, packet_bytes).is_ok_and(|e| e.dispersed > 0 && !e.agreed)
}
