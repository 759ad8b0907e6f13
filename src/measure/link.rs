//! Facts about the egress link towards an address.
//!
//! Linux: the kernel's own route lookup (RTM_GETROUTE for the destination, like
//! `ip route get ADDR`) via rtnetlink gives the output interface, preferred source, gateway and
//! route MTU; `/sys/class/net/IF/{speed,duplex,mtu}` give the rest.
//! FreeBSD/macOS: `route -n get ADDR` and `ifconfig IF`.
//! Every fact is best effort: what cannot be found stays `None`, with a note.

use std::net::{IpAddr, SocketAddr, UdpSocket};
use std::path::Path;

use super::LinkFacts;

/// Where Linux lists network interfaces.
pub const SYSFS_NET: &str = crate::host::linux::SYS_NET;

/// Note for an interface that reports no speed.
pub fn speed_unknown_note(ifname: &str) -> String {
    format!("speed of {ifname} is not reported (virtual NIC, TUN or cloud)")
}

/// The link facts for the route to `addr`.
#[cfg(target_os = "linux")]
pub async fn link_facts(addr: IpAddr) -> LinkFacts {
    linux::facts(addr).await
}

/// The link facts for the route to `addr`.
#[cfg(any(target_os = "freebsd", target_os = "macos"))]
pub async fn link_facts(addr: IpAddr) -> LinkFacts {
    bsd::facts(addr).await
}

/// The link facts for the route to `addr` (only the source address on this OS).
#[cfg(not(any(target_os = "linux", target_os = "freebsd", target_os = "macos")))]
pub async fn link_facts(addr: IpAddr) -> LinkFacts {
    LinkFacts {
        source: udp_source(addr),
        notes: vec!["link facts are not supported on this OS".to_string()],
        ..LinkFacts::default()
    }
}

/// The source address the kernel would use towards `addr`: connecting a UDP socket picks it
/// without sending anything.
pub fn udp_source(addr: IpAddr) -> Option<IpAddr> {
    let bind: SocketAddr = if addr.is_ipv4() {
        (std::net::Ipv4Addr::UNSPECIFIED, 0).into()
    } else {
        (std::net::Ipv6Addr::UNSPECIFIED, 0).into()
    };
    let sock = UdpSocket::bind(bind).ok()?;
    sock.connect((addr, 9)).ok()?;
    let ip = sock.local_addr().ok()?.ip();
    (!ip.is_unspecified()).then_some(ip)
}

/// Read `ROOT/IF/{speed,duplex,mtu}` (ROOT is normally `/sys/class/net`). Speed is in Mbit/s
/// there; -1, 0 or a read error (EINVAL) mean unknown: `speed_bps` stays None with a note.
pub fn read_link_sysfs(root: &Path, ifname: &str) -> LinkFacts {
    let mut facts = LinkFacts {
        interface: Some(ifname.to_string()),
        ..LinkFacts::default()
    };
    if ifname.is_empty() || ifname.contains('/') || ifname == "." || ifname == ".." {
        facts.notes.push(format!("invalid interface name {ifname:?}"));
        return facts;
    }
    let dir = root.join(ifname);
    if !dir.is_dir() {
        facts.notes.push(format!("{ifname} is not in {}", root.display()));
        return facts;
    }
    let read = |name: &str| {
        std::fs::read_to_string(dir.join(name))
            .ok()
            .map(|s| s.trim().to_string())
    };
    facts.speed_bps = read("speed")
        .and_then(|s| s.parse::<i64>().ok())
        .filter(|&mbit| mbit > 0 && mbit < i64::from(u32::MAX))
        .and_then(|mbit| u64::try_from(mbit).ok())
        .map(|mbit| mbit * 1_000_000);
    // veth, tun, bridges and the like live under /sys/devices/virtual and report a nominal
    // speed (10000 for veth and TUN): that is not the speed of any link, so do not use it.
    let is_virtual = std::fs::canonicalize(&dir).is_ok_and(|p| p.to_string_lossy().contains("/devices/virtual/"));
    if is_virtual && let Some(nominal) = facts.speed_bps.take() {
        facts.notes.push(format!(
            "{ifname} is a virtual device: its reported speed ({} Mbit/s) is nominal, not a link speed",
            nominal / 1_000_000
        ));
    } else if facts.speed_bps.is_none() {
        facts.notes.push(speed_unknown_note(ifname));
    }
    facts.duplex = read("duplex").filter(|d| d == "full" || d == "half");
    facts.mtu = read("mtu").and_then(|s| s.parse().ok());
    facts
}

