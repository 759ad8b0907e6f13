//! The reading on recorded and modelled trains; the packets' bytes.

use super::read::{duration_us, host_gap_ns};
use super::*;

/// A forwarder that releases once a millisecond, modelled: requests leave this host 2 µs
/// apart, a 1 Gbit/s bottleneck spaces them 12 µs, the forwarder hands on at each tick what
/// fell due since the last one, writing a batch 2 µs a packet. Trains start at any phase.
fn ticked(per_train: usize, phase_ns: i64) -> TrainOutcome {
    let tick = 1_000_000_i64;
    let mut at: Vec<i64> = (0..per_train as i64).map(|i| phase_ns + i * 12_000).collect();
    let mut last_tick = i64::MIN;
    let mut in_batch = 0;
    for t in &mut at {
        let due = (*t + tick - 1) / tick * tick;
        in_batch = if due == last_tick { in_batch + 1 } else { 0 };
        last_tick = due;
        *t = due + in_batch * 2_000;
    }
    TrainOutcome {
        replies: at.into_iter().map(|at_ns| Reply { ip_bytes: 1500, at_ns }).collect(),
        send_span_ns: (per_train as i64 - 1) * 2_000,
    }
}

/// Issue 37, point 3: through such a forwarder a 48-packet train (576 µs at 1 Gbit/s) comes
/// back in one or two batches; the mean gap without the longest was then the forwarder's own
/// 2 µs, no reply joined another, and windows inside a batch read its writing speed (the lab:
/// 0.13–8 Gbit/s a train, 4.9 Gbit/s taken for a 1 Gbit/s path). Now the batches are bursts,
/// the trains too short to read them, and long trains go out.
#[test]
fn a_train_a_ticking_forwarder_releases_in_one_or_two_batches_is_bursts_not_a_rate() {
    let phases = [0, 150_000, 420_000, 700_000, 990_000];
    // Those across a tick come back in two batches (one alone reads as sent: near the
    // send rate, which sends long trains too).
    for p in [0, 700_000, 990_000] {
        let t = ticked(48, p);
        let runs = bursts(&t.replies, 2_000.0);
        assert!(runs.len() <= 2, "phase {p}: {} runs", runs.len());
    }
    let first: Vec<TrainOutcome> = phases.iter().map(|&p| ticked(48, p)).collect();
    let est = summarize(&first, 48, 1500);
    let plan = est.as_ref().ok().and_then(|e| long_train_plan(e, &first));
    assert!(
        est.as_ref().is_err() || plan.is_some(),
        "no reading of the forwarder's speed taken as the path's: {est:?}"
    );
    // Long trains of 1024 (12 ms) span twelve ticks: read by bursts, the bottleneck's rate.
    let long: Vec<TrainOutcome> = [0, 330_000, 660_000].iter().map(|&p| ticked(1024, p)).collect();
    let bps = summarize_long(&long, 1024, 1500).expect("long").bps;
    assert!((0.9e9..1.1e9).contains(&(bps as f64)), "{bps}");
}

fn train(spacing_ns: i64, n: usize, bytes: usize) -> Vec<Reply> {
    (0..n)
        .map(|i| Reply {
            ip_bytes: bytes,
            at_ns: 1_000_000_000 + i as i64 * spacing_ns,
        })
        .collect()
}

#[test]
fn dispersion_of_evenly_spaced_replies() {
    // 1500 B every 240 µs = 50 Mbit/s; 24 µs = 500 Mbit/s.
    for window in [1, WINDOW_GAPS, usize::MAX] {
        let bps = dispersion_bps(&train(240_000, 48, 1500), window, f64::INFINITY).expect("rate");
        assert!((bps - 50e6).abs() < 1.0, "{bps}");
        let bps = dispersion_bps(&train(24_000, 48, 1500), window, f64::INFINITY).expect("rate");
        assert!((bps - 500e6).abs() < 1.0, "{bps}");
    }
    // The whole-train formula: order does not matter, the first arrival's bytes do not count.
    let mut r = train(240_000, 3, 1000);
    r.swap(0, 2);
    r[1].ip_bytes = 500;
    assert_eq!(
        dispersion_bps(&r, usize::MAX, f64::INFINITY),
        Some((500.0 + 1000.0) * 8.0 / 480e-6)
    );
}

