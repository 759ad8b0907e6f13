//! `--scope path` for the commands that advise (advise, apply): the one host the path goes to,
//! checked before anything is measured. Each end's advice is turned into the scoped form by the
//! advice itself ([`crate::advice::scope`]), with this machine's routes read through the prober
//! and the far end's as its session said them.

use crate::cli::{AdviseArgs, Scope};
use crate::error::Error;
use crate::os::Os;

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
