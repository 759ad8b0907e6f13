//! Path measurement: resolve a host, time its round trip (ICMP echo, else TCP connect), read
//! the facts of the egress link (interface, speed, duplex, MTU, source, gateway) and, where
//! ICMP works, estimate the bottleneck rate with packet trains ([`train`]).
//!
//! The advise command talks to [`PathProber`]; [`SystemProber`] is the real one and
//! [`fake::FakeProber`] a deterministic one for CLI tests.
//!
//! Errors: a path that gives no reply or a name that does not resolve is a measurement error
//! with the way around it as its hint ([`no_reply_hint`], [`resolve::RESOLVE_HINT`]), in the
//! command line's flags (the one rule of [`crate::error::Error`]).

pub mod connect;
pub mod evidence;
pub mod fake;
pub mod icmp;
pub mod iperf3;
pub mod link;
pub mod passive;
pub mod pathtest;
pub mod queue;
pub mod resolve;
pub mod retest;
pub mod train;
pub mod watch;

use std::net::IpAddr;
use std::time::Duration;

use crate::error::Error;

/// Address family restriction; `Option<Family>::None` means any.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Family {
    V4,
    V6,
}

impl Family {
    /// Whether `addr` belongs to this family.
    pub fn matches(self, addr: &IpAddr) -> bool {
        match self {
            Family::V4 => addr.is_ipv4(),
            Family::V6 => addr.is_ipv6(),
        }
    }

    /// "IPv4" or "IPv6".
    pub fn label(self) -> &'static str {
        match self {
            Family::V4 => "IPv4",
            Family::V6 => "IPv6",
        }
    }
}

/// How the round trip was timed.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum Method {
    /// ICMP echo request / echo reply.
    Icmp,
    /// TCP connect(): SYN → SYN-ACK (open port) or SYN → RST (closed port).
    TcpConnect { port: u16 },
}

/// Round-trip statistics, computed like iputils `ping`.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct RttStats {
    pub method: Method,
    /// The answered probes' round trips in ms, in send order.
    pub samples_ms: Vec<f64>,
    pub sent: u32,
    pub received: u32,
    pub loss_pct: f64,
    pub min_ms: f64,
    pub avg_ms: f64,
    pub max_ms: f64,
    /// sqrt(mean(x²) − mean(x)²), as `ping` prints it.
    pub mdev_ms: f64,
}

impl RttStats {
    /// Statistics of `sent` probes of which `samples_ms` were answered.
    /// With no sample, min/avg/max/mdev are 0 (and `received` is 0).
    pub fn compute(method: Method, sent: u32, samples_ms: Vec<f64>) -> Self {
        let n = samples_ms.len();
        let received = u32::try_from(n).unwrap_or(u32::MAX);
        let sent = sent.max(received);
        let loss_pct = if sent == 0 {
            0.0
        } else {
            f64::from(sent - received) * 100.0 / f64::from(sent)
        };
        let (min_ms, avg_ms, max_ms, mdev_ms) = if n == 0 {
            (0.0, 0.0, 0.0, 0.0)
        } else {
            let count = n as f64;
            let min = samples_ms.iter().copied().fold(f64::INFINITY, f64::min);
            let max = samples_ms.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            let avg = samples_ms.iter().sum::<f64>() / count;
            let mean_sq = samples_ms.iter().map(|x| x * x).sum::<f64>() / count;
            // Rounding can make the variance a hair below zero.
            let mdev = (mean_sq - avg * avg).max(0.0).sqrt();
            (min, avg, max, mdev)
        };
        Self {
            method,
            samples_ms,
            sent,
            received,
            loss_pct,
            min_ms,
            avg_ms,
            max_ms,
            mdev_ms,
        }
    }
}

/// Facts about the egress link towards a host. Every field is best effort.
#[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize)]
pub struct LinkFacts {
    pub interface: Option<String>,
    pub speed_bps: Option<u64>,
    pub duplex: Option<String>,
    /// The interface MTU.
    pub mtu: Option<u32>,
    /// The route's MTU metric (`ip route ... mtu N`, or a cached path MTU), if set.
    pub route_mtu: Option<u32>,
    pub source: Option<IpAddr>,
    pub gateway: Option<IpAddr>,
    pub notes: Vec<String>,
}

/// How long each phase of a host's measurement took, s (None: it did not run).
#[derive(Debug, Clone, Copy, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Took {
    /// The round-trip probes (ICMP, else TCP connect) and the link's facts, with the name's
    /// resolution.
    pub probes_s: Option<f64>,
    /// The packet trains.
    pub trains_s: Option<f64>,
    /// The queue watch.
    pub watch_s: Option<f64>,
}

/// Everything measured about one host.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct HostMeasurement {
    /// The host as the user gave it.
    pub host: String,
    pub addr: IpAddr,
    pub rtt: RttStats,
    pub link: LinkFacts,
    /// The bottleneck rate from packet trains ([`train`]); None when not measured (ICMP did not
    /// work, [`ProbeOptions::capacity`] was off, or the trains failed: see `notes`).
    pub capacity: Option<train::CapacityEstimate>,
    /// What probes after the trains say of a queue others keep ([`queue`]); None when not
    /// watched (no ICMP, [`ProbeOptions::watch`] off) or too few came back.
    pub queue: Option<queue::QueueWatch>,
    /// E.g. "ICMP not permitted (ping_group_range is 1 0 and not root); used TCP connect timing to port 22".
    pub notes: Vec<String>,
    /// How long each phase took.
    #[serde(default)]
    pub took: Took,
}

impl HostMeasurement {
    /// The trains' reading a lower-bound test may be raised to, and the second iperf3 run's
    /// streams are sized by: their estimate (the densest cluster), capped by the link speed.
    /// None without trains, or when they are a lower bound themselves.
    pub fn credible_rate(&self) -> Option<u64> {
        self.capacity.as_ref().filter(|c| !c.sender_limited)?;
        self.trains_floor()
    }

    /// What the path carries at least by the trains, for a test that got well below it to be
    /// compared with: their estimate capped by the link speed, as [`Self::credible_rate`], and
    /// also where this host could not send them faster, if they agreed (the path then carries
    /// at least that; trains that came back as tight as they left but disagree may be a burst
    /// a busy host released at once).
    pub fn trains_floor(&self) -> Option<u64> {
        let c = self.capacity.as_ref().filter(|c| !c.sender_limited || c.agreed)?;
        Some(match self.link.speed_bps.filter(|s| *s > 0) {
            Some(l) => c.bps.min(l),
            None => c.bps,
        })
    }
}

/// The way around a path where nothing answered, for a user who is not root.
pub const NO_REPLY_HINT: &str = "allow ICMP (sysctl net.ipv4.ping_group_range='0 2147483647' or run as root), open a TCP port and pass --port, or give --rtt and --bandwidth";

/// The same for root, who already may send ICMP: the host or a filter did not answer.
pub const NO_REPLY_HINT_ROOT: &str = "check the host is up and ICMP to it is not filtered, open a TCP port and pass --port, or give --rtt and --bandwidth";

