//! `tcptune apply`: change the running kernel from a sysctl file or fresh advice, so that
//! it can always be put back.
//!
//! Order of work, and why:
//! 1. parse and check every line (nothing is read yet) — bad input exits 2;
//! 2. read every current value and check each new value against it (absent keys, shapes,
//!    congestion-control names the kernel offers, read-only keys) — still nothing written;
//!    `--dry-run` stops here;
//! 3. take the store's lock, read the values again (another apply may just have finished),
//!    and save the snapshot in state `applying`;
//! 4. write, read back (a clamped or rounded value is reported and recorded); on the first
//!    failure undo the writes already made, in reverse, and mark the snapshot `rolled-back`;
//! 5. `--persist` files; then the snapshot becomes `applied` and its id goes to stdout.
//!
//! Ctrl-C and SIGTERM are held back from 3 to 5 ([`crate::signals`]).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use serde::Serialize;

use crate::Context;
use crate::cli::{ApplyArgs, Format};
use crate::error::{Error, exit};
use crate::persist;
use crate::platform::{Access, KeyState, Os, SysctlBackend, normalize_value};
use crate::profile::{Action, Stage};
use crate::signals;
use crate::snapshot::{Change, FileChange, Identity, Snapshot, State, Store};
use crate::sysctl_file::{self, Assignment};
use crate::units::Bitrate;

/// What to apply, before any value is read.
struct Input {
    /// "file PATH", "stdin", or the advice's path.
    source: String,
    /// Prefix for messages about a line: "FILE:" or "advice:".
    origin: String,
    entries: Vec<Assignment>,
    /// Boot-time tunables (FreeBSD /boot/loader.conf), from advice only.
    boot: Vec<(String, String)>,
    from_advice: bool,
    notes: Vec<String>,
}

/// What the running system says about the input.
#[derive(Debug, Default)]
struct Plan {
    changes: Vec<Change>,
    /// Already at the wanted value (kept for `--persist`).
    unchanged: Vec<(String, String)>,
    /// Left out, and why (a `-` line whose key is absent or read-only, advice the kernel can't take).
    skipped: Vec<String>,
    /// Dry run only: changes the kernel would refuse (key, why). A real apply stops instead.
    refused: Vec<(String, String)>,
    /// Advice only: a congestion control left out because the kernel lacks it.
    skipped_cc: Option<String>,
    warnings: Vec<String>,
}

#[derive(Debug, Serialize)]
struct Report<'a> {
    snapshot: Option<&'a str>,
    state: Option<State>,
    dry_run: bool,
    changes: Vec<ReportChange<'a>>,
    unchanged: Vec<KeyValue<'a>>,
    skipped: &'a [String],
    /// Dry run: changes the kernel would refuse, and why.
    refused: Vec<KeyValue<'a>>,
    persist: Vec<&'a Path>,
    warnings: &'a [String],
    expires: Option<&'a str>,
}

#[derive(Debug, Serialize)]
struct ReportChange<'a> {
    key: &'a str,
    current: &'a str,
    new: &'a str,
    /// What the kernel stored, when it differs from `new`.
    applied: Option<&'a str>,
}

#[derive(Debug, Serialize)]
struct KeyValue<'a> {
    key: &'a str,
    value: &'a str,
}

