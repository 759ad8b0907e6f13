//! Facts about the host for `tcptune check`, from files: /proc/net/snmp (retransmissions),
//! /proc/net/sockstat (TCP memory in use), /proc/net/route (default-route interfaces),
//! sysctl.d(5) files (who sets which key), /proc/PID/comm (tuning daemons).
//!
//! Every reader takes its root, so tests build fake trees; the parsers are pure.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The Tcp: counters of /proc/net/snmp that matter for retransmission (since boot, or since the
/// network namespace was created).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct TcpCounters {
    pub out_segs: u64,
    pub retrans_segs: u64,
    pub in_errs: u64,
}

impl TcpCounters {
    /// RetransSegs / OutSegs in percent; None before any segment went out.
    pub fn retrans_pct(&self) -> Option<f64> {
        #[allow(clippy::cast_precision_loss)]
        (self.out_segs > 0).then(|| 100.0 * self.retrans_segs as f64 / self.out_segs as f64)
    }
}

/// /proc/net/snmp has a header line and a value line per protocol: "Tcp: RtoAlgorithm ..." then
/// "Tcp: 1 200 ...".
pub fn parse_snmp_tcp(text: &str) -> Option<TcpCounters> {
    let mut lines = text.lines().filter(|l| l.starts_with("Tcp:"));
    let names: Vec<&str> = lines.next()?.split_whitespace().skip(1).collect();
    let values: Vec<&str> = lines.next()?.split_whitespace().skip(1).collect();
    let get = |name: &str| -> Option<u64> {
        let i = names.iter().position(|n| *n == name)?;
        values.get(i)?.parse().ok()
    };
    Some(TcpCounters {
        out_segs: get("OutSegs")?,
        retrans_segs: get("RetransSegs")?,
        in_errs: get("InErrs").unwrap_or(0),
    })
}

/// Pages of memory TCP holds now: the `mem` field of the "TCP:" line of /proc/net/sockstat.
pub fn parse_sockstat_tcp_mem(text: &str) -> Option<u64> {
    let line = text.lines().find(|l| l.starts_with("TCP:"))?;
    let words: Vec<&str> = line.split_whitespace().collect();
    let i = words.iter().position(|w| *w == "mem")?;
    words.get(i + 1)?.parse().ok()
}

/// Interfaces that carry a default route: /proc/net/route (destination 00000000, mask 0) and
/// /proc/net/ipv6_route (::/0). Deduplicated, in order of appearance.
pub fn default_route_interfaces(route: &str, ipv6_route: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut push = |name: &str| {
        if name != "lo" && !out.iter().any(|n| n == name) {
            out.push(name.to_string());
        }
    };
    for line in route.lines().skip(1) {
        let f: Vec<&str> = line.split_whitespace().collect();
        // Iface Destination Gateway Flags RefCnt Use Metric Mask ...
        if f.len() > 7 && f[1] == "00000000" && f[7] == "00000000" {
            push(f[0]);
        }
    }
    for line in ipv6_route.lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        // dest dest_plen src src_plen nexthop metric refcnt use flags iface
        if f.len() >= 10 && f[0].bytes().all(|b| b == b'0') && f[1] == "00" {
            push(f[9]);
        }
    }
    out
}

/// The sysctl.d(5) directories, most important first: a file name in an earlier directory masks
/// the same name in a later one.
pub const SYSCTL_D_DIRS: [&str; 5] = [
    "etc/sysctl.d",
    "run/sysctl.d",
    "usr/local/lib/sysctl.d",
    "usr/lib/sysctl.d",
    "lib/sysctl.d",
];

/// The configuration files under `root` in the order they are applied: the `*.conf` files of the
/// sysctl.d directories sorted by file name (masked names dropped), then /etc/sysctl.conf, which
/// procps `sysctl --system` reads last.
pub fn sysctl_files(root: &Path) -> Vec<PathBuf> {
    let mut by_name: BTreeMap<String, PathBuf> = BTreeMap::new();
    for dir in SYSCTL_D_DIRS {
        let Ok(entries) = std::fs::read_dir(root.join(dir)) else {
            continue;
        };
        for e in entries.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            if name.ends_with(".conf") {
                by_name.entry(name).or_insert_with(|| e.path());
            }
        }
    }
    let mut files: Vec<PathBuf> = by_name.into_values().collect();
    let main = root.join("etc/sysctl.conf");
    // /etc/sysctl.d/99-sysctl.conf is usually a symlink to it: read it once.
    let main_canon = std::fs::canonicalize(&main).ok();
    files.retain(|f| main_canon.is_none() || std::fs::canonicalize(f).ok() != main_canon);
    if main.is_file() {
        files.push(main);
    }
    files
}

