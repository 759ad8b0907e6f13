//! The snapshot store: one JSON file per `tcptune apply` under `STATE_DIR/snapshots/`,
//! written atomically (temp file, fsync, rename, fsync of the directory), and a lock file
//! (`STATE_DIR/lock`, flock(2)) that serialises the commands that change the kernel.
//!
//! A snapshot is written *before* the first kernel write, in state `applying`; an apply
//! that dies half-way leaves it so, and `revert` finds it.

use std::fs::{self, File, OpenOptions};
use std::io::Write as _;
use std::os::unix::fs::{DirBuilderExt as _, MetadataExt as _, OpenOptionsExt as _, PermissionsExt as _};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime};

use anyhow::Context as _;
use serde::{Deserialize, Serialize};

use crate::error::Error;
use crate::platform::Os;

/// Version of the snapshot file format.
pub const FORMAT: u32 = 1;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum State {
    /// Written before the first kernel write. Seen later, the apply was killed half-way:
    /// some keys may hold the new value.
    Applying,
    /// Every change was made (and read back).
    Applied,
    /// A write failed and every change made before it was undone.
    RolledBack,
    /// `tcptune revert` restored the prior values.
    Reverted,
}

impl State {
    pub const fn name(self) -> &'static str {
        match self {
            Self::Applying => "applying",
            Self::Applied => "applied",
            Self::RolledBack => "rolled-back",
            Self::Reverted => "reverted",
        }
    }

    /// The kernel may still hold values from this snapshot.
    pub const fn needs_revert(self) -> bool {
        matches!(self, Self::Applying | Self::Applied)
    }
}

/// One key this apply changes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Change {
    pub key: String,
    /// The running value before the apply (whitespace folded, as read).
    pub prior: String,
    /// The value tcptune writes.
    pub new: String,
    /// What the kernel reported after the write, when it differs from `new` (clamped or rounded).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub applied: Option<String>,
}

impl Change {
    /// The value the key should hold while this snapshot is in effect.
    pub fn in_effect(&self) -> &str {
        self.applied.as_deref().unwrap_or(&self.new)
    }
}

/// A file `--persist` changed. `before` is the whole content before (None: it did not
/// exist), `after` the whole content tcptune wrote, `block` the text it added.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileChange {
    pub path: PathBuf,
    pub before: Option<String>,
    pub after: String,
    pub block: String,
}

/// Where and when: a snapshot belongs to one kernel boot and one network namespace.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Identity {
    pub hostname: String,
    /// Inode of /proc/self/ns/net (Linux); null elsewhere.
    pub netns: Option<u64>,
    /// /proc/sys/kernel/random/boot_id (Linux), kern.boottime (FreeBSD, macOS).
    pub boot_id: Option<String>,
}

