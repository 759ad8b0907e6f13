//! Which path the advice is for: the RTT and rate as given, or as measured to each host
//! (the minimum RTT over the probes; the packet-train rate capped by the link speed, else the
//! link speed, else an assumed 1 Gbit/s), and the host with the largest BDP among several.

use super::sharing::Sharing;
use super::{AdviceRequest, HostReport, Note, Path};
use crate::bdp;
use crate::bdp::Source;
use crate::error::Error;
use crate::measure::queue::QueueReading;
use crate::measure::{HostMeasurement, PathProber, ProbeOptions};
use crate::text;
use crate::units::{Bitrate, Span};

/// When the egress link does not report its speed (virtio, TUN, many clouds), this is assumed.
pub const ASSUMED_RATE_BPS: u64 = 1_000_000_000;

/// Which reading sized a direction's rate: what the path line names beside the rate.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum RateBasis {
    /// `--bandwidth`.
    Given,
    /// A TCP test's delivery rate after startup.
    TcpTest,
    /// A TCP test held below the path (a buffer, startup, heavy loss) and the packet trains
    /// above it: the trains' reading.
    TrainsOverTest,
    /// The packet trains, no TCP test.
    Trains,
    /// Trains that came back as fast as they left: at least this.
    TrainsAtLeast,
    /// The egress link's speed, lower than any reading.
    LinkSpeed,
    /// Nothing measured it.
    Assumed,
}

/// Resolve the path: given values win; what is missing is measured to every host.
/// Returns the path advised for, a report per measured host, and notes.
pub fn resolve(a: &AdviceRequest, prober: &dyn PathProber) -> Result<(Path, Vec<HostReport>, Vec<Note>), Error> {
    let mut notes = Vec::new();
    // Both given: nothing to measure (the hosts, if any, are not probed).
    if let (Some(rtt), Some(rate)) = (a.rtt, a.bandwidth) {
        if !a.hosts.is_empty() {
            notes.push(Note::shown("--rtt and --bandwidth given: the hosts were not probed"));
        }
        let path = Path {
            rtt,
            rtt_source: Source::Given,
            mdev: None,
            rate,
            rate_source: Source::Given,
            rate_basis: RateBasis::Given,
            receive_rate: None,
            receive_basis: None,
            capacity: None,
            probes_min_ms: None,
            probed: None,
            mtu: None,
            host: None,
        };
        return Ok((path, Vec::new(), notes));
    }
    if a.hosts.is_empty() {
        return Err(
            Error::usage("advise needs --host HOST (to measure), or both --rtt and --bandwidth")
                .with_hint("e.g. tcptune advise --rtt 150ms --bandwidth 500mbit"),
        );
    }
    let opts = ProbeOptions {
        // A given rate needs no trains.
        capacity: a.bandwidth.is_none() && a.probe.capacity,
        ..a.probe.clone()
    };
    let measured = prober.measure(&a.hosts, &opts)?;
    let reports: Vec<(Path, HostReport)> = measured.into_iter().map(|m| path_of(a, m, &mut notes)).collect();
    // Advise for the largest BDP: buffers sized for it serve every smaller path too.
    let best = reports
        .iter()
        .enumerate()
        .max_by(|(_, x), (_, y)| bdp::bdp_exact(x.0.rate, x.0.rtt).total_cmp(&bdp::bdp_exact(y.0.rate, y.0.rtt)))
        .map(|(i, _)| i)
        .ok_or_else(|| Error::measurement("no host was measured"))?;
    let path = reports[best].0.clone();
    Ok((path, reports.into_iter().map(|(_, r)| r).collect(), notes))
}

