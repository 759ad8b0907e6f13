//! `tcptune snapshots`: what apply recorded — id, time, state, keys — as a table or JSON
//! ([`crate::output::snapshots`]). Read-only: works for any user who can read the state
//! directory.

use std::io::Write;
use std::process::ExitCode;

use crate::change::timer;
use crate::cli::Format;
use crate::cmd::Context;
use crate::cmd::store::{Intent, open_store};
use crate::output::snapshots::{Entry, write_json, write_table};
use crate::snapshot::{Identity, Snapshot, State, Store};

pub fn run(ctx: &Context, out: &mut dyn Write) -> anyhow::Result<ExitCode> {
    let format = ctx.report_format();
    let store = Store::new(&ctx.state_dir);
    let snaps = open_store(&store, Intent::Read)?.snapshots;
    let here = Identity::current(ctx.os);
    let entries: Vec<Entry<'_>> = snaps.iter().map(|s| entry(s, &here)).collect();
    if format == Format::Json {
        write_json(out, store.dir(), &entries)?;
    } else if entries.is_empty() {
        eprintln!("no snapshots in {}", store.dir().display());
    } else {
        write_table(out, &entries, ctx.term.stdout_tty, ctx.term.color)?;
    }
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
