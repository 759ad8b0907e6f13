#!/usr/bin/env bash
# Benchmark the packet-train bottleneck estimate of `tcptune advise --host` on the lab path.
#
#   bench/capacity.sh [RUNS] [PART]   (default: 5 runs per case, both parts)
#
# PART rtt: for each rate (50mbit, 500mbit, none = the line at full speed) and RTT (40ms,
# 150ms, 600ms) it builds a lab (lab/lab.sh, its default backend and delay line) and runs
# advise --host RUNS times. Target: within ±5 % of 50 and 500 Mbit/s.
#
# PART forwarders: at 75 ms and 100, 500 and 1000 Mbit/s, the tun backend's delay line as a
# forwarder of four kinds: rt (real-time priority, the default), nort (--rt-prio 0: its threads
# wake late under load), and batches300 / batches1000 (nort, and stopped with SIGSTOP for 300 µs
# of every 600 µs, or 1 ms of every 2 ms: a forwarder that runs in batches, as a descheduled
# virtual machine or a throttled container does; the replies come back in bursts). Target:
# within ±10 % of the rate, the bursts seen (issue 22).
#
# Each line: the estimate, its error against the lab's rate (IP bytes, as the lab counts them),
# the used trains, whether they were sender-limited, which trains the estimate is from
# (trains, or long trains of N), the burst signature (replies per burst @ period), and the wall
# time with and without the trains (--no-capacity); the load average when the lab came up.
# Needs root. Takes the lab lock as the lab tests do. Traffic stays inside the lab namespaces.
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-5}
part=${2:-all}
target=${CARGO_TARGET_DIR:-$PWD/target}
cargo build --quiet --release -p tcptune -p delayline
export DELAYLINE_BIN="$target/release/delayline"
bin="$target/release/tcptune"
lab="bcap$$"
out=$(mktemp)
freezer=""
# One lab at a time on this host (tests/support/lab.rs: HOST_LOCK).
exec 9>/run/lock/tcptune-lab-tests.lock
flock 9
stop_freezer() {
  if [[ -n $freezer ]]; then
    kill "$freezer" 2>/dev/null || true
    wait "$freezer" 2>/dev/null || true
    freezer=""
  fi
}
trap 'stop_freezer; rm -f "$out"; bash lab/lab.sh down "$lab" >/dev/null 2>&1 || true' EXIT INT TERM

wall() { # wall seconds of: advise --host ADDR_B [extra args]
  local s e
  s=$(date +%s.%N)
  ip netns exec "$NS_A" "$bin" advise --host "$ADDR_B" --no-path-test --format json "$@" >"$out"
  e=$(date +%s.%N)
  awk -v s="$s" -v e="$e" 'BEGIN { printf "%.3f", e - s }'
}

# Stops PID for STOP_US of every PERIOD_US (SIGSTOP/SIGCONT, real-time priority, absolute
# deadlines) until killed, and lets it go on.
start_freezer() {
  python3 - "$1" "$2" "$3" <<'PY' &
import os, signal, sys, time
pid, stop, period = int(sys.argv[1]), int(sys.argv[2]) / 1e6, int(sys.argv[3]) / 1e6
try:
    os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(20))
except OSError:
    pass
running = True
def halt(*_):
    global running
    running = False
signal.signal(signal.SIGTERM, halt)
t = time.monotonic()
try:
    while running:
        os.kill(pid, signal.SIGSTOP)
        t += stop
        time.sleep(max(0.0, t - time.monotonic()))
        os.kill(pid, signal.SIGCONT)
        t += period - stop
        time.sleep(max(0.0, t - time.monotonic()))
finally:
    os.kill(pid, signal.SIGCONT)
PY
  freezer=$!
}

# One lab: case label, lab.sh up options; $DL: delay-line options; $FREEZE: "STOP_US PERIOD_US".
run_case() {
  local rate=$1 rtt=$2 fwd=$3 base w load
  shift 3
  DELAYLINE_ARGS="${DL:-}" bash lab/lab.sh up "$lab" --rtt "$rtt" "$@" >/dev/null
  eval "$(bash lab/lab.sh env "$lab")"
  load=$(cut -d' ' -f1 /proc/loadavg)
  if [[ -n ${FREEZE:-} ]]; then
    # shellcheck disable=SC2086
    start_freezer "$DELAYLINE_PID" $FREEZE
  fi
  base=$(wall --no-capacity)
  for _ in $(seq "$runs"); do
    w=$(wall)
    python3 - "$out" "$rate" "$rtt" "$fwd" "$w" "$base" "${RATE_BPS:-}" "$load" <<'PY'
import json, sys
path, rate, rtt, fwd, wall, base, ref, load = sys.argv[1:]
v = json.load(open(path))
c = v["hosts"][0]["measurement"]["capacity"] or {}
bps = c.get("bps")
err = "-" if not (bps and ref) else "%+.2f" % ((bps - int(ref)) / int(ref) * 100)
reading = c.get("reading", "-")
if reading == "long_trains":
    reading = "long %d" % c["long"]["per_train"]
b = c.get("bursty")
bursts = "%d@%dus" % (b["packets"], b["period_us"]) if b else "-"
print("%-8s %-6s %-11s %5s %8s %8s %14s %8s %5s %7s %-9s %-10s" % (
    rate, rtt, fwd, load, wall, base, bps, err, c.get("used"), c.get("sender_limited"), reading, bursts))
PY
  done
  stop_freezer
  bash lab/lab.sh down "$lab" >/dev/null
}

printf '%-8s %-6s %-11s %5s %8s %8s %14s %8s %5s %7s %-9s %-10s\n' \
  rate rtt forwarder load wall_s base_s capacity_bps err_pct used limited reading bursts
if [[ $part == all || $part == rtt ]]; then
  for rate in 50mbit 500mbit none; do
    for rtt in 40ms 150ms 600ms; do
      if [[ $rate == none ]]; then
        DL="" FREEZE="" run_case "$rate" "$rtt" default
      else
        DL="" FREEZE="" run_case "$rate" "$rtt" default --rate "$rate"
      fi
    done
  done
fi
if [[ $part == all || $part == forwarders ]]; then
  for rate in 100mbit 500mbit 1gbit; do
    DL="" FREEZE="" run_case "$rate" 75ms rt --rate "$rate" --backend tun
    DL="--rt-prio 0" FREEZE="" run_case "$rate" 75ms nort --rate "$rate" --backend tun
    DL="--rt-prio 0" FREEZE="300 600" run_case "$rate" 75ms batches300 --rate "$rate" --backend tun
    DL="--rt-prio 0" FREEZE="1000 2000" run_case "$rate" 75ms batches1000 --rate "$rate" --backend tun
  done
fi
