//! Host → address. IP literals skip DNS; names go through the system resolver (A and AAAA).

use std::net::IpAddr;
use std::time::Duration;

use super::Family;
use crate::error::Error;

/// How long the system resolver may take.
pub const DNS_TIMEOUT: Duration = Duration::from_secs(10);

/// Resolve `host` to one address of the allowed family: the first the resolver returns.
///
/// Errors: an unresolvable name → a measurement error ("cannot resolve \"HOST\": reason",
/// with [`RESOLVE_HINT`]); an IP literal of the other family than `family` asks for →
/// `Error::Usage`.
pub async fn resolve(host: &str, family: Option<Family>) -> Result<IpAddr, Error> {
    if let Some(ip) = parse_literal(host) {
        return match family {
            Some(f) if !f.matches(&ip) => Err(Error::usage(format!(
                "{host} is an {} address but only {} was allowed",
                if ip.is_ipv4() { "IPv4" } else { "IPv6" },
                f.label()
            ))
            .with_hint("drop the address-family option or give an address of that family")),
            _ => Ok(ip),
        };
    }
    check_name(host)?;
    let addrs: Vec<IpAddr> = match tokio::time::timeout(DNS_TIMEOUT, tokio::net::lookup_host((host, 0))).await {
        Err(_) => {
            return Err(cannot_resolve(
                host,
                &format!("no answer within {} s", DNS_TIMEOUT.as_secs()),
            ));
        }
        Ok(Err(e)) => return Err(cannot_resolve(host, &e.to_string())),
        Ok(Ok(it)) => it.map(|sa| sa.ip()).collect(),
    };
    pick_address(&addrs, family).ok_or_else(|| {
        let reason = match family {
            Some(f) if !addrs.is_empty() => format!("it has no {} address", f.label()),
            _ => "no address".to_string(),
        };
        cannot_resolve(host, &reason)
    })
}

/// An IP literal, also in brackets ("[::1]").
pub fn parse_literal(host: &str) -> Option<IpAddr> {
    let h = host.trim();
    let h = h.strip_prefix('[').and_then(|s| s.strip_suffix(']')).unwrap_or(h);
    h.parse().ok()
}

/// Names that never resolve, refused without asking any server: empty names and, per
/// RFC 6761 §6.4, anything under `.invalid`.
pub fn check_name(host: &str) -> Result<(), Error> {
    let name = host.trim().trim_end_matches('.').to_ascii_lowercase();
    if name.is_empty() {
        return Err(cannot_resolve(host, "empty host name"));
    }
    if name == "invalid" || name.ends_with(".invalid") {
        return Err(cannot_resolve(host, "names under .invalid never resolve (RFC 6761)"));
    }
    Ok(())
}

/// The first address of the allowed family.
pub fn pick_address(addrs: &[IpAddr], family: Option<Family>) -> Option<IpAddr> {
    addrs.iter().copied().find(|a| family.is_none_or(|f| f.matches(a)))
}

/// The way around a name that does not resolve.
pub const RESOLVE_HINT: &str = "check the name, or give --rtt and --bandwidth";

/// `cannot resolve "HOST": REASON`, with [`RESOLVE_HINT`].
pub fn cannot_resolve(host: &str, reason: &str) -> Error {
    // The host is the user's text, echoed: a newline or ESC in it must not act on the terminal.
    let host = crate::text::escape(host);
    Error::measurement(format!("cannot resolve \"{host}\": {reason}")).with_hint(RESOLVE_HINT)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::{Ipv4Addr, Ipv6Addr};

    fn rt() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime")
    }

    #[test]
    fn literals_skip_dns() {
        let rt = rt();
        assert_eq!(
            rt.block_on(resolve("127.0.0.1", None)).ok(),
            Some(IpAddr::V4(Ipv4Addr::LOCALHOST))
        );
        assert_eq!(
            rt.block_on(resolve("[::1]", Some(Family::V6))).ok(),
            Some(IpAddr::V6(Ipv6Addr::LOCALHOST))
        );
        assert_eq!(
            rt.block_on(resolve("::1", None)).ok(),
            Some(IpAddr::V6(Ipv6Addr::LOCALHOST))
        );
    }

    #[test]
    fn literal_of_the_wrong_family_is_a_usage_error() {
        let err = rt()
            .block_on(resolve("127.0.0.1", Some(Family::V6)))
            .expect_err("v4 literal with v6 only");
        assert!(err.kind() == crate::error::Kind::Usage, "{err:?}");
    }

    #[test]
    fn invalid_names_fail_without_dns() {
        let rt = rt();
        for name in ["nonexistent.invalid", "NONEXISTENT.INVALID.", ""] {
            let err = rt.block_on(resolve(name, None)).expect_err(name);
            assert!(err.kind() == crate::error::Kind::Measurement, "{err:?}");
            assert!(
                err.to_string().starts_with(&format!("cannot resolve \"{name}\": ")),
                "{err}"
            );
            assert_eq!(err.hint(), Some(RESOLVE_HINT));
        }
    }

    #[test]
    fn picks_first_of_family() {
        let v4 = IpAddr::V4(Ipv4Addr::new(198, 18, 0, 1));
        let v6 = IpAddr::V6(Ipv6Addr::LOCALHOST);
        let addrs = [v6, v4];
        assert_eq!(pick_address(&addrs, None), Some(v6));
        assert_eq!(pick_address(&addrs, Some(Family::V4)), Some(v4));
        assert_eq!(pick_address(&[v4], Some(Family::V6)), None);
    }
}
