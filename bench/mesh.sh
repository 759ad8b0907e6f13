#!/usr/bin/env bash
# The mesh benchmark: is each host's `tcptune mesh` advice as good as the best static setting on
# every one of its paths, and how long does the mesh take against single `advise --ssh` runs?
#
#   bench/mesh.sh [--runs 3] [--time auto|SECONDS] [--omit 5]
#                 [--settings "stock tuned fasterdata bbr64 mesh"] [--test-time DUR]
#                 [--pair I-J:RTT:RATE[:loss=PCT][:queue=BYTES]]...
#
# Builds lab/mesh.sh's three hosts (namespaces h1, h2, h3, each with its own sshd, joined pair by
# pair by delay lines of their own; default pairs: 1-2 10 ms 200 Mbit/s clean, 1-3 80 ms
# 100 Mbit/s 0.01 % loss, 2-3 150 ms 100 Mbit/s behind a shallow queue of a quarter BDP). Then
# per round (--runs, default 3), each setting on all three hosts, and for each of the six ordered
# pairs one single-stream iperf3 transfer FROM → TO for --time seconds after --omit (auto:
# max(20 s, 200 × RTT)), one at a time. Settings (each run starts from the kernel's stock
# buffers, tcp_rmem 4096 131072 6291456, tcp_wmem 4096 16384 4194304, and cubic):
#   stock, tuned (16 MiB maxima, cubic), fasterdata (64 MiB, cubic), bbr64 (64 MiB, bbr): as
#   bench/wan.sh's;
#   mesh: `tcptune mesh h1 h2 h3 --output DIR` from the root namespace (the control host, through
#   each host's sshd, the pairs' tests over the delay lines), each host's DIR/hN.conf applied
#   there with `tcptune apply` (its buffers and its `# route:` lines) and reverted after.
# The mesh is measured afresh in every round, from the stock settings. In round 1 it also times
# the six single `advise --ssh TO --scope path` runs the mesh stands for (each from FROM's
# namespace to TO's sshd across their delay line) and prints both wall times.
#
# Prints a Markdown table on stdout: pair, path, BDP, setting, run, cc (the sender's, iperf3's
# word), throughput, % of the goodput limit (rate × MSS/MTU, MSS = MTU − 52), retransmits,
# tcp_rmem[2]/BDP (receiver) and tcp_wmem[2]/BDP (sender); then per pair the medians, the best
# static setting and the mesh's distance from it in points; then per host the mesh's largest
# buffer maximum against its largest path BDP. Needs root, iperf3 and sshd. Traffic stays inside
# the lab's namespaces (198.18.10.0/24).
set -euo pipefail
cd "$(dirname "$0")/.."

runs=3 time_s=auto omit_s=5 settings="stock tuned fasterdata bbr64 mesh" test_time=""
pairs=()
while (($#)); do
	case $1 in
	--runs) runs=$2; shift 2 ;;
	--time) time_s=$2; shift 2 ;;
	--omit) omit_s=$2; shift 2 ;;
	--settings) settings=$2; shift 2 ;;
	--test-time) test_time=$2; shift 2 ;;
	--pair) pairs+=("$2"); shift 2 ;;
	*) echo "usage: see the header of $0" >&2; exit 2 ;;
	esac
