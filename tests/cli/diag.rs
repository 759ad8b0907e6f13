//! `check`, `serve`/`verify`, `advise`'s path test against `serve`, and `inspect`: fake trees
//! for the sysctl logic, loopback for the protocol, and — as root — real kernels in network namespaces joined by the lab's emulated
//! WAN path (lab/lab.sh). Traffic goes only to loopback and 198.18.0.0/15 inside namespaces
//! these tests create.

use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::process::{Child, Command as Std, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use assert_cmd::cargo::cargo_bin;
use serde_json::Value;

use super::lab::Lab;
use super::netns::Netns;
use super::{bsd_tree, fixture, linux_tree, tcptune};

fn finding<'a>(v: &'a Value, id: &str) -> &'a Value {
    v["findings"]
        .as_array()
        .expect("findings")
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

// ---------------------------------------------------------------- check on fake trees

#[test]
fn check_fake_linux_tree_flags_sack_and_window_scaling() {
    let dir = linux_tree(&[
        ("net.ipv4.tcp_sack", Some("0")),
        ("net.ipv4.tcp_window_scaling", Some("0")),
        ("net.ipv4.tcp_timestamps", Some("1")),
    ]);
    let out = tcptune()
        .args(["check", "--format", "json", "--sysctl-dir"])
        .arg(dir.path())
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(1), "{}", String::from_utf8_lossy(&out.stderr));
    let v = parse(&out);
    let sack = finding(&v, "sack");
    assert_eq!(sack["status"], "warn");
    assert!(
        sack["fix"].as_str().expect("fix").contains("net.ipv4.tcp_sack=1"),
        "{sack}"
    );
    let ws = finding(&v, "window-scaling");
    assert_eq!(ws["status"], "fail");
    assert!(ws["message"].as_str().expect("msg").contains("64 KiB"), "{ws}");
    assert_eq!(finding(&v, "timestamps")["status"], "ok");
    assert!(finding(&v, "timestamps")["fix"].is_null());
    // With an injected tree only the sysctls are judged, not this machine's interfaces.
    assert!(
        !v["findings"]
            .as_array()
            .expect("findings")
            .iter()
            .any(|f| f["id"].as_str().is_some_and(|i| i.starts_with("offload:"))),
        "{v:#}"
    );
    assert_eq!(v["summary"]["fail"], 1);

    // The table says the same, fix included.
    let out = tcptune()
        .args(["check", "--sysctl-dir"])
        .arg(dir.path())
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(1));
    let text = String::from_utf8(out.stdout).expect("utf8");
    assert!(text.contains("window-scaling") && text.contains("fail"), "{text}");
    assert!(text.contains("ok, 2 warn, 1 fail"), "{text}");

    // A clean tree (bbr, mtu probing on) exits 0.
    let dir = linux_tree(&[
        ("net.ipv4.tcp_mtu_probing", Some("1")),
        ("net.ipv4.tcp_congestion_control", Some("bbr")),
    ]);
    tcptune()
        .args(["check", "--sysctl-dir"])
        .arg(dir.path())
        .assert()
        .success();
}

#[test]
fn check_fake_freebsd() {
    let dir = bsd_tree(&[
        ("net.inet.tcp.rfc1323", Some("0")),
        ("net.inet.tcp.sack.enable", Some("1")),
    ]);
    let out = tcptune()
        .env("FAKE_SYSCTL_DIR", dir.path())
        .args(["check", "--os", "freebsd", "--format", "json", "--sysctl-cmd"])
        .arg(fixture("fake-sysctl"))
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(1));
    let v = parse(&out);
    assert_eq!(finding(&v, "window-scaling")["status"], "fail");
    assert!(
        finding(&v, "window-scaling")["fix"]
            .as_str()
            .expect("fix")
            .starts_with("sysctl net.inet.tcp.rfc1323=1")
    );
    assert_eq!(finding(&v, "sack")["status"], "ok");
    // newreno: the FreeBSD advice is htcp.
    assert!(
        finding(&v, "congestion-control")["fix"]
            .as_str()
            .expect("fix")
            .contains("cc_htcp")
    );
}

#[test]
fn usage_errors() {
    for (args, code) in [
        (&["verify", "--host", "127.0.0.1", "--time", "61s"][..], 2),
        (&["inspect", "--format", "sysctl"], 2),
        (&["check", "--format", "shell"], 2),
        (&["verify", "--host", "127.0.0.1", "--time", "0s"], 2),
    ] {
        let out = tcptune().args(args).output().expect("run");
        assert_eq!(
            out.status.code(),
            Some(code),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    // Nobody listening: a measurement error (exit 4) with a hint.
    let closed = TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = closed.local_addr().expect("addr").port().to_string();
    drop(closed);
    let out = tcptune()
        .args(["verify", "--host", "127.0.0.1", "--port", &port, "--time", "1s"])
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(4));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("cannot connect") && err.contains("tcptune serve"), "{err}");
}

/// One exit code per kind of bad address: each is a usage error (exit 2) with a line saying
/// why, not a system error (exit 5) for one kind and a usage error for another.
#[test]
fn serve_refuses_every_kind_of_bad_address_as_usage() {
    for (addr, why) in [
        ("1.2.3.4", "no interface has that address"),
        ("2001:db8::1", "no interface has that address"),
        ("fe80::1", "a link-local address needs the interface it is on"),
        ("224.0.0.1", "a multicast address takes no TCP connections"),
        ("ff02::1", "a multicast address takes no TCP connections"),
        ("255.255.255.255", "the broadcast address takes no TCP connections"),
    ] {
        let out = tcptune()
            .args(["serve", "--bind", addr, "--port", "0", "--once"])
            .timeout(Duration::from_secs(10))
            .output()
            .expect("run");
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{addr}: {err}");
        assert!(
            err.starts_with("tcptune: cannot listen on ") && err.contains(why),
            "{addr}: {err}"
        );
    }
}

