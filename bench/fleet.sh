#!/usr/bin/env bash
# A fleet's mesh at scale (issue 46): the same hosts measured with tests at once (by sites) and
# one test at a time, on lab/fleet.sh's hosts in sites.
#
#   bench/fleet.sh [--sites "a:3 b:3 c:3"] [--links "a-b:20ms:50mbit a-c:40ms:50mbit b-c:30ms:50mbit"]
#                  [--lan RATE] [--test-time DUR] [--skip-alone]
#
# Builds the fleet (lab/fleet.sh: each site's hosts on a LAN shaped to RATE, default 100mbit, one
# delay line per pair of sites), every host on the kernel's stock buffers and CUBIC, then from
# the root namespace (the control host):
#   tcptune mesh --inventory INV --site-groups SITES --ssh-command "ssh -F CFG" --format json
#   tcptune mesh --inventory INV --parallel 1 ... (one test at a time; not with --skip-alone)
# and prints a Markdown table (hosts, tests, rounds, the plan's estimate, the wall time, per
# round), each path's rate at once against alone (the largest difference, and the paths past
# 10 %), and the rounds `tcptune mesh --dry-run` plans for 20 hosts (4 sites of 5) and 50 (5 of
# 10), with the time the lab's per-round time projects for them. Needs root, openssh-server.
# Traffic stays inside the namespaces (198.18.10.0/24 - 198.18.12.0/24).
set -euo pipefail
cd "$(dirname "$0")/.."

sites="a:3 b:3 c:3" links="a-b:20ms:50mbit a-c:40ms:50mbit b-c:30ms:50mbit" lan=100mbit
test_time="" alone=1
while (($#)); do
	case $1 in
	--sites) sites=$2; shift 2 ;;
	--links) links=$2; shift 2 ;;
	--lan) lan=$2; shift 2 ;;
	--test-time) test_time=$2; shift 2 ;;
	--skip-alone) alone=0; shift ;;
	*) echo "fleet.sh: unknown option $1" >&2; exit 2 ;;
	esac
done

cargo build --quiet --release -p tcptune -p delayline
export DELAYLINE_BIN="$PWD/target/release/delayline"
bin="$PWD/target/release/tcptune"
d="$(mktemp -d)"
lab="bf$$"
allowed_cc=$(sysctl -n net.ipv4.tcp_allowed_congestion_control)
trap 'bash lab/fleet.sh down "$lab" >/dev/null 2>&1 || true; rm -rf "$d"; sysctl -qw net.ipv4.tcp_allowed_congestion_control="$allowed_cc" || true' EXIT
sysctl -qw net.ipv4.tcp_allowed_congestion_control="$(sysctl -n net.ipv4.tcp_available_congestion_control)"

args=(up "$lab" --bin "$bin" --lan "$lan")
for s in $sites; do args+=(--site "$s"); done
for l in $links; do args+=(--link "$l"); done
bash lab/fleet.sh "${args[@]}" >&2
eval "$(bash lab/fleet.sh env "$lab")"
for n in $(seq "$HOSTS"); do
	ip netns exec "$(eval echo "\$NS_$n")" sysctl -qw net.ipv4.tcp_rmem="4096 131072 6291456" \
		net.ipv4.tcp_wmem="4096 16384 4194304" net.ipv4.tcp_congestion_control=cubic
done
groups=$(echo "$SITES" | tr ' ' ',')
extra=()
[[ -n $test_time ]] && extra=(--test-time "$test_time")

# One mesh: its JSON in $d/NAME.json, its stderr in $d/NAME.err, its wall time in $d/NAME.t.
mesh() {
	local name=$1; shift
	local t0
	t0=$(date +%s.%N)
	"$bin" mesh --inventory "$INVENTORY" --ssh-command "ssh -F $SSH_CONFIG" --format json \
		--state "$d/$name.jsonl" "${extra[@]}" "$@" >"$d/$name.json" 2>"$d/$name.err" || true
	awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f\n", b - a }' >"$d/$name.t"
	echo "  $name: $(cat "$d/$name.t") s; $(head -1 "$d/$name.err")" >&2
}
# "tests rounds estimate" from a plan's first line.
plan_of() { sed -n '1s/^tcptune mesh: [0-9]* hosts, \([0-9]*\) tests\{0,1\} in \([0-9]*\) rounds\{0,1\}, .*, about \(.*\)$/\1 \2 \3/p' "$1"; }

echo "bench/fleet.sh: $(date -u +%FT%TZ), $(uname -r), $(nproc) CPUs, $("$bin" --version), sites $sites, links $links, LAN $lan" >&2
mesh at-once --site-groups "$groups"
((alone)) && mesh alone --parallel 1

echo "| run | hosts | tests | rounds | estimate | wall s | s per round |"
echo "|---|---|---|---|---|---|---|"
for name in at-once alone; do
	[[ -s $d/$name.err ]] || continue
	read -r tests rounds est < <(plan_of "$d/$name.err")
	awk -v n="$name" -v h="$HOSTS" -v t="$tests" -v r="$rounds" -v e="$est" -v w="$(cat "$d/$name.t")" \
		'BEGIN { printf "| %s | %d | %d | %d | %s | %.1f | %.1f |\n", n, h, t, r, e, w, w / r }'
done

if ((alone)); then
	# Each path's advised rate at once against alone.
	jq -s -r '(.[0].pairs | map({key: "\(.from)>\(.to)", value: .advice.bandwidth_bps}) | from_entries) as $a
	  | (.[1].pairs | map({key: "\(.from)>\(.to)", value: .advice.bandwidth_bps}) | from_entries) as $b
	  | [$a | keys[] | select($b[.] != null and $a[.] != null) | {path: ., r: ($a[.] / $b[.])}] as $r
	  | "paths \($r | length); at once ÷ alone: min \($r | map(.r) | min * 1000 | round / 1000), max \($r | map(.r) | max * 1000 | round / 1000); past 10 %: \([$r[] | select((.r - 1) | fabs > 0.1) | "\(.path) \(.r * 1000 | round / 1000)"] | join(", "))"' \
		"$d/at-once.json" "$d/alone.json"
fi

# The projection: the rounds a dry run plans for larger fleets, at the lab's time per round.
per_round=$(awk -v w="$(cat "$d/at-once.t")" -v r="$(plan_of "$d/at-once.err" | cut -d' ' -f2)" 'BEGIN { printf "%.1f", w / r }')
echo
echo "| fleet | sites | tests | rounds at once | one at a time | projected at once (× ${per_round} s) |"
echo "|---|---|---|---|---|---|"
for spec in "20 4" "50 5"; do
	read -r n k <<<"$spec"
	hosts=() site_args=()
	for i in $(seq "$n"); do hosts+=("h$i"); done
	per=$((n / k))
	for s in $(seq "$k"); do
		members=$(seq $(((s - 1) * per + 1)) $((s * per)) | sed 's/^/h/' | paste -sd,)
		site_args+=(--site "s$s=$members")
	done
	"$bin" mesh "${hosts[@]}" "${site_args[@]}" --dry-run --ssh-command "ssh -F /dev/null" >"$d/p.txt"
	read -r tests rounds _ < <(plan_of "$d/p.txt")
	awk -v n="$n" -v k="$k" -v t="$tests" -v r="$rounds" -v p="$per_round" \
		'BEGIN { printf "| %d hosts | %d of %d | %d | %d | %d rounds | %.0f min |\n", n, k, n / k, t, r, t, r * p / 60 }'
done
