use std::process::ExitCode;

use clap::Parser as _;

fn main() -> ExitCode {
    match tcptune::cli::Cli::try_parse() {
        Ok(cli) => match tcptune::cmd::run(cli) {
            Ok(code) => code,
            Err(e) => tcptune::error::report(&e),
        },
        Err(e) => tcptune::error::report_clap(&e),
    }
}
