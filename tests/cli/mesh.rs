//! `tcptune mesh`: the plan and its refusals (no root, nothing connected: the ssh command
//! given is a script that records being run), and a fleet of three lab hosts, each a network
//! namespace with its own sshd, joined by delay lines of their own (lab/mesh.sh; root).

use std::path::Path;

use super::tcptune;

/// A stand-in for ssh that answers `ssh -G DEST` as ssh does (its configuration read here,
/// nothing connected: `web1` is another name of h1's machine) and records every other call in
/// `log` and fails: the plan must never connect.
pub(crate) fn recording_ssh(dir: &Path) -> (String, std::path::PathBuf) {
    let log = dir.join("ssh.log");
    let script = dir.join("ssh");
    super::write_script(
        &script,
        &format!(
            "#!/bin/sh\nfor a; do dest=$a; done\n\
             case \" $* \" in *\" -G \"*) [ \"$dest\" = web1 ] && dest=h1; echo \"hostname $dest\"; echo 'port 22'; exit 0;; esac\n\
             echo \"$@\" >> '{}'\nexit 255\n",
            log.display()
        ),
    );
    (script.display().to_string(), log)
}

/// `tcptune mesh --dry-run --ssh-command SSH ARGS`: its plan, the run checked to succeed.
fn dry_plan(ssh: &str, args: &[&str]) -> String {
    let out = tcptune()
        .args(["mesh", "--dry-run", "--ssh-command", ssh])
        .args(args)
        .output()
        .expect("run");
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn the_dry_run_lists_the_pairs_and_what_runs_on_each_host_and_connects_to_none() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (ssh, log) = recording_ssh(dir.path());
    let plan = |args: &[&str]| dry_plan(&ssh, args);
    // One test a pair (both directions), one at a time without sites, said how to run more.
    let text = plan(&["h1", "h2", "h3"]);
    assert!(
        text.starts_with("tcptune mesh: 3 hosts, 3 tests in 3 rounds, one at a time, about "),
        "{text}"
    );
    assert!(
        text.contains("\n  one at a time: name the sites (--site, --site-groups) to run more at once\n"),
        "{text}"
    );
    assert!(text.lines().all(|l| l.chars().count() <= 80), "80 columns: {text}");
    for (i, (a, b)) in [("h1", "h2"), ("h1", "h3"), ("h2", "h3")].iter().enumerate() {
        let line = format!("  {}. {a} \u{2194} {b}", i + 1);
        assert!(text.lines().any(|l| l == line), "{line} in {text}");
    }
    assert!(
        text.contains(
            "  h2:\n    tests with h3: tcptune evidence, one ssh session each\n    peer for h1: tcptune peer"
        ),
        "{text}"
    );
    // --pairs: only those, each pair once whichever way round.
    let text = plan(&["h1", "h2", "h3", "--pairs", "h3:h1, h1:h2,h1:h3"]);
    assert!(text.starts_with("tcptune mesh: 3 hosts, 2 tests in 2 rounds"), "{text}");
    assert!(
        text.contains("  1. h3 \u{2194} h1") && text.contains("  2. h1 \u{2194} h2"),
        "{text}"
    );
    assert!(text.contains("  h3:\n    tests with h1: tcptune evidence"), "{text}");
    // Sites: tests that share no host and no link between sites at once. Two sites of three:
    // the 9 tests across take the one link in turn, the 6 within fill the rounds beside them.
    let six = ["h1", "h2", "h3", "h4", "h5", "h6"];
    let sited = |extra: &[&str]| {
        let mut a: Vec<&str> = six.to_vec();
        a.extend(["--site", "a=h1,h2,h3", "--site", "b=h4,h5,h6"]);
        a.extend(extra);
        plan(&a)
    };
    let text = sited(&[]);
    assert!(
        text.starts_with("tcptune mesh: 6 hosts, 15 tests in 9 rounds, up to 3 at once, about "),
        "{text}"
    );
    assert!(text.contains("  h4 (site b):\n"), "{text}");
    let rounds: Vec<&str> = text
        .lines()
        .filter(|l| l.starts_with("  ") && l.contains(". h"))
        .collect();
    assert_eq!(rounds.len(), 9, "{text}");
    for r in &rounds {
        let across = r
            .split(", ")
            .filter(|t| {
                let ends: Vec<u8> = t.bytes().filter(u8::is_ascii_digit).skip(1).collect();
                ends.len() == 2 && (ends[0] <= b'3') != (ends[1] <= b'3')
            })
            .count();
        assert!(across <= 1, "one test a round on the link between the sites: {r}");
    }
    // --parallel bounds it.
    let text = sited(&["--parallel", "1"]);
    assert!(
        text.starts_with("tcptune mesh: 6 hosts, 15 tests in 15 rounds, one at a time"),
        "{text}"
    );
    let text = plan(&["h1", "h2", "h3", "h4", "--parallel", "2"]);
    assert!(
        text.starts_with("tcptune mesh: 4 hosts, 6 tests in 3 rounds, up to 2 at once"),
        "{text}"
    );
    assert!(
        text.contains("\n  no sites given: tests that share no host run at once, taken to share no link"),
        "{text}"
    );
    // A plan over an hour says so up front, with how to cut it.
    let many: Vec<String> = (1..=60).map(|n| format!("h{n}")).collect();
    let many: Vec<&str> = many.iter().map(String::as_str).collect();
    let text = plan(&many);
    let head: Vec<&str> = text.lines().take(4).collect();
    assert!(
        head[0].starts_with("tcptune mesh: 60 hosts, 1770 tests in 1770 rounds, one at a time, about "),
        "{text}"
    );
    assert!(head[0].ends_with(" h"), "{text}");
    assert_eq!(head[1], "  dry run: nothing is measured");
    assert_eq!(
        head[3],
        "  over an hour: cut it with --pairs or --group, or name the sites (--site)"
    );
    // Two names of one machine (the same HostName and port): said, measured once.
    let out = tcptune()
        .args(["mesh", "h1", "h2", "web1", "--dry-run", "--ssh-command", &ssh])
        .output()
        .expect("run");
    let (text, err) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert!(text.starts_with("tcptune mesh: 2 hosts, 1 test in 1 round"), "{text}");
    assert!(
        err.contains("tcptune: web1 and h1 are one machine (ssh reaches both at h1 port 22): measured once, as h1"),
        "{err}"
    );
    assert!(
        !log.exists(),
        "the dry run ran ssh: {:?}",
        std::fs::read_to_string(&log)
    );
}

