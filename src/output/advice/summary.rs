//! The advice in a few short lines, from its typed values: the path and what the tests read of
//! each direction, the class and the one reason for it, the verdict, the count of changes and
//! the notes a person should see without asking. Every renderer (the file, the shell script,
//! the terminal, the fleets' comments, JSON's `summary`) says these the same way; each fact is
//! said once, and the whole derivation is [`super::explain`]'s.

use crate::advice::decide::{Decision, Observation, Override, PathClass, Rule};
use crate::advice::sharing::Sharing;
use crate::advice::{Advice, End, RateBasis};
use crate::bdp::Source;
use crate::profile::{Action, Stage};
use crate::text;

/// "tcptune 0.1.0 advice for linux, 2026-11-25T04:03:53Z".
pub fn title(a: &Advice) -> String {
    format!("tcptune {} advice for {}, {}", a.tcptune_version, a.os, a.generated)
}

/// Where a rate came from, in a word or two.
fn basis(b: RateBasis) -> &'static str {
    match b {
        RateBasis::Given => "given",
        RateBasis::TcpTest => "TCP test",
        RateBasis::TrainsOverTest => "packet trains; the test read less",
        RateBasis::Trains => "packet trains",
        RateBasis::TrainsAtLeast => "packet trains: at least",
        RateBasis::LinkSpeed => "link speed",
        RateBasis::Assumed => "ASSUMED: not measured",
    }
}

/// The path in one line: its host, RTT, the rate that sized the buffers and where it came
/// from (each direction's, where a reverse test read another), and its BDP.
pub fn path(a: &Advice) -> String {
    let host = a
        .host
        .as_deref()
        .map(|h| format!(" to {}", text::escape(h)))
        .unwrap_or_default();
    let rtt = match a.rtt_source {
        Source::Given => "given",
        _ => "measured",
    };
    let rate = text::rate(a.bandwidth_bps as f64);
    let rates = match a.receive_bandwidth_bps {
        // Within 2 %, one rate for both directions.
        Some(r) if (r as f64 - a.bandwidth_bps as f64).abs() > a.bandwidth_bps as f64 * 0.02 => format!(
            "{rate} sending ({}), {} receiving ({})",
            basis(a.bandwidth_basis),
            text::rate(r as f64),
            basis(a.receive_bandwidth_basis.unwrap_or(a.bandwidth_basis))
        ),
        // Two tests read two rates, however close: each direction says its own where they
        // read apart, so the verdict's (the receiving one's) is the one this line gives it
        // ("each way" quoted the sending rate, and the far end's block the other).
        Some(r) if a.receive_bandwidth_basis == Some(RateBasis::TcpTest) && a.bandwidth_basis == RateBasis::TcpTest => {
            match text::rate(r as f64) {
                same if same == rate => format!("{rate} each way (TCP tests)"),
                other => format!("{rate} sending, {other} receiving (TCP tests)"),
            }
        }
        _ => format!("{rate} ({})", basis(a.bandwidth_basis)),
    };
    format!(
        "path{host}: RTT {} ({rtt}), {rates}, BDP {}",
        text::millis(a.rtt_ms),
        text::size(a.sizing.bdp)
    )
}

/// `advise --size`: the transfer at today's settings and at the advised rate, in one line:
/// "transfer of 1.82 TiB: 44.9 h at 99 Mbit/s today (a 1.77 MiB window), 5.56 h at the advised 800 Mbit/s".
pub fn transfer(t: &crate::advice::transfer::Transfer) -> String {
    #[allow(clippy::cast_precision_loss)]
    let rate = |bps: u64| text::rate(bps as f64);
    let advised = format!("{} at the advised {}", text::took(t.advised_s), rate(t.advised_bps));
    let size = format!("transfer of {}", text::size(t.bytes));
    match (t.today_bps, t.today_s, t.today_window_bytes) {
        (Some(bps), _, _) if bps >= t.advised_bps => {
            format!("{size}: {advised}; today's receive max carries that rate already")
        }
        (Some(bps), Some(s), Some(w)) => format!(
            "{size}: {} at {} today (a {} window), {advised}",
            text::took(s),
            rate(bps),
            text::size(w)
        ),
        _ => format!("{size}: {advised} (today's receive max not known)"),
    }
}

