//! Every command's output for people within 80 columns on a terminal (`COLUMNS=80`, the width
//! tcptune reads when it cannot ask a terminal) and within 100 piped (no width known), mesh and
//! snapshots included. Exact bytes (a sysctl line, JSON) are not for this test; every table and
//! sentence is.

use super::mesh::recording_ssh;
use super::{linux_tree, tcptune};

/// The lines of `args`' stdout, run with `--sysctl-dir tree --state-dir state` where the command
/// takes them and with `COLUMNS=columns` (None: unset); the command must succeed.
fn lines(args: &[&str], columns: Option<usize>) -> String {
    let mut c = tcptune();
    c.args(args).env_remove("COLUMNS");
    if let Some(w) = columns {
        c.env("COLUMNS", w.to_string());
    }
    let out = c.output().expect("run");
    assert!(
        out.status.success() || out.status.code() == Some(1),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("utf8")
}

fn within(text: &str, width: usize, what: &str) {
    for l in text.lines() {
        let n = l.chars().count();
        assert!(
            n <= width,
            "{what}: a line of {n} columns (at most {width}):\n{l}\n\n{text}"
        );
    }
}

#[test]
fn every_command_fits_80_columns_on_a_terminal_and_100_piped() {
    let tree = linux_tree(&[]);
    let tree = tree.path().to_str().expect("utf8").to_string();
    let state = tempfile::tempdir().expect("tempdir");
    let state = state.path().to_str().expect("utf8").to_string();
    let dir = tempfile::tempdir().expect("tempdir");
    let (ssh, _) = recording_ssh(dir.path());
    let conf = dir.path().join("tcptune.conf");
    let advice = lines(
        &[
            "advise",
            "--sysctl-dir",
            &tree,
            "--rtt",
            "150ms",
            "--bandwidth",
            "500mbit",
            "--format",
            "sysctl",
        ],
        None,
    );
    std::fs::write(&conf, advice).expect("write");
    let conf = conf.to_str().expect("utf8").to_string();
    // A snapshot to list and revert: an apply to the fake tree.
    let applied = tcptune()
        .args(["apply", "--sysctl-dir", &tree, "--state-dir", &state, &conf])
        .output()
        .expect("apply");
    assert!(applied.status.success(), "{}", String::from_utf8_lossy(&applied.stderr));
    let s = |v: &[&str]| v.iter().map(|x| (*x).to_string()).collect::<Vec<String>>();
    let commands: Vec<Vec<String>> = vec![
        s(&["calc", "--bandwidth", "500mbit", "--rtt", "150ms"]),
        s(&[
            "calc",
            "--bandwidth",
            "1gbit",
            "--rtt",
            "74.3ms",
            "--window",
            "4MiB",
            "--loss",
            "0.01",
        ]),
        s(&[
            "advise",
            "--sysctl-dir",
            &tree,
            "--rtt",
            "150ms",
            "--bandwidth",
            "500mbit",
            "--format",
            "table",
        ]),
        s(&[
            "advise",
            "--sysctl-dir",
            &tree,
            "--rtt",
            "150ms",
            "--bandwidth",
            "500mbit",
            "--format",
            "table",
            "--explain",
            "--size",
            "2TB",
        ]),
        s(&[
            "advise",
            "--sysctl-dir",
            &tree,
            "--host",
            "198.18.0.2",
            "--fake-prober",
            "rtt=50ms,rate=200mbit,loss=0.1",
            "--format",
            "table",
            "--explain",
        ]),
        s(&[
            "apply",
            "--sysctl-dir",
            &tree,
            "--state-dir",
            &state,
            "--dry-run",
            &conf,
        ]),
        s(&["snapshots", "--state-dir", &state]),
        s(&["revert", "--sysctl-dir", &tree, "--state-dir", &state, "--dry-run"]),
        s(&["check", "--sysctl-dir", &tree, "--state-dir", &state]),
        s(&["profiles"]),
        s(&["profiles", "list"]),
        s(&[
            "mesh",
            "--dry-run",
            "--ssh-command",
            &ssh,
            "h1",
            "h2",
            "h3",
            "h4",
            "--site",
            "east=h1,h2",
            "--site",
            "west=h3,h4",
        ]),
        s(&["inspect", "--port", "9"]),
        s(&["watch", "--port", "9", "--for", "1s"]),
        s(&[]),
    ];
    for c in &commands {
        let args: Vec<&str> = c.iter().map(String::as_str).collect();
        within(&lines(&args, Some(80)), 80, &format!("{args:?} at COLUMNS=80"));
        within(&lines(&args, None), 100, &format!("{args:?} piped"));
    }
}
