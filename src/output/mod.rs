//! Renderers shared by the commands: tables (comfy-table) and JSON here, one file per report
//! below. Numbers and words come from [`crate::text`], which the domain uses too.

use std::io::Write;

use comfy_table::{ContentArrangement, Table, presets};

/// What advise prints (`--format`); the commands that report take `table` or `json`
/// (the command line's `ReportFormat`), which the context turns into one of these.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// `key = value` lines, valid for /etc/sysctl.d (Linux) or /etc/sysctl.conf (BSD)
    Sysctl,
    /// A table for people
    Table,
    /// JSON for programs
    Json,
    /// `sysctl -w` commands
    Shell,
    /// An Ansible playbook (ansible.posix.sysctl), with a revert tagged `revert`
    Ansible,
    /// A TuneD profile (tuned.conf; --output DIR writes the profile directory)
    Tuned,
    /// A Kubernetes Pod with the sysctls a pod may set; node-wide keys listed apart
    K8s,
    /// A systemd-networkd drop-in with the host route of --scope path (systemd 252+)
    Networkd,
}

/// A format's name as `--format` takes it.
pub fn format_name(f: Format) -> String {
    use clap::ValueEnum as _;
    f.to_possible_value()
        .map_or_else(String::new, |v| v.get_name().to_string())
}

/// What `tcptune mesh` prints.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum MeshFormat {
    /// The matrix and each host's changes, for people
    Table,
    /// Every pair's evidence and each host's advice, for programs
    Json,
    /// One Ansible playbook, a play per host with its own values
    Ansible,
}

/// The most columns a table or line tcptune prints takes when piped.
pub const PIPED_WIDTH: u16 = 100;

/// A table styled for where it goes: box drawing on a terminal, plain ASCII in a pipe.
/// Colour and bold only when `color` (a terminal, and NO_COLOR unset).
pub fn table(tty: bool, color: bool) -> Table {
    let mut t = Table::new();
    if !color {
        t.force_no_tty();
    }
    t.load_style(if tty {
        presets::UTF8_FULL_CONDENSED
    } else {
        presets::ASCII_FULL_CONDENSED
    });
    if !tty {
        // The header's rule has its column joints, as every other rule does.
        t.style_mut().header_separator = comfy_table::LineStyle::new('+', '=', '+', '+');
    }
    t.set_content_arrangement(ContentArrangement::Dynamic);
    // A fixed width keeps piped output stable; a terminal that reports no size gets it too.
    if !tty || t.width().is_none_or(|w| w < 40) {
        t.set_width(PIPED_WIDTH);
    }
    t
}

/// A table no wider than `columns` where the terminal (or `COLUMNS`) gives a width, and
/// never wider than a pipe's [`PIPED_WIDTH`].
pub fn fit(t: &mut Table, columns: Option<usize>) {
    if let Some(w) = columns {
        t.set_width(u16::try_from(w).unwrap_or(PIPED_WIDTH).min(PIPED_WIDTH));
    }
}

/// Header cells, bold where styling is allowed.
pub fn header<const N: usize>(names: [&str; N]) -> Vec<comfy_table::Cell> {
    names
        .iter()
        .map(|n| comfy_table::Cell::new(n).add_attribute(comfy_table::Attribute::Bold))
        .collect()
}

/// A host route's change in lines that fit 100 columns: "route DEST: WHAT" (WHAT may be
/// empty), then each of the commands or states it went through on a line of its own, indented,
/// the later ones after an arrow. A route's command alone is up to about 90 columns.
pub fn route_change(dest: &str, what: &str, states: &[&str]) -> String {
    let mut s = format!("route {dest}:");
    if !what.is_empty() {
        s.push(' ');
        s.push_str(what);
        s.push(':');
    }
    for (i, st) in states.iter().enumerate() {
        s.push_str(if i == 0 { "\n  " } else { "\n  \u{2192} " });
        s.push_str(st);
    }
    s
}

pub fn json<T: serde::Serialize>(out: &mut dyn Write, value: &T) -> anyhow::Result<()> {
    // An I/O error (a closed pipe) stays an io::Error, so `| head` exits 0.
    serde_json::to_writer_pretty(&mut *out, value).map_err(std::io::Error::from)?;
    writeln!(out)?;
    Ok(())
}

/// A YAML double-quoted scalar (JSON's string syntax is YAML's), for the playbook and the Pod.
pub fn yaml_quoted(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_else(|_| "\"\"".into())
}

pub mod advice;
pub mod ansible;
pub mod calc;
pub mod change;
pub mod check;
pub mod inspect;
pub mod k8s;
pub mod man;
pub mod mesh;
pub mod networkd;
pub mod profiles;
pub mod progress;
pub mod render;
pub mod snapshots;
pub mod tuned;
pub mod verify;
pub mod watch;
