#!/usr/bin/env bash
# Both directions at once, or one after the other (issue 45): does a path read the same when
# its two directions are tested together? Each direction's data shares its queue with the
# other direction's ACKs, and on a shared or asymmetric path the two may not be independent.
#
#   bench/bidir.sh [--runs N] [--time S] [--paths "RTT:RATE[:loss=PCT][:queue=F][:police-ba=RATE][:cross=N] ..."]
#
# For each path: builds the lab (lab/lab.sh, tun backend, RTT/2 of delay each way, a RATE
# bottleneck each way with a drop-tail queue of F × BDP (default 1), random loss PCT % each
# way, a policer at RATE from B to A only with police-ba (an asymmetric path: the far end's
# uplink slower), N CUBIC flows of others from C to D through A with cross=N), buffers up to
# 64 MiB in A and B, and an iperf3 server in B. Then, N times, from A with BBR (the path test's
# congestion control), S seconds after 2 s of startup omitted:
#   one after the other:  iperf3 -c B -C bbr -t S -O 2 ; iperf3 -c B -C bbr -t S -O 2 -R
#   both at once:         iperf3 -c B -C bbr -t S -O 2 --bidir
# and prints a Markdown table per path and direction: the median goodput each way (what the
# receiver got) and the median of the sender's retransmissions, and at once ÷ alone.
# Needs root, iproute2, iperf3. Traffic stays inside the namespaces (198.18.0.0/15).
set -euo pipefail
cd "$(dirname "$0")/.."

paths="10ms:1gbit 40ms:200mbit 150ms:500mbit 50ms:200mbit:loss=1 40ms:200mbit:police-ba=50mbit
	40ms:100mbit:cross=2"
runs=3 time=6
while (($#)); do
	case $1 in
	--runs) runs=$2; shift 2 ;;
	--time) time=$2; shift 2 ;;
	--paths) paths=$2; shift 2 ;;
	*) echo "bidir.sh: unknown option $1" >&2; exit 2 ;;
	esac
done
command -v iperf3 >/dev/null || { echo "bidir.sh: needs iperf3" >&2; exit 1; }

cargo build --quiet --release -p tcptune -p delayline
export DELAYLINE_BIN="$PWD/target/release/delayline"
bin="$PWD/target/release/tcptune"
d="$(mktemp -d)"
lab="bd$$"
allowed_cc=$(sysctl -n net.ipv4.tcp_allowed_congestion_control)
cleanup() {
	[[ -s $d/server.pid ]] && kill "$(cat "$d/server.pid")" 2>/dev/null
	bash lab/lab.sh cross "$lab" stop >/dev/null 2>&1 || true
	bash lab/lab.sh down "$lab" >/dev/null 2>&1 || true
}
trap 'cleanup; rm -rf "$d"; sysctl -qw net.ipv4.tcp_allowed_congestion_control="$allowed_cc" || true' EXIT
sysctl -qw net.ipv4.tcp_allowed_congestion_control="$(sysctl -n net.ipv4.tcp_available_congestion_control)"

median() { sort -g | awk '{ v[NR] = $1 } END { if (NR == 0) print "-"; else if (NR % 2) print v[(NR + 1) / 2]; else printf "%.6g\n", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
# iperf3 JSON -> "goodput_bps retransmits" of one direction: fwd (A -> B) or rev (B -> A).
read_dir() {
	local file=$1 dir=$2 mode=$3
	case $mode:$dir in
	alone:*) jq -r '"\(.end.sum_received.bits_per_second) \(.end.sum_sent.retransmits // "-")"' "$file" ;;
	bidir:fwd) jq -r '"\(.end.sum_received.bits_per_second) \(.end.sum_sent.retransmits // "-")"' "$file" ;;
	bidir:rev) jq -r '"\(.end.sum_received_bidir_reverse.bits_per_second) \(.end.sum_sent_bidir_reverse.retransmits // "-")"' "$file" ;;
	esac 2>/dev/null || echo "- -"
}

