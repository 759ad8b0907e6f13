//! `apply --persist`: the boot-time configuration files, and what else on the system
//! could override tcptune's values.
//!
//! tcptune adds one marked block per snapshot and records each file's whole content
//! before and after in the snapshot, so `revert` can put back exactly what was there:
//! * Linux: a drop-in `/etc/sysctl.d/NN-tcptune.conf` (created if absent), numbered by
//!   [`choose_dropin`] so that no installed sysctl.d file read after it sets the same keys;
//! * FreeBSD, macOS: `/etc/sysctl.conf`; FreeBSD boot-time tunables in `/boot/loader.conf`.
//!
//! All paths hang off a root (normally `/`), so tests can point them at a temporary tree.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::host::linux as host;
use crate::os::Os;
use crate::snapshot::FileChange;

/// Where tcptune's Linux drop-in lives, under the root.
const SYSCTL_D: &str = "etc/sysctl.d";
/// The numbers a drop-in may take. From 60: after systemd's `50-default.conf` and the
/// distributions' `50-*` files, before the local `99-sysctl.conf`; up to 99, the last two-digit one.
const FIRST: u8 = 60;
const LAST: u8 = 99;

/// `NN-tcptune.conf`.
fn dropin_name(nn: u8) -> String {
    format!("{nn:02}-tcptune.conf")
}

/// NN when `name` is `NN-tcptune.conf`, NN two digits from [`FIRST`] to [`LAST`].
fn dropin_number(name: &str) -> Option<u8> {
    let nn = name.strip_suffix("-tcptune.conf")?;
    if nn.len() != 2 || !nn.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    nn.parse().ok().filter(|n| (FIRST..=LAST).contains(n))
}

/// The sysctl.d drop-in `apply --persist` writes on Linux, chosen against what is installed.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct DropIn {
    /// Under the root, e.g. `ROOT/etc/sysctl.d/71-tcptune.conf`.
    pub path: PathBuf,
    /// `71-tcptune.conf`.
    pub name: String,
    /// One line: why this number, and the files that could not be checked.
    pub why: String,
    /// One line per (file, line) read at boot after the chosen file that sets one of the keys:
    /// `PATH:LINE sets KEY = VALUE; it is read after NAME and wins at boot`.
    pub overridden_by: Vec<String>,
    /// The installed files that could not be read, so not checked for the keys (unreadable
    /// to this user, not a regular file, too large), in the order applied.
    pub unchecked: Vec<host::Unchecked>,
}

impl DropIn {
    /// One warning per file of `unchecked`, saying what it means for this drop-in.
    pub fn unchecked_warnings(&self) -> Vec<String> {
        let main = self
            .path
            .parent()
            .and_then(Path::parent)
            .map(|etc| etc.join("sysctl.conf"));
        self.unchecked
            .iter()
            .map(|u| {
                let later = Some(&u.path) == main.as_ref() || file_name(&u.path) > self.name.as_bytes();
                unchecked_warning(u, &self.name, later)
            })
            .collect()
    }

    /// Every warning: the files that win over the drop-in, then those not checked.
    pub fn warnings(&self) -> Vec<String> {
        let mut w = self.overridden_by.clone();
        w.extend(self.unchecked_warnings());
        w
    }
}

/// What a file not checked means for the drop-in `ours`; `later`: read at boot after it.
fn unchecked_warning(u: &host::Unchecked, ours: &str, later: bool) -> String {
    let path = crate::text::escape(&u.path.display().to_string());
    match &u.why {
        host::Unread::NotRegular(kind @ ("a FIFO" | "a character device" | "a block device")) => format!(
            "{path}: it is {kind}, not a regular file: not read; the boot-time loaders can hang on it \
             (procps `sysctl --system` and systemd-sysctl block on a FIFO and read a device without end): remove it"
        ),
        host::Unread::NotRegular(_) => format!("{path}: {}: not read, and the loaders read no settings from it", u.why),
        why if later => format!(
            "could not check {path} ({why}); it is read after {ours}: if it sets one of these keys, it wins at boot"
        ),
        why => format!("could not check {path} ({why}); {ours} is read after it, so it wins whatever that file sets"),
    }
}

