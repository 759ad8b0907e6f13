//! The far end's script ([far.sh](far.sh)) as the remote command, and the reader of what it
//! prints: the far end's facts, then which peer it started.
//!
//! What the script prints, one line each, in this order (`→` what is read from it):
//!
//! | line | read as |
//! |---|---|
//! | `tcptune-far 1` | the start: lines before it (a login shell's chatter) are skipped |
//! | `uname SYSNAME MACHINE` | the far end's OS (`Linux`, `FreeBSD`, `Darwin`) and architecture |
//! | `release R` | the kernel's release (`uname -r`) |
//! | `page N` | the page size, bytes (`getconf PAGESIZE`) |
//! | `uid N` | who runs the script: root may write what the mode allows |
//! | `ramkb N` (Linux) / `ram N` (BSD) | total RAM, KiB (MemTotal) / bytes (hw.physmem, hw.memsize) |
//! | `fq 1` / `fq 0` (Linux) | whether /sys/module/sch_fq is there |
//! | `netns-self NS`, `netns-init NS` (Linux) | /proc/self/ns/net and /proc/1/ns/net (empty when not readable) |
//! | `key K MODE`, then `= LINE` per line of the value | a running value: Linux K is the file under /proc/sys and MODE its `ls -l` mode, BSD MODE is `-` |
//! | `key K absent` / `key K unreadable` | no such key / not readable there |
//! | `peer-route-get R`, `peer-route-match R` (a mesh's test end or peer, Linux) | the first line of `ip route get ADDR` (and `fibmatch`) toward the test's other end |
//! | `peer none` | no peer asked for: the facts were all |
//! | `peer tcptune`, then the peer's own line | `tcptune peer` of this version runs; its JSON line says its port |
//! | `peer iperf3 P` | `iperf3 -s` listens on port P |
//! | `ready N` | the server listens again, for the Nth time (iperf3 reopens its port after each connection) |
//! | `need-binary` | no tcptune of this version there (and no iperf3 allowed): the near end sends a copy of itself (a size line, the bytes) or closes |
//! | `evidence start` | (`evidence` only) the test end runs `tcptune evidence` toward the peer: its JSON follows as `= LINE` lines, its stderr as `- LINE` lines, then `end N` |
//! | `fail WHY` | the far end gave up |
//! | `end N` | the peer ended (its exit status) and the script with it |
//!
//! Everything the far end prints is data from outside: text is kept as [`Foreign`] or escaped
//! ([`text::escape`]) where it enters, numbers are range-checked, and each line and the whole
//! report are bounded.

use std::collections::BTreeMap;

use crate::error::Error;
use crate::os::Os;
use crate::sysctl::{self, Access, KeyState};
use crate::text::{self, Foreign};

/// The script, as written (with its comments).
const SOURCE: &str = include_str!("far.sh");

/// The first line the script prints, and the version of what follows.
pub const HEADER: &str = "tcptune-far 1";

/// The longest line read from the far end, bytes: a sysctl value is at most 4 KiB.
pub const MAX_LINE: usize = 8192;
/// Most lines skipped before the header (a login shell that talks on stdout).
const MAX_SKIPPED: usize = 200;
/// Most keys and value lines taken: the near end asks for a few dozen keys.
const MAX_KEYS: usize = 512;
const MAX_VALUE: usize = 4096;
/// Longest text kept of a name or a reason the far end gives, characters.
const MAX_TEXT: usize = 200;
/// Most tagged lines read after the header (its facts, its keys): the script prints about a
/// dozen facts and a line per key asked for.
const MAX_TAGGED: usize = MAX_KEYS + 200;

/// Which peer the script should start.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Want {
    /// `tcptune peer` of this version, else `iperf3 -s` where allowed, else a copy of this
    /// tcptune.
    Tcptune,
    /// `iperf3 -s` only (`--iperf3`).
    Iperf3,
    /// The facts only: no path test will run.
    Nothing,
    /// The test end of `tcptune mesh`: `tcptune evidence` there (this version, else a copy of
    /// this tcptune) toward the peer [`Ask::test`] names, its JSON sent back.
    Evidence,
}

/// Where the test end's `tcptune evidence` aims (`Want::Evidence`): the peer's address and
/// port, and the longest test each way.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TestAt {
    pub host: std::net::IpAddr,
    pub port: u16,
    /// The longest test each way, milliseconds (0: advise's own, 10 s + 15 × the RTT).
    pub ms: u64,
}

impl Want {
    fn word(self) -> &'static str {
        match self {
            Self::Tcptune => "tcptune",
            Self::Iperf3 => "iperf3",
            Self::Nothing => "none",
            Self::Evidence => "evidence",
        }
    }
}

