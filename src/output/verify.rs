//! The `verify` report as a table (JSON is [`super::json`] of the report itself).

use std::io::Write;

use crate::diag::verify::VerifyReport;
use crate::tcp::tcpinfo::LimitedBy;

/// The goodput, RTT, limited-by shares, verdict and advice lines, for people.
pub fn write_table(out: &mut dyn Write, r: &VerifyReport) -> anyhow::Result<()> {
    let pct = |p: Option<f64>| p.map_or_else(|| "n/a".to_string(), crate::text::pct);
    writeln!(
        out,
        "verify {} ({}): sent {} in {}",
        r.host,
        r.addr,
        crate::text::size(r.bytes),
        crate::text::secs(r.duration_s)
    )?;
    writeln!(out, "  throughput       {}", crate::text::rate(r.throughput_bps))?;
    let min = r
        .min_rtt_ms
        .map(|m| format!(", min {}", crate::text::millis(m)))
        .unwrap_or_default();
    writeln!(
        out,
        "  RTT              {}{min} ({})",
        crate::text::millis(r.rtt_ms),
        r.rtt_source
    )?;
    if let (Some(c), Some(m)) = (r.cwnd, r.mss) {
        writeln!(out, "  cwnd             {c} segments of {m} bytes")?;
    }
    if let Some(p) = r.retransmitted_pct {
        writeln!(out, "  retransmitted    {} of the bytes", crate::text::pct(p))?;
    }
    writeln!(out, "  rwnd limited     {}", pct(r.rwnd_limited_pct))?;
    writeln!(out, "  sndbuf limited   {}", pct(r.sndbuf_limited_pct))?;
    writeln!(out, "  network limited  {}", pct(r.network_limited_pct))?;
    writeln!(out, "  sender idle      {}", pct(r.app_limited_pct))?;
    writeln!(
        out,
        "  limited by       {}",
        r.limited_by.map_or("unknown (no TCP_INFO counters)", LimitedBy::as_str)
    )?;
    for line in &r.advice {
        writeln!(out, "advice: {line}")?;
    }
    for note in &r.notes {
        writeln!(out, "note: {note}")?;
    }
    Ok(())
}