/// The hint for a path where nothing answered, for a process of effective uid `euid`: root is
/// never told to run as root.
pub const fn no_reply_hint(euid: u32) -> &'static str {
    if euid == 0 { NO_REPLY_HINT_ROOT } else { NO_REPLY_HINT }
}

/// The ports tried, in order, when [`ProbeOptions::ports`] is empty.
pub const DEFAULT_PORTS: [u16; 3] = [443, 22, 80];

/// Longest accepted probe interval and timeout.
pub const MAX_INTERVAL: Duration = Duration::from_secs(3600);

/// Probes per host and method unless told otherwise: the one place the probe defaults are
/// written (the command line's `[default: ...]`, `check --host` and [`ProbeOptions::default`]).
pub const DEFAULT_PROBES: u32 = 10;
/// Spacing between probes unless told otherwise.
pub const DEFAULT_INTERVAL: Duration = Duration::from_millis(20);
/// How long a probe waits for its answer unless told otherwise.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(1);

#[derive(Debug, Clone)]
pub struct ProbeOptions {
    /// Probes per method ([`DEFAULT_PROBES`]), 1..=65535.
    pub probes: u32,
    /// Spacing between probes ([`DEFAULT_INTERVAL`]); probes do not wait for each other's replies.
    pub interval: Duration,
    /// Per-probe timeout ([`DEFAULT_TIMEOUT`]), must be > 0.
    pub timeout: Duration,
    /// TCP ports for the connect fallback; empty = try 443, 22, 80.
    pub ports: Vec<u16>,
    pub family: Option<Family>,
    /// Where to report the probes' progress (the command draws it); None: nowhere.
    pub progress: Option<std::sync::Arc<dyn Progress>>,
    /// After the round trips, estimate the bottleneck rate with ICMP packet trains
    /// (only where ICMP echo worked).
    pub capacity: bool,
    /// After those, watch whether others move a queue on the path ([`queue`]: 1.5 s of probes,
    /// up to 4.5 s while unclear; only where ICMP echo worked).
    pub watch: bool,
}

impl Default for ProbeOptions {
    fn default() -> Self {
        Self {
            probes: DEFAULT_PROBES,
            interval: DEFAULT_INTERVAL,
            timeout: DEFAULT_TIMEOUT,
            ports: Vec::new(),
            family: None,
            progress: None,
            capacity: true,
            watch: true,
        }
    }
}

impl ProbeOptions {
    /// The TCP ports to try, in order.
    pub fn effective_ports(&self) -> Vec<u16> {
        if self.ports.is_empty() {
            DEFAULT_PORTS.to_vec()
        } else {
            self.ports.clone()
        }
    }

    /// Reject options no probe can run with (usage errors).
    pub fn validate(&self) -> Result<(), Error> {
        if self.probes == 0 || self.probes > u32::from(u16::MAX) {
            return Err(Error::usage(format!(
                "the number of probes must be between 1 and {}, not {}",
                u16::MAX,
                self.probes
            )));
        }
        if self.timeout.is_zero() {
            return Err(Error::usage("the probe timeout must be greater than 0"));
        }
        if self.interval > MAX_INTERVAL || self.timeout > MAX_INTERVAL {
            return Err(Error::usage("the probe interval and timeout must be at most 1 hour"));
        }
        if self.ports.contains(&0) {
            return Err(Error::usage("port 0 cannot be probed").with_hint("pass a TCP port between 1 and 65535"));
        }
        Ok(())
    }
}

/// Progress of the probes, for a display the caller draws (the measure layer never draws).
/// Called from the probe tasks, hence `Send + Sync`.
pub trait Progress: Send + Sync + std::fmt::Debug {
    /// `host`'s round-trip probes start, `probes` per method; dropping the result ends its line.
    fn host(&self, host: &str, probes: u32) -> Box<dyn HostProgress>;
    /// Packet trains towards `host` start; dropping the result ends its line.
    fn capacity(&self, host: &str) -> Box<dyn Send>;
    /// The queue watch towards `host` starts ([`queue`]); dropping the result ends its line.
    fn watch(&self, host: &str) -> Box<dyn Send>;
    /// The TCP path test to `host` starts, bounded by `bound` ("10 s or 2 GiB"), of which
    /// `time` is the time; dropping the result ends its line.
    fn path_test(&self, host: &str, bound: &str, time: std::time::Duration) -> Box<dyn TestProgress>;
}

/// One host's probes as they go.
pub trait HostProgress: Send + Sync {
    /// One more probe answered or timed out.
    fn inc(&self);
    /// `n` probes done (TCP connects finish out of order: never goes back).
    fn set(&self, n: u64);
    /// ICMP got nothing: the TCP connect probes start from zero.
    fn start_tcp(&self, host: &str);
}

/// The TCP path test's progress.
pub trait TestProgress {
    /// How far the test has come ([`crate::tcp::flow::Tick`]).
    fn tick(&self, t: &crate::tcp::flow::Tick);
}

/// Which far end the TCP path test runs against.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TestMode {
    /// `tcptune serve` when it answers; else the passive evidence.
    Tcptune,
    /// An iperf3 server, with the `iperf3` client.
    Iperf3,
    /// No test: the passive evidence only.
    Off,
}

/// How to gather the TCP evidence about a measured path.
#[derive(Debug, Clone)]
pub struct EvidenceRequest {
    pub mode: TestMode,
    /// None: the mode's default port (5301 for tcptune serve, 5201 for iperf3).
    pub port: Option<u16>,
    /// The test's bounds, whichever comes first.
    pub time: Duration,
    pub max_bytes: u64,
    /// The socket buffer the test should have so the highest rate in the evidence fits, bytes.
    pub buffer: u64,
    /// The congestion control for the test flow (bbr where the kernel has it).
    pub cc: Option<String>,
    /// Also test the other way, the far end sending to this host, where the peer can.
    pub reverse: bool,
    /// Run each test to its bound (`--thorough`), not only until its reading is made
    /// ([`crate::tcp::flow::reading_made`]).
    pub full: bool,
}

impl EvidenceRequest {
    pub const DEFAULT_IPERF3_PORT: u16 = 5201;

    pub fn port(&self) -> u16 {
        self.port.unwrap_or(match self.mode {
            TestMode::Iperf3 => Self::DEFAULT_IPERF3_PORT,
            _ => crate::tcp::proto::DEFAULT_PORT,
        })
    }
}

/// The seam the advise command uses; a fake implements it for CLI tests.
pub trait PathProber {
    /// Measure every host; results are in input order. The first host (in input order) that
    /// cannot be measured makes the whole call fail.
    fn measure(&self, hosts: &[String], opts: &ProbeOptions) -> Result<Vec<HostMeasurement>, Error>;

    /// The TCP evidence about the path to a measured host: the path test where a peer
    /// answers, else what this host's kernel knows. A test that fails is an error only when
    /// the user asked for that peer explicitly (`--iperf3`); otherwise `test_skipped` says why.
    fn evidence(
        &self,
        m: &HostMeasurement,
        req: &EvidenceRequest,
        opts: &ProbeOptions,
    ) -> Result<evidence::Evidence, Error>;

