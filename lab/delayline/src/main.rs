//! delayline — a userspace WAN emulator between two TUN devices.
//!
//! Used by `lab/lab.sh` where the kernel has no `sch_netem`. It opens two
//! TUN devices (`IFF_TUN | IFF_NO_PI`, created by name in the netns the
//! program runs in), and forwards every IP packet read from A to B and from
//! B to A after holding it for exactly `--delay` (one-way), measured on
//! `CLOCK_MONOTONIC` from the moment the packet was read.
//!
//! With `--loss PCT` each direction drops that share of its packets at random
//! (before the queue); `--loss-ab` / `--loss-ba` set it for one direction
//! (A to B, B to A) in place of `--loss`, so a test can tell which way a
//! path loses packets.
//!
//! With `--rate`, each direction is also a serialising bottleneck with a
//! drop-tail queue: `departure = max(arrival, previous departure) +
//! wire_bytes * 8 / rate`, and the packet leaves the line at
//! `departure + delay`. A packet is dropped when the bytes still waiting to
//! be serialised plus its own size exceed `--queue`.
//!
//! With `--police RATE:BURST` each direction (`--police-ab` / `--police-ba`: one) is also
//! policed by a token bucket of RATE and BURST, full at the start: a packet passes when the
//! bucket holds its wire bytes and is dropped when it does not — never queued, so a policed
//! path loses packets at its base RTT. The policer acts after the random loss and before the
//! rate bottleneck, and counts its drops apart (`(police)` in the stats).
//!
//! With `--jitter DUR` each packet leaves after an extra delay uniform in [0, DUR], but never
//! before the packet before it (due = max(due, previous due)): the order is kept, and when
//! packets are closer together than DUR the extra delay tends to DUR for all of them. With
//! `--reorder DUR` each packet's extra delay is its own, so later packets overtake earlier ones;
//! the line then releases packets by due time (a heap in place of the FIFO), and counts the
//! packets that left before one taken in earlier (`reordered` in the stats). The jitter is
//! added to the delay after the rate bottleneck, both ways.
//!
//! With `--batch DUR` the line releases packets once per DUR, as a busy router, a virtual switch
//! or a NIC's interrupt coalescing does: each packet's due time (after the delay, the rate and
//! the jitter) is rounded up to the next multiple of DUR on `CLOCK_MONOTONIC`, so the writer
//! wakes once a tick and writes what is due then in one go. A packet due on a tick leaves at that
//! tick; none leaves early, and the order is what it was without batches. Both ways.
//!
//! The devices stay usable when moved to another network namespace
//! (`ip link set NAME netns NS`): the open file descriptors follow the
//! device. `lab.sh` relies on that: it waits for `--ready-file`, then moves
//! and configures the devices. The devices disappear when the program exits.
//!
//! Threads: per direction one reader (blocking `read`, timestamps, rate
//! model, enqueue) and one writer (sleeps with absolute `clock_nanosleep`
//! until shortly before the head packet is due, spins the last few tens of
//! microseconds — rationed to ~6% of a core — then writes every due packet).
//! The threads run SCHED_FIFO (`--rt-prio`, default 10) when allowed, so
//! other load on the CPUs does not delay them.
//! By default TUN offloads (IFF_VNET_HDR + TSO/GSO, 64 KB super-packets) are
//! on for a plain delay line (about 4x less CPU) and off with `--rate`, `--police`,
//! `--jitter`, `--reorder` or `--batch`, so that queue, policer, jitter and batches act on real
//! packets.
//! SIGINT/SIGTERM/SIGHUP: print counters and exit 0. SIGUSR1: print counters.
//!
//! Dependencies: `libc`; `clap` and tcptune's units for the arguments.

mod impair;

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread;

use clap::Parser;
use tcptune::units::{Bitrate, Bytes, Span};

use impair::{Jitter, Pkt, ReleaseQueue, ReorderCount, Rng, Ticks, TokenBucket};

/// Size of `struct virtio_net_hdr` (the default vnet header size of TUN).
const VNET_HDR_LEN: usize = 10;
const READ_BUF_LEN: usize = 256 * 1024;
const BATCH_MAX: usize = 64;
/// Bytes of recycled buffer capacity kept per direction.
const POOL_MAX_BYTES: usize = 64 << 20;
const DEFAULT_HOLD_LIMIT: u64 = 256 << 20;
/// Safety cap on bytes held in one direction when `--rate` is given.
const RATED_HOLD_LIMIT: u64 = 1 << 30;

static FATAL: AtomicBool = AtomicBool::new(false);

/// What the forwarding threads run with, resolved from [`Args`].
#[derive(Debug)]
struct Config {
    tun_a: String,
    tun_b: String,
    delay_ns: u64,
    rate_bps: Option<u64>,
    queue_bytes: Option<u64>,
    /// Random drop probability × 2^32 (0: none), A to B and B to A.
    loss_ab_2_32: u64,
    loss_ba_2_32: u64,
    police_ab: Option<Police>,
    police_ba: Option<Police>,
    jitter: Option<JitterCfg>,
    /// `--batch`: release once per this many nanoseconds.
    batch_ns: Option<u64>,
    ready_file: Option<String>,
    offload: Option<bool>,
    txqueuelen: u32,
    rt_prio: i32,
}

/// A token-bucket policer's parameters (`--police RATE:BURST`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Police {
    rate_bps: u64,
    burst_bytes: u64,
}

/// Per-packet extra delay, uniform in 0..=`max_ns`; `keep_order`: `--jitter`, else `--reorder`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct JitterCfg {
    max_ns: u64,
    keep_order: bool,
}

// ---------------------------------------------------------------- arguments

