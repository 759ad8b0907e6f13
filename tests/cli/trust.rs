//! Trust: what a normal user can do, and what root must refuse however it is asked — the
//! attack as input, the refusal and an unchanged file or tree as the assertion. Tests that
//! play another user or create namespaces need root (CI runs them as root) and say so.

use std::os::unix::fs::PermissionsExt as _;
use std::os::unix::process::CommandExt as _;
use std::path::{Path, PathBuf};
use std::process::{Command as Std, Output};

use assert_cmd::cargo::cargo_bin;
use serde_json::Value;
use tempfile::TempDir;

use super::netns::Netns;
use super::{linux_tree, tcptune, tree_contents};

/// The uid and gid of the unprivileged user the tests play (nobody on Debian).
const NOBODY: u32 = 65534;

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn code(out: &Output) -> i32 {
    out.status.code().unwrap_or(-1)
}

fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() == 0 }
}

fn need_root(what: &str) {
    assert!(
        is_root(),
        "{what} needs root to play another user (CI runs the tests as root)"
    );
}

/// A copy of the binary that any user can run (the build tree may sit under a 0700 home).
struct Binary {
    _dir: TempDir,
    path: PathBuf,
}

impl Binary {
    fn new() -> Self {
        let (dir, path) = super::runnable_copy();
        Self { _dir: dir, path }
    }

    /// Run it as nobody, in `/` (a cwd nobody can read).
    fn as_nobody(&self, args: &[&str]) -> Output {
        Std::new(&self.path)
            .args(args)
            .current_dir("/")
            .uid(NOBODY)
            .gid(NOBODY)
            .output()
            .expect("run as nobody")
    }
}

/// Make `dir` and everything under it readable and traversable by others.
fn open_up(dir: &Path) {
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    for e in std::fs::read_dir(dir).expect("read_dir") {
        let p = e.expect("entry").path();
        if p.is_dir() {
            open_up(&p);
        }
    }
}

/// (key, value, action kind) of each setting of an advise JSON.
fn settings(v: &Value) -> Vec<(String, String, String)> {
    v["settings"]
        .as_array()
        .expect("settings")
        .iter()
        .map(|s| {
            (
                s["key"].as_str().expect("key").to_string(),
                s["value"].as_str().expect("value").to_string(),
                s["action"]["kind"].as_str().expect("kind").to_string(),
            )
        })
        .collect()
}

// ---------------------------------------------------------------- the main workflow, unprivileged

#[test]
#[cfg_attr(not(feature = "privileged-tests"), ignore = "privileged: needs root")]
fn a_normal_user_reads_the_advice_root_would_apply() {
    need_root("this test");
    let ns = Netns::new("nobody-advise");
    // A new namespace starts from the host's values: give it the kernel's stock receive
    // buffer, so the advice has something to raise whatever the host runs.
    let set = ns.exec("sysctl", &["-w", "net.ipv4.tcp_rmem=4096 131072 6291456"]);
    assert!(set.status.success(), "{}", text(&set.stderr));
    let bin = Binary::new();
    let args = ["advise", "--rtt", "150ms", "--bandwidth", "500mbit", "--format", "json"];
    let run = |user: Option<u32>| {
        let mut c = Std::new("ip");
        c.args(["netns", "exec", &ns.name]);
        if let Some(uid) = user {
            c.args([
                "setpriv",
                &format!("--reuid={uid}"),
                &format!("--regid={uid}"),
                "--clear-groups",
            ]);
        }
        let out = c.arg(&bin.path).args(args).current_dir("/").output().expect("run");
        assert_eq!(code(&out), 0, "{}", text(&out.stderr));
        serde_json::from_slice::<Value>(&out.stdout).expect("json")
    };
    let (root, nobody) = (run(None), run(Some(NOBODY)));
    // The same advice, key for key and action for action: "not root" is not "read-only here".
    assert_eq!(settings(&nobody), settings(&root));
    let s = settings(&nobody);
    assert!(
        s.iter().any(|(k, _, a)| k == "net.ipv4.tcp_rmem" && a == "set"),
        "a fresh namespace needs a bigger receive buffer: {s:?}"
    );
    // In a child namespace net.core.rmem_max is read-only for root too: that is the kernel's fact.
    assert!(
        s.iter().any(|(k, _, a)| k == "net.core.rmem_max" && a == "unavailable"),
        "{s:?}"
    );
    // And the sysctl file a user pipes to `sudo tee` is not empty.
    let out = Std::new("ip")
        .args([
            "netns",
            "exec",
            &ns.name,
            "setpriv",
            "--reuid=65534",
            "--regid=65534",
            "--clear-groups",
        ])
        .arg(&bin.path)
        .args([
            "advise",
            "--rtt",
            "150ms",
            "--bandwidth",
            "500mbit",
            "--format",
            "sysctl",
        ])
        .current_dir("/")
        .output()
        .expect("run");
    let live = text(&out.stdout);
    assert!(live.lines().any(|l| l.starts_with("net.ipv4.tcp_rmem = ")), "{live}");
    assert!(!live.contains("no change needed"), "{live}");
}