#[test]
fn an_inventory_gives_the_hosts_ini_or_ansible_inventorys_json() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (ssh, log) = recording_ssh(dir.path());
    let ini = dir.path().join("inventory.ini");
    std::fs::write(
        &ini,
        "lonely\n[dtn]\nh1 ansible_host=198.18.10.1 ansible_port=2222 ansible_user=root\nh2\n[archive]\nh3\n\
         [sites:children]\ndtn\narchive\n[sites:vars]\nansible_ssh_common_args='-F x'\n",
    )
    .expect("write");
    let plan = |args: &[&str]| dry_plan(&ssh, args);
    let all = plan(&["--inventory", ini.to_str().expect("utf8")]);
    assert!(all.starts_with("tcptune mesh: 4 hosts, 6 tests"), "{all}");
    let sites = plan(&["--inventory", ini.to_str().expect("utf8"), "--group", "sites"]);
    assert!(sites.starts_with("tcptune mesh: 3 hosts, 3 tests"), "{sites}");
    assert!(!sites.contains("lonely"), "{sites}");
    // Named hosts join the inventory's, each once.
    let more = plan(&["h9", "h1", "--inventory", ini.to_str().expect("utf8"), "--group", "dtn"]);
    assert!(more.starts_with("tcptune mesh: 3 hosts, 3 tests"), "{more}");
    let json = dir.path().join("inventory.json");
    std::fs::write(
        &json,
        r#"{"_meta": {"hostvars": {"a": {"ansible_host": "198.18.10.1"}}}, "all": {"children": ["ungrouped", "m"]},
            "m": {"hosts": ["a", "b"]}, "ungrouped": {"hosts": []}}"#,
    )
    .expect("write");
    let j = plan(&["--inventory", json.to_str().expect("utf8")]);
    assert!(j.starts_with("tcptune mesh: 2 hosts, 1 test in"), "{j}");
    // A byte-order mark, as some editors write one, is no part of the first name.
    let bom = dir.path().join("bom.ini");
    std::fs::write(&bom, "\u{feff}h1\nh2\n").expect("write");
    let b = plan(&["--inventory", bom.to_str().expect("utf8")]);
    assert!(
        b.starts_with("tcptune mesh: 2 hosts, 1 test in") && b.contains("  h1:\n"),
        "{b}"
    );
    assert!(!log.exists());
}

#[test]
fn bad_hosts_pairs_and_inventories_are_one_line_exit_2_before_anything_runs() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (ssh, log) = recording_ssh(dir.path());
    let inv = |name: &str, body: &str| {
        let p = dir.path().join(name);
        std::fs::write(&p, body).expect("write");
        p.display().to_string()
    };
    let hostile = inv("hostile.ini", "h1 ansible_host=-oProxyCommand=touch${IFS}/tmp/x\nh2\n");
    let hostile_user = inv("user.ini", "h1 ansible_user=$(id)\nh2\n");
    let pattern = inv("pattern.ini", "web[01:50]\n");
    let file = inv("file", "");
    let array = inv("array.json", "[\"h1\", \"h2\"]\n");
    let big = inv("big.ini", &"h1\n".repeat(400_000));
    let fifo = dir.path().join("fifo");
    assert!(
        std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .expect("mkfifo")
            .success()
    );
    let fifo = fifo.display().to_string();
    let out_dir = dir.path().join("out");
    std::fs::create_dir_all(out_dir.join("h2.conf")).expect("mkdir");
    let out_dir = out_dir.display().to_string();
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (vec!["--inventory", &array], "a JSON array is no inventory"),
        (vec!["--inventory", &big], "over 1 MiB"),
        (vec!["--inventory", &fifo], "not a regular file"),
        (vec!["--inventory", "/dev/zero"], "not a regular file"),
        (
            vec!["h1", "h2", "h3", "--pairs", "h1:h2:h3"],
            "names a host the mesh does not have",
        ),
        (
            vec!["h1", "h2", "--dry-run", "--output", &out_dir],
            "h2.conf is a directory",
        ),
        (vec!["h1"], "a mesh needs at least two hosts"),
        (
            vec!["h1", "h2", "--pairs", "h1:h9"],
            "--pairs h1:h9: names a host the mesh does not have",
        ),
        (
            vec!["h1", "h2", "--pairs", "h1:h1"],
            "--pairs h1:h1: a host with itself",
        ),
        (vec!["h1", "h2", "--pairs", "h1-h2"], "--pairs h1-h2: not FROM:TO"),
        (vec!["h1", "-oProxyCommand=id"], "unexpected argument"),
        (vec!["h1", "h2;id"], "\"h2;id\": a mesh names its hosts' files"),
        (vec!["h1", "h\u{1b}[31m2"], "not an ssh destination"),
        (vec!["--inventory", &hostile], "is no host name, address or user"),
        (vec!["--inventory", &hostile_user], "is no host name, address or user"),
        (vec!["--inventory", &pattern], "host patterns (web[01:50]) are not read"),
        (vec!["h1", "h2", "--group", "x"], "--inventory"),
        (vec!["h1", "h2", "--output", &file], "not a directory"),
        (vec!["h1", "h2", "h3", "--site", "a=h1,h2"], "h3 is in no site"),
        (
            vec!["h1", "h2", "--site", "a=h1", "--site", "b=h1,h2"],
            "h1 is in two sites, a and b",
        ),
        (vec!["h1", "h2", "--site", "a$(id)=h1,h2"], "a site's name is letters"),
        (vec!["h1", "h2", "--site-groups", "a"], "--inventory"),
        (vec!["h1", "h2", "--parallel", "0"], "--parallel"),
        (vec!["h1", "h2", "--max-age", "1d"], "--resume"),
        (
            vec!["h1", "h2", "--resume", "--pairs", "h1:h9"],
            "--pairs h1:h9: names a host the mesh does not have",
        ),
    ];
    for (args, says) in cases {
        let out = tcptune()
            .args(["mesh", "--ssh-command", &ssh])
            .args(&args)
            .output()
            .expect("run");
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(says), "{args:?}: {err}");
        assert!(!err.contains('\u{1b}'), "{args:?}: raw ESC in {err:?}");
        if !says.contains("unexpected") {
            assert_eq!(
                err.lines().filter(|l| l.starts_with("tcptune:")).count(),
                1,
                "{args:?}: {err}"
            );
        }
    }
    assert!(!log.exists(), "ssh ran: {:?}", std::fs::read_to_string(&log));
}