pub fn run(a: &ApplyArgs, ctx: &Context, out: &mut dyn Write) -> anyhow::Result<ExitCode> {
    let format = ctx.report_format("apply")?;
    let backend = backend(ctx, "apply")?;
    let input = gather(a, ctx)?;
    for n in &input.notes {
        eprintln!("note: {n}");
    }
    if ctx.local && ctx.os != Os::Linux && !a.dry_run && !crate::platform::is_root() {
        return Err(
            Error::not_permitted("changing kernel settings needs root: run tcptune apply with sudo")
                .with_hint("--dry-run shows the changes without root")
                .into(),
        );
    }
    let plan = preflight(&input, ctx, backend, a.dry_run)?;
    let root = a.persist_root.clone().unwrap_or_else(|| PathBuf::from("/"));

    if a.dry_run {
        let mut plan = plan;
        if a.persist {
            let files = persist_plan(ctx.os, &root, "DRY-RUN", &input, &plan)?;
            plan.warnings.extend(persist_warnings(ctx.os, &root, &plan));
            return print_dry_run(out, format, &plan, &files);
        }
        return print_dry_run(out, format, &plan, &[]);
    }

    let store = Store::new(&ctx.state_dir);
    store.ensure()?;
    let _lock = store.lock(std::time::Duration::from_secs(a.wait), &|pid| {
        let who = pid.map_or_else(String::new, |p| format!(" (pid {p})"));
        eprintln!("waiting up to {} s for another tcptune{who} to finish...", a.wait);
    })?;
    let here = Identity::current(ctx.os);
    let target = backend.describe();
    let (snaps, bad) = store.list()?;
    for (p, why) in &bad {
        eprintln!("warning: skipping {}: {why}", p.display());
    }
    if let Some(s) = snaps
        .iter()
        .rev()
        .find(|s| s.state == State::Applying && s.same_place(ctx.os, &target, &here))
    {
        return Err(Error::not_permitted(format!(
            "snapshot {} was interrupted half-way (state applying): some of its values may be in the kernel",
            s.id
        ))
        .with_hint(format!("run `{}` first", ctx.command(&format!("revert {}", s.id))))
        .into());
    }
    // Read again under the lock: these are the values the snapshot must record.
    let mut plan = preflight(&input, ctx, backend, false)?;

    let mut snap = Snapshot::new(store.next_seq()?, ctx.os, target, here, input.source.clone());
    snap.changes.clone_from(&plan.changes);
    if a.persist {
        snap.persist = persist_plan(ctx.os, &root, &snap.id, &input, &plan)?;
        plan.warnings.extend(persist_warnings(ctx.os, &root, &plan));
    }
    if ctx.local && ctx.os == Os::Linux {
        for (name, pid) in persist::running_tuners(Path::new("/proc")) {
            plan.warnings.push(format!(
                "{name} is running (pid {pid}): it tunes these sysctls too and may change them back"
            ));
        }
    }
    for s in &plan.skipped {
        eprintln!("skipped: {s}");
    }
    if snap.changes.is_empty() && snap.persist.is_empty() {
        for w in &plan.warnings {
            eprintln!("warning: {w}");
        }
        eprintln!("nothing to change: every value is already set (no snapshot taken)");
        if format == Format::Json {
            crate::output::json(out, &report(None, &plan, &[], None))?;
        }
        return Ok(ExitCode::SUCCESS);
    }
    if let Some(d) = a.for_ {
        snap.expires = Some(humantime::format_rfc3339_millis(std::time::SystemTime::now() + d).to_string());
    }

    snap.note("applying");
    // Durable (file and directory fsynced) before the first write, or nothing is written:
    // without it no revert could put the values back.
    store.create(&snap).map_err(before_any_write)?;
    let deferred = signals::Deferred::new();
    if let Err(e) = write_all(ctx, backend, &store, &mut snap, &mut plan.warnings) {
        drop(deferred);
        return Err(e);
    }
    snap.mark(State::Applied, format!("applied {} change(s)", snap.changes.len()));
    if let Err(e) = store.save(&snap) {
        let what = format!("snapshot {} as applied", snap.id);
        let e = undo_after_failed_save(ctx, backend, &store, &mut snap, &e, &what);
        drop(deferred);
        return Err(e);
    }
    drop(deferred);

    if let Some(d) = a.for_ {
        match spawn_timer(ctx, &store, &snap) {
            Ok(pid) => {
                snap.timer_pid = Some(pid);
                snap.note(format!(
                    "timer pid {pid} reverts it after {}",
                    humantime::format_duration(d)
                ));
                if let Err(e) = store.save(&snap) {
                    // A timer the snapshot does not name could not be found or stopped by
                    // `tcptune snapshots` / `revert`: stop it and undo, as when it fails to start.
                    if let Ok(p) = i32::try_from(pid) {
                        // SAFETY: kill(2) on the child this process just started.
                        unsafe { libc::kill(p, libc::SIGKILL) };
                    }
                    let _deferred = signals::Deferred::new();
                    let what = format!("the timer (pid {pid}) in snapshot {}", snap.id);
                    return Err(undo_after_failed_save(ctx, backend, &store, &mut snap, &e, &what));
                }
            }
            Err(e) => {
                let why = format!("{e:#}");
                let opts = crate::cmd::revert::Opts {
                    force: false,
                    dry_run: false,
                    by: "apply, whose --for timer did not start",
                    persist_root: &root,
                };
                let undo = crate::cmd::revert::revert_locked(&store, snap, backend, ctx, opts);
                return Err(Error::not_permitted(format!(
                    "cannot start the timer that would revert this apply ({why}); {}",
                    match undo {
                        Ok(_) => "the changes were reverted: nothing was left changed".to_string(),
                        Err(u) => format!("reverting failed too: {u:#}"),
                    }
                ))
                .into());
            }
        }
    }

    for w in &plan.warnings {
        eprintln!("warning: {w}");
    }
    for c in &snap.changes {
        match &c.applied {
            Some(v) => eprintln!("{}: {} -> {} (asked for {})", c.key, c.prior, v, c.new),
            None => eprintln!("{}: {} -> {}", c.key, c.prior, c.new),
        }
    }
    for f in &snap.persist {
        eprintln!("persisted in {}", f.path.display());
    }
    let undo = match (&snap.expires, snap.timer_pid) {
        (Some(t), Some(pid)) => format!(
            "reverts itself at {t} (timer pid {pid}); sooner: {}",
            ctx.command(&format!("revert {}", snap.id))
        ),
        _ => format!("undo: {}", ctx.command(&format!("revert {}", snap.id))),
    };
    eprintln!(
        "applied {} change(s); snapshot {} in {} ({undo})",
        snap.changes.len(),
        snap.id,
        store.dir().display()
    );
    if format == Format::Json {
        crate::output::json(out, &report(Some(&snap), &plan, &snap.persist, snap.expires.as_deref()))?;
    } else {
        writeln!(out, "{}", snap.id)?;
    }
    Ok(ExitCode::SUCCESS)
}