#[test]
#[cfg_attr(not(feature = "privileged-tests"), ignore = "privileged: needs root")]
fn a_normal_user_apply_exits_3_and_writes_nothing() {
    need_root("this test");
    let tree = linux_tree(&[]);
    open_up(tree.path());
    let tmp = tempfile::tempdir().expect("tempdir");
    std::fs::set_permissions(tmp.path(), std::fs::Permissions::from_mode(0o755)).expect("chmod");
    let state = tmp.path().join("state");
    let bin = Binary::new();
    let before = tree_contents(tree.path());
    let common = [
        "--sysctl-dir",
        tree.path().to_str().expect("utf8"),
        "--state-dir",
        state.to_str().expect("utf8"),
    ];
    let with = |extra: &[&str]| -> Vec<String> { common.iter().chain(extra).map(|s| (*s).to_string()).collect() };
    let fresh = ["apply", "--rtt", "150ms", "--bandwidth", "500mbit"];
    let out = bin.as_nobody(&with(&fresh).iter().map(String::as_str).collect::<Vec<_>>());
    assert_eq!(code(&out), 3, "{}", text(&out.stderr));
    let err = text(&out.stderr);
    assert!(
        err.contains("needs root") && err.contains("nothing was written"),
        "{err}"
    );
    assert_eq!(err.lines().count(), 2, "one line and a hint: {err}");
    assert_eq!(tree_contents(tree.path()), before, "nothing written");
    assert!(!state.exists(), "no state directory, no snapshot");

    // A `-` line is "absent or read-only here" becomes a note, never "needs root".
    let file = tmp.path().join("t.conf");
    std::fs::write(&file, "-net.ipv4.tcp_rmem = 4096 131072 20643840\n").expect("write");
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644)).expect("chmod");
    let out = bin.as_nobody(
        &with(&["apply", file.to_str().expect("utf8")])
            .iter()
            .map(String::as_str)
            .collect::<Vec<_>>(),
    );
    assert_eq!(code(&out), 3, "{}", text(&out.stderr));
    assert_eq!(tree_contents(tree.path()), before);

    // --dry-run shows the changes without root, and says they need it.
    let mut dry = fresh.to_vec();
    dry.push("--dry-run");
    let out = bin.as_nobody(&with(&dry).iter().map(String::as_str).collect::<Vec<_>>());
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    let shown = text(&out.stdout);
    assert!(
        shown.contains("net.ipv4.tcp_rmem") && shown.contains("needs root"),
        "{shown}"
    );
    assert_eq!(tree_contents(tree.path()), before);
}

// ---------------------------------------------------------------- the undo line and unknown ids

#[test]
fn the_undo_line_carries_the_state_dir_and_works_as_printed() {
    let tree = linux_tree(&[]);
    let tmp = tempfile::tempdir().expect("tempdir");
    let state = tmp.path().join("my state");
    let file = tmp.path().join("t.conf");
    std::fs::write(&file, "net.ipv4.tcp_rmem = 4096 131072 20643840\n").expect("write");
    let out = tcptune()
        .arg("--sysctl-dir")
        .arg(tree.path())
        .arg("--state-dir")
        .arg(&state)
        .arg("apply")
        .arg(&file)
        .output()
        .expect("run");
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    let id = text(&out.stdout).trim().to_string();
    let err = text(&out.stderr);
    let line = err.lines().find(|l| l.contains("undo: ")).expect("an undo line");
    let cmd = line.split("undo: ").nth(1).expect("command").trim_end_matches(')');
    assert_eq!(
        cmd,
        format!(
            "tcptune revert {id} --sysctl-dir {} --state-dir '{}'",
            tree.path().display(),
            state.display()
        )
    );
    // Run it as printed, through a shell: the quoting must hold.
    let shell = format!(
        "{} {}",
        cargo_bin("tcptune").display(),
        cmd.trim_start_matches("tcptune ")
    );
    let out = Std::new("sh").args(["-c", &shell]).output().expect("sh");
    assert_eq!(code(&out), 0, "{shell}: {}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains(&format!("reverted snapshot {id}")),
        "{}",
        text(&out.stderr)
    );
    let v = std::fs::read_to_string(tree.path().join("net/ipv4/tcp_rmem")).expect("read");
    assert_eq!(v.split_whitespace().collect::<Vec<_>>(), ["4096", "131072", "6291456"]);
}

