//! The user's own OpenSSH client, as tcptune runs it: the command (`ssh`, or `--ssh-command`
//! split into words as a shell would, with no shell run), the options tcptune adds (never a
//! password prompt, no pty, bounded set-up), the host name `ssh -G` resolves, and what ssh's
//! stderr says went wrong, as one line a user can act on.

use std::ffi::OsString;
use std::io::Read as _;
use std::process::{Command, Stdio};
use std::sync::mpsc::channel;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::error::Error;
use crate::text;

/// How long ssh may take to connect and finish its handshake (`ConnectTimeout`).
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// Server-alive probes: a session whose far end stops answering ends within about
/// interval × count, so a dropped path ends the session, not only a closed connection.
const ALIVE_INTERVAL_S: u32 = 5;
const ALIVE_COUNT: u32 = 3;

/// The options tcptune adds to the user's ssh command, before the destination: no password
/// or passphrase prompt (BatchMode; a host key not already known is refused too), no pty (the
/// session carries bytes: the escape character is off as well), no forwarding the user's
/// configuration asks for (a forward that fails would end or litter the session), bounded
/// set-up, and a session that notices a dead path.
pub fn options() -> Vec<String> {
    [
        "-T",
        "-e",
        "none",
        "-o",
        "BatchMode=yes",
        "-o",
        "ClearAllForwardings=yes",
        "-o",
        &format!("ConnectTimeout={}", CONNECT_TIMEOUT.as_secs()),
        "-o",
        &format!("ServerAliveInterval={ALIVE_INTERVAL_S}"),
        "-o",
        &format!("ServerAliveCountMax={ALIVE_COUNT}"),
    ]
    .iter()
    .map(ToString::to_string)
    .collect()
}

/// The ssh client to run: its program and the words before tcptune's own.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Client {
    pub words: Vec<String>,
}

impl Client {
    /// `ssh`, or `--ssh-command` split into words as a POSIX shell would split them (quotes
    /// and backslashes; nothing is expanded, no shell runs).
    pub fn new(command: Option<&str>) -> Result<Self, Error> {
        let words = match command {
            None => vec!["ssh".to_string()],
            Some(c) => {
                split_words(c).map_err(|why| Error::usage(format!("--ssh-command \"{}\": {why}", text::escape(c))))?
            }
        };
        if words.is_empty() {
            return Err(Error::usage("--ssh-command is empty: name the ssh program to run"));
        }
        Ok(Self { words })
    }

    /// The program, for messages.
    pub fn program(&self) -> String {
        text::escape(&self.words[0])
    }

    /// The command for `dest` with tcptune's options and `remote` as the remote command.
    pub fn session(&self, dest: &str, remote: &str) -> Command {
        let mut c = Command::new(&self.words[0]);
        c.args(&self.words[1..]).args(options()).arg("--").arg(dest).arg(remote);
        c
    }

    /// The host name ssh connects to for `dest` (`ssh -G DEST`'s `hostname`): its
    /// configuration applied, nothing connected; within `within` and [`MAX_RESOLVE_OUTPUT`].
    pub fn resolve(&self, dest: &str, within: Duration) -> Result<String, Error> {
        self.endpoint(dest, within).map(|(h, _)| h)
    }

    /// The host name and port ssh connects to for `dest` (`ssh -G DEST`'s `hostname` and
    /// `port`; the port None when it names none): what tells two names of one machine apart.
    pub fn endpoint(&self, dest: &str, within: Duration) -> Result<(String, Option<u16>), Error> {
        let out = self.resolve_output(dest, within)?;
        let said = String::from_utf8_lossy(&out.stdout);
        let port = said
            .lines()
            .find_map(|l| l.strip_prefix("port "))
            .and_then(|p| p.trim().parse::<u16>().ok());
        let host = said
            .lines()
            .find_map(|l| l.strip_prefix("hostname "))
            .map(str::trim)
            .filter(|h| !h.is_empty());
        match host {
            Some(h) if out.status.success() && plain(h) => Ok((h.to_string(), port)),
            Some(h) if out.status.success() => Err(Error::usage(format!(
                "ssh -G {} names the host \"{}\", which is no host name",
                text::escape(dest),
                text::escape(h)
            ))),
            _ => Err(Error::usage(format!(
                "{} -G {} gave no host name ({})",
                self.program(),
                text::escape(dest),
                last_line(&String::from_utf8_lossy(&out.stderr)).unwrap_or_else(|| out.status.to_string())
            ))
            .with_hint("give the far end's address with --host")),
        }
    }

