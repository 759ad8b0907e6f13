//! What every command gets: the resolved global options, where the output goes, and the
//! services it may use (the sysctl store, the path prober), resolved once from the command
//! line and the environment; commands never read env vars or probe the terminal themselves.

use std::ffi::OsString;
use std::io::IsTerminal as _;
use std::path::PathBuf;

use crate::cli::{self, Cli, Format};
use crate::os::Os;
use crate::sysctl::{self, SysctlBackend};
use crate::{change, error, fsutil, host, measure, snapshot};

/// Where the output goes: facts about the terminal, kept apart from the services.
#[derive(Debug, Clone, Copy)]
pub struct Terminal {
    pub stdout_tty: bool,
    pub stderr_tty: bool,
    /// Colour allowed (a terminal and NO_COLOR unset).
    pub color: bool,
    /// The columns a line may take: the terminal's width, else `COLUMNS` when set; None: a
    /// renderer's own default.
    pub columns: Option<usize>,
}

impl Terminal {
    /// This process's stdout and stderr, and NO_COLOR.
    pub fn detect() -> Self {
        let stdout_tty = std::io::stdout().is_terminal();
        let tty_width = stdout_tty
            .then(|| comfy_table::Table::new().width())
            .flatten()
            .map(usize::from);
        let env_width = std::env::var("COLUMNS")
            .ok()
            .and_then(|c| c.trim().parse::<usize>().ok());
        Self {
            stdout_tty,
            stderr_tty: std::io::stderr().is_terminal(),
            color: color_allowed(stdout_tty, std::env::var_os("NO_COLOR").as_deref()),
            columns: tty_width.or(env_width).filter(|w| *w >= MIN_COLUMNS),
        }
    }
}

/// Everything the subcommands need from the raw arguments and the environment, resolved
/// once here; subcommands never read env vars or probe the terminal themselves.
pub struct Context {
    pub os: Os,
    /// `--format` as given; each command picks its default.
    pub format: Option<Format>,
    /// Where the output goes: terminals or pipes, colour or not.
    pub term: Terminal,
    /// Service: the running values of `os`, or None when advising for another OS.
    pub backend: Option<Box<dyn SysctlBackend>>,
    /// `--state-dir`, made absolute once: the store, the undo line and the `--for` timer all
    /// name the same directory.
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
    /// Service: what measures `--host` paths: [`measure::SystemProber`], or a fake
    /// (`--fake-prober`).
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
                // Root reads and writes every key file of this tree: under sudo it must be one
                // that only root could have put there, as --state-dir must.
                Some(dir) if host::is_root() => {
                    fsutil::check_trusted_tree(dir, "--sysctl-dir")?;
                    Some(Box::new(sysctl::linux::ProcSys::new(dir)))
                }
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
        forward_args.extend(["--state-dir".into(), state_dir.clone().into()]);
        let again_args = again
            .iter()
            .map(|(flag, v)| format!(" {flag} {}", crate::text::shell_quote(v)))
            .collect();
        Ok(Self {
            os,
            format: g.format,
            term: Terminal::detect(),
            backend,
            state_dir,
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

    /// The facts of the system advice is for, with the running values of `keys`: this
    /// context's store (or nothing known, advising for another OS) and, when it is this very
    /// machine, its namespace, modules and RAM.
    pub fn host_facts(&self, keys: &[String]) -> host::Facts {
        host::facts::gather(self.os, self.backend.as_deref(), self.local, keys)
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

/// Narrower terminals get a renderer's default width instead.
const MIN_COLUMNS: usize = 40;

/// Colour only on a terminal, and never when NO_COLOR is set to anything non-empty (no-color.org).
fn color_allowed(tty: bool, no_color: Option<&std::ffi::OsStr>) -> bool {
    tty && no_color.is_none_or(std::ffi::OsStr::is_empty)
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