/// The keys whose running values to read on the far end, per OS (it reads its own OS's).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Keys {
    pub linux: Vec<String>,
    pub freebsd: Vec<String>,
    pub macos: Vec<String>,
}

/// What the script is asked to do.
#[derive(Debug, Clone)]
pub struct Ask {
    /// How long a server the script starts may live, however the session goes, seconds.
    pub life_s: u64,
    pub want: Want,
    /// Whether this end has an iperf3 client: an iperf3 server there is no use otherwise.
    pub iperf3_client: bool,
    pub keys: Keys,
    /// With [`Want::Evidence`]: the peer the test end measures; with [`Want::Tcptune`] in a
    /// mesh: the test end the peer serves (its address only, for the route toward it).
    pub test: Option<TestAt>,
    /// The address the near end (or the test end) connects to: a peer listens there, else on
    /// the address ssh reached.
    pub bind: Option<std::net::IpAddr>,
}

/// The script as one line: comment lines dropped, each line's indentation trimmed, the lines
/// joined with a space (each ends where a shell may go on, see far.sh).
pub fn script() -> String {
    SOURCE
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .collect::<Vec<_>>()
        .join(" ")
}

/// The remote command ssh sends: `sh -c '<script>' tcptune-far LIFE WANT IPERF KEY...`, one
/// string that any login shell runs as sh. A key that is not a networking key of its OS (which
/// also keeps it a plain word for the shell) is refused.
pub fn remote_command(ask: &Ask) -> Result<String, Error> {
    let mut words = vec![
        "sh".to_string(),
        "-c".to_string(),
        format!("'{}'", script()),
        "tcptune-far".to_string(),
        ask.life_s.to_string(),
        ask.want.word().to_string(),
        u8::from(ask.iperf3_client).to_string(),
    ];
    for (os, tag, keys) in [
        (Os::Linux, "L", &ask.keys.linux),
        (Os::Freebsd, "F", &ask.keys.freebsd),
        (Os::Macos, "M", &ask.keys.macos),
    ] {
        for k in keys {
            if !os.is_network_key(k) {
                return Err(Error::usage(format!(
                    "{}: not a networking key of {os}",
                    text::escape(k)
                )));
            }
            // Linux: the file under /proc/sys, so the far end needs no tr(1) per key.
            let k = if os == Os::Linux {
                k.replace('.', "/")
            } else {
                k.clone()
            };
            words.push(format!("{tag}:{k}"));
        }
    }
    if matches!(ask.want, Want::Tcptune | Want::Evidence) {
        words.push(format!("V:{}", env!("CARGO_PKG_VERSION")));
    }
    if let Some(b) = ask.bind {
        words.push(format!("B:{b}"));
    }
    match (&ask.test, ask.want) {
        (None, Want::Evidence) => {
            return Err(Error::system("the test end was asked for without its peer"));
        }
        (Some(t), Want::Evidence) => {
            words.push(format!("A:{}", t.host));
            words.push(format!("P:{}", t.port));
            words.push(format!("T:{}", t.ms));
        }
        // A mesh's peer: the test end it serves, whose route there it reports.
        (Some(t), Want::Tcptune) => words.push(format!("A:{}", t.host)),
        _ => {}
    }
    Ok(words.join(" "))
}

/// What the far end said of itself.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Report {
    /// `uname -s`, `uname -m`.
    pub sysname: Foreign,
    pub machine: Foreign,
    /// `uname -r`, escaped.
    pub release: Option<String>,
    pub page_size: Option<u64>,
    pub uid: Option<u32>,
    pub ram: Option<u64>,
    pub sch_fq: Option<bool>,
    pub netns_self: Option<String>,
    pub netns_init: Option<String>,
    /// This host as the far end sees it: the client address of SSH_CONNECTION.
    pub client: Option<std::net::IpAddr>,
    /// The first line of `ip route get CLIENT` there (bounded; parsed, never shown raw).
    pub route_get: Option<String>,
    /// The first line of `ip route get fibmatch CLIENT` there: the route it matched, which
    /// says `expires` when it has a lifetime (bounded; read for that word only).
    pub route_match: Option<String>,
    /// (`evidence`) The same two lines toward the peer the test end measures.
    pub peer_route_get: Option<String>,
    pub peer_route_match: Option<String>,
    /// By sysctl name (dotted), as read there.
    pub keys: BTreeMap<String, Read>,
}

/// One key as the far end read it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Read {
    /// Its value and whether its mode has any write bit (BSD: None, not known before a write).
    Present {
        value: String,
        writable_mode: Option<bool>,
    },
    Absent,
    Unreadable,
    /// What it sent is no value of the key's kind (two lines, a number too many or too large):
    /// no kernel runs it, and it is not read as one.
    Odd,
}

