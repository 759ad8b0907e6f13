//! Measurement against a real peer, in the lab ([`crate::lab_support`]). Root only; CI runs as
//! root. Addresses: 198.18.0.0/15 only.

use std::process::Command as Std;
use std::time::{Duration, Instant};

use assert_cmd::cargo::cargo_bin;
use serde_json::Value;

use crate::lab_support::{HOST_LOCK, LineStats, json, lock_host};
pub use crate::lab_support::{Lab, quiet_host};

/// `lab.sh cross NAME ACTION ARGS...` on `lab`'s neighbours (start N [--onoff ON:OFF], stop).
fn cross(lab: &Lab, action: &str, args: &[&str]) {
    let ok = Std::new("bash")
        .arg(crate::lab_support::repo().join("lab/lab.sh"))
        .args(["cross", &lab.name, action])
        .args(args)
        .status()
        .expect("lab.sh cross");
    assert!(ok.success(), "lab.sh cross {action}");
}

/// One lab for the whole measurement story, to keep CI time down.
#[test]
#[cfg_attr(not(feature = "privileged-tests"), ignore = "privileged: needs root")]
fn advise_host_measures_the_lab_path() {
    let lab = Lab::up("m", "50ms");
    let b = lab.addr_b.clone();

    // ICMP: min RTT within 2 % of the true 50 ms.
    let v = lab.advise_json(&b, &[]);
    let rtt = v["rtt_ms"].as_f64().expect("rtt_ms");
    assert!((rtt - 50.0).abs() <= 1.0, "ICMP RTT {rtt} ms vs 50 ms: {v:#}");
    let m = &v["hosts"][0]["measurement"];
    assert_eq!(m["rtt"]["method"]["kind"], "icmp", "{m:#}");
    assert_eq!(m["rtt"]["received"].as_u64(), Some(10));
    assert_eq!(m["link"]["interface"], "wan0", "the kernel's route lookup: {m:#}");
    // A TUN (or veth) does not report its speed; packet trains measured the path (the
    // unlimited line is about as fast as this host sends: a lower bound), and with no TCP test
    // (no tcptune serve there) their reading sizes the buffers: measured, never an assumed rate.
    let trains = m["capacity"]["bps"].as_u64().expect("trains");
    assert!(trains > 0, "{m:#}");
    assert_eq!(v["bandwidth_source"], "measured", "{v:#}");
    assert_eq!(v["bandwidth_bps"].as_u64(), Some(trains), "{v:#}");
    let bdp = v["bdp_bytes"].as_f64().expect("bdp");
    let bps = v["bandwidth_bps"].as_f64().expect("bps");
    assert!((bdp - bps / 8.0 * rtt / 1000.0).abs() < 1.0, "{bdp} vs {bps} × {rtt}");

    // --bandwidth always wins over the link.
    let v = lab.advise_json(&b, &["--bandwidth", "500mbit"]);
    assert_eq!(v["bandwidth_bps"].as_u64(), Some(500_000_000));
    assert_eq!(v["bandwidth_source"], "given");

    // ICMP ignored by the peer: TCP connect timing (SYN → RST on a closed port) still measures it.
    lab.sh(&lab.ns_b, "sysctl -qw net.ipv4.icmp_echo_ignore_all=1");
    let v = lab.advise_json(&b, &["--probes", "5"]);
    let rtt = v["rtt_ms"].as_f64().expect("rtt_ms");
    assert!((rtt - 50.0).abs() <= 1.0, "TCP RTT {rtt} ms vs 50 ms: {v:#}");
    assert_eq!(
        v["hosts"][0]["measurement"]["rtt"]["method"]["kind"], "tcp-connect",
        "{v:#}"
    );
    // No ICMP, no packet trains: the rate is assumed again, and marked so.
    assert!(v["hosts"][0]["measurement"]["capacity"].is_null(), "{v:#}");
    assert_eq!(v["bandwidth_source"], "assumed");

    // A routed address where nobody answers: a clear error and exit 4, within the timeout.
    lab.sh(&lab.ns_a, "ip route add 198.19.0.0/16 dev wan0");
    let t = Instant::now();
    let out = lab.tcptune(
        &lab.ns_a,
        &["advise", "--host", "198.19.0.9", "--probes", "3", "--format", "json"],
    );
    let took = t.elapsed();
    assert_eq!(out.status.code(), Some(4), "{}", String::from_utf8_lossy(&out.stderr));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("198.19.0.9") && err.contains("--rtt"), "{err}");
    assert!(took < Duration::from_secs(15), "took {took:?}");

    // Two hosts, probed together: advice for the larger BDP, each host's numbers shown.
    let v = lab.advise_json(&b, &["--host", "127.0.0.1", "--bandwidth", "1gbit"]);
    assert_eq!(v["hosts"].as_array().expect("hosts").len(), 2);
    assert_eq!(v["host"], b.as_str());
}

/// A server in the far namespace for the path test, killed with the returned guard.
struct Server(std::process::Child);

