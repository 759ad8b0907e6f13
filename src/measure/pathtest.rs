//! The TCP path test of `advise --host` against `tcptune serve` on the far end (protocol
//! version 3, [`crate::tcp::proto`]), in each direction:
//! * forward ([`run`]): this host sends, serve receives; this end's sender reads its flow;
//! * reverse ([`run_reverse`]): serve sends, this host receives; serve's sender reads its flow
//!   and reports it, this end counts what came and reads its own window share.
//!
//! Both run the same sender ([`crate::tcp::flow`]: BBR where the kernel allows it, unpaced
//! startup, then paced at 0.8 × its rate, TCP_INFO sampled, the unsent data bounded) and turn
//! it into a [`TcpTest`]: delivery rate, retransmitted share after startup, RTT growth under
//! load, what held the flow, and the receiver's window share.
//!
//! The test is not limited by today's buffers where it can help it: the caller passes the
//! buffer that the highest rate evidence needs; as root the sending end forces its send buffer
//! to it and the receiving end its receive buffer (past the sysctl maxima, before the
//! handshake so the window scale allows it). As a normal user (or against a serve not running
//! as root) the flow runs within the running maxima; a flow then held by a buffer says so
//! ([`TcpTest::window_limited`], [`TcpTest::held_by`]) with a note naming which end's buffer
//! held it and what to raise there.
//!
//! # Versions
//! A version-2 serve answers the version-3 hello with its version: the forward test is asked
//! again in version 2, and the reverse test is skipped with that reason.
//!
//! # Deadlines and trust
//! The far end is not trusted ([`crate::tcp::proto`]'s Trust section). Each phase runs under a
//! deadline this end computes: the connect within the request's `connect_timeout`; the
//! answer, the data port and the data connection within [`proto::ANSWER_SLACK`] of the
//! connect; the data for the test time asked for (a server granting more cannot lengthen it);
//! the result within [`proto::result_deadline`] of the forward data, or — reverse — the data
//! counted until [`proto::ARRIVAL_GRACE`] after the granted time and the sender's result
//! [`proto::RESULT_SLACK`] after that. A buffer this end forces is bounded by what the request
//! asks, by [`proto::DEFAULT_MAX_BUFFER`] and by what the far end forced for its end. The
//! peer's numbers are checked against what this end sent or received, and a test that moved
//! nothing or reads out of any range a TCP flow has is no test: [`TestError::Failed`].
//!
//! # Platform specific behavior
//! Without TCP_INFO (FreeBSD, macOS) the forward test gives only the goodput and the
//! receiver's readings; the reverse test gives the goodput and serve's sender readings (when
//! serve runs on Linux), but no window share of this end and no forced receive buffer.

use std::net::{IpAddr, SocketAddr, TcpStream};
use std::time::{Duration, Instant};

use super::evidence::{Direction, HeldBy, TcpTest, TestPeer};
use crate::tcp::flow::{self, Reading, ReceiveError, Received};
use crate::tcp::proto::{
    self, DataChannel, ExchangeError, Hello, LineError, ReadError, ReceivedFacts, ReverseAsk, SenderResult, SentFacts,
    ServerResult,
};
use crate::tcp::tcpinfo::LimitedBy;
use crate::text;

/// Default bounds of a test: time and bytes, whichever comes first.
pub const DEFAULT_TIME: Duration = Duration::from_secs(10);
pub const DEFAULT_MAX_BYTES: u64 = 2 << 30;
/// The congestion control a reverse test asks the far end for when the request names none:
/// the test's design is BBR's ([`crate::tcp::flow`]), and the far end's kernel may have it
/// where this one does not.
const REVERSE_CC: &str = "bbr";

/// The test to run.
#[derive(Debug, Clone)]
pub struct PathTestRequest {
    pub addr: IpAddr,
    pub port: u16,
    /// At most this long...
    pub time: Duration,
    /// ... and at most this many payload bytes.
    pub max_bytes: u64,
    /// The socket buffer each end should have (for the highest rate the evidence allows),
    /// bytes; 0: leave autotuning.
    pub buffer: u64,
    /// The congestion control to run the test flow with, where the kernel allows it.
    pub cc: Option<String>,
    /// How long to wait for the connection: the far end may not run `tcptune serve`.
    pub connect_timeout: Duration,
    /// End each direction once its sender's reading is made ([`flow::reading_made`]), not at
    /// its time (`--thorough` turns it off).
    pub stop_early: bool,
}

/// Why no test result came back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TestError {
    /// Nothing that speaks the protocol answered (refused, timed out, another program, an
    /// older tcptune): the advice goes on without a test.
    NoPeer(String),
    /// A peer answered but the test failed.
    Failed(String),
}

impl std::fmt::Display for TestError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::NoPeer(s) | Self::Failed(s) => f.write_str(s),
        }
    }
}

