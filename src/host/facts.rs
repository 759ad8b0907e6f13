//! The facts of one machine that advice is computed from, as one value gathered before any
//! decision: the OS, the running values of the keys the advice reads, whether the values are
//! a child network namespace's (which may choose only some congestion controls), whether the
//! fq qdisc is there, the page size, the RAM and the kernel's release. The advice reads this
//! value and nothing else of the machine, so it can be computed for a machine tcptune does not
//! run on from facts gathered there.
//!
//! [`gather`] builds it for a store this process can read (this machine's /proc/sys, a
//! `--sysctl-dir` tree, a `--sysctl-cmd` program) or for another system with nothing known
//! but its OS.

use std::collections::BTreeMap;
use std::path::Path;

use crate::os::Os;
use crate::sysctl::{KeyState, SysctlBackend};

/// Everything advice needs to know about the machine it advises.
#[derive(Debug, Clone, PartialEq)]
pub struct Facts {
    pub os: Os,
    /// The running values, None when advising for another system (nothing is known of its
    /// values: the profile's stock values stand in).
    pub running: Option<Running>,
    /// Linux: whether the values are a child network namespace's, which may choose only the
    /// algorithms in net.ipv4.tcp_allowed_congestion_control. None: not this machine, or not
    /// Linux.
    pub child_netns: Option<bool>,
    /// Whether the fq qdisc (`sch_fq`, which BBR paces through best) is built in or loaded.
    /// None: not known (not this machine).
    pub sch_fq: Option<bool>,
    /// The size of a memory page, bytes: what tcp_mem counts in.
    pub page_size: u64,
    /// Total RAM, bytes; None when not known (not this machine).
    pub ram: Option<u64>,
    /// The kernel's release (`uname -r`), when known.
    pub kernel: Option<String>,
}

/// The running values of the keys gathered, and where they were read.
#[derive(Debug, Clone, PartialEq)]
pub struct Running {
    /// "/proc/sys", "sysctl (sysctl(8))": for headers and messages.
    pub from: String,
    pub values: BTreeMap<String, KeyState>,
}

impl Facts {
    /// Facts of a system nothing is known of but its OS (and this machine's page size, which
    /// the memory budget needs): advice for another OS.
    pub fn unknown(os: Os) -> Self {
        Self {
            os,
            running: None,
            child_netns: None,
            sch_fq: None,
            page_size: super::page_size(),
            ram: None,
            kernel: None,
        }
    }

    /// What is known of `key`: None when no running values are (another system); a key that
    /// was not gathered reads as absent.
    pub fn read(&self, key: &str) -> Option<KeyState> {
        let r = self.running.as_ref()?;
        Some(r.values.get(key).cloned().unwrap_or(KeyState::Absent))
    }

    /// The running value of `key`, when present.
    pub fn value(&self, key: &str) -> Option<&str> {
        self.running.as_ref()?.values.get(key)?.value()
    }

    /// Where the running values were read from.
    pub fn values_from(&self) -> Option<&str> {
        self.running.as_ref().map(|r| r.from.as_str())
    }

    /// Whether the kernel offers congestion control `cc` (Linux's available list); None when
    /// the list is not known.
    pub fn offers(&self, cc: &str) -> Option<bool> {
        self.value(AVAILABLE_CC).map(|list| crate::sysctl::offers(list, cc))
    }

    /// Why `cc` cannot become the default congestion control on that machine, when the kernel
    /// would refuse it before anything is written ([`super::linux::cc_refused`]).
    pub fn cc_refused(&self, cc: &str) -> Option<String> {
        super::linux::cc_refused(cc, self.value(ALLOWED_CC)?, self.value(CURRENT_CC), || {
            self.child_netns == Some(true)
        })
    }
}

/// Why `cc` cannot become the default congestion control of this machine's network
/// namespace, when the kernel would refuse it before anything is written (see
/// [`super::linux::cc_refused`]): [`Facts::cc_refused`] for a store read now. `store` must be
/// this machine's /proc/sys.
pub fn cc_refused_here(store: &dyn SysctlBackend, cc: &str) -> Option<String> {
    let allowed = store.read(ALLOWED_CC);
    let current = store.read(CURRENT_CC);
    super::linux::cc_refused(cc, allowed.value()?, current.value(), || {
        super::linux::runs_in_child_netns(store)
    })
}

