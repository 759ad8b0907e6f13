//! The snapshot store: one JSON file per `tcptune apply` under `STATE_DIR/snapshots/`,
//! written atomically (temp file, fsync, rename, fsync of the directory), and a lock file
//! (`STATE_DIR/lock`, flock(2)) that serialises the commands that change the kernel.
//!
//! A snapshot is written *before* the first kernel write, in state `applying`; an apply
//! that dies half-way leaves it so, and `revert` finds it.
//!
//! Everything here runs as root and a snapshot says what `revert` writes, so the store
//! trusts nothing it did not check: the state directory and every parent must be
//! root's or the caller's and not writable by others ([`crate::fsutil`]); files inside are
//! opened with O_NOFOLLOW; temp files are created with O_EXCL under unpredictable names;
//! a new snapshot never replaces an existing file, and sequence numbers never wrap.

use std::fs::{self, File};
use std::hash::{BuildHasher as _, Hasher as _};
use std::io::{Read as _, Write as _};
use std::os::unix::fs::{DirBuilderExt as _, FileExt as _, MetadataExt as _, PermissionsExt as _};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime};

use serde::{Deserialize, Serialize};

use crate::error::Error;
use crate::fsutil;
use crate::os::Os;

/// A snapshot file larger than this is not read: real ones are a few KiB (the `--persist`
/// files they carry are small config files).
const MAX_SNAPSHOT_BYTES: u64 = 16 << 20;

/// The newest snapshot file format this tcptune reads. A snapshot with host routes is written
/// as format 2, so that a tcptune from before routes refuses it ("newer than this tcptune
/// understands") rather than revert its sysctls and drop its routes; one without is format 1.
pub const FORMAT: u32 = 2;

/// The format of a snapshot that holds no route.
const FORMAT_SYSCTLS: u32 = 1;

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

/// A host route this apply adds or changes (`apply --scope path`): the host route to the
/// destination before (None: there was none, and tcptune adds its own, [`crate::route::PROTO`]),
/// the one tcptune writes, and the one the kernel shows after the write.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RouteChange {
    /// The destination as a host prefix: "198.18.0.2/32".
    pub dest: String,
    pub prior: Option<crate::route::Route>,
    pub new: crate::route::Route,
    /// What the kernel showed after the write, when it differs from `new`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub applied: Option<crate::route::Route>,
}

impl RouteChange {
    /// The route while this snapshot is in effect.
    pub fn in_effect(&self) -> &crate::route::Route {
        self.applied.as_ref().unwrap_or(&self.new)
    }