#[test]
fn an_unknown_snapshot_id_exits_2_with_or_without_a_store() {
    let tree = linux_tree(&[]);
    let tmp = tempfile::tempdir().expect("tempdir");
    let state = tmp.path().join("state");
    let revert = |id: &str| {
        tcptune()
            .arg("--sysctl-dir")
            .arg(tree.path())
            .arg("--state-dir")
            .arg(&state)
            .args(["revert", id])
            .output()
            .expect("run")
    };
    let out = revert("0042");
    assert_eq!(code(&out), 2, "empty store: {}", text(&out.stderr));
    assert!(text(&out.stderr).contains("no snapshot 0042"), "{}", text(&out.stderr));
    // Now with a store that holds one snapshot.
    let file = tmp.path().join("t.conf");
    std::fs::write(&file, "net.ipv4.tcp_slow_start_after_idle = 0\n").expect("write");
    let out = tcptune()
        .arg("--sysctl-dir")
        .arg(tree.path())
        .arg("--state-dir")
        .arg(&state)
        .arg("apply")
        .arg(&file)
        .output()
        .expect("run");
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    let out = revert("0042");
    assert_eq!(code(&out), 2, "{}", text(&out.stderr));
}

/// `revert 1` is snapshot 1, never snapshot 10000 by prefix: with only 10000 in the store it
/// is an unknown snapshot (exit 2, nothing restored); `revert 10000` is that snapshot.
#[test]
fn revert_1_does_not_pick_snapshot_10000_by_prefix() {
    let tree = linux_tree(&[]);
    let tmp = tempfile::tempdir().expect("tempdir");
    let state = tmp.path().join("state");
    let run = |args: &[&str]| {
        tcptune()
            .arg("--sysctl-dir")
            .arg(tree.path())
            .arg("--state-dir")
            .arg(&state)
            .args(args)
            .output()
            .expect("run")
    };
    let file = tmp.path().join("t.conf");
    std::fs::write(&file, "net.ipv4.tcp_slow_start_after_idle = 0\n").expect("write");
    let out = run(&["apply", file.to_str().expect("utf8")]);
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    // Renumber it 10000, as the 10000th apply would have numbered it.
    let id = text(&out.stdout).trim().to_string();
    let dir = state.join("snapshots");
    let mut snap: Value =
        serde_json::from_slice(&std::fs::read(dir.join(format!("{id}.json"))).expect("read")).expect("json");
    let big = id.replacen("0001-", "10000-", 1);
    snap["id"] = big.clone().into();
    snap["seq"] = 10_000.into();
    std::fs::remove_file(dir.join(format!("{id}.json"))).expect("rm");
    std::fs::write(
        dir.join(format!("{big}.json")),
        serde_json::to_vec_pretty(&snap).expect("json"),
    )
    .expect("write");
    let before = tree_contents(tree.path());
    for q in ["1", "10", "1000", "0001"] {
        let out = run(&["revert", q]);
        assert_eq!(code(&out), 2, "revert {q}: {}", text(&out.stderr));
        assert!(
            text(&out.stderr).starts_with(&format!("tcptune: no snapshot {q} in ")),
            "{}",
            text(&out.stderr)
        );
        assert_eq!(tree_contents(tree.path()), before, "revert {q} restored nothing");
    }
    let out = run(&["revert", "10000"]);
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains(&format!("reverted snapshot {big}")),
        "{}",
        text(&out.stderr)
    );
}

/// A snapshot id given with control characters is echoed escaped: one line, no ESC, whether
/// or not there is a store.
#[test]
fn a_snapshot_id_with_control_characters_is_echoed_escaped() {
    let tree = linux_tree(&[]);
    let tmp = tempfile::tempdir().expect("tempdir");
    let state = tmp.path().join("state");
    let revert = |id: &str| {
        tcptune()
            .arg("--sysctl-dir")
            .arg(tree.path())
            .arg("--state-dir")
            .arg(&state)
            .args(["revert", id])
            .output()
            .expect("run")
    };
    let forged = "\u{1b}[31m\nkernel.x=1\r";
    let check = |out: &Output| {
        let err = text(&out.stderr);
        assert_eq!(code(out), 2, "{err}");
        assert!(!err.contains('\u{1b}') && !err.contains('\r'), "{err:?}");
        assert!(!err.lines().any(|l| l.starts_with("kernel.x=")), "{err:?}");
        assert!(err.contains("no snapshot \\u{1b}[31m\\u{a}kernel.x=1\\u{d}"), "{err:?}");
    };
    check(&revert(forged));
    let file = tmp.path().join("t.conf");
    std::fs::write(&file, "net.ipv4.tcp_slow_start_after_idle = 0\n").expect("write");
    let out = tcptune()
        .arg("--sysctl-dir")
        .arg(tree.path())
        .arg("--state-dir")
        .arg(&state)
        .arg("apply")
        .arg(&file)
        .output()
        .expect("run");
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    check(&revert(forged));
}

