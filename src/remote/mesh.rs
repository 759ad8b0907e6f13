//! One test of `tcptune mesh`: the peer on one host and the test on the other (both directions),
//! each through the user's own SSH with the same far-end script as `advise --ssh`
//! ([`super::script`]). The peer session starts `tcptune peer` of this version (or a copy of
//! this tcptune; never an iperf3 server, since the test runs elsewhere), listening on the peer's
//! address for this one test; the test session runs `tcptune evidence` toward it there and
//! sends back what it measured, with the route its kernel uses toward the peer (and the peer's
//! session the route its kernel uses back toward the test end). Both sessions
//! are closed before this returns, whatever happened: nothing is left running or written on
//! either host.

use std::net::IpAddr;
use std::time::{Duration, Instant};

use super::{FarEnd, Keys, Reported, Target, TestAt, Want};
use crate::error::Error;
use crate::route::Lookup;

/// How the pair's sessions are opened.
#[derive(Debug, Clone)]
pub struct Options {
    pub ssh_command: Option<String>,
    /// The longest test each way (None: advise's own).
    pub test_time: Option<Duration>,
    /// How long a peer may live: the test end's probes and both tests, with slack.
    pub life: Duration,
    /// How long a pair may take at most, from its first session to the test end's answer:
    /// about twice its estimate. A test end that has not answered by then is given up.
    pub bound: Duration,
}

/// One host as the control host reaches it.
#[derive(Debug, Clone)]
pub struct Reach {
    /// As ssh takes it.
    pub dest: String,
    /// Its address for the paths: the host name ssh connects to, resolved here.
    pub addr: IpAddr,
    /// What its facts-only session found: its OS (from its own `uname`) and facts.
    pub far: FarEnd,
}

/// What the facts-only session found of `dest` (nothing started there): whether it answers,
/// its OS, the running values of `keys`.
pub fn probe_host(dest: &str, keys: &Keys, opts: &Options) -> Result<FarEnd, Error> {
    let t = Target {
        dest: dest.to_string(),
        ssh_command: opts.ssh_command.clone(),
        host: None,
        want: Want::Nothing,
        keys: keys.clone(),
        life: Duration::from_secs(5),
        iperf3: false,
        test: None,
    };
    let (opening, far) = super::open(&t)?;
    opening.close();
    Ok(far)
}

/// Each host's facts-only session (`hosts`: name, ssh destination), all at once: by name, the
/// host as reached ([`Reach`], its address resolved here), or why not.
pub fn reach_all(
    hosts: &[(String, String)],
    keys: &Keys,
    opts: &Options,
) -> std::collections::BTreeMap<String, Result<Reach, String>> {
    std::thread::scope(|s| {
        let handles: Vec<_> = hosts
            .iter()
            .map(|(name, dest)| {
                s.spawn(move || {
                    let r = probe_host(dest, keys, opts)
                        .and_then(|far| {
                            Ok(Reach {
                                dest: dest.clone(),
                                addr: address(&far.host)?,
                                far,
                            })
                        })
                        .map_err(|e| e.message().to_string());
                    (name.clone(), r)
                })
            })
            .collect();
        handles.into_iter().filter_map(|h| h.join().ok()).collect()
    })
}

/// A host's address for the paths: the host name ssh connects to, resolved here.
fn address(host: &str) -> Result<IpAddr, Error> {
    if let Some(ip) = crate::measure::resolve::parse_literal(host) {
        return Ok(ip);
    }
    use std::net::ToSocketAddrs as _;
    crate::measure::resolve::check_name(host)?;
    (host, 0)
        .to_socket_addrs()
        .ok()
        .and_then(|mut a| a.next())
        .map(|a| a.ip())
        .ok_or_else(|| crate::measure::resolve::cannot_resolve(host, "no address"))
}

/// What the pair's test end printed, how each end routes to the other, and how long the pair
/// took.
#[derive(Debug, Clone)]
pub struct PairRun {
    pub reported: Reported,
    /// The route the test end's kernel said it uses toward the peer (Linux).
    pub route: Option<Lookup>,
    /// The route the peer's kernel said it uses toward the test end (Linux).
    pub route_back: Option<Lookup>,
    /// What each kernel said of its route, as the lines came (the test end's, then the
    /// peer's): kept with the evidence in a mesh's saved state.
    pub routes_said: [[Option<String>; 2]; 2],
    pub took: Duration,
    /// The peer, as the far host's session said it.
    pub peer: String,
}

/// Runs the pair `from → to`: the peer on `to`, then the test on `from` toward it, within
/// [`Options::bound`].
pub fn run_pair(from: &Reach, to: &Reach, opts: &Options) -> Result<PairRun, Error> {
    let started = Instant::now();
    let by = started + opts.bound;
    let peer = Target {
        dest: to.dest.clone(),
        ssh_command: opts.ssh_command.clone(),
        host: Some(to.addr.to_string()),
        want: Want::Tcptune,
        keys: Keys::default(),
        life: opts.life,
        iperf3: false,
        // The test end's address: the peer's session says its route there.
        test: Some(TestAt {
            host: from.addr,
            port: 0,
            ms: 0,
        }),
    };
    let (peer_open, far) = super::open(&peer)?;
    let result = (|| {
        let listening = far.peer.as_ref().ok_or_else(|| {
            Error::measurement(format!("ssh {}: no peer started there", crate::text::escape(&to.dest)))
        })?;
        let test = Target {
            dest: from.dest.clone(),
            ssh_command: opts.ssh_command.clone(),
            host: Some(from.addr.to_string()),
            want: Want::Evidence,
            keys: Keys::default(),
            life: opts.life,
            iperf3: false,
            test: Some(TestAt {
                host: to.addr,
                port: listening.port,
                ms: opts
                    .test_time
                    .map_or(0, |t| u64::try_from(t.as_millis()).unwrap_or(u64::MAX).max(1)),
            }),
        };
        let test_open = super::start(&test)?;
        let got = test_open.wait().and_then(|end| {
            let reported = test_open.session().read_evidence(by).map_err(|e| {
                if Instant::now() >= by {
                    Error::measurement(format!(
                        "ssh {}: its test gave no evidence within {} s, about twice the pair's estimate: given up",
                        crate::text::escape(&from.dest),
                        opts.bound.as_secs()
                    ))
                } else {
                    e
                }
            })?;
            Ok((reported, end.peer_route, end.peer_route_said))
        });
        test_open.close();
        let (reported, route, said) = got?;
        Ok(PairRun {
            reported,
            route,
            route_back: far.peer_route.clone(),
            routes_said: [said, far.peer_route_said.clone()],
            took: Duration::ZERO,
            peer: listening.describe(),
        })
    })();
    peer_open.close();
    result.map(|r| PairRun {
        took: started.elapsed(),
        ..r
    })
}

/// The tests, round by round: each round's at once (a thread each), the next once the last of
/// this one has ended. `start(round, tests)` is called before each round, `done(test, run)`
/// as each test ends, from its thread. `tests[i]`: the test end and the peer of test `i`.
pub fn run_rounds(
    tests: &[(&Reach, &Reach)],
    rounds: &[Vec<usize>],
    opts: &Options,
    start: &dyn Fn(usize, &[usize]),
    done: &(dyn Fn(usize, Result<PairRun, Error>) + Sync),
) {
    for (r, round) in rounds.iter().enumerate() {
        start(r, round);
        std::thread::scope(|s| {
            for &i in round {
                let (from, to) = tests[i];
                s.spawn(move || done(i, run_pair(from, to, opts)));
            }
        });
    }
}
