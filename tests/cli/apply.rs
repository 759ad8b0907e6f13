//! apply / revert / snapshots: against a fake /proc/sys tree and the fake sysctl(8) (any
//! user), and — as root — in network namespaces these tests create. Nothing here reads or
//! writes a value of the host namespace except to check that it did not change.

use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt as _;
use std::os::unix::process::CommandExt as _;
use std::path::{Path, PathBuf};
use std::process::{Command as Std, Output, Stdio};
use std::time::{Duration, Instant};

use assert_cmd::cargo::cargo_bin;
use serde_json::Value;
use tempfile::TempDir;

use super::netns::Netns;
use super::{bsd_tree, fixture, linux_tree, tcptune};

// ---------------------------------------------------------------- helpers

/// Every value file under `dir` (relative path → whitespace-folded content).
fn contents(dir: &Path) -> BTreeMap<PathBuf, String> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).expect("read_dir") {
            let p = e.expect("entry").path();
            if p.is_dir() {
                stack.push(p);
            } else if !p.file_name().is_some_and(|n| {
                // Skip the fake sysctl's markers: only values count.
                let n = n.to_string_lossy();
                n.starts_with('.') || [".ro", ".eperm", ".max"].iter().any(|x| n.ends_with(x))
            }) {
                let v = std::fs::read_to_string(&p).expect("read");
                let v = v.split_whitespace().collect::<Vec<_>>().join(" ");
                out.insert(p.strip_prefix(dir).expect("prefix").to_path_buf(), v);
            }
        }
    }
    out
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn write(path: &Path, s: &str) {
    std::fs::write(path, s).expect("write");
}

