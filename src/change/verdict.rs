//! What revert does with one key or route, given its state now: restore it, leave it, or stop
//! the whole revert on a conflict. Shared by the keys ([`super::revert::judge`]) and the host
//! routes ([`super::route::judge`]).

/// What revert does with one key, given its value now: restore it, leave it, or stop the
/// whole revert on a conflict. (Named apart from advice's `decide`/`Decision`, which decide
/// what to advise.)
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Already at its prior value: nothing to write.
    Unchanged,
    /// From an earlier boot: the value tcptune set ended at the reboot; what runs now is
    /// not tcptune's to change.
    Ended,
    /// At the value the apply left: write the prior value back.
    Restore,
    /// The apply was interrupted (`applying`): restore whatever the key holds.
    RestoreInterrupted,
    /// Changed by someone else, restored anyway (`--force`).
    RestoreForced,
    /// Changed by someone else: stop the whole revert.
    Conflict,
}

impl Verdict {
    pub fn writes(self) -> bool {
        matches!(self, Self::Restore | Self::RestoreInterrupted | Self::RestoreForced)
    }
}