/// A stand-in `ssh` for a mesh of h1 to h5 (no root, no sshd): `-G` names 198.18.10.N; h5
/// refuses every connection; any other session runs the real far-end script here, as its
/// login shell would, with DIR/bin first on its PATH: a `tcptune` that is this one but
/// measures with the fake prober (the path to 198.18.10.N as `spec_for` says), and passes
/// what it sends through DIR/rewrite-FROM-N.jq where there is one (a hostile test end), or
/// hangs where DIR/hang-FROM-N is; and an `ip` that says each destination goes out DIR/dev.
/// Each host's TMPDIR is DIR/tmp-HOST, where what a session leaves would show. With `facts`,
/// every host's facts are fixed: its /proc/sys is that tree, its RAM DIR/far-meminfo, its
/// kernel 6.1.0 on x86_64 without sch_fq, in the first network namespace.
pub(crate) fn mesh_stand_in(dir: &Path, facts: Option<&Path>) -> String {
    let d = dir.display();
    let fix = facts.map_or_else(String::new, |t| {
        format!(
            "remote=$(printf '%s' \"$remote\" | sed -e 's#/proc/sys/#{t}/#g' -e 's#</proc/meminfo#<{d}/far-meminfo#' \
             -e 's#$(uname -r)#6.1.0#' -e 's#$(uname -m)#x86_64#' -e 's#readlink /proc/[a-z0-9]*/ns/net#echo net:[1]#g' \
             -e 's#-d /sys/module/sch_fq#-d /nonexistent#')\n",
            t = t.display()
        )
    });
    std::fs::create_dir_all(dir.join("bin")).expect("bin");
    for h in 1..=5 {
        std::fs::create_dir_all(dir.join(format!("tmp-h{h}"))).expect("tmp");
    }
    super::write_script(
        &dir.join("bin/tcptune"),
        &format!(
            r#"#!/bin/sh
if [ "$1" != evidence ]; then exec '{real}' "$@"; fi
prev=; for a; do if [ "$prev" = --host ]; then to=$a; fi; prev=$a; done
n=${{to##*.}}
case $TCPTUNE_TEST_SELF-$n in
h1-2|h2-1) spec=rtt=80ms,rate=1gbit,loss=0.2;;
h1-3) spec=rtt=100ms,rate=1gbit,queue=1;;
*) spec=rtt=5ms,rate=100mbit,queue=1;;
esac
if [ -f '{d}'/hang-$TCPTUNE_TEST_SELF-$n ]; then exec sleep 987654; fi
f='{d}'/rewrite-$TCPTUNE_TEST_SELF-$n.jq
if [ -f "$f" ]; then '{real}' "$@" --fake-prober "$spec" | jq -f "$f"; exit; fi
exec '{real}' "$@" --fake-prober "$spec"
"#,
            real = assert_cmd::cargo::cargo_bin("tcptune").display()
        ),
    );
    super::write_script(
        &dir.join("bin/ip"),
        &format!(
            r#"#!/bin/sh
case "$*" in "route get fibmatch "*) a=$4;; "route get "*) a=$3;; *) exit 1;; esac
echo "$a dev $(cat '{d}'/dev 2>/dev/null || echo wan0) src 127.0.0.1 uid 0"
"#
        ),
    );
    let ssh = dir.join("ssh");
    super::write_script(
        &ssh,
        &format!(
            r#"#!/bin/sh
dest=; prev=; for a; do if [ "$prev" = "--" ] && [ -z "$dest" ]; then dest=$a; fi; prev=$a; remote=$a; done
case " $* " in *" -G "*) echo "hostname 198.18.10.${{dest#h}}"; echo "port 22"; exit 0;; esac
if [ "$dest" = h5 ]; then echo "ssh: connect to host 198.18.10.5 port 22: Connection refused" >&2; exit 255; fi
export TCPTUNE_TEST_SELF=$dest SSH_CONNECTION="127.0.0.1 40000 127.0.0.1 22" TMPDIR='{d}'/tmp-$dest
export PATH='{d}'/bin:$PATH
{fix}exec sh -c "$remote"
"#
        ),
    );
    ssh.display().to_string()
}

/// `tcptune mesh HOSTS... --test-time 1s --ssh-command SSH`: a mesh of the stand-in's hosts.
pub(crate) fn stand_in_mesh<'a>(hosts: &[&'a str], ssh: &'a str) -> Vec<&'a str> {
    let mut args = vec!["mesh"];
    args.extend_from_slice(hosts);
    args.extend(["--test-time", "1s", "--ssh-command", ssh]);
    args
}