/// Which peer the far end started.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Started {
    /// No peer was asked for.
    Nothing,
    /// `tcptune peer`: its JSON line comes next.
    TcptunePeer,
    /// `iperf3 -s` on this port.
    Iperf3(u16),
}

/// What one line moved the reading to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    /// A fact, or a line skipped: read on.
    More,
    /// The far end waits for a copy of this tcptune.
    NeedBinary,
    Peer(Started),
    /// The far end gave up, saying why.
    Fail(Foreign),
    /// The far end's script ended (the peer's exit status, as printed).
    End(Foreign),
    /// (`evidence`) The test end's `tcptune evidence` runs: its output follows.
    Measuring,
}

/// Reads the script's lines one at a time into a [`Report`].
#[derive(Debug, Default)]
pub struct Reader {
    started: bool,
    skipped: usize,
    tagged: usize,
    values: usize,
    /// The key whose `= ` lines are being read.
    open: Option<(String, Option<bool>, Vec<String>)>,
    pub report: Report,
}

impl Reader {
    /// Reads one line (without its newline). Err: the far end is not running this script.
    pub fn feed(&mut self, line: &str) -> Result<Step, String> {
        if !self.started {
            if line.trim_end() == HEADER {
                self.started = true;
            } else {
                self.skipped += 1;
                if self.skipped > MAX_SKIPPED {
                    return Err(format!("no \"{HEADER}\" line in the first {MAX_SKIPPED} lines"));
                }
            }
            return Ok(Step::More);
        }
        if let Some(v) = line.strip_prefix("= ").or_else(|| (line == "=").then_some("")) {
            self.value_line(v)?;
            return Ok(Step::More);
        }
        self.close_key();
        self.tagged += 1;
        if self.tagged > MAX_TAGGED {
            return Err(format!("more than {MAX_TAGGED} lines of facts"));
        }
        let (tag, rest) = line.split_once(' ').unwrap_or((line, ""));
        let r = &mut self.report;
        match tag {
            "uname" => {
                let (s, m) = rest.split_once(' ').unwrap_or((rest, ""));
                r.sysname = foreign(s);
                r.machine = foreign(m);
            }
            "release" => r.release = Some(rest.trim()).filter(|s| !s.is_empty()).map(short),
            "page" => r.page_size = number(rest).filter(|p| p.is_power_of_two() && (512..=1 << 21).contains(p)),
            "uid" => r.uid = number(rest).and_then(|u| u32::try_from(u).ok()),
            "ramkb" => r.ram = number(rest).and_then(|k| k.checked_mul(1024)).filter(|b| ram_ok(*b)),
            "ram" => r.ram = number(rest).filter(|b| ram_ok(*b)),
            "fq" => r.sch_fq = flag(rest),
            "netns-self" => r.netns_self = namespace(rest),
            "netns-init" => r.netns_init = namespace(rest),
            "client" => r.client = rest.trim().parse().ok(),
            "route-get" => r.route_get = Some(rest.chars().take(MAX_VALUE).collect()),
            "route-match" => r.route_match = Some(rest.chars().take(MAX_VALUE).collect()),
            "peer-route-get" => r.peer_route_get = Some(rest.chars().take(MAX_VALUE).collect()),
            "peer-route-match" => r.peer_route_match = Some(rest.chars().take(MAX_VALUE).collect()),
            "key" => self.key_line(rest)?,
            "need-binary" => return Ok(Step::NeedBinary),
            "evidence" if rest == "start" => return Ok(Step::Measuring),
            "peer" => return peer(rest).map(Step::Peer),
            "fail" => return Ok(Step::Fail(foreign(rest))),
            "end" => return Ok(Step::End(foreign(rest))),
            // A later script's fact this reader does not know: not an error.
            _ => {}
        }
        Ok(Step::More)
    }

    fn key_line(&mut self, rest: &str) -> Result<(), String> {
        let (k, state) = rest.split_once(' ').unwrap_or((rest, ""));
        // Linux keys come back as the file under /proc/sys.
        let name = k.replace('/', ".");
        if ![Os::Linux, Os::Freebsd, Os::Macos]
            .iter()
            .any(|os| os.is_network_key(&name))
        {
            return Err(format!("a key that was not asked for: \"{}\"", short(k)));
        }
        if self.report.keys.len() >= MAX_KEYS {
            return Err(format!("more than {MAX_KEYS} keys"));
        }
        match state {
            "absent" => {
                self.report.keys.insert(name, Read::Absent);
            }
            "unreadable" => {
                self.report.keys.insert(name, Read::Unreadable);
            }
            "-" => self.open = Some((name, None, Vec::new())),
            mode => {
                // `ls -l`'s mode: any w among the permission bits.
                let w = mode.chars().skip(1).take(9).any(|c| c == 'w');
                self.open = Some((name, Some(w), Vec::new()));
            }
        }
        Ok(())
    }

