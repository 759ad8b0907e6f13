//! `advise --format ansible`: a playbook of `ansible.posix.sysctl` tasks that applies the
//! advice, and — behind the `revert` tag, which runs only when asked for (`never`) — tasks
//! that put back what each host ran before its first apply.
//!
//! Why the playbook records values itself: removing a key from a sysctl file does not
//! change the running kernel, so "state: absent" alone would leave the tuned values in place
//! until reboot. The first apply on a host writes the values it replaces to
//! `tcptune_prior_file` (`copy` with `force: false`, so a second apply keeps the first
//! record); revert sets them back with the same module and removes the record.

use std::io::Write;

use super::yaml_quoted as quoted;
use crate::advice::Advice;
use crate::fleet::{self, Entry};
use crate::os::Os;
use crate::persist::DropIn;

/// Where apply records the values it replaces, on each managed host.
pub const PRIOR_FILE: &str = "/var/lib/tcptune/ansible-prior.conf";

/// One end's play: its advice, the entries fleet made of it, and where it keeps them.
pub struct Play<'a> {
    pub advice: &'a Advice,
    pub entries: &'a [Entry],
    /// The drop-in numbered against the installed files (this host's, when known).
    pub dropin: Option<&'a DropIn>,
}

impl Play<'_> {
    /// On Linux the module keeps the settings in the drop-in; FreeBSD and macOS keep them in
    /// /etc/sysctl.conf, which their loaders read.
    fn sysctl_file(&self) -> String {
        match (self.advice.os, self.dropin) {
            (Os::Linux, Some(d)) => super::advice::dropin_file(d),
            (Os::Linux, None) => super::advice::dropin_file(&crate::persist::unknown_dropin()),
            _ => "/etc/sysctl.conf".to_string(),
        }
    }
}

/// The inventory groups of the two ends when the far end is advised too (`advise --ssh`).
pub const THIS_END: &str = "tcptune_this_end";
pub const FAR_END: &str = "tcptune_far_end";

/// The playbook: one play for this host's advice (every host of the inventory), or with the
/// far end's advice (`advise --ssh`, `far` = its play and its ssh destination) two plays, one
/// per end, each on its own inventory group.
pub fn write(out: &mut dyn Write, near: &Play<'_>, far: Option<(&Play<'_>, &str)>) -> anyhow::Result<()> {
    super::advice::header(out, near.advice)?;
    usage(out, &near.sysctl_file(), near.dropin)?;
    if let Some((_, dest)) = far {
        two_ends(out, dest)?;
    }
    writeln!(out, "---")?;
    write_play(out, near, far.map(|_| THIS_END))?;
    if let Some((f, _)) = far {
        writeln!(out)?;
        let mut lines = super::advice::file::head(f.advice);
        lines.extend(super::advice::file::remarks(f.advice));
        for l in lines {
            for w in super::advice::summary::wrap(&crate::text::comment(&l), 100, "# far end: ", "#   ") {
                writeln!(out, "{w}")?;
            }
        }
        write_play(out, f, Some(FAR_END))?;
    }
    Ok(())
}

/// One play: its header up to `tasks:`, the record, the settings, and the tagged revert.
fn write_play(out: &mut dyn Write, p: &Play<'_>, group: Option<&str>) -> anyhow::Result<()> {
    let title = format!("tcptune: {}", fleet::title(p.advice));
    play(out, &title, p.entries, &p.sysctl_file(), group.unwrap_or("all"))?;
    let route = route_task(p.advice);
    tasks(out, p.advice.os, p.entries, &route)?;
    Ok(())
}

/// A play's tasks after its header, the same for advise's playbook and a mesh host's: the
/// record, the settings, the host routes; then, tagged `revert`, the routes back, then the
/// values back.
fn tasks(out: &mut dyn Write, os: Os, entries: &[Entry], routes: &Routes<'_>) -> std::io::Result<()> {
    for t in &RECORD {
        t.write(out, APPLY)?;
    }
    // macOS's sysctl(8) has no -p: set each value now (sysctl_set) and keep the file for boot.
    let reload = os != Os::Macos;
    for e in entries {
        setting(out, e, reload)?;
    }
    if !routes.left_out.is_empty() {
        writeln!(out)?;
    }
    for l in &routes.left_out {
        writeln!(out, "    # {l}")?;
    }
    for (k, r) in routes.set.iter().enumerate() {
        route_apply_tasks(out, r, k)?;
    }
    writeln!(out)?;
    writeln!(
        out,
        "    # Revert (--tags revert): the record, then tcptune's lines out, then the old values back."
    )?;
    for (k, r) in routes.set.iter().enumerate() {
        route_revert_tasks(out, r, k)?;
    }
    for t in revert_tasks(os) {
        t.write(out, REVERT)?;
    }
    Ok(())
}

