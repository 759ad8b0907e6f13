//! A [`Route`] as the `ip route` line that makes it, and the one line of a sysctl file that
//! carries it (`# route: ip route replace ...`, written by `advise --scope path`).

use std::fmt::Write as _;
use std::net::IpAddr;

use super::{MAIN_TABLE, METRICS, Route, full_len};

/// `198.18.0.2/32`.
pub fn prefix(ip: IpAddr, len: u8) -> String {
    format!("{ip}/{len}")
}

/// The `ip route VERB ...` line that makes `r` (VERB: `replace`, `add`, `del`), every
/// attribute spelt as iproute2 takes it: `ip route replace 198.18.0.2/32 via 198.18.0.254 dev
/// eth0 proto 116 src 198.18.0.1 mtu 1400 congctl bbr`. The device is named when known, else
/// left to the kernel.
pub fn command(verb: &str, r: &Route) -> String {
    let mut s = format!("ip route {verb} {}", prefix(r.dst, r.dst_len));
    if r.tos != 0 {
        let _ = write!(s, " tos 0x{:02x}", r.tos);
    }
    if r.table != MAIN_TABLE {
        let _ = write!(s, " table {}", r.table);
    }
    if let Some(g) = r.gateway {
        let _ = write!(s, " via {g}");
    }
    if let Some(d) = &r.dev {
        let _ = write!(s, " dev {}", crate::text::escape(d));
    }
    // RTNH_F_ONLINK
    if r.flags & 4 != 0 {
        s.push_str(" onlink");
    }
    let _ = write!(s, " proto {}", r.protocol);
    match r.scope {
        0 => {}
        253 => s.push_str(" scope link"),
        254 => s.push_str(" scope host"),
        n => {
            let _ = write!(s, " scope {n}");
        }
    }
    if let Some(p) = r.prefsrc {
        let _ = write!(s, " src {p}");
    }
    if let Some(m) = r.priority {
        let _ = write!(s, " metric {m}");
    }
    if let Some(p) = r.pref {
        s.push_str(match p {
            1 => " pref high",
            3 => " pref low",
            _ => " pref medium",
        });
    }
    for (name, value) in &r.metrics {
        let locked = METRICS
            .iter()
            .position(|m| m == name)
            .is_some_and(|i| r.lock & (1 << i) != 0);
        let lock = if locked { "lock " } else { "" };
        let value = match name.as_str() {
            // iproute2 takes these as times: rtt in 1/8 ms, rttvar in 1/4 ms, rto_min in ms.
            "rtt" => format!("{}ms", value / 8),
            "rttvar" => format!("{}ms", value / 4),
            "rto_min" => format!("{value}ms"),
            "features" if *value & 1 != 0 => "ecn".to_string(),
            _ => value.to_string(),
        };
        let _ = write!(s, " {name} {lock}{value}");
    }
    if let Some(cc) = &r.congctl {
        let lock = if r.lock & (1 << super::RTAX_CC_ALGO) != 0 {
            "lock "
        } else {
            ""
        };
        let _ = write!(s, " congctl {lock}{}", crate::text::escape(cc));
    }
    s
}

/// The marker of the line in a sysctl file that carries the host route.
pub const LINE_MARK: &str = "# route: ";

/// A route line of a sysctl file (`# route: ip route replace DEST ... congctl ALGO`): its
/// destination and congestion control. None for any other line (a comment like another);
/// Err for a route line tcptune cannot take, and why.
pub fn parse_route_line(line: &str) -> Option<Result<(IpAddr, String), String>> {
    let rest = line.strip_prefix(LINE_MARK)?;
    let words: Vec<&str> = rest.split_whitespace().collect();
    let Some(["ip", "route", "replace", dest, ..]) = words.get(..4) else {
        return Some(Err(
            "a route line is `# route: ip route replace DEST ... congctl ALGORITHM`".into(),
        ));
    };
    Some(parse_words(dest, &words[4..]))
}

fn parse_words(dest: &str, words: &[&str]) -> Result<(IpAddr, String), String> {
    let (ip, len) = dest.split_once('/').unwrap_or((dest, ""));
    let ip: IpAddr = ip
        .parse()
        .map_err(|_| format!("{}: not an address", crate::text::escape(dest)))?;
    if !len.is_empty() && len.parse::<u8>().ok() != Some(full_len(ip)) {
        return Err(format!(
            "{}: a host route is /{} (tcptune sets no route to a network)",
            crate::text::escape(dest),
            full_len(ip)
        ));
    }
    if let Some(t) = words.iter().position(|w| *w == "table")
        && !matches!(words.get(t + 1), Some(&"main" | &"254"))
    {
        return Err("tcptune adds host routes to the main table only".into());
    }
    let at = words
        .iter()
        .position(|w| *w == "congctl")
        .ok_or_else(|| "the route line names no congctl".to_string())?;
    let mut cc = words.get(at + 1).copied().unwrap_or_default();
    if cc == "lock" {
        return Err(
            "congctl lock would refuse a program its own choice (TCP_CONGESTION): tcptune sets congctl unlocked".into(),
        );
    }
    if cc.is_empty() || !cc.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') || cc.len() > 15 {
        cc = if cc.is_empty() { "(none)" } else { cc };
        return Err(format!(
            "congctl {}: not a congestion control's name",
            crate::text::escape(cc)
        ));
    }
    Ok((ip, cc.to_string()))
}

/// A name Linux takes for an interface: 1 to 15 bytes, no '/', no white space, no ':'
/// nor control character, not "." or "..".
fn valid_ifname(n: &str) -> bool {
    (1..=15).contains(&n.len())
        && n != "."
        && n != ".."
        && n.chars().all(|c| c.is_ascii_graphic() && c != '/' && c != ':')
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
        assert_eq!(
            command("del", &v6),
            "ip route del 2001:2::2/128 dev a\\u{1b}b proto 116 scope link metric 1024 pref medium congctl bbr"
        );
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
        assert_eq!(
            parse_route_line(&line),
            Some(Ok(("198.18.0.2".parse().expect("ip"), "bbr".to_string())))
        );
        assert_eq!(
            parse_route_line("# route: ip route replace 2001:2::2 dev x congctl cubic"),
            Some(Ok(("2001:2::2".parse().expect("ip"), "cubic".to_string())))
        );
        assert_eq!(parse_route_line("# a comment"), None);
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
            ("# route: ip route replace 198.18.0.2 congctl lock bbr", "unlocked"),
            (
                "# route: ip route replace 198.18.0.2 congctl b;r",
                "not a congestion control",
            ),
            ("# route: ip route replace 198.18.0.2 dev eth0", "names no congctl"),
            ("# route: ip route replace host congctl bbr", "not an address"),
        ] {
            let e = parse_route_line(bad).expect("a route line").expect_err(bad);
            assert!(e.contains(why), "{bad}: {e}");
        }
    }
}
