#!/usr/bin/env bash
# Effectiveness benchmark: does tcptune's advice reach line rate with little memory?
#
#   bench/wan.sh [--time auto|SECONDS] [--omit 5] [--runs 1] [--paths "RTT:RATE[:MOD...] ..."]
#                [--settings "stock tuned bbr64 tcptune tcptune+test tcptune+iperf3 tcptune+ssh tcptune+ssh+scope"]
#                [--queue BYTES]
#
# For each path it builds the lab (lab/lab.sh: two namespaces, an emulated WAN with one-way
# delay RTT/2, a RATE bottleneck and a drop-tail queue of one BDP unless told otherwise),
# applies one setting on BOTH ends, and runs a single-stream iperf3 (A sends to B) for --time
# seconds after the first --omit omitted.
# --time auto (the default) is max(25 s, 200 x RTT): slow start needs about log2(BDP / 10
# segments) ≈ 12 round trips, 7.5 s at 600 ms, so past the 5 s omitted a 25 s run at 600 ms
# would measure the ramp, not the buffers; 200 RTTs keep it to a few percent, as it is of any
# transfer worth tuning for (1 TB at 500 Mbit/s takes 4.4 hours).
# On a shared path (cross=N) the measured window is at least max(40 s, 200 x RTT), whatever
# --time says (a shorter --time is raised to it, with a note on stderr): a flow that starts into
# a link others fill converges slowly, and its share over a shorter window is mostly the start.
# --runs N (default 1): each (path, setting) N times, in rounds: every setting once on a path,
# then every setting again, so that a drift of the machine over the path's runs falls on all
# settings alike. Each run builds its own lab. bench/targets.py takes the medians.
#
# Paths: RTT:RATE followed by any of these modifiers, each after a colon:
#   loss=PCT   random loss, PCT percent in each direction (the delay line's --loss)
#   queue=F    the bottleneck's drop-tail queue is F × BDP (default 1 × BDP, or --queue BYTES)
#   nort       the delay line runs without real-time priority (--rt-prio 0): its threads wake
#              late and release packets in bursts, as a busy router or a NIC's interrupt
#              coalescing does
#   police=RATE:BURST  a token-bucket policer each way (lab.sh --police): RATE in bits per second,
#              BURST a size (256KiB) or a duration at RATE (20ms); it drops, never queues. The
#              path's RATE stays the link's (and sizes the queue); "% of goodput limit" is then
#              of the policed rate
#   jitter=DUR each packet gets an extra delay uniform in [0, DUR], order kept (lab.sh --jitter)
#   reorder=DUR the same, each packet on its own, so packets overtake (lab.sh --reorder)
#   batch=DUR  the delay line releases packets once per DUR (lab.sh --batch): each packet's due
#              time, after delay, rate and jitter, rounded up to the next multiple of DUR, as a
#              busy router, a virtual switch or interrupt coalescing forwards (e.g. batch=1ms)
#   cross=N    a shared path: N long-lived CUBIC iperf3 flows (1 to 8) from a third namespace C
#              (lab.sh --cross: TuneD-like 16 MiB buffers, CUBIC) to D, behind B, through the same delay
#              line and queue (lab.sh cross). They start first, run for a warm-up of max(5 s,
#              30 × RTT) before the setting is applied (so tcptune measures beside them), then
#              start again after it and run as long again (so every setting's flow meets them in
#              the same state, not knocked back by tcptune's path tests), and run on through the measured
#              transfer; the tuned flow starts after them. Also CUBIC (C, D: 198.18.0.3 and .4,
#              with TuneD-like buffers on both ends: what is set on A and B never changes them)
#   onoff=ON:OFF (with cross=N) one more neighbour, short flows coming and going: `lab.sh cross
#              NAME start N --onoff ON:OFF`, a CUBIC iperf3 flow from C to D for ON (rounded up to
#              whole seconds), then none for OFF, again and again, beside the N long ones (e.g.
#              cross=1:onoff=2s:3s). It counts toward the fair shares only while it runs: see
#              the shared columns below
# e.g. 150ms:500mbit:loss=0.01, 75ms:1gbit:queue=0.1:nort, 40ms:400mbit:police=100mbit:20ms,
# 20ms:1gbit:batch=1ms, 50ms:200mbit:queue=0.5:cross=2 or 40ms:100mbit:cross=1:onoff=2s:3s.
# A path with loss=, nort, police=, jitter=, reorder= or batch= needs the delay line, so its lab
# uses lab.sh's tun backend. Extra delay-line options for every path: DELAYLINE_ARGS (appended
# after the path's own).
#
# Settings (every run starts from the kernel's stock buffers, tcp_rmem 4096 131072 6291456 and
# tcp_wmem 4096 16384 4194304, and cubic, on both ends, so the host's own values never leak in):
#   stock        those kernel defaults, cubic (the default algorithm of the distributions' kernels)
#   tuned        TuneD's network-throughput profile (profiles/network-throughput/tuned.conf in
#                redhat-performance/tuned): tcp_rmem 4096 131072 16777216, tcp_wmem 4096 16384
#                16777216 (16 MiB maxima); it sets no congestion control: cubic
#   fasterdata   ESnet fasterdata's host tuning: tcp_rmem 4096 87380 67108864, tcp_wmem 4096 65536
#                67108864 (64 MiB maxima), cubic; its fq qdisc is left out (this lab's kernel has
#                none). Alias: esnet
#   bbr64        the "bbr + 64 MiB" scripts, fq-less: bbr, tcp_rmem 4096 131072 67108864,
#                tcp_wmem 4096 16384 67108864
#   tcptune      `tcptune advise --host <peer> --format sysctl` in each namespace, with no tcptune
#                serve running on the peer (the advice has no TCP path test), applied there with
#                `tcptune apply`, reverted afterwards with `tcptune revert`
#   tcptune+test the same, with `tcptune serve --bind <addr> --port 5301` running in both
#                namespaces while the advice is made, so advise runs its TCP path test against
#                the peer; TEST_TIME (e.g. TEST_TIME=5s) is passed as `advise --test-time`
#   tcptune+iperf3 the same, with a stock iperf3 server (`iperf3 -s`) in both namespaces and
#                `advise --iperf3`: the peer users most often have
#   tcptune+ssh  `tcptune advise --ssh` from A to an sshd in B (B's PATH has this tcptune, so
#                its `tcptune peer` serves the test), once: both directions tested, both ends
#                advised; A applies its advice, B the far end's (`far_end` in the JSON)
#   tcptune+ssh+scope the same as tcptune+ssh with `advise --scope path`: each end's congestion
#                control as a host route toward the other (A's `# route:` line toward B, B's back
#                toward A, applied by `tcptune apply`) instead of the host-wide key; the same buffers
#   tcptune+loss the same as tcptune with `advise --loss-recovery`
#   xF, xR/W     maxima F × BDP both ways, or rmem R × BDP and wmem W × BDP, cubic (experiments)
#   SETTING@CC   any of these with the congestion control CC instead (e.g. fasterdata@bbr)
# The tcptune settings print the advice's congestion control and buffer maxima on stderr.
# The namespaces stand for whole hosts, where root may choose any congestion control the
# kernel offers, but a child namespace may choose only those in the host's
# net.ipv4.tcp_allowed_congestion_control: the run widens that list to every available
# algorithm and puts it back on exit (Ctrl-C included). The table's cc column is the sender's.
# iperf3 options: IPERF_ARGS (e.g. "-C cubic"). For experiments, POST_SYSCTL="key=value ..." is set on
# both namespaces after the setting (e.g. POST_SYSCTL="net.ipv4.tcp_notsent_lowat=4294967295").
#
# It prints a header line on stderr (date, kernel, CPU) and a Markdown table on stdout: path,
# BDP, setting, run (1..N of --runs; tables from before --runs have no such column, and
# bench/targets.py reads their rows as run 1), cc, seconds, throughput, % of the goodput limit (rate × MSS/MTU, MSS = MTU − 52
# with timestamps), retransmits, tcp_rmem[2]/BDP (receiver), tcp_wmem[2]/BDP (sender), and the
# socket memory the transfer really used, sampled with `ss -tmn` every 0.5 s: the receiver's
# peak skmem r (receive queue and out-of-order queue, in truesize) and the sender's peak skmem w
# (queued for sending, unacknowledged data included), both × BDP. Needs root and iperf3.
# When any path is shared (cross=N) the table has four more columns, read over the tuned flow's
# own measured window (the run's --time after --omit, at least max(40 s, 200 × RTT) there) and
# empty ("–") on other paths: the tuned flow's throughput as a share of its fair share (goodput
# limit ÷ (N+1)), the competing flows' total as a share of theirs (goodput limit × N ÷ (N+1)),
# the link's utilisation (the sum ÷ the goodput limit) and the competing flows' retransmits. The
# competing flows' figures are their senders' per-second iperf3 intervals (lab.sh cross read),
# the tuned flow's its receiver's. With onoff=, the fair shares are weighted by time: for the
# fraction f of the window the on/off flow ran (its seconds in the window, from lab.sh cross
# read), there were N+2 flows, otherwise N+1, so the tuned flow's fair share is limit × (f ÷
# (N+2) + (1 − f) ÷ (N+1)) and the neighbours' the rest of the limit. That is the share each
# would get if every flow had its share the moment it ran; a short flow spends its few seconds
# in slow start and seldom reaches it, so on such a path the neighbours' share reads below 1 ×
# and the tuned flow's above, whatever the setting. The figure to judge is therefore the
# change against the same path's stock runs (bench/targets.py's harm), not the share itself.
# bench/targets.py judges the shared paths by that harm to the neighbours (issue 37).
# Traffic stays inside the lab namespaces.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=bench/sshd.sh
source bench/sshd.sh

