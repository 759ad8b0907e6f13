//! `watch`'s views of [`crate::diag::watch`]: redrawn in place on a terminal, one line per
//! change when piped, one JSON object per interval for programs, and the summary at the end.

use std::collections::BTreeMap;
use std::io::Write;

use serde::Serialize;

use crate::diag::inspect::application_note;
use crate::diag::watch::{FlowNow, FlowTotal, Running, Summary, Tick, time_for};
use crate::tcp::tcpinfo::LimitedBy;
use crate::text;

/// How the watch is shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// A terminal: the view redrawn in place every interval.
    Live,
    /// A pipe or file: one line per change.
    Lines,
    /// One JSON object per interval, then `{"summary": …}`.
    Json,
}

impl Mode {
    /// JSON lines when asked for; else drawn in place on a terminal, a line per change piped.
    pub fn of(format: super::Format, tty: bool) -> Self {
        match format {
            super::Format::Json => Self::Json,
            _ if tty => Self::Live,
            _ => Self::Lines,
        }
    }
}

/// The view: what it was asked, and what it drew last.
pub struct View {
    mode: Mode,
    width: usize,
    running: Running,
    /// `--size`, bytes.
    size: Option<u64>,
    /// Lines of the last frame drawn in place.
    drawn: usize,
    /// What held each flow at its last line (Lines mode).
    said: BTreeMap<String, Option<LimitedBy>>,
}

/// The header, in words: which flows, how often, how it ends.
pub struct Ask<'a> {
    /// As typed, escaped.
    pub host: Option<&'a str>,
    pub port: Option<u16>,
    pub interval_s: f64,
    pub for_s: Option<f64>,
}

impl View {
    pub fn new(mode: Mode, width: usize, running: Running, size: Option<u64>) -> Self {
        Self {
            mode,
            width: width.max(40),
            running,
            size,
            drawn: 0,
            said: BTreeMap::new(),
        }
    }

    /// The first line (not for JSON).
    pub fn begin(&mut self, out: &mut dyn Write, ask: &Ask<'_>) -> anyhow::Result<()> {
        if self.mode == Mode::Json {
            return Ok(());
        }
        let mut which = String::from("watching TCP flows");
        if let Some(h) = ask.host {
            which.push_str(&format!(" to {h}"));
        }
        if let Some(p) = ask.port {
            which.push_str(&format!(" on port {p}"));
        }
        let ends = ask.for_s.map_or_else(
            || "Ctrl-C ends it with a summary".to_string(),
            |s| format!("for {}", text::took(s)),
        );
        writeln!(out, "{which}, every {}; {ends}", text::secs(ask.interval_s))?;
        out.flush()?;
        Ok(())
    }

    /// One interval.
    pub fn tick(&mut self, out: &mut dyn Write, t: &Tick) -> anyhow::Result<()> {
        match self.mode {
            Mode::Json => {
                serde_json::to_writer(&mut *out, t)?;
                writeln!(out)?;
            }
            Mode::Live => {
                let lines = self.frame(t);
                // Back to the top of the last frame, and clear to the end of the screen.
                if self.drawn > 0 {
                    write!(out, "\x1b[{}A\x1b[J", self.drawn)?;
                }
                for l in &lines {
                    writeln!(out, "{l}")?;
                }
                self.drawn = lines.len();
            }
            Mode::Lines => {
                for f in &t.flows {
                    let key = format!("{} -> {}", f.local, f.peer);
                    if self.said.get(&key) != Some(&f.held_by) {
                        self.said.insert(key.clone(), f.held_by);
                        writeln!(out, "{} {key}: {}", stamp(t.at_s), self.change(f))?;
                    }
                }
                for e in &t.ended {
                    if self.said.remove(e).is_some() {
                        writeln!(out, "{} {e}: ended", stamp(t.at_s))?;
                    }
                }
            }
        }
        out.flush()?;
        Ok(())
    }

