//! The route surface against a hostile or careless user (issue 35): every finding of the
//! fourth trust round, each in namespaces this test creates (tests/cli/scope.rs's `Three`).

use super::scope::{A, B, B6, C, SCOPED, Three, ip, ok, states};

use std::path::{Path, PathBuf};
use std::process::{Command as Std, Output};

use serde_json::Value;

fn err(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// A refusal: exit `code`, one `tcptune:` line containing `says`.
fn refused(out: &Output, code: i32, says: &str) {
    let e = err(out);
    assert_eq!(out.status.code(), Some(code), "{e}");
    assert!(e.contains(says), "wanted {says:?} in: {e}");
    assert_eq!(e.lines().filter(|l| l.starts_with("tcptune: ")).count(), 1, "{e}");
}

/// What a POSIX shell makes of `line` as a command's words (the real sh parses it).
fn sh_words(line: &str) -> Vec<String> {
    let out = Std::new("sh")
        .arg("-c")
        .arg(format!("printf '%s\\0' {line}"))
        .output()
        .expect("sh");
    assert!(out.status.success(), "sh: {line}");
    assert!(out.stderr.is_empty(), "{line}: {}", err(&out));
    String::from_utf8(out.stdout)
        .expect("utf8")
        .split_terminator('\0')
        .map(str::to_string)
        .collect()
}

/// A veth pair inside A, `name` with 198.19.`net`.1/24 on it (its peer `p{net}`), both up:
/// 198.19.`net`.9 is reached through `name`.
fn device(t: &Three, name: &str, net: u8) {
    let peer = format!("p{net}");
    ip(&[
        "-n", &t.a.name, "link", "add", name, "type", "veth", "peer", "name", &peer,
    ]);
    ip(&[
        "-n",
        &t.a.name,
        "addr",
        "add",
        &format!("198.19.{net}.1/24"),
        "dev",
        name,
    ]);
    ip(&["-n", &t.a.name, "link", "set", name, "up"]);
    ip(&["-n", &t.a.name, "link", "set", &peer, "up"]);
}

/// The words of the route advise writes toward 198.19.`net`.9 behind the device `name`.
fn meant(net: u8, name: &str) -> Vec<String> {
    let (dest, src) = (format!("198.19.{net}.9/32"), format!("198.19.{net}.1"));
    [
        "ip", "route", "replace", &dest, "dev", name, "proto", "116", "scope", "link", "src", &src, "congctl", "bbr",
    ]
    .map(String::from)
    .to_vec()
}

/// `advise --scope path --host HOST` for a given path in A, in `format`.
fn advise(t: &Three, host: &str, format: &str) -> String {
    let out = t.tcptune(&[
        "advise",
        "--scope",
        "path",
        "--host",
        host,
        "--rtt",
        "150ms",
        "--bandwidth",
        "500mbit",
        "--format",
        format,
    ]);
    ok(&out, &format!("advise --format {format}"))
}

/// The `networkctl status ...` command a networkd drop-in's comment gives to paste.
fn networkd_hint(drop_in: &str) -> String {
    drop_in
        .split_once("`networkctl status")
        .and_then(|(_, rest)| rest.split_once("` names it"))
        .map(|(cmd, _)| format!("networkctl status{cmd}"))
        .unwrap_or_else(|| panic!("no networkctl hint: {drop_in}"))
}

/// Runs a `--format shell` script with `sh`, `ip` and `sysctl` replaced by programs that
/// record their arguments: the words each got, one list per call, and what sh said on stderr.
fn run_script(script: &str) -> (Vec<Vec<String>>, String) {
    let dir = tempfile::tempdir().expect("tmp");
    let log = dir.path().join("log");
    for prog in ["ip", "sysctl"] {
        let p = dir.path().join(prog);
        std::fs::write(
            &p,
            format!("#!/bin/sh\n{{ printf '%s\\0' {prog} \"$@\"; printf '\\n'; }} >> \"$LOG\"\n"),
        )
        .expect("stub");
        std::fs::set_permissions(&p, std::os::unix::fs::PermissionsExt::from_mode(0o755)).expect("chmod");
    }
    std::fs::write(dir.path().join("script.sh"), script).expect("script");
    let out = Std::new("sh")
        .arg(dir.path().join("script.sh"))
        .env("PATH", format!("{}:/usr/bin:/bin", dir.path().display()))
        .env("LOG", &log)
        .output()
        .expect("sh");
    assert!(out.status.success(), "{}", err(&out));
    let calls = std::fs::read_to_string(&log)
        .unwrap_or_default()
        .lines()
        .map(|l| l.split_terminator('\0').map(str::to_string).collect())
        .collect();
    (calls, err(&out))
}

/// Finding 1: a device named `x$(id>&2)` ran `id` as root from `--format shell`. Now every
/// format carries the name as one word: the script's `ip` gets it exactly (and nothing runs),
/// the file's route line applies and reverts on that very device, networkd's hint pastes as
/// its words. A device named `table` or `congctl` is a device too.
#[test]
#[cfg_attr(not(feature = "privileged-tests"), ignore = "privileged: needs root")]
fn a_hostile_device_name_is_one_word_in_every_format() {
    let t = Three::up("rtq");
    for (net, name) in [(44u8, "x$(id>&2)"), (45, "a'b;c`d`|&"), (46, "table"), (47, "congctl")] {
        device(&t, name, net);
        let dest = format!("198.19.{net}.9");
        let before = t.routes();

        let (calls, said) = run_script(&advise(&t, &dest, "shell"));
        assert!(!said.contains("uid="), "{name}: the script ran a command: {said}");
        let route = meant(net, name);
        assert!(calls.contains(&route), "{name}: {calls:?}");
        assert!(
            calls
                .iter()
                .filter(|c| c[0] == "sysctl")
                .all(|c| c.len() == 3 && c[1] == "-w" && c[2].starts_with("net.")),
            "{calls:?}"
        );

        let dir = tempfile::tempdir().expect("tmp");
        let file = dir.path().join("60-tcptune.conf");
        std::fs::write(&file, advise(&t, &dest, "sysctl")).expect("write");
        let out = t.tcptune(&["apply", file.to_str().expect("utf8")]);
        ok(&out, &format!("apply the file for {name}"));
        let shown = ok(
            &t.a.exec("ip", &["route", "show", "exact", &format!("{dest}/32")]),
            "ip route",
        );
        assert!(
            shown.contains(&format!("dev {name} proto 116")) && shown.contains("congctl bbr"),
            "{shown}"
        );
        ok(&t.tcptune(&["revert"]), "revert");
        assert_eq!(t.routes(), before, "{name}");

        let hint = networkd_hint(&advise(&t, &dest, "networkd"));
        assert_eq!(sh_words(&hint), ["networkctl", "status", name], "{hint}");
    }
}

/// Finding 1, the far end: its `ip route get` names the device, and `--side far --format
/// shell` is the script the user runs. The far end's name is held to the kernel's rule and
/// quoted anyway.
#[test]
fn a_far_ends_device_name_cannot_run_in_the_script() {
    let dir = tempfile::tempdir().expect("tmp");
    let ssh = dir.path().join("ssh");
    std::fs::write(
        &ssh,
        "#!/bin/sh\ncase \" $* \" in *\" -G \"*) echo hostname 127.0.0.1; exit 0;; esac\n\
         printf '%s\\n' 'tcptune-far 1' \"uname Linux $(uname -m)\" 'uid 0' 'client 198.18.0.1' \
         'route-get 198.18.0.1 via 198.18.0.254 dev x$(id>&2);y src 198.18.0.2 uid 0' 'peer none'\n\
         cat >/dev/null; echo 'end 0'\n",
    )
    .expect("ssh");
    std::fs::set_permissions(&ssh, std::os::unix::fs::PermissionsExt::from_mode(0o755)).expect("chmod");
    let tree = tempfile::tempdir().expect("tree");
    let out = super::tcptune()
        .args(["--os", "linux", "--sysctl-dir"])
        .arg(tree.path())
        .args(["advise", "--ssh", "here", "--ssh-command"])
        .arg(&ssh)
        .args([
            "--side",
            "far",
            "--scope",
            "path",
            "--rtt",
            "150ms",
            "--bandwidth",
            "500mbit",
            "--format",
            "shell",
        ])
        .output()
        .expect("run");
    let script = ok(&out, "advise --side far --format shell");
    let line = script
        .lines()
        .find(|l| l.starts_with("ip route replace"))
        .unwrap_or_else(|| panic!("no route line: {script}"));
    assert_eq!(
        sh_words(line),
        [
            "ip",
            "route",
            "replace",
            "198.18.0.1/32",
            "via",
            "198.18.0.254",
            "dev",
            "x$(id>&2);y",
            "proto",
            "116",
            "src",
            "198.18.0.2",
            "congctl",
            "bbr"
        ],
        "{line}"
    );
    let (calls, said) = run_script(&script);
    assert!(!said.contains("uid="), "{said}");
    assert!(
        calls.iter().any(|c| c.contains(&"x$(id>&2);y".to_string())),
        "{calls:?}"
    );
}

/// Finding 2: an IPv6 route that expires (router advertisements) was copied into a permanent
/// host route, and an existing host route lost its lifetime through apply + revert. Both are
/// refused now (exit 3), nothing written, and advise says why.
#[test]
#[cfg_attr(not(feature = "privileged-tests"), ignore = "privileged: needs root")]
fn a_route_that_expires_is_never_made_permanent() {
    let t = Three::up("rte");
    t.ip_route6("add 2001:2:94::/64 via fe80::2 dev br0 proto ra expires 300");
    t.ip_route6("add 2001:2:95::5/128 dev br0 expires 600");
    for host in ["2001:2:94::5", "2001:2:95::5"] {
        let before = t.routes();
        refused(&t.apply(host, &[]), 3, "expires");
        assert_eq!(t.routes(), before, "{host}: nothing written");
        assert_eq!(
            t.a.sysctl("net.ipv4.tcp_notsent_lowat"),
            "4294967295",
            "{host}: no sysctl written"
        );
        let advice = advise(&t, host, "sysctl");
        assert!(!advice.contains("\n# route: "), "{advice}");
        assert!(advice.contains("expires"), "{advice}");
    }
    assert!(
        t.routes()
            .contains("2001:2:95::5 dev br0 proto boot scope global metric 1024 expires"),
        "{}",
        t.routes()
    );
}

/// Finding 5: only the route of ordinary (tos 0) connections is read and changed; IPv4-mapped
/// and unspecified destinations are refused.
#[test]
#[cfg_attr(not(feature = "privileged-tests"), ignore = "privileged: needs root")]
fn a_route_for_one_tos_is_left_and_odd_addresses_are_refused() {
    let t = Three::up("rtt");
    t.ip_route(&format!("add {B}/32 tos 0x10 dev br0"));
    let out = t.apply(B, &[]);
    ok(&out, "apply beside a tos route");
    assert!(err(&out).contains("a host route added"), "{}", err(&out));
    let shown = t.routes();
    assert!(
        shown.contains(&format!("unicast {B} tos 0x10 dev br0 proto boot scope link \n"))
            || shown.contains(&format!("{B} tos 0x10 dev br0")),
        "{shown}"
    );
    assert!(
        shown.contains(&format!("unicast {B} dev br0 proto 116 scope link src {A} congctl bbr")),
        "{shown}"
    );
    assert!(
        !shown.lines().any(|l| l.contains("tos 0x10") && l.contains("congctl")),
        "{shown}"
    );
    ok(&t.tcptune(&["revert"]), "revert");

    for (host, says) in [
        ("::ffff:198.18.31.2", "IPv4-mapped"),
        ("::", "the unspecified address"),
        ("0.0.0.0", "the unspecified address"),
    ] {
        let before = t.routes();
        refused(&t.apply(host, &[]), 3, says);
        assert_eq!(t.routes(), before, "{host}");
    }
}

/// Finding 8: a destination behind a blackhole, unreachable or prohibit route is a refusal
/// (exit 3) that says the route's type, not "Invalid argument" (exit 4).
#[test]
#[cfg_attr(not(feature = "privileged-tests"), ignore = "privileged: needs root")]
fn a_destination_with_no_path_is_a_refusal_naming_its_type() {
    let t = Three::up("rtb");
    for (kind, net, v6) in [
        ("blackhole", 50, "2001:2:50::/64"),
        ("unreachable", 51, "2001:2:51::/64"),
        ("prohibit", 52, "2001:2:52::/64"),
    ] {
        ip(&["-n", &t.a.name, "route", "add", kind, &format!("198.19.{net}.0/24")]);
        ip(&["-n", &t.a.name, "-6", "route", "add", kind, v6]);
        let before = t.routes();
        for host in [format!("198.19.{net}.5"), format!("2001:2:{net}::5")] {
            refused(&t.apply(&host, &[]), 3, &format!("reached by a {kind} route"));
            assert_eq!(t.routes(), before);
        }
    }
}

/// The newest snapshot file in A's state directory.
fn snapshot_file(t: &Three) -> PathBuf {
    let dir = t.state.path().join("snapshots");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("snapshots")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    files.sort();
    files.pop().expect("a snapshot")
}

/// A change to a snapshot's JSON.
type Edit = Box<dyn Fn(&mut Value)>;

fn edit(path: &Path, f: impl FnOnce(&mut Value)) {
    let mut v: Value = serde_json::from_str(&std::fs::read_to_string(path).expect("read")).expect("json");
    f(&mut v);
    std::fs::write(path, serde_json::to_string_pretty(&v).expect("json")).expect("write");
}

/// Finding 3: edited snapshots made revert install a blackhole or a `local` route, add a second
/// route beside tcptune's, or delete a user's route. Revert now holds the prior to what apply
/// checks of a new route (exit 2, "damaged"), says the route's type, and changes nothing.
#[test]
#[cfg_attr(not(feature = "privileged-tests"), ignore = "privileged: needs root")]
fn revert_holds_an_edited_snapshot_to_what_apply_checks() {
    let t = Three::up("rts");
    t.ip_route(&format!("add {B}/32 dev br0 proto static mtu 1400"));
    ok(&t.apply(B, &[]), "apply over a static route");
    let file = snapshot_file(&t);
    let good = std::fs::read_to_string(&file).expect("read");
    let applied = t.routes();
    let cases: [(&str, Edit); 5] = [
        ("blackhole", Box::new(|v| v["routes"][0]["prior"]["kind"] = 6.into())),
        (
            "local",
            Box::new(|v| {
                v["routes"][0]["prior"]["kind"] = 2.into();
                v["routes"][0]["prior"]["dev"] = "lo".into();
                v["routes"][0]["prior"]["oif"] = 1.into();
            }),
        ),
        (
            "another metric",
            Box::new(|v| v["routes"][0]["prior"]["priority"] = 7.into()),
        ),
        (
            "another destination",
            Box::new(|v| v["routes"][0]["prior"]["dst"] = C.into()),
        ),
        (
            "the user's route as tcptune's",
            Box::new(|v| {
                let prior = v["routes"][0]["prior"].clone();
                v["routes"][0]["prior"] = Value::Null;
                v["routes"][0]["applied"] = prior;
            }),
        ),
    ];
    for (what, change) in cases {
        std::fs::write(&file, &good).expect("restore");
        edit(&file, |v| change(v));
        for force in [false, true] {
            let mut args = vec!["revert"];
            if force {
                args.push("--force");
            }
            let out = t.tcptune(&args);
            refused(&out, 2, "is damaged");
            assert_eq!(t.routes(), applied, "{what} (force {force}): nothing changed");
        }
    }
    // The type is in the message: a blackhole prior says "blackhole".
    std::fs::write(&file, &good).expect("restore");
    edit(&file, |v| v["routes"][0]["prior"]["kind"] = 6.into());
    assert!(
        err(&t.tcptune(&["revert"])).contains("ip route replace blackhole"),
        "type said"
    );
    std::fs::write(&file, &good).expect("restore");
    ok(&t.tcptune(&["revert"]), "the true snapshot reverts");
    assert!(
        t.routes()
            .contains(&format!("{B} dev br0 proto static scope link mtu 1400")),
        "{}",
        t.routes()
    );
}

/// Finding 6: a route changed by hand between apply's read and its replace was overwritten
/// and the stale prior recorded. Now the apply stops (exit 3), rolls back its sysctls and
/// leaves the hand's route.
#[test]
#[cfg_attr(not(feature = "privileged-tests"), ignore = "privileged: needs root")]
fn a_route_changed_between_read_and_replace_stops_the_apply() {
    let t = Three::up("rtw");
    t.ip_route(&format!("add {B}/32 dev br0 mtu 1400"));
    let child = t.paused_apply(
        &[&["apply"][..], &SCOPED].concat(),
        "3",
        ("net.ipv4.tcp_notsent_lowat", "625000"),
    );
    t.ip_route(&format!("change {B}/32 dev br0 mtu 1300"));
    let changed = t.routes();
    let out = child.wait_with_output().expect("wait");
    refused(&out, 3, "changed since tcptune read it");
    assert_eq!(t.routes(), changed, "the hand's route stays");
    assert_eq!(
        t.a.sysctl("net.ipv4.tcp_notsent_lowat"),
        "4294967295",
        "sysctls rolled back"
    );
}

/// A file with a route line per destination whose second route cannot be written at apply
/// time (a host route to it appeared by hand between the preflight and the write): the apply
/// stops (exit 3) and rolls back everything it wrote before, the first route (put back as it
/// was) and the sysctls; the hand's route stays, the snapshot says rolled-back.
#[test]
#[cfg_attr(not(feature = "privileged-tests"), ignore = "privileged: needs root")]
fn a_second_route_that_fails_undoes_the_first_and_the_sysctls() {
    let t = Three::up("rt2");
    t.wait_reachable(C);
    t.ip_route(&format!("add {B}/32 dev br0 mtu 1400"));
    let rmem = t.a.sysctl("net.ipv4.tcp_rmem");
    let wanted = "4096 131072 9437184";
    assert_ne!(rmem, wanted);
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("mesh.conf");
    std::fs::write(
        &file,
        format!(
            "net.ipv4.tcp_rmem = {wanted}\n# route: ip route replace {B}/32 dev br0 congctl bbr\n\
             # route: ip route replace {C}/32 dev br0 congctl reno\n"
        ),
    )
    .expect("write");
    let child = t.paused_apply(
        &["apply", file.to_str().expect("utf8")],
        "5",
        ("net.ipv4.tcp_rmem", wanted),
    );
    // The sysctls are written, no route yet: a host route to C appears.
    t.ip_route(&format!("add {C}/32 dev br0 mtu 1300"));
    let changed = t.routes();
    assert!(!changed.contains("congctl"), "no route written yet: {changed}");
    let out = child.wait_with_output().expect("wait");
    refused(
        &out,
        3,
        &format!("route to {C}/32: a host route appeared since tcptune read the routes"),
    );
    // The sysctl and B's route: two changes undone.
    assert!(
        err(&out).contains("undid the 2 change(s) made before it: nothing was left changed"),
        "{}",
        err(&out)
    );
    assert!(out.stdout.is_empty(), "no snapshot id: {}", err(&out));
    assert_eq!(
        t.routes(),
        changed,
        "B's route put back as it was, the hand's route to C left"
    );
    assert_eq!(t.a.sysctl("net.ipv4.tcp_rmem"), rmem, "sysctls rolled back");
    assert_eq!(states(&t), ["rolled-back"]);
    // Nothing is left to revert.
    let out = t.tcptune(&["revert"]);
    assert!(err(&out).contains("nothing to revert"), "{}", err(&out));
    assert_eq!(t.routes(), changed);
}

/// Finding 7: after kill -9 between an IPv6 route's write and the snapshot's "applied", revert
/// said "route changed since" (the kernel's copy has metric 1024, the record none). The
/// kernel's defaults are the route as written now.
#[test]
#[cfg_attr(not(feature = "privileged-tests"), ignore = "privileged: needs root")]
fn an_interrupted_ipv6_apply_reverts_without_force() {
    let t = Three::up("rt7");
    let before = t.routes();
    ok(&t.apply(B6, &[]), "apply");
    // As a kill -9 right after the route's write leaves it: state applying, no `applied`,
    // `new` as asked (no metric, no preference).
    edit(&snapshot_file(&t), |v| {
        v["state"] = "applying".into();
        v["routes"][0]["applied"] = Value::Null;
        v["routes"][0]["new"]["priority"] = Value::Null;
        v["routes"][0]["new"]["pref"] = Value::Null;
    });
    ok(&t.tcptune(&["revert"]), "revert without --force");
    assert_eq!(t.routes(), before);
}

/// Finding 8: `revert --force` after the prior route's device was deleted and its index given
/// to another device put the route on the new device while naming the old one. Now refused
/// (exit 3) whatever --force says.
#[test]
#[cfg_attr(not(feature = "privileged-tests"), ignore = "privileged: needs root")]
fn a_reused_interface_index_is_never_restored_onto() {
    let t = Three::up("rti");
    device(&t, "v1", 60);
    t.ip_route("add 198.19.60.9/32 dev v1 mtu 1400");
    ok(&t.apply("198.19.60.9", &[]), "apply");
    let links = ok(&t.a.exec("ip", &["-o", "link", "show", "v1"]), "ip link");
    let index = links.split(':').next().expect("index").trim().to_string();
    ip(&["-n", &t.a.name, "link", "del", "v1"]);
    ip(&[
        "-n", &t.a.name, "link", "add", "w9", "index", &index, "type", "veth", "peer", "name", "w9p",
    ]);
    ip(&["-n", &t.a.name, "link", "set", "w9", "up"]);
    let before = t.routes();
    for args in [&["revert"][..], &["revert", "--force"][..]] {
        refused(
            &t.tcptune(args),
            3,
            &format!("was on v1 (index {index}), and it is w9 now"),
        );
        assert_eq!(t.routes(), before, "{args:?}");
    }
}

/// Findings 4 and 8: a line that looks like a route line and is not exactly one is an error
/// naming it (exit 2), never a comment; extra words are refused, not dropped.
#[test]
fn a_near_miss_route_line_is_an_error_naming_the_line() {
    let dir = tempfile::tempdir().expect("tmp");
    for (line, says) in [
        (
            "#route: ip route replace 198.18.0.2 congctl bbr",
            "starts `# route:` exactly",
        ),
        (
            " # route: ip route replace 198.18.0.2 congctl bbr",
            "starts `# route:` exactly",
        ),
        (
            "# Route: ip route replace 198.18.0.2 congctl bbr",
            "starts `# route:` exactly",
        ),
        (
            "#  route: ip route replace 198.18.0.2 congctl bbr",
            "starts `# route:` exactly",
        ),
        (
            "# route:\tip route replace 198.18.0.2 congctl bbr",
            "starts `# route:` exactly",
        ),
        (
            "# route: ip route replace 198.18.0.2 congctl reno && ip route del default",
            "`&` outside quotes",
        ),
        (
            "# route: ip route replace 198.18.0.2 congctl reno congctl bbr",
            "`congctl` twice",
        ),
        (
            "# route: ip route replace 198.18.0.2 proto 255 type blackhole congctl bbr",
            "`type`",
        ),
        (
            "# route: ip route replace 198.18.0.2 table main table 100 congctl bbr",
            "`table` twice",
        ),
    ] {
        let file = dir.path().join("t.conf");
        std::fs::write(&file, format!("net.ipv4.tcp_notsent_lowat = 131072\n{line}\n")).expect("write");
        // --dry-run: a test without a namespace never applies to this host, even if wrong.
        let out = super::tcptune()
            .args(["apply", "--dry-run"])
            .arg(&file)
            .output()
            .expect("run");
        refused(&out, 2, "t.conf:2: ");
        assert!(err(&out).contains(says), "{line}: {}", err(&out));
        assert!(out.stdout.is_empty(), "{line}");
    }
}

/// Interface names the kernel takes, as hostile as they come: the shell's and YAML's and
/// Jinja's metacharacters, quotes, backslashes, and `count` more drawn (a fixed seed) from every
/// byte a name may hold.
fn hostile_names(count: usize) -> Vec<String> {
    let mut names: Vec<String> = [
        "x$(id>&2)",
        "`id`",
        "a'b",
        "a\"b",
        "a\\b",
        "{{7*7}}",
        "{#x#}",
        "#c",
        "-n",
        "a;b|c&d",
        "*",
        "~root",
        "!x",
        "a>b<c",
        "'",
        "''",
        "é$HOME",
    ]
    .map(String::from)
    .to_vec();
    let alphabet: Vec<char> = ('!'..='~').filter(|c| !matches!(c, '/' | ':' | '%')).collect();
    let mut seed: u64 = 0x7463_7074_756e_6535;
    for _ in 0..count {
        let mut next = || {
            seed = seed
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            usize::try_from(seed >> 33).expect("fits")
        };
        let len = 1 + next() % 15;
        names.push((0..len).map(|_| alphabet[next() % alphabet.len()]).collect());
    }
    names.retain(|n| n != "." && n != "..");
    names
}

/// The property over every renderer that writes the route for a program or a paste: for each
/// hostile device name, the words meant are the words each format's own reader gets — the
/// shell (sh runs the script), the file's route line (sh, and tcptune's own reader in `apply
/// --dry-run`, which also checks the device against the kernel's), the networkd hint (sh),
/// the playbook (Ansible's own YAML loader, `!unsafe` and all) and JSON.
#[test]
#[cfg_attr(
    not(feature = "privileged-tests"),
    ignore = "privileged: needs root and the clients tests/run.sh installs"
)]
fn every_renderer_gives_back_the_words_meant() {
    let venv = super::fleet::venv();
    let t = Three::up("rtp");
    let dir = tempfile::tempdir().expect("tmp");
    let names = hostile_names(16);
    for (i, name) in names.iter().enumerate() {
        let net = u8::try_from(100 + i).expect("net");
        device(&t, name, net);
        let dest = format!("198.19.{net}.9");
        let meant = meant(net, name);

        let (calls, said) = run_script(&advise(&t, &dest, "shell"));
        assert!(calls.contains(&meant), "{name:?} shell: {calls:?} {said}");
        assert!(
            calls.iter().all(|c| c[0] == "ip" || c[0] == "sysctl"),
            "{name:?}: {calls:?}"
        );

        let file = dir.path().join(format!("{i}.conf"));
        let text = advise(&t, &dest, "sysctl");
        std::fs::write(&file, &text).expect("write");
        let line = text
            .lines()
            .find_map(|l| l.strip_prefix("# route: "))
            .expect("route line");
        assert_eq!(sh_words(line), meant, "{name:?} file: {line}");
        ok(
            &t.tcptune(&["apply", "--dry-run", file.to_str().expect("utf8")]),
            &format!("{name:?}: dry run"),
        );

        let hint = networkd_hint(&advise(&t, &dest, "networkd"));
        assert_eq!(
            sh_words(&hint),
            ["networkctl", "status", name.as_str()],
            "{name:?}: {hint}"
        );

        let book = dir.path().join(format!("{i}.yml"));
        std::fs::write(&book, advise(&t, &dest, "ansible")).expect("write");
        let out = Std::new(venv.join("bin/python"))
            .arg("-c")
            .arg(
                "import json, sys\n\
                 from ansible.parsing.yaml.loader import AnsibleLoader\n\
                 plays = AnsibleLoader(open(sys.argv[1]).read()).get_single_data()\n\
                 for p in plays:\n\
                 \x20   for task in p['tasks']:\n\
                 \x20       argv = (task.get('ansible.builtin.command') or {}).get('argv') or []\n\
                 \x20       if isinstance(argv, list) and 'replace' in argv: print(json.dumps([str(w) for w in argv]))\n",
            )
            .arg(&book)
            .output()
            .expect("python");
        let argv: Vec<String> = serde_json::from_str(ok(&out, "ansible's loader").trim()).expect("argv");
        assert_eq!(argv, meant, "{name:?} playbook");

        let v: Value = serde_json::from_str(&advise(&t, &dest, "json")).expect("json");
        assert_eq!(v["route"]["route"]["dev"], name.as_str(), "{name:?} json");
    }
}

/// Ansible templates every string it is given: a device named `{{7*7}}` would become `49`.
/// The playbook marks such words `!unsafe`; ansible-playbook sets the route on that very
/// device, and its revert takes it out.
#[test]
#[cfg_attr(
    not(feature = "privileged-tests"),
    ignore = "privileged: needs root and the clients tests/run.sh installs"
)]
fn the_playbook_takes_a_templated_device_name_as_it_is() {
    let venv = super::fleet::venv();
    let t = Three::up("rta");
    device(&t, "{{7*7}}", 70);
    let before = t.routes();
    let dir = tempfile::tempdir().expect("tmp");
    let book = dir.path().join("tcptune.yml");
    std::fs::write(&book, advise(&t, "198.19.70.9", "ansible")).expect("write");
    let play = |extra: &[&str]| t.play(&venv, &book, dir.path(), extra);
    play(&[]);
    let shown = ok(
        &t.a.exec("ip", &["route", "show", "exact", "198.19.70.9/32"]),
        "ip route",
    );
    assert!(
        shown.contains("dev {{7*7}} proto 116") && shown.contains("congctl bbr"),
        "{shown}"
    );
    play(&["--tags", "revert"]);
    assert_eq!(t.routes(), before);
}
