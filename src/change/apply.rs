//! The order of an apply, and why:
//! 1. parse and check every line ([`Input`]; nothing is read yet) — bad input exits 2;
//! 2. read every current value and check each new value against it ([`preflight`]: absent
//!    keys, shapes, congestion-control names the kernel offers, read-only keys) — still
//!    nothing written; `--dry-run` stops here ([`dry_run`]);
//! 3. under the store's lock (the caller takes it), read the values again (another apply may
//!    just have finished) and build the snapshot ([`prepare`]);
//! 4. save it in state `applying`, write, read back (a clamped or rounded value is reported
//!    and recorded); on the first failure undo the writes already made, in reverse, and mark
//!    the snapshot `rolled-back` ([`commit`]);
//! 5. `--persist` files; then the snapshot becomes `applied`, and `--for` starts its timer.
//!
//! Ctrl-C and SIGTERM are held back from 4 to 5 ([`crate::signals`]).

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Serialize;

use super::plan::{Input, Plan, persist_plan, preflight};
use super::revert::{RevertOpts, revert};
use super::write::{before_any_write, undo_after_failed_save, write_all};
use super::{Env, timer};
use crate::error::Error;
use crate::os::Os;
use crate::persist;
use crate::signals;
use crate::snapshot::{FileChange, Identity, Snapshot, State};

/// How to apply, beyond what: the typed form of `apply`'s options.
#[derive(Debug, Clone)]
pub struct ApplyRequest {
    pub dry_run: bool,
    /// Also write the boot-time files (`--persist`).
    pub persist: bool,
    /// `--for`: revert by itself after this long.
    pub for_: Option<Duration>,
    /// The directory standing for / in `--persist` paths (`/` but in tests).
    pub persist_root: PathBuf,
    /// The options for a tcptune started by this one (the `--for` timer), typed after its
    /// subcommand.
    pub timer_args: Vec<OsString>,
    /// Tests only: wait this long after the sysctls, before the first route is written, so a
    /// test can kill the apply between its snapshot and its route.
    pub pause_before_routes: Option<Duration>,
}

/// A snapshot being applied, and what the preflight found.
#[derive(Debug)]
pub struct Transaction {
    pub snap: Snapshot,
    pub plan: Plan,
}

impl Transaction {
    /// Every value already set and no file to change: no snapshot is taken.
    pub fn is_empty(&self) -> bool {
        self.snap.changes.is_empty() && self.snap.persist.is_empty() && self.snap.routes.is_empty()
    }
}

/// Step 2 alone, for `--dry-run`: the plan, and the `--persist` file changes it would make.
pub fn dry_run(env: &Env, input: &Input, req: &ApplyRequest) -> anyhow::Result<(Plan, Vec<FileChange>)> {
    let mut plan = preflight(env, input, true)?;
    let files = if req.persist {
        persist_plan(env.os, &req.persist_root, "DRY-RUN", input, &mut plan)?
    } else {
        Vec::new()
    };
    Ok((plan, files))
}

/// Step 3: the caller holds the store's lock and has listed its snapshots (`snaps`).
/// Refuses while a snapshot here was left `applying`; nothing is written.
pub fn prepare(env: &Env, input: &Input, req: &ApplyRequest, snaps: &[Snapshot]) -> anyhow::Result<Transaction> {
    let here = Identity::current(env.os);
    let target = env.backend.describe();
    if let Some(s) = snaps
        .iter()
        .rev()
        .find(|s| s.state == State::Applying && s.same_place(env.os, &target, &here))
    {
        return Err(Error::not_permitted(format!(
            "snapshot {} was interrupted half-way (state applying): some of its values may be in the kernel",
            s.id
        ))
        .with_hint(format!("run `{}` first", env.revert_command(&s.id)))
        .into());
    }
    // Read again under the lock: these are the values the snapshot must record.
    let mut plan = preflight(env, input, false)?;

    let mut snap = Snapshot::new(env.store.next_seq()?, env.os, target, here, input.source.clone());
    snap.changes.clone_from(&plan.changes);
    snap.set_routes(plan.routes.clone());
    if req.persist {
        snap.persist = persist_plan(env.os, &req.persist_root, &snap.id, input, &mut plan)?;
    }
    if env.local && env.os == Os::Linux {
        for (name, pid) in persist::running_tuners(Path::new("/proc")) {
            plan.warnings.push(format!(
                "{name} is running (pid {pid}): it tunes these sysctls too and may change them back"
            ));
        }
    }
    if let Some(d) = req.for_ {
        snap.expires = Some(humantime::format_rfc3339_millis(std::time::SystemTime::now() + d).to_string());
    }
    Ok(Transaction { snap, plan })
}

