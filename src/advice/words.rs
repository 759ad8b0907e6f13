//! The advice's words: what the typed decision ([`super::decide`]) and the path test's evidence
//! say, for people — the reasons appended to the settings, the notes, and the worded fields of
//! the decision's JSON. The decision itself holds no sentence.

use serde::Serialize;

use super::decide::{Decision, MeasureHint, Observation, Override, PathClass, Rule, ShareSource, Side, share_of};
use super::sharing::Sharing;
use super::{End, Note};
use crate::measure::evidence::{Direction, Evidence, HeldBy, TestPeer};
use crate::text;

/// The decision as its JSON shows it: the typed fields and their words.
#[derive(Debug, Serialize)]
pub struct DecisionJson {
    pub class: PathClass,
    pub side: Side,
    /// The side's own direction was not tested: the other direction's test decided.
    pub borrowed: bool,
    pub loss_recovery: bool,
    pub loss_factor: Option<f64>,
    pub loss_pct: Option<f64>,
    pub queue_bdp: Option<f64>,
    pub window_share: f64,
    pub window_share_source: &'static str,
    pub tcp_rate_bps: Option<u64>,
    pub notsent_lowat: u64,
    pub why_class: String,
    pub why_share: String,
    pub how_to_measure: Option<String>,
    /// What the test's shape said of others on the path (competing flows, a policer).
    pub sharing: Option<super::sharing::Sharing>,
}

impl DecisionJson {
    pub fn of(d: &Decision) -> Self {
        Self {
            class: d.class,
            side: d.side,
            borrowed: d.borrowed,
            loss_recovery: d.loss_recovery,
            loss_factor: d.loss_factor,
            loss_pct: d.loss_pct,
            queue_bdp: d.queue_bdp,
            window_share: d.window_share,
            window_share_source: share_source(d.share_source),
            tcp_rate_bps: d.tcp_rate_bps,
            notsent_lowat: d.notsent_lowat,
            why_class: why_class(d),
            why_share: why_share(d),
            how_to_measure: how_to_measure(d),
            sharing: d.sharing,
        }
    }
}

/// The decision's JSON: the typed fields and their words ([`DecisionJson`]).
impl Serialize for Decision {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        DecisionJson::of(self).serialize(s)
    }
}

/// The clean path's rule, the one wording every place that states it uses (calc's and
/// profiles' footers; the README quotes it): from [`crate::bdp`]'s own numbers.
pub fn clean_rule() -> String {
    format!(
        "receive {} BDP + {}\u{2013}{} % RTT headroom, send {} BDP",
        text::times(crate::bdp::BUFFER_FACTOR),
        text::sig(crate::bdp::MIN_HEADROOM * 100.0, 2),
        text::sig(crate::bdp::MAX_HEADROOM * 100.0, 2),
        text::times(crate::bdp::SEND_FACTOR)
    )
}

/// Why a path nobody tested gets the worst case's maxima, and what would size them lower:
/// the one line the class says it in (after its rule, "bbr, 6 × BDP").
pub fn unmeasured_on_purpose() -> &'static str {
    "the worst case on purpose, without a path test: --ssh or a peer measures the path and may size lower"
}

/// The evidence behind the class and the rule it chose, in one line: "E1; E2 → bbr and 5 × BDP".
pub fn why_class(d: &Decision) -> String {
    let evidence: Vec<String> = d.observations.iter().map(observation).collect();
    format!("{} → {}", evidence.join("; "), rule(d))
}

