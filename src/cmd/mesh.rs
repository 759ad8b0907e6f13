//! `tcptune mesh`: every ordered pair of a fleet's hosts measured through the user's own SSH
//! (the peer on one, `tcptune evidence` on the other: [`crate::remote::mesh`]), one test at a
//! time. What a test end sends is evidence only ([`crate::remote::evidence`]): each path's
//! advice is computed here from it and the host's own facts, then each host advised from all
//! its paths ([`crate::advice::mesh`]) and rendered for people, programs or Ansible
//! ([`crate::output::mesh`]), with one sysctl.d file per host.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::Path;
use std::process::ExitCode;
use std::time::Duration;

use crate::advice::mesh::{self, MeshPath};
use crate::cli::{MeshArgs, MeshFormat};
use crate::cmd::Context;
use crate::error::Error;
use crate::output::mesh::{Mesh, Pair, Plan};
use crate::remote::mesh::{Options, Reach};
use crate::remote::plan::{self, Host};
use crate::remote::{self, ssh};
use crate::text;

pub fn run(args: &MeshArgs, _ctx: &Context, out: &mut dyn Write) -> anyhow::Result<ExitCode> {
    let named = hosts(args)?;
    let client = ssh::Client::new(args.ssh_command.as_deref())?;
    let (hosts, same) = one_per_machine(named, &client)?;
    let names: Vec<String> = hosts.iter().map(|(n, _)| n.clone()).collect();
    let pairs = pairs(args, &names, &same)?;
    if let Some(dir) = &args.output {
        check_output(dir, &names)?;
    }
    let plan = Plan {
        hosts: names,
        pairs,
        per_pair: per_pair(args.test_time),
    };
    if args.dry_run {
        crate::output::mesh::write_plan(out, &plan, true)?;
        return Ok(ExitCode::SUCCESS);
    }
    crate::output::mesh::write_plan(&mut std::io::stderr(), &plan, false)?;
    let opts = Options {
        ssh_command: args.ssh_command.clone(),
        test_time: args.test_time,
        life: remote::lifetime(&crate::measure::ProbeOptions::default(), args.test_time),
        bound: plan.per_pair * 2,
    };
    let reached = reach(&hosts, &opts);
    let runs = measure_all(&plan.pairs, &reached, &opts);
    let advice = advise_hosts(&plan.hosts, &reached, &runs)?;
    if let Some(dir) = &args.output {
        write_files(dir, &advice)?;
    }
    let m = Mesh {
        plan: &plan,
        pairs: &runs,
        hosts: &advice,
        written: args.output.is_some(),
    };
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

/// About how long one pair takes: set-up, the probes and the queue watch, both tests.
fn per_pair(test_time: Option<Duration>) -> Duration {
    let test = test_time.unwrap_or(crate::advice::rate::TEST_TIME_BASE + Duration::from_secs(1));
    Duration::from_secs(6) + test * 2
}

/// The hosts: those named, then the inventory's, each name once, as (name, ssh destination).
fn hosts(args: &MeshArgs) -> Result<Vec<Host>, Error> {
    let mut hosts: Vec<Host> = Vec::new();
    for h in &args.hosts {
        ssh::check_dest(h).map_err(|_| {
            Error::usage(format!(
                "\"{}\": not an ssh destination (host, user@host or a Host of your ssh configuration)",
                text::escape(h)
            ))
        })?;
        hosts.push((h.clone(), h.clone()));
    }
    if let Some(file) = &args.inventory {
        let body = crate::fleet::inventory::read_file(file)?;
        let origin = file.display().to_string();
        for h in crate::fleet::inventory::read(&body, &origin, args.group.as_deref())? {
            hosts.push((h.name.clone(), h.dest()));
        }
    }
    let mut seen = std::collections::BTreeSet::new();
    hosts.retain(|(n, _)| seen.insert(n.clone()));
    for (n, _) in &hosts {
        plan::check_name(n)?;
    }
    if hosts.len() < 2 {
        return Err(Error::usage(
            "a mesh needs at least two hosts (HOST... or --inventory FILE)",
        ));
    }
    Ok(hosts)
}

/// The hosts, one name per machine ([`plan::one_per_machine`]): each name dropped said, with the
/// machine and the name kept. The second value maps each name dropped to the one kept.
fn one_per_machine(hosts: Vec<Host>, client: &ssh::Client) -> Result<(Vec<Host>, BTreeMap<String, String>), Error> {
    let (hosts, same) = plan::one_per_machine(hosts, client)?;
    for s in &same {
        eprintln!(
            "tcptune: {} and {} are one machine (ssh reaches both at {} port {}): measured once, as {}",
            s.dropped,
            s.kept,
            text::escape(&s.host),
            s.port,
            s.kept
        );
    }
    if hosts.len() < 2 {
        return Err(Error::usage(
            "a mesh needs at least two machines: these names are all one",
        ));
    }
    Ok((hosts, same.into_iter().map(|s| (s.dropped, s.kept)).collect()))
}

/// Every ordered pair, or those `--pairs` names (a name of a machine already named earlier
/// stands for that one).
fn pairs(args: &MeshArgs, names: &[String], same: &BTreeMap<String, String>) -> Result<Vec<(String, String)>, Error> {
    let Some(list) = &args.pairs else {
        return Ok(plan::every_pair(names));
    };
    let all: Vec<String> = names.iter().chain(same.keys()).cloned().collect();
    let kept = |n: String| same.get(&n).cloned().unwrap_or(n);
    let mut out: Vec<(String, String)> = Vec::new();
    for (a, b) in plan::parse_pairs(list, &all)? {
        let (a, b) = (kept(a), kept(b));
        if a != b && !out.contains(&(a.clone(), b.clone())) {
            out.push((a, b));
        }
    }
    if out.is_empty() {
        return Err(Error::usage("--pairs: every pair names one machine twice"));
    }
    Ok(out)
}

/// Each host's facts-only session, all at once (the keys every shipped profile reads); those
/// that did not answer said on stderr.
fn reach(hosts: &[Host], opts: &Options) -> BTreeMap<String, Result<Reach, String>> {
    let keys = super::advised::far_keys(&crate::profile::Profile::for_os(crate::os::Os::Linux));
    let found = remote::mesh::reach_all(hosts, &keys, opts);
    for (name, r) in &found {
        if let Err(why) = r {
            eprintln!("tcptune: {name}: skipped: {why}");
        }
    }
    found
}

/// Each pair in turn, one at a time; a pair whose hosts did not answer is skipped, said.
fn measure_all(
    pairs: &[(String, String)],
    reached: &BTreeMap<String, Result<Reach, String>>,
    opts: &Options,
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

/// One pair measured there and advised here: the path and how long it took.
fn measure_pair(
    (from_name, from): (&String, &Reach),
    (to_name, to): (&String, &Reach),
    opts: &Options,
    label: &str,
) -> Result<(MeshPath, Duration), String> {
    eprintln!("{label}: measuring ...");
    let run = remote::mesh::run_pair(from, to, opts).map_err(|e| e.message().to_string())?;
    if !run.reported.ok() {
        let said = run.reported.stderr.iter().rev().find(|l| !l.raw().trim().is_empty());
        return Err(format!(
            "its tcptune evidence ended with status {}: {}",
            run.reported.status,
            said.map(text::Foreign::escaped).unwrap_or_default()
        ));
    }
    let path = mesh::pair_advice(&run, (from_name, from), (to_name, to), opts.test_time)?;
    eprintln!(
        "{label}: {} ms, {}, {} ({:.0} s)",
        text::sig(path.advice.rtt_ms, 4),
        text::rate(path.advice.bandwidth_bps as f64),
        crate::output::mesh::class_word(path.advice.decision.class),
        run.took.as_secs_f64()
    );
    Ok((path, run.took))
}

/// Each host that measured a path, advised from all it measured, for its own OS.
fn advise_hosts(
    hosts: &[String],
    reached: &BTreeMap<String, Result<Reach, String>>,
    runs: &[Pair],
) -> Result<Vec<mesh::HostAdvice>, Error> {
    let measured: Vec<&MeshPath> = runs
        .iter()
        .filter_map(|p| p.run.as_ref().ok().map(|(m, _)| m))
        .collect();
    if measured.is_empty() {
        return Err(Error::measurement("no pair of the mesh was measured: no advice"));
    }
    let mut advice = Vec::new();
    for h in hosts {
        let from: Vec<&MeshPath> = measured.iter().copied().filter(|p| &p.from == h).collect();
        let Some(Ok(reach)) = reached.get(h) else { continue };
        let (false, Some(os)) = (from.is_empty(), reach.far.os) else {
            continue;
        };
        match mesh::combine(h, os, &from) {
            Ok(a) => advice.push(a),
            Err(why) => eprintln!("tcptune: {h}: no advice: {}", text::escape(&why)),
        }
    }
    Ok(advice)
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

/// `--output DIR`: an existing directory root could trust, where no HOST.conf to be written
/// is a directory (a real run finds it before it measures, and so does `--dry-run`).
fn check_output(dir: &Path, hosts: &[String]) -> Result<(), Error> {
    if !dir.is_dir() {
        return Err(Error::usage(format!(
            "--output {}: not a directory (mesh writes one file per host there)",
            dir.display()
        )));
    }
    crate::fsutil::check_trusted_dir(dir, "--output directory")?;
    for h in hosts {
        let file = dir.join(format!("{h}.conf"));
        if std::fs::symlink_metadata(&file).is_ok_and(|m| m.is_dir()) {
            return Err(Error::usage(format!(
                "--output: {} is a directory: mesh writes a file there",
                file.display()
            )));
        }
    }
    Ok(())
}
