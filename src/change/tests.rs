//! Tests of the change transaction against a kernel in memory: the revert ladder, rollback,
//! and a whole revert from places it must refuse.

use std::cell::RefCell;
use std::collections::BTreeMap;

use super::revert::{Verdict, judge, revert_in};
use super::write::{roll_back, write_all};
use super::*;
use crate::error::{Error, exit};
use crate::snapshot::{Change, Identity, Snapshot, State};
use crate::sysctl::{Access, KeyState};

/// A kernel in memory. Writing `net.x.vector` keeps the first field of the new value,
/// then fails, as proc_dointvec does when a later field is out of range; `net.x.clamped`
/// stores at most 100; a key in `stuck` refuses every write.
struct Mock {
    values: RefCell<BTreeMap<String, String>>,
    stuck: Vec<&'static str>,
}

impl Mock {
    fn new(values: &[(&str, &str)]) -> Self {
        Self {
            values: RefCell::new(kv(values)),
            stuck: Vec::new(),
        }
    }
    fn get(&self, key: &str) -> String {
        self.values.borrow().get(key).cloned().unwrap_or_default()
    }
}

impl SysctlBackend for Mock {
    fn os(&self) -> Os {
        Os::Linux
    }
    fn read(&self, key: &str) -> KeyState {
        self.values
            .borrow()
            .get(key)
            .map_or(KeyState::Absent, |v| KeyState::Present {
                value: v.clone(),
                access: Access::Writable,
            })
    }
    fn write(&self, key: &str, value: &str) -> anyhow::Result<()> {
        if self.stuck.contains(&key) {
            return Err(Error::not_permitted(format!("cannot write {key}: EPERM")).into());
        }
        let mut m = self.values.borrow_mut();
        if key == "net.x.vector" && value != "1 1 1" {
            let first = value.split(' ').next().unwrap_or("");
            m.insert(key.into(), format!("{first} 1 1"));
            return Err(Error::usage(format!("cannot write {key}: the kernel rejected the value (EINVAL)")).into());
        }
        if key == "net.x.clamped" {
            let v: u64 = value.parse().unwrap_or(0);
            m.insert(key.into(), v.min(100).to_string());
            return Ok(());
        }
        m.insert(key.into(), value.into());
        Ok(())
    }
    fn describe(&self) -> String {
        "mock".into()
    }
}

fn kv(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| ((*k).to_string(), (*v).to_string()))
        .collect()
}

fn change(key: &str, prior: &str, new: &str) -> Change {
    Change {
        key: key.into(),
        prior: prior.into(),
        new: new.into(),
        applied: None,
    }
}

fn here() -> Identity {
    Identity {
        hostname: "h".into(),
        netns: Some(4_026_531_840),
        boot_id: Some("boot-1".into()),
    }
}

fn revert_hint(id: &str) -> String {
    format!("tcptune revert {id} --state-dir /s")
}

/// A store in a temporary directory, and an environment on `mock`.
struct Fixture {
    _dir: tempfile::TempDir,
    store: Store,
}

impl Fixture {
    fn new() -> Self {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = Store::new(dir.path());
        store.ensure().expect("ensure");
        Self { _dir: dir, store }
    }
    fn env<'a>(&'a self, mock: &'a Mock) -> Env<'a> {
        Env {
            os: Os::Linux,
            local: false,
            backend: mock,
            store: &self.store,
            again_args: " --state-dir /s",
        }
    }
    /// A snapshot of `changes` in `state`, taken on `mock` in `here()`, saved.
    fn snapshot(&self, seq: u64, state: State, changes: Vec<Change>) -> Snapshot {
        let mut s = Snapshot::new(seq, Os::Linux, "mock".into(), here(), "test".into());
        s.changes = changes;
        s.state = state;
        self.store.create(&s).expect("create");
        s
    }
}

fn exit_code(e: &anyhow::Error) -> u8 {
    e.downcast_ref::<Error>().map_or(0, Error::exit_code)
}

