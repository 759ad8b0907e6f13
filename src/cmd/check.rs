//! `tcptune check`: is this host healthy for bulk TCP? One finding per thing engineers look at —
//! window scaling, SACK, timestamps, congestion control and pacing, MTU probing and MTU, NIC
//! offloads, duplex, retransmissions, TCP memory, conflicting configuration — each with a verdict
//! (ok, warn, fail) and, when not ok, a fix. With `--host`, also whether the running buffer maxima
//! cover that path (sized by the same rule as `advise`).
//!
//! # Platform specific behavior
//! * Linux: sysctls through the backend; on the machine itself also sysfs, SIOCETHTOOL,
//!   rtnetlink (qdiscs), /proc/net/{snmp,sockstat,route,ipv6_route}, sysctl.d files, /proc/*/comm.
//! * FreeBSD/macOS: the sysctl equivalents (net.inet.tcp.rfc1323, sack.enable / sack,
//!   cc.algorithm, autotuning switches and maxima) through sysctl(8).

use std::io::Write;
use std::process::ExitCode;

use serde::Serialize;

use crate::Context;
use crate::bdp;
use crate::cli::{AdviseArgs, CheckArgs, Format};
use crate::cmd::advise::{Advice, Source};
use crate::diag::hostinfo::{self, TcpCounters};
use crate::error::{Error, exit};
use crate::measure::PathProber;
use crate::output;
use crate::platform::{KeyState, Os};
use crate::profile::Profile;
use crate::units::{Bitrate, Bytes, Duration};

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    Ok,
    Warn,
    Fail,
}

impl Status {
    fn as_str(self) -> &'static str {
        match self {
            Self::Ok => "ok",
            Self::Warn => "warn",
            Self::Fail => "fail",
        }
    }
}

/// One line of the diagnosis.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Finding {
    /// Stable identifier: `sack`, `offload:eth0`, `sysctl-files:net.ipv4.tcp_rmem`.
    pub id: String,
    pub status: Status,
    pub message: String,
    /// What to do; null when ok.
    pub fix: Option<String>,
}

impl Finding {
    fn ok(id: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            id: id.into(),
            status: Status::Ok,
            message: message.into(),
            fix: None,
        }
    }
    fn warn(id: impl Into<String>, message: impl Into<String>, fix: impl Into<String>) -> Self {
        Self {
            id: id.into(),
            status: Status::Warn,
            message: message.into(),
            fix: Some(fix.into()),
        }
    }
    fn fail(id: impl Into<String>, message: impl Into<String>, fix: impl Into<String>) -> Self {
        Self {
            id: id.into(),
            status: Status::Fail,
            message: message.into(),
            fix: Some(fix.into()),
        }
    }
}

#[derive(Debug, Serialize)]
pub struct Summary {
    pub ok: usize,
    pub warn: usize,
    pub fail: usize,
}

#[derive(Debug, Serialize)]
pub struct Report {
    pub os: Os,
    /// Where the sysctl values were read.
    pub current_from: String,
    pub host: Option<String>,
    pub findings: Vec<Finding>,
    pub summary: Summary,
}

pub fn run(a: &CheckArgs, ctx: &Context, out: &mut dyn Write) -> anyhow::Result<ExitCode> {
    let format = ctx.report_format("check")?;
    let report = check(a, ctx, &crate::measure::SystemProber)?;
    match format {
        Format::Json => output::json(out, &report)?,
        _ => write_table(out, &report, ctx)?,
    }
    Ok(if report.summary.warn + report.summary.fail > 0 {
        ExitCode::from(exit::CHECK_FOUND_PROBLEMS)
    } else {
        ExitCode::SUCCESS
    })
}

/// The running value of a key, when present.
type Read<'a> = dyn Fn(&str) -> Option<String> + 'a;

/// The diagnosis. The prober is a seam for `--host` (tests pass a fake).
pub fn check(a: &CheckArgs, ctx: &Context, prober: &dyn PathProber) -> anyhow::Result<Report> {
    let Some(backend) = ctx.backend.as_deref() else {
        return Err(Error::usage(format!(
            "check reads the running values of {}: run it there (or give --sysctl-dir / --sysctl-cmd)",
            ctx.os
        ))
        .into());
    };
    let read = |k: &str| match backend.read(k) {
        KeyState::Present { value, .. } => Some(value),
        _ => None,
    };
    let advice = match &a.host {
        Some(h) => Some(crate::cmd::advise::advise(&advise_args(h, a), ctx, prober)?),
        None => None,
    };
    let rtt_ms = advice.as_ref().map(|x| x.rtt_ms);
    let mut f = Vec::new();
    match ctx.os {
        Os::Linux => linux_sysctls(&read, rtt_ms, &mut f),
        Os::Freebsd | Os::Macos => bsd_sysctls(ctx.os, &read, rtt_ms, &mut f),
    }
    if let Some(adv) = &advice {
        buffers(ctx.os, &read, adv, &mut f);
    }
    #[cfg(target_os = "linux")]
    if ctx.local && ctx.os == Os::Linux {
        local::findings(a, &read, advice.as_ref(), &mut f);
    }
    let count = |s: Status| f.iter().filter(|x| x.status == s).count();
    let summary = Summary {
        ok: count(Status::Ok),
        warn: count(Status::Warn),
        fail: count(Status::Fail),
    };
    Ok(Report {
        os: ctx.os,
        current_from: backend.describe(),
        host: a.host.clone(),
        findings: f,
        summary,
    })
}

fn advise_args(host: &str, a: &CheckArgs) -> AdviseArgs {
    AdviseArgs {
        host: vec![host.to_string()],
        rtt: None,
        bandwidth: a.bandwidth,
        profile: None,
        probes: 10,
        port: Vec::new(),
        ipv4: false,
        ipv6: false,
        interval: Duration::from_millis_f64(20.0),
        timeout: Duration::from_millis_f64(1000.0),
        allow_lower: false,
        loss_recovery: false,
        flows: a.flows,
        no_capacity: false,
    }
}

/// "at most 5.243 Mbit/s at 100 ms RTT" for a window in bytes.
fn ceiling(window: u64, rtt_ms: Option<f64>) -> String {
    let rtt = rtt_ms.filter(|r| *r > 0.0).unwrap_or(100.0);
    let bps = bdp::max_throughput_bps(Bytes::new(window), Duration::from_millis_f64(rtt));
    format!("at most {} at {} ms RTT", output::rate(bps), output::ms(rtt))
}

