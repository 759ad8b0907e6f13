//! Units used on the command line: bit rates, byte sizes and durations.
//!
//! Parsing is exact: the decimal number is read as an integer mantissa and a
//! decimal exponent (never through `f64`), so `0.025s` is exactly 25 ms and
//! `1.1gbit` is exactly 1 100 000 000 bit/s. Every parse failure is a
//! [`UnitError`] whose `Display` is a single line saying what was given and
//! what is expected. `Display` of every type is exact, so
//! `x.to_string().parse() == Ok(x)` holds for every value that parses at all
//! (zero rates and zero durations are rejected by the parser).
//!
//! Accepted forms:
//! - rates (always bits per second, SI prefixes `k`/`M`/`G`/`T` in any case; a lowercase
//!   `b` is bits, `B` and `byte` are bytes and refused): `500mbit`, `500Mbit/s`, `500Mb`,
//!   `500mbps`, `1Gb/s`, `1G`, `100m`, `1.5gbit`, `100 kbit`;
//! - durations, one grammar for every option: `ns`, `us`/`µs`/`usec`, `ms`/`msec`,
//!   `s`/`sec`/`secs`/`seconds`, `m`/`min`/`mins`/`minutes`, `h`/`hr`/`hour`/`hours`,
//!   `d`/`day`/`days`, and parts in a row: `25ms`, `0.025s`, `250us`, `10m`, `1h30m`, `2m 30s`;
//!   an option's range is checked by [`duration_within`];
//! - sizes: bare bytes (`65536`), `B`, SI `K`/`KB`/`M`/`MB`/`G`/`GB`/`T`/`TB`,
//!   IEC `KiB`/`MiB`/`GiB`/`TiB`.
//!
//! A single space between number and unit is allowed (`100 Mbit/s`).

/// What each kind of quantity accepts on input, and how output writes numbers: the one text
/// behind `tcptune --help`, the man page and docs/GUIDE.md (a test keeps the guide equal to it).
pub const MEANINGS: &[(&str, &str)] = &[
    (
        "RATE",
        "bits per second, SI, a lowercase b is bits: 500mbit, 500Mbit/s, 500Mb, 500mbps, 1.5Gb, \
         1Gb/s, 1gbit, 1G, 100m (1 Mbit/s = 10^6 bit/s). A bare number is rejected, and so are \
         bytes (MB, MB/s, MiB): rates are bits.",
    ),
    (
        "DUR",
        "one grammar for every option: 150ms, 150 ms, 0.025s, 1.5s, 90s, 10m, 2h, 1h30m, 250us; \
         ns, us (usec), ms (msec), s (sec, secs, seconds), m (min, mins, minutes), h (hr, hour, \
         hours), d (day, days). A bare number is rejected (but --wait's is seconds); each option \
         keeps its range.",
    ),
    (
        "SIZE",
        "65536 (bytes), 64KiB = 65536, 64KB = 64000, 4MiB = 4194304: IEC and SI as written.",
    ),
    (
        "output",
        "sysctl values are exact bytes; sizes for people show exact bytes and IEC units (9375000 bytes \
         (8.94 MiB)); rates SI.",
    ),
];
use std::fmt;
use std::str::FromStr;
use std::time::Duration;

use serde::{Serialize, Serializer};

/// Which kind of quantity failed to parse.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum UnitKind {
    /// A bit rate such as `500mbit`.
    Rate,
    /// A duration such as `25ms`.
    Duration,
    /// A byte size such as `64KiB`.
    Size,
}

impl UnitKind {
    const fn examples(self) -> &'static str {
        match self {
            UnitKind::Rate => "500mbit, 500Mbit/s, 500mbps, 1gbit, 1G, 100m",
            UnitKind::Duration => "150ms, 1.5s, 90s, 10m, 2h",
            UnitKind::Size => "64KiB, 4MiB, 65536, 64KB, 1GiB, 512B",
        }
    }

    const fn whole(self) -> &'static str {
        match self {
            UnitKind::Rate => "bits per second",
            UnitKind::Duration => "nanoseconds",
            UnitKind::Size => "bytes",
        }
    }
}

impl fmt::Display for UnitKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            UnitKind::Rate => "rate",
            UnitKind::Duration => "duration",
            UnitKind::Size => "size",
        })
    }
}

/// A parse error for a rate, duration or size; `Display` is one line, e.g.
/// `invalid rate "500": a unit is required; expected e.g. 500mbit, ...`.
///
/// A value outside an option's range says the range instead of the examples:
/// `invalid duration "61s": out of range; expected 1s to 60s`.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("invalid {kind} {shown}: {reason}; expected {expected}")]
pub struct UnitError {
    kind: UnitKind,
    shown: String,
    reason: String,
    expected: String,
}

impl UnitError {
    /// How much of the input is echoed back in the message.
    const MAX_SHOWN_CHARS: usize = 40;

    fn new(kind: UnitKind, input: &str, reason: impl Into<String>) -> Self {
        let shown = match input.char_indices().nth(Self::MAX_SHOWN_CHARS) {
            Some((cut, _)) => format!("{:?}…", &input[..cut]),
            None => format!("{input:?}"),
        };
        UnitError {
            kind,
            shown,
            reason: reason.into(),
            expected: format!("e.g. {}", kind.examples()),
        }
    }

    /// The kind of quantity that failed to parse.
    pub fn kind(&self) -> UnitKind {
        self.kind
    }
}

// ---------------------------------------------------------------------------
// Exact decimal parsing shared by all three types.
// ---------------------------------------------------------------------------

/// A non-negative decimal `mantissa * 10^-scale`.
#[derive(Copy, Clone, Debug)]
struct Decimal {
    mantissa: u128,
    scale: usize,
}

/// Why a value could not be turned into an integer amount.
enum Scaled {
    TooLarge,
    NotWhole,
}

impl Decimal {
    /// Parses `digits[.digits]`; `s` is known to hold only ASCII digits and dots.
    fn parse(s: &str) -> Result<Decimal, String> {
        let (int, frac) = match s.split_once('.') {
            Some((i, f)) => (i, Some(f)),
            None => (s, None),
        };
        let malformed = || format!("malformed number {s:?}");
        if int.is_empty() || int.contains('.') {
            return Err(malformed());
        }
        let frac = match frac {
            Some(f) if f.is_empty() || f.contains('.') => return Err(malformed()),
            Some(f) => f.trim_end_matches('0'),
            None => "",
        };
        let mut mantissa: u128 = 0;
        for b in int.bytes().chain(frac.bytes()) {
            mantissa = mantissa
                .checked_mul(10)
                .and_then(|m| m.checked_add(u128::from(b - b'0')))
                .ok_or_else(|| "number out of range".to_string())?;
        }
        Ok(Decimal {
            mantissa,
            scale: frac.len(),
        })
    }

