#!/usr/bin/env bash
# Fuzz every parser that reads user input with the proptests `cargo test` runs at proptest's
# default of 256 cases: here 1,000,000 each (or PROPTEST_CASES), in release mode.
#   sysctl_file  generated lines, arbitrary text and bytes, for Linux, FreeBSD and macOS:
#                never a panic; only networking keys with plain values that parse again.
#   profile      near-valid profile TOML (hostile strings in every field, boot stages) and
#                arbitrary text: never a panic, one-line errors, and what renders is safe
#                (no control characters, runtime values pass the sysctl value check,
#                boot keys on the allow-list).
#   expr         generated nested expressions (some 200 deep, some broken) and arbitrary
#                text through parse, vars and eval: never a panic or stack overflow.
#   units        rates, durations and sizes from arbitrary and unit-shaped text: never a
#                panic, accepted values round-trip, errors are one line.
#   bdp          the model's arithmetic on arbitrary u64 rates, RTTs and windows: never a
#                panic or overflow, and within check_path the whole and exact BDPs agree.
# Usage: bench/fuzz-parser.sh [NAME...]   (default: all five; NAME as listed above)
set -euo pipefail
cd "$(dirname "$0")/.."
export PROPTEST_CASES="${PROPTEST_CASES:-1000000}"
declare -A tests=(
    [sysctl_file]=sysctl_file::tests::parser_never_panics_and_accepts_only_what_it_can_write
    [profile]=profile::tests::parse_and_render_never_panic_and_render_only_safe_text
    [expr]=expr::tests::parse_and_eval_never_panic
    [units]=units::tests::parsers_never_panic_on_any_text
    [bdp]=bdp::tests::arithmetic_never_panics
)
names=("$@")
[ ${#names[@]} -gt 0 ] || names=(sysctl_file profile expr units bdp)
cargo test --release --lib --no-run
for n in "${names[@]}"; do
    t="${tests[$n]:?unknown fuzz target $n (one of: ${!tests[*]})}"
    echo "== $n: $PROPTEST_CASES cases ($t)"
    start=$(date +%s)
    cargo test --release --lib -q -- --exact "$t"
    echo "== $n: passed in $(( $(date +%s) - start )) s"
done
