//! CLI behaviour: assert_cmd against the built binary, with a fake /proc/sys tree (Linux),
//! a fake sysctl(8) (FreeBSD/macOS), and — as root — real network namespaces.

mod apply;
mod check;
mod contract;
mod diag;
mod docs;
mod fake_host;
mod fleet;
mod golden;
mod hostile;
mod hostile_peer;
mod lab;
#[path = "../support/lab.rs"]
mod lab_support;
mod labscript;
mod layers;
mod legible;
mod loose;
mod mesh;
mod netns;
mod route_trust;
mod scope;
mod ship;
mod ssh;
mod sysctld;
mod trust;
mod units;
mod watch;
mod widths;

use std::path::{Path, PathBuf};

use assert_cmd::Command;
use predicates::prelude::*;
use serde_json::Value;
use tempfile::TempDir;

fn tcptune() -> Command {
    let mut c = Command::cargo_bin("tcptune").expect("binary");
    c.env_remove("NO_COLOR");
    c
}

/// A copy of the tcptune binary in a directory any user can enter (the build tree may sit
/// under a 0700 home), for tests that run it as another user. The directory goes when the
/// TempDir drops. Copied by cp(1), not std::fs::copy: a write descriptor to the new binary
/// open in this process would leak into a child that another test thread forks meanwhile,
/// and exec of the copy would then fail with ETXTBSY ("Text file busy").
fn runnable_copy() -> (TempDir, PathBuf) {
    use std::os::unix::fs::PermissionsExt as _;
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).expect("chmod");
    let path = dir.path().join("tcptune");
    let ok = std::process::Command::new("cp")
        .arg(assert_cmd::cargo::cargo_bin("tcptune"))
        .arg(&path)
        .status()
        .expect("cp");
    assert!(ok.success(), "cp the binary");
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    (dir, path)
}

/// Write an executable script (mode 0755) without a write descriptor in this process, for
/// the reason [`runnable_copy`] gives: sh writes it, so exec of it cannot meet ETXTBSY.
fn write_script(path: &Path, text: &str) {
    use std::io::Write as _;
    let mut sh = std::process::Command::new("sh")
        .args(["-c", "cat > \"$1\" && chmod 0755 \"$1\"", "sh"])
        .arg(path)
        .stdin(std::process::Stdio::piped())
        .spawn()
        .expect("sh");
    sh.stdin
        .take()
        .expect("stdin")
        .write_all(text.as_bytes())
        .expect("write");
    assert!(sh.wait().expect("wait").success(), "write {}", path.display());
}

/// Every entry under `dir`, path → what it holds, to compare a tree before and after an
/// attack: a file's bytes, a symlink's target (not followed: a swapped link shows), the kind
/// of anything else (a FIFO is not read, which would hang). A `dir` that does not exist is an
/// empty tree.
fn tree_contents(dir: &Path) -> std::collections::BTreeMap<PathBuf, Vec<u8>> {
    let mut out = std::collections::BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let entries = match std::fs::read_dir(&d) {
            Ok(e) => e,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound && d == dir => continue,
            Err(e) => panic!("read_dir {}: {e}", d.display()),
        };
        for e in entries {
            let p = e.expect("entry").path();
            let m = std::fs::symlink_metadata(&p).expect("lstat");
            let held = if m.is_dir() {
                stack.push(p);
                continue;
            } else if m.file_type().is_symlink() {
                let mut t = b"-> ".to_vec();
                t.extend(
                    std::fs::read_link(&p)
                        .expect("readlink")
                        .into_os_string()
                        .into_encoded_bytes(),
                );
                t
            } else if m.is_file() {
                std::fs::read(&p).expect("read")
            } else {
                format!("<{:?}>", m.file_type()).into_bytes()
            };
            out.insert(p, held);
        }
    }
    out
}

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/cli/fixtures")
        .join(name)
}

/// Lines "key value" of a fixture, with `overrides` replacing or adding keys (None removes).
fn values(fixture_name: &str, overrides: &[(&str, Option<&str>)]) -> Vec<(String, String)> {
    let text = std::fs::read_to_string(fixture(fixture_name)).expect("fixture");
    let mut v: Vec<(String, String)> = text
        .lines()
        .filter_map(|l| l.split_once(' '))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    for (k, new) in overrides {
        v.retain(|(key, _)| key != k);
        if let Some(n) = new {
            v.push(((*k).to_string(), (*n).to_string()));
        }
    }
    v
}

