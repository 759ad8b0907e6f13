//! Putting back the values a snapshot replaced, in reverse order, checking each by reading
//! it back; undoing its `--persist` file changes; marking it `reverted`.
//!
//! Which keys it writes ([`judge`], per key):
//! * a key already at its prior value: none (so a second revert changes nothing);
//! * a key at the value the apply left: the prior value;
//! * a key someone changed since: nothing at all is written, unless `--force` — the whole
//!   revert stops, listing them;
//! * a snapshot left `applying` (the apply was killed): every key not at its prior value;
//! * a snapshot from an earlier boot: its runtime values ended at reboot, so none, unless
//!   `--force` (its files are still undone).
//!
//! Before any of that ([`check_place`]): a snapshot for another OS is refused; one taken on
//! another sysctl target or in another network namespace is refused unless `--force`.

use serde::Serialize;

use super::Env;
pub use super::verdict::Verdict;
use super::write::{put_file, write_checked};
use crate::error::Error;
use crate::os::Os;
use crate::persist::{self, Undo};
use crate::signals;
use crate::snapshot::{Change, Identity, RouteChange, Snapshot, State};
use crate::sysctl;
use crate::sysctl::{KeyState, SysctlBackend, normalize_value, same_value};

#[derive(Debug, Clone, Copy)]
pub struct RevertOpts<'a> {
    pub force: bool,
    pub dry_run: bool,
    /// Who reverts, for the snapshot's history.
    pub by: &'static str,
    /// The directory standing for / in `--persist` paths: a record naming any file but
    /// tcptune's own under it is refused.
    pub persist_root: &'a std::path::Path,
}

#[derive(Debug, Serialize)]
pub struct Outcome {
    pub snapshot: String,
    pub state: State,
    pub dry_run: bool,
    /// Keys written back (or that would be, in a dry run).
    pub restored: Vec<Restored>,
    /// Keys already at their prior value.
    pub unchanged: Vec<String>,
    /// Host routes put back (or that would be): deleted, replaced by the prior one, added back.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub routes: Vec<RouteRestored>,
    pub files: Vec<FileOutcome>,
    pub warnings: Vec<String>,
}

#[derive(Debug, Serialize)]
pub struct Restored {
    pub key: String,
    pub from: String,
    pub to: String,
}

/// One host route revert puts back.
#[derive(Debug, Serialize)]
pub struct RouteRestored {
    /// "198.18.0.2/32".
    pub dest: String,
    /// The host route(s) now, as `ip route` lines ("no host route" when none).
    pub from: String,
    /// What revert leaves: the prior route's line, or "no host route".
    pub to: String,
    #[serde(skip)]
    change: RouteChange,
    #[serde(skip)]
    now: Vec<crate::route::Route>,
}

#[derive(Debug, Serialize)]
pub struct FileOutcome {
    pub path: std::path::PathBuf,
    /// restored | block-removed | unchanged | missing
    pub outcome: &'static str,
}

/// The snapshot a bare `revert` means: the latest not yet reverted, taken here (same OS,
/// target and network namespace). Err: why there is none, for "nothing to revert: ...".
pub fn latest<'a>(snaps: &'a [Snapshot], os: Os, target: &str, here: &Identity) -> Result<&'a Snapshot, String> {
    if let Some(s) = snaps
        .iter()
        .rev()
        .find(|s| s.state.needs_revert() && s.same_place(os, target, here))
    {
        return Ok(s);
    }
    let elsewhere: Vec<&str> = snaps
        .iter()
        .filter(|s| s.state.needs_revert())
        .map(|s| s.id.as_str())
        .collect();
    Err(if elsewhere.is_empty() {
        "every snapshot is reverted".to_string()
    } else {
        format!(
            "none here; still applied for another network namespace, target or OS: {} (see tcptune snapshots)",
            elsewhere.join(", ")
        )
    })
}

/// Why `snap` needs no revert ("snapshot ID is reverted (TIME)"), or None when it does.
pub fn finished(snap: &Snapshot) -> Option<String> {
    if snap.state.needs_revert() {
        return None;
    }
    let when = snap.events.last().map(|e| format!(" ({})", e.time)).unwrap_or_default();
    Some(format!("snapshot {} is {}{when}", snap.id, snap.state.name()))
}

