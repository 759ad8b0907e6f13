//! The warnings and notes that come with the advice, as data: the command prints them.
//! The memory budget is [`crate::check::memory`]'s, the one `check` words too.

use super::{HostReport, Note};
use crate::bdp::Sizing;
use crate::host::Facts;
use crate::os::Os;
use crate::text;

/// Lost probes to a host that answers: the path may drop data at random too, and the advice
/// for a loss-free path (CUBIC, 2 x BDP) is then the wrong one.
pub fn probe_loss(h: &HostReport) -> Option<Note> {
    let r = &h.measurement.rtt;
    (r.received > 0 && r.received < r.sent).then(|| {
        let lost = format!(
            "{}: {} of {} probes were lost ({})",
            h.host,
            r.sent - r.received,
            r.sent,
            text::pct(r.loss_pct)
        );
        Note::with_short(
            format!(
                "{lost}: if this path drops data at random too, CUBIC collapses on it and the buffers are too small to repair loss: use --loss-recovery (BBR, 5 × BDP)"
            ),
            format!("{lost}: if data is lost too, add --loss-recovery"),
        )
    })
}

/// RTT from which BBR's ProbeRTT is worth a note: its cost reaches about 5 %.
const PROBE_RTT_NOTE_MS: f64 = 300.0;

/// On long paths BBR (v1, Linux's `bbr`) costs throughput that no buffer gives back: every
/// 10 s without a lower RTT sample it drains the pipe and holds 4 packets in flight for
/// 200 ms and a round trip (tcp_bbr.c, ProbeRTT), so the receiver sees about RTT + 200 ms of
/// nothing. Measured on tcptune's lab at 600 ms / 500 Mbit/s over 60 s: BBR 90.2 %, CUBIC
/// 96.9 % of the goodput limit.
pub fn probe_rtt_note(cc: Option<&str>, rtt_ms: f64) -> Option<Note> {
    if cc != Some("bbr") || rtt_ms < PROBE_RTT_NOTE_MS {
        return None;
    }
    let cost = text::pct((rtt_ms + 200.0) / 10_000.0 * 100.0);
    let idle = format!(
        "with bbr at {}, ProbeRTT idles the path for about {} every 10 s (about {cost} of throughput)",
        text::millis(rtt_ms),
        text::millis(rtt_ms + 200.0)
    );
    Some(Note::with_short(
        format!(
            "{idle}, whatever the buffers; \
             on a path without random loss cubic keeps more (tcptune's lab at 600 ms: bbr 90 %, cubic 97 % of the goodput limit), on a lossy one far less: \
             choose per application (TCP_CONGESTION, iperf3 -C cubic)"
        ),
        format!("{idle}; cubic keeps more where nothing is lost"),
    ))
}

/// Buffers × flows against what the kernel lets TCP use (tcp_mem, in pages of the machine's
/// size) and the RAM there is: the one budget `check` uses too ([`crate::check::memory`]).
pub fn memory(host: &Facts, flows: u32, sizing: &Sizing) -> Vec<Note> {
    let facts = crate::check::memory::MemoryFacts {
        tcp_mem: (host.os == Os::Linux)
            .then(|| host.value(crate::host::facts::TCP_MEM).map(str::to_string))
            .flatten(),
        per_flow: sizing.buffer.max(sizing.send_buffer),
        flows,
        ram: host.ram,
        in_use_pages: None,
        page_size: host.page_size,
    };
    let Some(b) = crate::check::memory::budget(&facts) else {
        return Vec::new();
    };
    let mut warnings = Vec::new();
    if b.exceeds_tcp_mem()
        && let Some((_, pages)) = b.tcp_mem_pages
    {
        let over = format!(
            "{flows} flow(s) × {} exceed tcp_mem[2] ({pages} pages = {} bytes)",
            text::size(sizing.buffer),
            b.bytes(pages)
        );
        warnings.push(Note::with_short(
            format!(
                "{over}: TCP memory pressure will shrink the windows; raise net.ipv4.tcp_mem or expect fewer concurrent flows"
            ),
            format!("{over}: memory pressure will shrink the windows"),
        ));
    }
    if b.over_quarter_of_ram()
        && let Some(ram) = b.ram
    {
        warnings.push(Note::shown(format!(
            "{flows} flow(s) × {} is more than a quarter of this host's RAM ({} bytes)",
            text::size(sizing.buffer),
            ram
        )));
    }
    warnings
}
