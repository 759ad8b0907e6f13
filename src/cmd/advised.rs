//! The advice the commands ask for, gathered once: this host's facts, and with `--ssh` the
//! far end reached through the user's own SSH ([`crate::remote`]), its facts and its own
//! advice for the same measured path. advise, apply and check call these.

use super::{Context, escape_message};
use crate::advice;
use crate::cli::AdviseArgs;
use crate::error::Error;
use crate::{remote, text};

/// The advice for `req` on this context's system: its profile loaded, the facts it reads
/// gathered once, then computed ([`advice::advise`] reads nothing of the machine itself).
pub fn advice_for(req: &advice::AdviceRequest, ctx: &Context) -> anyhow::Result<advice::Advice> {
    let (profile, keys) = advice::prepare(req, ctx.os)?;
    let facts = ctx.host_facts(&keys);
    advice::advise(req, &profile, &facts, ctx.prober()).map_err(escape_message)
}

/// What the advice arguments gave: this host's advice and, with `--ssh`, the far end as its
/// session found it and its own advice for the same path (None when it runs an OS tcptune does
/// not advise for).
pub struct Advised {
    pub near: advice::Advice,
    pub far: Option<(remote::FarEnd, Option<advice::Advice>)>,
}

/// The advice the advice arguments ask for (advise's and apply's), and with `--ssh` the far
/// end's ([`remote`]): the session is opened first (its host becomes the path's host unless
/// `--host` names one), the path test aims at the peer it started, and the session is closed
/// (its stdin closed, its end awaited) before this returns, whatever the advice's fate. The
/// path is measured once; each end's advice reads the direction it sends in for its
/// congestion control and send buffer, the other for its receive buffer.
pub fn advice_from_args(args: &AdviseArgs, ctx: &Context) -> anyhow::Result<Advised> {
    let started = std::time::Instant::now();
    super::scoped::check_args(args, ctx.os)?;
    let mut advised = both_ends(args, ctx)?;
    // The whole, from here to the advice; with --ssh, the session's set-up beside the probes.
    let setup = advised.far.as_ref().map(|(f, _)| f.setup.as_secs_f64());
    let ends = std::iter::once(&mut advised.near).chain(advised.far.as_mut().and_then(|(_, a)| a.as_mut()));
    for a in ends {
        if let Some(t) = &mut a.timing {
            t.setup_s = setup;
            t.total_s = Some(started.elapsed().as_secs_f64());
        }
    }
    Ok(advised)
}

/// [`advice_from_args`] before the whole's time is said: this host's advice, and the far
/// end's with `--ssh`.
fn both_ends(args: &AdviseArgs, ctx: &Context) -> anyhow::Result<Advised> {
    let mut req = args.request(ctx.progress.clone());
    let Some(dest) = &args.ssh else {
        let near = advice_for(&req, ctx)?;
        return Ok(Advised { near, far: None });
    };
    if args.host.len() > 1 {
        return Err(Error::usage(
            "--ssh takes one far end: give at most one --host with it (its address for the path)",
        )
        .into());
    }
    if args.test_port.is_some() {
        return Err(Error::usage("--ssh chooses the test's port on the far end: leave out --test-port").into());
    }
    let ssh = (dest.as_str(), args.ssh_command.as_deref());
    let host = args.host.first().map(String::as_str);
    let advice::far::Plan {
        profile,
        keys,
        target,
        line,
    } = advice::far::plan(&req, ctx.os, ssh, host, args.allow_iperf3)?;
    // What will run there, said before anything does.
    eprintln!("{line}");
    // The probes run while the session is set up; the test waits for its peer.
    let far = remote::start(&target)?;
    if req.measures() && req.hosts.is_empty() {
        req.hosts = vec![far.host().to_string()];
    }
    req.ssh_host = Some(far.host().to_string());
    let facts = ctx.host_facts(&keys);
    let prober = remote::prober::FarProber {
        inner: ctx.prober(),
        far: &far,
    };
    let (measured, near) = match advice::advise_measured(&req, &profile, &facts, &prober) {
        Ok(both) => both,
        // Said as it is (the far end's own error, when it was that): the session is ended, not
        // awaited.
        Err(e) => {
            far.close();
            return Err(escape_message(e));
        }
    };
    let (found, far_advice) = advice::far::finish(&far, &req, &profile, &measured)?;
    eprintln!("{}", far_line(&found));
    Ok(Advised {
        near,
        far: Some((found, far_advice)),
    })
}

/// What the session started, on stderr: the far end, its peer, how long SSH took.
fn far_line(far: &remote::FarEnd) -> String {
    let peer = far.peer.as_ref().map_or_else(
        || "no peer (no path test)".to_string(),
        |p| format!("{} for the path test", p.describe()),
    );
    format!(
        "ssh {} ({}): {peer}; set up in {:.2} s",
        text::escape(&far.dest),
        far.uname,
        far.setup.as_secs_f64()
    )
}
