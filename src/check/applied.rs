//! Whether what `tcptune apply` set still runs: for each snapshot still applied here (the
//! snapshots a bare `revert` would pick from: same OS, target and network namespace), every key
//! it set against its running value and every host route it wrote against the route table.
//! Another tool, a reboot or a link change may have changed them since; the words say what
//! changed and what `apply` and `revert` would then do, by revert's own verdicts
//! ([`crate::change::revert::judge`], [`crate::change::route::judge`]).
//!
//! Pure: the command reads the store, the sysctls and the routes and passes them in.

use std::collections::BTreeSet;

use serde::Serialize;

use super::{Finding, Read};
use crate::change::verdict::Verdict;
use crate::route::Route;
use crate::snapshot::{RouteChange, Snapshot, State};
use crate::text::escape;

/// One snapshot still applied here, judged.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Applied {
    pub snapshot: String,
    pub state: State,
    /// When it was applied.
    pub created: String,
    /// Taken in this boot (false: its runtime values ended with a reboot).
    pub this_boot: bool,
    /// Every key and route it set that no newer snapshot set again still holds its value.
    pub in_force: bool,
    /// The keys and host routes judged (those a newer snapshot set again are that one's).
    pub keys: usize,
    pub routes: usize,
    /// Whether its host routes were read (only on this machine itself: with `--sysctl-dir`
    /// or `--sysctl-cmd` there is no route table of that system to read).
    pub routes_checked: bool,
    pub drifted: Vec<Drift>,
    /// What it was applied from ("file /etc/sysctl.d/60-tcptune.conf", "stdin", "advice ..."),
    /// escaped.
    pub source: String,
}

/// One key or route that no longer holds what the apply set.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum Drift {
    Key {
        key: String,
        /// The running value (null: the key is gone).
        now: Option<String>,
        /// What the apply set.
        set: String,
        /// The value before the apply, which revert puts back.
        prior: String,
        /// What a bare revert does with it.
        revert: RevertDoes,
    },
    Route {
        dest: String,
        /// The host routes there now, as `ip route` lines, or "no host route".
        now: String,
        set: String,
        revert: RevertDoes,
    },
    /// The routes could not be read.
    RouteUnread { dest: String, why: String },
}

/// What `tcptune revert` (without `--force`) does with a key or route that changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum RevertDoes {
    /// It is back at its value before the apply: revert leaves it.
    Leaves,
    /// From an earlier boot: revert writes nothing back.
    Ended,
    /// An interrupted apply: revert puts back the prior value whatever is there.
    Restores,
    /// Someone changed it: revert stops (nothing changed) unless `--force`.
    Refuses,
}

impl RevertDoes {
    fn of(v: Verdict) -> Self {
        match v {
            Verdict::Unchanged => Self::Leaves,
            Verdict::Ended => Self::Ended,
            Verdict::Conflict => Self::Refuses,
            Verdict::Restore | Verdict::RestoreInterrupted | Verdict::RestoreForced => Self::Restores,
        }
    }
}

/// The host routes to a recorded change's destination now, or why they could not be read.
pub type ReadRoutes<'a> = dyn Fn(&RouteChange) -> Result<Vec<Route>, String> + 'a;

/// Judge the snapshots still applied here, `snaps` newest first, each with whether it is of
/// this boot. A key or route a newer snapshot set again is judged with that one only.
/// `routes`: None where the route table is not this system's.
pub fn judge_all(snaps: &[(&Snapshot, bool)], read: &Read<'_>, routes: Option<&ReadRoutes<'_>>) -> Vec<Applied> {
    let mut seen_keys = BTreeSet::new();
    let mut seen_routes = BTreeSet::new();
    snaps
        .iter()
        .map(|(s, this_boot)| {
            let a = judge(s, *this_boot, read, routes, &seen_keys, &seen_routes);
            seen_keys.extend(s.changes.iter().map(|c| c.key.clone()));
            seen_routes.extend(s.routes.iter().map(|r| r.dest.clone()));
            a
        })
        .collect()
}

