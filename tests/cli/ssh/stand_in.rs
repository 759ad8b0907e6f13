//! `advise --ssh` against a stand-in `ssh` (no root, no sshd): `-G` names 127.0.0.1, and a
//! session runs a script of the test's in place of the far end: the real far-end script (the
//! remote command tcptune sent, `$remote`) with programs of the test's on its PATH, or the
//! script's tagged lines (src/remote/script.rs) as a broken or hostile far end would say them.
//! Issue 30's findings, one test each.

use std::path::PathBuf;
use std::process::Output;
use std::time::{Duration, Instant};

use assert_cmd::cargo::cargo_bin;
use serde_json::Value;
use tempfile::TempDir;

use crate::{linux_tree, tcptune, write_script};

/// What a stand-in far end's script may call: `say` (a line each argument), `facts` (the
/// header, this machine's uname, uid 0), `hold` (wait for the session's end, then `end 0`).
const PRELUDE: &str = "say() { for l; do printf '%s\\n' \"$l\"; done; }\n\
facts() { say 'tcptune-far 1' \"uname $(uname -s) $(uname -m)\" 'uid 0'; }\n\
hold() { cat >/dev/null; say 'end 0'; }\n";

/// A short path: 6 × BDP is 64 KiB, below the profile's 131072 default field.
const SHORT: [&str; 4] = ["--rtt", "1ms", "--bandwidth", "50mbit"];
/// A long path: no triple is in doubt.
const LONG: [&str; 4] = ["--rtt", "150ms", "--bandwidth", "500mbit"];

/// The stand-in `ssh` and this host's sysctl tree.
struct StandIn {
    dir: TempDir,
    tree: TempDir,
}

impl StandIn {
    /// A session runs `far` (sh, after [`PRELUDE`]); `ssh -G` prints a host name.
    fn new(far: &str) -> Self {
        Self::resolving(far, "echo hostname 127.0.0.1")
    }

    /// The same, with `resolve` (sh) run for `ssh -G`.
    fn resolving(far: &str, resolve: &str) -> Self {
        let dir = tempfile::tempdir().expect("tempdir");
        write_script(
            &dir.path().join("ssh"),
            &format!(
                "#!/bin/sh\n{PRELUDE}dir={}\nfor a; do remote=$a; done\n\
                 case \" $* \" in *\" -G \"*) {resolve}; exit 0;; esac\n{far}\n",
                dir.path().display()
            ),
        );
        Self {
            dir,
            tree: linux_tree(&[]),
        }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// `tcptune --os linux --sysctl-dir TREE advise --ssh here --ssh-command STAND-IN ARGS`,
    /// and how long it took.
    fn advise(&self, args: &[&str]) -> (Output, Duration) {
        let t = Instant::now();
        let out = tcptune()
            .args(["--os", "linux", "--sysctl-dir"])
            .arg(self.tree.path())
            .args(["advise", "--ssh", "here", "--ssh-command"])
            .arg(self.path("ssh"))
            .args(args)
            .output()
            .expect("run");
        (out, t.elapsed())
    }
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn json(out: &Output) -> Value {
    assert!(out.status.success(), "exit {:?}: {}", out.status.code(), stderr(out));
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("not JSON ({e}): {}", stderr(out)))
}

/// A far end's fault: exit 4, nothing on stdout, one line of error (and at most a hint)
/// containing `says`.
fn assert_fault(out: &Output, says: &str) {
    let err = stderr(out);
    assert_eq!(out.status.code(), Some(4), "{err}");
    assert!(out.stdout.is_empty(), "{}", String::from_utf8_lossy(&out.stdout));
    let lines: Vec<&str> = err
        .lines()
        .filter(|l| !l.starts_with("ssh here (") && !super::plan_line(l))
        .collect();
    assert!(lines[0].starts_with("tcptune: ") && lines[0].contains(says), "{err}");
    assert!(
        lines.len() == 1 || (lines.len() == 2 && lines[1].starts_with("hint: ")),
        "{err}"
    );
}

fn setting<'a>(advice: &'a Value, key: &str) -> &'a Value {
    advice["settings"]
        .as_array()
        .and_then(|s| s.iter().find(|x| x["key"] == key))
        .unwrap_or_else(|| panic!("no {key} in {advice:#}"))
}

