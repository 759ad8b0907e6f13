//! The receiving end of `tcptune verify` (protocol in [`crate::tcp::proto`]): the accept loop, a
//! thread per connection, the deadlines that bound every wait, the limit on connections still
//! owing their hello, and the rate limit on lines about refused clients. No printing: lines
//! go to the caller's [`Log`], and what to tell a user about a failed bind is the caller's.
//!
//! One test at a time: a second client while one runs is answered "busy". Each test is granted
//! at most [`proto::MAX_DURATION_MS`]. The accept loop never reads from a client: each
//! connection gets its own thread, and every wait has a deadline for the whole phase, not for
//! one read, so a client sending a byte now and then cannot stretch it:
//! * the hello must be complete [`HELLO_TIMEOUT`] after the connect;
//! * the test ends at its granted time plus [`DRAIN_GRACE`], and a sender silent for
//!   [`IDLE_TIMEOUT`] loses it earlier;
//! * a path test's receive buffer is forced to what the client asked for, but never past
//!   the request's `max_buffer` (`serve --max-buffer`): an anonymous client cannot make a
//!   root server pin more kernel memory than that;
//! * at most [`MAX_PENDING`] connections may owe their hello; one more closes the oldest, so
//!   half-sent hellos push out only each other while a real client's hello, sent with its
//!   connect, is read at once.
//!
//! Lines about refused or misbehaving clients are limited to [`LOG_LINES_PER_SEC`] a second,
//! the rest counted in one summary line.

use std::collections::VecDeque;
use std::io::{Read as _, Write as _};
use std::net::{IpAddr, Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError, mpsc};
use std::time::{Duration, Instant};

use super::BufferCap;
use crate::error::Error;
use crate::tcp::proto::{self, Answer, Hello, ReadError, ServerResult, Status};
use crate::text::{self, Foreign};

/// How long a new connection has, in all, to send its 16-byte hello.
pub const HELLO_TIMEOUT: Duration = Duration::from_secs(5);
/// How long a test's sender may go silent.
pub const IDLE_TIMEOUT: Duration = Duration::from_secs(10);
/// Time after the granted duration for data still in flight and in the sender's buffer: the
/// protocol's, which the client waits for too ([`proto::DRAIN_GRACE`]).
pub const DRAIN_GRACE: Duration = proto::DRAIN_GRACE;
/// Connections that may owe their hello at once.
pub const MAX_PENDING: usize = 32;
/// Lines about refused or misbehaving clients shown per second.
pub const LOG_LINES_PER_SEC: u32 = 10;
/// How often the accept loop, with nothing to accept, looks for a finished `once` test.
const POLL: Duration = Duration::from_millis(20);

/// The server to run.
#[derive(Debug, Clone, Copy)]
pub struct ServeRequest {
    /// The address to listen on (`::` for IPv6 and IPv4).
    pub bind: IpAddr,
    /// The TCP port; 0: any free port.
    pub port: u16,
    /// Exit after one test (a client that never got as far as a test does not count).
    pub once: bool,
    /// The largest receive buffer a path test may have forced, as the kernel reports it
    /// (SO_RCVBUF), bytes ([`proto::DEFAULT_MAX_BUFFER`] by default).
    pub max_buffer: u64,
}

/// Where the server's lines go: progress and outcomes, one line at a time, from any thread.
/// A line names the client it is about; it carries no program-name prefix.
pub trait Log: Send + Sync {
    fn line(&self, line: &str);
}

impl<F: Fn(&str) + Send + Sync> Log for F {
    fn line(&self, line: &str) {
        self(line);
    }
}

/// Why [`Server::bind`] failed: the operating system's reason, for the caller to word.
#[derive(Debug)]
pub enum BindError {
    /// No socket could be bound to `addr` (in use, no such interface, a privileged port).
    Listen { addr: SocketAddr, source: std::io::Error },
    /// The bound socket could not be set up.
    Setup(std::io::Error),
}

/// A bound listener, not yet accepting.
#[derive(Debug)]
pub struct Server {
    listener: TcpListener,
    addr: SocketAddr,
    once: bool,
    max_buffer: u64,
}

