//! `--scope path`: the advised congestion control on the path to one host only, as a host
//! route with `congctl` (Linux 4.0+), instead of the host-wide key that moves every new
//! connection. The buffer maxima stay host-wide: they are per network namespace, not per
//! route, and they are caps (autotuning grows a socket only as far as its own flow needs), so
//! raising them leaves flows that need less as they were.
//!
//! [`to_path`] turns host-wide advice into the scoped form from the routing facts the caller
//! gathered ([`RouteFacts`]); nothing here reads the machine.

use std::net::IpAddr;

use serde::Serialize;

use super::{Advice, AdviceRequest, Note};
use crate::error::Error;
use crate::host::facts::CURRENT_CC;
use crate::profile::{Action, Stage};
use crate::route::{self, Lookup, Route};

/// Where the advised congestion control applies.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Scope {
    /// Every destination: the host-wide sysctl.
    HostWide,
    /// Only the path's host: a host route with congctl.
    Path,
}

pub use crate::route::RouteFacts;

/// The congestion control as a host route toward the path's host.
#[derive(Debug, Clone, Serialize)]
pub struct RouteAdvice {
    /// The path's host.
    pub dest: IpAddr,
    /// The congestion control for new connections to it.
    pub algorithm: String,
    /// What new connections to it run now: its host route's congctl, else the host-wide
    /// default (null when unknown).
    pub current: Option<String>,
    /// The host-wide default, which stays for every other destination.
    pub host_wide: Option<String>,
    pub action: Action,
    /// The route to write: a copy of what the kernel uses for the host today plus congctl, or
    /// the host route already there plus congctl (`replaces`); null when it cannot be known.
    pub route: Option<Route>,
    /// The host route to the host there now, replaced with all its attributes plus congctl;
    /// null when there is none (tcptune adds its own).
    pub prior: Option<Route>,
    /// The `ip route replace ...` line that writes it.
    pub command: Option<String>,
    /// What the setting is, its one short clause and its whole derivation (the congestion
    /// control's, with the scope said).
    pub label: String,
    pub why: String,
    pub reason: String,
}

impl RouteAdvice {
    /// The `ip route` line that puts back what runs now: the host route there before, or the
    /// deletion of tcptune's own.
    pub fn undo_command(&self) -> Option<String> {
        Some(route::quoted(&self.undo_words()?))
    }

    /// [`RouteAdvice::undo_command`] as the words `ip` takes.
    pub fn undo_words(&self) -> Option<Vec<String>> {
        Some(undo_words(self.route.as_ref()?, self.prior.as_ref()))
    }

    /// "congestion control to 198.18.0.2 cubic → bbr: holds rate through loss", as a file's
    /// comment says a setting.
    pub fn line(&self) -> String {
        let change = match (&self.current, &self.action) {
            (Some(c), Action::Set) => format!("{c} \u{2192} {}", self.algorithm),
            (None, Action::Set) => format!("\u{2192} {}", self.algorithm),
            (_, Action::Keep) => format!("{}, already running", self.algorithm),
            (_, Action::Unavailable(_)) => format!("{}, not applied here", self.algorithm),
        };
        format!("{} to {} {change}: {}", self.label, self.dest, self.why)
    }
}

/// The words that put back what ran before `r` was written: the host route there before
/// (`prior`), or the deletion of tcptune's own.
pub fn undo_words(r: &Route, prior: Option<&Route>) -> Vec<String> {
    match prior {
        Some(p) => route::words("replace", p),
        None => [
            "ip",
            "route",
            "del",
            &route::prefix(r.dst, r.dst_len),
            "proto",
            &route::PROTO.to_string(),
        ]
        .map(String::from)
        .to_vec(),
    }
}