// ---------------------------------------------------------------- planted snapshots

/// Apply with --persist into a fake root, then let `plant` rewrite the snapshot's JSON as an
/// attacker with write access to the store would; revert must refuse and change nothing.
fn planted_revert_is_refused(plant: impl FnOnce(&mut Value, &Path)) {
    let tree = linux_tree(&[]);
    let tmp = tempfile::tempdir().expect("tempdir");
    let root = tmp.path().join("root");
    std::fs::create_dir_all(root.join("etc/sysctl.d")).expect("mkdir");
    let state = tmp.path().join("state");
    let decoy = tmp.path().join("passwd");
    std::fs::write(&decoy, "root:x:0:0:root:/root:/bin/bash\n").expect("write");
    let file = tmp.path().join("t.conf");
    std::fs::write(&file, "net.ipv4.tcp_rmem = 4096 131072 20643840\n").expect("write");
    let run = |args: &[&str]| {
        tcptune()
            .arg("--sysctl-dir")
            .arg(tree.path())
            .arg("--state-dir")
            .arg(&state)
            .args(args)
            .arg("--persist-root")
            .arg(&root)
            .output()
            .expect("run")
    };
    let out = run(&["apply", "--persist", file.to_str().expect("utf8")]);
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    let id = text(&out.stdout).trim().to_string();
    let snap_path = state.join("snapshots").join(format!("{id}.json"));
    let mut snap: Value = serde_json::from_slice(&std::fs::read(&snap_path).expect("read")).expect("json");
    plant(&mut snap, &decoy);
    std::fs::write(&snap_path, serde_json::to_vec_pretty(&snap).expect("json")).expect("write");

    let before = (
        tree_contents(tree.path()),
        tree_contents(&root),
        std::fs::read(&decoy).expect("read"),
    );
    let out = run(&["revert", &id]);
    assert_eq!(code(&out), 2, "{}", text(&out.stderr));
    let err = text(&out.stderr);
    assert!(err.contains("refusing its --persist record"), "{err}");
    assert!(!err.contains("root:x:0:0"), "no file content in the message: {err}");
    let after = (
        tree_contents(tree.path()),
        tree_contents(&root),
        std::fs::read(&decoy).expect("read"),
    );
    assert_eq!(after, before, "nothing changed: keys, tcptune's file, the decoy");
}

#[test]
fn a_planted_persist_path_is_refused() {
    planted_revert_is_refused(|snap, decoy| {
        let rec = &mut snap["persist"][0];
        rec["path"] = Value::from(decoy.to_str().expect("utf8"));
        let now = std::fs::read_to_string(decoy).expect("read");
        rec["before"] = Value::from("evil::0:0::/:/bin/sh\n");
        rec["after"] = Value::from(now);
    });
}

#[test]
fn a_planted_persist_block_is_refused() {
    // The right file, but a block that carries a line outside the networking tree.
    planted_revert_is_refused(|snap, _| {
        let rec = &mut snap["persist"][0];
        let block = rec["block"].as_str().expect("block").to_string();
        let evil = block.replacen("\n# END", "\nkernel.core_pattern = |/tmp/x\n# END", 1);
        let after = rec["after"].as_str().expect("after").replace(&block, &evil);
        rec["block"] = Value::from(evil);
        rec["after"] = Value::from(after);
    });
}

#[test]
fn planted_persist_content_is_refused() {
    // The right file and block, but "before" is not "after" without the block: undoing it
    // would write the attacker's text into the file.
    planted_revert_is_refused(|snap, _| {
        let rec = &mut snap["persist"][0];
        rec["before"] = Value::from("kernel.modprobe = /tmp/evil\n");
    });
}

