//! tcptune: measure a path, size TCP buffers to its bandwidth-delay product, and render
//! the advice as sysctl settings for Linux, FreeBSD or macOS.
//!
//! The modules stand in layers; a module imports only from layers below its own (and
//! from modules of its own layer that do not import it back). `tests/cli/layers.rs` holds the
//! table and fails on an import that climbs; docs/CONTRIBUTING.md draws it.
//!
//! | layer | modules | what they own |
//! |---|---|---|
//! | command line | `cmd`, `cli` | one thin file per subcommand: parse, gather, call the domain, render |
//! | rendering | `output`, `fleet` | tables, JSON, sysctl files, playbooks, profiles, pods |
//! | domain | `advice`, `change`, `calc`, `check` | decisions over values the caller gathered |
//! | evidence | `measure`, `diag`, `remote`, `persist`, `snapshot`, `profile` | probes, tests, the far end over SSH, state and rules on disk |
//! | TCP and the host | `tcp`, `host`, `route`, `sysctl`, `fsutil`, `input`, `signals` | sockets, this machine, its routes, the sysctl store |
//! | model | `units`, `text`, `bdp`, `ceilings`, `expr`, `os`, `error` | pure: no I/O |
//!
//! The domain never prints and takes no clap type.

pub mod advice;
pub mod bdp;
pub mod calc;
pub mod ceilings;
pub mod change;
pub mod check;
pub mod cli;
pub mod cmd;
pub mod diag;
pub mod error;
pub mod expr;
pub mod fleet;
pub mod fsutil;
pub mod host;
pub mod input;
pub mod measure;
pub mod os;
pub mod output;
pub mod persist;
pub mod profile;
pub mod remote;
pub mod route;
pub mod signals;
pub mod snapshot;
pub mod sysctl;
pub mod tcp;
pub mod text;
pub mod units;
