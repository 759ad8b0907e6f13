//! The TCP path test of `advise --host`: a bounded transfer from this host to `tcptune serve`
//! on the far end (protocol version 2, [`crate::tcp::proto`]), read from the sender's TCP_INFO
//! as it runs, and turned into a [`TcpTest`]: delivery rate, retransmitted share after startup,
//! RTT growth under load, what limited the flow, and the receiver's window share.
//!
//! The test is not limited by today's buffers where it can help it: the caller passes the
//! buffer that the highest rate evidence needs; as root this end forces its send buffer to it
//! and the server forces its receive buffer (both past the sysctl maxima, before the handshake
//! on the server's side so the window scale allows it). As a normal user the flow runs within
//! the running maxima and the result says so ([`TcpTest::window_limited`]).
//!
//! It runs BBR where the kernel allows it: BBR's startup fills the bottleneck queue (so the
//! RTT growth shows its depth) and keeps its rate through random loss (so a 10-s test sends
//! enough segments to see 0.001 % loss); a loss-based test flow would crawl on exactly the
//! paths the test must recognise. Two phases: unpaced until the delivery rate has stopped
//! growing for [`PLATEAU_RTTS`] round trips (startup: the rate and the queue depth), then
//! paced at [`PACED_SHARE`] of that rate (`SO_MAX_PACING_RATE`), so that the flow keeps no
//! queue and any segment it loses is the path's random loss — not BBR overfilling a queue
//! shallower than its 2 × BDP window (BBR v1 drops 1–2 % of its segments behind a queue of
//! 0.75 × BDP in tcptune's lab, where the path itself drops nothing).
//!
//! # Deadlines and trust
//! The far end is not trusted ([`crate::tcp::proto`]'s Trust section). Each phase runs under a
//! deadline this end computes: the connect within the request's `connect_timeout`; the
//! answer, the data port and the data connection within [`proto::ANSWER_SLACK`] of the
//! connect; the data for the test time asked for (a server granting more cannot lengthen it);
//! the result within [`proto::DRAIN_GRACE`] and [`proto::RESULT_SLACK`] after the data. So a
//! test ends by its time + 40 s + the connect timeout whatever the peer does; a peer that has
//! all the data answers within 5 s of it, or the test fails. The send buffer this end forces is bounded by what the request asks,
//! by [`proto::DEFAULT_MAX_BUFFER`] and by what the far end forced for its receive buffer.
//! The result's numbers are checked against what this end sent, and a test that moved
//! nothing or reads out of any range a TCP flow has is no test: [`TestError::Failed`].
//!
//! # Platform specific behavior
//! Without TCP_INFO (FreeBSD, macOS) only the goodput and the receiver's readings come back.

use std::net::{IpAddr, SocketAddr, TcpStream};
use std::time::{Duration, Instant};

use super::evidence::{TcpTest, TestPeer};
use crate::tcp::proto::{self, DataChannel, ExchangeError, Hello, LineError, ReadError, SentFacts, ServerResult};
use crate::tcp::sockopt::{self, Buffer};
use crate::tcp::tcpinfo::TcpInfo;
use crate::text;

/// Default bounds of a test: time and bytes, whichever comes first.
pub const DEFAULT_TIME: Duration = Duration::from_secs(10);
pub const DEFAULT_MAX_BYTES: u64 = 2 << 30;
/// Round trips without a 10 % higher delivery rate that end startup (BBR's own rule is 3).
pub const PLATEAU_RTTS: f64 = 4.0;
/// The paced phase runs at this share of the startup's rate: below the bottleneck, so the
/// queue startup left drains (a BDP of it in 5 round trips) and no new one builds.
pub const PACED_SHARE: f64 = 0.8;
/// Round trips after pacing starts that still count as startup: losses of the unpaced phase
/// are detected and repaired a round or two later...
const STEADY_AFTER_RTTS: f64 = 2.0;
/// ... and the queue startup filled must have drained: the smoothed RTT back within this
/// factor of the minimum (until then the repairs of startup's losses go on).
const DRAINED_RTT: f64 = 1.2;
/// Limited by its own buffers or the receiver's window for more than this share of the busy
/// time: the test's rate is a lower bound.
const WINDOW_LIMITED_PCT: f64 = 20.0;

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