impl Identity {
    /// The running system's identity.
    pub fn current(os: Os) -> Self {
        let hostname = sysinfo::System::host_name().unwrap_or_default();
        let netns = fs::metadata("/proc/self/ns/net").ok().map(|m| m.ino());
        let boot_id = if Os::running() == Os::Linux {
            fs::read_to_string("/proc/sys/kernel/random/boot_id")
                .ok()
                .map(|s| s.trim().to_string())
        } else if Os::running() == os {
            std::process::Command::new("sysctl")
                .args(["-n", "kern.boottime"])
                .output()
                .ok()
                .filter(|o| o.status.success())
                .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        } else {
            None
        };
        Self {
            hostname,
            netns,
            boot_id: boot_id.filter(|b| !b.is_empty()),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Event {
    pub time: String,
    pub what: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Snapshot {
    pub format: u32,
    pub id: String,
    /// Orders snapshots; one more than the highest in the store.
    pub seq: u64,
    /// RFC 3339, UTC.
    pub created: String,
    pub tcptune_version: String,
    pub os: Os,
    /// Where the values live: "/proc/sys", a `--sysctl-dir`, or the sysctl(8) program.
    pub target: String,
    #[serde(flatten)]
    pub identity: Identity,
    /// What was applied: "file PATH", "stdin", or the advice's path.
    pub source: String,
    pub state: State,
    pub changes: Vec<Change>,
    #[serde(default)]
    pub persist: Vec<FileChange>,
    /// `apply --for`: when the timer reverts it, and the timer's process id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timer_pid: Option<u32>,
    #[serde(default)]
    pub events: Vec<Event>,
}

impl Snapshot {
    pub fn new(seq: u64, os: Os, target: String, identity: Identity, source: String) -> Self {
        let now = SystemTime::now();
        let stamp = humantime::format_rfc3339_seconds(now).to_string();
        // 2026-11-22T05:11:00Z → 20261122T051100Z
        let compact: String = stamp.chars().filter(|c| *c != '-' && *c != ':').collect();
        Self {
            format: FORMAT,
            id: format!("{seq:04}-{compact}"),
            seq,
            created: stamp,
            tcptune_version: env!("CARGO_PKG_VERSION").to_string(),
            os,
            target,
            identity,
            source,
            state: State::Applying,
            changes: Vec::new(),
            persist: Vec::new(),
            expires: None,
            timer_pid: None,
            events: Vec::new(),
        }
    }

    /// Set the state and note it in the history.
    pub fn mark(&mut self, state: State, what: impl Into<String>) {
        self.state = state;
        self.note(what);
    }

    pub fn note(&mut self, what: impl Into<String>) {
        self.events.push(Event {
            time: humantime::format_rfc3339_seconds(SystemTime::now()).to_string(),
            what: what.into(),
        });
    }

    /// Whether this snapshot's runtime values belong to the running kernel boot.
    pub fn same_boot(&self, now: &Identity) -> bool {
        match (&self.identity.boot_id, &now.boot_id) {
            (Some(a), Some(b)) => a == b,
            _ => true,
        }
    }

    /// Whether this snapshot was taken with the same OS, target and network namespace.
    pub fn same_place(&self, os: Os, target: &str, now: &Identity) -> bool {
        self.os == os && self.target == target && self.identity.netns == now.netns
    }
}

/// A file in the store that is not a snapshot this tcptune can read: (path, why).
pub type Unreadable = (PathBuf, String);

/// The state directory.
pub struct Store {
    dir: PathBuf,
}

/// Holds the store's lock until dropped (closing the file releases the flock).
#[derive(Debug)]
pub struct Lock {
    _file: File,
}

impl Store {
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        Self { dir: dir.into() }
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    fn snapshots_dir(&self) -> PathBuf {
        self.dir.join("snapshots")
    }

    fn path_of(&self, id: &str) -> PathBuf {
        self.snapshots_dir().join(format!("{id}.json"))
    }

    /// Create the directories (0755: every user may list snapshots) and refuse a state
    /// directory that others could write to: its snapshots say what `revert` writes.
    pub fn ensure(&self) -> anyhow::Result<()> {
        for d in [self.dir.clone(), self.snapshots_dir()] {
            if !d.exists() {
                fs::DirBuilder::new()
                    .recursive(true)
                    .mode(0o755)
                    .create(&d)
                    .map_err(|e| io_error(&e, &format!("cannot create the state directory {}", d.display())))?;
            }
            let m = fs::metadata(&d).with_context(|| format!("{}", d.display()))?;
            if !m.is_dir() {
                return Err(Error::usage(format!("state directory {} is not a directory", d.display())).into());
            }
            if m.mode() & 0o022 != 0 {
                return Err(Error::not_permitted(format!(
                    "refusing the state directory {}: it is writable by group or others (mode {:o}), so anyone could plant a snapshot for revert to write",
                    d.display(),
                    m.mode() & 0o7777
                ))
                .with_hint(format!("chmod go-w {}", d.display()))
                .into());
            }
        }
        Ok(())
    }

    /// Take the lock, waiting up to `wait` (zero: refuse at once). `on_wait` is called once
    /// with the holder's pid, if known, when the lock is busy.
    pub fn lock(&self, wait: Duration, on_wait: &dyn Fn(Option<u32>)) -> anyhow::Result<Lock> {
        let path = self.dir.join("lock");
        let mut file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .mode(0o644)
            .open(&path)
            .map_err(|e| io_error(&e, &format!("cannot open the lock file {}", path.display())))?;
        let start = Instant::now();
        let mut told = false;
        loop {
            if try_flock(&file)? {
                // The holder's pid, for the message another tcptune prints while it waits.
                file.set_len(0)?;
                writeln!(file, "{}", std::process::id())?;
                return Ok(Lock { _file: file });
            }
            let holder = fs::read_to_string(&path).ok().and_then(|s| s.trim().parse().ok());
            if start.elapsed() >= wait {
                let who = holder.map_or_else(String::new, |p| format!(" (pid {p})"));
                return Err(Error::not_permitted(format!(
                    "another tcptune{who} is changing the kernel (lock {} is held){}",
                    path.display(),
                    if wait.is_zero() {
                        String::new()
                    } else {
                        format!("; gave up after {} s", wait.as_secs_f64())
                    }
                ))
                .with_hint("wait for it to finish, then run the command again (--wait SECS waits longer)")
                .into());
            }
            if !told {
                on_wait(holder);
                told = true;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Write a snapshot atomically.
    pub fn save(&self, snap: &Snapshot) -> anyhow::Result<()> {
        let mut text = serde_json::to_string_pretty(snap)?;
        text.push('\n');
        write_atomic(&self.path_of(&snap.id), text.as_bytes(), 0o644)
            .map_err(|e| io_error(&e, &format!("cannot write snapshot {}", snap.id)))
    }

    /// Every snapshot, oldest first, and the files that could not be read.
    pub fn list(&self) -> anyhow::Result<(Vec<Snapshot>, Vec<Unreadable>)> {
        let dir = self.snapshots_dir();
        let entries = match fs::read_dir(&dir) {
            Ok(e) => e,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok((Vec::new(), Vec::new())),
            Err(e) => return Err(io_error(&e, &format!("cannot read {}", dir.display()))),
        };
        let mut snaps = Vec::new();
        let mut bad = Vec::new();
        for entry in entries {
            let path = entry?.path();
            let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
            // Temp files of a write in progress (or killed) start with '.'.
            if name.starts_with('.') || !name.ends_with(".json") {
                continue;
            }
            match load_file(&path) {
                Ok(s) => snaps.push(s),
                Err(why) => bad.push((path, why)),
            }
        }
        snaps.sort_by(|a, b| a.seq.cmp(&b.seq).then_with(|| a.id.cmp(&b.id)));
        Ok((snaps, bad))
    }

    /// One more than the highest sequence number in the store.
    pub fn next_seq(&self) -> anyhow::Result<u64> {
        let (snaps, bad) = self.list()?;
        let from_names = bad
            .iter()
            .filter_map(|(p, _)| p.file_name()?.to_str()?.split('-').next()?.parse::<u64>().ok());
        Ok(snaps.iter().map(|s| s.seq).chain(from_names).max().unwrap_or(0) + 1)
    }

    /// A snapshot by id, by a unique prefix of its id, or by its sequence number ("3").
    pub fn find(&self, query: &str) -> anyhow::Result<Snapshot> {
        let (snaps, _) = self.list()?;
        if let Ok(seq) = query.parse::<u64>()
            && let Some(s) = snaps.iter().find(|s| s.seq == seq)
        {
            return Ok(s.clone());
        }
        let hits: Vec<&Snapshot> = snaps.iter().filter(|s| s.id.starts_with(query)).collect();
        match hits.as_slice() {
            [one] => Ok((*one).clone()),
            [] => Err(
                Error::usage(format!("no snapshot {query} in {}", self.snapshots_dir().display()))
                    .with_hint("tcptune snapshots lists them")
                    .into(),
            ),
            many => Err(Error::usage(format!(
                "{query} matches {} snapshots: {}",
                many.len(),
                many.iter().map(|s| s.id.as_str()).collect::<Vec<_>>().join(", ")
            ))
            .into()),
        }
    }
}

fn load_file(path: &Path) -> Result<Snapshot, String> {
    let text = fs::read_to_string(path).map_err(|e| e.to_string())?;
    let s: Snapshot = serde_json::from_str(&text).map_err(|e| format!("not a tcptune snapshot: {e}"))?;
    if s.format > FORMAT {
        return Err(format!(
            "format {} is newer than this tcptune understands ({FORMAT})",
            s.format
        ));
    }
    if path.file_stem().and_then(|n| n.to_str()) != Some(s.id.as_str()) {
        return Err(format!("its id {} does not match the file name", s.id));
    }
    Ok(s)
}

/// Map an I/O error to what a user can act on: permission problems exit 3.
pub fn io_error(e: &std::io::Error, what: &str) -> anyhow::Error {
    match e.kind() {
        std::io::ErrorKind::PermissionDenied | std::io::ErrorKind::ReadOnlyFilesystem => {
            Error::not_permitted(format!("{what}: {e}"))
                .with_hint("changing kernel settings needs root (sudo); --state-dir DIR puts snapshots elsewhere")
                .into()
        }
        _ => anyhow::anyhow!("{what}: {e}"),
    }
}

fn try_flock(f: &File) -> anyhow::Result<bool> {
    use std::os::fd::AsRawFd as _;
    // SAFETY: the descriptor is open for the life of `f`; flock only takes the lock.
    let r = unsafe { libc::flock(f.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
    if r == 0 {
        return Ok(true);
    }
    let e = std::io::Error::last_os_error();
    if e.kind() == std::io::ErrorKind::WouldBlock {
        Ok(false)
    } else {
        Err(anyhow::anyhow!("flock: {e}"))
    }
}

/// Replace `path` with `bytes` so that a crash leaves either the old or the new content:
/// write a temp file beside it, fsync it, rename it over `path`, fsync the directory.
/// A new file gets `mode`; an existing one keeps its own.
pub fn write_atomic(path: &Path, bytes: &[u8], mode: u32) -> std::io::Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("file");
    let mode = fs::metadata(path).map_or(mode, |m| m.mode() & 0o7777);
    let tmp = dir.join(format!(".{name}.tcptune-{}.tmp", std::process::id()));
    let result = (|| {
        let mut f = OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(mode)
            .open(&tmp)?;
        f.write_all(bytes)?;
        f.set_permissions(fs::Permissions::from_mode(mode))?;
        f.sync_all()?;
        drop(f);
        fs::rename(&tmp, path)?;
        File::open(dir)?.sync_all()
    })();
    if result.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    result
}

/// Remove a file and make the removal durable.
pub fn remove_durably(path: &Path) -> std::io::Result<()> {
    fs::remove_file(path)?;
    File::open(path.parent().unwrap_or(Path::new(".")))?.sync_all()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ident() -> Identity {
        Identity {
            hostname: "h".into(),
            netns: Some(7),
            boot_id: Some("b1".into()),
        }
    }

    fn snap(store: &Store) -> Snapshot {
        let mut s = Snapshot::new(
            store.next_seq().expect("seq"),
            Os::Linux,
            "/proc/sys".into(),
            ident(),
            "file x".into(),
        );
        s.changes.push(Change {
            key: "net.ipv4.tcp_rmem".into(),
            prior: "4096 131072 6291456".into(),
            new: "4096 131072 20643840".into(),
            applied: None,
        });
        s
    }

    fn store() -> (tempfile::TempDir, Store) {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = Store::new(dir.path().join("state"));
        store.ensure().expect("ensure");
        (dir, store)
    }

    #[test]
    fn save_list_find_roundtrip() {
        let (_d, store) = store();
        assert_eq!(store.list().expect("list").0, vec![]);
        let mut a = snap(&store);
        store.save(&a).expect("save");
        let b = snap(&store);
        store.save(&b).expect("save");
        assert_eq!((a.seq, b.seq), (1, 2));
        assert!(a.id.starts_with("0001-") && a.id.ends_with('Z'), "{}", a.id);
        let (all, bad) = store.list().expect("list");
        assert!(bad.is_empty());
        assert_eq!(all, vec![a.clone(), b.clone()]);
        a.mark(State::Applied, "applied");
        store.save(&a).expect("save");
        assert_eq!(store.find("1").expect("by seq").state, State::Applied);
        assert_eq!(store.find(&b.id).expect("by id"), b);
        assert_eq!(store.find("0002").expect("by prefix"), b);
        assert!(store.find("9").is_err());
        assert!(store.find("000").is_err(), "ambiguous prefix");
        // Nothing but the two snapshots (no temp files left behind).
        let names: Vec<_> = fs::read_dir(store.snapshots_dir())
            .expect("dir")
            .map(|e| e.expect("entry").file_name())
            .collect();
        assert_eq!(names.len(), 2, "{names:?}");
    }

    #[test]
    fn unreadable_files_are_reported_not_fatal() {
        let (_d, store) = store();
        let a = snap(&store);
        store.save(&a).expect("save");
        fs::write(store.snapshots_dir().join("0005-broken.json"), "{ half").expect("write");
        fs::write(store.snapshots_dir().join(".0006-x.json.tcptune-1.tmp"), "{").expect("write");
        let (all, bad) = store.list().expect("list");
        assert_eq!(all.len(), 1);
        assert_eq!(bad.len(), 1);
        assert!(bad[0].1.contains("not a tcptune snapshot"), "{bad:?}");
        // The next id does not reuse the broken file's number.
        assert_eq!(store.next_seq().expect("seq"), 6);
    }

    #[test]
    fn an_old_reader_refuses_a_newer_format() {
        let (_d, store) = store();
        let mut a = snap(&store);
        a.format = FORMAT + 1;
        store.save(&a).expect("save");
        let (all, bad) = store.list().expect("list");
        assert!(all.is_empty());
        assert!(bad[0].1.contains("newer"), "{bad:?}");
    }

    #[test]
    fn a_world_writable_state_dir_is_refused() {
        let dir = tempfile::tempdir().expect("tempdir");
        fs::set_permissions(dir.path(), fs::Permissions::from_mode(0o777)).expect("chmod");
        let e = Store::new(dir.path()).ensure().expect_err("refused");
        assert!(e.to_string().contains("writable by group or others"), "{e}");
    }

    #[test]
    fn lock_is_exclusive_and_bounded() {
        let (_d, store) = store();
        let held = store.lock(Duration::ZERO, &|_| {}).expect("first");
        let waited = std::cell::Cell::new(None);
        let start = Instant::now();
        let e = store
            .lock(Duration::from_millis(200), &|pid| waited.set(Some(pid)))
            .expect_err("busy");
        assert!(start.elapsed() >= Duration::from_millis(200));
        assert_eq!(waited.get(), Some(Some(std::process::id())));
        assert!(e.to_string().contains("another tcptune"), "{e}");
        drop(held);
        store.lock(Duration::ZERO, &|_| {}).expect("free again");
    }

    #[test]
    fn atomic_write_keeps_an_existing_mode() {
        let (_d, store) = store();
        let p = store.dir().join("f.conf");
        write_atomic(&p, b"one\n", 0o600).expect("write");
        assert_eq!(fs::metadata(&p).expect("meta").mode() & 0o777, 0o600);
        fs::set_permissions(&p, fs::Permissions::from_mode(0o640)).expect("chmod");
        write_atomic(&p, b"two\n", 0o600).expect("write");
        assert_eq!(fs::read_to_string(&p).expect("read"), "two\n");
        assert_eq!(fs::metadata(&p).expect("meta").mode() & 0o777, 0o640);
    }

    #[test]
    fn identity_of_this_system() {
        let id = Identity::current(Os::running());
        if Path::new("/proc/self/ns/net").exists() {
            assert!(id.netns.is_some());
            assert_eq!(id.boot_id.as_deref().map(str::len), Some(36));
        }
    }
}