fn persist(os: Os) -> &'static str {
    match os {
        Os::Linux => "persist it in /etc/sysctl.d/",
        Os::Freebsd | Os::Macos => "persist it in /etc/sysctl.conf",
    }
}

fn set_cmd(os: Os, key: &str, value: &str) -> String {
    let quoted = if value.contains(' ') {
        format!("\"{value}\"")
    } else {
        value.to_string()
    };
    match os {
        Os::Linux => format!("sysctl -w {key}={quoted}; {}", persist(os)),
        Os::Freebsd | Os::Macos => format!("sysctl {key}={quoted}; {}", persist(os)),
    }
}

// ---------------------------------------------------------------- Linux sysctls

/// Congestion controls that suit bulk transfer over long paths.
const GOOD_CC: &[&str] = &["bbr", "bbr2", "bbr3", "cubic", "htcp", "bic", "illinois", "dctcp"];

fn linux_sysctls(read: &Read<'_>, rtt_ms: Option<f64>, f: &mut Vec<Finding>) {
    let os = Os::Linux;
    match read("net.ipv4.tcp_window_scaling").as_deref() {
        Some("0") => f.push(Finding::fail(
            "window-scaling",
            format!(
                "window scaling (RFC 7323) is off: the window stops at 64 KiB, {} — whatever the buffers",
                ceiling(65_535, rtt_ms)
            ),
            format!(
                "{} (new connections only)",
                set_cmd(os, "net.ipv4.tcp_window_scaling", "1")
            ),
        )),
        Some(_) => f.push(Finding::ok(
            "window-scaling",
            "window scaling is on: windows can grow past 64 KiB",
        )),
        None => {}
    }
    // Features that are on by default and only ever off by someone's choice: warn with the fix.
    let features: [(&str, &str, &str, &str); 2] = [
        (
            "net.ipv4.tcp_sack",
            "sack",
            "selective acknowledgements (SACK) are off: after several losses in one window the sender repairs one hole per round trip, which on a long path stalls the flow",
            "SACK is on",
        ),
        (
            "net.ipv4.tcp_timestamps",
            "timestamps",
            "TCP timestamps are off: fewer RTT samples, and no protection against wrapped sequence numbers (PAWS), which a fast path wraps in seconds",
            "TCP timestamps are on",
        ),
    ];
    for (key, id, off, on) in features {
        match read(key).as_deref() {
            Some("0") => f.push(Finding::warn(id, off, set_cmd(os, key, "1"))),
            Some(_) => f.push(Finding::ok(id, on)),
            None => {}
        }
    }
    if let Some(cc) = read("net.ipv4.tcp_congestion_control") {
        let avail = read("net.ipv4.tcp_available_congestion_control").unwrap_or_default();
        let has_bbr = avail.split(' ').any(|c| c == "bbr");
        let listed = if avail.is_empty() {
            "unknown".to_string()
        } else {
            avail.clone()
        };
        if GOOD_CC.contains(&cc.as_str()) {
            let hint = if cc == "bbr" {
                String::new()
            } else if has_bbr {
                "; bbr is available and copes better with random loss on long paths".to_string()
            } else {
                "; bbr is not loaded (modprobe tcp_bbr)".to_string()
            };
            f.push(Finding::ok(
                "congestion-control",
                format!("{cc} in use (available: {listed}){hint}"),
            ));
        } else {
            let to = if has_bbr { "bbr" } else { "cubic" };
            f.push(Finding::warn(
                "congestion-control",
                format!("{cc} in use (available: {listed}): it halves the window on every loss and regrows it by one segment per round trip, hopeless on a long fat path"),
                set_cmd(os, "net.ipv4.tcp_congestion_control", to),
            ));
        }
    }
    match read("net.ipv4.tcp_mtu_probing").as_deref() {
        Some("0") => f.push(Finding::warn(
            "mtu-probing",
            "tcp_mtu_probing is 0: if a firewall drops the ICMP \"fragmentation needed\" messages (a PMTU black hole), full-size segments stall for good",
            format!("{} (1 probes only once a black hole is detected)", set_cmd(os, "net.ipv4.tcp_mtu_probing", "1")),
        )),
        Some(v) => f.push(Finding::ok("mtu-probing", format!("tcp_mtu_probing is {v}: PMTU black holes are detected"))),
        None => {}
    }
}

// ---------------------------------------------------------------- FreeBSD / macOS sysctls

