//! What a `tcptune mesh` run will do before it connects anywhere: its hosts' names (checked:
//! they become file names, play names and ssh arguments), the machines behind them (two names
//! that ssh takes to one HostName and port are one machine) and its ordered pairs.

use crate::error::Error;
use crate::text;

/// A host's name becomes a file's (`HOST.conf`) and a play's: letters, digits, `.`, `-`, `_`,
/// `@`, `:` only as ssh destinations have them, never a leading dot or dash.
pub fn check_name(n: &str) -> Result<(), Error> {
    let ok = !n.is_empty()
        && !n.starts_with(['.', '-'])
        && n.len() <= 255
        && n.bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'-' | b'_' | b'@' | b':'));
    if ok {
        Ok(())
    } else {
        Err(Error::usage(format!(
            "\"{}\": a mesh names its hosts' files and plays after them: letters, digits, '.', '-', '_', '@', ':'",
            text::escape(n)
        )))
    }
}

/// Every ordered pair of `hosts`.
pub fn every_pair(hosts: &[String]) -> Vec<(String, String)> {
    hosts
        .iter()
        .flat_map(|a| {
            hosts
                .iter()
                .filter(move |b| *b != a)
                .map(move |b| (a.clone(), b.clone()))
        })
        .collect()
}

/// `--pairs FROM:TO,...` over `hosts`, in the order given, each once. A host's name may hold
/// `:` (user@host:port forms are not taken, but an IPv6 literal is), so FROM:TO is split where
/// both sides name hosts: exactly one such split, else it is refused as unknown or ambiguous.
pub fn parse_pairs(list: &str, hosts: &[String]) -> Result<Vec<(String, String)>, Error> {
    let known = |h: &str| hosts.iter().any(|n| n == h);
    let mut out: Vec<(String, String)> = Vec::new();
    for p in list.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let bad = |why: &str| Error::usage(format!("--pairs {}: {why}", text::escape(p)));
        let splits: Vec<(&str, &str)> = p
            .match_indices(':')
            .map(|(i, _)| (&p[..i], &p[i + 1..]))
            .filter(|(a, b)| known(a) && known(b))
            .collect();
        let (a, b) = match splits.as_slice() {
            [one] => *one,
            [] if !p.contains(':') => return Err(bad("not FROM:TO")),
            [] => return Err(bad("names a host the mesh does not have")),
            _ => return Err(bad("ambiguous: more than one FROM:TO split names two hosts")),
        };
        if a == b {
            return Err(bad("a host with itself"));
        }
        if !out.iter().any(|(x, y)| x == a && y == b) {
            out.push((a.to_string(), b.to_string()));
        }
    }
    if out.is_empty() {
        return Err(Error::usage("--pairs: no pair given"));
    }
    Ok(out)
}

/// The tests `--pairs` names: each pair once, whichever way round it is named (the first way
/// kept: its first host runs the test).
pub fn tests_of(pairs: Vec<(String, String)>) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = Vec::new();
    for (a, b) in pairs {
        if a != b && !out.iter().any(|(x, y)| (*x == a && *y == b) || (*x == b && *y == a)) {
            out.push((a, b));
        }
    }
    out
}

