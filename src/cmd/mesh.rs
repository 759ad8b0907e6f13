//! `tcptune mesh`: every pair of a fleet's hosts measured once through the user's own SSH (the
//! peer on one, `tcptune evidence` on the other, both directions: [`crate::remote::mesh`]),
//! tests that share no host and no link between sites at once, in rounds
//! ([`crate::remote::schedule`]). What a test end sends is evidence only
//! ([`crate::remote::evidence`]), saved as it comes ([`crate::remote::saved`]; `--resume` takes
//! it again): both ends' advice for each path is computed here from it and each host's own
//! facts, then each host advised from all its paths ([`crate::advice::mesh`]) and rendered for
//! people, programs or Ansible ([`crate::output::mesh`]), with one sysctl.d file per host.

use std::collections::BTreeMap;
use std::io::Write;
use std::process::ExitCode;

use crate::advice::mesh::{self, MeshPath};
use crate::cli::MeshArgs;
use crate::cmd::Context;
use crate::error::Error;
use crate::output::mesh::{Mesh, Pair, Plan};
use crate::remote::mesh::{Options, Reach};
use crate::remote::plan::{self, Host};
use crate::remote::saved::{self, Store};
use crate::remote::{self, schedule, ssh};
use crate::text;

pub fn run(args: &MeshArgs, ctx: &Context, out: &mut dyn Write) -> anyhow::Result<ExitCode> {
    let named = hosts(args)?;
    let client = ssh::Client::new(args.ssh_command.as_deref())?;
    let (hosts, same) = one_per_machine(named, &client)?;
    let names: Vec<String> = hosts.iter().map(|(n, _)| n.clone()).collect();
    let groups = match (&args.site_groups, &args.inventory) {
        (Some(list), Some(file)) => crate::fleet::inventory::groups_in(file, list)?,
        _ => Vec::new(),
    };
    let sites = plan::sites(&args.sites, &groups, &names, &same)?;
    let (tests, again) = tests(args, &names, &same)?;
    if let Some(dir) = &args.output {
        crate::output::mesh::check_output(dir, &names)?;
    }
    // Without sites nothing says which tests share a link: one at a time unless told.
    let parallel = usize::from(args.parallel.unwrap_or(if sites.is_empty() { 1 } else { u16::MAX }));
    let mut plan = Plan {
        hosts: names,
        rounds: schedule::rounds(&tests, &sites, parallel),
        tests,
        sites,
        parallel,
        per_test: crate::advice::rate::pair_estimate(args.test_time),
        saved: Vec::new(),
    };
    if args.dry_run {
        crate::output::mesh::write_plan(out, &plan, true)?;
        return Ok(ExitCode::SUCCESS);
    }
    let opts = Options {
        ssh_command: args.ssh_command.clone(),
        test_time: args.test_time,
        life: remote::lifetime(&crate::measure::ProbeOptions::default(), args.test_time),
        bound: crate::advice::rate::pair_bound(args.test_time) * 2,
    };
    let store = open_state(args)?;
    let reached = reach(&hosts, &opts);
    let resumed = super::mesh_run::resume(args, &again, store.as_ref().map(|s| &s.1), &mut plan, &reached);
    crate::output::mesh::write_plan(&mut std::io::stderr(), &plan, false)?;
    let mut runs = super::mesh_run::measure_all(&plan, &reached, &opts, store.as_ref().map(|s| &s.0));
    runs.extend(resumed);
    // In the plan's order, each test's paths from its test end first.
    runs.sort_by_key(|p| {
        let at = plan
            .tests
            .iter()
            .position(|(a, b)| (*a == p.from && *b == p.to) || (*a == p.to && *b == p.from));
        (at, at.is_some_and(|i| plan.tests[i].0 != p.from))
    });
    let advice = advise_hosts(&plan.hosts, &reached, &runs)?;
    if let Some(dir) = &args.output {
        crate::output::mesh::write_files(dir, &advice)?;
    }
    let m = Mesh {
        plan: &plan,
        pairs: &runs,
        hosts: &advice,
        written: args.output.as_deref(),
        width: ctx.term.width(),
    };
    crate::output::render::mesh(out, args.format, &m)?;
    let missed = runs.iter().filter(|p| p.run.is_err()).count();
    if missed > 0 {
        return Err(Error::measurement(format!(
            "{missed} of {} paths not measured: the advice covers the others",
            runs.len()
        ))
        .into());
    }
    Ok(ExitCode::SUCCESS)
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
        hosts.extend(crate::fleet::inventory::hosts_in(file, args.group.as_deref())?);
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

/// A test: the host that runs it, then its peer.
type Test = (String, String);

/// The tests to plan, and those `--pairs` names (a name of a machine already named earlier
/// stands for that one; refused as `--pairs` is, with or without `--resume`): without
/// `--resume` the named ones are the plan; with it, every pair is, and the named ones are
/// measured again.
fn tests(args: &MeshArgs, names: &[String], same: &BTreeMap<String, String>) -> Result<(Vec<Test>, Vec<Test>), Error> {
    let Some(list) = &args.pairs else {
        return Ok((schedule::every_pair_once(names), Vec::new()));
    };
    let all: Vec<String> = names.iter().chain(same.keys()).cloned().collect();
    let kept = |n: String| same.get(&n).cloned().unwrap_or(n);
    let named = plan::parse_pairs(list, &all)?;
    let out = plan::tests_of(named.into_iter().map(|(a, b)| (kept(a), kept(b))).collect());
    if out.is_empty() {
        return Err(Error::usage("--pairs: every pair names one machine twice"));
    }
    if args.resume {
        return Ok((schedule::every_pair_once(names), out));
    }
    Ok((out, Vec::new()))
}

/// The state file (`--state`, else the default; none where there is no home to keep it in).
fn open_state(args: &MeshArgs) -> Result<Option<(Store, saved::Read)>, Error> {
    let Some(path) = args.state.clone().or_else(saved::default_path) else {
        eprintln!("tcptune: no $HOME or $XDG_STATE_HOME: the tests are not saved (--state FILE keeps them)");
        return Ok(None);
    };
    let (store, read) = Store::open(&path)?;
    for why in &read.skipped {
        eprintln!("tcptune: --state {}: skipped {why}", path.display());
    }
    Ok(Some((store, read)))
}

/// Each host's facts-only session, all at once (the keys every shipped profile reads); those
/// that did not answer said on stderr.
fn reach(hosts: &[Host], opts: &Options) -> BTreeMap<String, Result<Reach, String>> {
    let keys = crate::advice::far::keys(&crate::profile::Profile::for_os(crate::os::Os::Linux));
    let found = remote::mesh::reach_all(hosts, &keys, opts);
    for (name, r) in &found {
        if let Err(why) = r {
            eprintln!("tcptune: {name}: skipped: {why}");
        }
    }
    found
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