#[test]
fn the_revert_ladder_per_key() {
    use State::{Applied, Applying};
    use Verdict::*;
    // (case, now, state, other boot, --force, verdict); the change is 10 -> 20, clamped to 15
    // where `applied` says so.
    let cases: &[(&str, &str, State, bool, bool, Verdict)] = &[
        ("unchanged: already at prior", "10", Applied, false, false, Unchanged),
        ("unchanged beats --force", "10", Applied, false, true, Unchanged),
        ("unchanged beats another boot", "10", Applied, true, false, Unchanged),
        ("still in effect", "20", Applied, false, false, Restore),
        (
            "still in effect, whitespace aside",
            " 20\t",
            Applied,
            false,
            false,
            Restore,
        ),
        ("still in effect with --force", "20", Applied, false, true, Restore),
        ("another boot: values ended", "20", Applied, true, false, Ended),
        ("another boot, someone else's value", "99", Applied, true, false, Ended),
        ("another boot with --force", "20", Applied, true, true, Restore),
        (
            "left applying: whatever it holds",
            "99",
            Applying,
            false,
            false,
            RestoreInterrupted,
        ),
        ("left applying, at the new value", "20", Applying, false, false, Restore),
        (
            "conflict: changed by someone else",
            "99",
            Applied,
            false,
            false,
            Conflict,
        ),
        ("conflict with --force", "99", Applied, false, true, RestoreForced),
        (
            "another boot, changed, --force",
            "99",
            Applied,
            true,
            true,
            RestoreForced,
        ),
    ];
    for (case, now, state, other_boot, force, want) in cases {
        let c = change("net.core.rmem_max", "10", "20");
        assert_eq!(judge(&c, now, *state, *other_boot, *force), *want, "{case}");
    }
    // A clamped value is what the apply left: restoring it is no conflict.
    let mut c = change("net.core.rmem_max", "10", "20");
    c.applied = Some("15".into());
    assert_eq!(judge(&c, "15", Applied, false, false), Restore);
    assert!(Restore.writes() && RestoreForced.writes() && RestoreInterrupted.writes());
    assert!(!Unchanged.writes() && !Ended.writes() && !Conflict.writes());
}

#[test]
fn a_failed_write_rolls_back_the_earlier_ones_and_its_own_first_fields() {
    let f = Fixture::new();
    let start = [("net.x.a", "10"), ("net.x.b", "20"), ("net.x.vector", "1 1 1")];
    let mock = Mock::new(&start);
    let mut snap = Snapshot::new(1, Os::Linux, "mock".into(), here(), "test".into());
    snap.changes = vec![
        change("net.x.a", "10", "11"),
        change("net.x.b", "20", "21"),
        change("net.x.vector", "1 1 1", "9 9 0"),
    ];
    let mut warnings = Vec::new();
    let e = write_all(&f.env(&mock), &mut snap, &mut warnings, None).expect_err("fails");
    let msg = e.to_string();
    assert!(msg.contains("EINVAL"), "{msg}");
    assert!(
        msg.contains(
            "undid the 2 change(s) made before it and restored net.x.vector, which the kernel had partly changed"
        ),
        "{msg}"
    );
    assert_eq!(*mock.values.borrow(), kv(&start));
    assert_eq!(snap.state, State::RolledBack);
    assert_eq!(exit_code(&e), exit::USAGE, "a value the kernel rejects is bad input");
    assert_eq!(f.store.find("1").expect("saved").state, State::RolledBack);
}

