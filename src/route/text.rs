//! A [`Route`] as the `ip route` line that makes it, and the one line of a sysctl file that
//! carries it (`# route: ip route replace ...`, written by `advise --scope path`).
//!
//! One rule for every word: [`words`] are what `ip` takes, each quoted for a POSIX shell by
//! [`crate::text::shell_word`] wherever a line is shown or written ([`command`]); the route line
//! of a file is read back by the same rule ([`parse_route_line`]), strictly: only the grammar
//! [`command`] writes, a word at most once.

use std::collections::BTreeSet;
use std::net::IpAddr;

use super::{MAIN_TABLE, METRICS, Route, UNICAST, full_len, kind_name};

/// `198.18.0.2/32`.
pub fn prefix(ip: IpAddr, len: u8) -> String {
    format!("{ip}/{len}")
}

/// The words of the `ip route VERB ...` command that makes `r` (VERB: `replace`, `add`,
/// `del`), `ip` first, every attribute spelt as iproute2 takes it: `ip route replace
/// 198.18.0.2/32 via 198.18.0.254 dev eth0 proto 116 src 198.18.0.1 mtu 1400 congctl bbr`. The
/// device is named when known, else left to the kernel; a type other than unicast is said
/// (`blackhole 10.0.0.5/32`). Unquoted: each word is one argument as given to `ip`.
pub fn words(verb: &str, r: &Route) -> Vec<String> {
    build(verb, r, Part::Whole)
}

/// The words of `ip route del` for exactly `r`: what tells it from any other route to its
/// destination (tos, table, gateway, device, protocol, metric). A device whose name holds a
/// control character is left out (shown escaped, it would name another).
pub fn delete_words(r: &Route) -> Vec<String> {
    build("del", r, Part::Key)
}

/// Which of a route's attributes its words carry.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Part {
    /// All that make it.
    Whole,
    /// Those that select it among the routes to its destination.
    Key,
}

/// The one builder of a route's words ([`words`], [`delete_words`]).
fn build(verb: &str, r: &Route, part: Part) -> Vec<String> {
    fn push(w: &mut Vec<String>, k: &str, v: String) {
        w.push(k.to_string());
        w.push(v);
    }
    let whole = part == Part::Whole;
    let mut w: Vec<String> = vec!["ip".into(), "route".into(), verb.into()];
    if whole && r.kind != UNICAST {
        w.push(kind_name(r.kind));
    }
    w.push(prefix(r.dst, r.dst_len));
    if r.tos != 0 {
        push(&mut w, "tos", format!("0x{:02x}", r.tos));
    }
    if r.table != MAIN_TABLE {
        push(&mut w, "table", r.table.to_string());
    }
    if let Some(g) = r.gateway {
        push(&mut w, "via", g.to_string());
    }
    if let Some(d) = r.dev.as_deref().filter(|d| whole || crate::text::escape(d) == *d) {
        push(&mut w, "dev", d.to_string());
    }
    // RTNH_F_ONLINK
    if whole && r.flags & 4 != 0 {
        w.push("onlink".into());
    }
    push(&mut w, "proto", r.protocol.to_string());
    if whole {
        match r.scope {
            0 => {}
            253 => push(&mut w, "scope", "link".into()),
            254 => push(&mut w, "scope", "host".into()),
            n => push(&mut w, "scope", n.to_string()),
        }
        if let Some(p) = r.prefsrc {
            push(&mut w, "src", p.to_string());
        }
    }
    if let Some(m) = r.priority {
        push(&mut w, "metric", m.to_string());
    }
    if whole {
        attributes(&mut w, r);
    }
    w
}

