//! The kernel's routes through rtnetlink: the lookup for a destination (RTM_GETROUTE, plain and
//! `fibmatch`), the host routes of the main table, and writing one route (RTM_NEWROUTE with
//! NLM_F_EXCL to add, NLM_F_REPLACE to replace; RTM_DELROUTE). Each call opens its own netlink
//! socket on a small runtime of its own and waits at most [`TIMEOUT`].
//!
//! # Platform specific behavior
//! Linux only; elsewhere every call is [`super::unsupported`].

use crate::error::Error;

/// The longest a netlink answer may take.
pub const TIMEOUT: std::time::Duration = std::time::Duration::from_secs(5);

#[cfg(target_os = "linux")]
pub use linux::{add, add_new, delete, device_name, host_routes, lookup, replace, tcptune_routes};

/// What this machine's kernel says of the way to `dest`: its lookup ([`lookup`]) and the host
/// routes to it ([`host_routes`]), read together (an error of either said in the lookup).
pub fn toward(dest: std::net::IpAddr) -> super::RouteFacts {
    let lookup = lookup(dest).map_err(|e| e.to_string());
    match host_routes(dest) {
        Ok(existing) => super::RouteFacts { dest, lookup, existing },
        Err(e) => super::RouteFacts {
            dest,
            lookup: Err(e.to_string()),
            existing: Vec::new(),
        },
    }
}

#[cfg(not(target_os = "linux"))]
mod other {
    use std::net::IpAddr;

    use super::super::{Lookup, Route};
    use super::Error;
    pub fn lookup(_: IpAddr) -> Result<Lookup, Error> {
        Err(super::super::unsupported())
    }
    pub fn host_routes(_: IpAddr) -> Result<Vec<Route>, Error> {
        Err(super::super::unsupported())
    }
    pub fn tcptune_routes() -> Result<Vec<Route>, Error> {
        Err(super::super::unsupported())
    }
    pub fn add(_: &Route) -> Result<(), Error> {
        Err(super::super::unsupported())
    }
    pub fn add_new(_: &Route) -> Result<bool, Error> {
        Err(super::super::unsupported())
    }
    pub fn replace(_: &Route) -> Result<(), Error> {
        Err(super::super::unsupported())
    }
    pub fn delete(_: &Route) -> Result<(), Error> {
        Err(super::super::unsupported())
    }
    pub fn device_name(_: u32) -> Result<Option<String>, Error> {
        Err(super::super::unsupported())
    }
}
#[cfg(not(target_os = "linux"))]
pub use other::{add, add_new, delete, device_name, host_routes, lookup, replace, tcptune_routes};

#[cfg(target_os = "linux")]
mod linux {
    use std::collections::BTreeMap;
    use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

    use futures::TryStreamExt as _;
    use rtnetlink::packet_route::AddressFamily;
    use rtnetlink::packet_route::link::LinkAttribute;
    use rtnetlink::packet_route::route::{
        RouteAddress, RouteAttribute, RouteFlags, RouteHeader, RouteMessage, RouteMetric, RoutePreference,
        RouteProtocol, RouteScope, RouteType,
    };
    use rtnetlink::{Handle, RouteMessageBuilder};

    use super::super::{Lookup, MAIN_TABLE, METRICS, Route, full_len};
    use super::{Error, TIMEOUT};