// ---------------------------------------------------------------- serve: a child we can watch

/// A running `tcptune serve`, its stderr collected line by line; killed on drop.
struct Server {
    child: Child,
    lines: Arc<Mutex<Vec<String>>>,
    /// The thread copying stderr into `lines`: joined once the child has exited, so a failure
    /// message shows everything the server said, not what the thread had got to so far.
    reader: Option<std::thread::JoinHandle<()>>,
    addr: SocketAddr,
}

impl Server {
    /// `tcptune serve ARGS` (inside `ns` when given); waits for its "listening on" line.
    fn start(ns: Option<&str>, args: &[&str]) -> Self {
        let mut cmd = match ns {
            Some(ns) => {
                let mut c = Std::new("ip");
                c.args(["netns", "exec", ns]).arg(cargo_bin("tcptune"));
                c
            }
            None => Std::new(cargo_bin("tcptune")),
        };
        let mut child = cmd
            .arg("serve")
            .args(args)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn serve");
        let mut err = BufReader::new(child.stderr.take().expect("stderr"));
        let mut first = String::new();
        err.read_line(&mut first).expect("serve's first line");
        let addr = first
            .split("listening on ")
            .nth(1)
            .and_then(|r| r.split_whitespace().next())
            .and_then(|a| a.parse().ok())
            .unwrap_or_else(|| panic!("no address in {first:?}"));
        let lines = Arc::new(Mutex::new(vec![first]));
        let sink = Arc::clone(&lines);
        let reader = std::thread::spawn(move || {
            for l in err.lines().map_while(Result::ok) {
                sink.lock().expect("lock").push(l);
            }
        });
        Self {
            child,
            lines,
            reader: Some(reader),
            addr,
        }
    }

