//! `tcptune check` as a table: one row per finding (status, check, finding, fix), coloured by
//! status on a terminal, between a header line naming where the values came from and the
//! ok/warn/fail counts. (JSON is [`super::json`] of the [`Report`].)

use std::io::Write;

use crate::check::{Report, Status};

pub fn write_table(out: &mut dyn Write, r: &Report, tty: bool, color: bool) -> anyhow::Result<()> {
    use comfy_table::{Cell, Color};
    let mut t = super::table(tty, color);
    t.set_header(super::header(["status", "check", "finding", "fix"]));
    for x in &r.findings {
        let mut status = Cell::new(x.status.as_str());
        if color {
            status = status.fg(match x.status {
                Status::Ok => Color::Green,
                Status::Warn => Color::Yellow,
                Status::Fail => Color::Red,
            });
        }
        t.add_row(vec![
            status,
            Cell::new(&x.id),
            Cell::new(&x.message),
            Cell::new(x.fix.as_deref().unwrap_or("")),
        ]);
    }
    let host = r.host.as_deref().map(|h| format!(", path to {h}")).unwrap_or_default();
    writeln!(
        out,
        "TCP health of this {} host (values from {}{host})",
        r.os, r.current_from
    )?;
    writeln!(out, "{t}")?;
    writeln!(
        out,
        "{} ok, {} warn, {} fail",
        r.summary.ok, r.summary.warn, r.summary.fail
    )?;
    Ok(())
}
