#!/usr/bin/env bash
# Sets up the machine and runs every test: unit, store and end-to-end CLI tests.
# Our targets are built with warnings as errors (Package.swift).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
swift build --build-tests
swift test --skip-build --parallel --num-workers 2
