//! `tcptune serve`: the receiving end of `tcptune verify` (protocol in [`crate::diag::proto`]).
//!
//! One test at a time: a second client while one runs is answered "busy". Each test is granted
//! at most [`proto::MAX_DURATION_MS`]; a client that sends no valid hello within
//! [`HELLO_TIMEOUT`], goes silent for [`IDLE_TIMEOUT`], resets, or sends past its granted time
//! plus [`DRAIN_GRACE`] loses its connection, and the server keeps serving. Progress and
//! outcomes go to stderr; stdout stays empty.

use std::io::{Read as _, Write as _};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use crate::Context;
use crate::cli::ServeArgs;
use crate::diag::proto::{self, Answer, Hello, ServerResult, Status};
use crate::error::Error;
use crate::output;
use crate::profile::Profile;

/// How long a new connection may take to send its 16-byte hello.
pub const HELLO_TIMEOUT: Duration = Duration::from_secs(5);
/// How long a test's sender may go silent.
pub const IDLE_TIMEOUT: Duration = Duration::from_secs(10);
/// Time after the granted duration for data still in flight and in the sender's buffer.
pub const DRAIN_GRACE: Duration = Duration::from_secs(30);
/// Connections handled at once (one test plus clients being told "busy" or being rejected).
const MAX_HANDLERS: usize = 16;

/// What the receiver tells each client about itself.
#[derive(Debug, Clone)]
struct ReceiverFacts {
    os: String,
    rcvbuf_key: Option<String>,
    rcvbuf_value: Option<String>,
}

impl ReceiverFacts {
    fn read(ctx: &Context) -> Self {
        let profile = Profile::for_os(ctx.os);
        let key = profile
            .caps
            .iter()
            .find(|(_, fact)| fact.as_str() == "buffer")
            .map(|(k, _)| k.clone());
        let value = key.as_deref().and_then(|k| {
            ctx.backend
                .as_deref()
                .and_then(|b| b.read(k).value().map(str::to_string))
        });
        Self {
            os: ctx.os.to_string(),
            rcvbuf_key: key,
            rcvbuf_value: value,
        }
    }
}

#[derive(Default)]
struct Shared {
    busy: AtomicBool,
    handlers: AtomicUsize,
}

/// Clears the busy flag however a test ends.
struct BusyGuard<'a>(&'a AtomicBool);

impl Drop for BusyGuard<'_> {
    fn drop(&mut self) {
        self.0.store(false, Ordering::SeqCst);
    }
}

/// How one connection ended.
#[derive(Debug)]
enum Outcome {
    /// Not a test: junk, busy, a client that went away before its hello.
    Rejected(String),
    /// A test that ran to its end.
    Done(String),
    /// A test that broke off.
    Aborted(String),
}

pub fn run(a: &ServeArgs, ctx: &Context, _out: &mut dyn std::io::Write) -> anyhow::Result<ExitCode> {
    let want = SocketAddr::new(a.bind, a.port);
    let listener = TcpListener::bind(want).map_err(|e| bind_error(want, &e))?;
    let addr = listener.local_addr()?;
    eprintln!(
        "tcptune serve: listening on {addr} (this end receives; one test at a time, at most {} s each{})",
        proto::MAX_DURATION_MS / 1000,
        if a.once { "; exits after one test" } else { "" }
    );
    let shared = Arc::new(Shared::default());
    for conn in listener.incoming() {
        let stream = match conn {
            Ok(s) => s,
            Err(e) => {
                // EMFILE and the like: back off instead of spinning.
                eprintln!("tcptune serve: accept failed: {e}");
                std::thread::sleep(Duration::from_millis(100));
                continue;
            }
        };
        let who = stream.peer_addr().map_or_else(|_| "?".to_string(), |p| p.to_string());
        // Read per test: the sysctls may change between tests.
        let facts = ReceiverFacts::read(ctx);
        if a.once {
            let outcome = handle(stream, &shared, &facts);
            log(&who, &outcome);
            match outcome {
                Outcome::Rejected(_) => continue,
                Outcome::Done(_) => return Ok(ExitCode::SUCCESS),
                Outcome::Aborted(why) => {
                    return Err(Error::measurement(format!("the test from {who} broke off: {why}")).into());
                }
            }
        }
        if shared.handlers.fetch_add(1, Ordering::SeqCst) >= MAX_HANDLERS {
            shared.handlers.fetch_sub(1, Ordering::SeqCst);
            drop(stream);
            eprintln!("tcptune serve: {who}: closed: too many connections at once");
            continue;
        }
        let shared = Arc::clone(&shared);
        std::thread::spawn(move || {
            let outcome = handle(stream, &shared, &facts);
            log(&who, &outcome);
            shared.handlers.fetch_sub(1, Ordering::SeqCst);
        });
    }
    Ok(ExitCode::SUCCESS)
}

fn bind_error(addr: SocketAddr, e: &std::io::Error) -> anyhow::Error {
    match e.kind() {
        std::io::ErrorKind::AddrInUse => Error::usage(format!("cannot listen on {addr}: the port is in use"))
            .with_hint("another tcptune serve (or iperf) may be running; pick another with --port")
            .into(),
        std::io::ErrorKind::AddrNotAvailable => {
            Error::usage(format!("cannot listen on {addr}: no interface has that address")).into()
        }
        std::io::ErrorKind::PermissionDenied => Error::not_permitted(format!(
            "cannot listen on {addr}: permission denied (ports below 1024 need root)"
        ))
        .into(),
        _ => anyhow::anyhow!("cannot listen on {addr}: {e}"),
    }
}

