//! The pure model: bandwidth-delay product, how big the kernel's buffers must be to
//! keep a path full, and throughput ceilings. No I/O here.
//!
//! # The sizing rule (see docs/SIZING.md)
//! * `BDP = rate × RTT_min` — the bytes in flight needed to fill the path.
//! * **Receiver** (`tcp_rmem[2]`): the receiver does not advertise its whole buffer. Before
//!   Linux 6.6 the window was `tcp_rmem × (1 − 2^−tcp_adv_win_scale)` = ½ of the buffer with
//!   the default `tcp_adv_win_scale = 1`; since 6.6 (commit dfa2f0483360) it is
//!   `buffer × scaling_ratio`, a per-socket payload/truesize ratio learnt from real skbs (often
//!   0.5–0.75). So the receiver needs `2 × BDP`, sized for `RTT_min × (1 + h)` with
//!   `h = clamp(2 × mdev / RTT_min, 10 %, 25 %)` of headroom for RTT variation.
//! * **Sender** (`tcp_wmem[2]`): it holds every unacknowledged byte — once a deep bottleneck
//!   queue fills (CUBIC fills it; BBR's cwnd gain is 2) that is up to 2 × BDP — plus data not
//!   yet sent and skb overhead. Measured with BBR on Linux 6.18 over an emulated 150 ms /
//!   500 Mbit/s path with a one-BDP drop-tail queue (bench/wan.sh): receiver 2.5 × / sender
//!   2 × BDP reached 96.4 % of the goodput limit, receiver 2 × / sender 2.5 × BDP 97.7 %, both
//!   2.2 × 95.8 %. So the sender gets `2.5 × BDP`.
//! * Both are rounded to 64 KiB steps and never exceed 2.5 × BDP, nor what the kernel accepts
//!   (`int` fields on Linux: 2^31 − 1).
use crate::units::{Bitrate, Bytes, Span};
use std::time::Duration;

/// Where a path's RTT or rate came from: given by the user, measured, or assumed for want of
/// either. It says how far a number (and a verdict sized from it) can be trusted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Source {
    Given,
    Measured,
    Assumed,
}

/// Receive buffer, as a multiple of the BDP before headroom (see module docs).
pub const BUFFER_FACTOR: f64 = 2.0;
/// Send buffer, as a multiple of the BDP (headroom included), and the most either buffer gets.
pub const SEND_FACTOR: f64 = 2.5;
/// Both maxima, × BDP, when sized for loss recovery (`advise --loss-recovery`): while a lost
/// segment is repaired (a round trip or more) the sender keeps sending, so the receiver holds
/// that much data out of order beyond the hole and the sender holds it all unacknowledged.
/// Measured on the lab at 150 ms / 500 Mbit/s with 0.01 % random loss, BBR, 25 s: 2.2/2.5 ×
/// reached 73–76 %, 4 × 92.3 %, 5 × 97.7 %, ESnet's 7.2 × 95.5 % of the goodput limit.
pub const LOSS_FACTOR: f64 = 5.0;
/// Least and most headroom added to the RTT for jitter and route changes.
pub const MIN_HEADROOM: f64 = 0.10;
pub const MAX_HEADROOM: f64 = 0.25;
/// Buffers are rounded up to this granularity.
pub const ROUND_TO: u64 = 64 * 1024;
/// Linux keeps tcp_rmem / tcp_wmem / rmem_max in C `int`s.
pub const LINUX_INT_MAX: u64 = i32::MAX as u64;
/// Mathis et al. constant C = sqrt(3/2) for periodic loss with delayed ACKs off.
pub const MATHIS_C: f64 = 1.224_744_871_391_589;

/// The largest BDP tcptune computes with: 2^53 bytes (8 PiB), the largest whole number a
/// JSON reader's f64 holds exactly, since `bdp_bytes` must be exact. Real paths are far
/// below (10 Tbit/s × 1 s is 1.25 TB); beyond it an input is a typo, not a network.
pub const MAX_BDP_BYTES: u64 = 1 << 53;

/// Rate × RTT in bit·ns, or None when it does not fit u128 (rates and RTTs near u64::MAX).
fn bits_ns(rate: Bitrate, rtt: Span) -> Option<u128> {
    u128::from(rate.bps()).checked_mul(rtt.as_std().as_nanos())
}

