//! `apply --for`: the detached process that reverts a snapshot when it expires — starting
//! it, what it does (wait for the expiry, then revert unless someone already did), and
//! whether it still runs.

use std::ffi::OsString;
use std::time::{Duration, SystemTime};

use super::Env;
use super::revert::{Outcome, RevertOpts, revert};
use crate::error::Error;
use crate::snapshot::{Snapshot, Store};

/// The hidden subcommand the timer runs as; also how a running timer is recognised.
const SUBCOMMAND: &str = "revert-timer";

/// Start the detached process that reverts `snap` when it expires: its own session
/// (setsid), so closing the terminal or ending the login shell does not take it down;
/// SIGHUP ignored; stdio to a log in the state directory. `args`: the options that select the
/// same OS, sysctl target and state directory.
pub fn spawn(store: &Store, snap: &Snapshot, args: &[OsString]) -> anyhow::Result<u32> {
    use std::os::unix::process::CommandExt as _;
    let exe = std::env::current_exe()?;
    let log_path = store.dir().join(format!("timer-{}.log", snap.id));
    // Never through a link or into a file with other names: this runs as root.
    let log = crate::fsutil::open_nofollow_append(&log_path, 0o644)
        .map_err(|e| crate::error::Error::system(format!("cannot open {}: {e}", log_path.display())))?;
    let mut cmd = std::process::Command::new(exe);
    cmd.arg(SUBCOMMAND)
        .args(args)
        .arg(&snap.id)
        .stdin(std::process::Stdio::null())
        .stdout(log.try_clone()?)
        .stderr(log)
        .current_dir("/");
    // SAFETY: the closure runs in the forked child before exec and calls only setsid(2) and
    // signal(2), both async-signal-safe; it allocates nothing and touches no shared state.
    unsafe {
        cmd.pre_exec(|| {
            if libc::setsid() == -1 {
                return Err(std::io::Error::last_os_error());
            }
            libc::signal(libc::SIGHUP, libc::SIG_IGN);
            Ok(())
        });
    }
    let mut child = cmd.spawn()?;
    // A timer that dies at once (bad arguments, a missing state dir) is no timer.
    std::thread::sleep(Duration::from_millis(100));
    if let Some(status) = child.try_wait()? {
        return Err(
            crate::error::Error::system(format!("it exited at once ({status}); see {}", log_path.display())).into(),
        );
    }
    Ok(child.id())
}

/// Sleep until snapshot `id` expires. `Ok(None)`: it expired; `Ok(Some(state))`: it needs
/// no revert any more (reverted or rolled back meanwhile), and its state's name.
/// Reads the snapshot again every second, so a revert by hand is seen.
pub fn wait_for_expiry(store: &Store, id: &str) -> anyhow::Result<Option<&'static str>> {
    loop {
        let snap = store.find(id)?;
        if !snap.state.needs_revert() {
            return Ok(Some(snap.state.name()));
        }
        let expires = snap
            .expires
            .as_deref()
            .and_then(|t| humantime::parse_rfc3339(t).ok())
            .ok_or_else(|| Error::usage(format!("snapshot {} has no expiry time", snap.id)))?;
        match expires.duration_since(SystemTime::now()) {
            Ok(left) if !left.is_zero() => std::thread::sleep(left.min(Duration::from_secs(1))),
            _ => return Ok(None),
        }
    }
}

/// Revert expired snapshot `id`; the caller holds the store's lock. `Ok(None)`: someone
/// reverted it meanwhile. A failure is also noted in the snapshot's history.
pub fn revert_expired(env: &Env, id: &str) -> anyhow::Result<Option<Outcome>> {
    let snap = env.store.find(id)?;
    if !snap.state.needs_revert() {
        return Ok(None);
    }
    let opts = RevertOpts {
        force: false,
        dry_run: false,
        by: "the apply --for timer",
        persist_root: std::path::Path::new("/"),
    };
    match revert(env, snap, opts) {
        Ok(o) => Ok(Some(o)),
        Err(e) => {
            if let Ok(mut s) = env.store.find(id) {
                s.note(format!("the apply --for timer could not revert: {e:#}"));
                let _ = env.store.save(&s);
            }
            Err(e)
        }
    }
}

/// Whether process `pid` is the `apply --for` timer of snapshot `id` (a pid can be reused).
pub fn is_running(pid: u32, id: &str) -> bool {
    match std::fs::read(format!("/proc/{pid}/cmdline")) {
        Ok(cmd) => {
            let args: Vec<&[u8]> = cmd.split(|b| *b == 0).collect();
            args.contains(&SUBCOMMAND.as_bytes()) && args.contains(&id.as_bytes())
        }
        // No /proc (FreeBSD, macOS): whether the process exists.
        Err(_) => alive(pid),
    }
}

/// Whether process `pid` exists.
fn alive(pid: u32) -> bool {
    let Ok(pid) = libc::pid_t::try_from(pid) else {
        return false;
    };
    // SAFETY: kill with signal 0 sends nothing; it only checks that the process exists.
    let r = unsafe { libc::kill(pid, 0) };
    r == 0 || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM)
}