    /// Exactly `self * multiplier`, which must be a whole number.
    fn times(self, multiplier: u128) -> Result<u128, Scaled> {
        if self.mantissa == 0 {
            return Ok(0);
        }
        let product = self.mantissa.checked_mul(multiplier).ok_or(Scaled::TooLarge)?;
        // A non-zero product below 2^128 cannot be a multiple of 10^39 or more.
        let divisor = u32::try_from(self.scale)
            .ok()
            .and_then(|e| 10u128.checked_pow(e))
            .ok_or(Scaled::NotWhole)?;
        if product % divisor != 0 {
            return Err(Scaled::NotWhole);
        }
        Ok(product / divisor)
    }
}

/// Splits `input` into its number and its unit and applies `unit` to get
/// the multiplier; returns the exact integer amount.
fn parse_amount(kind: UnitKind, input: &str, unit: fn(&str) -> Result<u128, String>) -> Result<u128, UnitError> {
    let err = |reason: String| UnitError::new(kind, input, reason);
    if input.is_empty() {
        return Err(err("empty input".into()));
    }
    if input.starts_with('-') {
        return Err(err("negative values are not allowed".into()));
    }
    let split = input
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(input.len());
    let (number, rest) = input.split_at(split);
    if number.is_empty() {
        let need = if kind == UnitKind::Size {
            "expected a number, optionally followed by a unit"
        } else {
            "expected a number followed by a unit"
        };
        return Err(err(need.into()));
    }
    let decimal = Decimal::parse(number).map_err(err)?;
    let unit_str = match rest.strip_prefix(' ') {
        Some("") => return Err(err("unexpected trailing space".into())),
        Some(u) if u.starts_with(char::is_whitespace) => {
            return Err(err(
                "at most one space is allowed between the number and the unit".into()
            ));
        }
        Some(u) => u,
        None => rest,
    };
    let multiplier = unit(unit_str).map_err(err)?;
    decimal.times(multiplier).map_err(|e| match e {
        Scaled::TooLarge => err("value too large".into()),
        Scaled::NotWhole => err(format!("not a whole number of {}", kind.whole())),
    })
}

fn unknown_unit(u: &str) -> String {
    let shown: String = u.chars().take(20).collect();
    format!("unknown unit {shown:?}")
}

/// SI prefix at the start of `u` (any case): (10^n, rest).
fn si_prefix(u: &str) -> Option<(u128, &str)> {
    let m = match u.as_bytes().first()?.to_ascii_lowercase() {
        b'k' => 1_000,
        b'm' => 1_000_000,
        b'g' => 1_000_000_000,
        b't' => 1_000_000_000_000,
        _ => return None,
    };
    // The first byte is ASCII, so 1 is a char boundary.
    Some((m, &u[1..]))
}

fn rate_unit(u: &str) -> Result<u128, String> {
    const BYTES: &str = "rates are in bits per second, not bytes: write e.g. 500mbit";
    if u.is_empty() {
        return Err("a unit is required".into());
    }
    let (mult, rest, prefixed) = match si_prefix(u) {
        Some((m, r)) => (m, r, true),
        None => (1, u, false),
    };
    if prefixed && rest.is_empty() {
        return Ok(mult);
    }
    // A lowercase b is bits (100Mb, 1Gb/s, 100mbps), as iperf3 and link datasheets write it;
    // "bit" is bits in any case; B and "byte" are bytes.
    let lower = rest.to_ascii_lowercase();
    let per_second = |tail: &str| tail.is_empty() || tail == "/s" || tail.eq_ignore_ascii_case("ps");
    let bits =
        matches!(lower.as_str(), "bit" | "bits" | "bit/s" | "bits/s") || rest.strip_prefix('b').is_some_and(per_second);
    if bits {
        return Ok(mult);
    }
    let bytes = |r: &str| {
        let l = r.to_ascii_lowercase();
        r.strip_prefix('B').is_some_and(per_second)
            || ["byte", "bytes"]
                .iter()
                .any(|b| l.strip_prefix(b).is_some_and(|t| t.is_empty() || t == "/s"))
    };
    if prefixed && let Some(after_i) = rest.strip_prefix(['i', 'I']) {
        if bytes(after_i) {
            return Err(BYTES.into());
        }
        return Err(
            "binary prefixes (Ki, Mi, Gi, Ti) are not used for rates; rates are SI bits per second, e.g. 500mbit"
                .into(),
        );
    }
    if bytes(rest) {
        return Err(BYTES.into());
    }
    Err(unknown_unit(u))
}

/// A duration's unit, as people write it: the one grammar of every option that takes one.
fn duration_unit(u: &str) -> Result<u128, String> {
    const S: u128 = 1_000_000_000;
    match u {
        "" => Err("a unit is required".into()),
        "ns" | "nsec" | "nsecs" => Ok(1),
        // U+00B5 MICRO SIGN and U+03BC GREEK SMALL LETTER MU.
        "us" | "\u{b5}s" | "\u{3bc}s" | "usec" | "usecs" => Ok(1_000),
        "ms" | "msec" | "msecs" => Ok(1_000_000),
        "s" | "sec" | "secs" | "second" | "seconds" => Ok(S),
        "m" | "min" | "mins" | "minute" | "minutes" => Ok(60 * S),
        "h" | "hr" | "hrs" | "hour" | "hours" => Ok(3_600 * S),
        "d" | "day" | "days" => Ok(86_400 * S),
        _ => Err(unknown_unit(u)),
    }
}