/// The backend for commands that change the running system.
pub(crate) fn backend<'a>(ctx: &'a Context, command: &str) -> anyhow::Result<&'a dyn SysctlBackend> {
    ctx.backend.as_deref().ok_or_else(|| {
        Error::usage(format!(
            "{command} changes the running system, which is not {}: use --sysctl-dir DIR or --sysctl-cmd PATH to point at one",
            ctx.os
        ))
        .into()
    })
}

pub(crate) fn same(a: &str, b: &str) -> bool {
    normalize_value(a) == normalize_value(b)
}

/// The file, stdin, or fresh advice, parsed and checked.
fn gather(a: &ApplyArgs, ctx: &Context) -> anyhow::Result<Input> {
    let adv = &a.advice;
    let wants_advice = !adv.host.is_empty() || adv.rtt.is_some() || adv.bandwidth.is_some();
    match (&a.file, wants_advice) {
        (Some(_), true) => Err(Error::usage("give either FILE or --host / --rtt and --bandwidth, not both").into()),
        (None, false) => Err(Error::usage(
            "apply needs a sysctl FILE (or - for stdin), or --host HOST / --rtt DUR --bandwidth RATE for fresh advice",
        )
        .with_hint("e.g. tcptune apply --rtt 150ms --bandwidth 500mbit --dry-run")
        .into()),
        (Some(file), false) => {
            let (text, source, origin) = if file.as_os_str() == "-" {
                let t = crate::input::read_stdin(sysctl_file::MAX_FILE_BYTES)?;
                (t, "stdin".to_string(), "stdin".to_string())
            } else {
                let t = read_file(file)?;
                let shown = std::path::absolute(file).unwrap_or_else(|_| file.clone());
                (
                    t,
                    format!("file {}", crate::input::shown(&shown)),
                    crate::input::shown(file),
                )
            };
            let entries = sysctl_file::parse(&text, ctx.os).map_err(|errs| {
                let all: Vec<String> = errs
                    .iter()
                    .map(|e| {
                        if e.line == 0 {
                            format!("{origin}: {}", e.msg)
                        } else {
                            format!("{origin}:{}: {}", e.line, e.msg)
                        }
                    })
                    .collect();
                many(Error::usage, &all, "nothing was written")
            })?;
            if entries.is_empty() {
                return Err(Error::usage(format!("{origin}: no `key = value` lines: nothing to apply")).into());
            }
            Ok(Input {
                source,
                origin: format!("{origin}:"),
                entries,
                boot: Vec::new(),
                from_advice: false,
                notes: Vec::new(),
            })
        }
        (None, true) => {
            let advice = crate::cmd::advise::advise(adv, ctx, &crate::measure::SystemProber)?;
            let mut notes: Vec<String> = advice.warnings.clone();
            let mut entries = Vec::new();
            let mut boot = Vec::new();
            for s in &advice.settings {
                match (&s.action, s.stage) {
                    (_, Stage::Boot) => boot.push((s.key.clone(), s.value.clone())),
                    (Action::Set, Stage::Runtime) => {
                        sysctl_file::check_key(&s.key, ctx.os)
                            .and_then(|()| sysctl_file::check_value(&s.key, &s.value, ctx.os))
                            .map_err(|m| Error::usage(format!("advice: {m}")))?;
                        entries.push(Assignment {
                            line: 0,
                            key: s.key.clone(),
                            value: normalize_value(&s.value),
                            ignore_errors: false,
                        });
                    }
                    (Action::Keep, _) => {}
                    (Action::Unavailable(why), _) => notes.push(format!("{} = {} not applied: {why}", s.key, s.value)),
                }
            }
            let host = advice.host.as_deref().map(|h| format!(" to {h}")).unwrap_or_default();
            Ok(Input {
                source: format!(
                    "advice{host}: RTT {} ms, {} (profile {})",
                    advice.rtt_ms,
                    Bitrate::from_bps(advice.bandwidth_bps),
                    advice.profile
                ),
                origin: "advice:".into(),
                entries,
                boot,
                from_advice: true,
                notes,
            })
        }
    }
}