#[test]
fn dispersion_needs_two_replies_and_a_spread() {
    assert_eq!(dispersion_bps(&[], WINDOW_GAPS, f64::INFINITY), None);
    assert_eq!(dispersion_bps(&train(1000, 1, 1500), WINDOW_GAPS, f64::INFINITY), None);
    assert_eq!(dispersion_bps(&train(0, 10, 1500), WINDOW_GAPS, f64::INFINITY), None);
    // Fewer gaps than a window: one window, the whole train.
    assert_eq!(
        dispersion_bps(&train(1000, 3, 1500), WINDOW_GAPS, f64::INFINITY),
        Some(12e9)
    );
}

#[test]
fn a_stall_moves_the_whole_train_formula_not_the_windows() {
    // 50 Mbit/s; a 2 ms stall after reply 17 delays everything behind it (as the lab's
    // delay line did), and the first reply arrives 60 µs late.
    let mut r = train(240_000, 48, 1500);
    for x in &mut r[17..] {
        x.at_ns += 2_000_000;
    }
    r[0].at_ns += 60_000;
    let whole = dispersion_bps(&r, usize::MAX, f64::INFINITY).expect("rate");
    assert!(whole < 0.86 * 50e6, "{whole}");
    let windowed = dispersion_bps(&r, WINDOW_GAPS, f64::INFINITY).expect("rate");
    assert!((windowed - 50e6).abs() < 0.001 * 50e6, "{windowed}");
}

#[test]
fn batched_arrivals_still_average_out() {
    // Interrupt coalescing at 1 Gbit/s: replies handed up four at a time, 1 µs apart, every
    // 48 µs. Single gaps say 12 Gbit/s or 250 Mbit/s; windows of 8 gaps say 1 Gbit/s, and
    // so does every window of whole bursts, down to one.
    let r: Vec<Reply> = (0..48)
        .map(|i| Reply {
            ip_bytes: 1500,
            at_ns: (i / 4) * 48_000 + (i % 4) * 1_000,
        })
        .collect();
    let runs = bursts(&r, f64::INFINITY);
    assert_eq!(runs.len(), 12);
    assert!(runs.iter().all(|b| b.replies == 4 && b.bytes == 6000), "{runs:?}");
    for window in [1, WINDOW_GAPS] {
        let bps = dispersion_bps(&r, window, f64::INFINITY).expect("rate");
        assert!((bps - 1e9).abs() < 1e-6 * 1e9, "{window}: {bps}");
    }
    // Without bursts (a host that sends a packet in 0 ns sees none): per reply.
    assert!(dispersion_bps(&r, 1, 0.0).expect("rate") > 5e9);
}

/// The replies of a train of `n` that a bottleneck spaced `gap_ns` apart, as a forwarder
/// behind it hands them on: it wakes every `period_ns` (each wake-up late by the next of
/// `late_ns`, in turn) and writes everything due by then, `write_ns` apart.
fn batched(n: usize, gap_ns: i64, period_ns: i64, late_ns: &[i64], write_ns: i64) -> Vec<Reply> {
    let start = 1_000_000_000;
    let mut out = Vec::new();
    let mut busy_until = 0;
    for wake in 0.. {
        if out.len() == n {
            break;
        }
        let now = start + wake as i64 * period_ns + late_ns[wake % late_ns.len()];
        let mut at = now.max(busy_until);
        while out.len() < n && start + out.len() as i64 * gap_ns <= now {
            out.push(Reply {
                ip_bytes: 1500,
                at_ns: at,
            });
            at += write_ns;
        }
        busy_until = at;
    }
    out
}

fn sent(replies: Vec<Reply>, send_span_ns: i64) -> TrainOutcome {
    TrainOutcome { replies, send_span_ns }
}

