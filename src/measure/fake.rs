//! A deterministic prober for tests: sends nothing, resolves nothing. The binary reaches it
//! through the hidden `--fake-prober SPEC` option ([`FakeProber::from_spec`]), so CLI tests of
//! `advise --host`, `check --host` and `apply --host` need no root and no lab.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use super::evidence::{Evidence, Passive, TcpTest, TestPeer};
use super::{
    EvidenceRequest, Family, HostMeasurement, LinkFacts, Method, PathProber, ProbeOptions, RttStats, TestMode,
    link::speed_unknown_note,
    resolve,
    train::{self, CapacityEstimate},
};
use crate::error::Error;
use crate::units::{Bitrate, Span};

/// Every host answers `probes` ICMP probes of exactly `rtt_ms` over interface `fake0`
/// (MTU 1500, full duplex, `speed_bps`), and — when [`ProbeOptions::capacity`] is on — five
/// packet trains of 48 × 1500 bytes that all give exactly `capacity_bps` (no estimate when None).
///
/// - IP literals keep their address; names get 198.18.0.1 (or 2001:db8::1 when only IPv6 is
///   allowed). Nothing is ever sent to them.
/// - Names under `.invalid` and empty names fail as the real prober fails (`Error::Measurement`,
///   exit 4), and so do literals of a disallowed family (`Error::Usage`).
/// - A negative or non-finite `rtt_ms` simulates an unreachable host: the "no reply" error.
#[derive(Debug, Clone, PartialEq)]
pub struct FakeProber {
    pub rtt_ms: f64,
    pub speed_bps: Option<u64>,
    pub capacity_bps: Option<u64>,
    /// The path test's readings; None: no peer answers (the passive evidence is empty).
    pub test: Option<FakeTest>,
    /// Others' queue the probes meet, ms: the first probes see the RTT this much above `rtt_ms`,
    /// the queue watch sees it drain to nothing and rise back ([`super::queue`]); None: no
    /// watch reading.
    pub seen_ms: Option<f64>,
}

/// What a fake path test reads: loss after startup, queue depth (× BDP), the receiver's
/// window share and the TCP delivery rate.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct FakeTest {
    pub loss_pct: f64,
    pub queue_bdp: f64,
    pub share: Option<f64>,
    pub rate_bps: Option<u64>,
    /// The far end sending (a reverse test) when set: its own loss, rate and queue (None: as
    /// the forward test's).
    pub reverse: Option<FakeReverse>,
    /// A queue others keep standing, ms: the probes meet it, the test's flow sees the base RTT
    /// once and meets it while it sends paced, and loses where it overflows.
    pub standing_ms: f64,
    /// A policer holds the test at its rate: startup loses 2 % at the base RTT.
    pub policed: bool,
    /// Retransmissions after startup the receiver reported as duplicates (D-SACK).
    pub spurious: u64,
}

/// The reverse test of a [`FakeTest`]: what differs from the forward one.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct FakeReverse {
    pub loss_pct: Option<f64>,
    pub rate_bps: Option<u64>,
    pub queue_bdp: Option<f64>,
}

impl FakeProber {
    pub const INTERFACE: &'static str = "fake0";
    /// A prober whose every host is unreachable: no RTT, no speed, no peer.
    pub const UNREACHABLE: FakeProber = FakeProber {
        rtt_ms: f64::NAN,
        speed_bps: None,
        capacity_bps: None,
        test: None,
        seen_ms: None,
    };

    fn addr_for(host: &str, family: Option<Family>) -> Result<IpAddr, Error> {
        if let Some(ip) = resolve::parse_literal(host) {
            if let Some(f) = family
                && !f.matches(&ip)
            {
                return Err(Error::usage(format!("{host} is not an {} address", f.label())));
            }
            return Ok(ip);
        }
        resolve::check_name(host)?;
        Ok(match family {
            Some(Family::V6) => IpAddr::V6(Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, 1)),
            _ => IpAddr::V4(Ipv4Addr::new(198, 18, 0, 1)),
        })
    }
}