fn wait_for(what: &str, timeout: Duration, mut ok: impl FnMut() -> bool) {
    let start = Instant::now();
    while !ok() {
        assert!(start.elapsed() < timeout, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Which fake system a [`Fake`] is: how tcptune is pointed at it and where a key's value lives.
#[derive(Clone, Copy, PartialEq, Eq)]
enum FakeOs {
    /// A fake /proc/sys (`--sysctl-dir`): net.ipv4.tcp_rmem → DIR/net/ipv4/tcp_rmem.
    Linux,
    /// The fake sysctl(8) (`--os freebsd --sysctl-cmd`): one file per key in FAKE_SYSCTL_DIR.
    Bsd,
}

/// A fake system to apply to and revert: its value tree, and a state directory that does not
/// exist yet (tcptune creates it).
struct Fake {
    os: FakeOs,
    tree: TempDir,
    tmp: TempDir,
}

impl Fake {
    /// Linux with the stock values of linux-stock.txt, `overrides` replacing or removing some.
    fn linux(overrides: &[(&str, Option<&str>)]) -> Self {
        Self::with(FakeOs::Linux, linux_tree(overrides))
    }
    /// FreeBSD with the stock values of freebsd-stock.txt.
    fn bsd() -> Self {
        Self::with(FakeOs::Bsd, bsd_tree(&[]))
    }
    fn with(os: FakeOs, tree: TempDir) -> Self {
        Self {
            os,
            tree,
            tmp: tempfile::tempdir().expect("tempdir"),
        }
    }
    fn state(&self) -> PathBuf {
        self.tmp.path().join("state")
    }
    fn file(&self, name: &str, body: &str) -> PathBuf {
        let p = self.tmp.path().join(name);
        write(&p, body);
        p
    }
    /// tcptune pointed at this system and its state directory, `args` after; not started.
    fn std(&self, args: &[&str]) -> Std {
        let mut c = Std::new(cargo_bin("tcptune"));
        c.env_remove("NO_COLOR");
        match self.os {
            FakeOs::Linux => c.arg("--sysctl-dir").arg(self.tree.path()),
            FakeOs::Bsd => c
                .env("FAKE_SYSCTL_DIR", self.tree.path())
                .args(["--os", "freebsd", "--sysctl-cmd"])
                .arg(fixture("fake-sysctl")),
        };
        c.arg("--state-dir").arg(self.state()).args(args);
        c
    }
    fn run(&self, args: &[&str]) -> Output {
        self.std(args).output().expect("run")
    }
    fn run_file(&self, args: &[&str], file: &Path) -> Output {
        let mut a: Vec<&str> = args.to_vec();
        let f = file.to_str().expect("utf8");
        a.push(f);
        self.run(&a)
    }
    fn value(&self, key: &str) -> String {
        let path = match self.os {
            FakeOs::Linux => key.split('.').collect::<PathBuf>(),
            FakeOs::Bsd => PathBuf::from(key),
        };
        contents(self.tree.path())[&path].clone()
    }
    fn snapshots(&self) -> Vec<Value> {
        let out = self.run(&["snapshots", "--format", "json"]);
        assert!(out.status.success(), "{}", text(&out.stderr));
        if self.os == FakeOs::Bsd {
            assert!(
                out.stderr.is_empty(),
                "the store has unreadable files: {}",
                text(&out.stderr)
            );
        }
        let v: Value = serde_json::from_slice(&out.stdout).expect("json");
        v["snapshots"].as_array().expect("array").clone()
    }
}

fn assert_code(out: &Output, code: i32) {
    assert_eq!(
        out.status.code(),
        Some(code),
        "stdout:\n{}\nstderr:\n{}",
        text(&out.stdout),
        text(&out.stderr)
    );
}

fn is_snapshot_id(s: &str) -> bool {
    let b = s.as_bytes();
    s.len() == 21 && b[..4].iter().all(u8::is_ascii_digit) && b[4] == b'-' && b[13] == b'T' && s.ends_with('Z')
}

// ---------------------------------------------------------------- input checks (fake tree)

#[test]
fn bad_input_is_refused_before_any_write() {
    let sys = Fake::linux(&[]);
    let before = contents(sys.tree.path());
    let cases: &[(&str, &str)] = &[
        ("kernel.panic = 1", "kernel.panic is outside the networking tree"),
        ("vm.swappiness = 10", "vm.swappiness is outside the networking tree"),
        ("net/../kernel/panic = 1", "'/' separators"),
        ("net.ipv4.../x = 1", "'/' separators"),
        ("/proc/sys/kernel/panic = 1", "'/' separators"),
        ("net/ipv4/tcp_rmem = 4096 131072 6291456", "'/' separators"),
        ("net.ipv4..tcp_rmem = 4096 131072 6291456", "empty key component"),
        (
            "net.ipv4.tcp_rmem = 4096 131072 2147483648",
            "overflows the kernel's type (at most 2147483647)",
        ),
        ("net.core.rmem_max = 99999999999999999999999", "too large"),
        ("net.core.rmem_max = -1", "negative value -1 refused"),
        ("net.ipv4.tcp_rmem = 4096 -131072 6291456", "negative"),
        ("net.core.rmem_max = 12abc", "not a whole number"),
        ("net.core.rmem_max = 0x10", "not a whole number"),
        ("net.ipv4.tcp_rmem = 4096 131072", "expected 3 whole numbers"),
        ("net.ipv4.tcp_rmem = 8192 4096 6291456", "must not decrease"),
        ("net.ipv4.tcp_rmem = \"4096 131072 6291456\"", "quotes"),
        (
            "net.ipv4.tcp_congestion_control = htcp",
            "htcp is not offered by this kernel",
        ),
        (
            "net.ipv4.tcp_congestion_control = bbr; reboot",
            "neither a number nor a name",
        ),
        ("net.ipv4.tcp_nonexistent = 1", "no such key"),
        ("net.ipv4.tcp_mem = 1 2", "expected 3 whole numbers"),
        ("net.ipv4.tcp_window_scaling = 1 # on", "own line"),
        ("net.core.rmem_max 212992", "expected `key = value`"),
        (
            "net.ipv4.tcp_rmem = 4096 131072 6291456\nnet.ipv4.tcp_rmem = 4096 131072 8388608",
            "already set on line 2",
        ),
    ];
    for (i, (bad, want)) in cases.iter().enumerate() {
        // A valid first line: nothing may be written before every line is checked.
        let f = sys.file(
            &format!("{i}.conf"),
            &format!("net.ipv4.tcp_wmem = 4096 16384 8388608\n{bad}\n"),
        );
        let out = sys.run_file(&["apply"], &f);
        assert_code(&out, 2);
        let err = text(&out.stderr);
        assert!(err.contains(want), "{bad}: {err}");
        assert!(err.contains(&format!("{i}.conf:")), "names the file and line: {err}");
        assert!(err.contains("nothing was written"), "{err}");
        assert!(out.stdout.is_empty());
    }
    assert_eq!(contents(sys.tree.path()), before);
    assert!(!sys.state().exists(), "no snapshot for refused input");

    // Neither a file nor advice; both.
    assert_code(&sys.run(&["apply"]), 2);
    let f = sys.file("x.conf", "net.core.rmem_max = 1\n");
    assert_code(
        &sys.run_file(&["apply", "--rtt", "10ms", "--bandwidth", "1gbit"], &f),
        2,
    );
    assert_code(&sys.run(&["apply", "/nonexistent/file.conf"]), 2);
    // A file that sets nothing (advice with every line commented out) is nothing to change:
    // one line, exit 0, no snapshot, so the pipeline can run twice.
    let f = sys.file("empty.conf", "# nothing\n\n");
    let out = sys.run_file(&["apply"], &f);
    assert_code(&out, 0);
    let err = text(&out.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.starts_with("nothing to change: ") && err.contains("sets no key"),
        "{err}"
    );
    assert!(out.stdout.is_empty());
    assert_eq!(contents(sys.tree.path()), before);
    assert!(!sys.state().exists(), "no snapshot, no state directory");
}

#[test]
fn dry_run_shows_each_change_and_writes_nothing() {
    let sys = Fake::linux(&[]);
    let before = contents(sys.tree.path());
    let f = sys.file(
        "t.conf",
        "net.ipv4.tcp_rmem = 4096 131072 20643840\nnet.ipv4.tcp_window_scaling = 1\n",
    );
    let out = sys.run_file(&["apply", "--dry-run"], &f);
    assert_code(&out, 0);
    assert_eq!(
        text(&out.stdout),
        "net.ipv4.tcp_rmem: 4096 131072 6291456 \u{2192} 4096 131072 20643840\n\
         net.ipv4.tcp_window_scaling: 1 (no change)\n"
    );
    assert!(text(&out.stderr).contains("nothing was written"));
    let out = sys.run_file(&["apply", "--dry-run", "--format", "json"], &f);
    let v: Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(v["dry_run"], true);
    assert_eq!(v["changes"][0]["key"], "net.ipv4.tcp_rmem");
    assert_eq!(v["changes"][0]["current"], "4096 131072 6291456");
    assert_eq!(v["snapshot"], Value::Null);
    assert_eq!(contents(sys.tree.path()), before);
    assert!(!sys.state().exists());
}

// ---------------------------------------------------------------- apply and revert (fake tree)

#[test]
fn apply_then_revert_restores_and_a_second_revert_does_nothing() {
    let sys = Fake::linux(&[]);
    let before = contents(sys.tree.path());
    // stdin, both spellings, comments, and a '-' line for a key this kernel lacks.
    let mut cmd = tcptune();
    cmd.arg("--sysctl-dir")
        .arg(sys.tree.path())
        .arg("--state-dir")
        .arg(sys.state())
        .args(["apply", "-"])
        .write_stdin(
            "; tuned by hand\n# rmem\nnet.ipv4.tcp_rmem = 4096\t131072 20643840\nnet.ipv4.tcp_wmem=4096 16384 20643840\n\
             -net.ipv4.tcp_not_here = 1\nnet.ipv4.tcp_window_scaling = 1\n",
        );
    let out = cmd.output().expect("run");
    assert_code(&out, 0);
    let id = text(&out.stdout).trim().to_string();
    assert!(is_snapshot_id(&id), "{id}");
    let err = text(&out.stderr);
    assert!(
        err.contains("net.ipv4.tcp_rmem: 4096 131072 6291456 \u{2192} 4096 131072 20643840"),
        "{err}"
    );
    assert!(err.contains("skipped: net.ipv4.tcp_not_here = 1"), "{err}");
    assert_eq!(sys.value("net.ipv4.tcp_rmem"), "4096 131072 20643840");
    assert_eq!(sys.value("net.ipv4.tcp_wmem"), "4096 16384 20643840");

    let snaps = sys.snapshots();
    assert_eq!(snaps.len(), 1);
    let s = &snaps[0];
    assert_eq!(s["id"], id.as_str());
    assert_eq!(s["state"], "applied");
    assert_eq!(s["reverted"], false);
    assert_eq!(s["source"], "stdin");
    assert_eq!(s["keys"], serde_json::json!(["net.ipv4.tcp_rmem", "net.ipv4.tcp_wmem"]));
    assert_eq!(s["changes"][0]["prior"], "4096 131072 6291456");
    assert_eq!(s["this_boot"], true);
    assert!(
        s["boot_id"].is_string() && s["netns"].is_u64() && s["hostname"].is_string(),
        "{s:#}"
    );
    let table = sys.run(&["snapshots"]);
    assert!(text(&table.stdout).contains(&id) && text(&table.stdout).contains("applied"));

    let out = sys.run(&["revert"]);
    assert_code(&out, 0);
    let err = text(&out.stderr);
    assert!(
        err.contains(&format!("reverted snapshot {id}: 2 key(s) restored")),
        "{err}"
    );
    // Reverse order: wmem first.
    let w = err.find("net.ipv4.tcp_wmem:").expect("wmem");
    let r = err.find("net.ipv4.tcp_rmem:").expect("rmem");
    assert!(w < r, "{err}");
    assert_eq!(contents(sys.tree.path()), before);
    assert_eq!(sys.snapshots()[0]["state"], "reverted");

    let out = sys.run(&["revert"]);
    assert_code(&out, 0);
    assert!(text(&out.stderr).contains("nothing to revert"), "{}", text(&out.stderr));
    let out = sys.run(&["revert", &id]);
    assert_code(&out, 0);
    assert!(text(&out.stderr).contains("nothing to revert"));
    assert_eq!(contents(sys.tree.path()), before);
}

/// Once apply (or revert) has made its change, a stdout that cannot take the id or the
/// report (a full device, a pipe whose reader left) is a warning naming the snapshot and
/// how to undo it, and the exit code is 0: exit 5 says nothing was left changed, which
/// would be a lie. A dry run changed nothing and still fails with 5.
#[test]
fn a_stdout_that_fails_after_the_change_is_a_warning_not_exit_5() {
    let sys = Fake::linux(&[]);
    let before = contents(sys.tree.path());
    let file = sys.file("t.conf", "net.ipv4.tcp_rmem = 4096 131072 20643840\n");
    let full = || {
        std::fs::OpenOptions::new()
            .write(true)
            .open("/dev/full")
            .expect("/dev/full")
    };
    let to_full = |args: &[&str]| {
        let mut c = sys.std(args);
        c.stdout(full()).output().expect("run")
    };
    let f = file.to_str().expect("utf8");
    // A dry run changes nothing: its failed write is the error it was.
    let out = to_full(&["apply", "--dry-run", f]);
    assert_code(&out, 5);
    assert_eq!(contents(sys.tree.path()), before);

    for (i, format) in ["table", "json"].into_iter().enumerate() {
        let out = to_full(&["apply", "--format", format, f]);
        assert_code(&out, 0);
        let err = text(&out.stderr);
        let snaps = sys.snapshots();
        assert_eq!(snaps.len(), i + 1, "{err}");
        let id = snaps[i]["id"].as_str().expect("id").to_string();
        let warning = err
            .lines()
            .find(|l| l.starts_with("warning: stdout could not be written"))
            .unwrap_or_else(|| panic!("{format}: no warning in {err}"));
        assert!(
            warning.contains(&format!("snapshot {id}")) && warning.contains(&format!("tcptune revert {id} ")),
            "{format}: {warning}"
        );
        assert_eq!(sys.value("net.ipv4.tcp_rmem"), "4096 131072 20643840");
        assert_eq!(snaps[i]["state"], "applied");
        // Revert, its JSON report going nowhere: reverted all the same, exit 0, a warning.
        let out = to_full(&["revert", "--format", "json"]);
        assert_code(&out, 0);
        let err = text(&out.stderr);
        assert!(
            err.contains("warning: stdout could not be written") && err.contains(&format!("snapshot {id} is reverted")),
            "{err}"
        );
        assert_eq!(contents(sys.tree.path()), before);
        assert_eq!(sys.snapshots()[i]["state"], "reverted");
    }

    // A reader that left before the id was written: exit 0 as before, now with the warning.
    let mut child = sys
        .std(&["apply", f])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    drop(child.stdout.take());
    let out = child.wait_with_output().expect("wait");
    assert_code(&out, 0);
    assert!(
        text(&out.stderr).contains("warning: stdout could not be written"),
        "{}",
        text(&out.stderr)
    );
    assert_eq!(sys.value("net.ipv4.tcp_rmem"), "4096 131072 20643840");
}

#[test]
fn applying_fresh_advice_and_nothing_to_change() {
    // A host running bbr: the advice for a path known to be clean switches it to cubic.
    let sys = Fake::linux(&[("net.ipv4.tcp_congestion_control", Some("bbr"))]);
    let out = sys.run(&["apply", "--clean-path", "--rtt", "150ms", "--bandwidth", "500mbit"]);
    assert_code(&out, 0);
    assert_eq!(sys.value("net.ipv4.tcp_rmem"), "4096 131072 20643840");
    assert_eq!(sys.value("net.ipv4.tcp_congestion_control"), "cubic");
    let snaps = sys.snapshots();
    assert!(
        snaps[0]["source"]
            .as_str()
            .expect("source")
            .starts_with("advice: RTT 150 ms")
    );
    // Again: the advice is now "no change", so no snapshot.
    let out = sys.run(&["apply", "--clean-path", "--rtt", "150ms", "--bandwidth", "500mbit"]);
    assert_code(&out, 0);
    assert!(out.stdout.is_empty());
    assert!(text(&out.stderr).contains("nothing to change"), "{}", text(&out.stderr));
    assert_eq!(sys.snapshots().len(), 1);
    assert_code(&sys.run(&["revert"]), 0);
    assert_eq!(sys.value("net.ipv4.tcp_rmem"), "4096 131072 6291456");
    assert_eq!(sys.value("net.ipv4.tcp_congestion_control"), "bbr");
}

#[test]
fn revert_stops_on_values_changed_since_unless_forced() {
    let sys = Fake::linux(&[]);
    let f = sys.file(
        "t.conf",
        "net.ipv4.tcp_rmem = 4096 131072 20643840\nnet.ipv4.tcp_wmem = 4096 16384 20643840\n",
    );
    assert_code(&sys.run_file(&["apply"], &f), 0);
    // Someone else changes one of them.
    write(&sys.tree.path().join("net/ipv4/tcp_rmem"), "4096 131072 1048576\n");
    let out = sys.run(&["revert"]);
    assert_code(&out, 3);
    let err = text(&out.stderr);
    assert!(
        err.contains("net.ipv4.tcp_rmem is now 4096 131072 1048576 (tcptune set 4096 131072 20643840; before, it was 4096 131072 6291456)"),
        "{err}"
    );
    assert!(err.contains("--force"), "{err}");
    // Nothing changed, not even the key without a conflict.
    assert_eq!(sys.value("net.ipv4.tcp_wmem"), "4096 16384 20643840");
    assert_eq!(sys.snapshots()[0]["state"], "applied");

    let out = sys.run(&["revert", "--force"]);
    assert_code(&out, 0);
    assert!(text(&out.stderr).contains("anyway (--force)"));
    assert_eq!(sys.value("net.ipv4.tcp_rmem"), "4096 131072 6291456");
    assert_eq!(sys.value("net.ipv4.tcp_wmem"), "4096 16384 4194304");
}

#[test]
fn stacked_snapshots_revert_latest_first() {
    let sys = Fake::linux(&[]);
    let a = sys.file("a.conf", "net.ipv4.tcp_rmem = 4096 131072 8388608\n");
    let b = sys.file("b.conf", "net.ipv4.tcp_rmem = 4096 131072 16777216\n");
    let id_a = text(&sys.run_file(&["apply"], &a).stdout).trim().to_string();
    let id_b = text(&sys.run_file(&["apply"], &b).stdout).trim().to_string();
    assert_ne!(id_a, id_b);
    // Reverting the older one first would undo the newer one's value: refused, and why.
    let out = sys.run(&["revert", &id_a]);
    assert_code(&out, 3);
    assert!(text(&out.stderr).contains(&format!("set by snapshot {id_b}: revert that first")));
    // By number, too.
    let out = sys.run(&["revert", "--dry-run", "2"]);
    assert_code(&out, 0);
    assert_eq!(
        text(&out.stdout),
        "net.ipv4.tcp_rmem: 4096 131072 16777216 \u{2192} 4096 131072 8388608\n"
    );
    assert_code(&sys.run(&["revert"]), 0);
    assert_eq!(sys.value("net.ipv4.tcp_rmem"), "4096 131072 8388608");
    assert_code(&sys.run(&["revert"]), 0);
    assert_eq!(sys.value("net.ipv4.tcp_rmem"), "4096 131072 6291456");
    assert_code(&sys.run(&["revert", "no-such-id"]), 2);
}

#[test]
fn a_snapshot_from_another_boot_leaves_the_running_values_alone() {
    let sys = Fake::linux(&[]);
    let f = sys.file("t.conf", "net.ipv4.tcp_rmem = 4096 131072 20643840\n");
    let id = text(&sys.run_file(&["apply"], &f).stdout).trim().to_string();
    let path = sys.state().join("snapshots").join(format!("{id}.json"));
    let mut s: Value = serde_json::from_str(&std::fs::read_to_string(&path).expect("read")).expect("json");
    s["boot_id"] = "00000000-0000-0000-0000-000000000000".into();
    write(&path, &serde_json::to_string_pretty(&s).expect("json"));

    let listed = sys.snapshots();
    assert_eq!(listed[0]["this_boot"], false);
    let out = sys.run(&["revert"]);
    assert_code(&out, 0);
    let err = text(&out.stderr);
    assert!(err.contains("earlier boot") && err.contains("left alone"), "{err}");
    // Here the fake tree kept the value; on a real reboot it would be gone.
    assert_eq!(sys.value("net.ipv4.tcp_rmem"), "4096 131072 20643840");
    assert_eq!(sys.snapshots()[0]["state"], "reverted");
}

#[test]
fn a_damaged_or_planted_snapshot_is_refused() {
    let sys = Fake::linux(&[]);
    let f = sys.file("t.conf", "net.ipv4.tcp_rmem = 4096 131072 20643840\n");
    let id = text(&sys.run_file(&["apply"], &f).stdout).trim().to_string();
    let path = sys.state().join("snapshots").join(format!("{id}.json"));
    let mut s: Value = serde_json::from_str(&std::fs::read_to_string(&path).expect("read")).expect("json");
    s["changes"][0]["key"] = "kernel.panic".into();
    write(&path, &serde_json::to_string(&s).expect("json"));
    let out = sys.run(&["revert"]);
    assert_code(&out, 2);
    assert!(text(&out.stderr).contains("is damaged"), "{}", text(&out.stderr));

    // A truncated file is listed by snapshots as damaged, not fatal.
    write(
        &sys.state().join("snapshots/0009-20260101T000000Z.json"),
        "{\"format\": 1, \"id\"",
    );
    let out = sys.run(&["snapshots"]);
    assert_code(&out, 0);
    let listed = text(&out.stdout);
    assert!(
        listed
            .lines()
            .any(|l| l.contains("0009-20260101T000000Z") && l.contains("damaged")),
        "{listed}"
    );
}

#[test]
fn a_state_dir_others_can_write_is_refused() {
    let sys = Fake::linux(&[]);
    std::fs::create_dir(sys.state()).expect("mkdir");
    std::fs::set_permissions(sys.state(), std::fs::Permissions::from_mode(0o777)).expect("chmod");
    let f = sys.file("t.conf", "net.ipv4.tcp_rmem = 4096 131072 20643840\n");
    let out = sys.run_file(&["apply"], &f);
    assert_code(&out, 3);
    assert!(text(&out.stderr).contains("writable by group or others"));
    assert_eq!(sys.value("net.ipv4.tcp_rmem"), "4096 131072 6291456");
}

// ---------------------------------------------------------------- trust: the state directory (root)

fn assert_root(what: &str) {
    // SAFETY: geteuid has no preconditions and cannot fail.
    assert_eq!(unsafe { libc::geteuid() }, 0, "{what} needs root (CI runs as root)");
}

/// A root-only file to aim planted links at: (path, content). Mode 0600.
fn victim(dir: &Path) -> (PathBuf, &'static str) {
    let p = dir.join("victim");
    let body = "root:secret-hash:19000::::::\n";
    write(&p, body);
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o600)).expect("chmod");
    (p, body)
}

fn assert_victim_untouched(p: &Path, body: &str) {
    assert_eq!(
        std::fs::read_to_string(p).expect("read"),
        body,
        "{} was written",
        p.display()
    );
    let mode = std::fs::metadata(p).expect("meta").permissions().mode() & 0o7777;
    assert_eq!(mode, 0o600, "{} was chmodded", p.display());
}

/// The ids an apply started now (give or take `secs` seconds) could give snapshot `seq`.
fn ids_around_now(seq: u64, secs: u64) -> Vec<String> {
    let now = std::time::SystemTime::now();
    (0..=2 * secs)
        .map(|k| {
            let t = now + Duration::from_secs(k) - Duration::from_secs(secs);
            let stamp = humantime::format_rfc3339_seconds(t).to_string();
            let compact: String = stamp.chars().filter(|c| *c != '-' && *c != ':').collect();
            format!("{seq:04}-{compact}")
        })
        .collect()
}

/// Every entry under `dir`, links not followed (relative paths).
fn entries(dir: &Path) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = std::fs::read_dir(dir)
        .expect("read_dir")
        .map(|e| e.expect("entry").path())
        .flat_map(|p| {
            let below = if std::fs::symlink_metadata(&p).expect("lstat").is_dir() {
                entries(&p).into_iter().map(|q| p.join(q)).collect()
            } else {
                Vec::new()
            };
            std::iter::once(p).chain(below)
        })
        .map(|p| p.strip_prefix(dir).map(Path::to_path_buf).unwrap_or(p))
        .collect();
    out.sort();
    out
}