/// One TCP_INFO reading during the test.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Sample {
    /// Since the first payload byte was handed to the kernel.
    pub t: Duration,
    /// bit/s; None when the kernel marked it application-limited or gave 0.
    pub delivery_bps: Option<f64>,
    pub srtt_ms: f64,
    pub segs_out: u64,
    pub retrans: u64,
    /// The flow's lowest RTT so far, ms.
    pub min_rtt_ms: f64,
}

impl Sample {
    #[allow(clippy::cast_precision_loss)]
    fn of(t: Duration, i: &TcpInfo) -> Self {
        Self {
            t,
            delivery_bps: (i.tcpi_delivery_rate > 0 && !i.delivery_rate_app_limited())
                .then_some(i.tcpi_delivery_rate as f64 * 8.0),
            srtt_ms: i.rtt_ms(),
            segs_out: u64::from(i.tcpi_data_segs_out),
            retrans: u64::from(i.tcpi_total_retrans),
            min_rtt_ms: i.min_rtt_ms(),
        }
    }
}

/// Watches the samples for the end of startup: the delivery rate has not grown by 10 % for
/// [`PLATEAU_RTTS`] round trips.
#[derive(Debug, Default)]
struct Plateau {
    best: f64,
    best_at: Duration,
}

impl Plateau {
    /// After `s`: the rate to pace at from now on, bytes per second, once startup is over.
    fn see(&mut self, s: &Sample, history: &[Sample]) -> Option<u64> {
        let r = s.delivery_bps?;
        if r > self.best * 1.1 {
            self.best = r;
            self.best_at = s.t;
            return None;
        }
        let rtt = Duration::from_secs_f64((s.min_rtt_ms / 1000.0).max(0.001));
        if s.t < self.best_at + rtt.mul_f64(PLATEAU_RTTS) {
            return None;
        }
        let mut rates: Vec<f64> = history
            .iter()
            .filter(|h| h.t >= self.best_at)
            .filter_map(|h| h.delivery_bps)
            .collect();
        rates.sort_by(f64::total_cmp);
        let median = rates.get(rates.len() / 2).copied().unwrap_or(r);
        #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
        Some((median / 8.0 * PACED_SHARE) as u64)
    }
}

/// What the samples say, filled into `t` (the sender's readings of a [`TcpTest`]); `paced_at`:
/// when the paced phase began, if it did.
pub fn read_samples(samples: &[Sample], min_rtt_ms: f64, paced_at: Option<Duration>, t: &mut TcpTest) {
    let unpaced = |s: &&Sample| paced_at.is_none_or(|p| s.t < p);
    let best = samples
        .iter()
        .filter(unpaced)
        .filter_map(|s| s.delivery_bps)
        .fold(0.0_f64, f64::max);
    if best > 0.0 {
        // The rate: the median of the unpaced readings from the first within 10 % of the
        // best on, so one ack burst does not set it.
        let plateau = samples
            .iter()
            .filter(unpaced)
            .find(|s| s.delivery_bps.is_some_and(|r| r >= 0.9 * best))
            .map(|s| s.t);
        if let Some(p) = plateau {
            let mut rates: Vec<f64> = samples
                .iter()
                .filter(unpaced)
                .filter(|s| s.t >= p)
                .filter_map(|s| s.delivery_bps)
                .collect();
            rates.sort_by(f64::total_cmp);
            t.delivery_rate_bps = rates.get(rates.len() / 2).copied();
        }
    }
    // Loss: in the paced phase, once the queue startup filled has drained and its losses are
    // repaired.
    if let (Some(p), Some(last)) = (paced_at, samples.last()) {
        let after = p + Duration::from_secs_f64((min_rtt_ms / 1000.0 * STEADY_AFTER_RTTS).max(0.0));
        if let Some(base) = samples
            .iter()
            .find(|s| s.t >= after && s.srtt_ms <= min_rtt_ms * DRAINED_RTT)
            && last.t > base.t
        {
            t.steady_segs_out = Some(last.segs_out.saturating_sub(base.segs_out));
            t.steady_retrans_segs = Some(last.retrans.saturating_sub(base.retrans));
        }
    }
    if let Some(last) = samples.last() {
        t.segs_out = Some(last.segs_out);
        t.retrans_segs = Some(last.retrans);
    }
    t.loaded_rtt_ms = samples
        .iter()
        .map(|s| s.srtt_ms)
        .filter(|r| *r > 0.0)
        .reduce(f64::max)
        .map(text::ms);
}