/// What the rule sizes and chooses, in the OS's terms.
fn rule(d: &Decision) -> String {
    let f = d.loss_factor.unwrap_or(crate::bdp::LOSS_FACTOR);
    let times = if f.fract() == 0.0 {
        format!("{f:.0}")
    } else {
        format!("{f:.1}")
    };
    // The heavy-loss factor carries its rule in the reason.
    let heavy = if f > crate::bdp::LOSS_FACTOR {
        format!(
            " (from {} % loss after startup tcptune's lab needed {times}, not {}, to keep BBR's window through the repairs)",
            crate::bdp::LOSS_SCALE_FROM_PCT,
            crate::bdp::LOSS_FACTOR
        )
    } else {
        String::new()
    };
    match (d.rule, d.linux) {
        (Rule::LossRecovery, true) => format!("bbr and {times} × BDP{heavy}"),
        (Rule::Clean, true) => "cubic and 2 × BDP + headroom".into(),
        (Rule::Unmeasured, true) => {
            format!("bbr and {times} × BDP, the best worst case over clean, lossy and shallow lab paths")
        }
        (Rule::LossRecovery, false) => format!("{times} × BDP (loss recovery){heavy}"),
        (Rule::Clean, false) => "2 × BDP + headroom".into(),
        (Rule::Unmeasured, false) => {
            format!("{times} × BDP (loss recovery), the best worst case over clean, lossy and shallow lab paths")
        }
        (Rule::Shared, true) => {
            format!("cubic, a fair neighbour to the flows beside it, and {times} × BDP for the queue they keep")
        }
        (Rule::Shared, false) => format!("{times} × BDP for the queue the flows beside it keep"),
    }
}

/// One observation, for people.
pub fn observation(o: &Observation) -> String {
    match o {
        Observation::Given(Override::Clean) => "--clean-path given".into(),
        Observation::Given(Override::Lossy) => "--loss-recovery given".into(),
        Observation::Given(Override::None) => String::new(),
        Observation::StartupNotLeft { test_s } => format!(
            "loss not measured: the test flow did not leave startup within {} (a longer --test-time lets it)",
            text::secs(*test_s)
        ),
        Observation::LossHoldsCubic {
            pct: p,
            retransmitted,
            segments,
            test_s,
            cubic_bps,
            cubic_bdps,
        } => loss_holds_cubic(*p, (*retransmitted, *segments), *test_s, (*cubic_bps, *cubic_bdps)),
        Observation::LossTooSmall {
            pct: p,
            retransmitted,
            segments,
        } => format!(
            "{} retransmitted after startup ({} of {} segments): too little to hold CUBIC below the BDP",
            pct(*p),
            text::count(*retransmitted),
            text::count(*segments)
        ),
        Observation::LossInBursts {
            retransmitted,
            bursts,
            intervals,
        } => in_bursts(*retransmitted, *bursts, *intervals),
        Observation::NoRetransmission {
            segments,
            test_s,
            bound_pct,
            limit_pct,
        } => no_retransmission(*segments, *test_s, *bound_pct, *limit_pct),
        Observation::Queue {
            min_ms,
            loaded_ms,
            bdps,
        } => queue_grew(*min_ms, *loaded_ms, *bdps),
        Observation::HeldByWindow(by) => held_by_window(*by),
        Observation::StreamsFilled {
            streams,
            window,
            test_s,
        } => format!(
            "the test was held by the receiver's window ({}), so {streams} parallel streams each held by it (iperf3 -P {streams}, {}) filled the bottleneck queue instead",
            text::size(*window),
            text::secs(*test_s)
        ),
        Observation::PacedAgain {
            retransmitted,
            queue_bdps,
            rate_bps,
            test_s,
        } => paced_again(*retransmitted, *queue_bdps, *rate_bps, *test_s),
        Observation::NoLoadedRtt => "the test gave no RTT under load: queue depth not measured".into(),
        Observation::PassiveLoss { pct: p, sent_bytes } => passive_loss(*p, *sent_bytes),
        Observation::CachedSsthresh { segments, bdps } => format!(
            "the kernel keeps a slow-start threshold of {segments} segments ({} BDP) for it: earlier flows lost packets",
            text::times(*bdps)
        ),
        Observation::NoLossCount => {
            "the sender reported no retransmissions per interval: no loss after startup read".into()
        }
        Observation::OtherDirection { loss, queue } => stands_in(*loss, *queue),
        Observation::Others(s) => others(s),
        Observation::Spurious {
            spurious,
            retransmitted,
        } => spurious_words(*spurious, *retransmitted),
        Observation::NotBothMeasured => "loss and queue depth not both measured".into(),
        Observation::NotMeasured => "the path's loss and queue depth were not measured (no TCP test)".into(),
    }
}

/// This host's live flows' loss, for people.
fn passive_loss(p: f64, sent_bytes: u64) -> String {
    format!(
        "this host's live flows to it retransmitted {} of {} sent",
        pct(p),
        text::size(sent_bytes)
    )
}

