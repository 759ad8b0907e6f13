//! Parallel streams: where one flow cannot fill the path under the advice, how many at once do.
//!
//! Two bounds hold one flow whatever the kernel's buffers: a tool's own window (OpenSSH's 2 MiB
//! channel window: [`crate::ceilings`]) and, for a congestion control that stays loss-based, the
//! loss the path test measured (Mathis et al.'s bound, [`per_flow_at_loss`] says why not CUBIC's
//! own response). Each stream is held the same
//! way, so ⌈path ÷ one flow⌉ streams fill the path. Not on a shared path: there each stream more
//! takes from the others on it, as BBR would (the reason CUBIC stays there), so no count is
//! advised; and not for BBR, which no random loss holds below the BDP.

use serde::Serialize;

use crate::bdp;

pub use crate::bdp::MAX_STREAMS;

/// What holds one flow below the path.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Bound {
    /// A tool's own window ([`crate::ceilings`]).
    AppWindow,
    /// The measured loss, for the loss-based congestion control advised.
    Loss,
}

/// The streams that fill the path.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Streams {
    pub bound: Bound,
    /// The tool (its window) or the congestion control (the loss) that holds one flow.
    pub held_by: String,
    /// The loss, %, for [`Bound::Loss`].
    pub loss_pct: Option<f64>,
    /// What one flow reaches, bit/s.
    pub per_flow_bps: u64,
    /// For CUBIC at a loss: what its own response (RFC 9438 §5.1) says one flow holds, bit/s —
    /// the class line's figure, above what the lab's flows reached ([`per_flow_at_loss`]).
    pub response_bps: Option<u64>,
    /// The path's rate, bit/s.
    pub path_bps: u64,
    /// ⌈path ÷ one flow⌉, at most [`MAX_STREAMS`].
    pub count: u32,
    /// More than [`MAX_STREAMS`] would be needed.
    pub capped: bool,
}

/// ⌈`path_bps` ÷ `per_flow_bps`⌉ ([`crate::bdp::streams_to_fill`]).
pub fn count(path_bps: u64, per_flow_bps: u64) -> Option<(u32, bool)> {
    bdp::streams_to_fill(path_bps, per_flow_bps)
}

/// Streams for a tool's window: one flow reaches `per_flow_bps`.
pub fn for_window(tool: &str, per_flow_bps: u64, path_bps: u64) -> Option<Streams> {
    let (count, capped) = count(path_bps, per_flow_bps)?;
    Some(Streams {
        bound: Bound::AppWindow,
        held_by: tool.to_string(),
        loss_pct: None,
        per_flow_bps,
        response_bps: None,
        path_bps,
        count,
        capped,
    })
}

/// Whether `cc` backs off on random loss (CUBIC, Reno and the like): BBR does not.
pub fn loss_based(cc: &str) -> bool {
    !cc.starts_with("bbr")
}

/// What one flow of `cc` reaches at `loss_pct` over `rtt_s` with `mss`-byte segments, bit/s:
/// Mathis et al.'s bound (MSS ÷ RTT × 1.22 ÷ √p), for CUBIC too. Not CUBIC's own response
/// (RFC 9438 §5.1), by the lab's outcomes (`bench/streams.sh`, BENCHMARKS.md "Parallel
/// streams"): one CUBIC flow read 9.3 Mbit/s at 0.1 % over 50 ms, where that response says 21.4
/// and Mathis 8.97; the streams counted from the response (10 and 14 on 200 Mbit/s at 50 and
/// 100 ms) reached 54 % and 74 % of the path, twice as many 95 % and 97 %.
pub fn per_flow_at_loss(cc: &str, loss_pct: f64, mss: u32, rtt_s: f64) -> Option<f64> {
    if loss_pct <= 0.0 || rtt_s <= 0.0 || !loss_based(cc) {
        return None;
    }
    Some(bdp::mathis_bps(
        crate::units::Bytes::new(u64::from(mss)),
        crate::units::Span::from_millis_f64(rtt_s * 1000.0),
        loss_pct / 100.0,
    ))
}