fn read_file(path: &Path) -> anyhow::Result<String> {
    Ok(crate::input::read_regular(
        path,
        sysctl_file::MAX_FILE_BYTES,
        "sysctl file",
    )?)
}

/// Errors shown in full; the rest are counted. A file of 60,000 bad lines once printed
/// 7 MB of errors.
const SHOWN_ERRORS: usize = 5;
/// Longest one error may be in the message, in characters.
const ERROR_CHARS: usize = 240;

/// One error naming the first problem; the next few in the hint, then how many more.
fn many(make: fn(String) -> Error, all: &[String], tail: &str) -> anyhow::Error {
    let cut = |s: &String| -> String {
        if s.chars().count() > ERROR_CHARS {
            format!("{}...", s.chars().take(ERROR_CHARS).collect::<String>())
        } else {
            s.clone()
        }
    };
    let first = all.first().map(cut).unwrap_or_default();
    let e = make(first);
    let hint = if all.len() > 1 {
        let shown: Vec<String> = all[1..].iter().take(SHOWN_ERRORS - 1).map(cut).collect();
        let rest = all.len() - 1 - shown.len();
        let more = if rest > 0 {
            format!("; and {rest} more")
        } else {
            String::new()
        };
        format!("{} more: {}{more}; {tail}", all.len() - 1, shown.join("; "))
    } else {
        tail.to_string()
    };
    e.with_hint(hint).into()
}

/// Read every current value and check every new one against the running system.
fn preflight(input: &Input, ctx: &Context, backend: &dyn SysctlBackend, dry_run: bool) -> anyhow::Result<Plan> {
    let os = ctx.os;
    let mut plan = Plan::default();
    let mut bad_input = Vec::new();
    let mut denied = Vec::new();
    let mut needs_root: Vec<String> = Vec::new();
    let at = |a: &Assignment| {
        if a.line == 0 {
            input.origin.clone()
        } else {
            format!("{}{}:", input.origin, a.line)
        }
    };
    for a in &input.entries {
        let skip_note = |why: &str| format!("{} = {} ({} starts with '-'): {why}", a.key, a.value, at(a));
        let current = match backend.read(&a.key) {
            KeyState::Present { value, access } => (value, access),
            KeyState::Absent if a.ignore_errors => {
                plan.skipped.push(skip_note("no such key here"));
                continue;
            }
            KeyState::Absent => {
                bad_input.push(format!(
                    "{} {}: no such key on this kernel (or in this network namespace)",
                    at(a),
                    a.key
                ));
                continue;
            }
            KeyState::Unreadable(why) => {
                denied.push(format!("{} cannot read {}: {why}", at(a), a.key));
                continue;
            }
        };
        let (cur, access) = current;
        if let Err(m) = sysctl_file::check_against_current(os, &a.key, &a.value, &cur)
            .and_then(|()| sysctl_file::check_restorable(&a.key, &cur))
        {
            bad_input.push(format!("{} {m}", at(a)));
            continue;
        }
        if let Some(list) = sysctl_file::congestion_control_lists(os, &a.key)
            && let Some(avail) = backend.read(list).value().map(str::to_string)
            && !sysctl_file::offers(&avail, &a.value)
        {
            let load = match os {
                Os::Linux => format!("modprobe tcp_{}", a.value),
                Os::Freebsd => format!("kldload cc_{}", a.value),
                Os::Macos => String::new(),
            };
            let msg = format!(
                "{}: {} is not offered by this kernel ({list}: {}); load it first ({load})",
                a.key,
                a.value,
                normalize_value(&avail)
            );
            if input.from_advice {
                plan.skipped.push(msg);
                plan.skipped_cc = Some(a.value.clone());
            } else {
                bad_input.push(format!("{} {msg}", at(a)));
            }
            continue;
        }
        if same(&cur, &a.value) {
            plan.unchanged.push((a.key.clone(), a.value.clone()));
            continue;
        }
        // The kernel refuses some congestion controls in a child namespace although the key
        // is writable: found here, before the snapshot, rather than by a rollback.
        let cc_refused = (ctx.local && os == Os::Linux && a.key == "net.ipv4.tcp_congestion_control")
            .then(|| crate::platform::linux::cc_refused_here(backend, &a.value))
            .flatten();
        if access == Access::NeedsRoot {
            // Not the key's fault but the caller's: a `-` line does not turn this into a
            // note, or a normal user's apply would "succeed" having changed nothing.
            if !dry_run {
                needs_root.push(a.key.clone());
                continue;
            }
            let why = format!("{}: changing it needs root (run tcptune apply with sudo)", a.key);
            plan.refused.push((a.key.clone(), why));
        } else if access == Access::ReadOnly || cc_refused.is_some() {
            let why = if let Some(why) = cc_refused {
                format!("{} = {}: {why}", a.key, a.value)
            } else if ctx.local && os == Os::Linux && crate::platform::linux::runs_in_child_netns(backend) {
                format!("{} is read-only in this network namespace; set it on the host", a.key)
            } else {
                format!("{} is read-only, even for root", a.key)
            };
            if a.ignore_errors {
                plan.skipped.push(skip_note(&why));
                continue;
            } else if !dry_run {
                denied.push(format!("{} {why}", at(a)));
                continue;
            }
            plan.refused.push((a.key.clone(), why));
        }
        plan.changes.push(Change {
            key: a.key.clone(),
            prior: cur,
            new: a.value.clone(),
            applied: None,
        });
    }
    if !bad_input.is_empty() {
        return Err(many(Error::usage, &bad_input, "nothing was written"));
    }
    if !denied.is_empty() {
        return Err(many(Error::not_permitted, &denied, "nothing was written"));
    }
    if let Some(first) = needs_root.first() {
        let more = match needs_root.len() {
            1 => String::new(),
            n => format!(" and {} more", n - 1),
        };
        return Err(Error::not_permitted(format!(
            "changing {first}{more} needs root: run tcptune apply with sudo; nothing was written"
        ))
        .with_hint("--dry-run shows the changes without root")
        .into());
    }
    Ok(plan)
}

