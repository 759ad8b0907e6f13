//! `tcptune snapshots`: what apply recorded — id, time, state, keys — as a table or JSON
//! ([`crate::output::snapshots`]), and each file of the store that could not be read, as
//! damaged. Read-only: works for any user who can read the state
//! directory.

use std::io::Write;
use std::process::ExitCode;

use crate::change::timer;
use crate::cmd::Context;
use crate::cmd::store::{Intent, open};
use crate::output::snapshots::{Damaged, Entry, write};
use crate::snapshot::{Identity, Snapshot, State, Store};

pub fn run(ctx: &Context, out: &mut dyn Write) -> anyhow::Result<ExitCode> {
    let format = ctx.report_format();
    let store = Store::new(&ctx.state_dir);
    let opened = open(&store, Intent::Read)?;
    let here = Identity::current(ctx.os);
    let entries: Vec<Entry<'_>> = opened.snapshots.iter().map(|s| entry(s, &here)).collect();
    // A file that could not be read is listed, never skipped: it may be a snapshot in effect.
    let damaged: Vec<Damaged<'_>> = opened
        .unreadable
        .iter()
        .map(|(path, why)| Damaged {
            id: crate::text::escape(&path.file_stem().unwrap_or_default().to_string_lossy()),
            file: path,
            reason: why,
        })
        .collect();
    let term = (ctx.term.stdout_tty, ctx.term.color, ctx.term.width());
    write(out, format, store.dir(), &entries, &damaged, term)?;
    Ok(ExitCode::SUCCESS)
}

/// What the listing says of `s` seen from `here`; whether its timer runs is asked of the
/// process table.
fn entry<'a>(s: &'a Snapshot, here: &Identity) -> Entry<'a> {
    Entry {
        id: &s.id,
        time: &s.created,
        state: s.state,
        reverted: s.state == State::Reverted,
        keys: s
            .changes
            .iter()
            .map(|c| c.key.clone())
            .chain(s.routes.iter().map(|r| r.label()))
            .collect(),
        this_boot: s.same_boot(here),
        this_netns: s.identity.netns == here.netns,
        expires: s.expires.as_deref(),
        timer_running: s.expires.as_ref().map(|_| {
            s.state.needs_revert() && s.same_boot(here) && s.timer_pid.is_some_and(|p| timer::is_running(p, &s.id))
        }),
        snapshot: s,
    }
}
