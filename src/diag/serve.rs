//! The far end of `tcptune verify` and of `advise --host`'s path test (protocol in
//! [`crate::tcp::proto`]): the accept loop, a thread per connection, the deadlines that bound
//! every wait, the limit on connections still owing their hello, and the rate limit on lines
//! about refused clients. No printing: lines go to the caller's [`Log`], and what to tell a
//! user about a failed bind is the caller's.
//!
//! It receives the plain test of `verify` and the forward path test, and sends the reverse
//! path test (version 3) with the same sender the client of a forward test runs
//! ([`crate::tcp::flow`]), reporting its readings back.
//!
//! One test at a time: a second client while one runs is answered "busy". Each test is granted
//! at most [`proto::MAX_DURATION_MS`]. The accept loop never reads from a client: each
//! connection gets its own thread, and every wait has a deadline for the whole phase, not for
//! one read, so a client sending a byte now and then cannot stretch it:
//! * the hello must be complete [`HELLO_TIMEOUT`] after the connect;
//! * the data is counted until its end or [`proto::ARRIVAL_GRACE`] after the granted time,
//!   and reported as it was by then; a sender silent for [`IDLE_TIMEOUT`] loses the test
//!   earlier. An older client's backlog is taken (and dropped) for up to [`DRAIN_GRACE`] after
//!   the granted time so its connection ends cleanly;
//! * a path test's buffer (the receive buffer of a forward test, the send buffer of a reverse
//!   one) is forced to what the client asked for, but never past the request's `max_buffer`
//!   (`serve --max-buffer`): an anonymous client cannot make a root server pin more kernel
//!   memory than that;
//! * at most [`MAX_PENDING`] connections may owe their hello; one more closes the oldest, so
//!   half-sent hellos push out only each other while a real client's hello, sent with its
//!   connect, is read at once.
//!
//! Lines about refused or misbehaving clients are limited to [`LOG_LINES_PER_SEC`] a second,
//! the rest counted in one summary line.

use std::collections::VecDeque;
use std::io::Write as _;
use std::net::{IpAddr, Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex, PoisonError, mpsc};
use std::time::{Duration, Instant};

use super::BufferCap;
use crate::error::Error;
use crate::tcp::flow::{self, ReceiveError, Received};
use crate::tcp::proto::{self, Answer, Hello, ReadError, ReverseAsk, SenderResult, ServerResult, Status};
use crate::text::{self, Foreign};

/// How long a new connection has, in all, to send its 16-byte hello.
pub const HELLO_TIMEOUT: Duration = Duration::from_secs(5);
/// How long a test's sender may go silent (the protocol's, which the client of a reverse test
/// applies to serve's data too).
pub const IDLE_TIMEOUT: Duration = proto::IDLE_TIMEOUT;
/// The longest a test's connection lasts past its granted time ([`proto::DRAIN_GRACE`]).
pub const DRAIN_GRACE: Duration = proto::DRAIN_GRACE;
/// Connections that may owe their hello at once.
pub const MAX_PENDING: usize = 32;
/// Lines about refused or misbehaving clients shown per second.
pub const LOG_LINES_PER_SEC: u32 = 10;
/// How often the accept loop, with nothing to accept, looks for the last test's end and asks
/// whether to stop.
const POLL: Duration = Duration::from_millis(20);

/// The server to run.
#[derive(Debug, Clone, Copy)]
pub struct ServeRequest {
    /// The address to listen on (`::` for IPv6 and IPv4).
    pub bind: IpAddr,
    /// The TCP port; 0: any free port.
    pub port: u16,
    /// Return after this many tests (a client that never got as far as a test does not
    /// count); None: serve until stopped. `serve --once` is 1, `peer` 2 by default.
    pub tests: Option<u32>,
    /// The largest buffer a path test may have forced, as the kernel reports it (SO_RCVBUF or
    /// SO_SNDBUF), bytes ([`proto::DEFAULT_MAX_BUFFER`] by default).
    pub max_buffer: u64,
}

/// What this end tells a client of its buffers: the receive buffer's cap after a test it
/// received, the send buffer's after one it sent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EndFacts {
    pub receive: BufferCap,
    pub send: BufferCap,
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
    tests: Option<u32>,
    max_buffer: u64,
}