/// Retransmissions the receiver got twice, for people.
fn spurious_words(spurious: u64, retransmitted: u64) -> String {
    format!(
        "{} of the {} retransmissions after startup the receiver got twice (D-SACK): spurious, the first copies came late (reordering), so they are no loss of the path",
        text::count(spurious),
        text::count(retransmitted)
    )
}

/// Retransmissions in bursts, left out, for people.
fn in_bursts(retransmitted: u64, bursts: usize, intervals: usize) -> String {
    format!(
        "{} retransmissions after startup came in bursts, in {bursts} of {intervals} 1-s intervals, each more than random loss at the other intervals' rate gives: a queue overflowing, not the path's random loss, so they are left out",
        text::count(retransmitted)
    )
}

/// Others on the path, or a policer, for people.
fn others(s: &Sharing) -> String {
    match *s {
        Sharing::Competing {
            rate_bps,
            capacity_bps,
            standing_ms,
        } => {
            let of = capacity_bps.map_or_else(String::new, |c| format!(" of the trains' {}", text::rate(c)));
            format!(
                "the test got {}{of} while a queue of {} stood though it sent paced (its own would drain): others share this bottleneck, and what it got is what they left",
                text::rate(rate_bps),
                text::millis(standing_ms)
            )
        }
        Sharing::Probed { low_ms, high_ms, .. } => format!(
            "with nothing of this host's sending, the probes' lowest RTT moved between {} and {} over quarter seconds, far more than they scattered within one: others fill and drain a queue on this path (the BDP is at the lowest RTT seen; the path's own may be lower still)",
            text::millis(low_ms),
            text::millis(high_ms)
        ),
        Sharing::Policed {
            rate_bps,
            capacity_bps,
            startup_loss_pct,
        } => format!(
            "the rate stopped at about {}, well below the trains' {}, with {} lost in startup at the base RTT and no queue growing before the losses: a policer (a token bucket drops what exceeds its rate and never queues; more buffer does not help)",
            text::rate(rate_bps),
            text::rate(capacity_bps),
            pct(startup_loss_pct)
        ),
    }
}

/// No retransmission after startup, and the loss that rules out.
fn no_retransmission(segments: u64, test_s: f64, bound_pct: f64, limit_pct: f64) -> String {
    let seen = format!(
        "no retransmission after startup in {} segments over {} (loss below {} at 95 %",
        text::count(segments),
        text::secs(test_s),
        pct(bound_pct)
    );
    if bound_pct <= limit_pct {
        format!("{seen}, under the {} CUBIC holds this path at)", pct(limit_pct))
    } else {
        // What a test of this length can show: a path this long and fast fails CUBIC at a
        // loss no test of seconds can rule out; the advice reads no loss as none.
        format!(
            "{seen}; CUBIC would fail here at {}, which only about {} segments could rule out: read as none)",
            pct(limit_pct),
            text::count(crate::bdp::zero_loss_segments(limit_pct))
        )
    }
}

/// Loss after startup, `p` %, `retransmitted` of `segments`, that holds CUBIC below the BDP, at
/// `cubic` (bit/s, × BDP), for people.
fn loss_holds_cubic(p: f64, (retransmitted, segments): (u64, u64), test_s: f64, cubic: (f64, f64)) -> String {
    format!(
        "{} retransmitted after startup ({} of {} segments) over {}: CUBIC would hold about {} ({} BDP) at that loss",
        pct(p),
        text::count(retransmitted),
        text::count(segments),
        text::secs(test_s),
        text::rate(cubic.0),
        text::times(cubic.1)
    )
}

/// The other direction's reading standing in for what this one's test did not read.
fn stands_in(loss: bool, queue: bool) -> String {
    format!(
        "the other direction's test stands in for the {} this one did not read (the path taken as symmetric in that)",
        match (loss, queue) {
            (true, true) => "loss and queue depth",
            (true, false) => "loss after startup",
            _ => "queue depth",
        }
    )
}

/// The RTT growth under load, for people.
fn queue_grew(min_ms: f64, loaded_ms: f64, bdps: f64) -> String {
    format!(
        "the RTT grew from {} to {} under load: a bottleneck queue of about {} BDP",
        text::millis(min_ms),
        text::millis(loaded_ms),
        text::times(bdps)
    )
}