/// A command's words as the argv of an `ansible.builtin.command` task, each by the one rule
/// for the playbook ([`word`]).
fn argv<S: AsRef<str>>(words: &[S]) -> String {
    let words: Vec<String> = words.iter().map(|w| word(w.as_ref())).collect();
    format!("  argv: [{}]", words.join(", "))
}

/// One word for the playbook: a YAML double-quoted scalar, and marked `!unsafe` where Ansible
/// would see a template in it (`{{`, `{%`, `{#`), so no device's or host's name is evaluated.
pub fn word(s: &str) -> String {
    if s.contains('{') {
        format!("!unsafe {}", quoted(s))
    } else {
        quoted(s)
    }
}

/// One host route of a play: the route tcptune built, its congestion control, its comment.
pub struct RouteTask<'a> {
    pub route: &'a crate::route::Route,
    pub algorithm: &'a str,
    pub line: String,
}

/// A play's host routes: those it sets, and the comment lines that say why one is left out.
#[derive(Default)]
struct Routes<'a> {
    set: Vec<RouteTask<'a>>,
    left_out: Vec<String>,
}

/// `--scope path`: the advice's host route as a [`RouteTask`] when it changes something;
/// otherwise the comments saying why it is left out.
fn route_task(a: &Advice) -> Routes<'_> {
    let Some(r) = &a.route else {
        return Routes::default();
    };
    let c = crate::text::comment;
    let line = c(&r.line());
    let (Some(cmd), Some(route)) = (r.command.as_deref(), r.route.as_ref()) else {
        return Routes {
            set: Vec::new(),
            left_out: vec![line, format!("left out: the host route to {}", r.dest)],
        };
    };
    if r.action != crate::profile::Action::Set {
        return Routes {
            set: Vec::new(),
            left_out: vec![line, format!("left out: {}", c(cmd))],
        };
    }
    Routes {
        set: vec![RouteTask {
            route,
            algorithm: &r.algorithm,
            line,
        }],
        left_out: Vec::new(),
    }
}

/// Where a host records the route to `dest` it had before the first apply.
fn route_record(dest: std::net::IpAddr) -> String {
    format!("{{{{ tcptune_prior_file }}}}.route-{dest}")
}

/// The tasks that set a host route: read the host route there now, record it on the first
/// apply only (as the sysctls are: revert puts back what the host itself ran, never what a
/// report said), then `ip route replace` unless it carries `algorithm` already, so a second
/// run changes nothing. `k` tells one route's registers from another's in one play.
fn route_apply_tasks(out: &mut dyn Write, r: &RouteTask<'_>, k: usize) -> std::io::Result<()> {
    let route = r.route;
    let prefix = crate::route::prefix(route.dst, route.dst_len);
    let register = format!("tcptune_route_{k}");
    let read = [
        "ansible.builtin.command:".to_string(),
        argv(&["ip", "route", "show", "exact", &prefix]),
        format!("register: {register}"),
        "changed_when: false".to_string(),
        "check_mode: false".to_string(),
    ];
    task(out, &[], &format!("Read the host route to {}", route.dst), &read, APPLY)?;
    let record = [
        "ansible.builtin.copy:".to_string(),
        format!("  dest: {}", quoted(&route_record(route.dst))),
        format!("  content: {}", quoted(&format!("{{{{ {register}.stdout }}}}\n"))),
        "  force: false".to_string(),
        "  mode: \"0600\"".to_string(),
    ];
    task(
        out,
        &[],
        &format!(
            "Record it, on the first apply only (revert puts back the route to {})",
            route.dst
        ),
        &record,
        APPLY,
    )?;
    let comments = [
        r.line.clone(),
        "the route copies the gateway and device the host's kernel used for it when measured; it ends at reboot".into(),
    ];
    let set = [
        "ansible.builtin.command:".to_string(),
        argv(&crate::route::words("replace", route)),
        format!(
            "when: {}",
            quoted(&format!("'congctl {}' not in {register}.stdout", r.algorithm))
        ),
    ];
    task(
        out,
        &comments,
        &format!("route to {} congctl {}", route.dst, r.algorithm),
        &set,
        APPLY,
    )
}

