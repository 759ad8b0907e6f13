//! Rules on the facts of the machine itself (Linux): each interface's MTU, offloads, duplex and
//! pacing, the retransmission rate, TCP memory, the sysctl.d files and the daemons that retune
//! TCP. Pure functions of [`LocalFacts`] and the running sysctls.

use super::facts::{InterfaceFacts, LocalFacts, RouteSnapshots, Setters};
use super::memory::{MemoryFacts, tcp_memory};
use super::{Finding, PathNeeds, Read};
use crate::bdp;
use crate::host::linux::TcpCounters;
use crate::route::Route;
use crate::text;
use crate::units::{Bytes, Span};

/// Every finding on the machine itself, in the order the table shows them: per interface
/// (MTU, offloads, duplex, pacing), then retransmissions, TCP memory, sysctl files, daemons.
pub fn local(read: &Read<'_>, path: Option<&PathNeeds>, flows: u32, facts: &LocalFacts, f: &mut Vec<Finding>) {
    let host = path.and_then(|p| p.host.as_deref());
    let link = path.and_then(|p| p.link.as_ref());
    let bbr = read("net.ipv4.tcp_congestion_control").as_deref() == Some("bbr");
    for i in &facts.interfaces {
        f.extend(interface(i, link, host, bbr, facts.sch_fq, facts.ethtool));
    }
    f.extend(retransmissions(facts.tcp_counters, path.map(|p| p.rtt_ms)));
    let per_flow = match path {
        Some(p) => p.sizing.buffer.max(p.sizing.send_buffer),
        None => last_field(read("net.ipv4.tcp_rmem")).max(last_field(read("net.ipv4.tcp_wmem"))),
    };
    f.extend(tcp_memory(&MemoryFacts {
        tcp_mem: read("net.ipv4.tcp_mem"),
        per_flow,
        flows,
        ram: facts.ram,
        in_use_pages: facts.tcp_mem_in_use_pages,
        page_size: facts.page_size,
    }));
    f.extend(sysctl_files(&facts.setters, read, facts.child_netns));
    f.extend(facts.unchecked.iter().map(unchecked_file));
    f.extend(tuning_daemons(&facts.tuning_daemons));
    f.extend(tcptune_routes(&facts.tcptune_routes, &facts.route_snapshots));
}

/// The host routes `apply --scope path` added (proto 116). Those a snapshot still in effect
/// here names are one finding, each with its snapshot (whose revert removes it); each one no
/// snapshot names (planted, or left by a snapshot reverted by hand or deleted) is a warning of
/// its own, whose fix is the command that removes it. Nothing when there are none.
pub fn tcptune_routes(routes: &Result<Vec<Route>, String>, snaps: &RouteSnapshots) -> Vec<Finding> {
    let rs = match routes {
        Ok(rs) => rs,
        Err(e) => {
            return vec![Finding::warn(
                "routes:tcptune",
                format!("could not read the routes: {}", crate::text::escape(e)),
                "ip route show proto 116 lists the host routes tcptune added",
            )];
        }
    };
    let dest = |r: &Route| crate::route::prefix(r.dst, r.dst_len);
    let (named, unnamed): (Vec<&Route>, Vec<&Route>) = rs.iter().partition(|r| snaps.named.contains_key(&dest(r)));
    let mut out = Vec::new();
    if !named.is_empty() {
        let each: Vec<String> = named
            .iter()
            .map(|r| format!("{} (snapshot {})", shown(r), snaps.named[&dest(r)]))
            .collect();
        out.push(Finding::ok(
            "routes:tcptune",
            format!(
                "{} of tcptune apply --scope path (proto {}): {}; the rest keep the host-wide congestion control (tcptune revert removes each with its snapshot; tcptune snapshots lists them)",
                super::counted(named.len() as u64, "host route", "host routes"),
                crate::route::PROTO,
                each.join(", ")
            ),
        ));
    }
    out.extend(unnamed.into_iter().map(|r| unnamed_route(r, snaps)));
    out
}

/// "198.18.0.2/32 congctl bbr dev wan0": a host route as the findings name it, escaped.
fn shown(r: &Route) -> String {
    format!(
        "{} congctl {}{}",
        crate::route::prefix(r.dst, r.dst_len),
        r.congctl.as_deref().map_or("-".into(), crate::text::escape),
        r.dev
            .as_deref()
            .map(|d| format!(" dev {}", crate::text::escape(d)))
            .unwrap_or_default()
    )
}

