#!/usr/bin/env bash
# Sets up the machine and runs every test: unit, store, end-to-end CLI and HTTP API tests, the web UI in a headless
# browser, then LAN discovery end to end in network namespaces (3 hosts, plus the no-daemon and two-network
# scenarios; needs root or sudo).
# Our targets are built with warnings as errors (Package.swift).
set -euo pipefail
cd "$(dirname "$0")/.."
# Each step says when it starts, so that a slow step shows in the log.
step() { echo "== test.sh: $* ($(date +%T), ${SECONDS} s in)"; }
step "setup"
scripts/setup.sh
# The golden record vectors (Tests/ContinuumCoreTests/Resources/vectors.json, PROTOCOL.md §8) are the independent
# Python encoder's, and every one of its self-checks passes (bit flips, invalid records); the fuzz seeds are current.
# The MEMBERSHIP frames of PROTOCOL.md §7.4.21 (MembershipFrameVectorTests compares the encoder with them) are the
# independent Python encoder's, with its own Ed25519 checked against RFC 8032 and the §8 signatures; so are the
# PHOTOS_WANT and PHOTOS frames of §7.4.26–27 (PhotosFrameTests; scripts/photos_vectors.py). The account
# rule's scenarios (Tests/ContinuumCoreTests/Resources/account-scenarios.json, read by AccountRulesTests): their
# expected states are the independent Python model's. These checks take about 20 s of one core (the bit flips), so
# they run in the background during the build, and the build's end waits for them.
step "the independent Python encoders' vectors, in the background"
vectors_log="$(mktemp)"
(
    /usr/bin/python3 scripts/protocol_vectors.py
    /usr/bin/python3 scripts/make-fuzz-corpus.py --check
    /usr/bin/python3 scripts/membership_vectors.py
    /usr/bin/python3 scripts/photos_vectors.py
    /usr/bin/python3 scripts/account_rules.py --check
) >"$vectors_log" 2>&1 &
vectors=$!
step "build, warnings as errors"
# build_for_tests and parallel_suite, with debug_flags (CONTINUUM_DEBUG_INFO=0: no debug information).
source scripts/build-flags.sh
build_for_tests
step "the independent Python encoders' vectors: waiting for them to end"
vectors_status=0
wait "$vectors" || vectors_status=$?
cat "$vectors_log"
rm -f "$vectors_log"
if [ "$vectors_status" -ne 0 ]; then
    echo "test.sh: the independent Python encoders' checks failed (exit $vectors_status; their output above)" >&2
    exit 1
fi
# Where the built binaries are, for the steps below that run them directly.
bin_dir="$(swift build "${build_path[@]}" --show-bin-path)"
step "the parallel suite"
"${parallel_suite[@]}"
# The flood tests compare the honest peers' service with and without a flood, so they run alone: beside the other
# suites, the machine's own load would be what they measure. So do the crowd tests (twelve nodes at once, whose
# overlay must heal within its time limits), and the photo crash tests (fifty restarts of a node, each followed by
# an integrity check: beside it, other suites' photo transfers starved past their time limits). The two flood suites
# run one after the other too: together (Swift Testing runs suites at once), an INTEREST flood's refusal took 2.5 s of
# its 2 on a slow hour of this machine, both flooders sharing its two cores.
step "flood, crowd and photo-crash tests, each alone"
swift test "${build_path[@]}" --skip-build --filter FloodTests
swift test "${build_path[@]}" --skip-build --filter FloodMoreTests
swift test "${build_path[@]}" --skip-build --filter CrowdTests
swift test "${build_path[@]}" --skip-build --filter PhotoCrashTests

# LAN discovery across real network namespaces, each with its own D-Bus and avahi-daemon (scripts/netns-e2e.sh).
# It runs in the background, beside the steps after it: it spends its minute waiting for daemons and
# announcements inside its own namespaces (their own loopback and ports), and its waits allow tens of seconds.
step "LAN discovery in network namespaces, in the background"
netns=(scripts/netns-e2e.sh --hosts 3 --scenarios --bin "$bin_dir/continuum-node")
if [ "$(id -u)" -ne 0 ]; then
    if ! command -v sudo >/dev/null; then
        echo "test.sh: the LAN discovery test needs root (network namespaces): run as root, or allow sudo" >&2
        exit 1
    fi
    netns=(sudo "${netns[@]}")
fi
netns_log="$(mktemp)"
"${netns[@]}" >"$netns_log" 2>&1 &
netns_pid=$!
trap 'kill "$netns_pid" 2>/dev/null || true' EXIT

# The account property test (a minute of ingest on one core, 1,002 stores) runs beside the steps from here to the
# package, which leave a core free: the browser's and the tour's nodes, the daemons of the LAN test. Beside the
# parallel suite, the in-process sync tests' waits timed out; at the end, alone, it made the run a minute longer.
# The test binary is run directly, so that no SwiftPM lock stands between it and the steps beside it.
step "the account property test, in the background"
property_log="$(mktemp)"
"$bin_dir/continuum-nodePackageTests.xctest" --testing-library swift-testing \
    --filter AccountMembershipPropertyTests >"$property_log" 2>&1 &
property_pid=$!
trap 'kill "$netns_pid" "$property_pid" 2>/dev/null || true' EXIT

# The web UI in a real headless Chromium (WebDriver), against two real nodes; screenshots of every step are kept in
# .build/artifacts/browser/.
step "the web UI in Chromium"
python3 scripts/browser-tests.py --binary "$bin_dir/continuum-node" \
    --artifacts .build/artifacts/browser

# The README's tour, run as written (its sh blocks as one script, against the debug binary).
step "the README tour"
scripts/tour-test.sh --bin "$bin_dir/continuum-node"

step "LAN discovery in network namespaces: waiting for it to end"
netns_status=0
wait "$netns_pid" || netns_status=$?
trap 'kill "$property_pid" 2>/dev/null || true' EXIT
cat "$netns_log"
rm -f "$netns_log"
if [ "$netns_status" -ne 0 ]; then
    echo "test.sh: LAN discovery in network namespaces failed (exit $netns_status; its log above)" >&2
    exit 1
fi

# The Debian package, built from the debug build (scripts/package.sh --debug; the package to ship is release) and
# checked as a machine without Swift would see it: its files, no Swift runtime, and a node run from it. The debug
# binary was linked with the runtime inside at the build step, and is kept so (--keep-static): nothing to link here.
step "the Debian package"
deb="$(scripts/package.sh --debug --keep-static | tail -1)"
scripts/package-test.sh "$deb"

step "the account property test: waiting for it to end"
property_status=0
wait "$property_pid" || property_status=$?
trap - EXIT
if [ "$property_status" -ne 0 ]; then
    cat "$property_log"
    echo "test.sh: the account property test failed (exit $property_status; its log above)" >&2
    exit 1
fi
grep -E "Test run with" "$property_log" || true
rm -f "$property_log"
step "done"