/// State the accept loop and the connection threads share.
struct Shared {
    busy: AtomicBool,
    /// `once`: the slot stays taken after the test, so no second test starts in the moment
    /// before the process exits.
    once: bool,
    /// The largest receive buffer a path test may have forced (kernel's count), bytes.
    max_buffer: u64,
    pending: Mutex<Pending>,
    log: Mutex<Limiter>,
    sink: Arc<dyn Log>,
    /// Set when [`Server::run`] returns, so the thread flushing held-back counts ends too.
    stopped: AtomicBool,
}

/// Connections still owing their hello, oldest first, each with a handle to close it by.
#[derive(Default)]
struct Pending {
    next_id: u64,
    conns: VecDeque<(u64, TcpStream)>,
}

impl Shared {
    fn new(once: bool, max_buffer: u64, sink: Arc<dyn Log>) -> Self {
        Self {
            busy: AtomicBool::new(false),
            once,
            max_buffer,
            pending: Mutex::new(Pending::default()),
            log: Mutex::new(Limiter::new(LOG_LINES_PER_SEC, Instant::now())),
            sink,
            stopped: AtomicBool::new(false),
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
            self.sink.line(&suppressed_line(n));
        }
        if show {
            self.sink.line(line);
        }
    }

    /// A line that is always shown (a finished test); it also reports lines held back.
    fn log_always(&self, line: &str) {
        let mut l = self.log.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(n) = l.roll(Instant::now()) {
            self.sink.line(&suppressed_line(n));
        }
        self.sink.line(line);
    }

    /// Reports lines held back once their second is over, even when no new line comes.
    fn flush_log(&self) {
        let mut l = self.log.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(n) = l.roll(Instant::now()) {
            self.sink.line(&suppressed_line(n));
        }
    }

    fn log(&self, who: &str, o: &Outcome) {
        match o {
            Outcome::Rejected(why) => self.log_limited(&format!("{who}: closed: {why}")),
            Outcome::Aborted(why) => self.log_limited(&format!("{who}: test aborted: {why}")),
            Outcome::Done(what) => self.log_always(&format!("{who}: {what}")),
        }
    }
}

