//! `tcptune completions SHELL`: a completion script generated from the clap definitions, so it
//! never lags behind the options. The packaged copies in assets/completions/ are this output,
//! kept in sync by a snapshot test.

use std::io::Write;
use std::process::ExitCode;

use clap::CommandFactory as _;

use crate::cli::{Cli, CompletionsArgs};

pub fn run(a: &CompletionsArgs, out: &mut dyn Write) -> anyhow::Result<ExitCode> {
    let mut buf = Vec::new();
    clap_complete::generate(a.shell, &mut Cli::command(), "tcptune", &mut buf);
    out.write_all(&buf)?;
    Ok(ExitCode::SUCCESS)
}