#[test]
fn a_forwarder_that_batches_is_seen_and_read_burst_to_burst() {
    // 1 Gbit/s (12 µs a packet) behind a forwarder that wakes every 360 µs, up to 70 µs
    // late, and writes a batch 1.5 µs a packet: bursts of ~30 replies.
    let late = [0, 40_000, 10_000, 70_000, 20_000, 55_000];
    let long = batched(1024, 12_000, 360_000, &late, 1_500);
    let runs = bursts(&long, 1_500.0);
    assert!((33..=36).contains(&runs.len()), "{}", runs.len());
    assert!(
        runs[1..runs.len() - 1].iter().all(|b| (24..=36).contains(&b.replies)),
        "{runs:?}"
    );
    // Windows of single gaps read the batches (8 Gbit/s inside one); from burst to burst,
    // the bottleneck.
    let per_reply = dispersion_bps(&long, WINDOW_GAPS, 0.0).expect("rate");
    assert!(per_reply > 5e9, "{per_reply}");
    let by_bursts = dispersion_bps(&long, WINDOW_GAPS, 1_500.0).expect("rate");
    assert!((by_bursts - 1e9).abs() < 0.02 * 1e9, "{by_bursts}");

    // Three such long trains: the signature, and the estimate within 2 %.
    let three: Vec<TrainOutcome> = (0..3).map(|_| sent(long.clone(), 1_024 * 1_500)).collect();
    let e = summarize_long(&three, 1024, 1500).expect("estimate");
    assert!(e.bps.abs_diff(1_000_000_000) < 20_000_000, "{e:?}");
    let b = e.bursty.expect("a burst signature");
    assert!((25..=36).contains(&b.packets), "{b:?}");
    assert!(b.period_us.abs_diff(360) <= 36, "{b:?}");
    assert!(b.share_pct > 90 && b.bursts_per_train >= 33, "{b:?}");

    // A first train of 48 spans two bursts: too few to read, and the bursts too large for
    // a train to span 16 of them: long trains go out.
    let first: Vec<TrainOutcome> = (0..5)
        .map(|i| sent(batched(48, 12_000, 360_000, &late[i..], 1_500), 48 * 1_500))
        .collect();
    let e = summarize(&first, 48, 1500);
    let plan = e.as_ref().ok().and_then(|e| long_train_plan(e, &first));
    assert_eq!(plan, Some((MAX_LONG_TRAIN, LongWhy::Bursts)), "{e:?}");
}

#[test]
fn long_trains_take_a_slow_forwarder_at_its_batches() {
    // A forwarder that writes its batches 4 µs a packet, behind 1 Gbit/s, while this host
    // sends a long train at 1 µs a packet: bounded by 3 × this host's speed, each batch
    // falls apart into single replies read at the forwarder's 3 Gbit/s; long trains take
    // the train's own spacing (12 µs) and see whole batches.
    let late = [0, 300_000, 100_000, 450_000];
    let long: Vec<TrainOutcome> = (0..3)
        .map(|i| sent(batched(1024, 12_000, 2_000_000, &late[i..], 4_000), 1_024_000))
        .collect();
    let bounded = summarize(&long, 1024, 1500).expect("estimate");
    assert!(bounded.bps > 2_500_000_000, "{bounded:?}");
    let e = summarize_long(&long, 1024, 1500).expect("estimate");
    assert!(e.bps.abs_diff(1_000_000_000) < 20_000_000, "{e:?}");
    let b = e.bursty.expect("bursts");
    assert!(b.packets > 150 && b.period_us.abs_diff(2_000) < 200, "{b:?}");
}

#[test]
fn two_stalls_in_a_short_train_are_no_batches() {
    // 500 Mbit/s, a first train stretched twice by 2 ms: the mean gap without the longest
    // is 67 µs, so the ordinary 24 µs gaps are under half of it; but this host sends at
    // 3 µs a packet and no forwarder batch is spaced 24 µs.
    let mut r = train(24_000, 48, 1500);
    for x in &mut r[15..] {
        x.at_ns += 2_000_000;
    }
    for x in &mut r[31..] {
        x.at_ns += 2_000_000;
    }
    assert_eq!(bursts(&r, 3_000.0).len(), 48);
    let bps = dispersion_bps(&r, WINDOW_GAPS, 3_000.0).expect("rate");
    assert!((bps - 5e8).abs() < 1e-6 * 5e8, "{bps}");
    // Unbounded, three "batches" of 15 or 16.
    assert_eq!(bursts(&r, f64::INFINITY).len(), 3);
}

#[test]
fn small_batches_are_read_from_the_first_trains() {
    // Batches of 3 every 36 µs: windows of 8 single gaps hold 2 or 3 batches and read
    // 1.3 or 0.9 × the rate, 0.9 in the median; windows of 8 bursts are exact.
    let even = batched(48, 12_000, 36_000, &[0], 1_000);
    let per_reply = dispersion_bps(&even, WINDOW_GAPS, 0.0).expect("rate");
    assert!((per_reply - 0.897e9).abs() < 0.01e9, "{per_reply}");
    let by_bursts = dispersion_bps(&even, WINDOW_GAPS, 1_000.0).expect("rate");
    assert!((by_bursts - 1e9).abs() < 1e-6 * 1e9, "{by_bursts}");
    // Wake-ups up to 10 µs late: a train of 48 spans 16 batches, its windows average them
    // out, and no long trains go out.
    let late = [0, 10_000, 3_000, 7_000];
    let trains: Vec<TrainOutcome> = (0..5)
        .map(|i| sent(batched(48, 12_000, 36_000, &late[i % 4..], 1_000), 48 * 1_000))
        .collect();
    let e = summarize(&trains, 48, 1500).expect("estimate");
    assert!(e.bps.abs_diff(1_000_000_000) < 30_000_000, "{e:?}");
    let b = e.bursty.expect("bursts");
    assert_eq!(b.packets, 3, "{b:?}");
    assert_eq!(long_train_plan(&e, &trains), None);
}

