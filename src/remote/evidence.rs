//! What a test end of `tcptune mesh` sends: its measurement of the path to one peer and the TCP
//! evidence of its test, never a decision. `tcptune evidence` prints it there ([`Document`]);
//! here it is read and checked where it enters ([`read`]), and replayed ([`Recorded`], a
//! [`PathProber`]) so that the control host computes every key, value, route and label itself
//! with the same code `advise` runs, from the host's own facts.
//!
//! The far end is another machine, and whoever controls the `tcptune` its ssh user runs
//! controls this text. So: the document is bounded in size, depth and items; every string is
//! escaped ([`text::escape`]) and cut short where it enters; every number is held to what a
//! path can show by its unit (a field named `…_ms` is a time within a minute, `…_bps` a rate
//! within 1 Tbit/s, `…_pct` a share, `…_s` a duration within a day); the measurement must be of
//! the very peer asked for; a test's readings must be a TCP flow's ([`TcpTest::check`]); a
//! congestion control must be a name the kernel could have. Anything else in it is ignored:
//! settings, labels, routes or an OS a hostile end adds are never read.

use std::net::IpAddr;

use serde::{Deserialize, Serialize};

use crate::error::Error;
use crate::measure::evidence::{Evidence, TcpTest};
use crate::measure::{EvidenceRequest, HostMeasurement, PathProber, ProbeOptions};
use crate::text;

/// This document's format.
pub const FORMAT: u32 = 1;

/// Most bytes of a document read.
pub const MAX_BYTES: usize = 8 << 20;
/// Most items of one array (a test's series, the probes' samples).
pub const MAX_ITEMS: usize = 20_000;
/// Longest string kept, in characters (the rest is cut, and "…" says so).
pub const MAX_TEXT: usize = 300;
/// The longest round trip, ms: a minute, past any path TCP runs on.
pub const MAX_RTT_MS: f64 = 60_000.0;
/// The fastest rate any reading may show, bit/s: 1 Tbit/s.
pub const MAX_RATE_BPS: f64 = 1e12;
/// How far a test's goodput may exceed the link the test end said it has (rounding, a link
/// speed that is a nominal figure).
pub const LINK_SLACK: f64 = 1.05;
/// The longest duration a reading may show, s.
pub const MAX_SECONDS: f64 = 86_400.0;

/// What the test end prints: its version, its probes of the peer, its TCP evidence.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Document {
    pub tcptune_evidence: u32,
    pub version: String,
    pub measurement: HostMeasurement,
    pub evidence: Evidence,
}

impl Document {
    /// This build's document for a measurement and its evidence.
    pub fn new(measurement: HostMeasurement, evidence: Evidence) -> Self {
        Self {
            tcptune_evidence: FORMAT,
            version: env!("CARGO_PKG_VERSION").to_string(),
            measurement,
            evidence,
        }
    }
}

/// A test end's measurement, checked: what the control host replays.
#[derive(Debug, Clone)]
pub struct Recorded {
    pub measurement: HostMeasurement,
    pub evidence: Evidence,
}

impl PathProber for Recorded {
    /// The recorded measurement, for the one peer it was made of.
    fn measure(&self, hosts: &[String], _: &ProbeOptions) -> Result<Vec<HostMeasurement>, Error> {
        match hosts {
            [h] if *h == self.measurement.host => Ok(vec![self.measurement.clone()]),
            _ => Err(Error::system("the recorded measurement is of another host")),
        }
    }

    /// The recorded evidence: the test end chose its test.
    fn evidence(&self, _: &HostMeasurement, _: &EvidenceRequest, _: &ProbeOptions) -> Result<Evidence, Error> {
        Ok(self.evidence.clone())
    }
}