    /// The summary when the watch ends.
    pub fn end(&mut self, out: &mut dyn Write, s: &Summary) -> anyhow::Result<()> {
        if self.mode == Mode::Json {
            #[derive(Serialize)]
            struct End<'a> {
                summary: &'a Summary,
            }
            serde_json::to_writer(&mut *out, &End { summary: s })?;
            writeln!(out)?;
            return Ok(());
        }
        if s.flows.is_empty() {
            writeln!(
                out,
                "watched {}: no flow ran through a whole interval",
                text::took(s.watched_s)
            )?;
            return Ok(());
        }
        writeln!(
            out,
            "\nwatched {}, {} flow{}:",
            text::took(s.watched_s),
            s.flows.len(),
            if s.flows.len() == 1 { "" } else { "s" }
        )?;
        for f in &s.flows {
            for l in self.total_lines(f) {
                writeln!(out, "{l}")?;
            }
        }
        Ok(())
    }

    /// The frame drawn in place: per flow, its addresses, its numbers, and the fix, each
    /// within the width.
    fn frame(&self, t: &Tick) -> Vec<String> {
        let mut lines = vec![format!("{} s", text::sig(t.at_s, 3))];
        if t.flows.is_empty() {
            lines.push("  no established flow through the last interval".to_string());
        }
        for f in &t.flows {
            let cc = f
                .congestion_control
                .as_ref()
                .map(|c| format!("  {c}"))
                .unwrap_or_default();
            lines.extend(wrap(&format!("{} -> {}{cc}", f.local, f.peer), self.width, "  "));
            lines.extend(wrap(&numbers(f), self.width, "    "));
            if let Some(fix) = self.fix(f) {
                lines.extend(wrap(&fix, self.width, "    "));
            }
            if let Some(left) = self.left(f) {
                lines.extend(wrap(&left, self.width, "    "));
            }
        }
        lines
    }

    /// A changed flow's line (Lines mode): its holder, numbers and fix.
    fn change(&self, f: &FlowNow) -> String {
        let mut s = numbers(f);
        if let Some(fix) = self.fix(f) {
            s.push_str(&format!("; {fix}"));
        }
        s
    }

    /// What is left of `--size`, and how long it takes at the rate now.
    fn left(&self, f: &FlowNow) -> Option<String> {
        let size = self.size?;
        if !f.sending {
            return None;
        }
        let left = size.saturating_sub(f.acked_total);
        if left == 0 {
            return Some(format!(
                "{} sent: the whole {}",
                text::size(f.acked_total),
                text::size(size)
            ));
        }
        let eta = time_for(left, f.rate_bps).map_or_else(
            || "no rate to say when".to_string(),
            |s| format!("about {} more at this rate", text::took(s)),
        );
        Some(format!(
            "{} of {} sent: {eta}",
            text::size(f.acked_total),
            text::size(size)
        ))
    }

    /// The fix for what held a flow, in one line; None for a flow that only receives.
    fn fix(&self, f: &FlowNow) -> Option<String> {
        let at = text::millis(f.min_rtt_ms);
        let held = f.held_by?;
        Some(match held {
            LimitedBy::ReceiveWindow => match (f.peer_window, f.ceiling_bps) {
                (Some(w), Some(c)) => format!(
                    "held by the far end's receive window: it advertises {}, which holds one flow to {} at {at}{} \u{2014} raise tcp_rmem's maximum there (tcptune advise on that host)",
                    text::size(w),
                    text::rate(c),
                    needs(f)
                ),
                _ => "held by the far end's receive window \u{2014} raise tcp_rmem's maximum there (tcptune advise on that host)".to_string(),
            },
            LimitedBy::SendBuffer => match (self.running.send_max, f.ceiling_bps) {
                (Some(m), Some(c)) => {
                    let mut s = format!(
                        "held by this host's send buffer: tcp_wmem's maximum {} holds one flow to about {} at {at}{} \u{2014} raise it (tcptune advise --host PEER, then tcptune apply)",
                        text::size(m),
                        text::rate(c),
                        needs(f)
                    );
                    if c > 2.0 * f.rate_bps.max(1.0) {
                        s.push_str("; the flow runs far below that, so its program may have set a smaller SO_SNDBUF");
                    }
                    s
                }
                _ => "held by this host's send buffer \u{2014} raise tcp_wmem's maximum (tcptune advise), or the program's SO_SNDBUF".to_string(),
            },
            LimitedBy::Network if f.retransmitted_bytes > 0 => format!(
                "held by the network: its congestion window, {} retransmitted in the interval \u{2014} buffers are not the limit",
                text::size(f.retransmitted_bytes)
            ),
            LimitedBy::Network => {
                "held by the network: its congestion window (the path's rate) \u{2014} buffers are not the limit".to_string()
            }
            LimitedBy::Application => format!(
                "held by its application: {}",
                application_note(f.process.as_ref(), f.min_rtt_ms).trim_start_matches("application limited: ")
            ),
        })
    }

    /// A flow's summary: what it moved, what held it over the watch, and the fix.
    fn total_lines(&self, t: &FlowTotal) -> Vec<String> {
        let mut lines = wrap(&format!("{} -> {}", t.local, t.peer), self.width, "  ");
        let moved = if t.sending { t.sent_bytes } else { t.received_bytes };
        let mut s = format!(
            "{} {} in {}, {} on average",
            text::size(moved),
            if t.sending { "sent" } else { "received" },
            text::took(t.watched_s),
            text::rate(t.rate_bps)
        );
        if t.ended {
            s.push_str(" (ended)");
        }
        lines.extend(wrap(&s, self.width, "    "));
        if t.sending {
            let pct = |p: Option<f64>| p.map_or_else(|| "-".to_string(), text::pct);
            lines.extend(wrap(
                &format!(
                    "busy {} of the time; of that, receive window {}, send buffer {}, network {}",
                    text::pct(t.busy_pct),
                    pct(t.rwnd_limited_pct),
                    pct(t.sndbuf_limited_pct),
                    pct(t.network_limited_pct)
                ),
                self.width,
                "    ",
            ));
            let last = FlowNow {
                held_by: t.held_by,
                ..t.last.clone()
            };
            if let Some(fix) = self.fix(&last) {
                lines.extend(wrap(&format!("most of the watch {fix}"), self.width, "    "));
            }
            if let Some(left) = self.left(&t.last) {
                lines.extend(wrap(&left, self.width, "    "));
            }
        }
        lines
    }
}