/// Why the test could not fill the queue: the buffer that held it.
fn held_by_window(by: Option<HeldBy>) -> String {
    format!(
        "the test was held by {}, so it could not fill the bottleneck queue: queue depth not measured",
        match by {
            None => "its window",
            Some(HeldBy::ReceiveWindow) => "the receiver's window (its receive buffer)",
            Some(HeldBy::SendBuffer) => "the sender's send buffer",
        }
    )
}

/// The paced second run that counted the path's loss in place of the test's.
fn paced_again(retransmitted: u64, queue_bdps: f64, rate_bps: f64, test_s: f64) -> String {
    format!(
        "the test's {} retransmissions after startup may be its own: its unpaced flow keeps up to 2 × BDP in flight, behind a queue of {} BDP, so a second run paced at {} ({}) counted the path's loss instead",
        text::count(retransmitted),
        text::times(queue_bdps),
        text::rate(rate_bps),
        text::secs(test_s)
    )
}

/// Where the receive-window share came from, as the JSON names it.
pub fn share_source(s: ShareSource) -> &'static str {
    match s {
        ShareSource::ThisHost(_) => "this host's live flows",
        ShareSource::FarEnd(_) => "the far end (path test)",
        ShareSource::Assumed => "assumed",
    }
}

/// The evidence behind the receive-window share, and the share used when the reading was
/// out of bounds.
pub fn why_share(d: &Decision) -> String {
    let read = share_of(d.share_source);
    let why = match d.share_source {
        ShareSource::ThisHost(s) => format!(
            "this host's live flows advertise {} of their receive buffer",
            share_pct(s)
        ),
        ShareSource::FarEnd(s) => format!(
            "the far end advertised {} of its receive buffer as window (its driver's payload/truesize); this host is assumed alike",
            share_pct(s)
        ),
        ShareSource::Assumed => {
            "the receive-window share was not measured: assumed one half (Linux's scaling_ratio for typical 1500-byte frames)".into()
        }
    };
    if (d.window_share - read).abs() > f64::EPSILON {
        format!("{why}, used as {}", share_pct(d.window_share))
    } else {
        why
    }
}

/// How to measure what was not, for people.
pub fn how_to_measure(d: &Decision) -> Option<String> {
    Some(match d.how_to_measure.as_ref()? {
        MeasureHint::LongerTest { on, cut_by_bytes, held } => format!(
            "to measure them, advise again with {}{}",
            longer(*cut_by_bytes),
            if *held {
                format!(", with `tcptune serve` on {on} running as root so the test is not held by its buffers")
            } else {
                String::new()
            }
        ),
        MeasureHint::RunServe { on } => format!(
            "to measure them, run `tcptune serve` on {on} (as root, so the test is not held by its buffers) and advise again with --host, or run an iperf3 server there and add --iperf3"
        ),
    })
}

/// The class as the notes name it.
fn class_name(c: PathClass) -> &'static str {
    match c {
        PathClass::Clean => "clean",
        PathClass::Lossy => "lossy",
        PathClass::Shallow => "shallow queue",
        PathClass::Unmeasured => "not measured",
        PathClass::Shared => "shared",
        PathClass::Policed => "policed",
    }
}

/// The notes that report the evidence and what was not measured: the tests (in this host's
/// advice; the far end's shares them), then each side's class — one note when both sides
/// followed the same test.
pub fn notes(ev: Option<&Evidence>, send: &Decision, receive: &Decision, end: End) -> Vec<Note> {
    let mut notes = Vec::new();
    if let Some(ev) = ev.filter(|_| end == End::Near) {
        notes.extend(test_notes(ev));
    }
    // The class line of the file and the terminal says these; the derivation says them whole.
    if receive.borrowed || (send.class == receive.class && why_class(send) == why_class(receive)) {
        notes.push(Note::detail(format!(
            "path class {}: {}",
            class_name(send.class),
            why_class(send)
        )));
    } else {
        for d in [send, receive] {
            notes.push(Note::detail(format!(
                "path class, {}: {}: {}",
                direction_of(d.side, end),
                class_name(d.class),
                why_class(d)
            )));
        }
    }
    notes.extend(how_to_measure(send).map(|long| match &send.how_to_measure {
        Some(hint) => Note::with_short(long, measure_hint_short(hint)),
        None => Note::detail(long),
    }));
    notes.extend(sharing_note(send, end));
    notes
}

