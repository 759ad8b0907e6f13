#!/usr/bin/env bash
# lab/lab.sh — an emulated WAN path between two network namespaces.
#
#   lab.sh up NAME --rtt 150ms [--rate 500mbit] [--queue BYTES] [--mtu 1500]
#                  [--backend auto|netem|tun] [--tcp-mem BYTES]
#                  [--loss PCT] [--loss-ab PCT] [--loss-ba PCT]
#                  [--police RATE:BURST] [--police-ab RATE:BURST] [--police-ba RATE:BURST]
#                  [--jitter DUR | --reorder DUR] [--batch DUR] [--cross [--cross-mem BYTES]]
#   lab.sh down NAME        # idempotent
#   lab.sh env NAME         # prints NS_A NS_B ADDR_A ADDR_B DEV ... as shell vars
#   lab.sh stats NAME       # the delay line's counters now, one line per direction (tun)
#   lab.sh cross NAME start N [--port-base 5401] [--onoff ON:OFF]
#   lab.sh cross NAME stop
#   lab.sh cross NAME read [--from EPOCH] [--to EPOCH]
#
# Creates namespaces NAME-a (198.18.0.1) and NAME-b (198.18.0.2), joined by
# a point-to-point link called wan0 in both, with RTT/2 of delay each way,
# optionally a RATE bottleneck (each direction) with a drop-tail queue.
#
# Backends (auto picks netem when `tc qdisc add ... netem` works, and tun when
# --police, --jitter, --reorder or --batch is given):
#   netem  veth pair + `tc qdisc add dev wan0 root netem delay D rate R limit N`
#          on both ends (limit in packets: queue/mtu plus the packets in flight
#          on the delay part, as netem's limit counts both).
#   tun    the delay line (lab/delayline, a workspace member): it creates two TUN
#          devices in the root netns; this script moves them into the
#          namespaces (the program's fds follow the devices) and renames them
#          wan0. The delayline runs in the background; its pid and log are in
#          the state dir. Binary: $DELAYLINE_BIN, else target/release/delayline or target/debug/delayline
#          (also under $CARGO_TARGET_DIR), else built with
#          `cargo build --release -p delayline`. Extra
#          delayline options: $DELAYLINE_ARGS (e.g. "--offload --rt-prio 0").
#
# Units are tcptune's (src/units.rs): RATE in bits per second, SI
# (500mbit = 500mbps = 500Mbit/s = 5*10^8 bit/s; bytes per second are refused);
# BYTES as written, IEC or SI (64KiB = 65536, 64KB = 64k = 64000, 1500000).
#
# --queue BYTES: drop-tail limit of the
#   bottleneck queue (default: max(1000 x 1500 B, 25 ms at RATE)); without
#   --rate it only caps what the line holds.
# --tcp-mem BYTES: set tcp_rmem/tcp_wmem max to BYTES in both namespaces
#   (default: leave the namespaces' defaults alone).
# --loss PCT: drop PCT % of the packets at random, each direction (0.01 = 1 in
#   10000). --loss-ab PCT / --loss-ba PCT: only from NAME-a to NAME-b / from
#   NAME-b to NAME-a, in place of --loss for that direction: a path that loses
#   packets one way (netem: `loss` on that side's egress).
# --police RATE:BURST: a token-bucket policer each direction (--police-ab /
#   --police-ba: one direction, in place of --police): a bucket of BURST
#   bytes refilled at RATE, full at the start; a packet passes when the bucket
#   holds its bytes and is dropped when it does not, never queued, so a
#   policed path loses packets at its base RTT. BURST is a size (256KiB) or a
#   duration at RATE (20ms at 100mbit = 250000 B), at least 1500 B. It acts
#   after the random loss and before the RATE bottleneck. E.g. --rate 400mbit
#   --police 100mbit:20ms: a 400 Mbit/s link policed to 100 Mbit/s.
# --jitter DUR: each packet gets an extra delay uniform in [0, DUR] but never
#   leaves before the one before it (order kept; with packets closer together
#   than DUR the extra delay tends to DUR). --reorder DUR: each packet's extra
#   delay is its own, so later packets overtake earlier ones (the delay line
#   counts them: `reordered` in `lab.sh stats`). One or the other, both ways.
# --batch DUR: the delay line releases packets once per DUR (e.g. 1ms), as a
#   busy router, a virtual switch or a NIC's interrupt coalescing forwards:
#   each packet's due time (after the delay, the rate and any jitter) is
#   rounded up to the next multiple of DUR on CLOCK_MONOTONIC, and what is due
#   at a tick leaves in one batch; never early, order kept, a packet due on a
#   tick not held a tick more. Both ways; at most 1s.
# --police, --jitter, --reorder and --batch are the delay line's: not
#   supported with the netem backend (lab.sh refuses them there).
#
# --cross: a third namespace NAME-c (198.18.0.3), joined to NAME-a by a veth
#   pair called cross0 in both. NAME-a forwards (ip_forward=1 there): C's
#   route to 198.18.0.2 goes via 198.18.0.1, and B's route to 198.18.0.3 via
#   198.18.0.1 over wan0, so C's flows cross the same delay line, policer and
#   queue toward B as A's own. C keeps its own settings: TuneD-like buffers
#   (tcp_rmem 4096 131072 16777216, tcp_wmem 4096 16384 16777216;
#   --cross-mem BYTES sets both maxima) and CUBIC, chosen by its route to
#   198.18.0.2 (`congctl cubic`: a child namespace may only choose the
#   algorithms in the host's tcp_allowed_congestion_control, but a route's
#   algorithm is not subject to that list). --tcp-mem applies to A and B only.
#   A fourth namespace NAME-d (198.18.0.4) behind B (a veth pair cross0, B
#   forwarding) receives C's flows, with the same buffers as C: the
#   neighbours are hosts of their own on both ends, so what is set on A and B
#   never changes their windows. `env` adds NS_C, ADDR_C, NS_D and ADDR_D.
#
# Cross traffic (needs --cross; iperf3):
#   cross NAME start N: N long-lived CUBIC flows from C to D (through A, the
#     delay line and B), each an iperf3 client in C (`-t 0`: until stopped)
#     against its own iperf3 server in D on ports P..P+N-1 (--port-base P, default 5401). --onoff ON:OFF adds an
#     on/off flow on port P+N: an iperf3 client for ON (rounded up to whole
#     seconds), then OFF idle, again and again (e.g. --onoff 2s:3s). Each run
#     writes its JSON (iperf3 -J) and its start time to the state dir
#     (cross/long-K.json, cross/onoff-K.json and .t0 beside each).
#   cross NAME stop: stops them (the clients first, which then write their
#     JSON), then the servers. `down` stops them too.
#   cross NAME read [--from EPOCH] [--to EPOCH]: each flow's throughput and
#     retransmits over that window of wall-clock time (epoch seconds, as
#     `date +%s.%N`; default: each flow's whole run), from the senders'
#     per-second intervals (an interval in part in the window counts in
#     part): a line per flow, `flow port seconds bits_per_second
#     retransmits`, then `total`; seconds is the time the flow ran within the
#     window, bits_per_second its bytes over the whole window. Read after
#     stop: iperf3 writes its JSON when it ends. A stopped client writes it at
#     once, its last interval ending at the stop: its intervals are placed from
#     the file's time (to a few ms); those of a run that ended by itself (the
#     on/off flow's) from its launch time plus 5 RTT (the connection set-up).
#
# State: /run/tcptune-lab/NAME/ (env, pid, delayline.log, cross/). Needs root.
# Only ever addresses 198.18.0.1 to 198.18.0.4 inside the lab's namespaces.
set -euo pipefail