fn no_peer(what: String) -> TestError {
    TestError::NoPeer(what)
}

/// Why `sa` gave no path test: most of it means no tcptune serve there, and the advice goes on
/// without the test.
fn refused(sa: SocketAddr, e: ExchangeError) -> TestError {
    match e {
        ExchangeError::Send(e) => no_peer(format!("{sa} closed the connection ({e})")),
        ExchangeError::NoAnswer(ReadError::Late) => no_peer(format!(
            "{sa} gave no complete tcptune answer within {} s",
            proto::ANSWER_SLACK.as_secs()
        )),
        ExchangeError::NoAnswer(e) => no_peer(format!("{sa} gave no tcptune answer ({e})")),
        ExchangeError::Garbled(e) => no_peer(format!("{sa}: {e}")),
        ExchangeError::Busy => TestError::Failed(format!("{sa}: busy with another test")),
        ExchangeError::BadVersion(theirs) => no_peer(format!(
            "{sa} runs an older tcptune serve (protocol {theirs}): update it for the path test"
        )),
    }
}

/// Runs the test; `on_progress(bytes sent, time sending)` is called a few times a second.
pub fn run(req: &PathTestRequest, on_progress: &mut dyn FnMut(u64, Duration)) -> Result<TcpTest, TestError> {
    let sa = SocketAddr::new(req.addr, req.port);
    let (control, granted, channel, answer_by) = open_control(req, sa)?;
    let mut test = TcpTest {
        peer: Some(TestPeer::Tcptune),
        addr: sa.to_string(),
        limit_s: req.time.as_secs_f64(),
        limit_bytes: req.max_bytes,
        ..TcpTest::default()
    };
    if req.buffer > 0 && !channel.forced {
        test.notes.push(format!(
            "the far end could not force its receive buffer to {} (its tcptune serve does not run as root, or runs with --max-buffer 0): the test ran within its net.ipv4.tcp_rmem",
            text::bytes(req.buffer)
        ));
    }
    let s = open_data(req, sa, control, &channel, answer_by, &mut test)?;
    let started = Instant::now();
    let sent = send_sampled(&s, sa, req, granted, on_progress)?;
    if sent.bytes == 0 {
        return Err(failed(
            sa,
            format!(
                "no data went out in the {} ms granted: a test that moved nothing measures nothing",
                granted.as_millis()
            ),
        ));
    }
    let result = read_result(&s, sa, sent.bytes, started)?;
    fill(&mut test, req, &sent, &result);
    // The last guard: the advice never reads a test out of any range a TCP flow has.
    test.check().map_err(|why| failed(sa, why))?;
    Ok(test)
}

fn failed(sa: SocketAddr, what: String) -> TestError {
    TestError::Failed(format!("{sa}: {what}"))
}

/// The control connection and its hello exchange: the time to send for (never more than
/// asked), where the data goes, and when the data connection must be up (the answer's
/// deadline: [`proto::ANSWER_SLACK`] after the connect).
fn open_control(
    req: &PathTestRequest,
    sa: SocketAddr,
) -> Result<(TcpStream, Duration, DataChannel, Instant), TestError> {
    let c = TcpStream::connect_timeout(&sa, req.connect_timeout)
        .map_err(|e| no_peer(format!("no tcptune serve on {sa} ({e})")))?;
    let answer_by = Instant::now() + proto::ANSWER_SLACK;
    c.set_write_timeout(Some(proto::ANSWER_SLACK))
        .map_err(|e| failed(sa, format!("socket setup failed: {e}")))?;
    let hello = Hello {
        version: proto::VERSION,
        flags: proto::FLAG_PATH_TEST,
        duration_ms: proto::duration_ms(req.time),
    };
    let granted =
        proto::exchange_hello(&c, &hello, &req.buffer.to_be_bytes(), answer_by).map_err(|e| refused(sa, e))?;
    let channel: DataChannel = proto::read_json_line(&c, proto::MAX_CHANNEL_LINE, answer_by).map_err(|e| match e {
        LineError::Read(ReadError::Late) => failed(
            sa,
            format!("no complete data port within {} s", proto::ANSWER_SLACK.as_secs()),
        ),
        LineError::Read(e) => failed(sa, format!("no data port ({e})")),
        LineError::Json(e) => failed(sa, format!("sent a data port tcptune cannot read ({e})")),
    })?;
    channel.check().map_err(|e| failed(sa, e.to_string()))?;
    Ok((c, granted, channel, answer_by))
}

