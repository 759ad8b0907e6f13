//! The `calc` report as a table (JSON is [`super::json`] of the report itself).

use std::io::Write;

use crate::bdp;
use crate::calc::{CalcReport, CalcRequest};

/// Each quantity, its value and how it follows, for people.
/// `columns`: the terminal's width (or `COLUMNS`); every line fits it, and 80 columns.
pub fn write_table(
    out: &mut dyn Write,
    a: &CalcRequest,
    r: &CalcReport,
    (tty, color): (bool, bool),
    columns: Option<usize>,
) -> anyhow::Result<()> {
    let mut t = super::table(tty, color);
    super::fit(&mut t, columns);
    t.set_header(super::header(["quantity", "value", "how"]));
    if let Some(b) = a.bandwidth {
        t.add_row([
            String::from("bandwidth"),
            format!("{b} ({} bit/s)", b.bps()),
            "given".into(),
        ]);
    }
    if let Some(d) = a.rtt {
        t.add_row(["RTT".into(), d.to_string(), "given".into()]);
    }
    if let Some(w) = a.window {
        t.add_row(["window".into(), crate::text::bytes(w.get()), "given".into()]);
    }
    if let (Some(rate), Some(rtt)) = (a.bandwidth, a.rtt) {
        let exact = bdp::bdp_exact(rate, rtt);
        let shown = if exact.fract() == 0.0 {
            crate::text::bytes(bdp::bdp_bytes(rate, rtt))
        } else {
            format!("{exact} bytes")
        };
        t.add_row([
            "BDP".into(),
            shown,
            "bandwidth / 8 × RTT: the window that fills the path".into(),
        ]);
        for c in &r.by_class {
            t.add_row(class_row(c));
        }
    }
    if let Some(tp) = r.max_throughput_bps {
        t.add_row([
            "max throughput".into(),
            crate::text::rate(tp),
            "window × 8 / RTT: the most a window this size allows".into(),
        ]);
        let rx = r.receive_buffer_max_throughput_bps.zip(r.receive_window_share);
        if let Some((rx, share)) = rx {
            t.add_row([
                "as receive max".into(),
                crate::text::rate(rx),
                format!(
                    "a receive max (tcp_rmem) this size: ~{} is window (as advise)",
                    crate::text::pct(share * 100.0)
                ),
            ]);
        }
        if let Some(b) = a.bandwidth {
            #[allow(clippy::cast_precision_loss)]
            let pct = |x: f64| crate::text::pct((x / b.bps() as f64 * 100.0).min(100.0));
            let value = match rx {
                Some((rx, _)) => format!("{} / {}", pct(tp), pct(rx)),
                None => pct(tp),
            };
            t.add_row([
                "of bandwidth".into(),
                value,
                "share of the path the window / the receive max can fill".into(),
            ]);
        }
    }
    if let Some(m) = r.max_rtt_ms {
        t.add_row([
            "max RTT".into(),
            crate::text::millis(m),
            "window × 8 / bandwidth: longest RTT this window fills".into(),
        ]);
    }
    if let (Some(m), Some(loss)) = (r.mathis_bps, a.loss_pct) {
        t.add_row([
            "Mathis bound".into(),
            crate::text::rate(m),
            format!(
                "MSS {} bytes / RTT × 1.22 / √{} %: one Reno-like flow at this loss",
                a.mss.get(),
                small_or(loss, 1e-4, |l| l.to_string())
            ),
        ]);
    }
    writeln!(out, "{t}")?;
    if !r.by_class.is_empty() {
        // Each line within 80 columns, whatever the terminal.
        writeln!(
            out,
            "Buffer maxima (receive / send) by the class of path advise finds;\n\
             * its pick without a test.\nClean: {}.",
            crate::advice::words::clean_rule()
        )?;
    }
    Ok(())
}

/// One class's buffer maxima (Linux tcp_rmem[2] = tcp_wmem[2] but on a clean path), what
/// `advise` gives that class, and its pick without a test marked.
fn class_row(c: &crate::calc::ClassBuffers) -> [String; 3] {
    let how = match c.class {
        "clean" => "no loss, deep queue: cubic, the clean rule (below)".to_string(),
        "lossy" => format!(
            "loss below {}: bbr, {} BDP",
            crate::text::pct(crate::bdp::LOSS_SCALE_FROM_PCT),
            crate::text::times(c.factor)
        ),
        "heavy-loss" => format!(
            "loss from {}: bbr, {} BDP",
            crate::text::pct(crate::bdp::LOSS_SCALE_FROM_PCT),
            crate::text::times(c.factor)
        ),
        _ => format!(
            "bbr, {} BDP: what advise picks without a test",
            crate::text::times(c.factor)
        ),
    };
    let value = if c.buffer_bytes == c.send_buffer_bytes {
        format!("{} each", crate::text::size(c.buffer_bytes))
    } else {
        format!(
            "{} / {}",
            crate::text::size(c.buffer_bytes),
            crate::text::size(c.send_buffer_bytes)
        )
    };
    let mark = if c.advise_without_test { " *" } else { "" };
    [format!("{}{mark}", c.class.replace('-', " ")), value, how]
}

/// `v` as `usual` words it, unless it is positive and below `least`, where the usual
/// rounding would show 0 (or a row of zeros): then 4 significant digits (`4.337e-13`).
fn small_or(v: f64, least: f64, usual: impl Fn(f64) -> String) -> String {
    if v > 0.0 && v < least {
        crate::text::significant(v)
    } else {
        usual(v)
    }
}
