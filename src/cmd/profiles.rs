//! `tcptune profiles [list|show NAME|export NAME]`: the shipped profiles, listed, printed as
//! they are built in, or exported with a header that makes the copy the user's to edit and
//! pass back with `advise --profile FILE`.

use std::io::Write;
use std::process::ExitCode;

use crate::cli::{ProfilesArgs, ProfilesCommand};
use crate::cmd::Context;
use crate::error::Error;
use crate::output::{self, profiles::Listed};
use crate::profile::{Profile, SHIPPED};

pub fn run(a: &ProfilesArgs, ctx: &Context, out: &mut dyn Write) -> anyhow::Result<ExitCode> {
    // show and export print TOML and take no --format (clap refuses one).
    match &a.command {
        None | Some(ProfilesCommand::List(_)) => list(ctx, out)?,
        Some(ProfilesCommand::Show(p)) => out.write_all(text(&p.name)?.as_bytes())?,
        Some(ProfilesCommand::Export(p)) => out.write_all(export(&p.name)?.as_bytes())?,
    }
    Ok(ExitCode::SUCCESS)
}

fn list(ctx: &Context, out: &mut dyn Write) -> anyhow::Result<()> {
    let rows = SHIPPED
        .iter()
        .map(|(name, _)| {
            let p = Profile::load(name)?;
            Ok(Listed {
                name: p.name,
                os: p.os,
                description: p.description,
                settings: p
                    .settings
                    .iter()
                    .map(|s| s.key.as_str())
                    .collect::<std::collections::BTreeSet<_>>()
                    .len(),
            })
        })
        .collect::<Result<Vec<_>, Error>>()?;
    let json = serde_json::json!({ "profiles": rows });
    output::render::report(out, ctx.report_format(), &json, |out| {
        output::profiles::write_table(out, &rows, (ctx.term.stdout_tty, ctx.term.color), ctx.term.columns)
    })?;
    Ok(())
}

/// A shipped profile's TOML, exactly as built in.
pub fn text(name: &str) -> Result<&'static str, Error> {
    SHIPPED
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(_, t)| *t)
        .ok_or_else(|| Error::usage(format!("unknown profile \"{name}\"")).with_hint(crate::profile::LIST_HINT))
}

/// The TOML with a header saying where it came from and how to use it.
pub fn export(name: &str) -> Result<String, Error> {
    let body = text(name)?;
    Ok(format!(
        "# Exported from tcptune {version}'s shipped \"{name}\" profile. This copy is yours to edit:\n\
         # change a value, reason or condition, drop settings you do not want, add your own, then\n\
         #   tcptune advise --profile THIS_FILE --rtt 150ms --bandwidth 500mbit\n\
         # tcptune checks the file when it loads it and names the line and field of any mistake.\n\
         # The format and the facts an expression may use: `man tcptune` (PROFILES) or docs/GUIDE.md.\n\
         # The built-in \"{name}\" profile is not affected by edits here.\n\
         #\n\
         {body}",
        version = env!("CARGO_PKG_VERSION"),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_export_parses_back_to_the_same_settings() {
        for (name, _) in SHIPPED {
            let shipped = Profile::load(name).expect("shipped");
            let exported = Profile::parse(&export(name).expect("export"), "my.toml").expect("parses");
            assert_eq!(exported.name, shipped.name);
            assert_eq!(exported.settings.len(), shipped.settings.len());
            for (a, b) in exported.settings.iter().zip(&shipped.settings) {
                assert_eq!((&a.key, &a.value), (&b.key, &b.value));
            }
        }
    }

    #[test]
    fn unknown_name_is_a_usage_error_with_a_hint() {
        let e = text("solaris").expect_err("unknown");
        assert_eq!(e.exit_code(), crate::error::exit::USAGE);
        assert!(e.hint().is_some());
    }
}
