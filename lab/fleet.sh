#!/usr/bin/env bash
# lab/fleet.sh — emulated hosts in two or three sites: the hosts of a site share a LAN behind
# their site's router, the routers of two sites are joined by one WAN path, and every host
# runs its own sshd: a fleet for `tcptune mesh` whose pairs share their paths.
#
#   fleet.sh up NAME [--bin PATH] --site S:N [--site S:N ...]
#               --link S1-S2:RTT:RATE[:loss=PCT][:queue=BYTES] ... [--lan RATE]
#   fleet.sh down NAME      # idempotent
#   fleet.sh env NAME       # prints NS_1.. ADDR_1.. SITE_1.. SITES SSH_CONFIG ... as shell vars
#
# Sites: 2 or 3 (--site S:N, S 1 to 8 of a-z, 0-9, not all, ungrouped, fleet or hK; N 1 to 6
# hosts; at most 12 hosts in all). Hosts are numbered in the order of the sites: the first
# site's are h1..hN1, the next site's follow. Host K is the network namespace NAME-hK with one
# address, 198.18.10.K/32 on its loopback, by which every other host and the control host (the
# root namespace) reach it. Site S (its place in the --site order, 1 to 3) has a router,
# the namespace NAME-rS (net.ipv4.ip_forward=1):
#   - the LAN: a veth pair per host between it and its router (the router's side `hK`,
#     198.18.12.4K+1/30, the host's `lan0`, 198.18.12.4K+2/30); the host routes 198.18.10.0/24
#     via its router (src 198.18.10.K), the router 198.18.10.K/32 via the host. Both ends of
#     each pair are shaped to --lan RATE (default 100mbit; htb, a drop-tail bfifo of
#     max(1500000 B, 25 ms at RATE), one segment a packet), so no flow inside a site runs at CPU
#     speed;
#   - the WAN: one delay line per pair of sites (--link, every pair needs one; lab/delayline, as
#     lab.sh's tun backend: RTT/2 each way, RATE each direction into a drop-tail queue of BYTES,
#     default the delay line's, random loss PCT % each way) joins their routers: its device in
#     router S1 is `toS2`, in router S2 `toS1` (S1, S2 the sites' places), and each router routes
#     the other site's hosts (198.18.10.K/32) over it. So every pair of hosts of two sites shares
#     that one line, and the hosts of a site reach each other over their LAN only;
#   - from the control host: a veth pair per host (root side `msNAME-K`, the host's side
#     `mgmt0`, 198.18.11.4K+1/30 and .4K+2/30); the root namespace routes 198.18.10.K/32 over it,
#     so ssh from here never crosses a delay line or a LAN shaper (nor does the root namespace
#     forward between hosts: its ip_forward is left alone, and hosts route each other via lan0).
# Each host runs sshd on 0.0.0.0:2222 (key only, a host key and a client key made for the lab,
# PATH = STATE/bin:/usr/sbin:/usr/bin:/sbin:/bin, where STATE/bin/tcptune links to --bin PATH
# when given; TMPDIR = STATE/tmp, where what a session leaves would show). STATE
# (/run/tcptune-lab/NAME, or $LAB_STATE_ROOT/NAME) holds layout (how many hosts and sites, written
# before anything is made, for `down`), ssh_config (Hosts h1..hN, BatchMode, the lab's
# known_hosts only), inventory.ini (an Ansible inventory: a group per site, named after it,
# their parent group `fleet`; through that ssh_config, as root without sudo), env, each sshd's
# pid (sshd.K.pid) and each delay line's pid and log (pid.12, delayline.12.log: --link from
# site 1 to site 2). `down` also finds what a lost state would have named: NAME-hK and NAME-rS
# namespaces, msNAME-K links, delay lines whose ready file is in STATE.
# env: NS_K ADDR_K SITE_K per host, HOSTS, SITES (names in order), SITE_HOSTS_S (h1 h2 ...) and
# ROUTER_S per site, LAN_RATE_BPS, SSH_CONFIG, INVENTORY, TMP, and per link (S1, S2 as given)
# LINK_S1_S2_RTT_NS, LINK_S1_S2_RATE_BPS, LINK_S1_S2_LOSS, LINK_S1_S2_QUEUE.
# Needs root, sshd (openssh-server), tc with htb, and the delay line (built as lab.sh builds it).
# Only ever addresses 198.18.10.0/24, 198.18.11.0/24 and 198.18.12.0/24, inside namespaces it made.
set -euo pipefail

