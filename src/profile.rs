//! Profile templates: which keys to recommend for an OS and how to compute each value.
//! The shipped profiles (profiles/*.toml) are embedded; `--profile PATH` loads a user's.
//!
//! A value or reason is text with `{expression}` holes (see [`crate::expr`]); a hole in a
//! reason may end in `:iec` to print bytes as IEC units, or in `:bdp` to print "BDP" for a
//! number of bytes equal to the header's BDP (the fact `bdp`) and "BDP of 4.63 MiB" for another
//! (the receiving direction's on an asymmetric path). Facts an expression may use are
//! listed in [`FACTS`].

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::error::Error;
use crate::expr::{self, Env};
use crate::os::Os;
use crate::sysctl::{Access, KeyState, same_value};

/// Shipped profiles, by name.
pub const SHIPPED: &[(&str, &str)] = &[
    ("linux", include_str!("../profiles/linux.toml")),
    ("freebsd", include_str!("../profiles/freebsd.toml")),
    ("macos", include_str!("../profiles/macos.toml")),
];

/// Hint for a profile name tcptune does not know.
pub const LIST_HINT: &str =
    "`tcptune profiles` lists the shipped ones; `tcptune profiles export linux > my.toml` starts your own";

/// Larger profile files are refused: the shipped ones are 2 to 5 KiB.
pub const MAX_PROFILE_BYTES: usize = 1 << 20;

/// Hint for a profile file with a mistake.
const FILE_HINT: &str = "compare with `tcptune profiles show linux`; the fields and facts are in `man tcptune` (PROFILES) and docs/GUIDE.md";

/// The facts a profile expression may name, with what they mean.
pub const FACTS: &[(&str, &str)] = &[
    (
        "bdp",
        "bandwidth-delay product in bytes (rate × RTT_min), of the direction this host sends in",
    ),
    (
        "receive_bdp",
        "bandwidth-delay product in bytes of the direction this host receives in (the far end's rate; bdp unless a reverse test measured it apart)",
    ),
    (
        "receive_rate_bps",
        "the far end's sending rate, bit/s (rate_bps unless measured apart)",
    ),
    (
        "buffer",
        "recommended receive buffer maximum in bytes (2 × BDP × (1 + headroom), 64 KiB steps)",
    ),
    (
        "send_buffer",
        "recommended send buffer maximum in bytes (2.5 × BDP, 64 KiB steps)",
    ),
    ("headroom_pct", "RTT headroom added for jitter, percent"),
    ("rate_bps", "path rate, bit/s"),
    ("rtt_ms", "path RTT (minimum), ms"),
    ("sizing_rtt_ms", "RTT the buffers are sized for, ms"),
    ("mtu", "egress MTU in bytes (0 when unknown)"),
    ("flows", "expected concurrent bulk flows (--flows)"),
    (
        "needs_raise",
        "1 when a running (or stock) buffer maximum listed in `caps` is below its fact",
    ),
    (
        "loss_recovery",
        "1 when the send buffer (and the congestion control) are sized for loss recovery: a lossy, shallow-queue or unmeasured path in the direction this host sends, or --loss-recovery",
    ),
    (
        "receive_loss_recovery",
        "1 when the receive buffer is sized for loss recovery: the same, in the direction this host receives",
    ),
    (
        "loss_free",
        "1 when the test of the direction this host sends in measured no loss after startup (a buffer sized past 2.5 × BDP there is for the queue and the RTT's growth)",
    ),
    (
        "receive_loss_free",
        "1 when the test of the direction this host receives in measured no loss after startup",
    ),
    (
        "loss_factor",
        "the multiple of the BDP the send buffer is sized to (2.5 loss-free; 5 or more for loss recovery, by the loss measured)",
    ),
    (
        "receive_loss_factor",
        "the multiple of the BDP the receive buffer is sized to before the window share (2 × (1 + headroom) loss-free; 5 or more for loss recovery)",
    ),
    (
        "class_measured",
        "1 when the path class (clean, lossy, shallow) was measured or given (--loss-recovery, --clean-path), not assumed",
    ),
    (
        "shared",
        "1 when the sending direction's test met a queue others kept standing: the path is shared with other flows",
    ),
    (
        "receive_shared",
        "1 when the receiving direction's test met a queue others kept standing",
    ),
    (
        "policed",
        "1 when the sending direction's test stopped at a policer's rate (loss at the base RTT, no queue)",
    ),
    (
        "cubic_at_risk",
        "1 when nothing measured the path's loss and 1 % random loss would hold CUBIC's window below the BDP (RFC 9438's response function)",
    ),
    (
        "notsent_lowat",
        "tcp_notsent_lowat for the path rate (10 ms of it, 128 KiB..4 MiB), bytes",
    ),
    (
        "window_share",
        "the receive-window share the receive buffer is sized for (measured, else 0.5)",
    ),
    ("cc_bbr", "1 when the bbr congestion control is available"),
    (
        "cc_cubic",
        "1 when cubic is available (or unknown: advising for another host)",
    ),
    (
        "cc_htcp",
        "1 when htcp is available (or unknown: advising for another host)",
    ),
    ("qdisc_fq", "1 when the fq qdisc is available"),
];

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Policy {
    /// Never recommend less than is running, field by field (raise-only).
    #[default]
    AtLeast,
    /// Recommend exactly this value (flags, algorithm names).
    Exact,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Stage {
    /// A sysctl that can change on a running system.
    #[default]
    Runtime,
    /// A boot-time tunable (FreeBSD /boot/loader.conf).
    Boot,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Profile {
    pub name: String,
    pub os: Os,
    pub description: String,
    /// Keys whose last field is a buffer maximum autotuning may reach, each with the fact it
    /// must reach (`buffer`, `send_buffer`); `needs_raise` is 1 when any falls short.
    #[serde(default)]
    pub caps: BTreeMap<String, String>,
    /// Stock values of this OS, used as the baseline when the running values are unknown.
    #[serde(default)]
    pub stock: BTreeMap<String, String>,
    #[serde(rename = "setting", default)]
    pub settings: Vec<Entry>,
    /// Where the profile came from (`<shipped linux>` or the path), for error messages.
    #[serde(skip)]
    pub origin: String,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Entry {
    pub key: String,
    pub value: String,
    pub reason: String,
    #[serde(default)]
    pub policy: Policy,
    #[serde(default)]
    pub stage: Stage,
    /// Recommend only when this expression is true.
    #[serde(default)]
    pub when: Option<String>,
    /// Something the user must do besides the sysctl (load a module, persist a tunable).
    #[serde(default)]
    pub note: Option<String>,
    /// What the key is, in a few words for people ("receive max"); default: the key.
    #[serde(default)]
    pub label: Option<String>,
    /// The reason in one short clause with `{expression}` holes ("6 × BDP for loss
    /// recovery"), for the one comment line per setting; `reason` is the derivation
    /// (`--explain`). Default: `reason`, shortened.
    #[serde(default)]
    pub why: Option<String>,
    /// How a person reads the value ([`Shown`]); default: as it is.
    #[serde(default)]
    pub shown: Shown,
    /// Line of each field in the source text (0 when unknown), for error messages.
    #[serde(skip)]
    pub lines: FieldLines,
}

/// How a person reads a key's value, for the "was → now" of the advice.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Shown {
    /// As it is (an algorithm's name, a count).
    #[default]
    Text,
    /// A size in bytes (`53.7 MiB`).
    Size,
    /// The last of its fields is a size: an autotuning maximum (`4096 131072 6291456` reads
    /// `6 MiB`).
    MaxSize,
    /// 0 is off and 1 is on.
    Switch,
}

/// Where an entry's fields sit in the profile text.
#[derive(Debug, Clone, Default)]
pub struct FieldLines {
    pub key: usize,
    pub value: usize,
    pub reason: usize,
    pub when: usize,
}

impl FieldLines {
    fn of(&self, field: &str) -> usize {
        let l = match field {
            "value" => self.value,
            "reason" => self.reason,
            "when" => self.when,
            _ => self.key,
        };
        if l == 0 { self.key } else { l }
    }
}

/// The same document read again with spans, only to find lines (no `deny_unknown_fields`:
/// the strict pass has already accepted it).
#[derive(Deserialize)]
struct Spans {
    #[serde(default)]
    caps: BTreeMap<toml::Spanned<String>, toml::Spanned<String>>,
    #[serde(rename = "setting", default)]
    settings: Vec<EntrySpans>,
}

#[derive(Deserialize)]
struct EntrySpans {
    key: toml::Spanned<String>,
    value: toml::Spanned<String>,
    reason: toml::Spanned<String>,
    when: Option<toml::Spanned<String>>,
}

/// 1-based lines of byte offsets: the offsets of the line starts, searched. Counting the
/// newlines before each offset made a 10,000-setting profile take a minute.
struct Lines(Vec<usize>);

impl Lines {
    fn new(text: &str) -> Self {
        Self(
            std::iter::once(0)
                .chain(text.match_indices('\n').map(|(i, _)| i + 1))
                .collect(),
        )
    }
    fn at(&self, offset: usize) -> usize {
        self.0.partition_point(|&start| start <= offset).max(1)
    }
    /// 1-based line and column (in characters) of byte `offset` of `text`.
    fn place(&self, text: &str, offset: usize) -> (usize, usize) {
        let line = self.at(offset);
        let start = self.0[line - 1];
        let column = text
            .get(start..offset.min(text.len()))
            .map_or(1, |s| s.chars().count() + 1);
        (line, column)
    }
}

/// What tcptune recommends for one key.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Setting {
    pub key: String,
    /// The recommended value (after the raise-only policy).
    pub value: String,
    /// The running value; null when unknown.
    pub current: Option<String>,
    pub reason: String,
    pub stage: Stage,
    pub action: Action,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// What the key is, for people ("receive max").
    pub label: String,
    /// The reason in one short clause; `reason` is the whole derivation.
    pub why: String,
    /// How a person reads the value.
    pub shown: Shown,
    /// The OS's stock value it was compared with, when the running one is not known
    /// (advising for another system).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stock: Option<String>,
    /// How the value was kept a valid one when the template and the running value gave none
    /// (the advice says it in a note, naming the end).
    #[serde(skip)]
    pub fallback: Option<Fallback>,
}

/// How a rendered value was kept valid: a key's fields must not decrease (min <= default <=
/// max), and a template's literal field (tcp_rmem's default, 131072) may stand above a
/// small computed maximum (64 KiB on a short path) with no running value to raise it from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fallback {
    /// Why the running value gave nothing to raise from; None: it was read (and the fields
    /// still decreased: an odd running value, or --allow-lower on a short path).
    pub unread: Option<Unread>,
    pub kept: Kept,
}