/// What the tests read of one side's direction: its loss after startup and its queue.
pub fn reading(d: &Decision) -> Option<String> {
    if d.class == PathClass::Unmeasured || d.observations.iter().any(|o| matches!(o, Observation::Given(_))) {
        return None;
    }
    match d.sharing {
        Some(Sharing::Competing { standing_ms, .. }) => {
            return Some(format!("others' queue of {} standing", text::millis(standing_ms)));
        }
        Some(Sharing::Probed { low_ms, high_ms, .. }) => {
            return Some(format!(
                "others' queue moved the RTT from {} to {}",
                text::millis(low_ms),
                text::millis(high_ms)
            ));
        }
        Some(Sharing::Policed { rate_bps, .. }) => {
            return Some(format!(
                "policed at about {}, loss at the base RTT",
                text::rate(rate_bps)
            ));
        }
        None => {}
    }
    let spurious = d.observations.iter().find_map(|o| match o {
        Observation::Spurious { spurious, .. } => Some(*spurious),
        _ => None,
    });
    let loss = d
        .loss_pct
        .map_or_else(|| "loss not measured".to_string(), |p| format!("{} loss", text::pct(p)));
    let queue = d.queue_bdp.map_or_else(
        || "queue not measured".to_string(),
        |q| format!("queue {} BDP", text::times(q)),
    );
    let borrowed = if d.borrowed { " (read the other way)" } else { "" };
    let reordered = spurious.map_or_else(String::new, |s| format!(" ({} spurious: reordering)", text::count(s)));
    Some(format!("{loss}{reordered}, {queue}{borrowed}"))
}

/// What was measured of each direction, in one line; None when nothing was.
pub fn measured(a: &Advice) -> Option<String> {
    let send = reading(&a.decision);
    let receive = reading(&a.receive_decision);
    match (send, receive) {
        (None, None) => None,
        (Some(s), Some(r)) if s == r => Some(format!("measured: {s}, both ways")),
        (s, r) => Some(format!(
            "measured: sending {}; receiving {}",
            s.unwrap_or_else(|| "not measured".into()),
            r.unwrap_or_else(|| "not measured".into())
        )),
    }
}

/// A test's rate over time as a sparkline of at most `width` bars, the bars with a burst of
/// retransmissions (more than twice the test's mean per point) drawn `×`.
pub fn sparkline(t: &crate::measure::evidence::TcpTest, width: usize) -> String {
    let rates: Vec<f64> = t.series.iter().map(|p| p.rate_bps).collect();
    let counted: Vec<u64> = t.series.iter().filter_map(|p| p.retrans).collect();
    #[allow(clippy::cast_precision_loss)]
    let mean = counted.iter().sum::<u64>() as f64 / counted.len().max(1) as f64;
    #[allow(clippy::cast_precision_loss)]
    let marked: Vec<bool> = t
        .series
        .iter()
        .map(|p| p.retrans.is_some_and(|r| r > 0 && r as f64 > 2.0 * mean))
        .collect();
    text::sparkline(&rates, &marked, width)
}

/// The class as a word.
pub fn class_name(c: PathClass) -> &'static str {
    match c {
        PathClass::Clean => "clean",
        PathClass::Lossy => "lossy",
        PathClass::Shallow => "shallow queue",
        PathClass::Unmeasured => "not measured",
        PathClass::Shared => "shared with other flows",
        PathClass::Policed => "policed",
    }
}

/// What the rule sizes and chooses: "bbr, 6 × BDP"; without its congestion control where
/// `names_cc` is false (the advice sets none: a LAN-sized path, where CUBIC holds the BDP
/// through loss), so the class line never names an algorithm no line below changes to.
fn rule(d: &Decision, names_cc: bool) -> String {
    let size = rule_receive(d);
    let loss = matches!(d.rule, Rule::LossRecovery | Rule::Unmeasured);
    match (d.linux, names_cc) {
        (true, true) if loss => format!("bbr, {size}"),
        (true, true) => format!("cubic, {size}"),
        (true, false) => size,
        (false, _) if loss => format!("{size} for loss recovery"),
        (false, _) => size,
    }
}

/// Whether the advice sets a congestion control (host-wide, or on its route).
fn names_cc(a: &Advice) -> bool {
    a.route.is_some() || a.settings.iter().any(|s| s.key == crate::host::facts::CURRENT_CC)
}

