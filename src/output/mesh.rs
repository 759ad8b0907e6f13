//! `tcptune mesh` for people, programs and files: the plan, the matrix of paths and each
//! host's changes; the JSON with every pair's whole evidence; one sysctl.d file per host with
//! its route lines. The playbook is [`super::ansible::write_mesh`]'s.

use std::io::Write;
use std::time::Duration;

use crate::advice::mesh::{Decider, HostAdvice, HostSetting, MeshPath};
use crate::profile::{Action, Stage};
use crate::text;

/// What the run will do: its hosts, its ordered pairs, about how long a pair takes.
#[derive(Debug, Clone)]
pub struct Plan {
    pub hosts: Vec<String>,
    pub pairs: Vec<(String, String)>,
    pub per_pair: Duration,
}

/// One ordered pair and what came of it: the path, the test end's whole advice (JSON), how
/// long it took; or why it was not measured.
pub struct Pair {
    pub from: String,
    pub to: String,
    pub run: Result<(MeshPath, serde_json::Value, Duration), String>,
}

/// The whole run.
pub struct Mesh<'a> {
    pub plan: &'a Plan,
    pub pairs: &'a [Pair],
    pub hosts: &'a [HostAdvice],
}

/// "about 3 min", "about 40 s".
fn about(d: Duration) -> String {
    let s = d.as_secs();
    if s < 90 {
        format!("about {s} s")
    } else {
        format!("about {} min", s.div_ceil(60))
    }
}

/// The plan, up front: how many pairs, how long, what runs on each host. `dry`: the whole of
/// `--dry-run`'s answer (on stdout); else the first lines of a run (on stderr).
pub fn write_plan(out: &mut dyn Write, p: &Plan, dry: bool) -> std::io::Result<()> {
    let total = p.per_pair * u32::try_from(p.pairs.len()).unwrap_or(u32::MAX);
    writeln!(
        out,
        "tcptune mesh: {} hosts, {} pair{}, one test at a time, {}{}",
        p.hosts.len(),
        p.pairs.len(),
        if p.pairs.len() == 1 { "" } else { "s" },
        about(total),
        if dry { " (dry run: nothing is measured)" } else { "" }
    )?;
    if !dry {
        return Ok(());
    }
    for h in &p.hosts {
        let tests: Vec<&str> = p
            .pairs
            .iter()
            .filter(|(a, _)| a == h)
            .map(|(_, b)| b.as_str())
            .collect();
        let peers: Vec<&str> = p
            .pairs
            .iter()
            .filter(|(_, b)| b == h)
            .map(|(a, _)| a.as_str())
            .collect();
        writeln!(out, "  {h}:")?;
        if tests.is_empty() {
            writeln!(out, "    runs no test")?;
        } else {
            writeln!(
                out,
                "    tests to {}: tcptune advise --scope path, one ssh session each",
                tests.join(", ")
            )?;
        }
        if peers.is_empty() {
            writeln!(out, "    is no one's peer")?;
        } else {
            writeln!(
                out,
                "    peer for {}: tcptune peer, one ssh session each",
                peers.join(", ")
            )?;
        }
    }
    writeln!(out, "pairs, in order:")?;
    for (i, (a, b)) in p.pairs.iter().enumerate() {
        writeln!(out, "  {}. {a} \u{2192} {b}: the peer on {b}, the test on {a}", i + 1)?;
    }
    writeln!(
        out,
        "Each session runs tcptune there (this version, else a copy of this binary sent over it) and \
         leaves nothing behind."
    )
}

/// A decider as people read it: "h3, 150 ms, 100 Mbit/s, lossy (0.01 % loss)".
pub fn decider_words(d: &Decider) -> String {
    let loss = d
        .loss_pct
        .filter(|l| *l > 0.0)
        .map(|l| format!(" ({} % loss)", text::sig(l, 3)))
        .unwrap_or_default();
    format!(
        "{}, {} ms, {}, {}{loss}",
        d.to,
        text::sig(d.rtt_ms, 4),
        text::rate(d.rate_bps as f64),
        d.class.escaped()
    )
}

