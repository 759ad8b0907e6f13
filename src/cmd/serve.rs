//! `tcptune serve`: the receiving end of `tcptune verify` (protocol in [`crate::diag::proto`]).
//!
//! One test at a time: a second client while one runs is answered "busy". Each test is granted
//! at most [`proto::MAX_DURATION_MS`]. The accept loop never reads from a client: each
//! connection gets its own thread, and every wait has a deadline for the whole phase, not for
//! one read, so a client sending a byte now and then cannot stretch it:
//! * the hello must be complete [`HELLO_TIMEOUT`] after the connect;
//! * the test ends at its granted time plus [`DRAIN_GRACE`], and a sender silent for
//!   [`IDLE_TIMEOUT`] loses it earlier;
//! * at most [`MAX_PENDING`] connections may owe their hello; one more closes the oldest, so
//!   half-sent hellos push out only each other while a real client's hello, sent with its
//!   connect, is read at once.
//!
//! Progress and outcomes go to stderr (stdout stays empty); lines about refused or misbehaving
//! clients are limited to [`LOG_LINES_PER_SEC`] a second, the rest counted in one summary line.

use std::collections::VecDeque;
use std::io::{Read as _, Write as _};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError, mpsc};
use std::time::{Duration, Instant};

use crate::Context;
use crate::cli::ServeArgs;
use crate::diag::proto::{self, Answer, Hello, ServerResult, Status};
use crate::error::Error;
use crate::profile::Profile;
use crate::text;

/// How long a new connection has, in all, to send its 16-byte hello.
pub const HELLO_TIMEOUT: Duration = Duration::from_secs(5);
/// How long a test's sender may go silent.
pub const IDLE_TIMEOUT: Duration = Duration::from_secs(10);
/// Time after the granted duration for data still in flight and in the sender's buffer.
pub const DRAIN_GRACE: Duration = Duration::from_secs(30);
/// Connections that may owe their hello at once.
pub const MAX_PENDING: usize = 32;
/// Lines about refused or misbehaving clients shown per second.
pub const LOG_LINES_PER_SEC: u32 = 10;
/// How often the accept loop, with nothing to accept, looks for a finished `--once` test.
const POLL: Duration = Duration::from_millis(20);

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

/// State the accept loop and the connection threads share.
struct Shared {
    busy: AtomicBool,
    /// `--once`: the slot stays taken after the test, so no second test starts in the moment
    /// before the process exits.
    once: bool,
    pending: Mutex<Pending>,
    log: Mutex<Limiter>,
}

/// Connections still owing their hello, oldest first, each with a handle to close it by.
#[derive(Default)]
struct Pending {
    next_id: u64,
    conns: VecDeque<(u64, TcpStream)>,
}

impl Shared {
    fn new(once: bool) -> Self {
        Self {
            busy: AtomicBool::new(false),
            once,
            pending: Mutex::new(Pending::default()),
            log: Mutex::new(Limiter::new(LOG_LINES_PER_SEC, Instant::now())),
        }
    }

    /// Registers a connection that owes its hello, closing the oldest such one when
    /// [`MAX_PENDING`] already wait: its thread then finds it was pushed out ([`Self::settle`]).
    fn admit(&self, s: &TcpStream) -> std::io::Result<u64> {
        let handle = s.try_clone()?;
        let mut p = self.pending.lock().unwrap_or_else(PoisonError::into_inner);
        if p.conns.len() >= MAX_PENDING
            && let Some((_, oldest)) = p.conns.pop_front()
        {
            // Wakes its thread's blocked read with end-of-file.
            let _ = oldest.shutdown(Shutdown::Both);
        }
        let id = p.next_id;
        p.next_id += 1;
        p.conns.push_back((id, handle));
        Ok(id)
    }

    /// The hello phase of connection `id` is over; false when it had been pushed out.
    fn settle(&self, id: u64) -> bool {
        let mut p = self.pending.lock().unwrap_or_else(PoisonError::into_inner);
        match p.conns.iter().position(|(i, _)| *i == id) {
            Some(at) => {
                p.conns.remove(at);
                true
            }
            None => false,
        }
    }

    /// A line about a refused or misbehaving client, within the rate limit.
    fn log_limited(&self, line: &str) {
        let mut l = self.log.lock().unwrap_or_else(PoisonError::into_inner);
        let (held_back, show) = l.admit(Instant::now());
        if let Some(n) = held_back {
            say(&suppressed_line(n));
        }
        if show {
            say(line);
        }
    }

    /// A line that is always shown (a finished test); it also reports lines held back.
    fn log_always(&self, line: &str) {
        let mut l = self.log.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(n) = l.roll(Instant::now()) {
            say(&suppressed_line(n));
        }
        say(line);
    }

    /// Reports lines held back once their second is over, even when no new line comes.
    fn flush_log(&self) {
        let mut l = self.log.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(n) = l.roll(Instant::now()) {
            say(&suppressed_line(n));
        }
    }

