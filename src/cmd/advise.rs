//! `tcptune advise`: turn a path (given, or measured with `--host`) into sysctl advice
//! for an OS, showing the running values beside the recommendation.

use std::collections::BTreeMap;
use std::io::Write;
use std::process::ExitCode;

use serde::Serialize;

use crate::Context;
use crate::bdp::{self, Sizing};
use crate::cli::{AdviseArgs, Format};
use crate::error::Error;
use crate::measure::{Family, HostMeasurement, PathProber, ProbeOptions};
use crate::output;
use crate::platform::{KeyState, Os};
use crate::profile::{Action, Profile, Setting, Stage};
use crate::units::{Bitrate, Duration};

/// When the egress link does not report its speed (virtio, TUN, many clouds), this is assumed.
pub const ASSUMED_RATE_BPS: u64 = 1_000_000_000;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Source {
    Given,
    Measured,
    Assumed,
}

/// The path the advice is for.
#[derive(Debug, Clone)]
pub struct Path {
    pub rtt: Duration,
    pub rtt_source: Source,
    pub mdev: Option<Duration>,
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
}

pub fn run(a: &AdviseArgs, ctx: &Context, out: &mut dyn Write) -> anyhow::Result<ExitCode> {
    let prober = crate::measure::SystemProber;
    let advice = advise(a, ctx, &prober)?;
    let format = ctx
        .format
        .unwrap_or(if ctx.stdout_tty { Format::Table } else { Format::Sysctl });
    match format {
        Format::Json => output::json(out, &advice)?,
        Format::Sysctl => write_sysctl(out, &advice)?,
        Format::Shell => write_shell(out, &advice)?,
        Format::Table => write_table(out, &advice, ctx.stdout_tty, ctx.color)?,
    }
    Ok(ExitCode::SUCCESS)
}

/// Resolve the path: given values win; what is missing is measured to every `--host`.
fn resolve_path(
    a: &AdviseArgs,
    ctx: &Context,
    prober: &dyn PathProber,
) -> Result<(Path, Vec<HostReport>, Vec<String>), Error> {
    let mut notes = Vec::new();
    // Both given: nothing to measure (the hosts, if any, are not probed).
    if let (Some(rtt), Some(rate)) = (a.rtt, a.bandwidth) {
        if !a.host.is_empty() {
            notes.push("--rtt and --bandwidth given: the hosts were not probed".into());
        }
        let path = Path {
            rtt,
            rtt_source: Source::Given,
            mdev: None,
            rate,
            rate_source: Source::Given,
            mtu: None,
            host: None,
        };
        return Ok((path, Vec::new(), notes));
    }
    if a.host.is_empty() {
        return Err(
            Error::usage("advise needs --host HOST (to measure), or both --rtt and --bandwidth")
                .with_hint("e.g. tcptune advise --rtt 150ms --bandwidth 500mbit"),
        );
    }
    let opts = ProbeOptions {
        probes: a.probes,
        interval: a.interval.as_std(),
        timeout: a.timeout.as_std(),
        ports: a.port.clone(),
        family: if a.ipv4 {
            Some(Family::V4)
        } else if a.ipv6 {
            Some(Family::V6)
        } else {
            None
        },
        progress: ctx.stderr_tty,
        // A given rate needs no trains.
        capacity: a.bandwidth.is_none() && !a.no_capacity,
    };
    let measured = prober.measure(&a.host, &opts)?;
    let mut reports: Vec<(Path, HostReport)> = Vec::new();
    for m in measured {
        let (rtt, rtt_source, mdev) = match a.rtt {
            Some(r) => (r, Source::Given, None),
            // Microsecond resolution, so rtt_ms in the output reproduces bdp_bytes exactly.
            None => (
                Duration::from_millis_f64(output::ms(m.rtt.min_ms)),
                Source::Measured,
                Some(Duration::from_millis_f64(m.rtt.mdev_ms)),
            ),
        };
        let (rate, rate_source) = match a.bandwidth {
            Some(b) => (b, Source::Given),
            None => {
                let (rate, source, note) = measured_rate(&m);
                notes.push(format!("{}: {note}", m.host));
                (rate, source)
            }
        };
        notes.extend(m.notes.iter().map(|n| format!("{}: {n}", m.host)));
        let path = Path {
            rtt,
            rtt_source,
            mdev,
            rate,
            rate_source,
            mtu: m.link.route_mtu.or(m.link.mtu),
            host: Some(m.host.clone()),
        };
        let report = HostReport {
            host: m.host.clone(),
            rtt_ms: output::ms(rtt.as_millis_f64()),
            bandwidth_bps: rate.bps(),
            bandwidth_source: rate_source,
            bdp_bytes: output::number(bdp::bdp_exact(rate, rtt)),
            measurement: m,
        };
        reports.push((path, report));
    }
    // Advise for the largest BDP: buffers sized for it serve every smaller path too.
    let best = reports
        .iter()
        .enumerate()
        .max_by(|(_, x), (_, y)| bdp::bdp_exact(x.0.rate, x.0.rtt).total_cmp(&bdp::bdp_exact(y.0.rate, y.0.rtt)))
        .map(|(i, _)| i)
        .ok_or_else(|| Error::measurement("no host was measured"))?;
    let path = reports[best].0.clone();
    Ok((path, reports.into_iter().map(|(_, r)| r).collect(), notes))
}

