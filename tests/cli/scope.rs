//! `--scope path` against the real kernel, read back from the kernel (INET_DIAG through
//! `tcptune inspect`, and `ip -d route show`), never inferred. Three namespaces this test
//! creates: A (this host: a bridge, br0, 198.18.31.1/24 and 2001:2:31::1/64) and, behind that
//! same device, B (.2) and C (.3). Root only; CI runs as root. Addresses: 198.18.0.0/15 and the
//! IPv6 benchmarking prefix 2001:2::/48, inside these namespaces only.

use std::path::Path;
use std::process::{Command as Std, Output, Stdio};
use std::time::{Duration, Instant};

use assert_cmd::cargo::cargo_bin;
use serde_json::Value;

use super::lab_support::quiet_host;
use super::netns::Netns;

pub(super) const A: &str = "198.18.31.1";
pub(super) const B: &str = "198.18.31.2";
pub(super) const C: &str = "198.18.31.3";
/// `--scope path` to B, the path given: 150 ms at 500 Mbit/s (after `apply` or `advise`).
pub(super) const SCOPED: [&str; 8] = [
    "--scope",
    "path",
    "--host",
    B,
    "--rtt",
    "150ms",
    "--bandwidth",
    "500mbit",
];
pub(super) const B6: &str = "2001:2:31::2";

/// A with its bridge, B and C behind it, and a state directory for A's snapshots.
pub(super) struct Three {
    pub(super) a: Netns,
    pub(super) b: Netns,
    pub(super) c: Netns,
    pub(super) state: tempfile::TempDir,
    /// A's default congestion control: cubic where this host lets a namespace choose it,
    /// else reno (net.ipv4.tcp_allowed_congestion_control is the host's, read-only here).
    pub(super) default_cc: String,
}