fn no_peer(what: String) -> TestError {
    TestError::NoPeer(what)
}

fn failed(sa: SocketAddr, what: String) -> TestError {
    TestError::Failed(format!("{sa}: {what}"))
}

/// Why the hello exchange gave no test: a server older than the hello (which answered in its
/// own version), or anything else, worded.
enum Refusal {
    Older(u16),
    Test(TestError),
}

/// Why `sa` gave no path test: most of it means no tcptune serve there, and the advice goes on
/// without the test.
fn refused(sa: SocketAddr, asked: u16, e: ExchangeError) -> Refusal {
    Refusal::Test(match e {
        ExchangeError::Send(e) => no_peer(format!("{sa} closed the connection ({e})")),
        ExchangeError::NoAnswer(ReadError::Late) => no_peer(format!(
            "{sa} gave no complete tcptune answer within {} s",
            proto::ANSWER_SLACK.as_secs()
        )),
        ExchangeError::NoAnswer(e) => no_peer(format!("{sa} gave no tcptune answer ({e})")),
        ExchangeError::Garbled(e) => no_peer(format!("{sa}: {e}")),
        ExchangeError::Busy => TestError::Failed(format!("{sa}: busy with another test")),
        ExchangeError::BadVersion(theirs) if theirs < asked => return Refusal::Older(theirs),
        ExchangeError::BadVersion(theirs) => no_peer(format!(
            "{sa} answered in tcptune protocol {theirs}, which this tcptune does not speak"
        )),
    })
}

/// The control connection after its hello exchange.
struct Control {
    s: TcpStream,
    /// The time to send (or to receive) for: what the server granted, never more than asked.
    granted: Duration,
    channel: DataChannel,
    /// When the data connection must be up: the answer's deadline, [`proto::ANSWER_SLACK`]
    /// after the connect.
    connect_by: Instant,
}

/// Connects, sends `hello` with `extra`, and reads the answer and the data port.
fn open_control(req: &PathTestRequest, sa: SocketAddr, hello: &Hello, extra: &[u8]) -> Result<Control, Refusal> {
    let test = Refusal::Test;
    let c = TcpStream::connect_timeout(&sa, req.connect_timeout)
        .map_err(|e| test(no_peer(format!("no tcptune serve on {sa} ({e})"))))?;
    let connect_by = Instant::now() + proto::ANSWER_SLACK;
    c.set_write_timeout(Some(proto::ANSWER_SLACK))
        .map_err(|e| test(failed(sa, format!("socket setup failed: {e}"))))?;
    let granted = proto::exchange_hello(&c, hello, extra, connect_by).map_err(|e| refused(sa, hello.version, e))?;
    let channel: DataChannel = proto::read_json_line(&c, proto::MAX_CHANNEL_LINE, connect_by).map_err(|e| {
        test(match e {
            LineError::Read(ReadError::Late) => failed(
                sa,
                format!("no complete data port within {} s", proto::ANSWER_SLACK.as_secs()),
            ),
            LineError::Read(e) => failed(sa, format!("no data port ({e})")),
            LineError::Json(e) => failed(sa, format!("sent a data port tcptune cannot read ({e})")),
        })
    })?;
    channel.check().map_err(|e| test(failed(sa, e.to_string())))?;
    Ok(Control {
        s: c,
        granted,
        channel,
        connect_by,
    })
}

/// The time left to connect the data connection, or why there is none.
fn left_to_connect(sa: SocketAddr, connect_by: Instant) -> Result<Duration, TestError> {
    let left = connect_by.saturating_duration_since(Instant::now());
    if left.is_zero() {
        return Err(failed(
            sa,
            format!(
                "no time left to connect the data connection within {} s",
                proto::ANSWER_SLACK.as_secs()
            ),
        ));
    }
    Ok(left)
}

/// A test's start: its bounds and where it ran.
fn new_test(req: &PathTestRequest, sa: SocketAddr, direction: Direction) -> TcpTest {
    TcpTest {
        peer: Some(TestPeer::Tcptune),
        direction,
        addr: sa.to_string(),
        limit_s: req.time.as_secs_f64(),
        limit_bytes: req.max_bytes,
        ..TcpTest::default()
    }
}

// ------------------------------------------------------------------------------ forward