/// The Linux keys the facts always carry besides what a profile names: the congestion
/// controls (offered, allowed, current) and TCP's memory limits.
pub const AVAILABLE_CC: &str = "net.ipv4.tcp_available_congestion_control";
pub const ALLOWED_CC: &str = "net.ipv4.tcp_allowed_congestion_control";
pub const CURRENT_CC: &str = "net.ipv4.tcp_congestion_control";
pub const TCP_MEM: &str = "net.ipv4.tcp_mem";
/// All of them.
pub const ALWAYS: [&str; 4] = [AVAILABLE_CC, ALLOWED_CC, CURRENT_CC, TCP_MEM];

/// Gathers the facts of the system `store` reads: the running values of `keys` (and the
/// congestion-control and memory keys), and, when `local` (the store is this very machine's
/// /proc/sys or sysctl(8)), its namespace, modules, RAM and kernel. `store` None: another
/// system, nothing known but `os`.
pub fn gather(os: Os, store: Option<&dyn SysctlBackend>, local: bool, keys: &[String]) -> Facts {
    let Some(store) = store else {
        return Facts::unknown(os);
    };
    let mut values = BTreeMap::new();
    for k in keys.iter().map(String::as_str).chain(ALWAYS) {
        if !values.contains_key(k) {
            values.insert(k.to_string(), store.read(k));
        }
    }
    let linux_here = local && os == Os::Linux;
    Facts {
        os,
        running: Some(Running {
            from: store.describe(),
            values,
        }),
        child_netns: linux_here.then(|| super::linux::runs_in_child_netns(store)),
        sch_fq: linux_here.then(|| super::linux::has_module(Path::new(super::linux::SYS_MODULE), "sch_fq")),
        page_size: super::page_size(),
        ram: if local { super::ram() } else { None },
        kernel: local.then(kernel_release).flatten(),
    }
}

/// `uname -r`.
pub fn kernel_release() -> Option<String> {
    // SAFETY: utsname is plain old data; uname fills it and NUL-terminates its fields.
    let mut u: libc::utsname = unsafe { std::mem::zeroed() };
    // SAFETY: `u` is a valid, writable utsname.
    if unsafe { libc::uname(&raw mut u) } != 0 {
        return None;
    }
    // SAFETY: uname NUL-terminated `release` within its array.
    let c = unsafe { std::ffi::CStr::from_ptr(u.release.as_ptr()) };
    Some(c.to_string_lossy().into_owned()).filter(|s| !s.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sysctl::Access;

    fn present(v: &str) -> KeyState {
        KeyState::Present {
            value: v.into(),
            access: Access::ReadOnly,
        }
    }

    #[test]
    fn a_child_namespace_refuses_what_its_host_did_not_allow() {
        let mut f = Facts::unknown(Os::Linux);
        assert_eq!(f.read("net.ipv4.tcp_rmem"), None, "nothing known of another system");
        f.running = Some(Running {
            from: "test".into(),
            values: [
                (ALLOWED_CC, "reno bbr"),
                (CURRENT_CC, "reno"),
                (AVAILABLE_CC, "reno cubic bbr"),
            ]
            .into_iter()
            .map(|(k, v)| (k.to_string(), present(v)))
            .collect(),
        });
        assert_eq!(
            f.read("net.ipv4.tcp_rmem"),
            Some(KeyState::Absent),
            "not gathered: absent"
        );
        assert_eq!((f.offers("cubic"), f.offers("htcp")), (Some(true), Some(false)));
        assert_eq!(f.cc_refused("cubic"), None, "not known to be a child namespace");
        f.child_netns = Some(true);
        let why = f.cc_refused("cubic").expect("refused");
        assert!(why.contains("(reno bbr)") && why.contains("add cubic"), "{why}");
        assert_eq!(f.cc_refused("bbr"), None, "allowed");
        assert_eq!(f.cc_refused("reno"), None, "already running");
    }

    #[test]
    fn the_local_store_gives_its_values_and_where_they_came_from() {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::create_dir_all(dir.path().join("net/ipv4")).expect("mkdir");
        std::fs::write(dir.path().join("net/ipv4/tcp_rmem"), "4096 131072 6291456\n").expect("write");
        let store = crate::sysctl::linux::ProcSys::new(dir.path());
        let f = gather(Os::Linux, Some(&store), false, &["net.ipv4.tcp_rmem".to_string()]);
        assert_eq!(f.value("net.ipv4.tcp_rmem"), Some("4096 131072 6291456"));
        assert_eq!(f.read(TCP_MEM), Some(KeyState::Absent));
        assert_eq!(f.values_from(), Some(dir.path().display().to_string().as_str()));
        assert_eq!((f.child_netns, f.sch_fq, f.ram), (None, None, None), "not this machine");
    }
}