impl FakeProber {
    /// A fake from a spec of comma-separated `key=value` pairs, e.g. `rtt=150ms,rate=500mbit`:
    /// - `rtt=DUR`: every probe's round trip; `rtt=unreachable`: no host answers (exit 4);
    /// - `speed=RATE`: the egress link's speed (default: unknown);
    /// - `capacity=RATE`: the packet trains' rate (default: no estimate);
    /// - `rate=RATE`: both speed and capacity;
    /// - a path test answers when any of these is given: `loss=PCT` (retransmitted after
    ///   startup, default 0), `queue=F` (the queue it filled, × BDP, default 1), `share=F` (the
    ///   receiver's window share), `tcp-rate=RATE` (its delivery rate; default the capacity,
    ///   else the speed, else 1 Gbit/s), `standing=DUR` (a queue others keep: the probes meet
    ///   it, the test's paced flow too), `police=1` (a policer: startup loses 2 % at the base
    ///   RTT), `spurious=N` (retransmissions the receiver got twice);
    /// - `seen=DUR`: others' queue the probes meet without a test: the first probes see the RTT
    ///   that much higher, the queue watch sees it drain and rise back;
    ///
    /// `rtt` is required; units are tcptune's ([`crate::units`]).
    pub fn from_spec(spec: &str) -> Result<Self, String> {
        let mut rtt_ms = None;
        let (mut speed_bps, mut capacity_bps) = (None, None);
        let mut test: Option<FakeTest> = None;
        let mut seen_ms = None;
        let num = |v: &str| v.trim_end_matches('%').parse::<f64>().map_err(|e| format!("{v}: {e}"));
        for pair in spec.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let (key, value) = pair
                .split_once('=')
                .ok_or_else(|| format!("\"{pair}\" is not key=value"))?;
            let rate = || value.parse::<Bitrate>().map(Bitrate::bps).map_err(|e| e.to_string());
            match key.trim() {
                "rtt" if value == "unreachable" => rtt_ms = Some(f64::NAN),
                "rtt" => rtt_ms = Some(value.parse::<Span>().map_err(|e| e.to_string())?.as_millis_f64()),
                "speed" => speed_bps = Some(rate()?),
                "capacity" => capacity_bps = Some(rate()?),
                "rate" => {
                    speed_bps = Some(rate()?);
                    capacity_bps = speed_bps;
                }
                "loss" => test.get_or_insert(FakeTest::clean()).loss_pct = num(value)?,
                "queue" => test.get_or_insert(FakeTest::clean()).queue_bdp = num(value)?,
                "share" => test.get_or_insert(FakeTest::clean()).share = Some(num(value)?),
                "tcp-rate" => test.get_or_insert(FakeTest::clean()).rate_bps = Some(rate()?),
                "rloss" => reverse(&mut test).loss_pct = Some(num(value)?),
                "rrate" => reverse(&mut test).rate_bps = Some(rate()?),
                "rqueue" => reverse(&mut test).queue_bdp = Some(num(value)?),
                "standing" => {
                    test.get_or_insert(FakeTest::clean()).standing_ms =
                        value.parse::<Span>().map_err(|e| e.to_string())?.as_millis_f64();
                }
                "seen" => seen_ms = Some(value.parse::<Span>().map_err(|e| e.to_string())?.as_millis_f64()),
                "police" => test.get_or_insert(FakeTest::clean()).policed = value == "1",
                "spurious" => test.get_or_insert(FakeTest::clean()).spurious = num(value)? as u64,
                other => {
                    return Err(format!(
                        "unknown key \"{other}\": expected rtt, speed, capacity, rate, loss, queue, share, tcp-rate, rloss, rrate, rqueue, standing, seen, police or spurious"
                    ));
                }
            }
        }
        Ok(Self {
            rtt_ms: rtt_ms.ok_or("rtt=DUR (or rtt=unreachable) is required")?,
            speed_bps,
            capacity_bps,
            test,
            seen_ms,
        })
    }
}

/// The spec's reverse test, made on first mention (with a forward test beside it).
fn reverse(test: &mut Option<FakeTest>) -> &mut FakeReverse {
    test.get_or_insert(FakeTest::clean())
        .reverse
        .get_or_insert_with(FakeReverse::default)
}

impl FakeTest {
    /// A clean path with a queue of one BDP.
    pub fn clean() -> Self {
        Self {
            queue_bdp: 1.0,
            ..Self::default()
        }
    }
}

