//! `tcptune mesh`: every ordered pair of a fleet's hosts measured through the user's own SSH
//! (the peer on one, `tcptune advise` on the other: [`crate::remote::mesh`]), one test at a
//! time, then each host advised from all its paths ([`crate::advice::mesh`]) and rendered for
//! people, programs or Ansible ([`crate::output::mesh`]), with one sysctl.d file per host.

use std::io::Write;
use std::path::Path;
use std::process::ExitCode;
use std::time::Duration;

use crate::advice::mesh::{self, MeshPath};
use crate::cli::{MeshArgs, MeshFormat};
use crate::cmd::Context;
use crate::error::Error;
use crate::output::mesh::{Mesh, Pair, Plan};
use crate::remote::{self, mesh::Reach};
use crate::text;

pub fn run(args: &MeshArgs, _ctx: &Context, out: &mut dyn Write) -> anyhow::Result<ExitCode> {
    let hosts = hosts(args)?;
    let pairs = pairs(args, &hosts)?;
    let opts = remote::mesh::Options {
        ssh_command: args.ssh_command.clone(),
        test_time: args.test_time,
        life: remote::lifetime(&crate::measure::ProbeOptions::default(), args.test_time),
    };
    let plan = Plan {
        hosts: hosts.iter().map(|(n, _)| n.clone()).collect(),
        pairs: pairs.clone(),
        per_pair: per_pair(args.test_time),
    };
    if args.dry_run {
        crate::output::mesh::write_plan(out, &plan, true)?;
        return Ok(ExitCode::SUCCESS);
    }
    if let Some(dir) = &args.output {
        check_output_dir(dir)?;
    }
    crate::output::mesh::write_plan(&mut std::io::stderr(), &plan, false)?;
    let reached = reach(&hosts, &opts);
    let runs = measure_all(&pairs, &reached, &opts);
    let advice = advise_hosts(&plan.hosts, &runs)?;
    let m = Mesh {
        plan: &plan,
        pairs: &runs,
        hosts: &advice,
    };
    if let Some(dir) = &args.output {
        write_files(dir, &advice)?;
    }
    match args.format {
        MeshFormat::Table => crate::output::mesh::write_table(out, &m)?,
        MeshFormat::Json => crate::output::mesh::write_json(out, &m)?,
        MeshFormat::Ansible => crate::output::ansible::write_mesh(out, &advice)?,
    }
    let missed = runs.iter().filter(|p| p.run.is_err()).count();
    if missed > 0 {
        return Err(Error::measurement(format!(
            "{missed} of {} pairs not measured: the advice covers the others",
            runs.len()
        ))
        .into());
    }
    Ok(ExitCode::SUCCESS)
}

/// Each pair in turn, one at a time; a pair whose hosts did not answer is skipped, said.
fn measure_all(
    pairs: &[(String, String)],
    reached: &std::collections::BTreeMap<String, Result<Reach, String>>,
    opts: &remote::mesh::Options,
) -> Vec<Pair> {
    let mut runs = Vec::new();
    for (i, (from, to)) in pairs.iter().enumerate() {
        let label = format!("[{}/{}] {from} \u{2192} {to}", i + 1, pairs.len());
        let run = match (reached.get(from), reached.get(to)) {
            (Some(Ok(f)), Some(Ok(t))) => measure_pair((from, f), (to, t), opts, &label),
            (Some(Err(_)), _) => Err(format!("{from} did not answer")),
            (_, _) => Err(format!("{to} did not answer")),
        };
        if let Err(why) = &run {
            eprintln!("{label}: skipped: {why}");
        }
        runs.push(Pair {
            from: from.clone(),
            to: to.clone(),
            run,
        });
    }
    runs
}