fn suppressed_line(n: u64) -> String {
    format!("suppressed {n} more lines about refused clients (at most {LOG_LINES_PER_SEC} a second)")
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

/// Clears the busy flag however a test ends (but for `once`).
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

impl Server {
    /// Listens on the request's address (port 0: any free one).
    pub fn bind(req: &ServeRequest) -> Result<Self, BindError> {
        let want = SocketAddr::new(req.bind, req.port);
        let listener = TcpListener::bind(want).map_err(|source| BindError::Listen { addr: want, source })?;
        let addr = listener.local_addr().map_err(BindError::Setup)?;
        // Non-blocking, so that with nothing to accept the loop can notice the end of a `once` test.
        listener.set_nonblocking(true).map_err(BindError::Setup)?;
        Ok(Self {
            listener,
            addr,
            once: req.once,
            max_buffer: req.max_buffer,
        })
    }

    /// The address it listens on, the port chosen when 0 was asked for.
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// Serves tests until the process ends, or with `once` until one test has ended: Ok when
    /// it ran to its end, a measurement error when it broke off. `receiver` says what this end
    /// tells each client about its receive buffer, called again for each test (the sysctls may
    /// change between tests); lines go to `log`.
    pub fn run(self, receiver: &dyn Fn() -> BufferCap, log: Arc<dyn Log>) -> Result<(), Error> {
        let shared = Arc::new(Shared::new(self.once, self.max_buffer, log));
        {
            let shared = Arc::clone(&shared);
            // Best effort: without it a held-back count shows with the next line instead.
            let _ = std::thread::Builder::new().name("serve-log".into()).spawn(move || {
                while !shared.stopped.load(Ordering::SeqCst) {
                    std::thread::sleep(Duration::from_secs(1));
                    shared.flush_log();
                }
            });
        }
        let r = self.accept_loop(receiver, &shared);
        shared.stopped.store(true, Ordering::SeqCst);
        r
    }

    fn accept_loop(&self, receiver: &dyn Fn() -> BufferCap, shared: &Arc<Shared>) -> Result<(), Error> {
        // Tests that ended, for `once`.
        let (ended_tx, ended) = mpsc::channel::<(String, Outcome)>();
        loop {
            let stream = match self.listener.accept() {
                Ok((s, _)) => s,
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                    if let Ok((who, outcome)) = ended.recv_timeout(POLL) {
                        return match outcome {
                            Outcome::Aborted(why) => {
                                Err(Error::measurement(format!("the test from {who} broke off: {why}")))
                            }
                            _ => Ok(()),
                        };
                    }
                    continue;
                }
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => {
                    // EMFILE and the like: back off instead of spinning.
                    shared.log_limited(&format!("accept failed: {e}"));
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
            let facts = receiver();
            let worker = Arc::clone(shared);
            let ended_tx = ended_tx.clone();
            let once = self.once;
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
}

/// Reads the 16-byte hello by `deadline` ([`proto::read_exact_by`]: bytes that trickle in do
/// not move it).
fn read_hello(s: &TcpStream, deadline: Instant) -> Result<[u8; proto::HELLO_LEN], ReadError> {
    let mut frame = [0u8; proto::HELLO_LEN];
    proto::read_exact_by(s, &mut frame, deadline)?;
    Ok(frame)
}

/// How long a path-test client has to connect its data connection.
const DATA_CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// Opens the data listener of a path test on the address the client reached, with the receive
/// buffer it asked for set before any handshake (so the window scale allows all of it), tells
/// the client its port, and takes one connection from the client's address.
fn open_data_channel(control: &mut TcpStream, rcvbuf_wanted: u64, max_buffer: u64) -> Result<TcpStream, String> {
    use crate::tcp::sockopt::{self, Buffer};
    let local = control.local_addr().map_err(|e| format!("socket setup failed: {e}"))?;
    let client = control.peer_addr().map_err(|e| format!("socket setup failed: {e}"))?;
    let listener = TcpListener::bind(SocketAddr::new(local.ip(), 0)).map_err(|e| format!("no data listener: {e}"))?;
    // Forced or left to autotuning: a plain SO_RCVBUF would cap it at rmem_max. Never past
    // max_buffer: the client is anonymous, the memory this end's.
    let ask = proto::forced_buffer_ask(rcvbuf_wanted, max_buffer);
    let forced = if ask > 0 {
        sockopt::force_buffer(&listener, Buffer::Receive, ask)
            .map_err(|e| format!("setting the receive buffer: {e}"))?
    } else {
        None
    };
    let (forced, rcvbuf) = (forced.is_some(), forced.unwrap_or(0));
    let port = listener
        .local_addr()
        .map_err(|e| format!("socket setup failed: {e}"))?
        .port();
    let mut line = serde_json::to_string(&proto::DataChannel { port, rcvbuf, forced }).unwrap_or_default();
    line.push('\n');
    control
        .write_all(line.as_bytes())
        .map_err(|e| format!("sending the data port: {e}"))?;
    listener
        .set_nonblocking(true)
        .map_err(|e| format!("socket setup failed: {e}"))?;
    let deadline = Instant::now() + DATA_CONNECT_TIMEOUT;
    loop {
        match listener.accept() {
            // Only the client that asked: anyone else is closed at once.
            Ok((d, from)) if from.ip() == client.ip() => {
                d.set_nonblocking(false)
                    .map_err(|e| format!("socket setup failed: {e}"))?;
                return Ok(d);
            }
            Ok(_) => {}
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::Interrupted
                ) =>
            {
                if Instant::now() >= deadline {
                    return Err(format!(
                        "no data connection within {} s",
                        DATA_CONNECT_TIMEOUT.as_secs()
                    ));
                }
                std::thread::sleep(Duration::from_millis(5));
            }
            Err(e) => return Err(format!("accepting the data connection: {e}")),
        }
    }
}

/// Serves one connection, however it ends.
fn handle(s: TcpStream, id: u64, shared: &Shared, facts: &BufferCap) -> Outcome {
    match serve_test(s, id, shared, facts) {
        Ok(done) => done,
        Err(ended) => ended,
    }
}

/// One connection's steps: its hello, the answer, a path test's data channel, the data, the
/// result. Err: how it ended early.
fn serve_test(mut s: TcpStream, id: u64, shared: &Shared, facts: &BufferCap) -> Result<Outcome, Outcome> {
    let hello = read_client_hello(&mut s, id, shared)?;
    let _busy = take_slot(&mut s, &hello, shared)?;
    let (granted_ms, rcvbuf_wanted) = grant(&mut s, &hello)?;
    if hello.path_test() {
        // The control connection closes here: the data connection carries the rest.
        s = open_data_channel(&mut s, rcvbuf_wanted, shared.max_buffer)
            .map_err(|why| Outcome::Aborted(format!("path test: {why}")))?;
    }
    let got = receive(&mut s, granted_ms, hello.path_test())?;
    Ok(send_result(&mut s, facts, &got))
}

/// The client's hello, complete by its deadline. Refused: a connection pushed out meanwhile
/// ([`Shared::admit`]), a hello late, cut short or not a tcptune hello.
fn read_client_hello(s: &mut TcpStream, id: u64, shared: &Shared) -> Result<Hello, Outcome> {
    let hello = read_hello(s, Instant::now() + HELLO_TIMEOUT);
    if !shared.settle(id) {
        return Err(Outcome::Rejected(format!(
            "its hello was not complete when {MAX_PENDING} newer connections were waiting for theirs"
        )));
    }
    let frame = hello.map_err(|e| hello_refused(e, format!("no hello within {} s", HELLO_TIMEOUT.as_secs())))?;
    s.set_write_timeout(Some(HELLO_TIMEOUT))
        .map_err(|e| Outcome::Rejected(format!("socket setup failed: {e}")))?;
    Hello::decode(&frame).map_err(|e| Outcome::Rejected(e.to_string()))
}

/// Why a hello (or the bytes after it) could not be read; `late` says what was missing at the
/// deadline.
fn hello_refused(e: ReadError, late: String) -> Outcome {
    match e {
        ReadError::Late => Outcome::Rejected(late),
        ReadError::Closed => Outcome::Rejected("went away before its hello".to_string()),
        ReadError::Io(e) => Outcome::Rejected(format!("reading the hello: {e}")),
    }
}

/// The one test slot, held until the guard drops. A version this server does not speak, and
/// any test while another runs, are answered so and refused.
fn take_slot<'a>(s: &mut TcpStream, hello: &Hello, shared: &'a Shared) -> Result<BusyGuard<'a>, Outcome> {
    if !(proto::PLAIN_VERSION..=proto::VERSION).contains(&hello.version) {
        let _ = s.write_all(&answer(hello, Status::BadVersion, 0).encode());
        return Err(Outcome::Rejected(format!(
            "protocol version {} (this server speaks {})",
            hello.version,
            proto::VERSION
        )));
    }
    if shared.busy.swap(true, Ordering::SeqCst) {
        let _ = s.write_all(&answer(hello, Status::Busy, 0).encode());
        return Err(Outcome::Rejected("busy with another test".to_string()));
    }
    Ok(BusyGuard(shared))
}

/// The answer to `hello`, in the client's version where this server speaks it.
fn answer(hello: &Hello, status: Status, granted_ms: u32) -> Answer {
    Answer {
        version: hello.version.clamp(proto::PLAIN_VERSION, proto::VERSION),
        status,
        granted_ms,
    }
}

/// Grants the test: reads the receive buffer a path test wants, then answers with the time
/// granted. Returns that time (ms) and the buffer (bytes; 0 for a plain test or autotuning).
fn grant(s: &mut TcpStream, hello: &Hello) -> Result<(u32, u64), Outcome> {
    let granted_ms = hello.duration_ms.min(proto::MAX_DURATION_MS);
    let mut rcvbuf_wanted = [0u8; proto::PATH_TEST_EXTRA];
    if hello.path_test() {
        proto::read_exact_by(s, &mut rcvbuf_wanted, Instant::now() + HELLO_TIMEOUT)
            .map_err(|e| hello_refused(e, "path test: no buffer size after the hello".into()))?;
    }
    s.write_all(&answer(hello, Status::Ok, granted_ms).encode())
        .map_err(|e| Outcome::Aborted(format!("answering the hello: {e}")))?;
    Ok((granted_ms, u64::from_be_bytes(rcvbuf_wanted)))
}

/// What the receive loop counted.
struct Tally {
    bytes: u64,
    /// When the first payload byte came.
    first: Option<Instant>,
    /// The largest receive window this end advertised.
    rcv_wnd: Option<u64>,
    share: ShareSampler,
    /// When the window was last sampled.
    sampled: Instant,
}

impl Tally {
    fn new() -> Self {
        Self {
            bytes: 0,
            first: None,
            rcv_wnd: None,
            share: ShareSampler::default(),
            sampled: Instant::now(),
        }
    }

    /// Counts `n` bytes just read from `s`, sampling its advertised window now and then.
    fn add(&mut self, n: usize, s: &TcpStream, path_test: bool) {
        let now = Instant::now();
        self.first.get_or_insert(now);
        self.bytes += n as u64;
        // The path test samples more often: its window share is read at the peak.
        let every = Duration::from_millis(if path_test { 20 } else { 100 });
        if now.duration_since(self.sampled) >= every {
            self.sampled = now;
            let w = advertised_window(s);
            self.rcv_wnd = self.rcv_wnd.max(w);
            if path_test {
                self.share.sample(
                    w,
                    crate::tcp::sockopt::buffer(s, crate::tcp::sockopt::Buffer::Receive).ok(),
                );
            }
        }
    }
}

/// Reads the data until the client ends it: by the granted time plus [`DRAIN_GRACE`], with the
/// sender never silent for [`IDLE_TIMEOUT`].
fn receive(s: &mut TcpStream, granted_ms: u32, path_test: bool) -> Result<Tally, Outcome> {
    // The whole test, drain included, ends here however the data trickles in.
    let deadline = Instant::now() + Duration::from_millis(u64::from(granted_ms)) + DRAIN_GRACE;
    let mut buf = vec![0u8; 256 * 1024];
    let mut got = Tally::new();
    let mut timeout = Duration::ZERO;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(Outcome::Aborted(format!(
                "{} after {}",
                past_deadline(),
                text::bytes(got.bytes)
            )));
        }
        let wait = left.min(IDLE_TIMEOUT);
        if wait != timeout {
            s.set_read_timeout(Some(wait))
                .map_err(|e| Outcome::Aborted(format!("socket setup failed: {e}")))?;
            timeout = wait;
        }
        match s.read(&mut buf) {
            Ok(0) => return Ok(got),
            Ok(n) => got.add(n, s, path_test),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => {
                return Err(Outcome::Aborted(format!(
                    "{} after {}",
                    read_failed(&e, wait),
                    text::bytes(got.bytes)
                )));
            }
        }
    }
}

