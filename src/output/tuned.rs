//! `advise --format tuned`: a TuneD profile (`tuned.conf`), with the advice's reasons as
//! comments. TuneD reads it with Python's ConfigParser (`=` the only delimiter, `#` starting
//! a comment anywhere): keys and values are sysctl tokens, which contain neither.

use std::io::Write;

use crate::advice::Advice;
use crate::fleet::{self, Entry};

/// The profile. `name` is the profile's directory name (what `tuned-adm profile` takes);
/// `include` a parent profile to stack on; `overridden_by` the files on this host that
/// TuneD's `reapply_sysctl` would apply after the profile, one line each.
pub fn write(
    out: &mut dyn Write,
    a: &Advice,
    entries: &[Entry],
    name: &str,
    include: Option<&str>,
    overridden_by: &[String],
) -> anyhow::Result<()> {
    let c = crate::text::comment;
    super::advice::header(out, a)?;
    write!(
        out,
        "#
# TuneD profile \"{name}\": this file is /etc/tuned/{name}/tuned.conf
#   (advise --format tuned --output /etc/tuned/{name}).
# Activate it alone: tuned-adm profile {name}
#   or on top of the profile you run: tuned-adm profile ACTIVE {name}
# Check the running values against it: tuned-adm verify
# reapply_sysctl (on by default in /etc/tuned/tuned-main.conf): after the profile, TuneD applies
# /run/sysctl.d, /etc/sysctl.d and /etc/sysctl.conf again, so a key set there wins over this
# profile.
"
    )?;
    if overridden_by.is_empty() {
        writeln!(
            out,
            "# None of those sets these keys on the host this advice was made on."
        )?;
    }
    for w in overridden_by {
        writeln!(out, "# warning: {}", c(w))?;
    }
    writeln!(out)?;
    writeln!(out, "[main]")?;
    writeln!(out, "summary=tcptune: {}", fleet::title(a))?;
    if let Some(p) = include {
        writeln!(
            out,
            "# the settings below override what {} sets for the same keys",
            c(p)
        )?;
        writeln!(out, "include={p}")?;
    }
    writeln!(out)?;
    writeln!(out, "[sysctl]")?;
    for e in entries {
        writeln!(out, "# {}", c(&e.reason))?;
        if let Some(n) = &e.note {
            writeln!(out, "# note: {}", c(n))?;
        }
        match &e.left_out {
            None => writeln!(out, "{}={}", e.key, e.value)?,
            // The line above says why ("not applied (…)", "in /boot/loader.conf").
            Some(_) => writeln!(out, "# {}={}  (left out)", e.key, e.value)?,
        }
    }
    Ok(())
}
