//! The advice: a path (given, or measured to hosts) turned into sysctl settings for an OS,
//! with the running values beside each recommendation and the warnings and notes that go
//! with it. No clap types and no printing: [`advise`] takes an [`AdviceRequest`] and the
//! facts of the [`System`] advised for; the renderers are [`crate::output::advice`]'s.
//!
//! - [`path`]: which RTT and rate the advice is for (given, measured, or assumed).
//! - [`warnings`]: memory budget, lost probes, BBR's ProbeRTT on long paths.

pub mod decide;
pub mod evidence;
pub mod path;
pub mod warnings;

use std::collections::BTreeMap;

use serde::Serialize;

use crate::bdp::{self, Sizing, Source};
use crate::error::Error;
use crate::measure::evidence::Evidence;
use crate::measure::{EvidenceRequest, HostMeasurement, PathProber, ProbeOptions, TestMode};
use crate::os::Os;
use crate::profile::{Action, Profile, Setting, Stage};
use crate::sysctl::{KeyState, SysctlBackend};
use crate::text;
use crate::units::{Bitrate, Span};

pub use path::ASSUMED_RATE_BPS;

/// What to advise for: the path (given, or measured to `hosts`), the rules, and the options
/// of the sizing. `advise`, `apply` and `check --host` each build one.
#[derive(Debug, Clone)]
pub struct AdviceRequest {
    /// Hosts to measure the path to; empty when `rtt` and `bandwidth` are both given.
    pub hosts: Vec<String>,
    /// The path's RTT, instead of measuring it.
    pub rtt: Option<Span>,
    /// The path's rate, instead of measuring it (no packet trains are sent then).
    pub bandwidth: Option<Bitrate>,
    /// A shipped profile name or a TOML file; None: the OS's shipped profile.
    pub profile: Option<String>,
    /// How to probe the hosts. `capacity` asks for packet trains; they are sent only when
    /// `bandwidth` is not given.
    pub probe: ProbeOptions,
    /// Also recommend values lower than the running ones.
    pub allow_lower: bool,
    /// Size for a path with random loss (BBR, 5 x BDP) whatever the evidence says.
    pub loss_recovery: bool,
    /// Size for a clean path with a deep queue (CUBIC, 2 x BDP) whatever the evidence says.
    pub clean_path: bool,
    /// Concurrent bulk flows expected, for the memory check.
    pub flows: u32,
    /// The TCP path test to the measured host (its `cc` and `buffer` are chosen here).
    pub test: EvidenceRequest,
}

/// The path test's defaults: against `tcptune serve` on its default port, at most 10 s or
/// 2 GiB.
pub fn default_test() -> EvidenceRequest {
    EvidenceRequest {
        mode: TestMode::Tcptune,
        port: None,
        time: crate::measure::pathtest::DEFAULT_TIME,
        max_bytes: crate::measure::pathtest::DEFAULT_MAX_BYTES,
        buffer: 0,
        cc: None,
    }
}

impl AdviceRequest {
    /// Advice for the path to `hosts`, measured with the default probes, for one flow.
    pub fn for_hosts(hosts: Vec<String>) -> Self {
        Self {
            hosts,
            rtt: None,
            bandwidth: None,
            profile: None,
            probe: ProbeOptions::default(),
            allow_lower: false,
            loss_recovery: false,
            clean_path: false,
            flows: 1,
            test: default_test(),
        }
    }
}

/// The system the advice is for: its OS, its running values (None when advising for another
/// system), and whether it is this very machine (memory checks use its RAM, the qdisc check
/// its modules).
#[derive(Clone, Copy)]
pub struct System<'a> {
    pub os: Os,
    pub backend: Option<&'a dyn SysctlBackend>,
    pub local: bool,
}

/// The path the advice is for.
#[derive(Debug, Clone)]
pub struct Path {
    pub rtt: Span,
    pub rtt_source: Source,
    pub mdev: Option<Span>,
    pub rate: Bitrate,
    pub rate_source: Source,
    pub mtu: Option<u32>,
    /// The host whose path this is, when measured.
    pub host: Option<String>,
}

