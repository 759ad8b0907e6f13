//! `tcptune check`: is this host healthy for bulk TCP? The verdicts are [`crate::check`]'s; this
//! command reads the arguments, measures the path for `--host` (through the advice), gathers
//! this machine's facts when the sysctls are its own (with what its snapshot store, in
//! `--state-dir`, says of tcptune's host routes), and renders the report.
//!
//! # Platform specific behavior
//! * Linux: sysctls through the backend; on the machine itself also sysfs, SIOCETHTOOL,
//!   rtnetlink (qdiscs), /proc/net/{snmp,sockstat,route,ipv6_route}, sysctl.d files, /proc/*/comm
//!   ([`crate::host`]).
//! * FreeBSD/macOS: the sysctl equivalents (net.inet.tcp.rfc1323, sack.enable / sack,
//!   cc.algorithm, autotuning switches and maxima) through sysctl(8).

use std::io::Write;
use std::process::ExitCode;

use crate::advice::{Advice, AdviceRequest};
use crate::check::applied::{Applied, ReadRoutes};
use crate::check::{self, CheckRequest, PathNeeds, Report};
use crate::cli::CheckArgs;
use crate::cmd::Context;
use crate::error::{Error, exit};
use crate::measure::ProbeOptions;
use crate::os::Os;
use crate::output;
use crate::snapshot::{Identity, RouteChange, Snapshot, Store};
use crate::sysctl::KeyState;

pub fn run(a: &CheckArgs, ctx: &Context, out: &mut dyn Write) -> anyhow::Result<ExitCode> {
    let format = ctx.report_format();
    let report = report(a, ctx)?;
    output::render::report(out, format, &report, |out| {
        // The terminal's width (or COLUMNS); piped, never over the 100 columns of a pipe.
        let width = ctx.term.columns.unwrap_or(output::check::WIDTH);
        let width = if ctx.term.stdout_tty {
            width
        } else {
            width.min(output::check::WIDTH)
        };
        output::check::write_table(out, &report, ctx.term.stdout_tty, ctx.term.color, width)
    })?;
    Ok(if report.summary.warn + report.summary.fail > 0 {
        ExitCode::from(exit::CHECK_FOUND_PROBLEMS)
    } else {
        ExitCode::SUCCESS
    })
}

/// The diagnosis for these arguments (`--host` measured with the context's prober).
pub fn report(a: &CheckArgs, ctx: &Context) -> anyhow::Result<Report> {
    // The rate is the path's, for the buffer check against --host: without a host there is
    // no path to give it to, and a rate ignored in silence would read as checked.
    if a.bandwidth.is_some() && a.host.is_none() {
        return Err(
            Error::usage("check --bandwidth is the rate of the path to --host, and no --host was given")
                .with_hint("add --host HOST to check the buffers against that path, or leave out --bandwidth")
                .into(),
        );
    }
    let Some(backend) = ctx.backend.as_deref() else {
        return Err(Error::usage(format!(
            "check reads the running values of {}: run it there (or give --sysctl-dir / --sysctl-cmd)",
            ctx.os
        ))
        .into());
    };
    let read = |k: &str| match backend.read(k) {
        KeyState::Present { value, .. } => Some(value),
        _ => None,
    };
    let path = match &a.host {
        Some(h) => {
            let req = AdviceRequest {
                bandwidth: a.bandwidth,
                flows: a.flows,
                probe: ProbeOptions {
                    progress: ctx.progress.clone(),
                    ..ProbeOptions::default()
                },
                ..AdviceRequest::for_hosts(vec![h.clone()])
            };
            Some(path_needs(&super::advice_for(&req, ctx)?))
        }
        None => None,
    };
    let req = CheckRequest {
        os: ctx.os,
        current_from: backend.describe(),
        host: a.host.clone(),
        flows: a.flows,
        path,
    };
    // Interfaces, counters and files describe this machine: only when the sysctls are its own.
    let local = if ctx.local && ctx.os == Os::Linux {
        local_facts(ctx, &backend.describe(), &read, req.path.as_ref())
    } else {
        None
    };
    let (applied, unread) = applied(ctx, &backend.describe(), &read);
    Ok(check::check(&req, &read, local.as_ref()).with_applied(applied, unread.as_deref(), &ctx.again_args))
}