/// Why a key's running value gave no baseline.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unread {
    /// The key is not there (not in this kernel, not reported by the far end).
    Absent,
    Unreadable,
    /// It runs no value of its kind ([`crate::sysctl::file::check_running`]).
    Odd,
}

/// What kept the value valid.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Kept {
    /// The profile's stock value stood in for the running one.
    Stock,
    /// Each field above the next was lowered to it; the maximum, bytes.
    Clamped(u64),
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", tag = "kind", content = "why")]
pub enum Action {
    /// Change the running value (or set it: running value unknown).
    Set,
    /// The running value already meets the recommendation.
    Keep,
    /// The key cannot be set here: absent or read-only; `why` says which.
    Unavailable(String),
}

/// The longest comment line a setting gets in a file, in characters: what a person reads at a
/// glance, inside the 100 columns of every line of the file.
pub const LINE_MAX: usize = 90;

/// What a setting changes, in readable units: the running value (None: unknown), the advised
/// one, and for sizes the change in percent.
#[derive(Debug, Clone, PartialEq)]
pub struct Change {
    pub from: Option<String>,
    pub to: String,
    pub pct: Option<f64>,
}

impl Change {
    /// "6 MiB → 53.7 MiB, 8.95 ×", "cubic → bbr", "→ 53.7 MiB" (running value unknown), or the
    /// value alone when it does not change.
    pub fn words(&self, pct_sep: &str) -> String {
        let pct = self
            .pct
            .map(|p| format!("{pct_sep}{}", crate::text::pct_change(p)))
            .unwrap_or_default();
        match &self.from {
            Some(f) if *f == self.to => self.to.clone(),
            Some(f) => format!("{f} \u{2192} {}{pct}", self.to),
            None => format!("\u{2192} {}", self.to),
        }
    }
}

impl Setting {
    /// The change from the running value to the advised one, in readable units.
    pub fn change(&self) -> Change {
        // The running value, else the stock one it was compared with.
        let from = self.current.as_deref().or(self.stock.as_deref());
        let (from_shown, to_shown) = match (self.shown, from) {
            // The maximum may stay while another field changes: show the fields that do.
            (Shown::MaxSize, Some(f))
                if f != self.value && shown_value(self.shown, f) == shown_value(self.shown, &self.value) =>
            {
                (Some(f.to_string()), self.value.clone())
            }
            (shown, f) => (f.map(|f| shown_value(shown, f)), shown_value(shown, &self.value)),
        };
        let size = |v: &str| match self.shown {
            Shown::Size => v.trim().parse::<f64>().ok(),
            Shown::MaxSize => numeric_fields(v).and_then(|f| f.last().copied()),
            Shown::Text | Shown::Switch => None,
        };
        let pct = match (from.and_then(size), size(&self.value)) {
            (Some(f), Some(t)) if f > 0.0 && f != t && f < UNLIMITED => Some((t - f) / f * 100.0),
            _ => None,
        };
        Change {
            from: from_shown,
            to: to_shown,
            pct,
        }
    }

    /// The setting's one comment line, for people: what changes from what to what, and why
    /// ("receive max 6 MiB → 53.7 MiB (8.95 ×): 6 × BDP for loss recovery"), at most
    /// [`LINE_MAX`] characters (a long why is cut, marked `…`; `--explain` has it whole).
    pub fn line(&self) -> String {
        let c = self.change();
        let head = match (&self.action, self.stage) {
            (_, Stage::Boot) => format!("{} \u{2192} {} in /boot/loader.conf", self.label, c.to),
            (Action::Keep, _) if self.current.is_none() => format!("{} {}, the stock value", self.label, c.to),
            (Action::Keep, _) => format!("{} {}, already running", self.label, c.to),
            (Action::Set, _) => match &c.pct {
                Some(p) => format!(
                    "{} {} ({})",
                    self.label,
                    Change { pct: None, ..c.clone() }.words(""),
                    crate::text::pct_change(*p)
                ),
                None => format!("{} {}", self.label, c.words("")),
            },
            (Action::Unavailable(why), _) => {
                let c = Change { pct: None, ..c };
                return cut(
                    &format!("{} {}, not applied ({why})", self.label, c.words("")),
                    LINE_MAX,
                );
            }
        };
        cut(&format!("{head}: {}", self.why), LINE_MAX)
    }
}

/// A value that stands for "no limit" (`tcp_notsent_lowat`'s stock UINT_MAX).
const UNLIMITED: f64 = 4_294_967_295.0;

/// A value as a person reads it ([`Shown`]).
fn shown_value(shown: Shown, v: &str) -> String {
    let size = |n: f64| {
        if n >= UNLIMITED {
            "no limit".to_string()
        } else {
            #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
            crate::text::size(n as u64)
        }
    };
    match shown {
        Shown::Text => v.to_string(),
        Shown::Size => v.trim().parse::<f64>().map_or_else(|_| v.to_string(), size),
        Shown::MaxSize => numeric_fields(v)
            .and_then(|f| f.last().copied())
            .map_or_else(|| v.to_string(), size),
        Shown::Switch => match v.trim() {
            "0" => "off".to_string(),
            "1" => "on".to_string(),
            other => other.to_string(),
        },
    }
}

/// `s` cut at a word to at most `max` characters, `…` where cut.
pub fn cut(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        return s.to_string();
    }
    let mut out = String::new();
    for word in s.split(' ') {
        if out.chars().count() + word.chars().count() + 2 > max {
            break;
        }
        if !out.is_empty() {
            out.push(' ');
        }
        out.push_str(word);
    }
    out.truncate(out.trim_end_matches([',', ':', ';']).len());
    out.push('\u{2026}');
    out
}

impl Profile {
    /// A shipped profile by name, or a TOML file by path (anything with a `/` or `.toml`).
    pub fn load(name_or_path: &str) -> Result<Self, Error> {
        if let Some((_, text)) = SHIPPED.iter().find(|(n, _)| *n == name_or_path) {
            return Self::parse(text, &format!("<shipped {name_or_path}>"));
        }
        let path = Path::new(name_or_path);
        if name_or_path.contains('/') || name_or_path.ends_with(".toml") || path.exists() {
            let shown = crate::input::shown(path);
            let bytes = crate::input::read_regular_bytes(path, MAX_PROFILE_BYTES, "profile")
                .map_err(|e| e.with_hint(LIST_HINT))?;
            // No place in a file that is not text: where its first bad byte sits is something
            // of what it holds (`--profile` may name any file root can read).
            let text = String::from_utf8(bytes).map_err(|_| {
                Error::usage(format!("profile {shown}: not a profile: not UTF-8 text")).with_hint(LIST_HINT)
            })?;
            return Self::parse(&text, &shown);
        }
        let names: Vec<&str> = SHIPPED.iter().map(|(n, _)| *n).collect();
        Err(Error::usage(format!(
            "unknown profile \"{}\": expected one of {} or a path to a .toml file",
            crate::sysctl::file::excerpt(name_or_path),
            names.join(", ")
        ))
        .with_hint(LIST_HINT))
    }

    pub fn for_os(os: Os) -> Self {
        // The shipped profiles are tested to parse; a failure here is a build defect.
        Self::load(os.name()).unwrap_or_else(|e| panic!("shipped profile {os} is invalid: {e}"))
    }