time_s=auto omit_s=5 queue="" runs=1
# The path classes, each at more than one point (issue 22): RTT 10 ms to 600 ms, 50 Mbit/s to
# 1 Gbit/s, random loss 0.001 % to 2 %, queues 0.1 to 4 x BDP, bursty forwarding.
paths="10ms:1gbit 25ms:1gbit 40ms:100mbit:queue=4 50ms:200mbit:loss=1 25ms:100mbit:loss=2
	75ms:1gbit:nort 150ms:500mbit 150ms:500mbit:loss=0.001 150ms:500mbit:loss=0.01
	150ms:500mbit:loss=0.1 150ms:500mbit:queue=0.1 250ms:50mbit 600ms:100mbit:loss=0.05"
settings="stock tuned bbr64 tcptune tcptune+test tcptune+iperf3 tcptune+ssh"
while (($#)); do
	case $1 in
	--time) time_s=$2; shift 2 ;;
	--runs) runs=$2; shift 2 ;;
	--omit) omit_s=$2; shift 2 ;;
	--paths) paths=$2; shift 2 ;;
	--settings) settings=$2; shift 2 ;;
	--queue) queue=$2; shift 2 ;;
	*) echo "usage: see the header of $0" >&2; exit 2 ;;
	esac
done
die() {
	echo "wan.sh: $*" >&2
	exit 2
}
command -v iperf3 >/dev/null || { echo "wan.sh: iperf3 is needed (apt-get install iperf3)" >&2; exit 1; }
[[ $runs =~ ^[1-9][0-9]?$ ]] || die "bad --runs '$runs' (1 to 99)"
[[ $time_s == auto || $time_s =~ ^[1-9][0-9]*$ ]] || die "bad --time '$time_s' (auto or whole seconds)"
[[ $omit_s =~ ^[0-9]+$ ]] || die "bad --omit '$omit_s' (whole seconds)"

