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
//! before 4.0 (no congctl), a destination reached through another table than main (ip rule),
//! a multipath route or one with attributes tcptune cannot copy, several host routes to it.

use std::net::IpAddr;

use super::Env;
use super::verdict::Verdict;
use crate::error::Error;
use crate::os::Os;
use crate::route::{self, Route, netlink};
use crate::snapshot::RouteChange;

/// A host route to set: the destination and its congestion control.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RouteWant {
    pub dest: IpAddr,
    pub algorithm: String,
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
                "{} host routes lead to {} (different metrics or tos): tcptune changes one only",
                more.len(),
                want.dest
            ))
            .into());
        }
    };
    Ok(Some(RouteChange {
        dest: route::prefix(want.dest, route::full_len(want.dest)),
        prior,
        new,
        applied: None,
    }))
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
/// kernel's copy is recorded in `applied` when it differs from what was asked.
pub fn write(c: &mut RouteChange) -> Result<(), Error> {
    match &c.prior {
        None => netlink::add(&c.new)?,
        Some(_) => netlink::replace(&c.new)?,
    }
    let now = netlink::host_routes(dest_of(c))?;
    match now.as_slice() {
        [r] if r.same(&c.new) => {}
        [r] if r.congctl == c.new.congctl => c.applied = Some(r.clone()),
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

/// The host routes to a recorded change's destination now.
pub fn now(c: &RouteChange) -> anyhow::Result<Vec<Route>> {
    Ok(netlink::host_routes(dest_of(c))?)
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
/// route (or add it back). Err: what went wrong.
pub fn restore(c: &RouteChange, now: &[Route]) -> Result<(), String> {
    let r = match (&c.prior, now) {
        (None, routes) => routes.iter().try_for_each(netlink::delete),
        (Some(p), []) => netlink::add(p),
        (Some(p), _) => netlink::replace(p),
    };
    r.map_err(|e| format!("route {}: {e}", c.dest))
}

/// "none" or the route's `ip route` line, for messages.
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

/// A recorded change that revert may act on: a host route of the main table, and one tcptune
/// would delete only if it is its own.
pub fn check_record(c: &RouteChange) -> Result<(), String> {
    let r = &c.new;
    if r.table != route::MAIN_TABLE || r.dst_len != route::full_len(r.dst) || r.kind != route::UNICAST {
        return Err(format!(
            "route {} is not a unicast host route of the main table",
            c.dest
        ));
    }
    if c.prior.is_none() && !r.is_tcptune() {
        return Err(format!("route {} would delete a route that is not tcptune's", c.dest));
    }
    if let Some(p) = &c.prior
        && !(p.dst == r.dst && p.dst_len == r.dst_len && p.table == r.table)
    {
        return Err(format!("route {}: its prior route is for another destination", c.dest));
    }
    Ok(())
}