    fn value_line(&mut self, v: &str) -> Result<(), String> {
        let Some((_, _, lines)) = &mut self.open else {
            return Err("a value line without its key".to_string());
        };
        self.values += v.len() + 1;
        if self.values > MAX_KEYS * MAX_VALUE {
            return Err("more value text than any set of keys holds".to_string());
        }
        lines.push(v.to_string());
        Ok(())
    }

    /// The key being read is complete: its value kept as the sysctl backends keep one
    /// (whitespace normalised), but line by line: a FreeBSD table (net.inet.tcp.cc.available)
    /// is read by its lines ([`sysctl::offers`]). Unreadable when no sysctl value could be it.
    fn close_key(&mut self) {
        let Some((name, writable_mode, lines)) = self.open.take() else {
            return;
        };
        let lines: Vec<String> = lines
            .iter()
            .map(|l| sysctl::normalize_value(l))
            .filter(|l| !l.is_empty())
            .collect();
        let value = lines.join("\n");
        // The key's kind is its OS's: the one uname named, else the one whose key it is.
        let os = os_of(self.report.sysname.raw()).or_else(|| {
            [Os::Linux, Os::Freebsd, Os::Macos]
                .into_iter()
                .find(|os| os.is_network_key(&name))
        });
        let read = if value.len() > MAX_VALUE || lines.iter().any(|l| text::escape(l) != *l) {
            Read::Unreadable
        } else if os.is_some_and(|os| sysctl::file::check_running(os, &name, &value).is_err()) {
            Read::Odd
        } else {
            Read::Present { value, writable_mode }
        };
        self.report.keys.insert(name, read);
    }

    /// Whether the script's header was read: what follows is the script's, not a login
    /// shell's or ssh's.
    pub fn started(&self) -> bool {
        self.started
    }

    /// The report as read so far (a key still open is closed).
    pub fn finish(&mut self) -> Report {
        self.close_key();
        self.report.clone()
    }
}

/// What the far end did that this end never asked of it, said as what it did: a copy of
/// tcptune asked for where no tcptune peer was (or a second time), a peer started where none
/// or another was asked for. None: it did as asked. `copied`: a copy was sent already.
pub fn unasked(ask: &Ask, step: &Step, copied: bool) -> Option<String> {
    let asked = match ask.want {
        Want::Nothing => "no peer was asked for",
        Want::Iperf3 => "iperf3 -s was asked for",
        Want::Tcptune => "a tcptune peer was asked for",
        Want::Evidence => "a test end was asked for",
    };
    match step {
        Step::Measuring if ask.want != Want::Evidence => Some(format!("it started a test, though {asked}")),
        Step::Peer(_) if ask.want == Want::Evidence => Some(format!("it started a peer, though {asked}")),
        Step::NeedBinary if !matches!(ask.want, Want::Tcptune | Want::Evidence) => {
            Some(format!("it asked for a copy of tcptune, though {asked}"))
        }
        Step::NeedBinary if copied => Some("it asked for a copy of tcptune a second time".to_string()),
        Step::Peer(Started::Nothing) if ask.want != Want::Nothing => {
            Some(format!("it said it started no peer, though {asked}"))
        }
        Step::Peer(Started::TcptunePeer) if ask.want != Want::Tcptune => {
            Some(format!("it started a tcptune peer, though {asked}"))
        }
        Step::Peer(Started::Iperf3(p)) if ask.want == Want::Nothing || !ask.iperf3_client => Some(format!(
            "it started iperf3 -s on port {p}, though {}",
            if ask.want == Want::Nothing {
                asked
            } else {
                "this host has no iperf3 client"
            }
        )),
        _ => None,
    }
}

fn peer(rest: &str) -> Result<Started, String> {
    let (kind, port) = rest.split_once(' ').unwrap_or((rest, ""));
    let port = || {
        port.parse::<u16>()
            .ok()
            .filter(|p| *p > 0)
            .ok_or_else(|| format!("a peer on port \"{}\"", short(port)))
    };
    Ok(match kind {
        "none" => Started::Nothing,
        "tcptune" => Started::TcptunePeer,
        "iperf3" => Started::Iperf3(port()?),
        other => return Err(format!("an unknown peer \"{}\"", short(other))),
    })
}