to_bps() { # 500mbit -> 500000000
	awk -v s="${1,,}" 'BEGIN { n = s + 0; u = substr(s, length(n "") + 1)
		f = (u ~ /^g/) ? 1e9 : (u ~ /^m/) ? 1e6 : (u ~ /^k/) ? 1e3 : 1; printf "%.0f", n * f }'
}
to_s() { # 150ms -> 0.15
	awk -v s="$1" 'BEGIN { n = s + 0; u = substr(s, length(n "") + 1)
		f = (u == "ms") ? 1e-3 : (u == "us") ? 1e-6 : (u == "ns") ? 1e-9 : 1; printf "%.9f", n * f }'
}
# A policer's burst in bytes: a size (256KiB = 262144, 64KB = 64000) or a duration at RATE_BPS.
burst_bytes() { # RATE_BPS BURST
	if [[ $2 =~ [0-9](ns|us|ms|s)$ ]]; then
		awk -v r="$1" -v s="$(to_s "$2")" 'BEGIN { printf "%.0f", r * s / 8 }'
		return
	fi
	awk -v s="$2" 'BEGIN { n = s + 0; u = substr(s, length(n "") + 1); p = tolower(substr(u, 1, 1))
		e = (p == "k") ? 1 : (p == "m") ? 2 : (p == "g") ? 3 : (p == "t") ? 4 : 0
		printf "%.0f", n * ((u ~ /iB$/) ? 1024 : 1000) ^ e }'
}
is_number() { [[ $1 =~ ^[0-9]+(\.[0-9]+)?$ ]]; }
is_dur() { [[ $1 =~ ^[0-9]+(\.[0-9]+)?(ns|us|ms|s)$ ]] && awk -v n="${1%%[a-z]*}" 'BEGIN { exit !(n > 0) }'; }
is_rate() { [[ $1 =~ ^[0-9]+(\.[0-9]+)?([kKmMgGtT](bit|bps)?|bit)$ ]]; }
is_size() { [[ $1 =~ ^[0-9]+(\.[0-9]+)?([kKmMgGtT](iB|B)?|B)?$ ]]; }

