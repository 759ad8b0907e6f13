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

use super::{Advice, Note};
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

/// What the machine's routing says of the destination, gathered by the caller: the kernel's
/// lookup (Err: why there is none) and the host routes to it already there.
#[derive(Debug, Clone)]
pub struct RouteFacts {
    pub dest: IpAddr,
    pub lookup: Result<Lookup, String>,
    pub existing: Vec<Route>,
}

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
