//! `tcptune man`: the manual page, section 8, rendered from the command line's own definitions
//! ([`crate::output::man`]).

use std::io::Write;
use std::process::ExitCode;

use clap::CommandFactory as _;

use crate::cli::Cli;

pub fn run(out: &mut dyn Write) -> anyhow::Result<ExitCode> {
    out.write_all(crate::output::man::render(Cli::command()).as_bytes())?;
    Ok(ExitCode::SUCCESS)
}