/// One measured host's path and report: the given RTT and rate where given, else what was
/// measured (the rate's note joins `notes`, then the measurement's own notes).
fn path_of(a: &AdviceRequest, m: HostMeasurement, notes: &mut Vec<Note>) -> (Path, HostReport) {
    let (rtt, rtt_source, mdev) = match a.rtt {
        Some(r) => (r, Source::Given, None),
        // Microsecond resolution, so rtt_ms in the output reproduces bdp_bytes exactly.
        // The lowest RTT any probe saw: others' queue raises the rest.
        None => (
            Span::from_millis_f64(text::ms(lowest_rtt(&m))),
            Source::Measured,
            Some(Span::from_millis_f64(m.rtt.mdev_ms)),
        ),
    };
    let (rate, rate_source, rate_basis) = match a.bandwidth {
        Some(b) => (b, Source::Given, RateBasis::Given),
        None => {
            let (rate, source, note) = measured_rate(&m);
            notes.push(note.prefixed(&format!("{}: ", m.host)));
            (rate, source, basis_of(&m, rate))
        }
    };
    notes.extend(m.notes.iter().map(|n| Note::detail(format!("{}: {n}", m.host))));
    let path = Path {
        rtt,
        rtt_source,
        mdev,
        rate,
        rate_source,
        rate_basis,
        receive_rate: None,
        receive_basis: None,
        capacity: m.trains_floor().map(Bitrate::from_bps),
        probes_min_ms: (m.rtt.received > 0).then(|| lowest_rtt(&m)),
        probed: probed(&m),
        mtu: m.link.route_mtu.or(m.link.mtu),
        host: Some(m.host.clone()),
    };
    let report = HostReport {
        host: m.host.clone(),
        rtt_ms: text::ms(rtt.as_millis_f64()),
        bandwidth_bps: rate.bps(),
        bandwidth_source: rate_source,
        bdp_bytes: bdp::bdp_bytes(rate, rtt),
        measurement: m,
    };
    (path, report)
}

/// The lowest RTT the probes saw, the queue watch's included, ms.
fn lowest_rtt(m: &HostMeasurement) -> f64 {
    m.queue
        .as_ref()
        .map_or(m.rtt.min_ms, |q| q.reading.low_ms().min(m.rtt.min_ms))
}

/// Others' queue the watch saw move, as the advice's sharing.
fn probed(m: &HostMeasurement) -> Option<Sharing> {
    match m.queue.as_ref()?.reading {
        QueueReading::Moved { high_ms, .. } => Some(Sharing::Probed {
            low_ms: lowest_rtt(m),
            high_ms,
            #[allow(clippy::cast_precision_loss)]
            capacity_bps: m.trains_floor().map(|c| c as f64),
        }),
        _ => None,
    }
}

/// Which reading [`measured_rate`] sized `rate` from.
fn basis_of(m: &HostMeasurement, rate: Bitrate) -> RateBasis {
    match &m.capacity {
        Some(c) if rate.bps() == c.bps && c.sender_limited => RateBasis::TrainsAtLeast,
        Some(c) if rate.bps() == c.bps => RateBasis::Trains,
        Some(_) => RateBasis::LinkSpeed,
        None => RateBasis::Assumed,
    }
}

/// The trains the estimate was read from: agreeing, sent, requests each.
fn counted(c: &crate::measure::train::CapacityEstimate) -> (u32, u32, u32) {
    match (&c.reading, &c.long) {
        (crate::measure::train::Reading::LongTrains, Some(l)) => (l.agreeing, l.trains, l.per_train),
        _ => (c.agreeing, c.trains, c.per_train),
    }
}

/// Trains whose replies came back as fast as they left: the path is at least that fast; a link
/// speed a few times above the bound is a credible ceiling, one far above it is the NIC.
fn sender_limited_rate(
    c: &crate::measure::train::CapacityEstimate,
    link: Option<u64>,
    ifname: &str,
) -> (Bitrate, Source, Note) {
    let show = |bps: u64| text::rate(bps as f64);
    let (agreeing, trains, _) = counted(c);
    let mut note = format!(
        "packet trains came back as fast as this host sent them: the bottleneck rate is at least {} ({agreeing} of {trains} trains agree)",
        show(c.bps)
    );
    if let Some(seen) = c.describe() {
        note.push_str(&format!("; {seen}"));
    }
    let rate = match link {
        Some(l) if l > c.bps && l <= c.bps.saturating_mul(SENDER_LIMITED_LINK_RATIO) => {
            note.push_str(&format!("; used the link speed of {ifname}, {}", show(l)));
            l
        }
        _ => {
            note.push_str("; used that lower bound: give --bandwidth if the path is faster");
            let short = format!(
                "the packet trains read at least {}, this host's own sending rate: give --bandwidth if the path is faster",
                show(c.bps)
            );
            return (
                Bitrate::from_bps(c.bps),
                Source::Measured,
                Note::with_short(note, short),
            );
        }
    };
    (Bitrate::from_bps(rate), Source::Measured, Note::detail(note))
}

