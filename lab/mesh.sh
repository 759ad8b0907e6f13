#!/usr/bin/env bash
# lab/mesh.sh — three emulated hosts, each pair joined by a WAN path of its own, each host with
# its own sshd: the fleet `tcptune mesh` measures.
#
#   mesh.sh up NAME [--bin PATH] --pair 1-2:RTT:RATE[:loss=PCT][:queue=BYTES]
#               --pair 1-3:... --pair 2-3:...
#   mesh.sh down NAME       # idempotent
#   mesh.sh env NAME        # prints NS_1.. ADDR_1.. SSH_CONFIG INVENTORY ... as shell vars
#
# Hosts 1 to 3 are network namespaces NAME-h1, NAME-h2, NAME-h3. Each has one address,
# 198.18.10.N/32 on its loopback, by which every other host and the control host (the root
# namespace) reach it, as hosts of a real fleet reach each other by name:
#   - between hosts: one delay line per pair (lab/delayline, as lab.sh's tun backend: RTT/2 each
#     way, RATE each direction into a drop-tail queue of BYTES, default the delay line's, random
#     loss PCT % each way); its device in hI is `toJ`, in hJ `toI`, and hI routes 198.18.10.J/32
#     over it with source 198.18.10.I;
#   - from the control host: a veth pair per host (root side `msNAME-N`... cut to 15 characters,
#     the host's side `mgmt0`, 198.18.11.4N+1/30 and .4N+2/30); the root namespace routes
#     198.18.10.N/32 over it, so ssh from here never crosses a delay line.
# Each host runs sshd on 0.0.0.0:2222 (key only, a host key and a client key made for the lab,
# PATH = STATE/bin:/usr/sbin:/usr/bin:/sbin:/bin, where STATE/bin/tcptune links to --bin PATH
# when given; TMPDIR = STATE/tmp, where what a session leaves would show). STATE
# (/run/tcptune-lab/NAME, or $LAB_STATE_ROOT/NAME) holds ssh_config (Hosts h1, h2, h3,
# BatchMode, the lab's known_hosts only), inventory.ini (an Ansible inventory of h1, h2, h3
# through that ssh_config, as root without sudo), env, and each delay line's pid and log
# (pid.12, delayline.12.log).
# Needs root, sshd (openssh-server) and the delay line: $DELAYLINE_BIN, else a built
# target/{release,debug}/delayline (also under $CARGO_TARGET_DIR), else built with cargo.
# Only ever addresses 198.18.10.0/24 and 198.18.11.0/24, inside namespaces it made.
set -euo pipefail

LAB_SCRIPT=mesh.sh
# shellcheck source=lab/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

