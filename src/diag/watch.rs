//! `tcptune watch`: what holds each flow now. Every interval the caller reads the sockets
//! ([`super::inspect::readings`]); [`Watch::step`] turns two readings of a flow into what
//! happened between them — its rate, its RTT against its minimum, and what held it: the kernel
//! counts, per socket, the time it was busy sending and, of that, the time the peer's receive
//! window or this end's send buffer stopped it (`tcpi_busy_time`, `tcpi_rwnd_limited`,
//! `tcpi_sndbuf_limited`, in jiffies); the rest of the busy time the congestion window
//! decided. [`inspect`](super::inspect) shares those over the flow's whole life; here they are
//! differences over the last interval, so a change made during the transfer shows within one.
//! No printing; the renderer is [`crate::output::watch`].

use std::collections::BTreeMap;
use std::net::SocketAddr;

use serde::Serialize;

use super::inspect::{Process, Reading};
use crate::bdp;
use crate::tcp::tcpinfo::{LimitedBy, TcpInfo};
use crate::text::{self, Foreign};
use crate::units::{Bytes, Span};

/// A sender busy less than this share of an interval did not keep its socket busy: its
/// application held it (it had nothing to send most of the time).
pub const BUSY_MIN: f64 = 0.5;

/// A busy sender at this share or more of the rate its peer's advertised window allows at its
/// lowest RTT is held by that window, whatever the counters' shares: the kernel's
/// receive-window chrono stops at every send that breaks off for another reason (a TSO
/// deferral, the small-queue check), so it undercounts — on the lab, a flow at 15.4 of the
/// 16 Mbit/s its peer's 80 KB window allows at 40 ms counted 24 % of its busy time.
pub const WINDOW_BOUND: f64 = 0.8;

/// The send-buffer chrono runs only while the sender has sent all it holds and its program
/// waits for room (a buffer too small for the path): from this share of the busy time it
/// holds the flow. It undercounts as the receive window's does: 34–42 % on the lab for a flow
/// at 14.1–14.6 Mbit/s beside the 13.1 Mbit/s a 128 KiB tcp_wmem maximum allows at 40 ms.
pub const SNDBUF_MIN_PCT: f64 = 20.0;

/// What this host runs, against which a held flow's fix is said: the maxima of the buffers
/// its flows autotune up to (None: not readable here).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Running {
    /// tcp_rmem's maximum, bytes.
    pub receive_max: Option<u64>,
    /// tcp_wmem's maximum, bytes.
    pub send_max: Option<u64>,
}

/// What a flow did over one interval.
#[derive(Debug, Clone, Serialize)]
pub struct FlowNow {
    pub local: String,
    pub peer: String,
    pub congestion_control: Option<Foreign>,
    pub process: Option<Process>,
    /// Sending: bytes acknowledged over the interval; receiving: bytes received.
    pub rate_bps: f64,
    /// This end sent (acknowledged bytes) rather than only received.
    pub sending: bool,
    pub rtt_ms: f64,
    pub min_rtt_ms: f64,
    /// What held it over the interval; None for a flow that only received, or did nothing.
    pub held_by: Option<LimitedBy>,
    /// Shares of the interval's busy time, percent (None when it was not busy).
    pub busy_pct: f64,
    pub rwnd_limited_pct: Option<f64>,
    pub sndbuf_limited_pct: Option<f64>,
    pub network_limited_pct: Option<f64>,
    /// Bytes retransmitted over the interval.
    pub retransmitted_bytes: u64,
    /// The window the peer advertises now, bytes.
    pub peer_window: Option<u64>,
    /// The rate the limiting buffer allows one flow at the flow's lowest RTT: the peer's
    /// window when the receive window held it, this host's send maximum when the send buffer did.
    pub ceiling_bps: Option<f64>,
    /// Bytes this end has had acknowledged since the flow began (for `--size`).
    pub acked_total: u64,
    /// The path's bandwidth-delay product at the flow's lowest RTT, bytes, when the path's rate
    /// was given (`--bandwidth`): what one flow must keep in flight to fill it.
    pub bdp_bytes: Option<u64>,
    /// The path's rate as given, bit/s.
    pub path_bps: Option<u64>,
}

