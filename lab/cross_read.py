#!/usr/bin/env python3
"""Cross traffic read back: `lab.sh cross NAME read` runs this (lab/lab.sh's header says more).

    cross_read.py DIR RTT_NS FROM TO
    cross_read.py --origin FILE.json RTT_NS


DIR holds each cross flow's iperf3 JSON (long-K.json, onoff-K.json) with its port (.port) and
launch time (.t0, epoch seconds). FROM and TO are epoch seconds, 0 for no bound. Prints one line
per long flow and one for the on/off flow (all its runs), then the total:

    flow port seconds bits_per_second retransmits cc

seconds: how long the flow ran within the window; bits_per_second: its bytes in the window over
the window's length (over its own run when the window is open); retransmits: in the window; cc:
the sender's congestion control. Figures are the sender's per-second intervals; an interval in
part in the window counts in part.

With --origin: the epoch second at which that iperf3 client's interval clock started, by the same
rule (FILE.t0 beside it holds its launch time), so that bench/wan.sh can read the cross flows over
its own flow's measured window.
"""
import glob
import json
import math
import os
import sys

# The client's interval clock starts when the server says TEST_START: after the control
# connection, the parameter exchange and the data connection, about this many round trips
# after launch (measured in the lab: 5.1 at 100 ms, the clients' start-up included).
SETUP_RTTS = 5


def flow_origin(path, d, rtt_s):
    """Epoch seconds at which the flow's interval clock (interval start 0) started."""
    intervals = d.get("intervals") or []
    stamp = d.get("start", {}).get("timestamp", {}).get("timesecs")
    if "interrupt" in str(d.get("error", "")) and intervals:
        # Stopped by a signal: iperf3 closed its last interval at the signal and wrote the JSON
        # at once, so the file's time less that interval's end is the origin, to a few ms.
        origin = os.stat(path).st_mtime - intervals[-1]["sum"]["end"]
    else:
        with open(path[: -len(".json")] + ".t0", encoding="utf-8") as f:
            origin = float(f.read().strip()) + SETUP_RTTS * rtt_s
    if stamp is not None:
        # The client's whole-second stamp of its connection, taken before the clock started.
        origin = max(origin, float(stamp))
    return origin


def read_flow(path, rtt_s, lo, hi):
    """(seconds, bytes, retransmits, first, last, cc) of one run within [lo, hi]."""
    try:
        with open(path, encoding="utf-8") as f:
            d = json.load(f)
    except (OSError, ValueError):
        return None
    intervals = d.get("intervals") or []
    if not intervals:
        return None
    origin = flow_origin(path, d, rtt_s)
    secs = nbytes = retr = 0.0
    first, last = math.inf, -math.inf
    for iv in intervals:
        s = iv["sum"]
        a, b = origin + s["start"], origin + s["end"]
        if b <= a:
            continue
        ov = min(b, hi) - max(a, lo)
        if ov <= 0:
            continue
        frac = ov / (b - a)
        secs += ov
        nbytes += frac * s.get("bytes", 0)
        retr += frac * s.get("retransmits", 0)
        first, last = min(first, max(a, lo)), max(last, min(b, hi))
    cc = d.get("end", {}).get("sender_tcp_congestion", "?")
    return secs, nbytes, retr, first, last, cc


def main():
    if sys.argv[1] == "--origin":
        path, rtt_s = sys.argv[2], int(sys.argv[3]) / 1e9
        with open(path, encoding="utf-8") as f:
            print(f"{flow_origin(path, json.load(f), rtt_s):.6f}")
        return
    directory, rtt_ns, lo, hi = sys.argv[1], int(sys.argv[2] or 0), float(sys.argv[3]), float(sys.argv[4])
    rtt_s = rtt_ns / 1e9
    lo = lo or -math.inf
    hi = hi or math.inf
    window = hi - lo if math.isfinite(hi - lo) else None

    def port_of(path):
        try:
            with open(path[: -len(".json")] + ".port", encoding="utf-8") as f:
                return f.read().strip()
        except OSError:
            return "-"

    flows = []
    longs = sorted(glob.glob(os.path.join(directory, "long-*.json")), key=lambda p: int(p.rsplit("-", 1)[1][:-5]))
    for path in longs:
        flows.append((os.path.basename(path)[:-5], port_of(path), [read_flow(path, rtt_s, lo, hi)]))
    onoff = sorted(glob.glob(os.path.join(directory, "onoff-*.json")))
    if onoff:
        flows.append(("onoff", port_of(onoff[0]), [read_flow(p, rtt_s, lo, hi) for p in onoff]))

    print("# flow port seconds bits_per_second retransmits cc")
    total_bytes = total_retr = 0.0
    span_lo, span_hi = math.inf, -math.inf
    for name, port, runs in flows:
        runs = [r for r in runs if r is not None]
        if not runs:
            print(f"{name} {port} 0.00 0 0 ?")
            continue
        secs = sum(r[0] for r in runs)
        nbytes = sum(r[1] for r in runs)
        retr = sum(r[2] for r in runs)
        first, last = min(r[3] for r in runs), max(r[4] for r in runs)
        span_lo, span_hi = min(span_lo, first), max(span_hi, last)
        over = window if window else max(last - first, 1e-9)
        total_bytes += nbytes
        total_retr += retr
        print(f"{name} {port} {secs:.2f} {nbytes * 8 / over:.0f} {retr:.0f} {runs[0][5]}")
    over = window if window else max(span_hi - span_lo, 1e-9)
    secs = window if window else max(span_hi - span_lo, 0.0)
    print(f"total - {secs:.2f} {total_bytes * 8 / over:.0f} {total_retr:.0f} -")


if __name__ == "__main__":
    main()
