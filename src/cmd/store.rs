//! Opening the snapshot store, one way for `apply`, `revert` and `snapshots`: a command that
//! changes the kernel creates the store and takes its lock (saying so while another tcptune
//! holds it); every one lists the snapshots and the files that could not be read, which
//! `apply` warns of, `revert` refuses to pass over and `snapshots` lists as damaged.
//!
//! The wait message and the warnings are the command line's words, so they live here and
//! not in [`crate::snapshot`], which only states facts.

use std::time::Duration;

use crate::snapshot::{Lock, Snapshot, Store, Unreadable};

/// What the command will do with the store.
#[derive(Debug, Clone, Copy)]
pub enum Intent {
    /// Only read: nothing is created, no lock taken (`snapshots`, `revert --dry-run`).
    Read,
    /// Change the kernel: create the store if need be and take its lock, waiting up to
    /// `wait` (`--wait`) for another tcptune to finish.
    Change { wait: Duration },
}

/// The store, opened for a command.
#[derive(Debug)]
pub struct Opened {
    /// Every snapshot that could be read, oldest first.
    pub snapshots: Vec<Snapshot>,
    /// Every file of the store that is not a snapshot this tcptune reads, and why.
    pub unreadable: Vec<Unreadable>,
    /// Held until this value is dropped; `None` for [`Intent::Read`].
    pub lock: Option<Lock>,
}

/// [`open`], with a warning on stderr for each file that is not a snapshot this tcptune reads.
pub fn open_store(store: &Store, intent: Intent) -> anyhow::Result<Opened> {
    let opened = open(store, intent)?;
    // One damaged or planted file must not hide the snapshots beside it, nor pass unseen.
    warn_unreadable(&opened);
    Ok(opened)
}

/// A warning on stderr for each file of `opened` that could not be read.
pub fn warn_unreadable(opened: &Opened) {
    for (path, why) in &opened.unreadable {
        eprintln!("warning: skipping {}: {why}", path.display());
    }
}

/// Open `store` for `intent`: for a change, create it and take its lock, then list what it
/// holds; the files it could not read are the caller's to say.
pub fn open(store: &Store, intent: Intent) -> anyhow::Result<Opened> {
    let lock = match intent {
        Intent::Read => None,
        Intent::Change { wait } => {
            store.ensure()?;
            Some(store.lock(wait, &|pid| {
                let who = pid.map_or_else(String::new, |p| format!(" (pid {p})"));
                let wait = crate::units::Span::from_std(wait);
                eprintln!("waiting up to {wait} for another tcptune{who} to finish...");
            })?)
        }
    };
    let (snapshots, unreadable) = store.list()?;
    Ok(Opened {
        snapshots,
        unreadable,
        lock,
    })
}