/// Forwards IP packets between two TUN devices (created in the current netns), holding each
/// one for DUR (one-way) and optionally rate-limiting each direction with a drop-tail queue.
///
/// Rates, sizes and durations are read by tcptune's own parsers, so they mean what they mean
/// in tcptune: rates are bits per second with SI prefixes (10mbit = 10mbps = 10^7 bit/s),
/// sizes are bytes with IEC or SI units as written (64KiB = 65536, 64KB = 64000).
#[derive(Parser, Debug)]
#[command(name = "delayline")]
struct Args {
    /// TUN device name of side A (1..15 bytes, no '/' or space)
    #[arg(long, value_name = "NAME", value_parser = tun_name)]
    tun_a: String,
    /// TUN device name of side B
    #[arg(long, value_name = "NAME", value_parser = tun_name)]
    tun_b: String,
    /// One-way delay: 25ms, 1.5s, 250us, or 0
    #[arg(long, value_name = "DUR", value_parser = delay_ns)]
    delay: u64,
    /// Per-direction bottleneck in bits per second: 500mbit, 1gbit, 80mbit
    #[arg(long, value_name = "RATE", value_parser = rate_bps)]
    rate: Option<u64>,
    /// Drop-tail limit in bytes: 1500000, 64KiB, 2MiB. With --rate: bytes waiting to be
    /// serialised (default: max(1000 x 1500 B, 25 ms at RATE)); without --rate: bytes held in
    /// the line (default 256 MiB)
    #[arg(long, value_name = "BYTES", value_parser = queue_bytes)]
    queue: Option<u64>,
    /// Written (our pid) once both devices are open
    #[arg(long, value_name = "PATH")]
    ready_file: Option<String>,
    /// IFF_VNET_HDR + TSO/GSO super-packets (default: on without --rate, off with --rate)
    #[arg(long, overrides_with = "no_offload")]
    offload: bool,
    /// No TUN offloads
    #[arg(long, overrides_with = "offload")]
    no_offload: bool,
    /// Device tx queue length
    #[arg(long, value_name = "N", default_value_t = 10_000,
          value_parser = clap::value_parser!(u32).range(1..=1_000_000))]
    txqueuelen: u32,
    /// SCHED_FIFO priority of the forwarding threads, 0 = normal scheduling (falls back to
    /// normal scheduling if not permitted)
    #[arg(long, value_name = "N", default_value_t = 10, value_parser = clap::value_parser!(i32).range(0..=99))]
    rt_prio: i32,
    /// Drop this percentage of packets at random in each direction, before the queue
    /// (0.01 = 1 in 10000): the random loss of a long path
    #[arg(long, value_name = "PCT", default_value = "0", value_parser = loss_2_32)]
    loss: u64,
    /// Drop this percentage of the packets going from A to B, in place of --loss
    #[arg(long, value_name = "PCT", value_parser = loss_2_32)]
    loss_ab: Option<u64>,
    /// Drop this percentage of the packets going from B to A, in place of --loss
    #[arg(long, value_name = "PCT", value_parser = loss_2_32)]
    loss_ba: Option<u64>,
    /// Police each direction with a token bucket of RATE (bits per second) and BURST (bytes, or
    /// a duration at RATE): 100mbit:20ms, 100mbit:256KiB. A packet the bucket lacks the bytes
    /// for is dropped, never queued; after the random loss, before the --rate bottleneck
    #[arg(long, value_name = "RATE:BURST", value_parser = police)]
    police: Option<Police>,
    /// Police the packets going from A to B, in place of --police
    #[arg(long, value_name = "RATE:BURST", value_parser = police)]
    police_ab: Option<Police>,
    /// Police the packets going from B to A, in place of --police
    #[arg(long, value_name = "RATE:BURST", value_parser = police)]
    police_ba: Option<Police>,
    /// Add an extra delay uniform in [0, DUR] to each packet, keeping their order: a packet
    /// never leaves before the one before it (5ms, 500us)
    #[arg(long, value_name = "DUR", value_parser = jitter_ns, conflicts_with = "reorder")]
    jitter: Option<u64>,
    /// Add an extra delay uniform in [0, DUR] to each packet on its own, so that later packets
    /// overtake earlier ones (counted as `reordered`)
    #[arg(long, value_name = "DUR", value_parser = jitter_ns)]
    reorder: Option<u64>,
    /// Release packets once per DUR (1ms, 250us), as a busy router or interrupt coalescing
    /// does: each packet's due time (after delay, rate and jitter) is rounded up to the next
    /// multiple of DUR on CLOCK_MONOTONIC, and what is due at a tick leaves in one batch
    #[arg(long, value_name = "DUR", value_parser = batch_ns)]
    batch: Option<u64>,
}

fn tun_name(n: &str) -> Result<String, String> {
    if n.is_empty() || n.len() >= libc::IFNAMSIZ || n.contains(['/', ' ', '\0']) {
        return Err(format!("bad interface name '{n}' (1..15 bytes, no '/' or space)"));
    }
    Ok(n.to_string())
}

/// A tcptune duration (25ms, 1.5s, 250us) or a bare 0 (no delay, which tcptune's parser
/// refuses: a zero RTT is an error there) -> nanoseconds, at most an hour.
fn delay_ns(s: &str) -> Result<u64, String> {
    if s == "0" {
        return Ok(0);
    }
    let d: Span = s.parse().map_err(|e: tcptune::units::UnitError| e.to_string())?;
    let ns = d.as_std().as_nanos();
    if ns > 3_600_000_000_000 {
        return Err(format!("duration '{s}' is longer than an hour"));
    }
    Ok(ns as u64)
}

/// A tcptune rate (bits per second) -> bit/s, at most 10 Tbit/s.
fn rate_bps(s: &str) -> Result<u64, String> {
    let r: Bitrate = s.parse().map_err(|e: tcptune::units::UnitError| e.to_string())?;
    if r.bps() > 10_000_000_000_000 {
        return Err(format!("rate '{s}' is out of range (at most 10tbit)"));
    }
    Ok(r.bps())
}

/// A tcptune size -> bytes, 1 B ..= 64 GiB.
fn queue_bytes(s: &str) -> Result<u64, String> {
    let b: Bytes = s.parse().map_err(|e: tcptune::units::UnitError| e.to_string())?;
    if !(1..=64 << 30).contains(&b.get()) {
        return Err(format!("size '{s}' is out of range (1 B to 64 GiB)"));
    }
    Ok(b.get())
}

/// The smallest policer burst: one full-sized packet (a bucket smaller than the packets
/// passes none of them).
const MIN_BURST: u64 = 1500;