/// A prior value no kernel holds (planted in the snapshot: the state directory is root's, so
/// it takes root to tamper) is refused by revert as apply refuses to write one, and nothing
/// is written back.
#[test]
fn a_planted_prior_value_too_large_for_its_key_is_refused() {
    for (key, prior, says) in [
        (
            "net.core.rmem_max",
            "99999999999",
            "99999999999 overflows the kernel's type",
        ),
        (
            "net.ipv4.tcp_rmem",
            "4096 131072 4294967296",
            "4294967296 overflows the kernel's type",
        ),
        ("net.ipv4.tcp_rmem", "4096 131072", "expected 3 whole number(s)"),
    ] {
        let tree = linux_tree(&[]);
        let tmp = tempfile::tempdir().expect("tempdir");
        let state = tmp.path().join("state");
        let file = tmp.path().join("t.conf");
        let value = if key == "net.ipv4.tcp_rmem" {
            "4096 131072 33554432"
        } else {
            "33554432"
        };
        std::fs::write(&file, format!("{key} = {value}\n")).expect("write");
        let run = |args: &[&str]| {
            tcptune()
                .arg("--sysctl-dir")
                .arg(tree.path())
                .arg("--state-dir")
                .arg(&state)
                .args(args)
                .output()
                .expect("run")
        };
        let out = run(&["apply", file.to_str().expect("utf8")]);
        assert_eq!(code(&out), 0, "{}", text(&out.stderr));
        let id = text(&out.stdout).trim().to_string();
        let snap_path = state.join("snapshots").join(format!("{id}.json"));
        let mut snap: Value = serde_json::from_slice(&std::fs::read(&snap_path).expect("read")).expect("json");
        snap["changes"][0]["prior"] = Value::from(prior);
        std::fs::write(&snap_path, serde_json::to_vec_pretty(&snap).expect("json")).expect("write");
        let before = tree_contents(tree.path());
        let out = run(&["revert", &id]);
        let err = text(&out.stderr);
        assert_eq!(code(&out), 2, "{key} = {prior}: {err}");
        assert!(
            err.contains(&format!("snapshot {id} is damaged: {key}: {says}")),
            "{key} = {prior}: {err}"
        );
        assert_eq!(tree_contents(tree.path()), before, "nothing written back");
    }
}

// ---------------------------------------------------------------- --sysctl-dir is a sysctl tree, nothing else

#[test]
fn sysctl_dir_does_not_follow_symlinks() {
    let tree = linux_tree(&[]);
    let tmp = tempfile::tempdir().expect("tempdir");
    let secret = tmp.path().join("secret");
    std::fs::write(&secret, "SECRET-hunter2\n").expect("write");
    std::fs::set_permissions(&secret, std::fs::Permissions::from_mode(0o600)).expect("chmod");
    let key = tree.path().join("net/ipv4/tcp_rmem");
    std::fs::remove_file(&key).expect("rm");
    std::os::unix::fs::symlink(&secret, &key).expect("symlink");
    // A directory symlink too: net/core -> a directory holding a decoy rmem_max.
    let elsewhere = tmp.path().join("elsewhere");
    std::fs::create_dir(&elsewhere).expect("mkdir");
    std::fs::write(elsewhere.join("rmem_max"), "212992\n").expect("write");
    std::fs::remove_dir_all(tree.path().join("net/core")).expect("rm");
    std::os::unix::fs::symlink(&elsewhere, tree.path().join("net/core")).expect("symlink");
    let before = (tree_contents(tree.path()), tree_contents(tmp.path()));
    let run = |args: &[&str]| {
        tcptune()
            .arg("--sysctl-dir")
            .arg(tree.path())
            .arg("--state-dir")
            .arg(tmp.path().join("state"))
            .args(args)
            .output()
            .expect("run")
    };
    let out = run(&["advise", "--rtt", "150ms", "--bandwidth", "500mbit", "--format", "json"]);
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    let all = format!("{}{}", text(&out.stdout), text(&out.stderr));
    assert!(!all.contains("hunter2"), "a symlinked key is not read: {all}");
    let v: Value = serde_json::from_slice(&out.stdout).expect("json");
    let rmem = v["settings"]
        .as_array()
        .expect("settings")
        .iter()
        .find(|s| s["key"] == "net.ipv4.tcp_rmem");
    assert!(rmem.is_some_and(|s| s["current"].is_null()), "{v}");

    let file = tmp.path().join("t.conf");
    std::fs::write(
        &file,
        "net.ipv4.tcp_rmem = 4096 131072 20643840\nnet.core.rmem_max = 20643840\n",
    )
    .expect("write");
    let before_file = std::fs::read(&secret).expect("read");
    let out = run(&["apply", file.to_str().expect("utf8")]);
    assert_ne!(code(&out), 0);
    assert!(matches!(code(&out), 2 | 3), "{}", text(&out.stderr));
    assert!(!text(&out.stderr).contains("hunter2"), "{}", text(&out.stderr));
    assert_eq!(std::fs::read(&secret).expect("read"), before_file);
    std::fs::remove_file(&file).expect("rm");
    assert_eq!((tree_contents(tree.path()), tree_contents(tmp.path())), before);
}