/// What `route -n get ADDR` (FreeBSD, macOS) says.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RouteGetFacts {
    pub interface: Option<String>,
    pub gateway: Option<IpAddr>,
    pub mtu: Option<u32>,
}

/// Parse `route -n get ADDR` output: `interface:` and `gateway:` lines, and the `mtu` column of
/// the metrics table.
#[cfg_attr(not(any(target_os = "freebsd", target_os = "macos", test)), allow(dead_code))]
pub fn parse_route_get(text: &str) -> RouteGetFacts {
    let mut facts = RouteGetFacts::default();
    let lines: Vec<&str> = text.lines().collect();
    for (i, line) in lines.iter().enumerate() {
        if let Some((key, value)) = line.split_once(':') {
            let value = value.trim();
            match key.trim() {
                "interface" if !value.is_empty() => facts.interface = Some(value.to_string()),
                "gateway" => {
                    let ip = value.split('%').next().unwrap_or_default();
                    facts.gateway = ip.parse().ok();
                }
                _ => {}
            }
            continue;
        }
        let header: Vec<&str> = line.split_whitespace().collect();
        if let Some(col) = header.iter().position(|h| *h == "mtu")
            && let Some(values) = lines.get(i + 1)
        {
            let values: Vec<&str> = values.split_whitespace().collect();
            if values.len() == header.len() {
                facts.mtu = values
                    .get(col)
                    .map(|v| v.trim_end_matches(|c: char| !c.is_ascii_digit()))
                    .and_then(|v| v.parse().ok())
                    .filter(|&m| m > 0);
            }
        }
    }
    facts
}

/// What `ifconfig IF` (FreeBSD, macOS) says.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct IfconfigFacts {
    pub mtu: Option<u32>,
    pub speed_bps: Option<u64>,
    pub duplex: Option<String>,
}

/// Parse `ifconfig IF` output: `mtu N` on the first line, and the `media:` line, e.g.
/// `media: Ethernet autoselect (1000baseT <full-duplex>)` → 1 Gbit/s, full.
#[cfg_attr(not(any(target_os = "freebsd", target_os = "macos", test)), allow(dead_code))]
pub fn parse_ifconfig(text: &str) -> IfconfigFacts {
    let mut facts = IfconfigFacts::default();
    for line in text.lines() {
        let line = line.trim();
        if facts.mtu.is_none() {
            let words: Vec<&str> = line.split_whitespace().collect();
            if let Some(i) = words.iter().position(|w| *w == "mtu") {
                facts.mtu = words.get(i + 1).and_then(|v| v.parse().ok());
            }
        }
        if let Some(media) = line.strip_prefix("media:") {
            // The active medium is in parentheses when autoselected.
            let active = match (media.find('('), media.rfind(')')) {
                (Some(a), Some(b)) if a < b => &media[a + 1..b],
                _ => media,
            };
            facts.speed_bps = active.split_whitespace().find_map(media_speed_bps);
            let lower = active.to_ascii_lowercase();
            facts.duplex = if lower.contains("full-duplex") {
                Some("full".to_string())
            } else if lower.contains("half-duplex") {
                Some("half".to_string())
            } else {
                None
            };
        }
    }
    facts
}

/// "1000baseT" → 1e9, "10Gbase-T" → 1e10, "2500Base-T" → 2.5e9, "100baseTX" → 1e8.
#[cfg_attr(not(any(target_os = "freebsd", target_os = "macos", test)), allow(dead_code))]
pub fn media_speed_bps(word: &str) -> Option<u64> {
    let lower = word.to_ascii_lowercase();
    let prefix = &lower[..lower.find("base")?];
    let (digits, unit) = match prefix.strip_suffix('g') {
        Some(d) => (d, 1_000_000_000u64),
        None => (prefix.strip_suffix('m').unwrap_or(prefix), 1_000_000u64),
    };
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse::<u64>().ok()?.checked_mul(unit)
}

