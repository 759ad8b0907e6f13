//! One file per subcommand; each has `run(args, ctx, out)`.

pub mod advise;
pub mod apply;
pub mod calc;
pub mod check;
pub mod completions;
pub mod inspect;
pub mod man;
pub mod profiles;
pub mod revert;
pub mod serve;
pub mod snapshots;
pub mod verify;