    /// Parse and validate. Errors are one line naming `origin`, the line and the field, and a
    /// hint.
    pub fn parse(text: &str, origin: &str) -> Result<Self, Error> {
        // A parse error's line and column are a place in the file: said only of a file that
        // is TOML in shape, never of one that is no profile at all (`/etc/shadow` under sudo).
        if !looks_like_toml(text) {
            return Err(Error::usage(format!(
                "profile {origin}: not a profile: not TOML (lines of `key = value`, [tables] and # comments)"
            ))
            .with_hint(LIST_HINT));
        }
        let lines = Lines::new(text);
        let mut p: Self = toml::from_str(text).map_err(|e| {
            let msg = toml_message(e.message());
            match e.span() {
                Some(s) => {
                    let (line, column) = lines.place(text, s.start);
                    let field =
                        schema_field(text, lines.0[line - 1], s.start).map_or(String::new(), |f| format!("{f}: "));
                    Error::usage(format!("profile {origin}, line {line}, column {column}: {field}{msg}"))
                }
                None => Error::usage(format!("profile {origin}: {msg}")),
            }
            .with_hint(FILE_HINT)
        })?;
        p.origin = origin.to_string();
        let mut cap_lines = BTreeMap::new();
        if let Ok(spans) = toml::from_str::<Spans>(text) {
            for (k, v) in spans.caps {
                cap_lines.insert(k.into_inner(), lines.at(v.span().start));
            }
            for (e, s) in p.settings.iter_mut().zip(spans.settings) {
                e.lines = FieldLines {
                    key: lines.at(s.key.span().start),
                    value: lines.at(s.value.span().start),
                    reason: lines.at(s.reason.span().start),
                    when: s.when.map_or(0, |w| lines.at(w.span().start)),
                };
            }
        }
        p.validate(&cap_lines)?;
        Ok(p)
    }

    /// Every check a profile must pass before it renders, in the order its errors are
    /// reported: one line of printable text in every field first, then what each field means.
    fn validate(&self, cap_lines: &BTreeMap<String, usize>) -> Result<(), Error> {
        self.check_plain_head(cap_lines)?;
        self.check_stock()?;
        for e in &self.settings {
            self.check_plain_setting(e)?;
        }
        self.check_caps(cap_lines)?;
        for e in &self.settings {
            self.check_setting_key(e)?;
            self.check_setting_value(e)?;
            self.check_setting_facts(e)?;
        }
        Ok(())
    }

    /// Render the recommendations. `state` gives the running value of a key (None when the
    /// running values are unknown, e.g. advising for another OS).
    pub fn render(
        &self,
        facts: &BTreeMap<String, f64>,
        state: &dyn Fn(&str) -> Option<KeyState>,
        allow_lower: bool,
    ) -> Result<Vec<Setting>, Error> {
        let mut out = Vec::new();
        for e in &self.settings {
            if let Some(s) = self.render_setting(e, facts, state, allow_lower)? {
                out.push(s);
            }
        }
        Ok(out)
    }
}

/// Validation, one kind of mistake each, in [`Profile::validate`]'s order.
impl Profile {
    /// The name, the description, and the keys and values of `caps` and `stock`.
    fn check_plain_head(&self, cap_lines: &BTreeMap<String, usize>) -> Result<(), Error> {
        let origin = &self.origin;
        plain(origin, "name", 0, &self.name)?;
        plain(origin, "description", 0, &self.description)?;
        for (k, v) in self.caps.iter().chain(&self.stock) {
            let line = cap_lines.get(k).copied().unwrap_or(0);
            plain(origin, "caps/stock key", line, k)?;
            plain(origin, &crate::sysctl::file::excerpt(k), line, v)?;
        }
        Ok(())
    }

    /// Stock values are networking keys with values a sysctl file may hold.
    fn check_stock(&self) -> Result<(), Error> {
        let origin = &self.origin;
        for (key, value) in &self.stock {
            if !self.os.is_network_key(key) {
                return Err(Error::usage(format!(
                    "profile {origin}: stock: {} is not a networking sysctl key for {}",
                    crate::sysctl::file::excerpt(key),
                    self.os
                ))
                .with_hint(key_hint(self.os)));
            }
            crate::sysctl::file::check_value(key, value, self.os)
                .map_err(|m| Error::usage(format!("profile {origin}: stock: {m}")).with_hint(FILE_HINT))?;
        }
        Ok(())
    }

    /// Every text field of one setting.
    fn check_plain_setting(&self, e: &Entry) -> Result<(), Error> {
        for (field, t) in [
            ("key", Some(&e.key)),
            ("value", Some(&e.value)),
            ("reason", Some(&e.reason)),
            ("when", e.when.as_ref()),
            ("note", e.note.as_ref()),
            ("label", e.label.as_ref()),
            ("why", e.why.as_ref()),
        ] {
            if let Some(t) = t {
                plain(
                    &self.origin,
                    &format!("setting {}: {field}", crate::sysctl::file::excerpt(&e.key)),
                    e.lines.of(field),
                    t,
                )?;
            }
        }
        Ok(())
    }

    /// Each cap names a fact.
    fn check_caps(&self, cap_lines: &BTreeMap<String, usize>) -> Result<(), Error> {
        for (key, fact) in &self.caps {
            if !FACTS.iter().any(|(f, _)| f == fact) {
                return Err(Error::usage(format!(
                    "profile {}, line {}: caps: {key} = \"{fact}\" is not a known fact",
                    self.origin,
                    cap_lines.get(key).copied().unwrap_or(0)
                ))
                .with_hint(facts_hint()));
            }
        }
        Ok(())
    }

    /// A runtime key is a networking sysctl; a boot key one of the tunables tcptune writes.
    fn check_setting_key(&self, e: &Entry) -> Result<(), Error> {
        match e.stage {
            Stage::Runtime if !self.os.is_network_key(&e.key) => Err(self
                .setting_error(e, "key", &format!("not a networking sysctl key for {}", self.os))
                .with_hint(key_hint(self.os))),
            Stage::Runtime => Ok(()),
            // The same care for /boot/loader.conf as for sysctl.conf: a boot entry once wrote
            // init_path and kern.securelevel there.
            Stage::Boot if boot_kind(self.os, &e.key).is_none() => Err(self
                .setting_error(e, "key", "not a networking boot-time tunable tcptune writes")
                .with_hint(BOOT_HINT)),
            Stage::Boot => Ok(()),
        }
    }

    /// The value template's literal text keeps the grammar of its file; without holes it is
    /// final and is checked as apply will check it.
    fn check_setting_value(&self, e: &Entry) -> Result<(), Error> {
        let (checked, hint) = match e.stage {
            Stage::Runtime => (
                check_runtime_template(&e.value).and_then(|()| {
                    if e.value.contains('{') {
                        Ok(())
                    } else {
                        crate::sysctl::file::check_value(&e.key, &e.value, self.os).map(|_| ())
                    }
                }),
                FILE_HINT,
            ),
            // A key that is no boot-time tunable was refused by check_setting_key.
            Stage::Boot => (
                boot_kind(self.os, &e.key).map_or(Ok(()), |kind| check_boot_template(kind, &e.value)),
                BOOT_HINT,
            ),
        };
        checked.map_err(|m| self.setting_error(e, "value", &m).with_hint(hint))
    }

    /// Every hole of the value and the reason, and the `when`, parse and name known facts.
    fn check_setting_facts(&self, e: &Entry) -> Result<(), Error> {
        let at = |field: &str, m: &str| self.setting_error(e, field, m);
        let mut exprs: Vec<(&str, String)> = Vec::new();
        let why = e.why.as_deref().unwrap_or_default();
        for (field, t) in [("value", e.value.as_str()), ("reason", e.reason.as_str()), ("why", why)] {
            for hole in holes(t).map_err(|m| at(field, &m).with_hint(FILE_HINT))? {
                exprs.push((
                    field,
                    hole.trim_end_matches(":iec").trim_end_matches(":bdp").to_string(),
                ));
            }
        }
        if let Some(w) = &e.when {
            exprs.push(("when", w.clone()));
        }
        for (field, src) in exprs {
            let ex = expr::parse(&src).map_err(|m| at(field, &m).with_hint(FILE_HINT))?;
            let mut vars = Vec::new();
            ex.vars(&mut vars);
            if let Some(v) = vars.iter().find(|v| !FACTS.iter().any(|(f, _)| f == v)) {
                return Err(at(field, &format!("unknown fact `{v}`")).with_hint(facts_hint()));
            }
        }
        Ok(())
    }

    /// "profile ORIGIN, line N: setting KEY: FIELD: what", at the field's line.
    fn setting_error(&self, e: &Entry, field: &str, what: &str) -> Error {
        Error::usage(format!(
            "profile {}, line {}: setting {}: {field}: {what}",
            self.origin,
            e.lines.of(field),
            e.key
        ))
    }
}