// ---------------------------------------------------------------- apply --for with a relative --sysctl-dir

#[test]
fn apply_for_with_a_relative_sysctl_dir_reverts_on_time() {
    let tree = linux_tree(&[]);
    let tmp = tempfile::tempdir().expect("tempdir");
    let file = tmp.path().join("t.conf");
    std::fs::write(&file, "net.ipv4.tcp_slow_start_after_idle = 0\n").expect("write");
    let parent = tree.path().parent().expect("parent");
    let rel = tree.path().file_name().expect("name");
    let out = tcptune()
        .current_dir(parent)
        .arg("--sysctl-dir")
        .arg(rel)
        .arg("--state-dir")
        .arg(tmp.path().join("state"))
        .args(["apply", "--for", "2s"])
        .arg(&file)
        .output()
        .expect("run");
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    let key = tree.path().join("net/ipv4/tcp_slow_start_after_idle");
    assert_eq!(std::fs::read_to_string(&key).expect("read").trim(), "0");
    let start = std::time::Instant::now();
    while std::fs::read_to_string(&key).expect("read").trim() != "1" {
        assert!(
            start.elapsed() < std::time::Duration::from_secs(30),
            "the timer never reverted; its log: {:?}",
            std::fs::read_dir(tmp.path().join("state"))
                .expect("state")
                .filter_map(|e| e.ok())
                .filter(|e| e.file_name().to_string_lossy().starts_with("timer-"))
                .map(|e| std::fs::read_to_string(e.path()).unwrap_or_default())
                .collect::<Vec<_>>()
        );
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
}

// ---------------------------------------------------------------- --sysctl-cmd under sudo

#[test]
#[cfg_attr(not(feature = "privileged-tests"), ignore = "privileged: needs root")]
fn root_refuses_a_sysctl_cmd_someone_else_could_change() {
    need_root("this test");
    let tmp = tempfile::tempdir().expect("tempdir");
    let marker = tmp.path().join("ran");
    let script = format!("#!/bin/sh\ntouch {}\necho 1\n", marker.display());
    // Three ways another user steers the program: owns it, may write it, owns its directory.
    let theirs = tmp.path().join("theirs");
    std::fs::create_dir(&theirs).expect("mkdir");
    std::os::unix::fs::chown(&theirs, Some(NOBODY), Some(NOBODY)).expect("chown");
    type Spoil = Box<dyn Fn(&Path)>;
    let cases: Vec<(PathBuf, Spoil)> = vec![
        (
            tmp.path().join("owned"),
            Box::new(|p: &Path| std::os::unix::fs::chown(p, Some(NOBODY), Some(NOBODY)).expect("chown")),
        ),
        (
            tmp.path().join("writable"),
            Box::new(|p: &Path| std::fs::set_permissions(p, std::fs::Permissions::from_mode(0o777)).expect("chmod")),
        ),
        (theirs.join("in-their-dir"), Box::new(|_: &Path| {})),
    ];
    for (path, spoil) in cases {
        super::write_script(&path, &script);
        spoil(&path);
        let out = tcptune()
            .args(["--os", "freebsd", "--sysctl-cmd"])
            .arg(&path)
            .args(["apply", "--dry-run", "--rtt", "150ms", "--bandwidth", "500mbit"])
            .output()
            .expect("run");
        assert_eq!(code(&out), 3, "{}: {}", path.display(), text(&out.stderr));
        assert!(text(&out.stderr).contains("refusing"), "{}", text(&out.stderr));
        assert!(!marker.exists(), "{} was run", path.display());
    }
    // The same script, root's own in root's directory, runs.
    let ok = tmp.path().join("ok");
    super::write_script(&ok, &script);
    let out = tcptune()
        .args(["--os", "freebsd", "--sysctl-cmd"])
        .arg(&ok)
        .args(["advise", "--rtt", "150ms", "--bandwidth", "500mbit", "--format", "json"])
        .output()
        .expect("run");
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    assert!(marker.exists(), "root's own program runs");
}

// ---------------------------------------------------------------- a file given by path is not quoted

/// Text shaped like /etc/shadow: a file root can read and must never show.
const SHADOW: &str = "root:$y$j9T$S3cr3tSalt$S3cr3tHashS3cr3tHash0123456789abcdefg:20228:0:99999:7:::\n\
                      daemon:*:20228:0:99999:7:::\n\
                      alice:$6$Pepper$AliceHashAliceHash/abc=:20228:0:99999:7:::\n";

/// No run of three or more characters of `content` (other than digits and separators that
/// any message has) in `err`: no byte of a line comes back.
fn quotes_none_of(err: &str, content: &str) -> bool {
    content
        .split(|c: char| !c.is_ascii_alphanumeric() && c != '$')
        .filter(|w| w.len() >= 3 && !w.bytes().all(|b| b.is_ascii_digit()))
        .all(|w| !err.contains(w))
        && !err.contains("20228")
}

#[test]
fn errors_about_a_file_given_by_path_quote_none_of_it() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let shadow = tmp.path().join("shadow");
    std::fs::write(&shadow, SHADOW).expect("write");
    std::fs::set_permissions(&shadow, std::fs::Permissions::from_mode(0o600)).expect("chmod");
    let tree = linux_tree(&[]);
    let run = |args: &[&str]| {
        tcptune()
            .arg("--sysctl-dir")
            .arg(tree.path())
            .arg("--state-dir")
            .arg(tmp.path().join("state"))
            .args(args)
            .output()
            .expect("run")
    };
    let path = shadow.to_str().expect("utf8");
    // `sudo tcptune advise --profile /etc/shadow` printed `line 1 (root:*:20228:...)`.
    let out = run(&["advise", "--rtt", "150ms", "--bandwidth", "500mbit", "--profile", path]);
    assert_eq!(code(&out), 2, "{}", text(&out.stderr));
    let err = text(&out.stderr);
    assert!(
        err.starts_with(&format!("tcptune: profile {path}: not a profile: not TOML")),
        "{err}"
    );
    assert!(quotes_none_of(&err, SHADOW), "{err}");
    // The same file as advice to apply: the place and what was expected, no text.
    let out = run(&["apply", path]);
    assert_eq!(code(&out), 2, "{}", text(&out.stderr));
    let err = text(&out.stderr);
    assert!(err.contains("shadow:1: expected `key = value`"), "{err}");
    assert!(err.contains("shadow:3: the text before '='"), "{err}");
    assert!(quotes_none_of(&err, SHADOW), "{err}");
    // A TOML file of secrets: what is wrong, where, and nothing it holds.
    let secrets = tmp.path().join("secrets.toml");
    std::fs::write(&secrets, "name = \"x\"\nos = \"S3cr3tOs\"\ndescription = \"d\"\n").expect("write");
    let out = run(&[
        "advise",
        "--rtt",
        "150ms",
        "--bandwidth",
        "500mbit",
        "--profile",
        secrets.to_str().expect("utf8"),
    ]);
    assert_eq!(code(&out), 2, "{}", text(&out.stderr));
    let err = text(&out.stderr);
    assert!(
        err.contains("line 2, column 6: os: unknown variant, expected one of"),
        "{err}"
    );
    assert!(!err.contains("S3cr3t"), "{err}");
}

