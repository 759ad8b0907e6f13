//! The one door from a command to a format: a command builds what it shows (an advice and the
//! far end's beside it, a mesh) and hands it here with the format asked for; this file alone
//! matches on advise's and mesh's formats, checks what each format can take, and writes the
//! result to stdout or to `--output`. The renderers it calls write one format each.

use std::io::Write;
use std::path::{Path, PathBuf};

use super::advice::Render;
use super::{Format, MeshFormat};
use crate::advice::Advice;
use crate::error::Error;
use crate::fleet::{self, Engine, k8s::Allowlist};
use crate::os::Os;
use crate::persist::{self, DropIn};

/// The TuneD profile name when `--output` does not give one.
const TUNED_NAME: &str = "tcptune";

/// What advise's output was asked to be: the format, how to render it, where to write it, and
/// the options of the fleets' formats.
pub struct Asked<'a> {
    pub format: Format,
    pub render: Render,
    /// `--output PATH` (None: stdout).
    pub output: Option<&'a Path>,
    /// `--tuned-include`.
    pub tuned_include: Option<&'a str>,
    /// `--allowed-unsafe-sysctls`.
    pub allowed_unsafe: Option<&'a Allowlist>,
    /// `--scope path`: the advice carries a host route.
    pub scope_path: bool,
}

/// What a command shows of an advice: the advice, the other end's beside it (its advice and
/// who it is), and whether it is this very machine's (`root`: where its installed files are
/// read: the sysctl.d drop-in's number, TuneD's overrides, networkd's .network file).
pub struct Shown<'a> {
    pub advice: &'a Advice,
    pub beside: Option<(&'a Advice, &'a str)>,
    pub here: bool,
    pub root: &'a Path,
}

impl Format {
    /// advise's format when `--format` is not given: a table on a terminal, else the file.
    pub fn for_terminal(tty: bool) -> Self {
        if tty { Self::Table } else { Self::Sysctl }
    }

    fn engine(self) -> Option<Engine> {
        match self {
            Self::Ansible => Some(Engine::Ansible),
            Self::Tuned => Some(Engine::Tuned),
            Self::K8s => Some(Engine::K8s),
            Self::Sysctl | Self::Table | Self::Json | Self::Shell | Self::Networkd => None,
        }
    }
}

/// Refuses, before anything is measured, what the format cannot take: an OS its engine does
/// not run on, another format's options, a profile name TuneD would not load, a directory where
/// a file is written, a route where the format has no place for one.
pub fn check(a: &Asked<'_>, os: Os) -> Result<(), Error> {
    let engine = a.format.engine();
    if let Some(e) = engine {
        e.check_os(os)?;
    }
    if a.tuned_include.is_some() && engine != Some(Engine::Tuned) {
        return Err(Error::usage("--tuned-include applies to --format tuned only"));
    }
    if a.allowed_unsafe.is_some() && engine != Some(Engine::K8s) {
        return Err(Error::usage("--allowed-unsafe-sysctls applies to --format k8s only"));
    }
    if a.render.size.is_some() && !matches!(a.format, Format::Table | Format::Json) {
        return Err(Error::usage("--size applies to --format table and json only"));
    }
    if let Some(inc) = a.tuned_include {
        for name in inc.split([',', ';']).map(str::trim) {
            fleet::check_tuned_name(name, "--tuned-include")?;
        }
    }
    if engine == Some(Engine::Tuned) {
        tuned_name(a)?;
    }
    if let Some(p) = a.output
        && p.is_dir()
        && !(a.format == Format::Tuned || (a.format == Format::Sysctl && os == Os::Linux))
    {
        return Err(output_dir_refused(p));
    }
    check_scope(a.scope_path, a.format)
}

/// `--scope path` and the formats: TuneD and Kubernetes have no place for a route, and the
/// networkd drop-in holds nothing else.
fn check_scope(scope_path: bool, format: Format) -> Result<(), Error> {
    match (scope_path, format) {
        (true, Format::Tuned | Format::K8s) => Err(Error::usage(format!(
            "--scope path: --format {} has no place for a route; use sysctl, shell, ansible, json or networkd",
            super::format_name(format)
        ))),
        (false, Format::Networkd) => Err(Error::usage(
            "--format networkd holds the host route of --scope path: add --scope path",
        )),
        _ => Ok(()),
    }
}

/// The advice in the format asked for, to stdout (`out`) or to `--output`; what else to know
/// (the far end's advice left out, the file written, how to activate a TuneD profile) on stderr.
pub fn advice(out: &mut dyn Write, a: &Asked<'_>, s: &Shown<'_>) -> anyhow::Result<()> {
    if let Some(e) = a.format.engine() {
        // The far end's OS may be another than this host's.
        e.check_os(s.advice.os)?;
    }
    let keys = s.advice.kept_keys();
    // The installed sysctl.d files are read only for the formats that name a drop-in, and only
    // this machine's: the far end's drop-in is the default one.
    let dropin = matches!(
        a.format,
        Format::Json | Format::Sysctl | Format::Table | Format::Ansible
    )
    .then(|| persist::dropin_for(s.advice.os, s.here, s.root, &keys))
    .flatten();
    let text = text(a, s, dropin.as_ref(), &keys)?;
    if let Some((far, who)) = s.beside
        && !matches!(a.format, Format::Json | Format::Table | Format::Ansible)
    {
        eprintln!(
            "tcptune: the far end's advice ({}, {}): add --side far",
            crate::text::escape(who),
            far.os
        );
    }
    let Some(path) = a.output else {
        out.write_all(&text)?;
        return Ok(());
    };
    let written = write_output(path, a.format, &text, dropin.as_ref())?;
    eprintln!("tcptune: wrote {}", written.display());
    if a.format == Format::Tuned {
        let name = tuned_name(a)?;
        eprintln!(
            "tcptune: activate it with `tuned-adm profile {name}`\n  (or `tuned-adm profile ACTIVE {name}` to keep the profile you run)"
        );
    }
    Ok(())
}