STATE_ROOT=${LAB_STATE_ROOT:-/run/tcptune-lab}
REPO_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
ADDR_A=198.18.0.1
ADDR_B=198.18.0.2
ADDR_C=198.18.0.3
ADDR_D=198.18.0.4
DEV=wan0
XDEV=cross0

die() {
	echo "lab.sh: error: $*" >&2
	exit 1
}

usage() {
	sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "${BASH_SOURCE[0]}"
}

# "150ms" / "1.5s" / "250us" / "100ns" -> integer nanoseconds
to_ns() {
	[[ $1 =~ ^([0-9]+(\.[0-9]+)?)(ns|us|ms|s)$ ]] || die "bad duration '$1' (e.g. 150ms, 1.5s, 250us)"
	awk -v v="${BASH_REMATCH[1]}" -v u="${BASH_REMATCH[3]}" 'BEGIN {
		m = (u == "ns") ? 1 : (u == "us") ? 1e3 : (u == "ms") ? 1e6 : 1e9
		printf "%.0f\n", v * m }'
}

# SI prefix letter (any case, or none) -> its factor
si() {
	case ${1,,} in k) echo 1e3 ;; m) echo 1e6 ;; g) echo 1e9 ;; t) echo 1e12 ;; *) echo 1 ;; esac
}

# A rate as tcptune reads it (bits, SI): "500mbit" / "1G" / "10mbps" / "100Mbit/s" -> bits per second.
# A 'B' in the unit means bytes: refused, as tcptune refuses it.
to_bps() {
	[[ $1 =~ ^([0-9]+(\.[0-9]+)?)\ ?([kKmMgGtT]?)([bB][iI][tT][sS]?(/[sS])?|b[pP][sS])?$ ]] &&
		[[ -n ${BASH_REMATCH[3]}${BASH_REMATCH[4]} && ${BASH_REMATCH[4]} != B* ]] ||
		die "bad rate '$1' (bits per second, e.g. 500mbit, 1gbit, 100m)"
	awk -v v="${BASH_REMATCH[1]}" -v f="$(si "${BASH_REMATCH[3]}")" 'BEGIN { printf "%.0f\n", v * f }'
}