#[test]
fn clean_trains_show_no_bursts() {
    // 500 Mbit/s with ±2 µs of jitter, one train stretched by a 3 ms stall, one whose
    // first reply came 60 µs late, one whose send the scheduler interrupted for 2 ms.
    let jitter = [0, 2_000, -1_500, 1_000, -2_000, 500, 1_500, -500];
    let clean = |stall_at: usize, stall_ns: i64| -> Vec<Reply> {
        (0..48)
            .map(|i| Reply {
                ip_bytes: 1500,
                at_ns: 1_000_000_000
                    + i as i64 * 24_000
                    + jitter[i % jitter.len()]
                    + if i >= stall_at { stall_ns } else { 0 },
            })
            .collect()
    };
    let mut late_first = clean(48, 0);
    late_first[0].at_ns += 60_000;
    let trains = vec![
        sent(clean(48, 0), 150_000),
        sent(clean(20, 3_000_000), 150_000),
        sent(late_first, 150_000),
        sent(clean(48, 0), 2_150_000),
        sent(clean(48, 0), 140_000),
    ];
    for t in &trains {
        let runs = bursts(&t.replies, 150_000.0 / 47.0);
        assert!(runs.iter().all(|b| b.replies == 1), "{runs:?}");
    }
    let e = summarize(&trains, 48, 1500).expect("estimate");
    assert!(e.bps.abs_diff(500_000_000) < 5_000_000, "{e:?}");
    assert_eq!((e.bursty, e.reading, e.long.clone()), (None, Reading::Trains, None));
    assert_eq!(long_train_plan(&e, &trains), None);
    assert_eq!(e.describe(), None);
}

#[test]
fn a_train_inside_one_batch_asks_for_long_trains() {
    // A forwarder that wakes every 4 ms holds a whole 0.6 ms train at 1 Gbit/s and writes
    // it 1.5 µs a packet: 8 Gbit/s, back nearly as fast as it left (in 100 µs).
    let trains: Vec<TrainOutcome> = (0..5)
        .map(|i| sent(batched(48, 12_000, 4_000_000, &[i * 500_000 + 700_000], 1_500), 100_000))
        .collect();
    let e = summarize(&trains, 48, 1500).expect("estimate");
    assert!(e.bps > 7_000_000_000, "{e:?}");
    assert_eq!(e.bursty, None, "evenly spaced, as far as one train shows");
    assert_eq!(
        long_train_plan(&e, &trains),
        Some((MAX_LONG_TRAIN, LongWhy::NearSendRate))
    );
    // On a slow path a long train would be no longer than the first ones.
    let slow = CapacityEstimate {
        bps: 10_000_000,
        samples_bps: vec![10_000_000; 5],
        ..e
    };
    assert_eq!(long_train_plan(&slow, &trains), None);
}

#[test]
fn long_trains_are_sized_past_a_few_stretched_trains_that_outvote_the_rest() {
    // CI, 2026-11-29: a 1 Gbit/s line batched once a millisecond on a busy host. Three of
    // fifteen first trains read 37.5 Mbit/s alike and became the reading; long trains sized
    // at it (156 requests, two batches) read 1.0–2.4 Gbit/s.
    let samples = vec![
        195_023_647,
        278_950_344,
        483_509_798,
        37_869_105,
        437_050_556,
        673_134_647,
        37_539_487,
        107_526_453,
        473_001_996,
        522_800_968,
        12_793_327,
        2_652_093_179,
        2_630_254_892,
        2_426_463_788,
        37_481_718,
    ];
    let first = CapacityEstimate {
        bps: 37_539_487,
        trains: 15,
        used: 15,
        dispersed: 10,
        agreeing: 3,
        agreed: false,
        samples_bps: samples,
        packet_bytes: 1500,
        per_train: 48,
        sender_limited: false,
        reading: Reading::Trains,
        bursty: Some(Burst {
            packets: 8,
            period_us: 485,
            bursts_per_train: 5,
            share_pct: 75,
        }),
        long: None,
    };
    assert_eq!(long_train_plan(&first, &[]), Some((MAX_LONG_TRAIN, LongWhy::Bursts)));
    // Trains that agree size them by their reading, as before.
    let agreed = CapacityEstimate { agreed: true, ..first };
    assert_eq!(long_train_plan(&agreed, &[]), Some((156, LongWhy::Bursts)));
}

