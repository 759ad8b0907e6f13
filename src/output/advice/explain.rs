//! The derivation (`--explain`): everything behind the short advice, said once each — the
//! path and the BDP's formula, each host's probes and packet trains, how each buffer was sized,
//! each side's class with all its evidence (the notes'), every test's figures, the notes and warnings whole
//! (the lab's numbers and the sources they cite), and each setting's whole reason. One line
//! each, unwrapped: the renderer wraps them for its file or terminal.

use crate::advice::{Advice, HostReport, words};
use crate::bdp::{Sizing, Source};
use crate::persist::DropIn;
use crate::text;

/// The derivation's lines.
pub fn lines(a: &Advice, dropin: Option<&DropIn>) -> Vec<String> {
    let mut out = vec![path(a)];
    for h in &a.hosts {
        out.extend(host(h));
    }
    out.extend(a.timing.as_ref().map(timing));
    out.push(format!("receive buffer: {}", receive_rule(&a.sizing)));
    out.push(format!("send buffer: {}", send_rule(&a.sizing)));
    out.extend(super::summary::on_purpose(a));
    out.push(format!("window share: {}", words::why_share(&a.receive_decision)));
    out.extend(a.notes.iter().map(|n| format!("note: {}", n.text)));
    out.extend(a.warnings.iter().map(|w| format!("warning: {}", w.text)));
    if let Some(d) = dropin {
        out.push(format!("save as {}: {}", super::dropin_file(d), d.why));
    }
    for s in &a.settings {
        out.push(format!("{}: {}", s.key, s.reason));
        if let Some(n) = &s.note {
            out.push(format!("{}: note: {n}", s.key));
        }
    }
    if let Some(r) = &a.route {
        out.push(format!("route to {}: {}", r.dest, r.reason));
        if let Some(c) = &r.command {
            out.push(format!("route to {}: {c}", r.dest));
        }
        if let Some(life) = super::summary::route_life(a) {
            out.push(format!("route to {}: {life}", r.dest));
        }
    }
    out.into_iter().map(|l| text::comment(&l)).collect()
}

/// The path and the BDP's formula.
fn path(a: &Advice) -> String {
    let src = |s: Source| match s {
        Source::Given => "given",
        Source::Measured => "measured",
        Source::Assumed => "ASSUMED: not measured",
    };
    let host = a.host.as_deref().map(|h| format!(" to {h}")).unwrap_or_default();
    #[allow(clippy::cast_precision_loss)]
    let rate = text::rate(a.bandwidth_bps as f64);
    format!(
        "path{host}: RTT {} ({}), {rate} ({}); BDP = {rate} \u{d7} {} = {} bytes ({})",
        text::millis(a.rtt_ms),
        src(a.rtt_source),
        src(a.bandwidth_source),
        text::millis(a.rtt_ms),
        text::count(a.sizing.bdp),
        text::size(a.sizing.bdp)
    )
}

/// One measured host: its round trips, and the packet trains' reading.
fn host(h: &HostReport) -> Vec<String> {
    let r = &h.measurement.rtt;
    let method = match &r.method {
        crate::measure::Method::Icmp => "ICMP echo".to_string(),
        crate::measure::Method::TcpConnect { port } => format!("TCP connect to port {port}"),
    };
    let ms = |v: f64| text::sig(v, 4);
    let mut lines = vec![format!(
        "host {} ({}): rtt min/avg/max/mdev {}/{}/{}/{} ms by {method}, {} of {} answered",
        h.host,
        h.measurement.addr,
        ms(r.min_ms),
        ms(r.avg_ms),
        ms(r.max_ms),
        ms(r.mdev_ms),
        r.received,
        r.sent
    )];
    if let Some(c) = &h.measurement.capacity {
        #[allow(clippy::cast_precision_loss)]
        lines.push(format!(
            "host {}: bottleneck {}{} from packet trains ({} of {} trains of {} \u{d7} {} bytes agree)",
            h.host,
            if c.sender_limited { "at least " } else { "" },
            text::rate(c.bps as f64),
            c.agreeing,
            c.trains,
            c.per_train,
            c.packet_bytes
        ));
    }
    lines
}

/// Where the time went: "time: ssh set-up 0.42 s (beside the probes), probes 0.31 s, trains
/// 0.62 s, queue watch 1.5 s, forward test 10.2 s, reverse test 10.3 s; 23.1 s in all".
fn timing(t: &crate::advice::Timing) -> String {
    let s = |v: f64| format!("{} s", text::sig(v, 3));
    let phases: Vec<String> = [
        ("ssh set-up", t.setup_s.map(|v| format!("{} (beside the probes)", s(v)))),
        ("probes", t.probes_s.map(s)),
        ("trains", t.trains_s.map(s)),
        ("queue watch", t.watch_s.map(s)),
        ("forward test", t.forward_s.map(s)),
        ("reverse test", t.reverse_s.map(s)),
    ]
    .into_iter()
    .filter_map(|(what, took)| took.map(|t| format!("{what} {t}")))
    .collect();
    let all = t.total_s.map(|v| format!("; {} in all", s(v))).unwrap_or_default();
    format!("time: {}{all}", phases.join(", "))
}

/// How the receive buffer was sized.
fn receive_rule(s: &Sizing) -> String {
    if s.receive_loss_recovery {
        format!(
            "{} BDP ({}) = {}, for loss recovery",
            text::times(s.receive_factor),
            text::size(s.receive_bdp),
            text::size(s.buffer)
        )
    } else {
        #[allow(clippy::cast_precision_loss)]
        let times = text::times(s.buffer as f64 / s.receive_bdp.max(1) as f64);
        format!(
            "the BDP ({}) for an RTT of {} ({} headroom), \u{f7} a window share of {} = {} ({times} BDP)",
            text::size(s.receive_bdp),
            text::millis(s.sizing_rtt_ms),
            text::pct_change(s.headroom_pct),
            text::pct(s.window_share * 100.0),
            text::size(s.buffer),
        )
    }
}

/// How the send buffer was sized.
fn send_rule(s: &Sizing) -> String {
    let why = if s.loss_recovery {
        "for loss recovery"
    } else {
        "what is in flight, queued and unsent"
    };
    format!(
        "{} BDP ({}) = {}, {why}",
        text::times(s.send_factor),
        text::size(s.bdp),
        text::size(s.send_buffer)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_time_line_names_each_phase_that_ran_and_the_whole() {
        let t = crate::advice::Timing {
            setup_s: Some(0.42),
            probes_s: Some(0.313),
            trains_s: None,
            watch_s: Some(1.5),
            forward_s: Some(10.21),
            reverse_s: Some(10.33),
            total_s: Some(23.08),
        };
        assert_eq!(
            timing(&t),
            "time: ssh set-up 0.42 s (beside the probes), probes 0.313 s, queue watch 1.5 s, forward test \
             10.2 s, reverse test 10.3 s; 23.1 s in all"
        );
    }
}