/// What to do about what the test saw of others: a policer's rate as a pacing cap; where
/// nothing measured the path, that its other flows' share was not measured either.
fn sharing_note(d: &Decision, end: End) -> Option<Note> {
    match (d.sharing, d.class) {
        (Some(Sharing::Policed { rate_bps, .. }), _) => {
            let r = text::rate(rate_bps);
            Some(Note::with_short(
                format!(
                    "a policer holds this path at about {r}: a flow paced at or below it loses nothing there, where bursts above it are dropped (more buffer does not help): `tc qdisc replace dev IF root fq maxrate {r}` where the fq qdisc runs, SO_MAX_PACING_RATE in programs that set it; bbr finds that rate itself"
                ),
                format!("a policer at about {r}: pace at or below it (fq maxrate, SO_MAX_PACING_RATE); bbr finds it"),
            ))
        }
        (_, PathClass::Unmeasured) if end == End::Near => Some(Note::with_short(
            "the share left to other flows on this path was not measured: behind a shallow queue bbr takes more than its share from CUBIC flows beside it (tcptune's lab, 50 ms, a queue of 0.5 × BDP: 2.6 × its fair share, its two neighbours 0.17 × theirs); a TCP test (--ssh, or tcptune serve there) sees whether others share it",
            "the share left to flows beside it was not measured: a TCP test (--ssh) sees them",
        )),
        _ => None,
    }
}

/// What makes the next test longer: a larger byte cap where the cap ended it, else more time.
fn longer(cut_by_bytes: bool) -> &'static str {
    if cut_by_bytes {
        "a larger --test-bytes (the test stopped at its byte cap)"
    } else {
        "a longer --test-time (e.g. 30s on a long path)"
    }
}

/// How to measure what was not, in one line.
fn measure_hint_short(h: &MeasureHint) -> String {
    // No host named: the words a user would type.
    let host = |on: &str| {
        if on == "the far end" {
            "HOST".to_string()
        } else {
            on.to_string()
        }
    };
    match h {
        MeasureHint::LongerTest { on, cut_by_bytes, held } => format!(
            "to measure loss and queue: advise again with {}{}",
            longer(*cut_by_bytes),
            if *held {
                format!(
                    " (`tcptune serve` as root on {}: the test was held by its buffers)",
                    host(on)
                )
            } else {
                String::new()
            }
        ),
        MeasureHint::RunServe { on } => format!(
            "to measure loss and queue: advise --ssh {0} (or `tcptune serve` there and --host {0})",
            host(on)
        ),
    }
}

/// The direction of the data a side of an end acts on, named from this host.
fn direction_of(side: Side, end: End) -> &'static str {
    match (side, end) {
        (Side::Send, End::Near) | (Side::Receive, End::Far) => "this host sending",
        (Side::Receive, End::Near) | (Side::Send, End::Far) => "the far end sending",
    }
}

/// What each test showed, or why there was none.
fn test_notes(ev: &Evidence) -> Vec<Note> {
    let mut notes = Vec::new();
    if let Some(t) = &ev.test {
        notes.push(Note::detail(test_note(t)));
        notes.extend(t.notes.iter().map(|n| Note::detail(format!("path test: {n}"))));
        notes.extend(t.retest.as_ref().map(|r| Note::detail(retest_note(r))));
    } else if let Some(why) = &ev.test_skipped {
        notes.push(Note::shown(format!("no TCP path test: {why}")));
    }
    if let Some(t) = &ev.reverse {
        notes.push(Note::detail(test_note(t)));
        notes.extend(t.notes.iter().map(|n| Note::detail(format!("reverse path test: {n}"))));
    } else if let (Some(_), Some(why)) = (&ev.test, &ev.reverse_skipped) {
        notes.push(Note::with_short(
            format!("no reverse path test ({why}): the far end's sending direction is taken as this one"),
            format!("no reverse path test ({why}): the far end's direction is taken as this one"),
        ));
    }
    if let Some(p) = &ev.passive {
        notes.extend(p.notes.iter().map(|n| Note::detail(format!("passive evidence: {n}"))));
    }
    notes
}

