//! Rules on the running TCP sysctls of each OS — window scaling, SACK, timestamps, congestion
//! control, PMTU black-hole detection, autotuning — and on the buffer maxima against what a
//! path needs. Each reads values through [`Read`] and pushes findings.

use super::{Finding, PathNeeds, Read, Status, ceiling};
use crate::bdp::Source;
use crate::os::Os;
use crate::profile::Profile;
use crate::text;
use crate::units::Bitrate;

fn persist(os: Os) -> &'static str {
    match os {
        Os::Linux => "persist it in /etc/sysctl.d/",
        Os::Freebsd | Os::Macos => "persist it in /etc/sysctl.conf",
    }
}

/// The fix for one key: set it now, and where to persist it.
fn set_cmd(os: Os, key: &str, value: &str) -> String {
    format!("{}; {}", os.set_command(key, value), persist(os))
}

// ---------------------------------------------------------------- switches

/// A switch that should be on: a key whose value 0 turns a TCP feature off. The words may
/// name `{key}`, its running `{value}`, and the `{ceiling}` a 64 KiB window puts on the path.
struct Switch {
    id: &'static str,
    key: &'static str,
    /// How bad off is: Fail when it caps every transfer whatever the buffers, else Warn.
    off: Status,
    off_says: &'static str,
    /// Added to the fix (set it to 1 now, persist it).
    fix_note: &'static str,
    on_says: &'static str,
}

impl Switch {
    /// Pushes the finding for the running value; false when the key is absent (no finding).
    fn judge(&self, os: Os, read: &Read<'_>, rtt_ms: Option<f64>, f: &mut Vec<Finding>) -> bool {
        let Some(value) = read(self.key) else {
            return false;
        };
        let ceiling = ceiling(65_535, rtt_ms);
        let say = |t: &str| words(t, &[("key", self.key), ("value", &value), ("ceiling", &ceiling)]);
        f.push(if value == "0" {
            Finding {
                id: self.id.to_string(),
                status: self.off,
                message: say(self.off_says),
                fix: Some(format!("{}{}", set_cmd(os, self.key, "1"), self.fix_note)),
            }
        } else {
            Finding::ok(self.id, say(self.on_says))
        });
        true
    }
}

/// `t` with each `{name}` of `vars` replaced, in one pass: a value that itself holds
/// `{...}` (a running value is the system's text) is never expanded again.
fn words(t: &str, vars: &[(&str, &str)]) -> String {
    let mut out = String::new();
    let mut rest = t;
    while let Some(i) = rest.find('{') {
        let Some(j) = rest[i..].find('}') else { break };
        out.push_str(&rest[..i]);
        let name = &rest[i + 1..i + j];
        match vars.iter().find(|(n, _)| *n == name) {
            Some((_, v)) => out.push_str(v),
            None => out.push_str(&rest[i..=i + j]),
        }
        rest = &rest[i + j + 1..];
    }
    out.push_str(rest);
    out
}

// ---------------------------------------------------------------- Linux sysctls

/// Congestion controls that suit bulk transfer over long paths.
const GOOD_CC: &[&str] = &["bbr", "bbr2", "bbr3", "cubic", "htcp", "bic", "illinois", "dctcp"];

/// RFC 7323 and SACK: on by default, and only ever off by someone's choice.
const LINUX_SWITCHES: [Switch; 3] = [
    Switch {
        id: "window-scaling",
        key: "net.ipv4.tcp_window_scaling",
        off: Status::Fail,
        off_says: "window scaling (RFC 7323) is off: the window stops at 64 KiB, {ceiling} — whatever the buffers",
        fix_note: " (new connections only)",
        on_says: "window scaling is on: windows can grow past 64 KiB",
    },
    Switch {
        id: "sack",
        key: "net.ipv4.tcp_sack",
        off: Status::Warn,
        off_says: "selective acknowledgements (SACK) are off: after several losses in one window the sender repairs one hole per round trip, which on a long path stalls the flow",
        fix_note: "",
        on_says: "SACK is on",
    },
    Switch {
        id: "timestamps",
        key: "net.ipv4.tcp_timestamps",
        off: Status::Warn,
        off_says: "TCP timestamps are off: fewer RTT samples, and no protection against wrapped sequence numbers (PAWS), which a fast path wraps in seconds",
        fix_note: "",
        on_says: "TCP timestamps are on",
    },
];

