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

/// The playbook. On Linux the module keeps the settings in `dropin` (numbered against the
/// files of the machine the advice was made on); FreeBSD and macOS keep them in
/// /etc/sysctl.conf, which their loaders read.
pub fn write(out: &mut dyn Write, a: &Advice, entries: &[Entry], dropin: Option<&DropIn>) -> anyhow::Result<()> {
    let c = crate::text::comment;
    super::advice::header(out, a)?;
    let sysctl_file = match (a.os, dropin) {
        (Os::Linux, Some(d)) => super::advice::dropin_file(d),
        _ => "/etc/sysctl.conf".to_string(),
    };
    // macOS's sysctl(8) has no -p: set each value now (sysctl_set) and keep the file for boot.
    let reload = a.os != Os::Macos;
    writeln!(out, "#")?;
    writeln!(
        out,
        "# Ansible playbook (collection ansible.posix). Apply to your inventory:"
    )?;
    writeln!(out, "#   ansible-playbook -i INVENTORY tcptune.yml")?;
    writeln!(out, "# Put back the values each host ran before its first apply:")?;
    writeln!(out, "#   ansible-playbook -i INVENTORY tcptune.yml --tags revert")?;
    writeln!(
        out,
        "# The settings are kept in {sysctl_file} (-e tcptune_sysctl_file=... to change it); the values"
    )?;
    writeln!(
        out,
        "# they replace are recorded on each host in {PRIOR_FILE} (-e tcptune_prior_file=...)."
    )?;
    if let Some(d) = dropin {
        writeln!(
            out,
            "# The drop-in's number: {} (on the host this advice was made on).",
            c(&d.why)
        )?;
        for w in &d.overridden_by {
            writeln!(out, "# warning: {}", c(w))?;
        }
    }
    let set: Vec<&Entry> = entries.iter().filter(|e| e.is_set()).collect();
    writeln!(out, "---")?;
    writeln!(out, "- name: {}", quoted(&format!("tcptune: {}", fleet::title(a))))?;
    writeln!(out, "  hosts: all")?;
    writeln!(out, "  become: true")?;
    writeln!(out, "  gather_facts: false")?;
    writeln!(out, "  vars:")?;
    writeln!(out, "    tcptune_sysctl_file: {}", quoted(&sysctl_file))?;
    writeln!(out, "    tcptune_prior_file: {}", quoted(PRIOR_FILE))?;
    if set.is_empty() {
        writeln!(out, "    tcptune_keys: []")?;
    } else {
        writeln!(out, "    tcptune_keys:")?;
        for e in &set {
            writeln!(out, "      - {}", quoted(&e.key))?;
        }
    }
    writeln!(out, "  tasks:")?;
    task(
        out,
        &[],
        "Read the values this advice replaces",
        &[
            "ansible.builtin.command:",
            "  argv: [sysctl, -n, \"{{ item }}\"]",
            "loop: \"{{ tcptune_keys }}\"",
            "register: tcptune_prior",
            "changed_when: false",
            "check_mode: false",
        ],
        "[apply]",
    )?;
    task(
        out,
        &[],
        "Make the directory of the record",
        &[
            "ansible.builtin.file:",
            "  path: \"{{ tcptune_prior_file | dirname }}\"",
            "  state: directory",
            "  mode: \"0700\"",
        ],
        "[apply]",
    )?;
    task(
        out,
        &[],
        "Record them, on the first apply only (revert puts them back)",
        &[
            "ansible.builtin.copy:",
            "  dest: \"{{ tcptune_prior_file }}\"",
            "  content: \"{% for r in tcptune_prior.results %}{{ r.item }} = {{ r.stdout }}\\n{% endfor %}\"",
            "  force: false",
            "  mode: \"0600\"",
        ],
        "[apply]",
    )?;
    for e in entries {
        let mut comments = vec![c(&e.reason)];
        if let Some(n) = &e.note {
            comments.push(format!("note: {}", c(n)));
        }
        match &e.left_out {
            None => {
                let body = [
                    "ansible.posix.sysctl:".to_string(),
                    format!("  name: {}", quoted(&e.key)),
                    format!("  value: {}", quoted(&e.value)),
                    "  sysctl_file: \"{{ tcptune_sysctl_file }}\"".to_string(),
                    "  sysctl_set: true".to_string(),
                    format!("  reload: {reload}"),
                    "  state: present".to_string(),
                ];
                let body: Vec<&str> = body.iter().map(String::as_str).collect();
                task(out, &comments, &format!("{} = {}", e.key, e.value), &body, "[apply]")?;
            }
            Some(why) => {
                writeln!(out)?;
                for l in &comments {
                    writeln!(out, "    # {l}")?;
                }
                writeln!(out, "    # left out: {} = {}: {}", e.key, e.value, c(why))?;
            }
        }
    }

    writeln!(out)?;
    writeln!(
        out,
        "    # Revert (--tags revert): the record, then tcptune's lines out, then the old values back."
    )?;
    task(
        out,
        &[],
        "Revert: read the values recorded before the first apply",
        &[
            "ansible.builtin.slurp:",
            "  src: \"{{ tcptune_prior_file }}\"",
            "register: tcptune_recorded",
        ],
        "[never, revert]",
    )?;
    match a.os {
        // tcptune's own drop-in: remove it whole.
        Os::Linux => task(
            out,
            &[],
            "Revert: remove tcptune's drop-in",
            &[
                "ansible.builtin.file:",
                "  path: \"{{ tcptune_sysctl_file }}\"",
                "  state: absent",
            ],
            "[never, revert]",
        )?,
        // /etc/sysctl.conf is shared: take out tcptune's keys only.
        Os::Freebsd | Os::Macos => task(
            out,
            &[],
            "Revert: take tcptune's keys out of the sysctl file",
            &[
                "ansible.posix.sysctl:",
                "  name: \"{{ item }}\"",
                "  sysctl_file: \"{{ tcptune_sysctl_file }}\"",
                "  state: absent",
                "  reload: false",
                "loop: \"{{ tcptune_keys }}\"",
            ],
            "[never, revert]",
        )?,
    }
    task(
        out,
        &[],
        "Revert: set the recorded values again",
        &[
            "ansible.posix.sysctl:",
            "  name: \"{{ item.split('=', 1)[0] | trim }}\"",
            "  value: \"{{ item.split('=', 1)[1] | trim }}\"",
            "  sysctl_file: \"{{ tcptune_prior_file }}\"",
            "  sysctl_set: true",
            "  reload: false",
            "loop: \"{{ (tcptune_recorded.content | b64decode).splitlines() | select('search', '=') | list }}\"",
        ],
        "[never, revert]",
    )?;
    task(
        out,
        &[],
        "Revert: forget the record, so the next apply records afresh",
        &[
            "ansible.builtin.file:",
            "  path: \"{{ tcptune_prior_file }}\"",
            "  state: absent",
        ],
        "[never, revert]",
    )?;
    Ok(())
}

/// One task after a blank line: its comment lines, `- name:`, its body lines, its tags,
/// indented under the play's `tasks:`.
fn task(out: &mut dyn Write, comments: &[String], name: &str, body: &[&str], tags: &str) -> std::io::Result<()> {
    writeln!(out)?;
    for l in comments {
        writeln!(out, "    # {l}")?;
    }
    writeln!(out, "    - name: {}", quoted(name))?;
    for l in body {
        writeln!(out, "      {l}")?;
    }
    writeln!(out, "      tags: {tags}")
}