/// A duration in nanoseconds: one or more parts, each a number and its unit (`150ms`,
/// `1.5 s`, `1h30m`, `2m 30s`), at most one space between a number and its unit and between
/// two parts.
fn duration_ns(input: &str) -> Result<u128, UnitError> {
    let err = |reason: String| UnitError::new(UnitKind::Duration, input, reason);
    if input.is_empty() {
        return Err(err("empty input".into()));
    }
    if input.starts_with('-') {
        return Err(err("negative values are not allowed".into()));
    }
    let one_space = |s: &str| -> Result<(), UnitError> {
        match s.strip_prefix(' ') {
            Some("") => Err(err("unexpected trailing space".into())),
            Some(u) if u.starts_with(char::is_whitespace) => Err(err(
                "at most one space is allowed between the number and the unit".into(),
            )),
            _ => Ok(()),
        }
    };
    let mut rest = input;
    let mut total: u128 = 0;
    loop {
        let split = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        let (number, after) = rest.split_at(split);
        if number.is_empty() {
            return Err(err("expected a number followed by a unit".into()));
        }
        let decimal = Decimal::parse(number).map_err(err)?;
        one_space(after)?;
        let after = after.strip_prefix(' ').unwrap_or(after);
        let end = after
            .find(|c: char| c.is_ascii_digit() || c == ' ')
            .unwrap_or(after.len());
        let (mut unit, mut next) = after.split_at(end);
        // "5 ms ms": a space not followed by a number is part of an unknown unit.
        if next.starts_with(' ')
            && !next[1..].starts_with(|c: char| c.is_ascii_digit() || c.is_whitespace())
            && next.len() > 1
        {
            (unit, next) = (after, "");
        }
        let multiplier = duration_unit(unit).map_err(err)?;
        let ns = decimal.times(multiplier).map_err(|e| match e {
            Scaled::TooLarge => err("value too large".into()),
            Scaled::NotWhole => err(format!("not a whole number of {}", UnitKind::Duration.whole())),
        })?;
        total = total.checked_add(ns).ok_or_else(|| err("value too large".into()))?;
        if next.is_empty() {
            return Ok(total);
        }
        one_space(next)?;
        rest = next.strip_prefix(' ').unwrap_or(next);
    }
}

/// A duration option's value: the one grammar, then the option's own range, said one way
/// (`invalid duration "61s": out of range; expected 1s to 60s`; `at most 60s` when `min` is
/// zero, which the grammar refuses anyway).
pub fn duration_within(s: &str, min: Duration, max: Duration) -> Result<Duration, UnitError> {
    let d = s.parse::<Span>()?.as_std();
    if d < min || d > max {
        let mut e = UnitError::new(UnitKind::Duration, s, "out of range");
        e.expected = if min.is_zero() {
            format!("at most {}", bound(max))
        } else {
            format!("{} to {}", bound(min), bound(max))
        };
        return Err(e);
    }
    Ok(d)
}

/// A range's end as the grammar writes it: the largest of d, h, s, ms, us, ns that holds it
/// whole (`7d`, `1h`, `60s`, `10ms`).
fn bound(d: Duration) -> String {
    const UNITS: [(u128, &str); 6] = [
        (86_400_000_000_000, "d"),
        (3_600_000_000_000, "h"),
        (1_000_000_000, "s"),
        (1_000_000, "ms"),
        (1_000, "us"),
        (1, "ns"),
    ];
    let ns = d.as_nanos();
    UNITS
        .iter()
        .find(|&&(u, _)| ns >= u && ns.is_multiple_of(u))
        .map_or_else(|| "0s".to_string(), |&(u, name)| format!("{}{name}", ns / u))
}

fn size_unit(u: &str) -> Result<u128, String> {
    const BITS: &str = "sizes are in bytes, not bits: write e.g. 64KiB or 64KB";
    if u.is_empty() || u.eq_ignore_ascii_case("b") {
        return Ok(1);
    }
    if let Some((si, rest)) = si_prefix(u) {
        if rest.is_empty() || rest.eq_ignore_ascii_case("b") {
            return Ok(si);
        }
        if rest == "iB" || rest == "IB" {
            // 10^(3n) -> 2^(10n)
            let iec = match si {
                1_000 => 1 << 10,
                1_000_000 => 1 << 20,
                1_000_000_000 => 1 << 30,
                _ => 1 << 40,
            };
            return Ok(iec);
        }
        let lower = rest.to_ascii_lowercase();
        if lower == "ib" || lower.starts_with("bit") || lower.starts_with("ibit") {
            return Err(BITS.into());
        }
        return Err(unknown_unit(u));
    }
    if u.to_ascii_lowercase().starts_with("bit") {
        return Err(BITS.into());
    }
    Err(unknown_unit(u))
}

/// Writes `value / 10^digits` exactly, trimming trailing fractional zeros.
fn exact_decimal(value: u128, digits: usize) -> String {
    let unit = 10u128.pow(digits as u32);
    let (int, frac) = (value / unit, value % unit);
    if frac == 0 {
        return int.to_string();
    }
    let frac = format!("{frac:0digits$}");
    format!("{int}.{}", frac.trim_end_matches('0'))
}

// ---------------------------------------------------------------------------
// Bitrate
// ---------------------------------------------------------------------------

/// A rate in bits per second (SI: 1 Gbit/s = 10^9 bit/s).
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Bitrate(u64);

impl Bitrate {
    /// A rate of `bps` bits per second.
    pub const fn from_bps(bps: u64) -> Self {
        Bitrate(bps)
    }

    /// Bits per second.
    pub const fn bps(self) -> u64 {
        self.0
    }

    /// Bytes per second, as a float.
    pub fn bytes_per_sec_f64(self) -> f64 {
        self.0 as f64 / 8.0
    }
}

impl FromStr for Bitrate {
    type Err = UnitError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let v = parse_amount(UnitKind::Rate, s, rate_unit)?;
        if v == 0 {
            return Err(UnitError::new(UnitKind::Rate, s, "must be greater than zero"));
        }
        u64::try_from(v)
            .map(Bitrate)
            .map_err(|_| UnitError::new(UnitKind::Rate, s, "value too large"))
    }
}

impl fmt::Display for Bitrate {
    /// SI with the largest unit giving a value ≥ 1; exact (`12.345678 Mbit/s`).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        const UNITS: [(u64, usize, &str); 4] = [
            (1_000_000_000_000, 12, "Tbit/s"),
            (1_000_000_000, 9, "Gbit/s"),
            (1_000_000, 6, "Mbit/s"),
            (1_000, 3, "kbit/s"),
        ];
        let (digits, name) = UNITS
            .iter()
            .find(|(u, _, _)| self.0 >= *u)
            .map_or((0, "bit/s"), |&(_, d, n)| (d, n));
        f.pad(&format!("{} {name}", exact_decimal(u128::from(self.0), digits)))
    }
}

impl Serialize for Bitrate {
    /// Serialized as the plain integer number of bits per second.
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_u64(self.0)
    }
}

// ---------------------------------------------------------------------------
// Bytes
// ---------------------------------------------------------------------------

/// A size in bytes.
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Bytes(u64);

const IEC_UNITS: [(u128, &str); 5] = [
    (1, "B"),
    (1 << 10, "KiB"),
    (1 << 20, "MiB"),
    (1 << 30, "GiB"),
    (1 << 40, "TiB"),
];

/// `hundredths / 100` with up to two decimals, trailing zeros trimmed.
fn hundredths(h: u128) -> String {
    exact_decimal(h, 2)
}