#[derive(Debug, Serialize)]
pub struct HostReport {
    pub host: String,
    pub rtt_ms: f64,
    pub bandwidth_bps: u64,
    pub bandwidth_source: Source,
    pub bdp_bytes: serde_json::Value,
    pub measurement: HostMeasurement,
}

#[derive(Debug, Serialize)]
pub struct Advice {
    pub tcptune_version: &'static str,
    pub generated: String,
    pub os: Os,
    pub profile: String,
    pub host: Option<String>,
    pub rtt_ms: f64,
    pub rtt_source: Source,
    pub bandwidth_bps: u64,
    pub bandwidth_source: Source,
    /// Exactly bandwidth_bps / 8 × rtt_ms / 1000.
    pub bdp_bytes: serde_json::Value,
    pub sizing: Sizing,
    /// Where the running values were read from; null when advising for another system.
    pub current_from: Option<String>,
    pub settings: Vec<Setting>,
    pub changes: usize,
    pub warnings: Vec<String>,
    pub notes: Vec<String>,
    pub hosts: Vec<HostReport>,
    /// The TCP evidence about the path advised for (null when the path was given).
    pub evidence: Option<Evidence>,
    /// What the evidence decided, and why.
    pub decision: decide::Decision,
    /// What common transfer tools can reach on this path with their own windows.
    pub app_ceilings: Vec<crate::ceilings::AppCeiling>,
}

impl Advice {
    /// The keys the advice sets at runtime, whether or not this machine runs their value
    /// already: what a configuration file (a sysctl.d drop-in, a playbook, a profile) holds.
    pub fn kept_keys(&self) -> Vec<&str> {
        self.settings
            .iter()
            .filter(|s| s.stage == Stage::Runtime && matches!(s.action, Action::Set | Action::Keep))
            .map(|s| s.key.as_str())
            .collect()
    }
}

