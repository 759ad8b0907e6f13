//! `apply --persist`: the boot-time configuration files, and what else on the system
//! could override tcptune's values.
//!
//! tcptune adds one marked block per snapshot and records each file's whole content
//! before and after in the snapshot, so `revert` can put back exactly what was there:
//! * Linux: `/etc/sysctl.d/60-tcptune.conf` (created if absent);
//! * FreeBSD, macOS: `/etc/sysctl.conf`; FreeBSD boot-time tunables in `/boot/loader.conf`.
//!
//! All paths hang off a root (normally `/`), so tests can point them at a temporary tree.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::host::linux as host;
use crate::platform::Os;
use crate::snapshot::FileChange;

/// The Linux file tcptune owns. `60-` sorts after distribution defaults (`50-*`), before
/// the local `99-sysctl.conf`.
pub const LINUX_FILE: &str = "etc/sysctl.d/60-tcptune.conf";

/// The file that holds runtime sysctls at boot, under `root`.
pub fn sysctl_file(os: Os, root: &Path) -> PathBuf {
    match os {
        Os::Linux => root.join(LINUX_FILE),
        Os::Freebsd | Os::Macos => root.join("etc/sysctl.conf"),
    }
}

/// FreeBSD's loader tunables (boot-time only).
pub fn loader_file(root: &Path) -> PathBuf {
    root.join("boot/loader.conf")
}

/// The block tcptune adds for snapshot `id`.
pub fn block(os: Os, id: &str, lines: &[(String, String)], loader: bool) -> String {
    let mut b =
        format!("# BEGIN tcptune {id}: added by `tcptune apply --persist`; `tcptune revert {id}` removes this block\n");
    for (k, v) in lines {
        if loader {
            // loader.conf(5) values are quoted strings; the profile gives them quoted already.
            if v.starts_with('"') {
                b.push_str(&format!("{k}={v}\n"));
            } else {
                b.push_str(&format!("{k}=\"{v}\"\n"));
            }
        } else if os == Os::Linux {
            b.push_str(&format!("{k} = {v}\n"));
        } else {
            b.push_str(&format!("{k}={v}\n"));
        }
    }
    b.push_str(&format!("# END tcptune {id}\n"));
    b
}

/// The change that appends `block` to `path` (read now).
pub fn append(path: &Path, block: &str) -> std::io::Result<FileChange> {
    // Write through a symlink (/etc/sysctl.conf is one on some systems) to its target.
    let path = match std::fs::canonicalize(path) {
        Ok(p) => p,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => path.to_path_buf(),
        Err(e) => return Err(e),
    };
    let before = match std::fs::read_to_string(&path) {
        Ok(t) => Some(t),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => return Err(e),
    };
    let mut after = before.clone().unwrap_or_default();
    if !after.is_empty() && !after.ends_with('\n') {
        after.push('\n');
    }
    after.push_str(block);
    Ok(FileChange {
        path,
        before,
        after,
        block: block.to_string(),
    })
}

/// What undoing a file change did or found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Undo {
    /// The file held exactly what tcptune wrote: the old content is back (or the file is gone).
    Restored,
    /// The file had changed since, but tcptune's block was still there word for word: only
    /// the block was taken out.
    BlockRemoved,
    /// Already as before: nothing to do.
    Unchanged,
    /// The block is not there any more (someone edited or removed it): left alone.
    Missing,
}

/// The content that undoes `fc` given the file's `current` content (None: absent), and
/// what that means. None as content: delete the file.
pub fn undo(fc: &FileChange, current: Option<&str>) -> (Option<Option<String>>, Undo) {
    if current == fc.before.as_deref() {
        return (None, Undo::Unchanged);
    }
    if current == Some(fc.after.as_str()) {
        return (Some(fc.before.clone()), Undo::Restored);
    }
    match current {
        Some(text) if text.contains(&fc.block) => {
            let rest = text.replacen(&fc.block, "", 1);
            if rest.is_empty() && fc.before.is_none() {
                (Some(None), Undo::BlockRemoved)
            } else {
                (Some(Some(rest)), Undo::BlockRemoved)
            }
        }
        _ => (None, Undo::Missing),
    }
}

/// The lines of `wanted` that the file at `path` does not already end up setting: its last
/// assignment of the key has another value, or there is none. Keeps `--persist` idempotent.
pub fn missing(path: &Path, wanted: &[(String, String)]) -> Vec<(String, String)> {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let mut last: BTreeMap<String, String> = BTreeMap::new();
    for l in host::conf_lines(&text) {
        last.insert(l.key, crate::platform::normalize_value(l.value.trim_matches('"')));
    }
    wanted
        .iter()
        .filter(|(k, v)| {
            last.get(k)
                .is_none_or(|have| *have != crate::platform::normalize_value(v.trim_matches('"')))
        })
        .cloned()
        .collect()
}

