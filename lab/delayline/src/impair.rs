//! The delay line's impairments beyond delay, rate and random loss, as pure logic: no I/O and
//! no clock of their own (the forwarding threads pass `now`), so unit tests can drive them.
//!
//! - [`TokenBucket`]: a policer. A packet passes when the bucket holds its wire bytes and is
//!   dropped when it does not; it is never queued.
//! - [`Jitter`]: an extra per-packet delay, uniform in `0..=max`, either keeping the order
//!   (a packet never leaves before the one before it) or not (later packets overtake).
//! - [`ReleaseQueue`]: the packets held in one direction. A FIFO while due times never
//!   decrease (the fast path); a heap keyed by (due time, sequence) when jitter reorders.
//! - [`ReorderCount`]: which released packets left before a packet sent earlier.
//! - [`Ticks`]: release in batches: a due time rounded up to the next tick of a fixed period,
//!   as a busy router, a virtual switch or a NIC's interrupt coalescing forwards.

use std::cmp::{Ordering, Reverse};
use std::collections::{BinaryHeap, VecDeque};

/// Nanobits per bit: the bucket counts in bit-nanoseconds per second, so that refilling for
/// `elapsed_ns` at `rate_bps` adds exactly `elapsed_ns * rate_bps` and nothing is rounded.
const NANO: u128 = 1_000_000_000;

/// A token bucket of `rate_bps` and `burst_bytes`, full at the start.
#[derive(Debug, Clone)]
pub struct TokenBucket {
    rate_bps: u64,
    /// The bucket's size and its content, in nanobits.
    cap: u128,
    tokens: u128,
    last_ns: u64,
}

impl TokenBucket {
    pub fn new(rate_bps: u64, burst_bytes: u64, now_ns: u64) -> Self {
        let cap = u128::from(burst_bytes) * 8 * NANO;
        TokenBucket {
            rate_bps,
            cap,
            tokens: cap,
            last_ns: now_ns,
        }
    }

    /// Takes `wire_bytes` from the bucket if it holds that many (true: the packet passes);
    /// otherwise leaves the bucket as it is (false: the packet is dropped).
    pub fn admit(&mut self, now_ns: u64, wire_bytes: u64) -> bool {
        let elapsed = now_ns.saturating_sub(self.last_ns);
        self.last_ns = self.last_ns.max(now_ns);
        self.tokens = (self.tokens + u128::from(elapsed) * u128::from(self.rate_bps)).min(self.cap);
        let cost = u128::from(wire_bytes) * 8 * NANO;
        if self.tokens < cost {
            return false;
        }
        self.tokens -= cost;
        true
    }
}

/// xorshift64 (Marsaglia): fast, and good enough for drop and delay decisions.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    /// Seeded with `seed`, made odd so it is never the all-zero state.
    pub fn new(seed: u64) -> Self {
        Rng(seed | 1)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    /// Uniform in `0..=max`.
    pub fn upto(&mut self, max: u64) -> u64 {
        ((u128::from(self.next_u64()) * (u128::from(max) + 1)) >> 64) as u64
    }
}

/// Per-packet extra delay, uniform in `0..=max_ns`.
#[derive(Debug, Clone)]
pub struct Jitter {
    max_ns: u64,
    keep_order: bool,
    rng: Rng,
    last_due: u64,
}

impl Jitter {
    /// `keep_order`: a packet's due time is at least the previous packet's (`--jitter`);
    /// otherwise each packet's extra delay is its own and packets overtake (`--reorder`).
    pub fn new(max_ns: u64, keep_order: bool, seed: u64) -> Self {
        Jitter {
            max_ns,
            keep_order,
            rng: Rng::new(seed),
            last_due: 0,
        }
    }

    /// The due time of a packet that would be due at `due_ns` without jitter.
    pub fn apply(&mut self, due_ns: u64) -> u64 {
        let due = due_ns + self.rng.upto(self.max_ns);
        if !self.keep_order {
            return due;
        }
        self.last_due = self.last_due.max(due);
        self.last_due
    }
}

/// A packet held in the line: its bytes, when it may leave, and its place in the order in
/// which the line took packets in (per direction, from 0).
#[derive(Debug)]
pub struct Pkt {
    pub due_ns: u64,
    pub seq: u64,
    pub buf: Vec<u8>,
}

