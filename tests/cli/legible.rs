//! The advice reads in ten seconds: the file's header, one short comment per setting with its
//! old and new value, no line past 100 columns, numbers rounded for people, the derivation
//! whole behind `--explain`, and a terminal table that fits 80 columns. The checks are
//! functions, so the lab's measured advice (tests/cli/lab.rs) is held to them too.

use crate::{linux_tree, tcptune};

/// The widest line of a file, and of a setting's comment.
const FILE_WIDTH: usize = 100;
const COMMENT_WIDTH: usize = 90;
const HEADER_LINES: usize = 8;

/// Whether `line` is a setting, live or commented out: `key = value`, `# key = value`,
/// `key=value` (BSD), `# in /boot/loader.conf: key=value`.
fn is_setting(line: &str) -> bool {
    let l = line
        .trim_start_matches("# in /boot/loader.conf: ")
        .trim_start_matches("# ");
    l.split_once('=').is_some_and(|(k, _)| {
        let k = k.trim();
        !k.is_empty()
            && k.contains('.')
            && k.chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
    }) || l.starts_with("cc_") && l.contains('=')
}

/// The significant figures of a number as written ("625000" has 3, "0.0095" 2, "283,158" 6).
fn figures(n: &str) -> usize {
    let digits: String = n.chars().filter(char::is_ascii_digit).collect();
    let trimmed = digits.trim_start_matches('0');
    let trimmed = if n.contains('.') {
        trimmed
    } else {
        trimmed.trim_end_matches('0')
    };
    trimmed.len()
}

/// The numbers of prose: digit runs (with `,` and `.` inside) that stand alone — not part of
/// a word, an address, a date, a version, a key or a file name.
fn prose_numbers(line: &str) -> Vec<String> {
    let mut out = Vec::new();
    for word in line.split([' ', '(', ')', ';', '/']) {
        let w = word.trim_end_matches([',', ':', '.', '…']);
        let plain = !w.is_empty()
            && w.chars()
                .next()
                .is_some_and(|c| c.is_ascii_digit() || c == '+' || c == '-')
            && w.trim_start_matches(['+', '-'])
                .chars()
                .all(|c| c.is_ascii_digit() || c == ',' || c == '.');
        // An address or a version has more than one dot; a date or a file name a letter.
        if plain && w.matches('.').count() <= 1 {
            out.push(w.to_string());
        }
    }
    out
}

/// The rules every advice file keeps; `what` names it in failures.
pub fn check_file(text: &str, what: &str) {
    let lines: Vec<&str> = text.lines().collect();
    for l in &lines {
        assert!(
            l.chars().count() <= FILE_WIDTH,
            "{what}: a line of {} columns: {l}\n{text}",
            l.chars().count()
        );
    }
    let header = lines.iter().take_while(|l| !l.is_empty()).count();
    assert!(header <= HEADER_LINES, "{what}: a header of {header} lines\n{text}");
    assert!(lines.iter().take(header).all(|l| l.starts_with('#')), "{what}\n{text}");
    let mut settings = 0;
    for (i, l) in lines.iter().enumerate() {
        if !is_setting(l) || l.starts_with("#   ") {
            continue;
        }
        settings += 1;
        let comment = lines[..i].last().expect("a comment before each setting");
        assert!(
            comment.starts_with("# ") && !is_setting(comment),
            "{what}: {l} has no comment line of its own\n{text}"
        );
        assert!(
            comment.chars().count() <= COMMENT_WIDTH,
            "{what}: a setting's comment of {} characters: {comment}",
            comment.chars().count()
        );
        // A live setting changes the running value: its comment says from what to what.
        if !l.starts_with('#') {
            assert!(
                comment.contains(" \u{2192} "),
                "{what}: {l} says no old and new value: {comment}"
            );
        }
    }
    assert!(settings > 0, "{what}: no setting\n{text}");
    // `--scope path`: the route line has its comment line too, with the old and the new value.
    for (i, l) in lines.iter().enumerate().filter(|(_, l)| l.starts_with("# route: ")) {
        let comment = lines[..i].last().expect("a comment before the route");
        assert!(
            comment.starts_with("# ") && comment.contains(" \u{2192} ") && comment.chars().count() <= COMMENT_WIDTH,
            "{what}: {l} has no comment line saying from what to what: {comment}"
        );
        assert!(l.starts_with("# route: ip route replace "), "{what}: {l}");
    }
    // The derivation carries exact counts and the BDP's formula on purpose: the short advice
    // above it rounds every number it says.
    let short = lines
        .iter()
        .take_while(|l| !l.starts_with("# The derivation (--explain):"));
    for l in short.filter(|l| l.starts_with('#') && !is_setting(l)) {
        for n in prose_numbers(l) {
            assert!(figures(&n) <= 4, "{what}: {n} has more than 4 significant figures: {l}");
        }
    }
}