/// The lowest and highest of `samples`: "496 Mbit/s to 2.6 Gbit/s".
fn spread(samples: &[u64]) -> String {
    let lo = samples.iter().min().copied().unwrap_or(0);
    let hi = samples.iter().max().copied().unwrap_or(0);
    format!("{} to {}", output::rate(lo as f64), output::rate(hi as f64))
}

/// The rate of a measured path, where it came from, and a note that says how it was chosen:
/// the packet-train estimate (capped by the link speed when that is known), else the link
/// speed, else [`ASSUMED_RATE_BPS`].
fn measured_rate(m: &HostMeasurement) -> (Bitrate, Source, String) {
    let link = m.link.speed_bps.filter(|s| *s > 0);
    let ifname = m.link.interface.as_deref().unwrap_or("the egress interface");
    let show = |bps: u64| output::rate(bps as f64);
    match (&m.capacity, link) {
        (Some(c), _) if !c.sender_limited => {
            let mut note = format!(
                "bottleneck rate from packet trains: {} ({} of {} trains of {} x {} bytes agree within 10 %)",
                show(c.bps),
                c.agreeing,
                c.trains,
                c.per_train,
                c.packet_bytes
            );
            if !c.agreed {
                note.push_str(&format!(
                    "; the trains disagree (rates {}): the path or this host is busy, so check the rate or give --bandwidth",
                    spread(&c.samples_bps)
                ));
            }
            let rate = match link {
                Some(l) if l < c.bps => {
                    note.push_str(&format!(
                        "; the link speed of {ifname}, {}, is lower: used that",
                        show(l)
                    ));
                    l
                }
                _ => c.bps,
            };
            (Bitrate::from_bps(rate), Source::Measured, note)
        }
        (Some(c), _) => {
            // The replies came back as fast as the train left: the path is at least this fast.
            let mut note = format!(
                "packet trains came back as fast as this host sent them: the bottleneck rate is at least {} ({} of {} trains agree)",
                show(c.bps),
                c.agreeing,
                c.trains
            );
            let rate = match link {
                Some(l) if l > c.bps => {
                    note.push_str(&format!("; used the link speed of {ifname}, {}", show(l)));
                    l
                }
                _ => {
                    note.push_str("; used that lower bound: give --bandwidth if the path is faster");
                    c.bps
                }
            };
            (Bitrate::from_bps(rate), Source::Measured, note)
        }
        (None, Some(l)) => (
            Bitrate::from_bps(l),
            Source::Measured,
            format!("rate from the link speed of {ifname}: {}", show(l)),
        ),
        (None, None) => {
            let why = if m.link.notes.is_empty() {
                format!("the speed of {ifname} is unknown")
            } else {
                m.link.notes.join("; ")
            };
            (
                Bitrate::from_bps(ASSUMED_RATE_BPS),
                Source::Assumed,
                format!(
                    "{why}; ASSUMED {} — give --bandwidth with the path's real rate",
                    Bitrate::from_bps(ASSUMED_RATE_BPS)
                ),
            )
        }
    }
}

