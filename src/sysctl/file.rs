//! The sysctl-file format `tcptune apply` reads, and the checks a value must pass before
//! tcptune will write it. Pure: no I/O.
//!
//! # Syntax
//! What `sysctl -p` (procps), systemd-sysctl (sysctl.d(5)) and FreeBSD/macOS
//! `/etc/sysctl.conf` have in common, narrowed to what is safe to write:
//! * blank lines, and lines whose first non-blank character is `#` or `;`, are comments;
//! * `key = value` or `key=value`; blanks around `=` and at the ends are dropped, blanks
//!   inside a multi-field value are folded to one space (`4096\t131072 6291456`);
//! * a leading `-` (systemd: "ignore errors") makes a key that this kernel lacks, or that
//!   is read-only here, a note instead of an error; the line must still be valid;
//! * FreeBSD/macOS only: a ` # comment` after the value is dropped (rc.d/sysctl ignores
//!   it); on Linux a `#` in a value is refused, because procps would write it to the kernel.
//!
//! Refused, with the line number: keys outside the OS's networking tree, keys written with
//! `/` separators (sysctl.d allows them; tcptune wants one spelling), empty components and
//! `..`, glob patterns, quotes, non-ASCII, negative numbers, integers that overflow the
//! kernel's type, a key set twice, and files over [`MAX_FILE_BYTES`].

use crate::os::Os;

/// Larger input is refused: a sysctl file is a few hundred bytes.
pub const MAX_FILE_BYTES: usize = 1 << 20;

/// The largest C `int`: what Linux (and most BSD oids) keep these values in.
pub const INT_MAX: u64 = i32::MAX as u64;
/// Keys kept in a C `long` (64-bit) or `u_long`.
pub const LONG_MAX: u64 = i64::MAX as u64;

/// One `key = value` line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Assignment {
    /// 1-based line number in the file.
    pub line: usize,
    pub key: String,
    /// Fields joined by single spaces.
    pub value: String,
    /// The line had a leading `-`.
    pub ignore_errors: bool,
}

/// A problem on one line.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("line {line}: {msg}")]
pub struct LineError {
    pub line: usize,
    pub msg: String,
}

/// Parse and check a whole file. Every problem is reported, in line order.
pub fn parse(text: &str, os: Os) -> Result<Vec<Assignment>, Vec<LineError>> {
    let mut out: Vec<Assignment> = Vec::new();
    let mut errors = Vec::new();
    if text.len() > MAX_FILE_BYTES {
        errors.push(LineError {
            line: 0,
            msg: format!("larger than {MAX_FILE_BYTES} bytes: not a sysctl file"),
        });
        return Err(errors);
    }
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    // Key → line of its first assignment: a lookup per line, where a scan of `out` made
    // 10,000 lines quadratic.
    let mut seen: std::collections::HashMap<String, usize> = std::collections::HashMap::new();
    for (i, raw) in text.split('\n').enumerate() {
        let line = i + 1;
        match parse_line(raw, os) {
            Ok(None) => {}
            Ok(Some((key, value, ignore_errors))) => {
                if let Some(prev) = seen.get(&key) {
                    errors.push(LineError {
                        line,
                        msg: format!("{key} is already set on line {prev}: keep one"),
                    });
                    continue;
                }
                seen.insert(key.clone(), line);
                out.push(Assignment {
                    line,
                    key,
                    value,
                    ignore_errors,
                });
            }
            Err(msg) => errors.push(LineError { line, msg }),
        }
    }
    if errors.is_empty() { Ok(out) } else { Err(errors) }
}

/// One line: None for a comment or blank line.
fn parse_line(raw: &str, os: Os) -> Result<Option<(String, String, bool)>, String> {
    let s = raw.trim();
    if s.is_empty() || s.starts_with('#') || s.starts_with(';') {
        return Ok(None);
    }
    if let Some(i) = s
        .char_indices()
        .find(|(_, c)| !c.is_ascii() || (c.is_ascii_control() && *c != '\t'))
        .map(|(i, _)| i)
    {
        // The place, not the character: it may be any byte of any file.
        let lead = raw.len() - raw.trim_start().len();
        let column = raw[..lead + i].chars().count() + 1;
        return Err(format!(
            "column {column}: a character that is not printable ASCII: sysctl files are plain ASCII"
        ));
    }
    let (s, ignore_errors) = match s.strip_prefix('-') {
        Some(rest) => (rest.trim_start(), true),
        None => (s, false),
    };
    let Some((k, v)) = s.split_once('=') else {
        // The line is not quoted back: FILE may be a file that is not a sysctl file at all
        // (`apply /etc/shadow`), and its lines are no business of the terminal or a log.
        return Err("expected `key = value` (no '=' on this line)".into());
    };
    let key = k.trim();
    check_key(key, os)?;
    let mut value = v.trim();
    if os != Os::Linux
        && let Some(i) = value.find('#')
        && (i == 0 || value[..i].ends_with([' ', '\t']))
    {
        value = value[..i].trim_end();
    }
    let value = check_value(key, value, os)?;
    Ok(Some((key.to_string(), value, ignore_errors)))
}