    /// `ssh -G DEST`, run here (it reads only the user's configuration, and runs what a
    /// `Match exec` there names): its output, at most [`MAX_RESOLVE_OUTPUT`] bytes, by
    /// `within`; past either it is killed and the error says so, as this host's own
    /// configuration (nothing reached the far end yet).
    fn resolve_output(&self, dest: &str, within: Duration) -> Result<std::process::Output, Error> {
        let mut child = Command::new(&self.words[0])
            .args(&self.words[1..])
            .args(["-G", "--", dest])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| self.start_error(&e))?;
        let by = Instant::now() + within;
        let (tx, rx) = channel();
        if let Some(out) = child.stdout.take() {
            std::thread::spawn(move || {
                let mut buf = Vec::new();
                let read = out.take(MAX_RESOLVE_OUTPUT + 1).read_to_end(&mut buf);
                let _ = tx.send(read.map(|_| buf));
            });
        }
        let stderr = Arc::new(Mutex::new(Vec::new()));
        let (done, stderr_read) = channel();
        if let Some(err) = child.stderr.take() {
            let sink = Arc::clone(&stderr);
            std::thread::spawn(move || {
                super::keep_stderr(err, &sink);
                let _ = done.send(());
            });
        }
        let shown = format!("{} -G {}", self.program(), text::escape(dest));
        let stdout = match rx.recv_timeout(within) {
            Ok(Ok(buf)) if buf.len() as u64 <= MAX_RESOLVE_OUTPUT => buf,
            Ok(Ok(_)) => {
                end(&mut child);
                return Err(Error::usage(format!(
                    "{shown} printed more than {} MiB: no ssh configuration is that long",
                    MAX_RESOLVE_OUTPUT >> 20
                ))
                .with_hint("check your ssh configuration, or give the far end's address with --host"));
            }
            Ok(Err(e)) => {
                end(&mut child);
                return Err(Error::system(format!("cannot read what {shown} printed: {e}")));
            }
            Err(_) => {
                end(&mut child);
                return Err(slow_config(&shown, within));
            }
        };
        let status = loop {
            match child.try_wait() {
                Ok(Some(status)) => break status,
                Ok(None) if Instant::now() < by => std::thread::sleep(Duration::from_millis(10)),
                _ => {
                    end(&mut child);
                    return Err(slow_config(&shown, within));
                }
            }
        };
        // What it said on stderr, to its end (a moment at most: a child of a Match exec may
        // hold it open).
        let _ = stderr_read.recv_timeout(by.saturating_duration_since(Instant::now()).min(Duration::from_secs(1)));
        let stderr = stderr.lock().map(|b| b.clone()).unwrap_or_default();
        Ok(std::process::Output { status, stdout, stderr })
    }

    /// Why the ssh program would not start.
    pub fn start_error(&self, e: &std::io::Error) -> Error {
        if e.kind() == std::io::ErrorKind::NotFound {
            Error::system(format!("cannot run {}: not found", self.program())).with_hint(
                "install the OpenSSH client (Debian: apt-get install openssh-client), or name yours with --ssh-command",
            )
        } else {
            Error::system(format!("cannot run {}: {e}", self.program()))
        }
    }
}

/// Most bytes of `ssh -G`'s output read: a configuration dump is a few KiB.
pub const MAX_RESOLVE_OUTPUT: u64 = 1 << 20;

/// `ssh -G` ran past its bound: this host's ssh configuration is slow, not the far end.
fn slow_config(shown: &str, within: Duration) -> Error {
    Error::usage(format!(
        "{shown} took longer than {} s: your ssh configuration (Match exec?) is slow",
        within.as_secs()
    ))
    .with_hint(format!(
        "time `{shown}`: ssh runs a Match exec command of your configuration for every connection"
    ))
}

/// Kills a child and reaps it.
fn end(child: &mut std::process::Child) {
    let _ = child.kill();
    let _ = child.wait();
}

/// A destination ssh takes as one: not empty, not an option (`-oProxyCommand=...` would be
/// one), no white space or control character.
pub fn check_dest(dest: &str) -> Result<(), Error> {
    if dest.is_empty() || dest.starts_with('-') || !plain(dest) {
        return Err(Error::usage(format!(
            "--ssh \"{}\": not an ssh destination (host, user@host or a Host of your ssh configuration)",
            text::escape(dest)
        )));
    }
    Ok(())
}

fn plain(s: &str) -> bool {
    !s.is_empty() && s.len() <= 1024 && !s.chars().any(|c| c.is_whitespace() || c.is_control())
}

