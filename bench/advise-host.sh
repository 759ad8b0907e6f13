#!/usr/bin/env bash
# Benchmark `tcptune advise --host` against `ping -c 10 -i 0.2` on the lab path.
#
#   bench/advise-host.sh [RTT ...]     (default: 25ms 150ms)
#
# For each RTT it builds a lab (lab/lab.sh), then prints, over 5 runs each:
# advise's wall time, ping's wall time, the probe schedule (probes x interval + RTT),
# the margin over the schedule (target: <= 0.3 s), and the RTT error of each tool
# against the emulated RTT. Needs root. Traffic stays inside the lab namespaces.
# The round trips only (--no-capacity): bench/capacity.sh measures the packet trains.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --quiet --release -p tcptune -p delayline
export DELAYLINE_BIN="$PWD/target/release/delayline"
bin="$PWD/target/release/tcptune"
lab="bah$$"
trap 'bash lab/lab.sh down "$lab" >/dev/null 2>&1 || true' EXIT INT TERM
runs=5
printf '%-8s %-8s %10s %10s %10s %10s %12s %12s\n' rtt tool wall_s sched_s margin_s min_ms err_ms err_pct
for rtt in "${@:-25ms 150ms}"; do
  for r in $rtt; do
    bash lab/lab.sh up "$lab" --rtt "$r" >/dev/null
    eval "$(bash lab/lab.sh env "$lab")"
    true_ms=$(awk -v ns="$RTT_NS" 'BEGIN { printf "%.3f", ns / 1e6 }')
    sched=$(awk -v t="$true_ms" 'BEGIN { printf "%.3f", 10 * 0.020 + t / 1000 }')
    for i in $(seq $runs); do
      s=$(date +%s.%N)
      min=$(ip netns exec "$NS_A" "$bin" advise --host "$ADDR_B" --no-capacity --format json | python3 -c 'import json,sys; print(json.load(sys.stdin)["rtt_ms"])')
      e=$(date +%s.%N)
      awk -v r="$r" -v s="$s" -v e="$e" -v m="$min" -v t="$true_ms" -v sc="$sched" 'BEGIN {
        w = e - s; printf "%-8s %-8s %10.3f %10.3f %10.3f %10.3f %12.3f %11.2f%%\n", r, "tcptune", w, sc, w - sc, m, m - t, (m - t) / t * 100 }'
    done
    for i in $(seq 2); do
      s=$(date +%s.%N)
      min=$(ip netns exec "$NS_A" ping -q -c 10 -i 0.2 "$ADDR_B" | awk -F'[/ ]' '/^rtt/ { print $7 }')
      e=$(date +%s.%N)
      awk -v r="$r" -v s="$s" -v e="$e" -v m="$min" -v t="$true_ms" 'BEGIN {
        w = e - s; sc = 9 * 0.2 + t / 1000; printf "%-8s %-8s %10.3f %10.3f %10.3f %10.3f %12.3f %11.2f%%\n", r, "ping", w, sc, w - sc, m, m - t, (m - t) / t * 100 }'
    done
    bash lab/lab.sh down "$lab" >/dev/null
  done
done
