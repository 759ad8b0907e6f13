//! The advice rendered: the sysctl file and the shell script ([`file`]), the terminal
//! ([`table`]), JSON (the [`Advice`] itself, with its short lines as `summary` and the
//! derivation as `explain`). What every renderer says of the path, the class and each setting
//! is [`summary`]'s; the derivation behind it (`--explain`) is [`explain`]'s.

mod explain;
pub mod file;
pub mod summary;
pub mod table;

use std::io::Write;

use crate::advice::Advice;
use crate::persist::DropIn;

pub use file::{header, write_shell, write_sysctl};
pub use table::{write_far_table, write_table};

/// How to render: with the derivation or not, and for a terminal (width, styling, colour).
#[derive(Debug, Clone, Copy)]
pub struct Render {
    /// `--explain`: add the derivation.
    pub explain: bool,
    /// Box drawing and marks for a terminal.
    pub tty: bool,
    /// Colour allowed (a terminal, NO_COLOR unset).
    pub color: bool,
    /// The columns a line may take.
    pub width: usize,
    /// `--size`: a transfer to time, bytes (the table's line under the path, JSON's `transfer`).
    pub size: Option<u64>,
}

impl Render {
    /// A file's rendering: no terminal, [`file::WIDTH`] columns.
    pub fn file(explain: bool) -> Self {
        Self {
            explain,
            tty: false,
            color: false,
            width: file::WIDTH,
            size: None,
        }
    }
}

/// Where a drop-in lives on the target, whatever root it was chosen under.
pub fn dropin_file(d: &DropIn) -> String {
    format!("/etc/sysctl.d/{}", d.name)
}

/// The short lines of one end's advice, as JSON: the path, what was measured, the class, the
/// verdict and count, one line per setting, the warnings and notes.
fn summary_json(a: &Advice) -> serde_json::Value {
    serde_json::json!({
        "path": summary::path(a),
        "measured": summary::measured(a),
        "class": summary::class(a),
        "verdict": summary::verdict(a),
        "count": summary::count_line(a),
        "settings": a.settings.iter().map(crate::profile::Setting::line).collect::<Vec<_>>(),
        "scope": summary::scope_line(a),
        "route": a.route.as_ref().map(crate::advice::scope::RouteAdvice::line),
        "warnings": summary::warnings(a),
        "notes": summary::notes(a),
    })
}

/// An advice as its JSON value, without a drop-in or the derivation: a mesh's pair.
pub fn advice_json(a: &Advice) -> serde_json::Value {
    end_json(a, None, false).unwrap_or_default()
}

/// One end's advice as a JSON value: every field at full precision, its `summary`, and with
/// `explain` the derivation's lines.
fn end_json(a: &Advice, dropin: Option<&DropIn>, explain: bool) -> anyhow::Result<serde_json::Value> {
    let mut v = serde_json::to_value(a)?;
    if let Some(map) = v.as_object_mut() {
        map.insert("summary".into(), summary_json(a));
        if explain {
            map.insert("explain".into(), serde_json::json!(explain::lines(a, dropin)));
        }
    }
    Ok(v)
}

/// The advice as JSON (`r`: with the derivation, and a transfer to time as `transfer`), with the sysctl.d drop-in (Linux) as `sysctl_d`: its file, why that
/// number, the lines that win over it, and the files not checked (`{file, why}` each).
pub fn write_json(
    out: &mut dyn Write,
    a: &Advice,
    dropin: Option<&DropIn>,
    far: Option<&Advice>,
    r: Render,
) -> anyhow::Result<()> {
    let mut v = end_json(a, dropin, r.explain)?;
    if let (Some(f), Some(map)) = (far, v.as_object_mut()) {
        map.insert("far_end".into(), end_json(f, None, r.explain)?);
    }
    if let (Some(bytes), Some(map)) = (r.size, v.as_object_mut()) {
        map.insert("transfer".into(), serde_json::to_value(a.transfer(bytes))?);
    }
    if let (Some(d), Some(map)) = (dropin, v.as_object_mut()) {
        map.insert(
            "sysctl_d".into(),
            serde_json::json!({
                "file": dropin_file(d),
                "why": d.why,
                "overridden_by": d.overridden_by,
                "unchecked": d.unchecked,
            }),
        );
    }
    super::json(out, &v)
}