/// One snapshot, leaving out the keys and routes in `newer_keys` and `newer_routes`.
fn judge(
    s: &Snapshot,
    this_boot: bool,
    read: &Read<'_>,
    routes: Option<&ReadRoutes<'_>>,
    newer_keys: &BTreeSet<String>,
    newer_routes: &BTreeSet<String>,
) -> Applied {
    let mut drifted = Vec::new();
    let keys: Vec<_> = s.changes.iter().filter(|c| !newer_keys.contains(&c.key)).collect();
    for c in &keys {
        let now = read(&c.key);
        let verdict = crate::change::revert::judge(c, now.as_deref().unwrap_or(""), s.state, !this_boot, false);
        // At what it set (or at what the kernel made of it): in force.
        let held = now.is_some() && matches!(verdict, Verdict::Restore);
        if !held {
            drifted.push(Drift::Key {
                key: escape(&c.key),
                now: now.as_deref().map(escape),
                set: escape(c.in_effect()),
                prior: escape(&c.prior),
                revert: RevertDoes::of(verdict),
            });
        }
    }
    let rs: Vec<_> = s.routes.iter().filter(|r| !newer_routes.contains(&r.dest)).collect();
    if let Some(read_routes) = routes {
        for c in &rs {
            match read_routes(c) {
                Ok(now) => {
                    let verdict = crate::change::route::judge(c, &now, !this_boot, false);
                    if verdict != Verdict::Restore {
                        drifted.push(Drift::Route {
                            dest: escape(&c.dest),
                            now: crate::change::route::shown(&now),
                            set: crate::route::command("replace", c.in_effect()),
                            revert: RevertDoes::of(verdict),
                        });
                    }
                }
                Err(why) => drifted.push(Drift::RouteUnread {
                    dest: escape(&c.dest),
                    why: escape(&why),
                }),
            }
        }
    }
    Applied {
        snapshot: escape(&s.id),
        state: s.state,
        created: escape(&s.created),
        this_boot,
        in_force: drifted.is_empty() && s.state == State::Applied,
        keys: keys.len(),
        routes: rs.len(),
        routes_checked: routes.is_some(),
        drifted,
        source: escape(&s.source),
    }
}

/// The finding for one judged snapshot, `applied:ID`: ok while in force, else a warning
/// naming each change, with what to do. `again`: the options that find the same store and
/// target (`" --state-dir /x"`), for the commands in the fix.
pub fn finding(a: &Applied, again: &str) -> Finding {
    // Its number: the id's first part, which revert takes too; the message says the whole id.
    let id = format!("applied:{}", a.snapshot.split('-').next().unwrap_or_default());
    let what = set_what(a);
    let unchecked = if a.routes > 0 && !a.routes_checked {
        format!(
            "; its {} not checked (only this machine's own route table is read)",
            super::counted(a.routes as u64, "host route", "host routes")
        )
    } else {
        String::new()
    };
    if a.in_force {
        return Finding::ok(
            id,
            format!(
                "snapshot {} ({}): still in force, {what}{unchecked}",
                a.snapshot, a.created
            ),
        );
    }
    let interrupted = if a.state == State::Applying {
        " (its apply was interrupted)"
    } else {
        ""
    };
    let boot = if a.this_boot { "" } else { " before the last reboot" };
    let changes: Vec<String> = a.drifted.iter().map(drift_words).collect();
    let message = format!(
        "snapshot {} (applied {}{boot}){interrupted}: changed since apply: {}{unchecked}",
        a.snapshot,
        a.created,
        changes.join("; ")
    );
    Finding::warn(id, message, fix(a, again))
}

/// "3 keys and 1 host route it set".
fn set_what(a: &Applied) -> String {
    let keys = super::counted(a.keys as u64, "key", "keys");
    if a.routes == 0 {
        format!("the {keys} it set")
    } else {
        format!(
            "the {keys} and {} it set",
            super::counted(a.routes as u64, "host route", "host routes")
        )
    }
}