/// The trees a sysctl name starts with, on Linux (/proc/sys) and the BSDs (sysctl(3) MIB).
const SYSCTL_TREES: [&str; 16] = [
    "abi", "compat", "crypto", "debug", "dev", "fs", "hw", "kern", "kernel", "machdep", "net", "security", "sunrpc",
    "user", "vfs", "vm",
];

/// `key` as a message may show it: quoted (an excerpt) only when it is shaped like a sysctl
/// name — components of lowercase letters, digits, `_` and `-` separated by dots
/// (`kernel.panic`, `k.x0`), or, under a known tree (`net/ipv4/tcp_rmem`, an interface
/// `net.ipv4.conf.ETH0.rp_filter`), by `.` or `/` with any letters and `:`. Anything else
/// before an `=` may be any text of any file (`apply /etc/shadow`, a private key's base64
/// with its `/` and `=` padding, an `.env` line) and is named, not quoted.
pub fn shown_key(key: &str) -> String {
    let part = |p: &str, any_case: bool| {
        p.bytes().all(|b| {
            b.is_ascii_digit()
                || b.is_ascii_lowercase()
                || matches!(b, b'_' | b'-')
                || (any_case && (b.is_ascii_uppercase() || b == b':'))
        })
    };
    let known = key
        .split(['.', '/'])
        .next()
        .is_some_and(|top| SYSCTL_TREES.contains(&top));
    let shaped = if known {
        key.contains(['.', '/']) && key.split(['.', '/']).all(|p| part(p, true))
    } else {
        key.contains('.') && key.split('.').all(|p| !p.is_empty() && part(p, false))
    };
    if shaped {
        excerpt(key)
    } else {
        "the text before '='".to_string()
    }
}