impl PartialEq for Pkt {
    fn eq(&self, other: &Self) -> bool {
        (self.due_ns, self.seq) == (other.due_ns, other.seq)
    }
}

impl Eq for Pkt {}

impl PartialOrd for Pkt {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Pkt {
    fn cmp(&self, other: &Self) -> Ordering {
        (self.due_ns, self.seq).cmp(&(other.due_ns, other.seq))
    }
}

/// The packets held in one direction, released in due-time order.
#[derive(Debug)]
pub enum ReleaseQueue {
    /// Due times never decrease (no jitter, or jitter that keeps order): arrival order is
    /// due-time order.
    Fifo(VecDeque<Pkt>),
    /// Due times in any order (`--reorder`): earliest first, ties by arrival.
    ByDue(BinaryHeap<Reverse<Pkt>>),
}

impl Default for ReleaseQueue {
    fn default() -> Self {
        ReleaseQueue::Fifo(VecDeque::new())
    }
}

impl ReleaseQueue {
    pub fn new(by_due: bool) -> Self {
        if by_due {
            ReleaseQueue::ByDue(BinaryHeap::new())
        } else {
            ReleaseQueue::default()
        }
    }

    pub fn push(&mut self, p: Pkt) {
        match self {
            ReleaseQueue::Fifo(q) => q.push_back(p),
            ReleaseQueue::ByDue(h) => h.push(Reverse(p)),
        }
    }

    /// The due time of the packet to leave next.
    pub fn next_due(&self) -> Option<u64> {
        match self {
            ReleaseQueue::Fifo(q) => q.front().map(|p| p.due_ns),
            ReleaseQueue::ByDue(h) => h.peek().map(|Reverse(p)| p.due_ns),
        }
    }

    /// The packet to leave next, if it is due by `now_ns`.
    pub fn pop_due(&mut self, now_ns: u64) -> Option<Pkt> {
        if self.next_due()? > now_ns {
            return None;
        }
        match self {
            ReleaseQueue::Fifo(q) => q.pop_front(),
            ReleaseQueue::ByDue(h) => h.pop().map(|Reverse(p)| p),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.next_due().is_none()
    }
}

/// Counts the packets that left while a packet taken in before them had not: those that
/// overtook. Sequence numbers are released at most once each, and every one is released in
/// the end; the window kept is the span between the oldest one still held and the newest
/// one released.
#[derive(Debug, Default)]
pub struct ReorderCount {
    /// The lowest sequence number not released yet.
    low: u64,
    /// Released flags for `low..`.
    left: VecDeque<bool>,
}

impl ReorderCount {
    /// Records that `seq` left; true if it overtook a packet taken in before it.
    pub fn release(&mut self, seq: u64) -> bool {
        let Some(i) = seq.checked_sub(self.low).map(|i| i as usize) else {
            return false; // released twice: not ours to count
        };
        if self.left.len() <= i {
            self.left.resize(i + 1, false);
        }
        self.left[i] = true;
        while self.left.front() == Some(&true) {
            self.left.pop_front();
            self.low += 1;
        }
        i > 0
    }
}

/// A release clock that ticks every `period_ns` on CLOCK_MONOTONIC (at its multiples, so both
/// directions share the ticks): each packet's due time is rounded up to the next tick, and the
/// writer releases what is due at a tick in one batch. Rounding up keeps the order of due times
/// (a later or equal due time never rounds to an earlier tick), never makes a packet due
/// earlier, and leaves a due time that falls on a tick where it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ticks {
    period_ns: u64,
}

impl Ticks {
    /// `period_ns` > 0.
    pub fn new(period_ns: u64) -> Self {
        assert!(period_ns > 0, "a tick period of zero");
        Ticks { period_ns }
    }

