//! `tcptune revert`: put back the values a snapshot replaced (which keys, and why, is
//! [`crate::change::revert`]); and `revert-timer`, the detached process behind
//! `apply --for`. This command picks the snapshot, takes the store's lock, and prints.

use std::io::Write;
use std::process::ExitCode;
use std::time::{Duration, SystemTime};

use crate::change::{self, RevertOpts, timer};
use crate::cli::{Format, RevertArgs, RevertTimerArgs};
use crate::cmd::Context;
use crate::cmd::store::{Intent, Opened, open, warn_unreadable};
use crate::error::Error;
use crate::output::change as output;
use crate::snapshot::{Identity, Snapshot, Store};

pub fn run(a: &RevertArgs, ctx: &Context, out: &mut dyn Write) -> anyhow::Result<ExitCode> {
    let format = ctx.report_format();
    let backend = ctx.changing_backend("revert")?;
    let store = Store::new(&ctx.state_dir);
    if !store.dir().join("snapshots").is_dir() {
        return empty_store(a, out, format, &store);
    }
    let intent = if a.dry_run {
        Intent::Read
    } else {
        Intent::Change { wait: a.wait }
    };
    // Its lock (none for a dry run) is held until this returns, past the revert's record.
    let opened = open(&store, intent)?;
    let snap = match pick(a, ctx, &store, &opened, &backend.describe())? {
        Ok(snap) => snap,
        Err(why) => {
            output::nothing_to_revert(out, format, &why)?;
            return Ok(ExitCode::SUCCESS);
        }
    };
    let root = a.persist_root.clone().unwrap_or_else(|| "/".into());
    let opts = RevertOpts {
        force: a.force,
        dry_run: a.dry_run,
        by: "tcptune revert",
        persist_root: &root,
    };
    let o = change::revert(&ctx.change_env(backend, &store), snap, opts)?;
    output::reverted(out, format, a.dry_run, &o)?;
    Ok(ExitCode::SUCCESS)
}

/// No snapshot directory: nothing to revert, unless an id was given.
fn empty_store(a: &RevertArgs, out: &mut dyn Write, format: Format, store: &Store) -> anyhow::Result<ExitCode> {
    // An id names something that must exist: an empty store is no excuse to say "done".
    if let Some(q) = &a.id {
        return Err(Error::usage(format!(
            "no snapshot {}: no snapshots in {}",
            crate::text::escape(q),
            store.dir().display()
        ))
        .with_hint("tcptune snapshots lists them; --state-dir DIR if apply used one")
        .into());
    }
    output::nothing_to_revert(out, format, &format!("no snapshots in {}", store.dir().display()))?;
    Ok(ExitCode::SUCCESS)
}

/// The snapshot to revert: the one `a` names, else the latest taken here (on `target`).
/// Inner Err: why there is nothing to revert. A file of the store that could not be read may
/// be the latest snapshot, still in effect: a bare revert refuses to pass over it.
fn pick(
    a: &RevertArgs,
    ctx: &Context,
    store: &Store,
    opened: &Opened,
    target: &str,
) -> anyhow::Result<Result<Snapshot, String>> {
    let snap = match &a.id {
        Some(q) => {
            let snap = store.find(q)?;
            // The others it passes over are said, not skipped in silence.
            warn_unreadable(opened);
            snap
        }
        None => {
            if let Some((path, why)) = opened.unreadable.first() {
                return Err(unreadable(store, path, why, opened.unreadable.len()).into());
            }
            match change::revert::latest(&opened.snapshots, ctx.os, target, &Identity::current(ctx.os)) {
                Ok(s) => s.clone(),
                Err(why) => return Ok(Err(why)),
            }
        }
    };
    Ok(change::revert::finished(&snap).map_or(Ok(snap), Err))
}

/// The refusal of a bare revert beside a file it could not read (`count` of them): which is
/// the latest snapshot, and whether every one is reverted, cannot be told.
fn unreadable(store: &Store, path: &std::path::Path, why: &str, count: usize) -> Error {
    let more = match count {
        1 => String::new(),
        n => format!(" (and {} more: tcptune snapshots lists them)", n - 1),
    };
    Error::usage(format!(
        "cannot tell which snapshot to revert: snapshot file {} could not be read ({why}){more}; nothing was changed",
        crate::text::escape(&path.display().to_string())
    ))
    .with_hint(format!(
        "what it changed stays as it is: restore it from a backup, or put its values and routes back by hand and move it out of {}; tcptune revert ID reverts another snapshot",
        store.dir().join("snapshots").display()
    ))
}

/// The detached process behind `apply --for`: wait for the snapshot's expiry, then revert
/// it (unless someone already did). Its output goes to STATE_DIR/timer-ID.log.
pub fn run_timer(a: &RevertTimerArgs, ctx: &Context) -> anyhow::Result<ExitCode> {
    crate::signals::ignore_hangup();
    let stamp = || humantime::format_rfc3339_seconds(SystemTime::now());
    let backend = ctx.changing_backend("revert-timer")?;
    let store = Store::new(&ctx.state_dir);
    // The id is a command-line argument like any other: shown escaped.
    let shown = crate::text::escape(&a.id);
    eprintln!("{}: timer pid {} for snapshot {shown}", stamp(), std::process::id());
    if let Some(state) = timer::wait_for_expiry(&store, &a.id)? {
        eprintln!("{}: snapshot {shown} is {state}: nothing to do", stamp());
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
        for r in &o.routes {
            eprintln!(
                "{}: {}",
                stamp(),
                crate::output::route_change(&r.dest.to_string(), "", &[&r.from, &r.to])
            );
        }
        eprintln!("{}: {}", stamp(), output::done(&o));
    }
    Ok(ExitCode::SUCCESS)
}