/// Splits `s` into words as a POSIX shell does, without expanding anything: single quotes
/// keep everything, double quotes keep everything but `\"`, `\\`, `\$` and `` \` ``, a
/// backslash outside quotes keeps the next character (and drops a newline after it).
pub fn split_words(s: &str) -> Result<Vec<String>, String> {
    let mut words = Vec::new();
    let mut word: Option<String> = None;
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        match c {
            ' ' | '\t' | '\n' => {
                if let Some(w) = word.take() {
                    words.push(w);
                }
            }
            '\'' => {
                let w = word.get_or_insert_with(String::new);
                loop {
                    match chars.next() {
                        Some('\'') => break,
                        Some(c) => w.push(c),
                        None => return Err("a single quote is not closed".to_string()),
                    }
                }
            }
            '"' => {
                let w = word.get_or_insert_with(String::new);
                loop {
                    match chars.next() {
                        Some('"') => break,
                        Some('\\') => match chars.next() {
                            Some(c @ ('"' | '\\' | '$' | '`')) => w.push(c),
                            Some('\n') => {}
                            Some(c) => {
                                w.push('\\');
                                w.push(c);
                            }
                            None => return Err("a double quote is not closed".to_string()),
                        },
                        Some(c) => w.push(c),
                        None => return Err("a double quote is not closed".to_string()),
                    }
                }
            }
            '\\' => match chars.next() {
                Some('\n') => {}
                Some(c) => word.get_or_insert_with(String::new).push(c),
                None => return Err("it ends with a backslash".to_string()),
            },
            c => word.get_or_insert_with(String::new).push(c),
        }
    }
    words.extend(word);
    Ok(words)
}

/// What ssh's stderr says went wrong before the far end's script could answer, as one error
/// (a measurement error, exit 4: the far end could not be reached or used). `dest` as typed.
pub fn failure(dest: &str, stderr: &str, status: Option<std::process::ExitStatus>) -> Error {
    known_failure(dest, stderr).unwrap_or_else(|| {
        let said = last_line(stderr).unwrap_or_else(|| "it said nothing".to_string());
        let status = status.map(|s| format!(" ({s})")).unwrap_or_default();
        Error::measurement(format!("ssh {} failed{status}: {said}", text::escape(dest)))
    })
}

/// What ssh's stderr says went wrong, when it is one of the failures ssh words itself (the
/// host key, authentication, the connection); None for anything else.
pub fn known_failure(dest: &str, stderr: &str) -> Option<Error> {
    let dest = text::escape(dest);
    let line = |needle: &str| {
        stderr
            .lines()
            .find(|l| l.contains(needle))
            .map(|l| text::escape(l.trim()))
    };
    if stderr.contains("Host key verification failed")
        || stderr.contains("REMOTE HOST IDENTIFICATION HAS CHANGED")
        || stderr.contains("host key is known for")
    {
        let what = if stderr.contains("HAS CHANGED") {
            "has changed since it was recorded in known_hosts"
        } else {
            "is not known here"
        };
        return Some(
            Error::measurement(format!(
                "ssh {dest}: the far end's host key {what} (ssh: Host key verification failed.)"
            ))
            .with_hint(format!(
                "tcptune never accepts a host key: check it and record it (connect once with `ssh {dest}`), then run this again"
            )),
        );
    }
    if let Some(l) = line("Permission denied") {
        return Some(
            Error::measurement(format!("ssh {dest}: the far end refused authentication ({l})")).with_hint(
                "tcptune runs ssh with BatchMode=yes, so it never asks for a password or passphrase: \
                 load your key into ssh-agent (ssh-add) or name it in ~/.ssh/config (IdentityFile)",
            ),
        );
    }
    for needle in [
        "Connection refused",
        "Connection timed out",
        "Operation timed out",
        "No route to host",
        "Network is unreachable",
        "Could not resolve hostname",
        "Connection closed by",
        "Connection reset by",
        "kex_exchange_identification",
        "banner exchange",
    ] {
        if let Some(l) = line(needle) {
            return Some(
                Error::measurement(format!("ssh {dest}: cannot reach the far end's SSH server ({l})")).with_hint(
                    "check that sshd runs there and that its port is open from here, or give --rtt and --bandwidth",
                ),
            );
        }
    }
    None
}

/// The last line with something on it, escaped.
pub fn last_line(s: &str) -> Option<String> {
    s.lines()
        .map(str::trim)
        .rfind(|l| !l.is_empty())
        .map(|l| text::escape(&l.chars().take(300).collect::<String>()))
}

/// Whether this build runs on a machine whose `uname -s` and `uname -m` are these.
pub fn runs_on(sysname: &str, machine: &str) -> bool {
    let os = match sysname {
        "Linux" => "linux",
        "FreeBSD" => "freebsd",
        "Darwin" => "macos",
        _ => return false,
    };
    let arch = match machine {
        "amd64" | "x86_64" => "x86_64",
        "arm64" | "aarch64" => "aarch64",
        other => other,
    };
    os == std::env::consts::OS && arch == std::env::consts::ARCH
}

/// This build as `uname -sm` would name it, for messages.
pub fn this_build() -> String {
    format!("{} {}", std::env::consts::OS, std::env::consts::ARCH)
}