/// Zero losses in N segments bound the loss below about this many ÷ N (the 95 % bound of a
/// Poisson count of zero is 3).
pub const ZERO_LOSS_BOUND: f64 = 3.0;

/// CUBIC's two responses at `rtt_s` (RFC 9438 §5.1, C = 0.4, β = 0.7): its average window at
/// loss rate p is the larger of `cubic` ÷ p^0.75 and √(`reno` ÷ p) segments.
fn cubic_response(rtt_s: f64) -> (f64, f64) {
    let (c, beta) = (0.4_f64, 0.7_f64);
    let cubic = (c * (3.0 + beta) / (4.0 * (1.0 - beta))).powf(0.25) * rtt_s.powf(0.75);
    let reno = 3.0 * (1.0 + beta) / (2.0 * (1.0 - beta));
    (cubic, reno)
}

/// The average window CUBIC holds at loss rate `p` (a fraction) and `rtt_s`, in segments: the
/// larger of its cubic response and its Reno-friendly one ([`cubic_response`]).
pub fn cubic_window_segments(rtt_s: f64, p: f64) -> f64 {
    if p <= 0.0 {
        return f64::INFINITY;
    }
    let (cubic, reno) = cubic_response(rtt_s);
    (cubic / p.powf(0.75)).max((reno / p).sqrt())
}

/// The highest loss rate (a fraction) at which CUBIC's window still holds `segments` at
/// `rtt_s`: [`cubic_window_segments`] solved for the loss, each of its two responses in turn.
pub fn cubic_loss_limit(rtt_s: f64, segments: f64) -> f64 {
    if segments <= 0.0 {
        return 1.0;
    }
    let (cubic, reno) = cubic_response(rtt_s);
    (cubic / segments)
        .powf(4.0 / 3.0)
        .max(reno / (segments * segments))
        .min(1.0)
}

/// The loss, %, that `segments` without a loss rule out at 95 % ([`ZERO_LOSS_BOUND`] ÷ them).
#[allow(clippy::cast_precision_loss)]
pub fn zero_loss_bound_pct(segments: u64) -> f64 {
    100.0 * ZERO_LOSS_BOUND / segments.max(1) as f64
}

/// How many segments without a loss rule out a loss of `pct` % at 95 % ([`ZERO_LOSS_BOUND`]
/// ÷ the loss).
pub fn zero_loss_segments(pct: f64) -> u64 {
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    let n = (100.0 * ZERO_LOSS_BOUND / pct.max(1e-12)).ceil().min(1e18) as u64;
    n
}

/// Refuse a rate and RTT whose BDP is beyond [`MAX_BDP_BYTES`]: every figure derived from
/// it would be rounded or overflow. Callers check this before [`size_buffers`] and
/// [`bdp_exact`], which saturate rather than panic.
pub fn check_path(rate: Bitrate, rtt: Span) -> Result<(), String> {
    match bits_ns(rate, rtt).map(|b| b.div_ceil(8_000_000_000)) {
        Some(b) if b <= u128::from(MAX_BDP_BYTES) => Ok(()),
        _ => Err(format!(
            "{rate} at {rtt} RTT is a bandwidth-delay product over {} bytes (8 PiB): not a network path",
            MAX_BDP_BYTES
        )),
    }
}

/// BDP in bytes, exactly `rate / 8 × RTT` (may have a fractional part). Saturates at
/// u128::MAX bit·ns for inputs [`check_path`] refuses.
pub fn bdp_exact(rate: Bitrate, rtt: Span) -> f64 {
    // u128 arithmetic in nanoseconds keeps this exact up to f64's final rounding.
    let bits_ns = bits_ns(rate, rtt).unwrap_or(u128::MAX);
    #[allow(clippy::cast_precision_loss)]
    let v = bits_ns as f64 / 8e9;
    v
}

/// BDP in whole bytes, rounded up; u64::MAX when it does not fit (see [`check_path`]).
pub fn bdp_bytes(rate: Bitrate, rtt: Span) -> u64 {
    bits_ns(rate, rtt)
        .and_then(|b| u64::try_from(b.div_ceil(8_000_000_000)).ok())
        .unwrap_or(u64::MAX)
}