#[test]
#[cfg_attr(not(feature = "privileged-tests"), ignore = "privileged: needs root")]
fn a_state_dir_owned_by_another_user_is_refused_and_nothing_written() {
    assert_root("chown");
    let sys = Fake::linux(&[]);
    let before = contents(sys.tree.path());
    let f = sys.file("t.conf", "net.ipv4.tcp_rmem = 4096 131072 20643840\n");
    // The state directory itself: 0755, but another user's.
    std::fs::create_dir(sys.state()).expect("mkdir");
    std::fs::set_permissions(sys.state(), std::fs::Permissions::from_mode(0o755)).expect("chmod");
    std::os::unix::fs::chown(sys.state(), Some(65534), Some(65534)).expect("chown");
    let out = sys.run_file(&["apply"], &f);
    assert_code(&out, 3);
    let err = text(&out.stderr);
    assert!(err.contains("refusing the state directory"), "{err}");
    assert!(err.contains("it is owned by uid 65534 (mode 755), not root"), "{err}");
    assert!(err.contains("hint: make"), "{err}");
    assert_eq!(contents(sys.tree.path()), before);
    assert_eq!(entries(&sys.state()), Vec::<PathBuf>::new(), "nothing created in it");
    assert_code(&sys.run(&["revert", "--wait", "0"]), 0); // nothing to revert, nothing written
    assert_eq!(entries(&sys.state()), Vec::<PathBuf>::new());

    // A parent another user owns, the state directory not there yet.
    std::fs::remove_dir(sys.state()).expect("rmdir");
    let parent = sys.tmp.path().join("theirs");
    std::fs::create_dir(&parent).expect("mkdir");
    std::fs::set_permissions(&parent, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    std::os::unix::fs::chown(&parent, Some(65534), Some(65534)).expect("chown");
    let state = parent.join("state");
    let out = tcptune()
        .arg("--sysctl-dir")
        .arg(sys.tree.path())
        .arg("--state-dir")
        .arg(&state)
        .arg("apply")
        .arg(&f)
        .output()
        .expect("run");
    assert_code(&out, 3);
    assert!(
        text(&out.stderr).contains("theirs on its path is owned by uid 65534"),
        "{}",
        text(&out.stderr)
    );
    assert_eq!(contents(sys.tree.path()), before);
    assert_eq!(entries(&parent), Vec::<PathBuf>::new(), "nothing created");
}

#[test]
fn a_lock_symlink_is_refused_and_its_target_untouched() {
    let sys = Fake::linux(&[]);
    let before = contents(sys.tree.path());
    let (v, body) = victim(sys.tmp.path());
    std::fs::create_dir(sys.state()).expect("mkdir");
    std::os::unix::fs::symlink(&v, sys.state().join("lock")).expect("symlink");
    let f = sys.file("t.conf", "net.ipv4.tcp_rmem = 4096 131072 20643840\n");
    let out = sys.run_file(&["apply"], &f);
    assert_code(&out, 3);
    assert!(
        text(&out.stderr).contains("is a symbolic link (not followed)"),
        "{}",
        text(&out.stderr)
    );
    assert_victim_untouched(&v, body);
    assert_eq!(contents(sys.tree.path()), before);
    assert!(sys.snapshots().is_empty());
}

#[test]
fn planted_temp_file_links_are_not_written_through() {
    let sys = Fake::linux(&[]);
    let (v, body) = victim(sys.tmp.path());
    let snaps = sys.state().join("snapshots");
    std::fs::create_dir_all(&snaps).expect("mkdir");
    // The temp names tcptune used to take (".ID.json.tcptune-PID.tmp"): the next pids, the
    // next seconds. Against that store one of these is the name, and JSON went to the victim.
    let last: u32 = std::fs::read_to_string("/proc/sys/kernel/ns_last_pid")
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(0);
    for id in ids_around_now(1, 3) {
        for pid in last..last + 200 {
            std::os::unix::fs::symlink(&v, snaps.join(format!(".{id}.json.tcptune-{pid}.tmp"))).expect("symlink");
        }
    }
    let f = sys.file("t.conf", "net.ipv4.tcp_rmem = 4096 131072 20643840\n");
    let out = sys.run_file(&["apply"], &f);
    assert_code(&out, 0);
    assert_victim_untouched(&v, body);
    assert_eq!(sys.value("net.ipv4.tcp_rmem"), "4096 131072 20643840");
    assert_code(&sys.run(&["revert"]), 0);
    assert_victim_untouched(&v, body);
    assert_eq!(sys.snapshots()[0]["state"], "reverted");
}

#[test]
fn a_timer_log_symlink_is_not_appended_to() {
    let sys = Fake::linux(&[]);
    let before = contents(sys.tree.path());
    let (v, body) = victim(sys.tmp.path());
    std::fs::create_dir(sys.state()).expect("mkdir");
    for id in ids_around_now(1, 3) {
        std::os::unix::fs::symlink(&v, sys.state().join(format!("timer-{id}.log"))).expect("symlink");
    }
    let f = sys.file("t.conf", "net.ipv4.tcp_rmem = 4096 131072 20643840\n");
    let out = sys.run_file(&["apply", "--for", "10m"], &f);
    assert_code(&out, 3);
    let err = text(&out.stderr);
    assert!(err.contains("cannot start the timer"), "{err}");
    assert!(err.contains("is a symbolic link (not followed)"), "{err}");
    assert!(err.contains("the changes were reverted"), "{err}");
    assert_victim_untouched(&v, body);
    assert_eq!(contents(sys.tree.path()), before);
}

#[test]
fn a_planted_snapshot_with_the_last_sequence_number_is_refused() {
    let sys = Fake::linux(&[]);
    let f = sys.file("t.conf", "net.ipv4.tcp_rmem = 4096 131072 20643840\n");
    let id = text(&sys.run_file(&["apply"], &f).stdout).trim().to_string();
    assert_code(&sys.run(&["revert"]), 0);
    // Renumber it u64::MAX: the next number would wrap to 0 and sort before it.
    let snaps = sys.state().join("snapshots");
    let mut s: Value =
        serde_json::from_str(&std::fs::read_to_string(snaps.join(format!("{id}.json"))).expect("read")).expect("json");
    let top = format!("{}-{}", u64::MAX, &id[5..]);
    s["seq"] = u64::MAX.into();
    s["id"] = top.clone().into();
    std::fs::remove_file(snaps.join(format!("{id}.json"))).expect("rm");
    let planted = snaps.join(format!("{top}.json"));
    write(&planted, &serde_json::to_string_pretty(&s).expect("json"));
    let planted_before = std::fs::read(&planted).expect("read");
    let before = contents(sys.tree.path());

    let out = sys.run_file(&["apply"], &f);
    assert_code(&out, 3);
    assert!(
        text(&out.stderr).contains("no snapshot number is left after 18446744073709551615"),
        "{}",
        text(&out.stderr)
    );
    assert_eq!(contents(sys.tree.path()), before);
    assert_eq!(std::fs::read(&planted).expect("read"), planted_before);
    assert_eq!(entries(&snaps), vec![PathBuf::from(format!("{top}.json"))]);
}

/// A small tmpfs at `at` (root only), unmounted when dropped: a state disk that really fills.
struct Tmpfs(PathBuf);

impl Tmpfs {
    fn mount(at: &Path, size: &str) -> Self {
        assert_root("mounting a tmpfs");
        std::fs::create_dir_all(at).expect("mkdir");
        let ok = Std::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size},mode=0755"), "tmpfs"])
            .arg(at)
            .status()
            .expect("mount");
        assert!(ok.success(), "mount -t tmpfs on {}", at.display());
        Self(at.to_path_buf())
    }

    /// Fill it with `filler` until the file system says ENOSPC; returns the file.
    fn fill(&self) -> std::fs::File {
        use std::io::Write as _;
        let mut f = std::fs::File::create(self.0.join("filler")).expect("create");
        let page = [0u8; 4096];
        loop {
            match f.write(&page) {
                Ok(4096) => {}
                Ok(_) => break,
                Err(e) if e.raw_os_error() == Some(libc::ENOSPC) => break,
                Err(e) => panic!("filling {}: {e}", self.0.display()),
            }
        }
        f
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Std::new("umount").arg("-l").arg(&self.0).status();
    }
}