/// Rendering, one setting at a time.
impl Profile {
    /// One setting for the facts and the running value of its key; None when its `when` is
    /// false.
    fn render_setting(
        &self,
        e: &Entry,
        facts: &BTreeMap<String, f64>,
        state: &dyn Fn(&str) -> Option<KeyState>,
        allow_lower: bool,
    ) -> Result<Option<Setting>, Error> {
        let ks = if e.stage == Stage::Runtime { state(&e.key) } else { None };
        let current = ks.as_ref().and_then(|k| k.value().map(str::to_string));
        let unread = self.unread(&e.key, ks.as_ref());
        // The stock value stands in when the running values are unknown, and where a key
        // that could not be read leaves no valid value ([`Self::valid_value`]).
        let baseline = match &ks {
            None => self.stock.get(&e.key).cloned(),
            Some(_) if unread.is_none() => current.clone(),
            Some(_) => None,
        };
        let cur_fields = baseline.as_deref().and_then(numeric_fields);
        let env = Env {
            facts,
            current: cur_fields.as_deref(),
        };
        let fail = |field: &'static str| move |m: String| self.setting_error(e, field, &m).with_hint(FILE_HINT);
        if let Some(w) = &e.when
            && expr::parse(w).and_then(|x| x.eval(&env)).map_err(fail("when"))? == 0.0
        {
            return Ok(None);
        }
        let (value, fallback) = self.valid_value(e, &env, unread, allow_lower).map_err(fail("value"))?;
        let action = action(ks.as_ref(), baseline.as_deref(), &value, e.stage);
        let reason = fill(&e.reason, &env, true).map_err(fail("reason"))?;
        let why = match &e.why {
            Some(w) => fill(w, &env, true).map_err(fail("why"))?,
            None => shortened(&reason),
        };
        let stock = if current.is_none() { baseline } else { None };
        Ok(Some(Setting {
            key: e.key.clone(),
            value,
            current,
            reason,
            stage: e.stage,
            action,
            note: e.note.clone(),
            label: e.label.clone().unwrap_or_else(|| e.key.clone()),
            why,
            shown: e.shown,
            stock,
            fallback,
        }))
    }

    /// Why `key`'s running value gives nothing to raise from: absent, unreadable, or no value
    /// of its kind. None: it was read, or nothing is known of the running values.
    fn unread(&self, key: &str, ks: Option<&KeyState>) -> Option<Unread> {
        match ks? {
            KeyState::Absent => Some(Unread::Absent),
            KeyState::Unreadable(_) => Some(Unread::Unreadable),
            KeyState::Present { value, .. } => crate::sysctl::file::check_running(self.os, key, value)
                .is_err()
                .then_some(Unread::Odd),
        }
    }

    /// The recommendation ([`Self::recommend`]), checked like a line of a sysctl file (or
    /// loader.conf): an expression's result or a running value must not change the grammar.
    /// Where it is no valid value only because its fields decrease (no running value raised a
    /// template's literal default above a small maximum, or the running one decreased), it is
    /// kept valid and says how: from the stock value when the running one could not be read
    /// (or is no value of its kind), else each field lowered to the next. Anything else is the profile's error.
    fn valid_value(
        &self,
        e: &Entry,
        env: &Env<'_>,
        unread: Option<Unread>,
        allow_lower: bool,
    ) -> Result<(String, Option<Fallback>), String> {
        let value = self.recommend(e, env, allow_lower)?;
        let Err(why) = self.check_rendered(e, &value) else {
            return Ok((value, None));
        };
        let invalid = || format!("renders as an invalid value: {why}");
        if e.stage != Stage::Runtime {
            return Err(invalid());
        }
        let kept = |kept| Some(Fallback { unread, kept });
        // A key this system lacks has no stock value either: its fields are only ordered.
        if matches!(unread, Some(Unread::Unreadable | Unread::Odd))
            && let Some(stock) = self.stock.get(&e.key)
        {
            let fields = numeric_fields(stock);
            let env = Env {
                facts: env.facts,
                current: fields.as_deref(),
            };
            let v = self.recommend(e, &env, allow_lower)?;
            if self.check_rendered(e, &v).is_ok() {
                return Ok((v, kept(Kept::Stock)));
            }
        }
        // What the template computed stays: a field is lowered only where it holds the
        // template's literal text or a running value ("4096 {buffer} 8192" stays an error).
        let filled = clamp_fields(self.os, &fill(&e.value, env, false)?);
        let lowerable: Vec<bool> = e
            .value
            .split_whitespace()
            .zip(filled.split_whitespace().zip(value.split_whitespace()))
            .map(|(t, (f, v))| !t.contains('{') || f != v)
            .collect();
        match clamp_order(self.os, &e.key, &value, &lowerable) {
            Some((v, max)) if self.check_rendered(e, &v).is_ok() => Ok((v, kept(Kept::Clamped(max)))),
            _ => Err(invalid()),
        }
    }

    /// The value template filled in, within what Linux accepts, and — under the raise-only
    /// policy — never below the running value, field by field.
    fn recommend(&self, e: &Entry, env: &Env<'_>, allow_lower: bool) -> Result<String, String> {
        let rec = clamp_fields(self.os, &fill(&e.value, env, false)?);
        Ok(match (e.policy, env.current, numeric_fields(&rec)) {
            (Policy::AtLeast, Some(cur), Some(want)) if !allow_lower && cur.len() == want.len() => {
                join_fields(&cur.iter().zip(&want).map(|(c, w)| c.max(*w)).collect::<Vec<_>>())
            }
            _ => rec,
        })
    }

    /// A rendered value as its file takes it: a sysctl value, or a boot-time tunable's.
    fn check_rendered(&self, e: &Entry, value: &str) -> Result<(), String> {
        match e.stage {
            Stage::Runtime => crate::sysctl::file::check_value(&e.key, value, self.os).map(|_| ()),
            Stage::Boot => boot_kind(self.os, &e.key)
                .ok_or_else(|| "not a boot-time tunable".to_string())
                .and_then(|k| check_boot_value(k, value)),
        }
    }
}

/// What to do with a rendered value, given the key's state here (None: unknown, compared
/// with `baseline`, the stock value).
fn action(ks: Option<&KeyState>, baseline: Option<&str>, value: &str, stage: Stage) -> Action {
    match ks {
        Some(KeyState::Absent) => Action::Unavailable("not in this kernel or network namespace".into()),
        Some(KeyState::Unreadable(why)) => Action::Unavailable(format!("unreadable: {why}")),
        // Only the kernel's refusal makes a key unavailable: a key that needs root is
        // advice for root to apply, whoever reads it.
        Some(KeyState::Present {
            access: Access::ReadOnly,
            value: v,
        }) if !same_value(v, value) => Action::Unavailable("read-only here: set it on the host".into()),
        Some(KeyState::Present { value: v, .. }) if same_value(v, value) => Action::Keep,
        None if baseline.is_some_and(|b| same_value(b, value)) && stage == Stage::Runtime => Action::Keep,
        _ => Action::Set,
    }
}

/// Profile text ends up in sysctl files, loader.conf, shell commands and terminals: a
/// newline in any field would start a line of its own there.
fn plain(origin: &str, what: &str, line: usize, t: &str) -> Result<(), Error> {
    match t.chars().find(|c| is_unsafe_char(*c)) {
        Some(c) => Err(Error::usage(format!(
            "profile {origin}, line {line}: {what}: control character {} refused",
            c.escape_unicode()
        ))
        .with_hint("profile text is one line of printable characters: no newlines, escapes or tabs")),
        None => Ok(()),
    }
}

fn key_hint(os: Os) -> &'static str {
    match os {
        Os::Linux => "tcptune reads and writes only the networking keys: net.* on Linux",
        Os::Freebsd | Os::Macos => {
            "tcptune reads and writes only the networking keys: kern.ipc.*, net.inet.*, net.inet6.*"
        }
    }
}

const BOOT_HINT: &str = "boot-time tunables (FreeBSD /boot/loader.conf) are limited to networking: \
kern.ipc.*, net.inet.*, net.inet6.*, net.isr.*, net.link.ifqmaxlen = a whole number; \
cc_NAME_load, tcp_bbr_load, tcp_rack_load, h_ertt_load = \"YES\" or \"NO\"";

