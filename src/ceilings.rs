//! The ceilings of common transfer tools: a window the application keeps itself, so that no
//! kernel setting raises what one of its transfers can reach on a long path — window × 8 / RTT.
//! Each window is the tool's own default, read from its source (named in `source`).

use serde::Serialize;

use crate::bdp;
use crate::units::{Bytes, Span};

/// A transfer tool's own flow-control window.
pub struct AppWindow {
    /// What users run.
    pub tool: &'static str,
    pub window_bytes: u64,
    /// Where the number comes from.
    pub source: &'static str,
    /// What gets past it.
    pub way_out: &'static str,
    /// The tool and the way out, in a few words.
    pub short_tool: &'static str,
    pub short_way_out: &'static str,
    /// How to run `{n}` transfers at once.
    pub parallel: &'static str,
}

/// The windows tcptune knows, each checked against the tool's source.
pub const APP_WINDOWS: &[AppWindow] = &[AppWindow {
    tool: "OpenSSH (scp, sftp, rsync -e ssh)",
    window_bytes: 64 * 32 * 1024,
    source: "channel window 64 × 32 KiB (channels.h CHAN_SES_WINDOW_DEFAULT); sftp also keeps at most 64 requests of 32 KiB in flight (sftp.c DEFAULT_NUM_REQUESTS, DEFAULT_COPY_BUFLEN)",
    way_out: "parallel transfers (several scp or rsync at once), HPN-SSH, or a tool that sizes its windows to the path",
    short_tool: "scp, sftp and rsync -e ssh",
    short_way_out: "run several at once, or HPN-SSH",
    parallel: "{n} rsync or scp at once over parts of the file list (xargs -P {n}, parsyncfp), rclone --transfers {n} (its sftp backend), or HPN-SSH, whose window follows the path",
}];

/// One tool's ceiling on this path.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AppCeiling {
    pub tool: &'static str,
    pub window_bytes: u64,
    /// window × 8 / RTT, bit/s, rounded.
    pub ceiling_bps: u64,
    /// The ceiling is below the path's rate: one transfer of this tool cannot fill the path,
    /// whatever the kernel's buffers.
    pub limits_path: bool,
    /// Then how many transfers at once fill it ([`bdp::streams_to_fill`]; at most
    /// [`bdp::MAX_STREAMS`]).
    pub streams: Option<u32>,
    pub source: &'static str,
}

/// Every known tool's ceiling at `rtt`, against the path's `rate_bps`.
pub fn ceilings(rtt: Span, rate_bps: u64) -> Vec<AppCeiling> {
    APP_WINDOWS
        .iter()
        .map(|w| {
            let ceiling_bps = bdp::max_throughput_bps(Bytes::new(w.window_bytes), rtt);
            #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
            let ceiling_bps = ceiling_bps.round() as u64;
            AppCeiling {
                tool: w.tool,
                window_bytes: w.window_bytes,
                ceiling_bps,
                limits_path: ceiling_bps < rate_bps,
                streams: bdp::streams_to_fill(rate_bps, ceiling_bps).map(|(n, _)| n),
                source: w.source,
            }
        })
        .collect()
}

/// The note for a tool whose ceiling is below the path's rate: whole (the source of its window,
/// every way out), and in one line.
pub fn note(c: &AppCeiling, rate_bps: u64) -> Option<(String, String)> {
    let w = APP_WINDOWS.iter().find(|w| w.tool == c.tool)?;
    #[allow(clippy::cast_precision_loss)]
    let ceiling = crate::text::rate(c.ceiling_bps as f64);
    #[allow(clippy::cast_precision_loss)]
    c.limits_path.then(|| {
        (
            format!(
                "{} tops out at {ceiling} on this path ({} window: {}), below its {}; no kernel setting raises that: use {}{}",
                c.tool,
                Bytes::new(c.window_bytes).iec(),
                c.source,
                crate::text::rate(rate_bps as f64),
                w.way_out,
                c.streams.map_or_else(String::new, |n| format!(
                    "; {n} at once fill it (\u{2308}{} \u{f7} {ceiling}\u{2309}): {}",
                    crate::text::rate(rate_bps as f64),
                    w.parallel.replace("{n}", &n.to_string())
                ))
            ),
            format!(
                "{} top out at {ceiling} here (a {} window): {}",
                w.short_tool,
                crate::text::size(c.window_bytes),
                c.streams.map_or_else(
                    || w.short_way_out.to_string(),
                    |n| format!("{n} at once fill {}, or HPN-SSH", crate::text::rate(rate_bps as f64))
                )
            ),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(v: f64) -> Span {
        Span::from_millis_f64(v)
    }

    #[test]
    fn openssh_tops_out_at_its_window_per_rtt() {
        // The Tokyo–Singapore case: 2 MiB / 74.3 ms = 16,777,216 bit / 0.0743 s
        // = 225,803,714.7 bit/s, whatever the kernel allows.
        let c = &ceilings(ms(74.3), 1_000_000_000)[0];
        assert_eq!(c.window_bytes, 2_097_152);
        assert_eq!(c.ceiling_bps, 225_803_715);
        assert!(c.limits_path);
        let (n, short) = note(c, 1_000_000_000).expect("a note");
        assert!(
            n.starts_with("OpenSSH (scp, sftp, rsync -e ssh) tops out at 225.8 Mbit/s"),
            "{n}"
        );
        assert!(n.contains("below its 1 Gbit/s"), "{n}");
        assert_eq!(
            short,
            "scp, sftp and rsync -e ssh top out at 225.8 Mbit/s here (a 2 MiB window): 5 at once fill 1 Gbit/s, or HPN-SSH"
        );
        assert_eq!(c.streams, Some(5));
        assert!(
            n.contains("; 5 at once fill it (\u{2308}1 Gbit/s \u{f7} 225.8 Mbit/s\u{2309}): 5 rsync or scp at once"),
            "{n}"
        );
        // 150 ms, 500 Mbit/s: 111.8 Mbit/s.
        assert_eq!(ceilings(ms(150.0), 500_000_000)[0].ceiling_bps, 111_848_107);
    }

    #[test]
    fn a_short_or_slow_path_is_not_limited_by_it() {
        // 2 MiB fills 50 Mbit/s up to 335 ms, and 1 Gbit/s at 1 ms.
        assert!(!ceilings(ms(40.0), 50_000_000)[0].limits_path);
        assert!(!ceilings(ms(1.0), 1_000_000_000)[0].limits_path);
        assert_eq!(note(&ceilings(ms(40.0), 50_000_000)[0], 50_000_000), None);
    }
}