/// The table on an 80-column terminal: no line wider, at most `most` lines.
pub fn check_table(text: &str, most: usize, what: &str) {
    for l in text.lines() {
        assert!(
            l.chars().count() <= 80,
            "{what}: {} columns: {l}\n{text}",
            l.chars().count()
        );
    }
    let n = text.lines().count();
    assert!(n <= most, "{what}: {n} lines at 80 columns\n{text}");
}

/// Every fact of `facts` is in `explained`, the derivation.
pub fn check_explained(explained: &str, facts: &[&str], what: &str) {
    // Wrapped lines joined again: a fact may cross a line break.
    let joined = explained
        .lines()
        .map(|l| l.trim_start_matches('#').trim())
        .collect::<Vec<_>>()
        .join(" ");
    for f in facts {
        assert!(
            joined.contains(f),
            "{what}: --explain does not say \"{f}\"\n{explained}"
        );
    }
}

/// What the comments of the given path's file said before they were made short (2026-11-27),
/// each now in its derivation: the formula, the sources, the lab's figures.
const GIVEN_FACTS: &[&str] = &[
    "BDP = 500 Mbit/s × 150 ms = 9,375,000 bytes (8.94 MiB)",
    "6 × BDP (8.94 MiB) = 53.7 MiB, for loss recovery",
    "Linux advertises only part of the buffer as window",
    "the sender holds every byte sent from the loss until its repair is acknowledged",
    "the path's loss and queue depth were not measured (no TCP test) → bbr and 6 × BDP, the best worst case over clean, lossy and shallow lab paths",
    "assumed one half (Linux's scaling_ratio for typical 1500-byte frames)",
    "run `tcptune serve` on the far end (as root, so the test is not held by its buffers)",
    "channels.h CHAN_SES_WINDOW_DEFAULT",
    "sftp.c DEFAULT_NUM_REQUESTS, DEFAULT_COPY_BUFLEN",
    "HPN-SSH, or a tool that sizes its windows to the path",
    "after systemd's 50-default.conf",
    "caps SO_RCVBUF for programs that size their own buffers (iperf3 -w, some transfer tools)",
    "without window scaling the window stops at 64 KiB: 3.5 Mbit/s at this RTT",
    "probe the path MTU when an ICMP black hole stalls big segments",
    "need not slow-start again after each idle gap",
    "tcptune's lab, 150 ms, 0.01 % loss: BBR with 5 × BDP 98 % of the goodput limit, CUBIC 5.8 %",
    "10 ms at the path rate, within 128 KiB..4 MiB",
];

/// The facts a measured advice's derivation adds: each test's figures and the probes'.
pub const MEASURED_FACTS: &[&str] = &[
    "rtt min/avg/max/mdev",
    "TCP path test to",
    "reverse TCP path test from",
    "retransmitted after startup (",
    "delivery rate after startup",
    "at the IP level",
    "the RTT grew from",
];

