//! Linux host facts, read from files: the network namespace (/proc/PID/ns/net), sysctl.d(5)
//! files (which apply in what order, and what they set), running processes by name
//! (/proc/PID/comm), TCP counters (/proc/net/snmp, /proc/net/sockstat), default routes
//! (/proc/net/route, ipv6_route), interfaces (/sys/class/net) — and, Linux builds only, qdiscs
//! through rtnetlink.
//!
//! This is the one place that knows these files. Every reader takes its root (`/`, `/proc` or
//! `/sys/class/net` on a real host), so tests build fake trees; the parsers are pure. The file
//! readers compile on every OS because `--os linux` and snapshot identities use them anywhere
//! (they find nothing where the files are absent). Nothing here knows about sysctl backends,
//! commands or findings: callers decide what a missing fact means.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Where procfs is mounted on a real host.
pub const PROC: &str = "/proc";
/// Where sysfs lists the network interfaces on a real host.
pub const SYS_NET: &str = "/sys/class/net";

/// Where the kernel lists its loaded (or built-in, with parameters) modules.
pub const SYS_MODULE: &str = "/sys/module";

/// Whether the kernel has module `name` loaded or built in (`/sys/module/NAME` exists), e.g.
/// `sch_fq` for the fq qdisc that pacing wants. Under `sys_module` (tests use a fake tree).
pub fn has_module(sys_module: &Path, name: &str) -> bool {
    sys_module.join(name).exists()
}

fn read(p: impl AsRef<Path>) -> Option<String> {
    std::fs::read_to_string(p).ok()
}

// ---------------------------------------------------------------- network namespace

/// The inode of the network namespace of process `pid` ("self" for this one): what
/// /proc/PID/ns/net points at, `net:[INODE]`. None without procfs or without permission (another
/// user's process needs ptrace access).
pub fn netns_inode(proc_root: &Path, pid: &str) -> Option<u64> {
    use std::os::unix::fs::MetadataExt as _;
    std::fs::metadata(proc_root.join(pid).join("ns/net"))
        .ok()
        .map(|m| m.ino())
}

/// Whether this process runs in a network namespace other than PID 1's (a container, `ip netns
/// exec`). Host-wide keys are read-only there, sysctl.d files are applied to the host's namespace
/// and need not hold in a child one, and the allowed congestion controls are the host's.
///
/// None when it cannot be told: no procfs, or PID 1's namespace not visible (not root, or a
/// container that hides it). Each caller decides what unknown means for it.
pub fn in_child_netns(proc_root: &Path) -> Option<bool> {
    let me = netns_inode(proc_root, "self")?;
    let init = netns_inode(proc_root, "1")?;
    Some(me != init)
}

// ---------------------------------------------------------------- sysctl.d files

/// The sysctl.d(5) directories, most important first: a file name in an earlier directory masks
/// the same name in a later one.
pub const SYSCTL_D_DIRS: [&str; 5] = [
    "etc/sysctl.d",
    "run/sysctl.d",
    "usr/local/lib/sysctl.d",
    "usr/lib/sysctl.d",
    "lib/sysctl.d",
];

/// The configuration files under `root` in the order they are applied at boot (systemd-sysctl
/// and procps `sysctl --system`): the `*.conf` files of the sysctl.d directories sorted by file
/// name (masked names dropped), then /etc/sysctl.conf, which `sysctl --system` reads last when
/// it is a regular file. A file reached under two names (/etc/sysctl.d/99-sysctl.conf is
/// usually a symlink to /etc/sysctl.conf) is listed once, at its last place: that is where it
/// wins. Listing opens no file.
pub fn sysctl_conf_files(root: &Path) -> Vec<PathBuf> {
    let mut files = conf_files_in(root, &SYSCTL_D_DIRS);
    let main = root.join("etc/sysctl.conf");
    if main.is_file() {
        files.push(main);
    }
    let canon: Vec<PathBuf> = files
        .iter()
        .map(|f| std::fs::canonicalize(f).unwrap_or_else(|_| f.clone()))
        .collect();
    files
        .into_iter()
        .enumerate()
        .filter(|(i, _)| !canon[i + 1..].contains(&canon[*i]))
        .map(|(_, f)| f)
        .collect()
}

