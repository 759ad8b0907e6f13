//! Rules on the running TCP sysctls of each OS — window scaling, SACK, timestamps, congestion
//! control, PMTU black-hole detection, autotuning — and on the buffer maxima against what a
//! path needs. Each reads values through [`Read`] and pushes findings.

use super::{Finding, PathNeeds, Read, ceiling};
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

// ---------------------------------------------------------------- Linux sysctls

/// Congestion controls that suit bulk transfer over long paths.
const GOOD_CC: &[&str] = &["bbr", "bbr2", "bbr3", "cubic", "htcp", "bic", "illinois", "dctcp"];

pub fn linux_sysctls(read: &Read<'_>, rtt_ms: Option<f64>, f: &mut Vec<Finding>) {
    let os = Os::Linux;
    match read("net.ipv4.tcp_window_scaling").as_deref() {
        Some("0") => f.push(Finding::fail(
            "window-scaling",
            format!(
                "window scaling (RFC 7323) is off: the window stops at 64 KiB, {} — whatever the buffers",
                ceiling(65_535, rtt_ms)
            ),
            format!(
                "{} (new connections only)",
                set_cmd(os, "net.ipv4.tcp_window_scaling", "1")
            ),
        )),
        Some(_) => f.push(Finding::ok(
            "window-scaling",
            "window scaling is on: windows can grow past 64 KiB",
        )),
        None => {}
    }
    // Features that are on by default and only ever off by someone's choice: warn with the fix.
    let features: [(&str, &str, &str, &str); 2] = [
        (
            "net.ipv4.tcp_sack",
            "sack",
            "selective acknowledgements (SACK) are off: after several losses in one window the sender repairs one hole per round trip, which on a long path stalls the flow",
            "SACK is on",
        ),
        (
            "net.ipv4.tcp_timestamps",
            "timestamps",
            "TCP timestamps are off: fewer RTT samples, and no protection against wrapped sequence numbers (PAWS), which a fast path wraps in seconds",
            "TCP timestamps are on",
        ),
    ];
    for (key, id, off, on) in features {
        match read(key).as_deref() {
            Some("0") => f.push(Finding::warn(id, off, set_cmd(os, key, "1"))),
            Some(_) => f.push(Finding::ok(id, on)),
            None => {}
        }
    }
    if let Some(cc) = read("net.ipv4.tcp_congestion_control") {
        let avail = read("net.ipv4.tcp_available_congestion_control").unwrap_or_default();
        let has_bbr = crate::sysctl::offers(&avail, "bbr");
        let listed = if avail.is_empty() {
            "unknown".to_string()
        } else {
            avail.clone()
        };
        if GOOD_CC.contains(&cc.as_str()) {
            let hint = if cc == "bbr" {
                String::new()
            } else if has_bbr {
                "; bbr is available and copes better with random loss on long paths".to_string()
            } else {
                "; bbr is not loaded (modprobe tcp_bbr)".to_string()
            };
            f.push(Finding::ok(
                "congestion-control",
                format!("{cc} in use (available: {listed}){hint}"),
            ));
        } else {
            let to = if has_bbr { "bbr" } else { "cubic" };
            f.push(Finding::warn(
                "congestion-control",
                format!("{cc} in use (available: {listed}): it halves the window on every loss and regrows it by one segment per round trip, hopeless on a long fat path"),
                set_cmd(os, "net.ipv4.tcp_congestion_control", to),
            ));
        }
    }
    match read("net.ipv4.tcp_mtu_probing").as_deref() {
        Some("0") => f.push(Finding::warn(
            "mtu-probing",
            "tcp_mtu_probing is 0: if a firewall drops the ICMP \"fragmentation needed\" messages (a PMTU black hole), full-size segments stall for good",
            format!("{} (1 probes only once a black hole is detected)", set_cmd(os, "net.ipv4.tcp_mtu_probing", "1")),
        )),
        Some(v) => f.push(Finding::ok("mtu-probing", format!("tcp_mtu_probing is {v}: PMTU black holes are detected"))),
        None => {}
    }
}

// ---------------------------------------------------------------- FreeBSD / macOS sysctls

