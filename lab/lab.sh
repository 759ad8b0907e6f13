#!/usr/bin/env bash
# lab/lab.sh — an emulated WAN path between two network namespaces.
#
#   lab.sh up NAME --rtt 150ms [--rate 500mbit] [--queue BYTES] [--mtu 1500]
#                  [--backend auto|netem|tun] [--tcp-mem BYTES]
#                  [--loss PCT] [--loss-ab PCT] [--loss-ba PCT]
#   lab.sh down NAME        # idempotent
#   lab.sh env NAME         # prints NS_A NS_B ADDR_A ADDR_B DEV ... as shell vars
#
# Creates namespaces NAME-a (198.18.0.1) and NAME-b (198.18.0.2), joined by
# a point-to-point link called wan0 in both, with RTT/2 of delay each way,
# optionally a RATE bottleneck (each direction) with a drop-tail queue.
#
# Backends (auto picks netem when `tc qdisc add ... netem` works):
#   netem  veth pair + `tc qdisc add dev wan0 root netem delay D rate R limit N`
#          on both ends (limit in packets: queue/mtu plus the packets in flight
#          on the delay part, as netem's limit counts both).
#   tun    the delay line (lab/delayline, a workspace member): it creates two TUN
#          devices in the root netns; this script moves them into the
#          namespaces (the program's fds follow the devices) and renames them
#          wan0. The delayline runs in the background; its pid and log are in
#          the state dir. Binary: $DELAYLINE_BIN, else
#          target/release/delayline (built with
#          `cargo build --release -p delayline` if missing). Extra
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
#
# State: /run/tcptune-lab/NAME/ (env, pid, delayline.log). Needs root.
# Only ever addresses 198.18.0.1 and 198.18.0.2 inside the lab's namespaces.
set -euo pipefail

STATE_ROOT=${LAB_STATE_ROOT:-/run/tcptune-lab}
REPO_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
ADDR_A=198.18.0.1
ADDR_B=198.18.0.2
DEV=wan0

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

check_name() {
	[[ $1 =~ ^[A-Za-z0-9_][A-Za-z0-9_.-]{0,39}$ ]] || die "bad lab name '$1' (letters, digits, _ . -; at most 40)"
}

ns_exists() { ip netns list 2>/dev/null | awk '{print $1}' | grep -qx -- "$1"; }

find_delayline() {
	if [[ -n ${DELAYLINE_BIN:-} ]]; then
		[[ -x $DELAYLINE_BIN ]] || die "DELAYLINE_BIN=$DELAYLINE_BIN is not an executable"
		echo "$DELAYLINE_BIN"
		return
	fi
	local bin=${CARGO_TARGET_DIR:-$REPO_ROOT/target}/release/delayline
	if [[ ! -x $bin ]]; then
		echo "lab.sh: building the delayline (cargo build --release -p delayline)" >&2
		(cd "$REPO_ROOT" && cargo build --quiet --release -p delayline) >&2 ||
			die "cannot build the delayline"
	fi
	[[ -x $bin ]] || die "no delayline binary at $bin (set DELAYLINE_BIN)"
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
	for ns in "$name-a" "$name-b"; do
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
	while (($#)); do
		case $1 in
		--rtt | --rate | --queue | --mtu | --backend | --tcp-mem | --loss | --loss-ab | --loss-ba)
			(($# >= 2)) || die "$1 needs a value"
			case $1 in
			--rtt) rtt=$2 ;; --rate) rate=$2 ;; --queue) queue=$2 ;;
			--mtu) mtu=$2 ;; --backend) backend=$2 ;; --tcp-mem) tcp_mem=$2 ;;
			--loss) loss=$2 ;; --loss-ab) loss_ab=$2 ;; --loss-ba) loss_ba=$2 ;;
			esac
			shift 2
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
	((EUID == 0)) || die "needs root"

	local state=$STATE_ROOT/$name
	if [[ -e $state ]] || ns_exists "$name-a" || ns_exists "$name-b"; then
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

	{
		printf 'NS_A=%q\nNS_B=%q\nADDR_A=%q\nADDR_B=%q\nDEV=%q\n' "$ns_a" "$ns_b" "$ADDR_A" "$ADDR_B" "$DEV"
		printf 'BACKEND=%q\nRTT_NS=%q\nRATE_BPS=%q\nQUEUE_BYTES=%q\nMTU=%q\nDELAYLINE_PID=%q\n' \
			"$backend" "$rtt_ns" "$rate_bps" "$queue_bytes" "$mtu" "$pid"
	} >"$state/env"

	local wait_s=$(((rtt_ns + 999999999) / 1000000000 + 1)) ok=0
	for _ in $(seq 20); do
		if ip netns exec "$ns_a" ping -q -c 1 -W "$wait_s" "$ADDR_B" >/dev/null 2>&1; then
			ok=1
			break
		fi
	done
	((ok)) || die "no ping reply from $ADDR_B through the lab"
	UP_OK=1
	echo "lab '$name' up: $ns_a ($ADDR_A) <-> $ns_b ($ADDR_B) dev $DEV, backend $backend," \
		"rtt ${rtt}${rate:+, rate $rate}${queue:+, queue $queue}${given_loss:+, loss $eff_ab % a->b $eff_ba % b->a}," \
		"mtu $mtu${pid:+, delayline pid $pid}"
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
	help | -h | --help) usage ;;
	*) die "unknown command '$cmd' (up, down, env, help)" ;;
	esac
}

main "$@"