fn advise_given(dir: &std::path::Path, extra: &[&str]) -> String {
    let out = tcptune()
        .args(["advise", "--rtt", "150ms", "--bandwidth", "500mbit", "--sysctl-dir"])
        .arg(dir)
        .args(extra)
        .env("COLUMNS", "80")
        .output()
        .expect("run");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).expect("utf8")
}

/// The README's path, from stock values: the file, its derivation, and the table at 80
/// columns.
#[test]
fn the_given_paths_advice_reads_in_ten_seconds() {
    let dir = linux_tree(&[]);
    let file = advise_given(dir.path(), &["--format", "sysctl"]);
    check_file(&file, "the given path");
    // The first setting comes within the first dozen lines, and the file says why in words.
    let first = file.lines().position(|l| l.starts_with("net.")).expect("a setting");
    assert!(first < 12, "{file}");
    assert!(
        file.contains("# receive max 6 MiB → 53.7 MiB (8.95 ×): 6 × BDP, loss recovery\nnet.ipv4.tcp_rmem = 4096 131072 56295424\n"),
        "{file}"
    );
    // Each evidence sentence once.
    assert_eq!(file.matches("the worst case on purpose").count(), 1, "{file}");
    let explained = advise_given(dir.path(), &["--format", "sysctl", "--explain"]);
    check_file(&explained, "the given path with --explain");
    // Past the first line (its time may be another second's).
    let after_title = |t: &str| t.split_once('\n').map(|(_, rest)| rest.to_string()).unwrap_or_default();
    assert!(
        after_title(&explained).starts_with(&after_title(&file)),
        "--explain adds to the file, it changes none of it"
    );
    check_explained(&explained, GIVEN_FACTS, "the given path");
    let table = advise_given(dir.path(), &["--format", "table"]);
    check_table(&table, 25, "the given path's table");
    assert!(
        table.contains("* tcp_rmem") || table.contains("* net.ipv4.tcp_rmem"),
        "{table}"
    );
    assert!(table.lines().any(|l| l.starts_with("already right: ")), "{table}");
    assert!(table.contains("to change (*)"), "{table}");
    let explained = advise_given(dir.path(), &["--format", "table", "--explain"]);
    check_explained(&explained, GIVEN_FACTS, "the given path's table");
}

/// A measured path (the fake prober's: both directions tested, loss both ways), in every
/// format: the same rules, the tests' figures in the derivation, the series in JSON.
#[test]
fn a_measured_advice_reads_in_ten_seconds_in_every_format() {
    let dir = linux_tree(&[]);
    let run = |format: &str, explain: bool| {
        let mut c = tcptune();
        c.args(["advise", "--host", "198.18.0.2", "--fake-prober"])
            .arg("rtt=150ms,rate=500mbit,loss=0.0095,rloss=0.008")
            .args(["--sysctl-dir"])
            .arg(dir.path())
            .args(["--format", format])
            .env("COLUMNS", "80");
        if explain {
            c.arg("--explain");
        }
        let out = c.output().expect("run");
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8(out.stdout).expect("utf8")
    };
    let file = run("sysctl", false);
    check_file(&file, "a measured path");
    let header: Vec<&str> = file.lines().take_while(|l| !l.is_empty()).collect();
    assert!(
        header
            .iter()
            .any(|l| l.starts_with("# measured: sending 0.0095 % loss, queue 1 × BDP; receiving 0.008 % loss")),
        "{file}"
    );
    let explained = run("sysctl", true);
    check_file(&explained, "a measured path with --explain");
    check_explained(&explained, MEASURED_FACTS, "a measured path");
    let shell = run("shell", false);
    assert!(shell.lines().all(|l| l.chars().count() <= FILE_WIDTH), "{shell}");
    let table = run("table", false);
    check_table(&table, 25, "a measured path's table");
    // Each direction's test as a sparkline beside what it read.
    assert!(
        table
            .lines()
            .any(|l| l.starts_with("Sending: ") && l.contains('\u{2588}')),
        "{table}"
    );
    let v: serde_json::Value = serde_json::from_str(&run("json", true)).expect("json");
    assert!(
        v["evidence"]["test"]["series"].as_array().is_some_and(|s| s.len() > 10),
        "{v:#}"
    );
    assert_eq!(
        v["summary"]["class"][0],
        "class: lossy both ways → bbr, 5 × BDP: at 0.0095 % loss CUBIC would hold about 23.1 Mbit/s"
    );
    assert!(v["explain"].as_array().is_some_and(|e| !e.is_empty()), "{v:#}");
    // JSON keeps every number whole: the exact bytes, the exact rate.
    assert_eq!(v["bdp_bytes"], 9_375_000);
    // The fleets' files open with the same words as the file: the path, what was measured,
    // the class (after the title, whose time may be another second's).
    let head: Vec<&str> = file.lines().skip(1).take(3).collect();
    for format in ["ansible", "tuned", "k8s"] {
        let text = run(format, false);
        assert_eq!(
            text.lines().skip(1).take(3).collect::<Vec<_>>(),
            head,
            "{format}: {text}"
        );
        assert!(!text.contains("The derivation"), "{format}");
        assert!(run(format, true).contains("# The derivation (--explain):"), "{format}");
    }
}

