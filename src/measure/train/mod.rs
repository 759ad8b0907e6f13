//! Bottleneck capacity by packet dispersion (as in pathrate and CapProbe).
//!
//! A train of back-to-back, MTU-sized ICMP echo requests leaves this host faster than the
//! path's narrowest link can carry it, so the bottleneck spaces the packets by
//! `size × 8 / C`; the echo replies come back at least that far apart. The kernel timestamps
//! each reply as it arrives (`SO_TIMESTAMPNS`; userspace clocks taken after a wake-up see
//! replies in batches and are useless at these spacings). The whole-train formula is
//! `C = (IP bytes of replies 2..n) × 8 / (t_n − t_1)`; each train's rate here is the median of
//! that formula over runs of 8 consecutive gaps between bursts ([`dispersion_bps`]; evenly
//! spaced replies are each a burst of one), which keeps one late timestamp or one stall from
//! moving the result. On 360 recorded lab trains (TUN delay line
//! at 50 and 500 Mbit/s, RTT 40–600 ms) single trains read −54 % to +36 % off with the
//! whole-train formula (2–3 ms stalls of the line, a late first arrival) and −4 % to +0.2 %
//! with the windowed median.
//!
//! Several trains go out 50 ms apart (more once a first estimate says a train takes longer
//! than that to drain); trains with fewer than half their replies are rejected. The estimate
//! is the centre of the densest cluster — the most trains whose rates lie within 10 % of each
//! other ([`densest`]) — of the *dispersed* trains, and while fewer than three of them or not
//! most of them agree, another round of trains goes out (at most [`MAX_ROUNDS`]; see
//! [`summarize`]). Why not the mean, nor even the plain median: the errors of a train have opposite signs and are not
//! rare on a busy host — cross traffic or a stall stretches a train (too low); a stall *after*
//! the bottleneck releases the queued replies together and compresses the whole train (too
//! high; at 500 Mbit/s a 48-packet train is 1.2 ms long, so one 2 ms hiccup of a virtual
//! machine does it). Spoilt trains scatter, good ones agree: on the lab under 10–20 % CPU
//! steal, three of five trains came back compressed to 0.8–2.6 Gbit/s on a 500 Mbit/s path,
//! and the median of five said 800 Mbit/s.
//!
//! Bursts: a forwarder that releases packets in batches (a busy router or virtual switch, a
//! descheduled virtual machine, the lab's delay line without real-time priority, interrupt
//! coalescing) hands on at each wake-up what the bottleneck delivered since the last one, as
//! fast as a host writes packets. The reply gaps show it: batches of replies closer together
//! than half the train's typical spacing, long gaps between ([`bursts`]). From the start of
//! one batch to the start of another the rate is the bottleneck's however large the batches,
//! so the windows count bursts, not replies; replies one at a time per reply read a window
//! inside a batch at the forwarder's speed and one across a long gap too slow (on the delay
//! line stopped for 300 µs of every 600 µs at 1 Gbit/s: 5.9–9.7 × the rate; by bursts, 1.00).
//! When at least half the replies came in bursts the estimate says so ([`Burst`]: bursts of
//! ~N every ~T). Windows average bursts only over trains that span many: when the bursts are
//! too large for a train to span [`MIN_BURSTS`], or the replies came back nearly as fast as
//! the requests left (a whole train released in one batch looks like that, [`NEAR_SEND_RATIO`]),
//! [`LONG_TRAINS`] long trains of [`MAX_LONG_TRAIN`] requests (fewer when those would take
//! over [`LONG_TRAIN_SPAN`] at the first reading) go out, and their reading replaces the first
//! ([`long_train_plan`], [`summarize_long`], [`with_long_trains`]): at most 3 × 1024 × 1500 B
//! = 4.6 MB and about 0.3 s more, only on such paths.
//!
//! Sockets: as in [`super::icmp`], an unprivileged ping socket (`SOCK_DGRAM`) where
//! `net.ipv4.ping_group_range` allows it, else a raw socket (root / CAP_NET_RAW). With a ping
//! socket the kernel picks the echo identifier and hands us only our replies, matched here by
//! sequence number; with a raw socket we choose the identifier and filter on it (IPv4 raw
//! sockets also deliver the IP header, whose total length is the byte count). IPv4 and IPv6
//! (ICMPv6 echo 128/129) both work.
//!
//! A train can only show a bottleneck slower than the rate at which this host emits it
//! (one `sendmmsg`, a few µs per packet). When the replies come back no more spread out
//! than the requests went out, the estimate is a lower bound: [`CapacityEstimate::sender_limited`].
//!
//! # Platform specific behavior
//! Linux only (`SO_TIMESTAMPNS`, ping sockets, `sendmmsg`). Elsewhere
//! [`estimate_capacity`] returns an error and the caller goes without an estimate.
//!
//! The files: [`read`] turns the replies' arrival times into a rate (the windows, the
//! bursts of a batching forwarder, the rounds and long trains that reading asks for); the
//! packets are [`packet`]'s and the sockets that send and time them [`socket`]'s (Linux).

