//! Bottleneck capacity by packet dispersion (as in pathrate and CapProbe).
//!
//! A train of back-to-back, MTU-sized ICMP echo requests leaves this host faster than the
//! path's narrowest link can carry it, so the bottleneck spaces the packets by
//! `size × 8 / C`; the echo replies come back at least that far apart. The kernel timestamps
//! each reply as it arrives (`SO_TIMESTAMPNS`; userspace clocks taken after a wake-up see
//! replies in batches and are useless at these spacings). The whole-train formula is
//! `C = (IP bytes of replies 2..n) × 8 / (t_n − t_1)`; each train's rate here is the median of
//! that formula over runs of 8 consecutive gaps between bursts ([`dispersion_bps`]; evenly
//! spaced replies are each a burst of one), which keeps one late timestamp or one stall from
//! moving the result. On 360 recorded lab trains (TUN delay line
//! at 50 and 500 Mbit/s, RTT 40–600 ms) single trains read −54 % to +36 % off with the
//! whole-train formula (2–3 ms stalls of the line, a late first arrival) and −4 % to +0.2 %
//! with the windowed median.
//!
//! Several trains go out 50 ms apart (more once a first estimate says a train takes longer
//! than that to drain); trains with fewer than half their replies are rejected. The estimate
//! is the centre of the densest cluster — the most trains whose rates lie within 10 % of each
//! other ([`densest`]) — of the *dispersed* trains, and while fewer than three of them or not
//! most of them agree, another round of trains goes out (at most [`MAX_ROUNDS`]; see
//! [`summarize`]). Why not the mean, nor even the plain median: the errors of a train have opposite signs and are not
//! rare on a busy host — cross traffic or a stall stretches a train (too low); a stall *after*
//! the bottleneck releases the queued replies together and compresses the whole train (too
//! high; at 500 Mbit/s a 48-packet train is 1.2 ms long, so one 2 ms hiccup of a virtual
//! machine does it). Spoilt trains scatter, good ones agree: on the lab under 10–20 % CPU
//! steal, three of five trains came back compressed to 0.8–2.6 Gbit/s on a 500 Mbit/s path,
//! and the median of five said 800 Mbit/s.
//!
//! Bursts: a forwarder that releases packets in batches (a busy router or virtual switch, a
//! descheduled virtual machine, the lab's delay line without real-time priority, interrupt
//! coalescing) hands on at each wake-up what the bottleneck delivered since the last one, as
//! fast as a host writes packets. The reply gaps show it: batches of replies closer together
//! than half the train's typical spacing, long gaps between ([`bursts`]). From the start of
//! one batch to the start of another the rate is the bottleneck's however large the batches,
//! so the windows count bursts, not replies; replies one at a time per reply read a window
//! inside a batch at the forwarder's speed and one across a long gap too slow (on the delay
//! line stopped for 300 µs of every 600 µs at 1 Gbit/s: 5.9–9.7 × the rate; by bursts, 1.00).
//! When at least half the replies came in bursts the estimate says so ([`Burst`]: bursts of
//! ~N every ~T). Windows average bursts only over trains that span many: when the bursts are
//! too large for a train to span [`MIN_BURSTS`], or the replies came back nearly as fast as
//! the requests left (a whole train released in one batch looks like that, [`NEAR_SEND_RATIO`]),
//! [`LONG_TRAINS`] long trains of [`MAX_LONG_TRAIN`] requests (fewer when those would take
//! over [`LONG_TRAIN_SPAN`] at the first reading) go out, and their reading replaces the first
//! ([`long_train_plan`], [`summarize_long`], [`with_long_trains`]): at most 3 × 1024 × 1500 B
//! = 4.6 MB and about 0.3 s more, only on such paths.
//!
//! Sockets: as in [`super::icmp`], an unprivileged ping socket (`SOCK_DGRAM`) where
//! `net.ipv4.ping_group_range` allows it, else a raw socket (root / CAP_NET_RAW). With a ping
//! socket the kernel picks the echo identifier and hands us only our replies, matched here by
//! sequence number; with a raw socket we choose the identifier and filter on it (IPv4 raw
//! sockets also deliver the IP header, whose total length is the byte count). IPv4 and IPv6
//! (ICMPv6 echo 128/129) both work.
//!
//! A train can only show a bottleneck slower than the rate at which this host emits it
//! (one `sendmmsg`, a few µs per packet). When the replies come back no more spread out
//! than the requests went out, the estimate is a lower bound: [`CapacityEstimate::sender_limited`].
//!
//! # Platform specific behavior
//! Linux only (`SO_TIMESTAMPNS`, ping sockets, `sendmmsg`). Elsewhere
//! [`estimate_capacity`] returns an error and the caller goes without an estimate.

