//! What a test end of `tcptune mesh` reported of its path: the fields of its `tcptune advise
//! --format json` (docs/CLI.md) that a fleet's advice is made of, read and checked where they
//! enter. The far end is another machine: its keys must be networking keys of its OS, its
//! values valid sysctl values, its route a host route to the peer it measured with a plain
//! congestion control and nothing a terminal would act on; its words are kept as
//! [`Foreign`] and escaped where they are shown.

use std::net::IpAddr;

use serde::Deserialize;

use crate::os::Os;
use crate::profile::{Action, Stage};
use crate::route::Route;
use crate::text::{self, Foreign};

/// One path as its test end advised for it.
#[derive(Debug, Clone, Deserialize)]
pub struct PathReport {
    pub os: Os,
    pub rtt_ms: f64,
    pub bandwidth_bps: u64,
    pub receive_bandwidth_bps: Option<u64>,
    pub bdp_bytes: f64,
    pub decision: ClassReport,
    pub receive_decision: ClassReport,
    pub settings: Vec<SettingReport>,
    /// `--scope path` (Linux): the congestion control as a host route toward the peer.
    pub route: Option<RouteReport>,
}

/// A side's class and the loss it read.
#[derive(Debug, Clone, Deserialize)]
pub struct ClassReport {
    pub class: Foreign,
    pub loss_pct: Option<f64>,
}

/// One setting of the test end's advice.
#[derive(Debug, Clone, Deserialize)]
pub struct SettingReport {
    pub key: String,
    pub value: String,
    pub current: Option<String>,
    pub action: Action,
    pub stage: Stage,
    pub label: Foreign,
    pub why: Foreign,
    /// How its value reads: `size`, `max-size` (the last of a triple), `switch`, `text`.
    #[serde(default)]
    pub shown: Option<Foreign>,
}

/// The congestion control toward the peer, as the test end's routes would carry it.
#[derive(Debug, Clone, Deserialize)]
pub struct RouteReport {
    pub dest: IpAddr,
    pub algorithm: String,
    /// What new connections to the peer run now there.
    pub current: Option<String>,
    /// The host-wide default there.
    pub host_wide: Option<String>,
    /// The route to write (null when none can be: its action says why).
    pub route: Option<Route>,
    pub prior: Option<Route>,
    pub action: Action,
    pub why: Foreign,
}

/// Reads and checks the test end's advice toward `addr`. Err: why it cannot be taken.
pub fn read(json: &str, addr: &str) -> Result<PathReport, String> {
    let r: PathReport = serde_json::from_str(json).map_err(|e| format!("its advice is not tcptune's JSON ({e})"))?;
    let positive = |v: f64| v.is_finite() && v > 0.0;
    if !positive(r.rtt_ms) || !positive(r.bdp_bytes) || r.bandwidth_bps == 0 {
        return Err("its advice holds no path (RTT, rate or BDP not above zero)".to_string());
    }
    for s in &r.settings {
        let checked = match s.stage {
            Stage::Runtime => crate::sysctl::file::check_key(&s.key, r.os)
                .and_then(|()| crate::sysctl::file::check_value(&s.key, &s.value, r.os).map(drop)),
            Stage::Boot => crate::profile::check_boot_line(&s.key, &s.value),
        };
        checked.map_err(|e| format!("its advice holds a setting tcptune would not write: {e}"))?;
        if let Some(c) = &s.current
            && text::escape(c) != *c
        {
            return Err(format!("its running value of {} holds control characters", s.key));
        }
    }
    if let Some(route) = &r.route {
        check_route(route, addr)?;
    }
    Ok(r)
}

/// A congestion control's name as the kernel spells one: lower-case letters, digits and `_`.
pub fn plain_cc(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 15
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
}