/// A flow's numbers: its rate, RTT against its lowest, and what held it.
fn numbers(f: &FlowNow) -> String {
    let held = match f.held_by {
        None => "receiving".to_string(),
        Some(LimitedBy::ReceiveWindow) => match f.ceiling_bps {
            // Named by the rate its window allows (the kernel's share undercounts).
            Some(c) if c > 0.0 => format!(
                "receive window (at {} of what it allows)",
                text::pct(f.rate_bps / c * 100.0)
            ),
            _ => format!("receive window {}", share(f.rwnd_limited_pct)),
        },
        Some(LimitedBy::SendBuffer) => format!("send buffer {}", share(f.sndbuf_limited_pct)),
        Some(LimitedBy::Network) => format!("network {}", share(f.network_limited_pct)),
        Some(LimitedBy::Application) => format!("application (busy {})", text::pct(f.busy_pct)),
    };
    #[allow(clippy::cast_precision_loss)]
    let of_path = f
        .path_bps
        .map(|p| {
            format!(
                " ({} of {})",
                text::pct(f.rate_bps / p.max(1) as f64 * 100.0),
                text::rate(p as f64)
            )
        })
        .unwrap_or_default();
    format!(
        "{}{of_path}  RTT {} (lowest {})  held by: {held}",
        text::rate(f.rate_bps),
        text::millis(f.rtt_ms),
        text::millis(f.min_rtt_ms)
    )
}

/// What a buffer must hold for one flow to fill the path, when its rate was given.
fn needs(f: &FlowNow) -> String {
    match (f.bdp_bytes, f.path_bps) {
        #[allow(clippy::cast_precision_loss)]
        (Some(b), Some(p)) => format!(
            "; filling {} at {} takes {} in flight (the BDP)",
            text::rate(p as f64),
            text::millis(f.min_rtt_ms),
            text::size(b)
        ),
        _ => String::new(),
    }
}

fn share(p: Option<f64>) -> String {
    p.map_or_else(String::new, |p| format!("({} of busy)", text::pct(p)))
}

/// Seconds since the watch began, as a line's stamp: `12.0s`.
fn stamp(at_s: f64) -> String {
    format!("{at_s:>6.1}s")
}

