//! `tcptune mesh` for people, programs and files: the plan, the matrix of paths and each
//! host's changes; the JSON with every pair's whole evidence; one sysctl.d file per host with
//! its route lines. The playbook is [`super::ansible::write_mesh`]'s.

use std::io::Write;
use std::path::Path;
use std::time::Duration;

use crate::advice::decide::PathClass;
use crate::advice::mesh::{Decider, HostAdvice, HostSetting, MeshPath};
use crate::profile::{Action, Stage};
use crate::text;

/// What the run will do: its hosts, its tests (one a pair: both directions, the first host runs
/// it), their rounds, about how long a test takes.
#[derive(Debug, Clone)]
pub struct Plan {
    pub hosts: Vec<String>,
    pub tests: Vec<(String, String)>,
    /// Indexes into `tests`, each round's at once; a test taken from the state is in none.
    pub rounds: Vec<Vec<usize>>,
    /// Host → site (empty: none given).
    pub sites: std::collections::BTreeMap<String, String>,
    /// At most this many tests at once.
    pub parallel: usize,
    pub per_test: Duration,
    /// The tests taken from the state (`--resume`), indexes into `tests`.
    pub saved: Vec<usize>,
}

impl Plan {
    /// About how long the run takes: a test's time per round.
    pub fn estimate(&self) -> Duration {
        self.per_test * u32::try_from(self.rounds.len()).unwrap_or(u32::MAX)
    }

    /// The most tests of any round.
    pub fn widest(&self) -> usize {
        self.rounds.iter().map(Vec::len).max().unwrap_or(0)
    }
}

/// One path (an ordered pair) and what came of it: the path with the advice made here from its
/// test's evidence, how long that test took; or why it was not measured.
pub struct Pair {
    pub from: String,
    pub to: String,
    pub run: Result<(MeshPath, Duration), String>,
    /// The round its test ran in (from 1); 0: taken from the state.
    pub round: usize,
    /// Taken from the state: how old its test was, seconds.
    pub age_s: Option<u64>,
}

/// The whole run.
pub struct Mesh<'a> {
    pub plan: &'a Plan,
    pub pairs: &'a [Pair],
    pub hosts: &'a [HostAdvice],
    /// `--output DIR`: where each host's file was written already.
    pub written: Option<&'a Path>,
    /// The columns a line may take (the terminal's, at most 80; piped, at most 100).
    pub width: usize,
}

/// A path's class in one word, as the pair lines say it.
pub fn class_word(c: PathClass) -> &'static str {
    match c {
        PathClass::Clean => "clean",
        PathClass::Lossy => "lossy",
        PathClass::Shallow => "shallow",
        PathClass::Unmeasured => "unmeasured",
        PathClass::Shared => "shared",
        PathClass::Policed => "policed",
    }
}

/// The longest run the plan gives without saying how to cut it.
pub const LONG_RUN: Duration = Duration::from_secs(3600);

/// "about 3 min", "about 40 s", "about 2.6 h".
fn about(d: Duration) -> String {
    let s = d.as_secs();
    if s < 90 {
        format!("about {s} s")
    } else if s < 5400 {
        format!("about {} min", s.div_ceil(60))
    } else {
        format!("about {} h", text::sig(d.as_secs_f64() / 3600.0, 2))
    }
}