/// A flow's interval counters at one reading.
#[derive(Debug, Clone, Copy, Default)]
struct Counters {
    at_s: f64,
    acked: u64,
    received: u64,
    busy_us: u64,
    rwnd_us: u64,
    sndbuf_us: u64,
    retrans: u64,
}

impl Counters {
    fn of(at_s: f64, i: &TcpInfo) -> Self {
        Self {
            at_s,
            acked: i.tcpi_bytes_acked,
            received: i.tcpi_bytes_received,
            busy_us: i.tcpi_busy_time,
            rwnd_us: i.tcpi_rwnd_limited,
            sndbuf_us: i.tcpi_sndbuf_limited,
            retrans: i.tcpi_bytes_retrans,
        }
    }
}

/// One flow's whole watch, for the summary.
#[derive(Debug, Clone, Serialize)]
pub struct FlowTotal {
    pub local: String,
    pub peer: String,
    pub process: Option<Process>,
    /// Seconds between its first and last reading.
    pub watched_s: f64,
    pub sent_bytes: u64,
    pub received_bytes: u64,
    pub rate_bps: f64,
    pub sending: bool,
    /// Shares of the busy time over the whole watch, percent.
    pub rwnd_limited_pct: Option<f64>,
    pub sndbuf_limited_pct: Option<f64>,
    pub network_limited_pct: Option<f64>,
    /// Busy share of the watch, percent.
    pub busy_pct: f64,
    /// What held it most of the watch, its ceiling and numbers as in its last interval.
    pub held_by: Option<LimitedBy>,
    pub last: FlowNow,
    /// The flow ended (its socket closed) before the watch did.
    pub ended: bool,
}

/// The summary when the watch ends.
#[derive(Debug, Clone, Serialize)]
pub struct Summary {
    pub watched_s: f64,
    pub flows: Vec<FlowTotal>,
}

#[derive(Debug, Clone)]
struct Tracked {
    first: Counters,
    last: Counters,
    now: Option<FlowNow>,
    ended: bool,
}

/// The flows watched so far, keyed by their two addresses.
#[derive(Debug, Default)]
pub struct Watch {
    running: Running,
    /// The path's rate, bit/s, when given.
    path_bps: Option<u64>,
    flows: BTreeMap<(SocketAddr, SocketAddr), Tracked>,
    started_s: Option<f64>,
    last_s: f64,
}

/// One interval's result: the flows that moved data through it (idle ones are left out), and
/// those that ended in it.
#[derive(Debug, Clone, Serialize)]
pub struct Tick {
    pub at_s: f64,
    pub flows: Vec<FlowNow>,
    pub ended: Vec<String>,
}

impl Watch {
    pub fn new(running: Running) -> Self {
        Self {
            running,
            ..Self::default()
        }
    }

    /// Each flow's BDP against the path's rate `path_bps` (`--bandwidth`).
    #[must_use]
    pub fn with_path(self, path_bps: Option<u64>) -> Self {
        Self { path_bps, ..self }
    }

    /// Take the readings made at `at_s` (seconds since the watch began). A flow seen for the
    /// first time only starts its counters; one seen before gets its interval. The busiest
    /// sender first.
    pub fn step(&mut self, at_s: f64, readings: &[Reading]) -> Tick {
        self.started_s.get_or_insert(at_s);
        self.last_s = at_s;
        let mut seen = std::collections::BTreeSet::new();
        let mut flows = Vec::new();
        for r in readings {
            let key = (r.local, r.peer);
            seen.insert(key);
            let c = Counters::of(at_s, &r.info);
            match self.flows.get_mut(&key) {
                Some(t) if !t.ended => {
                    let moved = c.acked > t.last.acked || c.received > t.last.received || c.busy_us > t.last.busy_us;
                    let now = interval(&t.last, &c, r, (self.running, self.path_bps));
                    t.last = c;
                    // An idle flow (a control connection, a session at rest) is not shown.
                    if moved {
                        t.now = Some(now.clone());
                        flows.push(now);
                    }
                }
                _ => {
                    self.flows.insert(
                        key,
                        Tracked {
                            first: c,
                            last: c,
                            now: None,
                            ended: false,
                        },
                    );
                }
            }
        }
        let mut ended = Vec::new();
        for (key, t) in &mut self.flows {
            if !t.ended && !seen.contains(key) {
                t.ended = true;
                ended.push(format!("{} -> {}", key.0, key.1));
            }
        }
        flows.sort_by(|a, b| b.rate_bps.total_cmp(&a.rate_bps));
        Tick { at_s, flows, ended }
    }

