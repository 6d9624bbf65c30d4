#!/usr/bin/env bash
# Builds the libFuzzer targets of Fuzz/ and runs them from the seed corpus in Fuzz/corpus (Docs/FUZZING.md).
#
# The code under test (ContinuumWire, ContinuumCore and their dependencies) is built by SwiftPM in .build-fuzz with
# -sanitize=fuzzer,address, which on library code adds coverage instrumentation and AddressSanitizer only; each
# Fuzz/TARGET.swift is then compiled and linked against those objects by swiftc, whose link adds libFuzzer's main.
# (An executableTarget built by SwiftPM with the fuzzer sanitizer does not link: SwiftPM renames the entry point.)
# Builds run under nice -n 19. .build-fuzz belongs to this script: build nothing else there.
set -euo pipefail

targets=(frame record session handshake)

usage() {
    cat >&2 <<'EOF'
usage: scripts/fuzz.sh TARGET SECONDS [libFuzzer options...]

  TARGET    frame    the frame decoder (FrameDecoder, WireCodec): Fuzz/frame.swift
            record   the record decoder and signature check (SignedRecord): Fuzz/record.swift
            session  the session state machine (SessionMachine) fed a peer's messages: Fuzz/session.swift
            handshake  the handshake state machine (HandshakeMachine) fed a peer's frames: Fuzz/handshake.swift
            all      every target, one after the other, each for SECONDS
  SECONDS   how long to fuzz each target (libFuzzer -max_total_time); 0 for no time limit, with -runs=N
  options   passed on to libFuzzer after ours, so they win: -runs=N, -max_len=N, -seed=N, ...

Builds what is missing or stale, checks that every seed in Fuzz/corpus/TARGET decodes, and fuzzes a temporary
copy of that corpus. The repository is not touched, but for Fuzz/fuzzed: a clean run of `all` for 15 s or more
records there the key of the code it fuzzed (scripts/fuzz-key.sh), so that CI need not fuzz that code again. Prints libFuzzer's final stats. On a crash, the input is kept
in .build-fuzz/crashes/ and the script exits 1; the full libFuzzer log is in .build-fuzz/logs/TARGET.log.

examples:
  scripts/fuzz.sh all 15                         what CI runs
  scripts/fuzz.sh frame 0 -runs=10000000         ten million inputs
  .build-fuzz/bin/frame .build-fuzz/crashes/frame-crash-...   reproduce a crash
EOF
    exit 2
}

[[ $# -ge 2 ]] || usage
target=$1
seconds=$2
shift 2
[[ $seconds =~ ^[0-9]+$ ]] || { echo "fuzz.sh: SECONDS must be a whole number, not '$seconds'" >&2; usage; }
case $target in
all) selected=("${targets[@]}") ;;
frame | record | session | handshake) selected=("$target") ;;
*)
    echo "fuzz.sh: unknown target '$target'" >&2
    usage
    ;;
esac

cd "$(dirname "$0")/.."
root=$PWD
scratch=$root/.build-fuzz
sanitize=-sanitize=fuzzer,address
# Optimised as libFuzzer targets usually are: preconditions and overflow checks stay, `assert` goes (the targets
# check what the encoder's assertion would); about three times the inputs per second of a debug build.
configuration=release

# The Swift runtime's backtracer would catch a crash before libFuzzer and AddressSanitizer do, and hold the output.
export SWIFT_BACKTRACE=enable=no