fn bsd_sysctls(os: Os, read: &Read<'_>, rtt_ms: Option<f64>, f: &mut Vec<Finding>) {
    // FreeBSD: 0 off, 1 both, 2 window scaling only, 3 timestamps only. macOS: 0 or 1.
    if let Some(v) = read("net.inet.tcp.rfc1323") {
        let n: u8 = v.parse().unwrap_or(1);
        let (wscale, ts) = (n == 1 || n == 2, n == 1 || n == 3);
        if wscale {
            f.push(Finding::ok(
                "window-scaling",
                "window scaling is on (net.inet.tcp.rfc1323)",
            ));
        } else {
            f.push(Finding::fail(
                "window-scaling",
                format!(
                    "window scaling is off (net.inet.tcp.rfc1323 = {v}): the window stops at 64 KiB, {}",
                    ceiling(65_535, rtt_ms)
                ),
                set_cmd(os, "net.inet.tcp.rfc1323", "1"),
            ));
        }
        if ts {
            f.push(Finding::ok(
                "timestamps",
                "TCP timestamps are on (net.inet.tcp.rfc1323)",
            ));
        } else {
            f.push(Finding::warn(
                "timestamps",
                format!("TCP timestamps are off (net.inet.tcp.rfc1323 = {v}): fewer RTT samples and no PAWS"),
                set_cmd(os, "net.inet.tcp.rfc1323", "1"),
            ));
        }
    }
    let sack_key = if os == Os::Macos {
        "net.inet.tcp.sack"
    } else {
        "net.inet.tcp.sack.enable"
    };
    match read(sack_key).as_deref() {
        Some("0") => f.push(Finding::warn(
            "sack",
            format!("SACK is off ({sack_key} = 0): after several losses in one window the sender repairs one hole per round trip"),
            set_cmd(os, sack_key, "1"),
        )),
        Some(_) => f.push(Finding::ok("sack", "SACK is on")),
        None => {}
    }
    if let Some(cc) = read("net.inet.tcp.cc.algorithm") {
        let avail = read("net.inet.tcp.cc.available").unwrap_or_default();
        if cc == "newreno" {
            f.push(Finding::warn(
                "congestion-control",
                format!("newreno in use (available: {avail}): it regrows the window by one segment per round trip after each loss"),
                "kldload cc_htcp; sysctl net.inet.tcp.cc.algorithm=htcp; add cc_htcp_load=\"YES\" to /boot/loader.conf",
            ));
        } else {
            f.push(Finding::ok(
                "congestion-control",
                format!("{cc} in use (available: {avail})"),
            ));
        }
    }
    for key in [
        "net.inet.tcp.pmtud_blackhole_detection",
        "net.inet.tcp.pmtu_blackhole_detection",
    ] {
        match read(key).as_deref() {
            Some("0") => f.push(Finding::warn(
                "mtu-probing",
                format!("{key} is 0: a PMTU black hole stalls full-size segments for good"),
                set_cmd(os, key, "1"),
            )),
            Some(v) => f.push(Finding::ok("mtu-probing", format!("{key} is {v}"))),
            None => continue,
        }
        break;
    }
    let autotune: &[(&str, &str)] = if os == Os::Macos {
        &[
            ("net.inet.tcp.doautorcvbuf", "receive"),
            ("net.inet.tcp.doautosndbuf", "send"),
        ]
    } else {
        &[
            ("net.inet.tcp.recvbuf_auto", "receive"),
            ("net.inet.tcp.sendbuf_auto", "send"),
        ]
    };
    for (key, what) in autotune {
        match read(key).as_deref() {
            Some("0") => f.push(Finding::fail(
                format!("autotuning:{what}"),
                format!("{what} buffer autotuning is off ({key} = 0): every connection keeps its initial buffer"),
                set_cmd(os, key, "1"),
            )),
            Some(_) => f.push(Finding::ok(
                format!("autotuning:{what}"),
                format!("{what} buffer autotuning is on"),
            )),
            None => {}
        }
    }
}

// ---------------------------------------------------------------- buffers for --host

/// Do the running autotuning maxima (the profile's `caps`) reach what the path needs?
fn buffers(os: Os, read: &Read<'_>, adv: &Advice, f: &mut Vec<Finding>) {
    let profile = Profile::for_os(os);
    let host = adv.host.as_deref().unwrap_or("the host");
    let rate = Bitrate::from_bps(adv.bandwidth_bps);
    let rate_note = match adv.bandwidth_source {
        Source::Assumed => format!("{rate} ASSUMED — give --bandwidth"),
        Source::Given => format!("{rate} given"),
        Source::Measured => format!("{rate} link speed"),
    };
    let path = format!("the path to {host} (RTT {} ms, {rate_note})", adv.rtt_ms);
    for (key, fact) in &profile.caps {
        let (need, what) = if fact == "send_buffer" {
            (adv.sizing.send_buffer, "send")
        } else {
            (adv.sizing.buffer, "receive")
        };
        let id = format!("buffers:{what}");
        let Some(cur) = read(key) else {
            f.push(Finding::warn(
                id,
                format!("{key} is not readable here, so the {what} buffer cannot be checked"),
                "run check on the machine itself",
            ));
            continue;
        };
        let max = crate::profile::numeric_fields(&cur)
            .and_then(|v| v.last().copied())
            .unwrap_or(0.0);
        #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
        let max = max as u64;
        let field = if cur.contains(' ') {
            format!("{key}[2]")
        } else {
            key.clone()
        };
        if max >= need {
            f.push(Finding::ok(
                id,
                format!(
                    "{field} = {} covers {path}: it needs {}",
                    output::bytes(max),
                    output::bytes(need)
                ),
            ));
            continue;
        }
        let value = adv
            .settings
            .iter()
            .find(|s| &s.key == key)
            .map_or_else(|| need.to_string(), |s| s.value.clone());
        let limit = if what == "receive" {
            // About half of the buffer is advertised as window (see bdp.rs).
            format!("; one flow gets {}", ceiling(max / 2, Some(adv.rtt_ms)))
        } else {
            String::new()
        };
        f.push(Finding::fail(
            id,
            format!(
                "{field} = {} is short of the {} {path} needs (BDP {}){limit}",
                output::bytes(max),
                output::bytes(need),
                output::bytes(adv.sizing.bdp)
            ),
            format!(
                "{} — or all at once: tcptune advise --host {host} --format sysctl",
                set_cmd(os, key, &value)
            ),
        ));
    }
}

// ---------------------------------------------------------------- pure checks of local facts

/// RetransSegs / OutSegs since boot (or since the network namespace was made).
pub fn retransmissions(c: Option<TcpCounters>, rtt_ms: Option<f64>) -> Option<Finding> {
    let c = c?;
    let id = "retransmissions";
    let Some(pct) = c.retrans_pct().filter(|_| c.out_segs >= 1000) else {
        return Some(Finding::ok(
            id,
            format!(
                "{} segments sent so far: too few to judge the retransmission rate",
                c.out_segs
            ),
        ));
    };
    let base = format!(
        "{:.2}% of segments retransmitted ({} of {} since boot, /proc/net/snmp)",
        pct, c.retrans_segs, c.out_segs
    );
    if pct < 1.0 {
        return Some(Finding::ok(id, base));
    }
    let rtt = rtt_ms.filter(|r| *r > 0.0).unwrap_or(100.0);
    let mathis = bdp::mathis_bps(Bytes::new(1448), Duration::from_millis_f64(rtt), pct / 100.0);
    let msg = format!(
        "{base}: at that loss one loss-based (Reno/CUBIC) flow reaches about {} at {} ms RTT (Mathis)",
        output::rate(mathis),
        output::ms(rtt)
    );
    let fix = "find the lossy hop: watch `nstat -az TcpRetransSegs` during a transfer, look for NIC errors and drops (`ip -s link`), a duplex mismatch or a too-short queue; bbr suffers less from random loss";
    Some(if pct >= 5.0 {
        Finding::fail(id, msg, fix)
    } else {
        Finding::warn(id, msg, fix)
    })
}

