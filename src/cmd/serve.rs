//! `tcptune serve`: the receiving end of `tcptune verify`. The server is
//! [`crate::diag::serve`]'s; this command starts it, words a failed bind in terms of the
//! flags, and writes its lines to stderr (stdout stays empty).

use std::io::Write as _;
use std::net::SocketAddr;
use std::process::ExitCode;
use std::sync::Arc;

use crate::cli::ServeArgs;
use crate::cmd::Context;
use crate::diag::BufferCap;
use crate::diag::serve::{BindError, ServeRequest, Server};
use crate::error::Error;
use crate::tcp::proto;

pub fn run(a: &ServeArgs, ctx: &Context, _out: &mut dyn std::io::Write) -> anyhow::Result<ExitCode> {
    let req = ServeRequest {
        bind: a.bind,
        port: a.port,
        once: a.once,
        max_buffer: a.max_buffer.get(),
    };
    let server = Server::bind(&req).map_err(|e| match e {
        BindError::Listen { addr, source } => bind_error(addr, &source),
        BindError::Setup(e) => e.into(),
    })?;
    say(&format!(
        "tcptune serve: listening on {} (this end receives; one test at a time, at most {} s each; receive buffers forced to at most {}{})",
        server.local_addr(),
        proto::MAX_DURATION_MS / 1000,
        crate::text::bytes(a.max_buffer.get()),
        if a.once { "; exits after one test" } else { "" }
    ));
    // What this end tells each client about its receive buffer, read again for each test.
    let receiver = || BufferCap::receive(ctx.os, ctx.backend.as_deref());
    server.run(&receiver, Arc::new(|line: &str| say(&format!("tcptune serve: {line}"))))?;
    Ok(ExitCode::SUCCESS)
}

/// One line on stderr. A server whose terminal went away keeps serving instead of panicking
/// the way `eprintln!` would.
fn say(line: &str) {
    let _ = writeln!(std::io::stderr().lock(), "{line}");
}

fn bind_error(addr: SocketAddr, e: &std::io::Error) -> anyhow::Error {
    match e.kind() {
        std::io::ErrorKind::AddrInUse => Error::usage(format!("cannot listen on {addr}: the port is in use"))
            .with_hint("another tcptune serve (or iperf) may be running; pick another with --port")
            .into(),
        std::io::ErrorKind::AddrNotAvailable => {
            Error::usage(format!("cannot listen on {addr}: no interface has that address")).into()
        }
        std::io::ErrorKind::PermissionDenied => Error::not_permitted(format!(
            "cannot listen on {addr}: permission denied (ports below 1024 need root)"
        ))
        .into(),
        _ => Error::system(format!("cannot listen on {addr}: {e}")).into(),
    }
}