/// Whether an iperf3 client runs here (`iperf3 --version`).
pub fn has_iperf3_client() -> bool {
    Command::new("iperf3")
        .arg("--version")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// The argv as the user would see it, for a debug message.
pub fn shown(c: &Command) -> String {
    std::iter::once(c.get_program())
        .chain(c.get_args())
        .map(|a| text::shell_quote(&OsString::from(a).to_string_lossy()))
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_split_as_a_shell_splits_them() {
        for (s, want) in [
            ("ssh", vec!["ssh"]),
            ("ssh -F tmp/config", vec!["ssh", "-F", "tmp/config"]),
            ("  ssh   -p 2222 ", vec!["ssh", "-p", "2222"]),
            ("ssh -o 'ProxyJump a b'", vec!["ssh", "-o", "ProxyJump a b"]),
            ("ssh -F \"my dir/config\"", vec!["ssh", "-F", "my dir/config"]),
            ("ssh -i my\\ key", vec!["ssh", "-i", "my key"]),
            ("a\"b\"'c'd", vec!["abcd"]),
            ("x \"a\\\"b\\n\"", vec!["x", "a\"b\\n"]),
            ("x ''", vec!["x", ""]),
            ("x $HOME `id`", vec!["x", "$HOME", "`id`"]),
        ] {
            assert_eq!(
                split_words(s),
                Ok(want.iter().map(ToString::to_string).collect()),
                "{s}"
            );
        }
        for bad in ["ssh 'open", "ssh \"open", "ssh \\"] {
            assert!(split_words(bad).is_err(), "{bad}");
        }
        assert!(Client::new(Some("  ")).is_err());
        assert_eq!(Client::new(None).map(|c| c.words).ok(), Some(vec!["ssh".to_string()]));
    }

    #[test]
    fn the_session_never_prompts_and_takes_the_destination_as_one() {
        let c = Client::new(Some("ssh -F cfg")).expect("client");
        let cmd = c.session("dtn2", "sh -c 'x'");
        let args: Vec<String> = cmd.get_args().map(|a| a.to_string_lossy().into_owned()).collect();
        assert_eq!(&args[..3], ["-F", "cfg", "-T"]);
        assert!(args.contains(&"BatchMode=yes".to_string()));
        assert_eq!(&args[args.len() - 3..], ["--", "dtn2", "sh -c 'x'"]);
        for bad in ["", "-oProxyCommand=touch x", "a b", "a\nb"] {
            assert!(check_dest(bad).is_err(), "{bad:?}");
        }
        check_dest("user@dtn2.example.org").expect("a destination");
    }

    #[test]
    fn each_ssh_failure_is_said_in_one_line() {
        let e = failure(
            "dtn2",
            "No ED25519 host key is known for [198.18.0.2]:2222 and you have requested strict checking.\r\nHost key verification failed.\r\n",
            None,
        );
        assert!(e.message().contains("host key is not known here"), "{}", e.message());
        assert_eq!(e.exit_code(), crate::error::exit::MEASUREMENT_FAILED);
        let e = failure(
            "dtn2",
            "@@@ WARNING: REMOTE HOST IDENTIFICATION HAS CHANGED! @@@\nHost key verification failed.\n",
            None,
        );
        assert!(e.message().contains("has changed"), "{}", e.message());
        let e = failure("dtn2", "root@198.18.0.2: Permission denied (publickey).\r\n", None);
        assert_eq!(
            e.message(),
            "ssh dtn2: the far end refused authentication (root@198.18.0.2: Permission denied (publickey).)"
        );
        assert!(e.hint().is_some_and(|h| h.contains("BatchMode")));
        let e = failure(
            "dtn2",
            "ssh: connect to host 198.18.0.2 port 2222: Connection refused\r\n",
            None,
        );
        assert!(
            e.message()
                .ends_with("(ssh: connect to host 198.18.0.2 port 2222: Connection refused)")
        );
        let e = failure("d\u{1b}", "odd\u{1b}[2J\n", None);
        assert_eq!(e.message(), "ssh d\\u{1b} failed: odd\\u{1b}[2J");
        assert!(!e.message().contains('\n'));
    }

    #[test]
    fn a_copy_goes_only_where_this_build_runs() {
        let (s, m) = match (std::env::consts::OS, std::env::consts::ARCH) {
            ("linux", a) => ("Linux", a),
            ("freebsd", "x86_64") => ("FreeBSD", "amd64"),
            ("macos", "aarch64") => ("Darwin", "arm64"),
            (o, a) => (o, a),
        };
        assert!(runs_on(s, m));
        assert!(!runs_on("OpenBSD", m));
        assert!(!runs_on(s, "sparc64"));
    }
}