    fn log(&self, who: &str, o: &Outcome) {
        match o {
            Outcome::Rejected(why) => self.log_limited(&format!("tcptune serve: {who}: closed: {why}")),
            Outcome::Aborted(why) => self.log_limited(&format!("tcptune serve: {who}: test aborted: {why}")),
            Outcome::Done(what) => self.log_always(&format!("tcptune serve: {who}: {what}")),
        }
    }
}

/// One line on stderr. A server whose terminal went away keeps serving instead of panicking
/// the way `eprintln!` would.
fn say(line: &str) {
    let _ = writeln!(std::io::stderr().lock(), "{line}");
}

fn suppressed_line(n: u64) -> String {
    format!("tcptune serve: suppressed {n} more lines about refused clients (at most {LOG_LINES_PER_SEC} a second)")
}

/// At most `per_window` lines per window of at least a second; the rest are counted.
#[derive(Debug)]
struct Limiter {
    per_window: u32,
    window_start: Instant,
    shown: u32,
    held_back: u64,
}

impl Limiter {
    fn new(per_window: u32, now: Instant) -> Self {
        Self {
            per_window,
            window_start: now,
            shown: 0,
            held_back: 0,
        }
    }

    /// Whether a line may be shown at `now`, after the count of lines the window that just
    /// ended held back (when one ended and held any back).
    fn admit(&mut self, now: Instant) -> (Option<u64>, bool) {
        let held_back = self.roll(now);
        if self.shown < self.per_window {
            self.shown += 1;
            (held_back, true)
        } else {
            self.held_back += 1;
            (held_back, false)
        }
    }

    /// Starts a new window when a second has passed since this one began; returns how many
    /// lines the ended window held back, if any.
    fn roll(&mut self, now: Instant) -> Option<u64> {
        if now.saturating_duration_since(self.window_start) < Duration::from_secs(1) {
            return None;
        }
        self.window_start = now;
        self.shown = 0;
        (self.held_back > 0).then(|| std::mem::take(&mut self.held_back))
    }
}

/// Clears the busy flag however a test ends (but for `--once`).
struct BusyGuard<'a>(&'a Shared);

impl Drop for BusyGuard<'_> {
    fn drop(&mut self) {
        if !self.0.once {
            self.0.busy.store(false, Ordering::SeqCst);
        }
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
    // Non-blocking, so that with nothing to accept the loop can notice the end of a --once test.
    listener.set_nonblocking(true)?;
    say(&format!(
        "tcptune serve: listening on {addr} (this end receives; one test at a time, at most {} s each{})",
        proto::MAX_DURATION_MS / 1000,
        if a.once { "; exits after one test" } else { "" }
    ));
    let shared = Arc::new(Shared::new(a.once));
    {
        let shared = Arc::clone(&shared);
        // Best effort: without it a held-back count shows with the next line instead.
        let _ = std::thread::Builder::new().name("serve-log".into()).spawn(move || {
            loop {
                std::thread::sleep(Duration::from_secs(1));
                shared.flush_log();
            }
        });
    }
    // Tests that ended, for --once.
    let (ended_tx, ended) = mpsc::channel::<(String, Outcome)>();
    loop {
        let stream = match listener.accept() {
            Ok((s, _)) => s,
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                if let Ok((who, outcome)) = ended.recv_timeout(POLL) {
                    return match outcome {
                        Outcome::Aborted(why) => {
                            Err(Error::measurement(format!("the test from {who} broke off: {why}")).into())
                        }
                        _ => Ok(ExitCode::SUCCESS),
                    };
                }
                continue;
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => {
                // EMFILE and the like: back off instead of spinning.
                shared.log_limited(&format!("tcptune serve: accept failed: {e}"));
                std::thread::sleep(Duration::from_millis(100));
                continue;
            }
        };
        let who = stream.peer_addr().map_or_else(|_| "?".to_string(), |p| p.to_string());
        // Linux does not pass the listener's O_NONBLOCK on to accepted sockets; the BSDs do.
        if let Err(e) = stream.set_nonblocking(false) {
            shared.log(&who, &Outcome::Rejected(format!("socket setup failed: {e}")));
            continue;
        }
        let id = match shared.admit(&stream) {
            Ok(id) => id,
            Err(e) => {
                shared.log(&who, &Outcome::Rejected(format!("socket setup failed: {e}")));
                continue;
            }
        };
        // Read per test: the sysctls may change between tests.
        let facts = ReceiverFacts::read(ctx);
        let worker = Arc::clone(&shared);
        let ended_tx = ended_tx.clone();
        let once = a.once;
        let who2 = who.clone();
        let spawned = std::thread::Builder::new().name("serve-conn".into()).spawn(move || {
            let outcome = handle(stream, id, &worker, &facts);
            worker.log(&who2, &outcome);
            if once && !matches!(outcome, Outcome::Rejected(_)) {
                let _ = ended_tx.send((who2, outcome));
            }
        });
        if let Err(e) = spawned {
            // The stream went down with the closure; forget its handle too.
            shared.settle(id);
            shared.log(&who, &Outcome::Rejected(format!("no thread for it: {e}")));
        }
    }
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
        _ => crate::error::Error::system(format!("cannot listen on {addr}: {e}")).into(),
    }
}

