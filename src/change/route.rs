//! The host route of `apply --scope path`: what to write for a destination (the preflight),
//! writing it with a read-back, undoing it, and what `revert` makes of it.
//!
//! * No host route to the destination: tcptune adds one of its own ([`route::PROTO`]) that
//!   copies what the kernel uses today (gateway, device, source, the matched route's metrics)
//!   plus `congctl`; revert deletes exactly that route.
//! * A host route already there: every attribute is recorded, and it is replaced by the same
//!   route plus `congctl`; revert replaces it by the recorded one.
//!
//! Refused before anything is written, each in one line (exit 3): no CAP_NET_ADMIN, a kernel
//! before 4.0 (no congctl), the unspecified or an IPv4-mapped destination, one reached by a
//! route that is no path (local, blackhole, unreachable, prohibit) or through another table
//! than main (ip rule), a multipath route, one that expires or has attributes tcptune cannot
//! copy, several host routes to it, and a file's route line whose gateway, device or source
//! is not what the kernel uses now. Only the route of ordinary connections (tos 0) is read,
//! copied or changed.
//!
//! The write is checked against the read: tcptune's own route is added only if none is
//! there (NLM_F_EXCL), a route there is replaced only if it is still the one read; else the
//! apply stops (exit 3) and rolls back.

use std::net::IpAddr;

use super::Env;
use super::verdict::Verdict;
use crate::error::Error;
use crate::os::Os;
use crate::route::{self, Route, netlink};
use crate::snapshot::RouteChange;

/// A host route to set: the destination and its congestion control, and the file's route
/// line when it came from one (what it names of the route is checked against the kernel's).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RouteWant {
    pub dest: IpAddr,
    pub algorithm: String,
    pub line: Option<route::RouteLine>,
}

/// Why a route cannot be written on this system at all; None when it can.
fn system_refusal(env: &Env, dry_run: bool) -> Option<Error> {
    if env.os != Os::Linux || !cfg!(target_os = "linux") {
        return Some(route::unsupported());
    }
    if !env.local {
        return Some(
            Error::usage("--scope path changes this machine's routes: it takes no --sysctl-dir or --sysctl-cmd")
                .with_hint("run it without them, inside the network namespace to change"),
        );
    }
    if let Some(false) = crate::host::facts::kernel_release()
        .as_deref()
        .and_then(route::kernel_has_congctl)
    {
        return Some(
            Error::not_permitted(format!(
                "this kernel ({}) has no per-route congestion control (congctl: Linux 4.0 and later); nothing was written",
                crate::host::facts::kernel_release().unwrap_or_default()
            ))
            .with_hint("--scope host-wide sets the host-wide net.ipv4.tcp_congestion_control instead"),
        );
    }
    if !dry_run && route::has_net_admin() == Some(false) {
        return Some(route::needs_net_admin());
    }
    None
}

/// The preflight of one route: Ok(None) when the host route already has that congestion
/// control, else the change to make; every refusal is an error before anything is written.
pub fn preflight(env: &Env, want: &RouteWant, dry_run: bool) -> anyhow::Result<Option<RouteChange>> {
    if let Some(e) = system_refusal(env, dry_run) {
        return Err(e.into());
    }
    let list = "net.ipv4.tcp_available_congestion_control";
    if let Some(avail) = env.backend.read(list).value()
        && !crate::sysctl::file::offers(avail, &want.algorithm)
    {
        return Err(Error::not_permitted(format!(
            "route to {}: congctl {} is not offered by this kernel ({list}: {}); nothing was written",
            want.dest,
            crate::text::escape(&want.algorithm),
            crate::sysctl::normalize_value(avail)
        ))
        .with_hint(format!(
            "load it first (modprobe tcp_{})",
            crate::text::escape(&want.algorithm)
        ))
        .into());
    }
    if let Some(why) = route::dest_refusal(want.dest) {
        return Err(refusal(why).into());
    }
    let lookup = netlink::lookup(want.dest)?;
    if let Some(why) = lookup.refusal() {
        return Err(refusal(why).into());
    }
    let existing = netlink::host_routes(want.dest)?;
    let (prior, new) = match existing.as_slice() {
        [] => (None, lookup.host_route(&want.algorithm)),
        [r] if r.congctl.as_deref() == Some(want.algorithm.as_str()) => return Ok(None),
        [r] => (Some(r.clone()), r.with_congctl(&want.algorithm)),
        more => {
            return Err(refusal(format!(
                "{} host routes lead to {} (different metrics): tcptune changes one only",
                more.len(),
                want.dest
            ))
            .into());
        }
    };
    if !route::printable(&new) {
        return Err(refusal(format!(
            "the route to {} names a device whose name holds a control character (`{}`)",
            want.dest,
            route::command("replace", &new)
        ))
        .into());
    }
    if let Some(line) = &want.line {
        check_line(line, &new)?;
    }
    Ok(Some(RouteChange {
        dest: route::prefix(want.dest, route::full_len(want.dest)),
        prior,
        new,
        applied: None,
    }))
}