/// Compute the advice. The prober is a seam: tests pass a fake.
pub fn advise(a: &AdviseArgs, ctx: &Context, prober: &dyn PathProber) -> anyhow::Result<Advice> {
    let profile = match &a.profile {
        Some(p) => Profile::load(p)?,
        None => Profile::for_os(ctx.os),
    };
    if profile.os != ctx.os {
        return Err(Error::usage(format!(
            "profile {} is for {}, but advice is for {} (use --os {})",
            profile.name, profile.os, ctx.os, profile.os
        ))
        .into());
    }
    let (path, hosts, mut notes) = resolve_path(a, ctx, prober)?;
    bdp::check_path(path.rate, path.rtt).map_err(Error::usage)?;
    let sizing = if a.loss_recovery {
        bdp::size_for_loss(path.rate, path.rtt, path.mdev)
    } else {
        bdp::size_buffers(path.rate, path.rtt, path.mdev)
    };
    let backend = ctx.backend.as_deref();
    let read = |k: &str| backend.map(|b| b.read(k));

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
            output::bytes(sizing.buffer),
            output::bytes(sizing.send_buffer)
        ));
    }
    if sizing.clamped {
        warnings.push(
            "the path needs more buffer than Linux accepts (2^31 - 1 bytes); one flow cannot fill it: use parallel streams"
                .to_string(),
        );
    }
    let avail = read("net.ipv4.tcp_available_congestion_control").and_then(|k| k.value().map(str::to_string));
    let offers = |cc: &str| avail.as_deref().map(|v| crate::platform::offers(v, cc));
    let cc_bbr = offers("bbr").unwrap_or(false);
    // cubic is built into every distribution kernel: assumed where the list is unknown.
    let cc_cubic = offers("cubic").unwrap_or(true);
    let qdisc_fq = ctx.local && ctx.os == Os::Linux && std::path::Path::new("/sys/module/sch_fq").exists();
    memory_warnings(ctx, a.flows, &sizing, &read, &mut warnings);

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
    ] {
        facts.insert(k.to_string(), v);
    }
    let mut settings = profile.render(&facts, &read, a.allow_lower)?;
    // A child network namespace may not choose every algorithm the kernel offers; the
    // advice says so rather than leave `apply` to refuse it.
    if let Some(b) = backend.filter(|_| ctx.local && ctx.os == Os::Linux) {
        for s in &mut settings {
            if s.key == "net.ipv4.tcp_congestion_control"
                && s.action == Action::Set
                && let Some(why) = crate::platform::linux::cc_refused_here(b, &s.value)
            {
                s.action = Action::Unavailable(why);
            }
        }
    }
    if !sizing.loss_recovery {
        warnings.extend(hosts.iter().filter_map(probe_loss_warning));
    }
    let cc = settings
        .iter()
        .find(|s| s.key == "net.ipv4.tcp_congestion_control" && s.action == Action::Set)
        .map(|s| s.value.clone())
        .or_else(|| read("net.ipv4.tcp_congestion_control").and_then(|k| k.value().map(str::to_string)));
    if let Some(note) = probe_rtt_note(cc.as_deref(), path.rtt.as_millis_f64()) {
        notes.push(note);
    }
    let changes = settings
        .iter()
        .filter(|s| s.action == Action::Set && s.stage == Stage::Runtime)
        .count();
    Ok(Advice {
        tcptune_version: env!("CARGO_PKG_VERSION"),
        generated: humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string(),
        os: ctx.os,
        profile: profile.name.clone(),
        host: path.host.clone(),
        rtt_ms: output::ms(path.rtt.as_millis_f64()),
        rtt_source: path.rtt_source,
        bandwidth_bps: path.rate.bps(),
        bandwidth_source: path.rate_source,
        bdp_bytes: output::number(bdp::bdp_exact(path.rate, path.rtt)),
        sizing,
        current_from: backend.map(crate::platform::SysctlBackend::describe),
        settings,
        changes,
        warnings,
        notes,
        hosts,
    })
}