/// What `tcptune peer` prints first: `{"tcptune_peer":1,"version":"…","protocol":3,"port":N}`.
#[derive(Debug, Clone, PartialEq, Eq, serde::Deserialize)]
pub struct PeerHello {
    pub tcptune_peer: u32,
    pub version: Foreign,
    pub protocol: u16,
    pub port: u16,
}

/// The peer's first line, checked: this version of the line, a port a test can connect to.
pub fn peer_hello(line: &str) -> Result<PeerHello, String> {
    let h: PeerHello =
        serde_json::from_str(line).map_err(|e| format!("\"{}\" is not tcptune peer's line ({e})", short(line)))?;
    if h.tcptune_peer != 1 {
        return Err(format!("tcptune peer line version {}, not 1", h.tcptune_peer));
    }
    if h.port == 0 {
        return Err("tcptune peer said port 0".to_string());
    }
    Ok(PeerHello {
        version: Foreign::new(h.version.raw().chars().take(MAX_TEXT).collect::<String>()),
        ..h
    })
}

fn foreign(s: &str) -> Foreign {
    Foreign::new(s.trim().chars().take(MAX_TEXT).collect::<String>())
}

/// Text shown escaped and cut short.
fn short(s: &str) -> String {
    text::escape(&s.chars().take(MAX_TEXT).collect::<String>())
}

fn number(s: &str) -> Option<u64> {
    s.trim().parse().ok()
}

fn flag(s: &str) -> Option<bool> {
    match s.trim() {
        "1" => Some(true),
        "0" => Some(false),
        _ => None,
    }
}

/// `net:[4026531840]`: kept only in that shape (compared, never shown).
fn namespace(s: &str) -> Option<String> {
    let s = s.trim();
    let inode = s.strip_prefix("net:[")?.strip_suffix(']')?;
    (!inode.is_empty() && inode.len() <= 20 && inode.bytes().all(|b| b.is_ascii_digit())).then(|| s.to_string())
}

/// 16 MiB to 4 PiB: any machine that runs a shell and sshd.
fn ram_ok(b: u64) -> bool {
    (16 << 20..=1 << 52).contains(&b)
}

/// The far end's facts in the form advice reads, `from` naming where the values were read
/// ("ssh dtn2: /proc/sys"). `os`: the OS its uname named.
pub fn facts(r: &Report, os: Os, from: String) -> crate::host::Facts {
    let root = r.uid == Some(0);
    let values: BTreeMap<String, KeyState> = r
        .keys
        .iter()
        .map(|(k, read)| {
            let state = match read {
                Read::Present { value, writable_mode } => KeyState::Present {
                    value: value.clone(),
                    access: match writable_mode {
                        // sysctl(8) does not say: writable until a write says otherwise, as
                        // the BSD backend reads it.
                        None => Access::Writable,
                        Some(false) => Access::ReadOnly,
                        Some(true) if root => Access::Writable,
                        Some(true) => Access::NeedsRoot,
                    },
                },
                Read::Absent => KeyState::Absent,
                Read::Unreadable => KeyState::Unreadable("the far end could not read it".to_string()),
                Read::Odd => KeyState::Unreadable("the far end sent no value of its kind".to_string()),
            };
            (k.clone(), state)
        })
        .collect();
    let linux = os == Os::Linux;
    // As host::linux::runs_in_child_netns: PID 1's namespace when it is visible, else the
    // mode of a host-wide key (0444 in a child namespace).
    let child_netns = linux.then(|| match (&r.netns_self, &r.netns_init) {
        (Some(me), Some(init)) => me != init,
        _ => matches!(
            values.get("net.core.rmem_max"),
            Some(KeyState::Present {
                access: Access::ReadOnly,
                ..
            })
        ),
    });
    crate::host::Facts {
        os,
        running: Some(crate::host::facts::Running { from, values }),
        child_netns,
        sch_fq: if linux { r.sch_fq } else { None },
        page_size: r.page_size.unwrap_or_else(crate::host::page_size),
        ram: r.ram,
        kernel: r.release.clone(),
    }
}