/// Compute the advice for `req` on `sys`. The prober is a seam: tests (and the hidden
/// `--fake-prober` flag) pass a fake.
pub fn advise(req: &AdviceRequest, sys: &System<'_>, prober: &dyn PathProber) -> anyhow::Result<Advice> {
    let a = req;
    let profile = match &a.profile {
        Some(p) => Profile::load(p)?,
        None => Profile::for_os(sys.os),
    };
    if profile.os != sys.os {
        return Err(Error::usage(format!(
            "profile {} is for {}, but advice is for {} (use --os {})",
            profile.name, profile.os, sys.os, profile.os
        ))
        .into());
    }
    let (mut path, hosts, mut notes) = path::resolve(a, prober)?;
    bdp::check_path(path.rate, path.rtt).map_err(Error::usage)?;
    let backend = sys.backend;
    let read = |k: &str| backend.map(|b| b.read(k));
    let avail = read("net.ipv4.tcp_available_congestion_control").and_then(|k| k.value().map(str::to_string));
    let offers = |cc: &str| avail.as_deref().map(|v| crate::sysctl::offers(v, cc));
    // Unknown (advising for another system): assumed, as every distribution kernel ships it.
    let cc_bbr = offers("bbr").unwrap_or(true);

    // The TCP evidence about the measured path the advice is for, and the rate it confirms.
    let measured = hosts.iter().find(|h| path.host.as_deref() == Some(h.host.as_str()));
    let evidence = match measured {
        Some(h) => {
            let req = EvidenceRequest {
                buffer: evidence::test_buffer(&path, &h.measurement),
                cc: cc_bbr.then(|| "bbr".to_string()),
                ..a.test.clone()
            };
            Some(prober.evidence(&h.measurement, &req, &a.probe)?)
        }
        None => None,
    };
    if let Some(h) = measured
        && a.bandwidth.is_none()
    {
        notes.extend(evidence::settle_rate(&mut path, &h.measurement, evidence.as_ref()));
    }
    bdp::check_path(path.rate, path.rtt).map_err(Error::usage)?;
    let mss = path.mtu.unwrap_or(1500).saturating_sub(52).max(536);
    #[allow(clippy::cast_precision_loss)]
    let decision = decide::decide(
        &decide::PathFacts {
            rate_bps: path.rate.bps() as f64,
            rtt_ms: path.rtt.as_millis_f64(),
            mss,
            linux: sys.os == Os::Linux,
        },
        evidence.as_ref(),
        decide::Override::from_flags(a.loss_recovery, a.clean_path),
        path.host.as_deref(),
    );
    notes.extend(evidence::notes(evidence.as_ref(), &decision));
    let sizing = if decision.loss_recovery {
        bdp::size_for_loss(path.rate, path.rtt, path.mdev)
    } else {
        bdp::size_buffers(path.rate, path.rtt, path.mdev)
    };
    let sizing = bdp::for_window_share(sizing, decision.window_share);

    let mut warnings = Vec::new();
    let mut needs_raise = false;
    let fact_value = |f: &str| match f {
        "send_buffer" => sizing.send_buffer,
        _ => sizing.buffer,
    };
    for (cap, fact) in &profile.caps {
        let have = match read(cap) {
            Some(KeyState::Present { value, .. }) => Some(value),
            Some(_) => None,
            None => profile.stock.get(cap).cloned(),
        };
        let max = have
            .as_deref()
            .and_then(crate::profile::numeric_fields)
            .and_then(|f| f.last().copied());
        #[allow(clippy::cast_precision_loss)]
        if max.is_none_or(|m| m < fact_value(fact) as f64) {
            needs_raise = true;
        }
    }
    if !needs_raise {
        notes.push(format!(
            "the running buffer maxima ({}) already cover this path (receive {}, send {}): no buffer change needed",
            profile.caps.keys().cloned().collect::<Vec<_>>().join(", "),
            text::bytes(sizing.buffer),
            text::bytes(sizing.send_buffer)
        ));
    }
    if sizing.clamped {
        warnings.push(
            "the path needs more buffer than Linux accepts (2^31 - 1 bytes); one flow cannot fill it: use parallel streams"
                .to_string(),
        );
    }
    // cubic is built into every distribution kernel: assumed where the list is unknown.
    let cc_cubic = offers("cubic").unwrap_or(true);
    let qdisc_fq = sys.local
        && sys.os == Os::Linux
        && crate::host::linux::has_module(std::path::Path::new(crate::host::linux::SYS_MODULE), "sch_fq");
    warnings::memory(sys, a.flows, &sizing, &read, &mut warnings);

    let mut facts: BTreeMap<String, f64> = BTreeMap::new();
    #[allow(clippy::cast_precision_loss)]
    for (k, v) in [
        ("bdp", sizing.bdp as f64),
        ("buffer", sizing.buffer as f64),
        ("send_buffer", sizing.send_buffer as f64),
        ("headroom_pct", (sizing.headroom_pct * 10.0).round() / 10.0),
        ("rate_bps", path.rate.bps() as f64),
        ("rtt_ms", path.rtt.as_millis_f64()),
        ("sizing_rtt_ms", sizing.sizing_rtt_ms),
        ("mtu", f64::from(path.mtu.unwrap_or(0))),
        ("flows", f64::from(a.flows)),
        ("needs_raise", f64::from(u8::from(needs_raise))),
        ("loss_recovery", f64::from(u8::from(sizing.loss_recovery))),
        ("cc_bbr", f64::from(u8::from(cc_bbr))),
        ("cc_cubic", f64::from(u8::from(cc_cubic))),
        ("cc_htcp", 1.0),
        ("qdisc_fq", f64::from(u8::from(qdisc_fq))),
        #[allow(clippy::cast_precision_loss)]
        ("notsent_lowat", decision.notsent_lowat as f64),
        ("window_share", sizing.window_share),
        (
            "class_measured",
            f64::from(u8::from(decision.class != decide::PathClass::Unmeasured)),
        ),
    ] {
        facts.insert(k.to_string(), v);
    }
    let mut settings = profile.render(&facts, &read, a.allow_lower)?;
    evidence::explain(&mut settings, &profile, &decision);
    // A child network namespace may not choose every algorithm the kernel offers; the
    // advice says so rather than leave `apply` to refuse it.
    if let Some(b) = backend.filter(|_| sys.local && sys.os == Os::Linux) {
        for s in &mut settings {
            if s.key == "net.ipv4.tcp_congestion_control"
                && s.action == Action::Set
                && let Some(why) = crate::host::linux::cc_refused_here(b, &s.value)
            {
                s.action = Action::Unavailable(why);
            }
        }
    }
    if !sizing.loss_recovery {
        warnings.extend(hosts.iter().filter_map(warnings::probe_loss));
    }
    let cc = settings
        .iter()
        .find(|s| s.key == "net.ipv4.tcp_congestion_control" && s.action == Action::Set)
        .map(|s| s.value.clone())
        .or_else(|| read("net.ipv4.tcp_congestion_control").and_then(|k| k.value().map(str::to_string)));
    if let Some(note) = warnings::probe_rtt_note(cc.as_deref(), path.rtt.as_millis_f64()) {
        notes.push(note);
    }
    let changes = settings
        .iter()
        .filter(|s| s.action == Action::Set && s.stage == Stage::Runtime)
        .count();
    let app_ceilings = crate::ceilings::ceilings(path.rtt, path.rate.bps());
    notes.extend(
        app_ceilings
            .iter()
            .filter_map(|c| crate::ceilings::note(c, path.rate.bps())),
    );
    Ok(Advice {
        tcptune_version: env!("CARGO_PKG_VERSION"),
        generated: humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string(),
        os: sys.os,
        profile: profile.name.clone(),
        host: path.host.clone(),
        rtt_ms: text::ms(path.rtt.as_millis_f64()),
        rtt_source: path.rtt_source,
        bandwidth_bps: path.rate.bps(),
        bandwidth_source: path.rate_source,
        bdp_bytes: text::number(bdp::bdp_exact(path.rate, path.rtt)),
        sizing,
        current_from: backend.map(crate::sysctl::SysctlBackend::describe),
        settings,
        changes,
        warnings,
        notes,
        hosts,
        evidence,
        decision,
        app_ceilings,
    })
}