/// Why `key` is not one tcptune writes, or Ok.
pub fn check_key(key: &str, os: Os) -> Result<(), String> {
    // The text before '=' may be any line of any file: only a sysctl name is shown.
    let shown = shown_key(key);
    if key.is_empty() {
        return Err("missing key before '='".into());
    }
    if key.contains('/') {
        return Err(format!(
            "{shown}: keys with '/' separators are not accepted: write it with dots (e.g. net.ipv4.tcp_rmem)"
        ));
    }
    if key.contains("..") || key.starts_with('.') || key.ends_with('.') {
        return Err(format!(
            "{shown}: empty key component ('..' or a leading or trailing '.')"
        ));
    }
    if key.contains(['*', '?', '[', ']']) {
        return Err(format!("{shown}: glob patterns are not supported: name each key"));
    }
    if let Some((i, c)) = key
        .char_indices()
        .find(|(_, c)| !(c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-')))
    {
        // A blank or a punctuation mark says what is wrong; any other character is the file's.
        let what = if c == ' ' || c == '\t' || c.is_ascii_punctuation() {
            format!("invalid character {c:?}")
        } else {
            "an invalid character".to_string()
        };
        let column = key[..i].chars().count() + 1;
        return Err(format!("{shown}: {what} in key (its character {column})"));
    }
    if !os.is_network_key(key) {
        let trees = match os {
            Os::Linux => "net.*",
            Os::Freebsd | Os::Macos => "kern.ipc.*, net.inet.*, net.inet6.*",
        };
        return Err(format!(
            "{shown} is outside the networking tree ({trees}): tcptune changes networking keys only"
        ));
    }
    Ok(())
}

/// At most [`EXCERPT_CHARS`] characters of file text for an error message, control
/// characters escaped: enough to find the line, too little to copy a file through errors.
pub const EXCERPT_CHARS: usize = 40;

pub fn excerpt(s: &str) -> String {
    let mut out: String = s
        .chars()
        .take(EXCERPT_CHARS)
        .collect::<String>()
        .escape_debug()
        .to_string();
    if s.chars().count() > EXCERPT_CHARS {
        out.push_str("...");
    }
    out
}

/// What a key's value must look like.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// One integer in `min..=max`.
    Int { min: u64, max: u64 },
    /// Exactly `n` integers in `min..=max`; `ordered`: each at most the next (min ≤ default ≤ max).
    Ints {
        n: usize,
        min: u64,
        max: u64,
        ordered: bool,
    },
    /// One name (a congestion-control algorithm, a qdisc).
    Name,
    /// Names separated by blanks.
    Names,
    /// Not known to tcptune: integers within [`LONG_MAX`] or names, checked against the
    /// running value's shape before writing ([`check_against_current`]).
    Unknown,
}

/// The kind of the keys tcptune knows; [`Kind::Unknown`] for the rest of the tree.
pub fn kind(os: Os, key: &str) -> Kind {
    let int = Kind::Int { min: 0, max: INT_MAX };
    let flag = |max| Kind::Int { min: 0, max };
    match os {
        Os::Linux => match key {
            "net.ipv4.tcp_rmem" | "net.ipv4.tcp_wmem" => Kind::Ints {
                n: 3,
                min: 1,
                max: INT_MAX,
                ordered: true,
            },
            "net.ipv4.tcp_mem" | "net.ipv4.udp_mem" => Kind::Ints {
                n: 3,
                min: 0,
                max: LONG_MAX,
                ordered: true,
            },
            "net.ipv4.ip_local_port_range" => Kind::Ints {
                n: 2,
                min: 1,
                max: 65535,
                ordered: true,
            },
            "net.ipv4.tcp_congestion_control" | "net.core.default_qdisc" => Kind::Name,
            "net.ipv4.tcp_allowed_congestion_control" => Kind::Names,
            "net.ipv4.tcp_window_scaling"
            | "net.ipv4.tcp_sack"
            | "net.ipv4.tcp_slow_start_after_idle"
            | "net.ipv4.tcp_no_metrics_save"
            | "net.ipv4.tcp_moderate_rcvbuf" => flag(1),
            "net.ipv4.tcp_mtu_probing" | "net.ipv4.tcp_timestamps" => flag(2),
            "net.ipv4.tcp_notsent_lowat" => Kind::Int {
                min: 0,
                max: u64::from(u32::MAX),
            },
            "net.core.rmem_max"
            | "net.core.wmem_max"
            | "net.core.rmem_default"
            | "net.core.wmem_default"
            | "net.core.optmem_max"
            | "net.core.netdev_max_backlog"
            | "net.core.netdev_budget"
            | "net.core.somaxconn"
            | "net.ipv4.tcp_limit_output_bytes"
            | "net.ipv4.tcp_max_syn_backlog"
            | "net.ipv4.tcp_base_mss"
            | "net.ipv4.tcp_fastopen" => int,
            _ => Kind::Unknown,
        },
        Os::Freebsd | Os::Macos => match key {
            // u_long on FreeBSD; XNU takes it as a 64-bit quad too.
            "kern.ipc.maxsockbuf" => Kind::Int { min: 1, max: LONG_MAX },
            "net.inet.tcp.cc.algorithm" | "net.inet.tcp.functions_default" => Kind::Name,
            "net.inet.tcp.recvbuf_auto"
            | "net.inet.tcp.sendbuf_auto"
            | "net.inet.tcp.rfc1323"
            | "net.inet.tcp.sack.enable" => flag(2),
            "net.inet.tcp.recvbuf_max"
            | "net.inet.tcp.sendbuf_max"
            | "net.inet.tcp.sendbuf_inc"
            | "net.inet.tcp.recvbuf_inc"
            | "net.inet.tcp.sendspace"
            | "net.inet.tcp.recvspace"
            | "net.inet.tcp.autorcvbufmax"
            | "net.inet.tcp.autosndbufmax" => int,
            _ => Kind::Unknown,
        },
    }
}

/// One field of a value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Token<'a> {
    Int(u64),
    Name(&'a str),
}

fn tokens<'v>(key: &str, value: &'v str) -> Result<Vec<Token<'v>>, String> {
    value
        .split_whitespace()
        .map(|t| {
            let first = t.as_bytes()[0];
            if first == b'-' && t.len() > 1 && t[1..].bytes().all(|b| b.is_ascii_digit()) {
                Err(format!(
                    "{key}: negative value {} refused (tcptune never sets one)",
                    excerpt(t)
                ))
            } else if first.is_ascii_digit() || first == b'-' || first == b'+' {
                if !t.bytes().all(|b| b.is_ascii_digit()) {
                    return Err(format!("{key}: \"{}\" is not a whole number", excerpt(t)));
                }
                t.parse::<u64>()
                    .map(Token::Int)
                    .map_err(|_| format!("{key}: {} is too large", excerpt(t)))
            } else if t
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.'))
            {
                Ok(Token::Name(t))
            } else {
                Err(format!("{key}: \"{}\" is neither a number nor a name", excerpt(t)))
            }
        })
        .collect()
}

/// A value as a file holds it: its words separated by one space. Err for a character no value
/// holds (a control character but the tab between fields, or a blank other than space and
/// tab, such as U+2028): a line break in a value would forge the next line of a file.
pub fn normalize_value(value: &str) -> Result<String, String> {
    if let Some(c) = value
        .chars()
        .find(|c| (c.is_control() && *c != '\t') || (c.is_whitespace() && !matches!(c, ' ' | '\t')))
    {
        return Err(format!(
            "the value \"{}\" holds {}: no sysctl value does",
            excerpt(value),
            c.escape_unicode()
        ));
    }
    Ok(value.split_whitespace().collect::<Vec<_>>().join(" "))
}

