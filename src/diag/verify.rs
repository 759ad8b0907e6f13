//! The `verify` throughput test, this end sending: connect to `tcptune serve`, send for the
//! granted time, read the sender's TCP_INFO (Linux) and the receiver's result, and settle what
//! limited the flow ([`super::verdict`]). No printing: progress goes to the caller's callback.
//!
//! # Platform specific behavior
//! On FreeBSD and macOS the test runs and reports goodput and the connect-time RTT, but there are
//! no limited-by counters: those fields are null.

use std::net::{IpAddr, SocketAddr, TcpStream};
use std::time::{Duration, Instant};

use serde::Serialize;

use super::verdict::{AdviceFacts, BufferFacts, VerdictFacts, advice, last_field, settle_verdict};
use super::{BufferCap, cap_key};
use crate::bdp::Source;
use crate::bdp::{self, Sizing};
use crate::error::Error;
use crate::os::Os;
use crate::tcp::proto::{self, ExchangeError, Hello, ServerResult};
use crate::tcp::tcpinfo::{Breakdown, LimitedBy, TcpInfo};
use crate::text;
use crate::units::Bitrate;

const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// How long the server may take to drain our buffer and answer after we stop.
const RESULT_TIMEOUT: Duration = Duration::from_secs(90);

/// The test to run, with what it needs from beyond the socket, gathered by the caller.
#[derive(Debug, Clone)]
pub struct VerifyRequest {
    /// The host running `tcptune serve`, as the user named it.
    pub host: String,
    /// Its address.
    pub addr: IpAddr,
    pub port: u16,
    /// How long to send; the server grants at most [`proto::MAX_DURATION_MS`].
    pub time: Duration,
    /// The path rate for sizing the advice, when the user gave one.
    pub bandwidth: Option<Bitrate>,
    /// Without `bandwidth`: the speed of this end's link towards the host, bit/s, when known.
    pub link_speed_bps: Option<u64>,
    /// The rate assumed when neither gives one (or the test's goodput, when higher), bit/s.
    pub assumed_rate_bps: u64,
    /// This end's send-buffer cap and its running value.
    pub sender: BufferCap,
}

/// What the test is doing, for a progress display the command draws.
#[derive(Debug, Clone, Copy)]
pub enum Phase {
    /// Sending to `to` for `granted`.
    Sending { to: SocketAddr, granted: Duration },
    /// Done sending; waiting for the receiver's result.
    Sent,
}

#[derive(Debug, Serialize)]
pub struct PathFacts {
    pub bandwidth_bps: u64,
    pub bandwidth_source: Source,
    /// For the flow's minimum RTT, exactly bandwidth / 8 × RTT.
    pub bdp_bytes: serde_json::Value,
    pub sizing: Sizing,
}

#[derive(Debug, Serialize)]
pub struct VerifyReport {
    pub host: String,
    pub addr: String,
    /// Sender → receiver: this end sent.
    pub direction: &'static str,
    pub duration_s: f64,
    pub bytes: u64,
    /// Payload bytes the receiver got, per second of its receiving time, in bit/s.
    pub throughput_bps: f64,
    /// The sender's smoothed RTT at the end of the test (Linux), else the connect time.
    pub rtt_ms: f64,
    pub min_rtt_ms: Option<f64>,
    pub rtt_source: &'static str,
    pub cwnd: Option<u32>,
    pub mss: Option<u32>,
    pub delivery_rate_bps: Option<f64>,
    pub retransmitted_pct: Option<f64>,
    pub busy_ms: Option<f64>,
    pub rwnd_limited_pct: Option<f64>,
    pub sndbuf_limited_pct: Option<f64>,
    pub network_limited_pct: Option<f64>,
    pub app_limited_pct: Option<f64>,
    pub limited_by: Option<LimitedBy>,
    pub path: PathFacts,
    pub receiver: BufferFacts,
    pub sender: BufferFacts,
    /// The largest receive window the receiver advertised, bytes (Linux 6.2+ receivers).
    pub receiver_window: Option<u64>,
    pub advice: Vec<String>,
}

fn measurement(msg: String) -> Error {
    Error::measurement(msg)
}

/// Why `sa` gave no test, for a user of `verify`.
fn refused(sa: SocketAddr, e: ExchangeError) -> Error {
    match e {
        ExchangeError::Send(e) => measurement(format!("{sa} closed the connection: {e}")),
        ExchangeError::NoAnswer(e) => measurement(format!("{sa} gave no answer ({e}): is it a tcptune serve?")),
        ExchangeError::Garbled(e) => measurement(format!("{sa}: {e}")),
        ExchangeError::Busy => {
            measurement(format!("{sa} is busy with another test")).with_hint("try again when it is done")
        }
        ExchangeError::BadVersion(theirs) => Error::usage(format!(
            "{sa} speaks tcptune protocol version {theirs}, this verify speaks {}",
            proto::VERSION
        ))
        .with_hint("use the same tcptune version on both ends"),
    }
}