/// Steps 4 and 5, and the `--for` timer. On error nothing is left changed, or the error
/// says what is (and the snapshot records it).
pub fn commit(env: &Env, req: &ApplyRequest, t: Transaction) -> anyhow::Result<Transaction> {
    let Transaction { mut snap, mut plan } = t;
    let store = env.store;
    snap.note("applying");
    // Durable (file and directory fsynced) before the first write, or nothing is written:
    // without it no revert could put the values back.
    store.create(&snap).map_err(before_any_write)?;
    let deferred = signals::Deferred::new();
    if let Err(e) = write_all(env, &mut snap, &mut plan.warnings, req.pause_before_routes) {
        drop(deferred);
        return Err(e);
    }
    snap.mark(
        State::Applied,
        format!("applied {} change(s)", snap.changes.len() + snap.routes.len()),
    );
    if let Err(e) = store.save(&snap) {
        let what = format!("snapshot {} as applied", snap.id);
        let e = undo_after_failed_save(env, &mut snap, &e, &what);
        drop(deferred);
        return Err(e);
    }
    drop(deferred);

    if let Some(d) = req.for_ {
        match timer::spawn(store, &snap, &req.timer_args) {
            Ok(pid) => {
                snap.timer_pid = Some(pid);
                snap.note(format!(
                    "timer pid {pid} reverts it after {}",
                    humantime::format_duration(d)
                ));
                if let Err(e) = store.save(&snap) {
                    // A timer the snapshot does not name could not be found or stopped by
                    // `tcptune snapshots` / `revert`: stop it and undo, as when it fails to start.
                    if let Ok(p) = i32::try_from(pid) {
                        // SAFETY: kill(2) on the child this process just started.
                        unsafe { libc::kill(p, libc::SIGKILL) };
                    }
                    let _deferred = signals::Deferred::new();
                    let what = format!("the timer (pid {pid}) in snapshot {}", snap.id);
                    return Err(undo_after_failed_save(env, &mut snap, &e, &what));
                }
            }
            Err(e) => {
                let why = format!("{e:#}");
                let opts = RevertOpts {
                    force: false,
                    dry_run: false,
                    by: "apply, whose --for timer did not start",
                    persist_root: &req.persist_root,
                };
                let undo = revert(env, snap, opts);
                return Err(Error::not_permitted(format!(
                    "cannot start the timer that would revert this apply ({why}); {}",
                    match undo {
                        Ok(_) => "the changes were reverted: nothing was left changed".to_string(),
                        Err(u) => format!("reverting failed too: {u:#}"),
                    }
                ))
                .into());
            }
        }
    }
    Ok(Transaction { snap, plan })
}

/// `apply --format json`.
#[derive(Debug, Serialize)]
pub struct Report<'a> {
    snapshot: Option<&'a str>,
    state: Option<State>,
    dry_run: bool,
    changes: Vec<ReportChange<'a>>,
    unchanged: Vec<KeyValue<'a>>,
    skipped: &'a [String],
    /// Dry run: changes the kernel would refuse, and why.
    refused: Vec<KeyValue<'a>>,
    persist: Vec<&'a Path>,
    warnings: &'a [String],
    expires: Option<&'a str>,
    /// `--scope path`: the host routes written (or that would be).
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    routes: &'a [crate::snapshot::RouteChange],
}

#[derive(Debug, Serialize)]
struct ReportChange<'a> {
    key: &'a str,
    current: &'a str,
    new: &'a str,
    /// What the kernel stored, when it differs from `new`.
    applied: Option<&'a str>,
}

#[derive(Debug, Serialize)]
struct KeyValue<'a> {
    key: &'a str,
    value: &'a str,
}

/// The report of an apply (`snap`), of one that changed nothing, or of a dry run (no snapshot).
pub fn report<'a>(snap: Option<&'a Snapshot>, plan: &'a Plan, files: &'a [FileChange], dry_run: bool) -> Report<'a> {
    let changes = snap.map_or(plan.changes.as_slice(), |s| s.changes.as_slice());
    Report {
        snapshot: snap.map(|s| s.id.as_str()),
        state: snap.map(|s| s.state),
        dry_run,
        changes: changes
            .iter()
            .map(|c| ReportChange {
                key: &c.key,
                current: &c.prior,
                new: &c.new,
                applied: c.applied.as_deref(),
            })
            .collect(),
        unchanged: plan
            .unchanged
            .iter()
            .map(|(k, v)| KeyValue { key: k, value: v })
            .collect(),
        skipped: &plan.skipped,
        refused: plan
            .refused
            .iter()
            .map(|(k, v)| KeyValue { key: k, value: v })
            .collect(),
        persist: files.iter().map(|f| f.path.as_path()).collect(),
        warnings: &plan.warnings,
        expires: snap.and_then(|s| s.expires.as_deref()),
        routes: snap.map_or(plan.routes.as_slice(), |s| s.routes.as_slice()),
    }
}