    /// What this host's kernel says of its way to `dest` (`--scope path` writes its route from
    /// it): read from the kernel by every prober, the fakes too, as nothing is sent.
    fn route_toward(&self, dest: std::net::IpAddr) -> crate::route::RouteFacts {
        crate::route::netlink::toward(dest)
    }
}

/// The real prober: DNS, ICMP (surge-ping), TCP connect, netlink/sysfs.
///
/// Synchronous for callers: it runs its own small tokio runtime (on a helper thread if the
/// caller is already inside a runtime).
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemProber;

impl PathProber for SystemProber {
    fn evidence(
        &self,
        m: &HostMeasurement,
        req: &EvidenceRequest,
        opts: &ProbeOptions,
    ) -> Result<evidence::Evidence, Error> {
        gather_evidence(m, req, opts)
    }

    fn measure(&self, hosts: &[String], opts: &ProbeOptions) -> Result<Vec<HostMeasurement>, Error> {
        opts.validate()?;
        if hosts.is_empty() {
            return Ok(Vec::new());
        }
        if tokio::runtime::Handle::try_current().is_ok() {
            // block_on inside a runtime panics: use a thread of our own.
            std::thread::scope(|s| {
                s.spawn(|| run_on_own_runtime(hosts, opts))
                    .join()
                    .unwrap_or_else(|_| Err(Error::measurement("the probe thread panicked")))
            })
        } else {
            run_on_own_runtime(hosts, opts)
        }
    }
}

/// The real evidence: the path test against the chosen peer — forward, then reverse where
/// asked and the forward test ran — and the passive evidence when no test ran.
fn gather_evidence(
    m: &HostMeasurement,
    req: &EvidenceRequest,
    opts: &ProbeOptions,
) -> Result<evidence::Evidence, Error> {
    let mut ev = evidence::Evidence::default();
    let bound = (
        format!(
            "{} or {}",
            crate::text::secs(req.time.as_secs_f64()),
            crate::text::size(req.max_bytes)
        ),
        req.time,
    );
    match req.mode {
        TestMode::Off => ev.test_skipped = Some("the path test was turned off (--no-path-test)".into()),
        TestMode::Tcptune => {
            let test = pathtest::PathTestRequest {
                addr: m.addr,
                port: req.port(),
                time: req.time,
                max_bytes: req.max_bytes,
                buffer: req.buffer,
                cc: req.cc.clone(),
                connect_timeout: connect_timeout(m.rtt.max_ms),
                stop_early: !req.full,
            };
            match timed(|| with_series(opts, &m.host, &bound, |p| pathtest::run(&test, p))) {
                Ok(t) => ev.test = Some(t),
                Err(pathtest::TestError::NoPeer(why)) => ev.test_skipped = Some(why),
                Err(pathtest::TestError::Failed(why)) => {
                    ev.test_skipped = Some(format!("the path test failed: {why}"));
                }
            }
            // Only after a forward test: a peer that failed it is not asked again.
            if req.reverse && ev.test.is_some() {
                let host = format!("{} (reverse: it sends)", m.host);
                match timed(|| with_series(opts, &host, &bound, |p| pathtest::run_reverse(&test, p))) {
                    Ok(t) => ev.reverse = Some(t),
                    Err(pathtest::TestError::NoPeer(why)) => ev.reverse_skipped = Some(why),
                    Err(pathtest::TestError::Failed(why)) => {
                        ev.reverse_skipped = Some(format!("the reverse path test failed: {why}"));
                    }
                }
            }
        }
        TestMode::Iperf3 => {
            // Asked for by name: a failure is the user's to see, not a quiet fallback.
            let test = iperf3::Iperf3Request {
                cc: req.cc.clone(),
                ..iperf3::Iperf3Request::new(m.addr, req.port(), req.time, req.max_bytes)
            };
            let started = std::time::Instant::now();
            let mut forward = with_progress(opts, &m.host, &bound, |_| iperf3::run(&test))?;
            retest(&mut forward, &test, m, opts);
            forward.took_s = Some(started.elapsed().as_secs_f64());
            ev.test = Some(forward);
            // The reverse one is the forward one's companion: an iperf3 server started with
            // -1 (one test) or busy says so in the notes rather than failing the advice.
            if req.reverse {
                let host = format!("{} (reverse: it sends)", m.host);
                let reverse = iperf3::Iperf3Request { reverse: true, ..test };
                match timed(|| with_progress(opts, &host, &bound, |_| iperf3::run(&reverse))) {
                    Ok(t) => ev.reverse = Some(t),
                    Err(e) => ev.reverse_skipped = Some(format!("the reverse iperf3 test failed: {}", e.message())),
                }
            }
        }
    }
    if ev.test.is_none() {
        ev.passive = Some(passive::gather(m.addr));
    }
    Ok(ev)
}

/// A test run, with how long it took in all (the connection, the data, the result) as its
/// `took_s`.
fn timed<E>(run: impl FnOnce() -> Result<evidence::TcpTest, E>) -> Result<evidence::TcpTest, E> {
    let started = std::time::Instant::now();
    run().map(|mut t| {
        t.took_s = Some(started.elapsed().as_secs_f64());
        t
    })
}

/// The forward iperf3 test's second run, where `t` calls for one ([`retest`]): its readings
/// join the test, or a note says why there are none.
fn retest(t: &mut evidence::TcpTest, test: &iperf3::Iperf3Request, m: &HostMeasurement, opts: &ProbeOptions) {
    match retest::plan(t, m.credible_rate(), test.max_bytes) {
        None => {}
        Some(Err(why)) => t.notes.push(format!("no second iperf3 run: {why}")),
        Some(Ok(plan)) => {
            let what = match plan.kind {
                evidence::RetestKind::Streams { streams, .. } => format!("{streams} parallel streams"),
                evidence::RetestKind::Paced { rate_bps } => format!("paced at {}", crate::text::rate(rate_bps)),
            };
            let host = format!("{} (again: {what})", m.host);
            let bound = (crate::text::secs(plan.time.as_secs_f64()), plan.time);
            match with_progress(opts, &host, &bound, |_| retest::run(test, &plan)) {
                Ok(r) => t.retest = Some(r),
                Err(e) => t
                    .notes
                    .push(format!("the second iperf3 run ({what}) failed: {}", e.message())),
            }
        }
    }
}

/// Runs `f` with a progress line for the path test to `host` (`bound`: its limits), passing
/// it the callback that reports how far the test has come; the line ends when `f` returns.
fn with_progress<T>(
    opts: &ProbeOptions,
    host: &str,
    bound: &(String, std::time::Duration),
    f: impl FnOnce(&mut dyn FnMut(crate::tcp::flow::Tick)) -> T,
) -> T {
    let progress = opts.progress.as_ref().map(|p| p.path_test(host, &bound.0, bound.1));
    let mut on_progress = |t: crate::tcp::flow::Tick| {
        if let Some(p) = &progress {
            p.tick(&t);
        }
    };
    f(&mut on_progress)
}

