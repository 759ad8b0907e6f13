//! The advice on a terminal: a short summary (the path, what was measured each way, the class,
//! the verdict), then one line per setting to change — key, now → advised, a short why —
//! marked (`*` to change, `!` not applied here; in colour where allowed), the settings already
//! right in one line, the warnings and notes wrapped to at most two lines each, and a closing
//! count. Nothing is wider than the terminal (80 columns work).

use std::io::Write;

use super::{Render, summary};
use crate::advice::Advice;
use crate::persist::DropIn;
use crate::profile::{Action, Setting, Stage, cut};
use crate::text::escape;

/// The prefix the table drops from keys when the full ones do not fit.
const COMMON_PREFIX: &str = "net.ipv4.";
/// The narrowest why column before keys are shortened.
const WHY_MIN: usize = 24;
/// The most lines a note or warning takes.
const NOTE_LINES: usize = 2;

/// This host's advice: the summary, the settings, the notes, the count, where to keep it.
pub fn write_table(out: &mut dyn Write, a: &Advice, dropin: Option<&DropIn>, r: Render) -> anyhow::Result<()> {
    block(out, a, r)?;
    if let Some(d) = dropin {
        let file = super::dropin_file(d);
        let mut lines = vec![format!("keep it: piped, advise prints the file to save as {file}")];
        lines.extend(d.warnings().into_iter().map(|w| format!("warning: {w}")));
        for l in lines {
            note(out, &l, r)?;
        }
    }
    if r.explain {
        explain(out, a, dropin, r)?;
    }
    Ok(())
}

/// The far end's block below this host's (`advise --ssh`), the same shape.
pub fn write_far_table(out: &mut dyn Write, far: &Advice, who: &str, r: Render) -> anyhow::Result<()> {
    writeln!(out)?;
    let from = far
        .current_from
        .as_deref()
        .map_or_else(String::new, |f| format!(", values from {}", escape(f)));
    let title = format!("Far end {} ({}{from}):", escape(who), far.os);
    writeln!(out, "{}", bold(&cut(&title, r.width), r.color))?;
    // The transfer is timed once, this host's.
    block(out, far, Render { size: None, ..r })?;
    if r.explain {
        explain(out, far, None, r)?;
    }
    Ok(())
}

/// One end's summary, settings, remarks and count.
fn block(out: &mut dyn Write, a: &Advice, r: Render) -> anyhow::Result<()> {
    let mut head = vec![summary::path(a)];
    head.extend(r.size.map(|b| summary::transfer(&a.transfer(b))));
    head.extend(measured(a));
    head.extend(summary::class(a));
    head.push(format!("verdict: {}", summary::verdict(a)));
    head.extend(summary::scope_line(a));
    for l in head {
        for w in summary::wrap(&escape(&capitalized(&l)), r.width, "", "  ") {
            writeln!(out, "{w}")?;
        }
    }
    writeln!(out)?;
    settings(out, a, r)?;
    for w in summary::warnings(a) {
        note(out, &format!("warning: {w}"), r)?;
    }
    for n in summary::notes(a) {
        note(out, &format!("note: {n}"), r)?;
    }
    if let Some(life) = summary::route_life(a) {
        note(out, &format!("note: {life}"), r)?;
    }
    note(out, &summary::count_marked(a, true), r)?;
    Ok(())
}

/// The bars of a test's rate over time.
const SPARK_WIDTH: usize = 20;

/// What was measured each way: with this host's tests, a line per direction with the test's
/// rate over time; else the one line the file has.
fn measured(a: &Advice) -> Vec<String> {
    let tests = a.evidence.as_ref().map(|e| (e.test.as_ref(), e.reverse.as_ref()));
    let Some((forward, reverse)) = tests.filter(|(f, r)| f.is_some() || r.is_some()) else {
        return summary::measured(a).into_iter().collect();
    };
    [
        ("sending", forward, &a.decision),
        ("receiving", reverse, &a.receive_decision),
    ]
    .into_iter()
    .map(|(way, t, d)| {
        let spark = t.map(|t| summary::sparkline(t, SPARK_WIDTH)).unwrap_or_default();
        // A test that ran measured its rate (the bars): what it did not measure is its loss
        // and queue, and the label says so.
        let unmeasured = if t.is_some() {
            "rate measured; loss and queue not measured"
        } else {
            "not measured"
        };
        let what = summary::reading(d).unwrap_or_else(|| unmeasured.into());
        let spark = if spark.is_empty() {
            String::new()
        } else {
            format!("{spark} ")
        };
        format!("{way}: {spark}{what}")
    })
    .collect()
}

/// "path to …" → "Path to …".
fn capitalized(s: &str) -> String {
    let mut c = s.chars();
    c.next()
        .map(|f| f.to_uppercase().collect::<String>() + c.as_str())
        .unwrap_or_default()
}

/// A note or warning wrapped to the terminal, at most [`NOTE_LINES`] lines (the rest is in
/// `--explain`).
fn note(out: &mut dyn Write, text: &str, r: Render) -> std::io::Result<()> {
    let lines = summary::wrap(&escape(text), r.width, "", "  ");
    let shown = lines.len().min(NOTE_LINES);
    for (i, l) in lines.iter().take(shown).enumerate() {
        if i + 1 == shown && lines.len() > shown {
            writeln!(out, "{}", cut(&format!("{l} \u{2026}"), r.width))?;
        } else {
            writeln!(out, "{l}")?;
        }
    }
    Ok(())
}

