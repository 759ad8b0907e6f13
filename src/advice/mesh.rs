//! `tcptune mesh`: one host's advice from all its paths. Each path was measured from this
//! host (the test end) to a peer on another; what the test end sent is evidence only
//! ([`crate::remote::evidence`]), and each path's advice is computed here ([`path_advice`]) with
//! the same code `advise` runs, from the host's own facts and OS and the route its kernel said
//! it uses toward the peer. Then they become one set of settings ([`combine`]):
//!
//! - a size (a buffer maximum, the unsent-data cap) is the largest any path needs, element by
//!   element for a triple; the path that needs the most decides it and its why names it;
//! - another setting that paths disagree on takes the value of the path with the largest BDP;
//! - the congestion control is host-wide where one serves every path; where paths need
//!   different ones, the host-wide default is the one most paths need (the running one when a
//!   path needs it, so that fewer things change) and each other path gets a host route with
//!   its own (`--scope path`).
//!
//! Nothing here reads the machine or the network: the caller gathered the facts and replays
//! the evidence.

use std::net::IpAddr;

use super::decide::PathClass;
use super::scope::{self, RouteAdvice, RouteFacts};
use super::{Advice, AdviceRequest, End};
use crate::host::Facts;
use crate::host::facts::CURRENT_CC;
use crate::measure::PathProber;
use crate::os::Os;
use crate::profile::{Action, Profile, Setting, Shown, Stage};
use crate::route::{Lookup, Route};
use crate::sysctl::same_value;

/// One measured path of the mesh: from the test end `from` to the peer `to` at `addr`, and
/// the test end's advice for it, computed here.
#[derive(Debug)]
pub struct MeshPath {
    pub from: String,
    pub to: String,
    pub addr: IpAddr,
    pub advice: Advice,
}

/// The advice for one path of a mesh, for the test end whose `facts` and `profile` (its OS's)
/// are given: the path replayed from its evidence (`evidence`, a prober that answers with what
/// the test end measured), advised as `advise` advises, and on Linux scoped to the path
/// (`--scope path`) with the route the test end's kernel said it uses toward the peer
/// (`route`; None: it did not say, and no route is advised). `name`: how its notes name it.
pub fn path_advice(
    req: &AdviceRequest,
    profile: &Profile,
    facts: &Facts,
    evidence: &dyn PathProber,
    (dest, route): (IpAddr, Option<&Lookup>),
    name: &str,
) -> anyhow::Result<Advice> {
    let measured = super::measure(req, facts, evidence)?;
    let mut a = super::advise_end(req, profile, facts, &measured, End::Near, name)?;
    scoped(&mut a, profile, (dest, route), name);
    Ok(a)
}

/// On Linux, `a` scoped to the path toward `dest` (`--scope path`) with the route the host's
/// kernel said it uses there (None: it did not say, and no route is advised).
fn scoped(a: &mut Advice, profile: &Profile, (dest, route): (IpAddr, Option<&Lookup>), name: &str) {
    if profile.os == Os::Linux {
        let facts = RouteFacts {
            dest,
            lookup: route
                .cloned()
                .ok_or_else(|| format!("{name} did not say how it routes to {dest}")),
            existing: Vec::new(),
        };
        scope::to_path(a, &facts);
    }
}

/// One end of a mesh's test as the control host knows it: its name, its address and what its
/// facts-only session found (OS from its own `uname`, facts), and the route its kernel said it
/// uses toward the test's other end.
pub struct TestEnd<'a> {
    pub name: &'a str,
    pub reach: &'a crate::remote::mesh::Reach,
    pub route: Option<&'a Lookup>,
}

