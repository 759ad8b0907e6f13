//! What to apply and what the running system says about it, before anything is written:
//! the input (a sysctl file, stdin, or advice settings) parsed and checked, the preflight
//! that reads every current value and refuses what the kernel would refuse, and the
//! `--persist` file changes.

use std::path::Path;

use super::Env;
use super::route::RouteWant;
use crate::error::Error;
use crate::os::Os;
use crate::persist;
use crate::profile::{Action, Setting, Stage};
use crate::snapshot::{Change, FileChange, RouteChange};
use crate::sysctl::{self, file::Assignment};
use crate::sysctl::{Access, KeyState, normalize_value, same_value};

/// What to apply, before any value is read.
#[derive(Debug)]
pub struct Input {
    /// "file PATH", "stdin", or the advice's path.
    pub source: String,
    /// Prefix for messages about a line: "FILE:" or "advice:".
    pub origin: String,
    pub entries: Vec<Assignment>,
    /// Boot-time tunables (FreeBSD /boot/loader.conf), from advice only.
    pub boot: Vec<(String, String)>,
    pub from_advice: bool,
    /// For the user, before anything else happens (advice warnings, settings left out).
    pub notes: Vec<String>,
    /// `--scope path`, or a file's route lines: the host routes to set, one per destination.
    pub routes: Vec<RouteWant>,
}

