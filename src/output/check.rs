//! `tcptune check` as a table: one row per finding (status, check, finding), coloured by status
//! on a terminal, between a header line naming where the values came from and the ok/warn/fail
//! counts; then each fix on lines of its own, labelled by its check, wrapped only at spaces so
//! that no word of a command is broken (a quoted word stays whole, and a clause of it that fits
//! a line starts one). Every line fits `width`. (JSON is [`super::json`] of the [`Report`].)

use std::io::Write;

use crate::check::{Report, Status};

/// The width of a piped table, and of a terminal's when neither it nor `COLUMNS` gives one.
pub const WIDTH: usize = 100;

/// The continuation lines of a fix start this far in.
const INDENT: &str = "    ";

/// `width`: the columns a line may take (the terminal's; piped, at most [`WIDTH`]).
pub fn write_table(out: &mut dyn Write, r: &Report, tty: bool, color: bool, width: usize) -> anyhow::Result<()> {
    use comfy_table::{Cell, Color};
    let mut t = super::table(tty, color);
    t.set_width(u16::try_from(width).unwrap_or(u16::MAX));
    t.set_header(super::header(["status", "check", "finding"]));
    for x in &r.findings {
        let mut status = Cell::new(x.status.as_str());
        if color {
            status = status.fg(match x.status {
                Status::Ok => Color::Green,
                Status::Warn => Color::Yellow,
                Status::Fail => Color::Red,
            });
        }
        t.add_row(vec![status, Cell::new(&x.id), Cell::new(&x.message)]);
    }
    let host = r.host.as_deref().map(|h| format!(", path to {h}")).unwrap_or_default();
    let title = format!(
        "TCP health of this {} host (values from {}{host})",
        r.os, r.current_from
    );
    for l in wrap(&title, width, "") {
        writeln!(out, "{l}")?;
    }
    writeln!(out, "{t}")?;
    writeln!(
        out,
        "{} ok, {} warn, {} fail",
        r.summary.ok, r.summary.warn, r.summary.fail
    )?;
    let fixes: Vec<(&str, &str)> = r
        .findings
        .iter()
        .filter_map(|x| x.fix.as_deref().map(|f| (x.id.as_str(), f)))
        .collect();
    if !fixes.is_empty() {
        writeln!(out, "\nto fix:")?;
        for (id, fix) in fixes {
            for l in wrap(&format!("{id}: {fix}"), width, INDENT) {
                writeln!(out, "{l}")?;
            }
        }
    }
    Ok(())
}

/// The words of `s` as a shell would see them: split at spaces, except inside a single-quoted
/// word or a backquoted command, which stay one.
fn words(s: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut start = None;
    let mut open: Option<char> = None;
    for (i, c) in s.char_indices() {
        match (c, open) {
            ('\'' | '`', None) => {
                open = Some(c);
                start.get_or_insert(i);
            }
            (c, Some(o)) if c == o => open = None,
            (' ', None) => {
                if let Some(b) = start.take() {
                    out.push(&s[b..i]);
                }
            }
            _ => {
                start.get_or_insert(i);
            }
        }
    }
    if let Some(b) = start {
        out.push(&s[b..]);
    }
    out
}

/// `s` in lines of at most `width` columns, broken only between words ([`words`]); lines after
/// the first start with `indent`. A clause (what follows a word ending in `;` or `:`) that does
/// not fit the rest of a line but fits a line of its own starts one, so a command stays on one
/// line where it can. A word wider than a line stands alone on its line, whole.
pub fn wrap(s: &str, width: usize, indent: &str) -> Vec<String> {
    let cols = |x: &str| x.chars().count();
    let words = words(s);
    let mut lines = Vec::new();
    let mut line = String::new();
    for (i, w) in words.iter().enumerate() {
        let clause_starts = i > 0 && words[i - 1].ends_with([';', ':']);
        let clause = if clause_starts {
            let end = words[i..]
                .iter()
                .position(|x| x.ends_with([';', ':']))
                .map_or(words.len(), |p| i + p + 1);
            words[i..end].iter().map(|x| cols(x)).sum::<usize>() + (end - i - 1)
        } else {
            cols(w)
        };
        let fresh = width.saturating_sub(cols(indent));
        let room = width.saturating_sub(cols(&line) + 1);
        let breaks = !line.is_empty() && (cols(w) > room || (clause_starts && clause > room && clause <= fresh));
        if breaks {
            lines.push(std::mem::take(&mut line));
        }
        if line.is_empty() {
            if !lines.is_empty() {
                line.push_str(indent);
            }
        } else {
            line.push(' ');
        }
        line.push_str(w);
    }
    if !line.is_empty() || lines.is_empty() {
        lines.push(line);
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_keep_quoted_and_backquoted_spans_whole() {
        assert_eq!(
            words("sysctl -w 'net.ipv4.tcp_rmem=4096 131072 6291456'; see `ss -tm` now"),
            [
                "sysctl",
                "-w",
                "'net.ipv4.tcp_rmem=4096 131072 6291456';",
                "see",
                "`ss -tm`",
                "now"
            ]
        );
        assert_eq!(words("  a  b "), ["a", "b"]);
    }

    #[test]
    fn wrapping_breaks_only_between_words_and_starts_a_clause_that_fits() {
        let fix = "mtu-probing: sysctl -w net.ipv4.tcp_mtu_probing=1; persist it in /etc/sysctl.d/ (1 probes only once a black hole is detected)";
        let lines = wrap(fix, 44, "    ");
        assert_eq!(
            lines,
            [
                "mtu-probing:",
                "    sysctl -w net.ipv4.tcp_mtu_probing=1;",
                "    persist it in /etc/sysctl.d/ (1 probes",
                "    only once a black hole is detected)"
            ]
        );
        for width in 20..120 {
            for l in wrap(fix, width, "    ") {
                assert!(l.chars().count() <= width.max(41), "{width}: {l}");
            }
            let joined = wrap(fix, width, "    ")
                .iter()
                .map(|l| l.trim())
                .collect::<Vec<_>>()
                .join(" ");
            assert_eq!(joined, fix, "{width}");
        }
        // A word wider than the line stands alone, whole.
        assert_eq!(wrap("a 'b c d e' f", 5, ""), ["a", "'b c d e'", "f"]);
        assert_eq!(wrap("", 10, ""), [""]);
    }
}