/// The one reason for a side's class, from its deciding observation.
fn reason(d: &Decision) -> String {
    // The fair neighbour a shared path gets, by name where the profile chooses it.
    let fair = if d.linux { "CUBIC" } else { "a fair congestion control" };
    let obs = &d.observations;
    if let Some(Observation::Given(o)) = obs.iter().find(|o| matches!(o, Observation::Given(_))) {
        return match o {
            Override::Lossy => "--loss-recovery given".into(),
            Override::Clean => "--clean-path given".into(),
            Override::None => String::new(),
        };
    }
    match d.class {
        PathClass::Unmeasured => crate::advice::words::unmeasured_on_purpose().into(),
        PathClass::Lossy => obs
            .iter()
            .find_map(|o| match o {
                Observation::LossHoldsCubic { pct, cubic_bps, .. } => Some(format!(
                    "at {} loss CUBIC would hold about {}",
                    text::pct(*pct),
                    text::rate(*cubic_bps)
                )),
                Observation::PassiveLoss { pct, .. } => {
                    Some(format!("this host's live flows to it lost {}", text::pct(*pct)))
                }
                Observation::CachedSsthresh { .. } => Some("earlier flows to it lost packets".into()),
                _ => None,
            })
            .unwrap_or_else(|| "loss that would hold CUBIC below the BDP".into()),
        PathClass::Shallow => match d.queue_bdp {
            Some(q) => format!("a queue of only {} BDP, which CUBIC overflows", text::times(q)),
            None => "a shallow queue, which CUBIC overflows".into(),
        },
        PathClass::Clean => "no loss after startup, and a queue deep enough for CUBIC".into(),
        PathClass::Shared => obs
            .iter()
            .find_map(|o| match o {
                Observation::Others(Sharing::Competing {
                    rate_bps, capacity_bps, ..
                }) => Some(match capacity_bps {
                    Some(c) => format!(
                        "others share this path: {} keeps their share and yours (the test got {} of {} beside them)",
                        fair,
                        text::rate(*rate_bps),
                        text::rate(*c)
                    ),
                    None => format!(
                        "others share this path (a queue stood that the test did not fill): {} keeps their share and yours",
                        fair
                    ),
                }),
                Observation::Others(Sharing::Probed { low_ms, high_ms, .. }) => Some(format!(
                    "others share this path: a queue of about {} rose and fell while tcptune probed; {} keeps their share and yours",
                    text::millis(high_ms - low_ms),
                    fair
                )),
                _ => None,
            })
            .unwrap_or_default(),
        PathClass::Policed => obs
            .iter()
            .find_map(|o| match o {
                Observation::Others(Sharing::Policed { rate_bps, .. }) => Some(format!(
                    "a policer caps this path at about {}: no setting goes past it{}",
                    text::rate(*rate_bps),
                    if d.linux { "; BBR finds that rate without losing" } else { "" }
                )),
                _ => None,
            })
            .unwrap_or_default(),
    }
}

/// The class and the one reason for it: one line when both sides of this end follow the same
/// evidence, else one per side.
pub fn class(a: &Advice) -> Vec<String> {
    let (s, r) = (&a.decision, &a.receive_decision);
    let cc = names_cc(a);
    if s.class == r.class && rule(s, cc) == rule(r, cc) {
        // The same class and rule both ways: one line, with the sending side's reason (the
        // congestion control's).
        let both = if reason(s) == reason(r) || s.class == PathClass::Unmeasured {
            ""
        } else {
            " both ways"
        };
        return vec![format!(
            "class: {}{both} \u{2192} {}: {}",
            class_name(s.class),
            rule(s, cc),
            reason(s)
        )];
    }
    let (tx, rx) = match a.end {
        End::Near => ("sending", "receiving"),
        End::Far => ("sending (the far end)", "receiving"),
    };
    vec![
        format!(
            "class {tx}: {} \u{2192} {} (send max, congestion control): {}",
            class_name(s.class),
            rule(s, cc),
            reason(s)
        ),
        format!(
            "class {rx}: {} \u{2192} {} (receive max): {}",
            class_name(r.class),
            rule_receive(r),
            reason(r)
        ),
    ]
}

/// The derivation's line for a path sized as not measured (no path test): its maxima are the
/// worst case's on purpose, and what would size them lower; None where a test (or the user)
/// decided. (The class line says it after its rule.)
pub fn on_purpose(a: &Advice) -> Option<String> {
    let d = [&a.decision, &a.receive_decision]
        .into_iter()
        .find(|d| d.rule == Rule::Unmeasured)?;
    Some(format!(
        "maxima {} BDP: {}",
        text::times(d.loss_factor.unwrap_or(crate::bdp::LOSS_FACTOR)),
        crate::advice::words::unmeasured_on_purpose()
    ))
}

