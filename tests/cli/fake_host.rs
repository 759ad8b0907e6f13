//! `--host` paths through the hidden `--fake-prober` (hyperfine's `--debug-mode`): advise,
//! check and apply measure a deterministic fake, so these run without root and without a lab.

use predicates::prelude::*;

use super::{json, linux_tree, setting, tcptune};

/// 150 ms at 500 Mbit/s (link speed and packet trains), and a path test that saw no loss and a
/// queue of one BDP (a clean path): BDP 9,375,000 bytes.
const PATH: &str = "rtt=150ms,rate=500mbit,loss=0";

#[test]
fn advise_host_takes_rtt_and_rate_from_the_fake_path() {
    let tree = linux_tree(&[]);
    let v = json(
        tcptune()
            .args(["--os", "linux", "--sysctl-dir"])
            .arg(tree.path())
            .args(["advise", "--host", "peer.example", "--fake-prober", PATH]),
    );
    assert_eq!(v["host"], "peer.example");
    assert_eq!(v["rtt_ms"], 150.0);
    assert_eq!(v["rtt_source"], "measured");
    assert_eq!(v["bandwidth_bps"], 500_000_000);
    assert_eq!(v["bandwidth_source"], "measured");
    assert_eq!(v["bdp_bytes"], 9_375_000);
    assert_eq!(v["hosts"][0]["measurement"]["link"]["interface"], "fake0");
    assert_eq!(v["hosts"][0]["measurement"]["rtt"]["sent"], 10);
    assert_eq!(setting(&v, "net.ipv4.tcp_rmem")["value"], "4096 131072 20643840");
}

#[test]
fn advise_host_with_unknown_speed_assumes_and_says_so() {
    let tree = linux_tree(&[]);
    let v = json(
        tcptune()
            .args(["--os", "linux", "--sysctl-dir"])
            .arg(tree.path())
            .args(["advise", "--host", "198.18.0.9", "--fake-prober", "rtt=50ms"]),
    );
    assert_eq!(v["bandwidth_source"], "assumed");
    assert_eq!(v["bandwidth_bps"], 1_000_000_000);
    // The table says ASSUMED where a person reads it.
    tcptune()
        .args(["--os", "linux", "--sysctl-dir"])
        .arg(tree.path())
        .args([
            "advise",
            "--host",
            "198.18.0.9",
            "--fake-prober",
            "rtt=50ms",
            "--format",
            "table",
        ])
        .assert()
        .success()
        .stdout(predicate::str::contains("1 Gbit/s (ASSUMED: not measured)"));
}

#[test]
fn an_unreachable_fake_host_exits_4_with_the_hint() {
    // Root (CI) may already send ICMP: its hint never says "run as root".
    // SAFETY: geteuid has no preconditions and cannot fail.
    let hint = if unsafe { libc::geteuid() } == 0 {
        "check the host is up and ICMP to it is not filtered, open a TCP port and pass --port, or give --rtt and --bandwidth"
    } else {
        "allow ICMP (sysctl net.ipv4.ping_group_range='0 2147483647' or run as root), open a TCP port and pass --port, or give --rtt and --bandwidth"
    };
    tcptune()
        .args(["--os", "linux", "advise", "--host", "198.18.0.9", "--fake-prober", "rtt=unreachable"])
        .assert()
        .code(4)
        .stdout("")
        .stderr(format!(
            "tcptune: no reply from 198.18.0.9 (198.18.0.9): 10 ICMP echo requests and 10 TCP connects to ports 443, 22, 80 timed out\nhint: {hint}\n"
        ));
    tcptune()
        .args([
            "--os",
            "linux",
            "advise",
            "--host",
            "nonexistent.invalid",
            "--fake-prober",
            PATH,
        ])
        .assert()
        .code(4);
}

#[test]
fn check_host_checks_the_buffers_against_the_fake_path() {
    let tree = linux_tree(&[]);
    let out = tcptune()
        .args(["--os", "linux", "--sysctl-dir"])
        .arg(tree.path())
        .args([
            "check",
            "--host",
            "peer.example",
            "--fake-prober",
            PATH,
            "--format",
            "json",
        ])
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(1), "{}", String::from_utf8_lossy(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(v["host"], "peer.example");
    let receive = v["findings"]
        .as_array()
        .expect("findings")
        .iter()
        .find(|f| f["id"] == "buffers:receive")
        .expect("a receive-buffer finding");
    assert_eq!(receive["status"], "fail");
    assert!(
        receive["message"]
            .as_str()
            .is_some_and(|m| m.contains("short of the 19.7 MiB")),
        "{receive}"
    );
}

#[test]
fn apply_host_dry_run_shows_the_fake_paths_advice() {
    let tree = linux_tree(&[]);
    let state = tempfile::tempdir().expect("tempdir");
    tcptune()
        .args(["--os", "linux", "--sysctl-dir"])
        .arg(tree.path())
        .arg("--state-dir")
        .arg(state.path())
        .args(["apply", "--host", "peer.example", "--fake-prober", PATH, "--dry-run"])
        .assert()
        .success()
        .stdout(predicate::str::contains(
            "net.ipv4.tcp_rmem: 4096 131072 6291456 \u{2192} 4096 131072 20643840",
        ));
}

#[test]
fn the_flag_is_hidden_and_checks_its_spec() {
    tcptune()
        .arg("--help")
        .assert()
        .success()
        .stdout(predicate::str::contains("fake-prober").not());
    tcptune()
        .args(["advise", "--help"])
        .assert()
        .success()
        .stdout(predicate::str::contains("fake-prober").not());
    tcptune()
        .args(["advise", "--host", "h", "--fake-prober", "rtt=150"])
        .assert()
        .code(2);
}