/// The verdict ladder for one key of `snap`, whose value is `now`; `other_boot` when the
/// snapshot comes from an earlier boot. The first rung that matches wins.
pub fn judge(c: &Change, now: &str, state: State, other_boot: bool, force: bool) -> Verdict {
    if same_value(now, &c.prior) {
        Verdict::Unchanged
    } else if other_boot && !force {
        Verdict::Ended
    } else if same_value(now, c.in_effect()) || same_value(now, &c.new) {
        Verdict::Restore
    } else if state == State::Applying {
        Verdict::RestoreInterrupted
    } else if force {
        Verdict::RestoreForced
    } else {
        Verdict::Conflict
    }
}

/// A snapshot says what revert writes: hold it to the rules apply follows.
fn check_contents(snap: &Snapshot, persist_root: &std::path::Path) -> anyhow::Result<()> {
    for c in &snap.changes {
        sysctl::file::check_key(&c.key, snap.os)
            .and_then(|()| sysctl::file::check_restorable(&c.key, &c.prior))
            .and_then(|()| sysctl::file::check_running(snap.os, &c.key, &c.prior))
            .map_err(|m| Error::usage(format!("snapshot {} is damaged: {m}", snap.id)))?;
    }
    for r in &snap.routes {
        super::route::check_record(r).map_err(|m| Error::usage(format!("snapshot {} is damaged: {m}", snap.id)))?;
    }
    for f in &snap.persist {
        persist::check_record(snap.os, persist_root, &snap.id, f).map_err(|m| {
            Error::usage(format!(
                "snapshot {} is damaged: refusing its --persist record: {m}",
                snap.id
            ))
            .with_hint("nothing was changed; tcptune writes only its own block in its own files")
        })?;
    }
    Ok(())
}

/// Whether `snap` may be reverted by this process (OS `os`, sysctl target `target`, in
/// `here`): the warnings to report, or the refusal.
pub fn check_place(
    env: &Env,
    snap: &Snapshot,
    target: &str,
    here: &Identity,
    force: bool,
) -> anyhow::Result<Vec<String>> {
    if snap.os != env.os {
        return Err(Error::usage(format!(
            "snapshot {} is for {}, this tcptune operates on {} (use --os {})",
            snap.id, snap.os, env.os, snap.os
        ))
        .into());
    }
    let mut warnings = Vec::new();
    if snap.target != target {
        let msg = format!(
            "snapshot {} was taken on {}, this tcptune operates on {}",
            snap.id, snap.target, target
        );
        if !force {
            return Err(Error::usage(msg)
                .with_hint("give the same --sysctl-dir / --sysctl-cmd, or --force")
                .into());
        }
        warnings.push(format!("{msg} (--force)"));
    }
    if snap.identity.netns != here.netns {
        let show = |n: Option<u64>| n.map_or_else(|| "?".to_string(), |i| format!("net:[{i}]"));
        let msg = format!(
            "snapshot {} was taken in network namespace {}; this process is in {}",
            snap.id,
            show(snap.identity.netns),
            show(here.netns)
        );
        if !force {
            return Err(Error::usage(msg)
                .with_hint(format!(
                    "run it inside that namespace (ip netns exec NAME {}), or --force",
                    env.revert_command(&snap.id)
                ))
                .into());
        }
        warnings.push(format!("{msg} (--force)"));
    }
    if !snap.identity.hostname.is_empty() && snap.identity.hostname != here.hostname {
        warnings.push(format!(
            "snapshot {} was taken on host {}; this is {}",
            snap.id, snap.identity.hostname, here.hostname
        ));
    }
    if !snap.same_boot(here) {
        warnings.push(format!(
            "snapshot {} comes from an earlier boot (boot id {}): its runtime values ended at the reboot; {}",
            snap.id,
            snap.identity.boot_id.as_deref().unwrap_or("?"),
            if force {
                "writing its prior values anyway (--force)"
            } else {
                "the running values are left alone (--force writes its prior values)"
            }
        ));
    }
    if snap.state == State::Applying {
        warnings.push(format!(
            "snapshot {} was left half-applied (state applying: the apply was killed); restoring every key that differs from its prior value",
            snap.id
        ));
    }
    Ok(warnings)
}