/// The `*.conf` entries of `dirs` (under `root`) sorted by file name, byte for byte as the
/// loaders sort (strcmp), a name in an earlier directory masking the same name in a later one:
/// how sysctl.d directories are merged. Every entry counts, whatever it is: procps masks by
/// name alone, and a FIFO or a device is named by the reader rather than silently dropped.
pub fn conf_files_in(root: &Path, dirs: &[&str]) -> Vec<PathBuf> {
    use std::os::unix::ffi::OsStrExt as _;
    let mut by_name: BTreeMap<std::ffi::OsString, PathBuf> = BTreeMap::new();
    for dir in dirs {
        let Ok(entries) = std::fs::read_dir(root.join(dir)) else {
            continue;
        };
        for e in entries.flatten() {
            let name = e.file_name();
            if name.as_bytes().ends_with(b".conf") {
                by_name.entry(name).or_insert_with(|| e.path());
            }
        }
    }
    by_name.into_values().collect()
}

/// Larger sysctl configuration files are not read: the shipped ones are a few KiB (systemd's
/// 50-default.conf is about 2 KiB), and 1 MiB is systemd-sysctl's own limit for one line
/// (LONG_LINE_MAX). A file past it is named as not checked, never read without end.
pub const MAX_CONF_BYTES: u64 = 1 << 20;

/// The sysctl configuration files of a tree, read as the loaders read them: bytes, not text.
#[derive(Debug, Default)]
pub struct ConfFiles {
    /// Each file read, in the order applied, with its bytes.
    pub read: Vec<(PathBuf, Vec<u8>)>,
    /// Each file that could not be read, in the order applied.
    pub unchecked: Vec<Unchecked>,
}

/// A sysctl configuration file that was not read, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unchecked {
    pub path: PathBuf,
    pub why: Unread,
}

/// Why a sysctl configuration file was not read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Unread {
    /// Opening or reading it failed (permission denied to this user, an I/O error, a link
    /// that leads nowhere): root may well read it at boot.
    Failed(String),
    /// Not a regular file: a FIFO, a device, a directory, a socket. No loader reads settings
    /// from it; procps `sysctl --system` and systemd-sysctl block on a FIFO and read a
    /// link to /dev/zero without end (procps 4.0.2, systemd 252).
    NotRegular(&'static str),
    /// Larger than [`MAX_CONF_BYTES`].
    TooLarge(u64),
}

impl Unread {
    /// Whether the file may set keys at boot although it was not read here: anything but
    /// a file that is not a regular one.
    pub fn may_set_keys(&self) -> bool {
        !matches!(self, Self::NotRegular(_))
    }
}

impl std::fmt::Display for Unread {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Failed(e) => write!(f, "cannot read it: {e}"),
            Self::NotRegular(kind) => write!(f, "it is {kind}, not a regular file"),
            Self::TooLarge(max) => write!(f, "it is larger than {max} bytes, more than a sysctl file holds"),
        }
    }
}

impl std::fmt::Display for Unchecked {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}: {}",
            crate::text::escape(&self.path.display().to_string()),
            self.why
        )
    }
}

impl serde::Serialize for Unchecked {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct as _;
        let mut st = s.serialize_struct("Unchecked", 2)?;
        st.serialize_field("file", &crate::text::escape(&self.path.display().to_string()))?;
        st.serialize_field("why", &self.why.to_string())?;
        st.end()
    }
}

/// One sysctl configuration file, as [`read_conf_files`] reads it.
pub fn read_conf_file(path: &Path) -> Result<Vec<u8>, Unread> {
    crate::input::read_bounded(path, MAX_CONF_BYTES).map_err(|r| match r {
        crate::input::Refused::Io(e) => Unread::Failed(e.to_string()),
        crate::input::Refused::NotRegular(kind) => Unread::NotRegular(kind),
        crate::input::Refused::TooLarge(max) => Unread::TooLarge(max),
    })
}

/// `files` read ([`read_conf_file`]): bounded, never blocking, each one that could not be
/// read kept with the reason.
pub fn read_conf_files(files: Vec<PathBuf>) -> ConfFiles {
    let mut out = ConfFiles::default();
    for path in files {
        match read_conf_file(&path) {
            Ok(bytes) => out.read.push((path, bytes)),
            Err(why) => out.unchecked.push(Unchecked { path, why }),
        }
    }
    out
}

/// Every file of [`sysctl_conf_files`], read ([`read_conf_files`]).
pub fn read_sysctl_conf_files(root: &Path) -> ConfFiles {
    read_conf_files(sysctl_conf_files(root))
}