/// One row: its mark, key, change and why.
struct Row {
    mark: char,
    key: String,
    change: String,
    why: String,
}

fn row(s: &Setting) -> Row {
    let mut change = s.change().words(", ");
    match (&s.action, s.stage) {
        (_, Stage::Boot) => Row {
            mark: '*',
            key: s.key.clone(),
            change,
            why: format!("at boot: /boot/loader.conf; {}", s.why),
        },
        (Action::Unavailable(why), _) => {
            change = crate::profile::Change {
                pct: None,
                ..s.change()
            }
            .words("");
            Row {
                mark: '!',
                key: s.key.clone(),
                change,
                why: why.clone(),
            }
        }
        _ => Row {
            mark: '*',
            key: s.key.clone(),
            change,
            why: s.why.clone(),
        },
    }
}

/// The settings to change (and those not applied here) one per line, then those already right
/// in one line.
fn settings(out: &mut dyn Write, a: &Advice, r: Render) -> std::io::Result<()> {
    let mut rows: Vec<Row> = a
        .settings
        .iter()
        .filter(|s| !matches!((&s.action, s.stage), (Action::Keep, Stage::Runtime)))
        .map(row)
        .collect();
    let mut kept: Vec<String> = a
        .settings
        .iter()
        .filter(|s| matches!((&s.action, s.stage), (Action::Keep, Stage::Runtime)))
        .map(|s| format!("{} ({})", s.key, s.change().to))
        .collect();
    if let Some(route) = &a.route {
        let key = format!("route to {}", route.dest);
        let change = match &route.current {
            Some(c) => format!("{c} \u{2192} {}", route.algorithm),
            None => format!("\u{2192} {}", route.algorithm),
        };
        match &route.action {
            Action::Set => rows.push(Row {
                mark: '*',
                key,
                change,
                why: route.why.clone(),
            }),
            Action::Keep => kept.push(format!("{key} ({})", route.algorithm)),
            Action::Unavailable(why) => rows.push(Row {
                mark: '!',
                key,
                change,
                why: why.clone(),
            }),
        }
    }
    let width = |rows: &[Row], f: fn(&Row) -> &str| rows.iter().map(|x| f(x).chars().count()).max().unwrap_or(0);
    let mut key_header = "key".to_string();
    if 2 + width(&rows, |x| &x.key) + 2 + width(&rows, |x| &x.change) + 2 + WHY_MIN > r.width {
        for x in &mut rows {
            if let Some(k) = x.key.strip_prefix(COMMON_PREFIX) {
                x.key = k.to_string();
            }
        }
        key_header = format!("key ({COMMON_PREFIX}…)");
    }
    // A row's why that is an instruction ("read-only here: set it on the host") keeps its
    // head in the row and its whole instruction under the table, so no width cuts it.
    let mut below: Vec<(String, Vec<String>)> = Vec::new();
    for x in rows.iter_mut().filter(|x| x.mark == '!') {
        if let Some((head, _)) = x.why.split_once(": ") {
            match below.iter_mut().find(|(w, _)| *w == x.why) {
                Some((_, keys)) => keys.push(x.key.clone()),
                None => below.push((x.why.clone(), vec![x.key.clone()])),
            }
            x.why = format!("{head} (below)");
        }
    }
    if !rows.is_empty() {
        let kw = width(&rows, |x| &x.key).max(key_header.chars().count());
        let cw = width(&rows, |x| &x.change).max("now \u{2192} advised".chars().count());
        let header = format!("  {key_header:<kw$}  {:<cw$}  why", "now \u{2192} advised");
        writeln!(out, "{}", bold(&cut(&header, r.width), r.color))?;
        for x in &rows {
            let left = format!("{:<kw$}  {:<cw$}  ", escape(&x.key), escape(&x.change));
            let room = r.width.saturating_sub(2 + left.chars().count()).max(8);
            let why = cut(&escape(&x.why), room);
            writeln!(out, "{} {left}{why}", mark(x.mark, r.color))?;
        }
    }
    for (why, keys) in &below {
        let line = format!("! {}: {why}", keys.join(", "));
        for w in summary::wrap(&escape(&line), r.width, "", "  ") {
            writeln!(out, "{w}")?;
        }
    }
    if !kept.is_empty() {
        note(out, &format!("already right: {}", kept.join(", ")), r)?;
    }
    writeln!(out)
}

/// The row's mark, coloured where allowed: yellow to change, red not applied here.
fn mark(m: char, color: bool) -> String {
    match (color, m) {
        (false, _) => m.to_string(),
        (true, '!') => format!("\u{1b}[1;31m{m}\u{1b}[0m"),
        (true, _) => format!("\u{1b}[1;33m{m}\u{1b}[0m"),
    }
}

fn bold(s: &str, color: bool) -> String {
    if color {
        format!("\u{1b}[1m{s}\u{1b}[0m")
    } else {
        s.to_string()
    }
}

/// The derivation, wrapped to the terminal.
fn explain(out: &mut dyn Write, a: &Advice, dropin: Option<&DropIn>, r: Render) -> std::io::Result<()> {
    writeln!(out)?;
    writeln!(out, "{}", bold("The derivation (--explain):", r.color))?;
    for l in super::explain::lines(a, dropin) {
        for w in summary::wrap(&l, r.width, "", "    ") {
            writeln!(out, "{w}")?;
        }
    }
    Ok(())
}