/// The rate of a measured path, where it came from, and a note that says how it was chosen:
/// the packet-train estimate (capped by the link speed when that is known), else — nothing
/// measured the rate — the link speed or [`ASSUMED_RATE_BPS`], marked assumed (a NIC's speed
/// is not the path's: a 10 Gbit/s server NIC behind a 100 Mbit/s path would size buffers 100
/// times too large). [`super::rate::settle_rate`] then settles it with the TCP evidence.
pub(crate) fn measured_rate(m: &HostMeasurement) -> (Bitrate, Source, Note) {
    let link = m.link.speed_bps.filter(|s| *s > 0);
    let ifname = m.link.interface.as_deref().unwrap_or("the egress interface");
    let show = |bps: u64| text::rate(bps as f64);
    match (&m.capacity, link) {
        (Some(c), _) if !c.sender_limited => {
            let (agreeing, trains, per_train) = counted(c);
            let mut note = format!(
                "bottleneck rate from packet trains: {} ({agreeing} of {trains} trains of {per_train} \u{d7} {} bytes agree within 10 %)",
                show(c.bps),
                c.packet_bytes
            );
            if let Some(seen) = c.describe() {
                note.push_str(&format!("; {seen}"));
            }
            if !c.agreed {
                note.push_str(&format!(
                    "; the trains disagree (rates {}): the path or this host is busy, so check the rate or give --bandwidth",
                    text::rate_range(&c.samples_bps).unwrap_or_default()
                ));
            }
            let rate = match link {
                Some(l) if l < c.bps => {
                    note.push_str(&format!(
                        "; the link speed of {ifname}, {}, is lower: used that",
                        show(l)
                    ));
                    l
                }
                _ => c.bps,
            };
            let note = if c.agreed {
                Note::detail(note)
            } else {
                Note::with_short(
                    note,
                    format!(
                        "the packet trains disagree ({}): check the rate, or give --bandwidth",
                        text::rate_range(&c.samples_bps).unwrap_or_default()
                    ),
                )
            };
            (Bitrate::from_bps(rate), Source::Measured, note)
        }
        (Some(c), _) => sender_limited_rate(c, link, ifname),
        (None, link) => {
            let trains = m
                .notes
                .iter()
                .find(|n| n.starts_with("no packet-train estimate"))
                .cloned()
                .unwrap_or_else(|| "no packet trains".to_string());
            let (rate, what) = match link {
                Some(l) => (
                    l.min(ASSUMED_RATE_BPS),
                    format!("the link speed of {ifname}, {}, is the NIC's, not the path's", show(l)),
                ),
                None if m.link.notes.is_empty() => (ASSUMED_RATE_BPS, format!("the speed of {ifname} is unknown")),
                None => (ASSUMED_RATE_BPS, m.link.notes.join("; ")),
            };
            let why = format!("{trains}; {what}");
            (
                Bitrate::from_bps(rate),
                Source::Assumed,
                Note::with_short(
                    format!(
                        "the path's rate was NOT MEASURED ({why}): the buffers assume {} and stay within this host's TCP memory budget — give --bandwidth with the path's rate, or --ssh DEST so tcptune tests the path from both ends",
                        show(rate)
                    ),
                    format!(
                        "the rate was NOT MEASURED: {} assumed; give --bandwidth, or --ssh DEST to test the path",
                        show(rate)
                    ),
                ),
            )
        }
    }
}

/// A sender-limited train's bound is raised to the link speed only when the link is at most
/// this many times faster: past that the NIC says nothing about the path.
pub const SENDER_LIMITED_LINK_RATIO: u64 = 4;