fn drift_words(d: &Drift) -> String {
    match d {
        Drift::Key { key, now, set, .. } => match now {
            Some(now) => format!("{key} now {now} (was set to {set})"),
            None => format!("{key} is gone (was set to {set})"),
        },
        Drift::Route { dest, now, .. } if now == "no host route" => format!("route {dest} gone"),
        Drift::Route { dest, now, .. } => format!("route {dest} now {now}"),
        Drift::RouteUnread { dest, why } => format!("route {dest} could not be read ({why})"),
    }
}

/// What to do: apply again, or revert, as revert would take it.
fn fix(a: &Applied, again: &str) -> String {
    let revert = format!("tcptune revert {}{again}", a.snapshot);
    let reapply = match a.source.strip_prefix("file ") {
        Some(path) => format!("tcptune apply {}{again}", crate::text::shell_word(path)),
        None => format!("tcptune apply{again} with what it applied ({})", a.source),
    };
    let does = |r: RevertDoes| {
        a.drifted.iter().any(|d| match d {
            Drift::Key { revert, .. } | Drift::Route { revert, .. } => *revert == r,
            Drift::RouteUnread { .. } => false,
        })
    };
    let mut out = vec![format!("set them again: {reapply}")];
    let force = format!("tcptune revert --force {}{again}", a.snapshot);
    if does(RevertDoes::Refuses) {
        out.push(format!(
            "or put back the values from before the apply (a bare revert refuses while they differ from what it set, and changes nothing): {force}"
        ));
    } else if does(RevertDoes::Restores) {
        out.push(format!(
            "or put back the values from before the apply (the apply was interrupted: revert restores whatever is there): {revert}"
        ));
    } else if does(RevertDoes::Ended) {
        out.push(format!(
            "or mark it reverted (revert writes none of them back: they ended with the reboot): {revert}"
        ));
    } else if does(RevertDoes::Leaves) {
        out.push(format!(
            "or mark it reverted (revert leaves them: they are back at their values from before the apply): {revert}"
        ));
    }
    out.join("; ")
}

