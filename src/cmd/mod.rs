//! One file per subcommand; each has `run(args, ctx, out)`.

pub mod advise;
pub mod calc;
