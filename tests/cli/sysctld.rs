//! The sysctl.d drop-in `apply --persist` chooses, loaded by the real boot-time loaders (root
//! only): procps `sysctl --system`, and systemd-sysctl where it is installed. Each runs in a
//! network namespace of this test and a private mount namespace, with the test's files bound
//! over /etc/sysctl.d, /run/sysctl.d, /usr/lib/sysctl.d, /usr/local/lib/sysctl.d, /lib/sysctl.d
//! and /etc/sysctl.conf, so the host's files are not read and its values not changed. The files
//! set only net.ipv4.tcp_rmem, which each network namespace has its own copy of.

use std::path::Path;

use crate::netns::Netns;
use crate::{linux_tree, tcptune};

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// What an installed file sets.
const THEIRS: &str = "4096 87380 3145728";
/// What tcptune persists.
const OURS: &str = "4096 131072 20643840";
/// Set before each loader runs, so a loader that did nothing shows.
const BEFORE: &str = "4096 16384 1048576";

/// The sysctl.d directories the loaders read, as procps 4 lists them (systemd: the same, /lib
/// only on split-/usr systems).
const DIRS: [&str; 5] = [
    "etc/sysctl.d",
    "run/sysctl.d",
    "usr/local/lib/sysctl.d",
    "usr/lib/sysctl.d",
    "lib/sysctl.d",
];

/// In the mount namespace: bind ROOT's directories and sysctl.conf over the host's (those the
/// host has: a directory it lacks is one the loaders do not find either), then run each
/// loader from BEFORE and print what it left in net.ipv4.tcp_rmem.
const SCRIPT: &str = r#"
set -eu
root=$1; before=$2; systemd=$3
for d in /etc/sysctl.d /run/sysctl.d /usr/local/lib/sysctl.d /usr/lib/sysctl.d /lib/sysctl.d; do
    if [ -d "$d" ]; then mount --bind "$root$d" "$d"; fi
done
if [ -f /etc/sysctl.conf ]; then mount --bind "$root/etc/sysctl.conf" /etc/sysctl.conf; fi
rmem() { tr -s ' \t' '  ' < /proc/sys/net/ipv4/tcp_rmem; }
echo "$before" > /proc/sys/net/ipv4/tcp_rmem
sysctl --system > /dev/null
echo "procps: $(rmem)"
if [ -n "$systemd" ]; then
    echo "$before" > /proc/sys/net/ipv4/tcp_rmem
    "$systemd"
    echo "systemd-sysctl: $(rmem)"
fi
"#;

/// systemd-sysctl, where installed.
fn systemd_sysctl() -> Option<&'static str> {
    ["/usr/lib/systemd/systemd-sysctl", "/lib/systemd/systemd-sysctl"]
        .into_iter()
        .find(|p| Path::new(p).is_file())
}

/// tcp_rmem after each loader read `root`'s files: (loader, value).
fn load(ns: &Netns, root: &Path) -> Vec<(String, String)> {
    let out = ns.exec(
        "unshare",
        &[
            "--mount",
            "--propagation",
            "private",
            "sh",
            "-c",
            SCRIPT,
            "sh",
            root.to_str().expect("utf8"),
            BEFORE,
            systemd_sysctl().unwrap_or(""),
        ],
    );
    assert!(
        out.status.success(),
        "loaders failed:\n{}{}",
        text(&out.stdout),
        text(&out.stderr)
    );
    let got: Vec<(String, String)> = text(&out.stdout)
        .lines()
        .filter_map(|l| l.split_once(": "))
        .map(|(k, v)| (k.to_string(), v.trim().to_string()))
        .collect();
    assert_eq!(got.len(), 1 + usize::from(systemd_sysctl().is_some()), "{got:?}");
    got
}

/// A fake /etc tree under a temporary root: every sysctl.d directory, an empty sysctl.conf,
/// then `files` (relative path, content; content "-> TARGET" makes a symlink).
fn root_with(files: &[(&str, &str)]) -> tempfile::TempDir {
    let root = tempfile::tempdir().expect("tempdir");
    for d in DIRS {
        std::fs::create_dir_all(root.path().join(d)).expect("mkdir");
    }
    std::fs::write(root.path().join("etc/sysctl.conf"), "").expect("write");
    for (rel, content) in files {
        let p = root.path().join(rel);
        if let Some(target) = content.strip_prefix("-> ") {
            std::os::unix::fs::symlink(target, &p).expect("symlink");
        } else {
            std::fs::write(&p, content).expect("write");
        }
    }
    root
}

