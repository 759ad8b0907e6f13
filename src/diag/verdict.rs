//! What limited a `verify` flow, and the advice that follows: one verdict per flow
//! ([`settle_verdict`]), settled from the kernel's limited-by counters and what the buffers can
//! carry; the advice lines size buffers by the same rule as `advise`
//! ([`crate::bdp::size_buffers`]) for the flow's own minimum RTT. Pure: no I/O, no printing.

use serde::Serialize;

use crate::bdp;
use crate::bdp::Source;
use crate::os::Os;
use crate::tcp::tcpinfo::{Breakdown, LimitedBy};
use crate::text;
use crate::units::{Bitrate, Bytes};

/// A share of the busy time worth a line of advice.
const NOTABLE_PCT: f64 = 10.0;

#[derive(Debug, Serialize)]
pub struct BufferFacts {
    pub os: String,
    pub key: Option<String>,
    pub value: Option<String>,
    /// The autotuning maximum (last field of the value), bytes.
    pub max: Option<u64>,
    /// What the path needs, bytes.
    pub needed: u64,
}

/// The last field of a sysctl value (the autotuning maximum of `tcp_rmem`), bytes.
pub(crate) fn last_field(v: &str) -> Option<u64> {
    v.split(' ').next_back().and_then(|x| x.parse().ok())
}

/// What the flow showed beside the kernel's counters: the verdict is settled from it, and the
/// advice ([`AdviceFacts::flow`]) is written from it.
#[derive(Clone, Copy)]
pub struct VerdictFacts<'a> {
    pub throughput_bps: f64,
    pub sizing_rtt_ms: f64,
    pub rate: Bitrate,
    pub rate_source: Source,
    pub receiver: &'a BufferFacts,
    pub sender: &'a BufferFacts,
    /// The receiver's advertised window at the end (tcpi_snd_wnd), bytes.
    pub peer_window: Option<u64>,
    /// The latest delivery-rate sample (TCP_INFO), bit/s.
    pub delivery_rate_bps: Option<f64>,
}

/// A buffer that held the flow back for a notable share of the time, and whose maximum is not
/// known to cover what the path needs.
fn short(share_pct: f64, b: &BufferFacts) -> bool {
    share_pct >= NOTABLE_PCT && b.max.is_none_or(|m| m < b.needed)
}

/// One verdict per flow. The counters pick the largest share ([`Breakdown::compute`]), but the
/// kernel's rwnd_limited counter only ticks while the window is completely full, so a flow held
/// back by a small receive window can show a small share of it (10 % against 90 % "network" on
/// a loaded host); and a flow that filled the path can show 10 % on a buffer a step under what
/// advise sizes. A "network" (or "application") verdict becomes a buffer's when:
/// * the flow got well under a known path rate (80 %), and the buffer is [`short`], or — for the
///   receive window — the window at the end explains the throughput (its ceiling at this RTT
///   within 25 % of what got through, or of the latest delivery rate);
/// * with no known path rate, the buffer is short and the window does not carry more than 25 %
///   above what got through.
///
/// The advice follows: "raise" only under a buffer verdict, a note otherwise.
pub fn settle_verdict(b: &Breakdown, f: &VerdictFacts<'_>) -> LimitedBy {
    if !matches!(b.limited_by, LimitedBy::Network | LimitedBy::Application) {
        return b.limited_by;
    }
    #[allow(clippy::cast_precision_loss)]
    let rate = f.rate.bps() as f64;
    let got = f.throughput_bps.max(f.delivery_rate_bps.unwrap_or(0.0));
    #[allow(clippy::cast_precision_loss)]
    let ceiling = f
        .peer_window
        .filter(|_| f.sizing_rtt_ms > 0.0)
        .map(|w| w as f64 * 8.0 / (f.sizing_rtt_ms / 1000.0));
    let explains = ceiling.map(|c| c <= 1.25 * got);
    let (rwnd, sndbuf) = if f.rate_source == Source::Assumed {
        (
            short(b.rwnd_limited_pct, f.receiver) && explains != Some(false),
            short(b.sndbuf_limited_pct, f.sender),
        )
    } else if f.throughput_bps < 0.8 * rate {
        (
            short(b.rwnd_limited_pct, f.receiver) || explains == Some(true),
            short(b.sndbuf_limited_pct, f.sender),
        )
    } else {
        // The flow nearly filled the path: the path is what limits it.
        (false, false)
    };
    match (rwnd, sndbuf) {
        (true, true) if b.sndbuf_limited_pct > b.rwnd_limited_pct => LimitedBy::SendBuffer,
        (true, _) => LimitedBy::ReceiveWindow,
        (false, true) => LimitedBy::SendBuffer,
        (false, false) => b.limited_by,
    }
}