/// `--scope path`: the file says what is scoped and what stays host-wide in its header, the
/// route as its own line with a comment, the buffers as caps; the same rules as every file.
#[test]
fn the_scoped_advice_says_what_is_scoped_and_reads_in_ten_seconds() {
    // Reno host-wide: the advised cubic needs a route.
    let dir = linux_tree(&[("net.ipv4.tcp_congestion_control", Some("reno"))]);
    let scoped = ["--scope", "path", "--host", "198.18.0.2", "--clean-path"];
    let file = advise_given(dir.path(), &[&scoped[..], &["--format", "sysctl"]].concat());
    check_file(&file, "the scoped advice");
    let header: Vec<&str> = file.lines().take_while(|l| !l.is_empty()).collect();
    // The route's line depends on this machine's routes: it is one of three.
    let at = file
        .lines()
        .position(|l| l.starts_with("# congestion control to 198.18.0.2 "))
        .unwrap_or_else(|| panic!("no route comment: {file}"));
    let next = file.lines().nth(at + 1).unwrap_or_default();
    let route = next.starts_with("# route: ip route replace 198.18.0.2/32 ");
    assert!(
        route || next.starts_with("# no host route needed: ") || next.starts_with("# not applied here: "),
        "{file}"
    );
    if route {
        assert!(
            header
                .iter()
                .any(|l| l.starts_with("# scope: cubic only to 198.18.0.2 (a host route)")),
            "{file}"
        );
    }
    assert!(
        !file.contains("net.ipv4.tcp_congestion_control"),
        "the key is not the scope: {file}"
    );
    assert!(
        file.contains("# note: the buffer maxima stay host-wide caps: flows that need less are unchanged"),
        "{file}"
    );
    let table = advise_given(dir.path(), &[&scoped[..], &["--format", "table"]].concat());
    check_table(&table, 27, "the scoped advice's table");
    assert!(table.contains("route to 198.18.0.2"), "{table}");
    let shell = advise_given(dir.path(), &[&scoped[..], &["--format", "shell"]].concat());
    assert!(shell.lines().all(|l| l.chars().count() <= FILE_WIDTH), "{shell}");
    assert!(
        shell.lines().any(|l| l
            .trim_start_matches("# ")
            .starts_with("ip route replace 198.18.0.2/32 "))
            || !route,
        "{shell}"
    );
}

