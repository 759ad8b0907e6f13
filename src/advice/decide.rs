//! The decision table: from the TCP evidence about a path (a path test, else what this host's
//! kernel knows) to the class the advice is sized for, the congestion control, the receive
//! window share the receive buffer is sized with, the rate, and `tcp_notsent_lowat` — each
//! with the evidence behind it, in words the advice prints.
//!
//! | evidence | class | congestion control, buffers |
//! |---|---|---|
//! | `--loss-recovery` | lossy (given) | BBR, 5 × BDP |
//! | `--clean-path` | clean (given) | CUBIC, 2 × BDP + headroom |
//! | loss after startup that holds CUBIC below the path's BDP | lossy | BBR, 5 × BDP |
//! | a queue under [`QUEUE_DEEP_BDP`] × BDP filled by the test | shallow | BBR, 5 × BDP |
//! | no loss and a deep queue | clean | CUBIC, 2 × BDP + headroom |
//! | live flows or cached metrics showing loss | lossy | BBR, 5 × BDP |
//! | nothing measured | not measured | [`UNMEASURED_IS_LOSSY`]: BBR, 5 × BDP |
//!
//! Why the unmeasured default is the lossy class: it is the best worst case over the lab's
//! clean, lossy and shallow paths (BENCHMARKS.md): CUBIC sized for a clean path reached 5.8 %
//! at 150 ms with 0.01 % loss and about a third of the link behind a shallow queue, where BBR
//! with 5 × BDP loses a few points on a clean path (its ProbeRTT) and nothing elsewhere.
//!
//! The receive buffer: Linux advertises `buffer × scaling_ratio` (payload / truesize of the
//! receiver's skbs) as window since 6.6; the shipped 2 × sizing assumes a ratio of one half.
//! A measured share — the far end's, from its `tcptune serve`, or this host's own, from its
//! live flows — replaces that half: the window wanted divided by the share.

use serde::Serialize;

use crate::measure::evidence::{Evidence, Passive, TcpTest};
use crate::text;

/// A queue the test filled to at least this share of the BDP is deep: CUBIC's window, capped by
/// the receive buffer at about 1.1–1.25 × BDP, then never overflows it.
pub const QUEUE_DEEP_BDP: f64 = 0.5;
/// The receive-window share assumed when none was measured (the 2 × BDP of the shipped sizing).
pub const ASSUMED_SHARE: f64 = 0.5;
/// Measured shares are used within these bounds. Below: a misreading. Above one half a share
/// would *lower* the receive maximum under the 2 × (clean) and 5 × (lossy) rules the lab
/// measured, and it costs: at 0.1 % loss 3.9 × BDP (5 × at the lab's share of 0.65) got 82 % of
/// the link where 5 × and more got 95 % (BENCHMARKS.md). So a share only ever raises it.
pub const MIN_SHARE: f64 = 0.25;
pub const MAX_SHARE: f64 = 0.5;
/// With no TCP evidence, size for the lossy class (see the module docs).
pub const UNMEASURED_IS_LOSSY: bool = true;
/// Live flows must have sent this much before their retransmissions say anything.
pub const PASSIVE_MIN_BYTES: u64 = 10 << 20;
/// tcp_notsent_lowat: this many milliseconds of the path's rate, within the bounds below.
pub const NOTSENT_LOWAT_MS: f64 = 10.0;
pub const NOTSENT_LOWAT_MIN: u64 = 128 << 10;
pub const NOTSENT_LOWAT_MAX: u64 = 4 << 20;
/// A TCP test rate is confirmed by trains within this ratio of it.
pub const CONFIRM_RATIO: f64 = 1.25;

/// The user's word on the class, over any evidence.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Override {
    None,
    /// `--loss-recovery`.
    Lossy,
    /// `--clean-path`.
    Clean,
}

impl Override {
    pub fn from_flags(loss_recovery: bool, clean_path: bool) -> Self {
        match (loss_recovery, clean_path) {
            (true, _) => Self::Lossy,
            (false, true) => Self::Clean,
            _ => Self::None,
        }
    }
}