# A size as tcptune reads it (bytes, IEC and SI as written): "1500000" / "64KiB" / "64KB" / "2M" -> bytes
to_bytes() {
	[[ $1 =~ ^([0-9]+(\.[0-9]+)?)\ ?([kKmMgGtT]?)(iB|IB|[bB])?$ ]] &&
		[[ -z ${BASH_REMATCH[4]} || ${BASH_REMATCH[4]} == [bB] || -n ${BASH_REMATCH[3]} ]] ||
		die "bad size '$1' (bytes, e.g. 1500000, 64KiB, 2MiB, 64KB)"
	local f
	f=$(si "${BASH_REMATCH[3]}")
	if [[ ${BASH_REMATCH[4]} == [iI]B ]]; then
		case $f in 1e3) f=1024 ;; 1e6) f=1048576 ;; 1e9) f=1073741824 ;; 1e12) f=1099511627776 ;; esac
	fi
	awk -v v="${BASH_REMATCH[1]}" -v f="$f" 'BEGIN { printf "%.0f\n", v * f }'
}

# A loss percentage: 0 to 100, as the delay line reads it.
check_pct() {
	[[ $1 =~ ^[0-9]+(\.[0-9]+)?$ ]] && awk -v p="$1" 'BEGIN { exit !(p <= 100) }' ||
		die "bad loss '$1' (a percentage, 0 to 100, e.g. 0.5)"
}