#[cfg(target_os = "linux")]
mod linux {
    use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
    use std::path::Path;
    use std::time::Duration;

    use futures::TryStreamExt;
    use rtnetlink::RouteMessageBuilder;
    use rtnetlink::packet_route::link::LinkAttribute;
    use rtnetlink::packet_route::route::{RouteAddress, RouteAttribute, RouteMetric};

    use super::{LinkFacts, SYSFS_NET, read_link_sysfs, udp_source};

    /// The kernel's answer to "route get ADDR".
    #[derive(Debug, Default)]
    pub(super) struct RouteInfo {
        pub oif: Option<u32>,
        pub ifname: Option<String>,
        pub prefsrc: Option<IpAddr>,
        pub gateway: Option<IpAddr>,
        pub mtu: Option<u32>,
    }

    pub(super) async fn facts(addr: IpAddr) -> LinkFacts {
        let mut facts = LinkFacts::default();
        let route = tokio::time::timeout(Duration::from_secs(2), route_get(addr))
            .await
            .unwrap_or_else(|_| Err("netlink gave no answer within 2 s".to_string()));
        match route {
            Ok(r) => {
                if r.ifname.is_none()
                    && let Some(i) = r.oif
                {
                    facts.notes.push(format!("interface index {i} has no name"));
                }
                facts.interface = r.ifname;
                facts.source = r.prefsrc;
                facts.gateway = r.gateway;
                facts.route_mtu = r.mtu;
            }
            Err(e) => facts.notes.push(format!("could not look up the route to {addr}: {e}")),
        }
        if facts.source.is_none() {
            facts.source = udp_source(addr);
        }
        if let Some(ifname) = facts.interface.clone() {
            let sys = read_link_sysfs(Path::new(SYSFS_NET), &ifname);
            facts.speed_bps = sys.speed_bps;
            facts.duplex = sys.duplex;
            facts.mtu = sys.mtu;
            facts.notes.extend(sys.notes);
        }
        facts
    }

    fn ip_of(a: &RouteAddress) -> Option<IpAddr> {
        match a {
            RouteAddress::Inet(v4) => Some(IpAddr::V4(*v4)),
            RouteAddress::Inet6(v6) => Some(IpAddr::V6(*v6)),
            _ => None,
        }
    }

    /// RTM_GETROUTE for `addr` (what `ip route get ADDR` does), then the oif's name.
    pub(super) async fn route_get(addr: IpAddr) -> Result<RouteInfo, String> {
        let (connection, handle, _) = rtnetlink::new_connection().map_err(|e| format!("netlink socket: {e}"))?;
        let conn = tokio::spawn(connection);
        let result = async {
            let request = match addr {
                IpAddr::V4(a) => RouteMessageBuilder::<Ipv4Addr>::new().destination_prefix(a, 32).build(),
                IpAddr::V6(a) => RouteMessageBuilder::<Ipv6Addr>::new()
                    .destination_prefix(a, 128)
                    .build(),
            };
            let route = handle
                .route()
                .get(request)
                .execute()
                .try_next()
                .await
                .map_err(|e| e.to_string())?
                .ok_or_else(|| "the kernel returned no route".to_string())?;
            let mut info = RouteInfo::default();
            for attr in &route.attributes {
                match attr {
                    RouteAttribute::Oif(i) => info.oif = Some(*i),
                    RouteAttribute::PrefSource(a) => info.prefsrc = ip_of(a),
                    RouteAttribute::Gateway(a) => info.gateway = ip_of(a),
                    RouteAttribute::Metrics(metrics) => {
                        for m in metrics {
                            if let RouteMetric::Mtu(mtu) = m
                                && *mtu > 0
                            {
                                info.mtu = Some(*mtu);
                            }
                        }
                    }
                    _ => {}
                }
            }
            if let Some(index) = info.oif
                && let Ok(Some(link)) = handle.link().get().match_index(index).execute().try_next().await
            {
                info.ifname = link.attributes.into_iter().find_map(|a| match a {
                    LinkAttribute::IfName(n) => Some(n),
                    _ => None,
                });
            }
            Ok(info)
        }
        .await;
        conn.abort();
        result
    }
}

