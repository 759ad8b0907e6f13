//! Errors that callers branch on, and their mapping to the exit codes fixed in docs/CLI.md.

use std::process::ExitCode;

/// Exit codes. Their meanings are [`exit::MEANINGS`], the one text behind `tcptune --help`,
/// the man page and docs/GUIDE.md (a test keeps the guide's table equal to it).
pub mod exit {
    /// Every exit code and what it means, for --help, the man page and the guide.
    pub const MEANINGS: &[(u8, &str)] = &[
        (
            OK,
            "ok; also when stdout is closed early (piped into head, say), or cannot be written after apply or revert made their change (a warning on stderr names the snapshot)",
        ),
        (CHECK_FOUND_PROBLEMS, "check found problems"),
        (
            USAGE,
            "usage or bad input: units, options, profiles, sysctl files (a route line not exactly advise's grammar among \
             them), your ssh configuration (ssh -G), an unknown or damaged snapshot; nothing was changed",
        ),
        (
            NOT_PERMITTED,
            "not permitted: root needed, a read-only key, a congestion control this network namespace may not \
             choose, a host route tcptune will not write (see apply's table: no path, another routing table, \
             multipath, a route that expires, a kernel without congctl) or that changed while apply wrote it, the \
             kernel refused a write, an untrusted state directory or program, the lock is held, \
             the snapshot could not be saved; nothing was left changed",
        ),
        (
            MEASUREMENT_FAILED,
            "measurement failed: host unresolvable or unreachable, no probe answered, the far end of --ssh not reached (host key, authentication, sshd), without a peer it can run, or answering other than tcptune's script does",
        ),
        (
            SYSTEM,
            "the system failed: an I/O error (a disk, a closed terminal), a program that would not start, \
             a lock that would not work; apply and revert leave nothing changed",
        ),
    ];

    pub const OK: u8 = 0;
    pub const CHECK_FOUND_PROBLEMS: u8 = 1;
    pub const USAGE: u8 = 2;
    pub const NOT_PERMITTED: u8 = 3;
    pub const MEASUREMENT_FAILED: u8 = 4;
    pub const SYSTEM: u8 = 5;
}

/// What kind of error: it decides the exit code ([`Error::exit_code`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Bad input: units, flags, files, profiles.
    Usage,
    /// The kernel or the file system refused (not root, read-only key).
    NotPermitted,
    /// A probe could not measure the path.
    Measurement,
    /// The system failed under us: an I/O error that is nobody's input and no refusal.
    System,
}

/// An error a user can act on: a kind, a one-line message and an optional second line, the
/// hint ("try ...").
///
/// One rule for the command line's flags: a message or a hint may name them (as hyperfine's
/// do). The library exists for this command line; a hint that says `--rtt` is the most useful
/// one, and every layer words its own errors where it knows what went wrong.
#[derive(Debug, thiserror::Error)]
#[error("{msg}")]
pub struct Error {
    kind: Kind,
    msg: String,
    hint: Option<String>,
}

impl Error {
    pub fn new(kind: Kind, msg: impl Into<String>) -> Self {
        Self {
            kind,
            msg: msg.into(),
            hint: None,
        }
    }
    pub fn usage(msg: impl Into<String>) -> Self {
        Self::new(Kind::Usage, msg)
    }
    pub fn not_permitted(msg: impl Into<String>) -> Self {
        Self::new(Kind::NotPermitted, msg)
    }
    pub fn measurement(msg: impl Into<String>) -> Self {
        Self::new(Kind::Measurement, msg)
    }
    pub fn system(msg: impl Into<String>) -> Self {
        Self::new(Kind::System, msg)
    }
    /// Attach a hint line ("try ...").
    #[must_use]
    pub fn with_hint(mut self, h: impl Into<String>) -> Self {
        self.hint = Some(h.into());
        self
    }
    pub fn kind(&self) -> Kind {
        self.kind
    }
    pub fn message(&self) -> &str {
        &self.msg
    }
    pub fn hint(&self) -> Option<&str> {
        self.hint.as_deref()
    }
    pub fn exit_code(&self) -> u8 {
        match self.kind {
            Kind::Usage => exit::USAGE,
            Kind::NotPermitted => exit::NOT_PERMITTED,
            Kind::Measurement => exit::MEASUREMENT_FAILED,
            Kind::System => exit::SYSTEM,
        }
    }
}