impl PathProber for FakeProber {
    fn measure(&self, hosts: &[String], opts: &ProbeOptions) -> Result<Vec<HostMeasurement>, Error> {
        opts.validate()?;
        hosts
            .iter()
            .map(|host| {
                let addr = Self::addr_for(host, opts.family)?;
                if !self.rtt_ms.is_finite() || self.rtt_ms < 0.0 {
                    let ports = opts
                        .effective_ports()
                        .iter()
                        .map(u16::to_string)
                        .collect::<Vec<_>>()
                        .join(", ");
                    return Err(Error::measurement(format!(
                            "no reply from {host} ({addr}): {n} ICMP echo requests and {n} TCP connects to ports {ports} timed out",
                            n = opts.probes
                        )).with_hint(super::no_reply_hint(crate::host::euid())));
                }
                let standing = self.test.map_or(0.0, |t| t.standing_ms) + self.seen_ms.unwrap_or(0.0);
                let samples = vec![self.rtt_ms + standing; opts.probes as usize];
                let queue = self.seen_ms.filter(|_| opts.watch).and_then(|q| {
                    // A loss drains the queue at the start; it rises back over the watch.
                    use super::queue::{INTERVAL, STEP};
                    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
                    let n = (STEP.as_secs_f64() / INTERVAL.as_secs_f64()).round() as u32;
                    let interval_ms = INTERVAL.as_secs_f64() * 1000.0;
                    let samples_ms: Vec<f64> =
                        (0..n).map(|i| self.rtt_ms + q * f64::from(i) / f64::from(n - 1)).collect();
                    Some(super::queue::QueueWatch {
                        interval_ms,
                        seconds: STEP.as_secs_f64(),
                        sent: n,
                        reading: super::queue::read(&samples_ms, interval_ms)?,
                        samples_ms,
                    })
                });
                let mut link = LinkFacts {
                    interface: Some(Self::INTERFACE.to_string()),
                    speed_bps: self.speed_bps,
                    duplex: Some("full".to_string()),
                    mtu: Some(1500),
                    route_mtu: None,
                    source: Some(match addr {
                        IpAddr::V4(_) => IpAddr::V4(Ipv4Addr::new(198, 18, 0, 2)),
                        IpAddr::V6(_) => {
                            IpAddr::V6(Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, 2))
                        }
                    }),
                    gateway: None,
                    notes: Vec::new(),
                };
                if self.speed_bps.is_none() {
                    link.notes.push(speed_unknown_note(Self::INTERFACE));
                }
                let capacity = self.capacity_bps.filter(|_| opts.capacity).map(|bps| CapacityEstimate {
                    bps,
                    trains: train::DEFAULT_TRAINS,
                    used: train::DEFAULT_TRAINS,
                    dispersed: train::DEFAULT_TRAINS,
                    agreeing: train::DEFAULT_TRAINS,
                    agreed: true,
                    samples_bps: vec![bps; train::DEFAULT_TRAINS as usize],
                    packet_bytes: train::MAX_PACKET,
                    per_train: train::DEFAULT_PER_TRAIN,
                    sender_limited: false,
                    reading: train::Reading::Trains,
                    bursty: None,
                    long: None,
                });
                Ok(HostMeasurement {
                    host: host.clone(),
                    addr,
                    rtt: RttStats::compute(Method::Icmp, opts.probes, samples),
                    link,
                    capacity,
                    queue,
                    notes: Vec::new(),
                    // Nothing is sent, so nothing takes time: no phase is said.
                    took: super::Took::default(),
                })
            })
            .collect()
    }

    fn evidence(&self, m: &HostMeasurement, req: &EvidenceRequest, _opts: &ProbeOptions) -> Result<Evidence, Error> {
        let Some(f) = self.test.filter(|_| req.mode != TestMode::Off) else {
            return Ok(Evidence {
                test_skipped: Some(if req.mode == TestMode::Off {
                    "the path test was turned off (--no-path-test)".to_string()
                } else {
                    format!("no tcptune serve on {} (fake)", m.addr)
                }),
                passive: Some(Passive::default()),
                ..Evidence::default()
            });
        };
        let forward = self.shaped(self.test_of(m, req, f.loss_pct, f.rate_bps, f.queue_bdp, f.share), &f);
        let reverse = f.reverse.map(|r| TcpTest {
            direction: crate::measure::evidence::Direction::Reverse,
            ..self.test_of(
                m,
                req,
                r.loss_pct.unwrap_or(f.loss_pct),
                r.rate_bps.or(f.rate_bps),
                r.queue_bdp.unwrap_or(f.queue_bdp),
                f.share,
            )
        });
        Ok(Evidence {
            test: Some(forward),
            reverse_skipped: reverse
                .is_none()
                .then(|| "the fake far end does not send (no rloss, rrate or rqueue in the spec)".to_string()),
            reverse,
            ..Evidence::default()
        })
    }
}