/// Flags `ip route show` prints that `ip route replace` does not take.
const SHOWN_ONLY: &str =
    "['linkdown', 'dead', 'offload', 'trap', 'offload_failed', 'rt_offload', 'rt_trap', 'rt_offload_failed']";

/// The revert of a host route, from the host's own record: the route it had put back as its
/// kernel showed it, or, where it had none, tcptune's deleted (gone already is no error); then
/// the record forgotten.
fn route_revert_tasks(out: &mut dyn Write, r: &RouteTask<'_>, k: usize) -> std::io::Result<()> {
    let route = r.route;
    let register = format!("tcptune_route_record_{k}");
    let recorded = format!("({register}.content | default('') | b64decode | trim)");
    let read = [
        "ansible.builtin.slurp:".to_string(),
        format!("  src: {}", quoted(&route_record(route.dst))),
        format!("register: {register}"),
        "failed_when: false".to_string(),
    ];
    task(
        out,
        &[],
        &format!(
            "Revert: read the route to {} recorded before the first apply",
            route.dst
        ),
        &read,
        REVERT,
    )?;
    let back = [
        "ansible.builtin.command:".to_string(),
        format!(
            "  argv: {}",
            quoted(&format!(
                "{{{{ ['ip', 'route', 'replace'] + (({recorded}.splitlines() | first) | regex_replace(' expires \\\\S+', '')).split() | reject('in', {SHOWN_ONLY}) | list }}}}"
            ))
        ),
        format!(
            "when: {}",
            quoted(&format!("{register}.content is defined and {recorded} != ''"))
        ),
    ];
    task(
        out,
        &[],
        &format!("Revert: the route to {} as it was", route.dst),
        &back,
        REVERT,
    )?;
    let undo = format!("tcptune_route_undo_{k}");
    let del = crate::advice::scope::undo_words(route, None);
    let del = [
        "ansible.builtin.command:".to_string(),
        argv(&del),
        format!("register: {undo}"),
        format!("failed_when: {undo}.rc != 0 and 'No such process' not in {undo}.stderr"),
        format!(
            "when: {}",
            quoted(&format!("{register}.content is defined and {recorded} == ''"))
        ),
    ];
    task(
        out,
        &[],
        &format!("Revert: tcptune's route to {} deleted (there was none)", route.dst),
        &del,
        REVERT,
    )?;
    let forget = [
        "ansible.builtin.file:".to_string(),
        format!("  path: {}", quoted(&route_record(route.dst))),
        "  state: absent".to_string(),
    ];
    task(
        out,
        &[],
        &format!("Revert: forget the route record of {}", route.dst),
        &forget,
        REVERT,
    )
}

/// `tcptune mesh --format ansible`: one play per host, each with its own values and routes,
/// the same record and tagged revert as advise's playbook. Each play runs on `all` and ends at
/// once on every host but its own (`inventory_hostname`): a host's name is never read as an
/// Ansible pattern (`all`, a group's name, `a:b`), so a play cannot select another host.
pub fn write_mesh(out: &mut dyn Write, hosts: &[crate::advice::mesh::HostAdvice]) -> anyhow::Result<()> {
    let dropin = crate::persist::unknown_dropin();
    writeln!(
        out,
        "# tcptune {} mesh advice: a play per host, each from all its paths",
        env!("CARGO_PKG_VERSION")
    )?;
    let linux = super::advice::dropin_file(&dropin);
    usage(out, &linux, None)?;
    writeln!(out, "---")?;
    for (i, h) in hosts.iter().enumerate() {
        if i > 0 {
            writeln!(out)?;
        }
        let entries = fleet::entries_of(
            h.os,
            h.settings.iter().map(|s| (&s.setting, super::mesh::setting_line(s))),
        )?;
        let file = if h.os == Os::Linux {
            linux.clone()
        } else {
            "/etc/sysctl.conf".to_string()
        };
        let title = format!("tcptune mesh: {} from its paths to {}", h.host, h.paths.join(", "));
        play(out, &title, &entries, &file, "all")?;
        only_host(out, &h.host)?;
        let set = h
            .routes
            .iter()
            .filter(|r| r.action == crate::profile::Action::Set)
            .map(|r| RouteTask {
                route: &r.route,
                algorithm: &r.algorithm,
                line: crate::text::comment(&super::mesh::route_comment(r)),
            })
            .collect();
        let routes = Routes {
            set,
            left_out: Vec::new(),
        };
        tasks(out, h.os, &entries, &routes)?;
    }
    Ok(())
}

