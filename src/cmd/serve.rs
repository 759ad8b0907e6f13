//! `tcptune serve`: the far end of `tcptune verify` and of `advise --host`'s path test. The
//! server is [`crate::diag::serve`]'s; this command starts it, refuses an address nothing can
//! listen on and words a failed bind in terms of the flags (one exit code per kind of bad
//! address: a usage error, exit 2, for each), and writes its lines to stderr (stdout stays
//! empty). `tcptune peer` ([`super::peer`]) starts the same server for one SSH session.

use std::io::Write as _;
use std::net::{IpAddr, SocketAddr};
use std::process::ExitCode;
use std::sync::Arc;

use crate::cli::ServeArgs;
use crate::cmd::Context;
use crate::diag::BufferCap;
use crate::diag::serve::{BindError, EndFacts, ServeRequest, Server};
use crate::error::Error;
use crate::tcp::proto;

pub fn run(a: &ServeArgs, ctx: &Context, _out: &mut dyn std::io::Write) -> anyhow::Result<ExitCode> {
    let req = ServeRequest {
        bind: a.bind,
        port: a.port,
        tests: a.once.then_some(1),
        max_buffer: a.max_buffer.get(),
    };
    check_bind(SocketAddr::new(a.bind, a.port))?;
    let server = Server::bind(&req).map_err(|e| match e {
        BindError::Listen { addr, source } => bind_error(addr, &source),
        BindError::Setup(e) => e.into(),
    })?;
    say(&format!(
        "tcptune serve: listening on {} (one test at a time, at most {} s each; buffers forced to at most {}{})",
        server.local_addr(),
        proto::MAX_DURATION_MS / 1000,
        crate::text::bytes(a.max_buffer.get()),
        if a.once { "; exits after one test" } else { "" }
    ));
    server.run(
        &|| end_facts(ctx),
        Arc::new(|line: &str| say(&format!("tcptune serve: {line}"))),
    )?;
    Ok(ExitCode::SUCCESS)
}

/// What this end tells each client about its buffers, read again for each test.
pub(crate) fn end_facts(ctx: &Context) -> EndFacts {
    EndFacts {
        receive: BufferCap::receive(ctx.os, ctx.backend.as_deref()),
        send: BufferCap::send(ctx.os, ctx.backend.as_deref()),
    }
}

/// One line on stderr. A server whose terminal went away keeps serving instead of panicking
/// the way `eprintln!` would.
pub(crate) fn say(line: &str) {
    let _ = writeln!(std::io::stderr().lock(), "{line}");
}

/// Addresses no TCP client can reach, refused before the bind: the kernel takes some of them
/// (a multicast or broadcast address binds, and no connection ever comes) and refuses others
/// with a bare "invalid argument".
pub(crate) fn check_bind(addr: SocketAddr) -> Result<(), Error> {
    let why = match addr.ip() {
        IpAddr::V6(v6) if v6.is_unicast_link_local() => Some((
            "a link-local address needs the interface it is on (its scope), and --bind takes none",
            "listen on :: (every address), or on a global or unique-local address of that interface",
        )),
        ip if ip.is_multicast() => Some((
            "a multicast address takes no TCP connections",
            "listen on one of this machine's unicast addresses, or on 0.0.0.0 or ::",
        )),
        IpAddr::V4(v4) if v4.is_broadcast() => Some((
            "the broadcast address takes no TCP connections",
            "listen on one of this machine's unicast addresses, or on 0.0.0.0",
        )),
        _ => None,
    };
    match why {
        Some((why, hint)) => Err(Error::usage(format!("cannot listen on {addr}: {why}")).with_hint(hint)),
        None => Ok(()),
    }
}

pub(crate) fn bind_error(addr: SocketAddr, e: &std::io::Error) -> anyhow::Error {
    match e.kind() {
        std::io::ErrorKind::AddrInUse => Error::usage(format!("cannot listen on {addr}: the port is in use"))
            .with_hint("another tcptune serve (or iperf) may be running; pick another with --port")
            .into(),
        std::io::ErrorKind::AddrNotAvailable => {
            Error::usage(format!("cannot listen on {addr}: no interface has that address")).into()
        }
        // EINVAL on a fresh socket: an address of a kind nothing can listen on.
        std::io::ErrorKind::InvalidInput => {
            Error::usage(format!("cannot listen on {addr}: not an address to listen on ({e})")).into()
        }
        std::io::ErrorKind::PermissionDenied => Error::not_permitted(format!(
            "cannot listen on {addr}: permission denied (ports below 1024 need root)"
        ))
        .into(),
        _ => Error::system(format!("cannot listen on {addr}: {e}")).into(),
    }
}