/// Run the test described by `a` from this end.
pub fn verify(a: &VerifyRequest, on_phase: &mut dyn FnMut(Phase)) -> anyhow::Result<VerifyReport> {
    let sa = SocketAddr::new(a.addr, a.port);
    let (s, connect_ms) = connect(a, sa)?;
    let hello = Hello {
        version: proto::PLAIN_VERSION,
        flags: 0,
        duration_ms: proto::duration_ms(a.time),
    };
    let granted = proto::exchange_hello(&s, &hello, &[]).map_err(|e| refused(sa, e))?;
    on_phase(Phase::Sending { to: sa, granted });
    let (elapsed, info) = send(&s, sa, granted)?;
    on_phase(Phase::Sent);
    let result = read_result(&s, sa)?;
    Ok(report(
        a,
        &Test {
            addr: sa,
            connect_ms,
            elapsed,
            info,
            result,
        },
    ))
}

/// What a test that ran gave: this end's readings and the receiver's result.
struct Test {
    addr: SocketAddr,
    connect_ms: f64,
    /// The time spent sending.
    elapsed: Duration,
    /// The sender's TCP_INFO at the end of sending (Linux).
    info: Option<TcpInfo>,
    result: ServerResult,
}

/// The control connection, with how long the connect took (the RTT where TCP_INFO gives none).
fn connect(a: &VerifyRequest, sa: SocketAddr) -> anyhow::Result<(TcpStream, f64)> {
    let t0 = Instant::now();
    let s = TcpStream::connect_timeout(&sa, CONNECT_TIMEOUT).map_err(|e| {
        measurement(format!("cannot connect to {sa}: {e}")).with_hint(format!(
            "is `tcptune serve` running on {}, and is port {} open?",
            a.host, a.port
        ))
    })?;
    let connect_ms = t0.elapsed().as_secs_f64() * 1000.0;
    s.set_read_timeout(Some(CONNECT_TIMEOUT))?;
    s.set_write_timeout(Some(CONNECT_TIMEOUT))?;
    Ok((s, connect_ms))
}

/// Sends for the `granted` time: how long it took, and the sender's TCP_INFO at the end.
fn send(s: &TcpStream, sa: SocketAddr, granted: Duration) -> anyhow::Result<(Duration, Option<TcpInfo>)> {
    // Short write timeouts so the test stops on time even with the send buffer full.
    s.set_write_timeout(Some(Duration::from_millis(50)))?;
    let (_, elapsed) = proto::send_data(s, granted, u64::MAX, &mut |_, _| {})
        .map_err(|(sent, e)| measurement(format!("the test to {sa} broke off after {}: {e}", text::bytes(sent))))?;
    Ok((elapsed, crate::tcp::tcpinfo::read(s)))
}

/// Ends the data and waits for the receiver's result.
fn read_result(s: &TcpStream, sa: SocketAddr) -> anyhow::Result<ServerResult> {
    s.shutdown(std::net::Shutdown::Write)?;
    s.set_read_timeout(Some(RESULT_TIMEOUT))?;
    let result = proto::read_json_line(s, proto::MAX_RESULT).map_err(|e| match e {
        proto::LineError::Io(e) => measurement(format!("no result from {sa}: {e}")),
        proto::LineError::Json(e) => measurement(format!("{sa} sent a result tcptune cannot read ({e})")),
    })?;
    Ok(result)
}

/// What this end read of the flow.
struct Readings {
    /// The receiver's goodput, bit/s.
    throughput: f64,
    rtt_ms: f64,
    rtt_source: &'static str,
    min_rtt_ms: Option<f64>,
    /// The RTT the buffers are sized for: the minimum where TCP_INFO gives it.
    sizing_rtt_ms: f64,
}

impl Readings {
    fn of(t: &Test) -> Self {
        #[allow(clippy::cast_precision_loss)]
        let throughput = if t.result.duration_us == 0 {
            0.0
        } else {
            t.result.bytes as f64 * 8.0 / (t.result.duration_us as f64 / 1e6)
        };
        let min_rtt_ms = t.info.map(|i| i.min_rtt_ms()).filter(|r| *r > 0.0);
        let (rtt_ms, rtt_source) = match t.info.filter(|i| i.tcpi_rtt > 0) {
            Some(i) => (i.rtt_ms(), "tcp_info"),
            None => (t.connect_ms, "connect"),
        };
        Self {
            throughput,
            rtt_ms,
            rtt_source,
            min_rtt_ms,
            sizing_rtt_ms: min_rtt_ms.unwrap_or(rtt_ms),
        }
    }
}