    /// Every flow that moved data through at least one interval, from its first reading to its
    /// last.
    pub fn summary(&self) -> Summary {
        let mut flows: Vec<FlowTotal> = self
            .flows
            .values()
            .filter_map(|t| {
                let last = t.now.clone()?;
                let m = Moved::between(&t.first, &t.last);
                Some(FlowTotal {
                    local: last.local.clone(),
                    peer: last.peer.clone(),
                    process: last.process.clone(),
                    watched_s: m.secs,
                    sent_bytes: m.sent,
                    received_bytes: m.received,
                    rate_bps: m.rate_bps,
                    sending: m.sending,
                    rwnd_limited_pct: m.shares.map(|s| s.rwnd),
                    sndbuf_limited_pct: m.shares.map(|s| s.sndbuf),
                    network_limited_pct: m.shares.map(|s| s.network),
                    busy_pct: m.busy_pct(),
                    held_by: m
                        .sending
                        .then(|| {
                            let rtt = Span::from_millis_f64(last.min_rtt_ms.max(0.001));
                            held(
                                m.busy_share,
                                m.shares,
                                false,
                                window_bound(m.rate_bps, last.peer_window, rtt),
                            )
                        })
                        .flatten(),
                    last,
                    ended: t.ended,
                })
            })
            .collect();
        flows.sort_by(|a, b| b.rate_bps.total_cmp(&a.rate_bps));
        Summary {
            watched_s: self.started_s.map_or(0.0, |s| self.last_s - s),
            flows,
        }
    }
}

/// Shares of a busy time, percent.
#[derive(Debug, Clone, Copy)]
struct Shares {
    rwnd: f64,
    sndbuf: f64,
    network: f64,
}

impl Shares {
    #[allow(clippy::cast_precision_loss)]
    fn of(busy_us: u64, rwnd_us: u64, sndbuf_us: u64) -> Option<Self> {
        (busy_us > 0).then(|| {
            let b = busy_us as f64;
            let rwnd = (rwnd_us as f64 / b * 100.0).min(100.0);
            let sndbuf = (sndbuf_us as f64 / b * 100.0).min(100.0 - rwnd);
            Self {
                rwnd,
                sndbuf,
                network: 100.0 - rwnd - sndbuf,
            }
        })
    }
}

/// What a flow did between two readings (an interval, or the whole watch): its time, its bytes
/// each way, its busy time's shares and its rate (what it sent, else what it received).
struct Moved {
    secs: f64,
    sent: u64,
    received: u64,
    /// It sent, or was busy sending.
    sending: bool,
    shares: Option<Shares>,
    /// Busy time ÷ the time between the readings.
    busy_share: f64,
    rate_bps: f64,
}

impl Moved {
    #[allow(clippy::cast_precision_loss)]
    fn between(a: &Counters, b: &Counters) -> Self {
        let secs = (b.at_s - a.at_s).max(1e-3);
        let busy = b.busy_us.saturating_sub(a.busy_us);
        let sent = b.acked.saturating_sub(a.acked);
        let received = b.received.saturating_sub(a.received);
        let sending = sent > 0 || busy > 0;
        Self {
            secs,
            sent,
            received,
            sending,
            shares: Shares::of(
                busy,
                b.rwnd_us.saturating_sub(a.rwnd_us),
                b.sndbuf_us.saturating_sub(a.sndbuf_us),
            ),
            busy_share: busy as f64 / 1e6 / secs,
            rate_bps: if sending { sent } else { received } as f64 * 8.0 / secs,
        }
    }

