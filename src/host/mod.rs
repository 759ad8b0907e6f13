//! Facts about the machine tcptune runs on, read from the OS: one implementation of each.
//!
//! * [`linux`]: procfs, sysfs and sysctl.d files (network namespace, which configuration files
//!   apply in what order and what they set, processes by name, TCP counters, default routes,
//!   interfaces) and rtnetlink qdiscs.
//! * [`ethtool`] (Linux): NIC offloads through the SIOCETHTOOL ioctl.
//! * [`facts`]: the facts advice is computed from, gathered into one value ([`Facts`]) with
//!   [`linux`]'s readers (which know nothing of it).
//! * here: the page size and the RAM, which every OS has.
//!
//! Sysctl values are not here: they go through [`crate::sysctl::SysctlBackend`], which may
//! point at another tree or machine. This module reads this machine only, and decides nothing:
//! it returns what it found (None where it could not tell) and the callers judge.

#[cfg(target_os = "linux")]
pub mod ethtool;
pub mod facts;
pub mod linux;

pub use facts::Facts;

/// Whether this process runs with root's effective uid (what writing sysctls needs).
pub fn is_root() -> bool {
    euid() == 0
}

/// This process's effective user id, for words that depend on it (a hint never tells root to
/// run as root).
pub fn euid() -> u32 {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() }
}

/// The sysctl store of `os`: the tree under `sysctl_dir` (Linux) or the `sysctl_cmd` program
/// (FreeBSD, macOS), else this machine's when it runs `os`, else none (advising for another OS).
pub fn sysctl_store(
    os: crate::os::Os,
    sysctl_dir: Option<&std::path::Path>,
    sysctl_cmd: Option<&std::path::Path>,
) -> anyhow::Result<Option<Box<dyn crate::sysctl::SysctlBackend>>> {
    use crate::os::Os;
    let running = Os::running();
    Ok(match os {
        Os::Linux => match sysctl_dir {
            // Root reads and writes every key file of this tree: under sudo it must be one
            // that only root could have put there, as --state-dir must.
            Some(dir) if is_root() => {
                crate::fsutil::check_trusted_tree(dir, "--sysctl-dir")?;
                Some(Box::new(crate::sysctl::linux::ProcSys::new(dir)))
            }
            Some(dir) => Some(Box::new(crate::sysctl::linux::ProcSys::new(dir))),
            None if running == Os::Linux => Some(Box::new(crate::sysctl::linux::ProcSys::new("/proc/sys"))),
            None => None,
        },
        Os::Freebsd | Os::Macos => match sysctl_cmd {
            // Root runs this program for every read and write: under sudo it must be one
            // that only root could have put there.
            Some(cmd) if is_root() => Some(Box::new(crate::sysctl::bsd::SysctlCmd::new(
                os,
                crate::fsutil::check_trusted_program(cmd, "the --sysctl-cmd program")?,
            ))),
            Some(cmd) => Some(Box::new(crate::sysctl::bsd::SysctlCmd::new(os, cmd))),
            None if running == os => Some(Box::new(crate::sysctl::bsd::SysctlCmd::new(os, "sysctl"))),
            None => None,
        },
    })
}

/// The size of a memory page in bytes (`sysconf(_SC_PAGESIZE)`): what `net.ipv4.tcp_mem` and
/// /proc/net/sockstat count in. 4 KiB on x86-64, often 16 KiB or 64 KiB on arm64 and ppc64.
pub fn page_size() -> u64 {
    // SAFETY: sysconf has no preconditions.
    let p = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    u64::try_from(p).ok().filter(|&p| p > 0).unwrap_or(4096)
}

/// Total RAM in bytes; None when the OS does not say.
pub fn ram() -> Option<u64> {
    let mut sys = sysinfo::System::new().ok()?;
    sys.refresh_memory();
    Some(sys.total_memory()).filter(|&r| r > 0)
}

#[cfg(test)]
mod tests {
    #[test]
    fn page_size_is_a_power_of_two() {
        let p = super::page_size();
        assert!(p >= 4096 && p.is_power_of_two(), "{p}");
    }
}
