//! The BDP and throughput calculator behind `tcptune calc`: from any two of rate, RTT and
//! window the rest; with a loss rate the Mathis et al. ceiling for one loss-limited flow. Pure
//! model (the formulas are [`crate::bdp`]'s); the table is [`crate::output::calc`]'s.

use serde::Serialize;

use crate::bdp;
use crate::error::Error;
use crate::text;
use crate::units::{Bitrate, Bytes, Span};

/// What was given.
#[derive(Debug, Clone, Copy)]
pub struct CalcRequest {
    pub bandwidth: Option<Bitrate>,
    pub rtt: Option<Span>,
    pub window: Option<Bytes>,
    /// Packet loss in percent (0 < p <= 100), for the Mathis bound.
    pub loss_pct: Option<f64>,
    /// Maximum segment size, for the Mathis bound.
    pub mss: Bytes,
}

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

/// Every quantity that follows from what `a` gives; usage errors for too little or
/// inconsistent input.
pub fn compute(a: &CalcRequest) -> Result<CalcReport, Error> {
    let given = [a.bandwidth.is_some(), a.rtt.is_some(), a.window.is_some()]
        .iter()
        .filter(|x| **x)
        .count();
    if given < 2 && !(a.loss_pct.is_some() && a.rtt.is_some()) {
        return Err(
            Error::usage("calc needs two of --bandwidth, --rtt, --window (or --rtt with --loss)")
                .with_hint("e.g. tcptune calc --bandwidth 1gbit --rtt 25ms"),
        );
    }
    if a.loss_pct.is_some() && a.rtt.is_none() {
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
    if a.loss_pct.is_some() && !(1..=u64::from(u16::MAX)).contains(&a.mss.get()) {
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
        loss_pct: a.loss_pct,
        mss_bytes: a.loss_pct.map(|_| a.mss.get()),
        mathis_bps: None,
    };
    if let (Some(rate), Some(rtt)) = (a.bandwidth, a.rtt) {
        r.bdp_bytes = Some(text::number(bdp::bdp_exact(rate, rtt)));
        let sizing = bdp::size_buffers(rate, rtt, None);
        r.buffer_bytes = Some(sizing.buffer);
        r.send_buffer_bytes = Some(sizing.send_buffer);
    }
    if let (Some(w), Some(rtt)) = (a.window, a.rtt) {
        r.max_throughput_bps = Some(bdp::max_throughput_bps(w, rtt));
    }
    if let (Some(w), Some(rate)) = (a.window, a.bandwidth) {
        // The check refuses what no RTT could be; the value is the quotient itself, since the
        // Span is whole nanoseconds and would make 1 byte at 1 Tbit/s (8 ps) a max RTT of 0.
        bdp::max_rtt_for(w, rate).map_err(Error::usage)?;
        #[allow(clippy::cast_precision_loss)]
        let ms = w.get() as f64 * 8.0 / rate.bps() as f64 * 1000.0;
        r.max_rtt_ms = Some(ms);
    }
    if let (Some(loss), Some(rtt)) = (a.loss_pct, a.rtt) {
        r.mathis_bps = Some(bdp::mathis_bps(a.mss, rtt, loss / 100.0));
    }
    Ok(r)
}
