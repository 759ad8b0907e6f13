//! The far end over the user's own SSH: one session, through their OpenSSH client (their
//! configuration, keys, agent and known_hosts; never a password prompt, never a stored
//! credential), runs a POSIX sh script there ([`script`]) that reports the far end's facts and
//! starts a one-shot peer for the path test: `tcptune peer`, else `iperf3 -s`, else a copy of
//! this very binary when the far end's OS and architecture are this build's. The peer ends
//! when the session's stdin closes (or after a bounded time), and the script removes what it
//! wrote: nothing is left running or written there.
//!
//! - [`open`]: the session, until the far end's facts ([`FarEnd`]) and its peer are known.
//! - [`Session`]: held open during the path test; [`Session::close`] ends it.
//! - [`prober::FarProber`]: the path prober that points the test at the far end's peer.
//! - [`ssh`]: the client's command line and what its errors mean.

pub mod evidence;
pub mod mesh;
pub mod plan;
pub mod prober;
pub mod saved;
pub mod schedule;
pub mod script;
pub mod ssh;

use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::process::{Child, ChildStdin, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError, Sender, channel};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::error::Error;
use crate::host::Facts;
use crate::os::Os;
use crate::text::{self, Foreign};

pub use script::{Keys, TestAt, Want};

/// From starting ssh to the far end's peer listening (its host key, authentication, the
/// script's facts): past this the session is given up. ssh's own connect bound is less, so
/// a path that drops the connect is said as ssh says it.
pub const SETUP_LIMIT: Duration = Duration::from_secs(15);

/// How long the copy of this binary may take to reach the far end and start there.
pub const COPY_LIMIT: Duration = Duration::from_secs(120);

/// How long the session may take to end once its stdin is closed (the far end stops its peer
/// and removes its files) before ssh is killed.
pub const CLOSE_LIMIT: Duration = Duration::from_secs(5);

/// Largest binary copied to the far end (a release build is about 4 MiB; a debug build of
/// this size is still a binary).
const MAX_COPY: u64 = 512 << 20;

/// Most of ssh's stderr kept, for the error it explains.
const MAX_STDERR: usize = 64 << 10;
/// Most lines passed on from the far end after its peer is known (the rest are read and
/// dropped, so the far end never blocks on a full pipe). Before, the far end's report is
/// bounded by its reader ([`script::Reader`]). A test end's advice (pretty JSON with its
/// tests' series) is a few thousand lines.
const MAX_LINES: usize = 50_000;

/// Most bytes of a test end's evidence and its stderr kept ([`Session::read_evidence`]).
const MAX_EVIDENCE: usize = evidence::MAX_BYTES + (1 << 20);

/// What the test end's `tcptune evidence` printed: its JSON (stdout), its stderr's lines, and
/// its exit status as the far end said it.
#[derive(Debug, Clone)]
pub struct Reported {
    pub status: Foreign,
    pub json: String,
    pub stderr: Vec<Foreign>,
}

impl Reported {
    /// Whether it succeeded (exit status 0).
    pub fn ok(&self) -> bool {
        self.status.raw() == "0"
    }
}

/// What to open: the destination, the client, and what to ask of the far end.
#[derive(Debug, Clone)]
pub struct Target {
    /// As ssh takes it: `host`, `user@host`, a Host of the user's ssh configuration.
    pub dest: String,
    /// `--ssh-command`, else `ssh`.
    pub ssh_command: Option<String>,
    /// The far end's address for the path (`--host`); None: the host name ssh connects to.
    pub host: Option<String>,
    pub want: Want,
    pub keys: Keys,
    /// How long a server the far end starts may live at most.
    pub life: Duration,
    /// Whether an iperf3 server there may stand in for `tcptune peer` (the user allowed it,
    /// and this host has an iperf3 client to test it with); `tcptune mesh` never allows it.
    pub iperf3: bool,
    /// With [`Want::Evidence`]: the peer the far end's test aims at; with [`Want::Tcptune`] in
    /// a mesh: the test end it serves (its address only: the far end says its route there).
    pub test: Option<TestAt>,
}

