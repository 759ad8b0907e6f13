#!/usr/bin/env bash
# Fuzz the sysctl-file parser (src/sysctl_file.rs) with the proptest that `cargo test` runs
# at proptest's default of 256 cases: here 1,000,000 (or PROPTEST_CASES), in release mode.
# Each case parses three inputs (generated lines, arbitrary text, arbitrary bytes) for
# Linux, FreeBSD and macOS, and checks that the parser never panics and accepts only
# networking keys with plain values that parse again to the same thing.
set -euo pipefail
cd "$(dirname "$0")/.."
export PROPTEST_CASES="${PROPTEST_CASES:-1000000}"
echo "parser proptest: $PROPTEST_CASES cases"
time cargo test --release --lib -- --exact \
    sysctl_file::tests::parser_never_panics_and_accepts_only_what_it_can_write