/// The forward test, this host sending; `on_progress` gets a [`flow::Tick`] a few times a
/// second.
pub fn run(req: &PathTestRequest, on_progress: &mut dyn FnMut(flow::Tick)) -> Result<TcpTest, TestError> {
    let sa = SocketAddr::new(req.addr, req.port);
    let hello = |version| Hello {
        version,
        flags: proto::FLAG_PATH_TEST,
        duration_ms: proto::duration_ms(req.time),
    };
    let extra = req.buffer.to_be_bytes();
    let control = match open_control(req, sa, &hello(proto::VERSION), &extra) {
        // A version-2 serve: the forward test is the same in its version.
        Err(Refusal::Older(v)) if v >= proto::PATH_TEST_VERSION => open_control(req, sa, &hello(v), &extra),
        other => other,
    }
    .map_err(|r| match r {
        Refusal::Older(v) => no_peer(format!(
            "{sa} runs an older tcptune serve (protocol {v}): update it for the path test"
        )),
        Refusal::Test(e) => e,
    })?;
    let mut test = new_test(req, sa, Direction::Forward);
    if req.buffer > 0 && !control.channel.forced {
        test.notes.push(format!(
            "the far end could not force its receive buffer to {} (its tcptune serve does not run as root, or runs with --max-buffer 0): the test ran within its net.ipv4.tcp_rmem",
            text::bytes(req.buffer)
        ));
    }
    let (s, granted) = open_forward_data(req, sa, control, &mut test)?;
    let started = Instant::now();
    let sent = flow::send(&s, granted, req.max_bytes, req.stop_early, on_progress)
        .map_err(|(n, e)| failed(sa, format!("the test broke off after {}: {e}", text::bytes(n))))?;
    if sent.bytes == 0 {
        return Err(failed(
            sa,
            "no data went out in the time granted: a test that moved nothing measures nothing".into(),
        ));
    }
    let result = read_result(&s, sa, sent.bytes, started)?;
    fill_forward(&mut test, req, &sent, &result);
    // The last guard: the advice never reads a test out of any range a TCP flow has.
    test.check().map_err(|why| failed(sa, why))?;
    Ok(test)
}

/// The data connection of a forward test, in place of the control connection, with the
/// congestion control and the send buffer the request asks for where this end may set them
/// (the notes say where not); and the time granted to send.
fn open_forward_data(
    req: &PathTestRequest,
    sa: SocketAddr,
    control: Control,
    test: &mut TcpTest,
) -> Result<(TcpStream, Duration), TestError> {
    let data_addr = SocketAddr::new(req.addr, control.channel.port);
    let left = left_to_connect(sa, control.connect_by)?;
    // The options go on before the data; the congestion control before the connect would be
    // better, but setting it now changes the algorithm for everything sent from here on,
    // which is everything. The send buffer does not shape the handshake.
    let s = TcpStream::connect_timeout(&data_addr, left)
        .map_err(|e| failed(sa, format!("cannot connect the data connection to {data_addr}: {e}")))?;
    drop(control.s);
    let ask = own_buffer_ask(req.buffer, control.channel.forced, control.channel.rcvbuf);
    let setup = flow::set_up_sender(&s, req.cc.as_deref(), ask);
    if let (Some(cc), Some(e)) = (&req.cc, &setup.cc_refused) {
        test.notes.push(format!("could not run the test with {cc} ({e})"));
    }
    test.cc = setup.cc;
    match (&setup.sndbuf_refused, setup.sndbuf) {
        (Some(_), None) if !crate::host::is_root() => test.notes.push(format!(
            "as a normal user this end could not force its send buffer to {}: the test ran within {}",
            text::bytes(ask),
            local_key("send_buffer")
        )),
        (Some(e), _) => test.notes.push(format!("could not size the send buffer ({e})")),
        _ => {}
    }
    if control.channel.forced && control.channel.rcvbuf < req.buffer.saturating_mul(2) {
        test.notes.push(format!(
            "the far end forced its receive buffer to {}, less than the {} asked (Linux keeps twice what is asked): its tcptune serve --max-buffer",
            text::bytes(control.channel.rcvbuf),
            text::bytes(req.buffer)
        ));
    }
    Ok((s, control.granted))
}

/// The buffer this end forces: what the request asks, within [`proto::DEFAULT_MAX_BUFFER`] as
/// the kernel counts it, and no more than the far end forced for its end (`far`, as its kernel
/// counts it: a send buffer past the receiver's window holds nothing more in flight, a receive
/// buffer past the sender's buffer is never filled; only memory here).
fn own_buffer_ask(wanted: u64, far_forced: bool, far: u64) -> u64 {
    let ask = proto::forced_buffer_ask(wanted, proto::DEFAULT_MAX_BUFFER);
    if far_forced && far > 0 {
        // The far end's buffer as its kernel counts it: twice what it was asked.
        proto::forced_buffer_ask(ask, far)
    } else {
        ask
    }
}