/// The drop-in to name when the installed files are not known (advice for another system):
/// 60, after the distributions' `50-*` files.
pub fn unknown_dropin() -> DropIn {
    let name = "60-tcptune.conf".to_string();
    DropIn {
        path: Path::new("/").join(SYSCTL_D).join(&name),
        why: "after systemd's 50-default.conf and the distributions' 50-* files; the target's installed files are not known here".into(),
        name,
        overridden_by: Vec::new(),
        unchecked: Vec::new(),
    }
}

/// The file name's bytes, as the loaders compare names (strcmp).
fn file_name(p: &Path) -> &[u8] {
    use std::os::unix::ffi::OsStrExt as _;
    p.file_name().map_or(&[][..], std::ffi::OsStr::as_bytes)
}

/// The file name for a message.
fn name_shown(p: &Path) -> String {
    crate::text::escape(&String::from_utf8_lossy(file_name(p)))
}

/// Linux: the sysctl.d drop-in to keep `keys` in, numbered against this machine's installed
/// files (under `root`) when the advice is for this machine (`here`); None on other systems.
pub fn dropin_for(os: crate::os::Os, here: bool, root: &Path, keys: &[&str]) -> Option<DropIn> {
    if os != crate::os::Os::Linux {
        return None;
    }
    Some(if here {
        choose_dropin(root, keys)
    } else {
        unknown_dropin()
    })
}

/// The drop-in under `root` for `keys`, numbered so that what is installed does not undo it.
///
/// The files are [`host::sysctl_conf_files`], in the order systemd-sysctl and procps
/// `sysctl --system` read them at boot: the sysctl.d directories merged by file name (an
/// earlier directory masks the same name in a later one), sorted by name byte for byte, then
/// /etc/sysctl.conf. They are read as those loaders read them ([`host::read_sysctl_conf_files`]):
/// bytes, so a Latin-1 comment hides no key. A later file wins whatever it says, so a
/// *conflict* is any file, other than tcptune's own `etc/sysctl.d/NN-tcptune.conf`, with a line
/// that sets one of `keys` — or that may: a file that could not be read here (root reads it at
/// boot) counts as one, and is named in `unchecked` and in the reason. A file that is not a
/// regular one sets nothing; it is named too, since the loaders can hang on it.
///
/// The choice is `NN-tcptune.conf`, NN two digits from 60 (after systemd's `50-default.conf`
/// and the distributions' `50-*` files, before the local `99-sysctl.conf`) to 99:
/// * tcptune's existing drop-in with the highest NN, if it sorts after every conflicting
///   sysctl.d file name (`apply --persist` keeps adding to one file);
/// * else the smallest NN whose name sorts after every conflicting sysctl.d file name, skipping
///   a name another sysctl.d directory holds (the new file would mask that one);
/// * else 99: the conflicts that sort after it stay in `overridden_by`.
///
/// /etc/sysctl.conf, and a sysctl.d entry that is a symlink to it (Debian's `99-sysctl.conf`),
/// are not beaten by number: procps reads /etc/sysctl.conf last. What they set is in
/// `overridden_by` with every other file read after the chosen one.
pub fn choose_dropin(root: &Path, keys: &[&str]) -> DropIn {
    let dir = root.join(SYSCTL_D);
    let main = root.join("etc/sysctl.conf");
    let files = host::read_sysctl_conf_files(root);
    let setters = setters(files.read, keys);
    let own = |p: &Path| {
        p.parent() == Some(dir.as_path()) && std::str::from_utf8(file_name(p)).is_ok_and(|n| dropin_number(n).is_some())
    };
    let bar = last_conflict(&setters, &files.unchecked, |p| p != main && !own(p));
    let (nn, mut why) = pick_number(root, &dir, bar);
    if !files.unchecked.is_empty() {
        let names: Vec<String> = files
            .unchecked
            .iter()
            .map(|u| format!("{} ({})", name_shown(&u.path), u.why))
            .collect();
        why.push_str(&format!("; could not check {}", names.join(", ")));
    }

    let name = dropin_name(nn);
    // Read after ours: a sysctl.d name that sorts after it, and /etc/sysctl.conf.
    let later: Vec<(PathBuf, Vec<host::ConfLine>)> = setters
        .into_iter()
        .filter(|(p, _)| *p == main || file_name(p) > name.as_bytes())
        .collect();
    DropIn {
        path: dir.join(&name),
        overridden_by: override_lines(&later, &name),
        unchecked: files.unchecked,
        name,
        why,
    }
}

