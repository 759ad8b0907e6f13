//! `tcptune mesh`'s tests: the rounds run, each test advised for both ends as it ends and its
//! evidence saved ([`crate::remote::saved`]); and `--resume`'s tests, advised again from the
//! state. The command itself (`tcptune mesh`) plans, renders and writes.

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::time::Duration;

use crate::advice::mesh::{self, MeshPath, TestEnd};
use crate::cli::MeshArgs;
use crate::error::Error;
use crate::output::mesh::{Pair, Plan};
use crate::remote::mesh::{Options, Reach};
use crate::remote::saved::{self, Saved, Store};
use crate::remote::{self, schedule};
use crate::text;

/// `--resume`: the plan's tests found in the state, no older than `--max-age` and not named by
/// `--pairs`, advised from what was saved; the plan's rounds are made again of the others.
pub fn resume(
    args: &MeshArgs,
    again: &[(String, String)],
    read: Option<&saved::Read>,
    plan: &mut Plan,
    reached: &BTreeMap<String, Result<Reach, String>>,
) -> Vec<Pair> {
    let (true, Some(read)) = (args.resume, read) else {
        return Vec::new();
    };
    let max_age = args.max_age.unwrap_or(Duration::from_secs(86_400)).as_secs();
    let now = saved::now();
    let mut pairs = Vec::new();
    for (i, (a, b)) in plan.tests.iter().enumerate() {
        let (Some(Ok(ra)), Some(Ok(rb))) = (reached.get(a), reached.get(b)) else {
            continue;
        };
        let named = again.iter().any(|(x, y)| (x == a && y == b) || (x == b && y == a));
        let found = read.saved.iter().find(|s| s.is_of((a, ra.addr), (b, rb.addr)));
        let Some(s) = found.filter(|s| !named && s.age_s(now) <= max_age) else {
            continue;
        };
        let ends = if s.a == *a {
            ((a, ra), (b, rb))
        } else {
            ((b, rb), (a, ra))
        };
        match advise_saved(s, ends, args.test_time) {
            Ok(advised) => {
                pairs.extend(paths(ends.0.0, ends.1.0, Ok(advised), 0, Some(s.age_s(now))));
                plan.saved.push(i);
            }
            // Refused as a live test's evidence would be: measured again.
            Err(why) => eprintln!(
                "tcptune: --state: {}: {}: measured again",
                test_name(&(a.clone(), b.clone())),
                why
            ),
        }
    }
    // The tests left, scheduled again: the rounds the saved ones leave are refilled.
    let left: Vec<usize> = (0..plan.tests.len()).filter(|i| !plan.saved.contains(i)).collect();
    let tests: Vec<(String, String)> = left.iter().map(|&i| plan.tests[i].clone()).collect();
    plan.rounds = schedule::rounds(&tests, &plan.sites, plan.parallel)
        .into_iter()
        .map(|r| r.into_iter().map(|j| left[j]).collect())
        .collect();
    pairs
}

/// A saved test advised again: its evidence and route lines read as a live test's are.
fn advise_saved(
    s: &Saved,
    ((an, a), (bn, b)): ((&String, &Reach), (&String, &Reach)),
    test_time: Option<Duration>,
) -> Result<(MeshPath, Option<MeshPath>, Duration), String> {
    let route = |i: usize, to: &Reach| {
        let [get, matched] = &s.routes[i];
        remote::lookup(Some(to.addr), get.as_deref(), matched.as_deref())
    };
    let (ra, rb) = (route(0, b), route(1, a));
    let from = TestEnd {
        name: an,
        reach: a,
        route: ra.as_ref(),
    };
    let to = TestEnd {
        name: bn,
        reach: b,
        route: rb.as_ref(),
    };
    let (there, back) = mesh::test_advice(&s.evidence, &from, &to, test_time)?;
    Ok((there, back, Duration::from_secs_f64(s.took_s.clamp(0.0, 86_400.0))))
}

/// A test's two paths as the output lists them (`a` ran it; `round` 0: from the state).
fn paths(
    a: &str,
    b: &str,
    r: Result<(MeshPath, Option<MeshPath>, Duration), String>,
    round: usize,
    age_s: Option<u64>,
) -> Vec<Pair> {
    let pair = |from: &str, to: &str, run| Pair {
        from: from.to_string(),
        to: to.to_string(),
        run,
        round,
        age_s,
    };
    match r {
        Ok((there, back, took)) => {
            let mut v = vec![pair(a, b, Ok((there, took)))];
            v.extend(back.map(|p| pair(b, a, Ok((p, took)))));
            v
        }
        Err(why) => vec![pair(a, b, Err(why.clone())), pair(b, a, Err(why))],
    }
}