fn notes(advice: &Value) -> Vec<String> {
    advice["notes"]
        .as_array()
        .map(|n| n.iter().filter_map(|x| x.as_str().map(String::from)).collect())
        .unwrap_or_default()
}

/// Whether a value's fields do not decrease.
fn ordered(v: &str) -> bool {
    let f: Vec<u64> = v.split_whitespace().map(|x| x.parse().expect("a number")).collect();
    f.len() == 3 && f.windows(2).all(|w| w[0] <= w[1])
}

/// A TCP port on 127.0.0.1 that nothing listens on (bound, then closed).
fn closed_port() -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    l.local_addr().expect("addr").port()
}

/// Finding 1: a far end whose tcp_rmem is missing, unreadable or odd made `advise --ssh`
/// exit 2 blaming the shipped profile ("fields must not decrease ... 4096 131072 65536"),
/// this host's advice (`--side near`) with it. Now each end's triple stays valid, the far
/// end's note names it and the key, and this host's advice is what it is without --ssh.
#[test]
fn missing_or_odd_running_values_at_the_far_end_never_abort_the_advice() {
    let stock = "4096 131072 6291456";
    let clamped = "the far end here: net.ipv4.tcp_rmem could not be read; default clamped to the max, 64 KiB";
    let stood_in = "the far end here: net.ipv4.tcp_rmem could not be read; its stock value stands in";
    for (rmem, says) in [
        // Not reported at all, or said to be absent.
        ("", clamped),
        ("say 'key net/ipv4/tcp_rmem absent'", clamped),
        ("say 'key net/ipv4/tcp_rmem unreadable'", stood_in),
        (
            "say 'key net/ipv4/tcp_rmem -rw-r--r--' '= 4096 131072 4294967296'",
            stood_in,
        ),
        (
            "say 'key net/ipv4/tcp_rmem -rw-r--r--' '= 4096 99999999 6291456'",
            "the far end here: net.ipv4.tcp_rmem: default clamped to the max, 6 MiB",
        ),
    ] {
        let far = StandIn::new(&format!("facts\n{rmem}\nsay 'peer none'\nhold"));
        let alone = tcptune()
            .args(["--os", "linux", "--sysctl-dir"])
            .arg(far.tree.path())
            .args(["advise", "--format", "json"])
            .args(SHORT)
            .output()
            .expect("run");
        let alone = json(&alone);
        let (out, _) = far.advise(&[&SHORT[..], &["--format", "json"]].concat());
        let v = json(&out);
        let far_end = &v["far_end"];
        let rmem_far = setting(far_end, "net.ipv4.tcp_rmem");
        let value = rmem_far["value"].as_str().expect("value");
        assert!(ordered(value), "{rmem:?}: {value}");
        if says == stood_in {
            assert_eq!(value, stock, "{rmem:?}");
        }
        assert!(
            notes(far_end).iter().any(|n| n == says),
            "{rmem:?}: {says:?} not in {:#?}",
            notes(far_end)
        );
        // This host's advice is its own: the same as without --ssh.
        assert_eq!(v["settings"], alone["settings"], "{rmem:?}");
        assert!(
            !notes(&v).iter().any(|n| n.contains("could not be read")),
            "{rmem:?}: {:#?}",
            notes(&v)
        );
        for side in ["near", "far"] {
            let (out, _) = far.advise(&[&SHORT[..], &["--format", "sysctl", "--side", side]].concat());
            assert!(out.status.success(), "{rmem:?} --side {side}: {}", stderr(&out));
            let text = String::from_utf8_lossy(&out.stdout);
            for l in text.lines().filter(|l| l.starts_with("net.ipv4.tcp_rmem")) {
                assert!(ordered(l.split(" = ").nth(1).expect("value")), "{l}");
            }
        }
    }
}