/// The advice in its format; table, JSON and the playbook with the far end's beside it.
fn text(a: &Asked<'_>, s: &Shown<'_>, dropin: Option<&DropIn>, keys: &[&str]) -> anyhow::Result<Vec<u8>> {
    let mut text = Vec::new();
    let (advice, beside, r) = (s.advice, s.beside, a.render);
    let file = Render::file(r.explain);
    match a.format {
        Format::Json => super::advice::write_json(&mut text, advice, dropin, beside.map(|(f, _)| f), r)?,
        Format::Sysctl => super::advice::write_sysctl(&mut text, advice, dropin, file)?,
        Format::Shell => super::advice::write_shell(&mut text, advice, file)?,
        Format::Table => {
            super::advice::write_table(&mut text, advice, dropin, r)?;
            if let Some((far, who)) = beside {
                super::advice::write_far_table(&mut text, far, who, r)?;
            }
        }
        Format::Ansible => playbook(&mut text, advice, beside, dropin)?,
        Format::Tuned => {
            // Only this machine's files are known; advice for another system warns of none.
            let overridden = if s.here {
                fleet::tuned_overrides(s.root, keys)
            } else {
                Vec::new()
            };
            let entries = fleet::entries(advice)?;
            super::tuned::write(
                &mut text,
                advice,
                &entries,
                &tuned_name(a)?,
                a.tuned_include,
                &overridden,
            )?;
        }
        Format::K8s => super::k8s::write(
            &mut text,
            advice,
            &fleet::entries(advice)?,
            &a.allowed_unsafe.cloned().unwrap_or_default(),
        )?,
        Format::Networkd => {
            let file = s.here.then(|| super::networkd::network_file(advice)).flatten();
            super::networkd::write(&mut text, advice, file.as_deref())?;
        }
    }
    if r.explain && matches!(a.format, Format::Ansible | Format::Tuned | Format::K8s) {
        fleet_explain(&mut text, a.format, advice, beside, dropin)?;
    }
    Ok(text)
}

/// The playbook: this end's play, and the far end's beside it.
fn playbook(
    text: &mut Vec<u8>,
    advice: &Advice,
    beside: Option<(&Advice, &str)>,
    dropin: Option<&DropIn>,
) -> anyhow::Result<()> {
    let near_entries = fleet::entries(advice)?;
    let far_entries = beside.map(|(f, _)| fleet::entries(f)).transpose()?;
    let far_play = beside.zip(far_entries.as_deref()).map(|((f, who), entries)| {
        (
            super::ansible::Play {
                advice: f,
                entries,
                dropin: None,
            },
            who,
        )
    });
    let near_play = super::ansible::Play {
        advice,
        entries: &near_entries,
        dropin,
    };
    super::ansible::write(text, &near_play, far_play.as_ref().map(|(p, w)| (p, *w)))
}

/// The fleets' files take the derivation as comments after their own text (the playbook the
/// far end's too).
fn fleet_explain(
    text: &mut Vec<u8>,
    format: Format,
    advice: &Advice,
    beside: Option<(&Advice, &str)>,
    dropin: Option<&DropIn>,
) -> std::io::Result<()> {
    super::advice::file::write_explain(text, advice, dropin)?;
    if let (Format::Ansible, Some((far, who))) = (format, beside) {
        writeln!(text, "# the far end's ({}):", crate::text::comment(who))?;
        super::advice::file::write_explain(text, far, None)?;
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
fn tuned_name(a: &Asked<'_>) -> Result<String, Error> {
    let Some(dir) = a.output else {
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

/// A mesh in the format asked for: the matrix and each host's changes, the JSON, or the
/// playbook of a play per host.
pub fn mesh(out: &mut dyn Write, format: MeshFormat, m: &super::mesh::Mesh<'_>) -> anyhow::Result<()> {
    match format {
        MeshFormat::Table => super::mesh::write_table(out, m)?,
        MeshFormat::Json => super::mesh::write_json(out, m)?,
        MeshFormat::Ansible => super::ansible::write_mesh(out, m.hosts)?,
    }
    Ok(())
}

/// A report (`table` or `json`): the value as JSON, or the table `table` writes.
pub fn report<T: serde::Serialize>(
    out: &mut dyn Write,
    format: Format,
    value: &T,
    table: impl FnOnce(&mut dyn Write) -> anyhow::Result<()>,
) -> anyhow::Result<()> {
    match format {
        Format::Json => super::json(out, value),
        _ => table(out),
    }
}