/// `sudo tcptune advise --profile /etc/shadow` said "line 1, column 26": the length of root's
/// line. A file that is not a profile is refused before the TOML parser gives a place in it:
/// not TOML in shape, not UTF-8, or larger than a profile.
#[test]
fn a_profile_file_that_is_no_profile_is_refused_with_no_place_in_it() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let advise = |file: &Path| {
        tcptune()
            .args([
                "advise",
                "--os",
                "linux",
                "--rtt",
                "150ms",
                "--bandwidth",
                "500mbit",
                "--profile",
            ])
            .arg(file)
            .output()
            .expect("run")
    };
    let mut big = b"name = \"x\"\n".to_vec();
    big.resize(1 << 21, b'#');
    for (name, bytes, says) in [
        ("shadow", SHADOW.as_bytes().to_vec(), "not a profile: not TOML"),
        (
            "notes.toml",
            b"name = \"x\"\nos = \"linux\"\nroot password is S3cr3t\n".to_vec(),
            "not a profile: not TOML",
        ),
        (
            "latin1.toml",
            b"name = \"x\"\ndescription = \"caf\xe9 S3cr3t\"\n".to_vec(),
            "not a profile: not UTF-8 text",
        ),
        ("big.toml", big, "is larger than 1048576 bytes: not a profile"),
    ] {
        let file = tmp.path().join(name);
        std::fs::write(&file, &bytes).expect("write");
        let out = advise(&file);
        let err = text(&out.stderr);
        assert_eq!(code(&out), 2, "{name}: {err}");
        assert!(err.contains(says), "{name}: {err}");
        assert!(
            !err.contains("line ") && !err.contains("column") && !err.contains("S3cr3t"),
            "{name}: no place in the file, nothing of it: {err}"
        );
        assert!(out.stdout.is_empty());
    }
}

// ---------------------------------------------------------------- --sysctl-dir under root

