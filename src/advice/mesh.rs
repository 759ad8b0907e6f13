//! `tcptune mesh`: one host's advice from all its paths. Each path was measured from this
//! host (the test end) to a peer on another, and advised for by this host's own tcptune with
//! its own facts ([`crate::remote::report::PathReport`]); here they become one set of settings:
//!
//! - a size (a buffer maximum, the unsent-data cap) is the largest any path needs, element by
//!   element for a triple; the path that needs the most decides it and its why names it;
//! - another setting that paths disagree on takes the value of the path with the largest BDP;
//! - the congestion control is host-wide where one serves every path; where paths need
//!   different ones, the host-wide default is the one most paths need (the running one when a
//!   path needs it, so that fewer things change) and each other path gets a host route with
//!   its own (`--scope path`).
//!
//! Nothing here reads the machine or the network: the caller gathered the reports.

use std::net::IpAddr;

use crate::host::facts::CURRENT_CC;
use crate::os::Os;
use crate::profile::{Action, Stage};
use crate::remote::report::{PathReport, RouteReport, SettingReport};
use crate::route::Route;
use crate::sysctl::same_value;
use crate::text::Foreign;

/// One measured path of the mesh: from the test end `from` to the peer `to` at `addr`.
#[derive(Debug, Clone)]
pub struct MeshPath {
    pub from: String,
    pub to: String,
    pub addr: String,
    pub report: PathReport,
}

impl MeshPath {
    fn decider(&self) -> Decider {
        Decider {
            to: self.to.clone(),
            rtt_ms: self.report.rtt_ms,
            rate_bps: self.report.bandwidth_bps,
            bdp_bytes: self.report.bdp_bytes,
            class: self.report.decision.class.clone(),
            loss_pct: self.report.decision.loss_pct,
        }
    }
}

/// The path that decided a setting, as its why names it.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Decider {
    pub to: String,
    pub rtt_ms: f64,
    pub rate_bps: u64,
    pub bdp_bytes: f64,
    pub class: Foreign,
    pub loss_pct: Option<f64>,
}

/// One setting of a host's mesh advice.
#[derive(Debug, Clone, serde::Serialize)]
pub struct HostSetting {
    pub key: String,
    pub value: String,
    pub current: Option<String>,
    pub action: Action,
    pub stage: Stage,
    pub label: Foreign,
    /// The deciding path's own why ("5 × BDP, loss recovery").
    pub why: Foreign,
    /// How its value reads (`size`, `max-size`, `switch`, `text`), as the path said.
    pub shown: Option<Foreign>,
    /// The path whose need decided the value; None: every path asked for the same.
    pub decided_by: Option<Decider>,
}

/// A host route that gives one destination its own congestion control.
#[derive(Debug, Clone, serde::Serialize)]
pub struct HostRoute {
    pub to: String,
    pub dest: IpAddr,
    pub algorithm: String,
    /// What new connections to it run now.
    pub current: Option<String>,
    pub route: Route,
    /// The host route there before (replaced), or none (tcptune adds its own).
    pub prior: Option<Route>,
    pub action: Action,
    pub why: Foreign,
    pub decided_by: Decider,
}

/// One host's advice over all its paths.
#[derive(Debug, Clone, serde::Serialize)]
pub struct HostAdvice {
    pub host: String,
    pub os: Os,
    /// The peers of the paths it was made from.
    pub paths: Vec<String>,
    /// The path with the largest BDP: the one its buffer maxima are bounded by.
    pub largest: Decider,
    pub settings: Vec<HostSetting>,
    pub routes: Vec<HostRoute>,
    /// Where paths asked for different non-size values (the key, and what each asked).
    pub disagreements: Vec<(String, Vec<(String, String)>)>,
}

impl HostAdvice {
    /// How many settings and routes change something.
    pub fn changes(&self) -> usize {
        self.settings
            .iter()
            .filter(|s| s.stage == Stage::Runtime && s.action == Action::Set)
            .count()
            + self.routes.iter().filter(|r| r.action == Action::Set).count()
    }
}