/// Ends the data and waits for the receiver's result ([`proto::result_deadline`]), checked
/// against the `sent` bytes this end sent from `started` on.
fn read_result(s: &TcpStream, sa: SocketAddr, sent: u64, started: Instant) -> Result<ServerResult, TestError> {
    s.shutdown(std::net::Shutdown::Write)
        .map_err(|e| failed(sa, format!("ending the test: {e}")))?;
    let by = proto::result_deadline(s, Instant::now());
    let result: ServerResult = proto::read_json_line(s, proto::MAX_RESULT, by).map_err(|e| match e {
        LineError::Read(ReadError::Late) => failed(
            sa,
            format!(
                "no complete result in time (the far end has {} s to take the data, then {} s to answer)",
                proto::DRAIN_GRACE.as_secs(),
                proto::RESULT_SLACK.as_secs()
            ),
        ),
        LineError::Read(e) => failed(sa, format!("no result ({e})")),
        LineError::Json(e) => failed(sa, format!("sent a result tcptune cannot read ({e})")),
    })?;
    let facts = SentFacts {
        bytes: sent,
        span: started.elapsed(),
    };
    result.check(&facts).map_err(|e| failed(sa, e.to_string()))?;
    Ok(result)
}

/// Fills `test` from the receiver's result and this end's readings.
fn fill_forward(test: &mut TcpTest, req: &PathTestRequest, sent: &flow::Sent, result: &ServerResult) {
    test.duration_s = text::ms(sent.elapsed.as_secs_f64());
    test.bytes = result.bytes;
    test.goodput_bps = goodput(result.bytes, Duration::from_micros(result.duration_us));
    test.receiver_window = result.rcv_wnd;
    test.receiver_buffer = result.rcv_buf;
    test.window_share = result.window_share;
    if sent.tcp_info {
        apply(test, &sent.reading);
        let far_key = result.buffer_key().ok().flatten().map(str::to_string);
        held(test, &sent.reading, far_key.as_deref());
    }
    if sent.bytes >= req.max_bytes {
        test.notes
            .push(format!("stopped at its byte bound, {}", text::bytes(req.max_bytes)));
    }
}

// ------------------------------------------------------------------------------ reverse

/// The reverse test, the far end sending to this host; `on_progress` gets the bytes received
/// and the time receiving a few times a second.
pub fn run_reverse(req: &PathTestRequest, on_progress: &mut dyn FnMut(flow::Tick)) -> Result<TcpTest, TestError> {
    let sa = SocketAddr::new(req.addr, req.port);
    let hello = Hello {
        version: proto::VERSION,
        flags: proto::FLAG_PATH_TEST | proto::FLAG_REVERSE,
        duration_ms: proto::duration_ms(req.time),
    };
    let ask = ReverseAsk {
        sndbuf: req.buffer,
        max_bytes: req.max_bytes,
        cc: Some(req.cc.clone().unwrap_or_else(|| REVERSE_CC.to_string())),
        full: !req.stop_early,
    };
    let control = open_control(req, sa, &hello, &ask.encode()).map_err(|r| match r {
        Refusal::Older(v) => no_peer(format!(
            "{sa} runs a tcptune serve of protocol {v}, which cannot send a test: update it on the far end for the reverse test"
        )),
        Refusal::Test(e) => e,
    })?;
    let mut test = new_test(req, sa, Direction::Reverse);
    let started = Instant::now();
    let data = open_reverse_data(req, sa, &control, &mut test)?;
    let got = flow::receive(
        &data,
        proto::receive_cutoff(Instant::now(), control.granted),
        proto::IDLE_TIMEOUT,
        true,
        on_progress,
    )
    .map_err(|(got, e)| {
        let why = match e {
            ReceiveError::Silent(d) => format!("the far end went silent for {} s", d.as_secs()),
            ReceiveError::Io(e) => e.to_string(),
        };
        failed(
            sa,
            format!("the reverse test broke off after {}: {why}", text::bytes(got.bytes)),
        )
    })?;
    on_progress(flow::Tick::moved(got.bytes, got.duration()));
    drop(data);
    if got.bytes == 0 {
        return Err(failed(
            sa,
            "no data came in the time granted: a test that moved nothing measures nothing".into(),
        ));
    }
    let result = read_sender_result(&control.s, sa, &got, started)?;
    fill_reverse(&mut test, &got, &result);
    if let (Some(asked), Some(ran)) = (&ask.cc, &test.cc)
        && asked != ran
    {
        test.notes.push(format!(
            "the far end ran the test with {ran}, not the {asked} asked (its kernel does not offer it to tcptune serve)"
        ));
    }
    test.check().map_err(|why| failed(sa, why))?;
    Ok(test)
}