fn past_deadline() -> String {
    format!("not done {} s after the granted time", DRAIN_GRACE.as_secs())
}

/// Why a read that waited `wait` ended the test.
fn read_failed(e: &std::io::Error, wait: Duration) -> String {
    match e.kind() {
        // A wait cut short by the deadline timed out on the deadline, not on the sender.
        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut if wait < IDLE_TIMEOUT => past_deadline(),
        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut => {
            format!("the sender went silent for {} s", IDLE_TIMEOUT.as_secs())
        }
        _ => e.to_string(),
    }
}

/// Sends the client the result (with what this end says of its buffer) and words the test.
fn send_result(s: &mut TcpStream, facts: &BufferCap, got: &Tally) -> Outcome {
    let duration = got.first.map_or(Duration::ZERO, |f| f.elapsed());
    let result = ServerResult {
        bytes: got.bytes,
        duration_us: u64::try_from(duration.as_micros()).unwrap_or(u64::MAX),
        os: Foreign::new(facts.os.to_string()),
        rcvbuf_key: facts.key.clone().map(Foreign::new),
        rcvbuf_value: facts.value.clone().map(Foreign::new),
        rcv_wnd: got.rcv_wnd,
        rcv_buf: got.share.best.map(|(_, b)| b),
        window_share: got.share.best.map(|(s, _)| (s * 1000.0).round() / 1000.0),
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
        got.bytes as f64 * 8.0 / duration.as_secs_f64()
    };
    Outcome::Done(format!(
        "received {} in {:.2} s: {}",
        text::bytes(got.bytes),
        duration.as_secs_f64(),
        text::rate(bps)
    ))
}