/// The advice of the host that measured `paths` (each from it): Err when there is none (no
/// path, or paths reported by different OSes).
pub fn combine(host: &str, paths: &[&MeshPath]) -> Result<HostAdvice, String> {
    let first = paths
        .first()
        .ok_or_else(|| format!("{host}: no path was measured from it"))?;
    let os = first.report.os;
    if paths.iter().any(|p| p.report.os != os) {
        return Err(format!("{host}: its paths were advised for different OSes"));
    }
    let largest = paths
        .iter()
        .copied()
        .max_by(|a, b| a.report.bdp_bytes.total_cmp(&b.report.bdp_bytes))
        .unwrap_or(first);
    let mut settings = Vec::new();
    let mut disagreements = Vec::new();
    for key in keys(paths) {
        let each: Vec<(&MeshPath, &SettingReport)> = paths
            .iter()
            .filter_map(|p| p.report.settings.iter().find(|s| s.key == key).map(|s| (*p, s)))
            .collect();
        let (mut s, disagreed) = merge(&each, largest);
        if paths.len() == 1 {
            s.decided_by = Some(first.decider());
        }
        if let Some(d) = disagreed {
            disagreements.push((key.clone(), d));
        }
        settings.push(s);
    }
    let routes = congestion_control(paths, largest, &mut settings);
    Ok(HostAdvice {
        host: host.to_string(),
        os,
        paths: paths.iter().map(|p| p.to.clone()).collect(),
        largest: largest.decider(),
        settings,
        routes,
        disagreements,
    })
}

/// Every key any path set, in the order the paths list them.
fn keys(paths: &[&MeshPath]) -> Vec<String> {
    let mut keys: Vec<String> = Vec::new();
    for p in paths {
        for s in &p.report.settings {
            if !keys.contains(&s.key) {
                keys.push(s.key.clone());
            }
        }
    }
    keys
}

/// The numbers of a size value ("4096 131072 6291456"), or None when it is not one.
fn numbers(v: &str) -> Option<Vec<u64>> {
    let n: Option<Vec<u64>> = v.split_whitespace().map(|w| w.parse().ok()).collect();
    n.filter(|n| !n.is_empty())
}

/// One key over the paths that set it: sizes take the largest need, element by element;
/// another value the largest-BDP path's. The second value: what each path asked, when they
/// disagreed on a value that is no size.
fn merge(each: &[(&MeshPath, &SettingReport)], largest: &MeshPath) -> (HostSetting, Option<Vec<(String, String)>>) {
    let nums: Option<Vec<Vec<u64>>> = each.iter().map(|(_, s)| numbers(&s.value)).collect();
    let same_shape = nums.as_ref().is_some_and(|n| n.iter().all(|x| x.len() == n[0].len()));
    let all_same = each.iter().all(|(_, s)| same_value(&s.value, &each[0].1.value));
    let (decider, value, disagreed) = match nums.filter(|_| same_shape && !all_same) {
        Some(nums) => {
            let width = nums[0].len();
            let value: Vec<u64> = (0..width)
                .map(|i| nums.iter().map(|n| n[i]).max().unwrap_or(0))
                .collect();
            // The path whose need is largest (its last number, the maximum of a triple).
            let at = (0..nums.len())
                .max_by_key(|&i| (nums[i][width - 1], nums[i].iter().sum::<u64>()))
                .unwrap_or(0);
            let v = value.iter().map(u64::to_string).collect::<Vec<_>>().join(" ");
            (Some(each[at]), v, None)
        }
        None if all_same => (None, each[0].1.value.clone(), None),
        None => {
            let pick = each
                .iter()
                .find(|(p, _)| std::ptr::eq(*p, largest))
                .copied()
                .unwrap_or(each[0]);
            let asked = each.iter().map(|(p, s)| (p.to.clone(), s.value.clone())).collect();
            (Some(pick), pick.1.value.clone(), Some(asked))
        }
    };
    let (p, s) = decider.unwrap_or(each[0]);
    let current = each.iter().find_map(|(_, s)| s.current.clone());
    let action = match &s.action {
        Action::Unavailable(why) => Action::Unavailable(why.clone()),
        _ if current.as_deref().is_some_and(|c| same_value(c, &value)) => Action::Keep,
        _ => Action::Set,
    };
    let setting = HostSetting {
        key: s.key.clone(),
        value,
        current,
        action,
        stage: s.stage,
        label: s.label.clone(),
        why: s.why.clone(),
        shown: s.shown.clone(),
        decided_by: decider.map(|_| p.decider()),
    };
    (setting, disagreed)
}

