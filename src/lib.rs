//! tcptune: measure a path, size TCP buffers to its bandwidth-delay product, and render
//! the advice as sysctl settings for Linux, FreeBSD or macOS.
//!
//! Arrows point one way (no module imports one that imports it back):
//!
//! * `cmd` (one thin file per subcommand: parse, call the domain, render) →
//! * `output` (tables, JSON, progress) → the domain: `advice`, `calc`, `change` (apply/revert
//!   transactions), `check` (rules over gathered facts), `diag` (serve/verify/inspect) →
//! * `measure` (probes), `profile`, `persist`, `snapshot`, `sysctl_file`, `input` →
//! * `platform` (sysctl values: /proc/sys or sysctl(8)), `host` (facts about this machine),
//!   `fsutil` (opening files safely as root) → `text`, `units`, `bdp`, `expr`, `error`.
//!
//! The domain never prints and takes no clap type. `units`, `bdp`, `expr`, `text` and
//! `profile` do no I/O.

pub mod advice;
pub mod bdp;
pub mod calc;
pub mod change;
pub mod check;
pub mod cli;
pub mod cmd;
pub mod diag;
pub mod error;
pub mod expr;
pub mod fleet;
pub mod fsutil;
pub mod host;
pub mod input;
pub mod measure;
pub mod os;
pub mod output;
pub mod persist;
pub mod profile;
pub mod signals;
pub mod snapshot;
pub mod sysctl;
pub mod tcp;
pub mod text;
pub mod units;

use std::ffi::OsString;
use std::io::IsTerminal as _;
use std::path::PathBuf;
use std::process::ExitCode;

use cli::{Cli, Command, Format};
use os::Os;
use sysctl::SysctlBackend;

/// Everything the subcommands need from the raw arguments and the environment, resolved
/// once here; subcommands never read env vars or probe the terminal themselves.
pub struct Context {
    pub os: Os,
    /// `--format` as given; each command picks its default.
    pub format: Option<Format>,
    pub stdout_tty: bool,
    pub stderr_tty: bool,
    /// Colour allowed (a terminal and NO_COLOR unset).
    pub color: bool,
    /// The running values of `os`, or None when advising for another OS.
    pub backend: Option<Box<dyn SysctlBackend>>,
    pub state_dir: PathBuf,
    /// Whether `backend` is this very machine (memory checks use its RAM).
    pub local: bool,
    /// The global options that select the same OS, sysctl target and state directory, for a
    /// tcptune started by this one (the `apply --for` timer); paths made absolute.
    pub forward_args: Vec<OsString>,
    /// The same global options as a user would type them, only those not at their default,
    /// shell-quoted with a leading space: what a printed `tcptune revert ...` must carry to
    /// find the same snapshot store and sysctl target.
    pub again_args: String,
    /// What measures `--host` paths: [`measure::SystemProber`], or a fake (`--fake-prober`).
    pub prober: Box<dyn measure::PathProber>,
}