#[test]
#[cfg_attr(not(feature = "privileged-tests"), ignore = "privileged: needs root")]
fn a_full_state_disk_refuses_before_writing_and_undoes_after() {
    let sys = Fake::linux(&[]);
    let disk = Tmpfs::mount(&sys.state(), "64k");
    let before = contents(sys.tree.path());
    let snaps = sys.state().join("snapshots");
    std::fs::create_dir(&snaps).expect("mkdir");
    // The lock file holds its page already, so that only the snapshots compete for space.
    write(&sys.state().join("lock"), "1\n");
    let filler = disk.fill();
    let f = sys.file(
        "t.conf",
        "net.ipv4.tcp_rmem = 4096 131072 20643840\nnet.core.rmem_max = 20643840\n",
    );

    // No room for the snapshot: refused before the first write, naming the file.
    let out = sys.run_file(&["apply"], &f);
    assert_code(&out, 3);
    let err = text(&out.stderr);
    assert!(err.contains("No space left on device"), "{err}");
    assert!(err.contains(&format!("cannot write {}/", snaps.display())), "{err}");
    assert!(err.contains(".json: No space left on device (os error 28)"), "{err}");
    assert!(err.contains("nothing was changed"), "{err}");
    assert_eq!(contents(sys.tree.path()), before);
    assert_eq!(entries(&snaps), Vec::<PathBuf>::new(), "no snapshot, no temp file");

    // Room for one page: the `applying` snapshot fits, its `applied` update does not
    // (an atomic replace needs the old and the new copy at once). The writes are undone.
    let len = filler.metadata().expect("meta").len();
    filler.set_len(len - 4096).expect("truncate");
    let out = sys.run_file(&["apply"], &f);
    assert_code(&out, 3);
    let err = text(&out.stderr);
    assert!(err.contains("could not record snapshot"), "{err}");
    assert!(err.contains(&format!("(cannot write {}/", snaps.display())), "{err}");
    assert!(err.contains("nothing was left changed"), "{err}");
    assert!(err.contains("could not be updated"), "{err}");
    assert_eq!(contents(sys.tree.path()), before);

    // With space again, revert closes the snapshot left `applying`; nothing to restore.
    drop(filler); // an open file keeps its pages
    std::fs::remove_file(sys.state().join("filler")).expect("rm");
    assert_code(&sys.run(&["revert"]), 0);
    assert_eq!(contents(sys.tree.path()), before);
    let s = sys.snapshots();
    assert_eq!(s.len(), 1);
    assert_eq!(s[0]["state"], "reverted");
    drop(disk);
}

#[test]
#[cfg_attr(not(feature = "privileged-tests"), ignore = "privileged: needs root")]
fn a_full_disk_error_names_the_file_it_could_not_write() {
    let sys = Fake::linux(&[]);
    let tmp = tempfile::tempdir().expect("tempdir");
    let at = tmp.path().join("disk");
    let disk = Tmpfs::mount(&at, "64k");
    std::fs::create_dir_all(at.join("root/etc/sysctl.d")).expect("mkdir");
    let filler = disk.fill();
    let before = contents(sys.tree.path());
    let f = sys.file("t.conf", "net.ipv4.tcp_rmem = 4096 131072 20643840\n");
    let no_space = "No space left on device (os error 28)";

    // The state directory on the full disk: its lock file cannot take the pid.
    let state = at.join("state");
    let out = tcptune()
        .arg("--sysctl-dir")
        .arg(sys.tree.path())
        .arg("--state-dir")
        .arg(&state)
        .arg("apply")
        .arg(&f)
        .output()
        .expect("run");
    assert_ne!(out.status.code(), Some(0));
    let err = text(&out.stderr);
    assert!(
        err.contains(&format!(
            "cannot write the lock file {}: {no_space}",
            state.join("lock").display()
        )),
        "{err}"
    );
    assert_eq!(contents(sys.tree.path()), before);

    // --output on the full disk.
    let file = at.join("advice.conf");
    let out = tcptune()
        .args(["advise", "--rtt", "150ms", "--bandwidth", "500mbit", "--output"])
        .arg(&file)
        .output()
        .expect("run");
    assert_ne!(out.status.code(), Some(0));
    let err = text(&out.stderr);
    assert!(
        err.contains(&format!("cannot write {}: {no_space}", file.display())),
        "{err}"
    );
    assert!(!file.exists());

    // The drop-in on the full disk (the state directory elsewhere): the kernel's change is
    // undone, and the error names the drop-in.
    let root = at.join("root");
    let out = sys.run_file(
        &["apply", "--persist", "--persist-root", root.to_str().expect("utf8")],
        &f,
    );
    assert_code(&out, 3);
    let err = text(&out.stderr);
    let dropin = root.join("etc/sysctl.d/60-tcptune.conf");
    assert!(
        err.contains(&format!("cannot write {}: {no_space}", dropin.display())),
        "{err}"
    );
    assert_eq!(contents(sys.tree.path()), before);
    assert!(!dropin.exists());
    drop(filler);
    drop(disk);
}