/// Reads the test end's document about its path to `peer`. Err: why it cannot be taken, as a
/// clause ("its evidence …").
pub fn read(json: &str, peer: IpAddr) -> Result<Recorded, String> {
    if json.len() > MAX_BYTES {
        return Err(format!("its evidence is over {} MiB", MAX_BYTES >> 20));
    }
    let mut v: serde_json::Value = serde_json::from_str(json).map_err(|e| format!("its evidence is not JSON ({e})"))?;
    bound(&mut v, None)?;
    if v["tcptune_evidence"].as_u64() != Some(u64::from(FORMAT)) {
        return Err("its answer is no tcptune evidence (format 1)".to_string());
    }
    let version = v["version"].as_str().unwrap_or_default();
    if version != env!("CARGO_PKG_VERSION") {
        return Err(format!(
            "its evidence is from tcptune \"{version}\", not this version ({})",
            env!("CARGO_PKG_VERSION")
        ));
    }
    let doc: Document = serde_json::from_value(v).map_err(|e| format!("its evidence does not read ({e})"))?;
    let Document {
        mut measurement,
        evidence,
        ..
    } = doc;
    if measurement.addr != peer {
        return Err(format!("its evidence is of {}, not the peer {peer}", measurement.addr));
    }
    // The host is the peer asked for, whatever name the far end gave it.
    measurement.host = peer.to_string();
    check_measurement(&measurement)?;
    check_evidence(&evidence, measurement.link.speed_bps)?;
    Ok(Recorded { measurement, evidence })
}

/// Every string escaped and cut to [`MAX_TEXT`], every array within [`MAX_ITEMS`], every
/// number within its unit's bounds (by its field's name, `key`).
fn bound(v: &mut serde_json::Value, key: Option<&str>) -> Result<(), String> {
    use serde_json::Value;
    match v {
        Value::String(s) => {
            let mut t = text::escape(s);
            if t.chars().count() > MAX_TEXT {
                t = t.chars().take(MAX_TEXT).collect::<String>() + "\u{2026}";
            }
            *s = t;
        }
        Value::Array(items) => {
            if items.len() > MAX_ITEMS {
                return Err(format!(
                    "its evidence has {} items in {}, more than {MAX_ITEMS}",
                    items.len(),
                    key.unwrap_or("a list")
                ));
            }
            for i in items {
                bound(i, key)?;
            }
        }
        Value::Object(fields) => {
            for (k, f) in fields.iter_mut() {
                bound(f, Some(k))?;
            }
        }
        Value::Number(n) => {
            let (Some(k), Some(x)) = (key, n.as_f64()) else {
                return Ok(());
            };
            if let Some((what, max)) = unit_bound(k)
                && !(x.is_finite() && (0.0..=max).contains(&x))
            {
                let shown = |x: f64| {
                    if x.abs() < 1e12 {
                        x.to_string()
                    } else {
                        format!("{x:e}")
                    }
                };
                return Err(format!(
                    "its evidence gives {k} = {}: {what} is within 0 to {}",
                    shown(x),
                    shown(max)
                ));
            }
        }
        Value::Null | Value::Bool(_) => {}
    }
    Ok(())
}

/// The physical bound of a field by its name's unit: (what it is, its largest value).
fn unit_bound(key: &str) -> Option<(&'static str, f64)> {
    if key.ends_with("_ms") {
        Some(("a time", MAX_RTT_MS))
    } else if key.ends_with("_bps") {
        Some(("a rate, bit/s", MAX_RATE_BPS))
    } else if key.ends_with("_pct") {
        Some(("a share, %", 100.0))
    } else if key.ends_with("_s") || key == "seconds" {
        Some(("a duration, s", MAX_SECONDS))
    } else if key.ends_with("_us") {
        Some(("a time, µs", MAX_RTT_MS * 1000.0))
    } else if key.ends_with("_share") || key == "window_share" {
        Some(("a share", 1.0))
    } else {
        None
    }
}

