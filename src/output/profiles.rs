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
/// `columns`: the terminal's width (or `COLUMNS`); every line fits it, and 80 columns.
pub fn write_table(
    out: &mut dyn Write,
    rows: &[Listed],
    (tty, color): (bool, bool),
    columns: Option<usize>,
) -> anyhow::Result<()> {
    let mut t = super::table(tty, color);
    super::fit(&mut t, columns);
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
    // The rules the classes size by, then how to see and copy one; each line within 80 columns.
    writeln!(
        out,
        "\nClean path: {}.\nLossy, shallow or not measured: {}\u{2013}{} BDP.\n\
         Show one: tcptune profiles show NAME.\n\
         Make your own: tcptune profiles export NAME > my.toml, edit it,\n  \
         then tcptune advise --profile my.toml",
        crate::advice::words::clean_rule(),
        crate::text::sig(crate::bdp::LOSS_FACTOR, 3),
        crate::text::times(crate::bdp::HEAVY_LOSS_FACTOR),
    )?;
    Ok(())
}
