//! The diagnosis behind `tcptune check`: is this host healthy for bulk TCP? One finding per
//! thing engineers look at — window scaling, SACK, timestamps, congestion control and pacing,
//! MTU probing and MTU, NIC offloads, duplex, retransmissions, TCP memory, conflicting
//! configuration — each with a verdict (ok, warn, fail) and, when not ok, a fix. With a path
//! (`--host`), also whether the running buffer maxima cover it.
//!
//! This module owns the verdicts, not the I/O: [`check`] judges a [`CheckRequest`], the running
//! sysctl values (a reader) and, on the machine itself, the [`facts::LocalFacts`] gathered
//! beforehand. Nothing here prints or measures; every rule is a pure function, tested on
//! fabricated values.
//!
//! * [`sysctl_rules`]: the TCP switches of each OS, and the buffer maxima against a path.
//! * [`host_rules`]: interfaces, retransmissions, sysctl.d files, tuning daemons.
//! * [`memory`]: TCP memory (tcp_mem, in pages of the real page size) against buffers × flows.
//! * [`applied`]: whether what `tcptune apply` set (its snapshots still applied) still runs.
//! * [`facts`]: gathering the host facts the rules read, from [`crate::host`].

pub mod applied;
pub mod facts;
pub mod host_rules;
pub mod memory;
pub mod sysctl_rules;

use serde::Serialize;

use crate::bdp::Sizing;
use crate::measure::LinkFacts;
use crate::os::Os;

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    Ok,
    Warn,
    Fail,
}

impl Status {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Ok => "ok",
            Self::Warn => "warn",
            Self::Fail => "fail",
        }
    }
}

/// One line of the diagnosis.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Finding {
    /// Stable identifier: `sack`, `offload:eth0`, `sysctl-files:net.ipv4.tcp_rmem`.
    pub id: String,
    pub status: Status,
    pub message: String,
    /// What to do; null when ok.
    pub fix: Option<String>,
}

impl Finding {
    fn ok(id: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            id: id.into(),
            status: Status::Ok,
            message: message.into(),
            fix: None,
        }
    }
    fn warn(id: impl Into<String>, message: impl Into<String>, fix: impl Into<String>) -> Self {
        Self {
            id: id.into(),
            status: Status::Warn,
            message: message.into(),
            fix: Some(fix.into()),
        }
    }
    fn fail(id: impl Into<String>, message: impl Into<String>, fix: impl Into<String>) -> Self {
        Self {
            id: id.into(),
            status: Status::Fail,
            message: message.into(),
            fix: Some(fix.into()),
        }
    }
}

#[derive(Debug, Serialize)]
pub struct Summary {
    pub ok: usize,
    pub warn: usize,
    pub fail: usize,
}

#[derive(Debug, Serialize)]
pub struct Report {
    pub os: Os,
    /// Where the sysctl values were read.
    pub current_from: String,
    pub host: Option<String>,
    pub findings: Vec<Finding>,
    pub summary: Summary,
    /// Each snapshot still applied here, newest first: whether what it set still runs.
    pub applied: Vec<applied::Applied>,
}

impl Report {
    /// The report with what the snapshots still applied here say ([`applied`]): a finding
    /// each, and one when the store could not be read in whole (`unread`: why). `again`: the
    /// options that find the same store and target, for the fixes.
    #[must_use]
    pub fn with_applied(mut self, applied: Vec<applied::Applied>, unread: Option<&str>, again: &str) -> Self {
        self.findings.extend(applied.iter().map(|a| applied::finding(a, again)));
        self.findings.extend(unread.map(applied::unread));
        self.summary = summary(&self.findings);
        self.applied = applied;
        self
    }
}

fn summary(f: &[Finding]) -> Summary {
    let count = |s: Status| f.iter().filter(|x| x.status == s).count();
    Summary {
        ok: count(Status::Ok),
        warn: count(Status::Warn),
        fail: count(Status::Fail),
    }
}

/// The running value of a key, when present.
pub type Read<'a> = dyn Fn(&str) -> Option<String> + 'a;

/// What to check.
#[derive(Debug, Clone)]
pub struct CheckRequest {
    pub os: Os,
    /// Where the sysctl values are read (for the report's header).
    pub current_from: String,
    /// The host named for the path check, as the user gave it.
    pub host: Option<String>,
    /// Concurrent bulk flows expected, for the memory check.
    pub flows: u32,
    /// What the path to `host` needs, when one was named.
    pub path: Option<PathNeeds>,
}

