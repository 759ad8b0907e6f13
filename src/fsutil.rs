//! Opening files as root without being steered by whoever else can write the file system.
//!
//! A directory is *trusted* when it and every directory above it is owned by root or by the
//! caller (the effective uid), and none of them is writable by group or others. Whoever can
//! write a directory can replace what is in it; only in a trusted directory does "the file
//! tcptune opens" stay "the file tcptune means". One exception, for the directories *above*:
//! the sticky bit (/tmp, mode 1777), under which others may add entries but cannot rename or
//! delete ours. The directory itself must not be writable by others even when sticky: they
//! could still plant new files in it (a snapshot for `revert` to write, say).
//!
//! Symbolic links on the way are resolved one component at a time with lstat(2). A link is
//! accepted when it is owned by root or the caller (what fs.protected_symlinks asks in a
//! sticky directory) and its target passes the same checks: `/var/run -> /run` is fine, a
//! link into another user's home is not.
//!
//! Inside a trusted directory files are still opened with O_NOFOLLOW and checked to be
//! regular files: the check above is made once, and a directory that was someone else's
//! before (or a bug) should not turn a write into a write through a link.
//!
//! # Platform specific behavior
//! O_NOFOLLOW on a symlink fails with ELOOP on Linux and macOS, EMLINK on FreeBSD; both are
//! reported as "is a symbolic link". ACLs are not examined: a directory whose ACL grants
//! others write access passes the mode check.

use std::collections::VecDeque;
use std::ffi::OsString;
use std::fmt;
use std::fs::{self, File, OpenOptions};
use std::io;
use std::os::unix::fs::{MetadataExt as _, OpenOptionsExt as _};
use std::path::{Component, Path, PathBuf};

use crate::error::Error;

/// Symlinks followed before giving up, as the kernel's own limit (40 on Linux).
const MAX_LINKS: usize = 40;

/// Refuse `dir` unless it is a directory that only root or the caller can change, and the
/// same holds for every directory above it (see the module docs). `what` names it in the
/// message ("the state directory").
///
/// Errors: not permitted (exit 3) for an untrusted owner, mode or symlink; usage (exit 2)
/// for a path that does not exist or is not a directory.
pub fn check_trusted_dir(dir: &Path, what: &str) -> Result<(), Error> {
    check(dir, dir, what, true)
}

/// Before creating or replacing `path` (and creating any missing directories above it): check
/// its nearest existing ancestor directory as [`check_trusted_dir`] does, except that it may be
/// sticky and writable by others (/tmp), as a parent may. Something already at `path` that is
/// not a directory (the file an earlier run wrote, a link) is replaced by a rename in its
/// directory, never written through, so that directory is the one checked: the same rule as
/// for the first write. Messages name `path`. Returns that ancestor.
pub fn check_trusted_parent(path: &Path, what: &str) -> Result<PathBuf, Error> {
    let mut existing =
        std::path::absolute(path).map_err(|e| Error::usage(format!("{what} {}: {e}", path.display())))?;
    if fs::symlink_metadata(&existing).is_ok_and(|m| !m.is_dir())
        && let Some(dir) = existing.parent()
    {
        existing = dir.to_path_buf();
    }
    while fs::symlink_metadata(&existing).is_err_and(|e| e.kind() == io::ErrorKind::NotFound) {
        match existing.parent() {
            Some(p) => existing = p.to_path_buf(),
            None => break,
        }
    }
    check(path, &existing, what, false)?;
    Ok(existing)
}