# A path's fields, one a line: RTT, RATE, then its modifiers (police=RATE:BURST and onoff=ON:OFF
# keep their colon).
path_fields() {
	local -a f
	local i
	IFS=: read -r -a f <<<"$1"
	for ((i = 0; i < ${#f[@]}; i++)); do
		if [[ ${f[i]} == @(police|onoff)=* && $((i + 1)) -lt ${#f[@]} && ${f[i + 1]} != *=* && ${f[i + 1]} != nort ]]; then
			echo "${f[i]}:${f[i + 1]}"
			i=$((i + 1))
		else
			echo "${f[i]}"
		fi
	done
}

# Check every path and setting before the first (long) run.
shared=0
for p in $paths; do
	mapfile -t f < <(path_fields "$p")
	((${#f[@]} >= 2)) || die "bad path '$p' (RTT:RATE[:MOD...], see the header)"
	jit='' has_cross=0 has_onoff=0
	for m in "${f[@]:2}"; do
		case $m in
		loss=* | queue=*) is_number "${m#*=}" || die "bad modifier '$m' in path '$p' (a number)" ;;
		nort) ;;
		cross=*)
			[[ ${m#*=} =~ ^[1-8]$ ]] || die "bad modifier '$m' in path '$p' (cross=N, 1 to 8 flows)"
			shared=1 has_cross=1
			;;
		onoff=*)
			oo=${m#onoff=}
			if ! [[ $oo == *:* ]] || ! is_dur "${oo%%:*}" || ! { is_dur "${oo#*:}" || [[ ${oo#*:} =~ ^0+(\.0+)?(ns|us|ms|s)?$ ]]; }; then
				die "bad modifier '$m' in path '$p' (onoff=ON:OFF, e.g. onoff=2s:3s)"
			fi
			has_onoff=1
			;;
		batch=*)
			is_dur "${m#*=}" || die "bad modifier '$m' in path '$p' (a duration, e.g. batch=1ms)"
			awk -v s="$(to_s "${m#*=}")" 'BEGIN { exit !(s <= 1) }' || die "bad modifier '$m' in path '$p' (at most 1s)"
			;;
		police=*)
			pr=${m#police=}
			if ! [[ $pr == *:* ]] || ! is_rate "${pr%%:*}" || ! { is_size "${pr#*:}" || is_dur "${pr#*:}"; }; then
				die "bad modifier '$m' in path '$p' (police=RATE:BURST, e.g. police=100mbit:20ms or police=100mbit:256KiB)"
			fi
			(($(burst_bytes "$(to_bps "${pr%%:*}")" "${pr#*:}") >= 1500)) ||
				die "bad modifier '$m' in path '$p' (the burst must hold a packet: 1500 B or more)"
			;;
		jitter=* | reorder=*)
			is_dur "${m#*=}" || die "bad modifier '$m' in path '$p' (a duration, e.g. ${m%%=*}=5ms)"
			[[ -z $jit ]] || die "path '$p': jitter= and reorder=, one or the other"
			jit=$m
			;;
		*) die "unknown modifier '$m' in path '$p' (loss=PCT, queue=F, nort, police=RATE:BURST, jitter=DUR, reorder=DUR, batch=DUR, cross=N, onoff=ON:OFF)" ;;
		esac
	done
	((has_onoff <= has_cross)) || die "path '$p': onoff=ON:OFF needs cross=N (the long flows beside the on/off one)"
done
for setting in $settings; do
	case ${setting%@*} in
	stock | tuned | fasterdata | esnet | bbr64 | tcptune | tcptune+test | tcptune+iperf3 | tcptune+ssh | tcptune+ssh+scope | tcptune+loss) ;;
	x*) [[ ${setting%@*} =~ ^x[0-9.]+(/[0-9.]+)?$ ]] || die "bad setting '$setting' (xF or xR/W)" ;;
	*) die "unknown setting '$setting' (stock tuned fasterdata bbr64 tcptune tcptune+test tcptune+iperf3 tcptune+ssh tcptune+ssh+scope tcptune+loss xF SETTING@CC)" ;;
	esac
done

cargo build --quiet --release -p tcptune -p delayline
export DELAYLINE_BIN="$PWD/target/release/delayline"
bin="$PWD/target/release/tcptune"
lab="wan$$"
state="$(mktemp -d)"
allowed_cc=$(sysctl -n net.ipv4.tcp_allowed_congestion_control)
user_dl=${DELAYLINE_ARGS:-}
sampler='' cli=''
servers=()
# Stops what a run started (the skmem sampler, tcptune serve, iperf3): on the way out, and
# between runs.
stop_run() {
	local pid
	for pid in $sampler $cli "${servers[@]}"; do
		kill "$pid" 2>/dev/null || true
	done
	for pid in $sampler $cli "${servers[@]}"; do
		wait "$pid" 2>/dev/null || true
	done
	sampler='' cli=''
	servers=()
}
trap 'stop_run; bash lab/lab.sh down "$lab" >/dev/null 2>&1 || true; rm -rf "$state"
	sysctl -qw net.ipv4.tcp_allowed_congestion_control="$allowed_cc" || true' EXIT
trap 'exit 130' INT TERM
sysctl -qw net.ipv4.tcp_allowed_congestion_control="$(sysctl -n net.ipv4.tcp_available_congestion_control)"

set_both() { # key value
	ip netns exec "$NS_A" sysctl -qw "$1=$2"
	ip netns exec "$NS_B" sysctl -qw "$1=$2"
}

# The largest skmem field $2 (r or w) among the iperf3 connections in namespace $1: the data
# flow's, as the control connection holds next to nothing.
skmem() {
	ip netns exec "$1" ss -tmnH '( sport = :5201 or dport = :5201 )' 2>/dev/null |
		{ grep -o 'skmem:([^)]*)' || true; } |
		awk -v f="$2" -F'[(),]' '{ for (i = 2; i <= NF; i++) if ($i ~ "^" f "[0-9]+$") { v = substr($i, 2) + 0; if (v > m) m = v } }
			END { print m + 0 }'
}

# tcptune serve on port 5301 (tcptune's default, where advise looks for it) in namespace $1.
start_serve() { # ns addr
	ip netns exec "$1" "$bin" serve --bind "$2" --port 5301 >"$state/serve-$1.log" 2>&1 &
	servers+=($!)
	for _ in $(seq 50); do
		ip netns exec "$1" ss -tlnH 'sport = :5301' 2>/dev/null | grep -q . && return 0
		sleep 0.1
	done
	echo "wan.sh: tcptune serve did not start in $1:" >&2
	cat "$state/serve-$1.log" >&2
	exit 1
}

# An sshd in namespace $1 on $2:2222 for `advise --ssh` (bench/sshd.sh).
start_sshd() { # ns addr
	lab_sshd "$state/ssh" "$1" "$2" "$bin"
	servers+=("$(cat "$state/ssh/sshd.pid")")
}

echo "wan.sh: $(date -u '+%Y-%m-%d %H:%M UTC'), Linux $(uname -r), $(awk -F': ' '/^model name/ { print $2; exit }' /proc/cpuinfo) ($(nproc) CPUs)" >&2
head="| path | BDP | setting | run | cc | seconds | throughput | % of goodput limit | retransmits | tcp_rmem[2]/BDP (rx) | tcp_wmem[2]/BDP (tx) | peak skmem r/BDP (rx) | peak skmem w/BDP (tx) |"
rule="|---|---|---|---|---|---|---|---|---|---|---|---|---|"
if ((shared)); then
	head+=" share of fair share | others' share of theirs | link used | others' retransmits |"
	rule+="---|---|---|---|"
fi
echo "$head"
echo "$rule"
for p in $paths; do
	mapfile -t f < <(path_fields "$p")
	rtt=${f[0]} rate=${f[1]}
	bps=$(to_bps "$rate") secs=$(to_s "$rtt")
	bdp=$(awk -v b="$bps" -v s="$secs" 'BEGIN { printf "%.0f", b / 8 * s }')
	# The bottleneck's drop-tail queue holds one BDP unless told otherwise: the classic router
	# sizing rule (Villamizar & Song 1994).
	q=${queue:-$bdp} dl='' label="$rtt / $rate" up=() ncross=0 onoff='' police_bps=0
	for m in "${f[@]:2}"; do
		case $m in
		loss=*) dl+=" --loss ${m#*=}" label+=", ${m#*=} % loss" up+=(--backend tun) ;;
		queue=*)
			q=$(awk -v f="${m#*=}" -v b="$bdp" 'BEGIN { printf "%.0f", f * b }')
			label+=", queue ${m#*=} × BDP"
			;;
		nort) dl+=" --rt-prio 0" label+=", no rt-prio" up+=(--backend tun) ;;
		police=*)
			pr=${m#police=}
			police_bps=$(to_bps "${pr%%:*}")
			label+=", policed at ${pr%%:*} (burst ${pr#*:})" up+=(--police "$pr")
			;;
		jitter=*) label+=", jitter ${m#*=}" up+=(--jitter "${m#*=}") ;;
		reorder=*) label+=", reordering jitter ${m#*=}" up+=(--reorder "${m#*=}") ;;
		batch=*) label+=", released every ${m#*=}" up+=(--batch "${m#*=}") ;;
		cross=*) ncross=${m#*=} up+=(--cross) ;;
		onoff=*) onoff=${m#onoff=} ;;
		esac
	done
	if ((ncross)); then
		if ((ncross == 1)); then label+=", 1 CUBIC flow beside it"; else label+=", $ncross CUBIC flows beside it"; fi
		[[ -n $onoff ]] && label+=" and one on ${onoff%%:*}, off ${onoff#*:}"
	fi
	# The goodput limit: the link's rate, or the policer's where it is lower.
	limit_bps=$bps
	((police_bps > 0 && police_bps < bps)) && limit_bps=$police_bps
	# The measured window: --time, or max(25 s, 200 × RTT); on a shared path never under
	# max(40 s, 200 × RTT).
	t=$time_s floor=25
	((ncross)) && floor=40
	floor=$(awk -v s="$secs" -v f="$floor" 'BEGIN { t = 200 * s; t = (t > int(t)) ? int(t) + 1 : t; print (t > f) ? t : f }')
	if [[ $t == auto ]]; then
		t=$floor
	elif ((ncross && t < floor)); then
		echo "wan.sh: $label: --time $t raised to $floor s, the least for a shared path (max(40 s, 200 × RTT))" >&2
		t=$floor
	fi
	# Competing flows run this long before the setting is applied and tcptune measures.
	warm=$(awk -v s="$secs" 'BEGIN { w = 30 * s; print (w > 5) ? w : 5 }')
	for ((run = 1; run <= runs; run++)); do
		for setting in $settings; do
			s=${setting%@*} cc='' rtag=''
			((runs > 1)) && rtag=" (run $run of $runs)"
			[[ $setting == *@* ]] && cc=${setting#*@}
			DELAYLINE_ARGS="${dl# } $user_dl" bash lab/lab.sh up "$lab" --rtt "$rtt" --rate "$rate" --queue "$q" "${up[@]}" >/dev/null
			eval "$(bash lab/lab.sh env "$lab")"
			mtu=$MTU
			# Every run starts from the kernel's stock values and cubic.
			set_both net.ipv4.tcp_rmem "4096 131072 6291456"
			set_both net.ipv4.tcp_wmem "4096 16384 4194304"
			set_both net.ipv4.tcp_congestion_control cubic
			if ((ncross)); then
				# The neighbours first: tcptune measures beside them, the tuned flow starts after them.
				bash lab/lab.sh cross "$lab" start "$ncross" ${onoff:+--onoff "$onoff"}
				sleep "$warm"
			fi
			case $s in
			stock) ;;
			tuned)
				set_both net.ipv4.tcp_rmem "4096 131072 16777216"
				set_both net.ipv4.tcp_wmem "4096 16384 16777216"
				;;
			fasterdata | esnet)
				set_both net.ipv4.tcp_rmem "4096 87380 67108864"
				set_both net.ipv4.tcp_wmem "4096 65536 67108864"
				;;
			bbr64)
				set_both net.ipv4.tcp_rmem "4096 131072 67108864"
				set_both net.ipv4.tcp_wmem "4096 16384 67108864"
				set_both net.ipv4.tcp_congestion_control bbr
				;;
			x*) # xF or xR/W: maxima F (or rmem R, wmem W) x BDP, for experiments (x2.2, x2.5/2)
				fx=${s#x} fr=${fx%/*} fw=${fx#*/}
				vr=$(awk -v f="$fr" -v b="$bdp" 'BEGIN { printf "%.0f", f * b }')
				vw=$(awk -v f="$fw" -v b="$bdp" 'BEGIN { printf "%.0f", f * b }')
				set_both net.ipv4.tcp_rmem "4096 131072 $vr"
				set_both net.ipv4.tcp_wmem "4096 16384 $vw"
				;;
			tcptune+ssh | tcptune+ssh+scope)
				extra=()
				[[ -n ${TEST_TIME:-} ]] && extra+=(--test-time "$TEST_TIME")
				[[ $s == tcptune+ssh+scope ]] && extra+=(--scope path)
				start_sshd "$NS_B" "$ADDR_B"
				t0=$(date +%s.%N)
				ip netns exec "$NS_A" "$bin" advise --ssh far --ssh-command "ssh -F $state/ssh/config" "${extra[@]}" \
					--format json >"$state/both.json" 2>"$state/ssh.log" || { cat "$state/ssh.log" >&2; exit 1; }
				took=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
				stop_run
				python3 - "$state/both.json" "$state/$NS_A.conf" "$state/$NS_B.conf" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