/// The `--persist` file changes for a snapshot.
fn persist_plan(os: Os, root: &Path, id: &str, input: &Input, plan: &Plan) -> anyhow::Result<Vec<FileChange>> {
    // Persist the whole wanted state, also the keys that already had their value.
    let lines: Vec<(String, String)> = input
        .entries
        .iter()
        .filter(|a| plan.changes.iter().any(|c| c.key == a.key) || plan.unchanged.iter().any(|(k, _)| *k == a.key))
        .map(|a| (a.key.clone(), a.value.clone()))
        .collect();
    let io = |p: &Path, e: &std::io::Error| crate::snapshot::io_error(e, &format!("cannot read {}", p.display()));
    let mut files = Vec::new();
    let p = persist::sysctl_file(os, root);
    let lines = persist::missing(&p, &lines);
    if !lines.is_empty() {
        files.push(persist::append(&p, &persist::block(os, id, &lines, false)).map_err(|e| io(&p, &e))?);
    }
    // Loading a congestion-control module at boot serves only the algorithm switch left out.
    let boot: Vec<(String, String)> = input
        .boot
        .iter()
        .filter(|(k, _)| plan.skipped_cc.as_ref().is_none_or(|cc| *k != format!("cc_{cc}_load")))
        .cloned()
        .collect();
    if !boot.is_empty() {
        if os == Os::Freebsd {
            let p = persist::loader_file(root);
            let boot = persist::missing(&p, &boot);
            if boot.is_empty() {
                return Ok(files);
            }
            files.push(persist::append(&p, &persist::block(os, id, &boot, true)).map_err(|e| io(&p, &e))?);
        } else {
            eprintln!(
                "note: boot-time tunables are not persisted on {os}: {}",
                input
                    .boot
                    .iter()
                    .map(|(k, _)| k.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            );
        }
    }
    Ok(files)
}

fn persist_warnings(os: Os, root: &Path, plan: &Plan) -> Vec<String> {
    let keys: Vec<&str> = plan
        .changes
        .iter()
        .map(|c| c.key.as_str())
        .chain(plan.unchanged.iter().map(|(k, _)| k.as_str()))
        .collect();
    persist::overrides(os, root, &keys)
}

/// Steps 4 and 5: write, read back, persist; undo everything on the first failure.
fn write_all(
    ctx: &Context,
    backend: &dyn SysctlBackend,
    store: &Store,
    snap: &mut Snapshot,
    warnings: &mut Vec<String>,
) -> anyhow::Result<()> {
    for i in 0..snap.changes.len() {
        let (key, new) = (snap.changes[i].key.clone(), snap.changes[i].new.clone());
        if let Err(e) = backend.write(&key, &new) {
            let cause = write_failure(ctx.os, backend, &key, &new, &e);
            return Err(roll_back(ctx, backend, store, snap, i, Some(i), &[], cause));
        }
        match backend.read(&key).value() {
            Some(v) if same(v, &new) => {}
            Some(v) => {
                warnings.push(format!(
                    "{key}: the kernel stored {v} when asked for {new} (clamped or rounded)"
                ));
                snap.changes[i].applied = Some(normalize_value(v));
            }
            None => warnings.push(format!("{key}: could not read it back after writing")),
        }
    }
    let mut written: Vec<FileChange> = Vec::new();
    for f in snap.persist.clone() {
        if let Err(e) = write_persist(&f) {
            let cause = Error::not_permitted(format!("cannot write {}: {e:#}", f.path.display()));
            let n = snap.changes.len();
            return Err(roll_back(ctx, backend, store, snap, n, None, &written, cause));
        }
        written.push(f);
    }
    Ok(())
}

fn write_persist(f: &FileChange) -> anyhow::Result<()> {
    let now = match std::fs::read_to_string(&f.path) {
        Ok(t) => Some(t),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => return Err(e.into()),
    };
    if now != f.before {
        anyhow::bail!("it changed while tcptune was applying");
    }
    if let Some(dir) = f.path.parent()
        && !dir.exists()
    {
        use std::os::unix::fs::DirBuilderExt as _;
        std::fs::DirBuilder::new().recursive(true).mode(0o755).create(dir)?;
    }
    crate::snapshot::write_atomic(&f.path, f.after.as_bytes(), 0o644)?;
    Ok(())
}

/// The first save of the snapshot failed (a full or read-only disk, an id already taken):
/// exit 3, and say that nothing was written.
fn before_any_write(e: anyhow::Error) -> anyhow::Error {
    let hint = e
        .chain()
        .find_map(|c| c.downcast_ref::<Error>())
        .and_then(Error::hint)
        .unwrap_or("free space in the state directory (or use --state-dir DIR), then run the command again")
        .to_string();
    Error::not_permitted(format!("{e:#}; nothing was changed"))
        .with_hint(hint)
        .into()
}

/// Saving the snapshot failed after every write was made: undo them all, so that the error
/// means the same as any other apply error (nothing left changed), and exit 3 rather than
/// leave changes whose record on disk is out of date.
fn undo_after_failed_save(
    ctx: &Context,
    backend: &dyn SysctlBackend,
    store: &Store,
    snap: &mut Snapshot,
    e: &anyhow::Error,
    what: &str,
) -> anyhow::Error {
    let cause = Error::not_permitted(format!("could not record {what} ({})", e.root_cause()));
    let files = snap.persist.clone();
    let n = snap.changes.len();
    roll_back(ctx, backend, store, snap, n, None, &files, cause)
}

/// Undo the first `n` changes, the failing one at index `failing` if the kernel kept part of
/// it, and the files in `files`, in reverse; record the outcome in the snapshot; return the
/// error to report, naming the cause and what was undone.
// Eight: the revert hint needs the context; the change module of the architecture work
// will give rollback one transaction value instead.
#[allow(clippy::too_many_arguments)]
fn roll_back(
    ctx: &Context,
    backend: &dyn SysctlBackend,
    store: &Store,
    snap: &mut Snapshot,
    n: usize,
    failing: Option<usize>,
    files: &[FileChange],
    cause: Error,
) -> anyhow::Error {
    let mut failed = Vec::new();
    for f in files.iter().rev() {
        let r = match &f.before {
            Some(t) => crate::snapshot::write_atomic(&f.path, t.as_bytes(), 0o644),
            None => crate::snapshot::remove_durably(&f.path),
        };
        if let Err(e) = r {
            failed.push(format!("{}: {e}", f.path.display()));
        }
    }
    let mut partly = None;
    if let Some(i) = failing
        && let Some(c) = snap.changes.get(i)
        && backend.read(&c.key).value().is_some_and(|v| !same(v, &c.prior))
    {
        // Linux stores a vector's fields one by one: it may have kept the first ones
        // before refusing a later one.
        partly = Some(i);
    }
    for c in snap.changes[..n]
        .iter()
        .chain(partly.and_then(|i| snap.changes.get(i)))
        .rev()
    {
        let r = backend
            .write(&c.key, &c.prior)
            .map_err(|e| format!("{e:#}"))
            .and_then(|()| match backend.read(&c.key).value() {
                Some(v) if same(v, &c.prior) => Ok(()),
                Some(v) => Err(format!("{}: reads {v} after restoring {}", c.key, c.prior)),
                None => Err(format!("{}: cannot read it back", c.key)),
            });
        if let Err(e) = r {
            failed.push(e);
        }
    }
    let mut undone = match n {
        0 => "no change had been made".to_string(),
        n => format!("undid the {n} change(s) made before it"),
    };
    if let Some(c) = partly.and_then(|i| snap.changes.get(i)) {
        undone.push_str(&format!(" and restored {}, which the kernel had partly changed", c.key));
    }
    let (msg, hint) = if failed.is_empty() {
        snap.mark(State::RolledBack, format!("rolled back: {cause}"));
        (
            format!("{cause}; {undone}: nothing was left changed"),
            format!("snapshot {} records the attempt (rolled-back)", snap.id),
        )
    } else {
        snap.note(format!("rollback incomplete: {}", failed.join("; ")));
        (
            format!("{cause}; COULD NOT undo everything: {}", failed.join("; ")),
            format!(
                "fix the cause and run `{}`",
                ctx.command(&format!("revert {}", snap.id))
            ),
        )
    };
    let hint = match store.save(snap) {
        Ok(()) => hint,
        // The file still holds an earlier state: `revert` reads it and closes it.
        Err(e) if failed.is_empty() => format!(
            "snapshot {id} could not be updated ({}); once the state directory can be written, `tcptune revert {id}` closes it",
            e.root_cause(),
            id = snap.id
        ),
        Err(e) => format!("{hint} (and the snapshot could not be updated: {e:#})"),
    };
    let e = if cause.exit_code() == exit::USAGE {
        Error::usage(msg)
    } else {
        Error::not_permitted(msg)
    };
    e.with_hint(hint).into()
}

/// The error for a failed write: the backend's one line, with what tcptune knows to add.
fn write_failure(os: Os, backend: &dyn SysctlBackend, key: &str, new: &str, e: &anyhow::Error) -> Error {
    let code = e
        .chain()
        .find_map(|c| c.downcast_ref::<Error>())
        .map_or(exit::NOT_PERMITTED, Error::exit_code);
    let msg = if os == Os::Linux
        && key == "net.ipv4.tcp_congestion_control"
        && code == exit::NOT_PERMITTED
        && crate::platform::is_root()
    {
        let allowed = backend
            .read("net.ipv4.tcp_allowed_congestion_control")
            .value()
            .map_or_else(|| "?".to_string(), str::to_string);
        format!(
            "the kernel refused {key} = {new}: {}",
            crate::platform::linux::cc_not_allowed(new, &allowed)
        )
    } else {
        format!("{e:#}")
    };
    if code == exit::USAGE {
        Error::usage(msg)
    } else {
        Error::not_permitted(msg)
    }
}

fn report<'a>(
    snap: Option<&'a Snapshot>,
    plan: &'a Plan,
    files: &'a [FileChange],
    expires: Option<&'a str>,
) -> Report<'a> {
    let changes = snap.map_or(plan.changes.as_slice(), |s| s.changes.as_slice());
    Report {
        snapshot: snap.map(|s| s.id.as_str()),
        state: snap.map(|s| s.state),
        dry_run: false,
        changes: changes
            .iter()
            .map(|c| ReportChange {
                key: &c.key,
                current: &c.prior,
                new: &c.new,
                applied: c.applied.as_deref(),
            })
            .collect(),
        unchanged: plan
            .unchanged
            .iter()
            .map(|(k, v)| KeyValue { key: k, value: v })
            .collect(),
        skipped: &plan.skipped,
        refused: plan
            .refused
            .iter()
            .map(|(k, v)| KeyValue { key: k, value: v })
            .collect(),
        persist: files.iter().map(|f| f.path.as_path()).collect(),
        warnings: &plan.warnings,
        expires,
    }
}