# RATE:BURST for a policer: a rate, then a size or a duration (the delay line checks the rest).
check_police() {
	[[ $1 == *:* ]] || die "bad policer '$1' (RATE:BURST, e.g. 100mbit:20ms or 100mbit:256KiB)"
	to_bps "${1%%:*}" >/dev/null
	local burst=${1#*:} ns
	if [[ $burst =~ ^[0-9.]+(ns|us|ms|s)$ ]]; then
		ns=$(to_ns "$burst")
		((ns > 0)) || die "bad burst '$burst' in '$1' (a size or a duration, not zero)"
	else
		to_bytes "$burst" >/dev/null
	fi
}

# A duration greater than zero (jitter).
check_dur() {
	local ns
	ns=$(to_ns "$1")
	((ns > 0)) || die "bad duration '$1' (greater than zero, e.g. 5ms)"
}

check_name() {
	[[ $1 =~ ^[A-Za-z0-9_][A-Za-z0-9_.-]{0,39}$ ]] || die "bad lab name '$1' (letters, digits, _ . -; at most 40)"
}

ns_exists() { ip netns list 2>/dev/null | awk '{print $1}' | grep -qx -- "$1"; }

# Whether namespace $1 gets a ping reply from $2 in one of 20 tries, each waiting $3 seconds.
answers() {
	local _
	for _ in $(seq 20); do
		ip netns exec "$1" ping -q -c 1 -W "$3" "$2" >/dev/null 2>&1 && return 0
	done
	return 1
}

# The delay line's binary, on stdout: $DELAYLINE_BIN, else one already built (release, then
# debug; under $CARGO_TARGET_DIR, then the repository's target/), else built with cargo; with
# neither a binary nor cargo, one line saying so.
find_delayline() {
	if [[ -n ${DELAYLINE_BIN:-} ]]; then
		[[ -f $DELAYLINE_BIN && -x $DELAYLINE_BIN ]] || die "DELAYLINE_BIN=$DELAYLINE_BIN is not an executable file"
		echo "$DELAYLINE_BIN"
		return
	fi
	local dir profile bin
	for dir in ${CARGO_TARGET_DIR:+"$CARGO_TARGET_DIR"} "$REPO_ROOT/target"; do
		for profile in release debug; do
			bin=$dir/$profile/delayline
			if [[ -f $bin && -x $bin ]]; then
				[[ $profile == release ]] || echo "lab.sh: using a debug build of the delay line ($bin)" >&2
				echo "$bin"
				return
			fi
		done
	done
	command -v cargo >/dev/null 2>&1 ||
		die "no delay line: none built under ${CARGO_TARGET_DIR:+$CARGO_TARGET_DIR or }$REPO_ROOT/target (release or debug) and no cargo to build it; set DELAYLINE_BIN=PATH"
	bin=${CARGO_TARGET_DIR:-$REPO_ROOT/target}/release/delayline
	echo "lab.sh: building the delayline (cargo build --release -p delayline)" >&2
	(cd "$REPO_ROOT" && cargo build --quiet --release -p delayline) >&2 ||
		die "cannot build the delayline (cargo build --release -p delayline failed)"
	[[ -x $bin ]] || die "no delayline binary at $bin after the build (set DELAYLINE_BIN)"
	echo "$bin"
}

# Does this kernel have netem? Probe on a throwaway veth inside namespace $1.
netem_works() {
	local ns=$1 ok=1
	ip -n "$ns" link add lbprobe0 type veth peer name lbprobe1 2>/dev/null || return 1
	ip netns exec "$ns" tc qdisc add dev lbprobe0 root netem delay 1ms 2>/dev/null && ok=0
	ip -n "$ns" link del lbprobe0 2>/dev/null || true
	return $ok
}

kill_pid_file() {
	local f=$1 tag=$2 pid
	[[ -f $f ]] || return 0
	pid=$(cat "$f" 2>/dev/null || true)
	[[ $pid =~ ^[0-9]+$ ]] || return 0
	# Only kill it if it still is our delayline (pids get reused): its command
	# line names this lab's ready file.
	{ tr '\0' '\n' <"/proc/$pid/cmdline"; } 2>/dev/null | grep -qxF -- "$tag" || return 0
	kill -TERM "$pid" 2>/dev/null || return 0
	for _ in $(seq 30); do
		kill -0 "$pid" 2>/dev/null || return 0
		sleep 0.1
	done
	kill -KILL "$pid" 2>/dev/null || true
}

cmd_down() {
	local name=$1 ns
	local -a pids
	check_name "$name"
	kill_pid_file "$STATE_ROOT/$name/pid" "$STATE_ROOT/$name/ready"
	for ns in "$name-c" "$name-d" "$name-a" "$name-b"; do
		ns_exists "$ns" || continue
		# Processes a test left running inside the lab (iperf3 -s, ...).
		mapfile -t pids < <(ip netns pids "$ns" 2>/dev/null || true)
		if ((${#pids[@]})); then
			kill -TERM "${pids[@]}" 2>/dev/null || true
			sleep 0.2
			kill -KILL "${pids[@]}" 2>/dev/null || true
		fi
		ip netns del "$ns" 2>/dev/null || true
	done
	rm -rf -- "${STATE_ROOT:?}/$name"
}

cmd_env() {
	local name=$1
	check_name "$name"
	[[ -f $STATE_ROOT/$name/env ]] || die "lab '$name' is not up"
	cat "$STATE_ROOT/$name/env"
}

UP_NAME=
UP_OK=0
up_exit() {
	local rc=$?
	if [[ $UP_OK != 1 && -n $UP_NAME ]]; then
		echo "lab.sh: 'up $UP_NAME' did not finish; cleaning up" >&2
		[[ -f $STATE_ROOT/$UP_NAME/delayline.log ]] && sed 's/^/  /' "$STATE_ROOT/$UP_NAME/delayline.log" >&2
		cmd_down "$UP_NAME" || true
		((rc == 0)) && rc=1
	fi
	exit $rc
}

cmd_up() {
	local name=$1
	shift
	check_name "$name"
	local rtt='' rate='' queue='' mtu=1500 backend=${LAB_BACKEND:-auto} tcp_mem=''
	local loss='' loss_ab='' loss_ba=''
	local police='' police_ab='' police_ba='' jitter='' reorder='' batch='' cross=0 cross_mem=16777216
	while (($#)); do
		case $1 in
		--rtt | --rate | --queue | --mtu | --backend | --tcp-mem | --loss | --loss-ab | --loss-ba | \
			--police | --police-ab | --police-ba | --jitter | --reorder | --batch | --cross-mem)
			(($# >= 2)) || die "$1 needs a value"
			case $1 in
			--rtt) rtt=$2 ;; --rate) rate=$2 ;; --queue) queue=$2 ;;
			--mtu) mtu=$2 ;; --backend) backend=$2 ;; --tcp-mem) tcp_mem=$2 ;;
			--loss) loss=$2 ;; --loss-ab) loss_ab=$2 ;; --loss-ba) loss_ba=$2 ;;
			--police) police=$2 ;; --police-ab) police_ab=$2 ;; --police-ba) police_ba=$2 ;;
			--jitter) jitter=$2 ;; --reorder) reorder=$2 ;; --batch) batch=$2 ;;
			--cross-mem) cross_mem=$2 ;;
			esac
			shift 2
			;;
		--cross)
			cross=1
			shift
			;;
		*) die "unknown argument '$1' (see lab.sh help)" ;;
		esac
	done
	[[ -n $rtt ]] || die "--rtt is required (e.g. --rtt 150ms)"
	local rtt_ns oneway_ns rate_bps="" queue_bytes=""
	rtt_ns=$(to_ns "$rtt")
	oneway_ns=$((rtt_ns / 2))
	[[ -n $rate ]] && rate_bps=$(to_bps "$rate")
	[[ -n $rate && $rate_bps -lt 1 ]] && die "rate '$rate' is too small"
	[[ -n $queue ]] && queue_bytes=$(to_bytes "$queue")
	[[ -n $tcp_mem ]] && tcp_mem=$(to_bytes "$tcp_mem")
	if ! [[ $mtu =~ ^[0-9]+$ ]] || ((mtu < 576 || mtu > 65535)); then
		die "bad --mtu '$mtu' (576..65535)"
	fi
	[[ $backend =~ ^(auto|netem|tun)$ ]] || die "bad --backend '$backend' (auto, netem, tun)"
	local pct
	for pct in "$loss" "$loss_ab" "$loss_ba"; do
		[[ -z $pct ]] || check_pct "$pct"
	done
	# Each direction's loss: its own, else --loss, else none (the delay line's rule too).
	local eff_ab=${loss_ab:-${loss:-0}} eff_ba=${loss_ba:-${loss:-0}} given_loss=$loss$loss_ab$loss_ba
	local p
	for p in "$police" "$police_ab" "$police_ba"; do
		[[ -z $p ]] || check_police "$p"
	done
	[[ -n $jitter && -n $reorder ]] && die "--jitter and --reorder: one or the other (--reorder DUR is jitter that reorders)"
	[[ -z $jitter ]] || check_dur "$jitter"
	[[ -z $reorder ]] || check_dur "$reorder"
	if [[ -n $batch ]]; then
		check_dur "$batch"
		(($(to_ns "$batch") <= 1000000000)) || die "bad --batch '$batch' (at most 1s, e.g. 1ms)"
	fi
	cross_mem=$(to_bytes "$cross_mem")
	((cross_mem >= 4096)) || die "--cross-mem must be at least 4096 bytes"
	# Policer, jitter and batches are the delay line's.
	local line_only=$police$police_ab$police_ba$jitter$reorder$batch
	if [[ -n $line_only ]]; then
		[[ $backend == netem ]] &&
			die "--police, --jitter, --reorder and --batch are not supported with the netem backend (use --backend tun)"
		backend=tun
	fi
	((EUID == 0)) || die "needs root"

	local state=$STATE_ROOT/$name
	if [[ -e $state ]] || ns_exists "$name-a" || ns_exists "$name-b" || ns_exists "$name-c"; then
		die "lab '$name' already exists (lab.sh down $name)"
	fi
	UP_NAME=$name
	trap up_exit EXIT
	trap 'exit 130' INT
	trap 'exit 143' TERM
	mkdir -p "$state"

	local ns_a=$name-a ns_b=$name-b ns
	ip netns add "$ns_a"
	ip netns add "$ns_b"
	for ns in "$ns_a" "$ns_b"; do ip -n "$ns" link set lo up; done

	if [[ $backend == auto ]]; then
		if netem_works "$ns_a"; then backend=netem; else backend=tun; fi
	fi
	local pid=''
	if [[ $backend == netem ]]; then
		netem_works "$ns_a" || die "netem is not available in this kernel (use --backend tun)"
		ip -n "$ns_a" link add "$DEV" type veth peer name "$DEV" netns "$ns_b"
		local args=(delay "$((oneway_ns / 1000))us") limit
		if [[ -n $rate ]]; then
			local q=${queue_bytes:-$(((rate_bps / 8 / 40) > 1500000 ? rate_bps / 8 / 40 : 1500000))}
			# netem's limit counts the packets being delayed as well.
			limit=$(((q + mtu - 1) / mtu + rate_bps * (oneway_ns / 1000) / 8000000 / mtu + 1))
			args+=(rate "${rate_bps}bit")
		else
			limit=$((queue_bytes ? (queue_bytes + mtu - 1) / mtu : 1000000))
		fi
		args+=(limit "$limit")
		# The loss of a direction is applied on its sender's egress.
		ip netns exec "$ns_a" tc qdisc add dev "$DEV" root netem "${args[@]}" loss "${eff_ab}%"
		ip netns exec "$ns_b" tc qdisc add dev "$DEV" root netem "${args[@]}" loss "${eff_ba}%"
	else
		local bin
		bin=$(find_delayline)
		local tmp_a=tl$$a tmp_b=tl$$b
		# A zero delay is a bare 0 (tcptune's durations are never zero).
		local delay=0
		((oneway_ns > 0)) && delay=${oneway_ns}ns
		local dl=(--tun-a "$tmp_a" --tun-b "$tmp_b" --delay "$delay" --ready-file "$state/ready")
		[[ -n $rate ]] && dl+=(--rate "${rate_bps}bit")
		[[ -n $queue_bytes ]] && dl+=(--queue "$queue_bytes")
		# Only what was given: DELAYLINE_ARGS (below) may still carry a --loss of its own.
		[[ -n $loss ]] && dl+=(--loss "$loss")
		[[ -n $loss_ab ]] && dl+=(--loss-ab "$loss_ab")
		[[ -n $loss_ba ]] && dl+=(--loss-ba "$loss_ba")
		[[ -n $police ]] && dl+=(--police "$police")
		[[ -n $police_ab ]] && dl+=(--police-ab "$police_ab")
		[[ -n $police_ba ]] && dl+=(--police-ba "$police_ba")
		[[ -n $jitter ]] && dl+=(--jitter "$jitter")
		[[ -n $reorder ]] && dl+=(--reorder "$reorder")
		[[ -n $batch ]] && dl+=(--batch "$batch")
		# Extra delayline options for experiments, e.g. DELAYLINE_ARGS="--offload".
		local -a extra
		read -r -a extra <<<"${DELAYLINE_ARGS:-}"
		dl+=("${extra[@]}")
		setsid "$bin" "${dl[@]}" </dev/null >"$state/delayline.log" 2>&1 &
		pid=$!
		echo "$pid" >"$state/pid"
		for _ in $(seq 100); do
			[[ -e $state/ready ]] && break
			kill -0 "$pid" 2>/dev/null || die "the delayline exited during start-up"
			sleep 0.05
		done
		[[ -e $state/ready ]] || die "the delayline did not become ready"
		ip link set "$tmp_a" netns "$ns_a" name "$DEV"
		ip link set "$tmp_b" netns "$ns_b" name "$DEV"
	fi

	local me peer
	for ns in "$ns_a" "$ns_b"; do
		if [[ $ns == "$ns_a" ]]; then me=$ADDR_A peer=$ADDR_B; else me=$ADDR_B peer=$ADDR_A; fi
		# IPv4 only: no IPv6 link-local addresses on the WAN link.
		ip netns exec "$ns" sysctl -qw "net.ipv6.conf.$DEV.disable_ipv6=1" 2>/dev/null || true
		ip -n "$ns" link set "$DEV" mtu "$mtu"
		ip -n "$ns" addr add "$me/32" peer "$peer/32" dev "$DEV"
		ip -n "$ns" link set "$DEV" up
		if [[ -n $tcp_mem ]]; then
			ip netns exec "$ns" sysctl -qw "net.ipv4.tcp_rmem=4096 131072 $tcp_mem" \
				"net.ipv4.tcp_wmem=4096 16384 $tcp_mem"
		fi
	done

	local ns_c='' ns_d=''
	((cross)) && ns_c=$name-c ns_d=$name-d && up_cross "$ns_a" "$ns_b" "$ns_c" "$ns_d" "$mtu" "$cross_mem"

	{
		printf 'NS_A=%q\nNS_B=%q\nADDR_A=%q\nADDR_B=%q\nDEV=%q\n' "$ns_a" "$ns_b" "$ADDR_A" "$ADDR_B" "$DEV"
		printf 'BACKEND=%q\nRTT_NS=%q\nRATE_BPS=%q\nQUEUE_BYTES=%q\nMTU=%q\nDELAYLINE_PID=%q\n' \
			"$backend" "$rtt_ns" "$rate_bps" "$queue_bytes" "$mtu" "$pid"
		if ((cross)); then
			printf 'NS_C=%q\nADDR_C=%q\nNS_D=%q\nADDR_D=%q\nCROSS_MEM=%q\n' "$ns_c" "$ADDR_C" "$ns_d" "$ADDR_D" "$cross_mem"
		fi
	} >"$state/env"

	local wait_s=$(((rtt_ns + 999999999) / 1000000000 + 1))
	answers "$ns_a" "$ADDR_B" "$wait_s" || die "no ping reply from $ADDR_B through the lab"
	if ((cross)); then
		answers "$ns_c" "$ADDR_D" "$wait_s" || die "no ping reply from $ADDR_D to $ADDR_C through $ns_a and $ns_b"
	fi
	UP_OK=1
	local pol=${police_ab:-$police} pol_ba=${police_ba:-$police}
	[[ -n $pol$pol_ba ]] && pol="${pol:-none} a->b ${pol_ba:-none} b->a"
	local desc="rtt ${rtt}${rate:+, rate $rate}${queue:+, queue $queue}"
	desc+="${given_loss:+, loss $eff_ab % a->b $eff_ba % b->a}${pol:+, police $pol}"
	desc+="${jitter:+, jitter $jitter}${reorder:+, reorder $reorder}${batch:+, released every $batch}"
	echo "lab '$name' up: $ns_a ($ADDR_A) <-> $ns_b ($ADDR_B) dev $DEV, backend $backend, $desc," \
		"mtu $mtu${pid:+, delayline pid $pid}${ns_c:+, cross $ns_c ($ADDR_C) via $ns_a}"
}