/// Recorded trains (tests/fixtures/trains): one a line, the send span of its requests and
/// then the gaps between its replies in arrival order, ns; 1500-byte packets.
fn recorded(text: &str) -> Vec<TrainOutcome> {
    text.lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .map(|l| {
            let v: Vec<i64> = l.split_whitespace().map(|x| x.parse().expect("ns")).collect();
            let mut at = 1_000_000_000;
            let mut replies = vec![Reply {
                ip_bytes: 1500,
                at_ns: at,
            }];
            for gap in &v[1..] {
                at += gap;
                replies.push(Reply {
                    ip_bytes: 1500,
                    at_ns: at,
                });
            }
            sent(replies, v[0])
        })
        .collect()
}

#[test]
fn recorded_clean_and_stalled_trains_show_no_bursts() {
    let clean = recorded(include_str!("../../../tests/fixtures/trains/lab-1gbit-nort.txt"));
    let e = summarize(&clean, 48, 1500).expect("estimate");
    assert!(e.bps.abs_diff(1_000_000_000) < 5_000_000, "{e:?}");
    assert_eq!(e.bursty, None, "{e:?}");
    assert_eq!(long_train_plan(&e, &clean), None);
    // 100 Mbit/s on a busy host: stalls of 1-5 ms, three of them followed by 20-30
    // replies in one burst (the old windows read those trains 1.4, 65 and 136 × too fast).
    let busy = recorded(include_str!("../../../tests/fixtures/trains/lab-100mbit-nort-busy.txt"));
    for t in &busy {
        let bps = dispersion_bps(&t.replies, WINDOW_GAPS, host_gap_ns(&busy, 48)).expect("rate");
        assert!((bps - 1e8).abs() < 0.02 * 1e8, "{bps}");
    }
    let e = summarize(&busy, 48, 1500).expect("estimate");
    assert!(e.bps.abs_diff(100_000_000) < 1_000_000 && e.agreed, "{e:?}");
    assert_eq!(e.bursty, None, "{e:?}");
}

#[test]
fn recorded_batches_are_seen_and_read_within_ten_percent() {
    // The delay line stopped for 300 µs of every 600 µs, 1 Gbit/s: the old windows read
    // the first trains 5.9 to 9.7 × too fast, the long ones 1.5 and 3.4 ×.
    let all = recorded(include_str!(
        "../../../tests/fixtures/trains/lab-1gbit-nort-batches.txt"
    ));
    let (first, long) = all.split_at(10);
    assert!(first.iter().all(|t| t.replies.len() == 48) && long.iter().all(|t| t.replies.len() == 1024));
    let old: Vec<f64> = first
        .iter()
        .filter_map(|t| dispersion_bps(&t.replies, WINDOW_GAPS, 0.0))
        .collect();
    assert!(old.iter().all(|&b| b > 5e9), "{old:?}");
    let e = summarize(first, 48, 1500).expect("estimate");
    assert!(e.bps.abs_diff(1_000_000_000) < 10_000_000, "{e:?}");
    let b = e.bursty.expect("bursts");
    assert!((20..=40).contains(&b.packets), "{b:?}");
    assert_eq!(long_train_plan(&e, first), Some((MAX_LONG_TRAIN, LongWhy::Bursts)));
    // The long trains: within 10 % (the forwarder's own stops idle the line a little), and
    // the stops seen: bursts every ~600 µs.
    let e = summarize_long(long, 1024, 1500).expect("estimate");
    assert!(e.bps.abs_diff(1_000_000_000) < 100_000_000, "{e:?}");
    let b = e.bursty.expect("bursts");
    assert!(b.period_us.abs_diff(600) <= 60, "{b:?}");
}

/// The same recorded trains on a busy host, where the delay line writes a burst slowly
/// and it falls apart: every burst split after its tenth reply by 25 µs. The bursts read
/// 17 replies instead of 33, and their period is still the stalls' (615 µs; counted from
/// every burst of half the typical size, as before, 132 µs).
#[test]
fn bursts_that_fall_apart_keep_the_stalls_period() {
    let all = recorded(include_str!(
        "../../../tests/fixtures/trains/lab-1gbit-nort-batches.txt"
    ));
    let long = &all[10..];
    let whole = summarize_long(long, 1024, 1500).expect("estimate");
    let split: Vec<TrainOutcome> = long.iter().map(|t| split_bursts(t, 10, 25_000)).collect();
    let e = summarize_long(&split, 1024, 1500).expect("estimate");
    let (b, w) = (e.bursty.expect("bursts"), whole.bursty.expect("bursts"));
    assert!(
        b.packets < w.packets && b.bursts_per_train > w.bursts_per_train,
        "{b:?} vs {w:?}"
    );
    assert!(b.period_us.abs_diff(600) <= 60, "{b:?} vs {w:?}");
}