impl FakeProber {
    /// `t` with the shape its spec gives: the queue others keep, a policer, spurious
    /// retransmissions (none of them by default: a flow alone, its random loss at the base RTT).
    fn shaped(&self, t: TcpTest, f: &FakeTest) -> TcpTest {
        let loss_queue = if f.standing_ms > 0.0 && !f.policed {
            f.standing_ms + self.rtt_ms * f.queue_bdp.min(0.1)
        } else {
            0.0
        };
        TcpTest {
            shape: Some(crate::tcp::flow::Shape {
                steady_rtt_ms: Some(self.rtt_ms + f.standing_ms),
                loss_queue_ms: Some(loss_queue),
                startup_retrans_segs: Some(if f.policed { 2_000 } else { 100 }),
                startup_segs_out: Some(100_000),
                steady_spurious_segs: Some(f.spurious),
                reordering: Some(f.spurious * 2),
                steady_rate_spread: Some(0.05),
                startup_delivered_bps: t.delivery_rate_bps,
                full_queue_delivered_bps: t.delivery_rate_bps,
                paced_delivered_bps: t.delivery_rate_bps,
            }),
            steady_retrans_segs: t.steady_retrans_segs.map(|r| r + f.spurious),
            ..t
        }
    }

    /// One fake test: a million segments after startup, `loss_pct` of them retransmitted, at
    /// `rate` (else the trains', the link's, 1 Gbit/s), its RTT grown by `queue_bdp` × itself.
    fn test_of(
        &self,
        m: &HostMeasurement,
        req: &EvidenceRequest,
        loss_pct: f64,
        rate: Option<u64>,
        queue_bdp: f64,
        share: Option<f64>,
    ) -> TcpTest {
        let rate = rate.or(self.capacity_bps).or(self.speed_bps).unwrap_or(1_000_000_000);
        let segs: u64 = 1_000_000;
        #[allow(
            clippy::cast_possible_truncation,
            clippy::cast_sign_loss,
            clippy::cast_precision_loss
        )]
        let retrans = (loss_pct / 100.0 * segs as f64).round() as u64;
        #[allow(clippy::cast_precision_loss)]
        TcpTest {
            peer: Some(if req.mode == TestMode::Iperf3 {
                TestPeer::Iperf3
            } else {
                TestPeer::Tcptune
            }),
            addr: std::net::SocketAddr::new(m.addr, req.port()).to_string(),
            cc: req.cc.clone(),
            limit_s: req.time.as_secs_f64(),
            limit_bytes: req.max_bytes,
            duration_s: 10.0,
            bytes: rate / 8 * 10,
            goodput_bps: rate as f64,
            delivery_rate_bps: Some(rate as f64),
            segs_out: Some(segs + 10_000),
            retrans_segs: Some(retrans + 50),
            steady_segs_out: Some(segs),
            steady_retrans_segs: Some(retrans),
            min_rtt_ms: Some(self.rtt_ms),
            loaded_rtt_ms: Some(self.rtt_ms * (1.0 + queue_bdp)),
            window_share: share,
            series: Self::series(rate as f64, retrans),
            ..TcpTest::default()
        }
    }

    /// A quarter-second series over the fake test's 10 s: startup doubling up to `rate` in the
    /// first second, then flat, its `retrans` spread evenly after startup.
    fn series(rate: f64, retrans: u64) -> Vec<crate::measure::evidence::Point> {
        let steady = 36;
        (1..=40u32)
            .map(|i| {
                let startup = i <= 4;
                crate::measure::evidence::Point {
                    t_s: f64::from(i) * 0.25,
                    rate_bps: if startup {
                        rate / f64::from(1u32 << (4 - i))
                    } else {
                        rate
                    },
                    retrans: Some(if startup { 0 } else { retrans / steady }),
                }
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hosts(h: &[&str]) -> Vec<String> {
        h.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn deterministic_results_in_order() {
        let p = FakeProber {
            rtt_ms: 42.5,
            speed_bps: Some(1_000_000_000),
            capacity_bps: Some(87_654_321),
            test: None,
            seen_ms: None,
        };
        let out = p
            .measure(&hosts(&["example.test", "::1"]), &ProbeOptions::default())
            .expect("fake measures");
        assert_eq!(out.len(), 2);
        assert_eq!(out[0].host, "example.test");
        assert_eq!(out[0].addr, IpAddr::V4(Ipv4Addr::new(198, 18, 0, 1)));
        assert_eq!(out[1].addr, IpAddr::V6(Ipv6Addr::LOCALHOST));
        let rtt = &out[0].rtt;
        assert_eq!((rtt.sent, rtt.received, rtt.loss_pct), (10, 10, 0.0));
        assert_eq!(
            (rtt.min_ms, rtt.avg_ms, rtt.max_ms, rtt.mdev_ms),
            (42.5, 42.5, 42.5, 0.0)
        );
        assert_eq!(out[0].link.speed_bps, Some(1_000_000_000));
        assert!(out[0].link.notes.is_empty());
        assert_eq!(out[1].capacity.as_ref().map(|c| c.bps), Some(87_654_321));
        // Serializable for --json.
        let json = serde_json::to_value(&out).expect("json");
        assert_eq!(json[0]["rtt"]["method"]["kind"], "icmp");
        assert_eq!(json[0]["capacity"]["samples_bps"][4], 87_654_321);
        let off = ProbeOptions {
            capacity: false,
            ..ProbeOptions::default()
        };
        assert_eq!(p.measure(&hosts(&["a"]), &off).expect("fake")[0].capacity, None);
    }

    #[test]
    fn specs() {
        let p = FakeProber::from_spec("rtt=150ms,rate=500mbit").expect("spec");
        assert_eq!(
            p,
            FakeProber {
                rtt_ms: 150.0,
                speed_bps: Some(500_000_000),
                capacity_bps: Some(500_000_000),
                test: None,
                seen_ms: None,
            }
        );
        let p = FakeProber::from_spec("rtt=40ms, capacity=50mbit").expect("spec");
        assert_eq!((p.speed_bps, p.capacity_bps), (None, Some(50_000_000)));
        assert!(FakeProber::from_spec("rtt=unreachable").expect("spec").rtt_ms.is_nan());
        assert!(FakeProber::from_spec("speed=1gbit").is_err(), "rtt is required");
        assert!(FakeProber::from_spec("rtt=150").is_err(), "units are required");
        assert!(FakeProber::from_spec("rtt=1ms,jitter=1").is_err());
        let p = FakeProber::from_spec("rtt=150ms,loss=0.01,share=0.35").expect("spec");
        assert_eq!(
            p.test,
            Some(FakeTest {
                loss_pct: 0.01,
                queue_bdp: 1.0,
                share: Some(0.35),
                rate_bps: None,
                reverse: None,
                standing_ms: 0.0,
                policed: false,
                spurious: 0,
            })
        );
        let p = FakeProber::from_spec("rtt=100ms,standing=200ms,police=1,spurious=4").expect("spec");
        let t = p.test.expect("a test");
        assert_eq!((t.standing_ms, t.policed, t.spurious), (200.0, true, 4));
        let p = FakeProber::from_spec("rtt=150ms,rloss=1").expect("spec");
        assert_eq!(
            p.test.and_then(|t| t.reverse),
            Some(FakeReverse {
                loss_pct: Some(1.0),
                ..FakeReverse::default()
            }),
            "a reverse test beside a clean forward one"
        );
        assert!(FakeProber::from_spec("rtt").is_err());
    }

    #[test]
    fn unknown_speed_and_errors() {
        let p = FakeProber {
            rtt_ms: 1.0,
            speed_bps: None,
            capacity_bps: None,
            test: None,
            seen_ms: None,
        };
        let out = p
            .measure(&hosts(&["a"]), &ProbeOptions::default())
            .expect("fake measures");
        assert_eq!(out[0].link.notes, vec![speed_unknown_note("fake0")]);

        let err = p
            .measure(&hosts(&["a", "nonexistent.invalid"]), &ProbeOptions::default())
            .expect_err(".invalid fails");
        assert!(err.kind() == crate::error::Kind::Measurement);

        let dead = FakeProber::UNREACHABLE;
        let err = dead
            .measure(&hosts(&["198.18.0.9"]), &ProbeOptions::default())
            .expect_err("unreachable");
        assert_eq!(
            err.to_string(),
            "no reply from 198.18.0.9 (198.18.0.9): 10 ICMP echo requests and 10 TCP connects to ports 443, 22, 80 timed out"
        );
        assert_eq!(err.hint(), Some(crate::measure::no_reply_hint(crate::host::euid())));

        let bad = ProbeOptions {
            probes: 0,
            ..ProbeOptions::default()
        };
        assert!(matches!(p.measure(&hosts(&["a"]), &bad), Err(ref e) if e.kind() == crate::error::Kind::Usage));
    }
}