# A namespace `ns` behind `gw` by a veth pair (cross0): `me` its address, `gw_addr` the
# gateway's; the gateway forwards.
veth_behind() {
	local gw=$1 gw_addr=$2 ns=$3 me=$4 mtu=$5 n a p
	ip netns add "$ns"
	ip -n "$ns" link set lo up
	ip -n "$gw" link add "$XDEV" type veth peer name "$XDEV" netns "$ns"
	for n in "$gw" "$ns"; do
		if [[ $n == "$gw" ]]; then a=$gw_addr p=$me; else a=$me p=$gw_addr; fi
		ip netns exec "$n" sysctl -qw "net.ipv6.conf.$XDEV.disable_ipv6=1" 2>/dev/null || true
		ip -n "$n" link set "$XDEV" mtu "$mtu"
		ip -n "$n" addr add "$a/32" peer "$p/32" dev "$XDEV"
		ip -n "$n" link set "$XDEV" up
	done
	ip netns exec "$gw" sysctl -qw net.ipv4.ip_forward=1
}

# The neighbours: C behind A and D behind B, C's flows to D routed through A, the delay line
# and B, the same way as A's own to B; TuneD-like buffers of their own and CUBIC by C's route.
up_cross() {
	local ns_a=$1 ns_b=$2 ns_c=$3 ns_d=$4 mtu=$5 mem=$6 ns
	veth_behind "$ns_a" "$ADDR_A" "$ns_c" "$ADDR_C" "$mtu"
	veth_behind "$ns_b" "$ADDR_B" "$ns_d" "$ADDR_D" "$mtu"
	# A route's congestion control is not subject to tcp_allowed_congestion_control.
	ip -n "$ns_c" route add "$ADDR_B/32" via "$ADDR_A" dev "$XDEV" congctl cubic
	ip -n "$ns_c" route add "$ADDR_D/32" via "$ADDR_A" dev "$XDEV" congctl cubic
	ip -n "$ns_a" route add "$ADDR_D/32" dev "$DEV"
	ip -n "$ns_b" route add "$ADDR_C/32" via "$ADDR_A" dev "$DEV"
	ip -n "$ns_d" route add "$ADDR_C/32" via "$ADDR_B" dev "$XDEV" congctl cubic
	for ns in "$ns_c" "$ns_d"; do
		ip netns exec "$ns" sysctl -qw "net.ipv4.tcp_rmem=4096 131072 $mem" "net.ipv4.tcp_wmem=4096 16384 $mem"
	done
}

