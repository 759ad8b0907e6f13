//! `tcptune advise`: turn a path (given, or measured with `--host`) into sysctl advice
//! for an OS, showing the running values beside the recommendation. The advice is
//! [`crate::advice`]'s; this command turns the arguments into a request and renders the result.

use std::io::Write;
use std::process::ExitCode;

use crate::Context;
use crate::advice::{self, Advice};
use crate::cli::{AdviseArgs, Format};
use crate::measure::PathProber;
use crate::output;

pub fn run(a: &AdviseArgs, ctx: &Context, out: &mut dyn Write) -> anyhow::Result<ExitCode> {
    let advice = advise_from_args(a, ctx, ctx.prober())?;
    let format = ctx
        .format
        .unwrap_or(if ctx.stdout_tty { Format::Table } else { Format::Sysctl });
    match format {
        Format::Json => output::json(out, &advice)?,
        Format::Sysctl => output::advice::write_sysctl(out, &advice)?,
        Format::Shell => output::advice::write_shell(out, &advice)?,
        Format::Table => output::advice::write_table(out, &advice, ctx.stdout_tty, ctx.color)?,
    }
    Ok(ExitCode::SUCCESS)
}

/// The advice for these arguments on the context's system, probed by the context's prober.
pub fn advise_from_args(a: &AdviseArgs, ctx: &Context, prober: &dyn PathProber) -> anyhow::Result<Advice> {
    advice::advise(
        &a.request(output::progress::probes(ctx.stderr_tty)),
        &ctx.system(),
        prober,
    )
}