/// The headroom fraction for an RTT minimum and its mean deviation (None: not measured).
pub fn headroom(rtt_min: Span, mdev: Option<Span>) -> f64 {
    let min = rtt_min.as_secs_f64();
    let jitter = mdev.map_or(0.0, |m| 2.0 * m.as_secs_f64() / min.max(1e-9));
    jitter.clamp(MIN_HEADROOM, MAX_HEADROOM)
}

/// What the kernel's buffers must hold for one path.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct Sizing {
    /// Exact BDP in whole bytes (rounded up).
    pub bdp: u64,
    /// RTT the receive buffer is sized for: RTT_min × (1 + headroom).
    pub sizing_rtt_ms: f64,
    pub headroom_pct: f64,
    /// Recommended receive autotuning maximum (tcp_rmem[2]).
    pub buffer: u64,
    /// Recommended send autotuning maximum (tcp_wmem[2]).
    pub send_buffer: u64,
    /// True when a buffer was cut to the kernel's limit.
    pub clamped: bool,
    /// The send buffer is sized for loss recovery ([`loss_factor`] × BDP) rather than for a
    /// loss-free path; so is the receive buffer when `receive_loss_recovery`.
    pub loss_recovery: bool,
    pub receive_loss_recovery: bool,
    /// The multiples of the BDP each buffer was sized to (before the window share and the
    /// 64 KiB steps): 2.5 (send) and 2 × (1 + headroom) (receive) loss-free, else the loss
    /// factor.
    pub send_factor: f64,
    pub receive_factor: f64,
    /// The BDP of the direction the receive buffer serves (the far end sending), whole bytes:
    /// `bdp` is the sending direction's; they differ on an asymmetric path.
    pub receive_bdp: u64,
    /// The share of the receive buffer the receiver advertises as window that `buffer` is
    /// sized for (the factors above are for one half).
    pub window_share: f64,
}

/// How one buffer is sized: for a path without random loss, or for loss recovery at a
/// multiple of the BDP ([`loss_factor`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Rule {
    LossFree,
    LossRecovery(f64),
    /// A bottleneck others share: both maxima this multiple of the BDP (the queue they keep
    /// standing lengthens every round trip), for a loss-based algorithm (not loss recovery).
    Shared(f64),
}

/// The multiple of the BDP both buffers get when sized for loss recovery, at a loss after
/// startup of `loss_pct` percent (None: not measured — the unmeasured and shallow classes, and
/// `--loss-recovery`). While a lost segment is repaired (a round trip or more) the sender
/// keeps sending at its rate and the receiver holds everything beyond the hole; at higher loss
/// the holes overlap, and BBR's window must also carry the repairs. Measured on tcptune's lab
/// with BBR (BENCHMARKS.md, "Loss-scaled sizing"), % of the goodput limit:
///
/// | path, random loss each way | 5 × | 6 × | 8 × | bbr + 64 MiB |
/// |---|---|---|---|---|
/// | 150 ms / 500 Mbit/s, 0.1 % | 94.2 | | 94.6 | 94.7 |
/// | 50 ms / 200 Mbit/s, 0.3 % | 96.4 | 97.3 | | 97.3 |
/// | 150 ms / 500 Mbit/s, 0.3 % | 90.1 | 93.6 | | 94.6 |
/// | 50 ms / 200 Mbit/s, 1 % | 90.9 | 95.3 | 97.1 | 96.7 |
/// | 25 ms / 100 Mbit/s, 2 % | 92.1 | 95.5 | 96.6 | 96.6 |
///
/// Up to 0.1 %, 5 × is within a point of everything larger; from 0.3 % on it falls 1–6 points
/// behind and 6 × (the most tcptune asks of a measured path, its memory target) is within 1.4 points
/// of bbr + 64 MiB. Both buffers need it: 5 × receive with 6 × send got 91.9 % at 1 %.
/// So: [`LOSS_FACTOR`] below [`LOSS_SCALE_FROM_PCT`], [`HEAVY_LOSS_FACTOR`] from it on.
pub fn loss_factor(loss_pct: Option<f64>) -> f64 {
    match loss_pct {
        Some(p) if p >= LOSS_SCALE_FROM_PCT => HEAVY_LOSS_FACTOR,
        _ => LOSS_FACTOR,
    }
}

