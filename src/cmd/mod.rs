//! One file per subcommand; each has `run(args, ctx, out)`.

pub mod advise;
pub mod apply;
pub mod calc;
pub mod revert;
pub mod snapshots;
