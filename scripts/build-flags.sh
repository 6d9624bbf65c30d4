# Sourced by scripts/test.sh, scripts/package.sh and scripts/loaded-test.sh: the flags of the debug build that the
# tests run, in one place, so that every `swift build` of a test run uses the same ones (a change of flags recompiles
# everything), the build itself, and the parallel suite's command.
#
# debug_flags: empty, unless CONTINUUM_DEBUG_INFO=0, which builds without debug information (-gnone for Swift, -g0
#   for C): CI sets it, since nothing there reads DWARF (a crash's backtrace still names the functions). Compiling
#   swift-crypto's BoringSSL took 13 % less CPU so. A developer's `swift build` does not set it, and a test run
#   with the same setting as their own builds recompiles nothing. (Not --disable-index-store: on Linux, SwiftPM
#   finds the tests through the index store, and the build fails at test discovery without it.)
# static_runtime: links continuum-node with the Swift standard library and Foundation inside. Swift 6.3's static
#   Foundation needs its C parts named to the linker after it (swiftlang/swift-package-manager#10564:
#   "--static-swift-stdlib fails when using Foundation"); the rest comes from Foundation's own link entries.
# build_path: the build folder, named by its real path. It is .build, or where a symlink .build points: .ci/run keeps the
#   build in a cache outside the clone (it says why), and SwiftPM reuses a dependency's compiled files only when its
#   compile commands are the same, paths included, so every build and test of a run names that folder the same way.
#   For a plain .build folder this is SwiftPM's own default, and nothing is compiled again.
build_path=(--scratch-path "$(realpath -m .build)")
debug_flags=()
if [ "${CONTINUUM_DEBUG_INFO:-1}" = 0 ]; then debug_flags=(-Xswiftc -gnone -Xcc -g0); fi
static_runtime=(--static-swift-stdlib -Xlinker -lCoreFoundation -Xlinker -l_FoundationICU
    -Xlinker -l_FoundationCShims -Xlinker -l_FoundationCollections)

# The build the tests run: every target, then the binary the tests start relinked with the Swift runtime inside (only
# linked again: debug compiles are not whole-module). A process of it starts on a quarter less CPU (status: 79
# against 105 ms), and the suites start about 1,500 of them; scripts/package.sh --debug then finds it built.
build_for_tests() {
    swift build "${build_path[@]}" --build-tests "${debug_flags[@]}"
    swift build "${build_path[@]}" "${debug_flags[@]}" "${static_runtime[@]}" --product continuum-node
}

# The parallel suite: everything but the suites that run alone (scripts/test.sh says why).
parallel_suite=(swift test "${build_path[@]}" --skip-build --parallel --num-workers 2 --skip FloodTests --skip FloodMoreTests
    --skip CrowdTests --skip PhotoCrashTests --skip AccountMembershipPropertyTests)
