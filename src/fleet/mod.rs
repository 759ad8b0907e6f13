//! Handing the advice to the configuration engine a fleet already runs: Ansible
//! (`ansible.posix.sysctl`), TuneD (a profile's `[sysctl]` section) and Kubernetes (a pod's
//! `securityContext.sysctls`). This module owns what each engine can take — which OS, which
//! keys, under which names — and turns an [`Advice`] into the entries to hand over; the
//! renderers in `output::{ansible, tuned, k8s}` only write them in each engine's syntax.
//!
//! The advice is the desired state of every host the engine manages, not a diff against this
//! machine: a setting this machine already runs ([`Action::Keep`]) is handed over like one it
//! lacks. What cannot be set where the advice was made ([`Action::Unavailable`]: absent, or
//! read-only in this network namespace) and FreeBSD's boot-time tunables are handed over as
//! comments that say why, as in the sysctl format.

pub mod inventory;
pub mod k8s;

use crate::advice::Advice;
use crate::error::Error;
use crate::os::Os;
use crate::profile::{Action, Setting, Stage};

/// A configuration engine tcptune writes for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Engine {
    Ansible,
    Tuned,
    K8s,
}

impl Engine {
    /// The `--format` name.
    pub fn name(self) -> &'static str {
        match self {
            Self::Ansible => "ansible",
            Self::Tuned => "tuned",
            Self::K8s => "k8s",
        }
    }

    /// Refuses an OS the engine cannot configure, before anything is measured.
    ///
    /// # Platform specific behavior
    /// TuneD and Kubernetes pods are Linux only. `ansible.posix.sysctl` works on Linux and
    /// FreeBSD (it reloads with `sysctl -p FILE` or `/etc/rc.d/sysctl reload`); on macOS,
    /// whose sysctl(8) has no `-p`, the playbook sets each value with `sysctl -w` instead
    /// of reloading the file.
    pub fn check_os(self, os: Os) -> Result<(), Error> {
        match (self, os) {
            (_, Os::Linux) | (Self::Ansible, _) => Ok(()),
            (Self::Tuned, _) => Err(Error::usage(format!(
                "--format tuned writes a TuneD profile, and TuneD runs only on Linux, not {os}"
            ))
            .with_hint(format!(
                "for {os} use --format sysctl (/etc/sysctl.conf) or --format ansible"
            ))),
            (Self::K8s, _) => Err(Error::usage(format!(
                "--format k8s writes Linux pod sysctls; Kubernetes pods do not run on {os}"
            ))
            .with_hint(format!(
                "for {os} use --format sysctl (/etc/sysctl.conf) or --format ansible"
            ))),
        }
    }
}

/// One setting as handed to an engine.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    pub key: String,
    pub value: String,
    /// What changes from what to what, and why, in one short line ([`crate::profile::Setting::line`]).
    pub reason: String,
    pub note: Option<String>,
    /// None: set it. Some(why): written as a comment only (why it is not set).
    pub left_out: Option<String>,
}

impl Entry {
    pub fn is_set(&self) -> bool {
        self.left_out.is_none()
    }
}

/// The advice's settings as entries for an engine, in the advice's order ([`entries_of`]).
pub fn entries(advice: &Advice) -> Result<Vec<Entry>, Error> {
    entries_of(advice.os, advice.settings.iter().map(|s| (s, s.line())))
}

/// Settings for `os`, each with its one line of why, as entries for an engine: a single
/// advice's or a mesh host's. Keys and values are checked again as a sysctl file's are (they
/// end up inside YAML, INI and Jinja templates, which must never read them as anything but
/// data), and each value is written as the check folds it (one space between its words).
pub fn entries_of<'a>(os: Os, settings: impl IntoIterator<Item = (&'a Setting, String)>) -> Result<Vec<Entry>, Error> {
    settings
        .into_iter()
        .map(|(s, reason)| {
            let value = match s.stage {
                Stage::Runtime => crate::sysctl::file::check_key(&s.key, os)
                    .and_then(|()| crate::sysctl::file::check_value(&s.key, &s.value, os)),
                Stage::Boot => crate::profile::check_boot_line(&s.key, &s.value).map(|()| s.value.clone()),
            }
            .map_err(|e| Error::usage(format!("cannot hand this setting to a configuration engine: {e}")))?;
            let left_out = match (&s.action, s.stage) {
                (_, Stage::Boot) => Some("boot-time tunable: set it in /boot/loader.conf and reboot".to_string()),
                (Action::Set | Action::Keep, Stage::Runtime) => None,
                (Action::Unavailable(why), Stage::Runtime) => {
                    Some(format!("not set where this advice was made: {why}"))
                }
            };
            Ok(Entry {
                key: s.key.clone(),
                value,
                reason,
                note: s.note.clone(),
                left_out,
            })
        })
        .collect()
}

/// A one-line title for the path, for playbook names, profile summaries and manifests.
pub fn title(advice: &Advice) -> String {
    #[allow(clippy::cast_precision_loss)]
    let rate = crate::text::rate(advice.bandwidth_bps as f64);
    format!(
        "TCP buffers for RTT {} at {rate} (BDP {})",
        crate::text::millis(advice.rtt_ms),
        crate::text::size(advice.sizing.bdp)
    )
}