pub(super) fn ok(out: &Output, what: &str) -> String {
    assert!(
        out.status.success(),
        "{what}: exit {:?}\n{}",
        out.status.code(),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

pub(super) fn ip(args: &[&str]) {
    ok(&Std::new("ip").args(args).output().expect("ip"), &args.join(" "));
}

impl Three {
    /// `ip -n A route LINE` (its words split at spaces: `add 198.18.0.2/32 dev br0 mtu 1400`),
    /// which must succeed.
    pub(super) fn ip_route(&self, line: &str) {
        let mut args = vec!["-n", self.a.name.as_str(), "route"];
        args.extend(line.split_whitespace());
        ip(&args);
    }

    /// The same for IPv6 (`ip -n A -6 route LINE`).
    pub(super) fn ip_route6(&self, line: &str) {
        let mut args = vec!["-n", self.a.name.as_str(), "-6", "route"];
        args.extend(line.split_whitespace());
        ip(&args);
    }

    pub(super) fn up(tag: &str) -> Self {
        let (a, b, c) = (
            Netns::new(&format!("{tag}a")),
            Netns::new(&format!("{tag}b")),
            Netns::new(&format!("{tag}c")),
        );
        ip(&["-n", &a.name, "link", "add", "br0", "type", "bridge"]);
        for (ns, port, v4, v6) in [(&b, "pb", B, B6), (&c, "pc", C, "2001:2:31::3")] {
            ip(&[
                "link", "add", port, "netns", &a.name, "type", "veth", "peer", "name", "eth0", "netns", &ns.name,
            ]);
            ip(&["-n", &a.name, "link", "set", port, "master", "br0", "up"]);
            ip(&["-n", &ns.name, "addr", "add", &format!("{v4}/24"), "dev", "eth0"]);
            ip(&[
                "-n",
                &ns.name,
                "addr",
                "add",
                &format!("{v6}/64"),
                "dev",
                "eth0",
                "nodad",
            ]);
            ip(&["-n", &ns.name, "link", "set", "eth0", "up"]);
            ip(&["-n", &ns.name, "link", "set", "lo", "up"]);
        }
        ip(&["-n", &a.name, "addr", "add", &format!("{A}/24"), "dev", "br0"]);
        ip(&["-n", &a.name, "addr", "add", "2001:2:31::1/64", "dev", "br0", "nodad"]);
        ip(&["-n", &a.name, "link", "set", "br0", "up"]);
        ip(&["-n", &a.name, "link", "set", "lo", "up"]);
        let allowed = a.sysctl("net.ipv4.tcp_allowed_congestion_control");
        let default_cc = if allowed.split_whitespace().any(|c| c == "cubic") {
            "cubic"
        } else {
            "reno"
        };
        for ns in [&a, &b, &c] {
            ok(
                &ns.exec(
                    "sysctl",
                    &["-w", &format!("net.ipv4.tcp_congestion_control={default_cc}")],
                ),
                "sysctl",
            );
        }
        let three = Self {
            a,
            b,
            c,
            state: tempfile::tempdir().expect("tempdir"),
            default_cc: default_cc.to_string(),
        };
        // B and C answer on the bridge before anything is measured.
        three.wait_reachable(B);
        three
    }

    pub(super) fn wait_reachable(&self, host: &str) {
        let t = Instant::now();
        while !self.a.exec("ping", &["-c", "1", "-W", "1", host]).status.success() {
            assert!(t.elapsed() < Duration::from_secs(10), "{host} unreachable");
        }
    }

    /// `tcptune --state-dir STATE ARGS` in A (a command without snapshots drops it).
    pub(super) fn tcptune(&self, args: &[&str]) -> Output {
        let state = self.state.path().to_str().expect("utf8");
        Std::new("ip")
            .args(["netns", "exec", &self.a.name])
            .arg(cargo_bin("tcptune"))
            .args(["--state-dir", state])
            .args(args)
            .output()
            .expect("tcptune")
    }

    /// `apply --scope path` toward `host`, fresh advice for a given path (bbr: unmeasured).
    pub(super) fn apply(&self, host: &str, extra: &[&str]) -> Output {
        let mut args = [&["apply"][..], &SCOPED].concat();
        args[4] = host;
        args.extend_from_slice(extra);
        self.tcptune(&args)
    }

    /// `tcptune apply ARGS --pause-before-routes SECS` started in A (in a process group of its
    /// own), returned once its snapshot is `applying` and `written` (a key and its value) is in
    /// the kernel: the sysctls written, no route yet. Its stdout and stderr are kept for
    /// `wait_with_output`.
    pub(super) fn paused_apply(&self, args: &[&str], secs: &str, (key, value): (&str, &str)) -> std::process::Child {
        use std::os::unix::process::CommandExt as _;
        let child = Std::new("ip")
            .args(["netns", "exec", &self.a.name])
            .arg(cargo_bin("tcptune"))
            .arg("--state-dir")
            .arg(self.state.path())
            .args(args)
            .args(["--pause-before-routes", secs])
            .process_group(0)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn");
        let t0 = Instant::now();
        while !(states(self) == ["applying"] && self.a.sysctl(key) == value) {
            assert!(t0.elapsed() < Duration::from_secs(30), "no snapshot in state applying");
            std::thread::sleep(Duration::from_millis(20));
        }
        child
    }

    /// `ansible-playbook -c local` in A on `book`, its files and temporary files in `dir`.
    pub(super) fn play(&self, venv: &Path, book: &Path, dir: &Path, extra: &[&str]) -> String {
        let out = Std::new("ip")
            .args(["netns", "exec", &self.a.name])
            .arg(venv.join("bin/ansible-playbook"))
            .args(["-c", "local", "-i", "localhost,"])
            .arg(book)
            .arg("-e")
            .arg(format!(
                "ansible_python_interpreter={}",
                venv.join("bin/python").display()
            ))
            .arg("-e")
            .arg(format!("tcptune_sysctl_file={}", dir.join("60-tcptune.conf").display()))
            .arg("-e")
            .arg(format!("tcptune_prior_file={}", dir.join("state/prior.conf").display()))
            .args(extra)
            .env("ANSIBLE_NOCOLOR", "1")
            .env("ANSIBLE_LOCAL_TEMP", dir.join("ansible-tmp"))
            .env("ANSIBLE_REMOTE_TEMP", dir.join("ansible-tmp"))
            .output()
            .expect("ansible-playbook");
        ok(&out, &format!("ansible-playbook {extra:?}"))
    }

    /// What `ip -d route show` says in A, both families: what revert must give back.
    pub(super) fn routes(&self) -> String {
        let v4 = ok(&self.a.exec("ip", &["-d", "route", "show"]), "ip route");
        let v6 = ok(&self.a.exec("ip", &["-d", "-6", "route", "show"]), "ip -6 route");
        format!("{v4}{v6}")
    }
}

/// A server in `ns`, as `iperf3 -s -1 -B addr -p port`, killed when dropped.
struct Server(std::process::Child);

impl Server {
    fn start(ns: &Netns, addr: &str, port: &str) -> Self {
        let child = Std::new("ip")
            .args(["netns", "exec", &ns.name, "iperf3", "-s", "-1", "-B", addr, "-p", port])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("iperf3 -s");
        Self(child)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A client in `ns` for 3 s, `iperf3 -c HOST -p PORT ARGS`.
fn client(ns: &Netns, host: &str, port: &str, args: &[&str]) -> std::process::Child {
    Std::new("ip")
        .args(["netns", "exec", &ns.name, "iperf3", "-c", host, "-p", port, "-t", "3"])
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("iperf3 -c")
}

/// Waits until the servers listen (iperf3 takes a moment to bind).
fn wait_listening(ns: &Netns, port: &str) {
    let t = Instant::now();
    while !String::from_utf8_lossy(&ns.exec("ss", &["-tlnH", &format!("sport = :{port}")]).stdout).contains(port) {
        assert!(
            t.elapsed() < Duration::from_secs(5),
            "nothing listens on {port} in {}",
            ns.name
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The sending flows A's kernel holds (INET_DIAG through `tcptune inspect`): each peer and
/// local port with its congestion control and whether the route chose it.
fn flows(t: &Three) -> Vec<(String, String, String, bool)> {
    let out = t.tcptune(&["inspect", "--format", "json"]);
    let v: Value = serde_json::from_slice(ok(&out, "inspect").as_bytes()).expect("json");
    v["flows"]
        .as_array()
        .expect("flows")
        .iter()
        .filter(|f| f["bytes_acked"].as_u64().unwrap_or(0) > 1_000_000)
        .map(|f| {
            (
                f["local"].as_str().unwrap_or_default().to_string(),
                f["peer"].as_str().unwrap_or_default().to_string(),
                f["congestion_control"].as_str().unwrap_or_default().to_string(),
                f["cc_from_route"].as_bool().unwrap_or_default(),
            )
        })
        .collect()
}

#[test]
#[cfg_attr(not(feature = "privileged-tests"), ignore = "privileged: needs root")]
fn a_scoped_apply_gives_bbr_to_the_path_only_and_revert_gives_the_routes_back() {
    let t = Three::up("scp");
    let before = t.routes();
    let out = t.apply(B, &[]);
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    ok(&out, "apply --scope path");
    assert!(err.contains(&format!("route {B}/32: a host route added")), "{err}");
    let shown = t.routes();
    assert!(
        shown.contains(&format!("unicast {B} dev br0 proto 116 scope link src {A} congctl bbr")),
        "{shown}"
    );
    assert!(!shown.contains(&format!("{C} ")), "{shown}");

    // Four flows at once, 3 s each, read from A's kernel after 1.5 s.
    let _quiet = quiet_host();
    let _servers = [
        Server::start(&t.b, B, "5201"),
        Server::start(&t.b, B, "5202"),
        Server::start(&t.c, C, "5201"),
        Server::start(&t.a, A, "5203"),
    ];
    for (ns, port) in [(&t.b, "5201"), (&t.b, "5202"), (&t.c, "5201"), (&t.a, "5203")] {
        wait_listening(ns, port);
    }
    let clients = [
        client(&t.a, B, "5201", &[]),
        client(&t.a, B, "5202", &["-C", "cubic"]),
        client(&t.a, C, "5201", &[]),
        // B opens the connection, A sends on it (-R).
        client(&t.b, A, "5203", &["-R"]),
    ];
    std::thread::sleep(Duration::from_millis(1500));
    let seen = flows(&t);
    for mut c in clients {
        let _ = c.wait();
    }
    let find = |peer: &str, port: &str| {
        seen.iter()
            .find(|(local, p, _, _)| {
                (p == &format!("{peer}:{port}")) || (port == "5203" && local.ends_with(":5203") && p.starts_with(peer))
            })
            .map(|(_, _, cc, route)| (cc.clone(), *route))
            .unwrap_or_else(|| panic!("no sending flow to {peer}:{port} in {seen:?}"))
    };
    assert_eq!(find(B, "5201"), ("bbr".to_string(), true), "a new connection to B");
    assert_eq!(find(B, "5202"), ("cubic".to_string(), false), "iperf3 -C cubic to B");
    assert_eq!(
        find(C, "5201"),
        (t.default_cc.clone(), false),
        "C, behind the same device"
    );
    assert_eq!(find(B, "5203"), ("bbr".to_string(), true), "a connection B opened to A");

    // Issue 36, point 8: every line fits 100 columns piped, the route's too (a route's command
    // is about 90 columns: "route DEST: FROM → TO" on one line ran to 150).
    let fits = |what: &str, text: &str| {
        for l in text.lines() {
            assert!(l.chars().count() <= 100, "{what}: {} columns: {l}", l.chars().count());
        }
    };
    fits("apply", &err);
    let listing = t.tcptune(&["snapshots"]);
    ok(&listing, "snapshots");
    let listing = String::from_utf8_lossy(&listing.stdout).into_owned();
    fits("snapshots", &listing);
    assert!(
        !listing.contains("| no |"),
        "no notes column squeezed to two characters: {listing}"
    );
    let dry = t.tcptune(&["revert", "--dry-run"]);
    ok(&dry, "revert --dry-run");
    fits("revert --dry-run", &String::from_utf8_lossy(&dry.stdout));

    let out = t.tcptune(&["revert"]);
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    ok(&out, "revert");
    fits("revert", &err);
    assert!(err.contains("1 host route(s) put back"), "{err}");
    assert_eq!(t.routes(), before, "revert gives back the routes as they were");
}

#[test]
#[cfg_attr(not(feature = "privileged-tests"), ignore = "privileged: needs root")]
fn a_host_route_there_keeps_every_attribute_and_comes_back_byte_for_byte() {
    let t = Three::up("scx");
    t.ip_route(&format!("add {B}/32 dev br0 mtu 1400 advmss 1360 initcwnd 20"));
    t.ip_route(&format!("add {B6}/128 dev br0 mtu 1400 initcwnd 20"));
    let before = t.routes();
    for host in [B, B6] {
        ok(&t.apply(host, &[]), "apply --scope path");
    }
    let shown = t.routes();
    assert!(
        shown.contains(&format!(
            "unicast {B} dev br0 proto boot scope link mtu 1400 advmss 1360 initcwnd 20 congctl bbr"
        )),
        "{shown}"
    );
    assert!(
        shown.contains(&format!(
            "{B6} dev br0 proto boot scope global metric 1024 mtu 1400 initcwnd 20 congctl bbr pref medium"
        )),
        "{shown}"
    );
    assert!(
        shown.lines().filter(|l| l.contains("congctl bbr")).count() == 2,
        "{shown}"
    );
    let listed = ok(&t.tcptune(&["snapshots", "--format", "json"]), "snapshots");
    assert!(listed.contains(&format!("route {B}/32 congctl bbr")), "{listed}");
    // The latest first: the IPv6 one, then the IPv4 one.
    for _ in 0..2 {
        ok(&t.tcptune(&["revert"]), "revert");
    }
    assert_eq!(t.routes(), before);

    // Someone changes tcptune's route after the apply: revert says so and leaves it.
    ok(&t.apply(B, &[]), "apply");
    t.ip_route(&format!("change {B}/32 dev br0 mtu 1300"));
    let changed = t.routes();
    let out = t.tcptune(&["revert"]);
    assert_eq!(out.status.code(), Some(3), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("route(s) changed since snapshot"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(t.routes(), changed, "left alone");
}

/// The snapshot's state as listed.
pub(super) fn states(t: &Three) -> Vec<String> {
    let v: Value =
        serde_json::from_str(&ok(&t.tcptune(&["snapshots", "--format", "json"]), "snapshots")).expect("json");
    v["snapshots"]
        .as_array()
        .expect("snapshots")
        .iter()
        .map(|s| s["state"].as_str().unwrap_or_default().to_string())
        .collect()
}

#[test]
#[cfg_attr(not(feature = "privileged-tests"), ignore = "privileged: needs root")]
fn killed_between_its_snapshot_and_its_route_then_reverted_leaves_the_routes_as_they_were() {
    let t = Three::up("sck");
    let before = t.routes();
    // The snapshot is on disk (state applying) and the sysctls written: the route is next.
    let written = ("net.ipv4.tcp_notsent_lowat", "625000");
    let mut child = t.paused_apply(&[&["apply"][..], &SCOPED].concat(), "60", written);
    let pgid = i32::try_from(child.id()).expect("pid");
    // SAFETY: kill(2) on the process group this test created.
    assert_eq!(unsafe { libc_kill(-pgid, 9) }, 0);
    let _ = child.wait();
    assert_eq!(t.routes(), before, "no route written");

    let out = t.tcptune(&["revert"]);
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    ok(&out, "revert");
    assert!(err.contains("half-applied"), "{err}");
    assert_eq!(t.routes(), before);
    assert_eq!(t.a.sysctl("net.ipv4.tcp_notsent_lowat"), "4294967295");
    assert_eq!(states(&t), ["reverted"]);

    // `--for`: the timer deletes the route by itself.
    ok(&t.apply(B, &["--for", "2s"]), "apply --for");
    assert_ne!(t.routes(), before);
    let t0 = Instant::now();
    while states(&t).last().map(String::as_str) != Some("reverted") {
        assert!(t0.elapsed() < Duration::from_secs(20), "the timer did not revert");
        std::thread::sleep(Duration::from_millis(200));
    }
    assert_eq!(t.routes(), before);
}

#[test]
#[cfg_attr(not(feature = "privileged-tests"), ignore = "privileged: needs root")]
fn routes_tcptune_will_not_touch_are_refused_before_anything_is_written() {
    let t = Three::up("scr");
    let refused = |host: &str, says: &str| {
        let before = t.routes();
        let out = t.apply(host, &[]);
        let err = String::from_utf8_lossy(&out.stderr).into_owned();
        assert_eq!(out.status.code(), Some(3), "{host}: {err}");
        assert!(err.contains(says), "{host}: {err}");
        assert_eq!(err.lines().filter(|l| l.starts_with("tcptune: ")).count(), 1, "{err}");
        assert_eq!(t.routes(), before, "{host}: nothing written");
        assert_eq!(
            t.a.sysctl("net.ipv4.tcp_notsent_lowat"),
            "4294967295",
            "{host}: no sysctl written"
        );
    };
    // A destination of another table (ip rule).
    t.ip_route("add 198.18.32.0/24 dev br0 table 100");
    ip(&["-n", &t.a.name, "rule", "add", "to", "198.18.32.0/24", "lookup", "100"]);
    refused("198.18.32.9", "routing table 100 (ip rule), not main");
    // A multipath route.
    t.ip_route(&format!("add 198.18.33.0/24 nexthop via {B} nexthop via {C}"));
    refused("198.18.33.9", "is multipath (2 next hops)");
    // This host's own address.
    refused(A, "an address of this host");

    // Through a gateway, on a route with an mtu: the host route copies both, and goes again.
    t.ip_route(&format!("add 198.18.34.0/24 via {B} mtu 1300"));
    let before = t.routes();
    ok(&t.apply("198.18.34.9", &[]), "apply through a gateway");
    let shown = t.routes();
    assert!(
        shown.contains(&format!(
            "unicast 198.18.34.9 via {B} dev br0 proto 116 scope global src {A} mtu 1300 congctl bbr"
        )),
        "{shown}"
    );
    ok(&t.tcptune(&["revert"]), "revert");
    assert_eq!(t.routes(), before);
    let before = t.routes();
    assert!(!before.contains("proto 116"), "{before}");
    // Without CAP_NET_ADMIN (nobody), a file whose one line is the route: refused before
    // anything, saying what is missing.
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("route.conf");
    std::fs::write(&file, format!("# route: ip route replace {B}/32 dev br0 congctl bbr\n")).expect("write");
    std::fs::set_permissions(dir.path(), std::os::unix::fs::PermissionsExt::from_mode(0o755)).expect("chmod");
    let out = Std::new("ip")
        .args([
            "netns",
            "exec",
            &t.a.name,
            "setpriv",
            "--reuid=65534",
            "--regid=65534",
            "--clear-groups",
        ])
        .args(["--inh-caps=-all", "--bounding-set=-all"])
        .arg(cargo_bin("tcptune"))
        .args(["apply", file.to_str().expect("utf8"), "--state-dir"])
        .arg(dir.path().join("state"))
        .output()
        .expect("setpriv");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{err}");
    assert!(err.contains("changing routes needs CAP_NET_ADMIN"), "{err}");
    assert_eq!(t.routes(), before);
}

/// The playbook of `advise --scope path --format ansible`, run by ansible-playbook in A: the
/// route set (once: a second run changes nothing), and `--tags revert` takes it out again.
#[test]
#[cfg_attr(
    not(feature = "privileged-tests"),
    ignore = "privileged: needs root and the clients tests/run.sh installs"
)]
fn the_playbook_sets_the_route_once_and_its_revert_takes_it_out() {
    let venv = super::fleet::venv();
    let t = Three::up("sca");
    let before = t.routes();
    let out = t.tcptune(&[&["advise"][..], &SCOPED, &["--format", "ansible"]].concat());
    let dir = tempfile::tempdir().expect("tmp");
    let book = dir.path().join("tcptune.yml");
    std::fs::write(&book, ok(&out, "advise --format ansible")).expect("write");
    let play = |extra: &[&str]| t.play(&venv, &book, dir.path(), extra);
    play(&[]);
    let shown = t.routes();
    assert!(
        shown.contains(&format!("unicast {B} dev br0 proto 116 scope link src {A} congctl bbr")),
        "{shown}"
    );
    let again = play(&[]);
    assert!(again.contains("changed=0"), "{again}");
    play(&["--tags", "revert"]);
    assert_eq!(t.routes(), before);
}

/// What `--scope path` refuses before anything is measured or written: one line, exit 2.
#[test]
fn scope_usage_errors_are_said_before_anything_runs() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("t.conf");
    std::fs::write(&file, "net.ipv4.tcp_rmem = 4096 131072 6291456\n").expect("write");
    let given = ["--rtt", "150ms", "--bandwidth", "500mbit"];
    for (args, says) in [
        (vec!["advise", "--scope", "path"], "--scope path needs the path's host"),
        (
            vec!["advise", "--scope", "path", "--host", "a", "--host", "b"],
            "give one --host",
        ),
        (
            vec!["advise", "--scope", "path", "--host", B, "--os", "freebsd"],
            "freebsd has no per-destination",
        ),
        (
            vec!["advise", "--scope", "path", "--host", B, "--format", "tuned"],
            "--format tuned has no place for a route",
        ),
        (
            vec!["advise", "--scope", "path", "--host", B, "--format", "k8s"],
            "--format k8s has no place for a route",
        ),
        (vec!["advise", "--host", B, "--format", "networkd"], "add --scope path"),
        (
            vec!["apply", file.to_str().expect("utf8"), "--scope", "path"],
            "a FILE says its own scope",
        ),
    ] {
        let mut all = args.clone();
        if args[0] == "advise" {
            all.extend_from_slice(&given);
        }
        let out = super::tcptune().args(&all).output().expect("run");
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{all:?}: {err}");
        assert!(err.contains(says), "{all:?}: {err}");
        assert!(out.stdout.is_empty(), "{all:?}");
    }
}

/// A file's route lines must be ones tcptune takes: host routes, unlocked, main table, each
/// destination once, at most 64.
#[test]
fn a_files_route_line_is_checked_like_its_keys() {
    let dir = tempfile::tempdir().expect("tempdir");
    for (text, says) in [
        (
            "# route: ip route replace 198.18.0.0/24 dev x congctl bbr\n",
            "t.conf:1: 198.18.0.0/24: a host route is /32",
        ),
        (
            "# route: ip route replace 198.18.0.2 dev x congctl lock bbr\n",
            "congctl unlocked",
        ),
        (
            "# route: ip route replace 198.18.0.2 congctl bbr\n# route: ip route replace 198.18.0.3 congctl bbr\n\
             # route: ip route replace 198.18.0.2/32 congctl reno\n",
            "t.conf:3: a second route line to 198.18.0.2 (the first is line 1)",
        ),
        (
            &(1..=65)
                .map(|i| format!("# route: ip route replace 198.18.1.{i} congctl bbr\n"))
                .collect::<String>(),
            "t.conf:65: more than 64 route lines",
        ),
    ] {
        let file = dir.path().join("t.conf");
        std::fs::write(&file, text).expect("write");
        let out = super::tcptune()
            .args(["apply", "--dry-run"])
            .arg(&file)
            .output()
            .expect("run");
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{text}: {err}");
        assert!(err.contains(says), "{text}: {err}");
    }
}

/// `ip -d -n NS route show DEST` in A: the host route to DEST as the kernel shows it ("" when
/// none).
fn route_to(t: &Three, dest: &str) -> String {
    let family = if dest.contains(':') { "-6" } else { "-4" };
    let out = Std::new("ip")
        .args([family, "-d", "-n", &t.a.name, "route", "show", dest])
        .output()
        .expect("ip route show");
    ok(&out, &format!("ip route show {dest}")).trim().to_string()
}

/// A file may carry a route line per destination (`tcptune mesh` writes them): apply writes
/// each host route after the sysctls, each with its own congestion control (a host route
/// already there is replaced, the others added); revert takes every one back, the replaced one
/// byte for byte; a file one of whose routes cannot be written changes nothing at all.
#[test]
#[cfg_attr(not(feature = "privileged-tests"), ignore = "privileged: needs root")]
fn a_file_with_a_route_per_destination_applies_and_reverts_them_all() {
    let t = Three::up("mrl");
    t.wait_reachable(C);
    // C has a host route of its own before the apply: replaced, then put back.
    t.ip_route(&format!("add {C}/32 dev br0 mtu 1400"));
    let before = t.routes();
    let c_before = route_to(&t, C);
    assert!(
        c_before.contains("mtu 1400") && !c_before.contains("congctl"),
        "{c_before}"
    );
    let rmem = t.a.sysctl("net.ipv4.tcp_rmem");
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("mesh.conf");
    std::fs::write(
        &file,
        format!(
            "net.ipv4.tcp_rmem = 4096 131072 9437184\n# route: ip route replace {B}/32 dev br0 congctl bbr\n\
             # route: ip route replace {C}/32 dev br0 congctl reno\n# route: ip route replace {B6}/128 dev br0 congctl bbr\n"
        ),
    )
    .expect("write");
    let out = t.tcptune(&["apply", file.to_str().expect("utf8")]);
    let id = ok(&out, "apply");
    assert!(!id.trim().is_empty());
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(err.contains(&format!("route {B}/32: a host route added")), "{err}");
    assert!(err.contains(&format!("route {C}/32: its host route replaced")), "{err}");
    assert!(err.contains("applied 4 change(s)"), "{err}");
    for (dest, cc) in [(B, "bbr"), (C, "reno"), (B6, "bbr")] {
        let shown = route_to(&t, dest);
        assert!(
            shown.contains(&format!("{dest} ")) && shown.contains(&format!("congctl {cc}")),
            "{dest} congctl {cc}: {shown}"
        );
        assert_eq!(shown.lines().count(), 1, "one host route to {dest}: {shown}");
    }
    assert!(route_to(&t, C).contains("mtu 1400"), "C's route keeps its mtu");
    assert!(route_to(&t, B).contains("proto 116"), "B's route is tcptune's own");
    assert_eq!(t.a.sysctl("net.ipv4.tcp_rmem"), "4096 131072 9437184");
    let out = t.tcptune(&["revert"]);
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    ok(&out, "revert");
    assert!(err.contains("3 host route(s) put back"), "{err}");
    assert_eq!(route_to(&t, B), "", "tcptune's route to B deleted");
    assert_eq!(route_to(&t, B6), "", "tcptune's route to B6 deleted");
    assert_eq!(route_to(&t, C), c_before, "C's own route back as it was");
    assert_eq!(t.routes(), before);
    assert_eq!(t.a.sysctl("net.ipv4.tcp_rmem"), rmem);
    assert_eq!(states(&t), ["reverted"]);

    // The third destination cannot be given a route: it has no path (no route to
    // 198.18.99.9), or it is behind an `unreachable` route. Refused before anything is
    // written, the first two routes and the sysctl included, and no snapshot is taken.
    ip(&["-n", &t.a.name, "route", "add", "unreachable", "198.18.98.0/24"]);
    let before = t.routes();
    for (third, says) in [
        ("198.18.99.9", "no route leads to 198.18.99.9"),
        ("198.18.98.9", "unreachable route, not a unicast one"),
    ] {
        std::fs::write(
            &file,
            format!(
                "net.ipv4.tcp_rmem = 4096 131072 9437184\n# route: ip route replace {B}/32 dev br0 congctl bbr\n\
                 # route: ip route replace {C}/32 dev br0 congctl reno\n# route: ip route replace {third} congctl bbr\n"
            ),
        )
        .expect("write");
        let out = t.tcptune(&["apply", file.to_str().expect("utf8")]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(3), "{third}: {err}");
        assert!(err.contains(says), "{third}: {err}");
        assert!(err.contains("nothing was written"), "{third}: {err}");
        assert!(out.stdout.is_empty(), "{third}: no snapshot id");
        assert_eq!(t.routes(), before, "{third}: {err}");
        assert_eq!(t.a.sysctl("net.ipv4.tcp_rmem"), rmem, "{third}: {err}");
        assert_eq!(states(&t), ["reverted"], "{third}: no snapshot taken");
    }
}

unsafe extern "C" {
    #[link_name = "kill"]
    fn libc_kill(pid: i32, sig: i32) -> i32;
}

/// Issue 35 c: the `apply --for` timer's log counts and names the host route it put back, as
/// `revert` does, not only the keys.
#[test]
#[cfg_attr(not(feature = "privileged-tests"), ignore = "privileged: needs root")]
fn the_for_timers_log_names_the_route_it_put_back() {
    let t = Three::up("i35t");
    let before = t.routes();
    let id = ok(&t.apply(B, &["--for", "1s"]), "apply --for").trim().to_string();
    let log = t.state.path().join(format!("timer-{id}.log"));
    let t0 = Instant::now();
    let text = loop {
        let text = std::fs::read_to_string(&log).unwrap_or_default();
        if text.contains("reverted snapshot") {
            break text;
        }
        assert!(
            t0.elapsed() < Duration::from_secs(20),
            "the timer did not revert: {text}"
        );
        std::thread::sleep(Duration::from_millis(100));
    };
    assert_eq!(t.routes(), before);
    assert!(text.contains(&format!(": route {B}/32:\n")), "{text}");
    assert!(text.contains("1 host route(s) put back"), "{text}");
}

/// Issue 35 d: reverting the older of two snapshots of one route names the newer one that set
/// the route there now, as a key's conflict names it: refused, and with `--force` warned.
#[test]
#[cfg_attr(not(feature = "privileged-tests"), ignore = "privileged: needs root")]
fn reverting_the_older_of_two_snapshots_of_one_route_names_the_newer() {
    let t = Three::up("i35n");
    let advice = ok(
        &t.tcptune(&[&["advise"][..], &SCOPED, &["--format", "sysctl"]].concat()),
        "advise",
    );
    let line = advice
        .lines()
        .find(|l| l.starts_with("# route: "))
        .expect("a route line");
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("route.conf");
    let other = line.replace(" congctl bbr", &format!(" congctl {}", t.default_cc));
    std::fs::write(&file, format!("{other}\n")).expect("write");
    let older = ok(&t.apply(B, &[]), "apply").trim().to_string();
    let newer = ok(&t.tcptune(&["apply", file.to_str().expect("utf8")]), "apply FILE")
        .trim()
        .to_string();
    let routes = t.routes();
    for (args, code) in [
        (vec!["revert", &older], 3),
        (vec!["revert", &older, "--force", "--dry-run"], 0),
    ] {
        let out = t.tcptune(&args);
        let err = String::from_utf8_lossy(&out.stderr).into_owned();
        assert_eq!(out.status.code(), Some(code), "{args:?}: {err}");
        assert!(err.contains(&format!("set by snapshot {newer}")), "{args:?}: {err}");
    }
    assert_eq!(t.routes(), routes, "nothing changed");
}

/// Issue 35 b: a truncated snapshot is never skipped in silence. Its route stays, so a bare
/// `revert` (and its dry run) cannot say every snapshot is reverted: it names the file and
/// exits 2, as `revert ID` of it does; `snapshots` lists it as damaged.
#[test]
#[cfg_attr(not(feature = "privileged-tests"), ignore = "privileged: needs root")]
fn a_truncated_snapshot_is_named_never_skipped() {
    let t = Three::up("i35b");
    let id = ok(&t.apply(B, &[]), "apply").trim().to_string();
    let file = t.state.path().join("snapshots").join(format!("{id}.json"));
    let text = std::fs::read(&file).expect("read");
    std::fs::write(&file, &text[..text.len() / 2]).expect("truncate");
    let routes = t.routes();
    let shown = file.display().to_string();
    for args in [vec!["revert"], vec!["revert", "--dry-run"], vec!["revert", &id]] {
        let out = t.tcptune(&args);
        let err = String::from_utf8_lossy(&out.stderr).into_owned();
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(&format!("{shown} could not be read")), "{args:?}: {err}");
        assert!(!err.contains("nothing to revert"), "{args:?}: {err}");
    }
    assert_eq!(t.routes(), routes, "nothing changed");
    let table = ok(&t.tcptune(&["snapshots"]), "snapshots");
    let row = table
        .lines()
        .find(|l| l.contains(&id))
        .unwrap_or_else(|| panic!("{table}"));
    assert!(row.contains("damaged"), "{table}");
    let v: Value = serde_json::from_str(&ok(&t.tcptune(&["snapshots", "--format", "json"]), "json")).expect("json");
    assert_eq!(v["damaged"][0]["id"], id.as_str(), "{v}");
    assert_eq!(v["damaged"][0]["file"], shown.as_str(), "{v}");
}

/// Issue 35 a: `check` tells a route an applied snapshot names (its revert removes it) from a
/// proto 116 route no snapshot names (planted, or left by a snapshot gone): that one is a
/// warning whose fix is the exact command that removes it, quoted for a shell.
#[test]
#[cfg_attr(not(feature = "privileged-tests"), ignore = "privileged: needs root")]
fn check_tells_a_route_a_snapshot_names_from_one_none_does() {
    let t = Three::up("i35c");
    let id = ok(&t.apply(B, &[]), "apply").trim().to_string();
    t.ip_route(&format!("add {C}/32 dev br0 proto 116 congctl reno"));
    let findings = || -> Vec<Value> {
        let out = t.tcptune(&["check", "--format", "json"]);
        let v: Value = serde_json::from_slice(&out.stdout).expect("check's json");
        v["findings"].as_array().expect("findings").clone()
    };
    let all = findings();
    let by = |id: &str| {
        all.iter()
            .find(|f| f["id"] == id)
            .unwrap_or_else(|| panic!("no {id}: {all:#?}"))
    };
    let named = by("routes:tcptune");
    let said = named["message"].as_str().expect("message");
    assert_eq!(named["status"], "ok", "{said}");
    assert!(
        said.contains(&format!("{B}/32 congctl bbr dev br0 (snapshot {id})")),
        "{said}"
    );
    assert!(!said.contains(C), "{said}");
    let planted = by(&format!("routes:tcptune:{C}/32"));
    let said = planted["message"].as_str().expect("message");
    assert_eq!(planted["status"], "warn", "{said}");
    assert!(said.contains("no snapshot names it"), "{said}");
    let fix = planted["fix"].as_str().expect("fix");
    let cmd = format!("ip route del {C}/32 dev br0 proto 116");
    assert!(fix.ends_with(&cmd), "{fix}");
    // The fix does what it says: run by a shell in A, the planted route is gone, tcptune's stays.
    ok(&t.a.exec("sh", &["-c", &cmd]), "the fix");
    let all = findings();
    assert!(
        !all.iter().any(|f| f["id"] == format!("routes:tcptune:{C}/32")),
        "{all:#?}"
    );
    assert!(t.routes().contains(&format!("{B} dev br0 proto 116")), "{}", t.routes());
}

/// Issue 36, point 3: the file's usual save-and-load steps skipped the route (`sysctl -p`), and
/// nothing said it ends at reboot. Now the file's header loads it with `tcptune apply`, and the
/// file, the table and `--explain` say in one line what becomes of the route and how to keep it;
/// following the header's own load step sets the route.
#[test]
#[cfg_attr(not(feature = "privileged-tests"), ignore = "privileged: needs root")]
fn the_route_says_what_survives_a_reboot_and_the_files_load_step_sets_it() {
    let t = Three::up("scl");
    let before = t.routes();
    let run = |extra: &[&str]| ok(&t.tcptune(&[&["advise"][..], &SCOPED, extra].concat()), "advise");
    let file = run(&["--format", "sysctl"]);
    let life = "sysctl -p skips it, and it ends at reboot or when br0 goes down; keep it with";
    for (what, text) in [
        ("file", file.replace("\n#   ", " ")),
        ("table", run(&["--format", "table"]).replace("\n  ", " ")),
        (
            "explain",
            run(&["--format", "sysctl", "--explain"]).replace("\n#   ", " "),
        ),
    ] {
        assert!(text.contains(life), "{what}: {text}");
        assert!(
            text.contains("`tcptune apply FILE` at boot, or --format networkd"),
            "{what}: {text}"
        );
    }
    let header = file.replace("\n#   ", " ");
    let load = header
        .lines()
        .find_map(|l| l.split_once("load it: ").map(|(_, cmd)| cmd.to_string()))
        .expect("a load step");
    assert!(
        load.starts_with("tcptune apply /etc/sysctl.d/") && load.ends_with("(sysctl -p skips the route)"),
        "{load}"
    );
    // Following it (the file saved elsewhere: a test writes no /etc) sets the route.
    let dir = tempfile::tempdir().expect("tmp");
    let saved = dir.path().join("60-tcptune.conf");
    std::fs::write(&saved, &file).expect("write");
    ok(
        &t.tcptune(&["apply", saved.to_str().expect("utf8")]),
        "the header's load step",
    );
    assert!(
        t.routes()
            .contains(&format!("{B} dev br0 proto 116 scope link src {A} congctl bbr")),
        "{}",
        t.routes()
    );
    ok(&t.tcptune(&["revert"]), "revert");
    assert_eq!(t.routes(), before);
}