/// A character no profile text may hold: C0 and C1 controls (newline, CR, ESC, tab, DEL
/// included), the Unicode line and paragraph separators, and the bidirectional overrides
/// that make a terminal show text in another order than it is.
fn is_unsafe_char(c: char) -> bool {
    c.is_control() || matches!(c, '\u{2028}' | '\u{2029}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

/// `s` with every [`is_unsafe_char`] escaped (`\u{a}`), for a message that stays one line.
fn one_line(s: &str) -> String {
    s.chars()
        .map(|c| {
            if is_unsafe_char(c) {
                c.escape_unicode().to_string()
            } else {
                c.to_string()
            }
        })
        .collect()
}

/// The fields of a profile, top level and `[[setting]]`: the schema's words, not the file's.
const SCHEMA_FIELDS: [&str; 16] = [
    "name",
    "os",
    "description",
    "caps",
    "stock",
    "setting",
    "key",
    "value",
    "reason",
    "policy",
    "stage",
    "when",
    "note",
    "label",
    "why",
    "shown",
];

/// The field an error at byte `at` is about, when the line (starting at `start`) assigns one
/// of [`SCHEMA_FIELDS`] and `at` lies in its value: a word of the schema, so naming it quotes
/// nothing of the file.
fn schema_field(text: &str, start: usize, at: usize) -> Option<&'static str> {
    let line = text.get(start..)?.lines().next()?;
    let eq = line.find('=')?;
    let key = line[..eq].trim();
    (start + eq < at).then_some(())?;
    SCHEMA_FIELDS.iter().copied().find(|f| *f == key)
}

/// A TOML or schema error of a file that did not load as a profile, in words that quote none of
/// its text: `--profile PATH` may name any file root can read (`/etc/shadow` under sudo), and
/// the message is printed for whoever runs the command. The toml crate's `Display` quotes the
/// line; serde's messages quote what was found (`invalid type: string "..."`, `unknown variant
/// `...``). What was expected comes from the grammar and the schema, and is kept; of what was
/// found only its kind is, and the name of an unknown field when it is a plain TOML key (the
/// place, line and column, is the caller's).
fn toml_message(message: &str) -> String {
    let message = message.replace(['\n', '\r'], " ");
    let (found, expected) = match message.split_once(", expected ") {
        Some((f, e)) => (f, Some(e)),
        None => (message.as_str(), None),
    };
    let field = ["unknown field `", "missing field `", "duplicate field `"]
        .iter()
        .find_map(|p| found.strip_prefix(p))
        .and_then(|rest| rest.strip_suffix('`'))
        .filter(|name| {
            !name.is_empty()
                && name.len() <= 40
                && name
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-'))
        });
    let found = match field {
        Some(_) => found.to_string(),
        // Everything from the first quote on is the file's: `x`, "x", 'x'.
        None => found
            .split(['`', '"', '\''])
            .next()
            .unwrap_or_default()
            .trim_end()
            .to_string(),
    };
    let msg = match expected {
        Some(e) => format!("{found}, expected {e}"),
        None => found,
    };
    one_line(&truncate(&msg, 200))
}

/// Whether `text` has the shape of a TOML document, line by line: outside a multi-line
/// string or array every line is blank, a `#` comment, a `[table]` header or `key = ...`.
/// Only the shape: the parser says what is wrong inside it.
fn looks_like_toml(text: &str) -> bool {
    let mut scan = TomlScan::default();
    for line in text.lines() {
        let mut rest = line;
        if scan.at_top() {
            let t = line.trim_start();
            if t.is_empty() || t.starts_with('#') || t.starts_with('[') {
                continue;
            }
            match after_key(t) {
                Some(value) => rest = value,
                None => return false,
            }
        }
        scan.line(rest);
    }
    true
}

/// What a TOML line leaves open for the next: a multi-line string, arrays.
#[derive(Default)]
struct TomlScan {
    /// The delimiter of the multi-line string being read (`"""` or `'''`).
    string: Option<&'static str>,
    /// Brackets and braces open.
    depth: usize,
}

impl TomlScan {
    fn at_top(&self) -> bool {
        self.string.is_none() && self.depth == 0
    }

    /// Reads the rest of a line: strings, brackets, a comment.
    fn line(&mut self, mut rest: &str) {
        loop {
            if let Some(end) = self.string {
                match rest.find(end) {
                    Some(i) => {
                        self.string = None;
                        rest = &rest[i + end.len()..];
                    }
                    None => return,
                }
            }
            let Some(i) = rest.find(['#', '"', '\'', '[', ']', '{', '}']) else {
                return;
            };
            let (c, after) = (rest.as_bytes()[i], &rest[i + 1..]);
            rest = match c {
                b'#' => return,
                b'[' | b'{' => {
                    self.depth += 1;
                    after
                }
                b']' | b'}' => {
                    self.depth = self.depth.saturating_sub(1);
                    after
                }
                _ => {
                    let quote = if c == b'"' { "\"\"\"" } else { "'''" };
                    if rest[i..].starts_with(quote) {
                        self.string = Some(quote);
                        &rest[i + 3..]
                    } else {
                        match string_end(after, c) {
                            Some(j) => &after[j + 1..],
                            None => return,
                        }
                    }
                }
            };
        }
    }
}

/// The byte where a one-line string opened by `quote` ends in `s` (a basic string's `\"`
/// does not end it).
fn string_end(s: &str, quote: u8) -> Option<usize> {
    let b = s.as_bytes();
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'\\' if quote == b'"' => i += 1,
            x if x == quote => return Some(i),
            _ => {}
        }
        i += 1;
    }
    None
}

/// What follows the `=` of a line that starts with a TOML key (bare, quoted, dotted); None
/// when it does not.
fn after_key(line: &str) -> Option<&str> {
    let mut rest = line;
    loop {
        rest = rest.trim_start();
        let b = rest.as_bytes();
        let len = match b.first()? {
            q @ (b'"' | b'\'') => string_end(&rest[1..], *q)? + 2,
            _ => b
                .iter()
                .take_while(|c| c.is_ascii_alphanumeric() || matches!(c, b'_' | b'-'))
                .count(),
        };
        if len == 0 {
            return None;
        }
        rest = rest[len..].trim_start();
        match rest.as_bytes().first()? {
            b'.' => rest = &rest[1..],
            b'=' => return Some(&rest[1..]),
            _ => return None,
        }
    }
}

/// What a boot-time tunable holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum BootKind {
    /// A networking sysctl the kernel reads only at boot: a whole number the kernel fetches
    /// into `c_type`, so at most `max`; `pow2`: a hash table size, which the kernel ignores
    /// (keeping its default) unless it is a power of 2.
    Number { c_type: &'static str, max: u64, pow2: bool },
    /// `NAME_load`: load a networking kernel module at boot, "YES" or "NO".
    ModuleLoad,
}

/// The C type FreeBSD fetches the boot-time tunable `key` into, from the kernel's sources
/// (TUNABLE_INT_FETCH in kern_mbuf.c, tcp_subr.c, tcp_syncache.c, tcp_hostcache.c; int
/// sysctls marked CTLFLAG_RDTUN in if.c and netisr.c). The kernel's getenv_int casts what
/// loader.conf holds to an int without a word, so a value past the type is a different
/// number at boot, never an error. A key not listed here is held to an int, the type of
/// nearly every networking tunable; every value is held to what getenv_quad can parse.
fn boot_number(key: &str) -> BootKind {
    let (c_type, max, pow2) = match key {
        "kern.ipc.maxmbufmem" => ("quad_t", crate::sysctl::file::LONG_MAX, false),
        "kern.ipc.maxpipekva" => ("long", crate::sysctl::file::LONG_MAX, false),
        "net.inet.tcp.tcbhashsize" | "net.inet.tcp.syncache.hashsize" | "net.inet.tcp.hostcache.hashsize" => {
            ("int", crate::sysctl::file::INT_MAX, true)
        }
        _ => ("int", crate::sysctl::file::INT_MAX, false),
    };
    BootKind::Number { c_type, max, pow2 }
}

/// The boot-time tunables tcptune writes to /boot/loader.conf (FreeBSD only): networking
/// sysctls and the modules for congestion control and TCP stacks. Nothing else: loader.conf
/// also sets init_path, kern.securelevel and which kernel boots.
fn boot_kind(os: Os, key: &str) -> Option<BootKind> {
    if os != Os::Freebsd {
        return None;
    }
    let word = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit());
    if let Some(module) = key.strip_suffix("_load") {
        let ok = module.strip_prefix("cc_").is_some_and(word) || matches!(module, "tcp_bbr" | "tcp_rack" | "h_ertt");
        return ok.then_some(BootKind::ModuleLoad);
    }
    // net.isr.* (netisr threads and queues) is boot-only networking outside the runtime
    // tree; the same key syntax is asked of it, checked by mapping it into that tree.
    let net = os.is_network_key(key)
        || (key.starts_with("net.isr.") && os.is_network_key(&key.replacen("net.isr.", "net.inet.", 1)))
        || key == "net.link.ifqmaxlen";
    net.then(|| boot_number(key))
}

/// A boot value as rendered: a whole number, or YES/NO for a module (quoted or not, the
/// way loader.conf writes it). No other quotes, blanks or characters: loader.conf is read
/// by a Forth/Lua interpreter at boot.
fn check_boot_value(kind: BootKind, v: &str) -> Result<(), String> {
    match kind {
        BootKind::Number { c_type, max, pow2 }
            if !v.is_empty() && v.len() <= 20 && v.bytes().all(|b| b.is_ascii_digit()) =>
        {
            match v.parse::<u64>() {
                Ok(n) if n > max => Err(format!(
                    "{n} is more than the kernel's {c_type} holds (at most {max}): it would boot with another number"
                )),
                Ok(n) if pow2 && !n.is_power_of_two() => Err(format!(
                    "{n} is not a power of 2: the kernel ignores such a hash size and keeps its default"
                )),
                Ok(_) => Ok(()),
                Err(_) => Err(format!(
                    "{v} is more than the kernel's {c_type} holds (at most {max}): it would boot with another number"
                )),
            }
        }
        BootKind::Number { .. } => Err(format!(
            "expected a whole number, found \"{}\"",
            crate::sysctl::file::excerpt(v)
        )),
        BootKind::ModuleLoad if matches!(v, "\"YES\"" | "\"NO\"" | "YES" | "NO") => Ok(()),
        BootKind::ModuleLoad => Err(format!(
            "expected \"YES\" or \"NO\", found {}",
            crate::sysctl::file::excerpt(v)
        )),
    }
}

