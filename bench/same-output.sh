#!/usr/bin/env bash
# bench/same-output.sh OLD NEW: runs two tcptune binaries over the same command lines and
# reports every difference in stdout, stderr or exit code — the check behind "behaviour stays
# the same" for a refactoring (build the previous release first: `git worktree add /tmp/prev
# HEAD~N && cargo build --release --manifest-path /tmp/prev/Cargo.toml`).
#
# No network: hosts are measured by the hidden --fake-prober, running values come from fake
# trees built here (Linux --sysctl-dir, FreeBSD/macOS --sysctl-cmd over tests/cli/fixtures).
# Timestamps and snapshot ids are masked. Exit 0 when all agree, 1 otherwise.
set -uo pipefail
old="$(realpath "${1:?usage: bench/same-output.sh OLD NEW}")"
new="$(realpath "${2:?usage: bench/same-output.sh OLD NEW}")"
here="$(cd "$(dirname "$0")/.." && pwd)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

tree() { # tree DIR FIXTURE: a /proc/sys-like tree from "key value" lines
    while read -r key value; do
        local f="$1/${key//.//}"
        mkdir -p "$(dirname "$f")"
        printf '%s\n' "$value" >"$f"
    done <"$2"
}
tree "$work/linux" "$here/tests/cli/fixtures/linux-stock.txt"
mkdir -p "$work/bsd"
while read -r key value; do printf '%s\n' "$value" >"$work/bsd/$key"; done <"$here/tests/cli/fixtures/freebsd-stock.txt"
export FAKE_SYSCTL_DIR="$work/bsd"
printf 'net.ipv4.tcp_rmem = 4096 131072 33554432\nnet.ipv4.tcp_wmem = 4096 16384 33554432\n' >"$work/file.conf"
printf 'kernel.panic = 1\n' >"$work/bad.conf"

L=(--sysctl-dir "$work/linux")
B=(--os freebsd --sysctl-cmd "$here/tests/cli/fixtures/fake-sysctl")
P=(--rtt 150ms --bandwidth 500mbit)
cases=(
    ""
    "--help" "--version" "advise --help" "apply --help" "revert --help" "check --help" "serve --help"
    "verify --help" "inspect --help" "calc --help" "snapshots --help" "profiles --help"
    "man" "completions bash" "completions zsh" "completions fish"
    "profiles" "profiles list" "profiles show linux" "profiles export freebsd" "profiles show macos"
    "calc --bandwidth 1gbit --rtt 25ms" "calc --bandwidth 1gbit --rtt 25ms --format json"
    "calc --rtt 150ms --window 4MiB" "calc --bandwidth 10G --rtt 600ms --loss 0.01 --mss 1448 --format json"
    "calc --bandwidth 500" "calc --rtt 1ns --window 1000000000000" "calc --bandwidth 1gbit"
    "calc --window 18446744073709551615 --bandwidth 1bit"
)
for fmt in sysctl table json shell ansible tuned k8s; do
    cases+=("advise ${P[*]} --format $fmt" "advise ${L[*]} ${P[*]} --format $fmt")
    cases+=("advise ${B[*]} ${P[*]} --format $fmt" "advise --os macos ${P[*]} --format $fmt")
done
for spec in "rtt=150ms,rate=500mbit" "rtt=150ms,rate=500mbit,loss=0.01" "rtt=150ms,rate=500mbit,queue=0.1" \
    "rtt=150ms,rate=500mbit,share=0.35" "rtt=40ms,capacity=50mbit" "rtt=40ms,capacity=50mbit,tcp-rate=50mbit" \
    "rtt=600ms,speed=100mbit" "rtt=10ms" "rtt=unreachable" "rtt=20ms,rate=1gbit,tcp-rate=300mbit"; do
    for fmt in json sysctl table; do
        cases+=("advise ${L[*]} --fake-prober $spec --host 198.18.0.2 --format $fmt")
    done
    cases+=("check ${L[*]} --fake-prober $spec --host 198.18.0.2 --format json")
    cases+=("apply ${L[*]} --fake-prober $spec --host 198.18.0.2 --dry-run")
