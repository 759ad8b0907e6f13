//! `tcptune evidence` (hidden): the test end of `tcptune mesh`. Started there through the
//! user's ssh by the far-end script, it measures the path to the peer the mesh started on
//! another host (the probes, the packet trains, the queue watch, the path test both ways), as
//! `advise --host` measures, and prints what it measured as one JSON document
//! ([`crate::remote::evidence::Document`]): numbers and readings, never a setting. The control
//! host advises every host itself from that evidence and the host's own facts.
//!
//! It ends with the session: when its stdin ends, or after `--lifetime`, it exits at once.

use std::io::Write;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use crate::advice;
use crate::cli::EvidenceArgs;
use crate::cmd::Context;
use crate::error::Error;
use crate::remote::evidence::Document;

pub fn run(a: &EvidenceArgs, ctx: &Context, out: &mut dyn Write) -> anyhow::Result<ExitCode> {
    end_with_session(a.lifetime);
    let mut req = advice::AdviceRequest::for_hosts(vec![a.host.to_string()]);
    req.test_time = a.test_time;
    req.test.port = Some(a.test_port);
    let (_, keys) = advice::prepare(&req, ctx.os)?;
    let facts = ctx.host_facts(&keys);
    let m = advice::measure(&req, &facts, ctx.prober()).map_err(super::escape_message)?;
    let measurement = m
        .hosts
        .into_iter()
        .next()
        .map(|h| h.measurement)
        .ok_or_else(|| Error::measurement(format!("{} was not measured", a.host)))?;
    let doc = Document::new(measurement, m.evidence.unwrap_or_default());
    serde_json::to_writer_pretty(&mut *out, &doc)?;
    writeln!(out)?;
    Ok(ExitCode::SUCCESS)
}

/// Exits the process (status 4, said on stderr) once stdin ends (the session that started it
/// is over) or `lifetime` has passed: a measurement nobody waits for stops at once.
fn end_with_session(lifetime: Duration) {
    let ended = crate::signals::stdin_ended();
    let until = Instant::now() + lifetime;
    std::thread::spawn(move || {
        loop {
            std::thread::sleep(Duration::from_millis(50));
            let why = if ended.load(std::sync::atomic::Ordering::SeqCst) {
                "its stdin ended (the session is over)"
            } else if Instant::now() >= until {
                "its lifetime is over"
            } else {
                continue;
            };
            eprintln!("tcptune evidence: exiting: {why}");
            std::process::exit(i32::from(crate::error::exit::MEASUREMENT_FAILED));
        }
    });
}
