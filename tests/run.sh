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
# advise --ssh: the OpenSSH client, and a server the tests start in a namespace of their own
# (never the package's service: policy-rc.d below); nft for a far end's firewall.
command -v ssh >/dev/null || need+=(openssh-client)
[[ -x /usr/sbin/sshd ]] || need+=(openssh-server)
command -v nft >/dev/null || need+=(nftables)
# The docs' console blocks (tests/cli/docs.rs) pipe into jq as the docs do.
command -v jq >/dev/null || need+=(jq)
# The fleet formats are checked by their own engines: TuneD's profile loader (Debian's tuned,
# Python package tuned.profiles) and, from PyPI in a venv, ansible-playbook (with
# ansible.posix) and kubernetes-validate (offline Kubernetes API schemas, with PyYAML).
/usr/bin/python3 -c 'import tuned.profiles' 2>/dev/null || need+=(tuned)
/usr/bin/python3 -c 'import ensurepip, venv' 2>/dev/null || need+=(python3-venv)
if ((${#need[@]})); then
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    # Install, never start: tuned's daemon would apply its recommended profile to this
    # machine, and sshd would listen on its port 22. policy-rc.d (exit 101) tells the package
    # scripts not to start services.
    policy=
    if [[ ! -e /usr/sbin/policy-rc.d ]]; then
        policy=/usr/sbin/policy-rc.d
        trap 'rm -f "$policy"' EXIT
        printf '#!/bin/sh\nexit 101\n' >"$policy"
        chmod 0755 "$policy"
    fi
    apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
    if [[ -n $policy ]]; then
        rm -f "$policy"
        trap - EXIT
    fi
fi

# sshd's privilege separation directory, which a service start would make.
mkdir -p /run/sshd

export TCPTUNE_FLEET_VENV="${TCPTUNE_FLEET_VENV:-$PWD/target/fleet-venv}"
fleet_pkgs=(ansible==12.3.0 kubernetes-validate==1.37.0)
if [[ "$(cat "$TCPTUNE_FLEET_VENV/.tcptune-pkgs" 2>/dev/null)" != "${fleet_pkgs[*]}" ]]; then
    rm -rf "$TCPTUNE_FLEET_VENV"
    /usr/bin/python3 -m venv "$TCPTUNE_FLEET_VENV"
    "$TCPTUNE_FLEET_VENV/bin/pip" install -q --disable-pip-version-check "${fleet_pkgs[@]}"
    echo "${fleet_pkgs[*]}" >"$TCPTUNE_FLEET_VENV/.tcptune-pkgs"
fi

cargo test --workspace --locked --features privileged-tests "$@"