/// The conflicting sysctl.d file that sorts last among those that `counts`: one that sets the
/// keys, or one that could not be read and may. Its name, and how to say why.
fn last_conflict(
    setters: &[(PathBuf, Vec<host::ConfLine>)],
    unchecked: &[host::Unchecked],
    counts: impl Fn(&Path) -> bool,
) -> Option<(Vec<u8>, String)> {
    let set = setters.iter().filter(|(p, _)| counts(p)).map(|(p, lines)| {
        let mut ks: Vec<&str> = Vec::new();
        for l in lines {
            if !ks.contains(&l.key.as_str()) {
                ks.push(&l.key);
            }
        }
        (file_name(p), format!("{}, which sets {}", name_shown(p), ks.join(", ")))
    });
    let may = unchecked
        .iter()
        .filter(|u| u.why.may_set_keys() && counts(&u.path))
        .map(|u| {
            (
                file_name(&u.path),
                format!("{}, which could not be checked", name_shown(&u.path)),
            )
        });
    set.chain(may)
        .max_by(|a, b| a.0.cmp(b.0))
        .map(|(name, why)| (name.to_vec(), why))
}

/// The drop-in's number, and why: tcptune's existing drop-in when it sorts after `bar`, else
/// the first free number that does and masks no file of another sysctl.d directory, else 99.
fn pick_number(root: &Path, dir: &Path, bar: Option<(Vec<u8>, String)>) -> (u8, String) {
    let beats = |name: &str| bar.as_ref().is_none_or(|(b, _)| name.as_bytes() > b.as_slice());
    let bar_why = bar.as_ref().map(|(_, why)| why.clone());
    let mut existing: Vec<u8> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| dropin_number(e.file_name().to_str()?))
        .collect();
    existing.sort_unstable();
    let masks = |name: &str| {
        host::SYSCTL_D_DIRS
            .iter()
            .filter(|d| **d != SYSCTL_D)
            .any(|d| std::fs::symlink_metadata(root.join(d).join(name)).is_ok())
    };
    if let Some(&nn) = existing.iter().rev().find(|&&n| beats(&dropin_name(n))) {
        let why = match &bar_why {
            Some(b) => format!("tcptune's existing drop-in, read after {b}"),
            None => "tcptune's existing drop-in; no other sysctl.d file sets these keys".to_string(),
        };
        (nn, why)
    } else if let Some(nn) = (FIRST..=LAST).find(|&n| beats(&dropin_name(n)) && !masks(&dropin_name(n))) {
        let skipped: Vec<String> = (FIRST..nn).map(dropin_name).filter(|n| beats(n) && masks(n)).collect();
        let mut why = match &bar_why {
            Some(b) => format!("read after {b}"),
            None => "after systemd's 50-default.conf and the distribution's 50-* files; no other sysctl.d file sets these keys"
                .to_string(),
        };
        if !skipped.is_empty() {
            why.push_str(&format!(
                " (not {}: another sysctl.d directory has that name, which the new file would mask)",
                skipped.join(", ")
            ));
        }
        (nn, why)
    } else {
        let why = match bar_why {
            Some(b) => format!("no NN-tcptune.conf sorts after {b}: 99 is the last number, and that file still wins"),
            None => "every other NN-tcptune.conf name is taken in another sysctl.d directory".to_string(),
        };
        (LAST, why)
    }
}

/// The file that holds runtime sysctls at boot, under `root`. Linux: the drop-in
/// [`choose_dropin`] picks for `keys`.
pub fn sysctl_file(os: Os, root: &Path, keys: &[&str]) -> PathBuf {
    match os {
        Os::Linux => choose_dropin(root, keys).path,
        Os::Freebsd | Os::Macos => root.join("etc/sysctl.conf"),
    }
}