    fn busy_pct(&self) -> f64 {
        (self.busy_share * 100.0).min(100.0)
    }
}

/// What held a sender busy `busy_share` of the time with these shares of it: its application
/// when it was busy less than [`BUSY_MIN`] of the time; the receive window when it ran at
/// [`WINDOW_BOUND`] of what its peer's window allows (`window_bound`); the send buffer from
/// [`SNDBUF_MIN_PCT`] of the busy time; else the larger of the receive window's share and the
/// network's, and the network's turns to its application's when `app_now` (nothing unsent and
/// the congestion window half empty: a full send buffer shows that too, hence its turn first).
fn held(busy_share: f64, shares: Option<Shares>, app_now: bool, window_bound: bool) -> Option<LimitedBy> {
    let Some(s) = shares else {
        return Some(LimitedBy::Application);
    };
    if busy_share < BUSY_MIN {
        return Some(LimitedBy::Application);
    }
    Some(if window_bound {
        LimitedBy::ReceiveWindow
    } else if s.sndbuf >= SNDBUF_MIN_PCT && s.sndbuf >= s.rwnd {
        LimitedBy::SendBuffer
    } else if s.rwnd > s.network {
        LimitedBy::ReceiveWindow
    } else if app_now {
        LimitedBy::Application
    } else {
        LimitedBy::Network
    })
}

/// A flow between two readings.
fn interval(a: &Counters, b: &Counters, r: &Reading, (running, path_bps): (Running, Option<u64>)) -> FlowNow {
    let i = &r.info;
    let m = Moved::between(a, b);
    let min_rtt = if i.tcpi_min_rtt > 0 { i.min_rtt_ms() } else { i.rtt_ms() };
    let rtt = Span::from_millis_f64(min_rtt.max(0.001));
    let peer_window = Some(u64::from(i.tcpi_snd_wnd)).filter(|&w| w > 0);
    let held_by = if m.sending {
        held(
            m.busy_share,
            m.shares,
            i.application_limited_now(),
            window_bound(m.rate_bps, peer_window, rtt),
        )
    } else {
        None
    };
    let ceiling_bps = match held_by {
        Some(LimitedBy::ReceiveWindow) => peer_window.map(|w| bdp::max_throughput_bps(Bytes::new(w), rtt)),
        Some(LimitedBy::SendBuffer) => running.send_max.map(|w| send_ceiling_bps(w, rtt)),
        _ => None,
    };
    FlowNow {
        local: r.local.to_string(),
        peer: r.peer.to_string(),
        congestion_control: r.cc.clone(),
        process: r.process.clone(),
        rate_bps: m.rate_bps,
        sending: m.sending,
        rtt_ms: text::ms(i.rtt_ms()),
        min_rtt_ms: text::ms(min_rtt),
        held_by,
        busy_pct: m.busy_pct(),
        rwnd_limited_pct: m.shares.map(|s| s.rwnd),
        sndbuf_limited_pct: m.shares.map(|s| s.sndbuf),
        network_limited_pct: m.shares.map(|s| s.network),
        retransmitted_bytes: b.retrans.saturating_sub(a.retrans),
        peer_window,
        ceiling_bps,
        acked_total: b.acked,
        bdp_bytes: path_bps.map(|p| bdp::bdp_bytes(crate::units::Bitrate::from_bps(p), rtt)),
        path_bps,
    }
}

