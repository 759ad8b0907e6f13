//! Passive evidence: what this host's kernel already knows about the path to an address, with no
//! peer to test against. Two sources, each best effort (a source that gives nothing leaves a
//! note, never an error):
//! * the live TCP flows to that address (sock_diag INET_DIAG, as `inspect` reads them): bytes
//!   sent, retransmitted and received, RTTs, delivery rate, and as a receiver this end's
//!   advertised window and receive buffer;
//! * the kernel's per-destination metrics (`ip tcp_metrics show ADDR`, iproute2): the RTT,
//!   its variation, ssthresh and cwnd it saved when earlier connections closed (unless
//!   `net.ipv4.tcp_no_metrics_save` = 1; ssthresh only with
//!   `net.ipv4.tcp_no_ssthresh_metrics_save` = 0, whose default is 1).
//!
//! # Platform specific behavior
//! Linux only; elsewhere [`gather`] returns a [`Passive`] with a note.

use std::net::IpAddr;

use super::evidence::{DestMetrics, Passive};

/// Everything the kernel knows about the path to `addr`.
#[cfg(target_os = "linux")]
pub fn gather(addr: IpAddr) -> Passive {
    let mut p = Passive::default();
    match crate::tcp::sockdiag::tcp_sockets() {
        Ok(sockets) => {
            p.flows = live_flows(&sockets, addr);
            if p.flows.is_empty() {
                p.notes.push(format!("no live TCP flow to {addr}"));
            }
        }
        Err(e) => p
            .notes
            .push(format!("cannot read the TCP sockets (sock_diag netlink): {e}")),
    }
    let (metrics, note) = dest_metrics(addr);
    p.metrics = metrics;
    p.notes.extend(note);
    p
}

#[cfg(not(target_os = "linux"))]
pub fn gather(_addr: IpAddr) -> Passive {
    Passive {
        notes: vec!["no passive evidence on this OS: live flows (INET_DIAG) and tcp_metrics are Linux's".to_string()],
        ..Passive::default()
    }
}

/// The established flows among `sockets` whose peer is `addr`, the busiest first.
#[cfg(target_os = "linux")]
pub fn live_flows(sockets: &[crate::tcp::sockdiag::Socket], addr: IpAddr) -> Vec<super::evidence::LiveFlow> {
    let some_us = |us: u32| (us != 0 && us != u32::MAX).then(|| f64::from(us) / 1000.0);
    let mut flows: Vec<super::evidence::LiveFlow> = sockets
        .iter()
        .filter(|s| s.peer.ip() == addr)
        .filter_map(|s| {
            let i = s.info?;
            // tcpi_bytes_sent is Linux 4.19+; before, what was acknowledged is the best count.
            let sent = if i.tcpi_bytes_sent > 0 {
                i.tcpi_bytes_sent
            } else {
                i.tcpi_bytes_acked
            };
            #[allow(clippy::cast_precision_loss)]
            let rate = (i.tcpi_delivery_rate > 0).then_some(i.tcpi_delivery_rate as f64 * 8.0);
            Some(super::evidence::LiveFlow {
                local: s.local.to_string(),
                peer: s.peer.to_string(),
                cc: s.cong.clone(),
                bytes_sent: sent,
                bytes_retrans: i.tcpi_bytes_retrans,
                bytes_received: i.tcpi_bytes_received,
                min_rtt_ms: some_us(i.tcpi_min_rtt),
                rtt_ms: some_us(i.tcpi_rtt),
                delivery_rate_bps: rate,
                // 0 from a kernel before 6.2, which does not report it.
                rcv_wnd: (i.tcpi_rcv_wnd > 0).then_some(u64::from(i.tcpi_rcv_wnd)),
                rcv_buf: s.skmem.map(|m| u64::from(m.rcvbuf)).filter(|b| *b > 0),
            })
        })
        .collect();
    flows.sort_by_key(|f| std::cmp::Reverse(f.bytes_sent + f.bytes_received));
    flows
}

