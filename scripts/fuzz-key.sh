#!/usr/bin/env bash
# Prints the key of the code the fuzz targets exercise: one SHA-256 over the path and contents of every file that a
# run of scripts/fuzz.sh depends on (the package manifest, the fuzz targets, their seed corpus, the script itself,
# and the sources of ContinuumCore, ContinuumWire and ContinuumSession). Fuzz/fuzzed, written by a clean
# `scripts/fuzz.sh all`, records the key it fuzzed; .ci/run fuzzes again unless the key is the same (Docs/FUZZING.md).
set -euo pipefail
cd "$(dirname "$0")/.."
export LC_ALL=C
find Package.swift scripts/fuzz.sh Fuzz Sources/ContinuumCore Sources/ContinuumWire Sources/ContinuumSession \
    -type f ! -path Fuzz/fuzzed -print0 | sort -z | xargs -0 sha256sum | sha256sum | cut -d' ' -f1