/// [`with_progress`] for a tcptune test, whose ticks also become its rate over time.
fn with_series<E>(
    opts: &ProbeOptions,
    host: &str,
    bound: &(String, std::time::Duration),
    f: impl FnOnce(&mut dyn FnMut(crate::tcp::flow::Tick)) -> Result<evidence::TcpTest, E>,
) -> Result<evidence::TcpTest, E> {
    let mut ticks = Vec::new();
    let mut test = with_progress(opts, host, bound, |p| {
        f(&mut |t| {
            ticks.push(t);
            p(t);
        })
    })?;
    test.series = series(&ticks);
    Ok(test)
}

/// The rate between consecutive ticks, and the retransmissions between them where counted.
pub fn series(ticks: &[crate::tcp::flow::Tick]) -> Vec<evidence::Point> {
    ticks
        .windows(2)
        .filter_map(|w| {
            let dt = w[1].elapsed.saturating_sub(w[0].elapsed).as_secs_f64();
            #[allow(clippy::cast_precision_loss)]
            (dt > 0.0).then(|| evidence::Point {
                t_s: (w[1].elapsed.as_secs_f64() * 1000.0).round() / 1000.0,
                rate_bps: w[1].bytes.saturating_sub(w[0].bytes) as f64 * 8.0 / dt,
                retrans: w[1].retrans.zip(w[0].retrans).map(|(b, a)| b.saturating_sub(a)),
            })
        })
        .collect()
}

fn run_on_own_runtime(hosts: &[String], opts: &ProbeOptions) -> Result<Vec<HostMeasurement>, Error> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .thread_name("tcptune-probe")
        .build()
        .map_err(|e| Error::measurement(format!("cannot start the probe runtime: {e}")))?;
    let result = rt.block_on(probe_all(hosts, opts));
    // A getaddrinfo stuck in a blocking thread must not hold the caller up.
    rt.shutdown_timeout(Duration::from_millis(100));
    result
}

/// Per-host ICMP identity: each host gets its own identifier and its own sequence range, so two
/// pingers (even to the same address) never answer each other's waiters (surge-ping #73).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PingSlot {
    pub ident: u16,
    pub seq_base: u16,
}

impl PingSlot {
    /// Slots for `hosts` hosts of `probes` probes each: identifiers from a random base,
    /// sequence ranges that do not overlap while `hosts * probes <= 65536`.
    pub fn allocate(hosts: usize, probes: u32) -> Vec<PingSlot> {
        let base = random_u16();
        (0..hosts)
            .map(|i| {
                let index = u32::try_from(i).unwrap_or(u32::MAX);
                PingSlot {
                    ident: base.wrapping_add((index & 0xffff) as u16),
                    seq_base: (index.wrapping_mul(probes) & 0xffff) as u16,
                }
            })
            .collect()
    }
}

/// A random u16 without a rand dependency (std's RandomState is randomly keyed per process).
pub(crate) fn random_u16() -> u16 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0),
    );
    (h.finish() & 0xffff) as u16
}

async fn probe_all(hosts: &[String], opts: &ProbeOptions) -> Result<Vec<HostMeasurement>, Error> {
    let slots = PingSlot::allocate(hosts.len(), opts.probes);
    let handles: Vec<_> = hosts
        .iter()
        .zip(slots)
        .map(|(host, slot)| {
            let progress = Probing(opts.progress.as_ref().map(|p| p.host(host, opts.probes)));
            let host = host.clone();
            let opts = opts.clone();
            // The spinner line is cleared when `progress` drops, also if the task is cancelled.
            tokio::spawn(async move { probe_host(host, &opts, slot, &progress).await })
        })
        .collect();
    let mut out = Vec::with_capacity(hosts.len());
    for (handle, host) in handles.into_iter().zip(hosts) {
        match handle.await {
            Ok(r) => out.push(r?),
            Err(e) => {
                return Err(Error::measurement(format!("probing \"{host}\" failed: {e}")));
            }
        }
    }
    // Trains only after every host's pings (a train queued at a shared bottleneck would inflate
    // their minimum) and one host at a time (two trains sharing a bottleneck each see half).
    if opts.capacity {
        for m in out.iter_mut().filter(|m| m.rtt.method == Method::Icmp) {
            let t = std::time::Instant::now();
            measure_capacity(m, opts).await;
            m.took.trains_s = Some(t.elapsed().as_secs_f64());
        }
    }
    // The watch last, one host at a time, with nothing of this host's sending: a queue it sees
    // move is someone else's.
    if opts.watch {
        let slots = PingSlot::allocate(out.len(), queue::MAX_STEPS * 100);
        for (m, slot) in out.iter_mut().zip(slots).filter(|(m, _)| m.rtt.method == Method::Icmp) {
            let spinner = opts.progress.as_ref().map(|p| p.watch(&m.host));
            let t = std::time::Instant::now();
            m.queue = queue::watch(m.addr, opts, slot).await;
            m.took.watch_s = Some(t.elapsed().as_secs_f64());
            drop(spinner);
        }
    }
    Ok(out)
}

/// Estimate the bottleneck rate towards `m.addr` with packet trains: into `m.capacity`, or a
/// note saying why not.
async fn measure_capacity(m: &mut HostMeasurement, opts: &ProbeOptions) {
    let spinner = opts.progress.as_ref().map(|p| p.capacity(&m.host));
    // MTU-sized packets disperse the most; the kernel's path MTU for the address caps it again.
    let ip_size = m
        .link
        .route_mtu
        .or(m.link.mtu)
        .map_or(train::MAX_PACKET, |mtu| mtu as usize)
        .min(train::MAX_PACKET);
    let (addr, timeout) = (m.addr, opts.timeout);
    let result = tokio::task::spawn_blocking(move || {
        train::estimate_capacity(addr, ip_size, train::DEFAULT_TRAINS, train::DEFAULT_PER_TRAIN, timeout)
    })
    .await
    .unwrap_or_else(|e| Err(format!("the packet-train thread failed: {e}")));
    match result {
        Ok(c) => m.capacity = Some(c),
        Err(e) => m
            .notes
            .push(format!("no packet-train estimate of the bottleneck rate: {e}")),
    }
    drop(spinner);
}

/// Resolve, time and describe one host.
pub(crate) async fn probe_host(
    host: String,
    opts: &ProbeOptions,
    slot: PingSlot,
    progress: &Probing,
) -> Result<HostMeasurement, Error> {
    let started = std::time::Instant::now();
    let addr = resolve::resolve(&host, opts.family).await?;
    let (rtt, link) = tokio::join!(measure_rtt(&host, addr, opts, slot, progress), link::link_facts(addr));
    let (rtt, notes) = rtt?;
    Ok(HostMeasurement {
        host,
        addr,
        rtt,
        link,
        capacity: None,
        queue: None,
        notes,
        took: Took {
            probes_s: Some(started.elapsed().as_secs_f64()),
            ..Took::default()
        },
    })
}

