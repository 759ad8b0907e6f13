use std::process::ExitCode;

fn main() -> ExitCode {
    match tcptune::cli::Cli::try_parse_args(std::env::args_os()) {
        Ok(cli) => match tcptune::cmd::run(cli) {
            Ok(code) => code,
            Err(e) => tcptune::error::report(&e),
        },
        Err(e) => tcptune::error::report_clap(&e),
    }
}
