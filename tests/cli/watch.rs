//! `tcptune watch` on the lab's path (40 ms, 100 Mbit/s: BDP 500,000 bytes): a flow held by the
//! receiver's buffer, one held by the sender's, and a free one, each named so by the live view
//! on the sender — from the kernel's own counters over the last interval.

use std::io::{Read as _, Write as _};
use std::net::{TcpListener, TcpStream};
use std::sync::mpsc;
use std::time::Duration;

use serde_json::Value;

use super::diag::{in_netns, sysctl};
use super::lab::Lab;

/// A sender in A writing to a sink in B as fast as it may, for as long as `watch` runs; the
/// summary of `tcptune watch --port PORT --for 3s --format json` in A, and its sending flow.
fn watched(lab: &Lab) -> (Value, Value) {
    let listener = in_netns(&lab.ns_b, || TcpListener::bind("198.18.0.2:0").expect("listen"))
        .join()
        .expect("thread");
    let port = listener.local_addr().expect("addr").port();
    let sink = std::thread::spawn(move || {
        if let Ok((mut s, _)) = listener.accept() {
            let mut buf = [0u8; 65536];
            while matches!(s.read(&mut buf), Ok(n) if n > 0) {}
        }
    });
    let (stop_tx, stop_rx) = mpsc::channel::<()>();
    let sender = in_netns(&lab.ns_a, move || {
        let mut s = TcpStream::connect(("198.18.0.2", port)).expect("connect");
        let chunk = vec![0u8; 1 << 16];
        while stop_rx.try_recv().is_err() {
            if s.write_all(&chunk).is_err() {
                break;
            }
        }
    });
    // Past slow start, so the interval shows what holds the flow, not its growth.
    std::thread::sleep(Duration::from_millis(1500));
    let port = port.to_string();
    let out = lab.tcptune(
        &lab.ns_a,
        &["watch", "--port", &port, "--for", "3s", "--format", "json"],
    );
    stop_tx.send(()).expect("stop");
    sender.join().expect("sender");
    sink.join().expect("sink");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8(out.stdout).expect("utf8");
    let lines: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not a JSON line ({e}): {l}")))
        .collect();
    // One object per interval (3 at 1 s), then the summary.
    assert!(lines.len() >= 3, "{text}");
    let summary = lines.last().expect("summary")["summary"].clone();
    let flow = summary["flows"]
        .as_array()
        .expect("flows")
        .iter()
        .find(|f| f["sending"] == true && f["peer"] == format!("198.18.0.2:{port}").as_str())
        .cloned()
        .unwrap_or_else(|| panic!("no sending flow in {summary:#}"));
    eprintln!("{:#}", flow);
    (summary, flow)
}

#[test]
#[cfg_attr(not(feature = "privileged-tests"), ignore = "privileged: needs root")]
fn the_live_view_names_the_receivers_buffer_the_senders_and_neither_on_a_free_flow() {
    let lab = Lab::up_with("w", "40ms", &["--rate", "100mbit"]);
    // 1. The receiver's maximum 128 KiB: its window holds the flow far below 100 Mbit/s.
    sysctl(&lab.ns_b, "net.ipv4.tcp_rmem=4096 65536 131072");
    let (_, f) = watched(&lab);
    assert_eq!(f["last"]["held_by"], "receive-window", "{f:#}");
    assert_eq!(f["held_by"], "receive-window", "{f:#}");
    let rate = f["rate_bps"].as_f64().expect("rate");
    assert!(rate < 40e6, "held by a 128 KiB buffer: {rate}");
    // Its ceiling is the window the peer advertises, at the lowest RTT.
    let window = f["last"]["peer_window"].as_f64().expect("window");
    let ceiling = f["last"]["ceiling_bps"].as_f64().expect("ceiling");
    let rtt = f["last"]["min_rtt_ms"].as_f64().expect("rtt");
    assert!(
        (ceiling - window * 8.0 / (rtt / 1000.0)).abs() < 0.01 * ceiling,
        "{f:#}"
    );

    // 2. The receiver's buffer large again, the sender's maximum 128 KiB: the send buffer.
    sysctl(&lab.ns_b, "net.ipv4.tcp_rmem=4096 131072 6291456");
    sysctl(&lab.ns_a, "net.ipv4.tcp_wmem=4096 65536 131072");
    let (_, f) = watched(&lab);
    assert_eq!(f["last"]["held_by"], "send-buffer", "{f:#}");
    assert_eq!(f["held_by"], "send-buffer", "{f:#}");
    let text = lab.tcptune(&lab.ns_a, &["watch", "--for", "1s"]);
    assert!(text.status.success(), "{}", String::from_utf8_lossy(&text.stderr));

    // 3. Both large (6 MiB and 4 MiB, 12 × and 8 × the BDP): a free flow, neither buffer.
    sysctl(&lab.ns_a, "net.ipv4.tcp_wmem=4096 16384 4194304");
    let (_, f) = watched(&lab);
    for held in [&f["held_by"], &f["last"]["held_by"]] {
        assert!(held != "receive-window" && held != "send-buffer", "{f:#}");
    }
    assert_eq!(f["held_by"], "network", "{f:#}");
    let rate = f["rate_bps"].as_f64().expect("rate");
    assert!(rate > 60e6, "a free flow on 100 Mbit/s: {rate}");
}