/// Lost probes to a host that answers: the path may drop data at random too, and the advice
/// for a loss-free path (CUBIC, 2 x BDP) is then the wrong one.
fn probe_loss_warning(h: &HostReport) -> Option<String> {
    let r = &h.measurement.rtt;
    (r.received > 0 && r.received < r.sent).then(|| {
        format!(
            "{}: {} of {} probes were lost ({:.1} %): if this path drops data at random too, CUBIC collapses on it and the buffers are too small to repair loss: use --loss-recovery (BBR, 5 x BDP)",
            h.host,
            r.sent - r.received,
            r.sent,
            r.loss_pct
        )
    })
}

/// RTT from which BBR's ProbeRTT is worth a note: its cost reaches about 5 %.
const PROBE_RTT_NOTE_MS: f64 = 300.0;

/// On long paths BBR (v1, Linux's `bbr`) costs throughput that no buffer gives back: every
/// 10 s without a lower RTT sample it drains the pipe and holds 4 packets in flight for
/// 200 ms and a round trip (tcp_bbr.c, ProbeRTT), so the receiver sees about RTT + 200 ms of
/// nothing. Measured on tcptune's lab at 600 ms / 500 Mbit/s over 60 s: BBR 90.2 %, CUBIC
/// 96.9 % of the goodput limit.
fn probe_rtt_note(cc: Option<&str>, rtt_ms: f64) -> Option<String> {
    if cc != Some("bbr") || rtt_ms < PROBE_RTT_NOTE_MS {
        return None;
    }
    let cost = (rtt_ms + 200.0) / 10_000.0 * 100.0;
    Some(format!(
        "with bbr at {} ms, ProbeRTT idles the path for about {} ms every 10 s (about {cost:.0} % of throughput), whatever the buffers; \
         on a path without random loss cubic keeps more (tcptune's lab at 600 ms: bbr 90 %, cubic 97 % of the goodput limit), on a lossy one far less: \
         choose per application (TCP_CONGESTION, iperf3 -C cubic)",
        output::ms(rtt_ms),
        output::ms(rtt_ms + 200.0)
    ))
}

/// Buffers × flows against what the kernel lets TCP use (tcp_mem, in pages of this machine's
/// size) and the RAM there is: the one budget `check` uses too ([`crate::check::memory`]).
fn memory_warnings(
    ctx: &Context,
    flows: u32,
    sizing: &Sizing,
    read: &dyn Fn(&str) -> Option<KeyState>,
    warnings: &mut Vec<String>,
) {
    let tcp_mem = (ctx.os == Os::Linux)
        .then(|| read("net.ipv4.tcp_mem").and_then(|k| k.value().map(str::to_string)))
        .flatten();
    let facts = crate::check::memory::MemoryFacts {
        tcp_mem,
        per_flow: sizing.buffer.max(sizing.send_buffer),
        flows,
        ram: if ctx.local { crate::host::ram() } else { None },
        in_use_pages: None,
        page_size: crate::host::page_size(),
    };
    let Some(b) = crate::check::memory::budget(&facts) else {
        return;
    };
    if b.exceeds_tcp_mem()
        && let Some((_, pages)) = b.tcp_mem_pages
    {
        warnings.push(format!(
            "{flows} flow(s) x {} exceed tcp_mem[2] ({pages} pages = {}): TCP memory pressure will shrink the windows; raise net.ipv4.tcp_mem or expect fewer concurrent flows",
            output::bytes(sizing.buffer),
            output::bytes(b.bytes(pages))
        ));
    }
    if b.over_quarter_of_ram()
        && let Some(ram) = b.ram
    {
        warnings.push(format!(
            "{flows} flow(s) x {} is more than a quarter of this host's RAM ({})",
            output::bytes(sizing.buffer),
            output::bytes(ram)
        ));
    }
}