/// Finding 4: a far end's value is read by its key's type. tcp_rmem sent as its three
/// numbers and a second line `net.ipv4.ip_forward = 1` showed in the table's "current"
/// column and in JSON; it is no value of tcp_rmem, so it is read as unreadable.
#[test]
fn a_far_end_value_not_of_its_keys_kind_is_unreadable_and_never_shown() {
    let far = StandIn::new(
        "facts\nsay 'key net/ipv4/tcp_rmem -rw-r--r--' '= 4096 131072 6291456' '= net.ipv4.ip_forward = 1' \
         'key net/core/rmem_max -rw-r--r--' '= 212992 7' 'key net/ipv4/tcp_wmem -rw-r--r--' '= 4096 16384 4194304'\n\
         say 'peer none'\nhold",
    );
    let (out, _) = far.advise(&[&LONG[..], &["--format", "json"]].concat());
    let v = json(&out);
    let far_end = &v["far_end"];
    for key in ["net.ipv4.tcp_rmem", "net.core.rmem_max"] {
        let s = setting(far_end, key);
        assert!(s["current"].is_null(), "{key}: {s:#}");
        assert_eq!(s["action"]["kind"], "unavailable", "{key}: {s:#}");
        assert!(
            s["action"]["why"]
                .as_str()
                .is_some_and(|w| w.contains("no value of its kind")),
            "{key}: {s:#}"
        );
    }
    assert_eq!(setting(far_end, "net.ipv4.tcp_wmem")["current"], "4096 16384 4194304");
    assert!(!String::from_utf8_lossy(&out.stdout).contains("ip_forward"));
    let (out, _) = far.advise(&[&LONG[..], &["--format", "table"]].concat());
    assert!(out.status.success(), "{}", stderr(&out));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("Far end here") && !text.contains("ip_forward"), "{text}");
}

/// Finding 2: the far end's `tcptune peer` lived its fixed 180 s whatever the near end
/// computed: it is passed the same lifetime as `iperf3 -s` (`remote::lifetime`).
#[test]
fn the_far_ends_tcptune_peer_is_given_the_lifetime_the_near_end_computed() {
    let far = StandIn::new("PATH=$dir/bin:$PATH exec sh -c \"$remote\"");
    std::fs::create_dir(far.path("bin")).expect("bin");
    write_script(
        &far.path("bin/tcptune"),
        &format!(
            "#!/bin/sh\necho \"$*\" >> {}\nexec {} \"$@\"\n",
            far.path("args").display(),
            cargo_bin("tcptune").display()
        ),
    );
    let probes = [
        "--probes",
        "3",
        "--interval",
        "10ms",
        "--timeout",
        "1s",
        "--test-time",
        "2s",
    ];
    let (out, _) = far.advise(&[&probes[..], &["--fake-prober", "rtt=10ms,loss=0", "--format", "json"]].concat());
    let v = json(&out);
    assert_eq!(v["evidence"]["test"]["peer"], "tcptune", "{:#}", v["evidence"]);
    let life = tcptune::remote::lifetime(
        &tcptune::measure::ProbeOptions {
            probes: 3,
            interval: Duration::from_millis(10),
            timeout: Duration::from_secs(1),
            ..Default::default()
        },
        Some(Duration::from_secs(2)),
    );
    let args = std::fs::read_to_string(far.path("args")).expect("args");
    assert!(
        args.lines()
            .any(|l| l.starts_with(&format!("peer --lifetime {}s", life.as_secs()))),
        "{life:?}: {args}"
    );
}

/// Finding 2: a peer that ended before the test (its lifetime passed, or it failed) was said
/// as "nothing answers ... a firewall ... blocks it"; it is said as what it is.
#[test]
fn a_peer_that_ended_before_the_test_is_said_so_not_taken_for_a_firewall() {
    let far = StandIn::new("PATH=$dir/bin:$PATH exec sh -c \"$remote\"");
    std::fs::create_dir(far.path("bin")).expect("bin");
    write_script(
        &far.path("bin/tcptune"),
        &format!(
            "#!/bin/sh\ncase \"$*\" in --version) echo 'tcptune {}'; exit 0;; *--help*) exit 0;; esac\n\
             echo '{{\"tcptune_peer\":1,\"version\":\"0.0.0\",\"protocol\":3,\"port\":{}}}'\nexit 0\n",
            env!("CARGO_PKG_VERSION"),
            closed_port()
        ),
    );
    let (out, _) = far.advise(&["--fake-prober", "rtt=10ms", "--format", "json"]);
    let v = json(&out);
    let notes = notes(&v).join("\n");
    assert!(
        notes.contains("no TCP path test: the far end's peer ended (status 0) before the test"),
        "{notes}"
    );
    assert!(!notes.contains("firewall"), "{notes}");
}