/// One `key = value` line of a sysctl configuration file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfLine {
    /// 1-based, for messages that point at the line.
    pub line: usize,
    /// In dotted form, as the loaders normalise it ([`normalize_key`]).
    pub key: String,
    /// As written, trimmed: bytes that are not UTF-8 replaced, shown only escaped. Callers
    /// normalise or unquote as their format needs.
    pub value: crate::text::Foreign,
}

/// The `key = value` lines of a sysctl.conf or sysctl.d file, as procps and systemd-sysctl
/// read them: bytes split at `\n`, blanks (C `isspace`) trimmed, lines whose first character
/// is `#` or `;` skipped, a leading `-` (ignore errors) dropped, the key before the first `=`.
/// A byte that is not UTF-8 in a comment or a value hides nothing: keys are ASCII, and only a
/// key that is not names no key (the loaders would write no sysctl tcptune knows either).
/// Glob keys (systemd's `net.ipv4.conf.*.rp_filter`) are skipped, as they name no one key;
/// so are lines without `=`.
pub fn conf_lines(text: &[u8]) -> Vec<ConfLine> {
    text.split(|&b| b == b'\n')
        .enumerate()
        .filter_map(|(i, l)| {
            let l = trim_space(l);
            if matches!(l.first(), Some(b'#' | b';')) {
                return None;
            }
            let l = l.strip_prefix(b"-").unwrap_or(l);
            let eq = l.iter().position(|&b| b == b'=')?;
            let key = std::str::from_utf8(trim_space(&l[..eq]))
                .ok()
                .filter(|k| k.is_ascii())?;
            let key = normalize_key(key);
            (!key.is_empty() && !key.contains('*')).then(|| ConfLine {
                line: i + 1,
                key,
                value: crate::text::Foreign::new(String::from_utf8_lossy(trim_space(&l[eq + 1..]))),
            })
        })
        .collect()
}

/// `key` in dotted form, as procps (`slashdot`) and systemd (`sysctl_normalize`) read it: a
/// key whose first separator is `/` has its `/` and `.` swapped (`net/ipv4/conf/eth0.1/x` is
/// `net.ipv4.conf.eth0/1.x`); one whose first separator is `.` is already dotted.
pub fn normalize_key(key: &str) -> String {
    if key.find(['.', '/']).is_some_and(|i| key.as_bytes()[i] == b'/') {
        key.chars()
            .map(|c| match c {
                '/' => '.',
                '.' => '/',
                c => c,
            })
            .collect()
    } else {
        key.to_string()
    }
}

/// `b` without the leading and trailing blanks C's `isspace` knows (space, \t, \n, \v,
/// \f, \r).
fn trim_space(mut b: &[u8]) -> &[u8] {
    let space = |c: &u8| matches!(c, b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r');
    while b.first().is_some_and(space) {
        b = &b[1..];
    }
    while b.last().is_some_and(space) {
        b = &b[..b.len() - 1];
    }
    b
}

// ---------------------------------------------------------------- processes

/// Daemons that retune the network stack at run time, behind tcptune's (and sysctl.d's) back.
pub const TUNING_DAEMONS: [&str; 2] = ["tuned", "bpftune"];

/// Processes whose name (/proc/PID/comm) is one of `names`: (pid, name), by pid.
pub fn find_processes(proc_root: &Path, names: &[&str]) -> Vec<(u32, String)> {
    let Ok(entries) = std::fs::read_dir(proc_root) else {
        return Vec::new();
    };
    let mut out: Vec<(u32, String)> = entries
        .flatten()
        .filter_map(|e| {
            let pid: u32 = e.file_name().to_str()?.parse().ok()?;
            let comm = read(e.path().join("comm"))?;
            let comm = comm.trim();
            names.contains(&comm).then(|| (pid, comm.to_string()))
        })
        .collect();
    out.sort_unstable();
    out
}

/// The processes that hold each of the socket `inodes` open: inode → (pid, name), from the
/// `socket:[INODE]` links in /proc/PID/fd. Only processes this user may look into are seen
/// (all of them as root); a socket no visible process holds is left out.
pub fn socket_owners(proc_root: &Path, inodes: &std::collections::HashSet<u32>) -> BTreeMap<u32, (u32, String)> {
    let mut out = BTreeMap::new();
    let Ok(entries) = std::fs::read_dir(proc_root) else {
        return out;
    };
    for e in entries.flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|p| p.parse::<u32>().ok()) else {
            continue;
        };
        let Ok(fds) = std::fs::read_dir(e.path().join("fd")) else {
            continue;
        };
        for fd in fds.flatten() {
            let Ok(target) = std::fs::read_link(fd.path()) else {
                continue;
            };
            let inode = target
                .to_str()
                .and_then(|t| t.strip_prefix("socket:["))
                .and_then(|t| t.strip_suffix(']'))
                .and_then(|t| t.parse::<u32>().ok());
            if let Some(inode) = inode.filter(|i| inodes.contains(i))
                && !out.contains_key(&inode)
                && let Some(comm) = read(e.path().join("comm"))
            {
                out.insert(inode, (pid, comm.trim().to_string()));
            }
        }
    }
    out
}

