//! `tcptune inspect`: the established TCP flows of this network namespace as the kernel sees
//! them (INET_DIAG), with what limits each sending flow — so a user can look at a running scp or
//! rsync and see whether buffers are the problem. The flows are [`crate::diag::inspect`]'s;
//! this command resolves `--host` to the addresses they are filtered by.
//!
//! # Platform specific behavior
//! Linux only (sock_diag netlink); elsewhere a usage error.

use std::io::Write;
use std::net::IpAddr;
use std::process::ExitCode;

use crate::cli::InspectArgs;
use crate::cmd::Context;
use crate::diag::inspect::{self, Report};
use crate::error::Error;
use crate::{measure, output};

pub fn run(a: &InspectArgs, ctx: &Context, out: &mut dyn Write) -> anyhow::Result<ExitCode> {
    let format = ctx.report_format();
    // Elsewhere than Linux that error comes first, before any name lookup.
    inspect::supported()?;
    let peers = a.host.as_deref().map(peer_addresses).transpose()?;
    let flows = inspect::flows(peers.as_deref(), a.port)?;
    let report = Report {
        // As typed, but it may hold anything: shown escaped (the table says "to HOST").
        host: a.host.as_deref().map(crate::text::escape),
        flows,
    };
    output::render::report(out, format, &report, |out| {
        output::inspect::write_table(out, &report, ctx.term.stdout_tty, ctx.term.color)
    })?;
    Ok(ExitCode::SUCCESS)
}

/// Every address `host` stands for (an IP literal, or all the resolver returns): a flow to
/// any of them is a flow to the host.
pub(crate) fn peer_addresses(host: &str) -> Result<Vec<IpAddr>, Error> {
    if let Some(ip) = measure::resolve::parse_literal(host) {
        return Ok(vec![ip]);
    }
    use std::net::ToSocketAddrs as _;
    let addrs = (host, 0)
        .to_socket_addrs()
        .map_err(|e| Error::measurement(format!("cannot resolve \"{}\": {e}", crate::text::escape(host))))?
        .map(|a| a.ip())
        .collect();
    Ok(addrs)
}
