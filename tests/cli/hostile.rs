//! Hostile and absurd input: each attack from the "Trust" review as input, the refusal
//! (exit 2, one short line, no panic) and an unchanged tree or file as the assertion.

use std::path::Path;
use std::process::Output;
use std::time::{Duration, Instant};

use assert_cmd::Command;

use super::{bsd_tree, fixture, linux_tree, tcptune, tree_contents};

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// Exit 2 with a short error: one `tcptune:` line and at most a `hint:` line, no panic.
fn refused(out: &Output) -> String {
    let err = text(&out.stderr);
    assert_eq!(
        out.status.code(),
        Some(2),
        "stdout:\n{}\nstderr:\n{err}",
        text(&out.stdout)
    );
    assert!(err.starts_with("tcptune: "), "{err}");
    assert!(!err.contains("panicked") && !err.contains("overflow"), "{err}");
    assert!(err.lines().count() <= 2, "{err}");
    assert!(err.lines().nth(1).is_none_or(|l| l.starts_with("hint: ")), "{err}");
    err
}

fn run(args: &[&str]) -> Output {
    tcptune().args(args).output().expect("run")
}

// ---------------------------------------------------------------- calc: absurd numbers

#[test]
fn calc_absurd_inputs_exit_2_not_panic_or_wrap() {
    let max = "18446744073709551615";
    let max_s = format!("{max}s");
    let max_bit = format!("{max}bit");
    let cases: &[&[&str]] = &[
        // Was a panic in Duration::from_secs_f64 (exit 101).
        &["--window", max, "--bandwidth", "1bit"],
        // Was a u128 overflow: a panic in debug, a wrong bdp_bytes in release.
        &["--rtt", &max_s, "--bandwidth", &max_bit],
        &["--rtt", &max_s, "--bandwidth", "1bit", "--window", max],
        // Fits u128, but the BDP (1.25e23 bytes) is past what JSON carries exactly.
        &["--rtt", "1000000000s", "--bandwidth", "1000tbit"],
        &["--rtt", "1s", "--loss", "1", "--mss", max],
    ];
    for args in cases {
        let mut a = vec!["calc"];
        a.extend_from_slice(args);
        let err = refused(&run(&a));
        assert!(
            err.contains("not a network path") || err.contains("--mss"),
            "{args:?}: {err}"
        );
    }
    // Tiny but real: 1 bit/s at 1 ns still answers, with an exact fraction.
    let out = run(&[
        "calc",
        "--rtt",
        "0.000000001s",
        "--bandwidth",
        "1bit",
        "--format",
        "json",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(v["bdp_bytes"], 1.25e-10);
    // At the limit (2^53 bytes = 1 Gbit/s for 72057594.037927936 s) the BDP is exact.
    let out = run(&[
        "calc",
        "--rtt",
        "72057594.037927936s",
        "--bandwidth",
        "1gbit",
        "--format",
        "json",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(v["bdp_bytes"], 9_007_199_254_740_992_u64);
    // advise refuses the same path before sizing anything.
    let tree = linux_tree(&[]);
    let out = tcptune()
        .args([
            "advise",
            "--os",
            "linux",
            "--rtt",
            &max_s,
            "--bandwidth",
            &max_bit,
            "--sysctl-dir",
        ])
        .arg(tree.path())
        .output()
        .expect("run");
    refused(&out);
}

/// The largest and smallest inputs calc takes answer in the unit of their size, and a
/// positive quantity is never shown as 0 (`calc --window 1000000000000 --rtt 1ns` said
/// "0 bit/s" while its JSON said 8e21).
#[test]
fn calc_extremes_show_their_size_never_zero() {
    let max = "18446744073709551615";
    let max_s = format!("{max}s");
    let max_bit = format!("{max}bit");
    let cases: &[(&[&str], &[&str])] = &[
        (&["--window", "1000000000000", "--rtt", "1ns"], &["8 Zbit/s"]),
        (&["--window", max, "--rtt", "1ns"], &["147.6 Rbit/s"]),
        (&["--window", "1", "--rtt", &max_s], &["4.337e-19 bit/s"]),
        (&["--window", "1", "--rtt", "1ns"], &["8 Gbit/s"]),
        (&["--window", "1", "--bandwidth", &max_bit], &["4.337e-16 ms"]),
        (&["--window", max, "--bandwidth", &max_bit], &["8000 ms"]),
        (
            &["--window", "1", "--rtt", "1s", "--bandwidth", "1tbit"],
            &["8 bit/s", "8e-10 %", "8e-9 ms"],
        ),
        (
            &["--rtt", "1ns", "--loss", "1e-300", "--mss", "65535"],
            &["6.421e165 bit/s", "√1e-300 %"],
        ),
        (&["--rtt", &max_s, "--loss", "100", "--mss", "1"], &["5.311e-19 bit/s"]),
    ];
    for (args, want) in cases {
        let mut a = vec!["calc"];
        a.extend_from_slice(args);
        let out = run(&a);
        let table = text(&out.stdout);
        assert_eq!(out.status.code(), Some(0), "{args:?}: {}", text(&out.stderr));
        for w in *want {
            assert!(table.contains(w), "{args:?}: want {w}:\n{table}");
        }
        for zero in [" 0 bit/s", " 0 ms", " 0.0 %", "0.000 bit/s"] {
            assert!(!table.contains(zero), "{args:?}: {zero}:\n{table}");
        }
        assert!(!table.contains("√0.0000000"), "no row of zeros: {args:?}:\n{table}");
        a.extend(["--format", "json"]);
        let v: serde_json::Value = serde_json::from_slice(&run(&a).stdout).expect("json");
        for k in [
            "max_throughput_bps",
            "receive_buffer_max_throughput_bps",
            "max_rtt_ms",
            "mathis_bps",
        ] {
            if let Some(x) = v[k].as_f64() {
                assert!(x > 0.0 && x.is_finite(), "{args:?}: {k} {v}");
            }
        }
    }
    let v: serde_json::Value =
        serde_json::from_slice(&run(&["calc", "--window", "1000000000000", "--rtt", "1ns", "--format", "json"]).stdout)
            .expect("json");
    assert_eq!(v["max_throughput_bps"], 8e21);
}

// ---------------------------------------------------------------- user input echoed

/// A `--host` holding ESC and a newline is repeated escaped in every error that names it:
/// one line, no escape sequence, no forged `kernel.x=` line, the same exit code (4).
#[test]
fn a_host_with_control_characters_is_echoed_escaped() {
    let host = "a\u{1b}[31m\nkernel.x=.invalid";
    let tree = linux_tree(&[]);
    let state = tempfile::tempdir().expect("tempdir");
    let runs: Vec<(&str, Output)> = vec![
        ("advise", run(&["advise", "--os", "linux", "--host", host])),
        ("check", run(&["check", "--host", host])),
        ("inspect", run(&["inspect", "--host", host])),
        (
            "apply",
            tcptune()
                .arg("--sysctl-dir")
                .arg(tree.path())
                .arg("--state-dir")
                .arg(state.path())
                .args(["apply", "--dry-run", "--host", host])
                .output()
                .expect("run"),
        ),
    ];
    for (cmd, out) in runs {
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(4), "{cmd}: {err}");
        assert!(!err.contains('\u{1b}'), "{cmd}: {err:?}");
        assert!(!err.lines().any(|l| l.starts_with("kernel.x=")), "{cmd}: {err:?}");
        assert!(
            err.starts_with("tcptune: cannot resolve \"a\\u{1b}[31m\\u{a}kernel.x=.invalid\": "),
            "{cmd}: {err:?}"
        );
    }
    // An IP literal resolves with white space around it; inspect's answer says it escaped.
    if cfg!(target_os = "linux") {
        let out = run(&["inspect", "--host", "\n198.18.0.77\n", "--port", "9"]);
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
        assert_eq!(
            text(&out.stdout),
            "no established TCP flows to \\u{a}198.18.0.77\\u{a}\n"
        );
    }
}

/// Every list-valued option refuses a control character or line separator, before anything
/// is written: exit 2, one line naming the option, the value escaped. (`--tuned-include`
/// took "network-throughput\n", trimmed it for the name check and wrote a blank line after
/// `include=`; the kubelet list trimmed its newline away.)
#[test]
fn list_options_refuse_control_characters() {
    let out_dir = tempfile::tempdir().expect("tempdir");
    let bad = [
        "network-throughput\n",
        "a\tb",
        "\u{1b}[31m",
        "x\u{2028}y",
        "net.ipv4.*\n",
        "\rnet.core.*",
    ];
    for (option, format) in [("--tuned-include", "tuned"), ("--allowed-unsafe-sysctls", "k8s")] {
        for value in bad {
            let target = out_dir.path().join("p");
            let out = tcptune()
                .args(["advise", "--os", "linux", "--rtt", "50ms", "--bandwidth", "1gbit"])
                .args(["--format", format, option, value, "--output"])
                .arg(&target)
                .output()
                .expect("run");
            let err = refused(&out);
            assert!(
                err.starts_with(&format!("tcptune: {option}: \"")),
                "{option} {value:?}: {err}"
            );
            assert!(
                !err.chars().any(|c| c.is_control() && c != '\n') && err.lines().count() == 1,
                "{option} {value:?}: {err:?}"
            );
            assert!(
                out.stdout.is_empty() && !target.exists(),
                "{option} {value:?}: nothing written"
            );
        }
    }
    // Lists as they are meant still pass.
    let out = run(&[
        "advise",
        "--os",
        "linux",
        "--rtt",
        "50ms",
        "--bandwidth",
        "1gbit",
        "--format",
        "tuned",
        "--tuned-include",
        "network-throughput, balanced",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(text(&out.stdout).contains("include=network-throughput, balanced\n"));
    let out = run(&[
        "advise",
        "--os",
        "linux",
        "--rtt",
        "50ms",
        "--bandwidth",
        "1gbit",
        "--format",
        "k8s",
        "--allowed-unsafe-sysctls",
        "net.ipv4.tcp_congestion_control, net.core.*",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
}

// ---------------------------------------------------------------- text from other processes

/// A process that names itself `ESC[31m` newline `kernel.x=` (comm, as prctl(PR_SET_NAME) or a
/// write of /proc/self/comm sets it; `exec -a` changes argv only) and holds a loopback TCP
/// connection: inspect names it, escaped, in JSON and in the table; no ESC reaches the
/// terminal and no line starts with `kernel.x=`. The helper is perl (perl-base is Essential
/// on Debian): one syswrite, where bash's printf flushes at the newline and writes twice.
#[test]
#[cfg(target_os = "linux")]
fn another_process_name_reaches_inspect_escaped() {
    use std::io::Read as _;
    const HELPER: &str = r#"
        use IO::Socket::INET;
        open(my $comm, ">", "/proc/self/comm") or die "comm: $!";
        syswrite($comm, "\e[31m\nkernel.x=") or die "comm: $!";
        close($comm);
        my $s = IO::Socket::INET->new(PeerAddr => "127.0.0.1", PeerPort => $ARGV[0]) or die "connect: $!";
        print $s "\0" x 100000 or die "send: $!";
        $s->flush;
        sysread($s, my $end, 1);
    "#;
    /// The helper, killed and reaped however the test ends.
    struct Helper(std::process::Child);
    impl Drop for Helper {
        fn drop(&mut self) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("addr").port().to_string();
    let helper = Helper(
        std::process::Command::new("perl")
            .args(["-e", HELPER, &port])
            .stdin(std::process::Stdio::null())
            .spawn()
            .expect("perl (perl-base)"),
    );
    let (mut server, _) = listener.accept().expect("accept");
    let mut got = vec![0u8; 100_000];
    server.read_exact(&mut got).expect("the helper's bytes");
    let comm = std::fs::read(format!("/proc/{}/comm", helper.0.id())).expect("its comm");
    assert_eq!(comm, b"\x1b[31m\nkernel.x=\n", "the helper named itself");

    let json = run(&["inspect", "--port", &port, "--format", "json"]);
    let table = run(&["inspect", "--port", &port, "--format", "table"]);
    for out in [&json, &table] {
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
        let shown = text(&out.stdout);
        assert!(!shown.contains('\u{1b}'), "{shown:?}");
        assert!(
            !shown.lines().any(|l| l.trim_start().starts_with("kernel.x=")),
            "{shown}"
        );
    }
    let v: serde_json::Value = serde_json::from_slice(&json.stdout).expect("json");
    let named: Vec<&serde_json::Value> = v["flows"]
        .as_array()
        .expect("flows")
        .iter()
        .filter(|f| f["process"]["pid"] == helper.0.id())
        .collect();
    assert_eq!(named.len(), 1, "the helper's end: {v}");
    assert_eq!(named[0]["process"]["name"], "\\u{1b}[31m\\u{a}kernel.x=", "{v}");
    drop(server);
}

// ---------------------------------------------------------------- helpers

/// A TOML basic string holding `s` exactly: control characters as \uXXXX escapes.
fn toml_str(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if c.is_control() => out.push_str(&format!("\\u{:04x}", u32::from(c))),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

const FREEBSD_HEAD: &str = "name = \"evil\"\nos = \"freebsd\"\ndescription = \"d\"\n";
const LINUX_HEAD: &str = "name = \"evil\"\nos = \"linux\"\ndescription = \"d\"\n";

/// `tcptune --os freebsd` against the fake sysctl(8) over `tree`, state under `state`.
fn bsd(tree: &Path, state: &Path) -> Command {
    let mut c = tcptune();
    c.env("FAKE_SYSCTL_DIR", tree)
        .args(["--os", "freebsd", "--sysctl-cmd"])
        .arg(fixture("fake-sysctl"))
        .arg("--state-dir")
        .arg(state);
    c
}

// ---------------------------------------------------------------- profiles: boot stage

#[test]
fn boot_stage_profile_entries_cannot_reach_loader_conf() {
    let sys = bsd_tree(&[]);
    let tmp = tempfile::tempdir().expect("tempdir");
    let root = tmp.path().join("root");
    std::fs::create_dir_all(root.join("boot")).expect("mkdir");
    std::fs::write(root.join("boot/loader.conf"), "autoboot_delay=\"3\"\n").expect("write");
    let before = (tree_contents(sys.path()), tree_contents(&root));
    let attacks = [
        ("init_path", "\"/tmp/evil\""),
        ("kern.securelevel", "\"-1\""),
        // A newline in the value: a third line in loader.conf.
        ("cc_htcp_load", "\"YES\"\ninit_path=\"/tmp/evil\""),
        ("cc_htcp_load", "\"YES\" init_path=\"/tmp/evil\""),
        ("net.inet.tcp.tcbhashsize", "\"1\"\nkern.securelevel=\"-1\""),
    ];
    for (key, value) in attacks {
        let p = tmp.path().join("evil.toml");
        std::fs::write(
            &p,
            format!("{FREEBSD_HEAD}[[setting]]\nkey = {key:?}\nvalue = {value:?}\nstage = \"boot\"\nreason = \"r\"\n"),
        )
        .expect("write");
        let out = bsd(sys.path(), &tmp.path().join("state"))
            .args([
                "apply",
                "--rtt",
                "150ms",
                "--bandwidth",
                "500mbit",
                "--persist",
                "--persist-root",
            ])
            .arg(&root)
            .arg("--profile")
            .arg(&p)
            .output()
            .expect("run");
        let err = refused(&out);
        assert!(
            err.contains("boot-time tunable") || err.contains("control character") || err.contains("expected"),
            "{key}={value:?}: {err}"
        );
        assert_eq!(
            (tree_contents(sys.path()), tree_contents(&root)),
            before,
            "{key}: something was written"
        );
        assert!(!tmp.path().join("state").exists());
    }
}

// ---------------------------------------------------------------- profiles: output injection

#[test]
fn profile_text_cannot_inject_lines_or_shell_commands() {
    let dir = linux_tree(&[]);
    let tmp = tempfile::tempdir().expect("tempdir");
    let pwned = tmp.path().join("pwned");
    let run_advise = |profile: &Path, format: &str| {
        tcptune()
            .args([
                "advise",
                "--clean-path",
                "--os",
                "linux",
                "--rtt",
                "150ms",
                "--bandwidth",
                "500mbit",
                "--format",
                format,
            ])
            .arg("--profile")
            .arg(profile)
            .arg("--sysctl-dir")
            .arg(dir.path())
            .output()
            .expect("run")
    };
    // A newline in a reason or note: a live kernel.core_pattern line in --format sysctl.
    // Any control character is refused at load, in every field.
    let p = tmp.path().join("nl.toml");
    for (field, text) in [
        ("reason", "r\nkernel.core_pattern = |/tmp/x"),
        ("note", "n\nkernel.core_pattern = |/tmp/x"),
        ("reason", "r\r\u{1b}[1A\u{1b}[2K"),
    ] {
        let extra = if field == "note" {
            format!("note = {text:?}\n")
        } else {
            String::new()
        };
        let reason = if field == "reason" { text } else { "r" };
        std::fs::write(
            &p,
            format!(
                "{LINUX_HEAD}[[setting]]\nkey = \"net.core.rmem_max\"\nvalue = \"{{buffer}}\"\nreason = {}\n{extra}",
                toml_str(reason)
            ),
        )
        .expect("write");
        for format in ["sysctl", "shell"] {
            let err = refused(&run_advise(&p, format));
            assert!(err.contains("control character"), "{err}");
        }
    }
    // Shell metacharacters in values are refused too (not sysctl values) ...
    for value in [
        "1\"; touch PWNED; echo \"",
        "$(touch PWNED)",
        "`touch PWNED`",
        "1'; touch PWNED; '",
    ] {
        std::fs::write(
            &p,
            format!(
                "{LINUX_HEAD}[[setting]]\nkey = \"net.core.rmem_max\"\nvalue = {:?}\nreason = \"r\"\n",
                value.replace("PWNED", pwned.to_str().expect("utf8"))
            ),
        )
        .expect("write");
        refused(&run_advise(&p, "shell"));
    }
    // ... and what is allowed in prose stays prose: run the shell script with a fake
    // sysctl that logs its arguments, and the sysctl file must hold only settings.
    let reason = format!(
        "'; touch {0}; echo '\" $(touch {0}) `touch {0}` kernel.core_pattern = |/x",
        pwned.display()
    );
    std::fs::write(
        &p,
        format!(
            "{LINUX_HEAD}[[setting]]\nkey = \"net.ipv4.tcp_rmem\"\nvalue = \"4096 131072 {{buffer}}\"\nreason = {reason:?}\nnote = {reason:?}\n"
        ),
    )
    .expect("write");
    let out = run_advise(&p, "sysctl");
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let conf = text(&out.stdout);
    for line in conf.lines() {
        let t = line.trim();
        assert!(
            t.is_empty() || t.starts_with('#') || t == "net.ipv4.tcp_rmem = 4096 131072 20643840",
            "a live line that is not the setting: {line:?}"
        );
    }
    assert!(conf.contains("\nnet.ipv4.tcp_rmem = 4096 131072 20643840\n"), "{conf}");
    let out = run_advise(&p, "shell");
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let script = tmp.path().join("advice.sh");
    std::fs::write(&script, &out.stdout).expect("write");
    let bin = tmp.path().join("bin");
    std::fs::create_dir_all(&bin).expect("mkdir");
    let log = tmp.path().join("sysctl.log");
    let fake = bin.join("sysctl");
    super::write_script(
        &fake,
        &format!(
            "#!/bin/sh\nfor a in \"$@\"; do printf '%s\\n' \"$a\" >> {}; done\n",
            log.display()
        ),
    );
    let path = format!("{}:/usr/bin:/bin", bin.display());
    let ran = std::process::Command::new("sh")
        .arg(&script)
        .env("PATH", &path)
        .output()
        .expect("sh");
    assert!(ran.status.success(), "{}", text(&ran.stderr));
    assert!(!pwned.exists(), "the advice ran a command:\n{}", text(&out.stdout));
    assert_eq!(
        std::fs::read_to_string(&log).expect("log"),
        "-w\nnet.ipv4.tcp_rmem=4096 131072 20643840\n"
    );
    let n = std::process::Command::new("sh")
        .arg("-n")
        .arg(&script)
        .status()
        .expect("sh -n");
    assert!(n.success());
}

// ---------------------------------------------------------------- crashes and unbounded work

#[test]
fn a_profile_expression_nested_10000_deep_is_an_error_not_a_crash() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let p = tmp.path().join("deep.toml");
    for expr in [
        format!("{}1{}", "(".repeat(10_000), ")".repeat(10_000)),
        format!("{}1", "-".repeat(10_000)),
        vec!["1"; 10_000].join("+"),
    ] {
        std::fs::write(
            &p,
            format!("{LINUX_HEAD}[[setting]]\nkey = \"net.core.rmem_max\"\nvalue = \"{{{expr}}}\"\nreason = \"r\"\n"),
        )
        .expect("write");
        let out = run(&[
            "advise",
            "--os",
            "linux",
            "--profile",
            p.to_str().expect("utf8"),
            "--rtt",
            "150ms",
            "--bandwidth",
            "500mbit",
        ]);
        let err = refused(&out);
        assert!(
            err.contains("nested deeper than 64") || err.contains("too long"),
            "{err}"
        );
        assert!(err.len() < 600, "{err}");
    }
}

/// Run with a deadline: a hang is a failure, not a stuck test suite.
fn run_within(mut c: std::process::Command, secs: u64) -> Output {
    let mut child = c
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("spawn");
    let stdin = child.stdin.take();
    let t = Instant::now();
    while child.try_wait().expect("wait").is_none() {
        if t.elapsed() > Duration::from_secs(secs) {
            child.kill().expect("kill");
            panic!("still running after {secs} s");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    drop(stdin);
    child.wait_with_output().expect("output")
}

fn std_tcptune() -> std::process::Command {
    let mut c = std::process::Command::new(assert_cmd::cargo::cargo_bin("tcptune"));
    c.env_remove("NO_COLOR");
    c
}

#[test]
fn fifos_devices_and_directories_are_refused_at_once() {
    let sys = linux_tree(&[]);
    let tmp = tempfile::tempdir().expect("tempdir");
    let fifo = tmp.path().join("fifo");
    let ok = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .expect("mkfifo");
    assert!(ok.success());
    let before = tree_contents(sys.path());
    for target in [fifo.as_path(), Path::new("/dev/zero"), tmp.path()] {
        for args in [vec!["apply", "--dry-run"], vec!["apply"]] {
            let mut c = std_tcptune();
            c.arg("--sysctl-dir")
                .arg(sys.path())
                .arg("--state-dir")
                .arg(tmp.path().join("state"));
            c.args(&args).arg(target);
            let err = refused(&run_within(c, 10));
            assert!(err.contains("not a regular file"), "{err}");
        }
        let mut c = std_tcptune();
        c.args([
            "advise",
            "--os",
            "linux",
            "--rtt",
            "150ms",
            "--bandwidth",
            "500mbit",
            "--profile",
        ])
        .arg(target);
        let err = refused(&run_within(c, 10));
        assert!(err.contains("not a regular file"), "{err}");
    }
    assert_eq!(tree_contents(sys.path()), before);
    assert!(!tmp.path().join("state").exists());
}

#[test]
fn stdin_that_never_closes_is_an_error_after_10_s_of_silence() {
    let sys = linux_tree(&[]);
    let tmp = tempfile::tempdir().expect("tempdir");
    let before = tree_contents(sys.path());
    let mut c = std_tcptune();
    c.arg("--sysctl-dir")
        .arg(sys.path())
        .arg("--state-dir")
        .arg(tmp.path().join("state"));
    c.args(["apply", "-"]);
    // run_within holds the write end open and silent until the process ends.
    let t = Instant::now();
    let err = refused(&run_within(c, 60));
    assert!(err.contains("stdin: no input within 10 s"), "{err}");
    assert!(t.elapsed() >= Duration::from_secs(9), "{:?}", t.elapsed());
    assert_eq!(tree_contents(sys.path()), before);
    assert!(!tmp.path().join("state").exists());
}

#[test]
fn a_file_of_60000_bad_lines_gives_a_short_error() {
    let sys = linux_tree(&[]);
    let tmp = tempfile::tempdir().expect("tempdir");
    let f = tmp.path().join("bad.conf");
    let body: String = (0..60_000).map(|i| format!("k.x{i}=1\n")).collect();
    std::fs::write(&f, body).expect("write");
    let out = tcptune()
        .arg("--sysctl-dir")
        .arg(sys.path())
        .args(["apply", "--dry-run"])
        .arg(&f)
        .output()
        .expect("run");
    let err = refused(&out);
    assert!(err.len() < 4096, "{} bytes", err.len());
    assert!(err.contains("and 59995 more"), "{err}");
    assert!(err.contains("bad.conf:1: k.x0 is outside"), "{err}");
}

#[test]
fn errors_do_not_print_the_lines_of_a_file_that_is_not_a_sysctl_file() {
    let sys = linux_tree(&[]);
    let tmp = tempfile::tempdir().expect("tempdir");
    let f = tmp.path().join("shadow");
    std::fs::write(
        &f,
        "root:$6$salt$SECRETHASHSECRETHASH:19000:0:99999:7:::\ndaemon:*:19000:0:99999:7:::\nAWS_SECRET_KEY=SECRETVALUE\n",
    )
    .expect("write");
    let out = tcptune()
        .arg("--sysctl-dir")
        .arg(sys.path())
        .args(["apply", "--dry-run"])
        .arg(&f)
        .output()
        .expect("run");
    let err = refused(&out);
    // A key-shaped name before '=' may show (cut to 40 characters); what follows never.
    assert!(
        !err.contains("SECRETHASH")
            && !err.contains("SECRETVALUE")
            && !err.contains("root:")
            && !err.contains("daemon"),
        "{err}"
    );
}

#[test]
fn ten_thousand_settings_take_seconds_not_a_minute() {
    let sys = linux_tree(&[]);
    let tmp = tempfile::tempdir().expect("tempdir");
    let p = tmp.path().join("big.toml");
    let mut body = LINUX_HEAD.to_string();
    let mut conf = String::new();
    for i in 0..10_000 {
        body.push_str(&format!(
            "[[setting]]\nkey = \"net.ipv4.conf.k{i}.x\"\nvalue = \"{{buffer}}\"\nreason = \"r {{bdp:iec}}\"\n"
        ));
        conf.push_str(&format!("net.ipv4.conf.k{i}.x = 1\n"));
    }
    std::fs::write(&p, body).expect("write");
    let t = Instant::now();
    let out = tcptune()
        .args([
            "advise",
            "--os",
            "linux",
            "--rtt",
            "150ms",
            "--bandwidth",
            "500mbit",
            "--format",
            "json",
            "--profile",
        ])
        .arg(&p)
        .arg("--sysctl-dir")
        .arg(sys.path())
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let advise = t.elapsed();
    // Seconds (1.5 to 4.6 here), with room for this VM's stalls. A debug build took 17 s for
    // this when the profile's line lookup was quadratic: profile.rs's own test catches that.
    assert!(advise < Duration::from_secs(30), "{advise:?}");
    let f = tmp.path().join("big.conf");
    std::fs::write(&f, conf).expect("write");
    let t = Instant::now();
    let out = tcptune()
        .arg("--sysctl-dir")
        .arg(sys.path())
        .args(["apply", "--dry-run"])
        .arg(&f)
        .output()
        .expect("run");
    let err = refused(&out); // the keys do not exist in the fake tree
    assert!(err.contains("and 9995 more"), "{err}");
    assert!(t.elapsed() < Duration::from_secs(10), "{:?}", t.elapsed());
}
