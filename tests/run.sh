#!/usr/bin/env bash
# The test command (README "Set up"): installs what the tests use on a fresh Debian
# machine, then runs the whole suite, the privileged tests included (the cargo feature
# `privileged-tests`): they create network namespaces and write sysctls inside them (never
# the host's own values), chown and mount in temporary directories, play another uid, build
# the lab and send raw ICMP. So it runs as root only; as a normal user, `cargo test
# --workspace` runs everything else and lists the privileged tests as ignored.
set -euo pipefail
cd "$(dirname "$0")/.."

if ((EUID != 0)); then
    echo "tests/run.sh: needs root (sudo bash tests/run.sh): it runs the privileged tests as well." >&2
    echo "As a normal user, run \`cargo test --workspace\`: the tests that need root are ignored" >&2
    echo "(\"privileged: needs root\") and counted in its \"ignored\" total." >&2
    exit 1
fi

need=()
command -v ip >/dev/null || need+=(iproute2)
command -v sysctl >/dev/null || need+=(procps)
command -v ping >/dev/null || need+=(iputils-ping)
command -v iperf3 >/dev/null || need+=(iperf3)
if ((${#need[@]})); then
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq "${need[@]}" >/dev/null
fi

cargo test --workspace --locked --features privileged-tests "$@"
