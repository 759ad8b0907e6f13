//! Diagnosis of TCP flows: the `verify` throughput test and the `serve` end it talks to, and
//! `inspect`'s view of live flows. The socket facts they read (the wire protocol, TCP_INFO,
//! socket options, INET_DIAG) are [`crate::tcp`]'s; host facts for `check` live in
//! [`crate::host`]. What a test needs from elsewhere (the host's address, the link speed, the
//! rate to assume) comes in the request the command built.
//!
//! * [`verify`]: the throughput test, this end sending; [`verdict`]: what limited the flow.
//! * [`serve`]: the receiving end of that test and of `advise`'s path test, one test at a
//!   time, every wait bounded.
//! * [`inspect`]: the live flows INET_DIAG lists, with what limits each; [`watch`]: what
//!   holds each of them interval by interval.

pub mod inspect;
pub mod serve;
pub mod verdict;
pub mod verify;
pub mod watch;

use crate::os::Os;
use crate::profile::Profile;
use crate::sysctl::SysctlBackend;

/// The sysctl that caps one end's buffer autotuning, and its running value: what each end of
/// a test says about itself (`verify` of its send buffer, `serve` of its receive buffer).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BufferCap {
    pub os: Os,
    /// The key, from `os`'s profile; None when the profile names none.
    pub key: Option<String>,
    /// Its running value; None without a backend (another OS) or when it cannot be read.
    pub value: Option<String>,
}

impl BufferCap {
    /// The receive buffer's cap on `os` (the profile's `buffer` fact), read from `backend`.
    pub fn receive(os: Os, backend: Option<&dyn SysctlBackend>) -> Self {
        Self::read(os, backend, "buffer")
    }

    /// The send buffer's cap on `os` (the profile's `send_buffer` fact), read from `backend`.
    pub fn send(os: Os, backend: Option<&dyn SysctlBackend>) -> Self {
        Self::read(os, backend, "send_buffer")
    }

    fn read(os: Os, backend: Option<&dyn SysctlBackend>, fact: &str) -> Self {
        let key = cap_key(os, fact);
        let value = key
            .as_deref()
            .and_then(|k| backend.and_then(|b| b.read(k).value().map(str::to_string)));
        Self { os, key, value }
    }
}

/// The key of `os`'s profile whose cap is the fact `fact`.
pub(crate) fn cap_key(os: Os, fact: &str) -> Option<String> {
    Profile::for_os(os)
        .caps
        .into_iter()
        .find(|(_, f)| f == fact)
        .map(|(k, _)| k)
}