/// The first task of a mesh host's play: every other host ends the play here, whatever the
/// tags (`always`).
fn only_host(out: &mut dyn Write, host: &str) -> std::io::Result<()> {
    let body = [
        "ansible.builtin.meta: end_host".to_string(),
        format!("when: inventory_hostname != {}", quoted(host).replace('"', "'")),
    ];
    task(out, &[], &format!("Only {host} runs this play"), &body, "[always]")
}

/// How to give the two ends an inventory.
fn two_ends(out: &mut dyn Write, dest: &str) -> std::io::Result<()> {
    let dest = crate::text::comment(dest);
    write!(
        out,
        "# Two plays, one per end of the path, each on its inventory group; e.g. inventory.ini:
#   [{THIS_END}]
#   localhost ansible_connection=local
#   [{FAR_END}]
#   {dest}
"
    )
}

/// The tags of the tasks that apply, and of those that run only with `--tags revert`.
const APPLY: &str = "[apply]";
const REVERT: &str = "[never, revert]";

/// A task whose text does not depend on the advice.
struct Fixed {
    name: &'static str,
    body: &'static [&'static str],
}

impl Fixed {
    fn write(&self, out: &mut dyn Write, tags: &str) -> std::io::Result<()> {
        task(out, &[], self.name, self.body, tags)
    }
}

/// Before the settings: the values they replace, recorded once per host.
const RECORD: [Fixed; 3] = [
    Fixed {
        name: "Read the values this advice replaces",
        body: &[
            "ansible.builtin.command:",
            "  argv: [sysctl, -n, \"{{ item }}\"]",
            "loop: \"{{ tcptune_keys }}\"",
            "register: tcptune_prior",
            "changed_when: false",
            "check_mode: false",
        ],
    },
    Fixed {
        name: "Make the directory of the record",
        body: &[
            "ansible.builtin.file:",
            "  path: \"{{ tcptune_prior_file | dirname }}\"",
            "  state: directory",
            "  mode: \"0700\"",
        ],
    },
    Fixed {
        name: "Record them, on the first apply only (revert puts them back)",
        body: &[
            "ansible.builtin.copy:",
            "  dest: \"{{ tcptune_prior_file }}\"",
            "  content: \"{% for r in tcptune_prior.results %}{{ r.item }} = {{ r.stdout }}\\n{% endfor %}\"",
            "  force: false",
            "  mode: \"0600\"",
        ],
    },
];

const REVERT_READ: Fixed = Fixed {
    name: "Revert: read the values recorded before the first apply",
    body: &[
        "ansible.builtin.slurp:",
        "  src: \"{{ tcptune_prior_file }}\"",
        "register: tcptune_recorded",
    ],
};

/// tcptune's own drop-in: remove it whole.
const REVERT_DROPIN: Fixed = Fixed {
    name: "Revert: remove tcptune's drop-in",
    body: &[
        "ansible.builtin.file:",
        "  path: \"{{ tcptune_sysctl_file }}\"",
        "  state: absent",
    ],
};

/// /etc/sysctl.conf is shared: take out tcptune's keys only.
const REVERT_KEYS: Fixed = Fixed {
    name: "Revert: take tcptune's keys out of the sysctl file",
    body: &[
        "ansible.posix.sysctl:",
        "  name: \"{{ item }}\"",
        "  sysctl_file: \"{{ tcptune_sysctl_file }}\"",
        "  state: absent",
        "  reload: false",
        "loop: \"{{ tcptune_keys }}\"",
    ],
};

const REVERT_SET: Fixed = Fixed {
    name: "Revert: set the recorded values again",
    body: &[
        "ansible.posix.sysctl:",
        "  name: \"{{ item.split('=', 1)[0] | trim }}\"",
        "  value: \"{{ item.split('=', 1)[1] | trim }}\"",
        "  sysctl_file: \"{{ tcptune_prior_file }}\"",
        "  sysctl_set: true",
        "  reload: false",
        "loop: \"{{ (tcptune_recorded.content | b64decode).splitlines() | select('search', '=') | list }}\"",
    ],
};

const REVERT_FORGET: Fixed = Fixed {
    name: "Revert: forget the record, so the next apply records afresh",
    body: &[
        "ansible.builtin.file:",
        "  path: \"{{ tcptune_prior_file }}\"",
        "  state: absent",
    ],
};

