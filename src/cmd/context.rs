//! What every command gets: the options that set it up (the OS, the sysctl store, the state
//! directory, the format: each command takes those it uses), where the output goes, and the
//! services it may use (the sysctl store, the path prober, the probes' progress), resolved once
//! from the command line and the environment; commands never read env vars or probe the
//! terminal themselves.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use super::terminal::Terminal;
use crate::cli::{self, Cli, Format};
use crate::os::Os;
use crate::sysctl::SysctlBackend;
use crate::{change, error, host, measure, snapshot};

/// Everything the subcommands need from the raw arguments and the environment, resolved
/// once here; subcommands never read env vars or probe the terminal themselves.
pub struct Context {
    pub os: Os,
    /// `--format`: advise's as given (None: it picks by the terminal), a reporting command's
    /// table or json, None for a command without one.
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
    /// The options that select the same OS, sysctl target and state directory, for a
    /// tcptune started by this one (the `apply --for` timer); paths made absolute.
    pub forward_args: Vec<OsString>,
    /// The same options as a user would type them, only those not at their default,
    /// shell-quoted with a leading space: what a printed `tcptune revert ...` must carry to
    /// find the same snapshot store and sysctl target.
    pub again_args: String,
    /// Service: what measures `--host` paths: [`measure::SystemProber`], or a fake
    /// (`--fake-prober`).
    pub prober: Box<dyn measure::PathProber>,
    /// Service: the probes' progress line, on stderr when it is a terminal (None piped).
    pub progress: Option<std::sync::Arc<dyn measure::Progress>>,
}

/// `p` made absolute (as it is, if that fails).
fn absolute(p: &Path) -> PathBuf {
    std::path::absolute(p).unwrap_or_else(|_| p.to_path_buf())
}

impl Context {
    /// The context of the command `cli` holds, from the options it takes.
    pub fn from_cli(cli: &Cli) -> anyhow::Result<Self> {
        let taken = cli::Taken::of(cli.command.as_ref());
        let target = taken.target;
        let os = target.and_then(|t| t.os).unwrap_or_else(Os::running);
        // Absolute once, here: the snapshot records the target, and a relative one would not
        // match the same directory seen from the `--for` timer (which runs in /).
        let sysctl_dir = target.and_then(|t| t.sysctl_dir.as_deref()).map(absolute);
        let given_sysctl_cmd = target.and_then(|t| t.sysctl_cmd.as_deref());
        let sysctl_cmd = given_sysctl_cmd.map(|c| {
            // A bare program name is looked up in PATH, as sysctl(8) is: keep it as given.
            if c.components().count() > 1 {
                absolute(c)
            } else {
                c.to_path_buf()
            }
        });
        let given_state_dir = taken.state.map(|s| s.state_dir.as_path());
        let state_dir = absolute(given_state_dir.unwrap_or(Path::new(cli::DEFAULT_STATE_DIR)));
        let mut again: Vec<(&str, &Path)> = Vec::new();
        if os != Os::running() {
            again.push(("--os", Path::new(os.name())));
        }
        again.extend(sysctl_dir.as_deref().map(|d| ("--sysctl-dir", d)));
        again.extend(sysctl_cmd.as_deref().map(|c| ("--sysctl-cmd", c)));
        if given_state_dir.is_some_and(|d| d.as_os_str() != cli::DEFAULT_STATE_DIR) {
            again.push(("--state-dir", &state_dir));
        }
        let mut forward_args: Vec<OsString> = vec!["--os".into(), os.name().into()];
        for (flag, value) in [("--sysctl-dir", &sysctl_dir), ("--sysctl-cmd", &sysctl_cmd)] {
            if let Some(v) = value {
                forward_args.extend([flag.into(), v.into()]);
            }
        }
        forward_args.extend(["--state-dir".into(), state_dir.clone().into()]);
        let term = Terminal::detect();
        Ok(Self {
            os,
            format: taken.format,
            progress: crate::output::progress::probes(term.stderr_tty),
            term,
            backend: host::sysctl_store(os, sysctl_dir.as_deref(), given_sysctl_cmd)?,
            local: os == Os::running() && sysctl_dir.is_none() && sysctl_cmd.is_none(),
            again_args: again
                .iter()
                .map(|(flag, v)| format!(" {flag} {}", crate::text::shell_word(&v.display().to_string())))
                .collect(),
            forward_args,
            state_dir,
            prober: match taken.prober.and_then(|p| p.fake_prober.as_ref()) {
                Some(fake) => Box::new(fake.clone()),
                None => Box::new(measure::SystemProber),
            },
        })
    }

    /// Where `apply` and `revert` change things: this context's OS and backend, `store`, and
    /// the options a printed `tcptune revert ...` must carry.
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

    /// For commands that report: table (the default) or json, as `--format` said (clap took
    /// no other value for them).
    pub fn report_format(&self) -> Format {
        self.format.unwrap_or(Format::Table)
    }
}