/// `t` with each burst (replies under 5 µs apart) split after its `after`th reply by
/// `gap_ns`: every later reply comes that much later.
fn split_bursts(t: &TrainOutcome, after: usize, gap_ns: i64) -> TrainOutcome {
    let mut r = t.replies.clone();
    r.sort_by_key(|x| x.at_ns);
    let (mut shift, mut run, mut prev) = (0, 0, i64::MIN);
    for x in &mut r {
        run = if x.at_ns.saturating_sub(prev) < 5_000 {
            run + 1
        } else {
            1
        };
        prev = x.at_ns;
        if run == after + 1 {
            shift += gap_ns;
        }
        x.at_ns += shift;
    }
    sent(r, t.send_span_ns)
}

#[test]
fn long_trains_replace_the_reading_and_say_why() {
    let all = recorded(include_str!(
        "../../../tests/fixtures/trains/lab-1gbit-nort-batches.txt"
    ));
    let (first, long) = all.split_at(10);
    let first = summarize(first, 48, 1500).expect("first");
    let long = summarize_long(long, 1024, 1500).expect("long");
    let e = with_long_trains(first.clone(), LongWhy::Bursts, (2, 1024), Ok(long.clone()));
    assert_eq!((e.bps, e.reading, e.agreed), (long.bps, Reading::LongTrains, true));
    // The first trains' record stays; the long trains' bursts (their period is measured).
    assert_eq!((e.trains, e.per_train, &e.samples_bps), (10, 48, &first.samples_bps));
    assert_eq!(e.bursty, long.bursty);
    let l = e.long.clone().expect("long trains");
    assert_eq!(
        (l.why, l.trains, l.per_train, l.used, l.bps),
        (LongWhy::Bursts, 2, 1024, 2, Some(long.bps))
    );
    let v = serde_json::to_value(&e).expect("json");
    assert_eq!(
        (v["reading"].as_str(), v["long"]["why"].as_str()),
        (Some("long_trains"), Some("bursts"))
    );
    assert!(
        v["bursty"]["period_us"].as_u64().is_some_and(|p| p.abs_diff(600) <= 60),
        "{v:#}"
    );
    let said = e.describe().expect("words");
    let b = e.bursty.expect("bursts");
    assert!(
        said.starts_with(&format!(
            "replies came back in bursts of ~{} every ~{} µs",
            b.packets, b.period_us
        )) && said.contains("read over trains of 1024 packets")
            && said.contains("the 48-packet trains read"),
        "{said}"
    );

    // Long trains that gave nothing leave the first reading, and say so.
    let lost = "every train lost more than half its replies (3 of 3072 came back)".to_string();
    let e = with_long_trains(first.clone(), LongWhy::Bursts, (3, 1024), Err(lost.clone()));
    assert_eq!((e.bps, e.reading), (first.bps, Reading::Trains));
    assert_eq!(e.long.as_ref().and_then(|l| l.error.clone()), Some(lost));
    assert!(e.describe().expect("words").contains("gave no reading"), "{e:?}");

    // Trains that came back as fast as they left, checked by long ones without bursts.
    let mut fast = first.clone();
    fast.bursty = None;
    let mut clean = long;
    clean.bursty = None;
    let e = with_long_trains(fast, LongWhy::NearSendRate, (3, 1024), Ok(clean));
    let said = e.describe().expect("words");
    assert!(
        said.contains("nearly as fast as this host sent them") && said.contains("showed no bursts"),
        "{said}"
    );
    assert_eq!(summarize(&[outcome(24_000, 48)], 48, 1500).expect("e").describe(), None);
    assert_eq!(duration_us(2_400), "2.4 ms");
    assert_eq!(duration_us(36), "36 µs");
    assert_eq!(duration_us(25_400), "25 ms");
}

#[test]
fn recorded_long_trains_through_the_rt_line() {
    // With real-time priority the line forwards on time until its rationed spinning runs
    // out, ~3 ms into a 1000-packet train, then in bursts of 2-4 (the old windows read
    // 0.87 to 0.90).
    let long = recorded(include_str!("../../../tests/fixtures/trains/lab-1gbit-rt-long.txt"));
    let e = summarize_long(&long, 1000, 1500).expect("estimate");
    assert!(e.bps.abs_diff(1_000_000_000) < 20_000_000, "{e:?}");
    let b = e.bursty.expect("bursts");
    assert!((2..=4).contains(&b.packets), "{b:?}");
}