use std::net::IpAddr;
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
fn duration_us(us: u64) -> String {
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
fn host_gap_ns(outcomes: &[TrainOutcome], per_train: u32) -> f64 {
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
fn another_round(outcomes: &[TrainOutcome], per_train: u32, packet_bytes: usize) -> bool {
    summarize(outcomes, per_train, packet_bytes).is_ok_and(|e| e.dispersed > 0 && !e.agreed)
}

/// What a measurement's trains sent and got back.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Sent {
    /// Every train, in send order.
    pub outcomes: Vec<TrainOutcome>,
    /// IP total length of every request (and reply), after the path MTU capped it.
    pub packet_bytes: usize,
    /// The first send or ICMP error, to explain a failure.
    pub error: Option<String>,
}

/// Send `trains` trains of `per_train` echo requests of `ip_size` bytes (clamped to
/// [`MIN_PACKET`]..=[`MAX_PACKET`] and to the kernel's path MTU) to `addr`, and estimate the
/// bottleneck rate from the spacing of the replies; while the trains disagree
/// ([`CapacityEstimate::agreed`]), up to [`MAX_ROUNDS`] rounds of `trains`. Then, when those
/// trains cannot be trusted to have seen the bottleneck ([`long_train_plan`]: bursts too few
/// per train to average out, or replies back nearly as fast as the requests left),
/// [`LONG_TRAINS`] long trains, whose reading replaces theirs ([`with_long_trains`]).
///
/// Blocks: from async code run it with `spawn_blocking`. Takes at most about
/// `MAX_ROUNDS × ((trains − 1) × 250 ms + timeout)`, usually `(trains − 1) × 50 ms + RTT +
/// one train's drain time`; long trains add at most `2 × 250 ms + timeout` (usually
/// `2 × 100 ms + RTT + 50 ms`), [`LONG_TRAINS`] × [`MAX_LONG_TRAIN`] requests (4.6 MB of
/// 1500-byte packets).
pub fn estimate_capacity(
    addr: IpAddr,
    ip_size: usize,
    trains: u32,
    per_train: u32,
    timeout: Duration,
) -> Result<CapacityEstimate, String> {
    if trains == 0 || per_train < 2 || u64::from(MAX_ROUNDS) * u64::from(trains) * u64::from(per_train) > 1 << 15 {
        return Err(format!(
            "{trains} trains of {per_train}: need at least 1 train of at least 2 packets, {} packets a round at most",
            (1 << 15) / MAX_ROUNDS
        ));
    }
    let ip_size = ip_size.clamp(MIN_PACKET, MAX_PACKET);
    #[cfg(target_os = "linux")]
    {
        let shape = (trains, per_train, MAX_ROUNDS);
        let (first, outcomes) = linux::measure(addr, ip_size, shape, timeout, false)?;
        let Some((long_train, why)) = long_train_plan(&first, &outcomes) else {
            return Ok(first);
        };
        let shape = (LONG_TRAINS, long_train, 1);
        let long = linux::measure(addr, first.packet_bytes, shape, timeout, true).map(|(e, _)| e);
        Ok(with_long_trains(first, why, (LONG_TRAINS, long_train), long))
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = (addr, ip_size, timeout);
        Err("packet trains are only implemented on Linux".to_string())
    }
}

/// The ICMP checksum (RFC 1071) of `data`.
pub fn icmp_checksum(data: &[u8]) -> u16 {
    let mut sum: u32 = data
        .chunks(2)
        .map(|c| u32::from(u16::from_be_bytes([c[0], c.get(1).copied().unwrap_or(0)])))
        .sum();
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}

/// An echo request of `icmp_len` bytes (8-byte header and payload), checksummed (a ping socket
/// and an ICMPv6 raw socket recompute it; an IPv4 raw socket sends it as is).
pub fn echo_request(v6: bool, ident: u16, seq: u16, icmp_len: usize) -> Vec<u8> {
    let mut p = vec![0u8; icmp_len.max(8)];
    p[0] = if v6 { 128 } else { 8 };
    p[4..6].copy_from_slice(&ident.to_be_bytes());
    p[6..8].copy_from_slice(&seq.to_be_bytes());
    for (i, b) in p.iter_mut().enumerate().skip(8) {
        *b = (i & 0xff) as u8;
    }
    let c = icmp_checksum(&p);
    p[2..4].copy_from_slice(&c.to_be_bytes());
    p
}

/// An echo reply as a socket delivered it: (sequence, IP total length), or None if `buf` is
/// something else. `raw_v4`: the buffer starts with the IPv4 header. `ident`: the identifier
/// to require (raw sockets see every echo reply; a ping socket only its own).
pub fn parse_echo_reply(buf: &[u8], v6: bool, raw_v4: bool, ident: Option<u16>) -> Option<(u16, usize)> {
    let (icmp, ip_bytes) = if raw_v4 {
        let ihl = usize::from(buf.first()? & 0x0f) * 4;
        if buf.first()? >> 4 != 4 || ihl < 20 {
            return None;
        }
        let total = usize::from(u16::from_be_bytes([*buf.get(2)?, *buf.get(3)?]));
        (buf.get(ihl..)?, if total >= ihl + 8 { total } else { buf.len() })
    } else {
        // No IP header from a ping socket or an IPv6 raw socket: add the fixed header.
        (buf, buf.len() + if v6 { 40 } else { 20 })
    };
    let want = if v6 { 129 } else { 0 };
    if icmp.len() < 8 || icmp[0] != want || icmp[1] != 0 {
        return None;
    }
    if let Some(id) = ident
        && u16::from_be_bytes([icmp[4], icmp[5]]) != id
    {
        return None;
    }
    Some((u16::from_be_bytes([icmp[6], icmp[7]]), ip_bytes))
}

#[cfg(target_os = "linux")]
mod linux {
    use std::io;
    use std::net::IpAddr;
    use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
    use std::time::{Duration, Instant};

    use super::{
        CapacityEstimate, MAX_TRAIN_GAP, Reply, Sent, TRAIN_GAP, TrainOutcome, another_round, dispersion_bps,
        echo_request, median, parse_echo_reply, summarize, summarize_long,
    };
    use crate::measure::icmp::{PingAccess, SocketKind};

    /// A train with some replies is over when none came for this long (or for its spread so far).
    const IDLE_GRACE: Duration = Duration::from_millis(100);
    /// Longest poll sleep while waiting for replies.
    const POLL_SLICE: Duration = Duration::from_millis(10);
    /// Socket buffers for a whole long train: 1024 replies of up to about 4 KiB of kernel memory.
    const SOCKET_BUF: libc::c_int = 4 << 20;
    /// Room for an IPv4 header and the largest echo reply we send, and then some.
    const RECV_BUF: usize = 4096;

    struct Sock {
        fd: OwnedFd,
        kind: SocketKind,
        v6: bool,
    }

    fn last_err() -> io::Error {
        io::Error::last_os_error()
    }

    fn set_int(fd: RawFd, level: libc::c_int, name: libc::c_int, value: libc::c_int) -> io::Result<()> {
        // SAFETY: `value` is a live c_int and the length passed is its size.
        let r = unsafe {
            libc::setsockopt(
                fd,
                level,
                name,
                (&raw const value).cast(),
                std::mem::size_of::<libc::c_int>() as libc::socklen_t,
            )
        };
        if r == 0 { Ok(()) } else { Err(last_err()) }
    }

    fn get_int(fd: RawFd, level: libc::c_int, name: libc::c_int) -> io::Result<libc::c_int> {
        let mut value: libc::c_int = 0;
        let mut len = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
        // SAFETY: `value` and `len` are live and writable; `len` holds the size of `value`.
        let r = unsafe { libc::getsockopt(fd, level, name, (&raw mut value).cast(), &raw mut len) };
        if r == 0 { Ok(value) } else { Err(last_err()) }
    }

    /// A ping socket where ping_group_range allows it, else a raw one; the other kind if the
    /// first is refused.
    fn open(addr: IpAddr) -> Result<Sock, String> {
        let access = PingAccess::current();
        let v6 = addr.is_ipv6();
        let (domain, proto) = if v6 {
            (libc::AF_INET6, libc::IPPROTO_ICMPV6)
        } else {
            (libc::AF_INET, libc::IPPROTO_ICMP)
        };
        let order = if access.dgram_allowed() {
            [libc::SOCK_DGRAM, libc::SOCK_RAW]
        } else {
            [libc::SOCK_RAW, libc::SOCK_DGRAM]
        };
        let mut refused = None;
        for ty in order {
            // SAFETY: plain socket(2); the result is checked before use.
            let fd = unsafe { libc::socket(domain, ty | libc::SOCK_CLOEXEC, proto) };
            if fd >= 0 {
                // SAFETY: `fd` was just returned by socket(2) and nothing else owns it.
                let fd = unsafe { OwnedFd::from_raw_fd(fd) };
                let kind = if ty == libc::SOCK_RAW {
                    SocketKind::Raw
                } else {
                    SocketKind::Dgram
                };
                return Ok(Sock { fd, kind, v6 });
            }
            let e = last_err();
            match e.raw_os_error() {
                Some(libc::EPERM | libc::EACCES) => refused = Some(e),
                _ => return Err(format!("cannot open an ICMP socket: {e}")),
            }
        }
        let e = refused.unwrap_or_else(|| io::Error::from_raw_os_error(libc::EPERM));
        Err(format!("ICMP not permitted ({})", access.describe_refusal(&e)))
    }

    /// Raw sockets see every ICMP message: let only echo replies through (best effort).
    fn filter_echo_replies(s: &Sock) {
        let fd = s.fd.as_raw_fd();
        if s.v6 {
            // struct icmp6_filter: 256 bits, a set bit blocks that type.
            let mut filter = [u32::MAX; 8];
            filter[129 >> 5] &= !(1 << (129 & 31));
            // SAFETY: `filter` is live and its size is passed; ICMP6_FILTER (1) at level
            // IPPROTO_ICMPV6 takes a struct icmp6_filter.
            unsafe {
                libc::setsockopt(
                    fd,
                    libc::IPPROTO_ICMPV6,
                    1,
                    filter.as_ptr().cast(),
                    std::mem::size_of_val(&filter) as libc::socklen_t,
                )
            };
        } else {
            // ICMP_FILTER (1) at level SOL_RAW (255): a set bit blocks that type; pass type 0.
            let _ = set_int(fd, 255, 1, !1);
        }
    }

    fn connect(s: &Sock, addr: IpAddr) -> io::Result<()> {
        // SAFETY: all-zero is a valid sockaddr_storage.
        let mut ss: libc::sockaddr_storage = unsafe { std::mem::zeroed() };
        let len = match addr {
            IpAddr::V4(a) => {
                let sin = libc::sockaddr_in {
                    sin_family: libc::AF_INET as libc::sa_family_t,
                    sin_port: 0,
                    sin_addr: libc::in_addr {
                        s_addr: u32::from_ne_bytes(a.octets()),
                    },
                    sin_zero: [0; 8],
                };
                // SAFETY: sockaddr_storage is larger than and aligned for sockaddr_in.
                unsafe { std::ptr::write((&raw mut ss).cast::<libc::sockaddr_in>(), sin) };
                std::mem::size_of::<libc::sockaddr_in>()
            }
            IpAddr::V6(a) => {
                let sin6 = libc::sockaddr_in6 {
                    sin6_family: libc::AF_INET6 as libc::sa_family_t,
                    sin6_port: 0,
                    sin6_flowinfo: 0,
                    sin6_addr: libc::in6_addr { s6_addr: a.octets() },
                    sin6_scope_id: 0,
                };
                // SAFETY: sockaddr_storage is larger than and aligned for sockaddr_in6.
                unsafe { std::ptr::write((&raw mut ss).cast::<libc::sockaddr_in6>(), sin6) };
                std::mem::size_of::<libc::sockaddr_in6>()
            }
        };
        // SAFETY: `ss` holds a valid sockaddr of `len` bytes.
        let r = unsafe { libc::connect(s.fd.as_raw_fd(), (&raw const ss).cast(), len as libc::socklen_t) };
        if r == 0 { Ok(()) } else { Err(last_err()) }
    }

    fn realtime_ns() -> i64 {
        let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
        // SAFETY: `ts` is a live, writable timespec.
        unsafe { libc::clock_gettime(libc::CLOCK_REALTIME, &raw mut ts) };
        timespec_ns(&ts)
    }

    /// Nanoseconds of a timespec.
    // time_t and c_long are i32 on some 32-bit targets: the conversions are not useless there.
    #[allow(clippy::useless_conversion)]
    fn timespec_ns(ts: &libc::timespec) -> i64 {
        i64::from(ts.tv_sec) * 1_000_000_000 + i64::from(ts.tv_nsec)
    }

    /// Hand all `packets` to the kernel with as few syscalls as it takes.
    fn send_all(fd: RawFd, packets: &mut [Vec<u8>]) -> io::Result<()> {
        let mut iovs: Vec<libc::iovec> = packets
            .iter_mut()
            .map(|p| libc::iovec {
                iov_base: p.as_mut_ptr().cast(),
                iov_len: p.len(),
            })
            .collect();
        let mut msgs: Vec<libc::mmsghdr> = iovs
            .iter_mut()
            .map(|iov| {
                // SAFETY: all-zero is a valid msghdr (no name, no control).
                let mut hdr: libc::msghdr = unsafe { std::mem::zeroed() };
                hdr.msg_iov = std::ptr::from_mut(iov);
                hdr.msg_iovlen = 1;
                libc::mmsghdr {
                    msg_hdr: hdr,
                    msg_len: 0,
                }
            })
            .collect();
        let mut done = 0;
        while done < msgs.len() {
            let rest = &mut msgs[done..];
            // SAFETY: `rest` is a live array of `rest.len()` mmsghdrs whose iovecs point into
            // `packets`, which outlive the call; the socket is connected, so no names.
            let n = unsafe { libc::sendmmsg(fd, rest.as_mut_ptr(), rest.len() as libc::c_uint, 0) };
            if n < 0 {
                let e = last_err();
                if e.kind() == io::ErrorKind::Interrupted {
                    continue;
                }
                return Err(e);
            }
            done += n as usize;
        }
        Ok(())
    }

    /// One datagram from the socket without waiting: Ok(None) when there is none.
    fn recv_one(fd: RawFd, buf: &mut [u8]) -> io::Result<Option<(usize, Option<i64>)>> {
        // u64s keep the control buffer aligned for cmsghdr.
        let mut control = [0u64; 16];
        let mut iov = libc::iovec {
            iov_base: buf.as_mut_ptr().cast(),
            iov_len: buf.len(),
        };
        // SAFETY: all-zero is a valid msghdr.
        let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
        msg.msg_iov = &raw mut iov;
        msg.msg_iovlen = 1;
        msg.msg_control = control.as_mut_ptr().cast();
        msg.msg_controllen = std::mem::size_of_val(&control) as _;
        loop {
            // SAFETY: `msg` points at `iov` (into `buf`) and `control`, all live and writable.
            let n = unsafe { libc::recvmsg(fd, &raw mut msg, libc::MSG_DONTWAIT) };
            if n >= 0 {
                if msg.msg_flags & libc::MSG_TRUNC != 0 {
                    return Ok(Some((0, None)));
                }
                return Ok(Some((n as usize, kernel_timestamp(&msg))));
            }
            let e = last_err();
            match e.kind() {
                io::ErrorKind::Interrupted => {}
                io::ErrorKind::WouldBlock => return Ok(None),
                _ => return Err(e),
            }
        }
    }

    /// The SCM_TIMESTAMPNS control message of `msg`, as ns.
    fn kernel_timestamp(msg: &libc::msghdr) -> Option<i64> {
        // SAFETY: `msg` was filled in by recvmsg; its control pointer and length are consistent.
        let mut cmsg = unsafe { libc::CMSG_FIRSTHDR(msg) };
        while !cmsg.is_null() {
            // SAFETY: CMSG_FIRSTHDR/CMSG_NXTHDR return null or a header inside the control buffer.
            let h = unsafe { &*cmsg };
            if h.cmsg_level == libc::SOL_SOCKET && h.cmsg_type == libc::SCM_TIMESTAMPNS {
                // SAFETY: an SCM_TIMESTAMPNS message carries a struct timespec, possibly unaligned.
                let ts: libc::timespec = unsafe { std::ptr::read_unaligned(libc::CMSG_DATA(cmsg).cast()) };
                return Some(timespec_ns(&ts));
            }
            // SAFETY: as above; `cmsg` is a header of `msg`.
            cmsg = unsafe { libc::CMSG_NXTHDR(msg, cmsg) };
        }
        None
    }

    fn poll_in(fd: RawFd, wait: Duration) {
        let mut p = libc::pollfd {
            fd,
            events: libc::POLLIN,
            revents: 0,
        };
        let ms = wait.as_millis().clamp(0, 1000) as libc::c_int;
        // SAFETY: `p` is one live pollfd.
        unsafe { libc::poll(&raw mut p, 1, ms) };
    }

    #[derive(Default)]
    struct Train {
        sent_at: Option<Instant>,
        send_span_ns: i64,
        replies: Vec<Option<Reply>>,
        count: usize,
        first_ns: i64,
        last_ns: i64,
        last_reply_at: Option<Instant>,
    }

    impl Train {
        fn done(&self, now: Instant, per_train: usize, timeout: Duration) -> bool {
            let Some(sent) = self.sent_at else {
                return false;
            };
            if self.count == per_train || now >= sent + timeout {
                return true;
            }
            let spread = Duration::from_nanos(u64::try_from(self.last_ns - self.first_ns).unwrap_or(0));
            self.last_reply_at.is_some_and(|t| now >= t + IDLE_GRACE.max(spread))
        }
    }

    /// Sends rounds of `trains` trains of `per_train` echo requests to `addr` while `more`
    /// (given the trains so far and the request size) asks for another round, at most
    /// `max_rounds`, and returns what came back.
    pub(super) fn send(
        addr: IpAddr,
        ip_size: usize,
        shape: (u32, u32, u32),
        timeout: Duration,
        more: &dyn Fn(&[TrainOutcome], usize) -> bool,
    ) -> Result<Sent, String> {
        let (trains, per_train, max_rounds) = shape;
        let p = open_probe(addr, ip_size)?;
        let k = per_train as usize;
        let mut t = Trains::new(trains as usize, k);
        let mut buf = vec![0u8; RECV_BUF];
        loop {
            let now = Instant::now();
            if !t.all_sent() && now >= t.next_send {
                send_train(&p, &mut t, now, per_train, addr)?;
            }
            let now = Instant::now();
            if t.all_sent() && t.state.iter().all(|x| x.done(now, k, timeout)) {
                if t.state.len() >= (max_rounds * trains) as usize || !more(&outcomes(&t.state), p.ip_size) {
                    break;
                }
                t.add_round(trains as usize);
            }
            let wait = if t.all_sent() {
                POLL_SLICE
            } else {
                t.next_send.saturating_duration_since(now).min(POLL_SLICE)
            };
            poll_in(p.fd(), wait);
            drain(&p, &mut t, &mut buf);
        }
        if t.no_stamp > 0 && t.state.iter().all(|x| x.count == 0) {
            return Err("the kernel attached no receive timestamps to the replies".to_string());
        }
        Ok(Sent {
            outcomes: outcomes(&t.state),
            packet_bytes: p.ip_size,
            error: t.errors.into_iter().next(),
        })
    }

    /// Rounds of trains of `shape` (trains per round, requests per train, rounds at most; a
    /// round more while they disagree), summarized (as `long` trains or not); and the trains
    /// themselves.
    pub(super) fn measure(
        addr: IpAddr,
        ip_size: usize,
        shape: (u32, u32, u32),
        timeout: Duration,
        long: bool,
    ) -> Result<(CapacityEstimate, Vec<TrainOutcome>), String> {
        let per_train = shape.1;
        let sent = send(addr, ip_size, shape, timeout, &|o, bytes| {
            another_round(o, per_train, bytes)
        })?;
        let summary = if long { summarize_long } else { summarize };
        match summary(&sent.outcomes, per_train, sent.packet_bytes) {
            Ok(e) => Ok((e, sent.outcomes)),
            Err(e) => Err(match sent.error {
                Some(first) => format!("{e} ({first})"),
                None => e,
            }),
        }
    }

    /// The connected socket of a measurement, and the shape of its echo requests.
    struct Probe {
        sock: Sock,
        /// A raw socket: the identifier is ours to pick and to filter on.
        raw: bool,
        /// IP bytes of a request, at most the kernel's path MTU.
        ip_size: usize,
        /// The IP header's share of `ip_size`.
        header: usize,
        /// A raw socket's echo identifier; a ping socket's is set by the kernel.
        ident: Option<u16>,
        seq_base: u16,
    }

    impl Probe {
        fn fd(&self) -> RawFd {
            self.sock.fd.as_raw_fd()
        }
    }

    /// The socket for trains to `addr` of `ip_size`-byte requests: kernel receive timestamps
    /// on, buffers for a whole train, connected, the size capped at the path MTU.
    fn open_probe(addr: IpAddr, ip_size: usize) -> Result<Probe, String> {
        let sock = open(addr)?;
        let fd = sock.fd.as_raw_fd();
        set_int(fd, libc::SOL_SOCKET, libc::SO_TIMESTAMPNS, 1)
            .map_err(|e| format!("no kernel receive timestamps (SO_TIMESTAMPNS): {e}"))?;
        // A whole train should fit in both buffers. The kernel caps these at [rw]mem_max × 2
        // unless this process may exceed them (CAP_NET_ADMIN): replies beyond are lost.
        for (force, plain) in [
            (libc::SO_RCVBUFFORCE, libc::SO_RCVBUF),
            (libc::SO_SNDBUFFORCE, libc::SO_SNDBUF),
        ] {
            if set_int(fd, libc::SOL_SOCKET, force, SOCKET_BUF).is_err() {
                let _ = set_int(fd, libc::SOL_SOCKET, plain, SOCKET_BUF);
            }
        }
        let raw = sock.kind == SocketKind::Raw;
        if raw {
            filter_echo_replies(&sock);
        }
        connect(&sock, addr).map_err(|e| format!("cannot connect the ICMP socket to {addr}: {e}"))?;
        let (header, mtu) = if sock.v6 {
            (40, get_int(fd, libc::IPPROTO_IPV6, libc::IPV6_MTU))
        } else {
            (20, get_int(fd, libc::IPPROTO_IP, libc::IP_MTU))
        };
        // The kernel's path MTU for this destination (route MTU or a learned PMTU).
        let ip_size = match mtu {
            Ok(m) if m > 0 => ip_size.min(m as usize),
            _ => ip_size,
        };
        let ident = raw.then(crate::measure::random_u16);
        let seq_base = crate::measure::random_u16();
        Ok(Probe {
            sock,
            raw,
            ip_size,
            header,
            ident,
            seq_base,
        })
    }

    /// The trains of a measurement, sent and answered so far.
    struct Trains {
        state: Vec<Train>,
        /// Echo requests per train.
        k: usize,
        /// Trains sent.
        next: usize,
        next_send: Instant,
        /// Send and ICMP errors, the first few, to explain a failure.
        errors: Vec<String>,
        /// Replies that came without a kernel timestamp.
        no_stamp: usize,
    }

    impl Trains {
        fn new(n: usize, k: usize) -> Self {
            let mut t = Self {
                state: Vec::new(),
                k,
                next: 0,
                next_send: Instant::now(),
                errors: Vec::new(),
                no_stamp: 0,
            };
            t.add_round(n);
            t
        }

        /// `n` more trains to send.
        fn add_round(&mut self, n: usize) {
            let k = self.k;
            self.state.resize_with(self.state.len() + n, || Train {
                replies: vec![None; k],
                ..Train::default()
            });
        }

        fn all_sent(&self) -> bool {
            self.next == self.state.len()
        }

        /// Files the reply numbered `seq` under its train (a reply without a timestamp, to a
        /// train not sent, or a duplicate is not kept).
        fn record(&mut self, seq_base: u16, seq: u16, ip_bytes: usize, stamp: Option<i64>) {
            let idx = usize::from(seq.wrapping_sub(seq_base));
            let (ti, j) = (idx / self.k, idx % self.k);
            let Some(at_ns) = stamp else {
                self.no_stamp += 1;
                return;
            };
            if ti >= self.next || self.state[ti].replies[j].is_some() {
                return;
            }
            let t = &mut self.state[ti];
            t.replies[j] = Some(Reply { ip_bytes, at_ns });
            if t.count == 0 || at_ns < t.first_ns {
                t.first_ns = at_ns;
            }
            t.last_ns = t.last_ns.max(at_ns);
            t.count += 1;
            t.last_reply_at = Some(Instant::now());
        }
    }

    /// Sends the next train at `now` (one sendmmsg) and sets when the one after may go.
    fn send_train(p: &Probe, t: &mut Trains, now: Instant, per_train: u32, addr: IpAddr) -> Result<(), String> {
        let k = t.k;
        let mut packets: Vec<Vec<u8>> = (0..k)
            .map(|j| {
                let seq = p.seq_base.wrapping_add(((t.next * k + j) & 0xffff) as u16);
                echo_request(p.sock.v6, p.ident.unwrap_or(0), seq, p.ip_size - p.header)
            })
            .collect();
        let t0 = realtime_ns();
        let sent = send_all(p.fd(), &mut packets);
        let t1 = realtime_ns();
        let train = &mut t.state[t.next];
        train.sent_at = Some(now);
        train.send_span_ns = t1 - t0;
        if let Err(e) = sent {
            if e.raw_os_error() == Some(libc::EMSGSIZE) {
                return Err(format!(
                    "{}-byte echo requests exceed the path MTU to {addr}",
                    p.ip_size
                ));
            }
            t.errors.push(format!("send: {e}"));
        }
        t.next += 1;
        t.next_send = now + gap(&t.state, per_train, p.ip_size);
        Ok(())
    }

    /// Takes every reply waiting on the socket; kernel timestamps keep the arrival times exact.
    fn drain(p: &Probe, t: &mut Trains, buf: &mut [u8]) {
        for _ in 0..4096 {
            match recv_one(p.fd(), buf) {
                Ok(None) => break,
                Ok(Some((len, stamp))) => {
                    if let Some((seq, ip_bytes)) =
                        parse_echo_reply(&buf[..len], p.sock.v6, p.raw && !p.sock.v6, p.ident)
                    {
                        t.record(p.seq_base, seq, ip_bytes, stamp);
                    }
                }
                // ICMP errors reported on the connected socket (unreachable, ...).
                Err(e) => {
                    let e = e.to_string();
                    if !t.errors.contains(&e) && t.errors.len() < 3 {
                        t.errors.push(e);
                    }
                    break;
                }
            }
        }
    }

    fn outcomes(state: &[Train]) -> Vec<TrainOutcome> {
        state
            .iter()
            .map(|t| TrainOutcome {
                replies: t.replies.iter().flatten().copied().collect(),
                send_span_ns: t.send_span_ns,
            })
            .collect()
    }

    /// Time to the next train: 50 ms, or twice what one train takes to drain at the rate seen
    /// so far (at most 250 ms), so trains do not queue behind each other at a slow bottleneck.
    fn gap(state: &[Train], per_train: u32, ip_size: usize) -> Duration {
        let need = super::min_replies(per_train);
        let rates: Vec<u64> = state
            .iter()
            .filter(|t| t.count >= need)
            .filter_map(|t| {
                let replies: Vec<Reply> = t.replies.iter().flatten().copied().collect();
                #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
                dispersion_bps(&replies, super::WINDOW_GAPS, f64::INFINITY).map(|b| b as u64)
            })
            .collect();
        let Some(rate) = median(&rates).filter(|r| *r > 0) else {
            return TRAIN_GAP;
        };
        #[allow(clippy::cast_precision_loss)]
        let drain = (u64::from(per_train) * ip_size as u64 * 8) as f64 / rate as f64;
        Duration::from_secs_f64(2.0 * drain).clamp(TRAIN_GAP, MAX_TRAIN_GAP)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A forwarder that releases once a millisecond, modelled: requests leave this host 2 µs
    /// apart, a 1 Gbit/s bottleneck spaces them 12 µs, the forwarder hands on at each tick what
    /// fell due since the last one, writing a batch 2 µs a packet. Trains start at any phase.
    fn ticked(per_train: usize, phase_ns: i64) -> TrainOutcome {
        let tick = 1_000_000_i64;
        let mut at: Vec<i64> = (0..per_train as i64).map(|i| phase_ns + i * 12_000).collect();
        let mut last_tick = i64::MIN;
        let mut in_batch = 0;
        for t in &mut at {
            let due = (*t + tick - 1) / tick * tick;
            in_batch = if due == last_tick { in_batch + 1 } else { 0 };
            last_tick = due;
            *t = due + in_batch * 2_000;
        }
        TrainOutcome {
            replies: at.into_iter().map(|at_ns| Reply { ip_bytes: 1500, at_ns }).collect(),
            send_span_ns: (per_train as i64 - 1) * 2_000,
        }
    }

    /// Issue 37, point 3: through such a forwarder a 48-packet train (576 µs at 1 Gbit/s) comes
    /// back in one or two batches; the mean gap without the longest was then the forwarder's own
    /// 2 µs, no reply joined another, and windows inside a batch read its writing speed (the lab:
    /// 0.13–8 Gbit/s a train, 4.9 Gbit/s taken for a 1 Gbit/s path). Now the batches are bursts,
    /// the trains too short to read them, and long trains go out.
    #[test]
    fn a_train_a_ticking_forwarder_releases_in_one_or_two_batches_is_bursts_not_a_rate() {
        let phases = [0, 150_000, 420_000, 700_000, 990_000];
        // Those across a tick come back in two batches (one alone reads as sent: near the
        // send rate, which sends long trains too).
        for p in [0, 700_000, 990_000] {
            let t = ticked(48, p);
            let runs = bursts(&t.replies, 2_000.0);
            assert!(runs.len() <= 2, "phase {p}: {} runs", runs.len());
        }
        let first: Vec<TrainOutcome> = phases.iter().map(|&p| ticked(48, p)).collect();
        let est = summarize(&first, 48, 1500);
        let plan = est.as_ref().ok().and_then(|e| long_train_plan(e, &first));
        assert!(
            est.as_ref().is_err() || plan.is_some(),
            "no reading of the forwarder's speed taken as the path's: {est:?}"
        );
        // Long trains of 1024 (12 ms) span twelve ticks: read by bursts, the bottleneck's rate.
        let long: Vec<TrainOutcome> = [0, 330_000, 660_000].iter().map(|&p| ticked(1024, p)).collect();
        let bps = summarize_long(&long, 1024, 1500).expect("long").bps;
        assert!((0.9e9..1.1e9).contains(&(bps as f64)), "{bps}");
    }

    fn train(spacing_ns: i64, n: usize, bytes: usize) -> Vec<Reply> {
        (0..n)
            .map(|i| Reply {
                ip_bytes: bytes,
                at_ns: 1_000_000_000 + i as i64 * spacing_ns,
            })
            .collect()
    }

    #[test]
    fn dispersion_of_evenly_spaced_replies() {
        // 1500 B every 240 µs = 50 Mbit/s; 24 µs = 500 Mbit/s.
        for window in [1, WINDOW_GAPS, usize::MAX] {
            let bps = dispersion_bps(&train(240_000, 48, 1500), window, f64::INFINITY).expect("rate");
            assert!((bps - 50e6).abs() < 1.0, "{bps}");
            let bps = dispersion_bps(&train(24_000, 48, 1500), window, f64::INFINITY).expect("rate");
            assert!((bps - 500e6).abs() < 1.0, "{bps}");
        }
        // The whole-train formula: order does not matter, the first arrival's bytes do not count.
        let mut r = train(240_000, 3, 1000);
        r.swap(0, 2);
        r[1].ip_bytes = 500;
        assert_eq!(
            dispersion_bps(&r, usize::MAX, f64::INFINITY),
            Some((500.0 + 1000.0) * 8.0 / 480e-6)
        );
    }

    #[test]
    fn dispersion_needs_two_replies_and_a_spread() {
        assert_eq!(dispersion_bps(&[], WINDOW_GAPS, f64::INFINITY), None);
        assert_eq!(dispersion_bps(&train(1000, 1, 1500), WINDOW_GAPS, f64::INFINITY), None);
        assert_eq!(dispersion_bps(&train(0, 10, 1500), WINDOW_GAPS, f64::INFINITY), None);
        // Fewer gaps than a window: one window, the whole train.
        assert_eq!(
            dispersion_bps(&train(1000, 3, 1500), WINDOW_GAPS, f64::INFINITY),
            Some(12e9)
        );
    }

    #[test]
    fn a_stall_moves_the_whole_train_formula_not_the_windows() {
        // 50 Mbit/s; a 2 ms stall after reply 17 delays everything behind it (as the lab's
        // delay line did), and the first reply arrives 60 µs late.
        let mut r = train(240_000, 48, 1500);
        for x in &mut r[17..] {
            x.at_ns += 2_000_000;
        }
        r[0].at_ns += 60_000;
        let whole = dispersion_bps(&r, usize::MAX, f64::INFINITY).expect("rate");
        assert!(whole < 0.86 * 50e6, "{whole}");
        let windowed = dispersion_bps(&r, WINDOW_GAPS, f64::INFINITY).expect("rate");
        assert!((windowed - 50e6).abs() < 0.001 * 50e6, "{windowed}");
    }

    #[test]
    fn batched_arrivals_still_average_out() {
        // Interrupt coalescing at 1 Gbit/s: replies handed up four at a time, 1 µs apart, every
        // 48 µs. Single gaps say 12 Gbit/s or 250 Mbit/s; windows of 8 gaps say 1 Gbit/s, and
        // so does every window of whole bursts, down to one.
        let r: Vec<Reply> = (0..48)
            .map(|i| Reply {
                ip_bytes: 1500,
                at_ns: (i / 4) * 48_000 + (i % 4) * 1_000,
            })
            .collect();
        let runs = bursts(&r, f64::INFINITY);
        assert_eq!(runs.len(), 12);
        assert!(runs.iter().all(|b| b.replies == 4 && b.bytes == 6000), "{runs:?}");
        for window in [1, WINDOW_GAPS] {
            let bps = dispersion_bps(&r, window, f64::INFINITY).expect("rate");
            assert!((bps - 1e9).abs() < 1e-6 * 1e9, "{window}: {bps}");
        }
        // Without bursts (a host that sends a packet in 0 ns sees none): per reply.
        assert!(dispersion_bps(&r, 1, 0.0).expect("rate") > 5e9);
    }

    /// The replies of a train of `n` that a bottleneck spaced `gap_ns` apart, as a forwarder
    /// behind it hands them on: it wakes every `period_ns` (each wake-up late by the next of
    /// `late_ns`, in turn) and writes everything due by then, `write_ns` apart.
    fn batched(n: usize, gap_ns: i64, period_ns: i64, late_ns: &[i64], write_ns: i64) -> Vec<Reply> {
        let start = 1_000_000_000;
        let mut out = Vec::new();
        let mut busy_until = 0;
        for wake in 0.. {
            if out.len() == n {
                break;
            }
            let now = start + wake as i64 * period_ns + late_ns[wake % late_ns.len()];
            let mut at = now.max(busy_until);
            while out.len() < n && start + out.len() as i64 * gap_ns <= now {
                out.push(Reply {
                    ip_bytes: 1500,
                    at_ns: at,
                });
                at += write_ns;
            }
            busy_until = at;
        }
        out
    }

    fn sent(replies: Vec<Reply>, send_span_ns: i64) -> TrainOutcome {
        TrainOutcome { replies, send_span_ns }
    }

    #[test]
    fn a_forwarder_that_batches_is_seen_and_read_burst_to_burst() {
        // 1 Gbit/s (12 µs a packet) behind a forwarder that wakes every 360 µs, up to 70 µs
        // late, and writes a batch 1.5 µs a packet: bursts of ~30 replies.
        let late = [0, 40_000, 10_000, 70_000, 20_000, 55_000];
        let long = batched(1024, 12_000, 360_000, &late, 1_500);
        let runs = bursts(&long, 1_500.0);
        assert!((33..=36).contains(&runs.len()), "{}", runs.len());
        assert!(
            runs[1..runs.len() - 1].iter().all(|b| (24..=36).contains(&b.replies)),
            "{runs:?}"
        );
        // Windows of single gaps read the batches (8 Gbit/s inside one); from burst to burst,
        // the bottleneck.
        let per_reply = dispersion_bps(&long, WINDOW_GAPS, 0.0).expect("rate");
        assert!(per_reply > 5e9, "{per_reply}");
        let by_bursts = dispersion_bps(&long, WINDOW_GAPS, 1_500.0).expect("rate");
        assert!((by_bursts - 1e9).abs() < 0.02 * 1e9, "{by_bursts}");

        // Three such long trains: the signature, and the estimate within 2 %.
        let three: Vec<TrainOutcome> = (0..3).map(|_| sent(long.clone(), 1_024 * 1_500)).collect();
        let e = summarize_long(&three, 1024, 1500).expect("estimate");
        assert!(e.bps.abs_diff(1_000_000_000) < 20_000_000, "{e:?}");
        let b = e.bursty.expect("a burst signature");
        assert!((25..=36).contains(&b.packets), "{b:?}");
        assert!(b.period_us.abs_diff(360) <= 36, "{b:?}");
        assert!(b.share_pct > 90 && b.bursts_per_train >= 33, "{b:?}");

        // A first train of 48 spans two bursts: too few to read, and the bursts too large for
        // a train to span 16 of them: long trains go out.
        let first: Vec<TrainOutcome> = (0..5)
            .map(|i| sent(batched(48, 12_000, 360_000, &late[i..], 1_500), 48 * 1_500))
            .collect();
        let e = summarize(&first, 48, 1500);
        let plan = e.as_ref().ok().and_then(|e| long_train_plan(e, &first));
        assert_eq!(plan, Some((MAX_LONG_TRAIN, LongWhy::Bursts)), "{e:?}");
    }

    #[test]
    fn long_trains_take_a_slow_forwarder_at_its_batches() {
        // A forwarder that writes its batches 4 µs a packet, behind 1 Gbit/s, while this host
        // sends a long train at 1 µs a packet: bounded by 3 × this host's speed, each batch
        // falls apart into single replies read at the forwarder's 3 Gbit/s; long trains take
        // the train's own spacing (12 µs) and see whole batches.
        let late = [0, 300_000, 100_000, 450_000];
        let long: Vec<TrainOutcome> = (0..3)
            .map(|i| sent(batched(1024, 12_000, 2_000_000, &late[i..], 4_000), 1_024_000))
            .collect();
        let bounded = summarize(&long, 1024, 1500).expect("estimate");
        assert!(bounded.bps > 2_500_000_000, "{bounded:?}");
        let e = summarize_long(&long, 1024, 1500).expect("estimate");
        assert!(e.bps.abs_diff(1_000_000_000) < 20_000_000, "{e:?}");
        let b = e.bursty.expect("bursts");
        assert!(b.packets > 150 && b.period_us.abs_diff(2_000) < 200, "{b:?}");
    }

    #[test]
    fn two_stalls_in_a_short_train_are_no_batches() {
        // 500 Mbit/s, a first train stretched twice by 2 ms: the mean gap without the longest
        // is 67 µs, so the ordinary 24 µs gaps are under half of it; but this host sends at
        // 3 µs a packet and no forwarder batch is spaced 24 µs.
        let mut r = train(24_000, 48, 1500);
        for x in &mut r[15..] {
            x.at_ns += 2_000_000;
        }
        for x in &mut r[31..] {
            x.at_ns += 2_000_000;
        }
        assert_eq!(bursts(&r, 3_000.0).len(), 48);
        let bps = dispersion_bps(&r, WINDOW_GAPS, 3_000.0).expect("rate");
        assert!((bps - 5e8).abs() < 1e-6 * 5e8, "{bps}");
        // Unbounded, three "batches" of 15 or 16.
        assert_eq!(bursts(&r, f64::INFINITY).len(), 3);
    }

    #[test]
    fn small_batches_are_read_from_the_first_trains() {
        // Batches of 3 every 36 µs: windows of 8 single gaps hold 2 or 3 batches and read
        // 1.3 or 0.9 × the rate, 0.9 in the median; windows of 8 bursts are exact.
        let even = batched(48, 12_000, 36_000, &[0], 1_000);
        let per_reply = dispersion_bps(&even, WINDOW_GAPS, 0.0).expect("rate");
        assert!((per_reply - 0.897e9).abs() < 0.01e9, "{per_reply}");
        let by_bursts = dispersion_bps(&even, WINDOW_GAPS, 1_000.0).expect("rate");
        assert!((by_bursts - 1e9).abs() < 1e-6 * 1e9, "{by_bursts}");
        // Wake-ups up to 10 µs late: a train of 48 spans 16 batches, its windows average them
        // out, and no long trains go out.
        let late = [0, 10_000, 3_000, 7_000];
        let trains: Vec<TrainOutcome> = (0..5)
            .map(|i| sent(batched(48, 12_000, 36_000, &late[i % 4..], 1_000), 48 * 1_000))
            .collect();
        let e = summarize(&trains, 48, 1500).expect("estimate");
        assert!(e.bps.abs_diff(1_000_000_000) < 30_000_000, "{e:?}");
        let b = e.bursty.expect("bursts");
        assert_eq!(b.packets, 3, "{b:?}");
        assert_eq!(long_train_plan(&e, &trains), None);
    }

    #[test]
    fn clean_trains_show_no_bursts() {
        // 500 Mbit/s with ±2 µs of jitter, one train stretched by a 3 ms stall, one whose
        // first reply came 60 µs late, one whose send the scheduler interrupted for 2 ms.
        let jitter = [0, 2_000, -1_500, 1_000, -2_000, 500, 1_500, -500];
        let clean = |stall_at: usize, stall_ns: i64| -> Vec<Reply> {
            (0..48)
                .map(|i| Reply {
                    ip_bytes: 1500,
                    at_ns: 1_000_000_000
                        + i as i64 * 24_000
                        + jitter[i % jitter.len()]
                        + if i >= stall_at { stall_ns } else { 0 },
                })
                .collect()
        };
        let mut late_first = clean(48, 0);
        late_first[0].at_ns += 60_000;
        let trains = vec![
            sent(clean(48, 0), 150_000),
            sent(clean(20, 3_000_000), 150_000),
            sent(late_first, 150_000),
            sent(clean(48, 0), 2_150_000),
            sent(clean(48, 0), 140_000),
        ];
        for t in &trains {
            let runs = bursts(&t.replies, 150_000.0 / 47.0);
            assert!(runs.iter().all(|b| b.replies == 1), "{runs:?}");
        }
        let e = summarize(&trains, 48, 1500).expect("estimate");
        assert!(e.bps.abs_diff(500_000_000) < 5_000_000, "{e:?}");
        assert_eq!((e.bursty, e.reading, e.long.clone()), (None, Reading::Trains, None));
        assert_eq!(long_train_plan(&e, &trains), None);
        assert_eq!(e.describe(), None);
    }

    #[test]
    fn a_train_inside_one_batch_asks_for_long_trains() {
        // A forwarder that wakes every 4 ms holds a whole 0.6 ms train at 1 Gbit/s and writes
        // it 1.5 µs a packet: 8 Gbit/s, back nearly as fast as it left (in 100 µs).
        let trains: Vec<TrainOutcome> = (0..5)
            .map(|i| sent(batched(48, 12_000, 4_000_000, &[i * 500_000 + 700_000], 1_500), 100_000))
            .collect();
        let e = summarize(&trains, 48, 1500).expect("estimate");
        assert!(e.bps > 7_000_000_000, "{e:?}");
        assert_eq!(e.bursty, None, "evenly spaced, as far as one train shows");
        assert_eq!(
            long_train_plan(&e, &trains),
            Some((MAX_LONG_TRAIN, LongWhy::NearSendRate))
        );
        // On a slow path a long train would be no longer than the first ones.
        let slow = CapacityEstimate {
            bps: 10_000_000,
            samples_bps: vec![10_000_000; 5],
            ..e
        };
        assert_eq!(long_train_plan(&slow, &trains), None);
    }

    #[test]
    fn long_trains_are_sized_past_a_few_stretched_trains_that_outvote_the_rest() {
        // CI, 2026-11-29: a 1 Gbit/s line batched once a millisecond on a busy host. Three of
        // fifteen first trains read 37.5 Mbit/s alike and became the reading; long trains sized
        // at it (156 requests, two batches) read 1.0–2.4 Gbit/s.
        let samples = vec![
            195_023_647,
            278_950_344,
            483_509_798,
            37_869_105,
            437_050_556,
            673_134_647,
            37_539_487,
            107_526_453,
            473_001_996,
            522_800_968,
            12_793_327,
            2_652_093_179,
            2_630_254_892,
            2_426_463_788,
            37_481_718,
        ];
        let first = CapacityEstimate {
            bps: 37_539_487,
            trains: 15,
            used: 15,
            dispersed: 10,
            agreeing: 3,
            agreed: false,
            samples_bps: samples,
            packet_bytes: 1500,
            per_train: 48,
            sender_limited: false,
            reading: Reading::Trains,
            bursty: Some(Burst {
                packets: 8,
                period_us: 485,
                bursts_per_train: 5,
                share_pct: 75,
            }),
            long: None,
        };
        assert_eq!(long_train_plan(&first, &[]), Some((MAX_LONG_TRAIN, LongWhy::Bursts)));
        // Trains that agree size them by their reading, as before.
        let agreed = CapacityEstimate { agreed: true, ..first };
        assert_eq!(long_train_plan(&agreed, &[]), Some((156, LongWhy::Bursts)));
    }

    /// Recorded trains (tests/fixtures/trains): one a line, the send span of its requests and
    /// then the gaps between its replies in arrival order, ns; 1500-byte packets.
    fn recorded(text: &str) -> Vec<TrainOutcome> {
        text.lines()
            .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
            .map(|l| {
                let v: Vec<i64> = l.split_whitespace().map(|x| x.parse().expect("ns")).collect();
                let mut at = 1_000_000_000;
                let mut replies = vec![Reply {
                    ip_bytes: 1500,
                    at_ns: at,
                }];
                for gap in &v[1..] {
                    at += gap;
                    replies.push(Reply {
                        ip_bytes: 1500,
                        at_ns: at,
                    });
                }
                sent(replies, v[0])
            })
            .collect()
    }

    #[test]
    fn recorded_clean_and_stalled_trains_show_no_bursts() {
        let clean = recorded(include_str!("../../tests/fixtures/trains/lab-1gbit-nort.txt"));
        let e = summarize(&clean, 48, 1500).expect("estimate");
        assert!(e.bps.abs_diff(1_000_000_000) < 5_000_000, "{e:?}");
        assert_eq!(e.bursty, None, "{e:?}");
        assert_eq!(long_train_plan(&e, &clean), None);
        // 100 Mbit/s on a busy host: stalls of 1-5 ms, three of them followed by 20-30
        // replies in one burst (the old windows read those trains 1.4, 65 and 136 × too fast).
        let busy = recorded(include_str!("../../tests/fixtures/trains/lab-100mbit-nort-busy.txt"));
        for t in &busy {
            let bps = dispersion_bps(&t.replies, WINDOW_GAPS, host_gap_ns(&busy, 48)).expect("rate");
            assert!((bps - 1e8).abs() < 0.02 * 1e8, "{bps}");
        }
        let e = summarize(&busy, 48, 1500).expect("estimate");
        assert!(e.bps.abs_diff(100_000_000) < 1_000_000 && e.agreed, "{e:?}");
        assert_eq!(e.bursty, None, "{e:?}");
    }

    #[test]
    fn recorded_batches_are_seen_and_read_within_ten_percent() {
        // The delay line stopped for 300 µs of every 600 µs, 1 Gbit/s: the old windows read
        // the first trains 5.9 to 9.7 × too fast, the long ones 1.5 and 3.4 ×.
        let all = recorded(include_str!("../../tests/fixtures/trains/lab-1gbit-nort-batches.txt"));
        let (first, long) = all.split_at(10);
        assert!(first.iter().all(|t| t.replies.len() == 48) && long.iter().all(|t| t.replies.len() == 1024));
        let old: Vec<f64> = first
            .iter()
            .filter_map(|t| dispersion_bps(&t.replies, WINDOW_GAPS, 0.0))
            .collect();
        assert!(old.iter().all(|&b| b > 5e9), "{old:?}");
        let e = summarize(first, 48, 1500).expect("estimate");
        assert!(e.bps.abs_diff(1_000_000_000) < 10_000_000, "{e:?}");
        let b = e.bursty.expect("bursts");
        assert!((20..=40).contains(&b.packets), "{b:?}");
        assert_eq!(long_train_plan(&e, first), Some((MAX_LONG_TRAIN, LongWhy::Bursts)));
        // The long trains: within 10 % (the forwarder's own stops idle the line a little), and
        // the stops seen: bursts every ~600 µs.
        let e = summarize_long(long, 1024, 1500).expect("estimate");
        assert!(e.bps.abs_diff(1_000_000_000) < 100_000_000, "{e:?}");
        let b = e.bursty.expect("bursts");
        assert!(b.period_us.abs_diff(600) <= 60, "{b:?}");
    }

    /// The same recorded trains on a busy host, where the delay line writes a burst slowly
    /// and it falls apart: every burst split after its tenth reply by 25 µs. The bursts read
    /// 17 replies instead of 33, and their period is still the stalls' (615 µs; counted from
    /// every burst of half the typical size, as before, 132 µs).
    #[test]
    fn bursts_that_fall_apart_keep_the_stalls_period() {
        let all = recorded(include_str!("../../tests/fixtures/trains/lab-1gbit-nort-batches.txt"));
        let long = &all[10..];
        let whole = summarize_long(long, 1024, 1500).expect("estimate");
        let split: Vec<TrainOutcome> = long.iter().map(|t| split_bursts(t, 10, 25_000)).collect();
        let e = summarize_long(&split, 1024, 1500).expect("estimate");
        let (b, w) = (e.bursty.expect("bursts"), whole.bursty.expect("bursts"));
        assert!(
            b.packets < w.packets && b.bursts_per_train > w.bursts_per_train,
            "{b:?} vs {w:?}"
        );
        assert!(b.period_us.abs_diff(600) <= 60, "{b:?} vs {w:?}");
    }

    /// `t` with each burst (replies under 5 µs apart) split after its `after`th reply by
    /// `gap_ns`: every later reply comes that much later.
    fn split_bursts(t: &TrainOutcome, after: usize, gap_ns: i64) -> TrainOutcome {
        let mut r = t.replies.clone();
        r.sort_by_key(|x| x.at_ns);
        let (mut shift, mut run, mut prev) = (0, 0, i64::MIN);
        for x in &mut r {
            run = if x.at_ns.saturating_sub(prev) < 5_000 {
                run + 1
            } else {
                1
            };
            prev = x.at_ns;
            if run == after + 1 {
                shift += gap_ns;
            }
            x.at_ns += shift;
        }
        sent(r, t.send_span_ns)
    }

    #[test]
    fn long_trains_replace_the_reading_and_say_why() {
        let all = recorded(include_str!("../../tests/fixtures/trains/lab-1gbit-nort-batches.txt"));
        let (first, long) = all.split_at(10);
        let first = summarize(first, 48, 1500).expect("first");
        let long = summarize_long(long, 1024, 1500).expect("long");
        let e = with_long_trains(first.clone(), LongWhy::Bursts, (2, 1024), Ok(long.clone()));
        assert_eq!((e.bps, e.reading, e.agreed), (long.bps, Reading::LongTrains, true));
        // The first trains' record stays; the long trains' bursts (their period is measured).
        assert_eq!((e.trains, e.per_train, &e.samples_bps), (10, 48, &first.samples_bps));
        assert_eq!(e.bursty, long.bursty);
        let l = e.long.clone().expect("long trains");
        assert_eq!(
            (l.why, l.trains, l.per_train, l.used, l.bps),
            (LongWhy::Bursts, 2, 1024, 2, Some(long.bps))
        );
        let v = serde_json::to_value(&e).expect("json");
        assert_eq!(
            (v["reading"].as_str(), v["long"]["why"].as_str()),
            (Some("long_trains"), Some("bursts"))
        );
        assert!(
            v["bursty"]["period_us"].as_u64().is_some_and(|p| p.abs_diff(600) <= 60),
            "{v:#}"
        );
        let said = e.describe().expect("words");
        let b = e.bursty.expect("bursts");
        assert!(
            said.starts_with(&format!(
                "replies came back in bursts of ~{} every ~{} µs",
                b.packets, b.period_us
            )) && said.contains("read over trains of 1024 packets")
                && said.contains("the 48-packet trains read"),
            "{said}"
        );

        // Long trains that gave nothing leave the first reading, and say so.
        let lost = "every train lost more than half its replies (3 of 3072 came back)".to_string();
        let e = with_long_trains(first.clone(), LongWhy::Bursts, (3, 1024), Err(lost.clone()));
        assert_eq!((e.bps, e.reading), (first.bps, Reading::Trains));
        assert_eq!(e.long.as_ref().and_then(|l| l.error.clone()), Some(lost));
        assert!(e.describe().expect("words").contains("gave no reading"), "{e:?}");

        // Trains that came back as fast as they left, checked by long ones without bursts.
        let mut fast = first.clone();
        fast.bursty = None;
        let mut clean = long;
        clean.bursty = None;
        let e = with_long_trains(fast, LongWhy::NearSendRate, (3, 1024), Ok(clean));
        let said = e.describe().expect("words");
        assert!(
            said.contains("nearly as fast as this host sent them") && said.contains("showed no bursts"),
            "{said}"
        );
        assert_eq!(summarize(&[outcome(24_000, 48)], 48, 1500).expect("e").describe(), None);
        assert_eq!(duration_us(2_400), "2.4 ms");
        assert_eq!(duration_us(36), "36 µs");
        assert_eq!(duration_us(25_400), "25 ms");
    }

    #[test]
    fn recorded_long_trains_through_the_rt_line() {
        // With real-time priority the line forwards on time until its rationed spinning runs
        // out, ~3 ms into a 1000-packet train, then in bursts of 2-4 (the old windows read
        // 0.87 to 0.90).
        let long = recorded(include_str!("../../tests/fixtures/trains/lab-1gbit-rt-long.txt"));
        let e = summarize_long(&long, 1000, 1500).expect("estimate");
        assert!(e.bps.abs_diff(1_000_000_000) < 20_000_000, "{e:?}");
        let b = e.bursty.expect("bursts");
        assert!((2..=4).contains(&b.packets), "{b:?}");
    }

    #[test]
    fn medians() {
        assert_eq!(median(&[]), None);
        assert_eq!(median(&[7]), Some(7));
        assert_eq!(median(&[9, 1, 5]), Some(5));
        assert_eq!(median(&[4, 1, 3, 2]), Some(2));
        assert_eq!(median(&[3, 4]), Some(3));
        assert_eq!(median(&[u64::MAX, u64::MAX]), Some(u64::MAX));
        assert_eq!(median(&[1, 2]), Some(1));
        assert_eq!(median(&[3, 5]), Some(4));
    }

    fn outcome(spacing_ns: i64, n: usize) -> TrainOutcome {
        TrainOutcome {
            replies: train(spacing_ns, n, 1500),
            send_span_ns: 100_000,
        }
    }

    #[test]
    fn summary_rejects_short_trains_and_takes_the_median() {
        let trains = vec![
            outcome(240_000, 48),
            outcome(24_000, 23), // fewer than 48 / 2: rejected although fastest
            outcome(250_000, 24),
            outcome(120_000, 48), // compressed: an outlier the median ignores
            outcome(240_000, 40),
        ];
        let e = summarize(&trains, 48, 1500).expect("estimate");
        assert_eq!((e.trains, e.used, e.per_train, e.packet_bytes), (5, 4, 48, 1500));
        assert_eq!(e.samples_bps, vec![50_000_000, 48_000_000, 100_000_000, 50_000_000]);
        assert_eq!(e.bps, 50_000_000);
        assert!(!e.sender_limited);
        assert_eq!(min_replies(48), 24);
        assert_eq!(min_replies(5), 3);
    }

    #[test]
    fn the_densest_cluster_wins_over_the_median() {
        // 500 Mbit/s; three of five trains compressed by a stall after the bottleneck (the lab
        // under CPU steal): the median says 800 Mbit/s, the two good trains agree.
        let v = [500_000_000, 2_600_000_000, 800_000_000, 497_000_000, 1_700_000_000];
        assert_eq!(median(&v), Some(800_000_000));
        assert_eq!(densest(&v), Some((498_500_000, 2)));
        // Within 10 % of each other, slowest to fastest: 100..=110 is one cluster, 111 is not.
        assert_eq!(densest(&[100, 105, 110, 111]), Some((105, 3)));
        assert_eq!(densest(&[100, 111]), Some((100, 1)), "a tie: the one nearer the median");
        assert_eq!(densest(&[7]), Some((7, 1)));
        assert_eq!(densest(&[]), None);
    }

    #[test]
    fn disagreeing_trains_ask_for_another_round() {
        let fast = |ns| outcome(ns, 48);
        // Two good trains of five: not agreed.
        let five = [fast(24_000), fast(4_615), fast(15_000), fast(24_100), fast(7_058)];
        let e = summarize(&five, 48, 1500).expect("estimate");
        assert_eq!((e.used, e.agreeing), (5, 2));
        assert!(!e.agreed, "{e:?}");
        // A second round of good trains: seven of ten agree on 500 Mbit/s.
        let mut ten = five.to_vec();
        ten.extend([fast(24_000), fast(23_900), fast(24_050), fast(24_000), fast(9_000)]);
        let e = summarize(&ten, 48, 1500).expect("estimate");
        assert_eq!((e.used, e.agreeing), (10, 6));
        assert!(e.agreed, "{e:?}");
        assert!(e.bps.abs_diff(500_000_000) < 2_500_000, "{e:?}");
        // Three trains that agree are enough; two are not.
        assert!(
            summarize(&[fast(24_000), fast(24_000), fast(24_000)], 48, 1500)
                .expect("e")
                .agreed
        );
        assert!(!summarize(&[fast(24_000), fast(24_000)], 48, 1500).expect("e").agreed);
    }

    #[test]
    fn compressed_trains_do_not_outvote_dispersed_ones() {
        // The lab under heavy CPU steal: four trains released in a burst after the 500 Mbit/s
        // bottleneck (2.5 Gbit/s, their replies as tight as the requests left), three intact.
        let compressed = |ns| TrainOutcome {
            replies: train(ns, 48, 1500),
            send_span_ns: 400_000,
        };
        let mut v = vec![
            compressed(4_800),
            compressed(4_700),
            outcome(24_000, 48),
            compressed(4_750),
        ];
        v.extend([outcome(24_050, 48), compressed(4_790), outcome(23_980, 48)]);
        let e = summarize(&v, 48, 1500).expect("estimate");
        assert_eq!((e.used, e.dispersed, e.agreeing), (7, 3, 3));
        assert!(e.bps.abs_diff(500_000_000) < 1_000_000 && !e.sender_limited, "{e:?}");
        assert!(e.agreed);
        // Two intact trains are not enough to overrule: the densest of all, flagged, and
        // another round is due (some trains were dispersed).
        v.pop();
        let e = summarize(&v, 48, 1500).expect("estimate");
        assert_eq!((e.dispersed, e.agreeing), (2, 4));
        assert!(e.sender_limited && e.bps > 2_000_000_000 && !e.agreed, "{e:?}");
    }

    #[test]
    fn summary_flags_sender_limited_trains() {
        // Replies 10 µs apart, 47 × 10 µs = 470 µs, sent in 400 µs: no more spread than sent.
        let mut t = outcome(10_000, 48);
        t.send_span_ns = 400_000;
        let e = summarize(&[t.clone(), t.clone(), outcome(10_000, 48)], 48, 1500).expect("estimate");
        assert!(e.sender_limited, "{e:?}");
        assert_eq!(e.bps, 1_200_000_000);
    }

    #[test]
    fn summary_errors_say_why() {
        let none = summarize(&vec![TrainOutcome::default(); 3], 48, 1500).expect_err("no replies");
        assert_eq!(none, "no echo reply to 3 trains of 48 requests of 1500 bytes");
        let short = summarize(&[outcome(1000, 10), outcome(1000, 5)], 48, 1500).expect_err("short");
        assert_eq!(
            short,
            "every train lost more than half its replies (15 of 96 came back)"
        );
        let flat = summarize(&[outcome(0, 48)], 48, 1500).expect_err("flat");
        assert!(flat.contains("same instant"), "{flat}");
    }

    #[test]
    fn echo_requests_and_replies() {
        let p = echo_request(false, 0x1234, 7, 1472);
        assert_eq!(p.len(), 1472);
        assert_eq!((p[0], p[1]), (8, 0));
        assert_eq!(icmp_checksum(&p), 0, "a checksummed packet sums to zero");

        // The reply a ping socket hands over: ICMP only, 20 header bytes added.
        let mut reply = p.clone();
        reply[0] = 0;
        assert_eq!(parse_echo_reply(&reply, false, false, None), Some((7, 1492)));
        assert_eq!(parse_echo_reply(&p, false, false, None), None, "a request is no reply");
        // The raw socket's: IP header first; the total length is taken from it; ident filtered.
        let mut ip = vec![0x45, 0, 0x05, 0xdc];
        ip.resize(20, 0);
        ip.extend_from_slice(&reply);
        assert_eq!(parse_echo_reply(&ip, false, true, Some(0x1234)), Some((7, 1500)));
        assert_eq!(parse_echo_reply(&ip, false, true, Some(0x4321)), None);
        assert_eq!(parse_echo_reply(&ip[..10], false, true, None), None);

        let mut v6 = echo_request(true, 1, 65535, 1460);
        assert_eq!(v6[0], 128);
        v6[0] = 129;
        assert_eq!(parse_echo_reply(&v6, true, false, Some(1)), Some((65535, 1500)));
    }

    #[test]
    fn bad_train_shapes_are_refused() {
        let lo = IpAddr::from([127, 0, 0, 1]);
        assert!(estimate_capacity(lo, 1500, 0, 48, Duration::from_secs(1)).is_err());
        assert!(estimate_capacity(lo, 1500, 5, 1, Duration::from_secs(1)).is_err());
        assert!(estimate_capacity(lo, 1500, 1000, 1000, Duration::from_secs(1)).is_err());
    }

    #[cfg(target_os = "linux")]
    #[test]
    #[cfg_attr(not(feature = "privileged-tests"), ignore = "privileged: needs root")]
    fn trains_to_loopback() {
        let _serial = crate::measure::tests::icmp_test_lock();
        let access = crate::measure::icmp::PingAccess::current();
        assert!(
            access.is_root() || access.dgram_allowed(),
            "needs root or ping_group_range (a privileged test: never skipped)"
        );
        let started = std::time::Instant::now();
        let e = estimate_capacity(IpAddr::from([127, 0, 0, 1]), 1500, 3, 16, Duration::from_millis(500))
            .expect("loopback answers");
        // 0.4 to 0.6 s here; a hang guard with room for this VM's stalls.
        assert!(started.elapsed() < Duration::from_secs(5), "{:?}", started.elapsed());
        assert_eq!((e.per_train, e.packet_bytes), (16, 1500));
        assert!(
            e.trains.is_multiple_of(3) && e.trains <= 3 * MAX_ROUNDS,
            "whole rounds of 3: {e:?}"
        );
        assert!(e.used >= 1 && e.bps > 0, "{e:?}");
    }
}
