//! Linux: sysctl values as files under /proc/sys (or a root given with `--sysctl-dir`).

use std::io::Write as _;
use std::path::{Path, PathBuf};

use anyhow::Context as _;

use super::{KeyState, Os, SysctlBackend, normalize_value};
use crate::error::Error;

pub struct ProcSys {
    root: PathBuf,
}

impl ProcSys {
    pub fn new(root: impl Into<PathBuf>) -> Self {
        Self { root: root.into() }
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    /// `net.ipv4.tcp_rmem` → ROOT/net/ipv4/tcp_rmem. Callers have checked the key with
    /// [`Os::is_network_key`], so it has no `/` and no empty component.
    pub fn path(&self, key: &str) -> PathBuf {
        let mut p = self.root.clone();
        p.extend(key.split('.'));
        p
    }
}

impl SysctlBackend for ProcSys {
    fn os(&self) -> Os {
        Os::Linux
    }

    fn read(&self, key: &str) -> KeyState {
        if !Os::Linux.is_network_key(key) {
            return KeyState::Absent;
        }
        let path = self.path(key);
        match std::fs::read_to_string(&path) {
            Ok(v) => KeyState::Present {
                value: normalize_value(&v),
                writable: is_writable(&path),
            },
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => KeyState::Absent,
            Err(e) => KeyState::Unreadable(e.to_string()),
        }
    }

    fn write(&self, key: &str, value: &str) -> anyhow::Result<()> {
        if !Os::Linux.is_network_key(key) {
            return Err(Error::usage(format!("refusing to write {key}: not a networking key (net.*)")).into());
        }
        let path = self.path(key);
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .truncate(true)
            .open(&path)
            .map_err(|e| write_error(key, &e))?;
        f.write_all(value.as_bytes())
            .and_then(|()| f.flush())
            .map_err(|e| write_error(key, &e))
            .with_context(|| format!("writing {}", path.display()))
    }

    fn describe(&self) -> String {
        self.root.display().to_string()
    }
}

/// Whether this process is in a child network namespace: its namespace differs from PID 1's
/// or, where PID 1's cannot be seen, root finds net.core.rmem_max read-only (a host-wide key
/// that child namespaces show as 0444). Only meaningful when `backend` is this machine's
/// /proc/sys.
pub fn in_child_netns(backend: &dyn SysctlBackend) -> bool {
    use std::os::unix::fs::MetadataExt as _;
    let ino = |p: &str| std::fs::metadata(p).map(|m| m.ino()).ok();
    match (ino("/proc/self/ns/net"), ino("/proc/1/ns/net")) {
        (Some(a), Some(b)) => a != b,
        _ => {
            super::is_root()
                && matches!(
                    backend.read("net.core.rmem_max"),
                    KeyState::Present { writable: false, .. }
                )
        }
    }
}

/// Why `cc` cannot become the default congestion control of this machine's network
/// namespace, when the kernel would refuse it before anything is written: a child namespace
/// may choose only the algorithms in net.ipv4.tcp_allowed_congestion_control (EPERM even for
/// root; tcp_set_default_congestion_control), and that list is the host's, read-only there.
/// `backend` must be this machine's /proc/sys.
pub fn cc_refused_here(backend: &dyn SysctlBackend, cc: &str) -> Option<String> {
    let allowed = backend.read("net.ipv4.tcp_allowed_congestion_control");
    let allowed = allowed.value()?;
    let current = backend.read("net.ipv4.tcp_congestion_control");
    if current.value() == Some(cc) || allowed.split(' ').any(|a| a == cc) || !in_child_netns(backend) {
        return None;
    }
    Some(cc_not_allowed(cc, allowed))
}

/// What to say of `cc` outside a child namespace's `allowed` algorithms.
pub fn cc_not_allowed(cc: &str, allowed: &str) -> String {
    format!(
        "a child network namespace may choose only the algorithms in net.ipv4.tcp_allowed_congestion_control ({allowed}): \
         add {cc} to that list on the host, or set it there"
    )
}

fn write_error(key: &str, e: &std::io::Error) -> anyhow::Error {
    match e.kind() {
        std::io::ErrorKind::PermissionDenied => Error::not_permitted(format!(
            "cannot write {key}: permission denied (root is needed; in a child network namespace the key may be read-only)"
        ))
        .into(),
        std::io::ErrorKind::NotFound => Error::usage(format!("cannot write {key}: no such key on this kernel")).into(),
        std::io::ErrorKind::InvalidInput => {
            Error::usage(format!("cannot write {key}: the kernel rejected the value (EINVAL)")).into()
        }
        _ => anyhow::anyhow!("cannot write {key}: {e}"),
    }
}

/// Whether the kernel will take a write: the mode bits of a /proc/sys file say so even for
/// root (proc_sys_permission checks them), and a child netns gets 0444 for host-only keys.
fn is_writable(path: &Path) -> bool {
    use std::os::unix::ffi::OsStrExt as _;
    let Ok(c) = std::ffi::CString::new(path.as_os_str().as_bytes()) else {
        return false;
    };
    // SAFETY: `c` is a valid NUL-terminated path that outlives the call; access(2) only reads it.
    unsafe { libc::access(c.as_ptr(), libc::W_OK) == 0 }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_values_and_absence_from_a_fake_tree() {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::create_dir_all(dir.path().join("net/ipv4")).expect("mkdir");
        std::fs::write(dir.path().join("net/ipv4/tcp_rmem"), "4096\t131072\t6291456\n").expect("write");
        let b = ProcSys::new(dir.path());
        assert_eq!(
            b.read("net.ipv4.tcp_rmem"),
            KeyState::Present {
                value: "4096 131072 6291456".into(),
                writable: true
            }
        );
        assert_eq!(b.read("net.ipv4.tcp_wmem"), KeyState::Absent);
        assert_eq!(b.read("kernel.hostname"), KeyState::Absent);
        b.write("net.ipv4.tcp_rmem", "4096 131072 8388608").expect("write");
        assert_eq!(b.read("net.ipv4.tcp_rmem").value(), Some("4096 131072 8388608"));
        assert!(b.write("kernel.hostname", "x").is_err());
    }

    #[test]
    fn real_proc_sys_is_readable() {
        let b = ProcSys::new("/proc/sys");
        if Path::new("/proc/sys/net/ipv4/tcp_rmem").exists() {
            let v = b.read("net.ipv4.tcp_rmem");
            let fields: Vec<u64> = v
                .value()
                .expect("present")
                .split(' ')
                .map(|f| f.parse().expect("int"))
                .collect();
            assert_eq!(fields.len(), 3);
            assert!(fields[0] <= fields[1] && fields[1] <= fields[2]);
        }
    }
}