/// Revert one snapshot; the caller holds the store's lock (unless `dry_run`).
pub fn revert(env: &Env, snap: Snapshot, opts: RevertOpts) -> anyhow::Result<Outcome> {
    revert_in(env, snap, opts, &Identity::current(env.os))
}

/// [`revert`] as seen from `here` (tests give another boot or namespace).
pub(super) fn revert_in(env: &Env, mut snap: Snapshot, opts: RevertOpts, here: &Identity) -> anyhow::Result<Outcome> {
    check_contents(&snap, opts.persist_root)?;
    let mut warnings = check_place(env, &snap, &env.backend.describe(), here, opts.force)?;
    let other_boot = !snap.same_boot(here);
    // A newer snapshot may be what changed a route or a key since: a conflict names it.
    let newer = newer_here(env, &snap, here);
    let routes = plan_routes(&snap, &newer, other_boot, opts.force, &mut warnings)?;
    let (restored, unchanged) = plan_keys(env, &snap, &newer, other_boot, opts.force, &mut warnings)?;
    let (files, file_steps) = plan_files(&snap, &mut warnings)?;
    let mut outcome = Outcome {
        snapshot: snap.id.clone(),
        state: snap.state,
        dry_run: opts.dry_run,
        restored,
        unchanged,
        routes,
        files,
        warnings,
    };
    if opts.dry_run {
        return Ok(outcome);
    }
    // A signal now would leave values restored and the record saying otherwise.
    let deferred = signals::Deferred::new();
    let mut failed: Vec<String> = outcome
        .routes
        .iter()
        .filter_map(|r| super::route::restore(&r.change, &r.now).err())
        .collect();
    failed.extend(write_back(env.backend, &outcome.restored, &file_steps));
    if !outcome.routes.is_empty() && failed.is_empty() {
        snap.note(format!("{}: {} host route(s) put back", opts.by, outcome.routes.len()));
    }
    record(&mut snap, &opts, other_boot, outcome.restored.len(), &failed);
    let saved = env.store.save(&snap);
    drop(deferred);
    outcome.state = snap.state;
    check_done(env, &snap, &failed, saved)?;
    Ok(outcome)
}

/// A file's content to write back (`None`: remove the file), by path.
type FileStep = (std::path::PathBuf, Option<String>);

/// The snapshots taken here after `snap` and still in effect: one of them may be what
/// changed a key since, and a conflict names it.
fn newer_here(env: &Env, snap: &Snapshot, here: &Identity) -> Vec<Snapshot> {
    env.store
        .list()
        .map(|(all, _)| all)
        .unwrap_or_default()
        .into_iter()
        .filter(|s| s.seq > snap.seq && s.state.needs_revert() && s.same_place(snap.os, &snap.target, here))
        .collect()
}

/// The host routes to put back, in reverse order of the apply. A route someone changed since
/// stops the whole revert here, before anything is written (unless `force`).
fn plan_routes(
    snap: &Snapshot,
    newer: &[Snapshot],
    other_boot: bool,
    force: bool,
    warnings: &mut Vec<String>,
) -> anyhow::Result<Vec<RouteRestored>> {
    let mut out = Vec::new();
    let mut conflicts = Vec::new();
    for c in snap.routes.iter().rev() {
        let now = super::route::now(c)?;
        let from = super::route::shown(&now);
        let to = super::route::shown(c.prior.as_slice());
        let by = route_set_by(newer, c, &now);
        match super::route::judge(c, &now, other_boot, force) {
            Verdict::Unchanged | Verdict::Ended => continue,
            Verdict::Conflict => {
                conflicts.push(format!(
                    "the host route to {} is now `{from}` (tcptune set `{}`; before, {to}){}",
                    c.dest,
                    crate::route::command("replace", c.in_effect()),
                    by.map(|id| format!(", set by snapshot {id}: revert that first"))
                        .unwrap_or_default()
                ));
                continue;
            }
            Verdict::RestoreForced => warnings.push(format!(
                "the host route to {} was changed since the apply (now `{from}`{}); restoring {to} anyway (--force)",
                c.dest,
                by.map(|id| format!(", set by snapshot {id}")).unwrap_or_default()
            )),
            Verdict::Restore | Verdict::RestoreInterrupted => {}
        }
        out.push(RouteRestored {
            dest: c.dest.clone(),
            from,
            to,
            change: c.clone(),
            now,
        });
    }
    if !conflicts.is_empty() {
        return Err(Error::not_permitted(format!(
            "{} route(s) changed since snapshot {} was applied: {}",
            conflicts.len(),
            snap.id,
            conflicts.join("; ")
        ))
        .with_hint("nothing was changed; --force restores the prior routes anyway")
        .into());
    }
    Ok(out)
}

