//! The facts of this machine that check's host rules read, gathered in one go from
//! [`crate::host`] (and [`crate::measure::link`] for an interface's sysfs values) before any
//! rule runs, so the rules stay pure and a test can fabricate [`LocalFacts`].

use std::collections::BTreeMap;
use std::path::PathBuf;

use crate::host::linux::TcpCounters;
use crate::text::Foreign;

/// Where a key is set: each file and value (whitespace normalised), in the order applied (the
/// last one wins).
pub type Setters = BTreeMap<String, Vec<(PathBuf, String)>>;

/// Every key the sysctl files (path, bytes, as [`crate::host::linux::read_sysctl_conf_files`]
/// reads them) set, with all its setters.
pub fn setters(files: &[(PathBuf, Vec<u8>)]) -> Setters {
    let mut out: Setters = BTreeMap::new();
    for (path, text) in files {
        for l in crate::host::linux::conf_lines(text) {
            out.entry(l.key)
                .or_default()
                .push((path.clone(), crate::sysctl::normalize_value(l.value.raw())));
        }
    }
    out
}

/// One network interface.
#[derive(Debug)]
pub struct InterfaceFacts {
    /// Its name as the kernel has it: whoever created the interface chose it, and Linux
    /// takes ESC and other control characters in one; shown escaped.
    pub name: Foreign,
    pub mtu: Option<u32>,
    pub duplex: Option<String>,
    /// A TUN/TAP device: its owner, not ethtool, decides TSO.
    pub tun: bool,
    /// TSO/GSO/GRO (SIOCETHTOOL).
    #[cfg(target_os = "linux")]
    pub offloads: std::io::Result<crate::host::ethtool::Offloads>,
    /// The qdisc kinds on it; looked up only where BBR wants fq (None otherwise).
    pub qdiscs: Option<Result<Vec<String>, String>>,
}

/// Everything the host rules read besides the sysctls.
#[derive(Debug)]
pub struct LocalFacts {
    /// The interfaces to judge: the one towards the host, else those with a default route, else
    /// every interface that is up.
    pub interfaces: Vec<InterfaceFacts>,
    pub tcp_counters: Option<TcpCounters>,
    pub ram: Option<u64>,
    pub tcp_mem_in_use_pages: Option<u64>,
    pub page_size: u64,
    /// Whether this kernel has the fq qdisc (`sch_fq`) built in or loaded: the fact advice
    /// leaves fq out by ([`crate::host::Facts::sch_fq`]), gathered by the command. None: not
    /// known.
    pub sch_fq: Option<bool>,
    /// Whether ethtool is on PATH: a fix is an ethtool command only where it is.
    pub ethtool: bool,
    pub setters: Setters,
    /// The sysctl configuration files that could not be read, and why.
    pub unchecked: Vec<crate::host::linux::Unchecked>,
    pub child_netns: Option<bool>,
    /// Running tuned/bpftune: (pid, name).
    pub tuning_daemons: Vec<(u32, String)>,
    /// The host routes `apply --scope path` added (protocol 116), or why they could not be read.
    pub tcptune_routes: Result<Vec<crate::route::Route>, String>,
    /// Which of them a snapshot still names, gathered by the command from its state directory.
    pub route_snapshots: RouteSnapshots,
}

/// What the snapshot store says of the host routes here: the command reads it (it owns
/// `--state-dir`), so that check tells a route `tcptune revert` removes from a proto 116 route
/// no snapshot names (planted, or left by a snapshot reverted by hand or deleted).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RouteSnapshots {
    /// The state directory read, for the words.
    pub state_dir: PathBuf,
    /// Each destination ("198.18.0.2/32") a snapshot still in effect here (applied or
    /// applying; this boot, this network namespace) names, and the newest such snapshot's id.
    pub named: BTreeMap<String, String>,
    /// What of the store could not be read ("2 files there could not be read"): a route no
    /// snapshot read names may be named by one of those.
    pub unread: Option<String>,
}