/// The data connection of a reverse test, with this end's receive buffer forced before its
/// SYN where this end may (the notes say where not).
fn open_reverse_data(
    req: &PathTestRequest,
    sa: SocketAddr,
    control: &Control,
    test: &mut TcpTest,
) -> Result<TcpStream, TestError> {
    let data_addr = SocketAddr::new(req.addr, control.channel.port);
    let left = left_to_connect(sa, control.connect_by)?;
    let ask = own_buffer_ask(req.buffer, control.channel.forced, control.channel.sndbuf);
    let (s, forced) = crate::tcp::sockopt::connect_with_receive_buffer(data_addr, ask, left)
        .map_err(|e| failed(sa, format!("cannot connect the data connection to {data_addr}: {e}")))?;
    if ask > 0 && forced.is_none() {
        test.notes.push(format!(
            "this end could not force its receive buffer to {} (as a normal user, or on this OS): the test ran within {}",
            text::bytes(ask),
            local_key("buffer")
        ));
    }
    if req.buffer > 0 && !control.channel.forced {
        test.notes.push(format!(
            "the far end could not force its send buffer to {} (its tcptune serve does not run as root, or runs with --max-buffer 0): the test ran within its send-buffer maximum",
            text::bytes(req.buffer)
        ));
    }
    Ok(s)
}

/// The sender's result on the control connection, due [`proto::RESULT_SLACK`] after the data
/// ended here (serve sends it as soon as it stops sending), checked against what came.
fn read_sender_result(
    control: &TcpStream,
    sa: SocketAddr,
    got: &Received,
    started: Instant,
) -> Result<SenderResult, TestError> {
    let by = Instant::now() + proto::RESULT_SLACK;
    let result: SenderResult = proto::read_json_line(control, proto::MAX_RESULT, by).map_err(|e| match e {
        LineError::Read(ReadError::Late) => failed(
            sa,
            format!(
                "no complete sender's result within {} s of the data",
                proto::RESULT_SLACK.as_secs()
            ),
        ),
        LineError::Read(e) => failed(sa, format!("no sender's result ({e})")),
        LineError::Json(e) => failed(sa, format!("sent a sender's result tcptune cannot read ({e})")),
    })?;
    let facts = ReceivedFacts {
        bytes: got.bytes,
        span: started.elapsed(),
    };
    result.check(&facts).map_err(|e| failed(sa, e.to_string()))?;
    Ok(result)
}

/// Fills a reverse `test`: the far end's sender's readings, and what came here (the bytes,
/// the goodput, this end's window and share).
fn fill_reverse(test: &mut TcpTest, got: &Received, result: &SenderResult) {
    #[allow(clippy::cast_precision_loss)]
    let sending = result.duration_us as f64 / 1e6;
    test.duration_s = text::ms(sending);
    test.bytes = got.bytes;
    test.goodput_bps = goodput(got.bytes, got.duration());
    test.receiver_window = got.rcv_wnd;
    test.receiver_buffer = got.share.map(|(_, b)| b);
    test.window_share = got.window_share();
    match result.cc_name() {
        Ok(cc) => test.cc = cc.map(str::to_string),
        Err(f) => test.notes.push(format!(
            "the far end named its congestion control \"{f}\", which is no congestion control name: left out"
        )),
    }
    if got.cut {
        test.notes.push(format!(
            "the far end's data was still arriving {} s after the granted time: what came by then is counted",
            proto::ARRIVAL_GRACE.as_secs()
        ));
    }
    // Without TCP_INFO on the far end its reading is empty: only the goodput stands.
    if result.flow != Reading::default() {
        apply(test, &result.flow);
        let far_key = result.buffer_key().ok().flatten().map(str::to_string);
        held(test, &result.flow, far_key.as_deref());
    }
}

// ------------------------------------------------------------------------------ both

/// bytes × 8 / time, bit/s, whole; 0 for no time.
fn goodput(bytes: u64, t: Duration) -> f64 {
    #[allow(clippy::cast_precision_loss)]
    if t.is_zero() {
        0.0
    } else {
        (bytes as f64 * 8.0 / t.as_secs_f64()).round()
    }
}

/// The sender's reading into `test` (a flow that left startup but could not be paced measured
/// no loss apart from its own overshoot, and says so).
fn apply(test: &mut TcpTest, r: &Reading) {
    test.delivery_rate_bps = r.delivery_rate_bps;
    test.in_startup = r.in_startup;
    test.segs_out = r.segs_out;
    test.retrans_segs = r.retrans_segs;
    test.steady_segs_out = r.steady_segs_out;
    test.steady_retrans_segs = r.steady_retrans_segs;
    test.min_rtt_ms = r.min_rtt_ms;
    test.loaded_rtt_ms = r.loaded_rtt_ms;
    test.rwnd_limited_pct = r.rwnd_limited_pct;
    test.sndbuf_limited_pct = r.sndbuf_limited_pct;
    test.shape = r.shape;
    test.made = r.made;
    if let Some(m) = &r.made {
        test.notes.push(made_note(m, test.limit_s));
    }
    if r.app_limited {
        test.notes.push(format!(
            "the sender was application-limited throughout: it never had data queued past what the path took (a host too slow for the path, or busy), so it never left startup; {} is the highest rate it sent at, a lower bound of the path's, and no loss was measured",
            text::rate(r.delivery_rate_bps.unwrap_or_default())
        ));
    } else if r.in_startup {
        test.notes.push(match r.delivery_rate_bps {
            Some(bps) => format!(
                "the flow was still in startup when the test ended: {} is the highest rate it reached, a lower bound of the path's, and no loss was measured; a longer --test-time lets it leave startup",
                text::rate(bps)
            ),
            None => "the flow was still in startup when the test ended and gave no rate reading: no rate and no loss were measured; a longer --test-time lets it leave startup".to_string(),
        });
    } else if !r.paced {
        test.notes.push(
            "the flow could not be paced after its startup: its loss after startup was not measured apart from what it lost overfilling the queue"
                .into(),
        );
    }
}