/// The sites of a mesh's hosts (`hosts`, after [`one_per_machine`]; `alias`: a name dropped
/// → the one kept): from `--site SITE=HOST,...` (`specs`) and inventory groups (`groups`:
/// each group's name and hosts). Empty when neither names a site; else every host in exactly
/// one.
pub fn sites(
    specs: &[String],
    groups: &[(String, Vec<String>)],
    hosts: &[String],
    alias: &std::collections::BTreeMap<String, String>,
) -> Result<std::collections::BTreeMap<String, String>, Error> {
    let mut given: Vec<(String, Vec<String>)> = groups.to_vec();
    for spec in specs {
        let bad = |why: &str| Error::usage(format!("--site {}: {why}", text::escape(spec)));
        let (site, list) = spec.split_once('=').ok_or_else(|| bad("not SITE=HOST,..."))?;
        let site = site.trim();
        if site.is_empty()
            || !site
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'-' | b'_'))
        {
            return Err(bad("a site's name is letters, digits, '.', '-', '_'"));
        }
        let members: Vec<String> = list
            .split(',')
            .map(str::trim)
            .filter(|h| !h.is_empty())
            .map(String::from)
            .collect();
        if members.is_empty() {
            return Err(bad("no host"));
        }
        given.push((site.to_string(), members));
    }
    let mut of = std::collections::BTreeMap::new();
    let mut names: Vec<&str> = Vec::new();
    for (site, members) in &given {
        if names.contains(&site.as_str()) {
            return Err(Error::usage(format!("site {} given twice", text::escape(site))));
        }
        names.push(site);
        for h in members {
            let kept = alias.get(h).unwrap_or(h);
            if !hosts.contains(kept) {
                return Err(Error::usage(format!(
                    "site {}: {} is no host of this mesh",
                    text::escape(site),
                    text::escape(h)
                )));
            }
            if let Some(other) = of.insert(kept.clone(), site.clone())
                && other != *site
            {
                return Err(Error::usage(format!(
                    "{} is in two sites, {} and {}: a host sits in one",
                    text::escape(kept),
                    text::escape(&other),
                    text::escape(site)
                )));
            }
        }
    }
    if let Some(h) = hosts.iter().find(|h| !of.is_empty() && !of.contains_key(*h)) {
        return Err(Error::usage(format!(
            "{} is in no site: give every host its site (--site SITE=HOST,...), or none",
            text::escape(h)
        )));
    }
    Ok(of)
}

/// A host of a mesh: its name, its ssh destination.
pub type Host = (String, String);

/// A name dropped for another of the same machine.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SameMachine {
    pub dropped: String,
    pub kept: String,
    /// Where ssh connects for both.
    pub host: String,
    pub port: u16,
}

/// `hosts` (name, ssh destination), one name per machine: names that ssh takes to the same
/// HostName and port (`ssh -G`: the user's configuration read here, nothing connected) are one
/// machine, kept under the first name.
pub fn one_per_machine(hosts: Vec<Host>, client: &super::ssh::Client) -> Result<(Vec<Host>, Vec<SameMachine>), Error> {
    let mut ends = Vec::new();
    for (name, dest) in &hosts {
        ends.push((name.clone(), client.endpoint(dest, super::SETUP_LIMIT)?));
    }
    let same: Vec<SameMachine> = same_machines(&ends)
        .into_iter()
        .map(|(dropped, kept)| {
            let (host, port) = ends
                .iter()
                .find(|(n, _)| *n == kept)
                .map(|(_, at)| at.clone())
                .unwrap_or_default();
            SameMachine {
                dropped,
                kept,
                host,
                port: port.unwrap_or(22),
            }
        })
        .collect();
    let hosts = hosts
        .into_iter()
        .filter(|(n, _)| !same.iter().any(|s| s.dropped == *n))
        .collect();
    Ok((hosts, same))
}