/// Whether `key = value` is a boot-time line tcptune may write to /boot/loader.conf (the
/// one allow-list and grammar, for profiles and for snapshots read back by `revert`).
pub fn check_boot_line(key: &str, value: &str) -> Result<(), String> {
    let kind = boot_kind(Os::Freebsd, key).ok_or_else(|| {
        format!(
            "{}: not a networking boot-time tunable tcptune writes",
            crate::sysctl::file::shown_key(key)
        )
    })?;
    check_boot_value(kind, value).map_err(|m| format!("{key}: {m}"))
}

/// The literal text of a boot value template, holes set aside: [`check_boot_value`] with a
/// number for each hole.
fn check_boot_template(kind: BootKind, t: &str) -> Result<(), String> {
    check_boot_value(kind, &holes_as(t, "1"))
}

/// The literal text of a runtime value template: what sysctl values are made of (digits,
/// names, single blanks between fields). The filled value is checked in full at render.
fn check_runtime_template(t: &str) -> Result<(), String> {
    let lit = holes_as(t, "1");
    match lit
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, ' ' | '_' | '-' | '.')))
    {
        Some(c) => Err(format!(
            "{:?} is not part of a sysctl value (numbers and names separated by blanks)",
            c
        )),
        None if lit.trim().is_empty() => Err("empty value".into()),
        None => Ok(()),
    }
}

/// The template with each `{...}` hole replaced by `with` (unclosed holes are left as
/// they are: [`holes`] reports them).
fn holes_as(t: &str, with: &str) -> String {
    let mut out = String::new();
    let mut rest = t;
    while let Some(i) = rest.find('{') {
        let Some(j) = rest[i..].find('}') else { break };
        out.push_str(&rest[..i]);
        out.push_str(with);
        rest = &rest[i + j + 1..];
    }
    out.push_str(rest);
    out
}

fn facts_hint() -> String {
    let names: Vec<&str> = FACTS.iter().map(|(f, _)| *f).collect();
    format!("the facts are {}", names.join(", "))
}

fn truncate(s: &str, max: usize) -> String {
    match s.char_indices().nth(max) {
        Some((i, _)) => format!("{}...", &s[..i]),
        None => s.to_string(),
    }
}

/// The `{...}` holes of a template.
fn holes(t: &str) -> Result<Vec<&str>, String> {
    let mut out = Vec::new();
    let mut rest = t;
    while let Some(i) = rest.find('{') {
        let Some(j) = rest[i..].find('}') else {
            return Err("unclosed '{'".into());
        };
        out.push(&rest[i + 1..i + j]);
        rest = &rest[i + j + 1..];
    }
    if rest.contains('}') {
        return Err("'}' without '{'".into());
    }
    Ok(out)
}