/// The largest share of its receive buffer the receiver advertised as window.
#[derive(Debug, Default)]
struct ShareSampler {
    /// (window / buffer, buffer) at the largest share seen.
    best: Option<(f64, u64)>,
}

impl ShareSampler {
    fn sample(&mut self, window: Option<u64>, buffer: Option<u64>) {
        if let (Some(w), Some(b)) = (window, buffer.filter(|&b| b > 0)) {
            #[allow(clippy::cast_precision_loss)]
            let s = w as f64 / b as f64;
            if self.best.is_none_or(|(best, _)| s > best) {
                self.best = Some((s, b));
            }
        }
    }
}

/// The receive window this end advertises now (Linux 6.2+), bytes.
#[cfg(target_os = "linux")]
fn advertised_window(s: &TcpStream) -> Option<u64> {
    crate::tcp::tcpinfo::get(s)
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
    use crate::os::Os;

    /// A `once` server on loopback in a thread; its lines collected.
    type Lines = Arc<Mutex<Vec<String>>>;

    fn start_once() -> (SocketAddr, Lines, std::thread::JoinHandle<Result<(), Error>>) {
        let req = ServeRequest {
            bind: IpAddr::from([127, 0, 0, 1]),
            port: 0,
            once: true,
            max_buffer: proto::DEFAULT_MAX_BUFFER,
        };
        let server = Server::bind(&req).expect("bind");
        let addr = server.local_addr();
        assert_ne!(addr.port(), 0);
        let lines = Arc::new(Mutex::new(Vec::new()));
        let sink = Arc::clone(&lines);
        let log: Arc<dyn Log> = Arc::new(move |l: &str| sink.lock().expect("lock").push(l.to_string()));
        let run = std::thread::spawn(move || server.run(&|| BufferCap::receive(Os::Linux, None), log));
        (addr, lines, run)
    }

    #[test]
    fn a_once_server_refuses_junk_then_serves_one_test_and_returns() {
        let (addr, lines, run) = start_once();
        // Junk is refused and does not count as the one test.
        let mut junk = TcpStream::connect(addr).expect("connect");
        junk.write_all(b"GET / HTTP/1.1\r\n\r\n").expect("junk");
        let mut rest = Vec::new();
        let _ = junk.read_to_end(&mut rest);
        assert!(rest.is_empty(), "junk got an answer: {rest:?}");

        let mut s = TcpStream::connect(addr).expect("connect");
        s.set_read_timeout(Some(Duration::from_secs(10))).expect("timeout");
        let hello = Hello {
            version: proto::PLAIN_VERSION,
            flags: 0,
            duration_ms: 120_000,
        };
        s.write_all(&hello.encode()).expect("hello");
        let mut frame = [0u8; proto::HELLO_LEN];
        s.read_exact(&mut frame).expect("answer");
        let answer = Answer::decode(&frame).expect("an answer");
        assert_eq!(answer.status, Status::Ok);
        // Asked for 120 s, granted the most a test may last.
        assert_eq!(answer.granted_ms, proto::MAX_DURATION_MS);
        s.write_all(&[7u8; 100_000]).expect("data");
        s.shutdown(Shutdown::Write).expect("done sending");
        let mut result = String::new();
        s.read_to_string(&mut result).expect("result");
        let r: ServerResult = serde_json::from_str(result.trim_end()).expect("result JSON");
        assert_eq!(r.bytes, 100_000);
        assert_eq!(r.os.raw(), "linux");
        assert_eq!(r.rcvbuf_value, None, "no backend, no value");

        run.join().expect("server thread").expect("the one test ran to its end");
        let lines = lines.lock().expect("lock").clone();
        assert!(
            lines
                .iter()
                .any(|l| l.ends_with("closed: not a tcptune peer (bad magic [47, 45, 54, 20, 2f, 20, 48, 54])")),
            "{lines:#?}"
        );
        assert!(
            lines
                .iter()
                .any(|l| l.starts_with(&s.local_addr().expect("addr").to_string())
                    && l.contains(": received 100000 bytes (97.66 KiB) in ")),
            "{lines:#?}"
        );
        // The command adds the program name; the server's lines do not carry it.
        assert!(lines.iter().all(|l| !l.starts_with("tcptune")), "{lines:#?}");
    }

    #[test]
    fn a_second_bind_on_the_same_port_says_why() {
        let taken = TcpListener::bind("127.0.0.1:0").expect("bind");
        let addr = taken.local_addr().expect("addr");
        let req = ServeRequest {
            bind: addr.ip(),
            port: addr.port(),
            once: true,
            max_buffer: proto::DEFAULT_MAX_BUFFER,
        };
        match Server::bind(&req) {
            Err(BindError::Listen { addr: a, source }) => {
                assert_eq!(a, addr);
                assert_eq!(source.kind(), std::io::ErrorKind::AddrInUse);
            }
            other => panic!("{other:?}"),
        }
    }

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