/// The data connection, in place of `control`, with the congestion control and the send
/// buffer the request asks for where this end may set them (the notes say where not).
fn open_data(
    req: &PathTestRequest,
    sa: SocketAddr,
    control: TcpStream,
    channel: &DataChannel,
    connect_by: Instant,
    test: &mut TcpTest,
) -> Result<TcpStream, TestError> {
    let data_addr = SocketAddr::new(req.addr, channel.port);
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
    let socket = std::net::TcpStream::connect_timeout(&data_addr, left);
    // The options go on before the data; the congestion control before the connect would be
    // better but std has no unconnected TCP socket: setting it now changes the algorithm for
    // everything sent from here on, which is everything.
    let s = socket.map_err(|e| failed(sa, format!("cannot connect the data connection to {data_addr}: {e}")))?;
    drop(control);
    if let Some(cc) = &req.cc
        && let Err(e) = sockopt::set_congestion(&s, cc)
    {
        test.notes.push(format!("could not run the test with {cc} ({e})"));
    }
    test.cc = sockopt::congestion(&s);
    let ask = send_buffer_ask(req.buffer, channel);
    if ask > 0 {
        match sockopt::force_buffer(&s, Buffer::Send, ask) {
            Ok(Some(_)) => {}
            Ok(None) => test.notes.push(format!(
                "as a normal user this end could not force its send buffer to {}: the test ran within net.ipv4.tcp_wmem",
                text::bytes(ask)
            )),
            Err(e) => test.notes.push(format!("could not size the send buffer ({e})")),
        }
    }
    if channel.forced && channel.rcvbuf < req.buffer.saturating_mul(2) {
        test.notes.push(format!(
            "the far end forced its receive buffer to {}, less than the {} asked (Linux keeps twice what is asked): its tcptune serve --max-buffer",
            text::bytes(channel.rcvbuf),
            text::bytes(req.buffer)
        ));
    }
    Ok(s)
}

/// The send buffer to force: what the request asks, within [`proto::DEFAULT_MAX_BUFFER`] as
/// the kernel counts it, and no more than the far end forced for its receive buffer (a send
/// buffer past the receiver's window holds nothing more in flight, only memory here).
fn send_buffer_ask(wanted: u64, channel: &DataChannel) -> u64 {
    let ask = proto::forced_buffer_ask(wanted, proto::DEFAULT_MAX_BUFFER);
    if channel.forced && channel.rcvbuf > 0 {
        // The receiver's buffer as its kernel counts it: twice what it was asked.
        proto::forced_buffer_ask(ask, channel.rcvbuf)
    } else {
        ask
    }
}

/// What the data phase gave this end.
struct Sent {
    /// Payload bytes handed to the kernel.
    bytes: u64,
    /// The time spent sending.
    elapsed: Duration,
    /// The TCP_INFO readings, the last one at the end.
    samples: Vec<Sample>,
    /// When the paced phase began, if it did.
    paced_at: Option<Duration>,
    /// TCP_INFO at the end (Linux).
    end: Option<TcpInfo>,
}

/// The send loop's readings as it runs.
#[derive(Default)]
struct Sampler {
    samples: Vec<Sample>,
    plateau: Plateau,
    paced_at: Option<Duration>,
    last_sample: Duration,
    last_progress: Duration,
}

impl Sampler {
    /// After each write, `sent` bytes in `t`: a TCP_INFO reading every 20 ms, and progress.
    fn tick(&mut self, s: &TcpStream, sent: u64, t: Duration, on_progress: &mut dyn FnMut(u64, Duration)) {
        if t.saturating_sub(self.last_sample) >= Duration::from_millis(20) {
            self.last_sample = t;
            if let Some(i) = crate::tcp::tcpinfo::read(s) {
                self.see(s, Sample::of(t, &i));
            }
        }
        if t.saturating_sub(self.last_progress) >= Duration::from_millis(250) {
            self.last_progress = t;
            on_progress(sent, t);
        }
    }