const LINUX_MTU_PROBING: Switch = Switch {
    id: "mtu-probing",
    key: "net.ipv4.tcp_mtu_probing",
    off: Status::Warn,
    off_says: "tcp_mtu_probing is 0: if a firewall drops the ICMP \"fragmentation needed\" messages (a PMTU black hole), full-size segments stall for good",
    fix_note: " (1 probes only once a black hole is detected)",
    on_says: "tcp_mtu_probing is {value}: PMTU black holes are detected",
};

pub fn linux_sysctls(read: &Read<'_>, rtt_ms: Option<f64>, f: &mut Vec<Finding>) {
    for s in &LINUX_SWITCHES {
        s.judge(Os::Linux, read, rtt_ms, f);
    }
    if let Some(cc) = read("net.ipv4.tcp_congestion_control") {
        let avail = read("net.ipv4.tcp_available_congestion_control").unwrap_or_default();
        // The kernel's names for them (a module names itself): shown escaped.
        f.push(linux_congestion_control(&text::escape(&cc), &text::escape(&avail)));
    }
    LINUX_MTU_PROBING.judge(Os::Linux, read, rtt_ms, f);
}

/// The congestion control in use against those that suit long fat paths, and bbr when
/// `avail` offers it.
fn linux_congestion_control(cc: &str, avail: &str) -> Finding {
    let has_bbr = crate::sysctl::offers(avail, "bbr");
    let listed = if avail.is_empty() { "unknown" } else { avail };
    if GOOD_CC.contains(&cc) {
        let hint = if cc == "bbr" {
            ""
        } else if has_bbr {
            "; bbr is available and copes better with random loss on long paths"
        } else {
            "; bbr is not loaded (modprobe tcp_bbr)"
        };
        Finding::ok("congestion-control", format!("{cc} in use (available: {listed}){hint}"))
    } else {
        let to = if has_bbr { "bbr" } else { "cubic" };
        Finding::warn(
            "congestion-control",
            format!(
                "{cc} in use (available: {listed}): it halves the window on every loss and regrows it by one segment per round trip, hopeless on a long fat path"
            ),
            set_cmd(Os::Linux, "net.ipv4.tcp_congestion_control", to),
        )
    }
}

// ---------------------------------------------------------------- FreeBSD / macOS sysctls

const FREEBSD_SACK: Switch = Switch {
    id: "sack",
    key: "net.inet.tcp.sack.enable",
    off: Status::Warn,
    off_says: "SACK is off ({key} = 0): after several losses in one window the sender repairs one hole per round trip",
    fix_note: "",
    on_says: "SACK is on",
};

const MACOS_SACK: Switch = Switch {
    key: "net.inet.tcp.sack",
    ..FREEBSD_SACK
};

const PMTUD_BLACKHOLE: Switch = Switch {
    id: "mtu-probing",
    key: "net.inet.tcp.pmtud_blackhole_detection",
    off: Status::Warn,
    off_says: "{key} is 0: a PMTU black hole stalls full-size segments for good",
    fix_note: "",
    on_says: "{key} is {value}",
};

/// PMTU black-hole detection, under either of its two names: the first present is judged.
const PMTU_BLACKHOLE: [Switch; 2] = [
    PMTUD_BLACKHOLE,
    Switch {
        key: "net.inet.tcp.pmtu_blackhole_detection",
        ..PMTUD_BLACKHOLE
    },
];

const FREEBSD_AUTOTUNING: [Switch; 2] = [
    Switch {
        id: "autotuning:receive",
        key: "net.inet.tcp.recvbuf_auto",
        off: Status::Fail,
        off_says: "receive buffer autotuning is off ({key} = 0): every connection keeps its initial buffer",
        fix_note: "",
        on_says: "receive buffer autotuning is on",
    },
    Switch {
        id: "autotuning:send",
        key: "net.inet.tcp.sendbuf_auto",
        off: Status::Fail,
        off_says: "send buffer autotuning is off ({key} = 0): every connection keeps its initial buffer",
        fix_note: "",
        on_says: "send buffer autotuning is on",
    },
];