/// What the evidence says about the path.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum PathClass {
    /// No loss after startup and a deep bottleneck queue.
    Clean,
    /// Random loss (measured, or `--loss-recovery`).
    Lossy,
    /// A bottleneck queue shallower than [`QUEUE_DEEP_BDP`] × BDP.
    Shallow,
    /// Neither loss nor queue measured.
    Unmeasured,
}

/// The path as the advice sees it before the evidence: its rate, RTT and segment size.
#[derive(Debug, Clone, Copy)]
pub struct PathFacts {
    pub rate_bps: f64,
    pub rtt_ms: f64,
    /// Payload bytes per segment (MTU − 52 with timestamps).
    pub mss: u32,
    /// Whether the advice is for Linux (its profile chooses CUBIC or BBR by the class; the BSDs'
    /// profiles choose their algorithm otherwise), for the words of the decision.
    pub linux: bool,
}

impl PathFacts {
    /// The BDP in segments.
    fn bdp_segments(&self) -> f64 {
        self.rate_bps / 8.0 * self.rtt_ms / 1000.0 / f64::from(self.mss.max(1))
    }
}

/// The decision, and why.
#[derive(Debug, Clone, Serialize)]
pub struct Decision {
    pub class: PathClass,
    /// Sized and tuned for loss recovery: BBR and 5 × BDP (else CUBIC and 2 × BDP).
    pub loss_recovery: bool,
    /// Loss after startup, %, and the queue the test filled, × BDP: as measured, if they were.
    pub loss_pct: Option<f64>,
    pub queue_bdp: Option<f64>,
    /// The receive-window share the receive buffer is sized with, and where it came from.
    pub window_share: f64,
    pub window_share_source: String,
    /// The rate a TCP test confirmed, bit/s: the sizing uses it instead of the packet trains.
    pub tcp_rate_bps: Option<u64>,
    /// tcp_notsent_lowat for this rate, bytes.
    pub notsent_lowat: u64,
    /// The evidence behind the congestion control and the buffer class, in one line.
    pub why_class: String,
    /// The evidence behind the receive-window share.
    pub why_share: String,
    /// How to measure what was not (empty when everything was).
    pub how_to_measure: Option<String>,
}

/// The average window CUBIC holds at loss rate `p` (a fraction) and `rtt_s`, in segments: the
/// larger of its cubic response and its Reno-friendly one (RFC 9438 §5.1, C = 0.4, β = 0.7).
pub fn cubic_window_segments(rtt_s: f64, p: f64) -> f64 {
    if p <= 0.0 {
        return f64::INFINITY;
    }
    let (c, beta) = (0.4_f64, 0.7_f64);
    let cubic = (c * (3.0 + beta) / (4.0 * (1.0 - beta))).powf(0.25) * rtt_s.powf(0.75) / p.powf(0.75);
    let reno = (3.0 * (1.0 + beta) / (2.0 * (1.0 - beta) * p)).sqrt();
    cubic.max(reno)
}

