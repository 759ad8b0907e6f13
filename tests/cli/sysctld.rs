//! The sysctl.d drop-in `apply --persist` chooses, loaded by the real boot-time loaders (root
//! only): procps `sysctl --system`, and systemd-sysctl where it is installed. Each runs in a
//! network namespace of this test and a private mount namespace, with the test's files bound
//! over /etc/sysctl.d, /run/sysctl.d, /usr/lib/sysctl.d, /usr/local/lib/sysctl.d, /lib/sysctl.d
//! and /etc/sysctl.conf, so the host's files are not read and its values not changed. The files
//! set only net.ipv4.tcp_rmem, which each network namespace has its own copy of.
//!
//! Each loader runs bounded (a timeout, and an address-space cap): the odd files of a tree
//! (a FIFO, a link to /dev/zero) are ones they hang on or read without end.

use std::os::unix::fs::PermissionsExt as _;
use std::os::unix::process::CommandExt as _;
use std::path::Path;
use std::process::{Command as Std, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::linux_tree;
use crate::netns::Netns;

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
/// loader from BEFORE, for at most SECS seconds and 256 MiB of address space, and print what
/// it left in net.ipv4.tcp_rmem and how it exited (124: timed out).
const SCRIPT: &str = r#"
set -eu
root=$1; before=$2; systemd=$3; secs=$4
for d in /etc/sysctl.d /run/sysctl.d /usr/local/lib/sysctl.d /usr/lib/sysctl.d /lib/sysctl.d; do
    if [ -d "$d" ]; then mount --bind "$root$d" "$d"; fi
done
if [ -f /etc/sysctl.conf ]; then mount --bind "$root/etc/sysctl.conf" /etc/sysctl.conf; fi
rmem() { tr -s ' \t' '  ' < /proc/sys/net/ipv4/tcp_rmem; }
run() {
    name=$1; shift
    echo "$before" > /proc/sys/net/ipv4/tcp_rmem
    rc=0
    timeout "$secs" prlimit --as=268435456 "$@" > /dev/null 2>&1 || rc=$?
    echo "$name: $(rmem) (exit $rc)"
}
run procps sysctl --system
if [ -n "$systemd" ]; then run systemd-sysctl "$systemd"; fi
"#;

/// How long a loader may run: they take milliseconds on a sane tree.
const LOADER_SECS: &str = "5";

/// systemd-sysctl, where installed.
fn systemd_sysctl() -> Option<&'static str> {
    ["/usr/lib/systemd/systemd-sysctl", "/lib/systemd/systemd-sysctl"]
        .into_iter()
        .find(|p| Path::new(p).is_file())
}

/// What one loader did with a tree.
#[derive(Debug)]
struct Loaded {
    loader: String,
    /// net.ipv4.tcp_rmem after it.
    value: String,
    /// Its exit status (124: killed at LOADER_SECS).
    exit: i32,
}

impl Loaded {
    /// It read every file it would and ended by itself (an error about a file it skipped,
    /// exit 1, included): not stopped by the timeout or a signal.
    fn finished(&self) -> bool {
        self.exit != 124 && self.exit < 128
    }
}

/// What each loader left in tcp_rmem after reading `root`'s files, bounded.
fn load_bounded(ns: &Netns, root: &Path) -> Vec<Loaded> {
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
            LOADER_SECS,
        ],
    );
    assert!(
        out.status.success(),
        "loaders failed:\n{}{}",
        text(&out.stdout),
        text(&out.stderr)
    );
    let got: Vec<Loaded> = text(&out.stdout)
        .lines()
        .filter_map(|l| {
            let (loader, rest) = l.split_once(": ")?;
            let (value, exit) = rest.rsplit_once(" (exit ")?;
            Some(Loaded {
                loader: loader.to_string(),
                value: value.trim().to_string(),
                exit: exit.trim_end_matches(')').parse().ok()?,
            })
        })
        .collect();
    assert_eq!(got.len(), 1 + usize::from(systemd_sysctl().is_some()), "{got:?}");
    got
}