/// `ip tcp_metrics show ADDR` → the metrics, or a note on why there are none.
#[cfg(target_os = "linux")]
fn dest_metrics(addr: IpAddr) -> (Option<DestMetrics>, Option<String>) {
    if std::fs::read_to_string("/proc/sys/net/ipv4/tcp_no_metrics_save").is_ok_and(|v| v.trim() == "1") {
        return (
            None,
            Some("net.ipv4.tcp_no_metrics_save = 1: the kernel keeps no per-destination metrics".to_string()),
        );
    }
    let out = match std::process::Command::new("ip")
        .args(["tcp_metrics", "show", &addr.to_string()])
        .stdin(std::process::Stdio::null())
        .output()
    {
        Ok(o) => o,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return (None, Some("`ip` (iproute2) not found: no tcp_metrics".to_string()));
        }
        Err(e) => return (None, Some(format!("cannot run `ip tcp_metrics`: {e}"))),
    };
    let stdout = String::from_utf8_lossy(&out.stdout);
    if !out.status.success() {
        let stderr = String::from_utf8_lossy(&out.stderr);
        // ESRCH: no entry for that address.
        if stderr.contains("No such process") {
            return (None, Some(format!("the kernel has no saved metrics for {addr}")));
        }
        let why = stderr.lines().next().unwrap_or("").trim();
        return (
            None,
            Some(format!(
                "`ip tcp_metrics show {addr}` failed ({}): {}",
                out.status,
                crate::text::comment(why)
            )),
        );
    }
    match parse_tcp_metrics(&stdout, addr) {
        Some(m) => (Some(m), None),
        None => (None, Some(format!("the kernel has no saved metrics for {addr}"))),
    }
}

/// The metrics for `addr` from `ip tcp_metrics show` output (one line per destination and
/// source: `ADDR age 20.472sec cwnd 33 reordering 13 rtt 442us rttvar 838us source SRC`).
/// RTTs print with a unit (iproute2 prints µs as "us"; "ms" and "s" are read too). None when
/// no line is for `addr` or no line for it holds rtt, rttvar, ssthresh or cwnd.
pub fn parse_tcp_metrics(text: &str, addr: IpAddr) -> Option<DestMetrics> {
    text.lines().find_map(|line| {
        let words: Vec<&str> = line.split_whitespace().collect();
        if words.first()?.parse::<IpAddr>().ok()? != addr {
            return None;
        }
        let mut m = DestMetrics::default();
        for pair in words.windows(2) {
            match pair[0] {
                "rtt" => m.rtt_ms = duration_ms(pair[1]),
                "rttvar" => m.rttvar_ms = duration_ms(pair[1]),
                "ssthresh" => m.ssthresh = pair[1].parse().ok(),
                "cwnd" => m.cwnd = pair[1].parse().ok(),
                _ => {}
            }
        }
        (m.rtt_ms.is_some() || m.rttvar_ms.is_some() || m.ssthresh.is_some() || m.cwnd.is_some()).then_some(m)
    })
}