/// What a hostile test end sends: settings, labels, a route and its prior, an OS, words with
/// terminal escapes and line breaks — all of it beside its evidence, none of it read; an RTT
/// of 1e308; the measurement of another host than its peer; a test end that never answers.
/// Each host is advised here from its evidence and its own facts, and a bad report loses that
/// pair only. The far-end script and `tcptune evidence` are the real ones.
#[test]
fn a_hostile_test_end_sends_evidence_only_and_loses_its_own_pair_at_most() {
    // Three dozen sessions and their processes take both cores: never beside a timed lab.
    let _quiet = crate::lab_support::quiet_host();
    let dir = tempfile::tempdir().expect("tempdir");
    let ssh = mesh_stand_in(dir.path(), None);
    let write = |name: &str, text: &str| std::fs::write(dir.path().join(name), text).expect("write");
    write("dev", "x$(id)");
    write(
        "rewrite-h1-2.jq",
        r#". + {"settings": [{"key": "net.ipv4.ip_forward", "value": "1\nkernel.x = 1", "label": "receive max",
              "action": {"kind": "set"}, "stage": "runtime", "why": "6 × BDP"}],
            "route": {"dest": "198.18.10.3", "algorithm": "reno", "prior": {"dst": "198.18.10.1", "dst_len": 32,
              "gateway": "198.18.99.1", "protocol": 4, "dev": "evil0"}},
            "os": "freebsd"}
         | .measurement.notes = ["\u001b[2Jreceive max\nnet.ipv4.ip_forward = 1"]
         | .measurement.link.interface = "{{ lookup('pipe', 'id') }}""#,
    );
    write("rewrite-h2-3.jq", r#".measurement.addr = "198.18.10.1""#);
    write("rewrite-h1-4.jq", r#".measurement.rtt.min_ms = 1e308"#);
    write("hang-h2-4", "");
    let out_dir = dir.path().join("out");
    std::fs::create_dir(&out_dir).expect("mkdir");
    let state = dir.path().join("state/mesh.jsonl");
    let run = |format: &str| {
        tcptune()
            .args([
                "mesh",
                "h1",
                "h2",
                "h3",
                "h4",
                "h5",
                "--test-time",
                "1s",
                "--ssh-command",
                &ssh,
            ])
            .args(["--format", format, "--output"])
            .arg(&out_dir)
            .arg("--state")
            .arg(&state)
            .output()
            .expect("run")
    };
    let t = std::time::Instant::now();
    let table = run("table");
    let took = t.elapsed();
    let err = String::from_utf8_lossy(&table.stderr);
    let text = String::from_utf8_lossy(&table.stdout);
    assert_eq!(table.status.code(), Some(4), "{err}");
    assert!(err.contains("tcptune: h5: skipped: "), "{err}");
    assert!(err.contains("h1 \u{2194} h5: skipped: h5 did not answer"), "{err}");
    assert!(
        err.contains("h2 \u{2194} h3: not measured: ssh h2: its evidence is of 198.18.10.1, not the peer 198.18.10.3"),
        "{err}"
    );
    assert!(
        err.contains("h1 \u{2194} h4: not measured: ssh h1: its evidence gives min_ms = 1e308"),
        "{err}"
    );
    // The hung test end costs about twice the test's estimate (2 × (6 s + 2 × 1 s)), not its
    // peer's lifetime, and leaves nothing running.
    assert!(
        err.contains("h2 \u{2194} h4: not measured: ssh h2: its test gave no evidence within 16 s"),
        "{err}"
    );
    assert!(took < std::time::Duration::from_secs(90), "{took:?}");
    let left = std::process::Command::new("pgrep")
        .args(["-f", "sleep 987654"])
        .output()
        .expect("pgrep");
    assert!(left.stdout.is_empty(), "a hung test end outlived its session");
    for h in 1..=5 {
        let tmp: Vec<_> = std::fs::read_dir(dir.path().join(format!("tmp-h{h}")))
            .expect("tmp")
            .collect();
        assert!(tmp.is_empty(), "h{h} kept {tmp:?}");
    }
    // Three tests of ten measured, each both ways: h1–h2, h1–h3, h3–h4.
    assert!(err.contains("14 of 20 paths not measured"), "{err}");
    // h1 → h2 was measured and advised here, and h2 → h1 from the same test: nothing h1 added
    // is in any output.
    assert!(text.contains("h1 \u{2192} h2  80 ms"), "{text}");
    assert!(text.contains("h2 \u{2192} h1  80 ms"), "{text}");
    for shown in [&text, &err] {
        assert!(!shown.contains("ip_forward") && !shown.contains('\u{1b}'), "{shown}");
    }
    let h1 = std::fs::read_to_string(out_dir.join("h1.conf")).expect("h1.conf");
    let h2 = std::fs::read_to_string(out_dir.join("h2.conf")).expect("h2.conf");
    for file in [&h1, &h2] {
        assert!(
            !file.contains("ip_forward") && !file.contains("kern.") && !file.contains("evil0"),
            "{file}"
        );
        assert!(!file.contains("198.18.99.1") && !file.contains("lookup("), "{file}");
        for l in file.lines() {
            assert!(
                l.is_empty() || l.starts_with('#') || l.starts_with("net.ipv4.") || l.starts_with("net.core."),
                "a line sysctl would read: {l:?}"
            );
        }
    }
    // h1 needs BBR toward h2 (lossy) and CUBIC toward h3 (clean, a deep queue): whichever h1
    // does not run host-wide rides a route, built here from what h1's kernel said (the device,
    // quoted by the one rule).
    assert_eq!(h1.matches("# route: ").count(), 1, "{h1}");
    assert!(
        h1.contains(" dev 'x$(id)' proto 116 scope link src 127.0.0.1 congctl "),
        "{h1}"
    );
    assert!(!out_dir.join("h5.conf").exists());
    // Every test measured is saved as it came: a resumed run measures only the others, and
    // advises the same from what it saved.
    let saved = std::fs::read_to_string(&state).expect("state");
    assert_eq!(saved.lines().count(), 3, "the tests that advise: h1–h2, h1–h3, h3–h4");
    std::fs::remove_file(dir.path().join("hang-h2-4")).expect("rm");
    let again = tcptune()
        .args(stand_in_mesh(&["h1", "h2", "h3", "h4"], &ssh))
        .args(["--resume", "--state"])
        .arg(&state)
        .output()
        .expect("run");
    let err2 = String::from_utf8_lossy(&again.stderr);
    let text2 = String::from_utf8_lossy(&again.stdout);
    assert!(err2.contains("tcptune mesh: 4 hosts, 3 tests in "), "{err2}");
    assert!(err2.contains("  3 tests taken from the state (--resume)"), "{err2}");
    assert!(
        !err2.contains("h1 \u{2194} h2:") && err2.contains("h2 \u{2194} h4: 5 ms"),
        "{err2}"
    );
    assert!(
        text2.contains("h1 \u{2192} h2  80 ms") && text2.contains("h2 \u{2192} h4  5 ms"),
        "{text2}"
    );
    let planted = |text: &str| {
        std::fs::write(&state, text).expect("write");
        let out = tcptune()
            .args(stand_in_mesh(&["h1", "h2"], &ssh))
            .args(["--resume", "--state"])
            .arg(&state)
            .output()
            .expect("run");
        let shown = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(!shown.contains("ip_forward") && !shown.contains('\u{1b}'), "{shown}");
        (out.status.code(), shown)
    };
    // A state file's line is evidence again: what else it holds is never read, its words are
    // escaped, and evidence a live test would refuse is measured again.
    let first = saved
        .lines()
        .find(|l| l.contains(r#""a":"h1","b":"h2""#))
        .expect("h1–h2 saved");
    let extra = first.replacen(
        r#""a":"h1""#,
        r#""settings":[{"key":"net.ipv4.ip_forward","value":"1"}],"a":"h1""#,
        1,
    );
    let cut = "{\"tcptune_mesh_state\":1,\"a\":\"\u{1b}[2J$(id)\n";
    let (code, shown) = planted(&format!("{extra}\n{cut}"));
    assert_eq!(code, Some(0), "{shown}");
    assert!(
        shown.contains("  1 tests taken from the state") || shown.contains("  1 test taken from the state"),
        "{shown}"
    );
    assert!(shown.contains("skipped line 2: "), "{shown}");
    let tampered = first.replacen(r#"\"min_ms\":"#, r#"\"min_ms\":1e308,\"was\":"#, 1);
    assert_ne!(tampered, first, "the saved evidence has an RTT");
    let (code, shown) = planted(&tampered);
    assert_eq!(code, Some(0), "{shown}");
    assert!(
        shown.contains("tcptune: --state: h1 \u{2194} h2: ssh h1: its evidence gives min_ms = 1e308")
            && shown.contains(": measured again\n"),
        "{shown}"
    );
    assert!(shown.contains("[1/1] h1 \u{2194} h2: 80 ms"), "{shown}");
    // JSON: each pair's advice made here; the playbook: a play per host, on `all`, ended at
    // once on every other host, its routes read back from the host's own record.
    let json = run("json");
    let v: serde_json::Value = serde_json::from_slice(&json.stdout).expect("json");
    assert_eq!(v["pairs"].as_array().map(Vec::len), Some(20));
    let keys: Vec<&str> = v["advice"][1]["settings"]
        .as_array()
        .expect("settings")
        .iter()
        .filter_map(|s| s["key"].as_str())
        .collect();
    assert!(
        keys.iter().all(|k| k.starts_with("net.")) && !keys.contains(&"net.ipv4.ip_forward"),
        "{keys:?}"
    );
    let book = String::from_utf8_lossy(&run("ansible").stdout).into_owned();
    assert!(book.contains(r#""dev", "x$(id)", "proto""#), "{book}");
    assert!(book.contains("when: inventory_hostname != 'h1'"), "{book}");
    assert!(
        !book.contains("198.18.99.1") && !book.contains("ip_forward") && !book.contains('\u{1b}'),
        "{book}"
    );
}

/// lab/mesh.sh's three hosts, torn down when dropped; the host kept quiet meanwhile. The
/// namespaces stand for whole hosts, whose root may choose any congestion control the kernel
/// offers: the host's tcp_allowed_congestion_control is widened for the lab's life and put back.
struct MeshLab {
    name: String,
    script: std::path::PathBuf,
    env: std::collections::BTreeMap<String, String>,
    allowed: String,
    _quiet: crate::lab_support::Quiet,
}

impl MeshLab {
    /// The lab, every host on the kernel's stock buffers and CUBIC.
    fn up(pairs: &[&str]) -> Self {
        let args: Vec<String> = pairs
            .iter()
            .flat_map(|p| ["--pair".to_string(), (*p).to_string()])
            .collect();
        Self::start("mesh.sh", &args, 3)
    }

    /// `lab/SCRIPT up NAME --bin TCPTUNE ARGS`, its `hosts` on the kernel's stock buffers and
    /// CUBIC.
    fn start(script: &str, args: &[String], hosts: u8) -> Self {
        let quiet = crate::lab_support::quiet_host();
        let name = format!("tm{}", std::process::id() % 100_000);
        let script = crate::lab_support::repo().join("lab").join(script);
        let host_sysctl = |k: &str| {
            let out = std::process::Command::new("sysctl")
                .args(["-n", k])
                .output()
                .expect("sysctl");
            String::from_utf8_lossy(&out.stdout).trim().to_string()
        };
        let mut lab = Self {
            name,
            script: script.clone(),
            env: Default::default(),
            allowed: host_sysctl("net.ipv4.tcp_allowed_congestion_control"),
            _quiet: quiet,
        };
        let available = host_sysctl("net.ipv4.tcp_available_congestion_control");
        let ok = std::process::Command::new("sysctl")
            .args(["-qw", &format!("net.ipv4.tcp_allowed_congestion_control={available}")])
            .status()
            .expect("sysctl");
        assert!(
            ok.success(),
            "cannot widen tcp_allowed_congestion_control to {available}"
        );
        let out = std::process::Command::new("bash")
            .arg(&script)
            .args(["up", &lab.name, "--bin"])
            .arg(assert_cmd::cargo::cargo_bin("tcptune"))
            .args(args)
            .output()
            .expect("lab script");
        assert!(
            out.status.success(),
            "{} up: {}",
            script.display(),
            String::from_utf8_lossy(&out.stderr)
        );
        let env = std::process::Command::new("bash")
            .arg(&script)
            .args(["env", &lab.name])
            .output()
            .expect("env");
        lab.env = String::from_utf8_lossy(&env.stdout)
            .lines()
            .filter_map(|l| l.split_once('='))
            .map(|(k, v)| (k.to_string(), v.trim_matches('\'').replace("\\ ", " ")))
            .collect();
        for n in 1..=hosts {
            lab.sh(
                n,
                "sysctl -qw net.ipv4.tcp_rmem='4096 131072 6291456' net.ipv4.tcp_wmem='4096 16384 4194304' \
                 net.ipv4.tcp_congestion_control=cubic",
            );
        }
        lab
    }

    fn var(&self, k: &str) -> &str {
        self.env
            .get(k)
            .map_or_else(|| panic!("the lab's env has no {k}"), String::as_str)
    }

    fn ns(&self, n: u8) -> String {
        self.var(&format!("NS_{n}")).to_string()
    }

    fn sysctl(&self, n: u8, key: &str) -> String {
        self.sh(n, &format!("sysctl -n {key}"))
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ")
    }

    fn sh(&self, n: u8, cmd: &str) -> String {
        let out = std::process::Command::new("ip")
            .args(["netns", "exec", &self.ns(n), "sh", "-c", cmd])
            .output()
            .expect("sh");
        assert!(out.status.success(), "{cmd}: {}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// `tcptune ARGS` in host `n`.
    fn tcptune(&self, n: u8, args: &[&std::ffi::OsStr]) -> std::process::Output {
        std::process::Command::new("ip")
            .args(["netns", "exec", &self.ns(n)])
            .arg(assert_cmd::cargo::cargo_bin("tcptune"))
            .args(args)
            .output()
            .expect("tcptune")
    }
}

impl Drop for MeshLab {
    fn drop(&mut self) {
        let _ = std::process::Command::new("bash")
            .arg(&self.script)
            .args(["down", &self.name])
            .output();
        let _ = std::process::Command::new("sysctl")
            .args([
                "-qw",
                &format!("net.ipv4.tcp_allowed_congestion_control={}", self.allowed),
            ])
            .status();
    }
}

/// The lab's paths: 10 ms clean, 80 ms 0.01 % loss, 150 ms behind a quarter-BDP queue.
const PAIRS: [&str; 3] = [
    "1-2:10ms:200mbit",
    "1-3:80ms:200mbit:loss=0.01",
    "2-3:150ms:100mbit:queue=468750",
];

/// The RTT of the line between hosts `a` and `b`, ms, and its BDP, bytes (rate × RTT).
fn line(a: u8, b: u8) -> (f64, f64) {
    match (a.min(b), a.max(b)) {
        (1, 2) => (10.0, 200e6 / 8.0 * 0.010),
        (1, 3) => (80.0, 200e6 / 8.0 * 0.080),
        _ => (150.0, 100e6 / 8.0 * 0.150),
    }
}

/// The last number of a sysctl triple.
fn max_of(v: &str) -> f64 {
    v.split_whitespace().last().and_then(|n| n.parse().ok()).unwrap_or(0.0)
}

#[test]
#[cfg_attr(not(feature = "privileged-tests"), ignore = "privileged: needs root")]
fn a_three_host_mesh_advises_each_host_from_both_its_paths_and_ansible_applies_and_reverts_it() {
    let lab = MeshLab::up(&PAIRS);
    let dir = tempfile::tempdir().expect("tempdir");
    let ssh = format!("ssh -F {}", lab.var("SSH_CONFIG"));
    let inv = lab.var("INVENTORY").to_string();
    let files = dir.path().join("files");
    std::fs::create_dir(&files).expect("mkdir");
    let t = std::time::Instant::now();
    let out = tcptune()
        .args([
            "mesh",
            "--inventory",
            &inv,
            "--ssh-command",
            &ssh,
            "--test-time",
            "3s",
            "--format",
            "ansible",
            "--output",
        ])
        .arg(&files)
        .output()
        .expect("mesh");
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{err}");
    eprintln!("mesh took {:.1} s:\n{err}", t.elapsed().as_secs_f64());
    // Each pair measured once (both ways) across its own line (not the control host's link),
    // one at a time (no sites given).
    for (a, b) in [(1, 2), (1, 3), (2, 3)] {
        let head = format!("h{a} \u{2194} h{b}: ");
        let said = err
            .lines()
            .filter_map(|l| l.split_once("] ").and_then(|(_, l)| l.strip_prefix(&head)))
            .find(|l| l.contains(" ms, "))
            .unwrap_or_else(|| panic!("{head}: {err}"));
        let rtt: f64 = said.split(" ms").next().and_then(|x| x.parse().ok()).expect("rtt");
        let (want, _) = line(a, b);
        assert!(
            (want..want * 1.2 + 2.0).contains(&rtt),
            "{head}{said}: the line is {want} ms"
        );
    }
    // Each host advised from both its paths; its maxima within 6 × its largest path's BDP;
    // its file applies there, its host routes too, and reverts.
    for n in 1..=3u8 {
        let others: Vec<u8> = (1..=3).filter(|o| *o != n).collect();
        let largest = others.iter().map(|o| line(n, *o).1).fold(0.0, f64::max);
        let file = files.join(format!("h{n}.conf"));
        let text = std::fs::read_to_string(&file).expect("file");
        assert!(
            text.contains(&format!(
                "mesh advice for h{n} (linux), from its paths to h{}, h{}",
                others[0], others[1]
            )),
            "{text}"
        );
        for key in ["net.ipv4.tcp_rmem", "net.ipv4.tcp_wmem"] {
            let v = text
                .lines()
                .find_map(|l| l.trim_start_matches("# ").strip_prefix(&format!("{key} = ")))
                .unwrap_or_else(|| panic!("h{n}: no {key}: {text}"));
            let m = max_of(v);
            assert!(
                (largest..=6.0 * largest).contains(&m),
                "h{n}: {key} {v}: not within 1 to 6 × {largest}\n{text}"
            );
        }
        let before = lab.sysctl(n, "net.ipv4.tcp_rmem");
        let state = dir.path().join(format!("state-{n}"));
        let apply = lab.tcptune(
            n,
            &[
                "apply".as_ref(),
                file.as_os_str(),
                "--state-dir".as_ref(),
                state.as_os_str(),
            ],
        );
        assert!(
            apply.status.success(),
            "h{n}: {}\n{text}",
            String::from_utf8_lossy(&apply.stderr)
        );
        for l in text.lines().filter(|l| l.starts_with("# route: ")) {
            let dest = l.split_whitespace().nth(5).expect("dest");
            let cc = l.rsplit(' ').next().expect("cc");
            let shown = lab.sh(n, &format!("ip route show {dest}"));
            assert!(shown.contains(&format!("congctl {cc}")), "h{n}: {l}: {shown}");
        }
        let revert = lab.tcptune(n, &["revert".as_ref(), "--state-dir".as_ref(), state.as_os_str()]);
        assert!(
            revert.status.success(),
            "h{n}: {}",
            String::from_utf8_lossy(&revert.stderr)
        );
        assert_eq!(lab.sysctl(n, "net.ipv4.tcp_rmem"), before, "h{n}");
        assert!(!lab.sh(n, "ip route show").contains("congctl"), "h{n}: a route left");
    }
    // A route only where a path needs another congestion control than the host-wide one.
    let file = |n: u8| std::fs::read_to_string(files.join(format!("h{n}.conf"))).expect("file");
    let mut routed = Vec::new();
    for n in 1..=3u8 {
        let text = file(n);
        let host_wide = text
            .lines()
            .find_map(|l| {
                l.trim_start_matches("# ")
                    .strip_prefix("net.ipv4.tcp_congestion_control = ")
            })
            .unwrap_or_else(|| panic!("h{n}: no congestion control: {text}"))
            .to_string();
        for l in text.lines().filter(|l| l.starts_with("# route: ")) {
            assert!(
                !l.ends_with(&format!(" congctl {host_wide}")),
                "h{n}: a route for the host-wide {host_wide}: {text}"
            );
            routed.push((
                n,
                l.split_whitespace()
                    .nth(5)
                    .expect("dest")
                    .trim_end_matches("/32")
                    .to_string(),
            ));
        }
    }
    // Nothing left on the hosts: no file in their sessions' TMPDIR, nothing running but sshd.
    let left: Vec<_> = std::fs::read_dir(lab.var("TMP"))
        .expect("TMP")
        .flatten()
        .map(|e| e.path())
        .collect();
    assert!(left.is_empty(), "left on the hosts: {left:?}");
    for n in 1..=3u8 {
        let pids = std::process::Command::new("ip")
            .args(["netns", "pids", &lab.ns(n)])
            .output()
            .expect("pids");
        let running: Vec<String> = String::from_utf8_lossy(&pids.stdout)
            .lines()
            .filter_map(|p| std::fs::read_to_string(format!("/proc/{p}/comm")).ok())
            .map(|c| c.trim().to_string())
            .collect();
        assert!(running.iter().all(|c| c == "sshd"), "h{n}: {running:?}");
    }

    // The playbook, through the same sshd, to the three hosts at once: one play per host with
    // its own values. The namespaces share one file system: each host's files are its own (-e,
    // templated per host).
    let venv = super::fleet::venv();
    let book = dir.path().join("mesh.yml");
    std::fs::write(&book, &out.stdout).expect("book");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let wanted = |host: u8| -> Vec<(String, String)> {
        let start = text
            .find(&format!("- name: \"tcptune mesh: h{host} from its paths"))
            .expect("play");
        let end = text[start + 1..]
            .find("\n- name: ")
            .map_or(text.len(), |e| start + 1 + e);
        text[start..end]
            .lines()
            .filter_map(|l| l.trim().strip_prefix("- name: \"net."))
            .filter_map(|l| l.trim_end_matches('"').split_once(" = "))
            .map(|(k, v)| (format!("net.{k}"), v.to_string()))
            .filter(|(k, _)| !k.starts_with("net.core."))
            .collect()
    };
    let files_of = dir.path().join("ansible");
    let play = |extra: &[&str]| {
        let out = std::process::Command::new(venv.join("bin/ansible-playbook"))
            .args(["-i", &inv])
            .arg(&book)
            .arg("-e")
            .arg(format!(
                "tcptune_sysctl_file={}/{{{{ inventory_hostname }}}}-60-tcptune.conf",
                files_of.display()
            ))
            .arg("-e")
            .arg(format!(
                "tcptune_prior_file={}/{{{{ inventory_hostname }}}}-prior.conf",
                files_of.display()
            ))
            .args(extra)
            .env("ANSIBLE_NOCOLOR", "1")
            // One ssh session per task, not three (the modules sent on its stdin).
            .env("ANSIBLE_PIPELINING", "1")
            .env("ANSIBLE_LOCAL_TEMP", dir.path().join("ansible-local"))
            .env("ANSIBLE_REMOTE_TEMP", dir.path().join("ansible-remote"))
            .output()
            .expect("ansible-playbook");
        let said = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(out.status.success(), "{extra:?}:\n{said}");
        said
    };
    let want: Vec<Vec<(String, String)>> = (1..=3).map(wanted).collect();
    let now = || -> Vec<Vec<String>> {
        (1..=3u8)
            .map(|n| want[usize::from(n - 1)].iter().map(|(k, _)| lab.sysctl(n, k)).collect())
            .collect()
    };
    for (n, w) in (1..=3).zip(&want) {
        assert!(w.iter().any(|(k, _)| k == "net.ipv4.tcp_rmem"), "h{n}: {w:?}");
    }
    // The lab's own host route to the peer (lab/mesh.sh's, its source address) is what the
    // playbook replaces: it records it on the host at apply time, and its revert puts it back
    // as the host had it, whatever the report said.
    let (static_host, static_dest) = routed.first().cloned().expect("a host with a route");
    let prior = lab.sh(static_host, &format!("ip route show exact {static_dest}/32"));
    assert!(prior.contains(" src ") && !prior.contains("congctl"), "{prior}");
    let before = now();
    let check = play(&["--check"]);
    assert_eq!(now(), before, "--check changed a host:\n{check}");
    let first = play(&[]);
    let set: Vec<Vec<String>> = want
        .iter()
        .map(|w| w.iter().map(|(_, v)| v.clone()).collect())
        .collect();
    assert_eq!(now(), set, "{first}");
    assert_ne!(set[0], set[1], "the hosts' values are their own");
    for (n, dest) in &routed {
        assert!(
            lab.sh(*n, &format!("ip route show {dest}")).contains("congctl"),
            "h{n} to {dest}:\n{first}"
        );
    }
    let again = play(&[]);
    for n in 1..=3 {
        assert!(
            again.contains(&format!("h{n}")) && !again.contains("changed=1"),
            "a second run changed something:\n{again}"
        );
    }
    assert_eq!(again.matches("changed=0").count(), 3, "{again}");
    let revert = play(&["--tags", "revert"]);
    assert_eq!(now(), before, "revert:\n{revert}");
    assert_eq!(
        lab.sh(static_host, &format!("ip route show exact {static_dest}/32")),
        prior,
        "h{static_host}: the lab's route as it was:\n{revert}"
    );
    for n in 1..=3u8 {
        assert!(
            !lab.sh(n, "ip route show").contains("congctl"),
            "h{n}: a route left after revert:\n{revert}"
        );
    }
}

/// Issue 46: six hosts in two sites (a LAN of 100 Mbit/s in each, one 20 ms line of 50 Mbit/s
/// between them that all nine pairs across share). The mesh runs one test a pair, tests that
/// share no host and no link at once: each path reads within 10 % of the same path measured one
/// test at a time, and each host's advice is the same; a resumed mesh measures only the tests
/// its state lacks. The times are printed (the benchmark's are in BENCHMARKS.md).
#[test]
#[cfg_attr(not(feature = "privileged-tests"), ignore = "privileged: needs root")]
fn a_fleet_in_two_sites_measured_at_once_reads_as_one_at_a_time_and_resumes() {
    let args: Vec<String> = [
        "--site",
        "a:3",
        "--site",
        "b:3",
        "--link",
        "a-b:20ms:50mbit",
        "--lan",
        "100mbit",
    ]
    .map(String::from)
    .to_vec();
    let lab = MeshLab::start("fleet.sh", &args, 6);
    let dir = tempfile::tempdir().expect("tempdir");
    let ssh = format!("ssh -F {}", lab.var("SSH_CONFIG"));
    let inv = lab.var("INVENTORY").to_string();
    let mesh = |extra: &[&str], state: &Path| {
        let t = std::time::Instant::now();
        let out = tcptune()
            .args([
                "mesh",
                "--inventory",
                &inv,
                "--ssh-command",
                &ssh,
                "--test-time",
                "3s",
                "--format",
                "json",
            ])
            .args(extra)
            .arg("--state")
            .arg(state)
            .output()
            .expect("mesh");
        let err = String::from_utf8_lossy(&out.stderr).into_owned();
        assert!(out.status.success(), "{err}");
        eprintln!("mesh {extra:?} took {:.1} s:\n{err}", t.elapsed().as_secs_f64());
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
        (v, err, t.elapsed())
    };
    let at_once_state = dir.path().join("at-once.jsonl");
    let (at_once, err, t_at_once) = mesh(&["--site-groups", "a,b"], &at_once_state);
    assert!(
        err.starts_with("tcptune mesh: 6 hosts, 15 tests in 9 rounds, up to 3 at once, "),
        "{err}"
    );
    // No round ran two tests across the line.
    for round in at_once["rounds"].as_array().expect("rounds") {
        let across = round
            .as_array()
            .expect("round")
            .iter()
            .filter(|t| {
                let site = |h: &serde_json::Value| at_once["sites"][h.as_str().expect("name")].clone();
                site(&t[0]) != site(&t[1])
            })
            .count();
        assert!(across <= 1, "{round}");
    }
    let (alone, _, t_alone) = mesh(&["--parallel", "1"], &dir.path().join("alone.jsonl"));
    eprintln!(
        "15 tests: at once {:.1} s, one at a time {:.1} s",
        t_at_once.as_secs_f64(),
        t_alone.as_secs_f64()
    );
    let paths = |v: &serde_json::Value| -> std::collections::BTreeMap<(String, String), (f64, f64)> {
        v["pairs"]
            .as_array()
            .expect("pairs")
            .iter()
            .map(|p| {
                assert_eq!(p["measured"], true, "{p:#}");
                let a = &p["advice"];
                (
                    (
                        p["from"].as_str().expect("from").to_string(),
                        p["to"].as_str().expect("to").to_string(),
                    ),
                    (
                        a["bandwidth_bps"].as_f64().expect("rate"),
                        a["rtt_ms"].as_f64().expect("rtt"),
                    ),
                )
            })
            .collect()
    };
    let (x, y) = (paths(&at_once), paths(&alone));
    assert_eq!(x.len(), 30, "every path both ways");
    for (k, (rate, rtt)) in &x {
        let (r1, t1) = y[k];
        eprintln!(
            "{} → {}: at once {rate:.4e} bit/s {rtt:.2} ms, alone {r1:.4e} bit/s {t1:.2} ms",
            k.0, k.1
        );
        // Across the sites, where the round's other tests would show: within 10 %. Within a
        // site (0.2 ms) the rate rests on the one or two readings of a startup shorter than the
        // sampler's 20 ms, and two runs alone differ by up to 21 % (BENCHMARKS.md "A fleet's
        // mesh at scale"): there, the rate is held to that, and the advice below to the same.
        let within = if *rtt >= 1.0 { 0.10 } else { 0.25 };
        assert!((rate / r1 - 1.0).abs() <= within, "{k:?}: at once {rate}, alone {r1}");
    }
    // Each host's advice the same: the keys it changes, its congestion control and routes, its
    // sizes within 10 %.
    let advice = |v: &serde_json::Value| -> std::collections::BTreeMap<String, Vec<(String, String)>> {
        v["advice"]
            .as_array()
            .expect("advice")
            .iter()
            .map(|h| {
                let settings = h["settings"]
                    .as_array()
                    .expect("settings")
                    .iter()
                    .map(|s| {
                        (
                            s["key"].as_str().unwrap_or("").to_string(),
                            s["value"].as_str().unwrap_or("").to_string(),
                        )
                    })
                    .collect();
                (h["host"].as_str().expect("host").to_string(), settings)
            })
            .collect()
    };
    let (ax, ay) = (advice(&at_once), advice(&alone));
    assert_eq!(ax.len(), 6);
    for (host, settings) in &ax {
        let other = &ay[host];
        assert_eq!(settings.len(), other.len(), "{host}");
        for ((k, v), (k1, v1)) in settings.iter().zip(other) {
            assert_eq!(k, k1, "{host}");
            let nums = |s: &str| {
                s.split_whitespace()
                    .filter_map(|w| w.parse::<f64>().ok())
                    .collect::<Vec<_>>()
            };
            let (n, n1) = (nums(v), nums(v1));
            if n.is_empty() || n.len() != n1.len() {
                assert_eq!(v, v1, "{host}: {k}");
            } else {
                for (a, b) in n.iter().zip(&n1) {
                    assert!(
                        (a - b).abs() <= 0.10 * a.max(*b),
                        "{host}: {k} = {v} at once, {v1} alone"
                    );
                }
            }
        }
    }
    // Resume: the state kept 15 tests; cut to 5, a resumed run measures the other 10 only.
    let text = std::fs::read_to_string(&at_once_state).expect("state");
    assert_eq!(text.lines().count(), 15);
    let kept: Vec<&str> = text.lines().take(5).collect();
    std::fs::write(&at_once_state, kept.join("\n") + "\n").expect("write");
    let (resumed, err, _) = mesh(&["--site-groups", "a,b", "--resume"], &at_once_state);
    assert!(err.contains("  5 tests taken from the state (--resume)"), "{err}");
    assert_eq!(err.lines().filter(|l| l.starts_with('[')).count(), 10, "{err}");
    assert!(err.contains("[10/10] "), "{err}");
    assert_eq!(paths(&resumed).len(), 30);
    assert_eq!(
        std::fs::read_to_string(&at_once_state).expect("state").lines().count(),
        15
    );
}
