//! `tcptune apply`: change the running kernel from a sysctl file or fresh advice, so that
//! it can always be put back. The transaction itself — its order, and why — is
//! [`crate::change`]; this command turns the arguments into a request, takes the store's
//! lock, and prints what happened.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use crate::change::{self, ApplyRequest, Input};
use crate::cli::ApplyArgs;
use crate::cmd::Context;
use crate::cmd::store::{Intent, open_store};
use crate::error::Error;
use crate::os::Os;
use crate::output;
use crate::snapshot::Store;
use crate::units::Bitrate;

pub fn run(a: &ApplyArgs, ctx: &Context, out: &mut dyn Write) -> anyhow::Result<ExitCode> {
    let format = ctx.report_format();
    let backend = ctx.changing_backend("apply")?;
    let input = gather(a, ctx)?;
    for n in &input.notes {
        eprintln!("note: {n}");
    }
    check_root(a, ctx)?;
    let store = Store::new(&ctx.state_dir);
    let env = ctx.change_env(backend, &store);
    let req = request(a, ctx);
    if input.is_empty() {
        // Nothing to write, so no lock, no state directory, no snapshot.
        let (plan, _) = change::dry_run(&env, &input, &req)?;
        output::change::nothing(out, format, &plan, &input.nothing_set())?;
        return Ok(ExitCode::SUCCESS);
    }
    if req.dry_run {
        let (plan, files) = change::dry_run(&env, &input, &req)?;
        output::change::dry_run(out, format, &plan, &files)?;
        return Ok(ExitCode::SUCCESS);
    }
    // Fail before waiting for the lock: nothing the kernel would refuse gets that far.
    change::preflight(&env, &input, false)?;
    // Its lock is held until this returns, past the last kernel write.
    let opened = open_store(&store, Intent::Change { wait: a.wait })?;
    let t = change::prepare(&env, &input, &req, &opened.snapshots)?;
    for n in &t.plan.notes {
        eprintln!("note: {n}");
    }
    for s in &t.plan.skipped {
        eprintln!("skipped: {s}");
    }
    if t.is_empty() {
        output::change::nothing(out, format, &t.plan, "every value is already set")?;
        return Ok(ExitCode::SUCCESS);
    }
    let t = change::commit(&env, &req, t)?;
    output::change::applied(out, format, &env, &t)?;
    Ok(ExitCode::SUCCESS)
}

/// A real apply off Linux needs root from the start: sysctl(8) reports every key writable,
/// so the preflight cannot name the keys that need root as it does from /proc/sys modes.
fn check_root(a: &ApplyArgs, ctx: &Context) -> anyhow::Result<()> {
    if ctx.local && ctx.os != Os::Linux && !a.dry_run && !crate::host::is_root() {
        return Err(
            Error::not_permitted("changing kernel settings needs root: run tcptune apply with sudo")
                .with_hint("--dry-run shows the changes without root")
                .into(),
        );
    }
    Ok(())
}

/// The typed form of the options that say how to apply.
fn request(a: &ApplyArgs, ctx: &Context) -> ApplyRequest {
    ApplyRequest {
        dry_run: a.dry_run,
        persist: a.persist,
        for_: a.for_,
        persist_root: a.persist_root.clone().unwrap_or_else(|| PathBuf::from("/")),
        timer_args: ctx.forward_args.clone(),
        pause_before_routes: a.pause_before_routes.map(std::time::Duration::from_secs),
    }
}

/// The file, stdin, or fresh advice, parsed and checked.
fn gather(a: &ApplyArgs, ctx: &Context) -> anyhow::Result<Input> {
    let adv = &a.advice;
    let wants_advice = !adv.host.is_empty() || adv.ssh.is_some() || adv.rtt.is_some() || adv.bandwidth.is_some();
    match (&a.file, wants_advice) {
        (Some(_), true) => {
            Err(Error::usage("give either FILE or --host / --ssh / --rtt and --bandwidth, not both").into())
        }
        (None, false) => Err(Error::usage(
            "apply needs a sysctl FILE (or - for stdin), or --host HOST / --ssh DEST / --rtt DUR --bandwidth RATE for fresh advice",
        )
        .with_hint("e.g. tcptune apply --rtt 150ms --bandwidth 500mbit --dry-run")
        .into()),
        (Some(_), false) if adv.scope == crate::cli::Scope::Path => Err(Error::usage(
            "--scope path makes fresh advice: a FILE says its own scope (its `# route:` lines, as advise --scope path and mesh write them)",
        )
        .into()),
        (Some(file), false) => Input::from_file((file.as_os_str() != "-").then_some(file.as_path()), ctx.os),
        (None, true) => {
            let advice = super::advice_from_args(adv, ctx)?.near;
            let route = route_of(&advice)?;
            // The host as typed: an IP literal resolves with a newline around it.
            let host = advice
                .host
                .as_deref()
                .map(|h| format!(" to {}", crate::text::escape(h)))
                .unwrap_or_default();
            let source = format!(
                "advice{host}: RTT {} ms, {} (profile {})",
                advice.rtt_ms,
                Bitrate::from_bps(advice.bandwidth_bps),
                advice.profile
            );
            let mut input = Input::from_settings(
                &advice.settings,
                ctx.os,
                source,
                advice.warnings.iter().map(|w| w.line().to_string()).collect(),
            )?;
            input.routes = route.into_iter().collect();
            Ok(input)
        }
    }
}

/// The host route fresh `--scope path` advice sets: none when it is in place already (said in
/// a note); an error when it cannot be set here, rather than apply the buffers without it.
fn route_of(advice: &crate::advice::Advice) -> anyhow::Result<Option<change::route::RouteWant>> {
    use crate::profile::Action;
    let Some(r) = &advice.route else {
        return Ok(None);
    };
    match &r.action {
        Action::Set => Ok(Some(change::route::RouteWant {
            dest: r.dest,
            algorithm: r.algorithm.clone(),
            line: None,
        })),
        Action::Keep => {
            eprintln!(
                "note: new connections to {} run {} already: no host route needed",
                r.dest, r.algorithm
            );
            Ok(None)
        }
        Action::Unavailable(why) => Err(
            Error::not_permitted(format!("--scope path: {why}; nothing was written"))
                .with_hint("--scope host-wide sets the host-wide net.ipv4.tcp_congestion_control instead")
                .into(),
        ),
    }
}