/// Names that ssh takes to one machine (the same HostName and port): each later name with the
/// first one's. `endpoints`: each name and where ssh connects for it.
pub fn same_machines(endpoints: &[(String, (String, Option<u16>))]) -> Vec<(String, String)> {
    let mut seen: Vec<(&(String, Option<u16>), &String)> = Vec::new();
    let mut same = Vec::new();
    for (name, at) in endpoints {
        let port = |p: Option<u16>| p.unwrap_or(22);
        match seen
            .iter()
            .find(|(s, _)| s.0.eq_ignore_ascii_case(&at.0) && port(s.1) == port(at.1))
        {
            Some((_, first)) => same.push((name.clone(), (*first).clone())),
            None => seen.push((at, name)),
        }
    }
    same
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hosts(h: &[&str]) -> Vec<String> {
        h.iter().map(ToString::to_string).collect()
    }

    #[test]
    fn pairs_split_where_both_sides_are_hosts_and_say_when_they_cannot() {
        let h = hosts(&["h1", "h2", "h3", "h2:h3"]);
        assert_eq!(
            parse_pairs("h1:h2, h2:h1,h1:h2", &h).expect("pairs"),
            [("h1".into(), "h2".into()), ("h2".into(), "h1".into())]
        );
        // h1 → "h2:h3" and "h1:h2" → h3 would both name hosts if h1:h2 were one; here only
        // the first split does.
        assert_eq!(
            parse_pairs("h1:h2:h3", &h).expect("one split"),
            [("h1".into(), "h2:h3".into())]
        );
        let two = hosts(&["a", "a:b", "b", "b:c", "c"]);
        let err = parse_pairs("a:b:c", &two).expect_err("two splits");
        assert!(err.message().contains("ambiguous"), "{}", err.message());
        for (list, why) in [
            ("h1h2", "not FROM:TO"),
            ("h1:h9", "does not have"),
            ("h1:h1", "itself"),
            (",", "no pair"),
        ] {
            let e = parse_pairs(list, &h).expect_err(list);
            assert!(e.message().contains(why), "{list}: {}", e.message());
        }
    }

    #[test]
    fn sites_put_every_host_in_one_or_say_which_is_not() {
        let h = hosts(&["h1", "h2", "h3", "h4"]);
        let alias: std::collections::BTreeMap<String, String> = [("web1".to_string(), "h1".to_string())].into();
        let specs = |v: &[&str]| v.iter().map(ToString::to_string).collect::<Vec<_>>();
        let of = sites(&specs(&["a=web1,h2", "b = h3, h4"]), &[], &h, &alias).expect("sites");
        assert_eq!(
            of.get("h1").map(String::as_str),
            Some("a"),
            "a name of a machine stands for it"
        );
        assert_eq!(of.get("h4").map(String::as_str), Some("b"));
        // Inventory groups are sites too, and none at all is none.
        let groups = [
            ("g1".to_string(), hosts(&["h1", "h2"])),
            ("g2".to_string(), hosts(&["h3", "h4"])),
        ];
        assert_eq!(sites(&[], &groups, &h, &alias).expect("groups").len(), 4);
        assert!(sites(&[], &[], &h, &alias).expect("none").is_empty());
        for (given, why) in [
            (&["a=h1,h2,h3"][..], "h4 is in no site"),
            (&["a=h1,h2", "b=h2,h3,h4"][..], "h2 is in two sites, a and b"),
            (&["a=h1,h2", "a=h3,h4"][..], "site a given twice"),
            (&["a=h1,h9", "b=h2,h3,h4"][..], "h9 is no host of this mesh"),
            (&["a;id=h1,h2,h3,h4"][..], "a site's name is"),
            (&["a"][..], "not SITE=HOST"),
            (&["a="][..], "no host"),
        ] {
            let e = sites(&specs(given), &[], &h, &alias).expect_err(why);
            assert!(e.message().contains(why), "{given:?}: {}", e.message());
        }
        // A host's name with a terminal escape is said escaped.
        let e = sites(&specs(&["a=h1,\u{1b}[2J"]), &[], &h, &alias).expect_err("escape");
        assert!(!e.message().contains('\u{1b}'), "{}", e.message());
    }

    #[test]
    fn a_pair_named_either_way_round_is_one_test() {
        let p = |a: &str, b: &str| (a.to_string(), b.to_string());
        assert_eq!(
            tests_of(vec![p("h3", "h1"), p("h1", "h2"), p("h1", "h3"), p("h2", "h2")]),
            [p("h3", "h1"), p("h1", "h2")]
        );
    }

    #[test]
    fn two_names_of_one_machine_are_found_by_host_name_and_port() {
        let at = |h: &str, p: Option<u16>| (h.to_string(), p);
        let e = vec![
            ("h1".to_string(), at("198.18.10.1", Some(22))),
            ("web1".to_string(), at("198.18.10.1", None)),
            ("h2".to_string(), at("198.18.10.1", Some(2222))),
            ("H1B".to_string(), at("DTN1.example", Some(22))),
            ("h1c".to_string(), at("dtn1.example", Some(22))),
        ];
        assert_eq!(
            same_machines(&e),
            [("web1".into(), "h1".into()), ("h1c".into(), "H1B".into())]
        );
    }

    #[test]
    fn names_are_held_to_what_files_plays_and_ssh_take() {
        for ok in ["h1", "dtn1.example.org", "root@h1", "2001:db8::1", "a_b-c"] {
            assert!(check_name(ok).is_ok(), "{ok}");
        }
        for bad in ["", "-oProxyCommand=x", ".h", "a b", "$(id)", "a;b", "h/1", "a\nb", "ä"] {
            assert!(check_name(bad).is_err(), "{bad:?}");
        }
    }
}