/// Walk `walk`; messages name `dir`, and call the last directory "it" only if it is `dir`.
fn check(dir: &Path, walk: &Path, what: &str, strict: bool) -> Result<(), Error> {
    let abs = std::path::absolute(walk).map_err(|e| Error::usage(format!("{what} {}: {e}", dir.display())))?;
    let is_dir = std::path::absolute(dir).is_ok_and(|d| d == abs);
    // SAFETY: geteuid has no preconditions and cannot fail.
    let euid = unsafe { libc::geteuid() };
    let mut pending: VecDeque<OsString> = VecDeque::new();
    push_front(&mut pending, &abs);
    // `resolved` never contains a symlink, so ".." is its lexical parent.
    let mut resolved = PathBuf::from("/");
    let mut links = 0;
    let q = Query { dir, what, euid };
    while let Some(c) = pending.pop_front() {
        if c == ".." {
            resolved.pop();
            continue;
        }
        let next = resolved.join(&c);
        let m = lstat(&next, dir, what)?;
        if m.file_type().is_symlink() {
            links += 1;
            if links > MAX_LINKS {
                return Err(Error::usage(format!(
                    "{what} {}: too many symbolic links",
                    dir.display()
                )));
            }
            trusted_owner(&next, &m, &q, &format!("the symbolic link {}", next.display()))?;
            let target = fs::read_link(&next).map_err(|e| Error::usage(format!("{}: {e}", next.display())))?;
            if target.is_absolute() {
                resolved = PathBuf::from("/");
            }
            push_front(&mut pending, &target);
            continue;
        }
        if !pending.is_empty() {
            trusted(&next, &m, &q, false, false)?;
        }
        resolved = next;
    }
    // The directory itself, held to the strict rule (and "/" when that is all there is).
    let m = lstat(&resolved, dir, what)?;
    trusted(&resolved, &m, &q, strict, is_dir)
}

/// Entries [`check_trusted_tree`] looks at before giving up: a sysctl tree has a few thousand
/// (/proc/sys/net on a host with a hundred interfaces, some 30,000).
const MAX_TREE_ENTRIES: usize = 1_000_000;

/// [`check_trusted_dir`] for `dir`, then the same rule for every directory below it, and for
/// every regular file below it: owned by root or the caller, with no other hard link. For a
/// tree root writes into file by file (`--sysctl-dir` under sudo): a directory another user
/// may change lets them swap the files, a file they own is theirs to have root write into, and
/// a hard link makes a write land in a file elsewhere. Symbolic links are not followed (the
/// tree's reader refuses them where it meets one).
///
/// Errors: not permitted (exit 3) for an untrusted owner, mode or link count; usage (exit 2)
/// for a path that does not exist, is not a directory, or holds more than a sysctl tree does.
pub fn check_trusted_tree(dir: &Path, what: &str) -> Result<(), Error> {
    check_trusted_dir(dir, what)?;
    // SAFETY: geteuid has no preconditions and cannot fail.
    let q = Query {
        dir,
        what,
        euid: unsafe { libc::geteuid() },
    };
    let mut pending = vec![fs::canonicalize(dir).map_err(|e| Error::usage(format!("{what} {}: {e}", dir.display())))?];
    let mut seen = 0usize;
    while let Some(d) = pending.pop() {
        let entries =
            fs::read_dir(&d).map_err(|e| Error::usage(format!("{what} {}: {}: {e}", dir.display(), d.display())))?;
        for e in entries {
            let e = e.map_err(|e| Error::usage(format!("{what} {}: {}: {e}", dir.display(), d.display())))?;
            seen += 1;
            if seen > MAX_TREE_ENTRIES {
                return Err(Error::usage(format!(
                    "{what} {}: more than {MAX_TREE_ENTRIES} entries, more than a sysctl tree holds",
                    dir.display()
                )));
            }
            let p = e.path();
            let m = lstat(&p, dir, what)?;
            if m.is_dir() {
                trusted(&p, &m, &q, true, false)?;
                pending.push(p);
            } else if m.is_file() {
                trusted_owner(&p, &m, &q, &p.display().to_string())?;
                if m.nlink() > 1 {
                    return Err(Error::not_permitted(format!(
                        "refusing {what} {}: {} has {} hard links, so a write to it would change the other names too",
                        dir.display(),
                        p.display(),
                        m.nlink()
                    ))
                    .with_hint(hint(&p)));
                }
            }
        }
    }
    Ok(())
}