/// What one path needs of the buffers: the advice for it, reduced to what the rules read.
#[derive(Debug, Clone)]
pub struct PathNeeds {
    /// The host as resolved by the advice (None: "the host" in messages).
    pub host: Option<String>,
    pub rtt_ms: f64,
    pub bandwidth_bps: u64,
    /// Where the rate came from: it changes how much a buffer verdict can be trusted.
    pub bandwidth_source: crate::bdp::Source,
    pub sizing: Sizing,
    /// The advised value of each key, for the fixes.
    pub settings: Vec<(String, String)>,
    /// The interface towards the host, and its route MTU, when measured.
    pub link: Option<LinkFacts>,
}

/// The diagnosis. `local`: the facts of this machine, when the sysctls are this machine's
/// (Linux); without them only the sysctls are judged.
pub fn check(req: &CheckRequest, read: &Read<'_>, local: Option<&facts::LocalFacts>) -> Report {
    let rtt_ms = req.path.as_ref().map(|p| p.rtt_ms);
    let mut f = Vec::new();
    match req.os {
        Os::Linux => sysctl_rules::linux_sysctls(read, rtt_ms, &mut f),
        Os::Freebsd | Os::Macos => sysctl_rules::bsd_sysctls(req.os, read, rtt_ms, &mut f),
    }
    if let Some(path) = &req.path {
        sysctl_rules::buffers(req.os, read, path, &mut f);
    }
    if let Some(local) = local {
        host_rules::local(read, req.path.as_ref(), req.flows, local, &mut f);
    }
    Report {
        os: req.os,
        current_from: req.current_from.clone(),
        host: req.host.clone(),
        summary: summary(&f),
        findings: f,
        applied: Vec::new(),
    }
}

/// A count and its noun: "1 flow", "2 flows", "1,024 files".
pub fn counted(n: u64, one: &str, many: &str) -> String {
    format!("{} {}", crate::text::count(n), if n == 1 { one } else { many })
}

/// "at most 5.243 Mbit/s at 100 ms RTT" for a window in bytes.
fn ceiling(window: u64, rtt_ms: Option<f64>) -> String {
    let rtt = rtt_ms.filter(|r| *r > 0.0).unwrap_or(100.0);
    let bps = crate::bdp::max_throughput_bps(
        crate::units::Bytes::new(window),
        crate::units::Span::from_millis_f64(rtt),
    );
    format!("at most {} at {} RTT", crate::text::rate(bps), crate::text::millis(rtt))
}

#[cfg(test)]
mod test_util {
    use std::collections::BTreeMap;

    use super::Finding;

    pub fn reader(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let m: BTreeMap<String, String> = pairs.iter().map(|(k, v)| ((*k).into(), (*v).into())).collect();
        move |k: &str| m.get(k).cloned()
    }

    pub fn eth0() -> super::facts::InterfaceFacts {
        super::facts::InterfaceFacts {
            name: crate::text::Foreign::new("eth0"),
            mtu: Some(9000),
            duplex: Some("full".into()),
            tun: false,
            #[cfg(target_os = "linux")]
            offloads: Err(std::io::ErrorKind::Unsupported.into()),
            qdiscs: Some(Ok(vec!["fq_codel".into()])),
        }
    }

    pub fn facts() -> super::facts::LocalFacts {
        super::facts::LocalFacts {
            interfaces: vec![eth0()],
            tcp_counters: None,
            ram: Some(8 << 30),
            tcp_mem_in_use_pages: Some(10),
            page_size: 4096,
            sch_fq: Some(true),
            ethtool: true,
            setters: std::collections::BTreeMap::new(),
            unchecked: Vec::new(),
            child_netns: Some(false),
            tuning_daemons: vec![(812, "bpftune".into())],
            tcptune_routes: Ok(Vec::new()),
            route_snapshots: super::facts::RouteSnapshots::default(),
        }
    }

    pub fn by_id<'a>(f: &'a [Finding], id: &str) -> &'a Finding {
        f.iter()
            .find(|x| x.id == id)
            .unwrap_or_else(|| panic!("no {id} in {f:#?}"))
    }
}

#[cfg(test)]
mod tests {
    use super::test_util::{by_id, facts, reader};
    use super::*;

    fn request(path: Option<PathNeeds>) -> CheckRequest {
        CheckRequest {
            os: Os::Linux,
            current_from: "/proc/sys".into(),
            host: path.as_ref().and_then(|p| p.host.clone()),
            flows: 1,
            path,
        }
    }

    const BBR_HOST: [(&str, &str); 5] = [
        ("net.ipv4.tcp_congestion_control", "bbr"),
        ("net.ipv4.tcp_sack", "1"),
        ("net.ipv4.tcp_rmem", "4096 131072 6291456"),
        ("net.ipv4.tcp_wmem", "4096 16384 4194304"),
        ("net.ipv4.tcp_mem", "188049 250735 376098"),
    ];