#[test]
fn rollback_cases() {
    // (case, changes, writes already made, failing index, stuck keys, message part, exit code, state)
    type Case<'a> = (&'a str, usize, Option<usize>, &'a [&'static str], &'a str, u8, State);
    let cases: &[Case] = &[
        (
            "first write failed",
            0,
            Some(0),
            &[],
            "no change had been made: nothing was left changed",
            exit::NOT_PERMITTED,
            State::RolledBack,
        ),
        (
            "a later save failed",
            2,
            None,
            &[],
            "undid the 2 change(s) made before it: nothing was left changed",
            exit::NOT_PERMITTED,
            State::RolledBack,
        ),
        (
            "the vector kept its first field",
            2,
            Some(2),
            &[],
            "and restored net.x.vector, which the kernel had partly changed",
            exit::NOT_PERMITTED,
            State::RolledBack,
        ),
        (
            "a key cannot be restored",
            2,
            None,
            &["net.x.b"],
            "COULD NOT undo everything: cannot write net.x.b: EPERM",
            exit::NOT_PERMITTED,
            State::Applying,
        ),
    ];
    for (case, n, failing, stuck, want, code, state) in cases {
        let f = Fixture::new();
        let mut snap = Snapshot::new(1, Os::Linux, "mock".into(), here(), "test".into());
        snap.changes = vec![
            change("net.x.a", "10", "11"),
            change("net.x.b", "20", "21"),
            change("net.x.vector", "1 1 1", "9 9 0"),
        ];
        // The kernel as the writes left it: the first `n` at their new value, the failing
        // vector with its first field written.
        let mut mock = Mock::new(&[("net.x.a", "10"), ("net.x.b", "20"), ("net.x.vector", "1 1 1")]);
        for c in &snap.changes[..*n] {
            mock.values.borrow_mut().insert(c.key.clone(), c.new.clone());
        }
        if *failing == Some(2) {
            mock.values.borrow_mut().insert("net.x.vector".into(), "9 1 1".into());
        }
        mock.stuck = stuck.to_vec();
        f.store.create(&snap).expect("create");
        let cause = Error::not_permitted("the cause".to_string());
        let e = roll_back(&f.env(&mock), &mut snap, *n, *failing, 0, &[], cause);
        let msg = format!("{e:#}");
        assert!(msg.starts_with("the cause; "), "{case}: {msg}");
        assert!(msg.contains(want), "{case}: {msg}");
        assert_eq!(exit_code(&e), *code, "{case}");
        assert_eq!(snap.state, *state, "{case}");
        assert_eq!(f.store.find("1").expect("saved").state, *state, "{case}");
        let hint = e
            .downcast_ref::<Error>()
            .and_then(Error::hint)
            .unwrap_or("")
            .to_string();
        if stuck.is_empty() {
            assert_eq!(mock.get("net.x.a"), "10", "{case}");
            assert_eq!(mock.get("net.x.b"), "20", "{case}");
            assert!(hint.contains("records the attempt (rolled-back)"), "{case}: {hint}");
        } else {
            assert_eq!(mock.get("net.x.a"), "10", "{case}: the others are still undone");
            assert!(
                hint.contains(&revert_hint(&snap.id)),
                "{case}: the hint names the revert: {hint}"
            );
        }
        if failing.is_none() {
            assert_eq!(
                mock.get("net.x.vector"),
                "1 1 1",
                "{case}: an unwritten key is left alone"
            );
        }
    }
}

#[test]
fn a_clamped_write_is_recorded_as_applied() {
    let f = Fixture::new();
    let mock = Mock::new(&[("net.x.clamped", "50")]);
    let mut snap = Snapshot::new(1, Os::Linux, "mock".into(), here(), "test".into());
    snap.changes = vec![change("net.x.clamped", "50", "500")];
    let mut warnings = Vec::new();
    write_all(&f.env(&mock), &mut snap, &mut warnings, None).expect("writes");
    assert_eq!(snap.changes[0].applied.as_deref(), Some("100"));
    assert_eq!(snap.changes[0].in_effect(), "100");
    assert!(warnings[0].contains("stored 100 when asked for 500"), "{warnings:?}");
}

/// What one whole revert should do from a given place.
struct RevertCase {
    name: &'static str,
    state: State,
    /// The key's value now (prior 10, new 20).
    now: &'static str,
    here: Identity,
    target: &'static str,
    os: Os,
    force: bool,
    /// Ok(value after) or Err(exit code; message part).
    want: Result<&'static str, (u8, &'static str)>,
    warning: Option<&'static str>,
}