#[test]
fn a_freebsd_boot_value_out_of_its_type_is_refused() {
    let sys = Fake::bsd();
    let root = tempfile::tempdir().expect("tempdir");
    let before = (contents(sys.tree.path()), contents(root.path()));
    let head =
        "name = \"mine\"\nos = \"freebsd\"\ndescription = \"d\"\n[[setting]]\nstage = \"boot\"\nreason = \"r\"\n";
    for (key, value, want) in [
        // A u64 the kernel's getenv_int would cast to -1.
        (
            "kern.ipc.nmbclusters",
            "18446744073709551615",
            "more than the kernel's int holds (at most 2147483647)",
        ),
        ("kern.ipc.nmbclusters", "2147483648", "at most 2147483647"),
        ("net.inet.tcp.tcbhashsize", "1000", "not a power of 2"),
        // Filled in from a fact: checked when rendered.
        ("kern.ipc.nmbclusters", "{buffer}000", "renders as an invalid value"),
    ] {
        let p = sys.file("p.toml", &format!("{head}key = {key:?}\nvalue = {value:?}\n"));
        for args in [
            &["advise", "--rtt", "150ms", "--bandwidth", "500mbit"][..],
            &[
                "apply",
                "--rtt",
                "150ms",
                "--bandwidth",
                "500mbit",
                "--persist",
                "--persist-root",
            ][..],
        ] {
            let mut a = args.to_vec();
            if args[0] == "apply" {
                a.push(root.path().to_str().expect("utf8"));
            }
            a.extend(["--profile", p.to_str().expect("utf8")]);
            let out = sys.run(&a);
            assert_code(&out, 2);
            let err = text(&out.stderr);
            assert!(err.contains(want), "{key} = {value}: {err}");
        }
    }
    assert_eq!((contents(sys.tree.path()), contents(root.path())), before);
    assert!(!sys.state().exists());
    // In range: accepted.
    let p = sys.file(
        "p.toml",
        &format!("{head}key = \"kern.ipc.nmbclusters\"\nvalue = \"2147483647\"\n"),
    );
    assert_code(
        &sys.run(&[
            "advise",
            "--rtt",
            "150ms",
            "--bandwidth",
            "500mbit",
            "--profile",
            p.to_str().expect("utf8"),
        ]),
        0,
    );
}

// ---------------------------------------------------------------- --persist (fake /etc)

#[test]
fn persist_adds_a_block_and_revert_removes_exactly_it() {
    let sys = Fake::linux(&[]);
    let root = tempfile::tempdir().expect("tempdir");
    let d = root.path().join("etc/sysctl.d");
    std::fs::create_dir_all(&d).expect("mkdir");
    let ours = d.join("60-tcptune.conf");
    let mine = "# my own settings, no final newline\nnet.ipv4.tcp_sack = 1";
    write(&ours, mine);
    // /etc/sysctl.conf is read last whatever the drop-in's number: a warning, still 60.
    write(
        &root.path().join("etc/sysctl.conf"),
        "net.ipv4.tcp_rmem = 4096 87380 6291456\n",
    );
    write(&d.join("10-early.conf"), "net.ipv4.tcp_wmem = 4096 87380 6291456\n");
    let f = sys.file(
        "t.conf",
        "net.ipv4.tcp_rmem = 4096 131072 20643840\nnet.ipv4.tcp_wmem = 4096 16384 20643840\nnet.ipv4.tcp_window_scaling = 1\n",
    );
    let root_s = root.path().to_str().expect("utf8");
    let out = sys.run_file(&["apply", "--persist", "--persist-root", root_s], &f);
    assert_code(&out, 0);
    let id = text(&out.stdout).trim().to_string();
    let err = text(&out.stderr);
    assert!(
        err.contains("etc/sysctl.conf:1 sets net.ipv4.tcp_rmem = 4096 87380 6291456; it is read after 60-tcptune.conf and wins at boot"),
        "{err}"
    );
    assert!(
        !err.lines().any(|l| l.starts_with("warning:") && l.contains("10-early")),
        "an earlier file does not win: {err}"
    );
    assert!(
        err.contains("note: --persist chose 60-tcptune.conf: tcptune's existing drop-in, read after 10-early.conf"),
        "{err}"
    );
    let after = std::fs::read_to_string(&ours).expect("read");
    assert_eq!(
        after,
        format!(
            "{mine}\n# BEGIN tcptune {id}: added by `tcptune apply --persist`; `tcptune revert {id}` removes this block\n\
             net.ipv4.tcp_rmem = 4096 131072 20643840\nnet.ipv4.tcp_wmem = 4096 16384 20643840\n\
             net.ipv4.tcp_window_scaling = 1\n# END tcptune {id}\n"
        )
    );
    // Again: the values run and the file sets them already — nothing to do, no new block.
    let out = sys.run_file(&["apply", "--persist", "--persist-root", root_s], &f);
    assert_code(&out, 0);
    assert!(text(&out.stderr).contains("nothing to change"), "{}", text(&out.stderr));
    assert_eq!(std::fs::read_to_string(&ours).expect("read"), after);
    assert_code(&sys.run(&["revert", "--persist-root", root_s]), 0);
    assert_eq!(std::fs::read_to_string(&ours).expect("read"), mine, "byte for byte");

    // A file that did not exist is removed again; a hand edit after the apply is kept.
    std::fs::remove_file(&ours).expect("rm");
    assert_code(&sys.run_file(&["apply", "--persist", "--persist-root", root_s], &f), 0);
    assert!(ours.exists());
    assert_code(&sys.run(&["revert", "--persist-root", root_s]), 0);
    assert!(!ours.exists());
    assert_code(&sys.run_file(&["apply", "--persist", "--persist-root", root_s], &f), 0);
    let edited = format!(
        "{}net.core.somaxconn = 8192\n",
        std::fs::read_to_string(&ours).expect("read")
    );
    write(&ours, &edited);
    let out = sys.run(&["revert", "--persist-root", root_s]);
    assert_code(&out, 0);
    assert!(text(&out.stderr).contains("only tcptune's block was taken out"));
    assert_eq!(
        std::fs::read_to_string(&ours).expect("read"),
        "net.core.somaxconn = 8192\n"
    );
    assert_eq!(sys.value("net.ipv4.tcp_rmem"), "4096 131072 6291456");
}

#[test]
fn persist_numbers_the_drop_in_after_a_file_that_sets_the_same_key() {
    let sys = Fake::linux(&[]);
    let root = tempfile::tempdir().expect("tempdir");
    let d = root.path().join("etc/sysctl.d");
    std::fs::create_dir_all(&d).expect("mkdir");
    let theirs = "net.ipv4.tcp_rmem = 4096 87380 6291456\n";
    write(&d.join("70-x.conf"), theirs);
    let f = sys.file(
        "t.conf",
        "net.ipv4.tcp_rmem = 4096 131072 20643840\nnet.ipv4.tcp_wmem = 4096 16384 20643840\n",
    );
    let root_s = root.path().to_str().expect("utf8");

    // The dry run says where the block would go, and why; nothing is written.
    let out = sys.run_file(&["apply", "--dry-run", "--persist", "--persist-root", root_s], &f);
    assert_code(&out, 0);
    let err = text(&out.stderr);
    assert!(
        err.contains("note: --persist chose 71-tcptune.conf: read after 70-x.conf, which sets net.ipv4.tcp_rmem"),
        "{err}"
    );
    assert!(text(&out.stdout).contains("71-tcptune.conf"), "{}", text(&out.stdout));
    assert!(!d.join("71-tcptune.conf").exists());

    let out = sys.run_file(&["apply", "--persist", "--persist-root", root_s], &f);
    assert_code(&out, 0);
    let id = text(&out.stdout).trim().to_string();
    let err = text(&out.stderr);
    assert!(
        err.contains("--persist chose 71-tcptune.conf: read after 70-x.conf"),
        "{err}"
    );
    assert!(
        !err.contains("warning:"),
        "70-x.conf is read before tcptune's file: {err}"
    );
    assert!(!d.join("60-tcptune.conf").exists());
    let ours = d.join("71-tcptune.conf");
    assert_eq!(
        std::fs::read_to_string(&ours).expect("read"),
        format!(
            "# BEGIN tcptune {id}: added by `tcptune apply --persist`; `tcptune revert {id}` removes this block\n\
             net.ipv4.tcp_rmem = 4096 131072 20643840\nnet.ipv4.tcp_wmem = 4096 16384 20643840\n# END tcptune {id}\n"
        )
    );
    // Again: the same file is chosen, and it already says it all.
    let out = sys.run_file(&["apply", "--persist", "--persist-root", root_s], &f);
    assert_code(&out, 0);
    assert!(text(&out.stderr).contains("nothing to change"), "{}", text(&out.stderr));

    // A file installed later that sorts after tcptune's is named in a warning.
    write(&d.join("80-y.conf"), "net.ipv4.tcp_wmem = 1 2 3\n");
    let out = sys.run_file(&["apply", "--dry-run", "--persist", "--persist-root", root_s], &f);
    assert_code(&out, 0);
    let err = text(&out.stderr);
    assert!(
        err.contains("note: --persist chose 81-tcptune.conf: read after 80-y.conf"),
        "{err}"
    );
    std::fs::remove_file(d.join("80-y.conf")).expect("rm");

    // Revert takes the block out: the file tcptune created is gone, 70-x.conf untouched.
    assert_code(&sys.run(&["revert", "--persist-root", root_s]), 0);
    assert!(!ours.exists());
    assert_eq!(std::fs::read_to_string(d.join("70-x.conf")).expect("read"), theirs);
    assert_eq!(sys.value("net.ipv4.tcp_rmem"), "4096 131072 6291456");
}