echo "bidir.sh: $(date -u +%FT%TZ), $(uname -r), $(nproc) CPUs, $(iperf3 --version | head -1), runs $runs, ${time} s each" >&2
echo "| path | direction | alone Mbit/s | at once Mbit/s | at once ÷ alone | alone retrans | at once retrans |"
echo "|---|---|---|---|---|---|---|"
for path in $paths; do
	IFS=: read -r rtt rate m1 m2 <<<"$path"
	extra=() factor=1 cross=0
	for m in ${m1:-} ${m2:-}; do
		case $m in
		loss=*) extra+=(--loss "${m#loss=}") ;;
		queue=*) factor=${m#queue=} ;;
		police-ba=*) extra+=(--police-ba "${m#police-ba=}:20ms") ;;
		cross=*) cross=${m#cross=}; extra+=(--cross) ;;
		esac
	done
	bdp=$("$bin" calc --bandwidth "$rate" --rtt "$rtt" --format json | sed -n 's/^ *"bdp_bytes": \([0-9]*\),$/\1/p')
	queue=$(awk -v b="$bdp" -v f="$factor" 'BEGIN { printf "%d", b * f }')
	bash lab/lab.sh up "$lab" --rtt "$rtt" --rate "$rate" --queue "$queue" --backend tun --tcp-mem 67108864 \
		"${extra[@]}" >/dev/null
	eval "$(bash lab/lab.sh env "$lab")"
	ip netns exec "$NS_B" iperf3 -s -B "$ADDR_B" >"$d/server.log" 2>&1 &
	echo $! >"$d/server.pid"
	if ((cross > 0)); then
		bash lab/lab.sh cross "$lab" start "$cross" >/dev/null
		sleep 3
	fi
	sleep 0.5
	for f in fwd.alone rev.alone fwd.bidir rev.bidir; do : >"$d/$f"; done
	for i in $(seq "$runs"); do
		c=(ip netns exec "$NS_A" iperf3 -c "$ADDR_B" -C bbr -t "$time" -O 2 --json)
		"${c[@]}" >"$d/f.json" 2>/dev/null || true
		read_dir "$d/f.json" fwd alone >>"$d/fwd.alone"
		"${c[@]}" -R >"$d/r.json" 2>/dev/null || true
		read_dir "$d/r.json" rev alone >>"$d/rev.alone"
		"${c[@]}" --bidir >"$d/b.json" 2>/dev/null || true
		read_dir "$d/b.json" fwd bidir >>"$d/fwd.bidir"
		read_dir "$d/b.json" rev bidir >>"$d/rev.bidir"
		echo "  $path run $i: alone $(tail -1 "$d/fwd.alone") / $(tail -1 "$d/rev.alone"); at once $(tail -1 "$d/fwd.bidir") / $(tail -1 "$d/rev.bidir")" >&2
	done
	for dir in fwd rev; do
		a=$(cut -d' ' -f1 "$d/$dir.alone" | grep -v '^-$' | median)
		b=$(cut -d' ' -f1 "$d/$dir.bidir" | grep -v '^-$' | median)
		ar=$(cut -d' ' -f2 "$d/$dir.alone" | grep -v '^-$' | median)
		br=$(cut -d' ' -f2 "$d/$dir.bidir" | grep -v '^-$' | median)
		label=$([[ $dir == fwd ]] && echo "A → B" || echo "B → A")
		awk -v p="$path" -v l="$label" -v a="$a" -v b="$b" -v ar="$ar" -v br="$br" 'BEGIN {
			r = (a > 0 && b != "-") ? sprintf("%.3f", b / a) : "-"
			printf "| %s | %s | %.1f | %.1f | %s | %s | %s |\n", p, l, a / 1e6, b / 1e6, r, ar, br }'
	done
	cleanup
	rm -f "$d/server.pid"
done