#[test]
fn whole_reverts_from_each_place() {
    let other_boot = Identity {
        boot_id: Some("boot-2".into()),
        ..here()
    };
    let other_netns = Identity {
        netns: Some(4_026_532_000),
        ..here()
    };
    let base = || RevertCase {
        name: "",
        state: State::Applied,
        now: "20",
        here: here(),
        target: "mock",
        os: Os::Linux,
        force: false,
        want: Ok("10"),
        warning: None,
    };
    let cases = vec![
        RevertCase {
            name: "still in effect",
            ..base()
        },
        RevertCase {
            name: "unchanged",
            now: "10",
            ..base()
        },
        RevertCase {
            name: "conflict",
            now: "99",
            want: Err((exit::NOT_PERMITTED, "1 value(s) changed since snapshot")),
            ..base()
        },
        RevertCase {
            name: "conflict, --force",
            now: "99",
            force: true,
            warning: Some("anyway (--force)"),
            ..base()
        },
        RevertCase {
            name: "left applying",
            state: State::Applying,
            now: "99",
            warning: Some("restored because the apply was interrupted"),
            ..base()
        },
        RevertCase {
            name: "other boot",
            here: other_boot.clone(),
            want: Ok("20"),
            warning: Some("the running values are left alone"),
            ..base()
        },
        RevertCase {
            name: "other boot, --force",
            here: other_boot,
            force: true,
            warning: Some("writing its prior values anyway (--force)"),
            ..base()
        },
        RevertCase {
            name: "other netns",
            here: other_netns.clone(),
            want: Err((exit::USAGE, "was taken in network namespace net:[4026531840]")),
            ..base()
        },
        RevertCase {
            name: "other netns, --force",
            here: other_netns,
            force: true,
            warning: Some("(--force)"),
            ..base()
        },
        RevertCase {
            name: "other target",
            target: "elsewhere",
            want: Err((exit::USAGE, "was taken on elsewhere, this tcptune operates on mock")),
            ..base()
        },
        RevertCase {
            name: "other target, --force",
            target: "elsewhere",
            force: true,
            warning: Some("(--force)"),
            ..base()
        },
        RevertCase {
            // Its keys are checked as that OS's first: a Linux key in a FreeBSD snapshot.
            name: "other OS, even with --force",
            os: Os::Freebsd,
            force: true,
            want: Err((
                exit::USAGE,
                "is damaged: net.core.rmem_max is outside the networking tree",
            )),
            ..base()
        },
    ];
    for c in cases {
        let f = Fixture::new();
        let mock = Mock::new(&[("net.core.rmem_max", c.now)]);
        let mut snap = f.snapshot(1, c.state, vec![change("net.core.rmem_max", "10", "20")]);
        snap.target = c.target.into();
        snap.os = c.os;
        f.store.save(&snap).expect("save");
        let opts = RevertOpts {
            force: c.force,
            dry_run: false,
            by: "test",
            persist_root: std::path::Path::new("/nonexistent"),
        };
        let r = revert_in(&f.env(&mock), snap, opts, &c.here);
        let saved = f.store.find("1").expect("saved").state;
        match (r, c.want) {
            (Ok(o), Ok(after)) => {
                assert_eq!(mock.get("net.core.rmem_max"), after, "{}", c.name);
                assert_eq!(o.state, State::Reverted, "{}", c.name);
                assert_eq!(saved, State::Reverted, "{}", c.name);
                if let Some(w) = c.warning {
                    assert!(o.warnings.iter().any(|x| x.contains(w)), "{}: {:?}", c.name, o.warnings);
                }
            }
            (Err(e), Err((code, part))) => {
                assert_eq!(exit_code(&e), code, "{}: {e:#}", c.name);
                assert!(format!("{e:#}").contains(part), "{}: {e:#}", c.name);
                assert_eq!(mock.get("net.core.rmem_max"), c.now, "{}: nothing written", c.name);
                assert_eq!(saved, c.state, "{}: the snapshot is left as it was", c.name);
                if c.name == "other netns" {
                    // The hint is the command to run there, with the options that find this store.
                    let hint = e.downcast_ref::<Error>().and_then(Error::hint).unwrap_or("");
                    assert!(hint.contains("ip netns exec NAME tcptune revert 0001-"), "{hint}");
                    assert!(hint.contains("--state-dir /s"), "{hint}");
                }
            }
            (r, want) => panic!("{}: got {:?}, want {want:?}", c.name, r.map(|o| o.state)),
        }
    }
}

