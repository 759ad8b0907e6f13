//! Units as people write them (issue 36, point 2): every option that takes a rate reads a
//! lowercase b as bits and refuses bytes with one hint; every option that takes a duration
//! takes one grammar (ms, s, m, h and their long forms) and says a bad one in one wording.

use std::process::Output;

use serde_json::Value;
use tempfile::TempDir;

use super::tcptune;

/// How a run shows that the value was accepted: it exits 0, or it fails later, for a reason
/// that is not the value (a conflict or a missing option clap checks after the values).
#[derive(Clone, Copy)]
enum Then {
    Succeeds,
    /// check: 0, or 1 for a finding (the fake tree's defaults give some).
    Checks,
    FailsWith(&'static str),
}

/// One option that takes a value: its command line with `{}` where the value goes.
struct Opt {
    name: &'static str,
    args: &'static [&'static str],
    then: Then,
}

const DURATIONS: &[Opt] = &[
    Opt {
        name: "--rtt",
        args: &["calc", "--bandwidth", "1gbit", "--format", "json", "--rtt", "{}"],
        then: Then::Succeeds,
    },
    Opt {
        name: "--rtt",
        args: &["advise", "--bandwidth", "500mbit", "--format", "json", "--rtt", "{}"],
        then: Then::Succeeds,
    },
    Opt {
        name: "--interval",
        args: &[
            "advise",
            "--rtt",
            "150ms",
            "--bandwidth",
            "500mbit",
            "--format",
            "json",
            "--interval",
            "{}",
        ],
        then: Then::Succeeds,
    },
    Opt {
        name: "--timeout",
        args: &[
            "advise",
            "--rtt",
            "150ms",
            "--bandwidth",
            "500mbit",
            "--format",
            "json",
            "--timeout",
            "{}",
        ],
        then: Then::Succeeds,
    },
    Opt {
        name: "--test-time",
        args: &[
            "advise",
            "--rtt",
            "150ms",
            "--bandwidth",
            "500mbit",
            "--format",
            "json",
            "--test-time",
            "{}",
        ],
        then: Then::Succeeds,
    },
    Opt {
        name: "--for",
        args: &["apply", "--persist", "--for", "{}"],
        then: Then::FailsWith("cannot be used with"),
    },
    Opt {
        name: "--wait",
        args: &["revert", "--dry-run", "--state-dir", "{state}", "--wait", "{}"],
        then: Then::Succeeds,
    },
    Opt {
        name: "--wait",
        args: &["apply", "--persist", "--for", "1h", "--wait", "{}"],
        then: Then::FailsWith("cannot be used with"),
    },
    Opt {
        name: "--lifetime",
        args: &["peer", "--bind", "127.0.0.1", "--lifetime", "{}"],
        then: Then::Succeeds,
    },
    Opt {
        name: "--time",
        args: &["verify", "--time", "{}"],
        then: Then::FailsWith("required arguments were not provided: --host"),
    },
];

const RATES: &[Opt] = &[
    Opt {
        name: "--bandwidth",
        args: &["calc", "--rtt", "25ms", "--format", "json", "--bandwidth", "{}"],
        then: Then::Succeeds,
    },
    Opt {
        name: "--bandwidth",
        args: &["advise", "--rtt", "150ms", "--format", "json", "--bandwidth", "{}"],
        then: Then::Succeeds,
    },
    Opt {
        name: "--bandwidth",
        args: &["apply", "--persist", "--for", "1h", "--bandwidth", "{}"],
        then: Then::FailsWith("cannot be used with"),
    },
    Opt {
        name: "--bandwidth",
        args: &[
            "check",
            "--sysctl-dir",
            "{state}",
            "--host",
            "peer.example",
            "--fake-prober",
            "rtt=50ms",
            "--format",
            "json",
            "--bandwidth",
            "{}",
        ],
        then: Then::Checks,
    },
    Opt {
        name: "--bandwidth",
        args: &["verify", "--bandwidth", "{}"],
        then: Then::FailsWith("required arguments were not provided: --host"),
    },
];

fn run(opt: &Opt, value: &str) -> Output {
    let state = TempDir::new().expect("tempdir");
    let args: Vec<String> = opt
        .args
        .iter()
        .map(|a| match *a {
            "{}" => value.to_string(),
            "{state}" => state.path().display().to_string(),
            a => a.to_string(),
        })
        .collect();
    // stdin is empty: peer exits when it ends, as when its SSH session is over.
    tcptune().args(&args).write_stdin("").output().expect("run")
}

fn shown(opt: &Opt, value: &str) -> String {
    format!("{} {value:?}", opt.args.join(" ").replace("{}", ""))
}

fn assert_accepted(opt: &Opt, value: &str) -> Output {
    let out = run(opt, value);
    let err = String::from_utf8_lossy(&out.stderr);
    match opt.then {
        Then::Succeeds => assert!(out.status.success(), "{}: {err}", shown(opt, value)),
        Then::Checks => assert!(
            matches!(out.status.code(), Some(0 | 1)) && !out.stdout.is_empty(),
            "{}: {err}",
            shown(opt, value)
        ),
        Then::FailsWith(why) => assert!(err.contains(why), "{}: want {why:?}, got {err}", shown(opt, value)),
    }
    out
}

/// The one line a refused value gets, without the `tcptune: --OPT: ` that names the option.
fn refusal(opt: &Opt, value: &str) -> String {
    let out = run(opt, value);
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(2), "{}: {err}", shown(opt, value));
    assert_eq!(err.lines().count(), 1, "{}: one line: {err}", shown(opt, value));
    let prefix = format!("tcptune: {}: ", opt.name);
    err.strip_prefix(&prefix)
        .unwrap_or_else(|| panic!("{}: {err:?} starts {prefix:?}", shown(opt, value)))
        .trim_end()
        .to_string()
}