/// The far end as its session found it: what the lead's far-end advice reads.
#[derive(Debug, Clone)]
pub struct FarEnd {
    /// The destination as given to ssh.
    pub dest: String,
    /// Its address for the path test: `--host`, else the host name ssh connects to.
    pub host: String,
    /// `uname -s`, `uname -m` there ("Linux x86_64").
    pub uname: Foreign,
    /// The OS, when tcptune advises for it.
    pub os: Option<Os>,
    /// Its facts, read there (None: an OS tcptune does not advise for).
    pub facts: Option<Facts>,
    /// The peer listening there for the path test (None: none was asked for).
    pub peer: Option<Peer>,
    /// How it routes back to this host (Linux: ssh's client address, `ip route get` there),
    /// for the far end's `--scope path` advice; None when it did not say.
    pub route_back: Option<crate::route::Lookup>,
    /// (A mesh's test end or peer) How it routes to the test's other end, as its kernel said
    /// (`ip route get ADDR` there); None when it did not say.
    pub peer_route: Option<crate::route::Lookup>,
    /// What it said of that route: the first lines of `ip route get` and `ip route get
    /// fibmatch` (bounded; kept for a mesh's saved state, parsed again with [`lookup`]).
    pub peer_route_said: [Option<String>; 2],
    /// From starting ssh to the peer's port being known.
    pub setup: Duration,
}

/// The far end's peer for the path test.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Peer {
    pub kind: PeerKind,
    pub port: u16,
    /// What `tcptune peer` said of itself (None for iperf3).
    pub version: Option<Foreign>,
    pub protocol: Option<u16>,
    /// Whether it runs from a copy of this binary sent over the session.
    pub copied: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum PeerKind {
    Tcptune,
    Iperf3,
}

impl Peer {
    /// The peer as a person reads it: "tcptune peer on port 40123".
    pub fn describe(&self) -> String {
        let what = match (self.kind, self.copied) {
            (PeerKind::Tcptune, false) => "tcptune peer",
            (PeerKind::Tcptune, true) => "tcptune peer (a copy of this tcptune)",
            (PeerKind::Iperf3, _) => "iperf3 -s",
        };
        format!("{what} on port {}", self.port)
    }
}

/// A line from the far end, or how its stdout ended.
enum Line {
    Text(String),
    TooLong,
    Eof,
}

/// The open session: ssh runs, its stdin held open so the far end's peer keeps listening.
pub struct Session {
    dest: String,
    child: Mutex<Child>,
    stdin: Mutex<Option<ChildStdin>>,
    lines: Mutex<Receiver<Line>>,
    stderr: Arc<Mutex<Vec<u8>>>,
    /// The far end's `end` status, once said: its peer ended and its script with it (the peer
    /// served its tests, or its lifetime passed).
    ended: Mutex<Option<String>>,
    /// Set once the peer is known: from then on at most [`MAX_LINES`] lines are passed on.
    peer_known: Arc<AtomicBool>,
    /// When ssh started, and how long the far end's peer may live.
    started: Instant,
    life: Duration,
}

/// The session being opened: ssh runs, and a thread reads the far end until its peer listens,
/// while the caller probes the path (SSH set-up costs a dozen round trips on a long path,
/// which the probes take as long as).
pub struct Opening {
    session: Arc<Session>,
    host: String,
    reading: Mutex<Option<std::thread::JoinHandle<Result<FarEnd, Error>>>>,
    far: Mutex<Option<Result<FarEnd, Error>>>,
}

