//! The far end reached with `advise --ssh`: which keys to read there, whatever OS it runs, and
//! its own advice for the path measured here, from its facts and its OS's profile.

use super::{Advice, AdviceRequest, End, Measured, advise_end, keys_read};
use crate::os::Os;
use crate::profile::Profile;
use crate::{remote, text};

/// The keys to read on the far end, for whichever OS it runs: each OS's shipped profile's,
/// with this command's profile's for its own OS, and on Linux the keys [`crate::host::facts`]
/// always carries (and net.core.rmem_max, whose mode tells a child namespace).
pub fn keys(profile: &Profile) -> remote::Keys {
    use crate::host::facts as f;
    let keys = |os: Os| {
        let mut k = keys_read(&Profile::for_os(os));
        if profile.os == os {
            k.extend(keys_read(profile));
        }
        if os == Os::Linux {
            k.extend(f::ALWAYS.into_iter().chain(["net.core.rmem_max"]).map(String::from));
        }
        k.sort();
        k.dedup();
        k
    };
    remote::Keys {
        linux: keys(Os::Linux),
        freebsd: keys(Os::Freebsd),
        macos: keys(Os::Macos),
    }
}

/// The far end's own advice for the measured path, with its facts and its OS's profile (this
/// command's, when it is for that OS). None when it runs an OS tcptune does not advise for.
pub fn advice(
    req: &AdviceRequest,
    profile: &Profile,
    far: &remote::FarEnd,
    m: &Measured,
) -> anyhow::Result<Option<Advice>> {
    let (Some(os), Some(facts)) = (far.os, far.facts.as_ref()) else {
        return Ok(None);
    };
    let far_profile = if profile.os == os {
        profile.clone()
    } else {
        Profile::for_os(os)
    };
    let name = format!("the far end {}", text::escape(&far.dest));
    advise_end(req, &far_profile, facts, m, End::Far, &name).map(Some)
}

/// What `advise --ssh DEST` settles before its session starts: this host's profile and the
/// keys it reads ([`super::prepare`]), and what to ask of the far end ([`Plan::target`]) with
/// the line that says so, to say before anything runs there.
pub struct Plan {
    pub profile: Profile,
    pub keys: Vec<String>,
    /// Its peer when the path is to be measured (the test's server for the request's test
    /// mode), the keys to read there ([`keys`]), how long its peer may live; its address for
    /// the path resolved (`host`, else the name ssh connects to).
    pub target: remote::Target,
    /// What will run there, in one line.
    pub line: String,
}

/// The [`Plan`] of `advise --ssh DEST` for `req` on `os`: `ssh` is the destination and the ssh
/// command, `host` the far end's address for the path when given, `iperf3` whether an iperf3
/// server there may stand in for tcptune's peer.
pub fn plan(
    req: &AdviceRequest,
    os: Os,
    ssh: (&str, Option<&str>),
    host: Option<&str>,
    iperf3: bool,
) -> Result<Plan, crate::error::Error> {
    use crate::measure::TestMode;
    let (profile, own_keys) = super::prepare(req, os)?;
    let t = remote::Target {
        dest: ssh.0.to_string(),
        ssh_command: ssh.1.map(str::to_string),
        host: host.map(str::to_string),
        want: match req.test.mode {
            _ if !req.measures() => remote::Want::Nothing,
            TestMode::Off => remote::Want::Nothing,
            TestMode::Iperf3 => remote::Want::Iperf3,
            TestMode::Tcptune => remote::Want::Tcptune,
        },
        keys: keys(&profile),
        life: remote::lifetime(&req.probe, req.test_time),
        iperf3,
        test: None,
    };
    let target = remote::resolved(&t)?;
    let line = remote::plan_line(&target);
    Ok(Plan {
        profile,
        keys: own_keys,
        target,
        line,
    })
}

/// The far end once the path is measured: its session awaited and closed, and its own advice
/// ([`advice`]); with `--scope path`, its congestion control on its route back to this host.
pub fn finish(
    session: &remote::Opening,
    req: &AdviceRequest,
    profile: &Profile,
    m: &Measured,
) -> anyhow::Result<(remote::FarEnd, Option<Advice>)> {
    let found = session.wait();
    session.close();
    let found = found?;
    let mut own = advice(req, profile, &found, m)?;
    if let Some(a) = own.as_mut()
        && req.scope == super::scope::Scope::Path
    {
        super::scope::back_to_path(a, found.route_back.as_ref());
    }
    Ok((found, own))
}