/// A proto 116 host route no snapshot names: `tcptune revert` leaves it, so the fix is the
/// `ip route del` that removes exactly it, each word quoted for a shell.
fn unnamed_route(r: &Route, snaps: &RouteSnapshots) -> Finding {
    let dest = crate::route::prefix(r.dst, r.dst_len);
    // A file that could not be read may be the snapshot that names it.
    let (read, unread, will) = match snaps.unread.as_deref() {
        Some(u) => (" read", format!("; {u}"), "may"),
        None => ("", String::new(), "will"),
    };
    Finding::warn(
        format!("routes:tcptune:{dest}"),
        format!(
            "host route {} has tcptune's proto {}, but no snapshot{read} names it (none still in effect here, in {}{unread}): tcptune revert {will} not remove it",
            shown(r),
            crate::route::PROTO,
            snaps.state_dir.display()
        ),
        format!(
            "if it is not wanted, remove it: {}",
            crate::route::quoted(&crate::route::delete_words(r))
        ),
    )
}

/// The findings on one interface; the route MTU counts only on the interface towards the host.
fn interface(
    i: &InterfaceFacts,
    link: Option<&crate::measure::LinkFacts>,
    host: Option<&str>,
    bbr: bool,
    sch_fq: Option<bool>,
    ethtool: bool,
) -> Vec<Finding> {
    let route_mtu = link
        .filter(|l| l.interface.as_deref() == Some(i.name.raw()))
        .and_then(|l| l.route_mtu);
    // Every finding words the name as shown, escaped.
    let name = i.name.escaped();
    let mut f = Vec::new();
    f.extend(mtu(&name, i.mtu, route_mtu, host));
    #[cfg(target_os = "linux")]
    f.extend(offloads(&name, &i.offloads, i.tun, ethtool));
    f.extend(duplex(&name, i.duplex.as_deref(), ethtool));
    if bbr && let Some(kinds) = &i.qdiscs {
        f.push(pacing(&name, kinds, sch_fq));
    }
    f
}

/// The last field of a multi-field value (tcp_rmem's maximum); 0 when absent.
fn last_field(v: Option<String>) -> u64 {
    v.and_then(|v| v.split(' ').next_back().and_then(|x| x.parse().ok()))
        .unwrap_or(0)
}

/// RetransSegs / OutSegs since boot (or since the network namespace was made).
pub fn retransmissions(c: Option<TcpCounters>, rtt_ms: Option<f64>) -> Option<Finding> {
    let c = c?;
    let id = "retransmissions";
    let Some(pct) = c.retrans_pct().filter(|_| c.out_segs >= 1000) else {
        return Some(Finding::ok(
            id,
            format!(
                "{} sent so far: too few to judge the retransmission rate",
                super::counted(c.out_segs, "segment", "segments")
            ),
        ));
    };
    let base = format!(
        "{} of segments retransmitted ({} of {} since boot, /proc/net/snmp)",
        crate::text::pct(pct),
        text::count(c.retrans_segs),
        text::count(c.out_segs)
    );
    if pct < 1.0 {
        return Some(Finding::ok(id, base));
    }
    let rtt = rtt_ms.filter(|r| *r > 0.0).unwrap_or(100.0);
    let mathis = bdp::mathis_bps(Bytes::new(1448), Span::from_millis_f64(rtt), pct / 100.0);
    let msg = format!(
        "{base}: at that loss one loss-based (Reno/CUBIC) flow reaches about {} at {} RTT (Mathis)",
        text::rate(mathis),
        text::millis(rtt)
    );
    let fix = "find the lossy hop: watch `nstat -az TcpRetransSegs` during a transfer, look for NIC errors and drops (`ip -s link`), a duplex mismatch or a too-short queue; bbr suffers less from random loss";
    Some(if pct >= 5.0 {
        Finding::fail(id, msg, fix)
    } else {
        Finding::warn(id, msg, fix)
    })
}

/// The keys whose setting by two parties (files, daemons) matters for bulk TCP.
pub const TUNING_KEYS: &[&str] = &[
    "net.ipv4.tcp_rmem",
    "net.ipv4.tcp_wmem",
    "net.core.rmem_max",
    "net.core.wmem_max",
    "net.core.rmem_default",
    "net.core.wmem_default",
    "net.ipv4.tcp_mem",
    "net.ipv4.tcp_congestion_control",
    "net.core.default_qdisc",
    "net.ipv4.tcp_window_scaling",
    "net.ipv4.tcp_sack",
    "net.ipv4.tcp_timestamps",
    "net.ipv4.tcp_mtu_probing",
    "net.ipv4.tcp_slow_start_after_idle",
    "net.ipv4.tcp_notsent_lowat",
    "net.ipv4.tcp_adv_win_scale",
    "net.core.netdev_max_backlog",
];