/// ICMP first; TCP connect when ICMP is not permitted or got no reply.
async fn measure_rtt(
    host: &str,
    addr: IpAddr,
    opts: &ProbeOptions,
    slot: PingSlot,
    progress: &Probing,
) -> Result<(RttStats, Vec<String>), Error> {
    let mut notes = Vec::new();
    let icmp = icmp::ping(addr, opts, slot, || progress.inc()).await;
    let why_fallback = match &icmp {
        icmp::IcmpResult::Sent { stats, errors, .. } => {
            if stats.received > 0 {
                return Ok((stats.clone(), notes));
            }
            let mut why = format!("no ICMP echo reply from {addr} ({} requests)", stats.sent);
            if let Some(e) = errors.first() {
                why.push_str(&format!(": {e}"));
            }
            why
        }
        icmp::IcmpResult::NotPermitted { reason } => format!("ICMP not permitted ({reason})"),
        icmp::IcmpResult::Unavailable { reason } => format!("ICMP unavailable ({reason})"),
    };

    let ports = opts.effective_ports();
    progress.start_tcp(host);
    match connect::connect_probe(addr, &ports, opts, |n| progress.set(n)).await {
        connect::TcpResult::Answered { port, stats, refused } => {
            notes.push(format!("{why_fallback}; used TCP connect timing to port {port}"));
            if refused > 0 {
                notes.push(format!(
                    "port {port} refused {refused} of the connections (RST); a refusal still takes one round trip"
                ));
            }
            Ok((stats, notes))
        }
        connect::TcpResult::NoAnswer {
            per_port,
            timeouts,
            errors,
        } => {
            let icmp_part = match &icmp {
                icmp::IcmpResult::Sent { stats, .. } => {
                    format!("{} ICMP echo requests", stats.sent)
                }
                _ => format!("{why_fallback}, and"),
            };
            let ports_list = ports.iter().map(u16::to_string).collect::<Vec<_>>().join(", ");
            let port_word = if ports.len() == 1 { "port" } else { "ports" };
            let outcome = if errors.is_empty() {
                "timed out".to_string()
            } else if timeouts == 0 {
                format!("failed ({})", errors.join("; "))
            } else {
                format!("timed out or failed ({})", errors.join("; "))
            };
            let msg = match &icmp {
                icmp::IcmpResult::Sent { .. } => format!(
                    "no reply from {host} ({addr}): {icmp_part} and {per_port} TCP connects to {port_word} {ports_list} {outcome}"
                ),
                _ => format!(
                    "no reply from {host} ({addr}): {icmp_part} {per_port} TCP connects to {port_word} {ports_list} {outcome}"
                ),
            };
            Err(Error::measurement(msg).with_hint(no_reply_hint(crate::host::euid())))
        }
    }
}

/// One host's progress, or nothing when no one watches.
pub(crate) struct Probing(Option<Box<dyn HostProgress>>);

impl Probing {
    fn inc(&self) {
        if let Some(p) = &self.0 {
            p.inc();
        }
    }

    fn set(&self, n: u64) {
        if let Some(p) = &self.0 {
            p.set(n);
        }
    }

    fn start_tcp(&self, host: &str) {
        if let Some(p) = &self.0 {
            p.start_tcp(host);
        }
    }
}