/// Gather the facts of this machine. `towards`: the interface towards `--host`, when measured;
/// `bbr`: whether the qdiscs matter (BBR paces through fq); `sch_fq`: whether this kernel has
/// the fq qdisc, as the command's [`crate::host::Facts`] say; `route_snapshots`: what the
/// command read of its snapshot store.
#[cfg(target_os = "linux")]
pub fn gather(towards: Option<&str>, bbr: bool, sch_fq: Option<bool>, route_snapshots: RouteSnapshots) -> LocalFacts {
    use std::path::Path;

    use crate::host::{self, linux as fs};

    let proc = Path::new(fs::PROC);
    let sys_net = Path::new(fs::SYS_NET);
    let names = match towards {
        Some(i) => vec![i.to_string()],
        None => {
            let routes = fs::default_routes(proc);
            if routes.is_empty() {
                fs::up_interfaces(sys_net)
            } else {
                routes
            }
        }
    };
    // One netlink dump serves every interface.
    let qdiscs = bbr.then(fs::qdisc_kinds);
    let interfaces = names
        .into_iter()
        .map(|name| {
            let sysfs = crate::measure::link::read_link_sysfs(sys_net, &name);
            let qdiscs = qdiscs.as_ref().map(|all| {
                let all = all.as_ref().map_err(Clone::clone)?;
                let index = fs::ifindex(sys_net, &name).ok_or_else(|| "no interface index".to_string())?;
                Ok(all.get(&index).cloned().unwrap_or_default())
            });
            InterfaceFacts {
                mtu: sysfs.mtu,
                duplex: sysfs.duplex,
                tun: fs::is_tun(sys_net, &name),
                offloads: host::ethtool::offloads(&name),
                qdiscs,
                name: Foreign::new(name),
            }
        })
        .collect();
    let conf = fs::read_sysctl_conf_files(Path::new("/"));
    LocalFacts {
        interfaces,
        tcp_counters: fs::tcp_counters(proc),
        ram: host::ram(),
        tcp_mem_in_use_pages: fs::tcp_mem_in_use_pages(proc),
        page_size: host::page_size(),
        sch_fq,
        ethtool: fs::on_path("ethtool", std::env::var_os("PATH").as_deref()),
        setters: setters(&conf.read),
        // Bounded and never blocking (a FIFO in /etc/sysctl.d used to hang `check`): what could
        // not be read is named in a finding of its own.
        unchecked: conf.unchecked,
        child_netns: fs::in_child_netns(proc),
        tuning_daemons: fs::find_processes(proc, &fs::TUNING_DAEMONS),
        tcptune_routes: crate::route::netlink::tcptune_routes().map_err(|e| e.to_string()),
        route_snapshots,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn setters_in_the_order_applied_with_values_normalised() {
        let files = vec![
            (
                PathBuf::from("/etc/sysctl.d/60-tcptune.conf"),
                b"net.ipv4.tcp_rmem = 4096 131072 20643840\n".to_vec(),
            ),
            (
                PathBuf::from("/etc/sysctl.d/99-cloud.conf"),
                b"# cloud image \xa9 ACME\n; also a comment\n-net/ipv4/tcp_rmem=4096\t87380   6291456\nnet.ipv4.conf.*.rp_filter = 2\n"
                    .to_vec(),
            ),
            (PathBuf::from("/etc/sysctl.conf"), b"net.core.rmem_max = 1\n".to_vec()),
        ];
        let s = setters(&files);
        let rmem = &s["net.ipv4.tcp_rmem"];
        assert_eq!(rmem.len(), 2);
        assert_eq!(rmem[1].1, "4096 87380 6291456");
        assert!(rmem[1].0.ends_with("99-cloud.conf"));
        assert!(!s.keys().any(|k| k.contains('*')));
        assert_eq!(s["net.core.rmem_max"][0].1, "1");
    }
}