#[test]
fn medians() {
    assert_eq!(median(&[]), None);
    assert_eq!(median(&[7]), Some(7));
    assert_eq!(median(&[9, 1, 5]), Some(5));
    assert_eq!(median(&[4, 1, 3, 2]), Some(2));
    assert_eq!(median(&[3, 4]), Some(3));
    assert_eq!(median(&[u64::MAX, u64::MAX]), Some(u64::MAX));
    assert_eq!(median(&[1, 2]), Some(1));
    assert_eq!(median(&[3, 5]), Some(4));
}

fn outcome(spacing_ns: i64, n: usize) -> TrainOutcome {
    TrainOutcome {
        replies: train(spacing_ns, n, 1500),
        send_span_ns: 100_000,
    }
}

#[test]
fn summary_rejects_short_trains_and_takes_the_median() {
    let trains = vec![
        outcome(240_000, 48),
        outcome(24_000, 23), // fewer than 48 / 2: rejected although fastest
        outcome(250_000, 24),
        outcome(120_000, 48), // compressed: an outlier the median ignores
        outcome(240_000, 40),
    ];
    let e = summarize(&trains, 48, 1500).expect("estimate");
    assert_eq!((e.trains, e.used, e.per_train, e.packet_bytes), (5, 4, 48, 1500));
    assert_eq!(e.samples_bps, vec![50_000_000, 48_000_000, 100_000_000, 50_000_000]);
    assert_eq!(e.bps, 50_000_000);
    assert!(!e.sender_limited);
    assert_eq!(min_replies(48), 24);
    assert_eq!(min_replies(5), 3);
}

#[test]
fn the_densest_cluster_wins_over_the_median() {
    // 500 Mbit/s; three of five trains compressed by a stall after the bottleneck (the lab
    // under CPU steal): the median says 800 Mbit/s, the two good trains agree.
    let v = [500_000_000, 2_600_000_000, 800_000_000, 497_000_000, 1_700_000_000];
    assert_eq!(median(&v), Some(800_000_000));
    assert_eq!(densest(&v), Some((498_500_000, 2)));
    // Within 10 % of each other, slowest to fastest: 100..=110 is one cluster, 111 is not.
    assert_eq!(densest(&[100, 105, 110, 111]), Some((105, 3)));
    assert_eq!(densest(&[100, 111]), Some((100, 1)), "a tie: the one nearer the median");
    assert_eq!(densest(&[7]), Some((7, 1)));
    assert_eq!(densest(&[]), None);
}

#[test]
fn disagreeing_trains_ask_for_another_round() {
    let fast = |ns| outcome(ns, 48);
    // Two good trains of five: not agreed.
    let five = [fast(24_000), fast(4_615), fast(15_000), fast(24_100), fast(7_058)];
    let e = summarize(&five, 48, 1500).expect("estimate");
    assert_eq!((e.used, e.agreeing), (5, 2));
    assert!(!e.agreed, "{e:?}");
    // A second round of good trains: seven of ten agree on 500 Mbit/s.
    let mut ten = five.to_vec();
    ten.extend([fast(24_000), fast(23_900), fast(24_050), fast(24_000), fast(9_000)]);
    let e = summarize(&ten, 48, 1500).expect("estimate");
    assert_eq!((e.used, e.agreeing), (10, 6));
    assert!(e.agreed, "{e:?}");
    assert!(e.bps.abs_diff(500_000_000) < 2_500_000, "{e:?}");
    // Three trains that agree are enough; two are not.
    assert!(
        summarize(&[fast(24_000), fast(24_000), fast(24_000)], 48, 1500)
            .expect("e")
            .agreed
    );
    assert!(!summarize(&[fast(24_000), fast(24_000)], 48, 1500).expect("e").agreed);
}

#[test]
fn compressed_trains_do_not_outvote_dispersed_ones() {
    // The lab under heavy CPU steal: four trains released in a burst after the 500 Mbit/s
    // bottleneck (2.5 Gbit/s, their replies as tight as the requests left), three intact.
    let compressed = |ns| TrainOutcome {
        replies: train(ns, 48, 1500),
        send_span_ns: 400_000,
    };
    let mut v = vec![
        compressed(4_800),
        compressed(4_700),
        outcome(24_000, 48),
        compressed(4_750),
    ];
    v.extend([outcome(24_050, 48), compressed(4_790), outcome(23_980, 48)]);
    let e = summarize(&v, 48, 1500).expect("estimate");
    assert_eq!((e.used, e.dispersed, e.agreeing), (7, 3, 3));
    assert!(e.bps.abs_diff(500_000_000) < 1_000_000 && !e.sender_limited, "{e:?}");
    assert!(e.agreed);
    // Two intact trains are not enough to overrule: the densest of all, flagged, and
    // another round is due (some trains were dispersed).
    v.pop();
    let e = summarize(&v, 48, 1500).expect("estimate");
    assert_eq!((e.dispersed, e.agreeing), (2, 4));
    assert!(e.sender_limited && e.bps > 2_000_000_000 && !e.agreed, "{e:?}");
}