/// A value as people read it, by how the path said it reads.
fn shown(s: &HostSetting, v: &str) -> String {
    let last = v.split_whitespace().last().and_then(|n| n.parse::<u64>().ok());
    match (s.shown.as_ref().map(|x| x.raw()), last) {
        (Some("size" | "max-size"), Some(n)) => text::size(n),
        (Some("switch"), Some(0)) => "off".into(),
        (Some("switch"), Some(_)) => "on".into(),
        _ => text::escape(v),
    }
}

/// "receive max 6 MiB → 8.94 MiB: 5 × BDP, loss recovery; to h3, 150 ms, ..." — a setting's
/// one line, naming the path that decided it.
pub fn setting_line(s: &HostSetting) -> String {
    let new = shown(s, &s.value);
    let change = match (&s.action, &s.current) {
        (Action::Keep, _) => format!("{new}, already running"),
        (Action::Set, Some(c)) => format!("{} \u{2192} {new}", shown(s, c)),
        (Action::Set, None) => format!("\u{2192} {new}"),
        (Action::Unavailable(why), _) => format!("{new}, not settable there ({})", text::escape(why)),
    };
    let by = s
        .decided_by
        .as_ref()
        .map_or_else(|| "; every path".to_string(), |d| format!("; to {}", decider_words(d)));
    format!("{} {change}: {}{by}", s.label.escaped(), s.why.escaped())
}

pub fn route_comment(r: &crate::advice::mesh::HostRoute) -> String {
    let change = match (&r.action, &r.current) {
        (Action::Keep, _) => format!("{}, already running", r.algorithm),
        (_, Some(c)) => format!("{c} \u{2192} {}", r.algorithm),
        (_, None) => format!("\u{2192} {}", r.algorithm),
    };
    format!(
        "congestion control to {} ({}) {change}: {}; to {}",
        r.to,
        r.dest,
        r.why.escaped(),
        decider_words(&r.decided_by)
    )
}