fn log(who: &str, o: &Outcome) {
    match o {
        Outcome::Rejected(why) => eprintln!("tcptune serve: {who}: closed: {why}"),
        Outcome::Done(what) => eprintln!("tcptune serve: {who}: {what}"),
        Outcome::Aborted(why) => eprintln!("tcptune serve: {who}: test aborted: {why}"),
    }
}

fn handle(mut s: TcpStream, shared: &Shared, facts: &ReceiverFacts) -> Outcome {
    let setup = s
        .set_read_timeout(Some(HELLO_TIMEOUT))
        .and_then(|()| s.set_write_timeout(Some(HELLO_TIMEOUT)));
    if let Err(e) = setup {
        return Outcome::Rejected(format!("socket setup failed: {e}"));
    }
    let mut frame = [0u8; proto::HELLO_LEN];
    if let Err(e) = s.read_exact(&mut frame) {
        return Outcome::Rejected(match e.kind() {
            std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut => {
                format!("no hello within {} s", HELLO_TIMEOUT.as_secs())
            }
            std::io::ErrorKind::UnexpectedEof => "went away before its hello".to_string(),
            _ => format!("reading the hello: {e}"),
        });
    }
    let hello = match Hello::decode(&frame) {
        Ok(h) => h,
        Err(e) => return Outcome::Rejected(e.to_string()),
    };
    let answer = |status, granted_ms| Answer {
        version: proto::VERSION,
        status,
        granted_ms,
    };
    if hello.version != proto::VERSION {
        let _ = s.write_all(&answer(Status::BadVersion, 0).encode());
        return Outcome::Rejected(format!(
            "protocol version {} (this server speaks {})",
            hello.version,
            proto::VERSION
        ));
    }
    if shared.busy.swap(true, Ordering::SeqCst) {
        let _ = s.write_all(&answer(Status::Busy, 0).encode());
        return Outcome::Rejected("busy with another test".to_string());
    }
    let _busy = BusyGuard(&shared.busy);
    let granted_ms = hello.duration_ms.min(proto::MAX_DURATION_MS);
    if let Err(e) = s.write_all(&answer(Status::Ok, granted_ms).encode()) {
        return Outcome::Aborted(format!("answering the hello: {e}"));
    }
    if let Err(e) = s.set_read_timeout(Some(IDLE_TIMEOUT)) {
        return Outcome::Aborted(format!("socket setup failed: {e}"));
    }
    let deadline = Instant::now() + Duration::from_millis(u64::from(granted_ms)) + DRAIN_GRACE;
    let mut buf = vec![0u8; 256 * 1024];
    let mut bytes = 0u64;
    let mut first: Option<Instant> = None;
    let mut rcv_wnd: Option<u64> = None;
    let mut sampled = Instant::now();
    loop {
        match s.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => {
                let now = Instant::now();
                first.get_or_insert(now);
                bytes += n as u64;
                if now > deadline {
                    return Outcome::Aborted(format!(
                        "still sending {} s past the granted time",
                        DRAIN_GRACE.as_secs()
                    ));
                }
                if now.duration_since(sampled) >= Duration::from_millis(100) {
                    sampled = now;
                    rcv_wnd = rcv_wnd.max(advertised_window(&s));
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => {
                let why = match e.kind() {
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut => {
                        format!("the sender went silent for {} s", IDLE_TIMEOUT.as_secs())
                    }
                    _ => e.to_string(),
                };
                return Outcome::Aborted(format!("{why} after {}", output::bytes(bytes)));
            }
        }
    }
    let duration = first.map_or(Duration::ZERO, |f| f.elapsed());
    let result = ServerResult {
        bytes,
        duration_us: u64::try_from(duration.as_micros()).unwrap_or(u64::MAX),
        os: facts.os.clone(),
        rcvbuf_key: facts.rcvbuf_key.clone(),
        rcvbuf_value: facts.rcvbuf_value.clone(),
        rcv_wnd,
    };
    let mut line = serde_json::to_string(&result).unwrap_or_default();
    line.push('\n');
    if let Err(e) = s.write_all(line.as_bytes()) {
        return Outcome::Aborted(format!("sending the result: {e}"));
    }
    let _ = s.shutdown(std::net::Shutdown::Write);
    #[allow(clippy::cast_precision_loss)]
    let bps = if duration.is_zero() {
        0.0
    } else {
        bytes as f64 * 8.0 / duration.as_secs_f64()
    };
    Outcome::Done(format!(
        "received {} in {:.2} s: {}",
        output::bytes(bytes),
        duration.as_secs_f64(),
        output::rate(bps)
    ))
}

/// The receive window this end advertises now (Linux 6.2+), bytes.
#[cfg(target_os = "linux")]
fn advertised_window(s: &TcpStream) -> Option<u64> {
    crate::diag::tcpinfo::get(s)
        .ok()
        .map(|i| u64::from(i.tcpi_rcv_wnd))
        .filter(|&w| w > 0)
}

#[cfg(not(target_os = "linux"))]
fn advertised_window(_s: &TcpStream) -> Option<u64> {
    None
}