/// Check a value against its key's kind; returns it with blanks folded.
pub fn check_value(key: &str, value: &str, os: Os) -> Result<String, String> {
    let shown = excerpt(value);
    if value.is_empty() {
        return Err(format!("{key}: missing value after '='"));
    }
    normalize_value(value).map_err(|why| format!("{key}: {why}"))?;
    if value.contains(['"', '\'']) {
        return Err(format!(
            "{key}: quotes are not part of the sysctl file format: write {key} = VALUE without them"
        ));
    }
    if value.contains('#') {
        return Err(format!(
            "{key}: '#' in the value: comments go on their own line (sysctl would write it to the kernel)"
        ));
    }
    let toks = tokens(key, value)?;
    let ints = || -> Vec<u64> {
        toks.iter()
            .filter_map(|t| match *t {
                Token::Int(n) => Some(n),
                Token::Name(_) => None,
            })
            .collect()
    };
    let in_range = |n: u64, min: u64, max: u64| -> Result<(), String> {
        if n < min {
            Err(format!("{key}: {n} is below the minimum {min}"))
        } else if n > max {
            Err(format!("{key}: {n} overflows the kernel's type (at most {max})"))
        } else {
            Ok(())
        }
    };
    match kind(os, key) {
        Kind::Int { min, max } => {
            let f = ints();
            if toks.len() != 1 || f.len() != 1 {
                return Err(format!("{key}: expected one whole number, found \"{shown}\""));
            }
            in_range(f[0], min, max)?;
        }
        Kind::Ints { n, min, max, ordered } => {
            let f = ints();
            if toks.len() != n || f.len() != n {
                return Err(format!("{key}: expected {n} whole numbers, found \"{shown}\""));
            }
            for x in &f {
                in_range(*x, min, max)?;
            }
            if ordered && f.windows(2).any(|w| w[0] > w[1]) {
                return Err(format!(
                    "{key}: fields must not decrease (min <= default <= max), found \"{shown}\""
                ));
            }
        }
        Kind::Name => {
            if !matches!(toks.as_slice(), [Token::Name(_)]) {
                return Err(format!("{key}: expected one name (e.g. bbr, fq), found \"{shown}\""));
            }
        }
        Kind::Names => {
            if toks.iter().any(|t| matches!(t, Token::Int(_))) {
                return Err(format!("{key}: expected names, found \"{shown}\""));
            }
        }
        Kind::Unknown => {
            for n in ints() {
                in_range(n, 0, LONG_MAX)?;
            }
        }
    }
    Ok(toks
        .iter()
        .map(|t| match t {
            Token::Int(n) => n.to_string(),
            Token::Name(s) => (*s).to_string(),
        })
        .collect::<Vec<_>>()
        .join(" "))
}

/// A key tcptune does not know must keep the shape of its running value: as many integers,
/// each within a C int unless the running value already exceeds one (a wider type).
pub fn check_against_current(os: Os, key: &str, new: &str, current: &str) -> Result<(), String> {
    if kind(os, key) != Kind::Unknown {
        return Ok(());
    }
    let cur: Option<Vec<u64>> = current.split_whitespace().map(|t| t.parse().ok()).collect();
    let Some(cur) = cur.filter(|c| !c.is_empty()) else {
        return Ok(());
    };
    let new_f: Option<Vec<u64>> = new.split_whitespace().map(|t| t.parse().ok()).collect();
    let Some(new_f) = new_f else {
        return Err(format!(
            "{key}: the running value \"{current}\" is numeric; \"{new}\" is not"
        ));
    };
    if new_f.len() != cur.len() {
        return Err(format!(
            "{key}: the running value \"{current}\" has {} field(s); \"{new}\" has {}",
            cur.len(),
            new_f.len()
        ));
    }
    for (c, n) in cur.iter().zip(&new_f) {
        let max = if *c > INT_MAX { LONG_MAX } else { INT_MAX };
        if *n > max {
            return Err(format!("{key}: {n} overflows the kernel's type (at most {max})"));
        }
    }
    Ok(())
}

/// Whether a running value (the prior value in a snapshot) is one tcptune can write back
/// as it was: plain fields — numbers (negative too: the kernel's own values) and names.
/// `apply` refuses a key whose value is not, so that every snapshot can be reverted; `revert`
/// refuses a snapshot holding anything else (a damaged or planted file).
pub fn check_restorable(key: &str, value: &str) -> Result<(), String> {
    if value.trim().is_empty() {
        return Err(format!(
            "{key}: its running value is empty, which tcptune could not restore"
        ));
    }
    if value.len() > 4096
        || !value
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b" \t_.,:-".contains(&b))
    {
        return Err(format!(
            "{key}: its running value {value:?} is not plain numbers or names, which tcptune could not restore"
        ));
    }
    Ok(())
}

