//! Linux: sysctl values as files under /proc/sys (or a root given with `--sysctl-dir`).

use std::io::Write as _;
use std::path::{Path, PathBuf};

use anyhow::Context as _;

use super::{Access, KeyState, SysctlBackend, normalize_value};
use crate::error::Error;
use crate::os::Os;

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

impl ProcSys {
    /// Open the file of `key` without following a symlink anywhere below the root: each
    /// directory is opened with O_NOFOLLOW|O_DIRECTORY relative to the one before, the key
    /// file with O_NOFOLLOW|O_NONBLOCK (a FIFO must not block) and must be a regular file.
    /// Under sudo, `--sysctl-dir` must not become a way to read or write any file root can.
    fn open_key(&self, key: &str, write: bool) -> std::io::Result<std::fs::File> {
        use std::os::fd::{FromRawFd as _, OwnedFd};
        use std::os::unix::ffi::OsStrExt as _;
        let cstr =
            |b: &[u8]| std::ffi::CString::new(b).map_err(|_| std::io::Error::from(std::io::ErrorKind::InvalidInput));
        let open_at = |dir: libc::c_int, name: &[u8], flags: libc::c_int| -> std::io::Result<OwnedFd> {
            let c = cstr(name)?;
            // SAFETY: `c` is a valid NUL-terminated string that outlives the call; `dir` is an
            // open directory descriptor or AT_FDCWD; the returned descriptor is owned below.
            let fd = unsafe { libc::openat(dir, c.as_ptr(), flags | libc::O_CLOEXEC) };
            if fd < 0 {
                return Err(std::io::Error::last_os_error());
            }
            // SAFETY: `fd` was just returned by openat and is owned by nobody else.
            Ok(unsafe { OwnedFd::from_raw_fd(fd) })
        };
        use std::os::fd::AsRawFd as _;
        let mut dir = open_at(
            libc::AT_FDCWD,
            self.root.as_os_str().as_bytes(),
            libc::O_RDONLY | libc::O_DIRECTORY,
        )?;
        let parts: Vec<&str> = key.split('.').collect();
        let (last, dirs) = parts.split_last().ok_or(std::io::ErrorKind::InvalidInput)?;
        for d in dirs {
            if matches!(*d, "" | "." | "..") {
                return Err(std::io::ErrorKind::InvalidInput.into());
            }
            dir = open_at(
                dir.as_raw_fd(),
                d.as_bytes(),
                libc::O_RDONLY | libc::O_DIRECTORY | libc::O_NOFOLLOW,
            )
            .map_err(|e| match e.raw_os_error() {
                Some(libc::ELOOP | libc::ENOTDIR) => std::io::Error::new(
                    std::io::ErrorKind::InvalidInput,
                    format!("{d}: a symbolic link or not a directory, not part of a sysctl tree"),
                ),
                _ => e,
            })?;
        }
        let mode = if write { libc::O_WRONLY } else { libc::O_RDONLY };
        let fd = open_at(
            dir.as_raw_fd(),
            last.as_bytes(),
            mode | libc::O_NOFOLLOW | libc::O_NONBLOCK,
        )
        .map_err(|e| {
            // ELOOP is what O_NOFOLLOW gives for a symlink: say so rather than "too many levels".
            if e.raw_os_error() == Some(libc::ELOOP) {
                std::io::Error::new(std::io::ErrorKind::InvalidInput, "a symbolic link, not a sysctl file")
            } else {
                e
            }
        })?;
        let f = std::fs::File::from(fd);
        if !f.metadata()?.file_type().is_file() {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                "not a regular file, so not a sysctl",
            ));
        }
        Ok(f)
    }
}

/// Longest value read from a key file: /proc/sys values are a line; a fake tree's file
/// could be anything.
const MAX_VALUE_BYTES: u64 = 4096;

impl SysctlBackend for ProcSys {
    fn os(&self) -> Os {
        Os::Linux
    }

    fn read(&self, key: &str) -> KeyState {
        use std::io::Read as _;
        if !Os::Linux.is_network_key(key) {
            return KeyState::Absent;
        }
        let f = match self.open_key(key, false) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return KeyState::Absent,
            Err(e) => return KeyState::Unreadable(e.to_string()),
        };
        let access = match f.metadata() {
            Ok(m) => access_of(&m),
            Err(e) => return KeyState::Unreadable(e.to_string()),
        };
        let mut buf = Vec::new();
        if let Err(e) = (&f).take(MAX_VALUE_BYTES + 1).read_to_end(&mut buf) {
            return KeyState::Unreadable(e.to_string());
        }
        if buf.len() as u64 > MAX_VALUE_BYTES {
            return KeyState::Unreadable(format!("longer than {MAX_VALUE_BYTES} bytes, so not a sysctl value"));
        }
        match String::from_utf8(buf) {
            Ok(v) => KeyState::Present {
                value: normalize_value(&v),
                access,
            },
            Err(_) => KeyState::Unreadable("not text (invalid UTF-8), so not a sysctl value".into()),
        }
    }

    fn write(&self, key: &str, value: &str) -> anyhow::Result<()> {
        if !Os::Linux.is_network_key(key) {
            return Err(Error::usage(format!("refusing to write {key}: not a networking key (net.*)")).into());
        }
        let path = self.path(key);
        let mut f = self.open_key(key, true).map_err(|e| write_error(key, &e))?;
        // A fake tree's file holds the old value: cut it. /proc/sys files report size 0 and
        // take a write whole, without truncation (which procfs may not support).
        if f.metadata().is_ok_and(|m| m.len() > 0) {
            f.set_len(0).map_err(|e| write_error(key, &e))?;
        }
        f.write_all(value.as_bytes())
            .and_then(|()| f.flush())
            .map_err(|e| write_error(key, &e))
            .with_context(|| format!("writing {}", path.display()))
    }

    fn describe(&self) -> String {
        self.root.display().to_string()
    }
}

/// Who may write a key file, from its mode: no write bit at all is read-only for root too
/// (proc_sys_permission checks the mode bits even for root, and a child network namespace
/// gets 0444 for host-wide keys); otherwise root may, and another user as owner, group or
/// other by the bits.
fn access_of(m: &std::fs::Metadata) -> Access {
    use std::os::unix::fs::MetadataExt as _;
    let mode = m.mode();
    if mode & 0o222 == 0 {
        return Access::ReadOnly;
    }
    // SAFETY: geteuid and getegid have no preconditions and cannot fail.
    let (uid, gid) = unsafe { (libc::geteuid(), libc::getegid()) };
    let may =
        uid == 0 || (m.uid() == uid && mode & 0o200 != 0) || (m.gid() == gid && mode & 0o020 != 0) || mode & 0o002 != 0;
    if may { Access::Writable } else { Access::NeedsRoot }
}

fn write_error(key: &str, e: &std::io::Error) -> anyhow::Error {
    // Our own refusals (a symlink, not a regular file) carry their message.
    if e.get_ref().is_some() {
        return Error::usage(format!("cannot write {key}: {e}")).into();
    }
    match e.kind() {
        std::io::ErrorKind::PermissionDenied => Error::not_permitted(format!(
            "cannot write {key}: permission denied (root is needed; in a child network namespace the key may be read-only)"
        ))
        .into(),
        std::io::ErrorKind::NotFound => Error::usage(format!("cannot write {key}: no such key on this kernel")).into(),
        std::io::ErrorKind::InvalidInput => {
            Error::usage(format!("cannot write {key}: the kernel rejected the value (EINVAL)")).into()
        }
        _ => Error::system(format!("cannot write {key}: {e}")).into(),
    }
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
                access: Access::Writable
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