#[cfg(any(target_os = "freebsd", target_os = "macos"))]
mod bsd {
    use std::net::IpAddr;
    use std::process::Command;

    use super::{LinkFacts, parse_ifconfig, parse_route_get, speed_unknown_note, udp_source};

    pub(super) async fn facts(addr: IpAddr) -> LinkFacts {
        tokio::task::spawn_blocking(move || facts_blocking(addr))
            .await
            .unwrap_or_else(|e| LinkFacts {
                notes: vec![format!("could not read the link facts: {e}")],
                ..LinkFacts::default()
            })
    }

    fn run(cmd: &mut Command) -> Result<String, String> {
        let program = cmd.get_program().to_string_lossy().into_owned();
        let out = cmd.output().map_err(|e| format!("{program}: {e}"))?;
        if !out.status.success() {
            let stderr = String::from_utf8_lossy(&out.stderr);
            let first = stderr.lines().next().unwrap_or_default().trim().to_string();
            return Err(format!("{program} failed ({}): {first}", out.status));
        }
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    }

    fn facts_blocking(addr: IpAddr) -> LinkFacts {
        let mut facts = LinkFacts::default();
        let mut route = Command::new("/sbin/route");
        route.arg("-n").arg("get");
        if addr.is_ipv6() {
            route.arg("-inet6");
        }
        route.arg(addr.to_string());
        match run(&mut route) {
            Ok(text) => {
                let r = parse_route_get(&text);
                facts.interface = r.interface;
                facts.gateway = r.gateway;
                facts.route_mtu = r.mtu;
            }
            Err(e) => facts.notes.push(format!("could not look up the route to {addr}: {e}")),
        }
        facts.source = udp_source(addr);
        if let Some(ifname) = facts.interface.clone() {
            match run(Command::new("/sbin/ifconfig").arg(&ifname)) {
                Ok(text) => {
                    let i = parse_ifconfig(&text);
                    facts.mtu = i.mtu;
                    facts.speed_bps = i.speed_bps;
                    facts.duplex = i.duplex;
                }
                Err(e) => facts.notes.push(format!("could not read {ifname}: {e}")),
            }
            if facts.speed_bps.is_none() {
                facts.notes.push(speed_unknown_note(&ifname));
            }
        }
        facts
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;

    fn fake_if(root: &Path, name: &str, files: &[(&str, &str)]) {
        let dir = root.join(name);
        fs::create_dir_all(&dir).expect("mkdir");
        for (f, content) in files {
            fs::write(dir.join(f), content).expect("write");
        }
    }

    #[test]
    fn sysfs_physical_nic() {
        let tmp = tempfile::tempdir().expect("tempdir");
        fake_if(
            tmp.path(),
            "eth0",
            &[("speed", "10000\n"), ("duplex", "full\n"), ("mtu", "9000\n")],
        );
        let f = read_link_sysfs(tmp.path(), "eth0");
        assert_eq!(f.interface.as_deref(), Some("eth0"));
        assert_eq!(f.speed_bps, Some(10_000_000_000));
        assert_eq!(f.duplex.as_deref(), Some("full"));
        assert_eq!(f.mtu, Some(9000));
        assert!(f.notes.is_empty(), "{:?}", f.notes);
    }

    #[test]
    fn sysfs_unknown_speed() {
        let tmp = tempfile::tempdir().expect("tempdir");
        // virtio without a configured speed, TUN (speed file unreadable: EINVAL, here missing).
        fake_if(
            tmp.path(),
            "ens3",
            &[("speed", "-1\n"), ("duplex", "unknown\n"), ("mtu", "1500\n")],
        );
        fake_if(tmp.path(), "tun0", &[("mtu", "1420\n")]);
        let f = read_link_sysfs(tmp.path(), "ens3");
        assert_eq!(f.speed_bps, None);
        assert_eq!(f.duplex, None);
        assert_eq!(f.mtu, Some(1500));
        assert_eq!(
            f.notes,
            vec!["speed of ens3 is not reported (virtual NIC, TUN or cloud)"]
        );
        let t = read_link_sysfs(tmp.path(), "tun0");
        assert_eq!((t.speed_bps, t.mtu), (None, Some(1420)));
        assert_eq!(t.notes, vec![speed_unknown_note("tun0")]);
    }

    #[test]
    fn sysfs_virtual_device_speed_is_nominal() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let real = tmp.path().join("devices/virtual/net");
        fake_if(
            &real,
            "veth0",
            &[("speed", "10000\n"), ("duplex", "full\n"), ("mtu", "1500\n")],
        );
        let class = tmp.path().join("class/net");
        fs::create_dir_all(&class).expect("mkdir");
        std::os::unix::fs::symlink(real.join("veth0"), class.join("veth0")).expect("symlink");
        let f = read_link_sysfs(&class, "veth0");
        assert_eq!(f.speed_bps, None);
        assert_eq!(f.mtu, Some(1500));
        assert!(f.notes[0].contains("nominal"), "{:?}", f.notes);
    }