/// What the advice is computed from: the flow's facts (the verdict's), its counters and its
/// retransmissions.
#[derive(Clone, Copy)]
pub struct AdviceFacts<'a> {
    pub flow: VerdictFacts<'a>,
    pub breakdown: Option<&'a Breakdown>,
    pub retransmitted_pct: Option<f64>,
}

/// `sysctl -w net.ipv4.tcp_rmem="4096 131072 N"`: the running min and default kept, the maximum raised.
fn raise_cmd(os: &str, key: &str, value: Option<&str>, need: u64) -> String {
    let fields: Vec<&str> = value.map(|v| v.split(' ').collect()).unwrap_or_default();
    let new = if fields.len() == 3 {
        format!("{} {} {need}", fields[0], fields[1])
    } else if key.ends_with("_rmem") {
        format!("4096 131072 {need}")
    } else if key.ends_with("_wmem") {
        format!("4096 16384 {need}")
    } else {
        need.to_string()
    };
    // The one renderer of a sysctl command; any receiver that is not Linux is a BSD here.
    match os {
        "linux" => Os::Linux.set_command(key, &new),
        _ => format!(
            "{} kern.ipc.maxsockbuf={}",
            Os::Freebsd.set_command(key, &new),
            bdp::bsd_maxsockbuf_for(need)
        ),
    }
}

fn field_name(b: &BufferFacts) -> String {
    let key = b.key.clone().unwrap_or_else(|| "the buffer maximum".into());
    if b.value.as_deref().is_some_and(|v| v.contains(' ')) || key.ends_with("mem") {
        format!("{key}[2]")
    } else {
        key
    }
}

/// One end's buffer, as the advice line about it names it.
struct Side<'a> {
    /// "receive window limited 49 % of the time (its window at the end: …)".
    limited: String,
    facts: &'a BufferFacts,
    /// "the receiver's net.ipv4.tcp_rmem[2]", "net.ipv4.tcp_wmem[2] here".
    whose: String,
    /// Why a buffer that covers the need still limited the flow.
    still_growing: &'static str,
    /// "raise net.ipv4.tcp_rmem[2] on the receiver".
    raise: String,
    /// The key the raise command names when the peer did not say.
    default_key: &'static str,
}

/// The advice line about a buffer that limited the flow: it covers the need (so it was still
/// growing), or it is short but not the verdict, or it is short and the verdict (raise it).
fn buffer_line(side: &Side<'_>, buffer_verdict: bool, sized: &str) -> String {
    let b = side.facts;
    let needed = text::bytes(b.needed);
    match b.max {
        Some(m) if m >= b.needed => format!(
            "{}, though {} ({}) covers the {needed} needed: {}",
            side.limited,
            side.whose,
            text::bytes(m),
            side.still_growing
        ),
        cur if !buffer_verdict => format!(
            "{}: not what limits this flow; {}{} is under the {needed} needed ({sized})",
            side.limited,
            side.whose,
            cur.map(|m| format!(" ({})", text::bytes(m))).unwrap_or_default(),
        ),
        cur => format!(
            "{}: {}{} to {needed} ({sized}): {}",
            side.limited,
            side.raise,
            cur.map(|m| format!(" (now {})", text::bytes(m))).unwrap_or_default(),
            raise_cmd(
                &b.os,
                b.key.as_deref().unwrap_or(side.default_key),
                b.value.as_deref(),
                b.needed
            )
        ),
    }
}