/// What a refusal names: the directory asked about, its role, and who may own it.
struct Query<'a> {
    dir: &'a Path,
    what: &'a str,
    euid: u32,
}

/// Queue `p`'s components ahead of what is left (a link's target replaces the link).
fn push_front(pending: &mut VecDeque<OsString>, p: &Path) {
    for c in p.components().rev() {
        match c {
            Component::Normal(n) => pending.push_front(n.to_os_string()),
            Component::ParentDir => pending.push_front("..".into()),
            Component::RootDir | Component::CurDir | Component::Prefix(_) => {}
        }
    }
}

fn lstat(p: &Path, dir: &Path, what: &str) -> Result<fs::Metadata, Error> {
    fs::symlink_metadata(p).map_err(|e| match e.kind() {
        io::ErrorKind::PermissionDenied => {
            Error::not_permitted(format!("{what} {}: {}: {e}", dir.display(), p.display()))
        }
        _ => Error::usage(format!("{what} {}: {}: {e}", dir.display(), p.display())),
    })
}

fn trusted_owner(p: &Path, m: &fs::Metadata, q: &Query<'_>, subject: &str) -> Result<(), Error> {
    if m.uid() == 0 || m.uid() == q.euid {
        return Ok(());
    }
    let who = if q.euid == 0 {
        "root".to_string()
    } else {
        format!("root or uid {}", q.euid)
    };
    Err(Error::not_permitted(format!(
        "refusing {} {}: {subject} is owned by uid {} (mode {:o}), not {who}, so that user could swap the files tcptune writes there",
        q.what,
        q.dir.display(),
        m.uid(),
        m.mode() & 0o7777
    ))
    .with_hint(hint(p)))
}

/// `itself`: `p` is the directory asked about (after links), not one above it.
fn trusted(p: &Path, m: &fs::Metadata, q: &Query<'_>, strict: bool, itself: bool) -> Result<(), Error> {
    let subject = if itself {
        "it".to_string()
    } else {
        format!("{} on its path", p.display())
    };
    if !m.is_dir() {
        return Err(Error::usage(format!(
            "{} {}: {} is not a directory",
            q.what,
            q.dir.display(),
            p.display()
        )));
    }
    trusted_owner(p, m, q, &subject)?;
    let mode = m.mode() & 0o7777;
    let sticky = mode & 0o1000 != 0;
    if mode & 0o022 != 0 && (strict || !sticky) {
        return Err(Error::not_permitted(format!(
            "refusing {} {}: {subject} is writable by group or others (mode {mode:o}), so anyone could replace the files tcptune writes there",
            q.what,
            q.dir.display(),
        ))
        .with_hint(hint(p)));
    }
    Ok(())
}

fn hint(p: &Path) -> String {
    format!(
        "make {} owned by root and writable only by its owner (chown root; chmod go-w), or use another directory",
        p.display()
    )
}

/// Why a file inside a trusted directory was not opened: a link or not a regular file
/// ("it is a symbolic link (not followed)"; the caller names the file).
/// Carried inside an [`io::Error`] (kind `Other`) so that callers keeping an io::Result
/// contract still can tell it from a plain I/O failure with [`untrusted`].
#[derive(Debug)]
pub struct Untrusted(pub String);

