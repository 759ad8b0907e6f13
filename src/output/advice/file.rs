//! The advice as a file: the sysctl format (`/etc/sysctl.d`, or the BSDs' `/etc/sysctl.conf`)
//! and a `#!/bin/sh` script of sysctl commands. A header of a few `#` lines (what, the path,
//! the class, the count, where to save it), the warnings, then per setting one comment line
//! (what changes from what to what, and why) and the setting; the notes last, and with
//! `--explain` the derivation. No line is over [`WIDTH`] columns, and every comment goes
//! through [`crate::text::comment`], so no text from a profile or a host can end a comment and
//! start a live line.

use std::io::Write;

use super::{Render, summary};
use crate::advice::Advice;
use crate::os::Os;
use crate::persist::DropIn;
use crate::profile::{Action, Stage};
use crate::text::comment as c;

/// The widest line of a file, in columns.
pub const WIDTH: usize = 100;

/// `# ` and `text` wrapped within [`WIDTH`], continued with `#   `.
pub(super) fn commented(text: &str) -> Vec<String> {
    summary::wrap(&c(text), WIDTH, "# ", "#   ")
}

/// The head of every file: what and when, the path, what was measured, the class, the count.
pub fn head(a: &Advice) -> Vec<String> {
    let mut lines = vec![
        format!("{}; the derivation: --explain", summary::title(a)),
        summary::path(a),
    ];
    lines.extend(summary::measured(a));
    lines.extend(summary::class(a));
    lines.push(summary::count_line(a));
    lines.extend(summary::scope_line(a));
    lines
}

/// `--scope path`: the route's comment line and its `# route: ip route replace ...` line (a
/// comment to sysctl, the line `tcptune apply` reads); one kept or not applied here says so.
fn write_route(out: &mut dyn Write, a: &Advice) -> std::io::Result<()> {
    let Some(r) = &a.route else {
        return Ok(());
    };
    writeln!(out)?;
    write_comments(out, &[r.line()])?;
    match (&r.action, &r.command) {
        (Action::Set, Some(cmd)) => {
            writeln!(out, "{}{}", crate::route::LINE_MARK, c(cmd))?;
            write_comments(out, summary::route_life(a).as_slice())
        }
        (Action::Keep, _) if r.prior.is_none() => writeln!(out, "# no host route needed: it is the host-wide default"),
        (Action::Keep, Some(cmd)) => write_comments(out, &[format!("in place already: {cmd}")]),
        (Action::Unavailable(why), _) => write_comments(out, &[format!("not applied here: {why}")]),
        (_, None) => Ok(()),
    }
}

/// The warnings and the notes a person should see, short, as their lines are said.
pub fn remarks(a: &Advice) -> Vec<String> {
    let mut lines: Vec<String> = summary::warnings(a).iter().map(|w| format!("warning: {w}")).collect();
    lines.extend(summary::notes(a).iter().map(|n| format!("note: {n}")));
    lines
}

/// Lines as `#` comments within [`WIDTH`].
fn write_comments(out: &mut dyn Write, lines: &[String]) -> std::io::Result<()> {
    for l in lines {
        for w in commented(l) {
            writeln!(out, "{w}")?;
        }
    }
    Ok(())
}

/// The head and the remarks as comments: the header the fleets' files open with.
pub fn header(out: &mut dyn Write, a: &Advice) -> std::io::Result<()> {
    write_comments(out, &head(a))?;
    write_comments(out, &remarks(a))
}

/// The derivation as comments, after a blank line.
pub fn write_explain(out: &mut dyn Write, a: &Advice, dropin: Option<&DropIn>) -> std::io::Result<()> {
    writeln!(out)?;
    writeln!(out, "# The derivation (--explain):")?;
    write_comments(out, &super::explain::lines(a, dropin))
}