/// The attributes only a whole route's words carry after its metric: its preference, its
/// metrics (each `lock`ed where it is) and its congestion control.
fn attributes(w: &mut Vec<String>, r: &Route) {
    if let Some(p) = r.pref {
        let p = match p {
            1 => "high",
            3 => "low",
            _ => "medium",
        };
        w.extend(["pref".to_string(), p.to_string()]);
    }
    for (name, value) in &r.metrics {
        let locked = METRICS
            .iter()
            .position(|m| m == name)
            .is_some_and(|i| r.lock & (1 << i) != 0);
        w.push(name.clone());
        if locked {
            w.push("lock".into());
        }
        w.push(match name.as_str() {
            // iproute2 takes these as times: rtt in 1/8 ms, rttvar in 1/4 ms, rto_min in ms.
            "rtt" => format!("{}ms", value / 8),
            "rttvar" => format!("{}ms", value / 4),
            "rto_min" => format!("{value}ms"),
            "features" if *value & 1 != 0 => "ecn".to_string(),
            _ => value.to_string(),
        });
    }
    if let Some(cc) = &r.congctl {
        w.push("congctl".into());
        if r.lock & (1 << super::RTAX_CC_ALGO) != 0 {
            w.push("lock".into());
        }
        w.push(cc.clone());
    }
}

/// The `ip route VERB ...` line that makes `r`, each word quoted by the one rule
/// ([`quoted`]): a shell or a person pasting it gets exactly [`words`].
pub fn command(verb: &str, r: &Route) -> String {
    quoted(&words(verb, r))
}

/// A command's words as one line to paste, each quoted by the one rule
/// ([`crate::text::shell_word`]).
pub fn quoted<S: AsRef<str>>(words: &[S]) -> String {
    words
        .iter()
        .map(|w| crate::text::shell_word(w.as_ref()))
        .collect::<Vec<_>>()
        .join(" ")
}

/// Whether every word of `r`'s command is printable, so that [`command`] is exactly its
/// words (a control character in a device's name is shown escaped, and the line would not
/// name that device).
pub fn printable(r: &Route) -> bool {
    words("replace", r).iter().all(|w| crate::text::escape(w) == *w)
}

/// The marker of the line in a sysctl file that carries the host route.
pub const LINE_MARK: &str = "# route: ";

/// What a file's route line says: the destination and congestion control to set, and what
/// it names of the route that leads there (checked against the kernel's at apply).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RouteLine {
    pub dest: IpAddr,
    pub algorithm: String,
    pub gateway: Option<IpAddr>,
    pub dev: Option<String>,
    pub prefsrc: Option<IpAddr>,
}

/// Whether `line` looks like a route line, written exactly or not: `#`, `route`, `:` with any
/// spaces, tabs or case (`#route:`, ` # Route:`, `#  route:\t`). A comment like `# route to
/// ...` does not.
pub fn looks_like_route_line(line: &str) -> bool {
    let Some(rest) = line.trim_start().strip_prefix('#') else {
        return false;
    };
    let rest = rest.trim_start();
    rest.get(..5).is_some_and(|w| w.eq_ignore_ascii_case("route")) && rest[5..].trim_start().starts_with(':')
}

/// A route line of a sysctl file (`# route: ip route replace DEST ... congctl ALGO`), read by
/// the grammar [`command`] writes and nothing else. None for a line that does not look like
/// one ([`looks_like_route_line`]); Err for one that does and cannot be taken, and why.
pub fn parse_route_line(line: &str) -> Option<Result<RouteLine, String>> {
    if !looks_like_route_line(line) {
        return None;
    }
    let Some(rest) = line.strip_prefix(LINE_MARK).filter(|r| !r.starts_with([' ', '\t'])) else {
        return Some(Err(format!(
            "a route line starts `{}` exactly (one #, lower case, one space either side of the colon)",
            LINE_MARK.trim_end()
        )));
    };
    Some(shell_words(rest).and_then(|w| parse_words(&w)))
}