/// A receive side's rule: only its buffer.
fn rule_receive(d: &Decision) -> String {
    match d.rule {
        Rule::Clean => "2 \u{d7} BDP + headroom".into(),
        _ => format!("{} BDP", text::times(d.loss_factor.unwrap_or(crate::bdp::LOSS_FACTOR))),
    }
}

/// The settings counted: to change, already right, not applied here.
pub struct Counts {
    pub change: usize,
    pub keep: usize,
    pub unavailable: usize,
}

pub fn counts(a: &Advice) -> Counts {
    let mut c = Counts {
        change: 0,
        keep: 0,
        unavailable: 0,
    };
    let route = a.route.as_ref().map(|r| (&r.action, Stage::Runtime));
    for (action, stage) in a.settings.iter().map(|s| (&s.action, s.stage)).chain(route) {
        match (action, stage) {
            (Action::Set, _) | (_, Stage::Boot) => c.change += 1,
            (Action::Keep, _) => c.keep += 1,
            (Action::Unavailable(_), _) => c.unavailable += 1,
        }
    }
    c
}

/// `--scope path`: what is scoped and what stays host-wide, in one line; None for host-wide
/// advice.
pub fn scope_line(a: &Advice) -> Option<String> {
    let r = a.route.as_ref()?;
    if r.action == Action::Keep && r.prior.is_none() {
        return Some(format!(
            "scope: {} to {} is the host-wide default already (no route needed); buffer maxima host-wide caps",
            text::escape(&r.algorithm),
            r.dest
        ));
    }
    let elsewhere = r
        .host_wide
        .as_deref()
        .map(|d| format!(", {} elsewhere", text::escape(d)))
        .unwrap_or_default();
    Some(format!(
        "scope: {} only to {} (a host route){elsewhere}; buffer maxima host-wide caps",
        text::escape(&r.algorithm),
        r.dest
    ))
}

/// `--scope path` with a route to write: what becomes of it, in one line — `sysctl -p` skips the
/// route line, the route ends at reboot or when its link goes down, and how to keep it. None
/// where no route is written.
pub fn route_life(a: &Advice) -> Option<String> {
    let r = a.route.as_ref().filter(|r| r.action == Action::Set)?;
    let dev = r
        .route
        .as_ref()
        .and_then(|x| x.dev.as_deref())
        .map_or_else(|| "its interface".to_string(), text::shell_word);
    Some(format!(
        "the route: sysctl -p skips it, and it ends at reboot or when {dev} goes down; keep it with \
         `tcptune apply FILE` at boot, or --format networkd"
    ))
}

/// "6 to change, 1 already right, 2 not applied here".
pub fn count_line(a: &Advice) -> String {
    count_marked(a, false)
}

/// The count with the table's marks: "6 to change (*), …, 2 not applied here (!)".
pub fn count_marked(a: &Advice, marks: bool) -> String {
    let c = counts(a);
    let (star, bang) = if marks { (" (*)", " (!)") } else { ("", "") };
    let mut parts = vec![format!("{} to change{star}", c.change)];
    if c.keep > 0 {
        parts.push(format!("{} already right", c.keep));
    }
    if c.unavailable > 0 {
        parts.push(format!("{} not applied here{bang}", c.unavailable));
    }
    let against = match &a.current_from {
        Some(from) => format!(" (against {})", text::escape(from)),
        None => format!(" (against {}'s stock values: the running ones are not known)", a.os),
    };
    format!("{}{against}", parts.join(", "))
}

/// The verdict in one line: what the running buffers hold one flow to, and what changes.
pub fn verdict(a: &Advice) -> String {
    let route = a
        .route
        .as_ref()
        .filter(|r| r.action == Action::Set)
        .map(|r| format!("{} to {}", r.label, r.dest));
    let changed: Vec<&str> = a
        .settings
        .iter()
        .filter(|s| s.action == Action::Set || s.stage == Stage::Boot)
        .map(|s| s.label.as_str())
        .chain(route.as_deref())
        .collect();
    if changed.is_empty() {
        let missing = counts(a).unavailable;
        return if missing == 0 {
            "no change needed: the running values fit this path".into()
        } else {
            format!(
                "nothing tcptune can set here; {missing} setting(s) not applied (read-only or unreadable): see below"
            )
        };
    }
    let rate = a.receive_bandwidth_bps.unwrap_or(a.bandwidth_bps);
    // The receive max carries the receiving direction: where it has a rate of its own, the
    // verdict says so.
    #[allow(clippy::cast_precision_loss)]
    let apart = |r: u64| text::rate(r as f64) != text::rate(a.bandwidth_bps as f64);
    let way = if a.receive_bandwidth_bps.is_some_and(apart) {
        " receiving"
    } else {
        ""
    };
    let what = if changed.len() <= 3 {
        format!("change {}", changed.join(", "))
    } else {
        format!("{} settings to change", changed.len())
    };
    match a.window_limit_bps {
        Some(limit) if limit < rate => format!(
            "the running receive max holds one flow to about {} of {}{way}: {what}",
            text::rate(limit as f64),
            text::rate(rate as f64)
        ),
        // Nothing holds the flow below the path's rate now: what the changes are for.
        Some(_) => format!(
            "the running receive max carries one flow at {}{way} already; {what} for {}",
            text::rate(rate as f64),
            purpose(&a.decision)
        ),
        None => what,
    }
}

