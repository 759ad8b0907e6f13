#!/usr/bin/env bash
# Effectiveness benchmark: does tcptune's advice reach line rate with little memory?
#
#   bench/wan.sh [--time auto|SECONDS] [--omit 5] [--paths "25ms:500mbit 150ms:500mbit 600ms:500mbit 40ms:50mbit"]
#                [--settings "stock esnet tcptune"] [--queue BYTES]
#
# For each path it builds the lab (lab/lab.sh: two namespaces, an emulated WAN with one-way
# delay RTT/2, a RATE bottleneck and a drop-tail queue of one BDP unless --queue), applies one
# setting on BOTH ends, and runs
# a single-stream iperf3 (A sends to B) for --time seconds after the first --omit omitted.
# --time auto (the default) is max(25 s, 200 x RTT): slow start needs about log2(BDP / 10
# segments) ≈ 12 round trips, 7.5 s at 600 ms, so past the 5 s omitted a 25 s run at 600 ms
# would measure the ramp, not the buffers; 200 RTTs keep it to a few percent, as it is of any
# transfer worth tuning for (1 TB at 500 Mbit/s takes 4.4 hours). Settings:
#   stock   tcp_rmem 4096 131072 6291456, tcp_wmem 4096 16384 4194304 (kernel defaults)
#   esnet   ESnet fasterdata static values: tcp_rmem 4096 87380 67108864, tcp_wmem 4096 65536 67108864
#   tcptune `tcptune advise --host <peer>` run in each namespace, applied there with `tcptune apply`
#           (starting from stock), reverted afterwards with `tcptune revert`
#   tcptune+loss   the same with `advise --loss-recovery` (5 × BDP both ways)
#   SETTING@CC     any of these with the namespaces' default congestion control set to CC
#                  (e.g. esnet@cubic); otherwise stock and esnet run the host's default
# The namespaces stand for whole hosts, where root may choose any congestion control the
# kernel offers, but a child namespace may choose only those in the host's
# net.ipv4.tcp_allowed_congestion_control: the run widens that list to every available
# algorithm and puts it back on exit (Ctrl-C included). The table's cc column is the sender's.
# Random loss on the path: DELAYLINE_ARGS="--loss 0.01" (percent, each direction). iperf3
# options: IPERF_ARGS (e.g. "-C cubic").
# It prints a Markdown table: path, BDP, setting, cc, seconds, throughput, % of the goodput limit
# (rate × MSS/MTU, MSS = MTU − 52 with timestamps), retransmits, tcp_rmem[2]/BDP (receiver),
# tcp_wmem[2]/BDP (sender). Needs root and iperf3. Traffic stays inside the lab namespaces.
set -euo pipefail
cd "$(dirname "$0")/.."

time_s=auto omit_s=5 queue=""
paths="25ms:500mbit 150ms:500mbit 600ms:500mbit 40ms:50mbit"
settings="stock esnet tcptune"
while (($#)); do
	case $1 in
	--time) time_s=$2; shift 2 ;;
	--omit) omit_s=$2; shift 2 ;;
	--paths) paths=$2; shift 2 ;;
	--settings) settings=$2; shift 2 ;;
	--queue) queue=$2; shift 2 ;;
	*) echo "usage: see the header of $0" >&2; exit 2 ;;
	esac
done
command -v iperf3 >/dev/null || { echo "wan.sh: iperf3 is needed (apt-get install iperf3)" >&2; exit 1; }

cargo build --quiet --release -p tcptune -p delayline
export DELAYLINE_BIN="$PWD/target/release/delayline"
bin="$PWD/target/release/tcptune"
lab="wan$$"
state="$(mktemp -d)"
allowed_cc=$(sysctl -n net.ipv4.tcp_allowed_congestion_control)
trap 'bash lab/lab.sh down "$lab" >/dev/null 2>&1 || true; rm -rf "$state"
	sysctl -qw net.ipv4.tcp_allowed_congestion_control="$allowed_cc" || true' EXIT
trap 'exit 130' INT TERM
sysctl -qw net.ipv4.tcp_allowed_congestion_control="$(sysctl -n net.ipv4.tcp_available_congestion_control)"

to_bps() { # 500mbit -> 500000000
	awk -v s="${1,,}" 'BEGIN { n = s + 0; u = substr(s, length(n "") + 1)
		f = (u ~ /^g/) ? 1e9 : (u ~ /^m/) ? 1e6 : (u ~ /^k/) ? 1e3 : 1; printf "%.0f", n * f }'
}
to_s() { # 150ms -> 0.15
	awk -v s="$1" 'BEGIN { n = s + 0; u = substr(s, length(n "") + 1)
		f = (u == "ms") ? 1e-3 : (u == "us") ? 1e-6 : 1; printf "%.9f", n * f }'
}

set_both() { # key value
	ip netns exec "$NS_A" sysctl -qw "$1=$2"
	ip netns exec "$NS_B" sysctl -qw "$1=$2"
}