/// The loss after startup from which [`HEAVY_LOSS_FACTOR`] applies, percent: between the lab's
/// 0.1 % (5 × suffices) and 0.3 % (it does not).
pub const LOSS_SCALE_FROM_PCT: f64 = 0.2;
/// Both maxima, × BDP, from [`LOSS_SCALE_FROM_PCT`] of loss on.
pub const HEAVY_LOSS_FACTOR: f64 = 6.0;

/// The buffers for a path whose two directions may differ: the send buffer for `send` (this
/// end sending: its rate and rule), the receive buffer for `receive` (the far end sending),
/// both for the same RTT, the receive buffer for a window share of `share`.
pub fn size(send: (Bitrate, Rule), receive: (Bitrate, Rule), rtt_min: Span, mdev: Option<Span>, share: f64) -> Sizing {
    let tx = size_side(send.0, send.1, rtt_min, mdev);
    let rx = size_side(receive.0, receive.1, rtt_min, mdev);
    let s = Sizing {
        buffer: rx.buffer,
        receive_loss_recovery: rx.loss_recovery,
        receive_factor: rx.receive_factor,
        receive_bdp: rx.bdp,
        clamped: tx.clamped || rx.clamped,
        ..tx
    };
    for_window_share(s, share)
}

/// Both buffers for one direction's rate and rule ([`size_buffers`], [`size_for_loss`]).
fn size_side(rate: Bitrate, rule: Rule, rtt_min: Span, mdev: Option<Span>) -> Sizing {
    match rule {
        Rule::LossFree => size_buffers(rate, rtt_min, mdev),
        Rule::LossRecovery(f) => size_for_loss_by(rate, rtt_min, mdev, f),
        Rule::Shared(f) => Sizing {
            loss_recovery: false,
            receive_loss_recovery: false,
            ..size_for_loss_by(rate, rtt_min, mdev, f)
        },
    }
}

/// `s` with the receive buffer sized for a receiver that advertises `share` of its buffer
/// as window instead of the one half the factors assume (rounded up to the step, within
/// Linux's limit).
pub fn for_window_share(s: Sizing, share: f64) -> Sizing {
    if share.is_nan() || share <= 0.0 || (share - 0.5).abs() < 1e-9 {
        return s;
    }
    #[allow(
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss,
        clippy::cast_precision_loss
    )]
    // Less a millionth, so 0.5 / 0.35 landing a hair above a whole step does not add a step.
    let want = ((s.buffer as f64 * 0.5 / share - 1e-6).ceil() as u64)
        .div_ceil(ROUND_TO)
        .saturating_mul(ROUND_TO);
    Sizing {
        buffer: want.min(LINUX_INT_MAX),
        clamped: s.clamped || want > LINUX_INT_MAX,
        window_share: (share * 1000.0).round() / 1000.0,
        ..s
    }
}

pub fn size_buffers(rate: Bitrate, rtt_min: Span, mdev: Option<Span>) -> Sizing {
    let h = headroom(rtt_min, mdev);
    let bdp = bdp_bytes(rate, rtt_min);
    let exact = bdp_exact(rate, rtt_min);
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    let bytes = |x: f64| x.ceil() as u64;
    // Never more than 2.5 × BDP: round that limit down to the step, the wants up.
    let cap = (bytes(exact * SEND_FACTOR) / ROUND_TO * ROUND_TO).max(ROUND_TO);
    let up = |x: u64| x.div_ceil(ROUND_TO).saturating_mul(ROUND_TO);
    let recv = up(bytes(exact * BUFFER_FACTOR * (1.0 + h))).min(cap);
    let send = cap.max(recv);
    let clamped = send > LINUX_INT_MAX;
    Sizing {
        bdp,
        sizing_rtt_ms: (rtt_min.as_millis_f64() * (1.0 + h) * 1000.0).round() / 1000.0,
        headroom_pct: h * 100.0,
        buffer: recv.min(LINUX_INT_MAX),
        send_buffer: send.min(LINUX_INT_MAX),
        clamped,
        loss_recovery: false,
        receive_loss_recovery: false,
        send_factor: SEND_FACTOR,
        receive_factor: BUFFER_FACTOR * (1.0 + h),
        receive_bdp: bdp,
        window_share: DEFAULT_WINDOW_SHARE,
    }
}

