#!/usr/bin/env bash
# Sets up the machine, builds continuum-node in release mode, and runs it on the default data directory
# ($CONTINUUM_DATA, else $XDG_DATA_HOME/continuum-node, else ~/.local/share/continuum-node).
# Arguments are passed to continuum-node; with none, it creates the identity if needed and runs the node
# (listening on port 7420 until Ctrl-C).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
bin=".build/release/continuum-node"
# Build only when there is no binary yet, or a source file (or Package.swift) changed since it was built, as make
# would: `alias cn=scripts/node.sh` then answers each command at once.
if [ ! -x "$bin" ] || [ -n "$(find Sources Package.swift Package.resolved -newer "$bin" -print -quit 2>/dev/null)" ]; then
    swift build -c release --product continuum-node >&2
fi
if (($#)); then
    exec "$bin" "$@"
fi
"$bin" init
exec "$bin" run
