//! The path prober of `advise --ssh`: the command's own prober, with the path test to the far
//! end pointed at the peer its session started (that peer's kind and port), the session
//! checked once the test is over (a test whose session dropped under it is no evidence), and a
//! port nothing answers on said as what it is: a firewall, and the advice goes on unmeasured.

use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

use super::{Opening, PeerKind};
use crate::error::Error;
use crate::measure::evidence::Evidence;
use crate::measure::{EvidenceRequest, HostMeasurement, PathProber, ProbeOptions, TestMode};

/// `inner`, with the far end's test aimed at its session's peer. The probes run while the
/// session is being set up; the test waits for its peer.
pub struct FarProber<'a> {
    pub inner: &'a dyn PathProber,
    pub far: &'a Opening,
}

impl PathProber for FarProber<'_> {
    fn measure(&self, hosts: &[String], opts: &ProbeOptions) -> Result<Vec<HostMeasurement>, Error> {
        self.inner.measure(hosts, opts)
    }

    fn route_toward(&self, dest: std::net::IpAddr) -> crate::route::RouteFacts {
        self.inner.route_toward(dest)
    }

    fn evidence(&self, m: &HostMeasurement, req: &EvidenceRequest, opts: &ProbeOptions) -> Result<Evidence, Error> {
        if m.host != self.far.host() || req.mode == TestMode::Off {
            return self.inner.evidence(m, req, opts);
        }
        let far = self.far.wait()?;
        let Some(peer) = &far.peer else {
            return self.inner.evidence(m, req, opts);
        };
        let aimed = EvidenceRequest {
            mode: match peer.kind {
                PeerKind::Tcptune => TestMode::Tcptune,
                PeerKind::Iperf3 => TestMode::Iperf3,
            },
            port: Some(peer.port),
            ..req.clone()
        };
        let sa = SocketAddr::new(m.addr, peer.port);
        let blocked = || {
            format!(
                "nothing answers on TCP port {} of {} ({}), where the far end's {} listens (started over SSH): \
                 a firewall on the far end or on the way blocks it; open that port to this host for a path test",
                peer.port,
                crate::text::escape(&m.host),
                m.addr,
                peer.describe()
            )
        };
        let untested = || {
            self.inner.evidence(
                m,
                &EvidenceRequest {
                    mode: TestMode::Off,
                    ..req.clone()
                },
                opts,
            )
        };
        let session = self.far.session();
        let skipped = |why: String| -> Result<Evidence, Error> {
            let mut ev = untested()?;
            ev.test_skipped = Some(why);
            Ok(ev)
        };
        // A peer that has ended (its lifetime passed during a long probe phase) is said as
        // such, not tested, and not taken for a firewall.
        session.drain();
        if let Some(ended) = session.peer_ended(Duration::ZERO) {
            return skipped(format!("{ended} before the test"));
        }
        // iperf3's client would wait out a SYN timeout (minutes) on a port that drops: asked
        // first, as iperf3 -s serves on after a bare connection. tcptune's own test connects
        // within a few round trips, and its peer (which serves two tests) is not asked.
        if peer.kind == PeerKind::Iperf3 {
            if !answers(sa, crate::measure::connect_timeout(m.rtt.max_ms)) {
                session.check()?;
                return skipped(self.nobody_answers(&blocked));
            }
            // iperf3 -s reopens its port after that connection, and resets a connection made
            // before it has: the test starts once the far end says it listens again (or, not
            // said, after a while anyway).
            session.wait_ready(READY_WAIT + crate::measure::connect_timeout(m.rtt.max_ms));
        }
        let got = self.inner.evidence(m, &aimed, opts);
        session.check()?;
        let tested = matches!(&got, Ok(ev) if ev.test.is_some());
        if tested || peer.kind == PeerKind::Iperf3 || answers(sa, crate::measure::connect_timeout(m.rtt.max_ms)) {
            return got;
        }
        // Nothing answers where the peer listened: it ended, or a firewall there or on the
        // way blocks it. The advice goes on without a test, saying which.
        let mut ev = match got {
            Ok(ev) => ev,
            Err(_) => untested()?,
        };
        ev.test_skipped = Some(self.nobody_answers(&blocked));
        Ok(ev)
    }
}

impl FarProber<'_> {
    /// Why nothing answers where the far end's peer listened: it ended (said within a moment
    /// by the far end), else `blocked` (a firewall).
    fn nobody_answers(&self, blocked: &dyn Fn() -> String) -> String {
        match self.far.session().peer_ended(Duration::from_millis(500)) {
            Some(ended) => format!("{ended} before the test"),
            None => blocked(),
        }
    }
}

/// How long the far end's iperf3 -s may take to listen again after the bare connection.
const READY_WAIT: Duration = Duration::from_secs(3);

/// Whether a TCP connect to `sa` succeeds within `timeout`.
fn answers(sa: SocketAddr, timeout: Duration) -> bool {
    TcpStream::connect_timeout(&sa, timeout).is_ok()
}
