//! Profile templates: which keys to recommend for an OS and how to compute each value.
//! The shipped profiles (profiles/*.toml) are embedded; `--profile PATH` loads a user's.
//!
//! A value or reason is text with `{expression}` holes (see [`crate::expr`]); a hole in a
//! reason may end in `:iec` to print bytes as IEC units. Facts an expression may use are
//! listed in [`FACTS`].

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::error::Error;
use crate::expr::{self, Env};
use crate::platform::{Access, KeyState, Os};
use crate::units::Bytes;

/// Shipped profiles, by name.
pub const SHIPPED: &[(&str, &str)] = &[
    ("linux", include_str!("../profiles/linux.toml")),
    ("freebsd", include_str!("../profiles/freebsd.toml")),
    ("macos", include_str!("../profiles/macos.toml")),
];

/// Hint for a profile name tcptune does not know.
pub const LIST_HINT: &str =
    "`tcptune profiles` lists the shipped ones; `tcptune profiles export linux > my.toml` starts your own";

/// Hint for a profile file with a mistake.
const FILE_HINT: &str =
    "compare with `tcptune profiles show linux`; the fields and facts are in `man tcptune` (PROFILES) and the README";

/// The facts a profile expression may name, with what they mean.
pub const FACTS: &[(&str, &str)] = &[
    ("bdp", "bandwidth-delay product in bytes (rate × RTT_min)"),
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
        "1 when the buffers are sized for loss recovery (--loss-recovery)",
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
    /// Line of each field in the source text (0 when unknown), for error messages.
    #[serde(skip)]
    pub lines: FieldLines,
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

/// 1-based line of a byte offset.
fn line_at(text: &str, offset: usize) -> usize {
    text[..offset.min(text.len())].matches('\n').count() + 1
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
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case", tag = "kind", content = "why")]
pub enum Action {
    /// Change the running value (or set it: running value unknown).
    Set,
    /// The running value already meets the recommendation.
    Keep,
    /// The key cannot be set here: absent or read-only; `why` says which.
    Unavailable(String),
}

impl Profile {
    /// A shipped profile by name, or a TOML file by path (anything with a `/` or `.toml`).
    pub fn load(name_or_path: &str) -> Result<Self, Error> {
        if let Some((_, text)) = SHIPPED.iter().find(|(n, _)| *n == name_or_path) {
            return Self::parse(text, &format!("<shipped {name_or_path}>"));
        }
        let path = Path::new(name_or_path);
        if name_or_path.contains('/') || name_or_path.ends_with(".toml") || path.exists() {
            let text = std::fs::read_to_string(path)
                .map_err(|e| Error::usage(format!("cannot read profile {name_or_path}: {e}")).with_hint(LIST_HINT))?;
            return Self::parse(&text, name_or_path);
        }
        let names: Vec<&str> = SHIPPED.iter().map(|(n, _)| *n).collect();
        Err(Error::usage(format!(
            "unknown profile \"{name_or_path}\": expected one of {} or a path to a .toml file",
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
        let mut p: Self = toml::from_str(text).map_err(|e| {
            let msg = e.message().replace('\n', " ");
            match e.span() {
                Some(s) => {
                    let line = line_at(text, s.start);
                    // The line itself names the field a type or value error is about.
                    let src = text.lines().nth(line - 1).unwrap_or("").trim();
                    let src = if src.is_empty() || msg.contains(src) {
                        String::new()
                    } else {
                        format!(" ({})", truncate(src, 60))
                    };
                    Error::usage(format!("profile {origin}, line {line}{src}: {msg}"))
                }
                None => Error::usage(format!("profile {origin}: {msg}")),
            }
            .with_hint(FILE_HINT)
        })?;
        p.origin = origin.to_string();
        let mut cap_lines = BTreeMap::new();
        if let Ok(spans) = toml::from_str::<Spans>(text) {
            for (k, v) in spans.caps {
                cap_lines.insert(k.into_inner(), line_at(text, v.span().start));
            }
            for (e, s) in p.settings.iter_mut().zip(spans.settings) {
                e.lines = FieldLines {
                    key: line_at(text, s.key.span().start),
                    value: line_at(text, s.value.span().start),
                    reason: line_at(text, s.reason.span().start),
                    when: s.when.map_or(0, |w| line_at(text, w.span().start)),
                };
            }
        }
        p.validate(&cap_lines)?;
        Ok(p)
    }

    fn validate(&self, cap_lines: &BTreeMap<String, usize>) -> Result<(), Error> {
        let origin = &self.origin;
        for (key, fact) in &self.caps {
            if !FACTS.iter().any(|(f, _)| f == fact) {
                return Err(Error::usage(format!(
                    "profile {origin}, line {}: caps: {key} = \"{fact}\" is not a known fact",
                    cap_lines.get(key).copied().unwrap_or(0)
                ))
                .with_hint(facts_hint()));
            }
        }
        for e in &self.settings {
            let at = |field: &str, what: &str| {
                Error::usage(format!(
                    "profile {origin}, line {}: setting {}: {what}",
                    e.lines.of(field),
                    e.key
                ))
            };
            if e.stage == Stage::Runtime && !self.os.is_network_key(&e.key) {
                return Err(at("key", &format!("key: not a networking sysctl key for {}", self.os))
                    .with_hint(key_hint(self.os)));
            }
            let mut exprs: Vec<(&str, String)> = Vec::new();
            for (field, t) in [("value", &e.value), ("reason", &e.reason)] {
                for hole in holes(t).map_err(|m| at(field, &format!("{field}: {m}")).with_hint(FILE_HINT))? {
                    exprs.push((field, hole.trim_end_matches(":iec").to_string()));
                }
            }
            if let Some(w) = &e.when {
                exprs.push(("when", w.clone()));
            }
            for (field, src) in exprs {
                let ex = expr::parse(&src).map_err(|m| at(field, &format!("{field}: {m}")).with_hint(FILE_HINT))?;
                let mut vars = Vec::new();
                ex.vars(&mut vars);
                if let Some(v) = vars.iter().find(|v| !FACTS.iter().any(|(f, _)| f == v)) {
                    return Err(at(field, &format!("{field}: unknown fact `{v}`")).with_hint(facts_hint()));
                }
            }
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
            let ks = if e.stage == Stage::Runtime { state(&e.key) } else { None };
            let current = ks.as_ref().and_then(|k| k.value().map(str::to_string));
            let baseline = current.clone().or_else(|| {
                if ks.is_none() {
                    self.stock.get(&e.key).cloned()
                } else {
                    None
                }
            });
            let cur_fields = baseline.as_deref().and_then(numeric_fields);
            let env = Env {
                facts,
                current: cur_fields.as_deref(),
            };
            let fail = |field: &'static str| {
                move |m: String| {
                    Error::usage(format!(
                        "profile {}, line {}: setting {}: {field}: {m}",
                        self.origin,
                        e.lines.of(field),
                        e.key
                    ))
                    .with_hint(FILE_HINT)
                }
            };
            if let Some(w) = &e.when
                && expr::parse(w).and_then(|x| x.eval(&env)).map_err(fail("when"))? == 0.0
            {
                continue;
            }
            let rec = fill(&e.value, &env, false).map_err(fail("value"))?;
            let rec = clamp_fields(self.os, &rec);
            let value = match (e.policy, &cur_fields, numeric_fields(&rec)) {
                (Policy::AtLeast, Some(cur), Some(want)) if !allow_lower && cur.len() == want.len() => {
                    join_fields(&cur.iter().zip(&want).map(|(c, w)| c.max(*w)).collect::<Vec<_>>())
                }
                _ => rec,
            };
            let action = match &ks {
                Some(KeyState::Absent) => Action::Unavailable("not present in this kernel or network namespace".into()),
                Some(KeyState::Unreadable(why)) => Action::Unavailable(format!("unreadable: {why}")),
                // Only the kernel's refusal makes a key unavailable: a key that needs root is
                // advice for root to apply, whoever reads it.
                Some(KeyState::Present {
                    access: Access::ReadOnly,
                    value: v,
                }) if !same(v, &value) => {
                    Action::Unavailable("read-only in this network namespace: set it on the host".into())
                }
                Some(KeyState::Present { value: v, .. }) if same(v, &value) => Action::Keep,
                None if baseline.as_deref().is_some_and(|b| same(b, &value)) && e.stage == Stage::Runtime => {
                    Action::Keep
                }
                _ => Action::Set,
            };
            out.push(Setting {
                key: e.key.clone(),
                value,
                current,
                reason: fill(&e.reason, &env, true).map_err(fail("reason"))?,
                stage: e.stage,
                action,
                note: e.note.clone(),
            });
        }
        Ok(out)
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

fn same(a: &str, b: &str) -> bool {
    crate::platform::normalize_value(a) == crate::platform::normalize_value(b)
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

/// Fill a template's holes. Values are whole numbers, rounded up; in reasons `:iec` prints IEC bytes.
fn fill(t: &str, env: &Env<'_>, prose: bool) -> Result<String, String> {
    let mut out = String::new();
    let mut rest = t;
    while let Some(i) = rest.find('{') {
        out.push_str(&rest[..i]);
        let j = rest[i..].find('}').ok_or("unclosed '{'")?;
        let hole = &rest[i + 1..i + j];
        let (src, iec) = hole.strip_suffix(":iec").map_or((hole, false), |s| (s, true));
        let v = expr::parse(src)?.eval(env)?;
        if !v.is_finite() || v < 0.0 {
            return Err(format!("`{src}` gave {v}, not a non-negative number"));
        }
        #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
        let n = v.ceil() as u64;
        if iec && prose {
            out.push_str(&Bytes::new(n).iec());
        } else if prose && v.fract() != 0.0 {
            out.push_str(&format!("{v:.1}"));
        } else {
            out.push_str(&n.to_string());
        }
        rest = &rest[i + j + 1..];
    }
    out.push_str(rest);
    Ok(out)
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
}