echo "== fuzz.sh: building ContinuumSession, ContinuumWire, ContinuumCore and dependencies with $sanitize (.build-fuzz)"
nice -n 19 swift build --scratch-path "$scratch" -c "$configuration" --target ContinuumSession -Xswiftc "$sanitize"
products=$(swift build --scratch-path "$scratch" -c "$configuration" --show-bin-path)
mapfile -t objects < <(find "$products" -path "$products/*.build/*" -name '*.o' | sort)
[[ ${#objects[@]} -gt 0 ]] || { echo "fuzz.sh: no objects in $products" >&2; exit 1; }

mkdir -p "$scratch/bin" "$scratch/crashes" "$scratch/logs"
work=$(mktemp -d "${TMPDIR:-/tmp}/continuum-fuzz.XXXXXX")
trap 'rm -rf "$work"' EXIT

# Compiles and links Fuzz/$1.swift into .build-fuzz/bin/$1 unless the binary is newer than the source and objects.
link() {
    local name=$1 source=Fuzz/$1.swift binary=$scratch/bin/$1
    if [[ -x $binary && -z $(find "$source" "${objects[@]}" -newer "$binary" -print -quit) ]]; then
        return
    fi
    echo "== fuzz.sh: linking .build-fuzz/bin/$name"
    # ld.gold warns "Cannot export local symbol '__asan_...'" by the hundred: harmless, not shown.
    nice -n 19 swiftc "$sanitize" -parse-as-library -swift-version 6 -warnings-as-errors -O -g \
        -module-name "Fuzz_$name" -I "$products/Modules" "$source" "${objects[@]}" -o "$binary" 2>&1 |
        { grep -v "Cannot export local symbol" || true; }
}

# Checks the seeds, then fuzzes a copy of them; returns non-zero on a crash (or any other libFuzzer failure).
run() {
    local name=$1 binary=$scratch/bin/$1 seeds=$root/Fuzz/corpus/$1 log=$scratch/logs/$1.log status
    shift
    echo "== fuzz.sh: $name: every seed in Fuzz/corpus/$name must decode"
    if ! CONTINUUM_FUZZ_EXPECT_VALID=1 "$binary" -artifact_prefix="$work/" "$seeds"/* >"$work/seeds.log" 2>&1; then
        grep -v -E '^(Running|Executed): ' "$work/seeds.log" >&2 || true
        echo "fuzz.sh: $name: a seed does not decode (above); regenerate the corpus" \
            "(python3 scripts/make-fuzz-corpus.py) or fix the decoder" >&2
        return 1
    fi

    mkdir -p "$work/$name"
    cp "$seeds"/* "$work/$name/"
    local count
    count=$(find "$work/$name" -type f | wc -l)
    echo "== fuzz.sh: $name: fuzzing for ${seconds}s from $count seeds; log in .build-fuzz/logs/$name.log"
    local before=$work/$name.start
    touch "$before"
    set +e
    # New-coverage lines (NEW, REDUCE, NEW_FUNC) go to the log only; pulses, the final stats and any crash report
    # are shown. Options and corpus directories given by the caller come before our copy of the seeds, so that
    # libFuzzer saves new inputs in the caller's directory, if any.
    nice -n 19 "$binary" -max_total_time="$seconds" -print_final_stats=1 -timeout=30 \
        -artifact_prefix="$scratch/crashes/$name-" "$@" "$work/$name" 2>&1 |
        tee "$log" | grep --line-buffered -v -E '^(#[0-9]+[[:space:]]+(NEW|REDUCE) |[[:space:]]+NEW_FUNC)'
    status=${PIPESTATUS[0]}
    set -e
    if [[ $status -ne 0 ]]; then
        echo "fuzz.sh: $name: libFuzzer exited with status $status" >&2
        local found
        found=$(find "$scratch/crashes" -name "$name-*" -newer "$before" -print)
        if [[ -n $found ]]; then
            while read -r file; do
                echo "fuzz.sh: $name: crashing input kept in ${file#"$root"/}; reproduce with:" >&2
                echo "    SWIFT_BACKTRACE=enable=no .build-fuzz/bin/$name ${file#"$root"/}" >&2
            done <<<"$found"
        fi
        return 1
    fi
}

for name in "${selected[@]}"; do link "$name"; done
failed=()
for name in "${selected[@]}"; do
    run "$name" "$@" || failed+=("$name")
done
if [[ ${#failed[@]} -gt 0 ]]; then
    echo "fuzz.sh: FAILED: ${failed[*]}" >&2
    exit 1
fi
echo "== fuzz.sh: ${selected[*]}: no crash"
# A clean run of every target, for at least CI's 15 s each, is recorded in Fuzz/fuzzed with
# the key of the code it fuzzed (scripts/fuzz-key.sh): .ci/run does not fuzz that same code again. Commit the file.
if [[ $target == all && $seconds -ge 15 ]]; then
    {
        echo "key $(scripts/fuzz-key.sh)"
        echo "fuzzed $(date -u +%Y-%m-%dT%H:%MZ): scripts/fuzz.sh all $seconds $*"
    } >Fuzz/fuzzed
    echo "== fuzz.sh: recorded in Fuzz/fuzzed (commit it with the code it fuzzed)"
fi