/// A fake /proc/sys: net.ipv4.tcp_rmem → DIR/net/ipv4/tcp_rmem.
fn linux_tree(overrides: &[(&str, Option<&str>)]) -> TempDir {
    let dir = tempfile::tempdir().expect("tempdir");
    for (k, v) in values("linux-stock.txt", overrides) {
        let p = k.split('.').fold(dir.path().to_path_buf(), |p, c| p.join(c));
        std::fs::create_dir_all(p.parent().expect("parent")).expect("mkdir");
        std::fs::write(p, format!("{v}\n")).expect("write");
    }
    dir
}

/// A directory for the fake sysctl(8): one file per key.
fn bsd_tree(overrides: &[(&str, Option<&str>)]) -> TempDir {
    let dir = tempfile::tempdir().expect("tempdir");
    for (k, v) in values("freebsd-stock.txt", overrides) {
        std::fs::write(dir.path().join(k), format!("{v}\n")).expect("write");
    }
    dir
}

fn json(cmd: &mut Command) -> Value {
    let out = cmd.arg("--format").arg("json").output().expect("run");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).expect("json")
}

fn setting<'a>(v: &'a Value, key: &str) -> &'a Value {
    v["settings"]
        .as_array()
        .expect("settings")
        .iter()
        .find(|s| s["key"] == key)
        .unwrap_or_else(|| panic!("no setting {key} in {v:#}"))
}

fn has_setting(v: &Value, key: &str) -> bool {
    v["settings"]
        .as_array()
        .expect("settings")
        .iter()
        .any(|s| s["key"] == key)
}

// ---------------------------------------------------------------- calc

#[test]
fn calc_worked_examples() {
    // (rate, rtt, exact BDP bytes) — computed, not copied: the RHEL guide's printed 10G figure is wrong.
    for (rate, rtt, bdp) in [
        ("1gbit", "25ms", 3_125_000u64),
        ("100mbit", "150ms", 1_875_000),
        ("10gbit", "117ms", 146_250_000),
        ("500Mbit/s", "0.15s", 9_375_000),
    ] {
        let v = json(tcptune().args(["calc", "--bandwidth", rate, "--rtt", rtt]));
        assert_eq!(v["bdp_bytes"].as_u64(), Some(bdp), "{rate} {rtt}: {v}");
        let bps = v["bandwidth_bps"].as_f64().expect("bps");
        let ms = v["rtt_ms"].as_f64().expect("ms");
        assert!((bps / 8.0 * ms / 1000.0 - bdp as f64).abs() < 1e-6);
    }
}

#[test]
fn calc_window_ceiling_and_mathis() {
    let v = json(tcptune().args(["calc", "--window", "64KiB", "--rtt", "150ms"]));
    let t = v["max_throughput_bps"].as_f64().expect("max_throughput_bps");
    assert!((t - 65536.0 * 8.0 / 0.150).abs() < 1e-3, "{t}");
    assert!(v["bandwidth_bps"].is_null());

    let v = json(tcptune().args(["calc", "--bandwidth", "1gbit", "--window", "4MiB"]));
    let m = v["max_rtt_ms"].as_f64().expect("max_rtt_ms");
    assert!((m - 4_194_304.0 * 8.0 / 1e9 * 1000.0).abs() < 1e-6, "{m}");

    let v = json(tcptune().args(["calc", "--rtt", "100ms", "--loss", "0.01", "--mss", "1448"]));
    let m = v["mathis_bps"].as_f64().expect("mathis_bps");
    assert!((m - 1448.0 * 8.0 / 0.1 * 1.5f64.sqrt() / 0.01).abs() < 1.0, "{m}");
}

#[test]
fn calc_table_shows_exact_bytes() {
    tcptune()
        .args(["calc", "--bandwidth", "1gbit", "--rtt", "25ms"])
        .assert()
        .success()
        .stdout(predicate::str::contains("3125000 bytes (2.98 MiB)"));
}