/// `RATE:BURST` -> a policer: RATE a tcptune rate, BURST a tcptune size (256KiB) or a tcptune
/// duration at RATE (20ms), 1500 B to 64 GiB.
fn police(s: &str) -> Result<Police, String> {
    let (rate, burst) = s
        .split_once(':')
        .ok_or_else(|| format!("'{s}' must be RATE:BURST, e.g. 100mbit:20ms or 100mbit:256KiB"))?;
    let rate_bps = rate_bps(rate)?;
    let burst_bytes = match (burst.parse::<Bytes>(), burst.parse::<Span>()) {
        (Ok(b), _) => u128::from(b.get()),
        (_, Ok(d)) => d.as_std().as_nanos() * u128::from(rate_bps) / 8 / 1_000_000_000,
        (Err(e), Err(_)) => {
            return Err(format!("burst '{burst}': a size (256KiB) or a duration (20ms): {e}"));
        }
    };
    if !(u128::from(MIN_BURST)..=64 << 30).contains(&burst_bytes) {
        return Err(format!(
            "burst '{burst}' is {burst_bytes} B: it must hold a full packet ({MIN_BURST} B) and at most 64 GiB"
        ));
    }
    Ok(Police {
        rate_bps,
        burst_bytes: burst_bytes as u64,
    })
}

/// A tcptune duration -> nanoseconds, at most 10 s (jitter).
fn jitter_ns(s: &str) -> Result<u64, String> {
    let d: Span = s.parse().map_err(|e: tcptune::units::UnitError| e.to_string())?;
    let ns = d.as_std().as_nanos();
    if ns > 10_000_000_000 {
        return Err(format!("jitter '{s}' is longer than 10 s"));
    }
    Ok(ns as u64)
}

/// A tcptune duration -> nanoseconds, at most 1 s (the release period of `--batch`).
fn batch_ns(s: &str) -> Result<u64, String> {
    let d: Span = s.parse().map_err(|e: tcptune::units::UnitError| e.to_string())?;
    let ns = d.as_std().as_nanos();
    if ns == 0 || ns > 1_000_000_000 {
        return Err(format!("batch period '{s}' must be more than 0 and at most 1 s"));
    }
    Ok(ns as u64)
}

/// A percentage 0..=100 -> drop probability × 2^32.
fn loss_2_32(v: &str) -> Result<u64, String> {
    let pct: f64 = v
        .parse()
        .ok()
        .filter(|p: &f64| (0.0..=100.0).contains(p))
        .ok_or_else(|| format!("'{v}' must be a percentage, 0..100"))?;
    Ok((pct / 100.0 * 4_294_967_296.0).round() as u64)
}

impl Args {
    fn into_config(self) -> Result<Config, String> {
        if self.tun_a == self.tun_b {
            return Err("--tun-a and --tun-b must differ".into());
        }
        let offload = match (self.offload, self.no_offload) {
            (true, _) => Some(true),
            (_, true) => Some(false),
            _ => None,
        };
        Ok(Config {
            tun_a: self.tun_a,
            tun_b: self.tun_b,
            delay_ns: self.delay,
            rate_bps: self.rate,
            queue_bytes: self.queue,
            loss_ab_2_32: self.loss_ab.unwrap_or(self.loss),
            loss_ba_2_32: self.loss_ba.unwrap_or(self.loss),
            police_ab: self.police_ab.or(self.police),
            police_ba: self.police_ba.or(self.police),
            jitter: match (self.jitter, self.reorder) {
                (Some(max_ns), _) => Some(JitterCfg {
                    max_ns,
                    keep_order: true,
                }),
                (_, Some(max_ns)) => Some(JitterCfg {
                    max_ns,
                    keep_order: false,
                }),
                _ => None,
            },
            batch_ns: self.batch,
            ready_file: self.ready_file,
            offload,
            txqueuelen: self.txqueuelen,
            rt_prio: self.rt_prio,
        })
    }
}

// ---------------------------------------------------------------- syscalls

fn errno_str() -> String {
    std::io::Error::last_os_error().to_string()
}

fn errno() -> i32 {
    std::io::Error::last_os_error().raw_os_error().unwrap_or(0)
}

fn mono_ns() -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `ts` is a valid, writable timespec.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

fn sleep_until(t_ns: u64) {
    let ts = libc::timespec {
        tv_sec: (t_ns / 1_000_000_000) as libc::time_t,
        tv_nsec: (t_ns % 1_000_000_000) as libc::c_long,
    };
    loop {
        // SAFETY: `ts` is valid; the remain pointer may be null with TIMER_ABSTIME.
        let r = unsafe { libc::clock_nanosleep(libc::CLOCK_MONOTONIC, libc::TIMER_ABSTIME, &ts, std::ptr::null_mut()) };
        if r != libc::EINTR {
            break;
        }
    }
}

/// Waits for absolute CLOCK_MONOTONIC instants more precisely than a bare
/// `clock_nanosleep`, whose wake-up on an idle (virtual) CPU can be 100 us or
/// more late: sleep until `due - margin`, then spin the rest. `margin` tracks
/// a high quantile of the observed oversleep. Spinning is rationed by a
/// budget (1/16 of wall time, i.e. at most ~6% of a core per writer); with
/// no budget left it falls back to a plain sleep.
struct PreciseSleeper {
    margin_ns: u64,
    budget_ns: u64,
    last_ns: u64,
}

impl PreciseSleeper {
    const MARGIN_MAX_NS: u64 = 300_000;
    const BUDGET_MAX_NS: u64 = 2_000_000;

    fn new() -> Self {
        PreciseSleeper {
            margin_ns: 100_000,
            budget_ns: Self::BUDGET_MAX_NS,
            last_ns: mono_ns(),
        }
    }

    fn wait_until(&mut self, due: u64) {
        let now = mono_ns();
        let wake = self.wake_at(due, now);
        if due <= now {
            return;
        }
        if wake == due {
            sleep_until(due);
            return;
        }
        if wake > now {
            sleep_until(wake);
            self.woke(wake, mono_ns());
        }
        self.spin(due, || false);
    }

    /// When to stop sleeping for `due`: `margin` before it, or at `due` itself when the spin
    /// budget is spent. Accrues the budget for the time since the last call.
    fn wake_at(&mut self, due: u64, now: u64) -> u64 {
        self.budget_ns = (self.budget_ns + now.saturating_sub(self.last_ns) / 16).min(Self::BUDGET_MAX_NS);
        self.last_ns = now;
        if self.budget_ns < self.margin_ns {
            due
        } else {
            due.saturating_sub(self.margin_ns)
        }
    }

    /// A sleep meant to end at `wake` ended at `at`: the margin follows the oversleep.
    fn woke(&mut self, wake: u64, at: u64) {
        let over = at.saturating_sub(wake);
        if over > self.margin_ns {
            self.margin_ns += (over - self.margin_ns) / 4;
        } else {
            self.margin_ns -= (self.margin_ns - over) / 32;
        }
        self.margin_ns = self.margin_ns.clamp(5_000, Self::MARGIN_MAX_NS);
    }

