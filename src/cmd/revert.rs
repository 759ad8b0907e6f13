//! `tcptune revert`: put back the values a snapshot replaced, in reverse order, checking
//! each by reading it back; undo its `--persist` file changes; mark it `reverted`.
//!
//! Which keys it writes:
//! * a key already at its prior value: none (so a second revert changes nothing);
//! * a key at the value the apply left: the prior value;
//! * a key someone changed since: nothing at all is written, unless `--force` — the whole
//!   revert stops, listing them;
//! * a snapshot left `applying` (the apply was killed): every key not at its prior value;
//! * a snapshot from an earlier boot: its runtime values ended at reboot, so none, unless
//!   `--force` (its files are still undone).

use std::io::Write;
use std::process::ExitCode;
use std::time::{Duration, SystemTime};

use serde::Serialize;

use crate::Context;
use crate::cli::{Format, RevertArgs, RevertTimerArgs};
use crate::cmd::apply::{backend, same};
use crate::error::Error;
use crate::persist::{self, Undo};
use crate::platform::{KeyState, SysctlBackend, normalize_value};
use crate::signals;
use crate::snapshot::{Identity, Snapshot, State, Store};
use crate::sysctl_file;

#[derive(Debug, Clone, Copy)]
pub(crate) struct Opts<'a> {
    pub force: bool,
    pub dry_run: bool,
    /// Who reverts, for the snapshot's history.
    pub by: &'static str,
    /// The directory standing for / in `--persist` paths: a record naming any file but
    /// tcptune's own under it is refused.
    pub persist_root: &'a std::path::Path,
}

#[derive(Debug, Serialize)]
pub(crate) struct Outcome {
    pub snapshot: String,
    pub state: State,
    pub dry_run: bool,
    /// Keys written back (or that would be, in a dry run).
    pub restored: Vec<Restored>,
    /// Keys already at their prior value.
    pub unchanged: Vec<String>,
    pub files: Vec<FileOutcome>,
    pub warnings: Vec<String>,
}

#[derive(Debug, Serialize)]
pub(crate) struct Restored {
    pub key: String,
    pub from: String,
    pub to: String,
}

#[derive(Debug, Serialize)]
pub(crate) struct FileOutcome {
    pub path: std::path::PathBuf,
    /// restored | block-removed | unchanged | missing
    pub outcome: &'static str,
}