/// One test of the pair `from`–`to` (`from` ran it; it measured both directions), advised
/// here for both ends: the evidence `from` sent (`json`) read and checked where it enters
/// ([`crate::remote::evidence::read`]), replayed once, and advised for each end with its own
/// facts, OS and route — `from` as the near end of the path it measured, `to` as its far end
/// (the path mirrored: what `to` sent is the reverse test), as `advise --ssh` advises both.
/// Err: why the test gives no advice; `Ok` holds `from → to`, then `to → from` (None where `to`
/// runs an OS tcptune does not advise for).
pub fn test_advice(
    json: &str,
    from: &TestEnd<'_>,
    to: &TestEnd<'_>,
    test_time: Option<std::time::Duration>,
) -> Result<(MeshPath, Option<MeshPath>), String> {
    let evidence = crate::remote::evidence::read(json, to.reach.addr)
        .map_err(|why| format!("ssh {}: {why}", crate::text::escape(&from.reach.dest)))?;
    let (Some(os), Some(facts)) = (from.reach.far.os, from.reach.far.facts.as_ref()) else {
        return Err(format!(
            "{} runs {}, which tcptune does not advise for",
            from.name, from.reach.far.uname
        ));
    };
    let mut req = AdviceRequest::for_hosts(vec![to.reach.addr.to_string()]);
    req.test_time = test_time;
    let no_advice = |e: anyhow::Error| {
        format!(
            "its evidence gives no advice: {}",
            crate::text::escape(&format!("{e:#}"))
        )
    };
    let measured = super::measure(&req, facts, &evidence).map_err(no_advice)?;
    // One end's path: its own OS's profile and facts, its route toward the other end.
    let advise = |end: End, me: &TestEnd<'_>, other: &TestEnd<'_>, (os, facts): (Os, &Facts)| {
        let profile = Profile::for_os(os);
        let mut a = super::advise_end(&req, &profile, facts, &measured, end, me.name).map_err(no_advice)?;
        scoped(&mut a, &profile, (other.reach.addr, me.route), me.name);
        Ok::<_, String>(MeshPath {
            from: me.name.to_string(),
            to: other.name.to_string(),
            addr: other.reach.addr,
            advice: a,
        })
    };
    let there = advise(End::Near, from, to, (os, facts))?;
    let back = match (to.reach.far.os, to.reach.far.facts.as_ref()) {
        (Some(os), Some(facts)) => Some(advise(End::Far, to, from, (os, facts))?),
        _ => None,
    };
    Ok((there, back))
}

impl MeshPath {
    fn decider(&self) -> Decider {
        let a = &self.advice;
        Decider {
            to: self.to.clone(),
            rtt_ms: a.rtt_ms,
            rate_bps: a.bandwidth_bps,
            bdp_bytes: a.sizing.bdp,
            class: a.decision.class,
            loss_pct: a.decision.loss_pct,
        }
    }

    fn bdp(&self) -> u64 {
        self.advice.sizing.bdp
    }
}

/// The path that decided a setting, as its why names it.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Decider {
    pub to: String,
    pub rtt_ms: f64,
    pub rate_bps: u64,
    pub bdp_bytes: u64,
    pub class: PathClass,
    pub loss_pct: Option<f64>,
}

/// One setting of a host's mesh advice: the setting as the deciding path's advice has it (its
/// value the merged one), and that path.
#[derive(Debug, Clone, serde::Serialize)]
pub struct HostSetting {
    #[serde(flatten)]
    pub setting: Setting,
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
    /// The route to write: a copy of what the host's kernel said it uses toward `dest`, with
    /// congctl. What it replaces is read where it is applied (`tcptune apply`, the playbook).
    pub route: Route,
    pub action: Action,
    pub why: String,
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
    /// What the advice could not do for a path, said (a congestion control no route carries).
    pub notes: Vec<String>,
}

impl HostAdvice {
    /// How many settings and routes change something.
    pub fn changes(&self) -> usize {
        self.settings
            .iter()
            .filter(|s| s.setting.stage == Stage::Runtime && s.setting.action == Action::Set)
            .count()
            + self.routes.iter().filter(|r| r.action == Action::Set).count()
    }
}