echo "| path | BDP | setting | cc | seconds | throughput | % of goodput limit | retransmits | tcp_rmem[2]/BDP (rx) | tcp_wmem[2]/BDP (tx) |"
echo "|---|---|---|---|---|---|---|---|---|---|"
for p in $paths; do
	rtt=${p%%:*} rate=${p#*:}
	bps=$(to_bps "$rate") secs=$(to_s "$rtt")
	bdp=$(awk -v b="$bps" -v s="$secs" 'BEGIN { printf "%.0f", b / 8 * s }')
	t=$time_s
	[[ $t == auto ]] && t=$(awk -v s="$secs" 'BEGIN { t = 200 * s; t = (t > int(t)) ? int(t) + 1 : t; print (t > 25) ? t : 25 }')
	for setting in $settings; do
		s=${setting%@*} cc=''
		[[ $setting == *@* ]] && cc=${setting#*@}
		# The bottleneck's drop-tail queue holds one BDP unless --queue says otherwise: the
		# classic router sizing rule (Villamizar & Song 1994).
		bash lab/lab.sh up "$lab" --rtt "$rtt" --rate "$rate" --queue "${queue:-$bdp}" >/dev/null
		eval "$(bash lab/lab.sh env "$lab")"
		mtu=$MTU
		# Every run starts from the kernel's stock values.
		set_both net.ipv4.tcp_rmem "4096 131072 6291456"
		set_both net.ipv4.tcp_wmem "4096 16384 4194304"
		case $s in
		stock) ;;
		esnet)
			set_both net.ipv4.tcp_rmem "4096 87380 67108864"
			set_both net.ipv4.tcp_wmem "4096 65536 67108864"
			;;
		x*) # xF or xR/W: maxima F (or rmem R, wmem W) x BDP, for experiments (x2.2, x2.5/2)
			f=${s#x} fr=${f%/*} fw=${f#*/}
			vr=$(awk -v f="$fr" -v b="$bdp" 'BEGIN { printf "%.0f", f * b }')
			vw=$(awk -v f="$fw" -v b="$bdp" 'BEGIN { printf "%.0f", f * b }')
			set_both net.ipv4.tcp_rmem "4096 131072 $vr"
			set_both net.ipv4.tcp_wmem "4096 16384 $vw"
			;;
		tcptune | tcptune+loss)
			extra=()
			[[ $s == tcptune+loss ]] && extra=(--loss-recovery)
			for pair in "$NS_A:$ADDR_B" "$NS_B:$ADDR_A"; do
				ns=${pair%%:*} peer=${pair#*:}
				ip netns exec "$ns" "$bin" advise --host "$peer" "${extra[@]}" --format sysctl >"$state/$ns.conf"
				# Advice that changes nothing (the running values suffice) has no key lines.
				if grep -q '^[a-z]' "$state/$ns.conf"; then
					ip netns exec "$ns" "$bin" --state-dir "$state/$ns" apply "$state/$ns.conf" >/dev/null
				fi
			done
			;;
		esac
		[[ -n $cc ]] && set_both net.ipv4.tcp_congestion_control "$cc"
		rx=$(ip netns exec "$NS_B" sysctl -n net.ipv4.tcp_rmem | awk '{ print $3 }')
		tx=$(ip netns exec "$NS_A" sysctl -n net.ipv4.tcp_wmem | awk '{ print $3 }')
		ip netns exec "$NS_B" iperf3 -s -1 -B "$ADDR_B" >/dev/null 2>&1 &
		srv=$!
		sleep 0.5
		# In the background so that Ctrl-C ends the run at once: bash runs the INT trap during
		# `wait`, but not after a foreground iperf3 that handled the signal and exited 0 (it would
		# print a bogus row and go on to the next run). The EXIT trap's lab teardown kills it.
		ip netns exec "$NS_A" iperf3 -c "$ADDR_B" -B "$ADDR_A" -t "$t" -O "$omit_s" ${IPERF_ARGS:-} -J >"$state/iperf.json" &
		wait $! || true
		wait "$srv" 2>/dev/null || true
		read -r got retr used < <(python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
e = d.get("end", {})
print(e.get("sum_received", {}).get("bits_per_second", 0), e.get("sum_sent", {}).get("retransmits", 0),
      e.get("sender_tcp_congestion", "?"))
' "$state/iperf.json")
		if [[ $s == tcptune* ]]; then
			for ns in "$NS_A" "$NS_B"; do
				if [[ -d $state/$ns ]]; then ip netns exec "$ns" "$bin" --state-dir "$state/$ns" revert >/dev/null; fi
			done
		fi
		awk -v r="$rtt" -v rate="$rate" -v b="$bps" -v bdp="$bdp" -v s="$setting" -v got="$got" -v retr="$retr" \
			-v mtu="$mtu" -v rx="$rx" -v tx="$tx" -v cc="$used" -v t="$t" 'BEGIN {
			limit = b * (mtu - 52) / mtu
			printf "| %s / %s | %d B (%.2f MiB) | %s | %s | %d | %.1f Mbit/s | %.1f %% | %d | %.2f | %.2f |\n",
				r, rate, bdp, bdp / 1048576, s, cc, t, got / 1e6, got / limit * 100, retr, rx / bdp, tx / bdp }'
		bash lab/lab.sh down "$lab" >/dev/null
	done
done