impl fmt::Display for Untrusted {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Untrusted {}

/// The refusal inside `e`, when it is one of this module's.
pub fn untrusted(e: &io::Error) -> Option<&Untrusted> {
    e.get_ref().and_then(|i| i.downcast_ref::<Untrusted>())
}

fn refuse(msg: impl Into<String>) -> io::Error {
    io::Error::other(Untrusted(msg.into()))
}

/// Open with O_NOFOLLOW (and O_NONBLOCK, so that a FIFO planted in place of the file cannot
/// hang the open), then check on the descriptor that it is a regular file. `single_link`
/// also refuses a file with other hard links: writing it would write them too.
fn open_checked(path: &Path, opts: &mut OpenOptions, single_link: bool) -> io::Result<File> {
    let f = opts
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC)
        .open(path)
        .map_err(|e| {
            let link = matches!(e.raw_os_error(), Some(libc::ELOOP | libc::EMLINK))
                && fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink());
            if link {
                refuse("it is a symbolic link (not followed)")
            } else {
                e
            }
        })?;
    let m = f.metadata()?;
    if !m.is_file() {
        return Err(refuse("it is not a regular file"));
    }
    if single_link && m.nlink() > 1 {
        return Err(refuse(format!(
            "it has {} hard links (writing it would change the other names too)",
            m.nlink()
        )));
    }
    Ok(f)
}

/// Open an existing regular file for reading, never through a symlink.
pub fn open_nofollow_read(path: &Path) -> io::Result<File> {
    open_checked(path, OpenOptions::new().read(true), false)
}

/// Open (creating it with `mode` if absent) a regular file for reading and writing, never
/// through a symlink and never one with other hard links. For lock files.
pub fn open_nofollow_rw(path: &Path, mode: u32) -> io::Result<File> {
    open_checked(
        path,
        OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .mode(mode),
        true,
    )
}

/// Open (creating it with `mode` if absent) a regular file to append to, never through a
/// symlink and never one with other hard links. For logs.
pub fn open_nofollow_append(path: &Path, mode: u32) -> io::Result<File> {
    open_checked(path, OpenOptions::new().append(true).create(true).mode(mode), true)
}

/// Create a new file with O_EXCL: fails with `AlreadyExists` if anything (a link included,
/// even a dangling one) is there.
pub fn create_new(path: &Path, mode: u32) -> io::Result<File> {
    OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(mode)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(path)
}

/// Open a directory to fsync it. A link to a directory is followed: fsync changes nothing,
/// and a state directory may be a trusted link (/var/run -> /run).
pub fn open_dir(path: &Path) -> io::Result<File> {
    OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_DIRECTORY | libc::O_CLOEXEC)
        .open(path)
}

