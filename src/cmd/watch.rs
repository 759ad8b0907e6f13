//! `tcptune watch`: the live flows every interval, with what holds each now
//! ([`crate::diag::watch`]), shown by [`crate::output::watch`] until Ctrl-C or `--for`, then a
//! summary. One INET_DIAG dump an interval, /proc/PID/fd walked only when new sockets appear:
//! light on the host it watches (bench/watch.sh measures it: BENCHMARKS.md).
//!
//! # Platform specific behavior
//! Linux only (sock_diag netlink); elsewhere a usage error.

use std::io::Write;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use crate::cli::WatchArgs;
use crate::cmd::Context;
use crate::diag::watch::{Running, Watch};
use crate::diag::{self, inspect};
use crate::output::watch::{Ask, Mode, View};
use crate::signals::Deferred;

/// How often the wait between intervals looks for Ctrl-C.
const POLL: Duration = Duration::from_millis(50);

pub fn run(a: &WatchArgs, ctx: &Context, out: &mut dyn Write) -> anyhow::Result<ExitCode> {
    inspect::supported()?;
    let peers = a.host.as_deref().map(super::inspect::peer_addresses).transpose()?;
    // A first dump before anything is drawn: no permission or no netlink fails here, at once.
    let mut owners = inspect::Owners::new();
    let first = inspect::readings(peers.as_deref(), a.port, &mut owners)?;
    let mode = Mode::of(ctx.report_format(), ctx.term.stdout_tty);
    let width = ctx.term.columns.unwrap_or(if ctx.term.stdout_tty { 80 } else { 100 });
    // This host's maxima, read once: the view says the fix against them, the watch sizes by them.
    let running = running(ctx);
    let mut view = View::new(mode, width, running, a.size.map(|b| b.get()));
    let host = a.host.as_deref().map(crate::text::escape);
    view.begin(
        out,
        &Ask {
            host: host.as_deref(),
            port: a.port,
            interval_s: a.interval.as_secs_f64(),
            for_s: a.for_.map(|d| d.as_secs_f64()),
        },
    )?;
    // Ctrl-C (and SIGTERM, SIGHUP) end the watch with its summary instead of killing it.
    let guard = Deferred::new();
    let start = Instant::now();
    let mut watch = Watch::new(running).with_path(a.bandwidth.map(|b| b.bps()));
    watch.step(0.0, &first);
    let end = a.for_.map(|d| start + d);
    let mut next = start + a.interval;
    loop {
        if !wait_until(end.map_or(next, |e| e.min(next))) {
            break;
        }
        next += a.interval;
        let readings = inspect::readings(peers.as_deref(), a.port, &mut owners)?;
        let tick = watch.step(start.elapsed().as_secs_f64(), &readings);
        view.tick(out, &tick)?;
        if end.is_some_and(|e| Instant::now() >= e) {
            break;
        }
    }
    // Answered by the summary: the guard must not raise it again.
    Deferred::take();
    drop(guard);
    view.end(out, &watch.summary())?;
    Ok(ExitCode::SUCCESS)
}

/// Sleep until `until`; false when a signal came first.
fn wait_until(until: Instant) -> bool {
    loop {
        if Deferred::pending().is_some() {
            return false;
        }
        let now = Instant::now();
        if now >= until {
            return true;
        }
        std::thread::sleep((until - now).min(POLL));
    }
}

/// This host's buffer maxima, as its flows autotune up to them.
fn running(ctx: &Context) -> Running {
    let max = |cap: diag::BufferCap| cap.value.as_deref().and_then(diag::verdict::last_field);
    Running {
        receive_max: max(diag::BufferCap::receive(ctx.os, ctx.backend.as_deref())),
        send_max: max(diag::BufferCap::send(ctx.os, ctx.backend.as_deref())),
    }
}