/// `s` within `width` columns, every line indented by `indent`.
fn wrap(s: &str, width: usize, indent: &str) -> Vec<String> {
    super::advice::summary::wrap(s, width, indent, indent)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn flow(held_by: Option<LimitedBy>) -> FlowNow {
        FlowNow {
            local: "198.18.0.1:40000".into(),
            peer: "198.18.0.2:5201".into(),
            congestion_control: None,
            process: None,
            rate_bps: 80e6,
            sending: held_by.is_some(),
            rtt_ms: 50.4,
            min_rtt_ms: 50.0,
            held_by,
            busy_pct: 100.0,
            rwnd_limited_pct: Some(95.0),
            sndbuf_limited_pct: Some(0.0),
            network_limited_pct: Some(5.0),
            retransmitted_bytes: 0,
            peer_window: Some(524_288),
            ceiling_bps: Some(83_886_080.0),
            acked_total: 1_000_000_000,
            bdp_bytes: None,
            path_bps: None,
        }
    }

    fn tick(flows: Vec<FlowNow>) -> Tick {
        Tick {
            at_s: 3.0,
            flows,
            ended: vec![],
        }
    }

    #[test]
    fn the_live_frame_names_the_holder_and_its_fix_within_the_width() {
        let running = Running {
            receive_max: None,
            send_max: Some(262_144),
        };
        let mut v = View::new(Mode::Live, 80, running, Some(2_000_000_000_000));
        let mut out = Vec::new();
        v.tick(&mut out, &tick(vec![flow(Some(LimitedBy::ReceiveWindow))]))
            .expect("tick");
        let s = String::from_utf8(out).expect("utf8");
        assert!(s.lines().all(|l| l.chars().count() <= 80), "{s}");
        let one = s.split_whitespace().collect::<Vec<_>>().join(" ");
        assert!(
            one.contains("held by: receive window (at 95 % of what it allows)"),
            "{s}"
        );
        assert!(
            one.contains("it advertises 512 KiB, which holds one flow to 83.89 Mbit/s at 50 ms"),
            "{s}"
        );
        assert!(
            one.contains("954 MiB of 1.82 TiB sent: about 2.31 days more at this rate"),
            "{s}"
        );
        // With the path's rate given, its share and the BDP the fix must reach.
        let mut out = Vec::new();
        let given = FlowNow {
            bdp_bytes: Some(1_250_000),
            path_bps: Some(200_000_000),
            ..flow(Some(LimitedBy::ReceiveWindow))
        };
        View::new(Mode::Lines, 200, running, None)
            .tick(&mut out, &tick(vec![given]))
            .expect("tick");
        let given = String::from_utf8(out).expect("utf8");
        assert!(given.contains("80 Mbit/s (40 % of 200 Mbit/s)"), "{given}");
        assert!(
            given.contains("; filling 200 Mbit/s at 50 ms takes 1.19 MiB in flight (the BDP) \u{2014} raise"),
            "{given}"
        );
        // The next frame first goes back over this one, all its lines.
        let drawn = s.lines().count();
        let mut out = Vec::new();
        v.tick(&mut out, &tick(vec![flow(Some(LimitedBy::Network))]))
            .expect("tick");
        let s = String::from_utf8(out).expect("utf8");
        assert!(s.starts_with(&format!("\x1b[{drawn}A\x1b[J")), "{s:?}");
        let one = s.split_whitespace().collect::<Vec<_>>().join(" ");
        assert!(
            one.contains("held by: network (5 % of busy)") && one.contains("buffers are not the limit"),
            "{s}"
        );
    }

    #[test]
    fn piped_it_says_a_line_per_change_only() {
        let mut v = View::new(Mode::Lines, 100, Running::default(), None);
        let mut out = Vec::new();
        let rx = flow(Some(LimitedBy::ReceiveWindow));
        v.tick(&mut out, &tick(vec![rx.clone()])).expect("tick");
        v.tick(&mut out, &tick(vec![rx.clone()])).expect("tick");
        v.tick(&mut out, &tick(vec![flow(Some(LimitedBy::SendBuffer))]))
            .expect("tick");
        v.tick(
            &mut out,
            &Tick {
                at_s: 4.0,
                flows: vec![],
                ended: vec!["198.18.0.1:40000 -> 198.18.0.2:5201".into()],
            },
        )
        .expect("tick");
        let s = String::from_utf8(out).expect("utf8");
        let lines: Vec<&str> = s.lines().collect();
        assert_eq!(lines.len(), 3, "{s}");
        assert!(lines[0].contains("held by the far end's receive window"), "{s}");
        assert!(lines[1].contains("held by this host's send buffer"), "{s}");
        assert!(lines[2].ends_with("198.18.0.1:40000 -> 198.18.0.2:5201: ended"), "{s}");
    }
}