/// `apply --persist` of OURS into `root` (a fake /proc/sys: the kernel is not touched here);
/// the drop-in's file name and apply's stderr.
fn persist(root: &Path) -> (String, String) {
    let tree = linux_tree(&[]);
    let state = tempfile::tempdir().expect("tempdir");
    let file = state.path().join("t.conf");
    std::fs::write(&file, format!("net.ipv4.tcp_rmem = {OURS}\n")).expect("write");
    let out = tcptune()
        .arg("--sysctl-dir")
        .arg(tree.path())
        .arg("--state-dir")
        .arg(state.path().join("state"))
        .args(["apply", "--persist", "--persist-root"])
        .arg(root)
        .arg(&file)
        .output()
        .expect("run");
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    let dropins: Vec<String> = std::fs::read_dir(root.join("etc/sysctl.d"))
        .expect("read_dir")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with("-tcptune.conf"))
        .collect();
    assert_eq!(dropins.len(), 1, "{dropins:?}");
    (dropins[0].clone(), err)
}

fn all_say(got: &[(String, String)], want: &str, what: &str) {
    for (loader, v) in got {
        assert_eq!(v, want, "{loader}: {what}");
    }
}

#[test]
#[cfg_attr(not(feature = "privileged-tests"), ignore = "privileged: needs root")]
fn the_boot_loaders_let_the_chosen_drop_in_win() {
    let ns = Netns::new("sysctld");
    let host = std::fs::read_to_string("/proc/sys/net/ipv4/tcp_rmem").expect("read");
    if systemd_sysctl().is_none() {
        eprintln!("note: no systemd-sysctl here: procps `sysctl --system` only");
    }

    // A file at 70 sets the key: tcptune's block goes to 71, and wins.
    let root = root_with(&[("etc/sysctl.d/70-x.conf", &format!("net.ipv4.tcp_rmem = {THEIRS}\n"))]);
    let (name, err) = persist(root.path());
    assert_eq!(name, "71-tcptune.conf", "{err}");
    assert!(err.contains("read after 70-x.conf"), "{err}");
    assert!(!err.contains("warning:"), "{err}");
    all_say(&load(&ns, root.path()), OURS, "71-tcptune.conf is read after 70-x.conf");
    // The same block in the old fixed 60-tcptune.conf loses: the test can tell.
    let d = root.path().join("etc/sysctl.d");
    std::fs::rename(d.join("71-tcptune.conf"), d.join("60-tcptune.conf")).expect("rename");
    all_say(
        &load(&ns, root.path()),
        THEIRS,
        "70-x.conf is read after 60-tcptune.conf",
    );

    // A conflict in /usr/lib masked by an /etc file of the same name that sets something else:
    // no conflict for the loaders either, so 60 wins.
    let root = root_with(&[
        ("usr/lib/sysctl.d/80-y.conf", &format!("net.ipv4.tcp_rmem = {THEIRS}\n")),
        ("etc/sysctl.d/80-y.conf", "net.ipv4.tcp_sack = 1\n"),
    ]);
    let (name, err) = persist(root.path());
    assert_eq!(name, "60-tcptune.conf", "{err}");
    all_say(&load(&ns, root.path()), OURS, "the masked 80-y.conf is not read");

    // No number beats zz-local.conf: 99 and a warning, which the loaders bear out.
    let root = root_with(&[("etc/sysctl.d/zz-local.conf", &format!("net.ipv4.tcp_rmem = {THEIRS}\n"))]);
    let (name, err) = persist(root.path());
    assert_eq!(name, "99-tcptune.conf", "{err}");
    assert!(
        err.contains("zz-local.conf:1 sets net.ipv4.tcp_rmem") && err.contains("wins at boot"),
        "{err}"
    );
    all_say(
        &load(&ns, root.path()),
        THEIRS,
        "zz-local.conf is read after 99-tcptune.conf",
    );

    // Debian's /etc/sysctl.d/99-sysctl.conf -> ../sysctl.conf: not beaten by number (procps
    // reads /etc/sysctl.conf last): 60 and a warning, which the loaders bear out.
    if Path::new("/etc/sysctl.conf").is_file() {
        let root = root_with(&[("etc/sysctl.d/99-sysctl.conf", "-> ../sysctl.conf")]);
        std::fs::write(
            root.path().join("etc/sysctl.conf"),
            format!("net.ipv4.tcp_rmem = {THEIRS}\n"),
        )
        .expect("write");
        let (name, err) = persist(root.path());
        assert_eq!(name, "60-tcptune.conf", "{err}");
        assert!(err.contains("etc/sysctl.conf:1 sets net.ipv4.tcp_rmem"), "{err}");
        all_say(&load(&ns, root.path()), THEIRS, "/etc/sysctl.conf is read last");
    } else {
        eprintln!("note: this host has no /etc/sysctl.conf to bind over: its case is not run");
    }

    assert_eq!(
        std::fs::read_to_string("/proc/sys/net/ipv4/tcp_rmem").expect("read"),
        host,
        "the host's value is untouched"
    );
    // The bind mounts went with the loaders' mount namespace.
    let mounts = std::fs::read_to_string("/proc/self/mountinfo").expect("mountinfo");
    assert!(!mounts.contains(" /etc/sysctl.d "), "{mounts}");
}