/// The scoped form of `a`: its congestion-control setting taken out of the host-wide
/// settings and made a host route toward `facts.dest`; a note says that the buffer maxima
/// stay host-wide caps. Advice whose profile sets no congestion control gets a note only.
pub fn to_path(a: &mut Advice, facts: &RouteFacts) {
    a.scope = Scope::Path;
    let Some(at) = a
        .settings
        .iter()
        .position(|s| s.key == CURRENT_CC && s.stage == Stage::Runtime)
    else {
        a.notes.push(Note::shown(
            "--scope path: the profile sets no congestion control, so nothing is scoped",
        ));
        return;
    };
    let s = a.settings.remove(at);
    let algorithm = s.value.clone();
    let route = route_to_write(facts, &algorithm);
    let route_cc = facts.existing.first().and_then(|r| r.congctl.clone());
    let current = route_cc.or_else(|| s.current.clone());
    let action = match &route {
        Err(why) => Action::Unavailable(why.clone()),
        Ok(_) if current.as_deref() == Some(algorithm.as_str()) => Action::Keep,
        Ok(_) => Action::Set,
    };
    let route = route.ok();
    a.route = Some(RouteAdvice {
        dest: facts.dest,
        current,
        host_wide: s.current.clone(),
        action,
        prior: facts.existing.first().cloned(),
        command: route.as_ref().map(|r| route::command("replace", r)),
        route,
        label: s.label.clone(),
        why: s.why.clone(),
        reason: format!(
            "{}; on the path to {} only (a host route with congctl {algorithm}): other destinations keep the host-wide {}",
            s.reason,
            facts.dest,
            s.current.as_deref().unwrap_or("default")
        ),
        algorithm,
    });
    a.changes = a
        .settings
        .iter()
        .filter(|s| s.action == Action::Set && s.stage == Stage::Runtime)
        .count()
        + usize::from(a.route.as_ref().is_some_and(|r| r.action == Action::Set));
    a.notes.push(Note::with_short(
        "the buffer maxima stay host-wide (per network namespace, not per route), as caps: autotuning grows a \
         socket's buffers only as far as its own flow needs, so raising them leaves flows that need less as \
         they were; the cost is memory under pressure (tcp_mem). Buffers per destination would need a BPF \
         sockops program on a cgroup, which tcptune does not write",
        "the buffer maxima stay host-wide caps: flows that need less are unchanged",
    ));
}

/// The address `--scope path` routes to: the path's host (the first of `req.hosts`, which holds
/// the measured one, else the `--ssh` end's name) as measured, else as an address literal, else
/// resolved here in the family asked for.
pub fn destination(req: &AdviceRequest, a: &Advice) -> Result<IpAddr, Error> {
    use crate::measure::resolve;
    let name = req
        .hosts
        .first()
        .or(req.ssh_host.as_ref())
        .cloned()
        .ok_or_else(|| Error::usage("--scope path needs the path's host: --host HOST or --ssh DEST"))?;
    if let Some(h) = a.hosts.iter().find(|h| h.host == name) {
        return Ok(h.measurement.addr);
    }
    if let Some(ip) = resolve::parse_literal(&name) {
        return Ok(ip);
    }
    use std::net::ToSocketAddrs as _;
    // The host names the route's destination even where --rtt and --bandwidth are given: the
    // way around a name that does not resolve is its address.
    let hint = "check the name, or give the host's address (--host 198.18.0.2)";
    let cannot = |why: &str| resolve::cannot_resolve(&name, why).with_hint(hint);
    resolve::check_name(&name).map_err(|e| e.with_hint(hint))?;
    let addrs: Vec<IpAddr> = (name.as_str(), 0)
        .to_socket_addrs()
        .map_err(|e| cannot(&resolver_says(&e)))?
        .map(|s| s.ip())
        .collect();
    addrs
        .iter()
        .copied()
        .find(|ip| req.probe.family.is_none_or(|f| f.matches(ip)))
        .ok_or_else(|| cannot("no address of the family asked"))
}