    /// Spins until `due`, or until `stop()` says to look again; the time spun comes off the budget.
    fn spin(&mut self, due: u64, stop: impl Fn() -> bool) {
        let start = mono_ns();
        let mut t = start;
        while t < due && !stop() {
            std::hint::spin_loop();
            t = mono_ns();
        }
        self.budget_ns = self.budget_ns.saturating_sub(t - start);
    }
}

fn ifreq_for(name: &str) -> libc::ifreq {
    // SAFETY: ifreq is plain old data; all-zero is a valid value.
    let mut ifr: libc::ifreq = unsafe { std::mem::zeroed() };
    for (dst, src) in ifr.ifr_name.iter_mut().zip(name.bytes()) {
        *dst = src as libc::c_char;
    }
    ifr
}

/// Opens (creates) the TUN device `name` in the current netns.
fn open_tun(name: &str, offload: bool, txqueuelen: u32) -> Result<i32, String> {
    // SAFETY: the path is a NUL-terminated string.
    let fd = unsafe { libc::open(c"/dev/net/tun".as_ptr(), libc::O_RDWR | libc::O_CLOEXEC) };
    if fd < 0 {
        return Err(format!("cannot open /dev/net/tun: {}", errno_str()));
    }
    let close_err = |msg: String| {
        // SAFETY: fd is ours and open.
        unsafe { libc::close(fd) };
        Err(msg)
    };
    let mut ifr = ifreq_for(name);
    let mut flags = libc::IFF_TUN | libc::IFF_NO_PI;
    if offload {
        flags |= libc::IFF_VNET_HDR;
    }
    ifr.ifr_ifru.ifru_flags = flags as libc::c_short;
    // SAFETY: TUNSETIFF takes a pointer to a struct ifreq.
    if unsafe { libc::ioctl(fd, libc::TUNSETIFF, &mut ifr) } < 0 {
        return close_err(format!("cannot create TUN device '{name}': {}", errno_str()));
    }
    if offload {
        let feats = libc::TUN_F_CSUM | libc::TUN_F_TSO4 | libc::TUN_F_TSO6;
        // SAFETY: TUNSETOFFLOAD takes an unsigned long by value.
        if unsafe { libc::ioctl(fd, libc::TUNSETOFFLOAD, feats as libc::c_ulong) } < 0 {
            return close_err(format!("TUNSETOFFLOAD on '{name}': {}", errno_str()));
        }
    }
    // SAFETY: plain socket(2) call.
    let sock = unsafe { libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0) };
    if sock < 0 {
        return close_err(format!("socket: {}", errno_str()));
    }
    let mut ifr = ifreq_for(name);
    ifr.ifr_ifru.ifru_ifindex = txqueuelen as libc::c_int; // ifr_qlen
    // SAFETY: SIOCSIFTXQLEN takes a pointer to a struct ifreq.
    let r = unsafe { libc::ioctl(sock, libc::SIOCSIFTXQLEN, &mut ifr) };
    let err = errno_str();
    // SAFETY: sock is ours and open.
    unsafe { libc::close(sock) };
    if r < 0 {
        return close_err(format!("cannot set txqueuelen of '{name}': {err}"));
    }
    Ok(fd)
}

// ---------------------------------------------------------------- the line

#[derive(Default)]
struct LineState {
    queue: ReleaseQueue,
    held_bytes: u64,
    pool: Vec<Vec<u8>>,
    pool_bytes: usize,
    /// By-due queue only: the due time the writer sleeps toward (u64::MAX while the queue is
    /// empty, 0 while it is not waiting). A packet due earlier wakes it.
    waiting_for: u64,
}

/// One direction: reader pushes, writer pops. Without `--reorder`, due times are
/// non-decreasing, so a FIFO is enough and the writer never has to be woken early; with it,
/// the queue is a heap by due time and a packet due before the one the writer waits for wakes
/// it (`waiting_for`, `kick`).
#[derive(Default)]
struct Line {
    state: Mutex<LineState>,
    nonempty: Condvar,
    /// Set by the reader when it queued a packet due before `waiting_for`: the writer's spin
    /// stops and looks again.
    kick: AtomicBool,
    fwd_pkts: AtomicU64,
    fwd_bytes: AtomicU64,
    drop_queue: AtomicU64,
    drop_loss: AtomicU64,
    drop_police: AtomicU64,
    drop_write: AtomicU64,
    /// Packets that left before a packet the line took in earlier (`--reorder`).
    reordered: AtomicU64,
    /// Wake-up lateness of the writer (write time - due time), per batch.
    late_sum_ns: AtomicU64,
    late_max_ns: AtomicU64,
    batches: AtomicU64,
}