/// Decides for `path` from `ev`, unless the user's `word` says otherwise.
pub fn decide(path: &PathFacts, ev: Option<&Evidence>, word: Override, host: Option<&str>) -> Decision {
    let loss_recovery = word == Override::Lossy;
    let test = ev.and_then(|e| e.test.as_ref());
    let passive = ev.and_then(|e| e.passive.as_ref());
    let bdp_segs = path.bdp_segments();
    let mut d = Decision {
        class: PathClass::Unmeasured,
        loss_recovery: UNMEASURED_IS_LOSSY,
        loss_pct: None,
        queue_bdp: None,
        window_share: ASSUMED_SHARE,
        window_share_source: "assumed".into(),
        tcp_rate_bps: None,
        notsent_lowat: notsent_lowat(path.rate_bps),
        why_class: String::new(),
        why_share: String::new(),
        how_to_measure: None,
    };
    let mut evidence: Vec<String> = Vec::new();
    let mut lossy = false;
    let mut shallow = false;
    let mut clean_loss = false;
    let mut deep = false;

    if let Some(t) = test {
        if t.steady_loss_pct().is_none() && t.segs_out.is_some() {
            evidence.push(format!(
                "loss not measured: the test flow did not leave startup within {} s (a longer --test-time lets it)",
                t.duration_s
            ));
        }
        if let Some(p) = t.steady_loss_pct() {
            d.loss_pct = Some(p);
            let (segs, retr) = steady_counts(t);
            let w = cubic_window_segments(path.rtt_ms / 1000.0, p / 100.0);
            if retr > 0 && w < bdp_segs {
                lossy = true;
                evidence.push(format!(
                    "{} retransmitted after startup ({} of {} segments) over {} s: CUBIC would hold about {} ({:.2} × BDP) at that loss",
                    pct(p),
                    retr,
                    segs,
                    t.duration_s,
                    text::rate(w * f64::from(path.mss) * 8.0 / (path.rtt_ms / 1000.0)),
                    w / bdp_segs
                ));
            } else if retr > 0 {
                clean_loss = true;
                evidence.push(format!(
                    "{} retransmitted after startup ({} of {} segments): too little to hold CUBIC below the BDP",
                    pct(p),
                    retr,
                    segs
                ));
            } else {
                clean_loss = true;
                #[allow(clippy::cast_precision_loss)]
                evidence.push(format!(
                    "no retransmission after startup in {} segments over {} s (loss below {} at 95 %)",
                    segs,
                    t.duration_s,
                    pct(300.0 / segs.max(1) as f64)
                ));
            }
        }
        match (t.min_rtt_ms, t.loaded_rtt_ms) {
            (Some(min), Some(loaded)) if min > 0.0 && !t.window_limited => {
                let q = ((loaded - min) / min).max(0.0);
                d.queue_bdp = Some((q * 100.0).round() / 100.0);
                let what = format!(
                    "the RTT grew from {} to {} ms under load: a bottleneck queue of about {:.2} × BDP",
                    text::ms(min),
                    text::ms(loaded),
                    q
                );
                if q < QUEUE_DEEP_BDP {
                    shallow = true;
                } else {
                    deep = true;
                }
                evidence.push(what);
            }
            _ if t.window_limited => evidence.push(
                "the test was held by its window, so it could not fill the bottleneck queue: queue depth not measured"
                    .into(),
            ),
            _ => evidence.push("the test gave no RTT under load: queue depth not measured".into()),
        }
        if let Some(r) = t.delivery_rate_bps.filter(|r| *r > 0.0) {
            #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
            let r = r.round() as u64;
            // A window-limited test shows only a lower bound; the caller takes the larger.
            d.tcp_rate_bps = Some(r);
        }
    } else if let Some(p) = passive {
        passive_evidence(p, bdp_segs, &mut evidence, &mut lossy, &mut d);
    }

    let (lossy_words, clean_words, default_words) = if path.linux {
        (
            "bbr and 5 × BDP",
            "cubic and 2 × BDP + headroom",
            "bbr and 5 × BDP, the best worst case over clean, lossy and shallow lab paths",
        )
    } else {
        (
            "5 × BDP (loss recovery)",
            "2 × BDP + headroom",
            "5 × BDP (loss recovery), the best worst case over clean, lossy and shallow lab paths",
        )
    };
    let by = if word == Override::Clean {
        d.class = PathClass::Clean;
        d.loss_recovery = false;
        evidence.insert(0, "--clean-path given".into());
        clean_words
    } else if lossy || shallow || loss_recovery {
        // A shallow queue first: behind one, the test's own flow loses segments too, so its
        // retransmissions are not the path's alone.
        d.class = if shallow && !loss_recovery {
            PathClass::Shallow
        } else {
            PathClass::Lossy
        };
        d.loss_recovery = true;
        lossy_words
    } else if clean_loss && deep {
        d.class = PathClass::Clean;
        d.loss_recovery = false;
        clean_words
    } else {
        d.loss_recovery = UNMEASURED_IS_LOSSY;
        default_words
    };
    if loss_recovery {
        evidence.insert(0, "--loss-recovery given".into());
    }
    if d.class == PathClass::Unmeasured && word == Override::None {
        let on = host.map_or_else(|| "the far end".to_string(), str::to_string);
        evidence.push(if test.is_some() {
            "loss and queue depth not both measured".into()
        } else {
            "the path's loss and queue depth were not measured (no TCP test)".into()
        });
        d.how_to_measure = Some(if test.is_some() {
            format!(
                "to measure them, advise again with a longer --test-time (e.g. 30s on a long path), with `tcptune serve` on {on} running as root so the test is not held by its buffers"
            )
        } else {
            format!(
                "to measure them, run `tcptune serve` on {on} (as root, so the test is not held by its buffers) and advise again with --host, or run an iperf3 server there and add --iperf3"
            )
        });
    }
    d.why_class = format!("{} → {by}", evidence.join("; "));

    // The receive-window share: this host's own (live flows) first, else the far end's.
    let own = passive.and_then(Passive::window_share);
    let far = test.and_then(|t| t.window_share);
    let (share, why) = match (own, far) {
        (Some(s), _) => (s, format!("this host's live flows advertise {} of their receive buffer", share_pct(s))),
        (None, Some(s)) => (
            s,
            format!(
                "the far end advertised {} of its receive buffer as window (its driver's payload/truesize); this host is assumed alike",
                share_pct(s)
            ),
        ),
        (None, None) => (
            ASSUMED_SHARE,
            "the receive-window share was not measured: assumed one half (Linux's scaling_ratio for typical 1500-byte frames)".into(),
        ),
    };
    d.window_share = share.clamp(MIN_SHARE, MAX_SHARE);
    d.window_share_source = match (own, far) {
        (Some(_), _) => "this host's live flows".into(),
        (None, Some(_)) => "the far end (path test)".into(),
        _ => "assumed".into(),
    };
    d.why_share = if (d.window_share - share).abs() > f64::EPSILON {
        format!("{why}, used as {}", share_pct(d.window_share))
    } else {
        why
    };
    d
}