mod packet;
mod read;
#[cfg(target_os = "linux")]
mod socket;
#[cfg(test)]
mod tests;

use std::net::IpAddr;
use std::time::Duration;

pub use packet::{Sent, echo_request, icmp_checksum, parse_echo_reply};
pub use read::*;

/// Send `trains` trains of `per_train` echo requests of `ip_size` bytes (clamped to
/// [`MIN_PACKET`]..=[`MAX_PACKET`] and to the kernel's path MTU) to `addr`, and estimate the
/// bottleneck rate from the spacing of the replies; while the trains disagree
/// ([`CapacityEstimate::agreed`]), up to [`MAX_ROUNDS`] rounds of `trains`. Then, when those
/// trains cannot be trusted to have seen the bottleneck ([`long_train_plan`]: bursts too few
/// per train to average out, or replies back nearly as fast as the requests left),
/// [`LONG_TRAINS`] long trains, whose reading replaces theirs ([`with_long_trains`]).
///
/// Blocks: from async code run it with `spawn_blocking`. Takes at most about
/// `MAX_ROUNDS × ((trains − 1) × 250 ms + timeout)`, usually `(trains − 1) × 50 ms + RTT +
/// one train's drain time`; long trains add at most `2 × 250 ms + timeout` (usually
/// `2 × 100 ms + RTT + 50 ms`), [`LONG_TRAINS`] × [`MAX_LONG_TRAIN`] requests (4.6 MB of
/// 1500-byte packets).
pub fn estimate_capacity(
    addr: IpAddr,
    ip_size: usize,
    trains: u32,
    per_train: u32,
    timeout: Duration,
) -> Result<CapacityEstimate, String> {
    if trains == 0 || per_train < 2 || u64::from(MAX_ROUNDS) * u64::from(trains) * u64::from(per_train) > 1 << 15 {
        return Err(format!(
            "{trains} trains of {per_train}: need at least 1 train of at least 2 packets, {} packets a round at most",
            (1 << 15) / MAX_ROUNDS
        ));
    }
    let ip_size = ip_size.clamp(MIN_PACKET, MAX_PACKET);
    #[cfg(target_os = "linux")]
    {
        let shape = (trains, per_train, MAX_ROUNDS);
        let (first, outcomes) = socket::measure(addr, ip_size, shape, timeout, false)?;
        let Some((long_train, why)) = long_train_plan(&first, &outcomes) else {
            return Ok(first);
        };
        let shape = (LONG_TRAINS, long_train, 1);
        let long = socket::measure(addr, first.packet_bytes, shape, timeout, true).map(|(e, _)| e);
        Ok(with_long_trains(first, why, (LONG_TRAINS, long_train), long))
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = (addr, ip_size, timeout);
        Err("packet trains are only implemented on Linux".to_string())
    }
}
