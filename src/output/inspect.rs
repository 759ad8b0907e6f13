//! The `inspect` report as a table (JSON is [`super::json`] of the report itself).

use std::io::Write;

use crate::diag::inspect::Report;
use crate::units::Bytes;

/// The congestion control, marked "(route)" where the route to the peer chose it, or with
/// the route's own where a program chose another.
fn cc_cell(f: &crate::diag::inspect::Flow) -> String {
    let cc = f
        .congestion_control
        .as_ref()
        .map(ToString::to_string)
        .unwrap_or_default();
    match (&f.route_congestion_control, f.cc_from_route) {
        (Some(_), true) => format!("{cc} (route)"),
        (Some(r), false) => format!("{cc} (route: {r})"),
        (None, _) => cc,
    }
}

/// One row per flow, then each flow's note, for people.
pub fn write_table(out: &mut dyn Write, r: &Report, tty: bool, color: bool) -> anyhow::Result<()> {
    if r.flows.is_empty() {
        let to = r.host.as_deref().map(|h| format!(" to {h}")).unwrap_or_default();
        writeln!(out, "no established TCP flows{to}")?;
        return Ok(());
    }
    let pct = |p: Option<f64>| p.map_or_else(|| "-".to_string(), crate::text::pct);
    let mut t = super::table(tty, color);
    t.set_header(super::header([
        "local",
        "peer",
        "cc",
        "rtt ms",
        "cwnd",
        "delivery",
        "in flight",
        "rwnd lim",
        "sndbuf lim",
        "limited by",
    ]));
    for f in &r.flows {
        t.add_row([
            f.local.clone(),
            f.peer.clone(),
            cc_cell(f),
            format!("{:.1}", f.rtt_ms),
            f.cwnd.to_string(),
            crate::text::rate(f.delivery_rate_bps),
            Bytes::new(f.bytes_in_flight).iec(),
            pct(f.rwnd_limited_pct),
            pct(f.sndbuf_limited_pct),
            f.limited_by
                .map_or_else(|| "(receiving)".to_string(), |l| l.to_string()),
        ]);
    }
    // One line per flow, however wide: addresses and numbers are read whole.
    for c in t.column_iter_mut() {
        c.set_constraint(comfy_table::ColumnConstraint::ContentWidth);
    }
    writeln!(out, "{t}")?;
    for f in r.flows.iter().filter(|f| f.note.is_some()) {
        writeln!(
            out,
            "{} -> {}: {}",
            f.local,
            f.peer,
            f.note.as_deref().unwrap_or_default()
        )?;
    }
    writeln!(
        out,
        "limited shares are of each sender's busy time; flows that only receive show \"(receiving)\": inspect the sending end"
    )?;
    Ok(())
}