/// A line's words by the POSIX shell's rules for what [`crate::text::shell_word`] writes:
/// plain words, single quotes, a backslash before one character. Anything a shell would take
/// as more than words (`;`, `&`, `|`, `$`, a redirection, a glob) is refused, not dropped.
fn shell_words(line: &str) -> Result<Vec<String>, String> {
    let mut out = Vec::new();
    let mut word: Option<String> = None;
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match c {
            ' ' | '\t' => out.extend(word.take()),
            '\'' => {
                let w = word.get_or_insert_with(String::new);
                loop {
                    match chars.next() {
                        Some('\'') => break,
                        Some(q) => w.push(q),
                        None => return Err("an unclosed quote: a route line is one line".into()),
                    }
                }
            }
            '\\' => match chars.next() {
                Some(e) => word.get_or_insert_with(String::new).push(e),
                None => return Err("a backslash at the end: a route line is one line".into()),
            },
            c if crate::text::shell_plain(c) => {
                word.get_or_insert_with(String::new).push(c);
            }
            c => {
                return Err(format!(
                    "`{}` outside quotes: a route line is one `ip route replace` command, words only",
                    crate::text::escape(&c.to_string())
                ));
            }
        }
    }
    out.extend(word);
    Ok(out)
}

/// The keywords a route line may hold after its destination, each at most once.
const FLAGS: [&str; 1] = ["onlink"];

fn parse_words(words: &[String]) -> Result<RouteLine, String> {
    let shape = "a route line is `# route: ip route replace DEST ... congctl ALGORITHM`";
    let (Some([ip, route, replace]), rest) = (words.get(..3), words.get(3..).unwrap_or_default()) else {
        return Err(shape.into());
    };
    if (ip.as_str(), route.as_str(), replace.as_str()) != ("ip", "route", "replace") {
        return Err(shape.into());
    }
    let Some((dest, rest)) = rest.split_first() else {
        return Err(shape.into());
    };
    if super::KINDS.contains(&dest.as_str()) {
        return Err(format!(
            "a {dest} route: tcptune writes unicast host routes only, and names no type"
        ));
    }
    let dest = host_prefix(dest)?;
    let mut line = RouteLine {
        dest,
        algorithm: String::new(),
        gateway: None,
        dev: None,
        prefsrc: None,
    };
    let mut seen = BTreeSet::new();
    let mut it = rest.iter().map(String::as_str);
    while let Some(k) = it.next() {
        if !seen.insert(k) {
            return Err(format!("`{}` twice: each word of a route line is said once", esc(k)));
        }
        if FLAGS.contains(&k) {
            continue;
        }
        let mut value = || {
            it.next()
                .ok_or_else(|| format!("`{}` with no value at the end of the line", esc(k)))
        };
        match k {
            "tos" => return Err("tos: tcptune sets the route of ordinary (tos 0) connections only".into()),
            "table" => {
                if !matches!(value()?, "main" | "254") {
                    return Err("tcptune adds host routes to the main table only".into());
                }
            }
            "via" => line.gateway = Some(address(value()?, "via")?),
            "dev" => {
                let d = value()?;
                if !valid_ifname(d) {
                    return Err(format!("dev {}: not a name Linux gives an interface", esc(d)));
                }
                line.dev = Some(d.to_string());
            }
            "src" => line.prefsrc = Some(address(value()?, "src")?),
            "proto" => number::<u8>(value()?, "proto")?,
            "metric" => number::<u32>(value()?, "metric")?,
            "scope" => {
                let v = value()?;
                if !matches!(v, "global" | "link" | "host") {
                    number::<u8>(v, "scope")?;
                }
            }
            "pref" => {
                let v = value()?;
                if !matches!(v, "high" | "medium" | "low") {
                    return Err(format!("pref {}: high, medium or low", esc(v)));
                }
            }
            "congctl" => line.algorithm = algorithm(value()?)?,
            m if METRICS.contains(&m) && !matches!(m, "" | "lock" | "congctl") => {
                let mut v = value()?;
                if v == "lock" {
                    v = value()?;
                }
                let n = v.strip_suffix("ms").unwrap_or(v);
                if !(m == "features" && v == "ecn") {
                    number::<u32>(n, m)?;
                }
            }
            other => {
                return Err(format!("`{}`: not a word of the route line tcptune writes", esc(other)));
            }
        }
    }
    if line.algorithm.is_empty() {
        return Err("the route line names no congctl".into());
    }
    Ok(line)
}