/// What the changes are for beyond the rate itself, by the sending side's rule.
fn purpose(d: &Decision) -> &'static str {
    match d.rule {
        Rule::Clean => "headroom against RTT swings",
        Rule::Shared => "the queue others keep",
        // Sized past the clean rule where the test measured no loss: for the queue.
        Rule::LossRecovery if d.loss_pct == Some(0.0) => "the queue and the RTT's growth",
        Rule::LossRecovery | Rule::Unmeasured => "loss recovery",
    }
}

/// The short lines of the notes and the warnings, in that order of importance: warnings first.
pub fn warnings(a: &Advice) -> Vec<String> {
    a.warnings.iter().map(|w| w.line().to_string()).collect()
}

pub fn notes(a: &Advice) -> Vec<String> {
    a.notes.iter().filter_map(|n| n.short.clone()).collect()
}

/// The units a number keeps on its line.
const UNITS: [&str; 16] = [
    "bit/s", "kbit/s", "Mbit/s", "Gbit/s", "Tbit/s", "bytes", "KiB", "MiB", "GiB", "TiB", "ms", "s", "%", "\u{d7}",
    "\u{b5}s", "us",
];

/// The words of `text`, a number and its unit kept together ("500 Mbit/s" is one word).
fn unbroken(text: &str) -> Vec<String> {
    let mut words: Vec<String> = Vec::new();
    for w in text.split(' ').filter(|w| !w.is_empty()) {
        let bare = w.trim_end_matches([',', ';', ':', '.', ')', '\u{2026}']);
        let after_number = words.last().is_some_and(|p| p.ends_with(|c: char| c.is_ascii_digit()));
        match words.last_mut() {
            Some(prev) if after_number && UNITS.contains(&bare) => {
                prev.push(' ');
                prev.push_str(w);
            }
            _ => words.push(w.to_string()),
        }
    }
    words
}

/// `text` wrapped at `width` columns: the first line after `first`, the others after `rest`
/// (both counted in the width). A word longer than a line stands alone on it.
pub fn wrap(text: &str, width: usize, first: &str, rest: &str) -> Vec<String> {
    let mut lines = Vec::new();
    let mut line = first.to_string();
    let mut empty = true;
    for word in unbroken(text) {
        let word = word.as_str();
        let len = line.chars().count() + usize::from(!empty) + word.chars().count();
        if !empty && len > width {
            lines.push(line);
            line = rest.to_string();
            empty = true;
        }
        if !empty {
            line.push(' ');
        }
        line.push_str(word);
        empty = false;
    }
    lines.push(line);
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wrapping_keeps_every_word_within_the_width() {
        let t =
            "scp, sftp and rsync -e ssh top out at 112 Mbit/s here (its 2 MiB window): run several at once, or HPN-SSH";
        let lines = wrap(t, 40, "note: ", "      ");
        assert!(lines.iter().all(|l| l.chars().count() <= 40), "{lines:?}");
        assert_eq!(
            lines.join(" ").split_whitespace().collect::<Vec<_>>().len(),
            t.split(' ').count() + 1
        );
        assert!(lines[1].starts_with("      "));
        assert_eq!(wrap("short", 80, "# ", "#   "), vec!["# short".to_string()]);
        // A number keeps its unit on its line.
        let lines = wrap(
            "holds one flow to about 167.8 Mbit/s of 500 Mbit/s: raise it",
            30,
            "",
            "",
        );
        assert!(
            lines.iter().all(|l| !l.ends_with("500") && !l.ends_with("167.8")),
            "{lines:?}"
        );
    }
}