/// The keys to write back, in reverse order of the apply, and those already at their prior
/// value; the verdict's warnings go to `warnings`. A key someone else changed stops the whole
/// revert here, before anything is written, naming every such key.
fn plan_keys(
    env: &Env,
    snap: &Snapshot,
    newer: &[Snapshot],
    other_boot: bool,
    force: bool,
    warnings: &mut Vec<String>,
) -> anyhow::Result<(Vec<Restored>, Vec<String>)> {
    let mut restore = Vec::new();
    let mut unchanged = Vec::new();
    let mut conflicts = Vec::new();
    for c in snap.changes.iter().rev() {
        let Some(now) = read_now(env, c, warnings)? else {
            continue;
        };
        let step = Restored {
            key: c.key.clone(),
            from: normalize_value(&now),
            to: c.prior.clone(),
        };
        match judge(c, &now, snap.state, other_boot, force) {
            Verdict::Unchanged => unchanged.push(c.key.clone()),
            Verdict::Ended => {}
            Verdict::Restore => restore.push(step),
            Verdict::RestoreInterrupted => {
                warnings.push(format!(
                    "{} holds {}, neither its prior value nor the one being written; restored because the apply was interrupted",
                    c.key, step.from
                ));
                restore.push(step);
            }
            Verdict::RestoreForced => {
                let by = key_set_by(newer, c, &now)
                    .map(|id| format!(", set by snapshot {id}"))
                    .unwrap_or_default();
                warnings.push(format!(
                    "{} was changed since the apply (now {}{by}); restoring {} anyway (--force)",
                    c.key, step.from, c.prior
                ));
                restore.push(step);
            }
            Verdict::Conflict => conflicts.push(conflict(c, &step.from, &now, newer)),
        }
    }
    if !conflicts.is_empty() {
        return Err(Error::not_permitted(format!(
            "{} value(s) changed since snapshot {} was applied: {}",
            conflicts.len(),
            snap.id,
            conflicts.join("; ")
        ))
        .with_hint("nothing was changed; --force restores the prior values anyway")
        .into());
    }
    Ok((restore, unchanged))
}

/// The running value of `c`'s key; `None` (and a warning) when the key is gone.
fn read_now(env: &Env, c: &Change, warnings: &mut Vec<String>) -> anyhow::Result<Option<String>> {
    match env.backend.read(&c.key) {
        KeyState::Present { value, .. } => Ok(Some(value)),
        KeyState::Absent => {
            warnings.push(format!(
                "{} is no longer present (module unloaded?): its prior value {} cannot be written back",
                c.key, c.prior
            ));
            Ok(None)
        }
        KeyState::Unreadable(why) => Err(Error::not_permitted(format!("cannot read {}: {why}", c.key)).into()),
    }
}

/// One conflict, for the refusal: the key's value now (`shown` as normalised, `now` as
/// read), what tcptune set, what it was before, and the newer snapshot that set it, if one did.
fn conflict(c: &Change, shown: &str, now: &str, newer: &[Snapshot]) -> String {
    let by = key_set_by(newer, c, now)
        .map(|id| format!(", set by snapshot {id}: revert that first"))
        .unwrap_or_default();
    format!(
        "{} is now {shown} (tcptune set {}; before, it was {}){by}",
        c.key,
        c.in_effect(),
        c.prior
    )
}

/// The newest of the `newer` snapshots that set `c`'s key to the value it holds `now`, if one did.
fn key_set_by<'a>(newer: &'a [Snapshot], c: &Change, now: &str) -> Option<&'a str> {
    newer
        .iter()
        .rev()
        .find(|s| {
            s.changes
                .iter()
                .any(|n| n.key == c.key && same_value(n.in_effect(), now))
        })
        .map(|s| s.id.as_str())
}