    /// The first tick at or after `due_ns`.
    pub fn release_at(self, due_ns: u64) -> u64 {
        due_ns.div_ceil(self.period_ns).saturating_mul(self.period_ns)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    /// 8 Mbit/s = 1 byte per microsecond, a 15 000 B bucket: ten 1500-B packets at once, then
    /// one every 1.5 ms, and nothing in between however many try.
    #[test]
    fn token_bucket_admits_the_burst_then_the_rate() {
        let mut b = TokenBucket::new(8_000_000, 15_000, 0);
        let passed = (0..20).filter(|_| b.admit(0, 1500)).count();
        assert_eq!(passed, 10, "the burst");
        // 1.499 ms later the bucket holds 1499 B: still no 1500-B packet, but a smaller one.
        assert!(!b.admit(1_499_000, 1500));
        assert!(b.admit(1_499_000, 1499));
        // 1.501 ms after that it holds 1501 B.
        assert!(b.admit(3_000_000, 1500));
        assert!(!b.admit(3_000_000, 2));
        // A sender far above the rate for a second gets the rate, plus the burst it started with.
        let mut b = TokenBucket::new(8_000_000, 15_000, 0);
        let mut bytes = 0;
        for t in 0..100_000u64 {
            // 1500 B every 10 us: 1.2 Gbit/s offered.
            if b.admit(t * 10_000, 1500) {
                bytes += 1500;
            }
        }
        assert!(
            (1_000_000..=1_000_000 + 15_000).contains(&bytes),
            "{bytes} B in 1 s at 1 MB/s"
        );
        // An idle spell refills it to the burst, no more.
        assert_eq!((0..20).filter(|_| b.admit(60_000_000_000, 1500)).count(), 10);
        // A clock that steps back takes nothing from it.
        assert!(!b.admit(59_000_000_000, 1500));
        assert!(b.admit(60_001_500_000, 1500));
    }

    #[test]
    fn rng_upto_stays_in_range_and_reaches_both_ends() {
        let mut r = Rng::new(42);
        let v: Vec<u64> = (0..10_000).map(|_| r.upto(3)).collect();
        assert!(v.iter().all(|&x| x <= 3));
        for x in 0..=3 {
            let n = v.iter().filter(|&&y| y == x).count();
            assert!((2_000..3_000).contains(&n), "{x}: {n} of 10000");
        }
        assert_eq!(Rng::new(7).upto(0), 0);
    }

    /// Packets 100 us apart with up to 5 ms of jitter that keeps order: no packet is due
    /// before the one before it, and the extra delay stays within 0..=5 ms.
    #[test]
    fn jitter_keeps_order() {
        let mut j = Jitter::new(5 * MS, true, 1);
        let mut last = 0;
        let mut extra_max = 0;
        for i in 0..10_000u64 {
            let base = i * 100_000 + 20 * MS;
            let due = j.apply(base);
            assert!(due >= last, "packet {i} due {due} before {last}");
            assert!((base..=base + 5 * MS).contains(&due), "packet {i}");
            extra_max = extra_max.max(due - base);
            last = due;
        }
        assert!(extra_max > 4 * MS, "{extra_max}");
        // Packets far apart (more than the jitter) each get their own delay: spread over the range.
        let mut j = Jitter::new(5 * MS, true, 3);
        let extras: Vec<u64> = (0..1000u64).map(|i| j.apply(i * 10 * MS) - i * 10 * MS).collect();
        let mean = extras.iter().sum::<u64>() / 1000;
        assert!(
            (2 * MS..3 * MS).contains(&mean),
            "mean extra {mean} ns for uniform 0..5 ms"
        );
    }

    /// With jitter that reorders, later packets overtake earlier ones: the queue releases by
    /// due time and the count names the overtakers.
    #[test]
    fn reorder_overtakes() {
        let mut j = Jitter::new(5 * MS, false, 9);
        let mut q = ReleaseQueue::new(true);
        let n = 2_000u64;
        for seq in 0..n {
            // 100 us apart: packets well inside the jitter of each other.
            let due = j.apply(seq * 100_000 + 20 * MS);
            q.push(Pkt {
                due_ns: due,
                seq,
                buf: vec![seq as u8],
            });
        }
        let mut count = ReorderCount::default();
        let (mut last_due, mut out, mut overtook, mut late) = (0, 0, 0, 0);
        let mut max_seq = None;
        let mut now = 0;
        while !q.is_empty() {
            now += 50_000;
            while let Some(p) = q.pop_due(now) {
                assert!(p.due_ns >= last_due && p.due_ns <= now, "released out of due order");
                last_due = p.due_ns;
                overtook += u64::from(count.release(p.seq));
                // A packet that leaves after a later one (the other side of the same events).
                late += u64::from(max_seq.is_some_and(|m| p.seq < m));
                max_seq = max_seq.max(Some(p.seq));
                out += 1;
            }
        }
        assert_eq!(out, n);
        // Jitter of 50 packet gaps: most packets are passed or pass.
        assert!(
            overtook > n / 4 && late > n / 4,
            "{overtook} overtook, {late} late of {n}"
        );
        assert_eq!(count.left.len(), 0, "every packet left");
        assert_eq!(count.low, n);
    }

    #[test]
    fn reorder_count_counts_overtakers() {
        let mut c = ReorderCount::default();
        // 0 1 2 in order: none.
        assert_eq!([0, 1, 2].map(|s| c.release(s)), [false; 3]);
        // 5 and 4 leave before 3: both overtook it; 3 itself did not overtake.
        assert_eq!([5, 4, 3, 6].map(|s| c.release(s)), [true, true, false, false]);
        assert_eq!((c.low, c.left.len()), (7, 0));
        assert!(!c.release(2), "a repeat is not counted");
    }

    /// The FIFO fast path releases in arrival order and only what is due.
    #[test]
    fn fifo_releases_in_order_when_due() {
        let mut q = ReleaseQueue::new(false);
        for (seq, due) in [(0, 10), (1, 10), (2, 30)] {
            q.push(Pkt {
                due_ns: due,
                seq,
                buf: Vec::new(),
            });
        }
        assert_eq!(q.next_due(), Some(10));
        assert!(q.pop_due(9).is_none());
        assert_eq!(q.pop_due(10).map(|p| p.seq), Some(0));
        assert_eq!(q.pop_due(29).map(|p| p.seq), Some(1));
        assert!(q.pop_due(29).is_none());
        assert_eq!(q.pop_due(30).map(|p| p.seq), Some(2));
        assert!(q.is_empty());
    }

    /// Batches at 1 ms: every packet leaves at the first tick at or after its due time, in
    /// order, never early, and one due on a tick leaves at that tick, not a tick later.
    #[test]
    fn ticks_round_up_to_the_next_tick() {
        let t = Ticks::new(MS);
        assert_eq!(t.release_at(0), 0);
        assert_eq!(t.release_at(1), MS);
        assert_eq!(t.release_at(MS - 1), MS);
        assert_eq!(t.release_at(MS), MS, "due on a tick: not delayed a tick");
        assert_eq!(t.release_at(MS + 1), 2 * MS);
        assert_eq!(t.release_at(7 * MS), 7 * MS);
        // An odd period: ticks at its multiples.
        let odd = Ticks::new(333_333);
        assert_eq!(odd.release_at(333_334), 666_666);
        assert_eq!(odd.release_at(666_666), 666_666);
        // Near the clock's end it saturates instead of wrapping round to an early tick.
        assert!(t.release_at(u64::MAX - 5) >= u64::MAX - 5);

        // Packets 12 us apart (1 Gbit/s of 1500-B packets) behind a 20 ms delay, with jitter that
        // keeps order: through the FIFO they leave in order, one batch a tick (gaps under 1 ms
        // leave no tick empty), each at the first tick at or after the due times it holds.
        let mut j = Jitter::new(200_000, true, 5);
        let mut q = ReleaseQueue::new(false);
        let n = 5_000u64;
        let mut due_of = Vec::new();
        for seq in 0..n {
            let due = j.apply(seq * 12_000 + 20 * MS + 123);
            let at = t.release_at(due);
            assert!(at >= due && at - due < MS, "packet {seq}: due {due}, released at {at}");
            assert_eq!(at % MS, 0, "on a tick");
            due_of.push(due);
            q.push(Pkt {
                due_ns: at,
                seq,
                buf: Vec::new(),
            });
        }
        let (mut next, mut batches, mut now) = (0, 0, 0);
        while !q.is_empty() {
            now = q.next_due().expect("a packet");
            while let Some(p) = q.pop_due(now) {
                assert_eq!(p.seq, next, "in order");
                assert!(due_of[p.seq as usize] <= now, "packet {} left early", p.seq);
                next += 1;
            }
            batches += 1;
        }
        assert_eq!(next, n);
        assert_eq!(now % MS, 0);
        let span_ms = (due_of[n as usize - 1] - due_of[0]) / MS + 1;
        assert!(
            (span_ms..=span_ms + 1).contains(&batches),
            "{batches} batches over {span_ms} ms"
        );
    }
}