/// One test, in one line: what moved, at what rate, with what loss, RTT and share.
fn test_note(t: &crate::measure::evidence::TcpTest) -> String {
    let peer = match t.peer {
        Some(TestPeer::Iperf3) => "iperf3",
        _ => "tcptune serve",
    };
    let mut parts = vec![format!(
        "{} bytes ({}) in {} ({})",
        text::count(t.bytes),
        text::size(t.bytes),
        text::secs(t.duration_s),
        text::rate(t.goodput_bps)
    )];
    if let Some(cc) = &t.cc {
        parts.push(format!("with {cc}"));
    }
    if let Some(p) = t.steady_loss_pct() {
        let bursts = t
            .loss_bursts
            .map_or(String::new(), |b| format!(" ({} more in bursts)", b.retrans_segs));
        parts.push(format!("{} retransmitted after startup{bursts}", text::pct(p)));
    }
    if let (Some(min), Some(loaded)) = (t.min_rtt_ms, t.loaded_rtt_ms) {
        parts.push(format!(
            "RTT {}, {} under load",
            text::millis(min),
            text::millis(loaded)
        ));
    }
    if let Some(s) = t.window_share {
        parts.push(format!(
            "the receiver advertised {} of its buffer",
            text::pct(s * 100.0)
        ));
    }
    let what = match t.direction {
        Direction::Forward => format!("TCP path test to {}", t.addr),
        Direction::Reverse => format!("reverse TCP path test from {} (the far end sending)", t.addr),
    };
    format!(
        "{what} ({peer}, at most {} or {}): {}",
        text::secs(t.limit_s),
        text::size(t.limit_bytes),
        parts.join(", ")
    )
}

/// The second iperf3 run, in one line: which, how long, what it reached.
fn retest_note(r: &crate::measure::evidence::Retest) -> String {
    use crate::measure::evidence::RetestKind;
    let what = match r.kind {
        RetestKind::Streams { streams, window } => {
            format!("iperf3 -P {streams}, each stream held by the {window}-byte window that held the test")
        }
        RetestKind::Paced { rate_bps } => format!("one flow paced at {}", text::rate(rate_bps)),
    };
    format!(
        "second iperf3 run ({what}): {}, {} after startup, {} of {} segments retransmitted then, RTT {}, {} under load",
        text::secs(r.duration_s),
        text::rate(r.rate_bps),
        r.steady_retrans_segs,
        text::count(r.steady_segs_out),
        text::millis(r.min_rtt_ms),
        text::millis(r.loaded_rtt_ms)
    )
}

/// A loss or a share in percent, in the one percent style ([`text::pct`]).
fn pct(p: f64) -> String {
    text::pct(p)
}

fn share_pct(s: f64) -> String {
    text::pct(s * 100.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 36, point 7: a test cut short by its byte cap was told to take a longer
    /// --test-time, and "`tcptune serve` as root" though serve ran as root.
    #[test]
    fn the_way_to_measure_names_what_cut_the_test_and_only_then_root() {
        let hint = |cut_by_bytes, held| {
            measure_hint_short(&MeasureHint::LongerTest {
                on: "198.18.0.2".into(),
                cut_by_bytes,
                held,
            })
        };
        let bytes = hint(true, false);
        assert!(
            bytes.contains("a larger --test-bytes") && !bytes.contains("--test-time"),
            "{bytes}"
        );
        assert!(!bytes.contains("as root"), "{bytes}");
        let time = hint(false, false);
        assert!(
            time.contains("a longer --test-time") && !time.contains("as root"),
            "{time}"
        );
        let held = hint(false, true);
        assert!(held.contains("`tcptune serve` as root on 198.18.0.2"), "{held}");
    }

    #[test]
    fn the_clean_rule_reads_the_models_numbers() {
        assert_eq!(
            clean_rule(),
            "receive 2 \u{d7} BDP + 10\u{2013}25 % RTT headroom, send 2.5 \u{d7} BDP"
        );
        assert!(unmeasured_on_purpose().starts_with("the worst case on purpose"));
    }
}