/// A file's route line names the gateway, device and source of the route advise saw; the
/// route apply writes copies the kernel's today. Where they differ the path changed since the
/// advice: refused rather than set on another path than the one advised.
fn check_line(line: &route::RouteLine, new: &Route) -> Result<(), Error> {
    let said = (line.gateway, line.dev.as_deref(), line.prefsrc);
    let here = (new.gateway, new.dev.as_deref(), new.prefsrc);
    let differs = line.gateway.is_some_and(|g| Some(g) != new.gateway)
        || line.dev.as_deref().is_some_and(|d| Some(d) != new.dev.as_deref())
        || line.prefsrc.is_some_and(|p| Some(p) != new.prefsrc);
    if !differs {
        return Ok(());
    }
    let show = |(g, d, p): (Option<IpAddr>, Option<&str>, Option<IpAddr>)| {
        let mut w = Vec::new();
        if let Some(g) = g {
            w.push(format!("via {g}"));
        }
        if let Some(d) = d {
            w.push(format!("dev {}", crate::text::shell_word(d)));
        }
        if let Some(p) = p {
            w.push(format!("src {p}"));
        }
        if w.is_empty() {
            "nothing".to_string()
        } else {
            w.join(" ")
        }
    };
    Err(Error::not_permitted(format!(
        "the file's route to {} says `{}`, the kernel reaches it by `{}` now; nothing was written",
        line.dest,
        show(said),
        show(here)
    ))
    .with_hint("advise again for this path (the route line is written from the routes of its day)"))
}

fn refusal(why: String) -> Error {
    Error::not_permitted(format!("{why}; nothing was written"))
        .with_hint("--scope host-wide sets the host-wide net.ipv4.tcp_congestion_control instead")
}

/// The destination of a recorded change.
fn dest_of(c: &RouteChange) -> IpAddr {
    c.new.dst
}

/// Write one route (add tcptune's own, or replace the one there) and read it back: the
/// kernel's copy is recorded in `applied` when it differs from what was asked. The write is
/// what was read: tcptune's own route only where none is (NLM_F_EXCL), the route there
/// replaced only while it is still the one read (read again just before); else exit 3.
pub fn write(c: &mut RouteChange) -> Result<(), Error> {
    let dest = dest_of(c);
    match &c.prior {
        None => {
            if !netlink::add_new(&c.new)? {
                return Err(Error::not_permitted(format!(
                    "route to {}: a host route appeared since tcptune read the routes (`{}`); nothing was written",
                    c.dest,
                    shown(&netlink::host_routes(dest).unwrap_or_default())
                )));
            }
        }
        Some(p) => {
            let now = netlink::host_routes(dest)?;
            if !is(&now, Some(p)) {
                return Err(Error::not_permitted(format!(
                    "route to {}: the host route changed since tcptune read it (now `{}`, read `{}`); nothing was written",
                    c.dest,
                    shown(&now),
                    route::command("replace", p)
                ))
                .with_hint("apply again: it reads the route anew"));
            }
            netlink::replace(&c.new)?;
        }
    }
    let now = netlink::host_routes(dest)?;
    match now.as_slice() {
        [r] if r.same(&c.new) => {}
        [r] if r.congctl == c.new.congctl && r.same_key(&c.new) => c.applied = Some(r.clone()),
        _ => {
            // Not counted as written by the caller's rollback: taken out here, if it is there.
            let _ = undo(c);
            return Err(Error::not_permitted(format!(
                "route to {}: the kernel does not show the route just written",
                c.dest
            )));
        }
    }
    Ok(())
}

/// Undo one written route (a failed apply's rollback): delete tcptune's own, or put back the
/// route that was there. Err: what went wrong, in one line.
pub fn undo(c: &RouteChange) -> Result<(), String> {
    match &c.prior {
        None => netlink::delete(c.in_effect()),
        Some(p) => netlink::replace(p),
    }
    .map_err(|e| format!("route {}: {e}", c.dest))
}

/// The host routes to a recorded change's destination now. Refused (exit 3) when the
/// prior route's device is gone or its index names another device now: the route cannot be
/// put back as it was, and tcptune will not put it on another device.
pub fn now(c: &RouteChange) -> anyhow::Result<Vec<Route>> {
    let routes = netlink::host_routes(dest_of(c))?;
    if let Some(p) = &c.prior
        && let (Some(index), Some(name)) = (p.oif, p.dev.as_deref())
        && !is(&routes, Some(p))
    {
        let now = netlink::device_name(index)?;
        if now.as_deref() != Some(name) {
            let is_now = now.map_or_else(
                || "no device has it now".to_string(),
                |n| format!("it is {} now", crate::text::shell_word(&n)),
            );
            return Err(Error::not_permitted(format!(
                "the host route to {} was on {} (index {index}), and {is_now}: tcptune cannot put it back as it was; nothing was changed",
                c.dest,
                crate::text::shell_word(name)
            ))
            .with_hint(format!("ip route del {} removes tcptune's route by hand", c.dest))
            .into());
        }
    }
    Ok(routes)
}

