//! One file per subcommand; each has `run(args, ctx, out)`.

pub mod advise;
pub mod calc;
pub mod completions;
pub mod man;
pub mod profiles;