#[test]
fn the_checks_can_fail() {
    // A long comment, a setting without its comment, and a number with 7 figures each fail.
    let long = format!("# a\n\n# {}\nnet.ipv4.tcp_rmem = 1 2 3\n", "x".repeat(95));
    assert!(std::panic::catch_unwind(|| check_file(&long, "long")).is_err());
    let bare = "# a\n\nnet.ipv4.tcp_rmem = 1 2 3\n";
    assert!(std::panic::catch_unwind(|| check_file(bare, "bare")).is_err());
    let precise = "# path: 500.003337 Mbit/s\n\n# receive max 1 → 2: x\nnet.ipv4.tcp_rmem = 1 2 3\n";
    assert!(std::panic::catch_unwind(|| check_file(precise, "precise")).is_err());
    let route = "# a\n\n# x → y: z\nnet.ipv4.tcp_rmem = 1 2 3\n# route: ip route replace 198.18.0.2/32 congctl bbr\n";
    assert!(std::panic::catch_unwind(|| check_file(route, "a route without its comment")).is_err());
    assert_eq!(figures("625000"), 3);
    assert_eq!(figures("0.0095"), 2);
    assert_eq!(figures("283,158"), 6);
    assert_eq!(
        prose_numbers("host 198.18.0.2: 12.3 s, 2026-11-27T08:00:00Z, +795 %"),
        ["12.3", "+795"]
    );
}

/// Issue 35: where no running value could be read, nothing is known to meet the path's needs,
/// and the file must not say so above its "not applied (unreadable)" lines.
#[test]
fn a_file_whose_every_key_is_unreadable_does_not_say_no_change_is_needed() {
    let dir = linux_tree(&[]);
    for (k, _) in crate::values("linux-stock.txt", &[]) {
        let p = k.split('.').fold(dir.path().to_path_buf(), |p, c| p.join(c));
        std::fs::write(p, b"\xff\n").expect("write");
    }
    let file = advise_given(dir.path(), &["--format", "sysctl"]);
    assert!(file.contains("# 0 to change, 9 not applied here"), "{file}");
    assert!(file.contains("not applied (unreadable"), "{file}");
    assert!(!file.contains("no change needed"), "{file}");
    // The table and JSON's verdict neither.
    let table = advise_given(dir.path(), &["--format", "table"]);
    assert!(!table.contains("no change needed"), "{table}");
    assert!(table.contains("9 setting(s) not applied"), "{table}");
}

/// Issue 36, point 1: `calc --window 6MiB` said 335.5 Mbit/s where `advise` said the running
/// 6 MiB receive max holds one flow to 167.8 Mbit/s, and nothing said why. calc now gives both
/// (a window, and a Linux receive max of that size) and the second is advise's own number.
#[test]
fn calc_and_advise_give_one_number_for_one_receive_max() {
    let dir = linux_tree(&[]);
    let advice: serde_json::Value =
        serde_json::from_str(&advise_given(dir.path(), &["--format", "json"])).expect("json");
    let limit = advice["window_limit_bps"].as_f64().expect("window_limit_bps");
    let table = advise_given(dir.path(), &["--format", "table"]);
    let said = tcptune::text::rate(limit);
    assert!(
        table.contains(&format!("holds one flow to about {said}")),
        "{said}: {table}"
    );
    let calc = |format: &str| {
        let out = tcptune()
            .args([
                "calc",
                "--window",
                "6MiB",
                "--rtt",
                "150ms",
                "--bandwidth",
                "500mbit",
                "--format",
                format,
            ])
            .output()
            .expect("calc");
        assert!(out.status.success());
        String::from_utf8(out.stdout).expect("utf8")
    };
    let v: serde_json::Value = serde_json::from_str(&calc("json")).expect("json");
    assert_eq!(v["receive_buffer_max_throughput_bps"].as_f64(), Some(limit), "{v:#}");
    let table = calc("table");
    assert!(table.contains("| max throughput | 335.5 Mbit/s"), "{table}");
    assert!(table.contains(&format!("| as receive max | {said}")), "{table}");
}