/// The share of a Linux receive buffer advertised as window where the far end's is not
/// measured: ½ (`tcp_adv_win_scale = 1` before 6.6; since, the learnt payload/truesize ratio,
/// often 0.5–0.75, and ½ the safe side).
pub const DEFAULT_WINDOW_SHARE: f64 = 0.5;

/// [`size_buffers`] for a path with random loss: both maxima [`LOSS_FACTOR`] × BDP, rounded
/// up to the step (the RTT headroom is well inside that).
pub fn size_for_loss(rate: Bitrate, rtt_min: Span, mdev: Option<Span>) -> Sizing {
    size_for_loss_by(rate, rtt_min, mdev, LOSS_FACTOR)
}

/// [`size_for_loss`] at `factor` × BDP.
pub fn size_for_loss_by(rate: Bitrate, rtt_min: Span, mdev: Option<Span>, factor: f64) -> Sizing {
    let s = size_buffers(rate, rtt_min, mdev);
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    let want = ((bdp_exact(rate, rtt_min) * factor).ceil() as u64)
        .div_ceil(ROUND_TO)
        .saturating_mul(ROUND_TO)
        .max(s.send_buffer);
    Sizing {
        buffer: want.min(LINUX_INT_MAX),
        send_buffer: want.min(LINUX_INT_MAX),
        clamped: want > LINUX_INT_MAX,
        loss_recovery: true,
        receive_loss_recovery: true,
        send_factor: factor,
        receive_factor: factor,
        ..s
    }
}

/// `s` with both maxima at most `max` bytes (rounded down to the step, at least one step).
pub fn cap(s: Sizing, max: u64) -> Sizing {
    let max = (max / ROUND_TO * ROUND_TO).max(ROUND_TO);
    Sizing {
        buffer: s.buffer.min(max),
        send_buffer: s.send_buffer.min(max),
        ..s
    }
}

/// Highest throughput a window allows at an RTT: window × 8 / RTT, in bit/s.
pub fn max_throughput_bps(window: Bytes, rtt: Span) -> f64 {
    #[allow(clippy::cast_precision_loss)]
    let w = window.get() as f64;
    w * 8.0 / rtt.as_secs_f64()
}

/// Past this many parallel streams the count is capped and said so: a path that needs more is
/// far past what one flow's bound allows, and a tool or congestion control that fits it is the
/// answer.
pub const MAX_STREAMS: u32 = 64;

/// The streams at once that fill `path_bps` when each reaches `per_flow_bps`: ⌈path ÷ one
/// flow⌉ (at most [`MAX_STREAMS`]) and whether it was capped; None when one flow fills it.
pub fn streams_to_fill(path_bps: u64, per_flow_bps: u64) -> Option<(u32, bool)> {
    if per_flow_bps == 0 || per_flow_bps >= path_bps {
        return None;
    }
    let n = path_bps.div_ceil(per_flow_bps);
    let max = u64::from(MAX_STREAMS);
    Some((u32::try_from(n.min(max)).unwrap_or(MAX_STREAMS), n > max))
}

/// Longest RTT at which a window still fills a rate: window × 8 / rate. An error when that
/// is longer than any RTT tcptune takes as input (2^64 s), e.g. 16 EiB at 1 bit/s.
pub fn max_rtt_for(window: Bytes, rate: Bitrate) -> Result<Span, String> {
    #[allow(clippy::cast_precision_loss)]
    let secs = window.get() as f64 * 8.0 / rate.bps().max(1) as f64;
    Duration::try_from_secs_f64(secs)
        .map(Span::from_std)
        .map_err(|_| format!("{window} at {rate} would take {secs:.3e} s per window: not a network path"))
}