/// "it ended at 3.8 s of its 10.5 s: its reading was made, no retransmission in 262,144
/// segments after startup, below the 0.00114 % at which CUBIC would no longer hold the path".
fn made_note(m: &flow::Made, limit_s: f64) -> String {
    let counted = format!(
        "{} in {} segments after startup",
        match m.retransmitted {
            0 => "no retransmission".to_string(),
            1 => "1 retransmission".to_string(),
            n => format!("{} retransmissions", text::count(n)),
        },
        text::count(m.segments)
    );
    let side = if m.lossy { "above" } else { "below" };
    format!(
        "it ended at {} of its {}: its reading was made, {counted}, surely {side} the {} % loss at which CUBIC would no longer hold the path (--thorough runs it to its time)",
        text::secs(m.at_s),
        text::secs(limit_s),
        text::sig(m.limit_pct, 3)
    )
}

/// What held the flow, when a buffer did ([`Reading::held_by`]): `window_limited`, `held_by`
/// and a note naming whose buffer and what to raise there. `far_key`: the far end's sysctl
/// for its buffer of this test (its receive buffer forward, its send buffer reverse), as it
/// named it.
fn held(test: &mut TcpTest, r: &Reading, far_key: Option<&str>) {
    let Some(by) = r.held_by() else { return };
    let pct = |p: Option<f64>| p.unwrap_or(0.0).round();
    let (held_by, share) = match by {
        LimitedBy::SendBuffer => (HeldBy::SendBuffer, pct(r.sndbuf_limited_pct)),
        _ => (HeldBy::ReceiveWindow, pct(r.rwnd_limited_pct)),
    };
    test.window_limited = true;
    test.held_by = Some(held_by);
    test.notes.push(held_note(test.direction, held_by, share, far_key));
}

/// "held by the far end's receive window for 34 % of its busy time: raise net.ipv4.tcp_rmem
/// there ...": whose buffer held a test, and what to raise where.
fn held_note(direction: Direction, by: HeldBy, pct: f64, far_key: Option<&str>) -> String {
    let far = |what: &str| far_key.map_or_else(|| format!("its {what} maximum"), str::to_string);
    let (whose, raise) = match (direction, by) {
        (Direction::Forward, HeldBy::ReceiveWindow) => (
            "the far end's receive window",
            format!(
                "raise {} on the far end, or run its tcptune serve as root so the test may force its receive buffer",
                far("receive buffer")
            ),
        ),
        (Direction::Forward, HeldBy::SendBuffer) => (
            "this host's send buffer",
            format!(
                "raise {} here, or run advise as root so the test may force it",
                local_key("send_buffer")
            ),
        ),
        (Direction::Reverse, HeldBy::ReceiveWindow) => (
            "this host's receive window",
            format!(
                "raise {} here, or run advise as root so the test may force it",
                local_key("buffer")
            ),
        ),
        (Direction::Reverse, HeldBy::SendBuffer) => (
            "the far end's send buffer",
            format!(
                "raise {} on the far end, or run its tcptune serve as root so the test may force its send buffer",
                far("send buffer")
            ),
        ),
    };
    format!(
        "held by {whose} for {pct} % of its busy time: {raise}; the rate is a lower bound, and the flat RTT says nothing about the queue"
    )
}