fn esc(s: &str) -> String {
    crate::text::escape(s)
}

/// A destination: an address, or a host prefix of it (/32, /128), that may have a route.
fn host_prefix(dest: &str) -> Result<IpAddr, String> {
    let (ip, len) = dest.split_once('/').unwrap_or((dest, ""));
    let ip: IpAddr = ip.parse().map_err(|_| format!("{}: not an address", esc(dest)))?;
    if !len.is_empty() && len.parse::<u8>().ok() != Some(full_len(ip)) {
        return Err(format!(
            "{}: a host route is /{} (tcptune sets no route to a network)",
            esc(dest),
            full_len(ip)
        ));
    }
    if let Some(why) = super::dest_refusal(ip) {
        return Err(why);
    }
    Ok(ip)
}

fn address(v: &str, what: &str) -> Result<IpAddr, String> {
    v.parse().map_err(|_| format!("{what} {}: not an address", esc(v)))
}

fn number<T: std::str::FromStr>(v: &str, what: &str) -> Result<(), String> {
    v.parse::<T>()
        .map(|_| ())
        .map_err(|_| format!("{what} {}: not a number ip takes", esc(v)))
}

/// The congestion control of a route line: a name, unlocked.
fn algorithm(cc: &str) -> Result<String, String> {
    if cc == "lock" {
        return Err(
            "congctl lock would refuse a program its own choice (TCP_CONGESTION): tcptune sets congctl unlocked".into(),
        );
    }
    if cc.is_empty() || !cc.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') || cc.len() > 15 {
        return Err(format!("congctl {}: not a congestion control's name", esc(cc)));
    }
    Ok(cc.to_string())
}

/// A name Linux gives an interface (the kernel's dev_valid_name): 1 to 15 bytes, not "." or
/// "..", no '/', ':' or white space (the kernel's isspace: space, \t \n \v \f \r and the
/// byte 0xa0), and no '%' (a name with one is a pattern, `eth%d`, that the kernel numbers).
/// tcptune also refuses control characters, which no terminal shows as they are. Every other
/// byte is allowed, `$(id)` included: a name is quoted wherever it is written.
pub fn valid_ifname(n: &str) -> bool {
    (1..=15).contains(&n.len())
        && n != "."
        && n != ".."
        && n.bytes().all(|b| {
            !matches!(
                b,
                b'/' | b':' | b'%' | b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r' | 0xa0
            )
        })
        && !n.chars().any(char::is_control)
}