/// The matrix (each pair, both directions) and each host's changes.
pub fn write_table(out: &mut dyn Write, m: &Mesh<'_>) -> std::io::Result<()> {
    let ok = m.pairs.iter().filter(|p| p.run.is_ok()).count();
    let took: Duration = m.pairs.iter().filter_map(|p| p.run.as_ref().ok().map(|r| r.2)).sum();
    writeln!(
        out,
        "tcptune mesh: {} hosts, {ok} of {} pairs measured in {:.0} s",
        m.plan.hosts.len(),
        m.pairs.len(),
        took.as_secs_f64()
    )?;
    writeln!(out)?;
    let rows: Vec<[String; 6]> = m
        .pairs
        .iter()
        .filter_map(|p| {
            let name = format!("{} \u{2192} {}", p.from, p.to);
            let (path, _, _) = p.run.as_ref().ok()?;
            let r = &path.report;
            Some([
                name,
                format!("{} ms", text::sig(r.rtt_ms, 4)),
                text::rate(r.bandwidth_bps as f64),
                r.decision.class.escaped(),
                text::rate(r.receive_bandwidth_bps.unwrap_or(r.bandwidth_bps) as f64),
                r.receive_decision.class.escaped(),
            ])
        })
        .collect();
    let head = ["path", "RTT", "sends", "class", "receives", "class"].map(String::from);
    let widths: Vec<usize> = (0..6)
        .map(|i| {
            rows.iter()
                .chain([&head])
                .map(|r| r[i].chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect();
    for r in [&head].into_iter().chain(rows.iter()) {
        let cells: Vec<String> = r.iter().zip(&widths).map(|(c, w)| format!("{c:<w$}")).collect();
        writeln!(out, "  {}", cells.join("  ").trim_end())?;
    }
    for p in m.pairs {
        if let Err(why) = &p.run {
            writeln!(
                out,
                "  {} \u{2192} {}: not measured: {}",
                p.from,
                p.to,
                text::escape(why)
            )?;
        }
    }
    for h in m.hosts {
        writeln!(out)?;
        writeln!(
            out,
            "{}: {} to change (from its paths to {}; largest BDP to {})",
            h.host,
            h.changes(),
            h.paths.join(", "),
            decider_words(&h.largest)
        )?;
        for s in h.settings.iter().filter(|s| s.stage == Stage::Runtime) {
            let mark = if s.action == Action::Set { "*" } else { " " };
            writeln!(out, "  {mark} {}", setting_line(s))?;
        }
        for r in &h.routes {
            let mark = if r.action == Action::Set { "*" } else { " " };
            writeln!(out, "  {mark} {}", route_comment(r))?;
        }
    }
    writeln!(out)?;
    writeln!(
        out,
        "* a change. Keep it: --output DIR (one sysctl.d file per host, routes as `# route:` lines that \
         `tcptune apply FILE` sets), or --format ansible"
    )
}

/// One host's sysctl.d file: a header, then per setting its comment line and `key = value`
/// (commented out where it runs already), then its route lines.
pub fn write_sysctl(out: &mut dyn Write, h: &HostAdvice) -> std::io::Result<()> {
    let c = |s: &str| text::comment(s);
    let wrap = |s: &str| super::advice::summary::wrap(&c(s), 100, "# ", "#   ");
    let mut head = vec![
        format!(
            "tcptune {} mesh advice for {} ({}), from its paths to {}",
            env!("CARGO_PKG_VERSION"),
            h.host,
            h.os,
            h.paths.join(", ")
        ),
        format!("largest BDP: to {}: buffer maxima cover it", decider_words(&h.largest)),
        format!(
            "{} to change, against the values {} ran when measured",
            h.changes(),
            h.host
        ),
        format!(
            "save as /etc/sysctl.d/60-tcptune.conf on {}, or: tcptune apply {}.conf (sets its routes too)",
            h.host, h.host
        ),
    ];
    for (key, asked) in &h.disagreements {
        let each: Vec<String> = asked.iter().map(|(to, v)| format!("{to} {v}")).collect();
        head.push(format!(
            "paths disagree on {key} ({}): the largest BDP's is kept",
            each.join(", ")
        ));
    }
    for l in head {
        for w in wrap(&l) {
            writeln!(out, "{w}")?;
        }
    }
    for s in &h.settings {
        writeln!(out)?;
        for w in wrap(&setting_line(s)) {
            writeln!(out, "{w}")?;
        }
        let line = format!("{} = {}", s.key, s.value);
        match (&s.action, s.stage) {
            (Action::Set, Stage::Runtime) => writeln!(out, "{line}")?,
            _ => writeln!(out, "# {line}")?,
        }
    }
    for r in &h.routes {
        writeln!(out)?;
        for w in wrap(&route_comment(r)) {
            writeln!(out, "{w}")?;
        }
        writeln!(
            out,
            "{}{}",
            crate::route::LINE_MARK,
            crate::route::command("replace", &r.route)
        )?;
    }
    Ok(())
}

/// Every pair with its test end's whole advice (full precision), and each host's advice.
pub fn write_json(out: &mut dyn Write, m: &Mesh<'_>) -> std::io::Result<()> {
    let pairs: Vec<serde_json::Value> = m
        .pairs
        .iter()
        .map(|p| match &p.run {
            Ok((path, json, took)) => serde_json::json!({
                "from": p.from, "to": p.to, "addr": path.addr, "measured": true,
                "took_s": took.as_secs_f64(), "advice": json,
            }),
            Err(why) => serde_json::json!({"from": p.from, "to": p.to, "measured": false, "why": why}),
        })
        .collect();
    let hosts: Vec<serde_json::Value> = m
        .hosts
        .iter()
        .map(|h| {
            let mut v = serde_json::to_value(h).unwrap_or_default();
            v["changes"] = h.changes().into();
            v["routes_command"] = h
                .routes
                .iter()
                .map(|r| crate::route::command("replace", &r.route))
                .collect::<Vec<_>>()
                .into();
            v
        })
        .collect();
    let doc = serde_json::json!({
        "tcptune_version": env!("CARGO_PKG_VERSION"),
        "hosts": m.plan.hosts,
        "pairs": pairs,
        "advice": hosts,
    });
    serde_json::to_writer_pretty(&mut *out, &doc)?;
    writeln!(out)
}