#[test]
fn bad_units_are_one_line_exit_2() {
    for args in [
        &["calc", "--bandwidth", "500", "--rtt", "25ms"][..],
        &["calc", "--bandwidth", "500mbit", "--rtt", "25"],
        &["calc", "--bandwidth", "100MB/s", "--rtt", "25ms"],
        &["calc", "--window", "64 apples", "--rtt", "25ms"],
        &["advise", "--rtt", "-5ms", "--bandwidth", "1gbit"],
    ] {
        let out = tcptune().args(args).output().expect("run");
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(err.trim_end().lines().count(), 1, "{args:?}: {err}");
        assert!(err.contains("expected") || err.contains("bits"), "{args:?}: {err}");
        assert!(out.stdout.is_empty());
    }
    let out = tcptune()
        .args(["calc", "--bandwidth", "500", "--rtt", "25ms"])
        .output()
        .expect("run");
    let err = String::from_utf8_lossy(&out.stderr);
    for form in ["500mbit", "1gbit", "100m"] {
        assert!(err.contains(form), "{err}");
    }
}

#[test]
fn calc_needs_two_quantities() {
    tcptune()
        .args(["calc", "--rtt", "25ms"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("two of"));
}

#[test]
fn no_arguments_prints_a_guide() {
    tcptune()
        .assert()
        .success()
        .stdout(predicate::str::contains("tcptune advise").and(predicate::str::contains("sysctl.d")));
}

#[test]
fn broken_pipe_exits_zero() {
    use std::io::Read as _;
    let bin = assert_cmd::cargo::cargo_bin("tcptune");
    let dir = linux_tree(&[]);
    let mut child = std::process::Command::new(bin)
        .args([
            "advise",
            "--rtt",
            "150ms",
            "--bandwidth",
            "500mbit",
            "--format",
            "table",
            "--sysctl-dir",
        ])
        .arg(dir.path())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("spawn");
    drop(child.stdout.take());
    let status = child.wait().expect("wait");
    let mut err = String::new();
    child
        .stderr
        .take()
        .expect("stderr")
        .read_to_string(&mut err)
        .expect("read");
    assert_eq!(status.code(), Some(0), "{err}");
    assert!(err.is_empty(), "{err}");
}

// ---------------------------------------------------------------- advise, Linux

/// Issue 47, 4: `bdp_bytes` is a whole number of bytes (rounded up) in advise's JSON, also
/// where rate × RTT is not (1 Mbit/s × 1.001 ms = 125.125 bytes), for the path and each host.
#[test]
fn advise_bdp_bytes_is_an_integer() {
    let dir = linux_tree(&[]);
    for args in [
        &["--rtt", "1.001ms", "--bandwidth", "1mbit"][..],
        &[
            "--host",
            "198.18.0.9",
            "--fake-prober",
            "rtt=1.001ms,speed=1mbit",
            "--bandwidth",
            "1mbit",
        ],
    ] {
        let v = json(tcptune().arg("advise").args(args).arg("--sysctl-dir").arg(dir.path()));
        assert_eq!(v["bdp_bytes"].as_u64(), Some(126), "{args:?}: {}", v["bdp_bytes"]);
        for h in v["hosts"].as_array().expect("hosts") {
            assert_eq!(h["bdp_bytes"].as_u64(), Some(126), "{h}");
        }
    }
}

#[test]
fn advise_linux_against_fake_tree() {
    let dir = linux_tree(&[]);
    let v = json(
        tcptune()
            .args([
                "advise",
                "--clean-path",
                "--rtt",
                "150ms",
                "--bandwidth",
                "500mbit",
                "--sysctl-dir",
            ])
            .arg(dir.path()),
    );
    assert_eq!(v["rtt_ms"].as_f64(), Some(150.0));
    assert_eq!(v["bandwidth_bps"].as_u64(), Some(500_000_000));
    assert_eq!(v["bdp_bytes"].as_u64(), Some(9_375_000));
    let rmem = setting(&v, "net.ipv4.tcp_rmem");
    assert_eq!(rmem["current"], "4096 131072 6291456");
    assert_eq!(rmem["value"], "4096 131072 20643840");
    assert!(rmem["reason"].as_str().expect("reason").contains("BDP"));
    let max: u64 = rmem["value"]
        .as_str()
        .expect("v")
        .split(' ')
        .nth(2)
        .expect("f")
        .parse()
        .expect("n");
    assert!((2 * 9_375_000..=25 * 9_375_000 / 10).contains(&max), "{max}");
    // The sender gets 2.5 × BDP, rounded down to 64 KiB.
    assert_eq!(setting(&v, "net.ipv4.tcp_wmem")["value"], "4096 16384 23396352");
    assert_eq!(setting(&v, "net.core.rmem_max")["value"], "20643840");
    assert_eq!(setting(&v, "net.ipv4.tcp_slow_start_after_idle")["value"], "0");
    // A loss-free path: cubic, which the fake tree already runs.
    let cc = setting(&v, "net.ipv4.tcp_congestion_control");
    assert_eq!(cc["value"], "cubic");
    assert_eq!(cc["action"]["kind"], "keep", "{cc:#}");
    assert!(
        v["decision"]["why_class"]
            .as_str()
            .expect("r")
            .starts_with("--clean-path given"),
        "{:#}",
        v["decision"]
    );
    assert!(!has_setting(&v, "net.core.default_qdisc"));
    // < 10 Gbit/s: the input backlog is fine.
    assert!(!has_setting(&v, "net.core.netdev_max_backlog"));
}

#[test]
fn advise_switches_a_bbr_host_to_cubic_for_a_loss_free_path() {
    let advise = |dir: &TempDir| {
        json(
            tcptune()
                .args([
                    "advise",
                    "--clean-path",
                    "--rtt",
                    "150ms",
                    "--bandwidth",
                    "500mbit",
                    "--sysctl-dir",
                ])
                .arg(dir.path()),
        )
    };
    let v = advise(&linux_tree(&[("net.ipv4.tcp_congestion_control", Some("bbr"))]));
    let cc = setting(&v, "net.ipv4.tcp_congestion_control");
    assert_eq!(
        (&cc["value"], &cc["current"], &cc["action"]["kind"]),
        (&"cubic".into(), &"bbr".into(), &"set".into()),
        "{cc:#}"
    );
    // A kernel without cubic: nothing is said about the congestion control.
    let v = advise(&linux_tree(&[
        ("net.ipv4.tcp_congestion_control", Some("bbr")),
        ("net.ipv4.tcp_available_congestion_control", Some("reno bbr")),
    ]));
    assert!(!has_setting(&v, "net.ipv4.tcp_congestion_control"));
}

#[test]
fn advise_loss_recovery_sizes_both_buffers_at_five_bdp() {
    let dir = linux_tree(&[]);
    let v = json(
        tcptune()
            .args([
                "advise",
                "--rtt",
                "150ms",
                "--bandwidth",
                "500mbit",
                "--loss-recovery",
                "--sysctl-dir",
            ])
            .arg(dir.path()),
    );
    // 5 × 9,375,000 = 46,875,000, rounded up to 64 KiB: 46,923,776.
    for key in ["net.ipv4.tcp_rmem", "net.ipv4.tcp_wmem"] {
        let s = setting(&v, key);
        assert!(s["value"].as_str().expect("v").ends_with(" 46923776"), "{s:#}");
        assert!(s["reason"].as_str().expect("r").contains("loss recovery"), "{s:#}");
    }
    assert_eq!(setting(&v, "net.core.rmem_max")["value"], "46923776");
    assert_eq!(v["sizing"]["loss_recovery"], true);
    // A lossy path: bbr (offered by the fake tree), switched from the running cubic; fq is
    // not known to be there.
    let cc = setting(&v, "net.ipv4.tcp_congestion_control");
    assert_eq!(
        (&cc["value"], &cc["action"]["kind"]),
        (&"bbr".into(), &"set".into()),
        "{cc:#}"
    );
    assert!(!has_setting(&v, "net.core.default_qdisc"));
    // One entry per key: the loss-free reasons are not rendered as well.
    let keys: Vec<&str> = v["settings"]
        .as_array()
        .expect("settings")
        .iter()
        .filter_map(|s| s["key"].as_str())
        .filter(|k| *k == "net.ipv4.tcp_rmem")
        .collect();
    assert_eq!(keys.len(), 1);
    // FreeBSD: maxsockbuf covers 5 × BDP (× 2304 / 2048).
    let v = json(tcptune().args([
        "advise",
        "--os",
        "freebsd",
        "--rtt",
        "150ms",
        "--bandwidth",
        "500mbit",
        "--loss-recovery",
    ]));
    assert_eq!(setting(&v, "net.inet.tcp.recvbuf_max")["value"], "46923776");
    assert_eq!(setting(&v, "kern.ipc.maxsockbuf")["value"], "52789248");
}

#[test]
fn advise_never_lowers_a_running_value() {
    let dir = linux_tree(&[
        ("net.ipv4.tcp_rmem", Some("8192 262144 67108864")),
        ("net.ipv4.tcp_wmem", Some("4096 65536 4194304")),
    ]);
    let run = |extra: &[&str]| {
        json(
            tcptune()
                .args([
                    "advise",
                    "--clean-path",
                    "--rtt",
                    "150ms",
                    "--bandwidth",
                    "500mbit",
                    "--sysctl-dir",
                ])
                .arg(dir.path())
                .args(extra),
        )
    };
    let v = run(&[]);
    assert_eq!(setting(&v, "net.ipv4.tcp_rmem")["value"], "8192 262144 67108864");
    assert_eq!(setting(&v, "net.ipv4.tcp_rmem")["action"]["kind"], "keep");
    assert_eq!(setting(&v, "net.ipv4.tcp_wmem")["value"], "4096 65536 23396352");
    let v = run(&["--allow-lower"]);
    assert_eq!(setting(&v, "net.ipv4.tcp_rmem")["value"], "4096 131072 20643840");
}

/// A slow path the stock buffers cover: no buffer change. Nothing measured its loss, and 1 %
/// would hold CUBIC to about 12 segments of its 172, so BBR is the one change; on a LAN-sized
/// path (1 ms: 4 segments) nothing changes at all.
#[test]
fn advise_slow_path_recommends_no_buffer_change() {
    let dir = linux_tree(&[]);
    let out = tcptune()
        .args([
            "advise",
            "--rtt",
            "40ms",
            "--bandwidth",
            "50mbit",
            "--format",
            "sysctl",
            "--sysctl-dir",
        ])
        .arg(dir.path())
        .output()
        .expect("run");
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).expect("utf8");
    assert!(text.contains("no buffer change needed"), "{text}");
    let set: Vec<&str> = text
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .collect();
    assert_eq!(set, ["net.ipv4.tcp_congestion_control = bbr"], "{text}");
    let v = json(
        tcptune()
            .args(["advise", "--rtt", "40ms", "--bandwidth", "50mbit", "--sysctl-dir"])
            .arg(dir.path()),
    );
    assert_eq!(v["changes"], 1);
    assert_eq!(v["bdp_bytes"].as_u64(), Some(250_000));
    let v = json(
        tcptune()
            .args(["advise", "--rtt", "1ms", "--bandwidth", "50mbit", "--sysctl-dir"])
            .arg(dir.path()),
    );
    assert_eq!(v["changes"], 0);
}

