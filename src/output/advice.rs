//! The advice rendered: sysctl file, shell script, table (JSON is [`super::json`] of
//! [`Advice`] itself). Every comment line goes through [`crate::text::comment`], so no text from a
//! profile or a host name can end a comment and start a live line.

use std::io::Write;

use crate::advice::{Advice, HostReport};
use crate::bdp::Sizing;
use crate::bdp::Source;
use crate::os::Os;
use crate::persist::DropIn;
use crate::profile::{Action, Setting, Stage};
use crate::units::Bitrate;

/// "5 x BDP", "6 x BDP": a loss factor as the header writes it.
fn times(f: f64) -> String {
    if f.fract() == 0.0 {
        format!("{f:.0} x BDP")
    } else {
        format!("{f:.1} x BDP")
    }
}

/// How the receive buffer was sized, for the header lines.
fn receive_rule(s: &Sizing) -> String {
    if s.receive_loss_recovery {
        format!("{}, for loss recovery", times(s.receive_factor))
    } else {
        format!(
            "2 x BDP for RTT {:.3} ms, +{:.1}% headroom",
            s.sizing_rtt_ms, s.headroom_pct
        )
    }
}

/// How the send buffer was sized, for the header lines.
fn send_rule(s: &Sizing) -> String {
    if s.loss_recovery {
        format!("{}, for loss recovery", times(s.send_factor))
    } else {
        "2.5 x BDP".to_string()
    }
}

pub(crate) fn header(out: &mut dyn Write, a: &Advice) -> std::io::Result<()> {
    for line in header_lines(a) {
        writeln!(out, "# {line}")?;
    }
    Ok(())
}

/// The header's lines, without their `# `: the advice's identity, its path and sizing, where
/// the running values came from, each host measured, and the notes and warnings (text from
/// outside made safe for a comment).
pub(crate) fn header_lines(a: &Advice) -> Vec<String> {
    use crate::text::{bytes, comment};
    let src = |s: Source| match s {
        Source::Given => "given",
        Source::Measured => "measured",
        Source::Assumed => "ASSUMED: link speed unknown",
    };
    let host = a
        .host
        .as_deref()
        .map(|h| format!(" to {}", comment(h)))
        .unwrap_or_default();
    let mut lines = vec![
        format!(
            "tcptune {} advice for {}, generated {}",
            a.tcptune_version, a.os, a.generated
        ),
        format!(
            "path{host}: RTT {} ms ({}), bandwidth {} ({})",
            a.rtt_ms,
            src(a.rtt_source),
            Bitrate::from_bps(a.bandwidth_bps),
            src(a.bandwidth_source)
        ),
        format!(
            "BDP {}; receive buffer {} = {}; send buffer {} = {}",
            bytes(a.sizing.bdp),
            bytes(a.sizing.buffer),
            receive_rule(&a.sizing),
            bytes(a.sizing.send_buffer),
            send_rule(&a.sizing)
        ),
        match &a.current_from {
            Some(c) => format!("running values read from {c}"),
            None => format!(
                "running values unknown (advising for another system): compared with {} defaults",
                a.os
            ),
        },
    ];
    for h in &a.hosts {
        lines.extend(host_lines(h));
    }
    lines.extend(a.notes.iter().map(|n| format!("note: {}", comment(n))));
    lines.extend(a.warnings.iter().map(|w| format!("warning: {}", comment(w))));
    lines
}

/// One measured host: its round trips, and the packet trains' reading.
fn host_lines(h: &crate::advice::HostReport) -> Vec<String> {
    let name = crate::text::comment(&h.host);
    let r = &h.measurement.rtt;
    let mut lines = vec![format!(
        "host {name} ({}): rtt min/avg/max/mdev {:.3}/{:.3}/{:.3}/{:.3} ms, {} of {} answered",
        h.measurement.addr, r.min_ms, r.avg_ms, r.max_ms, r.mdev_ms, r.received, r.sent
    )];
    if let Some(c) = &h.measurement.capacity {
        #[allow(clippy::cast_precision_loss)]
        lines.push(format!(
            "host {name}: bottleneck {}{} from packet trains ({} of {} trains of {} x {} bytes agree)",
            if c.sender_limited { "at least " } else { "" },
            crate::text::rate(c.bps as f64),
            c.agreeing,
            c.trains,
            c.per_train,
            c.packet_bytes
        ));
    }
    lines
}

/// Where a drop-in lives on the target, whatever root it was chosen under.
pub fn dropin_file(d: &DropIn) -> String {
    format!("/etc/sysctl.d/{}", d.name)
}

/// The drop-in lines of the sysctl format: where to save it, why that number, what would win
/// and which installed files could not be checked.
fn dropin_lines(out: &mut dyn Write, d: &DropIn) -> std::io::Result<()> {
    let c = crate::text::comment;
    let file = dropin_file(d);
    writeln!(out, "# save as {file} ({}); load it now: sysctl -p {file}", c(&d.why))?;
    for w in d.warnings() {
        writeln!(out, "# warning: {}", c(&w))?;
    }
    Ok(())
}