// ---------------------------------------------------------------- FreeBSD path (fake sysctl(8))

#[test]
fn freebsd_apply_rollback_and_revert() {
    let sys = Fake::bsd();
    let before = contents(sys.tree.path());
    let f = sys.file(
        "t.conf",
        "kern.ipc.maxsockbuf=23224320\nnet.inet.tcp.recvbuf_max=20643840 # 2 x BDP\nnet.inet.tcp.sendbuf_max=20643840\n",
    );
    let fs = f.to_str().expect("utf8");

    // A read-only oid third: the first two are written, then undone.
    write(&sys.tree.path().join("net.inet.tcp.sendbuf_max.ro"), "");
    let out = sys.run(&["apply", fs]);
    assert_code(&out, 3);
    let err = text(&out.stderr);
    assert!(
        err.contains("net.inet.tcp.sendbuf_max") && err.contains("read only"),
        "{err}"
    );
    assert!(
        err.contains("undid the 2 change(s) made before it: nothing was left changed"),
        "{err}"
    );
    assert_eq!(contents(sys.tree.path()), before);
    let snaps = sys.snapshots();
    assert_eq!(snaps.len(), 1);
    assert_eq!(snaps[0]["state"], "rolled-back");

    // Operation not permitted: the same.
    std::fs::remove_file(sys.tree.path().join("net.inet.tcp.sendbuf_max.ro")).expect("rm");
    write(&sys.tree.path().join("net.inet.tcp.recvbuf_max.eperm"), "");
    let out = sys.run(&["apply", fs]);
    assert_code(&out, 3);
    assert!(text(&out.stderr).contains("Operation not permitted"));
    assert_eq!(contents(sys.tree.path()), before);
    std::fs::remove_file(sys.tree.path().join("net.inet.tcp.recvbuf_max.eperm")).expect("rm");

    // A rolled-back snapshot is not something to revert.
    let out = sys.run(&["revert"]);
    assert_code(&out, 0);
    assert!(text(&out.stderr).contains("nothing to revert"));

    let out = sys.run(&["apply", fs]);
    assert_code(&out, 0);
    assert_eq!(sys.value("net.inet.tcp.recvbuf_max"), "20643840");
    let out = sys.run(&["revert"]);
    assert_code(&out, 0);
    assert_eq!(contents(sys.tree.path()), before);
}

#[test]
fn freebsd_persist_uses_sysctl_conf_and_loader_conf() {
    let sys = Fake::bsd();
    // htcp is loaded on this fake system.
    write(
        &sys.tree.path().join("net.inet.tcp.cc.available"),
        "newreno, cubic, htcp\n",
    );
    let root = tempfile::tempdir().expect("tempdir");
    std::fs::create_dir_all(root.path().join("etc")).expect("mkdir");
    write(&root.path().join("etc/sysctl.conf"), "kern.ipc.somaxconn=1024\n");
    write(
        &root.path().join("etc/sysctl.conf.local"),
        "net.inet.tcp.sendbuf_max=4194304\n",
    );
    let out = sys.run(&[
        "apply",
        "--clean-path",
        "--rtt",
        "150ms",
        "--bandwidth",
        "500mbit",
        "--persist",
        "--persist-root",
        root.path().to_str().expect("utf8"),
    ]);
    assert_code(&out, 0);
    let err = text(&out.stderr);
    assert!(
        err.contains("sysctl.conf.local:1 sets net.inet.tcp.sendbuf_max"),
        "{err}"
    );
    assert_eq!(sys.value("net.inet.tcp.cc.algorithm"), "htcp");
    let conf = std::fs::read_to_string(root.path().join("etc/sysctl.conf")).expect("read");
    assert!(conf.starts_with("kern.ipc.somaxconn=1024\n# BEGIN tcptune "), "{conf}");
    assert!(conf.contains("\nnet.inet.tcp.recvbuf_max=20643840\n"), "{conf}");
    let loader = std::fs::read_to_string(root.path().join("boot/loader.conf")).expect("read");
    assert!(loader.contains("\ncc_htcp_load=\"YES\"\n"), "{loader}");
    assert_code(
        &sys.run(&["revert", "--persist-root", root.path().to_str().expect("utf8")]),
        0,
    );
    assert_eq!(
        std::fs::read_to_string(root.path().join("etc/sysctl.conf")).expect("read"),
        "kern.ipc.somaxconn=1024\n"
    );
    assert!(!root.path().join("boot/loader.conf").exists());
    assert_eq!(sys.value("net.inet.tcp.cc.algorithm"), "newreno");
}

#[test]
fn a_clamped_value_is_reported_and_recorded() {
    let sys = Fake::bsd();
    write(&sys.tree.path().join("kern.ipc.maxsockbuf.max"), "16777216\n");
    let f = sys.file("t.conf", "kern.ipc.maxsockbuf=23224320\n");
    let out = sys.run(&["apply", f.to_str().expect("utf8")]);
    assert_code(&out, 0);
    let err = text(&out.stderr);
    assert!(
        err.contains("kern.ipc.maxsockbuf: the kernel stored 16777216 when asked for 23224320 (clamped or rounded)"),
        "{err}"
    );
    assert_eq!(sys.snapshots()[0]["changes"][0]["applied"], "16777216");
    // The clamped value is tcptune's own: revert restores it without --force.
    assert_code(&sys.run(&["revert"]), 0);
    assert_eq!(sys.value("kern.ipc.maxsockbuf"), "2097152");
}

#[test]
fn apply_killed_between_two_writes_is_fully_reverted() {
    let sys = Fake::bsd();
    let before = contents(sys.tree.path());
    let f = sys.file(
        "t.conf",
        "kern.ipc.maxsockbuf=23224320\nnet.inet.tcp.recvbuf_max=20643840\nnet.inet.tcp.sendbuf_max=20643840\n",
    );
    let mut cmd = sys.std(&["apply", f.to_str().expect("utf8")]);
    cmd.env("FAKE_SYSCTL_SLOW", "net.inet.tcp.recvbuf_max")
        .env("FAKE_SYSCTL_SLEEP", "30")
        .process_group(0)
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    let mut child = cmd.spawn().expect("spawn");
    let started = sys.tree.path().join(".slow-started");
    wait_for("the slow write", Duration::from_secs(20), || started.exists());
    // SIGKILL to tcptune and the sysctl(8) it is running: no handler, no cleanup.
    let pgid = i32::try_from(child.id()).expect("pid");
    // SAFETY: kill(2) on the process group this test created.
    assert_eq!(unsafe { libc::kill(-pgid, libc::SIGKILL) }, 0);
    let status = child.wait().expect("wait");
    assert_eq!(
        std::os::unix::process::ExitStatusExt::signal(&status),
        Some(libc::SIGKILL)
    );

    // Half-changed: the first key is written, the second is not.
    assert_eq!(sys.value("kern.ipc.maxsockbuf"), "23224320");
    assert_eq!(sys.value("net.inet.tcp.recvbuf_max"), "2097152");
    let snaps = sys.snapshots();
    assert_eq!(snaps.len(), 1);
    assert_eq!(snaps[0]["state"], "applying");

    // A new apply refuses to stack on a half-applied one.
    let g = sys.file("g.conf", "net.inet.tcp.sendbuf_inc=16384\n");
    let out = sys.run(&["apply", g.to_str().expect("utf8")]);
    assert_code(&out, 3);
    assert!(
        text(&out.stderr).contains("interrupted half-way"),
        "{}",
        text(&out.stderr)
    );

    let out = sys.run(&["revert"]);
    assert_code(&out, 0);
    let err = text(&out.stderr);
    assert!(err.contains("half-applied"), "{err}");
    assert!(err.contains("1 key(s) restored, 2 already at the prior value"), "{err}");
    assert_eq!(contents(sys.tree.path()), before);
    assert_eq!(sys.snapshots()[0]["state"], "reverted");
    let out = sys.run(&["revert"]);
    assert!(text(&out.stderr).contains("nothing to revert"));
}