/// Each host that measured a path, advised from all it measured.
fn advise_hosts(hosts: &[String], runs: &[Pair]) -> Result<Vec<mesh::HostAdvice>, Error> {
    let measured: Vec<&MeshPath> = runs
        .iter()
        .filter_map(|p| p.run.as_ref().ok().map(|(m, _, _)| m))
        .collect();
    if measured.is_empty() {
        return Err(Error::measurement("no pair of the mesh was measured: no advice"));
    }
    hosts
        .iter()
        .filter_map(|h| {
            let from: Vec<&MeshPath> = measured.iter().copied().filter(|p| &p.from == h).collect();
            (!from.is_empty()).then(|| mesh::combine(h, &from))
        })
        .collect::<Result<_, _>>()
        .map_err(Error::measurement)
}

/// `--output DIR`: DIR/HOST.conf per host, each written atomically where root could trust it.
fn write_files(dir: &Path, advice: &[mesh::HostAdvice]) -> Result<(), Error> {
    for h in advice {
        let file = dir.join(format!("{}.conf", h.host));
        let mut text = Vec::new();
        crate::output::mesh::write_sysctl(&mut text, h)
            .map_err(|e| Error::system(format!("cannot render {}: {e}", file.display())))?;
        crate::fsutil::check_trusted_parent(&file, "--output")?;
        crate::snapshot::write_atomic(&file, &text, 0o644)
            .map_err(|e| Error::system(format!("cannot write {}: {e}", file.display())))?;
        eprintln!("tcptune: wrote {}", file.display());
    }
    Ok(())
}

/// The hosts: those named, then the inventory's, each once, as (name, ssh destination).
fn hosts(args: &MeshArgs) -> Result<Vec<(String, String)>, Error> {
    let mut hosts: Vec<(String, String)> = Vec::new();
    for h in &args.hosts {
        remote::ssh::check_dest(h).map_err(|_| {
            Error::usage(format!(
                "\"{}\": not an ssh destination (host, user@host or a Host of your ssh configuration)",
                text::escape(h)
            ))
        })?;
        hosts.push((h.clone(), h.clone()));
    }
    if let Some(file) = &args.inventory {
        let body =
            std::fs::read_to_string(file).map_err(|e| Error::usage(format!("--inventory {}: {e}", file.display())))?;
        let origin = file.display().to_string();
        for h in crate::fleet::inventory::read(&body, &origin, args.group.as_deref())? {
            hosts.push((h.name.clone(), h.dest()));
        }
    }
    let mut seen = std::collections::BTreeSet::new();
    hosts.retain(|(n, _)| seen.insert(n.clone()));
    for (n, _) in &hosts {
        check_name(n)?;
    }
    if hosts.len() < 2 {
        return Err(Error::usage(
            "a mesh needs at least two hosts (HOST... or --inventory FILE)",
        ));
    }
    Ok(hosts)
}

/// A host's name becomes a file's (`HOST.conf`) and a play's: letters, digits, `.`, `-`, `_`,
/// `@`, `:` and `/` only as ssh destinations have them, never a leading dot or dash.
fn check_name(n: &str) -> Result<(), Error> {
    let ok = !n.starts_with(['.', '-'])
        && n.len() <= 255
        && n.bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'-' | b'_' | b'@' | b':'));
    if ok {
        Ok(())
    } else {
        Err(Error::usage(format!(
            "\"{}\": a mesh names its hosts' files and plays after them: letters, digits, '.', '-', '_', '@', ':'",
            text::escape(n)
        )))
    }
}