#[test]
fn advise_sysctl_format_is_a_valid_sysctl_d_file() {
    let dir = linux_tree(&[("net.core.default_qdisc", None)]);
    let out = tcptune()
        .args([
            "advise",
            "--rtt",
            "600ms",
            "--bandwidth",
            "40gbit",
            "--format",
            "sysctl",
            "--sysctl-dir",
        ])
        .arg(dir.path())
        .output()
        .expect("run");
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).expect("utf8");
    assert!(text.starts_with("# tcptune "), "{text}");
    assert!(text.contains("600 ms") && text.contains("40 Gbit/s"));
    let mut keys = 0;
    for line in text.lines() {
        if line.starts_with('#') || line.is_empty() {
            continue;
        }
        let (k, v) = line
            .split_once(" = ")
            .unwrap_or_else(|| panic!("not key = value: {line}"));
        assert!(k.starts_with("net."), "{line}");
        assert!(!v.is_empty() && !v.contains('#'), "{line}");
        keys += 1;
    }
    assert!(keys >= 4, "{text}");
    // 40 Gbit/s × 600 ms needs more than Linux's int: capped, and said so.
    assert!(text.contains("net.ipv4.tcp_rmem = 4096 131072 2147483647"), "{text}");
    assert!(text.contains("# warning:"), "{text}");
    assert!(text.contains("net.core.netdev_max_backlog = 120000"), "{text}");
}

