//! One file per subcommand; each has `run(args, ctx, out)`.

pub mod advise;
pub mod calc;
pub mod check;
pub mod inspect;
pub mod serve;
pub mod verify;