/// Whether `value` is one a kernel could be running for `key`: for a key tcptune knows, one
/// line of its kind (the count of whole numbers, each within the kernel's type, or names);
/// for another key, numbers within a C long (negative too) and names. The fields' order is
/// not asked: the kernel does not enforce min <= default <= max. For what comes from outside
/// as a running value (a far end's, a snapshot's prior value): `apply` would refuse to write
/// a value no kernel holds, and so does what reads or restores one.
pub fn check_running(os: Os, key: &str, value: &str) -> Result<(), String> {
    let shown = excerpt(value);
    let kind = kind(os, key);
    if kind != Kind::Unknown && value.trim().contains(['\n', '\r']) {
        return Err(format!("{key}: \"{shown}\" is more than one line"));
    }
    let fields: Vec<&str> = value.split_whitespace().collect();
    let numbers = |min_ok: bool| -> Result<Vec<u64>, String> {
        fields
            .iter()
            .map(|f| {
                let digits = f.strip_prefix('-').filter(|_| min_ok).unwrap_or(f);
                if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
                    return Err(format!("{key}: \"{}\" is not a whole number", excerpt(f)));
                }
                digits
                    .parse::<u64>()
                    .map_err(|_| format!("{key}: {} is too large", excerpt(f)))
            })
            .collect()
    };
    let within = |f: &[u64], max: u64| match f.iter().find(|n| **n > max) {
        Some(n) => Err(format!("{key}: {n} overflows the kernel's type (at most {max})")),
        None => Ok(()),
    };
    match kind {
        Kind::Int { max, .. } | Kind::Ints { max, .. } => {
            let n = match kind {
                Kind::Ints { n, .. } => n,
                _ => 1,
            };
            let f = numbers(false)?;
            if f.len() != n {
                return Err(format!("{key}: expected {n} whole number(s), found \"{shown}\""));
            }
            within(&f, max)
        }
        Kind::Name if fields.len() != 1 => Err(format!("{key}: expected one name, found \"{shown}\"")),
        Kind::Name | Kind::Names => Ok(()),
        Kind::Unknown => {
            // Whole numbers among its fields (a MAC address or a name is neither checked).
            let numeric = fields
                .iter()
                .map(|f| f.strip_prefix('-').unwrap_or(f))
                .filter(|f| !f.is_empty() && f.bytes().all(|b| b.is_ascii_digit()));
            match numeric.map(str::parse::<u64>).collect::<Result<Vec<_>, _>>() {
                Ok(f) => within(&f, LONG_MAX),
                Err(_) => Err(format!("{key}: \"{shown}\" holds a number no kernel type holds")),
            }
        }
    }
}

/// The congestion-control keys, whose value must be an algorithm the kernel offers.
pub fn congestion_control_lists(os: Os, key: &str) -> Option<&'static str> {
    match (os, key) {
        (Os::Linux, "net.ipv4.tcp_congestion_control") => Some("net.ipv4.tcp_available_congestion_control"),
        (Os::Freebsd, "net.inet.tcp.cc.algorithm") => Some("net.inet.tcp.cc.available"),
        _ => None,
    }
}