#[test]
fn a_conflict_names_the_newer_snapshot_that_set_it() {
    let f = Fixture::new();
    let mock = Mock::new(&[("net.core.rmem_max", "30")]);
    let old = f.snapshot(1, State::Applied, vec![change("net.core.rmem_max", "10", "20")]);
    f.snapshot(2, State::Applied, vec![change("net.core.rmem_max", "20", "30")]);
    let opts = RevertOpts {
        force: false,
        dry_run: false,
        by: "test",
        persist_root: std::path::Path::new("/nonexistent"),
    };
    let e = revert_in(&f.env(&mock), old.clone(), opts, &here()).expect_err("conflict");
    assert!(format!("{e:#}").contains(", set by snapshot 0002-"), "{e:#}");
    assert_eq!(mock.get("net.core.rmem_max"), "30");
    // With --force the warning names it too.
    let forced = RevertOpts {
        force: true,
        dry_run: true,
        ..opts
    };
    let o = revert_in(&f.env(&mock), old, forced, &here()).expect("forced");
    assert!(
        o.warnings.iter().any(|w| w.contains("(now 30, set by snapshot 0002-")),
        "{:?}",
        o.warnings
    );
}

#[test]
fn a_damaged_snapshot_writes_nothing() {
    let f = Fixture::new();
    let mock = Mock::new(&[("net.core.rmem_max", "20")]);
    let snap = f.snapshot(
        1,
        State::Applied,
        vec![
            change("net.core.rmem_max", "10", "20"),
            change("kernel.core_pattern", "|/bin/sh", "x"),
        ],
    );
    let opts = RevertOpts {
        force: true,
        dry_run: false,
        by: "test",
        persist_root: std::path::Path::new("/nonexistent"),
    };
    let e = revert_in(&f.env(&mock), snap, opts, &here()).expect_err("refused");
    assert_eq!(exit_code(&e), exit::USAGE);
    assert!(format!("{e:#}").contains("is damaged"), "{e:#}");
    assert_eq!(mock.get("net.core.rmem_max"), "20");
}

#[test]
fn a_dry_run_revert_writes_and_records_nothing() {
    let f = Fixture::new();
    let mock = Mock::new(&[("net.core.rmem_max", "20")]);
    let snap = f.snapshot(1, State::Applied, vec![change("net.core.rmem_max", "10", "20")]);
    let opts = RevertOpts {
        force: false,
        dry_run: true,
        by: "test",
        persist_root: std::path::Path::new("/nonexistent"),
    };
    let o = revert_in(&f.env(&mock), snap, opts, &here()).expect("dry run");
    assert_eq!(o.restored.len(), 1);
    assert_eq!(o.restored[0].from, "20");
    assert_eq!(mock.get("net.core.rmem_max"), "20");
    assert_eq!(f.store.find("1").expect("saved").state, State::Applied);
}

#[test]
fn another_os_is_refused_even_with_force() {
    let f = Fixture::new();
    let mock = Mock::new(&[]);
    let mut snap = Snapshot::new(1, Os::Freebsd, "mock".into(), here(), "test".into());
    snap.changes = vec![change("net.inet.tcp.sendspace", "32768", "65536")];
    for force in [false, true] {
        let e = super::revert::check_place(&f.env(&mock), &snap, "mock", &here(), force).expect_err("refused");
        assert_eq!(exit_code(&e), exit::USAGE);
        assert!(
            format!("{e:#}").contains("is for freebsd, this tcptune operates on linux (use --os freebsd)"),
            "{e:#}"
        );
    }
}

/// `text` as the sysctl file `t.conf` in a temporary directory, read as `apply FILE` reads it.
fn input_of(text: &str) -> anyhow::Result<Input> {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("t.conf");
    std::fs::write(&file, text).expect("write");
    Input::from_file(Some(&file), Os::Linux)
}

/// `n` route lines, each to its own destination (198.18.1.1, 198.18.1.2, ...).
fn route_lines(n: usize) -> String {
    (1..=n)
        .map(|i| {
            format!(
                "# route: ip route replace 198.18.{}.{} congctl bbr\n",
                1 + i / 250,
                1 + i % 250
            )
        })
        .collect()
}

