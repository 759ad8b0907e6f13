//! The `snapshots` listing: a table (id, which carries its time, state, keys; notes under it) or JSON, each snapshot
//! whole beside what the listing says of it here and now (this boot, this namespace, its
//! timer), and each file that could not be read as damaged. The command gathers those facts
//! into [`Entry`] and [`Damaged`] values; this only words them.

use std::io::Write;
use std::path::Path;

use serde::Serialize;

use crate::snapshot::{Snapshot, State};

/// One snapshot as listed.
#[derive(Debug, Serialize)]
pub struct Entry<'a> {
    pub id: &'a str,
    pub time: &'a str,
    pub state: State,
    pub reverted: bool,
    /// The keys, then each host route as "route 198.18.0.2/32 congctl bbr".
    pub keys: Vec<String>,
    /// Taken in this kernel boot, in this network namespace.
    pub this_boot: bool,
    pub this_netns: bool,
    /// `apply --for`: expiry and whether its timer process is alive.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub expires: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timer_running: Option<bool>,
    #[serde(skip)]
    pub snapshot: &'a Snapshot,
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

    /// The notes column: what sets this snapshot apart, and what its timer does.
    fn notes(&self) -> String {
        let mut notes = Vec::new();
        if !self.this_boot {
            notes.push("earlier boot".to_string());
        }
        if !self.this_netns {
            notes.push("other netns".to_string());
        }
        if !self.snapshot.persist.is_empty() {
            notes.push("persisted".to_string());
        }
        if let Some(x) = self.expires {
            match self.timer_running {
                Some(true) => notes.push(format!("reverts at {x}")),
                Some(false) if self.snapshot.state.needs_revert() => {
                    notes.push("timer gone: revert by hand".to_string());
                }
                _ => {}
            }
        }
        notes.join("; ")
    }
}

/// A file of the store that is not a snapshot this tcptune reads (truncated, planted, from a
/// newer tcptune): it may be a snapshot still in effect, so it is listed, as damaged.
#[derive(Debug, Serialize)]
pub struct Damaged<'a> {
    /// The file's name without `.json`, escaped: the id the snapshot would have.
    pub id: String,
    pub file: &'a Path,
    /// Why it could not be read (never its content).
    pub reason: &'a str,
}

impl Damaged<'_> {
    /// Its number, read from its name, for the order of the table (none: last).
    fn seq(&self) -> u64 {
        self.id
            .split('-')
            .next()
            .and_then(|n| n.parse().ok())
            .unwrap_or(u64::MAX)
    }
}

#[derive(Debug, Serialize)]
struct Listing<'a> {
    state_dir: &'a Path,
    snapshots: Vec<serde_json::Value>,
    damaged: &'a [Damaged<'a>],
}

/// `{"state_dir": ..., "snapshots": [...], "damaged": [...]}`, each snapshot whole with the
/// listing's fields, each damaged file with why.
/// The listing in `format`: JSON, or the table (for a terminal: `term` is its styling, colour
/// and width), or on stderr that there is none.
pub fn write(
    out: &mut dyn Write,
    format: super::Format,
    state_dir: &Path,
    entries: &[Entry],
    damaged: &[Damaged],
    (tty, color, width): (bool, bool, usize),
) -> anyhow::Result<()> {
    if format == super::Format::Json {
        write_json(out, state_dir, entries, damaged)
    } else if entries.is_empty() && damaged.is_empty() {
        eprintln!("no snapshots in {}", state_dir.display());
        Ok(())
    } else {
        write_table(out, entries, damaged, tty, color, width)
    }
}

fn write_json(out: &mut dyn Write, state_dir: &Path, entries: &[Entry], damaged: &[Damaged]) -> anyhow::Result<()> {
    super::json(
        out,
        &Listing {
            state_dir,
            snapshots: entries.iter().map(Entry::to_json).collect(),
            damaged,
        },
    )
}

/// One row per snapshot and per damaged file, oldest first, in the shared style: at most
/// `width` columns, the keys column wrapping (a key per line, a long one broken).
fn write_table(
    out: &mut dyn Write,
    entries: &[Entry],
    damaged: &[Damaged],
    tty: bool,
    color: bool,
    width: usize,
) -> anyhow::Result<()> {
    let mut t = super::table(tty, color);
    t.set_width(u16::try_from(width).unwrap_or(u16::MAX));
    // The id is its number and UTC time (0001-20261129T125802Z): a time column beside it
    // said it twice and left the keys too little of 80 columns.
    t.set_header(super::header(["id", "state", "keys"]));
    let mut rows: Vec<(u64, [String; 3], String)> = entries
        .iter()
        .map(|e| {
            let row = [e.id.to_string(), e.state.name().to_string(), e.keys.join("\n")];
            (e.snapshot.seq, row, e.notes())
        })
        .collect();
    rows.extend(damaged.iter().map(|d| {
        let row = [d.id.clone(), "damaged".to_string(), "?".to_string()];
        (d.seq(), row, format!("could not be read: {}", d.reason))
    }));
    // Stable: snapshots keep the store's order.
    rows.sort_by_key(|(seq, _, _)| *seq);
    // Notes go under the table, a line each: a fifth column took what the others left (at 100
    // columns, two characters, its header broken as "no/te/s").
    let mut notes = Vec::new();
    for (_, row, note) in rows {
        if !note.is_empty() {
            notes.push(format!("{}: {note}", row[0]));
        }
        t.add_row(row);
    }
    // Ids and states are read whole; the keys take what is left.
    for i in 0..2 {
        if let Some(c) = t.column_mut(i) {
            c.set_constraint(comfy_table::ColumnConstraint::ContentWidth);
        }
    }
    writeln!(out, "{t}")?;
    for n in notes {
        for l in super::check::wrap(&n, width, "  ") {
            writeln!(out, "{l}")?;
        }
    }
    Ok(())
}
