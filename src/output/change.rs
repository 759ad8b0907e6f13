//! What apply and revert did, or would do: the changes and routes on stderr as they are made,
//! the snapshot id or the JSON report on stdout, the dry run's lines.

use std::io::Write;

use super::Format;
use crate::change::{self, Env, Outcome, Plan, Transaction};
use crate::snapshot::FileChange;

/// apply: nothing to change (`why`): no snapshot was taken.
pub fn nothing(out: &mut dyn Write, format: Format, plan: &Plan, why: &str) -> anyhow::Result<()> {
    for w in &plan.warnings {
        eprintln!("warning: {w}");
    }
    eprintln!("nothing to change: {why} (no snapshot taken)");
    if format == Format::Json {
        super::json(out, &change::report(None, plan, &[], false))?;
    }
    Ok(())
}

/// What apply changed and how to undo it, on stderr; the snapshot id (or the JSON
/// report) on stdout, for a script to keep.
pub fn applied(out: &mut dyn Write, format: Format, env: &Env, t: &Transaction) -> anyhow::Result<()> {
    let (snap, plan) = (&t.snap, &t.plan);
    for w in &plan.warnings {
        eprintln!("warning: {w}");
    }
    for c in &snap.changes {
        match &c.applied {
            Some(v) => eprintln!("{}: {} \u{2192} {} (asked for {})", c.key, c.prior, v, c.new),
            None => eprintln!("{}: {} \u{2192} {}", c.key, c.prior, c.new),
        }
    }
    for r in &snap.routes {
        let how = if r.prior.is_some() {
            "its host route replaced"
        } else {
            "a host route added"
        };
        eprintln!(
            "{}",
            super::route_change(
                &r.dest.to_string(),
                how,
                &[&crate::route::command("replace", r.in_effect())]
            )
        );
    }
    for f in &snap.persist {
        eprintln!("persisted in {}", f.path.display());
    }
    let undo = match (&snap.expires, snap.timer_pid) {
        (Some(t), Some(pid)) => format!(
            "reverts itself at {t} (timer pid {pid}); sooner: {}",
            env.revert_command(&snap.id)
        ),
        _ => format!("undo: {}", env.revert_command(&snap.id)),
    };
    // Two lines: the undo command on its own, whole, to copy.
    eprintln!(
        "applied {} change(s); snapshot {} in {}",
        snap.changes.len() + snap.routes.len(),
        snap.id,
        env.store.dir().display()
    );
    eprintln!("{undo}");
    let written = if format == Format::Json {
        super::json(out, &change::report(Some(snap), plan, &snap.persist, false))
    } else {
        writeln!(out, "{}", snap.id).map_err(Into::into)
    };
    // The change is made and recorded: a stdout that cannot take the id (full, a closed
    // pipe, EIO) must not exit 5, which says nothing was left changed.
    if let Err(e) = written.and_then(|()| out.flush().map_err(Into::into)) {
        eprintln!(
            "warning: stdout could not be written ({e:#}), but the change stands: snapshot {} (undo: {})",
            snap.id,
            env.revert_command(&snap.id)
        );
    }
    Ok(())
}