/// Two sysctl files setting one key to different values; a running value that differs from what
/// the files set (when this is the namespace the files are applied to).
pub fn sysctl_files(setters: &Setters, read: &Read<'_>, child_netns: Option<bool>) -> Vec<Finding> {
    let mut out = Vec::new();
    for key in TUNING_KEYS {
        let Some(list) = setters.get(*key) else {
            continue;
        };
        let Some((winner_path, winner)) = list.last() else {
            continue;
        };
        let id = format!("sysctl-files:{key}");
        let mut distinct: Vec<&str> = list.iter().map(|(_, v)| v.as_str()).collect();
        distinct.dedup();
        if distinct.len() > 1 {
            let who = list
                .iter()
                .map(|(p, v)| format!("{} ({v})", p.display()))
                .collect::<Vec<_>>()
                .join(", ");
            out.push(Finding::warn(
                id,
                format!(
                    "{key} is set by {} files: {who}; the last one read wins at boot ({})",
                    list.len(),
                    winner_path.display()
                ),
                format!("keep {key} in one file (e.g. /etc/sysctl.d/60-tcptune.conf) and delete it from the others"),
            ));
            continue;
        }
        if child_netns == Some(false)
            && let Some(running) = read(key)
            && running != *winner
        {
            out.push(Finding::warn(
                id,
                format!(
                    "{} sets {key} = {winner} but the kernel runs {running}: changed since boot (by hand, tuned, bpftune, a container runtime) or never applied",
                    winner_path.display()
                ),
                "apply the files with `sysctl --system`, or find what changes it",
            ));
        }
    }
    if out.is_empty() {
        let files = setters
            .values()
            .flatten()
            .map(|(p, _)| p)
            .collect::<std::collections::BTreeSet<_>>();
        out.push(Finding::ok(
            "sysctl-files",
            format!(
                "{} read: no TCP key set twice{}",
                super::counted(files.len() as u64, "sysctl file", "sysctl files"),
                if child_netns == Some(false) {
                    ", and the running values match them"
                } else {
                    ""
                }
            ),
        ));
    }
    out
}

/// A sysctl configuration file that could not be read: it may set TCP keys at boot unseen, and
/// one that is not a regular file stalls or floods the loaders.
pub fn unchecked_file(u: &crate::host::linux::Unchecked) -> Finding {
    let path = crate::text::escape(&u.path.display().to_string());
    let (why, fix) = if u.why.may_set_keys() {
        (
            "it may set TCP keys at boot that this check cannot see",
            format!("make {path} readable, or check it as root"),
        )
    } else {
        (
            "procps `sysctl --system` and systemd-sysctl block on a FIFO and read a device without end",
            format!("remove {path}: no loader reads settings from it"),
        )
    };
    Finding::warn(
        format!("sysctl-file-unread:{path}"),
        format!("could not read {path} ({}): {why}", u.why),
        fix,
    )
}

/// tuned and bpftune rewrite TCP sysctls at run time.
pub fn tuning_daemons(procs: &[(u32, String)]) -> Vec<Finding> {
    if procs.is_empty() {
        return vec![Finding::ok("tuning-daemons", "neither tuned nor bpftune is running")];
    }
    procs
        .iter()
        .map(|(pid, name)| {
            let (what, fix) = if name == "bpftune" {
                (
                    "bpftune retunes tcp_rmem, tcp_wmem, tcp_mem and the congestion control at run time and may undo or fight manual settings",
                    "leave buffer tuning to bpftune, or stop it: systemctl disable --now bpftune",
                )
            } else {
                (
                    "tuned applies its profile's sysctls at start and on profile changes, overriding /etc/sysctl.d",
                    "put the TCP settings into the active tuned profile ([sysctl] section), or `tuned-adm off`",
                )
            };
            Finding::warn(format!("tuning-daemons:{name}"), format!("{name} is running (pid {pid}): {what}"), fix)
        })
        .collect()
}

/// What to say where a fix needs ethtool and none is on PATH.
const NO_ETHTOOL: &str = "ethtool is not installed here: it is the ethtool package";