impl Bytes {
    /// A size of `bytes` bytes.
    pub const fn new(bytes: u64) -> Self {
        Bytes(bytes)
    }

    /// The number of bytes.
    pub const fn get(self) -> u64 {
        self.0
    }

    /// Human IEC form rounded to at most two decimals: `4 MiB`, `18.75 MiB`,
    /// `1.5 GiB`, `512 B`. May round; `Display` is the exact form.
    pub fn iec(self) -> String {
        let v = u128::from(self.0);
        let mut i = IEC_UNITS.iter().rposition(|&(u, _)| v >= u).unwrap_or(0);
        if i == 0 {
            return format!("{v} B");
        }
        let mut h = (v * 100 + IEC_UNITS[i].0 / 2) / IEC_UNITS[i].0;
        if h >= 1024 * 100 && i + 1 < IEC_UNITS.len() {
            i += 1;
            h = (v * 100 + IEC_UNITS[i].0 / 2) / IEC_UNITS[i].0;
        }
        format!("{} {}", hundredths(h), IEC_UNITS[i].1)
    }
}

impl FromStr for Bytes {
    type Err = UnitError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let v = parse_amount(UnitKind::Size, s, size_unit)?;
        u64::try_from(v)
            .map(Bytes)
            .map_err(|_| UnitError::new(UnitKind::Size, s, "value too large"))
    }
}

impl fmt::Display for Bytes {
    /// Exact: the largest IEC unit in which the value has at most two
    /// decimals (`4 MiB`, `1.5 MiB`, `1537 KiB`), else plain bytes (`12345 B`).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let v = u128::from(self.0);
        let s = IEC_UNITS[1..]
            .iter()
            .rev()
            .find(|&&(u, _)| v >= u && (v * 100) % u == 0)
            .map_or_else(
                || format!("{v} B"),
                |&(u, name)| format!("{} {name}", hundredths(v * 100 / u)),
            );
        f.pad(&s)
    }
}

impl Serialize for Bytes {
    /// Serialized as the plain integer number of bytes.
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_u64(self.0)
    }
}

// ---------------------------------------------------------------------------
// Span
// ---------------------------------------------------------------------------

/// A span of time as the command line writes it (`25ms`, `1.5s`): parsed and shown with its
/// unit; wraps a [`Duration`].
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Span(Duration);

impl Span {
    /// Wraps a `Duration`.
    pub fn from_std(d: Duration) -> Self {
        Span(d)
    }

    /// The wrapped `Duration`.
    pub fn as_std(self) -> Duration {
        self.0
    }

    /// Seconds as a float.
    pub fn as_secs_f64(self) -> f64 {
        self.0.as_secs_f64()
    }

    /// Milliseconds as a float.
    pub fn as_millis_f64(self) -> f64 {
        self.0.as_secs_f64() * 1000.0
    }

    /// From float milliseconds, saturating: NaN and values ≤ 0 give zero,
    /// values too large give `Duration::MAX`. Never panics.
    pub fn from_millis_f64(ms: f64) -> Self {
        if ms.is_nan() || ms <= 0.0 {
            return Span(Duration::ZERO);
        }
        Span(Duration::try_from_secs_f64(ms / 1000.0).unwrap_or(Duration::MAX))
    }
}

impl FromStr for Span {
    type Err = UnitError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let ns = duration_ns(s)?;
        if ns == 0 {
            return Err(UnitError::new(UnitKind::Duration, s, "must be greater than zero"));
        }
        let secs =
            u64::try_from(ns / 1_000_000_000).map_err(|_| UnitError::new(UnitKind::Duration, s, "value too large"))?;
        let nanos = (ns % 1_000_000_000) as u32;
        Ok(Span(Duration::new(secs, nanos)))
    }
}

impl fmt::Display for Span {
    /// `250 µs` under 1 ms, `75.123 ms` under 1 s, `1.5 s` from 1 s, `12 ns`
    /// under 1 µs; exact (as many decimals as needed).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let ns = self.0.as_nanos();
        let (digits, name) = match ns {
            0..1_000 => (0, "ns"),
            1_000..1_000_000 => (3, "\u{b5}s"),
            1_000_000..1_000_000_000 => (6, "ms"),
            _ => (9, "s"),
        };
        f.pad(&format!("{} {name}", exact_decimal(ns, digits)))
    }
}

impl Serialize for Span {
    /// Serialized as float milliseconds.
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_f64(self.as_millis_f64())
    }
}