fn print_dry_run(out: &mut dyn Write, format: Format, plan: &Plan, files: &[FileChange]) -> anyhow::Result<ExitCode> {
    if format == Format::Json {
        let mut r = report(None, plan, files, None);
        r.dry_run = true;
        crate::output::json(out, &r)?;
    } else {
        for c in &plan.changes {
            match plan.refused.iter().find(|(k, _)| *k == c.key) {
                Some((_, why)) => writeln!(
                    out,
                    "{}: {} \u{2192} {}  (would be refused: {why})",
                    c.key, c.prior, c.new
                )?,
                None => writeln!(out, "{}: {} \u{2192} {}", c.key, c.prior, c.new)?,
            }
        }
        for (k, v) in &plan.unchanged {
            writeln!(out, "{k}: {v} (no change)")?;
        }
        for f in files {
            writeln!(
                out,
                "# --persist: append {} line(s) to {}",
                f.block.lines().count(),
                f.path.display()
            )?;
        }
    }
    for s in &plan.skipped {
        eprintln!("skipped: {s}");
    }
    for w in &plan.warnings {
        eprintln!("warning: {w}");
    }
    if !plan.refused.is_empty() {
        eprintln!(
            "warning: {} change(s) would be refused, and then apply would write nothing",
            plan.refused.len()
        );
    }
    eprintln!(
        "dry run: {} change(s) shown; nothing was written, no snapshot taken",
        plan.changes.len()
    );
    Ok(ExitCode::SUCCESS)
}