/// Finding 3: `ssh -G` had no bound: a `Match exec "sleep 25"` held advise for 40 s and was
/// blamed on the far end. It runs under the set-up bound, and is said as this host's own
/// configuration.
#[test]
fn a_slow_ssh_configuration_is_said_as_local_within_the_set_up_bound() {
    let far = StandIn::resolving("facts\nsay 'peer none'\nhold", "sleep 100; echo hostname 127.0.0.1");
    let (out, took) = far.advise(&LONG);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains(&format!(
            "-G here took longer than {} s: your ssh configuration (Match exec?) is slow",
            tcptune::remote::SETUP_LIMIT.as_secs()
        )),
        "{err}"
    );
    assert!(!err.contains("far end"), "{err}");
    // At the bound, not the 100 s the configuration takes: 5 × it with room for this VM's stalls.
    assert!(
        took >= tcptune::remote::SETUP_LIMIT && took < 5 * tcptune::remote::SETUP_LIMIT + Duration::from_secs(5),
        "{took:?}"
    );
}

/// Finding 3: 300 MB printed by `ssh -G` took tcptune to 313 MB of memory; at most 1 MiB is
/// read.
#[test]
fn what_ssh_g_prints_is_bounded() {
    let far = StandIn::resolving(
        "facts\nsay 'peer none'\nhold",
        "head -c 300000000 /dev/zero | tr '\\0' x; echo; echo hostname 127.0.0.1",
    );
    let (out, took) = far.advise(&LONG);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("-G here printed more than 1 MiB"), "{err}");
    assert!(took < Duration::from_secs(10), "{took:?}");
}

/// Finding 5: a far end asked for no peer (`--rtt` and `--bandwidth`, or `--no-path-test`)
/// that asked for a copy of tcptune was sent the whole binary, and one that named a peer
/// had it said as the path test's. Both are protocol errors now, and nothing is sent.
#[test]
fn a_copy_or_a_peer_never_asked_for_is_a_protocol_error() {
    let copy = "facts\nsay need-binary\nIFS= read -r n || exit 0\nhead -c \"$n\" > \"$dir/received\"\nexit 0";
    let far = StandIn::new(copy);
    let (out, _) = far.advise(&LONG);
    assert_fault(
        &out,
        "ssh here: the far end's answer is not tcptune's: it asked for a copy of tcptune, though no peer was asked for",
    );
    assert!(!far.path("received").exists(), "a copy was sent");
    // The same from a far end on another system: not said as "this host has no iperf3 client".
    let far = StandIn::new(&copy.replacen("facts", "say 'tcptune-far 1' 'uname FreeBSD amd64'", 1));
    let (out, _) = far.advise(&LONG);
    assert_fault(&out, "it asked for a copy of tcptune, though no peer was asked for");
    let far = StandIn::new("facts\nsay 'peer iperf3 5999'\nhold");
    let (out, _) = far.advise(&["--fake-prober", "rtt=10ms", "--no-path-test"]);
    assert_fault(
        &out,
        "the far end's answer is not tcptune's: it started iperf3 -s on port 5999, though no peer was asked for",
    );
    assert!(!stderr(&out).contains("for the path test"), "{}", stderr(&out));
}

/// Finding 6: lines past 10,000 were dropped from the start of the session, not after the
/// peer line: a long report lost its peer line and read "it said nothing". The bound counts
/// after the peer line (the report before it has its reader's bounds).
#[test]
fn the_line_bound_counts_after_the_peer_line() {
    let far = StandIn::new(
        "facts\nsay 'key net/ipv4/tcp_rmem -rw-r--r--'\ni=0\n\
         while [ $i -lt 12000 ]; do say '= 1'; i=$((i+1)); done\nsay 'peer none'\nhold",
    );
    let (out, _) = far.advise(&[&LONG[..], &["--format", "json"]].concat());
    let v = json(&out);
    assert!(stderr(&out).contains("ssh here ("), "{}", stderr(&out));
    assert_eq!(
        setting(&v["far_end"], "net.ipv4.tcp_rmem")["action"]["kind"],
        "unavailable",
        "twelve thousand lines are no value of tcp_rmem"
    );
}