/// The advice of the host that measured `paths` (each from it, each advised for `os`, its OS
/// as its own session said): Err when there is none.
pub fn combine(host: &str, os: Os, paths: &[&MeshPath]) -> Result<HostAdvice, String> {
    let first = paths
        .first()
        .ok_or_else(|| format!("{host}: no path was measured from it"))?;
    if paths.iter().any(|p| p.advice.os != os) {
        return Err(format!("{host}: its paths were advised for another OS than its own"));
    }
    let largest = paths.iter().copied().max_by_key(|p| p.bdp()).unwrap_or(first);
    let mut settings = Vec::new();
    let mut disagreements = Vec::new();
    for key in keys(paths) {
        let each: Vec<(&MeshPath, &Setting)> = paths
            .iter()
            .filter_map(|p| p.advice.settings.iter().find(|s| s.key == key).map(|s| (*p, s)))
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
    let mut notes = Vec::new();
    let routes = congestion_control(paths, largest, &mut settings, &mut notes);
    Ok(HostAdvice {
        host: host.to_string(),
        os,
        paths: paths.iter().map(|p| p.to.clone()).collect(),
        largest: largest.decider(),
        settings,
        routes,
        disagreements,
        notes,
    })
}

/// Every key any path set, in the order the paths list them.
fn keys(paths: &[&MeshPath]) -> Vec<String> {
    let mut keys: Vec<String> = Vec::new();
    for p in paths {
        for s in &p.advice.settings {
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
fn merge(each: &[(&MeshPath, &Setting)], largest: &MeshPath) -> (HostSetting, Option<Vec<(String, String)>>) {
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
        setting: Setting {
            value,
            current,
            action,
            ..s.clone()
        },
        decided_by: decider.map(|_| p.decider()),
    };
    (setting, disagreed)
}

/// The congestion control over the paths (Linux, each path's route advice): one host-wide
/// setting where one serves every path, else host routes for the paths the host-wide one does
/// not serve. A path whose advice set no congestion control (it found the running settings
/// enough: a short path) needs the one running. Returns the routes; the host-wide setting goes
/// into `settings`.
fn congestion_control(
    paths: &[&MeshPath],
    largest: &MeshPath,
    settings: &mut Vec<HostSetting>,
    notes: &mut Vec<String>,
) -> Vec<HostRoute> {
    let Some(running) = paths.iter().find_map(|p| p.advice.route.as_ref()?.host_wide.clone()) else {
        return Vec::new();
    };
    // Each path's need: its congestion control, and its route advice when it gave one.
    let needs: Vec<(&MeshPath, &str, Option<&RouteAdvice>)> = paths
        .iter()
        .map(|p| match &p.advice.route {
            Some(r) => (*p, r.algorithm.as_str(), Some(r)),
            None => (*p, running.as_str(), None),
        })
        .collect();
    let mut counts: Vec<(&str, usize, u64)> = Vec::new();
    for (p, alg, _) in &needs {
        match counts.iter_mut().find(|(a, _, _)| a == alg) {
            Some(c) => {
                c.1 += 1;
                c.2 = c.2.max(p.bdp());
            }
            None => counts.push((alg, 1, p.bdp())),
        }
    }
    // The running one where a path needs it (fewer changes), else the one most paths need
    // (ties: the largest BDP's).
    let host_wide = if counts.len() > 1 && counts.iter().any(|(a, _, _)| *a == running) {
        running.clone()
    } else {
        counts
            .iter()
            .max_by(|a, b| a.1.cmp(&b.1).then(a.2.cmp(&b.2)))
            .map(|c| c.0.to_string())
            .unwrap_or_default()
    };
    let serving = needs
        .iter()
        .filter(|(_, a, _)| *a == host_wide)
        .max_by_key(|(p, _, _)| p.bdp());
    let (decider, route) = serving.map_or((largest, None), |(p, _, r)| (*p, *r));
    let (why, reason) = route.map_or_else(
        || {
            (
                "the running one serves it".to_string(),
                "the running congestion control serves this path".to_string(),
            )
        },
        |r| (r.why.clone(), r.reason.clone()),
    );
    settings.push(HostSetting {
        setting: Setting {
            key: CURRENT_CC.to_string(),
            value: host_wide.clone(),
            current: Some(running.clone()),
            reason,
            stage: Stage::Runtime,
            action: if running == host_wide {
                Action::Keep
            } else {
                Action::Set
            },
            note: None,
            label: "congestion control".to_string(),
            why,
            shown: Shown::Text,
            stock: None,
            fallback: None,
        },
        decided_by: (counts.len() > 1 || paths.len() == 1).then(|| decider.decider()),
    });
    // A route for each path the host-wide one does not serve; one that cannot have a route of
    // its own is said.
    let mut routes = Vec::new();
    for (p, alg, r) in needs.iter().filter(|(_, alg, _)| *alg != host_wide) {
        let Some(r) = r else { continue };
        match (&r.route, &r.action) {
            (Some(route), action) => routes.push(HostRoute {
                to: p.to.clone(),
                dest: r.dest,
                algorithm: r.algorithm.clone(),
                current: r.current.clone(),
                action: match action {
                    Action::Unavailable(why) => Action::Unavailable(why.clone()),
                    _ => Action::Set,
                },
                route: route.clone(),
                why: r.why.clone(),
                decided_by: p.decider(),
            }),
            (None, action) => notes.push(format!(
                "to {}: {alg} is not set on its own route ({}); it keeps the host-wide {host_wide}",
                p.to,
                match action {
                    Action::Unavailable(why) => why.as_str(),
                    _ => "no route could be copied",
                }
            )),
        }
    }
    routes
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::host::facts::{ALLOWED_CC, AVAILABLE_CC, Running, TCP_MEM};
    use crate::measure::fake::FakeProber;
    use crate::sysctl::{Access, KeyState};

    /// A Linux host running CUBIC with stock buffer maxima, whose root may choose any
    /// congestion control it offers.
    pub(crate) fn linux() -> Facts {
        let rw = |v: &str| KeyState::Present {
            value: v.into(),
            access: Access::Writable,
        };
        let values = [
            ("net.ipv4.tcp_rmem", rw("4096 131072 6291456")),
            ("net.ipv4.tcp_wmem", rw("4096 16384 4194304")),
            ("net.core.rmem_max", rw("212992")),
            ("net.core.wmem_max", rw("212992")),
            (AVAILABLE_CC, rw("reno cubic bbr")),
            (ALLOWED_CC, rw("reno cubic bbr")),
            (CURRENT_CC, rw("cubic")),
            (TCP_MEM, rw("1000000 2000000 4000000")),
        ];
        Facts {
            os: Os::Linux,
            running: Some(Running {
                from: "test".into(),
                values: values.into_iter().map(|(k, v)| (k.to_string(), v)).collect(),
            }),
            child_netns: Some(false),
            sch_fq: Some(true),
            page_size: 4096,
            ram: Some(16 << 30),
            kernel: Some("6.1.0-test".into()),
        }
    }

    /// What the kernel says it uses toward `dest`: the link `wan0`.
    pub(crate) fn lookup(dest: IpAddr) -> Lookup {
        let mut l = Lookup::new(dest, crate::route::MAIN_TABLE, crate::route::UNICAST);
        l.dev = Some("wan0".into());
        l.oif = Some(7);
        l
    }

    /// The path from a to `to` at `addr`, measured as the fake `spec` says, advised here.
    fn path(to: &str, addr: &str, spec: &str) -> MeshPath {
        let addr: IpAddr = addr.parse().expect("addr");
        let evidence = FakeProber::from_spec(spec).expect("spec");
        let req = AdviceRequest::for_hosts(vec![addr.to_string()]);
        let advice = path_advice(
            &req,
            &Profile::for_os(Os::Linux),
            &linux(),
            &evidence,
            (addr, Some(&lookup(addr))),
            "a",
        )
        .expect("advice");
        MeshPath {
            from: "a".into(),
            to: to.into(),
            addr,
            advice,
        }
    }

    fn setting<'a>(a: &'a HostAdvice, key: &str) -> &'a HostSetting {
        a.settings.iter().find(|s| s.setting.key == key).expect(key)
    }

    #[test]
    fn the_buffers_cover_the_largest_need_and_name_its_path() {
        let b = path("b", "198.18.10.2", "rtt=10ms,rate=1gbit,queue=1");
        let c = path("c", "198.18.10.3", "rtt=150ms,rate=1gbit,queue=1");
        let a = combine("a", Os::Linux, &[&b, &c]).expect("advice");
        let rmem = setting(&a, "net.ipv4.tcp_rmem");
        let c_rmem = c
            .advice
            .settings
            .iter()
            .find(|s| s.key == "net.ipv4.tcp_rmem")
            .expect("c");
        assert_eq!(rmem.setting.value, c_rmem.value);
        assert_eq!(rmem.decided_by.as_ref().map(|d| d.to.as_str()), Some("c"));
        assert_eq!(rmem.setting.why, c_rmem.why, "the deciding path's own why");
        assert_eq!(a.largest.to, "c");
        // One congestion control serves both: host-wide, no route.
        assert!(a.routes.is_empty(), "{:?}", a.routes);
    }

    #[test]
    fn paths_that_need_different_congestion_controls_get_routes() {
        let b = path("b", "198.18.10.2", "rtt=10ms,rate=100mbit,queue=1");
        let c = path("c", "198.18.10.3", "rtt=150ms,rate=100mbit,loss=0.5");
        assert_eq!(c.advice.route.as_ref().map(|r| r.algorithm.as_str()), Some("bbr"));
        let a = combine("a", Os::Linux, &[&b, &c]).expect("advice");
        // The running cubic serves b: it stays host-wide, c gets bbr on its own route, built
        // here from the lookup (its device), toward c's own address.
        let cc = setting(&a, CURRENT_CC);
        assert_eq!(
            (cc.setting.value.as_str(), &cc.setting.action),
            ("cubic", &Action::Keep)
        );
        assert_eq!(a.routes.len(), 1);
        let r = &a.routes[0];
        assert_eq!((r.to.as_str(), r.algorithm.as_str()), ("c", "bbr"));
        assert_eq!(r.route.dst, c.addr);
        assert_eq!(
            (r.route.dev.as_deref(), r.route.congctl.as_deref()),
            (Some("wan0"), Some("bbr"))
        );
        // Both lossy: host-wide bbr, no route.
        let b2 = path("b", "198.18.10.2", "rtt=10ms,rate=100mbit,loss=0.5");
        let a = combine("a", Os::Linux, &[&b2, &c]).expect("advice");
        let cc = setting(&a, CURRENT_CC);
        assert_eq!((cc.setting.value.as_str(), &cc.setting.action), ("bbr", &Action::Set));
        assert!(a.routes.is_empty());
    }

    #[test]
    fn a_path_whose_host_did_not_say_its_route_keeps_the_host_wide_one_said() {
        let b = path("b", "198.18.10.2", "rtt=10ms,rate=100mbit,queue=1");
        let c_addr: IpAddr = "198.18.10.3".parse().expect("addr");
        let advice = path_advice(
            &AdviceRequest::for_hosts(vec![c_addr.to_string()]),
            &Profile::for_os(Os::Linux),
            &linux(),
            &FakeProber::from_spec("rtt=150ms,rate=100mbit,loss=0.5").expect("spec"),
            (c_addr, None),
            "a",
        )
        .expect("advice");
        let c = MeshPath {
            from: "a".into(),
            to: "c".into(),
            addr: c_addr,
            advice,
        };
        let a = combine("a", Os::Linux, &[&b, &c]).expect("advice");
        assert!(a.routes.is_empty());
        assert!(
            a.notes
                .iter()
                .any(|n| n.starts_with("to c: bbr is not set on its own route")),
            "{:?}",
            a.notes
        );
    }

    #[test]
    fn no_path_no_advice_and_paths_of_another_os_are_refused() {
        assert!(combine("a", Os::Linux, &[]).is_err());
        let b = path("b", "198.18.10.2", "rtt=10ms,rate=100mbit");
        assert!(combine("a", Os::Freebsd, &[&b]).is_err());
    }
}