/// The plan, up front: how many tests, in how many rounds, how long, what runs on each host.
/// `dry`: the whole of `--dry-run`'s answer (on stdout); else the first lines of a run (on
/// stderr).
pub fn write_plan(out: &mut dyn Write, p: &Plan, dry: bool) -> std::io::Result<()> {
    let to_run = p.tests.len() - p.saved.len();
    let at_once = if p.widest() <= 1 {
        "one at a time".to_string()
    } else {
        format!("up to {} at once", p.widest())
    };
    writeln!(
        out,
        "tcptune mesh: {} hosts, {}, {at_once}, {}{}",
        p.hosts.len(),
        tests_in_rounds(to_run, p.rounds.len()),
        about(p.estimate()),
        if dry { "\n  dry run: nothing is measured" } else { "" }
    )?;
    if !p.saved.is_empty() {
        let n = p.saved.len();
        writeln!(
            out,
            "  {n} test{} taken from the state (--resume)",
            if n == 1 { "" } else { "s" }
        )?;
    }
    if p.sites.is_empty() && p.parallel == 1 && p.tests.len() > 1 {
        writeln!(
            out,
            "  one at a time: name the sites (--site, --site-groups) to run more at once"
        )?;
    } else if p.sites.is_empty() && p.parallel > 1 {
        writeln!(
            out,
            "  no sites given: tests that share no host run at once, taken to share no link"
        )?;
    }
    if p.estimate() > LONG_RUN {
        writeln!(
            out,
            "  over an hour: cut it with --pairs or --group, or name the sites (--site)"
        )?;
    }
    if !dry {
        return Ok(());
    }
    for h in &p.hosts {
        let with = |first: bool| -> Vec<&str> {
            p.tests
                .iter()
                .filter(|(a, b)| if first { a == h } else { b == h })
                .map(|(a, b)| if first { b.as_str() } else { a.as_str() })
                .collect()
        };
        let (tests, peers) = (with(true), with(false));
        let site = p.sites.get(h).map(|s| format!(" (site {s})")).unwrap_or_default();
        writeln!(out, "  {h}{site}:")?;
        if !tests.is_empty() {
            writeln!(
                out,
                "    tests with {}: tcptune evidence, one ssh session each",
                tests.join(", ")
            )?;
        }
        if !peers.is_empty() {
            writeln!(
                out,
                "    peer for {}: tcptune peer on its address, one ssh session each",
                peers.join(", ")
            )?;
        }
    }
    writeln!(
        out,
        "rounds (the test on the first host, the peer on the second; both ways):"
    )?;
    for (r, round) in p.rounds.iter().enumerate() {
        let names: Vec<String> = round
            .iter()
            .map(|&i| format!("{} \u{2194} {}", p.tests[i].0, p.tests[i].1))
            .collect();
        writeln!(out, "  {}. {}", r + 1, names.join(", "))?;
    }
    writeln!(
        out,
        "Each session runs tcptune there (this version, else a copy of this binary sent\n\
         over it), for one test, and leaves nothing behind. The hosts send what they\n\
         measure; this host computes every setting and route."
    )
}

/// "15 tests in 9 rounds", "1 test in 1 round".
fn tests_in_rounds(tests: usize, rounds: usize) -> String {
    let s = |n: usize| if n == 1 { "" } else { "s" };
    format!("{tests} test{} in {rounds} round{}", s(tests), s(rounds))
}

/// A test as it ends, one line: both directions' RTT, rate and class, how long it took.
pub fn test_line(a: &str, b: &str, r: &Result<(MeshPath, Option<MeshPath>, Duration), String>) -> String {
    match r {
        Err(why) => format!("{a} \u{2194} {b}: not measured: {}", text::escape(why)),
        Ok((there, _, took)) => {
            let x = &there.advice;
            format!(
                "{a} \u{2194} {b}: {} ms, {a} sends {} {}, receives {} {} ({:.0} s)",
                text::sig(x.rtt_ms, 4),
                text::rate(x.bandwidth_bps as f64),
                class_word(x.decision.class),
                text::rate(x.receive_bandwidth_bps.unwrap_or(x.bandwidth_bps) as f64),
                class_word(x.receive_decision.class),
                took.as_secs_f64()
            )
        }
    }
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
        class_word(d.class)
    )
}

/// "receive max 6 MiB → 8.94 MiB: 5 × BDP, loss recovery; to h3, 150 ms, ..." — a setting's
/// one line, naming the path that decided it.
pub fn setting_line(h: &HostSetting) -> String {
    let s = &h.setting;
    let c = s.change();
    let change = match &s.action {
        Action::Keep => format!("{}, already running", c.to),
        Action::Set => crate::profile::Change { pct: None, ..c }.words(""),
        Action::Unavailable(why) => format!("{}, not settable there ({})", c.to, text::escape(why)),
    };
    let by = h
        .decided_by
        .as_ref()
        .map_or_else(|| "; every path".to_string(), |d| format!("; to {}", decider_words(d)));
    format!("{} {change}: {}{by}", s.label, s.why)
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
        r.why,
        decider_words(&r.decided_by)
    )
}