/// The advice lines for a flow, following its verdict: a line for each buffer that limited
/// it notably (or is the verdict), then the verdict's own line when it is not a buffer.
pub fn advice(f: &AdviceFacts<'_>) -> Vec<String> {
    let Some(b) = f.breakdown else {
        return vec![format!(
            "measured {} goodput; this OS gives no limited-by counters (Linux TCP_INFO): run verify from a Linux sender to learn what limits the flow",
            text::rate(f.flow.throughput_bps)
        )];
    };
    let rate = match f.flow.rate_source {
        Source::Assumed => format!("{} (ASSUMED: give --bandwidth)", f.flow.rate),
        _ => f.flow.rate.to_string(),
    };
    let sized = format!("sized like advise for {} ms at {rate}", text::ms(f.flow.sizing_rtt_ms));
    // Advice to raise a buffer only under a buffer verdict: under "network" it would contradict
    // the verdict's own line (settle_verdict decides which it is).
    let buffer_verdict = matches!(b.limited_by, LimitedBy::ReceiveWindow | LimitedBy::SendBuffer);
    let mut out = Vec::new();
    // The verdict's own buffer always gets its line, even with a small share.
    if b.rwnd_limited_pct >= NOTABLE_PCT || b.limited_by == LimitedBy::ReceiveWindow {
        out.push(buffer_line(&receive_side(&f.flow, b), buffer_verdict, &sized));
    }
    if b.sndbuf_limited_pct >= NOTABLE_PCT || b.limited_by == LimitedBy::SendBuffer {
        out.push(buffer_line(&send_side(&f.flow, b), buffer_verdict, &sized));
    }
    out.extend(verdict_line(f, b));
    out
}

/// The receiver's buffer, as the line about a limiting receive window names it.
fn receive_side<'a>(flow: &VerdictFacts<'a>, b: &Breakdown) -> Side<'a> {
    let rtt = crate::units::Span::from_millis_f64(flow.sizing_rtt_ms);
    let field = field_name(flow.receiver);
    let window = flow
        .peer_window
        .map(|w| {
            format!(
                " (its window at the end: {}, {} at this RTT)",
                text::bytes(w),
                text::rate(bdp::max_throughput_bps(Bytes::new(w), rtt))
            )
        })
        .unwrap_or_default();
    Side {
        limited: format!(
            "receive window limited {} of the time{window}",
            crate::text::pct(b.rwnd_limited_pct)
        ),
        facts: flow.receiver,
        whose: format!("the receiver's {field}"),
        still_growing: "its window was still growing (autotuning ramps up over the first round trips: test longer with --time), or the receiving program sets a small SO_RCVBUF",
        raise: format!("raise {field} on the receiver"),
        default_key: "net.ipv4.tcp_rmem",
    }
}

/// This end's send buffer, as the line about a limiting send buffer names it.
fn send_side<'a>(flow: &VerdictFacts<'a>, b: &Breakdown) -> Side<'a> {
    let field = field_name(flow.sender);
    Side {
        limited: format!(
            "send buffer limited {} of the time",
            crate::text::pct(b.sndbuf_limited_pct)
        ),
        facts: flow.sender,
        whose: format!("{field} here"),
        still_growing: "the buffer was still growing; test longer with --time",
        raise: format!("raise {field} here on the sender"),
        default_key: "net.ipv4.tcp_wmem",
    }
}

