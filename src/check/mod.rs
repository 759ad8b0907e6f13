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
//! * [`facts`]: gathering the host facts the rules read, from [`crate::host`].

pub mod facts;
pub mod host_rules;
pub mod memory;
pub mod sysctl_rules;

use serde::Serialize;

use crate::bdp::Sizing;
use crate::measure::LinkFacts;
use crate::platform::Os;

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

/// Where the path's rate came from: it changes how much a buffer verdict can be trusted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RateSource {
    Given,
    Measured,
    Assumed,
}

/// What one path needs of the buffers: the advice for it, reduced to what the rules read.
#[derive(Debug, Clone)]
pub struct PathNeeds {
    /// The host as resolved by the advice (None: "the host" in messages).
    pub host: Option<String>,
    pub rtt_ms: f64,
    pub bandwidth_bps: u64,
    pub bandwidth_source: RateSource,
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
    let count = |s: Status| f.iter().filter(|x| x.status == s).count();
    let summary = Summary {
        ok: count(Status::Ok),
        warn: count(Status::Warn),
        fail: count(Status::Fail),
    };
    Report {
        os: req.os,
        current_from: req.current_from.clone(),
        host: req.host.clone(),
        findings: f,
        summary,
    }
}

/// "at most 5.243 Mbit/s at 100 ms RTT" for a window in bytes.
fn ceiling(window: u64, rtt_ms: Option<f64>) -> String {
    let rtt = rtt_ms.filter(|r| *r > 0.0).unwrap_or(100.0);
    let bps = crate::bdp::max_throughput_bps(
        crate::units::Bytes::new(window),
        crate::units::Duration::from_millis_f64(rtt),
    );
    format!(
        "at most {} at {} ms RTT",
        crate::output::rate(bps),
        crate::output::ms(rtt)
    )
}

#[cfg(test)]
mod test_util {
    use std::collections::BTreeMap;

    use super::Finding;

    pub fn reader(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let m: BTreeMap<String, String> = pairs.iter().map(|(k, v)| ((*k).into(), (*v).into())).collect();
        move |k: &str| m.get(k).cloned()
    }

    pub fn by_id<'a>(f: &'a [Finding], id: &str) -> &'a Finding {
        f.iter()
            .find(|x| x.id == id)
            .unwrap_or_else(|| panic!("no {id} in {f:#?}"))
    }
}
