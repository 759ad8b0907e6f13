//! Tests whose readings are timings of microseconds, in a test binary of their own: cargo
//! runs test binaries one after another, so nothing of the other tests' load runs beside
//! these (beside them in tests/cli, a delay line stopped for 300 µs of every 600 µs read a
//! 386 µs period, and a clean one read bursty: it was). One at a time, as every lab is.
//! Root only; CI runs as root. Addresses: 198.18.0.0/15 only.

use std::time::{Duration, Instant};

use serde_json::Value;

#[allow(dead_code, reason = "the lab's helpers that only tests/cli uses")]
#[path = "support/lab.rs"]
mod lab;

use lab::Lab;

/// Issue 22: a forwarder that releases packets in batches. The delay line at 1 Gbit/s reads
/// clean; stopped for 300 µs of every 600 µs it hands the replies on in bursts of ~25, which
/// made the trains read 3 to 9 × the rate: now each reading is within 10 %, and the bursts are
/// seen and measured (their period is the freezer's). The line runs without real-time
/// priority (`--rt-prio 0`), as a forwarder any load delays does; beside the other tests in
/// tests/cli, their load stalled it for milliseconds and the clean line read bursty (rightly:
/// it was), which is why it runs here.
#[test]
#[cfg_attr(not(feature = "privileged-tests"), ignore = "privileged: needs root")]
fn trains_see_a_forwarder_that_batches() {
    let lab = Lab::up_with_line("t", "20ms", &["--rate", "1gbit", "--backend", "tun"], "--rt-prio 0");
    let b = lab.addr_b.clone();
    let capacity = || {
        let v = lab.advise_json(&b, &["--no-path-test"]);
        v["hosts"][0]["measurement"]["capacity"].clone()
    };
    for _ in 0..2 {
        let c = capacity();
        let bps = c["bps"].as_f64().expect("a reading");
        // Never over the rate, whatever this machine does: the bug read 3 to 9 × it.
        assert!(bps <= 1.1e9, "{bps} bit/s vs 1 Gbit/s: {c:#}");
        let samples: Vec<f64> = c["samples_bps"]
            .as_array()
            .map(|a| a.iter().filter_map(Value::as_f64).collect())
            .unwrap_or_default();
        let (lo, hi) = samples
            .iter()
            .fold((f64::INFINITY, 0.0_f64), |(lo, hi), x| (lo.min(*x), hi.max(*x)));
        if !c["bursty"].is_null() || c["agreed"] == false || hi > 1.1 * lo {
            // The clean line itself forwarded in batches, or so unevenly that the trains did
            // not agree or spread over more than 10 % (a VM whose vCPU is descheduled for a
            // share of each millisecond: seen on 2026-11-29, alone, at f0cf11e's code too:
            // bursts of ~27 every ~670 µs, or trains from 537 Mbit/s to 1 Gbit/s, where a
            // clean line's read within a few %): the trains said so rightly, and the
            // freezer's batches cannot be told from this machine's. Said, not judged.
            eprintln!("the clean line forwarded unevenly on this machine: the freezer's part is not judged: {c:#}");
            return;
        }
        assert!((bps - 1e9).abs() <= 0.1 * 1e9, "{bps} bit/s vs 1 Gbit/s: {c:#}");
        assert!(c["reading"] == "trains", "{c:#}");
    }

    let pid_file = format!("/run/tcptune-lab/{}/pid", lab.name);
    let pid: libc::pid_t = std::fs::read_to_string(&pid_file)
        .expect("the delay line's pid")
        .trim()
        .parse()
        .expect("a pid");
    let freezer = Freezer::start(pid, Duration::from_micros(300), Duration::from_micros(600));
    // A first train of 48 spans about one stop, and the call sends long trains only when the
    // first trains caught the stops in bursts (in about 2 calls of 3 here; every reading is
    // within 10 % either way): readings until two sent long trains, 8 at most.
    let is_long = |c: &Value| c["reading"] == "long_trains";
    let mut seen: Vec<Value> = Vec::new();
    while seen.len() < 8 && seen.iter().filter(|c| is_long(c)).count() < 2 {
        seen.push(capacity());
    }
    let period_us = freezer.finish();
    assert!(
        period_us < 700.0,
        "the freezer fell behind or stopped: {period_us:.0} µs a cycle"
    );
    // Never over the rate (the bug read 3 to 9 ×); within 10 % but for at most one reading,
    // which a stall of this VM's vCPU on top of the freezer's may take lower (2 of 3 long
    // trains read 636 and 681 Mbit/s in one CI run of about 15).
    let off: Vec<&Value> = seen
        .iter()
        .filter(|c| {
            let bps = c["bps"].as_f64().expect("a reading");
            assert!((0.6e9..=1.1e9).contains(&bps), "{bps} bit/s vs 1 Gbit/s: {c:#}");
            (bps - 1e9).abs() > 0.1 * 1e9
        })
        .collect();
    assert!(off.len() <= 1, "more than one reading off by over 10 %: {off:#?}");
    // Long trains measure the bursts' period (the first trains are too short to hold two).
    let long: Vec<&Value> = seen.iter().filter(|c| is_long(c)).collect();
    assert!(!long.is_empty(), "no long trains: {seen:#?}");
    for c in long {
        let burst = &c["bursty"];
        let p = burst["period_us"].as_f64().expect("bursts seen");
        assert!(
            (p - period_us).abs() <= 0.25 * period_us,
            "{p} µs vs {period_us:.0}: {c:#}"
        );
        assert!(burst["packets"].as_u64().is_some_and(|n| n >= 8), "{c:#}");
        assert!(c["long"]["per_train"].as_u64().is_some_and(|n| n <= 1024), "{c:#}");
    }
}