/// TCP memory: tcp_mem (pages) against the buffers × flows, the RAM, and what is in use now.
pub struct MemoryFacts {
    pub tcp_mem: Option<String>,
    /// Largest buffer one flow may take (the running maxima, or the path's needs with --host).
    pub per_flow: u64,
    pub flows: u32,
    pub ram: Option<u64>,
    pub in_use_pages: Option<u64>,
    pub page_size: u64,
}

pub fn tcp_memory(m: &MemoryFacts) -> Option<Finding> {
    let id = "tcp-memory";
    let need = u128::from(m.per_flow) * u128::from(m.flows);
    let need_u64 = u64::try_from(need).unwrap_or(u64::MAX);
    let Some(tcp_mem) = m.tcp_mem.as_deref() else {
        // A child network namespace has no tcp_mem: it is host-wide. RAM is still worth a look.
        let ram = m.ram?;
        let msg = format!(
            "{} flow(s) x {} against {} of RAM (tcp_mem is host-wide, not visible here)",
            m.flows,
            output::bytes(m.per_flow),
            output::bytes(ram)
        );
        return Some(if need.saturating_mul(4) > u128::from(ram) {
            Finding::warn(
                id,
                format!("{msg}: more than a quarter of it"),
                "plan for fewer concurrent bulk flows, or add memory",
            )
        } else {
            Finding::ok(id, msg)
        });
    };
    let pages: Vec<u64> = tcp_mem.split(' ').filter_map(|p| p.parse().ok()).collect();
    let [_, pressure, max] = pages[..] else {
        return None;
    };
    let bytes = |p: u64| p.saturating_mul(m.page_size);
    if let Some(used) = m.in_use_pages
        && used >= pressure
    {
        return Some(Finding::fail(
            id,
            format!(
                "TCP uses {} now, past tcp_mem[1] ({}): the kernel is under TCP memory pressure and shrinks every window",
                output::bytes(bytes(used)),
                output::bytes(bytes(pressure))
            ),
            "raise net.ipv4.tcp_mem, or find the sockets holding memory (`ss -tm`)",
        ));
    }
    let limit = u128::from(bytes(max));
    if need > limit {
        let pages_needed = need.div_ceil(u128::from(m.page_size.max(1)));
        return Some(Finding::warn(
            id,
            format!(
                "{} flow(s) x {} = {} exceed tcp_mem[2] ({}): under load the kernel will shrink the windows",
                m.flows,
                output::bytes(m.per_flow),
                output::bytes(need_u64),
                output::bytes(bytes(max))
            ),
            format!(
                "raise net.ipv4.tcp_mem[2] to at least {pages_needed} pages (sysctl -w net.ipv4.tcp_mem=\"{pressure} {} {pages_needed}\"), or expect fewer concurrent flows",
                pages_needed.max(u128::from(pressure))
            ),
        ));
    }
    if let Some(ram) = m.ram
        && ram > 0
        && need.saturating_mul(4) > u128::from(ram)
    {
        return Some(Finding::warn(
            id,
            format!(
                "{} flow(s) x {} is more than a quarter of the RAM ({})",
                m.flows,
                output::bytes(m.per_flow),
                output::bytes(ram)
            ),
            "plan for fewer concurrent bulk flows, or add memory",
        ));
    }
    let ram = m
        .ram
        .map(|r| format!(" of {} RAM", output::bytes(r)))
        .unwrap_or_default();
    Some(Finding::ok(
        id,
        format!(
            "tcp_mem[2] = {}{ram} holds {} flow(s) x {}",
            output::bytes(bytes(max)),
            m.flows,
            output::bytes(m.per_flow)
        ),
    ))
}

/// The keys whose setting by two parties (files, daemons) matters for bulk TCP.
pub const TUNING_KEYS: &[&str] = &[
    "net.ipv4.tcp_rmem",
    "net.ipv4.tcp_wmem",
    "net.core.rmem_max",
    "net.core.wmem_max",
    "net.core.rmem_default",
    "net.core.wmem_default",
    "net.ipv4.tcp_mem",
    "net.ipv4.tcp_congestion_control",
    "net.core.default_qdisc",
    "net.ipv4.tcp_window_scaling",
    "net.ipv4.tcp_sack",
    "net.ipv4.tcp_timestamps",
    "net.ipv4.tcp_mtu_probing",
    "net.ipv4.tcp_slow_start_after_idle",
    "net.ipv4.tcp_notsent_lowat",
    "net.ipv4.tcp_adv_win_scale",
    "net.core.netdev_max_backlog",
];

/// Two sysctl files setting one key to different values; a running value that differs from what
/// the files set (when this is the namespace the files are applied to).
pub fn sysctl_files(setters: &hostinfo::Setters, read: &Read<'_>, child_netns: Option<bool>) -> Vec<Finding> {
    let mut out = Vec::new();
    for key in TUNING_KEYS {
        let Some(list) = setters.get(*key) else {
            continue;
        };
        let Some((winner_path, winner)) = list.last() else {
            continue;
        };
        let id = format!("sysctl-files:{key}");
        let mut distinct: Vec<&str> = list.iter().map(|(_, v)| v.as_str()).collect();
        distinct.dedup();
        if distinct.len() > 1 {
            let who = list
                .iter()
                .map(|(p, v)| format!("{} ({v})", p.display()))
                .collect::<Vec<_>>()
                .join(", ");
            out.push(Finding::warn(
                id,
                format!(
                    "{key} is set by {} files: {who}; the last one read wins at boot ({})",
                    list.len(),
                    winner_path.display()
                ),
                format!("keep {key} in one file (e.g. /etc/sysctl.d/60-tcptune.conf) and delete it from the others"),
            ));
            continue;
        }
        if child_netns == Some(false)
            && let Some(running) = read(key)
            && running != *winner
        {
            out.push(Finding::warn(
                id,
                format!(
                    "{} sets {key} = {winner} but the kernel runs {running}: changed since boot (by hand, tuned, bpftune, a container runtime) or never applied",
                    winner_path.display()
                ),
                "apply the files with `sysctl --system`, or find what changes it",
            ));
        }
    }
    if out.is_empty() {
        let files = setters
            .values()
            .flatten()
            .map(|(p, _)| p)
            .collect::<std::collections::BTreeSet<_>>();
        out.push(Finding::ok(
            "sysctl-files",
            format!(
                "{} sysctl file(s) read: no TCP key set twice{}",
                files.len(),
                if child_netns == Some(false) {
                    ", and the running values match them"
                } else {
                    ""
                }
            ),
        ));
    }
    out
}

