# shellcheck shell=bash
# lab/common.sh — what lab/mesh.sh and lab/fleet.sh share: the state root, lab.sh's unit
# helpers, names, and stopping what a lab started. Sourced, never run; the sourcing script sets
# LAB_SCRIPT (its name, for messages) first.

STATE_ROOT=${LAB_STATE_ROOT:-/run/tcptune-lab}
REPO_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
LAB=$REPO_ROOT/lab/lab.sh

die() {
	echo "$LAB_SCRIPT: error: $*" >&2
	exit 1
}

# The sourcing script's header comment, its manual.
usage() {
	sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "${BASH_SOURCE[-1]}"
}

check_name() {
	[[ $1 =~ ^[a-z0-9]{1,10}$ ]] || die "bad lab name '$1' (1 to 10 of a-z, 0-9)"
}

ns_exists() { ip netns list 2>/dev/null | awk '{print $1}' | grep -qx -- "$1"; }

# lab.sh's helpers (unit conversion, the delay line's binary), without running its main.
helper() { # function args...
	bash -c 'src=$0 root=$1; shift; source <(sed "/^main \"\$@\"/d" "$src"); REPO_ROOT=$root; "$@"' \
		"$LAB" "$REPO_ROOT" "$@"
}

# The root side of host K's management veth (a name of at most 10 and K of at most 12: never cut).
mgmt_dev() { printf '%.15s' "ms$1-$2"; }

# Whether process `pid` still runs: a zombie does not (an init that reaps late keeps them a while).
running() {
	local st
	st=$(sed 's/.*) //' "/proc/$1/stat" 2>/dev/null) || return 1
	[[ -n $st && $st != Z* ]]
}

stop_pid() {
	local pid=$1
	[[ $pid =~ ^[0-9]+$ ]] || return 0
	kill "$pid" 2>/dev/null || true
	for _ in $(seq 50); do running "$pid" || return 0; sleep 0.05; done
	kill -KILL "$pid" 2>/dev/null || true
}

kill_pid_file() {
	[[ -f $1 ]] || return 0
	stop_pid "$(cat "$1")"
}

cmd_env() {
	check_name "$1"
	[[ -f $STATE_ROOT/$1/env ]] || die "lab '$1' is not up"
	cat "$STATE_ROOT/$1/env"
}

# The commands: the sourcing script defines cmd_up and cmd_down.
main() {
	local cmd=${1:-help}
	shift || true
	case $cmd in
	up) (($#)) || die "up needs a NAME"; cmd_up "$@" ;;
	down) (($#)) || die "down needs a NAME"; cmd_down "$1" ;;
	env) (($#)) || die "env needs a NAME"; cmd_env "$1" ;;
	help | -h | --help) usage ;;
	*) die "unknown command '$cmd' (up, down, env, help)" ;;
	esac
}