/// What `ip route get ADDR` printed (its first line) as a [`super::Lookup`]: the type word
/// (none for unicast), `via`, `dev`, `src`, `table`, and the metrics it names. None when the
/// line is not about `dest`. Text from another machine: every value is checked as it is read.
pub fn parse_route_get(dest: IpAddr, line: &str) -> Option<super::Lookup> {
    let mut words = line.split_whitespace().peekable();
    let kind = match words.peek().copied() {
        Some("local") => 2,
        Some("broadcast") => 3,
        Some("unreachable" | "prohibit" | "blackhole" | "throw") => 0,
        Some("multicast") => 5,
        _ => super::UNICAST,
    };
    if kind != super::UNICAST {
        words.next();
    }
    if words.next()?.parse::<IpAddr>().ok()? != dest {
        return None;
    }
    let mut l = super::Lookup::new(dest, MAIN_TABLE, kind);
    let mut metrics = std::collections::BTreeMap::new();
    while let Some(w) = words.next() {
        let v = words.peek().copied().unwrap_or_default();
        match w {
            "via" => l.gateway = v.parse().ok(),
            "dev" if valid_ifname(v) => l.dev = Some(v.to_string()),
            "src" => l.prefsrc = v.parse().ok(),
            "table" => l.table = v.parse().unwrap_or(if v == "main" { MAIN_TABLE } else { 0 }),
            m if METRICS.contains(&m)
                && !matches!(m, "lock" | "congctl" | "features" | "rtt" | "rttvar" | "rto_min") =>
            {
                if let Ok(n) = v.parse::<u32>() {
                    metrics.insert(m.to_string(), n);
                }
            }
            _ => continue,
        }
        words.next();
    }
    if !metrics.is_empty() {
        let mut r = l.host_route("x");
        r.metrics = metrics;
        l.matched = Some(r);
    }
    Some(l)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::route::{PROTO, UNICAST};

    fn route() -> Route {
        Route {
            dst: "198.18.0.2".parse().expect("ip"),
            dst_len: 32,
            table: MAIN_TABLE,
            protocol: PROTO,
            scope: 0,
            kind: UNICAST,
            tos: 0,
            flags: 0,
            gateway: Some("198.18.0.254".parse().expect("ip")),
            oif: Some(2),
            dev: Some("eth0".into()),
            prefsrc: Some("198.18.0.1".parse().expect("ip")),
            priority: None,
            pref: None,
            metrics: [("mtu".to_string(), 1400), ("initcwnd".to_string(), 20)].into(),
            lock: 1 << 2,
            congctl: Some("bbr".into()),
        }
    }

    #[test]
    fn the_ip_route_line() {
        assert_eq!(
            command("replace", &route()),
            "ip route replace 198.18.0.2/32 via 198.18.0.254 dev eth0 proto 116 src 198.18.0.1 initcwnd 20 mtu lock 1400 congctl bbr"
        );
        let v6 = Route {
            dst: "2001:2::2".parse().expect("ip"),
            dst_len: 128,
            gateway: None,
            prefsrc: None,
            priority: Some(1024),
            pref: Some(0),
            metrics: Default::default(),
            lock: 0,
            scope: 253,
            dev: Some("a\u{1b}b".into()),
            ..route()
        };
        // A control character is shown, never sent: the line is not printable.
        assert_eq!(
            command("del", &v6),
            "ip route del 2001:2::2/128 dev 'a\\u{1b}b' proto 116 scope link metric 1024 pref medium congctl bbr"
        );
        assert!(!printable(&v6) && printable(&route()));
        // The type is said where it is not unicast.
        let hole = Route {
            kind: 6,
            gateway: None,
            dev: None,
            prefsrc: None,
            metrics: Default::default(),
            lock: 0,
            congctl: None,
            protocol: 4,
            ..route()
        };
        assert_eq!(
            command("replace", &hole),
            "ip route replace blackhole 198.18.0.2/32 proto 4"
        );
        // A device's name is one word whatever it holds.
        let evil = Route {
            dev: Some("x$(id>&2)".into()),
            ..route()
        };
        assert!(
            command("replace", &evil).contains(" dev 'x$(id>&2)' "),
            "{}",
            command("replace", &evil)
        );
    }

    /// What a POSIX shell (the system's sh, the real parser) makes of `line` as a command's
    /// arguments.
    fn sh_words(line: &str) -> Vec<String> {
        let out = std::process::Command::new("sh")
            .arg("-c")
            .arg(format!("printf '%s\\0' {line}"))
            .output()
            .expect("sh");
        assert!(
            out.status.success(),
            "sh: {line}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let text = String::from_utf8(out.stdout).expect("utf8");
        text.split_terminator('\0').map(str::to_string).collect()
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(96))]
        /// Any name the kernel gives an interface, however hostile, is one word to the shell and
        /// to tcptune's own reader of the route line: the words `ip` gets are the words meant.
        #[test]
        fn any_interface_name_reads_back_as_itself(name in "[!-~\u{a1}-\u{ff}]{1,15}") {
            proptest::prop_assume!(valid_ifname(&name) && name.len() <= 15);
            let r = Route { dev: Some(name.clone()), ..route() };
            let line = command("replace", &r);
            proptest::prop_assert_eq!(sh_words(&line), words("replace", &r));
            let back = parse_route_line(&format!("{LINE_MARK}{line}")).expect("a route line").expect("parses");
            proptest::prop_assert_eq!(back.dev.as_deref(), Some(name.as_str()));
            proptest::prop_assert_eq!(back.algorithm.as_str(), "bbr");
        }
    }

    #[test]
    fn the_names_of_the_findings_read_back_exactly() {
        for name in [
            "x$(id>&2)",
            "a;b",
            "`id`",
            "a'b",
            "a\\b",
            "table",
            "congctl",
            "a|b&c",
            "\"q\"",
            "{{x}}",
            "#x",
            "é$x",
        ] {
            assert!(valid_ifname(name), "{name}");
            let r = Route {
                dev: Some(name.to_string()),
                ..route()
            };
            let line = command("replace", &r);
            assert_eq!(sh_words(&line), words("replace", &r), "{line}");
            let back = parse_route_line(&format!("{LINE_MARK}{line}"))
                .expect("line")
                .expect(name);
            assert_eq!(back.dev.as_deref(), Some(name), "{line}");
        }
        for bad in [
            "",
            ".",
            "..",
            "a/b",
            "a:b",
            "eth%d",
            "a b",
            "a\tb",
            "a\nb",
            "0123456789abcdef",
            "a\u{1b}b",
            "\u{e0}",
        ] {
            assert!(!valid_ifname(bad), "{bad:?}");
        }
    }

    #[test]
    fn what_ip_route_get_printed() {
        let dest: IpAddr = "198.18.0.1".parse().expect("ip");
        let l = parse_route_get(
            dest,
            "198.18.0.1 via 198.18.0.254 dev wan0 src 198.18.0.2 uid 1000 mtu 1400",
        )
        .expect("parsed");
        assert_eq!(l.gateway, Some("198.18.0.254".parse().expect("ip")));
        assert_eq!((l.dev.as_deref(), l.table, l.kind), (Some("wan0"), MAIN_TABLE, 1));
        assert_eq!(l.host_route("bbr").metrics.get("mtu"), Some(&1400));
        assert_eq!(l.refusal(), None);
        let t = parse_route_get(dest, "198.18.0.1 dev eth1 table 100 src 198.18.0.2").expect("parsed");
        assert!(t.refusal().is_none_or(|r| r.contains("table 100")));
        assert_eq!(
            parse_route_get(dest, "local 198.18.0.1 dev lo table local src 198.18.0.1").map(|l| l.kind),
            Some(2)
        );
        assert!(parse_route_get(dest, "10.0.0.1 dev eth0").is_none());
        assert!(parse_route_get(dest, "").is_none());
        // A device name no kernel takes is left out.
        assert_eq!(
            parse_route_get(dest, "198.18.0.1 dev a/b src 198.18.0.2").and_then(|l| l.dev),
            None
        );
    }

    #[test]
    fn route_lines_of_a_sysctl_file() {
        let line = format!("{LINE_MARK}{}", command("replace", &route()));
        let parsed = parse_route_line(&line).expect("a route line").expect("parses");
        assert_eq!(
            parsed,
            RouteLine {
                dest: "198.18.0.2".parse().expect("ip"),
                algorithm: "bbr".into(),
                gateway: Some("198.18.0.254".parse().expect("ip")),
                dev: Some("eth0".into()),
                prefsrc: Some("198.18.0.1".parse().expect("ip")),
            }
        );
        let v6 = parse_route_line("# route: ip route replace 2001:2::2 dev x congctl cubic")
            .expect("line")
            .expect("parses");
        assert_eq!(
            (v6.dest, v6.algorithm.as_str()),
            ("2001:2::2".parse().expect("ip"), "cubic")
        );
        assert_eq!(parse_route_line("# a comment"), None);
        assert_eq!(parse_route_line("# route to 198.18.0.2: bbr"), None);
        assert_eq!(parse_route_line("net.ipv4.tcp_rmem = 1 2 3"), None);
        for (bad, why) in [
            (
                "# route: ip route add 198.18.0.2/32 congctl bbr",
                "is `# route: ip route replace",
            ),
            (
                "# route: ip route replace 198.18.0.0/24 congctl bbr",
                "a host route is /32",
            ),
            (
                "# route: ip route replace 198.18.0.2 table 100 congctl bbr",
                "main table only",
            ),
            (
                "# route: ip route replace 198.18.0.2 table main table 100 congctl bbr",
                "`table` twice",
            ),
            ("# route: ip route replace 198.18.0.2 congctl lock bbr", "unlocked"),
            ("# route: ip route replace 198.18.0.2 congctl b;r", "`;` outside quotes"),
            ("# route: ip route replace 198.18.0.2 dev eth0", "names no congctl"),
            ("# route: ip route replace host congctl bbr", "not an address"),
            // Extra words are refused, not dropped.
            (
                "# route: ip route replace 198.18.0.2 congctl reno && ip route del default",
                "`&` outside quotes",
            ),
            (
                "# route: ip route replace 198.18.0.2 congctl reno congctl bbr",
                "`congctl` twice",
            ),
            (
                "# route: ip route replace 198.18.0.2 proto 255 type blackhole congctl bbr",
                "`type`: not a word",
            ),
            (
                "# route: ip route replace blackhole 198.18.0.2 congctl bbr",
                "a blackhole route",
            ),
            ("# route: ip route replace 198.18.0.2 tos 0x10 congctl bbr", "tos 0"),
            (
                "# route: ip route replace 198.18.0.2 dev 'a/b' congctl bbr",
                "not a name Linux gives",
            ),
            (
                "# route: ip route replace 198.18.0.2 dev 'x congctl bbr",
                "an unclosed quote",
            ),
            (
                "# route: ip route replace 198.18.0.2 congctl bbr \\",
                "a backslash at the end",
            ),
            (
                "# route: ip route replace 198.18.0.2 congctl $(id)",
                "`$` outside quotes",
            ),
            (
                "# route: ip route replace 0.0.0.0 congctl bbr",
                "the unspecified address",
            ),
            ("# route: ip route replace :: congctl bbr", "the unspecified address"),
            ("# route: ip route replace ::ffff:10.99.0.5 congctl bbr", "IPv4-mapped"),
            // Near misses: a route line written almost right.
            (
                "#route: ip route replace 198.18.0.2 congctl bbr",
                "starts `# route:` exactly",
            ),
            (
                " # route: ip route replace 198.18.0.2 congctl bbr",
                "starts `# route:` exactly",
            ),
            (
                "# Route: ip route replace 198.18.0.2 congctl bbr",
                "starts `# route:` exactly",
            ),
            (
                "#  route: ip route replace 198.18.0.2 congctl bbr",
                "starts `# route:` exactly",
            ),
            (
                "# route:\tip route replace 198.18.0.2 congctl bbr",
                "starts `# route:` exactly",
            ),
            (
                "# route:  ip route replace 198.18.0.2 congctl bbr",
                "starts `# route:` exactly",
            ),
            (
                "# ROUTE : ip route replace 198.18.0.2 congctl bbr",
                "starts `# route:` exactly",
            ),
        ] {
            let e = parse_route_line(bad).expect("a route line").expect_err(bad);
            assert!(e.contains(why), "{bad}: {e}");
        }
        // A device named like a keyword is a device.
        let r = Route {
            dev: Some("table".into()),
            ..route()
        };
        let back = parse_route_line(&format!("{LINE_MARK}{}", command("replace", &r)))
            .expect("line")
            .expect("parses");
        assert_eq!(back.dev.as_deref(), Some("table"));
    }
}