/// Issue 36, point 4: shared and policed paths said in jargon ("a queue standing: a fair
/// neighbour"; "policed → bbr: loss at the base RTT, no queue"). The class line now says what
/// the test found and what follows, in plain words.
#[test]
fn shared_and_policed_paths_are_said_in_plain_words() {
    let dir = linux_tree(&[]);
    let class = |spec: &str| {
        let out = tcptune()
            .args([
                "advise",
                "--host",
                "198.18.0.2",
                "--fake-prober",
                spec,
                "--format",
                "table",
                "--sysctl-dir",
            ])
            .arg(dir.path())
            .env("COLUMNS", "200")
            .output()
            .expect("run");
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let text = String::from_utf8(out.stdout).expect("utf8");
        text.lines()
            .find(|l| l.starts_with("Class"))
            .unwrap_or_else(|| panic!("{text}"))
            .to_string()
    };
    let shared = class("rtt=100ms,capacity=300mbit,tcp-rate=34mbit,standing=200ms");
    assert!(
        shared.contains("others share this path: CUBIC keeps their share and yours (the test got"),
        "{shared}"
    );
    assert!(
        shared.contains("of 300 Mbit/s beside them)") && !shared.contains("fair neighbour"),
        "{shared}"
    );
    let policed = class("rtt=40ms,capacity=400mbit,tcp-rate=96mbit,police=1");
    assert!(
        policed.contains("a policer caps this path at about 99.45 Mbit/s: no setting goes past it; BBR finds that rate without losing"),
        "{policed}"
    );
    assert!(!policed.contains("no queue"), "{policed}");
}

/// Issue 36, point 5: "Verdict: 7 settings to change" said nothing of what is at stake. Now
/// it says what the running receive max does for one flow either way, and what the changes are
/// for where it already carries the rate.
#[test]
fn the_verdict_says_what_is_at_stake() {
    let verdict = |dir: &std::path::Path| {
        let table = advise_given(dir, &["--format", "table"]).replace("\n  ", " ");
        table
            .lines()
            .find(|l| l.starts_with("Verdict: "))
            .unwrap_or_else(|| panic!("{table}"))
            .to_string()
    };
    let stock = linux_tree(&[]);
    let short = verdict(stock.path());
    assert!(
        short.starts_with("Verdict: the running receive max holds one flow to about 167.8 Mbit/s of 500 Mbit/s: "),
        "{short}"
    );
    let big = linux_tree(&[("net.ipv4.tcp_rmem", Some("4096 131072 33554432"))]);
    let carried = verdict(big.path());
    assert!(
        carried.starts_with("Verdict: the running receive max carries one flow at 500 Mbit/s already; ")
            && carried.ends_with("settings to change for loss recovery"),
        "{carried}"
    );
}

/// Issue 36, point 5: a LAN-sized path said "Class: not measured → bbr" above "no change
/// needed" while the congestion control stayed and appeared nowhere. The class line names an
/// algorithm only where a line below sets it.
#[test]
fn the_class_line_names_no_algorithm_the_advice_does_not_set() {
    let dir = linux_tree(&[]);
    let out = tcptune()
        .args([
            "advise",
            "--rtt",
            "0.1ms",
            "--bandwidth",
            "1gbit",
            "--format",
            "sysctl",
            "--sysctl-dir",
        ])
        .arg(dir.path())
        .output()
        .expect("run");
    let file = String::from_utf8(out.stdout).expect("utf8");
    assert!(!file.contains("tcp_congestion_control"), "{file}");
    let class = file.lines().find(|l| l.starts_with("# class:")).expect("class line");
    assert!(
        class.contains("not measured → 6 × BDP") && !class.contains("bbr"),
        "{class}"
    );
    // Where it sets one, it names it.
    let long = advise_given(dir.path(), &["--format", "sysctl"]);
    assert!(long.contains("# class: not measured → bbr, 6 × BDP"), "{long}");
}