/// How the receive buffer was sized, for the header lines.
fn receive_rule(s: &Sizing) -> String {
    if s.loss_recovery {
        "5 x BDP, for loss recovery".to_string()
    } else {
        format!(
            "2 x BDP for RTT {:.3} ms, +{:.1}% headroom",
            s.sizing_rtt_ms, s.headroom_pct
        )
    }
}

/// How the send buffer was sized, for the header lines.
fn send_rule(s: &Sizing) -> &'static str {
    if s.loss_recovery {
        "5 x BDP, for loss recovery"
    } else {
        "2.5 x BDP"
    }
}

fn header(out: &mut dyn Write, a: &Advice) -> std::io::Result<()> {
    writeln!(
        out,
        "# tcptune {} advice for {}, generated {}",
        a.tcptune_version, a.os, a.generated
    )?;
    let src = |s: Source| match s {
        Source::Given => "given",
        Source::Measured => "measured",
        Source::Assumed => "ASSUMED: link speed unknown",
    };
    let host = a
        .host
        .as_deref()
        .map(|h| format!(" to {}", output::comment(h)))
        .unwrap_or_default();
    writeln!(
        out,
        "# path{host}: RTT {} ms ({}), bandwidth {} ({})",
        a.rtt_ms,
        src(a.rtt_source),
        Bitrate::from_bps(a.bandwidth_bps),
        src(a.bandwidth_source)
    )?;
    writeln!(
        out,
        "# BDP {}; receive buffer {} = {}; send buffer {} = {}",
        output::bytes(a.sizing.bdp),
        output::bytes(a.sizing.buffer),
        receive_rule(&a.sizing),
        output::bytes(a.sizing.send_buffer),
        send_rule(&a.sizing)
    )?;
    match &a.current_from {
        Some(c) => writeln!(out, "# running values read from {c}")?,
        None => writeln!(
            out,
            "# running values unknown (advising for another system): compared with {} defaults",
            a.os
        )?,
    }
    for h in &a.hosts {
        let r = &h.measurement.rtt;
        writeln!(
            out,
            "# host {} ({}): rtt min/avg/max/mdev {:.3}/{:.3}/{:.3}/{:.3} ms, {} of {} answered",
            output::comment(&h.host),
            h.measurement.addr,
            r.min_ms,
            r.avg_ms,
            r.max_ms,
            r.mdev_ms,
            r.received,
            r.sent
        )?;
        if let Some(c) = &h.measurement.capacity {
            writeln!(
                out,
                "# host {}: bottleneck {}{} from packet trains ({} of {} trains of {} x {} bytes agree)",
                output::comment(&h.host),
                if c.sender_limited { "at least " } else { "" },
                output::rate(c.bps as f64),
                c.agreeing,
                c.trains,
                c.per_train,
                c.packet_bytes
            )?;
        }
    }
    for n in &a.notes {
        writeln!(out, "# note: {}", output::comment(n))?;
    }
    for w in &a.warnings {
        writeln!(out, "# warning: {}", output::comment(w))?;
    }
    Ok(())
}

fn write_sysctl(out: &mut dyn Write, a: &Advice) -> anyhow::Result<()> {
    header(out, a)?;
    // FreeBSD's rc.d/sysctl and macOS read `key=value`; Linux's sysctl -p also takes spaces.
    let sep = if a.os == Os::Linux { " = " } else { "=" };
    if a.changes == 0 {
        writeln!(
            out,
            "#\n# no change needed: the running values already meet this path's needs"
        )?;
    }
    // Profiles refuse control characters; every comment is made one line all the same, so
    // no text can end a comment and start a live line.
    let c = output::comment;
    for s in &a.settings {
        writeln!(out, "#")?;
        writeln!(out, "# {}", c(&s.reason))?;
        if let Some(n) = &s.note {
            writeln!(out, "# note: {}", c(n))?;
        }
        let (key, value) = (c(&s.key), c(&s.value));
        match (&s.action, s.stage) {
            (_, Stage::Boot) => writeln!(out, "# boot-time tunable, add to /boot/loader.conf: {key}={value}")?,
            (Action::Set, Stage::Runtime) => writeln!(out, "{key}{sep}{value}")?,
            (Action::Keep, _) => writeln!(out, "# {key}{sep}{value}  (already running: no change)")?,
            (Action::Unavailable(why), _) => writeln!(out, "# {key}{sep}{value}  (not applied: {})", c(why))?,
        }
    }
    Ok(())
}