/// `key = value` lines of a sysctl.conf: comments (# ;) skipped, a leading `-` (ignore errors)
/// dropped, `/` separators turned into dots; glob keys (systemd) skipped.
pub fn parse_sysctl_conf(text: &str) -> Vec<(String, String)> {
    text.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#') && !l.starts_with(';'))
        .filter_map(|l| l.split_once('='))
        .map(|(k, v)| {
            let k = k.trim().trim_start_matches('-').replace('/', ".");
            (k, crate::platform::normalize_value(v))
        })
        .filter(|(k, _)| !k.is_empty() && !k.contains('*'))
        .collect()
}

/// Where a key is set: each file and value, in the order applied (the last one wins).
pub type Setters = BTreeMap<String, Vec<(PathBuf, String)>>;

/// Every key set by the files, with all its setters.
pub fn setters(files: &[(PathBuf, String)]) -> Setters {
    let mut out: Setters = BTreeMap::new();
    for (path, text) in files {
        for (k, v) in parse_sysctl_conf(text) {
            out.entry(k).or_default().push((path.clone(), v));
        }
    }
    out
}

/// Read every file of [`sysctl_files`] (unreadable ones skipped).
pub fn read_sysctl_files(root: &Path) -> Vec<(PathBuf, String)> {
    sysctl_files(root)
        .into_iter()
        .filter_map(|p| std::fs::read_to_string(&p).ok().map(|t| (p, t)))
        .collect()
}

/// Processes whose name (/proc/PID/comm) is one of `names`: (pid, name).
pub fn find_processes(proc_root: &Path, names: &[&str]) -> Vec<(u32, String)> {
    let Ok(entries) = std::fs::read_dir(proc_root) else {
        return Vec::new();
    };
    let mut out: Vec<(u32, String)> = entries
        .flatten()
        .filter_map(|e| {
            let pid: u32 = e.file_name().to_str()?.parse().ok()?;
            let comm = std::fs::read_to_string(e.path().join("comm")).ok()?;
            let comm = comm.trim();
            names.contains(&comm).then(|| (pid, comm.to_string()))
        })
        .collect();
    out.sort_unstable();
    out
}

/// Whether this process runs in a network namespace other than PID 1's: sysctl.d files are
/// applied to the host's namespace, so their values need not hold in a child one. None when it
/// cannot be told (no permission to look at PID 1).
pub fn in_child_netns(proc_root: &Path) -> Option<bool> {
    let me = std::fs::read_link(proc_root.join("self/ns/net")).ok()?;
    let init = std::fs::read_link(proc_root.join("1/ns/net")).ok()?;
    Some(me != init)
}

#[cfg(test)]
mod tests {
    use super::*;

    const SNMP: &str = "\
Ip: Forwarding DefaultTTL InReceives
Ip: 1 64 12345
Tcp: RtoAlgorithm RtoMin RtoMax MaxConn ActiveOpens PassiveOpens AttemptFails EstabResets CurrEstab InSegs OutSegs RetransSegs InErrs OutRsts InCsumErrors
Tcp: 1 200 120000 -1 100 50 3 2 4 100000 200000 3000 7 12 0
Udp: InDatagrams NoPorts
Udp: 1 2
";

    #[test]
    fn snmp() {
        let c = parse_snmp_tcp(SNMP).expect("Tcp");
        assert_eq!(
            c,
            TcpCounters {
                out_segs: 200_000,
                retrans_segs: 3000,
                in_errs: 7
            }
        );
        assert_eq!(c.retrans_pct(), Some(1.5));
        assert_eq!(TcpCounters::default().retrans_pct(), None);
        assert_eq!(parse_snmp_tcp("Ip: a\nIp: 1\n"), None);
    }