/// Start the detached process that reverts `snap` when it expires: its own session
/// (setsid), so closing the terminal or ending the login shell does not take it down;
/// SIGHUP ignored; stdio to a log in the state directory.
fn spawn_timer(ctx: &Context, store: &Store, snap: &Snapshot) -> anyhow::Result<u32> {
    use std::os::unix::process::CommandExt as _;
    let exe = std::env::current_exe()?;
    let log_path = store.dir().join(format!("timer-{}.log", snap.id));
    // Never through a link or into a file with other names: this runs as root.
    let log = crate::fsutil::open_nofollow_append(&log_path, 0o644)
        .map_err(|e| anyhow::anyhow!("cannot open {}: {e}", log_path.display()))?;
    let mut cmd = std::process::Command::new(exe);
    cmd.args(&ctx.forward_args)
        .arg("revert-timer")
        .arg(&snap.id)
        .stdin(std::process::Stdio::null())
        .stdout(log.try_clone()?)
        .stderr(log)
        .current_dir("/");
    // SAFETY: the closure runs in the forked child before exec and calls only setsid(2) and
    // signal(2), both async-signal-safe; it allocates nothing and touches no shared state.
    unsafe {
        cmd.pre_exec(|| {
            if libc::setsid() == -1 {
                return Err(std::io::Error::last_os_error());
            }
            libc::signal(libc::SIGHUP, libc::SIG_IGN);
            Ok(())
        });
    }
    let mut child = cmd.spawn()?;
    // A timer that dies at once (bad arguments, a missing state dir) is no timer.
    std::thread::sleep(std::time::Duration::from_millis(100));
    if let Some(status) = child.try_wait()? {
        anyhow::bail!("it exited at once ({status}); see {}", log_path.display());
    }
    Ok(child.id())
}

