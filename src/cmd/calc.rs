//! `tcptune calc`: the BDP and throughput calculator. From any two of rate, RTT and window
//! it gives the rest; with `--loss` the Mathis et al. ceiling for one loss-limited flow.

use std::io::Write;

use serde::Serialize;

use crate::Context;
use crate::bdp;
use crate::cli::{CalcArgs, Format};
use crate::error::Error;
use crate::output;

#[derive(Debug, Serialize)]
pub struct CalcReport {
    pub bandwidth_bps: Option<u64>,
    pub rtt_ms: Option<f64>,
    pub window_bytes: Option<u64>,
    /// Exactly bandwidth_bps / 8 × rtt_ms / 1000 (a JSON integer when whole).
    pub bdp_bytes: Option<serde_json::Value>,
    /// The Linux receive buffer maximum tcptune would size for this path (tcp_rmem[2]).
    pub buffer_bytes: Option<u64>,
    /// The Linux send buffer maximum tcptune would size for this path (tcp_wmem[2]).
    pub send_buffer_bytes: Option<u64>,
    /// Ceiling of `window` at `rtt`.
    pub max_throughput_bps: Option<f64>,
    /// Longest RTT at which `window` still fills `bandwidth`.
    pub max_rtt_ms: Option<f64>,
    pub loss_pct: Option<f64>,
    pub mss_bytes: Option<u64>,
    pub mathis_bps: Option<f64>,
}

pub fn compute(a: &CalcArgs) -> Result<CalcReport, Error> {
    let given = [a.bandwidth.is_some(), a.rtt.is_some(), a.window.is_some()]
        .iter()
        .filter(|x| **x)
        .count();
    if given < 2 && !(a.loss.is_some() && a.rtt.is_some()) {
        return Err(
            Error::usage("calc needs two of --bandwidth, --rtt, --window (or --rtt with --loss)")
                .with_hint("e.g. tcptune calc --bandwidth 1gbit --rtt 25ms"),
        );
    }
    if a.loss.is_some() && a.rtt.is_none() {
        return Err(Error::usage("--loss needs --rtt for the Mathis bound"));
    }
    if a.window.is_some_and(|w| w.get() == 0) {
        return Err(Error::usage("--window must be greater than zero"));
    }
    if let (Some(rate), Some(rtt)) = (a.bandwidth, a.rtt) {
        bdp::check_path(rate, rtt).map_err(Error::usage)?;
    }
    // TCP's MSS option is 16 bits: a larger MSS is a typo, and would give a Mathis bound
    // for a flow that cannot exist.
    if a.loss.is_some() && !(1..=u64::from(u16::MAX)).contains(&a.mss.get()) {
        return Err(Error::usage(format!(
            "--mss {} is outside 1..=65535 bytes (the TCP MSS option is 16 bits)",
            a.mss.get()
        )));
    }
    let mut r = CalcReport {
        bandwidth_bps: a.bandwidth.map(crate::units::Bitrate::bps),
        rtt_ms: a.rtt.map(|d| d.as_millis_f64()),
        window_bytes: a.window.map(crate::units::Bytes::get),
        bdp_bytes: None,
        buffer_bytes: None,
        send_buffer_bytes: None,
        max_throughput_bps: None,
        max_rtt_ms: None,
        loss_pct: a.loss,
        mss_bytes: a.loss.map(|_| a.mss.get()),
        mathis_bps: None,
    };
    if let (Some(rate), Some(rtt)) = (a.bandwidth, a.rtt) {
        r.bdp_bytes = Some(output::number(bdp::bdp_exact(rate, rtt)));
        let sizing = bdp::size_buffers(rate, rtt, None);
        r.buffer_bytes = Some(sizing.buffer);
        r.send_buffer_bytes = Some(sizing.send_buffer);
    }
    if let (Some(w), Some(rtt)) = (a.window, a.rtt) {
        r.max_throughput_bps = Some(bdp::max_throughput_bps(w, rtt));
    }
    if let (Some(w), Some(rate)) = (a.window, a.bandwidth) {
        r.max_rtt_ms = Some(bdp::max_rtt_for(w, rate).map_err(Error::usage)?.as_millis_f64());
    }
    if let (Some(loss), Some(rtt)) = (a.loss, a.rtt) {
        r.mathis_bps = Some(bdp::mathis_bps(a.mss, rtt, loss / 100.0));
    }
    Ok(r)
}

pub fn run(a: &CalcArgs, ctx: &Context, out: &mut dyn Write) -> anyhow::Result<std::process::ExitCode> {
    let format = ctx.report_format("calc")?;
    let r = compute(a)?;
    if format == Format::Json {
        output::json(out, &r)?;
        return Ok(std::process::ExitCode::SUCCESS);
    }
    let mut t = output::table(ctx.stdout_tty, ctx.color);
    t.set_header(output::header(["quantity", "value", "how"]));
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
        t.add_row(["window".into(), output::bytes(w.get()), "given".into()]);
    }
    if let (Some(rate), Some(rtt)) = (a.bandwidth, a.rtt) {
        let exact = bdp::bdp_exact(rate, rtt);
        let shown = if exact.fract() == 0.0 {
            output::bytes(bdp::bdp_bytes(rate, rtt))
        } else {
            format!("{exact} bytes")
        };
        t.add_row([
            "BDP".into(),
            shown,
            "bandwidth / 8 × RTT: the window that fills the path".into(),
        ]);
        if let (Some(b), Some(w)) = (r.buffer_bytes, r.send_buffer_bytes) {
            t.add_row([
                "receive buffer".into(),
                output::bytes(b),
                "Linux tcp_rmem[2]: 2 × BDP + 10 % RTT headroom, 64 KiB steps".into(),
            ]);
            t.add_row([
                "send buffer".into(),
                output::bytes(w),
                "Linux tcp_wmem[2]: 2.5 × BDP, 64 KiB steps".into(),
            ]);
        }
    }
    if let Some(tp) = r.max_throughput_bps {
        t.add_row([
            "max throughput".into(),
            output::rate(tp),
            "window × 8 / RTT: the most this window allows".into(),
        ]);
        if let Some(b) = a.bandwidth {
            #[allow(clippy::cast_precision_loss)]
            let pct = (tp / b.bps() as f64 * 100.0).min(100.0);
            t.add_row([
                "of bandwidth".into(),
                format!("{pct:.1} %"),
                "share of the path the window can fill".into(),
            ]);
        }
    }
    if let Some(m) = r.max_rtt_ms {
        t.add_row([
            "max RTT".into(),
            format!("{} ms", output::ms(m)),
            "window × 8 / bandwidth: longest RTT this window fills".into(),
        ]);
    }
    if let (Some(m), Some(loss)) = (r.mathis_bps, a.loss) {
        t.add_row([
            "Mathis bound".into(),
            output::rate(m),
            format!(
                "MSS {} bytes / RTT × 1.22 / √{loss} %: one Reno-like flow at this loss",
                a.mss.get()
            ),
        ]);
    }
    writeln!(out, "{t}")?;
    Ok(std::process::ExitCode::SUCCESS)
}
