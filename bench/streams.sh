#!/usr/bin/env bash
# Parallel streams (issue 47): does the count advise gives where the loss holds one CUBIC flow fill
# the path? On the lab (tun delay line, RTT/2 each way, a RATE bottleneck with a 1 × BDP drop-tail
# queue, random loss PCT % each way), `tcptune advise --host B` measures the path against a copy of
# A's sysctls whose only congestion controls are reno and cubic (a host without BBR: the count is
# advised only then), and prints its streams. Then iperf3 -C cubic -P N from A for N = 1, half the
# count, the count and twice it, RUNS times each, and the median goodput (what B received).
#
#   sudo bash bench/streams.sh [--runs N] [--time S] [--paths "RTT:RATE:LOSS ..."]
#
# Needs root, iproute2, iperf3, jq. Traffic stays inside the namespaces (198.18.0.0/15).
set -euo pipefail
cd "$(dirname "$0")/.."

paths="50ms:200mbit:0.1 100ms:200mbit:0.05"
runs=3 time=10
while (($#)); do
	case $1 in
	--runs) runs=$2; shift 2 ;;
	--time) time=$2; shift 2 ;;
	--paths) paths=$2; shift 2 ;;
	*) echo "streams.sh: unknown option $1" >&2; exit 2 ;;
	esac
done
for p in iperf3 jq; do command -v "$p" >/dev/null || { echo "streams.sh: needs $p" >&2; exit 1; }; done

cargo build --quiet --release -p tcptune -p delayline
export DELAYLINE_BIN="$PWD/target/release/delayline"
bin="$PWD/target/release/tcptune"
d="$(mktemp -d)"
lab="bs$$"
allowed_cc=$(sysctl -n net.ipv4.tcp_allowed_congestion_control)
cleanup() {
	for f in "$d"/*.pid; do [[ -s $f ]] && kill "$(cat "$f")" 2>/dev/null || true; done
	rm -f "$d"/*.pid
	bash lab/lab.sh down "$lab" >/dev/null 2>&1 || true
}
trap 'cleanup; rm -rf "$d"; sysctl -qw net.ipv4.tcp_allowed_congestion_control="$allowed_cc" || true' EXIT
sysctl -qw net.ipv4.tcp_allowed_congestion_control="$(sysctl -n net.ipv4.tcp_available_congestion_control)"

median() { sort -g | awk '{ v[NR] = $1 } END { if (NR == 0) print "-"; else if (NR % 2) print v[(NR + 1) / 2]; else printf "%.6g\n", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

echo "streams.sh: $(date -u +%FT%TZ), $(uname -r), $(nproc) CPUs, $(iperf3 --version | head -1), runs $runs, ${time} s each" >&2
echo "| path | advised: one CUBIC flow, streams | -P | goodput Mbit/s (median) | of the path |"
echo "|---|---|---|---|---|"
for path in $paths; do
	IFS=: read -r rtt rate loss <<<"$path"
	bdp=$("$bin" calc --bandwidth "$rate" --rtt "$rtt" --format json | jq -r '.bdp_bytes | ceil')
	bash lab/lab.sh up "$lab" --rtt "$rtt" --rate "$rate" --queue "$bdp" --backend tun --tcp-mem 67108864 \
		--loss "$loss" >/dev/null
	eval "$(bash lab/lab.sh env "$lab")"
	ip netns exec "$NS_B" "$bin" serve --bind "$ADDR_B" >"$d/serve.log" 2>&1 &
	echo $! >"$d/serve.pid"
	ip netns exec "$NS_B" iperf3 -s -B "$ADDR_B" >"$d/iperf.log" 2>&1 &
	echo $! >"$d/iperf.pid"
	sleep 1
	# A's running values, as a tree without BBR.
	tree="$d/tree"
	rm -rf "$tree"
	for k in net.ipv4.tcp_rmem net.ipv4.tcp_wmem net.core.rmem_max net.core.wmem_max net.ipv4.tcp_window_scaling \
		net.ipv4.tcp_mtu_probing net.ipv4.tcp_slow_start_after_idle net.ipv4.tcp_notsent_lowat \
		net.ipv4.tcp_congestion_control net.ipv4.tcp_mem net.core.netdev_max_backlog net.core.default_qdisc; do
		f="$tree/${k//.//}"
		mkdir -p "$(dirname "$f")"
		ip netns exec "$NS_A" sysctl -n "$k" >"$f" 2>/dev/null || rm -f "$f"
	done
	echo "reno cubic" >"$tree/net/ipv4/tcp_available_congestion_control"
	echo "reno cubic" >"$tree/net/ipv4/tcp_allowed_congestion_control"
	echo cubic >"$tree/net/ipv4/tcp_congestion_control"
	ip netns exec "$NS_A" "$bin" advise --host "$ADDR_B" --sysctl-dir "$tree" --format json >"$d/advice.json"
	n=$(jq -r '[.streams[] | select(.bound == "loss")][0].count // 0' "$d/advice.json")
	one=$(jq -r '[.streams[] | select(.bound == "loss")][0].per_flow_bps // 0' "$d/advice.json")
	measured=$(jq -r '.decision.loss_pct // "-"' "$d/advice.json")
	said="loss ${measured} %: $(awk -v b="$one" 'BEGIN { printf "%.1f", b / 1e6 }') Mbit/s, $n"
	counts="1"
	if ((n > 1)); then
		half=$(((n + 1) / 2))
		counts="1 $half $n $((2 * n))"
	fi
	for p in $counts; do
		for r in $(seq "$runs"); do
			ip netns exec "$NS_A" iperf3 -c "$ADDR_B" -C cubic -P "$p" -t "$time" -O 2 -J \
				| jq -r '.end.sum_received.bits_per_second' >>"$d/p$p"
		done
		g=$(median <"$d/p$p")
		rm -f "$d/p$p"
		printf '| %s %s, %s %% loss | %s | %s | %.1f | %.0f %% |\n' "$rtt" "$rate" "$loss" "$said" "$p" \
			"$(awk -v g="$g" 'BEGIN { print g / 1e6 }')" \
			"$(awk -v g="$g" -v r="$("$bin" calc --bandwidth "$rate" --rtt "$rtt" --format json | jq -r .bandwidth_bps)" 'BEGIN { print 100 * g / r }')"
	done
	cleanup
done