/// The line of a verdict that is not a buffer's (their lines are the buffers' own).
fn verdict_line(f: &AdviceFacts<'_>, b: &Breakdown) -> Option<String> {
    match b.limited_by {
        LimitedBy::Network => {
            let loss = f
                .retransmitted_pct
                .filter(|p| *p >= 0.1)
                .map(|p| {
                    format!(
                        "; {} of the bytes were retransmitted: loss holds the congestion window down",
                        crate::text::pct(p)
                    )
                })
                .unwrap_or_default();
            Some(format!(
                "network limited {} of the time (the congestion window decided): the buffers are not what limits this flow; {} is what the path and the congestion control give one flow{loss}",
                crate::text::pct(b.network_limited_pct),
                text::rate(f.flow.throughput_bps)
            ))
        }
        LimitedBy::Application => Some(format!(
            "the sender had nothing queued {} of the time: the application (here tcptune itself: a busy CPU) limited the flow, not TCP",
            crate::text::pct(b.app_limited_pct.unwrap_or(0.0))
        )),
        LimitedBy::ReceiveWindow | LimitedBy::SendBuffer => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bf(os: &str, key: &str, value: &str, needed: u64) -> BufferFacts {
        BufferFacts {
            os: os.into(),
            key: Some(key.into()),
            value: Some(value.into()),
            max: last_field(value),
            needed,
        }
    }

    #[test]
    fn receive_window_advice_names_the_receiver_key_and_value() {
        let b = Breakdown::compute(3_000_000, 2_400_000, 0, Some(3_000_000)).expect("b");
        let recv = bf("linux", "net.ipv4.tcp_rmem", "4096 131072 262144", 13_762_560);
        let send = bf("linux", "net.ipv4.tcp_wmem", "4096 16384 16777216", 15_663_104);
        let f = AdviceFacts {
            flow: VerdictFacts {
                throughput_bps: 40e6,
                rate: Bitrate::from_bps(1_000_000_000),
                rate_source: Source::Assumed,
                ..facts(&recv, &send, Some(131_072))
            },
            breakdown: Some(&b),
            retransmitted_pct: None,
        };
        let a = advice(&f);
        assert_eq!(a.len(), 1, "{a:?}");
        assert!(a[0].starts_with("receive window limited 80 % of the time"), "{}", a[0]);
        assert!(
            a[0].contains("net.ipv4.tcp_rmem[2] on the receiver (now 262144 bytes"),
            "{}",
            a[0]
        );
        assert!(
            a[0].ends_with("sysctl -w 'net.ipv4.tcp_rmem=4096 131072 13762560'"),
            "{}",
            a[0]
        );
        assert!(a[0].contains("ASSUMED"), "{}", a[0]);

        // FreeBSD receiver: one value, and maxsockbuf to let it be reached.
        let recv = bf("freebsd", "net.inet.tcp.recvbuf_max", "2097152", 13_762_560);
        let a = advice(&AdviceFacts {
            flow: VerdictFacts {
                receiver: &recv,
                ..f.flow
            },
            ..f
        });
        assert!(
            a[0].contains("net.inet.tcp.recvbuf_max=13762560 kern.ipc.maxsockbuf=15482880"),
            "{}",
            a[0]
        );
    }

    #[test]
    fn send_buffer_network_and_application() {
        let recv = bf("linux", "net.ipv4.tcp_rmem", "4096 131072 33554432", 13_762_560);
        let send = bf("linux", "net.ipv4.tcp_wmem", "4096 16384 262144", 15_663_104);
        let b = Breakdown::compute(3_000_000, 0, 2_700_000, Some(3_000_000)).expect("b");
        let f = AdviceFacts {
            flow: VerdictFacts {
                rate: Bitrate::from_bps(1_000_000_000),
                ..facts(&recv, &send, None)
            },
            breakdown: Some(&b),
            retransmitted_pct: Some(0.0),
        };
        let a = advice(&f);
        assert_eq!(a.len(), 1);
        assert!(
            a[0].contains("raise net.ipv4.tcp_wmem[2] here on the sender (now 262144 bytes (256 KiB))"),
            "{}",
            a[0]
        );
        assert!(a[0].ends_with("'net.ipv4.tcp_wmem=4096 16384 15663104'"), "{}", a[0]);

        let b = Breakdown::compute(3_000_000, 30_000, 0, Some(3_000_000)).expect("b");
        let a = advice(&AdviceFacts {
            breakdown: Some(&b),
            retransmitted_pct: Some(1.5),
            ..f
        });
        assert!(a[0].starts_with("network limited 99 % of the time"), "{a:?}");
        assert!(a[0].contains("1.5 % of the bytes were retransmitted"), "{a:?}");

        let b = Breakdown::compute(1_000_000, 0, 0, Some(3_000_000)).expect("b");
        let a = advice(&AdviceFacts {
            breakdown: Some(&b),
            ..f
        });
        assert!(a[0].contains("nothing queued 67 %"), "{a:?}");

        let a = advice(&AdviceFacts { breakdown: None, ..f });
        assert!(a[0].contains("no limited-by counters"), "{a:?}");
    }

    #[test]
    fn window_covered_but_still_growing() {
        let recv = bf("linux", "net.ipv4.tcp_rmem", "4096 131072 33554432", 13_762_560);
        let send = bf("linux", "net.ipv4.tcp_wmem", "4096 16384 33554432", 15_663_104);
        let b = Breakdown::compute(3_000_000, 450_000, 0, Some(3_000_000)).expect("b");
        let a = advice(&AdviceFacts {
            flow: VerdictFacts {
                throughput_bps: 500e6,
                rate: Bitrate::from_bps(1_000_000_000),
                ..facts(&recv, &send, None)
            },
            breakdown: Some(&b),
            retransmitted_pct: None,
        });
        assert!(a[0].contains("still growing"), "{a:?}");
        // 15 %: worth a line, but below the verdict's threshold: the network is the limit.
        assert!(a[1].starts_with("network limited 85 %"), "{a:?}");
    }

    fn facts<'a>(recv: &'a BufferFacts, send: &'a BufferFacts, window: Option<u64>) -> VerdictFacts<'a> {
        VerdictFacts {
            throughput_bps: 30e6,
            sizing_rtt_ms: 50.0,
            rate: Bitrate::from_bps(100_000_000),
            rate_source: Source::Given,
            receiver: recv,
            sender: send,
            peer_window: window,
            delivery_rate_bps: None,
        }
    }

    /// The flaky lab run: a 256 KiB receive buffer on a 50 ms, 100 Mbit/s path, and the kernel
    /// counted only 10 % of the time as receive-window limited.
    #[test]
    fn a_short_receive_buffer_with_a_small_share_is_one_verdict() {
        let recv = bf("linux", "net.ipv4.tcp_rmem", "4096 131072 262144", 1_376_256);
        let send = bf("linux", "net.ipv4.tcp_wmem", "4096 16384 1572864", 1_572_864);
        let mut b = Breakdown::compute(3_000_000, 300_000, 0, Some(3_000_000)).expect("b");
        assert_eq!(b.limited_by, LimitedBy::Network, "the counters alone say network");
        // Even with a window report that would not settle it (rule 1 alone decides).
        b.limited_by = settle_verdict(&b, &facts(&recv, &send, Some(10_000_000)));
        assert_eq!(b.limited_by, LimitedBy::ReceiveWindow);
        let a = advice(&AdviceFacts {
            flow: facts(&recv, &send, Some(190_000)),
            breakdown: Some(&b),
            retransmitted_pct: None,
        });
        assert_eq!(a.len(), 1, "{a:?}");
        assert!(a[0].starts_with("receive window limited 10 % of the time"), "{a:?}");
        assert!(a[0].contains("sysctl -w 'net.ipv4.tcp_rmem="), "{a:?}");
        assert!(!a.iter().any(|l| l.contains("not what limits")), "{a:?}");
    }

    #[test]
    fn a_window_that_cannot_carry_the_path_rate_is_the_limit() {
        // Buffers that cover the need, a 4 % share, but the window at the end (128 KiB) carries
        // 21 Mbit/s at 50 ms, and 20 Mbit/s got through: the receiving program set a small SO_RCVBUF.
        let recv = bf("linux", "net.ipv4.tcp_rmem", "4096 131072 6291456", 1_376_256);
        let send = bf("linux", "net.ipv4.tcp_wmem", "4096 16384 4194304", 1_572_864);
        let mut b = Breakdown::compute(3_000_000, 120_000, 0, Some(3_000_000)).expect("b");
        assert_eq!(
            settle_verdict(&b, &facts(&recv, &send, Some(131_072))),
            LimitedBy::ReceiveWindow
        );
        b.limited_by = LimitedBy::ReceiveWindow;
        let a = advice(&AdviceFacts {
            flow: VerdictFacts {
                throughput_bps: 20e6,
                ..facts(&recv, &send, Some(131_072))
            },
            breakdown: Some(&b),
            retransmitted_pct: None,
        });
        assert_eq!(a.len(), 1, "{a:?}");
        assert!(a[0].starts_with("receive window limited 4 % of the time"), "{a:?}");
        assert!(a[0].contains("small SO_RCVBUF"), "{a:?}");

        // A window that carries far more than got through: the network, as the counters say.
        assert_eq!(
            settle_verdict(&b_network(), &facts(&recv, &send, Some(1_000_000))),
            LimitedBy::Network
        );
        // An assumed rate proves nothing about the window.
        let assumed = VerdictFacts {
            rate_source: Source::Assumed,
            ..facts(&recv, &send, Some(131_072))
        };
        assert_eq!(settle_verdict(&b_network(), &assumed), LimitedBy::Network);
        // A buffer that covers the need with a notable share stays a note under "network".
        let growing = Breakdown::compute(3_000_000, 450_000, 0, Some(3_000_000)).expect("b");
        assert_eq!(settle_verdict(&growing, &facts(&recv, &send, None)), LimitedBy::Network);
    }

    fn b_network() -> Breakdown {
        Breakdown::compute(3_000_000, 120_000, 0, Some(3_000_000)).expect("b")
    }

    #[test]
    fn both_buffers_short_the_larger_share_wins() {
        let recv = bf("linux", "net.ipv4.tcp_rmem", "4096 131072 262144", 1_376_256);
        let send = bf("linux", "net.ipv4.tcp_wmem", "4096 16384 262144", 1_572_864);
        let b = Breakdown::compute(3_000_000, 330_000, 450_000, Some(3_000_000)).expect("b");
        assert_eq!(b.limited_by, LimitedBy::Network);
        assert_eq!(settle_verdict(&b, &facts(&recv, &send, None)), LimitedBy::SendBuffer);
        // Counters that already name a buffer are kept.
        let b = Breakdown::compute(3_000_000, 900_000, 0, Some(3_000_000)).expect("b");
        assert_eq!(settle_verdict(&b, &facts(&recv, &send, None)), LimitedBy::ReceiveWindow);
    }

    /// The other flaky lab run: advised buffers, the path nearly full (89 of 100 Mbit/s), and
    /// 10 % on a receive buffer one 64 KiB step under what the measured RTT asks for.
    #[test]
    fn a_nearly_full_path_is_the_network_and_the_short_buffer_only_a_note() {
        let recv = bf("linux", "net.ipv4.tcp_rmem", "4096 131072 1376256", 1_441_792);
        let send = bf("linux", "net.ipv4.tcp_wmem", "4096 16384 1572864", 1_507_328);
        let mut b = Breakdown::compute(3_064_000, 315_000, 0, Some(3_014_000)).expect("b");
        let f = VerdictFacts {
            throughput_bps: 89.1e6,
            delivery_rate_bps: Some(96.5e6),
            ..facts(&recv, &send, Some(858_752))
        };
        assert_eq!(settle_verdict(&b, &f), LimitedBy::Network);
        // With no known rate: the window at the end (137 Mbit/s at 50 ms) carries more than
        // got through, so the short buffer is not the limit either.
        let assumed = VerdictFacts {
            rate_source: Source::Assumed,
            ..f
        };
        assert_eq!(settle_verdict(&b, &assumed), LimitedBy::Network);
        b.limited_by = settle_verdict(&b, &assumed);
        let a = advice(&AdviceFacts {
            flow: f,
            breakdown: Some(&b),
            retransmitted_pct: None,
        });
        assert_eq!(a.len(), 2, "{a:?}");
        assert!(a[0].contains("not what limits this flow"), "{a:?}");
        assert!(!a.iter().any(|l| l.contains("raise")), "{a:?}");
        assert!(a[1].starts_with("network limited"), "{a:?}");
    }
}