#[cfg(test)]
mod tests {
    use std::cell::RefCell;
    use std::collections::BTreeMap;

    use super::*;

    /// A kernel in memory. Writing `net.x.vector` keeps the first field of the new value,
    /// then fails, as proc_dointvec does when a later field is out of range.
    struct Mock(RefCell<BTreeMap<String, String>>);

    impl SysctlBackend for Mock {
        fn os(&self) -> Os {
            Os::Linux
        }
        fn read(&self, key: &str) -> KeyState {
            self.0
                .borrow()
                .get(key)
                .map_or(KeyState::Absent, |v| KeyState::Present {
                    value: v.clone(),
                    access: Access::Writable,
                })
        }
        fn write(&self, key: &str, value: &str) -> anyhow::Result<()> {
            let mut m = self.0.borrow_mut();
            if key == "net.x.vector" && value != "1 1 1" {
                let first = value.split(' ').next().unwrap_or("");
                m.insert(key.into(), format!("{first} 1 1"));
                return Err(Error::usage(format!("cannot write {key}: the kernel rejected the value (EINVAL)")).into());
            }
            m.insert(key.into(), value.into());
            Ok(())
        }
        fn describe(&self) -> String {
            "mock".into()
        }
    }

    fn ctx(state: &Path) -> Context {
        Context::for_tests(state)
    }

    fn change(key: &str, prior: &str, new: &str) -> Change {
        Change {
            key: key.into(),
            prior: prior.into(),
            new: new.into(),
            applied: None,
        }
    }

    #[test]
    fn a_failed_write_rolls_back_the_earlier_ones_and_its_own_first_fields() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = Store::new(dir.path());
        store.ensure().expect("ensure");
        let start: BTreeMap<String, String> = [("net.x.a", "10"), ("net.x.b", "20"), ("net.x.vector", "1 1 1")]
            .iter()
            .map(|(k, v)| ((*k).to_string(), (*v).to_string()))
            .collect();
        let mock = Mock(RefCell::new(start.clone()));
        let ident = Identity {
            hostname: "h".into(),
            netns: None,
            boot_id: None,
        };
        let mut snap = Snapshot::new(1, Os::Linux, "mock".into(), ident, "test".into());
        snap.changes = vec![
            change("net.x.a", "10", "11"),
            change("net.x.b", "20", "21"),
            change("net.x.vector", "1 1 1", "9 9 0"),
        ];
        let mut warnings = Vec::new();
        let e = write_all(&ctx(dir.path()), &mock, &store, &mut snap, &mut warnings).expect_err("fails");
        let msg = e.to_string();
        assert!(msg.contains("EINVAL"), "{msg}");
        assert!(
            msg.contains(
                "undid the 2 change(s) made before it and restored net.x.vector, which the kernel had partly changed"
            ),
            "{msg}"
        );
        assert_eq!(*mock.0.borrow(), start);
        assert_eq!(snap.state, State::RolledBack);
        let e = e.downcast::<Error>().expect("tcptune error");
        assert_eq!(e.exit_code(), exit::USAGE, "a value the kernel rejects is bad input");
        assert_eq!(store.find("1").expect("saved").state, State::RolledBack);
    }
}