/// Streams for the measured loss, when the advised congestion control `cc` is loss-based and
/// the path is not shared.
pub fn for_loss(cc: &str, loss_pct: f64, mss: u32, rtt_s: f64, path_bps: u64) -> Option<Streams> {
    let per_flow = per_flow_at_loss(cc, loss_pct, mss, rtt_s)?;
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    let per_flow_bps = per_flow.round() as u64;
    let (count, capped) = count(path_bps, per_flow_bps)?;
    Some(Streams {
        bound: Bound::Loss,
        held_by: cc.to_string(),
        loss_pct: Some(loss_pct),
        per_flow_bps,
        #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
        response_bps: (cc == "cubic").then(|| {
            (bdp::cubic_window_segments(rtt_s, loss_pct / 100.0) * f64::from(mss) * 8.0 / rtt_s).round() as u64
        }),
        path_bps,
        count,
        capped,
    })
}

/// The tools that run `n` streams.
fn tools(n: u32) -> String {
    format!(
        "iperf3 -P {n}, rclone --transfers {n} (--multi-thread-streams {n} for one large file), globus-url-copy -p {n}, or {n} rsync at once over parts of the file list"
    )
}

/// The note of a loss's streams: whole (the derivation, for `--explain`) and in one line. None
/// for a tool's window, whose streams its own note says ([`crate::ceilings::note`]).
pub fn note(s: &Streams) -> Option<(String, String)> {
    if s.bound != Bound::Loss {
        return None;
    }
    #[allow(clippy::cast_precision_loss)]
    let (one, path) = (
        crate::text::rate(s.per_flow_bps as f64),
        crate::text::rate(s.path_bps as f64),
    );
    let n = if s.capped {
        format!("more than {MAX_STREAMS}")
    } else {
        s.count.to_string()
    };
    let loss = s.loss_pct.unwrap_or(0.0);
    let response = s.response_bps.map_or_else(String::new, |r| {
        #[allow(clippy::cast_precision_loss)]
        let r = crate::text::rate(r as f64);
        format!(" ({r} by CUBIC's own response, which the lab's flows fell short of)")
    });
    let why = format!(
        "at the {} loss measured one {} flow holds {one} by Mathis's bound{response}",
        crate::text::pct(loss),
        s.held_by
    );
    let long = format!(
        "parallel streams: {why}, so {n} at once fill the path's {path} (\u{2308}{path} \u{f7} {one}\u{2309}); run them with {}",
        tools(s.count)
    );
    let c = s.count;
    let short = format!("{n} streams at once fill {path} at this loss: iperf3 -P {c}, globus-url-copy -p {c}");
    Some((long, short))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_count_is_the_ceiling_of_the_path_over_one_flow() {
        assert_eq!(count(500_000_000, 111_848_107), Some((5, false)));
        assert_eq!(count(500_000_000, 250_000_000), Some((2, false)));
        assert_eq!(count(500_000_000, 500_000_000), None);
        assert_eq!(count(500_000_000, 0), None);
        assert_eq!(count(10_000_000_000, 1_000_000), Some((MAX_STREAMS, true)));
    }

    #[test]
    fn openssh_at_150_ms_on_500_mbit_takes_five() {
        let s = for_window("scp, sftp and rsync -e ssh", 111_848_107, 500_000_000).expect("streams");
        assert_eq!((s.count, s.capped, s.bound), (5, false, Bound::AppWindow));
        // Its own note says it (crate::ceilings::note), not this one.
        assert_eq!(note(&s), None);
    }

    #[test]
    fn loss_counts_only_for_a_loss_based_congestion_control() {
        // 0.1 % at 50 ms, MSS 1448: Mathis, 1448 × 8 / 0.05 × 1.2247 / √0.001 = 8.97 Mbit/s;
        // on 200 Mbit/s, 23 streams (the lab: one CUBIC flow 9.3 Mbit/s, 20 at once 95 %).
        let s = for_loss("cubic", 0.1, 1448, 0.05, 200_000_000).expect("streams");
        assert!((s.per_flow_bps as f64 - 8.973e6).abs() < 0.01e6, "{s:?}");
        assert_eq!((s.count, s.capped), (23, false));
        assert_eq!(for_loss("bbr", 0.1, 1448, 0.05, 200_000_000), None);
        assert_eq!(for_loss("cubic", 0.0, 1448, 0.05, 200_000_000), None);
        assert_eq!(
            for_loss("reno", 0.1, 1448, 0.05, 200_000_000).map(|r| r.count),
            Some(23)
        );
        let (long, short) = note(&s).expect("a loss's note");
        assert!(long.contains("so 23 at once fill the path's 200 Mbit/s"), "{long}");
        assert!(long.contains("iperf3 -P 23") && long.contains("Mathis"), "{long}");
        assert!(
            short.starts_with("23 streams at once fill 200 Mbit/s at this loss: iperf3 -P 23"),
            "{short}"
        );
    }
}
