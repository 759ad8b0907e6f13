//! The lab scripts' pieces that run harmlessly as any user: here the delay line's lookup
//! (`find_delayline` of lab/lab.sh, which lab/mesh.sh and lab/fleet.sh call), with lab.sh
//! sourced without its `main` and a PATH of an empty directory, so no cargo is found and
//! nothing is built, no namespace made.

use std::os::unix::fs::PermissionsExt as _;
use std::path::Path;
use std::process::{Command, Output};

/// `find_delayline` with REPO_ROOT `root`, `CARGO_TARGET_DIR` `target` and `DELAYLINE_BIN`
/// `bin` (unset when None), on a PATH without cargo.
fn find_delayline(root: &Path, target: Option<&Path>, bin: Option<&Path>) -> Output {
    let empty = root.join("empty-path");
    std::fs::create_dir_all(&empty).expect("mkdir");
    let mut cmd = Command::new("bash");
    cmd.arg("-c")
        .arg(r#"source <(sed '/^main "$@"/d' "$0"); REPO_ROOT=$1; PATH=$2 find_delayline"#)
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("lab/lab.sh"))
        .arg(root)
        .arg(&empty)
        .env_remove("CARGO_TARGET_DIR")
        .env_remove("DELAYLINE_BIN");
    if let Some(t) = target {
        cmd.env("CARGO_TARGET_DIR", t);
    }
    if let Some(b) = bin {
        cmd.env("DELAYLINE_BIN", b);
    }
    cmd.output().expect("bash")
}

fn built(path: &Path) {
    std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
    std::fs::write(path, "#!/bin/sh\n").expect("write");
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).trim_end().to_string()
}

#[test]
fn the_delay_line_is_a_built_binary_before_cargo() {
    let d = tempfile::tempdir().expect("tempdir");
    let root = d.path();
    // Neither a binary nor cargo: one line saying so, exit 1, nothing on stdout.
    let o = find_delayline(root, None, None);
    assert_eq!(o.status.code(), Some(1));
    assert!(o.stdout.is_empty());
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("no cargo") && err.contains("DELAYLINE_BIN"), "{err}");

    // A debug build is taken (and said); a release build is preferred to it.
    let debug = root.join("target/debug/delayline");
    built(&debug);
    let o = find_delayline(root, None, None);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(stdout(&o), debug.display().to_string());
    assert!(String::from_utf8_lossy(&o.stderr).contains("debug build"));
    let release = root.join("target/release/delayline");
    built(&release);
    assert_eq!(stdout(&find_delayline(root, None, None)), release.display().to_string());

    // CARGO_TARGET_DIR's comes first; DELAYLINE_BIN before everything, when it is a program.
    let other = root.join("elsewhere");
    built(&other.join("release/delayline"));
    let o = find_delayline(root, Some(&other), None);
    assert_eq!(stdout(&o), other.join("release/delayline").display().to_string());
    let mine = root.join("mine");
    built(&mine);
    assert_eq!(
        stdout(&find_delayline(root, Some(&other), Some(&mine))),
        mine.display().to_string()
    );
    let o = find_delayline(root, None, Some(&root.join("target")));
    assert_eq!(o.status.code(), Some(1), "a directory is no program");
    assert!(String::from_utf8_lossy(&o.stderr).contains("DELAYLINE_BIN="));
}

#[test]
fn the_lab_scripts_parse() {
    for s in ["lab/common.sh", "lab/lab.sh", "lab/mesh.sh", "lab/fleet.sh"] {
        let o = Command::new("bash")
            .arg("-n")
            .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join(s))
            .output()
            .expect("bash");
        assert!(o.status.success(), "{s}: {}", String::from_utf8_lossy(&o.stderr));
    }
}