/// The plan's rounds, each round's tests at once; a test whose hosts did not answer is
/// skipped, said. Each test's evidence is saved as it comes.
pub fn measure_all(
    plan: &Plan,
    reached: &BTreeMap<String, Result<Reach, String>>,
    opts: &Options,
    store: Option<&Store>,
) -> Vec<Pair> {
    let got: Mutex<Vec<Pair>> = Mutex::new(Vec::new());
    let mut ends: Vec<(&Reach, &Reach)> = Vec::new();
    let mut rounds: Vec<Vec<usize>> = Vec::new();
    let mut runs_in: Vec<usize> = Vec::new();
    for (r, round) in plan.rounds.iter().enumerate() {
        let mut here = Vec::new();
        for &i in round {
            let (a, b) = &plan.tests[i];
            match (reached.get(a), reached.get(b)) {
                (Some(Ok(ra)), Some(Ok(rb))) => {
                    here.push(ends.len());
                    ends.push((ra, rb));
                    runs_in.push(i);
                }
                (Some(Err(_)), _) => got.lock().expect("lock").extend(skipped(a, b, r + 1, a)),
                _ => got.lock().expect("lock").extend(skipped(a, b, r + 1, b)),
            }
        }
        rounds.push(here);
    }
    let total = ends.len();
    let count = Mutex::new(0usize);
    let round_of = |j: usize| rounds.iter().position(|r| r.contains(&j)).unwrap_or(0) + 1;
    let start = |r: usize, tests: &[usize]| {
        let names: Vec<String> = tests.iter().map(|&j| test_name(&plan.tests[runs_in[j]])).collect();
        if !names.is_empty() {
            eprintln!("round {}/{}: {}", r + 1, rounds.len(), names.join(", "));
        }
    };
    let done = |j: usize, run: Result<remote::mesh::PairRun, Error>| {
        let (a, b) = &plan.tests[runs_in[j]];
        let (ra, rb) = ends[j];
        let r = run
            .map_err(|e| e.message().to_string())
            .and_then(|run| finish(&run, (a, ra), (b, rb), opts, store));
        let n = {
            let mut c = count.lock().expect("lock");
            *c += 1;
            *c
        };
        eprintln!("[{n}/{total}] {}", crate::output::mesh::test_line(a, b, &r));
        got.lock().expect("lock").extend(paths(a, b, r, round_of(j), None));
    };
    remote::mesh::run_rounds(&ends, &rounds, opts, &start, &done);
    got.into_inner().expect("lock")
}

fn test_name((a, b): &(String, String)) -> String {
    format!("{a} \u{2194} {b}")
}

fn skipped(a: &str, b: &str, round: usize, down: &str) -> Vec<Pair> {
    let why = format!("{down} did not answer");
    eprintln!("{}: skipped: {why}", test_name(&(a.to_string(), b.to_string())));
    paths(a, b, Err(why), round, None)
}

/// One test measured there, advised here for both ends; its evidence saved once it advises.
fn finish(
    run: &remote::mesh::PairRun,
    (an, a): (&String, &Reach),
    (bn, b): (&String, &Reach),
    opts: &Options,
    store: Option<&Store>,
) -> Result<(MeshPath, Option<MeshPath>, Duration), String> {
    if !run.reported.ok() {
        let said = run.reported.stderr.iter().rev().find(|l| !l.raw().trim().is_empty());
        return Err(format!(
            "its tcptune evidence ended with status {}: {}",
            run.reported.status,
            said.map(text::Foreign::escaped).unwrap_or_default()
        ));
    }
    let from = TestEnd {
        name: an,
        reach: a,
        route: run.route.as_ref(),
    };
    let to = TestEnd {
        name: bn,
        reach: b,
        route: run.route_back.as_ref(),
    };
    let (there, back) = mesh::test_advice(&run.reported.json, &from, &to, opts.test_time)?;
    if let Some(store) = store {
        let s = Saved {
            tcptune_mesh_state: saved::FORMAT,
            a: an.clone(),
            b: bn.clone(),
            a_addr: a.addr,
            b_addr: b.addr,
            at: saved::now(),
            took_s: run.took.as_secs_f64(),
            routes: [saved::bounded(&run.routes_said[0]), saved::bounded(&run.routes_said[1])],
            evidence: run.reported.json.clone(),
        };
        if let Err(e) = store.append(&s) {
            eprintln!("tcptune: {} (the test is advised, not saved)", e.message());
        }
    }
    Ok((there, back, run.took))
}