#[test]
fn concurrent_applies_one_waits_one_refuses() {
    let sys = Fake::bsd();
    let before = contents(sys.tree.path());
    let a = sys.file(
        "a.conf",
        "kern.ipc.maxsockbuf=23224320\nnet.inet.tcp.recvbuf_max=20643840\n",
    );
    let b = sys.file("b.conf", "net.inet.tcp.sendbuf_max=20643840\n");
    let mut first = sys.std(&["apply", a.to_str().expect("utf8")]);
    first
        .env("FAKE_SYSCTL_SLOW", "net.inet.tcp.recvbuf_max")
        .env("FAKE_SYSCTL_SLEEP", "3")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let first = first.spawn().expect("spawn");
    let started = sys.tree.path().join(".slow-started");
    wait_for("the slow write", Duration::from_secs(20), || started.exists());

    // --wait 0: refuses at once, naming the holder.
    let out = sys.run(&["apply", "--wait", "0", b.to_str().expect("utf8")]);
    assert_code(&out, 3);
    let err = text(&out.stderr);
    assert!(
        err.contains(&format!("another tcptune (pid {}) is changing the kernel", first.id())),
        "{err}"
    );
    assert_eq!(sys.value("net.inet.tcp.sendbuf_max"), "2097152");

    // The default waits (bounded) and then applies.
    let second = sys
        .std(&["apply", "--wait", "60", b.to_str().expect("utf8")])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    let first = first.wait_with_output().expect("wait");
    let second = second.wait_with_output().expect("wait");
    assert_code(&first, 0);
    assert_code(&second, 0);
    assert!(
        text(&second.stderr).contains("waiting up to 60 s for another tcptune"),
        "{}",
        text(&second.stderr)
    );

    // The store holds two valid snapshots, in order, and nothing else.
    let snaps = sys.snapshots();
    let ids: Vec<&str> = snaps.iter().map(|s| s["id"].as_str().expect("id")).collect();
    assert_eq!(ids, vec![text(&first.stdout).trim(), text(&second.stdout).trim()]);
    assert_eq!(snaps[0]["seq"], 1);
    assert_eq!(snaps[1]["seq"], 2);
    let files: Vec<String> = std::fs::read_dir(sys.state().join("snapshots"))
        .expect("dir")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(files.len(), 2, "{files:?}");

    assert_code(&sys.run(&["revert"]), 0);
    assert_code(&sys.run(&["revert"]), 0);
    assert_eq!(contents(sys.tree.path()), before);
}

// ---------------------------------------------------------------- real kernel, in network namespaces

/// The raw bytes of a /proc/sys file inside the namespace.
fn raw(ns: &Netns, key: &str) -> Vec<u8> {
    let out = ns.exec("cat", &[&format!("/proc/sys/{}", key.replace('.', "/"))]);
    assert!(out.status.success());
    out.stdout
}

fn host_raw(key: &str) -> Vec<u8> {
    std::fs::read(format!("/proc/sys/{}", key.replace('.', "/"))).expect("read")
}

fn tcptune_in(ns: &Netns, state: &Path, args: &[&str]) -> Output {
    let bin = cargo_bin("tcptune");
    let mut a = vec!["--state-dir", state.to_str().expect("utf8")];
    a.extend_from_slice(args);
    ns.exec(bin.to_str().expect("utf8"), &a)
}

const KEYS: [&str; 3] = [
    "net.ipv4.tcp_rmem",
    "net.ipv4.tcp_wmem",
    "net.ipv4.tcp_congestion_control",
];

/// A congestion control this namespace may switch to: offered, allowed in a child
/// namespace (cubic is not: tcp_allowed_congestion_control is read-only there), not current.
fn other_cc(ns: &Netns) -> String {
    let avail = ns.sysctl("net.ipv4.tcp_available_congestion_control");
    let allowed = ns.sysctl("net.ipv4.tcp_allowed_congestion_control");
    let cur = ns.sysctl("net.ipv4.tcp_congestion_control");
    allowed
        .split(' ')
        .find(|c| *c != cur && avail.split(' ').any(|a| a == *c))
        .unwrap_or_else(|| panic!("no other allowed cc: available {avail}, allowed {allowed}, current {cur}"))
        .to_string()
}

#[test]
#[cfg_attr(not(feature = "privileged-tests"), ignore = "privileged: needs root")]
fn netns_apply_then_revert_is_byte_identical() {
    let ns = Netns::new("applyrev");
    let tmp = tempfile::tempdir().expect("tempdir");
    let state = tmp.path().join("state");
    let host: Vec<Vec<u8>> = KEYS.iter().map(|k| host_raw(k)).collect();
    let before: Vec<Vec<u8>> = KEYS.iter().map(|k| raw(&ns, k)).collect();
    let cc = other_cc(&ns);
    let file = tmp.path().join("t.conf");
    write(
        &file,
        &format!(
            "net.ipv4.tcp_rmem = 4096 131072 20643840\nnet.ipv4.tcp_wmem = 4096 16384 20643840\nnet.ipv4.tcp_congestion_control = {cc}\n"
        ),
    );
    let out = tcptune_in(&ns, &state, &["apply", file.to_str().expect("utf8")]);
    assert_code(&out, 0);
    let id = text(&out.stdout).trim().to_string();
    assert!(is_snapshot_id(&id), "{id}");
    assert_eq!(ns.sysctl("net.ipv4.tcp_rmem"), "4096 131072 20643840");
    assert_eq!(ns.sysctl("net.ipv4.tcp_wmem"), "4096 16384 20643840");
    assert_eq!(ns.sysctl("net.ipv4.tcp_congestion_control"), cc);

    // The snapshot belongs to that namespace: from the host's it is not "here", and
    // naming it is refused. (--dry-run: these runs could never write the host's values.)
    let host_run = |args: &[&str]| {
        tcptune()
            .arg("--state-dir")
            .arg(&state)
            .args(args)
            .output()
            .expect("run")
    };
    let out = host_run(&["revert", "--dry-run"]);
    assert_code(&out, 0);
    assert!(
        text(&out.stderr).contains("another network namespace"),
        "{}",
        text(&out.stderr)
    );
    let out = host_run(&["revert", "--dry-run", &id]);
    assert_code(&out, 2);
    assert!(text(&out.stderr).contains("network namespace"), "{}", text(&out.stderr));

    let out = tcptune_in(&ns, &state, &["revert"]);
    assert_code(&out, 0);
    let after: Vec<Vec<u8>> = KEYS.iter().map(|k| raw(&ns, k)).collect();
    assert_eq!(after, before, "byte-identical /proc/sys contents");
    let out = tcptune_in(&ns, &state, &["revert"]);
    assert_code(&out, 0);
    assert!(text(&out.stderr).contains("nothing to revert"));
    assert_eq!(KEYS.iter().map(|k| raw(&ns, k)).collect::<Vec<_>>(), before);
    let host_after: Vec<Vec<u8>> = KEYS.iter().map(|k| host_raw(k)).collect();
    assert_eq!(host_after, host, "the host namespace is untouched");
}

#[test]
#[cfg_attr(not(feature = "privileged-tests"), ignore = "privileged: needs root")]
fn netns_read_only_key_exits_3_and_changes_nothing() {
    let ns = Netns::new("applyro");
    let tmp = tempfile::tempdir().expect("tempdir");
    let state = tmp.path().join("state");
    let rmem = raw(&ns, "net.ipv4.tcp_rmem");
    let host_rmem_max = host_raw("net.core.rmem_max");
    let file = tmp.path().join("t.conf");
    write(
        &file,
        "net.ipv4.tcp_rmem = 4096 131072 20643840\nnet.core.rmem_max = 20643840\n",
    );
    let out = tcptune_in(&ns, &state, &["apply", file.to_str().expect("utf8")]);
    assert_code(&out, 3);
    let err = text(&out.stderr);
    assert!(
        err.contains("net.core.rmem_max is read-only in this network namespace; set it on the host"),
        "{err}"
    );
    assert_eq!(raw(&ns, "net.ipv4.tcp_rmem"), rmem);
    assert!(!state.exists(), "refused before the snapshot");
    assert_eq!(host_raw("net.core.rmem_max"), host_rmem_max);
    // With '-' the read-only key is a note and the rest applies.
    write(
        &file,
        "net.ipv4.tcp_rmem = 4096 131072 20643840\n-net.core.rmem_max = 20643840\n",
    );
    let out = tcptune_in(&ns, &state, &["apply", file.to_str().expect("utf8")]);
    assert_code(&out, 0);
    assert!(text(&out.stderr).contains("skipped: net.core.rmem_max"));
    assert_code(&tcptune_in(&ns, &state, &["revert"]), 0);
    assert_eq!(raw(&ns, "net.ipv4.tcp_rmem"), rmem);
}

/// A namespace and a file that raises tcp_rmem and tcp_wmem, then sets a congestion control
/// the kernel offers but a child namespace may not choose (not in the host's
/// tcp_allowed_congestion_control). None when every offered one is allowed.
struct RefusedCc {
    ns: Netns,
    _tmp: tempfile::TempDir,
    state: std::path::PathBuf,
    file: std::path::PathBuf,
    before: Vec<Vec<u8>>,
    cc: String,
}

impl RefusedCc {
    fn new(tag: &str) -> Option<Self> {
        let ns = Netns::new(tag);
        let avail = ns.sysctl("net.ipv4.tcp_available_congestion_control");
        let allowed = ns.sysctl("net.ipv4.tcp_allowed_congestion_control");
        let Some(cc) = avail.split(' ').find(|c| !allowed.split(' ').any(|a| a == *c)) else {
            eprintln!("every available cc is allowed here ({avail}): cannot provoke a refusal");
            return None;
        };
        let cc = cc.to_string();
        let tmp = tempfile::tempdir().expect("tempdir");
        let (state, file) = (tmp.path().join("state"), tmp.path().join("t.conf"));
        let before = KEYS.iter().map(|k| raw(&ns, k)).collect();
        let case = Self {
            ns,
            _tmp: tmp,
            state,
            file,
            before,
            cc,
        };
        case.write_file("");
        Some(case)
    }

    /// The file, its congestion-control line prefixed with `dash` ("" or "-").
    fn write_file(&self, dash: &str) {
        write(
            &self.file,
            &format!(
                "net.ipv4.tcp_rmem = 4096 131072 20643840\nnet.ipv4.tcp_wmem = 4096 16384 20643840\n{dash}net.ipv4.tcp_congestion_control = {}\n",
                self.cc
            ),
        );
    }

    fn unchanged(&self) -> bool {
        KEYS.iter().map(|k| raw(&self.ns, k)).collect::<Vec<_>>() == self.before
    }
}