done
cases+=(
    "advise ${L[*]} --fake-prober rtt=20ms,rate=1gbit --host 198.18.0.2 --host 198.18.0.3 --format json"
    "advise ${L[*]} ${P[*]} --loss-recovery" "advise ${L[*]} ${P[*]} --clean-path --format sysctl"
    "advise ${L[*]} ${P[*]} --allow-lower --flows 400 --format json" "advise ${L[*]} --rtt 1ms --bandwidth 1mbit"
    "advise ${L[*]} --rtt 10s --bandwidth 100gbit --format json" "advise" "advise --rtt 10ms"
    "advise ${P[*]} --profile $work/bad.conf" "advise ${P[*]} --os freebsd --profile linux"
    "advise ${P[*]} --format k8s --os freebsd" "advise ${P[*]} --tuned-include x"
    "advise ${P[*]} --format k8s --allowed-unsafe-sysctls net.ipv4.tcp_*"
    "check ${L[*]}" "check ${L[*]} --format json" "check ${B[*]}" "check ${B[*]} --format json"
    "apply ${L[*]} $work/file.conf --dry-run" "apply ${L[*]} $work/file.conf --dry-run --format json"
    "apply ${L[*]} $work/bad.conf --dry-run" "apply ${B[*]} $work/file.conf --dry-run"
    "apply ${L[*]} ${P[*]} --dry-run" "apply ${L[*]} ${P[*]} --dry-run --persist"
    "apply ${L[*]} --dry-run" "apply ${L[*]} $work/file.conf --host x"
    "snapshots --state-dir $work/empty-state" "revert --state-dir $work/empty-state"
    "revert 1 --state-dir $work/empty-state" "verify --host 127.0.0.1 --time 0.5s" "verify --host 127.0.0.1 --time 61s"
    "inspect --port 1 --format json" "serve --port 1 --bind 1.2.3.4"
)
# The apply/revert round trip, each binary on its own copy of the tree and its own store.
roundtrip() { # roundtrip BIN DIR
    local bin="$1" d="$2"
    rm -rf "$d" && mkdir -p "$d/state" && cp -r "$work/linux" "$d/sys" && chmod 700 "$d/state"
    "$bin" apply --sysctl-dir "$d/sys" --state-dir "$d/state" "$work/file.conf" 2>&1
    echo "rc=$?"
    "$bin" snapshots --sysctl-dir "$d/sys" --state-dir "$d/state" 2>&1
    "$bin" snapshots --sysctl-dir "$d/sys" --state-dir "$d/state" --format json 2>&1
    "$bin" apply --sysctl-dir "$d/sys" --state-dir "$d/state" "$work/file.conf" 2>&1
    echo "rc=$?"
    "$bin" revert --sysctl-dir "$d/sys" --state-dir "$d/state" --dry-run 2>&1
    "$bin" revert --sysctl-dir "$d/sys" --state-dir "$d/state" 2>&1
    echo "rc=$?"
    "$bin" revert --sysctl-dir "$d/sys" --state-dir "$d/state" 2>&1
    echo "rc=$?"
    cat "$d/sys/net/ipv4/tcp_rmem"
}

mask() {
    sed -E -e 's/[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:.]+Z?/TIME/g' \
        -e 's/[0-9]{4}-[0-9]{2}-[0-9]{2} [0-9]{2}:[0-9]{2}(:[0-9]{2})?/TIME/g' \
        -e "s#$work/(a|b)/#WORK/#g" -e 's/pid [0-9]+/pid N/g' -e 's/(after|in) [0-9.]+ ?(s|ms)/\1 T/g'
}

differ=0
run() { # run LABEL ARGS...
    local label="$1"
    shift
    local o n
    o="$(cd "$work" && "$old" "$@" 2>"$work/old.err"; echo "exit=$?")"
    n="$(cd "$work" && "$new" "$@" 2>"$work/new.err"; echo "exit=$?")"
    o="$o$(printf '\n--stderr--\n')$(cat "$work/old.err")"
    n="$n$(printf '\n--stderr--\n')$(cat "$work/new.err")"
    if [[ "$(mask <<<"$o")" != "$(mask <<<"$n")" ]]; then
        differ=$((differ + 1))
        echo "DIFFERS: $label"
        diff <(mask <<<"$o") <(mask <<<"$n") | head -20
    fi
}
n=0
for c in "${cases[@]}"; do
    # shellcheck disable=SC2086
    run "tcptune $c" $c
    n=$((n + 1))
done
o="$(roundtrip "$old" "$work/a" | mask)"
m="$(roundtrip "$new" "$work/b" | mask)"
n=$((n + 1))
if [[ "$o" != "$m" ]]; then
    differ=$((differ + 1))
    echo "DIFFERS: apply/snapshots/revert round trip"
    diff <(echo "$o") <(echo "$m") | head -20
fi
echo "$n command lines, $differ differ"
((differ == 0))