/// Whether the host routes `now` are the state `want` (None: no host route).
fn is(now: &[Route], want: Option<&Route>) -> bool {
    match (now, want) {
        ([], None) => true,
        ([r], Some(w)) => r.same(w),
        _ => false,
    }
}

/// The verdict ladder for one route, as [`super::revert::judge`] for a key; no rung restores
/// an interrupted apply whatever is there, since a route is written whole or not at all.
pub fn judge(c: &RouteChange, now: &[Route], other_boot: bool, force: bool) -> Verdict {
    if is(now, c.prior.as_ref()) {
        Verdict::Unchanged
    } else if other_boot && !force {
        Verdict::Ended
    } else if is(now, Some(c.in_effect())) || is(now, Some(&c.new)) {
        Verdict::Restore
    } else if force {
        Verdict::RestoreForced
    } else {
        Verdict::Conflict
    }
}

/// Put back the state before the apply, given the host routes now: delete what is there
/// (tcptune's, or any, with --force) when there was none, else replace it by the recorded
/// route (or add it back); then read back that the routes are the prior state. Err: what
/// went wrong.
pub fn restore(c: &RouteChange, now: &[Route]) -> Result<(), String> {
    let r = match (&c.prior, now) {
        (None, routes) => routes.iter().try_for_each(netlink::delete),
        (Some(p), []) => netlink::add(p),
        (Some(p), _) => netlink::replace(p),
    };
    r.map_err(|e| format!("route {}: {e}", c.dest))?;
    let after = netlink::host_routes(dest_of(c)).map_err(|e| format!("route {}: {e}", c.dest))?;
    if is(&after, c.prior.as_ref()) {
        Ok(())
    } else {
        Err(format!(
            "route {}: the kernel shows `{}` after the revert, not {}",
            c.dest,
            shown(&after),
            shown(c.prior.as_slice())
        ))
    }
}

/// "no host route" or the routes' `ip route` lines, type and all, for messages.
pub fn shown(routes: &[Route]) -> String {
    match routes {
        [] => "no host route".to_string(),
        rs => rs
            .iter()
            .map(|r| route::command("replace", r))
            .collect::<Vec<_>>()
            .join("; "),
    }
}

/// A recorded change that revert may act on, held to what apply checks of a new route: the
/// unicast host route of ordinary connections (tos 0) in the main table to its destination;
/// tcptune's own ([`route::PROTO`]) where there was none before; where there was one, exactly
/// that route plus congctl (so replacing it puts back that route, by its key). `applied`, the
/// kernel's copy, names the same route.
pub fn check_record(c: &RouteChange) -> Result<(), String> {
    let r = &c.new;
    let what = |x: &Route| route::command("replace", x);
    let plain = |x: &Route| {
        x.table == route::MAIN_TABLE
            && x.dst_len == route::full_len(x.dst)
            && x.kind == route::UNICAST
            && x.tos == 0
            && route::dest_refusal(x.dst).is_none()
            && x.dev.as_deref().is_none_or(route::valid_ifname)
    };
    if !plain(r) || route::prefix(r.dst, r.dst_len) != c.dest {
        return Err(format!(
            "route {}: `{}` is not a unicast host route to it in the main table",
            crate::text::escape(&c.dest),
            what(r)
        ));
    }
    match &c.prior {
        None if !r.is_tcptune() => {
            return Err(format!(
                "route {}: `{}` is not tcptune's (proto {}), and revert would delete it",
                c.dest,
                what(r),
                route::PROTO
            ));
        }
        None => {}
        Some(p) if !plain(p) || p.dst != r.dst => {
            return Err(format!(
                "route {}: its prior `{}` is not a unicast host route to it in the main table",
                c.dest,
                what(p)
            ));
        }
        Some(p) => {
            let cc = r.congctl.as_deref().unwrap_or_default();
            if !p.with_congctl(cc).same(r) || r.dev != p.dev {
                return Err(format!(
                    "route {}: its prior `{}` is not the route tcptune replaced (`{}`)",
                    c.dest,
                    what(p),
                    what(r)
                ));
            }
        }
    }
    if let Some(a) = &c.applied
        && !(plain(a) && a.same_key(r) && a.congctl == r.congctl && a.protocol == r.protocol)
    {
        return Err(format!(
            "route {}: `{}` is not the route tcptune wrote (`{}`)",
            c.dest,
            what(a),
            what(r)
        ));
    }
    Ok(())
}
