//! The sysctl store, and the grammar of the files that set it. One trait for where values
//! live, one implementation per kind of OS: [`linux::ProcSys`] reads and writes files under
//! /proc/sys (or an injected root), [`bsd::SysctlCmd`] runs sysctl(8) (or an injected program)
//! on FreeBSD and macOS. [`file`]: the sysctl.d / sysctl.conf grammar and its checks.

pub mod bsd;
pub mod file;
pub mod linux;

use crate::os::Os;

/// Who may change a key that is present. "Not root" and "read-only here" are different
/// facts: the first is the reader's, the second the kernel's, and advice must not confuse
/// them (a normal user reads advice for root to apply).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// This process may write it.
    Writable,
    /// Root (or the file's owner) may write it; this process may not.
    NeedsRoot,
    /// Nobody may write it here, root included (e.g. net.core.rmem_max inside a child
    /// network namespace, mode 0444).
    ReadOnly,
}

/// What is known about one key on the running system.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KeyState {
    /// Present, with who may change it.
    Present { value: String, access: Access },
    /// The key does not exist here (module not loaded, not in this namespace, other OS version).
    Absent,
    /// It exists but could not be read.
    Unreadable(String),
}

impl KeyState {
    pub fn value(&self) -> Option<&str> {
        match self {
            Self::Present { value, .. } => Some(value),
            _ => None,
        }
    }
}

/// Access to one system's sysctl values.
///
/// # Platform specific behavior
/// * Linux: keys map to files under `/proc/sys` (`net.ipv4.tcp_rmem` →
///   `/proc/sys/net/ipv4/tcp_rmem`); writability comes from the file mode, which the
///   kernel sets to 0444 for keys a child network namespace may not change.
/// * FreeBSD/macOS: `sysctl -n KEY` reads; a key sysctl(8) does not know is absent.
///   Writability is not known before a write ([`Access::Writable`]).
pub trait SysctlBackend {
    fn os(&self) -> Os;
    fn read(&self, key: &str) -> KeyState;
    /// Set one key. Errors are one-line and name the key.
    fn write(&self, key: &str, value: &str) -> anyhow::Result<()>;
    /// Where the values come from, for headers and messages ("/proc/sys", "sysctl(8)").
    fn describe(&self) -> String;
}

/// Normalise whitespace inside a multi-field value ("4096\t131072  6291456" → "4096 131072 6291456").
pub fn normalize_value(v: &str) -> String {
    v.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Whether two sysctl values are the same setting: equal once their whitespace is normalised
/// (the kernel reads a vector back tab-separated; a file gives it with spaces).
pub fn same_value(a: &str, b: &str) -> bool {
    normalize_value(a) == normalize_value(b)
}

/// Whether `name` is among the algorithms `available` lists. Linux prints "reno cubic bbr";
/// FreeBSD prints "newreno, cubic" or a table ("CCmod D PCB count" then one per line) — which
/// a reader that normalises whitespace ([`normalize_value`]) turns into one line, so the
/// table's header words are skipped by name, not by line.
pub fn offers(available: &str, name: &str) -> bool {
    const TABLE_HEADER: [&str; 4] = ["CCmod", "D", "PCB", "count"];
    !TABLE_HEADER.contains(&name)
        && available
            .split(|c: char| c.is_whitespace() || c == ',')
            .any(|t| t == name)
}
