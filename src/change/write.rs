//! Writing a snapshot's changes into the kernel and its `--persist` files, each value read
//! back, and undoing them all when one fails: the error then means "nothing was left
//! changed", or says exactly what could not be undone.

use super::Env;
use crate::error::{Error, exit};
use crate::os::Os;
use std::path::Path;

use crate::snapshot::{Change, FileChange, Snapshot, State};
use crate::sysctl::{SysctlBackend, normalize_value, same_value};

/// Steps 4 and 5 of an apply: write, read back, persist; undo everything on the first failure.
/// A value the kernel stored differently (clamped or rounded) is recorded in the change as
/// `applied`, and named in `warnings`.
pub fn write_all(
    env: &Env,
    snap: &mut Snapshot,
    warnings: &mut Vec<String>,
    pause: Option<std::time::Duration>,
) -> anyhow::Result<()> {
    let backend = env.backend;
    for i in 0..snap.changes.len() {
        let (key, new) = (snap.changes[i].key.clone(), snap.changes[i].new.clone());
        if let Err(e) = backend.write(&key, &new) {
            let cause = write_failure(env.os, backend, &key, &new, &e);
            return Err(roll_back(env, snap, i, Some(i), 0, &[], cause));
        }
        match backend.read(&key).value() {
            Some(v) if same_value(v, &new) => {}
            Some(v) => {
                warnings.push(format!(
                    "{key}: the kernel stored {v} when asked for {new} (clamped or rounded)"
                ));
                snap.changes[i].applied = Some(normalize_value(v));
            }
            None => warnings.push(format!("{key}: could not read it back after writing")),
        }
    }
    if let Some(p) = pause.filter(|_| !snap.routes.is_empty()) {
        std::thread::sleep(p);
    }
    for i in 0..snap.routes.len() {
        if let Err(e) = super::route::write(&mut snap.routes[i]) {
            let n = snap.changes.len();
            return Err(roll_back(env, snap, n, None, i, &[], e));
        }
    }
    let mut written: Vec<FileChange> = Vec::new();
    for f in snap.persist.clone() {
        if let Err(e) = write_persist(&f) {
            let cause = Error::not_permitted(format!("cannot write {}: {e:#}", f.path.display()));
            let (n, r) = (snap.changes.len(), snap.routes.len());
            return Err(roll_back(env, snap, n, None, r, &written, cause));
        }
        written.push(f);
    }
    Ok(())
}

fn write_persist(f: &FileChange) -> anyhow::Result<()> {
    // Read as when it was planned: a FIFO planted there since must not block the apply.
    let now = crate::persist::read_persisted(&f.path)?;
    if now != f.before {
        return Err(Error::not_permitted("it changed while tcptune was applying").into());
    }
    if let Some(dir) = f.path.parent()
        && !dir.exists()
    {
        use std::os::unix::fs::DirBuilderExt as _;
        std::fs::DirBuilder::new().recursive(true).mode(0o755).create(dir)?;
    }
    crate::snapshot::write_atomic(&f.path, f.after.as_bytes(), 0o644)?;
    Ok(())
}

/// The first save of the snapshot failed (a full or read-only disk, an id already taken):
/// exit 3, and say that nothing was written.
pub fn before_any_write(e: anyhow::Error) -> anyhow::Error {
    let hint = e
        .chain()
        .find_map(|c| c.downcast_ref::<Error>())
        .and_then(Error::hint)
        .unwrap_or("free space in the state directory (or use --state-dir DIR), then run the command again")
        .to_string();
    Error::not_permitted(format!("{e:#}; nothing was changed"))
        .with_hint(hint)
        .into()
}

/// Saving the snapshot failed after every write was made: undo them all, so that the error
/// means the same as any other apply error (nothing left changed), and exit 3 rather than
/// leave changes whose record on disk is out of date.
pub fn undo_after_failed_save(env: &Env, snap: &mut Snapshot, e: &anyhow::Error, what: &str) -> anyhow::Error {
    let cause = Error::not_permitted(format!("could not record {what} ({})", e.root_cause()));
    let files = snap.persist.clone();
    let (n, r) = (snap.changes.len(), snap.routes.len());
    roll_back(env, snap, n, None, r, &files, cause)
}