    #[test]
    fn sockstat() {
        let s = "sockets: used 120\nTCP: inuse 5 orphan 0 tw 2 alloc 7 mem 42\nUDP: inuse 1 mem 0\n";
        assert_eq!(parse_sockstat_tcp_mem(s), Some(42));
        assert_eq!(parse_sockstat_tcp_mem("TCP: inuse 5\n"), None);
    }

    #[test]
    fn default_routes() {
        let route = "\
Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU\tWindow\tIRTT
eth0\t00000000\t0100A8C0\t0003\t0\t0\t100\t00000000\t0\t0\t0
eth0\t0000A8C0\t00000000\t0001\t0\t0\t100\t00FFFFFF\t0\t0\t0
wg0\t00000000\t00000000\t0001\t0\t0\t50\t00000000\t0\t0\t0
";
        let v6 = "\
00000000000000000000000000000000 00 00000000000000000000000000000000 00 fe800000000000000000000000000001 00000400 00000001 00000000 00000003     eth1
fe800000000000000000000000000000 40 00000000000000000000000000000000 00 00000000000000000000000000000000 00000100 00000001 00000000 00000001     eth0
00000000000000000000000000000000 00 00000000000000000000000000000000 00 00000000000000000000000000000000 ffffffff 00000001 00000000 00200200       lo
";
        assert_eq!(default_route_interfaces(route, v6), vec!["eth0", "wg0", "eth1"]);
        assert!(default_route_interfaces("", "").is_empty());
    }

    #[test]
    fn sysctl_d_order_masking_and_parsing() {
        let root = tempfile::tempdir().expect("tempdir");
        let w = |p: &str, t: &str| {
            let p = root.path().join(p);
            std::fs::create_dir_all(p.parent().expect("parent")).expect("mkdir");
            std::fs::write(p, t).expect("write");
        };
        w("usr/lib/sysctl.d/50-default.conf", "net.ipv4.tcp_sack = 1\n");
        w("usr/lib/sysctl.d/60-tcptune.conf", "masked\n");
        w(
            "etc/sysctl.d/60-tcptune.conf",
            "net.ipv4.tcp_rmem = 4096 131072 20643840\n",
        );
        w(
            "etc/sysctl.d/99-cloud.conf",
            "# cloud image\n; also a comment\n-net/ipv4/tcp_rmem=4096\t87380   6291456\nnet.ipv4.conf.*.rp_filter = 2\n",
        );
        w("etc/sysctl.d/README", "not a conf file");
        w("etc/sysctl.conf", "net.core.rmem_max = 1\n");
        let files = sysctl_files(root.path());
        let names: Vec<String> = files
            .iter()
            .map(|p| p.strip_prefix(root.path()).expect("under root").display().to_string())
            .collect();
        assert_eq!(
            names,
            [
                "usr/lib/sysctl.d/50-default.conf",
                "etc/sysctl.d/60-tcptune.conf",
                "etc/sysctl.d/99-cloud.conf",
                "etc/sysctl.conf"
            ]
        );
        let s = setters(&read_sysctl_files(root.path()));
        let rmem = &s["net.ipv4.tcp_rmem"];
        assert_eq!(rmem.len(), 2);
        assert_eq!(rmem[1].1, "4096 87380 6291456");
        assert!(rmem[1].0.ends_with("99-cloud.conf"));
        assert!(!s.keys().any(|k| k.contains('*')));
        assert_eq!(s["net.core.rmem_max"][0].1, "1");
    }

    #[test]
    fn processes_by_name() {
        let root = tempfile::tempdir().expect("tempdir");
        for (pid, comm) in [
            ("1", "systemd\n"),
            ("812", "bpftune\n"),
            ("900", "tuned\n"),
            ("self", "x\n"),
        ] {
            std::fs::create_dir_all(root.path().join(pid)).expect("mkdir");
            std::fs::write(root.path().join(pid).join("comm"), comm).expect("write");
        }
        assert_eq!(
            find_processes(root.path(), &["bpftune", "tuned"]),
            vec![(812, "bpftune".to_string()), (900, "tuned".to_string())]
        );
        assert!(find_processes(Path::new("/nonexistent"), &["x"]).is_empty());
    }
}
