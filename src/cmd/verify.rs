//! `tcptune verify`: send to `tcptune serve` for a while and say what limited the flow.
//! The test and the verdict are [`crate::diag::verify`]'s, and `--time` is limited where it is
//! parsed ([`crate::cli`]); this command resolves the host and the link speed, says what this
//! end's send buffer is, draws the progress spinner and renders the report.

use std::io::Write;
use std::net::IpAddr;
use std::process::ExitCode;

use crate::cli::VerifyArgs;
use crate::cmd::Context;
use crate::diag::BufferCap;
use crate::diag::verify::{self, Phase, VerifyRequest};
use crate::error::Error;
use crate::{advice, measure, output};

pub fn run(a: &VerifyArgs, ctx: &Context, out: &mut dyn Write) -> anyhow::Result<ExitCode> {
    let format = ctx.report_format();
    let (addr, link_speed_bps) = resolve(&a.host, a.bandwidth.is_none())?;
    let req = VerifyRequest {
        host: a.host.clone(),
        addr,
        port: a.port,
        time: a.time,
        bandwidth: a.bandwidth,
        link_speed_bps,
        assumed_rate_bps: advice::ASSUMED_RATE_BPS,
        sender: BufferCap::send(ctx.os, ctx.backend.as_deref()),
    };
    let mut spinner = None;
    let r = verify::verify(&req, &mut |phase| match phase {
        Phase::Sending { to, granted } if ctx.term.stderr_tty => {
            spinner = Some(output::progress::sending(to, granted));
        }
        Phase::Sending { .. } => {}
        Phase::Sent => {
            if let Some(p) = spinner.take() {
                p.finish_and_clear();
            }
        }
    })?;
    output::render::report(out, format, &r, |out| output::verify::write_table(out, &r))?;
    Ok(ExitCode::SUCCESS)
}

/// The address of `host`, and with `link` the speed of the link towards it (bit/s) when known.
fn resolve(host: &str, link: bool) -> Result<(IpAddr, Option<u64>), Error> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| Error::measurement(format!("cannot start a runtime: {e}")))?;
    rt.block_on(async {
        // verify takes no --rtt: the shared hint's way around a name would not work here.
        let addr = measure::resolve::resolve(host, None).await.map_err(|e| {
            if e.hint() == Some(measure::resolve::RESOLVE_HINT) {
                e.with_hint("check the name: verify tests a host where `tcptune serve` runs")
            } else {
                e
            }
        })?;
        let speed = if link {
            measure::link::link_facts(addr).await.speed_bps
        } else {
            None
        };
        Ok((addr, speed))
    })
}