/// Undo the first `n` changes, the failing one at index `failing` if the kernel kept part of
/// it, the first `routes` routes and the files in `files`, in reverse; record the outcome in
/// the snapshot; return the error to report, naming the cause and what was undone.
pub fn roll_back(
    env: &Env,
    snap: &mut Snapshot,
    n: usize,
    failing: Option<usize>,
    routes: usize,
    files: &[FileChange],
    cause: Error,
) -> anyhow::Error {
    let backend = env.backend;
    let mut failed: Vec<String> = files
        .iter()
        .rev()
        .filter_map(|f| put_file(&f.path, f.before.as_deref()).err())
        .collect();
    failed.extend(
        snap.routes[..routes]
            .iter()
            .rev()
            .filter_map(|c| super::route::undo(c).err()),
    );
    let partly = failing
        .and_then(|i| snap.changes.get(i))
        .filter(|c| kept_in_part(backend, c));
    for c in snap.changes[..n].iter().chain(partly).rev() {
        if let Err(e) = write_checked(backend, &c.key, &c.prior, "restoring") {
            failed.push(e);
        }
    }
    // The sysctls and the host routes written before the failure, each one change.
    let undone = what_was_undone(n + routes, partly);
    let (msg, hint) = record_rollback(env, snap, &cause, &undone, &failed);
    let e = if cause.exit_code() == exit::USAGE {
        Error::usage(msg)
    } else {
        Error::not_permitted(msg)
    };
    e.with_hint(hint).into()
}

/// Whether the failing change `c` left its key other than before: Linux stores a vector's
/// fields one by one, and may have kept the first ones before refusing a later one.
fn kept_in_part(backend: &dyn SysctlBackend, c: &Change) -> bool {
    backend.read(&c.key).value().is_some_and(|v| !same_value(v, &c.prior))
}

/// Write `value` to `key` and read it back; Err: what went wrong, in one line (`doing`:
/// "writing", "restoring").
pub(super) fn write_checked(backend: &dyn SysctlBackend, key: &str, value: &str, doing: &str) -> Result<(), String> {
    backend
        .write(key, value)
        .map_err(|e| format!("{e:#}"))
        .and_then(|()| match backend.read(key).value() {
            Some(v) if same_value(v, value) => Ok(()),
            Some(v) => Err(format!("{key}: reads {v} after {doing} {value}")),
            None => Err(format!("{key}: cannot read it back")),
        })
}

/// Give `path` the content `content`, or remove it (`None`: it did not exist); Err: the path
/// and what went wrong.
pub(super) fn put_file(path: &Path, content: Option<&str>) -> Result<(), String> {
    match content {
        Some(t) => crate::snapshot::write_atomic(path, t.as_bytes(), 0o644),
        None => crate::snapshot::remove_durably(path),
    }
    .map_err(|e| format!("{}: {e}", path.display()))
}

/// "undid the N change(s) made before it", and the failing key if it was restored too.
fn what_was_undone(n: usize, partly: Option<&Change>) -> String {
    let mut undone = match n {
        0 => "no change had been made".to_string(),
        n => format!("undid the {n} change(s) made before it"),
    };
    if let Some(c) = partly {
        undone.push_str(&format!(" and restored {}, which the kernel had partly changed", c.key));
    }
    undone
}

/// Mark the snapshot rolled back (or note what could not be undone) and save it; the
/// message and hint of the error to report.
fn record_rollback(env: &Env, snap: &mut Snapshot, cause: &Error, undone: &str, failed: &[String]) -> (String, String) {
    let (msg, hint) = if failed.is_empty() {
        snap.mark(State::RolledBack, format!("rolled back: {cause}"));
        (
            format!("{cause}; {undone}: nothing was left changed"),
            format!("snapshot {} records the attempt (rolled-back)", snap.id),
        )
    } else {
        snap.note(format!("rollback incomplete: {}", failed.join("; ")));
        (
            format!("{cause}; COULD NOT undo everything: {}", failed.join("; ")),
            format!("fix the cause and run `{}`", env.revert_command(&snap.id)),
        )
    };
    let hint = match env.store.save(snap) {
        Ok(()) => hint,
        // The file still holds an earlier state: `revert` reads it and closes it.
        Err(e) if failed.is_empty() => format!(
            "snapshot {id} could not be updated ({}); once the state directory can be written, `tcptune revert {id}` closes it",
            e.root_cause(),
            id = snap.id
        ),
        Err(e) => format!("{hint} (and the snapshot could not be updated: {e:#})"),
    };
    (msg, hint)
}

/// The error for a failed write: the backend's one line, with what tcptune knows to add.
fn write_failure(os: Os, backend: &dyn SysctlBackend, key: &str, new: &str, e: &anyhow::Error) -> Error {
    let code = e
        .chain()
        .find_map(|c| c.downcast_ref::<Error>())
        .map_or(exit::NOT_PERMITTED, Error::exit_code);
    let msg = if os == Os::Linux
        && key == "net.ipv4.tcp_congestion_control"
        && code == exit::NOT_PERMITTED
        && crate::host::is_root()
    {
        let allowed = backend
            .read("net.ipv4.tcp_allowed_congestion_control")
            .value()
            .map_or_else(|| "?".to_string(), str::to_string);
        format!(
            "the kernel refused {key} = {new}: {}",
            crate::host::linux::cc_not_allowed(new, &allowed)
        )
    } else {
        format!("{e:#}")
    };
    if code == exit::USAGE {
        Error::usage(msg)
    } else {
        Error::not_permitted(msg)
    }
}