// ---------------------------------------------------------------------------
// Tests
// ---------------------------------------------------------------------------

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const MS: u64 = 1_000_000;

    fn rate(s: &str) -> Result<u64, UnitError> {
        s.parse::<Bitrate>().map(Bitrate::bps)
    }
    fn size(s: &str) -> Result<u64, UnitError> {
        s.parse::<Bytes>().map(Bytes::get)
    }
    fn dur_ns(s: &str) -> Result<u128, UnitError> {
        s.parse::<Span>().map(|d| d.as_std().as_nanos())
    }

    #[test]
    fn rates_accepted() {
        let cases: &[(&str, u64)] = &[
            ("500mbit", 500_000_000),
            ("500Mbit", 500_000_000),
            ("500mbps", 500_000_000),
            ("500Mbit/s", 500_000_000),
            ("500MBit/s", 500_000_000),
            ("500MBIT", 500_000_000),
            ("1gbit", 1_000_000_000),
            ("1G", 1_000_000_000),
            ("1g", 1_000_000_000),
            ("10gbit", 10_000_000_000),
            ("100m", 100_000_000),
            ("100M", 100_000_000),
            ("1.5gbit", 1_500_000_000),
            ("1.1gbit", 1_100_000_000),
            ("100kbit", 100_000),
            ("100Kbit", 100_000),
            ("16k", 16_000),
            ("100 Mbit/s", 100_000_000),
            ("100 mbit", 100_000_000),
            ("1000bit", 1_000),
            ("1000bps", 1_000),
            ("1000bit/s", 1_000),
            ("1000bits", 1_000),
            ("2t", 2_000_000_000_000),
            ("2Tbit/s", 2_000_000_000_000),
            ("0.5kbit", 500),
            ("0.000001gbit", 1_000),
            ("1.000000000000000000000000000000000000000000gbit", 1_000_000_000),
            ("007mbit", 7_000_000),
            ("18446744073709551615bit", u64::MAX),
        ];
        for &(s, want) in cases {
            assert_eq!(rate(s), Ok(want), "{s}");
        }
    }

    #[test]
    fn rates_rejected() {
        let cases: &[(&str, &str)] = &[
            ("500", "a unit is required"),
            ("0.5", "a unit is required"),
            ("100MB/s", "rates are in bits per second"),
            ("100MBps", "rates are in bits per second"),
            ("100MiB", "rates are in bits per second"),
            ("100B/s", "rates are in bits per second"),
            ("100Mibit", "binary prefixes"),
            ("0mbit", "greater than zero"),
            ("0", "a unit is required"),
            ("0.0gbit", "greater than zero"),
            ("-5mbit", "negative"),
            ("--5mbit", "negative"),
            ("", "empty input"),
            ("mbit", "expected a number"),
            ("bit", "expected a number"),
            ("1.5bit", "not a whole number of bits per second"),
            ("1e9bit", "unknown unit"),
            ("nan", "expected a number"),
            ("inf", "expected a number"),
            ("NaNmbit", "expected a number"),
            ("1.2.3mbit", "malformed number"),
            (".5mbit", "malformed number"),
            ("5.mbit", "malformed number"),
            ("100  mbit", "at most one space"),
            ("100 ", "trailing space"),
            ("100mbit ", "unknown unit"),
            (" 100mbit", "expected a number"),
            ("5 mbit mbit", "unknown unit"),
            ("18446744073709551616bit", "too large"),
            ("99999999999999999999999999999999999999999999tbit", "out of range"),
            ("20000000tbit", "too large"),
            ("100µbit", "unknown unit"),
            ("１００mbit", "expected a number"),
            ("100xbit", "unknown unit"),
        ];
        for &(s, want) in cases {
            let e = rate(s).expect_err(s).to_string();
            assert!(e.contains(want), "{s:?}: {e}");
            assert!(e.starts_with("invalid rate "), "{e}");
            assert!(e.contains("expected e.g. 500mbit"), "{e}");
            assert!(!e.contains('\n'), "{e}");
        }
    }

    #[test]
    fn rate_error_message_is_exact() {
        assert_eq!(
            rate("500").unwrap_err().to_string(),
            "invalid rate \"500\": a unit is required; expected e.g. \
             500mbit, 500Mbit/s, 500mbps, 1gbit, 1G, 100m"
        );
        assert_eq!(rate("500").unwrap_err().kind(), UnitKind::Rate);
    }

    #[test]
    fn long_input_is_truncated_in_message() {
        let s = "9".repeat(10_000);
        let e = rate(&s).unwrap_err().to_string();
        assert!(e.len() < 300, "{e}");
        assert!(e.contains('…'));
        let e = rate("a\nb").unwrap_err().to_string();
        assert!(!e.contains('\n'), "{e}");
    }

    #[test]
    fn rate_display() {
        let cases: &[(u64, &str)] = &[
            (500_000_000, "500 Mbit/s"),
            (1_000_000_000, "1 Gbit/s"),
            (1_500_000_000, "1.5 Gbit/s"),
            (100_000, "100 kbit/s"),
            (12_345_000, "12.345 Mbit/s"),
            (12_345_678, "12.345678 Mbit/s"),
            (999, "999 bit/s"),
            (1, "1 bit/s"),
            (0, "0 bit/s"),
            (2_000_000_000_000, "2 Tbit/s"),
            (u64::MAX, "18446744.073709551615 Tbit/s"),
        ];
        for &(v, want) in cases {
            assert_eq!(Bitrate::from_bps(v).to_string(), want);
        }
        assert_eq!(format!("{:>12}", Bitrate::from_bps(1_000)), "    1 kbit/s");
        assert_eq!(Bitrate::from_bps(800).bytes_per_sec_f64(), 100.0);
    }

    #[test]
    fn durations_accepted() {
        let cases: &[(&str, u128)] = &[
            ("25ms", 25 * 1_000_000),
            ("0.025s", 25 * 1_000_000),
            ("150ms", 150 * 1_000_000),
            ("1.5s", 1_500_000_000),
            ("250us", 250_000),
            ("250µs", 250_000),
            ("250\u{3bc}s", 250_000),
            ("250 µs", 250_000),
            ("25 ms", 25_000_000),
            ("75.123ms", 75_123_000),
            ("1ns", 1),
            ("0.001us", 1),
            ("10000s", 10_000_000_000_000),
            (
                "18446744073709551615.999999999s",
                u128::from(u64::MAX) * 1_000_000_000 + 999_999_999,
            ),
        ];
        for &(s, want) in cases {
            assert_eq!(dur_ns(s), Ok(want), "{s}");
        }
        assert_eq!("0.025s".parse::<Span>().unwrap().as_std(), Duration::from_millis(25));
    }

    #[test]
    fn durations_rejected() {
        let cases: &[(&str, &str)] = &[
            ("25", "a unit is required"),
            ("0.025", "a unit is required"),
            ("0ms", "greater than zero"),
            ("0s", "greater than zero"),
            ("-5ms", "negative"),
            ("--5ms", "negative"),
            ("5 ms ms", "unknown unit"),
            ("2w", "unknown unit"),
            ("2M", "unknown unit"),
            ("1H", "unknown unit"),
            ("5MS", "unknown unit"),
            ("0.5ns", "not a whole number of nanoseconds"),
            ("1e3ms", "unknown unit"),
            ("nan", "expected a number"),
            ("inf", "expected a number"),
            ("", "empty input"),
            ("ms", "expected a number"),
            ("18446744073709551616s", "too large"),
        ];
        for &(s, want) in cases {
            let e = dur_ns(s).expect_err(s).to_string();
            assert!(e.contains(want), "{s:?}: {e}");
            assert!(e.starts_with("invalid duration "), "{e}");
            assert!(e.contains("expected e.g. 150ms, 1.5s, 90s, 10m, 2h"), "{e}");
        }
    }

    /// Rates as people write them (issue 36): a lowercase b is bits, as iperf3 and link
    /// datasheets write it; SI, 1 Mbit/s = 10^6 bit/s.
    #[test]
    fn rates_as_people_write_them() {
        let cases: &[(&str, u64)] = &[
            ("100Mb", 100_000_000),
            ("100mb", 100_000_000),
            ("100 Mb", 100_000_000),
            ("1.5Gb", 1_500_000_000),
            ("1.5gb", 1_500_000_000),
            ("100Mbit", 100_000_000),
            ("100Mbits", 100_000_000),
            ("100Mbps", 100_000_000),
            ("100mbps", 100_000_000),
            ("100MBit", 100_000_000),
            ("1Gb/s", 1_000_000_000),
            ("1 Gb/s", 1_000_000_000),
            ("1Gbit/s", 1_000_000_000),
            ("1Gbits/s", 1_000_000_000),
            ("10kb", 10_000),
            ("10Kb/s", 10_000),
            ("2Tb", 2_000_000_000_000),
            ("1000b", 1_000),
            ("1000b/s", 1_000),
            ("1000bps", 1_000),
            ("100m", 100_000_000),
            ("1G", 1_000_000_000),
        ];
        for &(s, want) in cases {
            assert_eq!(rate(s), Ok(want), "{s}");
        }
    }

    /// Bytes stay refused for rates, with the one hint that says rates are bits.
    #[test]
    fn rates_in_bytes_are_refused_with_the_bytes_hint() {
        const HINT: &str = "rates are in bits per second, not bytes: write e.g. 500mbit";
        for s in [
            "100MB",
            "100 MB",
            "100MB/s",
            "100MBps",
            "100MiB",
            "100MiB/s",
            "1GiB",
            "1GiB/s",
            "100kB",
            "100B",
            "100B/s",
            "1000Bps",
            "100Mbyte",
            "100Mbytes/s",
            "100Mbyte/s",
            "100bytes",
        ] {
            let e = rate(s).expect_err(s).to_string();
            assert!(e.contains(HINT), "{s:?}: {e}");
            assert!(e.starts_with(&format!("invalid rate {s:?}: ")), "{e}");
        }
        for s in ["100Mibit", "100Mib", "100Mi", "100Mib/s", "100Mibps"] {
            let e = rate(s).expect_err(s).to_string();
            assert!(e.contains("binary prefixes"), "{s:?}: {e}");
        }
    }

    /// One grammar for every duration: ns, us (usec), ms (msec), s (sec, secs, second,
    /// seconds), m (min, mins, minute, minutes), h (hr, hour, hours), d (day, days), one space
    /// allowed between a number and its unit and between the parts of 1h30m.
    #[test]
    fn durations_as_people_write_them() {
        let ms = |v: u64| Duration::from_millis(v);
        let cases: &[(&str, Duration)] = &[
            ("150ms", ms(150)),
            ("150 ms", ms(150)),
            ("150msec", ms(150)),
            ("150 msec", ms(150)),
            ("0.15s", ms(150)),
            ("1.5s", ms(1_500)),
            ("1.5 s", ms(1_500)),
            ("2sec", ms(2_000)),
            ("2 secs", ms(2_000)),
            ("2 second", ms(2_000)),
            ("2seconds", ms(2_000)),
            ("90s", ms(90_000)),
            ("1m", ms(60_000)),
            ("10m", ms(600_000)),
            ("0.5m", ms(30_000)),
            ("10 min", ms(600_000)),
            ("10mins", ms(600_000)),
            ("1 minute", ms(60_000)),
            ("10 minutes", ms(600_000)),
            ("2h", ms(7_200_000)),
            ("1.5h", ms(5_400_000)),
            ("1hr", ms(3_600_000)),
            ("1 hour", ms(3_600_000)),
            ("2 hours", ms(7_200_000)),
            ("1h30m", ms(5_400_000)),
            ("1h 30m", ms(5_400_000)),
            ("2m30s", ms(150_000)),
            ("1s500ms", ms(1_500)),
            ("1d", ms(86_400_000)),
            ("7 days", ms(7 * 86_400_000)),
            ("250us", Duration::from_micros(250)),
            ("250µs", Duration::from_micros(250)),
            ("250 \u{3bc}s", Duration::from_micros(250)),
            ("250usec", Duration::from_micros(250)),
            ("75000000ns", ms(75)),
        ];
        for &(s, want) in cases {
            assert_eq!(s.parse::<Span>().map(Span::as_std), Ok(want), "{s}");
        }
    }

    /// What the one grammar refuses, and why, whichever option was given.
    #[test]
    fn durations_refused_by_the_one_grammar() {
        let cases: &[(&str, &str)] = &[
            ("10", "a unit is required"),
            ("0.5", "a unit is required"),
            ("1h30", "a unit is required"),
            ("10M", "unknown unit \"M\""),
            ("5MS", "unknown unit \"MS\""),
            ("1w", "unknown unit \"w\""),
            ("10 m m", "unknown unit"),
            ("0s", "must be greater than zero"),
            ("0h0m", "must be greater than zero"),
            ("-5s", "negative"),
            ("s", "expected a number"),
            ("1.5.5s", "malformed number"),
            ("10  s", "at most one space"),
            ("1h  30m", "at most one space"),
            ("10s ", "trailing space"),
            ("0.5ns", "not a whole number of nanoseconds"),
        ];
        for &(s, want) in cases {
            let e = dur_ns(s).expect_err(s).to_string();
            assert!(e.contains(want), "{s:?}: {e}");
            assert_eq!(
                e,
                format!(
                    "invalid duration {s:?}: {}; expected e.g. {}",
                    e.split_once(": ").unwrap().1.split_once("; expected e.g. ").unwrap().0,
                    UnitKind::Duration.examples()
                )
            );
            assert!(
                UnitKind::Duration.examples().contains("10m"),
                "the examples show minutes"
            );
        }
    }

    /// Each option keeps its own range, said in one wording.
    #[test]
    fn a_duration_out_of_its_range_is_said_one_way() {
        let s = Duration::from_secs;
        let within = |v: &str, min, max| duration_within(v, min, max).map_err(|e| e.to_string());
        assert_eq!(within("1m", s(1), s(60)), Ok(s(60)));
        assert_eq!(within("0.5s", Duration::ZERO, s(60)), Ok(Duration::from_millis(500)));
        assert_eq!(
            within("61s", s(1), s(60)),
            Err("invalid duration \"61s\": out of range; expected 1s to 60s".into())
        );
        assert_eq!(
            within("60.5s", Duration::ZERO, s(60)),
            Err("invalid duration \"60.5s\": out of range; expected at most 60s".into())
        );
        assert_eq!(
            within("2h", s(1), s(3600)),
            Err("invalid duration \"2h\": out of range; expected 1s to 1h".into())
        );
        assert_eq!(
            within("10ms", s(1), s(7 * 86_400)),
            Err("invalid duration \"10ms\": out of range; expected 1s to 7d".into())
        );
        assert_eq!(
            within("10", s(1), s(60)),
            Err(format!(
                "invalid duration \"10\": a unit is required; expected e.g. {}",
                UnitKind::Duration.examples()
            ))
        );
    }

    #[test]
    fn duration_display() {
        let ms = |v: u64| Span::from_std(Duration::from_nanos(v));
        let cases: &[(u64, &str)] = &[
            (150 * MS, "150 ms"),
            (25 * MS, "25 ms"),
            (250_000, "250 µs"),
            (1_500, "1.5 µs"),
            (1_500_000_000, "1.5 s"),
            (75_123_000, "75.123 ms"),
            (75_123_456, "75.123456 ms"),
            (1_000_000_001, "1.000000001 s"),
            (12, "12 ns"),
            (0, "0 ns"),
        ];
        for &(v, want) in cases {
            assert_eq!(ms(v).to_string(), want);
        }
    }

    #[test]
    fn duration_float_helpers() {
        let d: Span = "25ms".parse().unwrap();
        assert_eq!(d.as_millis_f64(), 25.0);
        assert_eq!(d.as_secs_f64(), 0.025);
        assert_eq!(Span::from_millis_f64(25.0).as_std().as_micros(), 25_000);
        assert_eq!(Span::from_millis_f64(-1.0).as_std(), Duration::ZERO);
        assert_eq!(Span::from_millis_f64(f64::NAN).as_std(), Duration::ZERO);
        assert_eq!(Span::from_millis_f64(f64::INFINITY).as_std(), Duration::MAX);
        assert_eq!(Span::from_millis_f64(1e300).as_std(), Duration::MAX);
    }

    #[test]
    fn sizes_accepted() {
        let cases: &[(&str, u64)] = &[
            ("64KiB", 65_536),
            ("4MiB", 4 << 20),
            ("65536", 65_536),
            ("64KB", 64_000),
            ("64kb", 64_000),
            ("64K", 64_000),
            ("16k", 16_000),
            ("1GiB", 1 << 30),
            ("1GB", 1_000_000_000),
            ("1TiB", 1 << 40),
            ("1TB", 1_000_000_000_000),
            ("512B", 512),
            ("512b", 512),
            ("1.5MiB", 1_572_864),
            ("1.5 MiB", 1_572_864),
            ("64 KiB", 65_536),
            ("64KIB", 65_536),
            ("64kiB", 65_536),
            ("0", 0),
            ("0B", 0),
            ("18.75MiB", 19_660_800),
            ("18446744073709551615", u64::MAX),
        ];
        for &(s, want) in cases {
            assert_eq!(size(s), Ok(want), "{s}");
        }
    }

    #[test]
    fn sizes_rejected() {
        let cases: &[(&str, &str)] = &[
            ("1.3B", "not a whole number of bytes"),
            ("0.1", "not a whole number of bytes"),
            ("64Kib", "not bits"),
            ("64kbit", "not bits"),
            ("64bit", "not bits"),
            ("64Mbits", "not bits"),
            ("64Mibit", "not bits"),
            ("-1KiB", "negative"),
            ("", "empty input"),
            ("KiB", "expected a number"),
            ("1e3", "unknown unit"),
            ("64KiB/s", "unknown unit"),
            ("64Ki", "unknown unit"),
            ("64 KiB KiB", "unknown unit"),
            ("18446744073709551616", "too large"),
            ("16777216TiB", "too large"),
        ];
        for &(s, want) in cases {
            let e = size(s).expect_err(s).to_string();
            assert!(e.contains(want), "{s:?}: {e}");
            assert!(e.starts_with("invalid size "), "{e}");
            assert!(e.contains("expected e.g. 64KiB, 4MiB"), "{e}");
        }
    }

    #[test]
    fn bytes_iec_and_display() {
        let cases: &[(u64, &str, &str)] = &[
            (4 << 20, "4 MiB", "4 MiB"),
            (19_660_800, "18.75 MiB", "18.75 MiB"),
            (65_536, "64 KiB", "64 KiB"),
            (3 << 29, "1.5 GiB", "1.5 GiB"),
            (512, "512 B", "512 B"),
            (0, "0 B", "0 B"),
            (1000, "1000 B", "1000 B"),
            (12_345, "12.06 KiB", "12345 B"),
            (1_573_888, "1.5 MiB", "1537 KiB"),
            ((1 << 20) - 1, "1 MiB", "1048575 B"),
            (1 << 50, "1024 TiB", "1024 TiB"),
        ];
        for &(v, iec, exact) in cases {
            assert_eq!(Bytes::new(v).iec(), iec, "{v}");
            assert_eq!(Bytes::new(v).to_string(), exact, "{v}");
        }
    }

    #[test]
    fn serialize_plain_numbers() {
        use serde::ser::Impossible;
        // A tiny serializer capturing the primitive, to avoid a serde_json dependency.
        struct Cap;
        #[derive(Debug, PartialEq)]
        enum V {
            U(u64),
            F(f64),
        }
        #[derive(Debug)]
        struct E;
        impl std::fmt::Display for E {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("unsupported")
            }
        }
        impl std::error::Error for E {}
        impl serde::ser::Error for E {
            fn custom<T: std::fmt::Display>(_: T) -> Self {
                E
            }
        }
        macro_rules! no {
            ($($name:ident($($t:ty),*)),*) => {$(
                fn $name(self, $(_: $t),*) -> Result<V, E> { Err(E) }
            )*};
        }
        impl Serializer for Cap {
            type Ok = V;
            type Error = E;
            type SerializeSeq = Impossible<V, E>;
            type SerializeTuple = Impossible<V, E>;
            type SerializeTupleStruct = Impossible<V, E>;
            type SerializeTupleVariant = Impossible<V, E>;
            type SerializeMap = Impossible<V, E>;
            type SerializeStruct = Impossible<V, E>;
            type SerializeStructVariant = Impossible<V, E>;
            fn serialize_u64(self, v: u64) -> Result<V, E> {
                Ok(V::U(v))
            }
            fn serialize_f64(self, v: f64) -> Result<V, E> {
                Ok(V::F(v))
            }
            no!(
                serialize_bool(bool),
                serialize_i8(i8),
                serialize_i16(i16),
                serialize_i32(i32),
                serialize_i64(i64),
                serialize_u8(u8),
                serialize_u16(u16),
                serialize_u32(u32),
                serialize_f32(f32),
                serialize_char(char),
                serialize_str(&str),
                serialize_bytes(&[u8]),
                serialize_none(),
                serialize_unit(),
                serialize_unit_struct(&'static str),
                serialize_unit_variant(&'static str, u32, &'static str)
            );
            fn serialize_some<T: ?Sized + Serialize>(self, _: &T) -> Result<V, E> {
                Err(E)
            }
            fn serialize_newtype_struct<T: ?Sized + Serialize>(self, _: &'static str, _: &T) -> Result<V, E> {
                Err(E)
            }
            fn serialize_newtype_variant<T: ?Sized + Serialize>(
                self,
                _: &'static str,
                _: u32,
                _: &'static str,
                _: &T,
            ) -> Result<V, E> {
                Err(E)
            }
            fn serialize_seq(self, _: Option<usize>) -> Result<Self::SerializeSeq, E> {
                Err(E)
            }
            fn serialize_tuple(self, _: usize) -> Result<Self::SerializeTuple, E> {
                Err(E)
            }
            fn serialize_tuple_struct(self, _: &'static str, _: usize) -> Result<Self::SerializeTupleStruct, E> {
                Err(E)
            }
            fn serialize_tuple_variant(
                self,
                _: &'static str,
                _: u32,
                _: &'static str,
                _: usize,
            ) -> Result<Self::SerializeTupleVariant, E> {
                Err(E)
            }
            fn serialize_map(self, _: Option<usize>) -> Result<Self::SerializeMap, E> {
                Err(E)
            }
            fn serialize_struct(self, _: &'static str, _: usize) -> Result<Self::SerializeStruct, E> {
                Err(E)
            }
            fn serialize_struct_variant(
                self,
                _: &'static str,
                _: u32,
                _: &'static str,
                _: usize,
            ) -> Result<Self::SerializeStructVariant, E> {
                Err(E)
            }
        }
        assert_eq!(Bitrate::from_bps(5).serialize(Cap).unwrap(), V::U(5));
        assert_eq!(Bytes::new(7).serialize(Cap).unwrap(), V::U(7));
        let d: Span = "25ms".parse().unwrap();
        assert_eq!(d.serialize(Cap).unwrap(), V::F(25.0));
    }

    proptest! {
            #[test]
            fn bitrate_round_trip(v in 1u64..=10_000_000_000_000) {
                let b = Bitrate::from_bps(v);
                prop_assert_eq!(b.to_string().parse::<Bitrate>(), Ok(b));
            }

            #[test]
            fn bitrate_round_trip_full_range(v in 1u64..) {
                let b = Bitrate::from_bps(v);
                prop_assert_eq!(b.to_string().parse::<Bitrate>(), Ok(b));
            }

            #[test]
            fn bytes_round_trip(v in 0u64..=(1u64 << 50)) {
                let b = Bytes::new(v);
                prop_assert_eq!(b.to_string().parse::<Bytes>(), Ok(b));
            }

            #[test]
            fn bytes_round_trip_full_range(v in any::<u64>()) {
                let b = Bytes::new(v);
                prop_assert_eq!(b.to_string().parse::<Bytes>(), Ok(b));
            }

            #[test]
            fn bytes_round_trip_iec_multiples(k in 0u64..=(1 << 30), shift in prop::sample::select(vec![0u32, 8, 10, 18, 20, 28, 30])) {
                let b = Bytes::new(k << shift);
                prop_assert_eq!(b.to_string().parse::<Bytes>(), Ok(b));
            }

            #[test]
            fn duration_round_trip(ns in 1u64..=10_000_000_000_000) {
                let d = Span::from_std(Duration::from_nanos(ns));
                prop_assert_eq!(d.to_string().parse::<Span>(), Ok(d));
            }

            #[test]
            fn duration_round_trip_full_range(secs in any::<u64>(), nanos in 0u32..1_000_000_000) {
                prop_assume!(secs > 0 || nanos > 0);
                let d = Span::from_std(Duration::new(secs, nanos));
                prop_assert_eq!(d.to_string().parse::<Span>(), Ok(d));
            }

            #[test]
            fn arbitrary_strings_never_panic(s in ".*") {
                let _ = s.parse::<Bitrate>();
                let _ = s.parse::<Bytes>();
                let _ = s.parse::<Span>();
            }

            #[test]
            fn unit_like_strings_never_panic(s in "[0-9.]{0,20}[a-zA-Zµ/ ]{0,8}") {
                for r in [
                    s.parse::<Bitrate>().map(|_| ()),
                    s.parse::<Bytes>().map(|_| ()),
                    s.parse::<Span>().map(|_| ()),
                ] {
                    if let Err(e) = r {
                        let m = e.to_string();
                        prop_assert!(m.starts_with("invalid ") && !m.contains('\n'));
                    }
                }
            }

            #[test]
            fn bare_numbers_rejected(s in "-?[0-9]{1,30}(\\.[0-9]{1,12})?") {
                prop_assert!(s.parse::<Bitrate>().is_err());
                prop_assert!(s.parse::<Span>().is_err());
            }

            #[test]
            fn decimal_parse_is_exact(int in 0u64..1_000_000, frac in 0u32..1000) {
                // "int.frac(3 digits)ms" is exactly int*1e6 + frac*1e3 ns.
                let s = format!("{int}.{frac:03}ms");
                let want = u128::from(int) * 1_000_000 + u128::from(frac) * 1_000;
                if want == 0 {
                    prop_assert!(dur_ns(&s).is_err());
                } else {
                    prop_assert_eq!(dur_ns(&s), Ok(want));
                }
            }

            // PROPTEST_CASES raises the case count: bench/fuzz-parser.sh runs 1,000,000.
            #[test]
            fn parsers_never_panic_on_any_text(
                junk in "\\PC{0,40}",
                shaped in "[-+]?[0-9]{0,30}(\\.[0-9]{0,30})?([eE][-+]?[0-9]{1,4})?[ ]?(bit|kbit|Mbit|gbit|G|t|m|ms|s|us|ns|µs|KiB|MiB|GiB|TiB|PiB|EiB|KB|MB|k|B|bps|mbps|Mbit/s|x|)",
                bytes in proptest::collection::vec(any::<u8>(), 0..40),
                ctrl in "[0-9]{1,3}[\\n\\r\\x1b\\x00\\x7fa-z]{0,4}",
            ) {
                for t in [junk.as_str(), shaped.as_str(), &String::from_utf8_lossy(&bytes), ctrl.as_str()] {
                    // Whatever is accepted displays and parses back to itself; whatever is
                    // refused is one line.
                    match t.parse::<Bitrate>() {
                        Ok(b) => prop_assert_eq!(b.to_string().parse::<Bitrate>(), Ok(b)),
                        Err(e) => prop_assert!(!e.to_string().contains('\n'), "{e}"),
                    }
                    match t.parse::<Bytes>() {
                        Ok(b) => prop_assert_eq!(b.to_string().parse::<Bytes>(), Ok(b)),
                        Err(e) => prop_assert!(!e.to_string().contains('\n'), "{e}"),
                    }
                    match t.parse::<Span>() {
                        Ok(d) => {
                            let _ = (d.as_millis_f64(), d.to_string());
                        }
                        Err(e) => prop_assert!(!e.to_string().contains('\n'), "{e}"),
                    }
                }
            }
    }
}