/// The probes: as many answered as sent at most, RTTs above zero.
fn check_measurement(m: &HostMeasurement) -> Result<(), String> {
    let r = &m.rtt;
    if r.received > r.sent || r.samples_ms.len() != r.received as usize {
        return Err(format!(
            "its probes say {} answered of {} sent with {} round trips",
            r.received,
            r.sent,
            r.samples_ms.len()
        ));
    }
    if r.samples_ms.iter().any(|s| *s <= 0.0) || (r.received > 0 && r.min_ms <= 0.0) {
        return Err("its probes hold a round trip of no time".to_string());
    }
    if m.link.mtu.is_some_and(|x| !(68..=65_536).contains(&x))
        || m.link.route_mtu.is_some_and(|x| !(68..=65_536).contains(&x))
    {
        return Err(format!("its link has an MTU of {:?}", m.link.mtu.or(m.link.route_mtu)));
    }
    let rate_ok = |b: u64| (b as f64) <= MAX_RATE_BPS;
    if m.link.speed_bps.is_some_and(|b| !rate_ok(b)) {
        return Err("its link is faster than 1 Tbit/s".to_string());
    }
    if let Some(c) = &m.capacity
        && (!rate_ok(c.bps) || c.samples_bps.iter().any(|b| !rate_ok(*b)))
    {
        return Err("its packet trains read more than 1 Tbit/s".to_string());
    }
    Ok(())
}

/// The tests: each a TCP flow's readings, with a congestion control the kernel could name, and
/// no more goodput than the test end's own link carries (`link_bps`, where it said one; the
/// reverse test's data came in through the same link).
fn check_evidence(e: &Evidence, link_bps: Option<u64>) -> Result<(), String> {
    for t in [e.test.as_ref(), e.reverse.as_ref()].into_iter().flatten() {
        check_test(t)?;
        #[allow(clippy::cast_precision_loss)]
        if let Some(link) = link_bps.filter(|l| *l > 0)
            && t.goodput_bps > link as f64 * LINK_SLACK
        {
            return Err(format!(
                "its path test moved {} over a link of {}",
                text::rate(t.goodput_bps),
                text::rate(link as f64)
            ));
        }
    }
    if let Some(p) = &e.passive
        && p.flows.iter().any(|f| f.cc.as_deref().is_some_and(|c| !plain_cc(c)))
    {
        return Err("its live flows name an odd congestion control".to_string());
    }
    Ok(())
}

fn check_test(t: &TcpTest) -> Result<(), String> {
    t.check()
        .map_err(|why| format!("its path test is no TCP flow's: {why}"))?;
    if t.cc.as_deref().is_some_and(|c| !plain_cc(c)) {
        return Err(format!(
            "its path test names the congestion control \"{}\"",
            t.cc.as_deref().unwrap_or_default()
        ));
    }
    if t.series
        .iter()
        .any(|p| p.retrans.is_some_and(|r| t.segs_out.is_some_and(|s| r > s)))
    {
        return Err("its path test's series retransmits more than it sent".to_string());
    }
    Ok(())
}