done
((${#pairs[@]})) || pairs=(1-2:10ms:200mbit 1-3:80ms:100mbit:loss=0.01 2-3:150ms:100mbit:queue=468750)
die() { echo "mesh.sh: $*" >&2; exit 2; }
[[ $runs =~ ^[1-9][0-9]?$ ]] || die "bad --runs '$runs'"
[[ $time_s == auto || $time_s =~ ^[1-9][0-9]*$ ]] || die "bad --time '$time_s'"
command -v iperf3 >/dev/null || die "iperf3 is needed (apt-get install iperf3)"

cargo build --release --locked -p tcptune -p delayline >&2
bin=$PWD/target/release/tcptune
lab=bm$$
state=$(mktemp -d)
allowed_cc=$(sysctl -n net.ipv4.tcp_allowed_congestion_control)
trap 'bash lab/mesh.sh down "$lab" >/dev/null 2>&1 || true; rm -rf "$state"
	sysctl -qw net.ipv4.tcp_allowed_congestion_control="$allowed_cc" || true' EXIT
trap 'exit 130' INT TERM
sysctl -qw net.ipv4.tcp_allowed_congestion_control="$(sysctl -n net.ipv4.tcp_available_congestion_control)"

args=()
for p in "${pairs[@]}"; do args+=(--pair "$p"); done
bash lab/mesh.sh up "$lab" --bin "$bin" "${args[@]}" >&2
# shellcheck disable=SC1090
source <(bash lab/mesh.sh env "$lab")
ns() { local v="NS_$1"; echo "${!v}"; }
addr() { local v="ADDR_$1"; echo "${!v}"; }
ssh_cmd="ssh -F $SSH_CONFIG"

# Per ordered pair: "FROM TO RTT RATE" (the rate the delay line gives each direction).
declare -A rtt_ms rate_bps
for p in "${pairs[@]}"; do
	IFS=: read -r ij rtt rate _ <<<"$p"
	i=${ij%-*} j=${ij#*-}
	ms=$(awk -v s="$rtt" 'BEGIN { n = s + 0; u = substr(s, length(n "") + 1); print (u == "s") ? n * 1000 : n }')
	bps=$(awk -v s="${rate,,}" 'BEGIN { n = s + 0; u = substr(s, length(n "") + 1)
		f = (u ~ /^g/) ? 1e9 : (u ~ /^m/) ? 1e6 : (u ~ /^k/) ? 1e3 : 1; printf "%.0f", n * f }')
	for k in "$i-$j" "$j-$i"; do rtt_ms[$k]=$ms rate_bps[$k]=$bps; done
done
ordered=()
for i in 1 2 3; do for j in 1 2 3; do ((i != j)) && [[ -n ${rtt_ms[$i-$j]:-} ]] && ordered+=("$i-$j"); done; done

stock() {
	local n
	for n in 1 2 3; do
		ip netns exec "$(ns "$n")" sysctl -qw net.ipv4.tcp_rmem="4096 131072 6291456" \
			net.ipv4.tcp_wmem="4096 16384 4194304" net.ipv4.tcp_congestion_control=cubic
	done
}
set_all() { # rmem_max wmem_max cc
	local n
	for n in 1 2 3; do
		ip netns exec "$(ns "$n")" sysctl -qw net.ipv4.tcp_rmem="4096 131072 $1" \
			net.ipv4.tcp_wmem="4096 16384 $2" net.ipv4.tcp_congestion_control="$3"
	done
}

# The mesh from the root namespace; its files in $state/mesh-RUN, its wall time printed.
run_mesh() { # run
	local dir=$state/mesh-$1 t0 t1
	mkdir -p "$dir"
	t0=$(date +%s.%N)
	"$bin" mesh h1 h2 h3 --ssh-command "$ssh_cmd" ${test_time:+--test-time "$test_time"} \
		--output "$dir" --format json >"$dir/mesh.json" 2>"$dir/mesh.log" || {
		cat "$dir/mesh.log" >&2
		die "tcptune mesh failed"
	}
	t1=$(date +%s.%N)
	awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f\n", b - a }' >"$dir/wall"
	echo "mesh.sh: round $1: tcptune mesh took $(cat "$dir/wall") s" >&2
}

# Round 1 only: the six single `advise --ssh` runs the mesh stands for, timed one by one.
time_single() {
	local k i j t0 t1 sum=0
	for k in "${ordered[@]}"; do
		i=${k%-*} j=${k#*-}
		t0=$(date +%s.%N)
		ip netns exec "$(ns "$i")" "$bin" advise --ssh "h$j" --ssh-command "$ssh_cmd" --scope path \
			${test_time:+--test-time "$test_time"} --format json >/dev/null 2>"$state/single-$k.log" ||
			{ cat "$state/single-$k.log" >&2; die "advise --ssh h$j from h$i failed"; }
		t1=$(date +%s.%N)
		sum=$(awk -v s="$sum" -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", s + b - a }')
	done
	echo "$sum" >"$state/single-sum"
	echo "mesh.sh: the six single advise --ssh runs took $sum s together" >&2
}

apply_mesh() { # run
	local n
	for n in 1 2 3; do
		ip netns exec "$(ns "$n")" "$bin" apply "$state/mesh-$1/h$n.conf" --state-dir "$state/snap-$n" >/dev/null
	done
}
revert_mesh() {
	local n
	for n in 1 2 3; do
		ip netns exec "$(ns "$n")" "$bin" revert --state-dir "$state/snap-$n" >/dev/null
	done
}

echo "| pair | path | BDP | setting | run | cc | throughput | % of goodput limit | retransmits | tcp_rmem[2]/BDP (rx) | tcp_wmem[2]/BDP (tx) |"
echo "|---|---|---|---|---|---|---|---|---|---|---|"
results=$state/results
: >"$results"
for run in $(seq "$runs"); do
	for setting in $settings; do
		stock
		case $setting in
		stock) ;;
		tuned) set_all 16777216 16777216 cubic ;;
		fasterdata) set_all 67108864 67108864 cubic ;;
		bbr64) set_all 67108864 67108864 bbr ;;
		mesh)
			run_mesh "$run"
			((run == 1)) && time_single
			stock
			apply_mesh "$run"
			;;
		*) die "unknown setting '$setting'" ;;
		esac
		for k in "${ordered[@]}"; do
			i=${k%-*} j=${k#*-}
			ms=${rtt_ms[$k]} bps=${rate_bps[$k]}
			t=$time_s
			[[ $t == auto ]] && t=$(awk -v r="$ms" 'BEGIN { t = 200 * r / 1000; print (t > 20) ? int(t + 0.999) : 20 }')
			ip netns exec "$(ns "$j")" iperf3 -s -1 -B "$(addr "$j")" -p 5201 >/dev/null 2>&1 &
			srv=$!
			sleep 0.3
			ip netns exec "$(ns "$i")" iperf3 -c "$(addr "$j")" -B "$(addr "$i")" -p 5201 -t "$t" -O "$omit_s" -J \
				>"$state/iperf.json" 2>/dev/null || true
			wait "$srv" 2>/dev/null || true
			rmem=$(ip netns exec "$(ns "$j")" sysctl -n net.ipv4.tcp_rmem | awk '{ print $3 }')
			wmem=$(ip netns exec "$(ns "$i")" sysctl -n net.ipv4.tcp_wmem | awk '{ print $3 }')
			python3 - "$state/iperf.json" "h$i → h$j" "$ms ms $((bps / 1000000)) Mbit/s" "$ms" "$bps" "$setting" "$run" \
				"$rmem" "$wmem" "$results" <<'EOF'
import json, sys
f, pair, path, ms, bps, setting, run, rmem, wmem, out = sys.argv[1:]
ms, bps, rmem, wmem = float(ms), float(bps), int(rmem), int(wmem)
try:
    d = json.load(open(f))
    got = d["end"]["sum_received"]["bits_per_second"]
    retr = d["end"]["sum_sent"].get("retransmits", 0)
    cc = d["end"].get("sender_tcp_congestion", "?")
except Exception:
    got, retr, cc = 0.0, 0, "failed"
bdp = bps / 8 * ms / 1000
limit = bps * 1448 / 1500
pct = 100 * got / limit
print(f"| {pair} | {path} | {bdp / 2**20:.3g} MiB | {setting} | {run} | {cc} | {got / 1e6:.4g} Mbit/s | {pct:.1f} | {retr} | {rmem / bdp:.2f} | {wmem / bdp:.2f} |", flush=True)
with open(out, "a") as o:
    o.write(f"{pair}\t{setting}\t{pct:.3f}\t{max(rmem, wmem) / bdp:.3f}\n")
EOF
		done
		[[ $setting == mesh ]] && revert_mesh
	done
done

echo
python3 - "$results" <<'EOF'
import statistics, sys
rows = [l.rstrip("\n").split("\t") for l in open(sys.argv[1]) if l.strip()]
pairs = list(dict.fromkeys(r[0] for r in rows))
settings = list(dict.fromkeys(r[1] for r in rows))
print("| pair | " + " | ".join(settings) + " | best static | mesh − best static |")
print("|---|" + "---|" * (len(settings) + 2))
for p in pairs:
    med = {s: statistics.median(float(r[2]) for r in rows if r[0] == p and r[1] == s) for s in settings
           if any(r[0] == p and r[1] == s for r in rows)}
    static = {s: v for s, v in med.items() if s != "mesh"}
    best = max(static, key=static.get) if static else None
    gap = f"{med['mesh'] - static[best]:+.1f}" if best and "mesh" in med else "–"
    print(f"| {p} | " + " | ".join(f"{med[s]:.1f}" if s in med else "–" for s in settings)
          + f" | {best} {static[best]:.1f} | {gap} |" if best else " | – | – |")
EOF
echo
echo "| host | its largest path BDP | mesh tcp_rmem[2] / that BDP | mesh tcp_wmem[2] / that BDP |"
echo "|---|---|---|---|"
for n in 1 2 3; do
	big=0
	for k in "${ordered[@]}"; do
		[[ ${k%-*} == "$n" ]] || continue
		b=$(awk -v r="${rtt_ms[$k]}" -v p="${rate_bps[$k]}" 'BEGIN { printf "%.0f", p / 8 * r / 1000 }')
		((b > big)) && big=$b
	done
	f=$state/mesh-1/h$n.conf
	r=$(awk -F' = ' '/^#? ?net.ipv4.tcp_rmem = /{ split($2, v, " "); print v[3] }' "$f" | tail -1)
	w=$(awk -F' = ' '/^#? ?net.ipv4.tcp_wmem = /{ split($2, v, " "); print v[3] }' "$f" | tail -1)
	awk -v h="h$n" -v b="$big" -v r="${r:-0}" -v w="${w:-0}" \
		'BEGIN { printf "| %s | %.3g MiB | %.2f | %.2f |\n", h, b / 1048576, r / b, w / b }'
done
echo
for run in $(seq "$runs"); do
	[[ -f $state/mesh-$run/wall ]] && echo "mesh wall time, round $run: $(cat "$state/mesh-$run/wall") s"
done
[[ -f $state/single-sum ]] && echo "six single advise --ssh runs, round 1: $(cat "$state/single-sum") s"