/// Each of `files` (path, bytes) that sets one of `keys`, with those lines.
pub(crate) fn setters(files: Vec<(PathBuf, Vec<u8>)>, keys: &[&str]) -> Vec<(PathBuf, Vec<host::ConfLine>)> {
    files
        .into_iter()
        .filter_map(|(p, text)| {
            let lines: Vec<host::ConfLine> = host::conf_lines(&text)
                .into_iter()
                .filter(|l| keys.contains(&l.key.as_str()))
                .collect();
            (!lines.is_empty()).then_some((p, lines))
        })
        .collect()
}

/// One warning per line of `later` (files read after `ours`).
fn override_lines(later: &[(PathBuf, Vec<host::ConfLine>)], ours: &str) -> Vec<String> {
    setter_lines(later, &format!("it is read after {ours} and wins at boot"))
}

/// One line per setting of `setters`: `PATH:LINE sets KEY = VALUE; {why}` (the path and the
/// value, text from files tcptune does not own, escaped).
pub(crate) fn setter_lines(setters: &[(PathBuf, Vec<host::ConfLine>)], why: &str) -> Vec<String> {
    setters
        .iter()
        .flat_map(|(p, lines)| {
            let p = crate::text::escape(&p.display().to_string());
            lines
                .iter()
                .map(move |l| format!("{p}:{} sets {} = {}; {why}", l.line, l.key, l.value))
        })
        .collect()
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

/// The text of a file tcptune persists to (None: absent), read as the sysctl.d files are
/// (a regular file, bounded, never blocking), and kept as text: a snapshot records it so that
/// `revert` can put it back exactly.
pub fn read_persisted(path: &Path) -> std::io::Result<Option<String>> {
    match crate::input::read_bounded(path, host::MAX_CONF_BYTES) {
        Ok(bytes) => String::from_utf8(bytes).map(Some).map_err(|_| {
            std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                "it is not UTF-8 text, which tcptune records to restore it exactly (a Latin-1 comment?)",
            )
        }),
        Err(crate::input::Refused::Io(e)) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(crate::input::Refused::Io(e)) => Err(e),
        Err(r) => Err(std::io::Error::other(r.to_string())),
    }
}

/// The change that appends `block` to `path` (read now).
pub fn append(path: &Path, block: &str) -> std::io::Result<FileChange> {
    // Write through a symlink (/etc/sysctl.conf is one on some systems) to its target.
    let path = match std::fs::canonicalize(path) {
        Ok(p) => p,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => path.to_path_buf(),
        Err(e) => return Err(e),
    };
    let before = read_persisted(&path)?;
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
    // A file that cannot be read adds every line; appending to it then says why it cannot.
    let text = host::read_conf_file(path).unwrap_or_default();
    let mut last: BTreeMap<String, String> = BTreeMap::new();
    for l in host::conf_lines(&text) {
        last.insert(l.key, crate::sysctl::normalize_value(l.value.raw().trim_matches('"')));
    }
    wanted
        .iter()
        .filter(|(k, v)| {
            last.get(k)
                .is_none_or(|have| *have != crate::sysctl::normalize_value(v.trim_matches('"')))
        })
        .cloned()
        .collect()
}

/// Files read at boot *after* tcptune's that set one of `keys`: they win. One warning each.
/// Linux: [`choose_dropin`]'s `overridden_by`; FreeBSD: /etc/sysctl.conf.local, which
/// rc.d/sysctl reads after /etc/sysctl.conf; macOS: none.
pub fn overrides(os: Os, root: &Path, keys: &[&str]) -> Vec<String> {
    match os {
        Os::Linux => choose_dropin(root, keys).overridden_by,
        Os::Freebsd => {
            let local = root.join("etc/sysctl.conf.local");
            if !local.exists() {
                return Vec::new();
            }
            match host::read_conf_file(&local) {
                Ok(text) => override_lines(&setters(vec![(local, text)], keys), "sysctl.conf"),
                Err(why) => vec![unchecked_warning(
                    &host::Unchecked { path: local, why },
                    "sysctl.conf",
                    true,
                )],
            }
        }
        Os::Macos => Vec::new(),
    }
}