fn check_route(r: &RouteReport, addr: &str) -> Result<(), String> {
    let names: Vec<&str> = [Some(&r.algorithm), r.current.as_ref(), r.host_wide.as_ref()]
        .into_iter()
        .flatten()
        .map(String::as_str)
        .collect();
    if let Some(bad) = names.iter().find(|n| !plain_cc(n)) {
        return Err(format!(
            "its route names the congestion control \"{}\"",
            text::escape(bad)
        ));
    }
    let wanted: Option<IpAddr> = addr.parse().ok();
    if wanted.is_some_and(|w| w != r.dest) {
        return Err(format!(
            "its route is toward {}, not the peer {}",
            r.dest,
            text::escape(addr)
        ));
    }
    for (what, route) in [("route", r.route.as_ref()), ("prior route", r.prior.as_ref())] {
        let Some(route) = route else { continue };
        let host_len = if route.dst.is_ipv4() { 32 } else { 128 };
        if route.dst != r.dest || route.dst_len != host_len {
            return Err(format!("its {what} is not the host route to {}", r.dest));
        }
        if !crate::route::printable(route) || route.dev.as_deref().is_some_and(|d| !crate::route::valid_ifname(d)) {
            return Err(format!("its {what} to {} names a device no route can have", r.dest));
        }
        if route.congctl.as_deref().is_some_and(|c| !plain_cc(c)) {
            return Err(format!("its {what} to {} names an odd congestion control", r.dest));
        }
    }
    if let Some(route) = &r.route
        && route.congctl.as_deref() != Some(r.algorithm.as_str())
    {
        return Err(format!(
            "its route to {} does not carry congctl {}",
            r.dest, r.algorithm
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A test end's advice, as `advise --scope path --format json` prints it (the fields read).
    pub fn sample(dev: &str, algorithm: &str) -> String {
        serde_json::json!({
            "os": "linux", "rtt_ms": 80.0, "bandwidth_bps": 100_000_000u64,
            "receive_bandwidth_bps": null, "bdp_bytes": 1_000_000.0,
            "decision": {"class": "lossy", "loss_pct": 0.01},
            "receive_decision": {"class": "lossy", "loss_pct": 0.01},
            "settings": [{
                "key": "net.ipv4.tcp_rmem", "value": "4096 131072 5046272", "current": "4096 131072 6291456",
                "action": {"kind": "keep"}, "stage": "runtime", "label": "receive max", "why": "5 × BDP, loss recovery"
            }],
            "route": {
                "dest": "198.18.10.2", "algorithm": algorithm, "current": "cubic", "host_wide": "cubic",
                "action": {"kind": "set"}, "why": "holds rate through loss", "prior": null,
                "route": {"dst": "198.18.10.2", "dst_len": 32, "table": 254, "protocol": 116, "scope": 253,
                          "kind": 1, "tos": 0, "gateway": null, "oif": 7, "dev": dev, "prefsrc": "198.18.10.1",
                          "priority": null, "pref": null, "congctl": algorithm}
            }
        })
        .to_string()
    }

    #[test]
    fn a_test_ends_advice_is_read() {
        let r = read(&sample("to2", "bbr"), "198.18.10.2").expect("read");
        assert_eq!(r.os, Os::Linux);
        assert_eq!(r.settings[0].action, Action::Keep);
        assert_eq!(r.route.as_ref().map(|x| x.algorithm.as_str()), Some("bbr"));
    }

    #[test]
    fn a_device_linux_allows_is_taken_and_quoted_by_the_one_rule() {
        let r = read(&sample("x$(id)", "bbr"), "198.18.10.2").expect("Linux allows the name");
        let route = r.route.and_then(|x| x.route).expect("route");
        assert!(crate::route::command("replace", &route).contains("dev 'x$(id)'"));
    }

    #[test]
    fn what_a_hostile_test_end_sends_is_refused_where_it_enters() {
        // A device whose name would run in a shell, a congestion control with a space, a
        // route toward another host, a key outside networking, a value with a newline.
        for (json, addr) in [
            (sample("a\nb", "bbr"), "198.18.10.2"),
            (sample("a/b", "bbr"), "198.18.10.2"),
            (sample("to2", "bbr; id"), "198.18.10.2"),
            (sample("to2", "bbr"), "198.18.10.3"),
        ] {
            assert!(read(&json, addr).is_err(), "{json}");
        }
        let mut v: serde_json::Value = serde_json::from_str(&sample("to2", "bbr")).expect("json");
        v["settings"][0]["key"] = "kernel.core_pattern".into();
        assert!(read(&v.to_string(), "198.18.10.2").is_err());
        let mut v: serde_json::Value = serde_json::from_str(&sample("to2", "bbr")).expect("json");
        v["settings"][0]["value"] = "4096 131072\nkernel.x = 1".into();
        assert!(read(&v.to_string(), "198.18.10.2").is_err());
        let mut v: serde_json::Value = serde_json::from_str(&sample("to2", "bbr")).expect("json");
        v["route"]["route"]["dst_len"] = 24.into();
        assert!(read(&v.to_string(), "198.18.10.2").is_err());
        assert!(read("not json", "198.18.10.2").is_err());
    }
}
