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

use std::io::{BufRead as _, Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

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

/// What the receiving side tells the sender after the data.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ServerResult {
    /// Payload bytes received.
    pub bytes: u64,
    /// From the first payload byte to the end of the data, in µs.
    pub duration_us: u64,
    /// The receiver's OS ("linux", "freebsd", "macos").
    pub os: String,
    /// The sysctl that caps the receiver's buffer autotuning, and its running value.
    pub rcvbuf_key: Option<String>,
    pub rcvbuf_value: Option<String>,
    /// The largest receive window the receiver advertised (Linux 6.2+: tcpi_rcv_wnd), bytes.
    pub rcv_wnd: Option<u64>,
    /// Path test: the receive buffer (SO_RCVBUF) when the window was its largest share of it,
    /// bytes, and that share (advertised window / buffer: the receiver's scaling_ratio).
    #[serde(default)]
    pub rcv_buf: Option<u64>,
    #[serde(default)]
    pub window_share: Option<f64>,
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
    /// No complete answer came back.
    NoAnswer(std::io::Error),
    /// The answer is not a tcptune answer.
    Garbled(ProtoError),
    /// The server is running another test.
    Busy,
    /// The server does not speak the hello's version; the version it answered in.
    BadVersion(u16),
}

/// The client's half of the hello exchange: sends `hello`, then `extra` (a path test's
/// buffer size) in the same write, and reads the answer. Ok: the time the server granted.
pub fn exchange_hello(mut s: impl Read + Write, hello: &Hello, extra: &[u8]) -> Result<Duration, ExchangeError> {
    let mut out = hello.encode().to_vec();
    out.extend_from_slice(extra);
    s.write_all(&out).map_err(ExchangeError::Send)?;
    let mut frame = [0u8; HELLO_LEN];
    s.read_exact(&mut frame).map_err(ExchangeError::NoAnswer)?;
    let answer = Answer::decode(&frame).map_err(ExchangeError::Garbled)?;
    match answer.status {
        Status::Ok => Ok(Duration::from_millis(u64::from(answer.granted_ms))),
        Status::Busy => Err(ExchangeError::Busy),
        Status::BadVersion => Err(ExchangeError::BadVersion(answer.version)),
    }
}

/// Why a line of JSON from the peer could not be read.
#[derive(Debug)]
pub enum LineError {
    Io(std::io::Error),
    Json(serde_json::Error),
}

/// Reads one line of JSON of at most `max` bytes (a [`DataChannel`], a [`ServerResult`]).
pub fn read_json_line<T: DeserializeOwned>(s: &TcpStream, max: usize) -> Result<T, LineError> {
    let mut line = String::new();
    std::io::BufReader::new(s.take(max as u64))
        .read_line(&mut line)
        .map_err(LineError::Io)?;
    serde_json::from_str(line.trim()).map_err(LineError::Json)
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

    /// A peer that answers with `answer` and records what it was sent.
    struct Peer {
        sent: Vec<u8>,
        answer: std::io::Cursor<Vec<u8>>,
    }

    impl Read for Peer {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            self.answer.read(buf)
        }
    }

    impl Write for Peer {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.sent.extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    fn exchange(answer: &[u8], extra: &[u8]) -> (Result<Duration, ExchangeError>, Vec<u8>) {
        let hello = Hello {
            version: VERSION,
            flags: FLAG_PATH_TEST,
            duration_ms: duration_ms(Duration::from_secs(3)),
        };
        let mut peer = Peer {
            sent: Vec::new(),
            answer: std::io::Cursor::new(answer.to_vec()),
        };
        let r = exchange_hello(&mut peer, &hello, extra);
        (r, peer.sent)
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
            Err(ExchangeError::NoAnswer(_))
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
    fn result_is_one_json_line() {
        let r = ServerResult {
            bytes: 1,
            duration_us: 2,
            os: "linux".into(),
            rcvbuf_key: Some("net.ipv4.tcp_rmem".into()),
            rcvbuf_value: Some("4096 131072 6291456".into()),
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