for advice, path in ((d, sys.argv[2]), (d["far_end"], sys.argv[3])):
    with open(path, "w") as f:
        for s in advice["settings"]:
            if s["stage"] != "runtime":
                continue
            if s["action"]["kind"] == "set":
                f.write(f"{s['key']} = {s['value']}\n")
            elif s["action"]["kind"] == "keep":
                f.write(f"# {s['key']} = {s['value']} (already running: no change)\n")
        # --scope path: the route line `tcptune apply` sets.
        r = advice.get("route")
        if r and r["action"]["kind"] == "set":
            f.write(f"# route: {r['command']}\n")
PY
				for ns in "$NS_A" "$NS_B"; do
					chosen=$(awk '{ sub(/^# (route: )?/, "") } /^net\.ipv4\.tcp_(congestion_control|rmem|wmem) = |^ip route / {
						sub(/^net\.ipv4\./, ""); printf "%s%s", sep, $0; sep = "; " }' "$state/$ns.conf")
					echo "wan.sh: $label, $setting${rtag}, advice for $ns (advise --ssh took $took s): ${chosen:-no cc, tcp_rmem or tcp_wmem line}" >&2
					if grep -q '^[a-z]\|^# route: ' "$state/$ns.conf"; then
						ip netns exec "$ns" "$bin" --state-dir "$state/$ns" apply "$state/$ns.conf" >/dev/null
					fi
				done
				;;
			tcptune*)
				extra=()
				[[ $s == tcptune+loss ]] && extra=(--loss-recovery)
				if [[ $s == tcptune+test ]]; then
					start_serve "$NS_A" "$ADDR_A"
					start_serve "$NS_B" "$ADDR_B"
				fi
				if [[ $s == tcptune+iperf3 ]]; then
					# The peer users most often have: a stock iperf3 server (its own buffers, the
					# namespace's stock tcp_rmem), tested with the iperf3 client.
					for pair in "$NS_A:$ADDR_A" "$NS_B:$ADDR_B"; do
						ip netns exec "${pair%%:*}" iperf3 -s -B "${pair#*:}" >/dev/null 2>&1 &
						servers+=($!)
					done
					sleep 0.5
					extra=(--iperf3)
				fi
				[[ -n ${TEST_TIME:-} && $s == tcptune+* ]] && extra+=(--test-time "$TEST_TIME")
				# Both ends are advised before either applies, so each advice sees the stock peer.
				for pair in "$NS_A:$ADDR_B" "$NS_B:$ADDR_A"; do
					ns=${pair%%:*} peer=${pair#*:}
					ip netns exec "$ns" "$bin" advise --host "$peer" "${extra[@]}" --format sysctl >"$state/$ns.conf"
					# Its lines for these keys, those it leaves as they run ("# net... (already running:
					# no change)") included.
					chosen=$(awk '{ sub(/^# /, "") } /^net\.ipv4\.tcp_(congestion_control|rmem|wmem) = / {
						sub(/^net\.ipv4\./, ""); sub(/  +/, " "); printf "%s%s", sep, $0; sep = "; " }' "$state/$ns.conf")
					echo "wan.sh: $label, $setting${rtag}, advice in $ns (peer $peer): ${chosen:-no cc, tcp_rmem or tcp_wmem line}" >&2
				done
				stop_run
				for ns in "$NS_A" "$NS_B"; do
					# Advice that changes nothing (the running values suffice) has no key lines.
					if grep -q '^[a-z]' "$state/$ns.conf"; then
						ip netns exec "$ns" "$bin" --state-dir "$state/$ns" apply "$state/$ns.conf" >/dev/null
					fi
				done
				;;
			esac
			[[ -n $cc ]] && set_both net.ipv4.tcp_congestion_control "$cc"
			for kv in ${POST_SYSCTL:-}; do set_both "${kv%%=*}" "${kv#*=}"; done
			# The neighbours start again and settle, so that every setting's flow meets them in the
			# same state. Only settling after tcptune's path tests (5 s at 150 ms) left them knocked
			# back by up to four 3-s tests: beside two CUBIC flows at 150 ms / 250 Mbit/s the same
			# buffers and CUBIC took 1.85-1.95 x the flow's share after serve's four tests and
			# 0.36-0.42 x after --ssh's two 30 s earlier; stock, with no test, 0.80-0.87 x.
			if ((ncross)); then
				bash lab/lab.sh cross "$lab" stop >/dev/null
				bash lab/lab.sh cross "$lab" start "$ncross" ${onoff:+--onoff "$onoff"}
				sleep "$warm"
			fi
			rx=$(ip netns exec "$NS_B" sysctl -n net.ipv4.tcp_rmem | awk '{ print $3 }')
			tx=$(ip netns exec "$NS_A" sysctl -n net.ipv4.tcp_wmem | awk '{ print $3 }')
			ip netns exec "$NS_B" iperf3 -s -1 -B "$ADDR_B" >/dev/null 2>&1 &
			srv=$!
			sleep 0.5
			# In the background so that Ctrl-C ends the run at once: bash runs the INT trap during
			# `wait`, but not after a foreground iperf3 that handled the signal and exited 0 (it would
			# print a bogus row and go on to the next run). The EXIT trap stops it.
			date +%s.%N >"$state/iperf.t0"
			ip netns exec "$NS_A" iperf3 -c "$ADDR_B" -B "$ADDR_A" -t "$t" -O "$omit_s" ${IPERF_ARGS:-} -J >"$state/iperf.json" &
			cli=$!
			# Socket memory in use, every 0.5 s while the client runs: one line "r w" per sample.
			(
				nap=''
				trap 'kill $nap 2>/dev/null; exit 0' TERM
				while kill -0 "$cli" 2>/dev/null; do
					echo "$(skmem "$NS_B" r) $(skmem "$NS_A" w)"
					sleep 0.5 &
					nap=$!
					wait "$nap"
				done
			) >"$state/skmem" &
			sampler=$!
			wait "$cli" || true
			wait "$srv" 2>/dev/null || true
			stop_run
			others='' oretr='' on_s=0
			if ((ncross)); then
				# The competing flows over the tuned flow's measured window (after its omitted start),
				# and the seconds the on/off flow ran in it (0 without one).
				bash lab/lab.sh cross "$lab" stop
				from=$(python3 lab/cross_read.py --origin "$state/iperf.json" "$RTT_NS" | awk -v o="$omit_s" '{ printf "%.6f", $1 + o }')
				read -r others oretr on_s < <(bash lab/lab.sh cross "$lab" read --from "$from" \
					--to "$(awk -v a="$from" -v t="$t" 'BEGIN { printf "%.6f", a + t }')" |
					awk '$1 == "onoff" { on = $3 } $1 == "total" { tot = $4; retr = $5 } END { print tot + 0, retr + 0, on + 0 }') || true
				[[ -n $onoff ]] && echo "wan.sh: $label, $setting${rtag}: the on/off flow ran $on_s s of the $t s measured" >&2
			fi
			read -r peak_r peak_w < <(awk '$1 > r { r = $1 } $2 > w { w = $2 } END { print r + 0, w + 0 }' "$state/skmem")
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
				rm -rf "${state:?}/$NS_A" "${state:?}/$NS_B"
			fi
			awk -v path="$label" -v b="$limit_bps" -v bdp="$bdp" -v s="$setting" -v run="$run" -v got="$got" -v retr="$retr" \
				-v mtu="$mtu" -v rx="$rx" -v tx="$tx" -v cc="$used" -v t="$t" -v pr="$peak_r" -v pw="$peak_w" \
				-v shared="$shared" -v n="$ncross" -v others="$others" -v oretr="$oretr" -v on="$on_s" 'BEGIN {
				limit = b * (mtu - 52) / mtu
				printf "| %s | %d B (%.2f MiB) | %s | %d | %s | %d | %.1f Mbit/s | %.1f %% | %d | %.2f | %.2f | %.2f | %.2f |",
					path, bdp, bdp / 1048576, s, run, cc, t, got / 1e6, got / limit * 100, retr, rx / bdp, tx / bdp, pr / bdp, pw / bdp
				if (shared && n > 0) {
					# Fair shares weighted by time: N+2 flows for the fraction f of the window the
					# on/off flow ran, N+1 the rest (f = 0 without one).
					f = on / t; if (f > 1) f = 1; if (f < 0) f = 0
					fair = limit * (f / (n + 2) + (1 - f) / (n + 1))
					printf " %.2f × | %.2f × | %.1f %% | %d |", got / fair, others / (limit - fair),
						(got + others) / limit * 100, oretr
				} else if (shared)
					printf " – | – | – | – |"
				printf "\n" }'
			bash lab/lab.sh down "$lab" >/dev/null
		done
	done
done