/// Half duplex on a link is a negotiation failure: collisions and late retransmissions.
/// `ethtool`: whether ethtool is on PATH (else the fix says how to get it, and where /sys
/// shows the link).
pub fn duplex(ifname: &str, duplex: Option<&str>, ethtool: bool) -> Option<Finding> {
    // The fix is a command to paste: the interface name by the one quoting rule.
    let q = crate::text::shell_word(ifname);
    let id = format!("duplex:{ifname}");
    let negotiate = if ethtool {
        format!("ethtool -s {q} autoneg on")
    } else {
        format!("{NO_ETHTOOL}; /sys/class/net/{q}/duplex and speed show what was negotiated")
    };
    match duplex? {
        "half" => Some(Finding::fail(
            id,
            format!("{ifname} runs half duplex: a duplex mismatch with the switch loses packets under load"),
            format!("let both ends auto-negotiate ({negotiate}), or fix the same speed and full duplex on both"),
        )),
        d => Some(Finding::ok(id, format!("{ifname} runs {d} duplex"))),
    }
}

/// The interface MTU, and with a host the route/path MTU towards it.
pub fn mtu(ifname: &str, mtu: Option<u32>, route_mtu: Option<u32>, host: Option<&str>) -> Option<Finding> {
    // The fix is a command to paste: the interface name by the one quoting rule.
    let q = crate::text::shell_word(ifname);
    let m = mtu?;
    let id = format!("mtu:{ifname}");
    if let (Some(r), Some(h)) = (route_mtu, host)
        && r < m
    {
        return Some(Finding::warn(
            id,
            format!(
                "{ifname} has MTU {m} but the path to {h} carries {r} (route or learnt path MTU): segments sized for {m} must be cut down first"
            ),
            format!("use the same MTU end to end (ip link set {q} mtu {r}), or make every hop carry {m}"),
        ));
    }
    let note = if m > 1500 {
        format!(
            "jumbo frames: every hop to your peers must carry {m}-byte frames, or full-size segments wait on PMTU discovery (check with --host PEER)"
        )
    } else if m < 1500 {
        "below 1500: a tunnel or overlay; TCP segments are sized to fit".to_string()
    } else {
        "standard Ethernet".to_string()
    };
    let path = match (route_mtu, host) {
        (Some(r), Some(h)) => format!("; path to {h}: {r}"),
        _ => String::new(),
    };
    Some(Finding::ok(id, format!("{ifname} MTU {m}{path} ({note})")))
}

/// With BBR, is there an fq qdisc to pace? `sch_fq`: whether this kernel has it (None: not
/// known).
pub fn pacing(ifname: &str, kinds: &Result<Vec<String>, String>, sch_fq: Option<bool>) -> Finding {
    // The fix is a command to paste: the interface name by the one quoting rule.
    let q = crate::text::shell_word(ifname);
    let id = format!("pacing:{ifname}");
    match kinds {
        Ok(k) if k.iter().any(|q| q == "fq") => Finding::ok(id, format!("bbr paces through the fq qdisc on {ifname}")),
        Ok(k) => {
            // The kernel's names for them (TCA_KIND), shown escaped like any name read.
            let shown = if k.is_empty() {
                "none".to_string()
            } else {
                text::escape(&k.join(", "))
            };
            // A kernel without sch_fq refuses both the qdisc and default_qdisc = fq (advise
            // leaves fq out there): say what is missing, not a command that fails.
            let fix = if sch_fq == Some(false) {
                "this kernel has no sch_fq (modprobe sch_fq, or a kernel with CONFIG_NET_SCH_FQ): once it has, check gives the tc command".to_string()
            } else {
                format!(
                    "tc qdisc replace dev {q} root fq; and set net.core.default_qdisc = fq in /etc/sysctl.d/ for new interfaces"
                )
            };
            Finding::warn(
                id,
                format!(
                    "bbr is in use but {ifname}'s qdisc is {shown}, not fq: BBR falls back to TCP-internal pacing (Linux 4.13+), which costs more CPU and paces less precisely"
                ),
                fix,
            )
        }
        Err(e) => Finding::warn(
            id,
            format!("bbr is in use but {ifname}'s qdisc could not be read ({e})"),
            format!("check with `tc qdisc show dev {q}`: bbr wants fq"),
        ),
    }
}

