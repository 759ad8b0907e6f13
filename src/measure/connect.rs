//! TCP connect timing: the fallback when ICMP is not permitted or unanswered.
//!
//! A connect() costs one round trip whether the port is open (SYN → SYN-ACK) or closed
//! (SYN → RST, ECONNREFUSED): both are samples. A connect that times out is a lost sample.

use std::io;
use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use futures::future::join_all;
use tokio::net::TcpSocket;

use super::{Method, ProbeOptions, RttStats};

/// What the TCP attempt gave.
#[derive(Debug, Clone)]
pub enum TcpResult {
    /// The first port (in the given order) that answered at least once.
    Answered {
        port: u16,
        stats: RttStats,
        /// How many of the samples were refusals (RST).
        refused: u32,
    },
    /// No port answered.
    NoAnswer {
        /// Connects made to each port.
        per_port: u32,
        /// Connects that timed out (over all ports).
        timeouts: u32,
        /// Distinct other errors ("No route to host (os error 113)").
        errors: Vec<String>,
    },
}

/// The outcome of one connect().
#[derive(Debug, Clone, PartialEq)]
pub enum ConnectOutcome {
    /// SYN → SYN-ACK: the port is open.
    Connected(Duration),
    /// SYN → RST: the port is closed, but the host answered.
    Refused(Duration),
    TimedOut,
    Failed(String),
    /// Not sent: an earlier port in the list already answered.
    Skipped,
}

impl ConnectOutcome {
    pub fn rtt(&self) -> Option<Duration> {
        match self {
            Self::Connected(d) | Self::Refused(d) => Some(*d),
            _ => None,
        }
    }
}

/// When probe `i` is due: `start + i × interval`, saturating.
pub(crate) fn send_time(start: tokio::time::Instant, interval: Duration, i: u32) -> tokio::time::Instant {
    start.checked_add(interval.saturating_mul(i)).unwrap_or(start)
}

/// Time one connect() to `target`, at most `timeout`.
pub async fn connect_once(target: SocketAddr, timeout: Duration) -> ConnectOutcome {
    let socket = match if target.is_ipv4() {
        TcpSocket::new_v4()
    } else {
        TcpSocket::new_v6()
    } {
        Ok(s) => s,
        Err(e) => return ConnectOutcome::Failed(e.to_string()),
    };
    let t0 = Instant::now();
    let result = tokio::time::timeout(timeout, socket.connect(target)).await;
    let rtt = t0.elapsed();
    match result {
        // Dropping the stream closes it at once.
        Ok(Ok(_stream)) => ConnectOutcome::Connected(rtt),
        Ok(Err(e)) if e.kind() == io::ErrorKind::ConnectionRefused => ConnectOutcome::Refused(rtt),
        Ok(Err(e)) => ConnectOutcome::Failed(e.to_string()),
        Err(_) => ConnectOutcome::TimedOut,
    }
}

/// Time `opts.probes` connects, one every `opts.interval`, to each of `ports` (all ports start
/// together; a port stops sending once an earlier port in the list has answered) and return the
/// first port in `ports` order that answered. Takes about `probes × interval + timeout`.
/// `on_progress(n)` reports the number of finished connects to the busiest port.
pub async fn connect_probe(addr: IpAddr, ports: &[u16], opts: &ProbeOptions, on_progress: impl Fn(u64)) -> TcpResult {
    let best = AtomicUsize::new(usize::MAX);
    let done: Vec<AtomicU64> = ports.iter().map(|_| AtomicU64::new(0)).collect();
    let start = tokio::time::Instant::now();

    let per_port = ports.iter().enumerate().map(|(k, &port)| {
        let best = &best;
        let done = &done;
        let on_progress = &on_progress;
        let target = SocketAddr::new(addr, port);
        async move {
            let probes = (0..opts.probes).map(|i| async move {
                tokio::time::sleep_until(send_time(start, opts.interval, i)).await;
                if best.load(Ordering::Relaxed) < k {
                    return ConnectOutcome::Skipped;
                }
                let outcome = connect_once(target, opts.timeout).await;
                if outcome.rtt().is_some() {
                    best.fetch_min(k, Ordering::Relaxed);
                }
                if let Some(counter) = done.get(k) {
                    on_progress(counter.fetch_add(1, Ordering::Relaxed) + 1);
                }
                outcome
            });
            join_all(probes).await
        }
    });
    let results = join_all(per_port).await;
    summarize(ports, opts.probes, results)
}

/// Pick the first port with an answer; otherwise count what went wrong.
pub fn summarize(ports: &[u16], probes: u32, results: Vec<Vec<ConnectOutcome>>) -> TcpResult {
    for (&port, outcomes) in ports.iter().zip(&results) {
        let samples: Vec<f64> = outcomes
            .iter()
            .filter_map(ConnectOutcome::rtt)
            .map(|d| d.as_secs_f64() * 1000.0)
            .collect();
        if samples.is_empty() {
            continue;
        }
        let refused = outcomes
            .iter()
            .filter(|o| matches!(o, ConnectOutcome::Refused(_)))
            .count();
        return TcpResult::Answered {
            port,
            stats: RttStats::compute(Method::TcpConnect { port }, probes, samples),
            refused: u32::try_from(refused).unwrap_or(u32::MAX),
        };
    }
    let mut timeouts = 0u32;
    let mut errors: Vec<String> = Vec::new();
    for outcome in results.iter().flatten() {
        match outcome {
            ConnectOutcome::TimedOut => timeouts = timeouts.saturating_add(1),
            ConnectOutcome::Failed(e) if !errors.contains(e) && errors.len() < 3 => {
                errors.push(e.clone());
            }
            _ => {}
        }
    }
    TcpResult::NoAnswer {
        per_port: probes,
        timeouts,
        errors,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(v: u64) -> Duration {
        Duration::from_millis(v)
    }

    #[test]
    fn first_answering_port_wins_and_refusals_count() {
        let results = vec![
            vec![ConnectOutcome::TimedOut, ConnectOutcome::TimedOut],
            vec![ConnectOutcome::Refused(ms(2)), ConnectOutcome::Connected(ms(4))],
            vec![ConnectOutcome::Connected(ms(1)), ConnectOutcome::Skipped],
        ];
        match summarize(&[443, 22, 80], 2, results) {
            TcpResult::Answered { port, stats, refused } => {
                assert_eq!(port, 22);
                assert_eq!(refused, 1);
                assert_eq!(stats.method, Method::TcpConnect { port: 22 });
                assert_eq!((stats.sent, stats.received), (2, 2));
                assert!((stats.avg_ms - 3.0).abs() < 1e-9);
            }
            other => panic!("expected an answer, got {other:?}"),
        }
    }

    #[test]
    fn no_answer_counts_timeouts_and_errors() {
        let err = "No route to host (os error 113)".to_string();
        let results = vec![
            vec![ConnectOutcome::TimedOut, ConnectOutcome::Failed(err.clone())],
            vec![ConnectOutcome::Failed(err.clone()), ConnectOutcome::TimedOut],
        ];
        match summarize(&[443, 22], 2, results) {
            TcpResult::NoAnswer {
                per_port,
                timeouts,
                errors,
            } => {
                assert_eq!(per_port, 2);
                assert_eq!(timeouts, 2);
                assert_eq!(errors, vec![err]);
            }
            other => panic!("expected no answer, got {other:?}"),
        }
    }

    #[test]
    fn send_time_saturates() {
        let start = tokio::time::Instant::now();
        assert_eq!(send_time(start, ms(20), 3), start + ms(60));
        assert_eq!(send_time(start, Duration::MAX, 2), start);
    }
}