/// The finding for a store that could not be read in whole: a file there may be a snapshot
/// still in force.
pub fn unread(why: &str) -> Finding {
    Finding::warn(
        "applied",
        format!("whether what tcptune applied is still in force is not known: {why}"),
        "tcptune snapshots lists every file there, damaged ones with why",
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::check::test_util::reader;
    use crate::os::Os;
    use crate::snapshot::{Change, Identity};

    fn snap(state: State) -> Snapshot {
        let mut s = Snapshot::new(
            7,
            Os::Linux,
            "/proc/sys".into(),
            Identity::current(Os::Linux),
            "file /etc/sysctl.d/60-tcptune.conf".into(),
        );
        s.state = state;
        s.changes = vec![
            Change {
                key: "net.ipv4.tcp_rmem".into(),
                prior: "4096 131072 6291456".into(),
                new: "4096 131072 20643840".into(),
                applied: None,
            },
            Change {
                key: "net.core.rmem_max".into(),
                prior: "212992".into(),
                new: "20643840".into(),
                applied: None,
            },
        ];
        s
    }

    #[test]
    fn in_force_while_every_key_holds_what_was_set() {
        let s = snap(State::Applied);
        let r = reader(&[
            ("net.ipv4.tcp_rmem", "4096\t131072 20643840"),
            ("net.core.rmem_max", "20643840"),
        ]);
        let a = judge_all(&[(&s, true)], &r, None);
        assert_eq!(a.len(), 1);
        assert!(a[0].in_force, "{a:?}");
        let f = finding(&a[0], "");
        assert_eq!(f.status, crate::check::Status::Ok);
        assert!(f.message.contains("still in force, the 2 keys it set"), "{}", f.message);
    }

    #[test]
    fn a_changed_key_is_named_with_what_revert_does() {
        let s = snap(State::Applied);
        // Another tool set rmem_max; tcp_rmem is back at its value before the apply.
        let r = reader(&[
            ("net.ipv4.tcp_rmem", "4096 131072 6291456"),
            ("net.core.rmem_max", "4194304"),
        ]);
        let a = &judge_all(&[(&s, true)], &r, None)[0];
        assert!(!a.in_force);
        assert_eq!(a.drifted.len(), 2);
        assert!(matches!(
            a.drifted[1],
            Drift::Key {
                revert: RevertDoes::Refuses,
                ..
            }
        ));
        assert!(matches!(
            a.drifted[0],
            Drift::Key {
                revert: RevertDoes::Leaves,
                ..
            }
        ));
        let f = finding(a, " --state-dir /s");
        assert_eq!(f.status, crate::check::Status::Warn);
        assert!(
            f.message
                .contains("net.core.rmem_max now 4194304 (was set to 20643840)"),
            "{}",
            f.message
        );
        let fix = f.fix.expect("fix");
        assert!(
            fix.contains("tcptune apply /etc/sysctl.d/60-tcptune.conf --state-dir /s"),
            "{fix}"
        );
        assert!(
            fix.contains(&format!("tcptune revert --force {} --state-dir /s", s.id)),
            "{fix}"
        );
        assert!(fix.contains("a bare revert refuses"), "{fix}");
    }

    #[test]
    fn a_newer_snapshot_owns_the_keys_it_set_again() {
        let old = snap(State::Applied);
        let mut new = snap(State::Applied);
        new.id = "newer".into();
        new.changes.truncate(1);
        new.changes[0].new = "4096 131072 33554432".into();
        let r = reader(&[
            ("net.ipv4.tcp_rmem", "4096 131072 33554432"),
            ("net.core.rmem_max", "20643840"),
        ]);
        let a = judge_all(&[(&new, true), (&old, true)], &r, None);
        assert!(a[0].in_force && a[1].in_force, "{a:?}");
        assert_eq!((a[0].keys, a[1].keys), (1, 1));
    }

    #[test]
    fn an_earlier_boot_and_foreign_text_are_said_escaped() {
        let mut s = snap(State::Applied);
        s.source = "file /tmp/x\u{1b}[2J;reboot".into();
        let r = reader(&[("net.ipv4.tcp_rmem", "1\n2"), ("net.core.rmem_max", "20643840")]);
        let a = &judge_all(&[(&s, false)], &r, None)[0];
        assert!(matches!(
            a.drifted[0],
            Drift::Key {
                revert: RevertDoes::Ended,
                ..
            }
        ));
        let f = finding(a, "");
        for t in [&f.message, f.fix.as_ref().expect("fix")] {
            assert!(!t.chars().any(char::is_control), "{t:?}");
        }
        assert!(f.message.contains("before the last reboot"), "{}", f.message);
        assert!(f.fix.expect("fix").contains("writes none of them back"));
    }

    #[test]
    fn routes_gone_or_unread_are_drift_and_unchecked_routes_are_said() {
        let mut s = snap(State::Applied);
        let route: Route = serde_json::from_value(serde_json::json!({
            "dst": "198.18.0.2", "dst_len": 32, "table": 254, "protocol": 116, "scope": 0,
            "kind": 1, "tos": 0, "congctl": "bbr"
        }))
        .expect("a route");
        s.routes = vec![RouteChange {
            dest: "198.18.0.2/32".into(),
            prior: None,
            new: route.clone(),
            applied: None,
        }];
        let r = reader(&[
            ("net.ipv4.tcp_rmem", "4096 131072 20643840"),
            ("net.core.rmem_max", "20643840"),
        ]);
        let there = |_: &RouteChange| Ok(vec![route.clone()]);
        assert!(judge_all(&[(&s, true)], &r, Some(&there))[0].in_force);
        let gone = |_: &RouteChange| Ok(Vec::new());
        let a = &judge_all(&[(&s, true)], &r, Some(&gone))[0];
        assert!(!a.in_force);
        assert!(finding(a, "").message.contains("route 198.18.0.2/32 gone"));
        let eperm = |_: &RouteChange| Err("netlink: EPERM".to_string());
        assert!(!judge_all(&[(&s, true)], &r, Some(&eperm))[0].in_force);
        let a = &judge_all(&[(&s, true)], &r, None)[0];
        assert!(a.in_force);
        assert!(finding(a, "").message.contains("its 1 host route not checked"));
    }
}