/// Finding 7: a second `need-binary` gave "the session's stdin is gone", exit 5; it is the
/// far end's fault, exit 4, saying what it did.
#[test]
fn a_second_copy_request_is_a_protocol_error() {
    let far = StandIn::new("facts\nsay need-binary need-binary\nexit 0");
    let (out, _) = far.advise(&["--fake-prober", "rtt=10ms"]);
    assert_fault(
        &out,
        "ssh here: the far end's answer is not tcptune's: it asked for a copy of tcptune a second time",
    );
}

/// Finding 8: a far end whose script ended after its facts without naming a peer read "ssh
/// far1 failed (exit status: 0): it said nothing"; it is said as the script ending early.
#[test]
fn a_far_end_that_ends_before_naming_a_peer_is_said_so() {
    let far = StandIn::new("facts\nsay 'key net/ipv4/tcp_rmem absent'\nexit 0");
    let (out, _) = far.advise(&LONG);
    assert_fault(
        &out,
        "ssh here: the far end's script ended (exit status: 0) before naming a peer",
    );
    // Before its header, it is ssh's failure as ever.
    let far = StandIn::new("echo 'motd' >&2\nexit 3");
    let (out, _) = far.advise(&LONG);
    assert_fault(&out, "ssh here failed (exit status: 3): motd");
}

/// Issue 44: what runs on a far end is said before it starts, and is tcptune of this version
/// only unless the user allows iperf3. A far end with iperf3 and an older tcptune runs neither:
/// it gets a copy of this one. Allowed, `iperf3 -s` listens on the tested address only.
#[test]
fn a_far_end_runs_this_tcptune_only_unless_iperf3_is_allowed_and_then_on_one_address() {
    let far = StandIn::new(
        "mkdir -p $dir/tmp; PATH=$dir/bin:$PATH SSH_CONNECTION='127.0.0.1 40000 127.0.0.1 22' TMPDIR=$dir/tmp \
         exec sh -c \"$remote\"",
    );
    std::fs::create_dir(far.path("bin")).expect("bin");
    write_script(
        &far.path("bin/tcptune"),
        &format!(
            "#!/bin/sh\nif [ \"$1\" = --version ]; then echo 'tcptune 0.0.1'; exit 0; fi\necho \"$*\" >> {}\nexit 1\n",
            far.path("old-ran").display()
        ),
    );
    write_script(
        &far.path("bin/iperf3"),
        &format!(
            "#!/bin/sh\necho \"$*\" >> {}\necho 'Server listening on 5201'\nexec sleep 30\n",
            far.path("iperf3-args").display()
        ),
    );
    let (out, _) = far.advise(&["--fake-prober", "rtt=10ms,loss=0", "--format", "json"]);
    let err = stderr(&out);
    let v = json(&out);
    assert_eq!(v["evidence"]["test"]["peer"], "tcptune", "{err}");
    assert_eq!(
        err.lines().next(),
        Some("tcptune: ssh here: will run tcptune peer on 127.0.0.1 for this test (this version, else a copy)"),
        "{err}"
    );
    assert!(err.contains("tcptune peer (a copy of this tcptune) on port "), "{err}");
    assert!(!far.path("old-ran").exists(), "the older tcptune ran");
    assert!(!far.path("iperf3-args").exists(), "iperf3 ran unasked");
    let left: Vec<_> = std::fs::read_dir(far.path("tmp")).expect("tmp").collect();
    assert!(left.is_empty(), "{left:?}");

    let (out, _) = far.advise(&["--fake-prober", "rtt=10ms,loss=0", "--format", "json", "--allow-iperf3"]);
    let err = stderr(&out);
    assert!(out.status.success(), "{err}");
    assert!(
        err.contains("for this test (this version, else iperf3 -s, else a copy)"),
        "{err}"
    );
    assert!(err.contains("iperf3 -s on port 5201"), "{err}");
    let args = std::fs::read_to_string(far.path("iperf3-args")).expect("iperf3 ran");
    assert_eq!(args.trim(), "-s -p 5201 -B 127.0.0.1 --forceflush", "{args}");
}
