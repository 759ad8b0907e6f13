//! The lab the test binaries share (tests/cli, tests/timed.rs): two network namespaces
//! joined by lab/lab.sh's emulated WAN path (netem where the kernel has it, else the TUN delay
//! line of the lab/delayline workspace member), optionally with a rate bottleneck, a policer,
//! jitter and a third namespace whose flows cross the same line ([`Lab::up_cross`]), one at a
//! time on the host ([`quiet_host`]). Root only; CI runs as root. Addresses: 198.18.0.0/15 only.

use std::path::{Path, PathBuf};
use std::process::Command as Std;

use assert_cmd::cargo::cargo_bin;
use serde_json::Value;

pub struct Lab {
    pub name: String,
    pub ns_a: String,
    pub ns_b: String,
    pub addr_b: String,
    /// The third namespace (198.18.0.3) behind A: there only with `--cross` ([`Lab::up_cross`]);
    /// the fourth, its flows' receiver behind B (198.18.0.4), is `NAME-d`.
    pub ns_c: String,
    // Fields drop after `Drop::drop`, so the next lab waits until this one is torn down.
    _quiet: Quiet,
}

/// The host to one timed test at a time ([`quiet_host`]). The file lock is released when the
/// file closes, after the mutex guard.
pub struct Quiet {
    _in_this_process: std::sync::MutexGuard<'static, ()>,
    _on_this_host: Option<std::fs::File>,
}

/// One timed test at a time: each lab's delay line forwards in SCHED_FIFO threads, and two or
/// three of them (with a packet train or iperf3 on each) on a 2-core host delay each other's
/// packets by milliseconds, which is exactly what the lab tests measure. A path test over
/// loopback takes both cores as well: beside a lab it stretched a delay line's batches (the
/// trains read a 386 µs period for 600) and, starved itself, sent application-limited.
static TIMED: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// Waits until no other timed test (a lab, a path test over loopback) runs in this process
/// or, as root, in another ([`HOST_LOCK`]); the host stays quiet while the guard lives. A
/// failed test poisons the mutex; the next test is still good.
pub fn quiet_host() -> Quiet {
    let guard = TIMED.lock().unwrap_or_else(|e| e.into_inner());
    let host = if tcptune::host::is_root() {
        Some(lock_host())
    } else {
        // Without root, the lock only where its file is readable: labs need root anyway.
        std::fs::File::open(HOST_LOCK).ok().filter(|f| f.lock().is_ok())
    };
    Quiet {
        _in_this_process: guard,
        _on_this_host: host,
    }
}

/// The same rule across processes (two `cargo test` runs, say from two checkouts): an
/// exclusive flock(2) on this file, taken after the mutex and held for the lab's life. The
/// kernel drops it when the holder exits, however it exits, so a killed run leaves no stale lock.
pub const HOST_LOCK: &str = "/run/lock/tcptune-lab-tests.lock";

/// Waits for the host-wide lab lock (see [`HOST_LOCK`]).
pub fn lock_host() -> std::fs::File {
    let dir = Path::new(HOST_LOCK).parent().expect("lock dir");
    // /run/lock is there on systemd and Debian-style hosts; a bare container may lack it.
    std::fs::create_dir_all(dir).expect("lock dir");
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(HOST_LOCK)
        .unwrap_or_else(|e| panic!("{HOST_LOCK}: {e}"));
    file.lock().unwrap_or_else(|e| panic!("flock {HOST_LOCK}: {e}"));
    file
}

pub fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// The delay line (workspace member lab/delayline), beside the tcptune binary in the same
/// target dir and profile.
fn delayline() -> PathBuf {
    // Not cargo_bin("delayline"): that panics while the binary is not built yet.
    let p = cargo_bin("tcptune").with_file_name("delayline");
    // Only the tested package's binaries are built for its integration tests, so the delay
    // line may be missing (`cargo test --workspace` builds it only as a test) or older than its
    // source (a stale one lacks the options the tests pass): build it, a no-op when current.
    static BUILT: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    let ok = *BUILT.get_or_init(|| {
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
        Std::new(cargo)
            .args(["build", "--quiet", "-p", "delayline", "--manifest-path"])
            .arg(repo().join("Cargo.toml"))
            .status()
            .is_ok_and(|s| s.success())
    });
    assert!(ok && p.exists(), "cannot build {}", p.display());
    p
}

impl Lab {
    pub fn up(tag: &str, rtt: &str) -> Self {
        Self::up_with(tag, rtt, &[])
    }

    /// A lab whose path is also a `rate` bottleneck (each direction), e.g. "50mbit".
    pub fn up_with_rate(tag: &str, rtt: &str, rate: Option<&str>) -> Self {
        match rate {
            Some(r) => Self::up_with(tag, rtt, &["--rate", r]),
            None => Self::up_with(tag, rtt, &[]),
        }
    }

