//! `tcptune check` as a person reads it (issue 36, point 6): fixes this kernel can take,
//! commands never broken inside a word, every line inside its width, options it cannot use
//! refused, numbers in units. Fake trees for the sysctls, this machine for its own facts, and —
//! as root — a network namespace with a veth pair for the interfaces.

use assert_cmd::cargo::cargo_bin;
use serde_json::Value;

use super::netns::Netns;
use super::{linux_tree, tcptune};

fn findings(v: &Value) -> &Vec<Value> {
    v["findings"].as_array().expect("findings")
}

fn finding<'a>(v: &'a Value, id: &str) -> &'a Value {
    findings(v)
        .iter()
        .find(|f| f["id"] == id)
        .unwrap_or_else(|| panic!("no finding {id} in {v:#}"))
}

fn parse(out: &std::process::Output) -> Value {
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "not JSON ({e}), exit {:?}: {}\n{}",
            out.status.code(),
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    })
}

/// A network namespace whose default route leaves through a veth (noqueue: not fq), with bbr
/// its congestion control: check judges the veth's pacing.
fn bbr_namespace(tag: &str) -> Netns {
    let ns = Netns::new(tag);
    for cmd in [
        &["ip", "link", "add", "ckv0", "type", "veth", "peer", "name", "ckv1"][..],
        &["ip", "link", "set", "lo", "up"],
        &["ip", "link", "set", "ckv0", "up"],
        &["ip", "link", "set", "ckv1", "up"],
        &["ip", "addr", "add", "198.18.9.1/24", "dev", "ckv0"],
        &["ip", "route", "add", "default", "via", "198.18.9.2", "dev", "ckv0"],
        &["sysctl", "-qw", "net.ipv4.tcp_congestion_control=bbr"],
    ] {
        let out = ns.exec(cmd[0], &cmd[1..]);
        assert!(
            out.status.success(),
            "{cmd:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    ns
}

/// Issue 36, 6: on a kernel without sch_fq (`tc qdisc add ... fq` fails, and advise leaves fq
/// out) check gave `tc qdisc replace dev eth0 root fq`. The fix is that command only where
/// this kernel has sch_fq; elsewhere it says what is missing.
#[test]
#[cfg_attr(not(feature = "privileged-tests"), ignore = "privileged: needs root")]
fn check_gives_the_fq_command_only_where_this_kernel_has_sch_fq() {
    let ns = bbr_namespace("chkfq");
    let bin = cargo_bin("tcptune");
    let out = ns.exec(bin.to_str().expect("utf8"), &["check", "--format", "json"]);
    let v = parse(&out);
    let pacing = finding(&v, "pacing:ckv0");
    assert_eq!(pacing["status"], "warn", "{pacing}");
    let fix = pacing["fix"].as_str().expect("fix");
    // The same fact advise reads (host::Facts::sch_fq).
    let has_fq = std::path::Path::new("/sys/module/sch_fq").exists();
    if has_fq {
        assert!(fix.starts_with("tc qdisc replace dev ckv0 root fq"), "{fix}");
    } else {
        assert!(!fix.contains("tc qdisc") && !fix.contains("default_qdisc"), "{fix}");
        assert!(fix.starts_with("this kernel has no sch_fq"), "{fix}");
        // What the finding said would be done is what this kernel refuses.
        let tried = ns.exec("tc", &["qdisc", "replace", "dev", "ckv0", "root", "fq"]);
        assert!(
            !tried.status.success(),
            "tc took fq: /sys/module/sch_fq should be there"
        );
    }
}

/// The words of a command line as a shell splits them: a single-quoted word keeps its spaces.
fn shell_words(s: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut quoted = false;
    for c in s.chars() {
        match c {
            '\'' => {
                quoted = !quoted;
                word.push(c);
            }
            ' ' if !quoted => {
                if !word.is_empty() {
                    words.push(std::mem::take(&mut word));
                }
            }
            _ => word.push(c),
        }
    }
    if !word.is_empty() {
        words.push(word);
    }
    words
}

/// Every line of `text` fits `width` columns, and every word of every fix of `json` stands
/// whole on one line of it: a command is never broken inside a word.
fn assert_fits_with_whole_words(text: &str, json: &Value, width: usize, what: &str) {
    for l in text.lines() {
        assert!(
            l.chars().count() <= width,
            "{what}: a line of {} columns, over {width}:\n{l}\n{text}",
            l.chars().count()
        );
    }
    let fixes: Vec<&str> = findings(json).iter().filter_map(|f| f["fix"].as_str()).collect();
    assert!(!fixes.is_empty(), "{what}: no fix to show: {json:#}");
    for fix in fixes {
        for w in shell_words(fix) {
            assert!(
                text.lines().any(|l| l.contains(&w)),
                "{what}: the word {w:?} of the fix {fix:?} is broken across lines:\n{text}"
            );
        }
    }
}

/// `check` with `args`, piped: (the table with `COLUMNS` set or not, the JSON).
fn check_out(args: &[&str], columns: Option<&str>, dir: Option<&std::path::Path>) -> (String, Value) {
    let run = |format: &str| {
        let mut c = tcptune();
        c.arg("check")
            .args(args)
            .args(["--format", format])
            .env_remove("COLUMNS");
        if let Some(d) = dir {
            c.arg("--sysctl-dir").arg(d);
        }
        if let Some(cols) = columns {
            c.env("COLUMNS", cols);
        }
        c.output().expect("run")
    };
    let table = run("table");
    assert!(
        matches!(table.status.code(), Some(0 | 1)),
        "{}",
        String::from_utf8_lossy(&table.stderr)
    );
    (String::from_utf8(table.stdout).expect("utf8"), parse(&run("json")))
}

/// Issue 36, 6 and 8: the 80-column table broke commands mid-word ("sysctl -w net.ipv4.tc" /
/// "p_mtu_probing=1") and piped it was 120 columns. Every line fits 100 columns piped and
/// COLUMNS when given; no fix is broken inside a word.
#[test]
fn check_lines_fit_their_width_and_fixes_keep_their_words() {
    let dir = linux_tree(&[
        ("net.ipv4.tcp_sack", Some("0")),
        ("net.ipv4.tcp_window_scaling", Some("0")),
        ("net.ipv4.tcp_timestamps", Some("0")),
        ("net.ipv4.tcp_mtu_probing", Some("0")),
        ("net.ipv4.tcp_congestion_control", Some("reno")),
    ]);
    for (columns, width) in [(None, 100), (Some("80"), 80), (Some("60"), 60)] {
        let (text, json) = check_out(&[], columns, Some(dir.path()));
        assert_fits_with_whole_words(&text, &json, width, &format!("a fake tree at {columns:?}"));
        assert!(text.contains("sysctl -w net.ipv4.tcp_mtu_probing=1"), "{text}");
    }
    // This machine, its interfaces and memory included (what it finds varies: a fix may not).
    for (columns, width) in [(None, 100), (Some("80"), 80)] {
        let (text, json) = check_out(&[], columns, None);
        for l in text.lines() {
            assert!(l.chars().count() <= width, "this machine at {columns:?}:\n{l}\n{text}");
        }
        if findings(&json).iter().any(|f| f["fix"].is_string()) {
            assert_fits_with_whole_words(&text, &json, width, "this machine");
        }
    }
}

/// Issue 36, 6: `check --bandwidth 500mbit` without `--host` ignored the rate. The rate is
/// the path's, for the buffer check against `--host`; without a host there is no path, so it
/// is refused: exit 2, one line and a hint, nothing on stdout.
#[test]
fn check_refuses_a_bandwidth_without_a_host() {
    let dir = linux_tree(&[]);
    let out = tcptune()
        .args(["check", "--bandwidth", "500mbit", "--sysctl-dir"])
        .arg(dir.path())
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(2), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(out.stdout.is_empty());
    let err = String::from_utf8(out.stderr).expect("utf8");
    let lines: Vec<&str> = err.lines().collect();
    assert_eq!(lines.len(), 2, "{err}");
    assert!(
        lines[0].starts_with("tcptune: ") && lines[0].contains("--bandwidth"),
        "{err}"
    );
    assert!(lines[1].starts_with("hint: ") && lines[1].contains("--host"), "{err}");
    // With --host it is used: the buffer check names the rate as given.
    let out = tcptune()
        .args(["check", "--host", "198.18.0.2", "--fake-prober", "rtt=50ms"])
        .args(["--bandwidth", "500mbit", "--format", "json", "--sysctl-dir"])
        .arg(dir.path())
        .output()
        .expect("run");
    let v = parse(&out);
    let recv = finding(&v, "buffers:receive");
    assert!(
        recv["message"].as_str().expect("message").contains("500 Mbit/s given"),
        "{recv}"
    );
}

/// The longest run of digits in `s`.
fn longest_digits(s: &str) -> usize {
    s.split(|c: char| !c.is_ascii_digit()).map(str::len).max().unwrap_or(0)
}

/// Issue 36, 6: "1 flow(s) x 33554432 bytes". Numbers for people have 3–4 figures and a unit,
/// exact bytes only where they are a setting's value; "×", and "1 flow" / "2 flows".
#[test]
fn check_says_its_numbers_in_units_and_its_counts_in_words() {
    for (flows, said) in [("1", "1 flow × "), ("2", "2 flows × ")] {
        let (_, v) = check_out(&["--flows", flows], None, None);
        let mem = finding(&v, "tcp-memory")["message"].as_str().expect("message");
        assert!(mem.contains(said), "{mem}");
        assert!(!mem.contains(" x ") && !mem.contains("bytes"), "{mem}");
        assert!(longest_digits(mem) < 5, "no raw byte count: {mem}");
        for f in findings(&v) {
            let m = f["message"].as_str().expect("message");
            assert!(!m.contains("(s)"), "{m}");
        }
        let retrans = finding(&v, "retransmissions")["message"].as_str().expect("message");
        assert!(longest_digits(retrans) < 5, "counts with separators: {retrans}");
    }
    // A path's needs: the running maximum (a setting) exact, what it needs and the BDP in units.
    let dir = linux_tree(&[]);
    let out = tcptune()
        .args(["check", "--host", "198.18.0.2", "--fake-prober", "rtt=150ms"])
        .args(["--bandwidth", "500mbit", "--format", "json", "--sysctl-dir"])
        .arg(dir.path())
        .output()
        .expect("run");
    let v = parse(&out);
    let recv = finding(&v, "buffers:receive")["message"].as_str().expect("message");
    assert!(
        recv.starts_with("net.ipv4.tcp_rmem[2] = 6291456 bytes (6 MiB) is short of the 53.7 MiB"),
        "{recv}"
    );
    assert!(recv.contains("RTT 150 ms") && recv.contains("(BDP 8.94 MiB)"), "{recv}");
}

/// `check` against the fake tree `tree` and the state directory `state`: (exit code, the
/// table piped at `COLUMNS`=80, the JSON).
fn check_applied(tree: &std::path::Path, state: &std::path::Path) -> (Option<i32>, String, Value) {
    let run = |format: &str| {
        tcptune()
            .arg("--sysctl-dir")
            .arg(tree)
            .arg("--state-dir")
            .arg(state)
            .args(["check", "--format", format])
            .env("COLUMNS", "80")
            .output()
            .expect("run")
    };
    let table = run("table");
    let err = String::from_utf8_lossy(&table.stderr).to_string();
    assert!(!err.contains("panicked"), "{err}");
    (
        table.status.code(),
        String::from_utf8(table.stdout).expect("utf8"),
        parse(&run("json")),
    )
}

/// Issue 47, 1: check says whether what the newest applied snapshot set still runs, and
/// when another tool changed a key since, names it (now, was set to) with what to do: apply
/// again, or revert --force (a bare revert refuses then). A damaged or planted snapshot file
/// is said in one finding, never a panic, never passed over.
#[test]
fn check_says_whether_the_applied_snapshot_is_still_in_force() {
    let tree = linux_tree(&[]);
    let tmp = tempfile::tempdir().expect("tempdir");
    let state = tmp.path().join("state");
    let file = tmp.path().join("t.conf");
    std::fs::write(
        &file,
        "net.ipv4.tcp_rmem = 4096 131072 20643840\nnet.core.rmem_max = 20643840\n",
    )
    .expect("write");
    // No snapshot: nothing said of one.
    let (_, table, v) = check_applied(tree.path(), &state);
    assert_eq!(v["applied"], serde_json::json!([]), "{v:#}");
    assert!(!table.contains("applied"), "{table}");

    let out = tcptune()
        .arg("--sysctl-dir")
        .arg(tree.path())
        .arg("--state-dir")
        .arg(&state)
        .arg("apply")
        .arg(&file)
        .output()
        .expect("apply");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let id = String::from_utf8_lossy(&out.stdout).trim().to_string();
    let num = id.split('-').next().expect("number").to_string();

    let (_, table, v) = check_applied(tree.path(), &state);
    let a = &v["applied"][0];
    assert_eq!(a["snapshot"], id.as_str(), "{v:#}");
    assert_eq!(a["in_force"], true, "{a:#}");
    assert_eq!(a["drifted"], serde_json::json!([]));
    assert_eq!(finding(&v, &format!("applied:{num}"))["status"], "ok");
    assert!(table.contains("still in force"), "{table}");

    // Another tool changes a key.
    std::fs::write(tree.path().join("net/core/rmem_max"), "4194304\n").expect("write");
    let (code, table, v) = check_applied(tree.path(), &state);
    assert_eq!(code, Some(1), "{table}");
    let a = &v["applied"][0];
    assert_eq!(a["in_force"], false, "{a:#}");
    assert_eq!(
        a["drifted"],
        serde_json::json!([{"kind": "key", "key": "net.core.rmem_max", "now": "4194304",
            "set": "20643840", "prior": "212992", "revert": "refuses"}])
    );
    let f = finding(&v, &format!("applied:{num}"));
    assert_eq!(f["status"], "warn");
    let message = f["message"].as_str().expect("message");
    assert!(
        message.contains("changed since apply: net.core.rmem_max now 4194304 (was set to 20643840)"),
        "{message}"
    );
    let fix = f["fix"].as_str().expect("fix");
    assert!(fix.contains(&format!("tcptune apply {}", file.display())), "{fix}");
    assert!(fix.contains(&format!("tcptune revert --force {id}")), "{fix}");
    // What the fix says of a bare revert is what revert does: it refuses, changing nothing.
    let out = tcptune()
        .arg("--sysctl-dir")
        .arg(tree.path())
        .arg("--state-dir")
        .arg(&state)
        .args(["revert", "--dry-run"])
        .output()
        .expect("revert");
    assert_eq!(out.status.code(), Some(3), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(table.contains("changed since apply"), "{table}");
    for l in table.lines() {
        let l = l
            .replace(&tree.path().display().to_string(), "/proc/sys")
            .replace(&tmp.path().display().to_string(), "/tmp");
        assert!(l.chars().count() <= 80, "{} columns: {l}", l.chars().count());
    }

    // A damaged and a planted file beside it: one finding that names both, in one line each
    // of the table's fix and the JSON; the snapshot that reads is still judged.
    let snaps = state.join("snapshots");
    std::fs::write(snaps.join("0009-20261129T130000Z.json"), "{\"format\": 1,").expect("write");
    std::fs::write(snaps.join("0010-x.json"), "\u{1b}[2J\nkernel.x = 1\n").expect("write");
    let (code, table, v) = check_applied(tree.path(), &state);
    assert_eq!(code, Some(1), "{table}");
    let f = finding(&v, "applied");
    assert_eq!(f["status"], "warn");
    let message = f["message"].as_str().expect("message");
    assert!(
        message.contains("2 files in") && message.contains("0009-20261129T130000Z.json: not a tcptune snapshot"),
        "{message}"
    );
    assert!(
        !message.chars().any(char::is_control) && !message.contains("kernel.x"),
        "{message}"
    );
    assert!(!table.contains('\u{1b}'), "{table}");
    assert_eq!(v["applied"][0]["snapshot"], id.as_str());

    // Reverted (by force): no snapshot still applied, nothing said of one.
    std::fs::remove_file(snaps.join("0009-20261129T130000Z.json")).expect("rm");
    std::fs::remove_file(snaps.join("0010-x.json")).expect("rm");
    let out = tcptune()
        .arg("--sysctl-dir")
        .arg(tree.path())
        .arg("--state-dir")
        .arg(&state)
        .args(["revert", "--force"])
        .output()
        .expect("revert");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let (_, _, v) = check_applied(tree.path(), &state);
    assert_eq!(v["applied"], serde_json::json!([]), "{v:#}");
}