/// `tun`: a TUN/TAP device, whose TSO the program owning it decides (TUNSETOFFLOAD), not ethtool.
/// `ethtool`: whether ethtool is on PATH; without it no fix is an ethtool command.
#[cfg(target_os = "linux")]
pub fn offloads(
    ifname: &str,
    o: &std::io::Result<crate::host::ethtool::Offloads>,
    tun: bool,
    ethtool: bool,
) -> Option<Finding> {
    // The fix is a command to paste: the interface name by the one quoting rule.
    let q = crate::text::shell_word(ifname);
    use crate::host::ethtool::Feature;
    let id = format!("offload:{ifname}");
    let o = match o {
        Ok(o) => o,
        Err(e) if e.kind() == std::io::ErrorKind::Unsupported => return None,
        Err(e) => {
            return Some(Finding::warn(
                id,
                format!("the offloads of {ifname} could not be read: {e}"),
                if ethtool {
                    format!("check with `ethtool -k {q}`")
                } else {
                    format!("{NO_ETHTOOL}, which reads {q}'s offloads")
                },
            ));
        }
    };
    let show = |name: &str, feat: Option<Feature>| match feat {
        None => format!("{name} ?"),
        Some(Feature { on: true, .. }) => format!("{name} on"),
        Some(Feature { fixed: Some(true), .. }) => format!("{name} off [fixed]"),
        Some(_) => format!("{name} off"),
    };
    let state = [show("TSO", o.tso), show("GSO", o.gso), show("GRO", o.gro)].join(", ");
    // Off but switchable: that is a fix. Off and fixed: the device cannot, and GSO stands in.
    let fixable = |feat: Option<Feature>| {
        matches!(
            feat,
            Some(Feature {
                on: false,
                fixed: Some(false) | None
            })
        )
    };
    let mut turn_on = Vec::new();
    if fixable(o.tso) {
        turn_on.push("tso");
    }
    if fixable(o.gso) {
        turn_on.push("gso");
    }
    if fixable(o.gro) {
        turn_on.push("gro");
    }
    if tun {
        // GSO is software and works on a TUN device; TSO/GRO are the owning program's choice.
        turn_on.retain(|t| *t == "gso");
    }
    if turn_on.is_empty() {
        let owner = if tun && (fixable(o.tso) || fixable(o.gro)) {
            " (a TUN device: the program that owns it sets its offloads)"
        } else {
            ""
        };
        Some(Finding::ok(id, format!("{ifname}: {state}{owner}")))
    } else {
        let args = turn_on.iter().map(|t| format!("{t} on")).collect::<Vec<_>>().join(" ");
        Some(Finding::warn(
            id,
            format!(
                "{ifname}: {state}: without segmentation offload the CPU handles every 1500-byte packet (one cloud lost 65 % of its send rate with TSO and GSO off)"
            ),
            if ethtool {
                format!("ethtool -K {q} {args}")
            } else {
                format!(
                    "{NO_ETHTOOL}, which turns on {} on {q} (no /sys file sets them)",
                    turn_on.join(", ")
                )
            },
        ))
    }
}

#[cfg(test)]
mod route_tests {
    use super::*;
    use crate::check::Status;

    /// tcptune's host route to `dest` on `dev`, as `apply --scope path` adds it.
    fn route(dest: &str, dev: &str) -> Route {
        let mut l = crate::route::Lookup::new(
            dest.parse().expect("ip"),
            crate::route::MAIN_TABLE,
            crate::route::UNICAST,
        );
        l.oif = Some(2);
        l.dev = Some(dev.into());
        l.host_route("bbr")
    }

    #[test]
    fn tcptune_routes_are_listed_and_none_is_no_finding() {
        let snaps = RouteSnapshots::default();
        assert_eq!(tcptune_routes(&Ok(Vec::new()), &snaps), Vec::new());
        let e = tcptune_routes(&Err("netlink: EPERM".into()), &snaps);
        assert_eq!(e[0].status, Status::Warn);
    }