/// The advice as JSON, with the sysctl.d drop-in (Linux) as `sysctl_d`: its file, why that
/// number, the lines that win over it, and the files not checked (`{file, why}` each).
pub fn write_json(
    out: &mut dyn Write,
    a: &Advice,
    dropin: Option<&DropIn>,
    far: Option<&Advice>,
) -> anyhow::Result<()> {
    let mut v = serde_json::to_value(a)?;
    if let (Some(f), Some(map)) = (far, v.as_object_mut()) {
        map.insert("far_end".into(), serde_json::to_value(f)?);
    }
    if let (Some(d), Some(map)) = (dropin, v.as_object_mut()) {
        map.insert(
            "sysctl_d".into(),
            serde_json::json!({
                "file": dropin_file(d),
                "why": d.why,
                "overridden_by": d.overridden_by,
                "unchecked": d.unchecked,
            }),
        );
    }
    super::json(out, &v)
}

/// `key = value` lines and `#` comments: valid for /etc/sysctl.d (Linux) or /etc/sysctl.conf.
pub fn write_sysctl(out: &mut dyn Write, a: &Advice, dropin: Option<&DropIn>) -> anyhow::Result<()> {
    header(out, a)?;
    if let Some(d) = dropin {
        dropin_lines(out, d)?;
    }
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
    let c = crate::text::comment;
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

/// A `#!/bin/sh` script of sysctl commands, each quoted by [`Os::set_command`].
pub fn write_shell(out: &mut dyn Write, a: &Advice) -> anyhow::Result<()> {
    writeln!(out, "#!/bin/sh")?;
    header(out, a)?;
    let c = crate::text::comment;
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

/// The path, the buffers, the measured hosts and the settings, for people.
pub fn write_table(
    out: &mut dyn Write,
    a: &Advice,
    dropin: Option<&DropIn>,
    tty: bool,
    color: bool,
) -> anyhow::Result<()> {
    table_summary(out, a)?;
    if !a.hosts.is_empty() {
        let mut t = super::table(tty, color);
        t.set_header(super::header([
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
            t.add_row(host_row(h));
        }
        writeln!(out, "{t}")?;
    }
    let mut t = super::table(tty, color);
    t.set_header(super::header(["key", "current", "recommended", "why"]));
    for s in &a.settings {
        t.add_row(setting_row(s));
    }
    writeln!(out, "{t}")?;
    table_trailer(out, a, dropin)?;
    Ok(())
}

/// The far end's block below this host's table (`advise --ssh`): its buffers, its settings
/// beside its running values, and what it alone has to say.
pub fn write_far_table(out: &mut dyn Write, far: &Advice, who: &str, tty: bool, color: bool) -> anyhow::Result<()> {
    writeln!(out)?;
    writeln!(
        out,
        "Far end {} ({}, running values from {}):",
        crate::text::escape(who),
        far.os,
        far.current_from.as_deref().unwrap_or("nowhere")
    )?;
    table_summary(out, far)?;
    let mut t = super::table(tty, color);
    t.set_header(super::header(["key", "current", "recommended", "why"]));
    for s in &far.settings {
        t.add_row(setting_row(s));
    }
    writeln!(out, "{t}")?;
    table_trailer(out, far, None)?;
    Ok(())
}

/// The two lines above the tables: the path and the buffers sized for it.
fn table_summary(out: &mut dyn Write, a: &Advice) -> std::io::Result<()> {
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
        crate::text::bytes(a.sizing.bdp)
    )?;
    writeln!(
        out,
        "Buffers: receive {} ({}), send {} ({}); {} change(s) for {}",
        crate::text::bytes(a.sizing.buffer),
        receive_rule(&a.sizing),
        crate::text::bytes(a.sizing.send_buffer),
        send_rule(&a.sizing),
        a.changes,
        a.os
    )
}

/// One measured host, in the columns of the hosts table.
fn host_row(h: &HostReport) -> [String; 9] {
    let m = &h.measurement;
    let r = &m.rtt;
    [
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
                    crate::text::rate(c.bps as f64)
                )
            },
        ),
        m.link
            .route_mtu
            .or(m.link.mtu)
            .map_or_else(|| "?".into(), |m| m.to_string()),
    ]
}

/// One setting, in the columns of the settings table.
fn setting_row(s: &Setting) -> [String; 4] {
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
    [s.key.clone(), s.current.clone().unwrap_or_else(|| "?".into()), rec, why]
}

/// The lines below the tables: notes, warnings, and where to keep the settings.
fn table_trailer(out: &mut dyn Write, a: &Advice, dropin: Option<&DropIn>) -> std::io::Result<()> {
    for n in &a.notes {
        writeln!(out, "note: {n}")?;
    }
    for w in &a.warnings {
        writeln!(out, "warning: {w}")?;
    }
    if let Some(d) = dropin {
        writeln!(out, "keep it: {} ({})", dropin_file(d), d.why)?;
        for w in d.warnings() {
            writeln!(out, "warning: {w}")?;
        }
    }
    Ok(())
}
