//! `tcptune calc`: the BDP and throughput calculator. From any two of rate, RTT and window
//! it gives the rest; with `--loss` the Mathis et al. ceiling for one loss-limited flow.
//! The arithmetic is [`crate::calc`]'s.

use std::io::Write;

use crate::calc::{self, CalcRequest};
use crate::cli::CalcArgs;
use crate::cmd::Context;
use crate::output;

pub fn run(a: &CalcArgs, ctx: &Context, out: &mut dyn Write) -> anyhow::Result<std::process::ExitCode> {
    let format = ctx.report_format();
    let req = CalcRequest {
        bandwidth: a.bandwidth,
        rtt: a.rtt,
        window: a.window,
        loss_pct: a.loss,
        mss: a.mss,
    };
    let r = calc::compute(&req)?;
    output::render::report(out, format, &r, |out| {
        output::calc::write_table(out, &req, &r, (ctx.term.stdout_tty, ctx.term.color), ctx.term.columns)
    })?;
    Ok(std::process::ExitCode::SUCCESS)
}
