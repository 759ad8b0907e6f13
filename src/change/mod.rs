//! The change transaction: everything `apply` and `revert` do to the running system and its
//! boot-time files, callable by a test or a library user without the CLI.
//!
//! * [`plan`]: what to apply (a sysctl file, stdin, or advice settings) and the preflight
//!   that reads every current value and refuses what the kernel would refuse, before
//!   anything is written; the `--persist` file changes;
//! * [`write`]: writes with read-back (clamped values recorded), and the rollback of a
//!   failed apply, vectors the kernel kept in part included;
//! * [`apply`]: the order of an apply, its snapshot durable before the first write;
//! * [`revert`]: the verdict per key, and executing a revert;
//! * [`timer`]: the `apply --for` process that reverts by itself.
//!
//! It works on a [`SysctlBackend`] and a snapshot [`Store`], with typed requests. It prints
//! nothing and knows no clap type: warnings and notes come back as data for the command to
//! print, and the command takes the store's lock (its wait message is the command's).

pub mod apply;
pub mod plan;
pub mod revert;
pub mod route;
pub mod timer;
pub mod verdict;
pub mod write;

#[cfg(test)]
mod tests;

pub use apply::{ApplyRequest, Transaction, commit, dry_run, prepare, report};
pub use plan::{Input, Plan, preflight};
pub use revert::{Outcome, RevertOpts, revert};

use crate::os::Os;
use crate::snapshot::Store;
use crate::sysctl::SysctlBackend;

/// Where a change happens, resolved by the command from its context.
pub struct Env<'a> {
    pub os: Os,
    /// Whether `backend` is this very machine (namespace and process checks apply).
    pub local: bool,
    pub backend: &'a dyn SysctlBackend,
    pub store: &'a Store,
    /// The options that find the same store and target, as typed after
    /// `tcptune revert ID` in hints (`" --state-dir /x"`; empty for the defaults).
    pub again_args: &'a str,
}

impl Env<'_> {
    /// The command that reverts snapshot `id` from here, for hints and the undo line.
    pub fn revert_command(&self, id: &str) -> String {
        format!("tcptune revert {id}{}", self.again_args)
    }
}