/// `key = value` lines and `#` comments: valid for /etc/sysctl.d (Linux) or /etc/sysctl.conf.
pub fn write_sysctl(out: &mut dyn Write, a: &Advice, dropin: Option<&DropIn>, r: Render) -> anyhow::Result<()> {
    let mut head = head(a);
    if let Some(d) = dropin {
        let file = super::dropin_file(d);
        // The usual number needs no reason; another one says which file it must follow.
        let why = if d.name == crate::persist::unknown_dropin().name {
            String::new()
        } else {
            format!(" ({})", d.why)
        };
        // With a route to set, sysctl -p would load the keys and skip the route.
        let load = if summary::route_life(a).is_some() {
            format!("tcptune apply {file} (sysctl -p skips the route)")
        } else {
            format!("sysctl -p {file}")
        };
        head.push(format!("save as {file}{why}; load it: {load}"));
    }
    write_comments(out, &head)?;
    let mut warnings: Vec<String> = summary::warnings(a).iter().map(|w| format!("warning: {w}")).collect();
    warnings.extend(
        dropin
            .iter()
            .flat_map(|d| d.warnings())
            .map(|w| format!("warning: {w}")),
    );
    write_comments(out, &warnings)?;
    writeln!(out)?;
    // FreeBSD's rc.d/sysctl and macOS read `key=value`; Linux's sysctl -p also takes spaces.
    let sep = if a.os == Os::Linux { " = " } else { "=" };
    // Only where every value was read and kept: a value not read or not applied meets nothing.
    let counts = summary::counts(a);
    if counts.change == 0 && counts.unavailable == 0 {
        writeln!(
            out,
            "# no change needed: the running values already meet this path's needs"
        )?;
    }
    for s in &a.settings {
        if let Some(n) = &s.note {
            write_comments(out, &[format!("note: {n}")])?;
        }
        write_comments(out, &[s.line()])?;
        let (key, value) = (c(&s.key), c(&s.value));
        match (&s.action, s.stage) {
            (_, Stage::Boot) => writeln!(out, "# in /boot/loader.conf: {key}={value}")?,
            (Action::Set, Stage::Runtime) => writeln!(out, "{key}{sep}{value}")?,
            (Action::Keep | Action::Unavailable(_), _) => writeln!(out, "# {key}{sep}{value}")?,
        }
    }
    write_route(out, a)?;
    let notes: Vec<String> = summary::notes(a).iter().map(|n| format!("note: {n}")).collect();
    if !notes.is_empty() {
        writeln!(out)?;
        write_comments(out, &notes)?;
    }
    if r.explain {
        write_explain(out, a, dropin)?;
    }
    Ok(())
}

/// A `#!/bin/sh` script of sysctl commands, each quoted by [`Os::set_command`].
pub fn write_shell(out: &mut dyn Write, a: &Advice, r: Render) -> anyhow::Result<()> {
    writeln!(out, "#!/bin/sh")?;
    header(out, a)?;
    writeln!(out)?;
    for s in &a.settings {
        write_comments(out, &[s.line()])?;
        // Quoted by the one renderer of a sysctl command: `key=value` from a profile must
        // never run as shell code.
        let line = a.os.set_command(&s.key, &s.value);
        match (&s.action, s.stage) {
            (_, Stage::Boot) => writeln!(out, "# in /boot/loader.conf: {}={}", c(&s.key), c(&s.value))?,
            (Action::Set, Stage::Runtime) => writeln!(out, "{}", c(&line))?,
            (Action::Keep | Action::Unavailable(_), _) => writeln!(out, "# {}", c(&line))?,
        }
    }
    if let Some(route) = &a.route {
        write_comments(out, &[route.line()])?;
        match (&route.action, &route.command) {
            (Action::Set, Some(cmd)) => writeln!(out, "{}", c(cmd))?,
            (_, Some(cmd)) => writeln!(out, "# {}", c(cmd))?,
            (_, None) => {}
        }
    }
    if r.explain {
        write_explain(out, a, None)?;
    }
    Ok(())
}
