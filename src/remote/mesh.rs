//! One ordered pair of `tcptune mesh`: the peer on the far host and the test on the near one,
//! each through the user's own SSH with the same far-end script as `advise --ssh`
//! ([`super::script`]). The peer session starts `tcptune peer` (this version or a copy of this
//! tcptune; never an iperf3 server, since the test runs elsewhere); the test session runs
//! `tcptune advise` toward it there and sends back its JSON. Both sessions are closed before
//! this returns, whatever happened: nothing is left running or written on either host.

use std::time::{Duration, Instant};

use super::{Advised, FarEnd, Keys, Target, TestAt, Want};
use crate::error::Error;

/// How the pair's sessions are opened.
#[derive(Debug, Clone)]
pub struct Options {
    pub ssh_command: Option<String>,
    /// The longest test each way (None: advise's own).
    pub test_time: Option<Duration>,
    /// How long a peer may live: the test end's probes and both tests, with slack.
    pub life: Duration,
}

/// One host as the control host reaches it.
#[derive(Debug, Clone)]
pub struct Reach {
    /// As ssh takes it.
    pub dest: String,
    /// Its address for the paths (the host name ssh connects to).
    pub addr: String,
}

/// What the facts-only session found of `dest` (nothing started there): whether it answers,
/// its address for the paths, its OS.
pub fn probe_host(dest: &str, opts: &Options) -> Result<FarEnd, Error> {
    let t = Target {
        dest: dest.to_string(),
        ssh_command: opts.ssh_command.clone(),
        host: None,
        want: Want::Nothing,
        keys: Keys::default(),
        life: Duration::from_secs(5),
        iperf3: false,
        test: None,
    };
    let (opening, far) = super::open(&t)?;
    opening.close();
    Ok(far)
}

/// What the pair's test end printed, and how long the pair took.
#[derive(Debug, Clone)]
pub struct PairRun {
    pub advised: Advised,
    pub took: Duration,
    /// The peer, as the far host's session said it.
    pub peer: String,
}

/// Runs the pair `from → to`: the peer on `to`, then the test on `from` toward it.
pub fn run_pair(from: &Reach, to: &Reach, opts: &Options) -> Result<PairRun, Error> {
    let started = Instant::now();
    let peer = Target {
        dest: to.dest.clone(),
        ssh_command: opts.ssh_command.clone(),
        host: Some(to.addr.clone()),
        want: Want::Tcptune,
        keys: Keys::default(),
        life: opts.life,
        iperf3: false,
        test: None,
    };
    let (peer_open, far) = super::open(&peer)?;
    let result = (|| {
        let listening = far.peer.as_ref().ok_or_else(|| {
            Error::measurement(format!("ssh {}: no peer started there", crate::text::escape(&to.dest)))
        })?;
        let test = Target {
            dest: from.dest.clone(),
            ssh_command: opts.ssh_command.clone(),
            host: Some(from.addr.clone()),
            want: Want::Advise,
            keys: Keys::default(),
            life: opts.life,
            iperf3: false,
            test: Some(TestAt {
                host: to.addr.clone(),
                port: listening.port,
                ms: opts
                    .test_time
                    .map_or(0, |t| u64::try_from(t.as_millis()).unwrap_or(u64::MAX).max(1)),
            }),
        };
        let test_open = super::start(&test)?;
        let got = test_open
            .wait()
            .and_then(|_| test_open.session().read_advice(Instant::now() + opts.life));
        test_open.close();
        Ok(PairRun {
            advised: got?,
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