/// tuned and bpftune rewrite TCP sysctls at run time.
pub fn tuning_daemons(procs: &[(u32, String)]) -> Vec<Finding> {
    if procs.is_empty() {
        return vec![Finding::ok("tuning-daemons", "neither tuned nor bpftune is running")];
    }
    procs
        .iter()
        .map(|(pid, name)| {
            let (what, fix) = if name == "bpftune" {
                (
                    "bpftune retunes tcp_rmem, tcp_wmem, tcp_mem and the congestion control at run time and may undo or fight manual settings",
                    "leave buffer tuning to bpftune, or stop it: systemctl disable --now bpftune",
                )
            } else {
                (
                    "tuned applies its profile's sysctls at start and on profile changes, overriding /etc/sysctl.d",
                    "put the TCP settings into the active tuned profile ([sysctl] section), or `tuned-adm off`",
                )
            };
            Finding::warn(format!("tuning-daemons:{name}"), format!("{name} is running (pid {pid}): {what}"), fix)
        })
        .collect()
}

/// Half duplex on a link is a negotiation failure: collisions and late retransmissions.
pub fn duplex(ifname: &str, duplex: Option<&str>) -> Option<Finding> {
    let id = format!("duplex:{ifname}");
    match duplex? {
        "half" => Some(Finding::fail(
            id,
            format!("{ifname} runs half duplex: a duplex mismatch with the switch loses packets under load"),
            format!(
                "let both ends auto-negotiate (ethtool -s {ifname} autoneg on), or fix the same speed and full duplex on both"
            ),
        )),
        d => Some(Finding::ok(id, format!("{ifname} runs {d} duplex"))),
    }
}

/// The interface MTU, and with a host the route/path MTU towards it.
pub fn mtu(ifname: &str, mtu: Option<u32>, route_mtu: Option<u32>, host: Option<&str>) -> Option<Finding> {
    let m = mtu?;
    let id = format!("mtu:{ifname}");
    if let (Some(r), Some(h)) = (route_mtu, host)
        && r < m
    {
        return Some(Finding::warn(
            id,
            format!(
                "{ifname} has MTU {m} but the path to {h} carries {r} (route or learnt path MTU): segments sized for {m} must be cut down first"
            ),
            format!("use the same MTU end to end (ip link set {ifname} mtu {r}), or make every hop carry {m}"),
        ));
    }
    let note = if m > 1500 {
        format!(
            "jumbo frames: every hop to your peers must carry {m}-byte frames, or full-size segments wait on PMTU discovery (check with --host PEER)"
        )
    } else if m < 1500 {
        "below 1500: a tunnel or overlay; TCP segments are sized to fit".to_string()
    } else {
        "standard Ethernet".to_string()
    };
    let path = match (route_mtu, host) {
        (Some(r), Some(h)) => format!("; path to {h}: {r}"),
        _ => String::new(),
    };
    Some(Finding::ok(id, format!("{ifname} MTU {m}{path} ({note})")))
}

/// With BBR, is there an fq qdisc to pace?
pub fn pacing(ifname: &str, kinds: &Result<Vec<String>, String>) -> Finding {
    let id = format!("pacing:{ifname}");
    match kinds {
        Ok(k) if k.iter().any(|q| q == "fq") => Finding::ok(id, format!("bbr paces through the fq qdisc on {ifname}")),
        Ok(k) => {
            let shown = if k.is_empty() { "none".to_string() } else { k.join(", ") };
            Finding::warn(
                id,
                format!(
                    "bbr is in use but {ifname}'s qdisc is {shown}, not fq: BBR falls back to TCP-internal pacing (Linux 4.13+), which costs more CPU and paces less precisely"
                ),
                format!(
                    "tc qdisc replace dev {ifname} root fq; and set net.core.default_qdisc = fq in /etc/sysctl.d/ for new interfaces"
                ),
            )
        }
        Err(e) => Finding::warn(
            id,
            format!("bbr is in use but {ifname}'s qdisc could not be read ({e})"),
            format!("check with `tc qdisc show dev {ifname}`: bbr wants fq"),
        ),
    }
}

#[cfg(target_os = "linux")]
/// `tun`: a TUN/TAP device, whose TSO the program owning it decides (TUNSETOFFLOAD), not ethtool.
#[cfg(target_os = "linux")]
pub fn offloads(ifname: &str, o: &std::io::Result<crate::diag::ethtool::Offloads>, tun: bool) -> Option<Finding> {
    use crate::diag::ethtool::Feature;
    let id = format!("offload:{ifname}");
    let o = match o {
        Ok(o) => o,
        Err(e) if e.kind() == std::io::ErrorKind::Unsupported => return None,
        Err(e) => {
            return Some(Finding::warn(
                id,
                format!("the offloads of {ifname} could not be read: {e}"),
                format!("check with `ethtool -k {ifname}`"),
            ));
        }
    };
    let show = |name: &str, feat: Option<Feature>| match feat {
        None => format!("{name} ?"),
        Some(Feature { on: true, .. }) => format!("{name} on"),
        Some(Feature { fixed: Some(true), .. }) => format!("{name} off [fixed]"),
        Some(_) => format!("{name} off"),
    };
    let state = [show("TSO", o.tso), show("GSO", o.gso), show("GRO", o.gro)].join(", ");
    // Off but switchable: that is a fix. Off and fixed: the device cannot, and GSO stands in.
    let fixable = |feat: Option<Feature>| {
        matches!(
            feat,
            Some(Feature {
                on: false,
                fixed: Some(false) | None
            })
        )
    };
    let mut turn_on = Vec::new();
    if fixable(o.tso) {
        turn_on.push("tso");
    }
    if fixable(o.gso) {
        turn_on.push("gso");
    }
    if fixable(o.gro) {
        turn_on.push("gro");
    }
    if tun {
        // GSO is software and works on a TUN device; TSO/GRO are the owning program's choice.
        turn_on.retain(|t| *t == "gso");
    }
    if turn_on.is_empty() {
        let owner = if tun && (fixable(o.tso) || fixable(o.gro)) {
            " (a TUN device: the program that owns it sets its offloads)"
        } else {
            ""
        };
        Some(Finding::ok(id, format!("{ifname}: {state}{owner}")))
    } else {
        let args = turn_on.iter().map(|t| format!("{t} on")).collect::<Vec<_>>().join(" ");
        Some(Finding::warn(
            id,
            format!(
                "{ifname}: {state}: without segmentation offload the CPU handles every 1500-byte packet (one cloud lost 65% of its send rate with TSO and GSO off)"
            ),
            format!("ethtool -K {ifname} {args}"),
        ))
    }
}

