//! Where sysctl values live. One trait, one implementation per kind of OS:
//! [`linux::ProcSys`] reads and writes files under /proc/sys (or an injected root),
//! [`bsd::SysctlCmd`] runs sysctl(8) (or an injected program) on FreeBSD and macOS.

pub mod bsd;
pub mod linux;

use std::fmt;

/// The operating systems tcptune advises for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Os {
    Linux,
    Freebsd,
    Macos,
}

impl Os {
    /// The OS this binary runs on (Linux for anything not FreeBSD or macOS).
    pub const fn running() -> Self {
        if cfg!(target_os = "freebsd") {
            Self::Freebsd
        } else if cfg!(target_os = "macos") {
            Self::Macos
        } else {
            Self::Linux
        }
    }

    pub const fn name(self) -> &'static str {
        match self {
            Self::Linux => "linux",
            Self::Freebsd => "freebsd",
            Self::Macos => "macos",
        }
    }

    /// Whether `key` lies in the networking part of this OS's sysctl tree — the only part
    /// tcptune ever reads for advice or writes.
    pub fn is_network_key(self, key: &str) -> bool {
        let ok_chars = !key.is_empty()
            && key.len() <= 256
            && key
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
            && !key.split('.').any(str::is_empty);
        let prefixes: &[&str] = match self {
            Self::Linux => &["net."],
            Self::Freebsd | Self::Macos => &["kern.ipc.", "net.inet.", "net.inet6."],
        };
        ok_chars && prefixes.iter().any(|p| key.starts_with(p))
    }

    /// The command that sets `key` to `value` now (not at boot) on this OS, to paste into a
    /// shell: `sysctl -w key=value` on Linux, `sysctl key=value` on FreeBSD and macOS. A value of
    /// several fields goes in double quotes, as sysctl(8) and most guides write it; a value a
    /// shell would expand even inside double quotes is single-quoted
    /// ([`crate::text::shell_quote`]).
    pub fn set_command(self, key: &str, value: &str) -> String {
        let quoted = crate::text::shell_quote(value);
        let quoted = if quoted.starts_with('\'') && !value.contains(['$', '`', '\\', '"', '!', '\'', '\n']) {
            format!("\"{value}\"")
        } else {
            quoted
        };
        let set = match self {
            Self::Linux => "sysctl -w",
            Self::Freebsd | Self::Macos => "sysctl",
        };
        format!("{set} {}={quoted}", crate::text::shell_quote(key))
    }
}

impl fmt::Display for Os {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

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

/// Whether this process runs with root's effective uid (what writing sysctls needs).
pub fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() == 0 }
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
/// FreeBSD prints "newreno, cubic" or a table ("CCmod D PCB count" then one per line).
pub fn offers(available: &str, name: &str) -> bool {
    available
        .lines()
        .filter(|l| !l.trim_start().starts_with("CCmod"))
        .flat_map(|l| l.split(|c: char| c.is_whitespace() || c == ','))
        .any(|t| t == name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn network_keys_only() {
        let l = Os::Linux;
        assert!(l.is_network_key("net.ipv4.tcp_rmem"));
        assert!(l.is_network_key("net.core.rmem_max"));
        for bad in [
            "kernel.panic",
            "vm.swappiness",
            "net",
            "net..ipv4",
            "net.ipv4/../../kernel",
            "net.ipv4.tcp_rmem ",
            "",
            "netx.ipv4",
        ] {
            assert!(!l.is_network_key(bad), "{bad}");
        }
        let b = Os::Freebsd;
        assert!(b.is_network_key("kern.ipc.maxsockbuf"));
        assert!(b.is_network_key("net.inet.tcp.sendbuf_max"));
        assert!(!b.is_network_key("kern.hostname"));
        assert!(!b.is_network_key("net.ipv4.tcp_rmem"));
    }

    #[test]
    fn set_commands_paste_into_a_shell() {
        assert_eq!(
            Os::Linux.set_command("net.ipv4.tcp_sack", "1"),
            "sysctl -w net.ipv4.tcp_sack=1"
        );
        assert_eq!(
            Os::Linux.set_command("net.ipv4.tcp_rmem", "4096 131072 6291456"),
            "sysctl -w net.ipv4.tcp_rmem=\"4096 131072 6291456\""
        );
        assert_eq!(
            Os::Freebsd.set_command("net.inet.tcp.rfc1323", "1"),
            "sysctl net.inet.tcp.rfc1323=1"
        );
        assert_eq!(
            Os::Macos.set_command("net.inet.tcp.sack", "$(x) y"),
            "sysctl net.inet.tcp.sack='$(x) y'"
        );
        assert_eq!(Os::Linux.set_command("net.x", ""), "sysctl -w net.x=\"\"");
    }
}