    #[test]
    fn sysctls_only_without_local_facts() {
        let r = check(&request(None), &reader(&BBR_HOST), None);
        let ids: Vec<&str> = r.findings.iter().map(|f| f.id.as_str()).collect();
        assert_eq!(ids, ["sack", "congestion-control"]);
        assert_eq!((r.summary.ok, r.summary.warn, r.summary.fail), (2, 0, 0));
    }

    #[test]
    fn local_facts_are_judged_without_io() {
        let r = check(&request(None), &reader(&BBR_HOST), Some(&facts()));
        let ids: Vec<&str> = r.findings.iter().map(|f| f.id.as_str()).collect();
        assert_eq!(
            ids,
            [
                "sack",
                "congestion-control",
                "mtu:eth0",
                "duplex:eth0",
                "pacing:eth0",
                "tcp-memory",
                "sysctl-files",
                "tuning-daemons:bpftune"
            ]
        );
        assert_eq!(by_id(&r.findings, "pacing:eth0").status, Status::Warn);
        assert!(by_id(&r.findings, "mtu:eth0").message.contains("jumbo"));
        // Without bbr the qdisc is not judged.
        let cubic = [("net.ipv4.tcp_congestion_control", "cubic")];
        let r = check(&request(None), &reader(&cubic), Some(&facts()));
        assert!(!r.findings.iter().any(|f| f.id.starts_with("pacing:")), "{r:#?}");
    }

    #[test]
    fn interface_qdisc_and_congestion_control_names_are_shown_escaped() {
        let mut facts = facts();
        facts.interfaces[0].name = crate::text::Foreign::new("\u{1b}[31m\nkernel.x=");
        facts.interfaces[0].qdiscs = Some(Ok(vec!["fq_codel\n".into()]));
        let r = check(&request(None), &reader(&BBR_HOST), Some(&facts));
        let shown: Vec<&Finding> = r.findings.iter().filter(|f| f.id.contains("kernel.x=")).collect();
        assert_eq!(shown.len(), 3, "mtu, duplex, pacing: {r:#?}");
        for f in shown {
            for t in [&f.id, &f.message].into_iter().chain(&f.fix) {
                assert!(!t.chars().any(char::is_control), "{t:?}");
                assert!(t.contains("\\u{1b}[31m\\u{a}kernel.x="), "{t}");
            }
        }
        assert!(
            by_id(&r.findings, "pacing:\\u{1b}[31m\\u{a}kernel.x=")
                .message
                .contains("fq_codel\\u{a},")
        );
        // The congestion controls are the kernel's names too.
        let odd = [
            ("net.ipv4.tcp_congestion_control", "x\u{1b}[2J"),
            ("net.ipv4.tcp_available_congestion_control", "reno cubic\nbbr"),
        ];
        let r = check(&request(None), &reader(&odd), None);
        let cc = by_id(&r.findings, "congestion-control");
        assert!(!cc.message.chars().any(char::is_control), "{:?}", cc.message);
        assert!(
            cc.message
                .starts_with("x\\u{1b}[2J in use (available: reno cubic\\u{a}bbr)"),
            "{}",
            cc.message
        );
    }

    #[test]
    fn the_route_mtu_counts_on_the_interface_towards_the_host() {
        let path = |interface: &str| PathNeeds {
            host: Some("peer".into()),
            rtt_ms: 50.0,
            bandwidth_bps: 100_000_000,
            bandwidth_source: crate::bdp::Source::Given,
            sizing: crate::bdp::size_buffers(
                crate::units::Bitrate::from_bps(100_000_000),
                crate::units::Span::from_millis_f64(50.0),
                None,
            ),
            settings: Vec::new(),
            link: Some(LinkFacts {
                interface: Some(interface.into()),
                route_mtu: Some(1500),
                ..LinkFacts::default()
            }),
        };
        let r = check(&request(Some(path("eth0"))), &reader(&BBR_HOST), Some(&facts()));
        assert_eq!(r.host.as_deref(), Some("peer"));
        assert_eq!(by_id(&r.findings, "mtu:eth0").status, Status::Warn);
        // 6 MiB of tcp_rmem covers 100 Mbit/s at 50 ms.
        assert_eq!(by_id(&r.findings, "buffers:receive").status, Status::Ok);
        let r = check(&request(Some(path("eth1"))), &reader(&BBR_HOST), Some(&facts()));
        assert_eq!(by_id(&r.findings, "mtu:eth0").status, Status::Ok);
    }
}