/// Why a hello could not be read.
#[derive(Debug, PartialEq, Eq)]
enum HelloError {
    /// `deadline` passed first (however many bytes came before it).
    Late,
    /// End of file before 16 bytes.
    Eof,
    Io(std::io::ErrorKind, String),
}

/// Reads the 16-byte hello by `deadline`: each read waits only for the time left, so bytes
/// that trickle in do not move the deadline.
fn read_hello(s: &mut TcpStream, deadline: Instant) -> Result<[u8; proto::HELLO_LEN], HelloError> {
    let mut frame = [0u8; proto::HELLO_LEN];
    let mut got = 0;
    while got < frame.len() {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(HelloError::Late);
        }
        s.set_read_timeout(Some(left))
            .map_err(|e| HelloError::Io(e.kind(), e.to_string()))?;
        match s.read(&mut frame[got..]) {
            Ok(0) => return Err(HelloError::Eof),
            Ok(n) => got += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) if matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut) => {
                return Err(HelloError::Late);
            }
            Err(e) => return Err(HelloError::Io(e.kind(), e.to_string())),
        }
    }
    Ok(frame)
}

fn handle(mut s: TcpStream, id: u64, shared: &Shared, facts: &ReceiverFacts) -> Outcome {
    let hello = read_hello(&mut s, Instant::now() + HELLO_TIMEOUT);
    if !shared.settle(id) {
        return Outcome::Rejected(format!(
            "its hello was not complete when {MAX_PENDING} newer connections were waiting for theirs"
        ));
    }
    let frame = match hello {
        Ok(f) => f,
        Err(HelloError::Late) => {
            return Outcome::Rejected(format!("no hello within {} s", HELLO_TIMEOUT.as_secs()));
        }
        Err(HelloError::Eof) => return Outcome::Rejected("went away before its hello".to_string()),
        Err(HelloError::Io(_, e)) => return Outcome::Rejected(format!("reading the hello: {e}")),
    };
    if let Err(e) = s.set_write_timeout(Some(HELLO_TIMEOUT)) {
        return Outcome::Rejected(format!("socket setup failed: {e}"));
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
    let _busy = BusyGuard(shared);
    let granted_ms = hello.duration_ms.min(proto::MAX_DURATION_MS);
    if let Err(e) = s.write_all(&answer(Status::Ok, granted_ms).encode()) {
        return Outcome::Aborted(format!("answering the hello: {e}"));
    }
    // The whole test, drain included, ends here however the data trickles in.
    let deadline = Instant::now() + Duration::from_millis(u64::from(granted_ms)) + DRAIN_GRACE;
    let mut buf = vec![0u8; 256 * 1024];
    let mut bytes = 0u64;
    let mut first: Option<Instant> = None;
    let mut rcv_wnd: Option<u64> = None;
    let mut sampled = Instant::now();
    let mut timeout = Duration::ZERO;
    let past_deadline = || format!("not done {} s after the granted time", DRAIN_GRACE.as_secs());
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Outcome::Aborted(format!("{} after {}", past_deadline(), text::bytes(bytes)));
        }
        let wait = left.min(IDLE_TIMEOUT);
        if wait != timeout {
            if let Err(e) = s.set_read_timeout(Some(wait)) {
                return Outcome::Aborted(format!("socket setup failed: {e}"));
            }
            timeout = wait;
        }
        match s.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => {
                let now = Instant::now();
                first.get_or_insert(now);
                bytes += n as u64;
                if now.duration_since(sampled) >= Duration::from_millis(100) {
                    sampled = now;
                    rcv_wnd = rcv_wnd.max(advertised_window(&s));
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => {
                let why = match e.kind() {
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut if wait < IDLE_TIMEOUT => {
                        past_deadline()
                    }
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut => {
                        format!("the sender went silent for {} s", IDLE_TIMEOUT.as_secs())
                    }
                    _ => e.to_string(),
                };
                return Outcome::Aborted(format!("{why} after {}", text::bytes(bytes)));
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
        text::bytes(bytes),
        duration.as_secs_f64(),
        text::rate(bps)
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limiter_shows_n_a_second_and_counts_the_rest() {
        let t0 = Instant::now();
        let mut l = Limiter::new(3, t0);
        let shown: Vec<bool> = (0..5).map(|_| l.admit(t0).1).collect();
        assert_eq!(shown, [true, true, true, false, false]);
        // Within the same second nothing is reported yet, however often it is asked.
        assert_eq!(l.roll(t0 + Duration::from_millis(999)), None);
        assert_eq!(l.admit(t0 + Duration::from_millis(999)), (None, false));
        // The next second: the 3 held back are reported once, and lines show again.
        assert_eq!(l.admit(t0 + Duration::from_secs(1)), (Some(3), true));
        assert_eq!(l.roll(t0 + Duration::from_secs(5)), None);
    }
}