/// Spellings inside every option's range (--test-time and --time: at most 60 s; --for,
/// --lifetime: at least 1 s).
const GOOD_DURATIONS: &[&str] = &[
    "2s",
    "2 s",
    "2sec",
    "2 secs",
    "2 seconds",
    "2000ms",
    "2000 msec",
    "1500 ms",
    "1m",
    "1 min",
    "0.5m",
    "0.5 minutes",
    "0.0005h",
    "0.0005 hours",
    "1s500ms",
    "1s 500ms",
    "2000000us",
    "2000000µs",
];

/// Spellings the grammar refuses, whatever the option.
const BAD_DURATIONS: &[&str] = &[
    "1h30", "10M", "5MS", "1w", "10 m m", "s", "1.5.5s", "10  s", "0s", "-5s",
];

#[test]
fn every_duration_option_takes_the_same_spellings() {
    for opt in DURATIONS {
        for v in GOOD_DURATIONS {
            assert_accepted(opt, v);
        }
    }
    // The issue's own: --test-time 1m was "unknown unit m", --for 10m worked.
    let test_time = DURATIONS.iter().find(|o| o.name == "--test-time").expect("--test-time");
    assert_accepted(test_time, "1m");
    let for_ = DURATIONS.iter().find(|o| o.name == "--for").expect("--for");
    assert_accepted(for_, "1h30m");
    assert_accepted(for_, "7 days");
    // The value itself, exactly: calc prints the RTT it was given, in ms.
    for (v, ms) in [
        ("1m", 60_000.0),
        ("150 ms", 150.0),
        ("0.5 min", 30_000.0),
        ("250us", 0.25),
    ] {
        let out = assert_accepted(&DURATIONS[0], v);
        let json: Value = serde_json::from_slice(&out.stdout).expect("calc json");
        assert_eq!(json["rtt_ms"], ms, "{v}");
    }
}

#[test]
fn every_duration_option_refuses_a_bad_one_in_the_same_words() {
    let mut bad: Vec<&str> = BAD_DURATIONS.to_vec();
    // A bare number: --wait's whole one is seconds (its documented form since it took SECS),
    // so "10" is left out for it.
    bad.extend(["10", "0.5"]);
    for v in bad {
        let mut said: Option<(String, &str)> = None;
        for opt in DURATIONS {
            if opt.name == "--wait" && v == "10" {
                continue;
            }
            let line = refusal(opt, v);
            assert!(
                line.starts_with(&format!("invalid duration {v:?}: ")),
                "{}: {line}",
                opt.name
            );
            match &said {
                None => said = Some((line, opt.name)),
                Some((first, by)) => assert_eq!(&line, first, "{} and {by} differ for {v:?}", opt.name),
            }
        }
    }
    // The example in every refusal shows the units the grammar takes.
    let line = refusal(&DURATIONS[0], "10");
    assert!(
        line.ends_with("a unit is required; expected e.g. 150ms, 1.5s, 90s, 10m, 2h"),
        "{line}"
    );
}

#[test]
fn a_duration_out_of_its_range_is_said_in_one_wording() {
    let cases: &[(&str, &str, &str)] = &[
        ("--test-time", "61s", "expected 1s to 60s"),
        ("--test-time", "0.5s", "expected 1s to 60s"),
        ("--time", "2m", "expected at most 60s"),
        ("--for", "500ms", "expected 1s to 7d"),
        ("--for", "8d", "expected 1s to 7d"),
        ("--lifetime", "2h", "expected 1s to 1h"),
    ];
    for &(name, v, want) in cases {
        let opt = DURATIONS.iter().find(|o| o.name == name).expect(name);
        let line = refusal(opt, v);
        assert_eq!(line, format!("invalid duration {v:?}: out of range; {want}"), "{name}");
    }
}

#[test]
fn wait_keeps_its_bare_seconds() {
    let wait = DURATIONS.iter().find(|o| o.name == "--wait").expect("--wait");
    for v in ["0", "10", "2s", "1m"] {
        assert_accepted(wait, v);
    }
}

#[test]
fn every_rate_option_reads_a_lowercase_b_as_bits() {
    for opt in RATES {
        for v in ["100Mb", "1.5Gb", "100Mbit", "100Mbps", "100mbps", "1Gb/s", "100 Mb/s"] {
            assert_accepted(opt, v);
        }
    }
    for (v, bps) in [
        ("100Mb", 100_000_000u64),
        ("1.5Gb", 1_500_000_000),
        ("100mbps", 100_000_000),
        ("1Gb/s", 1_000_000_000),
        ("10kb", 10_000),
    ] {
        let out = assert_accepted(&RATES[0], v);
        let json: Value = serde_json::from_slice(&out.stdout).expect("calc json");
        assert_eq!(json["bandwidth_bps"], bps, "{v}");
    }
}

#[test]
fn every_rate_option_refuses_bytes_with_the_one_hint() {
    for v in ["100MB", "100MB/s", "100MiB", "1GiB", "100MBps", "100 MB/s"] {
        let mut said: Option<String> = None;
        for opt in RATES {
            let line = refusal(opt, v);
            assert!(
                line.starts_with(&format!(
                    "invalid rate {v:?}: rates are in bits per second, not bytes: write e.g. 500mbit; expected e.g. "
                )),
                "{line}"
            );
            match &said {
                None => said = Some(line),
                Some(first) => assert_eq!(&line, first, "{v}"),
            }
        }
    }
}
