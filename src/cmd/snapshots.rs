//! `tcptune snapshots`: what apply recorded — id, time, state, keys — as a table or JSON.
//! Read-only: works for any user who can read the state directory.

use std::io::Write;
use std::process::ExitCode;

use serde::Serialize;

use crate::cli::Format;
use crate::cmd::Context;
use crate::cmd::store::{Intent, open_store};
use crate::snapshot::{Identity, Snapshot, State, Store};

#[derive(Debug, Serialize)]
struct Listing<'a> {
    state_dir: &'a std::path::Path,
    snapshots: Vec<serde_json::Value>,
}

#[derive(Debug, Serialize)]
struct Entry<'a> {
    id: &'a str,
    time: &'a str,
    state: State,
    reverted: bool,
    keys: Vec<&'a str>,
    /// Taken in this kernel boot, in this network namespace.
    this_boot: bool,
    this_netns: bool,
    /// `apply --for`: expiry and whether its timer process is alive.
    #[serde(skip_serializing_if = "Option::is_none")]
    expires: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    timer_running: Option<bool>,
    #[serde(skip)]
    snapshot: &'a Snapshot,
}

impl Entry<'_> {
    /// The listing fields, then the rest of the snapshot (changes, persist, history...).
    fn to_json(&self) -> serde_json::Value {
        let mut v = serde_json::to_value(self.snapshot).unwrap_or_default();
        if let (Some(obj), Ok(serde_json::Value::Object(extra))) = (v.as_object_mut(), serde_json::to_value(self)) {
            for (k, x) in extra {
                obj.insert(k, x);
            }
        }
        v
    }
}

pub fn run(ctx: &Context, out: &mut dyn Write) -> anyhow::Result<ExitCode> {
    let format = ctx.report_format("snapshots")?;
    let store = Store::new(&ctx.state_dir);
    let snaps = open_store(&store, Intent::Read)?.snapshots;
    let here = Identity::current(ctx.os);
    let entries: Vec<Entry<'_>> = snaps
        .iter()
        .map(|s| Entry {
            id: &s.id,
            time: &s.created,
            state: s.state,
            reverted: s.state == State::Reverted,
            keys: s.changes.iter().map(|c| c.key.as_str()).collect(),
            this_boot: s.same_boot(&here),
            this_netns: s.identity.netns == here.netns,
            expires: s.expires.as_deref(),
            timer_running: s.expires.as_ref().map(|_| {
                s.state.needs_revert()
                    && s.same_boot(&here)
                    && s.timer_pid.is_some_and(|p| crate::change::timer::is_running(p, &s.id))
            }),
            snapshot: s,
        })
        .collect();
    if format == Format::Json {
        crate::output::json(
            out,
            &Listing {
                state_dir: store.dir(),
                snapshots: entries.iter().map(Entry::to_json).collect(),
            },
        )?;
        return Ok(ExitCode::SUCCESS);
    }
    if entries.is_empty() {
        eprintln!("no snapshots in {}", store.dir().display());
        return Ok(ExitCode::SUCCESS);
    }
    let mut t = crate::output::table(ctx.term.stdout_tty, ctx.term.color);
    t.set_header(["id", "time", "state", "keys", "notes"]);
    for e in &entries {
        let mut notes = Vec::new();
        if !e.this_boot {
            notes.push("earlier boot".to_string());
        }
        if !e.this_netns {
            notes.push("other netns".to_string());
        }
        if !e.snapshot.persist.is_empty() {
            notes.push("persisted".to_string());
        }
        if let Some(x) = e.expires {
            match e.timer_running {
                Some(true) => notes.push(format!("reverts at {x}")),
                Some(false) if e.snapshot.state.needs_revert() => {
                    notes.push("timer gone: revert by hand".to_string());
                }
                _ => {}
            }
        }
        t.add_row([
            e.id.to_string(),
            e.time.to_string(),
            e.state.name().to_string(),
            e.keys.join("\n"),
            notes.join("; "),
        ]);
    }
    // Ids, times and key names are read whole; the notes column takes what is left.
    for i in 0..4 {
        if let Some(c) = t.column_mut(i) {
            c.set_constraint(comfy_table::ColumnConstraint::ContentWidth);
        }
    }
    writeln!(out, "{t}")?;
    Ok(ExitCode::SUCCESS)
}