impl Line {
    fn lock(&self) -> MutexGuard<'_, LineState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

struct Dir {
    name: &'static str,
    from_fd: i32,
    to_fd: i32,
    delay_ns: u64,
    rate_bps: Option<u64>,
    /// With a rate: max bytes waiting for serialisation.
    queue_bytes: u64,
    /// Random drop probability × 2^32.
    loss_2_32: u64,
    police: Option<Police>,
    jitter: Option<JitterCfg>,
    /// `--batch`: due times rounded up to these ticks.
    ticks: Option<Ticks>,
    /// Max bytes held in the line (memory cap / drop-tail without a rate).
    hold_limit: u64,
    vnet: bool,
    line: Arc<Line>,
}

impl Dir {
    /// Packets leave by due time, not in arrival order (`--reorder`).
    fn by_due(&self) -> bool {
        self.jitter.is_some_and(|j| !j.keep_order)
    }
}

fn fatal(msg: String) -> ! {
    eprintln!("delayline: error: {msg}");
    FATAL.store(true, Ordering::SeqCst);
    // SAFETY: plain kill(2) to ourselves; the main thread sigwait()s for it.
    unsafe { libc::kill(libc::getpid(), libc::SIGTERM) };
    loop {
        thread::park();
    }
}

/// Header bytes (IP + TCP/UDP) of an IP packet, for GSO accounting.
fn l3l4_header_len(ip: &[u8]) -> Option<usize> {
    let (l3, proto) = match ip.first()? >> 4 {
        4 => ((*ip.first()? & 0x0f) as usize * 4, *ip.get(9)?),
        6 => (40, *ip.get(6)?),
        _ => return None,
    };
    match proto {
        6 => Some(l3 + (*ip.get(l3 + 12)? >> 4) as usize * 4),
        17 => Some(l3 + 8),
        _ => Some(l3),
    }
}

/// Bytes this packet occupies on the emulated wire. A GSO super-packet
/// counts as the segments it stands for (each with its own headers).
fn wire_len(pkt: &[u8], vnet: bool) -> usize {
    if !vnet {
        return pkt.len();
    }
    let ip = &pkt[VNET_HDR_LEN..];
    let gso_type = pkt[1] & 0x7f;
    let gso_size = u16::from_ne_bytes([pkt[4], pkt[5]]) as usize;
    if gso_type == 0 || gso_size == 0 {
        return ip.len();
    }
    let Some(hdr) = l3l4_header_len(ip) else {
        return ip.len();
    };
    let segs = ip.len().saturating_sub(hdr).div_ceil(gso_size).max(1);
    ip.len() + (segs - 1) * hdr
}

fn reader(d: Arc<Dir>) {
    let mut buf = vec![0u8; READ_BUF_LEN];
    let min_len = if d.vnet { VNET_HDR_LEN + 1 } else { 1 };
    let mut next_free_ps: u128 = 0; // end of serialisation of the last accepted packet
    // xorshift64 for --loss, seeded from the clock (never 0).
    let mut rng = Rng::new(mono_ns());
    // The policer's bucket starts full. The jitter has a generator of its own, so that --loss
    // drops the packets it would drop without it.
    let mut bucket = d.police.map(|p| TokenBucket::new(p.rate_bps, p.burst_bytes, mono_ns()));
    let mut jitter = d
        .jitter
        .map(|j| Jitter::new(j.max_ns, j.keep_order, mono_ns().rotate_left(29)));
    let by_due = d.by_due();
    let mut seq: u64 = 0;
    loop {
        // SAFETY: buf is valid for buf.len() writable bytes.
        let n = unsafe { libc::read(d.from_fd, buf.as_mut_ptr().cast(), buf.len()) };
        let now = mono_ns();
        if n < 0 {
            match errno() {
                libc::EINTR | libc::EAGAIN => continue,
                _ => fatal(format!("{}: read: {}", d.name, errno_str())),
            }
        }
        let n = n as usize;
        if n < min_len {
            continue;
        }
        let pkt = &buf[..n];
        if d.loss_2_32 > 0 && (rng.next_u64() >> 32) < d.loss_2_32 {
            d.line.drop_loss.fetch_add(1, Ordering::Relaxed);
            continue;
        }
        if let Some(b) = &mut bucket
            && !b.admit(now, wire_len(pkt, d.vnet) as u64)
        {
            d.line.drop_police.fetch_add(1, Ordering::Relaxed);
            continue;
        }
        let mut depart_ns = now;
        let mut new_next_free_ps = next_free_ps;
        if let Some(rate) = d.rate_bps {
            let rate = rate as u128;
            let wire = wire_len(pkt, d.vnet) as u128;
            let now_ps = now as u128 * 1000;
            let backlog_bytes = next_free_ps.saturating_sub(now_ps) * rate / 8 / 1_000_000_000_000;
            if backlog_bytes > 0 && backlog_bytes + wire > d.queue_bytes as u128 {
                d.line.drop_queue.fetch_add(1, Ordering::Relaxed);
                continue;
            }
            new_next_free_ps = next_free_ps.max(now_ps) + wire * 8 * 1_000_000_000_000 / rate;
            depart_ns = new_next_free_ps.div_ceil(1000) as u64;
        }
        let mut due_ns = depart_ns + d.delay_ns;
        if let Some(j) = &mut jitter {
            due_ns = j.apply(due_ns);
        }
        if let Some(t) = d.ticks {
            due_ns = t.release_at(due_ns);
        }

        let mut st = d.line.lock();
        if st.held_bytes + n as u64 > d.hold_limit {
            drop(st);
            d.line.drop_queue.fetch_add(1, Ordering::Relaxed);
            continue;
        }
        let mut b = match st.pool.pop() {
            Some(b) => {
                st.pool_bytes -= b.capacity();
                b
            }
            None => Vec::new(),
        };
        b.clear();
        b.extend_from_slice(pkt);
        let was_empty = st.queue.is_empty();
        st.held_bytes += n as u64;
        st.queue.push(Pkt { due_ns, seq, buf: b });
        seq += 1;
        // By due time, a packet due before the one the writer waits for wakes it; in a FIFO,
        // only the first one does.
        let wake = if by_due {
            let earlier = due_ns < st.waiting_for;
            if earlier {
                st.waiting_for = 0;
                d.line.kick.store(true, Ordering::Relaxed);
            }
            earlier
        } else {
            was_empty
        };
        drop(st);
        next_free_ps = new_next_free_ps;
        if wake {
            d.line.nonempty.notify_one();
        }
    }
}

/// The writer's wait with a by-due queue (`--reorder`): until the earliest packet is due, and
/// woken early by the reader when it queues a packet due before that one (on the condition
/// variable while sleeping, through `kick` while spinning). Returns the guard, the time and
/// the due time of the packet that is due.
fn wait_by_due<'a>(
    line: &'a Line,
    mut st: MutexGuard<'a, LineState>,
    sleeper: &mut PreciseSleeper,
) -> (MutexGuard<'a, LineState>, u64, u64) {
    loop {
        let Some(due) = st.queue.next_due() else {
            st.waiting_for = u64::MAX;
            st = line.nonempty.wait(st).unwrap_or_else(|e| e.into_inner());
            continue;
        };
        let now = mono_ns();
        if due <= now {
            st.waiting_for = 0;
            return (st, now, due);
        }
        st.waiting_for = due;
        line.kick.store(false, Ordering::Relaxed);
        let wake = sleeper.wake_at(due, now);
        if wake > now {
            let timeout = std::time::Duration::from_nanos(wake - now);
            st = match line.nonempty.wait_timeout(st, timeout) {
                Ok((g, _)) => g,
                Err(e) => e.into_inner().0,
            };
            let at = mono_ns();
            if wake < due && at >= wake {
                sleeper.woke(wake, at);
            }
            continue;
        }
        drop(st);
        sleeper.spin(due, || line.kick.load(Ordering::Relaxed));
        st = line.lock();
    }
}

