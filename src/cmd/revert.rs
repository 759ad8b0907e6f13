//! `tcptune revert`: put back the values a snapshot replaced (which keys, and why, is
//! [`crate::change::revert`]); and `revert-timer`, the detached process behind
//! `apply --for`. This command picks the snapshot, takes the store's lock, and prints.

use std::io::Write;
use std::process::ExitCode;
use std::time::{Duration, SystemTime};

use crate::change::{self, RevertOpts, timer};
use crate::cli::{Format, RevertArgs, RevertTimerArgs};
use crate::cmd::Context;
use crate::cmd::store::{Intent, open_store};
use crate::error::Error;
use crate::snapshot::{Identity, Store};

pub fn run(a: &RevertArgs, ctx: &Context, out: &mut dyn Write) -> anyhow::Result<ExitCode> {
    let format = ctx.report_format("revert")?;
    let backend = ctx.changing_backend("revert")?;
    let store = Store::new(&ctx.state_dir);
    if !store.dir().join("snapshots").is_dir() {
        // An id names something that must exist: an empty store is no excuse to say "done".
        if let Some(q) = &a.id {
            return Err(
                Error::usage(format!("no snapshot {q}: no snapshots in {}", store.dir().display()))
                    .with_hint("tcptune snapshots lists them; --state-dir DIR if apply used one")
                    .into(),
            );
        }
        return nothing(out, format, &format!("no snapshots in {}", store.dir().display()));
    }
    let intent = if a.dry_run {
        Intent::Read
    } else {
        Intent::Change { wait_s: a.wait }
    };
    // Its lock (none for a dry run) is held until this returns, past the revert's record.
    let opened = open_store(&store, intent)?;
    let snap = match &a.id {
        Some(q) => store.find(q)?,
        None => {
            let here = Identity::current(ctx.os);
            match change::revert::latest(&opened.snapshots, ctx.os, &backend.describe(), &here) {
                Ok(s) => s.clone(),
                Err(why) => return nothing(out, format, &why),
            }
        }
    };
    if let Some(why) = change::revert::finished(&snap) {
        return nothing(out, format, &why);
    }
    let root = a.persist_root.clone().unwrap_or_else(|| "/".into());
    let opts = RevertOpts {
        force: a.force,
        dry_run: a.dry_run,
        by: "tcptune revert",
        persist_root: &root,
    };
    let env = ctx.change_env(backend, &store);
    let o = change::revert(&env, snap, opts)?;
    for w in &o.warnings {
        eprintln!("warning: {w}");
    }
    if format == Format::Json {
        crate::output::json(out, &o)?;
    } else if a.dry_run {
        for r in &o.restored {
            writeln!(out, "{}: {} \u{2192} {}", r.key, r.from, r.to)?;
        }
        for k in &o.unchanged {
            writeln!(out, "{k}: already at its prior value")?;
        }
        for f in &o.files {
            writeln!(out, "# {}: {}", f.path.display(), f.outcome)?;
        }
    }
    if a.dry_run {
        eprintln!(
            "dry run: {} key(s) would be restored from snapshot {}; nothing was changed",
            o.restored.len(),
            o.snapshot
        );
    } else {
        for r in &o.restored {
            eprintln!("{}: {} -> {}", r.key, r.from, r.to);
        }
        for f in &o.files {
            eprintln!("{}: {}", f.path.display(), f.outcome);
        }
        eprintln!(
            "reverted snapshot {}: {} key(s) restored{}",
            o.snapshot,
            o.restored.len(),
            match o.unchanged.len() {
                0 => String::new(),
                n => format!(", {n} already at the prior value"),
            }
        );
    }
    Ok(ExitCode::SUCCESS)
}

fn nothing(out: &mut dyn Write, format: Format, why: &str) -> anyhow::Result<ExitCode> {
    eprintln!("nothing to revert: {why}");
    if format == Format::Json {
        crate::output::json(out, &serde_json::json!({ "snapshot": null, "reason": why }))?;
    }
    Ok(ExitCode::SUCCESS)
}

/// The detached process behind `apply --for`: wait for the snapshot's expiry, then revert
/// it (unless someone already did). Its output goes to STATE_DIR/timer-ID.log.
pub fn run_timer(a: &RevertTimerArgs, ctx: &Context) -> anyhow::Result<ExitCode> {
    crate::signals::ignore_hangup();
    let stamp = || humantime::format_rfc3339_seconds(SystemTime::now());
    let backend = ctx.changing_backend("revert-timer")?;
    let store = Store::new(&ctx.state_dir);
    eprintln!("{}: timer pid {} for snapshot {}", stamp(), std::process::id(), a.id);
    if let Some(state) = timer::wait_for_expiry(&store, &a.id)? {
        eprintln!("{}: snapshot {} is {state}: nothing to do", stamp(), a.id);
        return Ok(ExitCode::SUCCESS);
    }
    let _lock = store.lock(Duration::from_secs(600), &|_| {
        eprintln!("{}: waiting for the lock", stamp());
    })?;
    let env = ctx.change_env(backend, &store);
    if let Some(o) = timer::revert_expired(&env, &a.id)? {
        for w in &o.warnings {
            eprintln!("{}: warning: {w}", stamp());
        }
        eprintln!(
            "{}: reverted snapshot {}: {} key(s) restored",
            stamp(),
            o.snapshot,
            o.restored.len()
        );
    }
    Ok(ExitCode::SUCCESS)
}