// ---------------------------------------------------------------- TCP counters

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

/// The Tcp: counters of `proc_root`/net/snmp; None where absent or unparsable.
pub fn tcp_counters(proc_root: &Path) -> Option<TcpCounters> {
    parse_snmp_tcp(&read(proc_root.join("net/snmp"))?)
}

/// Pages TCP holds now, from `proc_root`/net/sockstat.
pub fn tcp_mem_in_use_pages(proc_root: &Path) -> Option<u64> {
    parse_sockstat_tcp_mem(&read(proc_root.join("net/sockstat"))?)
}

// ---------------------------------------------------------------- interfaces

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

/// Interfaces with a default route, from `proc_root`/net/route and ipv6_route.
pub fn default_routes(proc_root: &Path) -> Vec<String> {
    default_route_interfaces(
        &read(proc_root.join("net/route")).unwrap_or_default(),
        &read(proc_root.join("net/ipv6_route")).unwrap_or_default(),
    )
}

/// Every interface under `sys_net` (normally /sys/class/net) that is not down, loopback left
/// out, sorted by name. "unknown" counts as up: tunnels and some virtual devices report it.
pub fn up_interfaces(sys_net: &Path) -> Vec<String> {
    let mut all: Vec<String> = std::fs::read_dir(sys_net)
        .map(|d| {
            d.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n != "lo")
                .filter(|n| read(sys_net.join(n).join("operstate")).is_some_and(|s| s.trim() != "down"))
                .collect()
        })
        .unwrap_or_default();
    all.sort();
    all
}

/// The kernel's index of `ifname` (what netlink messages name it by).
pub fn ifindex(sys_net: &Path, ifname: &str) -> Option<u32> {
    read(sys_net.join(ifname).join("ifindex"))?.trim().parse().ok()
}

/// Whether a program called `name` is found in `path` (a PATH value: directories split as the
/// shell splits them) as an executable regular file. `path` is a parameter so a test can
/// give its own.
pub fn on_path(name: &str, path: Option<&std::ffi::OsStr>) -> bool {
    use std::os::unix::fs::PermissionsExt as _;
    path.is_some_and(|p| {
        std::env::split_paths(p)
            .any(|d| std::fs::metadata(d.join(name)).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0))
    })
}

/// Whether `ifname` is a TUN/TAP device, whose TSO the program owning it decides
/// (TUNSETOFFLOAD), not ethtool.
pub fn is_tun(sys_net: &Path, ifname: &str) -> bool {
    sys_net.join(ifname).join("tun_flags").exists()
}

/// The qdisc kinds attached to each interface, by interface index, from one rtnetlink dump
/// (`tc qdisc show`). The error is one line, for a finding.
#[cfg(target_os = "linux")]
pub fn qdisc_kinds() -> Result<BTreeMap<u32, Vec<String>>, String> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|_| "no runtime".to_string())?;
    rt.block_on(qdisc_dump())
}

#[cfg(target_os = "linux")]
async fn qdisc_dump() -> Result<BTreeMap<u32, Vec<String>>, String> {
    use futures::TryStreamExt as _;
    use rtnetlink::packet_route::tc::TcAttribute;
    let (connection, handle, _) = rtnetlink::new_connection().map_err(|e| format!("netlink: {e}"))?;
    let conn = tokio::spawn(connection);
    let result = async {
        let mut by_index: BTreeMap<u32, Vec<String>> = BTreeMap::new();
        let mut s = handle.qdisc().get().execute();
        while let Some(m) = s.try_next().await.map_err(|e| e.to_string())? {
            let Ok(index) = u32::try_from(m.header.index) else {
                continue;
            };
            let kinds = by_index.entry(index).or_default();
            for a in m.attributes {
                if let TcAttribute::Kind(k) = a
                    && !kinds.contains(&k)
                {
                    kinds.push(k);
                }
            }
        }
        Ok(by_index)
    }
    .await;
    conn.abort();
    result
}

