//! `advise --scope path --format networkd`: the host route as a systemd-networkd drop-in
//! (`[Route]`, `TCPCongestionControlAlgorithm=` from systemd 252), the form of the route that
//! survives a reboot, a link flap and a DHCP renewal where networkd manages the interface.
//! The buffer maxima stay in the sysctl file: a comment says so.

use std::io::Write;
use std::path::Path;

use crate::advice::Advice;
use crate::error::Error;
use crate::profile::Action;
use crate::route::Route;
use crate::text::comment as c;

/// How each metric a route may carry is spelt in a `[Route]` section; None: networkd has no
/// setting for it.
fn key_of(metric: &str) -> Option<&'static str> {
    Some(match metric {
        "mtu" => "MTUBytes",
        "advmss" => "TCPAdvertisedMaximumSegmentSize",
        "initcwnd" => "InitialCongestionWindow",
        "initrwnd" => "InitialAdvertisedReceiveWindow",
        "quickack" => "QuickAck",
        "fastopen_no_cookie" => "FastOpenNoCookie",
        "hoplimit" => "HopLimit",
        _ => return None,
    })
}

/// The .network file that manages the route's interface here, as networkd records it
/// (/run/systemd/netif/links/IFINDEX, `NETWORK_FILE=`); None where networkd does not manage it.
pub fn network_file(a: &Advice) -> Option<std::path::PathBuf> {
    let oif = a.route.as_ref()?.route.as_ref()?.oif?;
    let state = std::fs::read_to_string(format!("/run/systemd/netif/links/{oif}")).ok()?;
    let file = state.lines().find_map(|l| l.strip_prefix("NETWORK_FILE="))?;
    let path = std::path::PathBuf::from(file.trim());
    (path.is_absolute() && path.extension().is_some_and(|e| e == "network")).then_some(path)
}

/// The drop-in for `a`'s route; `network_file`: the .network file that manages its interface
/// here, when this machine's networkd said (None: unknown).
pub fn write(out: &mut dyn Write, a: &Advice, network_file: Option<&Path>) -> anyhow::Result<()> {
    let Some(r) = a.route.as_ref() else {
        return Err(Error::usage("--format networkd holds the host route of --scope path: add --scope path").into());
    };
    let (Some(route), Action::Set | Action::Keep) = (&r.route, &r.action) else {
        let why = match &r.action {
            Action::Unavailable(w) => w.clone(),
            _ => "the route is not known".to_string(),
        };
        return Err(Error::usage(format!("--format networkd: no route to write: {why}")).into());
    };
    super::advice::header(out, a)?;
    // Words a person pastes: quoted by the one rule.
    let q = crate::text::shell_word;
    let place = match (network_file, route.dev.as_deref()) {
        (Some(f), _) => q(&format!("{}.d/60-tcptune-route.conf", f.display())),
        (None, Some(dev)) => format!(
            "/etc/systemd/network/NAME.network.d/60-tcptune-route.conf (NAME.network: the file that manages {}; `networkctl status {}` names it)",
            q(dev),
            q(dev)
        ),
        (None, None) => "/etc/systemd/network/NAME.network.d/60-tcptune-route.conf (NAME.network: the file that manages its interface)".to_string(),
    };
    for l in [
        "#".to_string(),
        "# systemd-networkd drop-in (systemd 252 or later: TCPCongestionControlAlgorithm=).".to_string(),
        format!("# Save it as {place}"),
        "# and load it: networkctl reload. It keeps the route across reboots and link changes.".to_string(),
        "# A route `tcptune apply` adds is foreign to networkd, which removes it when it reconfigures".to_string(),
        "# the link unless networkd.conf says ManageForeignRoutes=no; this drop-in makes it networkd's.".to_string(),
        "# The buffer maxima are sysctls, host-wide: keep them with --format sysctl in /etc/sysctl.d.".to_string(),
    ] {
        for w in crate::output::advice::summary::wrap(&l, 100, "", "#   ") {
            writeln!(out, "{w}")?;
        }
    }
    writeln!(out, "# {}", c(&r.line()))?;
    section(out, route)
}

/// The `[Route]` section: every attribute networkd can say, the others named in a comment.
fn section(out: &mut dyn Write, r: &Route) -> anyhow::Result<()> {
    let mut lines = vec![
        "[Route]".to_string(),
        format!("Destination={}", crate::route::prefix(r.dst, r.dst_len)),
    ];
    lines.extend(r.gateway.map(|g| format!("Gateway={g}")));
    if r.flags & 4 != 0 {
        lines.push("GatewayOnLink=yes".to_string());
    }
    lines.extend(r.prefsrc.map(|s| format!("PreferredSource={s}")));
    if r.scope == 253 {
        lines.push("Scope=link".to_string());
    }
    lines.extend(r.priority.map(|m| format!("Metric={m}")));
    // networkd's own protocol (static): tcptune's number marks the routes `apply` adds and
    // `revert` removes, not the ones networkd keeps.
    let mut left = Vec::new();
    for (name, v) in &r.metrics {
        match key_of(name) {
            Some(k) if matches!(name.as_str(), "quickack" | "fastopen_no_cookie") => {
                lines.push(format!("{k}={}", if *v == 0 { "no" } else { "yes" }));
            }
            Some(k) => lines.push(format!("{k}={v}")),
            None => left.push(format!("{name} {v}")),
        }
    }
    if r.lock != 0 {
        left.push("the metrics' locks".to_string());
    }
    if let Some(cc) = &r.congctl {
        lines.push(format!("TCPCongestionControlAlgorithm={}", c(cc)));
    }
    if !left.is_empty() {
        writeln!(
            out,
            "# networkd has no setting for {}: keep them with the ip route line instead",
            c(&left.join(", "))
        )?;
    }
    for l in lines {
        writeln!(out, "{l}")?;
    }
    Ok(())
}