/// Starts the session to `t.dest`: the destination checked, its host name resolved (`ssh
/// -G`, nothing connected), ssh started; [`Opening::wait`] gives the far end.
pub fn start(t: &Target) -> Result<Opening, Error> {
    ssh::check_dest(&t.dest)?;
    let client = ssh::Client::new(t.ssh_command.as_deref())?;
    let host = match &t.host {
        Some(h) => h.clone(),
        None => client.resolve(&t.dest, SETUP_LIMIT)?,
    };
    let ask = script::Ask {
        life_s: t.life.as_secs().max(1),
        want: t.want,
        iperf3_client: (t.iperf3 || t.want == Want::Iperf3)
            && matches!(t.want, Want::Tcptune | Want::Iperf3)
            && ssh::has_iperf3_client(),
        keys: t.keys.clone(),
        test: t.test.clone(),
        // A peer listens on the address the path test connects to, when it is one.
        bind: host.parse().ok(),
    };
    let remote = script::remote_command(&ask)?;
    let started = Instant::now();
    let session = Arc::new(Session::spawn(
        &client,
        &t.dest,
        &remote,
        Duration::from_secs(ask.life_s),
    )?);
    let reader = Arc::clone(&session);
    let (dest, far_host) = (t.dest.clone(), host.clone());
    let reading = std::thread::spawn(move || {
        let (report, peer) = reader.read_far_end(&ask, started)?;
        let os = script::os_of(report.sysname.raw());
        let facts = os.map(|os| {
            let from = if os == Os::Linux { "/proc/sys" } else { "sysctl(8)" };
            script::facts(&report, os, format!("ssh {}: {from}", text::escape(&dest)))
        });
        let route_back = lookup(
            report.client,
            report.route_get.as_deref(),
            report.route_match.as_deref(),
        );
        let peer_route = lookup(
            ask.test.as_ref().map(|t| t.host),
            report.peer_route_get.as_deref(),
            report.peer_route_match.as_deref(),
        );
        Ok(FarEnd {
            uname: Foreign::new(format!("{} {}", report.sysname.raw(), report.machine.raw())),
            dest,
            host: far_host,
            os,
            facts,
            peer,
            route_back,
            peer_route,
            peer_route_said: [report.peer_route_get, report.peer_route_match],
            setup: started.elapsed(),
        })
    });
    Ok(Opening {
        session,
        host,
        reading: Mutex::new(Some(reading)),
        far: Mutex::new(None),
    })
}

/// `t` with its far end's address for the path filled in where it was not given: the host
/// name ssh connects to (`ssh -G`, nothing connected), so that what will run there can be said
/// before the session starts ([`plan_line`]).
pub fn resolved(t: &Target) -> Result<Target, Error> {
    ssh::check_dest(&t.dest)?;
    let host = match &t.host {
        Some(h) => h.clone(),
        None => ssh::Client::new(t.ssh_command.as_deref())?.resolve(&t.dest, SETUP_LIMIT)?,
    };
    Ok(Target {
        host: Some(host),
        ..t.clone()
    })
}

/// What a session to `t.dest` will run there, in one line said before it starts (within 100
/// columns for a host name of 20 characters and an IPv4 address).
pub fn plan_line(t: &Target) -> String {
    let dest = text::escape(&t.dest);
    let on = match t.host.as_deref().and_then(|h| h.parse::<std::net::IpAddr>().ok()) {
        Some(ip) => format!("on {ip}"),
        None => "on the address ssh reaches".to_string(),
    };
    let what = match t.want {
        Want::Nothing => "will read its facts only".to_string(),
        Want::Iperf3 => format!("will run iperf3 -s {on} for this test"),
        Want::Tcptune if t.iperf3 => {
            format!("will run tcptune peer {on} for this test (this version, else iperf3 -s, else a copy)")
        }
        Want::Tcptune => format!("will run tcptune peer {on} for this test (this version, else a copy)"),
        Want::Evidence => "will measure the path to its peer".to_string(),
    };
    format!("tcptune: ssh {dest}: {what}")
}

/// Opens the session to `t.dest` and reads the far end until its peer listens.
pub fn open(t: &Target) -> Result<(Opening, FarEnd), Error> {
    let opening = start(t)?;
    let far = opening.wait()?;
    Ok((opening, far))
}

impl Opening {
    /// The far end's address for the path: known before the session is up.
    pub fn host(&self) -> &str {
        &self.host
    }

    /// The far end, once its peer listens (waiting for it, within [`SETUP_LIMIT`], or
    /// [`COPY_LIMIT`] for a copy of this binary); the same answer every time.
    pub fn wait(&self) -> Result<FarEnd, Error> {
        let mut far = self
            .far
            .lock()
            .map_err(|_| Error::system("the far end's lock is poisoned"))?;
        if far.is_none() {
            let thread = self.reading.lock().ok().and_then(|mut r| r.take());
            *far = Some(match thread.map(std::thread::JoinHandle::join) {
                Some(Ok(got)) => got,
                _ => Err(Error::system("the thread reading the far end panicked")),
            });
        }
        match far.as_ref() {
            Some(Ok(f)) => Ok(f.clone()),
            Some(Err(e)) => Err(copy(e)),
            None => Err(Error::system("the far end was never read")),
        }
    }

