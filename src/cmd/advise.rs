//! `tcptune advise`: turn a path (given, or measured with `--host`) into sysctl advice
//! for an OS, showing the running values beside the recommendation. The advice is
//! [`crate::advice`]'s; this command turns the arguments into a request and renders the result
//! — for people, for sysctl, or for a fleet's configuration engine ([`crate::fleet`]).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use crate::advice::Advice;
use crate::cli::{AdviseCmdArgs, Format, OutputArgs, Side};
use crate::cmd::Context;
use crate::error::Error;
use crate::fleet::{self, Engine};
use crate::output;
use crate::persist::{self, DropIn};

/// The table's width where neither the terminal nor `COLUMNS` gives one.
const TABLE_WIDTH: usize = 80;

/// The TuneD profile name when `--output` does not give one.
const TUNED_NAME: &str = "tcptune";

pub fn run(args: &AdviseCmdArgs, ctx: &Context, out: &mut dyn Write) -> anyhow::Result<ExitCode> {
    let a = &args.output;
    let format = ctx.format.unwrap_or(if ctx.term.stdout_tty {
        Format::Table
    } else {
        Format::Sysctl
    });
    // Everything the format cannot take is refused before anything is measured.
    let engine = engine(format);
    check_flags(a, format, engine, ctx)?;
    super::scoped::check_format(args.advice.scope, format)?;
    if a.side == Side::Far && args.advice.ssh.is_none() {
        return Err(Error::usage("--side far prints the far end's advice: it needs --ssh DEST").into());
    }
    let advised = super::advice_from_args(&args.advice, ctx)?;
    let (advice, beside) = pick_side(a.side, advised)?;
    if let Some(e) = engine {
        // The far end's OS may be another than this host's.
        e.check_os(advice.os)?;
    }
    let root = a.persist_root.clone().unwrap_or_else(|| PathBuf::from("/"));
    let keys = advice.kept_keys();
    // The installed sysctl.d files are read only for the formats that name a drop-in, and only
    // this machine's: the far end's drop-in is the default one.
    let here = ctx.local && a.side == Side::Near;
    let dropin = matches!(format, Format::Json | Format::Sysctl | Format::Table | Format::Ansible)
        .then(|| persist::dropin_for(advice.os, here, &root, &keys))
        .flatten();
    let text = render(format, a, ctx, &advice, beside.as_ref(), dropin.as_ref(), &root, &keys)?;
    if let Some((far, who)) = &beside
        && !matches!(format, Format::Json | Format::Table | Format::Ansible)
    {
        eprintln!(
            "tcptune: the far end's advice ({}, {}): add --side far",
            crate::text::escape(who),
            far.os
        );
    }
    match &a.output {
        None => out.write_all(&text)?,
        Some(path) => {
            let written = write_output(path, format, &text, dropin.as_ref())?;
            eprintln!("tcptune: wrote {}", written.display());
            if format == Format::Tuned {
                let name = tuned_name(a)?;
                eprintln!(
                    "tcptune: activate it with `tuned-adm profile {name}`\n  (or `tuned-adm profile ACTIVE {name}` to keep the profile you run)"
                );
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// This host's advice, or the far end's (`--side far`), and the far end's to show beside this
/// host's when there is one: its advice and who it is.
fn pick_side(side: Side, advised: super::Advised) -> anyhow::Result<(Advice, Option<(Advice, String)>)> {
    let super::Advised { near, far } = advised;
    match (side, far) {
        (Side::Near, None) => Ok((near, None)),
        (Side::Near, Some((end, far))) => Ok((near, far.map(|f| (f, end.dest)))),
        (Side::Far, Some((_, Some(far)))) => Ok((far, None)),
        (Side::Far, Some((end, None))) => Err(Error::usage(format!(
            "--side far: the far end runs {}, which tcptune does not advise for",
            end.uname
        ))
        .into()),
        (Side::Far, None) => Err(Error::usage("--side far prints the far end's advice: it needs --ssh DEST").into()),
    }
}

/// The advice in `format`; table, JSON and the playbook with the far end's beside it.
#[allow(clippy::too_many_arguments)]
fn render(
    format: Format,
    a: &OutputArgs,
    ctx: &Context,
    advice: &Advice,
    beside: Option<&(Advice, String)>,
    dropin: Option<&DropIn>,
    root: &Path,
    keys: &[&str],
) -> anyhow::Result<Vec<u8>> {
    let mut text = Vec::new();
    let file = output::advice::Render::file(a.explain);
    let r = output::advice::Render {
        explain: a.explain,
        tty: ctx.term.stdout_tty,
        color: ctx.term.color,
        width: ctx.term.columns.unwrap_or(TABLE_WIDTH),
        size: a.size.map(crate::units::Bytes::get),
    };
    match format {
        Format::Json => output::advice::write_json(&mut text, advice, dropin, beside.map(|(f, _)| f), r)?,
        Format::Sysctl => output::advice::write_sysctl(&mut text, advice, dropin, file)?,
        Format::Shell => output::advice::write_shell(&mut text, advice, file)?,
        Format::Table => {
            output::advice::write_table(&mut text, advice, dropin, r)?;
            if let Some((far, who)) = beside {
                output::advice::write_far_table(&mut text, far, who, r)?;
            }
        }
        Format::Ansible => {
            let near_entries = fleet::entries(advice)?;
            let far_entries = beside.map(|(f, _)| fleet::entries(f)).transpose()?;
            let far_play = beside.zip(far_entries.as_deref()).map(|((f, who), entries)| {
                (
                    output::ansible::Play {
                        advice: f,
                        entries,
                        dropin: None,
                    },
                    who.as_str(),
                )
            });
            let near_play = output::ansible::Play {
                advice,
                entries: &near_entries,
                dropin,
            };
            output::ansible::write(&mut text, &near_play, far_play.as_ref().map(|(p, w)| (p, *w)))?;
        }
        Format::Tuned => {
            // Only this machine's files are known; advice for another system warns of none.
            let overridden = if ctx.local && a.side == Side::Near {
                fleet::tuned_overrides(root, keys)
            } else {
                Vec::new()
            };
            output::tuned::write(
                &mut text,
                advice,
                &fleet::entries(advice)?,
                &tuned_name(a)?,
                a.tuned_include.as_deref(),
                &overridden,
            )?;
        }
        Format::K8s => output::k8s::write(
            &mut text,
            advice,
            &fleet::entries(advice)?,
            &a.allowed_unsafe_sysctls.clone().unwrap_or_default(),
        )?,
        Format::Networkd => super::scoped::write_networkd(&mut text, advice, ctx.local && a.side == Side::Near)?,
    }
    if a.explain && matches!(format, Format::Ansible | Format::Tuned | Format::K8s) {
        fleet_explain(&mut text, format, advice, beside, dropin)?;
    }
    Ok(text)
}

/// The fleets' files take the derivation as comments after their own text (the playbook the
/// far end's too).
fn fleet_explain(
    text: &mut Vec<u8>,
    format: Format,
    advice: &Advice,
    beside: Option<&(Advice, String)>,
    dropin: Option<&DropIn>,
) -> std::io::Result<()> {
    output::advice::file::write_explain(text, advice, dropin)?;
    if let (Format::Ansible, Some((far, who))) = (format, beside) {
        writeln!(text, "# the far end's ({}):", crate::text::comment(who))?;
        output::advice::file::write_explain(text, far, None)?;
    }
    Ok(())
}

fn engine(format: Format) -> Option<Engine> {
    match format {
        Format::Ansible => Some(Engine::Ansible),
        Format::Tuned => Some(Engine::Tuned),
        Format::K8s => Some(Engine::K8s),
        Format::Sysctl | Format::Table | Format::Json | Format::Shell | Format::Networkd => None,
    }
}

/// Refuses what the chosen format cannot take: an OS its engine does not run on, another
/// format's options, a profile name TuneD would not load.
fn check_flags(a: &OutputArgs, format: Format, engine: Option<Engine>, ctx: &Context) -> Result<(), Error> {
    if let Some(e) = engine {
        e.check_os(ctx.os)?;
    }
    if a.tuned_include.is_some() && engine != Some(Engine::Tuned) {
        return Err(Error::usage("--tuned-include applies to --format tuned only"));
    }
    if a.allowed_unsafe_sysctls.is_some() && engine != Some(Engine::K8s) {
        return Err(Error::usage("--allowed-unsafe-sysctls applies to --format k8s only"));
    }
    if a.size.is_some() && !matches!(format, Format::Table | Format::Json) {
        return Err(Error::usage("--size applies to --format table and json only"));
    }
    if let Some(inc) = &a.tuned_include {
        for name in inc.split([',', ';']).map(str::trim) {
            fleet::check_tuned_name(name, "--tuned-include")?;
        }
    }
    if engine == Some(Engine::Tuned) {
        tuned_name(a)?;
    }
    if let Some(p) = &a.output
        && p.is_dir()
        && !(format == Format::Tuned || (format == Format::Sysctl && ctx.os == crate::os::Os::Linux))
    {
        return Err(output_dir_refused(p));
    }
    Ok(())
}

fn output_dir_refused(path: &Path) -> Error {
    Error::usage(format!(
        "--output {}: a directory; name the file to write (a directory is taken by --format tuned, and by \
         --format sysctl on Linux, which writes the numbered drop-in there)",
        path.display()
    ))
}

/// The TuneD profile's name: the `--output` directory's, else "tcptune".
fn tuned_name(a: &OutputArgs) -> Result<String, Error> {
    let Some(dir) = &a.output else {
        return Ok(TUNED_NAME.to_string());
    };
    let name = dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    fleet::check_tuned_name(&name, "--output directory")?;
    Ok(name)
}

/// Writes `text` to `path` (`--format tuned`: to `path/tuned.conf`, creating the directory)
/// atomically, never through a symlink, and only where root could trust the directory
/// ([`crate::fsutil`]). What an earlier run wrote there is replaced under the same rules (a
/// rename in the trusted directory), so re-running the command updates the file. Returns the
/// file written; an error names the file it could not create or write.
fn write_output(path: &Path, format: Format, text: &[u8], dropin: Option<&DropIn>) -> Result<PathBuf, Error> {
    let sys = |what: &str, p: &Path, e: std::io::Error| Error::system(format!("cannot {what} {}: {e}", p.display()));
    let file = if format == Format::Tuned {
        crate::fsutil::check_trusted_parent(path, "--output directory")?;
        match std::fs::symlink_metadata(path) {
            Ok(m) if m.is_dir() => {}
            Ok(_) => {
                return Err(Error::usage(format!(
                    "--output {}: not a directory (--format tuned writes a profile directory)",
                    path.display()
                )));
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                std::fs::create_dir_all(path).map_err(|e| sys("create", path, e))?;
            }
            Err(e) => return Err(sys("read", path, e)),
        }
        crate::fsutil::check_trusted_dir(path, "--output directory")?;
        path.join("tuned.conf")
    } else if path.is_dir() {
        // A sysctl.d directory: the drop-in, numbered against the installed files.
        match (format, dropin) {
            (Format::Sysctl, Some(d)) => path.join(&d.name),
            _ => return Err(output_dir_refused(path)),
        }
    } else {
        path.to_path_buf()
    };
    crate::fsutil::check_trusted_parent(&file, "--output")?;
    crate::snapshot::write_atomic(&file, text, 0o644).map_err(|e| sys("write", &file, e))?;
    Ok(file)
}