    #[test]
    fn sysfs_missing_or_bad_names() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let f = read_link_sysfs(tmp.path(), "nope0");
        assert_eq!(f.mtu, None);
        assert_eq!(f.notes.len(), 1);
        let f = read_link_sysfs(tmp.path(), "../etc");
        assert!(f.notes[0].starts_with("invalid interface name"));
    }

    #[test]
    fn sysfs_real_loopback() {
        let f = read_link_sysfs(Path::new(SYSFS_NET), "lo");
        assert_eq!(f.speed_bps, None);
        assert!(f.mtu.is_some());
        assert_eq!(f.notes, vec![speed_unknown_note("lo")]);
    }

    const FREEBSD_ROUTE: &str = "   route to: 198.18.5.9
destination: default
       mask: default
    gateway: 198.18.0.1
        fib: 0
  interface: em0
      flags: <UP,GATEWAY,DONE,STATIC>
 recvpipe  sendpipe  ssthresh  rtt,msec    mtu        weight    expire
       0         0         0         0      1500         1         0 
";

    const MACOS_ROUTE: &str = "   route to: 198.18.5.9
destination: default
       mask: default
    gateway: 198.18.0.1
  interface: en0
      flags: <UP,GATEWAY,DONE,STATIC,PRCLONING,GLOBAL>
 recvpipe  sendpipe  ssthresh  rtt,msec    rttvar  hopcount      mtu     expire
       0         0         0         0         0         0      1500         0 
";

    const MACOS_ROUTE_V6_LINKLOCAL: &str = "   route to: fe80::1
destination: fe80::
       mask: ffff:ffff:ffff:ffff::
    gateway: fe80::1%en0
  interface: en0
      flags: <UP,GATEWAY,DONE,WASCLONED>
 recvpipe  sendpipe  ssthresh  rtt,msec    rttvar  hopcount      mtu     expire
       0         0         0         0         0         0      1480         0 
";

    const LOCAL_ROUTE: &str = "   route to: 127.0.0.1
destination: 127.0.0.1
  interface: lo0
      flags: <UP,HOST,DONE,STATIC>
 recvpipe  sendpipe  ssthresh  rtt,msec    mtu        weight    expire
       0         0         0         0     16384         1         0 
";

    #[test]
    fn route_get_parses() {
        let expect = |ifname: &str, gw: Option<&str>, mtu| RouteGetFacts {
            interface: Some(ifname.to_string()),
            gateway: gw.and_then(|g| g.parse().ok()),
            mtu: Some(mtu),
        };
        assert_eq!(parse_route_get(FREEBSD_ROUTE), expect("em0", Some("198.18.0.1"), 1500));
        assert_eq!(parse_route_get(MACOS_ROUTE), expect("en0", Some("198.18.0.1"), 1500));
        assert_eq!(
            parse_route_get(MACOS_ROUTE_V6_LINKLOCAL),
            expect("en0", Some("fe80::1"), 1480)
        );
        assert_eq!(parse_route_get(LOCAL_ROUTE), expect("lo0", None, 16384));
        assert_eq!(
            parse_route_get("route: writing to routing socket: not in table\n"),
            RouteGetFacts::default()
        );
    }

    const FREEBSD_IFCONFIG: &str = "em0: flags=8843<UP,BROADCAST,RUNNING,SIMPLEX,MULTICAST> metric 0 mtu 1500
