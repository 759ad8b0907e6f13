//! What a mesh measured, kept as it comes: one JSON line per test (its two hosts by name and
//! address, when, how long, the evidence the test end sent and what each kernel said of its
//! route), appended to a file of the user's (`--state FILE`, by default
//! `$XDG_STATE_HOME/tcptune/mesh.jsonl`, else `~/.local/state/tcptune/mesh.jsonl`). A later run
//! (`mesh --resume`) takes the tests it still trusts from there instead of measuring them again.
//!
//! The file is read as what it is, text from outside: it must sit where only root or the user
//! can change it ([`crate::fsutil::check_trusted_parent`]), is never read through a link, is
//! at most [`MAX_FILE`] bytes of lines of at most [`MAX_LINE`]; a line that does not read (a
//! run killed mid-line) is skipped and said. What a line holds is evidence again: the caller
//! reads it through [`crate::remote::evidence::read`] and parses the route lines as a live
//! session's, with every check a fresh test has. Each run rewrites the file first with only
//! the latest line of each test (atomically), then appends.

use std::collections::BTreeMap;
use std::io::{BufRead as _, Read as _, Write as _};
use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use serde::{Deserialize, Serialize};

use crate::error::Error;

/// The format of a line.
pub const FORMAT: u32 = 1;
/// The largest state file read, bytes: a 50-host mesh's 1,225 tests of about 60 KiB each.
pub const MAX_FILE: u64 = 512 << 20;
/// The longest line read: an evidence document is at most 8 MiB.
pub const MAX_LINE: usize = 9 << 20;
/// The longest route line kept, characters (as the far end's script reader keeps them).
const MAX_ROUTE: usize = 4096;

/// One test as saved.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Saved {
    pub tcptune_mesh_state: u32,
    /// The test end and the peer, by name and address.
    pub a: String,
    pub b: String,
    pub a_addr: IpAddr,
    pub b_addr: IpAddr,
    /// When the test ended, seconds since the epoch.
    pub at: u64,
    pub took_s: f64,
    /// What each kernel said of its route toward the other (`ip route get`, `fibmatch`): the
    /// test end's, then the peer's.
    pub routes: [[Option<String>; 2]; 2],
    /// The evidence document the test end sent, as it came.
    pub evidence: String,
}

impl Saved {
    /// Whether this is the test of the hosts `a` and `b` at these addresses (either way round).
    pub fn is_of(&self, (a, a_addr): (&str, IpAddr), (b, b_addr): (&str, IpAddr)) -> bool {
        (self.a == a && self.b == b && self.a_addr == a_addr && self.b_addr == b_addr)
            || (self.a == b && self.b == a && self.a_addr == b_addr && self.b_addr == a_addr)
    }

    fn key(&self) -> (String, String, IpAddr, IpAddr) {
        if self.a <= self.b {
            (self.a.clone(), self.b.clone(), self.a_addr, self.b_addr)
        } else {
            (self.b.clone(), self.a.clone(), self.b_addr, self.a_addr)
        }
    }

    /// How old it is at `now` (seconds since the epoch); a time ahead of now is as old as now.
    pub fn age_s(&self, now: u64) -> u64 {
        now.saturating_sub(self.at)
    }
}

/// Now, seconds since the epoch.
pub fn now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// Route lines as they are kept: bounded.
pub fn bounded(said: &[Option<String>; 2]) -> [Option<String>; 2] {
    said.clone().map(|l| l.map(|l| l.chars().take(MAX_ROUTE).collect()))
}

/// The default file: `$XDG_STATE_HOME/tcptune/mesh.jsonl`, else `$HOME/.local/state/...`.
pub fn default_path() -> Option<PathBuf> {
    let base = std::env::var_os("XDG_STATE_HOME")
        .map(PathBuf::from)
        .filter(|p| p.is_absolute())
        .or_else(|| {
            std::env::var_os("HOME")
                .map(PathBuf::from)
                .filter(|p| p.is_absolute())
                .map(|h| h.join(".local/state"))
        })?;
    Some(base.join("tcptune/mesh.jsonl"))
}