#[test]
#[cfg_attr(not(feature = "privileged-tests"), ignore = "privileged: needs root")]
fn root_refuses_a_sysctl_dir_another_user_could_change_as_it_refuses_such_a_state_dir() {
    need_root("this test");
    let tmp = tempfile::tempdir().expect("tempdir");
    let file = tmp.path().join("t.conf");
    std::fs::write(&file, "net.ipv4.tcp_rmem = 4096 131072 20643840\n").expect("write");
    let apply = |tree: &Path, state: &Path| {
        tcptune()
            .arg("--sysctl-dir")
            .arg(tree)
            .arg("--state-dir")
            .arg(state)
            .arg("apply")
            .arg(&file)
            .output()
            .expect("run")
    };
    fn chown(p: &Path) {
        std::os::unix::fs::chown(p, Some(NOBODY), Some(NOBODY)).expect("chown");
    }
    fn rmem(tree: &Path) -> PathBuf {
        tree.join("net/ipv4/tcp_rmem")
    }

    // The state directory's rule, for comparison: another user's directory, exit 3.
    let tree = linux_tree(&[]);
    let theirs = tmp.path().join("their-state");
    std::fs::create_dir(&theirs).expect("mkdir");
    chown(&theirs);
    let out = apply(tree.path(), &theirs);
    assert_eq!(code(&out), 3, "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("refusing the state directory"),
        "{}",
        text(&out.stderr)
    );

    // The same for --sysctl-dir: the tree, a directory in it, a key file in it.
    let state = tmp.path().join("state");
    type Spoil = Box<dyn Fn(&Path)>;
    let cases: Vec<(&str, Spoil)> = vec![
        ("owned by uid 65534", Box::new(|t: &Path| chown(t))),
        (
            "net/ipv4 on its path is owned by uid 65534",
            Box::new(|t: &Path| chown(&t.join("net/ipv4"))),
        ),
        ("tcp_rmem is owned by uid 65534", Box::new(|t: &Path| chown(&rmem(t)))),
        (
            "net on its path is writable by group or others",
            Box::new(|t: &Path| {
                std::fs::set_permissions(t.join("net"), std::fs::Permissions::from_mode(0o777)).expect("chmod");
            }),
        ),
    ];
    for (want, spoil) in cases {
        let tree = linux_tree(&[]);
        spoil(tree.path());
        let before = tree_contents(tree.path());
        let out = apply(tree.path(), &state);
        assert_eq!(code(&out), 3, "{want}: {}", text(&out.stderr));
        let err = text(&out.stderr);
        assert!(
            err.contains("refusing --sysctl-dir") && err.contains(want),
            "{want}: {err}"
        );
        assert_eq!(tree_contents(tree.path()), before, "{want}: nothing written");
        // Reading is refused too: root would show what another user's file says.
        let out = tcptune()
            .arg("--sysctl-dir")
            .arg(tree.path())
            .args(["advise", "--rtt", "150ms", "--bandwidth", "500mbit"])
            .output()
            .expect("run");
        assert_eq!(code(&out), 3, "{want}: {}", text(&out.stderr));
    }
    assert!(
        !state.join("snapshots").exists() || std::fs::read_dir(state.join("snapshots")).expect("ls").next().is_none()
    );

    // Root wrote through a hard link into a file owned by nobody: a key file with another
    // name elsewhere is refused, and that file is untouched.
    let tree = linux_tree(&[]);
    let victim = tmp.path().join("victim");
    std::fs::write(&victim, "4096 131072 6291456\n").expect("write");
    chown(&victim);
    std::fs::remove_file(rmem(tree.path())).expect("rm");
    std::fs::hard_link(&victim, rmem(tree.path())).expect("link");
    let out = apply(tree.path(), &state);
    assert_eq!(code(&out), 3, "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("refusing --sysctl-dir"),
        "{}",
        text(&out.stderr)
    );
    assert_eq!(std::fs::read_to_string(&victim).expect("read"), "4096 131072 6291456\n");

    // A normal user's own tree is theirs: the rule is root's.
    let bin = Binary::new();
    let mine = linux_tree(&[]);
    open_up(tmp.path());
    open_up(mine.path());
    let copy = tmp.path().join("nobody-tree");
    let ok = Std::new("cp")
        .arg("-a")
        .arg(mine.path())
        .arg(&copy)
        .status()
        .expect("cp");
    assert!(ok.success());
    let ok = Std::new("chown")
        .args(["-R", "65534:65534"])
        .arg(&copy)
        .status()
        .expect("chown");
    assert!(ok.success());
    let out = bin.as_nobody(&[
        "--sysctl-dir",
        copy.to_str().expect("utf8"),
        "advise",
        "--rtt",
        "150ms",
        "--bandwidth",
        "500mbit",
    ]);
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
}