/// "442us" / "12ms" / "1.5s" → ms.
fn duration_ms(word: &str) -> Option<f64> {
    // Per ms: divide µs (a multiplication by 0.001 is not exact), multiply s.
    let (num, to_ms): (&str, fn(f64) -> f64) = if let Some(n) = word.strip_suffix("us") {
        (n, |v| v / 1000.0)
    } else if let Some(n) = word.strip_suffix("ms") {
        (n, |v| v)
    } else if let Some(n) = word.strip_suffix('s') {
        (n, |v| v * 1000.0)
    } else {
        return None;
    };
    num.parse::<f64>()
        .ok()
        .filter(|v| v.is_finite() && *v >= 0.0)
        .map(to_ms)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `ip tcp_metrics show` (iproute2 6.1, Linux 6.18): the first four lines are real (the
    /// fourth after an iperf3 test over the lab's 20 ms delay line with 0.5 % loss); the last
    /// two are built in iproute2's format, for what this kernel did not save here: ssthresh
    /// (saved only with net.ipv4.tcp_no_ssthresh_metrics_save = 0, its default being 1) and
    /// an RTT printed in ms.
    const SHOW: &str = "\
203.0.113.80 age 892.732sec source 192.0.2.2
127.0.0.1 age 644.848sec cwnd 46 reordering 12 rtt 81us rttvar 118us source 127.0.0.1
198.18.7.2 age 0.004sec cwnd 118 rtt 44us rttvar 24us source 198.18.7.1
198.18.0.2 age 0.988sec cwnd 18 rtt 20570us rttvar 20570us source 198.18.0.1
198.18.0.3 age 3.100sec ssthresh 27 cwnd 19 rtt 20412us rttvar 5025us source 198.18.0.1
2001:db8::2 age 1.000sec rtt 150ms rttvar 2ms source 2001:db8::1
";

    fn ip(s: &str) -> IpAddr {
        s.parse().expect("ip")
    }

    #[test]
    fn reads_tcp_metrics_lines() {
        let m = parse_tcp_metrics(SHOW, ip("127.0.0.1")).expect("loopback");
        assert_eq!((m.rtt_ms, m.rttvar_ms), (Some(0.081), Some(0.118)));
        assert_eq!((m.ssthresh, m.cwnd), (None, Some(46)));
        let m = parse_tcp_metrics(SHOW, ip("198.18.0.2")).expect("lab");
        assert_eq!((m.rtt_ms, m.rttvar_ms), (Some(20.57), Some(20.57)));
        assert_eq!((m.ssthresh, m.cwnd), (None, Some(18)));
        let m = parse_tcp_metrics(SHOW, ip("198.18.0.3")).expect("ssthresh");
        assert_eq!((m.rtt_ms, m.rttvar_ms), (Some(20.412), Some(5.025)));
        assert_eq!((m.ssthresh, m.cwnd), (Some(27), Some(19)));
        let m = parse_tcp_metrics(SHOW, ip("2001:db8::2")).expect("v6, ms");
        assert_eq!((m.rtt_ms, m.rttvar_ms), (Some(150.0), Some(2.0)));
        // An entry with no values, and an address with no entry.
        assert!(parse_tcp_metrics(SHOW, ip("203.0.113.80")).is_none());
        assert!(
            parse_tcp_metrics(SHOW, ip("198.18.7.1")).is_none(),
            "a source is not a destination"
        );
        assert!(parse_tcp_metrics("", ip("127.0.0.1")).is_none());
        // The same address written another way still matches.
        let v6 = "2001:0db8:0:0::2 age 1.000sec cwnd 10 source 2001:db8::1\n";
        assert_eq!(parse_tcp_metrics(v6, ip("2001:db8::2")).expect("v6").cwnd, Some(10));
    }

    #[test]
    fn durations_need_a_unit() {
        assert_eq!(duration_ms("442us"), Some(0.442));
        assert_eq!(duration_ms("12ms"), Some(12.0));
        assert_eq!(duration_ms("1.5s"), Some(1500.0));
        assert_eq!(duration_ms("12"), None);
        assert_eq!(duration_ms("-1ms"), None);
        assert_eq!(duration_ms("xus"), None);
    }

    /// A TCP flow over a veth pair between two fresh namespaces (198.18.9.1 → 198.18.9.2), seen
    /// from namespace a: the live flow while it is open, the saved metrics once it closed.
    #[test]
    #[cfg(target_os = "linux")]
    #[cfg_attr(not(feature = "privileged-tests"), ignore = "privileged: needs root")]
    fn a_real_flow_in_namespaces() {
        use std::io::{Read as _, Write as _};
        let id = std::process::id();
        let ns = testns::Pair::create(&format!("tt-pa-{id}"), &format!("tt-pb-{id}"));
        assert_eq!(
            ns.sysctl_a("net.ipv4.tcp_no_metrics_save"),
            "0",
            "a fresh namespace saves metrics"
        );
        const MB4: usize = 4 << 20;
        let (ready_tx, ready_rx) = std::sync::mpsc::channel();
        let (done_tx, done_rx) = std::sync::mpsc::channel::<()>();
        let b = ns.b.clone();
        // Namespace b: accept, receive 4 MiB, send 4 MiB back, hold the connection until told.
        let server = std::thread::spawn(move || {
            testns::enter(&b);
            let l = std::net::TcpListener::bind("198.18.9.2:5301").expect("listen in b");
            ready_tx.send(()).expect("ready");
            let (mut s, _) = l.accept().expect("accept");
            let mut buf = vec![0u8; MB4];
            s.read_exact(&mut buf).expect("read");
            s.write_all(&buf).expect("write back");
            let _ = done_rx.recv();
            // Wait for the client's close (it closes first: its side saves the metrics).
            let _ = s.read(&mut buf);
        });
        ready_rx.recv().expect("server ready");
        let a = ns.a.clone();
        let client = std::thread::spawn(move || {
            testns::enter(&a);
            let peer = ip("198.18.9.2");
            let mut c = std::net::TcpStream::connect((peer, 5301)).expect("connect from a");
            c.write_all(&vec![7u8; MB4]).expect("send");
            let mut back = vec![0u8; MB4];
            c.read_exact(&mut back).expect("receive");
            let open = gather(peer);
            done_tx.send(()).expect("done");
            drop(c);
            // The metrics are saved when the socket enters TIME_WAIT.
            let mut closed = gather(peer);
            for _ in 0..50 {
                if closed.metrics.is_some() {
                    break;
                }
                std::thread::sleep(std::time::Duration::from_millis(20));
                closed = gather(peer);
            }
            (open, closed)
        });
        let (open, closed) = client.join().expect("client thread");
        server.join().expect("server thread");
        println!("open: {open:?}\nclosed: {closed:?}");

        let f = open.flows.first().unwrap_or_else(|| panic!("a live flow: {open:?}"));
        assert_eq!(open.flows.len(), 1, "{open:?}");
        assert_eq!(f.peer, "198.18.9.2:5301");
        assert!(f.bytes_sent >= MB4 as u64 && f.bytes_received >= MB4 as u64, "{f:?}");
        assert!(
            f.min_rtt_ms.is_some_and(|r| r > 0.0) && f.rtt_ms.is_some_and(|r| r > 0.0),
            "{f:?}"
        );
        assert!(f.delivery_rate_bps.is_some_and(|r| r > 0.0), "{f:?}");
        assert!(f.cc.is_some(), "{f:?}");
        assert!(f.rcv_buf.is_some_and(|b| b > 0), "{f:?}");
        assert!(
            f.rcv_wnd.is_some_and(|w| w > 0),
            "Linux 6.2+ reports tcpi_rcv_wnd: {f:?}"
        );
        let share = open.window_share().expect("window share");
        assert!(share > 0.0 && share <= 1.0, "{share}");
        // The flow's own counters, whatever they are: a veth flow at tens of Gbit/s can lose
        // segments at the receiving CPU's backlog (netdev_max_backlog) when the machine is busy,
        // so "no loss" is no property of this code; the share it reports must be the kernel's.
        #[allow(clippy::cast_precision_loss)]
        let kernel_share = 100.0 * f.bytes_retrans as f64 / f.bytes_sent as f64;
        assert_eq!(open.loss_pct(1), Some(kernel_share), "{f:?}");

        assert!(closed.flows.is_empty(), "{closed:?}");
        let m = closed
            .metrics
            .as_ref()
            .unwrap_or_else(|| panic!("saved metrics: {closed:?}"));
        assert!(m.rtt_ms.is_some_and(|r| r > 0.0), "{m:?}");
        assert!(
            closed.notes.iter().any(|n| n.contains("no live TCP flow")),
            "{closed:?}"
        );

        // An address nobody talked to: no flows, no metrics, and notes that say so.
        let other = std::thread::spawn({
            let a = ns.a.clone();
            move || {
                testns::enter(&a);
                gather(ip("198.18.9.77"))
            }
        })
        .join()
        .expect("thread");
        assert!(other.flows.is_empty() && other.metrics.is_none(), "{other:?}");
        assert!(
            other
                .notes
                .iter()
                .any(|n| n == "the kernel has no saved metrics for 198.18.9.77"),
            "{other:?}"
        );
    }
}

/// Two network namespaces joined by a veth pair, for privileged tests: a = 198.18.9.1/24 on
/// v0, b = 198.18.9.2/24 on v1, loopback up in both; deleted on drop.
#[cfg(all(test, target_os = "linux"))]
pub(crate) mod testns {
    use std::process::Command;

    pub(crate) struct Pair {
        pub a: String,
        pub b: String,
    }

    fn ip(args: &[&str]) {
        let out = Command::new("ip").args(args).output().expect("run ip");
        assert!(
            out.status.success(),
            "ip {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }

    impl Pair {
        pub(crate) fn create(a: &str, b: &str) -> Pair {
            // Built first: whatever step fails, drop deletes what exists.
            let pair = Pair {
                a: a.to_string(),
                b: b.to_string(),
            };
            ip(&["netns", "add", a]);
            ip(&["netns", "add", b]);
            // Created inside a, so the names cannot clash with the root namespace's.
            ip(&[
                "-n", a, "link", "add", "v0", "type", "veth", "peer", "name", "v1", "netns", b,
            ]);
            for (ns, dev, addr) in [(a, "v0", "198.18.9.1/24"), (b, "v1", "198.18.9.2/24")] {
                ip(&["-n", ns, "addr", "add", addr, "dev", dev]);
                ip(&["-n", ns, "link", "set", dev, "up"]);
                ip(&["-n", ns, "link", "set", "lo", "up"]);
            }
            pair
        }

        pub(crate) fn sysctl_a(&self, key: &str) -> String {
            let out = Command::new("ip")
                .args(["netns", "exec", &self.a, "sysctl", "-n", key])
                .output()
                .expect("sysctl");
            String::from_utf8_lossy(&out.stdout).trim().to_string()
        }
    }

    impl Drop for Pair {
        fn drop(&mut self) {
            for ns in [&self.a, &self.b] {
                let _ = Command::new("ip").args(["netns", "del", ns]).output();
            }
        }
    }

    /// Move the calling thread (only it) into namespace `name`: the sockets it opens and the
    /// programs it starts are that namespace's.
    pub(crate) fn enter(name: &str) {
        use std::os::fd::AsRawFd as _;
        let f = std::fs::File::open(format!("/run/netns/{name}")).expect("open the namespace");
        // SAFETY: setns(2) takes a valid descriptor and a flag; it affects only this thread.
        let r = unsafe { libc::setns(f.as_raw_fd(), libc::CLONE_NEWNET) };
        assert_eq!(r, 0, "setns {name}: {}", std::io::Error::last_os_error());
    }
}