/// The open state file: what it held, and where to append.
pub struct Store {
    path: PathBuf,
    file: Mutex<std::fs::File>,
}

/// What [`Store::open`] read: the latest line of each test, and the lines it skipped (why).
pub struct Read {
    pub saved: Vec<Saved>,
    pub skipped: Vec<String>,
}

impl Store {
    /// Opens `path` (made with its directories, mode 0600 / 0700, where missing): checked,
    /// read, rewritten with the latest line of each test, then opened to append to.
    pub fn open(path: &Path) -> Result<(Self, Read), Error> {
        let what = "--state";
        crate::fsutil::check_trusted_parent(path, what)?;
        let fail = |e: &dyn std::fmt::Display| Error::system(format!("{what} {}: {e}", path.display()));
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            use std::os::unix::fs::DirBuilderExt as _;
            std::fs::DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(dir)
                .map_err(|e| fail(&e))?;
        }
        let read = match crate::fsutil::open_nofollow_read(path) {
            Ok(f) => read(f, path)?,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Read {
                saved: Vec::new(),
                skipped: Vec::new(),
            },
            Err(e) => {
                return Err(Error::not_permitted(format!(
                    "{what} {}: {e} (not read through a link, nor one that is not a regular file)",
                    path.display()
                )));
            }
        };
        let mut text = Vec::new();
        for s in &read.saved {
            serde_json::to_writer(&mut text, s).map_err(|e| fail(&e))?;
            text.push(b'\n');
        }
        crate::snapshot::write_atomic(path, &text, 0o600).map_err(|e| fail(&e))?;
        let file = crate::fsutil::open_nofollow_append(path, 0o600).map_err(|e| fail(&e))?;
        Ok((
            Self {
                path: path.to_path_buf(),
                file: Mutex::new(file),
            },
            read,
        ))
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Appends one test, as one line (one write).
    pub fn append(&self, s: &Saved) -> Result<(), Error> {
        let mut line = serde_json::to_vec(s).map_err(|e| Error::system(e.to_string()))?;
        line.push(b'\n');
        let mut f = self.file.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        f.write_all(&line)
            .and_then(|()| f.sync_data())
            .map_err(|e| Error::system(format!("--state {}: {e}", self.path.display())))
    }
}

