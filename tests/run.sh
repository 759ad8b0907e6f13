#!/usr/bin/env bash
# The test command (README "Set up"): installs what the tests use on a fresh Debian
# machine, then runs the whole suite. Run as root: the netns tests create network
# namespaces and write sysctls inside them (never the host's own values).
set -euo pipefail
cd "$(dirname "$0")/.."

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

cargo test --locked "$@"