    /// The session, for [`Session::check`].
    pub fn session(&self) -> &Session {
        &self.session
    }

    /// Ends the session ([`Session::close`]), whether or not it was ever up.
    pub fn close(&self) {
        self.session.close();
    }
}

/// What the far end's kernel said of its route to `dest` (`ip route get`, and `fibmatch`,
/// whose `expires` makes the route one tcptune does not copy), parsed as text from another
/// machine is; None when it said nothing of `dest`.
pub fn lookup(
    dest: Option<std::net::IpAddr>,
    get: Option<&str>,
    matched: Option<&str>,
) -> Option<crate::route::Lookup> {
    let mut l = crate::route::parse_route_get(dest?, get?)?;
    if matched.is_some_and(crate::route::says_expires) {
        l.uncopyable = Some(crate::route::expires(None));
    }
    Some(l)
}

/// The same error again (an [`Error`] is a kind, a message and a hint).
fn copy(e: &Error) -> Error {
    let c = Error::new(e.kind(), e.message());
    match e.hint() {
        Some(h) => c.with_hint(h),
        None => c,
    }
}

impl Session {
    fn spawn(client: &ssh::Client, dest: &str, remote: &str, life: Duration) -> Result<Self, Error> {
        let mut child = client
            .session(dest, remote)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| client.start_error(&e))?;
        let (tx, rx) = channel();
        let peer_known = Arc::new(AtomicBool::new(false));
        if let Some(out) = child.stdout.take() {
            let counting = Arc::clone(&peer_known);
            std::thread::spawn(move || read_lines(out, &tx, &counting));
        }
        let stderr = Arc::new(Mutex::new(Vec::new()));
        if let Some(err) = child.stderr.take() {
            let sink = Arc::clone(&stderr);
            std::thread::spawn(move || keep_stderr(err, &sink));
        }
        Ok(Self {
            dest: dest.to_string(),
            stdin: Mutex::new(child.stdin.take()),
            child: Mutex::new(child),
            lines: Mutex::new(rx),
            stderr,
            ended: Mutex::new(None),
            peer_known,
            started: Instant::now(),
            life,
        })
    }

    /// Reads the far end's report and its peer (sending it a copy of this binary when it asks
    /// and can run it), within [`SETUP_LIMIT`] (and [`COPY_LIMIT`] for a copy).
    fn read_far_end(&self, ask: &script::Ask, started: Instant) -> Result<(script::Report, Option<Peer>), Error> {
        let mut reader = script::Reader::default();
        let mut deadline = started + SETUP_LIMIT;
        let mut copied = false;
        let mut copying: Option<std::thread::JoinHandle<std::io::Result<ChildStdin>>> = None;
        loop {
            let Some(line) = self.next_line(deadline)? else {
                return Err(self.ended_early(reader.started(), "naming a peer"));
            };
            let step = reader.feed(&line).map_err(|why| self.garbled(&why))?;
            if let Some(what) = script::unasked(ask, &step, copied) {
                return Err(self.garbled(&what));
            }
            match step {
                script::Step::More => {}
                script::Step::NeedBinary => {
                    let r = reader.finish();
                    copying = Some(self.send_copy(&r, ask)?);
                    copied = true;
                    deadline = Instant::now() + COPY_LIMIT;
                }
                script::Step::Peer(started_peer) => {
                    if let Some(w) = copying.take() {
                        self.take_back_stdin(w)?;
                    }
                    let peer = self.peer(started_peer, copied, deadline)?;
                    self.peer_known.store(true, Ordering::SeqCst);
                    return Ok((reader.finish(), peer));
                }
                script::Step::Measuring => {
                    if let Some(w) = copying.take() {
                        self.take_back_stdin(w)?;
                    }
                    self.peer_known.store(true, Ordering::SeqCst);
                    return Ok((reader.finish(), None));
                }
                script::Step::Fail(why) => {
                    return Err(Error::measurement(format!(
                        "ssh {}: the far end gave up: {why}",
                        text::escape(&self.dest)
                    )));
                }
                script::Step::End(status) => {
                    return Err(Error::measurement(format!(
                        "ssh {}: the far end's script ended (status {status}) before a peer listened{}",
                        text::escape(&self.dest),
                        self.said()
                    )));
                }
            }
        }
    }

    /// The peer the far end started; for `tcptune peer`, its own line says the port.
    fn peer(&self, started: script::Started, copied: bool, deadline: Instant) -> Result<Option<Peer>, Error> {
        let peer = |kind, port| Peer {
            kind,
            port,
            version: None,
            protocol: None,
            copied,
        };
        Ok(match started {
            script::Started::Nothing => None,
            script::Started::Iperf3(port) => Some(peer(PeerKind::Iperf3, port)),
            script::Started::TcptunePeer => {
                let Some(line) = self.next_line(deadline)? else {
                    return Err(self.ended_early(true, "its tcptune peer said its port"));
                };
                if let Some(status) = line.strip_prefix("end ") {
                    return Err(Error::measurement(format!(
                        "ssh {}: the far end's tcptune peer did not start (status {}){}",
                        text::escape(&self.dest),
                        text::escape(status),
                        self.said()
                    )));
                }
                let hello = script::peer_hello(&line).map_err(|why| self.garbled(&why))?;
                Some(Peer {
                    version: Some(hello.version),
                    protocol: Some(hello.protocol),
                    ..peer(PeerKind::Tcptune, hello.port)
                })
            }
        })
    }

    /// Sends this binary to the far end (a size line, then the bytes) from a thread, which
    /// hands the session's stdin back when done; refused (an error) when the far end's OS or
    /// architecture is not this build's.
    fn send_copy(
        &self,
        far: &script::Report,
        ask: &script::Ask,
    ) -> Result<std::thread::JoinHandle<std::io::Result<ChildStdin>>, Error> {
        let dest = text::escape(&self.dest);
        if !ssh::runs_on(far.sysname.raw(), far.machine.raw()) {
            let tools = if ask.iperf3_client {
                "neither tcptune of this version (with `tcptune peer`) nor iperf3"
            } else {
                "no tcptune of this version (with `tcptune peer`)"
            };
            return Err(Error::measurement(format!(
                "ssh {dest}: the far end ({} {}) has {tools}, and this tcptune, built for {}, cannot run there",
                far.sysname,
                far.machine,
                ssh::this_build()
            ))
            .with_hint(format!(
                "install tcptune {} on the far end (cargo install --locked tcptune, or its package), let it run \
                 iperf3 (--allow-iperf3, with iperf3 on both ends), or give --no-path-test",
                env!("CARGO_PKG_VERSION")
            )));
        }
        let cannot = |e: std::io::Error| Error::system(format!("cannot read this tcptune's binary to copy it: {e}"));
        let exe = std::env::current_exe().map_err(cannot)?;
        let file = std::fs::File::open(&exe).map_err(cannot)?;
        let size = file.metadata().map_err(cannot)?.len();
        if size == 0 || size > MAX_COPY {
            return Err(Error::system(format!(
                "{}: {size} bytes is no binary to copy",
                exe.display()
            )));
        }
        let mut stdin = self
            .stdin
            .lock()
            .map_err(|_| Error::system("the session's stdin lock is poisoned"))?
            .take()
            .ok_or_else(|| Error::system("the session's stdin is gone"))?;
        Ok(std::thread::spawn(move || {
            writeln!(stdin, "{size}")?;
            std::io::copy(&mut file.take(size), &mut stdin)?;
            stdin.flush()?;
            Ok(stdin)
        }))
    }

    fn take_back_stdin(&self, w: std::thread::JoinHandle<std::io::Result<ChildStdin>>) -> Result<(), Error> {
        let stdin = w
            .join()
            .map_err(|_| Error::system("the thread copying tcptune panicked"))?
            .map_err(|e| {
                Error::measurement(format!(
                    "ssh {}: the copy of tcptune did not reach the far end: {e}",
                    text::escape(&self.dest)
                ))
            })?;
        if let Ok(mut s) = self.stdin.lock() {
            *s = Some(stdin);
        }
        Ok(())
    }

    /// The next line from the far end by `deadline`; None at its end (see
    /// [`Session::ended_early`]); the deadline is an error that says what ssh said.
    fn next_line(&self, deadline: Instant) -> Result<Option<String>, Error> {
        self.next_line_by(deadline, true)
    }

    /// [`Session::next_line`]; past the deadline, ssh is killed only when `kill` says so (else
    /// the caller closes the session, and the far end stops what it runs as the session ends).
    fn next_line_by(&self, deadline: Instant, kill: bool) -> Result<Option<String>, Error> {
        let left = deadline.saturating_duration_since(Instant::now());
        let got = match self.lines.lock() {
            Ok(rx) => rx.recv_timeout(left),
            Err(_) => return Err(Error::system("the session's line lock is poisoned")),
        };
        match got {
            Ok(Line::Text(l)) => Ok(Some(l)),
            Ok(Line::TooLong) => Err(self.garbled(&format!("a line longer than {} bytes", script::MAX_LINE))),
            Ok(Line::Eof) | Err(RecvTimeoutError::Disconnected) => Ok(None),
            Err(RecvTimeoutError::Timeout) => {
                if kill {
                    self.kill();
                }
                let said = self.said();
                Err(Error::measurement(format!(
                    "ssh {}: the far end did not answer in time (its set-up may take {} s, a copy of tcptune {} s){said}",
                    text::escape(&self.dest),
                    SETUP_LIMIT.as_secs(),
                    COPY_LIMIT.as_secs()
                ))
                .with_hint(format!(
                    "check that `ssh {} true` answers without a prompt, or give --rtt and --bandwidth",
                    text::escape(&self.dest)
                )))
            }
        }
    }

    /// The far end's output ended before `what`: what ssh said went wrong, when it says; else,
    /// once the script had begun (`begun`: its header was read), that the script ended there.
    fn ended_early(&self, begun: bool, what: &str) -> Error {
        let status = self.wait_exit(Duration::from_secs(2));
        let stderr = self.stderr_text();
        match ssh::known_failure(&self.dest, &stderr) {
            Some(e) => e,
            None if begun => Error::measurement(format!(
                "ssh {}: the far end's script ended{} before {what}{}",
                text::escape(&self.dest),
                status.map(|s| format!(" ({s})")).unwrap_or_default(),
                self.said()
            )),
            None => ssh::failure(&self.dest, &stderr, status),
        }
    }

    /// The far end printed something this tcptune cannot read.
    fn garbled(&self, why: &str) -> Error {
        Error::measurement(format!(
            "ssh {}: the far end's answer is not tcptune's: {why}",
            text::escape(&self.dest)
        ))
    }

    /// ": LAST LINE OF STDERR", or nothing.
    fn said(&self) -> String {
        ssh::last_line(&self.stderr_text())
            .map(|l| format!(": {l}"))
            .unwrap_or_default()
    }

    fn stderr_text(&self) -> String {
        // Give the stderr thread a moment to take what ssh wrote just before it ended.
        std::thread::sleep(Duration::from_millis(50));
        self.stderr
            .lock()
            .map(|b| String::from_utf8_lossy(&b).into_owned())
            .unwrap_or_default()
    }

    /// Whether the session still runs; an error when it ended without the far end saying
    /// `end` (the connection dropped, ssh was killed): the path test ran against a peer that
    /// ended with it.
    pub fn check(&self) -> Result<(), Error> {
        let exited = match self.child.lock() {
            Ok(mut c) => c.try_wait().ok().flatten(),
            Err(_) => None,
        };
        let Some(status) = exited else {
            return Ok(());
        };
        if self.peer_ended(Duration::from_millis(500)).is_some() {
            return Ok(());
        }
        let said = ssh::last_line(&self.stderr_text()).unwrap_or_else(|| status.to_string());
        Err(Error::measurement(format!(
            "ssh {}: the session ended during the path test ({said}); the far end's peer ended with it",
            text::escape(&self.dest)
        )))
    }

    /// The test end's evidence ([`Want::Evidence`], once [`Opening::wait`] has returned): its
    /// `= ` lines (the JSON) and `- ` lines (its stderr) until its `end N`, by `deadline`.
    pub fn read_evidence(&self, deadline: Instant) -> Result<Reported, Error> {
        let mut json = String::new();
        let mut stderr = Vec::new();
        let mut kept = 0usize;
        loop {
            let Some(line) = self.next_line_by(deadline, false)? else {
                return Err(self.ended_early(true, "its tcptune evidence ended"));
            };
            kept += line.len() + 1;
            if kept > MAX_EVIDENCE {
                self.kill();
                return Err(self.garbled(&format!("more than {} MiB of evidence", MAX_EVIDENCE >> 20)));
            }
            if let Some(l) = line.strip_prefix("= ").or_else(|| (line == "=").then_some("")) {
                json.push_str(l);
                json.push('\n');
            } else if let Some(l) = line.strip_prefix("- ").or_else(|| (line == "-").then_some("")) {
                stderr.push(Foreign::new(l.to_string()));
            } else if let Some(status) = line.strip_prefix("end ") {
                return Ok(Reported {
                    status: Foreign::new(status.trim().chars().take(20).collect::<String>()),
                    json,
                    stderr,
                });
            } else if let Some(why) = line.strip_prefix("fail ") {
                return Err(Error::measurement(format!(
                    "ssh {}: the far end gave up: {}",
                    text::escape(&self.dest),
                    text::escape(why)
                )));
            } else {
                return Err(self.garbled(&format!(
                    "\"{}\" where its evidence was expected",
                    text::escape(&line.chars().take(200).collect::<String>())
                )));
            }
        }
    }

    /// Drops what the far end said so far (noting its `end`), so that [`Session::wait_ready`]
    /// waits for a new line.
    pub fn drain(&self) {
        if let Ok(rx) = self.lines.lock() {
            while let Ok(line) = rx.try_recv() {
                self.note_end(&line);
            }
        }
    }

    /// Notes the far end's `end N` (its peer ended).
    fn note_end(&self, line: &Line) {
        if let Line::Text(l) = line
            && let Some(status) = l.strip_prefix("end ")
            && let Ok(mut e) = self.ended.lock()
            && e.is_none()
        {
            *e = Some(text::escape(&status.chars().take(20).collect::<String>()));
        }
    }

    /// Waits up to `within` for the far end to say that its server listens again (`ready N`):
    /// iperf3 closes and reopens its port after every connection, and resets one made in
    /// between. False when it did not say so in time (or ended).
    pub fn wait_ready(&self, within: Duration) -> bool {
        let by = Instant::now() + within;
        let Ok(rx) = self.lines.lock() else {
            return false;
        };
        loop {
            match rx.recv_timeout(by.saturating_duration_since(Instant::now())) {
                Ok(Line::Text(l)) if l.starts_with("ready ") => return true,
                Ok(line @ Line::Text(_)) => {
                    self.note_end(&line);
                    if self.ended().is_some() {
                        return false;
                    }
                }
                Ok(Line::TooLong) => {}
                Ok(Line::Eof) | Err(_) => return false,
            }
        }
    }

    fn ended(&self) -> Option<String> {
        self.ended.lock().ok().and_then(|e| e.clone())
    }

    /// The far end's peer ended, as a person reads it (waiting up to `within` for the far
    /// end to say so): "the far end's peer ended (its lifetime of 186 s passed)", or "(status
    /// 1)". None: it did not say so.
    pub fn peer_ended(&self, within: Duration) -> Option<String> {
        if let Ok(rx) = self.lines.lock() {
            let by = Instant::now() + within;
            while self.ended().is_none() {
                match rx.recv_timeout(by.saturating_duration_since(Instant::now())) {
                    Ok(line) if !matches!(line, Line::Eof) => self.note_end(&line),
                    _ => break,
                }
            }
        }
        Some(peer_ended_words(&self.ended()?, self.started.elapsed(), self.life))
    }

    /// Ends the session: closes its stdin (the far end stops its peer and removes its files),
    /// waits up to [`CLOSE_LIMIT`] for ssh to end, kills it past that.
    pub fn close(&self) {
        if let Ok(mut s) = self.stdin.lock() {
            drop(s.take());
        }
        if self.wait_exit(CLOSE_LIMIT).is_none() {
            self.kill();
        }
    }

    fn wait_exit(&self, within: Duration) -> Option<std::process::ExitStatus> {
        let by = Instant::now() + within;
        loop {
            let status = match self.child.lock() {
                Ok(mut c) => c.try_wait(),
                Err(_) => return None,
            };
            match status {
                Ok(Some(s)) => return Some(s),
                Ok(None) if Instant::now() < by => std::thread::sleep(Duration::from_millis(20)),
                _ => return None,
            }
        }
    }

    fn kill(&self) {
        if let Ok(mut c) = self.child.lock() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        self.close();
    }
}

