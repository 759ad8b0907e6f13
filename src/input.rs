//! Reading what a user points tcptune at (a sysctl FILE, stdin, a `--profile` file), and the
//! configuration files other programs own (sysctl.d, through [`read_bounded`]), with bounds:
//! only regular files, a size cap, and a deadline on stdin, so that a FIFO, `/dev/zero` or a
//! pipe that never closes is an error at once rather than a hang or a read that grows without
//! end. No error quotes what the file holds: only where (line, column) and what was expected.

use std::fs::OpenOptions;
use std::io::Read;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;
use std::time::Duration;

use crate::error::Error;

/// How long stdin may stay silent (no byte and no end of input) before `apply -` gives up.
/// A pipeline upstream (`cat`, `tcptune advise --rtt ... --bandwidth ...`) writes at once;
/// only a pipe that stays open and silent (a forgotten terminal, a stuck producer) waits this long.
pub const STDIN_IDLE: Duration = Duration::from_secs(10);

/// A path for a one-line message: control characters escaped.
pub fn shown(path: &Path) -> String {
    path.display().to_string().escape_debug().to_string()
}

/// Why a file was not read whole: it could not be opened or read, it is not a regular file
/// (decided on the descriptor, before a byte is read), or it is larger than the cap.
#[derive(Debug)]
pub enum Refused {
    Io(std::io::Error),
    /// What it is instead: "a FIFO", "a character device", ...
    NotRegular(&'static str),
    /// The cap it passed, in bytes.
    TooLarge(u64),
}

impl std::fmt::Display for Refused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Io(e) => write!(f, "{e}"),
            Self::NotRegular(kind) => write!(f, "it is {kind}, not a regular file"),
            Self::TooLarge(max) => write!(f, "it is larger than {max} bytes"),
        }
    }
}

/// What a file that is not a regular one is, for messages.
pub fn kind_of(ft: std::fs::FileType) -> &'static str {
    use std::os::unix::fs::FileTypeExt as _;
    if ft.is_file() {
        "a regular file"
    } else if ft.is_dir() {
        "a directory"
    } else if ft.is_fifo() {
        "a FIFO"
    } else if ft.is_char_device() {
        "a character device"
    } else if ft.is_block_device() {
        "a block device"
    } else if ft.is_socket() {
        "a socket"
    } else {
        "not a regular file"
    }
}

/// The bytes of the regular file at `path` (a symlink is followed, as a user who names a
/// file means its target), at most `max` of them. Never blocks and never floods: the open is
/// O_NONBLOCK (opening a FIFO for reading otherwise waits for a writer, forever), the
/// descriptor must then be a regular file (a FIFO, /dev/zero, a directory are refused before
/// a byte is read), and no more than `max + 1` bytes are read (the file may grow between
/// fstat and read).
pub fn read_bounded(path: &Path, max: u64) -> Result<Vec<u8>, Refused> {
    let f = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_CLOEXEC)
        .open(path)
        .map_err(Refused::Io)?;
    let meta = f.metadata().map_err(Refused::Io)?;
    if !meta.is_file() {
        return Err(Refused::NotRegular(kind_of(meta.file_type())));
    }
    if meta.len() > max {
        return Err(Refused::TooLarge(max));
    }
    let mut buf = Vec::new();
    f.take(max + 1).read_to_end(&mut buf).map_err(Refused::Io)?;
    if buf.len() as u64 > max {
        return Err(Refused::TooLarge(max));
    }
    Ok(buf)
}

/// Read a regular file of at most `max` bytes as UTF-8 ([`read_bounded`]). `what` names it
/// in errors ("profile", "sysctl file"). Anything else is a usage error (exit 2), decided
/// before a byte is read. No error quotes the file's content.
pub fn read_regular(path: &Path, max: usize, what: &str) -> Result<String, Error> {
    let p = shown(path);
    let buf = read_regular_bytes(path, max, what)?;
    String::from_utf8(buf).map_err(|e| {
        let (line, column) = line_column(e.as_bytes(), e.utf8_error().valid_up_to());
        Error::usage(format!(
            "cannot read {what} {p}: not a text file (invalid UTF-8 at line {line}, column {column})"
        ))
    })
}

/// The bytes of a regular file of at most `max` bytes ([`read_bounded`]), with
/// [`read_regular`]'s errors: for a reader that decides itself what text it takes.
pub fn read_regular_bytes(path: &Path, max: usize, what: &str) -> Result<Vec<u8>, Error> {
    let p = shown(path);
    read_bounded(path, max as u64).map_err(|r| match r {
        Refused::Io(e) => Error::usage(format!("cannot read {what} {p}: {e}")),
        Refused::NotRegular(_) => Error::usage(format!("cannot read {what} {p}: {r}"))
            .with_hint("save it to a file first, or pipe it to `tcptune apply -`"),
        Refused::TooLarge(_) => too_large(what, &p, max),
    })
}

/// The 1-based line and column (in bytes) of byte `offset` of `text`.
pub fn line_column(text: &[u8], offset: usize) -> (usize, usize) {
    let before = &text[..offset.min(text.len())];
    let line = 1 + before.iter().filter(|&&b| b == b'\n').count();
    let start = before.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
    (line, offset - start + 1)
}

fn too_large(what: &str, p: &str, max: usize) -> Error {
    Error::usage(format!("{what} {p} is larger than {max} bytes: not a {what}"))
}

/// Read stdin to its end: at most `max` bytes, and an error when no byte arrives for
/// [`STDIN_IDLE`] (the clock restarts with every read that returns data).
pub fn read_stdin(max: usize) -> Result<String, Error> {
    read_fd_bounded(&mut std::io::stdin().lock(), libc::STDIN_FILENO, max, STDIN_IDLE)
}