#[test]
#[cfg_attr(not(feature = "privileged-tests"), ignore = "privileged: needs root")]
fn netns_a_write_the_kernel_refuses_rolls_back_the_others() {
    let Some(c) = RefusedCc::new("applyrb") else { return };
    // Through --sysctl-dir tcptune does not judge the namespace it runs in, so only the
    // kernel refuses: EPERM at write time, after tcp_rmem and tcp_wmem were written.
    let file = c.file.to_str().expect("utf8");
    let out = tcptune_in(&c.ns, &c.state, &["--sysctl-dir", "/proc/sys", "apply", file]);
    assert_code(&out, 3);
    let err = text(&out.stderr);
    assert!(err.contains("net.ipv4.tcp_congestion_control"), "{err}");
    assert!(err.contains("tcp_allowed_congestion_control"), "{err}");
    assert!(
        err.contains("undid the 2 change(s) made before it: nothing was left changed"),
        "{err}"
    );
    assert!(c.unchanged());
    let out = tcptune_in(&c.ns, &c.state, &["snapshots", "--format", "json"]);
    let v: Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(v["snapshots"][0]["state"], "rolled-back");
}

#[test]
#[cfg_attr(not(feature = "privileged-tests"), ignore = "privileged: needs root")]
fn netns_a_congestion_control_the_namespace_may_not_choose_is_refused_before_any_write() {
    let Some(c) = RefusedCc::new("applycc") else { return };
    let file = c.file.to_str().expect("utf8");
    let out = tcptune_in(&c.ns, &c.state, &["apply", file]);
    assert_code(&out, 3);
    let err = text(&out.stderr);
    let want = format!(
        "net.ipv4.tcp_congestion_control = {}: a child network namespace may choose only",
        c.cc
    );
    assert!(err.contains(&want), "{err}");
    assert!(err.contains("nothing was written"), "{err}");
    assert!(c.unchanged());
    assert!(!c.state.exists(), "refused before the snapshot");
    // With '-' it is a note and the rest applies.
    c.write_file("-");
    let out = tcptune_in(&c.ns, &c.state, &["apply", file]);
    assert_code(&out, 0);
    let err = text(&out.stderr);
    assert!(err.contains("skipped: net.ipv4.tcp_congestion_control"), "{err}");
    assert_eq!(c.ns.sysctl("net.ipv4.tcp_rmem"), "4096 131072 20643840");
    assert_code(&tcptune_in(&c.ns, &c.state, &["revert"]), 0);
    assert!(c.unchanged());
}

#[test]
#[cfg_attr(not(feature = "privileged-tests"), ignore = "privileged: needs root")]
fn netns_unprivileged_apply_exits_3_and_read_only_commands_work() {
    let ns = Netns::new("applyuser");
    let tmp = tempfile::tempdir().expect("tempdir");
    // nobody must be able to read the file and list the snapshots.
    std::fs::set_permissions(tmp.path(), std::fs::Permissions::from_mode(0o755)).expect("chmod");
    let state = tmp.path().join("state");
    let rmem = raw(&ns, "net.ipv4.tcp_rmem");
    let file = tmp.path().join("t.conf");
    write(&file, "net.ipv4.tcp_rmem = 4096 131072 20643840\n");
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644)).expect("chmod");
    let bin = cargo_bin("tcptune");
    let nobody = |args: &[&str]| {
        let mut a = vec![
            "--reuid=65534",
            "--regid=65534",
            "--clear-groups",
            bin.to_str().expect("utf8"),
            "--state-dir",
            state.to_str().expect("utf8"),
        ];
        a.extend_from_slice(args);
        ns.exec("setpriv", &a)
    };
    let out = nobody(&["apply", file.to_str().expect("utf8")]);
    assert_code(&out, 3);
    assert!(text(&out.stderr).contains("needs root"), "{}", text(&out.stderr));
    assert_eq!(raw(&ns, "net.ipv4.tcp_rmem"), rmem);
    assert!(!state.exists());

    let out = nobody(&["apply", "--dry-run", file.to_str().expect("utf8")]);
    assert_code(&out, 0);
    assert!(
        text(&out.stdout).contains("net.ipv4.tcp_rmem: "),
        "{}",
        text(&out.stdout)
    );
    assert!(!state.exists());

    // Root applies; nobody lists, and may not revert.
    assert_code(&tcptune_in(&ns, &state, &["apply", file.to_str().expect("utf8")]), 0);
    let out = nobody(&["snapshots", "--format", "json"]);
    assert_code(&out, 0);
    let v: Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(v["snapshots"].as_array().expect("array").len(), 1);
    let out = nobody(&["revert"]);
    assert_code(&out, 3);
    assert_code(&tcptune_in(&ns, &state, &["revert"]), 0);
    assert_eq!(raw(&ns, "net.ipv4.tcp_rmem"), rmem);
}

#[test]
#[cfg_attr(not(feature = "privileged-tests"), ignore = "privileged: needs root")]
fn netns_apply_for_reverts_itself_from_a_detached_process() {
    let ns = Netns::new("applyfor");
    let tmp = tempfile::tempdir().expect("tempdir");
    let state = tmp.path().join("state");
    let rmem = raw(&ns, "net.ipv4.tcp_rmem");
    let file = tmp.path().join("t.conf");
    write(&file, "net.ipv4.tcp_rmem = 4096 131072 20643840\n");
    let start = Instant::now();
    let out = tcptune_in(&ns, &state, &["apply", "--for", "3s", file.to_str().expect("utf8")]);
    assert_code(&out, 0);
    // apply returned at once: the timer does not hold its stdout open.
    assert!(start.elapsed() < Duration::from_secs(3));
    assert!(text(&out.stderr).contains("reverts itself at"), "{}", text(&out.stderr));
    assert_eq!(ns.sysctl("net.ipv4.tcp_rmem"), "4096 131072 20643840");
    let v: Value =
        serde_json::from_slice(&tcptune_in(&ns, &state, &["snapshots", "--format", "json"]).stdout).expect("json");
    let s = &v["snapshots"][0];
    assert_eq!(s["timer_running"], true);
    let pid = s["timer_pid"].as_u64().expect("pid");
    // Its own session (setsid), so a closing terminal cannot hang it up; SIGHUP ignored too.
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).expect("stat");
    let fields: Vec<&str> = stat[stat.rfind(')').expect(")") + 2..].split(' ').collect();
    assert_eq!(fields[3], pid.to_string(), "session id = its pid: {stat}");
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("status");
    let sigign = status
        .lines()
        .find_map(|l| l.strip_prefix("SigIgn:"))
        .map(|h| u64::from_str_radix(h.trim(), 16).expect("hex"))
        .expect("SigIgn");
    assert_eq!(sigign & 1, 1, "SIGHUP (1) ignored: {sigign:x}");

    wait_for("the timer's revert", Duration::from_secs(20), || {
        raw(&ns, "net.ipv4.tcp_rmem") == rmem
    });
    wait_for("the snapshot to be marked", Duration::from_secs(5), || {
        let v: Value =
            serde_json::from_slice(&tcptune_in(&ns, &state, &["snapshots", "--format", "json"]).stdout).expect("json");
        v["snapshots"][0]["state"] == "reverted"
    });
    assert!(start.elapsed() >= Duration::from_secs(3));
    // The timer marks the snapshot first and logs after: on a loaded host the line comes later.
    let log = state.join(format!("timer-{}.log", s["id"].as_str().expect("id")));
    wait_for("the timer's log line", Duration::from_secs(5), || {
        std::fs::read_to_string(&log).is_ok_and(|l| l.contains("reverted snapshot"))
    });
}

#[test]
fn a_dead_timer_shows_in_snapshots_and_revert_still_works() {
    let sys = Fake::linux(&[]);
    let f = sys.file("t.conf", "net.ipv4.tcp_rmem = 4096 131072 20643840\n");
    let out = sys.run_file(&["apply", "--for", "10m"], &f);
    assert_code(&out, 0);
    let s = &sys.snapshots()[0];
    assert_eq!(s["timer_running"], true);
    let pid = i32::try_from(s["timer_pid"].as_u64().expect("pid")).expect("pid");
    // SAFETY: kill(2) on the timer this test's apply started.
    assert_eq!(unsafe { libc::kill(pid, libc::SIGKILL) }, 0);
    wait_for("the timer to die", Duration::from_secs(10), || {
        sys.snapshots()[0]["timer_running"] == false
    });
    let table = text(&sys.run(&["snapshots"]).stdout);
    assert!(
        table.contains("timer gone: revert") && table.contains("by hand"),
        "{table}"
    );
    assert_code(&sys.run(&["revert"]), 0);
    assert_eq!(sys.value("net.ipv4.tcp_rmem"), "4096 131072 6291456");
    // --for and --persist do not mix: a timed experiment is not for boot.
    assert_code(&sys.run_file(&["apply", "--for", "1m", "--persist"], &f), 2);
    assert_code(&sys.run_file(&["apply", "--for", "10"], &f), 2);
}

/// The documented pipeline run twice: the second advice finds every value in place and prints
/// each line commented out; applying it says so in one line and exits 0.
#[test]
fn applying_advice_that_changes_nothing_exits_0() {
    let sys = Fake::linux(&[]);
    let advise = || {
        let out = sys.run(&[
            "advise",
            "--rtt",
            "150ms",
            "--bandwidth",
            "500mbit",
            "--format",
            "sysctl",
        ]);
        assert_code(&out, 0);
        sys.file("advice.conf", &text(&out.stdout))
    };
    assert_code(&sys.run_file(&["apply"], &advise()), 0);
    let snapshots = sys.snapshots().len();
    let again = advise();
    let body = std::fs::read_to_string(&again).expect("advice");
    assert!(
        body.lines().all(|l| l.is_empty() || l.starts_with('#')),
        "the second advice sets nothing: {body}"
    );
    let out = sys.run_file(&["apply"], &again);
    assert_code(&out, 0);
    let err = text(&out.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.starts_with("nothing to change: "), "{err}");
    assert_eq!(sys.snapshots().len(), snapshots, "no snapshot for nothing");
}