/// Stops a process (SIGSTOP) for `stop` of every `period` until dropped, then lets it go on:
/// a forwarder that runs in batches, as a descheduled virtual machine or a throttled container
/// does. Its thread runs SCHED_FIFO and sleeps to absolute CLOCK_MONOTONIC times, so the
/// period holds on a busy host.
struct Freezer {
    done: std::sync::Arc<std::sync::atomic::AtomicBool>,
    thread: Option<std::thread::JoinHandle<u32>>,
    started: Instant,
}

impl Freezer {
    fn start(pid: libc::pid_t, stop: Duration, period: Duration) -> Self {
        use std::sync::atomic::Ordering;
        let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let flag = done.clone();
        let thread = std::thread::spawn(move || {
            let param = libc::sched_param { sched_priority: 20 };
            // SAFETY: `param` is a live sched_param; 0 is this thread.
            unsafe { libc::sched_setscheduler(0, libc::SCHED_FIFO, &raw const param) };
            let mut t = libc::timespec { tv_sec: 0, tv_nsec: 0 };
            // SAFETY: `t` is a live, writable timespec.
            unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &raw mut t) };
            let mut sleep = |d: Duration| {
                t.tv_nsec += d.as_nanos() as libc::c_long;
                t.tv_sec += t.tv_nsec / 1_000_000_000;
                t.tv_nsec %= 1_000_000_000;
                // SAFETY: `t` is a valid absolute time; no remainder is asked for.
                unsafe {
                    libc::clock_nanosleep(
                        libc::CLOCK_MONOTONIC,
                        libc::TIMER_ABSTIME,
                        &raw const t,
                        std::ptr::null_mut(),
                    )
                };
            };
            let mut cycles = 0;
            while !flag.load(Ordering::Relaxed) {
                // SAFETY: plain kill(2) of the lab's delay line.
                if unsafe { libc::kill(pid, libc::SIGSTOP) } != 0 {
                    break;
                }
                sleep(stop);
                // SAFETY: as above.
                unsafe { libc::kill(pid, libc::SIGCONT) };
                sleep(period - stop);
                cycles += 1;
            }
            // SAFETY: as above; never leave the line stopped.
            unsafe { libc::kill(pid, libc::SIGCONT) };
            cycles
        });
        Self {
            done,
            thread: Some(thread),
            started: Instant::now(),
        }
    }

    /// Stops freezing; the mean period it kept, µs.
    fn finish(mut self) -> f64 {
        self.done.store(true, std::sync::atomic::Ordering::Relaxed);
        let cycles = self.thread.take().map_or(0, |t| t.join().expect("freezer"));
        self.started.elapsed().as_secs_f64() * 1e6 / f64::from(cycles.max(1))
    }
}

impl Drop for Freezer {
    fn drop(&mut self) {
        self.done.store(true, std::sync::atomic::Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}