const MACOS_AUTOTUNING: [Switch; 2] = [
    Switch {
        key: "net.inet.tcp.doautorcvbuf",
        ..FREEBSD_AUTOTUNING[0]
    },
    Switch {
        key: "net.inet.tcp.doautosndbuf",
        ..FREEBSD_AUTOTUNING[1]
    },
];

pub fn bsd_sysctls(os: Os, read: &Read<'_>, rtt_ms: Option<f64>, f: &mut Vec<Finding>) {
    let (sack, autotuning) = if os == Os::Macos {
        (&MACOS_SACK, &MACOS_AUTOTUNING)
    } else {
        (&FREEBSD_SACK, &FREEBSD_AUTOTUNING)
    };
    if let Some(v) = read("net.inet.tcp.rfc1323") {
        f.extend(rfc1323(os, &v, rtt_ms));
    }
    sack.judge(os, read, rtt_ms, f);
    if let Some(cc) = read("net.inet.tcp.cc.algorithm") {
        let avail = read("net.inet.tcp.cc.available").unwrap_or_default();
        f.push(bsd_congestion_control(&text::escape(&cc), &text::escape(&avail)));
    }
    for s in &PMTU_BLACKHOLE {
        if s.judge(os, read, rtt_ms, f) {
            break;
        }
    }
    for s in autotuning {
        s.judge(os, read, rtt_ms, f);
    }
}

/// Window scaling and timestamps from the one key that switches both. FreeBSD: 0 off,
/// 1 both, 2 window scaling only, 3 timestamps only. macOS: 0 or 1.
fn rfc1323(os: Os, v: &str, rtt_ms: Option<f64>) -> [Finding; 2] {
    let n: u8 = v.parse().unwrap_or(1);
    let (wscale, ts) = (n == 1 || n == 2, n == 1 || n == 3);
    let window_scaling = if wscale {
        Finding::ok("window-scaling", "window scaling is on (net.inet.tcp.rfc1323)")
    } else {
        Finding::fail(
            "window-scaling",
            format!(
                "window scaling is off (net.inet.tcp.rfc1323 = {v}): the window stops at 64 KiB, {}",
                ceiling(65_535, rtt_ms)
            ),
            set_cmd(os, "net.inet.tcp.rfc1323", "1"),
        )
    };
    let timestamps = if ts {
        Finding::ok("timestamps", "TCP timestamps are on (net.inet.tcp.rfc1323)")
    } else {
        Finding::warn(
            "timestamps",
            format!("TCP timestamps are off (net.inet.tcp.rfc1323 = {v}): fewer RTT samples and no PAWS"),
            set_cmd(os, "net.inet.tcp.rfc1323", "1"),
        )
    };
    [window_scaling, timestamps]
}

/// newreno regrows too slowly after a loss for a long path; anything else passes.
fn bsd_congestion_control(cc: &str, avail: &str) -> Finding {
    if cc == "newreno" {
        Finding::warn(
            "congestion-control",
            format!(
                "newreno in use (available: {avail}): it regrows the window by one segment per round trip after each loss"
            ),
            "kldload cc_htcp; sysctl net.inet.tcp.cc.algorithm=htcp; add cc_htcp_load=\"YES\" to /boot/loader.conf",
        )
    } else {
        Finding::ok("congestion-control", format!("{cc} in use (available: {avail})"))
    }
}

// ---------------------------------------------------------------- buffers for a path

