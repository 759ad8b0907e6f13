#!/usr/bin/env bash
# What `tcptune watch` costs the host it watches: its CPU time over a watch of DUR (default 20 s) at
# the default 1-s interval and at 0.2 s, with 8 busy flows (iperf3 -P 8 over loopback) and with 1000
# more idle connections in the socket table (each interval dumps them all through INET_DIAG).
# Loopback only. Prints one line per case: CPU seconds, and percent of one core.
# Usage: bash bench/watch.sh [DUR_SECONDS]
set -euo pipefail
cd "$(dirname "$0")/.."
dur=${1:-20}
bin=target/release/tcptune
cargo build --release --quiet
command -v iperf3 >/dev/null || { echo "bench/watch.sh: needs iperf3 (apt-get install iperf3)" >&2; exit 2; }
port=5399
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; }
trap cleanup EXIT

iperf3 -s -p "$port" >/dev/null 2>&1 & pids+=($!)
sleep 0.5
iperf3 -c 127.0.0.1 -p "$port" -P 8 -b 200M -t $((dur * 4 + 20)) >/dev/null 2>&1 & pids+=($!)
sleep 1

measure() { # label, args...
  local label=$1; shift
  local t0 t1
  t0=$(date +%s.%N)
  local out
  out=$( { /usr/bin/env bash -c 'TIMEFORMAT="%U %S"; time "$@" >/dev/null' _ "$bin" watch --for "${dur}s" --format json "$@" ; } 2>&1 )
  t1=$(date +%s.%N)
  read -r user sys <<<"$out"
  awk -v l="$label" -v u="$user" -v s="$sys" -v d="$dur" \
    'BEGIN { printf "%-44s cpu %.3f s (user %.3f, sys %.3f) = %.2f %% of one core over %d s\n", l, u+s, u, s, (u+s)/d*100, d }'
}

echo "tcptune watch, $(nproc) cores, $(uname -r), $(date -u +%F)"
measure "8 busy flows, every 1 s"
measure "8 busy flows, every 0.2 s" --interval 0.2s
python3 - "$port" <<'PY' & pids+=($!)
import socket, sys, time
srv = socket.socket(); srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
srv.bind(("127.0.0.1", 0)); srv.listen(2048)
conns = []
for _ in range(1000):
    c = socket.create_connection(srv.getsockname()); a, _ = srv.accept(); conns += [c, a]
time.sleep(3600)
PY
sleep 2
measure "8 busy + 1000 idle connections, every 1 s"
measure "8 busy + 1000 idle connections, every 0.2 s" --interval 0.2s