/// The lines of `f`: each test's latest, in the order first seen; the lines that do not read.
fn read(f: std::fs::File, path: &Path) -> Result<Read, Error> {
    let len = f.metadata().map_or(0, |m| m.len());
    if len > MAX_FILE {
        return Err(Error::usage(format!(
            "--state {}: over {} MiB: not a state file tcptune wrote (move it away)",
            path.display(),
            MAX_FILE >> 20
        )));
    }
    let mut reader = std::io::BufReader::new(f.take(MAX_FILE));
    let mut latest: BTreeMap<(String, String, IpAddr, IpAddr), usize> = BTreeMap::new();
    let mut saved: Vec<Saved> = Vec::new();
    let mut skipped = Vec::new();
    let mut n = 0;
    loop {
        let mut line = Vec::new();
        let got = (&mut reader)
            .take(MAX_LINE as u64 + 1)
            .read_until(b'\n', &mut line)
            .map_err(|e| Error::system(format!("--state {}: {e}", path.display())))?;
        if got == 0 {
            break;
        }
        n += 1;
        if line.len() > MAX_LINE {
            skipped.push(format!("line {n}: over {} MiB", MAX_LINE >> 20));
            // The rest of that line.
            let mut rest = Vec::new();
            let _ = reader.read_until(b'\n', &mut rest);
            continue;
        }
        let Ok(text) = std::str::from_utf8(&line) else {
            skipped.push(format!("line {n}: not UTF-8"));
            continue;
        };
        if text.trim().is_empty() {
            continue;
        }
        match serde_json::from_str::<Saved>(text) {
            Ok(s) if s.tcptune_mesh_state == FORMAT => match latest.get(&s.key()) {
                Some(&i) if saved[i].at > s.at => {}
                Some(&i) => saved[i] = s,
                None => {
                    latest.insert(s.key(), saved.len());
                    saved.push(s);
                }
            },
            Ok(s) => skipped.push(format!("line {n}: format {}, not {FORMAT}", s.tcptune_mesh_state)),
            Err(e) => skipped.push(format!("line {n}: {}", crate::text::escape(&e.to_string()))),
        }
    }
    Ok(Read { saved, skipped })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn saved(a: &str, b: &str, at: u64) -> Saved {
        Saved {
            tcptune_mesh_state: FORMAT,
            a: a.into(),
            b: b.into(),
            a_addr: "198.18.10.1".parse().expect("addr"),
            b_addr: "198.18.10.2".parse().expect("addr"),
            at,
            took_s: 12.5,
            routes: [[Some("198.18.10.2 dev lan0".into()), None], [None, None]],
            evidence: "{\"tcptune_evidence\": 1}".into(),
        }
    }

    #[test]
    fn a_test_saved_twice_reads_as_its_latest_and_a_cut_line_is_said() {
        let dir = tempfile::tempdir().expect("dir");
        let path = dir.path().join("state/mesh.jsonl");
        {
            let (store, read) = Store::open(&path).expect("open");
            assert!(read.saved.is_empty() && read.skipped.is_empty());
            store.append(&saved("h1", "h2", 100)).expect("append");
            store.append(&saved("h1", "h2", 300)).expect("append");
        }
        // A run killed mid-line, and an older line of the same test after the newer.
        let mut f = std::fs::OpenOptions::new().append(true).open(&path).expect("open");
        f.write_all(br#"{"tcptune_mesh_state":1,"a":"h1","b":"h2","a_addr":"198.18.10.1","b_addr":"198.18.10.2","at":200,"took_s":1.0,"routes":[[null,null],[null,null]],"evidence":"{}"}"#)
            .expect("write");
        f.write_all(b"\n{\"tcptune_mesh_state\":1,\"a\":\"h1\",\"b")
            .expect("write");
        drop(f);
        let (_, read) = Store::open(&path).expect("open");
        assert_eq!(read.saved.len(), 1);
        assert_eq!(read.saved[0].at, 300, "the latest");
        assert_eq!(read.skipped.len(), 1, "{:?}", read.skipped);
        assert!(read.skipped[0].starts_with("line 4:"), "{:?}", read.skipped);
        // Rewritten with the latest line only.
        let text = std::fs::read_to_string(&path).expect("read");
        assert_eq!(text.lines().count(), 1, "{text}");
        let s = &read.saved[0];
        let (a, b) = (s.a_addr, s.b_addr);
        assert!(s.is_of(("h2", b), ("h1", a)), "either way round");
        assert!(!s.is_of(("h1", b), ("h2", a)), "the addresses too");
    }

    #[test]
    fn a_state_file_is_never_read_through_a_link_nor_from_a_place_others_may_change() {
        let dir = tempfile::tempdir().expect("dir");
        let target = dir.path().join("elsewhere.jsonl");
        std::fs::write(&target, "").expect("write");
        let link = dir.path().join("mesh.jsonl");
        std::os::unix::fs::symlink(&target, &link).expect("link");
        assert!(Store::open(&link).is_err(), "a link");
        let open = dir.path().join("open");
        std::fs::create_dir(&open).expect("dir");
        use std::os::unix::fs::PermissionsExt as _;
        std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o777)).expect("chmod");
        let e = Store::open(&open.join("mesh.jsonl"))
            .err()
            .expect("others may change it");
        assert_eq!(e.kind(), crate::error::Kind::NotPermitted, "{}", e.message());
    }
}