/// The resolver's error without the C library's prefix ("failed to lookup address
/// information: Name or service not known" → "Name or service not known").
fn resolver_says(e: &std::io::Error) -> String {
    let s = e.to_string();
    s.strip_prefix("failed to lookup address information: ")
        .unwrap_or(&s)
        .to_string()
}

/// The far end's advice in the scoped form: its route back toward this host, as the far end
/// sees this host (ssh's SSH_CONNECTION) and routes to it (`ip route get` there); a note
/// where it did not say.
pub fn back_to_path(a: &mut Advice, back: Option<&Lookup>) {
    let Some(back) = back else {
        a.notes.push(Note::shown(
            "--scope path: the far end did not say how it reaches this host (no SSH_CONNECTION, or no ip there): its congestion control stays host-wide",
        ));
        return;
    };
    let facts = RouteFacts {
        dest: back.dest,
        lookup: Ok(back.clone()),
        existing: Vec::new(),
    };
    to_path(a, &facts);
}

/// The host route for `algorithm`: the one there plus congctl, else a copy of what the kernel
/// uses; Err when tcptune may not give the host a route of its own.
fn route_to_write(facts: &RouteFacts, algorithm: &str) -> Result<Route, String> {
    let lookup = facts.lookup.as_ref().map_err(Clone::clone)?;
    if let Some(why) = lookup.refusal() {
        return Err(why);
    }
    let r = match facts.existing.as_slice() {
        [] => lookup.host_route(algorithm),
        [r] => r.with_congctl(algorithm),
        more => {
            return Err(format!(
                "{} host routes lead to {}: tcptune changes one only",
                more.len(),
                facts.dest
            ));
        }
    };
    // A word no terminal shows as it is (a control character in a device's name) would make
    // the line name another device than the route's: no line is better than a wrong one.
    if !route::printable(&r) {
        return Err(format!(
            "the route to {} names a device whose name holds a control character",
            facts.dest
        ));
    }
    Ok(r)
}

#[cfg(test)]
mod tests {
    use std::cell::RefCell;
    use std::net::IpAddr;

    use super::*;
    use crate::advice::{AdviceRequest, advise};
    use crate::host::Facts;
    use crate::measure::fake::FakeProber;
    use crate::measure::{EvidenceRequest, HostMeasurement, PathProber, ProbeOptions, evidence::Evidence};
    use crate::os::Os;
    use crate::profile::Profile;

    /// Nothing answers (the tests give the path), and a kernel that routes every destination
    /// through `wan0` and keeps the destinations it was asked about.
    struct Routed {
        asked: RefCell<Vec<IpAddr>>,
    }

    impl PathProber for Routed {
        fn measure(&self, hosts: &[String], opts: &ProbeOptions) -> Result<Vec<HostMeasurement>, crate::error::Error> {
            FakeProber::UNREACHABLE.measure(hosts, opts)
        }
        fn evidence(
            &self,
            m: &HostMeasurement,
            req: &EvidenceRequest,
            opts: &ProbeOptions,
        ) -> Result<Evidence, crate::error::Error> {
            FakeProber::UNREACHABLE.evidence(m, req, opts)
        }
        fn route_toward(&self, dest: IpAddr) -> RouteFacts {
            self.asked.borrow_mut().push(dest);
            RouteFacts {
                dest,
                lookup: Ok(wan0(dest)),
                existing: Vec::new(),
            }
        }
    }

    fn wan0(dest: IpAddr) -> Lookup {
        Lookup {
            dev: Some("wan0".into()),
            oif: Some(3),
            ..Lookup::new(dest, route::MAIN_TABLE, route::UNICAST)
        }
    }

    /// A given path (nothing sent) to `hosts`, scoped as `scope`.
    fn given(hosts: &[&str], scope: Scope, ssh_host: Option<&str>) -> AdviceRequest {
        AdviceRequest {
            rtt: Some("150ms".parse().expect("rtt")),
            bandwidth: Some("500mbit".parse().expect("rate")),
            scope,
            ssh_host: ssh_host.map(str::to_string),
            ..AdviceRequest::for_hosts(hosts.iter().map(|h| (*h).to_string()).collect())
        }
    }