// ---------------------------------------------------------------- gathering on Linux

#[cfg(target_os = "linux")]
mod local {
    use std::path::Path;

    use super::{Finding, MemoryFacts, Read};
    use crate::cli::CheckArgs;
    use crate::cmd::advise::Advice;
    use crate::diag::{ethtool, hostinfo};

    const PROC: &str = "/proc";
    const SYS_NET: &str = "/sys/class/net";

    fn read_file(p: impl AsRef<Path>) -> Option<String> {
        std::fs::read_to_string(p).ok()
    }

    /// The interfaces to look at: the one towards --host, else those with a default route, else
    /// every interface that is up (but loopback).
    fn interfaces(advice: Option<&Advice>) -> Vec<String> {
        if let Some(i) = advice
            .and_then(|a| a.hosts.first())
            .and_then(|h| h.measurement.link.interface.clone())
        {
            return vec![i];
        }
        let routes = hostinfo::default_route_interfaces(
            &read_file("/proc/net/route").unwrap_or_default(),
            &read_file("/proc/net/ipv6_route").unwrap_or_default(),
        );
        if !routes.is_empty() {
            return routes;
        }
        let mut all: Vec<String> = std::fs::read_dir(SYS_NET)
            .map(|d| {
                d.flatten()
                    .map(|e| e.file_name().to_string_lossy().into_owned())
                    .filter(|n| n != "lo")
                    .filter(|n| {
                        read_file(Path::new(SYS_NET).join(n).join("operstate")).is_some_and(|s| s.trim() != "down")
                    })
                    .collect()
            })
            .unwrap_or_default();
        all.sort();
        all
    }

    async fn qdisc_kinds(ifindex: u32) -> Result<Vec<String>, String> {
        use futures::TryStreamExt as _;
        use rtnetlink::packet_route::tc::TcAttribute;
        let (connection, handle, _) = rtnetlink::new_connection().map_err(|e| format!("netlink: {e}"))?;
        let conn = tokio::spawn(connection);
        let result = async {
            let mut kinds = Vec::new();
            let mut s = handle.qdisc().get().execute();
            while let Some(m) = s.try_next().await.map_err(|e| e.to_string())? {
                if u32::try_from(m.header.index).ok() != Some(ifindex) {
                    continue;
                }
                for a in m.attributes {
                    if let TcAttribute::Kind(k) = a
                        && !kinds.contains(&k)
                    {
                        kinds.push(k);
                    }
                }
            }
            Ok(kinds)
        }
        .await;
        conn.abort();
        result
    }

    fn page_size() -> u64 {
        // SAFETY: sysconf has no preconditions.
        let p = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
        u64::try_from(p).ok().filter(|&p| p > 0).unwrap_or(4096)
    }

    fn ram() -> Option<u64> {
        let mut sys = sysinfo::System::new().ok()?;
        sys.refresh_memory();
        Some(sys.total_memory()).filter(|&r| r > 0)
    }

    fn last_field(v: Option<String>) -> u64 {
        v.and_then(|v| v.split(' ').next_back().and_then(|x| x.parse().ok()))
            .unwrap_or(0)
    }

    pub(super) fn findings(a: &CheckArgs, read: &Read<'_>, advice: Option<&Advice>, f: &mut Vec<Finding>) {
        let host = advice.and_then(|x| x.host.clone());
        let link = advice.and_then(|x| x.hosts.first()).map(|h| h.measurement.link.clone());
        let bbr = read("net.ipv4.tcp_congestion_control").as_deref() == Some("bbr");
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().ok();
        for ifname in interfaces(advice) {
            let dir = Path::new(SYS_NET).join(&ifname);
            let sysfs = crate::measure::link::read_link_sysfs(Path::new(SYS_NET), &ifname);
            let route_mtu = link
                .as_ref()
                .filter(|l| l.interface.as_deref() == Some(ifname.as_str()))
                .and_then(|l| l.route_mtu);
            f.extend(super::mtu(&ifname, sysfs.mtu, route_mtu, host.as_deref()));
            let tun = dir.join("tun_flags").exists();
            f.extend(super::offloads(&ifname, &ethtool::offloads(&ifname), tun));
            f.extend(super::duplex(&ifname, sysfs.duplex.as_deref()));
            if bbr {
                let kinds = match (&rt, read_file(dir.join("ifindex")).and_then(|i| i.trim().parse().ok())) {
                    (Some(rt), Some(index)) => rt.block_on(qdisc_kinds(index)),
                    (None, _) => Err("no runtime".to_string()),
                    (_, None) => Err("no interface index".to_string()),
                };
                f.push(super::pacing(&ifname, &kinds));
            }
        }
        let counters = read_file("/proc/net/snmp")
            .as_deref()
            .and_then(hostinfo::parse_snmp_tcp);
        f.extend(super::retransmissions(counters, advice.map(|x| x.rtt_ms)));
        let per_flow = match advice {
            Some(x) => x.sizing.buffer.max(x.sizing.send_buffer),
            None => last_field(read("net.ipv4.tcp_rmem")).max(last_field(read("net.ipv4.tcp_wmem"))),
        };
        f.extend(super::tcp_memory(&MemoryFacts {
            tcp_mem: read("net.ipv4.tcp_mem"),
            per_flow,
            flows: a.flows,
            ram: ram(),
            in_use_pages: read_file("/proc/net/sockstat")
                .as_deref()
                .and_then(hostinfo::parse_sockstat_tcp_mem),
            page_size: page_size(),
        }));
        let setters = hostinfo::setters(&hostinfo::read_sysctl_files(Path::new("/")));
        f.extend(super::sysctl_files(
            &setters,
            read,
            hostinfo::in_child_netns(Path::new(PROC)),
        ));
        f.extend(super::tuning_daemons(&hostinfo::find_processes(
            Path::new(PROC),
            &["tuned", "bpftune"],
        )));
    }
}

// ---------------------------------------------------------------- output

