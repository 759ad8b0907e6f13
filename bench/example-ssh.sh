#!/usr/bin/env bash
# The README's first measured example, reproducible: `tcptune advise --ssh` on the lab.
#
#   bench/example-ssh.sh [--path RTT:RATE[:loss=PCT]] [-- ADVISE-OPTIONS...]
#
# Builds the lab (lab/lab.sh, tun backend: two namespaces, RTT/2 of delay each way, a RATE
# bottleneck with a drop-tail queue of one BDP as bench/wan.sh has it, random loss PCT % each
# way), sets both namespaces to the kernel's stock buffers
# (tcp_rmem 4096 131072 6291456, tcp_wmem 4096 16384 4194304) and cubic, starts an sshd in B
# (port 2222, a key made here, this build's tcptune on its sessions' PATH), then runs in A
#   tcptune advise --ssh far --ssh-command "ssh -F CONFIG" ADVISE-OPTIONS
# and prints what it printed (stdout, then stderr) and how long it took. Needs root, iproute2,
# openssh-server. Default path: 150ms:500mbit:loss=0.01. Traffic stays inside the namespaces.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=bench/sshd.sh
source bench/sshd.sh

path=150ms:500mbit:loss=0.01
while (($#)); do
	case $1 in
	--path) path=$2; shift 2 ;;
	--) shift; break ;;
	*) echo "example-ssh.sh: unknown option $1" >&2; exit 2 ;;
	esac
done
IFS=: read -r rtt rate mod <<<"$path"
loss=()
[[ ${mod:-} == loss=* ]] && loss=(--loss "${mod#loss=}")

cargo build --quiet --release -p tcptune -p delayline
export DELAYLINE_BIN="$PWD/target/release/delayline"
bin="$PWD/target/release/tcptune"
lab="ex$$"
d="$(mktemp -d)"
allowed_cc=$(sysctl -n net.ipv4.tcp_allowed_congestion_control)
trap '[[ -s $d/sshd.pid ]] && kill "$(cat "$d/sshd.pid")" 2>/dev/null; bash lab/lab.sh down "$lab" >/dev/null 2>&1 || true
	rm -rf "$d"; sysctl -qw net.ipv4.tcp_allowed_congestion_control="$allowed_cc" || true' EXIT
# The namespaces stand for whole hosts: root there may choose any available algorithm.
sysctl -qw net.ipv4.tcp_allowed_congestion_control="$(sysctl -n net.ipv4.tcp_available_congestion_control)"
bdp=$("$bin" calc --bandwidth "$rate" --rtt "$rtt" --format json | sed -n 's/^ *"bdp_bytes": \([0-9]*\),$/\1/p')
bash lab/lab.sh up "$lab" --rtt "$rtt" --rate "$rate" --queue "$bdp" --backend tun "${loss[@]}" >/dev/null
eval "$(bash lab/lab.sh env "$lab")"
for ns in "$NS_A" "$NS_B"; do
	ip netns exec "$ns" sysctl -qw net.ipv4.tcp_rmem="4096 131072 6291456" net.ipv4.tcp_wmem="4096 16384 4194304" \
		net.ipv4.tcp_congestion_control=cubic
done

lab_sshd "$d" "$NS_B" "$ADDR_B" "$bin"

t0=$(date +%s.%N)
rc=0
ip netns exec "$NS_A" "$bin" advise --ssh far --ssh-command "ssh -F $d/config" "$@" >"$d/out" 2>"$d/err" || rc=$?
took=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.2f", b - a }')
cat "$d/out"
cat "$d/err" >&2
echo "example-ssh.sh: $path, advise --ssh $*: exit $rc, ${took} s" >&2
exit "$rc"