pub fn run(a: &RevertArgs, ctx: &Context, out: &mut dyn Write) -> anyhow::Result<ExitCode> {
    let format = ctx.report_format("revert")?;
    let backend = backend(ctx, "revert")?;
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
    let _lock = if a.dry_run {
        None
    } else {
        store.ensure()?;
        Some(store.lock(Duration::from_secs(a.wait), &|pid| {
            let who = pid.map_or_else(String::new, |p| format!(" (pid {p})"));
            eprintln!("waiting up to {} s for another tcptune{who} to finish...", a.wait);
        })?)
    };
    let here = Identity::current(ctx.os);
    let target = backend.describe();
    let (snaps, bad) = store.list()?;
    for (p, why) in &bad {
        eprintln!("warning: skipping {}: {why}", p.display());
    }
    let snap = match &a.id {
        Some(q) => store.find(q)?,
        None => {
            let Some(s) = snaps
                .iter()
                .rev()
                .find(|s| s.state.needs_revert() && s.same_place(ctx.os, &target, &here))
            else {
                let elsewhere: Vec<&str> = snaps
                    .iter()
                    .filter(|s| s.state.needs_revert())
                    .map(|s| s.id.as_str())
                    .collect();
                let why = if elsewhere.is_empty() {
                    "every snapshot is reverted".to_string()
                } else {
                    format!(
                        "none here; still applied for another network namespace, target or OS: {} (see tcptune snapshots)",
                        elsewhere.join(", ")
                    )
                };
                return nothing(out, format, &why);
            };
            s.clone()
        }
    };
    if !snap.state.needs_revert() {
        let when = snap.events.last().map(|e| format!(" ({})", e.time)).unwrap_or_default();
        return nothing(
            out,
            format,
            &format!("snapshot {} is {}{when}", snap.id, snap.state.name()),
        );
    }
    let root = a.persist_root.clone().unwrap_or_else(|| "/".into());
    let opts = Opts {
        force: a.force,
        dry_run: a.dry_run,
        by: "tcptune revert",
        persist_root: &root,
    };
    let o = revert_locked(&store, snap, backend, ctx, opts)?;
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

/// Revert one snapshot; the caller holds the store's lock (unless `dry_run`).
pub(crate) fn revert_locked(
    store: &Store,
    mut snap: Snapshot,
    backend: &dyn SysctlBackend,
    ctx: &Context,
    opts: Opts,
) -> anyhow::Result<Outcome> {
    let here = Identity::current(ctx.os);
    let target = backend.describe();
    // A snapshot says what revert writes: hold it to the rules apply follows.
    for c in &snap.changes {
        sysctl_file::check_key(&c.key, snap.os)
            .and_then(|()| sysctl_file::check_restorable(&c.key, &c.prior))
            .map_err(|m| Error::usage(format!("snapshot {} is damaged: {m}", snap.id)))?;
    }
    for f in &snap.persist {
        persist::check_record(snap.os, opts.persist_root, &snap.id, f).map_err(|m| {
            Error::usage(format!(
                "snapshot {} is damaged: refusing its --persist record: {m}",
                snap.id
            ))
            .with_hint("nothing was changed; tcptune writes only its own block in its own files")
        })?;
    }
    if snap.os != ctx.os {
        return Err(Error::usage(format!(
            "snapshot {} is for {}, this tcptune operates on {} (use --os {})",
            snap.id, snap.os, ctx.os, snap.os
        ))
        .into());
    }
    let mut warnings = Vec::new();
    if snap.target != target {
        let msg = format!(
            "snapshot {} was taken on {}, this tcptune operates on {}",
            snap.id, snap.target, target
        );
        if !opts.force {
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
        if !opts.force {
            return Err(Error::usage(msg)
                .with_hint(format!(
                    "run it inside that namespace (ip netns exec NAME {}), or --force",
                    ctx.command(&format!("revert {}", snap.id))
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
    let other_boot = !snap.same_boot(&here);
    if other_boot {
        warnings.push(format!(
            "snapshot {} comes from an earlier boot (boot id {}): its runtime values ended at the reboot; {}",
            snap.id,
            snap.identity.boot_id.as_deref().unwrap_or("?"),
            if opts.force {
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

    // Plan: which keys to write back.
    let newer: Vec<Snapshot> = store
        .list()
        .map(|(all, _)| all)
        .unwrap_or_default()
        .into_iter()
        .filter(|s| s.seq > snap.seq && s.state.needs_revert() && s.same_place(snap.os, &snap.target, &here))
        .collect();
    let mut steps: Vec<Restored> = Vec::new();
    let mut unchanged = Vec::new();
    let mut conflicts = Vec::new();
    for c in snap.changes.iter().rev() {
        let now = match backend.read(&c.key) {
            KeyState::Present { value, .. } => value,
            KeyState::Absent => {
                warnings.push(format!(
                    "{} is no longer present (module unloaded?): its prior value {} cannot be written back",
                    c.key, c.prior
                ));
                continue;
            }
            KeyState::Unreadable(why) => {
                return Err(Error::not_permitted(format!("cannot read {}: {why}", c.key)).into());
            }
        };
        let step = Restored {
            key: c.key.clone(),
            from: normalize_value(&now),
            to: c.prior.clone(),
        };
        if same(&now, &c.prior) {
            unchanged.push(c.key.clone());
        } else if other_boot && !opts.force {
            // Ended at the reboot: what runs now is not tcptune's to change.
        } else if same(&now, c.in_effect()) || same(&now, &c.new) {
            steps.push(step);
        } else if snap.state == State::Applying {
            warnings.push(format!(
                "{} holds {}, neither its prior value nor the one being written; restored because the apply was interrupted",
                c.key, step.from
            ));
            steps.push(step);
        } else if opts.force {
            warnings.push(format!(
                "{} was changed since the apply (now {}); restoring {} anyway (--force)",
                c.key, step.from, c.prior
            ));
            steps.push(step);
        } else {
            let by = newer
                .iter()
                .find(|s| s.changes.iter().any(|n| n.key == c.key && same(n.in_effect(), &now)))
                .map(|s| format!(", set by snapshot {}: revert that first", s.id))
                .unwrap_or_default();
            conflicts.push(format!(
                "{} is now {} (tcptune set {}; before, it was {}){by}",
                c.key,
                step.from,
                c.in_effect(),
                c.prior
            ));
        }
    }
    if !conflicts.is_empty() {
        let n = conflicts.len();
        let first = format!(
            "{n} value(s) changed since snapshot {} was applied: {}",
            snap.id,
            conflicts.join("; ")
        );
        return Err(Error::not_permitted(first)
            .with_hint("nothing was changed; --force restores the prior values anyway")
            .into());
    }

    let mut files = Vec::new();
    let mut file_steps = Vec::new();
    for f in &snap.persist {
        let current = match std::fs::read_to_string(&f.path) {
            Ok(t) => Some(t),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
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
            file_steps.push((f.path.clone(), c));
        }
    }
    let mut outcome = Outcome {
        snapshot: snap.id.clone(),
        state: snap.state,
        dry_run: opts.dry_run,
        restored: steps,
        unchanged,
        files,
        warnings,
    };
    if opts.dry_run {
        return Ok(outcome);
    }

    let deferred = signals::Deferred::new();
    let mut failed = Vec::new();
    for s in &outcome.restored {
        let r = backend
            .write(&s.key, &s.to)
            .map_err(|e| format!("{e:#}"))
            .and_then(|()| match backend.read(&s.key).value() {
                Some(v) if same(v, &s.to) => Ok(()),
                Some(v) => Err(format!("{}: reads {v} after writing {}", s.key, s.to)),
                None => Err(format!("{}: cannot read it back", s.key)),
            });
        if let Err(e) = r {
            failed.push(e);
        }
    }
    for (path, content) in &file_steps {
        let r = match content {
            Some(t) => crate::snapshot::write_atomic(path, t.as_bytes(), 0o644),
            None => crate::snapshot::remove_durably(path),
        };
        if let Err(e) = r {
            failed.push(format!("{}: {e}", path.display()));
        }
    }
    if failed.is_empty() {
        let how = if other_boot && !opts.force {
            " (runtime values had ended at reboot)"
        } else if opts.force {
            " (--force)"
        } else {
            ""
        };
        snap.mark(
            State::Reverted,
            format!(
                "reverted by {}: {} key(s) restored{how}",
                opts.by,
                outcome.restored.len()
            ),
        );
    } else {
        snap.note(format!("{}: revert incomplete: {}", opts.by, failed.join("; ")));
    }
    let saved = store.save(&snap);
    drop(deferred);
    outcome.state = snap.state;
    if !failed.is_empty() {
        return Err(
            Error::not_permitted(format!("could not restore everything: {}", failed.join("; ")))
                .with_hint(format!(
                    "snapshot {} stays {}: fix the cause and run `{}` again",
                    snap.id,
                    snap.state.name(),
                    ctx.command(&format!("revert {}", snap.id))
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
            store.dir().display(),
            ctx.command(&format!("revert {}", snap.id))
        ))
    })?;
    Ok(outcome)
}

/// The detached process behind `apply --for`: wait for the snapshot's expiry, then revert
/// it (unless someone already did). Its output goes to STATE_DIR/timer-ID.log.
pub fn run_timer(a: &RevertTimerArgs, ctx: &Context) -> anyhow::Result<ExitCode> {
    signals::ignore_hangup();
    let stamp = || humantime::format_rfc3339_seconds(SystemTime::now());
    let backend = backend(ctx, "revert-timer")?;
    let store = Store::new(&ctx.state_dir);
    eprintln!("{}: timer pid {} for snapshot {}", stamp(), std::process::id(), a.id);
    loop {
        let snap = store.find(&a.id)?;
        if !snap.state.needs_revert() {
            eprintln!("{}: snapshot {} is {}: nothing to do", stamp(), a.id, snap.state.name());
            return Ok(ExitCode::SUCCESS);
        }
        let expires = snap
            .expires
            .as_deref()
            .and_then(|t| humantime::parse_rfc3339(t).ok())
            .ok_or_else(|| Error::usage(format!("snapshot {} has no expiry time", a.id)))?;
        match expires.duration_since(SystemTime::now()) {
            Ok(left) if !left.is_zero() => std::thread::sleep(left.min(Duration::from_secs(1))),
            _ => break,
        }
    }
    let _lock = store.lock(Duration::from_secs(600), &|_| {
        eprintln!("{}: waiting for the lock", stamp());
    })?;
    let snap = store.find(&a.id)?;
    if !snap.state.needs_revert() {
        return Ok(ExitCode::SUCCESS);
    }
    let opts = Opts {
        force: false,
        dry_run: false,
        by: "the apply --for timer",
        persist_root: std::path::Path::new("/"),
    };
    match revert_locked(&store, snap, backend, ctx, opts) {
        Ok(o) => {
            for w in &o.warnings {
                eprintln!("{}: warning: {w}", stamp());
            }
            eprintln!(
                "{}: reverted snapshot {}: {} key(s) restored",
                stamp(),
                o.snapshot,
                o.restored.len()
            );
            Ok(ExitCode::SUCCESS)
        }
        Err(e) => {
            if let Ok(mut s) = store.find(&a.id) {
                s.note(format!("the apply --for timer could not revert: {e:#}"));
                let _ = store.save(&s);
            }
            Err(e)
        }
    }
}