fn write_table(out: &mut dyn Write, r: &Report, ctx: &Context) -> anyhow::Result<()> {
    use comfy_table::{Cell, Color};
    let mut t = output::table(ctx.stdout_tty, ctx.color);
    t.set_header(output::header(["status", "check", "finding", "fix"]));
    for x in &r.findings {
        let mut status = Cell::new(x.status.as_str());
        if ctx.color {
            status = status.fg(match x.status {
                Status::Ok => Color::Green,
                Status::Warn => Color::Yellow,
                Status::Fail => Color::Red,
            });
        }
        t.add_row(vec![
            status,
            Cell::new(&x.id),
            Cell::new(&x.message),
            Cell::new(x.fix.as_deref().unwrap_or("")),
        ]);
    }
    let host = r.host.as_deref().map(|h| format!(", path to {h}")).unwrap_or_default();
    writeln!(
        out,
        "TCP health of this {} host (values from {}{host})",
        r.os, r.current_from
    )?;
    writeln!(out, "{t}")?;
    writeln!(
        out,
        "{} ok, {} warn, {} fail",
        r.summary.ok, r.summary.warn, r.summary.fail
    )?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    fn reader(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let m: BTreeMap<String, String> = pairs.iter().map(|(k, v)| ((*k).into(), (*v).into())).collect();
        move |k: &str| m.get(k).cloned()
    }

    fn by_id<'a>(f: &'a [Finding], id: &str) -> &'a Finding {
        f.iter()
            .find(|x| x.id == id)
            .unwrap_or_else(|| panic!("no {id} in {f:#?}"))
    }

    #[test]
    fn linux_switches() {
        let stock = [
            ("net.ipv4.tcp_window_scaling", "1"),
            ("net.ipv4.tcp_sack", "1"),
            ("net.ipv4.tcp_timestamps", "1"),
            ("net.ipv4.tcp_congestion_control", "cubic"),
            ("net.ipv4.tcp_available_congestion_control", "reno cubic bbr"),
            ("net.ipv4.tcp_mtu_probing", "0"),
        ];
        let mut f = Vec::new();
        linux_sysctls(&reader(&stock), None, &mut f);
        assert_eq!(by_id(&f, "window-scaling").status, Status::Ok);
        assert_eq!(by_id(&f, "sack").status, Status::Ok);
        assert!(by_id(&f, "congestion-control").message.contains("bbr is available"));
        assert_eq!(by_id(&f, "mtu-probing").status, Status::Warn);

        let off = [
            ("net.ipv4.tcp_window_scaling", "0"),
            ("net.ipv4.tcp_sack", "0"),
            ("net.ipv4.tcp_timestamps", "0"),
            ("net.ipv4.tcp_congestion_control", "reno"),
            ("net.ipv4.tcp_available_congestion_control", "reno cubic"),
        ];
        let mut f = Vec::new();
        linux_sysctls(&reader(&off), Some(50.0), &mut f);
        let ws = by_id(&f, "window-scaling");
        assert_eq!(ws.status, Status::Fail);
        assert!(ws.message.contains("10.49 Mbit/s at 50 ms"), "{}", ws.message);
        assert!(ws.fix.as_deref().is_some_and(|x| x.contains("tcp_window_scaling=1")));
        assert_eq!(
            by_id(&f, "sack")
                .fix
                .as_deref()
                .map(|x| x.starts_with("sysctl -w net.ipv4.tcp_sack=1")),
            Some(true)
        );
        assert_eq!(by_id(&f, "timestamps").status, Status::Warn);
        let cc = by_id(&f, "congestion-control");
        assert_eq!(cc.status, Status::Warn);
        assert!(cc.fix.as_deref().is_some_and(|x| x.contains("=cubic")));
        // Absent keys make no finding.
        assert!(!f.iter().any(|x| x.id == "mtu-probing"));
    }

    #[test]
    fn bsd_switches() {
        let mut f = Vec::new();
        bsd_sysctls(
            Os::Freebsd,
            &reader(&[
                ("net.inet.tcp.rfc1323", "3"),
                ("net.inet.tcp.sack.enable", "0"),
                ("net.inet.tcp.cc.algorithm", "newreno"),
                ("net.inet.tcp.cc.available", "newreno, cubic"),
                ("net.inet.tcp.recvbuf_auto", "0"),
                ("net.inet.tcp.sendbuf_auto", "1"),
            ]),
            None,
            &mut f,
        );
        assert_eq!(by_id(&f, "window-scaling").status, Status::Fail);
        assert_eq!(by_id(&f, "timestamps").status, Status::Ok);
        assert_eq!(by_id(&f, "sack").status, Status::Warn);
        assert_eq!(by_id(&f, "congestion-control").status, Status::Warn);
        assert_eq!(by_id(&f, "autotuning:receive").status, Status::Fail);
        assert_eq!(by_id(&f, "autotuning:send").status, Status::Ok);
        let mut f = Vec::new();
        bsd_sysctls(
            Os::Macos,
            &reader(&[("net.inet.tcp.rfc1323", "1"), ("net.inet.tcp.sack", "1")]),
            None,
            &mut f,
        );
        assert!(f.iter().all(|x| x.status == Status::Ok), "{f:#?}");
        assert_eq!(f.len(), 3);
    }

    #[test]
    fn retransmission_thresholds() {
        let c = |out, re| {
            Some(TcpCounters {
                out_segs: out,
                retrans_segs: re,
                in_errs: 0,
            })
        };
        assert_eq!(retransmissions(None, None), None);
        assert_eq!(retransmissions(c(10, 5), None).expect("f").status, Status::Ok);
        assert_eq!(retransmissions(c(100_000, 100), None).expect("f").status, Status::Ok);
        let w = retransmissions(c(100_000, 2000), Some(50.0)).expect("f");
        assert_eq!(w.status, Status::Warn);
        assert!(
            w.message.contains("2.00%") && w.message.contains("Mathis"),
            "{}",
            w.message
        );
        assert_eq!(retransmissions(c(100_000, 6000), None).expect("f").status, Status::Fail);
    }

    fn base_like() -> MemoryFacts {
        MemoryFacts {
            tcp_mem: Some("188049 250735 376098".into()),
            per_flow: 6_291_456,
            flows: 1,
            ram: Some(8 << 30),
            in_use_pages: Some(10),
            page_size: 4096,
        }
    }

    #[test]
    fn memory() {
        let base = MemoryFacts {
            tcp_mem: Some("188049 250735 376098".into()),
            per_flow: 6_291_456,
            flows: 1,
            ram: Some(8 << 30),
            in_use_pages: Some(10),
            page_size: 4096,
        };
        assert_eq!(tcp_memory(&base).expect("f").status, Status::Ok);
        let many = MemoryFacts { flows: 300, ..base };
        let w = tcp_memory(&many).expect("f");
        assert_eq!(w.status, Status::Warn);
        assert!(w.message.contains("tcp_mem[2]"), "{}", w.message);
        let pressure = MemoryFacts {
            in_use_pages: Some(260_000),
            flows: 1,
            ..many
        };
        assert_eq!(tcp_memory(&pressure).expect("f").status, Status::Fail);
        let small_ram = MemoryFacts {
            ram: Some(16 << 20),
            in_use_pages: None,
            ..pressure
        };
        assert_eq!(tcp_memory(&small_ram).expect("f").status, Status::Warn);
        assert_eq!(
            tcp_memory(&MemoryFacts {
                tcp_mem: Some("x".into()),
                ram: Some(16 << 20),
                in_use_pages: None,
                ..base_like()
            }),
            None
        );
        // A child namespace: no tcp_mem, RAM only.
        let ns = tcp_memory(&MemoryFacts {
            tcp_mem: None,
            ..base_like()
        })
        .expect("f");
        assert_eq!(ns.status, Status::Ok);
        assert!(ns.message.contains("host-wide"), "{}", ns.message);
        assert_eq!(
            tcp_memory(&MemoryFacts {
                tcp_mem: None,
                ram: None,
                ..base_like()
            }),
            None
        );
        assert_eq!(small_ram.flows, 1);
    }

    #[test]
    fn sysctl_file_conflicts() {
        use std::path::PathBuf;
        let mut s: hostinfo::Setters = BTreeMap::new();
        s.insert(
            "net.ipv4.tcp_rmem".into(),
            vec![
                (
                    PathBuf::from("/etc/sysctl.d/60-tcptune.conf"),
                    "4096 131072 20643840".into(),
                ),
                (
                    PathBuf::from("/etc/sysctl.d/99-cloud.conf"),
                    "4096 87380 6291456".into(),
                ),
            ],
        );
        s.insert(
            "net.ipv4.tcp_sack".into(),
            vec![(PathBuf::from("/etc/sysctl.d/10-x.conf"), "1".into())],
        );
        let running = reader(&[("net.ipv4.tcp_rmem", "4096 87380 6291456"), ("net.ipv4.tcp_sack", "0")]);
        let f = sysctl_files(&s, &running, Some(false));
        let rmem = by_id(&f, "sysctl-files:net.ipv4.tcp_rmem");
        assert_eq!(rmem.status, Status::Warn);
        assert!(rmem.message.contains("99-cloud.conf"));
        let sack = by_id(&f, "sysctl-files:net.ipv4.tcp_sack");
        assert!(sack.message.contains("the kernel runs 0"), "{}", sack.message);
        // In a child namespace the files do not apply: no mismatch finding.
        let f = sysctl_files(&s, &running, Some(true));
        assert_eq!(f.len(), 1);
        let f = sysctl_files(&BTreeMap::new(), &running, Some(false));
        assert_eq!(f[0].status, Status::Ok);
    }

    #[test]
    fn daemons_interfaces() {
        assert_eq!(tuning_daemons(&[])[0].status, Status::Ok);
        let f = tuning_daemons(&[(812, "bpftune".into())]);
        assert_eq!(f[0].id, "tuning-daemons:bpftune");
        assert!(
            f[0].fix
                .as_deref()
                .is_some_and(|x| x.contains("systemctl disable --now bpftune"))
        );
        assert_eq!(duplex("eth0", Some("half")).expect("f").status, Status::Fail);
        assert_eq!(duplex("eth0", Some("full")).expect("f").status, Status::Ok);
        assert_eq!(duplex("tun0", None), None);
        assert_eq!(
            mtu("eth0", Some(9000), Some(1500), Some("peer")).expect("f").status,
            Status::Warn
        );
        assert!(
            mtu("eth0", Some(9000), None, None)
                .expect("f")
                .message
                .contains("jumbo")
        );
        assert_eq!(pacing("eth0", &Ok(vec!["mq".into(), "fq".into()])).status, Status::Ok);
        let p = pacing("eth0", &Ok(vec!["fq_codel".into()]));
        assert_eq!(p.status, Status::Warn);
        assert!(p.fix.as_deref().is_some_and(|x| x.contains("root fq")));
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn offload_verdicts() {
        use crate::diag::ethtool::{Feature, Offloads};
        let on = Feature {
            on: true,
            fixed: Some(false),
        };
        let off = Feature {
            on: false,
            fixed: Some(false),
        };
        let fixed_off = Feature {
            on: false,
            fixed: Some(true),
        };
        let all_on = Offloads {
            tso: Some(on),
            gso: Some(on),
            gro: Some(on),
        };
        assert_eq!(offloads("eth0", &Ok(all_on), false).expect("f").status, Status::Ok);
        let cloud = Offloads {
            tso: Some(off),
            gso: Some(off),
            ..all_on
        };
        let w = offloads("eth0", &Ok(cloud), false).expect("f");
        assert_eq!(w.status, Status::Warn);
        assert_eq!(w.fix.as_deref(), Some("ethtool -K eth0 tso on gso on"));
        let tun = Offloads {
            tso: Some(fixed_off),
            ..all_on
        };
        let ok = offloads("tun0", &Ok(tun), false).expect("f");
        assert_eq!(ok.status, Status::Ok);
        assert!(ok.message.contains("TSO off [fixed]"));
        // A TUN device reports TSO as switchable, but only its owner can switch it.
        let tun_dev = Offloads {
            tso: Some(off),
            ..all_on
        };
        let ok = offloads("wan0", &Ok(tun_dev), true).expect("f");
        assert_eq!(ok.status, Status::Ok, "{ok:?}");
        assert!(ok.message.contains("TUN device"));
        let gso_off = Offloads {
            gso: Some(off),
            ..tun_dev
        };
        assert_eq!(
            offloads("wan0", &Ok(gso_off), true).expect("f").fix.as_deref(),
            Some("ethtool -K wan0 gso on")
        );
    }
}
