//! The operating systems tcptune advises for, and what each calls its networking sysctls and
//! how it sets one. Pure: no I/O.

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
    /// shell: `sysctl -w key=value` on Linux, `sysctl key=value` on FreeBSD and macOS, the word
    /// `key=value` quoted by the one rule ([`crate::text::shell_word`]): a value of several
    /// fields is `'net.ipv4.tcp_rmem=4096 131072 6291456'`.
    pub fn set_command(self, key: &str, value: &str) -> String {
        let set = match self {
            Self::Linux => "sysctl -w",
            Self::Freebsd | Self::Macos => "sysctl",
        };
        // One word `key=value`, quoted by the one rule.
        format!("{set} {}", crate::text::shell_word(&format!("{key}={value}")))
    }
}

impl fmt::Display for Os {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
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
            "sysctl -w 'net.ipv4.tcp_rmem=4096 131072 6291456'"
        );
        assert_eq!(
            Os::Freebsd.set_command("net.inet.tcp.rfc1323", "1"),
            "sysctl net.inet.tcp.rfc1323=1"
        );
        assert_eq!(
            Os::Macos.set_command("net.inet.tcp.sack", "$(x) y"),
            "sysctl 'net.inet.tcp.sack=$(x) y'"
        );
        assert_eq!(Os::Linux.set_command("net.x", ""), "sysctl -w net.x=");
    }
}