impl Input {
    /// A sysctl file (`None`: stdin), read bounded and parsed; every bad line is an error.
    pub fn from_file(file: Option<&Path>, os: Os) -> anyhow::Result<Self> {
        let (text, source, origin) = match file {
            None => {
                let t = crate::input::read_stdin(sysctl::file::MAX_FILE_BYTES)?;
                (t, "stdin".to_string(), "stdin".to_string())
            }
            Some(file) => {
                let t = crate::input::read_regular(file, sysctl::file::MAX_FILE_BYTES, "sysctl file")?;
                let shown = std::path::absolute(file).unwrap_or_else(|_| file.to_path_buf());
                (
                    t,
                    format!("file {}", crate::input::shown(&shown)),
                    crate::input::shown(file),
                )
            }
        };
        let entries = sysctl::file::parse(&text, os).map_err(|errs| {
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
        let routes = route_lines(&text, &origin)?;
        // A file that sets nothing (the advice, when every key already has its value, prints
        // each line commented out) is nothing to change, as for `sysctl -p`: apply says so
        // and succeeds, so the documented pipeline can run twice.
        Ok(Self {
            source,
            origin: format!("{origin}:"),
            entries,
            boot: Vec::new(),
            from_advice: false,
            notes: Vec::new(),
            routes,
        })
    }

    /// Why an input with no assignment sets nothing: a file of comments, or advice that
    /// found every value in place.
    pub fn nothing_set(&self) -> String {
        if self.from_advice {
            "the advice sets no value that differs from the running one".to_string()
        } else {
            format!(
                "{} sets no key (every line is a comment or blank)",
                self.origin.trim_end_matches(':')
            )
        }
    }

    /// Advice's settings: the runtime ones to set, checked as a file's lines would be; the
    /// boot-time ones kept for `--persist`; those the kernel cannot take become notes.
    /// `source` describes the advice for the snapshot; `notes` are the advice's warnings.
    pub fn from_settings(settings: &[Setting], os: Os, source: String, mut notes: Vec<String>) -> anyhow::Result<Self> {
        let mut entries = Vec::new();
        let mut boot = Vec::new();
        for s in settings {
            match (&s.action, s.stage) {
                (_, Stage::Boot) => boot.push((s.key.clone(), s.value.clone())),
                (Action::Set, Stage::Runtime) => {
                    sysctl::file::check_key(&s.key, os)
                        .and_then(|()| sysctl::file::check_value(&s.key, &s.value, os))
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
        Ok(Self {
            source,
            origin: "advice:".into(),
            entries,
            boot,
            from_advice: true,
            notes,
            routes: Vec::new(),
        })
    }

    /// Whether the input sets nothing: no key, no boot tunable, no route.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty() && self.boot.is_empty() && self.routes.is_empty()
    }
}

/// Most route lines one file may carry (`tcptune mesh` writes one per destination whose
/// congestion control differs from the host-wide one).
pub const MAX_ROUTE_LINES: usize = 64;

/// The route lines of a sysctl file (`# route: ip route replace DEST ... congctl ALGO`, as
/// `advise --scope path` and `mesh` write them): one per destination, at most
/// [`MAX_ROUTE_LINES`]; a line tcptune cannot take is an error, and so is a destination twice.
fn route_lines(text: &str, origin: &str) -> anyhow::Result<Vec<RouteWant>> {
    let mut found: Vec<(usize, RouteWant)> = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let Some(parsed) = crate::route::parse_route_line(line.trim_end()) else {
            continue;
        };
        let line = parsed.map_err(|m| {
            Error::usage(format!("{origin}:{}: {m}", i + 1))
                .with_hint("nothing was written; advise --scope path --format sysctl writes the line")
        })?;
        if let Some((first, _)) = found.iter().find(|(_, w)| w.dest == line.dest) {
            return Err(Error::usage(format!(
                "{origin}:{}: a second route line to {} (the first is line {first}): one line per destination",
                i + 1,
                line.dest
            ))
            .with_hint("nothing was written")
            .into());
        }
        if found.len() == MAX_ROUTE_LINES {
            return Err(
                Error::usage(format!("{origin}:{}: more than {MAX_ROUTE_LINES} route lines", i + 1))
                    .with_hint("nothing was written")
                    .into(),
            );
        }
        found.push((
            i + 1,
            RouteWant {
                dest: line.dest,
                algorithm: line.algorithm.clone(),
                line: Some(line),
            },
        ));
    }
    Ok(found.into_iter().map(|(_, w)| w).collect())
}

/// What the running system says about the input.
#[derive(Debug, Default)]
pub struct Plan {
    pub changes: Vec<Change>,
    /// Already at the wanted value (kept for `--persist`).
    pub unchanged: Vec<(String, String)>,
    /// Left out, and why (a `-` line whose key is absent or read-only, advice the kernel can't take).
    pub skipped: Vec<String>,
    /// Dry run only: changes the kernel would refuse (key, why). A real apply stops instead.
    pub refused: Vec<(String, String)>,
    /// Advice only: a congestion control left out because the kernel lacks it.
    pub skipped_cc: Option<String>,
    pub warnings: Vec<String>,
    /// For the user, not a problem (boot-time tunables this OS does not persist).
    pub notes: Vec<String>,
    /// The host routes to write (`--scope path`, or a file's route lines in file order),
    /// after the sysctls.
    pub routes: Vec<RouteChange>,
    /// A host route already as wanted: its destination.
    pub routes_unchanged: Vec<String>,
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
pub fn preflight(env: &Env, input: &Input, dry_run: bool) -> anyhow::Result<Plan> {
    let mut plan = Plan::default();
    let mut refusals = Refusals::default();
    for a in &input.entries {
        match assess(env, input, a, dry_run) {
            Assessed::Skipped(note) => plan.skipped.push(note),
            Assessed::CcNotOffered(note) => {
                plan.skipped.push(note);
                plan.skipped_cc = Some(a.value.clone());
            }
            Assessed::BadInput(m) => refusals.bad_input.push(m),
            Assessed::Denied(m) => refusals.denied.push(m),
            Assessed::NeedsRoot => refusals.needs_root.push(a.key.clone()),
            Assessed::Unchanged => plan.unchanged.push((a.key.clone(), a.value.clone())),
            Assessed::Change { prior, refused } => {
                if let Some(why) = refused {
                    plan.refused.push((a.key.clone(), why));
                }
                plan.changes.push(Change {
                    key: a.key.clone(),
                    prior,
                    new: a.value.clone(),
                    applied: None,
                });
            }
        }
    }
    refusals.check()?;
    for want in &input.routes {
        match super::route::preflight(env, want, dry_run)? {
            Some(c) => plan.routes.push(c),
            None => plan.routes_unchanged.push(format!(
                "{} (its host route has congctl {} already)",
                want.dest,
                crate::text::escape(&want.algorithm)
            )),
        }
    }
    Ok(plan)
}

/// What the preflight makes of one line of the input.
enum Assessed {
    /// Left out, with a note: a `-` line whose key is absent or read-only.
    Skipped(String),
    /// Advice's congestion control, which this kernel does not offer: left out, with a note.
    CcNotOffered(String),
    /// The line is wrong for this system (exit 2).
    BadInput(String),
    /// The kernel would refuse it, even to root (exit 3).
    Denied(String),
    /// Only root may change it, and this is a real apply (exit 3).
    NeedsRoot,
    /// Already at the wanted value.
    Unchanged,
    /// To change from `prior`; in a dry run, `refused` says why the kernel would not take it.
    Change { prior: String, refused: Option<String> },
}

/// Everything that stops an apply, gathered over the whole input so that one error names
/// them all.
#[derive(Default)]
struct Refusals {
    bad_input: Vec<String>,
    denied: Vec<String>,
    needs_root: Vec<String>,
}

impl Refusals {
    /// The error for the first kind present: bad input, then what the kernel denies, then
    /// what needs root.
    fn check(self) -> anyhow::Result<()> {
        if !self.bad_input.is_empty() {
            return Err(many(Error::usage, &self.bad_input, "nothing was written"));
        }
        if !self.denied.is_empty() {
            return Err(many(Error::not_permitted, &self.denied, "nothing was written"));
        }
        if let Some(first) = self.needs_root.first() {
            let more = match self.needs_root.len() {
                1 => String::new(),
                n => format!(" and {} more", n - 1),
            };
            return Err(Error::not_permitted(format!(
                "changing {first}{more} needs root: run tcptune apply with sudo; nothing was written"
            ))
            .with_hint("--dry-run shows the changes without root")
            .into());
        }
        Ok(())
    }
}

impl Input {
    /// Where line `a` came from, for messages: "FILE:LINE:", or the origin alone.
    fn at(&self, a: &Assignment) -> String {
        if a.line == 0 {
            self.origin.clone()
        } else {
            format!("{}{}:", self.origin, a.line)
        }
    }

    /// The note for a `-` line left out, and why.
    fn skip_note(&self, a: &Assignment, why: &str) -> String {
        format!("{} = {} ({} starts with '-'): {why}", a.key, a.value, self.at(a))
    }
}

/// One line against the running system: its key read, its value checked against the current
/// one and what the kernel offers, then whether the caller may write it.
fn assess(env: &Env, input: &Input, a: &Assignment, dry_run: bool) -> Assessed {
    let (cur, access) = match env.backend.read(&a.key) {
        KeyState::Present { value, access } => (value, access),
        KeyState::Absent if a.ignore_errors => return Assessed::Skipped(input.skip_note(a, "no such key here")),
        KeyState::Absent => {
            return Assessed::BadInput(format!(
                "{} {}: no such key on this kernel (or in this network namespace)",
                input.at(a),
                a.key
            ));
        }
        KeyState::Unreadable(why) => return Assessed::Denied(format!("{} cannot read {}: {why}", input.at(a), a.key)),
    };
    if let Err(m) = sysctl::file::check_against_current(env.os, &a.key, &a.value, &cur)
        .and_then(|()| sysctl::file::check_restorable(&a.key, &cur))
    {
        return Assessed::BadInput(format!("{} {m}", input.at(a)));
    }
    if let Some(msg) = cc_not_offered(env, a) {
        return if input.from_advice {
            Assessed::CcNotOffered(msg)
        } else {
            Assessed::BadInput(format!("{} {msg}", input.at(a)))
        };
    }
    if same_value(&cur, &a.value) {
        return Assessed::Unchanged;
    }
    assess_access(env, input, a, cur, access, dry_run)
}

/// Why the congestion control `a` sets is not one this kernel offers, with how to load it;
/// None for any other key, or one it offers.
fn cc_not_offered(env: &Env, a: &Assignment) -> Option<String> {
    let list = sysctl::file::congestion_control_lists(env.os, &a.key)?;
    let avail = env.backend.read(list).value().map(str::to_string)?;
    if sysctl::file::offers(&avail, &a.value) {
        return None;
    }
    let load = match env.os {
        Os::Linux => format!("modprobe tcp_{}", a.value),
        Os::Freebsd => format!("kldload cc_{}", a.value),
        Os::Macos => String::new(),
    };
    Some(format!(
        "{}: {} is not offered by this kernel ({list}: {}); load it first ({load})",
        a.key,
        a.value,
        normalize_value(&avail)
    ))
}

/// A change from `cur`, unless the caller may not make it: a real apply stops, a dry run
/// shows it as refused, and a `-` line leaves out a key the kernel will not take.
fn assess_access(env: &Env, input: &Input, a: &Assignment, cur: String, access: Access, dry_run: bool) -> Assessed {
    let (os, backend) = (env.os, env.backend);
    // The kernel refuses some congestion controls in a child namespace although the key
    // is writable: found here, before the snapshot, rather than by a rollback.
    let cc_refused = (env.local && os == Os::Linux && a.key == "net.ipv4.tcp_congestion_control")
        .then(|| crate::host::facts::cc_refused_here(backend, &a.value))
        .flatten();
    let refused = if access == Access::NeedsRoot {
        // Not the key's fault but the caller's: a `-` line does not turn this into a
        // note, or a normal user's apply would "succeed" having changed nothing.
        if !dry_run {
            return Assessed::NeedsRoot;
        }
        Some(format!(
            "{}: changing it needs root (run tcptune apply with sudo)",
            a.key
        ))
    } else if access == Access::ReadOnly || cc_refused.is_some() {
        let why = if let Some(why) = cc_refused {
            format!("{} = {}: {why}", a.key, a.value)
        } else if env.local && os == Os::Linux && crate::host::linux::runs_in_child_netns(backend) {
            format!("{} is read-only in this network namespace; set it on the host", a.key)
        } else {
            format!("{} is read-only, even for root", a.key)
        };
        if a.ignore_errors {
            return Assessed::Skipped(input.skip_note(a, &why));
        } else if !dry_run {
            return Assessed::Denied(format!("{} {why}", input.at(a)));
        }
        Some(why)
    } else {
        None
    };
    Assessed::Change { prior: cur, refused }
}

/// The `--persist` file changes for snapshot `id`; what else on the system would override
/// them at boot goes to the plan's warnings, what this OS does not persist and (Linux) which
/// drop-in was chosen and why to its notes.
pub fn persist_plan(os: Os, root: &Path, id: &str, input: &Input, plan: &mut Plan) -> anyhow::Result<Vec<FileChange>> {
    let keys: Vec<String> = plan
        .changes
        .iter()
        .map(|c| c.key.clone())
        .chain(plan.unchanged.iter().map(|(k, _)| k.clone()))
        .collect();
    let keys: Vec<&str> = keys.iter().map(String::as_str).collect();
    let (file, chosen, warnings) = match os {
        Os::Linux => {
            let d = persist::choose_dropin(root, &keys);
            (
                d.path.clone(),
                Some(format!("--persist chose {}: {}", d.name, d.why)),
                d.warnings(),
            )
        }
        Os::Freebsd | Os::Macos => (
            persist::sysctl_file(os, root, &keys),
            None,
            persist::overrides(os, root, &keys),
        ),
    };
    let files = persist_files(os, root, &file, chosen, id, input, plan)?;
    plan.warnings.extend(warnings);
    if !input.routes.is_empty() {
        let dests: Vec<String> = input.routes.iter().map(|w| w.dest.to_string()).collect();
        plan.notes.push(format!(
            "--persist keeps the sysctls only: the host route{} to {} end{} at reboot (and when {} link or \
             address goes); keep {} with the systemd-networkd drop-in of `tcptune advise --scope path \
             --format networkd`, or your network configuration",
            if dests.len() == 1 { "" } else { "s" },
            dests.join(", "),
            if dests.len() == 1 { "s" } else { "" },
            if dests.len() == 1 { "its" } else { "their" },
            if dests.len() == 1 { "it" } else { "them" },
        ));
    }
    Ok(files)
}

/// `sysctl`: the file for the runtime values; `chosen`: a note for when a block goes into it.
fn persist_files(
    os: Os,
    root: &Path,
    sysctl: &Path,
    chosen: Option<String>,
    id: &str,
    input: &Input,
    plan: &mut Plan,
) -> anyhow::Result<Vec<FileChange>> {
    // Persist the whole wanted state, also the keys that already had their value.
    let lines: Vec<(String, String)> = input
        .entries
        .iter()
        .filter(|a| plan.changes.iter().any(|c| c.key == a.key) || plan.unchanged.iter().any(|(k, _)| *k == a.key))
        .map(|a| (a.key.clone(), a.value.clone()))
        .collect();
    let io = |p: &Path, e: &std::io::Error| crate::snapshot::io_error(e, &format!("cannot read {}", p.display()));
    let mut files = Vec::new();
    let lines = persist::missing(sysctl, &lines);
    if !lines.is_empty() {
        files.push(persist::append(sysctl, &persist::block(os, id, &lines, false)).map_err(|e| io(sysctl, &e))?);
        plan.notes.extend(chosen);
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
            plan.notes.push(format!(
                "boot-time tunables are not persisted on {os}: {}",
                input
                    .boot
                    .iter()
                    .map(|(k, _)| k.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        }
    }
    Ok(files)
}