impl Context {
    pub fn from_cli(cli: &Cli) -> anyhow::Result<Self> {
        let g = &cli.global;
        let os = g.os.unwrap_or_else(Os::running);
        let running = Os::running();
        let absolute = |p: &PathBuf| std::path::absolute(p).unwrap_or_else(|_| p.clone());
        // Absolute once, here: the snapshot records the target, and a relative one would not
        // match the same directory seen from the `--for` timer (which runs in /).
        let sysctl_dir = g.sysctl_dir.as_ref().map(absolute);
        let backend: Option<Box<dyn SysctlBackend>> = match os {
            Os::Linux => match &sysctl_dir {
                Some(dir) => Some(Box::new(sysctl::linux::ProcSys::new(dir))),
                None if running == Os::Linux => Some(Box::new(sysctl::linux::ProcSys::new("/proc/sys"))),
                None => None,
            },
            Os::Freebsd | Os::Macos => match &g.sysctl_cmd {
                // Root runs this program for every read and write: under sudo it must be one
                // that only root could have put there.
                Some(cmd) if host::is_root() => Some(Box::new(sysctl::bsd::SysctlCmd::new(
                    os,
                    fsutil::check_trusted_program(cmd, "the --sysctl-cmd program")?,
                ))),
                Some(cmd) => Some(Box::new(sysctl::bsd::SysctlCmd::new(os, cmd))),
                None if running == os => Some(Box::new(sysctl::bsd::SysctlCmd::new(os, "sysctl"))),
                None => None,
            },
        };
        let local = os == running && g.sysctl_dir.is_none() && g.sysctl_cmd.is_none();
        let stdout_tty = std::io::stdout().is_terminal();
        let mut forward_args: Vec<OsString> = vec!["--os".into(), os.name().into()];
        let mut again: Vec<(&str, String)> = Vec::new();
        if os != running {
            again.push(("--os", os.name().to_string()));
        }
        if let Some(d) = &sysctl_dir {
            forward_args.extend(["--sysctl-dir".into(), d.into()]);
            again.push(("--sysctl-dir", d.display().to_string()));
        }
        if let Some(c) = &g.sysctl_cmd {
            // A bare program name is looked up in PATH, as sysctl(8) is: keep it as given.
            let c = if c.components().count() > 1 {
                absolute(c)
            } else {
                c.clone()
            };
            again.push(("--sysctl-cmd", c.display().to_string()));
            forward_args.extend(["--sysctl-cmd".into(), c.into()]);
        }
        let state_dir = absolute(&g.state_dir);
        if g.state_dir.as_os_str() != cli::DEFAULT_STATE_DIR {
            again.push(("--state-dir", state_dir.display().to_string()));
        }
        forward_args.extend(["--state-dir".into(), state_dir.into()]);
        let again_args = again
            .iter()
            .map(|(flag, v)| format!(" {flag} {}", crate::text::shell_quote(v)))
            .collect();
        Ok(Self {
            os,
            format: g.format,
            stdout_tty,
            stderr_tty: std::io::stderr().is_terminal(),
            color: color_allowed(stdout_tty, std::env::var_os("NO_COLOR").as_deref()),
            backend,
            state_dir: g.state_dir.clone(),
            local,
            forward_args,
            again_args,
            prober: match &g.fake_prober {
                Some(fake) => Box::new(fake.clone()),
                None => Box::new(measure::SystemProber),
            },
        })
    }

    /// Where `apply` and `revert` change things: this context's OS and backend, `store`, and
    /// the global options a printed `tcptune revert ...` must carry.
    pub fn change_env<'a>(&'a self, backend: &'a dyn SysctlBackend, store: &'a snapshot::Store) -> change::Env<'a> {
        change::Env {
            os: self.os,
            local: self.local,
            backend,
            store,
            again_args: &self.again_args,
        }
    }

    /// A context for unit tests: Linux, no terminal, no backend, snapshots under `state_dir`.
    #[cfg(test)]
    pub fn for_tests(state_dir: &std::path::Path) -> Self {
        Self {
            os: Os::Linux,
            format: None,
            stdout_tty: false,
            stderr_tty: false,
            color: false,
            backend: None,
            state_dir: state_dir.to_path_buf(),
            local: false,
            forward_args: Vec::new(),
            again_args: String::new(),
            prober: Box::new(measure::SystemProber),
        }
    }

    /// The system advice is for: the OS, its running values, whether it is this machine.
    pub fn system(&self) -> advice::System<'_> {
        advice::System {
            os: self.os,
            backend: self.backend.as_deref(),
            local: self.local,
        }
    }

    /// The path prober for `--host`: the real one, or the fake the hidden `--fake-prober`
    /// selects (CLI tests).
    pub fn prober(&self) -> &dyn measure::PathProber {
        self.prober.as_ref()
    }

    /// The backend for commands that change the running system: an error naming `command`
    /// when there is none (advising for another OS, with no --sysctl-dir / --sysctl-cmd).
    pub fn changing_backend(&self, command: &str) -> anyhow::Result<&dyn SysctlBackend> {
        self.backend.as_deref().ok_or_else(|| {
            error::Error::usage(format!(
                "{command} changes the running system, which is not {}: use --sysctl-dir DIR or --sysctl-cmd PATH to point at one",
                self.os
            ))
            .into()
        })
    }

    /// For commands that report: table (default) or json.
    pub fn report_format(&self, command: &str) -> anyhow::Result<Format> {
        match self.format.unwrap_or(Format::Table) {
            f @ (Format::Table | Format::Json) => Ok(f),
            f => Err(error::Error::usage(format!(
                "{command} prints --format table or json, not {}",
                cli::format_name(f)
            ))
            .into()),
        }
    }
}