#[test]
fn a_files_route_lines_are_read_in_order_one_per_destination() {
    let input = input_of(
        "net.ipv4.tcp_rmem = 4096 131072 6291456\n\
         # route: ip route replace 198.18.0.3/32 dev br0 congctl reno\n\
         # a comment between them\n\
         # route: ip route replace 198.18.0.2 via 198.18.0.1 congctl bbr\n\
         # route: ip route replace 2001:2::3/128 congctl bbr\n\
         # route: ip route replace ::ffff:c612:2 congctl reno\n",
    );
    // An IPv4-mapped destination is refused, as before: the file is refused whole.
    let e = input.expect_err("an IPv4-mapped destination");
    assert_eq!(exit_code(&e), exit::USAGE, "{e:#}");
    assert!(format!("{e:#}").contains("t.conf:6:"), "{e:#}");

    let input = input_of(
        "net.ipv4.tcp_rmem = 4096 131072 6291456\n\
         # route: ip route replace 198.18.0.3/32 dev br0 congctl reno\n\
         # a comment between them\n\
         # route: ip route replace 198.18.0.2 via 198.18.0.1 congctl bbr\n\
         # route: ip route replace 2001:2::3/128 congctl bbr\n\
         # route: ip route replace 2001:2::2 congctl reno\n",
    )
    .expect("four destinations");
    let got: Vec<(String, &str, bool)> = input
        .routes
        .iter()
        .map(|w| (w.dest.to_string(), w.algorithm.as_str(), w.line.is_some()))
        .collect();
    assert_eq!(
        got,
        [
            ("198.18.0.3".to_string(), "reno", true),
            ("198.18.0.2".to_string(), "bbr", true),
            ("2001:2::3".to_string(), "bbr", true),
            ("2001:2::2".to_string(), "reno", true),
        ],
        "in file order, none dropped or merged"
    );
    assert_eq!(input.entries.len(), 1);
    let line = input.routes[1].line.as_ref().expect("line");
    assert_eq!(line.gateway.map(|g| g.to_string()).as_deref(), Some("198.18.0.1"));
    assert_eq!(
        input.routes[0].line.as_ref().and_then(|l| l.dev.as_deref()),
        Some("br0")
    );
    assert!(!input.is_empty());
    // A file of route lines only sets something too.
    let only = input_of(&route_lines(2)).expect("two route lines");
    assert_eq!(only.routes.len(), 2);
    assert!(only.entries.is_empty() && !only.is_empty());
}

#[test]
fn the_same_destination_twice_is_refused_naming_both_lines() {
    for (text, says) in [
        (
            "# route: ip route replace 198.18.0.2 congctl bbr\n\
             net.ipv4.tcp_rmem = 4096 131072 6291456\n\
             # route: ip route replace 198.18.0.3 congctl bbr\n\
             # route: ip route replace 198.18.0.2/32 dev br0 congctl reno\n",
            "t.conf:4: a second route line to 198.18.0.2 (the first is line 1)",
        ),
        // The same address written two ways is the same destination.
        (
            "# route: ip route replace 2001:2::2 congctl bbr\n\
             # route: ip route replace 2001:2:0:0::2/128 congctl bbr\n",
            "t.conf:2: a second route line to 2001:2::2 (the first is line 1)",
        ),
    ] {
        let e = input_of(text).expect_err(says);
        assert_eq!(exit_code(&e), exit::USAGE, "{e:#}");
        assert!(format!("{e}").contains(says), "{e}");
        let hint = e.downcast_ref::<Error>().and_then(Error::hint).unwrap_or_default();
        assert!(hint.starts_with("nothing was written"), "{hint}");
    }
    // An IPv4 and an IPv6 destination are two, whatever their addresses look like.
    let input = input_of(
        "# route: ip route replace 198.18.0.2 congctl bbr\n\
         # route: ip route replace 2001:2::c612:2 congctl bbr\n\
         # route: ip route replace 64:ff9b::c612:2 congctl bbr\n",
    )
    .expect("three destinations");
    assert_eq!(input.routes.len(), 3);
}

#[test]
fn at_most_64_route_lines_a_file() {
    assert_eq!(super::plan::MAX_ROUTE_LINES, 64);
    let input = input_of(&route_lines(64)).expect("64 lines");
    assert_eq!(input.routes.len(), 64);
    assert_eq!(input.routes[63].dest.to_string(), "198.18.1.65");
    let e = input_of(&format!("net.ipv4.tcp_rmem = 4096 131072 6291456\n{}", route_lines(65))).expect_err("65");
    assert_eq!(exit_code(&e), exit::USAGE, "{e:#}");
    assert!(format!("{e}").contains("t.conf:66: more than 64 route lines"), "{e}");
}