/// Issue 36, point 8: piped, calc was 109 columns and profiles 120–143, apply's lines ran to
/// 150. Every command's output fits 100 columns piped, and the advice's table fits 80 where
/// the terminal is 80 wide (COLUMNS).
#[test]
fn every_commands_output_fits_100_columns_piped() {
    let dir = linux_tree(&[]);
    let state = tempfile::tempdir().expect("state");
    let file = state.path().join("t.conf");
    std::fs::write(
        &file,
        "net.ipv4.tcp_rmem = 4096 131072 20643840\nnet.ipv4.tcp_notsent_lowat = 131072\n",
    )
    .expect("write");
    let tree = dir.path().to_str().expect("utf8");
    let st = state.path().to_str().expect("utf8");
    let f = file.to_str().expect("utf8");
    let given = ["--rtt", "150ms", "--bandwidth", "500mbit"];
    let runs: Vec<Vec<&str>> = vec![
        vec![
            "calc",
            "--bandwidth",
            "500mbit",
            "--rtt",
            "150ms",
            "--window",
            "6MiB",
            "--loss",
            "0.01",
        ],
        vec!["calc", "--window", "125000", "--rtt", "25ms"],
        vec!["profiles"],
        [&["--sysctl-dir", tree, "advise", "--format", "table"][..], &given].concat(),
        [
            &["--sysctl-dir", tree, "advise", "--format", "sysctl", "--explain"][..],
            &given,
        ]
        .concat(),
        [&["--sysctl-dir", tree, "advise", "--format", "shell"][..], &given].concat(),
        vec!["--sysctl-dir", tree, "check"],
        vec!["--sysctl-dir", tree, "--state-dir", st, "apply", "--dry-run", f],
        vec!["--sysctl-dir", tree, "--state-dir", st, "apply", f],
        vec!["--state-dir", st, "snapshots"],
        vec!["--sysctl-dir", tree, "--state-dir", st, "revert", "--dry-run"],
        vec!["--sysctl-dir", tree, "--state-dir", st, "revert"],
    ];
    for args in &runs {
        let out = tcptune().args(args).env_remove("COLUMNS").output().expect("run");
        let all = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        for l in all.lines() {
            // A path tcptune did not choose (the test's temporary directories) is what it is.
            let l = l.replace(tree, "/proc/sys").replace(st, "/var/lib/tcptune");
            assert!(l.chars().count() <= 100, "{args:?}: {} columns: {l}", l.chars().count());
        }
    }
    let table = advise_given(dir.path(), &["--format", "table"]);
    assert!(table.lines().all(|l| l.chars().count() <= 80), "{table}");
}

/// Issue 36, point 4: on an asymmetric path the receive max was "5 × BDP" of the receiving
/// direction's BDP (4.47 MiB) under a header whose BDP is the sending one's (17.9 MiB). A
/// multiple of another BDP now names it; one of the header's stays "× BDP".
#[test]
fn a_multiple_of_another_bdp_names_it() {
    let dir = linux_tree(&[]);
    let out = tcptune()
        .args(["advise", "--host", "198.18.0.2", "--fake-prober"])
        .arg("rtt=150ms,rate=1gbit,loss=0.01,rrate=250mbit,rloss=0.01")
        .args(["--format", "sysctl", "--explain", "--allow-lower", "--sysctl-dir"])
        .arg(dir.path())
        .env_remove("COLUMNS")
        .output()
        .expect("run");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8(out.stdout).expect("utf8");
    assert!(
        text.contains("259 Mbit/s receiving") && text.contains("BDP 17.9 MiB"),
        "{text}"
    );
    let why = |key: &str| {
        let at = text
            .lines()
            .position(|l| l.starts_with(key))
            .unwrap_or_else(|| panic!("{key}: {text}"));
        text.lines()
            .take(at)
            .filter(|l| l.starts_with("# "))
            .last()
            .unwrap_or_default()
            .to_string()
    };
    let rmem = why("net.ipv4.tcp_rmem");
    assert!(rmem.contains("5 × BDP of 4.63 MiB, loss recovery"), "{rmem}");
    let wmem = why("net.ipv4.tcp_wmem");
    assert!(
        wmem.contains("5 × BDP, loss recovery") && !wmem.contains("BDP of"),
        "{wmem}"
    );
}