/// The OS `uname -s` names, if tcptune advises for it.
pub fn os_of(sysname: &str) -> Option<Os> {
    match sysname {
        "Linux" => Some(Os::Linux),
        "FreeBSD" => Some(Os::Freebsd),
        "Darwin" => Some(Os::Macos),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ask() -> Ask {
        Ask {
            life_s: 120,
            want: Want::Tcptune,
            iperf3_client: true,
            keys: Keys {
                linux: vec!["net.ipv4.tcp_rmem".into(), "net.core.rmem_max".into()],
                freebsd: vec!["kern.ipc.maxsockbuf".into()],
                macos: vec![],
            },
            test: None,
            bind: None,
        }
    }

    #[test]
    fn the_script_survives_any_login_shell_and_sh_parses_it() {
        let s = script();
        assert!(!s.contains('\'') && !s.contains('\\') && !s.contains('\n'), "{s}");
        assert!(s.replace("$!", "").find('!').is_none(), "a ! beside $!: {s}");
        // Every line ends where sh may go on once the lines are one.
        for l in SOURCE
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty() && !l.starts_with('#'))
        {
            assert!(
                [";", "&", "then", "do", "else", "{", ")", "|", " in"]
                    .iter()
                    .any(|end| l.ends_with(end)),
                "a line that cannot be joined: {l}"
            );
        }
        let ok = std::process::Command::new("sh")
            .args(["-n", "-c", &s])
            .status()
            .expect("sh");
        assert!(ok.success(), "sh -n refused the joined script");
        let cmd = remote_command(&ask()).expect("command");
        assert!(cmd.starts_with("sh -c 'life=$1;"), "{cmd}");
        assert!(
            cmd.ends_with(&format!(
                "' tcptune-far 120 tcptune 1 L:net/ipv4/tcp_rmem L:net/core/rmem_max F:kern.ipc.maxsockbuf V:{}",
                env!("CARGO_PKG_VERSION")
            )),
            "{cmd}"
        );
        let mut bad = ask();
        bad.keys.linux.push("net.x;reboot".into());
        assert!(remote_command(&bad).is_err());
        bad.keys.linux = vec!["kernel.panic".into()];
        assert!(remote_command(&bad).is_err(), "not a networking key");
    }

    fn read(lines: &[&str]) -> (Reader, Vec<Step>) {
        let mut r = Reader::default();
        let steps = lines.iter().map(|l| r.feed(l).expect("line")).collect();
        (r, steps)
    }

    #[test]
    fn a_linux_report_becomes_its_facts() {
        let (mut r, steps) = read(&[
            "Welcome from .bashrc",
            HEADER,
            "uname Linux x86_64",
            "release 6.1.0-18-amd64",
            "page 4096",
            "uid 1000",
            "ramkb 16318412",
            "fq 1",
            "netns-self net:[4026531840]",
            "netns-init ",
            "key net/ipv4/tcp_rmem -rw-r--r--",
            "= 4096\t131072\t6291456",
            "key net/core/rmem_max -r--r--r--",
            "= 212992",
            "key net/ipv4/tcp_notsent_lowat absent",
            "key net/ipv4/tcp_mem unreadable",
            "peer iperf3 5201",
        ]);
        assert_eq!(steps.last(), Some(&Step::Peer(Started::Iperf3(5201))));
        let rep = r.finish();
        assert_eq!((rep.sysname.raw(), rep.machine.raw()), ("Linux", "x86_64"));
        let f = facts(&rep, Os::Linux, "ssh dtn2: /proc/sys".into());
        assert_eq!(f.value("net.ipv4.tcp_rmem"), Some("4096 131072 6291456"));
        assert_eq!(
            f.read("net.ipv4.tcp_rmem"),
            Some(KeyState::Present {
                value: "4096 131072 6291456".into(),
                access: Access::NeedsRoot
            }),
            "not root there"
        );
        assert!(matches!(
            f.read("net.core.rmem_max"),
            Some(KeyState::Present {
                access: Access::ReadOnly,
                ..
            })
        ));
        assert_eq!(f.read("net.ipv4.tcp_notsent_lowat"), Some(KeyState::Absent));
        assert!(matches!(f.read("net.ipv4.tcp_mem"), Some(KeyState::Unreadable(_))));
        assert_eq!(
            f.child_netns,
            Some(true),
            "PID 1's namespace hidden: rmem_max's mode says"
        );
        assert_eq!(
            (f.sch_fq, f.page_size, f.ram),
            (Some(true), 4096, Some(16_318_412 * 1024))
        );
        assert_eq!(f.kernel.as_deref(), Some("6.1.0-18-amd64"));
        assert_eq!(f.values_from(), Some("ssh dtn2: /proc/sys"));
    }

    #[test]
    fn a_freebsd_value_of_several_lines_is_kept_whole() {
        let (mut r, _) = read(&[
            HEADER,
            "uname FreeBSD amd64",
            "uid 0",
            "ram 8589934592",
            "key net.inet.tcp.cc.available -",
            "= CCmod           D PCB count",
            "= newreno         * 3",
            "= cubic             0",
            "need-binary",
        ]);
        let f = facts(&r.finish(), Os::Freebsd, "x".into());
        assert_eq!(f.offers("cubic"), None, "a Linux key: not gathered on FreeBSD");
        let v = f.value("net.inet.tcp.cc.available").expect("value");
        assert!(sysctl::offers(v, "cubic") && sysctl::offers(v, "newreno"), "{v}");
        assert_eq!((f.child_netns, f.sch_fq, f.ram), (None, None, Some(8_589_934_592)));
    }

    #[test]
    fn what_the_far_end_says_is_checked_where_it_enters() {
        let (mut r, steps) = read(&[
            HEADER,
            "uname Linux\u{1b}[31m x86_64",
            "release 6.1\u{7}",
            "page 4097",
            "ramkb 99999999999999999999",
            "fq maybe",
            "netns-self net:[12]; rm -rf /",
            "key net/ipv4/tcp_rmem -rw-r--r--",
            "= 4096 \u{1b}[2J 6291456",
            "some-later-fact 1",
            "fail no iperf3\u{1b}]0;x",
        ]);
        let rep = r.finish();
        assert_eq!(rep.sysname.to_string(), "Linux\\u{1b}[31m");
        assert_eq!(rep.release.as_deref(), Some("6.1\\u{7}"));
        assert_eq!(
            (rep.page_size, rep.ram, rep.sch_fq, rep.netns_self),
            (None, None, None, None)
        );
        assert_eq!(rep.keys.get("net.ipv4.tcp_rmem"), Some(&Read::Unreadable));
        match steps.last() {
            Some(Step::Fail(why)) => assert_eq!(why.to_string(), "no iperf3\\u{1b}]0;x"),
            other => panic!("{other:?}"),
        }
        let mut r = Reader::default();
        r.feed(HEADER).expect("header");
        assert!(r.feed("key ../../etc/shadow -rw-------").is_err());
        assert!(r.feed("= stray").is_err(), "a value with no key");
        assert!(r.feed("peer iperf3 0").is_err());
        assert!(r.feed("peer iperf3 70000").is_err());
        assert!(r.feed("peer sshd 22").is_err());
        let mut r = Reader::default();
        for _ in 0..MAX_SKIPPED {
            r.feed("motd").expect("skipped");
        }
        assert!(r.feed("motd").is_err(), "no header ever");
    }

    #[test]
    fn a_value_is_read_by_its_keys_kind() {
        let (mut r, _) = read(&[
            HEADER,
            "uname Linux x86_64",
            "key net/ipv4/tcp_rmem -rw-r--r--",
            "= 4096 131072 6291456",
            "= net.ipv4.ip_forward = 1",
            "key net/ipv4/tcp_wmem -rw-r--r--",
            "= 4096 16384 4294967296",
            "key net/core/rmem_max -rw-r--r--",
            "= 212992 1",
            "key net/ipv4/tcp_congestion_control -rw-r--r--",
            "= cubic",
            "key net/ipv4/tcp_mem -rw-r--r--",
            "= 4096 99999999 65536",
        ]);
        let rep = r.finish();
        for k in ["net.ipv4.tcp_rmem", "net.ipv4.tcp_wmem", "net.core.rmem_max"] {
            assert_eq!(rep.keys.get(k), Some(&Read::Odd), "{k}");
        }
        let f = facts(&rep, Os::Linux, "x".into());
        assert!(matches!(f.read("net.ipv4.tcp_rmem"), Some(KeyState::Unreadable(_))));
        assert_eq!(f.value("net.ipv4.tcp_rmem"), None, "never shown as current");
        assert_eq!(f.value("net.ipv4.tcp_congestion_control"), Some("cubic"));
        // The kernel does not order the fields: kept as it runs.
        assert_eq!(f.value("net.ipv4.tcp_mem"), Some("4096 99999999 65536"));
    }

    #[test]
    fn the_test_end_takes_an_address_only_and_starts_no_peer() {
        let at = |host: &str| Ask {
            want: Want::Evidence,
            test: Some(TestAt {
                host: host.parse().expect("an address"),
                port: 40123,
                ms: 3000,
            }),
            ..ask()
        };
        let cmd = remote_command(&at("198.18.10.2")).expect("a plain address");
        assert!(
            cmd.ends_with(&format!("V:{} A:198.18.10.2 P:40123 T:3000", env!("CARGO_PKG_VERSION"))),
            "{cmd}"
        );
        assert!(cmd.contains(" evidence "), "{cmd}");
        assert!(remote_command(&at("fd00::2")).is_ok());
        let mut no_peer = at("198.18.10.2");
        no_peer.test = None;
        assert!(remote_command(&no_peer).is_err());
        let a = at("198.18.10.2");
        assert_eq!(unasked(&a, &Step::Measuring, false), None);
        assert_eq!(unasked(&a, &Step::NeedBinary, false), None);
        assert!(unasked(&a, &Step::NeedBinary, true).is_some());
        assert!(unasked(&a, &Step::Peer(Started::TcptunePeer), false).is_some());
        assert!(unasked(&ask(), &Step::Measuring, false).is_some());
        let (mut r, steps) = read(&[
            "tcptune-far 1",
            "uname Linux x86_64",
            "peer-route-get 198.18.10.2 dev to2 src 198.18.10.1 uid 0",
            "peer-route-match 198.18.10.2 dev to2 scope link",
            "evidence start",
        ]);
        assert_eq!(steps.last(), Some(&Step::Measuring));
        let rep = r.finish();
        assert_eq!(
            rep.peer_route_get.as_deref(),
            Some("198.18.10.2 dev to2 src 198.18.10.1 uid 0")
        );
    }

    #[test]
    fn a_peer_listens_where_the_near_end_connects_and_is_this_version() {
        let cmd = remote_command(&Ask {
            bind: Some("198.18.0.2".parse().expect("ip")),
            ..ask()
        })
        .expect("command");
        assert!(
            cmd.ends_with(&format!(
                "F:kern.ipc.maxsockbuf V:{} B:198.18.0.2",
                env!("CARGO_PKG_VERSION")
            )),
            "{cmd}"
        );
        let facts_only = remote_command(&Ask {
            want: Want::Nothing,
            ..ask()
        })
        .expect("command");
        assert!(facts_only.ends_with("F:kern.ipc.maxsockbuf"), "{facts_only}");
    }

    #[test]
    fn only_what_was_asked_is_taken() {
        let want = |want, iperf3_client| Ask {
            want,
            iperf3_client,
            ..ask()
        };
        let none = want(Want::Nothing, false);
        assert_eq!(unasked(&none, &Step::Peer(Started::Nothing), false), None);
        for step in [
            Step::NeedBinary,
            Step::Peer(Started::Iperf3(5999)),
            Step::Peer(Started::TcptunePeer),
        ] {
            let e = unasked(&none, &step, false).expect("unasked");
            assert!(e.ends_with("though no peer was asked for"), "{e}");
        }
        let iperf = want(Want::Iperf3, true);
        assert_eq!(unasked(&iperf, &Step::Peer(Started::Iperf3(5201)), false), None);
        assert!(unasked(&iperf, &Step::NeedBinary, false).is_some());
        assert!(unasked(&iperf, &Step::Peer(Started::TcptunePeer), false).is_some());
        assert!(unasked(&iperf, &Step::Peer(Started::Nothing), false).is_some());
        let tt = want(Want::Tcptune, false);
        assert_eq!(unasked(&tt, &Step::NeedBinary, false), None);
        assert_eq!(
            unasked(&tt, &Step::NeedBinary, true).as_deref(),
            Some("it asked for a copy of tcptune a second time")
        );
        assert_eq!(unasked(&tt, &Step::Peer(Started::TcptunePeer), true), None);
        assert_eq!(
            unasked(&tt, &Step::Peer(Started::Iperf3(5201)), false).as_deref(),
            Some("it started iperf3 -s on port 5201, though this host has no iperf3 client")
        );
        assert_eq!(
            unasked(&want(Want::Tcptune, true), &Step::Peer(Started::Iperf3(5201)), false),
            None
        );
        // Facts without end: bounded.
        let mut r = Reader::default();
        r.feed(HEADER).expect("header");
        for _ in 0..MAX_TAGGED {
            r.feed("uid 0").expect("a fact");
        }
        assert!(r.feed("uid 0").is_err());
    }

    #[test]
    fn the_peer_line_is_read_and_checked() {
        let h =
            peer_hello(r#"{"tcptune_peer":1,"version":"0.2.0","protocol":3,"port":40123,"more":true}"#).expect("peer");
        assert_eq!((h.port, h.protocol, h.version.raw()), (40123, 3, "0.2.0"));
        assert!(peer_hello(r#"{"tcptune_peer":2,"version":"x","protocol":3,"port":1}"#).is_err());
        assert!(peer_hello(r#"{"tcptune_peer":1,"version":"x","protocol":3,"port":0}"#).is_err());
        assert!(peer_hello(r#"{"tcptune_peer":1,"version":"x","protocol":3,"port":65536}"#).is_err());
        let e = peer_hello("error: unrecognized subcommand 'peer'\u{1b}").expect_err("not JSON");
        assert!(e.contains("\\u{1b}"), "{e}");
    }

    #[test]
    fn os_names() {
        assert_eq!(os_of("Darwin"), Some(Os::Macos));
        assert_eq!(os_of("OpenBSD"), None);
    }
}