    /// Keeps `sample`, and paces the flow once its startup is over.
    fn see(&mut self, s: &TcpStream, sample: Sample) {
        if self.paced_at.is_none()
            && let Some(rate) = self.plateau.see(&sample, &self.samples)
        {
            match sockopt::set_max_pacing_rate(s, rate) {
                Ok(()) => self.paced_at = Some(sample.t),
                // Unpaced to the end: the loss then includes what the flow's own
                // queue overflow cost (said in the notes).
                Err(_) => self.plateau.best = f64::INFINITY,
            }
        }
        self.samples.push(sample);
    }
}

/// The data phase: sends for the granted time or up to the byte bound, reading TCP_INFO as it
/// goes.
fn send_sampled(
    s: &TcpStream,
    sa: SocketAddr,
    req: &PathTestRequest,
    granted: Duration,
    on_progress: &mut dyn FnMut(u64, Duration),
) -> Result<Sent, TestError> {
    s.set_write_timeout(Some(Duration::from_millis(20)))
        .map_err(|e| failed(sa, format!("socket setup failed: {e}")))?;
    let mut sampler = Sampler::default();
    let (bytes, elapsed) = proto::send_data(s, granted, req.max_bytes, &mut |sent, t| {
        sampler.tick(s, sent, t, on_progress);
    })
    .map_err(|(sent, e)| failed(sa, format!("the test broke off after {}: {e}", text::bytes(sent))))?;
    let end = crate::tcp::tcpinfo::read(s);
    if let Some(i) = &end {
        sampler.samples.push(Sample::of(elapsed, i));
    }
    on_progress(bytes, elapsed);
    Ok(Sent {
        bytes,
        elapsed,
        samples: sampler.samples,
        paced_at: sampler.paced_at,
        end,
    })
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
fn fill(test: &mut TcpTest, req: &PathTestRequest, sent: &Sent, result: &ServerResult) {
    test.duration_s = text::ms(sent.elapsed.as_secs_f64());
    test.bytes = result.bytes;
    #[allow(clippy::cast_precision_loss)]
    if result.duration_us > 0 {
        test.goodput_bps = (result.bytes as f64 * 8.0 / (result.duration_us as f64 / 1e6)).round();
    }
    test.receiver_window = result.rcv_wnd;
    test.receiver_buffer = result.rcv_buf;
    test.window_share = result.window_share;
    if let Some(i) = &sent.end {
        let min_rtt = i.min_rtt_ms();
        test.min_rtt_ms = (min_rtt > 0.0).then(|| text::ms(min_rtt));
        read_samples(&sent.samples, min_rtt, sent.paced_at, test);
        if sent.paced_at.is_none() {
            test.notes.push(
                "the flow did not leave startup within the test (or could not be paced): its retransmissions include what it lost overfilling the queue; a longer --test-time separates them"
                    .into(),
            );
        }
        if let Some(b) = i.breakdown(u64::try_from(sent.elapsed.as_micros()).ok()) {
            test.rwnd_limited_pct = Some(b.rwnd_limited_pct);
            test.sndbuf_limited_pct = Some(b.sndbuf_limited_pct);
            test.window_limited = b.rwnd_limited_pct + b.sndbuf_limited_pct > WINDOW_LIMITED_PCT;
        }
    }
    if sent.bytes >= req.max_bytes {
        test.notes
            .push(format!("stopped at its byte bound, {}", text::bytes(req.max_bytes)));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(ms: u64, rate_mbit: Option<f64>, srtt: f64, segs: u64, retrans: u64) -> Sample {
        Sample {
            t: Duration::from_millis(ms),
            delivery_bps: rate_mbit.map(|r| r * 1e6),
            srtt_ms: srtt,
            segs_out: segs,
            retrans,
            min_rtt_ms: 50.0,
        }
    }

    #[test]
    fn startup_losses_are_not_the_paths_loss() {
        // 50 ms path: the rate reaches 500 Mbit/s at 1 s; the queue overflows in startup (40
        // retransmissions by 1.2 s); paced from 1.3 s, 2 more after that.
        let samples = [
            sample(0, None, 50.0, 10, 0),
            sample(500, Some(200.0), 60.0, 20_000, 0),
            sample(1000, Some(480.0), 95.0, 60_000, 0),
            sample(1200, Some(500.0), 98.0, 70_000, 40),
            sample(1400, Some(470.0), 60.0, 80_000, 40),
            // Still draining the queue: not yet steady.
            sample(1450, Some(470.0), 61.0, 85_000, 40),
            sample(3000, Some(490.0), 52.0, 150_000, 41),
            sample(5000, Some(495.0), 51.0, 250_000, 42),
        ];
        let mut t = TcpTest::default();
        read_samples(&samples, 50.0, Some(Duration::from_millis(1300)), &mut t);
        assert_eq!((t.segs_out, t.retrans_segs), (Some(250_000), Some(42)));
        // Steady from 1.3 s + 2 × 50 ms = 1.4 s, once the RTT is within 1.2 × 50 ms: the 1.4 s
        // sample on (the one at 1.45 s, 61 ms, would not have been).
        assert_eq!((t.steady_segs_out, t.steady_retrans_segs), (Some(170_000), Some(2)));
        assert_eq!(t.loaded_rtt_ms, Some(98.0));
        // The unpaced readings from 1 s: median of 480, 500.
        assert_eq!(t.delivery_rate_bps, Some(500e6));
        let loss = t.steady_loss_pct().expect("loss");
        assert!((loss - 2.0 / 1700.0).abs() < 1e-9, "{loss}");
    }

    #[test]
    fn startup_ends_when_the_rate_stops_growing_for_four_round_trips() {
        let mut p = Plateau::default();
        let mut h = Vec::new();
        let mut paced = None;
        for (ms, rate) in [
            (100, 50.0),
            (200, 200.0),
            (300, 400.0),
            (350, 420.0),
            (400, 430.0),
            (500, 410.0),
            (560, 420.0),
        ] {
            let s = sample(ms, Some(rate), 60.0, 0, 0);
            if paced.is_none() {
                paced = p.see(&s, &h).map(|r| (ms, r));
            }
            h.push(s);
        }
        // 400 Mbit/s at 300 ms is the last 10 % growth; 4 × 50 ms later, at 500 ms: paced at
        // 0.8 × the median of 400, 420, 430, 410 (420 Mbit/s) = 42 MB/s.
        assert_eq!(paced, Some((500, 42_000_000)));
    }

    #[test]
    fn a_test_too_short_for_steady_state_reads_no_loss() {
        let samples = [
            sample(100, Some(100.0), 10.0, 100, 0),
            sample(200, Some(100.0), 12.0, 200, 1),
        ];
        let mut t = TcpTest::default();
        read_samples(&samples, 100.0, None, &mut t);
        assert_eq!(t.steady_segs_out, None);
        // The whole test's counts are kept, but they are no reading of the path's loss.
        assert_eq!((t.segs_out, t.retrans_segs), (Some(200), Some(1)));
        assert_eq!(t.steady_loss_pct(), None);
    }

    #[test]
    fn the_send_buffer_is_bounded_by_the_request_the_maximum_and_the_receiver() {
        let channel = |rcvbuf, forced| DataChannel {
            port: 1,
            rcvbuf,
            forced,
        };
        // What the request asks, when the receiver forced as much (Linux reports it doubled).
        assert_eq!(send_buffer_ask(4 << 20, &channel(8 << 20, true)), 4 << 20);
        // No more than the receiver got...
        assert_eq!(send_buffer_ask(4 << 20, &channel(2 << 20, true)), 1 << 20);
        // ... and never past the default maximum, whatever the far end claims.
        assert_eq!(send_buffer_ask(1 << 40, &channel(0, false)), 512 << 20);
        assert_eq!(send_buffer_ask(1 << 40, &channel(u64::MAX, true)), 512 << 20);
        assert_eq!(send_buffer_ask(0, &channel(8 << 20, true)), 0);
    }

    #[test]
    fn nothing_listening_is_no_peer() {
        // A port just bound and closed: nothing listens there.
        let port = {
            let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
            l.local_addr().expect("addr").port()
        };
        let req = PathTestRequest {
            addr: IpAddr::from([127, 0, 0, 1]),
            port,
            time: Duration::from_secs(1),
            max_bytes: 1 << 20,
            buffer: 0,
            cc: None,
            connect_timeout: Duration::from_secs(1),
        };
        match run(&req, &mut |_, _| {}) {
            Err(TestError::NoPeer(why)) => assert!(why.contains("no tcptune serve on 127.0.0.1:"), "{why}"),
            other => panic!("{other:?}"),
        }
    }
}