cmd_down() {
	local name=$1 state=$STATE_ROOT/$1 n f
	local -a pids
	check_name "$name"
	for f in "$state"/pid.* "$state"/sshd.*.pid; do
		[[ -e $f ]] && kill_pid_file "$f"
	done
	for n in 1 2 3; do
		if ns_exists "$name-h$n"; then
			mapfile -t pids < <(ip netns pids "$name-h$n" 2>/dev/null || true)
			if ((${#pids[@]})); then
				kill -TERM "${pids[@]}" 2>/dev/null || true
				sleep 0.2
				kill -KILL "${pids[@]}" 2>/dev/null || true
			fi
			ip netns del "$name-h$n" 2>/dev/null || true
		fi
		ip link del "$(mgmt_dev "$name" "$n")" 2>/dev/null || true
		ip route del "198.18.10.$n/32" dev "$(mgmt_dev "$name" "$n")" 2>/dev/null || true
	done
	rm -rf -- "${STATE_ROOT:?}/$name"
}

UP_NAME=
UP_OK=0
up_exit() {
	local rc=$?
	if [[ $UP_OK != 1 && -n $UP_NAME ]]; then
		cmd_down "$UP_NAME" >/dev/null 2>&1 || true
	fi
	exit "$rc"
}

cmd_up() {
	local name=$1
	shift
	check_name "$name"
	local bin='' spec
	local -a specs=()
	while (($#)); do
		case $1 in
		--bin) (($# >= 2)) || die "--bin needs a path"; bin=$2; shift 2 ;;
		--pair) (($# >= 2)) || die "--pair needs a value"; specs+=("$2"); shift 2 ;;
		*) die "unknown argument '$1' (see mesh.sh help)" ;;
		esac
	done
	((EUID == 0)) || die "needs root"
	[[ -x /usr/sbin/sshd ]] || die "no /usr/sbin/sshd (apt-get install openssh-server)"
	[[ -z $bin || -x $bin ]] || die "--bin $bin: not an executable"
	# Each pair's fields, checked before anything is made.
	declare -A rtt rate loss queue
	for spec in "${specs[@]}"; do
		local ij r q='' l='' mod
		IFS=: read -r ij r q _ <<<"$spec"
		[[ $ij =~ ^([1-3])-([1-3])$ && ${BASH_REMATCH[1]} -lt ${BASH_REMATCH[2]} ]] ||
			die "bad pair '$spec' (1-2, 1-3 or 2-3, then :RTT:RATE)"
		[[ -z ${rtt[$ij]:-} ]] || die "pair $ij given twice"
		IFS=: read -r -a f <<<"$spec"
		((${#f[@]} >= 3)) || die "bad pair '$spec' (I-J:RTT:RATE[:loss=PCT][:queue=BYTES])"
		rtt[$ij]=$(helper to_ns "${f[1]}") || die "bad RTT in '$spec'"
		rate[$ij]=$(helper to_bps "${f[2]}") || die "bad rate in '$spec'"
		q='' l=''
		for mod in "${f[@]:3}"; do
			case $mod in
			loss=*) l=${mod#loss=}; helper check_pct "$l" || die "bad loss in '$spec'" ;;
			queue=*) q=$(helper to_bytes "${mod#queue=}") || die "bad queue in '$spec'" ;;
			*) die "unknown modifier '$mod' in '$spec' (loss=PCT, queue=BYTES)" ;;
			esac
		done
		loss[$ij]=$l queue[$ij]=$q
	done
	for ij in 1-2 1-3 2-3; do [[ -n ${rtt[$ij]:-} ]] || die "missing --pair $ij:RTT:RATE"; done
	local dl
	# find_delayline says why on its one line when there is none.
	dl=$(DELAYLINE_BIN=${DELAYLINE_BIN:-} helper find_delayline) || exit 1

	local state=$STATE_ROOT/$name n
	[[ ! -e $state ]] || die "lab '$name' already exists (mesh.sh down $name)"
	for n in 1 2 3; do ! ns_exists "$name-h$n" || die "namespace $name-h$n exists (mesh.sh down $name)"; done
	UP_NAME=$name
	trap up_exit EXIT
	trap 'exit 130' INT
	trap 'exit 143' TERM
	mkdir -p "$state/bin" "$state/tmp" /run/sshd
	[[ -n $bin ]] && ln -s "$(realpath "$bin")" "$state/bin/tcptune"

	local ns root_addr host_addr dev
	for n in 1 2 3; do
		ns=$name-h$n
		ip netns add "$ns"
		ip -n "$ns" link set lo up
		ip -n "$ns" addr add "198.18.10.$n/32" dev lo
		dev=$(mgmt_dev "$name" "$n")
		root_addr=198.18.11.$((4 * n + 1)) host_addr=198.18.11.$((4 * n + 2))
		ip link add "$dev" type veth peer name mgmt0 netns "$ns"
		ip addr add "$root_addr/30" dev "$dev"
		ip link set "$dev" up
		ip -n "$ns" addr add "$host_addr/30" dev mgmt0
		ip -n "$ns" link set mgmt0 up
		ip route add "198.18.10.$n/32" via "$host_addr" dev "$dev"
		ip netns exec "$ns" sysctl -qw net.ipv6.conf.mgmt0.disable_ipv6=1 2>/dev/null || true
	done

	local i j ta tb
	for ij in 1-2 1-3 2-3; do
		i=${ij%-*} j=${ij#*-}
		ta=ml$$a$i$j tb=ml$$b$i$j
		local args=(--tun-a "$ta" --tun-b "$tb" --delay "$((rtt[$ij] / 2))ns" --rate "${rate[$ij]}bit"
			--ready-file "$state/ready.$i$j")
		[[ -n ${queue[$ij]} ]] && args+=(--queue "${queue[$ij]}")
		[[ -n ${loss[$ij]} ]] && args+=(--loss "${loss[$ij]}")
		((rtt[$ij] > 0)) || args[5]=0
		setsid "$dl" "${args[@]}" </dev/null >"$state/delayline.$i$j.log" 2>&1 &
		echo $! >"$state/pid.$i$j"
		for _ in $(seq 100); do
			[[ -e $state/ready.$i$j ]] && break
			kill -0 "$(cat "$state/pid.$i$j")" 2>/dev/null || die "the delay line $ij exited: $(cat "$state/delayline.$i$j.log")"
			sleep 0.05
		done
		[[ -e $state/ready.$i$j ]] || die "the delay line $ij did not become ready"
		ip link set "$ta" netns "$name-h$i" name "to$j"
		ip link set "$tb" netns "$name-h$j" name "to$i"
		for n in "$i" "$j"; do
			local other=$((i + j - n))
			ip netns exec "$name-h$n" sysctl -qw "net.ipv6.conf.to$other.disable_ipv6=1" 2>/dev/null || true
			ip -n "$name-h$n" link set "to$other" up
			ip -n "$name-h$n" route add "198.18.10.$other/32" dev "to$other" src "198.18.10.$n"
		done
	done

	# The keys, the known hosts, the client's configuration, the inventory.
	ssh-keygen -q -t ed25519 -N '' -C mesh-host -f "$state/host"
	ssh-keygen -q -t ed25519 -N '' -C mesh-client -f "$state/id"
	cp "$state/id.pub" "$state/authorized_keys"
	: >"$state/known_hosts" && : >"$state/ssh_config"
	for n in 1 2 3; do
		echo "[198.18.10.$n]:2222 $(cat "$state/host.pub")" >>"$state/known_hosts"
		printf 'Host h%s\n  HostName 198.18.10.%s\n  Port 2222\n  User root\n  IdentityFile %s\n  IdentitiesOnly yes\n  UserKnownHostsFile %s\n  GlobalKnownHostsFile /dev/null\n  StrictHostKeyChecking yes\n  BatchMode yes\n  ConnectTimeout 10\n' \
			"$n" "$n" "$state/id" "$state/known_hosts" >>"$state/ssh_config"
		ip netns exec "$name-h$n" /usr/sbin/sshd -f /dev/null -h "$state/host" -o ListenAddress=0.0.0.0:2222 \
			-o "AuthorizedKeysFile=$state/authorized_keys" -o StrictModes=no -o UsePAM=no \
			-o "PidFile=$state/sshd.$n.pid" -o "SetEnv=PATH=$state/bin:/usr/sbin:/usr/bin:/sbin:/bin TMPDIR=$state/tmp"
	done
	# ansible_become=false: the lab logs in as root, and may have no sudo.
	printf '[mesh]\nh1\nh2\nh3\n\n[mesh:vars]\nansible_ssh_common_args=%s\nansible_python_interpreter=/usr/bin/python3\nansible_become=false\n' \
		"'-F $state/ssh_config'" >"$state/inventory.ini"
	{
		for n in 1 2 3; do printf 'NS_%s=%q\nADDR_%s=%q\n' "$n" "$name-h$n" "$n" "198.18.10.$n"; done
		printf 'SSH_CONFIG=%q\nINVENTORY=%q\nTMP=%q\n' "$state/ssh_config" "$state/inventory.ini" "$state/tmp"
		for ij in 1-2 1-3 2-3; do
			local k=${ij/-/}
			printf 'RTT_NS_%s=%q\nRATE_BPS_%s=%q\nLOSS_%s=%q\nQUEUE_%s=%q\n' "$k" "${rtt[$ij]}" "$k" "${rate[$ij]}" \
				"$k" "${loss[$ij]}" "$k" "${queue[$ij]}"
		done
	} >"$state/env"

	# Every pair answers across its own line; every host's sshd answers the control host.
	for ij in 1-2 1-3 2-3; do
		i=${ij%-*} j=${ij#*-}
		local w=$((rtt[$ij] / 1000000000 + 2))
		ip netns exec "$name-h$i" ping -c 1 -W "$w" "198.18.10.$j" >/dev/null ||
			die "no ping reply from h$j to h$i across their line"
	done
	for n in 1 2 3; do
		for _ in $(seq 50); do [[ -s $state/sshd.$n.pid ]] && break; sleep 0.1; done
		ssh -F "$state/ssh_config" "h$n" true || die "ssh h$n does not answer"
	done
	UP_OK=1
	for ij in 1-2 1-3 2-3; do
		echo "mesh '$name': h${ij%-*} <-> h${ij#*-}: rtt $((rtt[$ij] / 1000000)) ms, rate ${rate[$ij]} bit/s${loss[$ij]:+, loss ${loss[$ij]} %}${queue[$ij]:+, queue ${queue[$ij]} B}"
	done
}


main "$@"