    fn advised(req: &AdviceRequest) -> (Advice, Vec<IpAddr>) {
        let prober = Routed {
            asked: RefCell::new(Vec::new()),
        };
        let a = advise(req, &Profile::for_os(Os::Linux), &Facts::unknown(Os::Linux), &prober).expect("advice");
        (a, prober.asked.into_inner())
    }

    #[test]
    fn the_advice_scopes_itself_on_the_route_its_prober_reads() {
        let (a, asked) = advised(&given(&["198.18.0.2"], Scope::Path, None));
        let dest: IpAddr = "198.18.0.2".parse().expect("ip");
        assert_eq!(asked, vec![dest], "the route is read once, toward the path's host");
        assert_eq!(a.scope, Scope::Path);
        let r = a.route.as_ref().expect("a route advised");
        assert_eq!(r.dest, dest);
        let written = r.route.as_ref().expect("a route to write");
        assert_eq!(written.dev.as_deref(), Some("wan0"));
        assert_eq!(written.congctl.as_deref(), Some(r.algorithm.as_str()));
        assert!(
            !a.settings.iter().any(|s| s.key == CURRENT_CC),
            "the host-wide congestion control is taken out"
        );
    }

    #[test]
    fn host_wide_advice_reads_no_route() {
        let (a, asked) = advised(&given(&["198.18.0.2"], Scope::HostWide, None));
        assert!(asked.is_empty());
        assert_eq!(a.scope, Scope::HostWide);
        assert!(a.route.is_none());
        assert!(a.settings.iter().any(|s| s.key == CURRENT_CC));
    }

    #[test]
    fn without_a_host_the_ssh_ends_name_is_the_routes_destination() {
        let (a, asked) = advised(&given(&[], Scope::Path, Some("198.18.0.9")));
        assert_eq!(asked, vec!["198.18.0.9".parse::<IpAddr>().expect("ip")]);
        assert_eq!(
            a.route.as_ref().map(|r| r.dest.to_string()).as_deref(),
            Some("198.18.0.9")
        );
        // A --host names it before the --ssh end does.
        let (_, asked) = advised(&given(&["198.18.0.2"], Scope::Path, Some("198.18.0.9")));
        assert_eq!(asked, vec!["198.18.0.2".parse::<IpAddr>().expect("ip")]);
    }

    #[test]
    fn a_host_with_control_characters_is_refused_before_any_route_is_read() {
        let prober = Routed {
            asked: RefCell::new(Vec::new()),
        };
        let req = given(&["bad\u{1b}[2Jname"], Scope::Path, None);
        let e = advise(&req, &Profile::for_os(Os::Linux), &Facts::unknown(Os::Linux), &prober)
            .expect_err("a name no resolver takes");
        assert!(prober.asked.borrow().is_empty());
        assert!(!e.to_string().contains('\u{1b}'), "{e}");
    }

    #[test]
    fn the_far_end_is_scoped_on_the_route_it_said_or_told_why_not() {
        let (mut a, _) = advised(&given(&["198.18.0.2"], Scope::HostWide, None));
        let (mut silent, _) = advised(&given(&["198.18.0.2"], Scope::HostWide, None));
        let back: IpAddr = "198.18.0.1".parse().expect("ip");
        back_to_path(&mut a, Some(&wan0(back)));
        assert_eq!(a.route.as_ref().map(|r| r.dest), Some(back));
        back_to_path(&mut silent, None);
        assert_eq!(silent.scope, Scope::HostWide);
        assert!(silent.route.is_none());
        assert!(
            silent
                .notes
                .iter()
                .any(|n| n.contains("did not say how it reaches this host"))
        );
    }
}