/// The rate a send buffer of `max` bytes holds one flow to at `rtt`: about half of it is data
/// (the kernel counts each buffer's overhead against it, as it does the receive buffer's,
/// [`bdp::DEFAULT_WINDOW_SHARE`]).
#[allow(
    clippy::cast_possible_truncation,
    clippy::cast_sign_loss,
    clippy::cast_precision_loss
)]
pub fn send_ceiling_bps(max: u64, rtt: Span) -> f64 {
    bdp::max_throughput_bps(Bytes::new((max as f64 * bdp::DEFAULT_WINDOW_SHARE) as u64), rtt)
}

/// Whether `rate_bps` is [`WINDOW_BOUND`] or more of what `window` allows at `rtt`.
fn window_bound(rate_bps: f64, window: Option<u64>, rtt: Span) -> bool {
    window.is_some_and(|w| rate_bps >= WINDOW_BOUND * bdp::max_throughput_bps(Bytes::new(w), rtt))
}

/// The time `remaining` bytes take at `rate_bps`; None at no rate.
pub fn time_for(remaining: u64, rate_bps: f64) -> Option<f64> {
    #[allow(clippy::cast_precision_loss)]
    (rate_bps > 0.0).then(|| remaining as f64 * 8.0 / rate_bps)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reading(port: u16, i: TcpInfo) -> Reading {
        Reading {
            local: format!("198.18.0.1:{port}").parse().expect("addr"),
            peer: "198.18.0.2:5201".parse().expect("addr"),
            cc: Some(Foreign::new("cubic")),
            info: i,
            process: None,
        }
    }

    fn info(acked: u64, busy_us: u64, rwnd_us: u64, sndbuf_us: u64) -> TcpInfo {
        TcpInfo {
            tcpi_rtt: 50_400,
            tcpi_min_rtt: 50_000,
            tcpi_snd_cwnd: 400,
            tcpi_snd_mss: 1448,
            tcpi_unacked: 380,
            tcpi_notsent_bytes: 100_000,
            tcpi_snd_wnd: 524_288,
            tcpi_bytes_acked: acked,
            tcpi_busy_time: busy_us,
            tcpi_rwnd_limited: rwnd_us,
            tcpi_sndbuf_limited: sndbuf_us,
            ..TcpInfo::default()
        }
    }

    #[test]
    fn the_last_interval_names_the_holder_not_the_flows_life() {
        let running = Running {
            receive_max: Some(6_291_456),
            send_max: Some(262_144),
        };
        let mut w = Watch::new(running).with_path(Some(200_000_000));
        // Ten seconds held by the send buffer, then one second by the receive window.
        let t0 = w.step(0.0, &[reading(40000, info(0, 10_000_000, 0, 9_000_000))]);
        assert!(t0.flows.is_empty(), "a first reading has no interval yet");
        let t1 = w.step(1.0, &[reading(40000, info(10_000_000, 11_000_000, 950_000, 9_000_000))]);
        let f = &t1.flows[0];
        assert_eq!(f.held_by, Some(LimitedBy::ReceiveWindow), "{f:?}");
        assert_eq!(f.rate_bps, 80e6);
        assert_eq!(f.rwnd_limited_pct, Some(95.0));
        // 200 Mbit/s × 50 ms: 1,250,000 bytes must be in flight.
        assert_eq!((f.bdp_bytes, f.path_bps), (Some(1_250_000), Some(200_000_000)));
        // The peer's 512 KiB at the 50 ms minimum: 83.89 Mbit/s.
        assert_eq!(f.ceiling_bps.map(|c| c.round()), Some(83_886_080.0));
        // Then the send buffer: its ceiling is this host's send maximum.
        let t2 = w.step(2.0, &[reading(40000, info(15_000_000, 12_000_000, 950_000, 9_900_000))]);
        let f = &t2.flows[0];
        assert_eq!(f.held_by, Some(LimitedBy::SendBuffer), "{f:?}");
        assert_eq!(f.ceiling_bps.map(|c| c.round()), Some(20_971_520.0));
        // The summary's shares are over the watch (2 s): 950 ms rwnd, 900 ms sndbuf of 2 s busy.
        let s = w.summary();
        assert_eq!(s.watched_s, 2.0);
        let t = &s.flows[0];
        assert_eq!((t.sent_bytes, t.rate_bps), (15_000_000, 60e6));
        assert_eq!(t.rwnd_limited_pct, Some(47.5));
        assert_eq!(t.sndbuf_limited_pct, Some(45.0));
        assert_eq!(t.held_by, Some(LimitedBy::ReceiveWindow));
        assert!(!t.ended);
    }

    #[test]
    fn a_free_flow_is_the_networks_an_idle_one_its_applications_and_an_end_is_said() {
        let mut w = Watch::new(Running::default());
        let free = |acked, busy| {
            let mut i = info(acked, busy, 0, 0);
            i.tcpi_snd_wnd = 6 << 20;
            reading(40001, i)
        };
        let idle = |acked, busy| {
            let mut i = info(acked, busy, 0, 0);
            i.tcpi_notsent_bytes = 0;
            i.tcpi_unacked = 2;
            reading(40002, i)
        };
        w.step(0.0, &[free(0, 0), idle(0, 0)]);
        let t = w.step(1.0, &[free(12_500_000, 1_000_000), idle(10_000, 100_000)]);
        assert_eq!(t.flows.len(), 2);
        assert_eq!(t.flows[0].held_by, Some(LimitedBy::Network));
        assert_eq!(t.flows[0].ceiling_bps, None);
        assert_eq!(t.flows[1].held_by, Some(LimitedBy::Application));
        // Busy the whole second but nothing unsent and the window nearly empty: the application.
        let t = w.step(2.0, &[free(25_000_000, 2_000_000), idle(20_000, 1_100_000)]);
        assert_eq!(t.flows[1].held_by, Some(LimitedBy::Application));
        let t = w.step(3.0, &[free(37_500_000, 3_000_000)]);
        assert_eq!(t.ended, ["198.18.0.1:40002 -> 198.18.0.2:5201"]);
        let s = w.summary();
        assert!(s.flows.iter().any(|f| f.ended && f.local.ends_with(":40002")));
    }

    #[test]
    fn a_flow_at_its_peers_window_is_held_by_it_whatever_the_counters_say() {
        // Recorded on the lab: 15.4 Mbit/s at a 40.2 ms minimum beside an 80,512-byte window
        // (16.0 Mbit/s), the receive-window chrono 24 % of the busy time.
        let at = |acked, busy, rwnd| {
            let mut i = info(acked, busy, rwnd, 0);
            (i.tcpi_min_rtt, i.tcpi_snd_wnd) = (40_201, 80_512);
            reading(40004, i)
        };
        let mut w = Watch::new(Running::default());
        w.step(0.0, &[at(0, 0, 0)]);
        let t = w.step(1.0, &[at(1_925_000, 1_000_000, 244_000)]);
        let f = &t.flows[0];
        assert_eq!(f.rwnd_limited_pct, Some(24.4));
        assert_eq!(f.held_by, Some(LimitedBy::ReceiveWindow), "{f:?}");
        assert_eq!(w.summary().flows[0].held_by, Some(LimitedBy::ReceiveWindow));
        // Half that rate, with the same counters: the network.
        let t = w.step(2.0, &[at(2_887_500, 2_000_000, 488_000)]);
        assert_eq!(t.flows[0].held_by, Some(LimitedBy::Network), "{:?}", t.flows[0]);
    }

    #[test]
    fn a_receiving_flow_has_a_rate_and_no_holder() {
        let mut w = Watch::new(Running::default());
        let rx = |received| {
            reading(
                40003,
                TcpInfo {
                    tcpi_rtt: 50_000,
                    tcpi_bytes_received: received,
                    ..TcpInfo::default()
                },
            )
        };
        w.step(0.0, &[rx(0)]);
        let t = w.step(0.5, &[rx(5_000_000)]);
        let f = &t.flows[0];
        assert!(!f.sending && f.held_by.is_none(), "{f:?}");
        assert_eq!(f.rate_bps, 80e6);
        assert_eq!(time_for(10_000_000, f.rate_bps), Some(1.0));
    }
}