/// The snapshots still applied here (as a bare revert picks them: same OS, target and network
/// namespace; any boot), newest first, each judged against the running values and, on this
/// machine itself, its host routes; and why the store could not be read in whole, if so.
fn applied(ctx: &Context, target: &str, read: &check::Read<'_>) -> (Vec<Applied>, Option<String>) {
    let store = Store::new(&ctx.state_dir);
    let dir = crate::text::escape(&store.dir().display().to_string());
    let (snaps, unreadable) = match store.list() {
        Ok(listed) => listed,
        Err(e) => {
            return (
                Vec::new(),
                Some(crate::text::escape(&format!(
                    "its snapshots in {dir} could not be read: {e:#}"
                ))),
            );
        }
    };
    let here = Identity::current(ctx.os);
    let mine: Vec<(&Snapshot, bool)> = snaps
        .iter()
        .rev()
        .filter(|s| s.state.needs_revert() && s.same_place(ctx.os, target, &here))
        .map(|s| (s, s.same_boot(&here)))
        .collect();
    let routes = |c: &RouteChange| crate::route::netlink::host_routes(c.in_effect().dst).map_err(|e| format!("{e:#}"));
    let on_this_machine = ctx.local && ctx.os == Os::Linux;
    let applied = check::applied::judge_all(&mine, read, on_this_machine.then_some(&routes as &ReadRoutes<'_>));
    // A file that could not be read may be a snapshot still applied: said, never passed over.
    let unread = (!unreadable.is_empty()).then(|| {
        let mut each: Vec<String> = unreadable
            .iter()
            .map(|(path, why)| {
                let name = path.file_name().unwrap_or_default().to_string_lossy();
                format!("{}: {why}", crate::text::escape(&name))
            })
            .collect();
        each.sort();
        format!(
            "{} in {dir} could not be read, any of them maybe a snapshot still applied ({})",
            check::counted(unreadable.len() as u64, "file", "files"),
            each.join("; ")
        )
    });
    (applied, unread)
}

/// This machine's facts (Linux builds; None elsewhere); `target`: where its sysctls are read.
#[cfg(target_os = "linux")]
fn local_facts(
    ctx: &Context,
    target: &str,
    read: &check::Read<'_>,
    path: Option<&PathNeeds>,
) -> Option<check::facts::LocalFacts> {
    let towards = path.and_then(|p| p.link.as_ref()).and_then(|l| l.interface.as_deref());
    let bbr = read("net.ipv4.tcp_congestion_control").as_deref() == Some("bbr");
    // Whether fq can be had: the fact advise leaves fq out by, gathered as advise gathers it.
    let sch_fq = ctx.host_facts(&[]).sch_fq;
    Some(check::facts::gather(towards, bbr, sch_fq, route_snapshots(ctx, target)))
}

#[cfg(not(target_os = "linux"))]
fn local_facts(_: &Context, _: &str, _: &check::Read<'_>, _: Option<&PathNeeds>) -> Option<check::facts::LocalFacts> {
    None
}

/// Which host routes the snapshots in `--state-dir` name that `revert` would remove here: those
/// of a snapshot still in effect taken here (as a bare revert picks them: same OS, `target`
/// and network namespace), in this boot (an earlier boot's routes ended with it).
#[cfg(target_os = "linux")]
fn route_snapshots(ctx: &Context, target: &str) -> check::facts::RouteSnapshots {
    let store = Store::new(&ctx.state_dir);
    let here = Identity::current(ctx.os);
    let mut out = check::facts::RouteSnapshots {
        state_dir: store.dir().to_path_buf(),
        ..check::facts::RouteSnapshots::default()
    };
    match store.list() {
        Ok((snaps, unreadable)) => {
            // Oldest first: a newer snapshot of the same route is the one named.
            for s in snaps
                .iter()
                .filter(|s| s.state.needs_revert() && s.same_place(ctx.os, target, &here) && s.same_boot(&here))
            {
                for r in &s.routes {
                    out.named.insert(r.dest.clone(), s.id.clone());
                }
            }
            if !unreadable.is_empty() {
                out.unread = Some(format!(
                    "{} there could not be read (tcptune snapshots lists them)",
                    check::counted(unreadable.len() as u64, "file", "files")
                ));
            }
        }
        Err(e) => out.unread = Some(format!("its snapshots could not be read: {e}")),
    }
    out
}

/// What check reads of the advice for the path.
fn path_needs(adv: &Advice) -> PathNeeds {
    PathNeeds {
        host: adv.host.clone(),
        rtt_ms: adv.rtt_ms,
        bandwidth_bps: adv.bandwidth_bps,
        bandwidth_source: adv.bandwidth_source,
        sizing: adv.sizing,
        settings: adv.settings.iter().map(|s| (s.key.clone(), s.value.clone())).collect(),
        link: adv.hosts.first().map(|h| h.measurement.link.clone()),
    }
}
