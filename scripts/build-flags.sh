# Sourced by scripts/test.sh and scripts/package.sh: the flags of the debug build that the tests run, in one place,
# so that every `swift build` of a test run uses the same ones (a change of flags recompiles everything).
#
# debug_flags: empty, unless CONTINUUM_DEBUG_INFO=0, which builds without debug information (-gnone for Swift, -g0
#   for C): CI sets it, since nothing there reads DWARF (a crash's backtrace still names the functions). Compiling
#   swift-crypto's BoringSSL took 13 % less CPU so. A developer's `swift build` does not set it, and a test run
#   with the same setting as their own builds recompiles nothing.
# static_runtime: links continuum-node with the Swift standard library and Foundation inside. Swift 6.3's static
#   Foundation needs its C parts named to the linker after it (swiftlang/swift-package-manager#10564:
#   "--static-swift-stdlib fails when using Foundation"); the rest comes from Foundation's own link entries.
debug_flags=()
if [ "${CONTINUUM_DEBUG_INFO:-1}" = 0 ]; then debug_flags=(-Xswiftc -gnone -Xcc -g0); fi
static_runtime=(--static-swift-stdlib -Xlinker -lCoreFoundation -Xlinker -l_FoundationICU
    -Xlinker -l_FoundationCShims -Xlinker -l_FoundationCollections)