/// The steady-state counts of a test (only called when it has them).
fn steady_counts(t: &TcpTest) -> (u64, u64) {
    (t.steady_segs_out.unwrap_or(0), t.steady_retrans_segs.unwrap_or(0))
}

/// What the passive evidence says about loss (it cannot show the queue).
fn passive_evidence(p: &Passive, bdp_segs: f64, evidence: &mut Vec<String>, lossy: &mut bool, d: &mut Decision) {
    if let Some(l) = p.loss_pct(PASSIVE_MIN_BYTES).filter(|l| *l > 0.0) {
        *lossy = true;
        d.loss_pct = Some(l);
        let sent: u64 = p.flows.iter().map(|f| f.bytes_sent).sum();
        evidence.push(format!(
            "this host's live flows to it retransmitted {} of {} sent",
            pct(l),
            text::bytes(sent)
        ));
    }
    #[allow(clippy::cast_precision_loss)]
    if let Some(ss) = p.metrics.as_ref().and_then(|m| m.ssthresh)
        && (ss as f64) < bdp_segs / 2.0
    {
        *lossy = true;
        evidence.push(format!(
            "the kernel keeps a slow-start threshold of {ss} segments ({:.2} × BDP) for it: earlier flows lost packets",
            ss as f64 / bdp_segs
        ));
    }
}

fn notsent_lowat(rate_bps: f64) -> u64 {
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    let b = (rate_bps / 8.0 * NOTSENT_LOWAT_MS / 1000.0) as u64;
    b.clamp(NOTSENT_LOWAT_MIN, NOTSENT_LOWAT_MAX)
}