/// The files `apply --persist` may write under `root` for `os`, as named and as resolved
/// (apply writes through a symlink such as /etc/sysctl.conf -> sysctl.d/99-sysctl.conf).
/// Linux: every name [`choose_dropin`] can pick, `etc/sysctl.d/NN-tcptune.conf` with NN from
/// 60 to 99 (60 is the one tcptune always used before, so older snapshots still revert).
pub fn allowed_files(os: Os, root: &Path) -> Vec<PathBuf> {
    let named: Vec<PathBuf> = match os {
        Os::Linux => (FIRST..=LAST)
            .map(|n| root.join(SYSCTL_D).join(dropin_name(n)))
            .collect(),
        Os::Freebsd => vec![root.join("etc/sysctl.conf"), loader_file(root)],
        Os::Macos => vec![root.join("etc/sysctl.conf")],
    };
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
    let path = crate::sysctl::file::excerpt(&path);
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
            crate::sysctl::file::check_key(k, os)
                .and_then(|()| crate::sysctl::file::check_value(k, v, os).map(drop))?;
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

    /// A file under `root`, its directories made.
    fn put(root: &Path, rel: &str, text: &str) {
        let p = root.join(rel);
        std::fs::create_dir_all(p.parent().expect("parent")).expect("mkdir");
        std::fs::write(p, text).expect("write");
    }

    const RMEM: &str = "net.ipv4.tcp_rmem";
    const KEYS: [&str; 2] = ["net.ipv4.tcp_rmem", "net.ipv4.tcp_wmem"];

    #[test]
    fn the_drop_in_is_numbered_after_what_sets_the_same_keys() {
        // Nothing installed: 60, after systemd's 50-default.conf.
        let root = tempfile::tempdir().expect("tempdir");
        let r = root.path();
        let d = choose_dropin(r, &KEYS);
        assert_eq!(d.name, "60-tcptune.conf");
        assert_eq!(d.path, r.join("etc/sysctl.d/60-tcptune.conf"));
        assert!(d.why.contains("50-default.conf"), "{}", d.why);
        assert!(d.overridden_by.is_empty());

        // Files that set other keys, early files, comments: still 60.
        put(r, "usr/lib/sysctl.d/50-default.conf", "net.ipv4.tcp_sack = 1\n");
        put(
            r,
            "etc/sysctl.d/80-other.conf",
            "# net.ipv4.tcp_rmem = 1 2 3\nnet.core.rmem_max = 1\n",
        );
        put(r, "usr/lib/sysctl.d/55-early.conf", "net.ipv4.tcp_rmem = 1 2 3\n");
        assert_eq!(choose_dropin(r, &KEYS).name, "60-tcptune.conf");

        // A conflict at 70: 71, which sorts after 70-x.conf; the reason names the file and key.
        put(r, "etc/sysctl.d/70-x.conf", "-net/ipv4/tcp_rmem = 4096 87380 6291456\n");
        let d = choose_dropin(r, &KEYS);
        assert_eq!(d.name, "71-tcptune.conf");
        assert_eq!(d.why, "read after 70-x.conf, which sets net.ipv4.tcp_rmem");
        assert!(d.overridden_by.is_empty(), "{:?}", d.overridden_by);
        // Byte order, as the loaders sort: 70-tcptune.conf already sorts after 70-abc.conf.
        assert_eq!(choose_dropin(r, &["net.core.rmem_max"]).name, "80-tcptune.conf");
        put(r, "run/sysctl.d/70-abc.conf", "net.ipv4.tcp_wmem = 1 2 3\n");
        assert_eq!(choose_dropin(r, &["net.ipv4.tcp_wmem"]).name, "70-tcptune.conf");
        // A name another directory holds is skipped: the new file would mask it.
        put(r, "usr/lib/sysctl.d/71-tcptune.conf", "net.core.somaxconn = 4096\n");
        let d = choose_dropin(r, &KEYS);
        assert_eq!(d.name, "72-tcptune.conf");
        assert!(d.why.contains("not 71-tcptune.conf"), "{}", d.why);
    }

    #[test]
    fn files_read_as_the_loaders_read_them_and_those_not_read_are_named() {
        let root = tempfile::tempdir().expect("tempdir");
        let r = root.path();
        let d = r.join("etc/sysctl.d");
        std::fs::create_dir_all(&d).expect("mkdir");
        // `# Müller` in ISO-8859-1: its key counts, as procps and systemd-sysctl apply it.
        std::fs::write(d.join("70-x-latin1.conf"), b"# M\xfcller\nnet.ipv4.tcp_rmem = 1 2 3\n").expect("write");
        let dropin = choose_dropin(r, &KEYS);
        assert_eq!(dropin.name, "71-tcptune.conf");
        assert_eq!(dropin.why, "read after 70-x-latin1.conf, which sets net.ipv4.tcp_rmem");
        assert!(dropin.unchecked.is_empty() && dropin.warnings().is_empty());
        // A FIFO and a link to /dev/zero set nothing: named, not read, never waited on.
        let fifo = d.join("80-fifo.conf");
        let c = std::ffi::CString::new(fifo.to_str().expect("utf8")).expect("cstr");
        // SAFETY: a valid NUL-terminated path this test owns.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o644) }, 0);
        std::os::unix::fs::symlink("/dev/zero", d.join("85-zero.conf")).expect("symlink");
        let dropin = choose_dropin(r, &KEYS);
        assert_eq!(dropin.name, "71-tcptune.conf");
        assert!(
            dropin.why.ends_with(
                "; could not check 80-fifo.conf (it is a FIFO, not a regular file), \
                 85-zero.conf (it is a character device, not a regular file)"
            ),
            "{}",
            dropin.why
        );
        let w = dropin.warnings();
        assert_eq!(w.len(), 2, "{w:?}");
        assert!(w[0].starts_with(&format!("{}: it is a FIFO", fifo.display())), "{w:?}");
        assert!(
            w[1].contains("85-zero.conf: it is a character device") && w[1].contains("remove it"),
            "{w:?}"
        );
        // A file that cannot be read may set the keys: the drop-in is numbered after it.
        std::os::unix::fs::symlink("90-x-loop.conf", d.join("90-x-loop.conf")).expect("symlink");
        let dropin = choose_dropin(r, &KEYS);
        assert_eq!(dropin.name, "91-tcptune.conf");
        assert!(
            dropin
                .why
                .starts_with("read after 90-x-loop.conf, which could not be checked; could not check "),
            "{}",
            dropin.why
        );
        assert!(
            dropin.warnings()[2].ends_with("; 91-tcptune.conf is read after it, so it wins whatever that file sets"),
            "{:?}",
            dropin.warnings()
        );
        // One read after the last number: it may win, and says so.
        std::os::unix::fs::symlink("zz-loop.conf", d.join("zz-loop.conf")).expect("symlink");
        let dropin = choose_dropin(r, &KEYS);
        assert_eq!(dropin.name, "99-tcptune.conf");
        assert!(
            dropin.warnings()[3]
                .ends_with("; it is read after 99-tcptune.conf: if it sets one of these keys, it wins at boot"),
            "{:?}",
            dropin.warnings()
        );
        let json = serde_json::to_value(&dropin).expect("json");
        assert_eq!(json["unchecked"][0]["file"], fifo.display().to_string());
        assert_eq!(json["unchecked"][0]["why"], "it is a FIFO, not a regular file");
    }

    #[test]
    fn a_persisted_file_that_is_not_a_regular_one_is_refused_not_waited_on() {
        let root = tempfile::tempdir().expect("tempdir");
        let fifo = root.path().join("60-tcptune.conf");
        let c = std::ffi::CString::new(fifo.to_str().expect("utf8")).expect("cstr");
        // SAFETY: a valid NUL-terminated path this test owns.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o644) }, 0);
        let e = append(&fifo, "x\n").expect_err("a FIFO");
        assert_eq!(e.to_string(), "it is a FIFO, not a regular file");
        assert_eq!(missing(&fifo, &[kv(RMEM, "1 2 3")]).len(), 1);
        let latin1 = root.path().join("61-tcptune.conf");
        std::fs::write(&latin1, b"# M\xfcller\n").expect("write");
        let e = append(&latin1, "x\n").expect_err("not UTF-8");
        assert!(e.to_string().contains("not UTF-8"), "{e}");
    }

    #[test]
    fn a_conflict_masked_by_an_earlier_directory_does_not_count() {
        let root = tempfile::tempdir().expect("tempdir");
        let r = root.path();
        put(r, "usr/lib/sysctl.d/80-y.conf", "net.ipv4.tcp_rmem = 1 2 3\n");
        assert_eq!(choose_dropin(r, &KEYS).name, "81-tcptune.conf");
        put(r, "etc/sysctl.d/80-y.conf", "net.core.somaxconn = 4096\n");
        let d = choose_dropin(r, &KEYS);
        assert_eq!(d.name, "60-tcptune.conf");
        assert!(d.overridden_by.is_empty(), "{:?}", d.overridden_by);
    }

    #[test]
    fn etc_sysctl_conf_is_not_beaten_by_number() {
        // Debian: /etc/sysctl.d/99-sysctl.conf -> ../sysctl.conf, which procps also reads last.
        let root = tempfile::tempdir().expect("tempdir");
        let r = root.path();
        put(
            r,
            "etc/sysctl.conf",
            "# local\nnet.ipv4.tcp_rmem = 4096 87380 6291456\n",
        );
        std::fs::create_dir_all(r.join("etc/sysctl.d")).expect("mkdir");
        std::os::unix::fs::symlink("../sysctl.conf", r.join("etc/sysctl.d/99-sysctl.conf")).expect("symlink");
        let d = choose_dropin(r, &KEYS);
        assert_eq!(d.name, "60-tcptune.conf");
        assert_eq!(
            d.overridden_by,
            vec![format!(
                "{}:2 sets net.ipv4.tcp_rmem = 4096 87380 6291456; it is read after 60-tcptune.conf and wins at boot",
                r.join("etc/sysctl.conf").display()
            )]
        );
        assert_eq!(overrides(Os::Linux, r, &KEYS), d.overridden_by, "one implementation");
    }

    #[test]
    fn a_name_no_number_beats_gets_99_and_a_warning() {
        let root = tempfile::tempdir().expect("tempdir");
        let r = root.path();
        put(r, "etc/sysctl.d/70-x.conf", "net.ipv4.tcp_rmem = 1 2 3\n");
        put(
            r,
            "etc/sysctl.d/zz-local.conf",
            "net.ipv4.tcp_wmem = 4 5 6\nnet.ipv4.tcp_rmem = 7 8 9\n",
        );
        let d = choose_dropin(r, &KEYS);
        assert_eq!(d.name, "99-tcptune.conf");
        assert!(d.why.contains("zz-local.conf"), "{}", d.why);
        assert_eq!(d.overridden_by.len(), 2, "{:?}", d.overridden_by);
        assert!(
            d.overridden_by[0].ends_with(
                "zz-local.conf:1 sets net.ipv4.tcp_wmem = 4 5 6; it is read after 99-tcptune.conf and wins at boot"
            ),
            "{:?}",
            d.overridden_by
        );
        assert!(d.overridden_by[1].contains("zz-local.conf:2 sets net.ipv4.tcp_rmem"));
    }

    #[test]
    fn an_existing_drop_in_that_still_wins_is_kept() {
        let root = tempfile::tempdir().expect("tempdir");
        let r = root.path();
        put(r, "etc/sysctl.d/70-x.conf", "net.ipv4.tcp_rmem = 1 2 3\n");
        // tcptune's own files are no conflict; the highest that beats 70-x.conf is kept.
        put(r, "etc/sysctl.d/60-tcptune.conf", "net.ipv4.tcp_rmem = 4 5 6\n");
        put(r, "etc/sysctl.d/75-tcptune.conf", "net.ipv4.tcp_rmem = 4 5 6\n");
        put(r, "etc/sysctl.d/72-tcptune.conf", "");
        let d = choose_dropin(r, &KEYS);
        assert_eq!(d.name, "75-tcptune.conf");
        assert_eq!(
            d.why,
            "tcptune's existing drop-in, read after 70-x.conf, which sets net.ipv4.tcp_rmem"
        );
        // Outnumbered by a new conflict: a new file after it.
        put(r, "etc/sysctl.d/80-z.conf", "net.ipv4.tcp_wmem = 1 2 3\n");
        let d = choose_dropin(r, &KEYS);
        assert_eq!(d.name, "81-tcptune.conf");
        assert!(d.overridden_by.is_empty(), "{:?}", d.overridden_by);
        // Names that only look like tcptune's are ordinary files.
        put(r, "etc/sysctl.d/5-tcptune.conf", "");
        put(r, "etc/sysctl.d/85-tcptune.conf.bak", "net.ipv4.tcp_rmem = 1 2 3\n");
        put(r, "etc/sysctl.d/90-tcptune.local.conf", "net.ipv4.tcp_rmem = 1 2 3\n");
        assert_eq!(choose_dropin(r, &KEYS).name, "91-tcptune.conf");
    }

    #[test]
    fn freebsd_overrides_read_sysctl_conf_local() {
        let root = tempfile::tempdir().expect("tempdir");
        let r = root.path();
        put(
            r,
            "etc/sysctl.conf.local",
            "kern.ipc.maxsockbuf=1\nnet.inet.tcp.sendbuf_max=2\n",
        );
        put(r, "etc/sysctl.d/99-x.conf", "net.ipv4.tcp_rmem = 1 2 3\n");
        let w = overrides(Os::Freebsd, r, &["net.inet.tcp.sendbuf_max", RMEM]);
        assert_eq!(w.len(), 1, "{w:?}");
        assert!(
            w[0].ends_with(
                "sysctl.conf.local:2 sets net.inet.tcp.sendbuf_max = 2; it is read after sysctl.conf and wins at boot"
            ),
            "{w:?}"
        );
        assert!(overrides(Os::Macos, r, &[RMEM]).is_empty());
    }

    #[test]
    fn only_tcptunes_own_drop_ins_pass_the_record_check() {
        let root = tempfile::tempdir().expect("tempdir");
        let r = root.path();
        let b = block(Os::Linux, "0001-x", &[kv(RMEM, "4096 131072 20643840")], false);
        let record = |rel: &str| {
            let mut fc = append(&r.join(rel), &b).expect("append");
            fc.path = r.join(rel);
            check_record(Os::Linux, r, "0001-x", &fc)
        };
        assert_eq!(record("etc/sysctl.d/71-tcptune.conf"), Ok(()));
        assert_eq!(record("etc/sysctl.d/60-tcptune.conf"), Ok(()), "snapshots from before");
        assert_eq!(record("etc/sysctl.d/99-tcptune.conf"), Ok(()));
        for bad in [
            "etc/sysctl.d/71-other.conf",
            "etc/71-tcptune.conf",
            "etc/sysctl.d/59-tcptune.conf",
            "etc/sysctl.d/7-tcptune.conf",
            "etc/sysctl.d/100-tcptune.conf",
            "usr/lib/sysctl.d/71-tcptune.conf",
            "etc/sysctl.conf",
        ] {
            let e = record(bad).expect_err(bad);
            assert!(e.contains("is not a file tcptune persists to on linux"), "{bad}: {e}");
        }
        // Through a symlink: the resolved path is what apply records, and it passes too.
        put(r, "var/target.conf", "");
        std::fs::create_dir_all(r.join("etc/sysctl.d")).expect("mkdir");
        std::os::unix::fs::symlink(r.join("var/target.conf"), r.join("etc/sysctl.d/72-tcptune.conf")).expect("symlink");
        let fc = append(&r.join("etc/sysctl.d/72-tcptune.conf"), &b).expect("append");
        assert_eq!(
            fc.path,
            std::fs::canonicalize(r.join("var/target.conf")).expect("canon")
        );
        assert_eq!(check_record(Os::Linux, r, "0001-x", &fc), Ok(()));
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