/// A congestion control's name as the kernel spells one: lower-case letters, digits and `_`.
pub fn plain_cc(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 15
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::measure::fake::FakeProber;

    pub(crate) const PEER: &str = "198.18.10.2";

    /// What an honest test end sends about `spec`'s path to the peer.
    pub fn honest(spec: &str) -> serde_json::Value {
        let fake = FakeProber::from_spec(spec).expect("spec");
        let req = crate::advice::AdviceRequest::for_hosts(vec![PEER.to_string()]);
        let facts = crate::advice::mesh::tests::linux();
        let m = crate::advice::measure(&req, &facts, &fake).expect("measured");
        let doc = Document::new(
            m.hosts.into_iter().next().expect("host").measurement,
            m.evidence.expect("evidence"),
        );
        serde_json::to_value(doc).expect("json")
    }

    fn peer() -> IpAddr {
        PEER.parse().expect("ip")
    }

    #[test]
    fn an_honest_document_reads_back_as_it_was_measured() {
        let v = honest("rtt=80ms,rate=100mbit,loss=0.1");
        let r = read(&v.to_string(), peer()).expect("honest");
        assert_eq!(r.measurement.addr, peer());
        assert_eq!(r.measurement.host, PEER);
        let t = r.evidence.test.as_ref().expect("a test");
        assert!(t.steady_loss_pct().is_some_and(|l| l > 0.0));
        // Replayed, it is the same path.
        let got = r
            .measure(&[PEER.to_string()], &ProbeOptions::default())
            .expect("replay");
        assert_eq!(got[0].rtt.min_ms, r.measurement.rtt.min_ms);
        assert!(
            r.measure(&["198.18.10.3".to_string()], &ProbeOptions::default())
                .is_err()
        );
    }

    #[test]
    fn what_a_hostile_test_end_changes_is_refused_where_it_enters() {
        let base = honest("rtt=80ms,rate=100mbit,loss=0.1");
        type Change = Box<dyn Fn(&mut serde_json::Value)>;
        let cases: Vec<(&str, Change)> = vec![
            (
                "of 198.18.10.3, not the peer",
                Box::new(|v| v["measurement"]["addr"] = "198.18.10.3".into()),
            ),
            ("not this version", Box::new(|v| v["version"] = "9.9.9".into())),
            ("no tcptune evidence", Box::new(|v| v["tcptune_evidence"] = 2.into())),
            (
                "min_ms = 1e308",
                Box::new(|v| v["measurement"]["rtt"]["min_ms"] = 1e308.into()),
            ),
            (
                "delivery_rate_bps = 1.845e19",
                Box::new(|v| v["evidence"]["test"]["delivery_rate_bps"] = 1.845e19.into()),
            ),
            (
                "loss_pct = 250",
                Box::new(|v| v["measurement"]["rtt"]["loss_pct"] = 250.into()),
            ),
            (
                "congestion control",
                Box::new(|v| v["evidence"]["test"]["cc"] = "bbr; reboot".into()),
            ),
            (
                "more than 20000",
                Box::new(|v| v["measurement"]["rtt"]["samples_ms"] = vec![1.0; 20_001].into()),
            ),
            (
                "does not read",
                Box::new(|v| v["measurement"]["rtt"]["sent"] = "ten".into()),
            ),
            (
                "answered of",
                Box::new(|v| v["measurement"]["rtt"]["received"] = 99.into()),
            ),
            ("MTU", Box::new(|v| v["measurement"]["link"]["mtu"] = 9.into())),
            (
                "speed_bps = 2e12",
                Box::new(|v| v["measurement"]["link"]["speed_bps"] = 2_000_000_000_000u64.into()),
            ),
            (
                "over a link of 10 Mbit/s",
                Box::new(|v| v["measurement"]["link"]["speed_bps"] = 10_000_000u64.into()),
            ),
        ];
        for (why, change) in cases {
            let mut v = base.clone();
            change(&mut v);
            let err = read(&v.to_string(), peer()).expect_err(why);
            assert!(err.contains(why), "{why}: {err}");
        }
        assert!(read("not json", peer()).is_err());
        assert!(read(&"x".repeat(MAX_BYTES + 1), peer()).is_err());
    }

    #[test]
    fn its_words_are_escaped_and_its_settings_never_read() {
        let mut v = honest("rtt=80ms,rate=100mbit");
        v["measurement"]["notes"] = vec!["a\u{1b}[31m\nnet.ipv4.ip_forward = 1"].into();
        v["measurement"]["host"] = "h3\nforged".into();
        v["settings"] = serde_json::json!([{"key": "net.ipv4.ip_forward", "value": "1", "label": "receive max"}]);
        v["route"] = serde_json::json!({"dest": "198.18.10.3", "prior": {"gateway": "198.18.99.1"}});
        v["os"] = "freebsd".into();
        let r = read(&v.to_string(), peer()).expect("words are no reason to refuse");
        assert_eq!(r.measurement.host, PEER, "the peer asked for, not the name it gave");
        let note = &r.measurement.notes[0];
        assert!(!note.chars().any(char::is_control), "{note:?}");
        assert!(note.contains("\\u{1b}[31m\\u{a}net.ipv4.ip_forward"), "{note}");
        let long = "x".repeat(MAX_TEXT * 3);
        let mut v = honest("rtt=80ms,rate=100mbit");
        v["measurement"]["notes"] = vec![long].into();
        let r = read(&v.to_string(), peer()).expect("long words are cut");
        assert_eq!(r.measurement.notes[0].chars().count(), MAX_TEXT + 1);
    }
}