/// The matrix (each pair, both directions) and each host's changes.
pub fn write_table(out: &mut dyn Write, m: &Mesh<'_>) -> std::io::Result<()> {
    let ok = m.pairs.iter().filter(|p| p.run.is_ok()).count();
    let saved = m.pairs.iter().filter(|p| p.run.is_ok() && p.age_s.is_some()).count();
    writeln!(
        out,
        "tcptune mesh: {} hosts, {ok} of {} paths measured ({}{})",
        m.plan.hosts.len(),
        m.pairs.len(),
        tests_in_rounds(m.plan.tests.len() - m.plan.saved.len(), m.plan.rounds.len()),
        if saved > 0 {
            format!("; {saved} paths from the state")
        } else {
            String::new()
        }
    )?;
    writeln!(out)?;
    let rows: Vec<[String; 6]> = m
        .pairs
        .iter()
        .filter_map(|p| {
            let name = format!("{} \u{2192} {}", p.from, p.to);
            let (path, _) = p.run.as_ref().ok()?;
            let r = &path.advice;
            Some([
                name,
                format!("{} ms", text::sig(r.rtt_ms, 4)),
                text::rate(r.bandwidth_bps as f64),
                class_word(r.decision.class).to_string(),
                text::rate(r.receive_bandwidth_bps.unwrap_or(r.bandwidth_bps) as f64),
                class_word(r.receive_decision.class).to_string(),
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
    let put = |out: &mut dyn Write, first: &str, text: &str| put_wrapped(out, m.width, first, text);
    for h in m.hosts {
        writeln!(out)?;
        put(
            out,
            "",
            &format!(
                "{}: {} to change (from its paths to {}; largest BDP to {})",
                h.host,
                h.changes(),
                h.paths.join(", "),
                decider_words(&h.largest)
            ),
        )?;
        for s in h.settings.iter().filter(|s| s.setting.stage == Stage::Runtime) {
            let mark = if s.setting.action == Action::Set { "*" } else { " " };
            put(out, &format!("  {mark} "), &setting_line(s))?;
        }
        for r in &h.routes {
            let mark = if r.action == Action::Set { "*" } else { " " };
            put(out, &format!("  {mark} "), &route_comment(r))?;
        }
        for n in &h.notes {
            put(out, "    note: ", &text::escape(n))?;
        }
    }
    writeln!(out)?;
    match m.written {
        Some(dir) => put(
            out,
            "",
            &format!(
                "* a change. Each host's file is {}/HOST.conf: tcptune apply HOST.conf there (sets its routes too)",
                text::escape(&dir.display().to_string())
            ),
        ),
        None => put(
            out,
            "",
            "* a change. Keep it: --output DIR (a sysctl.d file per host) or --format ansible",
        ),
    }
}

/// `text` after `first`, in lines of at most `width` columns broken between words; the
/// continuations start under the text, two further in.
fn put_wrapped(out: &mut dyn Write, width: usize, first: &str, text: &str) -> std::io::Result<()> {
    let lead = first.chars().count();
    for (i, l) in super::check::wrap(text, width.saturating_sub(lead), "  ")
        .iter()
        .enumerate()
    {
        if i == 0 {
            writeln!(out, "{first}{l}")?;
        } else {
            writeln!(out, "{}{l}", " ".repeat(lead))?;
        }
    }
    Ok(())
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
    for n in &h.notes {
        head.push(n.clone());
    }
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
    for h_s in &h.settings {
        let s = &h_s.setting;
        writeln!(out)?;
        for w in wrap(&setting_line(h_s)) {
            writeln!(out, "{w}")?;
        }
        let line = format!(
            "{} = {}",
            s.key,
            crate::sysctl::file::normalize_value(&s.value).map_err(std::io::Error::other)?
        );
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
            Ok((path, took)) => serde_json::json!({
                "from": p.from, "to": p.to, "addr": path.addr, "measured": true,
                "round": p.round, "saved_age_s": p.age_s,
                "took_s": took.as_secs_f64(), "advice": super::advice::advice_json(&path.advice),
            }),
            Err(why) => {
                serde_json::json!({"from": p.from, "to": p.to, "measured": false, "round": p.round, "why": why})
            }
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
        "sites": m.plan.sites,
        "rounds": m.plan.rounds.iter().map(|r| r.iter().map(|&i| [&m.plan.tests[i].0, &m.plan.tests[i].1]).collect::<Vec<_>>()).collect::<Vec<_>>(),
        "pairs": pairs,
        "advice": hosts,
    });
    serde_json::to_writer_pretty(&mut *out, &doc)?;
    writeln!(out)
}

/// `--output DIR`: DIR/HOST.conf per host, each written atomically where root could trust it.
pub fn write_files(dir: &Path, advice: &[HostAdvice]) -> Result<(), crate::error::Error> {
    for h in advice {
        let file = dir.join(format!("{}.conf", h.host));
        let mut text = Vec::new();
        write_sysctl(&mut text, h)
            .map_err(|e| crate::error::Error::system(format!("cannot render {}: {e}", file.display())))?;
        crate::fsutil::check_trusted_parent(&file, "--output")?;
        crate::snapshot::write_atomic(&file, &text, 0o644)
            .map_err(|e| crate::error::Error::system(format!("cannot write {}: {e}", file.display())))?;
        eprintln!("tcptune: wrote {}", file.display());
    }
    Ok(())
}

/// `--output DIR`: an existing directory root could trust, where no HOST.conf to be written
/// is a directory (a real run finds it before it measures, and so does `--dry-run`).
pub fn check_output(dir: &Path, hosts: &[String]) -> Result<(), crate::error::Error> {
    if !dir.is_dir() {
        return Err(crate::error::Error::usage(format!(
            "--output {}: not a directory (mesh writes one file per host there)",
            dir.display()
        )));
    }
    crate::fsutil::check_trusted_dir(dir, "--output directory")?;
    for h in hosts {
        let file = dir.join(format!("{h}.conf"));
        if std::fs::symlink_metadata(&file).is_ok_and(|m| m.is_dir()) {
            return Err(crate::error::Error::usage(format!(
                "--output: {} is a directory: mesh writes a file there",
                file.display()
            )));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::net::IpAddr;

    use proptest::prelude::*;

    use super::*;
    use crate::advice::mesh::{self, HostAdvice};
    use crate::os::Os;
    use crate::profile::Profile;
    use crate::remote::evidence::{
        self,
        tests::{PEER, honest},
    };

    /// The host's advice from one path, the document as the test end sent it: read, replayed
    /// and advised here, as `tcptune mesh` does. Err: the document was refused.
    fn advise(doc: &serde_json::Value) -> Result<HostAdvice, String> {
        let peer: IpAddr = PEER.parse().expect("ip");
        let recorded = evidence::read(&doc.to_string(), peer)?;
        let path = |to: &str, addr: IpAddr, prober: &dyn crate::measure::PathProber| {
            let req = crate::advice::AdviceRequest::for_hosts(vec![addr.to_string()]);
            mesh::path_advice(
                &req,
                &Profile::for_os(Os::Linux),
                &mesh::tests::linux(),
                prober,
                (addr, Some(&mesh::tests::lookup(addr))),
                "h1",
            )
            .map(|advice| mesh::MeshPath {
                from: "h1".into(),
                to: to.into(),
                addr,
                advice,
            })
            .map_err(|e| e.to_string())
        };
        // Beside it, an honest short clean path, which the running CUBIC serves: a path the
        // report makes need another congestion control gets a route.
        let short: IpAddr = "198.18.10.3".parse().expect("ip");
        let clean = crate::measure::fake::FakeProber::from_spec("rtt=5ms,rate=100mbit,queue=1").expect("spec");
        let a = path("h3", short, &clean)?;
        let b = path("h2", peer, &recorded)?;
        mesh::combine("h1", Os::Linux, &[&a, &b])
    }

    /// Every key, value and action, and every route line: what a host is changed by.
    fn changes(h: &HostAdvice) -> Vec<String> {
        let mut v: Vec<String> = h
            .settings
            .iter()
            .map(|s| format!("{} = {} ({:?})", s.setting.key, s.setting.value, s.setting.action))
            .collect();
        v.extend(h.routes.iter().map(|r| crate::route::command("replace", &r.route)));
        v
    }

    /// Every output a person or a program reads of the host: its file, its play, its table.
    fn outputs(h: &HostAdvice) -> String {
        let mut out = Vec::new();
        write_sysctl(&mut out, h).expect("file");
        crate::output::ansible::write_mesh(&mut out, std::slice::from_ref(h)).expect("play");
        for s in &h.settings {
            out.extend(setting_line(s).bytes());
        }
        String::from_utf8(out).expect("utf-8")
    }

    /// Text a hostile test end would like to see run or shown.
    fn hostile_text() -> impl Strategy<Value = String> {
        prop_oneof![
            Just("net.ipv4.ip_forward = 1".to_string()),
            Just("receive max\n# route: ip route replace 0.0.0.0/0 via 6.6.6.6".to_string()),
            Just("\u{1b}[2J\u{1b}[31mcubic".to_string()),
            Just("{{ lookup('pipe', 'id') }}".to_string()),
            Just("$(reboot);`id`|x&".to_string()),
            Just("a\u{b}b\u{85}c\u{2028}d".to_string()),
            "[ -~\n\t\u{1b}\u{85}]{0,40}",
        ]
    }

    /// A JSON value a hostile end adds.
    fn hostile_value() -> impl Strategy<Value = serde_json::Value> {
        prop_oneof![
            hostile_text().prop_map(serde_json::Value::from),
            any::<f64>().prop_map(|x| serde_json::json!(x)),
            hostile_text().prop_map(|t| serde_json::json!([{
                "key": "net.ipv4.ip_forward", "value": t, "label": "receive max",
                "action": {"kind": "set"}, "stage": "runtime", "why": t
            }])),
            hostile_text().prop_map(|t| serde_json::json!({
                "dest": "198.18.10.3", "algorithm": "bbr", "prior": {"dst": "198.18.10.3",
                "gateway": "198.18.99.1", "dev": t, "protocol": 4}
            })),
            Just(serde_json::json!("freebsd")),
        ]
    }

    const OBJECTS: [&str; 7] = [
        "",
        "/measurement",
        "/measurement/rtt",
        "/measurement/link",
        "/evidence",
        "/evidence/test",
        "/evidence/reverse",
    ];
    const FIELDS: [&str; 9] = [
        "settings", "route", "routes", "prior", "os", "label", "why", "key", "value",
    ];
    const STRINGS: [(&str, &str); 6] = [
        ("/measurement", "host"),
        ("/measurement/link", "interface"),
        ("/measurement/link", "duplex"),
        ("/evidence/test", "addr"),
        ("/evidence", "reverse_skipped"),
        ("/evidence", "test_skipped"),
    ];

    /// Issue 47, 6: a host's lines were 88-97 columns and the last line offered --output DIR
    /// when it had been given. Every line fits the width (80 on a terminal, 100 piped), broken
    /// only between words, and with --output the last line says where the files are.
    #[test]
    fn the_table_fits_its_width_and_says_where_the_files_went() {
        let host = advise(&honest("rtt=80ms,rate=1gbit,loss=0.2")).expect("advice");
        let plan = Plan {
            hosts: vec!["h1".into(), "h2".into(), "h3".into()],
            tests: Vec::new(),
            rounds: Vec::new(),
            sites: std::collections::BTreeMap::new(),
            parallel: 1,
            per_test: Duration::from_secs(16),
            saved: Vec::new(),
        };
        let table = |width: usize, written: Option<&Path>| {
            let mut out = Vec::new();
            let m = Mesh {
                plan: &plan,
                pairs: &[],
                hosts: std::slice::from_ref(&host),
                written,
                width,
            };
            write_table(&mut out, &m).expect("table");
            String::from_utf8(out).expect("utf-8")
        };
        let wide = table(1000, None);
        assert!(
            wide.lines().any(|l| l.chars().count() > 80),
            "the test needs a long line: {wide}"
        );
        for width in [80, 100] {
            let t = table(width, None);
            for l in t.lines() {
                assert!(
                    l.chars().count() <= width,
                    "{width}: {} columns: {l}",
                    l.chars().count()
                );
            }
            // The same words, only the breaks moved.
            let words = |x: &str| x.split_whitespace().map(str::to_string).collect::<Vec<_>>();
            assert_eq!(words(&t), words(&wide));
            assert!(t.trim_end().ends_with("or --format ansible"), "{t}");
        }
        let t = table(80, Some(Path::new("/srv/mesh")));
        assert!(!t.contains("--output DIR"), "{t}");
        assert!(t.contains("/srv/mesh/HOST.conf"), "{t}");
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        /// Fields a hostile end adds and words it changes never change a key, a value or a
        /// route away from what this tcptune computes from the same measurement, and its words
        /// appear only escaped.
        #[test]
        fn a_hostile_reports_words_change_no_setting_and_show_only_escaped(
            spec in prop_oneof![Just("rtt=80ms,rate=1gbit,loss=0.2"), Just("rtt=10ms,rate=100mbit,queue=1")],
            adds in proptest::collection::vec((0..OBJECTS.len(), 0..FIELDS.len(), hostile_value()), 1..6),
            words in proptest::collection::vec((0..STRINGS.len(), hostile_text()), 0..4),
        ) {
            let base = honest(spec);
            let want = advise(&base).expect("honest");
            if spec.contains("loss") {
                prop_assert_eq!(want.routes.len(), 1, "the lossy path's own route");
            }
            let mut v = base.clone();
            for (o, f, value) in adds {
                if let Some(obj) = v.pointer_mut(OBJECTS[o]).and_then(serde_json::Value::as_object_mut) {
                    obj.insert(FIELDS[f].to_string(), value);
                }
            }
            for (s, text) in &words {
                let (at, field) = STRINGS[*s];
                if let Some(obj) = v.pointer_mut(at).and_then(serde_json::Value::as_object_mut)
                    && obj.contains_key(field)
                {
                    obj.insert(field.to_string(), text.clone().into());
                }
            }
            let got = advise(&v).expect("words are no reason to refuse");
            prop_assert_eq!(changes(&got), changes(&want));
            let shown = outputs(&got);
            prop_assert!(!shown.chars().any(|c| c.is_control() && c != '\n'), "{shown}");
            prop_assert!(!shown.contains("ip_forward") && !shown.contains("6.6.6.6") && !shown.contains("198.18.99.1"));
            // No control character but a line's end is shown (above); a word that breaks a line
            // never stands as it came. A short one may match the output by chance ("\nn" is
            // a line break and the "n" of "net."): those of a dozen letters or more are looked for.
            for (_, text) in &words {
                let letters = text.chars().filter(|c| !c.is_whitespace()).count();
                if text.contains('\n') && letters >= 12 {
                    prop_assert!(!shown.contains(text.as_str()), "{:?} in {}", text, shown);
                }
            }
        }

        /// Numbers a hostile end picks are refused, or make advice this tcptune computed: its
        /// keys the profile's, its values valid, its one route toward the peer through the
        /// device the host's kernel named.
        #[test]
        fn a_hostile_reports_numbers_are_refused_or_advised_here(
            at in prop_oneof![
                Just("/measurement/rtt/min_ms"), Just("/measurement/rtt/mdev_ms"),
                Just("/measurement/link/speed_bps"), Just("/measurement/link/mtu"),
                Just("/measurement/capacity/bps"), Just("/evidence/test/goodput_bps"),
                Just("/evidence/test/delivery_rate_bps"), Just("/evidence/test/min_rtt_ms"),
                Just("/evidence/test/loaded_rtt_ms"), Just("/evidence/test/steady_retrans_segs"),
                Just("/evidence/test/window_share"), Just("/evidence/reverse/delivery_rate_bps"),
            ],
            x in prop_oneof![any::<f64>(), 0.0..1e13f64, -1e3..1e3f64],
        ) {
            let mut v = honest("rtt=80ms,rate=1gbit,loss=0.2");
            if let Some(slot) = v.pointer_mut(at) {
                *slot = serde_json::json!(x);
            }
            if let Ok(h) = advise(&v) {
                let profile = Profile::for_os(Os::Linux);
                for s in &h.settings {
                    let key = &s.setting.key;
                    prop_assert!(
                        profile.settings.iter().any(|e| &e.key == key),
                        "a key the profile does not set: {}", key
                    );
                    prop_assert!(crate::sysctl::file::check_value(key, &s.setting.value, Os::Linux).is_ok());
                }
                for r in &h.routes {
                    prop_assert!(h.routes.len() == 1, "one route, to the peer");
                    prop_assert_eq!(r.route.dst.to_string(), PEER);
                    prop_assert_eq!(r.route.dev.as_deref(), Some("wan0"));
                }
            }
        }
    }
}