/// Files read at boot *after* tcptune's that set one of `keys`: they win. One warning each.
pub fn overrides(os: Os, root: &Path, keys: &[&str]) -> Vec<String> {
    let mut later: Vec<PathBuf> = Vec::new();
    match os {
        Os::Linux => {
            // Everything applied after tcptune's file: sysctl.d names that sort after ours, and
            // /etc/sysctl.conf, which procps `sysctl --system` reads last.
            let ours = Path::new(LINUX_FILE).file_name().unwrap_or_default();
            let main = root.join("etc/sysctl.conf");
            later.extend(
                host::sysctl_conf_files(root)
                    .into_iter()
                    .filter(|p| *p == main || p.file_name().is_some_and(|n| n > ours)),
            );
        }
        // rc.d/sysctl reads /etc/sysctl.conf.local after /etc/sysctl.conf.
        Os::Freebsd => later.push(root.join("etc/sysctl.conf.local")),
        Os::Macos => {}
    }
    let mut seen = Vec::new();
    let mut out = Vec::new();
    for p in later {
        let canon = std::fs::canonicalize(&p).unwrap_or_else(|_| p.clone());
        if seen.contains(&canon) {
            continue;
        }
        seen.push(canon);
        let Ok(text) = std::fs::read_to_string(&p) else {
            continue;
        };
        for l in host::conf_lines(&text) {
            if keys.contains(&l.key.as_str()) {
                out.push(format!(
                    "{}:{} sets {} = {}; it is read after tcptune's file and wins at boot",
                    p.display(),
                    l.line,
                    l.key,
                    l.value
                ));
            }
        }
    }
    out
}

/// The files `apply --persist` may write under `root` for `os`, as named and as resolved
/// (apply writes through a symlink such as /etc/sysctl.conf -> sysctl.d/99-sysctl.conf).
pub fn allowed_files(os: Os, root: &Path) -> Vec<PathBuf> {
    let mut named = vec![sysctl_file(os, root)];
    if os == Os::Freebsd {
        named.push(loader_file(root));
    }
    let mut out = named.clone();
    out.extend(named.iter().filter_map(|p| std::fs::canonicalize(p).ok()));
    out
}

/// Why a `--persist` record read back from a snapshot must not be undone: revert runs as
/// root and writes what the snapshot says, so the record is held to what apply itself
/// would have written — one of tcptune's own files, and a block of allowed lines that the
/// content after is exactly the content before plus. Undoing such a record can then only
/// take tcptune's block out of tcptune's file, whoever wrote the snapshot.
pub fn check_record(os: Os, root: &Path, id: &str, fc: &FileChange) -> Result<(), String> {
    let path = fc.path.display().to_string();
    let path = crate::sysctl_file::excerpt(&path);
    if !allowed_files(os, root).contains(&fc.path) {
        return Err(format!("{path} is not a file tcptune persists to on {os}"));
    }
    let loader = os == Os::Freebsd && fc.path.file_name().is_some_and(|n| n == "loader.conf");
    let lines: Vec<(String, String)> = fc
        .block
        .lines()
        .filter(|l| !l.starts_with("# BEGIN tcptune ") && !l.starts_with("# END tcptune "))
        .map(|l| {
            let (k, v) = l.split_once('=').unwrap_or((l, ""));
            (k.trim().to_string(), v.trim().to_string())
        })
        .collect();
    for (k, v) in &lines {
        if loader {
            crate::profile::check_boot_line(k, v)?;
        } else {
            crate::sysctl_file::check_key(k, os).and_then(|()| crate::sysctl_file::check_value(k, v, os).map(drop))?;
        }
    }
    // The block must be exactly what `block` makes of those lines (its two marker lines
    // included), so nothing else can ride along in it.
    if fc.block != block(os, id, &lines, loader) {
        return Err(format!("the block for {path} is not one tcptune wrote for {id}"));
    }
    let mut expected = fc.before.clone().unwrap_or_default();
    if !expected.is_empty() && !expected.ends_with('\n') {
        expected.push('\n');
    }
    expected.push_str(&fc.block);
    if fc.after != expected {
        return Err(format!(
            "{path}: the content after the apply is not the content before plus tcptune's block"
        ));
    }
    Ok(())
}