/// Colour only on a terminal, and never when NO_COLOR is set to anything non-empty (no-color.org).
fn color_allowed(tty: bool, no_color: Option<&std::ffi::OsStr>) -> bool {
    tty && no_color.is_none_or(std::ffi::OsStr::is_empty)
}

/// What `tcptune` alone prints: the three commands a newcomer needs, not a usage error.
pub const GUIDE: &str = "\
tcptune sizes TCP buffers so that one flow can fill a long, fast path.

  1. What does the path need?
       tcptune calc --bandwidth 500mbit --rtt 150ms
  2. What should change on this machine, and why? (measures the path to HOST)
       tcptune advise --host HOST
  3. Keep it: save the advice where sysctl reads it at boot, read it, load it
     (its \"# save as\" line says if installed files need a later number)
       tcptune advise --host HOST | sudo tee /etc/sysctl.d/60-tcptune.conf
       sudo sysctl -p /etc/sysctl.d/60-tcptune.conf
  4. Or change the running kernel now, and put it back exactly later
       sudo tcptune apply --host HOST
       sudo tcptune revert

Know the path, or nothing answers? Give it: --rtt 150ms --bandwidth 500mbit
FreeBSD, macOS: the advice goes in /etc/sysctl.conf; advise for them: --os macos
More: tcptune --help, tcptune profiles, man tcptune (or: tcptune man | man -l -)";

/// Run one parsed command line.
pub fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    let ctx = Context::from_cli(&cli)?;
    let mut out = std::io::stdout().lock();
    let done = match &cli.command {
        None => {
            use std::io::Write as _;
            writeln!(out, "{GUIDE}")?;
            Ok(ExitCode::SUCCESS)
        }
        Some(Command::Calc(a)) => cmd::calc::run(a, &ctx, &mut out),
        Some(Command::Advise(a)) => cmd::advise::run(a, &ctx, &mut out),
        Some(Command::Apply(a)) => cmd::apply::run(a, &ctx, &mut out),
        Some(Command::Revert(a)) => cmd::revert::run(a, &ctx, &mut out),
        Some(Command::Snapshots) => cmd::snapshots::run(&ctx, &mut out),
        Some(Command::RevertTimer(a)) => cmd::revert::run_timer(a, &ctx),
        Some(Command::Check(a)) => cmd::check::run(a, &ctx, &mut out),
        Some(Command::Serve(a)) => cmd::serve::run(a, &ctx, &mut out),
        Some(Command::Verify(a)) => cmd::verify::run(a, &ctx, &mut out),
        Some(Command::Inspect(a)) => cmd::inspect::run(a, &ctx, &mut out),
        Some(Command::Profiles(a)) => cmd::profiles::run(a, &ctx, &mut out),
        Some(Command::Man) => cmd::man::run(&mut out),
        Some(Command::Completions(a)) => cmd::completions::run(a, &mut out),
    };
    // The layers below state why a path could not be measured; the way around it, in flags,
    // is the command line's to say.
    done.map_err(cmd::with_flag_hint)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_color_is_honoured() {
        use std::ffi::OsStr;
        assert!(color_allowed(true, None));
        assert!(color_allowed(true, Some(OsStr::new(""))));
        assert!(!color_allowed(true, Some(OsStr::new("1"))));
        assert!(!color_allowed(false, None));
    }
}