fn writer(d: Arc<Dir>) {
    let mut batch: Vec<Vec<u8>> = Vec::with_capacity(BATCH_MAX);
    let mut sleeper = PreciseSleeper::new();
    let hdr = if d.vnet { VNET_HDR_LEN } else { 0 };
    let by_due = d.by_due();
    let mut order = ReorderCount::default();
    loop {
        let mut st = d.line.lock();
        for b in batch.drain(..) {
            if st.pool_bytes + b.capacity() <= POOL_MAX_BYTES {
                st.pool_bytes += b.capacity();
                st.pool.push(b);
            }
        }
        // Wait until the head packet is due.
        let (now, first_due) = if by_due {
            let (g, now, due) = wait_by_due(&d.line, st, &mut sleeper);
            st = g;
            (now, due)
        } else {
            loop {
                let Some(due) = st.queue.next_due() else {
                    st = d.line.nonempty.wait(st).unwrap_or_else(|e| e.into_inner());
                    continue;
                };
                let now = mono_ns();
                if due <= now {
                    break (now, due);
                }
                drop(st);
                sleeper.wait_until(due);
                st = d.line.lock();
            }
        };
        let mut reordered = 0;
        while batch.len() < BATCH_MAX {
            let Some(p) = st.queue.pop_due(now) else {
                break;
            };
            st.held_bytes -= p.buf.len() as u64;
            if by_due && order.release(p.seq) {
                reordered += 1;
            }
            batch.push(p.buf);
        }
        drop(st);
        let l = &d.line;
        if reordered > 0 {
            l.reordered.fetch_add(reordered, Ordering::Relaxed);
        }
        let late = mono_ns().saturating_sub(first_due);
        l.late_sum_ns.fetch_add(late, Ordering::Relaxed);
        l.late_max_ns.fetch_max(late, Ordering::Relaxed);
        l.batches.fetch_add(1, Ordering::Relaxed);
        for b in &batch {
            loop {
                // SAFETY: b is valid for b.len() readable bytes.
                let r = unsafe { libc::write(d.to_fd, b.as_ptr().cast(), b.len()) };
                if r >= 0 {
                    l.fwd_pkts.fetch_add(1, Ordering::Relaxed);
                    l.fwd_bytes.fetch_add((b.len() - hdr) as u64, Ordering::Relaxed);
                    break;
                }
                match errno() {
                    libc::EINTR => continue,
                    libc::EBADF | libc::EBADFD => fatal(format!("{}: write: {}", d.name, errno_str())),
                    // EIO while the device is down, EINVAL for junk, ENOMEM...
                    _ => {
                        l.drop_write.fetch_add(1, Ordering::Relaxed);
                        break;
                    }
                }
            }
        }
    }
}

/// Gives the calling thread SCHED_FIFO priority `prio` (0: leave it alone),
/// so that wake-ups stay on time while other work loads the CPUs. The
/// threads sleep or block almost all the time and spin at most ~6% of a
/// core, so they cannot starve the machine.
fn set_realtime(prio: i32) {
    static WARNED: AtomicBool = AtomicBool::new(false);
    if prio == 0 {
        return;
    }
    let param = libc::sched_param { sched_priority: prio };
    // SAFETY: param is a valid sched_param; pthread_self() is this thread.
    let r = unsafe { libc::pthread_setschedparam(libc::pthread_self(), libc::SCHED_FIFO, &param) };
    if r != 0 && !WARNED.swap(true, Ordering::Relaxed) {
        eprintln!(
            "delayline: warning: no SCHED_FIFO ({}); timing may suffer under CPU load",
            std::io::Error::from_raw_os_error(r)
        );
    }
}

fn print_stats(dirs: &[Arc<Dir>]) {
    for d in dirs {
        let l = &d.line;
        eprintln!(
            "delayline: {}: forwarded {} pkts {} bytes, dropped {} (queue) {} (random loss) {} (police) \
             {} (write errors), reordered {}, late avg {:.1} us max {:.1} us",
            d.name,
            l.fwd_pkts.load(Ordering::Relaxed),
            l.fwd_bytes.load(Ordering::Relaxed),
            l.drop_queue.load(Ordering::Relaxed),
            l.drop_loss.load(Ordering::Relaxed),
            l.drop_police.load(Ordering::Relaxed),
            l.drop_write.load(Ordering::Relaxed),
            l.reordered.load(Ordering::Relaxed),
            l.late_sum_ns.load(Ordering::Relaxed) as f64 / l.batches.load(Ordering::Relaxed).max(1) as f64 / 1e3,
            l.late_max_ns.load(Ordering::Relaxed) as f64 / 1e3,
        );
    }
}

fn write_ready_file(path: &str) -> Result<(), String> {
    let tmp = format!("{path}.tmp");
    std::fs::write(&tmp, format!("{}\n", std::process::id()))
        .and_then(|_| std::fs::rename(&tmp, path))
        .map_err(|e| format!("cannot write ready file '{path}': {e}"))
}