/// Passes the far end's stdout on line by line, each bounded; once `counting` is set (the
/// peer is known: what came before, the far end's report, its reader bounds), past
/// [`MAX_LINES`] lines are read and dropped.
fn read_lines(out: std::process::ChildStdout, tx: &Sender<Line>, counting: &AtomicBool) {
    let mut r = BufReader::new(out);
    let mut sent = 0;
    loop {
        let mut buf = Vec::new();
        match (&mut r).take(script::MAX_LINE as u64 + 1).read_until(b'\n', &mut buf) {
            Ok(0) | Err(_) => {
                let _ = tx.send(Line::Eof);
                return;
            }
            Ok(_) => {}
        }
        if buf.last() != Some(&b'\n') && buf.len() > script::MAX_LINE {
            let _ = tx.send(Line::TooLong);
            // Read on (and drop) so the far end never blocks on its stdout.
            let _ = std::io::copy(&mut r, &mut std::io::sink());
            let _ = tx.send(Line::Eof);
            return;
        }
        while matches!(buf.last(), Some(b'\n' | b'\r')) {
            buf.pop();
        }
        if counting.load(Ordering::SeqCst) {
            sent += 1;
        }
        if sent <= MAX_LINES {
            let _ = tx.send(Line::Text(String::from_utf8_lossy(&buf).into_owned()));
        }
    }
}

