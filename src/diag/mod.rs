//! Diagnosis of TCP flows: the `verify` throughput test and the `serve` end it talks to, and
//! `inspect`'s view of live flows. The socket facts they read (the wire protocol, TCP_INFO,
//! socket options, INET_DIAG) are [`crate::tcp`]'s; host facts for `check` live in
//! [`crate::host`].
//!
//! * [`verify`]: the throughput test, this end sending; [`verdict`]: what limited the flow.
//! * [`serve`]: the receiving end of that test and of `advise`'s path test, one test at a
//!   time, every wait bounded.
//! * [`inspect`]: the live flows INET_DIAG lists, with what limits each.

pub mod inspect;
pub mod serve;
pub mod verdict;
pub mod verify;