/// The exit code an error maps to: its typed kind where there is one in the chain (the
/// outermost), a parse error's 2, a permission error's 3, and otherwise 5 (the system
/// failed). Never 1: that code means "check found problems".
pub fn code_of(err: &anyhow::Error) -> u8 {
    if let Some(e) = err.chain().find_map(|c| c.downcast_ref::<Error>()) {
        return e.exit_code();
    }
    if err.chain().any(|c| c.downcast_ref::<clap::Error>().is_some()) {
        return exit::USAGE;
    }
    if err
        .chain()
        .filter_map(|c| c.downcast_ref::<std::io::Error>())
        .any(|io| io.kind() == std::io::ErrorKind::PermissionDenied)
    {
        return exit::NOT_PERMITTED;
    }
    exit::SYSTEM
}

/// Map any error from `run` to an exit code and print it once on stderr.
/// A broken pipe anywhere in the chain is not an error for a CLI whose output was cut short.
pub fn report(err: &anyhow::Error) -> ExitCode {
    for cause in err.chain() {
        let kind = cause
            .downcast_ref::<std::io::Error>()
            .map(std::io::Error::kind)
            .or_else(|| {
                cause
                    .downcast_ref::<serde_json::Error>()
                    .and_then(serde_json::Error::io_error_kind)
            });
        if kind == Some(std::io::ErrorKind::BrokenPipe) {
            return ExitCode::from(exit::OK);
        }
    }
    if let Some(e) = err.chain().find_map(|c| c.downcast_ref::<Error>()) {
        eprintln!("tcptune: {err:#}");
        if let Some(h) = e.hint() {
            eprintln!("hint: {h}");
        }
        return ExitCode::from(e.exit_code());
    }
    if let Some(e) = err.chain().find_map(|c| c.downcast_ref::<clap::Error>()) {
        // clap errors are usage errors; let clap format them.
        let _ = e.print();
        return ExitCode::from(exit::USAGE);
    }
    let code = code_of(err);
    eprintln!("tcptune: {err:#}");
    // SAFETY: geteuid has no preconditions and cannot fail.
    if let Some(h) = not_permitted_hint(code, unsafe { libc::geteuid() }) {
        eprintln!("hint: {h}");
    }
    ExitCode::from(code)
}

/// The hint under an untyped error of exit `code` for a process of effective uid `euid`:
/// "run as root" only to a process that is not root already.
pub fn not_permitted_hint(code: u8, euid: u32) -> Option<&'static str> {
    (code == exit::NOT_PERMITTED && euid != 0).then_some("run as root (sudo) to change kernel settings")
}

/// Print a command-line parse error. A bad value (a unit, say) is one line naming the
/// option and what was expected; other usage errors become `tcptune: ...` and a `hint: ...`
/// line made of clap's tips, possible values and usage. `--help` and `--version` exit 0.
pub fn report_clap(e: &clap::Error) -> ExitCode {
    use clap::error::{ContextKind, ContextValue, ErrorKind};
    if !e.use_stderr() {
        let _ = e.print();
        return ExitCode::SUCCESS;
    }
    if matches!(e.kind(), ErrorKind::ValueValidation)
        && let Some(src) = std::error::Error::source(e)
    {
        let arg = match e.get(ContextKind::InvalidArg) {
            Some(ContextValue::String(a)) => a.split_whitespace().next().unwrap_or("").to_string(),
            _ => String::new(),
        };
        eprintln!("tcptune: {arg}: {src}");
        return ExitCode::from(exit::USAGE);
    }
    if matches!(e.kind(), ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand) {
        let _ = e.print();
        return ExitCode::from(exit::USAGE);
    }
    let (msg, hint) = clap_one_line(&e.render().to_string());
    eprintln!("tcptune: {msg}");
    eprintln!("hint: {hint}");
    ExitCode::from(exit::USAGE)
}