#[test]
fn summary_flags_sender_limited_trains() {
    // Replies 10 µs apart, 47 × 10 µs = 470 µs, sent in 400 µs: no more spread than sent.
    let mut t = outcome(10_000, 48);
    t.send_span_ns = 400_000;
    let e = summarize(&[t.clone(), t.clone(), outcome(10_000, 48)], 48, 1500).expect("estimate");
    assert!(e.sender_limited, "{e:?}");
    assert_eq!(e.bps, 1_200_000_000);
}

#[test]
fn summary_errors_say_why() {
    let none = summarize(&vec![TrainOutcome::default(); 3], 48, 1500).expect_err("no replies");
    assert_eq!(none, "no echo reply to 3 trains of 48 requests of 1500 bytes");
    let short = summarize(&[outcome(1000, 10), outcome(1000, 5)], 48, 1500).expect_err("short");
    assert_eq!(
        short,
        "every train lost more than half its replies (15 of 96 came back)"
    );
    let flat = summarize(&[outcome(0, 48)], 48, 1500).expect_err("flat");
    assert!(flat.contains("same instant"), "{flat}");
}

#[test]
fn echo_requests_and_replies() {
    let p = echo_request(false, 0x1234, 7, 1472);
    assert_eq!(p.len(), 1472);
    assert_eq!((p[0], p[1]), (8, 0));
    assert_eq!(icmp_checksum(&p), 0, "a checksummed packet sums to zero");

    // The reply a ping socket hands over: ICMP only, 20 header bytes added.
    let mut reply = p.clone();
    reply[0] = 0;
    assert_eq!(parse_echo_reply(&reply, false, false, None), Some((7, 1492)));
    assert_eq!(parse_echo_reply(&p, false, false, None), None, "a request is no reply");
    // The raw socket's: IP header first; the total length is taken from it; ident filtered.
    let mut ip = vec![0x45, 0, 0x05, 0xdc];
    ip.resize(20, 0);
    ip.extend_from_slice(&reply);
    assert_eq!(parse_echo_reply(&ip, false, true, Some(0x1234)), Some((7, 1500)));
    assert_eq!(parse_echo_reply(&ip, false, true, Some(0x4321)), None);
    assert_eq!(parse_echo_reply(&ip[..10], false, true, None), None);

    let mut v6 = echo_request(true, 1, 65535, 1460);
    assert_eq!(v6[0], 128);
    v6[0] = 129;
    assert_eq!(parse_echo_reply(&v6, true, false, Some(1)), Some((65535, 1500)));
}

#[test]
fn bad_train_shapes_are_refused() {
    let lo = IpAddr::from([127, 0, 0, 1]);
    assert!(estimate_capacity(lo, 1500, 0, 48, Duration::from_secs(1)).is_err());
    assert!(estimate_capacity(lo, 1500, 5, 1, Duration::from_secs(1)).is_err());
    assert!(estimate_capacity(lo, 1500, 1000, 1000, Duration::from_secs(1)).is_err());
}

#[cfg(target_os = "linux")]
#[test]
#[cfg_attr(not(feature = "privileged-tests"), ignore = "privileged: needs root")]
fn trains_to_loopback() {
    let _serial = crate::measure::tests::icmp_test_lock();
    let access = crate::measure::icmp::PingAccess::current();
    assert!(
        access.is_root() || access.dgram_allowed(),
        "needs root or ping_group_range (a privileged test: never skipped)"
    );
    let started = std::time::Instant::now();
    let e = estimate_capacity(IpAddr::from([127, 0, 0, 1]), 1500, 3, 16, Duration::from_millis(500))
        .expect("loopback answers");
    // 0.4 to 0.6 s here; a hang guard with room for this VM's stalls.
    assert!(started.elapsed() < Duration::from_secs(5), "{:?}", started.elapsed());
    assert_eq!((e.per_train, e.packet_bytes), (16, 1500));
    assert!(
        e.trains.is_multiple_of(3) && e.trains <= 3 * MAX_ROUNDS,
        "whole rounds of 3: {e:?}"
    );
    assert!(e.used >= 1 && e.bps > 0, "{e:?}");
}