fn write_shell(out: &mut dyn Write, a: &Advice) -> anyhow::Result<()> {
    writeln!(out, "#!/bin/sh")?;
    header(out, a)?;
    let c = output::comment;
    for s in &a.settings {
        // Quoted by the one renderer of a sysctl command: `key=value` from a profile must
        // never run as shell code.
        let line = a.os.set_command(&s.key, &s.value);
        match (&s.action, s.stage) {
            (_, Stage::Boot) => writeln!(
                out,
                "# boot-time tunable, add to /boot/loader.conf: {}={}",
                c(&s.key),
                c(&s.value)
            )?,
            (Action::Set, Stage::Runtime) => writeln!(out, "{}", c(&line))?,
            (Action::Keep, _) => writeln!(out, "# {}  # already running", c(&line))?,
            (Action::Unavailable(why), _) => writeln!(out, "# {}  # not applied: {}", c(&line), c(why))?,
        }
    }
    Ok(())
}

fn write_table(out: &mut dyn Write, a: &Advice, tty: bool, color: bool) -> anyhow::Result<()> {
    let host = a.host.as_deref().map(|h| format!(" to {h}")).unwrap_or_default();
    let assumed = if a.bandwidth_source == Source::Assumed {
        " (ASSUMED)"
    } else {
        ""
    };
    writeln!(
        out,
        "Path{host}: RTT {} ms, {}{assumed} -> BDP {}",
        a.rtt_ms,
        Bitrate::from_bps(a.bandwidth_bps),
        output::bytes(a.sizing.bdp)
    )?;
    writeln!(
        out,
        "Buffers: receive {} ({}), send {} ({}); {} change(s) for {}",
        output::bytes(a.sizing.buffer),
        receive_rule(&a.sizing),
        output::bytes(a.sizing.send_buffer),
        send_rule(&a.sizing),
        a.changes,
        a.os
    )?;
    if !a.hosts.is_empty() {
        let mut t = output::table(tty, color);
        t.set_header(output::header([
            "host",
            "address",
            "method",
            "rtt min/avg/max/mdev ms",
            "loss",
            "interface",
            "speed",
            "capacity",
            "mtu",
        ]));
        for h in &a.hosts {
            let m = &h.measurement;
            let r = &m.rtt;
            t.add_row([
                h.host.clone(),
                m.addr.to_string(),
                match &r.method {
                    crate::measure::Method::Icmp => "icmp".to_string(),
                    crate::measure::Method::TcpConnect { port } => format!("tcp/{port}"),
                },
                format!("{:.3}/{:.3}/{:.3}/{:.3}", r.min_ms, r.avg_ms, r.max_ms, r.mdev_ms),
                format!("{:.0}%", r.loss_pct),
                m.link.interface.clone().unwrap_or_else(|| "?".into()),
                m.link
                    .speed_bps
                    .map_or_else(|| "unknown".into(), |s| Bitrate::from_bps(s).to_string()),
                m.capacity.as_ref().map_or_else(
                    || "-".into(),
                    |c| {
                        format!(
                            "{}{}",
                            if c.sender_limited { ">= " } else { "" },
                            output::rate(c.bps as f64)
                        )
                    },
                ),
                m.link
                    .route_mtu
                    .or(m.link.mtu)
                    .map_or_else(|| "?".into(), |m| m.to_string()),
            ]);
        }
        writeln!(out, "{t}")?;
    }
    let mut t = output::table(tty, color);
    t.set_header(output::header(["key", "current", "recommended", "why"]));
    for s in &a.settings {
        let rec = match (&s.action, s.stage) {
            (_, Stage::Boot) => format!("{} (boot: /boot/loader.conf)", s.value),
            (Action::Set, _) => s.value.clone(),
            (Action::Keep, _) => format!("{} (no change)", s.value),
            (Action::Unavailable(why), _) => format!("{} ({why})", s.value),
        };
        let why = match &s.note {
            Some(n) => format!("{} [{n}]", s.reason),
            None => s.reason.clone(),
        };
        t.add_row([s.key.clone(), s.current.clone().unwrap_or_else(|| "?".into()), rec, why]);
    }
    writeln!(out, "{t}")?;
    for n in &a.notes {
        writeln!(out, "note: {n}")?;
    }
    for w in &a.warnings {
        writeln!(out, "warning: {w}")?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measure::fake::FakeProber;

    fn ctx() -> Context {
        Context::for_tests(std::path::Path::new("/nonexistent"))
    }

    fn args(hosts: &[&str], bandwidth: Option<&str>) -> AdviseArgs {
        use clap::Parser as _;
        let mut v = vec!["tcptune", "advise"];
        for h in hosts {
            v.extend(["--host", h]);
        }
        if let Some(b) = bandwidth {
            v.extend(["--bandwidth", b]);
        }
        match crate::cli::Cli::parse_from(v).command {
            Some(crate::cli::Command::Advise(a)) => a,
            _ => unreachable!("advise"),
        }
    }

    #[test]
    fn measured_rtt_and_link_speed_feed_the_model() {
        let p = FakeProber {
            rtt_ms: 150.0,
            speed_bps: Some(500_000_000),
            capacity_bps: Some(500_000_000),
        };
        let a = advise(&args(&["peer.example"], None), &ctx(), &p).expect("advice");
        assert_eq!(a.rtt_source, Source::Measured);
        assert_eq!(a.bandwidth_source, Source::Measured);
        assert_eq!(a.bdp_bytes, serde_json::json!(9_375_000));
        assert_eq!(a.sizing.buffer, 20_643_840);
        assert_eq!(a.hosts.len(), 1);
    }

    #[test]
    fn lost_probes_point_to_loss_recovery() {
        let p = FakeProber {
            rtt_ms: 150.0,
            speed_bps: Some(500_000_000),
            capacity_bps: None,
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
        // A TUN or virtio link (no speed) behind a 50 Mbit/s bottleneck.
        let p = FakeProber {
            rtt_ms: 40.0,
            speed_bps: None,
            capacity_bps: Some(50_000_000),
        };
        let a = advise(&args(&["198.18.0.2"], None), &ctx(), &p).expect("advice");
        assert_eq!((a.bandwidth_bps, a.bandwidth_source), (50_000_000, Source::Measured));
        assert_eq!(a.bdp_bytes, serde_json::json!(250_000));
        assert_eq!(
            a.notes[0],
            "198.18.0.2: bottleneck rate from packet trains: 50 Mbit/s (5 of 5 trains of 48 x 1500 bytes agree within 10 %)"
        );
        let json = serde_json::to_value(&a).expect("json");
        assert_eq!(json["hosts"][0]["measurement"]["capacity"]["bps"], 50_000_000);

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
        no.no_capacity = true;
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
        };
        let e = advise(&args(&["198.18.0.9"], None), &ctx(), &p).expect_err("unreachable");
        let e = e.downcast_ref::<Error>().expect("typed");
        assert_eq!(e.exit_code(), 4);
        let p = FakeProber {
            rtt_ms: 10.0,
            speed_bps: None,
            capacity_bps: None,
        };
        let e = advise(&args(&["nonexistent.invalid"], None), &ctx(), &p).expect_err("unresolvable");
        assert_eq!(e.downcast_ref::<Error>().expect("typed").exit_code(), 4);
    }
}