/// Whether this process is in a child network namespace, where something must be decided:
/// the host's answer ([`in_child_netns`]: its namespace differs from PID
/// 1's) or, where PID 1's cannot be seen (not root, or a container), net.core.rmem_max
/// read-only by its mode bits — a host-wide key that child namespaces show as 0444, to every
/// user alike, so a normal user and root reach the same answer. Only meaningful when `backend`
/// is this machine's /proc/sys.
pub fn runs_in_child_netns(backend: &dyn crate::sysctl::SysctlBackend) -> bool {
    in_child_netns(Path::new(PROC)).unwrap_or_else(|| {
        matches!(
            backend.read("net.core.rmem_max"),
            crate::sysctl::KeyState::Present {
                access: crate::sysctl::Access::ReadOnly,
                ..
            }
        )
    })
}

/// Why `cc` cannot become the default: a child network namespace may choose only the
/// algorithms in `allowed` (net.ipv4.tcp_allowed_congestion_control, the host's list,
/// read-only there; EPERM even for root, tcp_set_default_congestion_control) unless it runs
/// `cc` already. `in_child`: asked only when it matters.
pub fn cc_refused(cc: &str, allowed: &str, current: Option<&str>, in_child: impl FnOnce() -> bool) -> Option<String> {
    if current == Some(cc) || crate::sysctl::offers(allowed, cc) || !in_child() {
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

#[cfg(test)]
mod tests {
    #[test]
    fn a_program_is_on_path_only_as_an_executable_file() {
        use std::os::unix::fs::PermissionsExt as _;
        let d = tempfile::tempdir().expect("tempdir");
        let bin = d.path().join("bin");
        std::fs::create_dir(&bin).expect("mkdir");
        let path = std::env::join_paths([d.path().join("none"), bin.clone()]).expect("join");
        assert!(!on_path("ethtool", Some(&path)));
        assert!(!on_path("ethtool", None));
        std::fs::write(bin.join("ethtool"), "#!/bin/sh\n").expect("write");
        assert!(!on_path("ethtool", Some(&path)), "not executable");
        std::fs::set_permissions(bin.join("ethtool"), std::fs::Permissions::from_mode(0o755)).expect("chmod");
        assert!(on_path("ethtool", Some(&path)));
        std::fs::create_dir(bin.join("tc")).expect("mkdir");
        assert!(!on_path("tc", Some(&path)), "a directory");
    }

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
    fn default_route_lines() {
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

    /// Write `text` at `rel` under `root`, directories included.
    fn put(root: &Path, rel: &str, text: &str) {
        let p = root.join(rel);
        std::fs::create_dir_all(p.parent().expect("parent")).expect("mkdir");
        std::fs::write(p, text).expect("write");
    }

    #[test]
    fn sysctl_d_order_masking_and_parsing() {
        let root = tempfile::tempdir().expect("tempdir");
        let w = |p: &str, t: &str| put(root.path(), p, t);
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
        let files = sysctl_conf_files(root.path());
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
        let read = read_sysctl_conf_files(root.path());
        assert_eq!(read.read.len(), 4);
        assert!(read.unchecked.is_empty());
        let cloud = conf_lines(&read.read[2].1);
        assert_eq!(
            cloud,
            vec![ConfLine {
                line: 3,
                key: "net.ipv4.tcp_rmem".into(),
                value: crate::text::Foreign::new("4096\t87380   6291456")
            }]
        );

        // /etc/sysctl.d/99-sysctl.conf -> ../sysctl.conf: read once, last, as /etc/sysctl.conf.
        std::os::unix::fs::symlink("../sysctl.conf", root.path().join("etc/sysctl.d/99-sysctl.conf")).expect("symlink");
        let files = sysctl_conf_files(root.path());
        assert_eq!(files.len(), 4, "{files:?}");
        assert!(files[3].ends_with("etc/sysctl.conf"), "{files:?}");
    }

    #[test]
    fn conf_lines_are_read_leniently() {
        let text = "a.b = 1\n  # c = 2\n;d=3\n-net/ipv4/x =  4 5 \nno equals\n = 6\nnet.ipv4.conf.*.rp_filter = 2\n\
                    \x0b\tnet/ipv4/conf/eth0.1/rp_filter=1\r\n";
        let lines = conf_lines(text.as_bytes());
        let got: Vec<(usize, &str, &str)> = lines.iter().map(|l| (l.line, l.key.as_str(), l.value.raw())).collect();
        assert_eq!(
            got,
            vec![
                (1, "a.b", "1"),
                (4, "net.ipv4.x", "4 5"),
                (8, "net.ipv4.conf.eth0/1.rp_filter", "1")
            ]
        );
    }

    #[test]
    fn bytes_that_are_not_utf8_hide_no_key() {
        // `# Müller` in ISO-8859-1, and a Latin-1 byte in a value: procps and systemd-sysctl
        // read the line after it all the same.
        let text = b"# M\xfcller\nnet.ipv4.tcp_rmem = 4096 87380 3145728\nnet.x = caf\xe9\nn\xe9t.y = 1\n";
        let lines = conf_lines(text);
        let got: Vec<(&str, String)> = lines.iter().map(|l| (l.key.as_str(), l.value.to_string())).collect();
        assert_eq!(
            got,
            vec![
                ("net.ipv4.tcp_rmem", "4096 87380 3145728".to_string()),
                ("net.x", "caf\u{fffd}".to_string())
            ]
        );
        // A value that would forge a line is shown escaped.
        let forged = conf_lines(b"net.x = 1\r\x1b[2K\n");
        assert_eq!(forged[0].value.to_string(), "1\\u{d}\\u{1b}[2K");
    }

    #[test]
    fn odd_files_in_sysctl_d_are_named_not_read() {
        let root = tempfile::tempdir().expect("tempdir");
        let r = root.path();
        put(r, "etc/sysctl.d/10-latin1.conf", "");
        std::fs::write(
            r.join("etc/sysctl.d/10-latin1.conf"),
            b"# M\xfcller\nnet.ipv4.tcp_rmem = 1 2 3\n",
        )
        .expect("write");
        let fifo = r.join("etc/sysctl.d/20-fifo.conf");
        let c = std::ffi::CString::new(fifo.to_str().expect("utf8")).expect("cstr");
        // SAFETY: a valid NUL-terminated path this test owns.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o644) }, 0);
        std::os::unix::fs::symlink("/dev/zero", r.join("etc/sysctl.d/30-zero.conf")).expect("symlink");
        std::fs::create_dir(r.join("etc/sysctl.d/40-dir.conf")).expect("mkdir");
        put(
            r,
            "etc/sysctl.d/50-big.conf",
            &"#".repeat(usize::try_from(MAX_CONF_BYTES).expect("fits") + 1),
        );
        std::os::unix::fs::symlink("60-loop.conf", r.join("etc/sysctl.d/60-loop.conf")).expect("symlink");
        let t = std::time::Instant::now();
        let got = read_sysctl_conf_files(r);
        assert!(t.elapsed() < std::time::Duration::from_secs(5), "{:?}", t.elapsed());
        let read: Vec<&Path> = got.read.iter().map(|(p, _)| p.as_path()).collect();
        assert_eq!(read, vec![r.join("etc/sysctl.d/10-latin1.conf")]);
        assert_eq!(conf_lines(&got.read[0].1)[0].key, "net.ipv4.tcp_rmem");
        let why: Vec<(String, Unread)> = got
            .unchecked
            .iter()
            .map(|u| {
                (
                    u.path.file_name().expect("name").to_string_lossy().into_owned(),
                    u.why.clone(),
                )
            })
            .collect();
        assert_eq!(why[0], ("20-fifo.conf".into(), Unread::NotRegular("a FIFO")));
        assert_eq!(
            why[1],
            ("30-zero.conf".into(), Unread::NotRegular("a character device"))
        );
        assert_eq!(why[2], ("40-dir.conf".into(), Unread::NotRegular("a directory")));
        assert_eq!(why[3], ("50-big.conf".into(), Unread::TooLarge(MAX_CONF_BYTES)));
        assert_eq!(why[4].0, "60-loop.conf");
        assert!(
            matches!(&why[4].1, Unread::Failed(e) if e.contains("symbolic links")),
            "{why:?}"
        );
        assert!(!why[0].1.may_set_keys() && why[3].1.may_set_keys() && why[4].1.may_set_keys());
        assert_eq!(
            got.unchecked[0].to_string(),
            format!("{}: it is a FIFO, not a regular file", fifo.display())
        );
    }

    #[test]
    fn netns_of_self_against_pid_1() {
        let proc = tempfile::tempdir().expect("tempdir");
        // Unknown without PID 1's namespace.
        put(proc.path(), "self/ns/net", "");
        assert!(netns_inode(proc.path(), "self").is_some());
        assert_eq!(in_child_netns(proc.path()), None);
        // Another namespace: another inode.
        put(proc.path(), "1/ns/net", "");
        assert_eq!(in_child_netns(proc.path()), Some(true));
        // The same namespace: both links lead to one inode.
        std::fs::remove_file(proc.path().join("1/ns/net")).expect("rm");
        std::os::unix::fs::symlink(proc.path().join("self/ns/net"), proc.path().join("1/ns/net")).expect("symlink");
        assert_eq!(in_child_netns(proc.path()), Some(false));
        assert_eq!(in_child_netns(Path::new("/nonexistent")), None);
    }

    #[test]
    fn counters_and_routes_from_a_fake_proc() {
        let proc = tempfile::tempdir().expect("tempdir");
        assert_eq!(tcp_counters(proc.path()), None);
        assert_eq!(tcp_mem_in_use_pages(proc.path()), None);
        assert!(default_routes(proc.path()).is_empty());
        put(proc.path(), "net/snmp", SNMP);
        put(
            proc.path(),
            "net/sockstat",
            "TCP: inuse 5 orphan 0 tw 2 alloc 7 mem 42\n",
        );
        put(
            proc.path(),
            "net/route",
            "Iface\tDestination\tGateway\tFlags\tRefCnt\tUse\tMetric\tMask\nwg0\t00000000\t00000000\t0001\t0\t0\t50\t00000000\n",
        );
        assert_eq!(tcp_counters(proc.path()).map(|c| c.retrans_segs), Some(3000));
        assert_eq!(tcp_mem_in_use_pages(proc.path()), Some(42));
        // No ipv6_route file: the IPv4 routes still count.
        assert_eq!(default_routes(proc.path()), vec!["wg0"]);
    }

    #[test]
    fn interfaces_from_a_fake_sys_class_net() {
        let sys = tempfile::tempdir().expect("tempdir");
        for (name, state, index) in [
            ("lo", "unknown", "1"),
            ("eth0", "up", "2"),
            ("eth1", "down", "3"),
            ("wg0", "unknown", "4"),
        ] {
            put(sys.path(), &format!("{name}/operstate"), &format!("{state}\n"));
            put(sys.path(), &format!("{name}/ifindex"), &format!("{index}\n"));
        }
        put(sys.path(), "wg0/tun_flags", "0x1001\n");
        assert_eq!(up_interfaces(sys.path()), vec!["eth0", "wg0"]);
        assert_eq!(ifindex(sys.path(), "wg0"), Some(4));
        assert_eq!(ifindex(sys.path(), "nope"), None);
        assert!(is_tun(sys.path(), "wg0"));
        assert!(!is_tun(sys.path(), "eth0"));
        assert!(up_interfaces(Path::new("/nonexistent")).is_empty());
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

    #[test]
    fn socket_owners_from_fd_links() {
        let root = tempfile::tempdir().expect("tempdir");
        for (pid, comm, links) in [
            ("812", "ssh", vec!["socket:[4242]", "/dev/null"]),
            ("900", "rsync", vec!["pipe:[7]"]),
            ("901", "sshd", vec!["socket:[99]"]),
        ] {
            let fd = root.path().join(pid).join("fd");
            std::fs::create_dir_all(&fd).expect("mkdir");
            std::fs::write(root.path().join(pid).join("comm"), format!("{comm}\n")).expect("write");
            for (n, l) in links.iter().enumerate() {
                std::os::unix::fs::symlink(l, fd.join(n.to_string())).expect("symlink");
            }
        }
        let want: std::collections::HashSet<u32> = [4242, 5].into_iter().collect();
        let owners = socket_owners(root.path(), &want);
        assert_eq!(
            owners.into_iter().collect::<Vec<_>>(),
            vec![(4242, (812, "ssh".to_string()))]
        );
    }
}