    /// "route 198.18.0.2/32 congctl bbr", as a listing names it.
    pub fn label(&self) -> String {
        format!(
            "route {} congctl {}",
            self.dest,
            self.new
                .congctl
                .as_deref()
                .map_or_else(|| "-".to_string(), crate::text::escape)
        )
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
        let netns = crate::host::linux::netns_inode(Path::new(crate::host::linux::PROC), "self");
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
    /// `apply --scope path`: the host routes it writes, after the sysctls.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub routes: Vec<RouteChange>,
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
            format: FORMAT_SYSCTLS,
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
            routes: Vec::new(),
            persist: Vec::new(),
            expires: None,
            timer_pid: None,
            events: Vec::new(),
        }
    }

    /// Record the host routes this apply writes: the snapshot becomes format 2.
    pub fn set_routes(&mut self, routes: Vec<RouteChange>) {
        self.format = if routes.is_empty() { FORMAT_SYSCTLS } else { FORMAT };
        self.routes = routes;
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
    /// directory that others could change: its snapshots say what `revert` writes, and
    /// tcptune writes there as root. See [`fsutil::check_trusted_dir`].
    pub fn ensure(&self) -> anyhow::Result<()> {
        const WHAT: &str = "the state directory";
        // Check the part that exists before creating anything in it.
        let existing = fsutil::check_trusted_parent(&self.dir, WHAT)?;
        let mut missing = Vec::new();
        let mut d = std::path::absolute(&self.dir)?;
        while d != existing {
            missing.push(d.clone());
            if !d.pop() {
                break;
            }
        }
        for d in missing.iter().rev() {
            create_dir(d)?;
        }
        fsutil::check_trusted_dir(&self.dir, WHAT)?;
        let snaps = self.snapshots_dir();
        if fs::symlink_metadata(&snaps).is_err_and(|e| e.kind() == std::io::ErrorKind::NotFound) {
            create_dir(&snaps)?;
        }
        self.check_snapshots_dir()?;
        fsutil::check_trusted_dir(&snaps, "the snapshot directory")?;
        Ok(())
    }

    /// `STATE_DIR/snapshots` must be a directory of its own, not a link to one elsewhere.
    fn check_snapshots_dir(&self) -> anyhow::Result<()> {
        let snaps = self.snapshots_dir();
        match fs::symlink_metadata(&snaps) {
            Ok(m) if m.file_type().is_symlink() => Err(Error::not_permitted(format!(
                "refusing the snapshot directory {}: it is a symbolic link (not followed)",
                snaps.display()
            ))
            .with_hint(format!("remove the link; tcptune creates {} itself", snaps.display()))
            .into()),
            Ok(m) if !m.is_dir() => {
                Err(Error::usage(format!("snapshot directory {} is not a directory", snaps.display())).into())
            }
            _ => Ok(()),
        }
    }

    /// Take the lock, waiting up to `wait` (zero: refuse at once). `on_wait` is called once
    /// with the holder's pid, if known, when the lock is busy.
    pub fn lock(&self, wait: Duration, on_wait: &dyn Fn(Option<u32>)) -> anyhow::Result<Lock> {
        // The lock is truncated and written: the directory it lives in must be trusted
        // (`revert-timer` takes the lock without `ensure`).
        fsutil::check_trusted_dir(&self.dir, "the state directory")?;
        let path = self.dir.join("lock");
        let file = fsutil::open_nofollow_rw(&path, 0o644)
            .map_err(|e| refusal(&e, &format!("cannot open the lock file {}", path.display())))?;
        let start = Instant::now();
        let mut told = false;
        loop {
            if try_flock(&file)? {
                // The holder's pid, for the message another tcptune prints while it waits.
                file.set_len(0)
                    .and_then(|()| file.write_all_at(format!("{}\n", std::process::id()).as_bytes(), 0))
                    .map_err(|e| io_error(&e, &format!("cannot write the lock file {}", path.display())))?;
                return Ok(Lock { _file: file });
            }
            // Read through our own descriptor: the path could name something else by now.
            let mut buf = [0u8; 32];
            let n = file.read_at(&mut buf, 0).unwrap_or(0);
            let holder = std::str::from_utf8(&buf[..n]).ok().and_then(|s| s.trim().parse().ok());
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

    /// Write the first version of a new snapshot, durably (file and directory fsynced).
    /// Refuses (exit 3) if a file with its id already exists, rather than replace the prior
    /// values another apply recorded there.
    pub fn create(&self, snap: &Snapshot) -> anyhow::Result<()> {
        let path = self.path_of(&snap.id);
        write_new(&path, &snapshot_text(snap)?, 0o644).map_err(|e| {
            if e.kind() == std::io::ErrorKind::AlreadyExists {
                Error::not_permitted(format!(
                    "snapshot {} already exists in {}: refusing to overwrite it",
                    snap.id,
                    self.snapshots_dir().display()
                ))
                .with_hint("run the command again (the next snapshot gets a new id)")
                .into()
            } else {
                refusal(&e, &format!("cannot write {}", path.display()))
            }
        })
    }

    /// Write a new version of a snapshot atomically.
    pub fn save(&self, snap: &Snapshot) -> anyhow::Result<()> {
        let path = self.path_of(&snap.id);
        write_atomic(&path, &snapshot_text(snap)?, 0o644)
            .map_err(|e| refusal(&e, &format!("cannot write {}", path.display())))
    }

    /// Every snapshot, oldest first, and the files that could not be read.
    pub fn list(&self) -> anyhow::Result<(Vec<Snapshot>, Vec<Unreadable>)> {
        let dir = self.snapshots_dir();
        self.check_snapshots_dir()?;
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

    /// One more than the highest sequence number in the store. Never wraps: a store that
    /// holds u64::MAX (planted or damaged) is refused, since a wrapped number would sort
    /// before the snapshots it must come after, and could name an existing file.
    pub fn next_seq(&self) -> anyhow::Result<u64> {
        let (snaps, bad) = self.list()?;
        let from_names = bad
            .iter()
            .filter_map(|(p, _)| p.file_name()?.to_str()?.split('-').next()?.parse::<u64>().ok());
        let Some(max) = snaps.iter().map(|s| s.seq).chain(from_names).max() else {
            return Ok(1);
        };
        max.checked_add(1).ok_or_else(|| {
            Error::not_permitted(format!(
                "no snapshot number is left after {max} in {}: a snapshot there has the highest possible number",
                self.snapshots_dir().display()
            ))
            .with_hint(format!(
                "tcptune numbers snapshots from 1: move the file whose name starts with {max}- out of {}",
                self.snapshots_dir().display()
            ))
            .into()
        })
    }

    /// A snapshot by its sequence number, its id, or a unique prefix of its id. A query of
    /// digits alone is only ever the number ("1" and "0001" are snapshot 1, never
    /// "10000-…" by prefix); a prefix names the id past its number ("0001-2026").
    pub fn find(&self, query: &str) -> anyhow::Result<Snapshot> {
        let (snaps, bad) = self.list()?;
        let hits: Vec<&Snapshot> = if !query.is_empty() && query.bytes().all(|b| b.is_ascii_digit()) {
            // Past u64::MAX no snapshot has the number.
            let seq = query.parse::<u64>().ok();
            snaps.iter().filter(|s| Some(s.seq) == seq).take(1).collect()
        } else if let Some(s) = snaps.iter().find(|s| s.id == query) {
            vec![s]
        } else {
            snaps
                .iter()
                .filter(|s| !query.is_empty() && s.id.starts_with(query))
                .collect()
        };
        // The query is the user's text: shown escaped, so it can only be one line.
        let shown = crate::text::escape(query);
        match hits.as_slice() {
            [one] => Ok((*one).clone()),
            // A file of that name that could not be read is not "no snapshot".
            [] if let Some((path, why)) = bad.iter().find(|(p, _)| names(p, query)) => Err(damaged(path, why).into()),
            [] => Err(
                Error::usage(format!("no snapshot {shown} in {}", self.snapshots_dir().display()))
                    .with_hint("tcptune snapshots lists them")
                    .into(),
            ),
            many => Err(Error::usage(format!(
                "{shown} matches {} snapshots: {}",
                many.len(),
                many.iter().map(|s| s.id.as_str()).collect::<Vec<_>>().join(", ")
            ))
            .into()),
        }
    }
}

/// Whether the snapshot file `path` is the one `query` names, as [`Store::find`] reads a query:
/// digits alone its number, else its id or a prefix of it.
fn names(path: &Path, query: &str) -> bool {
    let Some(stem) = path.file_stem().and_then(|n| n.to_str()) else {
        return false;
    };
    if !query.is_empty() && query.bytes().all(|b| b.is_ascii_digit()) {
        let number = |s: &str| s.split('-').next().and_then(|n| n.parse::<u64>().ok());
        number(stem).is_some_and(|n| Some(n) == number(query))
    } else {
        !query.is_empty() && stem.starts_with(query)
    }
}

/// The refusal of a snapshot file that could not be read (`why`, from [`Store::list`]): usage
/// (exit 2), nothing changed. The file may be a snapshot still in effect: the values and routes
/// it recorded stay as they are until it is restored or they are put back by hand.
pub fn damaged(path: &Path, why: &str) -> Error {
    Error::usage(format!(
        "snapshot file {} could not be read ({why}); nothing was changed",
        crate::text::escape(&path.display().to_string())
    ))
    .with_hint(
        "what it changed stays as it is: restore the file from a backup, or look at it and put its prior values and routes back by hand, then move it out of the snapshot directory",
    )
}

/// Read one snapshot. The reasons never quote the file's content: as root this may be a
/// file planted to be read, and the reason is printed for any user to see.
fn load_file(path: &Path) -> Result<Snapshot, String> {
    let f = fsutil::open_nofollow_read(path).map_err(|e| match fsutil::untrusted(&e) {
        Some(u) => format!("not read: {u}"),
        None => format!("cannot read it: {e}"),
    })?;
    let mut bytes = Vec::new();
    f.take(MAX_SNAPSHOT_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| format!("cannot read it: {e}"))?;
    if bytes.len() as u64 > MAX_SNAPSHOT_BYTES {
        return Err(format!(
            "not a tcptune snapshot: larger than {MAX_SNAPSHOT_BYTES} bytes"
        ));
    }
    let s: Snapshot = serde_json::from_slice(&bytes).map_err(|e| {
        // serde's messages for a wrong type or value quote it: give only the place.
        let what = match e.classify() {
            serde_json::error::Category::Data => "unexpected field or value",
            serde_json::error::Category::Io
            | serde_json::error::Category::Syntax
            | serde_json::error::Category::Eof => "invalid JSON",
        };
        format!(
            "not a tcptune snapshot: {what} at line {}, column {}",
            e.line(),
            e.column()
        )
    })?;
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

fn snapshot_text(snap: &Snapshot) -> anyhow::Result<Vec<u8>> {
    let mut text = serde_json::to_vec_pretty(snap)?;
    text.push(b'\n');
    Ok(text)
}

fn create_dir(d: &Path) -> anyhow::Result<()> {
    match fs::DirBuilder::new().mode(0o755).create(d) {
        // Another tcptune made it first: the checks that follow judge it.
        Err(e) if e.kind() != std::io::ErrorKind::AlreadyExists => Err(io_error(
            &e,
            &format!("cannot create the state directory {}", d.display()),
        )),
        _ => Ok(()),
    }
}

/// Like [`io_error`], but a file refused by [`fsutil`] (a link, not a regular file) is
/// refused as such (exit 3), not blamed on missing root.
fn refusal(e: &std::io::Error, what: &str) -> anyhow::Error {
    match fsutil::untrusted(e) {
        Some(u) => Error::not_permitted(format!("{what}: {u}"))
            .with_hint("something other than tcptune put it there: look at it, remove it, and run the command again")
            .into(),
        None => io_error(e, what),
    }
}

/// Map an I/O error to what a user can act on: permission problems exit 3.
pub fn io_error(e: &std::io::Error, what: &str) -> anyhow::Error {
    match e.kind() {
        std::io::ErrorKind::PermissionDenied | std::io::ErrorKind::ReadOnlyFilesystem => {
            Error::not_permitted(format!("{what}: {e}"))
                .with_hint("changing kernel settings needs root (sudo); --state-dir DIR puts snapshots elsewhere")
                .into()
        }
        _ => Error::system(format!("{what}: {e}")).into(),
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
        Err(Error::system(format!("cannot lock the state directory: flock: {e}")).into())
    }
}

/// Replace `path` with `bytes` so that a crash leaves either the old or the new content:
/// write a temp file beside it, fsync it, rename it over `path`, fsync the directory.
/// A new file gets `mode`; an existing regular file keeps its own. A symlink at `path` is
/// replaced, not written through (and its mode, always 777, is not copied).
pub fn write_atomic(path: &Path, bytes: &[u8], mode: u32) -> std::io::Result<()> {
    let dir = parent(path);
    let mode = fs::symlink_metadata(path)
        .ok()
        .filter(fs::Metadata::is_file)
        .map_or(mode, |m| m.mode() & 0o7777);
    let tmp = write_temp(path, bytes, mode)?;
    let result = fs::rename(&tmp, path).and_then(|()| fsutil::open_dir(dir)?.sync_all());
    if result.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    result
}

/// Create `path` with `bytes`, durably, failing with `AlreadyExists` if anything is there:
/// the temp file is hard-linked to `path` (link(2) never replaces), then removed.
fn write_new(path: &Path, bytes: &[u8], mode: u32) -> std::io::Result<()> {
    let tmp = write_temp(path, bytes, mode)?;
    let result = fs::hard_link(&tmp, path);
    let _ = fs::remove_file(&tmp);
    result?;
    fsutil::open_dir(parent(path))?.sync_all()
}

fn parent(path: &Path) -> &Path {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    }
}

/// A new file beside `path` holding `bytes`, fsynced, with `mode` set on the descriptor.
/// Its name is unpredictable and it is created with O_EXCL|O_NOFOLLOW, so whatever is
/// planted under a guessed name makes this try another name instead of writing through it.
fn write_temp(path: &Path, bytes: &[u8], mode: u32) -> std::io::Result<PathBuf> {
    let dir = parent(path);
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("file");
    let mut tries = 0;
    let (tmp, mut f) = loop {
        // RandomState is seeded from the OS's random source: good enough to make the name
        // unguessable, with no extra dependency.
        let r = std::collections::hash_map::RandomState::new().build_hasher().finish();
        let tmp = dir.join(format!(".{name}.tcptune-{}-{r:016x}.tmp", std::process::id()));
        match fsutil::create_new(&tmp, 0o600) {
            Ok(f) => break (tmp, f),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists && tries < 8 => tries += 1,
            Err(e) => return Err(e),
        }
    };
    let result = (|| {
        f.write_all(bytes)?;
        // fchmod on the descriptor: never chmod by path, which would follow a link.
        f.set_permissions(fs::Permissions::from_mode(mode))?;
        f.sync_all()
    })();
    match result {
        Ok(()) => Ok(tmp),
        Err(e) => {
            let _ = fs::remove_file(&tmp);
            Err(e)
        }
    }
}

/// Remove a file and make the removal durable.
pub fn remove_durably(path: &Path) -> std::io::Result<()> {
    fs::remove_file(path)?;
    fsutil::open_dir(parent(path))?.sync_all()
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
    fn a_number_is_only_ever_the_number() {
        let (_d, store) = store();
        let at = |seq: u64, stamp: &str| {
            let mut s = snap(&store);
            s.seq = seq;
            s.id = format!("{seq:04}-{stamp}");
            store.create(&s).expect("create");
            s
        };
        let big = at(10_000, "20260101T000000Z");
        // No snapshot 1 (nor 10, 100, 1000): "1" is not "10000-…" by prefix.
        for q in ["1", "10", "100", "1000", "01", "0"] {
            let e = store.find(q).expect_err(q);
            assert!(e.to_string().starts_with(&format!("no snapshot {q} in ")), "{q}: {e}");
        }
        assert_eq!(store.find("10000").expect("its number"), big);
        assert_eq!(store.find("010000").expect("its number, padded"), big);
        assert_eq!(store.find("10000-").expect("a prefix past the number"), big);
        assert_eq!(store.find("10000-2026").expect("a prefix past the number"), big);
        assert_eq!(store.find(&big.id).expect("its id"), big);
        assert!(store.find("99999999999999999999999").is_err(), "past u64::MAX");
        assert!(store.find("").is_err(), "nothing names nothing");
        // Now snapshot 1 exists: the number finds it, and only it.
        let one = at(1, "20260102T000000Z");
        assert_eq!(store.find("1").expect("snapshot 1"), one);
        assert_eq!(store.find("0001").expect("snapshot 1"), one);
        let e = store.find("20").expect_err("no such number");
        assert!(e.to_string().starts_with("no snapshot 20 in "), "{e}");
        // "000" is the number 0 (it was a prefix of every id).
        let e = store.find("000").expect_err("the number 0");
        assert!(e.to_string().starts_with("no snapshot 000 in "), "{e}");
        // A prefix of two ids (one number twice: a planted file) is ambiguous and says which.
        let again = at(1, "20260103T000000Z");
        let e = store.find("0001-2026010").expect_err("ambiguous");
        assert!(
            e.to_string().contains("matches 2 snapshots") && e.to_string().contains(&again.id),
            "{e}"
        );
    }

    #[test]
    fn a_query_with_control_characters_is_shown_escaped() {
        let (_d, store) = store();
        store.save(&snap(&store)).expect("save");
        for q in ["\u{1b}[31m\nkernel.x=", "00\r01"] {
            let e = store.find(q).expect_err(q).to_string();
            assert!(!e.chars().any(char::is_control), "{e:?}");
            assert!(
                e.contains("\\u{1b}[31m\\u{a}kernel.x=") || e.contains("00\\u{d}01"),
                "{e}"
            );
        }
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
        // Named, it is not "no snapshot": it could not be read (exit 2).
        for q in ["5", "0005", "0005-bro"] {
            let e = store.find(q).expect_err(q);
            assert!(e.to_string().contains("0005-broken.json could not be read"), "{q}: {e}");
            assert_eq!(e.downcast_ref::<Error>().map(Error::exit_code), Some(2), "{q}");
        }
        assert!(
            store
                .find("6")
                .expect_err("none")
                .to_string()
                .starts_with("no snapshot 6 in ")
        );
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

    fn is_root() -> bool {
        // SAFETY: geteuid has no preconditions and cannot fail.
        unsafe { libc::geteuid() == 0 }
    }

    /// Every entry under `dir` (relative path), links not followed.
    fn tree(dir: &Path) -> Vec<PathBuf> {
        let mut out = Vec::new();
        let mut stack = vec![dir.to_path_buf()];
        while let Some(d) = stack.pop() {
            for e in fs::read_dir(&d).expect("read_dir") {
                let p = e.expect("entry").path();
                if fs::symlink_metadata(&p).expect("lstat").is_dir() {
                    stack.push(p.clone());
                }
                out.push(p.strip_prefix(dir).expect("prefix").to_path_buf());
            }
        }
        out.sort();
        out
    }

    /// A file only root may read, to point links at: (path, content).
    fn victim(dir: &Path) -> (PathBuf, &'static str) {
        let p = dir.join("victim");
        fs::write(&p, "root:secret-hash:19000::::::\n").expect("write");
        fs::set_permissions(&p, fs::Permissions::from_mode(0o600)).expect("chmod");
        (p, "root:secret-hash:19000::::::\n")
    }

    fn assert_untouched(p: &Path, content: &str) {
        assert_eq!(fs::read_to_string(p).expect("read"), content);
        assert_eq!(fs::metadata(p).expect("meta").mode() & 0o7777, 0o600);
    }

    #[test]
    #[cfg_attr(not(feature = "privileged-tests"), ignore = "privileged: needs root")]
    fn a_state_dir_owned_by_another_user_is_refused_and_left_alone() {
        assert!(is_root(), "this test needs root to chown (CI runs as root)");
        let dir = tempfile::tempdir().expect("tempdir");
        // The directory itself, another user's (0755: only its owner may write it).
        let state = dir.path().join("state");
        fs::create_dir(&state).expect("mkdir");
        fs::set_permissions(&state, fs::Permissions::from_mode(0o755)).expect("chmod");
        std::os::unix::fs::chown(&state, Some(65534), Some(65534)).expect("chown");
        let store = Store::new(&state);
        let e = store.ensure().expect_err("refused");
        assert!(e.to_string().contains("is owned by uid 65534 (mode 755)"), "{e}");
        let e = store.lock(Duration::ZERO, &|_| {}).expect_err("refused");
        assert!(e.to_string().contains("owned by uid 65534"), "{e}");
        assert_eq!(tree(&state), Vec::<PathBuf>::new(), "nothing created");
        // A parent another user owns, the state directory not there yet.
        let store = Store::new(state.join("sub/state"));
        let e = store.ensure().expect_err("refused");
        assert!(e.to_string().contains("on its path is owned by uid 65534"), "{e}");
        assert_eq!(e.downcast_ref::<Error>().map(Error::exit_code), Some(3));
        assert_eq!(tree(&state), Vec::<PathBuf>::new(), "nothing created");
    }

    #[test]
    fn a_lock_symlink_is_refused_and_its_target_untouched() {
        let (d, store) = store();
        let (v, body) = victim(d.path());
        std::os::unix::fs::symlink(&v, store.dir().join("lock")).expect("symlink");
        let e = store.lock(Duration::ZERO, &|_| {}).expect_err("refused");
        assert!(e.to_string().contains("symbolic link"), "{e}");
        assert_eq!(e.downcast_ref::<Error>().map(Error::exit_code), Some(3));
        assert_untouched(&v, body);
        // A hard link instead (possible where protected_hardlinks is off): refused too.
        fs::remove_file(store.dir().join("lock")).expect("rm");
        fs::hard_link(&v, store.dir().join("lock")).expect("link");
        let e = store.lock(Duration::ZERO, &|_| {}).expect_err("refused");
        assert!(e.to_string().contains("hard links"), "{e}");
        assert_untouched(&v, body);
    }

    #[test]
    fn planted_temp_file_links_are_not_written_through() {
        let (d, store) = store();
        let (v, body) = victim(d.path());
        let s = snap(&store);
        // The names the old store used (pid only), and a few guesses more.
        let name = format!("{}.json", s.id);
        for tmp in [
            format!(".{name}.tcptune-{}.tmp", std::process::id()),
            format!(".{name}.tcptune-{}-0000000000000000.tmp", std::process::id()),
        ] {
            std::os::unix::fs::symlink(&v, store.snapshots_dir().join(tmp)).expect("symlink");
        }
        store.create(&s).expect("create");
        store.save(&s).expect("save");
        write_atomic(&d.path().join("f.conf"), b"x\n", 0o644).expect("write");
        assert_untouched(&v, body);
        assert_eq!(store.find(&s.id).expect("find"), s);
    }

    #[test]
    fn a_symlinked_snapshot_is_not_read_and_reasons_do_not_quote_files() {
        let (d, store) = store();
        let (v, _) = victim(d.path());
        std::os::unix::fs::symlink(&v, store.snapshots_dir().join("0001-x.json")).expect("symlink");
        // A JSON file that is no snapshot: serde would quote the string.
        fs::write(
            store.snapshots_dir().join("0002-y.json"),
            r#"{"format": "TOKEN-abc123"}"#,
        )
        .expect("write");
        let (all, bad) = store.list().expect("list");
        assert!(all.is_empty());
        assert_eq!(bad.len(), 2, "{bad:?}");
        let reasons = format!("{bad:?}");
        assert!(reasons.contains("symbolic link (not followed)"), "{reasons}");
        assert!(reasons.contains("unexpected field or value at line 1"), "{reasons}");
        assert!(!reasons.contains("secret") && !reasons.contains("TOKEN"), "{reasons}");
        // A snapshots directory that is a link is refused outright.
        let other = d.path().join("elsewhere");
        fs::create_dir(&other).expect("mkdir");
        fs::remove_dir_all(store.snapshots_dir()).expect("rm");
        std::os::unix::fs::symlink(&other, store.snapshots_dir()).expect("symlink");
        assert!(store.ensure().is_err());
        let e = store.list().expect_err("refused");
        assert!(e.to_string().contains("is a symbolic link"), "{e}");
        assert!(
            fs::read_dir(&other).expect("dir").next().is_none(),
            "nothing written there"
        );
    }

    #[test]
    fn sequence_numbers_never_wrap_and_ids_are_never_reused() {
        let (_d, store) = store();
        let mut top = snap(&store);
        top.seq = u64::MAX;
        top.id = format!("{}-20260101T000000Z", u64::MAX);
        top.state = State::Reverted;
        store.create(&top).expect("create");
        let path = store.path_of(&top.id);
        let before = fs::read(&path).expect("read");
        let e = store.next_seq().expect_err("no number left");
        assert!(
            e.to_string()
                .contains("no snapshot number is left after 18446744073709551615"),
            "{e}"
        );
        assert_eq!(e.downcast_ref::<Error>().map(Error::exit_code), Some(3));
        // The same number from the name of a file that is not a snapshot.
        fs::remove_file(&path).expect("rm");
        fs::write(&path, "{").expect("write");
        assert!(store.next_seq().is_err());
        fs::write(&path, &before).expect("write");

        // Two snapshots with one id: the second is refused, the first kept.
        let mut other = top.clone();
        other.changes.clear();
        let e = store.create(&other).expect_err("exists");
        assert!(e.to_string().contains("already exists"), "{e}");
        assert_eq!(fs::read(&path).expect("read"), before);
        let leftovers: Vec<_> = tree(store.dir())
            .into_iter()
            .filter(|p| p.to_string_lossy().contains(".tmp"))
            .collect();
        assert!(leftovers.is_empty(), "{leftovers:?}");
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
        // Free again, within a moment: another test's thread may fork (to spawn a program)
        // while the lock is held, and its child keeps a copy of the locked descriptor until
        // its exec closes it (O_CLOEXEC).
        store.lock(Duration::from_secs(5), &|_| {}).expect("free again");
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