/// "0.011 %": enough digits for small shares.
fn pct(p: f64) -> String {
    let digits = if p >= 1.0 {
        1
    } else if p >= 0.01 {
        3
    } else {
        4
    };
    format!("{p:.digits$} %")
}

fn share_pct(s: f64) -> String {
    format!("{:.0} %", s * 100.0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measure::evidence::{DestMetrics, LiveFlow};

    /// 150 ms / 500 Mbit/s, MSS 1448.
    fn long_path() -> PathFacts {
        PathFacts {
            rate_bps: 500e6,
            rtt_ms: 150.0,
            mss: 1448,
            linux: true,
        }
    }

    /// A 10-s test: `steady` segments after startup with `retr` retransmitted, RTT 150 ms
    /// growing by `queue` × itself under load.
    fn test(steady: u64, retr: u64, queue: f64) -> Evidence {
        Evidence {
            test: Some(TcpTest {
                duration_s: 9.8,
                segs_out: Some(steady + 20_000),
                retrans_segs: Some(retr + 100),
                steady_segs_out: Some(steady),
                steady_retrans_segs: Some(retr),
                min_rtt_ms: Some(150.0),
                loaded_rtt_ms: Some(150.0 * (1.0 + queue)),
                delivery_rate_bps: Some(480e6),
                ..TcpTest::default()
            }),
            ..Evidence::default()
        }
    }

    #[test]
    fn random_loss_chooses_bbr_and_names_the_evidence() {
        // 0.011 % after startup: CUBIC's window at 150 ms is far below the 6474-segment BDP.
        let d = decide(&long_path(), Some(&test(400_000, 44, 1.0)), Override::None, Some("h"));
        assert_eq!(d.class, PathClass::Lossy);
        assert!(d.loss_recovery);
        assert!(
            d.why_class
                .starts_with("0.011 % retransmitted after startup (44 of 400000 segments) over 9.8 s"),
            "{}",
            d.why_class
        );
        assert!(d.why_class.ends_with("→ bbr and 5 × BDP"), "{}", d.why_class);
        assert_eq!(d.tcp_rate_bps, Some(480_000_000));
        assert_eq!(d.how_to_measure, None);
    }

    #[test]
    fn a_clean_deep_path_chooses_cubic() {
        let d = decide(&long_path(), Some(&test(400_000, 0, 0.95)), Override::None, Some("h"));
        assert_eq!(d.class, PathClass::Clean);
        assert!(!d.loss_recovery);
        assert!(
            d.why_class
                .contains("no retransmission after startup in 400000 segments")
                && d.why_class.contains("a bottleneck queue of about 0.95 × BDP")
                && d.why_class.ends_with("→ cubic and 2 × BDP + headroom"),
            "{}",
            d.why_class
        );
    }

    #[test]
    fn a_shallow_queue_chooses_bbr_even_without_loss() {
        let d = decide(&long_path(), Some(&test(400_000, 0, 0.1)), Override::None, None);
        assert_eq!(d.class, PathClass::Shallow);
        assert!(d.loss_recovery);
        assert_eq!(d.queue_bdp, Some(0.1));
    }

    #[test]
    fn loss_too_small_to_matter_keeps_cubic() {
        // One retransmission in 10 million segments on a 25 ms / 100 Mbit/s path: CUBIC's
        // window at that loss is far above the 216-segment BDP.
        let path = PathFacts {
            rate_bps: 100e6,
            rtt_ms: 25.0,
            mss: 1448,
            linux: true,
        };
        let mut ev = test(10_000_000, 1, 1.0);
        if let Some(t) = ev.test.as_mut() {
            t.min_rtt_ms = Some(25.0);
            t.loaded_rtt_ms = Some(50.0);
        }
        let d = decide(&path, Some(&ev), Override::None, None);
        assert_eq!(d.class, PathClass::Clean, "{}", d.why_class);
        assert!(
            d.why_class.contains("too little to hold CUBIC below the BDP"),
            "{}",
            d.why_class
        );
    }

    #[test]
    fn a_test_that_never_left_startup_does_not_measure_loss() {
        // 600 ms: 10 s of test end inside startup; its 8.9 % retransmitted is its own overshoot.
        let mut ev = test(0, 0, 1.0);
        if let Some(t) = ev.test.as_mut() {
            t.steady_segs_out = None;
            t.steady_retrans_segs = None;
            t.segs_out = Some(196_612);
            t.retrans_segs = Some(17_522);
            t.duration_s = 10.016;
        }
        let d = decide(&long_path(), Some(&ev), Override::None, Some("h"));
        assert_eq!(d.class, PathClass::Unmeasured, "{}", d.why_class);
        assert_eq!(d.loss_pct, None);
        assert_eq!(d.queue_bdp, Some(1.0));
        assert!(
            d.why_class
                .starts_with("loss not measured: the test flow did not leave startup within 10.016 s"),
            "{}",
            d.why_class
        );
    }

    #[test]
    fn a_window_limited_test_does_not_measure_the_queue() {
        let mut ev = test(400_000, 0, 0.0);
        if let Some(t) = ev.test.as_mut() {
            t.window_limited = true;
        }
        let d = decide(&long_path(), Some(&ev), Override::None, Some("h"));
        assert_eq!(d.class, PathClass::Unmeasured);
        assert_eq!(d.loss_recovery, UNMEASURED_IS_LOSSY);
        assert_eq!(d.queue_bdp, None);
        assert!(d.why_class.contains("held by its window"), "{}", d.why_class);
        assert!(d.how_to_measure.is_some());
    }

    #[test]
    fn the_words_follow_the_os() {
        let bsd = PathFacts {
            linux: false,
            ..long_path()
        };
        let d = decide(&bsd, Some(&test(400_000, 44, 1.0)), Override::None, None);
        assert!(d.why_class.ends_with("→ 5 × BDP (loss recovery)"), "{}", d.why_class);
        assert!(!d.why_class.contains("bbr"), "{}", d.why_class);
    }

    #[test]
    fn no_evidence_is_the_unmeasured_default_and_says_how_to_measure() {
        let d = decide(&long_path(), None, Override::None, Some("198.18.0.2"));
        assert_eq!(d.class, PathClass::Unmeasured);
        assert_eq!(d.loss_recovery, UNMEASURED_IS_LOSSY);
        assert!(d.why_class.contains("not measured (no TCP test)"), "{}", d.why_class);
        assert!(
            d.how_to_measure
                .as_deref()
                .is_some_and(|h| h.contains("tcptune serve` on 198.18.0.2") && h.contains("--iperf3")),
            "{:?}",
            d.how_to_measure
        );
        assert_eq!((d.window_share, d.window_share_source.as_str()), (0.5, "assumed"));
    }

    #[test]
    fn loss_recovery_overrides_a_clean_reading() {
        let d = decide(&long_path(), Some(&test(400_000, 0, 1.0)), Override::Lossy, None);
        assert_eq!(d.class, PathClass::Lossy);
        assert!(d.loss_recovery);
        assert!(d.why_class.starts_with("--loss-recovery given; "), "{}", d.why_class);
        // And --clean-path overrides a lossy one.
        let d = decide(&long_path(), Some(&test(400_000, 44, 1.0)), Override::Clean, None);
        assert_eq!(d.class, PathClass::Clean);
        assert!(!d.loss_recovery);
        assert!(d.why_class.starts_with("--clean-path given; "), "{}", d.why_class);
        let d = decide(&long_path(), None, Override::Clean, None);
        assert_eq!((d.class, d.how_to_measure), (PathClass::Clean, None));
    }

    #[test]
    fn passive_loss_and_cached_ssthresh_are_evidence() {
        let flows = vec![LiveFlow {
            bytes_sent: 100 << 20,
            bytes_retrans: 10 << 10,
            ..LiveFlow::default()
        }];
        let ev = Evidence {
            passive: Some(Passive {
                flows,
                ..Passive::default()
            }),
            ..Evidence::default()
        };
        let d = decide(&long_path(), Some(&ev), Override::None, None);
        assert_eq!(d.class, PathClass::Lossy);
        assert!(
            d.why_class.contains("live flows to it retransmitted 0.0098 %"),
            "{}",
            d.why_class
        );

        let ev = Evidence {
            passive: Some(Passive {
                metrics: Some(DestMetrics {
                    ssthresh: Some(640),
                    ..DestMetrics::default()
                }),
                ..Passive::default()
            }),
            ..Evidence::default()
        };
        let d = decide(&long_path(), Some(&ev), Override::None, None);
        assert_eq!(d.class, PathClass::Lossy);
        assert!(
            d.why_class
                .contains("slow-start threshold of 640 segments (0.10 × BDP)"),
            "{}",
            d.why_class
        );
        // A threshold above half the BDP is not evidence of loss on this path.
        let ev = Evidence {
            passive: Some(Passive {
                metrics: Some(DestMetrics {
                    ssthresh: Some(6000),
                    ..DestMetrics::default()
                }),
                ..Passive::default()
            }),
            ..Evidence::default()
        };
        assert_eq!(
            decide(&long_path(), Some(&ev), Override::None, None).class,
            PathClass::Unmeasured
        );
    }

    #[test]
    fn the_window_share_prefers_this_hosts_own_reading() {
        let mut ev = test(400_000, 0, 1.0);
        if let Some(t) = ev.test.as_mut() {
            t.window_share = Some(0.35);
        }
        let d = decide(&long_path(), Some(&ev), Override::None, None);
        assert_eq!(
            (d.window_share, d.window_share_source.as_str()),
            (0.35, "the far end (path test)")
        );
        ev.passive = Some(Passive {
            flows: vec![LiveFlow {
                bytes_received: 1 << 20,
                rcv_wnd: Some(560),
                rcv_buf: Some(1000),
                ..LiveFlow::default()
            }],
            ..Passive::default()
        });
        let d = decide(&long_path(), Some(&ev), Override::None, None);
        // 0.56 would lower the maximum under the measured rules: a share only raises it.
        assert_eq!(
            (d.window_share, d.window_share_source.as_str()),
            (0.5, "this host's live flows")
        );
        assert!(d.why_share.ends_with("used as 50 %"), "{}", d.why_share);
        // Misreadings are kept within bounds.
        if let Some(t) = ev.test.as_mut() {
            t.window_share = Some(0.05);
        }
        ev.passive = None;
        let d = decide(&long_path(), Some(&ev), Override::None, None);
        assert_eq!(d.window_share, MIN_SHARE);
        assert!(d.why_share.ends_with("used as 25 %"), "{}", d.why_share);
    }

    #[test]
    fn cubic_response_function() {
        // RFC 9438: at 150 ms and 0.001 % loss CUBIC averages about 1430 segments (110 Mbit/s
        // of 1448-byte segments), at 0.0001 % about 8000.
        let w = cubic_window_segments(0.15, 1e-5);
        assert!((w - 1427.0).abs() < 5.0, "{w}");
        assert!(cubic_window_segments(0.15, 1e-6) > 8000.0);
        // At short RTTs the Reno-friendly region dominates: 1.0 % loss at 1 ms.
        let w = cubic_window_segments(0.001, 0.01);
        assert!((w - (3.0_f64 * 1.7 / (2.0 * 0.3 * 0.01)).sqrt()).abs() < 1e-9, "{w}");
        assert!(cubic_window_segments(0.15, 0.0).is_infinite());
    }

    #[test]
    fn notsent_lowat_is_ten_ms_of_the_rate_within_bounds() {
        assert_eq!(notsent_lowat(500e6), 625_000);
        assert_eq!(notsent_lowat(10e6), NOTSENT_LOWAT_MIN);
        assert_eq!(notsent_lowat(100e9), NOTSENT_LOWAT_MAX);
    }
}