/// The program at `program` (a bare name is looked up in PATH), refused unless root could
/// trust running it: a regular file owned by root or the caller, writable by nobody else,
/// in a trusted directory (a symlink is followed and its target held to the same rules).
/// For `--sysctl-cmd` under sudo: otherwise any user who can write that file or its
/// directory chooses what root runs. Returns the path to run.
pub fn check_trusted_program(program: &Path, what: &str) -> Result<PathBuf, Error> {
    let found = if program.components().count() > 1 {
        program.to_path_buf()
    } else {
        std::env::var_os("PATH")
            .map(|p| std::env::split_paths(&p).map(|d| d.join(program)).collect::<Vec<_>>())
            .unwrap_or_default()
            .into_iter()
            .find(|p| p.is_file())
            .ok_or_else(|| Error::usage(format!("{what} {}: not found in PATH", program.display())))?
    };
    let real = fs::canonicalize(&found).map_err(|e| Error::usage(format!("{what} {}: {e}", found.display())))?;
    for p in [&found, &real] {
        if let Some(dir) = p.parent() {
            check_trusted_dir(dir, &format!("the directory of {what}"))?;
        }
    }
    let m = fs::metadata(&real).map_err(|e| Error::usage(format!("{what} {}: {e}", real.display())))?;
    // SAFETY: geteuid has no preconditions and cannot fail.
    let euid = unsafe { libc::geteuid() };
    if !m.is_file() {
        return Err(Error::usage(format!("{what} {}: not a regular file", real.display())));
    }
    if (m.uid() != 0 && m.uid() != euid) || m.mode() & 0o022 != 0 {
        return Err(Error::not_permitted(format!(
            "refusing to run {what} {} as uid {euid}: it is owned by uid {} with mode {:o}, so someone else could change what it does",
            real.display(),
            m.uid(),
            m.mode() & 0o7777
        ))
        .with_hint(format!("make it owned by root and writable only by root (chown root; chmod go-w {})", real.display())));
    }
    Ok(found)
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt as _;

    use super::*;

    fn is_root() -> bool {
        // SAFETY: geteuid has no preconditions and cannot fail.
        unsafe { libc::geteuid() == 0 }
    }

    fn chown(p: &Path, uid: u32) {
        std::os::unix::fs::lchown(p, Some(uid), None).expect("chown");
    }

    fn chmod(p: &Path, mode: u32) {
        fs::set_permissions(p, fs::Permissions::from_mode(mode)).expect("chmod");
    }

    #[test]
    fn a_private_dir_under_tmp_is_trusted() {
        let d = tempfile::tempdir().expect("tempdir");
        check_trusted_dir(d.path(), "the state directory").expect("trusted");
        // /tmp itself is sticky: a parent may be, the directory itself may not.
        let tmp = d.path().parent().expect("parent");
        if fs::metadata(tmp).expect("meta").mode() & 0o1022 == 0o1022 {
            check_trusted_parent(tmp, "x").expect("a sticky parent is fine");
            assert!(check_trusted_dir(tmp, "x").is_err());
        }
    }

    #[test]
    fn group_or_world_writable_dirs_are_refused_sticky_only_above() {
        let d = tempfile::tempdir().expect("tempdir");
        let sub = d.path().join("a/b");
        fs::create_dir_all(&sub).expect("mkdir");
        chmod(&d.path().join("a"), 0o777);
        let e = check_trusted_dir(&sub, "the state directory").expect_err("refused");
        assert_eq!(e.exit_code(), crate::error::exit::NOT_PERMITTED);
        let msg = e.to_string();
        assert!(
            msg.contains("/a on its path is writable by group or others (mode 777)"),
            "{msg}"
        );
        assert!(!msg.contains('\n'));
        chmod(&d.path().join("a"), 0o1777);
        check_trusted_dir(&sub, "x").expect("a sticky parent is fine");
        chmod(&sub, 0o1777);
        let e = check_trusted_dir(&sub, "x").expect_err("the directory itself may not be");
        assert!(e.to_string().contains(": it is writable"), "{e}");
        chmod(&sub, 0o775);
        assert!(check_trusted_dir(&sub, "x").is_err(), "group-writable");
    }

    #[test]
    #[cfg_attr(not(feature = "privileged-tests"), ignore = "privileged: needs root")]
    fn a_dir_or_parent_owned_by_another_user_is_refused() {
        assert!(is_root(), "this test needs root to chown (CI runs as root)");
        let d = tempfile::tempdir().expect("tempdir");
        let sub = d.path().join("a/state");
        fs::create_dir_all(&sub).expect("mkdir");
        chmod(&d.path().join("a"), 0o755);
        chown(&d.path().join("a"), 65534);
        let e = check_trusted_dir(&sub, "the state directory").expect_err("refused");
        assert!(
            e.to_string()
                .contains("/a on its path is owned by uid 65534 (mode 755), not root"),
            "{e}"
        );
        assert!(e.hint().is_some_and(|h| h.contains("chown root")));
        chown(&d.path().join("a"), 0);
        chown(&sub, 65534);
        let e = check_trusted_dir(&sub, "the state directory").expect_err("refused");
        assert!(e.to_string().contains(": it is owned by uid 65534"), "{e}");
    }

    #[test]
    #[cfg_attr(not(feature = "privileged-tests"), ignore = "privileged: needs root")]
    fn symlinks_are_followed_only_when_trusted_and_to_a_trusted_target() {
        assert!(is_root(), "this test needs root to chown (CI runs as root)");
        let d = tempfile::tempdir().expect("tempdir");
        let good = d.path().join("good");
        let foreign = d.path().join("foreign");
        fs::create_dir(&good).expect("mkdir");
        fs::create_dir(&foreign).expect("mkdir");
        chown(&foreign, 65534);
        // A root-owned link to a trusted directory (like /var/run -> /run), relative and absolute.
        std::os::unix::fs::symlink("good", d.path().join("rel")).expect("symlink");
        std::os::unix::fs::symlink(&good, d.path().join("abs")).expect("symlink");
        check_trusted_dir(&d.path().join("rel"), "x").expect("relative link");
        check_trusted_dir(&d.path().join("abs"), "x").expect("absolute link");
        check_trusted_dir(&d.path().join("rel/../good"), "x").expect("dot-dot after a link");
        // A link to a directory another user owns.
        std::os::unix::fs::symlink(&foreign, d.path().join("to-foreign")).expect("symlink");
        let e = check_trusted_dir(&d.path().join("to-foreign"), "x").expect_err("target");
        assert!(e.to_string().contains("owned by uid 65534"), "{e}");
        // A link another user owns, even to a good directory.
        let theirs = d.path().join("theirs");
        std::os::unix::fs::symlink(&good, &theirs).expect("symlink");
        chown(&theirs, 65534);
        let e = check_trusted_dir(&theirs, "x").expect_err("link owner");
        assert!(e.to_string().contains("the symbolic link"), "{e}");
        // A loop.
        std::os::unix::fs::symlink("loop", d.path().join("loop")).expect("symlink");
        assert!(check_trusted_dir(&d.path().join("loop"), "x").is_err());
    }

    #[test]
    fn a_file_already_there_is_replaced_in_its_directory_not_taken_for_one() {
        let d = tempfile::tempdir().expect("tempdir");
        let f = d.path().join("out.conf");
        fs::write(&f, "before\n").expect("write");
        assert_eq!(check_trusted_parent(&f, "--output").expect("trusted"), d.path());
        std::os::unix::fs::symlink("out.conf", d.path().join("link")).expect("symlink");
        assert_eq!(
            check_trusted_parent(&d.path().join("link"), "--output").expect("trusted"),
            d.path()
        );
        // The directory is still held to the rule.
        chmod(d.path(), 0o777);
        let e = check_trusted_parent(&f, "--output").expect_err("writable by others");
        assert_eq!(e.exit_code(), crate::error::exit::NOT_PERMITTED);
        chmod(d.path(), 0o700);
    }

    #[test]
    fn a_tree_is_trusted_only_if_every_directory_and_file_below_is() {
        let d = tempfile::tempdir().expect("tempdir");
        let ipv4 = d.path().join("net/ipv4");
        fs::create_dir_all(&ipv4).expect("mkdir");
        fs::write(ipv4.join("tcp_rmem"), "4096 131072 6291456\n").expect("write");
        check_trusted_tree(d.path(), "--sysctl-dir").expect("trusted");
        chmod(&ipv4, 0o777);
        let e = check_trusted_tree(d.path(), "--sysctl-dir").expect_err("writable by others");
        assert_eq!(e.exit_code(), crate::error::exit::NOT_PERMITTED);
        assert!(
            e.to_string()
                .contains("net/ipv4 on its path is writable by group or others"),
            "{e}"
        );
        chmod(&ipv4, 0o755);
        // A hard link: a write to the key would land in the file elsewhere.
        let elsewhere = tempfile::tempdir().expect("tempdir");
        fs::hard_link(ipv4.join("tcp_rmem"), elsewhere.path().join("victim")).expect("link");
        let e = check_trusted_tree(d.path(), "--sysctl-dir").expect_err("a hard link");
        assert!(e.to_string().contains("tcp_rmem has 2 hard links"), "{e}");
        assert_eq!(e.exit_code(), crate::error::exit::NOT_PERMITTED);
        fs::remove_file(elsewhere.path().join("victim")).expect("rm");
        // A symlink is not followed (the reader refuses it), so it is no reason to refuse.
        std::os::unix::fs::symlink("/etc", ipv4.join("conf")).expect("symlink");
        check_trusted_tree(d.path(), "--sysctl-dir").expect("trusted");
    }

    #[test]
    #[cfg_attr(not(feature = "privileged-tests"), ignore = "privileged: needs root")]
    fn a_tree_with_a_file_or_directory_of_another_user_is_refused() {
        assert!(is_root(), "this test needs root to chown (CI runs as root)");
        let d = tempfile::tempdir().expect("tempdir");
        let ipv4 = d.path().join("net/ipv4");
        fs::create_dir_all(&ipv4).expect("mkdir");
        let key = ipv4.join("tcp_rmem");
        fs::write(&key, "4096 131072 6291456\n").expect("write");
        chown(&key, 65534);
        let e = check_trusted_tree(d.path(), "--sysctl-dir").expect_err("their file");
        assert!(e.to_string().contains("tcp_rmem is owned by uid 65534"), "{e}");
        assert_eq!(e.exit_code(), crate::error::exit::NOT_PERMITTED);
        chown(&key, 0);
        chown(&ipv4, 65534);
        let e = check_trusted_tree(d.path(), "--sysctl-dir").expect_err("their directory");
        assert!(
            e.to_string().contains("net/ipv4 on its path is owned by uid 65534"),
            "{e}"
        );
    }

    #[test]
    fn a_missing_path_or_a_file_is_bad_input() {
        let d = tempfile::tempdir().expect("tempdir");
        let e = check_trusted_dir(&d.path().join("nope"), "x").expect_err("missing");
        assert_eq!(e.exit_code(), crate::error::exit::USAGE);
        fs::write(d.path().join("f"), "").expect("write");
        let e = check_trusted_dir(&d.path().join("f"), "x").expect_err("file");
        assert!(e.to_string().contains("is not a directory"), "{e}");
    }

    #[test]
    fn nofollow_opens_refuse_links_fifos_and_extra_hard_links() {
        let d = tempfile::tempdir().expect("tempdir");
        let target = d.path().join("target");
        fs::write(&target, "secret\n").expect("write");
        chmod(&target, 0o600);
        let link = d.path().join("link");
        std::os::unix::fs::symlink(&target, &link).expect("symlink");
        for r in [
            open_nofollow_read(&link),
            open_nofollow_rw(&link, 0o644),
            open_nofollow_append(&link, 0o644),
        ] {
            let e = r.expect_err("a link");
            assert!(untrusted(&e).is_some_and(|u| u.0.contains("symbolic link")), "{e}");
        }
        assert_eq!(
            create_new(&link, 0o644).expect_err("exists").kind(),
            io::ErrorKind::AlreadyExists
        );
        let hard = d.path().join("hard");
        fs::hard_link(&target, &hard).expect("link");
        let e = open_nofollow_rw(&hard, 0o644).expect_err("two links");
        assert!(untrusted(&e).is_some_and(|u| u.0.contains("hard links")), "{e}");
        let fifo = d.path().join("fifo");
        let c = std::ffi::CString::new(fifo.as_os_str().as_encoded_bytes()).expect("cstring");
        // SAFETY: mkfifo on a NUL-terminated path this test owns.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o644) }, 0);
        let e = open_nofollow_read(&fifo).expect_err("a fifo");
        assert!(untrusted(&e).is_some_and(|u| u.0.contains("not a regular file")), "{e}");
        assert!(open_nofollow_append(&fifo, 0o644).is_err());
        // The target is untouched: content and mode.
        assert_eq!(fs::read_to_string(&target).expect("read"), "secret\n");
        assert_eq!(fs::metadata(&target).expect("meta").mode() & 0o777, 0o600);
        open_dir(d.path()).expect("a directory");
        assert!(open_dir(&link).is_err(), "a file");
    }
}
