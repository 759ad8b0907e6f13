#!/usr/bin/env bash
# Benchmark the packet-train bottleneck estimate of `tcptune advise --host` on the lab path.
#
#   bench/capacity.sh [RUNS]     (default: 5 runs per case)
#
# For each rate (50mbit, 500mbit, none = the line at full speed) and RTT (40ms, 150ms,
# 600ms) it builds a lab (lab/lab.sh), runs advise --host RUNS times and prints the
# estimate, its error against the lab's rate (IP bytes, as the lab counts them), the used
# trains, whether the trains were sender-limited, and the wall time with and without the
# trains (--no-capacity). Target: within ±5 % of 50 and 500 Mbit/s. Needs root. Traffic
# stays inside the lab namespaces.
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-5}
target=${CARGO_TARGET_DIR:-$PWD/target}
cargo build --quiet --release -p tcptune -p delayline
export DELAYLINE_BIN="$target/release/delayline"
bin="$target/release/tcptune"
lab="bcap$$"
out=$(mktemp)
trap 'rm -f "$out"; bash lab/lab.sh down "$lab" >/dev/null 2>&1 || true' EXIT INT TERM

wall() { # wall seconds of: advise --host ADDR_B [extra args]
  local s e
  s=$(date +%s.%N)
  ip netns exec "$NS_A" "$bin" advise --host "$ADDR_B" --format json "$@" >"$out"
  e=$(date +%s.%N)
  awk -v s="$s" -v e="$e" 'BEGIN { printf "%.3f", e - s }'
}

printf '%-8s %-6s %8s %8s %14s %8s %5s %7s\n' rate rtt wall_s base_s capacity_bps err_pct used limited
for rate in 50mbit 500mbit none; do
  for rtt in 40ms 150ms 600ms; do
    if [[ $rate == none ]]; then
      bash lab/lab.sh up "$lab" --rtt "$rtt" >/dev/null
    else
      bash lab/lab.sh up "$lab" --rtt "$rtt" --rate "$rate" >/dev/null
    fi
    eval "$(bash lab/lab.sh env "$lab")"
    base=$(wall --no-capacity)
    for _ in $(seq "$runs"); do
      w=$(wall)
      python3 - "$out" "$rate" "$rtt" "$w" "$base" "${RATE_BPS:-}" <<'PY'
import json, sys
path, rate, rtt, wall, base, ref = sys.argv[1:]
v = json.load(open(path))
c = v["hosts"][0]["measurement"]["capacity"] or {}
bps = c.get("bps")
err = "-" if not (bps and ref) else "%+.2f" % ((bps - int(ref)) / int(ref) * 100)
print("%-8s %-6s %8s %8s %14s %8s %5s %7s" % (rate, rtt, wall, base, bps, err, c.get("used"), c.get("sender_limited")))
PY
    done
    bash lab/lab.sh down "$lab" >/dev/null
  done
done