pub fn bsd_sysctls(os: Os, read: &Read<'_>, rtt_ms: Option<f64>, f: &mut Vec<Finding>) {
    // FreeBSD: 0 off, 1 both, 2 window scaling only, 3 timestamps only. macOS: 0 or 1.
    if let Some(v) = read("net.inet.tcp.rfc1323") {
        let n: u8 = v.parse().unwrap_or(1);
        let (wscale, ts) = (n == 1 || n == 2, n == 1 || n == 3);
        if wscale {
            f.push(Finding::ok(
                "window-scaling",
                "window scaling is on (net.inet.tcp.rfc1323)",
            ));
        } else {
            f.push(Finding::fail(
                "window-scaling",
                format!(
                    "window scaling is off (net.inet.tcp.rfc1323 = {v}): the window stops at 64 KiB, {}",
                    ceiling(65_535, rtt_ms)
                ),
                set_cmd(os, "net.inet.tcp.rfc1323", "1"),
            ));
        }
        if ts {
            f.push(Finding::ok(
                "timestamps",
                "TCP timestamps are on (net.inet.tcp.rfc1323)",
            ));
        } else {
            f.push(Finding::warn(
                "timestamps",
                format!("TCP timestamps are off (net.inet.tcp.rfc1323 = {v}): fewer RTT samples and no PAWS"),
                set_cmd(os, "net.inet.tcp.rfc1323", "1"),
            ));
        }
    }
    let sack_key = if os == Os::Macos {
        "net.inet.tcp.sack"
    } else {
        "net.inet.tcp.sack.enable"
    };
    match read(sack_key).as_deref() {
        Some("0") => f.push(Finding::warn(
            "sack",
            format!("SACK is off ({sack_key} = 0): after several losses in one window the sender repairs one hole per round trip"),
            set_cmd(os, sack_key, "1"),
        )),
        Some(_) => f.push(Finding::ok("sack", "SACK is on")),
        None => {}
    }
    if let Some(cc) = read("net.inet.tcp.cc.algorithm") {
        let avail = read("net.inet.tcp.cc.available").unwrap_or_default();
        if cc == "newreno" {
            f.push(Finding::warn(
                "congestion-control",
                format!("newreno in use (available: {avail}): it regrows the window by one segment per round trip after each loss"),
                "kldload cc_htcp; sysctl net.inet.tcp.cc.algorithm=htcp; add cc_htcp_load=\"YES\" to /boot/loader.conf",
            ));
        } else {
            f.push(Finding::ok(
                "congestion-control",
                format!("{cc} in use (available: {avail})"),
            ));
        }
    }
    for key in [
        "net.inet.tcp.pmtud_blackhole_detection",
        "net.inet.tcp.pmtu_blackhole_detection",
    ] {
        match read(key).as_deref() {
            Some("0") => f.push(Finding::warn(
                "mtu-probing",
                format!("{key} is 0: a PMTU black hole stalls full-size segments for good"),
                set_cmd(os, key, "1"),
            )),
            Some(v) => f.push(Finding::ok("mtu-probing", format!("{key} is {v}"))),
            None => continue,
        }
        break;
    }
    let autotune: &[(&str, &str)] = if os == Os::Macos {
        &[
            ("net.inet.tcp.doautorcvbuf", "receive"),
            ("net.inet.tcp.doautosndbuf", "send"),
        ]
    } else {
        &[
            ("net.inet.tcp.recvbuf_auto", "receive"),
            ("net.inet.tcp.sendbuf_auto", "send"),
        ]
    };
    for (key, what) in autotune {
        match read(key).as_deref() {
            Some("0") => f.push(Finding::fail(
                format!("autotuning:{what}"),
                format!("{what} buffer autotuning is off ({key} = 0): every connection keeps its initial buffer"),
                set_cmd(os, key, "1"),
            )),
            Some(_) => f.push(Finding::ok(
                format!("autotuning:{what}"),
                format!("{what} buffer autotuning is on"),
            )),
            None => {}
        }
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
    let path = format!("the path to {host} (RTT {} ms, {rate_note})", needs.rtt_ms);
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
                    text::bytes(need)
                ),
            ));
            continue;
        }
        let value = needs
            .settings
            .iter()
            .find(|(k, _)| k == key)
            .map_or_else(|| need.to_string(), |(_, v)| v.clone());
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
                text::bytes(need),
                text::bytes(needs.sizing.bdp)
            ),
            format!(
                "{} — or all at once: tcptune advise --host {host} --format sysctl",
                set_cmd(os, key, &value)
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