/// The newest of the `newer` snapshots that wrote the host route to `c`'s destination that is
/// there `now`, if one did.
fn route_set_by<'a>(newer: &'a [Snapshot], c: &RouteChange, now: &[crate::route::Route]) -> Option<&'a str> {
    let [r] = now else {
        return None;
    };
    newer
        .iter()
        .rev()
        .find(|s| {
            s.routes
                .iter()
                .any(|n| n.dest == c.dest && (r.same(n.in_effect()) || r.same(&n.new)))
        })
        .map(|s| s.id.as_str())
}

/// What undoing each `--persist` file change means now (for the outcome), and the writes
/// that do it; a file edited since is noted in `warnings`.
fn plan_files(snap: &Snapshot, warnings: &mut Vec<String>) -> anyhow::Result<(Vec<FileOutcome>, Vec<FileStep>)> {
    let mut files = Vec::new();
    let mut steps = Vec::new();
    for f in &snap.persist {
        let current = match crate::persist::read_persisted(&f.path) {
            Ok(t) => t,
            Err(e) => {
                return Err(crate::snapshot::io_error(
                    &e,
                    &format!("cannot read {}", f.path.display()),
                ));
            }
        };
        let (content, what) = persist::undo(f, current.as_deref());
        if what == Undo::Missing {
            warnings.push(format!(
                "{}: tcptune's block for {} is no longer there as written (edited by hand?): left alone",
                f.path.display(),
                snap.id
            ));
        }
        if what == Undo::BlockRemoved {
            warnings.push(format!(
                "{} changed since the apply: only tcptune's block was taken out",
                f.path.display()
            ));
        }
        files.push(FileOutcome {
            path: f.path.clone(),
            outcome: match what {
                Undo::Restored => "restored",
                Undo::BlockRemoved => "block-removed",
                Undo::Unchanged => "unchanged",
                Undo::Missing => "missing",
            },
        });
        if let Some(c) = content {
            steps.push((f.path.clone(), c));
        }
    }
    Ok((files, steps))
}

/// Write every key back (each read back) and every file; what failed, worded. A failure does
/// not stop the others: every value put back is one fewer left changed.
fn write_back(backend: &dyn SysctlBackend, restored: &[Restored], files: &[FileStep]) -> Vec<String> {
    let keys = restored
        .iter()
        .map(|s| write_checked(backend, &s.key, &s.to, "writing"));
    let files = files.iter().map(|(path, content)| put_file(path, content.as_deref()));
    keys.chain(files).filter_map(Result::err).collect()
}

/// Mark the snapshot reverted, or note in its history what could not be restored.
fn record(snap: &mut Snapshot, opts: &RevertOpts, other_boot: bool, restored: usize, failed: &[String]) {
    if !failed.is_empty() {
        snap.note(format!("{}: revert incomplete: {}", opts.by, failed.join("; ")));
        return;
    }
    let how = if other_boot && !opts.force {
        " (runtime values had ended at reboot)"
    } else if opts.force {
        " (--force)"
    } else {
        ""
    };
    snap.mark(
        State::Reverted,
        format!("reverted by {}: {restored} key(s) restored{how}", opts.by),
    );
}

/// The error to report after the writes: what could not be restored, else a record that
/// could not be saved (`saved`).
fn check_done(env: &Env, snap: &Snapshot, failed: &[String], saved: anyhow::Result<()>) -> anyhow::Result<()> {
    if !failed.is_empty() {
        return Err(
            Error::not_permitted(format!("could not restore everything: {}", failed.join("; ")))
                .with_hint(format!(
                    "snapshot {} stays {}: fix the cause and run `{}` again",
                    snap.id,
                    snap.state.name(),
                    env.revert_command(&snap.id)
                ))
                .into(),
        );
    }
    // The values are back but the record says otherwise: a later revert finds every key at
    // its prior value and changes nothing, so say so, with the exit code of a refusal.
    saved.map_err(|e| {
        Error::not_permitted(format!(
            "restored every value of snapshot {}, but could not record that in it ({})",
            snap.id,
            e.root_cause()
        ))
        .with_hint(format!(
            "free space in {} and run `{}` again: it will find the values restored and mark it",
            env.store.dir().display(),
            env.revert_command(&snap.id)
        ))
        .into()
    })
}
