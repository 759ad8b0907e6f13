//! Hostile and absurd input: each attack from the "Trust" review as input, the refusal
//! (exit 2, one short line, no panic) and an unchanged tree or file as the assertion.

use std::path::Path;
use std::process::Output;

use super::{linux_tree, tcptune};

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