impl Server {
    /// Starts `cmd` in namespace `ns` and waits until something listens on `port` there
    /// (read with ss: a test connection would be `iperf3 -s -1`'s one client).
    fn start(ns: &str, cmd: &[&str], port: u16) -> Self {
        let mut child = Std::new("ip")
            .args(["netns", "exec", ns])
            .args(cmd)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("server");
        let filter = format!("sport = :{port}");
        for _ in 0..100 {
            let out = Std::new("ip")
                .args(["netns", "exec", ns, "ss", "-Hltn", &filter])
                .output()
                .expect("ss");
            if !out.stdout.is_empty() {
                return Self(child);
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = child.kill();
        let _ = child.wait();
        panic!("{cmd:?} did not listen on port {port}");
    }

    /// `tcptune serve` on `addr` in `ns`.
    fn tcptune(ns: &str, addr: &str) -> Self {
        Self::start(
            ns,
            &[cargo_bin("tcptune").to_str().expect("utf8"), "serve", "--bind", addr],
            5301,
        )
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The TCP path test against `tcptune serve` on a 40 ms / 50 Mbit/s path with a deep queue:
/// the packet trains and the TCP delivery rate agree on 50 Mbit/s, the far end reports its
/// window share from a real flow, and a clean path with a deep queue gets CUBIC. Without a
/// server the trains alone size the buffers. An iperf3 server gives the same test with --iperf3.
#[test]
#[cfg_attr(not(feature = "privileged-tests"), ignore = "privileged: needs root")]
fn advise_host_measures_the_bottleneck_rate() {
    let lab = Lab::up_with_rate("c", "40ms", Some("50mbit"));
    let b = lab.addr_b.clone();
    let t = Instant::now();
    let v = lab.advise_json(&b, &[]);
    let took = t.elapsed();
    let c = &v["hosts"][0]["measurement"]["capacity"];
    let trains = c["bps"].as_f64().expect("trains");
    assert!(
        (trains - 50e6).abs() <= 0.1 * 50e6,
        "{trains} bit/s vs 50 Mbit/s: {c:#}"
    );
    assert_eq!(c["packet_bytes"], 1500, "{c:#}");
    assert_eq!(c["sender_limited"], false, "{c:#}");
    // No tcptune serve there: the trains' reading sizes the buffers (never an assumed rate),
    // and the class is not measured.
    assert_eq!(v["bandwidth_source"], "measured", "{v:#}");
    let bps = v["bandwidth_bps"].as_f64().expect("bps");
    assert!((bps - 50e6).abs() <= 0.1 * 50e6, "{bps} bit/s sizes the advice: {v:#}");
    assert_eq!(v["decision"]["class"], "unmeasured", "{v:#}");
    let notes = v["notes"].to_string();
    assert!(notes.contains("bottleneck rate from packet trains"), "{notes}");
    assert!(
        notes.contains("no TCP path test: no tcptune serve on 198.18.0.2:5301"),
        "{notes}"
    );
    // 10 pings, 5 trains, and a refused connect: well under two seconds at 40 ms (0.6 s here);
    // room for this VM's stalls.
    assert!(took < Duration::from_secs(5), "took {took:?}");

    let serve = Server::tcptune(&lab.ns_b, &b);
    let v = lab.advise_json(&b, &["--test-time", "4s"]);
    drop(serve);
    let test = &v["evidence"]["test"];
    assert_eq!(test["peer"], "tcptune", "{test:#}");
    let rate = test["delivery_rate_bps"].as_f64().expect("delivery rate");
    assert!(
        (rate - 50e6).abs() <= 0.1 * 50e6,
        "TCP delivery rate {rate} vs 50 Mbit/s: {test:#}"
    );
    assert_eq!(v["bandwidth_source"], "measured", "{v:#}");
    let bps = v["bandwidth_bps"].as_f64().expect("bps");
    assert!((bps - 50e6).abs() <= 0.1 * 50e6, "{bps}: {v:#}");
    // The far end's window share, read from the test's own flow.
    let share = test["window_share"].as_f64().expect("the receiver's window share");
    assert!(share > 0.2 && share <= 1.0, "{share}: {test:#}");
    // A share only ever raises the receive maximum (decide::MAX_SHARE is one half).
    let used = share.min(0.5);
    assert_eq!(
        v["sizing"]["window_share"].as_f64(),
        Some((used * 1000.0).round() / 1000.0),
        "{v:#}"
    );
    // lab.sh's default queue here is its floor, 1000 × 1500 B = 6 × BDP, and the line drops nothing.
    assert_eq!(test["steady_retrans_segs"], 0, "{test:#}");
    assert!(v["decision"]["queue_bdp"].as_f64().is_some_and(|q| q >= 0.5), "{v:#}");
    assert_eq!(v["decision"]["class"], "clean", "{v:#}");

    // One iperf3 test against a one-shot `iperf3 -s` in B (or a lasting one: `-s` alone).
    let advise_iperf3_with = |server: &[&str]| {
        let _iperf = Server::start(&lab.ns_b, server, 5201);
        lab.advise_json(&b, &["--iperf3", "--test-time", "3s"])
    };
    let advise_iperf3 = || advise_iperf3_with(&["iperf3", "-s", "-1", "-B", &b]);
    let v = advise_iperf3();
    let test = &v["evidence"]["test"];
    assert_eq!(test["peer"], "iperf3", "{test:#}");
    assert!(test["bytes"].as_u64().is_some_and(|n| n > 1_000_000), "{test:#}");
    let rate = test["delivery_rate_bps"].as_f64().expect("delivery rate");
    // iperf3 counts what its sender wrote per 1-s interval (the best one here), which runs
    // ahead of the bottleneck while the socket buffer fills: an upper reading.
    assert!(
        (0.9 * 50e6..=1.25 * 50e6).contains(&rate),
        "iperf3's best interval {rate}: {test:#}"
    );
    assert_eq!(test["window_limited"], false, "{test:#}");

    // A stock-sized server: B's receive maximum 256 KiB advertises about 160 KB, 32 Mbit/s at
    // 40 ms. The test is held by the far end's window, says so, and its rate is only a lower
    // bound: the trains' 50 Mbit/s sizes the advice, not the held test's rate.
    lab.sh(&lab.ns_b, "sysctl -qw net.ipv4.tcp_rmem='4096 131072 262144'");
    let v = advise_iperf3();
    let test = &v["evidence"]["test"];
    assert_eq!(
        (&test["window_limited"], &test["held_by"]),
        (&Value::from(true), &Value::from("receive-window")),
        "{test:#}"
    );
    // Its goodput (its best 1-s interval counts what the sender wrote while its buffer filled).
    let rate = test["goodput_bps"].as_f64().expect("goodput");
    assert!(rate < 0.8 * 50e6, "held at {rate}: {test:#}");
    let bps = v["bandwidth_bps"].as_f64().expect("bps");
    assert!(
        (bps - 50e6).abs() <= 0.1 * 50e6,
        "sized for {bps}, not the held test: {v:#}"
    );
    assert_ne!(
        v["decision"]["class"], "shallow",
        "a held test's flat RTT is no queue: {v:#}"
    );
    assert!(
        v["notes"].to_string().contains("held by the far end's receive window"),
        "{:#}",
        v["notes"]
    );
    // The one-shot server took no second test: said, and the queue stays unmeasured.
    assert_eq!(v["decision"]["class"], "unmeasured", "{v:#}");
    assert!(
        v["notes"]
            .to_string()
            .contains("the second iperf3 run (3 parallel streams) failed"),
        "{:#}",
        v["notes"]
    );
    // A lasting server: parallel streams held by the same window (3 × 162 KB, about 1.9 × BDP)
    // fill the 6-BDP queue the held flow could not, and the class is measured: clean and deep.
    let v = advise_iperf3_with(&["iperf3", "-s", "-B", &b]);
    let test = &v["evidence"]["test"];
    assert_eq!(test["window_limited"], true, "{test:#}");
    assert_eq!(test["retest"]["kind"], "streams", "{test:#}");
    assert_eq!(test["retest"]["streams"], 3, "{test:#}");
    assert_eq!(v["decision"]["class"], "clean", "{v:#}");
    assert!(v["decision"]["queue_bdp"].as_f64().is_some_and(|q| q >= 0.5), "{v:#}");
    assert!(
        v["decision"]["why_class"]
            .as_str()
            .is_some_and(|w| w.contains("3 parallel streams each held by it")),
        "{v:#}"
    );
}

/// The path test sees injected loss (0.5 % each way on the delay line) and the advice changes:
/// BBR and 5 × BDP, with the retransmitted share named as the reason.
#[test]
#[cfg_attr(not(feature = "privileged-tests"), ignore = "privileged: needs root")]
fn the_path_test_sees_loss_and_the_advice_follows() {
    let lab = Lab::up_with_line("l", "20ms", &["--rate", "100mbit"], "--loss 0.5");
    let b = lab.addr_b.clone();
    let serve = Server::tcptune(&lab.ns_b, &b);
    let v = lab.advise_json(&b, &["--test-time", "3s"]);
    drop(serve);
    let d = &v["decision"];
    assert_eq!(d["class"], "lossy", "{v:#}");
    let loss = d["loss_pct"].as_f64().expect("loss");
    assert!(loss > 0.1 && loss < 2.0, "0.5 % injected, {loss} % seen: {v:#}");
    let cc = v["settings"]
        .as_array()
        .expect("settings")
        .iter()
        .find(|s| s["key"] == "net.ipv4.tcp_congestion_control")
        .expect("cc")
        .clone();
    assert_eq!(cc["value"], "bbr", "{cc:#}");
    assert!(
        d["why_class"]
            .as_str()
            .expect("why")
            .contains("retransmitted after startup"),
        "{d:#}"
    );
    assert_eq!(v["sizing"]["loss_recovery"], true);
    assert!(
        v["evidence"]["test"]["series"].as_array().is_some_and(|s| s.len() >= 4),
        "the test's rate over time: {:#}",
        v["evidence"]["test"]
    );
    // The measured advice as a person reads it: the same rules as the given path's, and the
    // tests' figures in its derivation.
    let serve = Server::tcptune(&lab.ns_b, &b);
    let out = lab.tcptune(
        &lab.ns_a,
        &[
            "advise",
            "--host",
            &b,
            "--test-time",
            "3s",
            "--format",
            "sysctl",
            "--explain",
        ],
    );
    drop(serve);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let file = String::from_utf8(out.stdout).expect("utf8");
    crate::legible::check_file(&file, "the lab's lossy path");
    crate::legible::check_explained(&file, crate::legible::MEASURED_FACTS, "the lab's lossy path");
}

/// Issue 45: a test ends when its reading is made, and a short test on a lossy path still
/// reads its class. 40 ms / 100 Mbit/s at 0.2 % loss each way: both directions end well before
/// their default bound (10 s + 15 RTT), each having seen the loss surely above what CUBIC holds;
/// the advice is the lossy one. `--thorough` runs them to their bound, to the same class.
#[test]
#[cfg_attr(not(feature = "privileged-tests"), ignore = "privileged: needs root")]
fn a_test_ends_when_its_reading_is_made_and_still_reads_a_lossy_path() {
    let lab = Lab::up_with_line("e", "40ms", &["--rate", "100mbit"], "--loss 0.2");
    let b = lab.addr_b.clone();
    let serve = Server::tcptune(&lab.ns_b, &b);
    let v = lab.advise_json(&b, &[]);
    let full = lab.advise_json(&b, &["--thorough", "--test-time", "4s"]);
    drop(serve);
    for (d, who) in [(&v["decision"], "short"), (&v["receive_decision"], "short, receiving")] {
        assert_eq!(d["class"], "lossy", "{who}: {d:#}");
    }
    for key in ["test", "reverse"] {
        let t = &v["evidence"][key];
        let made = &t["made"];
        assert_eq!(made["lossy"], true, "{key}: {t:#}");
        let (at, bound) = (
            made["at_s"].as_f64().expect("at"),
            t["limit_s"].as_f64().expect("bound"),
        );
        assert!(at < bound / 2.0, "{key}: made at {at} s of {bound} s");
        assert!(
            t["duration_s"].as_f64().expect("duration") < bound / 2.0,
            "{key}: {t:#}"
        );
        assert!(
            t["notes"].to_string().contains("its reading was made"),
            "{key}: {:#}",
            t["notes"]
        );
        // --thorough: to its bound, no reading made early, the same class.
        let f = &full["evidence"][key];
        assert!(f["made"].is_null(), "{key}: {f:#}");
        assert!(f["duration_s"].as_f64().expect("duration") >= 3.9, "{key}: {f:#}");
    }
    assert_eq!(full["decision"]["class"], "lossy", "{:#}", full["decision"]);
}

/// Loss in one direction only (0.5 % from the far end to this host, `lab.sh up --loss-ba`):
/// the forward test — this host sending, only its ACKs crossing the lossy way — measures none
/// worth the name, the reverse test — tcptune serve sending into the loss, its sender's
/// readings reported back — measures it. Both directions in one advise against one serve.
#[test]
#[cfg_attr(not(feature = "privileged-tests"), ignore = "privileged: needs root")]
fn loss_in_one_direction_is_seen_by_the_test_that_sends_into_it() {
    let lab = Lab::up_with("w", "20ms", &["--rate", "100mbit", "--loss-ba", "0.5"]);
    let b = lab.addr_b.clone();
    let serve = Server::tcptune(&lab.ns_b, &b);
    let t = Instant::now();
    let v = lab.advise_json(&b, &["--test-time", "3s"]);
    let took = t.elapsed();
    drop(serve);
    // Where the time went (issue 45): each phase that ran, and the whole within what it took.
    let timing = &v["timing"];
    let phase = |k: &str| timing[k].as_f64().unwrap_or_else(|| panic!("no {k}: {timing:#}"));
    let phases: f64 = ["probes_s", "trains_s", "watch_s", "forward_s", "reverse_s"]
        .iter()
        .map(|k| phase(k))
        .sum();
    // Each test ran its startup and at least 1.5 s paced, within its 3-s bound and slack.
    for k in ["forward_s", "reverse_s"] {
        assert!((1.5..=6.0).contains(&phase(k)), "{k}: {timing:#}");
    }
    assert!(timing["setup_s"].is_null(), "no ssh: {timing:#}");
    assert!(
        phases <= phase("total_s") + 0.01 && phase("total_s") <= took.as_secs_f64(),
        "{phases} s of phases, {took:?} in all: {timing:#}"
    );
    let ev = &v["evidence"];
    let steady = |t: &Value| {
        let segs = t["steady_segs_out"]
            .as_f64()
            .unwrap_or_else(|| panic!("no loss reading: {t:#}"));
        let retrans = t["steady_retrans_segs"].as_f64().expect("retransmitted");
        (segs, retrans, 100.0 * retrans / segs)
    };
    let (fwd, rev) = (&ev["test"], &ev["reverse"]);
    assert_eq!(
        (fwd["direction"].as_str(), fwd["peer"].as_str()),
        (Some("forward"), Some("tcptune")),
        "{ev:#}"
    );
    assert_eq!(
        (rev["direction"].as_str(), rev["peer"].as_str()),
        (Some("reverse"), Some("tcptune")),
        "{ev:#}"
    );
    let (fs, fr, f) = steady(fwd);
    let (rs, rr, r) = steady(rev);
    eprintln!(
        "one-way loss 0.5 % b->a: forward {fr} of {fs} segments ({f:.3} %), reverse {rr} of {rs} ({r:.3} %), {took:?}"
    );
    // Enough segments after startup to see 0.5 % (a 3-s test at 100 Mbit/s sends 25,000).
    assert!(fs > 5_000.0 && rs > 5_000.0, "{ev:#}");
    assert!(f < 0.05, "the forward test sent into no loss, yet {f} %: {fwd:#}");
    assert!(
        (0.2..1.0).contains(&r),
        "0.5 % injected b->a, the reverse test saw {r} %: {rev:#}"
    );
    // The reverse test's share is this host's, as receiver; its RTTs are the far end's sender's.
    assert!(
        rev["window_share"].as_f64().is_some_and(|s| s > 0.0 && s <= 1.0),
        "{rev:#}"
    );
    assert!(
        rev["min_rtt_ms"].as_f64().is_some_and(|m| (19.5..25.0).contains(&m)),
        "{rev:#}"
    );
    assert!(ev["reverse_skipped"].is_null(), "{ev:#}");
    // Two 3-s tests with the probes (7 to 8 s here): each ended on time, not at a 30 s drain
    // grace; room for this VM's stalls.
    assert!(took < Duration::from_secs(40), "took {took:?}");

    // A plain `iperf3 -s` (no -J) gives no JSON of its sender, but its text, brought back,
    // has each interval's retransmissions: the reverse test sees the loss there too, and the
    // receive side (the far end sending) is sized for it.
    let iperf = Server::start(&lab.ns_b, &["iperf3", "-s", "-B", &b], 5201);
    let v = lab.advise_json(&b, &["--iperf3", "--test-time", "3s"]);
    drop(iperf);
    let rev = &v["evidence"]["reverse"];
    assert_eq!(rev["peer"], "iperf3", "{rev:#}");
    assert!(rev["min_rtt_ms"].is_null(), "a plain server gives no RTT: {rev:#}");
    let (rs, rr, r) = steady(rev);
    eprintln!("one-way loss 0.5 % b->a, plain iperf3 -s: reverse {rr} of {rs} ({r:.3} %)");
    assert!(
        (0.2..1.5).contains(&r),
        "0.5 % injected b->a, the reverse test saw {r} %: {rev:#}"
    );
    let receive = &v["receive_decision"];
    assert_eq!(receive["class"], "lossy", "{v:#}");
    assert!(
        receive["loss_pct"].as_f64().is_some_and(|l| (0.2..1.5).contains(&l)),
        "{receive:#}"
    );
}

/// Issue 29, the lab grows: a third host C (198.18.0.3, behind A) whose flow crosses the same
/// delay line toward B as A's, both behind a token-bucket policer of 20 Mbit/s with a 20-ms
/// burst, at 20 ms. A CUBIC iperf3 flow from C (by its route) for five seconds, and one from A
/// (asked for: A's namespace default may be BBR) for the last four: the line forwarded both
/// flows' bytes, the policer dropped (its own counter; the line queued nothing), the two
/// together got no more than the policed rate, and ping saw the base RTT while the policer
/// dropped: it never queues.
#[test]
#[cfg_attr(not(feature = "privileged-tests"), ignore = "privileged: needs root")]
fn a_third_host_shares_the_policed_line() {
    let lab = Lab::up_cross("x", "20ms", &["--police", "20mbit:20ms"]);
    let b = lab.addr_b.clone();
    let _servers = [5411, 5412].map(|port| {
        let p = port.to_string();
        Server::start(&lab.ns_b, &["iperf3", "-s", "-1", "-B", &b, "-p", &p], port)
    });
    let before = lab.line_stats().0;
    let client = |ns: &str, args: &[&str]| {
        Std::new("ip")
            .args(["netns", "exec", ns, "iperf3", "-c", &b, "-J"])
            .args(args)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("iperf3")
    };
    // C first, so that its flow has the line to itself for a second: whichever flow a
    // policer's first drops hit can stay small for seconds, and C's bytes must show.
    let c = client(&lab.ns_c, &["-B", "198.18.0.3", "-p", "5411", "-t", "5"]);
    std::thread::sleep(Duration::from_secs(1));
    // Root may choose any algorithm the kernel has for its own socket.
    let a = client(&lab.ns_a, &["-B", "198.18.0.1", "-p", "5412", "-t", "4", "-C", "cubic"]);
    // Ping while both flows run and the policer drops.
    std::thread::sleep(Duration::from_millis(1500));
    let ping = Std::new("ip")
        .args(["netns", "exec", &lab.ns_a, "ping", "-n", "-c", "20", "-i", "0.05", &b])
        .output()
        .expect("ping");
    let [c, a] = [c, a].map(|f| json(&f.wait_with_output().expect("iperf3")));
    let after = lab.line_stats().0;

    let rtts: Vec<f64> = String::from_utf8_lossy(&ping.stdout)
        .split_whitespace()
        .filter_map(|w| w.strip_prefix("time=")?.parse().ok())
        .collect();
    let received = |v: &Value| v["end"]["sum_received"]["bytes"].as_f64().expect("bytes");
    let retrans = |v: &Value| v["end"]["sum_sent"]["retransmits"].as_u64().expect("retransmits");
    let (bytes_c, bytes_a) = (received(&c), received(&a));
    let fwd = (after.fwd_bytes - before.fwd_bytes) as f64;
    let secs = c["end"]["sum_received"]["seconds"].as_f64().expect("seconds");
    let total_bps = (bytes_c + bytes_a) * 8.0 / secs;
    eprintln!(
        "policed 20 Mbit/s: C {bytes_c} B ({} retransmits), A {bytes_a} B ({}), together {:.1} Mbit/s; \
         line a->b {before:?} -> {after:?}; ping {rtts:?} ms",
        retrans(&c),
        retrans(&a),
        total_bps / 1e6
    );
    // Both flows crossed the line: it forwarded what they delivered, in 1500-B packets of
    // 1448 B of data (a retransmission that got through stands for a dropped packet), and
    // little else. Had C's flow gone round it, the line would have forwarded C's share less.
    let delivered = (bytes_c + bytes_a) * 1500.0 / 1448.0;
    assert!(bytes_c > 0.1 * (bytes_c + bytes_a), "C {bytes_c} B, A {bytes_a} B");
    assert!(
        (0.97 * delivered..=1.05 * delivered + 100_000.0).contains(&fwd),
        "the line forwarded {fwd} B a->b; the flows delivered {bytes_c} + {bytes_a} B of data"
    );
    assert_eq!(c["end"]["sender_tcp_congestion"], "cubic", "C's route chooses CUBIC");
    // The policer dropped, the line queued nothing, and together they got the policed rate.
    assert!(after.drop_police > before.drop_police, "{after:?}");
    assert_eq!(after.drop_queue, 0, "{after:?}");
    assert!(retrans(&c) > 0 && retrans(&a) > 0, "both flows met the policer");
    assert!(
        (10e6..=20.5e6).contains(&total_bps),
        "{total_bps} bit/s through a 20 Mbit/s policer"
    );
    // No queue: the RTT stays at the base 20 ms while the policer drops.
    assert!(rtts.len() >= 5, "{}", String::from_utf8_lossy(&ping.stdout));
    let mut sorted = rtts.clone();
    sorted.sort_by(f64::total_cmp);
    let median = sorted[sorted.len() / 2];
    assert!((19.5..=22.0).contains(&median), "ping {rtts:?} ms beside a policer");
}

/// The stats line `lab.sh stats` prints, as the lab tests read it.
#[test]
fn the_delay_line_stats_parse() {
    let line = "delayline: a->b: forwarded 5498 pkts 8222761 bytes, dropped 1 (queue) 2 (random loss) \
                71 (police) 3 (write errors), reordered 9, late avg 8.4 us max 175.5 us";
    assert_eq!(
        LineStats::parse(line),
        Some(LineStats {
            fwd_pkts: 5498,
            fwd_bytes: 8_222_761,
            drop_queue: 1,
            drop_loss: 2,
            drop_police: 71,
            drop_write: 3,
            reordered: 9,
        })
    );
    assert_eq!(LineStats::parse("delayline: a->b: forwarded 1 pkts"), None);
}

#[test]
#[cfg_attr(not(feature = "privileged-tests"), ignore = "privileged: needs root")]
fn unresolvable_name_is_a_clear_error() {
    // Inside an empty namespace no resolver is reachable, so nothing leaves the machine.
    let ns = super::netns::Netns::new("dns");
    let out = ns.exec(
        cargo_bin("tcptune").to_str().expect("utf8"),
        &["advise", "--host", "nonexistent.invalid", "--format", "json"],
    );
    assert_eq!(out.status.code(), Some(4), "{}", String::from_utf8_lossy(&out.stderr));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("nonexistent.invalid") && err.contains("resolve"), "{err}");
}

/// The lab smoke run (issue: WAN lab, CI): measured RTT over the emulated path, then
/// advise → apply → revert end to end in both namespaces, values restored byte for byte.
#[test]
#[cfg_attr(not(feature = "privileged-tests"), ignore = "privileged: needs root")]
fn lab_smoke_advise_apply_revert_across_the_path() {
    let lab = Lab::up_with_rate("s", "80ms", Some("200mbit"));
    let state = tempfile::tempdir().expect("tempdir");
    let read = |ns: &str, key: &str| {
        let out = Std::new("ip")
            .args([
                "netns",
                "exec",
                ns,
                "cat",
                &format!("/proc/sys/{}", key.replace('.', "/")),
            ])
            .output()
            .expect("cat");
        String::from_utf8(out.stdout).expect("utf8")
    };
    // tcptune serve on both ends: each advice runs its TCP path test against the other.
    let _servers = [
        Server::tcptune(&lab.ns_a, "198.18.0.1"),
        Server::tcptune(&lab.ns_b, "198.18.0.2"),
    ];
    for (ns, peer) in [(lab.ns_a.clone(), "198.18.0.2"), (lab.ns_b.clone(), "198.18.0.1")] {
        // Start from the stock maxima so the advice raises them.
        lab.sh(
            &ns,
            "sysctl -qw net.ipv4.tcp_rmem='4096 131072 6291456' net.ipv4.tcp_wmem='4096 16384 4194304'",
        );
        let before = (read(&ns, "net.ipv4.tcp_rmem"), read(&ns, "net.ipv4.tcp_wmem"));
        let v = json(&lab.tcptune(
            &ns,
            &["advise", "--host", peer, "--test-time", "4s", "--format", "json"],
        ));
        let rtt = v["rtt_ms"].as_f64().expect("rtt");
        // The path cannot be faster than its delay line; a loaded host adds a little.
        assert!((79.5..=82.4).contains(&rtt), "RTT {rtt} ms vs 80 ms (−0.5 / +3 %)");
        let bps = v["bandwidth_bps"].as_f64().expect("bps");
        assert!((bps - 200e6).abs() <= 20e6, "rate {bps} vs 200 Mbit/s: {v:#}");
        // A loss-free path with a queue of 0.75 × BDP, as the path test saw: cubic — which a
        // child namespace may choose only where the host allows it; the advice says so rather
        // than leave apply to fail.
        assert_eq!(v["decision"]["class"], "clean", "{v:#}");
        let cc = super::setting(&v, "net.ipv4.tcp_congestion_control");
        assert_eq!(cc["value"], "cubic", "{cc:#}");
        let allowed = read(&ns, "net.ipv4.tcp_allowed_congestion_control");
        if !allowed.split_whitespace().any(|c| c == "cubic") {
            assert_eq!(cc["action"]["kind"], "unavailable", "{cc:#}");
            assert!(
                cc["action"]["why"].as_str().is_some_and(|w| w
                    == format!(
                        "only {} allowed here",
                        allowed.split_whitespace().collect::<Vec<_>>().join(" ")
                    )),
                "{cc:#}"
            );
        }
        let out = lab.tcptune(&ns, &["advise", "--host", peer, "--format", "sysctl"]);
        assert!(out.status.success());
        let file = state.path().join(format!("{ns}.conf"));
        std::fs::write(&file, &out.stdout).expect("write");
        let dir = state.path().join(&ns);
        let dir = dir.to_str().expect("utf8");
        let out = lab.tcptune(&ns, &["--state-dir", dir, "apply", file.to_str().expect("utf8")]);
        assert!(out.status.success(), "apply: {}", String::from_utf8_lossy(&out.stderr));
        // BDP 2 000 000 bytes: the receive need (≈ 4.4 MB) is under stock 6 MiB, but the send
        // need (2.5 × BDP ≈ 5 MB) is over stock 4 MiB, so tcp_wmem must have grown.
        let wmax: u64 = read(&ns, "net.ipv4.tcp_wmem")
            .split_whitespace()
            .nth(2)
            .expect("f")
            .parse()
            .expect("n");
        assert!(wmax > 4_194_304, "tcp_wmem max {wmax}");
        let out = lab.tcptune(&ns, &["--state-dir", dir, "revert"]);
        assert!(out.status.success(), "revert: {}", String::from_utf8_lossy(&out.stderr));
        assert_eq!((read(&ns, "net.ipv4.tcp_rmem"), read(&ns, "net.ipv4.tcp_wmem")), before);
    }
}

/// Two test processes never run two labs at once: while another process holds the host lock,
/// a lab here waits for it.
#[test]
fn the_lab_lock_holds_across_processes() {
    let dir = tempfile::tempdir().expect("tempdir");
    let held = dir.path().join("held");
    // flock(1) takes the same flock(2) lock a second test binary would.
    let mut other = Std::new("flock")
        .args([
            "-x",
            HOST_LOCK,
            "sh",
            "-c",
            "touch \"$0\"; sleep 1",
            held.to_str().expect("utf8"),
        ])
        .spawn()
        .expect("flock(1)");
    let t = Instant::now();
    while !held.exists() {
        assert!(
            t.elapsed() < Duration::from_secs(120),
            "the other process never got the lock"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    let seen = Instant::now();
    let _ours = lock_host();
    // Ours only once the other holder's second is over (less the 10 ms we may have seen late;
    // not "once it has exited": the kernel drops its lock before its exit status is ready).
    let waited = seen.elapsed();
    assert!(
        waited >= Duration::from_millis(900),
        "two holders of {HOST_LOCK}: waited only {waited:?}"
    );
    assert!(other.wait().expect("wait").success());
}

/// The path test tells the cases of issue 29 apart on the real delay line, each in the
/// evidence and the decision: CUBIC flows from a third host crossing the same queue (the
/// probes meet their queue, the test's flow sees it drain: others share the path, sized for the
/// trains' rate and advised CUBIC, a fair neighbour); a token-bucket policer (its rate named
/// within 10 %, advised BBR); and a line that reorders (retransmissions the receiver got twice
/// counted as spurious, not as the path's loss). Short tests (3 s each way) on a 20 ms path.
#[test]
#[cfg_attr(not(feature = "privileged-tests"), ignore = "privileged: needs root")]
fn the_path_test_tells_others_a_policer_and_reordering_apart() {
    // Others: two CUBIC flows from C to D through A, the line and B, behind a queue of 1 BDP.
    let lab = Lab::up_cross("o", "20ms", &["--rate", "100mbit", "--queue", "250000"]);
    let b = lab.addr_b.clone();
    let serve = Server::tcptune(&lab.ns_b, &b);
    cross(&lab, "start", &["2"]);
    std::thread::sleep(Duration::from_secs(3));
    let v = lab.advise_json(&b, &["--test-time", "3s"]);
    cross(&lab, "stop", &[]);
    drop(serve);
    let d = &v["decision"];
    assert_eq!(d["class"], "shared", "{:#}", v["evidence"]);
    assert_eq!(d["sharing"]["kind"], "competing", "{d:#}");
    assert_eq!(
        v["bandwidth_basis"], "trains-over-test",
        "sized for the path, not for what the others left: {v:#}"
    );
    let cc = |v: &Value| {
        v["settings"]
            .as_array()
            .expect("settings")
            .iter()
            .find(|s| s["key"] == "net.ipv4.tcp_congestion_control")
            .map(|s| s["value"].clone())
    };
    assert_eq!(cc(&v), Some(Value::from("cubic")), "a fair neighbour: {v:#}");
    drop(lab);

    // A policer at 20 Mbit/s on a 100 Mbit/s line: its rate within 10 %.
    let lab = Lab::up_with("p", "20ms", &["--rate", "100mbit", "--police", "20mbit:20ms"]);
    let serve = Server::tcptune(&lab.ns_b, &b);
    let v = lab.advise_json(&b, &["--test-time", "3s"]);
    drop(serve);
    let d = &v["decision"];
    assert_eq!(d["class"], "policed", "{:#}", v["evidence"]);
    let rate = d["sharing"]["rate_bps"].as_f64().expect("the policed rate");
    eprintln!("policed at 20 Mbit/s: read {rate}");
    assert!(
        (18e6..=22e6).contains(&rate),
        "policed at 20 Mbit/s, read {rate}: {d:#}"
    );
    assert_eq!(cc(&v), Some(Value::from("bbr")), "{v:#}");
    drop(lab);

    // A line that reorders: the receiver reports the retransmissions it got twice.
    let lab = Lab::up_with("r", "20ms", &["--rate", "100mbit", "--reorder", "2ms"]);
    let serve = Server::tcptune(&lab.ns_b, &b);
    let v = lab.advise_json(&b, &["--test-time", "3s"]);
    drop(serve);
    let shape = &v["evidence"]["test"]["shape"];
    let reordering = shape["reordering"].as_u64().expect("reordering seen");
    assert!(reordering > 0, "{shape:#}");
    let spurious = shape["steady_spurious_segs"].as_u64().unwrap_or(0);
    let retrans = v["evidence"]["test"]["steady_retrans_segs"].as_u64().unwrap_or(0);
    eprintln!("reordering 2 ms: {reordering} reorderings, {spurious} of {retrans} retransmissions spurious");
    assert_ne!(
        v["decision"]["class"], "lossy",
        "reordering is no loss: {:#}",
        v["decision"]
    );
}

/// Issue 37, point 1: without a peer, the probes alone tell a shared path — a long CUBIC flow
/// and short ones coming and going fill and drain the line's queue and move the RTT's floor (two
/// long flows may hold a queue still through the whole watch, which no probe can tell from a
/// longer path: GUIDE, "Shared paths and policers") — and the advice keeps CUBIC,
/// sized at the lowest RTT seen; the same probes on an idle line with jitter, or with random
/// loss, read nothing of the kind and the advice is today's.
#[test]
#[cfg_attr(not(feature = "privileged-tests"), ignore = "privileged: needs root")]
fn the_probes_alone_tell_others_queue_from_jitter_and_loss() {
    let lab = Lab::up_cross("q", "40ms", &["--rate", "100mbit", "--queue", "500000"]);
    let b = lab.addr_b.clone();
    cross(&lab, "start", &["1", "--onoff", "2s:3s"]);
    std::thread::sleep(Duration::from_secs(5));
    let v = lab.advise_json(&b, &[]);
    cross(&lab, "stop", &[]);
    let m = &v["hosts"][0]["measurement"];
    let d = &v["decision"];
    assert!(v["evidence"]["test"].is_null(), "no peer here: {:#}", v["evidence"]);
    assert_eq!(m["queue"]["reading"]["kind"], "moved", "{:#}", m["queue"]);
    assert_eq!(d["class"], "shared", "{d:#}");
    assert_eq!(d["sharing"]["kind"], "probed", "{d:#}");
    let cc = v["settings"]
        .as_array()
        .expect("settings")
        .iter()
        .find(|s| s["key"] == "net.ipv4.tcp_congestion_control")
        .map(|s| s["value"].clone());
    assert_eq!(cc, Some(Value::from("cubic")), "a fair neighbour: {v:#}");
    // The BDP's RTT is the lowest any probe saw, never above the first probes' lowest.
    let rtt = v["rtt_ms"].as_f64().expect("rtt");
    let first = m["rtt"]["min_ms"].as_f64().expect("min");
    let low = m["queue"]["reading"]["low_ms"].as_f64().expect("low");
    assert!(
        rtt <= first + 0.001 && (rtt - low.min(first)).abs() < 0.01,
        "{rtt} vs {first}, {low}"
    );
    eprintln!(
        "shared, no peer: RTT {rtt} ms (first probes {first}), {:#}",
        m["queue"]["reading"]
    );
    drop(lab);

    // Idle lines: jitter, random loss, and a forwarder that releases once a millisecond (whose
    // batches the trains read at 4.9 Gbit/s on a 1 Gbit/s line before issue 37).
    for (tag, extra) in [
        ("j", ["--rate", "100mbit", "--jitter", "5ms"]),
        ("l", ["--rate", "100mbit", "--loss", "1"]),
        ("t", ["--rate", "500mbit", "--batch", "1ms"]),
    ] {
        let lab = Lab::up_with(tag, "40ms", &extra);
        let v = lab.advise_json(&b, &[]);
        let m = &v["hosts"][0]["measurement"];
        let q = &m["queue"];
        eprintln!("{extra:?}: {:#}; trains {}", q["reading"], m["capacity"]["bps"]);
        assert_eq!(q["reading"]["kind"], "still", "{extra:?}: {q:#}");
        assert!(v["decision"]["sharing"].is_null(), "{extra:?}: {:#}", v["decision"]);
        assert_ne!(v["decision"]["class"], "shared", "{extra:?}");
        if extra[1] == "500mbit" {
            // What this guards is the batches read as the rate (4.9 Gbit/s on a 1 Gbit/s line
            // before issue 37; 2.15 Gbit/s from long trains sized at three stretched first
            // trains, CI 2026-11-29). The line runs at 500 Mbit/s, not 1 Gbit/s: this VM's
            // userspace delay line cannot release 1 Gbit/s of batches when its vCPUs are shared
            // (three runs beside two busy loops read 985, 873 and 625 Mbit/s, its writer 124 us
            // late on average, and CI read 785; at 500 Mbit/s the same load read 499.2-499.4,
            // 10 us late). A stall that releases held batches together can still compress one
            // long train of three (2.48 Gbit/s once beside a compile), so the ceiling is 1.25.
            let bps = v["bandwidth_bps"].as_f64().expect("bps");
            assert!(
                (0.4e9..=0.625e9).contains(&bps),
                "the line's 500 Mbit/s, not its batches: {:#}",
                m["capacity"]
            );
        }
    }
}