/// The rate the advice is sized for, and where it came from.
fn path_rate(a: &VerifyRequest, throughput: f64) -> (Bitrate, Source) {
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    match (a.bandwidth, a.link_speed_bps) {
        (Some(b), _) => (b, Source::Given),
        (None, Some(sp)) => (Bitrate::from_bps(sp), Source::Measured),
        // The path carries at least what this test got through.
        (None, None) => (
            Bitrate::from_bps(a.assumed_rate_bps.max(throughput as u64)),
            Source::Assumed,
        ),
    }
}

/// The receiver's buffer as its result tells it (its profile's key when it names none).
fn receiver_facts(result: &ServerResult, needed: u64) -> BufferFacts {
    let receiver_os: Os = match result.os.as_str() {
        "freebsd" => Os::Freebsd,
        "macos" => Os::Macos,
        _ => Os::Linux,
    };
    BufferFacts {
        os: result.os.clone(),
        key: result.rcvbuf_key.clone().or_else(|| cap_key(receiver_os, "buffer")),
        max: result.rcvbuf_value.as_deref().and_then(last_field),
        value: result.rcvbuf_value.clone(),
        needed,
    }
}

fn sender_facts(cap: &BufferCap, needed: u64) -> BufferFacts {
    BufferFacts {
        os: cap.os.to_string(),
        key: cap.key.clone(),
        max: cap.value.as_deref().and_then(last_field),
        value: cap.value.clone(),
        needed,
    }
}

/// The kernel's limited-by breakdown with the verdict settled for `flow`, and the share of the
/// bytes retransmitted.
fn verdict(t: &Test, flow: &VerdictFacts<'_>) -> (Option<Breakdown>, Option<f64>) {
    let elapsed_us = u64::try_from(t.elapsed.as_micros()).unwrap_or(u64::MAX);
    let breakdown = t.info.and_then(|i| i.breakdown(Some(elapsed_us))).map(|mut b| {
        b.limited_by = settle_verdict(&b, flow);
        b
    });
    #[allow(clippy::cast_precision_loss)]
    let retransmitted_pct = t
        .info
        .filter(|i| i.tcpi_bytes_sent > 0)
        .map(|i| (1000.0 * i.tcpi_bytes_retrans as f64 / i.tcpi_bytes_sent as f64).round() / 10.0);
    (breakdown, retransmitted_pct)
}

/// The report of test `t`: the readings, the path's sizing, both ends' buffers, the verdict
/// and the advice.
fn report(a: &VerifyRequest, t: &Test) -> VerifyReport {
    let r = Readings::of(t);
    let (rate, rate_source) = path_rate(a, r.throughput);
    let rtt = crate::units::Span::from_millis_f64(r.sizing_rtt_ms);
    let sizing = bdp::size_buffers(rate, rtt, None);
    let receiver = receiver_facts(&t.result, sizing.buffer);
    let sender = sender_facts(&a.sender, sizing.send_buffer);
    #[allow(clippy::cast_precision_loss)]
    let delivery_rate_bps = t.info.map(|i| i.tcpi_delivery_rate as f64 * 8.0);
    let flow = VerdictFacts {
        throughput_bps: r.throughput,
        sizing_rtt_ms: r.sizing_rtt_ms,
        rate,
        rate_source,
        receiver: &receiver,
        sender: &sender,
        peer_window: t.info.map(|i| u64::from(i.tcpi_snd_wnd)).filter(|&w| w > 0),
        delivery_rate_bps,
    };
    let (breakdown, retransmitted_pct) = verdict(t, &flow);
    let advice = advice(&AdviceFacts {
        flow,
        breakdown: breakdown.as_ref(),
        retransmitted_pct,
    });
    let path = PathFacts {
        bandwidth_bps: rate.bps(),
        bandwidth_source: rate_source,
        bdp_bytes: text::number(bdp::bdp_exact(rate, rtt)),
        sizing,
    };
    VerifyReport {
        host: a.host.clone(),
        addr: t.addr.to_string(),
        direction: "send",
        duration_s: text::ms(t.elapsed.as_secs_f64()),
        bytes: t.result.bytes,
        throughput_bps: r.throughput.round(),
        rtt_ms: text::ms(r.rtt_ms),
        min_rtt_ms: r.min_rtt_ms.map(text::ms),
        rtt_source: r.rtt_source,
        cwnd: t.info.map(|i| i.tcpi_snd_cwnd),
        mss: t.info.map(|i| i.tcpi_snd_mss),
        delivery_rate_bps,
        retransmitted_pct,
        busy_ms: breakdown.map(|b| b.busy_ms),
        rwnd_limited_pct: breakdown.map(|b| b.rwnd_limited_pct),
        sndbuf_limited_pct: breakdown.map(|b| b.sndbuf_limited_pct),
        network_limited_pct: breakdown.map(|b| b.network_limited_pct),
        app_limited_pct: breakdown.and_then(|b| b.app_limited_pct),
        limited_by: breakdown.map(|b| b.limited_by),
        path,
        receiver,
        sender,
        receiver_window: t.result.rcv_wnd,
        advice,
    }
}
