//! `tcptune verify`: send to `tcptune serve` for a while and say what limited the flow.
//! The test and the verdict are [`crate::diag::verify`]'s; this command checks the arguments,
//! draws the progress spinner and renders the report.

use std::io::Write;
use std::process::ExitCode;
use std::time::Duration;

use crate::cli::{Format, VerifyArgs};
use crate::cmd::Context;
use crate::diag::verify::{self, Phase, VerifyRequest};
use crate::error::Error;
use crate::output;
use crate::tcp::proto;

pub fn run(a: &VerifyArgs, ctx: &Context, out: &mut dyn Write) -> anyhow::Result<ExitCode> {
    let format = ctx.report_format("verify")?;
    let max = Duration::from_millis(u64::from(proto::MAX_DURATION_MS));
    if a.time.as_std() > max {
        return Err(Error::usage(format!(
            "--time {}: a test lasts at most 60s",
            a.time.as_std().as_secs_f64()
        ))
        .into());
    }
    let req = VerifyRequest {
        host: a.host.clone(),
        port: a.port,
        time: a.time.as_std(),
        bandwidth: a.bandwidth,
    };
    let mut spinner = None;
    let r = verify::verify(&req, &ctx.system(), &mut |phase| match phase {
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
    match format {
        Format::Json => output::json(out, &r)?,
        _ => output::verify::write_table(out, &r)?,
    }
    Ok(ExitCode::SUCCESS)
}
