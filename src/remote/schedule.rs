//! The order of a mesh's tests: one test per pair of hosts (it measures both directions and
//! advises both ends), put in rounds of tests that run at once.
//!
//! Two tests of one round never share a host (a host in two tests at once reads each other's
//! traffic in its NIC and its CPU), and never share a link between sites: hosts are grouped in
//! sites (`--site`, `--site-groups`), a site's hosts reach each other over its LAN, and all the
//! pairs between two sites cross one link between them, which carries one test at a time.
//! The LAN is taken to carry a test per pair of its hosts at once (a switched LAN: each host's
//! port is its own), and the links between sites to be one per pair of sites (a site whose
//! links to every other site share one uplink is told with `--parallel 1`, or as one site
//! pair at a time by naming fewer sites). Without sites the schedule cannot know which pairs
//! share a link: the caller runs one test at a time then, unless told `--parallel`.
//!
//! Rounds are filled greedily, the link with the most tests left first (it bounds the number
//! of rounds), then the host with the most tests left: with N hosts in one site, N − 1 rounds
//! of N/2 tests (N even), as a round-robin tournament has; across sites the busiest link's
//! test count.

use std::collections::{BTreeMap, BTreeSet};

/// Every pair of `hosts` once, in order: (a, b) with a before b. `a` runs the test, `b` the
/// peer.
pub fn every_pair_once(hosts: &[String]) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for (i, a) in hosts.iter().enumerate() {
        for b in &hosts[i + 1..] {
            out.push((a.clone(), b.clone()));
        }
    }
    out
}

/// The link a test between `a` and `b` crosses: the pair of their sites (in order), or None
/// within one site or where a host has no site.
fn link<'a>(sites: &'a BTreeMap<String, String>, a: &str, b: &str) -> Option<(&'a str, &'a str)> {
    let (sa, sb) = (sites.get(a)?.as_str(), sites.get(b)?.as_str());
    match sa.cmp(sb) {
        std::cmp::Ordering::Less => Some((sa, sb)),
        std::cmp::Ordering::Greater => Some((sb, sa)),
        std::cmp::Ordering::Equal => None,
    }
}

/// The rounds: indexes into `pairs`, each round at most `parallel` tests (≥ 1) that share no
/// host and no link between sites (`sites`: host → site; a host with none shares no link).
/// Every pair is in exactly one round.
pub fn rounds(pairs: &[(String, String)], sites: &BTreeMap<String, String>, parallel: usize) -> Vec<Vec<usize>> {
    let parallel = parallel.max(1);
    let mut left: Vec<usize> = (0..pairs.len()).collect();
    let mut out = Vec::new();
    while !left.is_empty() {
        let mut on_link: BTreeMap<(&str, &str), usize> = BTreeMap::new();
        let mut of_host: BTreeMap<&str, usize> = BTreeMap::new();
        for &i in &left {
            let (a, b) = &pairs[i];
            if let Some(l) = link(sites, a, b) {
                *on_link.entry(l).or_default() += 1;
            }
            *of_host.entry(a).or_default() += 1;
            *of_host.entry(b).or_default() += 1;
        }
        let weight = |i: usize| {
            let (a, b) = &pairs[i];
            let l = link(sites, a, b).map_or(0, |l| on_link[&l]);
            (l, of_host[a.as_str()] + of_host[b.as_str()])
        };
        let mut order = left.clone();
        // Stable: equal weights keep the pairs' order.
        order.sort_by_key(|&i| std::cmp::Reverse(weight(i)));
        let mut busy: BTreeSet<&str> = BTreeSet::new();
        let mut links: BTreeSet<(&str, &str)> = BTreeSet::new();
        let mut round = Vec::new();
        for i in order {
            if round.len() == parallel {
                break;
            }
            let (a, b) = &pairs[i];
            if busy.contains(a.as_str()) || busy.contains(b.as_str()) {
                continue;
            }
            let l = link(sites, a, b);
            if l.is_some_and(|l| links.contains(&l)) {
                continue;
            }
            busy.insert(a);
            busy.insert(b);
            links.extend(l);
            round.push(i);
        }
        round.sort_unstable();
        left.retain(|i| !round.contains(i));
        out.push(round);
    }
    out
}