LAB_SCRIPT=fleet.sh
# shellcheck source=lab/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

# The lab's namespaces: those its layout names, and any other NAME-hK or NAME-rS left.
lab_namespaces() {
	local name=$1 hosts=$2 sites=$3 k
	{
		for ((k = 1; k <= hosts; k++)); do ns_exists "$name-h$k" && echo "$name-h$k"; done
		for ((k = 1; k <= sites; k++)); do ns_exists "$name-r$k" && echo "$name-r$k"; done
		ip netns list 2>/dev/null | awk '{print $1}' | grep -E "^$name-[hr][0-9]+\$"
	} | awk '!seen[$0]++'
}

cmd_down() {
	local name=$1 state=$STATE_ROOT/$1 hosts=0 sites=0 key val f ns dev k
	local -a pids
	check_name "$name"
	((EUID == 0)) || die "needs root"
	if [[ -e $state/env && ! -e $state/layout ]]; then
		die "lab '$name' is not a fleet (mesh.sh down $name or lab.sh down $name)"
	fi
	if [[ -f $state/layout ]]; then
		while IFS='=' read -r key val; do
			case $key in
			HOSTS) [[ $val =~ ^[0-9]+$ ]] && hosts=$val ;;
			NSITES) [[ $val =~ ^[0-9]+$ ]] && sites=$val ;;
			esac
		done <"$state/layout"
	fi
	# The delay lines (in the root namespace) and the sshds; then any delay line of this lab's
	# whose pid file is lost (its command line names its ready file in STATE).
	for f in "$state"/pid.* "$state"/sshd.*.pid; do
		[[ -e $f ]] && kill_pid_file "$f"
	done
	for f in /proc/[0-9]*/cmdline; do
		{ tr '\0' '\n' <"$f"; } 2>/dev/null | grep -qxE -- "$state/ready\.[0-9]+" || continue
		f=${f%/cmdline}
		stop_pid "${f#/proc/}"
	done
	# Hosts first, then routers; whatever still runs in them (iperf3 -s, a session's leftovers).
	while read -r ns; do
		[[ -n $ns ]] || continue
		mapfile -t pids < <(ip netns pids "$ns" 2>/dev/null || true)
		if ((${#pids[@]})); then
			kill -TERM "${pids[@]}" 2>/dev/null || true
			sleep 0.2
			kill -KILL "${pids[@]}" 2>/dev/null || true
		fi
		ip netns del "$ns" 2>/dev/null || true
	done < <(lab_namespaces "$name" "$hosts" "$sites")
	# The management veths (their routes go with them), by the layout and by name.
	while read -r dev; do
		[[ -n $dev ]] || continue
		ip route del "198.18.10.${dev##*-}/32" dev "$dev" 2>/dev/null || true
		ip link del "$dev" 2>/dev/null || true
	done < <({
		for ((k = 1; k <= hosts; k++)); do mgmt_dev "$name" "$k" && echo; done
		ip -o link show 2>/dev/null | awk -F': ' '{sub(/@.*/, "", $2); print $2}' |
			grep -E "^ms$name-[0-9]+\$"
	} | awk '!seen[$0]++')
	rm -rf -- "${STATE_ROOT:?}/$name"
}

UP_NAME=
UP_OK=0
up_exit() {
	local rc=$?
	if [[ $UP_OK != 1 && -n $UP_NAME ]]; then
		echo "fleet.sh: 'up $UP_NAME' did not finish; cleaning up" >&2
		local f
		for f in "$STATE_ROOT/$UP_NAME"/delayline.*.log; do
			[[ -s $f ]] && sed "s|^|  ${f##*/}: |" "$f" >&2
		done
		cmd_down "$UP_NAME" >/dev/null 2>&1 || true
		((rc == 0)) && rc=1
	fi
	exit "$rc"
}

# Shapes the egress of `dev` in namespace `ns` to `bps` bit/s into a drop-tail queue of `bytes`.
# One segment per packet (gso_max_segs 1), as on a real LAN's wire: a veth passes 64 KB
# super-packets, which htb lets through whole at the veth's speed, and a TCP sender's delivery
# rate then reads above the shaped rate (a 100 Mbit/s LAN read 107-135 Mbit/s; 97-99 with this).
lan_shape() { # ns dev bps bytes
	ip -n "$1" link set dev "$2" gso_max_segs 1
	tc -n "$1" qdisc add dev "$2" root handle 1: htb default 1
	tc -n "$1" class add dev "$2" parent 1: classid 1:1 htb rate "${3}bit" ceil "${3}bit" quantum 60000
	tc -n "$1" qdisc add dev "$2" parent 1:1 handle 10: bfifo limit "$4"
}

cmd_up() {
	local name=$1
	shift
	check_name "$name"
	local bin='' lan=100mbit spec
	local -a site_specs=() link_specs=()
	while (($#)); do
		case $1 in
		--bin) (($# >= 2)) || die "--bin needs a path"; bin=$2; shift 2 ;;
		--site) (($# >= 2)) || die "--site needs a value"; site_specs+=("$2"); shift 2 ;;
		--link) (($# >= 2)) || die "--link needs a value"; link_specs+=("$2"); shift 2 ;;
		--lan) (($# >= 2)) || die "--lan needs a rate"; lan=$2; shift 2 ;;
		*) die "unknown argument '$1' (see fleet.sh help)" ;;
		esac
	done
	((EUID == 0)) || die "needs root"
	[[ -x /usr/sbin/sshd ]] || die "no /usr/sbin/sshd (apt-get install openssh-server)"
	[[ -z $bin || -x $bin ]] || die "--bin $bin: not an executable"

	# The sites, checked before anything is made: site_name[S], its hosts first_host[S]..last_host[S].
	local -a site_name=() first_host=() last_host=() host_site=()
	local -A site_idx=()
	local s n hosts=0 k
	for spec in "${site_specs[@]}"; do
		[[ $spec =~ ^([a-z0-9]{1,8}):([0-9]+)$ ]] || die "bad site '$spec' (S:N, S 1 to 8 of a-z, 0-9, N 1 to 6)"
		s=${BASH_REMATCH[1]} n=$((10#${BASH_REMATCH[2]}))
		[[ $s =~ ^(all|ungrouped|fleet|h[0-9]+)$ ]] && die "site name '$s' is taken (an inventory group or a host's name)"
		[[ -z ${site_idx[$s]:-} ]] || die "site $s given twice"
		((n >= 1 && n <= 6)) || die "bad site '$spec' (1 to 6 hosts)"
		site_name+=("$s")
		site_idx[$s]=${#site_name[@]}
		first_host[${#site_name[@]}]=$((hosts + 1))
		hosts=$((hosts + n))
		last_host[${#site_name[@]}]=$hosts
		for ((k = hosts - n + 1; k <= hosts; k++)); do host_site[k]=${#site_name[@]}; done
	done
	local nsites=${#site_name[@]}
	((nsites >= 2 && nsites <= 3)) || die "need 2 or 3 sites (--site S:N), not $nsites"
	((hosts <= 12)) || die "$hosts hosts: at most 12 in all"

	# The links: from site link_a[L] to site link_b[L], as given.
	local -a link_a=() link_b=() link_rtt=() link_rate=() link_loss=() link_queue=()
	local -A link_of=()
	local a b l q v mod i j
	local -a f
	for spec in "${link_specs[@]}"; do
		IFS=: read -r -a f <<<"$spec"
		if ((${#f[@]} < 3)) || ! [[ ${f[0]} =~ ^([a-z0-9]{1,8})-([a-z0-9]{1,8})$ ]]; then
			die "bad link '$spec' (S1-S2:RTT:RATE[:loss=PCT][:queue=BYTES])"
		fi
		a=${BASH_REMATCH[1]} b=${BASH_REMATCH[2]}
		[[ -n ${site_idx[$a]:-} ]] || die "link '$spec': no site '$a' (--site $a:N)"
		[[ -n ${site_idx[$b]:-} ]] || die "link '$spec': no site '$b' (--site $b:N)"
		[[ $a != "$b" ]] || die "link '$spec' joins site $a to itself"
		i=${site_idx[$a]} j=${site_idx[$b]}
		local key=$((i < j ? i : j))-$((i < j ? j : i))
		[[ -z ${link_of[$key]:-} ]] || die "sites $a and $b are linked twice"
		link_of[$key]=$((${#link_a[@]} + 1))
		link_a+=("$i") link_b+=("$j")
		v=$(helper to_ns "${f[1]}") || die "bad RTT in '$spec'"
		link_rtt+=("$v")
		v=$(helper to_bps "${f[2]}") || die "bad rate in '$spec'"
		((v > 0)) || die "bad rate in '$spec' (more than zero)"
		link_rate+=("$v")
		q='' l=''
		for mod in "${f[@]:3}"; do
			case $mod in
			loss=*) l=${mod#loss=}; helper check_pct "$l" || die "bad loss in '$spec'" ;;
			queue=*) q=$(helper to_bytes "${mod#queue=}") || die "bad queue in '$spec'" ;;
			*) die "unknown modifier '$mod' in '$spec' (loss=PCT, queue=BYTES)" ;;
			esac
		done
		link_loss+=("$l") link_queue+=("$q")
	done
	for ((i = 1; i <= nsites; i++)); do
		for ((j = i + 1; j <= nsites; j++)); do
			[[ -n ${link_of[$i-$j]:-} ]] ||
				die "missing --link ${site_name[i - 1]}-${site_name[j - 1]}:RTT:RATE (every pair of sites needs one)"
		done
	done
	local lan_bps lan_queue
	lan_bps=$(helper to_bps "$lan") || die "bad --lan '$lan'"
	((lan_bps > 0)) || die "bad --lan '$lan' (more than zero)"
	lan_queue=$((lan_bps / 8 / 40 > 1500000 ? lan_bps / 8 / 40 : 1500000))
	command -v tc >/dev/null || die "no tc (apt-get install iproute2)"
	local dl
	# find_delayline says why on its one line when there is none.
	dl=$(DELAYLINE_BIN=${DELAYLINE_BIN:-} helper find_delayline) || exit 1

	local state=$STATE_ROOT/$name
	[[ ! -e $state ]] || die "lab '$name' already exists (fleet.sh down $name)"
	for ((k = 1; k <= hosts; k++)); do
		! ns_exists "$name-h$k" || die "namespace $name-h$k exists (fleet.sh down $name)"
		! ip link show "$(mgmt_dev "$name" "$k")" >/dev/null 2>&1 || die "link $(mgmt_dev "$name" "$k") exists"
	done
	for ((s = 1; s <= nsites; s++)); do
		! ns_exists "$name-r$s" || die "namespace $name-r$s exists (fleet.sh down $name)"
	done
	UP_NAME=$name
	trap up_exit EXIT
	trap 'exit 130' INT
	trap 'exit 143' TERM
	mkdir -p "$state/bin" "$state/tmp" /run/sshd
	# What `down` needs to find it all, before anything is made.
	printf 'HOSTS=%s\nNSITES=%s\nSITES=%s\n' "$hosts" "$nsites" "${site_name[*]}" >"$state/layout"
	[[ -n $bin ]] && ln -s "$(realpath "$bin")" "$state/bin/tcptune"

	# The routers.
	local r
	for ((s = 1; s <= nsites; s++)); do
		r=$name-r$s
		ip netns add "$r"
		ip -n "$r" link set lo up
		ip netns exec "$r" sysctl -qw net.ipv4.ip_forward=1
	done

	# The hosts: the loopback address, the management veth, the LAN veth to the site's router.
	local ns root_addr host_addr dev rtr_addr lan_addr
	for ((k = 1; k <= hosts; k++)); do
		ns=$name-h$k r=$name-r${host_site[k]}
		ip netns add "$ns"
		ip -n "$ns" link set lo up
		ip -n "$ns" addr add "198.18.10.$k/32" dev lo

		dev=$(mgmt_dev "$name" "$k")
		root_addr=198.18.11.$((4 * k + 1)) host_addr=198.18.11.$((4 * k + 2))
		ip link add "$dev" type veth peer name mgmt0 netns "$ns"
		sysctl -qw "net.ipv6.conf.$dev.disable_ipv6=1" 2>/dev/null || true
		ip addr add "$root_addr/30" dev "$dev"
		ip link set "$dev" up
		ip netns exec "$ns" sysctl -qw net.ipv6.conf.mgmt0.disable_ipv6=1 2>/dev/null || true
		ip -n "$ns" addr add "$host_addr/30" dev mgmt0
		ip -n "$ns" link set mgmt0 up
		ip route add "198.18.10.$k/32" via "$host_addr" dev "$dev"

		rtr_addr=198.18.12.$((4 * k + 1)) lan_addr=198.18.12.$((4 * k + 2))
		ip -n "$r" link add "h$k" type veth peer name lan0 netns "$ns"
		ip netns exec "$r" sysctl -qw "net.ipv6.conf.h$k.disable_ipv6=1" 2>/dev/null || true
		ip netns exec "$ns" sysctl -qw net.ipv6.conf.lan0.disable_ipv6=1 2>/dev/null || true
		ip -n "$r" addr add "$rtr_addr/30" dev "h$k"
		ip -n "$ns" addr add "$lan_addr/30" dev lan0
		lan_shape "$r" "h$k" "$lan_bps" "$lan_queue"
		lan_shape "$ns" lan0 "$lan_bps" "$lan_queue"
		ip -n "$r" link set "h$k" up
		ip -n "$ns" link set lan0 up
		ip -n "$ns" route add 198.18.10.0/24 via "$rtr_addr" dev lan0 src "198.18.10.$k"
		ip -n "$r" route add "198.18.10.$k/32" via "$lan_addr" dev "h$k"
	done

	# The WAN: a delay line per pair of sites, between their routers.
	local ta tb ij other
	local -a args
	for ((l = 0; l < ${#link_a[@]}; l++)); do
		i=${link_a[l]} j=${link_b[l]} ij=${link_a[l]}${link_b[l]}
		ta=fl$$a$ij tb=fl$$b$ij
		args=(--tun-a "$ta" --tun-b "$tb" --delay "$((link_rtt[l] / 2))ns" --rate "${link_rate[l]}bit"
			--ready-file "$state/ready.$ij")
		[[ -n ${link_queue[l]} ]] && args+=(--queue "${link_queue[l]}")
		[[ -n ${link_loss[l]} ]] && args+=(--loss "${link_loss[l]}")
		((link_rtt[l] > 0)) || args[5]=0
		setsid "$dl" "${args[@]}" </dev/null >"$state/delayline.$ij.log" 2>&1 &
		echo $! >"$state/pid.$ij"
		for _ in $(seq 100); do
			[[ -e $state/ready.$ij ]] && break
			kill -0 "$(cat "$state/pid.$ij")" 2>/dev/null ||
				die "the delay line ${site_name[i - 1]}-${site_name[j - 1]} exited: $(cat "$state/delayline.$ij.log")"
			sleep 0.05
		done
		[[ -e $state/ready.$ij ]] || die "the delay line ${site_name[i - 1]}-${site_name[j - 1]} did not become ready"
		ip link set "$ta" netns "$name-r$i" name "to$j"
		ip link set "$tb" netns "$name-r$j" name "to$i"
		for s in "$i" "$j"; do
			other=$((i + j - s))
			ip netns exec "$name-r$s" sysctl -qw "net.ipv6.conf.to$other.disable_ipv6=1" 2>/dev/null || true
			ip -n "$name-r$s" link set "to$other" up
			for ((k = first_host[other]; k <= last_host[other]; k++)); do
				ip -n "$name-r$s" route add "198.18.10.$k/32" dev "to$other"
			done
		done
	done

	# The keys, the known hosts, the client's configuration, the inventory.
	ssh-keygen -q -t ed25519 -N '' -C fleet-host -f "$state/host"
	ssh-keygen -q -t ed25519 -N '' -C fleet-client -f "$state/id"
	cp "$state/id.pub" "$state/authorized_keys"
	: >"$state/known_hosts" && : >"$state/ssh_config"
	for ((k = 1; k <= hosts; k++)); do
		echo "[198.18.10.$k]:2222 $(cat "$state/host.pub")" >>"$state/known_hosts"
		printf 'Host h%s\n  HostName 198.18.10.%s\n  Port 2222\n  User root\n  IdentityFile %s\n  IdentitiesOnly yes\n  UserKnownHostsFile %s\n  GlobalKnownHostsFile /dev/null\n  StrictHostKeyChecking yes\n  BatchMode yes\n  ConnectTimeout 10\n' \
			"$k" "$k" "$state/id" "$state/known_hosts" >>"$state/ssh_config"
		ip netns exec "$name-h$k" /usr/sbin/sshd -f /dev/null -h "$state/host" -o ListenAddress=0.0.0.0:2222 \
			-o "AuthorizedKeysFile=$state/authorized_keys" -o StrictModes=no -o UsePAM=no \
			-o "PidFile=$state/sshd.$k.pid" -o "SetEnv=PATH=$state/bin:/usr/sbin:/usr/bin:/sbin:/bin TMPDIR=$state/tmp"
	done
	# A group per site, their parent `fleet`; ansible_become=false: the lab logs in as root, and
	# may have no sudo.
	{
		for ((s = 1; s <= nsites; s++)); do
			printf '[%s]\n' "${site_name[s - 1]}"
			for ((k = first_host[s]; k <= last_host[s]; k++)); do printf 'h%s\n' "$k"; done
			printf '\n'
		done
		printf '[fleet:children]\n'
		printf '%s\n' "${site_name[@]}"
		printf '\n[fleet:vars]\nansible_ssh_common_args=%s\nansible_python_interpreter=/usr/bin/python3\nansible_become=false\n' \
			"'-F $state/ssh_config'"
	} >"$state/inventory.ini"
	local -a members
	{
		for ((k = 1; k <= hosts; k++)); do
			printf 'NS_%s=%q\nADDR_%s=%q\nSITE_%s=%q\n' "$k" "$name-h$k" "$k" "198.18.10.$k" "$k" "${site_name[host_site[k] - 1]}"
		done
		printf 'HOSTS=%q\nSITES=%q\n' "$hosts" "${site_name[*]}"
		for ((s = 1; s <= nsites; s++)); do
			members=()
			for ((k = first_host[s]; k <= last_host[s]; k++)); do members+=("h$k"); done
			printf 'SITE_HOSTS_%s=%q\nROUTER_%s=%q\n' "${site_name[s - 1]}" "${members[*]}" "${site_name[s - 1]}" "$name-r$s"
		done
		printf 'LAN_RATE_BPS=%q\nSSH_CONFIG=%q\nINVENTORY=%q\nTMP=%q\n' "$lan_bps" "$state/ssh_config" \
			"$state/inventory.ini" "$state/tmp"
		for ((l = 0; l < ${#link_a[@]}; l++)); do
			local p=LINK_${site_name[link_a[l] - 1]}_${site_name[link_b[l] - 1]}
			printf '%s_RTT_NS=%q\n%s_RATE_BPS=%q\n%s_LOSS=%q\n%s_QUEUE=%q\n' "$p" "${link_rtt[l]}" "$p" "${link_rate[l]}" \
				"$p" "${link_loss[l]}" "$p" "${link_queue[l]}"
		done
	} >"$state/env"

	# Every host answers every other (across the sites' line or the LAN); every sshd answers
	# the control host.
	local rtt w
	for ((i = 1; i <= hosts; i++)); do
		for ((j = 1; j <= hosts; j++)); do
			((i != j)) || continue
			a=${host_site[i]} b=${host_site[j]} rtt=0
			if ((a != b)); then
				l=${link_of[$((a < b ? a : b))-$((a < b ? b : a))]}
				rtt=${link_rtt[l - 1]}
			fi
			w=$((rtt / 1000000000 + 2))
			ip netns exec "$name-h$i" ping -c 1 -W "$w" "198.18.10.$j" >/dev/null ||
				die "no ping reply from h$j to h$i"
		done
	done
	for ((k = 1; k <= hosts; k++)); do
		for _ in $(seq 50); do [[ -s $state/sshd.$k.pid ]] && break; sleep 0.1; done
		ssh -F "$state/ssh_config" "h$k" true || die "ssh h$k does not answer"
	done
	UP_OK=1
	for ((s = 1; s <= nsites; s++)); do
		members=()
		for ((k = first_host[s]; k <= last_host[s]; k++)); do members+=("h$k"); done
		echo "fleet '$name': site ${site_name[s - 1]} ($name-r$s): ${members[*]}, lan $lan_bps bit/s"
	done
	for ((l = 0; l < ${#link_a[@]}; l++)); do
		echo "fleet '$name': ${site_name[link_a[l] - 1]} <-> ${site_name[link_b[l] - 1]}:" \
			"rtt $((link_rtt[l] / 1000000)) ms, rate ${link_rate[l]} bit/s${link_loss[l]:+, loss ${link_loss[l]} %}${link_queue[l]:+, queue ${link_queue[l]} B}"
	done
}


main "$@"