    /// The exit status once the server has exited by itself within `within`, and its whole log.
    fn exited(&mut self, within: Duration) -> (std::process::ExitStatus, String) {
        let t = Instant::now();
        loop {
            if let Some(s) = self.child.try_wait().expect("wait") {
                // The child is gone, so its stderr is at EOF and the reader ends.
                if let Some(r) = self.reader.take() {
                    r.join().expect("reader");
                }
                return (s, self.log());
            }
            assert!(
                t.elapsed() < within,
                "serve still running after {within:?}:\n{}",
                self.log()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    fn log(&self) -> String {
        self.lines.lock().expect("lock").join("\n")
    }

    /// Wait until the log has a line containing `text`.
    fn wait_for(&self, text: &str, within: Duration) {
        let t = Instant::now();
        while t.elapsed() < within {
            if self.lines.lock().expect("lock").iter().any(|l| l.contains(text)) {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        panic!("serve never said {text:?}:\n{}", self.log());
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn serve_once_and_verify_over_loopback() {
    let mut server = Server::start(None, &["--bind", "127.0.0.1", "--port", "0", "--once"]);
    let (out, _) = verify_loopback(&server);
    let v = parse(&out);
    assert!(out.status.success());
    assert_one_verdict(&v);
    for k in [
        "throughput_bps",
        "rtt_ms",
        "rwnd_limited_pct",
        "sndbuf_limited_pct",
        "limited_by",
    ] {
        assert!(v.get(k).is_some(), "{k} in {v:#}");
    }
    assert!(v["throughput_bps"].as_f64().expect("bps") > 1e6, "{v:#}");
    assert!(v["bytes"].as_u64().expect("bytes") > 0);
    assert!(
        ["receive-window", "send-buffer", "network", "application"]
            .contains(&v["limited_by"].as_str().expect("verdict"))
    );
    // --once: the server is gone after the test.
    let (status, log) = server.exited(Duration::from_secs(5));
    assert!(status.success(), "{status}: {log}");
    assert!(log.contains("received"), "{log}");
}

// ---------------------------------------------------------------- serve against hostile clients

/// The first `n` bytes of a valid hello asking for a 1 s test.
fn hello_prefix(n: usize) -> Vec<u8> {
    let mut h = Vec::from(*b"tcptune\0");
    h.extend_from_slice(&1u16.to_be_bytes());
    h.extend_from_slice(&0u16.to_be_bytes());
    h.extend_from_slice(&1000u32.to_be_bytes());
    h.truncate(n);
    h
}

/// `verify --time 1s` against `server`; its output and how long it took.
fn verify_loopback(server: &Server) -> (std::process::Output, Duration) {
    let port = server.addr.port().to_string();
    let t = Instant::now();
    let out = tcptune()
        .args([
            "verify",
            "--host",
            "127.0.0.1",
            "--port",
            &port,
            "--time",
            "1s",
            "--format",
            "json",
        ])
        .output()
        .expect("run");
    (out, t.elapsed())
}

#[test]
fn serve_serves_a_real_client_past_half_sent_hellos() {
    let server = Server::start(None, &["--bind", "127.0.0.1", "--port", "0"]);
    // The attack: 16 connections that send 10 of the hello's 16 bytes and hold on.
    let mut held: Vec<TcpStream> = (0..16)
        .map(|_| {
            let mut s = TcpStream::connect(server.addr).expect("connect");
            s.write_all(&hello_prefix(10)).expect("half a hello");
            s
        })
        .collect();
    let (out, took) = verify_loopback(&server);
    assert!(
        out.status.success(),
        "{}\n{}",
        String::from_utf8_lossy(&out.stderr),
        server.log()
    );
    // A 1 s test plus start-up (1.1 to 2.1 s here), served beside the half-sent hellos, not
    // after their 5 s deadlines one by one; room for this VM's stalls.
    assert!(took < Duration::from_secs(12), "verify took {took:?}");

    // A flood larger than the room for pending hellos: the oldest are pushed out, and a real
    // client still gets through at once.
    held.extend((0..48).map(|_| {
        let mut s = TcpStream::connect(server.addr).expect("connect");
        s.write_all(&hello_prefix(10)).expect("half a hello");
        s
    }));
    let (out, took) = verify_loopback(&server);
    assert!(
        out.status.success(),
        "{}\n{}",
        String::from_utf8_lossy(&out.stderr),
        server.log()
    );
    assert!(took < Duration::from_secs(12), "verify took {took:?}");
    server.wait_for("newer connections were waiting", Duration::from_secs(5));
    // Every half-sent hello is closed by the server, pushed out or at its deadline.
    for mut s in held {
        s.set_read_timeout(Some(Duration::from_secs(10))).expect("timeout");
        let mut buf = [0u8; 16];
        assert!(
            matches!(s.read(&mut buf), Ok(0) | Err(_)),
            "a half-sent hello was answered:\n{}",
            server.log()
        );
    }
}

#[test]
fn serve_cuts_a_trickled_hello_at_its_deadline() {
    let server = Server::start(None, &["--bind", "127.0.0.1", "--port", "0"]);
    let mut s = TcpStream::connect(server.addr).expect("connect");
    let t = Instant::now();
    s.set_read_timeout(Some(Duration::from_secs(1))).expect("timeout");
    // A valid hello, one byte a second: 16 s in all, if nothing cut it.
    let mut closed_at = None;
    for b in hello_prefix(16) {
        if s.write_all(&[b]).is_err() {
            closed_at = Some(t.elapsed());
            break;
        }
        let mut buf = [0u8; 16];
        match s.read(&mut buf) {
            Err(e) if matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut) => {}
            Ok(0) | Err(_) => {
                closed_at = Some(t.elapsed());
                break;
            }
            Ok(n) => panic!("the server answered a trickled hello ({n} bytes)"),
        }
    }
    let closed_at = closed_at.unwrap_or_else(|| panic!("never closed:\n{}", server.log()));
    // The deadline is 5 s from the connect, not 5 s from the latest byte (that hello would be
    // whole and answered at 15 s); room above for this VM's stalls.
    assert!(
        (Duration::from_millis(4500)..Duration::from_secs(26)).contains(&closed_at),
        "closed after {closed_at:?}:\n{}",
        server.log()
    );
    server.wait_for("no hello within 5 s", Duration::from_secs(2));
}

#[test]
fn serve_rate_limits_lines_about_refused_clients() {
    let server = Server::start(None, &["--bind", "127.0.0.1", "--port", "0"]);
    const FLOOD: usize = 60;
    for _ in 0..FLOOD {
        let mut s = TcpStream::connect(server.addr).expect("connect");
        s.write_all(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n").expect("junk");
    }
    // Every junk client is accounted for, as its own line or in a "suppressed N" count.
    let t = Instant::now();
    let (shown, suppressed, lines) = loop {
        let lines = server.lines.lock().expect("lock").clone();
        let shown = lines.iter().filter(|l| l.contains("not a tcptune peer")).count();
        let suppressed: usize = lines
            .iter()
            .filter_map(|l| l.split("suppressed ").nth(1))
            .filter_map(|r| r.split_whitespace().next())
            .map(|n| n.parse::<usize>().expect("count"))
            .sum();
        if shown + suppressed >= FLOOD || t.elapsed() > Duration::from_secs(10) {
            break (shown, suppressed, lines);
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    assert_eq!(shown + suppressed, FLOOD, "{lines:#?}");
    assert!(suppressed > 0, "{lines:#?}");
    // At most 10 a second: the flood takes well under 3 s even on a loaded host.
    assert!(shown <= 30, "{shown} lines:\n{lines:#?}");
    let elapsed = t.elapsed();
    assert!(
        lines.iter().any(|l| l.contains("at most 10 a second")),
        "{elapsed:?} {lines:#?}"
    );
    // Still serving.
    let (out, _) = verify_loopback(&server);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
}

// ---------------------------------------------------------------- the path test against serve

/// `advise --host`'s path test (measure) against a real `tcptune serve` (diag), both called as
/// the library: only here, above both layers, may one test use the two.
mod path_test {
    use std::net::{IpAddr, SocketAddr};
    use std::sync::Arc;
    use std::time::Duration;

    use tcptune::diag::BufferCap;
    use tcptune::diag::serve::{EndFacts, Log, ServeRequest, Server};
    use tcptune::measure::evidence::{Direction, TestPeer};
    use tcptune::measure::pathtest::{PathTestRequest, run, run_reverse};
    use tcptune::os::Os;

    type Serving = std::thread::JoinHandle<Result<(), tcptune::error::Error>>;

    /// A `once` tcptune serve on loopback in a thread.
    fn serve_once() -> (SocketAddr, Serving) {
        serve(1, tcptune::tcp::proto::DEFAULT_MAX_BUFFER)
    }

    /// The same, forcing receive buffers to at most `max_buffer` (`serve --max-buffer`).
    fn serve_once_within(max_buffer: u64) -> (SocketAddr, Serving) {
        serve(1, max_buffer)
    }

    /// A tcptune serve of `tests` tests on loopback in a thread, forcing buffers to at most
    /// `max_buffer`.
    fn serve(tests: u32, max_buffer: u64) -> (SocketAddr, Serving) {
        let server = Server::bind(&ServeRequest {
            bind: IpAddr::from([127, 0, 0, 1]),
            port: 0,
            tests: Some(tests),
            max_buffer,
        })
        .expect("bind");
        let addr = server.local_addr();
        let log: Arc<dyn Log> = Arc::new(|_: &str| {});
        let facts = || EndFacts {
            receive: BufferCap::receive(Os::Linux, None),
            send: BufferCap::send(Os::Linux, None),
        };
        let run = std::thread::spawn(move || server.run(&facts, log));
        (addr, run)
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn a_path_test_against_tcptune_serve_reads_the_flow_and_the_receivers_window() {
        // Loopback at full speed, timed: alone on the host.
        let _quiet = crate::lab::quiet_host();
        let (addr, server) = serve_once();
        let req = PathTestRequest {
            addr: addr.ip(),
            port: addr.port(),
            time: Duration::from_millis(1500),
            // Loopback moves gigabytes a second: the time bound ends this one.
            max_bytes: 1 << 40,
            buffer: 4 << 20,
            cc: None,
            connect_timeout: Duration::from_secs(1),
            stop_early: false,
        };
        let mut calls = 0;
        let t = run(&req, &mut |_| calls += 1).expect("a test");
        server.join().expect("server thread").expect("the test ran to its end");
        assert!(calls >= 2, "progress reported");
        assert_eq!(t.peer, Some(TestPeer::Tcptune));
        assert!(t.bytes > 1 << 20, "{t:?}");
        assert!(t.goodput_bps > 1e6, "{t:?}");
        assert!(t.segs_out.is_some_and(|s| s > 100), "{t:?}");
        assert!(t.min_rtt_ms.is_some_and(|r| r > 0.0), "{t:?}");
        assert!(t.delivery_rate_bps.is_some_and(|r| r > 1e6), "{t:?}");
        assert!(t.cc.is_some());
        // The receiver's share of its buffer, as the serve side read it: a fraction.
        let share = t.window_share.expect("Linux 6.2+ reports the advertised window");
        assert!(share > 0.05 && share <= 1.0, "{share}");
        let buf = t.receiver_buffer.expect("its buffer");
        if tcptune::host::is_root() {
            // Forced before the handshake: 4 MiB asked, reported doubled.
            assert_eq!(buf, 8 << 20, "{t:?}");
            // Nothing went wrong forcing it. (On loopback serve's reading is the bottleneck,
            // so the fixed 8 MiB window may hold the flow, and a note may say so.)
            assert!(t.notes.iter().all(|n| n.starts_with("held by")), "{:?}", t.notes);
        } else {
            assert!(t.notes.iter().any(|n| n.contains("could not force")), "{:?}", t.notes);
        }
    }

    /// An anonymous client asking 1 GiB gets what serve --max-buffer allows, and the path
    /// test says so.
    #[cfg(target_os = "linux")]
    #[test]
    fn the_servers_maximum_bounds_the_forced_receive_buffer() {
        // Loopback at full speed, timed: alone on the host.
        let _quiet = crate::lab::quiet_host();
        let (addr, server) = serve_once_within(8 << 20);
        let req = PathTestRequest {
            addr: addr.ip(),
            port: addr.port(),
            time: Duration::from_millis(500),
            max_bytes: 1 << 40,
            buffer: 1 << 30,
            cc: None,
            connect_timeout: Duration::from_secs(1),
            stop_early: false,
        };
        let t = run(&req, &mut |_| {}).expect("a test");
        server.join().expect("server thread").expect("ended");
        if tcptune::host::is_root() {
            // 4 MiB asked of the kernel, which keeps 8 MiB: the maximum, not 2 GiB.
            assert_eq!(t.receiver_buffer, Some(8 << 20), "{t:?}");
            assert!(
                t.notes
                    .iter()
                    .any(|n| n.contains("less than the 1073741824 bytes (1 GiB) asked") && n.contains("--max-buffer")),
                "{:?}",
                t.notes
            );
        } else {
            assert!(t.notes.iter().any(|n| n.contains("could not force")), "{:?}", t.notes);
        }
    }

    /// Both directions against one real serve: this host sends, then serve sends with the
    /// same sampled sender and reports its readings; this end reads its own window share.
    #[cfg(target_os = "linux")]
    #[test]
    fn forward_and_reverse_against_tcptune_serve() {
        // Loopback at full speed, timed: alone on the host.
        let _quiet = crate::lab::quiet_host();
        let (addr, server) = serve(2, tcptune::tcp::proto::DEFAULT_MAX_BUFFER);
        let req = PathTestRequest {
            addr: addr.ip(),
            port: addr.port(),
            time: Duration::from_millis(1500),
            max_bytes: 1 << 40,
            buffer: 4 << 20,
            cc: None,
            connect_timeout: Duration::from_secs(1),
            stop_early: false,
        };
        let f = run(&req, &mut |_| {}).expect("a forward test");
        assert_eq!(f.direction, Direction::Forward);
        let mut calls = 0;
        let t = std::time::Instant::now();
        let r = run_reverse(&req, &mut |_| calls += 1).expect("a reverse test");
        // 1.5 s of data, and the result at once: not the drain grace (30 s). Room for this
        // VM's stalls.
        assert!(t.elapsed() < Duration::from_secs(8), "{:?}", t.elapsed());
        server
            .join()
            .expect("server thread")
            .expect("both tests ran to their end");
        assert!(calls >= 2, "progress reported");
        assert_eq!((r.peer, r.direction), (Some(TestPeer::Tcptune), Direction::Reverse));
        assert!(r.bytes > 1 << 20 && r.goodput_bps > 1e6, "{r:?}");
        // The far end's sender's readings.
        assert!(r.segs_out.is_some_and(|s| s > 100), "{r:?}");
        assert!(r.min_rtt_ms.is_some_and(|m| m > 0.0), "{r:?}");
        assert!(r.delivery_rate_bps.is_some_and(|d| d > 1e6), "{r:?}");
        assert!(r.cc.is_some(), "{r:?}");
        assert!(r.rwnd_limited_pct.is_some() && r.sndbuf_limited_pct.is_some(), "{r:?}");
        assert!(r.duration_s > 1.0 && r.duration_s < 8.0, "{r:?}");
        // This end's own window share as receiver.
        let share = r.window_share.expect("Linux 6.2+ reports the advertised window");
        assert!(share > 0.05 && share <= 1.0, "{share}");
        if tcptune::host::is_root() {
            // Forced before the SYN: 4 MiB asked, reported doubled.
            assert_eq!(r.receiver_buffer, Some(8 << 20), "{r:?}");
            assert!(r.notes.iter().all(|n| !n.contains("could not force")), "{:?}", r.notes);
        }
    }

    /// `tcptune peer` as `advise --ssh` starts it: stdin a pipe, its port read from its one
    /// line on stdout.
    struct Peer {
        child: std::process::Child,
        port: u16,
        /// Its stdin: dropping it is the end of the SSH session.
        stdin: Option<std::process::ChildStdin>,
    }

    impl Peer {
        fn start(args: &[&str]) -> Self {
            use std::io::BufRead as _;
            let mut child = std::process::Command::new(assert_cmd::cargo::cargo_bin("tcptune"))
                .arg("peer")
                .args(args)
                .stdin(std::process::Stdio::piped())
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::null())
                .spawn()
                .expect("spawn peer");
            let mut line = String::new();
            std::io::BufReader::new(child.stdout.take().expect("stdout"))
                .read_line(&mut line)
                .expect("its line");
            let v: serde_json::Value = serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}: {line:?}"));
            assert_eq!(v["tcptune_peer"], 1, "{v}");
            assert_eq!(v["protocol"], u64::from(tcptune::tcp::proto::VERSION), "{v}");
            assert_eq!(v["version"], env!("CARGO_PKG_VERSION"), "{v}");
            let port = v["port"].as_u64().and_then(|p| u16::try_from(p).ok()).expect("a port");
            let stdin = child.stdin.take();
            Self { child, port, stdin }
        }

        fn request(&self) -> PathTestRequest {
            PathTestRequest {
                addr: IpAddr::from([127, 0, 0, 1]),
                port: self.port,
                time: Duration::from_secs(1),
                max_bytes: 1 << 40,
                buffer: 1 << 20,
                cc: None,
                connect_timeout: Duration::from_secs(1),
                stop_early: false,
            }
        }

        /// Its exit status, once it has exited by itself within `within`.
        fn exited(&mut self, within: Duration) -> std::process::ExitStatus {
            let t = std::time::Instant::now();
            loop {
                if let Some(s) = self.child.try_wait().expect("wait") {
                    return s;
                }
                assert!(t.elapsed() < within, "peer still running after {within:?}");
                std::thread::sleep(Duration::from_millis(20));
            }
        }
    }

    impl Drop for Peer {
        fn drop(&mut self) {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }

    /// The end of the SSH session (stdin's end) ends the peer within a few seconds, after a
    /// path test against it on its default address (`::`, IPv4 clients mapped).
    #[test]
    fn a_peer_serves_a_path_test_and_exits_when_its_stdin_ends() {
        // Loopback at full speed, timed: alone on the host.
        let _quiet = crate::lab::quiet_host();
        let mut peer = Peer::start(&[]);
        let t = run(&peer.request(), &mut |_| {}).expect("a forward test against the peer");
        assert!(t.bytes > 0, "{t:?}");
        // One test of two: still serving.
        std::thread::sleep(Duration::from_millis(200));
        assert!(peer.child.try_wait().expect("wait").is_none(), "exited after one test");
        drop(peer.stdin.take());
        let status = peer.exited(Duration::from_secs(3));
        assert!(status.success(), "{status}");
    }

    /// By default a peer serves the forward and the reverse test, then exits by itself.
    #[test]
    fn a_peer_exits_after_its_two_tests_or_its_lifetime() {
        let mut peer = Peer::start(&["--bind", "127.0.0.1"]);
        let req = peer.request();
        run(&req, &mut |_| {}).expect("forward");
        let r = run_reverse(&req, &mut |_| {}).expect("reverse");
        assert_eq!(r.direction, Direction::Reverse);
        assert!(peer.exited(Duration::from_secs(5)).success());

        let mut peer = Peer::start(&["--lifetime", "1s"]);
        let t = std::time::Instant::now();
        assert!(peer.exited(Duration::from_secs(6)).success());
        assert!(t.elapsed() >= Duration::from_millis(900), "{:?}", t.elapsed());
    }

    #[test]
    fn the_byte_bound_stops_the_test() {
        let (addr, server) = serve_once();
        let req = PathTestRequest {
            addr: addr.ip(),
            port: addr.port(),
            time: Duration::from_secs(20),
            max_bytes: 3 << 20,
            buffer: 0,
            cc: None,
            connect_timeout: Duration::from_secs(1),
            stop_early: false,
        };
        let t = run(&req, &mut |_| {}).expect("a test");
        server.join().expect("server thread").expect("ended");
        assert_eq!(t.bytes, 3 << 20);
        assert!(t.duration_s < 10.0, "{t:?}");
        assert!(t.notes.iter().any(|n| n.contains("byte bound")), "{:?}", t.notes);
    }
}

// ---------------------------------------------------------------- real kernels (root)

/// Run `f` on a thread that has entered network namespace `ns` (setns is per thread).
pub(crate) fn in_netns<T: Send + 'static>(
    ns: &str,
    f: impl FnOnce() -> T + Send + 'static,
) -> std::thread::JoinHandle<T> {
    let path = format!("/run/netns/{ns}");
    std::thread::spawn(move || {
        let file = std::fs::File::open(&path).expect("netns file");
        // SAFETY: a valid namespace fd; setns changes only this thread's network namespace.
        let rc = unsafe { libc::setns(std::os::fd::AsRawFd::as_raw_fd(&file), libc::CLONE_NEWNET) };
        assert_eq!(rc, 0, "setns {path}");
        f()
    })
}

pub(crate) fn sysctl(ns: &str, kv: &str) {
    let ok = Std::new("ip")
        .args(["netns", "exec", ns, "sysctl", "-qw", kv])
        .status()
        .expect("sysctl");
    assert!(ok.success(), "{ns}: sysctl -w {kv}");
}

#[test]
#[cfg_attr(not(feature = "privileged-tests"), ignore = "privileged: needs root")]
fn check_in_a_netns_flags_sack_and_window_scaling() {
    let ns = Netns::new("chk");
    let bin = cargo_bin("tcptune");
    let bin = bin.to_str().expect("utf8");
    let before = parse(&ns.exec(bin, &["check", "--format", "json"]));
    assert_eq!(finding(&before, "sack")["status"], "ok", "{before:#}");
    assert_eq!(finding(&before, "window-scaling")["status"], "ok");
    // The real machine's facts are there too.
    for id in ["retransmissions", "tcp-memory", "tuning-daemons"] {
        let _ = finding(&before, id);
    }

    ns.exec(
        "sysctl",
        &["-qw", "net.ipv4.tcp_sack=0", "net.ipv4.tcp_window_scaling=0"],
    );
    let out = ns.exec(bin, &["check", "--format", "json"]);
    assert_eq!(out.status.code(), Some(1), "{}", String::from_utf8_lossy(&out.stderr));
    let v = parse(&out);
    let sack = finding(&v, "sack");
    assert!(sack["status"] == "warn" || sack["status"] == "fail", "{sack}");
    assert!(
        sack["fix"].as_str().expect("fix").contains("net.ipv4.tcp_sack=1"),
        "{sack}"
    );
    let ws = finding(&v, "window-scaling");
    assert_eq!(ws["status"], "fail");
    assert!(
        ws["fix"]
            .as_str()
            .expect("fix")
            .contains("net.ipv4.tcp_window_scaling=1")
    );
}

fn verify(lab: &Lab, extra: &[&str]) -> Value {
    let mut args = vec!["verify", "--host", "198.18.0.2", "--format", "json"];
    args.extend(extra);
    let out = lab.tcptune(&lab.ns_a, &args);
    assert!(out.status.success(), "verify: {}", String::from_utf8_lossy(&out.stderr));
    let v = parse(&out);
    assert_one_verdict(&v);
    v
}

/// One flow, one verdict: the advice names the verdict's limit and never contradicts it (a
/// flaky run once said "raise tcp_rmem" and "the buffers are not what limits this flow").
fn assert_one_verdict(v: &Value) {
    let advice: Vec<&str> = v["advice"]
        .as_array()
        .expect("advice")
        .iter()
        .map(|l| l.as_str().expect("line"))
        .collect();
    let raises = advice.iter().any(|l| l.contains(": raise "));
    let network = advice.iter().any(|l| l.starts_with("network limited"));
    match v["limited_by"].as_str().expect("verdict") {
        "receive-window" => {
            assert!(advice.iter().any(|l| l.starts_with("receive window limited")), "{v:#}");
            assert!(!network, "{v:#}");
        }
        "send-buffer" => {
            assert!(advice.iter().any(|l| l.starts_with("send buffer limited")), "{v:#}");
            assert!(!network, "{v:#}");
        }
        "network" => assert!(network && !raises, "{v:#}"),
        "application" => assert!(!network && !raises, "{v:#}"),
        other => panic!("verdict {other}: {v:#}"),
    }
    assert!(
        !(raises && advice.iter().any(|l| l.contains("not what limits"))),
        "{v:#}"
    );
}

/// The whole serve/verify/inspect story on one lab path: 50 ms, 100 Mbit/s (BDP 625,000 bytes).
#[test]
#[cfg_attr(not(feature = "privileged-tests"), ignore = "privileged: needs root")]
fn verify_inspect_and_serve_over_the_lab_path() {
    let lab = Lab::up_with("d", "50ms", &["--rate", "100mbit"]);
    let (a, b) = (lab.ns_a.clone(), lab.ns_b.clone());
    let server = Server::start(Some(&b), &["--bind", "198.18.0.2"]);
    assert_eq!(server.addr.to_string(), "198.18.0.2:5301");
    // What advise recommends for this path.
    let adv = parse(
        &tcptune()
            .args([
                "advise",
                "--rtt",
                "50ms",
                "--bandwidth",
                "100mbit",
                "--format",
                "json",
                "--allow-lower",
            ])
            .output()
            .expect("advise"),
    );
    let value = |key: &str| {
        adv["settings"]
            .as_array()
            .expect("settings")
            .iter()
            .find(|s| s["key"] == key)
            .and_then(|s| s["value"].as_str())
            .unwrap_or_else(|| panic!("no {key} in {adv:#}"))
            .to_string()
    };
    let (advised_rmem, advised_wmem) = (value("net.ipv4.tcp_rmem"), value("net.ipv4.tcp_wmem"));
    assert!(advised_rmem.starts_with("4096 131072 "), "{advised_rmem}");
    let quick = ["--time", "3s", "--bandwidth", "100mbit"];

    // 1. Receiver's tcp_rmem max 256 KiB: receive-window limited, and the fix names its tcp_rmem.
    sysctl(&b, "net.ipv4.tcp_rmem=4096 131072 262144");
    sysctl(&a, &format!("net.ipv4.tcp_wmem={advised_wmem}"));
    let v = verify(&lab, &quick);
    eprintln!("small rmem: {v:#}");
    assert_eq!(v["limited_by"], "receive-window", "{v:#}");
    // The counter ticks only while the window is full: a clear share, not most of the time.
    assert!(v["rwnd_limited_pct"].as_f64().expect("pct") >= 10.0);
    let bps = v["throughput_bps"].as_f64().expect("bps");
    assert!(bps < 40e6, "a 256 KiB buffer cannot fill 100 Mbit/s at 50 ms: {bps}");
    let rtt = v["rtt_ms"].as_f64().expect("rtt");
    assert!((rtt - 50.0).abs() < 5.0, "{rtt}");
    // Sized for the measured RTT: 2 x BDP + 10 % for 50.0x ms at 100 Mbit/s, in 64 KiB steps.
    let needed = v["receiver"]["needed"].as_u64().expect("needed");
    assert!((1_376_256..=1_441_792).contains(&needed), "{v:#}");
    let advice = v["advice"][0].as_str().expect("advice");
    assert!(
        advice.contains("on the receiver (now 262144 bytes")
            && advice.contains(&format!("sysctl -w 'net.ipv4.tcp_rmem=4096 131072 {needed}'")),
        "{advice}"
    );

    // check --host from the receiver's side sees the same shortfall in its own buffers.
    let out = lab.tcptune(
        &b,
        &[
            "check",
            "--host",
            "198.18.0.1",
            "--bandwidth",
            "100mbit",
            "--format",
            "json",
        ],
    );
    assert_eq!(out.status.code(), Some(1));
    let c = parse(&out);
    let recv = finding(&c, "buffers:receive");
    assert_eq!(recv["status"], "fail", "{c:#}");
    // Sized as advise sizes a path it could not test (no tcptune serve on the sender): 6 × BDP.
    assert!(
        recv["fix"].as_str().expect("fix").contains("tcp_rmem=4096 131072 3"),
        "{recv}"
    );
    // Its send buffer (the namespace default, 4 MiB) covers the 1.6 MB the path needs.
    assert_eq!(finding(&c, "buffers:send")["status"], "ok", "{c:#}");

    // 2. Sender's tcp_wmem max 256 KiB: send-buffer limited.
    sysctl(&b, &format!("net.ipv4.tcp_rmem={advised_rmem}"));
    sysctl(&a, "net.ipv4.tcp_wmem=4096 16384 262144");
    let v = verify(&lab, &quick);
    eprintln!("small wmem: {v:#}");
    assert_eq!(v["limited_by"], "send-buffer", "{v:#}");
    assert!(v["sndbuf_limited_pct"].as_f64().expect("pct") >= 20.0);
    // Sized for the measured RTT (a hair above 50 ms), so equal to advise's or one step above.
    let needed = v["sender"]["needed"].as_u64().expect("needed");
    assert!((1_507_328..=1_572_864).contains(&needed), "{v:#}");
    assert!(
        v["advice"][0]
            .as_str()
            .expect("advice")
            .contains(&format!("tcp_wmem=4096 16384 {needed}'")),
        "{v:#}"
    );

    // 3. Advised buffers on both ends: the network (100 Mbit/s) is the limit.
    sysctl(&a, &format!("net.ipv4.tcp_wmem={advised_wmem}"));
    let bg = {
        let lab_ns = a.clone();
        std::thread::spawn(move || {
            Std::new("ip")
                .args(["netns", "exec", &lab_ns])
                .arg(cargo_bin("tcptune"))
                .args([
                    "verify",
                    "--host",
                    "198.18.0.2",
                    "--format",
                    "json",
                    "--time",
                    "3s",
                    "--bandwidth",
                    "100mbit",
                ])
                .output()
                .expect("verify")
        })
    };
    // One test at a time: a second client is told the server is busy (exit 4).
    std::thread::sleep(Duration::from_millis(700));
    let busy = lab.tcptune(&a, &["verify", "--host", "198.18.0.2", "--time", "1s"]);
    assert_eq!(busy.status.code(), Some(4));
    assert!(String::from_utf8_lossy(&busy.stderr).contains("busy"));
    let out = bg.join().expect("thread");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v = parse(&out);
    assert_one_verdict(&v);
    eprintln!("advised: {v:#}");
    assert_eq!(v["limited_by"], "network", "{v:#}");
    assert!(v["throughput_bps"].as_f64().expect("bps") > 70e6, "{v:#}");
    // Buffer lines may come first (a share above their own threshold); the verdict's line is there.
    assert!(
        v["advice"]
            .as_array()
            .expect("advice")
            .iter()
            .any(|l| l.as_str().is_some_and(|l| l.starts_with("network limited"))),
        "{v:#}"
    );

    // 4. inspect sees a flow held open over the path, with the path's RTT (±5 %).
    let listener = in_netns(&b, || TcpListener::bind("198.18.0.2:0").expect("listen"))
        .join()
        .expect("thread");
    let port = listener.local_addr().expect("addr").port();
    let sink = std::thread::spawn(move || {
        if let Ok((mut s, _)) = listener.accept() {
            let mut buf = [0u8; 65536];
            while matches!(s.read(&mut buf), Ok(n) if n > 0) {}
        }
    });
    let (stop_tx, stop_rx) = std::sync::mpsc::channel::<()>();
    let sender = in_netns(&a, move || {
        let mut s = TcpStream::connect(("198.18.0.2", port)).expect("connect");
        s.set_nodelay(true).expect("nodelay");
        // Ten full segments (MSS 1448) every 20 ms: 5.8 Mbit/s, far below the path rate, so no
        // queue inflates the RTT; an even number of segments, so the receiver acknowledges every
        // second one at once and no delayed ACK stretches an RTT sample.
        while stop_rx.try_recv().is_err() {
            s.write_all(&[0u8; 10 * 1448]).expect("write");
            std::thread::sleep(Duration::from_millis(20));
        }
    });
    std::thread::sleep(Duration::from_millis(1500));
    let out = lab.tcptune(&a, &["inspect", "--host", "198.18.0.2", "--format", "json"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v = parse(&out);
    let peer = format!("198.18.0.2:{port}");
    let flow = v["flows"]
        .as_array()
        .expect("flows")
        .iter()
        .find(|f| f["peer"] == peer.as_str())
        .unwrap_or_else(|| panic!("no flow to {peer}: {v:#}"));
    eprintln!("inspect: {flow:#}");
    let rtt = flow["rtt_ms"].as_f64().expect("rtt");
    assert!((rtt - 50.0).abs() <= 2.5, "inspect RTT {rtt} ms vs the path's 50 ms");
    assert!(flow["cwnd"].as_u64().expect("cwnd") >= 10);
    assert!(flow["delivery_rate_bps"].as_f64().expect("rate") > 0.0);
    assert!(flow["local"].as_str().expect("local").starts_with("198.18.0.1:"));
    // The filter works: no flow to another peer.
    let none = parse(&lab.tcptune(&a, &["inspect", "--host", "198.18.0.9", "--format", "json"]));
    assert_eq!(none["flows"].as_array().expect("flows").len(), 0);
    stop_tx.send(()).expect("stop");
    sender.join().expect("sender");
    sink.join().expect("sink");

    // 5. serve survives junk, a client that vanishes before its hello, and one that vanishes
    //    mid-test; then a normal verify still works.
    let addr = server.addr;
    in_netns(&a, move || {
        let mut junk = TcpStream::connect(addr).expect("connect");
        junk.write_all(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n").expect("write");
        junk.set_read_timeout(Some(Duration::from_secs(6))).expect("timeout");
        let mut buf = [0u8; 64];
        // The server closes without answering.
        assert!(matches!(junk.read(&mut buf), Ok(0) | Err(_)));

        drop(TcpStream::connect(addr).expect("connect"));

        let mut s = TcpStream::connect(addr).expect("connect");
        let mut hello = Vec::from(*b"tcptune\0");
        hello.extend_from_slice(&1u16.to_be_bytes());
        hello.extend_from_slice(&0u16.to_be_bytes());
        hello.extend_from_slice(&10_000u32.to_be_bytes());
        s.write_all(&hello).expect("hello");
        let mut answer = [0u8; 16];
        s.read_exact(&mut answer).expect("answer");
        assert_eq!(&answer[..8], b"tcptune\0");
        assert_eq!(&answer[10..12], &[0, 0], "status ok");
        s.write_all(&vec![0u8; 512 * 1024]).expect("data");
        // Vanish: a reset, as when the client is killed.
        let linger = libc::linger {
            l_onoff: 1,
            l_linger: 0,
        };
        // SAFETY: a valid socket and a linger struct of the right size.
        unsafe {
            libc::setsockopt(
                std::os::fd::AsRawFd::as_raw_fd(&s),
                libc::SOL_SOCKET,
                libc::SO_LINGER,
                (&raw const linger).cast(),
                u32::try_from(size_of::<libc::linger>()).expect("size"),
            );
        }
        drop(s);
    })
    .join()
    .expect("clients");
    server.wait_for("not a tcptune peer", Duration::from_secs(5));
    server.wait_for("went away before its hello", Duration::from_secs(5));
    server.wait_for("test aborted", Duration::from_secs(15));
    let v = verify(&lab, &["--time", "1s"]);
    assert!(v["throughput_bps"].as_f64().expect("bps") > 1e6, "{v:#}");
    assert!(server.child.id() > 0);
    eprintln!("serve log:\n{}", server.log());
}