    /// Run `f` with a netlink handle on a runtime of its own, at most [`TIMEOUT`].
    fn with_handle<T, Fut>(what: &str, f: impl FnOnce(Handle) -> Fut) -> Result<T, Error>
    where
        Fut: std::future::Future<Output = Result<T, Error>>,
    {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| Error::system(format!("{what}: cannot start a runtime: {e}")))?;
        rt.block_on(async {
            let (conn, handle, _) =
                rtnetlink::new_connection().map_err(|e| Error::system(format!("{what}: netlink socket: {e}")))?;
            let task = tokio::spawn(conn);
            let out = tokio::time::timeout(TIMEOUT, f(handle))
                .await
                .unwrap_or_else(|_| Err(Error::system(format!("{what}: netlink gave no answer within 5 s"))));
            task.abort();
            out
        })
    }

    /// The kernel's error, worded: EPERM is a refusal (exit 3), as is any other the kernel
    /// gives a route it will not take.
    fn refused(what: &str, e: &rtnetlink::Error) -> Error {
        Error::not_permitted(format!("{what}: {}", kernel_says(e)))
    }

    /// The errno of a kernel's refusal, positive (EINVAL: 22).
    fn errno(e: &rtnetlink::Error) -> Option<i32> {
        match e {
            rtnetlink::Error::NetlinkError(m) => m.code.map(|c| -c.get()),
            _ => None,
        }
    }

    /// The route type a lookup's error stands for: a blackhole route answers EINVAL, an
    /// unreachable one EHOSTUNREACH, a prohibit one EACCES (the kernel's fib_props), no route
    /// at all ENETUNREACH (type 0 here).
    fn kind_of_error(errno: i32) -> Option<u8> {
        Some(match errno {
            libc::EINVAL => 6,
            libc::EHOSTUNREACH => 7,
            libc::EACCES => 8,
            libc::ENETUNREACH => 0,
            _ => return None,
        })
    }

    /// The kernel's errno as words ("Network is unreachable").
    fn kernel_says(e: &rtnetlink::Error) -> String {
        match e {
            rtnetlink::Error::NetlinkError(m) => match m.code {
                Some(c) => std::io::Error::from_raw_os_error(-c.get()).to_string(),
                None => "the kernel refused it".to_string(),
            },
            other => other.to_string(),
        }
    }

    fn ip_of(a: &RouteAddress) -> Option<IpAddr> {
        match a {
            RouteAddress::Inet(v4) => Some(IpAddr::V4(*v4)),
            RouteAddress::Inet6(v6) => Some(IpAddr::V6(*v6)),
            _ => None,
        }
    }

    fn get_request(dest: IpAddr, fib_match: bool) -> RouteMessage {
        let mut m = match dest {
            IpAddr::V4(a) => RouteMessageBuilder::<Ipv4Addr>::new().destination_prefix(a, 32).build(),
            IpAddr::V6(a) => RouteMessageBuilder::<Ipv6Addr>::new()
                .destination_prefix(a, 128)
                .build(),
        };
        // The table the lookup ended in: without RTM_F_LOOKUP_TABLE the kernel says main,
        // whichever table an ip rule chose.
        m.header.flags |= RouteFlags::LookupTable;
        if fib_match {
            m.header.flags |= RouteFlags::FibMatch;
        }
        m
    }

    async fn ifname(handle: &Handle, index: u32) -> Option<String> {
        let link = handle
            .link()
            .get()
            .match_index(index)
            .execute()
            .try_next()
            .await
            .ok()??;
        link.attributes.into_iter().find_map(|a| match a {
            LinkAttribute::IfName(n) => Some(n),
            _ => None,
        })
    }

    /// The name of the device with index `index` now; None when there is none.
    pub fn device_name(index: u32) -> Result<Option<String>, Error> {
        with_handle("reading the interfaces", |handle| async move {
            Ok(ifname(&handle, index).await)
        })
    }

    /// What the kernel uses for `dest` today: `ip route get` and `ip route get fibmatch`.
    pub fn lookup(dest: IpAddr) -> Result<Lookup, Error> {
        let what = format!("looking up the route to {dest}");
        with_handle(&what.clone(), |handle| async move {
            let plain = match handle.route().get(get_request(dest, false)).execute().try_next().await {
                Ok(Some(m)) => m,
                Ok(None) => return Err(Error::measurement(format!("{what}: the kernel returned no route"))),
                // A route that is no path answers with its error (fib_props): the lookup's
                // answer is then its type, which the caller refuses.
                Err(e) => match errno(&e).and_then(kind_of_error) {
                    Some(kind) => return Ok(Lookup::new(dest, MAIN_TABLE, kind)),
                    None => return Err(Error::measurement(format!("{what}: {}", kernel_says(&e)))),
                },
            };
            let mut l = Lookup::new(dest, table_of(&plain), u8::from(plain.header.kind));
            for a in &plain.attributes {
                match a {
                    RouteAttribute::Gateway(g) => l.gateway = ip_of(g),
                    RouteAttribute::Oif(i) => l.oif = Some(*i),
                    RouteAttribute::PrefSource(s) => l.prefsrc = ip_of(s),
                    _ => {}
                }
            }
            if let Some(i) = l.oif {
                l.dev = ifname(&handle, i).await;
            }
            // A kernel before 4.13 has no fibmatch: the metrics are then the resolved route's.
            let matched = handle.route().get(get_request(dest, true)).execute().try_next().await;
            if let Ok(Some(m)) = matched {
                match from_message(&m) {
                    Ok(mut r) => {
                        r.dev = l.dev.clone();
                        l.matched = Some(r);
                    }
                    Err(why) => l.uncopyable = Some(why),
                }
            }
            Ok(l)
        })
    }

    fn table_of(m: &RouteMessage) -> u32 {
        m.attributes
            .iter()
            .find_map(|a| match a {
                RouteAttribute::Table(t) => Some(*t),
                _ => None,
            })
            .unwrap_or(u32::from(m.header.table))
    }

    /// Every route of the main table of `family`, as read.
    async fn dump(handle: &Handle, family: AddressFamily) -> Result<Vec<RouteMessage>, Error> {
        let mut m = RouteMessage::default();
        m.header.address_family = family;
        handle
            .route()
            .get(m)
            .execute()
            .try_collect()
            .await
            .map_err(|e| refused("reading the routes", &e))
    }

    /// The host routes (/32, /128) to `dest` in the main table for tos 0 (ordinary
    /// connections), each with its device's name.
    pub fn host_routes(dest: IpAddr) -> Result<Vec<Route>, Error> {
        with_handle("reading the routes", |handle| async move {
            let family = if dest.is_ipv4() {
                AddressFamily::Inet
            } else {
                AddressFamily::Inet6
            };
            let mut out = Vec::new();
            for m in dump(&handle, family).await? {
                // The route of ordinary connections (tos 0): a route for one tos only is not
                // the one they take, and tcptune neither copies nor changes it.
                if table_of(&m) != MAIN_TABLE
                    || m.header.destination_prefix_length != full_len(dest)
                    || m.header.tos != 0
                {
                    continue;
                }
                let dst = m.attributes.iter().find_map(|a| match a {
                    RouteAttribute::Destination(d) => ip_of(d),
                    _ => None,
                });
                if dst != Some(dest) {
                    continue;
                }
                let mut r = from_message(&m).map_err(|why| {
                    Error::not_permitted(format!("the host route to {dest} {why}: tcptune leaves it alone"))
                })?;
                if let Some(i) = r.oif {
                    r.dev = ifname(&handle, i).await;
                }
                out.push(r);
            }
            Ok(out)
        })
    }

    /// Every route of the main tables that tcptune added ([`super::super::PROTO`]).
    pub fn tcptune_routes() -> Result<Vec<Route>, Error> {
        with_handle("reading the routes", |handle| async move {
            let mut out = Vec::new();
            for family in [AddressFamily::Inet, AddressFamily::Inet6] {
                // A kernel without IPv6 refuses the second dump: IPv4 alone is still an answer.
                let Ok(all) = dump(&handle, family).await else { continue };
                for m in all {
                    if u8::from(m.header.protocol) != super::super::PROTO || table_of(&m) != MAIN_TABLE {
                        continue;
                    }
                    if let Ok(mut r) = from_message(&m) {
                        if let Some(i) = r.oif {
                            r.dev = ifname(&handle, i).await;
                        }
                        out.push(r);
                    }
                }
            }
            Ok(out)
        })
    }

    /// A route message as a [`Route`]; Err names what tcptune cannot copy whole.
    pub(super) fn from_message(m: &RouteMessage) -> Result<Route, String> {
        let h = &m.header;
        let mut r = Route {
            dst: match h.address_family {
                AddressFamily::Inet6 => IpAddr::V6(Ipv6Addr::UNSPECIFIED),
                _ => IpAddr::V4(Ipv4Addr::UNSPECIFIED),
            },
            dst_len: h.destination_prefix_length,
            table: table_of(m),
            protocol: u8::from(h.protocol),
            scope: u8::from(h.scope),
            kind: u8::from(h.kind),
            tos: h.tos,
            flags: h.flags.bits() & 4,
            gateway: None,
            oif: None,
            dev: None,
            prefsrc: None,
            priority: None,
            pref: None,
            metrics: BTreeMap::new(),
            lock: 0,
            congctl: None,
        };
        if h.source_prefix_length != 0 {
            return Err("is source-specific (from a prefix)".into());
        }
        for a in &m.attributes {
            attribute(&mut r, a)?;
        }
        Ok(r)
    }

    fn attribute(r: &mut Route, a: &RouteAttribute) -> Result<(), String> {
        match a {
            RouteAttribute::Destination(d) => r.dst = ip_of(d).ok_or("has a destination that is no IP address")?,
            RouteAttribute::Gateway(g) => r.gateway = Some(ip_of(g).ok_or("has a gateway that is no IP address")?),
            RouteAttribute::Oif(i) => r.oif = Some(*i),
            RouteAttribute::PrefSource(s) => r.prefsrc = ip_of(s),
            RouteAttribute::Priority(p) => r.priority = Some(*p),
            RouteAttribute::Preference(p) => r.pref = Some(u8::from(*p)),
            RouteAttribute::Metrics(ms) => {
                for m in ms {
                    metric(r, m)?;
                }
            }
            RouteAttribute::MultiPath(hops) => {
                return Err(format!(
                    "is multipath ({} next hops): tcptune copies single-path routes only",
                    hops.len()
                ));
            }
            RouteAttribute::NhId(id) => {
                return Err(format!("uses nexthop object {id}: tcptune copies plain routes only"));
            }
            RouteAttribute::Encap(_) | RouteAttribute::EncapType(_) => return Err("has an encapsulation".into()),
            RouteAttribute::Via(_) => return Err("has a next hop of another address family".into()),
            RouteAttribute::Realm(_) => return Err("has realms".into()),
            RouteAttribute::Expires(_) => return Err(super::super::expires(None)),
            // The kernel says a route's lifetime in its cache info (rta_expires, in USER_HZ
            // ticks): a host route copied from one that expires would outlive it, pinning the
            // destination to a router that may be gone; one replaced would lose its lifetime.
            RouteAttribute::CacheInfo(ci) if ci.expires != 0 => {
                return Err(super::super::expires(Some(ci.expires.div_ceil(100))));
            }
            // What a dump or a lookup reports beside the route itself.
            RouteAttribute::Table(_)
            | RouteAttribute::CacheInfo(_)
            | RouteAttribute::Uid(_)
            | RouteAttribute::Iif(_)
            | RouteAttribute::Mark(_) => {}
            other => return Err(format!("has an attribute tcptune does not copy ({other:?})")),
        }
        Ok(())
    }

    fn metric(r: &mut Route, m: &RouteMetric) -> Result<(), String> {
        let (kind, value) = match m {
            RouteMetric::Lock(v) => {
                r.lock = *v;
                return Ok(());
            }
            RouteMetric::CcAlgo(cc) => {
                r.congctl = Some(cc.clone());
                return Ok(());
            }
            RouteMetric::Mtu(v) => (2, *v),
            RouteMetric::Window(v) => (3, *v),
            RouteMetric::Rtt(v) => (4, *v),
            RouteMetric::RttVar(v) => (5, *v),
            RouteMetric::SsThresh(v) => (6, *v),
            RouteMetric::Cwnd(v) => (7, *v),
            RouteMetric::Advmss(v) => (8, *v),
            RouteMetric::Reordering(v) => (9, *v),
            RouteMetric::Hoplimit(v) => (10, *v),
            RouteMetric::InitCwnd(v) => (11, *v),
            RouteMetric::Features(v) => (12, *v),
            RouteMetric::RtoMin(v) => (13, *v),
            RouteMetric::InitRwnd(v) => (14, *v),
            RouteMetric::QuickAck(v) => (15, *v),
            RouteMetric::FastopenNoCookie(v) => (17, *v),
            other => return Err(format!("has a metric tcptune does not copy ({other:?})")),
        };
        r.metrics.insert(METRICS[kind].to_string(), value);
        Ok(())
    }

    fn metric_of(name: &str, v: u32) -> Option<RouteMetric> {
        Some(match name {
            "mtu" => RouteMetric::Mtu(v),
            "window" => RouteMetric::Window(v),
            "rtt" => RouteMetric::Rtt(v),
            "rttvar" => RouteMetric::RttVar(v),
            "ssthresh" => RouteMetric::SsThresh(v),
            "cwnd" => RouteMetric::Cwnd(v),
            "advmss" => RouteMetric::Advmss(v),
            "reordering" => RouteMetric::Reordering(v),
            "hoplimit" => RouteMetric::Hoplimit(v),
            "initcwnd" => RouteMetric::InitCwnd(v),
            "features" => RouteMetric::Features(v),
            "rto_min" => RouteMetric::RtoMin(v),
            "initrwnd" => RouteMetric::InitRwnd(v),
            "quickack" => RouteMetric::QuickAck(v),
            "fastopen_no_cookie" => RouteMetric::FastopenNoCookie(v),
            _ => return None,
        })
    }

    /// `r` as the request that makes (or names, to delete) it.
    pub(super) fn to_message(r: &Route) -> Result<RouteMessage, Error> {
        let family = if r.dst.is_ipv4() {
            AddressFamily::Inet
        } else {
            AddressFamily::Inet6
        };
        let mut m = RouteMessage::default();
        m.header = RouteHeader {
            address_family: family,
            destination_prefix_length: r.dst_len,
            source_prefix_length: 0,
            tos: r.tos,
            table: u8::try_from(r.table).unwrap_or(RouteHeader::RT_TABLE_UNSPEC),
            protocol: RouteProtocol::from(r.protocol),
            scope: RouteScope::from(r.scope),
            kind: RouteType::from(r.kind),
            flags: RouteFlags::from_bits_retain(r.flags & 4),
        };
        let a = &mut m.attributes;
        a.push(RouteAttribute::Table(r.table));
        a.push(RouteAttribute::Destination(r.dst.into()));
        a.extend(r.gateway.map(|g| RouteAttribute::Gateway(g.into())));
        a.extend(r.oif.map(RouteAttribute::Oif));
        a.extend(r.prefsrc.map(|s| RouteAttribute::PrefSource(s.into())));
        a.extend(r.priority.map(RouteAttribute::Priority));
        a.extend(r.pref.map(|p| RouteAttribute::Preference(RoutePreference::from(p))));
        let mut metrics = Vec::new();
        if r.lock != 0 {
            metrics.push(RouteMetric::Lock(r.lock));
        }
        for (name, v) in &r.metrics {
            metrics.push(metric_of(name, *v).ok_or_else(|| {
                Error::usage(format!(
                    "a route metric tcptune does not know: {}",
                    crate::text::escape(name)
                ))
            })?);
        }
        metrics.extend(r.congctl.clone().map(RouteMetric::CcAlgo));
        if !metrics.is_empty() {
            a.push(RouteAttribute::Metrics(metrics));
        }
        Ok(m)
    }

    /// Add `r`; refused if a route with its key is there already (NLM_F_EXCL).
    pub fn add(r: &Route) -> Result<(), Error> {
        match add_new(r)? {
            true => Ok(()),
            false => Err(Error::not_permitted(format!(
                "{}: {}",
                super::super::command("add", r),
                std::io::Error::from_raw_os_error(libc::EEXIST)
            ))),
        }
    }

    /// Add `r` where no route has its key: false (nothing written) when one is there already,
    /// as the kernel says (EEXIST under NLM_F_EXCL).
    pub fn add_new(r: &Route) -> Result<bool, Error> {
        let m = to_message(r)?;
        let what = super::super::command("add", r);
        with_handle(&what.clone(), |handle| async move {
            match handle.route().add(m).execute().await {
                Ok(()) => Ok(true),
                Err(e) if errno(&e) == Some(libc::EEXIST) => Ok(false),
                Err(e) => Err(refused(&what, &e)),
            }
        })
    }

    /// Replace the route with `r`'s key (table, prefix, tos, metric) by `r` (NLM_F_REPLACE).
    pub fn replace(r: &Route) -> Result<(), Error> {
        let m = to_message(r)?;
        let what = super::super::command("replace", r);
        with_handle(&what.clone(), |handle| async move {
            handle
                .route()
                .add(m)
                .replace()
                .execute()
                .await
                .map_err(|e| refused(&what, &e))
        })
    }

    /// Delete exactly `r`: its prefix, table, protocol, metric and next hop must match.
    pub fn delete(r: &Route) -> Result<(), Error> {
        let m = to_message(r)?;
        let what = super::super::command("del", r);
        with_handle(&what.clone(), |handle| async move {
            handle.route().del(m).execute().await.map_err(|e| refused(&what, &e))
        })
    }
}
