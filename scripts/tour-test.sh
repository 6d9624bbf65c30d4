#!/usr/bin/env bash
# The README's tour, run as it is written: its ```sh blocks under "## A two-minute tour", in order, as one script,
# with `cn` the built binary instead of scripts/node.sh (which would set up and build again on every line). Fails
# when a line of the tour fails, or when what it shows is not what the tour says it shows, so that the README
# cannot drift from the program.
#
#   scripts/tour-test.sh [--bin PATH]      (default: the debug build, `swift build --show-bin-path`)
#
# The tour's own data directories (/tmp/alice, /tmp/bob, /tmp/carol, /tmp/alice-desktop) and /tmp/share are removed
# before and after; the nodes it starts are stopped by the PIDs in their node.lock files, whatever happens.
set -euo pipefail
cd "$(dirname "$0")/.."
bin="$(swift build --show-bin-path)/continuum-node"
if [ "${1:-}" = "--bin" ]; then bin="$2"; fi
[ -x "$bin" ] || { echo "tour-test: no binary at $bin (build first)" >&2; exit 1; }

dirs=(/tmp/alice /tmp/bob /tmp/carol /tmp/alice-desktop)
cleanup() {
    for dir in "${dirs[@]}"; do
        if [ -f "$dir/node.lock" ]; then
            pid="$(cat "$dir/node.lock" 2>/dev/null || true)"
            # Only a node of the tour's: its command line names the binary.
            if [ -n "$pid" ] && [ -r "/proc/$pid/cmdline" ] && tr '\0' ' ' <"/proc/$pid/cmdline" | grep -q continuum-node
            then
                kill "$pid" 2>/dev/null || true
            fi
        fi
    done
    sleep 1
    rm -rf "${dirs[@]}" /tmp/share
}
cleanup
trap cleanup EXIT

work="$(mktemp -d)"
script="$work/tour.sh"
out="$work/tour.out"
/usr/bin/python3 - "$bin" "$script" <<'PYTHON'
import re, sys
binary, script = sys.argv[1], sys.argv[2]
readme = open("README.md", encoding="utf-8").read()
start = readme.index("## A two-minute tour")
end = readme.index("\n## ", start + 5)
blocks = re.findall(r"```sh\n(.*?)```", readme[start:end], re.S)
if len(blocks) < 4:
    sys.exit(f"tour-test: found {len(blocks)} sh blocks in the tour; expected at least 4")
body = "\n".join(blocks)
alias = "alias cn='scripts/node.sh'"
if alias not in body:
    sys.exit(f"tour-test: the tour no longer starts with {alias!r}; update this script")
body = body.replace(alias, f"alias cn='{binary}'")
open(script, "w", encoding="utf-8").write("shopt -s expand_aliases\nset -e\n" + body + "\n")
PYTHON

begin=$SECONDS
if ! timeout 300 bash "$script" >"$out" 2>&1; then
    echo "tour-test: the tour failed; its output:" >&2
    cat "$out" >&2
    exit 1
fi
# What the tour says its lines show.
expect() {
    grep -qE -- "$1" "$out" || {
        echo "tour-test: the tour's output lacks: $2 ($1); its output:" >&2
        cat "$out" >&2
        exit 1
    }
}
expect "^created group Family" "Alice founds Family"
expect "^joined group" "Bob joins with the code"
expect "^approved node [0-9a-f]{12} \(Carol\) into the group" "Alice approves Carol by her node id"
expect "Family  3 members" "Carol's node lists Family with its 3 members"
expect "case- and accent-insensitive|Café by the lake" "Bob finds the post by searching 'cafe'"
expect "Lovely light" "Bob's comment shows on Alice's node"
expect "Alice commented on \"Café by the lake\": Taken at noon" "Bob is notified of Alice's comment"
expect "^removed Bob from the group" "Alice revokes Bob"
expect "^Linked: this device \([0-9a-f]{12}\) is now a device of account" "Alice's desktop links into her account"
expect "\(2 devices, a recovery code\)" "Alice's device list shows her two devices"
accounts="$(grep -cE '^ *[0-9]+ "account" ?: ?"[0-9a-f]{64}"$' "$out" || true)"
[ "$accounts" = 1 ] || {
    echo "tour-test: bob's feed shows $accounts accounts for Alice's posts from two devices, not 1; its output:" >&2
    cat "$out" >&2
    exit 1
}
echo "tour-test: the README's tour ran, top to bottom, in $((SECONDS - begin)) s"
rm -rf "$work"