/// Fill a template's holes. Values are whole numbers, rounded up; in reasons `:iec` prints IEC
/// bytes and `:bdp` names a BDP other than the header's.
fn fill(t: &str, env: &Env<'_>, prose: bool) -> Result<String, String> {
    let mut out = String::new();
    let mut rest = t;
    while let Some(i) = rest.find('{') {
        out.push_str(&rest[..i]);
        let j = rest[i..].find('}').ok_or("unclosed '{'")?;
        let hole = &rest[i + 1..i + j];
        let (src, iec) = hole.strip_suffix(":iec").map_or((hole, false), |s| (s, true));
        let (src, bdp) = src.strip_suffix(":bdp").map_or((src, false), |s| (s, true));
        let v = expr::parse(src)?.eval(env)?;
        if !v.is_finite() || v < 0.0 {
            return Err(format!("`{src}` gave {v}, not a non-negative number"));
        }
        #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
        let n = v.ceil() as u64;
        if bdp && prose {
            out.push_str(&bdp_named(n, env.facts.get("bdp").copied()));
        } else if iec && prose {
            out.push_str(&crate::text::size(n));
        } else if prose && v.fract() != 0.0 {
            out.push_str(&crate::text::sig(v, 3));
        } else {
            out.push_str(&n.to_string());
        }
        rest = &rest[i + j + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

/// "BDP" where `bytes` is the header's BDP (within 1 %, or no header's BDP is known), else
/// "BDP of 4.63 MiB": a multiple of another rate's BDP says which.
fn bdp_named(bytes: u64, header: Option<f64>) -> String {
    #[allow(clippy::cast_precision_loss)]
    let b = bytes as f64;
    match header {
        Some(h) if (b - h).abs() > h.max(1.0) * 0.01 => format!("BDP of {}", crate::text::size(bytes)),
        _ => "BDP".into(),
    }
}

/// The longest short reason a profile without a `why` gets from its `reason`, in characters.
pub const WHY_MAX: usize = 60;

/// A reason cut to one short clause for a profile that gives no `why`: up to its first `:` or
/// `;`, and at a word within [`WHY_MAX`] characters, marked with `…` where cut.
fn shortened(reason: &str) -> String {
    cut(reason.split([':', ';']).next().unwrap_or(reason).trim(), WHY_MAX)
}

/// "4096 131072 6291456" → [4096, 131072, 6291456]; None when any field is not a number.
pub fn numeric_fields(v: &str) -> Option<Vec<f64>> {
    let f: Option<Vec<f64>> = v
        .split_whitespace()
        .map(|x| x.parse::<i64>().ok().map(|n| n as f64))
        .collect();
    f.filter(|f| !f.is_empty())
}

fn join_fields(f: &[f64]) -> String {
    #[allow(clippy::cast_possible_truncation)]
    f.iter().map(|x| (*x as i64).to_string()).collect::<Vec<_>>().join(" ")
}

/// `v` with each field above the next lowered to it where a key's fields must not decrease
/// (min <= default <= max), and its last field; None for a key whose fields have no order, a
/// value not of whole numbers, or a field to lower that `lowerable` (one flag per field) keeps.
fn clamp_order(os: Os, key: &str, v: &str, lowerable: &[bool]) -> Option<(String, u64)> {
    if !matches!(
        crate::sysctl::file::kind(os, key),
        crate::sysctl::file::Kind::Ints { ordered: true, .. }
    ) {
        return None;
    }
    let mut f: Vec<u64> = v.split_whitespace().map(|x| x.parse().ok()).collect::<Option<_>>()?;
    if lowerable.len() != f.len() {
        return None;
    }
    let max = *f.last()?;
    for i in (0..f.len() - 1).rev() {
        if f[i] > f[i + 1] {
            if !lowerable[i] {
                return None;
            }
            f[i] = f[i + 1];
        }
    }
    Some((f.iter().map(u64::to_string).collect::<Vec<_>>().join(" "), max))
}

/// Linux keeps these values in C ints: never recommend more than it accepts.
fn clamp_fields(os: Os, v: &str) -> String {
    match (os, numeric_fields(v)) {
        (Os::Linux, Some(f)) => join_fields(
            &f.iter()
                .map(|x| x.min(crate::bdp::LINUX_INT_MAX as f64))
                .collect::<Vec<_>>(),
        ),
        _ => v.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn facts(buffer: f64, needs: f64) -> BTreeMap<String, f64> {
        FACTS
            .iter()
            .map(|(k, _)| ((*k).to_string(), 0.0))
            .chain([
                ("buffer".to_string(), buffer),
                ("send_buffer".to_string(), buffer),
                ("bdp".to_string(), buffer / 2.2),
                ("needs_raise".to_string(), needs),
                ("rate_bps".to_string(), 5e8),
                ("headroom_pct".to_string(), 10.0),
                ("rtt_ms".to_string(), 150.0),
            ])
            .collect()
    }

    #[test]
    fn every_shipped_profile_parses_and_renders() {
        for (name, text) in SHIPPED {
            let p = Profile::parse(text, name).unwrap_or_else(|e| panic!("{name}: {e}"));
            assert_eq!(p.name, *name);
            assert_eq!(p.os.name(), *name);
            assert!(!p.settings.is_empty());
            let s = p.render(&facts(20_643_840.0, 1.0), &|_| None, false).expect("render");
            assert!(
                s.iter()
                    .any(|s| s.value.contains("20643840") || s.value.contains("23224320")),
                "{name}: {s:?}"
            );
            for c in p.caps.keys() {
                assert!(p.stock.contains_key(c), "{name}: cap {c} has no stock value");
            }
        }
    }

    #[test]
    fn unknown_field_names_file_and_line() {
        let text = "name = \"x\"\nos = \"linux\"\ndescription = \"d\"\n\n[[setting]]\nkey = \"net.ipv4.tcp_rmem\"\nvalue = \"1\"\nreason = \"r\"\nbogus = 1\n";
        let e = Profile::parse(text, "my.toml").expect_err("must fail").to_string();
        assert!(
            e.contains("my.toml") && e.contains("line 9") && e.contains("bogus"),
            "{e}"
        );
        assert!(!e.contains('\n'));
    }

    #[test]
    fn errors_of_a_file_that_is_no_profile_quote_none_of_it() {
        let shadow = "root:$y$j9T$SECRETSALT$SECRETHASH0123456789:20228:0:99999:7:::\ndaemon:*:20228:0:99999:7:::\n";
        let e = Profile::parse(shadow, "/etc/shadow")
            .expect_err("not a profile")
            .to_string();
        // No line and column: column 63 was the length of root's line.
        assert_eq!(
            e,
            "profile /etc/shadow: not a profile: not TOML (lines of `key = value`, [tables] and # comments)"
        );
        let head = "name = \"x\"\nos = \"linux\"\ndescription = \"d\"\n";
        for (text, want) in [
            // serde quotes the value it found: only its kind is kept.
            (
                "name = \"x\"\nos = \"hunter2\"\ndescription = \"d\"\n".to_string(),
                "line 2, column 6: os: unknown variant, expected one of `linux`, `freebsd`, `macos`",
            ),
            (
                "name = 20228\nos = \"linux\"\ndescription = \"d\"\n".to_string(),
                "line 1, column 8: name: invalid type: integer, expected a string",
            ),
            (
                format!("{head}token = \"hunter2\"\n"),
                "line 4, column 1: unknown field `token`, expected one of",
            ),
            // A key that is not a plain TOML key is not named either.
            (
                format!("{head}\"hunter2 hunter2\" = 1\n"),
                "line 4, column 1: unknown field, expected one of",
            ),
            (
                format!("{head}[[setting]]\nkey = [\"hunter2\"]\n"),
                "invalid type: sequence, expected a string",
            ),
            (
                "name = hunter2\n".to_string(),
                "line 1, column 8: name: string values must be quoted",
            ),
            // A key that is no field of the schema is not named.
            (
                format!("{head}[caps]\n\"hunter2\" = 5\n"),
                "line 5, column 13: invalid type: integer, expected a string",
            ),
        ] {
            let e = Profile::parse(&text, "p.toml").expect_err(&text).to_string();
            assert!(e.contains(want), "{text:?}: {e}");
            assert!(!e.contains("hunter2") && !e.contains("20228"), "{e}");
        }
    }

    #[test]
    fn only_a_file_in_the_shape_of_toml_is_parsed() {
        for toml in [
            "",
            "# only a comment\n\n",
            "name = \"x\" # a comment with = and [\n[[setting]]\n",
            "a.\"b c\" . 'd' = 1\n",
            "reason = \"\"\"\nroot:x:0:0: inside a string\n\"\"\"\nkey = 'a'\n",
            "list = [\n  \"a\", # ]\n  \"b]\",\n]\nnext = { a = \"}\" }\n",
            "s = \"an \\\" escaped quote [\"\nt = 1\n",
        ] {
            assert!(looks_like_toml(toml), "{toml:?}");
        }
        for not in [
            "root:$y$j9T$x:20228:0:99999:7:::\n",
            "name = \"x\"\nsecret words here\n",
            "= 1\n",
            "key\n",
            "\"open = 1\n",
            "list = [\n1,\n]\nafter the array\n",
        ] {
            assert!(!looks_like_toml(not), "{not:?}");
        }
        for (_, text) in SHIPPED {
            assert!(looks_like_toml(text));
        }
    }

    #[test]
    fn non_network_keys_and_unknown_facts_are_refused() {
        let base = "name = \"x\"\nos = \"linux\"\ndescription = \"d\"\n[[setting]]\n";
        let e = Profile::parse(
            &format!("{base}key = \"kernel.panic\"\nvalue = \"1\"\nreason = \"r\"\n"),
            "p",
        )
        .expect_err("kernel.* refused")
        .to_string();
        assert!(e.contains("kernel.panic") && e.contains("line 5"), "{e}");
        let e = Profile::parse(
            &format!("{base}key = \"net.ipv4.tcp_rmem\"\nvalue = \"{{bufer}}\"\nreason = \"r\"\n"),
            "p",
        )
        .expect_err("typo refused")
        .to_string();
        assert!(e.contains("bufer"), "{e}");
    }

    #[test]
    fn raise_only_per_field_and_no_waste() {
        let p = Profile::for_os(Os::Linux);
        let running = |k: &str| -> Option<KeyState> {
            Some(match k {
                "net.ipv4.tcp_rmem" => KeyState::Present {
                    value: "8192 262144 6291456".into(),
                    access: Access::Writable,
                },
                "net.ipv4.tcp_wmem" => KeyState::Present {
                    value: "4096 16384 33554432".into(),
                    access: Access::Writable,
                },
                "net.core.rmem_max" => KeyState::Present {
                    value: "212992".into(),
                    access: Access::ReadOnly,
                },
                _ => KeyState::Absent,
            })
        };
        let s = p.render(&facts(20_643_840.0, 1.0), &running, false).expect("render");
        let get = |k: &str| s.iter().find(|s| s.key == k).expect(k).clone();
        // Each field is the larger of running and recommended.
        assert_eq!(get("net.ipv4.tcp_rmem").value, "8192 262144 20643840");
        assert_eq!(get("net.ipv4.tcp_rmem").action, Action::Set);
        assert_eq!(get("net.ipv4.tcp_wmem").value, "4096 16384 33554432");
        assert_eq!(get("net.ipv4.tcp_wmem").action, Action::Keep);
        assert!(matches!(get("net.core.rmem_max").action, Action::Unavailable(ref w) if w.contains("read-only")));
        // --allow-lower takes the recommendation as it is.
        let s = p.render(&facts(20_643_840.0, 1.0), &running, true).expect("render");
        assert_eq!(
            s.iter().find(|s| s.key == "net.ipv4.tcp_wmem").expect("wmem").value,
            "4096 16384 20643840"
        );
        // A slow path: the running buffers cover it, nothing changes.
        let s = p.render(&facts(655_360.0, 0.0), &running, false).expect("render");
        assert!(s.iter().all(|s| s.action != Action::Set), "{s:?}");
    }

    const HEAD: &str = "name = \"x\"\nos = \"freebsd\"\ndescription = \"d\"\n";

    /// On a short path (a 64 KiB maximum below the template's 131072 default), whatever the
    /// running value, the triple rendered is one a sysctl file takes, and says how it was kept.
    #[test]
    fn a_missing_or_odd_running_value_still_renders_a_valid_triple() {
        let p = Profile::for_os(Os::Linux);
        let rmem = |state: Option<KeyState>, allow_lower: bool| {
            let s = p
                .render(
                    &facts(65_536.0, 1.0),
                    &|k| (k == "net.ipv4.tcp_rmem").then(|| state.clone()).flatten(),
                    allow_lower,
                )
                .expect("render");
            let r = s.into_iter().find(|s| s.key == "net.ipv4.tcp_rmem").expect("rmem");
            crate::sysctl::file::check_value(&r.key, &r.value, Os::Linux).expect("a valid value");
            (r.value, r.fallback)
        };
        let present = |v: &str| {
            Some(KeyState::Present {
                value: v.into(),
                access: Access::Writable,
            })
        };
        let fb = |unread, kept| Some(Fallback { unread, kept });
        // Nothing known of the running values: the stock values are the baseline, as before.
        assert_eq!(rmem(None, false), ("4096 131072 6291456".into(), None));
        assert_eq!(
            rmem(present("4096 131072 6291456"), false),
            ("4096 131072 6291456".into(), None)
        );
        assert_eq!(
            rmem(Some(KeyState::Absent), false),
            (
                "4096 65536 65536".into(),
                fb(Some(Unread::Absent), Kept::Clamped(65_536))
            )
        );
        assert_eq!(
            rmem(Some(KeyState::Unreadable("locked down".into())), false),
            ("4096 131072 6291456".into(), fb(Some(Unread::Unreadable), Kept::Stock))
        );
        assert_eq!(
            rmem(present("4096 131072 4294967296"), false),
            ("4096 131072 6291456".into(), fb(Some(Unread::Odd), Kept::Stock))
        );
        assert_eq!(
            rmem(present("4096 99999999 6291456"), false),
            ("4096 6291456 6291456".into(), fb(None, Kept::Clamped(6_291_456)))
        );
        assert_eq!(
            rmem(present("4096 131072 6291456"), true),
            ("4096 65536 65536".into(), fb(None, Kept::Clamped(65_536)))
        );
        // A template's own literal triple that decreases is still the profile's error.
        let bad = entry("net.ipv4.tcp_rmem", "4096 131072 65536", "");
        assert!(Profile::parse(&bad, "p.toml").is_err());
    }

    fn entry(key: &str, value: &str, extra: &str) -> String {
        format!("{HEAD}[[setting]]\nkey = {key:?}\nvalue = {value:?}\nreason = \"r\"\n{extra}")
    }

    #[test]
    fn boot_entries_have_an_allow_list_and_a_grammar() {
        let boot = "stage = \"boot\"\n";
        for (key, value, want) in [
            ("init_path", "/tmp/x", "not a networking boot-time tunable"),
            ("kern.securelevel", "-1", "not a networking boot-time tunable"),
            ("kern.securelevel", "\"-1\"", "not a networking boot-time tunable"),
            ("kernel", "evil", "not a networking boot-time tunable"),
            ("vfs.root.mountfrom", "ufs:/dev/x", "not a networking boot-time tunable"),
            ("if_evil_load", "\"YES\"", "not a networking boot-time tunable"),
            ("cc_htcp_load", "\"YES\"\ninit_path=\"/x\"", "control character"),
            ("cc_htcp_load", "\"YES\" init_path=\"/x\"", "expected \"YES\" or \"NO\""),
            ("cc_htcp_load", "\"/bin/sh\"", "expected \"YES\" or \"NO\""),
            ("cc_htcp_load", "YES\"", "expected \"YES\" or \"NO\""),
            ("kern.ipc.nmbclusters", "1 2", "whole number"),
            ("kern.ipc.nmbclusters", "\"1\"", "whole number"),
            ("kern.ipc.nmbclusters", "{buffer}x", "whole number"),
            ("net.isr..x", "1", "not a networking boot-time tunable"),
            // Each value fits the C type the kernel fetches it into.
            (
                "kern.ipc.nmbclusters",
                "18446744073709551615",
                "more than the kernel's int holds (at most 2147483647)",
            ),
            ("kern.ipc.nmbclusters", "2147483648", "at most 2147483647"),
            (
                "net.isr.maxthreads",
                "99999999999999999999",
                "more than the kernel's int holds",
            ),
            (
                "kern.ipc.maxmbufmem",
                "9223372036854775808",
                "quad_t holds (at most 9223372036854775807)",
            ),
            ("net.inet.tcp.tcbhashsize", "65535", "not a power of 2"),
            ("net.inet.tcp.syncache.hashsize", "0", "not a power of 2"),
        ] {
            let e = Profile::parse(&entry(key, value, boot), "p.toml")
                .expect_err(key)
                .to_string();
            assert!(e.contains(want), "{key}={value:?}: {e}");
            assert!(!e.contains('\n'), "{e}");
        }
        for (key, value) in [
            ("cc_htcp_load", "\"YES\""),
            ("cc_cubic_load", "NO"),
            ("tcp_rack_load", "\"YES\""),
            ("kern.ipc.nmbclusters", "{buffer}"),
            ("net.isr.maxthreads", "4"),
            ("net.inet.tcp.tcbhashsize", "65536"),
            ("kern.ipc.nmbclusters", "2147483647"),
            ("kern.ipc.maxmbufmem", "9223372036854775807"),
        ] {
            let p = Profile::parse(&entry(key, value, boot), "p.toml").unwrap_or_else(|e| panic!("{key}: {e}"));
            p.render(&facts(20_643_840.0, 1.0), &|_| None, false).expect("render");
        }
        // Boot tunables exist on FreeBSD only.
        let linux = entry("net.core.rmem_max", "1", boot).replace("freebsd", "linux");
        assert!(Profile::parse(&linux, "p").is_err());
    }

    #[test]
    fn control_characters_are_refused_in_every_field() {
        let ok = entry(
            "net.inet.tcp.sendbuf_max",
            "{send_buffer}",
            "when = \"needs_raise\"\nnote = \"n\"\n",
        );
        Profile::parse(&ok, "p").expect("valid");
        for (field, good) in [
            ("name = \"x\"", "x"),
            ("description = \"d\"", "d"),
            ("reason = \"r\"", "r"),
            ("when = \"needs_raise\"", "needs_raise"),
            ("note = \"n\"", "n"),
            ("key = \"net.inet.tcp.sendbuf_max\"", "net.inet.tcp.sendbuf_max"),
        ] {
            for bad in [
                "\\n",
                "\\r",
                "\\u001b[2J",
                "\\u007f",
                "\\t",
                "\\u0085",
                "\\u2028",
                "\\u202e",
            ] {
                let evil = field.replacen(
                    &format!("\"{good}\""),
                    &format!("\"{good}{bad}kernel.core_pattern = |/tmp/x\""),
                    1,
                );
                let text = ok.replacen(field, &evil, 1);
                assert_ne!(text, ok);
                let e = Profile::parse(&text, "p").expect_err(&evil).to_string();
                assert!(
                    e.contains("control character") || e.contains("not a networking"),
                    "{evil}: {e}"
                );
                assert!(!e.contains('\n') && !e.contains('\u{1b}'), "{e}");
            }
        }
    }

    #[test]
    fn runtime_values_keep_the_sysctl_grammar_before_and_after_filling() {
        let linux = |v: &str| entry("net.ipv4.tcp_rmem", v, "").replace("freebsd", "linux");
        for bad in [
            "4096 131072 {buffer}\"",
            "4096 # {buffer}",
            "1;reboot",
            "$(touch x)",
            "-1 2 3",
            "1 2",
        ] {
            let e = Profile::parse(&linux(bad), "p").expect_err(bad).to_string();
            assert!(e.contains("value"), "{bad}: {e}");
        }
        // Valid as a template, invalid once filled: one number where three are needed.
        let p = Profile::parse(&linux("{buffer}"), "p").expect("template ok");
        let e = p
            .render(&facts(20_643_840.0, 1.0), &|_| None, false)
            .expect_err("one field")
            .to_string();
        assert!(
            e.contains("renders as an invalid value") && e.contains("3 whole numbers"),
            "{e}"
        );
        // Fields that decrease once filled.
        let p = Profile::parse(&linux("4096 {buffer} 8192"), "p").expect("template ok");
        assert!(p.render(&facts(20_643_840.0, 1.0), &|_| None, false).is_err());
        // A stock value that is not a sysctl value.
        let text = linux("4096 131072 {buffer}").replace(
            "[[setting]]",
            "[stock]\n\"net.ipv4.tcp_rmem\" = \"1 2 3\\nkernel.x = 1\"\n[[setting]]",
        );
        assert!(Profile::parse(&text, "p").is_err());
    }

    #[test]
    fn ten_thousand_settings_load_in_linear_time() {
        let mut text = HEAD.replace("freebsd", "linux");
        for i in 0..10_000 {
            text.push_str(&format!(
                "[[setting]]\nkey = \"net.ipv4.k{i}\"\nvalue = \"{{buffer}}\"\nreason = \"r\"\nwhen = \"needs_raise\"\n"
            ));
        }
        let t = std::time::Instant::now();
        let p = Profile::parse(&text, "p").expect("parse");
        assert_eq!(p.settings[9_999].lines.key, 4 + 9_999 * 5 + 1);
        // Counting newlines per field was quadratic: ~17 s for this in a debug build; linear
        // took up to 1.2 s on a 2-core VM, whose stalls the bound leaves room for.
        assert!(t.elapsed() < std::time::Duration::from_secs(6), "{:?}", t.elapsed());
    }

    /// Text shaped like a profile, with hostile strings where values go.
    fn near_profile() -> impl Strategy<Value = String> {
        let string = prop_oneof![
            Just("net.ipv4.tcp_rmem".to_string()),
            Just("cc_htcp_load".to_string()),
            Just("\\\"YES\\\"".to_string()),
            Just("{buffer}".to_string()),
            "[a-z._{}()*+ 0-9-]{0,24}",
            "\\PC{0,12}",
            "(\\\\[nrtu\"]|\\\\u00[01][0-9a-f]){1,3}",
        ];
        let field = prop::sample::select(vec![
            "key", "value", "reason", "when", "note", "stage", "policy", "name", "os", "bogus",
        ]);
        let line = prop_oneof![
            (field, string.clone()).prop_map(|(f, v)| format!("{f} = \"{v}\"\n")),
            Just("[[setting]]\n".to_string()),
            Just("[caps]\n".to_string()),
            Just("[stock]\n".to_string()),
            Just("stage = \"boot\"\n".to_string()),
            (string.clone(), string).prop_map(|(k, v)| format!("\"{k}\" = \"{v}\"\n")),
            "\\PC{0,20}\n",
        ];
        (
            prop::sample::select(vec!["linux", "freebsd", "macos", "solaris"]),
            prop::collection::vec(line, 0..16),
        )
            .prop_map(|(os, lines)| format!("name = \"f\"\nos = \"{os}\"\ndescription = \"d\"\n{}", lines.concat()))
    }

    proptest! {
        // PROPTEST_CASES raises the case count: bench/fuzz-parser.sh runs 1,000,000.
        #[test]
        fn parse_and_render_never_panic_and_render_only_safe_text(
            text in near_profile(),
            junk in "\\PC{0,96}",
            bytes in proptest::collection::vec(any::<u8>(), 0..96),
            buffer in any::<u32>(),
        ) {
            for t in [text.as_str(), junk.as_str(), &String::from_utf8_lossy(&bytes)] {
                match Profile::parse(t, "fuzz.toml") {
                    Err(e) => {
                        let e = e.to_string();
                        prop_assert!(!e.contains('\n') && !e.contains('\r'), "{e:?}");
                    }
                    Ok(p) => {
                        let Ok(settings) = p.render(&facts(f64::from(buffer), 1.0), &|_| None, false) else { continue };
                        for s in settings {
                            prop_assert!(!s.key.chars().chain(s.value.chars()).chain(s.reason.chars()).any(is_unsafe_char), "{s:?}");
                            match s.stage {
                                Stage::Runtime => prop_assert!(crate::sysctl::file::check_value(&s.key, &s.value, p.os).is_ok(), "{s:?}"),
                                Stage::Boot => prop_assert!(boot_kind(p.os, &s.key).is_some(), "{s:?}"),
                            }
                        }
                    }
                }
            }
        }
    }
}
