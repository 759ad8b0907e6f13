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
    /// The Linux receive buffer maximum tcptune sizes for this path when a test finds it
    /// clean (tcp_rmem[2]); `by_class` has every class's.
    pub buffer_bytes: Option<u64>,
    /// The same, for the send buffer (tcp_wmem[2]).
    pub send_buffer_bytes: Option<u64>,
    /// What `advise` sizes for each class of path, in the order of [`CLASSES`]: the same
    /// numbers `advise` writes, so the two commands tell one story.
    pub by_class: Vec<ClassBuffers>,
    /// Ceiling of `window` at `rtt`: a window of that many bytes.
    pub max_throughput_bps: Option<f64>,
    /// Ceiling at `rtt` of a Linux receive buffer (tcp_rmem[2]) of `window` bytes: it advertises
    /// [`receive_window_share`](Self::receive_window_share) of itself as window. The number
    /// `advise` gives for a running receive maximum ("holds one flow to about ...").
    pub receive_buffer_max_throughput_bps: Option<f64>,
    /// The share of a receive buffer advertised as window that this assumes.
    pub receive_window_share: Option<f64>,
    /// Longest RTT at which `window` still fills `bandwidth`.
    pub max_rtt_ms: Option<f64>,
    pub loss_pct: Option<f64>,
    pub mss_bytes: Option<u64>,
    pub mathis_bps: Option<f64>,
}

/// The buffers and the congestion control `advise` gives one class of path.
#[derive(Debug, Clone, Serialize)]
pub struct ClassBuffers {
    /// `clean`, `lossy`, `heavy-loss` or `not-measured`.
    pub class: &'static str,
    /// The congestion control on Linux.
    pub congestion_control: &'static str,
    /// The multiple of the BDP the buffers are sized to (clean: before the receive headroom).
    pub factor: f64,
    pub buffer_bytes: u64,
    pub send_buffer_bytes: u64,
    /// What `advise` picks when nothing measured the path (no TCP test).
    pub advise_without_test: bool,
}

/// The classes `advise` sizes for, and how (see [`crate::bdp`]): a path a test found clean,
/// one with random loss below and from [`bdp::LOSS_SCALE_FROM_PCT`], and one nothing measured
/// (the best worst case over the lab's paths: sized as heavy loss).
pub const CLASSES: [(&str, &str, f64); 4] = [
    ("clean", "cubic", 2.0),
    ("lossy", "bbr", bdp::LOSS_FACTOR),
    ("heavy-loss", "bbr", bdp::HEAVY_LOSS_FACTOR),
    ("not-measured", "bbr", bdp::HEAVY_LOSS_FACTOR),
];

fn by_class(rate: Bitrate, rtt: Span) -> Vec<ClassBuffers> {
    CLASSES
        .iter()
        .map(|&(class, cc, factor)| {
            let s = if class == "clean" {
                bdp::size_buffers(rate, rtt, None)
            } else {
                bdp::size_for_loss_by(rate, rtt, None, factor)
            };
            ClassBuffers {
                class,
                congestion_control: cc,
                // The clean receive buffer's own multiple: 2 × BDP and the RTT headroom.
                factor: if class == "clean" { s.receive_factor } else { factor },
                buffer_bytes: s.buffer,
                send_buffer_bytes: s.send_buffer,
                advise_without_test: class == "not-measured",
            }
        })
        .collect()
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
        by_class: Vec::new(),
        max_throughput_bps: None,
        receive_buffer_max_throughput_bps: None,
        receive_window_share: None,
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
        r.by_class = by_class(rate, rtt);
    }
    if let (Some(w), Some(rtt)) = (a.window, a.rtt) {
        r.max_throughput_bps = Some(bdp::max_throughput_bps(w, rtt));
        // advise's window limit: the advertised share of the maximum, per round trip.
        r.receive_buffer_max_throughput_bps = Some(bdp::max_throughput_bps(w, rtt) * bdp::DEFAULT_WINDOW_SHARE);
        r.receive_window_share = Some(bdp::DEFAULT_WINDOW_SHARE);
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