/// State the accept loop and the connection threads share.
struct Shared {
    busy: AtomicBool,
    /// The most tests to serve: after the last one the slot stays taken, so no further test
    /// starts in the moment before the server returns.
    tests: Option<u32>,
    /// Tests that took the slot so far.
    started: AtomicU32,
    /// The largest buffer a path test may have forced (kernel's count), bytes.
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
    fn new(tests: Option<u32>, max_buffer: u64, sink: Arc<dyn Log>) -> Self {
        Self {
            busy: AtomicBool::new(false),
            tests,
            started: AtomicU32::new(0),
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

/// Clears the busy flag however a test ends (but after the last test a server serves).
struct BusyGuard<'a>(&'a Shared);

impl Drop for BusyGuard<'_> {
    fn drop(&mut self) {
        let last = self.0.tests.is_some_and(|n| self.0.started.load(Ordering::SeqCst) >= n);
        if !last {
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
        // Non-blocking, so that with nothing to accept the loop can notice the end of its last
        // test, or that it is to stop.
        listener.set_nonblocking(true).map_err(BindError::Setup)?;
        Ok(Self {
            listener,
            addr,
            tests: req.tests,
            max_buffer: req.max_buffer,
        })
    }

    /// The address it listens on, the port chosen when 0 was asked for.
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// Serves tests until the process ends, or until the request's number of tests has ended:
    /// Ok when they ran to their end, a measurement error when one broke off. `facts` says
    /// what this end tells each client about its buffers, called again for each test (the
    /// sysctls may change between tests); lines go to `log`.
    pub fn run(self, facts: &dyn Fn() -> EndFacts, log: Arc<dyn Log>) -> Result<(), Error> {
        self.run_until(facts, log, &|| false)
    }

    /// [`Server::run`], returning Ok as soon as `stop()` says so (it is asked every 20 ms):
    /// a test still running is left to the process's end.
    pub fn run_until(
        self,
        facts: &dyn Fn() -> EndFacts,
        log: Arc<dyn Log>,
        stop: &dyn Fn() -> bool,
    ) -> Result<(), Error> {
        let shared = Arc::new(Shared::new(self.tests, self.max_buffer, log));
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
        let r = self.accept_loop(facts, &shared, stop);
        shared.stopped.store(true, Ordering::SeqCst);
        r
    }

    fn accept_loop(
        &self,
        facts: &dyn Fn() -> EndFacts,
        shared: &Arc<Shared>,
        stop: &dyn Fn() -> bool,
    ) -> Result<(), Error> {
        // Tests that ended, when their number is bounded.
        let (ended_tx, ended) = mpsc::channel::<(String, Outcome)>();
        let mut count = Ended::default();
        loop {
            if stop() {
                return Ok(());
            }
            let stream = match self.listener.accept() {
                Ok((s, _)) => s,
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                    if let Ok((who, outcome)) = ended.recv_timeout(POLL)
                        && let Some(done) = count.add(self.tests, &who, &outcome)
                    {
                        return done;
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
            let facts = facts();
            let worker = Arc::clone(shared);
            let ended_tx = ended_tx.clone();
            let counted = self.tests.is_some();
            let who2 = who.clone();
            let spawned = std::thread::Builder::new().name("serve-conn".into()).spawn(move || {
                let outcome = handle(stream, id, &worker, &facts);
                worker.log(&who2, &outcome);
                if counted && !matches!(outcome, Outcome::Rejected(_)) {
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

/// The tests that ended, for a server that serves a number of them.
#[derive(Default)]
struct Ended {
    n: u32,
    /// The last one that broke off: who, and why.
    broke_off: Option<(String, String)>,
}

impl Ended {
    /// Counts one; once `tests` have ended, what the server returns: Ok when every one ran to
    /// its end, else the last that broke off.
    fn add(&mut self, tests: Option<u32>, who: &str, outcome: &Outcome) -> Option<Result<(), Error>> {
        self.n += 1;
        if let Outcome::Aborted(why) = outcome {
            self.broke_off = Some((who.to_string(), why.clone()));
        }
        if tests.is_none_or(|n| self.n < n) {
            return None;
        }
        Some(match &self.broke_off {
            Some((who, why)) => Err(Error::measurement(format!("the test from {who} broke off: {why}"))),
            None => Ok(()),
        })
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

/// The buffer a path test's data connection gets on this end, forced to what the client asked
/// for (bytes; 0: autotuning).
#[derive(Debug, Clone, Copy)]
enum Want {
    /// A forward test: this end receives.
    Receive(u64),
    /// A reverse test: this end sends.
    Send(u64),
}

/// Opens the data listener of a path test on the address the client reached, with the buffer
/// it asked for set before any handshake (so the window scale allows all of a receive
/// buffer; an accepted socket keeps its listener's buffers), tells the client its port, and
/// takes one connection from the client's address.
fn open_data_channel(control: &mut TcpStream, want: Want, max_buffer: u64) -> Result<TcpStream, String> {
    use crate::tcp::sockopt::{self, Buffer};
    let local = control.local_addr().map_err(|e| format!("socket setup failed: {e}"))?;
    let client = control.peer_addr().map_err(|e| format!("socket setup failed: {e}"))?;
    let listener = TcpListener::bind(SocketAddr::new(local.ip(), 0)).map_err(|e| format!("no data listener: {e}"))?;
    let (which, wanted) = match want {
        Want::Receive(b) => (Buffer::Receive, b),
        Want::Send(b) => (Buffer::Send, b),
    };
    // Forced or left to autotuning: a plain SO_RCVBUF would cap it at rmem_max. Never past
    // max_buffer: the client is anonymous, the memory this end's.
    let ask = proto::forced_buffer_ask(wanted, max_buffer);
    let forced = if ask > 0 {
        sockopt::force_buffer(&listener, which, ask).map_err(|e| format!("setting the buffer: {e}"))?
    } else {
        None
    };
    let port = listener
        .local_addr()
        .map_err(|e| format!("socket setup failed: {e}"))?
        .port();
    let size = forced.unwrap_or(0);
    let channel = match want {
        Want::Receive(_) => proto::DataChannel {
            port,
            rcvbuf: size,
            forced: forced.is_some(),
            sndbuf: 0,
        },
        Want::Send(_) => proto::DataChannel {
            port,
            rcvbuf: 0,
            forced: forced.is_some(),
            sndbuf: size,
        },
    };
    let mut line = serde_json::to_string(&channel).unwrap_or_default();
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
fn handle(s: TcpStream, id: u64, shared: &Shared, facts: &EndFacts) -> Outcome {
    match serve_test(s, id, shared, facts) {
        Ok(done) => done,
        Err(ended) => ended,
    }
}

/// One connection's steps: its hello, the answer, a path test's data channel, the data, the
/// result. Err: how it ended early.
fn serve_test(mut s: TcpStream, id: u64, shared: &Shared, facts: &EndFacts) -> Result<Outcome, Outcome> {
    let hello = read_client_hello(&mut s, id, shared)?;
    let _busy = take_slot(&mut s, &hello, shared)?;
    let (granted, extra) = grant(&mut s, &hello)?;
    if hello.reverse() {
        let mut f = [0u8; proto::REVERSE_EXTRA];
        f.copy_from_slice(&extra);
        return send_test(s, &ReverseAsk::decode(&f), granted, shared, facts);
    }
    if hello.path_test() {
        let mut f = [0u8; proto::PATH_TEST_EXTRA];
        f.copy_from_slice(&extra);
        // The control connection closes here: the data connection carries the rest.
        s = open_data_channel(&mut s, Want::Receive(u64::from_be_bytes(f)), shared.max_buffer)
            .map_err(|why| Outcome::Aborted(format!("path test: {why}")))?;
    }
    let start = Instant::now();
    let got = receive(&s, start, granted, hello.path_test())?;
    Ok(send_result(&mut s, &facts.receive, &got, start + granted + DRAIN_GRACE))
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
    shared.started.fetch_add(1, Ordering::SeqCst);
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

/// Grants the test: reads what a path test asks after its hello (the buffer wanted; a reverse
/// test's [`ReverseAsk`]), then answers with the time granted. Returns that time and those
/// bytes (none for a plain test).
fn grant(s: &mut TcpStream, hello: &Hello) -> Result<(Duration, Vec<u8>), Outcome> {
    let granted_ms = hello.duration_ms.min(proto::MAX_DURATION_MS);
    let mut extra = vec![0u8; hello.extra_len()];
    if !extra.is_empty() {
        proto::read_exact_by(s, &mut extra, Instant::now() + HELLO_TIMEOUT)
            .map_err(|e| hello_refused(e, "path test: not all it asks came after the hello".into()))?;
    }
    s.write_all(&answer(hello, Status::Ok, granted_ms).encode())
        .map_err(|e| Outcome::Aborted(format!("answering the hello: {e}")))?;
    Ok((Duration::from_millis(u64::from(granted_ms)), extra))
}

/// Reads the data until the client ends it or the cutoff ([`proto::receive_cutoff`]: what
/// came by then is the result), with the sender never silent for [`IDLE_TIMEOUT`].
fn receive(s: &TcpStream, start: Instant, granted: Duration, path_test: bool) -> Result<Received, Outcome> {
    let cutoff = proto::receive_cutoff(start, granted);
    flow::receive(s, cutoff, IDLE_TIMEOUT, path_test, &mut |_| {}).map_err(|(got, e)| {
        let why = match e {
            ReceiveError::Silent(d) => format!("the sender went silent for {} s", d.as_secs()),
            ReceiveError::Io(e) => e.to_string(),
        };
        Outcome::Aborted(format!("{why} after {}", text::bytes(got.bytes)))
    })
}

/// Sends the client the result (with what this end says of its buffer) and words the test.
/// A test cut at its cutoff takes the rest of the sender's data, dropped, until `drain_by`,
/// so the connection ends with the sender's FIN rather than a reset.
fn send_result(s: &mut TcpStream, cap: &BufferCap, got: &Received, drain_by: Instant) -> Outcome {
    let duration = got.duration();
    let result = ServerResult {
        bytes: got.bytes,
        duration_us: u64::try_from(duration.as_micros()).unwrap_or(u64::MAX),
        os: Foreign::new(cap.os.to_string()),
        rcvbuf_key: cap.key.clone().map(Foreign::new),
        rcvbuf_value: cap.value.clone().map(Foreign::new),
        rcv_wnd: got.rcv_wnd,
        rcv_buf: got.share.map(|(_, b)| b),
        window_share: got.window_share(),
    };
    let mut line = serde_json::to_string(&result).unwrap_or_default();
    line.push('\n');
    if let Err(e) = s.write_all(line.as_bytes()) {
        return Outcome::Aborted(format!("sending the result: {e}"));
    }
    let _ = s.shutdown(std::net::Shutdown::Write);
    if got.cut {
        flow::drain(s, drain_by);
    }
    Outcome::Done(format!(
        "received {} in {:.2} s: {}{}",
        text::bytes(got.bytes),
        duration.as_secs_f64(),
        text::rate(rate(got.bytes, duration)),
        if got.cut {
            format!(
                " (counted until {} s after the granted time; the sender's data was still arriving)",
                proto::ARRIVAL_GRACE.as_secs()
            )
        } else {
            String::new()
        }
    ))
}

/// bytes × 8 / time, bit/s; 0 for no time.
fn rate(bytes: u64, t: Duration) -> f64 {
    #[allow(clippy::cast_precision_loss)]
    if t.is_zero() {
        0.0
    } else {
        bytes as f64 * 8.0 / t.as_secs_f64()
    }
}

/// The congestion control serve's sender runs a reverse test with when the client names none:
/// the test's design is BBR's (see [`crate::tcp::flow`]).
const REVERSE_CC: &str = "bbr";

/// A reverse path test (version 3): this end sends for the granted time with the path test's
/// sender, then reports its readings on the control connection, and holds the slot until the
/// client has taken the data and the result (it closes the control connection then).
fn send_test(
    mut control: TcpStream,
    ask: &ReverseAsk,
    granted: Duration,
    shared: &Shared,
    facts: &EndFacts,
) -> Result<Outcome, Outcome> {
    let data = open_data_channel(&mut control, Want::Send(ask.sndbuf), shared.max_buffer)
        .map_err(|why| Outcome::Aborted(format!("reverse path test: {why}")))?;
    let setup = flow::set_up_sender(&data, Some(ask.cc.as_deref().unwrap_or(REVERSE_CC)), 0);
    let sent = flow::send(&data, granted, ask.max_bytes, !ask.full, &mut |_| {}).map_err(|(n, e)| {
        Outcome::Aborted(format!(
            "reverse path test: sending broke off after {}: {e}",
            text::bytes(n)
        ))
    })?;
    let _ = data.shutdown(Shutdown::Write);
    let result = SenderResult {
        bytes: sent.bytes,
        duration_us: u64::try_from(sent.elapsed.as_micros()).unwrap_or(u64::MAX),
        os: Foreign::new(facts.send.os.to_string()),
        sndbuf_key: facts.send.key.clone().map(Foreign::new),
        sndbuf_value: facts.send.value.clone().map(Foreign::new),
        cc: setup.cc.map(Foreign::new),
        flow: sent.reading,
    };
    let mut line = serde_json::to_string(&result).unwrap_or_default();
    line.push('\n');
    control
        .set_write_timeout(Some(proto::RESULT_SLACK))
        .and_then(|()| control.write_all(line.as_bytes()))
        .map_err(|e| Outcome::Aborted(format!("reverse path test: sending the result: {e}")))?;
    // The client reads the result once its data has come (at most ARRIVAL_GRACE after the
    // granted time), then closes: until then the next test would share the path with it.
    flow::drain(&control, Instant::now() + proto::ARRIVAL_GRACE + proto::RESULT_SLACK);
    Ok(Outcome::Done(format!(
        "sent {} in {:.2} s: {} (reverse path test)",
        text::bytes(sent.bytes),
        sent.elapsed.as_secs_f64(),
        text::rate(rate(sent.bytes, sent.elapsed))
    )))
}

#[cfg(test)]
mod tests {
    use std::io::Read as _;

    use super::*;
    use crate::os::Os;

    /// A server of `tests` tests on loopback in a thread; its lines collected.
    type Lines = Arc<Mutex<Vec<String>>>;

    fn facts() -> EndFacts {
        EndFacts {
            receive: BufferCap::receive(Os::Linux, None),
            send: BufferCap::send(Os::Linux, None),
        }
    }

    fn start_once() -> (SocketAddr, Lines, std::thread::JoinHandle<Result<(), Error>>) {
        start(Some(1))
    }

    fn start(tests: Option<u32>) -> (SocketAddr, Lines, std::thread::JoinHandle<Result<(), Error>>) {
        let req = ServeRequest {
            bind: IpAddr::from([127, 0, 0, 1]),
            port: 0,
            tests,
            max_buffer: proto::DEFAULT_MAX_BUFFER,
        };
        let server = Server::bind(&req).expect("bind");
        let addr = server.local_addr();
        assert_ne!(addr.port(), 0);
        let lines = Arc::new(Mutex::new(Vec::new()));
        let sink = Arc::clone(&lines);
        let log: Arc<dyn Log> = Arc::new(move |l: &str| sink.lock().expect("lock").push(l.to_string()));
        let run = std::thread::spawn(move || server.run(&facts, log));
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
                    && l.contains(": received 100000 bytes (97.7 KiB) in ")),
            "{lines:#?}"
        );
        // The command adds the program name; the server's lines do not carry it.
        assert!(lines.iter().all(|l| !l.starts_with("tcptune")), "{lines:#?}");
    }

    /// The hello of a path test in `version` (forward), its answer, the data port, 1 MB of data
    /// and the result: what a version-2 client does.
    fn forward_path_test(addr: SocketAddr, version: u16) -> ServerResult {
        let mut c = TcpStream::connect(addr).expect("connect");
        c.set_read_timeout(Some(Duration::from_secs(10))).expect("timeout");
        let hello = Hello {
            version,
            flags: proto::FLAG_PATH_TEST,
            duration_ms: 2000,
        };
        let mut out = hello.encode().to_vec();
        out.extend_from_slice(&0u64.to_be_bytes());
        c.write_all(&out).expect("hello");
        let mut frame = [0u8; proto::HELLO_LEN];
        c.read_exact(&mut frame).expect("answer");
        let a = Answer::decode(&frame).expect("an answer");
        assert_eq!((a.version, a.status), (version, Status::Ok));
        let ch: proto::DataChannel =
            proto::read_json_line(&c, proto::MAX_CHANNEL_LINE, Instant::now() + Duration::from_secs(5))
                .expect("channel");
        let mut d = TcpStream::connect((addr.ip(), ch.port)).expect("data");
        d.write_all(&[5u8; 1_000_000]).expect("data");
        d.shutdown(Shutdown::Write).expect("end");
        let mut line = String::new();
        d.read_to_string(&mut line).expect("result");
        serde_json::from_str(line.trim_end()).expect("a result line")
    }

    /// A version-2 path-test client against this (version-3) server: served as before.
    #[test]
    fn a_version_2_client_is_served() {
        let (addr, _lines, run) = start_once();
        let r = forward_path_test(addr, 2);
        assert_eq!(r.bytes, 1_000_000);
        run.join().expect("server thread").expect("the test ran to its end");
    }

    /// A hello in a version this server does not speak is answered in its own newest, so the
    /// client can ask again in that one; it takes no test slot.
    #[test]
    fn a_newer_client_learns_this_servers_version() {
        let (addr, _lines, run) = start_once();
        let mut c = TcpStream::connect(addr).expect("connect");
        let hello = Hello {
            version: 9,
            flags: proto::FLAG_PATH_TEST,
            duration_ms: 1000,
        };
        c.write_all(&hello.encode()).expect("hello");
        let mut frame = [0u8; proto::HELLO_LEN];
        c.read_exact(&mut frame).expect("answer");
        let a = Answer::decode(&frame).expect("an answer");
        assert_eq!((a.version, a.status), (proto::VERSION, Status::BadVersion));
        // Still free for its one test.
        assert_eq!(forward_path_test(addr, proto::VERSION).bytes, 1_000_000);
        run.join().expect("server thread").expect("ended");
    }

    /// A server of two tests returns after the second; a stop request ends one at once.
    #[test]
    fn a_server_serves_its_number_of_tests_or_stops_when_told() {
        let (addr, lines, run) = start(Some(2));
        forward_path_test(addr, proto::VERSION);
        std::thread::sleep(Duration::from_millis(100));
        assert!(!run.is_finished(), "{:?}", lines.lock().expect("lock"));
        forward_path_test(addr, 2);
        run.join().expect("server thread").expect("both ran to their end");

        let server = Server::bind(&ServeRequest {
            bind: IpAddr::from([127, 0, 0, 1]),
            port: 0,
            tests: None,
            max_buffer: 0,
        })
        .expect("bind");
        let stop = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&stop);
        let log: Arc<dyn Log> = Arc::new(|_: &str| {});
        let t = Instant::now();
        let run = std::thread::spawn(move || server.run_until(&facts, log, &|| flag.load(Ordering::SeqCst)));
        std::thread::sleep(Duration::from_millis(100));
        stop.store(true, Ordering::SeqCst);
        run.join().expect("server thread").expect("stopped");
        assert!(t.elapsed() < Duration::from_secs(2), "{:?}", t.elapsed());
    }

    /// A sender that outlasts its granted time is counted until the cutoff, and the result
    /// says what came by then; the test is not aborted.
    #[test]
    fn a_backlog_past_the_cutoff_is_measured_not_waited_for() {
        let (got, cut) = {
            let l = TcpListener::bind("127.0.0.1:0").expect("bind");
            let mut tx = TcpStream::connect(l.local_addr().expect("addr")).expect("connect");
            let (mut rx, _) = l.accept().expect("accept");
            let writer = std::thread::spawn(move || {
                // Granted 0 s: the cutoff is ARRIVAL_GRACE from the start, and this sender
                // goes on a second past it.
                let t = Instant::now();
                while t.elapsed() < proto::ARRIVAL_GRACE + Duration::from_secs(1) {
                    if tx.write_all(&[1u8; 4096]).is_err() {
                        return;
                    }
                    std::thread::sleep(Duration::from_millis(20));
                }
                let _ = tx.shutdown(Shutdown::Write);
                let mut line = String::new();
                let _ = tx.read_to_string(&mut line);
            });
            let start = Instant::now();
            let got = receive(&rx, start, Duration::ZERO, false).expect("counted");
            let took = start.elapsed();
            // Cut (asserted below), not waited for: the grace and room for this VM's stalls.
            assert!(took < 6 * proto::ARRIVAL_GRACE, "{took:?}");
            let cut = got.cut;
            let done = send_result(&mut rx, &facts().receive, &got, Instant::now() + Duration::from_secs(5));
            writer.join().expect("writer");
            (done, cut)
        };
        assert!(cut);
        assert!(
            matches!(&got, Outcome::Done(w) if w.contains("counted until 5 s after the granted time")),
            "{got:?}"
        );
    }

    #[test]
    fn a_second_bind_on_the_same_port_says_why() {
        let taken = TcpListener::bind("127.0.0.1:0").expect("bind");
        let addr = taken.local_addr().expect("addr");
        let req = ServeRequest {
            bind: addr.ip(),
            port: addr.port(),
            tests: Some(1),
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