    /// Like [`Lab::up`], with more `lab.sh up` options (`--rate 100mbit`, `--queue 64KiB`).
    pub fn up_with(tag: &str, rtt: &str, extra: &[&str]) -> Self {
        Self::up_with_line(tag, rtt, extra, "")
    }

    /// Like [`Lab::up_with`], with the third namespace C (`lab.sh up --cross`): its flows to B
    /// cross the same delay line as A's. `extra` as there (`--police 20mbit:20ms`, `--jitter 5ms`).
    pub fn up_cross(tag: &str, rtt: &str, extra: &[&str]) -> Self {
        let mut all = vec!["--cross"];
        all.extend_from_slice(extra);
        Self::up_with_line(tag, rtt, &all, "")
    }

    /// Like [`Lab::up_with`], with options for the delay line (`--loss 0.5`).
    pub fn up_with_line(tag: &str, rtt: &str, extra: &[&str], delayline_args: &str) -> Self {
        let quiet = quiet_host();
        let name = format!("tl{tag}{}", std::process::id() % 100_000);
        let out = Std::new("bash")
            .arg(repo().join("lab/lab.sh"))
            .args(["up", &name, "--rtt", rtt])
            .args(extra)
            .env("DELAYLINE_BIN", delayline())
            .env("DELAYLINE_ARGS", delayline_args)
            .output()
            .expect("lab.sh");
        let lab = Self {
            ns_a: format!("{name}-a"),
            ns_b: format!("{name}-b"),
            ns_c: format!("{name}-c"),
            addr_b: "198.18.0.2".into(),
            name,
            _quiet: quiet,
        };
        assert!(
            out.status.success(),
            "lab.sh up failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        lab
    }

    /// `tcptune advise --host HOST ARGS... --format json` run in A, its JSON (it must succeed).
    pub fn advise_json(&self, host: &str, args: &[&str]) -> Value {
        let mut all = vec!["advise", "--host", host];
        all.extend_from_slice(args);
        all.extend(["--format", "json"]);
        json(&self.tcptune(&self.ns_a, &all))
    }

    /// Run tcptune inside namespace `ns`.
    pub fn tcptune(&self, ns: &str, args: &[&str]) -> std::process::Output {
        Std::new("ip")
            .args(["netns", "exec", ns])
            .arg(cargo_bin("tcptune"))
            .args(args)
            .output()
            .expect("ip netns exec")
    }

    pub fn sh(&self, ns: &str, cmd: &str) {
        let ok = Std::new("ip")
            .args(["netns", "exec", ns, "sh", "-c", cmd])
            .status()
            .expect("sh");
        assert!(ok.success(), "{cmd}");
    }
}

/// The delay line's counters for one direction, as `lab.sh stats` prints them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LineStats {
    pub fwd_pkts: u64,
    pub fwd_bytes: u64,
    pub drop_queue: u64,
    pub drop_loss: u64,
    pub drop_police: u64,
    pub drop_write: u64,
    pub reordered: u64,
}

impl LineStats {
    /// One stats line: "delayline: a->b: forwarded P pkts B bytes, dropped Q (queue) L (random
    /// loss) X (police) W (write errors), reordered R, late ...".
    pub fn parse(line: &str) -> Option<Self> {
        let w: Vec<&str> = line.split_whitespace().collect();
        let num = |s: &str| s.trim_end_matches(',').parse::<u64>().ok();
        let before = |tag: &str| {
            let i = w.iter().position(|t| *t == tag)?;
            num(w.get(i.checked_sub(1)?)?)
        };
        let after = |tag: &str| num(w.get(w.iter().position(|t| *t == tag)? + 1)?);
        Some(Self {
            fwd_pkts: before("pkts")?,
            fwd_bytes: before("bytes,")?,
            drop_queue: before("(queue)")?,
            drop_loss: before("(random")?,
            drop_police: before("(police)")?,
            drop_write: before("(write")?,
            reordered: after("reordered")?,
        })
    }
}

impl Lab {
    /// The delay line's counters now (`lab.sh stats`): A to B, then B to A.
    pub fn line_stats(&self) -> (LineStats, LineStats) {
        let out = Std::new("bash")
            .arg(repo().join("lab/lab.sh"))
            .args(["stats", &self.name])
            .output()
            .expect("lab.sh stats");
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "lab.sh stats: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let find = |way: &str| {
            text.lines()
                .find(|l| l.contains(&format!(" {way}: forwarded ")))
                .and_then(LineStats::parse)
                .unwrap_or_else(|| panic!("no {way} line in: {text}"))
        };
        (find("a->b"), find("b->a"))
    }
}

impl Drop for Lab {
    fn drop(&mut self) {
        let _ = Std::new("bash")
            .arg(repo().join("lab/lab.sh"))
            .args(["down", &self.name])
            .status();
    }
}

/// The JSON on `out`'s stdout, once it succeeded.
pub fn json(out: &std::process::Output) -> Value {
    assert!(
        out.status.success(),
        "exit {:?}: {}",
        out.status.code(),
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("json")
}