#[test]
fn advise_absent_key_is_commented_not_emitted() {
    let dir = linux_tree(&[("net.core.rmem_max", None)]);
    let out = tcptune()
        .args([
            "advise",
            "--clean-path",
            "--rtt",
            "150ms",
            "--bandwidth",
            "500mbit",
            "--format",
            "sysctl",
            "--sysctl-dir",
        ])
        .arg(dir.path())
        .output()
        .expect("run");
    let text = String::from_utf8(out.stdout).expect("utf8");
    assert!(
        text.contains("# SO_RCVBUF cap → 19.7 MiB, not applied (not in this kernel or network namespace)\n# net.core.rmem_max = 20643840\n"),
        "{text}"
    );
    assert!(!text.lines().any(|l| l.starts_with("net.core.rmem_max")), "{text}");
}

/// Issue 30, finding 1: with no running value to raise from, a short path (6 × BDP = 64 KiB,
/// below the profile's 131072 default field) rendered "4096 131072 65536" and exited 2
/// blaming the shipped profile. The triple is kept valid, and a note names the key.
#[test]
fn advise_with_no_running_values_on_a_short_path_renders_valid_triples() {
    let empty = tempfile::tempdir().expect("tempdir");
    let out = tcptune()
        .args([
            "--os",
            "linux",
            "advise",
            "--rtt",
            "1ms",
            "--bandwidth",
            "50mbit",
            "--format",
            "json",
        ])
        .arg("--sysctl-dir")
        .arg(empty.path())
        .output()
        .expect("run");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v: Value = serde_json::from_slice(&out.stdout).expect("json");
    for key in ["net.ipv4.tcp_rmem", "net.ipv4.tcp_wmem"] {
        let value = setting(&v, key)["value"].as_str().expect("value").to_string();
        let f: Vec<u64> = value.split_whitespace().map(|x| x.parse().expect("number")).collect();
        assert!(f.windows(2).all(|w| w[0] <= w[1]), "{key} = {value}");
    }
    assert_eq!(setting(&v, "net.ipv4.tcp_rmem")["value"], "4096 65536 65536");
    let notes = v["notes"].to_string();
    assert!(
        notes.contains("this host: net.ipv4.tcp_rmem could not be read; default clamped to the max, 64 KiB"),
        "{notes}"
    );
    // Every line of the sysctl file is one sysctl takes; the same with --allow-lower here.
    for extra in [&[][..], &["--allow-lower"]] {
        let tree = linux_tree(&[]);
        let out = tcptune()
            .args([
                "--os",
                "linux",
                "advise",
                "--rtt",
                "1ms",
                "--bandwidth",
                "50mbit",
                "--format",
                "sysctl",
            ])
            .args(extra)
            .arg("--sysctl-dir")
            .arg(tree.path())
            .output()
            .expect("run");
        assert!(
            out.status.success(),
            "{extra:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

#[test]
fn advise_shell_and_table_formats() {
    let dir = linux_tree(&[]);
    tcptune()
        .args([
            "advise",
            "--clean-path",
            "--rtt",
            "150ms",
            "--bandwidth",
            "500mbit",
            "--format",
            "shell",
            "--sysctl-dir",
        ])
        .arg(dir.path())
        .assert()
        .success()
        .stdout(predicate::str::contains(
            "sysctl -w 'net.ipv4.tcp_rmem=4096 131072 20643840'",
        ));
    tcptune()
        .args([
            "advise",
            "--clean-path",
            "--rtt",
            "150ms",
            "--bandwidth",
            "500mbit",
            "--format",
            "table",
            "--sysctl-dir",
        ])
        .arg(dir.path())
        .assert()
        .success()
        .stdout(
            predicate::str::contains("now → advised")
                .and(predicate::str::contains("6 MiB → 19.7 MiB, 3.28 ×"))
                .and(predicate::str::contains("BDP 8.94 MiB")),
        );
}

#[test]
fn advise_profile_from_a_file_and_its_errors() {
    let dir = tempfile::tempdir().expect("tempdir");
    let good = dir.path().join("mine.toml");
    std::fs::write(
        &good,
        "name = \"mine\"\nos = \"linux\"\ndescription = \"only rmem\"\n\
         [caps]\n\"net.ipv4.tcp_rmem\" = \"buffer\"\n[stock]\n\"net.ipv4.tcp_rmem\" = \"4096 131072 6291456\"\n\
         [[setting]]\nkey = \"net.ipv4.tcp_rmem\"\nvalue = \"4096 131072 {round_up(bdp * 3, 1048576)}\"\nreason = \"3 x BDP\"\n",
    )
    .expect("write");
    let v = json(
        tcptune()
            .args([
                "advise",
                "--os",
                "linux",
                "--rtt",
                "150ms",
                "--bandwidth",
                "500mbit",
                "--profile",
            ])
            .arg(&good)
            .arg("--sysctl-dir")
            .arg(linux_tree(&[]).path()),
    );
    assert_eq!(v["settings"].as_array().expect("settings").len(), 1);
    assert_eq!(setting(&v, "net.ipv4.tcp_rmem")["value"], "4096 131072 28311552");

    let bad = dir.path().join("bad.toml");
    std::fs::write(
        &bad,
        "name = \"bad\"\nos = \"linux\"\ndescription = \"x\"\nbuffer_factor = 3\n",
    )
    .expect("write");
    let out = tcptune()
        .args(["advise", "--rtt", "150ms", "--bandwidth", "500mbit", "--profile"])
        .arg(&bad)
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("bad.toml") && err.contains("line 4") && err.contains("buffer_factor"),
        "{err}"
    );
    tcptune()
        .args([
            "advise",
            "--rtt",
            "150ms",
            "--bandwidth",
            "500mbit",
            "--profile",
            "solaris",
        ])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("unknown profile"));
}

// ---------------------------------------------------------------- advise, FreeBSD / macOS

#[test]
fn advise_freebsd_with_fake_sysctl() {
    let dir = bsd_tree(&[]);
    let v = json(
        tcptune()
            .env("FAKE_SYSCTL_DIR", dir.path())
            .args([
                "advise",
                "--clean-path",
                "--os",
                "freebsd",
                "--rtt",
                "150ms",
                "--bandwidth",
                "500mbit",
                "--sysctl-cmd",
            ])
            .arg(fixture("fake-sysctl")),
    );
    let recv = setting(&v, "net.inet.tcp.recvbuf_max");
    assert_eq!(recv["current"], "2097152");
    assert_eq!(recv["value"], "20643840");
    // maxsockbuf must be 2304/2048 of the buffer so sb_max_adj reaches it.
    let msb: u64 = setting(&v, "kern.ipc.maxsockbuf")["value"]
        .as_str()
        .expect("v")
        .parse()
        .expect("n");
    assert_eq!(msb, 23_396_352 * 2304 / 2048);
    assert_eq!(setting(&v, "net.inet.tcp.sendbuf_max")["value"], "23396352");
    assert_eq!(setting(&v, "net.inet.tcp.cc.algorithm")["value"], "htcp");
    assert_eq!(setting(&v, "net.inet.tcp.rfc1323")["action"]["kind"], "keep");

    let out = tcptune()
        .env("FAKE_SYSCTL_DIR", dir.path())
        .args([
            "advise",
            "--clean-path",
            "--os",
            "freebsd",
            "--rtt",
            "150ms",
            "--bandwidth",
            "500mbit",
            "--format",
            "sysctl",
            "--sysctl-cmd",
        ])
        .arg(fixture("fake-sysctl"))
        .output()
        .expect("run");
    let text = String::from_utf8(out.stdout).expect("utf8");
    assert!(text.contains("\nnet.inet.tcp.recvbuf_max=20643840\n"), "{text}");
    assert!(text.contains("/boot/loader.conf: cc_htcp_load=\"YES\""), "{text}");
    for line in text.lines().filter(|l| !l.starts_with('#') && !l.is_empty()) {
        let (k, _) = line.split_once('=').expect("key=value");
        assert!(k.starts_with("kern.ipc.") || k.starts_with("net.inet."), "{line}");
    }
}

/// With nothing measured (a given path, no TCP test), the advice is for the class that does
/// no harm on either kind of path: BBR and 6 × BDP, and it says how to measure.
#[test]
fn advise_without_evidence_sizes_for_the_best_worst_case() {
    let dir = linux_tree(&[]);
    let v = json(
        tcptune()
            .args(["advise", "--rtt", "150ms", "--bandwidth", "500mbit", "--sysctl-dir"])
            .arg(dir.path()),
    );
    assert_eq!(v["decision"]["class"], "unmeasured");
    assert_eq!(setting(&v, "net.ipv4.tcp_rmem")["value"], "4096 131072 56295424");
    assert_eq!(setting(&v, "net.ipv4.tcp_wmem")["value"], "4096 16384 56295424");
    let cc = setting(&v, "net.ipv4.tcp_congestion_control");
    assert_eq!(cc["value"], "bbr", "{cc:#}");
    assert!(
        v["decision"]["why_class"]
            .as_str()
            .expect("r")
            .contains("were not measured (no TCP test) → bbr and 6 × BDP"),
        "{:#}",
        v["decision"]
    );
    assert_eq!(setting(&v, "net.ipv4.tcp_notsent_lowat")["value"], "625000");
    let notes = v["notes"].as_array().expect("notes");
    assert!(
        notes.iter().any(|n| n
            .as_str()
            .is_some_and(|n| n.contains("run `tcptune serve` on the far end"))),
        "{notes:#?}"
    );
}

#[test]
fn advise_for_another_os_has_null_current() {
    let v = json(tcptune().args([
        "advise",
        "--clean-path",
        "--os",
        "macos",
        "--rtt",
        "75ms",
        "--bandwidth",
        "1gbit",
    ]));
    assert!(v["current_from"].is_null());
    let s = setting(&v, "net.inet.tcp.autorcvbufmax");
    assert!(s["current"].is_null());
    assert_eq!(s["value"], "20643840");
    assert_eq!(v["bdp_bytes"].as_u64(), Some(9_375_000));
}

/// The scp ceiling: OpenSSH's own 2 MiB window caps one transfer at 2 MiB / RTT, which no
/// kernel setting raises (Tokyo–Singapore, 74.3 ms: 225.8 Mbit/s of a 1 Gbit/s path).
#[test]
fn advise_names_the_openssh_ceiling_next_to_the_path() {
    let dir = linux_tree(&[]);
    let run = |rtt: &str, rate: &str, format: &str| {
        tcptune()
            .args([
                "advise",
                "--rtt",
                rtt,
                "--bandwidth",
                rate,
                "--format",
                format,
                "--sysctl-dir",
            ])
            .arg(dir.path())
            .output()
            .expect("run")
    };
    let v: Value = serde_json::from_slice(&run("74.3ms", "1gbit", "json").stdout).expect("json");
    let c = &v["app_ceilings"][0];
    assert_eq!(c["tool"], "OpenSSH (scp, sftp, rsync -e ssh)");
    assert_eq!(c["window_bytes"], 2_097_152);
    assert_eq!(c["ceiling_bps"], 225_803_715);
    assert_eq!(c["limits_path"], true);
    let notes = v["notes"].to_string();
    assert!(notes.contains("tops out at 225.8 Mbit/s on this path"), "{notes}");
    let file = String::from_utf8(run("74.3ms", "1gbit", "sysctl").stdout).expect("utf8");
    assert!(
        file.lines()
            .any(|l| l.starts_with("# note: scp, sftp and rsync -e ssh top out at 225.8 Mbit/s here")),
        "{file}"
    );
    // A slow path is not limited by it: the number is there, the note is not.
    let v: Value = serde_json::from_slice(&run("40ms", "50mbit", "json").stdout).expect("json");
    assert_eq!(v["app_ceilings"][0]["limits_path"], false);
    assert!(!v["notes"].to_string().contains("OpenSSH"), "{}", v["notes"]);
}

/// inspect names the process behind each flow (socket inode → /proc/PID/fd): here both ends of a
/// loopback connection this test holds, so the owner is this very process. No root needed.
#[test]
fn inspect_names_the_process_that_owns_a_flow() {
    use std::io::{Read as _, Write as _};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("addr").port();
    let mut client = std::net::TcpStream::connect(("127.0.0.1", port)).expect("connect");
    let (mut server, _) = listener.accept().expect("accept");
    client.write_all(&[7u8; 100_000]).expect("write");
    let mut got = vec![0u8; 100_000];
    server.read_exact(&mut got).expect("read");
    let out = tcptune()
        .args(["inspect", "--port", &port.to_string(), "--format", "json"])
        .output()
        .expect("run");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v: Value = serde_json::from_slice(&out.stdout).expect("json");
    let flows = v["flows"].as_array().expect("flows");
    assert_eq!(flows.len(), 2, "both ends of the connection: {v}");
    let me = std::fs::read_to_string("/proc/self/comm").expect("comm");
    for f in flows {
        assert_eq!(f["process"]["pid"], std::process::id(), "{f}");
        assert_eq!(f["process"]["name"], me.trim(), "{f}");
    }
}
