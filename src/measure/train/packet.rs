//! The packets of a train: ICMP echo requests built and their replies parsed (IPv4 and IPv6,
//! ping and raw sockets), and what a measurement's trains sent and got back.

use super::read::TrainOutcome;

/// What a measurement's trains sent and got back.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Sent {
    /// Every train, in send order.
    pub outcomes: Vec<TrainOutcome>,
    /// IP total length of every request (and reply), after the path MTU capped it.
    pub packet_bytes: usize,
    /// The first send or ICMP error, to explain a failure.
    pub error: Option<String>,
}

/// The ICMP checksum (RFC 1071) of `data`.
pub fn icmp_checksum(data: &[u8]) -> u16 {
    let mut sum: u32 = data
        .chunks(2)
        .map(|c| u32::from(u16::from_be_bytes([c[0], c.get(1).copied().unwrap_or(0)])))
        .sum();
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}

/// An echo request of `icmp_len` bytes (8-byte header and payload), checksummed (a ping socket
/// and an ICMPv6 raw socket recompute it; an IPv4 raw socket sends it as is).
pub fn echo_request(v6: bool, ident: u16, seq: u16, icmp_len: usize) -> Vec<u8> {
    let mut p = vec![0u8; icmp_len.max(8)];
    p[0] = if v6 { 128 } else { 8 };
    p[4..6].copy_from_slice(&ident.to_be_bytes());
    p[6..8].copy_from_slice(&seq.to_be_bytes());
    for (i, b) in p.iter_mut().enumerate().skip(8) {
        *b = (i & 0xff) as u8;
    }
    let c = icmp_checksum(&p);
    p[2..4].copy_from_slice(&c.to_be_bytes());
    p
}

/// An echo reply as a socket delivered it: (sequence, IP total length), or None if `buf` is
/// something else. `raw_v4`: the buffer starts with the IPv4 header. `ident`: the identifier
/// to require (raw sockets see every echo reply; a ping socket only its own).
pub fn parse_echo_reply(buf: &[u8], v6: bool, raw_v4: bool, ident: Option<u16>) -> Option<(u16, usize)> {
    let (icmp, ip_bytes) = if raw_v4 {
        let ihl = usize::from(buf.first()? & 0x0f) * 4;
        if buf.first()? >> 4 != 4 || ihl < 20 {
            return None;
        }
        let total = usize::from(u16::from_be_bytes([*buf.get(2)?, *buf.get(3)?]));
        (buf.get(ihl..)?, if total >= ihl + 8 { total } else { buf.len() })
    } else {
        // No IP header from a ping socket or an IPv6 raw socket: add the fixed header.
        (buf, buf.len() + if v6 { 40 } else { 20 })
    };
    let want = if v6 { 129 } else { 0 };
    if icmp.len() < 8 || icmp[0] != want || icmp[1] != 0 {
        return None;
    }
    if let Some(id) = ident
        && u16::from_be_bytes([icmp[4], icmp[5]]) != id
    {
        return None;
    }
    Some((u16::from_be_bytes([icmp[6], icmp[7]]), ip_bytes))
}