/// The congestion control over the paths (Linux, each path's route advice): one host-wide
/// setting where one serves every path, else host routes for the paths the host-wide one does
/// not serve. A path whose advice set no congestion control (it found the running settings
/// enough: a short path) needs the one running. Returns the routes; the host-wide setting goes
/// into `settings`.
fn congestion_control(paths: &[&MeshPath], largest: &MeshPath, settings: &mut Vec<HostSetting>) -> Vec<HostRoute> {
    let Some(running) = paths.iter().find_map(|p| p.report.route.as_ref()?.host_wide.clone()) else {
        return Vec::new();
    };
    // Each path's need: its congestion control, and its route advice when it gave one.
    let needs: Vec<(&MeshPath, &str, Option<&RouteReport>)> = paths
        .iter()
        .map(|p| match &p.report.route {
            Some(r) => (*p, r.algorithm.as_str(), Some(r)),
            None => (*p, running.as_str(), None),
        })
        .collect();
    let mut counts: Vec<(&str, usize, f64)> = Vec::new();
    for (p, alg, _) in &needs {
        match counts.iter_mut().find(|(a, _, _)| a == alg) {
            Some(c) => {
                c.1 += 1;
                c.2 = c.2.max(p.report.bdp_bytes);
            }
            None => counts.push((alg, 1, p.report.bdp_bytes)),
        }
    }
    // The running one where a path needs it (fewer changes), else the one most paths need
    // (ties: the largest BDP's).
    let host_wide = if counts.len() > 1 && counts.iter().any(|(a, _, _)| *a == running) {
        running.clone()
    } else {
        counts
            .iter()
            .max_by(|a, b| a.1.cmp(&b.1).then(a.2.total_cmp(&b.2)))
            .map(|c| c.0.to_string())
            .unwrap_or_default()
    };
    let serving: Vec<&(&MeshPath, &str, Option<&RouteReport>)> =
        needs.iter().filter(|(_, a, _)| *a == host_wide).collect();
    let (decider, why) = serving
        .iter()
        .max_by(|a, b| a.0.report.bdp_bytes.total_cmp(&b.0.report.bdp_bytes))
        .map_or((largest, Foreign::new(String::new())), |(p, _, r)| {
            (
                *p,
                r.map_or_else(
                    || Foreign::new("the running one serves it".to_string()),
                    |r| r.why.clone(),
                ),
            )
        });
    settings.push(HostSetting {
        key: CURRENT_CC.to_string(),
        action: if running == host_wide {
            Action::Keep
        } else {
            Action::Set
        },
        value: host_wide.clone(),
        current: Some(running.clone()),
        stage: Stage::Runtime,
        label: Foreign::new("congestion control".to_string()),
        why,
        shown: Some(Foreign::new("text".to_string())),
        decided_by: (counts.len() > 1 || paths.len() == 1).then(|| decider.decider()),
    });
    // A route for each path the host-wide one does not serve, and for one whose host route
    // carries another congestion control already (else it would keep it).
    needs
        .iter()
        .filter_map(|(p, alg, r)| Some((p, alg, (*r)?)))
        .filter(|(_, alg, r)| {
            **alg != host_wide
                || r.prior
                    .as_ref()
                    .and_then(|p| p.congctl.as_deref())
                    .is_some_and(|c| c != r.algorithm)
        })
        .filter_map(|(p, _, r)| {
            let route = r.route.clone()?;
            Some(HostRoute {
                to: p.to.clone(),
                dest: r.dest,
                algorithm: r.algorithm.clone(),
                current: r.current.clone(),
                action: if r.prior.as_ref().and_then(|p| p.congctl.as_deref()) == Some(r.algorithm.as_str()) {
                    Action::Keep
                } else {
                    Action::Set
                },
                route,
                prior: r.prior.clone(),
                why: r.why.clone(),
                decided_by: p.decider(),
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::remote::report::ClassReport;

    fn route(dest: &str, cc: &str) -> Route {
        Route {
            dst: dest.parse().expect("addr"),
            dst_len: 32,
            table: 254,
            protocol: crate::route::PROTO,
            scope: 253,
            kind: 1,
            tos: 0,
            flags: 0,
            gateway: None,
            oif: Some(7),
            dev: Some("wan0".into()),
            prefsrc: None,
            priority: None,
            pref: None,
            metrics: Default::default(),
            lock: 0,
            congctl: Some(cc.into()),
        }
    }

    fn path(to: &str, addr: &str, rtt_ms: f64, rmem_max: u64, cc: &str, class: &str) -> MeshPath {
        let bdp = rtt_ms * 100e6 / 8e3;
        let setting = |key: &str, value: String, current: &str| SettingReport {
            key: key.into(),
            value,
            current: Some(current.into()),
            action: Action::Set,
            stage: Stage::Runtime,
            label: Foreign::new("receive max".to_string()),
            why: Foreign::new(format!("{class} why")),
            shown: None,
        };
        MeshPath {
            from: "a".into(),
            to: to.into(),
            addr: addr.into(),
            report: PathReport {
                os: Os::Linux,
                rtt_ms,
                bandwidth_bps: 100_000_000,
                receive_bandwidth_bps: None,
                bdp_bytes: bdp,
                decision: ClassReport {
                    class: Foreign::new(class.to_string()),
                    loss_pct: None,
                },
                receive_decision: ClassReport {
                    class: Foreign::new(class.to_string()),
                    loss_pct: None,
                },
                settings: vec![
                    setting(
                        "net.ipv4.tcp_rmem",
                        format!("4096 131072 {rmem_max}"),
                        "4096 131072 6291456",
                    ),
                    setting("net.ipv4.tcp_notsent_lowat", format!("{}", rmem_max / 40), "4294967295"),
                    setting("net.ipv4.tcp_mtu_probing", "1".into(), "0"),
                ],
                route: Some(RouteReport {
                    dest: addr.parse().expect("addr"),
                    algorithm: cc.into(),
                    current: Some("cubic".into()),
                    host_wide: Some("cubic".into()),
                    route: Some(route(addr, cc)),
                    prior: None,
                    action: Action::Set,
                    why: Foreign::new(format!("{cc} why")),
                }),
            },
        }
    }

    #[test]
    fn the_buffers_cover_the_largest_need_and_name_its_path() {
        let b = path("b", "198.18.10.2", 10.0, 4_000_000, "cubic", "clean");
        let c = path("c", "198.18.10.3", 150.0, 60_000_000, "cubic", "shallow");
        let a = combine("a", &[&b, &c]).expect("advice");
        let rmem = a.settings.iter().find(|s| s.key == "net.ipv4.tcp_rmem").expect("rmem");
        assert_eq!(rmem.value, "4096 131072 60000000");
        assert_eq!(rmem.decided_by.as_ref().map(|d| d.to.as_str()), Some("c"));
        assert_eq!(rmem.why.raw(), "shallow why");
        // Same on every path: nobody decided it alone.
        let mtu = a
            .settings
            .iter()
            .find(|s| s.key == "net.ipv4.tcp_mtu_probing")
            .expect("mtu");
        assert_eq!((mtu.value.as_str(), mtu.decided_by.is_none()), ("1", true));
        assert_eq!(a.largest.to, "c");
        // One congestion control serves both: host-wide, no route.
        assert!(a.routes.is_empty());
        let cc = a.settings.iter().find(|s| s.key == CURRENT_CC).expect("cc");
        assert_eq!((cc.value.as_str(), &cc.action), ("cubic", &Action::Keep));
    }

    #[test]
    fn paths_that_need_different_congestion_controls_get_routes() {
        let b = path("b", "198.18.10.2", 10.0, 4_000_000, "cubic", "clean");
        let c = path("c", "198.18.10.3", 150.0, 60_000_000, "bbr", "lossy");
        let a = combine("a", &[&b, &c]).expect("advice");
        // The running cubic serves b: it stays host-wide, c gets bbr on its own route.
        let cc = a.settings.iter().find(|s| s.key == CURRENT_CC).expect("cc");
        assert_eq!((cc.value.as_str(), &cc.action), ("cubic", &Action::Keep));
        assert_eq!(a.routes.len(), 1);
        assert_eq!((a.routes[0].to.as_str(), a.routes[0].algorithm.as_str()), ("c", "bbr"));
        assert_eq!(a.changes(), 4, "rmem, notsent_lowat, mtu probing and the route");
        // Both need bbr: host-wide bbr, no route.
        let b2 = path("b", "198.18.10.2", 10.0, 4_000_000, "bbr", "lossy");
        let a = combine("a", &[&b2, &c]).expect("advice");
        let cc = a.settings.iter().find(|s| s.key == CURRENT_CC).expect("cc");
        assert_eq!((cc.value.as_str(), &cc.action), ("bbr", &Action::Set));
        assert!(a.routes.is_empty());
    }

    #[test]
    fn three_paths_two_of_one_mind_the_third_routed() {
        let mut b = path("b", "198.18.10.2", 10.0, 4_000_000, "bbr", "lossy");
        let mut c = path("c", "198.18.10.3", 150.0, 60_000_000, "bbr", "lossy");
        let mut d = path("d", "198.18.10.4", 40.0, 9_000_000, "reno", "clean");
        for p in [&mut b, &mut c, &mut d] {
            if let Some(r) = &mut p.report.route {
                r.host_wide = Some("reno".into());
            }
        }
        let a = combine("a", &[&b, &c, &d]).expect("advice");
        let cc = a.settings.iter().find(|s| s.key == CURRENT_CC).expect("cc");
        // The running reno serves d, so it stays; b and c get routes.
        assert_eq!((cc.value.as_str(), &cc.action), ("reno", &Action::Keep));
        assert_eq!(a.routes.iter().map(|r| r.to.as_str()).collect::<Vec<_>>(), ["b", "c"]);
    }

    #[test]
    fn a_path_the_running_settings_serve_keeps_the_running_congestion_control() {
        // The short clean path's advice set no congestion control (the running one serves it);
        // the long lossy one needs BBR: CUBIC stays host-wide, BBR goes on the long path's route.
        let mut b = path("b", "198.18.10.2", 10.0, 4_000_000, "cubic", "clean");
        b.report.route = None;
        let c = path("c", "198.18.10.3", 150.0, 60_000_000, "bbr", "lossy");
        let a = combine("a", &[&b, &c]).expect("advice");
        let cc = a.settings.iter().find(|s| s.key == CURRENT_CC).expect("cc");
        assert_eq!((cc.value.as_str(), &cc.action), ("cubic", &Action::Keep));
        assert_eq!(cc.decided_by.as_ref().map(|d| d.to.as_str()), Some("b"));
        assert_eq!(
            a.routes
                .iter()
                .map(|r| (r.to.as_str(), r.algorithm.as_str()))
                .collect::<Vec<_>>(),
            [("c", "bbr")]
        );
        // A host route that carries another congestion control already gets one too, even for
        // the host-wide algorithm: else it would keep its own.
        let mut d = path("d", "198.18.10.4", 40.0, 9_000_000, "cubic", "clean");
        if let Some(r) = &mut d.report.route {
            r.prior = Some(route("198.18.10.4", "reno"));
        }
        let a = combine("a", &[&b, &c, &d]).expect("advice");
        assert_eq!(a.routes.iter().map(|r| r.to.as_str()).collect::<Vec<_>>(), ["c", "d"]);
    }

    #[test]
    fn no_path_no_advice() {
        assert!(combine("a", &[]).is_err());
    }
}