fn run(cfg: Config) -> Result<(), String> {
    // Block the signals in every thread; the main thread sigwait()s for them.
    // SAFETY: sigset_t is initialised by sigemptyset before use.
    let set = unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        for s in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP, libc::SIGUSR1] {
            libc::sigaddset(&mut set, s);
        }
        libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
        set
    };
    // Precise wake-ups: 1 ns timer slack (inherited by the threads below).
    // SAFETY: plain prctl(2) call.
    unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong, 0, 0, 0) };

    // Offloads only on a plain delay line: the queue, the policer, the jitter and the batches act
    // on packets.
    let plain = cfg.rate_bps.is_none()
        && cfg.police_ab.is_none()
        && cfg.police_ba.is_none()
        && cfg.jitter.is_none()
        && cfg.batch_ns.is_none();
    let vnet = cfg.offload.unwrap_or(plain);
    let fd_a = open_tun(&cfg.tun_a, vnet, cfg.txqueuelen)?;
    let fd_b = open_tun(&cfg.tun_b, vnet, cfg.txqueuelen)?;

    let queue_bytes = cfg.queue_bytes.unwrap_or_else(|| {
        let r = cfg.rate_bps.unwrap_or(0);
        (1000 * 1500).max(r / 8 / 40) // 25 ms at the rate
    });
    let hold_limit = match cfg.rate_bps {
        Some(_) => RATED_HOLD_LIMIT,
        None => cfg.queue_bytes.unwrap_or(DEFAULT_HOLD_LIMIT),
    };
    let by_due = cfg.jitter.is_some_and(|j| !j.keep_order);
    let mk = |name, from_fd, to_fd, loss_2_32, police| {
        Arc::new(Dir {
            name,
            from_fd,
            to_fd,
            delay_ns: cfg.delay_ns,
            rate_bps: cfg.rate_bps,
            queue_bytes,
            loss_2_32,
            police,
            jitter: cfg.jitter,
            ticks: cfg.batch_ns.map(Ticks::new),
            hold_limit,
            vnet,
            line: Arc::new(Line {
                state: Mutex::new(LineState {
                    queue: ReleaseQueue::new(by_due),
                    ..LineState::default()
                }),
                ..Line::default()
            }),
        })
    };
    let dirs = [
        mk("a->b", fd_a, fd_b, cfg.loss_ab_2_32, cfg.police_ab),
        mk("b->a", fd_b, fd_a, cfg.loss_ba_2_32, cfg.police_ba),
    ];
    let rt_prio = cfg.rt_prio;
    for d in &dirs {
        for (role, f) in [("rd", reader as fn(Arc<Dir>)), ("wr", writer)] {
            let d = Arc::clone(d);
            thread::Builder::new()
                .name(format!("{} {role}", d.name))
                .spawn(move || {
                    set_realtime(rt_prio);
                    f(d)
                })
                .map_err(|e| format!("cannot spawn thread: {e}"))?;
        }
    }
    if let Some(p) = &cfg.ready_file {
        write_ready_file(p)?;
    }
    eprintln!(
        "delayline: {} <-> {} delay {} us rate {} queue {} B loss {:.4} % a->b {:.4} % b->a offload {} rt-prio {}",
        cfg.tun_a,
        cfg.tun_b,
        cfg.delay_ns as f64 / 1e3,
        cfg.rate_bps.map_or("unlimited".to_string(), |r| format!("{r} bit/s")),
        if cfg.rate_bps.is_some() {
            queue_bytes
        } else {
            hold_limit
        },
        cfg.loss_ab_2_32 as f64 / 4_294_967_296.0 * 100.0,
        cfg.loss_ba_2_32 as f64 / 4_294_967_296.0 * 100.0,
        if vnet { "on" } else { "off" },
        cfg.rt_prio,
    );
    for (way, p) in [("a->b", cfg.police_ab), ("b->a", cfg.police_ba)] {
        if let Some(p) = p {
            eprintln!(
                "delayline: {way}: policed at {} bit/s, burst {} B",
                p.rate_bps, p.burst_bytes
            );
        }
    }
    if let Some(j) = cfg.jitter {
        eprintln!(
            "delayline: jitter 0..{} us per packet, {}",
            j.max_ns as f64 / 1e3,
            if j.keep_order { "order kept" } else { "reordering" }
        );
    }
    if let Some(b) = cfg.batch_ns {
        eprintln!(
            "delayline: released in batches, once every {} us (due times rounded up to the tick)",
            b as f64 / 1e3
        );
    }

    loop {
        let mut sig: libc::c_int = 0;
        // SAFETY: set is an initialised sigset_t, sig a valid out-pointer.
        if unsafe { libc::sigwait(&set, &mut sig) } != 0 {
            continue;
        }
        if sig == libc::SIGUSR1 {
            print_stats(&dirs);
            continue;
        }
        break;
    }
    print_stats(&dirs);
    if let Some(p) = &cfg.ready_file {
        let _ = std::fs::remove_file(p);
    }
    if FATAL.load(Ordering::SeqCst) {
        return Err("stopped after a fatal error".into());
    }
    Ok(())
}