# The delay line's counters now (SIGUSR1): its two stats lines, a->b then b->a.
cmd_stats() {
	local name=$1 state=$STATE_ROOT/$1
	check_name "$name"
	[[ -f $state/env ]] || die "lab '$name' is not up"
	local BACKEND='' DELAYLINE_PID=''
	eval "$(grep -E '^(BACKEND|DELAYLINE_PID)=' "$state/env")"
	[[ $BACKEND == tun && $DELAYLINE_PID =~ ^[0-9]+$ ]] || die "lab '$name' has no delay line (backend $BACKEND)"
	{ tr '\0' '\n' <"/proc/$DELAYLINE_PID/cmdline"; } 2>/dev/null | grep -qxF -- "$state/ready" ||
		die "the delay line of lab '$name' is not running"
	local log=$state/delayline.log before
	before=$(grep -c ': forwarded ' "$log" || true)
	kill -USR1 "$DELAYLINE_PID"
	for _ in $(seq 100); do
		(($(grep -c ': forwarded ' "$log" || true) >= before + 2)) && break
		sleep 0.02
	done
	grep ': forwarded ' "$log" | tail -n 2
}

# Cross traffic from C to D (see the header): start, stop, read.
cmd_cross() {
	local name=$1 action=${2:-}
	check_name "$name"
	shift 2 || die "usage: lab.sh cross NAME start N [--port-base P] [--onoff ON:OFF] | stop | read"
	local state=$STATE_ROOT/$name
	[[ -f $state/env ]] || die "lab '$name' is not up"
	local NS_D='' NS_C='' RTT_NS=''
	eval "$(grep -E '^(NS_D|NS_C|RTT_NS)=' "$state/env")"
	[[ -n $NS_C && -n $NS_D ]] || die "lab '$name' has no neighbours (lab.sh up ... --cross)"
	local dir=$state/cross
	case $action in
	start) cross_start "$dir" "$NS_D" "$NS_C" "$@" ;;
	stop)
		(($# == 0)) || die "usage: lab.sh cross NAME stop"
		cross_stop "$dir"
		;;
	read) cross_read "$dir" "$RTT_NS" "$@" ;;
	*) die "unknown cross action '$action' (start, stop, read)" ;;
	esac
}

