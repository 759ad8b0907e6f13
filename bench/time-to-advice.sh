#!/usr/bin/env bash
# Time to advice (issue 45): how long `advise --ssh` (both directions, both ends) and
# `advise --host` against a `tcptune serve` take, from the command to the advice, on each path.
#
#   bench/time-to-advice.sh [--bin PATH] [--runs N] [--paths "RTT:RATE[:loss=PCT][:queue=F] ..."]
#                           [-- ADVISE-OPTIONS...]
#
# For each path: builds the lab (lab/lab.sh, tun backend, RTT/2 of delay each way, a RATE
# bottleneck with a drop-tail queue of F × BDP (default 1), random loss PCT % each way), sets both
# namespaces to the kernel's stock buffers and cubic, starts an sshd in B (bench/sshd.sh: this
# tcptune on its sessions' PATH) and a `tcptune serve` in B, then runs in A, N times each:
#   tcptune advise --ssh far --ssh-command "ssh -F CONFIG" --format json ADVISE-OPTIONS
#   tcptune advise --host ADDR_B --format json ADVISE-OPTIONS
# and prints a Markdown table: the wall time of each (the median of N), the target 8 s + 20 RTT,
# the class each read, each one's own phases as its JSON says them (where it says them), and the
# advised receive maximum in × the path's BDP. --bin: the tcptune to time (default: this tree's
# release build); the delay line is always this tree's. Needs root, iproute2, openssh-server.
# Default paths: bench/wan.sh's. Traffic stays inside the namespaces (198.18.0.0/15).
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=bench/sshd.sh
source bench/sshd.sh

paths="10ms:1gbit 25ms:1gbit 40ms:100mbit:queue=4 50ms:200mbit:loss=1 25ms:100mbit:loss=2
	75ms:1gbit:nort 150ms:500mbit 150ms:500mbit:loss=0.001 150ms:500mbit:loss=0.01
	150ms:500mbit:loss=0.1 150ms:500mbit:queue=0.1 250ms:50mbit 600ms:100mbit:loss=0.05"
runs=1 bin=""
while (($#)); do
	case $1 in
	--bin) bin=$2; shift 2 ;;
	--runs) runs=$2; shift 2 ;;
	--paths) paths=$2; shift 2 ;;
	--) shift; break ;;
	*) echo "time-to-advice.sh: unknown option $1" >&2; exit 2 ;;
	esac
done

cargo build --quiet --release -p tcptune -p delayline
export DELAYLINE_BIN="$PWD/target/release/delayline"
[[ -n $bin ]] || bin="$PWD/target/release/tcptune"
bin=$(realpath "$bin")
d="$(mktemp -d)"
lab="tta$$"
allowed_cc=$(sysctl -n net.ipv4.tcp_allowed_congestion_control)
cleanup() {
	[[ -s $d/sshd.pid ]] && kill "$(cat "$d/sshd.pid")" 2>/dev/null
	[[ -s $d/serve.pid ]] && kill "$(cat "$d/serve.pid")" 2>/dev/null
	bash lab/lab.sh down "$lab" >/dev/null 2>&1 || true
}
trap 'cleanup; rm -rf "$d"; sysctl -qw net.ipv4.tcp_allowed_congestion_control="$allowed_cc" || true' EXIT
# The namespaces stand for whole hosts: root there may choose any available algorithm.
sysctl -qw net.ipv4.tcp_allowed_congestion_control="$(sysctl -n net.ipv4.tcp_available_congestion_control)"

# The median of the numbers on stdin.
median() { sort -g | awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else printf "%.2f\n", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
# What a run's JSON says: class, receive max ÷ BDP, phases (when it has them).
readout() {
	jq -r '[.decision.class,
	        ((.settings[] | select(.key == "net.ipv4.tcp_rmem") | .value | split(" ") | .[2] | tonumber) / .sizing.bdp
	         | . * 100 | round / 100),
	        ((.timing // {}) | to_entries | map(select(.value != null))
	         | map("\(.key | sub("_s$"; "")) \(.value | . * 10 | round / 10)") | join(", "))]
	       | @tsv' "$1" 2>/dev/null || printf 'unreadable\t\t\n'
}

echo "time-to-advice.sh: $(date -u +%FT%TZ), $(uname -r), $(nproc) CPUs, $("$bin" --version), runs $runs, $*" >&2
echo "| path | target s | --ssh s | --ssh class | --ssh rmem × BDP | --ssh phases | --host s | --host class | --host rmem × BDP | --host phases |"
echo "|---|---|---|---|---|---|---|---|---|---|"
for path in $paths; do
	IFS=: read -r rtt rate m1 m2 <<<"$path"
	loss=() factor=1 dl_args=""
	for m in ${m1:-} ${m2:-}; do
		case $m in
		loss=*) loss=(--loss "${m#loss=}") ;;
		queue=*) factor=${m#queue=} ;;
		nort) dl_args="--rt-prio 0" ;;
		esac
	done
	bdp=$("$bin" calc --bandwidth "$rate" --rtt "$rtt" --format json | sed -n 's/^ *"bdp_bytes": \([0-9]*\),$/\1/p')
	queue=$(awk -v b="$bdp" -v f="$factor" 'BEGIN { printf "%d", b * f }')
	DELAYLINE_ARGS=$dl_args bash lab/lab.sh up "$lab" --rtt "$rtt" --rate "$rate" --queue "$queue" --backend tun \
		"${loss[@]}" >/dev/null
	eval "$(bash lab/lab.sh env "$lab")"
	for ns in "$NS_A" "$NS_B"; do
		ip netns exec "$ns" sysctl -qw net.ipv4.tcp_rmem="4096 131072 6291456" \
			net.ipv4.tcp_wmem="4096 16384 4194304" net.ipv4.tcp_congestion_control=cubic
	done
	lab_sshd "$d" "$NS_B" "$ADDR_B" "$bin"
	ip netns exec "$NS_B" "$bin" serve --bind "$ADDR_B" >"$d/serve.log" 2>&1 &
	echo $! >"$d/serve.pid"
	sleep 0.5
	rtt_s=$(awk -v r="${rtt%ms}" 'BEGIN { printf "%.1f", 8 + 20 * r / 1000 }')
	: >"$d/ssh.t"
	: >"$d/host.t"
	for i in $(seq "$runs"); do
		for what in ssh host; do
			case $what in
			ssh) args=(advise --ssh far --ssh-command "ssh -F $d/config" --format json "$@") ;;
			host) args=(advise --host "$ADDR_B" --format json "$@") ;;
			esac
			t0=$(date +%s.%N)
			ip netns exec "$NS_A" "$bin" "${args[@]}" >"$d/$what.json" 2>"$d/$what.err" || true
			awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.2f\n", b - a }' >>"$d/$what.t"
			echo "  $path run $i $what: $(tail -1 "$d/$what.t") s, $(readout "$d/$what.json" | cut -f1,2 | tr '\t' ' ')" >&2
		done
	done
	IFS=$'\t' read -r sc sr sp < <(readout "$d/ssh.json")
	IFS=$'\t' read -r hc hr hp < <(readout "$d/host.json")
	echo "| $path | $rtt_s | $(median <"$d/ssh.t") | $sc | $sr | $sp | $(median <"$d/host.t") | $hc | $hr | $hp |"
	cleanup
	rm -f "$d/sshd.pid" "$d/serve.pid"
done