/// Daemons that retune the network stack behind tcptune's back: (name, pid).
pub fn running_tuners(proc_root: &Path) -> Vec<(String, u32)> {
    host::find_processes(proc_root, &host::TUNING_DAEMONS)
        .into_iter()
        .map(|(pid, name)| (name, pid))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kv(k: &str, v: &str) -> (String, String) {
        (k.to_string(), v.to_string())
    }

    #[test]
    fn blocks_per_os() {
        let b = block(Os::Linux, "0001-x", &[kv("net.ipv4.tcp_rmem", "1 2 3")], false);
        assert_eq!(
            b.lines().collect::<Vec<_>>(),
            vec![
                "# BEGIN tcptune 0001-x: added by `tcptune apply --persist`; `tcptune revert 0001-x` removes this block",
                "net.ipv4.tcp_rmem = 1 2 3",
                "# END tcptune 0001-x"
            ]
        );
        let b = block(Os::Freebsd, "i", &[kv("kern.ipc.maxsockbuf", "5")], false);
        assert!(b.contains("\nkern.ipc.maxsockbuf=5\n"));
        let b = block(Os::Freebsd, "i", &[kv("cc_htcp_load", "\"YES\""), kv("x", "1")], true);
        assert!(b.contains("\ncc_htcp_load=\"YES\"\nx=\"1\"\n"), "{b}");
    }

    #[test]
    fn append_then_undo_in_every_situation() {
        let dir = tempfile::tempdir().expect("tempdir");
        let p = dir.path().join("sysctl.conf");
        let b = block(Os::Freebsd, "1", &[kv("kern.ipc.maxsockbuf", "5")], false);

        // Absent file: created, and undo deletes it.
        let fc = append(&p, &b).expect("append");
        assert_eq!(fc.before, None);
        assert_eq!(undo(&fc, Some(&fc.after)), (Some(None), Undo::Restored));
        assert_eq!(undo(&fc, None), (None, Undo::Unchanged));

        // Existing content without a final newline is kept byte for byte.
        std::fs::write(&p, "a=1").expect("write");
        let fc = append(&p, &b).expect("append");
        assert_eq!(fc.after, format!("a=1\n{b}"));
        assert_eq!(undo(&fc, Some(&fc.after)), (Some(Some("a=1".into())), Undo::Restored));

        // Someone appended after our block: only our block goes.
        let edited = format!("{}z=9\n", fc.after);
        assert_eq!(
            undo(&fc, Some(&edited)),
            (Some(Some("a=1\nz=9\n".into())), Undo::BlockRemoved)
        );
        // Someone removed our block: leave the file alone.
        assert_eq!(undo(&fc, Some("a=1\nz=9\n")), (None, Undo::Missing));
    }

    #[test]
    fn only_what_the_file_does_not_already_set_is_added() {
        let dir = tempfile::tempdir().expect("tempdir");
        let p = dir.path().join("60-tcptune.conf");
        let want = [kv("net.a", "1 2 3"), kv("net.b", "5")];
        assert_eq!(missing(&p, &want), want.to_vec());
        std::fs::write(&p, "net.a = 1\t2 3\nnet.b = 4\n# net.b = 5\n").expect("write");
        assert_eq!(missing(&p, &want), vec![kv("net.b", "5")]);
        std::fs::write(&p, "net.a=1 2 3\nnet.b = 4\nnet.b = 5\n").expect("write");
        assert!(missing(&p, &want).is_empty());
        std::fs::write(&p, "cc_htcp_load=\"YES\"\n").expect("write");
        assert!(missing(&p, &[kv("cc_htcp_load", "\"YES\"")]).is_empty());
    }

    #[test]
    fn later_files_that_set_the_same_key_are_found() {
        let root = tempfile::tempdir().expect("tempdir");
        let w = |rel: &str, text: &str| {
            let p = root.path().join(rel);
            std::fs::create_dir_all(p.parent().expect("parent")).expect("mkdir");
            std::fs::write(p, text).expect("write");
        };
        w("etc/sysctl.d/50-early.conf", "net.ipv4.tcp_rmem = 1 2 3\n");
        w("etc/sysctl.d/99-late.conf", "# x\nnet/ipv4/tcp_rmem = 4 5 6\n");
        w("usr/lib/sysctl.d/99-late.conf", "net.ipv4.tcp_wmem = 4 5 6\n"); // masked by /etc
        w("usr/lib/sysctl.d/70-vendor.conf", "-net.ipv4.tcp_wmem=7 8 9\n");
        w("etc/sysctl.conf", "net.core.rmem_max = 1\n");
        let keys = ["net.ipv4.tcp_rmem", "net.ipv4.tcp_wmem", "net.core.rmem_max"];
        let w = overrides(Os::Linux, root.path(), &keys);
        assert_eq!(w.len(), 3, "{w:#?}");
        assert!(
            w[0].contains("70-vendor.conf:1 sets net.ipv4.tcp_wmem = 7 8 9"),
            "{w:?}"
        );
        assert!(
            w[1].contains("etc/sysctl.d/99-late.conf:2 sets net.ipv4.tcp_rmem"),
            "{w:?}"
        );
        assert!(w[2].contains("etc/sysctl.conf:1 sets net.core.rmem_max"), "{w:?}");
        assert!(overrides(Os::Freebsd, root.path(), &keys).is_empty());
    }

    #[test]
    fn tuners_are_spotted_in_proc() {
        let proc = tempfile::tempdir().expect("tempdir");
        for (pid, comm) in [("1", "systemd"), ("42", "tuned"), ("77", "bpftune"), ("self", "tuned")] {
            std::fs::create_dir_all(proc.path().join(pid)).expect("mkdir");
            std::fs::write(proc.path().join(pid).join("comm"), format!("{comm}\n")).expect("write");
        }
        assert_eq!(
            running_tuners(proc.path()),
            vec![("tuned".to_string(), 42), ("bpftune".to_string(), 77)]
        );
    }
}
