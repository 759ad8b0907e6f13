//! FreeBSD and macOS: sysctl values through sysctl(8), or a program given with
//! `--sysctl-cmd` that behaves like it (tests use a shell script over a directory).

use std::path::PathBuf;
use std::process::Command;

use super::{KeyState, SysctlBackend, normalize_value};
use crate::error::Error;
use crate::os::Os;

pub struct SysctlCmd {
    os: Os,
    program: PathBuf,
}

impl SysctlCmd {
    pub fn new(os: Os, program: impl Into<PathBuf>) -> Self {
        Self {
            os,
            program: program.into(),
        }
    }
}

impl SysctlBackend for SysctlCmd {
    fn os(&self) -> Os {
        self.os
    }

    fn read(&self, key: &str) -> KeyState {
        if !self.os.is_network_key(key) {
            return KeyState::Absent;
        }
        match Command::new(&self.program).arg("-n").arg(key).output() {
            Ok(out) if out.status.success() => KeyState::Present {
                value: normalize_value(&String::from_utf8_lossy(&out.stdout)),
                access: super::Access::Writable,
            },
            // sysctl(8) says "unknown oid" and exits 1 for a key this kernel lacks.
            Ok(out) => {
                let err = String::from_utf8_lossy(&out.stderr);
                if err.contains("unknown oid") || err.contains("No such file") || err.is_empty() {
                    KeyState::Absent
                } else {
                    KeyState::Unreadable(err.trim().to_string())
                }
            }
            Err(e) => KeyState::Unreadable(format!("cannot run {}: {e}", self.program.display())),
        }
    }

    fn write(&self, key: &str, value: &str) -> anyhow::Result<()> {
        if !self.os.is_network_key(key) {
            return Err(Error::usage(format!(
                "refusing to write {key}: not a networking key (kern.ipc.*, net.inet.*, net.inet6.*)"
            ))
            .into());
        }
        let out = Command::new(&self.program)
            .arg(format!("{key}={value}"))
            .output()
            .map_err(|e| Error::system(format!("cannot run {}: {e}", self.program.display())))?;
        if out.status.success() {
            return Ok(());
        }
        let err = String::from_utf8_lossy(&out.stderr).trim().to_string();
        if err.contains("Operation not permitted")
            || err.contains("Permission denied")
            || err.contains("read only")
            || err.contains("read-only")
        {
            Err(Error::not_permitted(format!("cannot set {key}: {err}")).into())
        } else {
            Err(Error::usage(format!("cannot set {key}: {err}")).into())
        }
    }

    fn describe(&self) -> String {
        format!("{} (sysctl(8))", self.program.display())
    }
}
