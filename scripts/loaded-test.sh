#!/usr/bin/env bash
# Runs the parallel part of scripts/test.sh RUNS times in a row (default 5) with two busy loops beside it, to show
# that the suite does not flake under load on a 2-core machine; prints each run's exit status and time. Builds the
# tests first, as scripts/test.sh does (scripts/build-flags.sh: CONTINUUM_DEBUG_INFO, and the binary linked with the
# Swift runtime inside). Stops only the busy loops it started, by PID.
#
#   scripts/loaded-test.sh [RUNS]      logs in .build/loaded-N.log
set -uo pipefail
cd "$(dirname "$0")/.."
runs=${1:-5}
source scripts/build-flags.sh
build_for_tests 2>&1 | grep -E 'Build (of product .*)?complete|error'
loops=()
for _ in 1 2; do (while :; do :; done) & loops+=($!); done
trap 'kill "${loops[@]}" 2>/dev/null' EXIT
echo "loaded-test.sh: busy loops ${loops[*]}"
failed=0
for i in $(seq 1 "$runs"); do
    start=$SECONDS
    "${parallel_suite[@]}" >".build/loaded-$i.log" 2>&1
    status=$?
    [ "$status" -eq 0 ] || failed=$((failed + 1))
    echo "run $i: exit $status in $((SECONDS - start)) s; $(grep -E 'Test run with' ".build/loaded-$i.log" | tail -1)"
    grep -E '✘' ".build/loaded-$i.log" | head -5
done
echo "loaded-test.sh: $((runs - failed)) of $runs passed"
[ "$failed" -eq 0 ]