/// The revert block, in order: the record, then tcptune's lines out, then the old values back.
fn revert_tasks(os: Os) -> [&'static Fixed; 4] {
    let remove = match os {
        Os::Linux => &REVERT_DROPIN,
        Os::Freebsd | Os::Macos => &REVERT_KEYS,
    };
    [&REVERT_READ, remove, &REVERT_SET, &REVERT_FORGET]
}

/// The comment lines after the advice's header: how to run the playbook, where it keeps
/// what, and the drop-in's number.
fn usage(out: &mut dyn Write, sysctl_file: &str, dropin: Option<&DropIn>) -> std::io::Result<()> {
    let c = crate::text::comment;
    // Unindented: the template is the text as written, line for line.
    write!(
        out,
        "#
# Ansible playbook (collection ansible.posix). Apply to your inventory:
#   ansible-playbook -i INVENTORY tcptune.yml
# Put back the values each host ran before its first apply:
#   ansible-playbook -i INVENTORY tcptune.yml --tags revert
# The settings are kept in {sysctl_file}
# (-e tcptune_sysctl_file=... to change it); the values they replace are recorded on each host
# in {PRIOR_FILE} (-e tcptune_prior_file=...).
"
    )?;
    if let Some(d) = dropin {
        let why = format!(
            "The drop-in's number: {} (on the host this advice was made on).",
            c(&d.why)
        );
        for l in super::advice::summary::wrap(&why, 100, "# ", "#   ") {
            writeln!(out, "{l}")?;
        }
        for w in &d.overridden_by {
            writeln!(out, "# warning: {}", c(w))?;
        }
    }
    Ok(())
}

/// The play, up to its `tasks:`: the variables the tasks share.
fn play(out: &mut dyn Write, title: &str, entries: &[Entry], sysctl_file: &str, hosts: &str) -> std::io::Result<()> {
    write!(
        out,
        "- name: {title}
  hosts: {hosts}
  become: true
  gather_facts: false
  vars:
    tcptune_sysctl_file: {file}
    tcptune_prior_file: {prior}
",
        title = quoted(title),
        file = quoted(sysctl_file),
        prior = quoted(PRIOR_FILE)
    )?;
    let set: Vec<&Entry> = entries.iter().filter(|e| e.is_set()).collect();
    if set.is_empty() {
        writeln!(out, "    tcptune_keys: []")?;
    } else {
        writeln!(out, "    tcptune_keys:")?;
        for e in &set {
            writeln!(out, "      - {}", quoted(&e.key))?;
        }
    }
    writeln!(out, "  tasks:")
}

/// One setting: an `ansible.posix.sysctl` task, or comments saying why it is left out.
fn setting(out: &mut dyn Write, e: &Entry, reload: bool) -> std::io::Result<()> {
    let c = crate::text::comment;
    let mut comments = vec![c(&e.reason)];
    if let Some(n) = &e.note {
        comments.push(format!("note: {}", c(n)));
    }
    if e.left_out.is_none() {
        let body = [
            "ansible.posix.sysctl:".to_string(),
            format!("  name: {}", quoted(&e.key)),
            format!("  value: {}", quoted(&e.value)),
            "  sysctl_file: \"{{ tcptune_sysctl_file }}\"".to_string(),
            "  sysctl_set: true".to_string(),
            format!("  reload: {reload}"),
            "  state: present".to_string(),
        ];
        return task(out, &comments, &format!("{} = {}", e.key, e.value), &body, APPLY);
    }
    writeln!(out)?;
    for l in &comments {
        writeln!(out, "    # {l}")?;
    }
    // The line above says why ("not applied (…)", "in /boot/loader.conf").
    writeln!(out, "    # left out: {} = {}", e.key, e.value)
}

/// One task after a blank line: its comment lines, `- name:`, its body lines, its tags,
/// indented under the play's `tasks:`.
fn task<S: AsRef<str>>(
    out: &mut dyn Write,
    comments: &[String],
    name: &str,
    body: &[S],
    tags: &str,
) -> std::io::Result<()> {
    writeln!(out)?;
    for l in comments {
        writeln!(out, "    # {l}")?;
    }
    writeln!(out, "    - name: {}", quoted(name))?;
    for l in body {
        writeln!(out, "      {}", l.as_ref())?;
    }
    writeln!(out, "      tags: {tags}")
}
