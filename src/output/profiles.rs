//! `profiles list`: its rows, and the table of them (JSON is [`super::json`] of the rows).

use std::io::Write;

use serde::Serialize;

use crate::os::Os;

/// One shipped profile, as `profiles list` shows it.
#[derive(Debug, Serialize)]
pub struct Listed {
    pub name: String,
    pub os: Os,
    pub description: String,
    /// Keys the profile may set (a key with alternative entries, e.g. for `--loss-recovery`,
    /// counts once).
    pub settings: usize,
}

/// One row per shipped profile, then how to show one or make one's own.
pub fn write_table(out: &mut dyn Write, rows: &[Listed], tty: bool, color: bool) -> anyhow::Result<()> {
    let mut t = super::table(tty, color);
    t.set_header(super::header(["name", "os", "settings", "description"]));
    for r in rows {
        t.add_row([
            r.name.clone(),
            r.os.to_string(),
            r.settings.to_string(),
            r.description.clone(),
        ]);
    }
    writeln!(out, "{t}")?;
    writeln!(
        out,
        "\nShow one: tcptune profiles show NAME.\n\
         Make your own: tcptune profiles export NAME > my.toml, edit it, tcptune advise --profile my.toml"
    )?;
    Ok(())
}