    #[test]
    fn a_route_no_snapshot_names_is_a_warning_whose_fix_removes_exactly_it() {
        let mut snaps = RouteSnapshots {
            state_dir: "/var/lib/tcptune".into(),
            ..RouteSnapshots::default()
        };
        snaps
            .named
            .insert("198.18.0.2/32".into(), "0003-20261127T000000Z".into());
        let planted = Route {
            priority: Some(1024),
            ..route("198.18.0.9", "a;b")
        };
        let f = tcptune_routes(&Ok(vec![route("198.18.0.2", "wan0"), planted.clone()]), &snaps);
        assert_eq!(f.len(), 2, "{f:#?}");
        assert_eq!(f[0].id, "routes:tcptune");
        assert_eq!(f[0].status, Status::Ok);
        assert!(
            f[0].message
                .contains("198.18.0.2/32 congctl bbr dev wan0 (snapshot 0003-20261127T000000Z)")
                && !f[0].message.contains("198.18.0.9"),
            "{}",
            f[0].message
        );
        assert_eq!(f[1].id, "routes:tcptune:198.18.0.9/32");
        assert_eq!(f[1].status, Status::Warn);
        assert!(
            f[1].message
                .contains("no snapshot names it (none still in effect here, in /var/lib/tcptune)")
                && f[1].message.contains("tcptune revert will not remove it"),
            "{}",
            f[1].message
        );
        assert_eq!(
            f[1].fix.as_deref(),
            Some("if it is not wanted, remove it: ip route del 198.18.0.9/32 dev 'a;b' proto 116 metric 1024")
        );
        // Files that could not be read may name it; a device a shell cannot be given is left out.
        snaps.unread = Some("1 file(s) there could not be read".into());
        let odd = route("198.18.0.7", "x\u{1b}[2J");
        let f = tcptune_routes(&Ok(vec![odd]), &snaps);
        assert!(f[0].message.contains("no snapshot read names it"), "{}", f[0].message);
        assert!(
            f[0].message.contains("could not be read): tcptune revert may not"),
            "{}",
            f[0].message
        );
        assert!(!f[0].message.chars().any(char::is_control), "{:?}", f[0].message);
        assert!(
            f[0].fix
                .as_deref()
                .is_some_and(|x| x.ends_with("ip route del 198.18.0.7/32 proto 116")),
            "{:?}",
            f[0].fix
        );
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::check::Status;
    use crate::check::test_util::{by_id, reader};

    #[test]
    fn retransmission_thresholds() {
        let c = |out, re| {
            Some(TcpCounters {
                out_segs: out,
                retrans_segs: re,
                in_errs: 0,
            })
        };
        assert_eq!(retransmissions(None, None), None);
        assert_eq!(retransmissions(c(10, 5), None).expect("f").status, Status::Ok);
        assert_eq!(retransmissions(c(100_000, 100), None).expect("f").status, Status::Ok);
        let w = retransmissions(c(100_000, 2000), Some(50.0)).expect("f");
        assert_eq!(w.status, Status::Warn);
        assert!(
            w.message.contains("2 % of segments") && w.message.contains("Mathis"),
            "{}",
            w.message
        );
        assert_eq!(retransmissions(c(100_000, 6000), None).expect("f").status, Status::Fail);
    }

    #[test]
    fn sysctl_file_conflicts() {
        use std::path::PathBuf;
        let mut s: Setters = BTreeMap::new();
        s.insert(
            "net.ipv4.tcp_rmem".into(),
            vec![
                (
                    PathBuf::from("/etc/sysctl.d/60-tcptune.conf"),
                    "4096 131072 20643840".into(),
                ),
                (
                    PathBuf::from("/etc/sysctl.d/99-cloud.conf"),
                    "4096 87380 6291456".into(),
                ),
            ],
        );
        s.insert(
            "net.ipv4.tcp_sack".into(),
            vec![(PathBuf::from("/etc/sysctl.d/10-x.conf"), "1".into())],
        );
        let running = reader(&[("net.ipv4.tcp_rmem", "4096 87380 6291456"), ("net.ipv4.tcp_sack", "0")]);
        let f = sysctl_files(&s, &running, Some(false));
        let rmem = by_id(&f, "sysctl-files:net.ipv4.tcp_rmem");
        assert_eq!(rmem.status, Status::Warn);
        assert!(rmem.message.contains("99-cloud.conf"));
        let sack = by_id(&f, "sysctl-files:net.ipv4.tcp_sack");
        assert!(sack.message.contains("the kernel runs 0"), "{}", sack.message);
        // In a child namespace the files do not apply: no mismatch finding.
        let f = sysctl_files(&s, &running, Some(true));
        assert_eq!(f.len(), 1);
        let f = sysctl_files(&BTreeMap::new(), &running, Some(false));
        assert_eq!(f[0].status, Status::Ok);
    }

    #[test]
    fn daemons_interfaces() {
        assert_eq!(tuning_daemons(&[])[0].status, Status::Ok);
        let f = tuning_daemons(&[(812, "bpftune".into())]);
        assert_eq!(f[0].id, "tuning-daemons:bpftune");
        assert!(
            f[0].fix
                .as_deref()
                .is_some_and(|x| x.contains("systemctl disable --now bpftune"))
        );
        assert_eq!(duplex("eth0", Some("half"), true).expect("f").status, Status::Fail);
        assert_eq!(duplex("eth0", Some("full"), true).expect("f").status, Status::Ok);
        assert_eq!(duplex("tun0", None, true), None);
        assert_eq!(
            mtu("eth0", Some(9000), Some(1500), Some("peer")).expect("f").status,
            Status::Warn
        );
        assert!(
            mtu("eth0", Some(9000), None, None)
                .expect("f")
                .message
                .contains("jumbo")
        );
        assert_eq!(
            pacing("eth0", &Ok(vec!["mq".into(), "fq".into()]), Some(true)).status,
            Status::Ok
        );
        let p = pacing("eth0", &Ok(vec!["fq_codel".into()]), Some(true));
        assert_eq!(p.status, Status::Warn);
        assert!(p.fix.as_deref().is_some_and(|x| x.contains("root fq")));
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn a_sysctl_file_that_could_not_be_read_is_a_warning() {
        use crate::host::linux::{Unchecked, Unread};
        let f = unchecked_file(&Unchecked {
            path: "/etc/sysctl.d/70-fifo.conf".into(),
            why: Unread::NotRegular("a FIFO"),
        });
        assert_eq!(f.status, Status::Warn);
        assert!(
            f.message.contains("70-fifo.conf") && f.message.contains("block"),
            "{f:?}"
        );
        assert!(f.fix.as_deref().is_some_and(|x| x.starts_with("remove ")), "{f:?}");
        let f = unchecked_file(&Unchecked {
            path: "/etc/sysctl.d/80-secret.conf".into(),
            why: Unread::Failed("Permission denied".into()),
        });
        assert!(f.message.contains("may set TCP keys"), "{f:?}");
    }

    /// Issue 36, 6: a kernel without sch_fq refuses `tc qdisc ... fq` and default_qdisc = fq
    /// (advise leaves fq out there): the fix says what is missing, never the command that fails.
    #[test]
    fn pacing_gives_the_fq_command_only_where_the_kernel_has_sch_fq() {
        let kinds = Ok(vec!["pfifo_fast".to_string()]);
        let without = pacing("eth0", &kinds, Some(false));
        assert_eq!(without.status, Status::Warn);
        let fix = without.fix.as_deref().expect("a fix");
        assert!(!fix.contains("tc qdisc") && !fix.contains("default_qdisc"), "{fix}");
        assert!(fix.starts_with("this kernel has no sch_fq"), "{fix}");
        assert!(fix.contains("modprobe sch_fq"), "{fix}");
        for known in [Some(true), None] {
            let with = pacing("eth0", &kinds, known);
            assert!(
                with.fix
                    .as_deref()
                    .is_some_and(|x| x.starts_with("tc qdisc replace dev eth0 root fq")),
                "{known:?}: {with:?}"
            );
        }
        // Through check: the fact is the one LocalFacts carries.
        let facts = LocalFacts {
            sch_fq: Some(false),
            ..crate::check::test_util::facts()
        };
        let mut f = Vec::new();
        let bbr = reader(&[("net.ipv4.tcp_congestion_control", "bbr")]);
        local(&bbr, None, 1, &facts, &mut f);
        let p = by_id(&f, "pacing:eth0");
        assert!(p.fix.as_deref().is_some_and(|x| !x.contains("tc qdisc")), "{p:?}");
    }

    #[test]
    fn fix_commands_quote_the_interface_name_for_a_shell() {
        // Linux allows `;` and spaces are refused, but `;` alone would run a second command.
        let f = duplex("a;reboot", Some("half"), true).expect("a finding");
        assert!(
            f.fix
                .as_deref()
                .is_some_and(|x| x.contains("ethtool -s 'a;reboot' autoneg on")),
            "{f:?}"
        );
        let f = pacing("a;reboot", &Ok(vec!["fq_codel".into()]), Some(true));
        assert!(
            f.fix.as_deref().is_some_and(|x| x.contains("dev 'a;reboot' root fq")),
            "{f:?}"
        );
    }

    /// Issue 36, 6: every word of a fix goes through the one quoting rule (text::shell_word):
    /// a name that reached a rule raw still gives a fix with no control character in it.
    #[test]
    fn fix_words_take_the_one_quoting_rule() {
        use crate::host::ethtool::{Feature, Offloads};
        let raw = "e\u{1b}[2J;x";
        let word = crate::text::shell_word(raw);
        let off = Feature {
            on: false,
            fixed: Some(false),
        };
        let fixes = [
            duplex(raw, Some("half"), true).and_then(|f| f.fix),
            mtu(raw, Some(9000), Some(1500), Some("peer")).and_then(|f| f.fix),
            pacing(raw, &Ok(vec!["pfifo".into()]), Some(true)).fix,
            pacing(raw, &Err("EPERM".into()), Some(true)).fix,
            offloads(
                raw,
                &Ok(Offloads {
                    tso: Some(off),
                    gso: Some(off),
                    gro: Some(off),
                }),
                false,
                true,
            )
            .and_then(|f| f.fix),
            offloads(raw, &Err(std::io::Error::other("EIO")), false, true).and_then(|f| f.fix),
        ];
        for fix in fixes {
            let fix = fix.expect("a fix");
            assert!(!fix.chars().any(char::is_control), "{fix:?}");
            assert!(fix.contains(&word), "{fix:?} lacks {word}");
        }
    }

    #[test]
    fn offload_verdicts() {
        use crate::host::ethtool::{Feature, Offloads};
        let on = Feature {
            on: true,
            fixed: Some(false),
        };
        let off = Feature {
            on: false,
            fixed: Some(false),
        };
        let fixed_off = Feature {
            on: false,
            fixed: Some(true),
        };
        let all_on = Offloads {
            tso: Some(on),
            gso: Some(on),
            gro: Some(on),
        };
        assert_eq!(
            offloads("eth0", &Ok(all_on), false, true).expect("f").status,
            Status::Ok
        );
        let cloud = Offloads {
            tso: Some(off),
            gso: Some(off),
            ..all_on
        };
        let w = offloads("eth0", &Ok(cloud), false, true).expect("f");
        assert_eq!(w.status, Status::Warn);
        assert_eq!(w.fix.as_deref(), Some("ethtool -K eth0 tso on gso on"));
        let tun = Offloads {
            tso: Some(fixed_off),
            ..all_on
        };
        let ok = offloads("tun0", &Ok(tun), false, true).expect("f");
        assert_eq!(ok.status, Status::Ok);
        assert!(ok.message.contains("TSO off [fixed]"));
        // A TUN device reports TSO as switchable, but only its owner can switch it.
        let tun_dev = Offloads {
            tso: Some(off),
            ..all_on
        };
        let ok = offloads("wan0", &Ok(tun_dev), true, true).expect("f");
        assert_eq!(ok.status, Status::Ok, "{ok:?}");
        assert!(ok.message.contains("TUN device"));
        let gso_off = Offloads {
            gso: Some(off),
            ..tun_dev
        };
        assert_eq!(
            offloads("wan0", &Ok(gso_off), true, true).expect("f").fix.as_deref(),
            Some("ethtool -K wan0 gso on")
        );
    }

    /// Issue 47, 3: an ethtool command only where ethtool is on PATH; else how to get it (and,
    /// for the duplex, where /sys shows the link).
    #[test]
    fn no_ethtool_command_where_none_is_installed() {
        use crate::host::ethtool::{Feature, Offloads};
        let off = Feature {
            on: false,
            fixed: Some(false),
        };
        let cloud = Offloads {
            tso: Some(off),
            gso: Some(off),
            gro: None,
        };
        let fixes = |ethtool: bool| {
            [
                duplex("eth0", Some("half"), ethtool).and_then(|f| f.fix),
                offloads("eth0", &Ok(cloud), false, ethtool).and_then(|f| f.fix),
                offloads("eth0", &Err(std::io::Error::other("EIO")), false, ethtool).and_then(|f| f.fix),
            ]
            .map(|f| f.expect("a fix"))
        };
        for fix in fixes(true) {
            assert!(fix.contains("ethtool -"), "{fix}");
        }
        for fix in fixes(false) {
            assert!(!fix.contains("ethtool -"), "{fix}");
            assert!(fix.contains("the ethtool package"), "{fix}");
        }
        assert!(fixes(false)[0].contains("/sys/class/net/eth0/duplex"));
        assert!(fixes(false)[1].contains("tso, gso on eth0"), "{}", fixes(false)[1]);
    }
}