\toptions=481009b<RXCSUM,TXCSUM,VLAN_MTU,VLAN_HWTAGGING,VLAN_HWCSUM,VLAN_HWFILTER,NOMAP>
\tether 08:00:27:00:00:01
\tinet 198.18.0.2 netmask 0xffffff00 broadcast 198.18.0.255
\tmedia: Ethernet autoselect (1000baseT <full-duplex>)
\tstatus: active
\tnd6 options=29<PERFORMNUD,IFDISABLED,AUTO_LINKLOCAL>
";

    const MACOS_IFCONFIG_10G: &str = "en8: flags=8863<UP,BROADCAST,SMART,RUNNING,SIMPLEX,MULTICAST> mtu 9000
\toptions=6467<RXCSUM,TXCSUM,VLAN_MTU,TSO4,TSO6,CHANNEL_IO,PARTIAL_CSUM,ZEROINVERT_CSUM>
\tether 00:00:5e:00:53:01
\tmedia: autoselect (10Gbase-T <full-duplex,flow-control>)
\tstatus: active
";

    const MACOS_WIFI: &str = "en0: flags=8863<UP,BROADCAST,SMART,RUNNING,SIMPLEX,MULTICAST> mtu 1500
\tether 00:00:5e:00:53:02
\tmedia: autoselect
\tstatus: active
";

    const FREEBSD_FIXED_HALF: &str = "re0: flags=8843<UP,BROADCAST,RUNNING,SIMPLEX,MULTICAST> metric 0 mtu 1500
\tmedia: Ethernet 100baseTX <half-duplex>
\tstatus: active
";

    #[test]
    fn ifconfig_parses() {
        assert_eq!(
            parse_ifconfig(FREEBSD_IFCONFIG),
            IfconfigFacts {
                mtu: Some(1500),
                speed_bps: Some(1_000_000_000),
                duplex: Some("full".into())
            }
        );
        assert_eq!(
            parse_ifconfig(MACOS_IFCONFIG_10G),
            IfconfigFacts {
                mtu: Some(9000),
                speed_bps: Some(10_000_000_000),
                duplex: Some("full".into())
            }
        );
        assert_eq!(
            parse_ifconfig(MACOS_WIFI),
            IfconfigFacts {
                mtu: Some(1500),
                speed_bps: None,
                duplex: None
            }
        );
        assert_eq!(
            parse_ifconfig(FREEBSD_FIXED_HALF),
            IfconfigFacts {
                mtu: Some(1500),
                speed_bps: Some(100_000_000),
                duplex: Some("half".into())
            }
        );
        assert_eq!(
            parse_ifconfig("lo0: flags=8049<UP,LOOPBACK,RUNNING,MULTICAST> mtu 16384\n").mtu,
            Some(16384)
        );
    }

    #[test]
    fn media_words() {
        assert_eq!(media_speed_bps("2500Base-T"), Some(2_500_000_000));
        assert_eq!(media_speed_bps("25GBase-SR"), Some(25_000_000_000));
        assert_eq!(media_speed_bps("(1000baseT"), None);
        assert_eq!(media_speed_bps("autoselect"), None);
        assert_eq!(media_speed_bps("base"), None);
    }

    #[test]
    fn udp_source_of_loopback() {
        assert_eq!(
            udp_source("127.0.0.1".parse().expect("ip")),
            Some("127.0.0.1".parse().expect("ip"))
        );
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn loopback_route_is_lo() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime");
        let f = rt.block_on(link_facts("127.0.0.1".parse().expect("ip")));
        assert_eq!(f.interface.as_deref(), Some("lo"), "{f:?}");
        assert_eq!(f.source, Some("127.0.0.1".parse().expect("ip")));
        assert_eq!(f.gateway, None);
        assert_eq!(f.speed_bps, None);
        assert!(f.mtu.is_some());
        assert!(f.notes.contains(&speed_unknown_note("lo")), "{:?}", f.notes);
    }
}
