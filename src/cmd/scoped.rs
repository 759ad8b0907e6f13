//! `--scope path` for the commands that advise (advise, apply): the one host the path goes to,
//! checked before anything is measured; its routing read on this machine (and on the far end,
//! through the `--ssh` session); each end's advice turned into the scoped form
//! ([`crate::advice::scope`]).

use std::net::IpAddr;

use crate::advice::Advice;
use crate::advice::scope::{self, RouteFacts};
use crate::cli::{AdviseArgs, Scope};
use crate::error::Error;
use crate::os::Os;
use crate::{remote, route};

/// Refuses, before anything is measured, what the scoped form cannot take: an OS without
/// routes' congctl, no host or several.
pub fn check_args(args: &AdviseArgs, os: Os) -> Result<(), Error> {
    if args.scope != Scope::Path {
        return Ok(());
    }
    if os != Os::Linux {
        return Err(Error::usage(format!(
            "--scope path sets a Linux route's congctl: {os} has no per-destination congestion control"
        ))
        .with_hint("--scope host-wide (the default) advises the host-wide setting"));
    }
    if args.host.len() > 1 {
        return Err(Error::usage(
            "--scope path scopes one path: give one --host (or --ssh DEST)",
        ));
    }
    if args.host.is_empty() && args.ssh.is_none() {
        return Err(
            Error::usage("--scope path needs the path's host: --host HOST or --ssh DEST")
                .with_hint("with --rtt and --bandwidth, --host HOST names the destination without measuring it"),
        );
    }
    Ok(())
}

/// The address of the path's host (`--host`, the measured one, else the `--ssh` end's host
/// name, `far_host`): the one measured, else the name resolved here.
fn destination(args: &AdviseArgs, a: &Advice, far_host: Option<&str>) -> Result<IpAddr, Error> {
    let name = args
        .host
        .first()
        .cloned()
        .or_else(|| a.host.clone())
        .or_else(|| far_host.map(str::to_string))
        .ok_or_else(|| Error::usage("--scope path needs the path's host: --host HOST or --ssh DEST"))?;
    if let Some(h) = a.hosts.iter().find(|h| h.host == name) {
        return Ok(h.measurement.addr);
    }
    if let Some(ip) = crate::measure::resolve::parse_literal(&name) {
        return Ok(ip);
    }
    use std::net::ToSocketAddrs as _;
    // The host names the route's destination even where --rtt and --bandwidth are given: the
    // way around a name that does not resolve is its address.
    let hint = "check the name, or give the host's address (--host 198.18.0.2)";
    let cannot = |why: &str| crate::measure::resolve::cannot_resolve(&name, why).with_hint(hint);
    crate::measure::resolve::check_name(&name).map_err(|e| e.with_hint(hint))?;
    let addrs: Vec<IpAddr> = (name.as_str(), 0)
        .to_socket_addrs()
        .map_err(|e| cannot(&resolver_says(&e)))?
        .map(|s| s.ip())
        .collect();
    addrs
        .iter()
        .copied()
        .find(|ip| (!args.ipv4 || ip.is_ipv4()) && (!args.ipv6 || ip.is_ipv6()))
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

/// This machine's routing toward `dest`.
pub fn local_facts(dest: IpAddr) -> RouteFacts {
    let (lookup, routes) = route::netlink::toward(dest);
    let lookup = lookup.map_err(|e| e.to_string());
    match routes {
        Ok(existing) => RouteFacts { dest, lookup, existing },
        Err(e) => RouteFacts {
            dest,
            lookup: Err(e.to_string()),
            existing: Vec::new(),
        },
    }
}

/// This host's advice in the scoped form, toward the path's host.
pub fn near(a: &mut Advice, args: &AdviseArgs, far_host: Option<&str>) -> Result<(), Error> {
    let dest = destination(args, a, far_host)?;
    scope::to_path(a, &local_facts(dest));
    Ok(())
}

/// The far end's advice in the scoped form: its route back toward this host, as the far end
/// sees this host (ssh's SSH_CONNECTION) and routes to it (`ip route get` there).
pub fn far(a: &mut Advice, far: &remote::FarEnd) {
    let Some(back) = &far.route_back else {
        a.notes.push(crate::advice::Note::shown(
            "--scope path: the far end did not say how it reaches this host (no SSH_CONNECTION, or no ip there): its congestion control stays host-wide",
        ));
        return;
    };
    let facts = RouteFacts {
        dest: back.dest,
        lookup: Ok(back.clone()),
        existing: Vec::new(),
    };
    scope::to_path(a, &facts);
}