/// tcp_rmem after each loader read `root`'s files: (loader, value). Each must finish.
fn load(ns: &Netns, root: &Path) -> Vec<(String, String)> {
    load_bounded(ns, root)
        .into_iter()
        .map(|l| {
            assert!(l.finished(), "{} did not finish: {l:?}", l.loader);
            (l.loader, l.value)
        })
        .collect()
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

/// How long tcptune may take over a tree: milliseconds, even in a debug build on a busy
/// machine; a FIFO used to make it wait forever.
const TCPTUNE_LIMIT: Duration = Duration::from_secs(30);

/// Run `cmd` to its end, killing it and failing the test if it takes longer than
/// [`TCPTUNE_LIMIT`].
fn bounded(cmd: &mut Std) -> Output {
    let start = Instant::now();
    let mut child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    while child.try_wait().expect("wait").is_none() {
        if start.elapsed() > TCPTUNE_LIMIT {
            let _ = child.kill();
            let out = child.wait_with_output().expect("output");
            panic!("tcptune still ran after {TCPTUNE_LIMIT:?}: {}", text(&out.stderr));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.wait_with_output().expect("output")
}

/// `apply --persist` of OURS into `root` (a fake /proc/sys: the kernel is not touched here),
/// bounded in time; the drop-in's file name and apply's stderr.
fn persist(root: &Path) -> (String, String) {
    let tree = linux_tree(&[]);
    let state = tempfile::tempdir().expect("tempdir");
    let file = state.path().join("t.conf");
    std::fs::write(&file, format!("net.ipv4.tcp_rmem = {OURS}\n")).expect("write");
    let out = bounded(
        Std::new(assert_cmd::cargo::cargo_bin("tcptune"))
            .arg("--sysctl-dir")
            .arg(tree.path())
            .arg("--state-dir")
            .arg(state.path().join("state"))
            .args(["apply", "--persist", "--persist-root"])
            .arg(root)
            .arg(&file),
    );
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

/// Write `bytes` at `rel` under `root`.
fn put(root: &Path, rel: &str, bytes: &[u8]) {
    std::fs::write(root.join(rel), bytes).expect("write");
}

/// Make a FIFO at `rel` under `root`.
fn mkfifo(root: &Path, rel: &str) {
    let ok = Std::new("mkfifo").arg(root.join(rel)).status().expect("mkfifo");
    assert!(ok.success(), "mkfifo {rel}");
}

/// `# Müller` in ISO-8859-1 before the key: not UTF-8, and applied by both loaders.
fn latin1() -> Vec<u8> {
    let mut b = b"# M\xfcller\n".to_vec();
    b.extend_from_slice(format!("net.ipv4.tcp_rmem = {THEIRS}\n").as_bytes());
    b
}

/// `advise --format json --persist-root ROOT` as the unprivileged user, for this machine (so
/// the drop-in is chosen against ROOT's files), bounded in time: its `sysctl_d`.
fn advise_as_nobody(root: &Path) -> Value {
    let (_dir, bin) = crate::runnable_copy();
    let out = bounded(
        Std::new(&bin)
            .args([
                "advise",
                "--rtt",
                "150ms",
                "--bandwidth",
                "500mbit",
                "--format",
                "json",
                "--persist-root",
            ])
            .arg(root)
            .current_dir("/")
            .uid(NOBODY)
            .gid(NOBODY),
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let v: Value = serde_json::from_slice(&out.stdout).expect("json");
    v["sysctl_d"].clone()
}

/// The unprivileged user the unreadable-file case plays (nobody on Debian).
const NOBODY: u32 = 65534;

#[test]
#[cfg_attr(not(feature = "privileged-tests"), ignore = "privileged: needs root")]
fn files_tcptune_cannot_read_as_text_or_at_all_are_counted_or_named_as_the_loaders_treat_them() {
    let ns = Netns::new("sysctld-odd");
    let host = std::fs::read_to_string("/proc/sys/net/ipv4/tcp_rmem").expect("read");

    // A Latin-1 byte in a comment: both loaders apply the file, so its key counts and the
    // drop-in goes after it (tcptune once skipped it, chose 60 and said no other file set it).
    let root = root_with(&[]);
    put(root.path(), "etc/sysctl.d/70-vendor.conf", &latin1());
    all_say(&load(&ns, root.path()), THEIRS, "the Latin-1 file is applied");
    let (name, err) = persist(root.path());
    assert_eq!(name, "71-tcptune.conf", "{err}");
    assert!(
        err.contains("read after 70-vendor.conf, which sets net.ipv4.tcp_rmem"),
        "{err}"
    );
    assert!(!err.contains("warning:") && !err.contains("could not check"), "{err}");
    all_say(
        &load(&ns, root.path()),
        OURS,
        "71-tcptune.conf is read after 70-vendor.conf",
    );
    let d = root.path().join("etc/sysctl.d");
    std::fs::rename(d.join("71-tcptune.conf"), d.join("60-tcptune.conf")).expect("rename");
    all_say(&load(&ns, root.path()), THEIRS, "60 would lose to the Latin-1 file");

    // An entry that fails for root too (a link to itself): both loaders skip it; tcptune
    // cannot know what it sets, numbers the drop-in after it, and says so.
    let root = root_with(&[("etc/sysctl.d/72-zloop.conf", "-> 72-zloop.conf")]);
    put(root.path(), "etc/sysctl.d/70-vendor.conf", &latin1());
    let (name, err) = persist(root.path());
    assert_eq!(name, "73-tcptune.conf", "{err}");
    assert!(
        err.contains(
            "read after 72-zloop.conf, which could not be checked; could not check 72-zloop.conf (cannot read it: "
        ),
        "{err}"
    );
    assert!(
        err.lines()
            .any(|l| l.starts_with("warning: could not check ") && l.contains("72-zloop.conf")),
        "{err}"
    );
    all_say(&load(&ns, root.path()), OURS, "the loop sets nothing; 73 wins");

    // A file a normal user cannot read (mode 000): root applies it at boot. The user's advice
    // numbers the drop-in after it and names it; saved under that name, it wins.
    let root = root_with(&[]);
    put(
        root.path(),
        "etc/sysctl.d/75-vendor-secret.conf",
        format!("net.ipv4.tcp_rmem = {THEIRS}\n").as_bytes(),
    );
    for dir in ["", "etc", "etc/sysctl.d"] {
        std::fs::set_permissions(root.path().join(dir), std::fs::Permissions::from_mode(0o755)).expect("chmod");
    }
    let secret = root.path().join("etc/sysctl.d/75-vendor-secret.conf");
    std::fs::set_permissions(&secret, std::fs::Permissions::from_mode(0o000)).expect("chmod");
    let d = advise_as_nobody(root.path());
    assert_eq!(d["file"], "/etc/sysctl.d/76-tcptune.conf", "{d}");
    assert_eq!(d["unchecked"][0]["file"], secret.display().to_string(), "{d}");
    assert!(
        d["unchecked"][0]["why"]
            .as_str()
            .is_some_and(|w| w.contains("Permission denied")),
        "{d}"
    );
    assert!(
        d["why"]
            .as_str()
            .is_some_and(|w| w.starts_with("read after 75-vendor-secret.conf, which could not be checked")),
        "{d}"
    );
    put(
        root.path(),
        "etc/sysctl.d/76-tcptune.conf",
        format!("net.ipv4.tcp_rmem = {OURS}\n").as_bytes(),
    );
    all_say(
        &load(&ns, root.path()),
        OURS,
        "76 is read after the file root reads at boot",
    );
    std::fs::rename(
        root.path().join("etc/sysctl.d/76-tcptune.conf"),
        root.path().join("etc/sysctl.d/60-tcptune.conf"),
    )
    .expect("rename");
    all_say(
        &load(&ns, root.path()),
        THEIRS,
        "60 would lose to the file the user could not read",
    );

    // A FIFO and a link to /dev/zero: tcptune neither waits nor reads, names both, and
    // numbers the drop-in only after the Latin-1 file that does set the key.
    let root = root_with(&[("etc/sysctl.d/85-zero.conf", "-> /dev/zero")]);
    put(root.path(), "etc/sysctl.d/70-vendor.conf", &latin1());
    mkfifo(root.path(), "etc/sysctl.d/80-fifo.conf");
    let (name, err) = persist(root.path());
    assert_eq!(name, "71-tcptune.conf", "{err}");
    assert!(
        err.contains(
            "could not check 80-fifo.conf (it is a FIFO, not a regular file), \
             85-zero.conf (it is a character device, not a regular file)"
        ),
        "{err}"
    );
    for f in ["80-fifo.conf: it is a FIFO", "85-zero.conf: it is a character device"] {
        assert!(
            err.lines()
                .any(|l| l.starts_with("warning: ") && l.contains(f) && l.contains("remove it")),
            "{f}: {err}"
        );
    }
    // What the loaders make of that tree: one that finishes applies the drop-in last; one
    // that hangs on the FIFO (the warning's point) is stopped having applied nothing.
    for l in load_bounded(&ns, root.path()) {
        eprintln!("with a FIFO and a /dev/zero link: {l:?}");
        let want = if l.finished() { OURS } else { BEFORE };
        assert_eq!(l.value, want, "{l:?}");
    }
    // With the FIFO gone: procps reads the /dev/zero link until its memory runs out and goes
    // on; whatever finishes agrees with the choice.
    std::fs::remove_file(root.path().join("etc/sysctl.d/80-fifo.conf")).expect("rm");
    for l in load_bounded(&ns, root.path()) {
        eprintln!("with a /dev/zero link: {l:?}");
        let want = if l.finished() { OURS } else { BEFORE };
        assert_eq!(l.value, want, "{l:?}");
    }
    // Removed as the warning says: both loaders finish, and the drop-in wins.
    std::fs::remove_file(root.path().join("etc/sysctl.d/85-zero.conf")).expect("rm");
    all_say(
        &load(&ns, root.path()),
        OURS,
        "71-tcptune.conf is read after 70-vendor.conf",
    );

    assert_eq!(
        std::fs::read_to_string("/proc/sys/net/ipv4/tcp_rmem").expect("read"),
        host,
        "the host's value is untouched"
    );
}