/// How long a connect to the path test's peer may take: a peer answers within a few RTTs of a
/// host that answered its probes, and a lost SYN is sent again after Linux's initial RTO of 1 s
/// (on a path losing 0.5 % each way, about one connect in a hundred needs it): one
/// retransmission and 4 RTTs, 1.5 s to 4 s. A port that drops costs this, a refused one a
/// round trip. An RTT that is no number (a host that never answered) gets the longest wait.
pub fn connect_timeout(max_rtt_ms: f64) -> Duration {
    let s = 1.0 + max_rtt_ms * 4.0 / 1000.0;
    Duration::from_secs_f64(if s.is_nan() { 4.0 } else { s.clamp(1.5, 4.0) })
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use std::net::TcpListener;

    #[test]
    fn a_tests_ticks_become_its_rate_over_time_with_its_retransmissions() {
        use crate::tcp::flow::Tick;
        let tick = |ms: u64, bytes: u64, retrans: Option<u64>| Tick {
            bytes,
            elapsed: Duration::from_millis(ms),
            srtt_ms: None,
            retrans,
        };
        let s = series(&[
            tick(0, 0, Some(0)),
            tick(250, 1_250_000, Some(0)),
            tick(500, 3_750_000, Some(3)),
            // A tick at the same time adds no point.
            tick(500, 3_750_000, Some(3)),
            tick(750, 5_000_000, None),
        ]);
        assert_eq!(s.len(), 3, "{s:?}");
        assert_eq!((s[0].t_s, s[0].rate_bps, s[0].retrans), (0.25, 40e6, Some(0)));
        assert_eq!((s[1].rate_bps, s[1].retrans), (80e6, Some(3)));
        assert_eq!(s[2].retrans, None, "a receiver's ticks count no retransmissions");
    }
    #[test]
    fn trains_this_host_could_not_send_faster_are_a_floor_only_where_they_agreed() {
        let p = fake::FakeProber {
            rtt_ms: 100.0,
            speed_bps: None,
            capacity_bps: Some(1_000_000_000),
            test: None,
            seen_ms: None,
        };
        let mut m = p
            .measure(&["h".to_string()], &ProbeOptions::default())
            .expect("fake")
            .remove(0);
        assert_eq!(
            (m.credible_rate(), m.trains_floor()),
            (Some(1_000_000_000), Some(1_000_000_000))
        );
        let c = m.capacity.as_mut().expect("trains");
        c.sender_limited = true;
        assert_eq!((m.credible_rate(), m.trains_floor()), (None, Some(1_000_000_000)));
        // Capped by the link speed, as the credible rate is.
        m.link.speed_bps = Some(800_000_000);
        assert_eq!(m.trains_floor(), Some(800_000_000));
        // Tight trains that disagree: perhaps a burst a busy host released at once.
        if let Some(c) = m.capacity.as_mut() {
            c.agreed = false;
        }
        assert_eq!(m.trains_floor(), None);
    }
    use std::process::Command;

    #[test]
    fn a_connect_waits_out_one_lost_syn_and_a_few_round_trips() {
        assert_eq!(connect_timeout(20.0), Duration::from_millis(1500));
        assert_eq!(connect_timeout(600.0), Duration::from_millis(3400));
        assert_eq!(connect_timeout(2000.0), Duration::from_secs(4));
        assert_eq!(connect_timeout(f64::NAN), Duration::from_secs(4));
    }
    use std::time::Instant;

    fn hosts(h: &[&str]) -> Vec<String> {
        h.iter().map(|s| s.to_string()).collect()
    }

    fn quick(probes: u32) -> ProbeOptions {
        ProbeOptions {
            probes,
            interval: Duration::from_millis(10),
            timeout: Duration::from_millis(300),
            watch: false,
            ..ProbeOptions::default()
        }
    }

    /// `x` as ping prints it: µs truncated to three decimals of ms.
    fn trunc3(x: f64) -> f64 {
        (x * 1000.0 + 1e-6).floor() / 1000.0
    }

    #[test]
    fn stats_match_iputils() {
        // ping -c 8 -i 0.05 127.0.0.1 (iputils 20221126):
        //   rtt min/avg/max/mdev = 0.031/0.045/0.052/0.006 ms
        let times = vec![0.031, 0.052, 0.049, 0.046, 0.049, 0.041, 0.051, 0.048];
        let s = RttStats::compute(Method::Icmp, 8, times);
        assert_eq!((s.sent, s.received, s.loss_pct), (8, 8, 0.0));
        assert_eq!(trunc3(s.min_ms), 0.031);
        assert_eq!(trunc3(s.avg_ms), 0.045);
        assert_eq!(trunc3(s.max_ms), 0.052);
        assert_eq!(trunc3(s.mdev_ms), 0.006);
        assert!((s.mdev_ms - 0.006_450_7).abs() < 1e-6, "{}", s.mdev_ms);

        // 10, 20, 30 ms with 1 of 4 lost: mdev = sqrt(1400/3 - 400).
        let s = RttStats::compute(Method::TcpConnect { port: 22 }, 4, vec![10.0, 20.0, 30.0]);
        assert_eq!((s.sent, s.received), (4, 3));
        assert_eq!(s.loss_pct, 25.0);
        assert_eq!((s.min_ms, s.avg_ms, s.max_ms), (10.0, 20.0, 30.0));
        assert!((s.mdev_ms - 8.164_965_8).abs() < 1e-6);

        let s = RttStats::compute(Method::Icmp, 5, vec![]);
        assert_eq!((s.received, s.loss_pct, s.avg_ms), (0, 100.0, 0.0));
    }

    #[test]
    fn serde_shapes() {
        assert_eq!(
            serde_json::to_value(Method::TcpConnect { port: 443 }).expect("json"),
            serde_json::json!({"kind": "tcp-connect", "port": 443})
        );
        assert_eq!(serde_json::to_value(Family::V6).expect("json"), "v6");
    }

    #[test]
    fn options_validate() {
        assert!(ProbeOptions::default().validate().is_ok());
        assert_eq!(ProbeOptions::default().effective_ports(), vec![443, 22, 80]);
        for bad in [
            ProbeOptions {
                probes: 0,
                ..ProbeOptions::default()
            },
            ProbeOptions {
                probes: 70_000,
                ..ProbeOptions::default()
            },
            ProbeOptions {
                timeout: Duration::ZERO,
                ..ProbeOptions::default()
            },
            ProbeOptions {
                ports: vec![0],
                ..ProbeOptions::default()
            },
        ] {
            assert!(
                matches!(bad.validate(), Err(ref e) if e.kind() == crate::error::Kind::Usage),
                "{bad:?}"
            );
        }
    }

    #[test]
    fn slots_are_distinct() {
        let slots = PingSlot::allocate(3, 10);
        assert_eq!(slots.iter().map(|s| s.seq_base).collect::<Vec<_>>(), vec![0, 10, 20]);
        assert_ne!(slots[0].ident, slots[1].ident);
        assert_ne!(slots[1].ident, slots[2].ident);
    }

    #[test]
    fn unresolvable_is_a_measurement_error() {
        let err = SystemProber
            .measure(&hosts(&["nonexistent.invalid"]), &quick(2))
            .expect_err("must not resolve");
        assert!(err.kind() == crate::error::Kind::Measurement, "{err:?}");
        assert!(err.to_string().starts_with("cannot resolve \"nonexistent.invalid\": "));
        assert_eq!(err.hint(), Some(resolve::RESOLVE_HINT));
    }

    #[test]
    fn works_from_inside_a_runtime() {
        let rt = tokio::runtime::Builder::new_current_thread().build().expect("runtime");
        let err = rt.block_on(async { SystemProber.measure(&hosts(&["nonexistent.invalid"]), &quick(1)) });
        assert!(matches!(err, Err(ref e) if e.kind() == crate::error::Kind::Measurement));
    }

    fn icmp_allowed() -> bool {
        let a = icmp::PingAccess::current();
        a.is_root() || a.dgram_allowed()
    }

    /// Every raw ICMP socket gets a copy of every echo reply on the machine: a packet train
    /// to loopback in one test can overflow another test's pinger socket. Tests that send ICMP
    /// from this process take this lock so they do not run at the same time.
    pub(crate) static ICMP_TESTS: std::sync::Mutex<()> = std::sync::Mutex::new(());

    pub(crate) fn icmp_test_lock() -> std::sync::MutexGuard<'static, ()> {
        ICMP_TESTS.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    #[test]
    #[cfg_attr(not(feature = "privileged-tests"), ignore = "privileged: needs root")]
    fn icmp_to_loopback() {
        let _serial = icmp_test_lock();
        assert!(
            icmp_allowed(),
            "needs root or ping_group_range (a privileged test: never skipped)"
        );
        let opts = ProbeOptions {
            progress: Some(std::sync::Arc::new(crate::output::progress::Probes::new())),
            ..quick(10)
        };
        let out = SystemProber
            .measure(&hosts(&["127.0.0.1"]), &opts)
            .expect("loopback answers");
        let m = &out[0];
        assert_eq!(m.addr, IpAddr::from([127, 0, 0, 1]));
        assert_eq!(m.rtt.method, Method::Icmp, "{m:?}");
        assert_eq!((m.rtt.sent, m.rtt.received), (10, 10), "{m:?}");
        assert_eq!(m.rtt.samples_ms.len(), 10);
        assert!(m.rtt.min_ms < 1.0, "{m:?}");
        assert!(m.notes.is_empty(), "{:?}", m.notes);
        assert_eq!(m.link.interface.as_deref(), Some("lo"));
        assert_eq!(m.link.speed_bps, None);
        // Packet trains over loopback: some rate, from MTU-capped 1500-byte packets.
        let c = m.capacity.as_ref().expect("a packet-train estimate");
        assert_eq!((c.trains, c.packet_bytes), (train::DEFAULT_TRAINS, train::MAX_PACKET));
        assert!(c.used >= 1 && c.bps > 0, "{c:?}");

        let off = ProbeOptions {
            capacity: false,
            ..quick(2)
        };
        let out = SystemProber
            .measure(&hosts(&["127.0.0.1"]), &off)
            .expect("loopback answers");
        assert!(out[0].capacity.is_none());
    }

    /// surge-ping #73: several pingers to one address at once must not steal each other's replies.
    #[test]
    #[cfg_attr(not(feature = "privileged-tests"), ignore = "privileged: needs root")]
    fn concurrent_pingers_to_one_host() {
        let _serial = icmp_test_lock();
        assert!(
            icmp_allowed(),
            "needs root or ping_group_range (a privileged test: never skipped)"
        );
        let mut list = vec!["127.0.0.1", "127.0.0.1", "127.0.0.1"];
        if std::net::UdpSocket::bind("[::1]:0").is_ok() {
            list.extend(["::1", "::1"]);
        }
        let started = Instant::now();
        let out = SystemProber
            .measure(&hosts(&list), &quick(20))
            .expect("loopback answers");
        // A hang guard only: what this test is for is the replies counted below. The pings run
        // at once (20 at 10 ms); the packet trains after them, one host at a time, take most
        // of the 2.9 to 3.5 s this takes on a 2-core VM whose vCPUs stall for seconds.
        assert!(started.elapsed() < Duration::from_secs(20), "{:?}", started.elapsed());
        assert_eq!(out.len(), list.len());
        for (m, h) in out.iter().zip(&list) {
            assert_eq!(&m.host, h, "results in input order");
            assert_eq!(m.rtt.method, Method::Icmp);
            assert_eq!(m.rtt.received, 20, "{h}: {:?}", m.rtt);
        }
    }

    #[test]
    fn tcp_open_and_closed_ports() {
        let rt = tokio::runtime::Runtime::new().expect("runtime");
        let listener = TcpListener::bind("127.0.0.1:0").expect("listen");
        let open = listener.local_addr().expect("addr").port();
        let closed = {
            let l = TcpListener::bind("127.0.0.1:0").expect("listen");
            l.local_addr().expect("addr").port()
        };
        let lo = IpAddr::from([127, 0, 0, 1]);
        let opts = quick(5);

        match rt.block_on(connect::connect_probe(lo, &[open], &opts, |_| {})) {
            connect::TcpResult::Answered { port, stats, refused } => {
                assert_eq!(port, open);
                assert_eq!(refused, 0);
                assert_eq!(stats.method, Method::TcpConnect { port: open });
                assert_eq!((stats.sent, stats.received), (5, 5));
                assert!(stats.min_ms < 5.0, "{stats:?}");
            }
            other => panic!("open port: {other:?}"),
        }
        // A closed port answers with RST: still one round trip per probe.
        match rt.block_on(connect::connect_probe(lo, &[closed], &opts, |_| {})) {
            connect::TcpResult::Answered { port, stats, refused } => {
                assert_eq!(port, closed);
                assert_eq!(refused, 5);
                assert_eq!(stats.received, 5);
            }
            other => panic!("closed port: {other:?}"),
        }
        // The first port of the list that answers is used.
        match rt.block_on(connect::connect_probe(lo, &[closed, open], &opts, |_| {})) {
            connect::TcpResult::Answered { port, .. } => assert_eq!(port, closed),
            other => panic!("list: {other:?}"),
        }
        drop(listener);
    }

    // ---- Scenarios in network namespaces (root only) --------------------------------------
    //
    // The outer test builds namespaces with loopback and 198.18.0.0/15 addresses only, and runs
    // this test binary inside them (`ip netns exec`, optionally as nobody via setpriv) to execute
    // one `inner_*` test, selected with TCPTUNE_MEASURE_INNER. Nothing leaves the namespaces.

    const INNER_ENV: &str = "TCPTUNE_MEASURE_INNER";

    struct Netns(String);

    impl Netns {
        fn create(name: String, setup: &[&[&str]]) -> Option<Netns> {
            if !run_ok("ip", &["netns", "add", &name]) {
                return None;
            }
            let ns = Netns(name);
            for cmd in setup {
                let mut full = vec!["netns", "exec", ns.0.as_str()];
                full.extend(cmd.iter().copied());
                assert!(run_ok("ip", &full), "setup failed: {cmd:?}");
            }
            Some(ns)
        }

        /// Run inner test `name` inside the namespace, as nobody if `unprivileged`.
        fn run_inner(&self, name: &str, unprivileged: bool) {
            let exe = std::env::current_exe().expect("test binary");
            let exe = exe.to_string_lossy().into_owned();
            let test = format!("measure::tests::{name}");
            let mut args = vec!["netns", "exec", self.0.as_str()];
            if unprivileged {
                args.extend(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--"]);
            }
            args.extend([exe.as_str(), "--exact", test.as_str(), "--ignored", "--nocapture"]);
            let out = Command::new("ip")
                .args(&args)
                .env(INNER_ENV, name)
                .output()
                .expect("run inner test");
            let stdout = String::from_utf8_lossy(&out.stdout);
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert!(
                out.status.success() && stdout.contains("1 passed"),
                "{name} in {} failed:\n{stdout}\n{stderr}",
                self.0
            );
        }
    }

    impl Drop for Netns {
        fn drop(&mut self) {
            run_ok("ip", &["netns", "del", &self.0]);
        }
    }

    fn run_ok(cmd: &str, args: &[&str]) -> bool {
        Command::new(cmd)
            .args(args)
            .output()
            .map(|o| o.status.success())
            .unwrap_or(false)
    }

    fn inner(name: &str) -> bool {
        std::env::var(INNER_ENV).as_deref() == Ok(name)
    }

    #[test]
    #[cfg_attr(not(feature = "privileged-tests"), ignore = "privileged: needs root")]
    fn netns_scenarios() {
        assert!(
            icmp::PingAccess::current().is_root(),
            "needs root for network namespaces"
        );
        let id = std::process::id();
        // ICMP echo ignored; a veth pair d0/d1 whose far end swallows what is sent to 198.18.1.2.
        let Some(ign) = Netns::create(
            format!("tm-ign-{id}"),
            &[
                &["ip", "link", "set", "lo", "up"],
                &["sysctl", "-qw", "net.ipv4.icmp_echo_ignore_all=1"],
                &["ip", "link", "add", "d0", "type", "veth", "peer", "name", "d1"],
                &["ip", "link", "set", "d0", "up"],
                &["ip", "link", "set", "d1", "up"],
                &["ip", "addr", "add", "198.18.0.1/32", "dev", "d0"],
                &["ip", "addr", "add", "198.18.1.1/24", "dev", "d0"],
                // 198.18.1.2 is nobody: frames to this MAC die on d1.
                &[
                    "ip",
                    "neigh",
                    "add",
                    "198.18.1.2",
                    "lladdr",
                    "02:00:00:00:00:02",
                    "dev",
                    "d0",
                    "nud",
                    "permanent",
                ],
                &["ip", "route", "add", "198.18.2.0/24", "dev", "d0", "mtu", "1400"],
                &[
                    "ip",
                    "route",
                    "add",
                    "198.18.3.0/24",
                    "via",
                    "198.18.1.254",
                    "dev",
                    "d0",
                ],
            ],
        ) else {
            panic!("cannot create network namespaces (ip netns add)");
        };
        ign.run_inner("inner_icmp_ignored_tcp_fallback", false);
        ign.run_inner("inner_blackhole", false);
        ign.run_inner("inner_link_facts", false);
        assert!(
            run_ok("setpriv", &["--version"]),
            "the unprivileged scenarios need setpriv (util-linux)"
        );
        ign.run_inner("inner_not_permitted", true);

        // Unprivileged ping sockets allowed: DGRAM.
        let dgram = Netns::create(
            format!("tm-dg-{id}"),
            &[
                &["ip", "link", "set", "lo", "up"],
                &["sysctl", "-qw", "net.ipv4.ping_group_range=0 2147483647"],
            ],
        )
        .expect("second namespace");
        dgram.run_inner("inner_dgram_icmp", true);
    }

    #[test]
    #[ignore = "run by netns_scenarios inside a namespace"]
    fn inner_icmp_ignored_tcp_fallback() {
        if !inner("inner_icmp_ignored_tcp_fallback") {
            return;
        }
        let listener = TcpListener::bind("198.18.0.1:0").expect("listen");
        let port = listener.local_addr().expect("addr").port();
        let out = SystemProber
            .measure(
                &hosts(&["198.18.0.1"]),
                &ProbeOptions {
                    ports: vec![port],
                    ..quick(5)
                },
            )
            .expect("TCP fallback");
        let m = &out[0];
        assert_eq!(m.rtt.method, Method::TcpConnect { port });
        assert_eq!(m.rtt.received, 5);
        assert_eq!(
            m.notes,
            vec![format!(
                "no ICMP echo reply from 198.18.0.1 (5 requests); used TCP connect timing to port {port}"
            )]
        );

        // Default ports: nothing listens on 443 here, its RSTs are the samples.
        let out = SystemProber
            .measure(&hosts(&["198.18.0.1"]), &quick(4))
            .expect("RST samples");
        let m = &out[0];
        assert_eq!(m.rtt.method, Method::TcpConnect { port: 443 });
        assert_eq!(m.rtt.received, 4);
        assert!(
            m.notes[1].starts_with("port 443 refused 4 of the connections"),
            "{:?}",
            m.notes
        );
    }

    #[test]
    #[ignore = "run by netns_scenarios inside a namespace"]
    fn inner_blackhole() {
        if !inner("inner_blackhole") {
            return;
        }
        let opts = ProbeOptions {
            probes: 3,
            interval: Duration::from_millis(20),
            timeout: Duration::from_millis(300),
            ..ProbeOptions::default()
        };
        let started = Instant::now();
        let err = SystemProber
            .measure(&hosts(&["198.18.1.2"]), &opts)
            .expect_err("black hole");
        // Two methods, each about probes × interval + timeout (0.7 s here), with room for
        // this VM's stalls: given up, not waited out.
        assert!(started.elapsed() < Duration::from_secs(4), "{:?}", started.elapsed());
        assert!(err.kind() == crate::error::Kind::Measurement);
        assert_eq!(
            err.to_string(),
            "no reply from 198.18.1.2 (198.18.1.2): 3 ICMP echo requests and 3 TCP connects to ports 443, 22, 80 timed out"
        );
        assert_eq!(err.hint(), Some(no_reply_hint(crate::host::euid())));
    }

    #[test]
    fn the_no_reply_hint_never_tells_root_to_run_as_root() {
        assert!(no_reply_hint(0) != NO_REPLY_HINT);
        assert!(!no_reply_hint(0).contains("root"), "{}", no_reply_hint(0));
        assert!(no_reply_hint(1000).contains("run as root"));
        for uid in [0, 1000] {
            assert!(no_reply_hint(uid).contains("--port") && no_reply_hint(uid).contains("--rtt"));
        }
    }

    #[test]
    #[ignore = "run by netns_scenarios inside a namespace"]
    fn inner_link_facts() {
        if !inner("inner_link_facts") {
            return;
        }
        let rt = tokio::runtime::Runtime::new().expect("runtime");
        let f = rt.block_on(link::link_facts(IpAddr::from([198, 18, 1, 2])));
        assert_eq!(f.interface.as_deref(), Some("d0"), "{f:?}");
        assert_eq!(f.source, Some(IpAddr::from([198, 18, 1, 1])));
        assert_eq!(f.gateway, None);
        assert_eq!(f.route_mtu, None);
        // veth reports a nominal 10 Gbit/s full duplex: not a link speed, so not used.
        assert_eq!(f.speed_bps, None);
        assert_eq!(f.duplex.as_deref(), Some("full"));
        assert_eq!(f.mtu, Some(1500));
        assert!(f.notes.iter().any(|n| n.contains("nominal")), "{:?}", f.notes);

        let f = rt.block_on(link::link_facts(IpAddr::from([198, 18, 2, 7])));
        assert_eq!(f.route_mtu, Some(1400), "{f:?}");
        let f = rt.block_on(link::link_facts(IpAddr::from([198, 18, 3, 7])));
        assert_eq!(f.gateway, Some(IpAddr::from([198, 18, 1, 254])), "{f:?}");
        // No route at all: a note, no panic.
        let f = rt.block_on(link::link_facts(IpAddr::from([198, 19, 0, 1])));
        assert_eq!(f.interface, None);
        assert!(f.notes[0].starts_with("could not look up the route"), "{f:?}");
    }

    #[test]
    #[ignore = "run by netns_scenarios inside a namespace"]
    fn inner_not_permitted() {
        if !inner("inner_not_permitted") {
            return;
        }
        let listener = TcpListener::bind("127.0.0.1:0").expect("listen");
        let port = listener.local_addr().expect("addr").port();
        let out = SystemProber
            .measure(
                &hosts(&["127.0.0.1"]),
                &ProbeOptions {
                    ports: vec![port],
                    ..quick(3)
                },
            )
            .expect("TCP fallback");
        assert_eq!(out[0].rtt.method, Method::TcpConnect { port });
        assert_eq!(
            out[0].notes,
            vec![format!(
                "ICMP not permitted (ping_group_range is 1 0 and not root); used TCP connect timing to port {port}"
            )]
        );

        let err = SystemProber
            .measure(&hosts(&["198.18.1.2"]), &quick(2))
            .expect_err("black hole");
        assert_eq!(
            err.to_string(),
            "no reply from 198.18.1.2 (198.18.1.2): ICMP not permitted (ping_group_range is 1 0 and not root), and 2 TCP connects to ports 443, 22, 80 timed out"
        );
    }

    #[test]
    #[ignore = "run by netns_scenarios inside a namespace"]
    fn inner_dgram_icmp() {
        if !inner("inner_dgram_icmp") {
            return;
        }
        let rt = tokio::runtime::Runtime::new().expect("runtime");
        let slot = PingSlot::allocate(1, 5)[0];
        match rt.block_on(icmp::ping(IpAddr::from([127, 0, 0, 1]), &quick(5), slot, || {})) {
            icmp::IcmpResult::Sent { stats, socket, .. } => {
                assert_eq!(socket, icmp::SocketKind::Dgram);
                assert_eq!(stats.received, 5);
            }
            other => panic!("{other:?}"),
        }
        let mut list = vec!["127.0.0.1", "127.0.0.1"];
        if std::net::UdpSocket::bind("[::1]:0").is_ok() {
            list.extend(["::1", "::1"]);
        }
        let out = SystemProber.measure(&hosts(&list), &quick(10)).expect("ping socket");
        assert_eq!(out.len(), list.len());
        for m in &out {
            assert_eq!(m.rtt.method, Method::Icmp);
            assert_eq!(m.rtt.received, 10);
            // Packet trains through an unprivileged ping socket, IPv4 and IPv6.
            assert!(m.capacity.as_ref().is_some_and(|c| c.used >= 1), "{m:?}");
        }
    }
}