/// Keeps the first [`MAX_STDERR`] bytes of ssh's stderr and reads (and drops) the rest.
fn keep_stderr(mut err: std::process::ChildStderr, sink: &Mutex<Vec<u8>>) {
    let mut buf = [0u8; 4096];
    loop {
        match err.read(&mut buf) {
            Ok(0) | Err(_) => return,
            Ok(n) => {
                if let Ok(mut s) = sink.lock() {
                    let room = MAX_STDERR.saturating_sub(s.len());
                    s.extend_from_slice(&buf[..n.min(room)]);
                }
            }
        }
    }
}

/// The far end's peer ended with `status`, `elapsed` after the session started: its lifetime
/// `life` passed (it ends so with status 0), or it ended for another reason.
fn peer_ended_words(status: &str, elapsed: Duration, life: Duration) -> String {
    if status == "0" && elapsed >= life {
        format!("the far end's peer ended (its lifetime of {} s passed)", life.as_secs())
    } else {
        format!("the far end's peer ended (status {status})")
    }
}

/// How long a server the far end starts may live: the probes before the test (each method's
/// probes and their timeout, then packet trains), both directions of the test with their
/// slack, and a margin; at most an hour. The session's end stops it sooner.
pub fn lifetime(probe: &crate::measure::ProbeOptions, test_time: Option<Duration>) -> Duration {
    let probes = (probe.interval * probe.probes + probe.timeout) * 2;
    let test = test_time.unwrap_or(Duration::from_millis(u64::from(crate::tcp::proto::MAX_DURATION_MS)))
        + Duration::from_secs(45);
    (probes + Duration::from_secs(30) + test * 2 + Duration::from_secs(60)).min(Duration::from_secs(3600))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_peer_that_ended_is_said_with_why() {
        let life = Duration::from_secs(186);
        assert_eq!(
            peer_ended_words("0", Duration::from_secs(190), life),
            "the far end's peer ended (its lifetime of 186 s passed)"
        );
        assert_eq!(
            peer_ended_words("0", Duration::from_secs(3), life),
            "the far end's peer ended (status 0)"
        );
        assert_eq!(
            peer_ended_words("1", Duration::from_secs(190), life),
            "the far end's peer ended (status 1)"
        );
    }

    #[test]
    fn the_lifetime_covers_the_probes_and_both_tests() {
        let probe = crate::measure::ProbeOptions {
            probes: 190,
            interval: Duration::from_secs(1),
            ..Default::default()
        };
        // The case: a peer of 180 s had gone before the test.
        let life = lifetime(&probe, Some(Duration::from_secs(2)));
        assert!(life > Duration::from_secs(2 * 190 + 2 * 2), "{life:?}");
        assert!(life <= Duration::from_secs(3600));
    }
}
