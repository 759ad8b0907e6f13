//! One file per subcommand; each has `run(args, ctx, out)`. Here too: the hints that name
//! the command line's flags for errors the layers below only state as facts.

pub mod advise;
pub mod advised;
pub mod apply;
pub mod calc;
pub mod check;
pub mod completions;
pub mod context;
pub mod evidence;
pub mod inspect;
pub mod man;
pub mod mesh;
pub mod mesh_run;
pub mod peer;
pub mod profiles;
pub mod revert;
pub mod scoped;
pub mod serve;
pub mod snapshots;
pub mod store;
pub mod terminal;
pub mod verify;
pub mod watch;

use std::process::ExitCode;

pub use advised::{Advised, advice_for, advice_from_args};
pub use context::Context;
pub use terminal::Terminal;

use crate::cli::{Cli, Command};
use crate::error::Error;
use crate::text;

/// What `tcptune` alone prints: the three commands a newcomer needs, not a usage error.
pub const GUIDE: &str = "\
tcptune sizes TCP buffers so that one flow can fill a long, fast path.

  1. What does the path need? (the buffers for each class of path; step 2
     measures which class it is)
       tcptune calc --bandwidth 500mbit --rtt 150ms
  2. What should change here and at HOST, and why? (measures the path; tests
     it with TCP both ways through your own ssh login to HOST)
       tcptune advise --ssh HOST    (no login there: tcptune advise --host HOST)
  3. Keep it: save the advice where sysctl reads it at boot, read it, load it
     (its \"# save as\" line says if installed files need a later number)
       tcptune advise --ssh HOST | sudo tee /etc/sysctl.d/60-tcptune.conf
       sudo sysctl -p /etc/sysctl.d/60-tcptune.conf
     and the far end's own file: tcptune advise --ssh HOST --side far
  4. Or change the running kernel now, and put it back exactly later
       tcptune advise --ssh HOST > tcptune.conf
       sudo tcptune apply tcptune.conf
       tcptune watch      (during the transfer: what holds each flow, and why)
       sudo tcptune revert

Know the path, or nothing answers? Give it: --rtt 150ms --bandwidth 500mbit
FreeBSD, macOS: the advice goes in /etc/sysctl.conf; advise for them: --os macos
More: tcptune --help, tcptune profiles, man tcptune (or: tcptune man | man -l -)";

/// Run one parsed command line.
pub fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    let ctx = Context::from_cli(&cli)?;
    let mut out = std::io::stdout().lock();
    match &cli.command {
        None => {
            use std::io::Write as _;
            writeln!(out, "{GUIDE}")?;
            Ok(ExitCode::SUCCESS)
        }
        Some(Command::Calc(a)) => calc::run(a, &ctx, &mut out),
        Some(Command::Advise(a)) => advise::run(a, &ctx, &mut out),
        Some(Command::Apply(a)) => apply::run(a, &ctx, &mut out),
        Some(Command::Revert(a)) => revert::run(a, &ctx, &mut out),
        Some(Command::Snapshots(_)) => snapshots::run(&ctx, &mut out),
        Some(Command::RevertTimer(a)) => revert::run_timer(a, &ctx),
        Some(Command::Check(a)) => check::run(a, &ctx, &mut out),
        Some(Command::Serve(a)) => serve::run(a, &ctx, &mut out),
        Some(Command::Verify(a)) => verify::run(a, &ctx, &mut out),
        Some(Command::Peer(a)) => peer::run(a, &ctx, &mut out),
        Some(Command::Evidence(a)) => evidence::run(a, &ctx, &mut out),
        Some(Command::Mesh(a)) => mesh::run(a, &ctx, &mut out),
        Some(Command::Inspect(a)) => inspect::run(a, &ctx, &mut out),
        Some(Command::Watch(a)) => watch::run(a, &ctx, &mut out),
        Some(Command::Profiles(a)) => profiles::run(a, &ctx, &mut out),
        Some(Command::Man) => man::run(&mut out),
        Some(Command::Completions(a)) => completions::run(a, &mut out),
    }
}

/// An error whose message may repeat a `--host` as it was typed (the resolver's `cannot
/// resolve "HOST"`, worded in [`crate::measure::resolve`]), shown escaped ([`text::escape`]):
/// a host holding a newline or ESC must not forge lines or colours on the terminal. Kind and
/// hint are kept, and a message without control characters is left as it is; an error
/// carrying context is left alone (rebuilding it would drop the context).
pub fn escape_message(e: anyhow::Error) -> anyhow::Error {
    let Some(err) = e.downcast_ref::<Error>() else {
        return e;
    };
    let shown = text::escape(err.message());
    if shown == err.message() || e.chain().count() > 1 {
        return e;
    }
    let escaped = Error::new(err.kind(), shown);
    match err.hint() {
        Some(h) => escaped.with_hint(h).into(),
        None => escaped.into(),
    }
}

#[cfg(test)]
mod tests {
    use super::{Error, escape_message};
    use crate::error::Kind;
    use crate::measure::fake::FakeProber;
    use crate::measure::{PathProber, ProbeOptions, no_reply_hint, resolve::RESOLVE_HINT};

    #[test]
    fn measurement_failures_reach_the_command_line_with_their_hint_in_flags() {
        let p = FakeProber {
            rtt_ms: 10.0,
            speed_bps: None,
            capacity_bps: None,
            test: None,
            seen_ms: None,
        };
        let err = p
            .measure(&["nonexistent.invalid".to_string()], &ProbeOptions::default())
            .expect_err(".invalid fails");
        assert_eq!(err.hint(), Some(RESOLVE_HINT));
        assert_eq!(err.exit_code(), crate::error::exit::MEASUREMENT_FAILED);
        let dead = FakeProber { rtt_ms: f64::NAN, ..p };
        let err = dead
            .measure(&["198.18.0.9".to_string()], &ProbeOptions::default())
            .expect_err("unreachable");
        assert_eq!(err.hint(), Some(no_reply_hint(crate::host::euid())));
        assert!(RESOLVE_HINT.contains("--rtt") && no_reply_hint(crate::host::euid()).contains("--port"));
    }

    #[test]
    fn a_host_echoed_in_an_error_is_escaped_its_kind_and_hint_kept() {
        let p = FakeProber {
            rtt_ms: 10.0,
            speed_bps: None,
            capacity_bps: None,
            test: None,
            seen_ms: None,
        };
        let host = "a\u{1b}[31m\nkernel.x=.invalid".to_string();
        let err = p
            .measure(&[host], &ProbeOptions::default())
            .expect_err(".invalid fails");
        let e = escape_message(err.into());
        let typed = e.downcast_ref::<Error>().expect("still typed");
        assert_eq!((typed.kind(), typed.hint()), (Kind::Measurement, Some(RESOLVE_HINT)));
        assert!(
            typed
                .message()
                .starts_with("cannot resolve \"a\\u{1b}[31m\\u{a}kernel.x=.invalid\""),
            "{}",
            typed.message()
        );
        // Context is kept, and so is a message with nothing to escape.
        let with_context = anyhow::Error::from(Error::usage("a\nb")).context("reading");
        assert_eq!(format!("{:#}", escape_message(with_context)), "reading: a\nb");
        let plain = escape_message(Error::usage("plain").into());
        assert_eq!(plain.to_string(), "plain");
    }
}