/// Do the running autotuning maxima (the profile's `caps`) reach what the path needs?
pub fn buffers(os: Os, read: &Read<'_>, needs: &PathNeeds, f: &mut Vec<Finding>) {
    let profile = Profile::for_os(os);
    let host = needs.host.as_deref().unwrap_or("the host");
    let rate = Bitrate::from_bps(needs.bandwidth_bps);
    let rate_note = match needs.bandwidth_source {
        Source::Assumed => format!("{rate} ASSUMED — give --bandwidth"),
        Source::Given => format!("{rate} given"),
        Source::Measured => format!("{rate} link speed"),
    };
    let path = format!("the path to {host} (RTT {}, {rate_note})", text::millis(needs.rtt_ms));
    for (key, fact) in &profile.caps {
        let (need, what) = if fact == "send_buffer" {
            (needs.sizing.send_buffer, "send")
        } else {
            (needs.sizing.buffer, "receive")
        };
        let id = format!("buffers:{what}");
        let Some(cur) = read(key) else {
            f.push(Finding::warn(
                id,
                format!("{key} is not readable here, so the {what} buffer cannot be checked"),
                "run check on the machine itself",
            ));
            continue;
        };
        let max = crate::profile::numeric_fields(&cur)
            .and_then(|v| v.last().copied())
            .unwrap_or(0.0);
        #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
        let max = max as u64;
        let field = if cur.contains(' ') {
            format!("{key}[2]")
        } else {
            key.clone()
        };
        if max >= need {
            f.push(Finding::ok(
                id,
                format!(
                    "{field} = {} covers {path}: it needs {}",
                    text::bytes(max),
                    text::size(need)
                ),
            ));
            continue;
        }
        // The advised value; else the running one with its maximum raised (a triple stays one).
        let value = needs.settings.iter().find(|(k, _)| k == key).map_or_else(
            || match cur.rsplit_once(' ') {
                Some((rest, _)) => format!("{rest} {need}"),
                None => need.to_string(),
            },
            |(_, v)| v.clone(),
        );
        let limit = if what == "receive" {
            // About half of the buffer is advertised as window (see bdp.rs).
            format!("; one flow gets {}", ceiling(max / 2, Some(needs.rtt_ms)))
        } else {
            String::new()
        };
        f.push(Finding::fail(
            id,
            format!(
                "{field} = {} is short of the {} {path} needs (BDP {}){limit}",
                text::bytes(max),
                text::size(need),
                text::size(needs.sizing.bdp)
            ),
            format!(
                "{} — or all at once: tcptune advise --host {} --format sysctl",
                set_cmd(os, key, &value),
                text::shell_word(host)
            ),
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::check::Status;
    use crate::check::test_util::{by_id, reader};

    #[test]
    fn linux_switches() {
        let stock = [
            ("net.ipv4.tcp_window_scaling", "1"),
            ("net.ipv4.tcp_sack", "1"),
            ("net.ipv4.tcp_timestamps", "1"),
            ("net.ipv4.tcp_congestion_control", "cubic"),
            ("net.ipv4.tcp_available_congestion_control", "reno cubic bbr"),
            ("net.ipv4.tcp_mtu_probing", "0"),
        ];
        let mut f = Vec::new();
        linux_sysctls(&reader(&stock), None, &mut f);
        assert_eq!(by_id(&f, "window-scaling").status, Status::Ok);
        assert_eq!(by_id(&f, "sack").status, Status::Ok);
        assert!(by_id(&f, "congestion-control").message.contains("bbr is available"));
        assert_eq!(by_id(&f, "mtu-probing").status, Status::Warn);

        let off = [
            ("net.ipv4.tcp_window_scaling", "0"),
            ("net.ipv4.tcp_sack", "0"),
            ("net.ipv4.tcp_timestamps", "0"),
            ("net.ipv4.tcp_congestion_control", "reno"),
            ("net.ipv4.tcp_available_congestion_control", "reno cubic"),
        ];
        let mut f = Vec::new();
        linux_sysctls(&reader(&off), Some(50.0), &mut f);
        let ws = by_id(&f, "window-scaling");
        assert_eq!(ws.status, Status::Fail);
        assert!(ws.message.contains("10.49 Mbit/s at 50 ms"), "{}", ws.message);
        assert!(ws.fix.as_deref().is_some_and(|x| x.contains("tcp_window_scaling=1")));
        assert_eq!(
            by_id(&f, "sack")
                .fix
                .as_deref()
                .map(|x| x.starts_with("sysctl -w net.ipv4.tcp_sack=1")),
            Some(true)
        );
        assert_eq!(by_id(&f, "timestamps").status, Status::Warn);
        let cc = by_id(&f, "congestion-control");
        assert_eq!(cc.status, Status::Warn);
        assert!(cc.fix.as_deref().is_some_and(|x| x.contains("=cubic")));
        // Absent keys make no finding.
        assert!(!f.iter().any(|x| x.id == "mtu-probing"));
    }

    /// Issue 36, 6: the buffer fix names the host for a shell, by the one quoting rule.
    #[test]
    fn the_buffer_fix_quotes_the_host() {
        let needs = PathNeeds {
            host: Some("a;b $(x)".into()),
            rtt_ms: 150.0,
            bandwidth_bps: 500_000_000,
            bandwidth_source: Source::Given,
            sizing: crate::bdp::size_buffers(
                Bitrate::from_bps(500_000_000),
                crate::units::Span::from_millis_f64(150.0),
                None,
            ),
            settings: Vec::new(),
            link: None,
        };
        let mut f = Vec::new();
        buffers(
            Os::Linux,
            &reader(&[("net.ipv4.tcp_rmem", "4096 131072 6291456")]),
            &needs,
            &mut f,
        );
        let fix = by_id(&f, "buffers:receive").fix.clone().expect("a fix");
        // Without an advised value the running triple keeps its fields, its maximum raised.
        assert!(fix.starts_with("sysctl -w 'net.ipv4.tcp_rmem=4096 131072 "), "{fix}");
        assert!(
            fix.ends_with("tcptune advise --host 'a;b $(x)' --format sysctl"),
            "{fix}"
        );
    }

    #[test]
    fn switch_words_name_only_what_judge_fills_in() {
        let tables = [
            &LINUX_SWITCHES[..],
            &[LINUX_MTU_PROBING, FREEBSD_SACK, MACOS_SACK],
            &PMTU_BLACKHOLE[..],
        ];
        let autotuning = [&FREEBSD_AUTOTUNING[..], &MACOS_AUTOTUNING[..]];
        for s in tables.into_iter().chain(autotuning).flatten() {
            for t in [s.off_says, s.on_says] {
                let filled = words(t, &[("key", "K"), ("value", "V"), ("ceiling", "C")]);
                assert!(!filled.contains('{') && !filled.contains('}'), "{}: {t}", s.key);
            }
            assert_ne!(s.off, Status::Ok, "{}", s.key);
        }
        // A running value is the system's text: never expanded again.
        assert_eq!(
            words("{key} is {value}", &[("key", "k"), ("value", "{key}")]),
            "k is {key}"
        );
    }

    #[test]
    fn bsd_switches() {
        let mut f = Vec::new();
        bsd_sysctls(
            Os::Freebsd,
            &reader(&[
                ("net.inet.tcp.rfc1323", "3"),
                ("net.inet.tcp.sack.enable", "0"),
                ("net.inet.tcp.cc.algorithm", "newreno"),
                ("net.inet.tcp.cc.available", "newreno, cubic"),
                ("net.inet.tcp.recvbuf_auto", "0"),
                ("net.inet.tcp.sendbuf_auto", "1"),
            ]),
            None,
            &mut f,
        );
        assert_eq!(by_id(&f, "window-scaling").status, Status::Fail);
        assert_eq!(by_id(&f, "timestamps").status, Status::Ok);
        assert_eq!(by_id(&f, "sack").status, Status::Warn);
        assert_eq!(by_id(&f, "congestion-control").status, Status::Warn);
        assert_eq!(by_id(&f, "autotuning:receive").status, Status::Fail);
        assert_eq!(by_id(&f, "autotuning:send").status, Status::Ok);
        let mut f = Vec::new();
        bsd_sysctls(
            Os::Macos,
            &reader(&[("net.inet.tcp.rfc1323", "1"), ("net.inet.tcp.sack", "1")]),
            None,
            &mut f,
        );
        assert!(f.iter().all(|x| x.status == Status::Ok), "{f:#?}");
        assert_eq!(f.len(), 3);
    }
}