// "Is this algorithm offered" has one home, in the sysctl store (below this module and check);
// apply calls it by this path.
pub use crate::sysctl::offers;

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 44: `split_whitespace` took a line break, VT or U+0085 as a blank, so a value
    /// holding one was written raw and a file got a forged line. Every value is checked for
    /// them, and written with one space between its words.
    #[test]
    fn a_value_with_a_line_break_or_another_odd_blank_is_refused_and_others_are_folded() {
        for bad in [
            "4096 131072\nkernel.x = 1",
            "1\u{b}2",
            "1\u{85}2",
            "1\u{2028}2",
            "1\r",
            "1\u{1b}[2J",
        ] {
            let e = check_value("net.ipv4.tcp_rmem", bad, Os::Linux).expect_err(bad);
            assert!(e.contains("no sysctl value does") && !e.contains('\n'), "{e}");
            assert!(normalize_value(bad).is_err(), "{bad:?}");
        }
        assert_eq!(
            check_value("net.ipv4.tcp_rmem", "4096\t131072  6291456", Os::Linux).as_deref(),
            Ok("4096 131072 6291456")
        );
        assert_eq!(normalize_value(" bbr ").as_deref(), Ok("bbr"));
    }
    use proptest::prelude::*;

    fn ok(text: &str, os: Os) -> Vec<(String, String, bool)> {
        parse(text, os)
            .unwrap_or_else(|e| panic!("{text:?}: {e:?}"))
            .into_iter()
            .map(|a| (a.key, a.value, a.ignore_errors))
            .collect()
    }

    fn err(text: &str, os: Os) -> String {
        let e = parse(text, os).expect_err(text);
        e.iter().map(ToString::to_string).collect::<Vec<_>>().join("; ")
    }

    #[test]
    fn sysctl_d_syntax() {
        let text = "# tcptune advice\n; a comment\n\n  net.ipv4.tcp_rmem = 4096\t131072   6291456  \n\
                    net.ipv4.tcp_wmem=4096 16384 4194304\r\n-net.core.rmem_max = 212992\n\
                    - net.ipv4.tcp_congestion_control=bbr\n";
        assert_eq!(
            ok(text, Os::Linux),
            vec![
                ("net.ipv4.tcp_rmem".into(), "4096 131072 6291456".into(), false),
                ("net.ipv4.tcp_wmem".into(), "4096 16384 4194304".into(), false),
                ("net.core.rmem_max".into(), "212992".into(), true),
                ("net.ipv4.tcp_congestion_control".into(), "bbr".into(), true),
            ]
        );
        let a = parse("\n\nnet.core.somaxconn = 4096\n", Os::Linux).expect("parse");
        assert_eq!(a[0].line, 3);
        assert!(ok("", Os::Linux).is_empty());
        assert!(ok("\u{feff}# only comments\n", Os::Linux).is_empty());
    }

    #[test]
    fn bsd_trailing_comments_are_dropped() {
        assert_eq!(
            ok("kern.ipc.maxsockbuf=23224320 # 1.125 x buffer\n", Os::Freebsd),
            vec![("kern.ipc.maxsockbuf".into(), "23224320".into(), false)]
        );
        assert!(err("net.core.rmem_max = 1 # no\n", Os::Linux).contains("own line"));
    }

    #[test]
    fn keys_outside_the_networking_tree_and_path_tricks_are_refused() {
        let cases: &[(&str, &str)] = &[
            ("kernel.panic = 1", "outside the networking tree"),
            ("vm.swappiness = 10", "outside the networking tree"),
            ("net/ipv4/tcp_rmem = 1 2 3", "'/' separators"),
            ("net/../kernel/panic = 1", "'/' separators"),
            ("/proc/sys/kernel/panic = 1", "'/' separators"),
            ("net.ipv4.../x = 1", "'/' separators"),
            ("net.ipv4...x = 1", "empty key component"),
            ("net..ipv4.tcp_rmem = 1 2 3", "empty key component"),
            (".net.ipv4.tcp_rmem = 1 2 3", "empty key component"),
            ("net.ipv4.conf.*.rp_filter = 1", "glob"),
            ("net.ipv4.tcp rmem = 1", "invalid character ' '"),
            ("netfilter.x = 1", "outside"),
            ("= 1", "missing key"),
            ("net.core.rmem_max", "expected `key = value`"),
        ];
        for (line, want) in cases {
            let e = err(line, Os::Linux);
            assert!(e.contains(want), "{line}: {e}");
            assert!(e.starts_with("line 1: "), "{e}");
        }
        assert!(err("net.ipv4.tcp_rmem = 1 2 3", Os::Freebsd).contains("kern.ipc.*"));
        assert!(err("kern.hostname = x", Os::Macos).contains("outside"));
    }

    #[test]
    fn values_are_checked_per_key() {
        let bad: &[(&str, &str)] = &[
            ("net.ipv4.tcp_rmem = 4096 131072", "expected 3 whole numbers"),
            ("net.ipv4.tcp_rmem = 4096 131072 2147483648", "overflows"),
            ("net.ipv4.tcp_rmem = 4096 131072 -1", "negative"),
            ("net.ipv4.tcp_rmem = 0 131072 6291456", "below the minimum 1"),
            ("net.ipv4.tcp_rmem = 4096 131072 4096", "must not decrease"),
            ("net.ipv4.tcp_rmem = 4096 131072 6291456x", "not a whole number"),
            ("net.ipv4.tcp_rmem = \"4096 131072 6291456\"", "quotes"),
            ("net.core.rmem_max = 2147483648", "overflows"),
            ("net.core.rmem_max = 99999999999999999999999", "too large"),
            ("net.core.rmem_max = -5", "negative"),
            ("net.core.rmem_max = +5", "not a whole number"),
            ("net.core.rmem_max = 0x100", "not a whole number"),
            ("net.core.rmem_max = 1.5", "not a whole number"),
            ("net.core.rmem_max = bbr", "one whole number"),
            ("net.core.rmem_max =", "missing value"),
            ("net.ipv4.tcp_slow_start_after_idle = 2", "at most 1"),
            ("net.ipv4.tcp_congestion_control = 1", "one name"),
            ("net.ipv4.tcp_congestion_control = bbr cubic", "one name"),
            ("net.ipv4.tcp_congestion_control = bb;r", "neither"),
            ("net.ipv4.tcp_mem = 1 2 99999999999999999999", "too large"),
            ("net.ipv4.conf.all.forwarding = 99999999999999999999", "too large"),
            ("net.ipv4.conf.all.forwarding = $(reboot)", "neither"),
        ];
        for (line, want) in bad {
            let e = err(line, Os::Linux);
            assert!(e.contains(want), "{line}: {e}");
        }
        for line in [
            "net.ipv4.tcp_rmem = 4096 131072 2147483647",
            "net.ipv4.tcp_mem = 188049 250735 9223372036854775807",
            "net.ipv4.tcp_notsent_lowat = 4294967295",
            "net.core.default_qdisc = fq_codel",
            "net.ipv4.tcp_allowed_congestion_control = reno bbr",
            "net.ipv4.conf.eth0.rp_filter = 2",
        ] {
            ok(line, Os::Linux);
        }
        ok("kern.ipc.maxsockbuf = 8589934592", Os::Freebsd);
        assert!(err("net.inet.tcp.sendbuf_max=2147483648", Os::Freebsd).contains("overflows"));
        assert!(err("net.inet.tcp.cc.algorithm=", Os::Freebsd).contains("missing value"));
    }

    #[test]
    fn every_problem_is_reported_and_duplicates_refused() {
        let e = parse(
            "net.core.rmem_max = 1\nkernel.panic = 1\nnet.core.rmem_max = 2\nvm.swappiness=1\n",
            Os::Linux,
        )
        .expect_err("bad");
        let lines: Vec<usize> = e.iter().map(|e| e.line).collect();
        assert_eq!(lines, vec![2, 3, 4]);
        assert!(e[1].msg.contains("already set on line 1"), "{}", e[1]);
    }

    #[test]
    fn errors_do_not_copy_the_file() {
        // Not a sysctl file at all: its lines must not come back in the errors.
        let shadow = "root:$6$Zx9salt$0123456789abcdefghijklmnopqrstuvwxyzSECRETHASH:19000:0:99999:7:::\n\
                      daemon:*:19000:0:99999:7:::\n";
        let e = err(shadow, Os::Linux);
        assert!(
            !e.contains("SECRET") && !e.contains("root") && !e.contains("daemon"),
            "{e}"
        );
        // A line with '=' shows what precedes it only when that is a sysctl name, and then
        // at most an escaped excerpt of it.
        let long = format!("{}=1", "A".repeat(5000));
        let e = err(&long, Os::Linux);
        assert!(e.len() < 200 && !e.contains("AAA"), "{e}");
        let e = err(&format!("net.{}=1", "a".repeat(5000)), Os::Linux);
        assert!(e.len() < 200, "{e}");
        for (secret, want) in [
            // A private key's base64 padding, a .env line, a password with a colon.
            (
                "b3BlbnNzaC1rZXktdjEAAAAABG5vbmU/SECRET==\n",
                "line 1: the text before '=': keys with '/'",
            ),
            (
                "b3BlbnNzaC1rZXktdjEAAAAABG5vbmUSECRET==\n",
                "line 1: the text before '=' is outside the networking tree",
            ),
            (
                "AWS_SECRET_KEY=SECRETwJalrXUtnFEMI\n",
                "line 1: the text before '=' is outside the networking tree",
            ),
            (
                "pass: SECRET=x\n",
                "line 1: the text before '=': invalid character ':' in key (its character 5)",
            ),
            (
                "p\u{e4}ss SECRET=x\n",
                "line 1: column 2: a character that is not printable ASCII",
            ),
            (
                "  \u{1b}SECRET=x\n",
                "line 1: column 3: a character that is not printable ASCII",
            ),
        ] {
            let e = err(secret, Os::Linux);
            assert!(e.starts_with(want), "{secret:?}: {e}");
            assert!(!e.contains("SECRET"), "{e}");
        }
        // A sysctl name is shown: it is what the user wants to see.
        assert!(err("kernel.panic = 1\n", Os::Linux).contains("kernel.panic is outside"));
        let e = err(&format!("net.core.rmem_max = {}", "9".repeat(5000)), Os::Linux);
        assert!(e.len() < 200, "{e}");
        let e = err(&format!("net.ipv4.tcp_rmem = 1 2 {}x", "9".repeat(5000)), Os::Linux);
        assert!(e.len() < 200, "{e}");
        assert_eq!(excerpt("a\u{1b}b"), "a\\u{1b}b");
        assert_eq!(excerpt(&"x".repeat(41)), format!("{}...", "x".repeat(40)));
    }

    #[test]
    fn ten_thousand_keys_parse_in_linear_time() {
        let text: String = (0..40_000).map(|i| format!("net.ipv4.k{i} = 1\n")).collect();
        let t = std::time::Instant::now();
        assert_eq!(parse(&text, Os::Linux).expect("parse").len(), 40_000);
        // A debug build on a 2-core VM: linear took up to 1.2 s, the quadratic duplicate
        // search 6.4 s for half as many lines. The bound leaves room for the VM's stalls.
        assert!(t.elapsed() < std::time::Duration::from_secs(6), "{:?}", t.elapsed());
        let dup = format!("{text}net.ipv4.k7 = 2\n");
        let e = parse(&dup, Os::Linux).expect_err("dup");
        assert_eq!(e.len(), 1);
        assert!(e[0].msg.contains("already set on line 8"), "{}", e[0]);
    }

    #[test]
    fn huge_input_is_refused() {
        let text = "# x\n".repeat(MAX_FILE_BYTES / 4 + 1);
        assert!(err(&text, Os::Linux).contains("larger than"));
    }

    #[test]
    fn shape_of_unknown_keys_follows_the_running_value() {
        let k = "net.ipv4.conf.all.rp_filter";
        assert!(check_against_current(Os::Linux, k, "1", "2").is_ok());
        assert!(check_against_current(Os::Linux, k, "1 2", "2").is_err());
        assert!(check_against_current(Os::Linux, k, "2147483648", "0").is_err());
        // The running value already exceeds an int: the key is wider.
        assert!(check_against_current(Os::Linux, k, "8589934592", "4294967295").is_ok());
        assert!(check_against_current(Os::Linux, k, "abc", "1").is_err());
        assert!(check_against_current(Os::Linux, "net.x.y", "abc", "cubic").is_ok());
    }

    #[test]
    fn restorable_values() {
        for v in [
            "4096 131072 6291456",
            "-1",
            "reno cubic",
            "fq_codel",
            "00:11:22:33:44:55",
        ] {
            assert!(check_restorable("net.x", v).is_ok(), "{v}");
        }
        for v in ["", "  ", "a;b", "$(x)", "a\nb", "\"q\""] {
            assert!(check_restorable("net.x", v).is_err(), "{v:?}");
        }
    }

    #[test]
    fn running_values_are_read_by_the_keys_kind() {
        let l = Os::Linux;
        for (k, v) in [
            ("net.ipv4.tcp_rmem", "4096 131072 6291456"),
            // The kernel does not order the fields: a running value may decrease.
            ("net.ipv4.tcp_rmem", "4096 99999999 6291456"),
            ("net.core.rmem_max", "212992"),
            ("net.ipv4.tcp_congestion_control", "cubic"),
            ("net.ipv4.tcp_available_congestion_control", "reno cubic bbr"),
            ("net.ipv4.conf.all.x", "-1"),
            ("net.ipv4.conf.all.x", "00:11:22:33:44:55 1e9"),
            ("net.ipv4.tcp_mem", "9223372036854775807 1 2"),
        ] {
            assert_eq!(check_running(l, k, v), Ok(()), "{k} = {v}");
        }
        for (k, v, says) in [
            (
                "net.ipv4.tcp_rmem",
                "4096 131072 6291456\nnet.ipv4.ip_forward = 1",
                "more than one line",
            ),
            ("net.ipv4.tcp_rmem", "4096 131072", "expected 3"),
            ("net.ipv4.tcp_rmem", "4096 131072 4294967296", "overflows"),
            ("net.ipv4.tcp_rmem", "4096 -1 6291456", "not a whole number"),
            ("net.core.rmem_max", "99999999999", "overflows"),
            ("net.core.rmem_max", "1e9", "not a whole number"),
            ("net.ipv4.tcp_congestion_control", "cubic bbr", "one name"),
            ("net.ipv4.conf.all.x", "99999999999999999999", "no kernel type"),
        ] {
            let e = check_running(l, k, v).expect_err(v);
            assert!(e.contains(says), "{k} = {v:?}: {e}");
        }
        assert_eq!(check_running(Os::Freebsd, "net.inet.tcp.cc.available", "a\nb"), Ok(()));
    }

    #[test]
    fn congestion_control_lists() {
        assert!(offers("reno cubic bbr", "bbr"));
        assert!(!offers("reno cubic bbr", "htcp"));
        assert!(offers("newreno, cubic", "cubic"));
        assert!(offers(
            "\nCCmod           D PCB count\ncubic           * 2\nnewreno           0\n",
            "newreno"
        ));
        assert!(!offers("\nCCmod           D PCB count\ncubic           * 2\n", "CCmod"));
        // The same table read through sysctl(8) and normalised to one line (bsd.rs).
        let one_line =
            crate::sysctl::normalize_value("CCmod           D PCB count\nnewreno         * 0\ncubic             2\n");
        assert!(offers(&one_line, "cubic") && offers(&one_line, "newreno"), "{one_line}");
        assert!(!offers(&one_line, "PCB") && !offers(&one_line, "htcp"));
    }

    /// A sysctl-file line: mostly plausible, sometimes hostile.
    fn line() -> impl Strategy<Value = String> {
        let key = prop_oneof![
            Just("net.ipv4.tcp_rmem".to_string()),
            Just("net.core.rmem_max".to_string()),
            Just("net.ipv4.tcp_congestion_control".to_string()),
            Just("kern.ipc.maxsockbuf".to_string()),
            "[a-z./_*-]{0,24}",
            "\\PC{0,12}",
        ];
        let value = prop_oneof![
            "[0-9]{1,25}( [0-9]{1,25}){0,3}",
            "-?[0-9+x.]{1,12}",
            "[a-z_]{1,8}",
            "\\PC{0,16}",
        ];
        (
            prop_oneof![Just(""), Just("-"), Just("- "), Just("#"), Just(";")],
            key,
            prop_oneof![Just("="), Just(" = "), Just("=="), Just("")],
            value,
            prop_oneof![Just("\n"), Just("\r\n"), Just(""), Just("\t#c\n")],
        )
            .prop_map(|(p, k, eq, v, end)| format!("{p}{k}{eq}{v}{end}"))
    }

    proptest! {
        // PROPTEST_CASES raises the case count: bench/fuzz-parser.sh runs 1,000,000.
        #[test]
        fn parser_never_panics_and_accepts_only_what_it_can_write(
            lines in proptest::collection::vec(line(), 0..12),
            junk in "\\PC{0,64}",
            bytes in proptest::collection::vec(any::<u8>(), 0..64),
        ) {
            let text = lines.concat();
            for os in [Os::Linux, Os::Freebsd, Os::Macos] {
                for t in [text.as_str(), junk.as_str(), &String::from_utf8_lossy(&bytes)] {
                    if let Ok(assignments) = parse(t, os) {
                        for a in assignments {
                            prop_assert!(os.is_network_key(&a.key), "{}", a.key);
                            prop_assert!(!a.value.is_empty());
                            prop_assert!(a.value.bytes().all(|b| b.is_ascii_alphanumeric() || b" _-.".contains(&b)), "{}", a.value);
                            // What was accepted parses again to the same thing.
                            let again = parse(&format!("{} = {}\n", a.key, a.value), os);
                            prop_assert_eq!(again.map(|v| v[0].value.clone()), Ok(a.value.clone()));
                        }
                    }
                }
            }
        }
    }
}