/// Whether `name` is a TuneD profile name TuneD will load (its loader drops any other:
/// `tuned/profiles/loader.py` `safe_name`, `^[a-zA-Z0-9_.-]+$`).
pub fn check_tuned_name(name: &str, what: &str) -> Result<(), Error> {
    let ok = !name.is_empty()
        && name != "."
        && name != ".."
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'-'));
    if ok {
        Ok(())
    } else {
        Err(Error::usage(format!(
            "{what} \"{}\" is not a TuneD profile name: letters, digits, '_', '.', '-' only",
            crate::text::comment(name)
        )))
    }
}

/// The files TuneD's `reapply_sysctl` applies after a profile that set one of `keys`, one
/// line each: TuneD (`plugin_sysctl.py`) reads the `*.conf` of /run/sysctl.d and
/// /etc/sysctl.d by name (a /run name masks the same /etc name), then /etc/sysctl.conf. They
/// are read as the sysctl.d loaders read them ([`crate::host::linux::read_conf_files`]):
/// bytes, bounded, never blocking; a file that could not be read is named too, as one that
/// may set the keys.
pub fn tuned_overrides(root: &std::path::Path, keys: &[&str]) -> Vec<String> {
    use crate::host::linux as host;
    let mut files = host::conf_files_in(root, &["run/sysctl.d", "etc/sysctl.d"]);
    let main = root.join("etc/sysctl.conf");
    if main.exists() {
        files.push(main);
    }
    let files = host::read_conf_files(files);
    let mut lines = crate::persist::setter_lines(
        &crate::persist::setters(files.read, keys),
        "TuneD's reapply_sysctl applies it after the profile, so it wins",
    );
    lines.extend(files.unchecked.iter().map(|u| {
        if u.why.may_set_keys() {
            format!("could not check {u}; TuneD's reapply_sysctl applies it after the profile: if it sets one of these keys, it wins")
        } else {
            format!("{u}: not read; TuneD's reapply_sysctl reads it after the profile: remove it")
        }
    }));
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tuned_and_k8s_are_linux_only_and_ansible_goes_everywhere() {
        for os in [Os::Freebsd, Os::Macos] {
            for e in [Engine::Tuned, Engine::K8s] {
                let err = e.check_os(os).expect_err("refused");
                assert_eq!(err.exit_code(), crate::error::exit::USAGE);
                assert!(err.to_string().contains(os.name()), "{err}");
            }
            Engine::Ansible.check_os(os).expect("ansible.posix.sysctl knows BSD");
        }
        for e in [Engine::Ansible, Engine::Tuned, Engine::K8s] {
            e.check_os(Os::Linux).expect("linux");
        }
    }

    #[test]
    fn tuned_names_are_what_its_loader_accepts() {
        for ok in ["tcptune", "tcptune-wan_2.0"] {
            check_tuned_name(ok, "profile").expect(ok);
        }
        for bad in ["", "..", "a b", "x/y", "tcptune;rm", "prof\u{202e}"] {
            assert!(check_tuned_name(bad, "profile").is_err(), "{bad:?}");
        }
    }

    #[test]
    fn tuned_overrides_name_the_files_reapplied_after_the_profile() {
        let root = tempfile::tempdir().expect("tmp");
        let w = |rel: &str, text: &str| {
            let p = root.path().join(rel);
            std::fs::create_dir_all(p.parent().expect("parent")).expect("mkdir");
            std::fs::write(p, text).expect("write");
        };
        w(
            "etc/sysctl.d/70-x.conf",
            "net.ipv4.tcp_rmem = 4096 87380 6291456\nnet.ipv4.tcp_sack = 1\n",
        );
        w("usr/lib/sysctl.d/50-default.conf", "net.ipv4.tcp_rmem = 1 2 3\n");
        w("etc/sysctl.conf", "# nothing\nnet.core.rmem_max=1\n");
        let o = tuned_overrides(root.path(), &["net.ipv4.tcp_rmem", "net.core.rmem_max"]);
        assert_eq!(o.len(), 2, "{o:?}");
        assert!(o[0].contains("70-x.conf:1 sets net.ipv4.tcp_rmem"), "{o:?}");
        assert!(o[1].contains("sysctl.conf:2 sets net.core.rmem_max = 1"), "{o:?}");
        // /usr/lib/sysctl.d is not reapplied by TuneD.
        assert!(!o.iter().any(|l| l.contains("50-default")), "{o:?}");
        // A Latin-1 comment hides no key; a link to /dev/zero is named, not read.
        std::fs::write(
            root.path().join("etc/sysctl.d/80-latin1.conf"),
            b"# M\xfcller\nnet.ipv4.tcp_rmem = 4096 87380 6291456\n",
        )
        .expect("write");
        std::os::unix::fs::symlink("/dev/zero", root.path().join("etc/sysctl.d/90-zero.conf")).expect("symlink");
        let o = tuned_overrides(root.path(), &["net.ipv4.tcp_rmem", "net.core.rmem_max"]);
        assert_eq!(o.len(), 4, "{o:?}");
        assert!(o[1].contains("80-latin1.conf:2 sets net.ipv4.tcp_rmem"), "{o:?}");
        assert!(
            o[3].contains("90-zero.conf: it is a character device, not a regular file: not read"),
            "{o:?}"
        );
    }
}