/// This host's sysctl for its buffer `fact` ("buffer": receive, "send_buffer": send), from its
/// OS's profile (every shipped profile names both).
pub(super) fn local_key(fact: &str) -> String {
    crate::profile::Profile::for_os(crate::os::Os::running())
        .caps
        .into_iter()
        .find(|(_, f)| f == fact)
        .map_or_else(|| format!("this host's {fact} maximum"), |(k, _)| k)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn own_buffer_is_bounded_by_the_request_the_maximum_and_the_far_end() {
        // What the request asks, when the far end forced as much (Linux reports it doubled).
        assert_eq!(own_buffer_ask(4 << 20, true, 8 << 20), 4 << 20);
        // No more than the far end got...
        assert_eq!(own_buffer_ask(4 << 20, true, 2 << 20), 1 << 20);
        // ... and never past the default maximum, whatever the far end claims.
        assert_eq!(own_buffer_ask(1 << 40, false, 0), 512 << 20);
        assert_eq!(own_buffer_ask(1 << 40, true, u64::MAX), 512 << 20);
        assert_eq!(own_buffer_ask(0, true, 8 << 20), 0);
    }

    fn reading(rwnd: f64, snd: f64) -> Reading {
        Reading {
            delivery_rate_bps: Some(20e6),
            rwnd_limited_pct: Some(rwnd),
            sndbuf_limited_pct: Some(snd),
            segs_out: Some(10_000),
            retrans_segs: Some(0),
            min_rtt_ms: Some(50.0),
            loaded_rtt_ms: Some(51.0),
            ..Reading::default()
        }
    }

    /// Whose buffer held a test, from TCP_INFO's shares, in each direction: the note names
    /// the end and the key to raise there.
    #[test]
    fn a_test_held_by_a_window_names_whose_buffer_and_what_to_raise() {
        let mut t = TcpTest::default();
        held(&mut t, &reading(34.0, 1.0), Some("net.ipv4.tcp_rmem"));
        assert!(t.window_limited);
        assert_eq!(t.held_by, Some(HeldBy::ReceiveWindow));
        assert_eq!(
            t.notes,
            [
                "held by the far end's receive window for 34 % of its busy time: raise net.ipv4.tcp_rmem on the far end, or run its tcptune serve as root so the test may force its receive buffer; the rate is a lower bound, and the flat RTT says nothing about the queue"
            ]
        );
        let mut t = TcpTest::default();
        held(&mut t, &reading(2.0, 30.0), None);
        assert_eq!(t.held_by, Some(HeldBy::SendBuffer));
        assert!(
            t.notes[0].starts_with("held by this host's send buffer for 30 %"),
            "{:?}",
            t.notes
        );
        if cfg!(target_os = "linux") {
            assert!(t.notes[0].contains("raise net.ipv4.tcp_wmem here"), "{:?}", t.notes);
        }
        // The reverse mirror: this host's receive window, the far end's send buffer.
        let mut t = TcpTest {
            direction: Direction::Reverse,
            ..TcpTest::default()
        };
        held(&mut t, &reading(40.0, 0.0), None);
        assert!(
            t.notes[0].starts_with("held by this host's receive window for 40 %"),
            "{:?}",
            t.notes
        );
        let mut t = TcpTest {
            direction: Direction::Reverse,
            ..TcpTest::default()
        };
        held(&mut t, &reading(0.0, 25.0), Some("net.inet.tcp.sendbuf_max"));
        assert_eq!(t.held_by, Some(HeldBy::SendBuffer));
        assert!(
            t.notes[0].starts_with("held by the far end's send buffer for 25 %")
                && t.notes[0].contains("raise net.inet.tcp.sendbuf_max on the far end"),
            "{:?}",
            t.notes
        );
        // Not held: nothing set, nothing said.
        let mut t = TcpTest::default();
        held(&mut t, &reading(5.0, 5.0), None);
        assert!(!t.window_limited && t.held_by.is_none() && t.notes.is_empty());
    }

    #[test]
    fn a_test_still_in_startup_is_a_lower_bound_and_says_so() {
        let mut t = TcpTest::default();
        let r = Reading {
            in_startup: true,
            delivery_rate_bps: Some(42e6),
            ..Reading::default()
        };
        apply(&mut t, &r);
        assert!(t.in_startup);
        assert_eq!(t.delivery_rate_bps, Some(42e6));
        assert!(
            t.notes[0].contains("42 Mbit/s is the highest rate it reached, a lower bound"),
            "{:?}",
            t.notes
        );
        // Application-limited throughout: why, instead of "a longer --test-time".
        let mut t = TcpTest::default();
        apply(&mut t, &Reading { app_limited: true, ..r });
        assert!(t.in_startup && t.notes.len() == 1, "{:?}", t.notes);
        assert!(
            t.notes[0].contains("application-limited throughout")
                && t.notes[0].contains("42 Mbit/s is the highest rate it sent at, a lower bound"),
            "{:?}",
            t.notes
        );
    }

    /// A loopback port bound and never listened on, held until dropped: a connect to it is
    /// refused, and no other test of this process can take the port meanwhile (a port bound
    /// and closed could be, and then answered with a reset).
    struct Reserved(i32, u16);

    impl Drop for Reserved {
        fn drop(&mut self) {
            // SAFETY: closing the descriptor this value owns.
            unsafe { libc::close(self.0) };
        }
    }

    fn unused_port() -> Reserved {
        // SAFETY: plain socket calls on a descriptor this function owns, with a sockaddr_in
        // it builds whole.
        unsafe {
            let fd = libc::socket(libc::AF_INET, libc::SOCK_STREAM, 0);
            assert!(fd >= 0, "socket");
            let mut addr: libc::sockaddr_in = std::mem::zeroed();
            addr.sin_family = libc::sa_family_t::try_from(libc::AF_INET).expect("family");
            addr.sin_addr.s_addr = u32::from_ne_bytes([127, 0, 0, 1]);
            let len = libc::socklen_t::try_from(std::mem::size_of::<libc::sockaddr_in>()).expect("len");
            let sa = (&raw const addr).cast::<libc::sockaddr>();
            assert_eq!(libc::bind(fd, sa, len), 0, "bind");
            let mut got = len;
            assert_eq!(
                libc::getsockname(fd, (&raw mut addr).cast::<libc::sockaddr>(), &raw mut got),
                0
            );
            Reserved(fd, u16::from_be(addr.sin_port))
        }
    }

    fn request(port: u16) -> PathTestRequest {
        PathTestRequest {
            addr: IpAddr::from([127, 0, 0, 1]),
            port,
            time: Duration::from_secs(1),
            max_bytes: 1 << 20,
            buffer: 0,
            cc: None,
            connect_timeout: Duration::from_secs(1),
            stop_early: false,
        }
    }

    #[test]
    fn nothing_listening_is_no_peer() {
        let port = unused_port();
        let req = request(port.1);
        for r in [run(&req, &mut |_| {}), run_reverse(&req, &mut |_| {})] {
            match r {
                Err(TestError::NoPeer(why)) => assert!(why.contains("no tcptune serve on 127.0.0.1:"), "{why}"),
                other => panic!("{other:?}"),
            }
        }
    }

    /// A version-2 serve, played: it answers a version-3 hello with its own version and
    /// closes, and serves a version-2 forward test. Returns its port and the versions of the
    /// hellos it got.
    fn version_2_serve(clients: usize) -> (u16, std::thread::JoinHandle<Vec<u16>>) {
        use std::io::{Read as _, Write as _};
        let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        let port = l.local_addr().expect("addr").port();
        let serve = std::thread::spawn(move || {
            let mut versions = Vec::new();
            for _ in 0..clients {
                let (mut c, _) = l.accept().expect("accept");
                let mut hello = [0u8; proto::HELLO_LEN];
                c.read_exact(&mut hello).expect("hello");
                let h = Hello::decode(&hello).expect("a hello");
                versions.push(h.version);
                if h.version > 2 {
                    let no = proto::Answer {
                        version: 2,
                        status: proto::Status::BadVersion,
                        granted_ms: 0,
                    };
                    c.write_all(&no.encode()).expect("answer");
                    continue;
                }
                let mut buffer = [0u8; 8];
                c.read_exact(&mut buffer).expect("buffer");
                let ok = proto::Answer {
                    version: 2,
                    status: proto::Status::Ok,
                    granted_ms: h.duration_ms,
                };
                c.write_all(&ok.encode()).expect("answer");
                let dl = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
                let port = dl.local_addr().expect("addr").port();
                writeln!(c, r#"{{"port":{port},"rcvbuf":0,"forced":false}}"#).expect("channel");
                let (mut d, _) = dl.accept().expect("data");
                let t = Instant::now();
                let mut sink = Vec::new();
                d.read_to_end(&mut sink).expect("data");
                let us = t.elapsed().as_micros().max(1);
                writeln!(
                    d,
                    r#"{{"bytes":{},"duration_us":{us},"os":"linux","rcvbuf_key":null,"rcvbuf_value":null,"rcv_wnd":null}}"#,
                    sink.len()
                )
                .expect("result");
            }
            versions
        });
        (port, serve)
    }

    /// A version-3 client and a version-2 serve: the forward test runs in version 2, the
    /// reverse one is skipped with the reason.
    #[test]
    fn a_version_2_serve_gets_a_forward_test_and_no_reverse_one() {
        let (port, serve) = version_2_serve(3);
        let req = request(port);
        let t = run(&req, &mut |_| {}).expect("a forward test in version 2");
        assert_eq!((t.direction, t.bytes), (Direction::Forward, t.bytes.max(1)));
        match run_reverse(&req, &mut |_| {}) {
            Err(TestError::NoPeer(why)) => assert!(
                why.ends_with("runs a tcptune serve of protocol 2, which cannot send a test: update it on the far end for the reverse test"),
                "{why}"
            ),
            other => panic!("{other:?}"),
        }
        assert_eq!(serve.join().expect("serve"), [3, 2, 3]);
    }
}
