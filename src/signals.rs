//! Keep Ctrl-C, SIGTERM, SIGHUP and SIGQUIT from stopping tcptune between two kernel writes.
//!
//! While a [`Deferred`] guard lives, those signals are caught and remembered instead of
//! killing the process; when it drops, the old dispositions come back and a remembered
//! signal is raised again, so it takes effect once the kernel and the snapshot agree.
//! (SIGKILL cannot be caught: the snapshot's `applying` state covers that case.)
//! A handler, not a signal mask, because a mask is per thread and a signal sent to the
//! process may be delivered to any thread.

use std::io::Read as _;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};

const SIGNALS: [libc::c_int; 4] = [libc::SIGINT, libc::SIGTERM, libc::SIGHUP, libc::SIGQUIT];

static PENDING: AtomicI32 = AtomicI32::new(0);

extern "C" fn remember(sig: libc::c_int) {
    // Only an atomic store: async-signal-safe.
    PENDING.store(sig, Ordering::SeqCst);
}

/// Signals are deferred while this lives.
#[must_use = "signals are deferred only while the guard lives"]
pub struct Deferred {
    old: [libc::sighandler_t; 4],
}

impl Deferred {
    pub fn new() -> Self {
        let mut old = [libc::SIG_DFL; 4];
        for (slot, sig) in old.iter_mut().zip(SIGNALS) {
            // SAFETY: `remember` is an extern "C" fn that only stores to an atomic, which is
            // async-signal-safe; signal(2) has no other preconditions.
            *slot = unsafe { libc::signal(sig, remember as *const () as libc::sighandler_t) };
        }
        Self { old }
    }

    /// The signal that arrived while deferred, if any, taken: the guard will not raise it
    /// again (the caller has answered it, as `watch` does by ending with its summary).
    pub fn take() -> Option<i32> {
        match PENDING.swap(0, Ordering::SeqCst) {
            0 => None,
            s => Some(s),
        }
    }

    /// The signal that arrived while deferred, if any.
    pub fn pending() -> Option<i32> {
        match PENDING.load(Ordering::SeqCst) {
            0 => None,
            s => Some(s),
        }
    }
}

impl Default for Deferred {
    fn default() -> Self {
        Self::new()
    }
}

impl Drop for Deferred {
    fn drop(&mut self) {
        for (old, sig) in self.old.iter().zip(SIGNALS) {
            // SAFETY: restores the disposition signal(2) returned for this very signal.
            unsafe { libc::signal(sig, *old) };
        }
        let sig = PENDING.swap(0, Ordering::SeqCst);
        if sig != 0 {
            eprintln!("tcptune: stopping for signal {sig} now that the change is complete");
            // SAFETY: raise(3) with a valid signal number; the old disposition applies.
            unsafe { libc::raise(sig) };
        }
    }
}

/// Ignore SIGHUP for the rest of this process (the `apply --for` timer outlives its terminal).
pub fn ignore_hangup() {
    // SAFETY: setting SIG_IGN for SIGHUP has no preconditions.
    unsafe { libc::signal(libc::SIGHUP, libc::SIG_IGN) };
}

/// A flag set once stdin reaches its end (or fails): the SSH session that started this process
/// (`tcptune peer`, `tcptune evidence`) is over. A thread reads and drops what comes meanwhile.
pub fn stdin_ended() -> Arc<AtomicBool> {
    let ended = Arc::new(AtomicBool::new(false));
    let flag = Arc::clone(&ended);
    let spawned = std::thread::Builder::new().name("stdin-watch".into()).spawn(move || {
        let mut buf = [0u8; 512];
        let mut stdin = std::io::stdin().lock();
        while matches!(stdin.read(&mut buf), Ok(n) if n > 0) {}
        flag.store(true, Ordering::SeqCst);
    });
    // Without the thread nobody would notice the session's end: end now rather than outlive it.
    if spawned.is_err() {
        ended.store(true, Ordering::SeqCst);
    }
    ended
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_signal_during_the_guard_is_held_back() {
        // Ignored underneath, so the re-raise on drop is harmless to the test binary.
        // SAFETY: setting SIG_IGN has no preconditions.
        unsafe { libc::signal(libc::SIGQUIT, libc::SIG_IGN) };
        let g = Deferred::new();
        // SAFETY: raise(3) with a valid signal number.
        unsafe { libc::raise(libc::SIGQUIT) };
        assert_eq!(Deferred::pending(), Some(libc::SIGQUIT));
        drop(g);
        assert_eq!(Deferred::pending(), None);
    }
}