fn read_fd_bounded(r: &mut dyn Read, fd: libc::c_int, max: usize, idle: Duration) -> Result<String, Error> {
    let idle_ms = libc::c_int::try_from(idle.as_millis()).unwrap_or(libc::c_int::MAX);
    let mut buf = Vec::new();
    // Larger than StdinLock's internal buffer, so each read goes straight to the fd and
    // never blocks after poll said it is readable.
    let mut chunk = vec![0u8; 64 * 1024];
    loop {
        let mut pfd = libc::pollfd {
            fd,
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: one valid pollfd, count 1; poll writes only its revents.
        let n = unsafe { libc::poll(&raw mut pfd, 1, idle_ms) };
        if n < 0 {
            let e = std::io::Error::last_os_error();
            if e.kind() == std::io::ErrorKind::Interrupted {
                continue;
            }
            return Err(Error::usage(format!("cannot read stdin: {e}")));
        }
        if n == 0 {
            return Err(Error::usage(format!(
                "stdin: no input within {} s and no end of input",
                idle.as_secs()
            ))
            .with_hint("give the sysctl FILE, or close the input (Ctrl-D on a terminal)"));
        }
        let got = match r.read(&mut chunk) {
            Ok(g) => g,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(Error::usage(format!("cannot read stdin: {e}"))),
        };
        if got == 0 {
            break;
        }
        buf.extend_from_slice(&chunk[..got]);
        if buf.len() > max {
            return Err(Error::usage(format!(
                "stdin is larger than {max} bytes: not a sysctl file"
            )));
        }
    }
    String::from_utf8(buf).map_err(|_| Error::usage("cannot read stdin: not a text file (invalid UTF-8)"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_bounded_regular_files() {
        let dir = tempfile::tempdir().expect("tempdir");
        let ok = dir.path().join("ok.toml");
        std::fs::write(&ok, "a = 1\n").expect("write");
        assert_eq!(read_regular(&ok, 100, "profile").expect("read"), "a = 1\n");
        let e = read_regular(&ok, 3, "profile").expect_err("too big").to_string();
        assert!(e.contains("larger than 3 bytes"), "{e}");
        let e = read_regular(dir.path(), 100, "profile").expect_err("dir").to_string();
        assert!(e.contains("a directory"), "{e}");
        let e = read_regular(Path::new("/dev/zero"), 100, "profile")
            .expect_err("device")
            .to_string();
        assert!(e.contains("character device"), "{e}");
        // A FIFO with no writer: opening it must not wait.
        let fifo = dir.path().join("fifo");
        let c = std::ffi::CString::new(fifo.to_str().expect("utf8")).expect("cstr");
        // SAFETY: a valid NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        let e = read_regular(&fifo, 100, "profile").expect_err("fifo").to_string();
        assert!(e.contains("a FIFO"), "{e}");
        let bin = dir.path().join("bin");
        std::fs::write(&bin, b"a = 1\nb = \"SECRET\xff\"\n").expect("write");
        let e = read_regular(&bin, 100, "profile").expect_err("not UTF-8").to_string();
        assert!(
            e.ends_with("not a text file (invalid UTF-8 at line 2, column 12)"),
            "{e}"
        );
        assert!(!e.contains("SECRET"), "{e}");
        assert_eq!(line_column(b"ab\ncd", 4), (2, 2));
        assert_eq!(line_column(b"", 0), (1, 1));
        let e = read_regular(&dir.path().join("a\nb"), 100, "profile")
            .expect_err("missing")
            .to_string();
        assert!(!e.contains('\n'), "{e}");
    }

    #[test]
    fn a_silent_pipe_times_out_and_a_big_one_is_cut() {
        let mut fds = [0; 2];
        // SAFETY: fds has room for the two descriptors pipe() writes.
        assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0);
        // Close-on-exec, as std's own pipes: a program another test starts meanwhile must not
        // hold the write end open (the EOF below would never come).
        for fd in fds {
            // SAFETY: fcntl on a descriptor just opened here; no pointers.
            assert_eq!(unsafe { libc::fcntl(fd, libc::F_SETFD, libc::FD_CLOEXEC) }, 0);
        }
        // SAFETY: both descriptors were just opened and are owned here alone.
        let (mut rd, mut wr) = unsafe {
            use std::os::fd::FromRawFd;
            (std::fs::File::from_raw_fd(fds[0]), std::fs::File::from_raw_fd(fds[1]))
        };
        std::io::Write::write_all(&mut wr, b"net.core.rmem_max = 1\n").expect("write");
        // Data, then silence with the write end still open.
        let t = std::time::Instant::now();
        let e = read_fd_bounded(&mut rd, fds[0], 1000, Duration::from_millis(200))
            .expect_err("idle")
            .to_string();
        assert!(e.contains("no input within"), "{e}");
        assert!(t.elapsed() < Duration::from_secs(5));
        // More than the cap: refused without reading it all.
        std::io::Write::write_all(&mut wr, &[b'#'; 2000]).expect("write");
        let e = read_fd_bounded(&mut rd, fds[0], 1000, Duration::from_millis(200))
            .expect_err("big")
            .to_string();
        assert!(e.contains("larger than 1000"), "{e}");
        drop(wr);
        // Closed: the rest is read.
        let rest = read_fd_bounded(&mut rd, fds[0], 1_000_000, Duration::from_millis(200)).expect("eof");
        assert!(rest.len() < 2000);
    }
}