/// Every ordered pair, or those `--pairs` names.
fn pairs(args: &MeshArgs, hosts: &[(String, String)]) -> Result<Vec<(String, String)>, Error> {
    let known = |h: &str| hosts.iter().any(|(n, _)| n == h);
    let Some(list) = &args.pairs else {
        return Ok(hosts
            .iter()
            .flat_map(|(a, _)| {
                hosts
                    .iter()
                    .filter(move |(b, _)| b != a)
                    .map(move |(b, _)| (a.clone(), b.clone()))
            })
            .collect());
    };
    let mut out: Vec<(String, String)> = Vec::new();
    for p in list.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let bad = |why: &str| Error::usage(format!("--pairs {}: {why}", text::escape(p)));
        let (a, b) = p.split_once(':').ok_or_else(|| bad("not FROM:TO"))?;
        if !known(a) || !known(b) {
            return Err(bad("names a host the mesh does not have"));
        }
        if a == b {
            return Err(bad("a host with itself"));
        }
        if !out.iter().any(|(x, y)| x == a && y == b) {
            out.push((a.to_string(), b.to_string()));
        }
    }
    if out.is_empty() {
        return Err(Error::usage("--pairs: no pair given"));
    }
    Ok(out)
}

/// About how long one pair takes: set-up, the probes and the queue watch, both tests.
fn per_pair(test_time: Option<Duration>) -> Duration {
    let test = test_time.unwrap_or(crate::advice::rate::TEST_TIME_BASE + Duration::from_secs(1));
    Duration::from_secs(6) + test * 2
}

/// Each host's facts-only session, all at once: those that answer, by name, with their
/// address for the paths; the others with why, said on stderr.
fn reach(
    hosts: &[(String, String)],
    opts: &remote::mesh::Options,
) -> std::collections::BTreeMap<String, Result<Reach, String>> {
    let found: Vec<(String, Result<Reach, String>)> = std::thread::scope(|s| {
        let handles: Vec<_> = hosts
            .iter()
            .map(|(name, dest)| {
                s.spawn(move || {
                    let r = remote::mesh::probe_host(dest, opts)
                        .map(|far| Reach {
                            dest: dest.clone(),
                            addr: far.host,
                        })
                        .map_err(|e| e.message().to_string());
                    (name.clone(), r)
                })
            })
            .collect();
        handles.into_iter().filter_map(|h| h.join().ok()).collect()
    });
    for (name, r) in &found {
        if let Err(why) = r {
            eprintln!("tcptune: {name}: skipped: {why}");
        }
    }
    found.into_iter().collect()
}

/// One pair measured and its advice read: the path, the whole JSON, how long it took.
fn measure_pair(
    (from_name, from): (&String, &Reach),
    (to_name, to): (&String, &Reach),
    opts: &remote::mesh::Options,
    label: &str,
) -> Result<(MeshPath, serde_json::Value, Duration), String> {
    eprintln!("{label}: measuring ...");
    let run = remote::mesh::run_pair(from, to, opts).map_err(|e| e.message().to_string())?;
    if !run.advised.ok() {
        let said = run
            .advised
            .stderr
            .iter()
            .rev()
            .find(|l| !l.raw().trim().is_empty())
            .map(|l| l.escaped())
            .unwrap_or_default();
        return Err(format!(
            "its tcptune advise ended with status {}: {said}",
            run.advised.status
        ));
    }
    let report = remote::report::read(&run.advised.json, &to.addr)
        .map_err(|why| format!("ssh {}: {why}", text::escape(&from.dest)))?;
    let json: serde_json::Value = serde_json::from_str(&run.advised.json).map_err(|e| e.to_string())?;
    let path = MeshPath {
        from: from_name.clone(),
        to: to_name.clone(),
        addr: to.addr.clone(),
        report,
    };
    eprintln!(
        "{label}: {} ms, {}, {} ({:.0} s)",
        text::sig(path.report.rtt_ms, 4),
        text::rate(path.report.bandwidth_bps as f64),
        path.report.decision.class,
        run.took.as_secs_f64()
    );
    Ok((path, json, run.took))
}

/// `--output DIR`: an existing directory root could trust.
fn check_output_dir(dir: &Path) -> Result<(), Error> {
    if !dir.is_dir() {
        return Err(Error::usage(format!(
            "--output {}: not a directory (mesh writes one file per host there)",
            dir.display()
        )));
    }
    crate::fsutil::check_trusted_dir(dir, "--output directory")
}