/// apply --dry-run: what would change, on stdout (or its JSON report); notes, warnings and
/// what would be refused on stderr.
pub fn dry_run(out: &mut dyn Write, format: Format, plan: &Plan, files: &[FileChange]) -> anyhow::Result<()> {
    for n in &plan.notes {
        eprintln!("note: {n}");
    }
    if format == Format::Json {
        super::json(out, &change::report(None, plan, files, true))?;
    } else {
        for c in &plan.changes {
            match plan.refused.iter().find(|(k, _)| *k == c.key) {
                Some((_, why)) => writeln!(
                    out,
                    "{}: {} \u{2192} {}  (would be refused: {why})",
                    c.key, c.prior, c.new
                )?,
                None => writeln!(out, "{}: {} \u{2192} {}", c.key, c.prior, c.new)?,
            }
        }
        for (k, v) in &plan.unchanged {
            writeln!(out, "{k}: {v} (no change)")?;
        }
        for r in &plan.routes {
            let before = r
                .prior
                .as_ref()
                .map_or_else(|| "no host route".to_string(), |p| crate::route::command("replace", p));
            let after = crate::route::command("replace", &r.new);
            writeln!(
                out,
                "{}",
                super::route_change(&r.dest.to_string(), "", &[&before, &after])
            )?;
        }
        for d in &plan.routes_unchanged {
            writeln!(out, "route to {d} (no change)")?;
        }
        for f in files {
            let n = f.block.lines().count();
            let lines = if n == 1 {
                "1 line".to_string()
            } else {
                format!("{n} lines")
            };
            let path = f.path.display();
            match f.before {
                Some(_) => writeln!(out, "# --persist: append {lines} to {path}")?,
                None => writeln!(out, "# --persist: create {path} with {lines}")?,
            }
        }
    }
    for s in &plan.skipped {
        eprintln!("skipped: {s}");
    }
    for w in &plan.warnings {
        eprintln!("warning: {w}");
    }
    if !plan.refused.is_empty() {
        eprintln!(
            "warning: {} change(s) would be refused, and then apply would write nothing",
            plan.refused.len()
        );
    }
    eprintln!(
        "dry run: {} change(s) shown; nothing was written, no snapshot taken",
        plan.changes.len() + plan.routes.len()
    );
    Ok(())
}

/// What revert did: JSON, or for a dry run what would change, on stdout; what was done on stderr.
pub fn reverted(out: &mut dyn Write, format: Format, dry_run: bool, o: &Outcome) -> anyhow::Result<()> {
    for w in &o.warnings {
        eprintln!("warning: {w}");
    }
    let written = write_outcome(out, format, dry_run, o);
    if dry_run {
        written?;
        eprintln!(
            "dry run: {} key(s){} would be restored from snapshot {}; nothing was changed",
            o.restored.len(),
            match o.routes.len() {
                0 => String::new(),
                n => format!(" and {n} host route(s)"),
            },
            o.snapshot
        );
        return Ok(());
    }
    for r in &o.routes {
        eprintln!("{}", super::route_change(&r.dest.to_string(), "", &[&r.from, &r.to]));
    }
    for r in &o.restored {
        eprintln!("{}: {} \u{2192} {}", r.key, r.from, r.to);
    }
    for f in &o.files {
        eprintln!("{}: {}", f.path.display(), f.outcome);
    }
    eprintln!("{}", done(o));
    // The values are back and the snapshot says so: a stdout that cannot take the report
    // must not exit 5, which says nothing was left changed.
    if let Err(e) = written {
        eprintln!(
            "warning: stdout could not be written ({e:#}), but snapshot {} is reverted (tcptune snapshots shows it)",
            o.snapshot
        );
    }
    Ok(())
}

/// "reverted snapshot ID: 2 key(s) restored, 1 host route(s) put back": what `revert` and the
/// `--for` timer's log end with.
pub fn done(o: &Outcome) -> String {
    format!(
        "reverted snapshot {}: {} key(s) restored{}{}",
        o.snapshot,
        o.restored.len(),
        match o.routes.len() {
            0 => String::new(),
            n => format!(", {n} host route(s) put back"),
        },
        match o.unchanged.len() {
            0 => String::new(),
            n => format!(", {n} already at the prior value"),
        }
    )
}

/// The report on stdout: JSON, or for a dry run what would change; flushed, so a failure
/// to write it shows here.
fn write_outcome(out: &mut dyn Write, format: Format, dry_run: bool, o: &Outcome) -> anyhow::Result<()> {
    if format == Format::Json {
        super::json(out, o)?;
    } else if dry_run {
        for r in &o.routes {
            writeln!(
                out,
                "{}",
                super::route_change(&r.dest.to_string(), "", &[&r.from, &r.to])
            )?;
        }
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
    out.flush()?;
    Ok(())
}

pub fn nothing_to_revert(out: &mut dyn Write, format: Format, why: &str) -> anyhow::Result<()> {
    eprintln!("nothing to revert: {why}");
    if format == Format::Json {
        super::json(out, &serde_json::json!({ "snapshot": null, "reason": why }))?;
    }
    Ok(())
}