fn main() {
    // Usage errors exit 2 (clap), run-time errors 1.
    let cfg = match Args::parse().into_config() {
        Ok(c) => c,
        Err(e) => {
            eprintln!("delayline: error: {e}");
            std::process::exit(2);
        }
    };
    let code = match run(cfg) {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("delayline: error: {e}");
            1
        }
    };
    // Exit without joining the forwarding threads; closing the fds removes
    // the (non-persistent) TUN devices.
    std::process::exit(code);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(extra: &[&str]) -> Result<Config, String> {
        let args = ["delayline", "--tun-a", "a", "--tun-b", "b", "--delay", "1ms"];
        Args::try_parse_from(args.iter().chain(extra))
            .map_err(|e| e.to_string())
            .and_then(Args::into_config)
    }

    /// The units are tcptune's: what lab.sh and the benches pass means what it means there.
    #[test]
    fn parses_units_as_tcptune_does() {
        assert_eq!(delay_ns("25ms"), Ok(25_000_000));
        assert_eq!(delay_ns("1.5s"), Ok(1_500_000_000));
        assert_eq!(delay_ns("250us"), Ok(250_000));
        assert_eq!(delay_ns("75000000ns"), Ok(75_000_000));
        assert_eq!(delay_ns("0"), Ok(0));
        assert!(delay_ns("25").is_err());
        assert!(delay_ns("ms").is_err());
        assert!(delay_ns("1.2.3ms").is_err());
        assert!(delay_ns("2h").is_err());
        assert_eq!(rate_bps("500mbit"), Ok(500_000_000));
        assert_eq!(rate_bps("1gbit"), Ok(1_000_000_000));
        assert_eq!(rate_bps("1.5Gbit"), Ok(1_500_000_000));
        assert_eq!(rate_bps("100000000bit"), Ok(100_000_000));
        // Bits, as in tcptune: the old parser read 10mbps as 10 Mbyte/s (80 Mbit/s).
        assert_eq!(rate_bps("10mbps"), Ok(10_000_000));
        assert_eq!(rate_bps("80mbit"), Ok(80_000_000));
        assert!(rate_bps("500").is_err());
        assert!(rate_bps("0mbit").is_err());
        assert!(rate_bps("100MB/s").is_err());
        // IEC and SI as written: the old parser read 64k as 65536.
        assert_eq!(queue_bytes("64KiB"), Ok(65536));
        assert_eq!(queue_bytes("64k"), Ok(64_000));
        assert_eq!(queue_bytes("1500000"), Ok(1_500_000));
        assert!(queue_bytes("12q").is_err());
        assert!(queue_bytes("0").is_err());
        assert!(queue_bytes("65GiB").is_err());
    }

    #[test]
    fn parses_arguments() {
        let c = parse(&[]).expect("minimal");
        assert_eq!((c.delay_ns, c.rate_bps, c.queue_bytes), (1_000_000, None, None));
        assert_eq!(
            (c.offload, c.txqueuelen, c.rt_prio, c.loss_ab_2_32, c.loss_ba_2_32),
            (None, 10_000, 10, 0, 0)
        );
        let c = parse(&["--rate", "100mbit", "--queue", "2MiB", "--offload", "--no-offload"]).expect("rate");
        assert_eq!(
            (c.rate_bps, c.queue_bytes, c.offload),
            (Some(100_000_000), Some(2 << 20), Some(false))
        );
        assert_eq!(parse(&["--offload"]).map(|c| c.offload), Ok(Some(true)));
        assert!(parse(&["--rt-prio", "100"]).is_err());
        assert!(parse(&["--txqueuelen", "0"]).is_err());
        assert!(parse(&["--rate", "10"]).is_err());
        let e = Args::try_parse_from(["delayline", "--tun-a", "x", "--tun-b", "x", "--delay", "0"])
            .map_err(|e| e.to_string())
            .and_then(Args::into_config)
            .expect_err("same device twice");
        assert!(e.contains("must differ"), "{e}");
        assert!(tun_name("a-name-of-16-byt").is_err());
        assert!(tun_name("a/b").is_err());
    }

    #[test]
    fn parses_loss() {
        let loss = |pct: &str| parse(&["--loss", pct]).map(|c| c.loss_ab_2_32);
        assert_eq!(loss("0.01"), Ok(429_497));
        // Each way alike, unless a direction has its own.
        let c = parse(&["--loss", "1"]).expect("loss");
        assert_eq!(c.loss_ab_2_32, c.loss_ba_2_32);
        let c = parse(&["--loss", "1", "--loss-ba", "2"]).expect("loss");
        assert_eq!((c.loss_ab_2_32, c.loss_ba_2_32), (42_949_673, 85_899_346));
        let c = parse(&["--loss-ab", "0.5"]).expect("loss");
        assert_eq!((c.loss_ab_2_32, c.loss_ba_2_32), (21_474_836, 0));
        assert!(parse(&["--loss-ba", "101"]).is_err());
        assert_eq!(loss("100"), Ok(1 << 32));
        assert_eq!(loss("0"), Ok(0));
        assert!(loss("-1").is_err());
        assert!(loss("1%").is_err());
    }

    #[test]
    fn parses_police_and_jitter() {
        let p = |r, b| {
            Some(Police {
                rate_bps: r,
                burst_bytes: b,
            })
        };
        // A burst as a size, or as a duration of the rate: 20 ms at 100 Mbit/s = 250 000 B.
        assert_eq!(police("100mbit:256KiB").ok(), p(100_000_000, 262_144));
        assert_eq!(police("100mbit:20ms").ok(), p(100_000_000, 250_000));
        assert_eq!(police("20mbit:1500").ok(), p(20_000_000, 1500));
        for bad in [
            "100mbit",
            "100mbit:",
            ":20ms",
            "100MB/s:20ms",
            "100mbit:20",
            "100mbit:1us",
            "1mbit:1ms",
        ] {
            assert!(police(bad).is_err(), "{bad}");
        }
        let c = parse(&[]).expect("none");
        assert_eq!((c.police_ab, c.police_ba, c.jitter), (None, None, None));
        // Both ways, unless a direction has its own.
        let c = parse(&["--police", "100mbit:20ms", "--police-ba", "50mbit:256KiB"]).expect("police");
        assert_eq!(
            (c.police_ab, c.police_ba),
            (p(100_000_000, 250_000), p(50_000_000, 262_144))
        );
        let c = parse(&["--police-ab", "100mbit:20ms"]).expect("police");
        assert_eq!((c.police_ab, c.police_ba), (p(100_000_000, 250_000), None));

        let c = parse(&["--jitter", "5ms"]).expect("jitter");
        assert_eq!(
            c.jitter,
            Some(JitterCfg {
                max_ns: 5_000_000,
                keep_order: true
            })
        );
        let c = parse(&["--reorder", "500us"]).expect("reorder");
        assert_eq!(
            c.jitter,
            Some(JitterCfg {
                max_ns: 500_000,
                keep_order: false
            })
        );
        assert!(
            parse(&["--jitter", "5ms", "--reorder", "5ms"]).is_err(),
            "one or the other"
        );
        assert!(parse(&["--jitter", "0"]).is_err());
        assert!(parse(&["--jitter", "11s"]).is_err());
    }

    #[test]
    fn parses_batch() {
        assert_eq!(parse(&[]).map(|c| c.batch_ns), Ok(None));
        assert_eq!(parse(&["--batch", "1ms"]).map(|c| c.batch_ns), Ok(Some(1_000_000)));
        assert_eq!(parse(&["--batch", "250us"]).map(|c| c.batch_ns), Ok(Some(250_000)));
        // With jitter (either kind): the ticks round the jittered due time.
        let c = parse(&["--batch", "1ms", "--reorder", "2ms"]).expect("batch and reorder");
        assert_eq!(
            (c.batch_ns, c.jitter.map(|j| j.keep_order)),
            (Some(1_000_000), Some(false))
        );
        for bad in ["0", "1", "2s", "1ms:2"] {
            assert!(parse(&["--batch", bad]).is_err(), "{bad}");
        }
    }

    #[test]
    fn the_arguments_are_consistent() {
        use clap::CommandFactory as _;
        Args::command().debug_assert();
    }

    #[test]
    fn gso_wire_len() {
        let mut p = vec![0u8; VNET_HDR_LEN + 20 + 20 + 2 * 1448];
        p[1] = 1; // VIRTIO_NET_HDR_GSO_TCPV4
        p[4..6].copy_from_slice(&1448u16.to_ne_bytes());
        p[VNET_HDR_LEN] = 0x45;
        p[VNET_HDR_LEN + 9] = 6;
        p[VNET_HDR_LEN + 20 + 12] = 5 << 4;
        assert_eq!(wire_len(&p, true), 2 * (40 + 1448));
        assert_eq!(wire_len(&p[VNET_HDR_LEN..], false), 40 + 2 * 1448);
    }
}