# Waits until something listens on TCP port $2 in namespace $1.
wait_listen() {
	for _ in $(seq 100); do
		ip netns exec "$1" ss -Hltn "sport = :$2" 2>/dev/null | grep -q . && return 0
		sleep 0.05
	done
	die "nothing listens on port $2 in $1"
}

cross_start() {
	local dir=$1 ns_d=$2 ns_c=$3
	shift 3
	(($#)) || die "usage: lab.sh cross NAME start N [--port-base P] [--onoff ON:OFF]"
	local n=$1 port_base=5401 onoff=''
	shift
	if ! [[ $n =~ ^[0-9]+$ ]] || ((n < 1 || n > 16)); then die "bad number of flows '$n' (1 to 16)"; fi
	while (($#)); do
		(($# >= 2)) || die "$1 needs a value"
		case $1 in
		--port-base) port_base=$2 ;;
		--onoff) onoff=$2 ;;
		*) die "unknown argument '$1' (--port-base P, --onoff ON:OFF)" ;;
		esac
		shift 2
	done
	if ! [[ $port_base =~ ^[0-9]+$ ]] || ((port_base < 1024 || port_base + n > 65535)); then
		die "bad --port-base '$port_base' (1024 and up)"
	fi
	local on_s='' off_ns=''
	if [[ -n $onoff ]]; then
		[[ $onoff == *:* ]] || die "bad --onoff '$onoff' (ON:OFF, e.g. 2s:3s)"
		local on_ns
		on_ns=$(to_ns "${onoff%%:*}")
		off_ns=$(to_ns "${onoff#*:}")
		((on_ns > 0)) || die "bad --onoff '$onoff': ON must be more than zero"
		on_s=$(((on_ns + 999999999) / 1000000000))
	fi
	[[ -e $dir/pids ]] && die "cross traffic already runs (lab.sh cross NAME stop)"
	command -v iperf3 >/dev/null || die "iperf3 is needed (apt-get install iperf3)"
	rm -rf -- "$dir"
	mkdir -p "$dir"
	local k port pids=()
	local flows=$n
	[[ -n $on_s ]] && flows=$((n + 1))
	for ((k = 0; k < flows; k++)); do
		port=$((port_base + k))
		ip netns exec "$ns_d" iperf3 -s -B "$ADDR_D" -p "$port" </dev/null >"$dir/server-$port.log" 2>&1 &
		pids+=("server $!")
	done
	for ((k = 0; k < flows; k++)); do wait_listen "$ns_d" $((port_base + k)); done
	for ((k = 1; k <= n; k++)); do
		port=$((port_base + k - 1))
		echo "$port" >"$dir/long-$k.port"
		date +%s.%N >"$dir/long-$k.t0"
		# -t 0: until stopped; C's route makes it CUBIC.
		ip netns exec "$ns_c" iperf3 -c "$ADDR_D" -B "$ADDR_C" -p "$port" -t 0 -J \
			</dev/null >"$dir/long-$k.json" 2>"$dir/long-$k.err" &
		pids+=("client $!")
	done
	if [[ -n $on_s ]]; then
		port=$((port_base + n))
		# The loop runs inside C, so `down` finds it with the namespace's other processes.
		# shellcheck disable=SC2016 # its own script: expanded there
		ip netns exec "$ns_c" bash -c '
			dir=$1 port=$2 on=$3 off=$4 addr_b=$5 addr_c=$6 k=0
			trap '\''kill -TERM $(jobs -p) 2>/dev/null; wait; exit 0'\'' TERM INT
			while :; do
				k=$((k + 1))
				echo "$port" >"$dir/onoff-$k.port"
				date +%s.%N >"$dir/onoff-$k.t0"
				iperf3 -c "$addr_b" -B "$addr_c" -p "$port" -t "$on" -J >"$dir/onoff-$k.json" 2>"$dir/onoff-$k.err" &
				wait $!
				sleep "$off" &
				wait $!
			done' onoff "$dir" "$port" "$on_s" "$(awk -v n="$off_ns" 'BEGIN { printf "%.9f", n / 1e9 }')" \
			"$ADDR_D" "$ADDR_C" </dev/null >/dev/null 2>&1 &
		pids+=("onoff $!")
	fi
	printf '%s\n' "${pids[@]}" >"$dir/pids"
	echo "lab.sh: cross traffic: $n long CUBIC flow$( ((n == 1)) || echo s) from $ADDR_C to $ADDR_D port" \
		"$port_base$( ((n == 1)) || echo "..$((port_base + n - 1))")${on_s:+, an on/off flow (${onoff}) to port $((port_base + n))};" \
		"JSON in $dir" >&2
}

# Stops the on/off loop and the clients (each writes its JSON as it ends), then the servers.
cross_stop() {
	local dir=$1 role pid
	[[ -f $dir/pids ]] || return 0
	local -a later=()
	while read -r role pid; do
		[[ $pid =~ ^[0-9]+$ ]] || continue
		if [[ $role == server ]]; then
			later+=("$pid")
		else
			kill -TERM "$pid" 2>/dev/null || true
		fi
	done <"$dir/pids"
	while read -r role pid; do
		[[ $role != server && $pid =~ ^[0-9]+$ ]] || continue
		for _ in $(seq 50); do
			kill -0 "$pid" 2>/dev/null || break
			sleep 0.1
		done
		kill -KILL "$pid" 2>/dev/null || true
	done <"$dir/pids"
	((${#later[@]})) && kill -TERM "${later[@]}" 2>/dev/null
	rm -f -- "$dir/pids"
}

# Each flow's throughput and retransmits over a window of wall-clock time, from its JSON.
cross_read() {
	local dir=$1 rtt_ns=$2 from='' to=''
	shift 2
	while (($#)); do
		(($# >= 2)) || die "$1 needs a value"
		case $1 in
		--from) from=$2 ;;
		--to) to=$2 ;;
		*) die "unknown argument '$1' (--from EPOCH, --to EPOCH)" ;;
		esac
		shift 2
	done
	local t
	for t in "$from" "$to"; do
		[[ -z $t || $t =~ ^[0-9]+(\.[0-9]+)?$ ]] || die "bad time '$t' (epoch seconds, as date +%s.%N)"
	done
	[[ -d $dir ]] || die "no cross traffic was started in this lab"
	[[ -f $dir/pids ]] && echo "lab.sh: cross traffic still runs: its JSON is written when it stops" >&2
	python3 "$REPO_ROOT/lab/cross_read.py" "$dir" "$rtt_ns" "${from:-0}" "${to:-0}"
}

main() {
	local cmd=${1:-help}
	(($#)) && shift
	case $cmd in
	up)
		(($# >= 1)) || die "usage: lab.sh up NAME --rtt 150ms [--rate 500mbit] [--queue BYTES] [--mtu N]"
		cmd_up "$@"
		;;
	down)
		(($# == 1)) || die "usage: lab.sh down NAME"
		((EUID == 0)) || die "needs root"
		cmd_down "$1"
		;;
	env)
		(($# == 1)) || die "usage: lab.sh env NAME"
		cmd_env "$1"
		;;
	stats)
		(($# == 1)) || die "usage: lab.sh stats NAME"
		((EUID == 0)) || die "needs root"
		cmd_stats "$1"
		;;
	cross)
		(($# >= 2)) || die "usage: lab.sh cross NAME start N [--port-base P] [--onoff ON:OFF] | stop | read [--from T] [--to T]"
		((EUID == 0)) || die "needs root"
		cmd_cross "$@"
		;;
	help | -h | --help) usage ;;
	*) die "unknown command '$cmd' (up, down, env, stats, cross, help)" ;;
	esac
}

main "$@"
