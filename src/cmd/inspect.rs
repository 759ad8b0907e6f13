//! `tcptune inspect`: the established TCP flows of this network namespace as the kernel sees
//! them (INET_DIAG), with what limits each sending flow — so a user can look at a running scp or
//! rsync and see whether buffers are the problem. The flows are [`crate::diag::inspect`]'s.
//!
//! # Platform specific behavior
//! Linux only (sock_diag netlink); elsewhere a usage error.

use std::io::Write;
use std::process::ExitCode;

use crate::cli::{Format, InspectArgs};
use crate::cmd::Context;
use crate::diag::inspect::{self, Report};
use crate::output;

pub fn run(a: &InspectArgs, ctx: &Context, out: &mut dyn Write) -> anyhow::Result<ExitCode> {
    let format = ctx.report_format("inspect")?;
    let flows = inspect::flows(a.host.as_deref(), a.port)?;
    let report = Report {
        host: a.host.clone(),
        flows,
    };
    match format {
        Format::Json => output::json(out, &report)?,
        _ => output::inspect::write_table(out, &report, ctx.term.stdout_tty, ctx.term.color)?,
    }
    Ok(ExitCode::SUCCESS)
}