/// Mathis et al. (1997) ceiling for a single Reno-style flow: MSS/RTT × C/√p, in bit/s.
/// `loss` is a fraction (0.0001 = 0.01 %).
pub fn mathis_bps(mss: Bytes, rtt: Span, loss: f64) -> f64 {
    #[allow(clippy::cast_precision_loss)]
    let mss = mss.get() as f64;
    mss * 8.0 / rtt.as_secs_f64() * MATHIS_C / loss.sqrt()
}

/// FreeBSD/macOS cap a socket buffer at `sb_max_adj = maxsockbuf × MCLBYTES / (MSIZE + MCLBYTES)`
/// = maxsockbuf × 2048 / 2304 (sys/kern/uipc_sockbuf.c). This is the maxsockbuf that lets a
/// buffer of `buffer` bytes be reached.
pub fn bsd_maxsockbuf_for(buffer: u64) -> u64 {
    (u128::from(buffer) * 2304)
        .div_ceil(2048)
        .try_into()
        .unwrap_or(u64::MAX)
}

/// The largest socket buffer a given kern.ipc.maxsockbuf allows.
pub fn bsd_usable(maxsockbuf: u64) -> u64 {
    u64::try_from(u128::from(maxsockbuf) * 2048 / 2304).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn heavy_loss_gets_the_larger_factor_from_the_lab_threshold_on() {
        assert_eq!(loss_factor(None), LOSS_FACTOR);
        assert_eq!(loss_factor(Some(0.1)), LOSS_FACTOR);
        assert_eq!(loss_factor(Some(LOSS_SCALE_FROM_PCT)), HEAVY_LOSS_FACTOR);
        assert_eq!(loss_factor(Some(2.0)), HEAVY_LOSS_FACTOR);
        let s = size_for_loss_by(
            Bitrate::from_bps(200_000_000),
            Span::from_millis_f64(50.0),
            None,
            loss_factor(Some(1.0)),
        );
        // 6 × the 1,250,000-byte BDP, rounded up to 64 KiB.
        assert!((7_500_000..7_500_000 + 65_536).contains(&s.buffer), "{s:?}");
        assert_eq!(s.buffer % 65_536, 0, "{s:?}");
    }

    #[test]
    fn loss_recovery_is_five_bdp_both_ways() {
        let rate = Bitrate::from_bps(500_000_000);
        let rtt = Span::from_std(Duration::from_millis(150));
        let s = size_for_loss(rate, rtt, None);
        assert_eq!((s.buffer, s.send_buffer), (46_923_776, 46_923_776));
        assert!(s.loss_recovery && !s.clamped);
        assert_eq!(s.bdp, size_buffers(rate, rtt, None).bdp);
        assert!(!size_buffers(rate, rtt, None).loss_recovery);
        // 10 Gbit/s × 600 ms: 3.75 GB × 5 is far past the int limit.
        let big = size_for_loss(
            Bitrate::from_bps(10_000_000_000),
            Span::from_std(Duration::from_millis(600)),
            None,
        );
        assert!(big.clamped && big.buffer == LINUX_INT_MAX && big.send_buffer == LINUX_INT_MAX);
    }

    fn rate(s: &str) -> Bitrate {
        s.parse().expect("rate")
    }
    fn dur(s: &str) -> Span {
        s.parse().expect("duration")
    }

    /// Worked examples from the field, computed here rather than copied.
    #[test]
    fn worked_examples() {
        // Copenhagen–Luxembourg, 1 Gbit/s at 25 ms: 125 MB/s × 0.025 s.
        assert_eq!(bdp_bytes(rate("1gbit"), dur("25ms")), 3_125_000);
        // California–UK, 100 Mbit/s at 150 ms: 12.5 MB/s × 0.15 s.
        assert_eq!(bdp_bytes(rate("100mbit"), dur("150ms")), 1_875_000);
        // RHEL tuning guide, 10 Gbit/s at 117 ms: 1.25 GB/s × 0.117 s = 146.25 MB
        // (139.47 MiB) — not the figure the guide prints.
        assert_eq!(bdp_bytes(rate("10gbit"), dur("117ms")), 146_250_000);
        // The lab paths of the benchmark.
        assert_eq!(bdp_bytes(rate("500mbit"), dur("150ms")), 9_375_000);
        assert_eq!(bdp_bytes(rate("500mbit"), dur("600ms")), 37_500_000);
        assert_eq!(bdp_bytes(rate("50mbit"), dur("40ms")), 250_000);
    }

    #[test]
    fn bdp_exact_keeps_fractions() {
        // 500 Mbit/s × 1 µs = 62.5 bytes.
        assert!((bdp_exact(rate("500mbit"), dur("1us")) - 62.5).abs() < 1e-12);
        assert_eq!(bdp_bytes(rate("500mbit"), dur("1us")), 63);
    }

    #[test]
    fn buffers_are_two_to_two_and_a_half_bdp() {
        let cases = [
            ("500mbit", "150ms", None),
            ("500mbit", "25ms", Some("0.1ms")),
            ("500mbit", "600ms", Some("30ms")),
            ("1gbit", "25ms", Some("20ms")),
            ("50mbit", "40ms", None),
        ];
        for (r, t, j) in cases {
            let s = size_buffers(rate(r), dur(t), j.map(dur));
            #[allow(clippy::cast_precision_loss)]
            let ratio = |b: u64| b as f64 / s.bdp as f64;
            let step = ROUND_TO as f64 / s.bdp as f64;
            assert!(ratio(s.buffer) >= 2.2 - step, "{r} {t}: {}", ratio(s.buffer));
            assert!(ratio(s.buffer) <= 2.5, "{r} {t}: {}", ratio(s.buffer));
            assert!(
                ratio(s.send_buffer) > 2.5 - step && ratio(s.send_buffer) <= 2.5,
                "{r} {t}"
            );
            assert!(s.send_buffer >= s.buffer);
            assert_eq!(s.buffer % ROUND_TO, 0);
            assert_eq!(s.send_buffer % ROUND_TO, 0);
        }
        // 150 ms / 500 Mbit/s, no jitter known: receive 9 375 000 × 2 × 1.1 = 20 625 000 → 20 643 840;
        // send 2.5 × 9 375 000 = 23 437 500 → 23 396 352 (rounded down: never above 2.5 × BDP).
        let s = size_buffers(rate("500mbit"), dur("150ms"), None);
        assert_eq!(s.buffer, 20_643_840);
        assert_eq!(s.send_buffer, 23_396_352);
        assert!((s.headroom_pct - 10.0).abs() < 1e-9);
    }

    #[test]
    fn jitter_raises_headroom_up_to_the_cap() {
        assert!((headroom(dur("100ms"), Some(dur("1ms"))) - 0.10).abs() < 1e-12);
        assert!((headroom(dur("100ms"), Some(dur("7.5ms"))) - 0.15).abs() < 1e-12);
        assert!((headroom(dur("100ms"), Some(dur("80ms"))) - 0.25).abs() < 1e-12);
    }

    #[test]
    fn linux_int_limit() {
        let s = size_buffers(rate("100gbit"), dur("600ms"), None);
        assert!(s.clamped);
        assert_eq!(s.buffer, LINUX_INT_MAX);
        assert_eq!(s.send_buffer, LINUX_INT_MAX);
    }

    #[test]
    fn ceilings() {
        // A 64 KiB window at 150 ms: 65536 × 8 / 0.15 = 3 495 253.3 bit/s.
        let t = max_throughput_bps(Bytes::new(65_536), dur("150ms"));
        assert!((t - 3_495_253.333).abs() < 0.01, "{t}");
        // Stock 6 MiB receive maximum, half advertised, at 150 ms ≈ 167.8 Mbit/s.
        let t = max_throughput_bps(Bytes::new(6_291_456 / 2), dur("150ms"));
        assert!((t - 167_772_160.0).abs() < 1.0, "{t}");
        let r = max_rtt_for(Bytes::new(3_125_000), rate("1gbit")).expect("fits");
        assert!((r.as_millis_f64() - 25.0).abs() < 1e-6);
        // 16 EiB at 1 bit/s: 1.5e20 s, more than any Span. Used to panic.
        let e = max_rtt_for(Bytes::new(u64::MAX), rate("1bit")).expect_err("absurd");
        assert!(e.contains("not a network path"), "{e}");
    }

    #[test]
    fn absurd_paths_are_refused_not_wrapped() {
        let max_rtt = Span::from_std(Duration::new(u64::MAX, 999_999_999));
        let max_rate = Bitrate::from_bps(u64::MAX);
        // u64::MAX bit/s × u64::MAX s overflows u128: once a silent wrap (release) or a
        // panic (debug); now refused, and the helpers saturate.
        assert!(check_path(max_rate, max_rtt).is_err());
        assert_eq!(bdp_bytes(max_rate, max_rtt), u64::MAX);
        assert!(bdp_exact(max_rate, max_rtt) > 4e28); // u128::MAX bit·ns in bytes
        let s = size_buffers(max_rate, max_rtt, None);
        assert!(s.clamped && s.buffer == LINUX_INT_MAX);
        // Fits u128 but not the exact-JSON limit.
        assert!(check_path(rate("1000tbit"), dur("1000000000s")).is_err());
        // The edge: 2^53 bytes is accepted, one nanosecond more is not.
        let ns_at_limit = u128::from(MAX_BDP_BYTES) * 8; // at 1 Gbit/s, 1 bit per ns
        let at = Span::from_std(Duration::from_nanos(u64::try_from(ns_at_limit).expect("fits")));
        assert_eq!(check_path(rate("1gbit"), at), Ok(()));
        let over = Span::from_std(at.as_std() + Duration::from_nanos(1));
        assert!(check_path(rate("1gbit"), over).is_err());
        // Tiny paths are fine: 1 bit/s at 1 ns.
        assert_eq!(check_path(rate("1bit"), dur("0.000000001s")), Ok(()));
        assert_eq!(bdp_bytes(rate("1bit"), dur("0.000000001s")), 1);
    }

    proptest::proptest! {
        // PROPTEST_CASES raises the case count: bench/fuzz-parser.sh runs 1,000,000.
        #[test]
        fn arithmetic_never_panics(bps in 1u64.., secs in proptest::prelude::any::<u64>(), nanos in 0u32..1_000_000_000,
                                   window in proptest::prelude::any::<u64>(), loss in 1e-9f64..=1.0, mss in 1u64..=65535) {
            let (r, d) = (Bitrate::from_bps(bps), Span::from_std(Duration::new(secs, nanos)));
            let ok = check_path(r, d).is_ok();
            let b = bdp_bytes(r, d);
            let exact = bdp_exact(r, d);
            if ok {
                // Within the limit the whole and exact BDPs agree.
                proptest::prop_assert!(b <= MAX_BDP_BYTES);
                #[allow(clippy::cast_precision_loss)]
                let bf = b as f64;
                proptest::prop_assert!(bf >= exact && bf - exact < 1.0 + exact * 1e-12, "{b} {exact}");
            }
            let s = size_buffers(r, d, None);
            proptest::prop_assert!(s.buffer <= LINUX_INT_MAX && s.send_buffer <= LINUX_INT_MAX);
            let _ = size_for_loss(r, d, Some(d));
            let _ = max_rtt_for(Bytes::new(window), r);
            if d.as_std() > Duration::ZERO {
                let _ = max_throughput_bps(Bytes::new(window), d);
                let _ = mathis_bps(Bytes::new(mss), d, loss);
            }
            let _ = bsd_usable(window);
            let _ = bsd_maxsockbuf_for(window);
        }
    }

    #[test]
    fn mathis() {
        // MSS 1448, RTT 100 ms, loss 0.01 %: 1448×8/0.1 × 1.2247/0.01 = 14 187 444.6 bit/s.
        let m = mathis_bps(Bytes::new(1448), dur("100ms"), 0.0001);
        assert!((m - 14_187_444.59).abs() < 0.01, "{m}");
    }

    #[test]
    fn bsd_maxsockbuf_rule() {
        // FreeBSD default kern.ipc.maxsockbuf 2 MiB allows 1 864 135 bytes.
        assert_eq!(bsd_usable(2_097_152), 1_864_135);
        for b in [1u64, 2_000_000, 16_777_216, 20_643_840, 1 << 33] {
            let m = bsd_maxsockbuf_for(b);
            assert!(bsd_usable(m) >= b, "{b}");
            assert!(bsd_usable(m - 1) < b, "{b} not minimal");
        }
    }
}