/// clap's multi-line error text (plain, no styles) → (message, hint).
fn clap_one_line(text: &str) -> (String, String) {
    let mut msg = Vec::new();
    let mut hints = Vec::new();
    let mut usage = None;
    let mut in_message = true;
    for line in text.lines() {
        let t = line.trim();
        if t.is_empty() {
            in_message = false;
        } else if let Some(tip) = t.strip_prefix("tip: ") {
            hints.push(tip.to_string());
        } else if let Some(values) = t.strip_prefix('[').and_then(|v| v.strip_suffix(']')) {
            hints.push(values.to_string());
        } else if let Some(u) = t.strip_prefix("Usage: ") {
            usage = Some(u.to_string());
        } else if in_message {
            msg.push(t.strip_prefix("error: ").unwrap_or(t));
        }
    }
    match usage {
        Some(u) => hints.push(format!("usage: {u}; see --help")),
        None => hints.push("see --help".to_string()),
    }
    (msg.join(" "), hints.join("; "))
}

#[cfg(test)]
mod tests {
    #[test]
    fn root_is_never_told_to_run_as_root() {
        use super::{exit, not_permitted_hint};
        assert_eq!(not_permitted_hint(exit::NOT_PERMITTED, 0), None);
        assert!(not_permitted_hint(exit::NOT_PERMITTED, 1000).is_some_and(|h| h.contains("run as root")));
        assert_eq!(not_permitted_hint(exit::SYSTEM, 1000), None);
    }

    #[test]
    fn every_error_has_a_documented_code_and_none_is_1() {
        let typed: anyhow::Error = Error::measurement("no reply").into();
        assert_eq!(code_of(&typed), exit::MEASUREMENT_FAILED);
        // The outermost typed error decides, through any context added on the way.
        let wrapped = anyhow::Error::from(Error::usage("bad unit")).context("reading the profile");
        assert_eq!(code_of(&wrapped), exit::USAGE);
        let denied: anyhow::Error = std::io::Error::from(std::io::ErrorKind::PermissionDenied).into();
        assert_eq!(code_of(&denied), exit::NOT_PERMITTED);
        let io: anyhow::Error = std::io::Error::other("EIO").into();
        assert_eq!(code_of(&io), exit::SYSTEM);
        assert_eq!(code_of(&anyhow::anyhow!("anything else")), exit::SYSTEM);
        for (code, _) in exit::MEANINGS {
            assert!(*code <= exit::SYSTEM);
        }
        assert!(exit::MEANINGS.iter().any(|(c, _)| *c == exit::SYSTEM));
    }

    use super::*;

    #[test]
    fn clap_errors_become_a_message_and_a_hint() {
        let (m, h) = clap_one_line(
            "error: unrecognized subcommand 'advice'\n\n  tip: a similar subcommand exists: 'advise'\n\n\
             Usage: tcptune [COMMAND]\n\nFor more information, try '--help'.\n",
        );
        assert_eq!(m, "unrecognized subcommand 'advice'");
        assert_eq!(
            h,
            "a similar subcommand exists: 'advise'; usage: tcptune [COMMAND]; see --help"
        );
        let (m, h) = clap_one_line(
            "error: the following required arguments were not provided:\n  <SHELL>\n\n\
             Usage: tcptune completions <SHELL>\n\nFor more information, try '--help'.\n",
        );
        assert_eq!(m, "the following required arguments were not provided: <SHELL>");
        assert_eq!(h, "usage: tcptune completions <SHELL>; see --help");
        let (m, h) = clap_one_line(
            "error: invalid value 'solaris' for '--os <OS>'\n  [possible values: linux, freebsd, macos]\n\n\
             For more information, try '--help'.\n",
        );
        assert_eq!(m, "invalid value 'solaris' for '--os <OS>'");
        assert_eq!(h, "possible values: linux, freebsd, macos; see --help");
    }
}