/// Issue 37, point 1: without a peer, a queue the probes saw rise and fall is said in plain
/// words, the BDP is at the lowest RTT they saw (not the first probes' 270 ms), and CUBIC keeps
/// the neighbours' share.
#[test]
fn others_queue_seen_by_the_probes_alone_is_said_and_sized_at_the_lowest_rtt() {
    let dir = linux_tree(&[]);
    let table = |spec: &str| {
        let out = tcptune()
            .args(["advise", "--host", "198.18.0.2", "--fake-prober", spec])
            .args(["--format", "table", "--sysctl-dir"])
            .arg(dir.path())
            .env("COLUMNS", "100")
            .output()
            .expect("run");
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8(out.stdout).expect("utf8").replace("\n  ", " ")
    };
    let text = table("rtt=150ms,capacity=250mbit,seen=120ms");
    assert!(text.contains("RTT 150 ms (measured)"), "{text}");
    assert!(
        text.contains("others share this path: a queue of about")
            && text.contains("rose and fell while tcptune probed; CUBIC keeps their share and yours"),
        "{text}"
    );
    assert!(text.contains("Class: shared with other flows → cubic"), "{text}");
    assert!(!text.contains("was not measured"), "the probes measured it: {text}");
    // The same path without others: today's default and its note.
    let idle = table("rtt=150ms,capacity=250mbit");
    assert!(!idle.contains("others share"), "{idle}");
}

/// Issue 47, 6: `tcptune snapshots` was 95 columns (a time column beside the id, which carries
/// it). It fits 80 columns where the terminal is 80 wide and 100 piped, in the shared table
/// style, every key whole.
#[test]
fn the_snapshots_table_fits_80_columns_with_every_key_whole() {
    let dir = linux_tree(&[]);
    let state = tempfile::tempdir().expect("state");
    let file = state.path().join("t.conf");
    let keys = [
        "net.ipv4.tcp_rmem",
        "net.ipv4.tcp_slow_start_after_idle",
        "net.ipv4.tcp_notsent_lowat",
    ];
    std::fs::write(
        &file,
        "net.ipv4.tcp_rmem = 4096 131072 20643840\nnet.ipv4.tcp_slow_start_after_idle = 0\n\
         net.ipv4.tcp_notsent_lowat = 131072\n",
    )
    .expect("write");
    let st = state.path().join("st");
    let out = tcptune()
        .arg("--sysctl-dir")
        .arg(dir.path())
        .arg("--state-dir")
        .arg(&st)
        .arg("apply")
        .arg(&file)
        .output()
        .expect("apply");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    for (columns, most) in [(Some("80"), 80), (None, 100), (Some("300"), 100)] {
        let mut c = tcptune();
        c.arg("--state-dir").arg(&st).arg("snapshots").env_remove("COLUMNS");
        if let Some(cols) = columns {
            c.env("COLUMNS", cols);
        }
        let out = c.output().expect("run");
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let table = String::from_utf8(out.stdout).expect("utf8");
        for l in table.lines() {
            assert!(
                l.chars().count() <= most,
                "{columns:?}: {} columns: {l}",
                l.chars().count()
            );
        }
        for k in keys {
            assert!(table.contains(k), "{k} broken: {table}");
        }
        // The shared style, piped: ASCII rules with a '=' header rule, bold never forced.
        assert!(table.lines().nth(2).is_some_and(|l| l.starts_with("+===")), "{table}");
        assert!(table.lines().nth(1).is_some_and(|l| l.contains("| state ")), "{table}");
    }
}