/// The fewest rounds any schedule can have: the most tests one host is in, and the most one
/// link between sites carries.
pub fn fewest_rounds(pairs: &[(String, String)], sites: &BTreeMap<String, String>) -> usize {
    let mut count: BTreeMap<String, usize> = BTreeMap::new();
    for (a, b) in pairs {
        *count.entry(format!("host {a}")).or_default() += 1;
        *count.entry(format!("host {b}")).or_default() += 1;
        if let Some((x, y)) = link(sites, a, b) {
            *count.entry(format!("link {x} {y}")).or_default() += 1;
        }
    }
    count.values().copied().max().unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(n: usize) -> Vec<String> {
        (1..=n).map(|i| format!("h{i}")).collect()
    }

    fn sites(spec: &[(&str, &[usize])]) -> BTreeMap<String, String> {
        spec.iter()
            .flat_map(|(s, hs)| hs.iter().map(move |h| (format!("h{h}"), (*s).to_string())))
            .collect()
    }

    /// Every pair once; no round shares a host, nor a link between sites; none over `parallel`.
    fn check(pairs: &[(String, String)], s: &BTreeMap<String, String>, parallel: usize, r: &[Vec<usize>]) {
        let mut seen: Vec<usize> = r.iter().flatten().copied().collect();
        seen.sort_unstable();
        assert_eq!(seen, (0..pairs.len()).collect::<Vec<_>>(), "each pair once: {r:?}");
        for round in r {
            assert!(!round.is_empty() && round.len() <= parallel, "{round:?}");
            let mut hosts = BTreeSet::new();
            let mut links = BTreeSet::new();
            for &i in round {
                let (a, b) = &pairs[i];
                assert!(hosts.insert(a) && hosts.insert(b), "a host twice in {round:?}");
                if let Some(l) = link(s, a, b) {
                    assert!(links.insert(l), "a link twice in {round:?}");
                }
            }
        }
    }

    #[test]
    fn one_site_is_a_round_robin_of_n_minus_one_rounds() {
        for n in [2, 3, 4, 6, 8, 9, 10, 20] {
            let pairs = every_pair_once(&names(n));
            assert_eq!(pairs.len(), n * (n - 1) / 2);
            let none = BTreeMap::new();
            let r = rounds(&pairs, &none, usize::MAX);
            check(&pairs, &none, usize::MAX, &r);
            // The round-robin's N − 1 rounds (N even), N for odd N; greedy may take a few more.
            let best = if n % 2 == 0 { n - 1 } else { n };
            assert!(
                r.len() >= best && r.len() <= best + n / 4 + 1,
                "{n} hosts: {} rounds",
                r.len()
            );
            // One at a time: a round per pair, in their order.
            let one = rounds(&pairs, &none, 1);
            check(&pairs, &none, 1, &one);
            assert_eq!(one.len(), pairs.len());
        }
    }

    #[test]
    fn pairs_between_two_sites_take_their_link_one_at_a_time() {
        // Two sites of three: 9 pairs cross the one link, 6 stay in a site.
        let pairs = every_pair_once(&names(6));
        let s = sites(&[("a", &[1, 2, 3]), ("b", &[4, 5, 6])]);
        let r = rounds(&pairs, &s, usize::MAX);
        check(&pairs, &s, usize::MAX, &r);
        assert_eq!(fewest_rounds(&pairs, &s), 9);
        assert_eq!(r.len(), 9, "{r:?}");
        // Three sites of three: 27 pairs across three links, 9 a link.
        let pairs = every_pair_once(&names(9));
        let s = sites(&[("a", &[1, 2, 3]), ("b", &[4, 5, 6]), ("c", &[7, 8, 9])]);
        let r = rounds(&pairs, &s, usize::MAX);
        check(&pairs, &s, usize::MAX, &r);
        assert_eq!(fewest_rounds(&pairs, &s), 9);
        // But a round with a test on each of the three links leaves one host a site, and none
        // of the 9 pairs within a site: a round holds 3 across, or 2 across and 2 within, so
        // 11 rounds at least (3x + 2y ≥ 27, 2y ≥ 9).
        assert!((11..=12).contains(&r.len()), "{} rounds: {r:?}", r.len());
        // Bounded: at most two at once.
        let two = rounds(&pairs, &s, 2);
        check(&pairs, &s, 2, &two);
        assert!(two.len() >= pairs.len() / 2);
    }

    #[test]
    fn a_fleet_of_fifty_in_five_sites_takes_about_its_busiest_links_rounds() {
        let pairs = every_pair_once(&names(50));
        let s: BTreeMap<String, String> = (1..=50)
            .map(|i| (format!("h{i}"), format!("s{}", (i - 1) / 10)))
            .collect();
        let r = rounds(&pairs, &s, usize::MAX);
        check(&pairs, &s, usize::MAX, &r);
        let least = fewest_rounds(&pairs, &s);
        assert_eq!(least, 100, "10 × 10 pairs a link");
        assert!(
            r.len() <= least + least / 5,
            "{} rounds for a bound of {least}",
            r.len()
        );
    }
}