#[cfg(test)]
mod tests {
    use super::path::measured_rate;
    use super::warnings::{probe_loss as probe_loss_warning, probe_rtt_note};
    use super::*;
    use crate::measure::fake::FakeProber;

    /// Advice for Linux, no running values, not this machine.
    fn ctx() -> System<'static> {
        System {
            os: Os::Linux,
            backend: None,
            local: false,
        }
    }

    fn args(hosts: &[&str], bandwidth: Option<&str>) -> AdviceRequest {
        AdviceRequest {
            bandwidth: bandwidth.map(|b| b.parse().expect("a rate")),
            ..AdviceRequest::for_hosts(hosts.iter().map(|h| (*h).to_string()).collect())
        }
    }

    #[test]
    fn measured_rtt_and_link_speed_feed_the_model() {
        // A path test that saw a clean path with a deep queue: the loss-free sizing.
        let p = FakeProber {
            rtt_ms: 150.0,
            speed_bps: Some(500_000_000),
            capacity_bps: Some(500_000_000),
            test: Some(crate::measure::fake::FakeTest::clean()),
        };
        let a = advise(&args(&["peer.example"], None), &ctx(), &p).expect("advice");
        assert_eq!(a.rtt_source, Source::Measured);
        assert_eq!(a.bandwidth_source, Source::Measured);
        assert_eq!(a.bdp_bytes, serde_json::json!(9_375_000));
        assert_eq!(a.decision.class, decide::PathClass::Clean);
        assert_eq!(a.sizing.buffer, 20_643_840);
        assert_eq!(a.hosts.len(), 1);
        // No peer answers: not measured, sized for loss recovery.
        let a = advise(&args(&["peer.example"], None), &ctx(), &FakeProber { test: None, ..p }).expect("advice");
        assert_eq!(a.decision.class, decide::PathClass::Unmeasured);
        assert_eq!(a.sizing.buffer, 46_923_776);
        assert!(
            a.notes
                .iter()
                .any(|n| n.starts_with("no TCP path test: no tcptune serve on 198.18.0.1")),
            "{:?}",
            a.notes
        );
    }

    #[test]
    fn the_path_test_decides_the_class_and_the_window_share() {
        fn setting<'a>(a: &'a Advice, key: &str) -> &'a Setting {
            a.settings.iter().find(|s| s.key == key).expect(key)
        }
        let p = |spec: &str| FakeProber::from_spec(spec).expect("spec");
        let a = advise(&args(&["h"], None), &ctx(), &p("rtt=150ms,rate=500mbit,loss=0.01")).expect("advice");
        assert_eq!(a.decision.class, decide::PathClass::Lossy);
        assert!(a.sizing.loss_recovery);
        let cc = setting(&a, "net.ipv4.tcp_congestion_control");
        assert_eq!(cc.value, "bbr");
        assert!(
            cc.reason
                .contains("evidence: 0.010 % retransmitted after startup (100 of 1000000 segments)"),
            "{}",
            cc.reason
        );
        let a = advise(&args(&["h"], None), &ctx(), &p("rtt=150ms,rate=500mbit,queue=0.1")).expect("advice");
        assert_eq!(a.decision.class, decide::PathClass::Shallow);
        let cc = setting(&a, "net.ipv4.tcp_congestion_control");
        assert_eq!(cc.value, "bbr");
        // Clean and deep, with a receiver that advertises 35 % of its buffer: CUBIC, and the
        // receive buffer grows by 0.5 / 0.35 over the 2 × sizing.
        let a = advise(&args(&["h"], None), &ctx(), &p("rtt=150ms,rate=500mbit,share=0.35")).expect("advice");
        assert_eq!(a.decision.class, decide::PathClass::Clean);
        let cc = setting(&a, "net.ipv4.tcp_congestion_control");
        assert_eq!(cc.value, "cubic");
        assert_eq!(a.sizing.window_share, 0.35);
        // 20,643,840 × 0.5 / 0.35 = 29,491,200 exactly, a whole number of 64 KiB steps.
        assert_eq!(a.sizing.buffer, 29_491_200);
        let rmem = setting(&a, "net.ipv4.tcp_rmem");
        assert!(
            rmem.reason.contains("window share: the far end advertised 35 %"),
            "{}",
            rmem.reason
        );
    }

    #[test]
    fn lost_probes_point_to_loss_recovery() {
        let p = FakeProber {
            rtt_ms: 150.0,
            speed_bps: Some(500_000_000),
            capacity_bps: None,
            test: None,
        };
        let mut a = advise(&args(&["198.18.0.2"], None), &ctx(), &p).expect("advice");
        let h = &mut a.hosts[0];
        assert_eq!(probe_loss_warning(h), None);
        let r = &h.measurement.rtt;
        h.measurement.rtt = crate::measure::RttStats::compute(r.method.clone(), r.sent + 2, r.samples_ms.clone());
        let w = probe_loss_warning(h).expect("a warning");
        assert!(
            w.starts_with("198.18.0.2: 2 of 12 probes were lost (16.7 %)") && w.contains("--loss-recovery"),
            "{w}"
        );
        // No answer at all is an unreachable host, not a lossy path.
        h.measurement.rtt = crate::measure::RttStats::compute(crate::measure::Method::Icmp, 10, Vec::new());
        assert_eq!(probe_loss_warning(h), None);
    }

    #[test]
    fn unknown_speed_is_assumed_and_marked_and_bandwidth_wins() {
        let p = FakeProber {
            rtt_ms: 50.0,
            speed_bps: None,
            capacity_bps: None,
            test: None,
        };
        let a = advise(&args(&["198.18.0.9"], None), &ctx(), &p).expect("advice");
        assert_eq!(a.bandwidth_source, Source::Assumed);
        assert_eq!(a.bandwidth_bps, ASSUMED_RATE_BPS);
        assert!(
            a.notes
                .iter()
                .any(|n| n.contains("ASSUMED") && n.contains("--bandwidth")),
            "{:?}",
            a.notes
        );
        let a = advise(&args(&["198.18.0.9"], Some("100mbit")), &ctx(), &p).expect("advice");
        assert_eq!(a.bandwidth_source, Source::Given);
        assert_eq!(a.bandwidth_bps, 100_000_000);
    }

    #[test]
    fn packet_trains_give_the_rate_capped_by_the_link() {
        // A TUN or virtio link (no speed) behind a 50 Mbit/s bottleneck, and a TCP test that
        // confirms the trains.
        let p = FakeProber {
            rtt_ms: 40.0,
            speed_bps: None,
            capacity_bps: Some(50_000_000),
            test: Some(crate::measure::fake::FakeTest::clean()),
        };
        let a = advise(&args(&["198.18.0.2"], None), &ctx(), &p).expect("advice");
        assert_eq!((a.bandwidth_bps, a.bandwidth_source), (50_000_000, Source::Measured));
        assert_eq!(a.bdp_bytes, serde_json::json!(250_000));
        assert_eq!(
            a.notes[0],
            "198.18.0.2: bottleneck rate from packet trains: 50 Mbit/s (5 of 5 trains of 48 x 1500 bytes agree within 10 %)"
        );
        assert_eq!(
            a.notes[1],
            "198.18.0.2: rate from the TCP path test: 50 Mbit/s delivery rate after startup; the packet trains read 50 Mbit/s; sized for that"
        );
        let json = serde_json::to_value(&a).expect("json");
        assert_eq!(json["hosts"][0]["measurement"]["capacity"]["bps"], 50_000_000);

        // No TCP test: the trains' reading sizes nothing (bursty forwarding fools them both
        // ways); the assumed rate does, and the note says why.
        let a = advise(
            &args(&["198.18.0.2"], None),
            &ctx(),
            &FakeProber {
                test: None,
                ..p.clone()
            },
        )
        .expect("advice");
        assert_eq!((a.bandwidth_bps, a.bandwidth_source), (1_000_000_000, Source::Assumed));
        assert!(
            a.notes[1]
                .starts_with("198.18.0.2: no TCP test confirmed the packet trains' 50 Mbit/s (they read 50 Mbit/s)")
                && a.notes[1].contains("sized for the ASSUMED 1 Gbit/s"),
            "{:?}",
            a.notes
        );
        // The TCP test's rate wins over trains that read 7 × too high.
        let a = advise(
            &args(&["198.18.0.2"], None),
            &ctx(),
            &FakeProber {
                capacity_bps: Some(7_000_000_000),
                test: Some(crate::measure::fake::FakeTest {
                    rate_bps: Some(1_000_000_000),
                    ..crate::measure::fake::FakeTest::clean()
                }),
                ..p.clone()
            },
        )
        .expect("advice");
        assert_eq!((a.bandwidth_bps, a.bandwidth_source), (1_000_000_000, Source::Measured));

        // A 100 Mbit/s NIC is slower than what the trains saw (a fast burst on a shared link):
        // the link wins, and the note says so.
        let p = FakeProber {
            speed_bps: Some(100_000_000),
            capacity_bps: Some(300_000_000),
            ..p
        };
        let a = advise(&args(&["198.18.0.2"], None), &ctx(), &p).expect("advice");
        assert_eq!((a.bandwidth_bps, a.bandwidth_source), (100_000_000, Source::Measured));
        assert!(
            a.notes[0].ends_with("the link speed of fake0, 100 Mbit/s, is lower: used that"),
            "{:?}",
            a.notes
        );

        // --bandwidth: no trains at all.
        let a = advise(&args(&["198.18.0.2"], Some("20mbit")), &ctx(), &p).expect("advice");
        assert_eq!((a.bandwidth_bps, a.bandwidth_source), (20_000_000, Source::Given));
        assert!(a.hosts[0].measurement.capacity.is_none());
        assert!(!a.notes.iter().any(|n| n.contains("trains")), "{:?}", a.notes);

        // --no-capacity: the link speed, as before.
        let mut no = args(&["198.18.0.2"], None);
        no.probe.capacity = false;
        let a = advise(&no, &ctx(), &p).expect("advice");
        assert_eq!((a.bandwidth_bps, a.bandwidth_source), (100_000_000, Source::Measured));
        assert_eq!(a.notes[0], "198.18.0.2: rate from the link speed of fake0: 100 Mbit/s");
    }

    /// A fake host at 10 ms whose packet trains read `bps` and whose link speed is unknown.
    fn measured_with_trains(bps: u64) -> HostMeasurement {
        FakeProber {
            rtt_ms: 10.0,
            speed_bps: None,
            capacity_bps: Some(bps),
            test: None,
        }
        .measure(&["h".to_string()], &ProbeOptions::default())
        .expect("fake")
        .remove(0)
    }

    #[test]
    fn sender_limited_trains_are_a_lower_bound() {
        let mut m = measured_with_trains(3_000_000_000);
        if let Some(c) = m.capacity.as_mut() {
            c.sender_limited = true;
        }
        let (rate, source, note) = measured_rate(&m);
        assert_eq!((rate.bps(), source), (3_000_000_000, Source::Measured));
        assert!(
            note.contains("at least 3 Gbit/s") && note.contains("--bandwidth"),
            "{note}"
        );
        // A known link speed above the bound is the better number.
        m.link.speed_bps = Some(10_000_000_000);
        let (rate, _, note) = measured_rate(&m);
        assert_eq!(rate.bps(), 10_000_000_000);
        assert!(note.ends_with("used the link speed of fake0, 10 Gbit/s"), "{note}");
    }

    #[test]
    fn disagreeing_trains_are_said_to_disagree() {
        let mut m = measured_with_trains(500_000_000);
        let (_, _, note) = measured_rate(&m);
        assert!(!note.contains("disagree"), "{note}");
        if let Some(c) = m.capacity.as_mut() {
            c.samples_bps = vec![500_000_000, 2_600_000_000, 800_000_000, 497_000_000, 1_700_000_000];
            c.agreeing = 2;
            c.agreed = false;
        }
        let (rate, _, note) = measured_rate(&m);
        assert_eq!(rate.bps(), 500_000_000);
        assert!(
            note.contains("2 of 5 trains") && note.contains("disagree (rates 497 Mbit/s to 2.6 Gbit/s)"),
            "{note}"
        );
    }

    #[test]
    fn bbr_on_long_paths_gets_a_probe_rtt_note() {
        let note = probe_rtt_note(Some("bbr"), 600.0).expect("note");
        assert!(
            note.contains("at 600 ms") && note.contains("about 800 ms every 10 s (about 8 %"),
            "{note}"
        );
        assert_eq!(
            probe_rtt_note(Some("bbr"), 150.0),
            None,
            "about 3.5 %: not worth a note"
        );
        assert_eq!(probe_rtt_note(Some("cubic"), 600.0), None);
        assert_eq!(probe_rtt_note(None, 600.0), None);
    }

    #[test]
    fn several_hosts_each_reported() {
        let p = FakeProber {
            rtt_ms: 20.0,
            speed_bps: Some(1_000_000_000),
            capacity_bps: Some(1_000_000_000),
            test: None,
        };
        let a = advise(&args(&["198.18.0.9", "198.18.0.10"], None), &ctx(), &p).expect("advice");
        assert_eq!(a.hosts.len(), 2);
        assert_eq!(a.hosts[1].host, "198.18.0.10");
    }

    #[test]
    fn unreachable_and_unresolvable_hosts_are_measurement_errors() {
        let p = FakeProber {
            rtt_ms: f64::NAN,
            speed_bps: None,
            capacity_bps: None,
            test: None,
        };
        let e = advise(&args(&["198.18.0.9"], None), &ctx(), &p).expect_err("unreachable");
        let e = e.downcast_ref::<Error>().expect("typed");
        assert_eq!(e.exit_code(), 4);
        let p = FakeProber {
            rtt_ms: 10.0,
            speed_bps: None,
            capacity_bps: None,
            test: None,
        };
        let e = advise(&args(&["nonexistent.invalid"], None), &ctx(), &p).expect_err("unresolvable");
        assert_eq!(e.downcast_ref::<Error>().expect("typed").exit_code(), 4);
    }
}
