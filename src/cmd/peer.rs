//! `tcptune peer` (hidden): the far end of an SSH-started path test. `advise --ssh` starts it
//! on the far host and reads its one line; it is [`crate::diag::serve`]'s server for that one
//! session: a free port, a bounded number of tests, and an end whichever comes first of its
//! stdin's end (the SSH session is over), its last test, or its lifetime. Nothing is written
//! to disk; serve's lines go to stderr, stdout carries only the line below.
//!
//! ```text
//! {"tcptune_peer":1,"version":"0.1.0","protocol":3,"port":40123}
//! ```
//! `tcptune_peer` is this line's own format (1), `version` the build's, `protocol` the newest
//! wire protocol it serves ([`crate::tcp::proto::VERSION`]), `port` where it listens.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use serde::Serialize;

use super::serve::{bind_error, check_bind, end_facts, say};
use crate::cli::PeerArgs;
use crate::cmd::Context;
use crate::diag::serve::{BindError, ServeRequest, Server};
use crate::tcp::proto;

/// The longest a peer lives by default: two tests of the longest a serve grants (60 s), each
/// with its slacks — the connect (at most 3 s), the answer and data port (5 s), the data still
/// arriving after the granted time (5 s) and the result (5 s) — 156 s, and 24 s for the SSH
/// session to start and advise's probes to run before the first test: 3 minutes.
pub const DEFAULT_LIFETIME: Duration = Duration::from_secs(180);

/// The line a peer prints once it listens.
#[derive(Debug, Serialize)]
struct Listening {
    /// The format of this line.
    tcptune_peer: u32,
    version: &'static str,
    protocol: u16,
    port: u16,
}

pub fn run(a: &PeerArgs, ctx: &Context, out: &mut dyn std::io::Write) -> anyhow::Result<ExitCode> {
    let server = bind(a)?;
    let line = serde_json::to_string(&Listening {
        tcptune_peer: 1,
        version: env!("CARGO_PKG_VERSION"),
        protocol: proto::VERSION,
        port: server.local_addr().port(),
    })?;
    writeln!(out, "{line}")?;
    // The far end's reader waits for this line: it must not sit in a buffer.
    out.flush()?;
    say(&format!(
        "tcptune peer: listening on {} for at most {} test{} within {} s; exits when stdin ends",
        server.local_addr(),
        a.tests,
        if a.tests == 1 { "" } else { "s" },
        a.lifetime.as_secs()
    ));
    let ended = crate::signals::stdin_ended();
    let until = Instant::now() + a.lifetime;
    let stop = || {
        let why = if ended.load(Ordering::SeqCst) {
            "its stdin ended (the session is over)"
        } else if Instant::now() >= until {
            "its lifetime is over"
        } else {
            return false;
        };
        say(&format!("tcptune peer: exiting: {why}"));
        true
    };
    server.run_until(
        &|| end_facts(ctx),
        Arc::new(|line: &str| say(&format!("tcptune peer: {line}"))),
        &stop,
    )?;
    Ok(ExitCode::SUCCESS)
}

/// The listener on `--bind`, or on `::` (IPv6 and IPv4) falling back to 0.0.0.0 where this
/// host has no IPv6; always a free port.
fn bind(a: &PeerArgs) -> anyhow::Result<Server> {
    let req = |bind| ServeRequest {
        bind,
        port: 0,
        tests: Some(a.tests),
        max_buffer: a.max_buffer.get(),
    };
    let words = |e| match e {
        BindError::Listen { addr, source } => bind_error(addr, &source),
        BindError::Setup(e) => e.into(),
    };
    // The addresses the near end may connect to, in its order: the first that binds.
    let mut failed = None;
    for ip in &a.bind {
        check_bind(SocketAddr::new(*ip, 0))?;
        match Server::bind(&req(*ip)) {
            Ok(s) => return Ok(s),
            Err(e) => failed = Some(e),
        }
    }
    if let Some(e) = failed {
        return Err(words(e));
    }
    Server::bind(&req(IpAddr::V6(Ipv6Addr::UNSPECIFIED)))
        .or_else(|_| Server::bind(&req(IpAddr::V4(Ipv4Addr::UNSPECIFIED))))
        .map_err(words)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_lifetime_holds_two_of_the_longest_tests() {
        let one = Duration::from_millis(u64::from(proto::MAX_DURATION_MS))
            + Duration::from_secs(3)
            + proto::ANSWER_SLACK
            + proto::ARRIVAL_GRACE
            + proto::RESULT_SLACK;
        assert!(DEFAULT_LIFETIME >= 2 * one, "{DEFAULT_LIFETIME:?} < 2 × {one:?}");
    }

    #[test]
    fn the_line_is_one_json_object_in_its_order() {
        let l = Listening {
            tcptune_peer: 1,
            version: "0.1.0",
            protocol: 3,
            port: 40123,
        };
        assert_eq!(
            serde_json::to_string(&l).expect("json"),
            r#"{"tcptune_peer":1,"version":"0.1.0","protocol":3,"port":40123}"#
        );
    }
}
